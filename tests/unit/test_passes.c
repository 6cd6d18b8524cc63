/* test_passes.c — tests of the loop-IR passes: unrolling (tir/pass_unroll.c),
 * loop partitioning (tir/pass_partition.c), unswitching (tir/pass_unswitch.c),
 * vectorization of loops holding a dot4 (refused: they stay serial), the 32-bit
 * gather indices (tir/pass_narrow.c) and the statement simplifier
 * (tir/tir_simplify.c) on whole loop nests, dot4 included.
 *
 * Unit cases build the nests that schedules produce — a non-divisible split
 * with its guard, a padded 1-D and 2-D convolution reading through
 * if_then_else, an unrolled register tile — and check both the shape of the
 * result (no unrolled loop left, no boundary test left in the main loop...) and
 * that the interpreter computes the same buffers before and after. Property
 * tests generate hundreds of random nests (random extents, mins, loop kinds,
 * linear boundary conditions, guarded loads and stores, lets, float
 * accumulations whose order matters) and compare the output buffers of every
 * pass pipeline with the original's, bit for bit. Set KILN_TEST_SEED to vary
 * them. */
#include <stdlib.h>
#include "check.h"
/* by path: graphir/ has a passes.h of its own, earlier on the include path */
#include "tir_passes.h"
#include "tir_eval.h"

typedef struct fx {
  gir_arena *a;
  tir_builder b;
} fx;

static void fx_init(fx *f) {
  f->a = gir_arena_new();
  tir_builder_init(&f->b, f->a);
}

static void fx_done(fx *f) { gir_arena_free(f->a); }

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

#define B (&f.b)
#define I(v) tir_i64(B, v)
#define V(x) tir_var_ref(B, x)
#define ADD(x, y) tir_bin(B, TE_ADD, x, y)
#define SUB(x, y) tir_bin(B, TE_SUB, x, y)
#define MUL(x, y) tir_bin(B, TE_MUL, x, y)
#define BIN(op, x, y) tir_bin(B, op, x, y)
#define AND(x, y) tir_bin(B, TE_AND, x, y)
#define F32(v) tir_float(B, GIR_F32, v)

/* --- counting what is left --- */

typedef struct counts {
  int ifs, ites, loops, unrolled, stores, dot4s;
} counts;

static void count_e(const tir_expr *e, counts *c) {
  switch (e->kind) {
  case TIR_LOAD: count_e(e->u.load.index, c); break;
  case TIR_UNARY: count_e(e->u.un.a, c); break;
  case TIR_BINARY:
    count_e(e->u.bin.a, c);
    count_e(e->u.bin.b, c);
    break;
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    c->ites++;
    count_e(e->u.sel.c, c);
    count_e(e->u.sel.a, c);
    count_e(e->u.sel.b, c);
    break;
  case TIR_CAST: case TIR_BITCAST: count_e(e->u.cast.a, c); break;
  case TIR_RAMP:
    count_e(e->u.ramp.base, c);
    count_e(e->u.ramp.stride, c);
    break;
  case TIR_BROADCAST: count_e(e->u.bcast.value, c); break;
  case TIR_DOT4:
    c->dot4s++;
    count_e(e->u.dot4.acc, c);
    count_e(e->u.dot4.a, c);
    count_e(e->u.dot4.b, c);
    break;
  default: break;
  }
}

static void count_s(const tir_stmt *s, counts *c) {
  if (!s) return;
  switch (s->kind) {
  case TIR_FOR:
    c->loops++;
    if (s->u.loop.kind == TIR_UNROLLED) c->unrolled++;
    count_s(s->u.loop.body, c);
    break;
  case TIR_LET:
    count_e(s->u.let.value, c);
    count_s(s->u.let.body, c);
    break;
  case TIR_IF:
    c->ifs++;
    count_e(s->u.ifs.cond, c);
    count_s(s->u.ifs.then_s, c);
    count_s(s->u.ifs.else_s, c);
    break;
  case TIR_STORE:
    c->stores++;
    count_e(s->u.store.index, c);
    count_e(s->u.store.value, c);
    break;
  case TIR_ALLOCATE: count_s(s->u.alloc.body, c); break;
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++) count_s(s->u.seq.s[i], c);
    break;
  default: break;
  }
}

static counts count(const tir_stmt *s) {
  counts c = {0};
  count_s(s, &c);
  return c;
}

/* --- running and comparing --- */

static uint64_t rng_state;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static int chance(int pct) { return (int)(rnd() % 100) < pct; }

enum { MAXBUF = 4, MAXELEM = 512 };

typedef struct bufset {
  int n;
  tir_buffer *buf[MAXBUF];
} bufset;

/* Runs s on copies of `init` (one block of MAXELEM*8 bytes per buffer); 0 on
 * success. */
static int run(fx *f, const bufset *bs, const tir_stmt *s, unsigned char (*init)[MAXELEM * 8],
               unsigned char (*out)[MAXELEM * 8], gir_err *err) {
  tir_env env;
  if (tir_env_init(&env, f->a, f->b.next_var, f->b.next_buffer, 50000000, err) < 0) return -1;
  for (int i = 0; i < bs->n; i++) {
    memcpy(out[i], init[i], sizeof out[i]);
    tir_env_bind(&env, bs->buf[i], out[i]);
  }
  return tir_eval_stmt(&env, s);
}

static void random_fill(const bufset *bs, unsigned char (*init)[MAXELEM * 8]) {
  for (int i = 0; i < bs->n; i++)
    for (int64_t k = 0; k < bs->buf[i]->size; k++) {
      if (gir_dtype_is_float(bs->buf[i]->dtype))
        gir_store_f64(bs->buf[i]->dtype, init[i], k, (double)rnd_in(-1000, 1000) / 64.0);
      else gir_store_i64(bs->buf[i]->dtype, init[i], k, rnd_in(-1000, 1000));
    }
}

