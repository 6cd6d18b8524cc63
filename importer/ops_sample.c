/* ops_sample.c — ops that read their input at computed, fractional positions:
 * GridSample, AffineGrid, RoiAlign and DeformConv, decomposed into canonical
 * element-wise ops, gathers and matmuls.
 *
 * The approach is the same for all of them: positions are computed element-wise
 * (floats), split per axis into integer taps with interpolation weights (floor
 * and the fraction for linear, four Keys-cubic taps for cubic, one rounded tap
 * for nearest), each tap index is brought inside the input according to the
 * padding rule and flattened, and the input is read with one gather per
 * combination of taps, then weighted and summed. Every index is clamped inside
 * its axis before the cast to int64 (NaN included: it maps to 0), because the
 * gathers do not bound-check; taps that the padding rule says read zeros are
 * masked with where after the gather.
 *
 * AffineGrid is a matmul of the constant homogeneous base grid with theta.
 * Numbers follow the onnx reference implementation (onnx/reference/ops). */
#include <math.h>
#include <string.h>
#include "ops.h"

#define MAX_TAPS 4

static gir_value *in_at(const imp_node *n, int i) { return i < n->n_in ? n->in[i] : NULL; }
static gir_dtype calc_type(gir_dtype t) { return t == GIR_F64 ? GIR_F64 : GIR_F32; }

static gir_value *add(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_ADD, a, b); }
static gir_value *sub(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_SUB, a, b); }
static gir_value *mul(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_MUL, a, b); }
static gir_value *lit(imp_ctx *c, const gir_value *like, double v) { return like ? imp_scalar_like(c, like, v) : NULL; }
static gir_value *addk(imp_ctx *c, gir_value *a, double k) { return k == 0 ? a : add(c, a, lit(c, a, k)); }
static gir_value *mulk(imp_ctx *c, gir_value *a, double k) { return k == 1 ? a : mul(c, a, lit(c, a, k)); }
static gir_value *cmpk(imp_ctx *c, gir_binary_fn f, gir_value *a, double k) { return imp_binary(c, f, a, lit(c, a, k)); }
static gir_value *and2(imp_ctx *c, gir_value *a, gir_value *b) { return !a ? b : imp_binary(c, GIR_BINARY_AND, a, b); }

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

/* Keys cubic convolution weights (A = -0.75) at distance 1 + t or 2 - t (far)
 * and t or 1 - t (near), t in [0, 1). */
#define CUBIC_A (-0.75)
static gir_value *cubic_far(imp_ctx *c, gir_value *u) {
  gir_value *y = mul(c, addk(c, mulk(c, u, CUBIC_A), -5 * CUBIC_A), u);
  return addk(c, mul(c, addk(c, y, 8 * CUBIC_A), u), -4 * CUBIC_A);
}
static gir_value *cubic_near(imp_ctx *c, gir_value *u) {
  gir_value *y = mul(c, mul(c, addk(c, mulk(c, u, CUBIC_A + 2), -(CUBIC_A + 3)), u), u);
  return addk(c, y, 1.0);
}
static gir_value *one_minus(imp_ctx *c, gir_value *t) { return sub(c, lit(c, t, 1.0), t); }

typedef enum { SAMPLE_NEAREST, SAMPLE_LINEAR, SAMPLE_CUBIC } sample_mode;
typedef enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION } sample_pad;

/* The taps of one axis: flat offsets (int64), weights (NULL: 1), validity
 * (NULL: always valid). */
typedef struct axis_taps {
  int n;
  gir_value *off[MAX_TAPS], *w[MAX_TAPS], *valid[MAX_TAPS];
} axis_taps;

