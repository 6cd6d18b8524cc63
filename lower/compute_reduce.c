/* compute_reduce.c — compute definitions of reduce, arg_reduce, softmax,
 * layer_norm and cumulate. Multi-pass ops are chains of stages: softmax is
 * max → exp-sum → normalize (the max subtraction keeps exp from overflowing);
 * layer_norm is mean → variance → normalize. Statistics of float16/bfloat16
 * inputs are accumulated in float32. */
#include <math.h>
#include "compute.h"

/* Input index of a reduction: reduced axes take the reduce variables, kept axes
 * the output's (skipping size-1 output axes when keepdims). */
static void reduce_index(te_ctx *c, int r, const int *red, int keep, te_var *const *oax, te_var *const *rax,
                         te_expr **idx) {
  int o = 0, k = 0;
  for (int i = 0; i < r; i++) {
    if (red[i]) {
      idx[i] = te_v(c, rax[k++]);
      if (keep) o++;
    } else
      idx[i] = te_v(c, oax[o++]);
  }
}

static gir_dtype acc_type(gir_dtype t) { return t == GIR_F16 || t == GIR_BF16 ? GIR_F32 : t; }

int lower_compute_reduce(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int red[GIR_MAX_RANK] = {0}, keep = (int)gir_attr_int(n, "keepdims", 1);
  int32_t na;
  const int64_t *axes = gir_attr_ints(n, "axes", &na);
  te_var *rax[GIR_MAX_RANK], *oax[GIR_MAX_RANK];
  int64_t count = 1;
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
    red[a] = 1;
  }
  for (int i = 0, k = 0; i < x->rank; i++)
    if (red[i]) {
      rax[k++] = te_var_new(c, "r", x->shape[i]);
      count *= x->shape[i];
    }
  lower_out_axes(c, n, 0, oax);
  te_expr *idx[GIR_MAX_RANK];
  reduce_index(c, x->rank, red, keep, oax, rax, idx);
  gir_dtype t = x->dtype, at = acc_type(t);
  te_expr *v = te_cast(c, at, te_load(c, x, idx)), *body;
  gir_reduce_fn fn = (gir_reduce_fn)gir_attr_int(n, "fn", 0);
  switch (fn) {
  case GIR_REDUCE_SUM: body = te_reduce(c, TE_SUM, rax, na, v, NULL); break;
  case GIR_REDUCE_MEAN:
    body = te_div(c, te_reduce(c, TE_SUM, rax, na, v, NULL), te_const(c, at, (double)count));
    break;
  case GIR_REDUCE_MAX: body = te_reduce(c, TE_RMAX, rax, na, v, NULL); break;
  case GIR_REDUCE_MIN: body = te_reduce(c, TE_RMIN, rax, na, v, NULL); break;
  case GIR_REDUCE_PROD: body = te_reduce(c, TE_PROD, rax, na, v, NULL); break;
  case GIR_REDUCE_SUM_SQUARE: body = te_reduce(c, TE_SUM, rax, na, te_mul(c, v, v), NULL); break;
  case GIR_REDUCE_L1:
    body = te_reduce(c, TE_SUM, rax, na, gir_dtype_is_signed(at) ? te_un(c, TE_ABS, v) : v, NULL);
    break;
  case GIR_REDUCE_L2:
    body = te_reduce(c, TE_SUM, rax, na, te_mul(c, v, v), NULL);
    body = gir_dtype_is_float(at) ? te_un(c, TE_SQRT, body)
                                  : te_cast(c, at, te_un(c, TE_SQRT, te_cast(c, GIR_F64, body)));
    break;
  case GIR_REDUCE_LOG_SUM:
    body = te_un(c, TE_LOG, te_cast(c, gir_dtype_is_float(at) ? at : GIR_F64, te_reduce(c, TE_SUM, rax, na, v, NULL)));
    body = te_cast(c, at, body);
    break;
  case GIR_REDUCE_LOG_SUM_EXP: {
    /* max-shifted: m + log(sum(exp(x - m))), with m = 0 where the max is infinite */
    gir_dtype ft = gir_dtype_is_float(at) ? at : GIR_F64;
    te_var *oax2[GIR_MAX_RANK], *rax2[GIR_MAX_RANK];
    lower_out_axes(c, n, 0, oax2);
    for (int i = 0; i < na; i++) rax2[i] = te_var_new(c, "r", rax[i]->extent);
    te_expr *idx2[GIR_MAX_RANK];
    reduce_index(c, x->rank, red, keep, oax2, rax2, idx2);
    const gir_value *o = n->out[0];
    te_tensor *m = te_compute(c, "lse_max", ft, o->shape.rank, o->shape.dims, oax2,
                              te_reduce(c, TE_RMAX, rax2, na, te_cast(c, ft, te_load(c, x, idx2)), NULL));
    te_expr *mi[GIR_MAX_RANK];
    for (int i = 0; i < o->shape.rank; i++) mi[i] = te_v(c, oax[i]);
    te_expr *mv = te_load(c, m, mi);
    te_expr *shift = te_select(c, te_un(c, TE_ISINF, mv), te_const(c, ft, 0), mv);
    te_expr *s = te_reduce(c, TE_SUM, rax, na, te_un(c, TE_EXP, te_sub(c, te_cast(c, ft, v), shift)), NULL);
    body = te_cast(c, at, te_add(c, shift, te_un(c, TE_LOG, s)));
    break;
  }
  default: return gir_errf(c->err, "%s: unknown reduce function", n->name);
  }
  out[0] = lower_stage(c, n, 0, oax, te_cast(c, t, body));
  return 0;
}