/* s and t compute the same buffers from the same random contents. */
static int same_(fx *f, const bufset *bs, const tir_stmt *s, const tir_stmt *t, const char *what, int line) {
  static unsigned char init[MAXBUF][MAXELEM * 8], o1[MAXBUF][MAXELEM * 8], o2[MAXBUF][MAXELEM * 8];
  random_fill(bs, init);
  gir_err e1 = {{0}}, e2 = {{0}};
  int r1 = run(f, bs, s, init, o1, &e1), r2 = run(f, bs, t, init, o2, &e2);
  if (!CHECKF(r1 == 0, "line %d (%s): the original fails: %s\n%s", line, what, e1.msg, sstr(f, s))) return 0;
  if (!CHECKF(r2 == 0, "line %d (%s): the result fails: %s\n--- original:\n%s--- result:\n%s", line, what, e2.msg,
              sstr(f, s), sstr(f, t)))
    return 0;
  for (int i = 0; i < bs->n; i++) {
    size_t bytes = (size_t)bs->buf[i]->size * gir_dtype_size(bs->buf[i]->dtype);
    if (memcmp(o1[i], o2[i], bytes)) {
      CHECKF(0, "line %d (%s): buffer %s differs\n--- original:\n%s--- result:\n%s", line, what, bs->buf[i]->name,
             sstr(f, s), sstr(f, t));
      return 0;
    }
  }
  return check_report_(1, __FILE__, line, what);
}
#define SAME(bs, s, t, what) same_(&f, bs, s, t, what, __LINE__)

/* --- unit cases --- */

static void test_unroll(void) {
  fx f;
  fx_init(&f);
  tir_buffer *A = tir_buffer_new(B, "A", GIR_F32, 16, TIR_GLOBAL, 0), *X = tir_buffer_new(B, "X", GIR_F32, 16, TIR_GLOBAL, 1);
  bufset bs = {2, {A, X}};
  tir_var *i = tir_var_new(B, "i", GIR_I64);
  tir_stmt *s = tir_for(B, i, I(0), I(4), TIR_UNROLLED, tir_store(B, A, MUL(V(i), I(2)), tir_load(B, X, ADD(V(i), I(1)))));
  tir_stmt *u = tir_unroll(B, s, 8);
  CHECK_STR(sstr(&f, u), "A[0] = X[1]\nA[2] = X[2]\nA[4] = X[3]\nA[6] = X[4]\n");
  SAME(&bs, s, u, "unroll 4");
  /* above the limit: a serial loop */
  u = tir_unroll(B, s, 3);
  CHECK_STR(sstr(&f, u), "for i_0 in [0, +4):\n  A[mul(i_0, 2)] = X[add(i_0, 1)]\n");
  /* an inner unrolled loop whose extent depends on the outer one: the tail of
   * a split of 10 by 4, both unrolled, becomes ten straight stores */
  tir_var *io = tir_var_new(B, "io", GIR_I64), *ii = tir_var_new(B, "ii", GIR_I64);
  tir_expr *idx = ADD(MUL(V(io), I(4)), V(ii));
  s = tir_for(B, io, I(0), I(3), TIR_UNROLLED,
              tir_for(B, ii, I(0), BIN(TE_MIN, I(4), SUB(I(10), MUL(V(io), I(4)))), TIR_UNROLLED,
                      tir_store(B, A, idx, tir_bin(B, TE_MUL, tir_load(B, X, idx), F32(2)))));
  u = tir_unroll(B, s, 8);
  counts c = count(u);
  CHECK_INT(c.loops, 0);
  CHECK_INT(c.stores, 10);
  CHECK_CONTAINS(sstr(&f, u), "A[9] = mul(X[9], 2f)");
  SAME(&bs, s, u, "nested unroll");
  /* a let in the body is copied with its variable */
  tir_var *t = tir_var_new(B, "t", GIR_I64);
  s = tir_for(B, i, I(1), I(3), TIR_UNROLLED,
              tir_let(B, t, MUL(V(i), V(i)), tir_store(B, A, V(t), tir_load(B, X, V(i)))));
  u = tir_unroll(B, s, 8);
  CHECK_STR(sstr(&f, u), "A[1] = X[1]\nA[4] = X[2]\nA[9] = X[3]\n");
  SAME(&bs, s, u, "unroll with let");
  fx_done(&f);
}

