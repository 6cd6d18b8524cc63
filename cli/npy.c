/* npy.c — reading and writing .npy files (see npy.h). The header is a Python dict
 * literal; we parse exactly the three keys NumPy writes and refuse anything else
 * (big-endian data, Fortran order, object arrays), with sizes overflow-checked.
 * NumPy has no float8/int4 types (ml_dtypes writes them as '<V1', raw bytes):
 * kiln writes their one-byte elements as '|u1' (int4/int2: '|i1', sign-extended)
 * and reads '|u1', '|i1', '<V1' or '|V1' as the type the model expects. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "npy.h"

static const struct {
  const char *descr;
  kiln_dtype t;
} descrs[] = {
    {"<f4", KILN_DTYPE_FLOAT32}, {"<f2", KILN_DTYPE_FLOAT16}, {"<f8", KILN_DTYPE_FLOAT64}, {"|i1", KILN_DTYPE_INT8},
    {"<i2", KILN_DTYPE_INT16},   {"<i4", KILN_DTYPE_INT32},   {"<i8", KILN_DTYPE_INT64},   {"|u1", KILN_DTYPE_UINT8},
    {"<u2", KILN_DTYPE_UINT16},  {"<u4", KILN_DTYPE_UINT32},  {"<u8", KILN_DTYPE_UINT64},  {"|b1", KILN_DTYPE_BOOL},
    {"<V1", KILN_DTYPE_COUNT},   {"|V1", KILN_DTYPE_COUNT}, /* ml_dtypes' one-byte types: as the model says */
};

/* The one-byte types NumPy itself lacks. */
static int byte_coded(kiln_dtype t) { return t >= KILN_DTYPE_FLOAT8E4M3FN && t < KILN_DTYPE_COUNT; }

static const char *descr_of(kiln_dtype t) {
  if ((int)t < 0 || t >= KILN_DTYPE_COUNT) return NULL;
  if (t == KILN_DTYPE_BFLOAT16) return "<u2";
  if (t == KILN_DTYPE_INT4 || t == KILN_DTYPE_INT2) return "|i1";
  if (byte_coded(t)) return "|u1";
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
    if (descrs[i].t == t) return descrs[i].descr;
  return NULL;
}

#define FAIL(...) (snprintf(why, whylen, __VA_ARGS__), oneline(why), -1)

/* Messages quote header text: keep them one line. */
static void oneline(char *s) {
  for (; s && *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

int npy_parse(const unsigned char *buf, size_t size, const char *path, kiln_dtype want, npy_array *out, char *why,
              size_t whylen) {
  memset(out, 0, sizeof *out);
  size_t at = 10;
  if (size < 10 || memcmp(buf, "\x93NUMPY", 6)) return FAIL("'%s' is not a .npy file", path);
  uint32_t hlen;
  if (buf[6] == 1) {
    hlen = buf[8] | (uint32_t)buf[9] << 8;
  } else if (buf[6] == 2 || buf[6] == 3) {
    if (size < 12) return FAIL("'%s': truncated header", path);
    hlen = buf[8] | (uint32_t)buf[9] << 8 | (uint32_t)buf[10] << 16 | (uint32_t)buf[11] << 24;
    at = 12;
  } else {
    return FAIL("'%s': unknown .npy version %d", path, buf[6]);
  }
  if (hlen > (1u << 20)) return FAIL("'%s': header too large", path);
  if (size - at < hlen) return FAIL("'%s': truncated header", path);
  char *hdr = calloc(hlen + 1, 1);
  if (!hdr) return FAIL("'%s': out of memory", path);
  memcpy(hdr, buf + at, hlen);
  at += hlen;
  int rc = 0;
  const char *d = strstr(hdr, "'descr':"), *fo = strstr(hdr, "'fortran_order':"), *sh = strstr(hdr, "'shape':");
  if (!d || !fo || !sh) rc = FAIL("'%s': header lacks descr, fortran_order or shape", path);
  else if (strncmp(fo + 16, " False", 6)) rc = FAIL("'%s': Fortran-order arrays are not supported", path);
  else {
    const char *q = strchr(d + 8, '\'');
    out->dtype = KILN_DTYPE_COUNT;
    int v1 = 0;
    for (size_t i = 0; q && i < sizeof descrs / sizeof descrs[0]; i++)
      if (!strncmp(q + 1, descrs[i].descr, 3) && q[4] == '\'') out->dtype = descrs[i].t, v1 = descrs[i].descr[1] == 'V';
    if (out->dtype == KILN_DTYPE_UINT16 && want == KILN_DTYPE_BFLOAT16) out->dtype = KILN_DTYPE_BFLOAT16;
    if ((v1 || out->dtype == KILN_DTYPE_UINT8 || out->dtype == KILN_DTYPE_INT8) && byte_coded(want))
      out->dtype = want;
    if (out->dtype == KILN_DTYPE_COUNT) rc = FAIL("'%s': unsupported dtype in header: %.40s", path, d);
    const char *p = strchr(sh, '(');
    if (rc == 0 && !p) rc = FAIL("'%s': bad shape", path);
    for (p = p ? p + 1 : p; rc == 0 && p && *p && *p != ')';) {
      while (*p == ' ' || *p == ',') p++;
      if (*p == ')') break;
      char *end;
      long long v = strtoll(p, &end, 10);
      if (end == p || v < 0) rc = FAIL("'%s': bad shape", path);
      else if (out->rank == KILN_MAX_RANK) rc = FAIL("'%s': rank above %d", path, KILN_MAX_RANK);
      else out->dims[out->rank++] = v;
      p = end;
    }
  }
  free(hdr);
  if (rc) return rc;
  int64_t n = (int64_t)kiln_dtype_size(out->dtype);
  for (int i = 0; i < out->rank; i++) {
    if (out->dims[i] && n > INT64_MAX / out->dims[i]) return FAIL("'%s': size overflows", path);
    n *= out->dims[i];
  }
  if ((uint64_t)n > size - at) return FAIL("'%s': truncated data (%lld bytes, the header says %lld)", path,
                                           (long long)(size - at), (long long)n);
  out->bytes = n;
  out->data = malloc((size_t)(n ? n : 1));
  if (!out->data) return FAIL("'%s': out of memory", path);
  if (n) memcpy(out->data, buf + at, (size_t)n);
  return 0;
}

int npy_read(const char *path, kiln_dtype want, npy_array *out, char *why, size_t whylen) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return FAIL("cannot open '%s': %s", path, strerror(errno));
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  unsigned char *buf = size >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)size + 1) : NULL;
  int ok = buf && fread(buf, 1, (size_t)size, f) == (size_t)size;
  fclose(f);
  int rc = ok ? npy_parse(buf, (size_t)size, path, want, out, why, whylen) : FAIL("cannot read '%s'", path);
  free(buf);
  return rc;
}

