/* simplify.c — the engine that runs the rewrite rules of simplify_rules.c.
 *
 * A sweep walks the nodes in order; for each live node it tries the rules of
 * the node's op, row by row, and applies the first whose pattern matches and
 * whose rewrite accepts (a rewrite may decline on a condition a pattern cannot
 * state, such as "the perm is the identity"). A node edited in place is tried
 * again at once. After a sweep the graph is put back in topological order
 * (rewrites append nodes, e.g. the scaled weights of a conv), dead nodes are
 * dropped, and common subexpressions are merged; sweeps repeat until neither
 * the rules nor CSE change anything.
 *
 * Rewrites never delete nodes: they redirect consumers (gir_replace_uses) and
 * retire the node (n_out = 0, as gir_fold_node does), leaving compaction to
 * remove it. Use counts are recomputed lazily after any change, counting only
 * consumers that are still live, which is what the "only consumer" condition
 * of the conv folds needs. */
#include "simplify.h"
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SWEEPS 32
#define MAX_TRIES_PER_NODE 8 /* in-place rewrites of one node in a row */
#define MAX_CONST_DEPTH 32   /* constant-derived chains longer than this are not looked through */

struct gir_sx {
  gir_graph *g;
  const gir_evaluator *ev;
  gir_err *err;
  gir_arena *tmp;
  int32_t *uses;
  int32_t n_counted, cap_counted;
  int dirty;
};

/* --- replacing values --- */

/* The output's name is part of the model's interface: a value that replaces an
 * output must be able to carry it, i.e. be written by a node of its own. */
int gir_can_replace_uses(const gir_value *old, const gir_value *nv) {
  return !old->is_output || (nv->producer && !nv->is_output && !nv->is_input && !nv->data);
}

/* Requires: nothing. Preserves: topological order when nv is produced no later than old. */
int gir_replace_uses(gir_graph *g, gir_value *old, gir_value *nv) {
  assert(old != nv && old->dtype == nv->dtype && gir_shape_equal(&old->shape, &nv->shape));
  if (!gir_can_replace_uses(old, nv)) return -1;
  if (old->string_bytes) nv->string_bytes = old->string_bytes; /* the same bytes: string slots stay strings */
  if (old->is_output) {
    for (int i = 0; i < g->n_outputs; i++)
      if (g->outputs[i] == old) g->outputs[i] = nv;
    nv->name = old->name;
    nv->is_output = 1;
    old->is_output = 0;
    nv->extent = old->extent, nv->extent_axis = old->extent_axis;
    old->extent = NULL;
  }
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i]->extent == old) g->outputs[i]->extent = nv;
  for (int k = 0; k < g->n_nodes; k++) {
    gir_node *n = g->nodes[k];
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j] == old) n->in[j] = nv;
    for (const gir_guard *d = n->guard; d; d = d->parent) /* guards are the graph's, shared by nodes */
      if (d->cond == old) ((gir_guard *)d)->cond = nv;
  }
  return 0;
}

/* --- engine services --- */

gir_graph *gir_sx_graph(gir_sx *s) { return s->g; }

void gir_sx_touch(gir_sx *s) { s->dirty = 1; }

static void count_uses(gir_sx *s) {
  gir_graph *g = s->g;
  if (g->n_values > s->cap_counted) {
    s->cap_counted = g->n_values * 2 + 16;
    s->uses = gir_arena_calloc(s->tmp, (size_t)s->cap_counted, sizeof *s->uses);
    if (!s->uses) abort(); /* out of memory, as graph.c treats it */
  }
  memset(s->uses, 0, (size_t)g->n_values * sizeof *s->uses);
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    if (!n->n_out) continue; /* retired */
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j]) s->uses[n->in[j]->id]++;
  }
  s->n_counted = g->n_values;
  s->dirty = 0;
}

