/* graph.h — the graph IR: values (typed, statically shaped tensors, possibly
 * constant), nodes (one canonical op each, with typed attributes) and the graph
 * that owns them in one arena. Nodes are kept in topological order; passes that
 * reorder or delete nodes rebuild the list (gir_graph_compact).
 *
 * Shapes are static: symbolic dims are bound by the importer before any node is
 * created. Constants carry their payload in native little-endian layout. */
#ifndef GIR_GRAPH_H
#define GIR_GRAPH_H
#include <stdint.h>
#include <stdio.h>
#include "arena.h"
#include "dtype.h"
#include "err.h"

#define GIR_MAX_RANK 8

typedef enum gir_op {
#define GIR_OP(name, cat, min_in, max_in, n_out) GIR_OP_##name,
#include "ops.def"
#undef GIR_OP
  GIR_OP_COUNT
} gir_op;

typedef enum gir_category {
  GIR_INJECTIVE,
  GIR_REDUCTION,
  GIR_COMPLEX,  /* complex-out-fusable */
  GIR_OPAQUE,
  GIR_CATEGORY_COUNT
} gir_category;

typedef enum gir_unary_fn {
#define GIR_UNARY(id, name) GIR_UNARY_##id,
#include "unary.def"
#undef GIR_UNARY
  GIR_UNARY_COUNT
} gir_unary_fn;

typedef enum gir_binary_fn {
#define GIR_BINARY(id, name, cmp) GIR_BINARY_##id,
#include "binary.def"
#undef GIR_BINARY
  GIR_BINARY_COUNT
} gir_binary_fn;

/* The kernels of the strop op (ops.def; lower/lower_str.c). */
typedef enum gir_str_fn {
  GIR_STR_EQUAL,     /* ONNX Equal on strings */
  GIR_STR_CONCAT,    /* StringConcat */
  GIR_STR_REGEX,     /* RegexFullMatch: a DFA table (importer/regex.c) */
  GIR_STR_SPLIT,     /* StringSplit */
  GIR_STR_NORMALIZE, /* StringNormalizer */
  GIR_STR_LABEL,     /* ai.onnx.ml LabelEncoder with string keys or values */
  GIR_STR_FN_COUNT
} gir_str_fn;

typedef enum gir_reduce_fn {
#define GIR_REDUCE(id, name) GIR_REDUCE_##id,
#include "reduce.def"
#undef GIR_REDUCE
  GIR_REDUCE_COUNT
} gir_reduce_fn;

/* Small enums carried in attributes. */
typedef enum { GIR_POOL_MAX, GIR_POOL_AVG, GIR_POOL_LP, GIR_POOL_COUNT } gir_pool_fn;
typedef enum { GIR_ARG_MAX, GIR_ARG_MIN, GIR_ARG_COUNT } gir_arg_fn;
typedef enum { GIR_PAD_CONSTANT, GIR_PAD_REFLECT, GIR_PAD_EDGE, GIR_PAD_WRAP, GIR_PAD_COUNT } gir_pad_mode;
typedef enum { GIR_SCATTER_NONE, GIR_SCATTER_ADD, GIR_SCATTER_MUL, GIR_SCATTER_MAX, GIR_SCATTER_MIN,
               GIR_SCATTER_COUNT } gir_scatter_reduction;
typedef enum { GIR_CUM_SUM, GIR_CUM_PROD, GIR_CUM_COUNT } gir_cum_fn;
typedef enum { GIR_RESIZE_NEAREST, GIR_RESIZE_LINEAR, GIR_RESIZE_CUBIC, GIR_RESIZE_MODE_COUNT } gir_resize_mode;
typedef enum { GIR_COORD_HALF_PIXEL, GIR_COORD_HALF_PIXEL_SYMMETRIC, GIR_COORD_PYTORCH_HALF_PIXEL,
               GIR_COORD_ALIGN_CORNERS, GIR_COORD_ASYMMETRIC, GIR_COORD_TF_CROP_AND_RESIZE,
               GIR_COORD_COUNT } gir_resize_coord;
typedef enum { GIR_NEAREST_ROUND_PREFER_FLOOR, GIR_NEAREST_ROUND_PREFER_CEIL, GIR_NEAREST_FLOOR,
               GIR_NEAREST_CEIL, GIR_NEAREST_COUNT } gir_nearest_mode;

typedef struct gir_shape {
  int32_t rank;
  int64_t dims[GIR_MAX_RANK];
} gir_shape;

typedef struct gir_node gir_node;
typedef struct gir_guard gir_guard;

