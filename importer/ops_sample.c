/* ops_sample.c — ops that read their input at computed, fractional positions:
 * GridSample, AffineGrid, RoiAlign and DeformConv, decomposed into canonical
 * element-wise ops, gathers, reductions and matmuls.
 *
 * The approach is the same for all of them: positions are computed element-wise
 * (floats) and split per axis into integer taps with interpolation weights
 * (floor and the fraction for linear, four Keys-cubic taps for cubic, one
 * rounded tap for nearest). Each axis lays its taps along an axis of its own,
 * so broadcasting forms every combination of taps at once; the flat offsets
 * and weights of the combinations are summed and multiplied as reductions over
 * a stack of the per-axis terms (which also makes them kernels of their own:
 * computed once, not once per channel that reads them), then one gather reads
 * every tap and a sum over the tap axis weighs them. Every index is clamped
 * inside its axis before the cast to int64 (NaN included: it maps to 0)
 * because the gathers do not bound-check; a tap that the padding rule says
 * reads zero is pointed at a zero appended to the input.
 *
 * AffineGrid is a matmul of the constant homogeneous base grid with theta.
 * Numbers follow the onnx reference implementation (onnx/reference/ops). */
#include <math.h>
#include <string.h>
#include "ops.h"

/* Sampling grids above this many taps are refused (their sizes must not overflow). */
#define MAX_SAMPLES (1ll << 40)

static gir_dtype calc_type(gir_dtype t) { return t == GIR_F64 ? GIR_F64 : GIR_F32; }

static gir_value *add(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_ADD, a, b); }
static gir_value *sub(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_SUB, a, b); }
static gir_value *mul(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_MUL, a, b); }
static gir_value *lit(imp_ctx *c, const gir_value *like, double v) { return like ? imp_scalar_like(c, like, v) : NULL; }
static gir_value *addk(imp_ctx *c, gir_value *a, double k) { return k == 0 ? a : add(c, a, lit(c, a, k)); }
static gir_value *mulk(imp_ctx *c, gir_value *a, double k) { return k == 1 ? a : mul(c, a, lit(c, a, k)); }
static gir_value *cmpk(imp_ctx *c, gir_binary_fn f, gir_value *a, double k) {
  return imp_binary(c, f, a, lit(c, a, k));
}

/* i (float) clamped into [0, hi]; NaN goes to 0 (its comparisons are false). */
static gir_value *clamp_index(imp_ctx *c, gir_value *i, int64_t hi) {
  gir_value *zero = lit(c, i, 0), *top = lit(c, i, (double)hi);
  gir_value *y = imp_where(c, cmpk(c, GIR_BINARY_GE, i, 0), i, zero);
  return imp_where(c, cmpk(c, GIR_BINARY_GT, y, (double)hi), top, y);
}

/* int64 flat offset of a clamped float index along an axis of the given stride */
static gir_value *flat_offset(imp_ctx *c, gir_value *i, int64_t hi, int64_t stride) {
  gir_value *k = imp_cast(c, clamp_index(c, i, hi), GIR_I64);
  return stride == 1 ? k : mul(c, k, imp_scalar(c, GIR_I64, (double)stride));
}

/* Reflection into [lo, hi] (repeated, like a mirror pair): the distance from lo
 * folded with period 2*range. The identity inside [lo, hi]. */
static gir_value *reflect(imp_ctx *c, gir_value *x, double lo, double hi) {
  double rng = hi - lo;
  if (!(rng > 0)) return imp_broadcast_to(c, lit(c, x, lo), &x->shape);
  gir_value *t = imp_unary(c, GIR_UNARY_ABS, addk(c, x, -lo));
  t = imp_binary(c, GIR_BINARY_FMOD, t, lit(c, x, 2 * rng));
  t = imp_unary(c, GIR_UNARY_ABS, addk(c, t, -rng));
  return sub(c, lit(c, x, lo + rng), t);
}

/* Interpolation weights of the taps as polynomials in the fraction f = x - floor(x),
 * lowest power first, one row per tap. Cubic: Keys' convolution with A = -0.75
 * at distances 1 + f, f, 1 - f and 2 - f, expanded. */
#define CUBIC_A (-0.75)
static const double linear_w[2][4] = {{1, -1, 0, 0}, {0, 1, 0, 0}};
static const double cubic_w[4][4] = {
    {0, CUBIC_A, -2 * CUBIC_A, CUBIC_A},
    {1, 0, -(CUBIC_A + 3), CUBIC_A + 2},
    {0, -CUBIC_A, 2 * CUBIC_A + 3, -(CUBIC_A + 2)},
    {0, 0, CUBIC_A, -CUBIC_A},
};

typedef enum { SAMPLE_NEAREST, SAMPLE_LINEAR, SAMPLE_CUBIC } sample_mode;
typedef enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION } sample_pad;

