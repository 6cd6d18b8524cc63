/* tun_records.c — tuning records: one JSON object per line (cJSON), appended and
 * flushed one measurement at a time, so a killed tune loses at most the line it
 * was writing and the next run resumes from the file. A record holds the
 * workload key and its hash, the template, the target and this machine's CPU
 * model, the knobs by name (or "default" for the default schedule), the median
 * cost and the repeats, the error ("" when it ran), the time, the kiln version,
 * the FLOPs, and the loop-IR features (so another tune's global model can learn
 * from it without rebuilding its workload).
 *
 * Loading keeps the records this machine can use: same target name and CPU model,
 * a compatible kiln version (same major.minor) and record format; the rest, and
 * lines that do not parse (the half line of a killed run), are counted.
 *
 * tun_apply is the lowering hook `kiln compile --records` uses: per workload, the
 * fastest record without error, applied only when it beats the default schedule's
 * record (a workload whose default was never measured keeps its default). Where a
 * tune ended with its side-by-side check (records with a confirm id: the default and
 * the best point measured alternately, minutes after the default's first
 * measurement), that check decides instead: the point of its latest check is applied
 * only when the median of its measurements beats the default's median there by
 * TUN_CONFIRM_MARGIN — one measurement each, taken at different moments, differed by
 * up to 40% on a shared VM, and a gain that small on one core did not survive a
 * two-thread model run. Where the tune ended with the in-model check (records with a
 * model id, cli/tune_check.c: the per-workload kernel times inside whole-model runs of
 * the default and the tuned bundle, alternating), that check decides when it is the
 * later one: a point one core timed faster can be slower among the other kernels of a
 * run on every thread, and the reverse. Records say how many threads their kernel
 * ran on; per workload only those measured on the most threads compete (a cost on two
 * threads is not comparable to one on one).
 *
 * The model check itself compiles with the hook in two other modes: every
 * workload's candidate (its check's point, or its best that beat the default,
 * whatever the checks said) applied, or none applied; both say which kernels the
 * candidates' groups became. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tun_internal.h"

int tun_version_compatible(const char *a, const char *b) {
  if (!a || !b) return 0;
  const char *da = strchr(a, '.'), *db = strchr(b, '.');
  if (!da || !db) return !strcmp(a, b);
  const char *ea = strchr(da + 1, '.'), *eb = strchr(db + 1, '.');
  size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
  return la == lb && !strncmp(a, b, la);
}

int tun_record_write(FILE *f, const tun_record *r, gir_err *err) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return gir_errf(err, "out of memory");
  cJSON_AddNumberToObject(o, "v", TUN_RECORD_FORMAT);
  cJSON_AddStringToObject(o, "kiln", r->version ? r->version : "");
  cJSON_AddStringToObject(o, "workload", r->key);
  cJSON_AddStringToObject(o, "hash", r->hash);
  cJSON_AddStringToObject(o, "template", r->tmpl ? r->tmpl : "");
  cJSON_AddStringToObject(o, "target", r->target ? r->target : "");
  cJSON_AddStringToObject(o, "cpu", r->cpu ? r->cpu : "");
  if (r->is_default) {
    cJSON_AddStringToObject(o, "knobs", "default");
  } else {
    cJSON *k = cJSON_AddObjectToObject(o, "knobs");
    for (int i = 0; k && i < r->n_knobs; i++) cJSON_AddNumberToObject(k, r->knob_names[i], r->knob_values[i]);
  }
  cJSON_AddNumberToObject(o, "cost", r->cost);
  cJSON *costs = cJSON_AddArrayToObject(o, "costs");
  for (int i = 0; costs && i < r->n_costs; i++) cJSON_AddItemToArray(costs, cJSON_CreateNumber(r->costs[i]));
  cJSON_AddStringToObject(o, "error", r->error ? r->error : "");
  cJSON_AddNumberToObject(o, "time", r->time);
  cJSON_AddNumberToObject(o, "threads", r->threads > 0 ? r->threads : 1);
  if (r->confirm > 0) cJSON_AddNumberToObject(o, "confirm", (double)r->confirm);
  if (r->model > 0) cJSON_AddNumberToObject(o, "model", (double)r->model);
  cJSON_AddNumberToObject(o, "flops", (double)r->flops);
  cJSON_AddNumberToObject(o, "fv", TUN_FEATURE_VERSION);
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!text) return gir_errf(err, "out of memory");
  /* features by hand: four decimals keep a line short (cJSON prints 17 digits) */
  size_t len = strlen(text);
  text[len - 1] = 0; /* the closing brace */
  int bad = fputs(text, f) < 0;
  free(text);
  if (r->features && r->n_features > 0) {
    bad |= fputs(",\"features\":[", f) < 0;
    for (int i = 0; i < r->n_features && !bad; i++) {
      float v = r->features[i];
      if (v == 0) bad |= fputs(i ? ",0" : "0", f) < 0;
      else bad |= fprintf(f, "%s%.4g", i ? "," : "", (double)v) < 0;
    }
    bad |= fputs("]", f) < 0;
  }
  bad |= fputs("}\n", f) < 0;
  if (bad || fflush(f) != 0) return gir_errf(err, "writing the records: %s", strerror(errno));
  return 0;
}

