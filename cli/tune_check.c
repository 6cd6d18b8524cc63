/* tune_check.c — the in-model check that ends `kiln tune`: the tuned schedules timed
 * where they will run, inside whole-model runs on the model's threads.
 *
 * The tuner times each candidate alone, a loop over one kernel on one core (or on N
 * threads), and its closing check repeats that side by side. A model run differs:
 * the previous kernel leaves its output in some core's cache, the weights of fifty
 * other kernels have passed through, the pool splits every parallel loop over both
 * cores. On ResNet-50 schedules confirmed faster alone made the two-thread model run
 * ~6% slower. So this check compiles the model twice, in memory — every workload's
 * candidate applied (tun_apply in TUN_APPLY_CANDIDATES: its latest check's point, or
 * its best that beat the default, whatever the one-core check said), and nothing
 * applied — runs both bundles alternately with the runtime's per-kernel profile on
 * (each timed run right after an untimed run of the same bundle, as a model run
 * after the last one), and sums each workload's kernels' time per run (the kernels
 * the hook noted, by their names in the profile). The medians over the rounds go
 * into the records as one in-model check (a default and a tuned record per workload
 * sharing a `model` id); `kiln compile --records` then applies a point only where
 * that check, the later one, found it faster by TUN_CONFIRM_MARGIN. Finally the
 * bundle `kiln compile --records` makes is timed against the default, whole runs
 * alternating, and both medians printed.
 *
 * Per-kernel attribution assumes a tuned kernel does not change its neighbours' time
 * (the layouts between kernels are the same with and without tuning); the final
 * whole-run comparison shows what the model as a whole gained. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "compile.h"
#include "tuner.h"

typedef struct wl {
  const char *key;
  const tun_record *point;
  int32_t kernels;        /* of this workload in the model */
  double *def, *tuned;    /* seconds per round */
} wl;

typedef struct side {
  tun_apply *ap;
  kiln_model *m;
  int32_t *wl_of;         /* per profile entry: its workload, or -1 */
  int32_t n_entries;
} side;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Compiles the model with ap's hook into memory and opens it on `threads` threads. */
static int open_side(const kiln_compile_options *base, tun_apply *ap, int32_t threads, int profile, kiln_model **m,
                     gir_err *err) {
  kiln_compile_options o = *base;
  o.tuning = tun_apply_hook(ap);
  o.output_path = NULL;
  kiln_compile_result res;
  memset(&res, 0, sizeof res);
  if (kiln_compile(&o, &res, err) < 0) return -1;
  kiln_options ko;
  kiln_options_init(&ko);
  ko.threads = threads;
  ko.profile = profile;
  char why[512] = "";
  kiln_status st = kiln_model_open_memory(res.bundle, res.bundle_bytes, &ko, m, why, sizeof why);
  free(res.bundle);
  if (st != KILN_OK) return gir_errf(err, "the runtime refused the bundle: %s: %s", kiln_status_str(st), why);
  return 0;
}

/* The same seeded inputs on every model (those of `kiln run`). */
static int set_inputs(kiln_model *const *ms, int n_models, gir_err *err) {
  uint64_t seed = 42;
  int32_t n = kiln_model_input_count(ms[0]);
  for (int32_t i = 0; i < n; i++) {
    cli_input in;
    memset(&in, 0, sizeof in);
    char why[512];
    if (cli_invent_input(ms[0], i, &in, &seed, "`kiln run --input`; the check has none", why, sizeof why) < 0)
      return gir_errf(err, "%s", why);
    for (int k = 0; k < n_models; k++) {
      kiln_status st = kiln_model_set_input(ms[k], in.name, in.arr.dtype, in.arr.rank, in.arr.dims, in.arr.data,
                                            (size_t)in.arr.bytes);
      if (st != KILN_OK) {
        gir_errf(err, "input %s: %s", in.name, kiln_model_last_error(ms[k]));
        cli_inputs_free(&in, 1);
        return -1;
      }
    }
    cli_inputs_free(&in, 1);
  }
  return 0;
}

static int run_once(kiln_model *m, double *secs, gir_err *err) {
  double t0 = now_s();
  if (kiln_model_run(m) != KILN_OK) return gir_errf(err, "%s", kiln_model_last_error(m));
  *secs = now_s() - t0;
  return 0;
}

