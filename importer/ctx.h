/* ctx.h — the importer's internal context and the helpers every converter uses.
 *
 * A converter turns one ONNX node into canonical nodes. It reads inputs (gir
 * values, NULL when an optional input is absent) and attributes from imp_node,
 * emits canonical ops through the builder helpers (which infer shapes and fold
 * constants as they go), and binds each ONNX output with imp_set_output. Any
 * failure returns -1 with c->err set; the driver adds the node, op and opset. */
#ifndef IMP_CTX_H
#define IMP_CTX_H
#include "importer.h"
#include "onnx.pb-c.h"

typedef struct imp_scope imp_scope;

/* What an ONNX name stands for. The graph holds tensors only; a sequence (its
 * length known at compile time) lives in the importer as the list of its element
 * values, each a tensor of static shape, and sequence ops become list edits at
 * import. An optional is its content when present (a tensor or a sequence) and
 * IMP_ABSENT when not: whether it holds a value is known at compile time. */
typedef enum imp_kind { IMP_NOT_FOUND = 0, IMP_TENSOR, IMP_SEQUENCE, IMP_ABSENT } imp_kind;

typedef struct imp_seq {
  int32_t n;
  gir_value **items;           /* n element values (arena) */
  gir_dtype elem;              /* element type (GIR_DTYPE_NONE: not known, for an empty sequence) */
} imp_seq;

/* One value of any kind: v for a tensor (NULL: poisoned), s for a sequence. */
typedef struct imp_item {
  imp_kind kind;
  gir_value *v;
  const imp_seq *s;
} imp_item;

typedef struct imp_ctx {
  gir_graph *g;
  gir_err *err;
  const imp_options *opt;
  imp_report *rep;
  const char *base_dir;        /* for external data; NULL: refused */
  const Onnx__ModelProto *model;
  int64_t opset;               /* ai.onnx opset in force */
  int depth;                   /* subgraph / function nesting */
  imp_scope *scope;
  const char *name_prefix;     /* prefix for names made while inlining */
  const char *origin;          /* "Conv 'conv1' (opset 11)": the node being converted */
  int64_t made_bytes;          /* data the importer built itself so far (imp_reserve) */
  int64_t folded_bytes;        /* constants made by folding so far (imp_finish) */
  int ort_float;               /* converting a float op of a quantized model's QDQ region
                                * (qdq.c, IMP_QDQ_ORT_FLOAT): built as ONNX Runtime computes it */
} imp_ctx;

typedef struct imp_node {
  const Onnx__NodeProto *proto;
  const char *op_type, *name;
  int64_t opset;
  int32_t n_in, n_out;
  gir_value **in;              /* NULL for absent optional inputs, and for sequences */
  const imp_seq **seq;         /* per input: the sequence when input i is one, else NULL */
  const char *const *out_names;
  gir_value **out;             /* filled by imp_set_output */
  imp_kind *out_kind;          /* per output: IMP_SEQUENCE / IMP_ABSENT once bound as such */
} imp_node;

typedef int (*imp_convert_fn)(imp_ctx *c, imp_node *n);

/* Input i of n, NULL when absent or beyond the node's inputs. */
static inline gir_value *imp_in(const imp_node *n, int i) { return i < n->n_in ? n->in[i] : NULL; }

/* --- converter registry (ops.c) --- */
imp_convert_fn imp_find_converter(const char *op_type, int64_t opset);
/* The converter of a node that reads a sequence (ops_sequence.c): NULL when the op
 * takes tensors only. */
imp_convert_fn imp_find_sequence_converter(const char *op_type);