/* The taps of one axis, laid out along their own tap axis: int64 flat offsets,
 * weights (NULL: one tap of weight 1) and validity (NULL: always valid). */
typedef struct axis_taps {
  gir_value *off, *w, *valid;
} axis_taps;

/* A constant of type t holding vals along axis `axis` of an otherwise all-ones shape of rank r. */
static gir_value *along(imp_ctx *c, gir_dtype t, int r, int axis, const double *vals, int n) {
  gir_shape s = {.rank = r};
  for (int i = 0; i < r; i++) s.dims[i] = i == axis ? n : 1;
  gir_value *v = imp_const_new(c, t, &s, NULL, "sampling taps");
  if (!v) return NULL;
  for (int i = 0; i < n; i++) gir_store_f64(t, v->data, i, vals[i]);
  return v;
}

/* Taps reading coordinate x (float, in pixels; [lead..., Q] of rank r) along
 * spatial axis d of k, of length len: x gets k trailing axes, and the taps of
 * axis d lie along axis r + d. */
static int make_taps(imp_ctx *c, gir_value *x, int d, int k, sample_mode mode, sample_pad pad, int64_t len,
                     int64_t stride, double lo, double hi, axis_taps *t) {
  int r = x->shape.rank;
  gir_shape xs = x->shape;
  for (int i = 0; i < k; i++) xs.dims[xs.rank++] = 1;
  x = imp_reshape(c, x, xs.rank, xs.dims);
  gir_value *pos = x;
  t->w = t->valid = NULL;
  if (mode != SAMPLE_NEAREST) {
    int n = mode == SAMPLE_LINEAR ? 2 : 4;
    const double(*poly)[4] = mode == SAMPLE_LINEAR ? linear_w : cubic_w;
    double start[4], coef[4][4];
    for (int i = 0; i < n; i++) {
      start[i] = mode == SAMPLE_LINEAR ? i : i - 1;
      for (int p = 0; p < 4; p++) coef[p][i] = poly[i][p];
    }
    gir_value *x0 = imp_unary(c, GIR_UNARY_FLOOR, x), *f = sub(c, x, x0);
    pos = add(c, x0, along(c, x->dtype, xs.rank, r + d, start, n));
    /* Horner: ((c3 f + c2) f + c1) f + c0 */
    int top = mode == SAMPLE_LINEAR ? 1 : 3;
    gir_value *w = along(c, x->dtype, xs.rank, r + d, coef[top], n);
    for (int p = top - 1; p >= 0; p--) w = add(c, mul(c, w, f), along(c, x->dtype, xs.rank, r + d, coef[p], n));
    t->w = w;
  }
  if (pad == PAD_ZEROS)
    t->valid = imp_binary(c, GIR_BINARY_AND, cmpk(c, GIR_BINARY_GE, pos, 0),
                          cmpk(c, GIR_BINARY_LE, pos, (double)(len - 1)));
  else if (pad == PAD_REFLECTION)
    pos = reflect(c, pos, lo, hi);
  t->off = flat_offset(c, pos, len - 1, stride);
  return t->off && !c->err->msg[0] ? 0 : -1;
}

/* fn over a stack of values, each broadcast to shape s: a reduction over the
 * stacked axis. Besides combining them, the reduction ends a kernel (reductions
 * never fuse forward), so per-tap offsets and weights are computed once, not
 * again for every channel that reads them. */
static gir_value *reduce_stack(imp_ctx *c, gir_reduce_fn fn, gir_value *const *v, int n, const gir_shape *s) {
  gir_value *rows[2 * GIR_MAX_RANK];
  int64_t numel = 1, row[2], axis = 0;
  for (int i = 0; i < s->rank; i++) numel *= s->dims[i];
  row[0] = 1;
  row[1] = numel;
  for (int i = 0; i < n; i++) rows[i] = imp_reshape(c, imp_broadcast_to(c, v[i], s), 2, row);
  gir_value *y = imp_reduce(c, fn, imp_concat(c, rows, n, 0), &axis, 1, 0);
  return imp_reshape(c, y, s->rank, s->dims);
}

/* Samples data [lead..., S] (S: the flattened spatial axes) at the taps of k
 * axes made by make_taps from coordinates [lead'..., Q] (lead' broadcasts to
 * lead): the weighted sum over all tap combinations, [lead..., Q]. extra (may
 * be NULL) multiplies every tap's weight. A tap outside the input (invalid)
 * reads a zero appended to data: its offset is S. */