/* A timed run right after an untimed one of the same model: the other model's workers
 * may still be spinning when this one starts, and then the first run's kernels share
 * the cores with them. With reset, the profile holds the timed run alone. */
static int timed_run(kiln_model *m, int reset, double *secs, gir_err *err) {
  if (run_once(m, secs, err) < 0) return -1;
  if (reset) kiln_model_profile_reset(m);
  return run_once(m, secs, err);
}

/* Which workload each of the side's profile entries belongs to; missing counts the
 * noted kernels the plan does not have. */
static int map_entries(side *s, const wl *w, int32_t n_wl, int32_t *missing, gir_err *err) {
  const kiln_kernel_profile *pe;
  int32_t n_pe = 0;
  kiln_model_profile(s->m, &pe, &n_pe);
  s->n_entries = n_pe;
  s->wl_of = calloc((size_t)n_pe + 1, sizeof *s->wl_of);
  if (!s->wl_of) return gir_errf(err, "out of memory");
  for (int32_t j = 0; j < n_pe; j++) s->wl_of[j] = -1;
  int32_t nk;
  const tun_apply_kernel *ks = tun_apply_kernels(s->ap, &nk);
  for (int32_t i = 0; i < nk; i++) {
    int32_t wi = -1, found = 0;
    for (int32_t k = 0; k < n_wl && wi < 0; k++)
      if (!strcmp(w[k].key, ks[i].key)) wi = k;
    for (int32_t j = 0; j < n_pe && wi >= 0; j++)
      if (pe[j].name && !strcmp(pe[j].name, ks[i].kernel)) s->wl_of[j] = wi, found = 1;
    *missing += !found;
  }
  return 0;
}

/* One profiled timed run of side s, each workload's kernels' seconds into its column at round. */
static int profiled_run(side *s, wl *w, int32_t n_wl, int is_default, int32_t round, double *total, gir_err *err) {
  if (timed_run(s->m, 1, total, err) < 0) return -1;
  const kiln_kernel_profile *pe;
  int32_t n_pe = 0;
  kiln_model_profile(s->m, &pe, &n_pe);
  for (int32_t k = 0; k < n_wl; k++) (is_default ? w[k].def : w[k].tuned)[round] = 0;
  for (int32_t j = 0; j < n_pe && j < s->n_entries; j++) {
    if (s->wl_of[j] < 0) continue;
    wl *x = &w[s->wl_of[j]];
    (is_default ? x->def : x->tuned)[round] += 1e-9 * (double)pe[j].total_ns;
  }
  return 0;
}

static const char *label_of(const tun_tasks *ts, const char *key, const char *fallback) {
  for (int i = 0; i < ts->n; i++)
    if (!strcmp(ts->tasks[i].key, key)) return ts->tasks[i].label;
  return fallback;
}

static int write_side(FILE *f, const tun_target *t, const wl *w, int is_default, double cost, int32_t rounds,
                      int32_t threads, int64_t id, gir_err *err) {
  const tun_record *p = w->point;
  double costs[16];
  int32_t nc = rounds < 16 ? rounds : 16;
  for (int32_t i = 0; i < nc; i++) costs[i] = (is_default ? w->def : w->tuned)[i];
  tun_record r = {.key = w->key, .tmpl = p->tmpl, .target = t->name, .cpu = t->cpu, .version = KILN_VERSION,
                  .n_knobs = is_default ? 0 : p->n_knobs, .knob_names = is_default ? NULL : p->knob_names,
                  .knob_values = is_default ? NULL : p->knob_values, .is_default = is_default, .cost = cost,
                  .costs = costs, .n_costs = nc, .error = "", .time = (double)time(NULL), .threads = threads,
                  .model = id, .flops = p->flops};
  memcpy(r.hash, p->hash, sizeof r.hash);
  return tun_record_write(f, &r, err);
}