/* Taps reading coordinate x (float, in pixels) along an axis of length len. */
static int make_taps(imp_ctx *c, gir_value *x, sample_mode mode, sample_pad pad, int64_t len, int64_t stride,
                     double lo, double hi, axis_taps *t) {
  gir_value *pos[MAX_TAPS];
  if (mode == SAMPLE_NEAREST) {
    t->n = 1;
    pos[0] = x;
    t->w[0] = NULL;
  } else {
    gir_value *x0 = imp_unary(c, GIR_UNARY_FLOOR, x), *f = sub(c, x, x0);
    if (mode == SAMPLE_LINEAR) {
      t->n = 2;
      pos[0] = x0;
      pos[1] = addk(c, x0, 1);
      t->w[0] = one_minus(c, f);
      t->w[1] = f;
    } else {
      t->n = 4;
      for (int i = 0; i < 4; i++) pos[i] = addk(c, x0, i - 1);
      gir_value *g = one_minus(c, f);
      t->w[0] = cubic_far(c, addk(c, f, 1));
      t->w[1] = cubic_near(c, f);
      t->w[2] = cubic_near(c, g);
      t->w[3] = cubic_far(c, addk(c, g, 1));
    }
  }
  for (int i = 0; i < t->n; i++) {
    gir_value *p = pos[i];
    t->valid[i] = NULL;
    if (pad == PAD_ZEROS)
      t->valid[i] = imp_binary(c, GIR_BINARY_AND, cmpk(c, GIR_BINARY_GE, p, 0), cmpk(c, GIR_BINARY_LE, p, (double)(len - 1)));
    else if (pad == PAD_REFLECTION)
      p = reflect(c, p, lo, hi);
    t->off[i] = flat_offset(c, p, len - 1, stride);
    if (!t->off[i]) return -1;
  }
  return c->err->msg[0] ? -1 : 0;
}

/* Sum over every combination of the axes' taps of w * data[offset], where data
 * is [..., S] and the taps broadcast to idx_shape [..., P] (gathered along the
 * last axis). A tap outside the input (invalid) reads 0. */
static gir_value *gather_taps(imp_ctx *c, gir_value *data, const axis_taps *ax, int k, const gir_shape *idx_shape) {
  int which[GIR_MAX_RANK] = {0};
  gir_value *acc = NULL;
  int last = idx_shape->rank - 1;
  for (;;) {
    gir_value *off = NULL, *w = NULL, *valid = NULL;
    for (int d = 0; d < k; d++) {
      int i = which[d];
      off = off ? add(c, off, ax[d].off[i]) : ax[d].off[i];
      if (ax[d].w[i]) w = w ? mul(c, w, ax[d].w[i]) : ax[d].w[i];
      if (ax[d].valid[i]) valid = and2(c, valid, ax[d].valid[i]);
    }
    gir_value *ins[2] = {data, imp_broadcast_to(c, off, idx_shape)};
    if (!ins[1]) return NULL;
    gir_node *gn = imp_new_node(c, GIR_OP_gather_elements, ins, 2, 1);
    gir_attr_set_int(c->g, gn, "axis", last);
    gir_value *v = imp_finish(c, gn);
    if (!v) return NULL;
    if (valid) v = imp_where(c, valid, v, lit(c, v, 0));
    if (w) v = mul(c, v, imp_cast(c, w, v->dtype));
    acc = acc ? add(c, acc, v) : v;
    int d = 0;
    while (d < k && ++which[d] == ax[d].n) which[d++] = 0;
    if (d == k) break;
  }
  return acc;
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
  gir_value *x = in_at(n, 0), *grid = in_at(n, 1);
  if (!x || !grid) return imp_fail(c, "needs X and grid");
  int r = x->shape.rank, k = r - 2;
  sample_mode mode = SAMPLE_LINEAR;
  sample_pad pad = PAD_ZEROS;
  if (parse_mode(c, n, &mode, &pad) < 0) return -1;
  if (k < 1) return imp_fail(c, "X must have rank >= 3");
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
      gir_value *fixed = pad == PAD_BORDER ? imp_binary(c, GIR_BINARY_MIN, imp_binary(c, GIR_BINARY_MAX, xd, lit(c, xd, 0)),
                                                        lit(c, xd, (double)(len - 1)))
                                           : reflect(c, xd, lo, hi);
      xd = imp_where(c, out, fixed, xd);
    }
    if (!xd || make_taps(c, xd, mode, pad, len, stride[d], lo, hi, &taps[d]) < 0) return -1;
  }
  gir_value *data = x;
  if (mode != SAMPLE_NEAREST && x->dtype != GIR_F64) data = imp_cast(c, x, GIR_F32);
  gir_shape is = {.rank = 3, .dims = {nb, ch, p}};
  gir_value *y = gather_taps(c, imp_reshape(c, data, 3, xflat), taps, k, &is);
  gir_shape ys = {.rank = r, .dims = {nb, ch}};
  for (int i = 1; i < r - 1; i++) ys.dims[1 + i] = grid->shape.dims[i];
  return imp_set_output(c, n, 0, imp_reshape(c, imp_cast(c, y, x->dtype), r, ys.dims));
}

