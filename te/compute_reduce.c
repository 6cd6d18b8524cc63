/* compute_reduce.c — compute definitions of reduce, arg_reduce, softmax,
 * layer_norm and cumulate. Multi-pass ops are chains of stages: softmax is
 * max → exp-sum → normalize (the max subtraction keeps exp from overflowing);
 * layer_norm is mean → variance → normalize. Statistics of float16/bfloat16
 * inputs are accumulated in float32. */
#include <math.h>
#include <stdio.h>
#include <string.h>
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

static te_tensor *row_stat(te_ctx *c, const char *name, const te_tensor *x, int axis, gir_dtype t, te_combiner comb,
                           te_expr *elem, te_var *const *v);

static te_tensor *row_lanes(te_ctx *c, const char *name, te_tensor *x, int64_t L, gir_dtype t, int narrow,
                            te_expr *(*elem)(te_ctx *c, te_expr *e, void *arg, te_var *const *row), void *arg);
static te_expr *as_is(te_ctx *c, te_expr *e, void *arg, te_var *const *row);

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
  /* a float sum/mean/max/min over the innermost axis alone: a row statistic, which
   * the row template computes with vector lanes at a parallel row loop */
  int last = x->rank - 1;
  /* ordered: the sum in element order, as ONNX Runtime's QLinearSoftmax (its
   * importer, ops_contrib_quant.c, asks): one lane per row (row_lanes: blocks of rows
   * at each step, each row's sum in order) */
  int ordered = (int)gir_attr_int(n, "ordered", 0);
  if (ordered && na == 1 && red[last] && last >= 1 && at == x->dtype && gir_dtype_is_float(at) &&
      (fn == GIR_REDUCE_SUM || fn == GIR_REDUCE_MEAN)) {
    te_tensor *st = row_lanes(c, "reduce_ordered", x, 1, at, 0, as_is, NULL);
    te_expr *si[GIR_MAX_RANK];
    for (int i = 0; i < last; i++) si[i] = te_v(c, oax[i]);
    si[last] = te_int(c, 0);
    body = te_load(c, st, si);
    if (fn == GIR_REDUCE_MEAN) body = te_div(c, body, te_const(c, at, (double)count));
    out[0] = lower_stage(c, n, 0, oax, body);
    return 0;
  }
  if (na == 1 && red[last] && last >= 1 && gir_dtype_is_float(at) && !ordered &&
      (fn == GIR_REDUCE_SUM || fn == GIR_REDUCE_MEAN || fn == GIR_REDUCE_MAX || fn == GIR_REDUCE_MIN)) {
    te_var *xv[GIR_MAX_RANK];
    te_axes(c, x->rank, x->shape, xv);
    te_expr *xi[GIR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) xi[i] = te_v(c, xv[i]);
    te_combiner comb = fn == GIR_REDUCE_MAX ? TE_RMAX : fn == GIR_REDUCE_MIN ? TE_RMIN : TE_SUM;
    te_tensor *st = row_stat(c, "reduce_row", x, last, at, comb, te_cast(c, at, te_load(c, x, xi)), xv);
    if (!st) return gir_errf(c->err, "%s: out of memory", n->name);
    te_expr *si[GIR_MAX_RANK];
    for (int i = 0; i < last; i++) si[i] = te_v(c, oax[i]);
    si[last] = te_int(c, 0);
    body = te_load(c, st, si);
    if (fn == GIR_REDUCE_MEAN) body = te_div(c, body, te_const(c, at, (double)count));
    out[0] = lower_stage(c, n, 0, oax, te_cast(c, t, body));
    return 0;
  }
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

/* A statistic of each row along `axis` (kept as a size-1 axis): comb over the
 * axis of elem, an expression over the variables v (one per axis of a tensor of
 * x's shape). When the axis is the innermost one and a lane count L of 16, 8 or 4
 * divides it, the reduction goes through a partial stage p[.., L] = comb over
 * ro of elem at ro·L + l, whose lane axis the row template (templates.c)
 * vectorizes, and the statistic combines the L lanes: the rfactor of TVM, which
 * also sums in a better order than one serial chain. A sum, max or min combines
 * them in halves (stages of L/2, L/4, ... lanes, tag row_fold): four vector steps
 * where a serial chain of 16 scalar steps took as long as the row's pass. A float row no lane count
 * divides (a ViT's 197 attention keys) takes L = 16 all the same: the last step
 * of ro reads the lanes past the row as the combiner's identity (a lazy select,
 * a masked load once vectorized) instead of the whole row going scalar. A float
 * sum, max or min over a row of 64 or more takes L = 32, two vectors' worth of
 * lanes, so that its steps form two independent chains (a vector max's compare
 * and blend, an add: each step waits for the last one otherwise). On a GPU
 * (c->gpu) the statistic is one plain reduction: threads, not lanes, split the row. */
