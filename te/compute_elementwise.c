/* compute_elementwise.c — compute definitions of unary, binary, where, cast,
 * bitcast and iota. Activation functions are written in terms of TE primitives
 * here, once; the numerically delicate ones use their stable forms (softplus as
 * max(x,0) + log(1 + exp(-|x|)), sigmoid through exp of a non-positive number). */
#include <math.h>
#include "compute.h"

static te_expr *k(te_ctx *c, gir_dtype t, double v) { return te_const(c, t, v); }

static te_expr *sigmoid(te_ctx *c, te_expr *x) {
  gir_dtype t = x->dtype;
  /* e = exp(-|x|) never overflows; sigmoid = (x >= 0 ? 1 : e) / (1 + e), the
   * numerator chosen before the one division */
  te_expr *e = te_un(c, TE_EXP, te_un(c, TE_NEG, te_un(c, TE_ABS, x)));
  te_expr *d = te_add(c, k(c, t, 1), e);
  return te_div(c, te_select(c, te_ge(c, x, k(c, t, 0)), k(c, t, 1), e), d);
}

static te_expr *softplus(te_ctx *c, te_expr *x) {
  gir_dtype t = x->dtype;
  te_expr *e = te_un(c, TE_EXP, te_un(c, TE_NEG, te_un(c, TE_ABS, x)));
  return te_add(c, te_bin(c, TE_MAX, x, k(c, t, 0)), te_un(c, TE_LOG, te_add(c, k(c, t, 1), e)));
}

