/* pass_unswitch.c — loop unswitching (see tir_passes.h): a test that cannot change
 * inside a loop body is taken once, before the body, instead of once per inner
 * iteration.
 *
 * The case it is for: a register tile whose rows run past a ragged extent (a
 * ViT's 197 tokens in tiles of 8) inside a parallel loop fused over rows and
 * columns. The guards `if (f mod 25)·8 < 190` sit on every FMA of the reduction
 * loop; they depend only on the parallel variable, but through a modulo, so loop
 * partition cannot solve them for a range of f. Left there they also keep LLVM
 * from holding the tile's accumulators in registers (conditional stores). Here
 * the body becomes
 *     if (all such tests) { the body with each of them true, simplified }
 *     else                { the body as it was }
 * so every full tile runs straight-line code and only the ragged one tests.
 *
 * A test qualifies when it is the condition (or one conjunct of the condition)
 * of an if statement nested in a loop of the body, is scalar, reads no memory
 * (so evaluating it early is always safe: integer division never traps in TIR)
 * and reads no variable bound inside the body. Each loop is unswitched at most
 * once; the new straight-line copy is searched again for tests of inner loops,
 * the original copy (the rare path) is left as it was, so code grows at most
 * twofold per level of nesting that has such tests. */
#include <stdlib.h>
#include "tir_passes.h"
#include "arith.h"

enum { MAX_TESTS = 32 };

typedef struct unsw {
  tir_builder *b;
  unsigned char *bound; /* bound[var id]: bound inside the body being looked at */
  int32_t nvars;
  const tir_expr *tests[MAX_TESTS];
  int32_t n;
} unsw;

/* The variables a pass made since the last look get room in `bound`. */
static void fit(unsw *u) {
  if (u->b->next_var <= u->nvars) return;
  unsigned char *nb = realloc(u->bound, (size_t)u->b->next_var);
  if (!nb) abort();
  for (int32_t i = u->nvars; i < u->b->next_var; i++) nb[i] = 0;
  u->bound = nb;
  u->nvars = u->b->next_var;
}

static void mark_bound(unsw *u, const tir_stmt *s, unsigned char on) {
  if (!s) return;
  switch (s->kind) {
  case TIR_FOR:
    if (s->u.loop.var->id < u->nvars) u->bound[s->u.loop.var->id] = on;
    mark_bound(u, s->u.loop.body, on);
    break;
  case TIR_LET:
    if (s->u.let.var->id < u->nvars) u->bound[s->u.let.var->id] = on;
    mark_bound(u, s->u.let.body, on);
    break;
  case TIR_IF:
    mark_bound(u, s->u.ifs.then_s, on);
    mark_bound(u, s->u.ifs.else_s, on);
    break;
  case TIR_ALLOCATE: mark_bound(u, s->u.alloc.body, on); break;
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++) mark_bound(u, s->u.seq.s[i], on);
    break;
  default: break;
  }
}

/* Scalar arithmetic on variables bound outside the body, no loads. */
static int invariant(const unsw *u, const tir_expr *e) {
  if (e->lanes != 1) return 0;
  switch (e->kind) {
  case TIR_INT: case TIR_FLOAT: return 1;
  case TIR_VAR: return e->u.var->id >= u->nvars || !u->bound[e->u.var->id];
  case TIR_UNARY: return invariant(u, e->u.un.a);
  case TIR_BINARY: return invariant(u, e->u.bin.a) && invariant(u, e->u.bin.b);
  case TIR_SELECT: return invariant(u, e->u.sel.c) && invariant(u, e->u.sel.a) && invariant(u, e->u.sel.b);
  case TIR_CAST: case TIR_BITCAST: return invariant(u, e->u.cast.a);
  case TIR_DOT4: return 0; /* its 8-bit operands are vectors (4 lanes at least) */
  default: return 0; /* loads (and if_then_else, which may guard one), ramps, broadcasts */
  }
}

static void add_test(unsw *u, const tir_expr *c) {
  if (c->kind == TIR_BINARY && c->u.bin.op == TE_AND && c->dtype == GIR_BOOL) {
    add_test(u, c->u.bin.a);
    add_test(u, c->u.bin.b);
    return;
  }
  if (c->dtype != GIR_BOOL || c->kind == TIR_INT || !invariant(u, c)) return;
  for (int32_t i = 0; i < u->n; i++)
    if (arith_expr_equal(u->tests[i], c)) return;
  if (u->n < MAX_TESTS) u->tests[u->n++] = c;
}

/* The tests of if statements nested in a loop of s. */
static void collect(unsw *u, const tir_stmt *s, int in_loop) {
  if (!s) return;
  switch (s->kind) {
  case TIR_FOR: collect(u, s->u.loop.body, 1); break;
  case TIR_LET: collect(u, s->u.let.body, in_loop); break;
  case TIR_IF:
    if (in_loop) add_test(u, s->u.ifs.cond);
    collect(u, s->u.ifs.then_s, in_loop);
    collect(u, s->u.ifs.else_s, in_loop);
    break;
  case TIR_ALLOCATE: collect(u, s->u.alloc.body, in_loop); break;
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++) collect(u, s->u.seq.s[i], in_loop);
    break;
  default: break;
  }
}

