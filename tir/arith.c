/* arith.c — interval analysis and linear forms of integer expressions (see
 * arith.h).
 *
 * Soundness under wrapping is the whole difficulty. Every rule computes the
 * mathematical range of its result with overflow-checked int64 arithmetic and
 * then asks whether that range fits the dtype: if it does, no wrap can have
 * happened and the range is the answer; if it does not (or int64 itself
 * overflowed), the answer is the dtype's full range. Linear forms are computed
 * modulo 2^bits, which is exact whatever wraps; their mathematical value is
 * trusted only after arith_linear_exact has shown it fits the dtype.
 *
 * uint64 values are int64 bit patterns whose order is not int64's, so nothing
 * here reasons about them; narrower unsigned types are zero-extended in int64
 * and ordered correctly. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "arith.h"
#include "tir_eval.h"

static void *alloc(const arith_ctx *c, size_t n) {
  void *p = gir_arena_alloc(c->arena, n ? n : 1);
  if (!p) abort(); /* out of memory while analysing IR */
  return p;
}

/* --- ranges --- */

static arith_range rng(int64_t lo, int64_t hi) { return (arith_range){lo, hi}; }

/* Integer types whose values are ordered as int64 (every one but uint64). */
static int ordered(gir_dtype t) { return (gir_dtype_is_int(t) && t != GIR_U64) || t == GIR_BOOL; }

arith_range arith_full(gir_dtype t) {
  switch (t) {
  case GIR_I8: return rng(INT8_MIN, INT8_MAX);
  case GIR_I16: return rng(INT16_MIN, INT16_MAX);
  case GIR_I32: return rng(INT32_MIN, INT32_MAX);
  case GIR_U8: return rng(0, UINT8_MAX);
  case GIR_U16: return rng(0, UINT16_MAX);
  case GIR_U32: return rng(0, UINT32_MAX);
  case GIR_BOOL: return rng(0, 1);
  default: return rng(INT64_MIN, INT64_MAX);
  }
}

static int within(arith_range r, arith_range outer) { return r.min >= outer.min && r.max <= outer.max; }

/* r when the computation was exact (ok) and fits t, t's full range otherwise. */
static arith_range fit(gir_dtype t, arith_range r, int ok) {
  arith_range f = arith_full(t);
  return ok && r.min <= r.max && within(r, f) ? r : f;
}

static arith_range hull(arith_range a, arith_range b) {
  return rng(a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max);
}

/* Accumulates the hull of points; `bad` records an int64 overflow. */
typedef struct hullacc {
  int64_t lo, hi;
  int any, bad;
} hullacc;

static void hadd(hullacc *h, int64_t v) {
  if (!h->any || v < h->lo) h->lo = v;
  if (!h->any || v > h->hi) h->hi = v;
  h->any = 1;
}

static void hrange(hullacc *h, arith_range r) {
  hadd(h, r.min);
  hadd(h, r.max);
}

static int add_ov(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
static int sub_ov(int64_t a, int64_t b, int64_t *r) { return __builtin_sub_overflow(a, b, r); }
static int mul_ov(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }

int64_t arith_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

int64_t arith_floormod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

/* ceil(a / b) for b != 0, with overflow reported. */
static int ceildiv_ov(int64_t a, int64_t b, int64_t *r) {
  if (a == INT64_MIN && b == -1) return 1;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0))) q++;
  *r = q;
  return 0;
}

static int floordiv_ov(int64_t a, int64_t b, int64_t *r) {
  if (a == INT64_MIN && b == -1) return 1;
  *r = arith_floordiv(a, b);
  return 0;
}

/* --- context --- */

void arith_ctx_init(arith_ctx *c, gir_arena *a) {
  c->arena = a;
  c->n = c->cap = 0;
  c->b = NULL;
}

int32_t arith_ctx_mark(const arith_ctx *c) { return c->n; }

void arith_ctx_reset(arith_ctx *c, int32_t mark) {
  if (mark >= 0 && mark <= c->n) c->n = mark;
}

arith_range arith_ctx_lookup(const arith_ctx *c, const tir_var *v) {
  for (int32_t i = c->n - 1; i >= 0; i--)
    if (c->b[i].var == v) return c->b[i].r;
  return arith_full(v->dtype);
}

void arith_ctx_push(arith_ctx *c, const tir_var *v, arith_range r) {
  arith_range old = arith_ctx_lookup(c, v);
  arith_range n = rng(r.min > old.min ? r.min : old.min, r.max < old.max ? r.max : old.max);
  if (n.min > n.max) return; /* contradictory facts: unreachable code; keep what we had */
  if (n.min == old.min && n.max == old.max) return;
  if (c->n == c->cap) {
    int32_t cap = c->cap ? c->cap * 2 : 16;
    arith_binding *b = alloc(c, sizeof *b * (size_t)cap);
    if (c->n) memcpy(b, c->b, sizeof *b * (size_t)c->n);
    c->b = b;
    c->cap = cap;
  }
  c->b[c->n].var = v;
  c->b[c->n].r = n;
  c->n++;
}

/* --- structural comparison --- */

