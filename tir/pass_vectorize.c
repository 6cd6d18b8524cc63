/* pass_vectorize.c — turns loops annotated VECTORIZED into vector code. The loop
 * variable v becomes ramp(min, 1, lanes); every expression that depends on v
 * becomes a vector of `lanes` lanes, the rest stays scalar and is broadcast where
 * it meets a vector; loads and stores with vector indices become vector memory
 * operations (contiguous ramps are what targets turn into plain vector loads).
 *
 * A loop is vectorized only when that is plainly safe: a constant extent of at
 * most 64, a body of stores, lets and ifs whose conditions do not depend on v (no
 * inner loops, no allocation), every store's index depending on v (two lanes
 * never write one location) and no lazy if_then_else over v (a vector select
 * would evaluate both sides) other than a masked load on a target that has them
 * (below), and no dot4 (it appears only in code that is
 * already vector; widening it is not supported). Otherwise the loop stays serial
 * — still correct, and loop partition may make it vectorizable first. */
#include "tir_passes.h"

typedef struct vctx {
  tir_builder *b;
  tir_var *v;
  tir_expr *ramp;
  int32_t lanes;
  int ok;
  int masked; /* masked loads over the lanes are vectors (tir_vectorize's masked_loads) */
  /* let-bound variables that became vectors: substituted by their value */
  tir_var *lv[32];
  tir_expr *lval[32];
  int nl;
} vctx;

static int depends(const tir_expr *e, const vctx *x);

static int depends(const tir_expr *e, const vctx *x) {
  switch (e->kind) {
  case TIR_VAR:
    if (e->u.var == x->v) return 1;
    for (int i = 0; i < x->nl; i++)
      if (x->lv[i] == e->u.var) return 1;
    return 0;
  case TIR_LOAD: return depends(e->u.load.index, x);
  case TIR_UNARY: return depends(e->u.un.a, x);
  case TIR_BINARY: return depends(e->u.bin.a, x) || depends(e->u.bin.b, x);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    return depends(e->u.sel.c, x) || depends(e->u.sel.a, x) || depends(e->u.sel.b, x);
  case TIR_CAST: case TIR_BITCAST: return depends(e->u.cast.a, x);
  case TIR_RAMP: return depends(e->u.ramp.base, x) || depends(e->u.ramp.stride, x);
  case TIR_BROADCAST: return depends(e->u.bcast.value, x);
  case TIR_DOT4: case TIR_SHUFFLE: return 1; /* treated as varying, so that vec meets it and refuses the loop */
  default: return 0;
  }
}

/* if_then_else(c, buf[i], b) with nothing else that reads memory: per lane a masked
 * load (a padded conv's input read through its bounds test, the lanes in the padding
 * never loaded), which every backend evaluates lazily lane by lane and the LLVM one
 * as one masked vector load — for the 32- and 64-bit types, whose registers hold
 * what memory does (float16 or 8-bit lanes would take the lane-by-lane path there) */
int tir_is_masked_load(const tir_expr *e) {
  const tir_expr *a = e->u.sel.a;
  if (a->kind != TIR_LOAD) return 0;
  gir_dtype t = a->u.load.buf->dtype;
  return (t == GIR_F32 || t == GIR_F64 || t == GIR_I32 || t == GIR_I64) && !tir_expr_reads_memory(a->u.load.index) &&
         !tir_expr_reads_memory(e->u.sel.c) && !tir_expr_reads_memory(e->u.sel.b);
}

static tir_expr *widen(vctx *x, tir_expr *e) { return e->lanes == 1 ? tir_broadcast(x->b, e, x->lanes) : e; }

static tir_expr *vec(vctx *x, tir_expr *e) {
  if (!x->ok || !depends(e, x)) return e;
  tir_builder *b = x->b;
  switch (e->kind) {
  case TIR_VAR:
    if (e->u.var == x->v) return x->ramp;
    for (int i = 0; i < x->nl; i++)
      if (x->lv[i] == e->u.var) return x->lval[i];
    return e;
  case TIR_LOAD: return tir_load(b, e->u.load.buf, widen(x, vec(x, e->u.load.index)));
  case TIR_UNARY: return tir_un(b, e->u.un.op, widen(x, vec(x, e->u.un.a)));
  case TIR_BINARY: {
    tir_expr *a = vec(x, e->u.bin.a), *c = vec(x, e->u.bin.b);
    return tir_bin(b, e->u.bin.op, widen(x, a), widen(x, c));
  }
  case TIR_SELECT: {
    tir_expr *c = vec(x, e->u.sel.c), *a = vec(x, e->u.sel.a), *d = vec(x, e->u.sel.b);
    return tir_select(b, c, widen(x, a), widen(x, d));
  }
  case TIR_IF_THEN_ELSE:
    if (depends(e->u.sel.c, x) && !(x->masked && tir_is_masked_load(e))) {
      x->ok = 0; /* a lazy choice per lane cannot be a vector select */
      return e;
    }
    if (depends(e->u.sel.c, x))
      return tir_if_then_else(b, widen(x, vec(x, e->u.sel.c)), widen(x, vec(x, e->u.sel.a)), widen(x, vec(x, e->u.sel.b)));
    return tir_if_then_else(b, e->u.sel.c, widen(x, vec(x, e->u.sel.a)), widen(x, vec(x, e->u.sel.b)));
  case TIR_CAST: return tir_cast(b, e->dtype, widen(x, vec(x, e->u.cast.a)));
  case TIR_BITCAST: return tir_bitcast(b, e->dtype, widen(x, vec(x, e->u.cast.a)));
  default: x->ok = 0; return e; /* dot4 included */
  }
}

