/* bench_measure.c — the measuring half of `kiln bench`, in one place for the CLI
 * (bench.c) and the Python package (python/: kiln.bench): warm-up runs, timed runs
 * of one open model in batches (alternating with a rival runtime's batches when the
 * caller has one: bench.c's ONNX Runtime worker), the latency statistics, per-kernel
 * medians over separate profiled runs (so the timed runs carry no profiling
 * overhead) against the measured peak, and the report as the one JSON object
 * `kiln bench --json` prints. What the CLI adds around it — compiling, the inputs
 * from files, the worker, comparing outputs, the human report — stays in bench.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cJSON.h>
#include "cli.h"

enum { SETTLE_NS = 5000000 };

/* A pause before each batch: the other runtime's idle workers spin for a while after
 * its last run (ours for 0.2 ms, ONNX Runtime's longer) and must not compete with
 * this batch's first runs. */
static void settle(void) {
  struct timespec ts = {0, SETTLE_NS};
  nanosleep(&ts, NULL);
}

cli_latency cli_latency_of(double *v, int n) {
  cli_latency s = {0};
  if (n <= 0) return s;
  qsort(v, (size_t)n, sizeof *v, cli_cmp_double);
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  int r = (int)ceil(0.9 * n); /* nearest rank */
  s.p90 = v[r > 0 ? r - 1 : 0];
  s.min = v[0];
  for (int i = 0; i < n; i++) s.mean += v[i] / n;
  return s;
}

void cli_bench_measurement_free(cli_bench_measurement *r) { cli_profile_free(&r->profile); }

static int run_failed(kiln_model *m, char *why, size_t whylen) {
  snprintf(why, whylen, "%s", kiln_model_last_error(m));
  return -1;
}

/* The timed runs: kiln's and the rival's samples, in alternating batches. */
static int timed_runs(kiln_model *m, int repeat, int warmup, const cli_bench_rival *rival, double *kiln_ms,
                      double *rival_ms, char *why, size_t whylen) {
  for (int i = 0; i < warmup; i++)
    if (kiln_model_run(m) != KILN_OK) return run_failed(m, why, whylen);
  if (rival && warmup > 0 && rival->run(rival->ctx, warmup, rival_ms) < 0) return -1;
  for (int done = 0; done < repeat;) {
    int k = repeat - done < CLI_BENCH_BATCH ? repeat - done : CLI_BENCH_BATCH;
    if (rival) settle();
    for (int i = 0; i < k; i++) {
      double t0 = cli_now_ms();
      if (kiln_model_run(m) != KILN_OK) return run_failed(m, why, whylen);
      kiln_ms[done + i] = cli_now_ms() - t0;
    }
    if (rival) settle();
    if (rival && rival->run(rival->ctx, k, rival_ms + done) < 0) return -1;
    done += k;
  }
  return 0;
}

/* Per-kernel profile, in runs of its own; each kernel's median over the runs, so
 * that one run stalled by another process does not count five times. Warm runs
 * first: after the rival's last batch the workers resume from sleep, and on a VM a
 * thread runs slow for some milliseconds after that — five profiled runs of a
 * sub-millisecond model would time that, not the kernels (a 0.29 ms conv read
 * 0.96 ms). */