static void test_partition_split(void) {
  fx f;
  fx_init(&f);
  tir_buffer *A = tir_buffer_new(B, "A", GIR_F32, 16, TIR_GLOBAL, 0), *X = tir_buffer_new(B, "X", GIR_F32, 16, TIR_GLOBAL, 1);
  bufset bs = {2, {A, X}};
  /* for io in [0,3): for ii in [0,4): if io*4 + ii < 10: A[io*4+ii] = X[io*4+ii] + 1 */
  tir_var *io = tir_var_new(B, "io", GIR_I64), *ii = tir_var_new(B, "ii", GIR_I64);
  tir_expr *idx = ADD(MUL(V(io), I(4)), V(ii));
  tir_stmt *s = tir_for(B, io, I(0), I(3), TIR_SERIAL,
                        tir_for(B, ii, I(0), I(4), TIR_SERIAL,
                                tir_if(B, BIN(TE_LT, idx, I(10)),
                                       tir_store(B, A, idx, tir_bin(B, TE_ADD, tir_load(B, X, idx), F32(1))), NULL)));
  tir_stmt *p = tir_loop_partition(B, s, 0);
  counts c = count(p);
  CHECK_INT(c.ifs, 0);
  CHECK_STR(sstr(&f, p), "for io_0 in [0, +2):\n"
                         "  for ii_1 in [0, +4):\n"
                         "    A[add(mul(io_0, 4), ii_1)] = add(X[add(mul(io_0, 4), ii_1)], 1f)\n"
                         "for ii_1 in [0, +2):\n"
                         "  A[add(ii_1, 8)] = add(X[add(ii_1, 8)], 1f)\n");
  SAME(&bs, s, p, "non-divisible split");
  /* a test on the variable alone splits a loop in two */
  tir_var *i = tir_var_new(B, "i", GIR_I64);
  s = tir_for(B, i, I(0), I(8), TIR_SERIAL,
              tir_if(B, BIN(TE_LT, V(i), I(3)), tir_store(B, A, V(i), F32(1)), tir_store(B, A, V(i), F32(2))));
  p = tir_loop_partition(B, s, 0);
  CHECK_STR(sstr(&f, p), "for i_2 in [0, +3):\n  A[i_2] = 1f\nfor i_2 in [3, +5):\n  A[i_2] = 2f\n");
  SAME(&bs, s, p, "if/else on i");
  /* conditions are seen through lets */
  tir_var *t = tir_var_new(B, "t", GIR_I64);
  s = tir_for(B, io, I(0), I(3), TIR_SERIAL,
              tir_for(B, ii, I(0), I(4), TIR_SERIAL,
                      tir_let(B, t, idx, tir_if(B, BIN(TE_LT, V(t), I(10)), tir_store(B, A, V(t), F32(1)), NULL))));
  p = tir_loop_partition(B, s, 0);
  CHECK_INT(count(p).ifs, 0);
  SAME(&bs, s, p, "split through a let");
  /* a vectorized loop is cut at its tests too: each piece a shorter vector
   * without them (a ragged last vector's guard, a pad boundary inside a vector) */
  s = tir_for(B, i, I(0), I(4), TIR_VECTORIZED, tir_if(B, BIN(TE_LT, V(i), I(3)), tir_store(B, A, V(i), F32(1)), NULL));
  p = tir_loop_partition(B, s, 0);
  CHECK_INT(count(p).ifs, 0);
  CHECK_STR(sstr(&f, p), "vectorized i_2 in [0, +3):\n  A[i_2] = 1f\n");
  SAME(&bs, s, p, "vectorized prefix guard");
  s = tir_for(B, i, I(0), I(8), TIR_VECTORIZED,
              tir_if(B, BIN(TE_LT, V(i), I(6)),
                     tir_if(B, BIN(TE_GE, V(i), I(1)), tir_store(B, A, V(i), F32(1)), NULL), NULL));
  p = tir_loop_partition(B, s, 0);
  CHECK_INT(count(p).ifs, 0);
  CHECK_STR(sstr(&f, p), "vectorized i_2 in [1, +5):\n  A[i_2] = 1f\n");
  SAME(&bs, s, p, "vectorized two guards");
  /* a padded read in a vector loop, A[i] = i >= 1 ? X[i - 1] : 0: cut at 1 without
   * masked loads; with them (masked_loads) whole, and the vectorizer makes it one
   * vector if_then_else (a masked load), which it leaves serial without them */
  tir_expr *pad = tir_if_then_else(B, BIN(TE_GE, V(i), I(1)), tir_load(B, X, tir_bin(B, TE_SUB, V(i), I(1))), F32(0));
  s = tir_for(B, i, I(0), I(8), TIR_VECTORIZED, tir_store(B, A, V(i), pad));
  p = tir_loop_partition(B, s, 0);
  CHECK_INT(count(p).ites, 0);
  SAME(&bs, s, p, "padded read cut");
  p = tir_loop_partition(B, s, 1);
  CHECK_INT(count(p).ites, 1);
  CHECK(p->kind == TIR_FOR && p->u.loop.kind == TIR_VECTORIZED);
  SAME(&bs, s, p, "padded read kept whole");
  tir_stmt *vm = tir_vectorize(B, p, 1), *vs = tir_vectorize(B, p, 0);
  CHECK(vm->kind == TIR_STORE && vm->u.store.value->kind == TIR_IF_THEN_ELSE && vm->u.store.value->lanes == 8);
  CHECK(vs->kind == TIR_FOR && vs->u.loop.kind == TIR_SERIAL);
  SAME(&bs, s, vm, "masked load");
  SAME(&bs, s, vs, "padded read serial");
  /* a test never true on a whole iteration still cuts where it is false on whole
   * iterations: select(io*4 + ii < 3, 1, 2) keeps its select at io = 0 only */
  s = tir_for(B, io, I(0), I(3), TIR_SERIAL,
              tir_for(B, ii, I(0), I(4), TIR_VECTORIZED,
                      tir_store(B, A, idx, tir_select(B, BIN(TE_LT, idx, I(3)), F32(1), F32(2)))));
  p = tir_loop_partition(B, s, 0);
  CHECK_STR(sstr(&f, p), "vectorized ii_1 in [0, +3):\n  A[ii_1] = 1f\n"
                         "A[3] = 2f\n"
                         "for io_0 in [1, +2):\n  vectorized ii_1 in [0, +4):\n    A[add(mul(io_0, 4), ii_1)] = 2f\n");
  SAME(&bs, s, p, "false on whole iterations");
  /* three branch points inside the first vector of a row (a YOLO head's attributes
   * 0-1, 2-3, 4-): the row loop's cut leaves a one-iteration piece, and the vector
   * loop inside it still gets all its own cuts (no test left) */
  tir_expr *row = ADD(MUL(V(io), I(8)), V(ii));
  tir_expr *v3 = tir_if_then_else(B, BIN(TE_LT, row, I(2)), F32(1),
                                  tir_if_then_else(B, BIN(TE_LT, row, I(4)), F32(2),
                                                   tir_if_then_else(B, BIN(TE_LT, row, I(7)), F32(3), F32(4))));
  s = tir_for(B, io, I(0), I(2), TIR_SERIAL, tir_for(B, ii, I(0), I(8), TIR_VECTORIZED, tir_store(B, A, row, v3)));
  p = tir_loop_partition(B, s, 0);
  CHECKF(!strstr(sstr(&f, p), "lt("), "a test is left:\n%s", sstr(&f, p));
  SAME(&bs, s, p, "three cuts inside a one-iteration piece");
  fx_done(&f);
}

