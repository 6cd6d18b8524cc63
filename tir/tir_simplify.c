/* simplify.c — the arithmetic simplifier (see simplify.h) and substitution.
 *
 * Expressions are simplified bottom-up: children first, then the node is
 * rebuilt through "smart constructors" (mk_un, mk_bin, mk_select, mk_cast) that
 * apply the rules below to already-simplified operands. Each rule is an exact
 * identity under the IR's semantics, written next to its algebra. Integer
 * +, -, * and negation are not rewritten rule by rule: the node is turned into
 * its canonical linear form (arith.h) and rebuilt from it, which collects like
 * terms, folds constants and orders operands in one step. A whole expression is
 * re-simplified until it stops changing (a few rounds at most), because a rule
 * can expose work for one further up. A dot4 has its operands simplified and,
 * when either 8-bit operand is the constant 0, becomes its accumulator.
 *
 * Range-based rules (div/mod, comparisons, min/max) trust a linear form's
 * integer value only when arith_linear_exact shows no wrap can happen, so they
 * stay exact under two's complement wrapping. Float rules are limited to what
 * is exact in IEEE arithmetic (x*1, x/1, x+(-0), x-(+0), -(-x), min(x,x)...)
 * and float folding to correctly rounded operations on float32/float64;
 * transcendental functions are never folded (libm results differ by target).
 *
 * Statements: loops enter their variable's range into the arith context, lets
 * their value's range, ifs what their condition says in each branch
 * (arith_ctx_assume), so that conditions and div/mod inside can be decided. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include "tir_simplify.h"
#include "tir_eval.h"

typedef struct simp {
  tir_builder *b;
  arith_ctx *ctx;
} simp;

static tir_expr *mk_bin(simp *s, te_binop op, tir_expr *a, tir_expr *b);
static tir_expr *mk_un(simp *s, te_unop op, tir_expr *a);
static tir_expr *mk_cast(simp *s, gir_dtype t, tir_expr *a);

/* --- constants --- */

static int is_const(const tir_expr *e) { return e->kind == TIR_INT || e->kind == TIR_FLOAT; }

/* Integer constant, possibly broadcast. */
static int iconst(const tir_expr *e, int64_t *v) {
  if (e->kind == TIR_BROADCAST) e = e->u.bcast.value;
  if (e->kind != TIR_INT) return 0;
  *v = tir_wrap_int(e->dtype, e->u.i);
  return 1;
}

/* Float constant (rounded to its dtype), possibly broadcast. */
static int fconst(const tir_expr *e, double *v) {
  if (e->kind == TIR_BROADCAST) e = e->u.bcast.value;
  if (e->kind != TIR_FLOAT) return 0;
  *v = tir_round_float(e->dtype, e->u.f);
  return 1;
}

static int fconst_is(const tir_expr *e, double want) {
  double v;
  return fconst(e, &v) && v == want && signbit(v) == signbit(want);
}

static int iconst_is(const tir_expr *e, int64_t want) {
  int64_t v;
  return iconst(e, &v) && v == want;
}

/* A constant of dtype t holding v, broadcast to `lanes`. */
static tir_expr *cnst(simp *s, gir_dtype t, int32_t lanes, tir_value v) {
  tir_expr *c = gir_dtype_is_float(t) ? tir_float(s->b, t, tir_round_float(t, v.f)) : tir_int(s->b, t, tir_wrap_int(t, v.i));
  return tir_broadcast(s->b, c, lanes);
}

static tir_expr *icnst(simp *s, gir_dtype t, int32_t lanes, int64_t v) {
  return cnst(s, t, lanes, (tir_value){.i = v});
}

/* Whether folding a float op gives what any target computes: correctly rounded
 * operations only, and only on float32/float64, where computing in double and
 * rounding once is correctly rounded. */
static int float_fold_bin(te_binop op, gir_dtype t) {
  if (op >= TE_EQ || op == TE_MIN || op == TE_MAX) return 1;
  if (t != GIR_F32 && t != GIR_F64) return 0;
  return op == TE_ADD || op == TE_SUB || op == TE_MUL || op == TE_DIV;
}

static int float_fold_un(te_unop op, gir_dtype t) {
  switch (op) {
  case TE_NEG: case TE_ABS: case TE_FLOOR: case TE_CEIL: case TE_ROUND: case TE_TRUNC: case TE_ISNAN: case TE_ISINF:
    return 1;
  case TE_SQRT: return t == GIR_F32 || t == GIR_F64;
  default: return 0;
  }
}

/* Casts whose folding rounds once, as a direct conversion would. */
static int cast_fold_ok(gir_dtype to, gir_dtype from, tir_value v) {
  if (!gir_dtype_is_float(to)) return 1; /* to integers and bool: exactly defined */
  if (gir_dtype_is_float(from)) return from != GIR_F64 || to == GIR_F32 || to == GIR_F64;
  double lim = (to == GIR_F32 || to == GIR_F64) ? 9007199254740992.0 : 16777216.0; /* exact in double / float */
  if (from == GIR_U64) return (uint64_t)v.i <= (uint64_t)lim;
  return v.i >= -(int64_t)lim && v.i <= (int64_t)lim;
}

/* --- helpers --- */

static int ordered(gir_dtype t) { return (gir_dtype_is_int(t) && t != GIR_U64) || t == GIR_BOOL; }
static int is_cmp(te_binop op) { return op >= TE_EQ; }
static int commutative(te_binop op) {
  return op == TE_ADD || op == TE_MUL || op == TE_MIN || op == TE_MAX || op == TE_AND || op == TE_OR || op == TE_XOR ||
         op == TE_EQ || op == TE_NE;
}

static tir_expr *raw_bin(simp *s, te_binop op, tir_expr *a, tir_expr *b) {
  /* integer operands of commutative ops in a canonical order, constants last
   * (float min/max are not commutative on signed zeros, so floats keep theirs) */
  int ca = is_const(a), cb = is_const(b);
  if (commutative(op) && !gir_dtype_is_float(a->dtype) && (ca != cb ? ca : arith_expr_cmp(a, b) > 0)) {
    tir_expr *x = a;
    a = b;
    b = x;
  }
  return tir_bin(s->b, op, a, b);
}

static tir_expr *linear_expr(simp *s, const arith_linear *l) { return arith_linear_expr(s->b, l); }

static arith_linear linear_of(simp *s, const tir_expr *e) { return arith_linear_of(s->ctx, e); }

static int bits_of(gir_dtype t) { return gir_dtype_bits(t); }

/* --- integer division and modulo --- */

/* Splits an exact linear form N by d > 0: N = d·(Q + q0) + R, where Q holds the
 * terms whose coefficient d divides, R the others (coefficients reduced modulo
 * d when `reduce` and that shrinks them) plus the constant's remainder. */
typedef struct divsplit {
  arith_linear q, r;
  int changed; /* something left the division */
} divsplit;

static divsplit split_by(simp *s, const arith_linear *n, int64_t d, int reduce) {
  gir_dtype t = n->dtype;
  arith_linear q = arith_linear_const(t, 0), r = arith_linear_const(t, 0);
  divsplit out = {q, r, 0};
  out.q.t = gir_arena_alloc(s->ctx->arena, sizeof(arith_term) * (size_t)(n->n + 1));
  out.r.t = gir_arena_alloc(s->ctx->arena, sizeof(arith_term) * (size_t)(n->n + 1));
  if (!out.q.t || !out.r.t) abort();
  for (int32_t i = 0; i < n->n; i++) {
    arith_term term = n->t[i];
    if (term.coef % d == 0) {
      term.coef /= d;
      out.q.t[out.q.n++] = term;
      out.changed = 1;
      continue;
    }
    if (reduce && term.coef > d) {
      term.coef %= d;
      out.changed = 1;
    }
    out.r.t[out.r.n++] = term;
  }
  out.q.c = arith_floordiv(n->c, d);
  out.r.c = arith_floormod(n->c, d);
  if (out.q.c) out.changed = 1;
  return out;
}

