/* run.c — `kiln run MODEL.kiln`: opens a bundle with the runtime, feeds inputs
 * (.npy files, or seeded random data when none are given), runs it --repeat times
 * and prints each output's shape, a short summary of its values, the top-5
 * classes of a classifier-like output, and the median latency; --profile prints
 * per-kernel times, the top 20 against the measured peak (profile_report.c).
 * Outputs can be written as .npy files. Uses only the runtime's public API
 * (runtime/kiln.h), exactly as an application would. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include "cli.h"
#include "dtype.h"
#include "kiln.h"
#include "npy.h"

static void print_output(const kiln_tensor_info *info, const void *data) {
  char shape[160] = "";
  size_t o = 0;
  for (int d = 0; d < info->rank; d++) o += (size_t)snprintf(shape + o, sizeof shape - o, d ? "x%lld" : "%lld", (long long)info->dims[d]);
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  for (int64_t i = 0; i < info->elements; i++) {
    double v = cli_value_at(info->dtype, data, i);
    if (v < mn) mn = v;
    if (v > mx) mx = v;
    sum += v;
  }
  printf("output %s: %s[%s]", info->name, kiln_dtype_name(info->dtype), info->rank ? shape : "scalar");
  if (info->elements)
    printf(" min %.6g max %.6g mean %.6g", mn, mx, sum / (double)info->elements);
  printf("\n  values:");
  for (int64_t i = 0; i < info->elements && i < 8; i++) printf(" %.6g", cli_value_at(info->dtype, data, i));
  printf(info->elements > 8 ? " …\n" : "\n");
  /* a classifier output: [1, N] or [N] floats with N >= 10 */
  int64_t n = info->elements;
  int classifier = (info->dtype == KILN_DTYPE_FLOAT32 || info->dtype == KILN_DTYPE_FLOAT16) && n >= 10 &&
                   n == info->dims[info->rank - 1];
  if (classifier) {
    int64_t top[5];
    int k = 0;
    for (; k < 5 && k < n; k++) {
      int64_t best = -1;
      for (int64_t i = 0; i < n; i++) {
        int taken = 0;
        for (int j = 0; j < k; j++) taken |= top[j] == i;
        if (!taken && (best < 0 || cli_value_at(info->dtype, data, i) > cli_value_at(info->dtype, data, best))) best = i;
      }
      top[k] = best;
    }
    printf("  top-5:");
    for (int j = 0; j < k; j++) printf(" class %lld (%.4g)", (long long)top[j], cli_value_at(info->dtype, data, top[j]));
    printf("\n");
  }
}

