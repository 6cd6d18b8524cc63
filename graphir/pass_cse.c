/* pass_cse.c — common-subexpression elimination by value numbering: walking
 * the nodes in topological order, a node whose op, inputs and attributes equal
 * those of an earlier node is redundant, and its consumers read the earlier
 * node's outputs instead. Because consumers are redirected before they are
 * visited, whole redundant chains merge in one walk. Constants with the same
 * dtype, shape and bytes merge first, so that two copies of a weight (an
 * exporter that duplicates initializers, a folded chain that recomputed one)
 * make their consumers equal too.
 *
 * Attributes compare exactly: the same names, kinds and values, floats bit for
 * bit (0.1 and 0.1000001 are different programs). Hash tables are open
 * addressing in a scratch arena that dies with the pass. */
#include <string.h>
#include "simplify.h"

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  memcpy(&tail, b + i, n - i);
  return mix(h, tail ^ n);
}

static uint64_t hash_attr(const gir_attr *a) {
  uint64_t h = hash_bytes((uint64_t)a->kind, a->name, strlen(a->name));
  switch (a->kind) {
  case GIR_ATTR_INT: return mix(h, (uint64_t)a->i);
  case GIR_ATTR_FLOAT: return hash_bytes(h, &a->f, sizeof a->f);
  case GIR_ATTR_INTS: return hash_bytes(h, a->ints, (size_t)a->n * sizeof *a->ints);
  case GIR_ATTR_FLOATS: return hash_bytes(h, a->floats, (size_t)a->n * sizeof *a->floats);
  case GIR_ATTR_STRING: return a->s ? hash_bytes(h, a->s, strlen(a->s)) : h;
  default: return h;
  }
}

static uint64_t hash_node(const gir_node *n) {
  uint64_t h = mix(mix(mix(1, (uint64_t)n->op), (uint64_t)n->n_in), (uint64_t)n->n_out);
  for (int i = 0; i < n->n_in; i++) h = mix(h, n->in[i] ? (uint64_t)n->in[i]->id : ~0ull);
  uint64_t ah = 0; /* attribute order does not matter */
  for (int i = 0; i < n->n_attrs; i++) ah += hash_attr(&n->attrs[i]);
  return mix(h, ah);
}

static int node_equal(const gir_node *a, const gir_node *b) {
  if (a->op != b->op || a->n_in != b->n_in || a->n_out != b->n_out || a->n_attrs != b->n_attrs) return 0;
  for (int i = 0; i < a->n_in; i++)
    if (a->in[i] != b->in[i]) return 0;
  for (int i = 0; i < a->n_attrs; i++) {
    const gir_attr *o = gir_attr_find(b, a->attrs[i].name);
    if (!o || !gir_attr_equal(&a->attrs[i], o)) return 0;
  }
  return 1;
}

/* Large constants hash a sample of their bytes (64 chunks of 1 KiB spread
 * over the payload): equal constants still hash equally, and memcmp decides.
 * Hashing every byte of every weight after each sweep would cost more than
 * the whole rule engine. */
static uint64_t hash_const(const gir_value *v) {
  uint64_t h = mix(mix(2, (uint64_t)v->dtype), (uint64_t)v->shape.rank);
  h = hash_bytes(h, v->shape.dims, (size_t)v->shape.rank * sizeof v->shape.dims[0]);
  size_t nb = (size_t)gir_value_nbytes(v), chunk = 1024, chunks = 64;
  if (nb <= chunk * chunks) return hash_bytes(h, v->data, nb);
  const uint8_t *b = v->data;
  for (size_t i = 0; i < chunks; i++) h = hash_bytes(h, b + (nb - chunk) / (chunks - 1) * i, chunk);
  return h;
}

static int const_equal(const gir_value *a, const gir_value *b) {
  return a->dtype == b->dtype && gir_shape_equal(&a->shape, &b->shape) &&
         !memcmp(a->data, b->data, (size_t)gir_value_nbytes(a));
}

/* An open-addressing table of pointers (nodes or values) keyed by hash. */
typedef struct table {
  void **slot;
  uint64_t *hash;
  size_t mask;
} table;

static int table_init(table *t, gir_arena *a, int32_t n) {
  size_t cap = 16;
  while (cap < (size_t)n * 2) cap *= 2;
  t->slot = gir_arena_calloc(a, cap, sizeof *t->slot);
  t->hash = gir_arena_calloc(a, cap, sizeof *t->hash);
  t->mask = cap - 1;
  return t->slot && t->hash ? 0 : -1;
}

/* The entry equal to p, or NULL after inserting p. */
static void *table_find_or_add(table *t, void *p, uint64_t h, int (*eq)(const void *, const void *)) {
  size_t i = (size_t)h & t->mask;
  for (; t->slot[i]; i = (i + 1) & t->mask)
    if (t->hash[i] == h && eq(t->slot[i], p)) return t->slot[i];
  t->slot[i] = p;
  t->hash[i] = h;
  return NULL;
}

static int eq_node(const void *a, const void *b) { return node_equal(a, b); }
static int eq_const(const void *a, const void *b) { return const_equal(a, b); }

/* Merges constants and nodes. Requires: topological order. Preserves:
 * semantics, topological order, graph output names; compacts at the end. */
int gir_cse(gir_graph *g, int32_t *merged) {
  int32_t count = 0;
  gir_arena *tmp = gir_arena_new();
  table consts, nodes;
  if (!tmp || table_init(&consts, tmp, g->n_values) < 0 || table_init(&nodes, tmp, g->n_nodes) < 0) {
    gir_arena_free(tmp); /* out of memory: merging nothing is correct */
    if (merged) *merged = 0;
    return 0;
  }
  int32_t nv = g->n_values; /* values are not added below */
  for (int i = 0; i < nv; i++) {
    gir_value *v = g->values[i];
    if (!v->data || v->producer || v->is_input || !gir_dtype_size(v->dtype)) continue;
    gir_value *e = table_find_or_add(&consts, v, hash_const(v), eq_const);
    if (e && gir_replace_uses(g, v, e) == 0) count++;
  }
  for (int k = 0; k < g->n_nodes; k++) {
    gir_node *n = g->nodes[k];
    if (!n->n_out) continue;
    gir_node *e = table_find_or_add(&nodes, n, hash_node(n), eq_node);
    if (!e) continue;
    int all = 1; /* all outputs or none: a half-merged node would leave two values of one name */
    for (int j = 0; j < n->n_out; j++) all &= gir_can_replace_uses(n->out[j], e->out[j]);
    if (!all) continue;
    for (int j = 0; j < n->n_out; j++) gir_replace_uses(g, n->out[j], e->out[j]);
    /* e now runs wherever either did: its guard is the branch both lie in (which
     * still implies its inputs' guards, since both did) */
    e->guard = gir_guard_common(e->guard, n->guard);
    count++;
  }
  gir_arena_free(tmp);
  gir_graph_compact(g);
  if (merged) *merged = count;
  return 0;
}