/* N = g·Q + R with g a term's coefficient dividing d and R in [0, g) (the
 * flattened index of a reshape: i·128 + j·16 + k over 256): floor(N/d) =
 * floor(Q/(d/g)) and N mod d = g·(Q mod d/g) + R. Tries the largest such g;
 * NULL when none fits. N ≥ 0 for the truncating ops (checked by the caller),
 * so Q ≥ 0 and floor and trunc agree. */
static tir_expr *div_factor(simp *s, te_binop op, const arith_linear *n, int64_t d) {
  gir_dtype t = n->dtype;
  int is_div = op == TE_DIV || op == TE_FLOORDIV;
  int64_t best = 0;
  divsplit best_sp = {{0}, {0}, 0};
  for (int32_t i = 0; i < n->n; i++) {
    int64_t g = n->t[i].coef;
    if (g <= best || g <= 1 || g >= d || d % g) continue;
    divsplit sp = split_by(s, n, g, 0);
    arith_range rr;
    if (!arith_linear_exact(s->ctx, &sp.r) || arith_linear_bounds(s->ctx, &sp.r, &rr) < 0) continue;
    if (rr.min < 0 || rr.max >= g || !arith_linear_exact(s->ctx, &sp.q)) continue;
    best = g;
    best_sp = sp;
  }
  if (!best) return NULL;
  tir_expr *q = linear_expr(s, &best_sp.q), *k = icnst(s, t, 1, d / best);
  if (is_div) return mk_bin(s, op, q, k);
  arith_linear m = arith_linear_of(s->ctx, mk_bin(s, op, q, k)), zero = arith_linear_const(t, 0);
  arith_linear gm = arith_linear_add(s->ctx, &zero, &m, best);
  arith_linear res = arith_linear_add(s->ctx, &gm, &best_sp.r, 1);
  return linear_expr(s, &res);
}

/* (x*c1 + y) / d and friends. N (the dividend) is exact and, for the
 * truncating ops, non-negative, so floor and trunc agree on it and
 * floor((d·Q + R)/d) = Q + floor(R/d), floormod(d·Q + R, d) = floormod(R, d). */
static tir_expr *div_linear(simp *s, te_binop op, tir_expr *a, int64_t d) {
  gir_dtype t = a->dtype;
  int trunc = op == TE_DIV || op == TE_MOD, is_div = op == TE_DIV || op == TE_FLOORDIV;
  arith_linear n = linear_of(s, a);
  if (n.n == 0 || !arith_linear_exact(s->ctx, &n)) return NULL;
  arith_range nr;
  if (arith_linear_bounds(s->ctx, &n, &nr) < 0) return NULL;
  if (trunc && nr.min > -d && nr.max < d) return is_div ? icnst(s, t, 1, 0) : a; /* |N| < d */
  if (trunc && nr.min < 0) return NULL;
  divsplit sp = split_by(s, &n, d, !is_div);
  arith_range rr;
  if (!arith_linear_exact(s->ctx, &sp.r) || arith_linear_bounds(s->ctx, &sp.r, &rr) < 0) return NULL;
  int64_t k0 = arith_floordiv(rr.min, d), k1 = arith_floordiv(rr.max, d);
  if (is_div) {
    if (k0 == k1) { /* floor(R/d) is the constant k0 */
      arith_linear kk = arith_linear_const(t, k0);
      arith_linear res = arith_linear_add(s->ctx, &sp.q, &kk, 1);
      return linear_expr(s, &res);
    }
    if (sp.q.n == 0) return div_factor(s, op, &n, d);
    te_binop inner = trunc && rr.min >= 0 ? TE_DIV : TE_FLOORDIV;
    tir_expr *rdiv = tir_bin(s->b, inner, linear_expr(s, &sp.r), icnst(s, t, 1, d));
    arith_linear one = arith_linear_of(s->ctx, rdiv);
    arith_linear res = arith_linear_add(s->ctx, &sp.q, &one, 1);
    return linear_expr(s, &res);
  }
  if (k0 == k1) { /* R mod d = R - d·k0 (modulo 2^bits: the result is in [0, d)) */
    arith_linear kk = arith_linear_const(t, (int64_t)((uint64_t)k0 * (uint64_t)d));
    arith_linear res = arith_linear_add(s->ctx, &sp.r, &kk, -1);
    return linear_expr(s, &res);
  }
  if (!sp.changed) return div_factor(s, op, &n, d);
  return tir_bin(s->b, trunc && rr.min >= 0 ? TE_MOD : TE_FLOORMOD, linear_expr(s, &sp.r), icnst(s, t, 1, d));
}

/* ramp(base, stride, L) / d and % d when every lane falls in one block of d:
 * floor((R + l·stride)/d) = k for all lanes → broadcast(Q + k), ramp(R - k·d). */
static tir_expr *div_ramp(simp *s, te_binop op, tir_expr *a, int64_t d) {
  gir_dtype t = a->dtype;
  int64_t stride, span, top;
  if (!iconst(a->u.ramp.stride, &stride) || stride < 0) return NULL;
  if (__builtin_mul_overflow(stride, (int64_t)(a->lanes - 1), &span)) return NULL;
  int trunc = op == TE_DIV || op == TE_MOD, is_div = op == TE_DIV || op == TE_FLOORDIV;
  arith_linear n = linear_of(s, a->u.ramp.base);
  arith_range nr, rr;
  if (!arith_linear_exact(s->ctx, &n) || arith_linear_bounds(s->ctx, &n, &nr) < 0) return NULL;
  if (__builtin_add_overflow(nr.max, span, &top) || top > arith_full(t).max) return NULL; /* no lane wraps */
  if (trunc && nr.min < 0) return NULL;
  divsplit sp = split_by(s, &n, d, 0);
  if (!arith_linear_exact(s->ctx, &sp.r) || arith_linear_bounds(s->ctx, &sp.r, &rr) < 0) return NULL;
  if (__builtin_add_overflow(rr.max, span, &top)) return NULL;
  int64_t k = arith_floordiv(rr.min, d);
  if (arith_floordiv(top, d) != k) return NULL;
  if (is_div) {
    arith_linear kk = arith_linear_const(t, k);
    arith_linear res = arith_linear_add(s->ctx, &sp.q, &kk, 1);
    return tir_broadcast(s->b, linear_expr(s, &res), a->lanes);
  }
  arith_linear kk = arith_linear_const(t, (int64_t)((uint64_t)k * (uint64_t)d));
  arith_linear res = arith_linear_add(s->ctx, &sp.r, &kk, -1);
  return tir_ramp(s->b, linear_expr(s, &res), a->u.ramp.stride, a->lanes);
}

static tir_expr *div_rules(simp *s, te_binop op, tir_expr *a, tir_expr *b) {
  gir_dtype t = a->dtype;
  int is_div = op == TE_DIV || op == TE_FLOORDIV;
  int64_t d;
  if (iconst_is(a, 0)) return a;                                   /* 0 / y = 0 % y = 0 (y = 0 included) */
  if (!iconst(b, &d)) return NULL;
  if (d == 0) return icnst(s, t, a->lanes, 0);                     /* x / 0 = x % 0 = 0 */
  if (d == 1) return is_div ? a : icnst(s, t, a->lanes, 0);        /* x / 1 = x, x % 1 = 0 */
  if (!ordered(t)) return NULL;
  if (d == -1 && gir_dtype_is_signed(t))                           /* x / -1 = -x (wrapping), x % -1 = 0 */
    return is_div ? mk_un(s, TE_NEG, a) : icnst(s, t, a->lanes, 0);
  if (d < 0) return NULL;
  if (a->lanes > 1) return a->kind == TIR_RAMP ? div_ramp(s, op, a, d) : NULL;
  /* (x / d1) / d → x / (d1·d); (x % d1) % d → x % d when d divides d1 (both
   * for floor and trunc, d1, d > 0) */
  int64_t d1, dd;
  if (a->kind == TIR_BINARY && a->u.bin.op == op && iconst(a->u.bin.b, &d1) && d1 > 0) {
    if (is_div && !__builtin_mul_overflow(d1, d, &dd) && dd <= arith_full(t).max)
      return mk_bin(s, op, a->u.bin.a, icnst(s, t, 1, dd));
    if (!is_div && d1 % d == 0) return mk_bin(s, op, a->u.bin.a, b);
  }
  return div_linear(s, op, a, d);
}

