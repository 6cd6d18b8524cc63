/* tune.c — `kiln tune MODEL.onnx --records FILE [--trials N] [--transfer-from
 * FILE]... [--tasks LIST] [--time-budget S] [--search model|random]`: runs the
 * front of the compile pipeline (kiln_compile_front) with the tuner's probe as the
 * lowering hook, so the tasks are exactly the groups `kiln compile` makes, then
 * hands them to the tuner (tuner/tuner.h) with the local measurer, and prints the
 * table and writes the plot. `kiln compile --records FILE` applies the result
 * (cli_records_hook below). The tune ends with the in-model check (tune_check.c).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "compile.h"
#include "tuner.h"

/* Which tasks --tasks keeps: all, templates, conv, matmul, generic, or numbers. */
static int task_selected(const char *spec, const tun_task *k, int index) {
  if (!spec || !strcmp(spec, "all")) return 1;
  if (!strcmp(spec, "templates")) return strcmp(k->space.tmpl, "generic") != 0;
  if (!strcmp(spec, "conv") || !strcmp(spec, "matmul") || !strcmp(spec, "generic")) return !strcmp(spec, k->space.tmpl);
  for (const char *p = spec; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p) return 0;
    if (v == index) return 1;
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}

static int valid_spec(const char *spec) {
  if (!spec) return 1;
  static const char *const words[] = {"all", "templates", "conv", "matmul", "generic", "list"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (!strcmp(spec, words[i])) return 1;
  for (const char *p = spec; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 0 || (*end && *end != ',')) return 0;
    p = *end == ',' ? end + 1 : end;
  }
  return *spec != 0;
}

/* The points of a space that pass its check (no build: register pressure, no-op
 * combinations), or -1 for a space too large to walk. */
static int64_t valid_points(const tun_space *s) {
  if (s->size > ((int64_t)1 << 22)) return -1;
  int64_t n = 0;
  int32_t v[TUN_MAX_KNOBS];
  char why[160];
  for (int64_t idx = 0; idx < s->size; idx++) {
    tun_space_values(s, idx, v);
    n += tun_space_check(s, v, why, sizeof why) == 0;
  }
  return n;
}

static void print_tasks(const tun_tasks *ts) {
  printf("%-3s %-16s %-8s %-44s %4s %12s %10s %10s\n", "#", "workload", "template", "task", "occ", "MFLOPs", "space",
         "valid");
  for (int i = 0; i < ts->n; i++) {
    const tun_task *k = &ts->tasks[i];
    int64_t valid = valid_points(&k->space);
    printf("%-3d %-16s %-8s %-44.44s %4d %12.1f %10lld ", i, k->hash, k->space.tmpl, k->label, k->occurrences,
           (double)k->flops / 1e6, (long long)k->space.size);
    if (valid < 0) printf("%10s\n", "-");
    else printf("%10lld\n", (long long)valid);
  }
}

