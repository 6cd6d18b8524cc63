/* tun_tune.c — the tuning loop (AutoTVM's ModelBasedTuner) and the scheduler that
 * shares the trials among tasks (Ansor's task scheduler).
 *
 * Per task: the default schedule is measured first (the bar to beat, and the
 * schedule kept when nothing beats it). Then rounds of `batch` candidates: the
 * model — the local XGBoost model of this task on top of the global one trained
 * on other workloads' records (tun_model.c) — scores points through their loop-IR
 * features, simulated annealing keeps its chains across rounds (tun_search.c),
 * the batch is picked for diversity among the top scores, and a share epsilon of
 * it is random (exploration). Each measurement is appended to the records file as
 * it lands; a rerun reads the file first, counts what it holds against the
 * budget and never measures a point twice.
 *
 * Between rounds the scheduler picks the task whose next round should cut the
 * model's total time (Σ occurrences × best time) most: after one round each, the
 * task maximizing occurrences × (0.2 × its recent improvement per trial + 0.8 ×
 * best time / trials so far). A task stops when its space is used up.
 *
 * The tune ends with a side-by-side check per task whose best beat its default: the
 * two measured alternately (confirm_pairs times each, records marked with one
 * confirm id), because the default's one measurement came first, minutes earlier, in
 * a freshly started worker — on a shared VM such single measurements taken apart
 * differed by up to 40%. `kiln compile --records` then applies the best only where
 * the check's medians show it TUN_CONFIRM_MARGIN faster (tun_records.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tun_internal.h"

tun_options tun_default_options(void) {
  return (tun_options){.trials = 0, .batch = 8, .strategy = TUN_MODEL, .epsilon = 0.1, .seed = 1, .threads = 1,
                       .confirm_pairs = 3};
}

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- a set of point indices ---- */
typedef struct idx_set {
  int64_t *s;
  int64_t cap, n;
} idx_set;

static uint64_t hmix(int64_t x) {
  uint64_t z = (uint64_t)x * 0xff51afd7ed558ccdull;
  return z ^ (z >> 33);
}

static int set_has(const idx_set *s, int64_t v) {
  if (!s->cap) return 0;
  for (uint64_t h = hmix(v) & (uint64_t)(s->cap - 1);; h = (h + 1) & (uint64_t)(s->cap - 1)) {
    if (s->s[h] == v) return 1;
    if (s->s[h] == -1) return 0;
  }
}

static int set_add(idx_set *s, int64_t v) {
  if (set_has(s, v)) return 0;
  if ((s->n + 1) * 2 > s->cap) {
    int64_t oc = s->cap, nc = oc ? oc * 2 : 256;
    int64_t *old = s->s, *ns = malloc(sizeof *ns * (size_t)nc);
    if (!ns) return -1;
    for (int64_t i = 0; i < nc; i++) ns[i] = -1;
    s->s = ns;
    s->cap = nc;
    s->n = 0;
    for (int64_t i = 0; i < oc; i++)
      if (old[i] != -1) set_add(s, old[i]);
    free(old);
  }
  uint64_t h = hmix(v) & (uint64_t)(s->cap - 1);
  while (s->s[h] != -1) h = (h + 1) & (uint64_t)(s->cap - 1);
  s->s[h] = v;
  s->n++;
  return 1;
}

/* ---- growing float rows ---- */
typedef struct rows {
  float *x, *thr; /* features, throughput (0: error) */
  int64_t n, cap;
} rows;

static int rows_add(rows *r, const float *f, float thr) {
  if (r->n == r->cap) {
    int64_t nc = r->cap ? r->cap * 2 : 64;
    float *x = realloc(r->x, sizeof *x * (size_t)nc * TUN_N_FEATURES);
    if (!x) return -1;
    r->x = x;
    float *t = realloc(r->thr, sizeof *t * (size_t)nc);
    if (!t) return -1;
    r->thr = t;
    r->cap = nc;
  }
  memcpy(r->x + (size_t)r->n * TUN_N_FEATURES, f, sizeof *f * TUN_N_FEATURES);
  r->thr[r->n++] = thr;
  return 0;
}

