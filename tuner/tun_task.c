/* tun_task.c — the tasks of a model: its unique tunable groups. The probe is a
 * lower_tuning hook handed to kiln_compile_front: it changes nothing and records,
 * for every group lowering sees, the members, the values handed on, and (from the
 * template's knob callback) which template scheduled it with which defaults.
 * tun_tasks_build then keys every group (tun_key.c), merges equal keys into one
 * task counting its occurrences, builds each task's space, and orders tasks by
 * the work they stand for: FLOPs × occurrences. */
#include <stdlib.h>
#include <string.h>
#include "flops.h"
#include "tun_internal.h"

typedef struct probe_group {
  const gir_node **nodes;
  int32_t n_nodes;
  const gir_value **outs;
  int32_t n_outs;
  char tmpl[16];                  /* "" when no tunable template ran */
  int32_t defaults[TUN_MAX_KNOBS];
  int32_t n_templates;            /* template runs in the group */
} probe_group;

struct tun_probe {
  gir_arena *arena;
  probe_group *g;
  int32_t n, cap;
  lower_tuning hook;
  int oom;
};

static void probe_group_cb(void *self, const gir_node *const *nodes, int32_t n_nodes, const gir_value *const *outs,
                           int32_t n_outs, const char *kernel, const lower_target *t) {
  tun_probe *p = self;
  (void)t;
  (void)kernel;
  if (p->n == p->cap) {
    int32_t nc = p->cap ? p->cap * 2 : 64;
    probe_group *g = gir_arena_grow(p->arena, p->g, (size_t)p->n, (size_t)nc, sizeof *g);
    if (!g) {
      p->oom = 1;
      return;
    }
    p->g = g;
    p->cap = nc;
  }
  probe_group *g = &p->g[p->n];
  memset(g, 0, sizeof *g);
  g->nodes = gir_arena_calloc(p->arena, (size_t)n_nodes + 1, sizeof *g->nodes);
  g->outs = gir_arena_calloc(p->arena, (size_t)n_outs + 1, sizeof *g->outs);
  if (!g->nodes || !g->outs) {
    p->oom = 1;
    return;
  }
  memcpy(g->nodes, nodes, sizeof *nodes * (size_t)n_nodes);
  memcpy(g->outs, outs, sizeof *outs * (size_t)n_outs);
  g->n_nodes = n_nodes;
  g->n_outs = n_outs;
  p->n++;
}

static void probe_knobs_cb(void *self, const char *tmpl, const lower_knob *knobs, int32_t n, void *cfg) {
  tun_probe *p = self;
  if (!p->n) return;
  probe_group *g = &p->g[p->n - 1];
  g->n_templates++;
  snprintf(g->tmpl, sizeof g->tmpl, "%s", tmpl);
  for (int i = 0; i < n && i < TUN_MAX_KNOBS; i++) memcpy(&g->defaults[i], (const char *)cfg + knobs[i].offset, sizeof(int32_t));
}

tun_probe *tun_probe_new(const tun_target *t) {
  (void)t;
  tun_probe *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->arena = gir_arena_new();
  if (!p->arena) {
    free(p);
    return NULL;
  }
  p->hook = (lower_tuning){.self = p, .group = probe_group_cb, .knobs = probe_knobs_cb};
  return p;
}

const lower_tuning *tun_probe_hook(tun_probe *p) { return &p->hook; }

void tun_probe_free(tun_probe *p) {
  if (!p) return;
  gir_arena_free(p->arena);
  free(p);
}

static int64_t dimv(const gir_value *v, int d) { return v && d >= 0 && d < v->shape.rank ? v->shape.dims[d] : 1; }

static void label_of(tun_task *k, const gir_node *anchor, const tun_group *g) {
  const char *tm = k->space.tmpl;
  if (!strcmp(tm, "conv")) {
    const gir_value *x = anchor->in[0], *w = anchor->in[1], *y = anchor->out[0];
    int32_t ns = 0, nd = 0;
    const int64_t *st = gir_attr_ints(anchor, "strides", &ns), *dl = gir_attr_ints(anchor, "dilations", &nd);
    int64_t grp = gir_attr_int(anchor, "group", 1);
    int64_t sh = st && ns ? st[0] : 1, sw = st && ns > 1 ? st[1] : sh;
    char sbuf[32];
    if (sh == sw) snprintf(sbuf, sizeof sbuf, "%lld", (long long)sh);
    else snprintf(sbuf, sizeof sbuf, "%lldx%lld", (long long)sh, (long long)sw);
    snprintf(k->label, sizeof k->label, "conv %lldx%lldx%lld k%lldx%lld s%s%s%s -> %lldx%lldx%lld",
             (long long)(dimv(x, 1) * dimv(x, 4)), (long long)dimv(x, 2), (long long)dimv(x, 3), (long long)dimv(w, 2),
             (long long)dimv(w, 3), sbuf, dl && nd && dl[0] > 1 ? " dil" : "",
             grp > 1 ? (k->space.depthwise ? " dw" : " grp") : "", (long long)(dimv(y, 1) * dimv(y, 4)),
             (long long)dimv(y, 2), (long long)dimv(y, 3));
    return;
  }
  if (!strcmp(tm, "matmul")) {
    const gir_value *a = anchor->in[0], *y = anchor->out[0];
    int r = y->shape.rank;
    int64_t batch = 1;
    for (int d = 0; d < r - 2; d++) batch *= y->shape.dims[d];
    snprintf(k->label, sizeof k->label, "matmul %s%lldx%lldx%lld", batch > 1 ? "batched " : "",
             (long long)dimv(y, r - 2), (long long)dimv(a, a->shape.rank - 1), (long long)dimv(y, r - 1));
    return;
  }
  size_t o = (size_t)snprintf(k->label, sizeof k->label, "generic ");
  for (int j = 0; j < g->n_nodes && o < sizeof k->label - 24; j++)
    o += (size_t)snprintf(k->label + o, sizeof k->label - o, "%s%s", j ? "+" : "", gir_op_name(g->nodes[j]->op));
  char sh[160];
  snprintf(k->label + o, sizeof k->label - o, " %s", gir_shape_str(&g->outs[0]->shape, sh, sizeof sh));
}