static te_tensor *row_stat(te_ctx *c, const char *name, const te_tensor *x, int axis, gir_dtype t, te_combiner comb,
                           te_expr *elem, te_var *const *v) {
  int rank = x->rank;
  int64_t R = x->shape[axis], L = 0, shape[GIR_MAX_RANK] = {0};
  for (int64_t l = 16; l >= 4 && axis == rank - 1 && !c->gpu; l /= 2)
    if (R % l == 0 && R >= 2 * l) {
      L = l;
      break;
    }
  int foldable = axis == rank - 1 && gir_dtype_is_float(t) && (comb == TE_SUM || comb == TE_RMAX || comb == TE_RMIN);
  int ragged = 0;
  if (c->gpu) foldable = 0; /* threads split the row (sched_gpu_reduce.c) */
  if (foldable && R >= 64) L = 32; /* two vectors of lanes: two dependency chains, not one */
  else if (foldable && !L && R >= 32) L = 16;
  ragged = L && R % L != 0;
  for (int i = 0; i < rank; i++) shape[i] = i == axis ? 1 : x->shape[i];
  te_var *sax[GIR_MAX_RANK];
  te_axes(c, rank, shape, sax);
  te_expr *idx[GIR_MAX_RANK];
  if (!L) {
    te_var *r = te_var_new(c, "r", R);
    for (int i = 0; i < rank; i++) idx[i] = i == axis ? te_v(c, r) : te_v(c, sax[i]);
    te_tensor *s = te_compute(c, name, t, rank, shape, sax, te_reduce(c, comb, &r, 1, te_subst(c, elem, v, idx, rank), NULL));
    s->tag = axis == rank - 1 ? "row_stat" : NULL;
    return s;
  }
  int64_t pshape[GIR_MAX_RANK] = {0};
  for (int i = 0; i < rank; i++) pshape[i] = i == axis ? L : x->shape[i];
  te_var *pax[GIR_MAX_RANK], *ro = te_var_new(c, "ro", (R + L - 1) / L);
  te_axes(c, rank, pshape, pax);
  for (int i = 0; i < rank; i++)
    idx[i] = i == axis ? te_add(c, te_mul(c, te_v(c, ro), te_int(c, L)), te_v(c, pax[i])) : te_v(c, pax[i]);
  te_expr *at = te_subst(c, elem, v, idx, rank);
  if (ragged)
    at = te_select(c, te_lt(c, idx[axis], te_int(c, R)), at,
                   te_const(c, t, comb == TE_SUM ? 0.0 : comb == TE_RMAX ? -INFINITY : INFINITY));
  size_t nl = strlen(name) + 6;
  char *pname = gir_arena_alloc(c->arena, nl);
  if (!pname) return NULL;
  snprintf(pname, nl, "%s_part", name);
  te_tensor *p = te_compute(c, pname, t, rank, pshape, pax,
                            te_reduce(c, comb, &ro, 1, at, NULL));
  p->tag = "row_partial";
  if (comb == TE_SUM || comb == TE_RMAX || comb == TE_RMIN) { /* the lanes folded in halves */
    te_binop op = comb == TE_SUM ? TE_ADD : comb == TE_RMAX ? TE_MAX : TE_MIN;
    for (int64_t w = L / 2; w >= 1; w /= 2) {
      int64_t fshape[GIR_MAX_RANK];
      te_var *fax[GIR_MAX_RANK];
      for (int i = 0; i < rank; i++) fshape[i] = i == axis ? w : x->shape[i];
      te_axes(c, rank, fshape, fax);
      te_expr *lo[GIR_MAX_RANK], *hi[GIR_MAX_RANK];
      for (int i = 0; i < rank; i++) {
        lo[i] = te_v(c, fax[i]);
        hi[i] = i == axis ? te_add(c, te_v(c, fax[i]), te_int(c, w)) : lo[i];
      }
      te_tensor *f = te_compute(c, w == 1 ? name : pname, t, rank, fshape, fax,
                                te_bin(c, op, te_load(c, p, lo), te_load(c, p, hi)));
      f->tag = w == 1 ? "row_stat" : "row_fold";
      p = f;
    }
    return p;
  }
  te_var *l = te_var_new(c, "l", L);
  for (int i = 0; i < rank; i++) idx[i] = i == axis ? te_v(c, l) : te_v(c, sax[i]);
  te_tensor *s = te_compute(c, name, t, rank, shape, sax, te_reduce(c, comb, &l, 1, te_load(c, p, idx), NULL));
  s->tag = "row_stat";
  return s;
}

