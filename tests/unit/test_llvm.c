/* test_llvm.c — the LLVM backend, end to end: loop IR built by hand with the
 * tir.h builder, compiled to host code, loaded through the ORC JIT and run.
 *
 * Most checks are differential against the TE interpreter (te/te_eval.c), the
 * single statement of what each operation means: every unary op, binary op and
 * cast, on every first-class dtype, over edge values (0, ±1, INT_MIN, -1
 * divisors, shift counts around the width, ±0, ±inf, NaN, saturation bounds...),
 * each compiled three ways — scalar loop, contiguous vectors (one vector
 * load/store) and reversed vectors (gather/scatter) — and compared bit for bit.
 * Math functions are also checked against libm in double (rtol 1e-3, atol 1e-5).
 * The float8 / float4 conversions are also checked code by code against
 * graphir/dtype.c (all 256 codes, and every midpoint between neighbours, in
 * scalar and vector form), and the cast op's compute definition (saturate,
 * float8e8m0 rounding modes) against hand-written expectations, interpreted
 * and compiled. Then hand-written kernels: a vectorized add with a tail, reductions through a
 * LOCAL accumulator, if_then_else guarding loads next to a PROT_NONE page (a
 * speculated load would crash), parallel loops run by a parallel_for that splits
 * into 3 chunks on threads (free variables, shared and per-task local buffers,
 * nesting, status propagation), the error paths, every named target's object,
 * a failed run-time check (TIR_FAIL: ctx->fail and the status, serially and from
 * parallel tasks), and the generic backend interface of targets/target.h. Last,
 * dot4 (dot4_cases.h) against a scalar reference and tir_eval, compiled for the
 * host (VPDPBUSD where it has AVX512-VNNI), with VNNI turned off (the generic
 * code) and, where the host has AVX-VNNI, for x86-64-v3 + avxvnni (the 256/128-bit
 * forms only); and some of them compiled to objects for every named target, the
 * aarch64 ones' IR and assembly checked for the dot-product instructions
 * (SDOT/UDOT with aarch64-dotprod, USDOT too with aarch64-i8mm, none with
 * aarch64; test_cross runs them under qemu-aarch64). */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check.h"
#include "interp.h"
#include "llvm_backend.h"
#include "lower.h"
#include "target.h"
#include "te_eval.h"
#include "dot4_cases.h"
#include "tir.h"
#include "tir_eval.h"

/* --- helpers --- */

typedef struct kit {
  gir_arena *arena;
  tir_builder b;
  tir_func *fns[256];
  int n;
} kit;

static kit *kit_new(void) {
  kit *k = calloc(1, sizeof *k);
  k->arena = gir_arena_new();
  tir_builder_init(&k->b, k->arena);
  return k;
}

static void kit_free(kit *k) {
  gir_arena_free(k->arena);
  free(k);
}

static tir_func *add_func(kit *k, const char *name, tir_buffer **params, int n, tir_stmt *body) {
  tir_func *f = gir_arena_alloc(k->arena, sizeof *f);
  f->name = gir_arena_strdup(k->arena, name);
  f->n_params = n;
  f->params = gir_arena_alloc(k->arena, sizeof(tir_buffer *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) f->params[i] = params[i];
  f->body = body;
  k->fns[k->n++] = f;
  return f;
}

/* The host with the portable lowerings of armv7 / riscv64 (integer float16
 * conversions, round-half-even without llvm.roundeven), so they run here too. */
static const tgt_llvm_options portable_host = {.opt_level = 3, .portable = 1};

/* Compiles every function of the kit for the host (opt NULL: as detected) and JITs it. */
static tgt_llvm_jit *kit_jit_with(kit *k, const tgt_llvm_options *opt, gir_err *err) {
  for (int i = 0; i < k->n; i++) {
    k->fns[i]->n_vars = k->b.next_var;
    k->fns[i]->n_buffers = k->b.next_buffer;
  }
  tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k->fns, k->n, opt, err);
  if (!m) return NULL;
  tgt_llvm_jit *j = tgt_llvm_jit_new(m, err);
  tgt_llvm_module_free(m);
  return j;
}

static tgt_llvm_jit *kit_jit(kit *k, gir_err *err) { return kit_jit_with(k, NULL, err); }

static kiln_kernel_fn must_lookup(tgt_llvm_jit *j, const char *name) {
  gir_err err = {0};
  kiln_kernel_fn fn = tgt_llvm_jit_lookup(j, name, &err);
  CHECKF(fn != NULL, "lookup %s: %s", name, err.msg);
  return fn;
}

static tir_expr *I(kit *k, int64_t v) { return tir_i64(&k->b, v); }
static tir_expr *V(kit *k, tir_var *v) { return tir_var_ref(&k->b, v); }
static tir_expr *add(kit *k, tir_expr *a, tir_expr *b) { return tir_bin(&k->b, TE_ADD, a, b); }
static tir_expr *mul(kit *k, tir_expr *a, tir_expr *b) { return tir_bin(&k->b, TE_MUL, a, b); }

static void *amalloc(size_t n) { /* 64-byte aligned, zeroed */
  size_t r = (n + 63) / 64 * 64;
  void *p = aligned_alloc(64, r ? r : 64);
  memset(p, 0, r ? r : 64);
  return p;
}

/* --- the test parallel_for: three chunks, each on its own thread --- */

typedef struct test_pool {
  atomic_int calls;
  int32_t rc; /* what parallel_for returns */
} test_pool;

typedef struct chunk {
  kiln_task_fn fn;
  void *closure;
  int64_t begin, end;
} chunk;

static void *run_chunk(void *arg) {
  chunk *c = arg;
  c->fn(c->closure, c->begin, c->end);
  return NULL;
}

static int32_t test_parallel_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) {
  test_pool *p = ctx->pool;
  atomic_fetch_add(&p->calls, 1);
  chunk cs[3];
  pthread_t th[3];
  int started[3] = {0};
  for (int i = 0; i < 3; i++) {
    cs[i] = (chunk){fn, closure, n * i / 3, n * (i + 1) / 3};
    if (cs[i].begin < cs[i].end) started[i] = pthread_create(&th[i], NULL, run_chunk, &cs[i]) == 0;
    if (cs[i].begin < cs[i].end && !started[i]) run_chunk(&cs[i]);
  }
  for (int i = 0; i < 3; i++)
    if (started[i]) pthread_join(th[i], NULL);
  return p->rc;
}

/* --- differential tests against the TE interpreter --- */

typedef enum dkind { D_UN, D_BIN, D_CAST } dkind;

static const gir_dtype all_dtypes[] = {GIR_F32,        GIR_F16,        GIR_BF16,   GIR_F64,    GIR_I8,     GIR_I16,
                                       GIR_I32,        GIR_I64,        GIR_U8,     GIR_U16,    GIR_U32,    GIR_U64,
                                       GIR_BOOL,       GIR_F8E4M3FN,   GIR_F8E4M3FNUZ, GIR_F8E5M2, GIR_F8E5M2FNUZ,
                                       GIR_F8E8M0,     GIR_F4E2M1,     GIR_I4,     GIR_U4,     GIR_I2,     GIR_U2};
enum { N_DTYPES = sizeof all_dtypes / sizeof all_dtypes[0] };

static gir_dtype out_dtype(dkind k, int op, gir_dtype in, gir_dtype cast_to) {
  if (k == D_CAST) return cast_to;
  if (k == D_UN) return op == TE_ISNAN || op == TE_ISINF ? GIR_BOOL : in;
  return op >= TE_EQ ? GIR_BOOL : in;
}

/* out[i] = op(A[i], B[i]) over n elements. mode 0: scalar loop; 1: vectors of
 * `lanes` at contiguous ramps; 2: vectors at reversed ramps (gather/scatter). */
static void elementwise(kit *k, const char *name, dkind kd, int op, gir_dtype in, gir_dtype cast_to, int64_t n,
                        int mode, int lanes) {
  tir_builder *b = &k->b;
  gir_dtype out = out_dtype(kd, op, in, cast_to);
  tir_buffer *A = tir_buffer_new(b, "A", in, n, TIR_GLOBAL, 0);
  tir_buffer *B = kd == D_BIN ? tir_buffer_new(b, "B", in, n, TIR_GLOBAL, 1) : NULL;
  tir_buffer *C = tir_buffer_new(b, "C", out, n, TIR_GLOBAL, kd == D_BIN ? 2 : 1);
  tir_var *i = tir_var_new(b, "i", GIR_I64);
  tir_expr *ix;
  int64_t ext = n;
  if (mode == 0) {
    ix = V(k, i);
  } else {
    ext = n / lanes;
    tir_expr *base = mode == 1 ? mul(k, V(k, i), I(k, lanes)) : tir_bin(b, TE_SUB, I(k, n - 1), mul(k, V(k, i), I(k, lanes)));
    ix = tir_ramp(b, base, I(k, mode == 1 ? 1 : -1), lanes);
  }
  tir_expr *x = tir_load(b, A, ix), *v;
  if (kd == D_UN) v = tir_un(b, op, x);
  else if (kd == D_BIN) v = tir_bin(b, op, x, tir_load(b, B, ix));
  else v = tir_cast(b, cast_to, x);
  tir_buffer *ps[3] = {A, B ? B : C, C};
  add_func(k, name, ps, kd == D_BIN ? 3 : 2, tir_for(b, i, I(k, 0), I(k, ext), TIR_SERIAL, tir_store(b, C, ix, v)));
}

static int te_reference(dkind kd, int op, gir_dtype in, gir_dtype cast_to, const void *a, const void *bv, int64_t n,
                        void *out, gir_err *err) {
  gir_arena *ar = gir_arena_new(), *scratch = gir_arena_new();
  te_ctx c;
  te_ctx_init(&c, ar, err);
  int64_t shape[1] = {n};
  te_tensor *A = te_placeholder(&c, "A", in, 1, shape);
  te_tensor *B = te_placeholder(&c, "B", in, 1, shape);
  te_var *ax[1];
  te_axes(&c, 1, shape, ax);
  te_expr *i = te_v(&c, ax[0]);
  te_expr *x = te_load(&c, A, &i), *body;
  if (kd == D_UN) body = te_un(&c, op, x);
  else if (kd == D_BIN) body = te_bin(&c, op, x, te_load(&c, B, &i));
  else body = te_cast(&c, cast_to, x);
  te_tensor *C = te_compute(&c, "C", out_dtype(kd, op, in, cast_to), 1, shape, ax, body);
  te_binding bind[2] = {{A, a}, {B, bv}};
  int rc = te_eval(&c, C, bind, kd == D_BIN ? 2 : 1, out, scratch, 0, err);
  gir_arena_free(ar);
  gir_arena_free(scratch);
  return rc;
}

/* Edge values of a dtype, as doubles (floats) or int64 (integers). */
static int float_values(double *v) {
  static const double fv[] = {0.0,  -0.0, 1.0,   -1.0,   0.5,    -0.5,  1.5,     2.5,    -2.5,   3.0,   -3.0,
                              7.25, 0.1,  1e-30, 1e-8,   65504., 65520, 1e5,     -1e5,   3.4e38, 1e300, -1e300,
                              127.7, 128.5, -129.5, 255.5, 256.5, 40000.7, 1e10, -1e10, 9.2233720368547758e18,
                              1.8446744073709552e19, 2e19, -9.3e18, 8388607.5, -4503599627370495.5, 0.49999997,
                              INFINITY, -INFINITY, NAN, -NAN};
  int n = (int)(sizeof fv / sizeof fv[0]);
  memcpy(v, fv, sizeof fv);
  return n;
}

static int int_values(gir_dtype t, int64_t *v) {
  int n = 0;
  static const int64_t base[] = {0, 1, -1, 2, -2, 3, -3, 5, -7, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100, -100, 127,
                                 128, 255, 256, 1000, -1000, 65535, 65536, 1ll << 40, ((1ll << 60) + (1ll << 36) + 1)};
  for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) v[n++] = base[i];
  int bits = gir_dtype_bits(t);
  if (t == GIR_BOOL) bits = 1;
  if (gir_dtype_is_signed(t)) {
    int64_t mn = bits == 64 ? INT64_MIN : -(1ll << (bits - 1)), mx = bits == 64 ? INT64_MAX : (1ll << (bits - 1)) - 1;
    v[n++] = mn, v[n++] = mn + 1, v[n++] = mx, v[n++] = mx - 1;
  } else {
    uint64_t mx = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    v[n++] = (int64_t)mx, v[n++] = (int64_t)(mx - 1), v[n++] = (int64_t)(mx >> 1), v[n++] = (int64_t)((mx >> 1) + 1);
  }
  return n;
}

/* Fills data[i] for i < n from the value list (wrapping/rounding as stores do). */
static void put(gir_dtype t, void *data, int64_t i, const double *fv, const int64_t *iv, int k) {
  if (gir_dtype_is_float(t)) gir_store_f64(t, data, i, fv[k]);
  else gir_store_i64(t, data, i, iv[k]);
}

static int same_value(gir_dtype t, const void *x, const void *y, int64_t i, double rtol, int zero_sign) {
  if (!gir_dtype_is_float(t)) return gir_load_i64(t, x, i) == gir_load_i64(t, y, i);
  double a = gir_load_f64(t, x, i), b = gir_load_f64(t, y, i);
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return !zero_sign || a != 0 || signbit(a) == signbit(b);
  if (isinf(a) || isinf(b)) return 0;
  return fabs(a - b) <= rtol * fabs(b);
}

/* One format ulp of relative tolerance for results that go through libm (float
 * versions in the kernel, double in the interpreter). */
static double libm_rtol(gir_dtype t) {
  switch (t) {
  case GIR_F16: return 1.0 / 1024;
  case GIR_BF16: return 1.0 / 128;
  case GIR_F32: return 1e-6;
  case GIR_F8E4M3FN: case GIR_F8E4M3FNUZ: return 1.0 / 8;
  case GIR_F8E5M2: case GIR_F8E5M2FNUZ: return 1.0 / 4;
  case GIR_F4E2M1: return 1.0 / 2;
  case GIR_F8E8M0: return 1.0; /* one step is a factor of 2 */
  default: return 1e-14;
  }
}

static int transcendental(int op) { return op >= TE_EXP && op <= TE_ERF && op != TE_SQRT; }

