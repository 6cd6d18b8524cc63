/* compute_nn.c — compute definitions of conv, conv_transpose, matmul, pool, lrn,
 * and the opaque ops topk and the scatters. Padding never loads out of bounds:
 * window taps outside the input are excluded by the reduction's condition.
 * topk and the scatters are stated as (quadratic) reductions — a faithful,
 * deterministic definition; their schedules may implement them differently. */
#include <math.h>
#include "compute.h"

static gir_dtype acc_type(gir_dtype t) { return t == GIR_F16 || t == GIR_BF16 ? GIR_F32 : t; }

/* The accumulator of a conv / matmul: its output's type for 8-bit integer
 * operands (int32), else acc_type of the input. */
static gir_dtype product_acc(const gir_node *n, gir_dtype x) {
  return x == GIR_U8 || x == GIR_I8 ? n->out[0]->dtype : acc_type(x);
}

static void spatial(const gir_node *n, const char *name, int k, int64_t def, int64_t *out) {
  int32_t cnt;
  const int64_t *v = gir_attr_ints(n, name, &cnt);
  for (int i = 0; i < k; i++) out[i] = v && i < cnt ? v[i] : def;
}

/* The sliding-window attributes shared by conv, conv_transpose and pooling. */
typedef struct window {
  int64_t ks[GIR_MAX_RANK], st[GIR_MAX_RANK], dl[GIR_MAX_RANK], pd[2 * GIR_MAX_RANK];
} window;

static window read_window(const gir_node *n, int k) {
  window w;
  spatial(n, "kernel", k, 1, w.ks);
  spatial(n, "strides", k, 1, w.st);
  spatial(n, "dilations", k, 1, w.dl);
  spatial(n, "pads", 2 * k, 0, w.pd);
  return w;
}

int lower_compute_conv(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0], *w = in[1], *b = n->n_in > 2 ? in[2] : NULL;
  int k = x->rank - 2;
  int64_t group = gir_attr_int(n, "group", 1);
  window win = read_window(n, k);
  const int64_t *st = win.st, *dl = win.dl, *pd = win.pd;
  int64_t cpg = w->shape[1], mpg = w->shape[0] / group;
  te_var *ax[GIR_MAX_RANK], *rv[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  rv[0] = te_var_new(c, "rc", cpg);
  for (int i = 0; i < k; i++) rv[1 + i] = te_var_new(c, "rk", w->shape[2 + i]);
  te_expr *xi[GIR_MAX_RANK], *wi[GIR_MAX_RANK], *cond = NULL;
  te_expr *m = te_v(c, ax[1]);
  /* the group of output channel m (m itself for depthwise: a plain index keeps bound
   * inference of a block's input channels exact, where a division widens to all) */
  te_expr *g = mpg == w->shape[0] ? te_int(c, 0) : mpg == 1 ? m : te_div(c, m, te_int(c, mpg));
  xi[0] = te_v(c, ax[0]);
  xi[1] = te_add(c, te_mul(c, g, te_int(c, cpg)), te_v(c, rv[0]));
  wi[0] = m;
  wi[1] = te_v(c, rv[0]);
  for (int i = 0; i < k; i++) {
    te_expr *pos = te_add(c, te_sub(c, te_mul(c, te_v(c, ax[2 + i]), te_int(c, st[i])), te_int(c, pd[i])),
                          te_mul(c, te_v(c, rv[1 + i]), te_int(c, dl[i])));
    xi[2 + i] = pos;
    wi[2 + i] = te_v(c, rv[1 + i]);
    if (pd[i] || pd[i + k]) { /* without padding every tap is inside by construction */
      te_expr *ok = te_in_range(c, pos, x->shape[2 + i]);
      cond = cond ? te_and(c, cond, ok) : ok;
    }
  }
  gir_dtype t = product_acc(n, x->dtype);
  te_expr *xv = te_load(c, x, xi);
  int64_t pv = gir_attr_int(n, "pad_value", 0);
  if (pv && cond) { /* taps outside read the pad value (an 8-bit input's zero point), not nothing */
    xv = te_select(c, cond, xv, te_const(c, x->dtype, (double)pv));
    cond = NULL;
  }
  te_expr *prod = te_mul(c, te_cast(c, t, xv), te_cast(c, t, te_load(c, w, wi)));
  te_expr *body = te_reduce(c, TE_SUM, rv, k + 1, prod, cond);
  if (b) {
    te_expr *bi = te_v(c, ax[1]);
    body = te_add(c, body, te_cast(c, t, te_load(c, b, &bi)));
  }
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, n->out[0]->dtype, body));
  return 0;
}

