/* inputs.c — the input data of `kiln run` and `kiln bench`, one rule for both:
 * an input gets the .npy of --input NAME=FILE.npy, else the member NAME.npy of
 * --inputs FILE.npz, else seeded random data (seeded_inputs.c). Random integers
 * stay in the range the bundle records for the input (kiln_model_input_range:
 * the rows of the table it indexes); an input the compiler found computed into
 * an index gets no invented data at all — the user is asked for a file. Every
 * --input and every .npz member must name an input of the model. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

#define MAX_NPZ_BYTES ((int64_t)16 << 30)

/* The largest value + 1 an integer dtype holds (capped at 2^62); 0 for others. */
static int64_t int_limit(kiln_dtype t) {
  switch (t) {
  case KILN_DTYPE_INT8: return 128;
  case KILN_DTYPE_UINT8: return 256;
  case KILN_DTYPE_INT16: return 32768;
  case KILN_DTYPE_UINT16: return 65536;
  case KILN_DTYPE_INT32: return (int64_t)1 << 31;
  case KILN_DTYPE_UINT32: return (int64_t)1 << 32;
  case KILN_DTYPE_INT64: case KILN_DTYPE_UINT64: return (int64_t)1 << 62;
  case KILN_DTYPE_INT4: return 8;
  case KILN_DTYPE_UINT4: return 16;
  case KILN_DTYPE_INT2: return 2;
  case KILN_DTYPE_UINT2: return 4;
  default: return 0;
  }
}

static int fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line on stderr, "kiln CMD: ..."; returns -1. */
static int fail(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "kiln %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return -1;
}

void cli_inputs_free(cli_input *ins, int32_t n) {
  for (int32_t i = 0; ins && i < n; i++) free(ins[i].arr.data);
}

int cli_invent_input(kiln_model *m, int32_t i, cli_input *in, uint64_t *seed, const char *how, char *why,
                     size_t whylen) {
  kiln_tensor_info info;
  kiln_values kind = KILN_VALUES_ANY;
  int64_t lo = 0, hi = 10;
  if (kiln_model_input_info(m, i, &info) != KILN_OK) {
    snprintf(why, whylen, "the model has no input %d", (int)i);
    return -1;
  }
  kiln_model_input_range(m, i, &kind, &lo, &hi);
  if (kind == KILN_VALUES_GIVEN) {
    snprintf(why, whylen,
             "input '%s' is computed into an index, so no invented values are known to be valid: give its data "
             "with %s", info.name, how);
    return -1;
  }
  int64_t limit = int_limit(info.dtype);
  if (kind == KILN_VALUES_RANGE && limit && hi > limit) hi = limit;
  if (kind == KILN_VALUES_RANGE && lo < 0) lo = 0;
  if (kind == KILN_VALUES_RANGE && hi <= lo && info.elements > 0) {
    snprintf(why, whylen, "input '%s' indexes an empty axis: no value is valid; give its data with %s", info.name, how);
    return -1;
  }
  in->name = info.name;
  in->arr.dtype = info.dtype;
  in->arr.rank = info.rank;
  memcpy(in->arr.dims, info.dims, sizeof in->arr.dims);
  in->arr.bytes = info.bytes;
  in->arr.data = malloc((size_t)(info.bytes ? info.bytes : 1));
  if (!in->arr.data) {
    snprintf(why, whylen, "out of memory for input '%s'", info.name);
    return -1;
  }
  if (kind == KILN_VALUES_RANGE) {
    cli_fill_random_range(info.dtype, in->arr.data, info.elements, lo, hi, seed);
    in->lo = lo, in->hi = hi;
  } else {
    cli_fill_random(info.dtype, in->arr.data, info.elements, seed);
  }
  in->source = NULL;
  in->ranged = kind == KILN_VALUES_RANGE;
  return 0;
}

