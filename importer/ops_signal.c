/* ops_signal.c — signal processing and small linear algebra, decomposed into
 * canonical ops because shapes are static:
 *
 * - DFT and STFT are dense matrix products. The DFT along one axis is linear in
 *   the (real, imaginary) samples, so it is one matmul with a constant matrix of
 *   cosines and sines computed here in double precision: row (j, part) of the
 *   matrix is input sample j's real or imaginary part, column (k, part) output
 *   bin k's. dft_length truncation drops rows, zero padding needs none, onesided
 *   output keeps the first n/2+1 columns, and an inverse onesided transform
 *   (irfft) folds the Hermitian symmetry into the rows. STFT gathers its frames
 *   with constant indices and reuses the same matrix, with a constant window
 *   folded into it (a window computed at run time multiplies the frames).
 * - HannWindow, HammingWindow and BlackmanWindow are constants (their size must
 *   be known at import, it is their output shape).
 * - Det expands cofactors along the rows, sharing every minor of the lower rows
 *   (n * 2^(n-1) multiplications); fine for the small matrices models hold.
 * - Col2Im is a grouped conv_transpose with one-hot weights: each column channel
 *   (c, block offset b) adds into image channel c at offset b.
 * - MaxUnpool scatters the values into a flat zero tensor of the inferred shape,
 *   then pads to output_shape (the onnx reference: indices address the inferred
 *   shape, the result is placed at its top-left corner).
 *
 * Numbers follow the onnx reference implementation (onnx/reference/ops). */
#include <math.h>
#include <string.h>
#include "ops.h"

/* Dense matrices above this many elements are refused rather than built. */
#define MAX_MATRIX_ELEMS (1ll << 24)
#define MAX_DET_N 6
#define TWO_PI 6.283185307179586476925286766559


/* float16/bfloat16 compute in float32; float64 stays float64. */
static gir_dtype calc_type(gir_dtype t) { return t == GIR_F64 ? GIR_F64 : GIR_F32; }

/* A scalar integer input that must be known at import. */
static int const_scalar_int(imp_ctx *c, const gir_value *v, const char *what, int64_t *out) {
  int32_t cnt;
  int64_t *vals = imp_const_ints(c, v, what, &cnt);
  if (!vals) return -1;
  if (cnt != 1) return imp_fail(c, "%s must hold one value, has %d", what, cnt);
  *out = vals[0];
  return 0;
}

/* --- the DFT matrix --- */

typedef enum { DFT_FORWARD, DFT_INVERSE, DFT_IRFFT } dft_kind;

typedef struct dft_plan {
  dft_kind kind;
  int64_t rows;      /* input samples along the axis */
  int cin;           /* 1: real input, 2: complex */
  int64_t n;         /* dft_length */
  int64_t cols;      /* output bins */
  const double *win; /* weight of each input sample (STFT window), or NULL */
} dft_plan;

static int64_t dft_cout(const dft_plan *p) { return p->kind == DFT_IRFFT ? 1 : 2; }

/* [rows*cin, cols*cout] constant of type ft. */
static gir_value *dft_matrix(imp_ctx *c, gir_dtype ft, const dft_plan *p) {
  int64_t cout = dft_cout(p), nr = p->rows * p->cin, nc = p->cols * cout, n = p->n;
  gir_shape s = {.rank = 2, .dims = {nr, nc}};
  gir_value *m = imp_const_new(c, ft, &s, NULL, "DFT matrix");
  if (!m) return NULL;
  double sign = p->kind == DFT_FORWARD ? -1.0 : 1.0, scale = p->kind == DFT_FORWARD ? 1.0 : 1.0 / (double)n;
  int64_t used = p->rows < n ? p->rows : n;
  if (p->kind == DFT_IRFFT && used > n / 2 + 1) used = n / 2 + 1;
  for (int64_t j = 0; j < used; j++) {
    /* irfft: bins 1..ceil(n/2)-1 stand for themselves and their mirror image;
     * the imaginary parts of bin 0 and of the Nyquist bin do not contribute */
    int edge = j == 0 || (n % 2 == 0 && j == n / 2);
    double w = scale * (p->win ? p->win[j] : 1.0) * (p->kind == DFT_IRFFT && !edge ? 2.0 : 1.0);
    for (int64_t k = 0; k < p->cols; k++) {
      double th = TWO_PI * (double)((j * k) % n) / (double)n;
      double cs = cos(th) * w, sn = sin(th) * w;
      int64_t r0 = j * p->cin * nc, r1 = r0 + nc;
      if (p->kind == DFT_IRFFT) {
        gir_store_f64(ft, m->data, r0 + k, cs);
        if (p->cin == 2) gir_store_f64(ft, m->data, r1 + k, edge ? 0.0 : -sn);
        continue;
      }
      /* (xr + i xi)(cos + i sign sin) */
      gir_store_f64(ft, m->data, r0 + 2 * k, cs);
      gir_store_f64(ft, m->data, r0 + 2 * k + 1, sign * sn);
      if (p->cin == 2) {
        gir_store_f64(ft, m->data, r1 + 2 * k, -sign * sn);
        gir_store_f64(ft, m->data, r1 + 2 * k + 1, cs);
      }
    }
  }
  return m;
}