/* Loads a keepdims statistic s at index idx (its axis forced to 0). */
static te_expr *load_stat(te_ctx *c, te_tensor *s, te_expr *const *idx, int axis) {
  te_expr *si[GIR_MAX_RANK];
  for (int i = 0; i < s->rank; i++) si[i] = i == axis ? te_int(c, 0) : idx[i];
  return te_load(c, s, si);
}

/* exp(x − m) for m the row's max (so x − m ≤ 0), written exp(−|m − x|): the same value
 * bit for bit (m − x is exactly −(x − m), and never negative), but the form the backends
 * see as an exp of a non-positive argument (targets/llvm/llvm_vmath.c: no clamp above,
 * 2^n in fewer steps), as sigmoid's exp(−|x|) is. */
static te_expr *exp_below_max(te_ctx *c, te_expr *x, te_expr *m) {
  return te_un(c, TE_EXP, te_un(c, TE_NEG, te_un(c, TE_ABS, te_sub(c, m, x))));
}

/* Softmax along `axis`: max, then the sum of e = exp(x - max), then e / sum (log:
 * x - max - log(sum)). Along the innermost axis e is a stage of its own (tag
 * row_keep: the default schedule keeps it), computed once per row by the row
 * template instead of once for the sum and again for the output. */
int lower_compute_softmax(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int64_t axis = gir_attr_int(n, "axis", -1);
  if (axis < 0) axis += x->rank;
  int lg = (int)gir_attr_int(n, "log", 0), inner = axis == x->rank - 1;
  gir_dtype t = acc_type(x->dtype);
  te_var *v[GIR_MAX_RANK];
  te_axes(c, x->rank, x->shape, v);
  te_expr *vi[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) vi[i] = te_v(c, v[i]);
  te_expr *xv = te_cast(c, t, te_load(c, x, vi));
  te_tensor *m = row_stat(c, "softmax_max", x, (int)axis, t, TE_RMAX, xv, v);
  te_expr *ev = exp_below_max(c, xv, load_stat(c, m, vi, (int)axis));
  te_tensor *e = NULL;
  if (inner && !lg) {
    e = te_compute(c, "softmax_exp", t, x->rank, x->shape, v, ev);
    e->tag = "row_keep";
    te_var *v2[GIR_MAX_RANK];
    te_axes(c, x->rank, x->shape, v2);
    for (int i = 0; i < x->rank; i++) vi[i] = te_v(c, v2[i]);
    ev = te_load(c, e, vi);
    memcpy(v, v2, sizeof v);
  }
  te_tensor *s = row_stat(c, "softmax_sum", x, (int)axis, t, TE_SUM, ev, v);
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_expr *oi[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) oi[i] = te_v(c, ax[i]);
  te_expr *body;
  if (lg) {
    te_expr *xs = te_sub(c, te_cast(c, t, te_load(c, x, oi)), load_stat(c, m, oi, (int)axis));
    body = te_sub(c, xs, te_un(c, TE_LOG, load_stat(c, s, oi, (int)axis)));
  } else {
    te_expr *ex = e ? te_load(c, e, oi)
                    : exp_below_max(c, te_cast(c, t, te_load(c, x, oi)), load_stat(c, m, oi, (int)axis));
    /* times the row's reciprocal, as ONNX Runtime's MLAS does (within an ulp of the
     * quotient): one division per row instead of a vector division per vector,
     * whose throughput bounds the output pass */
    body = te_mul(c, ex, te_div(c, te_const(c, t, 1.0), load_stat(c, s, oi, (int)axis)));
  }
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, x->dtype, body));
  return 0;
}

/* Sum over the axes >= axis of elem (an expression over v, one variable per axis
 * of x), as a keepdims statistic: row_stat for a single innermost axis, one
 * reduction over all of them otherwise. */