static void rows_free(rows *r) {
  free(r->x);
  free(r->thr);
  memset(r, 0, sizeof *r);
}

/* ---- per task ---- */
typedef struct task_state {
  const tun_task *task;
  tun_cache *cache;
  tun_sa *sa;
  idx_set measured;
  rows data;
  tun_model *local;
  int64_t fitted_rows;
  int64_t trials, errors, resumed, rounds;
  double default_s, best_s;
  int32_t best[TUN_MAX_KNOBS];
  int has_best, done, default_done;
  int confirmed, kept;        /* the closing check ran; it kept the best */
  double conf_default_s, conf_best_s;
  double *curve;
  int64_t curve_cap;
  double last_best[4]; /* best (incl. default) after the last rounds, for the scheduler */
  int64_t last_trials[4];
  uint64_t rng;
} task_state;

typedef struct tuner {
  const tun_tasks *ts;
  const tun_target *t;
  const tun_options *o;
  tun_measurer *m;
  task_state *st;
  tun_model *global;
  FILE *rec;
  int64_t total_trials, resumed;
  double t0;
  int32_t last_task;
  int32_t transfer_rows;
} tuner;

static double current_best(const task_state *s) {
  double b = s->default_s > 0 ? s->default_s : INFINITY;
  if (s->best_s > 0 && s->best_s < b) b = s->best_s;
  return b;
}

static int curve_push(task_state *s) {
  if (s->trials > s->curve_cap) {
    int64_t nc = s->curve_cap ? s->curve_cap * 2 : 64;
    while (nc < s->trials) nc *= 2;
    double *c = realloc(s->curve, sizeof *c * (size_t)nc);
    if (!c) return -1;
    s->curve = c;
    s->curve_cap = nc;
  }
  double b = current_best(s);
  s->curve[s->trials - 1] = isfinite(b) ? b : -1;
  return 0;
}

/* Takes one measurement (or resumed record) into the task's state. */
static int account(tuner *tu, task_state *s, int64_t idx, const int32_t *values, const float *feat, double cost,
                   int is_default) {
  const tun_task *k = s->task;
  s->trials++;
  if (idx >= 0) set_add(&s->measured, idx);
  if (cost <= 0) s->errors++;
  if (is_default) {
    s->default_done = 1;
    if (cost > 0 && (s->default_s <= 0 || cost < s->default_s)) s->default_s = cost;
  } else if (cost > 0 && (s->best_s <= 0 || cost < s->best_s)) {
    s->best_s = cost;
    memcpy(s->best, values, sizeof s->best[0] * (size_t)k->space.n_knobs);
    s->has_best = 1;
  }
  if (feat && rows_add(&s->data, feat, cost > 0 ? (float)((double)k->flops / cost * 1e-9) : 0.0f) < 0) return -1;
  (void)tu;
  return curve_push(s);
}

/* ---- models ---- */
typedef struct predictor {
  const tun_model *global, *local;
  float *base;
  int64_t cap;
} predictor;

static int predict_fn(void *ctx, const float *x, int64_t n, float *out) {
  predictor *p = ctx;
  gir_err err = {{0}};
  if (n > p->cap) {
    float *b = realloc(p->base, sizeof *b * (size_t)n);
    if (!b) return -1;
    p->base = b;
    p->cap = n;
  }
  if (p->global && tun_model_predict(p->global, x, n, NULL, p->base, &err) < 0) return -1;
  if (p->local) return tun_model_predict(p->local, x, n, p->global ? p->base : NULL, out, &err);
  memcpy(out, p->base, sizeof *out * (size_t)n);
  return 0;
}

/* Labels: throughput over the best of the group (0 for errors). */
static void normalize(const float *thr, int64_t n, float *y) {
  float mx = 0;
  for (int64_t i = 0; i < n; i++) mx = thr[i] > mx ? thr[i] : mx;
  for (int64_t i = 0; i < n; i++) y[i] = mx > 0 ? thr[i] / mx : 0;
}

