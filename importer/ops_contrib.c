/* ops_contrib.c — ops of ONNX Runtime's com.microsoft domain, as its CPU kernels
 * define them (onnxruntime/contrib_ops), written with canonical ops:
 *   Gelu(X)                 X · ½(1 + erf(X/√2))
 *   FastGelu(X, bias?)      the tanh form on X + bias: ½x(1 + tanh(√(2/π)(x + 0.044715x³)))
 *   BiasGelu(A, B)          Gelu(A + B)
 *   QuickGelu(X; alpha)     X · sigmoid(alpha·X), alpha 1.702 by default
 *   BiasAdd(X, bias, skip)  X + bias + skip
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