int lower_compute_arg_reduce(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int red[GIR_MAX_RANK] = {0}, keep = (int)gir_attr_int(n, "keepdims", 1);
  int64_t axis = gir_attr_int(n, "axis", 0);
  if (axis < 0) axis += x->rank;
  red[axis] = 1;
  te_var *oax[GIR_MAX_RANK], *r = te_var_new(c, "r", x->shape[axis]);
  lower_out_axes(c, n, 0, oax);
  te_expr *idx[GIR_MAX_RANK];
  reduce_index(c, x->rank, red, keep, oax, &r, idx);
  te_combiner comb = gir_attr_int(n, "fn", GIR_ARG_MAX) == GIR_ARG_MAX ? TE_ARGMAX : TE_ARGMIN;
  out[0] = lower_stage(c, n, 0, oax, te_argreduce(c, comb, &r, 1, te_load(c, x, idx), (int)gir_attr_int(n, "last", 0)));
  return 0;
}

/* A stage reducing x (cast to t) over `axis` with comb, keeping the axis as 1. */
static te_tensor *axis_reduce(te_ctx *c, const char *name, te_tensor *x, int axis, gir_dtype t, te_combiner comb) {
  int64_t shape[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) shape[i] = i == axis ? 1 : x->shape[i];
  te_var *ax[GIR_MAX_RANK], *r = te_var_new(c, "r", x->shape[axis]);
  te_axes(c, x->rank, shape, ax);
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) idx[i] = i == axis ? te_v(c, r) : te_v(c, ax[i]);
  te_expr *v = te_cast(c, t, te_load(c, x, idx));
  return te_compute(c, name, t, x->rank, shape, ax, te_reduce(c, comb, &r, 1, v, NULL));
}

/* Loads a keepdims statistic s at index idx (its axis forced to 0). */
static te_expr *load_stat(te_ctx *c, te_tensor *s, te_expr *const *idx, int axis) {
  te_expr *si[GIR_MAX_RANK];
  for (int i = 0; i < s->rank; i++) si[i] = i == axis ? te_int(c, 0) : idx[i];
  return te_load(c, s, si);
}

int lower_compute_softmax(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int64_t axis = gir_attr_int(n, "axis", -1);
  if (axis < 0) axis += x->rank;
  gir_dtype t = acc_type(x->dtype);
  te_tensor *m = axis_reduce(c, "softmax_max", x, (int)axis, t, TE_RMAX);
  int64_t shape[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) shape[i] = i == axis ? 1 : x->shape[i];
  te_var *sax[GIR_MAX_RANK], *r = te_var_new(c, "r", x->shape[axis]);
  te_axes(c, x->rank, shape, sax);
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) idx[i] = i == axis ? te_v(c, r) : te_v(c, sax[i]);
  te_expr *e = te_un(c, TE_EXP, te_sub(c, te_cast(c, t, te_load(c, x, idx)), load_stat(c, m, idx, (int)axis)));
  te_tensor *s = te_compute(c, "softmax_sum", t, x->rank, shape, sax, te_reduce(c, TE_SUM, &r, 1, e, NULL));
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_expr *oi[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) oi[i] = te_v(c, ax[i]);
  te_expr *xs = te_sub(c, te_cast(c, t, te_load(c, x, oi)), load_stat(c, m, oi, (int)axis));
  te_expr *body = gir_attr_int(n, "log", 0) ? te_sub(c, xs, te_un(c, TE_LOG, load_stat(c, s, oi, (int)axis)))
                                            : te_div(c, te_un(c, TE_EXP, xs), load_stat(c, s, oi, (int)axis));
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, x->dtype, body));
  return 0;
}

