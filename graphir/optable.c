/* optable.c — the property tables generated from ops.def / unary.def / binary.def /
 * reduce.def, and gir_node_infer, which checks arity and dispatches to the op's
 * inference function. */
#include <string.h>
#include "infer.h"

static const struct {
  const char *name;
  gir_category cat;
  int min_in, max_in, n_out;
  int (*infer)(gir_graph *, gir_node *, gir_err *);
} optab[GIR_OP_COUNT] = {
#define INJECTIVE GIR_INJECTIVE
#define REDUCTION GIR_REDUCTION
#define COMPLEX GIR_COMPLEX
#define OPAQUE GIR_OPAQUE
#define GIR_OP(name, cat, min_in, max_in, n_out) \
  [GIR_OP_##name] = {#name, cat, min_in, max_in, n_out, gir_infer_##name},
#include "ops.def"
#undef GIR_OP
#undef INJECTIVE
#undef REDUCTION
#undef COMPLEX
#undef OPAQUE
};

static const char *const unary_names[GIR_UNARY_COUNT] = {
#define GIR_UNARY(id, name) [GIR_UNARY_##id] = name,
#include "unary.def"
#undef GIR_UNARY
};

static const struct {
  const char *name;
  int cmp;
} binary_tab[GIR_BINARY_COUNT] = {
#define GIR_BINARY(id, name, cmp) [GIR_BINARY_##id] = {name, cmp},
#include "binary.def"
#undef GIR_BINARY
};

static const char *const reduce_names[GIR_REDUCE_COUNT] = {
#define GIR_REDUCE(id, name) [GIR_REDUCE_##id] = name,
#include "reduce.def"
#undef GIR_REDUCE
};

static const char *const category_names[GIR_CATEGORY_COUNT] = {
    [GIR_INJECTIVE] = "injective",
    [GIR_REDUCTION] = "reduction",
    [GIR_COMPLEX] = "complex-out-fusable",
    [GIR_OPAQUE] = "opaque",
};

const char *gir_op_name(gir_op op) { return op >= 0 && op < GIR_OP_COUNT ? optab[op].name : "?"; }
gir_op gir_op_from_name(const char *name) {
  for (int i = 0; i < GIR_OP_COUNT; i++)
    if (!strcmp(optab[i].name, name)) return (gir_op)i;
  return GIR_OP_COUNT;
}
gir_category gir_op_category(gir_op op) { return optab[op].cat; }
const char *gir_category_name(gir_category c) {
  return c >= 0 && c < GIR_CATEGORY_COUNT ? category_names[c] : "?";
}
int gir_op_min_inputs(gir_op op) { return optab[op].min_in; }
int gir_op_max_inputs(gir_op op) { return optab[op].max_in; }
int gir_op_outputs(gir_op op) { return optab[op].n_out; }
const char *gir_unary_name(gir_unary_fn f) { return f >= 0 && f < GIR_UNARY_COUNT ? unary_names[f] : "?"; }
const char *gir_binary_name(gir_binary_fn f) {
  return f >= 0 && f < GIR_BINARY_COUNT ? binary_tab[f].name : "?";
}
int gir_binary_is_compare(gir_binary_fn f) { return f >= 0 && f < GIR_BINARY_COUNT && binary_tab[f].cmp; }
const char *gir_reduce_name(gir_reduce_fn f) { return f >= 0 && f < GIR_REDUCE_COUNT ? reduce_names[f] : "?"; }

int gir_node_infer(gir_graph *g, gir_node *n, gir_err *err) {
  const char *where = n->origin ? n->origin : n->name;
  if (n->n_in < optab[n->op].min_in || n->n_in > optab[n->op].max_in)
    return gir_errf(err, "%s: %s takes %d..%d inputs, got %d", where, optab[n->op].name, optab[n->op].min_in,
                    optab[n->op].max_in, n->n_in);
  if (n->n_out != optab[n->op].n_out)
    return gir_errf(err, "%s: %s has %d outputs, got %d", where, optab[n->op].name, optab[n->op].n_out, n->n_out);
  for (int i = 0; i < optab[n->op].min_in; i++)
    if (!n->in[i]) return gir_errf(err, "%s: %s: required input %d is missing", where, optab[n->op].name, i);
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] && !gir_dtype_first_class(n->in[i]->dtype))
      return gir_errf(err, "%s: %s: input %d has unsupported element type %s", where, optab[n->op].name, i,
                      gir_dtype_name(n->in[i]->dtype));
  if (optab[n->op].infer(g, n, err) < 0) return gir_err_prefix(err, "%s (%s)", where, optab[n->op].name);
  return 0;
}

/* --- helpers shared by the inference functions --- */

int gir_broadcast(const gir_shape *a, const gir_shape *b, gir_shape *out, gir_err *err) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  gir_shape s = {.rank = r};
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da == db || db == 1)
      s.dims[i] = da;
    else if (da == 1)
      s.dims[i] = db;
    else {
      char ba[160], bb[160];
      return gir_errf(err, "shapes %s and %s do not broadcast", gir_shape_str(a, ba, sizeof ba),
                      gir_shape_str(b, bb, sizeof bb));
    }
  }
  *out = s;
  return 0;
}

int gir_norm_axis(int64_t axis, int32_t rank, int64_t *out, gir_err *err) {
  if (axis < -(int64_t)rank || axis >= rank)
    return gir_errf(err, "axis %lld out of range for rank %d", (long long)axis, rank);
  *out = axis < 0 ? axis + rank : axis;
  return 0;
}

int gir_set_out(gir_node *n, int i, gir_dtype t, const gir_shape *s, gir_err *err) {
  if (s->rank > GIR_MAX_RANK) return gir_errf(err, "rank %d exceeds the limit of %d", s->rank, GIR_MAX_RANK);
  int64_t numel = gir_shape_numel(s, err);
  if (numel < 0) return -1;
  size_t es = gir_dtype_size(t);
  if (es && numel > INT64_MAX / (int64_t)es) return gir_errf(err, "output byte size overflows int64");
  n->out[i]->dtype = t;
  n->out[i]->shape = *s;
  return 0;
}