int32_t gir_sx_uses(gir_sx *s, const gir_value *v) {
  if (s->dirty || v->id >= s->n_counted) count_uses(s);
  return s->uses[v->id];
}

static int const_derived_(const gir_value *v, int depth) {
  if (v->data) return 1;
  if (!v->producer || v->is_input || depth > MAX_CONST_DEPTH) return 0;
  const gir_node *p = v->producer;
  for (int i = 0; i < p->n_in; i++)
    if (p->in[i] && !const_derived_(p->in[i], depth + 1)) return 0;
  return 1;
}

int gir_sx_const_derived(const gir_value *v) { return const_derived_(v, 0); }

int gir_sx_replace_node(gir_sx *s, gir_node *n, gir_value *v) {
  assert(n->n_out == 1);
  if (gir_replace_uses(s->g, n->out[0], v) < 0) return 0;
  n->n_out = 0; /* retired: compaction removes it */
  s->dirty = 1;
  return 1;
}

void gir_sx_set_input(gir_sx *s, gir_node *n, int i, gir_value *v) {
  assert(i >= 0 && i <= n->n_in);
  if (i == n->n_in) {
    gir_value **in = gir_arena_calloc(s->g->arena, (size_t)n->n_in + 2, sizeof *in);
    if (!in) abort();
    memcpy(in, n->in, (size_t)n->n_in * sizeof *in);
    n->in = in;
    n->n_in++;
  }
  n->in[i] = v;
  s->dirty = 1;
}

/* Infers a node the engine made and folds it when it can. */
static gir_value *finish_node(gir_sx *s, gir_node *nd, const gir_node *origin) {
  nd->origin = origin ? origin->origin : NULL;
  if (gir_node_infer(s->g, nd, s->err) < 0) return NULL;
  gir_value *v = nd->out[0];
  int all_const = 1;
  for (int i = 0; i < nd->n_in; i++)
    if (nd->in[i] && !nd->in[i]->data) all_const = 0;
  if (s->ev && all_const) {
    gir_err e = {{0}};
    (void)gir_fold_node(s->ev, s->g, nd, &e); /* a fold that fails leaves the node to gir_fold_constants */
  }
  s->dirty = 1;
  return v;
}

gir_value *gir_sx_node(gir_sx *s, gir_op op, int fn, gir_value *const *ins, int32_t n_in, const gir_node *origin) {
  gir_node *nd = gir_node_new(s->g, op, NULL, ins, n_in, gir_op_outputs(op));
  if (fn >= 0) gir_attr_set_int(s->g, nd, "fn", fn);
  return finish_node(s, nd, origin);
}

gir_value *gir_sx_reshape(gir_sx *s, gir_value *v, int32_t rank, const int64_t *dims, const gir_node *origin) {
  gir_shape sh = gir_shape_make(rank, dims);
  if (gir_shape_equal(&sh, &v->shape)) return v;
  if (v->data) return gir_const_new(s->g, NULL, v->dtype, &sh, v->data);
  gir_node *nd = gir_node_new(s->g, GIR_OP_reshape, NULL, &v, 1, 1);
  gir_attr_set_ints(s->g, nd, "shape", dims, rank);
  return finish_node(s, nd, origin);
}

gir_value *gir_sx_zeros(gir_sx *s, gir_dtype t, const gir_shape *shape) {
  return gir_const_new(s->g, NULL, t, shape, NULL); /* arena memory is zeroed */
}

/* --- matching --- */

static int type_ok(gir_type_class c, gir_dtype t) {
  switch (c) {
  case GIR_TYPES_ANY: return 1;
  case GIR_TYPES_INT: return gir_dtype_is_int(t);
  case GIR_TYPES_FLOAT: return gir_dtype_is_float(t);
  case GIR_TYPES_BOOL: return t == GIR_BOOL;
  case GIR_TYPES_INT_OR_BOOL: return t == GIR_BOOL || gir_dtype_is_int(t);
  default: return 0;
  }
}

