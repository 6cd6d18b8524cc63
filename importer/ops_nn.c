/* ops_nn.c — neural-network ONNX ops → canonical ops: convolutions, Gemm/MatMul,
 * normalizations, pools, softmax family, quantization and Einsum.
 *
 * The canonical conv/pool/conv_transpose take explicit padding only, so auto_pad,
 * ConvTranspose's output_shape and Pool's kernel rules are resolved here, per
 * the ONNX spec and its reference implementation (onnx/reference/ops). Ops the
 * canonical table lacks are decomposed: batch normalization into per-channel
 * binary ops, instance/group normalization into layer_norm plus per-channel
 * scale and bias, Hardmax into arg_reduce + one_hot,
 * the quantization ops into cast/round/clamp around integer matmul/conv, Einsum
 * into transpose/reshape/matmul/reduce. Softmax-family ops before opset 13
 * coerce their input to 2-D at `axis`; that coercion is spelled out as reshapes.
 * What cannot be expressed (float8 and
 * sub-byte quantized types) is reported unsupported with the reason. */
#include <math.h>
#include <string.h>
#include "ops.h"

/* ---------- small helpers ---------- */



static gir_value *reshape_s(imp_ctx *c, gir_value *x, const gir_shape *s) {
  return imp_reshape(c, x, s->rank, s->dims);
}

static gir_value *to_scalar(imp_ctx *c, gir_value *v) {
  int64_t none = 0;
  return imp_reshape(c, v, 0, &none);
}

/* v (one value, or a 1-D vector) reshaped to `rank` dims, all 1 except `axis`
 * which holds v's elements, so that it broadcasts along that axis. One element
 * becomes a scalar. */
static gir_value *along_axis(imp_ctx *c, gir_value *v, int32_t rank, int64_t axis) {
  if (!v) return NULL;
  int64_t numel = gir_value_numel(v);
  if (numel == 1) return to_scalar(c, v);
  int64_t d[GIR_MAX_RANK];
  for (int i = 0; i < rank; i++) d[i] = 1;
  d[axis] = numel;
  return imp_reshape(c, v, rank, d);
}

static gir_value *mul(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_MUL, a, b); }
static gir_value *add(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_ADD, a, b); }
static gir_value *sub(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_SUB, a, b); }
static gir_value *divide(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_DIV, a, b); }

static gir_value *clamp(imp_ctx *c, gir_value *v, double lo, double hi) {
  if (!v) return NULL;
  v = imp_binary(c, GIR_BINARY_MAX, v, imp_scalar_like(c, v, lo));
  return v ? imp_binary(c, GIR_BINARY_MIN, v, imp_scalar_like(c, v, hi)) : NULL;
}

static int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

/* Matmul with ONNX MatMul's 1-D rules: a 1-D left operand is a row vector, a
 * 1-D right operand a column vector, and the added dim is removed after. A
 * batched left operand of fewer rows than the matmul template's register tile (8)
 * times a 2-D right one (a sequence model's [seq, batch = 1, hidden] @ W) is one
 * [seq·M, K] @ [K, N] product between free reshapes: the template then tiles all
 * those rows and reads W once per row tile, where seq single-row products would
 * each stream all of W (35 passes over a 2000-word vocabulary projection, at 4% of
 * peak). Products of 8 rows or more keep their batch: their tiles are full, and an
 * epilogue (bias, activation) still follows the matmul directly. So do products
 * whose few columns no vector tile covers (37 classes of a CRNN: the taller tile
 * would keep its ragged accumulators in memory). */
static gir_value *matmul_nd(imp_ctx *c, gir_value *a, gir_value *b) {
  if (!a || !b) return NULL;
  if (a->shape.rank < 1 || b->shape.rank < 1) {
    imp_fail(c, "MatMul operands need rank >= 1");
    return NULL;
  }
  int a1 = a->shape.rank == 1, b1 = b->shape.rank == 1;
  if (a1) {
    int64_t d[2] = {1, a->shape.dims[0]};
    a = imp_reshape(c, a, 2, d);
  }
  if (b1) {
    int64_t d[2] = {b->shape.dims[0], 1};
    b = imp_reshape(c, b, 2, d);
  }
  int64_t batch = 1;
  for (int i = 0; i + 2 < a->shape.rank; i++) batch *= a->shape.dims[i];
  gir_value *y;
  int64_t n_cols = b->shape.rank == 2 ? b->shape.dims[1] : 0;
  if (b->shape.rank == 2 && a->shape.rank > 2 && batch > 1 && a->shape.dims[a->shape.rank - 2] < 8 &&
      (n_cols % 4 == 0 || n_cols >= 64)) {
    int64_t d2[2] = {batch * a->shape.dims[a->shape.rank - 2], a->shape.dims[a->shape.rank - 1]};
    gir_shape s = a->shape;
    s.dims[s.rank - 1] = b->shape.dims[1];
    y = reshape_s(c, imp_matmul(c, imp_reshape(c, a, 2, d2), b), &s);
  } else {
    y = imp_matmul(c, a, b);
  }
  if (!y || (!a1 && !b1)) return y;
  gir_shape s = y->shape;
  if (b1) s.rank--;
  if (a1) {
    if (!b1) s.dims[s.rank - 2] = s.dims[s.rank - 1];
    s.rank--;
  }
  return reshape_s(c, y, &s);
}

/* layer_norm wants scale/bias that broadcast against x.shape[axis:] (ONNX only
 * asks that they broadcast against x). An operand of higher rank whose extra
 * leading dims are all 1 is reshaped down; otherwise *ok = 0 and the caller
 * applies it with binary ops. */
static gir_value *fit_inner(imp_ctx *c, gir_value *v, int32_t inner, int *ok) {
  if (!v || v->shape.rank <= inner) return v;
  int extra = v->shape.rank - inner;
  for (int i = 0; i < extra; i++)
    if (v->shape.dims[i] != 1) {
      *ok = 0;
      return v;
    }
  return imp_reshape(c, v, inner, v->shape.dims + extra);
}

/* stash_type attribute (an ONNX element type code) → a float dtype. */
static int stash_dtype(imp_ctx *c, const imp_node *n, gir_dtype *out) {
  int64_t code = imp_attr_int(n, "stash_type", 1);
  gir_dtype t = gir_dtype_from_onnx((int32_t)code);
  if (t == GIR_DTYPE_NONE || !gir_dtype_first_class(t) || !gir_dtype_is_float(t))
    return imp_fail(c, "stash_type %lld is not a floating-point type", (long long)code);
  *out = t;
  return 0;
}

/* ---------- sliding windows: kernel, strides, dilations, pads, auto_pad ---------- */

typedef struct win {
  int k;
  int64_t kernel[GIR_MAX_RANK], strides[GIR_MAX_RANK], dil[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK];
  int auto_pad; /* 0 NOTSET, 1 SAME_UPPER, 2 SAME_LOWER, 3 VALID */
} win;

static int read_auto_pad(imp_ctx *c, const imp_node *n, int *ap) {
  const char *s = imp_attr_string(c, n, "auto_pad", "NOTSET");
  if (!strcmp(s, "NOTSET") || !s[0]) *ap = 0;
  else if (!strcmp(s, "SAME_UPPER")) *ap = 1;
  else if (!strcmp(s, "SAME_LOWER")) *ap = 2;
  else if (!strcmp(s, "VALID")) *ap = 3;
  else return imp_fail(c, "unknown auto_pad '%s'", s);
  return 0;
}

/* Reads the window of a conv (wkernel: the weight's spatial dims) or a pool
 * (wkernel NULL: kernel_shape is required) over x, and resolves auto_pad into
 * explicit pads: SAME gives output ceil(in / stride) with the padding split
 * evenly, the odd one at the end (SAME_UPPER) or the beginning (SAME_LOWER). */
static int read_window(imp_ctx *c, const imp_node *n, const gir_value *x, const int64_t *wkernel, int dil_ok, win *w) {
  int r = x->shape.rank;
  if (r < 3) return imp_fail(c, "needs an input of rank >= 3 (N, C, spatial...), got rank %d", r);
  int k = w->k = r - 2;
  int has_ks;
  int64_t ks[GIR_MAX_RANK];
  if (imp_spatial_ints(c, n, "kernel_shape", k, 0, ks, &has_ks) < 0) return -1;
  if (wkernel) {
    for (int i = 0; i < k; i++) {
      if (has_ks && ks[i] != wkernel[i])
        return imp_fail(c, "kernel_shape[%d]=%lld differs from the weight's %lld", i, (long long)ks[i],
                        (long long)wkernel[i]);
      w->kernel[i] = wkernel[i];
    }
  } else {
    if (!has_ks) return imp_fail(c, "attribute kernel_shape is required");
    for (int i = 0; i < k; i++) w->kernel[i] = ks[i];
  }
  if (imp_spatial_ints(c, n, "strides", k, 1, w->strides, NULL) < 0 ||
      imp_spatial_ints(c, n, "pads", 2 * k, 0, w->pads, NULL) < 0)
    return -1;
  if (dil_ok) {
    if (imp_spatial_ints(c, n, "dilations", k, 1, w->dil, NULL) < 0) return -1;
  } else {
    for (int i = 0; i < k; i++) w->dil[i] = 1;
  }
  for (int i = 0; i < k; i++) {
    if (w->kernel[i] < 1 || w->strides[i] < 1 || w->dil[i] < 1 || w->kernel[i] > (1 << 20) ||
        w->strides[i] > (1 << 20) || w->dil[i] > (1 << 20))
      return imp_fail(c, "bad kernel, stride or dilation on spatial axis %d", i);
    if (w->pads[i] < 0 || w->pads[i + k] < 0 || w->pads[i] > (1 << 20) || w->pads[i + k] > (1 << 20))
      return imp_fail(c, "bad pads on spatial axis %d", i);
  }
  if (read_auto_pad(c, n, &w->auto_pad) < 0) return -1;
  if (w->auto_pad == 3) {
    for (int i = 0; i < 2 * k; i++) w->pads[i] = 0;
  } else if (w->auto_pad) {
    for (int i = 0; i < k; i++) {
      int64_t in = x->shape.dims[2 + i], s = w->strides[i];
      int64_t out = (in + s - 1) / s;
      int64_t total = (out - 1) * s + (w->kernel[i] - 1) * w->dil[i] + 1 - in;
      if (total < 0) total = 0;
      int64_t small = total / 2, big = total - small;
      w->pads[i] = w->auto_pad == 1 ? small : big;
      w->pads[i + k] = w->auto_pad == 1 ? big : small;
    }
  }
  return 0;
}

