/* ops_reduce.c — ONNX reductions → canonical reduce / arg_reduce.
 *
 * The Reduce* family changed shape twice: axes moved from an attribute to an
 * optional input (ReduceSum at opset 13, the others at 18), and the same versions
 * added noop_with_empty_axes. Canonical reduce wants explicit, normalized axes, so
 * "no axes" is spelled out as every axis, or the node becomes the identity when
 * noop_with_empty_axes says so. Two cases are settled here rather than left to
 * code generation: a reduction over an empty tensor is a constant (the identity
 * element of the reduction: 0, 1, the type's lowest/highest value, -inf or NaN
 * for a mean), and boolean Max/Min (opset 20) run on uint8 and cast back. */
#include <math.h>
#include <string.h>
#include "ops.h"

/* Version at which axes became an input (and noop_with_empty_axes appeared). */
static int64_t axes_input_since(const char *op_type) { return !strcmp(op_type, "ReduceSum") ? 13 : 18; }

static int reduce_fn_of(const char *op_type) {
  static const struct {
    const char *onnx;
    gir_reduce_fn fn;
  } map[] = {
      {"ReduceSum", GIR_REDUCE_SUM},       {"ReduceMean", GIR_REDUCE_MEAN},
      {"ReduceMax", GIR_REDUCE_MAX},       {"ReduceMin", GIR_REDUCE_MIN},
      {"ReduceProd", GIR_REDUCE_PROD},     {"ReduceL1", GIR_REDUCE_L1},
      {"ReduceL2", GIR_REDUCE_L2},         {"ReduceLogSum", GIR_REDUCE_LOG_SUM},
      {"ReduceLogSumExp", GIR_REDUCE_LOG_SUM_EXP}, {"ReduceSumSquare", GIR_REDUCE_SUM_SQUARE},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(map[i].onnx, op_type)) return (int)map[i].fn;
  return -1;
}

/* A scalar of type t holding the result of reducing an empty set with fn. */
static gir_value *empty_reduction_value(imp_ctx *c, gir_reduce_fn fn, gir_dtype t) {
  gir_value *v = gir_const_scalar(c->g, t, 0.0);
  int is_int = gir_dtype_is_int(t) || t == GIR_BOOL;
  int64_t bits = gir_dtype_bits(t);
  int64_t imin = 0, imax = 0;
  if (is_int && t != GIR_BOOL) {
    if (gir_dtype_is_signed(t)) {
      imax = bits >= 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
      imin = -imax - 1;
    } else {
      imax = bits >= 64 ? -1 /* all ones as uint64 */ : (int64_t)((1ull << bits) - 1);
    }
  } else if (t == GIR_BOOL) {
    imax = 1;
  }
  switch (fn) {
  case GIR_REDUCE_PROD:
    if (is_int) gir_store_i64(t, v->data, 0, 1);
    else gir_store_f64(t, v->data, 0, 1.0);
    break;
  case GIR_REDUCE_MAX:
    if (is_int) gir_store_i64(t, v->data, 0, imin);
    else gir_store_f64(t, v->data, 0, -INFINITY);
    break;
  case GIR_REDUCE_MIN:
    if (is_int) gir_store_i64(t, v->data, 0, imax);
    else gir_store_f64(t, v->data, 0, INFINITY);
    break;
  case GIR_REDUCE_LOG_SUM:
  case GIR_REDUCE_LOG_SUM_EXP:
    if (!is_int) gir_store_f64(t, v->data, 0, -INFINITY);
    break;
  case GIR_REDUCE_MEAN:
    if (!is_int) gir_store_f64(t, v->data, 0, NAN);
    break;
  default: /* sum, sum_square, l1, l2: 0 */
    break;
  }
  return v;
}

