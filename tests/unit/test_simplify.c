/* test_simplify.c — tests of the loop-IR interpreter (tir/tir_eval.c), the
 * integer analysis (tir/arith.c) and the arithmetic simplifier
 * (tir/tir_simplify.c).
 *
 * Two kinds of test. Unit cases: a small expression, the facts known about its
 * variables, and the exact form the simplifier must reach, written next to it
 * (`(x*4 + y) / 4 → x` when 0 <= y < 4), plus constant-folding edge cases whose
 * values come from the integer and IEEE semantics the IR defines. Property
 * tests: hundreds of random expression trees over int64, int32, uint8, uint64
 * and float32 (loads, selects and casts included) with loop variables of random
 * ranges, evaluated with the interpreter at random points of those ranges
 * before and after simplification — results must be identical, bit for bit —
 * and checked against the ranges arith_bounds claims and the canonical linear
 * form arith_linear_expr rebuilds. A failure prints the expression, the
 * simplified one and the point. Set KILN_TEST_SEED to vary the random cases. */
#include <stdlib.h>
#include "arith.h"
#include "check.h"
#include "tir_simplify.h"
#include "tir_eval.h"

/* --- fixtures --- */

typedef struct fx {
  gir_arena *a;
  tir_builder b;
  arith_ctx ctx;
} fx;

static void fx_init(fx *f) {
  f->a = gir_arena_new();
  tir_builder_init(&f->b, f->a);
  arith_ctx_init(&f->ctx, f->a);
}

static void fx_done(fx *f) { gir_arena_free(f->a); }

static const char *str(fx *f, const tir_expr *e) {
  char *buf = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&buf, &n);
  tir_print_expr(e, m);
  fclose(m);
  char *r = gir_arena_strdup(f->a, buf);
  free(buf);
  return r;
}

static const char *sstr(fx *f, const tir_stmt *s) {
  char *buf = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&buf, &n);
  tir_print_stmt(s, m, 0);
  fclose(m);
  char *r = gir_arena_strdup(f->a, buf);
  free(buf);
  return r;
}

static tir_var *var(fx *f, const char *name, int64_t lo, int64_t hi) {
  tir_var *v = tir_var_new(&f->b, name, GIR_I64);
  arith_ctx_push(&f->ctx, v, (arith_range){lo, hi});
  return v;
}

#define B (&f.b)
#define I(v) tir_i64(B, v)
#define V(x) tir_var_ref(B, x)
#define ADD(x, y) tir_bin(B, TE_ADD, x, y)
#define SUB(x, y) tir_bin(B, TE_SUB, x, y)
#define MUL(x, y) tir_bin(B, TE_MUL, x, y)
#define BIN(op, x, y) tir_bin(B, op, x, y)

/* simplify(e) prints as `want` */
static int expect_(fx *f, tir_expr *e, const char *want, int line) {
  const char *before = str(f, e);
  tir_expr *r = tir_simplify_expr(&f->b, &f->ctx, e);
  const char *got = str(f, r);
  return CHECKF(!strcmp(got, want), "line %d: %s\n     simplified to %s\n     expected      %s", line, before, got,
                want);
}
#define EXPECT(e, want) expect_(&f, e, want, __LINE__)

/* simplify(e) is the constant value v */
static int expect_int_(fx *f, tir_expr *e, int64_t want, int line) {
  tir_expr *r = tir_simplify_expr(&f->b, &f->ctx, e);
  return CHECKF(r->kind == TIR_INT && tir_wrap_int(r->dtype, r->u.i) == want, "line %d: %s → %s, expected %lld", line,
                str(f, e), str(f, r), (long long)want);
}
#define EXPECT_INT(e, want) expect_int_(&f, e, want, __LINE__)

static int expect_f_(fx *f, tir_expr *e, double want, int line) {
  tir_expr *r = tir_simplify_expr(&f->b, &f->ctx, e);
  if (!CHECKF(r->kind == TIR_FLOAT, "line %d: %s → %s, expected a constant", line, str(f, e), str(f, r))) return 0;
  double got = r->u.f;
  int ok = (isnan(got) && isnan(want)) || (got == want && signbit(got) == signbit(want));
  return CHECKF(ok, "line %d: %s → %.17g, expected %.17g", line, str(f, e), got, want);
}
#define EXPECT_F(e, want) expect_f_(&f, e, want, __LINE__)

/* simplify(e) is not a constant (a fold that must not happen) */
static int expect_kept_(fx *f, tir_expr *e, int line) {
  tir_expr *r = tir_simplify_expr(&f->b, &f->ctx, e);
  return CHECKF(r->kind != TIR_INT && r->kind != TIR_FLOAT, "line %d: %s must not fold, got %s", line, str(f, e),
                str(f, r));
}
#define EXPECT_KEPT(e) expect_kept_(&f, e, __LINE__)

/* --- the interpreter --- */

static void test_eval(void) {
  fx f;
  fx_init(&f);
  gir_err err = {{0}};
  tir_buffer *A = tir_buffer_new(B, "A", GIR_F32, 8, TIR_GLOBAL, 0);
  tir_buffer *O = tir_buffer_new(B, "O", GIR_I32, 8, TIR_GLOBAL, 1);
  tir_buffer *L = tir_buffer_new(B, "L", GIR_I32, 4, TIR_LOCAL, -1);
  tir_var *i = tir_var_new(B, "i", GIR_I64), *t = tir_var_new(B, "t", GIR_I32);
  /* allocate L; for i in [0,4): L[i] = i*3; let t = L[3] + L[1]: O[0..4) = t as a vector, O[4 + i] = L[i] - 1 */
  tir_stmt *fill = tir_for(B, i, I(0), I(4), TIR_SERIAL,
                           tir_store(B, L, V(i), tir_cast(B, GIR_I32, MUL(V(i), I(3)))));
  tir_expr *sum = ADD(tir_load(B, L, I(3)), tir_load(B, L, I(1)));
  tir_stmt *vec = tir_store(B, O, tir_ramp(B, I(0), I(1), 4), tir_broadcast(B, tir_var_ref(B, t), 4));
  tir_stmt *tail = tir_for(B, i, I(0), I(4), TIR_PARALLEL,
                           tir_store(B, O, ADD(V(i), I(4)), SUB(tir_load(B, L, V(i)), tir_int(B, GIR_I32, 1))));
  tir_stmt *body = tir_allocate(B, L, tir_seq2(B, fill, tir_let(B, t, sum, tir_seq2(B, vec, tail))));
  float a[8] = {0};
  int32_t o[8] = {0};
  tir_buffer *params[2] = {A, O};
  tir_func fn = {"k", 2, params, body, f.b.next_var, f.b.next_buffer};
  void *bufs[2] = {a, o};
  CHECK(tir_eval_func(&fn, bufs, f.a, 0, &err) == 0);
  int32_t want[8] = {12, 12, 12, 12, -1, 2, 5, 8};
  for (int k = 0; k < 8; k++) CHECK_INT(o[k], want[k]);

  /* out-of-bounds store and load are errors, not crashes */
  tir_stmt *oob = tir_store(B, O, I(8), tir_int(B, GIR_I32, 1));
  tir_func fn2 = {"oob", 2, params, oob, f.b.next_var, f.b.next_buffer};
  err.msg[0] = 0;
  CHECK(tir_eval_func(&fn2, bufs, f.a, 0, &err) < 0);
  CHECK_CONTAINS(err.msg, "out of bounds");
  /* if_then_else only evaluates the branch taken; select evaluates both */
  tir_expr *guard = BIN(TE_LT, I(9), I(8));
  tir_stmt *ite = tir_store(B, A, I(0), tir_if_then_else(B, guard, tir_load(B, A, I(9)), tir_float(B, GIR_F32, 2)));
  tir_func fn3 = {"ite", 2, params, ite, f.b.next_var, f.b.next_buffer};
  err.msg[0] = 0;
  CHECK(tir_eval_func(&fn3, bufs, f.a, 0, &err) == 0);
  CHECK_DBL(a[0], 2.0);
  tir_stmt *sel = tir_store(B, A, I(0), tir_select(B, guard, tir_load(B, A, I(9)), tir_float(B, GIR_F32, 2)));
  tir_func fn4 = {"sel", 2, params, sel, f.b.next_var, f.b.next_buffer};
  CHECK(tir_eval_func(&fn4, bufs, f.a, 0, &err) < 0);
  /* the work budget stops runaway evaluation */
  tir_stmt *big = tir_for(B, i, I(0), I(1000000), TIR_SERIAL, tir_store(B, A, I(1), tir_float(B, GIR_F32, 1)));
  tir_func fn5 = {"big", 2, params, big, f.b.next_var, f.b.next_buffer};
  err.msg[0] = 0;
  CHECK(tir_eval_func(&fn5, bufs, f.a, 1000, &err) < 0);
  CHECK_CONTAINS(err.msg, "budget");

  /* scalar semantics follow te_eval: wrapping, division by zero, floor vs trunc */
  tir_value x = {.i = INT64_MIN}, m1 = {.i = -1}, z = {.i = 0}, s7 = {.i = -7}, two = {.i = 2};
  CHECK_INT(tir_value_binop(TE_DIV, GIR_I64, x, m1).i, INT64_MIN);
  CHECK_INT(tir_value_binop(TE_MOD, GIR_I64, x, m1).i, 0);
  CHECK_INT(tir_value_binop(TE_DIV, GIR_I64, s7, z).i, 0);
  CHECK_INT(tir_value_binop(TE_FLOORMOD, GIR_I64, s7, z).i, 0);
  CHECK_INT(tir_value_binop(TE_DIV, GIR_I64, s7, two).i, -3);
  CHECK_INT(tir_value_binop(TE_FLOORDIV, GIR_I64, s7, two).i, -4);
  CHECK_INT(tir_value_binop(TE_MOD, GIR_I64, s7, two).i, -1);
  CHECK_INT(tir_value_binop(TE_FLOORMOD, GIR_I64, s7, two).i, 1);
  CHECK_INT(tir_value_binop(TE_ADD, GIR_I32, (tir_value){.i = INT32_MAX}, (tir_value){.i = 1}).i, INT32_MIN);
  CHECK_INT(tir_value_binop(TE_SUB, GIR_U8, z, (tir_value){.i = 1}).i, 255);
  CHECK_INT(tir_value_cast(GIR_I32, GIR_F32, (tir_value){.f = 1e20}).i, -1); /* saturates to INT64_MAX, wraps */
  CHECK_INT(tir_value_cast(GIR_I64, GIR_F32, (tir_value){.f = NAN}).i, 0);
  CHECK(isnan(tir_value_binop(TE_MIN, GIR_F32, (tir_value){.f = NAN}, (tir_value){.f = 1}).f));
  fx_done(&f);
}