typedef struct dcase {
  dkind kd;
  int op;
  gir_dtype cast_to;
  char name[64];
} dcase;

/* All cases of one input dtype in one module; inputs built from the edge values
 * (pairs of them for binary ops), padded to a multiple of 8 lanes. */
static void differential(gir_dtype in, dcase *cases, int n_cases, const tgt_llvm_options *opt) {
  double fv[64];
  int64_t iv[64];
  int nv = gir_dtype_is_float(in) ? float_values(fv) : int_values(in, iv);
  int any_bin = 0;
  for (int c = 0; c < n_cases; c++) any_bin |= cases[c].kd == D_BIN;
  int64_t n = any_bin ? (int64_t)nv * nv : nv;
  n = (n + 7) / 8 * 8;
  size_t esz = 8;
  void *a = amalloc((size_t)n * esz), *b = amalloc((size_t)n * esz), *ua = amalloc((size_t)n * esz),
       *ref = amalloc((size_t)n * esz), *got = amalloc((size_t)n * esz);
  for (int64_t i = 0; i < n; i++) {
    int64_t p = i % ((int64_t)nv * nv);
    put(in, a, i, fv, iv, (int)(p / nv));
    put(in, b, i, fv, iv, (int)(p % nv));
    put(in, ua, i, fv, iv, (int)(i % nv));
  }
  static const int modes[3][2] = {{0, 1}, {1, 8}, {2, 4}};
  kit *k = kit_new();
  for (int c = 0; c < n_cases; c++)
    for (int m = 0; m < 3; m++) {
      char nm[96];
      snprintf(nm, sizeof nm, "%s_m%d", cases[c].name, m);
      elementwise(k, nm, cases[c].kd, cases[c].op, in, cases[c].cast_to, n, modes[m][0], modes[m][1]);
    }
  gir_err err = {0};
  tgt_llvm_jit *j = kit_jit_with(k, opt, &err);
  if (!CHECKF(j != NULL, "%s: %s", gir_dtype_name(in), err.msg)) goto done;
  for (int c = 0; c < n_cases; c++) {
    dcase *cs = &cases[c];
    gir_dtype out = out_dtype(cs->kd, cs->op, in, cs->cast_to);
    const void *x = cs->kd == D_BIN ? a : ua;
    gir_err e2 = {0};
    if (!CHECKF(te_reference(cs->kd, cs->op, in, cs->cast_to, x, b, n, ref, &e2) == 0, "%s: %s", cs->name, e2.msg))
      continue;
    double rtol = cs->kd == D_UN && transcendental(cs->op) ? libm_rtol(in)
                  : cs->kd == D_BIN && cs->op == TE_POW  ? libm_rtol(in)
                                                         : 0;
    int zero_sign = 1; /* min/max too: both pick b only when it is strictly smaller (larger) */
    for (int m = 0; m < 3; m++) {
      char nm[96];
      snprintf(nm, sizeof nm, "%s_m%d", cs->name, m);
      kiln_kernel_fn fn = must_lookup(j, nm);
      if (!fn) continue;
      memset(got, 0xa5, (size_t)n * esz);
      void *bufs[3] = {(void *)x, cs->kd == D_BIN ? b : got, got};
      CHECK_INT(fn(bufs, NULL), 0);
      int bad = 0;
      for (int64_t i = 0; i < n && bad < 3; i++)
        if (!same_value(out, got, ref, i, rtol, zero_sign)) {
          bad++;
          if (gir_dtype_is_float(in))
            CHECKF(0, "%s [%lld]: %s(%.17g, %.17g): got %.17g want %.17g", nm, (long long)i, cs->name,
                   gir_load_f64(in, x, i), gir_load_f64(in, b, i),
                   gir_dtype_is_float(out) ? gir_load_f64(out, got, i) : (double)gir_load_i64(out, got, i),
                   gir_dtype_is_float(out) ? gir_load_f64(out, ref, i) : (double)gir_load_i64(out, ref, i));
          else
            CHECKF(0, "%s [%lld]: %s(%lld, %lld): got %lld want %lld", nm, (long long)i, cs->name,
                   (long long)gir_load_i64(in, x, i), (long long)gir_load_i64(in, b, i),
                   gir_dtype_is_float(out) ? (long long)gir_load_f64(out, got, i) : (long long)gir_load_i64(out, got, i),
                   gir_dtype_is_float(out) ? (long long)gir_load_f64(out, ref, i) : (long long)gir_load_i64(out, ref, i));
        }
      if (!bad) CHECK(1);
    }
  }
done:
  tgt_llvm_jit_free(j);
  kit_free(k);
  free(a), free(b), free(ua), free(ref), free(got);
}

/* soft: with the portable lowerings, only what they touch: float16 and rounding.
 * opt: the target (NULL: the host as detected). */
static void test_differential(int soft, const tgt_llvm_options *opt) {
  for (int d = 0; d < N_DTYPES; d++) {
    gir_dtype t = all_dtypes[d];
    dcase cases[TE_UNOP_COUNT + TE_BINOP_COUNT + N_DTYPES];
    int n = 0;
    int all = !soft || t == GIR_F16;
    for (int op = 0; op < TE_UNOP_COUNT; op++) {
      if (!all && !(op == TE_ROUND && gir_dtype_is_float(t))) continue;
      cases[n] = (dcase){D_UN, op, GIR_DTYPE_NONE, ""};
      snprintf(cases[n].name, sizeof cases[n].name, "%s_%s", te_unop_name(op), gir_dtype_name(t));
      n++;
    }
    for (int op = 0; op < TE_BINOP_COUNT && all; op++) {
      if (gir_dtype_is_float(t) && op >= TE_AND && op <= TE_SHR) continue; /* never built on floats */
      cases[n] = (dcase){D_BIN, op, GIR_DTYPE_NONE, ""};
      snprintf(cases[n].name, sizeof cases[n].name, "%s_%s", te_binop_name(op), gir_dtype_name(t));
      n++;
    }
    for (int e = 0; e < N_DTYPES; e++) {
      if (all_dtypes[e] == t || (!all && all_dtypes[e] != GIR_F16)) continue;
      cases[n] = (dcase){D_CAST, 0, all_dtypes[e], ""};
      snprintf(cases[n].name, sizeof cases[n].name, "cast_%s_to_%s", gir_dtype_name(t), gir_dtype_name(all_dtypes[e]));
      n++;
    }
    differential(t, cases, n, soft ? &portable_host : opt);
  }
}

/* The differential test on every named target this machine can run (generic
 * x86-64, AVX2, AVX-512 and the host on an x86-64 host): LLVM picks other
 * instructions per feature level (float16 min/max lost NaN at x86-64-v3/v4 on
 * a CPU without AVX512-FP16), so each level must give the interpreter's results. */
static void test_differential_targets(void) {
  const char *const *names = tgt_llvm_target_names();
  int ran = 0;
  for (int i = 0; names[i]; i++) {
    char why[256];
    if (!tgt_llvm_target_runs_here(names[i], why, sizeof why)) {
      printf("test_llvm: differential on '%s' skipped: %s (covered by test_cross's objects)\n", names[i], why);
      continue;
    }
    tgt_llvm_options o;
    gir_err err = {{0}};
    if (!CHECK(tgt_llvm_named_target(names[i], &o, &err) == 0)) continue;
    int before = check_failed_;
    test_differential(0, &o);
    printf("test_llvm: differential on '%s': %s\n", names[i], check_failed_ == before ? "ok" : "FAILED");
    ran++;
  }
  CHECKF(ran >= 2, "the differential ran on %d targets; an x86-64 host runs at least host and x86_64", ran);
}

/* --- every unary op against libm in double: rtol 1e-3, atol 1e-5 --- */

static double ref_unop(int op, double x) {
  switch (op) {
  case TE_NEG: return -x;
  case TE_ABS: return fabs(x);
  case TE_EXP: return exp(x);
  case TE_LOG: return log(x);
  case TE_SQRT: return sqrt(x);
  case TE_SIN: return sin(x);
  case TE_COS: return cos(x);
  case TE_TAN: return tan(x);
  case TE_ASIN: return asin(x);
  case TE_ACOS: return acos(x);
  case TE_ATAN: return atan(x);
  case TE_SINH: return sinh(x);
  case TE_COSH: return cosh(x);
  case TE_ASINH: return asinh(x);
  case TE_ACOSH: return acosh(x);
  case TE_ATANH: return atanh(x);
  case TE_TANH: return tanh(x);
  case TE_ERF: return erf(x);
  case TE_FLOOR: return floor(x);
  case TE_CEIL: return ceil(x);
  case TE_ROUND: return nearbyint(x);
  case TE_TRUNC: return trunc(x);
  case TE_ISNAN: return isnan(x);
  case TE_ISINF: return isinf(x) != 0;
  default: return x; /* not / bitnot pass floats through */
  }
}

static void test_unops_libm(void) {
  static const double xs[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-30, -1e-30, 88.7, -88.7, 0.5, -0.5,
                              1.0, -1.0, 2.5, -2.5, 3.7, 0.999, 1e5, -103.9};
  enum { NX = sizeof xs / sizeof xs[0], N = 24 };
  static const gir_dtype ts[] = {GIR_F32, GIR_F64};
  for (int ti = 0; ti < 2; ti++) {
    gir_dtype t = ts[ti];
    kit *k = kit_new();
    for (int op = 0; op < TE_UNOP_COUNT; op++)
      for (int m = 0; m < 2; m++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s_%d", te_unop_name(op), m);
        elementwise(k, nm, D_UN, op, t, GIR_DTYPE_NONE, N, m, 4);
      }
    gir_err err = {0};
    tgt_llvm_jit *j = kit_jit(k, &err);
    if (CHECKF(j != NULL, "%s", err.msg)) {
      void *in = amalloc(N * 8), *out = amalloc(N * 8);
      for (int i = 0; i < N; i++) gir_store_f64(t, in, i, xs[i % NX]);
      for (int op = 0; op < TE_UNOP_COUNT; op++)
        for (int m = 0; m < 2; m++) {
          char nm[64];
          snprintf(nm, sizeof nm, "%s_%d", te_unop_name(op), m);
          kiln_kernel_fn fn = must_lookup(j, nm);
          if (!fn) continue;
          void *bufs[2] = {in, out};
          CHECK_INT(fn(bufs, NULL), 0);
          gir_dtype ot = op == TE_ISNAN || op == TE_ISINF ? GIR_BOOL : t;
          int bad = 0;
          for (int i = 0; i < N && !bad; i++) {
            double x = gir_load_f64(t, in, i);
            double want = ref_unop(op, x), got = gir_load_f64(ot, out, i);
            if (t == GIR_F32 && ot != GIR_BOOL) want = (float)want;
            int ok = isnan(want) ? isnan(got) : isinf(want) ? got == want : fabs(got - want) <= 1e-5 + 1e-3 * fabs(want);
            if (!transcendental(op) && !isnan(want)) ok = got == want && signbit(got) == signbit(want);
            if (!ok) bad = 1;
            CHECKF(ok, "%s %s(%.9g) = %.9g, libm says %.9g", gir_dtype_name(t), nm, x, got, want);
          }
        }
      free(in), free(out);
    }
    tgt_llvm_jit_free(j);
    kit_free(k);
  }
}

/* exp and erf of float32 vectors (llvm_vmath.c) over a dense sweep and the
 * specials, at 16, 8 and 4 lanes, on every x86-64 level this machine runs — the
 * AVX-512 levels scale exp's 2^n with VSCALEFPS and let a NaN flow through, the
 * others build 2^n from exponent bits and select the NaN back. exp over [-110, 95]:
 * within 2^-22 relative of exp in double where the result is normal, within one
 * subnormal step below that, 0 at -inf and for x < -104, +inf from 88.8 on. erf
 * over [-6, 6]: within 2e-7 absolute, within 4e-7 relative for |x| < 0.92 (x·P(x²)),
 * ±0 and ±1 exactly at ±0 and ±inf. NaN gives NaN. */
/* The function the vector-math sweep checks, in double. */
static double vmath_ref(int op, double x) { return op == TE_EXP ? exp(x) : op == TE_LOG ? log(x) : erf(x); }

static int vmath_ok(int op, float x, double got) {
  if (isnan(x)) return isnan(got);
  if (op == TE_EXP) {
    double want = exp((double)x);
    if ((float)want == INFINITY) return got == INFINITY;
    if (want >= FLT_MIN) return fabs(got - want) <= 2.0 * 0x1p-23 * want;
    return got >= 0 && fabs(got - want) <= 0x1p-149 + 2.0 * 0x1p-23 * want;
  }
  if (op == TE_LOG) {
    double want = log((double)x);
    if (x < 0) return isnan(got);
    if (x == 0 || isinf(x)) return got == want;
    return fabs(got - want) <= 2.0 * 0x1p-23 * fabs(want) + 0x1p-149;
  }
  double want = erf((double)x);
  if (x == 0 || isinf(x)) return got == want && signbit(got) == signbit(want);
  if (fabs(x) < 0.92) return fabs(got - want) <= 4e-7 * fabs(want) + 0x1p-149; /* a subnormal rounds */
  return fabs(got - want) <= 2e-7;
}

/* The x86-64 levels the vector-math checks run on, and a level's options when this
 * machine runs its code (1; else 0, a level it lacks skipped, a lookup that fails a
 * failed check). */
static const char *const vmath_levels[] = {"host", "x86_64", "x86_64-avx2", "x86_64-avx512"};
enum { N_VMATH_LEVELS = sizeof vmath_levels / sizeof vmath_levels[0] };

static int vmath_level(const char *level, tgt_llvm_options *o, gir_err *err) {
  char why[256];
  if (!tgt_llvm_target_runs_here(level, why, sizeof why)) return 0;
  return CHECK(tgt_llvm_named_target(level, o, err) == 0);
}