/* The ragged row tile of a fused parallel loop: the guard reads the parallel
 * variable through a modulo, which partition cannot solve; unswitching tests it
 * once per iteration, outside the reduction loop. */
static void test_unswitch_tile(void) {
  fx f;
  fx_init(&f);
  tir_buffer *A = tir_buffer_new(B, "A", GIR_F32, 16, TIR_GLOBAL, 0), *X = tir_buffer_new(B, "X", GIR_F32, 16, TIR_GLOBAL, 1);
  bufset bs = {2, {A, X}};
  /* parallel p in [0,6): for k in [0,3): A[p] += X[k]; if (p mod 3)*2 < 3: A[p+8] += X[k+4]
   * (a load-reading test would stay: if X[0] < 0 inside the loop) */
  tir_var *p = tir_var_new(B, "p", GIR_I64), *k = tir_var_new(B, "k", GIR_I64);
  tir_expr *guard = BIN(TE_LT, MUL(BIN(TE_MOD, V(p), I(3)), I(2)), I(3));
  tir_stmt *body[3] = {
      tir_store(B, A, V(p), ADD(tir_load(B, A, V(p)), tir_load(B, X, V(k)))),
      tir_if(B, guard, tir_store(B, A, ADD(V(p), I(8)), ADD(tir_load(B, A, ADD(V(p), I(8))), tir_load(B, X, ADD(V(k), I(4))))),
             NULL),
      tir_if(B, BIN(TE_LT, tir_load(B, X, I(0)), F32(0)), tir_store(B, A, I(15), F32(7)), NULL)};
  tir_stmt *s = tir_for(B, p, I(0), I(6), TIR_PARALLEL, tir_for(B, k, I(0), I(3), TIR_SERIAL, tir_seq(B, body, 3)));
  tir_stmt *u = tir_unswitch(B, s);
  CHECK_STR(sstr(&f, u), "parallel p_0 in [0, +6):\n"
                         "  if lt(mul(mod(p_0, 3), 2), 3):\n"
                         "    for k_1 in [0, +3):\n"
                         "      A[p_0] = add(A[p_0], X[k_1])\n"
                         "      A[add(p_0, 8)] = add(A[add(p_0, 8)], X[add(k_1, 4)])\n"
                         "      if lt(X[0], 0f):\n"
                         "        A[15] = 7f\n"
                         "  else:\n"
                         "    for k_1 in [0, +3):\n"
                         "      A[p_0] = add(A[p_0], X[k_1])\n"
                         "      if lt(mul(mod(p_0, 3), 2), 3):\n"
                         "        A[add(p_0, 8)] = add(A[add(p_0, 8)], X[add(k_1, 4)])\n"
                         "      if lt(X[0], 0f):\n"
                         "        A[15] = 7f\n");
  SAME(&bs, s, u, "unswitched ragged tile");
  /* a test of the inner variable stays where it is */
  tir_stmt *t = tir_for(B, p, I(0), I(6), TIR_PARALLEL,
                        tir_for(B, k, I(0), I(3), TIR_SERIAL,
                                tir_if(B, BIN(TE_LT, ADD(V(p), V(k)), I(5)), tir_store(B, A, V(p), F32(1)), NULL)));
  CHECK(tir_unswitch(B, t) == t);
  fx_done(&f);
}

static void test_partition_pad(void) {
  fx f;
  fx_init(&f);
  enum { W = 10, H = 6 };
  tir_buffer *O = tir_buffer_new(B, "O", GIR_F32, H * W, TIR_GLOBAL, 0), *X = tir_buffer_new(B, "X", GIR_F32, H * W, TIR_GLOBAL, 1),
             *K = tir_buffer_new(B, "K", GIR_F32, 9, TIR_GLOBAL, 2);
  bufset bs = {3, {O, X, K}};
  /* 1-D, pad 1: for w: for k in [0,3): O[w] += (0 <= w+k-1 < W ? X[w+k-1] : 0) * K[k] */
  tir_var *w = tir_var_new(B, "w", GIR_I64), *k = tir_var_new(B, "k", GIR_I64);
  tir_expr *x = SUB(ADD(V(w), V(k)), I(1));
  tir_expr *in = tir_if_then_else(B, AND(BIN(TE_LE, I(0), x), BIN(TE_LT, x, I(W))), tir_load(B, X, x), F32(0));
  tir_stmt *s = tir_for(B, w, I(0), I(W), TIR_SERIAL,
                        tir_for(B, k, I(0), I(3), TIR_SERIAL,
                                tir_store(B, O, V(w),
                                          tir_bin(B, TE_ADD, tir_load(B, O, V(w)),
                                                  tir_bin(B, TE_MUL, in, tir_load(B, K, V(k)))))));
  tir_stmt *p = tir_loop_partition(B, s, 0);
  counts c = count(p);
  CHECK_INT(c.ites, 0);
  CHECK_CONTAINS(sstr(&f, p), "for w_0 in [1, +8):\n  for k_1 in [0, +3):\n");
  SAME(&bs, s, p, "1-D padding");
  /* 2-D, pad 1, 3x3: both spatial loops peel one iteration at each end */
  tir_var *h = tir_var_new(B, "h", GIR_I64), *kh = tir_var_new(B, "kh", GIR_I64), *kw = tir_var_new(B, "kw", GIR_I64);
  tir_expr *y = SUB(ADD(V(h), V(kh)), I(1)), *xx = SUB(ADD(V(w), V(kw)), I(1));
  tir_expr *ok = AND(AND(BIN(TE_GE, y, I(0)), BIN(TE_LT, y, I(H))), AND(BIN(TE_GE, xx, I(0)), BIN(TE_LT, xx, I(W))));
  tir_expr *ld = tir_if_then_else(B, ok, tir_load(B, X, ADD(MUL(y, I(W)), xx)), F32(0));
  tir_expr *oi = ADD(MUL(V(h), I(W)), V(w));
  tir_stmt *body = tir_store(B, O, oi, tir_bin(B, TE_ADD, tir_load(B, O, oi),
                                               tir_bin(B, TE_MUL, ld, tir_load(B, K, ADD(MUL(V(kh), I(3)), V(kw))))));
  s = tir_for(B, h, I(0), I(H), TIR_PARALLEL,
              tir_for(B, w, I(0), I(W), TIR_SERIAL,
                      tir_for(B, kh, I(0), I(3), TIR_SERIAL, tir_for(B, kw, I(0), I(3), TIR_UNROLLED, body))));
  p = tir_loop_partition(B, s, 0);
  c = count(p);
  CHECK_INT(c.ites, 0);
  CHECK_CONTAINS(sstr(&f, p), "parallel h_2 in [1, +4):\n");
  CHECK_CONTAINS(sstr(&f, p), "  for w_0 in [1, +8):\n    for kh_3 in [0, +3):\n      unrolled kw_4 in [0, +3):\n");
  SAME(&bs, s, p, "2-D padding");
  tir_stmt *pu = tir_unroll(B, p, 4);
  CHECK_INT(count(pu).unrolled, 0);
  SAME(&bs, s, pu, "2-D padding, partitioned and unrolled");
  fx_done(&f);
}