static void set_window_attrs(imp_ctx *c, gir_node *g, const win *w) {
  gir_attr_set_ints(c->g, g, "strides", w->strides, w->k);
  gir_attr_set_ints(c->g, g, "pads", w->pads, 2 * w->k);
  gir_attr_set_ints(c->g, g, "dilations", w->dil, w->k);
}

static gir_value *emit_conv(imp_ctx *c, gir_value *x, gir_value *wt, gir_value *b, const win *w, int64_t group) {
  if (!x || !wt) return NULL;
  gir_value *ins[3] = {x, wt, b};
  gir_node *g = imp_new_node(c, GIR_OP_conv, ins, b ? 3 : 2, 1);
  set_window_attrs(c, g, w);
  gir_attr_set_int(c->g, g, "group", group);
  return imp_finish(c, g);
}

/* Conv inputs shared by Conv, ConvInteger and QLinearConv: the window over x
 * with the weight's kernel, and the group. */
static int conv_window(imp_ctx *c, const imp_node *n, const gir_value *x, const gir_value *wt, win *w, int64_t *group) {
  if (wt->shape.rank != x->shape.rank)
    return imp_fail(c, "input rank %d and weight rank %d differ", x->shape.rank, wt->shape.rank);
  if (read_window(c, n, x, wt->shape.dims + 2, 1, w) < 0) return -1;
  *group = imp_attr_int(n, "group", 1);
  if (*group < 1) return imp_fail(c, "group must be >= 1");
  return 0;
}

/* ---------- convolution ---------- */

int imp_cv_Conv(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *wt = imp_in(n, 1), *b = imp_in(n, 2);
  if (!x || !wt) return imp_fail(c, "needs inputs X and W");
  win w;
  int64_t group;
  if (conv_window(c, n, x, wt, &w, &group) < 0) return -1;
  return imp_set_output(c, n, 0, emit_conv(c, x, wt, b, &w, group));
}

/* Python's floor division, for the reference's pad split of negative totals. */
static int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

/* ConvTranspose. The full (unpadded) output of axis i is
 * F = stride*(in-1) + (k-1)*dil + 1; the reference implementation then takes
 * out[j] = full[j + begin] for j < out_size, with
 *   SAME_* (no pads):  out_size = output_shape or in*stride,
 *                      total = F + output_padding - out_size, split per auto_pad;
 *   explicit pads:     begin = pads_begin, out_size = output_shape or
 *                      F + output_padding - pads_begin - pads_end.
 * A negative begin or end means zeros beyond the full output: output_padding
 * covers a small end extension, a pad op the rest (then the bias is added after). */
int imp_cv_ConvTranspose(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *wt = imp_in(n, 1), *b = imp_in(n, 2);
  if (!x || !wt) return imp_fail(c, "needs inputs X and W");
  int r = x->shape.rank;
  if (r < 3 || wt->shape.rank != r) return imp_fail(c, "needs X and W of the same rank >= 3");
  int k = r - 2;
  int64_t group = imp_attr_int(n, "group", 1);
  if (group < 1) return imp_fail(c, "group must be >= 1");
  int has_ks, has_pads, has_os = 0;
  int64_t ks[GIR_MAX_RANK], strides[GIR_MAX_RANK], dil[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK], opad[GIR_MAX_RANK];
  int64_t oshape[GIR_MAX_RANK];
  if (imp_spatial_ints(c, n, "kernel_shape", k, 0, ks, &has_ks) < 0 ||
      imp_spatial_ints(c, n, "strides", k, 1, strides, NULL) < 0 ||
      imp_spatial_ints(c, n, "dilations", k, 1, dil, NULL) < 0 ||
      imp_spatial_ints(c, n, "pads", 2 * k, 0, pads, &has_pads) < 0 ||
      imp_spatial_ints(c, n, "output_padding", k, 0, opad, NULL) < 0)
    return -1;
  {
    int64_t *os;
    int32_t cnt = imp_attr_ints(c, n, "output_shape", &os);
    if (cnt < 0 && c->err->msg[0]) return -1;
    if (cnt > 0) {
      if (cnt != k && cnt != k + 2) return imp_fail(c, "output_shape needs %d values, has %d", k, cnt);
      for (int i = 0; i < k; i++) oshape[i] = os[cnt - k + i];
      has_os = 1;
    }
  }
  int ap;
  if (read_auto_pad(c, n, &ap) < 0) return -1;
  for (int i = 0; i < k; i++) {
    if (has_ks && ks[i] != wt->shape.dims[2 + i])
      return imp_fail(c, "kernel_shape[%d]=%lld differs from the weight's %lld", i, (long long)ks[i],
                      (long long)wt->shape.dims[2 + i]);
    if (strides[i] < 1 || dil[i] < 1 || strides[i] > (1 << 20) || dil[i] > (1 << 20) || pads[i] < 0 ||
        pads[i + k] < 0 || pads[i] > (1 << 20) || pads[i + k] > (1 << 20) || opad[i] < 0 || opad[i] > (1 << 20))
      return imp_fail(c, "bad stride, dilation, pads or output_padding on spatial axis %d", i);
    if (has_os && (oshape[i] < 1 || oshape[i] > (1ll << 40)))
      return imp_fail(c, "bad output_shape on spatial axis %d", i);
  }

  int64_t cpads[2 * GIR_MAX_RANK], copad[GIR_MAX_RANK], ext[2 * GIR_MAX_RANK];
  int need_pad_op = 0;
  for (int i = 0; i < k; i++) {
    int64_t in = x->shape.dims[2 + i], kk = wt->shape.dims[2 + i];
    if (in > (1ll << 40) || kk > (1ll << 40)) return imp_fail(c, "spatial axis %d is too large", i);
    int64_t full = strides[i] * (in - 1) + (kk - 1) * dil[i] + 1;
    int64_t begin, out;
    if (!has_pads && (ap == 1 || ap == 2)) {
      out = has_os ? oshape[i] : in * strides[i];
      int64_t total = full + opad[i] - out;
      begin = ap == 1 ? floor_div2(total) : total - floor_div2(total);
    } else {
      begin = pads[i];
      out = has_os ? oshape[i] : full + opad[i] - pads[i] - pads[i + k];
    }
    if (out < 1) return imp_fail(c, "empty output on spatial axis %d", i);
    int64_t end = full - begin - out;
    cpads[i] = begin > 0 ? begin : 0;
    cpads[i + k] = end > 0 ? end : 0;
    ext[i] = begin < 0 ? -begin : 0;
    ext[i + k] = end < 0 ? -end : 0;
    copad[i] = 0;
    if (ext[i] || ext[i + k] >= (strides[i] > dil[i] ? strides[i] : dil[i])) need_pad_op = 1;
  }
  if (!need_pad_op)
    for (int i = 0; i < k; i++) {
      copad[i] = ext[i + k];
      ext[i + k] = 0;
    }

  gir_value *ins[3] = {x, wt, need_pad_op ? NULL : b};
  gir_node *g = imp_new_node(c, GIR_OP_conv_transpose, ins, ins[2] ? 3 : 2, 1);
  gir_attr_set_ints(c->g, g, "strides", strides, k);
  gir_attr_set_ints(c->g, g, "pads", cpads, 2 * k);
  gir_attr_set_ints(c->g, g, "dilations", dil, k);
  gir_attr_set_int(c->g, g, "group", group);
  gir_attr_set_ints(c->g, g, "output_padding", copad, k);
  gir_value *y = imp_finish(c, g);
  if (y && need_pad_op) {
    int64_t p[2 * GIR_MAX_RANK] = {0};
    for (int i = 0; i < k; i++) {
      p[2 + i] = ext[i];
      p[r + 2 + i] = ext[i + k];
    }
    gir_node *pn = imp_new_node(c, GIR_OP_pad, &y, 1, 1);
    gir_attr_set_ints(c->g, pn, "pads", p, 2 * r);
    gir_attr_set_int(c->g, pn, "mode", GIR_PAD_CONSTANT);
    gir_attr_set_float(c->g, pn, "value", 0.0);
    y = imp_finish(c, pn);
    if (b) y = add(c, y, along_axis(c, b, r, 1));
  }
  return imp_set_output(c, n, 0, y);
}

/* ---------- Gemm, MatMul ---------- */

int imp_cv_Gemm(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *b = imp_in(n, 1), *cc = imp_in(n, 2);
  if (!a || !b) return imp_fail(c, "needs inputs A and B");
  if (a->shape.rank != 2 || b->shape.rank != 2) return imp_fail(c, "A and B must be 2-D");
  double alpha = imp_attr_float(n, "alpha", 1.0), beta = imp_attr_float(n, "beta", 1.0);
  static const int64_t swap[2] = {1, 0};
  if (imp_attr_int(n, "transA", 0)) a = imp_transpose(c, a, swap);
  if (imp_attr_int(n, "transB", 0)) b = imp_transpose(c, b, swap);
  gir_value *y = imp_matmul(c, a, b);
  if (!y) return -1;
  if (alpha != 1.0) y = mul(c, y, imp_scalar_like(c, y, alpha));
  if (cc && beta != 0.0) {
    if (n->opset < 7 && !imp_attr_int(n, "broadcast", 0) && !gir_shape_equal(&cc->shape, &y->shape))
      return imp_fail(c, "C must have the shape of A*B when broadcast=0");
    int ok = cc->shape.rank <= 2;
    for (int i = 0; ok && i < cc->shape.rank; i++) {
      int64_t d = cc->shape.dims[cc->shape.rank - 1 - i];
      ok = d == 1 || d == y->shape.dims[1 - i];
    }
    if (!ok) return imp_fail(c, "C does not broadcast to the result's shape");
    if (beta != 1.0) cc = mul(c, cc, imp_scalar_like(c, cc, beta));
    y = add(c, y, cc);
  }
  return imp_set_output(c, n, 0, y);
}