/* The condition with every collected test (a whole condition or a conjunct) true. */
static tir_expr *assume(unsw *u, tir_expr *c) {
  for (int32_t i = 0; i < u->n; i++)
    if (arith_expr_equal(u->tests[i], c)) return tir_int(u->b, GIR_BOOL, 1);
  if (c->kind == TIR_BINARY && c->u.bin.op == TE_AND && c->dtype == GIR_BOOL) {
    tir_expr *a = assume(u, c->u.bin.a), *b = assume(u, c->u.bin.b);
    return a == c->u.bin.a && b == c->u.bin.b ? c : tir_bin(u->b, TE_AND, a, b);
  }
  return c;
}

typedef tir_stmt *(*stmt_fn)(unsw *u, tir_stmt *s);

/* s with f applied to its child statements (a loop's, a let's or an allocation's
 * body, an if's branches, a sequence's members), rebuilt only where one changed;
 * conditions, loop bounds and lets' values stay as they are. */
static tir_stmt *map_children(unsw *u, tir_stmt *s, stmt_fn f) {
  switch (s->kind) {
  case TIR_FOR: {
    tir_stmt *body = f(u, s->u.loop.body);
    return body == s->u.loop.body ? s
                                  : tir_for(u->b, s->u.loop.var, s->u.loop.min, s->u.loop.extent, s->u.loop.kind, body);
  }
  case TIR_LET: {
    tir_stmt *body = f(u, s->u.let.body);
    return body == s->u.let.body ? s : tir_let(u->b, s->u.let.var, s->u.let.value, body);
  }
  case TIR_IF: {
    tir_stmt *t = f(u, s->u.ifs.then_s), *e = f(u, s->u.ifs.else_s);
    return t == s->u.ifs.then_s && e == s->u.ifs.else_s ? s : tir_if(u->b, s->u.ifs.cond, t, e);
  }
  case TIR_ALLOCATE: {
    tir_stmt *body = f(u, s->u.alloc.body);
    return body == s->u.alloc.body ? s : tir_allocate(u->b, s->u.alloc.buf, body);
  }
  case TIR_SEQ: {
    tir_stmt **xs = gir_arena_alloc(u->b->arena, sizeof(tir_stmt *) * (size_t)(s->u.seq.n ? s->u.seq.n : 1));
    if (!xs) abort();
    int changed = 0;
    for (int32_t i = 0; i < s->u.seq.n; i++) {
      xs[i] = f(u, s->u.seq.s[i]);
      changed |= xs[i] != s->u.seq.s[i];
    }
    return changed ? tir_seq(u->b, xs, s->u.seq.n) : s;
  }
  default: return s;
  }
}

/* s with every collected test assumed true in its ifs' conditions. */
static tir_stmt *assume_stmt(unsw *u, tir_stmt *s) {
  if (!s) return s;
  if (s->kind == TIR_IF) {
    tir_expr *c = assume(u, s->u.ifs.cond);
    tir_stmt *t = assume_stmt(u, s->u.ifs.then_s), *e = assume_stmt(u, s->u.ifs.else_s);
    return c == s->u.ifs.cond && t == s->u.ifs.then_s && e == s->u.ifs.else_s ? s : tir_if(u->b, c, t, e);
  }
  return map_children(u, s, assume_stmt);
}

static tir_stmt *walk(unsw *u, tir_stmt *s);

/* A loop's body, unswitched on its invariant tests (if it has any). */
static tir_stmt *unswitch_body(unsw *u, tir_stmt *body) {
  if (tir_stmt_has_sync(body)) return walk(u, body); /* a test may differ between a GPU block's threads */
  fit(u);
  mark_bound(u, body, 1);
  u->n = 0;
  collect(u, body, 0);
  mark_bound(u, body, 0);
  if (u->n == 0) return walk(u, body);
  tir_expr *all = (tir_expr *)u->tests[0];
  for (int32_t i = 1; i < u->n; i++) all = tir_bin(u->b, TE_AND, all, (tir_expr *)u->tests[i]);
  tir_stmt *fast = tir_simplify(u->b, assume_stmt(u, body));
  return tir_if(u->b, all, walk(u, fast), body);
}

static tir_stmt *walk(unsw *u, tir_stmt *s) {
  if (!s) return s;
  if (s->kind == TIR_FOR) {
    if (s->u.loop.kind == TIR_VECTORIZED) return s;
    tir_stmt *body = unswitch_body(u, s->u.loop.body);
    return body == s->u.loop.body ? s
                                  : tir_for(u->b, s->u.loop.var, s->u.loop.min, s->u.loop.extent, s->u.loop.kind, body);
  }
  return map_children(u, s, walk);
}

tir_stmt *tir_unswitch(tir_builder *b, tir_stmt *s) {
  unsw u = {.b = b, .nvars = b->next_var};
  u.bound = calloc((size_t)(u.nvars > 0 ? u.nvars : 1), 1);
  if (!u.bound) abort();
  tir_stmt *r = walk(&u, s);
  free(u.bound);
  return r;
}
