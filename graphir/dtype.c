/* dtype.c — element-type properties from dtypes.def and scalar conversions.
 * float16/bfloat16 conversions are written out here (round to nearest even, NaN
 * preserved) because C11 has no portable half type; so are the float8/float4
 * ones, on the float32 bit pattern with integer operations only; the LLVM code
 * generator computes the same codes branch-free (targets/llvm/llvm_expr.c, and
 * tests/unit/test_llvm.c checks every code of every format).
 * Types narrower than a byte live one per byte: int4/int2 sign-extended,
 * uint4/uint2 zero-extended; storing wraps to the width (two's complement). */
#include "dtype.h"
#include <float.h>
#include <math.h>
#include <string.h>

enum { KIND_F, KIND_I, KIND_U, KIND_B, KIND_O };
#define F KIND_F
#define I KIND_I
#define U KIND_U
#define B KIND_B
#define O KIND_O
static const struct {
  const char *name;
  int code, bits, first_class, kind;
} info[GIR_DTYPE_COUNT] = {
#define GIR_DTYPE(id, code, bits, name, fc, kind) [GIR_##id] = {name, code, bits, fc, kind},
#include "dtypes.def"
#undef GIR_DTYPE
};
#undef F
#undef I
#undef U
#undef B
#undef O

static int valid(gir_dtype t) { return t >= 0 && t < GIR_DTYPE_COUNT; }

const char *gir_dtype_name(gir_dtype t) { return valid(t) ? info[t].name : "none"; }
int gir_dtype_bits(gir_dtype t) { return valid(t) ? info[t].bits : 0; }
size_t gir_dtype_size(gir_dtype t) {
  return valid(t) && info[t].first_class ? (size_t)(info[t].bits + 7) / 8 : 0;
}
int gir_dtype_first_class(gir_dtype t) { return valid(t) && info[t].first_class; }
int gir_dtype_is_float(gir_dtype t) { return valid(t) && info[t].kind == KIND_F; }
int gir_dtype_is_int(gir_dtype t) {
  return valid(t) && (info[t].kind == KIND_I || info[t].kind == KIND_U);
}
int gir_dtype_is_signed(gir_dtype t) {
  return valid(t) && (info[t].kind == KIND_I || info[t].kind == KIND_F);
}
int gir_dtype_onnx_code(gir_dtype t) { return valid(t) ? info[t].code : 0; }

int gir_dtype_is_f8(gir_dtype t) {
  switch (t) {
  case GIR_F8E4M3FN: case GIR_F8E4M3FNUZ: case GIR_F8E5M2: case GIR_F8E5M2FNUZ: case GIR_F8E8M0: case GIR_F4E2M1:
    return 1;
  default: return 0;
  }
}

double gir_dtype_float_max(gir_dtype t) {
  gir_f8_format f;
  switch (t) {
  case GIR_F32: return FLT_MAX;
  case GIR_F64: return DBL_MAX;
  case GIR_F16: return 65504.0;
  case GIR_BF16: return gir_bf16_to_f32(0x7f7f);
  case GIR_F8E8M0: return 0x1p127;
  default: return gir_f8_format_of(t, &f) ? gir_f8_to_f32(t, (uint8_t)f.max_code) : 0;
  }
}

gir_dtype gir_dtype_from_onnx(int32_t code) {
  for (int t = 0; t < GIR_DTYPE_COUNT; t++)
    if (info[t].code == code) return (gir_dtype)t;
  return GIR_DTYPE_NONE;
}

gir_dtype gir_dtype_from_name(const char *name) {
  for (int t = 0; t < GIR_DTYPE_COUNT; t++)
    if (!strcmp(info[t].name, name)) return (gir_dtype)t;
  return GIR_DTYPE_NONE;
}

uint16_t gir_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) /* inf or NaN */
    return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u | ((mag >> 13) & 0x3ffu) : 0));
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (mag < 0x38800000u) {                                  /* subnormal or zero */
    if (mag < 0x33000000u) return (uint16_t)sign;
    uint32_t e = mag >> 23, m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* f16 subnormal unit is 2^-24 */
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = ((mag - 0x38000000u) >> 13);
  uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
  return (uint16_t)(sign | r);
}

float gir_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
  if (e == 0x1f)
    x = sign | 0x7f800000u | (m << 13);
  else if (e)
    x = sign | ((e + 112) << 23) | (m << 13);
  else if (m) {
    float v = ldexpf((float)m, -24);
    return sign ? -v : v;
  } else
    x = sign;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t gir_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float gir_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* --- float8 / float4 --- */

int gir_f8_format_of(gir_dtype t, gir_f8_format *f) {
  switch (t) {
  case GIR_F8E4M3FN: *f = (gir_f8_format){4, 3, 7, 7, 0x7e, 0x7f, 0x7f, 0, 0}; return 1;
  case GIR_F8E4M3FNUZ: *f = (gir_f8_format){4, 3, 8, 7, 0x7f, 0x80, 0x80, 0, 1}; return 1;
  case GIR_F8E5M2: *f = (gir_f8_format){5, 2, 15, 7, 0x7b, 0x7c, 0x7e, 1, 0}; return 1;
  case GIR_F8E5M2FNUZ: *f = (gir_f8_format){5, 2, 16, 7, 0x7f, 0x80, 0x80, 0, 1}; return 1;
  case GIR_F4E2M1: *f = (gir_f8_format){2, 1, 1, 3, 0x7, 0x7, 0x8, 0, 0}; return 1;
  default: return 0;
  }
}

