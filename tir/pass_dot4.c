/* pass_dot4.c — four unrolled 8-bit multiply-adds into one accumulator become one
 * 4-way dot product (TIR_DOT4: vpdpbusd with AVX-512 VNNI, sdot/udot/usdot on aarch64).
 *
 * The int8 conv template (schedule/sched_conv.c) runs each quad of input channels
 * innermost, unrolled, and the weights are packed in quads ([.., ob, 4]), so after
 * vectorizing and unrolling every accumulator vector gets four statements in a row:
 *   acc[I] = acc[I] + int32(w[ramp(p + j, 4, L)]) * x_L(int32(x[q + j]))   j = 0..3
 * (one weight byte per lane at stride 4, one input byte broadcast). This pass
 * replaces each such run by
 *   acc[I] = dot4(acc[I], x[ramp(q, 1, 4)], w[ramp(p, 1, 4L)])
 * — the four bytes of one pixel and one contiguous vector of weights, the very
 * operands of the instruction. On scalar lanes (L = 1: Cortex-M4/M7, whose C
 * kernels make a dot4 of two 4-byte words two SMLADs) the four statements are
 *   acc = acc + int32(x[q + j]) * int32(w[p + j])   j = 0..3
 * and become dot4(acc, x[ramp(q, 1, 4)], w[ramp(p, 1, 4)]). It only rewrites what it recognizes exactly (same
 * buffer and index, offsets p + j and q + j proved by linear forms), so anything
 * else keeps its meaning and merely stays unfused. */
#include "tir_passes.h"
#include "arith.h"

typedef struct mac {
  tir_buffer *x, *w;      /* the broadcast 8-bit input and the 8-bit weights */
  const tir_expr *xi, *wi; /* x's scalar index; w's ramp base (stride 4) */
} mac;

static int is8(gir_dtype t) { return t == GIR_U8 || t == GIR_I8; }

/* int32(load 8-bit) as a scalar, or its broadcast either side of the cast. */
static const tir_expr *bcast_byte(const tir_expr *e, int32_t lanes) {
  if (e->kind == TIR_BROADCAST && e->lanes == lanes) e = e->u.bcast.value;
  else if (e->kind == TIR_CAST && e->lanes == lanes && e->u.cast.a->kind == TIR_BROADCAST)
    e = e->u.cast.a->u.bcast.value;
  else return NULL;
  if (e->kind == TIR_CAST && e->lanes == 1) e = e->u.cast.a;
  return e->kind == TIR_LOAD && e->lanes == 1 && is8(e->dtype) ? e : NULL;
}

/* int32(w[ramp(p, 4, lanes)]) */
static const tir_expr *strided_bytes(const tir_expr *e, int32_t lanes) {
  if (e->kind != TIR_CAST || e->lanes != lanes) return NULL;
  e = e->u.cast.a;
  if (e->kind != TIR_LOAD || !is8(e->dtype)) return NULL;
  const tir_expr *ix = e->u.load.index;
  if (ix->kind != TIR_RAMP || ix->u.ramp.stride->kind != TIR_INT || ix->u.ramp.stride->u.i != 4) return NULL;
  return e;
}

/* int32(load 8-bit), a scalar. */
static const tir_expr *scalar_byte(const tir_expr *e) {
  if (e->kind != TIR_CAST || e->lanes != 1) return NULL;
  e = e->u.cast.a;
  return e->kind == TIR_LOAD && e->lanes == 1 && is8(e->dtype) ? e : NULL;
}

/* s: buf[I] = buf[I] + P * Q with {P, Q} as above — or, on scalar lanes (the conv
 * template's quads on a target without vectors), two scalar bytes whose indices
 * step by one through the quad on both sides (x: the first factor, w: the second). */
