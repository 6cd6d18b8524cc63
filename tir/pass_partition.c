/* pass_partition.c — loop partitioning (see passes.h), after TVM's LoopPartition.
 *
 * Padded convolutions and splits of non-divisible extents leave boundary tests
 * in the innermost loops: `if 0 <= h + kh - 1 < H`, `if io*4 + ii < N`. They
 * are false only near the ends of a loop's range, so the loop is cut in three:
 * the middle runs where every such test is provably true and loses them, the
 * two ends keep them (and usually are a single iteration, which the simplifier
 * turns into straight-line code where the test folds).
 *
 * For a loop over v ∈ [lo, hi] (constant bounds), every condition in its body
 * (if statements, if_then_else and select; each conjunct of a conjunction on
 * its own) is solved for v with arith_solve: the values of v for which it
 * holds whatever the other variables in it (inner loop variables, within
 * their ranges) are — or, for a condition never provably true on a whole
 * iteration, for which it provably fails (a reflect pad's `j < 0` with j over a
 * vector of 16: false from the second vector on); lets of the body are seen
 * through. Conditions decided on only part of [lo, hi] are candidates; the main range is the intersection of their
 * true ranges (or, when that is empty, the first one's). Each piece is then
 * simplified in the enclosing loops' context and partitioned again — the ends
 * may hold other conditions — up to a small depth that bounds code growth. */
#include <stdlib.h>
#include "tir_passes.h"

enum { MAX_SPLITS = 3 }; /* times one loop may be cut along one path */

typedef struct part {
  tir_builder *b;
  arith_ctx *ctx;
  int masked; /* the target's masked loads: a vector loop is not cut around one */
} part;

/* What conditions of a loop body say about the loop variable. */
typedef struct cands {
  const tir_var *v;
  arith_range loop;  /* [lo, hi] */
  arith_range main;  /* intersection of the partial true ranges so far */
  arith_range first; /* the first partial true range */
  int n;             /* partial conditions seen */
  int empty;         /* their intersection became empty */
  int32_t nlets, cap; /* lets of the body in scope, innermost last: conditions */
  const tir_var **let_var; /* are read with their values in place, so that */
  tir_expr **let_val;      /* `let t = v*4 + j; if t < n` is seen as linear in v */
  int vector;              /* v is a vector loop's: its masked loads are no cut */
} cands;

static void consider(part *p, cands *c, const tir_expr *cond) {
  arith_range r;
  if (cond->kind == TIR_BINARY && cond->u.bin.op == TE_AND && cond->dtype == GIR_BOOL) {
    /* each conjunct on its own: those about other variables are for other
     * loops to remove (the 2-D padding test is h's pair and w's pair) */
    consider(p, c, cond->u.bin.a);
    consider(p, c, cond->u.bin.b);
    return;
  }
  if (cond->lanes != 1) return;
  tir_expr *x = (tir_expr *)cond;
  for (int32_t i = c->nlets - 1; i >= 0; i--) x = tir_substitute_expr(p->b, x, c->let_var[i], c->let_val[i]);
  if (arith_solve(p->ctx, x, c->v, 1, &r) < 0) return;
  if (r.min < c->loop.min) r.min = c->loop.min;
  if (r.max > c->loop.max) r.max = c->loop.max;
  if (r.min > r.max) { /* never provably true here: the range where it is provably false cuts as well */
    if (arith_solve(p->ctx, tir_un(p->b, TE_NOT, x), c->v, 1, &r) < 0) return;
    if (r.min < c->loop.min) r.min = c->loop.min;
    if (r.max > c->loop.max) r.max = c->loop.max;
    if (r.min > r.max) return; /* never decided on a whole iteration */
  }
  if (r.min == c->loop.min && r.max == c->loop.max) return;       /* true throughout: no cut needed */
  if (c->n++ == 0) {
    c->first = c->main = r;
    return;
  }
  arith_range m = {r.min > c->main.min ? r.min : c->main.min, r.max < c->main.max ? r.max : c->main.max};
  if (m.min > m.max) c->empty = 1;
  else if (!c->empty) c->main = m;
}

static void collect_expr(part *p, cands *c, const tir_expr *e) {
  switch (e->kind) {
  case TIR_LOAD: collect_expr(p, c, e->u.load.index); break;
  case TIR_UNARY: collect_expr(p, c, e->u.un.a); break;
  case TIR_BINARY:
    collect_expr(p, c, e->u.bin.a);
    collect_expr(p, c, e->u.bin.b);
    break;
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    if (!c->vector || e->kind != TIR_IF_THEN_ELSE || !tir_is_masked_load(e)) consider(p, c, e->u.sel.c);
    collect_expr(p, c, e->u.sel.c);
    collect_expr(p, c, e->u.sel.a);
    collect_expr(p, c, e->u.sel.b);
    break;
  case TIR_CAST: case TIR_BITCAST: collect_expr(p, c, e->u.cast.a); break;
  case TIR_RAMP:
    collect_expr(p, c, e->u.ramp.base);
    collect_expr(p, c, e->u.ramp.stride);
    break;
  case TIR_BROADCAST: collect_expr(p, c, e->u.bcast.value); break;
  case TIR_DOT4:
    collect_expr(p, c, e->u.dot4.acc);
    collect_expr(p, c, e->u.dot4.a);
    collect_expr(p, c, e->u.dot4.b);
    break;
  default: break;
  }
}