/* conv in NCHW[x]c. Padding is a stage of its own (tag "conv_pad": the zero-padded
 * input), so the reduction itself has no condition and its inner loops no test. */
int lower_compute_conv_nchwc(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0], *w = in[1], *b = n->n_in > 2 ? in[2] : NULL;
  int64_t group = gir_attr_int(n, "group", 1);
  int depthwise = group != 1 && w->shape[4] == 1 && x->shape[4] > 1; /* blocks of one: grouped */
  window win = read_window(n, 2);
  const int64_t *st = win.st, *dl = win.dl, *pd = win.pd;
  te_tensor *xp = x;
  if (pd[0] || pd[1] || pd[2] || pd[3]) {
    int64_t ps[5] = {x->shape[0], x->shape[1], x->shape[2] + pd[0] + pd[2], x->shape[3] + pd[1] + pd[3], x->shape[4]};
    te_var *pa[5];
    te_axes(c, 5, ps, pa);
    te_expr *h = te_sub(c, te_v(c, pa[2]), te_int(c, pd[0])), *wx = te_sub(c, te_v(c, pa[3]), te_int(c, pd[1]));
    te_expr *xi[5] = {te_v(c, pa[0]), te_v(c, pa[1]), h, wx, te_v(c, pa[4])};
    te_expr *ok = te_and(c, te_in_range(c, h, x->shape[2]), te_in_range(c, wx, x->shape[3]));
    double pv = (double)gir_attr_int(n, "pad_value", 0); /* an 8-bit input's zero point */
    xp = te_compute(c, "pad", x->dtype, 5, ps, pa, te_select(c, ok, te_load(c, x, xi), te_const(c, x->dtype, pv)));
    xp->tag = "conv_pad";
    xp->origin = n;
  }
  te_var *ax[GIR_MAX_RANK], *rv[4];
  lower_out_axes(c, n, 0, ax);
  te_expr *ih, *iw, *xi[5], *wi[7];
  int nr;
  if (depthwise) {
    rv[0] = te_var_new(c, "rkh", w->shape[2]);
    rv[1] = te_var_new(c, "rkw", w->shape[3]);
    nr = 2;
  } else {
    rv[0] = te_var_new(c, "rcb", w->shape[1]);
    rv[1] = te_var_new(c, "rkh", w->shape[2]);
    rv[2] = te_var_new(c, "rkw", w->shape[3]);
    rv[3] = te_var_new(c, "rci", w->rank == 7 ? w->shape[4] * 4 : w->shape[4]);
    nr = 4;
  }
  te_var *kh = rv[depthwise ? 0 : 1], *kw = rv[depthwise ? 1 : 2];
  ih = te_add(c, te_mul(c, te_v(c, ax[2]), te_int(c, st[0])), te_mul(c, te_v(c, kh), te_int(c, dl[0])));
  iw = te_add(c, te_mul(c, te_v(c, ax[3]), te_int(c, st[1])), te_mul(c, te_v(c, kw), te_int(c, dl[1])));
  xi[0] = te_v(c, ax[0]);
  if (depthwise) xi[1] = te_v(c, ax[1]);
  else if (group == 1) xi[1] = te_v(c, rv[0]);
  else /* grouped: the input blocks of output block mo's group */
    xi[1] = te_add(c, te_mul(c, te_div(c, te_v(c, ax[1]), te_int(c, w->shape[0] / group)), te_int(c, w->shape[1])),
                   te_v(c, rv[0]));
  xi[2] = ih;
  xi[3] = iw;
  xi[4] = depthwise ? te_v(c, ax[4]) : te_v(c, rv[3]);
  wi[0] = te_v(c, ax[1]);
  wi[1] = depthwise ? te_int(c, 0) : te_v(c, rv[0]);
  wi[2] = te_v(c, kh);
  wi[3] = te_v(c, kw);
  wi[4] = depthwise ? te_int(c, 0) : te_v(c, rv[3]);
  wi[5] = te_v(c, ax[4]);
  if (w->rank == 7) { /* quads of input channels: [mo, cb, kh, kw, ci / 4, mi, ci % 4] */
    wi[4] = te_div(c, te_v(c, rv[3]), te_int(c, 4));
    wi[6] = te_bin(c, TE_MOD, te_v(c, rv[3]), te_int(c, 4));
  }
  gir_dtype t = product_acc(n, x->dtype);
  te_expr *prod = te_mul(c, te_cast(c, t, te_load(c, xp, xi)), te_cast(c, t, te_load(c, w, wi)));
  /* an input padded to whole blocks: the reduction stops at the real channels (the
   * padding holds whatever its producer computed there, NaN included) */
  int64_t real = gir_attr_int(n, "channels", 0);
  te_expr *cond = NULL;
  int64_t wb = w->rank == 7 ? w->shape[4] * 4 : w->shape[4];
  if (!depthwise && real > 0 && real < w->shape[1] * wb)
    cond = te_bin(c, TE_LT, te_add(c, te_mul(c, te_v(c, rv[0]), te_int(c, wb)), te_v(c, rv[3])), te_int(c, real));
  te_expr *body = te_reduce(c, TE_SUM, rv, nr, prod, cond);
  if (b) {
    te_expr *bi[2] = {te_v(c, ax[1]), te_v(c, ax[4])};
    body = te_add(c, body, te_cast(c, t, te_load(c, b, bi)));
  }
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, n->out[0]->dtype, body));
  return 0;
}

