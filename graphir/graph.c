/* graph.c — construction of the graph IR: values, constants, nodes, attributes,
 * graph inputs/outputs, and compaction after passes delete nodes. Arrays grow by
 * doubling inside the graph's arena (the old block is simply abandoned). */
#include "graph.h"
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define GROW(g, arr, n, cap)                                                        \
  do {                                                                              \
    if ((n) == (cap)) {                                                             \
      int32_t nc_ = (cap) ? (cap) * 2 : 16;                                         \
      void *p_ = gir_arena_grow((g)->arena, (arr), (size_t)(n), (size_t)nc_, sizeof *(arr)); \
      if (!p_) abort(); /* out of memory: not a user error we can report usefully */ \
      (arr) = p_;                                                                   \
      (cap) = nc_;                                                                  \
    }                                                                               \
  } while (0)

gir_graph *gir_graph_new(const char *name) {
  gir_arena *a = gir_arena_new();
  if (!a) return NULL;
  gir_graph *g = gir_arena_alloc(a, sizeof *g);
  if (!g) {
    gir_arena_free(a);
    return NULL;
  }
  g->arena = a;
  g->name = gir_arena_strdup(a, name ? name : "graph");
  return g;
}

void gir_graph_free(gir_graph *g) {
  if (g) gir_arena_free(g->arena);
}

int64_t gir_shape_numel(const gir_shape *s, gir_err *err) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->dims[i];
    if (d < 0) return gir_errf(err, "negative dimension %lld", (long long)d), -1;
    if (d && n > INT64_MAX / d) return gir_errf(err, "element count overflows int64"), -1;
    n *= d;
  }
  return n;
}

int gir_shape_equal(const gir_shape *a, const gir_shape *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

gir_shape gir_shape_make(int32_t rank, const int64_t *dims) {
  gir_shape s = {0};
  assert(rank >= 0 && rank <= GIR_MAX_RANK);
  s.rank = rank;
  for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
  return s;
}

const char *gir_shape_str(const gir_shape *s, char *buf, size_t n) {
  if (s->rank == 0) {
    snprintf(buf, n, "scalar");
    return buf;
  }
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < s->rank && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, i ? "x%lld" : "%lld", (long long)s->dims[i]);
  return buf;
}

int64_t gir_value_numel(const gir_value *v) { return gir_shape_numel(&v->shape, NULL); }

int64_t gir_value_nbytes(const gir_value *v) {
  int64_t n = gir_value_numel(v);
  size_t es = gir_dtype_size(v->dtype);
  if (n < 0 || (es && n > INT64_MAX / (int64_t)es)) return -1;
  return n * (int64_t)es;
}

gir_value *gir_value_new(gir_graph *g, const char *name, gir_dtype t, const gir_shape *s) {
  gir_value *v = gir_arena_alloc(g->arena, sizeof *v);
  if (!v) abort();
  v->id = g->n_values;
  v->name = name ? gir_arena_strdup(g->arena, name) : gir_arena_printf(g->arena, "%%%d", g->next_name++);
  v->dtype = t;
  if (s) v->shape = *s;
  GROW(g, g->values, g->n_values, g->cap_values);
  g->values[g->n_values++] = v;
  return v;
}

gir_value *gir_const_new(gir_graph *g, const char *name, gir_dtype t, const gir_shape *s, const void *data) {
  gir_value *v = gir_value_new(g, name, t, s);
  int64_t nb = gir_value_nbytes(v);
  assert(nb >= 0);
  v->data = gir_arena_alloc(g->arena, (size_t)nb);
  if (!v->data) abort();
  if (data && nb) memcpy(v->data, data, (size_t)nb);
  return v;
}

gir_value *gir_const_scalar(gir_graph *g, gir_dtype t, double x) {
  gir_shape s = {0};
  gir_value *v = gir_const_new(g, NULL, t, &s, NULL);
  gir_store_f64(t, v->data, 0, x);
  return v;
}

gir_value *gir_const_i64s(gir_graph *g, const int64_t *x, int32_t n) {
  gir_shape s = {.rank = 1, .dims = {n}};
  return gir_const_new(g, NULL, GIR_I64, &s, x);
}