/* --- scope: ONNX name → value (scope.c) --- */
imp_scope *imp_scope_push(imp_ctx *c);
void imp_scope_pop(imp_ctx *c, imp_scope *s);
int imp_scope_bind(imp_ctx *c, const char *name, gir_value *v);     /* v NULL: poisoned */
/* 1 found (*v set, NULL if poisoned), 0 not found or not a tensor */
int imp_scope_lookup(imp_ctx *c, const char *name, gir_value **v);
/* Binds a value of any kind (a sequence is kept by reference: never edit it). */
int imp_scope_bind_item(imp_ctx *c, const char *name, imp_item it);
/* Any kind: the kind found (IMP_NOT_FOUND: none), *it filled. */
imp_kind imp_scope_find(imp_ctx *c, const char *name, imp_item *it);
/* Input i of n as an item: a tensor, a sequence, or IMP_ABSENT (an absent optional
 * or an empty input name). */
imp_item imp_input_item(const imp_node *n, int i);
/* A new sequence of cnt items (copied) in the graph's arena; elem as in imp_seq. */
imp_seq *imp_seq_new(imp_ctx *c, gir_value *const *items, int32_t cnt, gir_dtype elem);
/* Binds output i to a sequence, to an absent optional, or to any item. */
int imp_set_output_seq(imp_ctx *c, imp_node *n, int i, const imp_seq *s);
int imp_set_output_absent(imp_ctx *c, imp_node *n, int i);
int imp_set_output_item(imp_ctx *c, imp_node *n, int i, imp_item it);

/* --- attributes (attrs.c) --- */
const Onnx__AttributeProto *imp_attr(const imp_node *n, const char *name);
int64_t imp_attr_int(const imp_node *n, const char *name, int64_t def);
double imp_attr_float(const imp_node *n, const char *name, double def);
const char *imp_attr_string(imp_ctx *c, const imp_node *n, const char *name, const char *def);
/* INTS into *out (arena copy); returns count, or -1 when absent (no error). */
int32_t imp_attr_ints(imp_ctx *c, const imp_node *n, const char *name, int64_t **out);
int32_t imp_attr_floats(imp_ctx *c, const imp_node *n, const char *name, double **out);
/* A TENSOR attribute as a constant value, NULL + error if bad. */
gir_value *imp_attr_tensor(imp_ctx *c, const imp_node *n, const char *name);

/* --- tensors (tensor.c) --- */
gir_value *imp_tensor_to_const(imp_ctx *c, const Onnx__TensorProto *t, const char *what);
int imp_type_to_shape(imp_ctx *c, const Onnx__ValueInfoProto *vi, gir_dtype *dt, gir_shape *s);
/* Strings (tensor.c; README "String tensors"). The slot size in force (options). */
int64_t imp_string_bytes(const imp_ctx *c);
/* t's string_data (t must be a STRING tensor) → *s and numel strings copied into a. 0 or -1. */
int imp_tensor_strings(imp_ctx *c, const Onnx__TensorProto *t, const char *what, gir_arena *a, gir_shape *s,
                       imp_string **out);
/* A constant string tensor of ONNX shape s: uint8 slots, string_bytes set; NULL (error) when
 * a string does not fit its slot. label names it in messages. */
gir_value *imp_string_const(imp_ctx *c, const char *name, const gir_shape *s, const imp_string *strs,
                            const char *label);

/* --- building canonical nodes (build.c) --- */
gir_node *imp_new_node(imp_ctx *c, gir_op op, gir_value *const *ins, int32_t n_in, int32_t n_out);
/* A trap (graphir ops.def) standing for a value shaped like `like`, made under guard
 * g (the current guard is restored): a run that reaches it fails with msg. NULL +
 * error. */
gir_value *imp_trap(imp_ctx *c, const gir_guard *g, const gir_value *like, const char *msg);
/* Infers n's outputs and folds n when all inputs are constant and the outputs are
 * small enough. Returns n->out[0] (still valid after folding), NULL on error. */