int lower_compute_conv_transpose(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0], *w = in[1], *b = n->n_in > 2 ? in[2] : NULL;
  int k = x->rank - 2;
  int64_t group = gir_attr_int(n, "group", 1);
  window win = read_window(n, k);
  const int64_t *st = win.st, *dl = win.dl, *pd = win.pd;
  int64_t cpg = x->shape[1] / group, mpg = w->shape[1];
  te_var *ax[GIR_MAX_RANK], *rv[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  rv[0] = te_var_new(c, "rc", cpg);
  for (int i = 0; i < k; i++) rv[1 + i] = te_var_new(c, "rk", w->shape[2 + i]);
  te_expr *m = te_v(c, ax[1]);
  te_expr *g = group == 1 ? te_int(c, 0) : te_div(c, m, te_int(c, mpg));
  te_expr *ci = te_add(c, te_mul(c, g, te_int(c, cpg)), te_v(c, rv[0]));
  te_expr *xi[GIR_MAX_RANK], *wi[GIR_MAX_RANK], *cond = NULL;
  xi[0] = te_v(c, ax[0]);
  xi[1] = ci;
  wi[0] = ci;
  wi[1] = group == 1 ? m : te_bin(c, TE_MOD, m, te_int(c, mpg));
  for (int i = 0; i < k; i++) {
    /* out position o receives x[i] * w[k] where o + pad = i*stride + k*dilation */
    te_expr *t = te_sub(c, te_add(c, te_v(c, ax[2 + i]), te_int(c, pd[i])), te_mul(c, te_v(c, rv[1 + i]), te_int(c, dl[i])));
    te_expr *q = te_bin(c, TE_FLOORDIV, t, te_int(c, st[i]));
    te_expr *ok = te_and(c, te_bin(c, TE_EQ, te_bin(c, TE_FLOORMOD, t, te_int(c, st[i])), te_int(c, 0)),
                         te_in_range(c, q, x->shape[2 + i]));
    cond = cond ? te_and(c, cond, ok) : ok;
    xi[2 + i] = q;
    wi[2 + i] = te_v(c, rv[1 + i]);
  }
  gir_dtype at = acc_type(x->dtype);
  te_expr *body = te_reduce(c, TE_SUM, rv, k + 1,
                            te_mul(c, te_cast(c, at, te_load(c, x, xi)), te_cast(c, at, te_load(c, w, wi))), cond);
  if (b) {
    te_expr *bi = te_v(c, ax[1]);
    body = te_add(c, body, te_cast(c, at, te_load(c, b, &bi)));
  }
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, n->out[0]->dtype, body));
  return 0;
}

