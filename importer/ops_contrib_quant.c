/* ops_contrib_quant.c — ONNX Runtime's quantized com.microsoft ops, and its float
 * conv variants, as its CPU kernels compute them (onnxruntime/contrib_ops/cpu/
 * quantization and MLAS), written with canonical ops.
 *
 * Why this way: ONNX Runtime's quantizer (QOperator format) and its graph optimizer
 * write these ops into models; kiln has no quantized kernels of its own beyond the
 * integer matmul and conv, so each op here is what ORT computes, spelled as
 *   dequantize → float op → quantize
 * dequantize: (float(x) - float(zero_point)) · scale, quantize: saturate(round half
 * to even(y / scale) + zero_point), per tensor (one scale and zero point each), the
 * float op the importer's own ai.onnx converter run on the node's attributes. ORT's
 * kernels compute most of them that way (QLinearConcat, QLinearAveragePool, the
 * 256-entry tables of QLinearSigmoid and QLinearLeakyRelu). QLinearAdd and QLinearMul
 * with constant parameters follow MLAS's x86-64 kernels operation by operation
 * (folded float32 scale ratios; see qladd_mlas and qlmul_mlas): identical results.
 * QLinearSoftmax with a constant X_scale follows its kernel's exp table and float32
 * row sum (qlinear_softmax_table): identical results. Where ORT takes another route
 * still (the MLAS logistic approximation, QLinearSoftmax with a computed X_scale)
 * results may differ by one quantization step here and there
 * (tests/py/test_contrib_quant.py measures how often). The ops:
 *   QLinearAdd, QLinearMul      C = q(dq(A) ∘ dq(B)), broadcasting, in MLAS's order
 *   QLinearConcat               Y = concat(q_Y(dq(X_i))) along axis (an input whose
 *                               constant scale and zero point are Y's is copied)
 *   QLinearAveragePool          q(AveragePool(dq(X))), channels_last taken
 *   QLinearGlobalAveragePool    as MLAS: round((Σx - zp·n) · (x_scale / (y_scale·n)))
 *                               + y_zp over the spatial axes (channels_last taken)
 *   QLinearSigmoid, QLinearLeakyRelu (alpha)
 *                               q(f(dq(X)))
 *   QLinearSoftmax (axis, opset) as ORT: x_zero_point ignored, softmax in the
 *                               opset's sense; with a constant X_scale as ORT's kernel
 *                               computes it (its exp table, a float32 row sum in
 *                               element order: qlinear_softmax_table), else
 *                               y = round(p · floor(1 / y_scale)) + y_zp; saturated
 *                               (ORT wraps int8 results above 127)
 *   DynamicQuantizeMatMul       A quantized to uint8 as DynamicQuantizeLinear,
 *                               MatMulInteger with B, · a_scale·b_scale, + bias
 *   MatMulIntegerToFloat        MatMulInteger(A, B) · a_scale·b_scale + bias
 *   QGemm (alpha, transA, transB)
 *                               acc = (A - za)(B - zb) + C in int32; float output
 *                               acc · alpha·a_scale·b_scale, or requantized to y
 *   NhwcConv                    Conv on channels-last X (N, spatial…, C) with weights
 *                               (M, kernel…, C/group), as ORT's NhwcConv fusion
 *                               (transformers/fusion_nhwc_conv.py) writes them;
 *                               output channels last
 *   FusedConv (activation, activation_params)
 *                               act(Conv(X, W, B) + Z) for Relu, Tanh, Sigmoid,
 *                               LeakyRelu, Clip, HardSigmoid
 *   MatMulNBits (K, N, bits 4, block_size)
 *                               A @ ((q - zp) · scale)ᵀ, q the 4-bit values packed two
 *                               a byte (low nibble first), zp 8 or the packed uint8
 *                               zero points; other bits, float zero points and g_idx
 *                               are refused with a message.
 * Ops whose scales or zero points hold more than one value are refused (ORT's CPU
 * kernels take per-tensor ones) except b_scale / b_zero_point of the matmuls, which
 * may be per column. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "ops.h"

static int is_q8(gir_dtype t) { return t == GIR_U8 || t == GIR_I8; }

static int q8_input(imp_ctx *c, const gir_value *x, const char *what) {
  if (!x) return imp_fail(c, "needs input %s", what);
  if (!is_q8(x->dtype)) return imp_fail(c, "%s must be int8 or uint8, not %s", what, gir_dtype_name(x->dtype));
  return 0;
}

static int f32_input(imp_ctx *c, const gir_value *x, const char *what) {
  if (!x) return imp_fail(c, "needs input %s", what);
  if (x->dtype != GIR_F32) return imp_fail(c, "%s must be float32, not %s", what, gir_dtype_name(x->dtype));
  return 0;
}

static gir_value *scalar_of(imp_ctx *c, gir_value *v) {
  int64_t none = 0;
  return imp_reshape(c, v, 0, &none);
}

static gir_value *clamp(imp_ctx *c, gir_value *v, double lo, double hi) {
  v = imp_binary(c, GIR_BINARY_MAX, v, v ? imp_scalar_like(c, v, lo) : NULL);
  return imp_binary(c, GIR_BINARY_MIN, v, v ? imp_scalar_like(c, v, hi) : NULL);
}

/* A per-tensor quantization: scale (float32 scalar) and zero point (scalar of the
 * quantized type, NULL for 0). */
typedef struct qparam {
  gir_value *s, *zp;
} qparam;

static int qparam_of(imp_ctx *c, const imp_node *n, int si, int zi, gir_dtype t, const char *sname,
                     const char *zname, qparam *q) {
  gir_value *s = imp_in(n, si), *zp = imp_in(n, zi);
  if (f32_input(c, s, sname) < 0) return -1;
  if (gir_value_numel(s) != 1) return imp_fail(c, "%s must hold one value (per-tensor quantization)", sname);
  q->s = scalar_of(c, s);
  q->zp = NULL;
  if (zp) {
    if (zp->dtype != t) return imp_fail(c, "%s must be %s, not %s", zname, gir_dtype_name(t), gir_dtype_name(zp->dtype));
    if (gir_value_numel(zp) != 1) return imp_fail(c, "%s must hold one value (per-tensor quantization)", zname);
    q->zp = scalar_of(c, zp);
  }
  return q->s && (!zp || q->zp) ? 0 : -1;
}