static te_tensor *tail_sum(te_ctx *c, const char *name, const te_tensor *x, int axis, gir_dtype t, te_expr *elem,
                           te_var *const *v) {
  int r = x->rank;
  if (axis == r - 1) return row_stat(c, name, x, axis, t, TE_SUM, elem, v);
  int64_t sshape[GIR_MAX_RANK] = {0};
  for (int i = 0; i < r; i++) sshape[i] = i < axis ? x->shape[i] : 1;
  te_var *ax[GIR_MAX_RANK], *rv[GIR_MAX_RANK];
  te_axes(c, r, sshape, ax);
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) idx[i] = i < axis ? te_v(c, ax[i]) : te_v(c, rv[i - axis] = te_var_new(c, "r", x->shape[i]));
  return te_compute(c, name, t, r, sshape, ax, te_reduce(c, TE_SUM, rv, r - axis, te_subst(c, elem, v, idx, r), NULL));
}

/* A per-row statistic of x (rank r, the last axis reduced to 1) whose value is the
 * expression val over the row variables v (v[r-1] unused): one stage, computed once
 * per row (a reduction over one step, which the default schedule keeps a stage of its
 * own instead of inlining it into every element that reads it). */
static te_tensor *row_value(te_ctx *c, const char *name, const te_tensor *x, gir_dtype t, te_expr *val,
                            te_var *const *v) {
  int r = x->rank;
  int64_t shape[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) shape[i] = i == r - 1 ? 1 : x->shape[i];
  te_var *ax[GIR_MAX_RANK], *one = te_var_new(c, "r", 1);
  te_axes(c, r, shape, ax);
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) idx[i] = te_v(c, ax[i]);
  te_tensor *s = te_compute(c, name, t, r, shape, ax, te_reduce(c, TE_SUM, &one, 1, te_subst(c, val, v, idx, r), NULL));
  s->tag = "row_value";
  return s;
}

/* x[row, at] (at an expression along the last axis), the row from the variables v. */
static te_expr *row_at(te_ctx *c, te_tensor *x, te_var *const *v, te_expr *at) {
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) idx[i] = i == x->rank - 1 ? at : te_v(c, v[i]);
  return te_load(c, x, idx);
}

/* The lanes stage [rows.., L] of a row: lane l reduces elem(x[row, L·k + l]) over
 * k < n / L (in that order), into an accumulator of type t (narrow: each step rounded
 * to t, te_reduce_narrow). elem is an expression of x's element e. Each lane is a chain
 * of dependent steps: the template (tag row_lanes) runs a block of rows at each k. */
static te_tensor *row_lanes(te_ctx *c, const char *name, te_tensor *x, int64_t L, gir_dtype t, int narrow,
                            te_expr *(*elem)(te_ctx *c, te_expr *e, void *arg, te_var *const *row), void *arg) {
  int r = x->rank;
  int64_t shape[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) shape[i] = i == r - 1 ? L : x->shape[i];
  te_var *ax[GIR_MAX_RANK], *k = te_var_new(c, "k", x->shape[r - 1] / L);
  te_axes(c, r, shape, ax);
  te_expr *e = row_at(c, x, ax, te_add(c, te_mul(c, te_v(c, k), te_int(c, L)), te_v(c, ax[r - 1])));
  te_expr *src = elem(c, e, arg, ax);
  te_tensor *p = te_compute(c, name, t, r, shape, ax,
                            narrow ? te_reduce_narrow(c, &k, 1, src, t) : te_reduce(c, TE_SUM, &k, 1, src, NULL));
  p->tag = "row_lanes"; /* schedule/sched_rows.c: all rows at each step k */
  return p;
}

/* lanes[row, l] */
static te_expr *lane(te_ctx *c, te_tensor *p, te_var *const *v, int64_t l) { return row_at(c, p, v, te_int(c, l)); }

static te_expr *as_is(te_ctx *c, te_expr *e, void *arg, te_var *const *row) {
  (void)c, (void)arg, (void)row;
  return e;
}

static te_expr *to_f64(te_ctx *c, te_expr *e, void *arg, te_var *const *row) {
  (void)arg, (void)row;
  return te_cast(c, GIR_F64, e);
}