static gir_value *gather_taps(imp_ctx *c, gir_value *data, const axis_taps *ax, int k, gir_value *extra) {
  if (!data) return NULL;
  int r = data->shape.rank;
  int64_t s = data->shape.dims[r - 1];
  gir_value *offs[GIR_MAX_RANK] = {0}, *ws[GIR_MAX_RANK + 1] = {0};
  int nw = 0, masked = 0;
  gir_shape ts = {0}; /* [lead'..., Q, taps...]: the taps' shapes (of one rank) broadcast together */
  for (int d = 0; d < k; d++) {
    if (!ax[d].off) return NULL;
    if (!d) ts = ax[d].off->shape;
    for (int i = 0; i < ts.rank; i++)
      if (ax[d].off->shape.dims[i] > ts.dims[i]) ts.dims[i] = ax[d].off->shape.dims[i];
    offs[d] = ax[d].off;
    if (ax[d].valid) {
      offs[d] = imp_where(c, ax[d].valid, ax[d].off, imp_scalar(c, GIR_I64, (double)s));
      masked = 1;
    }
    if (ax[d].w) ws[nw++] = ax[d].w;
  }
  if (extra) {
    ws[nw] = imp_cast(c, extra, nw ? ws[0]->dtype : data->dtype);
    nw++;
  }
  gir_err e = {{0}};
  int64_t total = gir_shape_numel(&ts, &e);
  if (total < 0 || total > MAX_SAMPLES) {
    imp_fail(c, "too many sampling taps (%s)", total < 0 ? e.msg : "more than 2^40");
    return NULL;
  }
  gir_value *off = reduce_stack(c, GIR_REDUCE_SUM, offs, k, &ts);
  if (masked) {
    off = imp_binary(c, GIR_BINARY_MIN, off, imp_scalar(c, GIR_I64, (double)s));
    int64_t pads[2 * GIR_MAX_RANK] = {0};
    pads[2 * r - 1] = 1;
    gir_node *pn = imp_new_node(c, GIR_OP_pad, &data, 1, 1);
    gir_attr_set_ints(c->g, pn, "pads", pads, 2 * r);
    gir_attr_set_int(c->g, pn, "mode", GIR_PAD_CONSTANT);
    gir_attr_set_float(c->g, pn, "value", 0.0);
    data = imp_finish(c, pn);
  }
  gir_value *w = nw ? reduce_stack(c, GIR_REDUCE_PROD, ws, nw, &ts) : NULL;
  int64_t q = ts.dims[r - 1], taps = 1;
  for (int i = r; i < ts.rank; i++) taps *= ts.dims[i];
  /* off: [lead'..., Q, taps...] → [lead'..., Q * taps] → broadcast to data's lead */
  gir_shape fl = ts, is = data ? data->shape : ts, vs = is, wsh = ts;
  fl.rank = r;
  fl.dims[r - 1] = q * taps;
  is.dims[r - 1] = q * taps;
  vs.dims[r - 1] = q;
  vs.dims[vs.rank++] = taps;
  wsh.rank = r + 1;
  wsh.dims[r - 1] = q;
  wsh.dims[r] = taps;
  gir_value *ins[2] = {data, imp_broadcast_to(c, imp_reshape(c, off, fl.rank, fl.dims), &is)};
  if (!ins[0] || !ins[1]) return NULL;
  gir_node *gn = imp_new_node(c, GIR_OP_gather_elements, ins, 2, 1);
  gir_attr_set_int(c->g, gn, "axis", r - 1);
  gir_value *v = imp_reshape(c, imp_finish(c, gn), vs.rank, vs.dims);
  if (w) v = mul(c, v, imp_cast(c, imp_reshape(c, w, wsh.rank, wsh.dims), v->dtype));
  if (!v) return NULL;
  if (taps == 1) return imp_reshape(c, v, r, vs.dims);
  int64_t axis = r;
  return imp_reduce(c, GIR_REDUCE_SUM, v, &axis, 1, 0);
}

/* --- GridSample --- */

static int parse_mode(imp_ctx *c, const imp_node *n, sample_mode *mode, sample_pad *pad) {
  int v20 = n->opset >= 20;
  const char *m = imp_attr_string(c, n, "mode", v20 ? "linear" : "bilinear");
  if (!strcmp(m, v20 ? "linear" : "bilinear")) *mode = SAMPLE_LINEAR;
  else if (!strcmp(m, "nearest")) *mode = SAMPLE_NEAREST;
  else if (!strcmp(m, v20 ? "cubic" : "bicubic")) *mode = SAMPLE_CUBIC;
  else return imp_fail(c, "unknown mode '%s' (opset %lld)", m, (long long)n->opset);
  const char *p = imp_attr_string(c, n, "padding_mode", "zeros");
  if (!strcmp(p, "zeros")) *pad = PAD_ZEROS;
  else if (!strcmp(p, "border")) *pad = PAD_BORDER;
  else if (!strcmp(p, "reflection")) *pad = PAD_REFLECTION;
  else return imp_fail(c, "unknown padding_mode '%s'", p);
  return 0;
}