typedef struct gir_value {
  int32_t id;
  const char *name;
  gir_dtype dtype;
  gir_shape shape;
  gir_node *producer; /* NULL for graph inputs and constants */
  int32_t producer_slot;
  void *data;         /* constant payload, NULL when not a constant */
  uint8_t is_input, is_output;
  /* A data-dependent size (NonMaxSuppression's selected boxes): the shape is an
   * upper bound and `extent`, an int64 scalar value, holds the actual size along
   * axis `extent_axis` after a run; the elements past it are computed from the
   * padding (defined, meaningless). The importer sets it on such ops' outputs and
   * on what the ops of importer/extent.c make of them; graph outputs carry it to
   * the runtime, which reports the actual shape. NULL otherwise. */
  struct gir_value *extent;
  int32_t extent_axis;
  /* A string tensor (ONNX STRING, README "String tensors"): dtype uint8, its last
   * axis the slot of each string — string_bytes bytes, a 4-byte little-endian
   * length, then the UTF-8 bytes, zero padded. The ONNX shape is the others. 0 for
   * every other value. */
  int32_t string_bytes;
} gir_value;

typedef enum gir_attr_kind {
  GIR_ATTR_INT,
  GIR_ATTR_FLOAT,
  GIR_ATTR_INTS,
  GIR_ATTR_FLOATS,
  GIR_ATTR_STRING,
  GIR_ATTR_KIND_COUNT
} gir_attr_kind;

typedef struct gir_attr {
  const char *name;
  gir_attr_kind kind;
  int32_t n; /* element count of INTS / FLOATS */
  int64_t i;
  double f;
  const char *s;
  int64_t *ints;
  double *floats;
} gir_attr;

struct gir_node {
  int32_t id;
  gir_op op;
  const char *name;   /* unique within the graph */
  const char *origin; /* the ONNX node it came from, e.g. "Conv 'conv1' (opset 11)" */
  int32_t n_in, n_out;
  gir_value **in;     /* in[i] may be NULL for an absent optional input */
  gir_value **out;
  int32_t n_attrs, cap_attrs;
  gir_attr *attrs;
  const gir_guard *guard; /* runs only when the guard holds; NULL: always */
};

/* A run-time condition on nodes: an If's branch. The node runs only when the
 * bool scalar `cond` equals `when` and its parent guard (the enclosing branch)
 * holds too. Guards are shared by all the nodes of a branch and compared by
 * pointer. A node's guard implies the guards of the producers of its inputs
 * (it never reads a value that may not have been computed), except for the
 * where that selects an If's output: it reads both branches, with the If's own
 * guard (gir_verify_guards checks this). */
struct gir_guard {
  gir_value *cond;
  uint8_t when;
  const gir_guard *parent;
  int32_t depth; /* 1 + the parent's (0 for NULL) */
  const char *what; /* "If 'If_0' then_branch", for dumps and messages */
};

typedef struct gir_opset {
  const char *domain;
  int64_t version;
} gir_opset;

typedef struct gir_graph {
  gir_arena *arena;
  const char *name;
  gir_value **values;
  int32_t n_values, cap_values;
  gir_node **nodes; /* topological order */
  int32_t n_nodes, cap_nodes;
  gir_value **inputs;
  int32_t n_inputs, cap_inputs;
  gir_value **outputs;
  int32_t n_outputs, cap_outputs;
  /* model metadata, for reports */
  int64_t ir_version;
  gir_opset *opsets;
  int32_t n_opsets;
  const char *producer;
  int32_t next_name; /* counter for generated names */
  const gir_guard *cur_guard; /* stamped on every node gir_node_new makes: a pass that
                                 rewrites node n sets it to n->guard meanwhile */
} gir_graph;

/* --- op table --- */
const char *gir_op_name(gir_op op);
gir_op gir_op_from_name(const char *name); /* GIR_OP_COUNT if unknown */
gir_category gir_op_category(gir_op op);
const char *gir_category_name(gir_category c);
int gir_op_min_inputs(gir_op op);
int gir_op_max_inputs(gir_op op);
int gir_op_outputs(gir_op op);
const char *gir_unary_name(gir_unary_fn f);
const char *gir_binary_name(gir_binary_fn f);
int gir_binary_is_compare(gir_binary_fn f);
const char *gir_reduce_name(gir_reduce_fn f);

/* --- shapes --- */
/* Element count with overflow check; -1 (and a message) when it overflows int64
 * or a dim is negative. */