/* Every element of constant v satisfies cond. */
static int all_elements(const gir_value *v, gir_operand_cond cond) {
  size_t es = gir_dtype_size(v->dtype);
  if (!v->data || !es) return 0;
  int64_t n = gir_value_numel(v);
  const uint8_t *b = v->data;
  for (int64_t i = 0; i < n; i++) {
    int ok;
    if (cond == GIR_PAT_ALL_BITS) {
      if (v->dtype == GIR_BOOL) ok = b[i] != 0;
      else {
        ok = gir_dtype_is_int(v->dtype);
        for (size_t j = 0; j < es && ok; j++) ok = b[(size_t)i * es + j] == 0xff;
      }
    } else {
      double want = cond == GIR_PAT_ONE ? 1.0 : 0.0;
      ok = gir_dtype_is_float(v->dtype) ? gir_load_f64(v->dtype, v->data, i) == want
                                        : gir_load_i64(v->dtype, v->data, i) == (int64_t)want;
    }
    if (!ok) return 0;
  }
  return 1;
}

static int operand_ok(const gir_operand_pat *p, const gir_value *v) {
  switch (p->cond) {
  case GIR_PAT_ANY: return 1;
  case GIR_PAT_CONST: return v && v->data;
  case GIR_PAT_ZERO: case GIR_PAT_ONE: case GIR_PAT_ALL_BITS: return v && all_elements(v, p->cond);
  case GIR_PAT_FROM:
    return v && v->producer && v->producer->n_out && v->producer->op == p->op &&
           (p->fn < 0 || gir_attr_int(v->producer, "fn", -1) == p->fn);
  default: return 0;
  }
}

/* Tries rule r on n in each operand order the rule allows; 1 if it rewrote. */
static int try_rule(gir_sx *s, const gir_rule *r, gir_node *n) {
  if (n->op != r->op || n->n_in < 1) return 0;
  if (r->fn >= 0 && gir_attr_int(n, "fn", -1) != r->fn) return 0;
  int orders = (r->flags & GIR_RULE_COMMUTE) && n->n_in == 2 ? 2 : 1;
  for (int o = 0; o < orders; o++) {
    gir_match m = {.x = n->in[o], .k = n->n_in > 1 ? n->in[1 - o] : NULL, .swapped = o};
    if (!m.x || !type_ok(r->types, m.x->dtype)) continue;
    if ((r->flags & GIR_RULE_SAME) && m.x != m.k) continue;
    if ((r->flags & GIR_RULE_KEEPS_X) &&
        (n->out[0]->dtype != m.x->dtype || !gir_shape_equal(&n->out[0]->shape, &m.x->shape)))
      continue;
    /* last: a value condition may read a whole constant */
    if (!operand_ok(&r->in[0], m.x) || !operand_ok(&r->in[1], m.k)) continue;
    int rc = r->rewrite(s, n, &m);
    if (rc) return rc;
  }
  return 0;
}

static int node_live(gir_sx *s, const gir_node *n) {
  for (int j = 0; j < n->n_out; j++)
    if (n->out[j]->is_output || gir_sx_uses(s, n->out[j])) return 1;
  return 0;
}

/* One pass over the nodes; the number of rewrites, or -1. */
static int sweep(gir_sx *s, gir_simplify_stats *st) {
  int nr = gir_simplify_rule_count(), fired = 0;
  for (int k = 0; k < s->g->n_nodes; k++) { /* nodes appended by rewrites are visited too */
    gir_node *n = s->g->nodes[k];
    s->g->cur_guard = n->guard; /* what a rule adds runs where n did */
    for (int t = 0; t < MAX_TRIES_PER_NODE && n->n_out && node_live(s, n); t++) {
      int rc = 0, i;
      for (i = 0; i < nr && !rc; i++) rc = try_rule(s, gir_simplify_rule(i), n);
      if (rc < 0) return s->g->cur_guard = NULL, -1;
      if (!rc) break;
      st->fired[i - 1]++;
      fired++;
    }
  }
  s->g->cur_guard = NULL;
  return fired;
}