int imp_cv_GridSample(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *grid = imp_in(n, 1);
  if (!x || !grid) return imp_fail(c, "needs X and grid");
  int r = x->shape.rank, k = r - 2;
  sample_mode mode = SAMPLE_LINEAR;
  sample_pad pad = PAD_ZEROS;
  if (parse_mode(c, n, &mode, &pad) < 0) return -1;
  if (k < 1) return imp_fail(c, "X must have rank >= 3");
  if (3 + k > GIR_MAX_RANK) return imp_unsupported_node(c, n, "%d spatial axes (at most %d)", k, GIR_MAX_RANK - 3);
  if (n->opset < 20 && k != 2) return imp_fail(c, "X must have rank 4 before opset 20");
  if (!gir_dtype_is_float(grid->dtype)) return imp_fail(c, "grid must be floating point");
  if (grid->shape.rank != r || grid->shape.dims[0] != x->shape.dims[0] || grid->shape.dims[r - 1] != k)
    return imp_fail(c, "grid must be [N, spatial..., %d] with X's batch size", k);
  int align = imp_attr_int(n, "align_corners", 0) != 0;
  gir_dtype ft = calc_type(grid->dtype);
  int64_t nb = x->shape.dims[0], ch = x->shape.dims[1], p = 1, s = 1, stride[GIR_MAX_RANK];
  for (int i = 1; i < r - 1; i++) p *= grid->shape.dims[i];
  for (int d = k - 1; d >= 0; d--) {
    stride[d] = s;
    s *= x->shape.dims[2 + d];
  }
  int64_t gshape[3] = {nb, p, k}, one_p[3] = {nb, 1, p}, xflat[3] = {nb, ch, s};
  gir_value *g = imp_reshape(c, imp_cast(c, grid, ft), 3, gshape);
  axis_taps taps[GIR_MAX_RANK];
  for (int d = 0; d < k; d++) {
    /* the grid's last axis lists coordinates innermost first: (x, y[, z]) */
    int64_t len = x->shape.dims[2 + d];
    gir_value *gd = imp_reshape(c, imp_slice_axis(c, g, 2, k - 1 - d, 1, 1), 3, one_p);
    if (!gd) return -1;
    gir_value *xd = align ? mulk(c, addk(c, gd, 1), 0.5 * (double)(len - 1))
                          : mulk(c, addk(c, mulk(c, addk(c, gd, 1), (double)len), -1), 0.5);
    if (mode == SAMPLE_NEAREST) xd = imp_unary(c, GIR_UNARY_ROUND, xd);
    double lo = align ? 0.0 : -0.5, hi = align ? (double)(len - 1) : (double)len - 0.5;
    if (pad != PAD_ZEROS) {
      /* coordinates past the border are first clamped or reflected back */
      gir_value *out = imp_binary(c, GIR_BINARY_OR, cmpk(c, GIR_BINARY_LT, xd, lo), cmpk(c, GIR_BINARY_GT, xd, hi));
      gir_value *fixed;
      if (pad == PAD_BORDER)
        fixed = imp_binary(c, GIR_BINARY_MIN, imp_binary(c, GIR_BINARY_MAX, xd, lit(c, xd, 0)),
                           lit(c, xd, (double)(len - 1)));
      else
        fixed = reflect(c, xd, lo, hi);
      xd = imp_where(c, out, fixed, xd);
    }
    if (!xd || make_taps(c, xd, d, k, mode, pad, len, stride[d], lo, hi, &taps[d]) < 0) return -1;
  }
  gir_value *data = x;
  if (mode != SAMPLE_NEAREST && x->dtype != GIR_F64) data = imp_cast(c, x, GIR_F32);
  gir_value *y = gather_taps(c, imp_reshape(c, data, 3, xflat), taps, k, NULL);
  gir_shape ys = {.rank = r, .dims = {nb, ch}};
  for (int i = 1; i < r - 1; i++) ys.dims[1 + i] = grid->shape.dims[i];
  return imp_set_output(c, n, 0, imp_reshape(c, imp_cast(c, y, x->dtype), r, ys.dims));
}

/* --- AffineGrid --- */