int imp_cv_MatMul(imp_ctx *c, imp_node *n) {
  if (!imp_in(n, 0) || !imp_in(n, 1)) return imp_fail(c, "needs two inputs");
  return imp_set_output(c, n, 0, matmul_nd(c, n->in[0], n->in[1]));
}

/* ---------- normalizations ---------- */

/* Inference mode: y = (x - mean) * (scale / sqrt(var + eps)) + bias, with the
 * per-channel vectors reshaped to [C,1,...] (or, opset 7 spatial=0, used as the
 * [C,D1,...] tensors they are). */
/* Training mode (opset 14+), as the onnx reference: Y is normalized with the
 * batch statistics (population variance over every axis but the channel axis 1);
 * running_mean / running_var are the inputs moved toward them by momentum:
 *   m_b = mean(x), v_b = mean((x - m_b)^2)
 *   y = scale (x - m_b) / sqrt(v_b + eps) + B
 *   running_mean = mean * momentum + m_b * (1 - momentum)   (running_var alike) */
static int batchnorm_training(imp_ctx *c, imp_node *n, gir_value *x, gir_value *const *p) {
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  int r = x->shape.rank;
  if (r < 2) return imp_fail(c, "X needs rank >= 2 (N, C, ...)");
  int64_t ch = x->shape.dims[1], axes[GIR_MAX_RANK];
  int32_t na = 0;
  for (int i = 0; i < r; i++)
    if (i != 1) axes[na++] = i;
  for (int i = 0; i < 4; i++)
    if (gir_value_numel(p[i]) != ch) return imp_fail(c, "input %d needs C=%lld values", i + 1, (long long)ch);
  double eps = imp_attr_float(n, "epsilon", 1e-5), momentum = imp_attr_float(n, "momentum", 0.9);
  gir_value *mb = imp_reduce(c, GIR_REDUCE_MEAN, x, axes, na, 1); /* [1, C, 1, ...] */
  gir_value *d = sub(c, x, mb);
  gir_value *vb = imp_reduce(c, GIR_REDUCE_MEAN, mul(c, d, d), axes, na, 1);
  gir_value *scale = along_axis(c, imp_cast(c, p[0], x->dtype), r, 1), *bias = along_axis(c, imp_cast(c, p[1], x->dtype), r, 1);
  gir_value *y = add(c, divide(c, mul(c, scale, d), imp_unary(c, GIR_UNARY_SQRT, add(c, vb, imp_scalar_like(c, x, eps)))), bias);
  if (imp_set_output(c, n, 0, y) < 0) return -1;
  int64_t cdim = ch;
  for (int k = 0; k < 2; k++) {
    if (!imp_out_wanted(n, 1 + k)) continue;
    gir_value *run = p[2 + k], *batch = imp_reshape(c, k ? vb : mb, 1, &cdim);
    if (!batch) return -1;
    batch = imp_cast(c, batch, run->dtype);
    gir_value *upd = add(c, mul(c, imp_reshape(c, run, 1, &cdim), imp_scalar_like(c, run, momentum)),
                         mul(c, batch, imp_scalar_like(c, run, 1 - momentum)));
    if (imp_set_output(c, n, 1 + k, upd) < 0) return -1;
  }
  return 0;
}

int imp_cv_BatchNormalization(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *p[4] = {imp_in(n, 1), imp_in(n, 2), imp_in(n, 3), imp_in(n, 4)};
  if (!x || !p[0] || !p[1] || !p[2] || !p[3]) return imp_fail(c, "needs inputs X, scale, B, mean and var");
  if (n->opset < 7 && imp_attr(n, "is_test") && !imp_attr_int(n, "is_test", 0))
    return imp_unsupported_node(c, n, "training mode (is_test=0)");
  if (n->opset >= 14 && imp_attr_int(n, "training_mode", 0)) return batchnorm_training(c, n, x, p);
  for (int i = 1; i < n->n_out; i++)
    if (imp_out_wanted(n, i)) return imp_unsupported_node(c, n, "training outputs (mean, var, saved statistics)");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  int r = x->shape.rank;
  if (r < 2) return imp_fail(c, "X needs rank >= 2 (N, C, ...)");
  int64_t ch = x->shape.dims[1];
  for (int i = 0; i < 4; i++) {
    gir_value *v = imp_cast(c, p[i], x->dtype);
    if (v && v->shape.rank == r - 1 && r > 2) {
      /* opset < 9 spatial=0: one value per (channel, location) */
      if (v->shape.dims[0] != ch) return imp_fail(c, "input %d does not have C=%lld channels", i + 1, (long long)ch);
    } else if (v) {
      if (gir_value_numel(v) != ch) return imp_fail(c, "input %d needs C=%lld values", i + 1, (long long)ch);
      int64_t d[GIR_MAX_RANK];
      d[0] = ch;
      for (int j = 1; j < r - 1; j++) d[j] = 1;
      v = imp_reshape(c, v, r - 1, d);
    }
    p[i] = v;
  }
  /* ONNX Runtime's order of rounding: scale' = scale · (1 / sqrt(var + eps)), bias' = B -
   * mean · scale', y = x · scale' + bias'. In a quantized model a BatchNormalization kept
   * between DequantizeLinear and QuantizeLinear (a quantizer that did not fold it into the
   * conv) turns any other rounding of the same real number into a whole step now and then. */
  double eps = imp_attr_float(n, "epsilon", 1e-5);
  gir_value *var_eps = add(c, p[3], imp_scalar_like(c, x, eps));
  gir_value *inv_std = divide(c, imp_scalar_like(c, x, 1.0), imp_unary(c, GIR_UNARY_SQRT, var_eps));
  gir_value *factor = mul(c, inv_std, p[0]);
  gir_value *shift = sub(c, p[1], mul(c, p[2], factor));
  gir_value *y = add(c, mul(c, x, factor), shift);
  return imp_set_output(c, n, 0, y);
}

int imp_cv_InstanceNormalization(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *s = imp_in(n, 1), *b = imp_in(n, 2);
  if (!x || !s || !b) return imp_fail(c, "needs inputs input, scale and B");
  int r = x->shape.rank;
  if (r < 3) return imp_fail(c, "input needs rank >= 3 (N, C, D1, ...)");
  int64_t ch = x->shape.dims[1];
  if (gir_value_numel(s) != ch || gir_value_numel(b) != ch)
    return imp_fail(c, "scale and B need C=%lld values", (long long)ch);
  gir_value *y = imp_layer_norm(c, x, NULL, NULL, 2, imp_attr_float(n, "epsilon", 1e-5), 0);
  y = mul(c, y, along_axis(c, s, r, 1));
  return imp_set_output(c, n, 0, add(c, y, along_axis(c, b, r, 1)));
}

/* LayerNormalization (opset 17): stage one runs in stash_type, stage two
 * (scale, bias) in X's type. Mean/InvStdDev, when asked for, come from explicit
 * reductions and the normalization is then built from them; their type is the
 * stash type as the spec and onnxruntime have it (the reference returns X's). */
int imp_cv_LayerNormalization(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *scale = imp_in(n, 1), *bias = imp_in(n, 2);
  if (!x || !scale) return imp_fail(c, "needs inputs X and Scale");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  int r = x->shape.rank;
  int64_t axis;
  if (imp_axis(c, imp_attr_int(n, "axis", -1), r, &axis) < 0) return -1;
  double eps = imp_attr_float(n, "epsilon", 1e-5);
  gir_dtype st;
  if (stash_dtype(c, n, &st) < 0) return -1;
  int want_stats = imp_out_wanted(n, 1) || imp_out_wanted(n, 2);
  gir_value *y;
  if (!want_stats) {
    int ok = 1;
    gir_value *s2 = fit_inner(c, scale, r - (int32_t)axis, &ok), *b2 = fit_inner(c, bias, r - (int32_t)axis, &ok);
    if (st == x->dtype && ok && scale->dtype == x->dtype && (!bias || bias->dtype == x->dtype))
      return imp_set_output(c, n, 0, imp_layer_norm(c, x, s2, b2, axis, eps, 0));
    y = imp_layer_norm(c, imp_cast(c, x, st), NULL, NULL, axis, eps, 0);
    y = mul(c, imp_cast(c, y, x->dtype), scale);
    if (bias) y = add(c, y, bias);
    return imp_set_output(c, n, 0, y);
  }
  int64_t axes[GIR_MAX_RANK];
  int32_t na = 0;
  for (int64_t i = axis; i < r; i++) axes[na++] = i;
  gir_value *xu = imp_cast(c, x, st);
  gir_value *mean = imp_reduce(c, GIR_REDUCE_MEAN, xu, axes, na, 1);
  gir_value *d = sub(c, xu, mean);
  gir_value *var = imp_reduce(c, GIR_REDUCE_MEAN, mul(c, d, d), axes, na, 1);
  gir_value *inv = imp_unary(c, GIR_UNARY_RECIPROCAL,
                             imp_unary(c, GIR_UNARY_SQRT, add(c, var, imp_scalar(c, st, eps))));
  y = mul(c, imp_cast(c, mul(c, d, inv), x->dtype), scale);
  if (bias) y = add(c, y, bias);
  if (imp_set_output(c, n, 0, y) < 0 || imp_set_output(c, n, 1, mean) < 0) return -1;
  return imp_set_output(c, n, 2, inv);
}

/* GroupNormalization: X reshaped to [N, G, -1], normalized over axis 2, then
 * scaled per group (opset 18: scale/bias have G values) or per channel (opset
 * 21: C values, and stage one runs in stash_type). */