int lower_compute_matmul(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *a = in[0], *b = in[1];
  int r = n->out[0]->shape.rank;
  te_var *ax[GIR_MAX_RANK], *kv = te_var_new(c, "k", a->shape[a->rank - 1]);
  lower_out_axes(c, n, 0, ax);
  te_expr *oi[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) oi[i] = te_v(c, ax[i]);
  int64_t nr = gir_attr_int(n, "packed", 0);
  int pb = nr ? (int)gir_attr_int(n, "pbatch", 0) : 0;
  /* batch dims broadcast: load with the output's batch index, then fix the last two */
  te_expr *ai[GIR_MAX_RANK], *bi[GIR_MAX_RANK], *bp[GIR_MAX_RANK];
  int ba = a->rank - 2, bb = nr ? pb : b->rank - 2, bo = r - 2;
  for (int i = 0; i < ba; i++) ai[i] = a->shape[i] == 1 ? te_int(c, 0) : oi[bo - ba + i];
  for (int i = 0; i < bb; i++) bp[i] = bi[i] = b->shape[i] == 1 ? te_int(c, 0) : oi[bo - bb + i];
  if (nr) { /* b in panels: column j at [batch.., j / nr, k, j % nr]; in quads of k: [j / nr, k / 4, j % nr, k % 4] */
    bp[pb] = te_div(c, oi[r - 1], te_int(c, nr));
    bp[pb + 1] = te_v(c, kv);
    bp[pb + 2] = te_bin(c, TE_MOD, oi[r - 1], te_int(c, nr));
    if (b->rank == 4 && !pb) {
      bp[1] = te_div(c, te_v(c, kv), te_int(c, 4));
      bp[3] = te_bin(c, TE_MOD, te_v(c, kv), te_int(c, 4));
    }
  }
  ai[ba] = oi[r - 2];
  ai[ba + 1] = te_v(c, kv);
  bi[bb] = te_v(c, kv);
  bi[bb + 1] = oi[r - 1];
  gir_dtype t = product_acc(n, a->dtype);
  te_expr *bv = te_load(c, b, nr ? bp : bi);
  te_expr *body = te_reduce(c, TE_SUM, &kv, 1, te_mul(c, te_cast(c, t, te_load(c, a, ai)), te_cast(c, t, bv)), NULL);
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, n->out[0]->dtype, body));
  return 0;
}

/* How many taps base + r*dl, r in [0, ks), lie in [lo, hi): r from
 * max(0, ceil((lo - base) / dl)) to min(ks - 1, floor((hi - 1 - base) / dl)) — in
 * closed form, so an average pool divides by an expression of the output position
 * (a constant where the window never meets padding) instead of counting taps with a
 * second reduction. */
static te_expr *window_taps(te_ctx *c, te_expr *base, int64_t lo, int64_t hi, int64_t ks, int64_t dl) {
  te_expr *d = te_int(c, dl);
  te_expr *first = te_sub(c, te_int(c, 0), te_bin(c, TE_FLOORDIV, te_sub(c, base, te_int(c, lo)), d)); /* ceil */
  te_expr *last = te_bin(c, TE_FLOORDIV, te_sub(c, te_int(c, hi - 1), base), d);
  first = te_bin(c, TE_MAX, first, te_int(c, 0));
  last = te_bin(c, TE_MIN, last, te_int(c, ks - 1));
  return te_bin(c, TE_MAX, te_add(c, te_sub(c, last, first), te_int(c, 1)), te_int(c, 0));
}