/* --- comparisons --- */

/* a op b on ordered integer scalars, undecided: cancels what both sides share
 * and moves constants right. a op b ⟺ P - N + c op 0 ⟺ P op N - c (or c op N
 * when P is empty), with P, N the positive and negated negative terms of the
 * exact difference a - b; each side is used only if it evaluates exactly. */
static tir_expr *cmp_normalize(simp *s, te_binop op, tir_expr *a, tir_expr *b) {
  if (op == TE_GT || op == TE_GE) {
    tir_expr *x = a;
    a = b;
    b = x;
    op = op == TE_GT ? TE_LT : TE_LE;
  }
  gir_dtype t = a->dtype;
  arith_linear d;
  if (arith_linear_diff(s->ctx, a, b, &d) < 0 || d.n == 0) return tir_bin(s->b, op, a, b);
  arith_range f = arith_full(t);
  arith_linear p = arith_linear_const(t, 0), n = arith_linear_const(t, 0);
  p.t = gir_arena_alloc(s->ctx->arena, sizeof(arith_term) * (size_t)d.n);
  n.t = gir_arena_alloc(s->ctx->arena, sizeof(arith_term) * (size_t)d.n);
  if (!p.t || !n.t) abort();
  int fits = d.c >= f.min && d.c <= f.max && d.c != INT64_MIN && -d.c >= f.min && -d.c <= f.max;
  for (int32_t i = 0; i < d.n && fits; i++) {
    arith_term term = d.t[i];
    if (term.coef == INT64_MIN) fits = 0;
    else if (term.coef > 0) p.t[p.n++] = term;
    else {
      term.coef = -term.coef;
      n.t[n.n++] = term;
    }
    if (term.coef > f.max || term.coef < f.min) fits = 0;
  }
  if (fits) {
    if (p.n) n.c = -d.c;
    else p.c = d.c;
    if (arith_linear_exact(s->ctx, &p) && arith_linear_exact(s->ctx, &n)) {
      /* not reordered even for == and !=: the form must be a fixed point */
      return tir_bin(s->b, op, linear_expr(s, &p), linear_expr(s, &n));
    }
  }
  return op == TE_EQ || op == TE_NE ? raw_bin(s, op, a, b) : tir_bin(s->b, op, a, b);
}

static tir_expr *cmp_rules(simp *s, te_binop op, tir_expr *a, tir_expr *b) {
  gir_dtype t = a->dtype;
  int32_t lanes = a->lanes;
  tir_expr *node = tir_bin(s->b, op, a, b);
  if (!gir_dtype_is_float(t) && arith_expr_equal(a, b)) /* x op x (not for floats: NaN) */
    return icnst(s, GIR_BOOL, lanes, op == TE_EQ || op == TE_LE || op == TE_GE);
  int p = arith_prove(s->ctx, node);
  if (p >= 0) return icnst(s, GIR_BOOL, lanes, p);
  if (t == GIR_BOOL && lanes == 1) {
    int64_t v;
    const tir_expr *x = a, *y = b;
    if (iconst(x, &v)) {
      x = b;
      y = a;
    }
    if (iconst(y, &v) && (op == TE_EQ || op == TE_NE)) { /* b == true → b, b == false → !b */
      int keep = (op == TE_EQ) == (v != 0);
      return keep ? (tir_expr *)x : mk_un(s, TE_NOT, (tir_expr *)x);
    }
  }
  if (lanes == 1 && ordered(t) && arith_linear_dtype(t)) return cmp_normalize(s, op, a, b);
  return commutative(op) ? raw_bin(s, op, a, b) : node;
}

/* --- binary --- */

static tir_expr *float_bin(simp *s, te_binop op, tir_expr *a, tir_expr *b) {
  switch (op) {
  case TE_MUL:                                         /* x * 1 = x (exact, NaN stays NaN) */
    if (fconst_is(b, 1.0)) return a;
    if (fconst_is(a, 1.0)) return b;
    break;
  case TE_DIV: if (fconst_is(b, 1.0)) return a; break; /* x / 1 = x */
  case TE_ADD:                                         /* x + (-0) = x; x + 0 is not (-0 + 0 = +0) */
    if (fconst_is(b, -0.0)) return a;
    if (fconst_is(a, -0.0)) return b;
    break;
  case TE_SUB: if (fconst_is(b, 0.0)) return a; break; /* x - (+0) = x */
  case TE_MIN: case TE_MAX:                            /* min(x, x) = x */
    if (arith_expr_equal(a, b)) return a;
    break;
  case TE_POW: /* exact forms of small constant exponents instead of a libm call per lane
                * (x^3 → x·x·x, within an ulp, is a graph rewrite: graphir/simplify_rules.c) */
    if (fconst_is(b, 2.0)) return tir_bin(s->b, TE_MUL, a, a);                       /* x^2 = x·x, exact */
    if (fconst_is(b, -1.0)) return tir_bin(s->b, TE_DIV, cnst(s, a->dtype, a->lanes, (tir_value){.f = 1.0}), a); /* x^-1 = 1/x, exact */
    break;
  default: break;
  }
  return tir_bin(s->b, op, a, b);
}

/* +, -, * on integer vectors: lane-wise ring identities. */
static tir_expr *vector_linear(simp *s, te_binop op, tir_expr *a, tir_expr *b) {
  gir_dtype t = a->dtype;
  int32_t L = a->lanes;
  int ra = a->kind == TIR_RAMP, rb = b->kind == TIR_RAMP, ba = a->kind == TIR_BROADCAST, bb = b->kind == TIR_BROADCAST;
  if (op == TE_ADD || op == TE_SUB) {
    if (iconst_is(b, 0)) return a;                                       /* x ± 0 = x */
    if (op == TE_ADD && iconst_is(a, 0)) return b;
    if (op == TE_SUB && arith_expr_equal(a, b)) return icnst(s, t, L, 0); /* x - x = 0 */
    if (ra && rb)                                                         /* ramp(b1,s1) ± ramp(b2,s2) */
      return tir_ramp(s->b, mk_bin(s, op, a->u.ramp.base, b->u.ramp.base),
                      mk_bin(s, op, a->u.ramp.stride, b->u.ramp.stride), L);
    if (ra && bb) /* ramp(b, s) ± x = ramp(b ± x, s) */
      return tir_ramp(s->b, mk_bin(s, op, a->u.ramp.base, b->u.bcast.value), a->u.ramp.stride, L);
    if (ba && rb) { /* x + ramp(b, s) = ramp(x + b, s); x - ramp(b, s) = ramp(x - b, -s) */
      tir_expr *st = op == TE_ADD ? b->u.ramp.stride : mk_un(s, TE_NEG, b->u.ramp.stride);
      return tir_ramp(s->b, mk_bin(s, op, a->u.bcast.value, b->u.ramp.base), st, L);
    }
  } else if (op == TE_MUL) {
    if (iconst_is(b, 1)) return a; /* x * 1 = x, x * 0 = 0 */
    if (iconst_is(a, 1)) return b;
    if (iconst_is(a, 0) || iconst_is(b, 0)) return icnst(s, t, L, 0);
    if (ra && bb) /* ramp(b, s) * x = ramp(b*x, s*x) */
      return tir_ramp(s->b, mk_bin(s, TE_MUL, a->u.ramp.base, b->u.bcast.value),
                      mk_bin(s, TE_MUL, a->u.ramp.stride, b->u.bcast.value), L);
    if (ba && rb)
      return tir_ramp(s->b, mk_bin(s, TE_MUL, a->u.bcast.value, b->u.ramp.base),
                      mk_bin(s, TE_MUL, a->u.bcast.value, b->u.ramp.stride), L);
  }
  return raw_bin(s, op, a, b);
}