/* Magnitude code of |x| (float32 bits without the sign), rounded to nearest
 * even; may exceed max_code (then the caller overflows). Normal results rebias
 * the exponent and round on the dropped mantissa bits (a carry moves into the
 * exponent, as it should); subnormal ones shift the full 24-bit mantissa. */
static uint32_t f8_magnitude(const gir_f8_format *f, uint32_t mag) {
  int emin = 1 - f->bias; /* exponent of the smallest normal */
  uint32_t e32 = mag >> 23, r, rem, half, sh;
  if ((int)e32 - 127 >= emin) {
    sh = (uint32_t)(23 - f->mbits);
    r = (mag - ((uint32_t)(127 - f->bias) << 23)) >> sh;
    rem = mag & ((1u << sh) - 1);
  } else {
    if (e32 == 0) return 0; /* float32 zero or subnormal: far below half the smallest f8 step */
    uint32_t m24 = (mag & 0x7fffffu) | 0x800000u;
    int s = emin - f->mbits + 150 - (int)e32; /* > 23 - mbits */
    if (s > 25) return 0;                     /* below a quarter step */
    sh = (uint32_t)s;
    r = m24 >> sh;
    rem = m24 & ((1u << sh) - 1);
  }
  half = 1u << (sh - 1);
  if (rem > half || (rem == half && (r & 1))) r++;
  return r;
}

uint8_t gir_f32_to_f8(gir_dtype t, float v) {
  uint32_t x;
  memcpy(&x, &v, 4);
  if (t == GIR_F8E8M0) return (uint8_t)(x >> 23); /* the exponent bits (the sign drops out) */
  gir_f8_format f;
  if (!gir_f8_format_of(t, &f)) return 0;
  uint32_t sign = x >> 31, mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return (uint8_t)(f.fnuz ? f.nan_code : f.nan_code ^ (sign << f.sign_shift));
  uint32_t r = f8_magnitude(&f, mag);
  if (r > f.max_code) r = f.overflow_code; /* infinities land here too */
  if (f.fnuz) return (uint8_t)(r == 0 || r == 0x80 ? r : r | sign << 7);
  return (uint8_t)(r | sign << f.sign_shift);
}

/* Through float32, as ml_dtypes (and so the ONNX reference) converts a double:
 * rounding twice can differ from rounding once in the last bit, by design. */
uint8_t gir_f64_to_f8(gir_dtype t, double v) { return gir_f32_to_f8(t, (float)v); }

float gir_f8_to_f32(gir_dtype t, uint8_t c) {
  uint32_t x;
  float r;
  if (t == GIR_F8E8M0) {
    x = c == 0xff ? 0x7fc00000u : c ? (uint32_t)c << 23 : 0x00400000u; /* code 0 is 2^-127, a float32 subnormal */
    memcpy(&r, &x, 4);
    return r;
  }
  gir_f8_format f;
  if (!gir_f8_format_of(t, &f)) return 0;
  uint32_t sign = (c >> f.sign_shift) & 1u, mag = c & ((1u << f.sign_shift) - 1);
  if (f.fnuz && c == 0x80) x = 0x7fc00000u; /* read as -NaN, as ml_dtypes does */
  else if (mag > f.max_code) x = f.has_inf && mag == f.overflow_code ? 0x7f800000u : 0x7fc00000u;
  else {
    uint32_t e = mag >> f.mbits, m = mag & ((1u << f.mbits) - 1);
    if (e == 0) {
      r = ldexpf((float)m, 1 - f.bias - f.mbits);
      return sign ? -r : r;
    }
    x = (e + (uint32_t)(127 - f.bias)) << 23 | m << (23 - f.mbits);
  }
  memcpy(&r, &x, 4);
  return sign ? -r : r;
}

/* Two's-complement wrap of v to `bits` (< 64), sign- or zero-extended. */
static int64_t wrap_bits(int64_t v, int bits, int sg) {
  uint64_t m = (1ull << bits) - 1, u = (uint64_t)v & m;
  if (sg && (u >> (bits - 1))) u |= ~m;
  return (int64_t)u;
}

#define LOAD(T) \
  do { T v; memcpy(&v, (const char *)base + i * (int64_t)sizeof(T), sizeof(T)); return v; } while (0)