static const char *str_of(const cJSON *o, const char *name) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(j) ? j->valuestring : NULL;
}

static int num_of(const cJSON *o, const char *name, double *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsNumber(j)) return 0;
  *out = j->valuedouble;
  return 1;
}

/* One line into r (strings in a); 0 when it is a well-formed record. */
static int parse_line(const char *line, gir_arena *a, tun_record *r) {
  cJSON *o = cJSON_Parse(line);
  if (!o) return -1;
  memset(r, 0, sizeof *r);
  int ok = cJSON_IsObject(o);
  double v = 0, flops = 0, fv = 0;
  const char *key = str_of(o, "workload"), *tmpl = str_of(o, "template"), *target = str_of(o, "target");
  const char *cpu = str_of(o, "cpu"), *ver = str_of(o, "kiln"), *error = str_of(o, "error");
  ok = ok && num_of(o, "v", &v) && key && tmpl && target && cpu && ver && error && num_of(o, "cost", &r->cost) &&
       num_of(o, "time", &r->time);
  if (ok) {
    double threads = 1;
    num_of(o, "threads", &threads);
    r->threads = threads >= 1 && threads <= 4096 ? (int32_t)threads : 1;
    double confirm = 0;
    num_of(o, "confirm", &confirm);
    r->confirm = confirm >= 1 && confirm < 9e15 ? (int64_t)confirm : 0;
    double model = 0;
    num_of(o, "model", &model);
    r->model = model >= 1 && model < 9e15 ? (int64_t)model : 0;
    num_of(o, "flops", &flops);
    r->flops = (int64_t)flops;
    r->key = gir_arena_strdup(a, key);
    tun_key_hash(key, r->hash);
    r->tmpl = gir_arena_strdup(a, tmpl);
    r->target = gir_arena_strdup(a, target);
    r->cpu = gir_arena_strdup(a, cpu);
    r->version = gir_arena_strdup(a, ver);
    r->error = gir_arena_strdup(a, error);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "knobs");
    if (cJSON_IsString(k) && !strcmp(k->valuestring, "default")) {
      r->is_default = 1;
    } else if (cJSON_IsObject(k)) {
      int n = cJSON_GetArraySize(k);
      if (n > TUN_MAX_KNOBS) ok = 0;
      r->knob_names = gir_arena_calloc(a, (size_t)n + 1, sizeof *r->knob_names);
      r->knob_values = gir_arena_calloc(a, (size_t)n + 1, sizeof *r->knob_values);
      const cJSON *e;
      cJSON_ArrayForEach(e, k) {
        if (!ok || !cJSON_IsNumber(e) || fabs(e->valuedouble) > 1e9) {
          ok = 0;
          break;
        }
        r->knob_names[r->n_knobs] = gir_arena_strdup(a, e->string);
        r->knob_values[r->n_knobs++] = (int32_t)e->valuedouble;
      }
    } else {
      ok = 0;
    }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "features");
    if (ok && num_of(o, "fv", &fv) && fv == TUN_FEATURE_VERSION && cJSON_IsArray(f) &&
        cJSON_GetArraySize(f) == TUN_N_FEATURES) {
      r->features = gir_arena_calloc(a, TUN_N_FEATURES, sizeof *r->features);
      int i = 0;
      const cJSON *e;
      cJSON_ArrayForEach(e, f) r->features[i++] = cJSON_IsNumber(e) ? (float)e->valuedouble : 0.0f;
      r->n_features = TUN_N_FEATURES;
    }
    ok = ok && v == TUN_RECORD_FORMAT;
  }
  cJSON_Delete(o);
  return ok ? 0 : -1;
}