static tir_expr *int_bin(simp *s, te_binop op, tir_expr *a, tir_expr *b) {
  gir_dtype t = a->dtype;
  int32_t L = a->lanes;
  int64_t v;
  switch (op) {
  case TE_ADD: case TE_SUB: case TE_MUL: {
    if (t == GIR_BOOL) break;
    if (L > 1) return vector_linear(s, op, a, b);
    tir_expr *node = tir_bin(s->b, op, a, b);
    arith_linear l = linear_of(s, node);
    if (l.n == 1 && l.c == 0 && l.t[0].coef == 1 && l.t[0].atom == node) return raw_bin(s, op, a, b); /* x*y */
    return linear_expr(s, &l);
  }
  case TE_DIV: case TE_FLOORDIV: case TE_MOD: case TE_FLOORMOD: {
    if (t == GIR_BOOL) break;
    tir_expr *r = div_rules(s, op, a, b);
    if (r) return r;
    break;
  }
  case TE_MIN: case TE_MAX: {
    if (arith_expr_equal(a, b)) return a; /* min(x, x) = x */
    if (L == 1 && ordered(t)) {           /* min(a, b) = a when a <= b */
      arith_range d;
      if (arith_diff_bounds(s->ctx, a, b, &d) == 0 || t == GIR_BOOL) {
        if (t == GIR_BOOL) {
          arith_range ra = arith_bounds(s->ctx, a), rb = arith_bounds(s->ctx, b);
          d = (arith_range){ra.min - rb.max, ra.max - rb.min};
        }
        if (d.max <= 0) return op == TE_MIN ? a : b;
        if (d.min >= 0) return op == TE_MIN ? b : a;
      }
    }
    return raw_bin(s, op, a, b);
  }
  case TE_AND: case TE_OR: {
    int64_t ones = t == GIR_BOOL ? 1 : tir_wrap_int(t, -1);
    if (arith_expr_equal(a, b)) return a; /* x & x = x | x = x */
    for (int k = 0; k < 2; k++) {
      tir_expr *x = k ? b : a, *y = k ? a : b;
      if (!iconst(x, &v)) continue;
      if (op == TE_AND) {
        if (v == 0) return x;        /* 0 & y = 0 */
        if (v == ones) return y;     /* all ones & y = y */
      } else {
        if (v == 0) return y;        /* 0 | y = y */
        if (v == ones) return x;     /* all ones | y = all ones */
      }
    }
    if (t == GIR_BOOL && L == 1) { /* decided by ranges: x && y = y when x is true... */
      int pa = arith_prove(s->ctx, a), pb = arith_prove(s->ctx, b);
      if (op == TE_AND && (pa == 0 || pb == 0)) return icnst(s, t, 1, 0);
      if (op == TE_OR && (pa == 1 || pb == 1)) return icnst(s, t, 1, 1);
      if ((op == TE_AND && pa == 1) || (op == TE_OR && pa == 0)) return b;
      if ((op == TE_AND && pb == 1) || (op == TE_OR && pb == 0)) return a;
    }
    return raw_bin(s, op, a, b);
  }
  case TE_XOR:
    if (arith_expr_equal(a, b)) return icnst(s, t, L, 0); /* x ^ x = 0 */
    if (iconst_is(b, 0)) return a;                         /* x ^ 0 = x */
    if (iconst_is(a, 0)) return b;
    if (t == GIR_BOOL && iconst_is(b, 1)) return mk_un(s, TE_NOT, a); /* x ^ true = !x */
    if (t == GIR_BOOL && iconst_is(a, 1)) return mk_un(s, TE_NOT, b);
    return raw_bin(s, op, a, b);
  case TE_SHL: case TE_SHR:
    if (iconst(b, &v)) {
      if (v == 0) return a;                                                  /* x << 0 = x */
      if ((uint64_t)v >= (uint64_t)bits_of(t)) return icnst(s, t, L, 0);    /* shifted out entirely */
    }
    break;
  case TE_POW:
    if (iconst_is(b, 0)) return icnst(s, t, L, 1); /* x^0 = 1 (0^0 too) */
    if (iconst_is(b, 1)) return a;                 /* x^1 = x */
    break;
  default:
    if (is_cmp(op)) return cmp_rules(s, op, a, b);
    break;
  }
  return tir_bin(s->b, op, a, b);
}

static tir_expr *mk_bin(simp *s, te_binop op, tir_expr *a, tir_expr *b) {
  gir_dtype t = a->dtype;
  if (is_const(a) && is_const(b) && (!gir_dtype_is_float(t) || float_fold_bin(op, t)))
    return cnst(s, is_cmp(op) ? GIR_BOOL : t, 1, tir_value_binop(op, t, tir_const_value(a), tir_const_value(b)));
  if (a->kind == TIR_BROADCAST && b->kind == TIR_BROADCAST) /* lane-wise: op(bcast x, bcast y) = bcast(op(x, y)) */
    return tir_broadcast(s->b, mk_bin(s, op, a->u.bcast.value, b->u.bcast.value), a->lanes);
  if (gir_dtype_is_float(t)) {
    if (is_cmp(op)) {
      /* x == x is not true for NaN; only ordered facts about constants fold */
      return tir_bin(s->b, op, a, b);
    }
    return float_bin(s, op, a, b);
  }
  return int_bin(s, op, a, b);
}

/* --- unary, select, cast --- */

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

static tir_expr *mk_un(simp *s, te_unop op, tir_expr *a) {
  gir_dtype t = a->dtype;
  int fl = gir_dtype_is_float(t);
  if (is_const(a) && (!fl || float_fold_un(op, t))) {
    gir_dtype rt = op == TE_ISNAN || op == TE_ISINF ? GIR_BOOL : t;
    return cnst(s, rt, 1, tir_value_unop(op, t, tir_const_value(a)));
  }
  if (a->kind == TIR_BROADCAST) return tir_broadcast(s->b, mk_un(s, op, a->u.bcast.value), a->lanes);
  if ((op == TE_ISNAN || op == TE_ISINF) && !fl) return icnst(s, GIR_BOOL, a->lanes, 0); /* integers are finite */
  if (!fl && (op == TE_FLOOR || op == TE_CEIL || op == TE_ROUND || op == TE_TRUNC)) return a; /* identity on integers */
  int self = a->kind == TIR_UNARY && a->u.un.op == op;
  switch (op) {
  case TE_NEG:
    if (self) return a->u.un.a; /* -(-x) = x, exact for floats, modular for integers */
    if (!fl && t != GIR_BOOL && a->lanes == 1) {
      arith_linear l = linear_of(s, a), zero = arith_linear_const(t, 0);
      arith_linear n = arith_linear_add(s->ctx, &zero, &l, -1);
      return linear_expr(s, &n);
    }
    break;
  case TE_NOT:
    if (self) return a->u.un.a; /* !!x = x */
    if (a->kind == TIR_BINARY && is_cmp(a->u.bin.op)) {
      te_binop c = a->u.bin.op;
      /* !(x < y) = x >= y on integers; on floats only == and != swap (NaN) */
      if (!gir_dtype_is_float(a->u.bin.a->dtype) || c == TE_EQ || c == TE_NE)
        return mk_bin(s, negate_cmp(c), a->u.bin.a, a->u.bin.b);
    }
    if (t == GIR_BOOL && a->lanes == 1) {
      int p = arith_prove(s->ctx, a);
      if (p >= 0) return icnst(s, GIR_BOOL, 1, !p);
    }
    break;
  case TE_BITNOT:
    if (self) return a->u.un.a; /* ~~x = x */
    break;
  case TE_ABS:
    if (self) return a; /* |(|x|)| = |x| */
    if (!fl && ordered(t) && arith_bounds(s->ctx, a).min >= 0) return a;
    break;
  case TE_FLOOR: case TE_CEIL: case TE_ROUND: case TE_TRUNC:
    if (self) return a; /* idempotent */
    break;
  default: break;
  }
  return tir_un(s->b, op, a);
}

