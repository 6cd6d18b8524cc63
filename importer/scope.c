/* scope.c — ONNX value names → graph values. Subgraphs and inlined functions see
 * their enclosing scope (ONNX lets a subgraph read outer values), so scopes chain;
 * each is an open-addressing hash table in the graph's arena. A name bound to NULL
 * is "poisoned": produced by an unsupported node, so its consumers are skipped.
 * Each entry has a kind (ctx.h): a tensor, a sequence (a list of tensor values
 * the importer holds) or an absent optional. Also the helpers that bind a node's
 * outputs to sequences and absent optionals. */
#include <string.h>
#include "ctx.h"

typedef struct entry {
  const char *name;
  imp_item it;
} entry;

struct imp_scope {
  imp_scope *parent;
  entry *tab;
  uint32_t cap, n;
};

static uint32_t hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

imp_scope *imp_scope_push(imp_ctx *c) {
  imp_scope *s = gir_arena_alloc(c->g->arena, sizeof *s);
  if (!s) return NULL;
  s->parent = c->scope;
  s->cap = 16;
  s->tab = gir_arena_calloc(c->g->arena, s->cap, sizeof *s->tab);
  if (!s->tab) return NULL;
  c->scope = s;
  return s;
}

void imp_scope_pop(imp_ctx *c, imp_scope *s) { c->scope = s->parent; }

static entry *find_slot(entry *tab, uint32_t cap, const char *name) {
  uint32_t i = hash(name) & (cap - 1);
  while (tab[i].name && strcmp(tab[i].name, name)) i = (i + 1) & (cap - 1);
  return &tab[i];
}

int imp_scope_bind_item(imp_ctx *c, const char *name, imp_item it) {
  imp_scope *s = c->scope;
  if (s->n * 2 >= s->cap) {
    uint32_t nc = s->cap * 2;
    entry *nt = gir_arena_calloc(c->g->arena, nc, sizeof *nt);
    if (!nt) return gir_errf(c->err, "out of memory");
    for (uint32_t i = 0; i < s->cap; i++)
      if (s->tab[i].name) *find_slot(nt, nc, s->tab[i].name) = s->tab[i];
    s->tab = nt;
    s->cap = nc;
  }
  entry *e = find_slot(s->tab, s->cap, name);
  if (!e->name) {
    e->name = gir_arena_strdup(c->g->arena, name);
    s->n++;
  }
  e->it = it;
  return 0;
}

int imp_scope_bind(imp_ctx *c, const char *name, gir_value *v) {
  return imp_scope_bind_item(c, name, (imp_item){.kind = IMP_TENSOR, .v = v});
}

imp_kind imp_scope_find(imp_ctx *c, const char *name, imp_item *it) {
  for (imp_scope *s = c->scope; s; s = s->parent) {
    entry *e = find_slot(s->tab, s->cap, name);
    if (e->name) {
      *it = e->it;
      return e->it.kind;
    }
  }
  *it = (imp_item){0};
  return IMP_NOT_FOUND;
}

int imp_scope_lookup(imp_ctx *c, const char *name, gir_value **v) {
  imp_item it;
  if (imp_scope_find(c, name, &it) != IMP_TENSOR) return 0;
  *v = it.v;
  return 1;
}

imp_item imp_input_item(const imp_node *n, int i) {
  if (i < n->n_in && n->in[i]) return (imp_item){.kind = IMP_TENSOR, .v = n->in[i]};
  if (i < n->n_in && n->seq[i]) return (imp_item){.kind = IMP_SEQUENCE, .s = n->seq[i]};
  return (imp_item){.kind = IMP_ABSENT};
}

imp_seq *imp_seq_new(imp_ctx *c, gir_value *const *items, int32_t cnt, gir_dtype elem) {
  imp_seq *s = gir_arena_calloc(c->g->arena, 1, sizeof *s);
  if (!s || !(s->items = gir_arena_calloc(c->g->arena, (size_t)cnt + 1, sizeof *s->items))) {
    imp_fail(c, "out of memory");
    return NULL;
  }
  if (cnt) memcpy(s->items, items, (size_t)cnt * sizeof *items);
  s->n = cnt;
  s->elem = cnt ? items[0]->dtype : elem;
  return s;
}

static int wanted(const imp_node *n, int i) { return i < n->n_out && n->out_names[i] && n->out_names[i][0]; }

int imp_set_output_seq(imp_ctx *c, imp_node *n, int i, const imp_seq *s) {
  if (!wanted(n, i)) return 0;
  if (!s) return imp_fail(c, "output %d was not produced", i);
  /* generated element names take the sequence's: "seq.0", "seq.1", … */
  for (int32_t k = 0; k < s->n; k++)
    if (s->items[k]->name && s->items[k]->name[0] == '%')
      s->items[k]->name = gir_arena_printf(c->g->arena, "%s.%d", n->out_names[i], k);
  n->out_kind[i] = IMP_SEQUENCE;
  return imp_scope_bind_item(c, n->out_names[i], (imp_item){.kind = IMP_SEQUENCE, .s = s});
}

int imp_set_output_absent(imp_ctx *c, imp_node *n, int i) {
  if (!wanted(n, i)) return 0;
  n->out_kind[i] = IMP_ABSENT;
  return imp_scope_bind_item(c, n->out_names[i], (imp_item){.kind = IMP_ABSENT});
}

int imp_set_output_item(imp_ctx *c, imp_node *n, int i, imp_item it) {
  switch (it.kind) {
  case IMP_SEQUENCE: return imp_set_output_seq(c, n, i, it.s);
  case IMP_ABSENT: return imp_set_output_absent(c, n, i);
  default: return imp_set_output(c, n, i, it.v);
  }
}
