/* dtype.h — element types (generated from dtypes.def) and conversions between
 * a type's storage and double/int64, used by constant handling and folding.
 * Types narrower than a byte are stored one element per byte (dtypes.def). */
#ifndef GIR_DTYPE_H
#define GIR_DTYPE_H
#include <stdint.h>
#include <stddef.h>

typedef enum gir_dtype {
#define GIR_DTYPE(id, code, bits, name, fc, kind) GIR_##id,
#include "dtypes.def"
#undef GIR_DTYPE
  GIR_DTYPE_COUNT,
  GIR_DTYPE_NONE = -1
} gir_dtype;

const char *gir_dtype_name(gir_dtype t);
int gir_dtype_bits(gir_dtype t);
/* Bytes per element in memory of first-class types: 1 for the 4- and 2-bit
 * types, one element per byte; 0 for the others (string, complex). */
size_t gir_dtype_size(gir_dtype t);
int gir_dtype_first_class(gir_dtype t);
int gir_dtype_is_float(gir_dtype t);
int gir_dtype_is_int(gir_dtype t);     /* signed or unsigned integer */
int gir_dtype_is_signed(gir_dtype t);  /* signed integers and floats */
int gir_dtype_onnx_code(gir_dtype t);
/* The float8 formats, float8e8m0 and float4e2m1: one byte holding the format's
 * code, computed on as float32 ("f8" below names all six). */
int gir_dtype_is_f8(gir_dtype t);
/* Largest finite value of a float type (FLT_MAX for float32, 448 for
 * float8e4m3fn...); 0 for other types. */
double gir_dtype_float_max(gir_dtype t);
/* GIR_DTYPE_NONE for codes ONNX does not define. */
gir_dtype gir_dtype_from_onnx(int32_t code);
gir_dtype gir_dtype_from_name(const char *name);

/* Element access for first-class types: read as double / int64, write with the
 * conversion of ONNX Cast (float → int truncates toward zero, then wraps to the
 * width as dtype.c explains; float16 and bfloat16 round to nearest even). */
double gir_load_f64(gir_dtype t, const void *base, int64_t i);
int64_t gir_load_i64(gir_dtype t, const void *base, int64_t i);
void gir_store_f64(gir_dtype t, void *base, int64_t i, double v);
void gir_store_i64(gir_dtype t, void *base, int64_t i, int64_t v);

uint16_t gir_f32_to_f16(float f);
float gir_f16_to_f32(uint16_t h);
uint16_t gir_f32_to_bf16(float f);
float gir_bf16_to_f32(uint16_t h);

/* f8 codes (t: gir_dtype_is_f8). Encoding is the plain conversion, as numpy with
 * ml_dtypes does it (x.astype): round to nearest even; out of range gives inf
 * (float8e5m2) or NaN (e4m3fn, the FNUZ formats); float4e2m1 has neither and
 * saturates to ±6 (NaN gives -0 or +0, ml_dtypes' choice); FNUZ formats have no
 * -0. float8e8m0 keeps the exponent bits (rounds down; NaN and inf give 0xff);
 * the Cast operator's saturate and round_mode are built on these by the compute
 * definition of cast (te/compute_elementwise.c). A double goes through
 * float32 (rounded twice), as ml_dtypes converts it. */
uint8_t gir_f32_to_f8(gir_dtype t, float f);
uint8_t gir_f64_to_f8(gir_dtype t, double v);
float gir_f8_to_f32(gir_dtype t, uint8_t code);

/* The layout of the f8 formats other than float8e8m0 (whose code is just a
 * biased exponent: 2^(code-127), 0xff NaN), for code generators that convert
 * with bit operations. Exponent field e > 0: ±2^(e-bias) × 1.m; e == 0:
 * ±2^(1-bias) × 0.m. */
typedef struct gir_f8_format {
  int ebits, mbits, bias;
  int sign_shift;         /* the sign bit: 7, or 3 for float4e2m1 */
  uint32_t max_code;      /* largest finite magnitude code */
  uint32_t overflow_code; /* magnitude code of what lies beyond: inf, NaN, or max_code (saturation) */
  uint32_t nan_code;      /* code of +NaN (the sign bit flipped for -NaN); the FNUZ formats: 0x80, unsigned */
  int has_inf;            /* overflow_code decodes to infinity (float8e5m2) */
  int fnuz;               /* one NaN (0x80) and no -0 */
} gir_f8_format;
/* 0 for types that are not f8 or are float8e8m0. */
int gir_f8_format_of(gir_dtype t, gir_f8_format *f);

/* Rounding of a conversion to float8e8m0 (Cast's round_mode, opset 24+): the
 * cast op's `round` attribute. */
typedef enum gir_e8m0_round { GIR_E8M0_UP, GIR_E8M0_DOWN, GIR_E8M0_NEAREST, GIR_E8M0_ROUND_COUNT } gir_e8m0_round;

#endif
