/* status.c — the small shared pieces: status and dtype tables, the error
 * record every step writes into, aligned allocation and overflow-checked
 * arithmetic. All sizes in the runtime are int64_t and every product or sum of
 * sizes that comes from a bundle goes through krt_mul_i64 / krt_add_i64, so a
 * hostile manifest cannot wrap an offset around. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "krt.h"

static const char *const status_names[KILN_STATUS_COUNT] = {
    [KILN_OK] = "OK",
    [KILN_ERR_IO] = "IO",
    [KILN_ERR_FORMAT] = "FORMAT",
    [KILN_ERR_CHECKSUM] = "CHECKSUM",
    [KILN_ERR_VERSION] = "VERSION",
    [KILN_ERR_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [KILN_ERR_NAME] = "NAME",
    [KILN_ERR_DTYPE] = "DTYPE",
    [KILN_ERR_SHAPE] = "SHAPE",
    [KILN_ERR_NOMEM] = "NOMEM",
    [KILN_ERR_LOAD] = "LOAD",
    [KILN_ERR_RUN] = "RUN",
};

const char *kiln_status_str(kiln_status status) {
  if ((int)status < 0 || status >= KILN_STATUS_COUNT) return "UNKNOWN";
  return status_names[status];
}

static const struct {
  const char *name;
  size_t size;
} dtypes[KILN_DTYPE_COUNT] = {
    [KILN_DTYPE_FLOAT32] = {"float32", 4}, [KILN_DTYPE_FLOAT16] = {"float16", 2},
    [KILN_DTYPE_BFLOAT16] = {"bfloat16", 2}, [KILN_DTYPE_FLOAT64] = {"float64", 8},
    [KILN_DTYPE_INT8] = {"int8", 1},         [KILN_DTYPE_INT16] = {"int16", 2},
    [KILN_DTYPE_INT32] = {"int32", 4},       [KILN_DTYPE_INT64] = {"int64", 8},
    [KILN_DTYPE_UINT8] = {"uint8", 1},       [KILN_DTYPE_UINT16] = {"uint16", 2},
    [KILN_DTYPE_UINT32] = {"uint32", 4},     [KILN_DTYPE_UINT64] = {"uint64", 8},
    [KILN_DTYPE_BOOL] = {"bool", 1},
    [KILN_DTYPE_FLOAT8E4M3FN] = {"float8e4m3fn", 1}, [KILN_DTYPE_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1},
    [KILN_DTYPE_FLOAT8E5M2] = {"float8e5m2", 1},     [KILN_DTYPE_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1},
    [KILN_DTYPE_UINT4] = {"uint4", 1},               [KILN_DTYPE_INT4] = {"int4", 1},
    [KILN_DTYPE_FLOAT4E2M1] = {"float4e2m1", 1},     [KILN_DTYPE_FLOAT8E8M0] = {"float8e8m0", 1},
    [KILN_DTYPE_UINT2] = {"uint2", 1},               [KILN_DTYPE_INT2] = {"int2", 1},
    [KILN_DTYPE_STRING] = {"string", 0},
};

const char *kiln_dtype_name(kiln_dtype dtype) {
  if ((int)dtype < 0 || dtype >= KILN_DTYPE_COUNT) return "invalid";
  return dtypes[dtype].name;
}

size_t kiln_dtype_size(kiln_dtype dtype) {
  if ((int)dtype < 0 || dtype >= KILN_DTYPE_COUNT) return 0;
  return dtypes[dtype].size;
}

kiln_status kiln_dtype_from_name(const char *name, kiln_dtype *out) {
  if (!name || !out) return KILN_ERR_INVALID_ARGUMENT;
  for (int i = 0; i < KILN_DTYPE_COUNT; i++) {
    if (strcmp(name, dtypes[i].name) == 0) {
      *out = (kiln_dtype)i;
      return KILN_OK;
    }
  }
  return KILN_ERR_DTYPE;
}

void kiln_options_init(kiln_options *options) {
  if (options) memset(options, 0, sizeof *options);
}

kiln_status krt_fail(krt_error *err, kiln_status status, const char *fmt, ...) {
  if (err->status != KILN_OK) return err->status;
  err->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  /* names from the bundle are quoted as they are: the message stays one line */
  for (char *c = err->msg; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  return status;
}

void *krt_aligned_alloc(size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = 1;
  if (posix_memalign(&p, KRT_ALIGN, bytes) != 0) return NULL;
  return p;
}

uint64_t krt_round_up(uint64_t bytes) {
  if (bytes > UINT64_MAX - (KRT_ALIGN - 1)) return 0;
  return (bytes + KRT_ALIGN - 1) / KRT_ALIGN * KRT_ALIGN;
}

int krt_mul_i64(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return 0;
  if (a != 0 && b > INT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}

int krt_add_i64(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return 0;
  if (b > INT64_MAX - a) return 0;
  *out = a + b;
  return 1;
}

uint32_t krt_crc32(const unsigned char *data, size_t size) {
  /* zlib's crc32 takes a uInt length: feed it in chunks. */
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    uInt n = size > (1u << 30) ? (1u << 30) : (uInt)size;
    crc = crc32(crc, data, n);
    data += n;
    size -= n;
  }
  return (uint32_t)crc;
}

kiln_status krt_strdup(const char *s, char **out, krt_error *err) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (!p) return krt_fail(err, KILN_ERR_NOMEM, "out of memory copying a string of %zu bytes", n);
  memcpy(p, s, n);
  *out = p;
  return KILN_OK;
}