gir_value *imp_finish(imp_ctx *c, gir_node *n);
gir_value *imp_unary(imp_ctx *c, gir_unary_fn fn, gir_value *x);
gir_value *imp_unary_p(imp_ctx *c, gir_unary_fn fn, gir_value *x, double alpha, double beta, double gamma);
gir_value *imp_binary(imp_ctx *c, gir_binary_fn fn, gir_value *a, gir_value *b);
gir_value *imp_where(imp_ctx *c, gir_value *cond, gir_value *a, gir_value *b);
gir_value *imp_cast(imp_ctx *c, gir_value *x, gir_dtype to);
gir_value *imp_reshape(imp_ctx *c, gir_value *x, int32_t rank, const int64_t *dims);
/* x, which holds one element, as a scalar. */
gir_value *imp_scalar_of(imp_ctx *c, gir_value *x);
gir_value *imp_transpose(imp_ctx *c, gir_value *x, const int64_t *perm);
gir_value *imp_concat(imp_ctx *c, gir_value *const *xs, int32_t n, int64_t axis);
/* Slice one axis: start/step/size already normalized. */
gir_value *imp_slice_axis(imp_ctx *c, gir_value *x, int axis, int64_t start, int64_t step, int64_t size);
gir_value *imp_broadcast_to(imp_ctx *c, gir_value *x, const gir_shape *s);
gir_value *imp_reduce(imp_ctx *c, gir_reduce_fn fn, gir_value *x, const int64_t *axes, int32_t n_axes, int keepdims);
/* layer_norm over axes [axis, rank) of x (scale, bias NULL or broadcasting against them;
 * rms: x / sqrt(mean(x²) + eps), no mean subtracted). */
gir_value *imp_layer_norm(imp_ctx *c, gir_value *x, gir_value *scale, gir_value *bias, int64_t axis, double eps,
                          int rms);
/* 1 if output i of the node is present and named (an optional output asked for). */
int imp_out_wanted(const imp_node *n, int i);
gir_value *imp_matmul(imp_ctx *c, gir_value *a, gir_value *b);
/* Scalar constant of x's dtype. */
gir_value *imp_scalar_like(imp_ctx *c, const gir_value *x, double v);
gir_value *imp_scalar(imp_ctx *c, gir_dtype t, double v);

/* Data the importer builds itself (weight matrices, masks, index tables, their
 * scratch) is sized from declared dims and attribute values, which a hostile
 * model chooses: it all comes out of one budget per import, IMP_MADE_MAX_BYTES.
 * imp_reserve takes count x elem bytes from it, or fails naming what. */
#define IMP_MADE_MAX_BYTES ((int64_t)256 << 20)
int imp_reserve(imp_ctx *c, int64_t count, size_t elem, const char *what);
/* count zeroed elements of elem bytes (one more, so count may be 0) from the budget. */
void *imp_scratch(imp_ctx *c, int64_t count, size_t elem, const char *what);
/* A new constant of shape s (data copied when not NULL, else zeros) from the budget. */
gir_value *imp_const_new(imp_ctx *c, gir_dtype t, const gir_shape *s, const void *data, const char *what);

/* Constant payload of v (a constant, or a known input), or NULL with an error
 * naming what: "input 'shape' of Reshape must be a constant". */
const void *imp_const_data(imp_ctx *c, const gir_value *v, const char *what);
/* Integer constant as int64 array (arena); count in *n. */
int64_t *imp_const_ints(imp_ctx *c, const gir_value *v, const char *what, int32_t *n);
double *imp_const_floats(imp_ctx *c, const gir_value *v, const char *what, int32_t *n);

int imp_set_output(imp_ctx *c, imp_node *n, int i, gir_value *v);

/* --- errors --- */
int imp_fail(imp_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Marks the node unsupported (recorded in the report) and returns -2. */
int imp_unsupported_node(imp_ctx *c, const imp_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* --- graph import (graph.c) --- */
int imp_import_graph(imp_ctx *c, const Onnx__GraphProto *gp, int top_level);
int imp_convert_nodes(imp_ctx *c, Onnx__NodeProto *const *nodes, size_t n_nodes);

/* --- wire-format pre-scan (wire.c) --- */
int imp_wire_check(const uint8_t *data, size_t n, gir_err *err);
/* One protobuf varint at p[*pos] (n bytes in all), *pos advanced: 0, or -1 when
 * truncated or longer than 10 bytes. */
int imp_wire_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *out);

#endif
