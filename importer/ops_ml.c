/* ops_ml.c — ai.onnx.ml ops on tensors of numbers: Binarizer (ml opset 1+),
 * ArrayFeatureExtractor (1+) and TreeEnsemble (5+), after onnx/reference/ops/
 * aionnxml/. (LabelEncoder and the ops on strings or maps need element types
 * kiln does not have.)
 *
 * TreeEnsemble is static: its trees are attributes. Instead of one where-chain
 * per tree node, every tree is walked at once by a fixed number of steps: the
 * state holds, for each sample and tree, the index of the node reached, in one
 * index space where the interior nodes come first and the leaves follow. A step
 * gathers the current node's feature, split, mode and successors from constant
 * tables, compares, and moves to the true or the false successor; a leaf is its
 * own successor, so after as many steps as the deepest tree has levels, every
 * state is a leaf. The leaves' weights then go to their targets through a
 * one-hot mask over the targets, summed (averaged, min-ed, max-ed) over the
 * trees. The graph grows with the depth only, not with the number of trees or
 * nodes. The post transforms follow onnxruntime (the reference skips them),
 * PROBIT with its approximation of erf⁻¹. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "ops.h"

/* Steps of the tree walk unrolled at most (the deepest tree's interior levels). */
#define TREE_MAX_DEPTH 1024

static int check_ml(imp_ctx *c, const imp_node *n, int64_t since) {
  if (!n->proto->domain || strcmp(n->proto->domain, "ai.onnx.ml")) return imp_unsupported_node(c, n, "no converter");
  if (n->opset < since)
    return imp_fail(c, "%s needs ai.onnx.ml opset %lld or later, the model imports %lld", n->op_type, (long long)since,
                    (long long)n->opset);
  return 0;
}

/* --- Binarizer, ArrayFeatureExtractor ---------------------------------------------------------------------- */

/* y = x > threshold ? 1 : 0 in x's type. Integer x compares with the floored
 * threshold (x > t ⇔ x > floor(t)); one beyond x's range gives all 0 or all 1. */
int imp_cv_Binarizer(imp_ctx *c, imp_node *n) {
  int rc = check_ml(c, n, 1);
  if (rc < 0) return rc;
  gir_value *x = n->n_in > 0 ? n->in[0] : NULL;
  if (!x) return imp_fail(c, "needs input X");
  if (!gir_dtype_is_float(x->dtype) && x->dtype != GIR_I64 && x->dtype != GIR_I32)
    return imp_fail(c, "X must be float, double, int64 or int32, not %s", gir_dtype_name(x->dtype));
  double t = imp_attr_float(n, "threshold", 0.0);
  if (!gir_dtype_is_float(x->dtype)) {
    double lim = x->dtype == GIR_I32 ? 2147483648.0 : 9223372036854775808.0; /* 2^31, 2^63 */
    t = floor(t);
    if (t >= lim || t < -lim)
      return imp_set_output(c, n, 0, imp_broadcast_to(c, imp_scalar_like(c, x, t < 0), &x->shape));
  }
  return imp_set_output(c, n, 0, imp_cast(c, imp_binary(c, GIR_BINARY_GT, x, imp_scalar_like(c, x, t)), x->dtype));
}

/* z = x[..., indices] with the indices flattened; a 1-D x gives [1, count], as
 * onnxruntime does. */