int tun_records_load(tun_record_set *set, const char *path, const tun_target *t, const char *version, int32_t threads,
                     int missing_ok, gir_err *err) {
  if (!set->arena && !(set->arena = gir_arena_new())) return gir_errf(err, "out of memory");
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno == ENOENT && missing_ok) return 0;
    return gir_errf(err, "cannot read the records '%s': %s", path, strerror(errno));
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    if (len == 1 && line[0] == '\n') continue;
    tun_record r;
    if (len > (1 << 20) || parse_line(line, set->arena, &r) < 0) {
      set->malformed++;
      continue;
    }
    if (strcmp(r.target, t->name)) {
      set->other_target++;
      continue;
    }
    if (strcmp(r.cpu, t->cpu)) {
      set->other_cpu++;
      continue;
    }
    if (!tun_version_compatible(r.version, version)) {
      set->other_version++;
      continue;
    }
    if (threads > 0 && r.threads != threads) {
      set->other_threads++;
      continue;
    }
    if (set->n == set->cap) {
      int32_t nc = set->cap ? set->cap * 2 : 256;
      tun_record *g = gir_arena_grow(set->arena, set->r, (size_t)set->n, (size_t)nc, sizeof *g);
      if (!g) {
        free(line);
        fclose(f);
        return gir_errf(err, "out of memory");
      }
      set->r = g;
      set->cap = nc;
    }
    set->r[set->n++] = r;
  }
  free(line);
  fclose(f);
  return 0;
}

void tun_records_free(tun_record_set *set) {
  gir_arena_free(set->arena);
  memset(set, 0, sizeof *set);
}

/* ---- applying the best records ---- */
typedef struct best_entry {
  const char *key;
  int32_t threads;         /* the most threads any of its records was measured on: only those count */
  const tun_record *best;  /* fastest error-free non-default record */
  double default_cost;     /* < 0: not measured */
  /* the latest side-by-side check: its point, and the costs of both sides */
  int64_t confirm;
  const tun_record *conf_pt;
  double conf_def[16], conf_best[16];
  int32_t n_def, n_best;
  /* the latest in-model check: its point and both sides' medians (< 0: none) */
  int64_t model;
  const tun_record *model_pt;
  double model_def, model_best;
} best_entry;

struct tun_apply {
  const tun_target *t;
  gir_arena *arena;
  best_entry *e;
  int32_t n;
  tun_apply_mode mode;
  lower_tuning hook;
  /* the group being lowered */
  const gir_node *const *nodes;
  int32_t n_nodes;
  const gir_value *const *outs;
  int32_t n_outs;
  const char *kernel;
  int group_matched;
  int32_t groups, matched;
  /* the kernels of the groups whose workload had a point to apply (in the mode) */
  tun_apply_kernel *kernels;
  int32_t n_kernels, cap_kernels;
};

static const best_entry *lookup_key(const tun_apply *ap, const char *key) {
  for (int i = 0; key && i < ap->n; i++)
    if (!strcmp(ap->e[i].key, key)) return &ap->e[i];
  return NULL;
}

/* The trials' fastest point, where it beat the default measured with it. */
static const tun_record *trial_best(const best_entry *e) {
  return e && e->best && e->default_cost > 0 && e->best->cost < e->default_cost ? e->best : NULL;
}

/* The point a check was made on, or the best that beat the default in the trials. */
static const tun_record *candidate(const best_entry *e) {
  if (e && e->conf_pt && e->confirm >= e->model) return e->conf_pt;
  if (e && e->model_pt) return e->model_pt;
  return trial_best(e);
}

/* The record to apply: only one that beat the default schedule measured with it —
 * side by side, by the margin, where a check was made (the later of the two checks). */
static const tun_record *usable(const best_entry *e) {
  if (e && e->model_pt && e->model_def > 0 && e->model_best > 0 && e->model > e->confirm)
    return e->model_best < (1 - TUN_CONFIRM_MARGIN) * e->model_def ? e->model_pt : NULL;
  if (e && e->conf_pt && e->n_def > 0 && e->n_best > 0)
    return tun_median(e->conf_best, e->n_best) < (1 - TUN_CONFIRM_MARGIN) * tun_median(e->conf_def, e->n_def)
               ? e->conf_pt
               : NULL;
  return trial_best(e);
}

static const tun_record *pick(const tun_apply *ap, const best_entry *e) {
  return ap->mode == TUN_APPLY_CHECKED ? usable(e) : candidate(e);
}