int lower_compute_pool(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int blocked = gir_attr_int(n, "blocked", 0) != 0; /* NCHW[b]c: the last axis is a channel block */
  int k = x->rank - 2 - blocked;
  window win = read_window(n, k);
  const int64_t *st = win.st, *dl = win.dl, *pd = win.pd, *ks = win.ks;
  gir_pool_fn fn = (gir_pool_fn)gir_attr_int(n, "fn", GIR_POOL_MAX);
  int include_pad = (int)gir_attr_int(n, "count_include_pad", 0);
  gir_dtype t = acc_type(x->dtype);
  te_var *ax[GIR_MAX_RANK], *rv[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  for (int i = 0; i < k; i++) rv[i] = te_var_new(c, "rk", ks[i]);
  te_expr *xi[GIR_MAX_RANK], *cond = NULL, *count = NULL;
  xi[0] = te_v(c, ax[0]);
  xi[1] = te_v(c, ax[1]);
  if (blocked) xi[x->rank - 1] = te_v(c, ax[x->rank - 1]);
  for (int i = 0; i < k; i++) {
    te_expr *base = te_sub(c, te_mul(c, te_v(c, ax[2 + i]), te_int(c, st[i])), te_int(c, pd[i]));
    te_expr *pos = te_add(c, base, te_mul(c, te_v(c, rv[i]), te_int(c, dl[i])));
    xi[2 + i] = pos;
    te_expr *ok = te_in_range(c, pos, x->shape[2 + i]);
    cond = cond ? te_and(c, cond, ok) : ok;
    /* taps the average counts: inside the input, or inside input + pads */
    int64_t lo = include_pad ? -pd[i] : 0, hi = x->shape[2 + i] + (include_pad ? pd[i + k] : 0);
    te_expr *taps = window_taps(c, base, lo, hi, ks[i], dl[i]);
    count = count ? te_mul(c, count, taps) : taps;
  }
  te_expr *v = te_cast(c, t, te_load(c, x, xi)), *body;
  /* a float max or average reads the padding as its identity (-inf, 0) through a lazy
   * select on the tap instead of skipping it with the reduction's condition: a row's
   * vector then keeps its lanes at the image's edge (a masked load), where a
   * condition per lane would make the edge vectors scalar */
  if (cond && gir_dtype_is_float(t) && (fn == GIR_POOL_MAX || fn == GIR_POOL_AVG)) {
    v = te_select(c, cond, v, te_const(c, t, fn == GIR_POOL_MAX ? -INFINITY : 0.0));
    cond = NULL;
  }
  if (fn == GIR_POOL_MAX) body = te_reduce(c, TE_RMAX, rv, k, v, cond);
  else if (fn == GIR_POOL_AVG) {
    te_expr *sum = te_reduce(c, TE_SUM, rv, k, v, cond);
    body = te_div(c, sum, te_cast(c, t, count));
  } else {
    double p = (double)gir_attr_int(n, "p", 2);
    te_expr *pw = p == 2 ? te_mul(c, v, v) : te_bin(c, TE_POW, te_un(c, TE_ABS, v), te_const(c, t, p));
    te_expr *sum = te_reduce(c, TE_SUM, rv, k, pw, cond);
    body = p == 2 ? te_un(c, TE_SQRT, sum) : te_bin(c, TE_POW, sum, te_const(c, t, 1.0 / p));
  }
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, n->out[0]->dtype, body));
  return 0;
}

/* The first maximum of each window (taps in row-major order, padding skipped),
 * as a flat index into x: ((n*C + c) * H + h) * W + w, or with storage_order 1
 * (2-D only) (n*C + c) * H * W + h + w * H, like ONNX Runtime. */