/* --- AffineGrid --- */

int imp_cv_AffineGrid(imp_ctx *c, imp_node *n) {
  gir_value *theta = in_at(n, 0);
  if (!theta) return imp_fail(c, "needs theta");
  int32_t ns;
  int64_t *size = imp_const_ints(c, in_at(n, 1), "input 'size'", &ns);
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
  gir_dtype ft = theta->dtype;
  /* base grid rows (x, y[, z], 1): x runs over the last spatial axis */
  gir_shape bs = {.rank = 2, .dims = {p, k + 1}};
  gir_value *base = gir_const_new(c->g, NULL, ft, &bs, NULL);
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
  gir_value *y = imp_matmul(c, base, imp_transpose(c, theta, perm)); /* [N, P, k] */
  gir_shape ys = {.rank = k + 2, .dims = {size[0]}};
  for (int i = 0; i < k; i++) ys.dims[1 + i] = size[2 + i];
  ys.dims[k + 1] = k;
  return imp_set_output(c, n, 0, imp_reshape(c, y, ys.rank, ys.dims));
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
  gir_value *kv = gir_const_new(c->g, NULL, start->dtype, &ks, NULL);
  for (int64_t b = 0; b < bins; b++)
    for (int64_t i = 0; i < grid; i++) gir_store_f64(start->dtype, kv->data, b * grid + i, (double)b + ((double)i + 0.5) / (double)grid);
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
  a->wl = one_minus(c, a->wh);
  return a->wl ? 0 : -1;
}

int imp_cv_RoiAlign(imp_ctx *c, imp_node *n) {
  gir_value *x = in_at(n, 0), *rois = in_at(n, 1), *bi = in_at(n, 2);
  if (!x || !rois || !bi) return imp_fail(c, "needs X, rois and batch_indices");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  if (x->shape.rank != 4) return imp_fail(c, "X must be [N, C, H, W]");
  if (rois->shape.rank != 2 || rois->shape.dims[1] != 4) return imp_fail(c, "rois must be [num_rois, 4]");
  if (bi->shape.rank != 1 || bi->shape.dims[0] != rois->shape.dims[0] || !gir_dtype_is_int(bi->dtype))
    return imp_fail(c, "batch_indices must be integers [num_rois]");
  const char *mode = imp_attr_string(c, n, "mode", "avg");
  if (strcmp(mode, "avg") && strcmp(mode, "max")) return imp_fail(c, "unknown mode '%s'", mode);
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
  if (ratio > 64) return imp_unsupported_node(c, n, "sampling_ratio %lld (more than 64 samples per bin side)", (long long)ratio);
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
  /* y terms as [R, PH, G, 1, 1], x terms as [R, 1, 1, PW, G] */
  int64_t ys[5] = {nr, ph, ratio, 1, 1}, xs[5] = {nr, 1, 1, pw, ratio}, bs[5] = {nr, 1, 1, 1, 1};
  gir_value **yv[5] = {&ay.low, &ay.high, &ay.wl, &ay.wh, &ay.valid}, **xv[5] = {&axx.low, &axx.high, &axx.wl, &axx.wh, &axx.valid};
  for (int i = 0; i < 5; i++) {
    *yv[i] = imp_reshape(c, *yv[i], 5, ys);
    *xv[i] = imp_reshape(c, *xv[i], 5, xs);
  }
  gir_value *valid = imp_binary(c, GIR_BINARY_AND, ay.valid, axx.valid);
  /* row offsets into X as [N*H*W, C] */
  gir_value *b = imp_cast(c, bi, GIR_I64);
  b = imp_binary(c, GIR_BINARY_MAX, imp_binary(c, GIR_BINARY_MIN, b, imp_scalar(c, GIR_I64, (double)(nb - 1))),
                 imp_scalar(c, GIR_I64, 0));
  b = mul(c, imp_reshape(c, b, 5, bs), imp_scalar(c, GIR_I64, (double)(h * w)));
  gir_value *yo[2] = {flat_offset(c, ay.low, h - 1, w), flat_offset(c, ay.high, h - 1, w)};
  gir_value *xo[2] = {flat_offset(c, axx.low, w - 1, 1), flat_offset(c, axx.high, w - 1, 1)};
  gir_value *wy[2] = {ay.wl, ay.wh}, *wx[2] = {axx.wl, axx.wh};
  int64_t perm_in[4] = {0, 2, 3, 1}, rows[2] = {nb * h * w, ch};
  gir_value *xcl = imp_reshape(c, imp_transpose(c, imp_cast(c, x, ft), perm_in), 2, rows);
  int64_t ws6[6] = {nr, ph, ratio, pw, ratio, 1};
  gir_value *acc = NULL;
  for (int i = 0; i < 4; i++) {
    gir_value *idx = add(c, b, add(c, yo[i >> 1], xo[i & 1]));
    gir_value *wt = imp_where(c, valid, mul(c, wy[i >> 1], wx[i & 1]), lit(c, ay.wl, 0));
    gir_value *ins[2] = {xcl, idx};
    if (!idx || !wt) return -1;
    gir_node *gn = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
    gir_attr_set_int(c->g, gn, "axis", 0);
    gir_value *v = mul(c, imp_finish(c, gn), imp_reshape(c, wt, 6, ws6)); /* [R, PH, G, PW, G, C] */
    acc = !acc ? v : imp_binary(c, strcmp(mode, "max") ? GIR_BINARY_ADD : GIR_BINARY_MAX, acc, v);
  }
  int64_t axes[2] = {2, 4}, perm_out[4] = {0, 3, 1, 2};
  gir_value *y;
  if (!strcmp(mode, "max")) y = imp_reduce(c, GIR_REDUCE_MAX, acc, axes, 2, 0);
  else y = mulk(c, imp_reduce(c, GIR_REDUCE_SUM, acc, axes, 2, 0), 1.0 / (double)(ratio * ratio));
  return imp_set_output(c, n, 0, imp_cast(c, imp_transpose(c, y, perm_out), x->dtype));
}