int64_t gir_shape_numel(const gir_shape *s, gir_err *err);
int gir_shape_equal(const gir_shape *a, const gir_shape *b);
gir_shape gir_shape_make(int32_t rank, const int64_t *dims);
/* "1x3x224x224" (scalar: "scalar"); buf of at least 160 bytes. */
const char *gir_shape_str(const gir_shape *s, char *buf, size_t n);
int64_t gir_value_numel(const gir_value *v); /* shapes in a graph never overflow */
int64_t gir_value_nbytes(const gir_value *v);

/* --- building --- */
gir_graph *gir_graph_new(const char *name);
void gir_graph_free(gir_graph *g);
/* A new value without producer; name NULL generates one. */
gir_value *gir_value_new(gir_graph *g, const char *name, gir_dtype t, const gir_shape *s);
/* A constant; data (numel * elem size bytes) is copied into the arena. */
gir_value *gir_const_new(gir_graph *g, const char *name, gir_dtype t, const gir_shape *s, const void *data);
/* Scalar and 1-D constant helpers. */
gir_value *gir_const_scalar(gir_graph *g, gir_dtype t, double v);
gir_value *gir_const_i64s(gir_graph *g, const int64_t *v, int32_t n);
/* A node whose outputs are fresh values (dtype/shape set by gir_node_infer).
 * ins may hold NULL for absent optional inputs. */
gir_node *gir_node_new(gir_graph *g, gir_op op, const char *name, gir_value *const *ins, int32_t n_in,
                       int32_t n_out);
int gir_graph_add_input(gir_graph *g, gir_value *v);
/* A new guard below parent (NULL: none); what is copied. */
const gir_guard *gir_guard_new(gir_graph *g, gir_value *cond, int when, const gir_guard *parent, const char *what);
/* Whether a holding implies b holding: b is NULL, a, or an ancestor of a. */
int gir_guard_implies(const gir_guard *a, const gir_guard *b);
/* The condition of guard d's i-th level (0: d's own, 1: its parent's…). */
gir_value *gir_guard_cond(const gir_guard *d, int32_t i);
/* The deepest guard both a and b imply (NULL: none). */
const gir_guard *gir_guard_common(const gir_guard *a, const gir_guard *b);
int gir_graph_add_output(gir_graph *g, gir_value *v);

/* Attributes: setters copy arrays into the arena and replace existing ones. */
void gir_attr_set_int(gir_graph *g, gir_node *n, const char *name, int64_t v);
void gir_attr_set_float(gir_graph *g, gir_node *n, const char *name, double v);
void gir_attr_set_ints(gir_graph *g, gir_node *n, const char *name, const int64_t *v, int32_t cnt);
void gir_attr_set_floats(gir_graph *g, gir_node *n, const char *name, const double *v, int32_t cnt);
void gir_attr_set_string(gir_graph *g, gir_node *n, const char *name, const char *s);
const gir_attr *gir_attr_find(const gir_node *n, const char *name);
/* Same name, kind and value (floats bitwise). */
int gir_attr_equal(const gir_attr *a, const gir_attr *b);
int64_t gir_attr_int(const gir_node *n, const char *name, int64_t def);
double gir_attr_float(const gir_node *n, const char *name, double def);
/* Pointer to the INTS array (NULL if absent), count in *cnt. */
const int64_t *gir_attr_ints(const gir_node *n, const char *name, int32_t *cnt);
const double *gir_attr_floats(const gir_node *n, const char *name, int32_t *cnt);

/* Runs the op's shape/dtype inference, setting n->out[*]. On bad attributes or
 * incompatible shapes: -1 with a message naming the node and its origin. */
int gir_node_infer(gir_graph *g, gir_node *n, gir_err *err);

/* Removes nodes whose outputs are unused (and not graph outputs), drops values
 * no longer referenced and renumbers ids. Requires: topological order. */
void gir_graph_compact(gir_graph *g);

/* Structural checks: topological order, arity, producer links, shapes match a
 * fresh inference. 0 or -1 with a message. */
int gir_verify(const gir_graph *g, gir_err *err);
/* The guard rules of gir_guard (also part of gir_verify). */
int gir_verify_guards(const gir_graph *g, gir_err *err);

/* Text form, one node per line. */
void gir_print(const gir_graph *g, FILE *f);
/* Graphviz DOT. cluster_of (may be NULL) maps node id → cluster id (< 0: none),
 * cluster_label names clusters; used to draw fused groups. */
void gir_write_dot(const gir_graph *g, FILE *f, const int32_t *cluster_of, const char *const *cluster_label);

#endif