static te_expr *unary_body(te_ctx *c, const gir_node *n, te_expr *x) {
  gir_dtype t = x->dtype;
  double alpha = gir_attr_float(n, "alpha", 0), beta = gir_attr_float(n, "beta", 0), gamma = gir_attr_float(n, "gamma", 0);
  te_expr *zero = k(c, t, 0), *one = k(c, t, 1);
  switch ((gir_unary_fn)gir_attr_int(n, "fn", 0)) {
  case GIR_UNARY_NEG: return te_un(c, TE_NEG, x);
  case GIR_UNARY_ABS: return gir_dtype_is_signed(t) ? te_un(c, TE_ABS, x) : x;
  case GIR_UNARY_SIGN:
    return te_select(c, te_bin(c, TE_GT, x, zero), one,
                     te_select(c, te_lt(c, x, zero), gir_dtype_is_signed(t) ? k(c, t, -1) : zero,
                               gir_dtype_is_float(t) ? te_mul(c, x, zero) : zero)); /* NaN stays NaN */
  case GIR_UNARY_EXP: return te_un(c, TE_EXP, x);
  case GIR_UNARY_LOG: return te_un(c, TE_LOG, x);
  case GIR_UNARY_SQRT: return te_un(c, TE_SQRT, x);
  case GIR_UNARY_RECIPROCAL: return te_div(c, one, x);
  case GIR_UNARY_CEIL: return te_un(c, TE_CEIL, x);
  case GIR_UNARY_FLOOR: return te_un(c, TE_FLOOR, x);
  case GIR_UNARY_ROUND: return te_un(c, TE_ROUND, x);
  case GIR_UNARY_SIGMOID: return sigmoid(c, x);
  case GIR_UNARY_TANH: return te_un(c, TE_TANH, x);
  case GIR_UNARY_ERF: return te_un(c, TE_ERF, x);
  case GIR_UNARY_RELU: return gir_dtype_is_float(t) ? te_select(c, te_lt(c, x, zero), zero, x) : te_bin(c, TE_MAX, x, zero);
  case GIR_UNARY_SIN: return te_un(c, TE_SIN, x);
  case GIR_UNARY_COS: return te_un(c, TE_COS, x);
  case GIR_UNARY_TAN: return te_un(c, TE_TAN, x);
  case GIR_UNARY_ASIN: return te_un(c, TE_ASIN, x);
  case GIR_UNARY_ACOS: return te_un(c, TE_ACOS, x);
  case GIR_UNARY_ATAN: return te_un(c, TE_ATAN, x);
  case GIR_UNARY_SINH: return te_un(c, TE_SINH, x);
  case GIR_UNARY_COSH: return te_un(c, TE_COSH, x);
  case GIR_UNARY_ASINH: return te_un(c, TE_ASINH, x);
  case GIR_UNARY_ACOSH: return te_un(c, TE_ACOSH, x);
  case GIR_UNARY_ATANH: return te_un(c, TE_ATANH, x);
  case GIR_UNARY_NOT: return te_un(c, TE_NOT, x);
  case GIR_UNARY_BITNOT: return te_un(c, TE_BITNOT, x);
  case GIR_UNARY_ISNAN: return te_un(c, TE_ISNAN, x);
  case GIR_UNARY_ISINF: {
    te_expr *inf = te_un(c, TE_ISINF, x);
    te_expr *pos = te_bin(c, TE_GT, x, zero), *neg = te_lt(c, x, zero);
    te_expr *want = te_bin(c, TE_OR, te_and(c, pos, te_const(c, GIR_BOOL, alpha != 0)),
                           te_and(c, neg, te_const(c, GIR_BOOL, beta != 0)));
    return te_and(c, inf, want);
  }
  case GIR_UNARY_SOFTPLUS: return softplus(c, x);
  case GIR_UNARY_SOFTSIGN: return te_div(c, x, te_add(c, one, te_un(c, TE_ABS, x)));
  case GIR_UNARY_LEAKY_RELU: return te_select(c, te_lt(c, x, zero), te_mul(c, k(c, t, alpha), x), x);
  case GIR_UNARY_ELU:
    return te_select(c, te_lt(c, x, zero), te_mul(c, k(c, t, alpha), te_sub(c, te_un(c, TE_EXP, x), one)), x);
  case GIR_UNARY_SELU:
    return te_mul(c, k(c, t, gamma),
                  te_select(c, te_bin(c, TE_LE, x, zero),
                            te_sub(c, te_mul(c, k(c, t, alpha), te_un(c, TE_EXP, x)), k(c, t, alpha)), x));
  case GIR_UNARY_CELU: {
    te_expr *neg = te_mul(c, k(c, t, alpha), te_sub(c, te_un(c, TE_EXP, te_div(c, x, k(c, t, alpha))), one));
    return te_add(c, te_bin(c, TE_MAX, zero, x), te_bin(c, TE_MIN, zero, neg));
  }
  case GIR_UNARY_HARD_SIGMOID:
    return te_bin(c, TE_MAX, zero, te_bin(c, TE_MIN, one, te_add(c, te_mul(c, k(c, t, alpha), x), k(c, t, beta))));
  case GIR_UNARY_HARD_SWISH:
    return te_mul(c, x,
                  te_bin(c, TE_MAX, zero,
                         te_bin(c, TE_MIN, one, te_add(c, te_mul(c, k(c, t, 1.0 / 6.0), x), k(c, t, 0.5)))));
  case GIR_UNARY_THRESHOLDED_RELU: return te_select(c, te_bin(c, TE_GT, x, k(c, t, alpha)), x, zero);
  case GIR_UNARY_GELU:
    if (alpha != 0) { /* tanh approximation */
      te_expr *x3 = te_mul(c, te_mul(c, x, x), x);
      te_expr *in = te_mul(c, k(c, t, sqrt(2.0 / M_PI)), te_add(c, x, te_mul(c, k(c, t, 0.044715), x3)));
      return te_mul(c, te_mul(c, k(c, t, 0.5), x), te_add(c, one, te_un(c, TE_TANH, in)));
    }
    return te_mul(c, te_mul(c, k(c, t, 0.5), x), te_add(c, one, te_un(c, TE_ERF, te_mul(c, x, k(c, t, M_SQRT1_2)))));
  case GIR_UNARY_MISH: return te_mul(c, x, te_un(c, TE_TANH, softplus(c, x)));
  case GIR_UNARY_SHRINK:
    return te_select(c, te_lt(c, x, k(c, t, -alpha)), te_add(c, x, k(c, t, beta)),
                     te_select(c, te_bin(c, TE_GT, x, k(c, t, alpha)), te_sub(c, x, k(c, t, beta)), zero));
  case GIR_UNARY_SWISH: return te_mul(c, x, sigmoid(c, te_mul(c, k(c, t, alpha), x)));
  default: return NULL;
  }
}