/* (float(x) - float(zp)) · scale, as ORT's dequantize_value. */
static gir_value *dequant(imp_ctx *c, gir_value *x, const qparam *q) {
  gir_value *d = imp_cast(c, x, GIR_F32);
  if (q->zp) d = imp_binary(c, GIR_BINARY_SUB, d, imp_cast(c, q->zp, GIR_F32));
  return imp_binary(c, GIR_BINARY_MUL, d, q->s);
}

static void range_of(gir_dtype t, double *lo, double *hi) {
  *lo = t == GIR_I8 ? -128 : 0;
  *hi = t == GIR_I8 ? 127 : 255;
}

/* saturate(round(y) + zp) as t, y already divided by the scale. */
static gir_value *requant(imp_ctx *c, gir_value *y, gir_value *zp, gir_dtype t) {
  double lo, hi;
  range_of(t, &lo, &hi);
  gir_value *r = imp_unary(c, GIR_UNARY_ROUND, y);
  if (zp) r = imp_binary(c, GIR_BINARY_ADD, r, imp_cast(c, zp, GIR_F32));
  return imp_cast(c, clamp(c, r, lo, hi), t);
}

/* saturate(round_half_even(y / scale) + zero_point) as t, as MlasQuantizeLinear. */
static gir_value *quant(imp_ctx *c, gir_value *y, const qparam *q, gir_dtype t) {
  return requant(c, imp_binary(c, GIR_BINARY_DIV, y, q->s), q->zp, t);
}

/* Runs the importer's converter of an ai.onnx op (fn, at `opset`) on ins with this
 * node's attributes; its n_out outputs into outs. 0, or -1 with the error set. */
static int onnx_op(imp_ctx *c, const imp_node *n, imp_convert_fn fn, const char *op, int64_t opset, gir_value **ins,
                   int32_t n_in, gir_value **outs, int32_t n_out) {
  const char **names = gir_arena_calloc(c->g->arena, (size_t)n_out, sizeof *names);
  gir_value **out = gir_arena_calloc(c->g->arena, (size_t)n_out, sizeof *out);
  imp_kind *kind = gir_arena_calloc(c->g->arena, (size_t)n_out, sizeof *kind);
  if (!names || !out || !kind) return imp_fail(c, "out of memory");
  const char *base = n->n_out > 0 && n->out_names[0] && n->out_names[0][0] ? n->out_names[0] : n->op_type;
  for (int32_t i = 0; i < n_out; i++)
    if (!(names[i] = gir_arena_printf(c->g->arena, "%s::%s%d", base, op, i))) return imp_fail(c, "out of memory");
  imp_node u = {.proto = n->proto, .op_type = op, .name = n->name, .opset = opset, .n_in = n_in, .in = ins,
                .n_out = n_out, .out_names = names, .out = out, .out_kind = kind};
  int rc = fn(c, &u);
  if (rc < 0) return c->err->msg[0] ? -1 : imp_fail(c, "%s failed", op);
  for (int32_t i = 0; i < n_out; i++)
    if (!(outs[i] = out[i])) return imp_fail(c, "%s gave no output %d", op, i);
  return 0;
}

int imp_contrib_onnx_op(imp_ctx *c, const imp_node *n, imp_convert_fn fn, const char *op, int64_t opset,
                        gir_value **ins, int32_t n_in, gir_value **outs, int32_t n_out) {
  return onnx_op(c, n, fn, op, opset, ins, n_in, outs, n_out);
}

static gir_value *onnx_op1(imp_ctx *c, const imp_node *n, imp_convert_fn fn, const char *op, int64_t opset,
                           gir_value **ins, int32_t n_in) {
  gir_value *y = NULL;
  return onnx_op(c, n, fn, op, opset, ins, n_in, &y, 1) < 0 ? NULL : y;
}

/* Permutation moving the last axis to position 1 (to_first) or back. */
static gir_value *channels_move(imp_ctx *c, gir_value *x, int to_first) {
  int64_t perm[GIR_MAX_RANK];
  int r = x ? x->shape.rank : 0;
  if (!x) return NULL;
  perm[0] = 0;
  for (int i = 1; i < r; i++) perm[i] = to_first ? (i == 1 ? r - 1 : i - 1) : (i == r - 1 ? 1 : i + 1);
  return imp_transpose(c, x, perm);
}

/* ---------- element-wise ---------- */

/* The float formula of a QLinear binary op: quantize(fn(dequantize(a), dequantize(b))). */
static int qlinear_binary_float(imp_ctx *c, imp_node *n, gir_binary_fn fn, gir_value *a, gir_value *b,
                                const qparam *qa, const qparam *qb, const qparam *qc) {
  gir_value *y = imp_binary(c, fn, dequant(c, a, qa), dequant(c, b, qb));
  return imp_set_output(c, n, 0, quant(c, y, qc, a->dtype));
}

/* A constant scalar's value as a double; 0 for an absent zero point. *known = 0 when
 * not a constant. */
static double const_value(const gir_value *v, int *known);

/* f64(x) · k + y, in float64 (k a constant). */
static gir_value *mul_add64(imp_ctx *c, gir_value *x, double k, gir_value *y) {
  gir_value *p = imp_binary(c, GIR_BINARY_MUL, x, x ? imp_scalar_like(c, x, k) : NULL);
  return imp_binary(c, GIR_BINARY_ADD, p, y);
}

/* The constant quantization parameters of a QLinearAdd / QLinearMul. */
typedef struct qconst {
  double sa, za, sb, zb, sc, zc;
} qconst;

