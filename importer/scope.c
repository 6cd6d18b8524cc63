/* scope.c — ONNX value names → graph values. Subgraphs and inlined functions see
 * their enclosing scope (ONNX lets a subgraph read outer values), so scopes chain;
 * each is an open-addressing hash table in the graph's arena. A name bound to NULL
 * is "poisoned": produced by an unsupported node, so its consumers are skipped. */
#include <string.h>
#include "ctx.h"

typedef struct entry {
  const char *name;
  gir_value *v;
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

int imp_scope_bind(imp_ctx *c, const char *name, gir_value *v) {
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
  e->v = v;
  return 0;
}

int imp_scope_lookup(imp_ctx *c, const char *name, gir_value **v) {
  for (imp_scope *s = c->scope; s; s = s->parent) {
    entry *e = find_slot(s->tab, s->cap, name);
    if (e->name) {
      *v = e->v;
      return 1;
    }
  }
  return 0;
}