/* The final comparison: the bundle `kiln compile --records` makes against the default, whole runs alternating. */
static int final_runs(const kiln_compile_options *base, const tun_target *t, const char *records, kiln_model *dflt,
                      int32_t threads, int32_t rounds, gir_err *err) {
  tun_record_set set;
  memset(&set, 0, sizeof set);
  if (tun_records_load(&set, records, t, KILN_VERSION, 0, 0, err) < 0) return -1;
  tun_apply *ap = tun_apply_new(&set, t);
  kiln_model *m = NULL;
  double *a = calloc((size_t)rounds * 2 + 2, sizeof *a), *b = a ? a + rounds + 1 : NULL;
  int rc = -1;
  if (!ap || !a) {
    gir_errf(err, "out of memory");
    goto out;
  }
  if (open_side(base, ap, threads, 0, &m, err) < 0 || set_inputs(&m, 1, err) < 0) goto out;
  int32_t groups, matched, workloads;
  tun_apply_stats(ap, &groups, &matched, &workloads);
  kiln_model_set_profile(dflt, 0);
  double x;
  for (int i = 0; i < 3; i++)
    if (run_once(dflt, &x, err) < 0 || run_once(m, &x, err) < 0) goto out;
  for (int32_t r = 0; r < rounds; r++) {
    int first_tuned = r % 2;
    if (timed_run(first_tuned ? m : dflt, 0, first_tuned ? &b[r] : &a[r], err) < 0 ||
        timed_run(first_tuned ? dflt : m, 0, first_tuned ? &a[r] : &b[r], err) < 0)
      goto out;
  }
  double md = tun_median(a, rounds), mt = tun_median(b, rounds);
  printf("model check: `kiln compile --records` applies tuned schedules to %d of %d groups; whole runs on %d "
         "thread%s, alternating, median of %d: default %.3f ms, tuned %.3f ms (%.3fx)\n",
         matched, groups, threads, threads == 1 ? "" : "s", rounds, 1e3 * md, 1e3 * mt, mt / md);
  rc = 0;
out:
  kiln_model_close(m);
  free(a);
  tun_apply_free(ap);
  tun_records_free(&set);
  return rc;
}