/* QLinearAdd as ONNX Runtime's x86-64 kernel computes it (MlasQLinearAddKernelAvx2Helper,
 * onnxruntime/core/mlas/lib/intrinsics/avx2/qladd_avx2.cpp, which MLAS picks on every
 * AVX2 machine): with float32 ratios rA = A_scale / C_scale, rB = B_scale / C_scale and
 *   fixed = float(C_zp) - fma(rA, A_zp, rB · B_zp)
 * each element is
 *   C = saturate(round_half_even(fma(a, rA, fma(b, rB, fixed))))
 * on the raw 8-bit values a, b (their zero points are in `fixed`). A whole-tensor scalar
 * operand is folded first, as the kernel's IsScalarA / IsScalarB paths do:
 * fixed' = fixed + float(s · r) (two roundings), then one fma with the other operand.
 * Each fma is computed exactly in float64 (an 8-bit integer times a float32 has at most
 * 32 significant bits; the sum with `fixed` stays within 53 for any scale ratio MLAS
 * takes) and rounded once to float32. Measured against ONNX Runtime 1.31.1 on every
 * pair of uint8 inputs for 30 random parameter sets: identical; the float formula
 * q((dq(a) + dq(b)) / C_scale) was off by one step for 6 of 1 966 080. Rounding only:
 * one float64 fma pair per element more than the float formula. */
static gir_value *qladd_mlas(imp_ctx *c, gir_value *a, gir_value *b, const qconst *q, gir_dtype t) {
  double sa = q->sa, za = q->za, sb = q->sb, zb = q->zb, sc = q->sc, zc = q->zc;
  float ra = (float)sa / (float)sc, rb = (float)sb / (float)sc;
  float fixed = (float)zc - fmaf(ra, (float)za, rb * (float)zb);
  int sa1 = gir_value_numel(a) == 1, sb1 = gir_value_numel(b) == 1;
  gir_value *fa = imp_cast(c, a, GIR_F64), *fb = imp_cast(c, b, GIR_F64), *y;
  if (sa1 || sb1) { /* fixed + float(s · r), then fma(v, r', ·) */
    gir_value *s = sb1 ? fb : fa, *v = sb1 ? fa : fb;
    double rs = sb1 ? rb : ra, rv = sb1 ? ra : rb;
    gir_value *sr = imp_cast(c, imp_binary(c, GIR_BINARY_MUL, s, s ? imp_scalar_like(c, s, rs) : NULL), GIR_F32);
    gir_value *fx = imp_cast(c, imp_binary(c, GIR_BINARY_ADD, imp_cast(c, sr, GIR_F64), imp_scalar(c, GIR_F64, fixed)),
                             GIR_F32);
    y = imp_cast(c, mul_add64(c, v, rv, imp_cast(c, fx, GIR_F64)), GIR_F32);
  } else {
    gir_value *in = imp_cast(c, mul_add64(c, fb, rb, fb ? imp_scalar_like(c, fb, fixed) : NULL), GIR_F32);
    y = imp_cast(c, mul_add64(c, fa, ra, imp_cast(c, in, GIR_F64)), GIR_F32);
  }
  return requant(c, y, NULL, t);
}

/* x - zp in int32 (zp NULL: x). */
static gir_value *debias_i32(imp_ctx *c, gir_value *x, double zp) {
  gir_value *v = imp_cast(c, x, GIR_I32);
  return zp != 0 ? imp_binary(c, GIR_BINARY_SUB, v, v ? imp_scalar(c, GIR_I32, zp) : NULL) : v;
}

/* QLinearMul as ONNX Runtime's x86-64 kernel computes it (MlasQLinearMulKernel, SSE2 path,
 * onnxruntime/core/mlas/lib/qlmul.cpp): the product of the debiased operands in integers
 *   p = (a - A_zp) · (b - B_zp)                       (exact in int32 and in float32)
 *   C = saturate(round_half_even(float(p) · r + float(C_zp)))
 * with the float32 ratio r = A_scale · B_scale / C_scale (left to right), the multiply
 * and the add rounded separately (no FMA in that file). The float formula
 * q(dq(a) · dq(b)) rounds the scaled operands first and was one step off for some
 * int8 values (test_contrib_quant). */
static gir_value *qlmul_mlas(imp_ctx *c, gir_value *a, gir_value *b, const qconst *q, gir_dtype t) {
  double sa = q->sa, za = q->za, sb = q->sb, zb = q->zb, sc = q->sc;
  float r = (float)sa * (float)sb;
  r = r / (float)sc;
  gir_value *p = imp_binary(c, GIR_BINARY_MUL, debias_i32(c, a, za), debias_i32(c, b, zb));
  gir_value *y = imp_binary(c, GIR_BINARY_MUL, imp_cast(c, p, GIR_F32), imp_scalar(c, GIR_F32, r));
  if (q->zc != 0) y = imp_binary(c, GIR_BINARY_ADD, y, imp_scalar(c, GIR_F32, q->zc));
  return requant(c, y, NULL, t);
}

typedef gir_value *(*mlas_binary)(imp_ctx *c, gir_value *a, gir_value *b, const qconst *q, gir_dtype t);

/* QLinearAdd / QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp, computed
 * as MLAS's x86 kernel does (mlas), else (parameters it does not take) through the
 * float formula (qlinear_binary_float). */
static int qlinear_binary_mlas(imp_ctx *c, imp_node *n, mlas_binary mlas, gir_binary_fn fn) {
  gir_value *a = imp_in(n, 0), *b = imp_in(n, 3);
  if (q8_input(c, a, "A") < 0 || q8_input(c, b, "B") < 0) return -1;
  if (a->dtype != b->dtype) return imp_fail(c, "A and B must have one type");
  qparam qa, qb, qc;
  if (qparam_of(c, n, 1, 2, a->dtype, "A_scale", "A_zero_point", &qa) < 0 ||
      qparam_of(c, n, 4, 5, a->dtype, "B_scale", "B_zero_point", &qb) < 0 ||
      qparam_of(c, n, 6, 7, a->dtype, "C_scale", "C_zero_point", &qc) < 0)
    return -1;
  int k[6];
  qconst q = {const_value(qa.s, &k[0]), const_value(qa.zp, &k[1]), const_value(qb.s, &k[2]),
              const_value(qb.zp, &k[3]), const_value(qc.s, &k[4]), const_value(qc.zp, &k[5])};
  for (int i = 0; i < 6; i++)
    if (!k[i]) return qlinear_binary_float(c, n, fn, a, b, &qa, &qb, &qc); /* parameters computed at run time */
  gir_value *y = mlas(c, a, b, &q, a->dtype);
  if (y) return imp_set_output(c, n, 0, y);
  return qlinear_binary_float(c, n, fn, a, b, &qa, &qb, &qc);
}