int imp_cv_GroupNormalization(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *scale = imp_in(n, 1), *bias = imp_in(n, 2);
  if (!x || !scale || !bias) return imp_fail(c, "needs inputs X, scale and bias");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  int r = x->shape.rank;
  if (r < 2) return imp_fail(c, "X needs rank >= 2 (N, C, ...)");
  int64_t groups = imp_attr_int(n, "num_groups", 0), nb = x->shape.dims[0], ch = x->shape.dims[1];
  if (groups < 1 || ch % groups)
    return imp_fail(c, "num_groups=%lld does not divide C=%lld", (long long)groups, (long long)ch);
  double eps = imp_attr_float(n, "epsilon", 1e-5);
  int per_channel = n->opset >= 21;
  int64_t want = per_channel ? ch : groups;
  if (gir_value_numel(scale) != want || gir_value_numel(bias) != want)
    return imp_fail(c, "scale and bias need %lld values (one per %s)", (long long)want,
                    per_channel ? "channel" : "group");
  gir_dtype st = x->dtype;
  if (per_channel && stash_dtype(c, n, &st) < 0) return -1;
  int64_t spatial = prod(x->shape.dims, 2, r);
  int64_t d3[3] = {nb, groups, ch / groups * spatial};
  gir_value *v = imp_reshape(c, imp_cast(c, x, st), 3, d3);
  v = imp_cast(c, imp_layer_norm(c, v, NULL, NULL, 2, eps, 0), x->dtype);
  if (per_channel) {
    int64_t dc[3] = {nb, ch, spatial};
    v = imp_reshape(c, v, 3, dc);
  }
  v = mul(c, v, along_axis(c, imp_cast(c, scale, x->dtype), 3, 1));
  v = add(c, v, along_axis(c, imp_cast(c, bias, x->dtype), 3, 1));
  return imp_set_output(c, n, 0, reshape_s(c, v, &x->shape));
}

/* RMSNormalization (opset 23): layer_norm with rms=1; Y has the scale's type. */
int imp_cv_RMSNormalization(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *scale = imp_in(n, 1);
  if (!x || !scale) return imp_fail(c, "needs inputs X and scale");
  if (!gir_dtype_is_float(x->dtype) || !gir_dtype_is_float(scale->dtype))
    return imp_fail(c, "X and scale must be floating point");
  int r = x->shape.rank;
  int64_t axis;
  if (imp_axis(c, imp_attr_int(n, "axis", -1), r, &axis) < 0) return -1;
  double eps = imp_attr_float(n, "epsilon", 1e-5);
  gir_dtype st;
  if (stash_dtype(c, n, &st) < 0) return -1;
  int ok = 1;
  gir_value *s2 = fit_inner(c, scale, r - (int32_t)axis, &ok);
  if (st == x->dtype && scale->dtype == x->dtype && ok)
    return imp_set_output(c, n, 0, imp_layer_norm(c, x, s2, NULL, axis, eps, 1));
  gir_value *y = imp_layer_norm(c, imp_cast(c, x, st), NULL, NULL, axis, eps, 1);
  y = imp_cast(c, imp_cast(c, y, x->dtype), scale->dtype);
  return imp_set_output(c, n, 0, mul(c, y, scale));
}

/* MeanVarianceNormalization, as its function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9). */
int imp_cv_MeanVarianceNormalization(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  int64_t *axes, def[3] = {0, 2, 3}, norm[GIR_MAX_RANK];
  int32_t na = imp_attr_ints(c, n, "axes", &axes);
  if (na < 0 && c->err->msg[0]) return -1;
  if (na < 0) {
    axes = def;
    na = 3;
  }
  if (na > x->shape.rank) return imp_fail(c, "%d axes for an input of rank %d", na, x->shape.rank);
  for (int i = 0; i < na; i++)
    if (imp_axis(c, axes[i], x->shape.rank, &norm[i]) < 0) return -1;
  if (na == 0) return imp_set_output(c, n, 0, sub(c, x, x)); /* mean over nothing is x itself */
  gir_value *mean = imp_reduce(c, GIR_REDUCE_MEAN, x, norm, na, 1);
  gir_value *ex2 = imp_reduce(c, GIR_REDUCE_MEAN, mul(c, x, x), norm, na, 1);
  gir_value *std = imp_unary(c, GIR_UNARY_SQRT, sub(c, ex2, mul(c, mean, mean)));
  gir_value *y = divide(c, sub(c, x, mean), add(c, std, imp_scalar_like(c, x, 1e-9)));
  return imp_set_output(c, n, 0, y);
}

/* LpNormalization: x / ||x||_p along axis (p = 1 or 2); a zero norm gives 0. */
int imp_cv_LpNormalization(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "input must be floating point");
  int64_t axis, p = imp_attr_int(n, "p", 2);
  if (p != 1 && p != 2) return imp_fail(c, "p must be 1 or 2, got %lld", (long long)p);
  if (imp_axis(c, imp_attr_int(n, "axis", -1), x->shape.rank, &axis) < 0) return -1;
  gir_value *norm = imp_reduce(c, p == 1 ? GIR_REDUCE_L1 : GIR_REDUCE_L2, x, &axis, 1, 1);
  gir_value *zero = imp_scalar_like(c, x, 0.0);
  gir_value *y = imp_where(c, imp_binary(c, GIR_BINARY_EQ, norm, zero), zero, divide(c, x, norm));
  return imp_set_output(c, n, 0, y);
}

int imp_cv_LRN(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t size = imp_attr_int(n, "size", 0);
  if (size < 1) return imp_fail(c, "attribute size must be >= 1");
  gir_node *g = imp_new_node(c, GIR_OP_lrn, &x, 1, 1);
  gir_attr_set_int(c->g, g, "size", size);
  gir_attr_set_float(c->g, g, "alpha", imp_attr_float(n, "alpha", 1e-4));
  gir_attr_set_float(c->g, g, "beta", imp_attr_float(n, "beta", 0.75));
  gir_attr_set_float(c->g, g, "bias", imp_attr_float(n, "bias", 1.0));
  return imp_set_output(c, n, 0, imp_finish(c, g));
}

/* ---------- pooling ---------- */

static int cv_pool(imp_ctx *c, imp_node *n, gir_pool_fn fn) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int dil_ok, ceil_ok = n->opset >= 10, count_pad = 0;
  int64_t p = 0;
  if (fn == GIR_POOL_MAX) {
    if (imp_out_wanted(n, 1) && n->opset < 8) return imp_fail(c, "MaxPool has one output before opset 8");
    dil_ok = n->opset >= 10;
  } else if (fn == GIR_POOL_AVG) {
    dil_ok = n->opset >= 19;
    count_pad = n->opset >= 7 && imp_attr_int(n, "count_include_pad", 0) != 0;
  } else {
    dil_ok = ceil_ok = n->opset >= 18;
    if (n->opset < 2) {
      double pf = imp_attr_float(n, "p", 2.0);
      if (pf != floor(pf) || pf < 1 || pf > 64) return imp_unsupported_node(c, n, "non-integer p=%g", pf);
      p = (int64_t)pf;
    } else {
      p = imp_attr_int(n, "p", 2);
    }
    if (p < 1 || p > 64) return imp_fail(c, "p must be in [1, 64], got %lld", (long long)p);
  }
  win w;
  if (read_window(c, n, x, NULL, dil_ok, &w) < 0) return -1;
  int ceil = ceil_ok && !w.auto_pad && imp_attr_int(n, "ceil_mode", 0) != 0;
  gir_node *g = imp_new_node(c, GIR_OP_pool, &x, 1, 1);
  gir_attr_set_int(c->g, g, "fn", fn);
  gir_attr_set_ints(c->g, g, "kernel", w.kernel, w.k);
  set_window_attrs(c, g, &w);
  gir_attr_set_int(c->g, g, "ceil", ceil);
  gir_attr_set_int(c->g, g, "count_include_pad", count_pad);
  if (fn == GIR_POOL_LP) gir_attr_set_int(c->g, g, "p", p);
  if (imp_set_output(c, n, 0, imp_finish(c, g)) < 0) return -1;
  if (fn == GIR_POOL_MAX && imp_out_wanted(n, 1)) { /* Indices: flat positions of the maxima */
    gir_node *ix = imp_new_node(c, GIR_OP_pool_index, &x, 1, 1);
    gir_attr_set_int(c->g, ix, "fn", GIR_POOL_MAX);
    gir_attr_set_ints(c->g, ix, "kernel", w.kernel, w.k);
    set_window_attrs(c, ix, &w);
    gir_attr_set_int(c->g, ix, "ceil", ceil);
    gir_attr_set_int(c->g, ix, "storage_order", imp_attr_int(n, "storage_order", 0));
    if (imp_set_output(c, n, 1, imp_finish(c, ix)) < 0) return -1;
  }
  return 0;
}

int imp_cv_MaxPool(imp_ctx *c, imp_node *n) { return cv_pool(c, n, GIR_POOL_MAX); }
int imp_cv_AveragePool(imp_ctx *c, imp_node *n) { return cv_pool(c, n, GIR_POOL_AVG); }
int imp_cv_LpPool(imp_ctx *c, imp_node *n) { return cv_pool(c, n, GIR_POOL_LP); }

/* Global pools: a reduction over every spatial axis, dims kept. */
static int cv_global_pool(imp_ctx *c, imp_node *n, gir_reduce_fn fn) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int r = x->shape.rank;
  if (r < 3) return imp_fail(c, "needs an input of rank >= 3 (N, C, spatial...)");
  int64_t axes[GIR_MAX_RANK];
  for (int i = 2; i < r; i++) axes[i - 2] = i;
  return imp_set_output(c, n, 0, imp_reduce(c, fn, x, axes, r - 2, 1));
}

int imp_cv_GlobalAveragePool(imp_ctx *c, imp_node *n) { return cv_global_pool(c, n, GIR_REDUCE_MEAN); }
int imp_cv_GlobalMaxPool(imp_ctx *c, imp_node *n) { return cv_global_pool(c, n, GIR_REDUCE_MAX); }