gir_node *gir_node_new(gir_graph *g, gir_op op, const char *name, gir_value *const *ins, int32_t n_in,
                       int32_t n_out) {
  assert(op >= 0 && op < GIR_OP_COUNT && n_in >= 0 && n_out >= 0);
  gir_node *n = gir_arena_alloc(g->arena, sizeof *n);
  if (!n) abort();
  n->id = g->n_nodes;
  n->op = op;
  n->name = name ? gir_arena_strdup(g->arena, name)
                 : gir_arena_printf(g->arena, "%s_%d", gir_op_name(op), g->next_name++);
  n->n_in = n_in;
  n->n_out = n_out;
  n->in = gir_arena_calloc(g->arena, (size_t)n_in + 1, sizeof *n->in);
  n->out = gir_arena_calloc(g->arena, (size_t)n_out + 1, sizeof *n->out);
  if (!n->in || !n->out) abort();
  for (int i = 0; i < n_in; i++) n->in[i] = ins[i];
  for (int i = 0; i < n_out; i++) {
    gir_value *v = gir_value_new(g, NULL, GIR_DTYPE_NONE, NULL);
    v->producer = n;
    v->producer_slot = i;
    n->out[i] = v;
  }
  n->guard = g->cur_guard;
  GROW(g, g->nodes, g->n_nodes, g->cap_nodes);
  g->nodes[g->n_nodes++] = n;
  return n;
}

const gir_guard *gir_guard_new(gir_graph *g, gir_value *cond, int when, const gir_guard *parent, const char *what) {
  gir_guard *d = gir_arena_calloc(g->arena, 1, sizeof *d);
  if (!d) abort();
  d->cond = cond;
  d->when = (uint8_t)(when != 0);
  d->parent = parent;
  d->depth = parent ? parent->depth + 1 : 1;
  d->what = what ? gir_arena_strdup(g->arena, what) : "a branch";
  return d;
}

int gir_guard_implies(const gir_guard *a, const gir_guard *b) {
  for (; b && a; a = a->parent)
    if (a == b) return 1;
  return !b;
}

gir_value *gir_guard_cond(const gir_guard *d, int32_t i) {
  while (d && i-- > 0) d = d->parent;
  return d ? d->cond : NULL;
}

const gir_guard *gir_guard_common(const gir_guard *a, const gir_guard *b) {
  while (a && b && a != b) {
    if (a->depth >= b->depth) a = a->parent;
    else b = b->parent;
  }
  return a && b ? a : NULL;
}

int gir_graph_add_input(gir_graph *g, gir_value *v) {
  GROW(g, g->inputs, g->n_inputs, g->cap_inputs);
  g->inputs[g->n_inputs++] = v;
  v->is_input = 1;
  return 0;
}

int gir_graph_add_output(gir_graph *g, gir_value *v) {
  GROW(g, g->outputs, g->n_outputs, g->cap_outputs);
  g->outputs[g->n_outputs++] = v;
  v->is_output = 1;
  return 0;
}

/* --- attributes --- */

static gir_attr *attr_slot(gir_graph *g, gir_node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (!strcmp(n->attrs[i].name, name)) {
      memset(&n->attrs[i], 0, sizeof n->attrs[i]);
      n->attrs[i].name = gir_arena_strdup(g->arena, name);
      return &n->attrs[i];
    }
  GROW(g, n->attrs, n->n_attrs, n->cap_attrs);
  gir_attr *a = &n->attrs[n->n_attrs++];
  memset(a, 0, sizeof *a);
  a->name = gir_arena_strdup(g->arena, name);
  return a;
}

void gir_attr_set_int(gir_graph *g, gir_node *n, const char *name, int64_t v) {
  gir_attr *a = attr_slot(g, n, name);
  a->kind = GIR_ATTR_INT;
  a->i = v;
}

void gir_attr_set_float(gir_graph *g, gir_node *n, const char *name, double v) {
  gir_attr *a = attr_slot(g, n, name);
  a->kind = GIR_ATTR_FLOAT;
  a->f = v;
}

void gir_attr_set_ints(gir_graph *g, gir_node *n, const char *name, const int64_t *v, int32_t cnt) {
  gir_attr *a = attr_slot(g, n, name);
  a->kind = GIR_ATTR_INTS;
  a->n = cnt;
  a->ints = gir_arena_calloc(g->arena, (size_t)cnt + 1, sizeof *a->ints);
  if (!a->ints) abort();
  if (cnt) memcpy(a->ints, v, (size_t)cnt * sizeof *v);
}

void gir_attr_set_floats(gir_graph *g, gir_node *n, const char *name, const double *v, int32_t cnt) {
  gir_attr *a = attr_slot(g, n, name);
  a->kind = GIR_ATTR_FLOATS;
  a->n = cnt;
  a->floats = gir_arena_calloc(g->arena, (size_t)cnt + 1, sizeof *a->floats);
  if (!a->floats) abort();
  if (cnt) memcpy(a->floats, v, (size_t)cnt * sizeof *v);
}