int imp_cv_ms_QLinearMul(imp_ctx *c, imp_node *n) { return qlinear_binary_mlas(c, n, qlmul_mlas, GIR_BINARY_MUL); }

int imp_cv_ms_QLinearAdd(imp_ctx *c, imp_node *n) { return qlinear_binary_mlas(c, n, qladd_mlas, GIR_BINARY_ADD); }

/* X, X_scale, X_zero_point, Y_scale, Y_zero_point: q(f(dq(X))). */
static int qlinear_unary(imp_ctx *c, imp_node *n, gir_unary_fn fn, double alpha) {
  gir_value *x = imp_in(n, 0);
  if (q8_input(c, x, "X") < 0) return -1;
  qparam qx, qy;
  if (qparam_of(c, n, 1, 2, x->dtype, "X_scale", "X_zero_point", &qx) < 0 ||
      qparam_of(c, n, 3, 4, x->dtype, "Y_scale", "Y_zero_point", &qy) < 0)
    return -1;
  gir_value *y = imp_unary_p(c, fn, dequant(c, x, &qx), alpha, 0, 0);
  return imp_set_output(c, n, 0, quant(c, y, &qy, x->dtype));
}

int imp_cv_ms_QLinearSigmoid(imp_ctx *c, imp_node *n) { return qlinear_unary(c, n, GIR_UNARY_SIGMOID, 0); }
int imp_cv_ms_QLinearLeakyRelu(imp_ctx *c, imp_node *n) {
  return qlinear_unary(c, n, GIR_UNARY_LEAKY_RELU, imp_attr_float(n, "alpha", 0.01));
}

/* ---------- QLinearConcat ---------- */

static double const_value(const gir_value *v, int *known) {
  *known = 1;
  if (!v) return 0;
  if (!v->data) {
    *known = 0;
    return 0;
  }
  switch (v->dtype) {
  case GIR_F32: return *(const float *)v->data;
  case GIR_U8: return *(const uint8_t *)v->data;
  case GIR_I8: return *(const int8_t *)v->data;
  default: *known = 0; return 0;
  }
}

static int same_qparams(const qparam *a, const qparam *b) {
  int k1, k2, k3, k4;
  double s1 = const_value(a->s, &k1), s2 = const_value(b->s, &k2);
  double z1 = const_value(a->zp, &k3), z2 = const_value(b->zp, &k4);
  return k1 && k2 && k3 && k4 && s1 == s2 && z1 == z2;
}

int imp_cv_ms_QLinearConcat(imp_ctx *c, imp_node *n) {
  if (n->n_in < 5 || (n->n_in - 2) % 3)
    return imp_fail(c, "needs Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples, got %d inputs",
                    n->n_in);
  gir_value *x0 = imp_in(n, 2);
  if (q8_input(c, x0, "X") < 0) return -1;
  gir_dtype t = x0->dtype;
  qparam qy;
  if (qparam_of(c, n, 0, 1, t, "Y_scale", "Y_zero_point", &qy) < 0) return -1;
  if (!imp_attr(n, "axis")) return imp_fail(c, "needs attribute axis");
  int64_t axis;
  if (imp_axis(c, imp_attr_int(n, "axis", 0), x0->shape.rank, &axis) < 0) return -1;
  int64_t k = (n->n_in - 2) / 3;
  gir_value **xs = gir_arena_calloc(c->g->arena, (size_t)k, sizeof *xs);
  if (!xs) return imp_fail(c, "out of memory");
  for (int64_t i = 0; i < k; i++) {
    gir_value *x = imp_in(n, (int)(2 + 3 * i));
    if (q8_input(c, x, "X") < 0) return -1;
    if (x->dtype != t) return imp_fail(c, "input %lld is %s, the first %s", (long long)i, gir_dtype_name(x->dtype),
                                       gir_dtype_name(t));
    qparam qx;
    if (qparam_of(c, n, (int)(3 + 3 * i), (int)(4 + 3 * i), t, "X_scale", "X_zero_point", &qx) < 0) return -1;
    xs[i] = same_qparams(&qx, &qy) ? x : quant(c, dequant(c, x, &qx), &qy, t);
    if (!xs[i]) return -1;
  }
  return imp_set_output(c, n, 0, imp_concat_many(c, xs, k, axis));
}

/* ---------- pooling ---------- */

int imp_cv_ms_QLinearAveragePool(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (q8_input(c, x, "X") < 0) return -1;
  if (x->shape.rank < 3) return imp_fail(c, "X needs rank >= 3");
  qparam qx, qy;
  if (qparam_of(c, n, 1, 2, x->dtype, "x_scale", "x_zero_point", &qx) < 0 ||
      qparam_of(c, n, 3, 4, x->dtype, "y_scale", "y_zero_point", &qy) < 0)
    return -1;
  int last = imp_attr_int(n, "channels_last", 0) != 0;
  gir_value *d = dequant(c, x, &qx);
  if (last) d = channels_move(c, d, 1);
  gir_value *ins[1] = {d};
  gir_value *y = d ? onnx_op1(c, n, imp_cv_AveragePool, "AveragePool", 19, ins, 1) : NULL;
  if (last) y = channels_move(c, y, 0);
  /* ORT's pool kernel rounds y / y_scale + y_zero_point (the sum in float) */
  double lo, hi;
  range_of(x->dtype, &lo, &hi);
  y = imp_binary(c, GIR_BINARY_DIV, y, qy.s);
  if (qy.zp) y = imp_binary(c, GIR_BINARY_ADD, y, imp_cast(c, qy.zp, GIR_F32));
  return imp_set_output(c, n, 0, imp_cast(c, clamp(c, imp_unary(c, GIR_UNARY_ROUND, y), lo, hi), x->dtype));
}