static void test_vmath_sweep(void) {
  enum { N = 4096 };
  const char *const *levels = vmath_levels;
  static const int lanes[] = {16, 8, 4}, ops[] = {TE_EXP, TE_ERF, TE_LOG};
  enum { NOPS = sizeof ops / sizeof ops[0] };
  int ran = 0;
  for (size_t li = 0; li < N_VMATH_LEVELS; li++) {
    tgt_llvm_options o;
    gir_err err = {{0}};
    if (!vmath_level(levels[li], &o, &err)) continue;
    kit *k = kit_new();
    for (int oi = 0; oi < NOPS; oi++)
      for (size_t w = 0; w < sizeof lanes / sizeof lanes[0]; w++) {
        char nm[32];
        snprintf(nm, sizeof nm, "%s_%d", te_unop_name(ops[oi]), lanes[w]);
        elementwise(k, nm, D_UN, ops[oi], GIR_F32, GIR_DTYPE_NONE, N, 1, lanes[w]);
      }
    tgt_llvm_jit *j = kit_jit_with(k, &o, &err);
    if (CHECKF(j != NULL, "%s", err.msg)) {
      float *in = amalloc(N * 4), *out = amalloc(N * 4);
      static const float sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 88.72283f, 88.72284f, 89.0f, 1e5f,
                                 -87.33654f, -103.97208f, -104.0f, -150.0f, 1e-30f, -1e-30f, 0.921875f, -0.921875f,
                                 0.92187494f, 3.9375f, -3.9375f, 1e-45f};
      enum { NS = sizeof sp / sizeof sp[0] };
      for (int oi = 0; oi < NOPS; oi++) {
        /* exp over [-110, 95], erf over [-6, 6]; log over every binade from the smallest
         * subnormal to the largest float, then [0.25, 4] finely (the branch at
         * sqrt(1/2), results near 0 around 1) */
        float lo = ops[oi] == TE_EXP ? -110.0f : -6.0f, span = ops[oi] == TE_EXP ? 205.0f : 12.0f;
        for (int i = 0; i < N; i++)
          in[i] = i < NS                 ? sp[i]
                  : ops[oi] != TE_LOG    ? lo + span * (float)(i - NS) / (float)(N - NS)
                  : i < N / 2            ? exp2f(-149.0f + 276.9f * (float)(i - NS) / (float)(N / 2 - NS))
                                         : 0.25f + 3.75f * (float)(i - N / 2) / (float)(N / 2);
        for (size_t w = 0; w < sizeof lanes / sizeof lanes[0]; w++) {
          char nm[32];
          snprintf(nm, sizeof nm, "%s_%d", te_unop_name(ops[oi]), lanes[w]);
          kiln_kernel_fn fn = must_lookup(j, nm);
          if (!fn) continue;
          void *bufs[2] = {in, out};
          CHECK_INT(fn(bufs, NULL), 0);
          int bad = 0;
          for (int i = 0; i < N && !bad; i++) {
            int ok = vmath_ok(ops[oi], in[i], out[i]);
            if (!ok) bad = 1;
            CHECKF(ok, "%s, %d lanes: %s(%.9g) = %.9g, in double %.9g", levels[li], lanes[w], te_unop_name(ops[oi]),
                   in[i], out[i], vmath_ref(ops[oi], in[i]));
          }
        }
      }
      free(in), free(out);
      ran++;
    }
    tgt_llvm_jit_free(j);
    kit_free(k);
  }
  CHECKF(ran >= 2, "the vector math sweep ran on %d x86-64 levels (an x86-64 host runs at least host and x86_64)", ran);
}

/* exp(-|x|), the form sigmoid and softplus take exp of, goes through the exp of a
 * non-positive argument (llvm_vmath.c: 2^n from the rounding's low bits, no clamp
 * above); it must give bit for bit what the general exp gives for -|x| — over [-110, 0]
 * densely, the subnormal results below -87.3 and the zeros below -104 included, and the
 * specials — at 16, 8 and 4 lanes on every x86-64 level this machine runs. */
static void test_vexp_nonpos(void) {
  enum { N = 8192 };
  const char *const *levels = vmath_levels;
  static const int lanes[] = {16, 8, 4};
  int ran = 0;
  for (size_t li = 0; li < N_VMATH_LEVELS; li++) {
    tgt_llvm_options o;
    gir_err err = {{0}};
    if (!vmath_level(levels[li], &o, &err)) continue;
    kit *k = kit_new();
    tir_builder *b = &k->b;
    for (size_t w = 0; w < sizeof lanes / sizeof lanes[0]; w++)
      for (int neg_abs = 0; neg_abs < 2; neg_abs++) {
        tir_buffer *A = tir_buffer_new(b, "A", GIR_F32, N, TIR_GLOBAL, 0), *C = tir_buffer_new(b, "C", GIR_F32, N, TIR_GLOBAL, 1);
        tir_var *i = tir_var_new(b, "i", GIR_I64);
        tir_expr *ix = tir_ramp(b, mul(k, V(k, i), I(k, lanes[w])), I(k, 1), lanes[w]), *x = tir_load(b, A, ix);
        if (neg_abs) x = tir_un(b, TE_NEG, tir_un(b, TE_ABS, x));
        char nm[32];
        snprintf(nm, sizeof nm, "%s_%d", neg_abs ? "expna" : "exp", lanes[w]);
        tir_buffer *ps[2] = {A, C};
        add_func(k, nm, ps, 2, tir_for(b, i, I(k, 0), I(k, N / lanes[w]), TIR_SERIAL, tir_store(b, C, ix, tir_un(b, TE_EXP, x))));
      }
    tgt_llvm_jit *j = kit_jit_with(k, &o, &err);
    if (CHECKF(j != NULL, "%s", err.msg)) {
      float *in = amalloc(N * 4), *neg = amalloc(N * 4), *got = amalloc(N * 4), *want = amalloc(N * 4);
      static const float sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, -87.33654f, -87.3366f, -103.97208f,
                                 -104.0f, -104.00001f, -150.0f, 1e-30f, -1e-30f, 1e-45f, 3e38f};
      enum { NS = sizeof sp / sizeof sp[0] };
      for (int i = 0; i < N; i++) {
        in[i] = i < NS ? sp[i] : -110.0f + 220.0f * (float)(i - NS) / (float)(N - NS);
        neg[i] = -fabsf(in[i]);
      }
      for (size_t w = 0; w < sizeof lanes / sizeof lanes[0]; w++) {
        char na[32], ne[32];
        snprintf(na, sizeof na, "expna_%d", lanes[w]);
        snprintf(ne, sizeof ne, "exp_%d", lanes[w]);
        kiln_kernel_fn fa = must_lookup(j, na), fe = must_lookup(j, ne);
        if (!fa || !fe) continue;
        void *ba[2] = {in, got}, *be[2] = {neg, want};
        CHECK_INT(fa(ba, NULL), 0);
        CHECK_INT(fe(be, NULL), 0);
        int bad = 0;
        for (int i = 0; i < N && !bad; i++) {
          uint32_t g, e;
          memcpy(&g, &got[i], 4), memcpy(&e, &want[i], 4);
          bad = isnan(want[i]) ? !isnan(got[i]) : g != e;
          CHECKF(!bad, "%s, %d lanes: exp(-|%.9g|) = %.9g (0x%08x), the general exp %.9g (0x%08x)", levels[li],
                 lanes[w], in[i], got[i], g, want[i], e);
        }
      }
      free(in), free(neg), free(got), free(want);
      ran++;
    }
    tgt_llvm_jit_free(j);
    kit_free(k);
  }
  CHECKF(ran >= 2, "the exp(-|x|) check ran on %d x86-64 levels", ran);
}

/* --- hand-written kernels --- */

/* C = A + B over n floats: 16-wide vectors, then a scalar tail. */
static void test_vector_add(void) {
  enum { N = 1000 };
  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *A = tir_buffer_new(b, "A", GIR_F32, N, TIR_GLOBAL, 0), *B = tir_buffer_new(b, "B", GIR_F32, N, TIR_GLOBAL, 1),
             *C = tir_buffer_new(b, "C", GIR_F32, N, TIR_GLOBAL, 2);
  tir_var *io = tir_var_new(b, "io", GIR_I64), *ii = tir_var_new(b, "ii", GIR_I64), *t = tir_var_new(b, "t", GIR_I64);
  tir_expr *ix = tir_ramp(b, mul(k, V(k, io), I(k, 16)), I(k, 1), 16);
  tir_stmt *vec = tir_for(b, io, I(k, 0), I(k, N / 16), TIR_SERIAL,
                          tir_store(b, C, ix, add(k, tir_load(b, A, ix), tir_load(b, B, ix))));
  /* the tail as a VECTORIZED loop the target may run serially */
  tir_stmt *tail = tir_for(b, t, I(k, N / 16 * 16), I(k, N % 16), TIR_VECTORIZED,
                           tir_store(b, C, V(k, t), add(k, tir_load(b, A, V(k, t)), tir_load(b, B, V(k, t)))));
  tir_buffer *ps[3] = {A, B, C};
  add_func(k, "vadd", ps, 3, tir_seq2(b, vec, tail));
  /* scalar version with an unrolled inner loop of 4 */
  tir_var *o2 = tir_var_new(b, "o", GIR_I64);
  tir_expr *sx = add(k, mul(k, V(k, o2), I(k, 4)), V(k, ii));
  tir_stmt *un = tir_for(b, ii, I(k, 0), I(k, 4), TIR_UNROLLED,
                         tir_store(b, C, sx, add(k, tir_load(b, A, sx), tir_load(b, B, sx))));
  add_func(k, "sadd", ps, 3, tir_for(b, o2, I(k, 0), I(k, N / 4), TIR_SERIAL, un));

  for (int i = 0; i < k->n; i++) k->fns[i]->n_vars = b->next_var, k->fns[i]->n_buffers = b->next_buffer;
  gir_err err = {0};
  tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k->fns, k->n, NULL, &err);
  if (!CHECKF(m != NULL, "%s", err.msg)) return kit_free(k);
  char *ir = NULL, *as = NULL;
  size_t n_ir = 0, n_as = 0;
  CHECK(tgt_llvm_ir_string(m, &ir, &n_ir, &err) == 0);
  CHECK(tgt_llvm_asm_string(m, &as, &n_as, &err) == 0);
  if (ir) {
    CHECK_CONTAINS(ir, "i32 @vadd(ptr");
    CHECK_CONTAINS(ir, "<16 x float>");
    CHECK_CONTAINS(ir, "!noalias"); /* the region's noalias parameters survive inlining as scopes */
    CHECK(strlen(ir) == n_ir);
  }
  if (as) CHECK_CONTAINS(as, "vadd:");
  free(ir);
  free(as);
  tgt_llvm_jit *j = tgt_llvm_jit_new(m, &err);
  tgt_llvm_module_free(m); /* the JIT keeps its own copy of the code */
  if (CHECKF(j != NULL, "%s", err.msg)) {
    float *a = amalloc(N * 4), *bb = amalloc(N * 4), *c = amalloc(N * 4);
    for (int i = 0; i < N; i++) a[i] = (float)i * 0.5f, bb[i] = 1000.0f - (float)i * 0.25f;
    const char *names[2] = {"vadd", "sadd"};
    for (int f = 0; f < 2; f++) {
      kiln_kernel_fn fn = must_lookup(j, names[f]);
      if (!fn) continue;
      memset(c, 0, N * 4);
      void *bufs[3] = {a, bb, c};
      CHECK_INT(fn(bufs, NULL), 0);
      int bad = 0;
      for (int i = 0; i < N; i++) bad += c[i] != a[i] + bb[i];
      CHECKF(bad == 0, "%s: %d wrong elements", names[f], bad);
    }
    free(a), free(bb), free(c);
  }
  tgt_llvm_jit_free(j);
  kit_free(k);
}

/* Requantization's float → 8-bit cast of a clamped, rounded value (a quantized
 * model's epilogue): lowered through int32 when the clamps bound it (one vector
 * conversion, not one per lane); NaN still gives 0, halves round to even, and the
 * result equals the unclamped path's and tir_eval's. Also -1 → u8 wraps to 255 and
 * a clamp outside the int32 range keeps the int64 path. */
static void test_clamped_casts(void) {
  enum { N = 64 };
  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *X = tir_buffer_new(b, "X", GIR_F32, N, TIR_GLOBAL, 0), *Y = tir_buffer_new(b, "Y", GIR_U8, N, TIR_GLOBAL, 1),
             *Z = tir_buffer_new(b, "Z", GIR_I8, N, TIR_GLOBAL, 2), *W = tir_buffer_new(b, "W", GIR_I32, N, TIR_GLOBAL, 3);
  tir_var *io = tir_var_new(b, "io", GIR_I64);
  tir_expr *ix = tir_ramp(b, mul(k, V(k, io), I(k, 16)), I(k, 1), 16);
  tir_expr *x = tir_load(b, X, ix);
#define FB(v) tir_broadcast(b, tir_float(b, GIR_F32, v), 16)
  tir_expr *q = tir_bin(b, TE_MIN, tir_bin(b, TE_MAX, tir_un(b, TE_ROUND, x), FB(-1)), FB(255));
  tir_expr *sq = tir_bin(b, TE_MAX, tir_bin(b, TE_MIN, tir_un(b, TE_ROUND, x), FB(127)), FB(-128));
  tir_expr *big = tir_bin(b, TE_MIN, tir_bin(b, TE_MAX, x, FB(-1e12)), FB(1e12)); /* beyond int32: int64 path */
#undef FB
  tir_stmt *st[3] = {tir_store(b, Y, ix, tir_cast(b, GIR_U8, q)), tir_store(b, Z, ix, tir_cast(b, GIR_I8, sq)),
                     tir_store(b, W, ix, tir_cast(b, GIR_I32, big))};
  tir_buffer *ps[4] = {X, Y, Z, W};
  add_func(k, "qcast", ps, 4, tir_for(b, io, I(k, 0), I(k, N / 16), TIR_SERIAL, tir_seq(b, st, 3)));
  for (int i = 0; i < k->n; i++) k->fns[i]->n_vars = b->next_var, k->fns[i]->n_buffers = b->next_buffer;
  gir_err err = {0};
  tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k->fns, k->n, NULL, &err);
  if (!CHECKF(m != NULL, "%s", err.msg)) return kit_free(k);
  char *ir = NULL;
  size_t n_ir = 0;
  if (CHECK(tgt_llvm_ir_string(m, &ir, &n_ir, &err) == 0) && ir) {
    CHECK_CONTAINS(ir, "fptosi <16 x float>"); /* the clamped casts: one vector conversion */
    CHECK_CONTAINS(ir, "llvm.fptosi.sat.v16i64"); /* the int64 path for the wide clamp */
  }
  free(ir);
  tgt_llvm_jit *j = tgt_llvm_jit_new(m, &err);
  tgt_llvm_module_free(m);
  if (CHECKF(j != NULL, "%s", err.msg)) {
    float *xs = amalloc(N * 4);
    uint8_t *y = amalloc(N), *ye = amalloc(N);
    int8_t *z = amalloc(N), *ze = amalloc(N);
    int32_t *w = amalloc(N * 4), *we = amalloc(N * 4);
    for (int i = 0; i < N; i++) xs[i] = (float)(i - 20) * 4.5f + 0.5f; /* halves: round to even */
    xs[0] = NAN, xs[1] = INFINITY, xs[2] = -INFINITY, xs[3] = 3e9f, xs[4] = -3e9f, xs[5] = -1.5f, xs[6] = 254.5f;
    kiln_kernel_fn fn = must_lookup(j, "qcast");
    if (fn) {
      void *bufs[4] = {xs, y, z, w}, *ebufs[4] = {xs, ye, ze, we};
      CHECK_INT(fn(bufs, NULL), 0);
      CHECK(tir_eval_func(k->fns[0], ebufs, k->arena, 0, &err) == 0);
      CHECK(memcmp(y, ye, N) == 0 && memcmp(z, ze, N) == 0 && memcmp(w, we, N * 4) == 0);
      CHECK_INT(y[0], 0);   /* NaN */
      CHECK_INT(y[1], 255); /* +inf clamped */
      CHECK_INT(y[2], 255); /* -inf clamped to -1, wrapped */
      CHECK_INT(y[5], 255); /* round(-1.5) = -2, clamped to -1, wrapped */
      CHECK_INT(y[6], 254); /* 254.5 rounds to even */
    }
    free(xs), free(y), free(ye), free(z), free(ze), free(w), free(we);
  }
  tgt_llvm_jit_free(j);
  kit_free(k);
}