/* --- arith: bounds, linear forms, proofs --- */

static void test_arith(void) {
  fx f;
  fx_init(&f);
  tir_var *x = var(&f, "x", 0, 9), *y = var(&f, "y", 0, 3), *n = var(&f, "n", -5, 5);
  arith_range r = arith_bounds(&f.ctx, ADD(MUL(V(x), I(4)), V(y)));
  CHECK_INT(r.min, 0);
  CHECK_INT(r.max, 39);
  r = arith_bounds(&f.ctx, SUB(ADD(V(x), I(3)), V(x))); /* cancels through the linear form */
  CHECK(r.min == 3 && r.max == 3);
  r = arith_bounds(&f.ctx, BIN(TE_FLOORDIV, V(n), I(2)));
  CHECK(r.min == -3 && r.max == 2);
  r = arith_bounds(&f.ctx, BIN(TE_DIV, V(n), I(2)));
  CHECK(r.min == -2 && r.max == 2);
  r = arith_bounds(&f.ctx, BIN(TE_FLOORMOD, V(n), I(4)));
  CHECK(r.min == 0 && r.max == 3);
  r = arith_bounds(&f.ctx, BIN(TE_MOD, V(n), I(4)));
  CHECK(r.min == -3 && r.max == 3);
  r = arith_bounds(&f.ctx, BIN(TE_FLOORMOD, V(y), I(8))); /* already below the divisor */
  CHECK(r.min == 0 && r.max == 3);
  r = arith_bounds(&f.ctx, BIN(TE_DIV, V(x), V(n))); /* divisor range holds 0 */
  CHECK(r.min == -9 && r.max == 9);
  /* overflow gives the full range, not a wrong one */
  tir_var *big = var(&f, "big", INT64_MAX - 10, INT64_MAX);
  r = arith_bounds(&f.ctx, ADD(V(big), I(100)));
  CHECK(r.min == INT64_MIN && r.max == INT64_MAX);
  tir_var *w = tir_var_new(B, "w", GIR_I32);
  arith_ctx_push(&f.ctx, w, (arith_range){INT32_MAX - 5, INT32_MAX});
  r = arith_bounds(&f.ctx, tir_bin(B, TE_ADD, tir_var_ref(B, w), tir_int(B, GIR_I32, 1)));
  CHECK(r.min == INT32_MIN && r.max == INT32_MAX);
  r = arith_bounds(&f.ctx, tir_ramp(B, MUL(V(x), I(4)), I(1), 4));
  CHECK(r.min == 0 && r.max == 39);

  /* linear forms: like terms collected, canonical order, pairs folded */
  arith_linear l = arith_linear_of(&f.ctx, ADD(ADD(MUL(V(x), I(4)), MUL(V(y), I(2))), MUL(V(x), I(8))));
  CHECK_INT(l.n, 2);
  CHECK_INT(arith_linear_coef(&l, x), 12);
  CHECK_INT(arith_linear_coef(&l, y), 2);
  CHECK_STR(str(&f, arith_linear_expr(B, &l)), "add(mul(x_0, 12), mul(y_1, 2))");
  l = arith_linear_of(&f.ctx, ADD(MUL(BIN(TE_FLOORDIV, V(x), I(4)), I(4)), BIN(TE_FLOORMOD, V(x), I(4))));
  CHECK(l.n == 1 && l.c == 0 && arith_linear_coef(&l, x) == 1);
  l = arith_linear_of(&f.ctx, SUB(I(3), MUL(V(y), I(2))));
  CHECK_STR(str(&f, arith_linear_expr(B, &l)), "sub(3, mul(y_1, 2))");

  /* proofs and solving */
  CHECK_INT(arith_prove(&f.ctx, BIN(TE_LT, V(x), I(10))), 1);
  CHECK_INT(arith_prove(&f.ctx, BIN(TE_LT, V(x), I(9))), -1);
  CHECK_INT(arith_prove(&f.ctx, BIN(TE_GE, ADD(MUL(V(x), I(4)), V(y)), I(40))), 0);
  CHECK_INT(arith_prove(&f.ctx, tir_bin(B, TE_AND, BIN(TE_GE, V(y), I(0)), BIN(TE_LT, V(y), I(4)))), 1);
  tir_var *i = var(&f, "i", 0, 99);
  arith_range s;
  /* i*4 + y < 10 for all y ∈ [0,3]  ⟺  i*4 < 7  ⟺  i <= 1 */
  CHECK(arith_solve(&f.ctx, BIN(TE_LT, ADD(MUL(V(i), I(4)), V(y)), I(10)), i, 1, &s) == 0 && s.max == 1);
  /* ... and it can hold for i <= 2 */
  CHECK(arith_solve(&f.ctx, BIN(TE_LT, ADD(MUL(V(i), I(4)), V(y)), I(10)), i, 0, &s) == 0 && s.max == 2);
  /* 1 <= i + y (padding): for all y when i >= 1 */
  CHECK(arith_solve(&f.ctx, BIN(TE_LE, I(1), ADD(V(i), V(y))), i, 1, &s) == 0 && s.min == 1);
  CHECK(arith_solve(&f.ctx, BIN(TE_LT, BIN(TE_FLOORDIV, V(i), I(2)), I(3)), i, 1, &s) < 0); /* not linear in i */
  /* assumptions narrow ranges */
  int32_t mark = arith_ctx_mark(&f.ctx);
  arith_ctx_assume(&f.ctx, tir_bin(B, TE_AND, BIN(TE_GE, V(i), I(5)), BIN(TE_LT, MUL(V(i), I(2)), I(21))), 1);
  r = arith_ctx_lookup(&f.ctx, i);
  CHECK(r.min == 5 && r.max == 10);
  arith_ctx_reset(&f.ctx, mark);
  arith_ctx_assume(&f.ctx, BIN(TE_LT, V(i), I(5)), 0); /* !(i < 5) */
  r = arith_ctx_lookup(&f.ctx, i);
  CHECK(r.min == 5 && r.max == 99);
  arith_ctx_reset(&f.ctx, mark);
  fx_done(&f);
}