int kiln_cmd_tune(int argc, char **argv) {
  cli_args args;
  int r = cli_parse(CLI_CMD_TUNE, argc, argv, &args);
  if (r) return r < 0 ? 2 : 0;
  cli_import ci = {0};
  if (cli_args_import(&args, &ci) < 0) return 2;
  const char *spec = args.str[CLI_OPT_TASKS], *search = args.str[CLI_OPT_SEARCH];
  if (!valid_spec(spec)) {
    fprintf(stderr, "kiln tune: --tasks takes all, templates, conv, matmul, generic, list or task numbers (0,2,5), not '%s'\n",
            spec);
    return 2;
  }
  if (search && strcmp(search, "model") && strcmp(search, "random")) {
    fprintf(stderr, "kiln tune: --search takes model or random, not '%s'\n", search);
    return 2;
  }
  /* a records file that cannot be appended to, or a transfer file that cannot be
   * read, is said now, not after the model is compiled */
  const char *transfer[64];
  int n_transfer = cli_values(&args, CLI_OPT_TRANSFER_FROM, transfer, 64);
  if (!spec || strcmp(spec, "list")) {
    FILE *rf = fopen(args.str[CLI_OPT_RECORDS], "a");
    if (!rf) {
      fprintf(stderr, "kiln tune: cannot append to the records '%s': %s\n", args.str[CLI_OPT_RECORDS], strerror(errno));
      return 1;
    }
    fclose(rf);
    for (int i = 0; i < n_transfer; i++) {
      FILE *tf = fopen(transfer[i], "r");
      if (!tf) {
        fprintf(stderr, "kiln tune: cannot read the records '%s': %s\n", transfer[i], strerror(errno));
        return 1;
      }
      fclose(tf);
    }
  }
  cli_import_finish(&ci);
  gir_err err = {{0}};
  tun_target t;
  if (tun_target_init(&t, args.str[CLI_OPT_TARGET], &err) < 0) {
    fprintf(stderr, "kiln tune: %s\n", err.msg);
    return 1;
  }
  int winograd = cli_winograd_mode(&args);
  if (winograd < 0) return 2;
  tun_probe *probe = tun_probe_new(&t);
  if (!probe) {
    fprintf(stderr, "kiln tune: out of memory\n");
    return 1;
  }
  kiln_compile_options o = {.threads_hint = 2, .opt_level = 2, .model_path = args.positional, .target = t.name,
                            .import = &ci.opt, .tuning = tun_probe_hook(probe),
                            .winograd = winograd};
  kiln_front f;
  kiln_compile_result cres;
  memset(&cres, 0, sizeof cres);
  tun_tasks all = {0}, ts = {0};
  tun_measurer *m = NULL;
  tun_result res = {0};
  int rc = 1;
  if (kiln_compile_front(&o, &f, &cres, &err) < 0 || tun_tasks_build(probe, &t, 1, &all, &err) < 0) {
    fprintf(stderr, "kiln tune: %s\n", err.msg);
    goto out;
  }
  /* the selected tasks, renumbered */
  ts = all;
  ts.tasks = calloc((size_t)all.n + 1, sizeof *ts.tasks);
  ts.arena = NULL;
  ts.n = 0;
  if (!ts.tasks) {
    fprintf(stderr, "kiln tune: out of memory\n");
    goto out;
  }
  for (int i = 0; i < all.n; i++)
    if (task_selected(spec && strcmp(spec, "list") ? spec : NULL, &all.tasks[i], i)) {
      ts.tasks[ts.n] = all.tasks[i];
      ts.tasks[ts.n].id = ts.n;
      ts.n++;
    }
  printf("kiln tune: %s: %d tasks from %d groups (%d with nothing to tune), target %s on %s\n", args.positional, ts.n,
         all.n_groups, all.n_skipped, t.name, t.cpu);
  if (spec && !strcmp(spec, "list")) {
    print_tasks(&all);
    rc = 0;
    goto out;
  }
  if (ts.n == 0) {
    printf("nothing to tune\n");
    rc = 0;
    goto out;
  }
  tun_local_options lo = tun_local_defaults();
  char cores[256];
  cpu_set_t cpus; /* the process's cores, given back after the tune */
  int pinned = 0;
  int32_t threads = args.set[CLI_OPT_THREADS] ? (int32_t)args.num[CLI_OPT_THREADS] : 1;
  if (threads == 0) threads = tun_online_cores();
  lo.threads = threads;
  lo.cold_weights = args.set[CLI_OPT_COLD_WEIGHTS];
  if (lo.cold_weights) printf("weights: evicted from the caches before each timed call\n");
  if (threads > 1)
    snprintf(cores, sizeof cores, "each candidate measured on %d threads over the process's cores; builds and the search "
             "wait while it runs", threads);
  else
    pinned = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && tun_pin_search(&lo.measure_cpu, cores, sizeof cores);
  printf("cores: %s\n", cores);
  cli_peak peak;
  cli_measure_peak(&peak);
  if (!(m = tun_local_measurer(&lo, &err))) {
    fprintf(stderr, "kiln tune: %s\n", err.msg);
    goto out;
  }
  char plot[4096];
  if (args.str[CLI_OPT_PLOT]) snprintf(plot, sizeof plot, "%s", args.str[CLI_OPT_PLOT]);
  else snprintf(plot, sizeof plot, "%s.svg", args.str[CLI_OPT_RECORDS]);
  tun_options to = tun_default_options();
  to.trials = args.set[CLI_OPT_TRIALS] ? args.num[CLI_OPT_TRIALS] : 32 * (int64_t)ts.n;
  to.time_budget_s = args.set[CLI_OPT_TIME_BUDGET] ? (double)args.num[CLI_OPT_TIME_BUDGET] : 0;
  to.strategy = search && !strcmp(search, "random") ? TUN_RANDOM : TUN_MODEL;
  to.seed = args.set[CLI_OPT_SEED] ? (uint64_t)args.num[CLI_OPT_SEED] : 1;
  to.records_path = args.str[CLI_OPT_RECORDS];
  to.transfer_paths = transfer;
  to.n_transfer = n_transfer;
  to.version = KILN_VERSION;
  to.peak_gflops = peak.gflops_per_core * threads;
  to.threads = threads;
  to.progress = stdout;
  to.progress_tty = isatty(fileno(stdout));
  printf("peak: %.0f GFLOPS on %d core%s (%s); %lld trials%s, %s search\n", to.peak_gflops, threads,
         threads > 1 ? "s" : "", peak.isa,
         (long long)to.trials, to.time_budget_s > 0 ? " or the time budget" : "",
         to.strategy == TUN_MODEL ? "model-guided" : "random");
  if (tun_tune(&ts, &t, m, &to, &res, &err) < 0) {
    fprintf(stderr, "kiln tune: %s\n", err.msg);
    goto out;
  }
  if (res.transfer_records) printf("global model: trained on %d records of other workloads\n", res.transfer_records);
  tun_report_table(stdout, &ts, &res, to.peak_gflops, threads);
  if (tun_report_svg(plot, &ts, &res, &err) < 0) {
    fprintf(stderr, "kiln tune: %s\n", err.msg);
    goto out;
  }
  printf("records: %s; plot: %s\n", to.records_path, plot);
  int32_t rounds = args.set[CLI_OPT_MODEL_ROUNDS] ? (int32_t)args.num[CLI_OPT_MODEL_ROUNDS] : 40;
  if (rounds > 0) {
    /* the measuring workers stop, and the model runs on every core the process had */
    m->free(m->self);
    free(m);
    m = NULL;
    if (pinned) sched_setaffinity(0, sizeof cpus, &cpus);
    int32_t mt = args.set[CLI_OPT_MODEL_THREADS] ? (int32_t)args.num[CLI_OPT_MODEL_THREADS] : 0;
    if (mt == 0) mt = tun_online_cores();
    o.tuning = NULL;
    if (cli_tune_model_check(&o, &ts, &t, to.records_path, mt, rounds, &err) < 0) {
      fprintf(stderr, "kiln tune: the in-model check: %s\n", err.msg);
      goto out;
    }
  }
  rc = 0;
out:
  tun_result_free(&res);
  if (m) m->free(m->self);
  free(m);
  free(ts.tasks);
  tun_tasks_free(&all);
  kiln_front_free(&f);
  tun_probe_free(probe);
  return rc;
}