int arith_expr_cmp(const tir_expr *a, const tir_expr *b) {
  if (a == b) return 0;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  if (a->dtype != b->dtype) return a->dtype < b->dtype ? -1 : 1;
  if (a->lanes != b->lanes) return a->lanes < b->lanes ? -1 : 1;
  int r;
  switch (a->kind) {
  case TIR_INT: return a->u.i < b->u.i ? -1 : a->u.i > b->u.i;
  case TIR_FLOAT: {
    uint64_t x, y;
    memcpy(&x, &a->u.f, 8);
    memcpy(&y, &b->u.f, 8);
    return x < y ? -1 : x > y;
  }
  case TIR_VAR: return a->u.var->id < b->u.var->id ? -1 : a->u.var->id > b->u.var->id;
  case TIR_LOAD:
    if (a->u.load.buf->id != b->u.load.buf->id) return a->u.load.buf->id < b->u.load.buf->id ? -1 : 1;
    return arith_expr_cmp(a->u.load.index, b->u.load.index);
  case TIR_UNARY:
    if (a->u.un.op != b->u.un.op) return a->u.un.op < b->u.un.op ? -1 : 1;
    return arith_expr_cmp(a->u.un.a, b->u.un.a);
  case TIR_BINARY:
    if (a->u.bin.op != b->u.bin.op) return a->u.bin.op < b->u.bin.op ? -1 : 1;
    if ((r = arith_expr_cmp(a->u.bin.a, b->u.bin.a))) return r;
    return arith_expr_cmp(a->u.bin.b, b->u.bin.b);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    if ((r = arith_expr_cmp(a->u.sel.c, b->u.sel.c))) return r;
    if ((r = arith_expr_cmp(a->u.sel.a, b->u.sel.a))) return r;
    return arith_expr_cmp(a->u.sel.b, b->u.sel.b);
  case TIR_CAST: case TIR_BITCAST:
    if (a->u.cast.a->dtype != b->u.cast.a->dtype) return a->u.cast.a->dtype < b->u.cast.a->dtype ? -1 : 1;
    return arith_expr_cmp(a->u.cast.a, b->u.cast.a);
  case TIR_RAMP:
    if ((r = arith_expr_cmp(a->u.ramp.base, b->u.ramp.base))) return r;
    return arith_expr_cmp(a->u.ramp.stride, b->u.ramp.stride);
  case TIR_BROADCAST: return arith_expr_cmp(a->u.bcast.value, b->u.bcast.value);
  case TIR_DOT4:
    if ((r = arith_expr_cmp(a->u.dot4.acc, b->u.dot4.acc))) return r;
    if ((r = arith_expr_cmp(a->u.dot4.a, b->u.dot4.a))) return r;
    return arith_expr_cmp(a->u.dot4.b, b->u.dot4.b);
  case TIR_SHUFFLE:
    if (a->u.shfl.mode != b->u.shfl.mode) return a->u.shfl.mode < b->u.shfl.mode ? -1 : 1;
    if (a->u.shfl.offset != b->u.shfl.offset) return a->u.shfl.offset < b->u.shfl.offset ? -1 : 1;
    return arith_expr_cmp(a->u.shfl.value, b->u.shfl.value);
  default: return 0;
  }
}

int arith_expr_equal(const tir_expr *a, const tir_expr *b) { return arith_expr_cmp(a, b) == 0; }

int64_t arith_gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a < 0 ? -a : a;
}

int arith_uses_var(const tir_expr *e, const tir_var *v) {
  switch (e->kind) {
  case TIR_VAR: return e->u.var == v;
  case TIR_LOAD: return arith_uses_var(e->u.load.index, v);
  case TIR_UNARY: return arith_uses_var(e->u.un.a, v);
  case TIR_BINARY: return arith_uses_var(e->u.bin.a, v) || arith_uses_var(e->u.bin.b, v);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    return arith_uses_var(e->u.sel.c, v) || arith_uses_var(e->u.sel.a, v) || arith_uses_var(e->u.sel.b, v);
  case TIR_CAST: case TIR_BITCAST: return arith_uses_var(e->u.cast.a, v);
  case TIR_RAMP: return arith_uses_var(e->u.ramp.base, v) || arith_uses_var(e->u.ramp.stride, v);
  case TIR_BROADCAST: return arith_uses_var(e->u.bcast.value, v);
  case TIR_DOT4:
    return arith_uses_var(e->u.dot4.acc, v) || arith_uses_var(e->u.dot4.a, v) || arith_uses_var(e->u.dot4.b, v);
  case TIR_SHUFFLE: return arith_uses_var(e->u.shfl.value, v);
  default: return 0;
  }
}

/* --- linear forms --- */

int arith_linear_dtype(gir_dtype t) { return gir_dtype_is_int(t); }

/* The signed representative of v modulo 2^bits(t). */
static int64_t srep(gir_dtype t, int64_t v) {
  switch (gir_dtype_bits(t)) {
  case 8: return (int8_t)(uint8_t)v;
  case 16: return (int16_t)(uint16_t)v;
  case 32: return (int32_t)(uint32_t)v;
  default: return v;
  }
}

static int64_t wadd(gir_dtype t, int64_t a, int64_t b) { return srep(t, (int64_t)((uint64_t)a + (uint64_t)b)); }
static int64_t wmul(gir_dtype t, int64_t a, int64_t b) { return srep(t, (int64_t)((uint64_t)a * (uint64_t)b)); }

arith_linear arith_linear_const(gir_dtype t, int64_t v) { return (arith_linear){t, 0, NULL, srep(t, v)}; }