enum { PROFILE_WARM_MS = 20, PROFILE_WARM_MAX_RUNS = 1000 };
static int profiled_runs(kiln_model *m, int runs, const cli_peak *peak, cli_bench_measurement *out, char *why,
                         size_t whylen) {
  const kiln_kernel_profile *pr;
  int32_t n_k = 0;
  kiln_model_profile(m, &pr, &n_k);
  for (int k = 0; k < n_k; k++) out->flops += pr[k].flops;
  kiln_kernel_profile *prof = calloc((size_t)n_k + 1, sizeof *prof);
  double *ns = calloc(((size_t)n_k + 1) * ((size_t)runs + 1), sizeof *ns); /* [kernel][run] */
  int rc = 0;
  if (!prof || !ns) rc = -1, snprintf(why, whylen, "out of memory");
  double t0 = cli_now_ms();
  for (int r = 0; runs > 0 && rc == 0 && r < PROFILE_WARM_MAX_RUNS && cli_now_ms() - t0 < PROFILE_WARM_MS; r++)
    if (kiln_model_run(m) != KILN_OK) rc = run_failed(m, why, whylen);
  if (rc == 0) kiln_model_set_profile(m, 1);
  for (int r = 0; r < runs && rc == 0; r++) {
    kiln_model_profile_reset(m);
    if (kiln_model_run(m) != KILN_OK) {
      rc = run_failed(m, why, whylen);
      break;
    }
    kiln_model_profile(m, &pr, &n_k);
    for (int k = 0; k < n_k; k++) ns[(size_t)k * runs + r] = (double)pr[k].total_ns;
  }
  if (prof && ns) kiln_model_set_profile(m, 0);
  for (int k = 0; k < n_k && runs > 0 && rc == 0; k++) {
    cli_latency s = cli_latency_of(ns + (size_t)k * runs, runs);
    prof[k] = pr[k];
    prof[k].calls = runs;
    prof[k].total_ns = (int64_t)(s.median * runs);
  }
  /* no kernels at all with 0 profiled runs */
  if (rc == 0 && cli_profile_summarize(prof, runs > 0 ? n_k : 0, peak, out->threads, &out->profile) < 0)
    rc = -1, snprintf(why, whylen, "out of memory");
  free(prof);
  free(ns);
  return rc;
}

int cli_bench_measure(kiln_model *m, int repeat, int warmup, int profile_runs, const cli_peak *peak,
                      const cli_bench_rival *rival, cli_bench_measurement *out, char *why, size_t whylen) {
  memset(out, 0, sizeof *out);
  why[0] = 0;
  out->threads = kiln_model_threads(m);
  size_t n = (size_t)(repeat > warmup ? repeat : warmup) + 1;
  double *kiln_ms = calloc(n, sizeof *kiln_ms), *rival_ms = calloc(n, sizeof *rival_ms);
  int rc = 0;
  if (!kiln_ms || !rival_ms) rc = -1, snprintf(why, whylen, "out of memory");
  if (rc == 0) rc = timed_runs(m, repeat, warmup, rival, kiln_ms, rival_ms, why, whylen);
  if (rc == 0) {
    out->kiln = cli_latency_of(kiln_ms, repeat);
    if (rival) out->rival = cli_latency_of(rival_ms, repeat);
    rc = profiled_runs(m, profile_runs, peak, out, why, whylen);
  }
  free(kiln_ms);
  free(rival_ms);
  return rc;
}