static void fit_local(tuner *tu, task_state *s) {
  if (s->data.n < 4 || s->data.n == s->fitted_rows) return;
  float *y = malloc(sizeof *y * (size_t)s->data.n), *base = NULL;
  if (!y) return;
  normalize(s->data.thr, s->data.n, y);
  gir_err err = {{0}};
  if (tu->global && (base = malloc(sizeof *base * (size_t)s->data.n)) &&
      tun_model_predict(tu->global, s->data.x, s->data.n, NULL, base, &err) < 0) {
    free(base);
    base = NULL;
  }
  uint32_t g = (uint32_t)s->data.n;
  tun_model *m = tun_model_train(s->data.x, y, s->data.n, &g, 1, base, 40, &err);
  free(y);
  free(base);
  if (!m) return;
  tun_model_free(s->local);
  s->local = m;
  s->fitted_rows = s->data.n;
}

/* The global model: every usable record of a workload that is not being tuned
 * here (or is, but from the transfer files: they are other runs), grouped by
 * workload. */
static int fit_global(tuner *tu, const tun_record_set *const *sets, int32_t n_sets) {
  rows r = {0};
  uint32_t *groups = NULL;
  int32_t ng = 0, gcap = 0;
  for (int si = 0; si < n_sets; si++) {
    const tun_record_set *set = sets[si];
    /* records of one workload are grouped in file order: gather by key */
    uint8_t *used = calloc((size_t)set->n + 1, 1);
    if (!used) break;
    for (int i = 0; i < set->n; i++) {
      if (used[i]) continue;
      const char *key = set->r[i].key;
      int own = 0;
      for (int k = 0; k < tu->ts->n && si == 0; k++) own |= !strcmp(tu->ts->tasks[k].key, key);
      int64_t start = r.n;
      for (int j = i; j < set->n; j++) {
        const tun_record *x = &set->r[j];
        if (used[j] || strcmp(x->key, key)) continue;
        used[j] = 1;
        if (own || !x->features) continue;
        float thr = x->error[0] || x->cost <= 0 ? 0.0f : (float)((double)x->flops / x->cost * 1e-9);
        if (rows_add(&r, x->features, thr) < 0) break;
      }
      if (r.n - start >= 2) {
        if (ng == gcap) {
          gcap = gcap ? gcap * 2 : 32;
          uint32_t *g = realloc(groups, sizeof *g * (size_t)gcap);
          if (!g) break;
          groups = g;
        }
        normalize(r.thr + start, r.n - start, r.thr + start); /* labels in place */
        groups[ng++] = (uint32_t)(r.n - start);
      } else {
        r.n = start;
      }
    }
    free(used);
  }
  if (r.n >= 8 && ng >= 1) {
    gir_err err = {{0}};
    tu->global = tun_model_train(r.x, r.thr, r.n, groups, ng, NULL, 80, &err);
    if (tu->global) tu->transfer_rows = (int32_t)r.n;
  }
  rows_free(&r);
  free(groups);
  return 0;
}

/* ---- records ---- */
static int write_record(tuner *tu, task_state *s, const int32_t *values, const float *feat,
                        const tun_measure_result *res, int64_t confirm, gir_err *err) {
  if (!tu->rec) return 0;
  const tun_task *k = s->task;
  const char *names[TUN_MAX_KNOBS];
  int32_t vals[TUN_MAX_KNOBS];
  for (int i = 0; i < k->space.n_knobs; i++) names[i] = k->space.knobs[i].name, vals[i] = values ? values[i] : 0;
  tun_record r = {.key = k->key, .tmpl = k->space.tmpl, .target = tu->t->name, .cpu = tu->t->cpu,
                  .version = tu->o->version, .n_knobs = values ? k->space.n_knobs : 0, .knob_names = names,
                  .knob_values = vals, .is_default = values == NULL, .cost = res->cost, .costs = res->costs,
                  .n_costs = res->n_costs, .error = res->error,
                  .time = (double)time(NULL), .threads = tu->o->threads, .confirm = confirm,
                  .flops = k->flops, .n_features = feat ? TUN_N_FEATURES : 0,
                  .features = (float *)feat};
  memcpy(r.hash, k->hash, sizeof r.hash);
  return tun_record_write(tu->rec, &r, err);
}