static arith_linear atom(const arith_ctx *c, const tir_expr *e) {
  arith_linear l = {e->dtype, 1, alloc(c, sizeof(arith_term)), 0};
  l.t[0].atom = e;
  l.t[0].coef = 1;
  return l;
}

arith_linear arith_linear_add(const arith_ctx *c, const arith_linear *x, const arith_linear *y, int64_t k) {
  gir_dtype t = x->dtype;
  arith_linear r = {t, 0, alloc(c, sizeof(arith_term) * (size_t)(x->n + y->n)), wadd(t, x->c, wmul(t, k, y->c))};
  int32_t i = 0, j = 0;
  while (i < x->n || j < y->n) {
    int cmp = i == x->n ? 1 : j == y->n ? -1 : arith_expr_cmp(x->t[i].atom, y->t[j].atom);
    arith_term term;
    if (cmp < 0) term = x->t[i++];
    else if (cmp > 0) {
      term = y->t[j++];
      term.coef = wmul(t, k, term.coef);
    } else {
      term = x->t[i++];
      term.coef = wadd(t, term.coef, wmul(t, k, y->t[j++].coef));
    }
    if (term.coef) r.t[r.n++] = term;
  }
  return r;
}

static arith_linear scale(const arith_ctx *c, const arith_linear *x, int64_t k) {
  arith_linear zero = arith_linear_const(x->dtype, 0);
  return arith_linear_add(c, &zero, x, k);
}

static arith_linear lin(const arith_ctx *c, const tir_expr *e) {
  if (e->lanes != 1 || !arith_linear_dtype(e->dtype)) return atom(c, e);
  if (e->kind == TIR_INT) return arith_linear_const(e->dtype, e->u.i);
  if (e->kind == TIR_UNARY && e->u.un.op == TE_NEG) {
    arith_linear a = lin(c, e->u.un.a);
    return scale(c, &a, -1);
  }
  if (e->kind == TIR_BINARY) {
    te_binop op = e->u.bin.op;
    if (op == TE_ADD || op == TE_SUB) {
      arith_linear a = lin(c, e->u.bin.a), b = lin(c, e->u.bin.b);
      return arith_linear_add(c, &a, &b, op == TE_ADD ? 1 : -1);
    }
    if (op == TE_MUL) {
      arith_linear a = lin(c, e->u.bin.a), b = lin(c, e->u.bin.b);
      if (a.n == 0) return scale(c, &b, a.c);
      if (b.n == 0) return scale(c, &a, b.c);
    }
  }
  return atom(c, e);
}

/* x is floordiv(y, d) or x / d (trunc) with a constant d > 0: its operand and
 * divisor. */
static int divmod_parts(const tir_expr *x, te_binop op, const tir_expr **y, int64_t *d) {
  if (x->kind != TIR_BINARY || x->u.bin.op != op || x->u.bin.b->kind != TIR_INT || x->u.bin.b->u.i <= 0) return 0;
  *y = x->u.bin.a;
  *d = x->u.bin.b->u.i;
  return 1;
}

/* k·d·(y div d) + k·(y mod d) → k·y, for both floor and trunc pairs: y = d·(y div
 * d) + (y mod d) holds exactly for d > 0. */
static int fold_pair(const arith_ctx *c, arith_linear *l) {
  gir_dtype t = l->dtype;
  for (int32_t i = 0; i < l->n; i++) {
    const tir_expr *y, *y2;
    int64_t d, d2;
    te_binop divop;
    if (divmod_parts(l->t[i].atom, TE_FLOORMOD, &y, &d)) divop = TE_FLOORDIV;
    else if (divmod_parts(l->t[i].atom, TE_MOD, &y, &d)) divop = TE_DIV;
    else continue;
    int64_t k = l->t[i].coef;
    for (int32_t j = 0; j < l->n; j++) {
      if (!divmod_parts(l->t[j].atom, divop, &y2, &d2) || d2 != d || !arith_expr_equal(y, y2)) continue;
      if (l->t[j].coef != wmul(t, k, d)) continue;
      arith_linear rest = {t, 0, alloc(c, sizeof(arith_term) * (size_t)l->n), l->c};
      for (int32_t m = 0; m < l->n; m++)
        if (m != i && m != j) rest.t[rest.n++] = l->t[m];
      arith_linear ly = lin(c, y);
      *l = arith_linear_add(c, &rest, &ly, k);
      return 1;
    }
  }
  return 0;
}

arith_linear arith_linear_of(const arith_ctx *c, const tir_expr *e) {
  arith_linear l = lin(c, e);
  while (fold_pair(c, &l)) {}
  return l;
}

int64_t arith_linear_coef(const arith_linear *l, const tir_var *v) {
  for (int32_t i = 0; i < l->n; i++)
    if (l->t[i].atom->kind == TIR_VAR && l->t[i].atom->u.var == v) return l->t[i].coef;
  return 0;
}

/* Bounds of Σ coef·atom + c over terms [from, to) plus `skip` excluded, in exact
 * int64 arithmetic. Works on "mathematical" forms whose coefficients are not
 * dtype representatives too. */