/* --- DeformConv --- */

static int spatial_ints(imp_ctx *c, const imp_node *n, const char *name, int k, int64_t def, int64_t *out) {
  int64_t *v;
  int32_t cnt = imp_attr_ints(c, n, name, &v);
  if (c->err->msg[0]) return -1;
  if (cnt < 0) {
    for (int i = 0; i < k; i++) out[i] = def;
    return 0;
  }
  if (cnt != k) return imp_fail(c, "attribute %s needs %d values, has %d", name, k, cnt);
  for (int i = 0; i < k; i++) out[i] = v[i];
  return 0;
}

int imp_cv_DeformConv(imp_ctx *c, imp_node *n) {
  gir_value *x = in_at(n, 0), *wt = in_at(n, 1), *offset = in_at(n, 2), *bias = in_at(n, 3), *mask = in_at(n, 4);
  if (!x || !wt || !offset) return imp_fail(c, "needs X, W and offset");
  int r = x->shape.rank, k = r - 2;
  if (k < 1 || wt->shape.rank != r || offset->shape.rank != r) return imp_fail(c, "X, W and offset need the same rank >= 3");
  if (!gir_dtype_is_float(x->dtype) || wt->dtype != x->dtype || offset->dtype != x->dtype)
    return imp_fail(c, "X, W and offset must share a floating-point type");
  int64_t kern[GIR_MAX_RANK], st[GIR_MAX_RANK], dil[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK];
  if (spatial_ints(c, n, "kernel_shape", k, 0, kern) < 0 || spatial_ints(c, n, "strides", k, 1, st) < 0 ||
      spatial_ints(c, n, "dilations", k, 1, dil) < 0 || spatial_ints(c, n, "pads", 2 * k, 0, pads) < 0)
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
    gir_value *base = gir_const_new(c->g, NULL, ft, &ps, NULL);
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
    if (!pos || make_taps(c, pos, SAMPLE_LINEAR, PAD_ZEROS, x->shape.dims[2 + d], stride[d], 0, 0, &taps[d]) < 0)
      return -1;
  }
  int64_t xg[4] = {nb, og, ch / og, s};
  gir_shape is = {.rank = 4, .dims = {nb, og, ch / og, kt * p}};
  gir_value *v = gather_taps(c, imp_reshape(c, imp_cast(c, x, ft), 4, xg), taps, k, &is);
  if (mask) v = mul(c, v, imp_reshape(c, imp_cast(c, mask, ft), 4, tap_shape));
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