int imp_cv_ms_QLinearGlobalAveragePool(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (q8_input(c, x, "X") < 0) return -1;
  int r = x->shape.rank;
  if (r < 3) return imp_fail(c, "X needs rank >= 3");
  qparam qx, qy;
  if (qparam_of(c, n, 1, 2, x->dtype, "x_scale", "x_zero_point", &qx) < 0 ||
      qparam_of(c, n, 3, 4, x->dtype, "y_scale", "y_zero_point", &qy) < 0)
    return -1;
  int first = imp_attr_int(n, "channels_last", 0) != 0 ? 1 : 2;
  int64_t axes[GIR_MAX_RANK], count = 1;
  for (int i = 0; i < r - 2; i++) {
    axes[i] = first + i;
    count *= x->shape.dims[first + i];
    if (count > (1 << 24)) return imp_fail(c, "more than 2^24 elements to average (MLAS's limit)");
  }
  if (count < 1) return imp_fail(c, "nothing to average");
  gir_value *acc = imp_reduce(c, GIR_REDUCE_SUM, imp_cast(c, x, GIR_I32), axes, r - 2, 1);
  if (qx.zp)
    acc = imp_binary(c, GIR_BINARY_SUB, acc,
                     imp_binary(c, GIR_BINARY_MUL, imp_cast(c, qx.zp, GIR_I32), imp_scalar(c, GIR_I32, (double)count)));
  /* MLAS: scale = x_scale / (y_scale · n), then the int32 sum requantized */
  gir_value *f = imp_binary(c, GIR_BINARY_DIV, qx.s,
                            imp_binary(c, GIR_BINARY_MUL, qy.s, imp_scalar(c, GIR_F32, (double)count)));
  gir_value *y = imp_binary(c, GIR_BINARY_MUL, imp_cast(c, acc, GIR_F32), f);
  return imp_set_output(c, n, 0, requant(c, y, qy.zp, x->dtype));
}

/* ---------- QLinearSoftmax ---------- */

int imp_cv_ms_QLinearSoftmax(imp_ctx *c, imp_node *n) {
  if (!imp_attr(n, "opset")) return imp_fail(c, "needs attribute opset (the Softmax opset whose axis it follows)");
  int64_t opset = imp_attr_int(n, "opset", 13);
  if (opset < 1) return imp_fail(c, "attribute opset must be >= 1, got %lld", (long long)opset);
  return imp_qlinear_softmax(c, n, opset);
}

/* QLinearSoftmax as ONNX Runtime's CPU kernel computes it (QlinearSoftmaxCPU,
 * onnxruntime/contrib_ops/cpu/quantization/qlinear_softmax.cc) where X_scale is a
 * constant, along the last axis of x (rows of D elements): a table of 256 float32
 * values built once,
 *   shift = max(0, logf(FLT_MAX / D) - 5) / X_scale       (float32 log, float64 after)
 *   T[i]  = float(exp((i - 255 + shift) · X_scale))      (float64 exp)
 * so that a row's largest element reads T[255]; then per row
 *   e_j   = T[x_j - max(x) + 255]                         (int8: the same index;
 *                                                          here an 8-bit max(x) - x
 *                                                          into the table reversed)
 *   sum   = e_0 + e_1 + ... in float32, in element order
 *   y_j   = saturate(round_half_even((e_j · floor(1 / y_scale)) / sum) + y_zero_point)
 * in float32 (a product, then a quotient). The sum goes through a reduce with
 * attribute ordered (te/compute_reduce.c), the table is a constant gathered from.
 * Measured against ONNX Runtime 1.31.1 (tests/py/test_contrib_quant.py): identical.
 * x_scale a constant, the rows along x's last axis. NULL on error. */
static gir_value *qlinear_softmax_table(imp_ctx *c, gir_value *x, const qparam *qx, const qparam *qy) {
  int known;
  double xs = const_value(qx->s, &known);
  int r = x->shape.rank;
  int64_t d = r ? x->shape.dims[r - 1] : 0;
  if (!known || r < 1 || d < 1) {
    imp_fail(c, "internal: QLinearSoftmax's table needs a constant X_scale and a row");
    return NULL;
  }
  float fxs = (float)xs;
  double shift = (double)logf(FLT_MAX / (float)d) - 5; /* std::log of a float: logf */
  shift = (shift > 0 ? shift : 0) / (double)fxs;
  float table[256]; /* by max(row) - x: T[255 - i] */
  for (int i = 0; i < 256; i++) table[255 - i] = (float)exp(((double)i - 255 + shift) * (double)fxs);
  gir_shape ts = {.rank = 1, .dims = {256}};
  gir_value *tv = imp_const_new(c, GIR_F32, &ts, table, "QLinearSoftmax's exp table");
  int64_t ax = r - 1;
  /* max(row) - x in [0, 255]: an 8-bit index (int8: in uint8, where it wraps back) */
  gir_value *xu = x->dtype == GIR_U8 ? x : imp_cast(c, imp_binary(c, GIR_BINARY_ADD, imp_cast(c, x, GIR_I32),
                                                                   imp_scalar(c, GIR_I32, 128)), GIR_U8);
  gir_value *mx = imp_reduce(c, GIR_REDUCE_MAX, xu, &ax, 1, 1);
  gir_value *ix = imp_binary(c, GIR_BINARY_SUB, mx, xu);
  if (!tv || !ix) return NULL;
  gir_value *ins[2] = {tv, ix};
  gir_node *g = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
  gir_attr_set_int(c->g, g, "axis", 0);
  gir_value *e = imp_finish(c, g);
  gir_value *sum = imp_reduce(c, GIR_REDUCE_SUM, e, &ax, 1, 1);
  if (!sum) return NULL;
  if (sum->producer) gir_attr_set_int(c->g, sum->producer, "ordered", 1);
  float ys = (float)const_value(qy->s, &known);
  gir_value *m = known ? imp_scalar(c, GIR_F32, floorf(1.0f / ys))
                       : imp_unary(c, GIR_UNARY_FLOOR, imp_binary(c, GIR_BINARY_DIV, imp_scalar(c, GIR_F32, 1.0), qy->s));
  gir_value *y = imp_binary(c, GIR_BINARY_DIV, imp_binary(c, GIR_BINARY_MUL, e, m), sum);
  return requant(c, y, qy->zp, x->dtype);
}

