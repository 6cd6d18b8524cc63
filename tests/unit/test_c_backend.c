/* test_c_backend.c — the C backend (targets/c), end to end: loop IR built by hand
 * with the tir.h builder, translated to C, compiled by the host's cc into a shared
 * library and run in this process through the generic backend interface
 * (targets/target.h: build, then lookup, which compiles and dlopens).
 *
 * The checks are test_llvm.c's, against the same references, so that the two
 * backends are held to one definition: every unary op, binary op and cast on every
 * first-class dtype over edge values (0, ±1, INT_MIN, -1 divisors, shift counts
 * around the width, ±0, ±inf, NaN, saturation bounds, float16/bfloat16/float8
 * rounding...), each as a scalar loop, contiguous vectors and reversed vectors,
 * compared bit for bit with the TE interpreter (transcendental functions within one
 * format ulp: libm's float versions against double); every unary op against libm;
 * reductions through LOCAL buffers; if_then_else guarding loads next to a
 * PROT_NONE page; parallel loops run by a parallel_for that splits into 3 chunks on
 * threads (free variables, shared and per-task local buffers, nesting, status);
 * TIR_FAIL serially and from parallel tasks. Then what is the C backend's own: a
 * vector store whose value reads the buffer it writes (every lane reads first), a
 * vector let, dot4 (dot4_cases.h: every lane count, broadcast a, signedness,
 * guarded and vector-let forms, against the scalar reference), a prefetch, the
 * source's includes (only <math.h>, <string.h>,
 * <stdint.h> and kiln_abi.h) and that it compiles as C99 with -pedantic -Wall
 * -Wextra -Werror, and the errors: a kernel name that is no C identifier, a
 * variable out of scope, a shared buffer. The test fixtures above the new tests are
 * copies of test_llvm.c's (kit, elementwise, te_reference, the value lists). */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "c_backend.h"
#include "check.h"
#include "dot4_cases.h"
#include "interp.h"
#include "lower.h"
#include "target.h"
#include "te_eval.h"
#include "tir.h"
#include "tir_eval.h"

/* --- helpers --- */