static int raw_bounds(const arith_ctx *c, const arith_term *t, int32_t n, int64_t k, const tir_expr *skip,
                      arith_range *out) {
  int64_t lo = k, hi = k;
  for (int32_t i = 0; i < n; i++) {
    if (t[i].atom == skip) continue;
    arith_range r = arith_bounds(c, t[i].atom);
    int64_t a, b;
    if (t[i].coef > 0) {
      if (mul_ov(t[i].coef, r.min, &a) || mul_ov(t[i].coef, r.max, &b)) return -1;
    } else {
      if (mul_ov(t[i].coef, r.max, &a) || mul_ov(t[i].coef, r.min, &b)) return -1;
    }
    if (add_ov(lo, a, &lo) || add_ov(hi, b, &hi)) return -1;
  }
  *out = rng(lo, hi);
  return 0;
}

int arith_linear_bounds(const arith_ctx *c, const arith_linear *l, arith_range *out) {
  if (!ordered(l->dtype)) return -1;
  return raw_bounds(c, l->t, l->n, l->c, NULL, out);
}

int arith_linear_exact(const arith_ctx *c, const arith_linear *l) {
  arith_range r;
  return ordered(l->dtype) && arith_linear_bounds(c, l, &r) == 0 && within(r, arith_full(l->dtype));
}

static tir_expr *mkconst(tir_builder *b, gir_dtype t, int64_t rep) { return tir_int(b, t, tir_wrap_int(t, rep)); }

static tir_expr *term_expr(tir_builder *b, gir_dtype t, const tir_expr *atom, int64_t k) {
  tir_expr *a = (tir_expr *)atom;
  return k == 1 ? a : tir_bin(b, TE_MUL, a, mkconst(b, t, k));
}

tir_expr *arith_linear_expr(tir_builder *b, const arith_linear *l) {
  gir_dtype t = l->dtype;
  tir_expr *e = NULL;
  int c_done = 0, first_neg = -1;
  for (int32_t i = 0; i < l->n; i++) {
    if (l->t[i].coef < 0) continue;
    tir_expr *x = term_expr(b, t, l->t[i].atom, l->t[i].coef);
    e = e ? tir_bin(b, TE_ADD, e, x) : x;
  }
  for (int32_t i = 0; i < l->n; i++) {
    if (l->t[i].coef >= 0) continue;
    if (!e) {
      if (l->c) {
        e = mkconst(b, t, l->c);
        c_done = 1;
      } else {
        /* no positive term, no constant: the first negative one leads */
        first_neg = i;
        e = l->t[i].coef == -1 ? tir_un(b, TE_NEG, (tir_expr *)l->t[i].atom) : term_expr(b, t, l->t[i].atom, l->t[i].coef);
        continue;
      }
    }
    if (i == first_neg) continue;
    e = tir_bin(b, TE_SUB, e, term_expr(b, t, l->t[i].atom, srep(t, (int64_t)(0 - (uint64_t)l->t[i].coef))));
  }
  if (!e) return mkconst(b, t, l->c);
  if (!c_done && l->c) {
    int64_t neg = srep(t, (int64_t)(0 - (uint64_t)l->c));
    if (l->c > 0 || neg < 0) e = tir_bin(b, TE_ADD, e, mkconst(b, t, l->c));
    else e = tir_bin(b, TE_SUB, e, mkconst(b, t, neg));
  }
  return e;
}

/* --- bounds --- */

/* Division-like rules take the divisor's range apart by sign. */
static arith_range bounds_div(te_binop op, gir_dtype t, arith_range a, arith_range b) {
  hullacc h = {0};
  arith_range parts[2];
  int np = 0;
  if (b.max >= 1) parts[np++] = rng(b.min > 1 ? b.min : 1, b.max);
  if (b.min <= -1) parts[np++] = rng(b.min, b.max < -1 ? b.max : -1);
  if (b.min <= 0 && b.max >= 0) hadd(&h, 0);
  for (int i = 0; i < np; i++) {
    int64_t ds[2] = {parts[i].min, parts[i].max}, xs[2] = {a.min, a.max};
    for (int x = 0; x < 2; x++)
      for (int y = 0; y < 2; y++) {
        int64_t q;
        if (xs[x] == INT64_MIN && ds[y] == -1) {
          h.bad = 1;
          continue;
        }
        q = op == TE_DIV ? xs[x] / ds[y] : arith_floordiv(xs[x], ds[y]);
        hadd(&h, q);
      }
  }
  return fit(t, rng(h.lo, h.hi), h.any && !h.bad);
}

/* |v| capped at INT64_MAX. */
static int64_t mag(int64_t v) { return v == INT64_MIN ? INT64_MAX : v < 0 ? -v : v; }

static arith_range bounds_mod(te_binop op, gir_dtype t, arith_range a, arith_range b) {
  hullacc h = {0};
  if (b.min <= 0 && b.max >= 0) hadd(&h, 0);
  arith_range parts[2];
  int np = 0;
  if (b.max >= 1) parts[np++] = rng(b.min > 1 ? b.min : 1, b.max);
  if (b.min <= -1) parts[np++] = rng(b.min, b.max < -1 ? b.max : -1);
  for (int i = 0; i < np; i++) {
    arith_range p = parts[i];
    int64_t mmax = mag(p.min) > mag(p.max) ? mag(p.min) : mag(p.max);
    int64_t mmin = mag(p.min) < mag(p.max) ? mag(p.min) : mag(p.max);
    if (op == TE_MOD) { /* sign of the dividend, |r| < |b| */
      if (a.min >= 0 && a.max < mmin) hrange(&h, a);
      else if (a.max <= 0 && a.min > -mmin) hrange(&h, a);
      else {
        int64_t lo = a.min >= 0 ? 0 : (a.min > -(mmax - 1) ? a.min : -(mmax - 1));
        int64_t hi = a.max <= 0 ? 0 : (a.max < mmax - 1 ? a.max : mmax - 1);
        hrange(&h, rng(lo, hi));
      }
    } else if (p.min >= 1) { /* floor: sign of the divisor */
      if (a.min >= 0 && a.max < p.min) hrange(&h, a);
      else hrange(&h, rng(0, p.max - 1));
    } else {
      if (a.max <= 0 && a.min > p.max) hrange(&h, a);
      else hrange(&h, rng(p.min + 1, 0));
    }
  }
  return fit(t, rng(h.lo, h.hi), h.any);
}

