/* dtype.h — element types (generated from dtypes.def) and conversions between
 * a type's storage and double/int64, used by constant handling and folding. */
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
/* Bytes per element of first-class types (0 for sub-byte and string types). */
size_t gir_dtype_size(gir_dtype t);
int gir_dtype_first_class(gir_dtype t);
int gir_dtype_is_float(gir_dtype t);
int gir_dtype_is_int(gir_dtype t);     /* signed or unsigned integer */
int gir_dtype_is_signed(gir_dtype t);  /* signed integers and floats */
int gir_dtype_onnx_code(gir_dtype t);
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

#endif