static void resume(tuner *tu, const tun_record_set *set) {
  for (int i = 0; i < set->n; i++) {
    const tun_record *r = &set->r[i];
    for (int ti = 0; ti < tu->ts->n; ti++) {
      task_state *s = &tu->st[ti];
      const tun_task *k = s->task;
      if (strcmp(k->key, r->key) || r->confirm > 0 || r->model > 0) continue; /* checks are no trials */
      double cost = r->error[0] ? -1 : r->cost;
      if (r->is_default) {
        account(tu, s, -1, NULL, r->features, cost, 1);
      } else {
        int32_t values[TUN_MAX_KNOBS];
        int ok = r->n_knobs == k->space.n_knobs;
        for (int j = 0; j < k->space.n_knobs && ok; j++) {
          ok = !strcmp(r->knob_names[j], k->space.knobs[j].name);
          values[j] = ok ? r->knob_values[j] : 0;
        }
        int64_t idx = ok ? tun_space_index(&k->space, values) : -1;
        if (idx < 0) continue; /* a point of another space: not this task's */
        account(tu, s, idx, values, r->features, cost, 0);
      }
      s->resumed++;
      tu->resumed++;
      tu->total_trials++;
    }
  }
}

/* ---- progress ---- */
static void fmt_time(double s, char *buf, size_t n) {
  if (s < 0 || !isfinite(s)) snprintf(buf, n, "?");
  else if (s < 60) snprintf(buf, n, "%.0fs", s);
  else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
  else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), ((int)s % 3600) / 60);
}

static void progress(tuner *tu, int32_t ti) {
  FILE *f = tu->o->progress;
  if (!f) return;
  const task_state *s = &tu->st[ti];
  const tun_task *k = s->task;
  double b = current_best(s), gf = isfinite(b) ? (double)k->flops / b * 1e-9 : 0;
  double df = s->default_s > 0 ? (double)k->flops / s->default_s * 1e-9 : 0;
  double el = wall_s() - tu->t0, eta = -1;
  int64_t done = tu->total_trials - tu->resumed;
  if (done > 0 && tu->o->trials > 0) eta = el / (double)done * (double)(tu->o->trials - tu->total_trials);
  if (tu->o->time_budget_s > 0 && (eta < 0 || eta > tu->o->time_budget_s - el)) eta = tu->o->time_budget_s - el;
  char e[32], pk[32] = "";
  fmt_time(eta, e, sizeof e);
  if (tu->o->peak_gflops > 0) snprintf(pk, sizeof pk, " (%.0f%% of peak)", 100 * gf / tu->o->peak_gflops);
  if (tu->o->progress_tty && tu->last_task >= 0 && tu->last_task != ti) fputc('\n', f);
  fprintf(f, "%s[%2d/%d] %-44.44s trials %4lld  best %7.1f GFLOPS%s  default %7.1f  ETA %s%s",
          tu->o->progress_tty ? "\r\033[K" : "", ti + 1, tu->ts->n, k->label, (long long)s->trials, gf, pk, df, e,
          tu->o->progress_tty ? "" : "\n");
  fflush(f);
  tu->last_task = ti;
}

/* ---- one round of one task ---- */
static int is_measured_cb(void *ctx, int64_t idx) { return set_has(&((task_state *)ctx)->measured, idx); }