/* Restores topological order after rewrites appended nodes: a depth-first walk
 * from each node in list order, producers first, so an ordered list stays as it
 * is. Ids are positions (no node was removed since the last compaction). */
void gir_topo_sort(gir_graph *g, gir_arena *tmp) {
  int32_t n = g->n_nodes, cnt = 0, sp = 0;
  gir_node **order = gir_arena_calloc(tmp, (size_t)n + 1, sizeof *order);
  uint8_t *mark = gir_arena_calloc(tmp, (size_t)n + 1, 1);
  gir_node **stack = gir_arena_calloc(tmp, (size_t)n + 1, sizeof *stack);
  int32_t *next = gir_arena_calloc(tmp, (size_t)n + 1, sizeof *next);
  if (!order || !mark || !stack || !next) abort();
  for (int k = 0; k < n; k++) assert(g->nodes[k]->id == k);
  for (int k = 0; k < n; k++) {
    if (mark[k]) continue;
    mark[k] = 1;
    stack[sp++] = g->nodes[k];
    while (sp) {
      gir_node *t = stack[sp - 1];
      if (next[t->id] < t->n_in + (t->guard ? t->guard->depth : 0)) { /* inputs, then guard conditions */
        int32_t i = next[t->id]++;
        const gir_value *v = i < t->n_in ? t->in[i] : gir_guard_cond(t->guard, i - t->n_in);
        if (v && v->producer && !mark[v->producer->id]) {
          mark[v->producer->id] = 1;
          stack[sp++] = v->producer;
        }
        continue;
      }
      sp--;
      order[cnt++] = t;
    }
  }
  assert(cnt == n);
  for (int k = 0; k < n; k++) {
    g->nodes[k] = order[k];
    g->nodes[k]->id = k;
  }
}

void gir_resort_compact(gir_graph *g) {
  gir_arena *tmp = gir_arena_new();
  gir_topo_sort(g, tmp);
  gir_arena_free(tmp);
  gir_graph_compact(g);
}

/* Requires: topological order. Preserves: semantics, topological order, output names; compacts. */
int gir_simplify(gir_graph *g, const gir_evaluator *ev, gir_simplify_stats *stats, gir_err *err) {
  gir_simplify_stats st;
  memset(&st, 0, sizeof st);
  assert(gir_simplify_rule_count() <= GIR_SIMPLIFY_MAX_RULES);
  st.nodes_before = g->n_nodes;
  gir_err e = {{0}}; /* our own: the caller's may already hold a fold report */
  gir_sx s = {.g = g, .ev = ev, .err = &e, .tmp = gir_arena_new(), .dirty = 1};
  if (!s.tmp) return gir_errf(err, "simplify: out of memory");
  int rc = 0;
  for (;;) {
    if (st.sweeps == MAX_SWEEPS) {
      rc = gir_errf(err, "simplify: the rules did not reach a fixed point in %d sweeps", MAX_SWEEPS);
      break;
    }
    int fired = sweep(&s, &st);
    st.sweeps++;
    if (fired < 0) {
      rc = gir_errf(err, "simplify: %s", e.msg);
      break;
    }
    st.rewrites += fired;
    gir_topo_sort(g, s.tmp);
    gir_graph_compact(g);
    int32_t merged = 0;
    gir_cse(g, &merged);
    st.cse_merged += merged;
    s.dirty = 1; /* ids were renumbered */
    if (!fired && !merged) break;
  }
  if (rc < 0) { /* leave a valid graph behind all the same */
    gir_topo_sort(g, s.tmp);
    gir_graph_compact(g);
  }
  st.nodes_after = g->n_nodes;
  if (stats) *stats = st;
  gir_arena_free(s.tmp);
  return rc;
}