int lower_compute_unary(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_expr *body = unary_body(c, n, te_load_bcast_axes(c, in[0], ax, in[0]->rank));
  if (!body) return gir_errf(c->err, "%s: unknown unary function", n->name);
  out[0] = lower_stage(c, n, 0, ax, body);
  return 0;
}

static te_expr *binary_body(te_ctx *c, gir_binary_fn fn, te_expr *a, te_expr *b) {
  gir_dtype t = a->dtype;
  switch (fn) {
  case GIR_BINARY_ADD: return te_add(c, a, b);
  case GIR_BINARY_SUB: return te_sub(c, a, b);
  case GIR_BINARY_MUL: return te_mul(c, a, b);
  case GIR_BINARY_DIV: return te_div(c, a, b);
  case GIR_BINARY_POW:
    if (a->dtype == b->dtype) return te_bin(c, TE_POW, a, b);
    if (gir_dtype_is_int(a->dtype) && gir_dtype_is_int(b->dtype))
      return te_bin(c, TE_POW, a, te_cast(c, a->dtype, b));
    return te_cast(c, t, te_bin(c, TE_POW, te_cast(c, GIR_F64, a), te_cast(c, GIR_F64, b)));
  case GIR_BINARY_MAX: return te_bin(c, TE_MAX, a, b);
  case GIR_BINARY_MIN: return te_bin(c, TE_MIN, a, b);
  case GIR_BINARY_MOD: return te_bin(c, TE_FLOORMOD, a, b);
  case GIR_BINARY_FMOD: return te_bin(c, TE_MOD, a, b);
  case GIR_BINARY_PRELU: {
    te_expr *s = te_cast(c, t, b);
    return te_select(c, te_lt(c, a, te_const(c, t, 0)), te_mul(c, a, s), a);
  }
  case GIR_BINARY_AND: case GIR_BINARY_BITAND: return te_bin(c, TE_AND, a, b);
  case GIR_BINARY_OR: case GIR_BINARY_BITOR: return te_bin(c, TE_OR, a, b);
  case GIR_BINARY_XOR: case GIR_BINARY_BITXOR: return te_bin(c, TE_XOR, a, b);
  case GIR_BINARY_SHL: return te_bin(c, TE_SHL, a, b);
  case GIR_BINARY_SHR: return te_bin(c, TE_SHR, a, b);
  case GIR_BINARY_EQ: return te_bin(c, TE_EQ, a, b);
  case GIR_BINARY_LT: return te_bin(c, TE_LT, a, b);
  case GIR_BINARY_LE: return te_bin(c, TE_LE, a, b);
  case GIR_BINARY_GT: return te_bin(c, TE_GT, a, b);
  case GIR_BINARY_GE: return te_bin(c, TE_GE, a, b);
  default: return NULL;
  }
}

int lower_compute_binary(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  int r = n->out[0]->shape.rank;
  te_expr *body = binary_body(c, (gir_binary_fn)gir_attr_int(n, "fn", 0), te_load_bcast_axes(c, in[0], ax, r),
                              te_load_bcast_axes(c, in[1], ax, r));
  if (!body) return gir_errf(c->err, "%s: unknown binary function", n->name);
  out[0] = lower_stage(c, n, 0, ax, body);
  return 0;
}

int lower_compute_where(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  int r = n->out[0]->shape.rank;
  out[0] = lower_stage(c, n, 0, ax,
                       te_select(c, te_load_bcast_axes(c, in[0], ax, r), te_load_bcast_axes(c, in[1], ax, r),
                                 te_load_bcast_axes(c, in[2], ax, r)));
  return 0;
}

/* Cast to float8e8m0 with ONNX's rounding (numpy_helper.to_float8e8m0), on the
 * plain cast, which keeps the exponent bits (rounds down): from x in float32,
 * e = down(x) and v = 2^(e-127) (e = 0: 2^-127; NaN, inf: e = 0xff). `up`
 * takes the next exponent when x has a fraction: |x| > v for normal x, any
 * non-zero subnormal; `nearest` when the first dropped bit is set and the
 * exponent is not 0, or (exponent 0) any lower bit too: |x| >= 1.5 v for
 * normal x, |x| > v below. Saturation keeps e = 0xfe (v = 2^127) where the
 * next exponent would be 0xff, NaN. */