static int check_matrix_size(imp_ctx *c, const imp_node *n, const dft_plan *p) {
  if (p->n > (1 << 24) || p->rows > (1 << 24) || p->rows * p->cin * p->cols * dft_cout(p) > MAX_MATRIX_ELEMS)
    return imp_unsupported_node(c, n, "transform of length %lld over %lld samples: the dense DFT matrix would exceed "
                                "%lld elements", (long long)p->n, (long long)p->rows, MAX_MATRIX_ELEMS);
  return 0;
}

/* Applies the plan along axis a of x (last dim: the cin parts), giving
 * x's shape with cols at a and cout parts last, in x's element type. */
static gir_value *dft_apply(imp_ctx *c, gir_value *x, int a, const dft_plan *p) {
  int r = x->shape.rank;
  gir_dtype ft = calc_type(x->dtype);
  /* move the signal axis next to the parts: [others..., rows, cin] */
  int64_t perm[GIR_MAX_RANK], inv[GIR_MAX_RANK], other[GIR_MAX_RANK], m = 1;
  int k = 0;
  for (int i = 0; i < r - 1; i++)
    if (i != a) perm[k++] = i;
  perm[k++] = a;
  perm[k++] = r - 1;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  for (int i = 0; i < r - 2; i++) m *= (other[i] = x->shape.dims[perm[i]]);
  gir_value *xt = imp_transpose(c, imp_cast(c, x, ft), perm);
  int64_t flat[2] = {m, p->rows * p->cin};
  gir_value *y = imp_matmul(c, imp_reshape(c, xt, 2, flat), dft_matrix(c, ft, p));
  other[r - 2] = p->cols;
  other[r - 1] = dft_cout(p);
  y = imp_reshape(c, y, r, other);
  return imp_cast(c, imp_transpose(c, y, inv), x->dtype);
}

int imp_cv_DFT(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (n->opset < 17) return imp_unsupported_node(c, n, "DFT before opset 17");
  if (!gir_dtype_is_float(x->dtype))
    return imp_fail(c, "input must be floating point, is %s", gir_dtype_name(x->dtype));
  int r = x->shape.rank;
  int64_t parts = r ? x->shape.dims[r - 1] : 0;
  if (r < 2 || (parts != 1 && parts != 2))
    return imp_fail(c, "input must have rank >= 2 and a last dimension of 1 (real) or 2 (complex)");
  int64_t axis = n->opset >= 20 ? -2 : imp_attr_int(n, "axis", 1);
  if (n->opset >= 20 && imp_in(n, 2) && const_scalar_int(c, imp_in(n, 2), "input 'axis'", &axis) < 0) return -1;
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r - 2) return imp_fail(c, "axis must name a signal dimension (not the last), rank is %d", r);
  int inverse = imp_attr_int(n, "inverse", 0) != 0, onesided = imp_attr_int(n, "onesided", 0) != 0;
  int64_t len = x->shape.dims[axis], dl = inverse && onesided ? 2 * (len - 1) : len;
  if (imp_in(n, 1) && const_scalar_int(c, imp_in(n, 1), "input 'dft_length'", &dl) < 0) return -1;
  if (dl < 1) return imp_fail(c, "dft_length must be positive, is %lld", (long long)dl);
  dft_plan p = {.rows = len, .cin = (int)parts, .n = dl, .cols = dl};
  if (inverse && onesided)
    p.kind = DFT_IRFFT;
  else if (inverse)
    p.kind = DFT_INVERSE;
  else {
    p.kind = DFT_FORWARD;
    if (onesided) p.cols = dl / 2 + 1;
  }
  int rc = check_matrix_size(c, n, &p);
  if (rc) return rc;
  return imp_set_output(c, n, 0, dft_apply(c, x, (int)axis, &p));
}

