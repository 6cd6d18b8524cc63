/* seeded_inputs.c — the seeded random input data of `kiln bench` (and the same
 * generator as `kiln run`'s, so both feed a model the same numbers): splitmix64,
 * seed 42, drawn input after input in the model's order; floats uniform in [-1, 1),
 * integers in [0, 10) (int4/int2: [0, their max]) or in the range the caller gives
 * (the rows of the table an index input selects), bools fair coins. Also reads any
 * element back as a double. */
#include "cli.h"
#include "dtype.h"

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void cli_fill_random(kiln_dtype t, void *d, int64_t n, uint64_t *seed) {
  for (int64_t i = 0; i < n; i++) {
    double u = (double)(rng_next(seed) >> 11) / 9007199254740992.0; /* [0, 1) */
    switch (t) {
    case KILN_DTYPE_FLOAT32: ((float *)d)[i] = (float)(2 * u - 1); break;
    case KILN_DTYPE_FLOAT64: ((double *)d)[i] = 2 * u - 1; break;
    case KILN_DTYPE_FLOAT16: ((uint16_t *)d)[i] = gir_f32_to_f16((float)(2 * u - 1)); break;
    case KILN_DTYPE_BFLOAT16: ((uint16_t *)d)[i] = gir_f32_to_bf16((float)(2 * u - 1)); break;
    case KILN_DTYPE_BOOL: ((uint8_t *)d)[i] = u < 0.5; break;
    case KILN_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)(u * 10); break;
    case KILN_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)(u * 10); break;
    case KILN_DTYPE_INT16: ((int16_t *)d)[i] = (int16_t)(u * 10); break;
    case KILN_DTYPE_UINT16: ((uint16_t *)d)[i] = (uint16_t)(u * 10); break;
    case KILN_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)(u * 10); break;
    case KILN_DTYPE_UINT32: ((uint32_t *)d)[i] = (uint32_t)(u * 10); break;
    case KILN_DTYPE_INT64: ((int64_t *)d)[i] = (int64_t)(u * 10); break;
    case KILN_DTYPE_UINT64: ((uint64_t *)d)[i] = (uint64_t)(u * 10); break;
    default: { /* float8/float4 in [-1, 1), int4/int2 in their range: through the graph's conversions */
      gir_dtype g = gir_dtype_from_name(kiln_dtype_name(t));
      if (g == GIR_DTYPE_NONE) break;
      if (gir_dtype_is_float(g)) gir_store_f64(g, d, i, 2 * u - 1);
      else gir_store_i64(g, d, i, (int64_t)(u * (1 << (gir_dtype_bits(g) - gir_dtype_is_signed(g)))));
      break;
    }
    }
  }
}

void cli_fill_random_range(kiln_dtype t, void *d, int64_t n, int64_t lo, int64_t hi, uint64_t *seed) {
  gir_dtype g = gir_dtype_from_name(kiln_dtype_name(t));
  double width = (double)hi - (double)lo;
  for (int64_t i = 0; i < n; i++) {
    double u = (double)(rng_next(seed) >> 11) / 9007199254740992.0; /* [0, 1) */
    int64_t v = lo + (int64_t)(u * width);
    if (v >= hi) v = hi - 1; /* rounding at the top of a wide range */
    if (g != GIR_DTYPE_NONE) gir_store_i64(g, d, i, v);
  }
}

double cli_value_at(kiln_dtype t, const void *d, int64_t i) {
  switch (t) {
  case KILN_DTYPE_FLOAT32: return ((const float *)d)[i];
  case KILN_DTYPE_FLOAT64: return ((const double *)d)[i];
  case KILN_DTYPE_INT8: return ((const int8_t *)d)[i];
  case KILN_DTYPE_INT16: return ((const int16_t *)d)[i];
  case KILN_DTYPE_INT32: return ((const int32_t *)d)[i];
  case KILN_DTYPE_INT64: return (double)((const int64_t *)d)[i];
  case KILN_DTYPE_UINT8: case KILN_DTYPE_BOOL: return ((const uint8_t *)d)[i];
  case KILN_DTYPE_UINT16: return ((const uint16_t *)d)[i];
  case KILN_DTYPE_UINT32: return ((const uint32_t *)d)[i];
  case KILN_DTYPE_UINT64: return (double)((const uint64_t *)d)[i];
  case KILN_DTYPE_FLOAT16: return gir_f16_to_f32(((const uint16_t *)d)[i]);
  case KILN_DTYPE_BFLOAT16: return gir_bf16_to_f32(((const uint16_t *)d)[i]);
  default: {
    gir_dtype g = gir_dtype_from_name(kiln_dtype_name(t));
    return g == GIR_DTYPE_NONE ? 0 : gir_load_f64(g, d, i);
  }
  }
}
