/* test_gpu_emul.c — tests of the loop-IR interpreter's emulation of GPU launches
 * (tir/tir_eval_gpu.c): loop IR bound to blockIdx / threadIdx, with barriers and
 * shared memory, built by hand as a GPU schedule would produce it, run on the
 * CPU and compared with plain C; and the errors the emulator exists to find —
 * races between barriers and between blocks, divergent barriers, loops holding
 * a barrier whose trip count differs between threads, out-of-bounds shared
 * accesses, unsupported structure — each checked by its message. Warp shuffles
 * (TIR_SHUFFLE): butterflies and shifts of f32, f64, i32 and i64 values compared
 * with what a GPU's lanes would read, a row sum across warps, and shuffles in
 * divergent code or partial warps refused. Tensor cores (TIR_WMMA): a matmul by two
 * warps against TF32-rounded C, and warp-collective operations in divergent code,
 * partial warps and overlapping stores refused. */
#include <stdlib.h>
#include "check.h"
#include "tir_eval.h"

typedef struct fx {
  gir_arena *a;
  tir_builder b;
  gir_err err;
  tir_gpu_geometry geo;
  int32_t launches;
} fx;

static void fx_init(fx *f) {
  memset(f, 0, sizeof *f);
  f->a = gir_arena_new();
  tir_builder_init(&f->b, f->a);
}

static void fx_done(fx *f) { gir_arena_free(f->a); }

#define B (&f.b)
#define I(v) tir_i64(B, v)
#define V(x) tir_var_ref(B, x)
#define ADD(x, y) tir_bin(B, TE_ADD, x, y)
#define MUL(x, y) tir_bin(B, TE_MUL, x, y)
#define LT(x, y) tir_bin(B, TE_LT, x, y)
#define F32(v) tir_float(B, GIR_F32, v)
#define VAR(name) tir_var_new(B, name, GIR_I64)
#define BX(v, n, body) tir_for(B, v, I(0), I(n), TIR_BLOCK_X, body)
#define BY(v, n, body) tir_for(B, v, I(0), I(n), TIR_BLOCK_Y, body)
#define TX(v, n, body) tir_for(B, v, I(0), I(n), TIR_THREAD_X, body)
#define TY(v, n, body) tir_for(B, v, I(0), I(n), TIR_THREAD_Y, body)
#define FOR(v, lo, n, body) tir_for(B, v, I(lo), I(n), TIR_SERIAL, body)
#define ST(buf, i, v) tir_store(B, buf, i, v)
#define LD(buf, i) tir_load(B, buf, i)
#define SEQ(...) tir_seq(B, (tir_stmt *[]){__VA_ARGS__}, sizeof((tir_stmt *[]){__VA_ARGS__}) / sizeof(tir_stmt *))
#define SHARED(name, n) tir_buffer_new(B, name, GIR_F32, n, TIR_SHARED, -1)
#define GLOBAL(name, n, param) tir_buffer_new(B, name, GIR_F32, n, TIR_GLOBAL, param)

/* Runs s with bufs[i] bound to data[i]; 0 on success, else -1 with f->err. */
static int run(fx *f, const tir_stmt *s, int n, tir_buffer **bufs, void **data, int64_t budget) {
  tir_env env;
  memset(&f->err, 0, sizeof f->err);
  if (tir_env_init(&env, f->a, f->b.next_var, f->b.next_buffer, budget, &f->err) < 0) return -1;
  for (int i = 0; i < n; i++) tir_env_bind(&env, bufs[i], data[i]);
  int rc = tir_eval_stmt(&env, s);
  f->geo = env.last_launch;
  f->launches = env.n_launches;
  if (rc < 0 && getenv("KILN_TEST_VERBOSE")) printf("  error: %s\n", f->err.msg);
  return rc;
}