typedef struct kit {
  gir_arena *arena;
  tir_builder b;
  tir_func *fns[512];
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

static void kit_finish(kit *k) {
  for (int i = 0; i < k->n; i++) {
    k->fns[i]->n_vars = k->b.next_var;
    k->fns[i]->n_buffers = k->b.next_buffer;
  }
}

/* The kit's kernels as one C source, compiled and loaded on the first lookup. */
typedef struct cmod {
  tgt_backend *be;
  tgt_artifact *a;
} cmod;

static void cmod_free(cmod *m) {
  if (!m) return;
  if (m->a) m->be->free_artifact(m->be, m->a);
  tgt_backend_free(m->be);
  free(m);
}

static cmod *kit_c(kit *k, gir_err *err) {
  kit_finish(k);
  cmod *m = calloc(1, sizeof *m);
  tgt_options o = {"c", 2};
  m->be = tgt_backend_new("c", &o, err);
  if (m->be) m->a = m->be->build(m->be, (const tir_func *const *)k->fns, k->n, err);
  if (!m->be || !m->a) {
    cmod_free(m);
    return NULL;
  }
  return m;
}

static kiln_kernel_fn must_lookup(cmod *m, const char *name) {
  gir_err err = {0};
  kiln_kernel_fn fn = m->be->lookup(m->be, m->a, name, &err);
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
static void differential(gir_dtype in, dcase *cases, int n_cases) {
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
  cmod *j = kit_c(k, &err);
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
  cmod_free(j);
  kit_free(k);
  free(a), free(b), free(ua), free(ref), free(got);
}

/* Every unary op, binary op and cast of every first-class dtype, in one C source
 * per input dtype. Under AddressSanitizer (the sanitizer build, where the generated C
 * is compiled and run exactly as in the release build and only the emitter is
 * instrumented) a representative third of the input dtypes, each still with every
 * op and every cast: the release build runs them all. */
static void test_differential(void) {
#if defined(__SANITIZE_ADDRESS__)
  static const gir_dtype quick[] = {GIR_F32, GIR_F16, GIR_BF16, GIR_I8, GIR_I32, GIR_U64, GIR_BOOL, GIR_F8E4M3FN, GIR_I4};
  printf("test_c_backend: sanitizer build: the differential on %d of %d input dtypes (the release build runs all)\n",
         (int)(sizeof quick / sizeof quick[0]), N_DTYPES);
#endif
  for (int d = 0; d < N_DTYPES; d++) {
    gir_dtype t = all_dtypes[d];
#if defined(__SANITIZE_ADDRESS__)
    int in_quick = 0;
    for (size_t q = 0; q < sizeof quick / sizeof quick[0]; q++) in_quick |= quick[q] == t;
    if (!in_quick) continue;
#endif
    dcase cases[TE_UNOP_COUNT + TE_BINOP_COUNT + N_DTYPES];
    int n = 0;
    for (int op = 0; op < TE_UNOP_COUNT; op++) {
      cases[n] = (dcase){D_UN, op, GIR_DTYPE_NONE, ""};
      snprintf(cases[n].name, sizeof cases[n].name, "%s_%s", te_unop_name(op), gir_dtype_name(t));
      n++;
    }
    for (int op = 0; op < TE_BINOP_COUNT; op++) {
      if (gir_dtype_is_float(t) && op >= TE_AND && op <= TE_SHR) continue; /* never built on floats */
      cases[n] = (dcase){D_BIN, op, GIR_DTYPE_NONE, ""};
      snprintf(cases[n].name, sizeof cases[n].name, "%s_%s", te_binop_name(op), gir_dtype_name(t));
      n++;
    }
    for (int e = 0; e < N_DTYPES; e++) {
      if (all_dtypes[e] == t) continue;
      cases[n] = (dcase){D_CAST, 0, all_dtypes[e], ""};
      snprintf(cases[n].name, sizeof cases[n].name, "cast_%s_to_%s", gir_dtype_name(t), gir_dtype_name(all_dtypes[e]));
      n++;
    }
    int before = check_failed_;
    differential(t, cases, n);
    if (check_failed_ != before) printf("test_c_backend: differential on %s FAILED\n", gir_dtype_name(t));
  }
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
    cmod *j = kit_c(k, &err);
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
    cmod_free(j);
    kit_free(k);
  }
}

/* --- hand-written kernels --- */

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
  cmod *jit = kit_c(k, &err);
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
  cmod_free(jit);
  kit_free(k);
}

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
  cmod *j = kit_c(k, &err);
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
  cmod_free(j);
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
  { /* an if statement with an else */
    tir_var *i = tir_var_new(b, "i", GIR_I64);
    tir_stmt *s = tir_if(b, tir_bin(b, TE_LT, V(k, i), I(k, NIN)), tir_store(b, O, V(k, i), tir_load(b, A, V(k, i))),
                         tir_store(b, O, V(k, i), m1));
    add_func(k, "if_s", ps, 2, tir_for(b, i, I(k, 0), I(k, NOUT), TIR_SERIAL, s));
  }
  gir_err err = {0};
  cmod *j = kit_c(k, &err);
  if (CHECKF(j != NULL, "%s", err.msg)) {
    float *out = amalloc(NOUT * 4);
    const char *names[] = {"ite_s", "ite_s2", "ite_v", "ite_vs", "if_s"};
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
  cmod_free(j);
  kit_free(k);
  munmap(map, (size_t)page * 2);
}

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
  cmod *j = kit_c(k, &err);
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
  cmod_free(j);
  kit_free(k);
}

/* --- what is the C backend's own --- */

/* X[1..8] = X[0..7] as one 8-lane store: every lane reads before any lane writes
 * (lane by lane, lane 1 would read what lane 0 wrote); a vector let; a prefetch. */
