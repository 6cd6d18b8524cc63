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
 * importer only reads it where an op needs a constant (a Reshape's shape…).
 *
 * A known value may also be a list (is_list): the test data of a sequence or an
 * optional input (SequenceProto and OptionalProto share one wire form, so a file
 * alone cannot say which it is; an optional is a list of zero or one items). Its
 * items are tensors or, for an optional sequence, one list of tensors.
 *
 * Sequences and optionals in the graph: kiln's graph holds tensors only, so the
 * importer gives each graph input or output of sequence or optional type the
 * tensor inputs or outputs it holds, named after it:
 *   a sequence NAME of N tensors         → NAME.0 … NAME.{N-1} (N = 0: none)
 *   an optional NAME holding a tensor     → NAME
 *   an optional NAME holding a sequence   → NAME.0 … NAME.{N-1}
 *   an absent optional NAME               → none
 * The length of a sequence input and the shapes of its elements come from its
 * known value (--test-data); without one the import fails. */
/* One string of a string tensor read from a file (dtype GIR_STRING: data points to
 * numel of these, in the arena; bytes are not NUL-terminated and may be any bytes). */
typedef struct imp_string {
  const uint8_t *bytes;
  int64_t len;
} imp_string;

typedef struct imp_known_input {
  const char *name;
  gir_dtype dtype;
  gir_shape shape;
  const void *data;
  int32_t is_list, n_items;             /* a list of n_items items (name, dtype, shape, data unused) */
  const struct imp_known_input *items;  /* items' names are empty */
} imp_known_input;

typedef struct imp_options {
  const imp_input_shape *shapes;
  int32_t n_shapes;
  const imp_known_input *known;
  int32_t n_known;
  const gir_evaluator *eval;   /* NULL: nothing is folded at import */
  int64_t fold_max_elements;   /* largest output folded at import (0: default) */
  int64_t max_trips;           /* a Loop whose trip count or condition is computed at run time is
                                  built for this many iterations (0: IMP_DEFAULT_MAX_TRIPS); a run
                                  that needs more fails, saying so */
  int64_t max_string_bytes;    /* the slot of one string element (gir_value.string_bytes), length prefix
                                  included (0: IMP_DEFAULT_STRING_BYTES) */
} imp_options;

#define IMP_DEFAULT_MAX_TRIPS 64
#define IMP_DEFAULT_STRING_BYTES 64
#define IMP_MIN_STRING_BYTES 8
#define IMP_MAX_STRING_BYTES 65536

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
  /* graph-input dims the model leaves open (symbolic, empty or -1) and no
   * --input-shape bound, each defaulted to 1: "x[0] 'batch', y[2] -1" */
  char unbound[512];
  int32_t n_unbound;
  /* If branches that cannot run for the bound shapes: compiled as run-time errors
   * (taken, the run fails naming them); the first one's reason */
  int32_t n_trapped;
  char trapped[512];
  int64_t qdq_units; /* DequantizeLinear → op → QuantizeLinear units imported as one op (qdq.c): Conv/MatMul/Gemm as
                        integer ops, Add/Mul/pools/Sigmoid/LeakyRelu/Softmax/Concat as ORT's QLinear ops */
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

/* The known tensor behind a graph input named as above: NAME itself, or element k
 * of the known sequence NAME (NAME.k), or the content of the known optional NAME
 * (NAME, or NAME.k for an optional sequence). NULL when there is none. */
const imp_known_input *imp_known_find(const imp_options *opt, const char *name);

/* Parses "NAME:1x3x224x224" (also "NAME:1,3,224,224"); -1 with a message. */
int imp_parse_input_shape(const char *spec, imp_input_shape *out, gir_err *err);

#endif