/* 2^k - 1 for the smallest k with 2^k > v (v >= 0). */
static int64_t ones_above(int64_t v) {
  int64_t m = 0;
  while (m < v) m = m * 2 + 1;
  return m;
}

static arith_range node_bounds(const arith_ctx *c, const tir_expr *e);

arith_range arith_bounds(const arith_ctx *c, const tir_expr *e) {
  gir_dtype t = e->dtype;
  if (!ordered(t)) return arith_full(t);
  if (e->lanes == 1 && arith_linear_dtype(t) && e->kind != TIR_INT) {
    arith_linear l = arith_linear_of(c, e);
    if (!(l.n == 1 && l.c == 0 && l.t[0].coef == 1 && l.t[0].atom == e)) {
      arith_range r = {0, 0};
      int ok = arith_linear_bounds(c, &l, &r) == 0;
      return fit(t, r, ok);
    }
  }
  return node_bounds(c, e);
}

static arith_range unary_bounds(const arith_ctx *c, const tir_expr *e) {
  gir_dtype t = e->dtype, at = e->u.un.a->dtype;
  if (e->u.un.op == TE_ISNAN || e->u.un.op == TE_ISINF) return gir_dtype_is_float(at) ? rng(0, 1) : rng(0, 0);
  if (!ordered(at)) return arith_full(t);
  arith_range a = arith_bounds(c, e->u.un.a);
  int64_t lo = 0, hi = 0;
  switch (e->u.un.op) {
  case TE_NEG: {
    int ok = !sub_ov(0, a.max, &lo) && !sub_ov(0, a.min, &hi);
    return fit(t, rng(lo, hi), ok);
  }
  case TE_ABS: {
    if (a.min >= 0) return a;
    int ok = !sub_ov(0, a.min, &hi);
    if (a.max <= 0) {
      ok = ok && !sub_ov(0, a.max, &lo);
      return fit(t, rng(lo, hi), ok);
    }
    return fit(t, rng(0, hi > a.max ? hi : a.max), ok);
  }
  case TE_NOT:
    if (a.min > 0 || a.max < 0) return rng(0, 0);
    if (a.min == 0 && a.max == 0) return rng(1, 1);
    return rng(0, 1);
  case TE_BITNOT:
    if (t == GIR_BOOL) return rng(0, 1);
    if (gir_dtype_is_signed(t)) return rng(~a.max, ~a.min);
    return rng(arith_full(t).max - a.max, arith_full(t).max - a.min);
  default: return a; /* floor, ceil, round, trunc... of integers are the identity */
  }
}

static arith_range binary_bounds(const arith_ctx *c, const tir_expr *e) {
  gir_dtype t = e->dtype;
  te_binop op = e->u.bin.op;
  if (op >= TE_EQ) {
    int p = arith_prove(c, e);
    return p == 1 ? rng(1, 1) : p == 0 ? rng(0, 0) : rng(0, 1);
  }
  if (!ordered(t)) return arith_full(t);
  arith_range a = arith_bounds(c, e->u.bin.a), b = arith_bounds(c, e->u.bin.b);
  hullacc h = {0};
  int64_t v;
  switch (op) {
  case TE_ADD: case TE_SUB: case TE_MUL: {
    int64_t xs[2] = {a.min, a.max}, ys[2] = {b.min, b.max};
    if (op == TE_SUB) {
      ys[0] = b.max;
      ys[1] = b.min;
    }
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        int bad = op == TE_ADD ? add_ov(xs[i], ys[j], &v) : op == TE_SUB ? sub_ov(xs[i], ys[j], &v) : mul_ov(xs[i], ys[j], &v);
        if (bad) h.bad = 1;
        else hadd(&h, v);
      }
    return fit(t, rng(h.lo, h.hi), !h.bad);
  }
  case TE_DIV: case TE_FLOORDIV: return bounds_div(op, t, a, b);
  case TE_MOD: case TE_FLOORMOD: return bounds_mod(op, t, a, b);
  case TE_MIN: return rng(a.min < b.min ? a.min : b.min, a.max < b.max ? a.max : b.max);
  case TE_MAX: return rng(a.min > b.min ? a.min : b.min, a.max > b.max ? a.max : b.max);
  case TE_AND:
    if (t == GIR_BOOL) return rng(a.min & b.min, a.max & b.max);
    if (a.min >= 0 && b.min >= 0) return rng(0, a.max < b.max ? a.max : b.max);
    if (a.min >= 0) return rng(0, a.max);
    if (b.min >= 0) return rng(0, b.max);
    return arith_full(t);
  case TE_OR:
    if (t == GIR_BOOL) return rng(a.min | b.min, a.max | b.max);
    if (a.min >= 0 && b.min >= 0)
      return fit(t, rng(a.min > b.min ? a.min : b.min, ones_above(a.max > b.max ? a.max : b.max)), 1);
    return arith_full(t);
  case TE_XOR:
    if (t == GIR_BOOL) return rng(0, 1);
    if (a.min >= 0 && b.min >= 0) return fit(t, rng(0, ones_above(a.max > b.max ? a.max : b.max)), 1);
    return arith_full(t);
  case TE_SHL: {
    int bits = gir_dtype_bits(t);
    if (a.min < 0 || b.min < 0 || b.max >= bits || b.max >= 63) return arith_full(t);
    int ok = !mul_ov(a.min, (int64_t)1 << b.min, &h.lo) && !mul_ov(a.max, (int64_t)1 << b.max, &h.hi);
    return fit(t, rng(h.lo, h.hi), ok);
  }
  case TE_SHR: {
    int bits = gir_dtype_bits(t);
    if (a.min < 0 || b.min < 0) return arith_full(t);
    int64_t lo = b.max >= bits || b.max >= 63 ? 0 : a.min >> b.max;
    int64_t hi = b.min >= bits || b.min >= 63 ? 0 : a.max >> b.min;
    return rng(lo, hi);
  }
  default: return arith_full(t);
  }
}