int imp_cv_STFT(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *win = imp_in(n, 2);
  if (!x) return imp_fail(c, "needs an input");
  if (!gir_dtype_is_float(x->dtype))
    return imp_fail(c, "signal must be floating point, is %s", gir_dtype_name(x->dtype));
  if (x->shape.rank != 3 || (x->shape.dims[2] != 1 && x->shape.dims[2] != 2))
    return imp_fail(c, "signal must be [batch, length, 1 or 2]");
  int64_t step = 0, len = x->shape.dims[1], fl = len, ws;
  if (const_scalar_int(c, imp_in(n, 1), "input 'frame_step'", &step) < 0) return -1;
  if (win && win->shape.rank != 1) return imp_fail(c, "window must have rank 1");
  if (win) fl = win->shape.dims[0];
  if (imp_in(n, 3) && const_scalar_int(c, imp_in(n, 3), "input 'frame_length'", &fl) < 0) return -1;
  ws = win ? win->shape.dims[0] : fl;
  if (step < 1 || fl < 1 || ws < 1) return imp_fail(c, "frame_step, frame_length and the window must be positive");
  if (fl > len) return imp_fail(c, "frame_length %lld is longer than the signal (%lld)", (long long)fl, (long long)len);
  int64_t frames = 1 + (len - fl) / step, need = (frames - 1) * step + ws;
  dft_plan p = {.kind = DFT_FORWARD, .rows = ws, .cin = (int)x->shape.dims[2], .n = fl, .cols = fl};
  if (imp_attr_int(n, "onesided", 1)) p.cols = fl / 2 + 1;
  int rc = check_matrix_size(c, n, &p);
  if (rc) return rc;
  if (frames > MAX_MATRIX_ELEMS / ws)
    return imp_unsupported_node(c, n, "%lld frames of %lld samples", (long long)frames, (long long)ws);
  /* frames: gather rows f*step + j of the signal, zero-padded at the end when
   * the window reaches past it */
  gir_value *sig = x;
  if (need > len) {
    int64_t pads[6] = {0, 0, 0, 0, need - len, 0};
    gir_node *pn = imp_new_node(c, GIR_OP_pad, &sig, 1, 1);
    gir_attr_set_ints(c->g, pn, "pads", pads, 6);
    gir_attr_set_int(c->g, pn, "mode", GIR_PAD_CONSTANT);
    gir_attr_set_float(c->g, pn, "value", 0.0);
    if (!(sig = imp_finish(c, pn))) return -1;
  }
  gir_shape is = {.rank = 2, .dims = {frames, ws}};
  gir_value *idx = imp_const_new(c, GIR_I64, &is, NULL, "frame indices");
  if (!idx) return -1;
  for (int64_t f = 0; f < frames; f++)
    for (int64_t j = 0; j < ws; j++) ((int64_t *)idx->data)[f * ws + j] = f * step + j;
  gir_value *ins[2] = {sig, idx};
  gir_node *gn = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
  gir_attr_set_int(c->g, gn, "axis", 1);
  gir_value *fr = imp_finish(c, gn); /* [batch, frames, ws, parts] */
  if (!fr) return -1;
  if (win && win->data) { /* a constant window is folded into the matrix */
    double *w = imp_scratch(c, ws, sizeof *w, "window");
    if (!w) return -1;
    for (int64_t j = 0; j < ws; j++) w[j] = gir_load_f64(win->dtype, win->data, j);
    p.win = w;
  } else if (win) {
    int64_t ws4[4] = {1, 1, ws, 1};
    fr = imp_binary(c, GIR_BINARY_MUL, fr, imp_reshape(c, imp_cast(c, win, x->dtype), 4, ws4));
  }
  return imp_set_output(c, n, 0, dft_apply(c, fr, 2, &p));
}

/* --- window functions: a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N) --- */