/* Enters the range of a loop variable (as the simplifier does). */
static void enter_loop(part *p, const tir_stmt *s) {
  tir_expr *min = s->u.loop.min, *ext = s->u.loop.extent;
  if (min->lanes != 1 || min->dtype != ext->dtype || !gir_dtype_is_int(min->dtype) || min->dtype == GIR_U64) return;
  tir_expr *last = tir_bin(p->b, TE_SUB, tir_bin(p->b, TE_ADD, min, ext), tir_int(p->b, ext->dtype, 1));
  arith_range lo = arith_bounds(p->ctx, min), hi = arith_bounds(p->ctx, last);
  if (lo.min <= hi.max) arith_ctx_push(p->ctx, s->u.loop.var, (arith_range){lo.min, hi.max});
}

static void enter_let(part *p, const tir_stmt *s) {
  const tir_expr *val = s->u.let.value;
  if (val->lanes == 1 && gir_dtype_is_int(val->dtype) && val->dtype != GIR_U64)
    arith_ctx_push(p->ctx, s->u.let.var, arith_bounds(p->ctx, val));
}

static void collect(part *p, cands *c, const tir_stmt *s) {
  if (!s) return;
  int32_t mark = arith_ctx_mark(p->ctx);
  switch (s->kind) {
  case TIR_FOR:
    collect_expr(p, c, s->u.loop.min);
    collect_expr(p, c, s->u.loop.extent);
    enter_loop(p, s);
    collect(p, c, s->u.loop.body);
    break;
  case TIR_LET: {
    collect_expr(p, c, s->u.let.value);
    enter_let(p, s);
    if (c->nlets == c->cap) {
      int32_t cap = c->cap ? 2 * c->cap : 8;
      const tir_var **vs = gir_arena_alloc(p->ctx->arena, sizeof *vs * (size_t)cap);
      tir_expr **xs = gir_arena_alloc(p->ctx->arena, sizeof *xs * (size_t)cap);
      if (!vs || !xs) abort();
      for (int32_t i = 0; i < c->nlets; i++) {
        vs[i] = c->let_var[i];
        xs[i] = c->let_val[i];
      }
      c->let_var = vs;
      c->let_val = xs;
      c->cap = cap;
    }
    c->let_var[c->nlets] = s->u.let.var;
    c->let_val[c->nlets++] = s->u.let.value;
    collect(p, c, s->u.let.body);
    c->nlets--;
    break;
  }
  case TIR_IF:
    consider(p, c, s->u.ifs.cond);
    collect_expr(p, c, s->u.ifs.cond);
    arith_ctx_assume(p->ctx, s->u.ifs.cond, 1);
    collect(p, c, s->u.ifs.then_s);
    arith_ctx_reset(p->ctx, mark);
    arith_ctx_assume(p->ctx, s->u.ifs.cond, 0);
    collect(p, c, s->u.ifs.else_s);
    break;
  case TIR_STORE:
    collect_expr(p, c, s->u.store.index);
    collect_expr(p, c, s->u.store.value);
    break;
  case TIR_PREFETCH: collect_expr(p, c, s->u.prefetch.index); break;
  case TIR_FAIL: collect_expr(p, c, s->u.fail.value); break;
  case TIR_ALLOCATE: collect(p, c, s->u.alloc.body); break;
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++) collect(p, c, s->u.seq.s[i]);
    break;
  default: break;
  }
  arith_ctx_reset(p->ctx, mark);
}

static tir_stmt *walk(part *p, tir_stmt *s, int splits);

/* One piece [a, b] of loop s, simplified and partitioned further. A piece of one
 * iteration is no loop any more: what the simplifier leaves is s's body, whose loops
 * start their own count of cuts (as walk_for gives a body it does not cut), rather
 * than inheriting s's — the first 16-lane vector of a YOLO head's 85 attributes, cut
 * once along the rows, kept two of its three branch points. */
static tir_stmt *piece(part *p, const tir_stmt *s, int64_t a, int64_t b, int splits) {
  gir_dtype t = s->u.loop.min->dtype;
  tir_stmt *loop = tir_for(p->b, s->u.loop.var, tir_int(p->b, t, a), tir_int(p->b, t, b - a + 1), s->u.loop.kind,
                           s->u.loop.body);
  tir_stmt *r = tir_simplify_in(p->b, p->ctx, loop);
  int same = r->kind == TIR_FOR && r->u.loop.var == s->u.loop.var;
  return walk(p, r, same ? splits + 1 : 0);
}