static arith_range cast_bounds(const arith_ctx *c, const tir_expr *e) {
  gir_dtype to = e->dtype, from = e->u.cast.a->dtype;
  if (to == GIR_BOOL) {
    if (!ordered(from)) return rng(0, 1);
    arith_range a = arith_bounds(c, e->u.cast.a);
    if (a.min > 0 || a.max < 0) return rng(1, 1);
    if (a.min == 0 && a.max == 0) return rng(0, 0);
    return rng(0, 1);
  }
  if (!ordered(from)) return arith_full(to);
  return fit(to, arith_bounds(c, e->u.cast.a), 1);
}

static arith_range node_bounds(const arith_ctx *c, const tir_expr *e) {
  gir_dtype t = e->dtype;
  switch (e->kind) {
  case TIR_INT: {
    int64_t v = tir_wrap_int(t, e->u.i);
    return rng(v, v);
  }
  case TIR_VAR: return fit(t, arith_ctx_lookup(c, e->u.var), 1);
  case TIR_UNARY: return unary_bounds(c, e);
  case TIR_BINARY: return binary_bounds(c, e);
  case TIR_SELECT: case TIR_IF_THEN_ELSE: {
    int p = arith_prove(c, e->u.sel.c);
    if (p == 1) return arith_bounds(c, e->u.sel.a);
    if (p == 0) return arith_bounds(c, e->u.sel.b);
    return hull(arith_bounds(c, e->u.sel.a), arith_bounds(c, e->u.sel.b));
  }
  case TIR_CAST: return cast_bounds(c, e);
  case TIR_RAMP: {
    arith_range b = arith_bounds(c, e->u.ramp.base), s = arith_bounds(c, e->u.ramp.stride);
    hullacc h = {0};
    int64_t last = e->lanes - 1, p, v;
    int64_t ss[2] = {s.min, s.max}, bs[2] = {b.min, b.max};
    for (int i = 0; i < 2; i++) {
      if (mul_ov(ss[i], last, &p)) h.bad = 1;
      for (int j = 0; j < 2; j++) {
        hadd(&h, bs[j]);
        if (!h.bad && !add_ov(bs[j], p, &v)) hadd(&h, v);
        else h.bad = 1;
      }
    }
    return fit(t, rng(h.lo, h.hi), !h.bad);
  }
  case TIR_BROADCAST: return arith_bounds(c, e->u.bcast.value);
  default: return arith_full(t); /* loads, dot4 */
  }
}

/* --- comparisons --- */

/* The linear form of e if its integer value is exact, else e as one atom. */
static arith_linear exact_lin(const arith_ctx *c, const tir_expr *e) {
  arith_linear l = arith_linear_of(c, e);
  if (arith_linear_exact(c, &l)) return l;
  return atom(c, e);
}

/* a - b with exact int64 coefficients (not reduced modulo 2^bits). */
static int math_sub(const arith_ctx *c, const arith_linear *a, const arith_linear *b, arith_linear *out) {
  arith_linear r = {a->dtype, 0, alloc(c, sizeof(arith_term) * (size_t)(a->n + b->n)), 0};
  if (sub_ov(a->c, b->c, &r.c)) return -1;
  int32_t i = 0, j = 0;
  while (i < a->n || j < b->n) {
    int cmp = i == a->n ? 1 : j == b->n ? -1 : arith_expr_cmp(a->t[i].atom, b->t[j].atom);
    arith_term term;
    if (cmp < 0) term = a->t[i++];
    else if (cmp > 0) {
      term = b->t[j++];
      if (sub_ov(0, term.coef, &term.coef)) return -1;
    } else {
      term = a->t[i++];
      if (sub_ov(term.coef, b->t[j++].coef, &term.coef)) return -1;
    }
    if (term.coef) r.t[r.n++] = term;
  }
  *out = r;
  return 0;
}

int arith_linear_diff(const arith_ctx *c, const tir_expr *a, const tir_expr *b, arith_linear *out) {
  if (a->lanes != 1 || b->lanes != 1 || a->dtype != b->dtype || !arith_linear_dtype(a->dtype) || !ordered(a->dtype))
    return -1;
  arith_linear la = exact_lin(c, a), lb = exact_lin(c, b);
  return math_sub(c, &la, &lb, out);
}