/* --- random nests --- */

enum { NI = 64, NO = 48, MAXDEPTH = 3 };

typedef struct gen {
  fx *f;
  int nvars;
  tir_var *vars[MAXDEPTH + 2];
  tir_buffer *in, *out, *iout;
} gen;

/* Σ c_k·v_k + c over the loop variables in scope. */
static tir_expr *lin(gen *g, int64_t cmax) {
  tir_builder *b = &g->f->b;
  tir_expr *e = tir_i64(b, rnd_in(-cmax, cmax));
  for (int i = 0; i < g->nvars; i++) {
    if (chance(30)) continue;
    int64_t c = rnd_in(-2, 4);
    if (c) e = tir_bin(b, TE_ADD, e, tir_bin(b, TE_MUL, tir_var_ref(b, g->vars[i]), tir_i64(b, c)));
  }
  return e;
}

static tir_expr *cond(gen *g) {
  tir_builder *b = &g->f->b;
  tir_expr *c = tir_bin(b, (te_binop)(TE_EQ + rnd() % 6), lin(g, 8), tir_i64(b, rnd_in(-4, 16)));
  if (chance(30)) c = tir_bin(b, TE_AND, c, tir_bin(b, (te_binop)(TE_LT + rnd() % 4), lin(g, 8), tir_i64(b, rnd_in(-4, 16))));
  if (chance(10)) c = tir_un(b, TE_NOT, c);
  return c;
}

/* An in-bounds index into a buffer of n elements: guarded or wrapped. */
static tir_expr *wrapped(gen *g, int64_t n) {
  tir_builder *b = &g->f->b;
  return tir_bin(b, chance(50) ? TE_FLOORMOD : TE_MOD, tir_bin(b, TE_ADD, lin(g, 20), tir_i64(b, 1000 * n)), tir_i64(b, n));
}

static tir_expr *in_range(gen *g, tir_expr *ix, int64_t n) {
  tir_builder *b = &g->f->b;
  return tir_bin(b, TE_AND, tir_bin(b, TE_LE, tir_i64(b, 0), ix), tir_bin(b, TE_LT, ix, tir_i64(b, n)));
}

static tir_expr *value(gen *g, tir_expr *acc) {
  tir_builder *b = &g->f->b;
  tir_expr *x;
  if (chance(50)) {
    tir_expr *ix = lin(g, 10);
    x = tir_if_then_else(b, in_range(g, ix, NI), tir_load(b, g->in, ix), tir_float(b, GIR_F32, 0.5));
  } else
    x = tir_load(b, g->in, wrapped(g, NI));
  if (chance(30)) x = tir_select(b, cond(g), x, tir_float(b, GIR_F32, -1));
  if (chance(50)) x = tir_bin(b, TE_MUL, x, tir_cast(b, GIR_F32, lin(g, 3)));
  return tir_bin(b, TE_ADD, acc, x);
}

static tir_stmt *leaf(gen *g) {
  tir_builder *b = &g->f->b;
  int k = (int)(rnd() % 10);
  if (k < 3) { /* a guarded store: if 0 <= i < NO: out[i] = out[i] + ... */
    tir_expr *ix = lin(g, 10);
    tir_stmt *st = tir_store(b, g->out, ix, value(g, tir_load(b, g->out, ix)));
    return tir_if(b, chance(50) ? in_range(g, ix, NO) : tir_bin(b, TE_AND, in_range(g, ix, NO), cond(g)), st, NULL);
  }
  if (k < 5) { /* if/else */
    tir_expr *ix = wrapped(g, NO);
    tir_stmt *t = tir_store(b, g->out, ix, value(g, tir_load(b, g->out, ix)));
    tir_stmt *e = chance(50) ? tir_store(b, g->out, wrapped(g, NO), tir_float(b, GIR_F32, 3)) : NULL;
    return tir_if(b, cond(g), t, e);
  }
  if (k < 7) { /* a let and an integer accumulation */
    tir_var *t = tir_var_new(b, "t", GIR_I64);
    g->vars[g->nvars++] = t;
    tir_expr *ix = wrapped(g, NO);
    tir_stmt *st = tir_store(b, g->iout, ix, tir_bin(b, TE_ADD, tir_load(b, g->iout, ix),
                                                     tir_cast(b, GIR_I32, tir_bin(b, TE_FLOORDIV, lin(g, 9), tir_i64(b, 4)))));
    g->nvars--;
    return tir_let(b, t, lin(g, 5), chance(50) ? tir_if(b, cond(g), st, NULL) : st);
  }
  tir_expr *ix = wrapped(g, NO);
  return tir_store(b, g->out, ix, value(g, tir_load(b, g->out, ix)));
}