int imp_qlinear_softmax(imp_ctx *c, imp_node *n, int64_t opset) {
  gir_value *x = imp_in(n, 0);
  if (q8_input(c, x, "X") < 0) return -1;
  qparam qx, qy;
  if (qparam_of(c, n, 1, 2, x->dtype, "X_scale", "x_zero_point", &qx) < 0 ||
      qparam_of(c, n, 3, 4, x->dtype, "y_scale", "y_zero_point", &qy) < 0)
    return -1;
  qx.zp = NULL; /* ORT ignores it: softmax does not change with a shift */
  int r = x->shape.rank;
  int64_t axis = imp_attr_int(n, "axis", opset < 13 ? 1 : -1);
  if (axis < 0) axis += r;
  int known;
  const_value(qx.s, &known);
  if (r >= 1 && axis >= 0 && axis < r && known && gir_value_numel(x) > 0) {
    /* as ORT: opset < 13 normalizes the flattened axes from `axis` on, opset 13 the
     * one axis, transposed last and back */
    gir_value *xin = x, *y;
    int64_t perm[GIR_MAX_RANK];
    if (opset < 13) {
      int64_t dd[2] = {1, 1};
      for (int i = 0; i < r; i++) dd[i >= axis] *= x->shape.dims[i];
      xin = imp_reshape(c, x, 2, dd);
    } else if (axis != r - 1) {
      for (int i = 0; i < r; i++) perm[i] = i == axis ? r - 1 : i == r - 1 ? axis : i;
      xin = imp_transpose(c, x, perm);
    }
    if (!xin || !(y = qlinear_softmax_table(c, xin, &qx, &qy))) return -1;
    if (opset < 13) y = imp_reshape(c, y, r, x->shape.dims);
    else if (axis != r - 1) y = imp_transpose(c, y, perm);
    return imp_set_output(c, n, 0, y);
  }
  gir_value *ins[1] = {dequant(c, x, &qx)};
  gir_value *p = ins[0] ? onnx_op1(c, n, imp_cv_Softmax, "Softmax", opset, ins, 1) : NULL;
  /* ORT: round(p · floor(1 / y_scale)) + y_zero_point */
  gir_value *m = imp_unary(c, GIR_UNARY_FLOOR, imp_binary(c, GIR_BINARY_DIV, imp_scalar(c, GIR_F32, 1.0), qy.s));
  return imp_set_output(c, n, 0, requant(c, imp_binary(c, GIR_BINARY_MUL, p, m), qy.zp, x->dtype));
}

/* ---------- integer matmuls with float or requantized outputs ---------- */

/* A matmul's b_scale or b_zero_point: one value (a scalar) or one per column (N). */
static gir_value *col_param(imp_ctx *c, gir_value *v, int64_t ncol, const char *what) {
  if (!v) return NULL;
  if (gir_value_numel(v) == 1) return scalar_of(c, v);
  if (v->shape.rank == 1 && v->shape.dims[0] == ncol) return v;
  imp_fail(c, "%s must hold one value or one per column (%lld)", what, (long long)ncol);
  return NULL;
}

/* MatMulInteger(a, b, azp, bzp) in int32, through the importer's converter. */
static gir_value *matmul_int(imp_ctx *c, const imp_node *n, gir_value *a, gir_value *b, gir_value *azp,
                             gir_value *bzp) {
  gir_value *ins[4] = {a, b, azp, bzp};
  return onnx_op1(c, n, imp_cv_MatMulInteger, "MatMulInteger", 10, ins, 4);
}

static int check_bias(imp_ctx *c, const gir_value *bias, int64_t ncol) {
  if (!bias) return 0;
  if (f32_input(c, bias, "bias") < 0) return -1;
  if (bias->shape.rank != 1 || bias->shape.dims[0] != ncol)
    return imp_fail(c, "bias must hold one value per column (%lld)", (long long)ncol);
  return 0;
}

static int64_t ncols(const gir_value *b) { return b->shape.rank >= 2 ? b->shape.dims[b->shape.rank - 1] : 1; }

int imp_cv_ms_DynamicQuantizeMatMul(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *b = imp_in(n, 1), *bs = imp_in(n, 2), *bzp = imp_in(n, 3), *bias = imp_in(n, 4);
  if (f32_input(c, a, "A") < 0 || q8_input(c, b, "B") < 0 || f32_input(c, bs, "b_scale") < 0) return -1;
  if (b->shape.rank < 2) return imp_fail(c, "B needs rank >= 2");
  if (bzp && bzp->dtype != b->dtype) return imp_fail(c, "b_zero_point must have B's type");
  int64_t nc = ncols(b);
  if (check_bias(c, bias, nc) < 0) return -1;
  gir_value *bsv = col_param(c, bs, nc, "b_scale"), *bzv = bzp ? col_param(c, bzp, nc, "b_zero_point") : NULL;
  if (!bsv || (bzp && !bzv)) return -1;
  gir_value *q[3], *ins[1] = {a};
  if (onnx_op(c, n, imp_cv_DynamicQuantizeLinear, "DynamicQuantizeLinear", 11, ins, 1, q, 3) < 0) return -1;
  gir_value *acc = matmul_int(c, n, q[0], b, q[2], bzv);
  gir_value *y = imp_binary(c, GIR_BINARY_MUL, imp_cast(c, acc, GIR_F32), imp_binary(c, GIR_BINARY_MUL, q[1], bsv));
  if (bias) y = imp_binary(c, GIR_BINARY_ADD, y, bias);
  return imp_set_output(c, n, 0, y);
}