int npy_encode(kiln_dtype dtype, int32_t rank, const int64_t *dims, const void *data, unsigned char **out,
               size_t *size, char *why, size_t whylen) {
  *out = NULL;
  *size = 0;
  const char *descr = descr_of(dtype);
  if (!descr) return FAIL("no .npy type for dtype %d", dtype);
  if (rank < 0 || rank > KILN_MAX_RANK) return FAIL("rank %d is not supported", rank);
  char shape[256] = "", hdr[512];
  size_t o = 0;
  int64_t n = (int64_t)kiln_dtype_size(dtype);
  for (int i = 0; i < rank; i++) {
    o += (size_t)snprintf(shape + o, sizeof shape - o, "%lld,%s", (long long)dims[i], i + 1 < rank ? " " : "");
    if (dims[i] < 0 || (dims[i] && n > INT64_MAX / dims[i])) return FAIL("the array's size overflows");
    n *= dims[i];
  }
  if (rank > 1) shape[o - 1] = 0; /* "(2, 3)" not "(2, 3,)" */
  int len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
  int total = 10 + len + 1, pad = (64 - total % 64) % 64;
  size_t head = (size_t)(total + pad);
  if ((uint64_t)n > SIZE_MAX - head) return FAIL("the array does not fit in memory");
  unsigned char *b = malloc(head + (size_t)n);
  if (!b) return FAIL("out of memory for %lld bytes", (long long)n);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)((len + pad + 1) & 0xff),
                           (unsigned char)((len + pad + 1) >> 8)};
  memcpy(b, pre, 10);
  memcpy(b + 10, hdr, (size_t)len);
  memset(b + 10 + len, ' ', (size_t)pad);
  b[head - 1] = '\n';
  if (n) memcpy(b + head, data, (size_t)n);
  *out = b;
  *size = head + (size_t)n;
  return 0;
}

int npy_write(const char *path, kiln_dtype dtype, int32_t rank, const int64_t *dims, const void *data, char *why,
              size_t whylen) {
  unsigned char *b;
  size_t n;
  if (npy_encode(dtype, rank, dims, data, &b, &n, why, whylen) < 0) return -1;
  FILE *f = fopen(path, "wb");
  if (!f) {
    free(b);
    return FAIL("cannot write '%s': %s", path, strerror(errno));
  }
  int ok = fwrite(b, 1, n, f) == n;
  int e = errno;
  free(b);
  if (fclose(f) != 0 || !ok) return FAIL("cannot write '%s': %s", path, strerror(ok ? errno : e));
  return 0;
}
