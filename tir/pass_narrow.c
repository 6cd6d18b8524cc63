/* pass_narrow.c — vector index arithmetic in 32 bits where it provably fits.
 *
 * Loop-IR indices are int64. A vector load or store whose index is not a ramp of
 * unit or small stride, nor a broadcast, becomes a gather or scatter, its index
 * computed lane by lane in int64 — and x86 has no 64-bit vector multiply-high, so
 * LLVM turns a division or remainder by a constant there (a flatten after a blocked
 * conv: channel = i / 49, pixel = i % 49) into one scalar division per lane, and a
 * gather with 64-bit indices takes two instructions for 16 lanes. When interval
 * analysis (arith.h) proves that every intermediate value of such an index lies in
 * int32's range, the index is rebuilt in int32 — the same values, as nothing
 * wraps — and widened once at the end: the divisions become a few vector
 * multiplies and shifts, the gather takes 32-bit indices. Loop variables get
 * their loops' ranges, let variables their values', if branches the facts their
 * conditions give; anything unbounded keeps its int64 index.
 * Requires: vectorized code (vector indices). Guarantees: the same values at every
 * load and store; only gather and scatter indices change. */
#include "arith.h"
#include "tir_passes.h"

typedef struct nctx {
  tir_builder *b;
  arith_ctx ac;
} nctx;

/* Whether the codegen loads or stores this index as whole vectors (a unit or
 * small-stride ramp, a broadcast) rather than lane by lane. */
static int contiguous(const tir_expr *ix) {
  if (ix->lanes == 1 || ix->kind == TIR_BROADCAST) return 1;
  if (ix->kind != TIR_RAMP || ix->u.ramp.stride->kind != TIR_INT) return 0;
  int64_t k = ix->u.ramp.stride->u.i;
  return k == 1 || (k >= 2 && k <= 4 && ix->lanes * k <= 64);
}

static int in_i32(const nctx *x, const tir_expr *e) {
  if (e->dtype != GIR_I64) return 0;
  arith_range r = arith_bounds(&x->ac, e);
  return r.min >= INT32_MIN && r.max <= INT32_MAX;
}

static int is_arith(te_binop op) {
  return op == TE_ADD || op == TE_SUB || op == TE_MUL || op == TE_DIV || op == TE_MOD || op == TE_FLOORDIV ||
         op == TE_FLOORMOD || op == TE_MIN || op == TE_MAX;
}

/* Every value e and its arithmetic subexpressions take lies in int32. */
static int fits(const nctx *x, const tir_expr *e) {
  if (!in_i32(x, e)) return 0;
  switch (e->kind) {
  case TIR_BINARY: return !is_arith(e->u.bin.op) || (fits(x, e->u.bin.a) && fits(x, e->u.bin.b));
  case TIR_RAMP: return fits(x, e->u.ramp.base) && fits(x, e->u.ramp.stride);
  case TIR_BROADCAST: return fits(x, e->u.bcast.value);
  default: return 1; /* a leaf: converted as a whole */
  }
}

/* e (fits) computed in int32. */
static tir_expr *narrow(tir_builder *b, const tir_expr *e) {
  switch (e->kind) {
  case TIR_INT: return tir_int(b, GIR_I32, e->u.i);
  case TIR_BINARY:
    if (is_arith(e->u.bin.op)) return tir_bin(b, e->u.bin.op, narrow(b, e->u.bin.a), narrow(b, e->u.bin.b));
    break;
  case TIR_RAMP: return tir_ramp(b, narrow(b, e->u.ramp.base), narrow(b, e->u.ramp.stride), e->lanes);
  case TIR_BROADCAST: return tir_broadcast(b, narrow(b, e->u.bcast.value), e->lanes);
  default: break;
  }
  return tir_cast(b, GIR_I32, (tir_expr *)e);
}

static tir_expr *ex(nctx *x, tir_expr *e);

/* A load's or store's index; a gather's or scatter's narrowed where it fits. */
static tir_expr *index_of(nctx *x, tir_expr *ix) {
  tir_expr *r = ex(x, ix);
  if (contiguous(r) || !fits(x, r)) return r;
  return tir_cast(x->b, GIR_I64, narrow(x->b, r));
}