int imp_cv_ms_MatMulIntegerToFloat(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *b = imp_in(n, 1), *as = imp_in(n, 2), *bs = imp_in(n, 3), *azp = imp_in(n, 4),
            *bzp = imp_in(n, 5), *bias = imp_in(n, 6);
  if (q8_input(c, a, "A") < 0 || q8_input(c, b, "B") < 0 || f32_input(c, as, "a_scale") < 0 ||
      f32_input(c, bs, "b_scale") < 0)
    return -1;
  if (b->shape.rank < 2) return imp_fail(c, "B needs rank >= 2");
  if (gir_value_numel(as) != 1 || (azp && gir_value_numel(azp) != 1))
    return imp_fail(c, "a_scale and a_zero_point must hold one value each");
  if ((azp && azp->dtype != a->dtype) || (bzp && bzp->dtype != b->dtype))
    return imp_fail(c, "a zero point must have its operand's type");
  int64_t nc = ncols(b);
  if (check_bias(c, bias, nc) < 0) return -1;
  gir_value *bsv = col_param(c, bs, nc, "b_scale"), *bzv = bzp ? col_param(c, bzp, nc, "b_zero_point") : NULL;
  if (!bsv || (bzp && !bzv)) return -1;
  gir_value *acc = matmul_int(c, n, a, b, azp ? scalar_of(c, azp) : NULL, bzv);
  gir_value *y = imp_binary(c, GIR_BINARY_MUL, imp_cast(c, acc, GIR_F32),
                            imp_binary(c, GIR_BINARY_MUL, scalar_of(c, as), bsv));
  if (bias) y = imp_binary(c, GIR_BINARY_ADD, y, bias);
  return imp_set_output(c, n, 0, y);
}

static gir_value *transpose2(imp_ctx *c, gir_value *x) {
  int64_t perm[2] = {1, 0};
  return imp_transpose(c, x, perm);
}

int imp_cv_ms_QGemm(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *as = imp_in(n, 1), *azp = imp_in(n, 2), *b = imp_in(n, 3), *bs = imp_in(n, 4),
            *bzp = imp_in(n, 5), *cc = imp_in(n, 6), *ys = imp_in(n, 7), *yzp = imp_in(n, 8);
  if (q8_input(c, a, "A") < 0 || q8_input(c, b, "B") < 0 || f32_input(c, as, "a_scale") < 0 ||
      f32_input(c, bs, "b_scale") < 0)
    return -1;
  if (a->shape.rank != 2 || b->shape.rank != 2) return imp_fail(c, "A and B must be 2-D");
  if (gir_value_numel(as) != 1 || (azp && gir_value_numel(azp) != 1))
    return imp_fail(c, "a_scale and a_zero_point must hold one value each");
  if ((azp && azp->dtype != a->dtype) || (bzp && bzp->dtype != b->dtype))
    return imp_fail(c, "a zero point must have its operand's type");
  if (cc && cc->dtype != GIR_I32) return imp_fail(c, "C must be int32");
  if (imp_attr_int(n, "transA", 0)) a = transpose2(c, a);
  if (imp_attr_int(n, "transB", 0)) b = transpose2(c, b);
  if (!a || !b) return -1;
  int64_t nc = b->shape.dims[1];
  gir_value *bsv = col_param(c, bs, nc, "b_scale"), *bzv = bzp ? col_param(c, bzp, nc, "b_zero_point") : NULL;
  if (!bsv || (bzp && !bzv)) return -1;
  gir_value *acc = matmul_int(c, n, a, b, azp ? scalar_of(c, azp) : NULL, bzv);
  if (cc) acc = imp_binary(c, GIR_BINARY_ADD, acc, cc);
  double alpha = imp_attr_float(n, "alpha", 1.0);
  gir_value *f = imp_binary(c, GIR_BINARY_MUL, imp_binary(c, GIR_BINARY_MUL, imp_scalar(c, GIR_F32, alpha),
                                                          scalar_of(c, as)), bsv);
  gir_value *y = imp_cast(c, acc, GIR_F32);
  if (!ys) return imp_set_output(c, n, 0, imp_binary(c, GIR_BINARY_MUL, y, f));
  qparam qy;
  gir_dtype t = yzp ? yzp->dtype : a->dtype;
  if (!is_q8(t)) return imp_fail(c, "y_zero_point must be int8 or uint8");
  if (qparam_of(c, n, 7, 8, t, "y_scale", "y_zero_point", &qy) < 0) return -1;
  return imp_set_output(c, n, 0,
                        requant(c, imp_binary(c, GIR_BINARY_MUL, y, imp_binary(c, GIR_BINARY_DIV, f, qy.s)), qy.zp, t));
}

/* ---------- float convolutions ---------- */

int imp_cv_ms_NhwcConv(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *w = imp_in(n, 1), *b = imp_in(n, 2);
  if (!x || !w) return imp_fail(c, "needs inputs X and W");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  if (x->shape.rank < 3 || w->shape.rank != x->shape.rank) return imp_fail(c, "X and W need one rank >= 3");
  gir_value *ins[3] = {channels_move(c, x, 1), channels_move(c, w, 1), b};
  if (!ins[0] || !ins[1]) return -1;
  gir_value *y = onnx_op1(c, n, imp_cv_Conv, "Conv", 11, ins, b ? 3 : 2);
  return imp_set_output(c, n, 0, channels_move(c, y, 0));
}

