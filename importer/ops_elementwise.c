/* ops_elementwise.c — element-wise ONNX ops → canonical unary/binary/where.
 * Parameterised activations carry their ONNX defaults into alpha/beta/gamma;
 * variadic Max/Min/Sum/Mean fold left into binary ops; Clip is max then min. */
#include <math.h>
#include <string.h>
#include "ops.h"

int imp_cv_unary(imp_ctx *c, imp_node *n) {
  int fn = imp_unary_fn_of(n->op_type);
  if (fn < 0 || n->n_in < 1 || !n->in[0]) return imp_fail(c, "needs one input");
  gir_value *x = n->in[0], *y;
  const char *op = n->op_type;
  if (!strcmp(op, "LeakyRelu")) y = imp_unary_p(c, fn, x, imp_attr_float(n, "alpha", 0.01), 0, 0);
  else if (!strcmp(op, "Elu") || !strcmp(op, "Celu") || !strcmp(op, "ThresholdedRelu") || !strcmp(op, "Swish"))
    y = imp_unary_p(c, fn, x, imp_attr_float(n, "alpha", 1.0), 0, 0);
  else if (!strcmp(op, "Selu"))
    y = imp_unary_p(c, fn, x, imp_attr_float(n, "alpha", 1.67326319217681884765625), 0,
                    imp_attr_float(n, "gamma", 1.05070102214813232421875));
  else if (!strcmp(op, "HardSigmoid"))
    y = imp_unary_p(c, fn, x, imp_attr_float(n, "alpha", 0.2), imp_attr_float(n, "beta", 0.5), 0);
  else if (!strcmp(op, "Shrink"))
    y = imp_unary_p(c, fn, x, imp_attr_float(n, "lambd", 0.5), imp_attr_float(n, "bias", 0.0), 0);
  else if (!strcmp(op, "IsInf"))
    y = imp_unary_p(c, fn, x, (double)imp_attr_int(n, "detect_positive", 1), (double)imp_attr_int(n, "detect_negative", 1), 0);
  else if (!strcmp(op, "Gelu")) {
    const char *approx = imp_attr_string(c, n, "approximate", "none");
    if (strcmp(approx, "none") && strcmp(approx, "tanh")) return imp_fail(c, "unknown approximate '%s'", approx);
    y = imp_unary_p(c, fn, x, !strcmp(approx, "tanh"), 0, 0);
  } else
    y = imp_unary(c, fn, x);
  return imp_set_output(c, n, 0, y);
}

static int legacy_broadcast_check(imp_ctx *c, imp_node *n) {
  if (n->opset < 7 && imp_attr(n, "broadcast") && imp_attr_int(n, "broadcast", 0))
    return imp_unsupported_node(c, n, "legacy (opset < 7) broadcast attribute");
  return 0;
}

int imp_cv_binary(imp_ctx *c, imp_node *n) {
  if (n->n_in != 2 || !n->in[0] || !n->in[1]) return imp_fail(c, "needs two inputs");
  if (n->in[0]->string_bytes || n->in[1]->string_bytes) return imp_cv_string_equal(c, n); /* only Equal gets here */
  int rc = legacy_broadcast_check(c, n);
  if (rc) return rc;
  return imp_set_output(c, n, 0, imp_binary(c, imp_binary_fn_of(n->op_type), n->in[0], n->in[1]));
}

int imp_cv_Mod(imp_ctx *c, imp_node *n) {
  if (n->n_in != 2 || !n->in[0] || !n->in[1]) return imp_fail(c, "needs two inputs");
  int64_t fmod_attr = imp_attr_int(n, "fmod", 0);
  if (!fmod_attr && gir_dtype_is_float(n->in[0]->dtype)) return imp_fail(c, "fmod=0 is only defined for integers");
  return imp_set_output(c, n, 0, imp_binary(c, fmod_attr ? GIR_BINARY_FMOD : GIR_BINARY_MOD, n->in[0], n->in[1]));
}

int imp_cv_BitShift(imp_ctx *c, imp_node *n) {
  if (n->n_in != 2 || !n->in[0] || !n->in[1]) return imp_fail(c, "needs two inputs");
  const char *dir = imp_attr_string(c, n, "direction", "");
  if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT")) return imp_fail(c, "direction must be LEFT or RIGHT, got '%s'", dir);
  if (!gir_dtype_is_int(n->in[0]->dtype) || gir_dtype_is_signed(n->in[0]->dtype))
    return imp_fail(c, "BitShift needs unsigned integers");
  return imp_set_output(c, n, 0, imp_binary(c, !strcmp(dir, "LEFT") ? GIR_BINARY_SHL : GIR_BINARY_SHR, n->in[0], n->in[1]));
}

int imp_cv_PRelu(imp_ctx *c, imp_node *n) {
  if (n->n_in != 2 || !n->in[0] || !n->in[1]) return imp_fail(c, "needs two inputs");
  gir_value *x = n->in[0], *slope = n->in[1];
  if (n->opset < 7) return imp_unsupported_node(c, n, "opset < 7 PRelu");
  return imp_set_output(c, n, 0, imp_binary(c, GIR_BINARY_PRELU, x, slope));
}

int imp_cv_variadic(imp_ctx *c, imp_node *n) {
  int fn = imp_binary_fn_of(n->op_type);
  if (n->n_in < 1) return imp_fail(c, "needs at least one input");
  gir_value *acc = n->in[0];
  for (int i = 1; i < n->n_in && acc; i++) {
    if (!n->in[i]) return imp_fail(c, "input %d is missing", i);
    acc = imp_binary(c, fn, acc, n->in[i]);
  }
  if (acc && !strcmp(n->op_type, "Mean") && n->n_in > 1)
    acc = imp_binary(c, GIR_BINARY_DIV, acc, imp_scalar_like(c, acc, (double)n->n_in));
  return imp_set_output(c, n, 0, acc);
}

int imp_cv_Clip(imp_ctx *c, imp_node *n) {
  gir_value *x = n->n_in > 0 ? n->in[0] : NULL, *lo = NULL, *hi = NULL;
  if (!x) return imp_fail(c, "needs an input");
  if (n->opset < 11) {
    const Onnx__AttributeProto *amin = imp_attr(n, "min"), *amax = imp_attr(n, "max");
    if (amin) lo = imp_scalar_like(c, x, imp_attr_float(n, "min", -INFINITY));
    if (amax) hi = imp_scalar_like(c, x, imp_attr_float(n, "max", INFINITY));
  } else {
    lo = n->n_in > 1 ? n->in[1] : NULL;
    hi = n->n_in > 2 ? n->in[2] : NULL;
  }
  gir_value *y = x;
  if (lo) y = imp_binary(c, GIR_BINARY_MAX, y, lo);
  if (hi && y) y = imp_binary(c, GIR_BINARY_MIN, y, hi);
  return imp_set_output(c, n, 0, y);
}

int imp_cv_Where(imp_ctx *c, imp_node *n) {
  if (n->n_in != 3 || !n->in[0] || !n->in[1] || !n->in[2]) return imp_fail(c, "needs three inputs");
  return imp_set_output(c, n, 0, imp_where(c, n->in[0], n->in[1], n->in[2]));
}