static tir_expr *mk_select(simp *s, tir_expr_kind k, tir_expr *c, tir_expr *a, tir_expr *b) {
  int64_t v;
  if (iconst(c, &v)) return v ? a : b;
  if (arith_expr_equal(a, b)) return a; /* c ? x : x = x */
  if (c->lanes == 1) {
    int p = arith_prove(s->ctx, c);
    if (p >= 0) return p ? a : b;
  }
  return k == TIR_SELECT ? tir_select(s->b, c, a, b) : tir_if_then_else(s->b, c, a, b);
}

/* Every value of `from` is a value of `to` (integers; floats by precision). */
static int contains_type(gir_dtype to, gir_dtype from) {
  if (gir_dtype_is_float(to) != gir_dtype_is_float(from)) return 0;
  if (gir_dtype_is_float(to)) {
    if (to == from || to == GIR_F64) return 1;
    return to == GIR_F32 && (from == GIR_F16 || from == GIR_BF16 || gir_dtype_is_f8(from));
  }
  if (!gir_dtype_is_int(to) || !gir_dtype_is_int(from)) return 0;
  if (to == GIR_U64) return !gir_dtype_is_signed(from);
  if (from == GIR_U64) return 0;
  arith_range f = arith_full(from), g = arith_full(to);
  return f.min >= g.min && f.max <= g.max;
}

static tir_expr *mk_cast(simp *s, gir_dtype t, tir_expr *a) {
  if (a->dtype == t) return a;
  if (is_const(a)) {
    tir_value v = tir_const_value(a);
    if (cast_fold_ok(t, a->dtype, v)) return cnst(s, t, 1, tir_value_cast(t, a->dtype, v));
  }
  if (a->kind == TIR_BROADCAST) return tir_broadcast(s->b, mk_cast(s, t, a->u.bcast.value), a->lanes);
  /* to(mid(x: to)) = x when mid holds every value of `to` */
  if (a->kind == TIR_CAST && a->u.cast.a->dtype == t && contains_type(a->dtype, t)) return a->u.cast.a;
  return tir_cast(s->b, t, a);
}

/* --- expressions --- */

static tir_expr *sx(simp *s, tir_expr *e);

static tir_expr *replace_expr(tir_builder *b, tir_expr *e, const tir_expr *what, tir_expr *by);

/* A condition `t op k` (k a constant, t an integer expression other than a plain
 * variable, whose range the arith context knows) that leaves t one value v pins
 * t to v in e: the branch of a lazy if_then_else that a concat or an interleave
 * selects by mod(i, 2) < 1 then reads its input at i/2, not through a div/mod of
 * a sum that still holds mod(i, 2). Conjunctions pin each part. */
static tir_expr *pin_atoms(simp *s, tir_expr *e, const tir_expr *cond, int truth) {
  if (cond->kind == TIR_BINARY && cond->u.bin.op == TE_AND && truth && cond->u.bin.a->dtype == GIR_BOOL)
    return pin_atoms(s, pin_atoms(s, e, cond->u.bin.a, 1), cond->u.bin.b, 1);
  if (cond->kind == TIR_UNARY && cond->u.un.op == TE_NOT) return pin_atoms(s, e, cond->u.un.a, !truth);
  if (cond->kind != TIR_BINARY || cond->u.bin.op < TE_EQ || cond->u.bin.op == TE_NE) return e;
  const tir_expr *t = cond->u.bin.a;
  int64_t k;
  if (t->kind == TIR_VAR || t->kind == TIR_INT || t->lanes != 1 || !arith_linear_dtype(t->dtype) ||
      !iconst(cond->u.bin.b, &k))
    return e;
  arith_linear l = linear_of(s, t);
  arith_range r;
  if (!arith_linear_exact(s->ctx, &l) || arith_linear_bounds(s->ctx, &l, &r) < 0) return e;
  te_binop op = truth ? cond->u.bin.op : negate_cmp(cond->u.bin.op);
  switch (op) {
  case TE_EQ: r.min = r.min > k ? r.min : k; r.max = r.max < k ? r.max : k; break;
  case TE_LT: if (k - 1 < r.max) r.max = k - 1; break;
  case TE_LE: if (k < r.max) r.max = k; break;
  case TE_GT: if (k + 1 > r.min) r.min = k + 1; break;
  case TE_GE: if (k > r.min) r.min = k; break;
  default: return e;
  }
  if (r.min != r.max) return e;
  return replace_expr(s->b, e, t, icnst(s, t->dtype, 1, r.min));
}

/* Whether scalar e can be evaluated wherever the enclosing loops run, whatever a
 * condition around it says: every load's index provably inside its buffer, integer
 * divisions only by nonzero constants, no lazy choice inside. */
static int speculatable(simp *s, const tir_expr *e) {
  switch (e->kind) {
  case TIR_INT: case TIR_FLOAT: case TIR_VAR: return e->lanes == 1;
  case TIR_LOAD: {
    const tir_expr *ix = e->u.load.index;
    if (e->lanes != 1 || !speculatable(s, ix) || !arith_linear_dtype(ix->dtype)) return 0;
    arith_linear l = linear_of(s, ix);
    arith_range r;
    return arith_linear_exact(s->ctx, &l) && arith_linear_bounds(s->ctx, &l, &r) == 0 && r.min >= 0 &&
           r.max < e->u.load.buf->size;
  }
  case TIR_UNARY: return speculatable(s, e->u.un.a);
  case TIR_CAST: case TIR_BITCAST: return speculatable(s, e->u.cast.a);
  case TIR_BINARY: {
    te_binop op = e->u.bin.op;
    if (gir_dtype_is_int(e->u.bin.a->dtype) &&
        (op == TE_DIV || op == TE_MOD || op == TE_FLOORDIV || op == TE_FLOORMOD)) {
      int64_t d;
      if (!iconst(e->u.bin.b, &d) || d == 0) return 0;
    }
    return speculatable(s, e->u.bin.a) && speculatable(s, e->u.bin.b);
  }
  case TIR_SELECT: return speculatable(s, e->u.sel.c) && speculatable(s, e->u.sel.a) && speculatable(s, e->u.sel.b);
  case TIR_DOT4:
    return speculatable(s, e->u.dot4.acc) && speculatable(s, e->u.dot4.a) && speculatable(s, e->u.dot4.b);
  default: return 0;
  }
}

/* Simplifies e under the assumption that scalar cond has value `truth`. */
static tir_expr *sx_assuming(simp *s, tir_expr *e, tir_expr *cond, int truth) {
  if (cond->lanes != 1) return sx(s, e);
  int32_t mark = arith_ctx_mark(s->ctx);
  arith_ctx_assume(s->ctx, cond, truth);
  tir_expr *r = sx(s, pin_atoms(s, e, cond, truth));
  arith_ctx_reset(s->ctx, mark);
  return r;
}