int imp_cv_ms_FusedConv(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *w = imp_in(n, 1), *b = imp_in(n, 2), *z = imp_in(n, 3);
  if (!x || !w) return imp_fail(c, "needs inputs X and W");
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "X must be floating point");
  const char *act = imp_attr_string(c, n, "activation", "");
  if (!act) return -1;
  double *p = NULL;
  int32_t np = imp_attr_floats(c, n, "activation_params", &p);
  if (c->err->msg[0]) return -1;
  int want = !strcmp(act, "LeakyRelu") ? 1 : !strcmp(act, "Clip") || !strcmp(act, "HardSigmoid") ? 2 : 0;
  if (strcmp(act, "") && strcmp(act, "Relu") && strcmp(act, "Tanh") && strcmp(act, "Sigmoid") && !want)
    return imp_fail(c, "activation '%s' is not supported (Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid are)",
                    act);
  if (want && np < want) return imp_fail(c, "activation %s needs %d activation_params, got %d", act, want, np < 0 ? 0 : np);
  gir_value *ins[3] = {x, w, b};
  gir_value *y = onnx_op1(c, n, imp_cv_Conv, "Conv", 11, ins, b ? 3 : 2);
  if (z) y = imp_binary(c, GIR_BINARY_ADD, y, z);
  if (!strcmp(act, "Relu")) y = imp_unary(c, GIR_UNARY_RELU, y);
  else if (!strcmp(act, "Tanh")) y = imp_unary(c, GIR_UNARY_TANH, y);
  else if (!strcmp(act, "Sigmoid")) y = imp_unary(c, GIR_UNARY_SIGMOID, y);
  else if (!strcmp(act, "LeakyRelu")) y = imp_unary_p(c, GIR_UNARY_LEAKY_RELU, y, p[0], 0, 0);
  else if (!strcmp(act, "HardSigmoid")) y = imp_unary_p(c, GIR_UNARY_HARD_SIGMOID, y, p[0], p[1], 0);
  else if (!strcmp(act, "Clip")) y = clamp(c, y, p[0], p[1]);
  return imp_set_output(c, n, 0, y);
}

/* ---------- MatMulNBits ---------- */

/* Bytes [.., m] of packed 4-bit values → [.., 2m] (low nibble first), as uint8. */
static gir_value *unpack4(imp_ctx *c, gir_value *v) {
  if (!v) return NULL;
  int r = v->shape.rank;
  gir_value *lo = imp_binary(c, GIR_BINARY_BITAND, v, imp_scalar(c, GIR_U8, 15));
  gir_value *hi = imp_binary(c, GIR_BINARY_SHR, v, imp_scalar(c, GIR_U8, 4));
  int64_t d[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) d[i] = v->shape.dims[i];
  d[r] = 1;
  gir_value *parts[2] = {imp_reshape(c, lo, r + 1, d), imp_reshape(c, hi, r + 1, d)};
  gir_value *both = parts[0] && parts[1] ? imp_concat(c, parts, 2, r) : NULL;
  d[r - 1] *= 2;
  return imp_reshape(c, both, r, d);
}

int imp_cv_ms_MatMulNBits(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *b = imp_in(n, 1), *s = imp_in(n, 2), *zp = imp_in(n, 3), *bias = imp_in(n, 5);
  if (f32_input(c, a, "A") < 0 || f32_input(c, s, "scales") < 0) return -1;
  if (!b || b->dtype != GIR_U8) return imp_fail(c, "B must be uint8");
  if (imp_in(n, 4)) return imp_fail(c, "g_idx (act-order quantization) is not supported");
  int64_t K = imp_attr_int(n, "K", 0), N = imp_attr_int(n, "N", 0), bits = imp_attr_int(n, "bits", 4),
          block = imp_attr_int(n, "block_size", 0);
  if (bits != 4) return imp_fail(c, "bits=%lld is not supported (4 is)", (long long)bits);
  if (K < 1 || N < 1 || K > ((int64_t)1 << 40) || N > ((int64_t)1 << 40) || block < 16 || (block & (block - 1)) || block > (1 << 20))
    return imp_fail(c, "needs K, N in [1, 2^40] and block_size a power of 2 in [16, 2^20]");
  int64_t kb = (K + block - 1) / block, blob = block / 2;
  if (b->shape.rank != 3 || b->shape.dims[0] != N || b->shape.dims[1] != kb || b->shape.dims[2] != blob)
    return imp_fail(c, "B must be [N, ceil(K / block_size), block_size / 2] = [%lld, %lld, %lld]", (long long)N,
                    (long long)kb, (long long)blob);
  if (gir_value_numel(s) != N * kb) return imp_fail(c, "scales must hold N · ceil(K / block_size) values");
  if (a->shape.rank < 1 || a->shape.dims[a->shape.rank - 1] != K)
    return imp_fail(c, "A's last dimension must be K (%lld)", (long long)K);
  if (check_bias(c, bias, N) < 0) return -1;
  int64_t d3[3] = {N, kb, 1};
  gir_value *zpv;
  if (!zp) {
    zpv = imp_scalar(c, GIR_F32, 8.0);
  } else {
    if (zp->dtype != GIR_U8) return imp_fail(c, "zero_points of type %s are not supported (packed uint8 are)",
                                             gir_dtype_name(zp->dtype));
    int64_t zb = (kb + 1) / 2, d2[2] = {N, zb};
    if (gir_value_numel(zp) != N * zb) return imp_fail(c, "zero_points must hold N · ceil(blocks / 2) bytes");
    gir_value *u = unpack4(c, imp_reshape(c, zp, 2, d2));
    if (u && 2 * zb != kb) u = imp_slice_axis(c, u, 1, 0, 1, kb);
    zpv = imp_cast(c, imp_reshape(c, u, 3, d3), GIR_F32);
  }
  gir_value *q = imp_cast(c, unpack4(c, b), GIR_F32); /* [N, kb, block] */
  gir_value *w = imp_binary(c, GIR_BINARY_MUL, imp_binary(c, GIR_BINARY_SUB, q, zpv), imp_reshape(c, s, 3, d3));
  int64_t d2[2] = {N, kb * block};
  w = imp_reshape(c, w, 2, d2);
  if (w && kb * block != K) w = imp_slice_axis(c, w, 1, 0, 1, K);
  gir_value *y = imp_matmul(c, a, transpose2(c, w));
  if (bias) y = imp_binary(c, GIR_BINARY_ADD, y, bias);
  return imp_set_output(c, n, 0, y);
}