int imp_cv_ArrayFeatureExtractor(imp_ctx *c, imp_node *n) {
  int rc = check_ml(c, n, 1);
  if (rc < 0) return rc;
  gir_value *x = n->n_in > 0 ? n->in[0] : NULL, *y = n->n_in > 1 ? n->in[1] : NULL;
  if (!x || !y) return imp_fail(c, "needs inputs X and Y");
  if (!gir_dtype_is_float(x->dtype) && x->dtype != GIR_I64 && x->dtype != GIR_I32)
    return imp_fail(c, "X must be float, double, int64 or int32, not %s", gir_dtype_name(x->dtype));
  if (!gir_dtype_is_int(y->dtype)) return imp_fail(c, "Y must hold integer indices, not %s", gir_dtype_name(y->dtype));
  int r = x->shape.rank;
  if (r < 1) return imp_fail(c, "X must have rank 1 or more");
  int64_t f = x->shape.dims[r - 1], cnt = gir_value_numel(y);
  if (y->data) {
    for (int64_t i = 0; i < cnt; i++) {
      int64_t k = gir_load_i64(y->dtype, y->data, i);
      if (k < -f || k >= f)
        return imp_fail(c, "index %lld is out of range for the last axis of X (size %lld)", (long long)k, (long long)f);
    }
  }
  gir_value *ins[2] = {x, imp_reshape(c, imp_cast(c, y, GIR_I64), 1, &cnt)};
  if (!ins[1]) return -1;
  gir_node *g = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
  gir_attr_set_int(c->g, g, "axis", r - 1);
  gir_value *z = imp_finish(c, g);
  if (z && r == 1) {
    int64_t d[2] = {1, cnt};
    z = imp_reshape(c, z, 2, d);
  }
  return imp_set_output(c, n, 0, z);
}

/* --- TreeEnsemble ------------------------------------------------------------------------------------------ */

enum { BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, BRANCH_MEMBER, BRANCH_COUNT };
enum { AGG_AVERAGE, AGG_SUM, AGG_MIN, AGG_MAX };
enum { POST_NONE, POST_SOFTMAX, POST_LOGISTIC, POST_SOFTMAX_ZERO, POST_PROBIT };

typedef struct forest {
  int64_t nn, nl, nt, k;  /* interior nodes, leaves, trees, targets */
  int64_t *feat, *tnext, *fnext, *tleaf, *fleaf, *mode, *miss, *roots, *target;
  double *split, *weight;
  double *members;        /* [nn][m], NaN-padded: the set of each MEMBER node */
  int64_t m;              /* the largest set */
  int used[BRANCH_COUNT]; /* modes that occur */
  int any_missing;
} forest;

/* An INTS attribute of exactly want values (want < 0: any count, returned). */
static int64_t ints_of(imp_ctx *c, const imp_node *n, const char *name, int64_t want, int64_t **out) {
  int32_t cnt = imp_attr_ints(c, n, name, out);
  if (cnt < 0) return c->err->msg[0] ? -1 : imp_fail(c, "attribute %s is missing", name);
  if (want >= 0 && cnt != want)
    return imp_fail(c, "attribute %s has %d values, expected %lld", name, cnt, (long long)want);
  return cnt;
}

/* A TENSOR attribute read as numbers, exactly want of them (want < 0: any). */
static int64_t tensor_of(imp_ctx *c, const imp_node *n, const char *name, int64_t want, double **out) {
  gir_value *v = imp_attr_tensor(c, n, name);
  if (!v) return -1;
  if (!gir_dtype_is_float(v->dtype) && !gir_dtype_is_int(v->dtype))
    return imp_fail(c, "attribute %s must hold numbers, not %s", name, gir_dtype_name(v->dtype));
  int32_t cnt;
  *out = imp_const_floats(c, v, name, &cnt);
  if (!*out) return -1;
  if (want >= 0 && cnt != want)
    return imp_fail(c, "attribute %s has %d values, expected %lld", name, cnt, (long long)want);
  return cnt;
}

/* Interior levels below node i (1 for a node whose successors are leaves); lvl
 * memoizes (0: not yet, -1: on the current path, which means a cycle). */
static int64_t levels(imp_ctx *c, const forest *f, int64_t i, int64_t *lvl, int depth) {
  if (lvl[i] > 0) return lvl[i];
  if (lvl[i] < 0) return imp_fail(c, "the trees have a cycle through node %lld", (long long)i);
  if (depth > TREE_MAX_DEPTH) return 0; /* the caller reports the depth */
  lvl[i] = -1;
  int64_t d = 0;
  if (!f->tleaf[i]) {
    int64_t s = levels(c, f, f->tnext[i], lvl, depth + 1);
    if (s <= 0) return s < 0 ? -1 : 0;
    d = s;
  }
  if (!f->fleaf[i]) {
    int64_t s = levels(c, f, f->fnext[i], lvl, depth + 1);
    if (s <= 0) return s < 0 ? -1 : 0;
    if (s > d) d = s;
  }
  return lvl[i] = d + 1;
}