static tir_stmt *vec_stmt(vctx *x, tir_stmt *s) {
  if (!x->ok || !s) return s;
  tir_builder *b = x->b;
  switch (s->kind) {
  case TIR_STORE: {
    if (!depends(s->u.store.index, x)) {
      x->ok = 0;
      return s;
    }
    tir_expr *ix = widen(x, vec(x, s->u.store.index)), *val = widen(x, vec(x, s->u.store.value));
    return tir_store(b, s->u.store.buf, ix, val);
  }
  case TIR_FAIL: /* a report per lane is not expressible: stays a serial loop */
    x->ok = 0;
    return s;
  case TIR_PREFETCH: /* one line covers the lanes: lane 0's address */
    return tir_prefetch(b, s->u.prefetch.buf, tir_substitute_expr(b, s->u.prefetch.index, x->v, x->ramp->u.ramp.base));
  case TIR_LET: {
    if (depends(s->u.let.value, x)) {
      if (x->nl == 32) {
        x->ok = 0;
        return s;
      }
      x->lv[x->nl] = s->u.let.var;
      x->lval[x->nl++] = widen(x, vec(x, s->u.let.value));
      return vec_stmt(x, s->u.let.body);
    }
    return tir_let(b, s->u.let.var, s->u.let.value, vec_stmt(x, s->u.let.body));
  }
  case TIR_IF:
    if (depends(s->u.ifs.cond, x)) {
      x->ok = 0;
      return s;
    }
    return tir_if(b, s->u.ifs.cond, vec_stmt(x, s->u.ifs.then_s), vec_stmt(x, s->u.ifs.else_s));
  case TIR_SEQ: {
    tir_stmt **xs = gir_arena_calloc(b->arena, (size_t)s->u.seq.n + 1, sizeof *xs);
    for (int i = 0; i < s->u.seq.n; i++) xs[i] = vec_stmt(x, s->u.seq.s[i]);
    return tir_seq(b, xs, s->u.seq.n);
  }
  default: x->ok = 0; return s;
  }
}

static tir_stmt *walk(tir_builder *b, tir_stmt *s, int masked) {
  if (!s) return s;
  switch (s->kind) {
  case TIR_FOR: {
    tir_stmt *body = walk(b, s->u.loop.body, masked);
    if (s->u.loop.kind == TIR_VECTORIZED && s->u.loop.extent->kind == TIR_INT && s->u.loop.extent->u.i > 1 &&
        s->u.loop.extent->u.i <= 64) {
      vctx x = {.b = b, .v = s->u.loop.var, .lanes = (int32_t)s->u.loop.extent->u.i, .ok = 1, .masked = masked};
      x.ramp = tir_ramp(b, s->u.loop.min, tir_i64(b, 1), x.lanes);
      tir_stmt *vb = vec_stmt(&x, body);
      if (x.ok) return vb;
    }
    tir_for_kind k = s->u.loop.kind == TIR_VECTORIZED ? TIR_SERIAL : s->u.loop.kind;
    return tir_for(b, s->u.loop.var, s->u.loop.min, s->u.loop.extent, k, body);
  }
  case TIR_LET: return tir_let(b, s->u.let.var, s->u.let.value, walk(b, s->u.let.body, masked));
  case TIR_IF: return tir_if(b, s->u.ifs.cond, walk(b, s->u.ifs.then_s, masked), walk(b, s->u.ifs.else_s, masked));
  case TIR_ALLOCATE: return tir_allocate(b, s->u.alloc.buf, walk(b, s->u.alloc.body, masked));
  case TIR_SEQ: {
    tir_stmt **xs = gir_arena_calloc(b->arena, (size_t)s->u.seq.n + 1, sizeof *xs);
    for (int i = 0; i < s->u.seq.n; i++) xs[i] = walk(b, s->u.seq.s[i], masked);
    return tir_seq(b, xs, s->u.seq.n);
  }
  default: return s;
  }
}

tir_stmt *tir_vectorize(tir_builder *b, tir_stmt *s, int masked_loads) { return walk(b, s, masked_loads); }