static void test_vector_semantics(void) {
  enum { N = 16 };
  kit *k = kit_new();
  tir_builder *b = &k->b;
  tir_buffer *X = tir_buffer_new(b, "X", GIR_F32, N, TIR_GLOBAL, 0);
  tir_buffer *O = tir_buffer_new(b, "O", GIR_F32, N, TIR_GLOBAL, 1);
  tir_buffer *ps[2] = {X, O};
  add_func(k, "shift", ps, 2,
           tir_store(b, X, tir_ramp(b, I(k, 1), I(k, 1), 8), tir_load(b, X, tir_ramp(b, I(k, 0), I(k, 1), 8))));
  tir_var *v = tir_var_new(b, "v", GIR_F32), *i = tir_var_new(b, "i", GIR_I64);
  tir_expr *ix = tir_ramp(b, mul(k, V(k, i), I(k, 8)), I(k, 1), 8);
  tir_expr *two = tir_broadcast(b, tir_float(b, GIR_F32, 2), 8), *one = tir_broadcast(b, tir_float(b, GIR_F32, 1), 8);
  tir_expr *vref = tir_var_ref(b, v);
  vref->lanes = 8; /* a vector let's variable, read as a vector */
  tir_stmt *body = tir_seq2(b, tir_prefetch(b, X, mul(k, V(k, i), I(k, 8))),
                            tir_let(b, v, tir_bin(b, TE_MUL, tir_load(b, X, ix), two),
                                    tir_store(b, O, ix, tir_bin(b, TE_ADD, vref, one))));
  add_func(k, "vlet", ps, 2, tir_for(b, i, I(k, 0), I(k, N / 8), TIR_SERIAL, body));
  gir_err err = {0};
  cmod *j = kit_c(k, &err);
  if (CHECKF(j != NULL, "%s", err.msg)) {
    float *x = amalloc(N * 4), *o = amalloc(N * 4);
    void *bufs[2] = {x, o};
    kiln_kernel_fn shift = must_lookup(j, "shift"), vlet = must_lookup(j, "vlet");
    if (shift) {
      for (int q = 0; q < N; q++) x[q] = (float)q;
      CHECK_INT(shift(bufs, NULL), 0);
      int bad = 0;
      for (int q = 0; q < N; q++) bad += x[q] != (q >= 1 && q <= 8 ? (float)(q - 1) : (float)q);
      CHECKF(bad == 0, "shift: %d lanes read what another lane wrote", bad);
    }
    if (vlet) {
      for (int q = 0; q < N; q++) x[q] = (float)q;
      CHECK_INT(vlet(bufs, NULL), 0);
      int bad = 0;
      for (int q = 0; q < N; q++) bad += o[q] != 2.0f * (float)q + 1.0f;
      CHECKF(bad == 0, "vlet: %d wrong", bad);
    }
    free(x), free(o);
  }
  cmod_free(j);
  kit_free(k);
}

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
  gir_err err = {0};
  cmod *j = kit_c(k, &err);
  if (CHECKF(j != NULL, "dot4: %s", err.msg)) {
    int32_t *acc = amalloc(32 * DOT4_ROWS * 4), *out = amalloc(32 * DOT4_ROWS * 4), *want = amalloc(32 * DOT4_ROWS * 4);
    uint8_t *a = amalloc(128 * DOT4_ROWS), *bb = amalloc(128 * DOT4_ROWS);
    for (int i = 0; i < nc; i++) {
      char nm[64], msg[256];
      kiln_kernel_fn fn = must_lookup(j, dot4_name(&cs[i], nm, sizeof nm));
      if (!fn) continue;
      for (uint64_t seed = 0; seed < 4; seed++) {
        int64_t n[4];
        dot4_sizes(&cs[i], n);
        dot4_fill(&cs[i], seed * 1000 + (uint64_t)i, acc, a, bb);
        dot4_reference(&cs[i], acc, a, bb, want);
        memset(out, 0x5a, (size_t)n[3] * 4);
        void *bufs[4] = {acc, a, bb, out};
        CHECK_INT(fn(bufs, NULL), 0);
        CHECKF(dot4_compare(&cs[i], out, want, msg, sizeof msg) == 0, "%s seed %d:%s", nm, (int)seed, msg);
      }
    }
    free(acc), free(out), free(want), free(a), free(bb);
  }
  cmod_free(j);
  kit_free(k);
}

/* The source includes only what it may, and compiles as strict C99 without a warning. */
static void test_source(void) {
  kit *k = kit_new();
  tir_builder *b = &k->b;
  static const gir_dtype ts[] = {GIR_F32, GIR_F16, GIR_BF16, GIR_I4, GIR_F8E4M3FN, GIR_BOOL, GIR_U64};
  for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++)
    for (int m = 0; m < 3; m++) {
      char nm[64];
      snprintf(nm, sizeof nm, "mix_%s_%d", gir_dtype_name(ts[t]), m);
      elementwise(k, nm, D_BIN, ts[t] == GIR_BOOL ? TE_XOR : TE_MUL, ts[t], GIR_DTYPE_NONE, 16, m, 4);
      snprintf(nm, sizeof nm, "cast_%s_%d", gir_dtype_name(ts[t]), m);
      elementwise(k, nm, D_CAST, 0, ts[t], GIR_I32, 16, m, 4);
    }
  { /* a parallel loop with a failed check, for the outlined task's code */
    tir_buffer *A = tir_buffer_new(b, "A", GIR_I64, 8, TIR_GLOBAL, 0);
    tir_buffer *ps[1] = {A};
    tir_var *i = tir_var_new(b, "i", GIR_I64);
    tir_expr *v = tir_load(b, A, V(k, i));
    add_func(k, "par_fail", ps, 1,
             tir_for(b, i, I(k, 0), I(k, 8), TIR_PARALLEL,
                     tir_if(b, tir_bin(b, TE_GE, v, I(k, 4)), tir_fail(b, 0, v, I(k, 0), I(k, 4)), NULL)));
  }
  kit_finish(k);
  char *src = NULL;
  size_t len = 0;
  gir_err err = {0};
  if (!CHECKF(tgt_c_emit_source((const tir_func *const *)k->fns, k->n, NULL, &src, &len, &err) == 0, "%s", err.msg)) {
    kit_free(k);
    return;
  }
  CHECK_INT(strlen(src), len);
  int others = 0;
  for (const char *p = src; (p = strstr(p, "#include")); p++) {
    int ok = !strncmp(p, "#include <math.h>", 17) || !strncmp(p, "#include <string.h>", 19) ||
             !strncmp(p, "#include <stdint.h>", 19) || !strncmp(p, "#include \"kiln_abi.h\"", 21);
    if (!ok) printf("FAIL the source includes %.40s\n", p);
    others += !ok;
  }
  CHECKF(others == 0, "the source includes %d other headers", others);
  CHECK(strstr(src, "restrict") != NULL);
  char dir[] = "/tmp/kiln-test-c-XXXXXX";
  if (CHECK(mkdtemp(dir) != NULL)) {
    char c[128], h[128], cmd[512];
    snprintf(c, sizeof c, "%s/k.c", dir);
    snprintf(h, sizeof h, "%s/kiln_abi.h", dir);
    FILE *f = fopen(c, "w"), *g = fopen(h, "w");
    if (CHECK(f && g)) {
      fputs(src, f);
      fputs(tgt_c_abi_text(), g);
    }
    if (f) fclose(f);
    if (g) fclose(g);
    snprintf(cmd, sizeof cmd, "cc -std=c99 -pedantic -Wall -Wextra -Werror -O2 -c -o %s/k.o %s 2>%s/log", dir, c, dir);
    int rc = system(cmd);
    char log[2048] = "";
    snprintf(cmd, sizeof cmd, "%s/log", dir);
    FILE *lf = fopen(cmd, "r");
    if (lf) {
      size_t n = fread(log, 1, sizeof log - 1, lf);
      log[n] = 0;
      fclose(lf);
    }
    CHECKF(rc == 0, "cc -std=c99 -pedantic -Wall -Wextra -Werror rejects the source:\n%s", log);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
  }
  free(src);
  kit_free(k);
}