static int measure_batch(tuner *tu, task_state *s, const int64_t *pts, int32_t n, int with_default, gir_err *err) {
  const tun_task *k = s->task;
  int32_t total = n + (with_default ? 1 : 0);
  tun_measure_input *in = calloc((size_t)total + 1, sizeof *in);
  tun_measure_result *out = calloc((size_t)total + 1, sizeof *out);
  int32_t(*vals)[TUN_MAX_KNOBS] = calloc((size_t)total + 1, sizeof *vals);
  int rc = -1;
  if (!in || !out || !vals) {
    gir_errf(err, "out of memory");
    goto done;
  }
  int32_t j = 0;
  if (with_default) in[j++] = (tun_measure_input){k, NULL};
  for (int i = 0; i < n; i++, j++) {
    tun_space_values(&k->space, pts[i], vals[j]);
    in[j] = (tun_measure_input){k, vals[j]};
  }
  if (tu->m->measure(tu->m->self, tu->t, in, total, out, err) < 0) goto done;
  for (int i = 0; i < total; i++) {
    int is_def = with_default && i == 0;
    int64_t idx = is_def ? -1 : pts[i - (with_default ? 1 : 0)];
    float fbuf[TUN_N_FEATURES];
    const float *feat = NULL;
    if (is_def) {
      tun_kernel kk;
      gir_err e2 = {{0}};
      if (tun_build_lower(k, tu->t, NULL, &kk, &e2) == 0) {
        tun_features(&kk.k, fbuf);
        feat = fbuf;
      }
      tun_kernel_free(&kk);
    } else {
      const float *f = tun_cache_features(s->cache, idx);
      if (f) {
        memcpy(fbuf, f, sizeof fbuf);
        feat = fbuf;
      }
    }
    double cost = out[i].error[0] ? -1 : out[i].cost;
    if (write_record(tu, s, is_def ? NULL : vals[i], feat, &out[i], 0, err) < 0) goto done;
    if (account(tu, s, idx, vals[i], feat, cost, is_def) < 0) {
      gir_errf(err, "out of memory");
      goto done;
    }
    tu->total_trials++;
  }
  rc = 0;
done:
  free(in);
  free(out);
  free(vals);
  return rc;
}

static int round_of(tuner *tu, int32_t ti, int64_t budget, gir_err *err) {
  task_state *s = &tu->st[ti];
  const tun_task *k = s->task;
  int with_default = !s->default_done;
  int32_t want = tu->o->batch - with_default;
  if (want > budget - with_default) want = (int32_t)(budget - with_default);
  if (want < 0) want = 0;
  int64_t *pts = calloc((size_t)tu->o->batch + 1, sizeof *pts);
  int64_t *cand = calloc((size_t)tu->o->batch * 4 + 1, sizeof *cand);
  float *cs = calloc((size_t)tu->o->batch * 4 + 1, sizeof *cs);
  int32_t n = 0;
  if (!pts || !cand || !cs) {
    free(pts), free(cand), free(cs);
    return gir_errf(err, "out of memory");
  }
  /* a template default that is a point of the space counts as measured with the default */
  if (with_default && k->has_defaults) set_add(&s->measured, tun_space_index(&k->space, k->defaults));
  int use_model = tu->o->strategy == TUN_MODEL && (s->local || tu->global);
  if (use_model && want > 0) {
    predictor p = {tu->global, s->local, NULL, 0};
    int32_t nc = tun_sa_run(s->sa, s->cache, predict_fn, &p, is_measured_cb, s, 60, cand, cs, want * 2);
    free(p.base);
    int32_t n_random = tu->o->epsilon > 0 ? (int32_t)ceil(want * tu->o->epsilon) : 0; /* at least one */
    int32_t n_model = want - n_random;
    n = tun_pick_diverse(&k->space, cand, cs, nc, n_model, 0.1, pts);
  }
  for (int tries = 0; n < want && tries < want * 4; tries++) { /* random picks: exploration, or no model yet */
    int64_t p = tun_random_point(&k->space, s->cache, &s->rng, is_measured_cb, s, 256);
    if (p < 0) break;
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= pts[i] == p;
    if (!dup) pts[n++] = p;
  }
  int rc = 0;
  if (n == 0 && !with_default) {
    s->done = 1; /* nothing left to try */
  } else {
    rc = measure_batch(tu, s, pts, n, with_default, err);
    if (tu->o->strategy == TUN_MODEL) fit_local(tu, s);
  }
  s->rounds++;
  memmove(s->last_best + 1, s->last_best, sizeof s->last_best[0] * 3);
  memmove(s->last_trials + 1, s->last_trials, sizeof s->last_trials[0] * 3);
  s->last_best[0] = current_best(s);
  s->last_trials[0] = s->trials;
  if (tu->o->per_task_max > 0 && s->trials >= tu->o->per_task_max) s->done = 1;
  if (s->measured.n >= k->space.size) s->done = 1;
  free(pts), free(cand), free(cs);
  return rc;
}