/* --- simplifier unit cases --- */

static void test_fold(void) {
  fx f;
  fx_init(&f);
  tir_expr *i32max = tir_int(B, GIR_I32, INT32_MAX), *i32one = tir_int(B, GIR_I32, 1);
  EXPECT_INT(ADD(I(INT64_MAX), I(1)), INT64_MIN);
  EXPECT_INT(tir_bin(B, TE_ADD, i32max, i32one), INT32_MIN);
  EXPECT_INT(tir_bin(B, TE_MUL, tir_int(B, GIR_I32, 65536), tir_int(B, GIR_I32, 65536)), 0);
  EXPECT_INT(tir_bin(B, TE_SUB, tir_int(B, GIR_U8, 3), tir_int(B, GIR_U8, 5)), 254);
  EXPECT_INT(BIN(TE_DIV, I(7), I(0)), 0);
  EXPECT_INT(BIN(TE_MOD, I(7), I(0)), 0);
  EXPECT_INT(BIN(TE_FLOORDIV, I(7), I(0)), 0);
  EXPECT_INT(BIN(TE_DIV, I(INT64_MIN), I(-1)), INT64_MIN);
  EXPECT_INT(BIN(TE_FLOORDIV, I(-7), I(2)), -4);
  EXPECT_INT(BIN(TE_DIV, I(-7), I(2)), -3);
  EXPECT_INT(BIN(TE_FLOORMOD, I(-7), I(2)), 1);
  EXPECT_INT(BIN(TE_MOD, I(-7), I(2)), -1);
  EXPECT_INT(BIN(TE_FLOORMOD, I(7), I(-2)), -1);
  EXPECT_INT(BIN(TE_SHL, I(1), I(64)), 0);
  EXPECT_INT(BIN(TE_SHL, I(1), I(-1)), 0);
  EXPECT_INT(tir_bin(B, TE_SHR, tir_int(B, GIR_I8, -128), tir_int(B, GIR_I8, 4)), 8); /* logical on the 8 bits */
  EXPECT_INT(BIN(TE_POW, I(3), I(4)), 81);
  EXPECT_INT(BIN(TE_POW, I(2), I(-1)), 0);
  EXPECT_INT(BIN(TE_LT, tir_int(B, GIR_U64, -1), tir_int(B, GIR_U64, 1)), 0); /* unsigned order */
  EXPECT_INT(tir_un(B, TE_ABS, I(INT64_MIN)), INT64_MIN);
  EXPECT_INT(tir_un(B, TE_NEG, tir_int(B, GIR_I32, INT32_MIN)), INT32_MIN);
  EXPECT_INT(tir_cast(B, GIR_I32, I(0x100000005LL)), 5);
  EXPECT_INT(tir_cast(B, GIR_U8, I(-1)), 255);
  EXPECT_INT(tir_cast(B, GIR_I64, tir_float(B, GIR_F32, 1e30)), INT64_MAX);
  EXPECT_INT(tir_cast(B, GIR_I32, tir_float(B, GIR_F32, NAN)), 0);
  EXPECT_INT(tir_cast(B, GIR_I32, tir_float(B, GIR_F32, -2.75)), -2);
  EXPECT_INT(tir_cast(B, GIR_BOOL, tir_float(B, GIR_F32, -0.0)), 0);
  EXPECT_INT(tir_bin(B, TE_XOR, tir_int(B, GIR_BOOL, 1), tir_int(B, GIR_BOOL, 1)), 0);

  /* floats: correctly rounded operations fold to the float32 result */
  tir_expr *p1 = tir_float(B, GIR_F32, 0.1), *p2 = tir_float(B, GIR_F32, 0.2);
  EXPECT_F(tir_bin(B, TE_ADD, p1, p2), (double)(0.1f + 0.2f));
  EXPECT_F(tir_bin(B, TE_DIV, tir_float(B, GIR_F32, 1), tir_float(B, GIR_F32, 3)), (double)(1.0f / 3.0f));
  EXPECT_F(tir_bin(B, TE_MIN, tir_float(B, GIR_F32, NAN), tir_float(B, GIR_F32, 1)), NAN);
  EXPECT_F(tir_bin(B, TE_MAX, tir_float(B, GIR_F32, 1), tir_float(B, GIR_F32, NAN)), NAN);
  EXPECT_F(tir_bin(B, TE_DIV, tir_float(B, GIR_F32, 1), tir_float(B, GIR_F32, -0.0)), -INFINITY);
  EXPECT_F(tir_un(B, TE_SQRT, tir_float(B, GIR_F32, 2)), (double)sqrtf(2.0f));
  EXPECT_F(tir_un(B, TE_ROUND, tir_float(B, GIR_F32, 2.5)), 2.0);
  EXPECT_F(tir_un(B, TE_NEG, tir_float(B, GIR_F32, 0)), -0.0);
  EXPECT_F(tir_cast(B, GIR_F32, I(16777217)), 16777216.0);
  EXPECT_F(tir_cast(B, GIR_F32, tir_float(B, GIR_F64, 0.1)), (double)0.1f);
  EXPECT_INT(tir_bin(B, TE_EQ, tir_float(B, GIR_F32, NAN), tir_float(B, GIR_F32, NAN)), 0);
  /* ...and nothing whose rounding could differ on a target */
  EXPECT_KEPT(tir_un(B, TE_EXP, tir_float(B, GIR_F32, 1)));
  EXPECT_KEPT(tir_bin(B, TE_POW, tir_float(B, GIR_F32, 2), tir_float(B, GIR_F32, 0.5)));
  /* exact forms of x^2 and x^-1 instead of a libm call */
  {
    tir_var *xv = tir_var_new(B, "x", GIR_F32);
    tir_expr *x = tir_var_ref(B, xv);
    tir_expr *sq = tir_simplify_expr(B, &f.ctx, tir_bin(B, TE_POW, x, tir_float(B, GIR_F32, 2)));
    CHECK(sq->kind == TIR_BINARY && sq->u.bin.op == TE_MUL && sq->u.bin.a == x && sq->u.bin.b == x);
    tir_expr *inv = tir_simplify_expr(B, &f.ctx, tir_bin(B, TE_POW, x, tir_float(B, GIR_F32, -1)));
    CHECK(inv->kind == TIR_BINARY && inv->u.bin.op == TE_DIV && inv->u.bin.b == x);
    tir_expr *cube = tir_simplify_expr(B, &f.ctx, tir_bin(B, TE_POW, x, tir_float(B, GIR_F32, 3)));
    CHECK(cube->kind == TIR_BINARY && cube->u.bin.op == TE_POW); /* not exact: the graph simplifier's rule */
  }
  EXPECT_KEPT(tir_bin(B, TE_ADD, tir_float(B, GIR_F16, 0.1), tir_float(B, GIR_F16, 0.2)));
  EXPECT_KEPT(tir_bin(B, TE_FLOORMOD, tir_float(B, GIR_F32, 5.5), tir_float(B, GIR_F32, 2)));
  EXPECT_KEPT(tir_cast(B, GIR_F32, I((1LL << 60) + 1)));
  EXPECT_KEPT(tir_cast(B, GIR_F16, tir_float(B, GIR_F64, 0.1)));
  /* vectors: broadcast constants fold lane-wise */
  tir_expr *v = tir_simplify_expr(B, &f.ctx, ADD(tir_broadcast(B, I(2), 4), tir_broadcast(B, I(3), 4)));
  CHECK_STR(str(&f, v), "x4(5)");
  fx_done(&f);
}

