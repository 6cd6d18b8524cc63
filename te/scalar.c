/* scalar.c — the value semantics of every TE/loop-IR operator on one scalar, in
 * one place: the TE interpreter (constant folding, the reference executor), the
 * loop-IR interpreter and the simplifier's constant folding all call these, so
 * they cannot disagree. Floats travel as double rounded to their dtype after each
 * operation (float8/float4 through float32, as ml_dtypes rounds); integers as
 * int64 wrapped to their width, 4 and 2 bits included (two's complement, which
 * ONNX specifies); uint64 as its bit pattern. Integer division by zero gives 0
 * rather than trapping: bad data must never crash the compiler. */
#include <math.h>
#include "scalar.h"
int64_t tir_wrap_int(gir_dtype t, int64_t v) {
  switch (t) {
  case GIR_I8: return (int8_t)(uint8_t)v;
  case GIR_I16: return (int16_t)(uint16_t)v;
  case GIR_I32: return (int32_t)(uint32_t)v;
  case GIR_U8: return (uint8_t)v;
  case GIR_U16: return (uint16_t)v;
  case GIR_U32: return (uint32_t)v;
  case GIR_I4: return ((v & 0xf) ^ 8) - 8;
  case GIR_I2: return ((v & 0x3) ^ 2) - 2;
  case GIR_U4: return v & 0xf;
  case GIR_U2: return v & 0x3;
  case GIR_BOOL: return v != 0;
  default: return v;
  }
}

double tir_round_float(gir_dtype t, double v) {
  switch (t) {
  case GIR_F32: return (double)(float)v;
  case GIR_F16: return gir_f16_to_f32(gir_f32_to_f16((float)v));
  case GIR_BF16: return gir_bf16_to_f32(gir_f32_to_bf16((float)v));
  case GIR_F8E4M3FN: case GIR_F8E4M3FNUZ: case GIR_F8E5M2: case GIR_F8E5M2FNUZ: case GIR_F8E8M0: case GIR_F4E2M1:
    return gir_f8_to_f32(t, gir_f64_to_f8(t, v));
  default: return v;
  }
}

static tir_value fval(double f) { return (tir_value){.f = f}; }
static tir_value ival(int64_t i) { return (tir_value){.i = i}; }


tir_value tir_value_unop(te_unop op, gir_dtype t, tir_value a) {
  if (gir_dtype_is_float(t)) {
    double x = a.f, r;
    switch (op) {
    case TE_NEG: r = -x; break;
    case TE_ABS: r = fabs(x); break;
    case TE_EXP: r = exp(x); break;
    case TE_LOG: r = log(x); break;
    case TE_SQRT: r = sqrt(x); break;
    case TE_SIN: r = sin(x); break;
    case TE_COS: r = cos(x); break;
    case TE_TAN: r = tan(x); break;
    case TE_ASIN: r = asin(x); break;
    case TE_ACOS: r = acos(x); break;
    case TE_ATAN: r = atan(x); break;
    case TE_SINH: r = sinh(x); break;
    case TE_COSH: r = cosh(x); break;
    case TE_ASINH: r = asinh(x); break;
    case TE_ACOSH: r = acosh(x); break;
    case TE_ATANH: r = atanh(x); break;
    case TE_TANH: r = tanh(x); break;
    case TE_ERF: r = erf(x); break;
    case TE_FLOOR: r = floor(x); break;
    case TE_CEIL: r = ceil(x); break;
    case TE_ROUND: r = nearbyint(x); break; /* default rounding mode: half to even */
    case TE_TRUNC: r = trunc(x); break;
    case TE_ISNAN: return ival(isnan(x));
    case TE_ISINF: return ival(isinf(x));
    default: r = x; break;
    }
    return fval(tir_round_float(t, r));
  }
  int64_t x = a.i, r;
  switch (op) {
  case TE_NEG: r = (int64_t)(0 - (uint64_t)x); break;
  case TE_ABS: r = x < 0 && t != GIR_U64 ? (int64_t)(0 - (uint64_t)x) : x; break;
  case TE_NOT: r = !x; break;
  case TE_BITNOT: r = ~x; break;
  case TE_ISNAN: case TE_ISINF: return ival(0);
  default: r = x; break; /* floor/ceil/round/trunc (and the rest) of integers */
  }
  return ival(tir_wrap_int(t, r));
}

static int64_t ipow(int64_t b, int64_t e) {
  if (e < 0) return b == 1 ? 1 : b == -1 ? (e & 1 ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)b;
  while (e) {
    if (e & 1) r *= x;
    x *= x;
    e >>= 1;
  }
  return (int64_t)r;
}