static int emit_fails(kit *k, const char *needle) {
  kit_finish(k);
  char *src = NULL;
  size_t len = 0;
  gir_err err = {0};
  int rc = tgt_c_emit_source((const tir_func *const *)k->fns, k->n, NULL, &src, &len, &err);
  free(src);
  CHECKF(rc < 0, "emitting succeeded; want an error with '%s'", needle);
  CHECK_CONTAINS(err.msg, needle);
  CHECKF(strchr(err.msg, '\n') == NULL, "a two-line message: %s", err.msg);
  kit_free(k);
  return rc < 0;
}

static void test_errors(void) {
  { /* a kernel name C cannot spell */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
    tir_buffer *ps[1] = {A};
    add_func(k, "conv.1", ps, 1, tir_store(&k->b, A, I(k, 0), tir_float(&k->b, GIR_F32, 1)));
    emit_fails(k, "not a C identifier");
  }
  { /* a variable out of its scope */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
    tir_buffer *ps[1] = {A};
    tir_var *i = tir_var_new(&k->b, "i", GIR_I64);
    add_func(k, "k", ps, 1, tir_store(&k->b, A, V(k, i), tir_float(&k->b, GIR_F32, 1)));
    emit_fails(k, "outside its scope");
  }
  { /* a GPU scope */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
    tir_buffer *S = tir_buffer_new(&k->b, "S", GIR_F32, 4, TIR_SHARED, -1);
    tir_buffer *ps[1] = {A};
    add_func(k, "k", ps, 1, tir_allocate(&k->b, S, tir_store(&k->b, S, I(k, 0), tir_float(&k->b, GIR_F32, 1))));
    emit_fails(k, "GPU scope");
  }
  { /* two kernels of one name */
    kit *k = kit_new();
    tir_buffer *A = tir_buffer_new(&k->b, "A", GIR_F32, 4, TIR_GLOBAL, 0);
    tir_buffer *ps[1] = {A};
    add_func(k, "twice", ps, 1, tir_store(&k->b, A, I(k, 0), tir_float(&k->b, GIR_F32, 1)));
    add_func(k, "twice", ps, 1, tir_store(&k->b, A, I(k, 1), tir_float(&k->b, GIR_F32, 1)));
    emit_fails(k, "two kernels are named twice");
  }
  gir_err err = {0};
  tgt_options o = {"cortex-m99", 2};
  CHECK(tgt_backend_new("c", &o, &err) == NULL);
  CHECK_CONTAINS(err.msg, "unknown target 'cortex-m99'");
}

int main(void) {
  test_differential();
  test_unops_libm();
  test_reductions();
  test_failed_checks();
  test_guarded_loads();
  test_parallel();
  test_vector_semantics();
  test_dot4();
  test_source();
  test_errors();
  return check_finish("test_c_backend");
}
