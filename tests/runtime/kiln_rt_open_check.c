/* kiln_rt_open_check.c — opens one bundle with the runtime and says what happened.
 *
 * Usage: kiln_rt_open_check [--memory] [--run] [--threads N] [--max-entry-bytes N] BUNDLE
 *
 * Prints exactly one line, `OK` or `STATUS: message`, then (with --run, after
 * a successful open) fills every input deterministically (float32 element i =
 * (i % 7) * 0.5 - 1, other dtypes zero bytes), runs, and prints one line per
 * output: `output NAME: v0 v1 …` (float32: every value, up to 64). --memory
 * reads the file itself and uses kiln_model_open_memory. Exit status: 0 when
 * everything succeeded, 1 when the runtime reported an error, 2 on bad usage.
 * tests/py/test_runtime_reject.py drives it with hostile bundles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    unsigned char *bigger = realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  fclose(f);
  *size = n;
  return buf;
}

static int run_model(kiln_model *m) {
  for (int32_t i = 0; i < kiln_model_input_count(m); i++) {
    kiln_tensor_info info;
    kiln_model_input_info(m, i, &info);
    unsigned char *data = calloc(1, info.bytes > 0 ? (size_t)info.bytes : 1);
    if (!data) {
      printf("NOMEM: cannot allocate input %s\n", info.name);
      return 1;
    }
    if (info.dtype == KILN_DTYPE_FLOAT32)
      for (int64_t e = 0; e < info.elements; e++) ((float *)data)[e] = (float)(e % 7) * 0.5f - 1.0f;
    kiln_status s = kiln_model_set_input(m, info.name, info.dtype, info.rank, info.dims, data, (size_t)info.bytes);
    free(data);
    if (s != KILN_OK) {
      printf("%s: %s\n", kiln_status_str(s), kiln_model_last_error(m));
      return 1;
    }
  }
  kiln_status s = kiln_model_run(m);
  if (s != KILN_OK) {
    printf("%s: %s\n", kiln_status_str(s), kiln_model_last_error(m));
    return 1;
  }
  for (int32_t o = 0; o < kiln_model_output_count(m); o++) {
    const void *data;
    kiln_tensor_info info;
    s = kiln_model_output(m, o, &data, &info);
    if (s != KILN_OK) {
      printf("%s: %s\n", kiln_status_str(s), kiln_model_last_error(m));
      return 1;
    }
    printf("output %s:", info.name);
    if (info.dtype == KILN_DTYPE_FLOAT32)
      for (int64_t e = 0; e < info.elements && e < 64; e++) printf(" %g", (double)((const float *)data)[e]);
    printf("\n");
  }
  return 0;
}

int main(int argc, char **argv) {
  kiln_options opts;
  kiln_options_init(&opts);
  int memory = 0, run = 0;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--memory") == 0) memory = 1;
    else if (strcmp(argv[i], "--run") == 0) run = 1;
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) opts.threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--max-entry-bytes") == 0 && i + 1 < argc) opts.max_entry_bytes = atoll(argv[++i]);
    else if (argv[i][0] != '-' && !path) path = argv[i];
    else {
      fprintf(stderr, "usage: kiln_rt_open_check [--memory] [--run] [--threads N] [--max-entry-bytes N] BUNDLE\n");
      return 2;
    }
  }
  if (!path) {
    fprintf(stderr, "usage: kiln_rt_open_check [--memory] [--run] [--threads N] [--max-entry-bytes N] BUNDLE\n");
    return 2;
  }
  char err[512];
  kiln_model *m = NULL;
  kiln_status s;
  if (memory) {
    size_t size = 0;
    unsigned char *data = read_file(path, &size);
    if (!data) {
      printf("IO: cannot read %s\n", path);
      return 1;
    }
    s = kiln_model_open_memory(data, size, &opts, &m, err, sizeof err);
    free(data);
  } else {
    s = kiln_model_open(path, &opts, &m, err, sizeof err);
  }
  if (s != KILN_OK) {
    printf("%s: %s\n", kiln_status_str(s), err);
    return 1;
  }
  printf("OK\n");
  int rc = run ? run_model(m) : 0;
  kiln_model_close(m);
  return rc;
}