int imp_cv_AffineGrid(imp_ctx *c, imp_node *n) {
  gir_value *theta = imp_in(n, 0);
  if (!theta) return imp_fail(c, "needs theta");
  int32_t ns;
  int64_t *size = imp_const_ints(c, imp_in(n, 1), "input 'size'", &ns);
  if (!size) return -1;
  int k = ns - 2;
  if (k != 2 && k != 3) return imp_fail(c, "size must be [N, C, H, W] or [N, C, D, H, W]");
  if (!gir_dtype_is_float(theta->dtype)) return imp_fail(c, "theta must be floating point");
  if (theta->shape.rank != 3 || theta->shape.dims[0] != size[0] || theta->shape.dims[1] != k ||
      theta->shape.dims[2] != k + 1)
    return imp_fail(c, "theta must be [N, %d, %d] with N = size[0]", k, k + 1);
  int64_t p = 1;
  for (int i = 0; i < k; i++) {
    if (size[2 + i] < 1 || size[2 + i] > (1 << 24)) return imp_fail(c, "size[%d] is out of range", 2 + i);
    p *= size[2 + i];
    if (p > (1 << 24)) return imp_unsupported_node(c, n, "a grid of more than 2^24 points");
  }
  int align = imp_attr_int(n, "align_corners", 0) != 0;
  gir_dtype ft = calc_type(theta->dtype);
  /* base grid rows (x, y[, z], 1): x runs over the last spatial axis */
  gir_shape bs = {.rank = 2, .dims = {p, k + 1}};
  gir_value *base = imp_const_new(c, ft, &bs, NULL, "base grid");
  if (!base) return -1;
  for (int64_t i = 0; i < p; i++) {
    int64_t rest = i;
    for (int d = k - 1; d >= 0; d--) {
      int64_t len = size[2 + d], j = rest % len;
      rest /= len;
      double v = align ? (len > 1 ? -1.0 + 2.0 * (double)j / (double)(len - 1) : -1.0)
                       : -1.0 + (2.0 * (double)j + 1.0) / (double)len;
      gir_store_f64(ft, base->data, i * (k + 1) + (k - 1 - d), v);
    }
    gir_store_f64(ft, base->data, i * (k + 1) + k, 1.0);
  }
  int64_t perm[3] = {0, 2, 1};
  gir_value *y = imp_matmul(c, base, imp_transpose(c, imp_cast(c, theta, ft), perm)); /* [N, P, k] */
  gir_shape ys = {.rank = k + 2, .dims = {size[0]}};
  for (int i = 0; i < k; i++) ys.dims[1 + i] = size[2 + i];
  ys.dims[k + 1] = k;
  return imp_set_output(c, n, 0, imp_cast(c, imp_reshape(c, y, ys.rank, ys.dims), theta->dtype));
}

/* --- RoiAlign --- */

/* Sample coordinates along one axis of every ROI: start + bin * (b + (i + 0.5) / grid)
 * for bins b and samples i, giving [R, bins * grid]; then the reference's
 * bilinear set-up: low/high indices, weights, and the in-range test. */
typedef struct roi_axis {
  gir_value *low, *high; /* float indices, inside [0, len) */
  gir_value *wl, *wh;    /* weights of low and high */
  gir_value *valid;      /* sample inside [-1, len] */
} roi_axis;

static int roi_axis_setup(imp_ctx *c, gir_value *start, gir_value *bin, int64_t bins, int64_t grid, int64_t len,
                          roi_axis *a) {
  gir_shape ks = {.rank = 2, .dims = {1, bins * grid}};
  gir_value *kv = imp_const_new(c, start->dtype, &ks, NULL, "ROI sample offsets");
  if (!kv) return -1;
  for (int64_t b = 0; b < bins; b++)
    for (int64_t i = 0; i < grid; i++)
      gir_store_f64(start->dtype, kv->data, b * grid + i, (double)b + ((double)i + 0.5) / (double)grid);
  gir_value *y = add(c, start, mul(c, bin, kv));
  a->valid = imp_unary(c, GIR_UNARY_NOT, imp_binary(c, GIR_BINARY_OR, cmpk(c, GIR_BINARY_LT, y, -1.0),
                                                      cmpk(c, GIR_BINARY_GT, y, (double)len)));
  y = imp_binary(c, GIR_BINARY_MAX, y, lit(c, y, 0));
  gir_value *low = imp_unary(c, GIR_UNARY_FLOOR, y), *top = lit(c, y, (double)(len - 1));
  gir_value *at_end = cmpk(c, GIR_BINARY_GE, low, (double)(len - 1));
  a->low = imp_where(c, at_end, top, low);
  a->high = imp_where(c, at_end, top, addk(c, low, 1));
  y = imp_where(c, at_end, top, y);
  a->wh = sub(c, y, a->low);
  a->wl = sub(c, lit(c, a->wh, 1.0), a->wh);
  return a->wl ? 0 : -1;
}