int lower_compute_pool_index(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int k = x->rank - 2;
  window win = read_window(n, k);
  const int64_t *st = win.st, *dl = win.dl, *pd = win.pd, *ks = win.ks;
  te_var *ax[GIR_MAX_RANK], *rv[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  for (int i = 0; i < k; i++) rv[i] = te_var_new(c, "rk", ks[i]);
  te_expr *xi[GIR_MAX_RANK], *inside = NULL;
  xi[0] = te_v(c, ax[0]);
  xi[1] = te_v(c, ax[1]);
  for (int i = 0; i < k; i++) {
    te_expr *base = te_sub(c, te_mul(c, te_v(c, ax[2 + i]), te_int(c, st[i])), te_int(c, pd[i]));
    xi[2 + i] = te_add(c, base, te_mul(c, te_v(c, rv[i]), te_int(c, dl[i])));
    te_expr *ok = te_in_range(c, xi[2 + i], x->shape[2 + i]);
    inside = inside ? te_and(c, inside, ok) : ok;
  }
  gir_dtype t = acc_type(x->dtype);
  te_expr *v = te_select(c, inside, te_cast(c, t, te_load(c, x, xi)), te_const(c, t, -INFINITY));
  te_expr *tap = te_argreduce(c, TE_ARGMAX, rv, k, v, 0);
  /* tap → input position on each spatial axis → flat index */
  te_expr *flat = te_add(c, te_mul(c, te_v(c, ax[0]), te_int(c, x->shape[1])), te_v(c, ax[1]));
  te_expr *pos[GIR_MAX_RANK];
  int64_t below = 1;
  for (int i = k - 1; i >= 0; i--) {
    te_expr *ki = te_bin(c, TE_MOD, te_div(c, tap, te_int(c, below)), te_int(c, ks[i]));
    below *= ks[i];
    pos[i] = te_add(c, te_sub(c, te_mul(c, te_v(c, ax[2 + i]), te_int(c, st[i])), te_int(c, pd[i])), te_mul(c, ki, te_int(c, dl[i])));
  }
  if (gir_attr_int(n, "storage_order", 0) == 1) {
    te_expr *hw = te_mul(c, flat, te_int(c, x->shape[2] * x->shape[3]));
    flat = te_add(c, hw, te_add(c, pos[0], te_mul(c, pos[1], te_int(c, x->shape[2]))));
  } else
    for (int i = 0; i < k; i++) flat = te_add(c, te_mul(c, flat, te_int(c, x->shape[2 + i])), pos[i]);
  out[0] = lower_stage(c, n, 0, ax, flat);
  return 0;
}

int lower_compute_lrn(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int64_t size = gir_attr_int(n, "size", 1);
  double alpha = gir_attr_float(n, "alpha", 1e-4), beta = gir_attr_float(n, "beta", 0.75), bias = gir_attr_float(n, "bias", 1.0);
  gir_dtype t = acc_type(x->dtype);
  te_var *ax[GIR_MAX_RANK], *r = te_var_new(c, "rc", size);
  lower_out_axes(c, n, 0, ax);
  te_expr *xi[GIR_MAX_RANK], *oi[GIR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) xi[i] = oi[i] = te_v(c, ax[i]);
  te_expr *ch = te_add(c, te_sub(c, te_v(c, ax[1]), te_int(c, (size - 1) / 2)), te_v(c, r));
  xi[1] = ch;
  te_expr *v = te_cast(c, t, te_load(c, x, xi));
  te_expr *sum = te_reduce(c, TE_SUM, &r, 1, te_mul(c, v, v), te_in_range(c, ch, x->shape[1]));
  te_expr *den = te_bin(c, TE_POW, te_add(c, te_const(c, t, bias), te_mul(c, te_const(c, t, alpha / (double)size), sum)),
                        te_const(c, t, beta));
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, x->dtype, te_div(c, te_cast(c, t, te_load(c, x, oi)), den)));
  return 0;
}

/* NonMaxSuppression is a sequential greedy algorithm with no tensor-expression
 * form: lower/lower_seq.c writes its kernel in loop IR directly. Here it is not
 * defined (constant folding then leaves it to run time). */
int lower_compute_nms(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  (void)in, (void)out;
  return gir_errf(c->err, "%s: NonMaxSuppression has no tensor-expression form (its kernel is written in loop IR)",
                  n->name);
}

/* NonZero, likewise (lower/lower_seq.c). */
int lower_compute_nonzero(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  (void)in, (void)out;
  return gir_errf(c->err, "%s: NonZero has no tensor-expression form (its kernel is written in loop IR)", n->name);
}

/* Unique, likewise (lower/lower_seq.c). */
int lower_compute_unique(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  (void)in, (void)out;
  return gir_errf(c->err, "%s: Unique has no tensor-expression form (its kernel is written in loop IR)", n->name);
}

/* The kernels on strings, likewise (lower/lower_str.c). */
int lower_compute_strop(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  (void)in, (void)out;
  return gir_errf(c->err, "%s: the string kernels have no tensor-expression form (they are written in loop IR)", n->name);
}