/* (x - mean)² in float64 (exact: the square of a float32), x - mean in float32 */
static te_expr *dev_sq(te_ctx *c, te_expr *e, void *arg, te_var *const *row) {
  te_tensor *mean = arg;
  te_expr *d = te_cast(c, GIR_F64, te_sub(c, e, row_at(c, mean, row, te_int(c, 0))));
  return te_mul(c, d, d);
}

/* LayerNormalization over the last axis of a float32 x as ONNX Runtime 1.31.1's CPU
 * provider computes it on an x86-64 machine with AVX2 (MlasLayerNormKernelAvx2,
 * onnxruntime/core/mlas/lib/layernorm_kernel_avx2.cpp, which layer_norm_impl.cc calls
 * for rows of 8 elements or more whose scale and bias match the row): the importer
 * asks for it (attribute ort) where the result is quantized again (a QDQ model), a
 * last-bit difference there being a whole step now and then. Operation by operation:
 *   mean = float(((s0 + s2) + (s1 + s3) + x[4q..n) in order) / n), s_l the float64
 *          sum of x[4k + l] over k (four double lanes)
 *   var  = ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)), then the tail x[8q..n)
 *          in order, all float32; v_l accumulates fma(d, d, v_l), d = x[8k + l] - mean;
 *          the tail's first four (when it has four) add d · d rounded, the rest
 *          fma(d, d, var) (the scalar loop as GCC compiles it: an in-order vector
 *          reduction, then contracted scalar steps)
 *   inv  = 1 / sqrtf(var / n + epsilon), float32
 *   y    = fma((x - mean) · inv, scale, bias)  (float32; without bias: · scale)
 * Each float32 fma is computed as float((double)a · b + c): the product is exact in
 * float64, so only a double rounding can differ from the fma, when float64's sum is a
 * float32 tie the exact one is not (about 2^-28 of the steps). Measured against ONNX
 * Runtime 1.31.1: identical outputs, means and inverse deviations on random rows
 * (tests/py/test_contrib_quant.py). */
static int layer_norm_ort(te_ctx *c, const gir_node *n, te_tensor *x, te_tensor *scale, te_tensor *bias, double eps,
                          te_tensor **out) {
  int r = x->rank;
  int64_t len = x->shape[r - 1];
  te_var *v[GIR_MAX_RANK];
  te_axes(c, r, x->shape, v);
  if (x->kind == TE_COMPUTE) { /* computed in this kernel (a fused prologue): once, in full vectors, not in
                                * every pass at the lanes' width (tag kept_input: default_schedule.c) */
    te_expr *vi[GIR_MAX_RANK];
    for (int i = 0; i < r; i++) vi[i] = te_v(c, v[i]);
    x = te_compute(c, "ln_x", x->dtype, r, x->shape, v, te_load(c, x, vi));
    x->tag = "kept_input";
    te_axes(c, r, x->shape, v);
  }
  te_tensor *pm = row_lanes(c, "ln_mean_part", x, 4, GIR_F64, 0, to_f64, NULL);
  te_expr *sum = te_add(c, te_add(c, lane(c, pm, v, 0), lane(c, pm, v, 2)), te_add(c, lane(c, pm, v, 1), lane(c, pm, v, 3)));
  for (int64_t i = len / 4 * 4; i < len; i++) sum = te_add(c, sum, te_cast(c, GIR_F64, row_at(c, x, v, te_int(c, i))));
  te_tensor *mean = row_value(c, "ln_mean", x, GIR_F32, te_cast(c, GIR_F32, te_div(c, sum, te_const(c, GIR_F64, (double)len))), v);
  te_tensor *pv = row_lanes(c, "ln_var_part", x, 8, GIR_F32, 1, dev_sq, mean);
  te_expr *h[4];
  for (int l = 0; l < 4; l++) h[l] = te_add(c, lane(c, pv, v, l), lane(c, pv, v, l + 4));
  te_expr *var = te_add(c, te_add(c, h[0], h[2]), te_add(c, h[1], h[3]));
  /* the tail as the compiler built it: groups of four squares rounded apart, added in
   * order (a vectorized in-order reduction), the rest as fmas (contracted) */
  for (int64_t i = len / 8 * 8, q4 = len / 8 * 8 + (len % 8) / 4 * 4; i < len; i++) {
    te_expr *d = te_sub(c, row_at(c, x, v, te_int(c, i)), row_at(c, mean, v, te_int(c, 0)));
    if (i < q4) {
      var = te_add(c, var, te_mul(c, d, d));
    } else {
      d = te_cast(c, GIR_F64, d);
      var = te_cast(c, GIR_F32, te_add(c, te_cast(c, GIR_F64, var), te_mul(c, d, d)));
    }
  }
  te_expr *den = te_un(c, TE_SQRT, te_add(c, te_div(c, var, te_const(c, GIR_F32, (double)len)),
                                          te_const(c, GIR_F32, (double)(float)eps)));
  te_tensor *inv = row_value(c, "ln_inv", x, GIR_F32, te_div(c, te_const(c, GIR_F32, 1.0), den), v);
  te_var *oax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, oax);
  te_expr *oi[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) oi[i] = te_v(c, oax[i]);
  te_expr *t = te_mul(c, te_sub(c, te_load(c, x, oi), row_at(c, mean, oax, te_int(c, 0))), row_at(c, inv, oax, te_int(c, 0)));
  te_expr *s = te_load_bcast(c, scale, oi + r - 1, 1), *y;
  if (bias)
    y = te_cast(c, GIR_F32, te_add(c, te_mul(c, te_cast(c, GIR_F64, t), te_cast(c, GIR_F64, s)),
                                   te_cast(c, GIR_F64, te_load_bcast(c, bias, oi + r - 1, 1))));
  else
    y = te_mul(c, t, s);
  out[0] = lower_stage(c, n, 0, oax, y);
  return 0;
}