static tir_expr *sx(simp *s, tir_expr *e) {
  switch (e->kind) {
  case TIR_INT: {
    int64_t v = tir_wrap_int(e->dtype, e->u.i);
    return v == e->u.i ? e : tir_int(s->b, e->dtype, v);
  }
  case TIR_FLOAT: {
    double v = tir_round_float(e->dtype, e->u.f);
    return v == e->u.f || v != v ? e : tir_float(s->b, e->dtype, v);
  }
  case TIR_VAR: {
    if (!ordered(e->dtype)) return e;
    arith_range r = arith_ctx_lookup(s->ctx, e->u.var); /* a variable known to one value */
    return r.min == r.max ? tir_int(s->b, e->dtype, r.min) : e;
  }
  case TIR_LOAD: {
    tir_expr *ix = sx(s, e->u.load.index);
    return ix == e->u.load.index ? e : tir_load(s->b, e->u.load.buf, ix);
  }
  case TIR_UNARY: return mk_un(s, e->u.un.op, sx(s, e->u.un.a));
  case TIR_BINARY: return mk_bin(s, e->u.bin.op, sx(s, e->u.bin.a), sx(s, e->u.bin.b));
  case TIR_SELECT:
    /* both operands are evaluated, so neither may be simplified under the
     * condition: a rewrite valid only when it holds could fault when it does not */
    return mk_select(s, TIR_SELECT, sx(s, e->u.sel.c), sx(s, e->u.sel.a), sx(s, e->u.sel.b));
  case TIR_IF_THEN_ELSE: {
    tir_expr *c = sx(s, e->u.sel.c);
    int64_t v;
    if (iconst(c, &v)) return sx(s, v ? e->u.sel.a : e->u.sel.b);
    tir_expr *a = sx_assuming(s, e->u.sel.a, c, 1), *b = sx_assuming(s, e->u.sel.b, c, 0);
    /* both sides safe to evaluate everywhere (an interleave's two in-bounds loads):
     * an eager select, which the vectorizer can turn into a vector select */
    if (e->lanes == 1 && speculatable(s, a) && speculatable(s, b)) return mk_select(s, TIR_SELECT, c, a, b);
    return mk_select(s, TIR_IF_THEN_ELSE, c, a, b);
  }
  case TIR_CAST: return mk_cast(s, e->dtype, sx(s, e->u.cast.a));
  case TIR_BITCAST: {
    tir_expr *a = sx(s, e->u.cast.a);
    return a == e->u.cast.a ? e : tir_bitcast(s->b, e->dtype, a);
  }
  case TIR_RAMP: {
    tir_expr *base = sx(s, e->u.ramp.base), *stride = sx(s, e->u.ramp.stride);
    if (iconst_is(stride, 0) || fconst_is(stride, 0.0)) return tir_broadcast(s->b, base, e->lanes);
    return base == e->u.ramp.base && stride == e->u.ramp.stride ? e : tir_ramp(s->b, base, stride, e->lanes);
  }
  case TIR_BROADCAST: {
    tir_expr *v = sx(s, e->u.bcast.value);
    return v == e->u.bcast.value ? e : tir_broadcast(s->b, v, e->lanes);
  }
  case TIR_DOT4: {
    tir_expr *acc = sx(s, e->u.dot4.acc), *a = sx(s, e->u.dot4.a), *b = sx(s, e->u.dot4.b);
    if (iconst_is(a, 0) || iconst_is(b, 0)) return acc; /* acc + sum of 0 * y */
    if (acc == e->u.dot4.acc && a == e->u.dot4.a && b == e->u.dot4.b) return e;
    return tir_dot4(s->b, acc, a, b);
  }
  case TIR_SHUFFLE: { /* never folded: the value is another lane's */
    tir_expr *v = sx(s, e->u.shfl.value);
    return v == e->u.shfl.value ? e : tir_shuffle(s->b, e->u.shfl.mode, v, e->u.shfl.offset);
  }
  default: return e;
  }
}

static tir_expr *simplify_fix(simp *s, tir_expr *e) {
  for (int round = 0; round < 4; round++) {
    tir_expr *r = sx(s, e);
    if (r == e || arith_expr_equal(r, e)) return r;
    e = r;
  }
  return e;
}

tir_expr *tir_simplify_expr(tir_builder *b, arith_ctx *ctx, tir_expr *e) {
  if (ctx) {
    simp s = {b, ctx};
    return simplify_fix(&s, e);
  }
  gir_arena *tmp = gir_arena_new();
  if (!tmp) abort();
  arith_ctx c;
  arith_ctx_init(&c, tmp);
  simp s = {b, &c};
  tir_expr *r = simplify_fix(&s, e);
  gir_arena_free(tmp);
  return r;
}

/* --- statements --- */

tir_stmt *tir_nop(tir_builder *b) { return tir_seq(b, NULL, 0); }

int tir_stmt_is_nop(const tir_stmt *s) { return !s || (s->kind == TIR_SEQ && s->u.seq.n == 0); }

int tir_stmt_uses_var(const tir_stmt *s, const tir_var *v) {
  if (!s) return 0;
  switch (s->kind) {
  case TIR_FOR:
    return arith_uses_var(s->u.loop.min, v) || arith_uses_var(s->u.loop.extent, v) ||
           tir_stmt_uses_var(s->u.loop.body, v);
  case TIR_LET: return arith_uses_var(s->u.let.value, v) || tir_stmt_uses_var(s->u.let.body, v);
  case TIR_IF:
    return arith_uses_var(s->u.ifs.cond, v) || tir_stmt_uses_var(s->u.ifs.then_s, v) ||
           tir_stmt_uses_var(s->u.ifs.else_s, v);
  case TIR_STORE: return arith_uses_var(s->u.store.index, v) || arith_uses_var(s->u.store.value, v);
  case TIR_PREFETCH: return arith_uses_var(s->u.prefetch.index, v);
  case TIR_WMMA:
    return arith_uses_var(s->u.wmma.fi, v) || (s->u.wmma.ia && arith_uses_var(s->u.wmma.ia, v)) ||
           (s->u.wmma.ib && arith_uses_var(s->u.wmma.ib, v)) || (s->u.wmma.index && arith_uses_var(s->u.wmma.index, v));
  case TIR_FAIL:
    return arith_uses_var(s->u.fail.value, v) || arith_uses_var(s->u.fail.lo, v) || arith_uses_var(s->u.fail.hi, v);
  case TIR_ALLOCATE: return tir_stmt_uses_var(s->u.alloc.body, v);
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++)
      if (tir_stmt_uses_var(s->u.seq.s[i], v)) return 1;
    return 0;
  default: return 0;
  }
}

static tir_stmt *ss(simp *s, tir_stmt *st);