/* The task whose next round should cut the total time most. */
/* The closing check of one task: default and best alternately, pairs times each. */
static int confirm_task(tuner *tu, task_state *s, int64_t id, gir_err *err) {
  const tun_task *k = s->task;
  int32_t pairs = tu->o->confirm_pairs > 8 ? 8 : tu->o->confirm_pairs, n = 2 * pairs;
  tun_measure_input in[16];
  tun_measure_result out[16];
  if (pairs < 1) return 0;
  memset(in, 0, sizeof in);
  memset(out, 0, sizeof out);
  for (int i = 0; i < n; i++) in[i] = (tun_measure_input){k, i % 2 ? s->best : NULL};
  if (tu->m->measure(tu->m->self, tu->t, in, n, out, err) < 0) return -1;
  double d[8], b[8];
  int nd = 0, nb = 0;
  for (int i = 0; i < n; i++) {
    if (write_record(tu, s, in[i].values, NULL, &out[i], id, err) < 0) return -1;
    if (out[i].error[0] || !(out[i].cost > 0)) continue;
    if (i % 2) b[nb++] = out[i].cost;
    else d[nd++] = out[i].cost;
  }
  if (nd == 0 || nb == 0) return 0;
  s->confirmed = 1;
  s->conf_default_s = tun_median(d, nd);
  s->conf_best_s = tun_median(b, nb);
  s->kept = s->conf_best_s < (1 - TUN_CONFIRM_MARGIN) * s->conf_default_s;
  return 0;
}

static int32_t pick_task(tuner *tu) {
  int32_t best = -1;
  double bg = -1;
  for (int i = 0; i < tu->ts->n; i++) {
    task_state *s = &tu->st[i];
    if (s->done) continue;
    if (s->rounds == 0 && s->resumed == 0) return i; /* every task gets a first round */
    double c = current_best(s);
    if (!isfinite(c)) c = 1.0; /* nothing ran yet: make it worth a try */
    double back = 0;
    if (s->rounds >= 2 && s->last_trials[0] > s->last_trials[1])
      back = (s->last_best[1] - s->last_best[0]) / (double)(s->last_trials[0] - s->last_trials[1]);
    double fwd = c / (double)(s->trials > 0 ? s->trials : 1);
    double g = s->task->occurrences * (0.2 * back + 0.8 * fwd);
    if (g > bg) bg = g, best = i;
  }
  return best;
}