/* Row sums through a LOCAL scalar accumulator, an 8-lane LOCAL accumulator,
 * and a dot product whose multiply-add may contract into FMA. */
static void test_reductions(void) {
  enum { R = 7, K = 40 };
  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *A = tir_buffer_new(b, "A", GIR_F32, R * K, TIR_GLOBAL, 0);
  tir_buffer *W = tir_buffer_new(b, "W", GIR_F32, K, TIR_GLOBAL, 1);
  tir_buffer *O = tir_buffer_new(b, "O", GIR_F32, R, TIR_GLOBAL, 2);
  tir_buffer *ps[3] = {A, W, O};
  for (int variant = 0; variant < 3; variant++) {
    tir_var *r = tir_var_new(b, "r", GIR_I64), *kk = tir_var_new(b, "k", GIR_I64), *j = tir_var_new(b, "j", GIR_I64);
    tir_expr *z = tir_float(b, GIR_F32, 0);
    tir_stmt *body;
    if (variant != 1) {
      tir_buffer *acc = tir_buffer_new(b, "acc", GIR_F32, 1, TIR_LOCAL, -1);
      tir_expr *x = tir_load(b, A, add(k, mul(k, V(k, r), I(k, K)), V(k, kk)));
      if (variant == 2) x = mul(k, x, tir_load(b, W, V(k, kk)));
      tir_stmt *s[3] = {tir_store(b, acc, I(k, 0), z),
                        tir_for(b, kk, I(k, 0), I(k, K), TIR_SERIAL,
                                tir_store(b, acc, I(k, 0), add(k, tir_load(b, acc, I(k, 0)), x))),
                        tir_store(b, O, V(k, r), tir_load(b, acc, I(k, 0)))};
      body = tir_allocate(b, acc, tir_seq(b, s, 3));
    } else {
      tir_buffer *acc = tir_buffer_new(b, "vacc", GIR_F32, 8, TIR_LOCAL, -1);
      tir_buffer *sum = tir_buffer_new(b, "sum", GIR_F32, 1, TIR_LOCAL, -1);
      tir_expr *lanes = tir_ramp(b, I(k, 0), I(k, 1), 8);
      tir_expr *src = tir_ramp(b, add(k, mul(k, V(k, r), I(k, K)), mul(k, V(k, kk), I(k, 8))), I(k, 1), 8);
      tir_stmt *s[5] = {
          tir_store(b, acc, lanes, tir_broadcast(b, z, 8)),
          tir_for(b, kk, I(k, 0), I(k, K / 8), TIR_SERIAL,
                  tir_store(b, acc, lanes, add(k, tir_load(b, acc, lanes), tir_load(b, A, src)))),
          tir_store(b, sum, I(k, 0), z),
          tir_for(b, j, I(k, 0), I(k, 8), TIR_UNROLLED,
                  tir_store(b, sum, I(k, 0), add(k, tir_load(b, sum, I(k, 0)), tir_load(b, acc, V(k, j))))),
          tir_store(b, O, V(k, r), tir_load(b, sum, I(k, 0)))};
      body = tir_allocate(b, acc, tir_allocate(b, sum, tir_seq(b, s, 5)));
    }
    char nm[16];
    snprintf(nm, sizeof nm, "red%d", variant);
    add_func(k, nm, ps, 3, tir_for(b, r, I(k, 0), I(k, R), TIR_SERIAL, body));
  }
  gir_err err = {0};
  tgt_llvm_jit *jit = kit_jit(k, &err);
  if (CHECKF(jit != NULL, "%s", err.msg)) {
    float *a = amalloc(R * K * 4), *w = amalloc(K * 4), *o = amalloc(R * 4);
    for (int i = 0; i < R * K; i++) a[i] = (float)((i * 37) % 101) / 7.0f - 5.0f;
    for (int i = 0; i < K; i++) w[i] = (float)((i * 13) % 17) / 3.0f - 2.0f;
    for (int v = 0; v < 3; v++) {
      char nm[16];
      snprintf(nm, sizeof nm, "red%d", v);
      kiln_kernel_fn fn = must_lookup(jit, nm);
      if (!fn) continue;
      void *bufs[3] = {a, w, o};
      CHECK_INT(fn(bufs, NULL), 0);
      for (int r = 0; r < R; r++) {
        float want = 0;
        if (v == 1) {
          float lanes[8] = {0};
          for (int kk = 0; kk < K / 8; kk++)
            for (int l = 0; l < 8; l++) lanes[l] += a[r * K + kk * 8 + l];
          for (int l = 0; l < 8; l++) want += lanes[l];
        } else {
          for (int kk = 0; kk < K; kk++) want += v == 2 ? a[r * K + kk] * w[kk] : a[r * K + kk];
        }
        if (v == 2) CHECKF(fabsf(o[r] - want) <= 1e-4f * (1 + fabsf(want)), "dot row %d: %g vs %g", r, o[r], want);
        else CHECKF(o[r] == want, "%s row %d: %.9g vs %.9g", nm, r, o[r], want);
      }
    }
    free(a), free(w), free(o);
  }
  tgt_llvm_jit_free(jit);
  kit_free(k);
}

/* if_then_else and if guarding loads of a buffer that ends where a PROT_NONE page
 * begins: evaluating the untaken side would fault. */
/* --- TIR_FAIL: a failed run-time check reaches ctx->fail and the status --- */

typedef struct fail_log {
  kiln_ctx ctx; /* first: the kernel gets &log->ctx */
  atomic_int calls;
  int32_t check;
  int64_t value, lo, hi;
} fail_log;

static void record_fail(const kiln_ctx *ctx, int32_t check, int64_t value, int64_t lo, int64_t hi) {
  fail_log *l = (fail_log *)(void *)ctx;
  if (atomic_fetch_add(&l->calls, 1) == 0) l->check = check, l->value = value, l->lo = lo, l->hi = hi;
}

static void test_failed_checks(void) {
  enum { N = 12 };
  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *A = tir_buffer_new(b, "idx", GIR_I32, N, TIR_GLOBAL, 0);
  tir_buffer *ps[1] = {A};
  tir_stmt *bodies[2];
  for (int par = 0; par < 2; par++) { /* if idx[i] >= 10: fail(3, idx[i], -10, 10), serially and in a parallel loop */
    tir_var *i = tir_var_new(b, "i", GIR_I64);
    tir_expr *v = tir_cast(b, GIR_I64, tir_load(b, A, V(k, i)));
    tir_stmt *f = tir_fail(b, 3, v, I(k, -10), I(k, 10));
    bodies[par] = tir_for(b, i, I(k, 0), I(k, N), par ? TIR_PARALLEL : TIR_SERIAL,
                          tir_if(b, tir_bin(b, TE_GE, v, I(k, 10)), f, NULL));
  }
  tir_func *fs = add_func(k, "check_s", ps, 1, bodies[0]);
  add_func(k, "check_p", ps, 1, bodies[1]);
  gir_err err = {0};
  tgt_llvm_jit *j = kit_jit(k, &err);
  if (!CHECKF(j != NULL, "%s", err.msg)) goto done;
  int32_t *idx = amalloc(N * sizeof *idx);
  for (int i = 0; i < N; i++) idx[i] = i % 10;
  void *bufs[1] = {idx};
  test_pool pool = {.rc = 0};
  for (int par = 0; par < 2; par++) {
    kiln_kernel_fn fn = must_lookup(j, par ? "check_p" : "check_s");
    if (!fn) continue;
    fail_log log = {.ctx = {.parallel_for = test_parallel_for, .pool = &pool, .fail = record_fail}};
    idx[7] = 7;
    CHECK_INT(fn(bufs, &log.ctx), 0); /* every index valid: no report, status 0 */
    CHECK_INT(atomic_load(&log.calls), 0);
    idx[7] = 12;
    CHECK_INT(fn(bufs, &log.ctx), 1);
    CHECK_INT(atomic_load(&log.calls), 1);
    CHECK_INT(log.check, 3);
    CHECK_INT(log.value, 12);
    CHECK_INT(log.lo, -10);
    CHECK_INT(log.hi, 10);
    if (!par) { /* no ctx, or a ctx without fail: the status alone */
      CHECK_INT(fn(bufs, NULL), 1);
      kiln_ctx bare = {0};
      CHECK_INT(fn(bufs, &bare), 1);
    }
  }
  /* the loop-IR interpreter stops at the failed check with its numbers */
  fs->n_vars = b->next_var;
  fs->n_buffers = b->next_buffer;
  gir_err ie = {0};
  CHECK(tir_eval_func(fs, bufs, k->arena, 0, &ie) < 0);
  CHECK_CONTAINS(ie.msg, "check 3 failed: 12 is outside [-10, 10)");
  free(idx);
done:
  tgt_llvm_jit_free(j);
  kit_free(k);
}

