/* fuzz_bundle.c — libFuzzer target for the runtime's bundle parsers: the tar
 * reader, manifest.json and plan.json. The first byte says what the rest is:
 *
 *   0: a whole bundle, read as kiln_model_open would up to the library: the
 *      archive (entry names, kinds, sizes), then the manifest (fields, shapes,
 *      the entry table with each entry's size and CRC32);
 *   1: a plan.json, checked against the manifest of a real bundle read once at
 *      start-up (the file $KILN_FUZZ_BUNDLE names). Inside an archive a mutated
 *      plan would fail its CRC32 every time, so this is how the plan parser's
 *      own checks (kernel table, argument kinds, offsets and sizes against the
 *      arena and params.bin, overflow) get fuzzed.
 *
 * Nothing is dlopened: the library entry is only ever checksummed. Whatever the
 * bytes, each step must return KILN_OK or an error with a one-line message, and
 * never crash, trip a sanitizer or leak (the model and the archive are freed on
 * every path). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "krt.h"

#define MAX_ENTRY ((int64_t)64 << 20)

static krt_archive seed; /* the reference bundle for mode 1 (read once) */
static int have_seed;

static void check_message(kiln_status s, const krt_error *err, const char *step) {
  if (s == KILN_OK) return;
  if (!err->msg[0] || strchr(err->msg, '\n')) {
    fprintf(stderr, "fuzz_bundle: %s failed without a proper one-line message: '%s'\n", step, err->msg);
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *path = getenv("KILN_FUZZ_BUNDLE");
  if (!path) return 0;
  krt_error err = {KILN_OK, ""};
  if (krt_archive_read_file(path, MAX_ENTRY, &seed, &err) != KILN_OK) {
    fprintf(stderr, "fuzz_bundle: cannot read the reference bundle %s: %s\n", path, err.msg);
    exit(2);
  }
  have_seed = 1;
  return 0;
}

static void whole_bundle(const uint8_t *data, size_t size) {
  krt_error err = {KILN_OK, ""};
  krt_archive archive;
  kiln_status s = krt_archive_read_memory(data, size, MAX_ENTRY, &archive, &err);
  check_message(s, &err, "reading the archive");
  if (s == KILN_OK) {
    kiln_model *m = calloc(1, sizeof *m);
    if (!m) abort();
    s = krt_manifest_load(m, &archive, &err);
    check_message(s, &err, "the manifest");
    kiln_model_close(m);
  }
  krt_archive_free(&archive);
}

static void plan_only(const uint8_t *data, size_t size) {
  if (!have_seed) return;
  krt_error err = {KILN_OK, ""};
  kiln_model *m = calloc(1, sizeof *m);
  if (!m) abort();
  if (krt_manifest_load(m, &seed, &err) != KILN_OK) {
    fprintf(stderr, "fuzz_bundle: the reference bundle's manifest: %s\n", err.msg);
    abort();
  }
  m->params_size = krt_archive_find(&seed, "params.bin")->size;
  krt_entry plan = {.name = "plan.json", .data = malloc(size + 1), .size = size};
  if (!plan.data) abort();
  if (size) memcpy(plan.data, data, size);
  check_message(krt_plan_load(m, &plan, &err), &err, "the plan");
  free(plan.data);
  kiln_model_close(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1) plan_only(data + 1, size - 1);
  else whole_bundle(data + 1, size - 1);
  return 0;
}