static void test_identities(void) {
  fx f;
  fx_init(&f);
  tir_var *x = var(&f, "x", -100, 100), *y = var(&f, "y", -100, 100);
  tir_buffer *A = tir_buffer_new(B, "A", GIR_F32, 16, TIR_GLOBAL, 0);
  tir_expr *fx_ = tir_load(B, A, V(x));
  EXPECT(ADD(V(x), I(0)), "x_0");
  EXPECT(ADD(I(0), V(x)), "x_0");
  EXPECT(MUL(V(x), I(1)), "x_0");
  EXPECT(MUL(V(x), I(0)), "0");
  EXPECT(SUB(V(x), V(x)), "0");
  EXPECT(SUB(ADD(V(x), V(y)), V(y)), "x_0");
  EXPECT(tir_un(B, TE_NEG, tir_un(B, TE_NEG, V(x))), "x_0");
  EXPECT(tir_un(B, TE_BITNOT, tir_un(B, TE_BITNOT, V(x))), "x_0");
  EXPECT(tir_select(B, tir_int(B, GIR_BOOL, 1), V(x), V(y)), "x_0");
  EXPECT(tir_if_then_else(B, tir_int(B, GIR_BOOL, 0), V(x), V(y)), "y_1");
  EXPECT(tir_select(B, BIN(TE_LT, V(x), V(y)), V(x), V(x)), "x_0");
  EXPECT(BIN(TE_DIV, V(x), I(1)), "x_0");
  EXPECT(BIN(TE_FLOORMOD, V(x), I(1)), "0");
  EXPECT(BIN(TE_DIV, V(x), I(0)), "0");
  EXPECT(BIN(TE_DIV, V(x), I(-1)), "neg(x_0)");
  EXPECT(BIN(TE_AND, V(x), I(0)), "0");
  EXPECT(BIN(TE_OR, V(x), I(0)), "x_0");
  EXPECT(BIN(TE_XOR, V(x), V(x)), "0");
  EXPECT(BIN(TE_SHL, V(x), I(0)), "x_0");
  EXPECT(tir_un(B, TE_NOT, BIN(TE_LT, V(x), V(y))), "le(y_1, x_0)");
  EXPECT(tir_cast(B, GIR_I32, tir_cast(B, GIR_I64, tir_cast(B, GIR_I32, V(x)))), "int32(x_0)");
  EXPECT(tir_un(B, TE_FLOOR, V(x)), "x_0"); /* identity on integers */
  /* floats: only exact identities */
  tir_expr *one = tir_float(B, GIR_F32, 1), *zero = tir_float(B, GIR_F32, 0), *nzero = tir_float(B, GIR_F32, -0.0);
  EXPECT(tir_bin(B, TE_MUL, fx_, one), "A[x_0]");
  EXPECT(tir_bin(B, TE_DIV, fx_, one), "A[x_0]");
  EXPECT(tir_bin(B, TE_ADD, fx_, nzero), "A[x_0]");
  EXPECT(tir_bin(B, TE_SUB, fx_, zero), "A[x_0]");
  EXPECT(tir_bin(B, TE_ADD, fx_, zero), "add(A[x_0], 0f)");       /* -0 + 0 = +0 */
  EXPECT(tir_bin(B, TE_MUL, fx_, zero), "mul(A[x_0], 0f)");       /* NaN * 0, -1 * 0 */
  EXPECT(tir_bin(B, TE_SUB, fx_, fx_), "sub(A[x_0], A[x_0])");    /* NaN - NaN, inf - inf */
  EXPECT(tir_bin(B, TE_EQ, fx_, fx_), "eq(A[x_0], A[x_0])");      /* NaN != NaN */
  EXPECT(tir_un(B, TE_NOT, tir_bin(B, TE_LT, fx_, one)), "not(lt(A[x_0], 1f))");
  EXPECT(tir_un(B, TE_NEG, tir_un(B, TE_NEG, fx_)), "A[x_0]");
  EXPECT(tir_bin(B, TE_MAX, fx_, fx_), "A[x_0]");
  fx_done(&f);
}

static void test_linear(void) {
  fx f;
  fx_init(&f);
  tir_var *x = var(&f, "x", 0, 100), *y = var(&f, "y", 0, 100);
  EXPECT(ADD(ADD(MUL(V(x), I(4)), MUL(V(y), I(2))), MUL(V(x), I(8))), "add(mul(x_0, 12), mul(y_1, 2))");
  EXPECT(ADD(ADD(V(y), I(3)), ADD(V(x), I(-3))), "add(x_0, y_1)");
  EXPECT(SUB(MUL(ADD(V(x), I(1)), I(4)), I(4)), "mul(x_0, 4)");
  EXPECT(SUB(I(5), ADD(V(x), I(5))), "neg(x_0)");
  EXPECT(MUL(V(y), V(x)), "mul(x_0, y_1)"); /* commutative operands ordered */
  EXPECT(ADD(MUL(V(y), V(x)), MUL(V(x), V(y))), "mul(mul(x_0, y_1), 2)");
  /* int32 coefficients wrap like the dtype */
  tir_var *w = tir_var_new(B, "w", GIR_I32);
  tir_expr *W = tir_var_ref(B, w);
  EXPECT(tir_bin(B, TE_MUL, tir_bin(B, TE_MUL, W, tir_int(B, GIR_I32, 65536)), tir_int(B, GIR_I32, 65536)), "0");
  fx_done(&f);
}

static void test_divmod(void) {
  fx f;
  fx_init(&f);
  tir_var *x = var(&f, "x", 0, 100), *y = var(&f, "y", 0, 3);
  tir_expr *n = ADD(MUL(V(x), I(4)), V(y));
  EXPECT(BIN(TE_DIV, n, I(4)), "x_0");
  EXPECT(BIN(TE_MOD, n, I(4)), "y_1");
  EXPECT(BIN(TE_FLOORDIV, n, I(4)), "x_0");
  EXPECT(BIN(TE_FLOORMOD, n, I(4)), "y_1");
  EXPECT(BIN(TE_DIV, ADD(n, I(8)), I(4)), "add(x_0, 2)");
  EXPECT(BIN(TE_FLOORMOD, ADD(n, I(9)), I(4)), "floormod(add(y_1, 1), 4)");
  EXPECT(BIN(TE_FLOORDIV, ADD(n, I(1)), I(4)), "add(x_0, floordiv(add(y_1, 1), 4))"); /* y + 1 reaches 4 */
  fx_done(&f);
}

