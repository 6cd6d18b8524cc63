/* fuzz_npy.c — libFuzzer target for the .npy reader (cli/npy.c) that `kiln run`
 * and `kiln bench` use for input files: the magic, the version, the header's
 * Python-dict text (descr, fortran_order, shape), the size arithmetic and the
 * data length. The first byte picks the element type the model would expect
 * (it decides '<u2' → bfloat16 and the one-byte float8/int4 codings). Whatever
 * the bytes: an array or a one-line error, never a crash, a sanitizer report or
 * a leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  kiln_dtype want = (kiln_dtype)(data[0] % (KILN_DTYPE_COUNT + 1));
  npy_array a;
  char why[256] = "";
  if (npy_parse(data + 1, size - 1, "input.npy", want, &a, why, sizeof why) < 0) {
    if (!why[0] || strchr(why, '\n')) {
      fprintf(stderr, "fuzz_npy: failed without a proper one-line message: '%s'\n", why);
      abort();
    }
    return 0;
  }
  free(a.data);
  return 0;
}