double gir_load_f64(gir_dtype t, const void *base, int64_t i) {
  switch (t) {
  case GIR_F32: LOAD(float);
  case GIR_F64: LOAD(double);
  case GIR_F16: { uint16_t h; memcpy(&h, (const char *)base + 2 * i, 2); return gir_f16_to_f32(h); }
  case GIR_BF16: { uint16_t h; memcpy(&h, (const char *)base + 2 * i, 2); return gir_bf16_to_f32(h); }
  case GIR_F8E4M3FN: case GIR_F8E4M3FNUZ: case GIR_F8E5M2: case GIR_F8E5M2FNUZ: case GIR_F8E8M0: case GIR_F4E2M1:
    return gir_f8_to_f32(t, ((const uint8_t *)base)[i]);
  case GIR_I4: case GIR_I2: case GIR_U4: case GIR_U2: return (double)gir_load_i64(t, base, i);
  case GIR_I8: LOAD(int8_t);
  case GIR_I16: LOAD(int16_t);
  case GIR_I32: LOAD(int32_t);
  case GIR_I64: LOAD(int64_t);
  case GIR_U8: LOAD(uint8_t);
  case GIR_U16: LOAD(uint16_t);
  case GIR_U32: LOAD(uint32_t);
  case GIR_U64: LOAD(uint64_t);
  case GIR_BOOL: { uint8_t b; memcpy(&b, (const char *)base + i, 1); return b != 0; }
  default: return 0;
  }
}

int64_t gir_load_i64(gir_dtype t, const void *base, int64_t i) {
  switch (t) {
  case GIR_I8: LOAD(int8_t);
  case GIR_I16: LOAD(int16_t);
  case GIR_I32: LOAD(int32_t);
  case GIR_I64: LOAD(int64_t);
  case GIR_U8: LOAD(uint8_t);
  case GIR_U16: LOAD(uint16_t);
  case GIR_U32: LOAD(uint32_t);
  case GIR_U64: LOAD(int64_t); /* bit pattern */
  case GIR_I4: case GIR_I2: case GIR_U4: case GIR_U2:
    return wrap_bits(((const int8_t *)base)[i], gir_dtype_bits(t), gir_dtype_is_signed(t));
  case GIR_BOOL: { uint8_t b; memcpy(&b, (const char *)base + i, 1); return b != 0; }
  default: {
    double d = gir_load_f64(t, base, i);
    if (d != d) return 0;
    if (d >= 9.2233720368547758e18) return INT64_MAX;
    if (d <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)d;
  }
  }
}
#undef LOAD

#define STORE(T, val) \
  do { T v_ = (T)(val); memcpy((char *)base + i * (int64_t)sizeof(T), &v_, sizeof(T)); } while (0)

void gir_store_i64(gir_dtype t, void *base, int64_t i, int64_t v) {
  switch (t) {
  case GIR_I8: STORE(int8_t, v); break;
  case GIR_I16: STORE(int16_t, v); break;
  case GIR_I32: STORE(int32_t, v); break;
  case GIR_I64: STORE(int64_t, v); break;
  case GIR_U8: STORE(uint8_t, (uint64_t)v); break;
  case GIR_U16: STORE(uint16_t, (uint64_t)v); break;
  case GIR_U32: STORE(uint32_t, (uint64_t)v); break;
  case GIR_U64: STORE(uint64_t, (uint64_t)v); break;
  case GIR_BOOL: STORE(uint8_t, v != 0); break;
  case GIR_I4: case GIR_I2: case GIR_U4: case GIR_U2:
    STORE(int8_t, wrap_bits(v, gir_dtype_bits(t), gir_dtype_is_signed(t)));
    break;
  default: gir_store_f64(t, base, i, (double)v); break;
  }
}

/* Float → integer: truncation toward zero to int64, NaN → 0 and saturation at the
 * int64 range (C leaves those undefined), then two's-complement wrap to the target
 * width. The TE interpreter and generated code follow the same rule; it is what
 * numpy and ONNX Runtime do on x86 for values inside the int64 range (ONNX leaves
 * out-of-range casts undefined). */
static int64_t sat_i64(double d) {
  if (d != d) return 0;
  if (d >= 9.2233720368547758e18) return INT64_MAX;
  if (d <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)d;
}

void gir_store_f64(gir_dtype t, void *base, int64_t i, double v) {
  switch (t) {
  case GIR_F32: STORE(float, v); break;
  case GIR_F64: STORE(double, v); break;
  case GIR_F16: STORE(uint16_t, gir_f32_to_f16((float)v)); break;
  case GIR_BF16: STORE(uint16_t, gir_f32_to_bf16((float)v)); break;
  case GIR_F8E4M3FN: case GIR_F8E4M3FNUZ: case GIR_F8E5M2: case GIR_F8E5M2FNUZ: case GIR_F8E8M0: case GIR_F4E2M1:
    ((uint8_t *)base)[i] = gir_f64_to_f8(t, v);
    break;
  case GIR_U64:
    if (v != v || v <= 0) STORE(uint64_t, 0);
    else if (v >= 1.8446744073709552e19) STORE(uint64_t, UINT64_MAX);
    else STORE(uint64_t, v);
    break;
  case GIR_BOOL: STORE(uint8_t, v != 0); break;
  default: gir_store_i64(t, base, i, sat_i64(v)); break;
  }
}
#undef STORE