int imp_cv_GlobalLpPool(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t p;
  if (n->opset < 2) {
    double pf = imp_attr_float(n, "p", 2.0);
    if (pf != floor(pf) || pf < 1 || pf > 64) return imp_unsupported_node(c, n, "non-integer p=%g", pf);
    p = (int64_t)pf;
  } else {
    p = imp_attr_int(n, "p", 2);
  }
  if (p == 1) return cv_global_pool(c, n, GIR_REDUCE_L1);
  if (p == 2) return cv_global_pool(c, n, GIR_REDUCE_L2);
  if (p < 1 || p > 64) return imp_fail(c, "p must be in [1, 64], got %lld", (long long)p);
  int r = x->shape.rank;
  if (r < 3) return imp_fail(c, "needs an input of rank >= 3 (N, C, spatial...)");
  win w = {.k = r - 2};
  for (int i = 0; i < w.k; i++) {
    w.kernel[i] = x->shape.dims[2 + i];
    w.strides[i] = w.dil[i] = 1;
    w.pads[i] = w.pads[i + w.k] = 0;
  }
  gir_node *g = imp_new_node(c, GIR_OP_pool, &x, 1, 1);
  gir_attr_set_int(c->g, g, "fn", GIR_POOL_LP);
  gir_attr_set_ints(c->g, g, "kernel", w.kernel, w.k);
  set_window_attrs(c, g, &w);
  gir_attr_set_int(c->g, g, "p", p);
  return imp_set_output(c, n, 0, imp_finish(c, g));
}

/* ---------- softmax family ---------- */

/* Before opset 13 these ops see their input as 2-D [prod(d[:axis]), prod(d[axis:])].
 * Returns the value to work on and the axis to use; *coerced says whether a
 * reshape back is needed. Over a single trailing axis the coercion changes nothing. */
static gir_value *softmax_input(imp_ctx *c, const imp_node *n, gir_value *x, int64_t *axis, int *coerced) {
  int r = x->shape.rank;
  *coerced = 0;
  if (imp_axis(c, imp_attr_int(n, "axis", n->opset < 13 ? 1 : -1), r, axis) < 0) return NULL;
  if (n->opset >= 13 || *axis >= r - 1) return x;
  int64_t d[2] = {prod(x->shape.dims, 0, (int)*axis), prod(x->shape.dims, (int)*axis, r)};
  *coerced = 1;
  *axis = 1;
  return imp_reshape(c, x, 2, d);
}

static int cv_softmax(imp_ctx *c, imp_node *n, int log) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t axis;
  int coerced;
  gir_value *v = softmax_input(c, n, x, &axis, &coerced);
  if (!v) return -1;
  gir_node *g = imp_new_node(c, GIR_OP_softmax, &v, 1, 1);
  gir_attr_set_int(c->g, g, "axis", axis);
  gir_attr_set_int(c->g, g, "log", log);
  v = imp_finish(c, g);
  return imp_set_output(c, n, 0, coerced ? reshape_s(c, v, &x->shape) : v);
}

int imp_cv_Softmax(imp_ctx *c, imp_node *n) { return cv_softmax(c, n, 0); }
int imp_cv_LogSoftmax(imp_ctx *c, imp_node *n) { return cv_softmax(c, n, 1); }

/* Hardmax: one_hot(argmax(x, axis), depth = d[axis]) with [0, 1] in x's type;
 * the first maximum wins. */
int imp_cv_Hardmax(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t axis;
  int coerced;
  gir_value *v = softmax_input(c, n, x, &axis, &coerced);
  if (!v) return -1;
  int64_t depth = v->shape.dims[axis];
  if (depth == 0) return imp_set_output(c, n, 0, x); /* nothing to pick from: the (empty) input */
  gir_node *am = imp_new_node(c, GIR_OP_arg_reduce, &v, 1, 1);
  gir_attr_set_int(c->g, am, "fn", GIR_ARG_MAX);
  gir_attr_set_int(c->g, am, "axis", axis);
  gir_attr_set_int(c->g, am, "keepdims", 0);
  gir_attr_set_int(c->g, am, "last", 0);
  gir_value *idx = imp_finish(c, am);
  if (!idx) return -1;
  gir_shape two = {.rank = 1, .dims = {2}};
  uint64_t buf[2] = {0, 0};
  gir_store_f64(x->dtype, buf, 0, 0.0);
  gir_store_f64(x->dtype, buf, 1, 1.0);
  gir_value *vals = gir_const_new(c->g, NULL, x->dtype, &two, buf);
  gir_value *ins[2] = {idx, vals};
  gir_node *oh = imp_new_node(c, GIR_OP_one_hot, ins, 2, 1);
  gir_attr_set_int(c->g, oh, "depth", depth);
  gir_attr_set_int(c->g, oh, "axis", axis);
  v = imp_finish(c, oh);
  return imp_set_output(c, n, 0, coerced ? reshape_s(c, v, &x->shape) : v);
}

/* ---------- quantization ---------- */

static int quant_range(gir_dtype t, double *lo, double *hi) {
  switch (t) {
  case GIR_U8: *lo = 0, *hi = 255; return 1;
  case GIR_I8: *lo = -128, *hi = 127; return 1;
  case GIR_U16: *lo = 0, *hi = 65535; return 1;
  case GIR_I16: *lo = -32768, *hi = 32767; return 1;
  case GIR_U4: *lo = 0, *hi = 15; return 1;
  case GIR_I4: *lo = -8, *hi = 7; return 1;
  case GIR_U2: *lo = 0, *hi = 3; return 1;
  case GIR_I2: *lo = -2, *hi = 1; return 1;
  default: return 0;
  }
}

/* Scale or zero point of (De)QuantizeLinear shaped to broadcast against x: a
 * scalar (per tensor), values on `axis` (per axis), or each value repeated
 * block_size times along axis and trimmed to x's extent (blocked). */
static gir_value *quant_param(imp_ctx *c, gir_value *v, const gir_value *x, int64_t axis_attr, int64_t block,
                              const char *what) {
  if (!v) return NULL;
  int r = x->shape.rank;
  if (v->shape.rank == 0 || gir_value_numel(v) == 1) return to_scalar(c, v);
  int64_t axis;
  if (imp_axis(c, axis_attr, r, &axis) < 0) return NULL;
  if (block <= 0) {
    if (v->shape.rank != 1 || v->shape.dims[0] != x->shape.dims[axis]) {
      imp_fail(c, "%s must be a scalar or hold %lld values (axis %lld)", what, (long long)x->shape.dims[axis],
               (long long)axis);
      return NULL;
    }
    return along_axis(c, v, r, axis);
  }
  if (v->shape.rank != r || r + 1 > GIR_MAX_RANK) {
    imp_fail(c, "blocked %s must have the input's rank", what);
    return NULL;
  }
  int64_t nblk = v->shape.dims[axis], len = x->shape.dims[axis];
  for (int i = 0; i < r; i++)
    if (i != axis && v->shape.dims[i] != x->shape.dims[i]) {
      imp_fail(c, "blocked %s differs from the input on axis %d", what, i);
      return NULL;
    }
  if (block > (1 << 30) || nblk * block < len || (nblk - 1) * block >= len) {
    imp_fail(c, "%lld blocks of %lld do not cover %lld elements on axis %lld", (long long)nblk, (long long)block,
             (long long)len, (long long)axis);
    return NULL;
  }
  gir_shape s1 = {.rank = r + 1}, s2;
  for (int i = 0, j = 0; i < r; i++) {
    s1.dims[j++] = v->shape.dims[i];
    if (i == axis) s1.dims[j++] = 1;
  }
  s2 = s1;
  s2.dims[axis + 1] = block;
  gir_value *e = imp_broadcast_to(c, reshape_s(c, v, &s1), &s2);
  gir_shape s3 = x->shape;
  s3.dims[axis] = nblk * block;
  e = reshape_s(c, e, &s3);
  return e ? imp_slice_axis(c, e, (int)axis, 0, 1, len) : NULL;
}

static int quant_type_check(imp_ctx *c, imp_node *n, gir_dtype t, const char *what) {
  if (t == GIR_DTYPE_NONE) return imp_fail(c, "%s: unknown element type", what);
  if (!gir_dtype_first_class(t)) return imp_unsupported_node(c, n, "%s of type %s", what, gir_dtype_name(t));
  return 0;
}

/* The four float8 formats: quantized by a (saturating) cast, without zero point. */
static int is_float8(gir_dtype t) { return gir_dtype_is_f8(t) && t != GIR_F8E8M0 && t != GIR_F4E2M1; }

/* y = saturate(round_half_even(x / scale) + zero_point). The division runs in
 * `precision` (opset 23+) or the scale's type, as the spec says (x and scale
 * differ in type only from opset 23; a float8e8m0 scale divides in float32);
 * the rounded quotient is widened to float32 (from 16-bit floats) so that
 * adding the zero point is exact, and clamped to the output range before the
 * cast. As the reference: float8 outputs are the cast of x / scale (saturating
 * unless saturate = 0; the zero point, zero by the spec, is not added);
 * float4e2m1 the plain cast of x / scale + zero point. */