int imp_cv_RoiAlign(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *rois = imp_in(n, 1), *bi = imp_in(n, 2);
  if (!x || !rois || !bi) return imp_fail(c, "needs X, rois and batch_indices");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  if (x->shape.rank != 4) return imp_fail(c, "X must be [N, C, H, W]");
  if (rois->shape.rank != 2 || rois->shape.dims[1] != 4) return imp_fail(c, "rois must be [num_rois, 4]");
  if (bi->shape.rank != 1 || bi->shape.dims[0] != rois->shape.dims[0] || !gir_dtype_is_int(bi->dtype))
    return imp_fail(c, "batch_indices must be integers [num_rois]");
  const char *mode = imp_attr_string(c, n, "mode", "avg");
  if (strcmp(mode, "avg") && strcmp(mode, "max")) return imp_fail(c, "unknown mode '%s'", mode);
  /* opset 10 has no coordinate_transformation_mode and shifts nothing, as
   * output_half_pixel does (ONNX Runtime agrees; the onnx reference evaluator
   * applies opset 16's half_pixel default to it) */
  int half = 0;
  if (n->opset >= 16) {
    const char *ct = imp_attr_string(c, n, "coordinate_transformation_mode", "half_pixel");
    if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
      return imp_fail(c, "unknown coordinate_transformation_mode '%s'", ct);
    half = !strcmp(ct, "half_pixel");
  }
  int64_t ph = imp_attr_int(n, "output_height", 1), pw = imp_attr_int(n, "output_width", 1);
  int64_t ratio = imp_attr_int(n, "sampling_ratio", 0);
  double scale = imp_attr_float(n, "spatial_scale", 1.0);
  if (ph < 1 || pw < 1 || ph > (1 << 16) || pw > (1 << 16)) return imp_fail(c, "output_height/width out of range");
  if (ratio > 64)
    return imp_unsupported_node(c, n, "sampling_ratio %lld (more than 64 samples per bin side)", (long long)ratio);
  if (ratio <= 0)
    return imp_unsupported_node(c, n, "sampling_ratio=0 (adaptive): the samples per bin depend on the ROI sizes, "
                                "which are only known at run time");
  int64_t nb = x->shape.dims[0], ch = x->shape.dims[1], h = x->shape.dims[2], w = x->shape.dims[3];
  int64_t nr = rois->shape.dims[0];
  if (nb < 1 || h < 1 || w < 1) return imp_fail(c, "X has an empty batch or spatial axis");
  gir_dtype ft = calc_type(x->dtype);
  gir_value *rf = imp_cast(c, rois, ft), *coord[4];
  for (int i = 0; i < 4; i++) coord[i] = addk(c, mulk(c, imp_slice_axis(c, rf, 1, i, 1, 1), scale), half ? -0.5 : 0.0);
  gir_value *rw = sub(c, coord[2], coord[0]), *rh = sub(c, coord[3], coord[1]);
  if (!half) { /* malformed ROIs are forced to 1x1 */
    rw = imp_binary(c, GIR_BINARY_MAX, rw, lit(c, rw, 1.0));
    rh = imp_binary(c, GIR_BINARY_MAX, rh, lit(c, rh, 1.0));
  }
  roi_axis ay, axx;
  if (roi_axis_setup(c, coord[1], mulk(c, rh, 1.0 / (double)ph), ph, ratio, h, &ay) < 0 ||
      roi_axis_setup(c, coord[0], mulk(c, rw, 1.0 / (double)pw), pw, ratio, w, &axx) < 0)
    return -1;
  /* every sample's four corners along axes [R, PH, PW, G, G, corner y, corner x]:
   * y terms are [R, PH, 1, G, 1, 2, 1], x terms [R, 1, PW, 1, G, 1, 2] */
  int64_t ys[7] = {nr, ph, 1, ratio, 1, 1, 1}, xs[7] = {nr, 1, pw, 1, ratio, 1, 1}, bs[7] = {nr, 1, 1, 1, 1, 1, 1};
  gir_value *pair[2];
  pair[0] = imp_reshape(c, flat_offset(c, ay.low, h - 1, w), 7, ys);
  pair[1] = imp_reshape(c, flat_offset(c, ay.high, h - 1, w), 7, ys);
  gir_value *yo = imp_concat(c, pair, 2, 5);
  pair[0] = imp_reshape(c, ay.wl, 7, ys);
  pair[1] = imp_reshape(c, ay.wh, 7, ys);
  gir_value *wy = imp_concat(c, pair, 2, 5);
  pair[0] = imp_reshape(c, flat_offset(c, axx.low, w - 1, 1), 7, xs);
  pair[1] = imp_reshape(c, flat_offset(c, axx.high, w - 1, 1), 7, xs);
  gir_value *xo = imp_concat(c, pair, 2, 6);
  pair[0] = imp_reshape(c, axx.wl, 7, xs);
  pair[1] = imp_reshape(c, axx.wh, 7, xs);
  gir_value *wx = imp_concat(c, pair, 2, 6);
  /* samples outside [-1, len] weigh 0 (the reference reads offset 0 with weight 0) */
  gir_value *valid = imp_binary(c, GIR_BINARY_AND, imp_reshape(c, ay.valid, 7, ys), imp_reshape(c, axx.valid, 7, xs));
  valid = imp_cast(c, valid, ft);
  /* offsets into X as [C, N*H*W]; batch indices are clamped into [0, N) */
  gir_value *b = imp_cast(c, bi, GIR_I64);
  b = imp_binary(c, GIR_BINARY_MAX, imp_binary(c, GIR_BINARY_MIN, b, imp_scalar(c, GIR_I64, (double)(nb - 1))),
                 imp_scalar(c, GIR_I64, 0));
  b = mul(c, imp_reshape(c, b, 7, bs), imp_scalar(c, GIR_I64, (double)(h * w)));
  int64_t taps = 4 * ratio * ratio, ts[4] = {nr, ph, pw, taps}, ws5[5] = {1, nr, ph, pw, taps};
  gir_shape full = {.rank = 7, .dims = {nr, ph, pw, ratio, ratio, 2, 2}};
  gir_err e = {{0}};
  int64_t total = gir_shape_numel(&full, &e);
  if (total < 0 || total > MAX_SAMPLES)
    return imp_fail(c, "too many samples (%s)", total < 0 ? e.msg : "more than 2^40");
  gir_value *offs[3] = {b, yo, xo}, *wl[3] = {wy, wx, valid};
  gir_value *off = imp_reshape(c, reduce_stack(c, GIR_REDUCE_SUM, offs, 3, &full), 4, ts);
  gir_value *wt = imp_reshape(c, reduce_stack(c, GIR_REDUCE_PROD, wl, 3, &full), 5, ws5);
  int64_t perm_in[4] = {1, 0, 2, 3}, rows[2] = {ch, nb * h * w};
  gir_value *ins[2] = {imp_reshape(c, imp_transpose(c, imp_cast(c, x, ft), perm_in), 2, rows), off};
  if (!ins[0] || !ins[1] || !wt) return -1;
  gir_node *gn = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
  gir_attr_set_int(c->g, gn, "axis", 1);
  gir_value *v = mul(c, imp_finish(c, gn), wt); /* [C, R, PH, PW, taps] */
  /* max mode: the largest weighted corner of any sample (the reference's rule) */
  int64_t axis = 4, perm_out[4] = {1, 0, 2, 3};
  gir_value *y;
  if (!strcmp(mode, "max")) y = imp_reduce(c, GIR_REDUCE_MAX, v, &axis, 1, 0);
  else y = mulk(c, imp_reduce(c, GIR_REDUCE_SUM, v, &axis, 1, 0), 1.0 / (double)(ratio * ratio));
  return imp_set_output(c, n, 0, imp_cast(c, imp_transpose(c, y, perm_out), x->dtype));
}