static tir_expr *ex(nctx *x, tir_expr *e) {
  if (!e) return e;
  tir_builder *b = x->b;
  switch (e->kind) {
  case TIR_LOAD: {
    tir_expr *ix = index_of(x, e->u.load.index);
    return ix == e->u.load.index ? e : tir_load(b, e->u.load.buf, ix);
  }
  case TIR_UNARY: {
    tir_expr *a = ex(x, e->u.un.a);
    return a == e->u.un.a ? e : tir_un(b, e->u.un.op, a);
  }
  case TIR_BINARY: {
    tir_expr *a = ex(x, e->u.bin.a), *c = ex(x, e->u.bin.b);
    return a == e->u.bin.a && c == e->u.bin.b ? e : tir_bin(b, e->u.bin.op, a, c);
  }
  case TIR_SELECT: case TIR_IF_THEN_ELSE: {
    tir_expr *c = ex(x, e->u.sel.c), *a = ex(x, e->u.sel.a), *d = ex(x, e->u.sel.b);
    if (c == e->u.sel.c && a == e->u.sel.a && d == e->u.sel.b) return e;
    return e->kind == TIR_SELECT ? tir_select(b, c, a, d) : tir_if_then_else(b, c, a, d);
  }
  case TIR_CAST: case TIR_BITCAST: {
    tir_expr *a = ex(x, e->u.cast.a);
    if (a == e->u.cast.a) return e;
    return e->kind == TIR_CAST ? tir_cast(b, e->dtype, a) : tir_bitcast(b, e->dtype, a);
  }
  case TIR_RAMP: {
    tir_expr *a = ex(x, e->u.ramp.base), *s = ex(x, e->u.ramp.stride);
    return a == e->u.ramp.base && s == e->u.ramp.stride ? e : tir_ramp(b, a, s, e->lanes);
  }
  case TIR_BROADCAST: {
    tir_expr *v = ex(x, e->u.bcast.value);
    return v == e->u.bcast.value ? e : tir_broadcast(b, v, e->lanes);
  }
  default: return e; /* constants, variables, dot4 and shuffles (whose operands hold no gathers) */
  }
}

static tir_stmt *walk(nctx *x, tir_stmt *s) {
  if (!s) return s;
  tir_builder *b = x->b;
  int32_t mark = arith_ctx_mark(&x->ac);
  tir_stmt *r = s;
  switch (s->kind) {
  case TIR_FOR: {
    arith_range lo = arith_bounds(&x->ac, s->u.loop.min), n = arith_bounds(&x->ac, s->u.loop.extent);
    if (n.max >= 1 && lo.min <= lo.max && lo.max <= INT64_MAX - n.max)
      arith_ctx_push(&x->ac, s->u.loop.var, (arith_range){lo.min, lo.max + n.max - 1});
    tir_stmt *body = walk(x, s->u.loop.body);
    if (body != s->u.loop.body)
      r = tir_for(b, s->u.loop.var, s->u.loop.min, s->u.loop.extent, s->u.loop.kind, body);
    break;
  }
  case TIR_LET: {
    tir_expr *v = ex(x, s->u.let.value);
    if (v->lanes == 1) arith_ctx_push(&x->ac, s->u.let.var, arith_bounds(&x->ac, v));
    tir_stmt *body = walk(x, s->u.let.body);
    if (v != s->u.let.value || body != s->u.let.body) r = tir_let(b, s->u.let.var, v, body);
    break;
  }
  case TIR_IF: {
    tir_expr *c = ex(x, s->u.ifs.cond);
    arith_ctx_assume(&x->ac, s->u.ifs.cond, 1);
    tir_stmt *t = walk(x, s->u.ifs.then_s);
    arith_ctx_reset(&x->ac, mark);
    arith_ctx_assume(&x->ac, s->u.ifs.cond, 0);
    tir_stmt *f = walk(x, s->u.ifs.else_s);
    if (c != s->u.ifs.cond || t != s->u.ifs.then_s || f != s->u.ifs.else_s) r = tir_if(b, c, t, f);
    break;
  }
  case TIR_STORE: {
    tir_expr *ix = index_of(x, s->u.store.index);
    tir_expr *v = ex(x, s->u.store.value);
    if (ix != s->u.store.index || v != s->u.store.value) r = tir_store(b, s->u.store.buf, ix, v);
    break;
  }
  case TIR_ALLOCATE: {
    tir_stmt *body = walk(x, s->u.alloc.body);
    if (body != s->u.alloc.body) r = tir_allocate(b, s->u.alloc.buf, body);
    break;
  }
  case TIR_SEQ: {
    int32_t n = s->u.seq.n, changed = 0;
    tir_stmt **out = gir_arena_calloc(b->arena, (size_t)n + 1, sizeof *out);
    for (int32_t i = 0; i < n; i++) {
      out[i] = walk(x, s->u.seq.s[i]);
      changed |= out[i] != s->u.seq.s[i];
    }
    if (changed) r = tir_seq(b, out, n);
    break;
  }
  default: break; /* prefetch and fail take scalar indices; barriers and wmma are GPU code */
  }
  arith_ctx_reset(&x->ac, mark);
  return r;
}

tir_stmt *tir_narrow_indices(tir_builder *b, tir_stmt *s) {
  nctx x = {.b = b};
  arith_ctx_init(&x.ac, b->arena);
  return walk(&x, s);
}