static int match(const tir_stmt *s, mac *m) {
  if (s->kind != TIR_STORE || s->u.store.buf->dtype != GIR_I32) return 0;
  const tir_expr *v = s->u.store.value;
  int32_t L = v->lanes;
  if (v->kind != TIR_BINARY || v->u.bin.op != TE_ADD) return 0;
  const tir_expr *acc = v->u.bin.a, *prod = v->u.bin.b;
  if (prod->kind == TIR_LOAD) {
    const tir_expr *t = acc;
    acc = prod;
    prod = t;
  }
  if (acc->kind != TIR_LOAD || acc->u.load.buf != s->u.store.buf || !arith_expr_equal(acc->u.load.index, s->u.store.index))
    return 0;
  if (prod->kind != TIR_BINARY || prod->u.bin.op != TE_MUL) return 0;
  if (L == 1) {
    const tir_expr *a = scalar_byte(prod->u.bin.a), *b = scalar_byte(prod->u.bin.b);
    if (!a || !b) return 0;
    *m = (mac){a->u.load.buf, b->u.load.buf, a->u.load.index, b->u.load.index};
    return 1;
  }
  const tir_expr *xl = bcast_byte(prod->u.bin.b, L), *wl = strided_bytes(prod->u.bin.a, L);
  if (!xl || !wl) {
    xl = bcast_byte(prod->u.bin.a, L);
    wl = strided_bytes(prod->u.bin.b, L);
  }
  if (!xl || !wl) return 0;
  *m = (mac){xl->u.load.buf, wl->u.load.buf, xl->u.load.index, wl->u.load.index->u.ramp.base};
  return 1;
}

/* b - a == k, from linear forms (modulo 2^64: both index one buffer, so that is the
 * same as exactly). */
static int offset_is(const arith_ctx *ac, const tir_expr *a, const tir_expr *b, int64_t k) {
  if (a->dtype != b->dtype || a->lanes != 1 || b->lanes != 1 || !arith_linear_dtype(a->dtype)) return 0;
  arith_linear la = arith_linear_of(ac, a), lb = arith_linear_of(ac, b), d = arith_linear_add(ac, &lb, &la, -1);
  return d.n == 0 && d.c == k;
}

/* Statements i..i+3 of seq are one quad: returns the fused store or NULL. */
static tir_stmt *fuse(tir_builder *b, const arith_ctx *ac, tir_stmt *const *s) {
  mac m[4];
  for (int j = 0; j < 4; j++)
    if (!match(s[j], &m[j])) return NULL;
  for (int j = 1; j < 4; j++) {
    if (s[j]->u.store.buf != s[0]->u.store.buf || !arith_expr_equal(s[j]->u.store.index, s[0]->u.store.index) ||
        m[j].x != m[0].x || m[j].w != m[0].w || !offset_is(ac, m[0].xi, m[j].xi, j) ||
        !offset_is(ac, m[0].wi, m[j].wi, j))
      return NULL;
  }
  int32_t L = s[0]->u.store.value->lanes;
  tir_expr *one = tir_int(b, m[0].xi->dtype, 1), *wone = tir_int(b, m[0].wi->dtype, 1);
  tir_expr *xa = tir_load(b, m[0].x, tir_ramp(b, (tir_expr *)m[0].xi, one, 4));
  tir_expr *wv = tir_load(b, m[0].w, tir_ramp(b, (tir_expr *)m[0].wi, wone, 4 * L));
  tir_expr *acc = tir_load(b, s[0]->u.store.buf, s[0]->u.store.index);
  tir_expr *d = tir_dot4(b, acc, xa, wv);
  return d ? tir_store(b, s[0]->u.store.buf, s[0]->u.store.index, d) : NULL;
}

static tir_stmt *walk(tir_builder *b, const arith_ctx *ac, tir_stmt *s) {
  if (!s) return s;
  switch (s->kind) {
  case TIR_FOR:
    return tir_for(b, s->u.loop.var, s->u.loop.min, s->u.loop.extent, s->u.loop.kind, walk(b, ac, s->u.loop.body));
  case TIR_LET: return tir_let(b, s->u.let.var, s->u.let.value, walk(b, ac, s->u.let.body));
  case TIR_IF: return tir_if(b, s->u.ifs.cond, walk(b, ac, s->u.ifs.then_s), walk(b, ac, s->u.ifs.else_s));
  case TIR_ALLOCATE: return tir_allocate(b, s->u.alloc.buf, walk(b, ac, s->u.alloc.body));
  case TIR_SEQ: {
    int32_t n = s->u.seq.n, k = 0;
    tir_stmt **out = gir_arena_calloc(b->arena, (size_t)n + 1, sizeof *out);
    for (int32_t i = 0; i < n;) {
      tir_stmt *f = i + 4 <= n ? fuse(b, ac, s->u.seq.s + i) : NULL;
      if (f) {
        out[k++] = f;
        i += 4;
      } else {
        out[k++] = walk(b, ac, s->u.seq.s[i++]);
      }
    }
    return tir_seq(b, out, k);
  }
  default: return s;
  }
}

tir_stmt *tir_fuse_dot4(tir_builder *b, tir_stmt *s) {
  arith_ctx ac;
  arith_ctx_init(&ac, b->arena);
  return walk(b, &ac, s);
}