static tir_stmt *nest(gen *g, int depth) {
  tir_builder *b = &g->f->b;
  if (depth == 0 || (g->nvars > 0 && chance(15))) {
    int n = 1 + (int)(rnd() % 3);
    tir_stmt *xs[3];
    for (int i = 0; i < n; i++) xs[i] = leaf(g);
    return tir_seq(b, xs, n);
  }
  tir_var *v = tir_var_new(b, "i", GIR_I64);
  tir_expr *min = tir_i64(b, chance(60) ? 0 : rnd_in(-3, 3));
  if (g->nvars > 0 && chance(15)) min = tir_bin(b, TE_ADD, min, tir_var_ref(b, g->vars[g->nvars - 1])); /* symbolic */
  tir_expr *ext = tir_i64(b, rnd_in(chance(10) ? 0 : 1, 7));
  tir_for_kind kinds[] = {TIR_SERIAL, TIR_SERIAL, TIR_UNROLLED, TIR_UNROLLED, TIR_PARALLEL, TIR_VECTORIZED};
  tir_for_kind kind = kinds[rnd() % 6];
  g->vars[g->nvars++] = v;
  tir_stmt *body = nest(g, depth - 1);
  if (chance(20)) body = tir_seq2(b, leaf(g), body);
  g->nvars--;
  tir_stmt *loop = tir_for(b, v, min, ext, kind, body);
  if (chance(20)) loop = tir_seq2(b, loop, leaf(g));
  return loop;
}

static void property_nests(int n) {
  int bad = 0, conds_before = 0, conds_after = 0, unswitched = 0;
  for (int t = 0; t < n && bad < 5; t++) {
    fx f;
    fx_init(&f);
    gen g = {.f = &f};
    g.in = tir_buffer_new(B, "IN", GIR_F32, NI, TIR_GLOBAL, 0);
    g.out = tir_buffer_new(B, "OUT", GIR_F32, NO, TIR_GLOBAL, 1);
    g.iout = tir_buffer_new(B, "IOUT", GIR_I32, NO, TIR_GLOBAL, 2);
    bufset bs = {3, {g.in, g.out, g.iout}};
    tir_stmt *s = nest(&g, 1 + (int)(rnd() % MAXDEPTH));
    tir_stmt *simp = tir_simplify(B, s);
    tir_stmt *unr = tir_unroll(B, s, 8);
    tir_stmt *part = tir_loop_partition(B, s, 0);
    tir_stmt *pu = tir_simplify(B, tir_unroll(B, part, 4));
    tir_stmt *up = tir_loop_partition(B, tir_unroll(B, s, 3), 0);
    tir_stmt *sw = tir_unswitch(B, s), *usw = tir_unswitch(B, unr), *psw = tir_unswitch(B, part);
    counts cs = count(sw);
    unswitched += cs.ifs > count(s).ifs;
    counts c0 = count(simp), c1 = count(part);
    conds_before += c0.ifs + c0.ites;
    conds_after += c1.ifs + c1.ites;
    int ok = SAME(&bs, s, simp, "simplify") && SAME(&bs, s, unr, "unroll") && SAME(&bs, s, part, "partition") &&
             SAME(&bs, s, pu, "partition, unroll") && SAME(&bs, s, up, "unroll, partition") &&
             SAME(&bs, s, sw, "unswitch") && SAME(&bs, s, usw, "unroll, unswitch") && SAME(&bs, s, psw, "partition, unswitch");
    ok = ok && CHECKF(count(unr).unrolled == 0 && count(pu).unrolled == 0, "unrolled loops left");
    if (!ok) bad++;
    fx_done(&f);
  }
  printf("property: %d nests; conditions after simplify %d, after partition %d; %d nests unswitched\n", n, conds_before,
         conds_after, unswitched);
  CHECKF(unswitched > 0, "no random nest was unswitched: the property does not reach the pass");
}

/* dot4 through the passes: the printer, substitution (unroll), the simplifier's
 * zero rule, partition seeing a condition inside a dot4 operand, and vectorize
 * leaving a loop with a dot4 serial. */