static void test_divmod2(void) {
  fx f;
  fx_init(&f);
  tir_var *x = var(&f, "x", 0, 100), *y = var(&f, "y", 0, 3), *z = var(&f, "z", -50, 50), *u = var(&f, "u", 0, 1000);
  /* floor rules hold whatever the sign of the divisible part */
  EXPECT(BIN(TE_FLOORDIV, ADD(MUL(V(z), I(4)), V(y)), I(4)), "z_2");
  EXPECT(BIN(TE_FLOORMOD, ADD(MUL(V(z), I(4)), V(y)), I(4)), "y_1");
  /* truncating ones need a non-negative dividend: z*4 + y can be negative */
  EXPECT(BIN(TE_DIV, ADD(MUL(V(z), I(4)), V(y)), I(4)), "div(add(y_1, mul(z_2, 4)), 4)");
  EXPECT(BIN(TE_MOD, ADD(MUL(V(z), I(4)), V(y)), I(4)), "mod(add(y_1, mul(z_2, 4)), 4)");
  /* nested */
  EXPECT(BIN(TE_FLOORMOD, BIN(TE_FLOORMOD, V(u), I(8)), I(4)), "floormod(u_3, 4)");
  EXPECT(BIN(TE_MOD, BIN(TE_MOD, V(z), I(8)), I(4)), "mod(z_2, 4)");
  EXPECT(BIN(TE_DIV, BIN(TE_DIV, V(u), I(4)), I(2)), "div(u_3, 8)");
  EXPECT(BIN(TE_FLOORDIV, BIN(TE_FLOORDIV, V(z), I(4)), I(2)), "floordiv(z_2, 8)");
  EXPECT(BIN(TE_FLOORMOD, BIN(TE_FLOORMOD, V(u), I(4)), I(8)), "floormod(u_3, 4)"); /* already below 8 */
  EXPECT(BIN(TE_MOD, BIN(TE_MOD, V(z), I(3)), I(8)), "mod(z_2, 3)");
  /* (x/d)*d + x%d = x */
  EXPECT(ADD(MUL(BIN(TE_FLOORDIV, V(z), I(8)), I(8)), BIN(TE_FLOORMOD, V(z), I(8))), "z_2");
  EXPECT(ADD(MUL(BIN(TE_DIV, V(z), I(8)), I(8)), BIN(TE_MOD, V(z), I(8))), "z_2");
  /* a divisible part leaves the division */
  EXPECT(BIN(TE_FLOORDIV, ADD(MUL(V(x), I(8)), V(u)), I(4)), "add(mul(x_0, 2), floordiv(u_3, 4))");
  EXPECT(BIN(TE_FLOORMOD, ADD(MUL(V(x), I(8)), V(u)), I(4)), "floormod(u_3, 4)");
  EXPECT(BIN(TE_FLOORMOD, MUL(V(u), I(6)), I(4)), "mul(floormod(u_3, 2), 2)"); /* 6u ≡ 2u, = 2·(u mod 2) */
  /* ranges decide: y < 4 */
  EXPECT(BIN(TE_FLOORDIV, V(y), I(4)), "0");
  EXPECT(BIN(TE_DIV, V(y), I(4)), "0");
  EXPECT(BIN(TE_MOD, V(y), I(4)), "y_1");
  EXPECT(BIN(TE_FLOORDIV, ADD(V(y), I(4)), I(4)), "1");
  /* vectors: all lanes in one block */
  tir_expr *r = tir_ramp(B, MUL(V(x), I(16)), I(1), 16), *d16 = tir_broadcast(B, I(16), 16);
  EXPECT(BIN(TE_FLOORDIV, r, d16), "x16(x_0)");
  EXPECT(BIN(TE_FLOORMOD, r, d16), "ramp(0, 1, 16)");
  EXPECT(BIN(TE_DIV, tir_ramp(B, ADD(MUL(V(x), I(16)), I(4)), I(2), 4), tir_broadcast(B, I(16), 4)), "x4(x_0)");
  EXPECT(BIN(TE_FLOORDIV, tir_ramp(B, MUL(V(x), I(16)), I(1), 32), tir_broadcast(B, I(16), 32)),
         "floordiv(ramp(mul(x_0, 16), 1, 32), x32(16))");
  /* a flattened index over a coarser block: i·128 + o·16 + k with o·16 + k < 128 */
  tir_var *i = var(&f, "i", 0, 127), *o = var(&f, "o", 0, 7), *k = var(&f, "k", 0, 15), *o9 = var(&f, "p", 0, 8);
  tir_expr *flat = ADD(ADD(MUL(V(i), I(128)), MUL(V(o), I(16))), V(k));
  EXPECT(BIN(TE_FLOORDIV, flat, I(256)), "floordiv(i_4, 2)");
  EXPECT(BIN(TE_DIV, flat, I(512)), "div(i_4, 4)");
  EXPECT(BIN(TE_FLOORMOD, flat, I(256)), "add(add(mul(o_5, 16), k_6), mul(floormod(i_4, 2), 128))");
  EXPECT(BIN(TE_MOD, flat, I(256)), "add(add(mul(o_5, 16), k_6), mul(mod(i_4, 2), 128))");
  /* the rest may reach 128: kept */
  EXPECT_KEPT(BIN(TE_FLOORDIV, ADD(ADD(MUL(V(i), I(128)), MUL(V(o9), I(16))), V(k)), I(256)));
  fx_done(&f);
}

static void test_compare(void) {
  fx f;
  fx_init(&f);
  tir_var *i = var(&f, "i", 0, 9), *j = var(&f, "j", 0, 3), *n = var(&f, "n", 0, 1000);
  EXPECT(BIN(TE_LT, V(i), I(10)), "1");
  EXPECT(BIN(TE_GE, V(i), I(0)), "1");
  EXPECT(BIN(TE_LT, V(i), I(0)), "0");
  EXPECT(BIN(TE_LT, ADD(MUL(V(i), I(4)), V(j)), I(40)), "1");
  EXPECT(BIN(TE_LT, ADD(V(i), I(1)), ADD(V(i), I(5))), "1");
  EXPECT(BIN(TE_EQ, V(n), V(n)), "1");
  EXPECT(BIN(TE_LT, V(i), I(9)), "lt(i_0, 9)");
  EXPECT(BIN(TE_LT, ADD(V(i), I(1)), V(n)), "lt(i_0, sub(n_2, 1))");
  EXPECT(BIN(TE_GT, V(n), ADD(V(i), I(3))), "lt(i_0, sub(n_2, 3))"); /* n > i + 3 */
  EXPECT(BIN(TE_LE, I(0), SUB(ADD(V(n), V(j)), I(1))), "le(1, add(j_1, n_2))");
  EXPECT(tir_bin(B, TE_AND, BIN(TE_GE, V(j), I(0)), BIN(TE_LT, V(n), I(500))), "lt(n_2, 500)");
  EXPECT(tir_bin(B, TE_OR, BIN(TE_LT, V(j), I(4)), BIN(TE_LT, V(n), I(500))), "1");
  EXPECT(BIN(TE_MIN, V(i), ADD(V(i), I(1))), "i_0");
  EXPECT(BIN(TE_MAX, V(j), I(0)), "j_1");
  EXPECT(BIN(TE_MIN, V(j), I(9)), "j_1");
  EXPECT(BIN(TE_MIN, V(n), I(9)), "min(n_2, 9)");
  EXPECT(tir_select(B, BIN(TE_LT, V(i), I(10)), V(i), V(n)), "i_0");
  EXPECT(tir_un(B, TE_ABS, V(j)), "j_1");
  /* vectors: every lane of ramp(i*4, 1, 4) is below 40 */
  EXPECT(BIN(TE_LT, tir_ramp(B, MUL(V(i), I(4)), I(1), 4), tir_broadcast(B, I(40), 4)), "x4(1)");
  /* if_then_else branches know their condition; with nothing left that could fault
   * (no load, no division by a variable) the choice becomes an eager select */
  EXPECT(tir_if_then_else(B, BIN(TE_LT, V(n), I(8)), BIN(TE_FLOORMOD, V(n), I(8)), I(0)),
         "select(lt(n_2, 8), n_2, 0)");
  /* a condition that leaves a term one value pins it in its branch (an interleave:
   * mod(i, 2) < 1 reads A at i/2; the other branch, mod(i, 2) = 1, B at i/2); the
   * loads are inside their buffers for every i, so the choice is eager too */
  tir_buffer *A16 = tir_buffer_new(B, "A", GIR_F32, 5, TIR_GLOBAL, 0), *B16 = tir_buffer_new(B, "B", GIR_F32, 5, TIR_GLOBAL, 1);
  tir_expr *m2 = BIN(TE_FLOORMOD, V(i), I(2)), *h2 = BIN(TE_FLOORDIV, V(i), I(2));
  EXPECT(tir_if_then_else(B, BIN(TE_LT, m2, I(1)), tir_load(B, A16, ADD(h2, m2)),
                          tir_load(B, B16, SUB(ADD(h2, m2), I(1)))),
         "select(lt(floormod(i_0, 2), 1), A[floordiv(i_0, 2)], B[floordiv(i_0, 2)])");
  /* a load that may leave its buffer where the condition fails stays lazy */
  tir_buffer *A8 = tir_buffer_new(B, "A8", GIR_F32, 8, TIR_GLOBAL, 2);
  EXPECT(tir_if_then_else(B, BIN(TE_LT, V(n), I(8)), tir_load(B, A8, V(n)), tir_float(B, GIR_F32, 0.0)),
         "if_then_else(lt(n_2, 8), A8[n_2], 0f)");
  /* ...but select's operands are evaluated regardless, so they do not */
  EXPECT(tir_select(B, BIN(TE_LT, V(n), I(8)), BIN(TE_FLOORMOD, V(n), I(8)), I(0)),
         "select(lt(n_2, 8), floormod(n_2, 8), 0)");
  /* unsigned 64-bit order is never reasoned about with signed ranges */
  tir_var *q = tir_var_new(B, "q", GIR_U64);
  EXPECT(tir_bin(B, TE_LT, tir_var_ref(B, q), tir_int(B, GIR_U64, 0)), "lt(q_3, 0)");
  fx_done(&f);
}