/* A record of a side-by-side check into its entry: a later check replaces an earlier one. */
static void add_confirm(best_entry *e, const tun_record *r) {
  if (r->confirm < e->confirm) return;
  if (r->confirm > e->confirm) {
    e->confirm = r->confirm;
    e->conf_pt = NULL;
    e->n_def = e->n_best = 0;
  }
  if (r->is_default) {
    if (e->n_def < 16) e->conf_def[e->n_def++] = r->cost;
  } else if (!e->conf_pt || (e->conf_pt->n_knobs == r->n_knobs && !memcmp(e->conf_pt->knob_values, r->knob_values,
                                                                         sizeof *r->knob_values * (size_t)r->n_knobs))) {
    e->conf_pt = r;
    if (e->n_best < 16) e->conf_best[e->n_best++] = r->cost;
  }
}

/* A record of an in-model check (one per side, its cost the median): the latest check wins. */
static void add_model(best_entry *e, const tun_record *r) {
  if (r->model < e->model) return;
  if (r->model > e->model) {
    e->model = r->model;
    e->model_pt = NULL;
    e->model_def = e->model_best = -1;
  }
  if (r->error[0] || !(r->cost > 0)) return;
  if (r->is_default) e->model_def = r->cost;
  else e->model_pt = r, e->model_best = r->cost;
}

static void ap_group(void *self, const gir_node *const *nodes, int32_t n_nodes, const gir_value *const *outs,
                     int32_t n_outs, const char *kernel, const lower_target *t) {
  tun_apply *ap = self;
  (void)t;
  ap->nodes = nodes;
  ap->n_nodes = n_nodes;
  ap->outs = outs;
  ap->n_outs = n_outs;
  ap->kernel = kernel;
  ap->group_matched = 0;
  ap->groups++;
}

/* The group being lowered has a point to apply (r, of workload e): counts it and notes its kernel. */
static void matched(tun_apply *ap, const best_entry *e, const tun_record *r) {
  if (ap->group_matched) return;
  ap->group_matched = 1;
  ap->matched++;
  if (ap->n_kernels == ap->cap_kernels) {
    int32_t nc = ap->cap_kernels ? 2 * ap->cap_kernels : 32;
    tun_apply_kernel *k = gir_arena_grow(ap->arena, ap->kernels, (size_t)ap->n_kernels, (size_t)nc, sizeof *k);
    if (!k) return; /* the list is for the model check; an allocation failure there shows as a missing kernel */
    ap->kernels = k;
    ap->cap_kernels = nc;
  }
  const char *name = gir_arena_strdup(ap->arena, ap->kernel ? ap->kernel : "");
  ap->kernels[ap->n_kernels++] = (tun_apply_kernel){.kernel = name, .key = e->key, .point = r};
}

static void ap_knobs(void *self, const char *tmpl, const lower_knob *knobs, int32_t n, void *cfg) {
  tun_apply *ap = self;
  tun_group g = {ap->nodes, ap->n_nodes, ap->outs, ap->n_outs};
  gir_arena *tmp = gir_arena_new();
  if (!tmp) return;
  const best_entry *e = lookup_key(ap, tun_key_template(tmp, tmpl, tun_group_anchor(&g), ap->t));
  const tun_record *r = pick(ap, e);
  gir_arena_free(tmp);
  if (!r || strcmp(r->tmpl, tmpl)) return;
  /* every knob of the record must be one of the template's */
  for (int i = 0; i < r->n_knobs; i++) {
    int found = 0;
    for (int j = 0; j < n; j++) found |= !strcmp(knobs[j].name, r->knob_names[i]);
    if (!found) return;
  }
  /* a knob the record does not name came after it: 0 where 0 is in its range (a knob
   * added later means "as before" at 0 — schedule/tuning.c), else the default's value */
  static const int32_t zero = 0;
  for (int j = 0; j < n && ap->mode != TUN_APPLY_NONE; j++) {
    int named = 0;
    for (int i = 0; i < r->n_knobs; i++) named |= !strcmp(knobs[j].name, r->knob_names[i]);
    if (!named && knobs[j].lo <= 0) memcpy((char *)cfg + knobs[j].offset, &zero, sizeof zero);
  }
  for (int i = 0; i < r->n_knobs && ap->mode != TUN_APPLY_NONE; i++)
    for (int j = 0; j < n; j++)
      if (!strcmp(knobs[j].name, r->knob_names[i])) memcpy((char *)cfg + knobs[j].offset, &r->knob_values[i], sizeof(int32_t));
  matched(ap, e, r);
}