int lower_compute_layer_norm(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0], *scale = n->n_in > 1 ? in[1] : NULL, *bias = n->n_in > 2 ? in[2] : NULL;
  int64_t axis = gir_attr_int(n, "axis", -1);
  if (axis < 0) axis += x->rank;
  int rms = (int)gir_attr_int(n, "rms", 0), r = x->rank, nr = r - (int)axis;
  double eps = gir_attr_float(n, "epsilon", 1e-5);
  /* statistics in double: a float32 sum over a row with a large mean loses what
   * (x - mean) / std then magnifies */
  gir_dtype t = GIR_F64;
  int64_t sshape[GIR_MAX_RANK], count = 1;
  for (int i = 0; i < r; i++) {
    sshape[i] = i < axis ? x->shape[i] : 1;
    if (i >= axis) count *= x->shape[i];
  }
  /* mean (skipped for rms) */
  te_tensor *mean = NULL;
  if (!rms) {
    te_var *ax[GIR_MAX_RANK], *rv[GIR_MAX_RANK];
    te_axes(c, r, sshape, ax);
    te_expr *idx[GIR_MAX_RANK];
    for (int i = 0; i < r; i++) idx[i] = i < axis ? te_v(c, ax[i]) : te_v(c, rv[i - axis] = te_var_new(c, "r", x->shape[i]));
    mean = te_compute(c, "ln_mean", t, r, sshape, ax,
                      te_div(c, te_reduce(c, TE_SUM, rv, nr, te_cast(c, t, te_load(c, x, idx)), NULL),
                             te_const(c, t, (double)count)));
  }
  /* variance (or mean square) */
  te_var *ax[GIR_MAX_RANK], *rv[GIR_MAX_RANK];
  te_axes(c, r, sshape, ax);
  te_expr *idx[GIR_MAX_RANK], *zi[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) {
    idx[i] = i < axis ? te_v(c, ax[i]) : te_v(c, rv[i - axis] = te_var_new(c, "r", x->shape[i]));
    zi[i] = i < axis ? te_v(c, ax[i]) : te_int(c, 0);
  }
  te_expr *d = te_cast(c, t, te_load(c, x, idx));
  if (mean) d = te_sub(c, d, te_load(c, mean, zi));
  te_tensor *var = te_compute(c, "ln_var", t, r, sshape, ax,
                              te_div(c, te_reduce(c, TE_SUM, rv, nr, te_mul(c, d, d), NULL), te_const(c, t, (double)count)));
  /* normalize */
  te_var *oax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, oax);
  te_expr *oi[GIR_MAX_RANK], *si[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) {
    oi[i] = te_v(c, oax[i]);
    si[i] = i < axis ? te_v(c, oax[i]) : te_int(c, 0);
  }
  te_expr *y = te_cast(c, t, te_load(c, x, oi));
  if (mean) y = te_sub(c, y, te_load(c, mean, si));
  y = te_div(c, y, te_un(c, TE_SQRT, te_add(c, te_load(c, var, si), te_const(c, t, eps))));
  if (scale) y = te_mul(c, y, te_cast(c, t, te_load_bcast(c, scale, oi + axis, nr)));
  if (bias) y = te_add(c, y, te_cast(c, t, te_load_bcast(c, bias, oi + axis, nr)));
  out[0] = lower_stage(c, n, 0, oax, te_cast(c, x->dtype, y));
  return 0;
}

int lower_compute_cumulate(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int64_t axis = gir_attr_int(n, "axis", 0);
  if (axis < 0) axis += x->rank;
  int excl = (int)gir_attr_int(n, "exclusive", 0), rev = (int)gir_attr_int(n, "reverse", 0);
  te_var *ax[GIR_MAX_RANK], *k = te_var_new(c, "k", x->shape[axis]);
  lower_out_axes(c, n, 0, ax);
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) idx[i] = i == axis ? te_v(c, k) : te_v(c, ax[i]);
  te_expr *kk = te_v(c, k), *ii = te_v(c, ax[axis]);
  te_binop cmp = rev ? (excl ? TE_GT : TE_GE) : (excl ? TE_LT : TE_LE);
  te_combiner comb = gir_attr_int(n, "fn", GIR_CUM_SUM) == GIR_CUM_PROD ? TE_PROD : TE_SUM;
  out[0] = lower_stage(c, n, 0, ax, te_reduce(c, comb, &k, 1, te_load(c, x, idx), te_bin(c, cmp, kk, ii)));
  return 0;
}