int tun_tune(const tun_tasks *ts, const tun_target *t, tun_measurer *m, const tun_options *o, tun_result *res,
             gir_err *err) {
  memset(res, 0, sizeof *res);
  tuner tu = {.ts = ts, .t = t, .o = o, .m = m, .t0 = wall_s(), .last_task = -1};
  tun_record_set own = {0}, *transfer = NULL;
  int rc = -1;
  tu.st = calloc((size_t)ts->n + 1, sizeof *tu.st);
  transfer = calloc((size_t)o->n_transfer + 1, sizeof *transfer);
  if (!tu.st || !transfer) {
    gir_errf(err, "out of memory");
    goto out;
  }
  for (int i = 0; i < ts->n; i++) {
    task_state *s = &tu.st[i];
    s->task = &ts->tasks[i];
    s->cache = tun_cache_new(s->task, t);
    s->sa = tun_sa_new(&s->task->space, 64, o->seed + (uint64_t)i * 7919);
    s->rng = o->seed * 0x9e3779b97f4a7c15ull + (uint64_t)i;
    s->default_s = s->best_s = -1;
    if (!s->cache || !s->sa) {
      gir_errf(err, "out of memory");
      goto out;
    }
  }
  /* records: this file (resume, and other workloads for the global model: those
   * measured on this tune's threads), transfer files (any threads: the model ranks
   * schedules within a workload, and what is fast on one core mostly stays so) */
  if (o->records_path &&
      tun_records_load(&own, o->records_path, t, o->version, o->threads, 1, err) < 0)
    goto out;
  for (int i = 0; i < o->n_transfer; i++)
    if (tun_records_load(&transfer[i], o->transfer_paths[i], t, o->version, 0, 0, err) < 0) goto out;
  resume(&tu, &own);
  if (o->strategy == TUN_MODEL) {
    const tun_record_set **sets = calloc((size_t)o->n_transfer + 2, sizeof *sets);
    if (!sets) {
      gir_errf(err, "out of memory");
      goto out;
    }
    sets[0] = &own;
    for (int i = 0; i < o->n_transfer; i++) sets[i + 1] = &transfer[i];
    fit_global(&tu, sets, o->n_transfer + 1);
    free((void *)sets);
    for (int i = 0; i < ts->n; i++) fit_local(&tu, &tu.st[i]);
  }
  if (o->records_path && !(tu.rec = fopen(o->records_path, "a"))) {
    gir_errf(err, "cannot append to the records '%s'", o->records_path);
    goto out;
  }
  /* the defaults first, every task's: the bars to beat, and what a task keeps when
   * nothing beats it (a tuned schedule is applied only where it beat its default) */
  for (int i = 0; i < ts->n && tu.total_trials < o->trials; i++) {
    task_state *s = &tu.st[i];
    if (s->default_done) continue;
    if (o->time_budget_s > 0 && wall_s() - tu.t0 >= o->time_budget_s) break;
    if (s->task->has_defaults) set_add(&s->measured, tun_space_index(&s->task->space, s->task->defaults));
    if (measure_batch(&tu, s, NULL, 0, 1, err) < 0) goto out;
    progress(&tu, i);
  }
  for (;;) {
    int64_t left = o->trials - tu.total_trials;
    if (left <= 0) break;
    if (o->time_budget_s > 0 && wall_s() - tu.t0 >= o->time_budget_s) break;
    int32_t ti = pick_task(&tu);
    if (ti < 0) break;
    if (round_of(&tu, ti, left, err) < 0) goto out;
    progress(&tu, ti);
  }
  if (o->progress && o->progress_tty && tu.last_task >= 0) fputc('\n', o->progress);
  /* the closing check, every task whose best beat its default */
  int64_t conf_id = tun_check_id();
  for (int i = 0; i < ts->n && o->confirm_pairs > 0; i++) {
    task_state *s = &tu.st[i];
    if (!s->has_best || !(s->default_s > 0) || !(s->best_s > 0) || s->best_s >= s->default_s) continue;
    if (o->time_budget_s > 0 && wall_s() - tu.t0 >= o->time_budget_s) break;
    if (confirm_task(&tu, s, conf_id, err) < 0) goto out;
  }
  /* results */
  res->n = ts->n;
  res->tasks = calloc((size_t)ts->n + 1, sizeof *res->tasks);
  if (!res->tasks) {
    gir_errf(err, "out of memory");
    goto out;
  }
  for (int i = 0; i < ts->n; i++) {
    task_state *s = &tu.st[i];
    tun_task_result *r = &res->tasks[i];
    r->trials = s->trials;
    r->errors = s->errors;
    r->default_s = s->default_s;
    r->best_s = s->best_s;
    r->has_best = s->has_best;
    if (s->confirmed) {
      r->confirmed = 1;
      r->default_s = s->conf_default_s;
      r->best_s = s->kept ? s->conf_best_s : -1;
      r->has_best = s->kept;
    }
    memcpy(r->best, s->best, sizeof r->best);
    r->resumed = s->resumed;
    r->curve = s->curve;
    s->curve = NULL;
  }
  res->seconds = wall_s() - tu.t0;
  res->trials = tu.total_trials;
  res->transfer_records = tu.transfer_rows;
  rc = 0;
out:
  if (tu.rec) fclose(tu.rec);
  for (int i = 0; tu.st && i < ts->n; i++) {
    task_state *s = &tu.st[i];
    tun_cache_free(s->cache);
    tun_sa_free(s->sa);
    free(s->measured.s);
    rows_free(&s->data);
    tun_model_free(s->local);
    free(s->curve);
  }
  free(tu.st);
  tun_model_free(tu.global);
  tun_records_free(&own);
  for (int i = 0; transfer && i < o->n_transfer; i++) tun_records_free(&transfer[i]);
  free(transfer);
  return rc;
}

void tun_result_free(tun_result *r) {
  for (int i = 0; r->tasks && i < r->n; i++) free(r->tasks[i].curve);
  free(r->tasks);
  memset(r, 0, sizeof *r);
}