int lower_compute_topk(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int r = x->rank;
  int64_t axis = gir_attr_int(n, "axis", -1);
  if (axis < 0) axis += r;
  int largest = (int)gir_attr_int(n, "largest", 1);
  /* rank[j] = #{j' : x[j'] before x[j]}, "before" = better value, ties by index */
  te_var *ax[GIR_MAX_RANK], *jp = te_var_new(c, "j", x->shape[axis]);
  te_axes(c, r, x->shape, ax);
  te_expr *xi[GIR_MAX_RANK], *xj[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) xi[i] = xj[i] = te_v(c, ax[i]);
  xj[axis] = te_v(c, jp);
  te_expr *a = te_load(c, x, xi), *b = te_load(c, x, xj);
  te_expr *better = largest ? te_bin(c, TE_GT, b, a) : te_lt(c, b, a);
  te_expr *tie = te_and(c, te_bin(c, TE_EQ, b, a), te_lt(c, te_v(c, jp), te_v(c, ax[axis])));
  te_tensor *rank = te_compute(c, "topk_rank", GIR_I64, r, x->shape, ax,
                               te_reduce(c, TE_SUM, &jp, 1, te_int(c, 1), te_bin(c, TE_OR, better, tie)));
  /* indices[k] = the j whose rank is k */
  te_var *oax[GIR_MAX_RANK], *j = te_var_new(c, "j", x->shape[axis]);
  lower_out_axes(c, n, 1, oax);
  te_expr *ri[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) ri[i] = i == axis ? te_v(c, j) : te_v(c, oax[i]);
  te_tensor *idx = lower_stage(c, n, 1, oax,
                               te_reduce(c, TE_SUM, &j, 1, te_v(c, j), te_bin(c, TE_EQ, te_load(c, rank, ri), te_v(c, oax[axis]))));
  te_var *vax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, vax);
  te_expr *vi[GIR_MAX_RANK], *li[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) vi[i] = li[i] = te_v(c, vax[i]);
  vi[axis] = te_load(c, idx, li);
  out[0] = lower_stage(c, n, 0, vax, te_load(c, x, vi));
  out[1] = idx;
  return 0;
}

static te_expr *combine(te_ctx *c, gir_scatter_reduction red, te_expr *a, te_expr *b) {
  switch (red) {
  case GIR_SCATTER_ADD: return te_add(c, a, b);
  case GIR_SCATTER_MUL: return te_mul(c, a, b);
  case GIR_SCATTER_MAX: return te_bin(c, TE_MAX, a, b);
  case GIR_SCATTER_MIN: return te_bin(c, TE_MIN, a, b);
  default: return b;
  }
}

static te_combiner combiner_of(gir_scatter_reduction red) {
  switch (red) {
  case GIR_SCATTER_MUL: return TE_PROD;
  case GIR_SCATTER_MAX: return TE_RMAX;
  case GIR_SCATTER_MIN: return TE_RMIN;
  default: return TE_SUM;
  }
}

int lower_compute_scatter_elements(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *d = in[0], *ix = in[1], *up = in[2];
  int r = d->rank;
  int64_t axis = gir_attr_int(n, "axis", 0);
  if (axis < 0) axis += r;
  gir_scatter_reduction red = (gir_scatter_reduction)gir_attr_int(n, "reduction", 0);
  te_var *ax[GIR_MAX_RANK], *j = te_var_new(c, "j", ix->shape[axis]);
  lower_out_axes(c, n, 0, ax);
  /* update position p = out index with axis coordinate j; it hits this output
   * element when its (wrapped) index equals the output's axis coordinate. The
   * other coordinates must lie inside the indices tensor. */
  te_expr *pi[GIR_MAX_RANK], *oi[GIR_MAX_RANK], *inside = NULL;
  for (int i = 0; i < r; i++) {
    oi[i] = te_v(c, ax[i]);
    pi[i] = i == axis ? te_v(c, j) : te_v(c, ax[i]);
    if (i != axis && ix->shape[i] < d->shape[i]) {
      te_expr *ok = te_lt(c, te_v(c, ax[i]), te_int(c, ix->shape[i]));
      inside = inside ? te_and(c, inside, ok) : ok;
    }
  }
  te_expr *hit = te_bin(c, TE_EQ, lower_wrap_index(c, te_load(c, ix, pi), d->shape[axis]), te_v(c, ax[axis]));
  /* lazy: the index tensor may only be read where the position lies inside it */
  if (inside) hit = te_select(c, inside, hit, te_const(c, GIR_BOOL, 0));
  te_expr *orig = te_load(c, d, oi), *body;
  if (red == GIR_SCATTER_NONE) {
    /* the last update wins */
    te_expr *last = te_reduce(c, TE_RMAX, &j, 1, te_v(c, j), hit);
    te_tensor *lt = te_compute(c, "scatter_last", GIR_I64, r, d->shape, ax, last);
    te_var *ax2[GIR_MAX_RANK];
    lower_out_axes(c, n, 0, ax2);
    te_expr *o2[GIR_MAX_RANK], *p2[GIR_MAX_RANK];
    for (int i = 0; i < r; i++) o2[i] = p2[i] = te_v(c, ax2[i]);
    te_expr *lj = te_load(c, lt, o2);
    p2[axis] = lj;
    body = te_select(c, te_ge(c, lj, te_int(c, 0)), te_load(c, up, p2), te_load(c, d, o2));
    out[0] = lower_stage(c, n, 0, ax2, body);
    return 0;
  }
  te_expr *acc = te_reduce(c, combiner_of(red), &j, 1, te_load(c, up, pi), hit);
  body = combine(c, red, orig, acc);
  out[0] = lower_stage(c, n, 0, ax, body);
  return 0;
}