static void test_stmts(void) {
  fx f;
  fx_init(&f);
  tir_buffer *A = tir_buffer_new(B, "A", GIR_F32, 64, TIR_GLOBAL, 0);
  tir_var *i = tir_var_new(B, "i", GIR_I64), *j = tir_var_new(B, "j", GIR_I64), *t = tir_var_new(B, "t", GIR_I64);
  tir_expr *one = tir_float(B, GIR_F32, 1);
  /* for i in [0,8): if i < 8: A[i] = 1 → the if vanishes */
  tir_stmt *s = tir_for(B, i, I(0), I(8), TIR_SERIAL, tir_if(B, BIN(TE_LT, V(i), I(8)), tir_store(B, A, V(i), one), NULL));
  CHECK_STR(sstr(&f, tir_simplify(B, s)), "for i_0 in [0, +8):\n  A[i_0] = 1f\n");
  /* if i >= 8 inside the loop: never true, the loop goes */
  s = tir_for(B, i, I(0), I(8), TIR_SERIAL, tir_if(B, BIN(TE_GE, V(i), I(8)), tir_store(B, A, V(i), one), NULL));
  CHECK(tir_stmt_is_nop(tir_simplify(B, s)));
  /* extent 1: the variable becomes min; extent 0: nothing */
  s = tir_for(B, i, I(3), I(1), TIR_SERIAL, tir_store(B, A, MUL(V(i), I(2)), one));
  CHECK_STR(sstr(&f, tir_simplify(B, s)), "A[6] = 1f\n");
  s = tir_for(B, i, I(3), SUB(I(2), I(2)), TIR_SERIAL, tir_store(B, A, V(i), one));
  CHECK(tir_stmt_is_nop(tir_simplify(B, s)));
  /* lets of constants and plain variables are inlined; others stay, ranged */
  s = tir_for(B, i, I(0), I(8), TIR_SERIAL,
              tir_let(B, t, V(i), tir_store(B, A, ADD(V(t), I(1)), one)));
  CHECK_STR(sstr(&f, tir_simplify(B, s)), "for i_0 in [0, +8):\n  A[add(i_0, 1)] = 1f\n");
  s = tir_for(B, i, I(0), I(8), TIR_SERIAL,
              tir_let(B, t, MUL(V(i), I(4)), tir_if(B, BIN(TE_LT, V(t), I(29)), tir_store(B, A, V(t), one), NULL)));
  CHECK_STR(sstr(&f, tir_simplify(B, s)), "for i_0 in [0, +8):\n  let t_2 = mul(i_0, 4)\n  A[t_2] = 1f\n");
  /* the branch of an if knows its condition; the else branch its negation */
  tir_stmt *th = tir_store(B, A, BIN(TE_FLOORMOD, V(j), I(16)), one);
  tir_stmt *el = tir_if(B, BIN(TE_LT, V(j), I(10)), tir_store(B, A, I(0), one), tir_store(B, A, I(1), one));
  s = tir_for(B, j, I(0), I(64), TIR_SERIAL, tir_if(B, BIN(TE_LT, V(j), I(16)), th, el));
  CHECK_STR(sstr(&f, tir_simplify(B, s)), "for j_1 in [0, +64):\n  if lt(j_1, 16):\n    A[j_1] = 1f\n  else:\n    A[1] = 1f\n");
  /* an empty then-branch turns into the negated condition */
  tir_var *k = tir_var_new(B, "k", GIR_I64);
  s = tir_for(B, k, I(0), I(64), TIR_SERIAL,
              tir_if(B, BIN(TE_LT, V(k), I(16)), tir_for(B, j, I(0), I(0), TIR_SERIAL, th), tir_store(B, A, V(k), one)));
  CHECK_STR(sstr(&f, tir_simplify(B, s)), "for k_3 in [0, +64):\n  if le(16, k_3):\n    A[k_3] = 1f\n");
  /* a symbolic loop min moves into the body, so that j - i*8 ∈ [0, 7] is known */
  s = tir_for(B, i, I(0), I(8), TIR_SERIAL,
              tir_for(B, j, MUL(V(i), I(8)), I(8), TIR_SERIAL,
                      tir_if(B, BIN(TE_LT, SUB(V(j), MUL(V(i), I(8))), I(8)), tir_store(B, A, V(j), one), NULL)));
  CHECK_STR(sstr(&f, tir_simplify(B, s)),
            "for i_0 in [0, +8):\n  for j_1 in [0, +8):\n    A[add(mul(i_0, 8), j_1)] = 1f\n");
  /* substitution */
  tir_stmt *sub = tir_substitute(B, tir_store(B, A, ADD(V(i), V(j)), one), i, I(5));
  CHECK_STR(sstr(&f, sub), "A[add(5, j_1)] = 1f\n");
  CHECK(tir_stmt_uses_var(sub, j) && !tir_stmt_uses_var(sub, i));
  fx_done(&f);
}

/* --- property tests --- */

static uint64_t rng_state;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int64_t rnd_in(int64_t lo, int64_t hi) { /* inclusive, hi - lo small enough */
  uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
  return span == 0 ? (int64_t)rnd() : (int64_t)((uint64_t)lo + rnd() % span);
}
static int chance(int pct) { return (int)(rnd() % 100) < pct; }

enum { NVARS = 6, BUFSZ = 32 };

typedef struct gen {
  fx *f;
  tir_var *vars[NVARS];
  arith_range ranges[NVARS];
  tir_buffer *fbuf, *ibuf, *bbuf;
} gen;

static const int64_t interesting[] = {0, 1, -1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 100, -2, -3, -4, -8, -16, -100,
                                      INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 255, 256, 65536};

static tir_expr *gen_int(gen *g, gir_dtype t, int depth);
static tir_expr *gen_float(gen *g, int depth);

static tir_expr *int_const(gen *g, gir_dtype t) {
  int64_t v = chance(70) ? interesting[rnd() % (sizeof interesting / sizeof *interesting)] : rnd_in(-1000, 1000);
  return tir_int(&g->f->b, t, tir_wrap_int(t, v));
}

static tir_expr *int_leaf(gen *g, gir_dtype t) {
  tir_builder *b = &g->f->b;
  int k = (int)(rnd() % 10);
  if (k < 3) return int_const(g, t);
  if (k < 9) { /* a variable (int64 or int32 ones), cast if needed */
    tir_var *v = g->vars[rnd() % NVARS];
    return tir_cast(b, t, tir_var_ref(b, v));
  }
  tir_expr *ix = tir_bin(b, TE_FLOORMOD, gen_int(g, GIR_I64, 1), tir_i64(b, BUFSZ)); /* always in bounds */
  return tir_cast(b, t, tir_load(b, g->ibuf, ix));
}