int imp_cv_QuantizeLinear(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *scale = imp_in(n, 1), *zp = imp_in(n, 2);
  if (!x || !scale) return imp_fail(c, "needs inputs x and y_scale");
  gir_dtype out = GIR_U8;
  int64_t odt = n->opset >= 21 ? imp_attr_int(n, "output_dtype", 0) : 0;
  if (odt) out = gir_dtype_from_onnx((int32_t)odt);
  if (zp) {
    if (odt && out != zp->dtype) return imp_fail(c, "output_dtype differs from y_zero_point's type");
    out = zp->dtype;
  }
  int rc = quant_type_check(c, n, out, "quantization output");
  if (rc) return rc;
  if ((rc = quant_type_check(c, n, scale->dtype, "y_scale"))) return rc;
  double lo, hi;
  int fl = is_float8(out) || out == GIR_F4E2M1;
  if (!fl && !quant_range(out, &lo, &hi)) return imp_fail(c, "cannot quantize to %s", gir_dtype_name(out));
  gir_dtype f = scale->dtype;
  int64_t prec = n->opset >= 23 ? imp_attr_int(n, "precision", 0) : 0;
  if (prec) f = gir_dtype_from_onnx((int32_t)prec);
  if (f == GIR_DTYPE_NONE || !gir_dtype_first_class(f) || !gir_dtype_is_float(f) || gir_dtype_is_f8(f)) f = GIR_F32;
  int64_t axis = imp_attr_int(n, "axis", 1), block = n->opset >= 21 ? imp_attr_int(n, "block_size", 0) : 0;
  gir_value *s = imp_cast(c, quant_param(c, scale, x, axis, block, "y_scale"), f);
  gir_value *d = divide(c, imp_cast(c, x, f), s);
  if (fl) {
    if (out == GIR_F4E2M1 && zp && d)
      d = add(c, d, imp_cast(c, quant_param(c, zp, x, axis, block, "y_zero_point"), d->dtype));
    if (!d) return -1;
    gir_node *k = imp_new_node(c, GIR_OP_cast, &d, 1, 1);
    gir_attr_set_int(c->g, k, "to", out);
    if (out != GIR_F4E2M1 && n->opset >= 19 && !imp_attr_int(n, "saturate", 1))
      gir_attr_set_int(c->g, k, "saturate", 0);
    return imp_set_output(c, n, 0, imp_finish(c, k));
  }
  gir_value *q = imp_unary(c, GIR_UNARY_ROUND, d);
  if (f == GIR_F16 || f == GIR_BF16) q = imp_cast(c, q, GIR_F32);
  if (zp && q) q = add(c, q, imp_cast(c, quant_param(c, zp, x, axis, block, "y_zero_point"), q->dtype));
  return imp_set_output(c, n, 0, imp_cast(c, clamp(c, q, lo, hi), out));
}

/* y = (x - zero_point) * scale, computed in float32 (float64 for a float64
 * scale) as the reference does, then cast to output_dtype or the scale's type.
 * float8 and float4e2m1 inputs have no zero point (the reference ignores it). */
int imp_cv_DequantizeLinear(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *scale = imp_in(n, 1), *zp = imp_in(n, 2);
  if (!x || !scale) return imp_fail(c, "needs inputs x and x_scale");
  int rc = quant_type_check(c, n, x->dtype, "quantized input");
  if (rc) return rc;
  if ((rc = quant_type_check(c, n, scale->dtype, "x_scale"))) return rc;
  int fl = is_float8(x->dtype) || x->dtype == GIR_F4E2M1;
  if (!gir_dtype_is_int(x->dtype) && !fl) return imp_fail(c, "cannot dequantize %s", gir_dtype_name(x->dtype));
  if (!gir_dtype_is_float(scale->dtype)) return imp_fail(c, "x_scale must be floating point");
  if (zp && zp->dtype != x->dtype) return imp_fail(c, "x_zero_point's type differs from x's");
  gir_dtype out = scale->dtype;
  int64_t odt = n->opset >= 23 ? imp_attr_int(n, "output_dtype", 0) : 0;
  if (odt) {
    out = gir_dtype_from_onnx((int32_t)odt);
    if (out == GIR_DTYPE_NONE || !gir_dtype_first_class(out) || !gir_dtype_is_float(out))
      return imp_fail(c, "output_dtype %lld is not a floating-point type", (long long)odt);
  }
  int64_t axis = imp_attr_int(n, "axis", 1), block = n->opset >= 21 ? imp_attr_int(n, "block_size", 0) : 0;
  gir_dtype m = scale->dtype == GIR_F64 ? GIR_F64 : GIR_F32;
  gir_value *d = imp_cast(c, x, GIR_F32);
  if (zp && !fl) d = sub(c, d, imp_cast(c, quant_param(c, zp, x, axis, block, "x_zero_point"), GIR_F32));
  gir_value *y = mul(c, imp_cast(c, d, m), imp_cast(c, quant_param(c, scale, x, axis, block, "x_scale"), m));
  return imp_set_output(c, n, 0, imp_cast(c, y, out));
}

/* DynamicQuantizeLinear (opset 11), as the reference: the range always holds 0,
 * scale = (max - min) / 255 (1/255 when max == min), zero point =
 * round(clamp(-min / scale, 0, 255)), y = clamp(round(x / scale) + zp, 0, 255). */
int imp_cv_DynamicQuantizeLinear(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (x->dtype != GIR_F32) return imp_fail(c, "x must be float32");
  int64_t axes[GIR_MAX_RANK];
  int r = x->shape.rank;
  for (int i = 0; i < r; i++) axes[i] = i;
  gir_value *mx = r ? imp_reduce(c, GIR_REDUCE_MAX, x, axes, r, 0) : x;
  gir_value *mn = r ? imp_reduce(c, GIR_REDUCE_MIN, x, axes, r, 0) : x;
  gir_value *zero = imp_scalar(c, GIR_F32, 0.0);
  mx = imp_binary(c, GIR_BINARY_MAX, mx, zero);
  mn = imp_binary(c, GIR_BINARY_MIN, mn, zero);
  gir_value *range = imp_where(c, imp_binary(c, GIR_BINARY_EQ, mx, mn), imp_scalar(c, GIR_F32, 1.0), sub(c, mx, mn));
  gir_value *scale = divide(c, range, imp_scalar(c, GIR_F32, 255.0));
  gir_value *zpf = imp_unary(c, GIR_UNARY_ROUND, clamp(c, imp_unary(c, GIR_UNARY_NEG, divide(c, mn, scale)), 0, 255));
  gir_value *y = clamp(c, add(c, imp_unary(c, GIR_UNARY_ROUND, divide(c, x, scale)), zpf), 0, 255);
  if (imp_set_output(c, n, 0, imp_cast(c, y, GIR_U8)) < 0 || imp_set_output(c, n, 1, scale) < 0) return -1;
  return imp_set_output(c, n, 2, imp_cast(c, zpf, GIR_U8));
}

/* A per-tensor or per-row quantization parameter of a matmul's left operand:
 * one value → scalar, M values (M = rows of a) → [M, 1]; others broadcast as is. */
static gir_value *row_param(imp_ctx *c, gir_value *v, const gir_value *a) {
  if (!v) return NULL;
  if (gir_value_numel(v) == 1) return to_scalar(c, v);
  if (v->shape.rank == 1 && a->shape.rank >= 2 && v->shape.dims[0] == a->shape.dims[a->shape.rank - 2]) {
    int64_t d[2] = {v->shape.dims[0], 1};
    return imp_reshape(c, v, 2, d);
  }
  return v;
}

static gir_value *col_param(imp_ctx *c, gir_value *v) {
  if (!v) return NULL;
  return gir_value_numel(v) == 1 ? to_scalar(c, v) : v;
}

/* x (8/16-bit integers) widened to int32 minus its zero point (already shaped). */
static gir_value *centered_i32(imp_ctx *c, gir_value *x, gir_value *zp) {
  gir_value *v = imp_cast(c, x, GIR_I32);
  return zp ? sub(c, v, imp_cast(c, zp, GIR_I32)) : v;
}

/* The value of a constant scalar integer zero point (0 when absent); 0 when not a
 * constant (*known = 0). */
static int64_t const_zp(const gir_value *zp, int *known) {
  *known = 1;
  if (!zp) return 0;
  if (!zp->data || gir_value_numel(zp) != 1) {
    *known = 0;
    return 0;
  }
  return zp->dtype == GIR_U8 ? *(const uint8_t *)zp->data : zp->dtype == GIR_I8 ? *(const int8_t *)zp->data : 0;
}

/* Σ over `axes` of int32(w), times the zero point zx: the term that turns a
 * product over raw 8-bit x into one over x - zx. */
static gir_value *zp_times_sum(imp_ctx *c, gir_value *w, int64_t zx, const int64_t *axes, int32_t n_axes, int keep) {
  gir_value *sum = imp_reduce(c, GIR_REDUCE_SUM, imp_cast(c, w, GIR_I32), axes, n_axes, keep);
  return sum ? mul(c, sum, imp_scalar(c, GIR_I32, (double)zx)) : NULL;
}

static int int8_operand(imp_ctx *c, const gir_value *v, const char *what) {
  if (v && v->dtype != GIR_U8 && v->dtype != GIR_I8) return imp_fail(c, "%s must be int8 or uint8", what);
  return 0;
}

/* Requantizes an int32 accumulator: saturate(round(acc * factor) + y_zero_point)
 * in float32, cast to y_zero_point's type (or `def` when there is none). */
static gir_value *requantize(imp_ctx *c, gir_value *acc, gir_value *factor, gir_value *yzp, gir_dtype def) {
  gir_dtype out = yzp ? yzp->dtype : def;
  double lo, hi;
  if (!quant_range(out, &lo, &hi)) {
    imp_fail(c, "cannot requantize to %s", gir_dtype_name(out));
    return NULL;
  }
  gir_value *r = imp_unary(c, GIR_UNARY_ROUND, mul(c, imp_cast(c, acc, GIR_F32), imp_cast(c, factor, GIR_F32)));
  if (yzp) r = add(c, r, imp_cast(c, yzp, GIR_F32));
  return imp_cast(c, clamp(c, r, lo, hi), out);
}

/* Σ_k (a - za)·(b - zb) in int32. With zb zero and za one constant: the matmul of
 * the raw 8-bit operands (int8 products, int32 sums — what dot-product
 * instructions compute) minus za · Σ_k b per column; otherwise both operands
 * widened and centered first. */
static gir_value *matmul_q8(imp_ctx *c, gir_value *a, gir_value *azp, gir_value *b, gir_value *bzp) {
  int known;
  int64_t za = const_zp(azp, &known);
  if (known && imp_zero_or_absent(bzp) && b->shape.rank >= 2) {
    gir_value *y = matmul_nd(c, a, b);
    if (!za || !y) return y;
    int64_t k = b->shape.rank - 2;
    return sub(c, y, zp_times_sum(c, b, za, &k, 1, 1)); /* [.., 1, N] against [.., M, N] */
  }
  return matmul_nd(c, centered_i32(c, a, row_param(c, azp, a)), centered_i32(c, b, col_param(c, bzp)));
}