static void test_guarded_loads(void) {
  enum { NIN = 100, NOUT = 128 };
  long page = sysconf(_SC_PAGESIZE);
  char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!CHECK(map != MAP_FAILED)) return;
  CHECK(mprotect(map + page, (size_t)page, PROT_NONE) == 0);
  float *in = (float *)(map + page) - NIN; /* in[NIN] is the first byte of the guard page */
  for (int i = 0; i < NIN; i++) in[i] = (float)i + 0.5f;

  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *A = tir_buffer_new(b, "in", GIR_F32, NIN, TIR_GLOBAL, 0);
  A->align = 16;
  tir_buffer *O = tir_buffer_new(b, "out", GIR_F32, NOUT, TIR_GLOBAL, 1);
  tir_buffer *ps[2] = {A, O};
  tir_expr *m1 = tir_float(b, GIR_F32, -1);
  { /* scalar: out[i] = i < NIN ? in[i] : -1, and the mirrored form */
    tir_var *i = tir_var_new(b, "i", GIR_I64);
    tir_expr *c = tir_bin(b, TE_LT, V(k, i), I(k, NIN));
    add_func(k, "ite_s", ps, 2,
             tir_for(b, i, I(k, 0), I(k, NOUT), TIR_SERIAL,
                     tir_store(b, O, V(k, i), tir_if_then_else(b, c, tir_load(b, A, V(k, i)), m1))));
    tir_var *i2 = tir_var_new(b, "i", GIR_I64);
    tir_expr *c2 = tir_bin(b, TE_GE, V(k, i2), I(k, NIN));
    add_func(k, "ite_s2", ps, 2,
             tir_for(b, i2, I(k, 0), I(k, NOUT), TIR_SERIAL,
                     tir_store(b, O, V(k, i2), tir_if_then_else(b, c2, m1, tir_load(b, A, V(k, i2))))));
  }
  { /* 16 lanes with a vector condition: all-true, mixed (96..111) and all-false blocks */
    tir_var *io = tir_var_new(b, "io", GIR_I64);
    tir_expr *ix = tir_ramp(b, mul(k, V(k, io), I(k, 16)), I(k, 1), 16);
    tir_expr *c = tir_bin(b, TE_LT, ix, tir_broadcast(b, I(k, NIN), 16));
    tir_expr *v = tir_if_then_else(b, c, tir_load(b, A, ix), tir_broadcast(b, m1, 16));
    add_func(k, "ite_v", ps, 2, tir_for(b, io, I(k, 0), I(k, NOUT / 16), TIR_SERIAL, tir_store(b, O, ix, v)));
  }
  { /* 4 lanes with a scalar condition */
    tir_var *io = tir_var_new(b, "io", GIR_I64);
    tir_expr *ix = tir_ramp(b, mul(k, V(k, io), I(k, 4)), I(k, 1), 4);
    tir_expr *c = tir_bin(b, TE_LT, mul(k, V(k, io), I(k, 4)), I(k, NIN));
    tir_expr *v = tir_if_then_else(b, c, tir_load(b, A, ix), tir_broadcast(b, m1, 4));
    add_func(k, "ite_vs", ps, 2, tir_for(b, io, I(k, 0), I(k, NOUT / 4), TIR_SERIAL, tir_store(b, O, ix, v)));
  }
  { /* 8 lanes at stride 2 under a vector condition: a masked load of the span (the
     * lanes at and past in[NIN], on the guard page, never touched) */
    tir_var *io = tir_var_new(b, "io", GIR_I64);
    tir_expr *ix = tir_ramp(b, mul(k, V(k, io), I(k, 16)), I(k, 2), 8);
    tir_expr *c = tir_bin(b, TE_LT, ix, tir_broadcast(b, I(k, NIN), 8));
    tir_expr *v = tir_if_then_else(b, c, tir_load(b, A, ix), tir_broadcast(b, m1, 8));
    tir_expr *ox = tir_ramp(b, mul(k, V(k, io), I(k, 8)), I(k, 1), 8);
    add_func(k, "ite_v2", ps, 2, tir_for(b, io, I(k, 0), I(k, NOUT / 16), TIR_SERIAL, tir_store(b, O, ox, v)));
  }
  { /* a lane pattern base + (l / 4)·8 + l % 4 (a fused pixel × 4-channel lane at stride
     * 2) ending at in[NIN - 1]: its span loaded once, masked to the lanes used */
    tir_expr *l = tir_ramp(b, I(k, 0), I(k, 1), 8);
    tir_expr *pat = add(k, mul(k, tir_bin(b, TE_DIV, l, tir_broadcast(b, I(k, 4), 8)), tir_broadcast(b, I(k, 8), 8)),
                        tir_bin(b, TE_MOD, l, tir_broadcast(b, I(k, 4), 8)));
    tir_expr *ix = add(k, tir_broadcast(b, I(k, NIN - 12), 8), pat);
    add_func(k, "span", ps, 2, tir_store(b, O, tir_ramp(b, I(k, 0), I(k, 1), 8), tir_load(b, A, ix)));
  }
  { /* an if statement with an else */
    tir_var *i = tir_var_new(b, "i", GIR_I64);
    tir_stmt *s = tir_if(b, tir_bin(b, TE_LT, V(k, i), I(k, NIN)), tir_store(b, O, V(k, i), tir_load(b, A, V(k, i))),
                         tir_store(b, O, V(k, i), m1));
    add_func(k, "if_s", ps, 2, tir_for(b, i, I(k, 0), I(k, NOUT), TIR_SERIAL, s));
  }
  gir_err err = {0};
  tgt_llvm_jit *j = kit_jit(k, &err);
  if (CHECKF(j != NULL, "%s", err.msg)) {
    float *out = amalloc(NOUT * 4);
    const char *names[] = {"ite_s", "ite_s2", "ite_v", "ite_vs", "if_s"};
    kiln_kernel_fn f2 = must_lookup(j, "ite_v2"), fs = must_lookup(j, "span");
    if (f2) {
      memset(out, 0, NOUT * 4);
      void *bufs[2] = {in, out};
      CHECK_INT(f2(bufs, NULL), 0);
      int bad = 0;
      for (int i = 0; i < NOUT / 2; i++) bad += out[i] != (2 * i < NIN ? (float)(2 * i) + 0.5f : -1.0f);
      CHECKF(bad == 0, "ite_v2: %d wrong", bad);
    }
    if (fs) {
      memset(out, 0, NOUT * 4);
      void *bufs[2] = {in, out};
      CHECK_INT(fs(bufs, NULL), 0);
      int bad = 0;
      for (int i = 0; i < 8; i++) bad += out[i] != (float)(NIN - 12 + i / 4 * 8 + i % 4) + 0.5f;
      CHECKF(bad == 0, "span: %d wrong", bad);
    }
    for (int f = 0; f < 5; f++) {
      kiln_kernel_fn fn = must_lookup(j, names[f]);
      if (!fn) continue;
      memset(out, 0, NOUT * 4);
      void *bufs[2] = {in, out};
      CHECK_INT(fn(bufs, NULL), 0);
      int bad = 0;
      for (int i = 0; i < NOUT; i++) bad += out[i] != (i < NIN ? (float)i + 0.5f : -1.0f);
      CHECKF(bad == 0, "%s: %d wrong", names[f], bad);
    }
    free(out);
  }
  tgt_llvm_jit_free(j);
  kit_free(k);
  munmap(map, (size_t)page * 2);
}

/* Strided taps that share a window (llvm_window.c): rows r = 0, 1 of a buffer that
 * ends where a PROT_NONE page begins, each statement a 7-lane stride-2 load at base
 * 50·r + c. Group 1: a tap whose lane 0 is off (a column of padding) at c = 35 and a
 * plain one at 36; group 2: two taps under the uniform condition r < 5 at 35 and 37
 * (at r = 1 the last reads in[99], and its window's 16 elements would reach the
 * guard page: the mask covers only what the taps read). Outputs against the formula;
 * on a target with masked loads each group's taps load once: four 16-float loads in
 * the IR for the two rows' eight taps. */
static void test_windows(void) {
  enum { NIN = 100, NOUT = 64 };
  long page = sysconf(_SC_PAGESIZE);
  char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!CHECK(map != MAP_FAILED)) return;
  CHECK(mprotect(map + page, (size_t)page, PROT_NONE) == 0);
  float *in = (float *)(map + page) - NIN;
  for (int i = 0; i < NIN; i++) in[i] = (float)i + 0.5f;
  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *A = tir_buffer_new(b, "in", GIR_F32, NIN, TIR_GLOBAL, 0);
  tir_buffer *O = tir_buffer_new(b, "out", GIR_F32, NOUT, TIR_GLOBAL, 1);
  tir_buffer *ps[2] = {A, O};
  tir_var *r = tir_var_new(b, "r", GIR_I64);
  tir_expr *m1 = tir_broadcast(b, tir_float(b, GIR_F32, -1), 7);
  tir_expr *lanes = tir_ramp(b, I(k, 0), I(k, 1), 7);
#define TAP(c) tir_load(b, A, tir_ramp(b, add(k, mul(k, V(k, r), I(k, 50)), I(k, c)), I(k, 2), 7))
#define OUT(o) tir_ramp(b, add(k, mul(k, V(k, r), I(k, 32)), I(k, o)), I(k, 1), 7)
  tir_expr *u = tir_bin(b, TE_LT, V(k, r), I(k, 5));
  tir_stmt *st[4] = {
      tir_store(b, O, OUT(0), tir_if_then_else(b, tir_bin(b, TE_GE, lanes, tir_broadcast(b, I(k, 1), 7)), TAP(35), m1)),
      tir_store(b, O, OUT(8), TAP(36)),
      tir_store(b, O, OUT(16), tir_if_then_else(b, u, TAP(35), m1)),
      tir_store(b, O, OUT(24), tir_if_then_else(b, u, TAP(37), m1)),
  };
#undef TAP
#undef OUT
  add_func(k, "win", ps, 2, tir_for(b, r, I(k, 0), I(k, 2), TIR_SERIAL, tir_seq(b, st, 4)));
  gir_err err = {0};
  tgt_llvm_jit *j = kit_jit(k, &err);
  kiln_kernel_fn fn = j ? must_lookup(j, "win") : NULL;
  CHECKF(j != NULL, "%s", err.msg);
  if (fn) {
    float *out = amalloc(NOUT * 4);
    memset(out, 0, NOUT * 4);
    void *bufs[2] = {in, out};
    CHECK_INT(fn(bufs, NULL), 0);
    int bad = 0;
    for (int rr = 0; rr < 2; rr++)
      for (int i = 0; i < 7; i++) {
        float *o = out + 32 * rr;
        bad += o[i] != (i >= 1 ? (float)(50 * rr + 35 + 2 * i) + 0.5f : -1.0f);
        bad += o[8 + i] != (float)(50 * rr + 36 + 2 * i) + 0.5f;
        bad += o[16 + i] != (float)(50 * rr + 35 + 2 * i) + 0.5f;
        bad += o[24 + i] != (float)(50 * rr + 37 + 2 * i) + 0.5f;
      }
    CHECKF(bad == 0, "windows: %d wrong", bad);
    free(out);
  }
  tgt_llvm_jit_free(j);
  static const struct { const char *target; int loads; } want[] = {{"x86_64-avx512", 4}, {"x86_64-avx2", 4}};
  for (size_t t = 0; t < sizeof want / sizeof want[0]; t++) {
    tgt_llvm_options o;
    if (!CHECK(tgt_llvm_named_target(want[t].target, &o, &err) == 0)) continue;
    tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k->fns, k->n, &o, &err);
    char *ir = NULL;
    size_t n_ir = 0;
    if (CHECKF(m != NULL, "%s", err.msg) && CHECK(tgt_llvm_ir_string(m, &ir, &n_ir, &err) == 0)) {
      int loads = 0; /* masked, or plain where LLVM knows the elements dereferenceable */
      for (const char *p = ir; (p = strstr(p, "call <16 x float> @llvm.masked.load")); p++) loads++;
      for (const char *p = ir; (p = strstr(p, "= load <16 x float>")); p++) loads++;
      CHECKF(loads == want[t].loads, "windows on %s: %d 16-float loads in the IR, want %d", want[t].target, loads,
             want[t].loads);
    }
    free(ir);
    tgt_llvm_module_free(m);
  }
  kit_free(k);
  munmap(map, (size_t)page * 2);
}

/* float16 / bfloat16: storage round trips and arithmetic rounded per operation. */
static void test_half_formats(void) {
  enum { N = 64 };
  static const gir_dtype hs[3] = {GIR_F16, GIR_BF16, GIR_F16};
  for (int h = 0; h < 3; h++) {
    gir_dtype t = hs[h];
    const tgt_llvm_options *opt = h == 2 ? &portable_host : NULL;
    kit *k = kit_new();
    tir_builder *b = &k->b;
    tir_buffer *F = tir_buffer_new(b, "F", GIR_F32, N, TIR_GLOBAL, 0);
    tir_buffer *H = tir_buffer_new(b, "H", t, N, TIR_GLOBAL, 1);
    tir_buffer *G = tir_buffer_new(b, "G", GIR_F32, N, TIR_GLOBAL, 2);
    tir_buffer *ps[3] = {F, H, G};
    for (int lanes = 1; lanes <= 8; lanes *= 8) {
      /* H = half(F), then G = float(H*H + H) computed in the half type */
      tir_var *i = tir_var_new(b, "i", GIR_I64);
      tir_expr *ix = lanes == 1 ? V(k, i) : tir_ramp(b, mul(k, V(k, i), I(k, lanes)), I(k, 1), lanes);
      tir_stmt *s1 = tir_store(b, H, ix, tir_cast(b, t, tir_load(b, F, ix)));
      char nm[32];
      snprintf(nm, sizeof nm, "half%d", lanes);
      add_func(k, nm, ps, 3, tir_for(b, i, I(k, 0), I(k, N / lanes), TIR_SERIAL, s1));
      tir_var *i2 = tir_var_new(b, "i", GIR_I64);
      tir_expr *ix2 = lanes == 1 ? V(k, i2) : tir_ramp(b, mul(k, V(k, i2), I(k, lanes)), I(k, 1), lanes);
      tir_expr *hv2 = tir_load(b, H, ix2);
      snprintf(nm, sizeof nm, "halfmath%d", lanes);
      add_func(k, nm, ps, 3,
               tir_for(b, i2, I(k, 0), I(k, N / lanes), TIR_SERIAL,
                       tir_store(b, G, ix2, tir_cast(b, GIR_F32, add(k, mul(k, hv2, hv2), hv2)))));
    }
    gir_err err = {0};
    tgt_llvm_jit *j = kit_jit_with(k, opt, &err);
    if (CHECKF(j != NULL, "%s", err.msg)) {
      float *f = amalloc(N * 4), *g = amalloc(N * 4);
      uint16_t *hb = amalloc(N * 2);
      for (int i = 0; i < N; i++) {
        static const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.f, 65520.f, 1e-7f, 6e-8f, 3.14159265f, 1e30f,
                                   -1e30f, INFINITY, -INFINITY, NAN, 0.1f, 1.0009765625f, 1.00048828125f, 300.5f};
        f[i] = i < (int)(sizeof sp / sizeof sp[0]) ? sp[i] : (float)(i * 7919 % 1000) / 13.0f - 30.0f;
      }
      for (int lanes = 1; lanes <= 8; lanes *= 8) {
        char nm[32];
        snprintf(nm, sizeof nm, "half%d", lanes);
        kiln_kernel_fn conv = must_lookup(j, nm);
        snprintf(nm, sizeof nm, "halfmath%d", lanes);
        kiln_kernel_fn math = must_lookup(j, nm);
        if (!conv || !math) continue;
        void *bufs[3] = {f, hb, g};
        CHECK_INT(conv(bufs, NULL), 0);
        int bad = 0;
        for (int i = 0; i < N; i++) {
          uint16_t want = t == GIR_F16 ? gir_f32_to_f16(f[i]) : gir_f32_to_bf16(f[i]);
          if (isnan(f[i])) bad += (hb[i] & 0x7fff) <= (t == GIR_F16 ? 0x7c00 : 0x7f80);
          else bad += hb[i] != want;
        }
        CHECKF(bad == 0, "%s round trip (lanes %d): %d wrong", gir_dtype_name(t), lanes, bad);
        CHECK_INT(math(bufs, NULL), 0);
        bad = 0;
        for (int i = 0; i < N; i++) {
          double x = t == GIR_F16 ? gir_f16_to_f32(hb[i]) : gir_bf16_to_f32(hb[i]);
          double sq = t == GIR_F16 ? gir_f16_to_f32(gir_f32_to_f16((float)(x * x)))
                                   : gir_bf16_to_f32(gir_f32_to_bf16((float)(x * x)));
          double want = t == GIR_F16 ? gir_f16_to_f32(gir_f32_to_f16((float)(sq + x)))
                                     : gir_bf16_to_f32(gir_f32_to_bf16((float)(sq + x)));
          if (isnan(want) ? !isnan(g[i]) : g[i] != want) {
            bad++;
            CHECKF(0, "%s math lanes %d: x=%g got %g want %g", gir_dtype_name(t), lanes, x, g[i], want);
          }
        }
        if (!bad) CHECK(1);
      }
      free(f), free(g), free(hb);
    }
    tgt_llvm_jit_free(j);
    kit_free(k);
  }
}

/* --- float8 / float4 --- */

static const gir_dtype f8_types[6] = {GIR_F8E4M3FN, GIR_F8E4M3FNUZ, GIR_F8E5M2, GIR_F8E5M2FNUZ, GIR_F4E2M1, GIR_F8E8M0};

static uint32_t f32_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return x;
}

