/* run.c — `kiln run MODEL.kiln`: opens a bundle with the runtime, feeds inputs
 * (inputs.c: .npy files, members of an .npz, or seeded random data in the range the
 * bundle records for an integer input), runs it --repeat times
 * and prints each output's shape, a short summary of its values, the top-5
 * classes of a classifier-like output, and the median latency; --profile prints
 * per-kernel times, the top 20 against the measured peak (profile_report.c);
 * --trace FILE.json (which implies --profile) also writes every timed run's kernel
 * calls as a Chrome trace (trace.c).
 * Outputs can be written as .npy files and/or one .npz. Uses only the runtime's public API
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

static void print_output(kiln_model *m, int32_t index, const kiln_tensor_info *info, const void *data) {
  char shape[160] = "";
  size_t o = 0;
  for (int d = 0; d < info->rank; d++) o += (size_t)snprintf(shape + o, sizeof shape - o, d ? "x%lld" : "%lld", (long long)info->dims[d]);
  if (info->dtype == KILN_DTYPE_STRING) { /* the first few, quoted */
    printf("output %s: string[%s]\n  values:", info->name, info->rank ? shape : "scalar");
    for (int64_t i = 0; i < info->elements && i < 8; i++) {
      const char *s;
      size_t n;
      if (kiln_model_output_string(m, index, i, &s, &n) == KILN_OK) printf(" '%.*s'", (int)(n > 40 ? 40 : n), s);
    }
    printf(info->elements > 8 ? " …\n" : "\n");
    return;
  }
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
  /* a classifier output: floats whose dims are all 1 but one of 10 or more ([N],
   * [1, N], SqueezeNet's [1, 1000, 1, 1]) */
  int64_t n = info->elements;
  int classifier = (info->dtype == KILN_DTYPE_FLOAT32 || info->dtype == KILN_DTYPE_FLOAT16) && n >= 10;
  for (int d = 0; classifier && d < info->rank; d++) classifier = info->dims[d] == 1 || info->dims[d] == n;
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

/* Writes every output: DIR/NAME.npy ('/' in a name becomes '_') and/or one .npz. */
static int write_outputs(kiln_model *m, const char *outdir, const char *npz) {
  char why[1024];
  int n = kiln_model_output_count(m), rc = 0;
  npz_array *arrays = calloc((size_t)n + 1, sizeof *arrays);
  kiln_tensor_info *infos = calloc((size_t)n + 1, sizeof *infos);
  if (!arrays || !infos) {
    fprintf(stderr, "kiln run: out of memory\n");
    rc = 1;
  }
  for (int i = 0; rc == 0 && i < n; i++) {
    const void *data;
    kiln_model_output(m, i, &data, &infos[i]);
    if (infos[i].dtype == KILN_DTYPE_STRING) {
      fprintf(stderr, "kiln run: output '%s' is a string tensor, which .npy / .npz files from kiln do not hold (read it "
                      "with kiln_model_output_string)\n", infos[i].name);
      rc = 1;
      break;
    }
    arrays[i] = (npz_array){infos[i].name, infos[i].dtype, infos[i].rank, infos[i].dims, data};
    if (!outdir) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", outdir, infos[i].name);
    for (char *p = path + strlen(outdir) + 1; *p; p++)
      if (*p == '/') *p = '_';
    if (npy_write(path, infos[i].dtype, infos[i].rank, infos[i].dims, data, why, sizeof why) < 0) {
      fprintf(stderr, "kiln run: %s\n", why);
      rc = 1;
    }
  }
  if (rc == 0 && npz && npz_write(npz, arrays, n, why, sizeof why) < 0) {
    fprintf(stderr, "kiln run: %s\n", why);
    rc = 1;
  }
  free(arrays);
  free(infos);
  return rc;
}

int kiln_cmd_run(int argc, char **argv) {
  cli_args args;
  int r = cli_parse(CLI_CMD_RUN, argc, argv, &args);
  if (r) return r < 0 ? 2 : 0;
  const char *bundle = args.positional, *outdir = args.str[CLI_OPT_OUTPUT_DIR], *npz_out = args.str[CLI_OPT_OUTPUTS];
  int repeat = args.set[CLI_OPT_REPEAT] ? (int)args.num[CLI_OPT_REPEAT] : 10;
  int profile = args.set[CLI_OPT_PROFILE] > 0 || args.set[CLI_OPT_TRACE] > 0; /* --trace implies --profile */
  const char *trace_path = args.str[CLI_OPT_TRACE];
  kiln_options opt;
  kiln_options_init(&opt);
  opt.threads = (int32_t)args.num[CLI_OPT_THREADS];
  opt.profile = profile;
  kiln_model *m = NULL;
  char why[1024] = "";
  kiln_status st = kiln_model_open(bundle, &opt, &m, why, sizeof why);
  if (st != KILN_OK) {
    fprintf(stderr, "kiln run: %s: %s\n", kiln_status_str(st), why);
    return 1;
  }
  if (args.set[CLI_OPT_SPIN_US] && kiln_model_set_spin_us(m, args.num[CLI_OPT_SPIN_US]) != KILN_OK) {
    fprintf(stderr, "kiln run: %s\n", kiln_model_last_error(m));
    kiln_model_close(m);
    return 1;
  }
  int32_t n_in = kiln_model_input_count(m);
  cli_input *ins = calloc((size_t)n_in + 1, sizeof *ins);
  int rc = ins ? 0 : 1;
  if (!ins) fprintf(stderr, "kiln run: out of memory\n");
  if (rc == 0 && cli_set_inputs(m, &args, ins, stdout) < 0) rc = 1;
  else cli_inputs_free(ins, n_in);
  free(ins);
  double *times = calloc((size_t)repeat + 1, sizeof *times);
  if (rc == 0 && !times) {
    fprintf(stderr, "kiln run: out of memory\n");
    rc = 1;
  }
  if (rc == 0 && repeat > 1 && (st = kiln_model_run(m)) != KILN_OK) { /* warm-up, when timing several runs */
    fprintf(stderr, "kiln run: %s\n", kiln_model_last_error(m));
    rc = 1;
  }
  if (profile) kiln_model_profile_reset(m);
  cli_trace trace = {0};
  if (rc == 0 && trace_path && cli_trace_open(&trace, trace_path) < 0) rc = 1;
  for (int i = 0; i < repeat && rc == 0; i++) {
    int64_t start_ns = trace.f ? cli_trace_now_ns() : 0;
    double t0 = cli_now_ms();
    if (kiln_model_run(m) != KILN_OK) {
      fprintf(stderr, "kiln run: %s\n", kiln_model_last_error(m));
      rc = 1;
    }
    times[i] = cli_now_ms() - t0;
    if (trace.f && cli_trace_add_run(&trace, m, i, start_ns, cli_trace_now_ns()) < 0) rc = 1;
  }
  if (cli_trace_close(&trace) < 0) rc = 1;
  if (rc == 0 && outdir && mkdir(outdir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "kiln run: cannot create '%s': %s\n", outdir, strerror(errno));
    rc = 1;
  }
  if (rc == 0) {
    for (int i = 0; i < kiln_model_output_count(m); i++) {
      const void *data;
      kiln_tensor_info info;
      kiln_model_output(m, i, &data, &info);
      print_output(m, i, &info, data);
    }
    if (outdir || npz_out) rc = write_outputs(m, outdir, npz_out);
  }
  if (rc == 0) {
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
    if (trace_path)
      printf("trace: %s (%d runs, %d kernel calls each)\n", trace_path, repeat, kiln_model_kernel_count(m));
  }
  free(times);
  kiln_model_close(m);
  return rc;
}