gir_value *imp_qlinear_matmul(imp_ctx *c, gir_value *a, gir_value *as, gir_value *azp, gir_value *b, gir_value *bs,
                              gir_value *bzp, gir_value *ys, gir_value *yzp, gir_value *bias) {
  if (int8_operand(c, a, "a") < 0 || int8_operand(c, b, "b") < 0) return NULL;
  gir_value *acc = matmul_q8(c, a, azp, b, bzp);
  if (bias) acc = add(c, acc, bias);
  gir_value *factor = divide(c, mul(c, row_param(c, as, a), imp_cast(c, col_param(c, bs), as->dtype)),
                             imp_cast(c, col_param(c, ys), as->dtype));
  return requantize(c, acc, factor, yzp ? col_param(c, yzp) : NULL, a->dtype);
}

int imp_cv_QLinearMatMul(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *as = imp_in(n, 1), *azp = imp_in(n, 2), *b = imp_in(n, 3), *bs = imp_in(n, 4),
            *bzp = imp_in(n, 5), *ys = imp_in(n, 6), *yzp = imp_in(n, 7);
  if (!a || !as || !b || !bs || !ys) return imp_fail(c, "needs inputs a, a_scale, b, b_scale and y_scale");
  gir_value *y = imp_qlinear_matmul(c, a, as, azp, b, bs, bzp, ys, yzp, NULL);
  return y ? imp_set_output(c, n, 0, y) : -1;
}

int imp_cv_MatMulInteger(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *b = imp_in(n, 1), *azp = imp_in(n, 2), *bzp = imp_in(n, 3);
  if (!a || !b) return imp_fail(c, "needs inputs A and B");
  if (int8_operand(c, a, "A") < 0 || int8_operand(c, b, "B") < 0) return -1;
  gir_value *y = matmul_q8(c, a, azp, b, bzp);
  return imp_set_output(c, n, 0, y);
}

/* Per-output-channel weight zero point: M values → [M, 1, ...] against w. */
static gir_value *weight_param(imp_ctx *c, gir_value *v, const gir_value *w) {
  if (!v) return NULL;
  if (gir_value_numel(v) == 1) return to_scalar(c, v);
  if (v->shape.rank != 1 || v->shape.dims[0] != w->shape.dims[0]) {
    imp_fail(c, "weight zero point must be a scalar or hold one value per output channel");
    return NULL;
  }
  return along_axis(c, v, w->shape.rank, 0);
}

/* Σ (x - zx)·(w - zw) + b in int32. With zw zero and zx a constant: the conv of
 * the raw 8-bit operands, taps outside padded with zx ("pad_value": a padded tap
 * then adds zx·w, which the correction takes back), plus b - zx · Σw per output
 * channel (constant, folded); otherwise both operands widened and centered. */
static gir_value *conv_q8(imp_ctx *c, gir_value *x, gir_value *xzp, gir_value *wt, gir_value *wzp, gir_value *b,
                          const win *w, int64_t group) {
  int known;
  int64_t zx = const_zp(xzp, &known);
  if (!known || !imp_zero_or_absent(wzp))
    return emit_conv(c, centered_i32(c, x, xzp ? to_scalar(c, xzp) : NULL), centered_i32(c, wt, weight_param(c, wzp, wt)),
                     b, w, group);
  gir_value *bias = b;
  if (zx) {
    int64_t axes[GIR_MAX_RANK];
    int32_t na = wt->shape.rank - 1;
    for (int i = 0; i < na; i++) axes[i] = i + 1;
    gir_value *corr = zp_times_sum(c, wt, zx, axes, na, 0);
    bias = b ? sub(c, b, corr) : imp_unary(c, GIR_UNARY_NEG, corr);
    if (!bias) return NULL;
  }
  gir_value *ins[3] = {x, wt, bias};
  gir_node *g = imp_new_node(c, GIR_OP_conv, ins, bias ? 3 : 2, 1);
  set_window_attrs(c, g, w);
  gir_attr_set_int(c->g, g, "group", group);
  if (zx) gir_attr_set_int(c->g, g, "pad_value", zx);
  return imp_finish(c, g);
}

int imp_cv_ConvInteger(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *wt = imp_in(n, 1), *xzp = imp_in(n, 2), *wzp = imp_in(n, 3);
  if (!x || !wt) return imp_fail(c, "needs inputs x and w");
  if (int8_operand(c, x, "x") < 0 || int8_operand(c, wt, "w") < 0) return -1;
  if (xzp && gir_value_numel(xzp) != 1) return imp_fail(c, "x_zero_point must be a scalar");
  win w;
  int64_t group;
  if (conv_window(c, n, x, wt, &w, &group) < 0) return -1;
  return imp_set_output(c, n, 0, conv_q8(c, x, xzp, wt, wzp, NULL, &w, group));
}

int imp_cv_QLinearConv(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *xs = imp_in(n, 1), *xzp = imp_in(n, 2), *wt = imp_in(n, 3), *ws = imp_in(n, 4),
            *wzp = imp_in(n, 5), *ys = imp_in(n, 6), *yzp = imp_in(n, 7), *b = imp_in(n, 8);
  if (!x || !xs || !wt || !ws || !ys) return imp_fail(c, "needs inputs x, x_scale, w, w_scale and y_scale");
  if (int8_operand(c, x, "x") < 0 || int8_operand(c, wt, "w") < 0) return -1;
  if ((xzp && gir_value_numel(xzp) != 1) || gir_value_numel(xs) != 1 || gir_value_numel(ys) != 1 ||
      (yzp && gir_value_numel(yzp) != 1))
    return imp_fail(c, "x and y quantization parameters must be scalars");
  if (b && b->dtype != GIR_I32) return imp_fail(c, "B must be int32");
  win w;
  int64_t group;
  if (conv_window(c, n, x, wt, &w, &group) < 0) return -1;
  int r = x->shape.rank;
  gir_value *acc = conv_q8(c, x, xzp, wt, wzp, b, &w, group);
  if (gir_value_numel(ws) != 1 && (ws->shape.rank != 1 || ws->shape.dims[0] != wt->shape.dims[0]))
    return imp_fail(c, "w_scale must be a scalar or hold one value per output channel");
  gir_value *wsv = gir_value_numel(ws) == 1 ? to_scalar(c, ws) : along_axis(c, ws, r, 1);
  gir_value *factor =
      divide(c, mul(c, to_scalar(c, xs), imp_cast(c, wsv, xs->dtype)), imp_cast(c, to_scalar(c, ys), xs->dtype));
  return imp_set_output(c, n, 0, requantize(c, acc, factor, yzp ? to_scalar(c, yzp) : NULL, x->dtype));
}

/* ---------- Einsum ---------- */

/* Labels: 'A'-'Z' → 0..25, 'a'-'z' → 26..51 (ASCII order, for the implicit
 * output), the dims an ellipsis stands for → 52.. right-aligned across operands. */
#define EIN_ELL 52
#define EIN_LABELS (EIN_ELL + GIR_MAX_RANK)

typedef struct ein_op {
  gir_value *v;
  int32_t n;
  int lab[GIR_MAX_RANK];
} ein_op;

static int ein_letter(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return 26 + ch - 'a';
  return -1;
}

/* Parses one term into labels (ellipsis dims as -1 - k placeholders resolved by
 * the caller). Returns the label count, -1 on error; *ell_at: position of the
 * ellipsis or -1. */
static int ein_parse_term(imp_ctx *c, const char *s, size_t len, int *lab, int *ell_at, const char *eq) {
  int cnt = 0;
  *ell_at = -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      if (*ell_at >= 0 || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
        return imp_fail(c, "bad ellipsis in equation '%s'", eq);
      *ell_at = cnt;
      i += 2;
      continue;
    }
    int l = ein_letter(s[i]);
    if (l < 0) return imp_fail(c, "bad character '%c' in equation '%s'", s[i], eq);
    if (cnt >= GIR_MAX_RANK) return imp_fail(c, "term too long in equation '%s'", eq);
    lab[cnt++] = l;
  }
  return cnt;
}

/* Takes the diagonal of every label repeated within one operand. */
static int ein_diagonal(imp_ctx *c, ein_op *o) {
  for (;;) {
    int p = -1, q = -1;
    for (int i = 0; i < o->n && p < 0; i++)
      for (int j = i + 1; j < o->n; j++)
        if (o->lab[i] == o->lab[j]) {
          p = i, q = j;
          break;
        }
    if (p < 0) return 0;
    int64_t d = o->v->shape.dims[p];
    if (o->v->shape.dims[q] != d) return imp_fail(c, "repeated label with different dims %lld and %lld", (long long)d,
                                                  (long long)o->v->shape.dims[q]);
    int64_t perm[GIR_MAX_RANK], dims[GIR_MAX_RANK];
    int lab[GIR_MAX_RANK], m = 0;
    for (int i = 0; i < o->n; i++)
      if (i != p && i != q) {
        perm[m] = i;
        dims[m] = o->v->shape.dims[i];
        lab[m++] = o->lab[i];
      }
    perm[m] = p;
    perm[m + 1] = q;
    gir_value *v = imp_transpose(c, o->v, perm);
    dims[m] = d * d;
    v = imp_reshape(c, v, m + 1, dims);
    v = v ? imp_slice_axis(c, v, m, 0, d + 1, d) : NULL;
    if (!v) return -1;
    lab[m] = o->lab[p];
    o->v = v;
    o->n = m + 1;
    memcpy(o->lab, lab, sizeof lab);
  }
}

/* Sums out every axis whose label keep[] does not hold. */
static int ein_sum_out(imp_ctx *c, ein_op *o, const int *keep) {
  int64_t axes[GIR_MAX_RANK];
  int na = 0, m = 0;
  for (int i = 0; i < o->n; i++) {
    if (!keep[o->lab[i]]) axes[na++] = i;
    else o->lab[m++] = o->lab[i];
  }
  if (!na) return 0;
  o->v = imp_reduce(c, GIR_REDUCE_SUM, o->v, axes, na, 0);
  o->n = m;
  return o->v ? 0 : -1;
}

static int ein_find(const ein_op *o, int l) {
  for (int i = 0; i < o->n; i++)
    if (o->lab[i] == l) return i;
  return -1;
}