/* The generated conversions against graphir/dtype.c, bit for bit: decoding all
 * 256 codes, and encoding every code's value, the midpoints between neighbours
 * and the floats just beside them, subnormals, overflow and the specials —
 * scalar, 8- and 16-lane vectors, on the host and with the portable lowerings. */
static void test_f8_formats(void) {
  enum { N = 256 * 4 + 32 };
  float *src = amalloc(N * 4), *dec = amalloc(N * 4);
  uint8_t *codes = amalloc(N), *enc = amalloc(N);
  for (int t8 = 0; t8 < 6; t8++) {
    gir_dtype t = f8_types[t8];
    int n = 0;
    for (int c = 0; c < 256; c++) {
      float lo = gir_f8_to_f32(t, (uint8_t)c), hi = gir_f8_to_f32(t, (uint8_t)(c + 1)), mid = (lo + hi) / 2;
      src[n++] = lo;
      src[n++] = mid;
      src[n++] = nextafterf(mid, INFINITY);
      src[n++] = nextafterf(mid, -INFINITY);
    }
    static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, -1e-40f, 0x1p-127f, 0x1p-126f,
                               FLT_MAX, -FLT_MAX, 1e30f, 0x1.8p127f, 0x1.7p-127f, 0x1.9p-126f, 3e-5f, 5e-3f, 1e6f};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) src[n++] = sp[i];
    while (n < N) src[n] = (float)(n * 7919 % 2000) / 37.0f - 27.0f, n++;
    for (int i = 0; i < N; i++) codes[i] = (uint8_t)i;
    for (int portable = 0; portable < 2; portable++) {
      kit *k = kit_new();
      tir_builder *b = &k->b;
      tir_buffer *F = tir_buffer_new(b, "F", GIR_F32, N, TIR_GLOBAL, 0);
      tir_buffer *C = tir_buffer_new(b, "C", t, N, TIR_GLOBAL, 1);
      tir_buffer *E = tir_buffer_new(b, "E", t, N, TIR_GLOBAL, 2);
      tir_buffer *D = tir_buffer_new(b, "D", GIR_F32, N, TIR_GLOBAL, 3);
      tir_buffer *ps[4] = {F, C, E, D};
      static const int lane_set[3] = {1, 8, 16};
      for (int l = 0; l < 3; l++) {
        int lanes = lane_set[l];
        tir_var *i = tir_var_new(b, "i", GIR_I64);
        tir_expr *ix = lanes == 1 ? V(k, i) : tir_ramp(b, mul(k, V(k, i), I(k, lanes)), I(k, 1), lanes);
        tir_stmt *body = tir_seq2(b, tir_store(b, E, ix, tir_cast(b, t, tir_load(b, F, ix))),
                                  tir_store(b, D, ix, tir_cast(b, GIR_F32, tir_load(b, C, ix))));
        char nm[32];
        snprintf(nm, sizeof nm, "f8_%d", lanes);
        add_func(k, nm, ps, 4, tir_for(b, i, I(k, 0), I(k, N / lanes), TIR_SERIAL, body));
      }
      gir_err err = {0};
      tgt_llvm_jit *j = kit_jit_with(k, portable ? &portable_host : NULL, &err);
      if (CHECKF(j != NULL, "%s: %s", gir_dtype_name(t), err.msg))
        for (int l = 0; l < 3; l++) {
          char nm[32];
          snprintf(nm, sizeof nm, "f8_%d", lane_set[l]);
          kiln_kernel_fn fn = must_lookup(j, nm);
          if (!fn) continue;
          memset(enc, 0xa5, N);
          memset(dec, 0xa5, N * 4);
          void *bufs[4] = {src, codes, enc, dec};
          CHECK_INT(fn(bufs, NULL), 0);
          int bad_e = 0, bad_d = 0;
          for (int i = 0; i < N; i++) {
            uint8_t want = gir_f32_to_f8(t, src[i]);
            if (enc[i] != want && bad_e++ < 3)
              CHECKF(0, "%s lanes %d: encode %a: got 0x%02x want 0x%02x", gir_dtype_name(t), lane_set[l], src[i],
                     enc[i], want);
            uint32_t wd = f32_bits(gir_f8_to_f32(t, codes[i])), gd = f32_bits(dec[i]);
            if (gd != wd && bad_d++ < 3)
              CHECKF(0, "%s lanes %d: decode 0x%02x: got %08x want %08x", gir_dtype_name(t), lane_set[l], codes[i], gd,
                     wd);
          }
          CHECKF(bad_e == 0 && bad_d == 0, "%s lanes %d%s: %d encodings, %d decodings wrong", gir_dtype_name(t),
                 lane_set[l], portable ? " (portable)" : "", bad_e, bad_d);
        }
      tgt_llvm_jit_free(j);
      kit_free(k);
    }
  }
  free(src), free(dec), free(codes), free(enc);
}

static int32_t serial_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) {
  (void)ctx;
  if (n > 0) fn(closure, 0, n);
  return 0;
}

/* y = cast(x: float32, to) with the cast op's attributes, run by the interpreter
 * (lower_eval_node) and compiled (lower_node + JIT); both must give want. */
static void check_cast_node(gir_dtype to, int64_t sat, int64_t round, const float *x, const uint8_t *want, int n,
                            const char *what) {
  gir_graph *g = gir_graph_new("cast");
  gir_shape s = {.rank = 1, .dims = {n}};
  gir_value *in = gir_value_new(g, "x", GIR_F32, &s);
  gir_graph_add_input(g, in);
  gir_node *node = gir_node_new(g, GIR_OP_cast, "c", &in, 1, 1);
  gir_attr_set_int(g, node, "to", to);
  if (sat >= 0) gir_attr_set_int(g, node, "saturate", sat);
  if (round >= 0) gir_attr_set_int(g, node, "round", round);
  gir_err err = {0};
  if (!CHECKF(gir_node_infer(g, node, &err) == 0, "%s: %s", what, err.msg)) {
    gir_graph_free(g);
    return;
  }
  uint8_t *got = amalloc((size_t)n);
  float *xa = amalloc((size_t)n * 4);
  memcpy(xa, x, (size_t)n * 4);
  const void *ins[1] = {xa};
  void *outs[1] = {got};
  if (CHECKF(lower_eval_node(node, ins, outs, 0, &err) == 0, "%s: %s", what, err.msg))
    for (int i = 0; i < n; i++)
      CHECKF(got[i] == want[i], "%s (interpreted) [%d] %g: 0x%02x, want 0x%02x", what, i, x[i], got[i], want[i]);
  kit *k = kit_new();
  te_ctx c;
  te_ctx_init(&c, k->arena, &err);
  lower_kernel lk;
  if (CHECKF(lower_node(&k->b, &c, node, "castnode", NULL, &lk, &err) == 0, "%s: %s", what, err.msg)) {
    k->fns[k->n++] = lk.fn;
    tgt_llvm_jit *j = kit_jit(k, &err);
    kiln_kernel_fn fn = j ? must_lookup(j, "castnode") : NULL;
    if (CHECKF(fn != NULL, "%s: %s", what, err.msg)) {
      memset(got, 0xa5, (size_t)n);
      void *bufs[2] = {xa, got};
      kiln_ctx ctx = {.parallel_for = serial_for};
      CHECK_INT(fn(bufs, &ctx), 0);
      for (int i = 0; i < n; i++)
        CHECKF(got[i] == want[i], "%s (compiled) [%d] %g: 0x%02x, want 0x%02x", what, i, x[i], got[i], want[i]);
    }
    tgt_llvm_jit_free(j);
  }
  kit_free(k);
  free(got), free(xa);
  gir_graph_free(g);
}

/* Cast's saturate (float8 targets) and round_mode (float8e8m0): the values of
 * the ONNX reference's cast_to (saturate_cast, to_float8e8m0, ml_dtypes). int4
 * bytes are sign-extended, where ml_dtypes keeps the low 4 bits only. */
static void test_cast_attrs(void) {
  enum { NS = 10 };
  static const float xs[NS] = {1e6f, -1e6f, INFINITY, -INFINITY, NAN, 448.0f, 465.0f, 300.0f, -0.0f, 1e-7f};
  static const struct {
    gir_dtype t;
    uint8_t sat[NS], nosat[NS];
  } f8[] = {
      {GIR_F8E4M3FN, {0x7e, 0xfe, 0x7e, 0xfe, 0x7f, 0x7e, 0x7e, 0x79, 0x80, 0x00},
       {0x7f, 0xff, 0x7f, 0xff, 0x7f, 0x7e, 0x7f, 0x79, 0x80, 0x00}},
      {GIR_F8E4M3FNUZ, {0x7f, 0xff, 0x7f, 0xff, 0x80, 0x7f, 0x7f, 0x7f, 0x00, 0x00},
       {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00}},
      {GIR_F8E5M2, {0x7b, 0xfb, 0x7b, 0xfb, 0x7e, 0x5f, 0x5f, 0x5d, 0x80, 0x00},
       {0x7c, 0xfc, 0x7c, 0xfc, 0x7e, 0x5f, 0x5f, 0x5d, 0x80, 0x00}},
      {GIR_F8E5M2FNUZ, {0x7f, 0xff, 0x7f, 0xff, 0x80, 0x63, 0x63, 0x61, 0x00, 0x00},
       {0x80, 0x80, 0x80, 0x80, 0x80, 0x63, 0x63, 0x61, 0x00, 0x00}},
  };
  for (size_t i = 0; i < sizeof f8 / sizeof f8[0]; i++) {
    char what[64];
    snprintf(what, sizeof what, "cast to %s, saturate", gir_dtype_name(f8[i].t));
    check_cast_node(f8[i].t, -1, -1, xs, f8[i].sat, NS, what);
    snprintf(what, sizeof what, "cast to %s, saturate=0", gir_dtype_name(f8[i].t));
    check_cast_node(f8[i].t, 0, -1, xs, f8[i].nosat, NS, what);
  }
  /* float4e2m1 saturates by itself; int4 truncates and wraps (ml_dtypes' astype) */
  static const uint8_t f4[NS] = {0x07, 0x0f, 0x07, 0x0f, 0x08, 0x07, 0x07, 0x07, 0x08, 0x00};
  check_cast_node(GIR_F4E2M1, 0, -1, xs, f4, NS, "cast to float4e2m1");
  static const float xi[6] = {-9.0f, -8.5f, 7.9f, 15.0f, -2.5f, NAN};
  static const uint8_t i4[6] = {0x07, 0xf8, 0x07, 0xff, 0xfe, 0x00}, u2[6] = {0x03, 0x00, 0x03, 0x03, 0x02, 0x00};
  check_cast_node(GIR_I4, -1, -1, xi, i4, 6, "cast to int4");
  check_cast_node(GIR_U2, -1, -1, xi, u2, 6, "cast to uint2");
  /* float8e8m0: up / down / nearest, saturating or not */
  enum { NE = 14 };
  static const float xe[NE] = {0.0f,  0.124f, 0.25f, 1.1f,   1.5f,      1.4999f,   -3.0f, 0x1.8p127f, 0x1.0p127f,
                               1e-40f, 0x1p-127f, INFINITY, NAN, 0x1.fffffep127f};
  static const uint8_t up[NE] = {0x00, 0x7c, 0x7d, 0x80, 0x80, 0x80, 0x81, 0xfe, 0xfe, 0x01, 0x01, 0xff, 0xff, 0xfe};
  static const uint8_t up_ns[NE] = {0x00, 0x7c, 0x7d, 0x80, 0x80, 0x80, 0x81, 0xff, 0xfe, 0x01, 0x01, 0xff, 0xff, 0xff};
  static const uint8_t down[NE] = {0x00, 0x7b, 0x7d, 0x7f, 0x7f, 0x7f, 0x80, 0xfe, 0xfe, 0x00, 0x00, 0xff, 0xff, 0xfe};
  static const uint8_t near[NE] = {0x00, 0x7c, 0x7d, 0x7f, 0x80, 0x7f, 0x81, 0xfe, 0xfe, 0x00, 0x00, 0xff, 0xff, 0xfe};
  static const uint8_t near_ns[NE] = {0x00, 0x7c, 0x7d, 0x7f, 0x80, 0x7f, 0x81,
                                      0xff, 0xfe, 0x00, 0x00, 0xff, 0xff, 0xff};
  check_cast_node(GIR_F8E8M0, -1, -1, xe, up, NE, "cast to float8e8m0 (up)");
  check_cast_node(GIR_F8E8M0, 0, GIR_E8M0_UP, xe, up_ns, NE, "cast to float8e8m0 (up, saturate=0)");
  check_cast_node(GIR_F8E8M0, -1, GIR_E8M0_DOWN, xe, down, NE, "cast to float8e8m0 (down)");
  check_cast_node(GIR_F8E8M0, 0, GIR_E8M0_DOWN, xe, down, NE, "cast to float8e8m0 (down, saturate=0)");
  check_cast_node(GIR_F8E8M0, 1, GIR_E8M0_NEAREST, xe, near, NE, "cast to float8e8m0 (nearest)");
  check_cast_node(GIR_F8E8M0, 0, GIR_E8M0_NEAREST, xe, near_ns, NE, "cast to float8e8m0 (nearest, saturate=0)");
}

/* Parallel loops: free variables, a LOCAL table shared by all tasks, a LOCAL
 * scratch per task, a min other than 0, nesting, status propagation. */