int cli_set_inputs(kiln_model *m, const cli_args *a, cli_input *ins, FILE *log) {
  const char *cmd = cli_cmd_name(a->cmd);
  const char *files[CLI_MAX_GIVEN];
  int n_files = cli_values(a, CLI_OPT_INPUT, files, CLI_MAX_GIVEN);
  int32_t n = kiln_model_input_count(m);
  char why[1024];
  npz_file npz = {0};
  const char *npz_path = a->str[CLI_OPT_INPUTS];
  memset(ins, 0, sizeof *ins * (size_t)n);
  for (int32_t i = 0; i < n; i++) { /* .npy holds numbers; strings go through .pb test data or the C API */
    kiln_tensor_info info;
    kiln_model_input_info(m, i, &info);
    if (info.dtype == KILN_DTYPE_STRING)
      return fail(cmd, "input '%s' is a string tensor, which kiln %s does not feed (it reads and invents numbers): "
                       "use kiln check MODEL --test-data DIR with .pb files, or kiln_model_set_input_strings",
                  info.name, cmd);
  }
  if (npz_path && npz_read(npz_path, MAX_NPZ_BYTES, &npz, why, sizeof why) < 0)
    return fail(cmd, "--inputs: %s", why);
  int rc = 0;
  /* every name given must be an input */
  for (int k = 0; k < n_files && rc == 0; k++) {
    const char *eq = strchr(files[k], '=');
    char name[256];
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - files[k]) : (int)strlen(files[k]), files[k]);
    if (!eq) rc = fail(cmd, "--input %s: expected NAME=FILE.npy", files[k]);
    else if (kiln_model_input_index(m, name) < 0)
      rc = fail(cmd, "--input %s: the model has no input named '%s'", files[k], name);
  }
  for (int32_t k = 0; k < npz.n && rc == 0; k++)
    if (kiln_model_input_index(m, npz.members[k].name) < 0)
      rc = fail(cmd, "--inputs %s: member '%s.npy' names no input of the model", npz_path, npz.members[k].name);
  uint64_t seed = 42;
  for (int32_t i = 0; i < n && rc == 0; i++) {
    kiln_tensor_info info;
    kiln_model_input_info(m, i, &info);
    cli_input *in = &ins[i];
    in->name = info.name;
    const char *file = NULL;
    size_t nl = strlen(info.name);
    for (int k = 0; k < n_files; k++)
      if (!strncmp(files[k], info.name, nl) && files[k][nl] == '=') file = files[k] + nl + 1;
    const npz_member *mem = NULL;
    for (int32_t k = 0; !file && k < npz.n; k++)
      if (!strcmp(npz.members[k].name, info.name)) mem = &npz.members[k];
    if (file) {
      if (npy_read(file, info.dtype, &in->arr, why, sizeof why) < 0)
        rc = fail(cmd, "input %s: %s", info.name, why);
      in->source = file;
    } else if (mem) {
      char where[4400];
      snprintf(where, sizeof where, "%s:%s.npy", npz_path, mem->name);
      if (npy_parse(mem->bytes, mem->size, where, info.dtype, &in->arr, why, sizeof why) < 0)
        rc = fail(cmd, "input %s: %s", info.name, why);
      in->source = npz_path;
    } else {
      char how[600];
      snprintf(how, sizeof how, "--input %s=FILE.npy or --inputs FILE.npz", info.name);
      if (cli_invent_input(m, i, in, &seed, how, why, sizeof why) < 0) rc = fail(cmd, "%s", why);
    }
    if (rc) break;
    kiln_status st = kiln_model_set_input(m, info.name, in->arr.dtype, in->arr.rank, in->arr.dims, in->arr.data,
                                          (size_t)in->arr.bytes);
    if (st != KILN_OK) rc = fail(cmd, "input %s: %s", info.name, kiln_model_last_error(m));
    else if (log && in->source) fprintf(log, "input %s: %s\n", info.name, in->source);
    else if (log && in->ranged)
      fprintf(log, "input %s: seeded random %s data in [%lld, %lld) (the range the model indexes)\n", info.name,
              kiln_dtype_name(info.dtype), (long long)in->lo, (long long)in->hi);
    else if (log) fprintf(log, "input %s: seeded random %s data\n", info.name, kiln_dtype_name(info.dtype));
  }
  npz_free(&npz);
  if (rc) cli_inputs_free(ins, n);
  return rc;
}

void cli_note_unbound(FILE *f, const char *who, int32_t n, const char *list) {
  if (n <= 0) return;
  fprintf(f, "%s: note: %d input dim%s left open by the model default%s to 1: %s; bind %s with --input-shape NAME:DIMS\n",
          who, n, n == 1 ? "" : "s", n == 1 ? "s" : "", list, n == 1 ? "it" : "them");
}