int imp_cv_window(imp_ctx *c, imp_node *n) {
  double a0, a1, a2 = 0.0;
  if (!strcmp(n->op_type, "HannWindow")) a0 = a1 = 0.5;
  else if (!strcmp(n->op_type, "HammingWindow")) {
    a0 = 25.0 / 46.0;
    a1 = 21.0 / 46.0;
  } else {
    a0 = 0.42;
    a1 = 0.5;
    a2 = 0.08;
  }
  int64_t size;
  if (const_scalar_int(c, imp_in(n, 0), "input 'size'", &size) < 0) return -1;
  if (size < 0 || size > MAX_MATRIX_ELEMS) return imp_fail(c, "size %lld is out of range", (long long)size);
  int64_t code = imp_attr_int(n, "output_datatype", 1);
  gir_dtype t = gir_dtype_from_onnx((int32_t)code);
  if (t == GIR_DTYPE_NONE) return imp_fail(c, "output_datatype: unknown element type code %lld", (long long)code);
  if (!gir_dtype_first_class(t) || t == GIR_BOOL)
    return imp_unsupported_node(c, n, "output type %s", gir_dtype_name(t));
  /* symmetric windows of size 1 divide 0 by 0, as the reference does: NaN */
  double period = (double)(imp_attr_int(n, "periodic", 1) ? size : size - 1);
  gir_shape s = {.rank = 1, .dims = {size}};
  gir_value *y = imp_const_new(c, t, &s, NULL, "window");
  if (!y) return -1;
  for (int64_t k = 0; k < size; k++) {
    double th = TWO_PI * (double)k / period;
    gir_store_f64(t, y->data, k, a0 - a1 * cos(th) + a2 * cos(2.0 * th));
  }
  return imp_set_output(c, n, 0, y);
}

/* --- Det: cofactor expansion with shared minors --- */

int imp_cv_Det(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (!gir_dtype_is_float(x->dtype))
    return imp_fail(c, "input must be floating point, is %s", gir_dtype_name(x->dtype));
  int r = x->shape.rank;
  if (r < 2 || x->shape.dims[r - 1] != x->shape.dims[r - 2]) return imp_fail(c, "input must be [..., M, M]");
  int64_t m = x->shape.dims[r - 1], batch = 1;
  if (m > MAX_DET_N)
    return imp_unsupported_node(c, n, "%lldx%lld matrices: the unrolled cofactor expansion stops at %dx%d",
                                (long long)m, (long long)m, MAX_DET_N, MAX_DET_N);
  for (int i = 0; i < r - 2; i++) batch *= x->shape.dims[i];
  gir_dtype ft = calc_type(x->dtype);
  int64_t flat[2] = {batch, m * m};
  gir_value *xf = imp_reshape(c, imp_cast(c, x, ft), 2, flat), *e[MAX_DET_N * MAX_DET_N];
  for (int i = 0; i < m * m; i++) e[i] = imp_slice_axis(c, xf, 1, i, 1, 1);
  /* minor[mask]: determinant of rows m-popcount(mask).. and the columns in mask */
  gir_value *minor[1 << MAX_DET_N] = {0};
  minor[0] = imp_scalar(c, ft, 1.0);
  for (int mask = 1; mask < (1 << m); mask++) {
    int row = (int)m - __builtin_popcount((unsigned)mask), t = 0;
    gir_value *acc = NULL;
    for (int j = 0; j < m; j++) {
      if (!(mask >> j & 1)) continue;
      gir_value *term = imp_binary(c, GIR_BINARY_MUL, e[row * m + j], minor[mask & ~(1 << j)]);
      acc = !acc ? term : imp_binary(c, t % 2 ? GIR_BINARY_SUB : GIR_BINARY_ADD, acc, term);
      t++;
    }
    minor[mask] = acc;
  }
  gir_value *d = minor[(1 << m) - 1];
  gir_shape bs = {.rank = r - 2};
  for (int i = 0; i < r - 2; i++) bs.dims[i] = x->shape.dims[i];
  if (m == 0) return imp_set_output(c, n, 0, imp_broadcast_to(c, imp_scalar(c, x->dtype, 1.0), &bs));
  return imp_set_output(c, n, 0, imp_cast(c, imp_reshape(c, d, bs.rank, bs.dims), x->dtype));
}