void gir_attr_set_string(gir_graph *g, gir_node *n, const char *name, const char *s) {
  gir_attr *a = attr_slot(g, n, name);
  a->kind = GIR_ATTR_STRING;
  a->s = gir_arena_strdup(g->arena, s);
}

int gir_attr_equal(const gir_attr *a, const gir_attr *b) {
  if (a->kind != b->kind || strcmp(a->name, b->name)) return 0;
  switch (a->kind) {
  case GIR_ATTR_INT: return a->i == b->i;
  case GIR_ATTR_FLOAT: return !memcmp(&a->f, &b->f, sizeof a->f);
  case GIR_ATTR_INTS: return a->n == b->n && (!a->n || !memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints));
  case GIR_ATTR_FLOATS:
    return a->n == b->n && (!a->n || !memcmp(a->floats, b->floats, (size_t)a->n * sizeof *a->floats));
  case GIR_ATTR_STRING: return (!a->s && !b->s) || (a->s && b->s && !strcmp(a->s, b->s));
  default: return 0;
  }
}

const gir_attr *gir_attr_find(const gir_node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
  return NULL;
}

int64_t gir_attr_int(const gir_node *n, const char *name, int64_t def) {
  const gir_attr *a = gir_attr_find(n, name);
  if (!a) return def;
  return a->kind == GIR_ATTR_FLOAT ? (int64_t)a->f : a->i;
}

double gir_attr_float(const gir_node *n, const char *name, double def) {
  const gir_attr *a = gir_attr_find(n, name);
  if (!a) return def;
  return a->kind == GIR_ATTR_INT ? (double)a->i : a->f;
}

const int64_t *gir_attr_ints(const gir_node *n, const char *name, int32_t *cnt) {
  const gir_attr *a = gir_attr_find(n, name);
  if (!a || a->kind != GIR_ATTR_INTS) {
    *cnt = 0;
    return NULL;
  }
  *cnt = a->n;
  return a->ints;
}

const double *gir_attr_floats(const gir_node *n, const char *name, int32_t *cnt) {
  const gir_attr *a = gir_attr_find(n, name);
  if (!a || a->kind != GIR_ATTR_FLOATS) {
    *cnt = 0;
    return NULL;
  }
  *cnt = a->n;
  return a->floats;
}

/* --- compaction --- */

void gir_graph_compact(gir_graph *g) {
  /* Liveness backwards from the outputs: a node lives if any output is used. */
  uint8_t *live_val = gir_arena_calloc(g->arena, (size_t)g->n_values + 1, 1);
  uint8_t *live_node = gir_arena_calloc(g->arena, (size_t)g->n_nodes + 1, 1);
  if (!live_val || !live_node) abort();
  for (int i = 0; i < g->n_outputs; i++) {
    live_val[g->outputs[i]->id] = 1;
    if (g->outputs[i]->extent) live_val[g->outputs[i]->extent->id] = 1; /* the runtime reads it */
  }
  for (int i = 0; i < g->n_inputs; i++) live_val[g->inputs[i]->id] = 1;
  for (int k = g->n_nodes - 1; k >= 0; k--) {
    gir_node *n = g->nodes[k];
    int live = 0;
    for (int j = 0; j < n->n_out; j++) live |= live_val[n->out[j]->id];
    if (!live) continue;
    live_node[k] = 1;
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j]) live_val[n->in[j]->id] = 1;
    for (const gir_guard *d = n->guard; d; d = d->parent) live_val[d->cond->id] = 1;
  }
  int32_t nn = 0;
  for (int k = 0; k < g->n_nodes; k++)
    if (live_node[k]) {
      g->nodes[nn] = g->nodes[k];
      g->nodes[nn]->id = nn;
      nn++;
    }
  g->n_nodes = nn;
  /* Values produced by live nodes stay (even unused secondary outputs). */
  for (int k = 0; k < nn; k++)
    for (int j = 0; j < g->nodes[k]->n_out; j++) live_val[g->nodes[k]->out[j]->id] = 1;
  int32_t nv = 0;
  for (int i = 0; i < g->n_values; i++)
    if (live_val[i]) {
      g->values[nv] = g->values[i];
      g->values[nv]->id = nv;
      nv++;
    }
  g->n_values = nv;
}
