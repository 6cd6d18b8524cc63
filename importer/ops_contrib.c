/* ops_contrib.c — ops of ONNX Runtime's com.microsoft domain, as its CPU kernels
 * define them (onnxruntime/contrib_ops), written with canonical ops:
 *   Gelu(X)                 X · ½(1 + erf(X/√2))
 *   FastGelu(X, bias?)      the tanh form on X + bias: ½x(1 + tanh(√(2/π)(x + 0.044715x³)))
 *   BiasGelu(A, B)          Gelu(A + B)
 *   QuickGelu(X; alpha)     X · sigmoid(alpha·X), alpha 1.702 by default
 *   BiasAdd(X, bias, skip)  X + bias + skip
 *   SkipLayerNormalization(input, skip, gamma, beta?, bias?; epsilon)
 *                           s = input + skip (+ bias); LayerNorm(s) over the last axis
 *                           · gamma (+ beta); output 3 (input_skip_bias_sum) is s
 *   SkipSimplifiedLayerNormalization(input, skip, gamma, bias?; epsilon)
 *                           the same in RMS form: s / sqrt(mean(s²) + eps) · gamma
 *   (their outputs 1 and 2, the statistics, are refused with a message)
 *   FusedMatMul(A, B; alpha, transA, transB)
 *                           alpha · op(A) @ op(B), op swapping the last two axes when
 *                           asked (transBatchA/B, which move batch axes, are refused)
 * ONNX Runtime is the reference for this domain (tests/py/test_contrib_ops.py). */
#include "ops.h"


static int float_input(imp_ctx *c, const gir_value *x, const char *what) {
  if (!x) return imp_fail(c, "needs input %s", what);
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "%s must be floating point", what);
  return 0;
}

/* gelu(x): erf form (tanh 0) or tanh form (tanh 1) — the canonical unary's alpha */
static gir_value *gelu(imp_ctx *c, gir_value *x, int tanh_form) {
  return x ? imp_unary_p(c, GIR_UNARY_GELU, x, tanh_form, 0, 0) : NULL;
}

int imp_cv_ms_Gelu(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (float_input(c, x, "X") < 0) return -1;
  return imp_set_output(c, n, 0, gelu(c, x, 0));
}

int imp_cv_ms_FastGelu(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *b = imp_in(n, 1);
  if (float_input(c, x, "X") < 0) return -1;
  if (b) x = imp_binary(c, GIR_BINARY_ADD, x, b);
  return imp_set_output(c, n, 0, gelu(c, x, 1));
}

int imp_cv_ms_BiasGelu(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *b = imp_in(n, 1);
  if (float_input(c, a, "A") < 0 || float_input(c, b, "B") < 0) return -1;
  return imp_set_output(c, n, 0, gelu(c, imp_binary(c, GIR_BINARY_ADD, a, b), 0));
}

int imp_cv_ms_QuickGelu(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (float_input(c, x, "X") < 0) return -1;
  gir_value *ax = imp_binary(c, GIR_BINARY_MUL, x, imp_scalar_like(c, x, imp_attr_float(n, "alpha", 1.702)));
  return imp_set_output(c, n, 0, imp_binary(c, GIR_BINARY_MUL, x, imp_unary(c, GIR_UNARY_SIGMOID, ax)));
}

int imp_cv_ms_BiasAdd(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *b = imp_in(n, 1), *s = imp_in(n, 2);
  if (float_input(c, x, "X") < 0 || float_input(c, b, "bias") < 0 || float_input(c, s, "skip") < 0) return -1;
  return imp_set_output(c, n, 0, imp_binary(c, GIR_BINARY_ADD, imp_binary(c, GIR_BINARY_ADD, x, b), s));
}

/* SkipLayerNormalization and SkipSimplifiedLayerNormalization (rms): the residual
 * sum, then the canonical layer_norm over the last axis (what the layer-norm row
 * template schedules). */
static int skip_norm(imp_ctx *c, imp_node *n, int rms) {
  gir_value *x = imp_in(n, 0), *skip = imp_in(n, 1), *gamma = imp_in(n, 2);
  gir_value *beta = rms ? NULL : imp_in(n, 3), *bias = imp_in(n, rms ? 3 : 4);
  if (float_input(c, x, "input") < 0 || float_input(c, skip, "skip") < 0 || float_input(c, gamma, "gamma") < 0 ||
      (beta && float_input(c, beta, "beta") < 0) || (bias && float_input(c, bias, "bias") < 0))
    return -1;
  if (x->shape.rank < 1) return imp_fail(c, "input needs rank >= 1");
  int64_t hidden = x->shape.dims[x->shape.rank - 1];
  gir_value *vecs[3] = {gamma, beta, bias};
  static const char *const names[3] = {"gamma", "beta", "bias"};
  for (int i = 0; i < 3; i++)
    if (vecs[i] && (vecs[i]->shape.rank != 1 || vecs[i]->shape.dims[0] != hidden))
      return imp_fail(c, "%s must have the input's last dimension (%lld)", names[i], (long long)hidden);
  if (imp_out_wanted(n, 1) || imp_out_wanted(n, 2))
    return imp_fail(c, "outputs 1 and 2 (mean, inv_std_var) are not supported; output 3, the sum, is");
  gir_value *sum = imp_binary(c, GIR_BINARY_ADD, x, skip);
  if (bias) sum = imp_binary(c, GIR_BINARY_ADD, sum, bias);
  double eps = imp_attr_float(n, "epsilon", 1e-12);
  gir_value *y = imp_layer_norm(c, sum, gamma, beta, x->shape.rank - 1, eps, rms);
  if (imp_set_output(c, n, 0, y) < 0) return -1;
  return imp_out_wanted(n, 3) ? imp_set_output(c, n, 3, sum) : 0;
}

int imp_cv_ms_SkipLayerNormalization(imp_ctx *c, imp_node *n) { return skip_norm(c, n, 0); }
int imp_cv_ms_SkipSimplifiedLayerNormalization(imp_ctx *c, imp_node *n) { return skip_norm(c, n, 1); }

/* x with its last two axes swapped. */
static gir_value *swap_last2(imp_ctx *c, gir_value *x) {
  int64_t perm[GIR_MAX_RANK];
  int r = x->shape.rank;
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  return imp_transpose(c, x, perm);
}

int imp_cv_ms_FusedMatMul(imp_ctx *c, imp_node *n) {
  gir_value *a = imp_in(n, 0), *b = imp_in(n, 1);
  if (float_input(c, a, "A") < 0 || float_input(c, b, "B") < 0) return -1;
  if (imp_attr_int(n, "transBatchA", 0) || imp_attr_int(n, "transBatchB", 0))
    return imp_fail(c, "transBatchA and transBatchB are not supported");
  if (imp_attr_int(n, "transA", 0)) {
    if (a->shape.rank < 2) return imp_fail(c, "transA needs A of rank >= 2");
    a = swap_last2(c, a);
  }
  if (imp_attr_int(n, "transB", 0)) {
    if (b->shape.rank < 2) return imp_fail(c, "transB needs B of rank >= 2");
    b = swap_last2(c, b);
  }
  gir_value *y = imp_matmul(c, a, b);
  double alpha = imp_attr_float(n, "alpha", 1.0);
  if (y && alpha != 1.0) y = imp_binary(c, GIR_BINARY_MUL, y, imp_scalar_like(c, y, alpha));
  return imp_set_output(c, n, 0, y);
}
