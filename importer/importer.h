/* importer.h — ONNX → graph IR. The importer decodes a ModelProto (protobuf-c),
 * checks it against hard limits before trusting any of it, binds symbolic dims,
 * converts every ONNX node (per opset version) into canonical ops with shapes
 * inferred, and folds what is constant when it is handed an evaluator. It never
 * crashes on hostile input: every failure is one line saying what and where. */
#ifndef IMP_IMPORTER_H
#define IMP_IMPORTER_H
#include <stddef.h>
#include <stdint.h>
#include "fold.h"
#include "graph.h"

#define IMP_MAX_FILE_BYTES (2ll << 30) /* 2 GiB */
#define IMP_MAX_SUBGRAPH_DEPTH 32

/* --input-shape NAME:DIMS */
typedef struct imp_input_shape {
  char name[256];
  int32_t rank;
  int64_t dims[GIR_MAX_RANK];
} imp_input_shape;

/* A graph input whose value is known at compile time. It stays an input; the
 * importer only reads it where an op needs a constant (a Reshape's shape…). */
typedef struct imp_known_input {
  const char *name;
  gir_dtype dtype;
  gir_shape shape;
  const void *data;
} imp_known_input;

typedef struct imp_options {
  const imp_input_shape *shapes;
  int32_t n_shapes;
  const imp_known_input *known;
  int32_t n_known;
  const gir_evaluator *eval;   /* NULL: nothing is folded at import */
  int64_t fold_max_elements;   /* largest output folded at import (0: default) */
} imp_options;

typedef struct imp_unsupported {
  const char *op_type, *domain, *node_name;
  int64_t opset;
  const char *reason;
} imp_unsupported;

/* What the importer saw besides the graph, for `kiln inspect`. Owned by the
 * report's arena; imp_report_free releases it. */
typedef struct imp_report {
  gir_arena *arena;
  int64_t ir_version;
  int64_t onnx_nodes;
  /* histogram of ONNX op types */
  const char **op_types;
  int64_t *op_counts;
  int32_t n_op_types, cap_op_types;
  imp_unsupported *unsupported;
  int32_t n_unsupported, cap_unsupported;
  int64_t param_count, param_bytes; /* initializers and Constant nodes */
} imp_report;

void imp_report_init(imp_report *r);
void imp_report_free(imp_report *r);

/* Imports a model file. External data is resolved inside the file's folder only.
 * Returns NULL with err set when the model cannot be imported completely; the
 * report (may be NULL) still lists every unsupported op found. */
gir_graph *imp_load_file(const char *path, const imp_options *opt, imp_report *rep, gir_err *err);
/* Same from memory; base_dir (may be NULL: external data refused) anchors external data. */
gir_graph *imp_load_buffer(const void *data, size_t n, const char *base_dir, const imp_options *opt,
                           imp_report *rep, gir_err *err);

/* Parses "NAME:1x3x224x224" (also "NAME:1,3,224,224"); -1 with a message. */
int imp_parse_input_shape(const char *spec, imp_input_shape *out, gir_err *err);

#endif