int arith_diff_bounds(const arith_ctx *c, const tir_expr *a, const tir_expr *b, arith_range *out) {
  arith_linear d;
  if (arith_linear_diff(c, a, b, &d) < 0) return -1;
  return raw_bounds(c, d.t, d.n, d.c, NULL, out);
}

/* Decides a op b from the range of a - b. */
static int decide(te_binop op, arith_range d) {
  switch (op) {
  case TE_LT: return d.max < 0 ? 1 : d.min >= 0 ? 0 : -1;
  case TE_LE: return d.max <= 0 ? 1 : d.min > 0 ? 0 : -1;
  case TE_GT: return d.min > 0 ? 1 : d.max <= 0 ? 0 : -1;
  case TE_GE: return d.min >= 0 ? 1 : d.max < 0 ? 0 : -1;
  case TE_EQ: return d.min == 0 && d.max == 0 ? 1 : (d.min > 0 || d.max < 0) ? 0 : -1;
  case TE_NE: return d.min == 0 && d.max == 0 ? 0 : (d.min > 0 || d.max < 0) ? 1 : -1;
  default: return -1;
  }
}

static int is_const(const tir_expr *e) { return e->kind == TIR_INT || e->kind == TIR_FLOAT; }

static int prove_cmp(const arith_ctx *c, const tir_expr *e) {
  const tir_expr *a = e->u.bin.a, *b = e->u.bin.b;
  te_binop op = e->u.bin.op;
  if (is_const(a) && is_const(b)) return (int)tir_value_binop(op, a->dtype, tir_const_value(a), tir_const_value(b)).i;
  if (!ordered(a->dtype)) return -1;
  arith_range d;
  if (arith_diff_bounds(c, a, b, &d) == 0) return decide(op, d);
  arith_range ra = arith_bounds(c, a), rb = arith_bounds(c, b);
  if (sub_ov(ra.min, rb.max, &d.min) || sub_ov(ra.max, rb.min, &d.max)) return -1;
  return decide(op, d);
}

int arith_prove(const arith_ctx *c, const tir_expr *e) {
  if (e->dtype != GIR_BOOL) return -1;
  if (e->kind == TIR_INT) return e->u.i != 0;
  if (e->kind == TIR_UNARY && e->u.un.op == TE_NOT) {
    int p = arith_prove(c, e->u.un.a);
    return p < 0 ? -1 : !p;
  }
  if (e->kind == TIR_BINARY) {
    te_binop op = e->u.bin.op;
    if ((op == TE_AND || op == TE_OR) && e->u.bin.a->dtype == GIR_BOOL) {
      int p = arith_prove(c, e->u.bin.a), q = arith_prove(c, e->u.bin.b);
      if (op == TE_AND) return p == 0 || q == 0 ? 0 : p == 1 && q == 1 ? 1 : -1;
      return p == 1 || q == 1 ? 1 : p == 0 && q == 0 ? 0 : -1;
    }
    if (op >= TE_EQ) return prove_cmp(c, e);
  }
  arith_range r = node_bounds(c, e);
  return r.min == 1 ? 1 : r.max == 0 ? 0 : -1;
}

/* --- solving comparisons for one variable --- */

static te_binop negate_cmp(te_binop op) {
  switch (op) {
  case TE_LT: return TE_GE;
  case TE_LE: return TE_GT;
  case TE_GT: return TE_LE;
  case TE_GE: return TE_LT;
  case TE_EQ: return TE_NE;
  default: return TE_EQ;
  }
}

/* {v : k·v <= m}, k != 0. */
static int solve_le(int64_t k, int64_t m, gir_dtype t, arith_range *out) {
  arith_range f = arith_full(t);
  int64_t q;
  if (k > 0) {
    if (floordiv_ov(m, k, &q)) return -1;
    *out = rng(f.min, q < f.max ? q : f.max);
  } else {
    if (ceildiv_ov(m, k, &q)) return -1;
    *out = rng(q > f.min ? q : f.min, f.max);
  }
  return 0;
}

/* {v : k·v >= m}, k != 0. */
static int solve_ge(int64_t k, int64_t m, gir_dtype t, arith_range *out) {
  int64_t nk, nm;
  if (sub_ov(0, k, &nk) || sub_ov(0, m, &nm)) return -1;
  return solve_le(nk, nm, t, out);
}

static arith_range meet(arith_range a, arith_range b) {
  return rng(a.min > b.min ? a.min : b.min, a.max < b.max ? a.max : b.max);
}