/* 1. y[i] = x[i] * 2 over 4 blocks of 32 threads, guarded to 100 elements; through tir_eval_func. */
static void test_elementwise(void) {
  fx f;
  fx_init(&f);
  tir_buffer *X = GLOBAL("x", 100, 0), *Y = GLOBAL("y", 100, 1);
  tir_var *bx = VAR("bx"), *tx = VAR("tx"), *i = VAR("i");
  tir_stmt *body = BX(bx, 4, TX(tx, 32, tir_let(B, i, ADD(MUL(V(bx), I(32)), V(tx)),
                                                 tir_if(B, LT(V(i), I(100)), ST(Y, V(i), MUL(LD(X, V(i)), F32(2))), NULL))));
  tir_buffer *params[2] = {X, Y};
  tir_func fn = {"scale2", 2, params, body, f.b.next_var, f.b.next_buffer};
  float x[100], y[100];
  for (int k = 0; k < 100; k++) x[k] = (float)k * 0.5f - 7, y[k] = -1;
  void *bufs[2] = {x, y};
  CHECKF(tir_eval_func(&fn, bufs, f.a, 0, &f.err) == 0, "%s", f.err.msg);
  int bad = 0;
  for (int k = 0; k < 100; k++) bad += y[k] != x[k] * 2;
  CHECK_INT(bad, 0);
  /* the geometry of the launch */
  for (int k = 0; k < 100; k++) y[k] = -1;
  CHECKF(run(&f, body, 2, params, bufs, 0) == 0, "%s", f.err.msg);
  CHECK_INT(f.launches, 1);
  CHECK_INT(f.geo.grid[0], 4);
  CHECK_INT(f.geo.grid[1], 1);
  CHECK_INT(f.geo.block[0], 32);
  CHECK_INT(f.geo.block[1], 1);
  CHECK_INT(f.geo.shared_bytes, 0);
  CHECK(y[99] == x[99] * 2);
  /* without the guard, thread 4 of block 3 loads x[100]: the message names it */
  body = BX(bx, 4, TX(tx, 32, tir_let(B, i, ADD(MUL(V(bx), I(32)), V(tx)), ST(Y, V(i), MUL(LD(X, V(i)), F32(2))))));
  CHECK(run(&f, body, 2, params, bufs, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "block (3,0,0) thread (4,0,0)");
  CHECK_CONTAINS(f.err.msg, "out of bounds");
  /* the work budget counts every thread's work */
  body = BX(bx, 4, TX(tx, 32, tir_let(B, i, ADD(MUL(V(bx), I(32)), V(tx)),
                                      tir_if(B, LT(V(i), I(100)), ST(Y, V(i), MUL(LD(X, V(i)), F32(2))), NULL))));
  CHECK(run(&f, body, 2, params, bufs, 500) < 0);
  CHECK_CONTAINS(f.err.msg, "work budget");
  fx_done(&f);
}

/* 2./3. C[64x64] = A[64x32] . B[32x64], 16x16 tiles through shared memory. `barriers`:
 * bit 0 the barrier before the tiles are stored, bit 1 the one after. `inside`:
 * the shared tiles are allocated inside the thread loops (one per block all the same). */
enum { M = 64, N = 64, K = 32, T = 16 };

static tir_stmt *matmul(fx *fp, tir_buffer *A, tir_buffer *Bm, tir_buffer *C, int barriers, int inside) {
#define f (*fp)
  tir_buffer *As = SHARED("As", T * T), *Bs = SHARED("Bs", T * T);
  tir_buffer *acc = tir_buffer_new(B, "acc", GIR_F32, 1, TIR_LOCAL, -1);
  tir_var *by = VAR("by"), *bx = VAR("bx"), *ty = VAR("ty"), *tx = VAR("tx"), *ko = VAR("ko"), *ki = VAR("ki");
  tir_expr *sidx = ADD(MUL(V(ty), I(T)), V(tx));
  tir_expr *row = ADD(MUL(V(by), I(T)), V(ty)), *col = ADD(MUL(V(bx), I(T)), V(tx));
  tir_stmt *kloop = FOR(ko, 0, K / T, SEQ((barriers & 1) ? tir_barrier(B) : NULL,
                                          ST(As, sidx, LD(A, ADD(MUL(row, I(K)), ADD(MUL(V(ko), I(T)), V(tx))))),
                                          ST(Bs, sidx, LD(Bm, ADD(MUL(ADD(MUL(V(ko), I(T)), V(ty)), I(N)), col))),
                                          (barriers & 2) ? tir_barrier(B) : NULL,
                                          FOR(ki, 0, T, ST(acc, I(0), ADD(LD(acc, I(0)), MUL(LD(As, ADD(MUL(V(ty), I(T)), V(ki))),
                                                                                          LD(Bs, ADD(MUL(V(ki), I(T)), V(tx)))))))));
  tir_stmt *thread = tir_allocate(B, acc, SEQ(ST(acc, I(0), F32(0)), kloop, ST(C, ADD(MUL(row, I(N)), col), LD(acc, I(0)))));
  if (inside) return BY(by, M / T, BX(bx, N / T, TY(ty, T, TX(tx, T, tir_allocate(B, As, tir_allocate(B, Bs, thread))))));
  return BY(by, M / T, BX(bx, N / T, tir_allocate(B, As, tir_allocate(B, Bs, TY(ty, T, TX(tx, T, thread))))));
#undef f
}

static void test_matmul(void) {
  static float a[M * K], b[K * N], c[M * N], ref[M * N];
  for (int k = 0; k < M * K; k++) a[k] = (float)((k * 7) % 13 - 6) / 8.0f;
  for (int k = 0; k < K * N; k++) b[k] = (float)((k * 5) % 11 - 5) / 4.0f + 0.1f;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int k = 0; k < K; k++) s = s + a[i * K + k] * b[k * N + j];
      ref[i * N + j] = s;
    }
  for (int inside = 0; inside < 2; inside++) {
    fx f;
    fx_init(&f);
    tir_buffer *A = GLOBAL("A", M * K, 0), *Bm = GLOBAL("B", K * N, 1), *C = GLOBAL("C", M * N, 2);
    tir_buffer *bufs[3] = {A, Bm, C};
    void *data[3] = {a, b, c};
    for (int k = 0; k < M * N; k++) c[k] = NAN;
    tir_stmt *s = matmul(&f, A, Bm, C, 3, inside);
    CHECKF(run(&f, s, 3, bufs, data, 0) == 0, "inside %d: %s", inside, f.err.msg);
    double worst = 0;
    for (int k = 0; k < M * N; k++) {
      double d = fabs((double)c[k] - ref[k]) / (1 + fabs(ref[k]));
      if (!(d <= worst)) worst = d;
    }
    CHECKF(worst <= 1e-5, "inside %d: worst relative difference %g", inside, worst);
    CHECK_INT(f.geo.grid[0], 4);
    CHECK_INT(f.geo.grid[1], 4);
    CHECK_INT(f.geo.block[0], 16);
    CHECK_INT(f.geo.block[1], 16);
    CHECK_INT(f.geo.shared_bytes, 2 * T * T * 4);
    /* 3. either barrier removed: a race on a shared tile */
    for (int bar = 1; bar <= 2; bar++) {
      s = matmul(&f, A, Bm, C, 3 & ~bar, inside);
      CHECK(run(&f, s, 3, bufs, data, 0) < 0);
      CHECKF(strstr(f.err.msg, "race between barriers on shared buffer"), "barrier %d removed: %s", bar, f.err.msg);
    }
    fx_done(&f);
  }
}