/* Reads and checks the attributes; *depth receives the walk's step count. */
static int read_forest(imp_ctx *c, const imp_node *n, int64_t features, forest *f, int64_t *depth) {
  memset(f, 0, sizeof *f);
  if ((f->nn = ints_of(c, n, "nodes_featureids", -1, &f->feat)) < 0) return -1;
  if (ints_of(c, n, "nodes_truenodeids", f->nn, &f->tnext) < 0 ||
      ints_of(c, n, "nodes_falsenodeids", f->nn, &f->fnext) < 0 ||
      ints_of(c, n, "nodes_trueleafs", f->nn, &f->tleaf) < 0 || ints_of(c, n, "nodes_falseleafs", f->nn, &f->fleaf) < 0)
    return -1;
  double *modes;
  if (tensor_of(c, n, "nodes_modes", f->nn, &modes) < 0 || tensor_of(c, n, "nodes_splits", f->nn, &f->split) < 0)
    return -1;
  if ((f->nl = ints_of(c, n, "leaf_targetids", -1, &f->target)) < 0) return -1;
  if (tensor_of(c, n, "leaf_weights", f->nl, &f->weight) < 0) return -1;
  if ((f->nt = ints_of(c, n, "tree_roots", -1, &f->roots)) < 0) return -1;
  const char *miss = "nodes_missing_value_tracks_true";
  if (imp_attr(n, miss) && ints_of(c, n, miss, f->nn, &f->miss) < 0) return -1;
  f->k = imp_attr_int(n, "n_targets", -1);
  if (f->k < 0) /* not given: as many as the leaves name */
    for (int64_t j = 0; j < f->nl; j++)
      if (f->target[j] >= f->k) f->k = f->target[j] + 1;
  if (f->k < 1) return imp_fail(c, "n_targets must be at least 1");

  f->mode = gir_arena_calloc(c->g->arena, (size_t)f->nn + 1, sizeof *f->mode);
  int64_t n_member = 0;
  for (int64_t i = 0; i < f->nn; i++) {
    double md = modes[i];
    if (!(md >= 0 && md < BRANCH_COUNT) || md != floor(md))
      return imp_fail(c, "nodes_modes[%lld] = %g is not a mode (0 to 6)", (long long)i, md);
    f->mode[i] = (int64_t)md;
    f->used[f->mode[i]] = 1;
    n_member += f->mode[i] == BRANCH_MEMBER;
    if (f->feat[i] < 0 || f->feat[i] >= features)
      return imp_fail(c, "nodes_featureids[%lld] = %lld is not a feature of X (%lld)", (long long)i,
                      (long long)f->feat[i], (long long)features);
    if (f->tnext[i] < 0 || f->tnext[i] >= (f->tleaf[i] ? f->nl : f->nn) || f->fnext[i] < 0 ||
        f->fnext[i] >= (f->fleaf[i] ? f->nl : f->nn))
      return imp_fail(c, "node %lld: a successor is out of range", (long long)i);
    if (f->miss && f->miss[i]) f->any_missing = 1;
  }
  for (int64_t j = 0; j < f->nl; j++)
    if (f->target[j] < 0 || f->target[j] >= f->k)
      return imp_fail(c, "leaf_targetids[%lld] = %lld is outside [0, %lld)", (long long)j, (long long)f->target[j],
                      (long long)f->k);
  for (int64_t t = 0; t < f->nt; t++)
    if (f->roots[t] < 0 || f->roots[t] >= f->nn)
      return imp_fail(c, "tree_roots[%lld] = %lld is not a node", (long long)t, (long long)f->roots[t]);

  /* the sets of the MEMBER nodes, in node order, each ended by a NaN */
  if (n_member) {
    double *mv;
    int64_t cnt = imp_attr(n, "membership_values") ? tensor_of(c, n, "membership_values", -1, &mv) : 0;
    if (cnt < 0) return -1;
    int64_t sets = 0, run = 0;
    for (int64_t i = 0; i < cnt; i++) {
      if (isnan(mv[i])) sets++, run = 0;
      else if (++run > f->m) f->m = run;
    }
    if (sets != n_member)
      return imp_fail(c, "membership_values holds %lld NaN-ended sets for %lld BRANCH_MEMBER nodes", (long long)sets,
                      (long long)n_member);
    if (f->m < 1) f->m = 1;
    if (f->nn > (1 << 24) / f->m) return imp_fail(c, "membership_values: too many members");
    if (!(f->members = imp_scratch(c, f->nn * f->m, sizeof *f->members, "membership table"))) return -1;
    for (int64_t i = 0; i < f->nn * f->m; i++) f->members[i] = NAN;
    int64_t at = 0;
    for (int64_t i = 0; i < f->nn; i++) {
      if (f->mode[i] != BRANCH_MEMBER) continue;
      for (int64_t j = 0; !isnan(mv[at]); j++) f->members[i * f->m + j] = mv[at++];
      at++; /* the NaN */
    }
  }

  int64_t *lvl = gir_arena_calloc(c->g->arena, (size_t)f->nn + 1, sizeof *lvl);
  *depth = 0;
  for (int64_t t = 0; t < f->nt; t++) {
    int64_t d = levels(c, f, f->roots[t], lvl, 1);
    if (d < 0) return -1;
    if (d == 0) return imp_unsupported_node(c, n, "a tree deeper than %d levels", TREE_MAX_DEPTH);
    if (d > *depth) *depth = d;
  }
  return 0;
}