static int ap_schedule(void *self, sch_schedule *s, const lower_target *t) {
  tun_apply *ap = self;
  if (!ap->nodes) return 0;
  tun_group g = {ap->nodes, ap->n_nodes, ap->outs, ap->n_outs};
  gir_arena *tmp = gir_arena_new();
  if (!tmp) return 0;
  const best_entry *e = lookup_key(ap, tun_key_generic(tmp, &g, ap->t));
  const tun_record *r = pick(ap, e);
  if (!r || strcmp(r->tmpl, "generic")) {
    gir_arena_free(tmp);
    return 0;
  }
  /* rebuild the generated space of this group and find the record's point in it */
  tun_space sp;
  gir_err gerr = {{0}};
  int rc = 0;
  if (tun_space_generic(&sp, &g, ap->t, tmp, &gerr) == 0 && sp.n_knobs == r->n_knobs) {
    int32_t values[TUN_MAX_KNOBS];
    int ok = 1;
    for (int i = 0; i < sp.n_knobs && ok; i++) {
      int j = 0;
      while (j < r->n_knobs && strcmp(r->knob_names[j], sp.knobs[i].name)) j++;
      ok = j < r->n_knobs;
      if (ok) values[i] = r->knob_values[j];
    }
    char why[160];
    if (ok && tun_space_index(&sp, values) >= 0 && tun_space_check(&sp, values, why, sizeof why) == 0) {
      if (ap->mode != TUN_APPLY_NONE) rc = tun_generic_apply(&sp, values, s, t) < 0 ? -1 : 1;
      if (rc == 1 || ap->mode == TUN_APPLY_NONE) matched(ap, e, r);
    }
  }
  gir_arena_free(tmp);
  return rc;
}

tun_apply *tun_apply_new(const tun_record_set *set, const tun_target *t) {
  tun_apply *ap = calloc(1, sizeof *ap);
  if (!ap) return NULL;
  ap->t = t;
  ap->arena = gir_arena_new();
  ap->e = ap->arena ? gir_arena_calloc(ap->arena, (size_t)set->n + 1, sizeof *ap->e) : NULL;
  if (!ap->e) {
    tun_apply_free(ap);
    return NULL;
  }
  for (int i = 0; i < set->n; i++) {
    const tun_record *r = &set->r[i];
    best_entry *e = (best_entry *)lookup_key(ap, r->key);
    if (!e) {
      e = &ap->e[ap->n++];
      e->key = r->key;
      e->default_cost = -1;
      e->model_def = e->model_best = -1;
    }
    if (r->model > 0) { /* in-model checks ran the whole model: apart from the trials' thread counts */
      add_model(e, r);
      continue;
    }
    if (r->threads < e->threads) continue;
    if (r->threads > e->threads) { /* a setting with more threads: what was kept does not compare */
      e->threads = r->threads;
      e->best = NULL;
      e->default_cost = -1;
      e->confirm = 0;
      e->conf_pt = NULL;
      e->n_def = e->n_best = 0;
    }
    if (r->error[0] || !(r->cost > 0)) continue;
    if (r->confirm > 0) {
      add_confirm(e, r);
    } else if (r->is_default) {
      if (e->default_cost < 0 || r->cost < e->default_cost) e->default_cost = r->cost;
    } else if (!e->best || r->cost < e->best->cost) {
      e->best = r;
    }
  }
  ap->hook = (lower_tuning){.self = ap, .group = ap_group, .schedule = ap_schedule, .knobs = ap_knobs};
  return ap;
}

const lower_tuning *tun_apply_hook(tun_apply *a) { return &a->hook; }

void tun_apply_set_mode(tun_apply *a, tun_apply_mode mode) { a->mode = mode; }

const tun_apply_kernel *tun_apply_kernels(const tun_apply *a, int32_t *n) {
  *n = a->n_kernels;
  return a->kernels;
}

void tun_apply_stats(const tun_apply *a, int32_t *groups, int32_t *matched, int32_t *workloads) {
  *groups = a->groups;
  *matched = a->matched;
  int32_t w = 0;
  for (int i = 0; i < a->n; i++) w += pick(a, &a->e[i]) != NULL;
  *workloads = w;
}

void tun_apply_free(tun_apply *a) {
  if (!a) return;
  gir_arena_free(a->arena);
  free(a);
}
