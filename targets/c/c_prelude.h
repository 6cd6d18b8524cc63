/* c_prelude.h — the helpers every C source of the C backend (targets/c) starts with.
 * CMake embeds this file's text into the compiler (cmake/embed.cmake); c_emit.c
 * pastes it after the includes of each generated source, which thus depends on
 * nothing but <math.h>, <string.h>, <stdint.h> and kiln_abi.h. Every helper is
 * `static inline`, so a source uses what it calls and the rest costs nothing.
 *
 * They give the loop IR's semantics (lower/tir.h) exactly as lower/scalar.c and
 * the LLVM backend (targets/llvm/llvm_expr.c) define them: integer division and
 * modulo by zero give 0 and INT_MIN / -1 wraps; shifts by the width or more give
 * 0, SHR is logical; dot4 sums its four 8-bit products into a wrapping int32;
 * float → integer conversions saturate (NaN → 0); float16, bfloat16 and the
 * float8/float4 formats are rounded to nearest even with the same integer code as
 * graphir/dtype.c; min/max pick b only when b is NaN or strictly
 * smaller (larger), so signed zeros come out as the interpreter's.
 * Signed arithmetic is done on unsigned types (C's signed overflow is undefined)
 * and converted back, which GCC and Clang define as wrapping. */
#ifndef KILN_C_PRELUDE_H
#define KILN_C_PRELUDE_H

#if defined(__GNUC__)
#define KC_ALIGNED(n) __attribute__((aligned(n)))
#define KC_PREFETCH(p) __builtin_prefetch((p), 0, 2)
#define KC_ASSUME_ALIGNED(p, n) __builtin_assume_aligned((p), (n))
#define KC_STATUS_SET(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define KC_UNUSED __attribute__((unused))
#else
#define KC_ALIGNED(n)
#define KC_PREFETCH(p) ((void)(p))
#define KC_ASSUME_ALIGNED(p, n) (p)
#define KC_STATUS_SET(p, v) (*(volatile int32_t *)(p) = (v))
#define KC_UNUSED
#endif

static inline uint32_t kc_fbits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return x;
}
static inline float kc_bitsf(uint32_t x) {
  float f;
  memcpy(&f, &x, 4);
  return f;
}
static inline uint64_t kc_dbits(double f) {
  uint64_t x;
  memcpy(&x, &f, 8);
  return x;
}
static inline double kc_bitsd(uint64_t x) {
  double f;
  memcpy(&f, &x, 8);
  return f;
}

/* --- float16, bfloat16 --- */

static inline uint16_t kc_f32_to_f16(float f) {
  uint32_t x = kc_fbits(f);
  uint32_t sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u | ((mag >> 13) & 0x3ffu) : 0));
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (mag < 0x38800000u) {
    if (mag < 0x33000000u) return (uint16_t)sign;
    uint32_t e = mag >> 23, m = (mag & 0x7fffffu) | 0x800000u, shift = 126 - e;
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = (mag - 0x38000000u) >> 13, rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
  return (uint16_t)(sign | r);
}
static inline float kc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0x1f) x = sign | 0x7f800000u | (m << 13);
  else if (e) x = sign | ((e + 112) << 23) | (m << 13);
  else {
    float v = (float)m * 0x1p-24f; /* exact */
    return sign ? -v : v;
  }
  return kc_bitsf(x);
}
static inline float kc_rnd_f16(float f) { return kc_f16_to_f32(kc_f32_to_f16(f)); }