/* v as stored in type t (the splits and members compare as X's type does). */
static double round_to(gir_dtype t, double v) {
  uint64_t buf = 0;
  gir_store_f64(t, &buf, 0, v);
  return gir_load_f64(t, &buf, 0);
}

/* A constant 1-D table over the index space (nodes, then leaves), or [size][m]. */
static gir_value *table(imp_ctx *c, gir_dtype t, int64_t size, int64_t m, const double *vals) {
  gir_shape s = {.rank = m ? 2 : 1, .dims = {size, m}};
  gir_value *v = imp_const_new(c, t, &s, NULL, "tree table");
  if (!v) return NULL;
  int64_t cnt = size * (m ? m : 1);
  for (int64_t i = 0; i < cnt; i++) gir_store_f64(t, v->data, i, vals[i]);
  return v;
}

static gir_value *gather0(imp_ctx *c, gir_value *tab, gir_value *idx) {
  gir_value *ins[2] = {tab, idx};
  if (!tab || !idx) return NULL;
  gir_node *g = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
  gir_attr_set_int(c->g, g, "axis", 0);
  return imp_finish(c, g);
}

/* The comparison of mode md between the features xv and the splits sv (both
 * [N, trees]); mem: the member sets [N, trees, m] for BRANCH_MEMBER. */
static gir_value *compare(imp_ctx *c, int md, gir_value *xv, gir_value *sv, gir_value *mem) {
  switch (md) {
  case BRANCH_LEQ: return imp_binary(c, GIR_BINARY_LE, xv, sv);
  case BRANCH_LT: return imp_binary(c, GIR_BINARY_LT, xv, sv);
  case BRANCH_GTE: return imp_binary(c, GIR_BINARY_GE, xv, sv);
  case BRANCH_GT: return imp_binary(c, GIR_BINARY_GT, xv, sv);
  case BRANCH_EQ: return imp_binary(c, GIR_BINARY_EQ, xv, sv);
  case BRANCH_NEQ: return imp_unary(c, GIR_UNARY_NOT, imp_binary(c, GIR_BINARY_EQ, xv, sv));
  default: { /* any member equal: NaN pads never are */
    int64_t d[3] = {xv->shape.dims[0], xv->shape.dims[1], 1}, axis = 2;
    gir_value *eq = imp_binary(c, GIR_BINARY_EQ, imp_reshape(c, xv, 3, d), mem);
    gir_value *hits = imp_reduce(c, GIR_REDUCE_MAX, imp_cast(c, eq, GIR_F32), &axis, 1, 0);
    return imp_binary(c, GIR_BINARY_GT, hits, imp_scalar(c, GIR_F32, 0.0));
  }
  }
}