static int task_cmp(const void *a, const void *b) {
  const tun_task *x = a, *y = b;
  double wx = (double)x->flops * x->occurrences, wy = (double)y->flops * y->occurrences;
  if (wx != wy) return wx > wy ? -1 : 1;
  return x->id - y->id;
}

/* Whether a group that no template covers is worth a generated space: float
 * outputs and enough elements for the schedule to matter. The Winograd transforms
 * have a schedule of their own (schedule/sched_winograd.c: a tile's points unrolled,
 * which is what folds their selects); a generated space has no such point and only
 * spends compile time on their large unrolled bodies. */
static int generic_worth(const probe_group *pg) {
  for (int i = 0; i < pg->n_nodes; i++)
    if (pg->nodes[i]->op == GIR_OP_winograd_in || pg->nodes[i]->op == GIR_OP_winograd_out) return 0;
  int64_t numel = 0;
  for (int i = 0; i < pg->n_outs; i++) {
    if (!gir_dtype_is_float(pg->outs[i]->dtype)) return 0;
    numel += gir_value_numel(pg->outs[i]);
  }
  return numel >= 4096;
}

int tun_tasks_build(const tun_probe *p, const tun_target *t, int keep_generic, tun_tasks *out, gir_err *err) {
  memset(out, 0, sizeof *out);
  if (p->oom) return gir_errf(err, "out of memory while probing the groups");
  out->arena = gir_arena_new();
  if (!out->arena) return gir_errf(err, "out of memory");
  out->tasks = gir_arena_calloc(out->arena, (size_t)p->n + 1, sizeof *out->tasks);
  if (!out->tasks) return gir_errf(err, "out of memory");
  out->n_groups = p->n;
  for (int gi = 0; gi < p->n; gi++) {
    const probe_group *pg = &p->g[gi];
    tun_group g = {pg->nodes, pg->n_nodes, pg->outs, pg->n_outs};
    int templ = pg->tmpl[0] && pg->n_templates == 1;
    if (!templ && !(keep_generic && generic_worth(pg))) {
      out->n_skipped++;
      continue;
    }
    const gir_node *anchor = tun_group_anchor(&g);
    const char *key = templ ? tun_key_template(out->arena, pg->tmpl, anchor, t) : tun_key_generic(out->arena, &g, t);
    if (!key) return gir_errf(err, "out of memory");
    int64_t flops = 0;
    for (int j = 0; j < g.n_nodes; j++) flops = gir_flops_add(flops, gir_node_flops(g.nodes[j]));
    tun_task *k = NULL;
    for (int i = 0; i < out->n && !k; i++)
      if (!strcmp(out->tasks[i].key, key)) k = &out->tasks[i];
    if (k) {
      k->occurrences++;
      continue;
    }
    k = &out->tasks[out->n];
    memset(k, 0, sizeof *k);
    k->id = out->n;
    k->key = key;
    tun_key_hash(key, k->hash);
    k->group = g;
    k->occurrences = 1;
    k->flops = flops;
    for (int i = 0; i < TUN_MAX_KNOBS; i++) k->defaults[i] = -1;
    if (templ) {
      if (tun_space_template(&k->space, pg->tmpl, anchor, pg->defaults, &t->lower) < 0) {
        out->n_skipped++;
        continue;
      }
      memcpy(k->defaults, pg->defaults, sizeof k->defaults);
      k->has_defaults = tun_space_index(&k->space, k->defaults) >= 0;
    } else {
      gir_err gerr = {{0}};
      if (tun_space_generic(&k->space, &g, t, out->arena, &gerr) < 0) {
        out->n_skipped++;
        continue;
      }
    }
    label_of(k, anchor, &g);
    out->n++;
  }
  qsort(out->tasks, (size_t)out->n, sizeof *out->tasks, task_cmp);
  for (int i = 0; i < out->n; i++) out->tasks[i].id = i;
  return 0;
}

void tun_tasks_free(tun_tasks *ts) {
  gir_arena_free(ts->arena);
  memset(ts, 0, sizeof *ts);
}
