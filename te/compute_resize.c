/* compute_resize.c — the compute definition of resize. Interpolation is separable:
 * along each axis an output coordinate maps to a source coordinate x (the ONNX
 * coordinate transformation modes, in double precision like the onnx reference),
 * and the result is the weighted sum over the taps of every axis (1 tap for
 * nearest, 2 for linear, 4 for cubic), out-of-range taps reading the edge value.
 * Axes whose mapping is the identity (same size, x = output index for every
 * index — checked here at compile time) read directly and add no taps.
 *
 * A float linear or cubic resize of two or more axes is written as one pass per
 * axis, innermost first: pass k interpolates axis k of the previous pass's result
 * (sum over that axis's taps only), so an output element costs taps(H) + taps(W)
 * loads instead of taps(H) x taps(W), the coordinate math of an axis is computed
 * once per element of the pass that resizes it, and every pass but the first reads
 * whole rows of its input at one index (contiguous vectors; only the innermost
 * axis's pass gathers). The result is the same weighted sum (the weights are
 * products over the axes), summed in double within each pass; the intermediate
 * passes are stages tagged "resize_pass", which the default schedule keeps
 * instead of inlining. Integer outputs (rounded once at the end), nearest and
 * tf_crop_and_resize (extrapolation decided over all axes at once) keep the
 * single stage. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "compute.h"

typedef struct axis_map {
  int identity;
  double scale, out_w, roi0, roi1;
  int64_t in, out;
} axis_map;

/* The source coordinate of output index x (double), as the onnx reference. */
static double x_ori_value(gir_resize_coord mode, const axis_map *a, double x) {
  switch (mode) {
  /* align_corners and tf_crop_and_resize divide by in * scale - 1, as the onnx
   * reference (and so the conformance data) does; ONNX Runtime uses the integer
   * output length instead, which differs when in * scale is not whole */
  case GIR_COORD_ALIGN_CORNERS: return a->out_w == 1 ? 0 : x * (double)(a->in - 1) / (a->out_w - 1);
  case GIR_COORD_ASYMMETRIC: return x / a->scale;
  case GIR_COORD_TF_CROP_AND_RESIZE:
    return (a->out_w == 1 ? (a->roi1 - a->roi0) * (double)(a->in - 1) / 2
                          : x * (a->roi1 - a->roi0) * (double)(a->in - 1) / (a->out_w - 1)) +
           a->roi0 * (double)(a->in - 1);
  case GIR_COORD_PYTORCH_HALF_PIXEL: return a->out_w == 1 ? -0.5 : (x + 0.5) / a->scale - 0.5;
  case GIR_COORD_HALF_PIXEL_SYMMETRIC: {
    double adj = (double)a->out / a->out_w, center = (double)a->in / 2;
    return center * (1 - adj) + (x + 0.5) / a->scale - 0.5;
  }
  default: return (x + 0.5) / a->scale - 0.5;
  }
}

/* The same as a TE expression of the output index variable. */
static te_expr *x_ori_expr(te_ctx *c, gir_resize_coord mode, const axis_map *a, te_var *v) {
  te_expr *x = te_cast(c, GIR_F64, te_v(c, v));
#define K(val) te_const(c, GIR_F64, (val))
  switch (mode) {
  case GIR_COORD_ALIGN_CORNERS:
    return a->out_w == 1 ? K(0) : te_mul(c, x, K((double)(a->in - 1) / (a->out_w - 1)));
  case GIR_COORD_ASYMMETRIC: return te_div(c, x, K(a->scale));
  case GIR_COORD_TF_CROP_AND_RESIZE:
    if (a->out_w == 1) return K(x_ori_value(mode, a, 0));
    return te_add(c, te_mul(c, x, K((a->roi1 - a->roi0) * (double)(a->in - 1) / (a->out_w - 1))),
                  K(a->roi0 * (double)(a->in - 1)));
  case GIR_COORD_PYTORCH_HALF_PIXEL:
    if (a->out_w == 1) return K(-0.5);
    /* fall through */
  case GIR_COORD_HALF_PIXEL: return te_sub(c, te_div(c, te_add(c, x, K(0.5)), K(a->scale)), K(0.5));
  case GIR_COORD_HALF_PIXEL_SYMMETRIC: {
    double adj = (double)a->out / a->out_w, center = (double)a->in / 2;
    return te_add(c, K(center * (1 - adj)), te_sub(c, te_div(c, te_add(c, x, K(0.5)), K(a->scale)), K(0.5)));
  }
  default: return x;
  }
#undef K
}