static void test_dot4(void) {
  fx f;
  fx_init(&f);
  tir_buffer *Acc = tir_buffer_new(B, "acc", GIR_I32, 24, TIR_GLOBAL, 0), *A = tir_buffer_new(B, "a", GIR_U8, 96, TIR_GLOBAL, 1);
  tir_buffer *X = tir_buffer_new(B, "x", GIR_I8, 96, TIR_GLOBAL, 2), *O = tir_buffer_new(B, "out", GIR_I32, 24, TIR_GLOBAL, 3);
  bufset bs = {4, {Acc, A, X, O}};
  tir_var *i = tir_var_new(B, "i", GIR_I64);
  tir_expr *ix = tir_ramp(B, MUL(V(i), I(4)), I(1), 4), *ib = tir_ramp(B, MUL(V(i), I(16)), I(1), 16);
  tir_expr *d = tir_dot4(B, tir_load(B, Acc, ix), tir_load(B, A, tir_ramp(B, MUL(V(i), I(4)), I(1), 4)), tir_load(B, X, ib));
  CHECK(d->dtype == GIR_I32 && d->lanes == 4);
  tir_stmt *st = tir_store(B, O, ix, d);
  CHECK_STR(sstr(&f, st), "out[ramp(mul(i_0, 4), 1, 4)] = dot4(acc[ramp(mul(i_0, 4), 1, 4)], a[ramp(mul(i_0, 4), 1, 4)], "
                          "x[ramp(mul(i_0, 16), 1, 16)])\n");
  /* unroll substitutes i inside the dot4 */
  tir_stmt *s = tir_for(B, i, I(0), I(6), TIR_UNROLLED, st);
  tir_stmt *u = tir_unroll(B, s, 8);
  counts c = count(u);
  CHECK_INT(c.loops, 0);
  CHECK_INT(c.dot4s, 6);
  CHECK_CONTAINS(sstr(&f, u), "dot4(acc[ramp(20, 1, 4)], a[ramp(20, 1, 4)], x[ramp(80, 1, 16)])");
  SAME(&bs, s, u, "unrolled dot4");
  /* a zero operand leaves the accumulator */
  tir_stmt *z = tir_for(B, i, I(0), I(6), TIR_SERIAL,
                        tir_store(B, O, ix, tir_dot4(B, tir_load(B, Acc, ix), tir_broadcast(B, tir_int(B, GIR_U8, 0), 4),
                                                     tir_load(B, X, ib))));
  tir_stmt *zs = tir_simplify(B, z);
  CHECK_INT(count(zs).dot4s, 0);
  SAME(&bs, z, zs, "dot4 of zero");
  CHECK_INT(count(tir_simplify(B, s)).dot4s, 1);
  /* partition: a guard inside the (scalar) accumulator, false on the last iteration only */
  tir_expr *i4 = tir_ramp(B, MUL(V(i), I(4)), I(1), 4);
  tir_expr *g = tir_if_then_else(B, BIN(TE_LT, V(i), I(5)), tir_load(B, Acc, V(i)), tir_int(B, GIR_I32, 7));
  tir_stmt *p = tir_for(B, i, I(0), I(6), TIR_SERIAL,
                        tir_store(B, O, V(i), tir_dot4(B, g, tir_load(B, A, i4), tir_load(B, X, i4))));
  tir_stmt *ps = tir_loop_partition(B, p, 0);
  CHECK_INT(count(ps).ites, 0);
  SAME(&bs, p, ps, "partitioned dot4");
  /* vectorize: the loop stays serial, with its dot4 (vector or scalar accumulator) */
  tir_var *k = tir_var_new(B, "k", GIR_I64);
  tir_stmt *v = tir_for(B, i, I(0), I(6), TIR_VECTORIZED, st);
  tir_stmt *vs = tir_vectorize(B, v, 0);
  CHECK(vs->kind == TIR_FOR && vs->u.loop.kind == TIR_SERIAL);
  CHECK_INT(count(vs).dot4s, 1);
  SAME(&bs, v, vs, "vectorize refuses a dot4");
  tir_expr *ia = tir_ramp(B, MUL(V(k), I(4)), I(1), 4);
  tir_stmt *sc = tir_for(B, k, I(0), I(24), TIR_VECTORIZED,
                         tir_store(B, O, V(k), tir_dot4(B, tir_load(B, Acc, V(k)), tir_load(B, A, ia), tir_load(B, X, ia))));
  vs = tir_vectorize(B, sc, 0);
  CHECK(vs->kind == TIR_FOR && vs->u.loop.kind == TIR_SERIAL);
  SAME(&bs, sc, vs, "vectorize refuses a scalar dot4");
  fx_done(&f);
}

/* The dot4 fusion (pass_dot4.c): the int8 templates' four unrolled multiply-adds of
 * a quad (weights at stride 4, one input byte broadcast) become one dot4 computing the
 * same bits; a run whose offsets are not the quad's (a skipped byte) stays as it is. */
static tir_stmt *quad_macs(fx *fp, tir_buffer *acc, tir_buffer *x, tir_buffer *w, tir_var *q, int64_t skip,
                           int32_t lanes) {
  fx f = *fp;
  tir_stmt *st[4];
  for (int j = 0; j < 4; j++) {
    int64_t o = j + (j == 3 ? skip : 0);
    tir_expr *first, *second, *ix; /* the product's operands, in the template's order */
    if (lanes > 1) { /* weights at stride 4 across the lanes, one input byte broadcast */
      first = tir_cast(B, GIR_I32, tir_load(B, w, tir_ramp(B, ADD(MUL(V(q), I(64)), I(o)), I(4), lanes)));
      second = tir_broadcast(B, tir_cast(B, GIR_I32, tir_load(B, x, ADD(MUL(V(q), I(4)), I(o)))), lanes);
      ix = tir_ramp(B, I(0), I(1), lanes);
    } else { /* scalar: both sides step by one byte */
      first = tir_cast(B, GIR_I32, tir_load(B, x, ADD(MUL(V(q), I(4)), I(o))));
      second = tir_cast(B, GIR_I32, tir_load(B, w, ADD(MUL(V(q), I(8)), I(j))));
      ix = I(2);
    }
    st[j] = tir_store(B, acc, ix, ADD(tir_load(B, acc, ix), MUL(first, second)));
  }
  return tir_for(B, q, I(0), I(3), TIR_SERIAL, tir_seq(B, st, 4));
}

static void test_fuse_dot4(void) {
  fx f;
  fx_init(&f);
  tir_buffer *Acc = tir_buffer_new(B, "acc", GIR_I32, 16, TIR_GLOBAL, 0), *X = tir_buffer_new(B, "x", GIR_U8, 16, TIR_GLOBAL, 1);
  tir_buffer *W = tir_buffer_new(B, "w", GIR_I8, 196, TIR_GLOBAL, 2);
  bufset bs = {3, {Acc, X, W}};
  tir_var *q = tir_var_new(B, "q", GIR_I64);
  tir_stmt *s = quad_macs(&f, Acc, X, W, q, 0, 16);
  tir_stmt *d = tir_fuse_dot4(B, s);
  CHECK_INT(count(d).dot4s, 1);
  CHECK_INT(count(d).stores, 1);
  CHECK_CONTAINS(sstr(&f, d), "dot4(acc[ramp(0, 1, 16)], x[ramp(add(mul(q_0, 4), 0), 1, 4)], w[ramp(add(mul(q_0, 64), 0), 1, 64)])");
  SAME(&bs, s, d, "four multiply-adds as one dot4");
  tir_stmt *n = quad_macs(&f, Acc, X, W, q, 1, 16); /* the last step reads byte 4, not 3 */
  tir_stmt *nd = tir_fuse_dot4(B, n);
  CHECK_INT(count(nd).dot4s, 0);
  CHECK_INT(count(nd).stores, 4);
  SAME(&bs, n, nd, "not a quad: unchanged");
  fx_done(&f);
}

