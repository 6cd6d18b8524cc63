/* fuzz_testdata.c — libFuzzer target for the test-data reader (importer/
 * tensorfile.c): the bytes of an input_N.pb / output_N.pb file, as `kiln check`
 * and `kiln interpret` read them. A TensorProto goes through protobuf-c and the
 * importer's checked tensor decoding; anything else is tried as a SequenceProto
 * or OptionalProto, whose wire format tensorfile.c walks by hand (nested lists
 * included). Whatever the bytes: a value or a one-line error, never a crash, a
 * sanitizer report or a leak (everything lives in one arena, freed each time). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tensorfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gir_arena *a = gir_arena_new();
  if (!a) abort();
  imp_known_input v;
  gir_err err = {{0}};
  if (imp_read_value_buffer(data, size, "input_0.pb", a, &v, &err) < 0 && (!err.msg[0] || strchr(err.msg, '\n'))) {
    fprintf(stderr, "fuzz_testdata: failed without a proper one-line message: '%s'\n", err.msg);
    abort();
  }
  gir_arena_free(a);
  return 0;
}