static void test_parallel(void) {
  enum { R = 10, M = 24 };
  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *A = tir_buffer_new(b, "A", GIR_F32, R * M, TIR_GLOBAL, 0);
  tir_buffer *O = tir_buffer_new(b, "O", GIR_F32, R * M, TIR_GLOBAL, 1);
  tir_buffer *O2 = tir_buffer_new(b, "O2", GIR_F32, R, TIR_GLOBAL, 2);
  tir_buffer *ps[3] = {A, O, O2};
  {
    tir_var *s = tir_var_new(b, "s", GIR_F32), *r = tir_var_new(b, "r", GIR_I64), *jv = tir_var_new(b, "j", GIR_I64),
            *j2 = tir_var_new(b, "j", GIR_I64), *q = tir_var_new(b, "q", GIR_I64);
    tir_buffer *lut = tir_buffer_new(b, "lut", GIR_F32, 4, TIR_LOCAL, -1);
    tir_buffer *tmp = tir_buffer_new(b, "tmp", GIR_F32, M, TIR_LOCAL, -1);
    tir_expr *row = mul(k, V(k, r), I(k, M));
    tir_stmt *fill = tir_for(b, q, I(k, 0), I(k, 4), TIR_SERIAL,
                             tir_store(b, lut, V(k, q), tir_cast(b, GIR_F32, add(k, V(k, q), I(k, 1)))));
    tir_expr *val = add(k, mul(k, tir_load(b, A, add(k, row, V(k, jv))), V(k, s)),
                        tir_load(b, lut, tir_bin(b, TE_FLOORMOD, V(k, jv), I(k, 4))));
    tir_stmt *task_body[3] = {
        tir_for(b, jv, I(k, 0), I(k, M), TIR_SERIAL, tir_store(b, tmp, V(k, jv), val)),
        tir_for(b, j2, I(k, 0), I(k, M), TIR_SERIAL, tir_store(b, O, add(k, row, V(k, j2)), tir_load(b, tmp, V(k, j2)))),
        tir_store(b, O2, V(k, r), tir_cast(b, GIR_F32, V(k, r)))};
    tir_stmt *par = tir_for(b, r, I(k, 0), I(k, R), TIR_PARALLEL, tir_allocate(b, tmp, tir_seq(b, task_body, 3)));
    add_func(k, "par1", ps, 3,
             tir_let(b, s, tir_float(b, GIR_F32, 3), tir_allocate(b, lut, tir_seq2(b, fill, par))));
  }
  { /* rows [2, R) in parallel, each row's columns in parallel too */
    tir_var *r = tir_var_new(b, "r", GIR_I64), *c = tir_var_new(b, "c", GIR_I64), *off = tir_var_new(b, "off", GIR_I64);
    tir_expr *ix = add(k, mul(k, V(k, r), I(k, M)), V(k, c));
    tir_stmt *inner = tir_for(b, c, I(k, 0), I(k, M), TIR_PARALLEL,
                              tir_store(b, O, ix, add(k, tir_load(b, A, ix), tir_cast(b, GIR_F32, add(k, V(k, r), V(k, off))))));
    add_func(k, "par2", ps, 3, tir_let(b, off, I(k, 100), tir_for(b, r, I(k, 2), I(k, R - 2), TIR_PARALLEL, inner)));
  }
  { /* an int32 loop variable */
    tir_var *r = tir_var_new(b, "r32", GIR_I32);
    tir_expr *rv = V(k, r);
    add_func(k, "par32", ps, 3,
             tir_for(b, r, tir_int(b, GIR_I32, 1), tir_int(b, GIR_I32, R - 1), TIR_PARALLEL,
                     tir_store(b, O2, tir_cast(b, GIR_I64, rv),
                               tir_cast(b, GIR_F32, tir_bin(b, TE_MUL, rv, tir_int(b, GIR_I32, -2))))));
  }
  { /* an empty parallel loop: parallel_for is not called (ctx may be NULL) */
    tir_var *r = tir_var_new(b, "r", GIR_I64);
    add_func(k, "par0", ps, 3, tir_for(b, r, I(k, 0), I(k, 0), TIR_PARALLEL, tir_store(b, O2, V(k, r), tir_float(b, GIR_F32, 1))));
  }
  gir_err err = {0};
  tgt_llvm_jit *j = kit_jit(k, &err);
  if (CHECKF(j != NULL, "%s", err.msg)) {
    float *a = amalloc(R * M * 4), *o = amalloc(R * M * 4), *o2 = amalloc(R * 4);
    for (int i = 0; i < R * M; i++) a[i] = (float)i * 0.25f;
    test_pool pool = {0};
    kiln_ctx ctx = {.parallel_for = test_parallel_for, .pool = &pool};
    void *bufs[3] = {a, o, o2};
    kiln_kernel_fn p1 = must_lookup(j, "par1"), p2 = must_lookup(j, "par2"), p0 = must_lookup(j, "par0");
    if (p1) {
      CHECK_INT(p1(bufs, &ctx), 0);
      CHECK_INT(atomic_load(&pool.calls), 1);
      int bad = 0;
      for (int r = 0; r < R; r++) {
        for (int c = 0; c < M; c++) bad += o[r * M + c] != a[r * M + c] * 3.0f + (float)(c % 4 + 1);
        bad += o2[r] != (float)r;
      }
      CHECKF(bad == 0, "par1: %d wrong", bad);
      pool.rc = 7; /* a failing pool: the kernel returns its status */
      CHECK_INT(p1(bufs, &ctx), 7);
      pool.rc = 0;
    }
    if (p2) {
      memset(o, 0, R * M * 4);
      atomic_store(&pool.calls, 0);
      CHECK_INT(p2(bufs, &ctx), 0);
      CHECK_INT(atomic_load(&pool.calls), 1 + (R - 2)); /* the outer loop, then one per row */
      int bad = 0;
      for (int r = 0; r < R; r++)
        for (int c = 0; c < M; c++)
          bad += o[r * M + c] != (r >= 2 ? a[r * M + c] + (float)(r + 100) : 0.0f);
      CHECKF(bad == 0, "par2: %d wrong", bad);
    }
    if (p0) {
      CHECK_INT(p0(bufs, NULL), 0);
    }
    kiln_kernel_fn p32 = must_lookup(j, "par32");
    if (p32) {
      memset(o2, 0, R * 4);
      CHECK_INT(p32(bufs, &ctx), 0);
      int bad = 0;
      for (int r = 0; r < R; r++) bad += o2[r] != (r >= 1 ? (float)(-2 * r) : 0.0f);
      CHECKF(bad == 0, "par32: %d wrong", bad);
    }
    free(a), free(o), free(o2);
  }
  tgt_llvm_jit_free(j);
  kit_free(k);
}

/* --- errors --- */

static int compile_fails(kit *k, const char *needle) {
  for (int i = 0; i < k->n; i++) k->fns[i]->n_vars = k->b.next_var, k->fns[i]->n_buffers = k->b.next_buffer;
  gir_err err = {0};
  tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k->fns, k->n, NULL, &err);
  tgt_llvm_module_free(m);
  int ok = CHECKF(m == NULL, "compiled, expected an error with '%s'", needle);
  if (ok) ok = CHECK_CONTAINS(err.msg, needle);
  kit_free(k);
  return ok;
}

static void test_errors(void) {
  { /* a variable used outside its loop */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
    tir_var *i = tir_var_new(&k->b, "i", GIR_I64);
    add_func(k, "bad", &A, 1, tir_store(&k->b, A, V(k, i), tir_float(&k->b, GIR_F32, 0)));
    compile_fails(k, "outside its scope");
  }
  { /* a local buffer used after its allocation */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
    tir_buffer *L = tir_buffer_new(&k->b, "L", GIR_F32, 4, TIR_LOCAL, -1);
    tir_stmt *s = tir_seq2(&k->b, tir_allocate(&k->b, L, tir_store(&k->b, L, I(k, 0), tir_float(&k->b, GIR_F32, 1))),
                           tir_store(&k->b, A, I(k, 0), tir_load(&k->b, L, I(k, 0))));
    add_func(k, "bad", &A, 1, s);
    compile_fails(k, "outside its allocation");
  }
  { /* shared memory on a CPU */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
    tir_buffer *S = tir_buffer_new(&k->b, "S", GIR_F32, 4, TIR_SHARED, -1);
    add_func(k, "bad", &A, 1, tir_allocate(&k->b, S, tir_store(&k->b, A, I(k, 0), tir_float(&k->b, GIR_F32, 0))));
    compile_fails(k, "shared memory");
  }
  { /* a dtype that is not computed on */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_STRING, 4, TIR_GLOBAL, 0);
    tir_buffer *B = tir_buffer_new(&k->b, "B", GIR_F32, 4, TIR_GLOBAL, 1);
    tir_buffer *ps[2] = {A, B};
    add_func(k, "bad", ps, 2, tir_store(&k->b, B, I(k, 0), tir_float(&k->b, GIR_F32, 0)));
    compile_fails(k, "cannot compute on");
  }
  { /* two kernels with one name */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
    add_func(k, "twice", &A, 1, tir_store(&k->b, A, I(k, 0), tir_float(&k->b, GIR_F32, 0)));
    add_func(k, "twice", &A, 1, tir_store(&k->b, A, I(k, 1), tir_float(&k->b, GIR_F32, 0)));
    compile_fails(k, "two kernels are named twice");
  }
  gir_err err = {0};
  tgt_llvm_options o;
  CHECK(tgt_llvm_named_target("sparc", &o, &err) == -1);
  CHECK_CONTAINS(err.msg, "unknown target 'sparc'");
  memset(&err, 0, sizeof err);
  tgt_llvm_options bad_triple = {.triple = "nonsense-cpu-none", .opt_level = 2};
  kit *k = kit_new();
  tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
  add_func(k, "ok", &A, 1, tir_store(&k->b, A, I(k, 0), tir_float(&k->b, GIR_F32, 2)));
  k->fns[0]->n_vars = k->b.next_var, k->fns[0]->n_buffers = k->b.next_buffer;
  CHECK(tgt_llvm_compile((const tir_func *const *)k->fns, 1, &bad_triple, &err) == NULL);
  CHECK_CONTAINS(err.msg, "unknown target triple");
  /* a module for another machine cannot be JIT-ed; a missing kernel is an error */
  memset(&err, 0, sizeof err);
  CHECK(tgt_llvm_named_target("aarch64", &o, &err) == 0);
  tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k->fns, 1, &o, &err);
  if (CHECKF(m != NULL, "%s", err.msg)) {
    CHECK(!tgt_llvm_module_is_host(m));
    CHECK(tgt_llvm_jit_new(m, &err) == NULL);
    CHECK_CONTAINS(err.msg, "cannot run");
    tgt_llvm_module_free(m);
  }
  memset(&err, 0, sizeof err);
  tgt_llvm_jit *j = kit_jit(k, &err);
  if (CHECKF(j != NULL, "%s", err.msg)) {
    CHECK(tgt_llvm_jit_lookup(j, "no_such_kernel", &err) == NULL);
    CHECK_CONTAINS(err.msg, "no_such_kernel");
    memset(&err, 0, sizeof err);
    kiln_kernel_fn fn = tgt_llvm_jit_lookup(j, "ok", &err);
    if (CHECKF(fn != NULL, "%s", err.msg)) {
      float *a = amalloc(16);
      void *bufs[1] = {a};
      CHECK_INT(fn(bufs, NULL), 0);
      CHECK(a[0] == 2.0f);
      free(a);
    }
  }
  tgt_llvm_jit_free(j);
  kit_free(k);
}

/* --- targets --- */

static unsigned elf_machine(const unsigned char *p, size_t n) {
  if (n < 20 || memcmp(p, "\177ELF", 4)) return 0;
  return p[5] == 1 ? (unsigned)(p[18] | p[19] << 8) : (unsigned)(p[18] << 8 | p[19]);
}

static void test_named_targets(void) {
  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *A = tir_buffer_new(b, "A", GIR_F32, 64, TIR_GLOBAL, 0), *B = tir_buffer_new(b, "B", GIR_F32, 64, TIR_GLOBAL, 1),
             *C = tir_buffer_new(b, "C", GIR_F32, 64, TIR_GLOBAL, 2);
  tir_buffer *H = tir_buffer_new(b, "H", GIR_F16, 64, TIR_GLOBAL, 3);
  tir_var *i = tir_var_new(b, "i", GIR_I64);
  tir_expr *ix = tir_ramp(b, mul(k, V(k, i), I(k, 16)), I(k, 1), 16);
  /* C = A*B + C must contract into FMA; H = half(max(A, exp(B))) */
  tir_expr *fma = add(k, mul(k, tir_load(b, A, ix), tir_load(b, B, ix)), tir_load(b, C, ix));
  tir_expr *mx = tir_bin(b, TE_MAX, tir_load(b, A, ix), tir_un(b, TE_EXP, tir_load(b, B, ix)));
  tir_stmt *s = tir_seq2(b, tir_store(b, C, ix, fma), tir_store(b, H, ix, tir_cast(b, GIR_F16, mx)));
  tir_buffer *ps[4] = {A, B, C, H};
  add_func(k, "kern", ps, 4, tir_for(b, i, I(k, 0), I(k, 4), TIR_PARALLEL, s));
  k->fns[0]->n_vars = b->next_var, k->fns[0]->n_buffers = b->next_buffer;
  static const struct {
    const char *name;
    unsigned machine;
    const char *must, *must_not;
  } ts[] = {{"host", 62, "vfmadd", NULL},        {"x86_64", 62, "xmm", "ymm"}, {"x86_64-avx2", 62, "ymm", "zmm"},
            {"x86_64-avx512", 62, "zmm", NULL}, {"aarch64", 183, "fmla", NULL}, {"aarch64-dotprod", 183, "fmla", NULL},
            {"aarch64-i8mm", 183, "fmla", NULL}, {"armv7", 40, "vmla", NULL}, {"riscv64", 243, "fmadd", NULL}};
  const char *const *names = tgt_llvm_target_names();
  int n_names = 0;
  while (names[n_names]) n_names++;
  CHECK_INT(n_names, 9);
  for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++) {
    gir_err err = {0};
    tgt_llvm_options o;
    if (!CHECK(tgt_llvm_named_target(ts[t].name, &o, &err) == 0)) continue;
    tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k->fns, 1, &o, &err);
    if (!CHECKF(m != NULL, "%s: %s", ts[t].name, err.msg)) continue;
    void *obj = NULL;
    size_t n = 0;
    if (CHECKF(tgt_llvm_emit_object_mem(m, &obj, &n, &err) == 0, "%s: %s", ts[t].name, err.msg))
      CHECKF(elf_machine(obj, n) == ts[t].machine, "%s: e_machine %u", ts[t].name, elf_machine(obj, n));
    free(obj);
    char *as = NULL;
    size_t na;
    if (CHECK(tgt_llvm_asm_string(m, &as, &na, &err) == 0)) {
      CHECKF(strstr(as, ts[t].must) != NULL, "%s: no '%s' in the assembly", ts[t].name, ts[t].must);
      if (ts[t].must_not) CHECKF(!strstr(as, ts[t].must_not), "%s: '%s' in the assembly", ts[t].name, ts[t].must_not);
      /* float16 conversions are instructions or inline code, never libcalls */
      CHECKF(!strstr(as, "hf2") && !strstr(as, "f2h") && !strstr(as, "h2f"), "%s: a float16 libcall", ts[t].name);
    }
    free(as);
    tgt_llvm_module_free(m);
  }
  /* -O0 keeps the unroll hint visible; a file object is written */
  {
    kit *k2 = kit_new();
    tir_buffer *X = tir_buffer_new(&k2->b, "X", GIR_I32, 8, TIR_GLOBAL, 0);
    tir_var *u = tir_var_new(&k2->b, "u", GIR_I64);
    add_func(k2, "unr", &X, 1,
             tir_for(&k2->b, u, I(k2, 0), I(k2, 8), TIR_UNROLLED, tir_store(&k2->b, X, V(k2, u), tir_int(&k2->b, GIR_I32, 5))));
    k2->fns[0]->n_vars = k2->b.next_var, k2->fns[0]->n_buffers = k2->b.next_buffer;
    tgt_llvm_options o0 = {.opt_level = 0};
    gir_err err = {0};
    tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k2->fns, 1, &o0, &err);
    if (CHECKF(m != NULL, "%s", err.msg)) {
      char *ir;
      size_t n;
      if (CHECK(tgt_llvm_ir_string(m, &ir, &n, &err) == 0)) {
        CHECK_CONTAINS(ir, "llvm.loop.unroll.full");
        free(ir);
      }
      char path[] = "/tmp/kiln_test_llvm_XXXXXX";
      int fd = mkstemp(path);
      if (CHECK(fd >= 0)) {
        close(fd);
        CHECK(tgt_llvm_emit_object(m, path, &err) == 0);
        FILE *f = fopen(path, "rb");
        unsigned char hdr[20] = {0};
        if (CHECK(f != NULL)) {
          CHECK(fread(hdr, 1, 20, f) == 20);
          fclose(f);
        }
        CHECK_INT(elf_machine(hdr, 20), 62);
        remove(path);
      }
      tgt_llvm_module_free(m);
    }
    kit_free(k2);
  }
  kit_free(k);
}