int cli_tune_model_check(const kiln_compile_options *base, const tun_tasks *ts, const tun_target *t,
                         const char *records, int32_t threads, int32_t rounds, gir_err *err) {
  tun_record_set set;
  memset(&set, 0, sizeof set);
  side sd = {0}, st = {0};
  wl *w = NULL;
  int32_t n_wl = 0;
  double *cols = NULL, *tot = NULL;
  FILE *f = NULL;
  int rc = -1;
  if (rounds < 3) rounds = 3;
  if (tun_records_load(&set, records, t, KILN_VERSION, 0, 0, err) < 0) return -1;
  if (!(sd.ap = tun_apply_new(&set, t)) || !(st.ap = tun_apply_new(&set, t))) {
    gir_errf(err, "out of memory");
    goto out;
  }
  tun_apply_set_mode(sd.ap, TUN_APPLY_NONE);
  tun_apply_set_mode(st.ap, TUN_APPLY_CANDIDATES);
  double t0 = now_s();
  if (open_side(base, st.ap, threads, 1, &st.m, err) < 0) goto out;
  int32_t nk;
  const tun_apply_kernel *ks = tun_apply_kernels(st.ap, &nk);
  if (nk == 0) {
    printf("model check: no workload of the model has a tuned schedule that beat its default; nothing to check\n");
    rc = 0;
    goto out;
  }
  if (open_side(base, sd.ap, threads, 1, &sd.m, err) < 0) goto out;
  /* the workloads, in the order their first kernel was lowered; per round, each one's
   * seconds on both sides, and the whole runs' (default, then tuned) */
  w = calloc((size_t)nk + 1, sizeof *w);
  cols = calloc((size_t)nk * 2 * (size_t)rounds + 1, sizeof *cols);
  tot = calloc((size_t)rounds * 2 + 1, sizeof *tot);
  if (!w || !cols || !tot) {
    gir_errf(err, "out of memory");
    goto out;
  }
  for (int32_t i = 0; i < nk; i++) {
    int32_t k = 0;
    while (k < n_wl && strcmp(w[k].key, ks[i].key)) k++;
    if (k == n_wl) {
      w[n_wl] = (wl){.key = ks[i].key, .point = ks[i].point, .def = cols + (size_t)n_wl * 2 * (size_t)rounds};
      w[n_wl].tuned = w[n_wl].def + rounds;
      n_wl++;
    }
    w[k].kernels++;
  }
  kiln_model *both[2] = {sd.m, st.m};
  if (set_inputs(both, 2, err) < 0) { /* a model whose inputs cannot be invented: no check, not an error */
    printf("model check: not run: %s; `kiln compile --records` applies what the one-core checks kept\n", err->msg);
    err->msg[0] = 0;
    rc = 0;
    goto out;
  }
  double x;
  for (int i = 0; i < 3; i++) /* warm-up, and the profiles' entries for the mapping */
    if (run_once(sd.m, &x, err) < 0 || run_once(st.m, &x, err) < 0) goto out;
  int32_t missing = 0;
  if (map_entries(&sd, w, n_wl, &missing, err) < 0 || map_entries(&st, w, n_wl, &missing, err) < 0) goto out;
  for (int32_t r = 0; r < rounds; r++) {
    int first_tuned = r % 2;
    side *s1 = first_tuned ? &st : &sd, *s2 = first_tuned ? &sd : &st;
    if (profiled_run(s1, w, n_wl, !first_tuned, r, &tot[first_tuned * rounds + r], err) < 0 ||
        profiled_run(s2, w, n_wl, first_tuned, r, &tot[!first_tuned * rounds + r], err) < 0)
      goto out;
  }
  int64_t id = tun_check_id();
  if (!(f = fopen(records, "a"))) {
    gir_errf(err, "cannot append to the records '%s'", records);
    goto out;
  }
  printf("\nmodel check: %d workload%s with a tuned schedule, timed inside whole-model runs on %d thread%s (default "
         "and tuned bundles alternating, %d rounds; medians of the workload's kernels' time per run)\n",
         n_wl, n_wl == 1 ? "" : "s", threads, threads == 1 ? "" : "s", rounds);
  if (missing) printf("  (%d noted kernels are not in the plans and do not count)\n", missing);
  printf("%-16s %-44s %4s %12s %12s %7s  %s\n", "workload", "task", "krn", "default us", "tuned us", "ratio",
         "applied");
  int32_t kept = 0;
  double sum_d = 0, sum_t = 0;
  for (int32_t k = 0; k < n_wl; k++) {
    double md = tun_median(w[k].def, rounds), mt = tun_median(w[k].tuned, rounds);
    int keep = md > 0 && mt > 0 && mt < (1 - TUN_CONFIRM_MARGIN) * md;
    kept += keep;
    sum_d += md;
    sum_t += keep ? mt : md;
    printf("%-16s %-44.44s %4d %12.1f %12.1f %7.3f  %s\n", w[k].point->hash, label_of(ts, w[k].key, ""), w[k].kernels,
           1e6 * md, 1e6 * mt, md > 0 ? mt / md : 0, keep ? "yes" : "no");
    if (md > 0 && mt > 0 &&
        (write_side(f, t, &w[k], 1, md, rounds, threads, id, err) < 0 ||
         write_side(f, t, &w[k], 0, mt, rounds, threads, id, err) < 0))
      goto out;
  }
  printf("kept %d of %d: their kernels %.1f -> %.1f us per run; the profiled runs with every candidate: default %.3f "
         "ms, tuned %.3f ms (%.1f s)\n",
         kept, n_wl, 1e6 * sum_d, 1e6 * sum_t, 1e3 * tun_median(tot, rounds), 1e3 * tun_median(tot + rounds, rounds),
         now_s() - t0);
  fclose(f);
  f = NULL;
  if (kept) rc = final_runs(base, t, records, sd.m, threads, rounds, err);
  else {
    printf("model check: no tuned schedule kept; `kiln compile --records` gives the default bundle\n");
    rc = 0;
  }
out:
  if (f) fclose(f);
  free(w);
  free(cols);
  free(tot);
  free(sd.wl_of);
  free(st.wl_of);
  kiln_model_close(sd.m);
  kiln_model_close(st.m);
  tun_apply_free(sd.ap);
  tun_apply_free(st.ap);
  tun_records_free(&set);
  return rc;
}