static tir_stmt *ss_for(simp *s, tir_stmt *st) {
  tir_var *v = st->u.loop.var;
  tir_expr *min = simplify_fix(s, st->u.loop.min), *ext = simplify_fix(s, st->u.loop.extent);
  arith_range er = arith_bounds(s->ctx, ext);
  if (ordered(ext->dtype) && er.max <= 0) return tir_nop(s->b); /* never runs */
  if (ordered(ext->dtype) && er.min == 1 && er.max == 1 &&      /* runs once, with v = min (a loop bound */
      !tir_for_kind_is_gpu(st->u.loop.kind))                     /* to the GPU grid keeps the geometry) */
    return ss(s, tir_substitute(s->b, st->u.loop.body, v, min));
  tir_stmt *body = st->u.loop.body;
  if (!is_const(min) && v->dtype == min->dtype && arith_linear_dtype(min->dtype) && min->lanes == 1) {
    /* a symbolic min is moved into the body (for v in [m, +e) → for v in [0, +e)
     * with v read as m + v): intervals cannot relate v to m, linear forms can */
    body = tir_substitute(s->b, body, v, mk_bin(s, TE_ADD, min, tir_var_ref(s->b, v)));
    min = tir_int(s->b, min->dtype, 0);
  }
  int32_t mark = arith_ctx_mark(s->ctx);
  if (ordered(min->dtype) && min->dtype == ext->dtype && min->lanes == 1) {
    /* v ∈ [min, min + extent - 1] */
    tir_expr *last = tir_bin(s->b, TE_SUB, tir_bin(s->b, TE_ADD, min, ext), tir_int(s->b, ext->dtype, 1));
    arith_range lo = arith_bounds(s->ctx, min), hi = arith_bounds(s->ctx, last);
    if (lo.min <= hi.max) arith_ctx_push(s->ctx, v, (arith_range){lo.min, hi.max});
  }
  body = ss(s, body);
  arith_ctx_reset(s->ctx, mark);
  if (tir_stmt_is_nop(body)) return tir_nop(s->b);
  return tir_for(s->b, v, min, ext, st->u.loop.kind, body);
}

static tir_stmt *ss_let(simp *s, tir_stmt *st) {
  tir_var *v = st->u.let.var;
  tir_expr *val = simplify_fix(s, st->u.let.value);
  if (val->lanes == 1 && (is_const(val) || val->kind == TIR_VAR)) /* inline constants and plain variables */
    return ss(s, tir_substitute(s->b, st->u.let.body, v, val));
  if (!tir_stmt_uses_var(st->u.let.body, v)) return ss(s, st->u.let.body); /* dead let: its value is pure */
  int32_t mark = arith_ctx_mark(s->ctx);
  if (val->lanes == 1 && ordered(val->dtype)) arith_ctx_push(s->ctx, v, arith_bounds(s->ctx, val));
  tir_stmt *body = ss(s, st->u.let.body);
  arith_ctx_reset(s->ctx, mark);
  if (tir_stmt_is_nop(body)) return tir_nop(s->b);
  return tir_let(s->b, v, val, body);
}

static tir_stmt *ss_if(simp *s, tir_stmt *st) {
  tir_expr *c = simplify_fix(s, st->u.ifs.cond);
  int p = c->lanes == 1 ? arith_prove(s->ctx, c) : -1;
  if (p == 1) return ss(s, st->u.ifs.then_s);
  if (p == 0) return st->u.ifs.else_s ? ss(s, st->u.ifs.else_s) : tir_nop(s->b);
  int32_t mark = arith_ctx_mark(s->ctx);
  arith_ctx_assume(s->ctx, c, 1);
  tir_stmt *then_s = ss(s, st->u.ifs.then_s);
  arith_ctx_reset(s->ctx, mark);
  tir_stmt *else_s = NULL;
  if (st->u.ifs.else_s) {
    arith_ctx_assume(s->ctx, c, 0);
    else_s = ss(s, st->u.ifs.else_s);
    arith_ctx_reset(s->ctx, mark);
    if (tir_stmt_is_nop(else_s)) else_s = NULL;
  }
  if (tir_stmt_is_nop(then_s)) {
    if (!else_s) return tir_nop(s->b);
    return tir_if(s->b, simplify_fix(s, mk_un(s, TE_NOT, c)), else_s, NULL);
  }
  return tir_if(s->b, c, then_s, else_s);
}

static tir_stmt *ss(simp *s, tir_stmt *st) {
  if (!st) return tir_nop(s->b);
  switch (st->kind) {
  case TIR_FOR: return ss_for(s, st);
  case TIR_LET: return ss_let(s, st);
  case TIR_IF: return ss_if(s, st);
  case TIR_STORE:
    return tir_store(s->b, st->u.store.buf, simplify_fix(s, st->u.store.index), simplify_fix(s, st->u.store.value));
  case TIR_PREFETCH: return tir_prefetch(s->b, st->u.prefetch.buf, simplify_fix(s, st->u.prefetch.index));
  case TIR_WMMA:
    return tir_wmma_with(s->b, st, simplify_fix(s, st->u.wmma.fi), st->u.wmma.ia ? simplify_fix(s, st->u.wmma.ia) : NULL,
                         st->u.wmma.ib ? simplify_fix(s, st->u.wmma.ib) : NULL,
                         st->u.wmma.index ? simplify_fix(s, st->u.wmma.index) : NULL);
  case TIR_FAIL:
    return tir_fail(s->b, st->u.fail.check, simplify_fix(s, st->u.fail.value), simplify_fix(s, st->u.fail.lo),
                    simplify_fix(s, st->u.fail.hi));
  case TIR_ALLOCATE: {
    tir_stmt *body = ss(s, st->u.alloc.body);
    return tir_stmt_is_nop(body) ? body : tir_allocate(s->b, st->u.alloc.buf, body);
  }
  case TIR_SEQ: {
    tir_stmt **xs = gir_arena_alloc(s->b->arena, sizeof(tir_stmt *) * (size_t)(st->u.seq.n + 1));
    if (!xs) abort();
    for (int32_t i = 0; i < st->u.seq.n; i++) xs[i] = ss(s, st->u.seq.s[i]);
    tir_stmt *r = tir_seq(s->b, xs, st->u.seq.n);
    return r->u.seq.n == 1 ? r->u.seq.s[0] : r;
  }
  default: return st;
  }
}

tir_stmt *tir_simplify_in(tir_builder *b, arith_ctx *ctx, tir_stmt *st) {
  simp s = {b, ctx};
  int32_t mark = arith_ctx_mark(ctx);
  tir_stmt *r = ss(&s, st);
  arith_ctx_reset(ctx, mark);
  return r;
}

tir_stmt *tir_simplify(tir_builder *b, tir_stmt *st) {
  gir_arena *tmp = gir_arena_new();
  if (!tmp) abort();
  arith_ctx c;
  arith_ctx_init(&c, tmp);
  tir_stmt *r = tir_simplify_in(b, &c, st);
  gir_arena_free(tmp);
  return r;
}

/* --- substitution --- */

typedef struct subst {
  int32_t n;
  const tir_var *const *vars;
  tir_expr *const *vals;
  const tir_expr *what; /* or, with n = 0: every subexpression equal to `what` becomes `by` */
  tir_expr *by;
} subst;