/* A nearest resize's source index for output index k, as the TE expression below
 * computes it: the coordinate in double with x_ori_expr's operations in its order, then
 * floor and the nearest mode's rounding, clamped to the input. -1: a mode whose
 * arithmetic a fused multiply-add could change (tf_crop_and_resize), not modelled. */
static int64_t nearest_index(gir_resize_coord coord, gir_nearest_mode nmode, const axis_map *a, int64_t k) {
  double x = (double)k, xo;
  switch (coord) {
  case GIR_COORD_ALIGN_CORNERS: xo = a->out_w == 1 ? 0 : x * ((double)(a->in - 1) / (a->out_w - 1)); break;
  case GIR_COORD_ASYMMETRIC: xo = x / a->scale; break;
  case GIR_COORD_TF_CROP_AND_RESIZE: return -1;
  case GIR_COORD_PYTORCH_HALF_PIXEL: xo = a->out_w == 1 ? -0.5 : (x + 0.5) / a->scale - 0.5; break;
  case GIR_COORD_HALF_PIXEL_SYMMETRIC: {
    double adj = (double)a->out / a->out_w, center = (double)a->in / 2;
    xo = center * (1 - adj) + ((x + 0.5) / a->scale - 0.5);
    break;
  }
  case GIR_COORD_HALF_PIXEL: xo = (x + 0.5) / a->scale - 0.5; break;
  default: xo = x;
  }
  if (!(fabs(xo) < 1e15)) return -1; /* NaN or out of int64's exact doubles */
  double f = floor(xo), ratio = xo - f;
  int up;
  switch (nmode) {
  case GIR_NEAREST_FLOOR: up = 0; break;
  case GIR_NEAREST_CEIL: up = ratio > 0; break;
  case GIR_NEAREST_ROUND_PREFER_CEIL: up = ratio >= 0.5; break;
  default: up = ratio > 0.5; break;
  }
  int64_t i = (int64_t)f + up;
  return i < 0 ? 0 : i > a->in - 1 ? a->in - 1 : i;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* A nearest resize's source index as integer arithmetic: when every output index k
 * maps to clamp(floor((p·k + q) / d)) with p / d the ratio of the sizes reduced (or of
 * the sizes less one: align_corners), or twice that (a rounding mode's half step), d up
 * to 128 and |q| up to 2d + p — integer scales and most rational ones, every
 * coordinate mode but tf_crop_and_resize — checked against nearest_index for every k
 * at compile time. The double coordinate costs a
 * vector loop an int64 <-> double conversion per lane, which x86 has as an instruction
 * only with AVX-512DQ: on AVX2 (AMD Zen 3) a 2x nearest upsample of 64 x 56 x 56 ran
 * 2.1 ms on one core, 0.075 ms with integer indices. NULL: no such form (the caller
 * keeps the double expression). */
static te_expr *nearest_affine(te_ctx *c, gir_resize_coord coord, gir_nearest_mode nmode, const axis_map *a,
                               te_var *v) {
  if (a->in < 1 || a->out < 1 || a->out > ((int64_t)1 << 24) || a->in > ((int64_t)1 << 24)) return NULL;
  int64_t *want = malloc((size_t)a->out * sizeof *want);
  if (!want) return NULL;
  int ok = 1;
  for (int64_t k = 0; k < a->out && ok; k++) ok = (want[k] = nearest_index(coord, nmode, a, k)) >= 0;
  int64_t found = INT64_MIN, fp = 0, fd = 1;
  int clamp = 0;
  for (int fam = 0; fam < 4 && ok && found == INT64_MIN; fam++) {
    /* the ratio, then twice it unreduced (a rounding mode's half step) */
    int64_t num = fam & 1 ? a->in - 1 : a->in, den = fam & 1 ? a->out - 1 : a->out;
    if (num < 1 || den < 1) continue;
    int64_t g = gcd64(num, den), p = num / g * (fam < 2 ? 1 : 2), d = den / g * (fam < 2 ? 1 : 2);
    if (d > 128 || p > 4096) continue;
    for (int64_t q = -(2 * d + p); q <= 2 * d + p && found == INT64_MIN; q++) {
      int match = 1, clamped = 0;
      for (int64_t k = 0; k < a->out && match; k++) {
        int64_t t = p * k + q, f = t >= 0 ? t / d : -((-t + d - 1) / d); /* floor */
        int64_t i = f < 0 ? 0 : f > a->in - 1 ? a->in - 1 : f;
        clamped |= i != f;
        match = i == want[k];
      }
      if (match) {
        found = q;
        fp = p;
        fd = d;
        clamp = clamped;
      }
    }
  }
  free(want);
  if (found == INT64_MIN) return NULL;
  te_expr *e = te_add(c, te_mul(c, te_v(c, v), te_int(c, fp)), te_int(c, found));
  if (fd != 1) e = te_bin(c, TE_FLOORDIV, e, te_int(c, fd));
  return clamp ? lower_clamp(c, e, 0, a->in - 1) : e;
}

static te_expr *cubic_coeff(te_ctx *c, te_expr *r, int j, double A) {
  /* j = 0..3: taps at floor-1, floor, floor+1, floor+2 (the onnx reference's formulas) */
  te_expr *one = te_const(c, GIR_F64, 1);
  te_expr *t;
  switch (j) {
  case 0: t = te_add(c, r, one); break;
  case 1: t = r; break;
  case 2: t = te_sub(c, one, r); break;
  default: t = te_add(c, te_sub(c, one, r), one); break;
  }
  te_expr *a = te_const(c, GIR_F64, A);
  if (j == 1 || j == 2) /* ((A + 2) t - (A + 3)) t t + 1 */
    return te_add(c, te_mul(c, te_mul(c, te_sub(c, te_mul(c, te_const(c, GIR_F64, A + 2), t), te_const(c, GIR_F64, A + 3)), t), t), one);
  /* ((A t - 5A) t + 8A) t - 4A */
  return te_sub(c, te_mul(c, te_add(c, te_mul(c, te_sub(c, te_mul(c, a, t), te_const(c, GIR_F64, 5 * A)), t), te_const(c, GIR_F64, 8 * A)), t),
                te_const(c, GIR_F64, 4 * A));
}

/* A table over an axis's out output indices: e (an expression of k) as a kept stage
 * of its own, on a fresh axis. */
static te_tensor *tap_table(te_ctx *c, const gir_node *n, gir_dtype t, int64_t out, te_var *k, te_expr *e) {
  te_var *kt;
  te_axes(c, 1, &out, &kt);
  te_expr *kv = te_v(c, kt);
  te_tensor *tab = te_compute(c, n->name, t, 1, &out, &kt, te_subst(c, e, &k, &kv, 1));
  tab->tag = "resize_pass";
  tab->origin = n;
  return tab;
}

/* The taps of a linear or cubic axis at output index v: clamped source indices
 * and their double weights (normalized over the in-range taps with exclude).
 * They depend on the axis's output index alone, so each tap's index and weight
 * are a table over that index, a stage of its own ("resize_pass", kept: computed
 * once per run, out entries) that the interpolation reads at v. Computed inline
 * they cost every output element an int64 <-> double conversion per lane, which
 * x86 has only with AVX-512DQ: on an AVX2 CPU the innermost axis's pass of a
 * bilinear 128 x 32 x 32 -> 64 x 64 spent ~1 ms of 1.3 there (AMD EPYC Zen 3). */
static void interp_taps(te_ctx *c, const gir_node *n, gir_resize_coord coord, const axis_map *a, te_var *v,
                        int taps, double A, int exclude, te_expr **idx, te_expr **w) {
  te_var *k;
  te_axes(c, 1, &a->out, &k);
  te_expr *xo = x_ori_expr(c, coord, a, k);
  te_expr *f = te_un(c, TE_FLOOR, xo), *ratio = te_sub(c, xo, f);
  te_expr *fi = te_cast(c, GIR_I64, f), *raw[4], *pos[4];
  int first = taps == 2 ? 0 : -1;
  for (int j = 0; j < taps; j++) {
    pos[j] = te_add(c, fi, te_int(c, first + j));
    raw[j] = taps == 2 ? (j ? ratio : te_sub(c, te_const(c, GIR_F64, 1), ratio)) : cubic_coeff(c, ratio, j, A);
    if (exclude) raw[j] = te_select(c, te_in_range(c, pos[j], a->in), raw[j], te_const(c, GIR_F64, 0));
  }
  te_expr *sum = raw[0];
  for (int j = 1; exclude && j < taps; j++) sum = te_add(c, sum, raw[j]);
  te_expr *at = te_v(c, v);
  for (int j = 0; j < taps; j++) {
    /* the clamped index lies in [0, in): int32 */
    te_tensor *ti = tap_table(c, n, GIR_I32, a->out, k, te_cast(c, GIR_I32, lower_clamp(c, pos[j], 0, a->in - 1)));
    te_tensor *tw = tap_table(c, n, GIR_F64, a->out, k, exclude ? te_div(c, raw[j], sum) : raw[j]);
    idx[j] = te_cast(c, GIR_I64, te_load(c, ti, &at));
    w[j] = te_load(c, tw, &at);
  }
}

/* One pass per resized axis, innermost first (see the top of the file). */
static int resize_separable(te_ctx *c, const gir_node *n, te_tensor *x, const axis_map *am, gir_resize_coord coord,
                            int taps, double A, int exclude, te_tensor **out) {
  int r = x->rank, last = 0; /* the outermost resized axis: its pass makes the node's output */
  for (int k = 0; k < r; k++)
    if (!am[k].identity) {
      last = k;
      break;
    }
  te_tensor *cur = x;
  for (int k = r - 1; k >= 0; k--) {
    if (am[k].identity) continue;
    int64_t shape[GIR_MAX_RANK];
    for (int d = 0; d < r; d++) shape[d] = cur->shape[d];
    shape[k] = am[k].out;
    te_var *ax[GIR_MAX_RANK];
    if (k == last) lower_out_axes(c, n, 0, ax);
    else te_axes(c, r, shape, ax);
    te_expr *tidx[4], *tw[4], *acc = NULL;
    interp_taps(c, n, coord, &am[k], ax[k], taps, A, exclude, tidx, tw);
    for (int j = 0; j < taps; j++) {
      te_expr *idx[GIR_MAX_RANK];
      for (int d = 0; d < r; d++) idx[d] = te_v(c, ax[d]);
      idx[k] = tidx[j];
      te_expr *term = te_mul(c, tw[j], te_cast(c, GIR_F64, te_load(c, cur, idx)));
      acc = acc ? te_add(c, acc, term) : term;
    }
    if (k == last) {
      out[0] = lower_stage(c, n, 0, ax, te_cast(c, n->out[0]->dtype, acc));
      return 0;
    }
    cur = te_compute(c, n->name, x->dtype, r, shape, ax, te_cast(c, x->dtype, acc));
    cur->tag = "resize_pass";
    cur->origin = n;
  }
  return -1; /* unreachable: the caller checked that at least two axes move */
}

int lower_compute_resize(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  int r = x->rank;
  int32_t cnt;
  const int64_t *sizes = gir_attr_ints(n, "sizes", &cnt);
  const double *scales = gir_attr_floats(n, "scales", &cnt);
  const double *roi = gir_attr_floats(n, "roi", &cnt);
  int has_roi = cnt == 2 * r;
  gir_resize_mode mode = (gir_resize_mode)gir_attr_int(n, "mode", GIR_RESIZE_NEAREST);
  gir_resize_coord coord = (gir_resize_coord)gir_attr_int(n, "coord", GIR_COORD_HALF_PIXEL);
  gir_nearest_mode nmode = (gir_nearest_mode)gir_attr_int(n, "nearest", GIR_NEAREST_ROUND_PREFER_FLOOR);
  double A = gir_attr_float(n, "cubic_a", -0.75), extrap = gir_attr_float(n, "extrapolation", 0);
  int exclude = (int)gir_attr_int(n, "exclude", 0);
  axis_map am[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) {
    axis_map *a = &am[i];
    a->in = x->shape[i];
    a->out = sizes[i];
    a->scale = scales[i];
    a->out_w = scales[i] * (double)x->shape[i];
    a->roi0 = has_roi ? roi[i] : 0;
    a->roi1 = has_roi ? roi[i + r] : 1;
    a->identity = a->in == a->out;
    for (int64_t k = 0; a->identity && k < a->out; k++) a->identity = x_ori_value(coord, a, (double)k) == (double)k;
  }
  int taps = mode == GIR_RESIZE_NEAREST ? 1 : mode == GIR_RESIZE_LINEAR ? 2 : 4;
  int moving = 0;
  for (int i = 0; i < r; i++) moving += !am[i].identity;
  gir_dtype t = n->out[0]->dtype;
  if (taps > 1 && coord != GIR_COORD_TF_CROP_AND_RESIZE && (t == GIR_F32 || t == GIR_F64) && x->dtype == t &&
      moving >= 2)
    return resize_separable(c, n, x, am, coord, taps, A, exclude, out);
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  /* per axis: tap index expressions and weights */
  te_expr *tidx[GIR_MAX_RANK][4], *tw[GIR_MAX_RANK][4], *outside = NULL;
  int ntap[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) {
    if (am[i].identity) {
      ntap[i] = 1;
      tidx[i][0] = te_v(c, ax[i]);
      tw[i][0] = NULL;
      continue;
    }
    if (mode == GIR_RESIZE_NEAREST && (tidx[i][0] = nearest_affine(c, coord, nmode, &am[i], ax[i]))) {
      ntap[i] = 1;
      tw[i][0] = NULL;
      continue;
    }
    te_expr *xo = x_ori_expr(c, coord, &am[i], ax[i]);
    if (coord == GIR_COORD_TF_CROP_AND_RESIZE) {
      te_expr *o = te_bin(c, TE_OR, te_lt(c, xo, te_const(c, GIR_F64, 0)),
                          te_bin(c, TE_GT, xo, te_const(c, GIR_F64, (double)(am[i].in - 1))));
      outside = outside ? te_bin(c, TE_OR, outside, o) : o;
    }
    te_expr *f = te_un(c, TE_FLOOR, xo), *ratio = te_sub(c, xo, f);
    te_expr *fi = te_cast(c, GIR_I64, f);
    if (mode == GIR_RESIZE_NEAREST) {
      te_expr *up;
      te_expr *nonint = te_bin(c, TE_GT, ratio, te_const(c, GIR_F64, 0));
      switch (nmode) {
      case GIR_NEAREST_FLOOR: up = te_const(c, GIR_BOOL, 0); break;
      case GIR_NEAREST_CEIL: up = nonint; break;
      case GIR_NEAREST_ROUND_PREFER_CEIL: up = te_ge(c, ratio, te_const(c, GIR_F64, 0.5)); break;
      default: up = te_bin(c, TE_GT, ratio, te_const(c, GIR_F64, 0.5)); break;
      }
      ntap[i] = 1;
      tidx[i][0] = lower_clamp(c, te_select(c, up, te_add(c, fi, te_int(c, 1)), fi), 0, am[i].in - 1);
      tw[i][0] = NULL;
      continue;
    }
    ntap[i] = taps;
    interp_taps(c, n, coord, &am[i], ax[i], taps, A, exclude, tidx[i], tw[i]);
  }
  /* sum over the cartesian product of taps */
  int total = 1;
  for (int i = 0; i < r; i++) total *= ntap[i];
  te_expr *acc = NULL;
  for (int t = 0; t < total; t++) {
    int rem = t;
    te_expr *idx[GIR_MAX_RANK], *wt = NULL;
    for (int i = r - 1; i >= 0; i--) {
      int j = rem % ntap[i];
      rem /= ntap[i];
      idx[i] = tidx[i][j];
      if (tw[i][j]) wt = wt ? te_mul(c, wt, tw[i][j]) : tw[i][j];
    }
    te_expr *v = te_cast(c, GIR_F64, te_load(c, x, idx));
    te_expr *term = wt ? te_mul(c, wt, v) : v;
    acc = acc ? te_add(c, acc, term) : term;
  }
  if (outside) acc = te_select(c, outside, te_const(c, GIR_F64, extrap), acc);
  if (!gir_dtype_is_float(t) && mode != GIR_RESIZE_NEAREST) acc = te_un(c, TE_ROUND, acc);
  out[0] = lower_stage(c, n, 0, ax, te_cast(c, t, acc));
  return 0;
}