/* ---- kiln compile --records FILE ---- */
struct cli_records {
  tun_target t;
  tun_record_set set;
  tun_apply *apply;
};

cli_records *cli_records_open(const char *path, const char *target, gir_err *err) {
  cli_records *r = calloc(1, sizeof *r);
  if (!r) {
    gir_errf(err, "out of memory");
    return NULL;
  }
  if (tun_target_init(&r->t, target, err) < 0) {
    gir_err_prefix(err, "--records");
    free(r);
    return NULL;
  }
  if (tun_records_load(&r->set, path, &r->t, KILN_VERSION, 0, 0, err) < 0 || !(r->apply = tun_apply_new(&r->set, &r->t))) {
    if (!err->msg[0]) gir_errf(err, "out of memory");
    cli_records_free(r);
    return NULL;
  }
  return r;
}

const struct lower_tuning *cli_records_hook(cli_records *r) { return tun_apply_hook(r->apply); }

void cli_records_report(const cli_records *r, const char *path, FILE *f) {
  int32_t groups, matched, workloads;
  tun_apply_stats(r->apply, &groups, &matched, &workloads);
  fprintf(f, "  records: tuned schedules for %d of %d groups (%d workloads with a tuned schedule in %s", matched, groups,
          workloads, path);
  const tun_record_set *s = &r->set;
  if (s->other_cpu) fprintf(f, "; %d records from another CPU skipped", s->other_cpu);
  if (s->other_version) fprintf(f, "; %d from an incompatible kiln version skipped", s->other_version);
  if (s->other_target) fprintf(f, "; %d for another target skipped", s->other_target);
  if (s->malformed) fprintf(f, "; %d malformed lines skipped", s->malformed);
  fprintf(f, ")\n");
}

void cli_records_free(cli_records *r) {
  if (!r) return;
  tun_apply_free(r->apply);
  tun_records_free(&r->set);
  free(r);
}