/* --- DeformConv --- */

int imp_cv_DeformConv(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *wt = imp_in(n, 1), *offset = imp_in(n, 2), *bias = imp_in(n, 3), *mask = imp_in(n, 4);
  if (!x || !wt || !offset) return imp_fail(c, "needs X, W and offset");
  int r = x->shape.rank, k = r - 2;
  if (k < 1 || wt->shape.rank != r || offset->shape.rank != r)
    return imp_fail(c, "X, W and offset need the same rank >= 3");
  if (!gir_dtype_is_float(x->dtype) || wt->dtype != x->dtype || offset->dtype != x->dtype)
    return imp_fail(c, "X, W and offset must share a floating-point type");
  int64_t kern[GIR_MAX_RANK], st[GIR_MAX_RANK], dil[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK];
  if (imp_spatial_ints(c, n, "kernel_shape", k, 0, kern, NULL) < 0 ||
      imp_spatial_ints(c, n, "strides", k, 1, st, NULL) < 0 ||
      imp_spatial_ints(c, n, "dilations", k, 1, dil, NULL) < 0 ||
      imp_spatial_ints(c, n, "pads", 2 * k, 0, pads, NULL) < 0)
    return -1;
  int64_t group = imp_attr_int(n, "group", 1), og = imp_attr_int(n, "offset_group", 1);
  int64_t nb = x->shape.dims[0], ch = x->shape.dims[1], oc = wt->shape.dims[0], kt = 1, p = 1, s = 1;
  if (group < 1 || og < 1 || ch % group || oc % group || wt->shape.dims[1] * group != ch || ch % og)
    return imp_fail(c, "channels %lld, weight %lldx%lld, group %lld and offset_group %lld disagree", (long long)ch,
                    (long long)oc, (long long)wt->shape.dims[1], (long long)group, (long long)og);
  int64_t stride[GIR_MAX_RANK];
  for (int d = k - 1; d >= 0; d--) {
    stride[d] = s;
    s *= x->shape.dims[2 + d];
  }
  for (int d = 0; d < k; d++) {
    if (kern[d] == 0) kern[d] = wt->shape.dims[2 + d];
    if (kern[d] != wt->shape.dims[2 + d] || st[d] < 1 || dil[d] < 1 || pads[d] < 0 || pads[d + k] < 0 ||
        st[d] > (1 << 20) || dil[d] > (1 << 20) || pads[d] > (1 << 20) || pads[d + k] > (1 << 20))
      return imp_fail(c, "bad kernel_shape, strides, dilations or pads on spatial axis %d", d);
    int64_t o = (x->shape.dims[2 + d] + pads[d] + pads[d + k] - dil[d] * (kern[d] - 1) - 1) / st[d] + 1;
    if (o != offset->shape.dims[2 + d])
      return imp_fail(c, "offset has %lld positions on spatial axis %d, the convolution gives %lld",
                      (long long)offset->shape.dims[2 + d], d, (long long)o);
    kt *= kern[d];
    p *= o;
  }
  if (offset->shape.dims[0] != nb || offset->shape.dims[1] != og * kt * k)
    return imp_fail(c, "offset must be [N, offset_group * %lld * %d, ...]", (long long)kt, k);
  if (mask && (mask->dtype != x->dtype || mask->shape.rank != r || mask->shape.dims[0] != nb ||
               mask->shape.dims[1] != og * kt || gir_value_numel(mask) != nb * og * kt * p))
    return imp_fail(c, "mask must be [N, offset_group * %lld, output...]", (long long)kt);
  if (bias && (bias->shape.rank != 1 || bias->shape.dims[0] != oc || bias->dtype != x->dtype))
    return imp_fail(c, "B must be [%lld]", (long long)oc);
  if (kt * p > (1 << 26)) return imp_unsupported_node(c, n, "more than 2^26 sampling points per channel");
  gir_dtype ft = calc_type(x->dtype);
  int64_t os5[5] = {nb, og, kt, k, p}, tap_shape[4] = {nb, og, 1, kt * p};
  gir_value *offs = imp_reshape(c, imp_cast(c, offset, ft), 5, os5);
  axis_taps taps[GIR_MAX_RANK];
  gir_shape ps = {.rank = 1, .dims = {kt * p}};
  for (int d = 0; d < k; d++) {
    /* base position of each (kernel tap, output position) on axis d */
    gir_value *base = imp_const_new(c, ft, &ps, NULL, "kernel tap positions");
    if (!base) return -1;
    for (int64_t kk = 0; kk < kt; kk++)
      for (int64_t o = 0; o < p; o++) {
        int64_t kd = kk, od = o;
        for (int e = k - 1; e > d; e--) {
          kd /= kern[e];
          od /= offset->shape.dims[2 + e];
        }
        kd %= kern[d];
        od %= offset->shape.dims[2 + d];
        gir_store_f64(ft, base->data, kk * p + o, (double)(od * st[d] - pads[d] + kd * dil[d]));
      }
    gir_value *od = imp_reshape(c, imp_slice_axis(c, offs, 3, d, 1, 1), 4, tap_shape);
    gir_value *pos = add(c, od, base);
    if (!pos || make_taps(c, pos, d, k, SAMPLE_LINEAR, PAD_ZEROS, x->shape.dims[2 + d], stride[d], 0, 0, &taps[d]) < 0)
      return -1;
  }
  int64_t xg[4] = {nb, og, ch / og, s};
  gir_value *mk = NULL;
  if (mask) { /* [N, og, 1, kt * P] plus one axis per tap axis */
    int64_t ms[GIR_MAX_RANK] = {nb, og, 1, kt * p, 1, 1, 1, 1};
    mk = imp_reshape(c, mask, 4 + k, ms);
  }
  gir_value *v = gather_taps(c, imp_reshape(c, imp_cast(c, x, ft), 4, xg), taps, k, mk);
  /* columns [N, group, C/group * kt, P] times weights [group, OC/group, C/group * kt] */
  int64_t cols[4] = {nb, group, ch / group * kt, p}, wm[3] = {group, oc / group, ch / group * kt}, ys[3] = {nb, oc, p};
  gir_value *y = imp_matmul(c, imp_reshape(c, imp_cast(c, wt, ft), 3, wm), imp_reshape(c, v, 4, cols));
  y = imp_reshape(c, y, 3, ys);
  if (bias) {
    int64_t bs[2] = {oc, 1};
    y = add(c, y, imp_reshape(c, imp_cast(c, bias, ft), 2, bs));
  }
  gir_shape out = {.rank = r, .dims = {nb, oc}};
  for (int d = 0; d < k; d++) out.dims[2 + d] = offset->shape.dims[2 + d];
  return imp_set_output(c, n, 0, imp_cast(c, imp_reshape(c, y, r, out.dims), x->dtype));
}