static inline uint16_t kc_f32_to_bf16(float f) {
  uint32_t x = kc_fbits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
static inline float kc_bf16_to_f32(uint16_t h) { return kc_bitsf((uint32_t)h << 16); }
static inline float kc_rnd_bf16(float f) { return kc_bf16_to_f32(kc_f32_to_bf16(f)); }

/* --- float8 / float4: the layout of graphir/dtype.h's gir_f8_format --- */

typedef struct {
  int mbits, bias, sign_shift;
  uint32_t max_code, overflow_code, nan_code;
  int has_inf, fnuz;
} kc_f8fmt;

static inline uint32_t kc_f8_magnitude(const kc_f8fmt *f, uint32_t mag) {
  int emin = 1 - f->bias;
  uint32_t e32 = mag >> 23, r, rem, half, sh;
  if ((int)e32 - 127 >= emin) {
    sh = (uint32_t)(23 - f->mbits);
    r = (mag - ((uint32_t)(127 - f->bias) << 23)) >> sh;
    rem = mag & ((1u << sh) - 1);
  } else {
    if (e32 == 0) return 0;
    uint32_t m24 = (mag & 0x7fffffu) | 0x800000u;
    int s = emin - f->mbits + 150 - (int)e32;
    if (s > 25) return 0;
    sh = (uint32_t)s;
    r = m24 >> sh;
    rem = m24 & ((1u << sh) - 1);
  }
  half = 1u << (sh - 1);
  if (rem > half || (rem == half && (r & 1))) r++;
  return r;
}
static inline uint8_t kc_f32_to_f8(const kc_f8fmt *f, float v) {
  uint32_t x = kc_fbits(v), sign = x >> 31, mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return (uint8_t)(f->fnuz ? f->nan_code : f->nan_code ^ (sign << f->sign_shift));
  uint32_t r = kc_f8_magnitude(f, mag);
  if (r > f->max_code) r = f->overflow_code;
  if (f->fnuz) return (uint8_t)(r == 0 || r == 0x80 ? r : r | sign << 7);
  return (uint8_t)(r | sign << f->sign_shift);
}
static inline float kc_f8_to_f32(const kc_f8fmt *f, uint8_t c) {
  uint32_t sign = ((uint32_t)c >> f->sign_shift) & 1u, mag = c & ((1u << f->sign_shift) - 1), x;
  float r;
  if (f->fnuz && c == 0x80) x = 0x7fc00000u;
  else if (mag > f->max_code) x = f->has_inf && mag == f->overflow_code ? 0x7f800000u : 0x7fc00000u;
  else {
    uint32_t e = mag >> f->mbits, m = mag & ((1u << f->mbits) - 1);
    if (e == 0) {
      r = (float)m * kc_bitsf((uint32_t)(127 + 1 - f->bias - f->mbits) << 23); /* exact */
      return sign ? -r : r;
    }
    x = (e + (uint32_t)(127 - f->bias)) << 23 | m << (23 - f->mbits);
  }
  r = kc_bitsf(x);
  return sign ? -r : r;
}
static const kc_f8fmt KC_UNUSED kc_e4m3fn = {3, 7, 7, 0x7e, 0x7f, 0x7f, 0, 0};
static const kc_f8fmt KC_UNUSED kc_e4m3fnuz = {3, 8, 7, 0x7f, 0x80, 0x80, 0, 1};
static const kc_f8fmt KC_UNUSED kc_e5m2 = {2, 15, 7, 0x7b, 0x7c, 0x7e, 1, 0};
static const kc_f8fmt KC_UNUSED kc_e5m2fnuz = {2, 16, 7, 0x7f, 0x80, 0x80, 0, 1};
static const kc_f8fmt KC_UNUSED kc_e2m1 = {1, 1, 3, 0x7, 0x7, 0x8, 0, 0};
/* float8e8m0: the exponent bits; code 0 is 2^-127, 0xff NaN */
static inline uint8_t kc_f32_to_e8m0(float v) { return (uint8_t)(kc_fbits(v) >> 23); }
static inline float kc_e8m0_to_f32(uint8_t c) {
  return kc_bitsf(c == 0xff ? 0x7fc00000u : c ? (uint32_t)c << 23 : 0x00400000u);
}
#define KC_F8(name, fmt)                                                                          \
  static inline uint8_t kc_to_##name(float v) { return kc_f32_to_f8(&fmt, v); }                  \
  static inline float kc_from_##name(uint8_t c) { return kc_f8_to_f32(&fmt, c); }                \
  static inline float kc_rnd_##name(float v) { return kc_f8_to_f32(&fmt, kc_f32_to_f8(&fmt, v)); }
KC_F8(e4m3fn, kc_e4m3fn)
KC_F8(e4m3fnuz, kc_e4m3fnuz)
KC_F8(e5m2, kc_e5m2)
KC_F8(e5m2fnuz, kc_e5m2fnuz)
KC_F8(e2m1, kc_e2m1)
static inline uint8_t kc_to_e8m0(float v) { return kc_f32_to_e8m0(v); }
static inline float kc_from_e8m0(uint8_t c) { return kc_e8m0_to_f32(c); }
static inline float kc_rnd_e8m0(float v) { return kc_e8m0_to_f32(kc_f32_to_e8m0(v)); }

/* --- integers --- */

/* 4- and 2-bit registers: int8_t sign-extended / uint8_t zero-extended */
static inline int8_t kc_w_i4(uint64_t x) { return (int8_t)(((int)(x & 0xfu) ^ 8) - 8); }
static inline int8_t kc_w_i2(uint64_t x) { return (int8_t)(((int)(x & 0x3u) ^ 2) - 2); }
static inline uint8_t kc_w_u4(uint64_t x) { return (uint8_t)(x & 0xfu); }
static inline uint8_t kc_w_u2(uint64_t x) { return (uint8_t)(x & 0x3u); }

/* division and modulo that never trap, on int64 / uint64 (narrower types are
 * extended, computed here and wrapped back by the caller) */
static inline int64_t kc_sdiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return a == INT64_MIN ? a : -a;
  return a / b;
}
static inline int64_t kc_sfloordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return a == INT64_MIN ? a : -a;
  int64_t q = a / b, r = a % b;
  return r != 0 && ((r ^ b) < 0) ? q - 1 : q;
}
static inline int64_t kc_smod(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static inline int64_t kc_sfloormod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  return r != 0 && ((r ^ b) < 0) ? r + b : r;
}
static inline uint64_t kc_udiv(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline int64_t kc_smin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t kc_smax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline uint64_t kc_umin(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t kc_umax(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t kc_umod(uint64_t a, uint64_t b) { return b ? a % b : 0; }
/* shifts on the bits of a w-bit value (count unsigned: >= w gives 0) */
static inline uint64_t kc_shl(uint64_t a, uint64_t n, unsigned w) { return n >= w ? 0 : a << n; }
static inline uint64_t kc_shr(uint64_t a, uint64_t n, unsigned w) {
  uint64_t mask = w >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
  return n >= w ? 0 : (a & mask) >> n;
}
static inline int64_t kc_ipow(int64_t b, int64_t e) {
  if (e < 0) return b == 1 ? 1 : b == -1 ? (e & 1 ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)b;
  while (e) {
    if (e & 1) r *= x;
    x *= x;
    e >>= 1;
  }
  return (int64_t)r;
}
/* dot4's lane: acc + a0*b0 + ... + a3*b3 on 8-bit values (each product fits
 * int32), the sum wrapping in int32. */
static inline int32_t kc_dot4(int32_t acc, int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t b0, int32_t b1,
                              int32_t b2, int32_t b3) {
  return (int32_t)((uint32_t)acc + (uint32_t)(a0 * b0) + (uint32_t)(a1 * b1) + (uint32_t)(a2 * b2) +
                   (uint32_t)(a3 * b3));
}

/* dot4 of four bytes in memory on each side (p, q: a pixel's four input channels and
 * one output channel's four weights), u/s naming each side's signedness. With the
 * DSP extension's SIMD32 (Cortex-M4/M7/M33/M55), the bytes spread into halfwords —
 * UXTB16/SXTB16 of the word (bytes 0, 2) and of the word rotated by 8 (bytes 1, 3) —
 * and two SMLADs (two 16-bit products each) add them up: the packed MACs of
 * CMSIS-NN's int8 kernels, wrapping as kc_dot4 does. */
#if defined(__GNUC__) && defined(__ARM_FEATURE_SIMD32) && __ARM_FEATURE_SIMD32
#define KC_DOT4P(name, xa, xb)                                                                      \
  static inline int32_t name(int32_t acc, const void *p, const void *q) {                          \
    uint32_t a, b;                                                                                 \
    memcpy(&a, p, 4);                                                                              \
    memcpy(&b, q, 4);                                                                              \
    acc = __builtin_arm_smlad(xa(a), xb(b), acc);                                                  \
    return __builtin_arm_smlad(xa((a >> 8) | (a << 24)), xb((b >> 8) | (b << 24)), acc);           \
  }
#define KC_U16(w) (int32_t) __builtin_arm_uxtb16(w)
#define KC_S16(w) (int32_t) __builtin_arm_sxtb16(w)
KC_DOT4P(kc_dot4_uu, KC_U16, KC_U16)
KC_DOT4P(kc_dot4_us, KC_U16, KC_S16)
KC_DOT4P(kc_dot4_su, KC_S16, KC_U16)
KC_DOT4P(kc_dot4_ss, KC_S16, KC_S16)
#else
#define KC_DOT4P(name, ta, tb)                                                                     \
  static inline int32_t name(int32_t acc, const void *p, const void *q) {                          \
    const ta *a = (const ta *)p;                                                                   \
    const tb *b = (const tb *)q;                                                                   \
    return kc_dot4(acc, a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]);                           \
  }
KC_DOT4P(kc_dot4_uu, uint8_t, uint8_t)
KC_DOT4P(kc_dot4_us, uint8_t, int8_t)
KC_DOT4P(kc_dot4_su, int8_t, uint8_t)
KC_DOT4P(kc_dot4_ss, int8_t, int8_t)
#endif
#undef KC_DOT4P

/* --- floats --- */

/* saturating conversions: NaN → 0, the int64 (uint64) range's ends beyond it */
static inline int64_t kc_f2i(double d) {
  if (d != d) return 0;
  if (d >= 9.2233720368547758e18) return INT64_MAX;
  if (d <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)d;
}
static inline uint64_t kc_f2u(double d) {
  if (d != d || d <= 0) return 0;
  if (d >= 1.8446744073709552e19) return UINT64_MAX;
  return (uint64_t)d;
}
static inline float kc_fminf(float a, float b) { return b != b ? b : b < a ? b : a; }
static inline float kc_fmaxf(float a, float b) { return b != b ? b : b > a ? b : a; }
static inline double kc_fmin(double a, double b) { return b != b ? b : b < a ? b : a; }
static inline double kc_fmax(double a, double b) { return b != b ? b : b > a ? b : a; }
/* floordiv / floormod of floats, in double as the interpreter computes them */
static inline double kc_ffloordiv(double x, double y) { return floor(x / y); }
static inline double kc_ffloormod(double x, double y) {
  double q = floor(x / y);
  return x - q * y;
}

#endif