static tir_expr *gen_bool(gen *g, int depth) {
  tir_builder *b = &g->f->b;
  int k = (int)(rnd() % 10);
  if (depth <= 0 || k == 0) {
    if (chance(50)) return tir_int(b, GIR_BOOL, chance(50));
    tir_expr *ix = tir_bin(b, TE_FLOORMOD, tir_var_ref(b, g->vars[rnd() % 2]), tir_i64(b, BUFSZ));
    return tir_load(b, g->bbuf, ix);
  }
  if (k <= 5) {
    gir_dtype t = chance(60) ? GIR_I64 : chance(50) ? GIR_I32 : chance(70) ? GIR_U8 : GIR_U64;
    return tir_bin(b, (te_binop)(TE_EQ + rnd() % 6), gen_int(g, t, depth - 1), gen_int(g, t, depth - 1));
  }
  if (k == 6) return tir_bin(b, (te_binop)(TE_EQ + rnd() % 6), gen_float(g, depth - 1), gen_float(g, depth - 1));
  if (k == 7) return tir_un(b, TE_NOT, gen_bool(g, depth - 1));
  return tir_bin(b, (te_binop)(TE_AND + rnd() % 3), gen_bool(g, depth - 1), gen_bool(g, depth - 1));
}

static tir_expr *gen_int(gen *g, gir_dtype t, int depth) {
  tir_builder *b = &g->f->b;
  if (depth <= 0 || chance(15)) return int_leaf(g, t);
  int k = (int)(rnd() % 100);
  if (k < 30) { /* index-like: a*c + b */
    tir_expr *x = tir_bin(b, TE_MUL, gen_int(g, t, depth - 1), tir_int(b, t, tir_wrap_int(t, rnd_in(-4, 16))));
    return tir_bin(b, chance(70) ? TE_ADD : TE_SUB, x, gen_int(g, t, depth - 1));
  }
  if (k < 36) { /* (e div d)*c1 + (e mod d)*c2, which folds back to e*c2 when c1 = c2*d */
    int fl = chance(50);
    int64_t d = rnd_in(1, 9), c2 = rnd_in(-2, 3), c1 = chance(70) ? c2 * d : rnd_in(-20, 20);
    tir_expr *x = gen_int(g, t, depth - 1);
    tir_expr *q = tir_bin(b, fl ? TE_FLOORDIV : TE_DIV, x, tir_int(b, t, d));
    tir_expr *r = tir_bin(b, fl ? TE_FLOORMOD : TE_MOD, chance(90) ? x : gen_int(g, t, depth - 1), tir_int(b, t, d));
    return tir_bin(b, TE_ADD, tir_bin(b, TE_MUL, q, tir_int(b, t, tir_wrap_int(t, c1))),
                   tir_bin(b, TE_MUL, r, tir_int(b, t, tir_wrap_int(t, c2))));
  }
  if (k < 50) { /* div/mod by a small constant (sometimes 0 or negative) */
    te_binop ops[4] = {TE_DIV, TE_FLOORDIV, TE_MOD, TE_FLOORMOD};
    int64_t d = chance(85) ? rnd_in(1, 17) : rnd_in(-5, 0);
    return tir_bin(b, ops[rnd() % 4], gen_int(g, t, depth - 1), tir_int(b, t, tir_wrap_int(t, d)));
  }
  if (k < 68) {
    te_binop ops[] = {TE_ADD, TE_SUB, TE_MUL, TE_DIV, TE_FLOORDIV, TE_MOD, TE_FLOORMOD, TE_MIN,
                      TE_MAX, TE_AND, TE_OR,  TE_XOR, TE_SHL, TE_SHR, TE_POW};
    te_binop op = ops[rnd() % (sizeof ops / sizeof *ops)];
    return tir_bin(b, op, gen_int(g, t, depth - 1), gen_int(g, t, depth - 1));
  }
  if (k < 76) {
    te_unop ops[] = {TE_NEG, TE_ABS, TE_BITNOT, TE_FLOOR};
    return tir_un(b, ops[rnd() % 4], gen_int(g, t, depth - 1));
  }
  if (k < 84) {
    tir_expr *c = gen_bool(g, depth - 1), *x = gen_int(g, t, depth - 1), *y = gen_int(g, t, depth - 1);
    return chance(50) ? tir_select(b, c, x, y) : tir_if_then_else(b, c, x, y);
  }
  if (k < 90) { /* a guarded load, as padding writes it */
    tir_expr *ix = gen_int(g, GIR_I64, depth - 1);
    tir_expr *ok = tir_bin(b, TE_AND, tir_bin(b, TE_GE, ix, tir_i64(b, 0)), tir_bin(b, TE_LT, ix, tir_i64(b, BUFSZ)));
    return tir_if_then_else(b, ok, tir_cast(b, t, tir_load(b, g->ibuf, ix)), int_const(g, t));
  }
  if (k < 95) {
    gir_dtype from = chance(50) ? GIR_I64 : chance(50) ? GIR_I32 : chance(50) ? GIR_U8 : GIR_U64;
    return tir_cast(b, t, gen_int(g, from, depth - 1));
  }
  return tir_cast(b, t, gen_float(g, depth - 1));
}

static const double fconsts[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 0.1, 1e30, -1e-30, 16777217.0};

static tir_expr *gen_float(gen *g, int depth) {
  tir_builder *b = &g->f->b;
  if (depth <= 0 || chance(20)) {
    int k = (int)(rnd() % 10);
    if (k < 4) {
      double v = chance(90) ? fconsts[rnd() % (sizeof fconsts / sizeof *fconsts)] : chance(50) ? NAN : INFINITY;
      return tir_float(b, GIR_F32, v);
    }
    if (k < 8) return tir_load(b, g->fbuf, tir_bin(b, TE_FLOORMOD, gen_int(g, GIR_I64, 1), tir_i64(b, BUFSZ)));
    return tir_cast(b, GIR_F32, gen_int(g, chance(50) ? GIR_I64 : GIR_I32, 1));
  }
  int k = (int)(rnd() % 100);
  if (k < 50) {
    te_binop ops[] = {TE_ADD, TE_SUB, TE_MUL, TE_DIV, TE_MIN, TE_MAX, TE_FLOORDIV, TE_MOD, TE_FLOORMOD, TE_POW};
    return tir_bin(b, ops[rnd() % (chance(80) ? 6 : 10)], gen_float(g, depth - 1), gen_float(g, depth - 1));
  }
  if (k < 70) {
    te_unop ops[] = {TE_NEG, TE_ABS, TE_FLOOR, TE_CEIL, TE_ROUND, TE_TRUNC, TE_SQRT, TE_EXP, TE_TANH};
    return tir_un(b, ops[rnd() % 9], gen_float(g, depth - 1));
  }
  if (k < 85) {
    tir_expr *c = gen_bool(g, depth - 1), *x = gen_float(g, depth - 1), *y = gen_float(g, depth - 1);
    return chance(50) ? tir_select(b, c, x, y) : tir_if_then_else(b, c, x, y);
  }
  if (k < 92) return tir_cast(b, GIR_F32, tir_cast(b, GIR_F64, gen_float(g, depth - 1)));
  return tir_cast(b, GIR_F32, gen_int(g, GIR_I64, depth - 1));
}

/* A random range for a variable: small, negative, or against a dtype limit. */
static arith_range rand_range(gir_dtype t) {
  arith_range f = arith_full(t);
  int k = (int)(rnd() % 10);
  int64_t lo;
  if (k < 5) lo = 0;
  else if (k < 8) lo = rnd_in(-40, 40);
  else if (k == 8) lo = f.max - rnd_in(0, 20);
  else lo = f.min;
  int64_t ext = rnd_in(1, chance(50) ? 8 : 300);
  int64_t hi = lo > f.max - ext ? f.max : lo + ext - 1;
  return (arith_range){lo, hi};
}

static int same_value(gir_dtype t, tir_value a, tir_value b) {
  if (!gir_dtype_is_float(t)) return a.i == b.i;
  if (isnan(a.f) && isnan(b.f)) return 1;
  return !memcmp(&a.f, &b.f, sizeof a.f);
}

static void print_point(gen *g, tir_env *env) {
  printf("     at");
  for (int i = 0; i < NVARS; i++)
    printf(" %s_%d=%lld", g->vars[i]->name, g->vars[i]->id, (long long)env->vars[g->vars[i]->id].i);
  printf("\n");
}

static int64_t pick(arith_range r) {
  int k = (int)(rnd() % 8);
  if (k == 0) return r.min;
  if (k == 1) return r.max;
  return rnd_in(r.min, r.max);
}