static gir_value *add(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_ADD, a, b); }
static gir_value *sub(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_SUB, a, b); }
static gir_value *mul(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_MUL, a, b); }

/* y [N, K] after the post transform, as onnxruntime computes it. */
static gir_value *post_transform(imp_ctx *c, int64_t post, gir_value *y) {
  int64_t axis = 1;
  if (!y) return NULL;
  gir_value *zero = imp_scalar_like(c, y, 0.0), *one = imp_scalar_like(c, y, 1.0);
  switch (post) {
  case POST_SOFTMAX: {
    gir_node *sn = imp_new_node(c, GIR_OP_softmax, &y, 1, 1);
    gir_attr_set_int(c->g, sn, "axis", 1);
    gir_attr_set_int(c->g, sn, "log", 0);
    return imp_finish(c, sn);
  }
  case POST_LOGISTIC: return imp_unary(c, GIR_UNARY_SIGMOID, y);
  case POST_SOFTMAX_ZERO: { /* values within 1e-7 of 0 count for nothing and stay, scaled by exp(-max) */
    gir_value *mx = imp_reduce(c, GIR_REDUCE_MAX, y, &axis, 1, 1);
    gir_value *nz = imp_binary(c, GIR_BINARY_GT, imp_unary(c, GIR_UNARY_ABS, y), imp_scalar_like(c, y, 1e-7));
    gir_value *small = mul(c, y, imp_unary(c, GIR_UNARY_EXP, imp_unary(c, GIR_UNARY_NEG, mx)));
    gir_value *e = imp_where(c, nz, imp_unary(c, GIR_UNARY_EXP, sub(c, y, mx)), small);
    gir_value *sum = imp_reduce(c, GIR_REDUCE_SUM, imp_where(c, nz, e, zero), &axis, 1, 1);
    return imp_binary(c, GIR_BINARY_DIV, e, sum);
  }
  case POST_PROBIT: { /* sqrt(2) * erfinv(2y - 1), erfinv by Winitzki's approximation (a = 0.147) as onnxruntime */
    gir_value *x = sub(c, mul(c, y, imp_scalar_like(c, y, 2.0)), one);
    gir_value *sgn = imp_where(c, imp_binary(c, GIR_BINARY_LT, x, zero), imp_scalar_like(c, y, -1.0), one);
    gir_value *lg = imp_unary(c, GIR_UNARY_LOG, mul(c, sub(c, one, x), add(c, one, x)));
    gir_value *v = add(c, imp_scalar_like(c, y, 2.0f / (3.14159f * 0.147f)), mul(c, imp_scalar_like(c, y, 0.5), lg));
    gir_value *v2 = mul(c, imp_scalar_like(c, y, 1.0f / 0.147f), lg);
    gir_value *v3 = sub(c, imp_unary(c, GIR_UNARY_SQRT, sub(c, mul(c, v, v), v2)), v);
    return mul(c, imp_scalar_like(c, y, 1.41421356f), mul(c, sgn, imp_unary(c, GIR_UNARY_SQRT, v3)));
  }
  default: return y;
  }
}