/* 4. out-of-bounds shared accesses, divergent barriers, loops holding a barrier
 * whose trip count differs, structures the emulator refuses. */
static void test_errors(void) {
  fx f;
  fx_init(&f);
  tir_buffer *Y = GLOBAL("y", 64, 0), *sh = SHARED("sh", 32);
  float y[64] = {0};
  void *data[1] = {y};
  tir_var *bx = VAR("bx"), *tx = VAR("tx"), *ty = VAR("ty"), *j = VAR("j");
  /* a shared store one past the end in thread 31 */
  tir_stmt *s = BX(bx, 2, tir_allocate(B, sh, TX(tx, 32, ST(sh, ADD(V(tx), I(1)), F32(1)))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "block (0,0,0) thread (31,0,0): store of sh out of bounds: index 32 not in [0, 32)");
  /* a shared load before the start, after a barrier */
  s = BX(bx, 2, tir_allocate(B, sh, TX(tx, 32, SEQ(ST(sh, V(tx), F32(1)), tir_barrier(B),
                                                    ST(Y, V(tx), LD(sh, tir_bin(B, TE_SUB, V(tx), I(1))))))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "thread (0,0,0): load of sh out of bounds: index -1");
  /* a barrier under if (tx < 8) */
  s = BX(bx, 1, tir_allocate(B, sh, TX(tx, 32, SEQ(ST(sh, V(tx), F32(1)), tir_if(B, LT(V(tx), I(8)), tir_barrier(B), NULL),
                                                    ST(Y, V(tx), LD(sh, tir_bin(B, TE_MOD, ADD(V(tx), I(1)), I(32))))))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "barrier in divergent code");
  /* ... but a condition the same in every thread is fine */
  s = BX(bx, 1, tir_allocate(B, sh, TX(tx, 32, SEQ(ST(sh, V(tx), F32(1)), tir_if(B, LT(V(bx), I(8)), tir_barrier(B), NULL),
                                                    ST(Y, V(tx), LD(sh, tir_bin(B, TE_MOD, ADD(V(tx), I(1)), I(32))))))));
  CHECKF(run(&f, s, 1, &Y, data, 0) == 0, "%s", f.err.msg);
  /* a barrier in a thread loop of a smaller extent than the block's */
  s = BX(bx, 1, TY(ty, 2, SEQ(TX(tx, 32, ST(Y, ADD(MUL(V(ty), I(32)), V(tx)), F32(0))), TX(tx, 8, tir_barrier(B)))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "barrier in divergent code: a threadIdx.x loop of extent 8");
  /* a barrier in a loop running tx times */
  s = BX(bx, 1, TX(tx, 4, tir_for(B, j, I(0), V(tx), TIR_SERIAL, tir_barrier(B))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "barrier in a loop whose trip count differs between threads");
  /* a thread loop outside any block loop, a barrier outside a launch */
  s = TX(tx, 4, ST(Y, V(tx), F32(1)));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "threadIdx.x loop over tx outside any blockIdx loop");
  CHECK(run(&f, tir_barrier(B), 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "barrier outside the threads of a GPU launch");
  /* threadIdx.x inside threadIdx.x; a blockIdx loop inside the block body */
  s = BX(bx, 1, TX(tx, 4, TX(j, 4, ST(Y, V(j), F32(1)))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "nested inside another threadIdx.x loop");
  s = BX(bx, 1, SEQ(ST(Y, I(0), F32(1)), BY(j, 2, ST(Y, V(j), F32(1)))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "the block loops of a launch form one nest");
  /* a thread loop whose extent is not a constant; too many threads */
  s = BX(bx, 2, tir_for(B, tx, I(0), ADD(V(bx), I(1)), TIR_THREAD_X, ST(Y, V(tx), F32(1))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "its min and extent must be constants");
  s = BX(bx, 1, TY(ty, 64, TX(tx, 32, ST(Y, I(0), F32(1)))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "a GPU block holds at most 1024");
  /* a read of shared memory no thread wrote */
  s = BX(bx, 1, tir_allocate(B, sh, TX(tx, 32, SEQ(ST(sh, V(tx), F32(1)), tir_barrier(B), ST(Y, V(tx), LD(sh, I(0))),
                                                    tir_if(B, LT(V(tx), I(1)), ST(Y, I(40), LD(sh, I(31))), NULL)))));
  CHECKF(run(&f, s, 1, &Y, data, 0) == 0, "%s", f.err.msg);
  s = BX(bx, 1, tir_allocate(B, sh, TX(tx, 16, SEQ(ST(sh, V(tx), F32(1)), tir_barrier(B), ST(Y, V(tx), LD(sh, I(20)))))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "reads shared buffer sh[20], which no thread of its block wrote");
  fx_done(&f);
}

/* 5. races on global memory; a block-wide tree reduction in shared memory. */
static void test_global_and_reduce(void) {
  fx f;
  fx_init(&f);
  tir_buffer *X = GLOBAL("x", 64, 0), *Y = GLOBAL("y", 4, 1);
  tir_buffer *bufs[2] = {X, Y};
  float x[64], y[4] = {0};
  for (int k = 0; k < 64; k++) x[k] = (float)(k % 9) - 3.5f;
  void *data[2] = {x, y};
  tir_var *bx = VAR("bx"), *tx = VAR("tx"), *k = VAR("k"), *s = VAR("s");
  /* two threads store different values to y[0] */
  tir_stmt *st = BX(bx, 1, TX(tx, 2, ST(Y, I(0), tir_cast(B, GIR_F32, V(tx)))));
  CHECK(run(&f, st, 2, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "race between barriers on global buffer y[0] in block (0,0,0): thread (1,0,0) writes it, "
                            "thread (0,0,0) wrote it in the same phase");
  /* ... the same value: allowed, and readable */
  st = BX(bx, 1, TX(tx, 32, SEQ(ST(Y, I(0), F32(7)), ST(Y, I(1), ADD(LD(Y, I(0)), F32(1))))));
  CHECKF(run(&f, st, 2, bufs, data, 0) == 0, "%s", f.err.msg);
  CHECK(y[1] == 8);
  /* a thread reads what another stored in the same phase; a barrier orders them */
  st = BX(bx, 1, TX(tx, 2, SEQ(tir_if(B, LT(V(tx), I(1)), ST(Y, I(2), F32(3)), NULL), ST(Y, ADD(V(tx), I(0)), LD(Y, I(2))))));
  CHECK(run(&f, st, 2, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "race between barriers on global buffer y[2]");
  st = BX(bx, 1, TX(tx, 2, SEQ(tir_if(B, LT(V(tx), I(1)), ST(Y, I(2), F32(3)), NULL), tir_barrier(B),
                               ST(Y, V(tx), LD(Y, I(2))))));
  CHECKF(run(&f, st, 2, bufs, data, 0) == 0, "%s", f.err.msg);
  /* blocks are never ordered: a store in one and a load in another race, barrier or not */
  st = BX(bx, 2, TX(tx, 1, SEQ(tir_if(B, LT(V(bx), I(1)), ST(Y, I(3), F32(5)), NULL), tir_barrier(B),
                               tir_if(B, LT(I(0), V(bx)), ST(Y, I(0), LD(Y, I(3))), NULL))));
  CHECK(run(&f, st, 2, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "race between blocks on global buffer y[3]: thread (0,0,0) of block (1,0,0) reads it, "
                            "thread (0,0,0) of block (0,0,0) wrote it");
  st = BX(bx, 2, TX(tx, 1, ST(Y, I(0), tir_cast(B, GIR_F32, V(bx)))));
  CHECK(run(&f, st, 2, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "race between blocks on global buffer y[0]");

  /* the sum of each block's 32 elements: sh[tx] = x[...]; for s in 16,8,4,2,1: if tx < s:
   * sh[tx] += sh[tx+s]; barrier */
  for (int variant = 0; variant < 2; variant++) {
    tir_buffer *sh = SHARED("sh", 32);
    tir_expr *shift = tir_bin(B, TE_SHR, I(16), V(k));
    tir_stmt *step = tir_let(B, s, shift,
                             SEQ(tir_if(B, LT(V(tx), V(s)), ST(sh, V(tx), ADD(LD(sh, V(tx)), LD(sh, ADD(V(tx), V(s))))), NULL),
                                 variant ? NULL : tir_barrier(B)));
    st = BX(bx, 2, tir_allocate(B, sh, TX(tx, 32, SEQ(ST(sh, V(tx), LD(X, ADD(MUL(V(bx), I(32)), V(tx)))), tir_barrier(B),
                                                      FOR(k, 0, 5, step),
                                                      tir_if(B, tir_bin(B, TE_EQ, V(tx), I(0)), ST(Y, V(bx), LD(sh, I(0))), NULL)))));
    y[0] = y[1] = -99;
    int rc = run(&f, st, 2, bufs, data, 0);
    if (variant) {
      CHECK(rc < 0);
      CHECK_CONTAINS(f.err.msg, "race between barriers on shared buffer sh");
      continue;
    }
    CHECKF(rc == 0, "%s", f.err.msg);
    for (int b = 0; b < 2; b++) { /* the tree's order of additions, in float */
      float t[32];
      for (int i = 0; i < 32; i++) t[i] = x[b * 32 + i];
      for (int w = 16; w >= 1; w /= 2)
        for (int i = 0; i < w; i++) t[i] = t[i] + t[i + w];
      CHECK_DBL(y[b], t[0]);
    }
  }
  fx_done(&f);
}

/* A thread loop of a smaller extent runs in the threads below it only; vector
 * accesses are checked lane by lane. */
static void test_partial_and_vector(void) {
  fx f;
  fx_init(&f);
  tir_buffer *Y = GLOBAL("y", 64, 0), *sh = SHARED("sh", 128);
  float y[64];
  for (int k = 0; k < 64; k++) y[k] = -1;
  void *data[1] = {y};
  tir_var *bx = VAR("bx"), *tx = VAR("tx"), *t2 = VAR("t2");
  tir_stmt *s = BX(bx, 1, SEQ(TX(tx, 32, ST(Y, V(tx), F32(1))), TX(t2, 8, ST(Y, ADD(V(t2), I(32)), F32(2)))));
  CHECKF(run(&f, s, 1, &Y, data, 0) == 0, "%s", f.err.msg);
  int ones = 0, twos = 0, untouched = 0;
  for (int k = 0; k < 64; k++) ones += y[k] == 1, twos += y[k] == 2, untouched += y[k] == -1;
  CHECK(ones == 32 && twos == 8 && untouched == 24);
  CHECK_INT(f.geo.block[0], 32);
  /* each thread stores 4 lanes of sh, then reads a neighbour's 4 after a barrier */
  tir_expr *mine = tir_ramp(B, MUL(V(tx), I(4)), I(1), 4);
  tir_expr *next = tir_ramp(B, MUL(tir_bin(B, TE_MOD, ADD(V(tx), I(1)), I(32)), I(4)), I(1), 4);
  tir_expr *vals = tir_cast(B, GIR_F32, tir_ramp(B, MUL(V(tx), I(4)), I(1), 4));
  s = BX(bx, 1, tir_allocate(B, sh, TX(tx, 32, SEQ(ST(sh, mine, vals), tir_barrier(B),
                                                   tir_if(B, LT(V(tx), I(16)), ST(Y, V(tx), LD(sh, ADD(MUL(V(tx), I(4)), I(5)))), NULL),
                                                   ST(sh, mine, LD(sh, mine))))));
  CHECKF(run(&f, s, 1, &Y, data, 0) == 0, "%s", f.err.msg);
  CHECK(y[0] == 5 && y[15] == 65);
  /* without the barrier, thread 0 reads lanes thread 1 has not stored yet, and it stores them */
  s = BX(bx, 1, tir_allocate(B, sh, TX(tx, 32, SEQ(ST(sh, mine, vals), ST(sh, mine, tir_bin(B, TE_ADD, LD(sh, next), vals))))));
  CHECK(run(&f, s, 1, &Y, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "race between barriers on shared buffer sh[4] in block (0,0,0): thread (1,0,0) writes it, thread "
                            "(0,0,0) read it");
  fx_done(&f);
}

/* CPU loop IR is unchanged: a plain loop, LOCAL and SHARED buffers outside a launch. */
static void test_cpu_unchanged(void) {
  fx f;
  fx_init(&f);
  tir_buffer *Y = GLOBAL("y", 8, 0), *sh = SHARED("sh", 8);
  float y[8] = {0};
  void *data[1] = {y};
  tir_var *i = VAR("i");
  tir_stmt *s = tir_allocate(B, sh, SEQ(FOR(i, 0, 8, ST(sh, V(i), tir_cast(B, GIR_F32, V(i)))),
                                        FOR(i, 0, 8, ST(Y, V(i), LD(sh, tir_bin(B, TE_SUB, I(7), V(i))))),
                                        ST(Y, I(0), LD(sh, I(0)))));
  CHECKF(run(&f, s, 1, &Y, data, 0) == 0, "%s", f.err.msg);
  CHECK(y[1] == 6 && y[7] == 0 && y[0] == 0);
  CHECK_INT(f.launches, 0);
  fx_done(&f);
}

/* 6. warp shuffles: each lane reads the value its source lane computed at the same
 * statement; a block-wide allreduce (butterfly, then the warps through shared memory,
 * as sch_lower.c's allreduce); shuffles in divergent code, partial warps, outside a
 * launch are errors. */
static void test_shuffle(void) {
  fx f;
  fx_init(&f);
  enum { NT = 64 };
  tir_buffer *Y = GLOBAL("y", NT, 0), *Z = GLOBAL("z", NT, 1);
  tir_buffer *D = tir_buffer_new(B, "d", GIR_F64, NT, TIR_GLOBAL, 2), *Q = tir_buffer_new(B, "q", GIR_I64, NT, TIR_GLOBAL, 3);
  tir_buffer *W = tir_buffer_new(B, "w", GIR_I32, NT, TIR_GLOBAL, 4);
  float y[NT], z[NT];
  double d[NT];
  int64_t q[NT];
  int32_t w[NT];
  void *data[5] = {y, z, d, q, w};
  tir_buffer *bufs[5] = {Y, Z, D, Q, W};
  tir_var *bx = VAR("bx"), *tx = VAR("tx"), *v = tir_var_new(B, "v", GIR_F32);
  tir_expr *fx_ = tir_cast(B, GIR_F32, V(tx));
  /* y = shfl_xor(tx, 5) through a let, z = shfl_down(tx * 2, 3) + 1 in a store; the
   * f64, i64 and i32 butterflies by 17 */
  tir_stmt *s = BX(bx, 2, TX(tx, NT, SEQ(
      tir_let(B, v, tir_shuffle(B, TIR_SHFL_XOR, fx_, 5), ST(Y, V(tx), tir_var_ref(B, v))),
      ST(Z, V(tx), tir_bin(B, TE_ADD, tir_shuffle(B, TIR_SHFL_DOWN, MUL(fx_, F32(2)), 3), F32(1))),
      ST(D, V(tx), tir_shuffle(B, TIR_SHFL_XOR, tir_bin(B, TE_ADD, tir_cast(B, GIR_F64, V(tx)), tir_float(B, GIR_F64, 0.25)), 17)),
      ST(Q, V(tx), tir_shuffle(B, TIR_SHFL_XOR, MUL(V(tx), I(1LL << 33)), 17)),
      ST(W, V(tx), tir_shuffle(B, TIR_SHFL_DOWN, tir_cast(B, GIR_I32, V(tx)), 31)))));
  CHECKF(run(&f, s, 5, bufs, data, 0) == 0, "%s", f.err.msg);
  int bad = 0;
  for (int t = 0; t < NT; t++) {
    int lane = t % 32, base = t - lane;
    bad += y[t] != (float)(base + (lane ^ 5));
    bad += z[t] != (float)(2 * (lane + 3 < 32 ? t + 3 : t) + 1);
    bad += d[t] != base + (lane ^ 17) + 0.25;
    bad += q[t] != (int64_t)(base + (lane ^ 17)) << 33;
    bad += w[t] != (lane + 31 < 32 ? t + 31 : t);
  }
  CHECK_INT(bad, 0);
  /* a row sum over 64 threads: strided partials of 200 elements, the butterfly, the
   * two warps through shared memory; every thread ends with the row's sum */
  tir_buffer *X = GLOBAL("x", 200, 0), *S = GLOBAL("s", NT, 1), *sh = SHARED("warps", 2);
  tir_buffer *acc = tir_buffer_new(B, "acc", GIR_F32, 1, TIR_LOCAL, -1);
  float x[200], sum[NT];
  float want = 0;
  for (int k = 0; k < 200; k++) x[k] = (float)(k % 7) - 3, want += x[k];
  tir_var *o = VAR("o");
  tir_expr *a0 = LD(acc, I(0)), *k = ADD(MUL(V(o), I(NT)), V(tx));
  tir_stmt *xs[12];
  int n = 0;
  xs[n++] = ST(acc, I(0), F32(0));
  xs[n++] = FOR(o, 0, 4, tir_if(B, LT(k, I(200)), ST(acc, I(0), ADD(a0, LD(X, k))), NULL));
  for (int32_t off = 16; off >= 1; off /= 2) xs[n++] = ST(acc, I(0), ADD(a0, tir_shuffle(B, TIR_SHFL_XOR, a0, off)));
  xs[n++] = tir_if(B, tir_bin(B, TE_EQ, tir_bin(B, TE_MOD, V(tx), I(32)), I(0)),
                   ST(sh, tir_bin(B, TE_DIV, V(tx), I(32)), a0), NULL);
  xs[n++] = tir_barrier(B);
  xs[n++] = ST(S, V(tx), ADD(LD(sh, I(0)), LD(sh, I(1))));
  s = BX(bx, 1, tir_allocate(B, sh, TX(tx, NT, tir_allocate(B, acc, tir_seq(B, xs, n)))));
  tir_buffer *rb[2] = {X, S};
  void *rd[2] = {x, sum};
  CHECKF(run(&f, s, 2, rb, rd, 0) == 0, "%s", f.err.msg);
  bad = 0;
  for (int t = 0; t < NT; t++) bad += sum[t] != want;
  CHECK_INT(bad, 0);
  /* divergent: a shuffle under if (tx < 8), in a smaller thread loop, under an
   * if_then_else's branch, in a loop running tx times; a partial warp; outside a launch */
  tir_expr *sh5 = tir_shuffle(B, TIR_SHFL_XOR, fx_, 1);
  s = BX(bx, 1, TX(tx, 32, tir_if(B, LT(V(tx), I(8)), ST(Y, V(tx), sh5), NULL)));
  CHECK(run(&f, s, 5, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "in divergent code: the condition of an if holding a barrier or a warp shuffle");
  s = BX(bx, 1, SEQ(TX(tx, 64, ST(Y, V(tx), F32(0))), TX(tx, 32, ST(Y, V(tx), sh5))));
  CHECK(run(&f, s, 5, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "a threadIdx.x loop of extent 32, in a block of 64 threads along x, holds a barrier or a warp shuffle");
  s = BX(bx, 1, TX(tx, 32, ST(Y, V(tx), tir_if_then_else(B, LT(V(tx), I(8)), sh5, F32(0)))));
  CHECK(run(&f, s, 5, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "warp shuffle in divergent code: under a branch of an if_then_else");
  s = BX(bx, 1, TX(tx, 32, tir_for(B, o, I(0), V(tx), TIR_SERIAL, ST(Y, V(tx), sh5))));
  CHECK(run(&f, s, 5, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "in a loop whose trip count differs between threads");
  s = BX(bx, 1, TX(tx, 24, ST(Y, V(tx), sh5)));
  CHECK(run(&f, s, 5, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "warp shuffle in a block of 24 threads");
  CHECK(run(&f, ST(Y, I(0), tir_shuffle(B, TIR_SHFL_XOR, F32(1), 1)), 5, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "warp shuffle outside the threads of a GPU launch");
  /* the passes see a sync point; the printer names it */
  CHECK(tir_stmt_has_sync(ST(Y, I(0), sh5)) && !tir_stmt_has_sync(ST(Y, I(0), fx_)));
  fx_done(&f);
}

/* 8. Tensor cores (TIR_WMMA): C = A B on 32 x 16 x 16 by two warps straight from global
 * memory, each warp a 16-row tile in two k-steps of 8, compared with C summing the
 * TF32-rounded products in the same order (so exactly); TF32 rounding itself; and the
 * errors: operands that differ between a warp's lanes, a partial warp, two warps
 * storing different tiles over each other, a fragment read element-wise, a wmma
 * outside a launch. */
static void test_wmma(void) {
  fx f;
  fx_init(&f);
  /* rounding to nearest on the 10-bit mantissa, ties away from zero (cvt.rna.tf32.f32) */
  CHECK(tir_round_tf32(1.0f + 0x1p-12f) == 1.0f && tir_round_tf32(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f);
  CHECK(tir_round_tf32(-(1.0f + 0x1p-11f)) == -(1.0f + 0x1p-10f) && tir_round_tf32(1.0f + 3 * 0x1p-12f) == 1.0f + 0x1p-10f);
  CHECK(tir_round_tf32(1.0f / 0.0f) == 1.0f / 0.0f && tir_round_tf32(0.0f / 0.0f) != tir_round_tf32(0.0f / 0.0f));
  enum { M = 32, N = 16, K = 16 };
  tir_buffer *A = GLOBAL("a", M * K, 0), *Bm = GLOBAL("b", K * N, 1), *C = GLOBAL("c", M * N, 2);
  A->align = Bm->align = C->align = 32;
  float a[M * K], bb[K * N], c[M * N], want[M * N];
  for (int i = 0; i < M * K; i++) a[i] = 1.0f + (float)((i * 37) % 101) * 0x1p-12f; /* bits TF32 drops */
  for (int i = 0; i < K * N; i++) bb[i] = (float)((i * 53) % 17 - 8) * (1.0f + 0x1p-13f);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0;
      for (int k = 0; k < K; k++) acc += tir_round_tf32(a[i * K + k]) * tir_round_tf32(bb[k * N + j]);
      want[i * N + j] = acc;
    }
  tir_buffer *acc = tir_fragment_new(B, "acc", TIR_FRAG_ACC, 1), *fa = tir_fragment_new(B, "fa", TIR_FRAG_A, 1),
             *fb = tir_fragment_new(B, "fb", TIR_FRAG_B, 1);
  tir_var *bx = VAR("bx"), *ty = VAR("ty"), *tx = VAR("tx"), *kk = VAR("kk");
  tir_expr *row = MUL(V(ty), I(16 * K)), *z = I(0);
  tir_stmt *step = SEQ(tir_wmma_load(B, fa, z, A, ADD(row, MUL(V(kk), I(8))), K),
                       tir_wmma_load(B, fb, z, Bm, MUL(V(kk), I(8 * N)), N), tir_wmma_mma(B, acc, z, fa, z, fb, z));
  tir_stmt *body = SEQ(tir_wmma_fill(B, acc, z, 0), FOR(kk, 0, K / 8, step),
                       tir_wmma_store(B, acc, z, C, MUL(V(ty), I(16 * N)), N));
  tir_stmt *s = BX(bx, 1, TY(ty, 2, TX(tx, 32, tir_allocate(B, acc, tir_allocate(B, fa, tir_allocate(B, fb, body))))));
  tir_buffer *bufs[3] = {A, Bm, C};
  void *data[3] = {a, bb, c};
  CHECKF(run(&f, s, 3, bufs, data, 0) == 0, "%s", f.err.msg);
  int bad = 0, rounded = 0;
  for (int i = 0; i < M * N; i++) bad += c[i] != want[i];
  for (int i = 0; i < N; i++) { /* the fp32 product differs: the rounding happened */
    float x = 0;
    for (int k = 0; k < K; k++) x += a[k] * bb[k * N + i];
    rounded += x != c[i];
  }
  CHECK_INT(bad, 0);
  CHECK(rounded > 0);
  CHECK(tir_stmt_has_sync(step));
  /* divergent operands: each lane its own row of A */
  s = BX(bx, 1, TX(tx, 32, tir_allocate(B, fa, tir_wmma_load(B, fa, z, A, MUL(V(tx), I(8)), K))));
  CHECK(run(&f, s, 3, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "warp-collective wmma.load_a in divergent code: its memory index is 0 in thread (0,0,0) and 8 in thread (1,0,0)");
  s = BX(bx, 1, TX(tx, 32, tir_allocate(B, acc, tir_if(B, LT(V(tx), I(8)), tir_wmma_fill(B, acc, z, 0), NULL))));
  CHECK(run(&f, s, 3, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "barrier in divergent code: the condition of an if");
  s = BX(bx, 1, TX(tx, 48, tir_allocate(B, acc, tir_wmma_fill(B, acc, z, 0))));
  CHECK(run(&f, s, 3, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "wmma.fill in a block of 48 threads");
  /* two warps store their different tiles over each other between barriers */
  body = SEQ(tir_wmma_fill(B, acc, z, 0), FOR(kk, 0, K / 8, step), tir_wmma_store(B, acc, z, C, z, N));
  s = BX(bx, 1, TY(ty, 2, TX(tx, 32, tir_allocate(B, acc, tir_allocate(B, fa, tir_allocate(B, fb, body))))));
  CHECK(run(&f, s, 3, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "race between barriers");
  s = BX(bx, 1, TX(tx, 32, tir_allocate(B, acc, ST(C, V(tx), LD(acc, V(tx))))));
  CHECK(run(&f, s, 3, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "element-wise load of fragment buffer acc");
  CHECK(run(&f, tir_allocate(B, acc, tir_wmma_fill(B, acc, z, 0)), 3, bufs, data, 0) < 0);
  CHECK_CONTAINS(f.err.msg, "wmma outside the threads of a GPU launch");
  fx_done(&f);
}

int main(void) {
  test_elementwise();
  test_matmul();
  test_errors();
  test_global_and_reduce();
  test_partial_and_vector();
  test_cpu_unchanged();
  test_shuffle();
  test_wmma();
  return check_finish("test_gpu_emul");
}