/* --- Col2Im --- */

int imp_cv_Col2Im(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int32_t k, kb;
  int64_t *img = imp_const_ints(c, imp_in(n, 1), "input 'image_shape'", &k), *blk;
  if (!img || !(blk = imp_const_ints(c, imp_in(n, 2), "input 'block_shape'", &kb))) return -1;
  if (k < 1 || k != kb || k + 2 > GIR_MAX_RANK) return imp_fail(c, "image_shape and block_shape need the same length");
  if (x->shape.rank != 3) return imp_fail(c, "input must be [N, C * prod(block_shape), L]");
  int64_t dil[GIR_MAX_RANK], st[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK], opad[GIR_MAX_RANK], bsz = 1, nblocks = 1;
  if (imp_spatial_ints(c, n, "dilations", k, 1, dil, NULL) < 0 ||
      imp_spatial_ints(c, n, "strides", k, 1, st, NULL) < 0 ||
      imp_spatial_ints(c, n, "pads", 2 * k, 0, pads, NULL) < 0)
    return -1;
  gir_shape xs = {.rank = k + 2, .dims = {x->shape.dims[0], x->shape.dims[1]}};
  for (int i = 0; i < k; i++) {
    if (img[i] < 1 || blk[i] < 1 || dil[i] < 1 || st[i] < 1 || pads[i] < 0 || pads[i + k] < 0 || blk[i] > (1 << 20) ||
        img[i] > (1 << 30) || dil[i] > (1 << 20) || st[i] > (1 << 20) || pads[i] > (1 << 20) || pads[i + k] > (1 << 20))
      return imp_fail(c, "image_shape, block_shape, dilations, strides or pads out of range on axis %d", i);
    int64_t span = dil[i] * (blk[i] - 1) + 1, room = img[i] + pads[i] + pads[i + k] - span;
    if (room < 0) return imp_fail(c, "block larger than the padded image on axis %d", i);
    xs.dims[2 + i] = room / st[i] + 1;
    opad[i] = room % st[i]; /* image rows past the last block stay zero */
    bsz *= blk[i];
    nblocks *= xs.dims[2 + i];
    if (bsz > (1 << 20) || nblocks > (1ll << 40)) return imp_fail(c, "block or image too large");
  }
  if (x->shape.dims[1] % bsz)
    return imp_fail(c, "input channels are not a multiple of prod(block_shape) = %lld", (long long)bsz);
  if (x->shape.dims[2] != nblocks)
    return imp_fail(c, "input has %lld blocks, the image and block shapes give %lld", (long long)x->shape.dims[2],
                    (long long)nblocks);
  int64_t ch = x->shape.dims[1] / bsz;
  if (ch < 1) return imp_fail(c, "input has no channels");
  if (x->shape.dims[1] * bsz > MAX_MATRIX_ELEMS)
    return imp_unsupported_node(c, n, "one-hot kernel of %lld weights", (long long)(x->shape.dims[1] * bsz));
  gir_dtype ft = gir_dtype_is_float(x->dtype) ? x->dtype : GIR_F32;
  gir_shape ws = {.rank = k + 2, .dims = {x->shape.dims[1], 1}};
  for (int i = 0; i < k; i++) ws.dims[2 + i] = blk[i];
  gir_value *w = imp_const_new(c, ft, &ws, NULL, "one-hot kernel");
  if (!w) return -1;
  for (int64_t ci = 0; ci < x->shape.dims[1]; ci++) gir_store_f64(ft, w->data, ci * bsz + ci % bsz, 1.0);
  gir_value *ins[2] = {imp_reshape(c, imp_cast(c, x, ft), xs.rank, xs.dims), w};
  if (!ins[0]) return -1;
  gir_node *cn = imp_new_node(c, GIR_OP_conv_transpose, ins, 2, 1);
  gir_attr_set_ints(c->g, cn, "strides", st, k);
  gir_attr_set_ints(c->g, cn, "pads", pads, 2 * k);
  gir_attr_set_ints(c->g, cn, "dilations", dil, k);
  gir_attr_set_ints(c->g, cn, "output_padding", opad, k);
  gir_attr_set_int(c->g, cn, "group", ch);
  return imp_set_output(c, n, 0, imp_cast(c, imp_finish(c, cn), x->dtype));
}