int imp_cv_TreeEnsemble(imp_ctx *c, imp_node *n) {
  int rc = check_ml(c, n, 5);
  if (rc < 0) return rc;
  gir_value *x = n->n_in > 0 ? n->in[0] : NULL;
  if (!x) return imp_fail(c, "needs input X");
  if (x->dtype != GIR_F32 && x->dtype != GIR_F64 && x->dtype != GIR_F16)
    return imp_fail(c, "X must be float, double or float16, not %s", gir_dtype_name(x->dtype));
  if (x->shape.rank != 2) return imp_fail(c, "X must be 2-D (batch, features), not rank %d", x->shape.rank);
  int64_t agg = imp_attr_int(n, "aggregate_function", AGG_SUM), post = imp_attr_int(n, "post_transform", POST_NONE);
  if (agg < AGG_AVERAGE || agg > AGG_MAX) return imp_fail(c, "aggregate_function %lld is not 0 to 3", (long long)agg);
  if (post < POST_NONE || post > POST_PROBIT) return imp_fail(c, "post_transform %lld is not 0 to 4", (long long)post);
  int64_t rows = x->shape.dims[0], depth;
  forest f;
  if ((rc = read_forest(c, n, x->shape.dims[1], &f, &depth)) < 0) return rc;

  gir_dtype ct = x->dtype == GIR_F16 ? GIR_F32 : x->dtype;
  double big = x->dtype == GIR_F16 ? 65504.0 : x->dtype == GIR_F32 ? FLT_MAX : DBL_MAX;
  double init = agg == AGG_MIN ? big : agg == AGG_MAX ? -big : 0.0;
  gir_shape ys = {.rank = 2, .dims = {rows, f.k}};
  if (f.nt == 0) return imp_set_output(c, n, 0, imp_broadcast_to(c, imp_scalar(c, x->dtype, init), &ys));

  /* the tables over the index space: interior nodes [0, nn), leaves [nn, nn + nl) */
  int64_t size = f.nn + f.nl;
  double *tabs = imp_scratch(c, 8 * size + f.nt, sizeof *tabs, "tree tables");
  if (!tabs) return -1;
  double *feat = tabs, *split = feat + size, *mode = split + size, *tn = mode + size, *fn = tn + size;
  double *miss = fn + size, *weight = miss + size, *target = weight + size, *root = target + size;
  for (int64_t i = 0; i < f.nn; i++) {
    feat[i] = (double)f.feat[i];
    split[i] = round_to(x->dtype, f.split[i]);
    mode[i] = (double)f.mode[i];
    tn[i] = (double)(f.tleaf[i] ? f.nn + f.tnext[i] : f.tnext[i]);
    fn[i] = (double)(f.fleaf[i] ? f.nn + f.fnext[i] : f.fnext[i]);
    miss[i] = f.miss ? f.miss[i] != 0 : 0;
  }
  for (int64_t j = 0; j < f.nl; j++) {
    tn[f.nn + j] = fn[f.nn + j] = (double)(f.nn + j);
    weight[f.nn + j] = agg == AGG_AVERAGE ? f.weight[j] / (double)f.nt : f.weight[j];
    target[f.nn + j] = (double)f.target[j];
  }
  for (int64_t t = 0; t < f.nt; t++) root[t] = (double)f.roots[t];
  int n_modes = 0, only = 0;
  for (int m = 0; m < BRANCH_COUNT; m++)
    if (f.used[m]) n_modes++, only = m;
  gir_value *t_feat = table(c, GIR_I64, size, 0, feat), *t_split = table(c, ct, size, 0, split);
  gir_value *t_true = table(c, GIR_I64, size, 0, tn), *t_false = table(c, GIR_I64, size, 0, fn);
  gir_value *t_mode = n_modes > 1 ? table(c, GIR_I64, size, 0, mode) : NULL;
  gir_value *t_miss = f.any_missing ? imp_cast(c, table(c, GIR_U8, size, 0, miss), GIR_BOOL) : NULL;
  gir_value *t_mem = NULL;
  if (f.members) {
    double *mem = imp_scratch(c, size * f.m, sizeof *mem, "membership table");
    if (!mem) return -1;
    for (int64_t i = 0; i < size * f.m; i++) mem[i] = i < f.nn * f.m ? round_to(x->dtype, f.members[i]) : NAN;
    if (!(t_mem = table(c, ct, size, f.m, mem))) return -1;
  }
  if (!t_feat || !t_split || !t_true || !t_false || (n_modes > 1 && !t_mode) || (f.any_missing && !t_miss)) return -1;

  /* the walk: state [N, trees] of indices into the tables */
  gir_value *xc = imp_cast(c, x, ct);
  gir_shape ss = {.rank = 2, .dims = {rows, f.nt}};
  int64_t d2[2] = {1, f.nt};
  gir_value *state = imp_broadcast_to(c, imp_reshape(c, table(c, GIR_I64, f.nt, 0, root), 2, d2), &ss);
  for (int64_t step = 0; step < depth && state; step++) {
    gir_value *ins[2] = {xc, gather0(c, t_feat, state)};
    if (!ins[1]) return -1;
    gir_node *ge = imp_new_node(c, GIR_OP_gather_elements, ins, 2, 1);
    gir_attr_set_int(c->g, ge, "axis", 1);
    gir_value *xv = imp_finish(c, ge), *sv = gather0(c, t_split, state);
    gir_value *mem = t_mem ? gather0(c, t_mem, state) : NULL;
    if (!xv || !sv || (t_mem && !mem)) return -1;
    gir_value *cond = compare(c, only, xv, sv, mem);
    if (n_modes > 1) { /* select each node's comparison by its mode */
      gir_value *md = gather0(c, t_mode, state);
      for (int m = 0; m < BRANCH_COUNT; m++)
        if (f.used[m] && m != only)
          cond = imp_where(c, imp_binary(c, GIR_BINARY_EQ, md, imp_scalar(c, GIR_I64, m)), compare(c, m, xv, sv, mem),
                           cond);
    }
    if (t_miss) /* NaN features follow the true branch where the node says so */
      cond = imp_binary(c, GIR_BINARY_OR, cond,
                        imp_binary(c, GIR_BINARY_AND, gather0(c, t_miss, state), imp_unary(c, GIR_UNARY_ISNAN, xv)));
    state = imp_where(c, cond, gather0(c, t_true, state), gather0(c, t_false, state));
    /* a step reads the state several times, so fusing the steps into one kernel
     * would compute it again per use, exponentially in the depth; a reduction over
     * a unit axis is a fusion barrier (reductions never fuse forward) that keeps
     * each step one kernel reading the last one's stored state */
    int64_t d3[3] = {rows, f.nt, 1}, last = 2;
    if (step + 1 < depth) state = imp_reduce(c, GIR_REDUCE_MAX, imp_reshape(c, state, 3, d3), &last, 1, 0);
  }

  /* the leaves' weights into their targets: mask [N, trees, K] */
  gir_value *w = gather0(c, table(c, ct, size, 0, weight), state);
  gir_value *k = gather0(c, table(c, GIR_I64, size, 0, target), state);
  if (!w || !k) return -1;
  int64_t d3[3] = {rows, f.nt, 1}, axis = 1;
  double *ks = imp_scratch(c, f.k, sizeof *ks, "target table");
  if (!ks) return -1;
  for (int64_t j = 0; j < f.k; j++) ks[j] = (double)j;
  gir_value *mask = imp_binary(c, GIR_BINARY_EQ, imp_reshape(c, k, 3, d3), table(c, GIR_I64, f.k, 0, ks));
  gir_value *contrib = imp_where(c, mask, imp_reshape(c, w, 3, d3), imp_scalar(c, ct, init));
  gir_reduce_fn fn_r = agg == AGG_MIN ? GIR_REDUCE_MIN : agg == AGG_MAX ? GIR_REDUCE_MAX : GIR_REDUCE_SUM;
  gir_value *y = post_transform(c, post, imp_reduce(c, fn_r, contrib, &axis, 1, 0));
  return imp_set_output(c, n, 0, imp_cast(c, y, x->dtype));
}