static cJSON *num_or_null(double v, int present) { return present ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

char *cli_bench_json(const cli_bench_report *r) {
  const cli_bench_measurement *me = r->measured;
  const cli_latency *ks = &me->kiln, *os = r->ort_version ? &me->rival : NULL;
  const cli_profile_summary *sum = &me->profile;
  int ort = os != NULL, is_onnx = r->is_onnx;
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddStringToObject(j, "model", r->model);
  cJSON_AddStringToObject(j, "format", is_onnx ? "onnx" : "kiln");
  cJSON_AddItemToObject(j, "opt_level", num_or_null(r->opt_level, is_onnx));
  cJSON_AddItemToObject(j, "compile_s", num_or_null(r->compile_s, is_onnx));
  /* groups whose conv / matmul / pooling no template scheduled (null for a .kiln input) */
  cJSON_AddItemToObject(j, "generic_groups", num_or_null(r->generic_groups, is_onnx));
  cJSON_AddNumberToObject(j, "threads", me->threads);
  cJSON_AddNumberToObject(j, "repeat", r->repeat);
  cJSON_AddNumberToObject(j, "warmup", r->warmup);
  cJSON_AddNumberToObject(j, "batch", CLI_BENCH_BATCH);
  cJSON_AddNumberToObject(j, "kiln_ms_median", ks->median);
  cJSON_AddNumberToObject(j, "kiln_ms_p90", ks->p90);
  cJSON_AddNumberToObject(j, "kiln_ms_min", ks->min);
  cJSON_AddNumberToObject(j, "kiln_ms_mean", ks->mean);
  cJSON_AddItemToObject(j, "ort_ms_median", num_or_null(ort ? os->median : 0, ort));
  cJSON_AddItemToObject(j, "ort_ms_p90", num_or_null(ort ? os->p90 : 0, ort));
  cJSON_AddItemToObject(j, "ort_ms_min", num_or_null(ort ? os->min : 0, ort));
  cJSON_AddItemToObject(j, "ort_ms_mean", num_or_null(ort ? os->mean : 0, ort));
  cJSON_AddItemToObject(j, "ort_version", ort ? cJSON_CreateString(r->ort_version) : cJSON_CreateNull());
  int has_ratio = ort && os->median > 0;
  cJSON_AddItemToObject(j, "ratio", num_or_null(has_ratio ? ks->median / os->median : 0, has_ratio));
  double worst = 0;
  int all_compared = 1;
  cJSON *outs = cJSON_CreateArray();
  for (int i = 0; ort && i < r->n_outputs; i++) {
    const cli_bench_output *c = &r->outputs[i];
    cJSON *e = cJSON_CreateObject();
    int ok = !isnan(c->max_abs_diff);
    cJSON_AddStringToObject(e, "name", c->name);
    cJSON_AddItemToObject(e, "max_abs_diff", num_or_null(c->max_abs_diff, ok)); /* inf prints as null */
    cJSON_AddBoolToObject(e, "within_tolerance", c->within);
    if (c->note[0]) cJSON_AddStringToObject(e, "note", c->note);
    cJSON_AddItemToArray(outs, e);
    if (!ok) all_compared = 0;
    else if (c->max_abs_diff > worst) worst = c->max_abs_diff;
  }
  cJSON_AddItemToObject(j, "max_abs_diff", num_or_null(worst, ort && all_compared));
  if (ort) cJSON_AddItemToObject(j, "outputs", outs);
  else {
    cJSON_Delete(outs);
    cJSON_AddNullToObject(j, "outputs");
  }
  cJSON_AddNumberToObject(j, "flops", (double)me->flops);
  cJSON_AddNumberToObject(j, "kiln_gflops", ks->median > 0 ? (double)me->flops / (ks->median * 1e6) : 0);
  cJSON_AddNumberToObject(j, "peak_gflops", sum->peak_gflops);
  cJSON_AddNumberToObject(j, "peak_gflops_per_core", sum->peak.gflops_per_core);
  cJSON_AddStringToObject(j, "peak_isa", sum->peak.isa ? sum->peak.isa : "?");
  cJSON_AddItemToObject(j, "conv_pct_peak", num_or_null(sum->conv_pct_peak, sum->n_conv > 0));
  cJSON_AddItemToObject(j, "matmul_pct_peak", num_or_null(sum->matmul_pct_peak, sum->n_matmul > 0));
  cJSON_AddNumberToObject(j, "profile_runs", r->profile_runs);
  cJSON *ks_arr = cJSON_AddArrayToObject(j, "kernels");
  for (int k = 0; k < sum->n; k++) {
    const cli_kernel_stat *st = &sum->kernels[k];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", st->name);
    cJSON_AddNumberToObject(e, "ms", st->ms);
    cJSON_AddNumberToObject(e, "share", st->share);
    cJSON_AddNumberToObject(e, "flops", (double)st->flops);
    cJSON_AddNumberToObject(e, "gflops", st->gflops);
    cJSON_AddItemToObject(e, "pct_peak", num_or_null(st->pct_peak, st->pct_peak >= 0));
    cJSON_AddItemToArray(ks_arr, e);
  }
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return text;
}