/* The scalar form (the int8 conv template on a target without vectors: Cortex-M4/M7):
 * four scalar multiply-adds of one output channel's quad, both sides stepping by one
 * byte, become one dot4 of L = 1 (the C backend's kc_dot4_*: two SMLADs). */
static void test_fuse_dot4_scalar(void) {
  fx f;
  fx_init(&f);
  tir_buffer *Acc = tir_buffer_new(B, "acc", GIR_I32, 4, TIR_GLOBAL, 0), *X = tir_buffer_new(B, "x", GIR_U8, 16, TIR_GLOBAL, 1);
  tir_buffer *W = tir_buffer_new(B, "w", GIR_I8, 32, TIR_GLOBAL, 2);
  bufset bs = {3, {Acc, X, W}};
  tir_var *q = tir_var_new(B, "q", GIR_I64);
  tir_stmt *s = quad_macs(&f, Acc, X, W, q, 0, 1);
  tir_stmt *d = tir_fuse_dot4(B, s);
  CHECK_INT(count(d).dot4s, 1);
  CHECK_INT(count(d).stores, 1);
  CHECK_CONTAINS(sstr(&f, d), "dot4(acc[2], x[ramp(add(mul(q_0, 4), 0), 1, 4)], w[ramp(add(mul(q_0, 8), 0), 1, 4)])");
  SAME(&bs, s, d, "four scalar multiply-adds as one dot4");
  tir_stmt *n = quad_macs(&f, Acc, X, W, q, 1, 1); /* x's last step reads byte 4, not 3 */
  tir_stmt *nd = tir_fuse_dot4(B, n);
  CHECK_INT(count(nd).dot4s, 0);
  SAME(&bs, n, nd, "not a quad: unchanged");
  fx_done(&f);
}

/* A flatten after a blocked layout, vectorized: out[i] = in[(i % 7)·4 + (i / 7 % 7)·28 +
 * i / 49] for 4 lanes of i at a time — a gather through divisions by 7 and 49, whose
 * values all lie in int32: computed there, widened once (pass_narrow.c); the scatter
 * back likewise. The same index with a product that leaves int32 on the way (i·2^33,
 * then divided back) keeps its int64 arithmetic. */
static tir_expr *flat_index(fx *pf, tir_expr *i, int64_t scale) {
  fx f = *pf;
  tir_expr *v = scale > 1 ? BIN(TE_DIV, MUL(i, tir_broadcast(B, I(scale), 4)), tir_broadcast(B, I(scale), 4)) : i;
  tir_expr *c7 = tir_broadcast(B, I(7), 4), *c49 = tir_broadcast(B, I(49), 4);
  return ADD(ADD(MUL(BIN(TE_MOD, v, c7), tir_broadcast(B, I(4), 4)),
                 MUL(BIN(TE_MOD, BIN(TE_DIV, v, c7), c7), tir_broadcast(B, I(28), 4))),
             BIN(TE_DIV, v, c49));
}

static void test_narrow(void) {
  fx f;
  fx_init(&f);
  tir_buffer *In = tir_buffer_new(B, "in", GIR_F32, 196, TIR_GLOBAL, 0), *Out = tir_buffer_new(B, "out", GIR_F32, 196, TIR_GLOBAL, 1);
  tir_buffer *Back = tir_buffer_new(B, "back", GIR_F32, 196, TIR_GLOBAL, 2);
  bufset bs = {3, {In, Out, Back}};
  for (int wide = 0; wide < 2; wide++) {
    tir_var *o = tir_var_new(B, "o", GIR_I64);
    tir_expr *i = tir_ramp(B, MUL(V(o), I(4)), I(1), 4);
    tir_expr *ix = flat_index(&f, i, wide ? (int64_t)1 << 33 : 1);
    tir_stmt *st[2] = {tir_store(B, Out, i, tir_load(B, In, ix)), tir_store(B, Back, ix, tir_load(B, In, i))};
    tir_stmt *s = tir_for(B, o, I(0), I(49), TIR_SERIAL, tir_seq(B, st, 2));
    tir_stmt *n = tir_narrow_indices(B, s);
    const char *txt = sstr(&f, n);
    if (!wide) {
      CHECK_CONTAINS(txt, "in[int64(add(add(mul(mod(ramp(mul(int32(o_");
      CHECK_CONTAINS(txt, "back[int64(");
      CHECK_CONTAINS(txt, "out[ramp(mul(o_"); /* a contiguous store keeps its index */
      SAME(&bs, s, n, "a flatten's gather and scatter in int32");
    } else {
      CHECK(n == s);
      SAME(&bs, s, n, "an index that leaves int32 on the way: unchanged");
    }
  }
  /* an unbounded variable (a let of a loaded value) keeps the int64 index */
  tir_buffer *Ix = tir_buffer_new(B, "ix", GIR_I64, 4, TIR_GLOBAL, 3);
  tir_var *k = tir_var_new(B, "k", GIR_I64);
  tir_expr *g = ADD(tir_broadcast(B, V(k), 4), tir_ramp(B, I(0), I(3), 4));
  tir_stmt *s2 = tir_let(B, k, tir_load(B, Ix, I(0)), tir_store(B, Out, tir_ramp(B, I(0), I(1), 4), tir_load(B, In, g)));
  CHECK(tir_narrow_indices(B, s2) == s2);
  fx_done(&f);
}

int main(void) {
  const char *seed = getenv("KILN_TEST_SEED");
  rng_state = seed ? strtoull(seed, NULL, 0) : 777;
  test_unroll();
  test_partition_split();
  test_partition_pad();
  test_unswitch_tile();
  test_dot4();
  test_fuse_dot4();
  test_fuse_dot4_scalar();
  test_narrow();
  property_nests(400);
  return check_finish("test_passes");
}