static void property_exprs(int n_trees, int points) {
  int bad = 0, checks = 0, changed = 0, shrunk = 0;
  for (int tree = 0; tree < n_trees && bad < 5; tree++) {
    fx f;
    fx_init(&f);
    gen g = {.f = &f};
    for (int i = 0; i < NVARS; i++) {
      gir_dtype t = i < 4 ? GIR_I64 : GIR_I32;
      g.vars[i] = tir_var_new(B, i < 4 ? "v" : "w", t);
      g.ranges[i] = rand_range(t);
      arith_ctx_push(&f.ctx, g.vars[i], g.ranges[i]);
    }
    g.fbuf = tir_buffer_new(B, "F", GIR_F32, BUFSZ, TIR_GLOBAL, 0);
    g.ibuf = tir_buffer_new(B, "I", GIR_I32, BUFSZ, TIR_GLOBAL, 1);
    g.bbuf = tir_buffer_new(B, "Q", GIR_BOOL, BUFSZ, TIR_GLOBAL, 2);
    int kind = tree % 6;
    gir_dtype t = kind <= 1 ? GIR_I64 : kind == 2 ? GIR_I32 : kind == 3 ? GIR_F32 : kind == 4 ? GIR_U8 : GIR_U64;
    int depth = 2 + (int)(rnd() % 4);
    tir_expr *e = t == GIR_F32 ? gen_float(&g, depth) : gen_int(&g, t, depth);
    tir_expr *s = tir_simplify_expr(B, &f.ctx, e);
    tir_expr *again = tir_simplify_expr(B, &f.ctx, s);
    arith_linear lf = arith_linear_of(&f.ctx, e);
    tir_expr *lin = arith_linear_expr(B, &lf);
    arith_range be = arith_bounds(&f.ctx, e), bs = arith_bounds(&f.ctx, s);
    if (!arith_expr_equal(s, e)) changed++;
    if (strlen(str(&f, s)) < strlen(str(&f, e))) shrunk++;
    CHECKF(arith_expr_equal(again, s), "simplify is not idempotent:\n     %s\n  -> %s\n  -> %s", str(&f, e), str(&f, s),
           str(&f, again));
    float fb[BUFSZ];
    int32_t ib[BUFSZ];
    uint8_t qb[BUFSZ];
    for (int k = 0; k < BUFSZ; k++) {
      fb[k] = chance(10) ? (chance(50) ? NAN : -0.0f) : (float)rnd_in(-100, 100) / 8.0f;
      ib[k] = chance(20) ? (int32_t)interesting[rnd() % (sizeof interesting / sizeof *interesting)]
                         : (int32_t)rnd_in(-50, 50);
      qb[k] = chance(50);
    }
    gir_err err = {{0}};
    tir_env env;
    tir_env_init(&env, f.a, f.b.next_var, f.b.next_buffer, 0, &err);
    tir_env_bind(&env, g.fbuf, fb);
    tir_env_bind(&env, g.ibuf, ib);
    tir_env_bind(&env, g.bbuf, qb);
    for (int p = 0; p < points; p++) {
      for (int i = 0; i < NVARS; i++) tir_env_set_int(&env, g.vars[i], pick(g.ranges[i]));
      tir_value ve = tir_eval_expr(&env, e, 0);
      int failed_before = env.failed;
      env.failed = 0;
      tir_value vs = tir_eval_expr(&env, s, 0), vl = tir_eval_expr(&env, lin, 0);
      checks++;
      if (env.failed && !failed_before) { /* the simplified form faults where the original did not */
        CHECKF(0, "simplified expression fails: %s\n     %s\n  -> %s", err.msg, str(&f, e), str(&f, s));
        print_point(&g, &env);
        bad++;
        break;
      }
      env.failed = 0;
      if (failed_before) continue; /* (cannot happen: generated loads are in bounds or guarded) */
      if (!same_value(t, ve, vs) || !same_value(t, ve, vl)) {
        CHECKF(0, "values differ (%s):\n     %s = %lld / %.9g\n  -> %s = %lld / %.9g\n  linear %s = %lld",
               gir_dtype_name(t), str(&f, e), (long long)ve.i, ve.f, str(&f, s), (long long)vs.i, vs.f, str(&f, lin),
               (long long)vl.i);
        print_point(&g, &env);
        bad++;
        break;
      }
      if (!gir_dtype_is_float(t) && (ve.i < be.min || ve.i > be.max || ve.i < bs.min || ve.i > bs.max)) {
        CHECKF(0, "bounds are wrong: %s = %lld not in [%lld, %lld] / [%lld, %lld]", str(&f, e), (long long)ve.i,
               (long long)be.min, (long long)be.max, (long long)bs.min, (long long)bs.max);
        print_point(&g, &env);
        bad++;
        break;
      }
    }
    fx_done(&f);
  }
  CHECKF(bad == 0, "%d random expressions miscompiled", bad);
  printf("property: %d expressions, %d evaluations, %d simplified (%d shorter)\n", n_trees, checks, changed, shrunk);
}

/* Random vector index expressions: ramps and broadcasts with div/mod. */
static void property_vectors(int n_trees) {
  int bad = 0;
  for (int tree = 0; tree < n_trees && bad < 5; tree++) {
    fx f;
    fx_init(&f);
    tir_var *x = tir_var_new(B, "x", GIR_I64), *y = tir_var_new(B, "y", GIR_I64);
    arith_range rx = {rnd_in(-5, 5), 0}, ry = {0, rnd_in(0, 20)};
    rx.max = rx.min + rnd_in(0, 30);
    arith_ctx_push(&f.ctx, x, rx);
    arith_ctx_push(&f.ctx, y, ry);
    int32_t lanes = chance(50) ? 4 : 8;
    int64_t c1 = rnd_in(1, 16), c2 = rnd_in(0, 3), d = rnd_in(1, 16);
    tir_expr *base = ADD(MUL(V(x), I(c1)), chance(50) ? V(y) : I(rnd_in(-3, 20)));
    tir_expr *r = tir_ramp(B, base, I(c2), lanes);
    if (chance(30)) r = ADD(r, tir_broadcast(B, MUL(V(y), I(2)), lanes));
    if (chance(30)) r = MUL(r, tir_broadcast(B, I(rnd_in(1, 3)), lanes));
    te_binop ops[4] = {TE_DIV, TE_FLOORDIV, TE_MOD, TE_FLOORMOD};
    tir_expr *e = BIN(ops[rnd() % 4], r, tir_broadcast(B, I(d), lanes));
    if (chance(30)) e = BIN(TE_LT, e, tir_broadcast(B, I(rnd_in(0, 40)), lanes));
    tir_expr *s = tir_simplify_expr(B, &f.ctx, e);
    gir_err err = {{0}};
    tir_env env;
    tir_env_init(&env, f.a, f.b.next_var, f.b.next_buffer, 0, &err);
    for (int p = 0; p < 20 && !bad; p++) {
      tir_env_set_int(&env, x, pick(rx));
      tir_env_set_int(&env, y, pick(ry));
      for (int32_t l = 0; l < lanes; l++) {
        tir_value a = tir_eval_expr(&env, e, l), b2 = tir_eval_expr(&env, s, l);
        if (a.i != b2.i) {
          CHECKF(0, "vector lane %d differs: %s = %lld -> %s = %lld (x=%lld y=%lld)", l, str(&f, e), (long long)a.i,
                 str(&f, s), (long long)b2.i, (long long)env.vars[x->id].i, (long long)env.vars[y->id].i);
          bad++;
          break;
        }
      }
    }
    fx_done(&f);
  }
  CHECKF(bad == 0, "%d random vector expressions miscompiled", bad);
}

int main(void) {
  const char *seed = getenv("KILN_TEST_SEED");
  rng_state = seed ? strtoull(seed, NULL, 0) : 12345;
  test_eval();
  test_arith();
  test_fold();
  test_identities();
  test_linear();
  test_divmod();
  test_divmod2();
  test_compare();
  test_stmts();
  property_exprs(1800, 40);
  property_vectors(400);
  return check_finish("test_simplify");
}