static tir_expr *sub_e(tir_builder *b, const subst *m, tir_expr *e) {
  if (m->what && arith_expr_equal(e, m->what)) return m->by;
  switch (e->kind) {
  case TIR_VAR:
    for (int32_t i = 0; i < m->n; i++)
      if (m->vars[i] == e->u.var) {
        assert(m->vals[i]->dtype == e->dtype);
        return m->vals[i];
      }
    return e;
  case TIR_LOAD: {
    tir_expr *ix = sub_e(b, m, e->u.load.index);
    return ix == e->u.load.index ? e : tir_load(b, e->u.load.buf, ix);
  }
  case TIR_UNARY: {
    tir_expr *a = sub_e(b, m, e->u.un.a);
    return a == e->u.un.a ? e : tir_un(b, e->u.un.op, a);
  }
  case TIR_BINARY: {
    tir_expr *x = sub_e(b, m, e->u.bin.a), *y = sub_e(b, m, e->u.bin.b);
    return x == e->u.bin.a && y == e->u.bin.b ? e : tir_bin(b, e->u.bin.op, x, y);
  }
  case TIR_SELECT: case TIR_IF_THEN_ELSE: {
    tir_expr *c = sub_e(b, m, e->u.sel.c), *x = sub_e(b, m, e->u.sel.a), *y = sub_e(b, m, e->u.sel.b);
    if (c == e->u.sel.c && x == e->u.sel.a && y == e->u.sel.b) return e;
    return e->kind == TIR_SELECT ? tir_select(b, c, x, y) : tir_if_then_else(b, c, x, y);
  }
  case TIR_CAST: case TIR_BITCAST: {
    tir_expr *a = sub_e(b, m, e->u.cast.a);
    if (a == e->u.cast.a) return e;
    return e->kind == TIR_CAST ? tir_cast(b, e->dtype, a) : tir_bitcast(b, e->dtype, a);
  }
  case TIR_RAMP: {
    tir_expr *x = sub_e(b, m, e->u.ramp.base), *y = sub_e(b, m, e->u.ramp.stride);
    return x == e->u.ramp.base && y == e->u.ramp.stride ? e : tir_ramp(b, x, y, e->lanes);
  }
  case TIR_BROADCAST: {
    tir_expr *x = sub_e(b, m, e->u.bcast.value);
    return x == e->u.bcast.value ? e : tir_broadcast(b, x, e->lanes);
  }
  case TIR_DOT4: {
    tir_expr *acc = sub_e(b, m, e->u.dot4.acc), *x = sub_e(b, m, e->u.dot4.a), *y = sub_e(b, m, e->u.dot4.b);
    return acc == e->u.dot4.acc && x == e->u.dot4.a && y == e->u.dot4.b ? e : tir_dot4(b, acc, x, y);
  }
  case TIR_SHUFFLE: {
    tir_expr *x = sub_e(b, m, e->u.shfl.value);
    return x == e->u.shfl.value ? e : tir_shuffle(b, e->u.shfl.mode, x, e->u.shfl.offset);
  }
  default: return e;
  }
}

static tir_stmt *sub_s(tir_builder *b, const subst *m, tir_stmt *s);

/* e with every subexpression structurally equal to `what` replaced by `by`. */
static tir_expr *replace_expr(tir_builder *b, tir_expr *e, const tir_expr *what, tir_expr *by) {
  subst m = {.n = 0, .what = what, .by = by};
  return sub_e(b, &m, e);
}

/* The map without v (for the body of a statement that binds v again). */
static subst hide(tir_builder *b, const subst *m, const tir_var *v, subst *storage) {
  int32_t k = -1;
  for (int32_t i = 0; i < m->n; i++)
    if (m->vars[i] == v) k = i;
  if (k < 0) return *m;
  const tir_var **vars = gir_arena_alloc(b->arena, sizeof(tir_var *) * (size_t)m->n);
  tir_expr **vals = gir_arena_alloc(b->arena, sizeof(tir_expr *) * (size_t)m->n);
  if (!vars || !vals) abort();
  int32_t n = 0;
  for (int32_t i = 0; i < m->n; i++)
    if (i != k) {
      vars[n] = m->vars[i];
      vals[n++] = m->vals[i];
    }
  *storage = (subst){.n = n, .vars = vars, .vals = vals};
  return *storage;
}

static tir_stmt *sub_s(tir_builder *b, const subst *m, tir_stmt *s) {
  if (!s || m->n == 0) return s;
  subst inner_storage, inner;
  switch (s->kind) {
  case TIR_FOR: {
    tir_expr *min = sub_e(b, m, s->u.loop.min), *ext = sub_e(b, m, s->u.loop.extent);
    inner = hide(b, m, s->u.loop.var, &inner_storage);
    tir_stmt *body = sub_s(b, &inner, s->u.loop.body);
    if (min == s->u.loop.min && ext == s->u.loop.extent && body == s->u.loop.body) return s;
    return tir_for(b, s->u.loop.var, min, ext, s->u.loop.kind, body);
  }
  case TIR_LET: {
    tir_expr *val = sub_e(b, m, s->u.let.value);
    inner = hide(b, m, s->u.let.var, &inner_storage);
    tir_stmt *body = sub_s(b, &inner, s->u.let.body);
    if (val == s->u.let.value && body == s->u.let.body) return s;
    return tir_let(b, s->u.let.var, val, body);
  }
  case TIR_IF: {
    tir_expr *c = sub_e(b, m, s->u.ifs.cond);
    tir_stmt *t = sub_s(b, m, s->u.ifs.then_s), *e = sub_s(b, m, s->u.ifs.else_s);
    if (c == s->u.ifs.cond && t == s->u.ifs.then_s && e == s->u.ifs.else_s) return s;
    return tir_if(b, c, t, e);
  }
  case TIR_STORE: {
    tir_expr *ix = sub_e(b, m, s->u.store.index), *v = sub_e(b, m, s->u.store.value);
    if (ix == s->u.store.index && v == s->u.store.value) return s;
    return tir_store(b, s->u.store.buf, ix, v);
  }
  case TIR_PREFETCH: {
    tir_expr *ix = sub_e(b, m, s->u.prefetch.index);
    return ix == s->u.prefetch.index ? s : tir_prefetch(b, s->u.prefetch.buf, ix);
  }
  case TIR_WMMA: {
    tir_expr *fi = sub_e(b, m, s->u.wmma.fi), *ia = s->u.wmma.ia ? sub_e(b, m, s->u.wmma.ia) : NULL,
             *ib = s->u.wmma.ib ? sub_e(b, m, s->u.wmma.ib) : NULL,
             *ix = s->u.wmma.index ? sub_e(b, m, s->u.wmma.index) : NULL;
    if (fi == s->u.wmma.fi && ia == s->u.wmma.ia && ib == s->u.wmma.ib && ix == s->u.wmma.index) return s;
    return tir_wmma_with(b, s, fi, ia, ib, ix);
  }
  case TIR_FAIL: {
    tir_expr *v = sub_e(b, m, s->u.fail.value), *lo = sub_e(b, m, s->u.fail.lo), *hi = sub_e(b, m, s->u.fail.hi);
    if (v == s->u.fail.value && lo == s->u.fail.lo && hi == s->u.fail.hi) return s;
    return tir_fail(b, s->u.fail.check, v, lo, hi);
  }
  case TIR_ALLOCATE: {
    tir_stmt *body = sub_s(b, m, s->u.alloc.body);
    return body == s->u.alloc.body ? s : tir_allocate(b, s->u.alloc.buf, body);
  }
  case TIR_SEQ: {
    tir_stmt **xs = NULL;
    for (int32_t i = 0; i < s->u.seq.n; i++) {
      tir_stmt *x = sub_s(b, m, s->u.seq.s[i]);
      if (x != s->u.seq.s[i] && !xs) {
        xs = gir_arena_alloc(b->arena, sizeof(tir_stmt *) * (size_t)s->u.seq.n);
        if (!xs) abort();
        for (int32_t j = 0; j < i; j++) xs[j] = s->u.seq.s[j];
      }
      if (xs) xs[i] = x;
    }
    return xs ? tir_seq(b, xs, s->u.seq.n) : s;
  }
  default: return s;
  }
}

tir_expr *tir_substitute_expr_n(tir_builder *b, tir_expr *e, int32_t n, const tir_var *const *vars,
                                tir_expr *const *values) {
  subst m = {.n = n, .vars = vars, .vals = values};
  return sub_e(b, &m, e);
}

tir_stmt *tir_substitute_n(tir_builder *b, tir_stmt *s, int32_t n, const tir_var *const *vars,
                           tir_expr *const *values) {
  subst m = {.n = n, .vars = vars, .vals = values};
  return sub_s(b, &m, s);
}

tir_expr *tir_substitute_expr(tir_builder *b, tir_expr *e, const tir_var *v, tir_expr *value) {
  return tir_substitute_expr_n(b, e, 1, &v, &value);
}

tir_stmt *tir_substitute(tir_builder *b, tir_stmt *s, const tir_var *v, tir_expr *value) {
  return tir_substitute_n(b, s, 1, &v, &value);
}