/* a ⊗ b contracted over their shared labels not in keep: both are transposed to
 * [batch, free, contracted] / [batch, contracted, free], flattened to one matmul
 * (batch dims broadcast), and the free dims unflattened. */
static int ein_combine(imp_ctx *c, ein_op *a, ein_op *b, const int *keep) {
  int keep_a[EIN_LABELS], keep_b[EIN_LABELS];
  for (int l = 0; l < EIN_LABELS; l++) {
    keep_a[l] = keep[l] || ein_find(b, l) >= 0;
    keep_b[l] = keep[l] || ein_find(a, l) >= 0;
  }
  if (ein_sum_out(c, a, keep_a) < 0 || ein_sum_out(c, b, keep_b) < 0) return -1;
  int batch[GIR_MAX_RANK], left[GIR_MAX_RANK], right[GIR_MAX_RANK], con[GIR_MAX_RANK];
  int nb = 0, nl = 0, nr = 0, nc = 0;
  for (int i = 0; i < a->n; i++) {
    int l = a->lab[i];
    if (ein_find(b, l) < 0) left[nl++] = l;
    else if (keep[l]) batch[nb++] = l;
    else con[nc++] = l;
  }
  for (int i = 0; i < b->n; i++)
    if (ein_find(a, b->lab[i]) < 0) right[nr++] = b->lab[i];
  if (nb + 2 > GIR_MAX_RANK || nb + nl + nr > GIR_MAX_RANK) return imp_fail(c, "einsum intermediate rank too high");
  int64_t pa[GIR_MAX_RANK], pb[GIR_MAX_RANK], da[GIR_MAX_RANK], db[GIR_MAX_RANK];
  int64_t L = 1, R = 1, K = 1, Kb = 1;
  int m = 0;
  for (int i = 0; i < nb; i++) {
    pa[m] = ein_find(a, batch[i]);
    pb[m] = ein_find(b, batch[i]);
    da[m] = a->v->shape.dims[pa[m]];
    db[m] = b->v->shape.dims[pb[m]];
    m++;
  }
  for (int i = 0; i < nl; i++) {
    pa[nb + i] = ein_find(a, left[i]);
    L *= a->v->shape.dims[pa[nb + i]];
  }
  for (int i = 0; i < nc; i++) {
    pa[nb + nl + i] = ein_find(a, con[i]);
    pb[nb + i] = ein_find(b, con[i]);
    K *= a->v->shape.dims[pa[nb + nl + i]];
    Kb *= b->v->shape.dims[pb[nb + i]];
  }
  for (int i = 0; i < nr; i++) {
    pb[nb + nc + i] = ein_find(b, right[i]);
    R *= b->v->shape.dims[pb[nb + nc + i]];
  }
  if (K != Kb) return imp_fail(c, "contracted dims differ between operands");
  gir_value *at = imp_transpose(c, a->v, pa), *bt = imp_transpose(c, b->v, pb);
  da[nb] = L, da[nb + 1] = K;
  db[nb] = K, db[nb + 1] = R;
  gir_value *y = imp_matmul(c, imp_reshape(c, at, nb + 2, da), imp_reshape(c, bt, nb + 2, db));
  if (!y) return -1;
  gir_shape s = {.rank = nb};
  for (int i = 0; i < nb; i++) s.dims[i] = y->shape.dims[i];
  int lab[GIR_MAX_RANK];
  memcpy(lab, batch, sizeof(int) * (size_t)nb);
  for (int i = 0; i < nl; i++) {
    s.dims[s.rank] = a->v->shape.dims[ein_find(a, left[i])];
    lab[s.rank++] = left[i];
  }
  for (int i = 0; i < nr; i++) {
    s.dims[s.rank] = b->v->shape.dims[ein_find(b, right[i])];
    lab[s.rank++] = right[i];
  }
  a->v = reshape_s(c, y, &s);
  a->n = s.rank;
  memcpy(a->lab, lab, sizeof lab);
  return a->v ? 0 : -1;
}

int imp_cv_Einsum(imp_ctx *c, imp_node *n) {
  const char *eq0 = imp_attr_string(c, n, "equation", NULL);
  if (!eq0) return imp_fail(c, "attribute equation is required");
  size_t len0 = strlen(eq0);
  if (len0 > 1024) return imp_fail(c, "equation too long");
  char *eq = gir_arena_calloc(c->g->arena, len0 + 1, 1);
  size_t len = 0;
  for (size_t i = 0; i < len0; i++)
    if (eq0[i] != ' ' && eq0[i] != '\t') eq[len++] = eq0[i];
  if (n->n_in < 1 || n->n_in > 64) return imp_fail(c, "needs 1 to 64 inputs");
  for (int i = 0; i < n->n_in; i++)
    if (!n->in[i]) return imp_fail(c, "input %d is missing", i);
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : len;

  ein_op *ops = gir_arena_calloc(c->g->arena, (size_t)n->n_in, sizeof *ops);
  int raw[64][GIR_MAX_RANK], raw_n[64], ell_at[64], ell_n[64], max_ell = 0;
  size_t start = 0;
  int t = 0;
  for (size_t i = 0; i <= lhs_len; i++) {
    if (i < lhs_len && eq[i] != ',') continue;
    if (t >= n->n_in) return imp_fail(c, "equation '%s' has more terms than the %d inputs", eq0, n->n_in);
    int cnt = ein_parse_term(c, eq + start, i - start, raw[t], &ell_at[t], eq0);
    if (cnt < 0) return -1;
    raw_n[t] = cnt;
    int r = n->in[t]->shape.rank;
    ell_n[t] = r - cnt;
    if (ell_n[t] < 0 || (ell_at[t] < 0 && ell_n[t] != 0))
      return imp_fail(c, "term %d of '%s' does not match input rank %d", t, eq0, r);
    if (ell_n[t] > max_ell) max_ell = ell_n[t];
    start = i + 1;
    t++;
  }
  if (t != n->n_in) return imp_fail(c, "equation '%s' has %d terms for %d inputs", eq0, t, n->n_in);

  /* Expand ellipses; check label dims. */
  int64_t ldim[EIN_LABELS];
  int lcount[EIN_LABELS] = {0};
  for (int l = 0; l < EIN_LABELS; l++) ldim[l] = -1;
  for (int i = 0; i < n->n_in; i++) {
    ein_op *o = &ops[i];
    o->v = n->in[i];
    o->n = 0;
    for (int j = 0; j <= raw_n[i]; j++) {
      if (j == ell_at[i])
        for (int e = 0; e < ell_n[i]; e++) o->lab[o->n++] = EIN_ELL + (max_ell - ell_n[i]) + e;
      if (j < raw_n[i]) o->lab[o->n++] = raw[i][j];
    }
    for (int j = 0; j < o->n; j++) {
      int l = o->lab[j];
      int64_t d = o->v->shape.dims[j];
      lcount[l]++;
      if (ldim[l] < 0) {
        ldim[l] = d;
      } else if (ldim[l] != d) {
        if (l < EIN_ELL || (d != 1 && ldim[l] != 1))
          return imp_fail(c, "label dims disagree (%lld vs %lld) in equation '%s'", (long long)ldim[l], (long long)d,
                          eq0);
        if (d != 1) ldim[l] = d;
      }
    }
  }

  /* Output labels. */
  int out[GIR_MAX_RANK], n_out = 0, in_out[EIN_LABELS] = {0};
  if (arrow) {
    int olab[GIR_MAX_RANK], oell;
    int cnt = ein_parse_term(c, arrow + 2, strlen(arrow + 2), olab, &oell, eq0);
    if (cnt < 0) return -1;
    if (cnt + (oell >= 0 ? max_ell : 0) > GIR_MAX_RANK) return imp_fail(c, "output rank too high in '%s'", eq0);
    for (int j = 0; j <= cnt; j++) {
      if (j == oell)
        for (int e = 0; e < max_ell; e++) out[n_out++] = EIN_ELL + e;
      if (j < cnt) out[n_out++] = olab[j];
    }
  } else {
    for (int e = 0; e < max_ell; e++) out[n_out++] = EIN_ELL + e;
    for (int l = 0; l < EIN_ELL; l++)
      if (lcount[l] == 1) {
        if (n_out >= GIR_MAX_RANK) return imp_fail(c, "output rank too high in '%s'", eq0);
        out[n_out++] = l;
      }
  }
  for (int i = 0; i < n_out; i++) {
    if (in_out[out[i]]++) return imp_fail(c, "output label repeated in '%s'", eq0);
    if (!lcount[out[i]]) return imp_fail(c, "output label not in any input in '%s'", eq0);
  }

  /* Diagonals, then labels used by no one else are summed out early. */
  for (int i = 0; i < n->n_in; i++) {
    if (ein_diagonal(c, &ops[i]) < 0) return -1;
    int keep[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++) {
      keep[l] = in_out[l];
      for (int j = 0; j < n->n_in && !keep[l]; j++)
        if (j != i && ein_find(&ops[j], l) >= 0) keep[l] = 1;
    }
    if (ein_sum_out(c, &ops[i], keep) < 0) return -1;
  }
  /* Fold left. */
  for (int i = 1; i < n->n_in; i++) {
    int keep[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++) {
      keep[l] = in_out[l];
      for (int j = i + 1; j < n->n_in && !keep[l]; j++)
        if (ein_find(&ops[j], l) >= 0) keep[l] = 1;
    }
    if (ops[i].v->dtype != ops[0].v->dtype) return imp_fail(c, "inputs differ in element type");
    if (ein_combine(c, &ops[0], &ops[i], keep) < 0) return -1;
  }
  if (ein_sum_out(c, &ops[0], in_out) < 0) return -1;
  if (ops[0].n != n_out) return imp_unsupported_node(c, n, "equation '%s' (broadcast output labels)", eq0);
  int64_t perm[GIR_MAX_RANK];
  for (int i = 0; i < n_out; i++) {
    perm[i] = ein_find(&ops[0], out[i]);
    if (perm[i] < 0) return imp_unsupported_node(c, n, "equation '%s'", eq0);
  }
  return imp_set_output(c, n, 0, imp_transpose(c, ops[0].v, perm));
}