/* The generic interface: build, supports, emit, lookup. */
static void test_backend_vtable(void) {
  gir_err err = {0};
  CHECK(tgt_backend_new("nope", NULL, &err) == NULL);
  CHECK_CONTAINS(err.msg, "unknown backend");
  memset(&err, 0, sizeof err);
  tgt_options opt = {.target = "host", .opt_level = 3};
  tgt_backend *be = tgt_backend_new("llvm", &opt, &err);
  if (!CHECKF(be != NULL, "%s", err.msg)) return;
  CHECK_STR(be->name, "llvm");
  CHECK_STR(be->target, "host");
  CHECK(be->supports(be, TGT_Q_DTYPE, 0, GIR_BF16));
  CHECK(!be->supports(be, TGT_Q_DTYPE, 0, GIR_STRING));
  CHECK(be->supports(be, TGT_Q_UNOP, TE_ERF, GIR_F16));
  CHECK(be->supports(be, TGT_Q_BINOP, TE_FLOORMOD, GIR_I8));
  CHECK(be->supports(be, TGT_Q_FOR_KIND, TIR_PARALLEL, GIR_DTYPE_NONE));
  CHECK(!be->supports(be, TGT_Q_SCOPE, TIR_SHARED, GIR_DTYPE_NONE));
  kit *k = kit_new();
  tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_I64, 16, TIR_GLOBAL, 0);
  tir_var *i = tir_var_new(&k->b, "i", GIR_I64);
  add_func(k, "iota", &A, 1, tir_for(&k->b, i, I(k, 0), I(k, 16), TIR_SERIAL, tir_store(&k->b, A, V(k, i), mul(k, V(k, i), V(k, i)))));
  k->fns[0]->n_vars = k->b.next_var, k->fns[0]->n_buffers = k->b.next_buffer;
  tgt_artifact *a = be->build(be, (const tir_func *const *)k->fns, 1, &err);
  if (CHECKF(a != NULL, "%s", err.msg)) {
    for (int w = 0; w < TGT_OUTPUT_COUNT; w++) {
      void *data = NULL;
      size_t n = 0;
      CHECK(be->emit(be, a, (tgt_output)w, &data, &n, &err) == 0 && n > 0);
      free(data);
    }
    kiln_kernel_fn fn = be->lookup(be, a, "iota", &err);
    if (CHECKF(fn != NULL, "%s", err.msg)) {
      int64_t *x = amalloc(16 * 8);
      void *bufs[1] = {x};
      CHECK_INT(fn(bufs, NULL), 0);
      CHECK_INT(x[15], 225);
      free(x);
    }
    be->free_artifact(be, a);
  }
  tgt_backend_free(be);
  kit_free(k);
}

/* --- dot4 --- */

static void test_dot4(void) {
  dot4_case cs[DOT4_MAX_CASES];
  int nc = dot4_cases(cs);
  kit *k = kit_new();
  for (int i = 0; i < nc; i++) {
    tir_buffer *ps[4];
    tir_stmt *body = dot4_kernel(&k->b, &cs[i], ps);
    char nm[64];
    add_func(k, dot4_name(&cs[i], nm, sizeof nm), ps, 4, body);
  }
  for (int i = 0; i < k->n; i++) k->fns[i]->n_vars = k->b.next_var, k->fns[i]->n_buffers = k->b.next_buffer;

  /* host; VNNI off; AVX-VNNI without AVX-512 */
  struct {
    const char *what;
    tgt_llvm_options opt;
    int runs, want_vnni; /* want_vnni: 1 the intrinsic in the IR, 0 not, -1 either */
    const char *not_in_ir;
  } cfg[3] = {{"host", {.opt_level = 3}, 1, -1, NULL},
              {"generic", {.features = "-avx512vnni,-avxvnni", .opt_level = 3}, 0, 0, NULL},
              {"avxvnni", {.cpu = "x86-64-v3", .features = "+avxvnni", .opt_level = 3}, 0, 1, "vpdpbusd.512"}};
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  cfg[0].want_vnni = !!__builtin_cpu_supports("avx512vnni");
  cfg[1].runs = 1;
  cfg[2].runs = !!__builtin_cpu_supports("avxvnni");
#endif
  int64_t n[4];
  int32_t *acc = amalloc(32 * DOT4_ROWS * 4), *out = amalloc(32 * DOT4_ROWS * 4), *want = amalloc(32 * DOT4_ROWS * 4);
  uint8_t *a = amalloc(128 * DOT4_ROWS), *bb = amalloc(128 * DOT4_ROWS);
  /* the interpreter against the reference */
  for (int i = 0; i < nc; i++) {
    if (cs[i].let_a) continue;
    dot4_sizes(&cs[i], n);
    dot4_fill(&cs[i], (uint64_t)i, acc, a, bb);
    dot4_reference(&cs[i], acc, a, bb, want);
    memset(out, 0x5a, (size_t)n[3] * 4);
    void *bufs[4] = {acc, a, bb, out};
    gir_err err = {0};
    gir_arena *scratch = gir_arena_new();
    char msg[256], nm[64];
    if (CHECKF(tir_eval_func(k->fns[i], bufs, scratch, 0, &err) == 0, "tir_eval %s: %s", dot4_name(&cs[i], nm, sizeof nm),
               err.msg))
      CHECKF(dot4_compare(&cs[i], out, want, msg, sizeof msg) == 0, "tir_eval %s:%s", nm, msg);
    gir_arena_free(scratch);
  }
  for (int c = 0; c < 3; c++) {
    if (!cfg[c].runs) continue;
    gir_err err = {0};
    tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)k->fns, k->n, &cfg[c].opt, &err);
    if (!CHECKF(m != NULL, "dot4 %s: %s", cfg[c].what, err.msg)) continue;
    char *ir = NULL;
    size_t n_ir = 0;
    if (CHECK(tgt_llvm_ir_string(m, &ir, &n_ir, &err) == 0)) {
      int has = strstr(ir, "llvm.x86.avx512.vpdpbusd") != NULL;
      if (cfg[c].want_vnni >= 0)
        CHECKF(has == cfg[c].want_vnni, "dot4 %s: VPDPBUSD %s in the IR", cfg[c].what, has ? "unexpectedly" : "not");
      if (cfg[c].not_in_ir) CHECKF(!strstr(ir, cfg[c].not_in_ir), "dot4 %s: %s in the IR", cfg[c].what, cfg[c].not_in_ir);
      free(ir);
    }
    tgt_llvm_jit *j = tgt_llvm_jit_new(m, &err);
    tgt_llvm_module_free(m);
    if (!CHECKF(j != NULL, "dot4 %s: %s", cfg[c].what, err.msg)) continue;
    for (int i = 0; i < nc; i++) {
      char nm[64], msg[256];
      kiln_kernel_fn fn = must_lookup(j, dot4_name(&cs[i], nm, sizeof nm));
      if (!fn) continue;
      dot4_sizes(&cs[i], n);
      for (uint64_t seed = 0; seed < 4; seed++) {
        dot4_fill(&cs[i], seed * 1000 + (uint64_t)i, acc, a, bb);
        dot4_reference(&cs[i], acc, a, bb, want);
        memset(out, 0x5a, (size_t)n[3] * 4);
        void *bufs[4] = {acc, a, bb, out};
        CHECK_INT(fn(bufs, NULL), 0);
        CHECKF(dot4_compare(&cs[i], out, want, msg, sizeof msg) == 0, "dot4 %s %s seed %d:%s", cfg[c].what, nm,
               (int)seed, msg);
      }
    }
    tgt_llvm_jit_free(j);
  }
  free(acc), free(out), free(want), free(a), free(bb);
  kit_free(k);

  /* the generic code selects on every named target (objects only); on aarch64 with
   * the dot-product extension every dot4 of even L is SDOT/UDOT, u8·s8 either
   * SDOT of the flipped operand or, with I8MM, USDOT (test_cross runs them) */
  kit *kx = kit_new();
  for (int i = 0; i < nc; i++)
    if (!cs[i].guarded && !cs[i].let_a && (cs[i].L == 1 || cs[i].L == 6 || cs[i].L == 8 || cs[i].L == 32)) {
      tir_buffer *ps[4];
      tir_stmt *body = dot4_kernel(&kx->b, &cs[i], ps);
      char nm[64];
      add_func(kx, dot4_name(&cs[i], nm, sizeof nm), ps, 4, body);
    }
  for (int i = 0; i < kx->n; i++) kx->fns[i]->n_vars = kx->b.next_var, kx->fns[i]->n_buffers = kx->b.next_buffer;
  static const struct {
    const char *name;
    const char *ir_has[3], *ir_lacks, *asm_has[3], *asm_lacks;
  } targets[] = {
      {"x86_64", {NULL}, NULL, {NULL}, NULL},
      {"x86_64-avx512", {NULL}, NULL, {NULL}, NULL},
      {"aarch64", {NULL}, "llvm.aarch64.neon", {NULL}, "dot\t"},
      {"aarch64-dotprod",
       {"llvm.aarch64.neon.sdot.v4i32.v16i8", "llvm.aarch64.neon.udot.v4i32.v16i8",
        "llvm.aarch64.neon.sdot.v2i32.v8i8"}, /* L = 6: three 2-lane chunks */
       "usdot",
       {"\tsdot\tv", "\tudot\tv", NULL},
       "usdot"},
      {"aarch64-i8mm",
       {"llvm.aarch64.neon.usdot.v4i32.v16i8", "llvm.aarch64.neon.sdot.v4i32.v16i8", "llvm.aarch64.neon.udot"},
       NULL,
       {"\tusdot\tv", "\tsdot\tv", "\tudot\tv"},
       NULL},
      {"armv7", {NULL}, NULL, {NULL}, NULL},
      {"riscv64", {NULL}, NULL, {NULL}, NULL},
  };
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
    const char *tn = targets[t].name;
    tgt_llvm_options o;
    gir_err err = {0};
    if (!CHECK(tgt_llvm_named_target(tn, &o, &err) == 0)) continue;
    tgt_llvm_module *m = tgt_llvm_compile((const tir_func *const *)kx->fns, kx->n, &o, &err);
    if (!CHECKF(m != NULL, "dot4 on %s: %s", tn, err.msg)) continue;
    void *obj = NULL;
    size_t n_obj = 0;
    CHECKF(tgt_llvm_emit_object_mem(m, &obj, &n_obj, &err) == 0 && n_obj > 0, "dot4 on %s: %s", tn, err.msg);
    free(obj);
    char *ir = NULL, *as = NULL;
    size_t n_ir = 0, n_as = 0;
    if (CHECK(tgt_llvm_ir_string(m, &ir, &n_ir, &err) == 0)) {
      for (int j = 0; j < 3 && targets[t].ir_has[j]; j++)
        CHECKF(strstr(ir, targets[t].ir_has[j]) != NULL, "dot4 on %s: no %s in the IR", tn, targets[t].ir_has[j]);
      if (targets[t].ir_lacks) CHECKF(!strstr(ir, targets[t].ir_lacks), "dot4 on %s: %s in the IR", tn, targets[t].ir_lacks);
      free(ir);
    }
    if (CHECK(tgt_llvm_asm_string(m, &as, &n_as, &err) == 0)) {
      for (int j = 0; j < 3 && targets[t].asm_has[j]; j++)
        CHECKF(strstr(as, targets[t].asm_has[j]) != NULL, "dot4 on %s: no '%s' in the assembly", tn,
               targets[t].asm_has[j]);
      if (targets[t].asm_lacks)
        CHECKF(!strstr(as, targets[t].asm_lacks), "dot4 on %s: '%s' in the assembly", tn, targets[t].asm_lacks);
      free(as);
    }
    tgt_llvm_module_free(m);
  }
  kit_free(kx);
}

int main(void) {
  test_vector_add();
  test_clamped_casts();
  test_reductions();
  test_guarded_loads();
  test_windows();
  test_failed_checks();
  test_half_formats();
  test_f8_formats();
  test_cast_attrs();
  test_parallel();
  test_unops_libm();
  test_vmath_sweep();
  test_vexp_nonpos();
  test_differential_targets();
  test_differential(1, NULL);
  test_errors();
  test_named_targets();
  test_backend_vtable();
  test_dot4();
  return check_finish("test_llvm");
}
