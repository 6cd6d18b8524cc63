/* ops_common.c — helpers shared by converters: values that moved from attributes
 * to inputs across opsets, and ONNX-name → canonical-function maps. */
#include <stdio.h>
#include <string.h>
#include "ops.h"

int imp_ints_attr_or_input(imp_ctx *c, imp_node *n, const char *name, int idx, int64_t since, int64_t **out,
                           int32_t *cnt) {
  if (n->opset < since) {
    *cnt = imp_attr_ints(c, n, name, out);
    return c->err->msg[0] ? -1 : 0;
  }
  *out = NULL;
  *cnt = -1;
  if (idx >= n->n_in || !n->in[idx]) return 0; /* absent */
  char what[96];
  snprintf(what, sizeof what, "input '%s'", name);
  *out = imp_const_ints(c, n->in[idx], what, cnt);
  return *out ? 0 : -1;
}

int imp_axis(imp_ctx *c, int64_t axis, int32_t rank, int64_t *out) {
  if (axis < -(int64_t)rank || axis >= rank)
    return imp_fail(c, "axis %lld is out of range for rank %d", (long long)axis, rank);
  *out = axis < 0 ? axis + rank : axis;
  return 0;
}

static const struct {
  const char *onnx;
  int fn;
} unary_map[] = {
    {"Neg", GIR_UNARY_NEG}, {"Abs", GIR_UNARY_ABS}, {"Sign", GIR_UNARY_SIGN}, {"Exp", GIR_UNARY_EXP},
    {"Log", GIR_UNARY_LOG}, {"Sqrt", GIR_UNARY_SQRT}, {"Reciprocal", GIR_UNARY_RECIPROCAL},
    {"Ceil", GIR_UNARY_CEIL}, {"Floor", GIR_UNARY_FLOOR}, {"Round", GIR_UNARY_ROUND},
    {"Sigmoid", GIR_UNARY_SIGMOID}, {"Tanh", GIR_UNARY_TANH}, {"Erf", GIR_UNARY_ERF}, {"Relu", GIR_UNARY_RELU},
    {"Sin", GIR_UNARY_SIN}, {"Cos", GIR_UNARY_COS}, {"Tan", GIR_UNARY_TAN}, {"Asin", GIR_UNARY_ASIN},
    {"Acos", GIR_UNARY_ACOS}, {"Atan", GIR_UNARY_ATAN}, {"Sinh", GIR_UNARY_SINH}, {"Cosh", GIR_UNARY_COSH},
    {"Asinh", GIR_UNARY_ASINH}, {"Acosh", GIR_UNARY_ACOSH}, {"Atanh", GIR_UNARY_ATANH}, {"Not", GIR_UNARY_NOT},
    {"BitwiseNot", GIR_UNARY_BITNOT}, {"IsNaN", GIR_UNARY_ISNAN}, {"IsInf", GIR_UNARY_ISINF},
    {"Softplus", GIR_UNARY_SOFTPLUS}, {"Softsign", GIR_UNARY_SOFTSIGN}, {"LeakyRelu", GIR_UNARY_LEAKY_RELU},
    {"Elu", GIR_UNARY_ELU}, {"Selu", GIR_UNARY_SELU}, {"Celu", GIR_UNARY_CELU},
    {"HardSigmoid", GIR_UNARY_HARD_SIGMOID}, {"HardSwish", GIR_UNARY_HARD_SWISH},
    {"ThresholdedRelu", GIR_UNARY_THRESHOLDED_RELU}, {"Gelu", GIR_UNARY_GELU}, {"Mish", GIR_UNARY_MISH},
    {"Shrink", GIR_UNARY_SHRINK}, {"Swish", GIR_UNARY_SWISH},
};

static const struct {
  const char *onnx;
  int fn;
} binary_map[] = {
    {"Add", GIR_BINARY_ADD}, {"Sub", GIR_BINARY_SUB}, {"Mul", GIR_BINARY_MUL}, {"Div", GIR_BINARY_DIV},
    {"Pow", GIR_BINARY_POW}, {"Equal", GIR_BINARY_EQ}, {"Less", GIR_BINARY_LT}, {"LessOrEqual", GIR_BINARY_LE},
    {"Greater", GIR_BINARY_GT}, {"GreaterOrEqual", GIR_BINARY_GE}, {"And", GIR_BINARY_AND},
    {"Or", GIR_BINARY_OR}, {"Xor", GIR_BINARY_XOR}, {"BitwiseAnd", GIR_BINARY_BITAND},
    {"BitwiseOr", GIR_BINARY_BITOR}, {"BitwiseXor", GIR_BINARY_BITXOR}, {"Max", GIR_BINARY_MAX},
    {"Min", GIR_BINARY_MIN}, {"Sum", GIR_BINARY_ADD}, {"Mean", GIR_BINARY_ADD},
};

int imp_unary_fn_of(const char *op_type) {
  for (size_t i = 0; i < sizeof unary_map / sizeof unary_map[0]; i++)
    if (!strcmp(unary_map[i].onnx, op_type)) return unary_map[i].fn;
  return -1;
}

int imp_binary_fn_of(const char *op_type) {
  for (size_t i = 0; i < sizeof binary_map / sizeof binary_map[0]; i++)
    if (!strcmp(binary_map[i].onnx, op_type)) return binary_map[i].fn;
  return -1;
}

int imp_spatial_ints(imp_ctx *c, const imp_node *n, const char *name, int want, int64_t def, int64_t *out,
                     int *present) {
  int64_t *v;
  int32_t cnt = imp_attr_ints(c, n, name, &v);
  if (cnt < 0 && c->err->msg[0]) return -1;
  if (present) *present = cnt > 0;
  if (cnt <= 0) {
    for (int i = 0; i < want; i++) out[i] = def;
    return 0;
  }
  if (cnt != want) return imp_fail(c, "attribute %s needs %d values, has %d", name, want, cnt);
  for (int i = 0; i < want; i++) out[i] = v[i];
  return 0;
}

gir_value *imp_concat_many(imp_ctx *c, gir_value *const *xs, int64_t n, int64_t axis) {
  const int64_t max = 64; /* ops.def: concat takes at most 64 inputs, so larger ones go in rounds */
  gir_value **tmp = gir_arena_calloc(c->g->arena, (size_t)n + 1, sizeof *tmp);
  memcpy(tmp, xs, (size_t)n * sizeof *tmp);
  while (n > max) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i += max) {
      int64_t k = n - i < max ? n - i : max;
      tmp[m++] = imp_concat(c, tmp + i, (int32_t)k, axis);
    }
    n = m;
  }
  return imp_concat(c, tmp, (int32_t)n, axis);
}

int imp_zero_or_absent(const gir_value *v) {
  if (!v) return 1;
  if (!v->data) return 0;
  const unsigned char *d = v->data;
  for (int64_t i = 0; i < gir_value_nbytes(v); i++)
    if (d[i]) return 0;
  return 1;
}