static te_expr *cast_e8m0(te_ctx *c, te_expr *x, gir_e8m0_round round, int sat) {
  if (x->dtype != GIR_F32) x = te_cast(c, GIR_F32, x);
  te_expr *e = te_cast(c, GIR_F8E8M0, x);
  if (round == GIR_E8M0_DOWN) return e;
  te_expr *v = te_cast(c, GIR_F32, e), *ax = te_un(c, TE_ABS, x), *zero = te_const(c, GIR_F32, 0);
  te_expr *min_normal = te_const(c, GIR_F32, 0x1p-126), *gt = te_bin(c, TE_GT, ax, v), *up;
  if (round == GIR_E8M0_NEAREST)
    up = te_select(c, te_ge(c, v, min_normal), te_ge(c, ax, te_mul(c, v, te_const(c, GIR_F32, 1.5))), gt);
  else
    up = te_bin(c, TE_OR, gt, te_and(c, te_bin(c, TE_NE, ax, zero), te_lt(c, ax, min_normal)));
  if (sat) up = te_and(c, up, te_bin(c, TE_NE, v, te_const(c, GIR_F32, 0x1p127)));
  return te_select(c, up, te_cast(c, GIR_F8E8M0, te_mul(c, v, te_const(c, GIR_F32, 2))), e);
}

/* The plain cast converts as numpy (with ml_dtypes) does; Cast's saturate (the
 * default) on the four float8 formats clamps to the finite range first, as the
 * reference's saturate_cast does (NaN stays NaN: min/max propagate it); e8m0
 * rounds by `round`. The clamp happens in float32 (float64 for float64 x). */
int lower_compute_cast(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  gir_dtype to = n->out[0]->dtype;
  te_expr *x = te_load_bcast_axes(c, in[0], ax, in[0]->rank), *y;
  int sat = gir_attr_int(n, "saturate", 1) != 0;
  if (to == GIR_F8E8M0) {
    y = cast_e8m0(c, x, (gir_e8m0_round)gir_attr_int(n, "round", GIR_E8M0_UP), sat);
  } else if (sat && gir_dtype_is_f8(to) && to != GIR_F4E2M1) {
    gir_dtype ft = x->dtype == GIR_F64 ? GIR_F64 : GIR_F32;
    double m = gir_dtype_float_max(to);
    if (x->dtype != ft) x = te_cast(c, ft, x);
    y = te_cast(c, to, te_bin(c, TE_MIN, te_bin(c, TE_MAX, x, te_const(c, ft, -m)), te_const(c, ft, m)));
  } else {
    y = te_cast(c, to, x);
  }
  out[0] = lower_stage(c, n, 0, ax, y);
  return 0;
}

int lower_compute_bitcast(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_expr *x = te_load_bcast_axes(c, in[0], ax, in[0]->rank);
  out[0] = lower_stage(c, n, 0, ax, te_bitcast(c, n->out[0]->dtype, x));
  return 0;
}

/* A trap's kernel is never called (the runtime fails the run with its message
 * instead, pack/plan.c): its code writes zeros, so that it is an ordinary kernel
 * for every backend. */
int lower_compute_trap(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  (void)in;
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  out[0] = lower_stage(c, n, 0, ax, te_const(c, n->out[0]->dtype, 0));
  return 0;
}

int lower_compute_iota(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  (void)in;
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  gir_dtype t = n->out[0]->dtype;
  int64_t axis = gir_attr_int(n, "axis", 0);
  te_expr *i = n->out[0]->shape.rank ? te_cast(c, t, te_v(c, ax[axis])) : te_const(c, t, 0);
  te_expr *body = te_add(c, te_const(c, t, gir_attr_float(n, "start", 0)), te_mul(c, i, te_const(c, t, gir_attr_float(n, "delta", 1))));
  out[0] = lower_stage(c, n, 0, ax, body);
  return 0;
}