int kiln_cmd_run(int argc, char **argv) {
  const char *bundle = NULL, *outdir = NULL;
  const char *inputs[64];
  int n_inputs = 0, repeat = 10, profile = 0, threads = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--input") && i + 1 < argc && n_inputs < 64) inputs[n_inputs++] = argv[++i];
    else if (!strcmp(argv[i], "--output-dir") && i + 1 < argc) outdir = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--profile")) profile = 1;
    else if (argv[i][0] != '-' && !bundle) bundle = argv[i];
    else {
      fprintf(stderr, "kiln run: unexpected argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!bundle || repeat < 1 || threads < 0) {
    fprintf(stderr, "usage: kiln run MODEL.kiln [--input NAME=FILE.npy]... [--output-dir DIR] [--threads N] "
                    "[--repeat N] [--profile]\n");
    return 2;
  }
  kiln_options opt;
  kiln_options_init(&opt);
  opt.threads = threads;
  opt.profile = profile;
  kiln_model *m = NULL;
  char why[1024] = "";
  kiln_status st = kiln_model_open(bundle, &opt, &m, why, sizeof why);
  if (st != KILN_OK) {
    fprintf(stderr, "kiln run: %s: %s\n", kiln_status_str(st), why);
    return 1;
  }
  int rc = 0;
  uint64_t seed = 42;
  for (int i = 0; i < kiln_model_input_count(m) && rc == 0; i++) {
    kiln_tensor_info info;
    kiln_model_input_info(m, i, &info);
    const char *file = NULL;
    size_t nl = strlen(info.name);
    for (int k = 0; k < n_inputs; k++)
      if (!strncmp(inputs[k], info.name, nl) && inputs[k][nl] == '=') file = inputs[k] + nl + 1;
    npy_array arr = {0};
    if (file) {
      if (npy_read(file, info.dtype, &arr, why, sizeof why) < 0) {
        fprintf(stderr, "kiln run: input %s: %s\n", info.name, why);
        rc = 1;
        break;
      }
    } else {
      arr.dtype = info.dtype;
      arr.rank = info.rank;
      memcpy(arr.dims, info.dims, sizeof arr.dims);
      arr.bytes = info.bytes;
      arr.data = malloc((size_t)(info.bytes ? info.bytes : 1));
      cli_fill_random(info.dtype, arr.data, info.elements, &seed);
      printf("input %s: seeded random %s data\n", info.name, kiln_dtype_name(info.dtype));
    }
    st = kiln_model_set_input(m, info.name, arr.dtype, arr.rank, arr.dims, arr.data, (size_t)arr.bytes);
    free(arr.data);
    if (st != KILN_OK) {
      fprintf(stderr, "kiln run: input %s: %s\n", info.name, kiln_model_last_error(m));
      rc = 1;
    }
  }
  for (int k = 0; k < n_inputs && rc == 0; k++) { /* names that match no input are mistakes */
    const char *eq = strchr(inputs[k], '=');
    char name[256];
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - inputs[k]) : (int)strlen(inputs[k]), inputs[k]);
    if (!eq || kiln_model_input_index(m, name) < 0) {
      fprintf(stderr, "kiln run: --input %s: the model has no input named '%s'\n", inputs[k], name);
      rc = 1;
    }
  }
  double *times = calloc((size_t)repeat + 1, sizeof *times);
  if (rc == 0 && repeat > 1 && (st = kiln_model_run(m)) != KILN_OK) { /* warm-up, when timing several runs */
    fprintf(stderr, "kiln run: %s\n", kiln_model_last_error(m));
    rc = 1;
  }
  if (profile) kiln_model_profile_reset(m);
  for (int r = 0; r < repeat && rc == 0; r++) {
    double t0 = cli_now_ms();
    if (kiln_model_run(m) != KILN_OK) {
      fprintf(stderr, "kiln run: %s\n", kiln_model_last_error(m));
      rc = 1;
    }
    times[r] = cli_now_ms() - t0;
  }
  if (rc == 0 && outdir && mkdir(outdir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "kiln run: cannot create '%s': %s\n", outdir, strerror(errno));
    rc = 1;
  }
  if (rc == 0) {
    for (int i = 0; i < kiln_model_output_count(m); i++) {
      const void *data;
      kiln_tensor_info info;
      kiln_model_output(m, i, &data, &info);
      print_output(&info, data);
      if (outdir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.npy", outdir, info.name);
        for (char *p = path + strlen(outdir) + 1; *p; p++)
          if (*p == '/') *p = '_';
        if (npy_write(path, info.dtype, info.rank, info.dims, data, why, sizeof why) < 0) {
          fprintf(stderr, "kiln run: %s\n", why);
          rc = 1;
        }
      }
    }
    qsort(times, (size_t)repeat, sizeof *times, cli_cmp_double);
    printf("latency: median %.3f ms, min %.3f ms over %d runs, %d threads\n", times[repeat / 2], times[0], repeat,
           kiln_model_threads(m));
    if (profile) { /* per-kernel report against the measured peak (profile_report.c) */
      const kiln_kernel_profile *pr;
      int32_t n;
      kiln_model_profile(m, &pr, &n);
      cli_peak peak;
      cli_measure_peak(&peak);
      cli_profile_summary sum;
      if (cli_profile_summarize(pr, n, &peak, kiln_model_threads(m), &sum) == 0) cli_profile_print(stdout, &sum, 20);
      cli_profile_free(&sum);
    }
  }
  free(times);
  kiln_model_close(m);
  return rc;
}