static tir_stmt *walk_for(part *p, tir_stmt *s, int splits) {
  tir_expr *min = s->u.loop.min, *ext = s->u.loop.extent;
  int64_t lo, hi;
  /* a loop bound to the GPU grid keeps its range: the launch's geometry */
  int bounded = !tir_for_kind_is_gpu(s->u.loop.kind) && min->kind == TIR_INT && ext->kind == TIR_INT && ext->u.i > 1 &&
                gir_dtype_is_int(min->dtype) &&
                min->dtype != GIR_U64 && !__builtin_add_overflow(min->u.i, ext->u.i - 1, &hi);
  lo = min->u.i;
  if (bounded && splits < MAX_SPLITS) {
    int32_t mark = arith_ctx_mark(p->ctx);
    arith_ctx_push(p->ctx, s->u.loop.var, (arith_range){lo, hi});
    cands c = {s->u.loop.var, {lo, hi}, {0, 0}, {0, 0}, 0, 0, 0, 0, NULL, NULL, p->masked && s->u.loop.kind == TIR_VECTORIZED};
    collect(p, &c, s->u.loop.body);
    arith_ctx_reset(p->ctx, mark);
    /* a vector loop is cut too (`if i < n`, the guard of a ragged last vector; a
     * pad's boundary inside a vector): each piece stays a shorter vector without
     * the test, where the test would keep the whole loop scalar — except around a
     * masked load (a padded input read through its bounds test), which stays whole */
    if (c.n) {
      arith_range m = c.empty ? c.first : c.main;
      tir_stmt *xs[3] = {NULL, NULL, NULL};
      if (m.min > lo) xs[0] = piece(p, s, lo, m.min - 1, splits);
      xs[1] = piece(p, s, m.min, m.max, splits);
      if (m.max < hi) xs[2] = piece(p, s, m.max + 1, hi, splits);
      tir_stmt *r = tir_seq(p->b, xs, 3);
      return r->u.seq.n == 1 ? r->u.seq.s[0] : r;
    }
  }
  int32_t mark = arith_ctx_mark(p->ctx);
  enter_loop(p, s);
  tir_stmt *body = walk(p, s->u.loop.body, 0);
  arith_ctx_reset(p->ctx, mark);
  return body == s->u.loop.body ? s : tir_for(p->b, s->u.loop.var, min, ext, s->u.loop.kind, body);
}

static tir_stmt *walk(part *p, tir_stmt *s, int splits) {
  if (!s) return s;
  int32_t mark = arith_ctx_mark(p->ctx);
  tir_stmt *r = s;
  switch (s->kind) {
  case TIR_FOR: r = walk_for(p, s, splits); break;
  case TIR_LET: {
    enter_let(p, s);
    tir_stmt *body = walk(p, s->u.let.body, 0);
    if (body != s->u.let.body) r = tir_let(p->b, s->u.let.var, s->u.let.value, body);
    break;
  }
  case TIR_IF: {
    arith_ctx_assume(p->ctx, s->u.ifs.cond, 1);
    tir_stmt *t = walk(p, s->u.ifs.then_s, 0);
    arith_ctx_reset(p->ctx, mark);
    arith_ctx_assume(p->ctx, s->u.ifs.cond, 0);
    tir_stmt *e = walk(p, s->u.ifs.else_s, 0);
    if (t != s->u.ifs.then_s || e != s->u.ifs.else_s) r = tir_if(p->b, s->u.ifs.cond, t, e);
    break;
  }
  case TIR_ALLOCATE: {
    tir_stmt *body = walk(p, s->u.alloc.body, 0);
    if (body != s->u.alloc.body) r = tir_allocate(p->b, s->u.alloc.buf, body);
    break;
  }
  case TIR_SEQ: {
    tir_stmt **xs = NULL;
    for (int32_t i = 0; i < s->u.seq.n; i++) {
      tir_stmt *x = walk(p, s->u.seq.s[i], 0);
      if (x != s->u.seq.s[i] && !xs) {
        xs = gir_arena_alloc(p->b->arena, sizeof(tir_stmt *) * (size_t)s->u.seq.n);
        if (!xs) abort();
        for (int32_t j = 0; j < i; j++) xs[j] = s->u.seq.s[j];
      }
      if (xs) xs[i] = x;
    }
    if (xs) r = tir_seq(p->b, xs, s->u.seq.n);
    break;
  }
  default: break;
  }
  arith_ctx_reset(p->ctx, mark);
  return r;
}

tir_stmt *tir_loop_partition(tir_builder *b, tir_stmt *s, int masked_loads) {
  gir_arena *tmp = gir_arena_new();
  if (!tmp) abort();
  arith_ctx ctx;
  arith_ctx_init(&ctx, tmp);
  part p = {b, &ctx, masked_loads};
  tir_stmt *r = walk(&p, tir_simplify_in(b, &ctx, s), 0);
  gir_arena_free(tmp);
  return r;
}