static int cv_reduce(imp_ctx *c, imp_node *n) {
  int fn = reduce_fn_of(n->op_type);
  if (fn < 0) return imp_fail(c, "not a reduction");
  if (n->n_in < 1 || !n->in[0]) return imp_fail(c, "needs an input");
  gir_value *x = n->in[0];
  const int32_t r = x->shape.rank;
  int64_t since = axes_input_since(n->op_type);
  int64_t *axes = NULL;
  int32_t cnt = -1;
  if (imp_ints_attr_or_input(c, n, "axes", 1, since, &axes, &cnt) < 0) return -1;
  int keep = imp_attr_int(n, "keepdims", 1) != 0;
  int noop = n->opset >= since && imp_attr_int(n, "noop_with_empty_axes", 0) != 0;

  int64_t norm[GIR_MAX_RANK];
  int32_t na = 0;
  if (cnt <= 0) {
    if (noop) return imp_set_output(c, n, 0, x); /* reduction over no axes: the identity */
    for (int i = 0; i < r; i++) norm[na++] = i;
  } else {
    if (cnt > r) return imp_fail(c, "%d axes given for an input of rank %d", cnt, r);
    for (int i = 0; i < cnt; i++) {
      if (imp_axis(c, axes[i], r, &norm[i]) < 0) return -1;
      for (int j = 0; j < i; j++)
        if (norm[j] == norm[i]) return imp_fail(c, "axis %lld is given twice", (long long)axes[i]);
    }
    na = cnt;
  }

  if (x->dtype == GIR_BOOL && fn != GIR_REDUCE_MAX && fn != GIR_REDUCE_MIN)
    return imp_fail(c, "%s is not defined on bool", n->op_type);

  /* A scalar reduced over "all" of its zero axes: reduce a one-element vector. */
  if (r == 0) {
    int64_t one = 1, zero = 0;
    gir_value *v = imp_reshape(c, x, 1, &one);
    if (x->dtype == GIR_BOOL) v = imp_cast(c, v, GIR_U8);
    v = imp_reduce(c, (gir_reduce_fn)fn, v, &zero, 1, 0);
    if (x->dtype == GIR_BOOL) v = imp_cast(c, v, GIR_BOOL);
    return imp_set_output(c, n, 0, v);
  }


  /* Over an empty tensor the result is the reduction's identity, a constant. */
  if (gir_value_numel(x) == 0) {
    gir_shape s = {0};
    int red[GIR_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) red[norm[i]] = 1;
    for (int i = 0; i < r; i++) {
      if (!red[i]) s.dims[s.rank++] = x->shape.dims[i];
      else if (keep) s.dims[s.rank++] = 1;
    }
    gir_value *fill = empty_reduction_value(c, (gir_reduce_fn)fn, x->dtype);
    return imp_set_output(c, n, 0, imp_broadcast_to(c, fill, &s));
  }

  gir_value *v = x;
  if (x->dtype == GIR_BOOL) v = imp_cast(c, v, GIR_U8); /* max = any, min = all */
  v = imp_reduce(c, (gir_reduce_fn)fn, v, norm, na, keep);
  if (x->dtype == GIR_BOOL) v = imp_cast(c, v, GIR_BOOL);
  return imp_set_output(c, n, 0, v);
}

int imp_cv_ReduceSum(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceMean(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceMax(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceMin(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceProd(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceL1(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceL2(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceLogSum(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceLogSumExp(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }
int imp_cv_ReduceSumSquare(imp_ctx *c, imp_node *n) { return cv_reduce(c, n); }

/* ArgMax/ArgMin: axis (negative since 11), keepdims, select_last_index (since 12). */
static int cv_arg(imp_ctx *c, imp_node *n, gir_arg_fn fn) {
  if (n->n_in < 1 || !n->in[0]) return imp_fail(c, "needs an input");
  gir_value *x = n->in[0];
  if (x->shape.rank == 0) return imp_fail(c, "%s needs an input of rank >= 1", n->op_type);
  if (x->dtype == GIR_BOOL) return imp_fail(c, "%s is not defined on bool", n->op_type);
  int64_t axis;
  if (imp_axis(c, imp_attr_int(n, "axis", 0), x->shape.rank, &axis) < 0) return -1;
  if (x->shape.dims[axis] == 0) return imp_fail(c, "%s over the empty axis %lld", n->op_type, (long long)axis);
  gir_node *g = imp_new_node(c, GIR_OP_arg_reduce, &x, 1, 1);
  gir_attr_set_int(c->g, g, "fn", fn);
  gir_attr_set_int(c->g, g, "axis", axis);
  gir_attr_set_int(c->g, g, "keepdims", imp_attr_int(n, "keepdims", 1) != 0);
  gir_attr_set_int(c->g, g, "last", n->opset >= 12 && imp_attr_int(n, "select_last_index", 0) != 0);
  return imp_set_output(c, n, 0, imp_finish(c, g));
}

int imp_cv_ArgMax(imp_ctx *c, imp_node *n) { return cv_arg(c, n, GIR_ARG_MAX); }
int imp_cv_ArgMin(imp_ctx *c, imp_node *n) { return cv_arg(c, n, GIR_ARG_MIN); }