/* One comparison `a op b`, linear in v. */
static int solve_cmp(const arith_ctx *c, te_binop op, const tir_expr *a, const tir_expr *b, const tir_var *v,
                     int for_all, arith_range *out) {
  if (op == TE_GT || op == TE_GE) {
    const tir_expr *x = a;
    a = b;
    b = x;
    op = op == TE_GT ? TE_LT : TE_LE;
  }
  arith_linear d;
  if (arith_linear_diff(c, a, b, &d) < 0) return -1;
  int64_t k = 0;
  const tir_expr *vatom = NULL;
  for (int32_t i = 0; i < d.n; i++) {
    if (d.t[i].atom->kind == TIR_VAR && d.t[i].atom->u.var == v) {
      k = d.t[i].coef;
      vatom = d.t[i].atom;
    } else if (arith_uses_var(d.t[i].atom, v))
      return -1;
  }
  if (!k) return -1;
  arith_range r; /* the rest: d - k·v */
  if (raw_bounds(c, d.t, d.n, d.c, vatom, &r) < 0) return -1;
  gir_dtype t = v->dtype;
  int64_t rmin = for_all ? r.max : r.min, m; /* the worst (for_all) or best rest */
  switch (op) {
  case TE_LT: /* k·v + rest <= -1 */
    if (sub_ov(-1, rmin, &m)) return -1;
    return solve_le(k, m, t, out);
  case TE_LE:
    if (sub_ov(0, rmin, &m)) return -1;
    return solve_le(k, m, t, out);
  case TE_EQ: {
    /* for_all: k·v = -rest for every rest, only possible when rest is fixed */
    if (for_all && r.min != r.max) {
      *out = rng(1, 0);
      return 0;
    }
    int64_t lo_m, hi_m;
    if (sub_ov(0, r.max, &lo_m) || sub_ov(0, r.min, &hi_m)) return -1;
    arith_range x, y;
    if (solve_ge(k, lo_m, t, &x) < 0 || solve_le(k, hi_m, t, &y) < 0) return -1;
    *out = meet(x, y);
    return 0;
  }
  default: return -1;
  }
}

/* One conjunct of a conjunction: one that cannot be solved for v says nothing
 * of v when it can merely hold; for_all needs it proved, or gives up. */
static int solve_part(const arith_ctx *c, const tir_expr *x, const tir_var *v, int for_all, arith_range *out) {
  if (arith_solve(c, x, v, for_all, out) == 0) return 0;
  arith_range full = arith_full(v->dtype);
  if (arith_uses_var(x, v)) {
    if (for_all) return -1;
    *out = full;
    return 0;
  }
  *out = for_all && arith_prove(c, x) != 1 ? rng(1, 0) : full;
  return 0;
}

int arith_solve(const arith_ctx *c, const tir_expr *cond, const tir_var *v, int for_all, arith_range *out) {
  if (cond->dtype != GIR_BOOL || cond->lanes != 1) return -1;
  if (cond->kind == TIR_UNARY && cond->u.un.op == TE_NOT) {
    const tir_expr *x = cond->u.un.a;
    if (x->kind == TIR_BINARY && x->u.bin.op >= TE_EQ && x->u.bin.op != TE_NE && x->u.bin.a->lanes == 1 &&
        arith_linear_dtype(x->u.bin.a->dtype))
      return solve_cmp(c, negate_cmp(x->u.bin.op), x->u.bin.a, x->u.bin.b, v, for_all, out);
    return -1;
  }
  if (cond->kind != TIR_BINARY) return -1;
  te_binop op = cond->u.bin.op;
  if (op == TE_AND) {
    arith_range x, y;
    if (solve_part(c, cond->u.bin.a, v, for_all, &x) < 0 || solve_part(c, cond->u.bin.b, v, for_all, &y) < 0) return -1;
    if (!arith_uses_var(cond->u.bin.a, v) && !arith_uses_var(cond->u.bin.b, v)) return -1;
    *out = meet(x, y);
    return 0;
  }
  if (op < TE_EQ || op == TE_NE) return -1;
  if (cond->u.bin.a->lanes != 1 || !arith_linear_dtype(cond->u.bin.a->dtype)) return -1;
  return solve_cmp(c, op, cond->u.bin.a, cond->u.bin.b, v, for_all, out);
}

/* --- assumptions --- */

static void assume_cmp(arith_ctx *c, te_binop op, const tir_expr *a, const tir_expr *b) {
  if (op == TE_NE || a->lanes != 1 || !arith_linear_dtype(a->dtype) || !ordered(a->dtype)) return;
  arith_linear d;
  const tir_expr *x = a, *y = b;
  if (op == TE_GT || op == TE_GE) {
    x = b;
    y = a;
  }
  if (arith_linear_diff(c, x, y, &d) < 0) return;
  for (int32_t i = 0; i < d.n; i++) {
    if (d.t[i].atom->kind != TIR_VAR) continue;
    arith_range r;
    if (solve_cmp(c, op, a, b, d.t[i].atom->u.var, 0, &r) == 0) arith_ctx_push(c, d.t[i].atom->u.var, r);
  }
}

void arith_ctx_assume(arith_ctx *c, const tir_expr *cond, int truth) {
  if (cond->dtype != GIR_BOOL || cond->lanes != 1) return;
  switch (cond->kind) {
  case TIR_VAR: arith_ctx_push(c, cond->u.var, rng(!!truth, !!truth)); return;
  case TIR_UNARY:
    if (cond->u.un.op == TE_NOT) arith_ctx_assume(c, cond->u.un.a, !truth);
    return;
  case TIR_BINARY: {
    te_binop op = cond->u.bin.op;
    if ((op == TE_AND && truth) || (op == TE_OR && !truth)) {
      if (cond->u.bin.a->dtype != GIR_BOOL) return;
      arith_ctx_assume(c, cond->u.bin.a, truth);
      arith_ctx_assume(c, cond->u.bin.b, truth);
      return;
    }
    if (op >= TE_EQ) assume_cmp(c, truth ? op : negate_cmp(op), cond->u.bin.a, cond->u.bin.b);
    return;
  }
  default: return;
  }
}