tir_value tir_value_binop(te_binop op, gir_dtype t, tir_value a, tir_value b) {
  if (gir_dtype_is_float(t)) {
    double x = a.f, y = b.f, r;
    switch (op) {
    case TE_ADD: r = x + y; break;
    case TE_SUB: r = x - y; break;
    case TE_MUL: r = x * y; break;
    case TE_DIV: r = x / y; break;
    case TE_FLOORDIV: r = floor(x / y); break;
    case TE_MOD: r = fmod(x, y); break;
    case TE_FLOORMOD: r = x - floor(x / y) * y; break;
    case TE_MIN: r = isnan(x) || isnan(y) ? NAN : y < x ? y : x; break; /* equal: x (signed zeros) */
    case TE_MAX: r = isnan(x) || isnan(y) ? NAN : y > x ? y : x; break;
    case TE_POW: r = pow(x, y); break;
    case TE_EQ: return ival(x == y);
    case TE_NE: return ival(x != y);
    case TE_LT: return ival(x < y);
    case TE_LE: return ival(x <= y);
    case TE_GT: return ival(x > y);
    case TE_GE: return ival(x >= y);
    default: r = 0; break; /* logical ops are never built on floats */
    }
    return fval(tir_round_float(t, r));
  }
  int64_t x = a.i, y = b.i, r;
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  int u64 = t == GIR_U64;
  int bits = gir_dtype_bits(t);
  switch (op) {
  case TE_ADD: r = (int64_t)(ux + uy); break;
  case TE_SUB: r = (int64_t)(ux - uy); break;
  case TE_MUL: r = (int64_t)(ux * uy); break;
  case TE_DIV:
    if (y == 0) r = 0;
    else if (u64) r = (int64_t)(ux / uy);
    else if (x == INT64_MIN && y == -1) r = x;
    else r = x / y;
    break;
  case TE_FLOORDIV:
    if (y == 0) r = 0;
    else if (u64) r = (int64_t)(ux / uy);
    else if (x == INT64_MIN && y == -1) r = x;
    else {
      r = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) r--;
    }
    break;
  case TE_MOD:
    if (y == 0) r = 0;
    else if (u64) r = (int64_t)(ux % uy);
    else if (y == -1) r = 0;
    else r = x % y;
    break;
  case TE_FLOORMOD:
    if (y == 0) r = 0;
    else if (u64) r = (int64_t)(ux % uy);
    else if (y == -1) r = 0;
    else {
      r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
    }
    break;
  case TE_MIN: r = u64 ? (int64_t)(ux < uy ? ux : uy) : (x < y ? x : y); break;
  case TE_MAX: r = u64 ? (int64_t)(ux > uy ? ux : uy) : (x > y ? x : y); break;
  case TE_POW: r = ipow(x, y); break;
  case TE_AND: r = t == GIR_BOOL ? (x && y) : (x & y); break;
  case TE_OR: r = t == GIR_BOOL ? (x || y) : (x | y); break;
  case TE_XOR: r = t == GIR_BOOL ? ((!x) != (!y)) : (x ^ y); break;
  case TE_SHL: r = (uy >= (uint64_t)bits) ? 0 : (int64_t)(ux << uy); break;
  case TE_SHR: {
    uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
    r = (uy >= (uint64_t)bits) ? 0 : (int64_t)((ux & mask) >> uy);
    break;
  }
  case TE_EQ: return ival(x == y);
  case TE_NE: return ival(x != y);
  case TE_LT: return ival(u64 ? ux < uy : x < y);
  case TE_LE: return ival(u64 ? ux <= uy : x <= y);
  case TE_GT: return ival(u64 ? ux > uy : x > y);
  case TE_GE: return ival(u64 ? ux >= uy : x >= y);
  default: r = 0; break;
  }
  return ival(tir_wrap_int(t, r));
}

tir_value tir_value_cast(gir_dtype to, gir_dtype from, tir_value a) {
  if (gir_dtype_is_float(to)) {
    double d = gir_dtype_is_float(from) ? a.f : from == GIR_U64 ? (double)(uint64_t)a.i : (double)a.i;
    return fval(tir_round_float(to, d));
  }
  if (to == GIR_BOOL) return ival(gir_dtype_is_float(from) ? a.f != 0 : a.i != 0);
  if (gir_dtype_is_float(from)) {
    double d = a.f;
    if (d != d) return ival(0);
    if (to == GIR_U64) return ival(d <= 0 ? 0 : d >= 1.8446744073709552e19 ? -1 : (int64_t)(uint64_t)d);
    int64_t i = d >= 9.2233720368547758e18 ? INT64_MAX : d <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)d;
    return ival(tir_wrap_int(to, i));
  }
  return ival(tir_wrap_int(to, a.i));
}

/* Through memory: the value is stored as `from` (the layout a buffer would
 * hold) and loaded back as `to`. */
tir_value tir_value_bitcast(gir_dtype to, gir_dtype from, tir_value a) {
  unsigned char bytes[8] = {0};
  if (gir_dtype_is_float(from)) gir_store_f64(from, bytes, 0, a.f);
  else gir_store_i64(from, bytes, 0, a.i);
  return gir_dtype_is_float(to) ? fval(gir_load_f64(to, bytes, 0)) : ival(gir_load_i64(to, bytes, 0));
}