/* A float32 scale or bias of one value per element of the row. */
static int row_param(const te_tensor *p, int64_t len) {
  return p && p->dtype == GIR_F32 && p->rank == 1 && p->shape[0] == len;
}

int lower_compute_layer_norm(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0], *scale = n->n_in > 1 ? in[1] : NULL, *bias = n->n_in > 2 ? in[2] : NULL;
  int64_t axis = gir_attr_int(n, "axis", -1);
  if (axis < 0) axis += x->rank;
  int rms = (int)gir_attr_int(n, "rms", 0), r = x->rank, nr = r - (int)axis;
  double eps = gir_attr_float(n, "epsilon", 1e-5);
  /* ONNX Runtime's arithmetic where the importer asks for it and its kernel would run */
  if (gir_attr_int(n, "ort", 0) && !rms && x->dtype == GIR_F32 && axis == r - 1 && x->shape[r - 1] >= 8 &&
      row_param(scale, x->shape[r - 1]) && (!bias || row_param(bias, x->shape[r - 1])))
    return layer_norm_ort(c, n, x, scale, bias, eps, out);
  /* statistics in double: a float32 sum over a row with a large mean loses what
   * (x - mean) / std then magnifies */
  gir_dtype t = GIR_F64;
  int64_t count = 1;
  for (int i = (int)axis; i < r; i++) count *= x->shape[i];
  te_var *v[GIR_MAX_RANK];
  te_axes(c, r, x->shape, v);
  te_expr *vi[GIR_MAX_RANK], *zi[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) {
    vi[i] = te_v(c, v[i]);
    zi[i] = i < axis ? vi[i] : te_int(c, 0);
  }
  te_expr *d = te_cast(c, t, te_load(c, x, vi)), *cnt = te_const(c, t, (double)count);
  /* mean (skipped for rms), then the variance (or mean square) */
  te_tensor *mean = rms ? NULL : tail_sum(c, "ln_mean", x, (int)axis, t, d, v);
  if (mean) d = te_sub(c, d, te_div(c, te_load(c, mean, zi), cnt));
  te_tensor *var = tail_sum(c, "ln_var", x, (int)axis, t, te_mul(c, d, d), v);
  /* normalize */
  te_var *oax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, oax);
  te_expr *oi[GIR_MAX_RANK], *si[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) {
    oi[i] = te_v(c, oax[i]);
    si[i] = i < axis ? te_v(c, oax[i]) : te_int(c, 0);
  }
  te_expr *y = te_cast(c, t, te_load(c, x, oi));
  if (mean) y = te_sub(c, y, te_div(c, te_load(c, mean, si), te_const(c, t, (double)count)));
  te_expr *vr = te_div(c, te_load(c, var, si), te_const(c, t, (double)count));
  /* times 1/std, one division per row once LLVM hoists it */
  y = te_mul(c, y, te_div(c, te_const(c, t, 1.0), te_un(c, TE_SQRT, te_add(c, vr, te_const(c, t, eps)))));
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