int lower_compute_scatter_nd(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *d = in[0], *ix = in[1], *up = in[2];
  int r = d->rank, pre = ix->rank - 1;
  int64_t q = ix->shape[pre];
  gir_scatter_reduction red = (gir_scatter_reduction)gir_attr_int(n, "reduction", 0);
  te_var *ax[GIR_MAX_RANK], *pv[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  for (int i = 0; i < pre; i++) pv[i] = te_var_new(c, "p", ix->shape[i]);
  te_expr *hit = NULL;
  for (int k = 0; k < q; k++) {
    te_expr *ii[GIR_MAX_RANK];
    for (int i = 0; i < pre; i++) ii[i] = te_v(c, pv[i]);
    ii[pre] = te_int(c, k);
    te_expr *eq = te_bin(c, TE_EQ, lower_wrap_index(c, te_load(c, ix, ii), d->shape[k]), te_v(c, ax[k]));
    hit = hit ? te_and(c, hit, eq) : eq;
  }
  te_expr *ui[GIR_MAX_RANK], *oi[GIR_MAX_RANK];
  for (int i = 0; i < pre; i++) ui[i] = te_v(c, pv[i]);
  for (int i = (int)q; i < r; i++) ui[pre + i - q] = te_v(c, ax[i]);
  for (int i = 0; i < r; i++) oi[i] = te_v(c, ax[i]);
  if (red == GIR_SCATTER_NONE) {
    /* last update wins: the largest linear position p among hits */
    te_expr *lin = te_int(c, 0);
    for (int i = 0; i < pre; i++) lin = te_add(c, te_mul(c, lin, te_int(c, ix->shape[i])), te_v(c, pv[i]));
    te_tensor *lt = te_compute(c, "scatter_last", GIR_I64, r, d->shape, ax, te_reduce(c, TE_RMAX, pv, pre, lin, hit));
    te_var *ax2[GIR_MAX_RANK];
    lower_out_axes(c, n, 0, ax2);
    te_expr *o2[GIR_MAX_RANK], *u2[GIR_MAX_RANK];
    for (int i = 0; i < r; i++) o2[i] = te_v(c, ax2[i]);
    te_expr *lp = te_load(c, lt, o2);
    int64_t stride = 1;
    for (int i = pre - 1; i >= 0; i--) {
      u2[i] = te_bin(c, TE_MOD, te_div(c, lp, te_int(c, stride)), te_int(c, ix->shape[i]));
      stride *= ix->shape[i];
    }
    for (int i = (int)q; i < r; i++) u2[pre + i - q] = te_v(c, ax2[i]);
    out[0] = lower_stage(c, n, 0, ax2, te_select(c, te_ge(c, lp, te_int(c, 0)), te_load(c, up, u2), te_load(c, d, o2)));
    return 0;
  }
  te_expr *acc = te_reduce(c, combiner_of(red), pv, pre, te_load(c, up, ui), hit);
  out[0] = lower_stage(c, n, 0, ax, combine(c, red, te_load(c, d, oi), acc));
  return 0;
}
