/* pass_unroll.c — unrolling of UNROLLED loops (see passes.h).
 *
 * Top-down: each copy is the body with the loop variable replaced by min + i,
 * simplified (folding the constants this exposes: index arithmetic, boundary
 * tests — what makes unrolled register tiles cheap) and then unrolled in turn,
 * so an inner unrolled loop whose extent depends on the outer variable (the
 * tail of a non-divisible split) has a constant extent by the time it is
 * reached. An unrolled nest becomes one flat sequence. The same inner
 * variables (lets, loops) appear in several copies; they are bound in sibling
 * scopes, never nested, which the IR allows. */
#include <stdlib.h>
#include "tir_passes.h"

static tir_stmt *unroll(tir_builder *b, tir_stmt *s, int64_t max_extent) {
  if (!s) return s;
  switch (s->kind) {
  case TIR_FOR: {
    tir_expr *min = s->u.loop.min, *ext = s->u.loop.extent;
    if (s->u.loop.kind == TIR_UNROLLED && ext->kind == TIR_INT && ext->u.i <= max_extent) {
      int64_t n = ext->u.i > 0 ? ext->u.i : 0;
      tir_stmt **copies = gir_arena_alloc(b->arena, sizeof(tir_stmt *) * (size_t)(n + 1));
      if (!copies) abort();
      for (int64_t i = 0; i < n; i++) {
        tir_expr *at = min->kind == TIR_INT ? tir_int(b, min->dtype, (int64_t)((uint64_t)min->u.i + (uint64_t)i))
                                            : tir_bin(b, TE_ADD, min, tir_int(b, min->dtype, i));
        /* simplified before going deeper: inner extents may now be constants */
        copies[i] = unroll(b, tir_simplify(b, tir_substitute(b, s->u.loop.body, s->u.loop.var, at)), max_extent);
      }
      return tir_seq(b, copies, (int32_t)n);
    }
    tir_stmt *body = unroll(b, s->u.loop.body, max_extent);
    tir_for_kind kind = s->u.loop.kind == TIR_UNROLLED ? TIR_SERIAL : s->u.loop.kind;
    if (body == s->u.loop.body && kind == s->u.loop.kind) return s;
    return tir_for(b, s->u.loop.var, min, ext, kind, body);
  }
  case TIR_LET: {
    tir_stmt *body = unroll(b, s->u.let.body, max_extent);
    return body == s->u.let.body ? s : tir_let(b, s->u.let.var, s->u.let.value, body);
  }
  case TIR_IF: {
    tir_stmt *t = unroll(b, s->u.ifs.then_s, max_extent), *e = unroll(b, s->u.ifs.else_s, max_extent);
    return t == s->u.ifs.then_s && e == s->u.ifs.else_s ? s : tir_if(b, s->u.ifs.cond, t, e);
  }
  case TIR_ALLOCATE: {
    tir_stmt *body = unroll(b, s->u.alloc.body, max_extent);
    return body == s->u.alloc.body ? s : tir_allocate(b, s->u.alloc.buf, body);
  }
  case TIR_SEQ: {
    tir_stmt **xs = gir_arena_alloc(b->arena, sizeof(tir_stmt *) * (size_t)(s->u.seq.n + 1));
    if (!xs) abort();
    for (int32_t i = 0; i < s->u.seq.n; i++) xs[i] = unroll(b, s->u.seq.s[i], max_extent);
    return tir_seq(b, xs, s->u.seq.n);
  }
  default: return s;
  }
}

tir_stmt *tir_unroll(tir_builder *b, tir_stmt *s, int64_t max_extent) {
  /* simplify first so that extents written as arithmetic are seen as constants */
  return tir_simplify(b, unroll(b, tir_simplify(b, s), max_extent));
}