/* --- MaxUnpool --- */

int imp_cv_MaxUnpool(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *ix = imp_in(n, 1);
  if (!x || !ix) return imp_fail(c, "needs X and I");
  int r = x->shape.rank, k = r - 2;
  if (k < 1) return imp_fail(c, "input must have rank >= 3");
  if (!gir_shape_equal(&x->shape, &ix->shape)) return imp_fail(c, "I must have the shape of X");
  if (ix->dtype != GIR_I64) return imp_fail(c, "I must be int64");
  int64_t kern[GIR_MAX_RANK], st[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK];
  int64_t *kv;
  if (imp_attr_ints(c, n, "kernel_shape", &kv) != k) return imp_fail(c, "kernel_shape needs %d values", k);
  for (int i = 0; i < k; i++) kern[i] = kv[i];
  if (imp_spatial_ints(c, n, "strides", k, 1, st, NULL) < 0 || imp_spatial_ints(c, n, "pads", 2 * k, 0, pads, NULL) < 0)
    return -1;
  gir_shape inf = {.rank = r, .dims = {x->shape.dims[0], x->shape.dims[1]}};
  for (int i = 0; i < k; i++) {
    if (kern[i] < 1 || st[i] < 1 || kern[i] > (1 << 20) || st[i] > (1 << 20) || pads[i] < 0 || pads[i + k] < 0 ||
        pads[i] > (1 << 20) || pads[i + k] > (1 << 20))
      return imp_fail(c, "bad kernel_shape, strides or pads on spatial axis %d", i);
    inf.dims[2 + i] = (x->shape.dims[2 + i] - 1) * st[i] - pads[i] - pads[i + k] + kern[i];
    if (inf.dims[2 + i] < 1) return imp_fail(c, "empty output on spatial axis %d", i);
  }
  gir_err e = {{0}};
  int64_t total = gir_shape_numel(&inf, &e);
  if (total < 0 || total > (1ll << 40)) return imp_fail(c, "output too large");
  gir_shape out = inf;
  if (imp_in(n, 2)) {
    int32_t cnt;
    int64_t *os = imp_const_ints(c, imp_in(n, 2), "input 'output_shape'", &cnt);
    if (!os) return -1;
    if (cnt != r) return imp_fail(c, "output_shape needs %d values, has %d", r, cnt);
    for (int i = 0; i < r; i++) {
      if (os[i] < 0 || os[i] > (1ll << 40)) return imp_fail(c, "output_shape[%d] is out of range", i);
      out.dims[i] = os[i];
    }
    if (gir_shape_numel(&out, &e) < 0) return imp_fail(c, "output_shape: %s", e.msg);
  }
  /* y_flat[I[j]] = X[j] over the inferred shape (indices wrap like Python's) */
  int64_t nx = gir_value_numel(x);
  gir_shape ts = {.rank = 1, .dims = {total}};
  gir_value *zeros = imp_broadcast_to(c, imp_scalar(c, x->dtype, 0.0), &ts);
  gir_value *ins[3] = {zeros, imp_reshape(c, ix, 1, &nx), imp_reshape(c, x, 1, &nx)};
  if (!ins[0] || !ins[1] || !ins[2]) return -1;
  gir_node *sn = imp_new_node(c, GIR_OP_scatter_elements, ins, 3, 1);
  gir_attr_set_int(c->g, sn, "axis", 0);
  gir_attr_set_int(c->g, sn, "reduction", GIR_SCATTER_NONE);
  gir_value *y = imp_reshape(c, imp_finish(c, sn), r, inf.dims);
  if (!y || gir_shape_equal(&inf, &out)) return imp_set_output(c, n, 0, y);
  int64_t pp[2 * GIR_MAX_RANK] = {0};
  for (int i = 0; i < r; i++) pp[r + i] = out.dims[i] - inf.dims[i];
  gir_node *pn = imp_new_node(c, GIR_OP_pad, &y, 1, 1);
  gir_attr_set_ints(c->g, pn, "pads", pp, 2 * r);
  gir_attr_set_int(c->g, pn, "mode", GIR_PAD_CONSTANT);
  gir_attr_set_float(c->g, pn, "value", 0.0);
  return imp_set_output(c, n, 0, imp_finish(c, pn));
}
