/* npy.h — NumPy .npy files (format 1.0/2.0, little-endian, C order) for every
 * dtype kiln supports. bfloat16, which NumPy lacks, travels as '<u2' bit patterns. */
#ifndef KILN_NPY_H
#define KILN_NPY_H
#include <stdint.h>
#include "kiln.h"

typedef struct npy_array {
  kiln_dtype dtype;
  int32_t rank;
  int64_t dims[KILN_MAX_RANK];
  void *data;   /* malloc'ed */
  int64_t bytes;
} npy_array;

/* 0, or -1 with a message in why. 'want' resolves '<u2' to bfloat16 when the
 * model expects bfloat16 (pass KILN_DTYPE_COUNT to accept the file's own). */
int npy_read(const char *path, kiln_dtype want, npy_array *out, char *why, size_t whylen);
/* The same from size bytes in memory; path names them in messages. */
int npy_parse(const unsigned char *buf, size_t size, const char *path, kiln_dtype want, npy_array *out, char *why,
              size_t whylen);
int npy_write(const char *path, kiln_dtype dtype, int32_t rank, const int64_t *dims, const void *data, char *why,
              size_t whylen);

#endif
