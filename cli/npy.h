/* npy.h — NumPy .npy and .npz files (format 1.0/2.0, little-endian, C order) for every
 * dtype kiln supports. bfloat16, which NumPy lacks, travels as '<u2' bit patterns. */
#ifndef KILN_NPY_H
#define KILN_NPY_H
#include <stddef.h>
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
/* The .npy bytes of an array, malloc'ed into *out (the caller frees). */
int npy_encode(kiln_dtype dtype, int32_t rank, const int64_t *dims, const void *data, unsigned char **out,
               size_t *size, char *why, size_t whylen);
int npy_write(const char *path, kiln_dtype dtype, int32_t rank, const int64_t *dims, const void *data, char *why,
              size_t whylen);

/* .npz files (npz.c): zip archives of NAME.npy members, as numpy.savez writes
 * them (stored or deflated), read and written with libarchive. */
typedef struct npz_member {
  char *name;           /* the member's name without ".npy" */
  unsigned char *bytes; /* the .npy file (npy_parse it) */
  size_t size;
} npz_member;

typedef struct npz_file {
  npz_member *members;
  int32_t n;
} npz_file;

/* Reads every member (each must be NAME.npy, names distinct; at most 65536
 * members and max_bytes bytes unpacked in all): 0, or -1 with a message. */
int npz_read(const char *path, int64_t max_bytes, npz_file *out, char *why, size_t whylen);
void npz_free(npz_file *f);

/* Writes one .npz of arrays, member i named names[i] + ".npy" (stored, as numpy.savez). */
typedef struct npz_array {
  const char *name;
  kiln_dtype dtype;
  int32_t rank;
  const int64_t *dims;
  const void *data;
} npz_array;
int npz_write(const char *path, const npz_array *arrays, int32_t n, char *why, size_t whylen);

#endif
