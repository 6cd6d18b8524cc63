/* test_graphir.c — unit tests of the graph IR core (graphir/): the arena, element
 * types and their conversions, shapes, the shape inference of every canonical op
 * (valid cases with their exact results, and error cases, each of which must
 * return -1 with a one-line message naming the node, never crash), the verifier,
 * compaction, the op tables, the FLOP estimates and the text and DOT printers.
 *
 * Each case is a tiny graph built by hand with its expected result written next
 * to it, in the chibicc manner: when one fails, the line number says which.
 * Folding is tested with a stand-in evaluator (float32 add only; topk on purpose
 * fills one output of two, like a broken evaluator would) so that graphir is
 * tested without lower/. Cases that feed hostile sizes (dims near INT64_MAX) run in a forked child, so
 * that an overflow caught by UBSan shows up as one failed check instead of
 * ending the whole test. */
#include <float.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "flops.h"
#include "fold.h"
#include "graph.h"
#include "passes.h"

/* --- helpers --- */

#define NARGS64(...) ((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* A shape as a compound literal (an lvalue: &SH(2, 3) is fine). */
#define SH(...) ((gir_shape){.rank = NARGS64(__VA_ARGS__), .dims = {__VA_ARGS__}})
#define SCALAR ((gir_shape){0})
/* Two arguments for gir_attr_set_ints: the array and its count. */
#define INTS(...) (int64_t[]){__VA_ARGS__}, NARGS64(__VA_ARGS__)

static gir_value *input(gir_graph *g, gir_dtype t, gir_shape s) {
  gir_value *v = gir_value_new(g, NULL, t, &s);
  gir_graph_add_input(g, v);
  return v;
}

static gir_node *node_(gir_graph *g, gir_op op, gir_value *const *ins, int32_t n_in) {
  return gir_node_new(g, op, NULL, ins, n_in, gir_op_outputs(op));
}
#define NODE(g, op, ...) \
  node_(g, op, (gir_value *[]){__VA_ARGS__}, (int32_t)(sizeof((gir_value *[]){__VA_ARGS__}) / sizeof(gir_value *)))

static void set_i(gir_graph *g, gir_node *n, const char *name, int64_t v) { gir_attr_set_int(g, n, name, v); }

/* Inference succeeds and output `slot` has dtype t and shape s. */
static int expect_out_(gir_graph *g, gir_node *n, int slot, gir_dtype t, gir_shape s, int line) {
  gir_err e = {{0}};
  int rc = gir_node_infer(g, n, &e);
  if (!CHECKF(rc == 0, "line %d: %s inference failed: %s", line, gir_op_name(n->op), e.msg)) return 0;
  char b1[160], b2[160];
  return CHECKF(n->out[slot]->dtype == t && gir_shape_equal(&n->out[slot]->shape, &s),
                "line %d: %s output %d is %s[%s], expected %s[%s]", line, gir_op_name(n->op), slot,
                gir_dtype_name(n->out[slot]->dtype), gir_shape_str(&n->out[slot]->shape, b1, sizeof b1),
                gir_dtype_name(t), gir_shape_str(&s, b2, sizeof b2));
}
#define EXPECT_OUT(g, n, t, s) expect_out_(g, n, 0, t, s, __LINE__)
#define EXPECT_OUT_SLOT(g, n, slot, t, s) expect_out_(g, n, slot, t, s, __LINE__)

/* Inference fails with one line that names the node. */
static int expect_err_(gir_graph *g, gir_node *n, int line) {
  gir_err e = {{0}};
  int rc = gir_node_infer(g, n, &e);
  return CHECKF(rc == -1 && e.msg[0] && !strchr(e.msg, '\n') && strstr(e.msg, n->name),
                "line %d: %s: expected -1 and a one-line message naming '%s'; got %d \"%s\"", line,
                gir_op_name(n->op), n->name, rc, e.msg);
}
#define EXPECT_ERR(g, n) expect_err_(g, n, __LINE__)

/* Same, in a forked child: a crash or a sanitizer abort is one failed check. */
static int expect_err_isolated_(gir_graph *g, gir_node *n, int line) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    gir_err e = {{0}};
    int rc = gir_node_infer(g, n, &e);
    _exit(rc == -1 && e.msg[0] && !strchr(e.msg, '\n') ? 0 : 3);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return CHECKF(0, "line %d: fork failed", line);
  return CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "line %d: %s on hostile sizes: %s %d (3: no error reported; other codes: sanitizer abort)", line,
                gir_op_name(n->op), WIFSIGNALED(st) ? "killed by signal" : "child exited with",
                WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}
#define EXPECT_ERR_ISOLATED(g, n) expect_err_isolated_(g, n, __LINE__)

/* --- arena --- */

static void test_arena(void) {
  gir_arena *a = gir_arena_new();
  if (!CHECK(a != NULL)) return;
  CHECK_INT(gir_arena_bytes(a), 0);

  /* Many small allocations of varying sizes: zeroed, aligned, disjoint. */
  enum { N = 20000 };
  unsigned char **p = calloc(N, sizeof *p);
  size_t *sz = calloc(N, sizeof *sz), total = 0;
  int zero_ok = 1, align_ok = 1;
  for (int i = 0; i < N; i++) {
    sz[i] = (size_t)(i * 37 % 300) + 1;
    p[i] = gir_arena_alloc(a, sz[i]);
    if (!p[i]) break;
    total += sz[i];
    for (size_t k = 0; k < sz[i]; k++) zero_ok &= p[i][k] == 0;
    size_t want = sz[i] >= 64 ? 64 : 16;
    align_ok &= ((uintptr_t)p[i] % want) == 0;
    memset(p[i], (int)(i & 0xff), sz[i]);
  }
  int all = 1, pattern_ok = 1;
  for (int i = 0; i < N; i++) {
    if (!p[i]) {
      all = 0;
      break;
    }
    for (size_t k = 0; k < sz[i]; k++) pattern_ok &= p[i][k] == (unsigned char)(i & 0xff);
  }
  CHECK(all);
  CHECK(zero_ok);
  CHECKF(align_ok, "small blocks must be 16-aligned, blocks of 64 bytes and more 64-aligned");
  CHECKF(pattern_ok, "allocations overlap");
  CHECK(gir_arena_bytes(a) >= total);

  /* Big allocations get their own chunk; zeroed and 64-aligned. */
  size_t bigs[] = {16 * 1024 + 1, 64 * 1024, 64 * 1024 + 7, 1u << 20, 24u << 20};
  for (size_t i = 0; i < sizeof bigs / sizeof bigs[0]; i++) {
    unsigned char *b = gir_arena_alloc(a, bigs[i]);
    if (!CHECK(b != NULL)) continue;
    CHECK((uintptr_t)b % 64 == 0);
    CHECK(b[0] == 0 && b[bigs[i] / 2] == 0 && b[bigs[i] - 1] == 0);
    memset(b, 0xab, bigs[i]);
  }
  /* small ones still work after big ones, and earlier data is intact */
  unsigned char *s = gir_arena_alloc(a, 10);
  CHECK(s != NULL && s[0] == 0 && s[9] == 0);
  pattern_ok = 1;
  for (int i = 0; i < N; i += 97) pattern_ok &= p[i][0] == (unsigned char)(i & 0xff);
  CHECK(pattern_ok);

  CHECK(gir_arena_alloc(a, 0) != NULL);
  CHECK(gir_arena_alloc(a, SIZE_MAX) == NULL);
  CHECK(gir_arena_alloc(a, SIZE_MAX - 100) == NULL);
  CHECK(gir_arena_calloc(a, SIZE_MAX / 2, 4) == NULL);
  CHECK(gir_arena_calloc(a, (size_t)1 << 40, (size_t)1 << 40) == NULL);
  int *ci = gir_arena_calloc(a, 1000, sizeof(int));
  CHECK(ci != NULL && ci[0] == 0 && ci[999] == 0);
  CHECK(gir_arena_alloc(NULL, 8) == NULL);
  CHECK_INT(gir_arena_bytes(NULL), 0);

  /* grow keeps the first old_n elements and zeroes the rest */
  int64_t *arr = gir_arena_calloc(a, 4, sizeof *arr);
  for (int i = 0; i < 4; i++) arr[i] = i * 11;
  int64_t *grown = gir_arena_grow(a, arr, 4, 100, sizeof *arr);
  CHECK(grown != NULL && grown != arr && grown[0] == 0 && grown[3] == 33 && grown[4] == 0 && grown[99] == 0);
  CHECK(gir_arena_grow(a, NULL, 0, 8, 8) != NULL);

  /* strings */
  CHECK_STR(gir_arena_strdup(a, "kiln"), "kiln");
  CHECK_STR(gir_arena_strdup(a, ""), "");
  CHECK(gir_arena_strdup(a, NULL) == NULL);
  CHECK_STR(gir_arena_strndup(a, "abcdef", 3), "abc");
  CHECK_STR(gir_arena_printf(a, "%s_%d:%lld", "conv", 7, (long long)INT64_MIN), "conv_7:-9223372036854775808");
  CHECK_STR(gir_arena_printf(a, "%s", ""), "");
  size_t long_n = 200000;
  char *longs = malloc(long_n + 1);
  memset(longs, 'q', long_n);
  longs[long_n] = 0;
  char *lp = gir_arena_printf(a, "<%s>", longs);
  CHECK(lp != NULL && strlen(lp) == long_n + 2 && lp[0] == '<' && lp[1] == 'q' && lp[long_n + 1] == '>');
  char *ld = gir_arena_strdup(a, longs);
  CHECK(ld != NULL && !strcmp(ld, longs));
  free(longs);

  free(p);
  free(sz);
  gir_arena_free(a);
  gir_arena_free(NULL); /* must be a no-op */

  /* Many arenas created and freed: nothing leaks (LeakSanitizer watches the ASan build). */
  for (int i = 0; i < 200; i++) {
    gir_arena *t = gir_arena_new();
    gir_arena_alloc(t, (size_t)i * 1000);
    gir_arena_printf(t, "%d", i);
    gir_arena_free(t);
  }
  CHECK(1);
}

/* --- dtypes and conversions --- */

static float f32_of_bits(uint32_t x) {
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static uint32_t bits_of_f32(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return x;
}

static void test_dtype_props(void) {
  for (int t = 0; t < GIR_DTYPE_COUNT; t++) {
    gir_dtype d = (gir_dtype)t;
    CHECKF(gir_dtype_from_onnx(gir_dtype_onnx_code(d)) == d, "dtype %s: ONNX code round trip", gir_dtype_name(d));
    CHECKF(gir_dtype_from_name(gir_dtype_name(d)) == d, "dtype %s: name round trip", gir_dtype_name(d));
    if (gir_dtype_first_class(d)) /* sub-byte types take one byte each */
      CHECKF(gir_dtype_size(d) * 8 == (size_t)(gir_dtype_bits(d) < 8 ? 8 : gir_dtype_bits(d)), "%s", gir_dtype_name(d));
    else CHECK_INT(gir_dtype_size(d), 0);
  }
  CHECK_INT(gir_dtype_size(GIR_F32), 4);
  CHECK_INT(gir_dtype_size(GIR_F16), 2);
  CHECK_INT(gir_dtype_size(GIR_BF16), 2);
  CHECK_INT(gir_dtype_size(GIR_BOOL), 1);
  CHECK_INT(gir_dtype_size(GIR_U64), 8);
  CHECK_INT(gir_dtype_size(GIR_STRING), 0);
  CHECK_INT(gir_dtype_onnx_code(GIR_F32), 1);
  CHECK_INT(gir_dtype_onnx_code(GIR_BF16), 16);
  CHECK_INT(gir_dtype_from_onnx(7), GIR_I64);
  CHECK_INT(gir_dtype_from_onnx(0), GIR_DTYPE_NONE);
  CHECK_INT(gir_dtype_from_onnx(999), GIR_DTYPE_NONE);
  CHECK_INT(gir_dtype_from_onnx(-3), GIR_DTYPE_NONE);
  CHECK_INT(gir_dtype_from_name("float32"), GIR_F32);
  CHECK_INT(gir_dtype_from_name("nope"), GIR_DTYPE_NONE);
  CHECK_STR(gir_dtype_name(GIR_DTYPE_NONE), "none");
  CHECK_STR(gir_dtype_name((gir_dtype)1000), "none");
  CHECK(gir_dtype_is_float(GIR_BF16) && !gir_dtype_is_float(GIR_I32));
  CHECK(gir_dtype_is_int(GIR_U8) && gir_dtype_is_int(GIR_I64) && !gir_dtype_is_int(GIR_BOOL));
  CHECK(gir_dtype_is_signed(GIR_I8) && gir_dtype_is_signed(GIR_F32) && !gir_dtype_is_signed(GIR_U32));
  CHECK(!gir_dtype_first_class(GIR_STRING) && !gir_dtype_first_class(GIR_C64) && gir_dtype_first_class(GIR_I4));
  CHECK_INT(gir_dtype_size(GIR_I4), 1);
  CHECK_INT(gir_dtype_size(GIR_U2), 1);
  CHECK_INT(gir_dtype_size(GIR_F4E2M1), 1);
  CHECK_INT(gir_dtype_size(GIR_F8E5M2), 1);
  CHECK_INT(gir_dtype_bits(GIR_I4), 4);
  CHECK_INT(gir_dtype_bits(GIR_U2), 2);
  CHECK(gir_dtype_is_float(GIR_F8E4M3FN) && gir_dtype_is_f8(GIR_F4E2M1) && gir_dtype_is_f8(GIR_F8E8M0));
  CHECK(!gir_dtype_is_f8(GIR_F16) && !gir_dtype_is_f8(GIR_U8) && !gir_dtype_is_f8(GIR_I4));
  CHECK(gir_dtype_is_int(GIR_I4) && gir_dtype_is_signed(GIR_I2) && !gir_dtype_is_signed(GIR_U4));
  CHECK_DBL(gir_dtype_float_max(GIR_F8E4M3FN), 448);
  CHECK_DBL(gir_dtype_float_max(GIR_F8E4M3FNUZ), 240);
  CHECK_DBL(gir_dtype_float_max(GIR_F8E5M2), 57344);
  CHECK_DBL(gir_dtype_float_max(GIR_F8E5M2FNUZ), 57344);
  CHECK_DBL(gir_dtype_float_max(GIR_F4E2M1), 6);
  CHECK_DBL(gir_dtype_float_max(GIR_F8E8M0), 0x1p127);
  CHECK_DBL(gir_dtype_float_max(GIR_F16), 65504);
  CHECK(!gir_dtype_first_class(GIR_DTYPE_NONE) && !gir_dtype_first_class((gir_dtype)12345));
}

static void test_f16(void) {
  CHECK_BITS(gir_f32_to_f16(0.0f), 0x0000);
  CHECK_BITS(gir_f32_to_f16(-0.0f), 0x8000);
  CHECK_BITS(gir_f32_to_f16(1.0f), 0x3c00);
  CHECK_BITS(gir_f32_to_f16(-2.0f), 0xc000);
  CHECK_BITS(gir_f32_to_f16(0.5f), 0x3800);
  CHECK_BITS(gir_f32_to_f16(65504.0f), 0x7bff);     /* largest finite */
  CHECK_BITS(gir_f32_to_f16(0.333251953125f), 0x3555);
  /* round to nearest, ties to even */
  CHECK_BITS(gir_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);            /* tie, 0x3c00 even */
  CHECK_BITS(gir_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);        /* tie, 0x3c01 odd → up */
  CHECK_BITS(gir_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01); /* just above the tie */
  CHECK_BITS(gir_f32_to_f16(1.0f + 0x1p-11f - 0x1p-22f), 0x3c00); /* just below the tie */
  CHECK_BITS(gir_f32_to_f16(2047.5f), 0x6800);                    /* tie rounds up into a new exponent */
  CHECK_BITS(gir_f32_to_f16(1.0f - 0x1p-12f), 0x3c00);            /* tie between 0x3bff and 0x3c00 */
  /* overflow to infinity */
  CHECK_BITS(gir_f32_to_f16(65519.0f), 0x7bff);     /* below the midpoint to 65536 */
  CHECK_BITS(gir_f32_to_f16(65520.0f), 0x7c00);     /* the midpoint: ties to even = inf */
  CHECK_BITS(gir_f32_to_f16(1e10f), 0x7c00);
  CHECK_BITS(gir_f32_to_f16(-1e10f), 0xfc00);
  CHECK_BITS(gir_f32_to_f16(FLT_MAX), 0x7c00);
  CHECK_BITS(gir_f32_to_f16(INFINITY), 0x7c00);
  CHECK_BITS(gir_f32_to_f16(-INFINITY), 0xfc00);
  /* NaN stays NaN (exponent all ones, mantissa non-zero), sign kept */
  uint16_t hn = gir_f32_to_f16(NAN);
  CHECKF((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff), "NaN → 0x%04x", hn);
  hn = gir_f32_to_f16(f32_of_bits(0x7f800001u)); /* payload only in low bits */
  CHECKF((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff), "signalling NaN with low payload → 0x%04x", hn);
  hn = gir_f32_to_f16(f32_of_bits(0xffc00000u));
  CHECKF((hn & 0xfc00) == 0xfc00 && (hn & 0x3ff), "negative NaN → 0x%04x", hn);
  /* subnormals */
  CHECK_BITS(gir_f32_to_f16(0x1p-14f), 0x0400);     /* smallest normal */
  CHECK_BITS(gir_f32_to_f16(0x1p-24f), 0x0001);     /* smallest subnormal */
  CHECK_BITS(gir_f32_to_f16(-0x1p-24f), 0x8001);
  CHECK_BITS(gir_f32_to_f16(1023 * 0x1p-24f), 0x03ff); /* largest subnormal */
  CHECK_BITS(gir_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400); /* tie between 0x3ff (odd) and 0x400 */
  CHECK_BITS(gir_f32_to_f16(0x1p-25f), 0x0000);     /* tie between 0 and 1: even = 0 */
  CHECK_BITS(gir_f32_to_f16(0x1p-25f + 0x1p-40f), 0x0001);
  CHECK_BITS(gir_f32_to_f16(3 * 0x1p-25f), 0x0002); /* tie between 1 and 2: even = 2 */
  CHECK_BITS(gir_f32_to_f16(5 * 0x1p-25f), 0x0002); /* tie between 2 and 3: even = 2 */
  CHECK_BITS(gir_f32_to_f16(0x1p-26f), 0x0000);
  CHECK_BITS(gir_f32_to_f16(-1e-10f), 0x8000);
  CHECK_BITS(gir_f32_to_f16(1e-45f), 0x0000);       /* f32 subnormal */

  CHECK_DBL(gir_f16_to_f32(0x3c00), 1.0);
  CHECK_DBL(gir_f16_to_f32(0x8000), -0.0);
  CHECK_DBL(gir_f16_to_f32(0x7bff), 65504.0);
  CHECK_DBL(gir_f16_to_f32(0x0001), 0x1p-24);
  CHECK_DBL(gir_f16_to_f32(0x83ff), -1023 * 0x1p-24);
  CHECK_DBL(gir_f16_to_f32(0x0400), 0x1p-14);
  CHECK_DBL(gir_f16_to_f32(0x7c00), INFINITY);
  CHECK_DBL(gir_f16_to_f32(0xfc00), -INFINITY);
  CHECK(isnan(gir_f16_to_f32(0x7e00)) && isnan(gir_f16_to_f32(0x7c01)) && isnan(gir_f16_to_f32(0xfe00)));

  /* every half value survives the round trip through float32 */
  int bad = 0, first_bad = -1;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = gir_f16_to_f32((uint16_t)h);
    uint16_t back = gir_f32_to_f16(f);
    int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    int ok = is_nan ? (isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff) && (back & 0x8000) == (h & 0x8000))
                    : back == h;
    if (!ok && first_bad < 0) first_bad = (int)h;
    bad += !ok;
  }
  CHECKF(bad == 0, "%d half values do not round-trip; first 0x%04x", bad, first_bad);

  /* Round to nearest even, checked against the definition on a stride of float32
   * bit patterns covering the half range: the result is at least as near as both
   * neighbours, and on a tie it is the even one. Beyond 65504 the next value up
   * is 65536, which is inf: 65520 and above must give inf. */
  bad = 0;
  for (uint32_t x = 0x33000000u; x < 0x47800000u; x += 0x1357u) {
    double f = f32_of_bits(x);
    uint16_t h = gir_f32_to_f16((float)f);
    int ok;
    if (h == 0x7c00) {
      ok = f >= 65520.0;
    } else {
      double got = gir_f16_to_f32(h), err = fabs(got - f);
      double hi = h + 1 == 0x7c00 ? 65536.0 : gir_f16_to_f32((uint16_t)(h + 1));
      double elo = h ? fabs(f - gir_f16_to_f32((uint16_t)(h - 1))) : INFINITY, ehi = fabs(hi - f);
      ok = err <= elo && err <= ehi && h < 0x7c00;
      if (ok && (err == elo || err == ehi)) ok = (h & 1) == 0;
    }
    if (!ok && bad++ < 3) printf("     f32 0x%08x (%.9g) → f16 0x%04x\n", x, f, h);
  }
  CHECKF(bad == 0, "%d float32 values do not round to the nearest (even) half", bad);
}

static void test_bf16(void) {
  CHECK_BITS(gir_f32_to_bf16(1.0f), 0x3f80);
  CHECK_BITS(gir_f32_to_bf16(-1.0f), 0xbf80);
  CHECK_BITS(gir_f32_to_bf16(-0.0f), 0x8000);
  CHECK_BITS(gir_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);            /* tie, even stays */
  CHECK_BITS(gir_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);        /* tie, odd rounds up */
  CHECK_BITS(gir_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above the tie */
  CHECK_BITS(gir_f32_to_bf16(FLT_MAX), 0x7f80);                   /* rounds to inf */
  CHECK_BITS(gir_f32_to_bf16(-FLT_MAX), 0xff80);
  CHECK_BITS(gir_f32_to_bf16(f32_of_bits(0x7f7f7fffu)), 0x7f7f);  /* just below: largest finite */
  CHECK_BITS(gir_f32_to_bf16(INFINITY), 0x7f80);
  CHECK_BITS(gir_f32_to_bf16(-INFINITY), 0xff80);
  uint16_t n = gir_f32_to_bf16(NAN);
  CHECKF((n & 0x7f80) == 0x7f80 && (n & 0x7f), "NaN → 0x%04x", n);
  n = gir_f32_to_bf16(f32_of_bits(0x7f800001u)); /* truncation alone would give inf */
  CHECKF((n & 0x7f80) == 0x7f80 && (n & 0x7f), "NaN with low payload → 0x%04x", n);
  n = gir_f32_to_bf16(f32_of_bits(0xff800001u));
  CHECKF((n & 0xff80) == 0xff80 && (n & 0x7f), "negative NaN → 0x%04x", n);
  /* subnormals keep their exponent range: rounding applies the same way */
  CHECK_BITS(gir_f32_to_bf16(f32_of_bits(0x000116c2u)), 0x0001);
  CHECK_BITS(gir_f32_to_bf16(f32_of_bits(0x00018000u)), 0x0002); /* tie, odd → up */
  CHECK_BITS(gir_f32_to_bf16(f32_of_bits(0x00008000u)), 0x0000); /* tie, even stays */
  CHECK_BITS(gir_f32_to_bf16(f32_of_bits(0x007fffffu)), 0x0080); /* largest f32 subnormal rounds to min normal */
  CHECK_DBL(gir_bf16_to_f32(0x3f80), 1.0);
  CHECK_DBL(gir_bf16_to_f32(0x0001), 0x1p-133);
  CHECK_DBL(gir_bf16_to_f32(0xff80), -INFINITY);
  CHECK(isnan(gir_bf16_to_f32(0x7fc0)));
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = gir_bf16_to_f32((uint16_t)h);
    if (bits_of_f32(f) != h << 16) bad++; /* widening is exact */
    uint16_t back = gir_f32_to_bf16(f);
    int is_nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    if (is_nan ? !(isnan(f) && (back & 0x7f80) == 0x7f80 && (back & 0x7f)) : back != h) bad++;
  }
  CHECKF(bad == 0, "%d bfloat16 values do not round-trip", bad);
}

static uint64_t rd_u64(const void *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint16_t rd_u16(const void *p, int i) {
  uint16_t v;
  memcpy(&v, (const char *)p + 2 * i, 2);
  return v;
}

/* --- float8 / float4: expected codes from numpy with ml_dtypes (x.astype) --- */

static const gir_dtype f8_types[6] = {GIR_F8E4M3FN, GIR_F8E4M3FNUZ, GIR_F8E5M2, GIR_F8E5M2FNUZ, GIR_F4E2M1, GIR_F8E8M0};

static void test_f8(void) {
  /* float32 → code, per type in the order of f8_types (e8m0: the exponent bits) */
  static const struct {
    float x;
    uint8_t want[6];
  } enc[] = {
      {0.0f, {0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
      {-0.0f, {0x80, 0x00, 0x80, 0x00, 0x08, 0x00}},          /* FNUZ: no -0 */
      {1e-7f, {0x00, 0x00, 0x00, 0x00, 0x00, 0x67}},
      {-1e-7f, {0x80, 0x00, 0x80, 0x00, 0x08, 0x67}},
      {1.0f, {0x38, 0x40, 0x3c, 0x40, 0x02, 0x7f}},
      {-2.0f, {0xc0, 0xc8, 0xc0, 0xc4, 0x0c, 0x80}},
      {0.25f, {0x28, 0x30, 0x34, 0x38, 0x00, 0x7d}},            /* float4: tie 0 / 0.5 → 0 */
      {0.2501f, {0x28, 0x30, 0x34, 0x38, 0x01, 0x7d}},
      {0.75f, {0x34, 0x3c, 0x3a, 0x3e, 0x02, 0x7e}},            /* float4: tie 0.5 / 1 → 1 (even) */
      {1.25f, {0x3a, 0x42, 0x3d, 0x41, 0x02, 0x7f}},            /* float4: tie 1 / 1.5 → 1 */
      {1.75f, {0x3e, 0x46, 0x3f, 0x43, 0x04, 0x7f}},            /* float4: tie 1.5 / 2 → 2 */
      {2.5f, {0x42, 0x4a, 0x41, 0x45, 0x04, 0x80}},
      {3.5f, {0x46, 0x4e, 0x43, 0x47, 0x06, 0x80}},
      {5.0f, {0x4a, 0x52, 0x45, 0x49, 0x06, 0x81}},             /* float4: tie 4 / 6 → 4 */
      {7.0f, {0x4e, 0x56, 0x47, 0x4b, 0x07, 0x81}},
      {240.0f, {0x77, 0x7f, 0x5c, 0x60, 0x07, 0x86}},           /* e4m3fnuz max */
      {248.0f, {0x78, 0x80, 0x5c, 0x60, 0x07, 0x86}},           /* e4m3fnuz: rounds beyond max → NaN */
      {448.0f, {0x7e, 0x80, 0x5f, 0x63, 0x07, 0x87}},           /* e4m3fn max */
      {464.0f, {0x7e, 0x80, 0x5f, 0x63, 0x07, 0x87}},           /* e4m3fn: tie with 480 → 448 (even) */
      {465.0f, {0x7f, 0x80, 0x5f, 0x63, 0x07, 0x87}},           /* e4m3fn: beyond → NaN */
      {57344.0f, {0x7f, 0x80, 0x7b, 0x7f, 0x07, 0x8e}},         /* e5m2 max */
      {61439.0f, {0x7f, 0x80, 0x7b, 0x7f, 0x07, 0x8e}},
      {61440.0f, {0x7f, 0x80, 0x7c, 0x80, 0x07, 0x8e}},         /* e5m2: tie with 65536 → inf */
      {1e6f, {0x7f, 0x80, 0x7c, 0x80, 0x07, 0x92}},
      {-1e6f, {0xff, 0x80, 0xfc, 0x80, 0x0f, 0x92}},
      {INFINITY, {0x7f, 0x80, 0x7c, 0x80, 0x07, 0xff}},
      {-INFINITY, {0xff, 0x80, 0xfc, 0x80, 0x0f, 0xff}},
      {NAN, {0x7f, 0x80, 0x7e, 0x80, 0x08, 0xff}},              /* float4 has no NaN: ml_dtypes gives -0 */
      {-NAN, {0xff, 0x80, 0xfe, 0x80, 0x00, 0xff}},
      {0x1p-9f, {0x01, 0x02, 0x18, 0x1c, 0x00, 0x76}},          /* e4m3fn's smallest subnormal */
      {0x1p-10f, {0x00, 0x01, 0x14, 0x18, 0x00, 0x75}},         /* tie with 0 → 0; e4m3fnuz's smallest */
      {0x3p-10f, {0x02, 0x03, 0x1a, 0x1e, 0x00, 0x76}},         /* tie 1 / 2 steps → 2 */
      {0x1p-16f, {0x00, 0x00, 0x01, 0x02, 0x00, 0x6f}},         /* e5m2's smallest subnormal */
      {0x1p-17f, {0x00, 0x00, 0x00, 0x01, 0x00, 0x6e}},         /* e5m2fnuz's smallest */
      {0x1.2p-17f, {0x00, 0x00, 0x01, 0x01, 0x00, 0x6e}},
  };
  for (size_t i = 0; i < sizeof enc / sizeof enc[0]; i++)
    for (int k = 0; k < 6; k++)
      CHECKF(gir_f32_to_f8(f8_types[k], enc[i].x) == enc[i].want[k], "%s(%g) = 0x%02x, want 0x%02x",
             gir_dtype_name(f8_types[k]), enc[i].x, gir_f32_to_f8(f8_types[k], enc[i].x), enc[i].want[k]);
  /* decoding: known values, infinities and NaNs */
  CHECK_DBL(gir_f8_to_f32(GIR_F8E4M3FN, 0x7e), 448);
  CHECK_DBL(gir_f8_to_f32(GIR_F8E4M3FN, 0x01), 0x1p-9);
  CHECK(isnan(gir_f8_to_f32(GIR_F8E4M3FN, 0x7f)) && isnan(gir_f8_to_f32(GIR_F8E4M3FN, 0xff)));
  CHECK_DBL(gir_f8_to_f32(GIR_F8E4M3FNUZ, 0x7f), 240);
  CHECK(isnan(gir_f8_to_f32(GIR_F8E4M3FNUZ, 0x80)) && isnan(gir_f8_to_f32(GIR_F8E5M2FNUZ, 0x80)));
  CHECK_DBL(gir_f8_to_f32(GIR_F8E5M2, 0x7c), INFINITY);
  CHECK_DBL(gir_f8_to_f32(GIR_F8E5M2, 0xfc), -INFINITY);
  CHECK(isnan(gir_f8_to_f32(GIR_F8E5M2, 0x7d)) && isnan(gir_f8_to_f32(GIR_F8E5M2, 0xfe)));
  CHECK_DBL(gir_f8_to_f32(GIR_F8E5M2FNUZ, 0x7f), 57344);
  CHECK_DBL(gir_f8_to_f32(GIR_F8E5M2FNUZ, 0x01), 0x1p-17);
  CHECK_DBL(gir_f8_to_f32(GIR_F4E2M1, 0x07), 6);
  CHECK_DBL(gir_f8_to_f32(GIR_F4E2M1, 0x09), -0.5);
  CHECK(signbit(gir_f8_to_f32(GIR_F4E2M1, 0x08)) && signbit(gir_f8_to_f32(GIR_F8E4M3FN, 0x80)));
  CHECK_DBL(gir_f8_to_f32(GIR_F8E8M0, 0x7f), 1);
  CHECK_DBL(gir_f8_to_f32(GIR_F8E8M0, 0x00), 0x1p-127);
  CHECK_DBL(gir_f8_to_f32(GIR_F8E8M0, 0xfe), 0x1p127);
  CHECK(isnan(gir_f8_to_f32(GIR_F8E8M0, 0xff)));
  /* every code round-trips (NaNs to the canonical NaN of their sign), and the
   * finite codes of each format decode in increasing order */
  for (int k = 0; k < 6; k++) {
    gir_dtype t = f8_types[k];
    int ncodes = t == GIR_F4E2M1 ? 16 : 256, bad = 0;
    for (int c = 0; c < ncodes; c++) {
      float f = gir_f8_to_f32(t, (uint8_t)c);
      uint8_t back = gir_f32_to_f8(t, f);
      if (isnan(f)) bad += !isnan(gir_f8_to_f32(t, back)) || back != gir_f32_to_f8(t, signbit(f) ? -NAN : NAN);
      else bad += back != c && !(f == 0 && c != 0 && t == GIR_F8E8M0); /* e8m0 has no zero */
    }
    CHECKF(bad == 0, "%s: %d codes do not round-trip", gir_dtype_name(t), bad);
    if (t == GIR_F8E8M0) continue;
    gir_f8_format f;
    CHECK(gir_f8_format_of(t, &f));
    bad = 0;
    for (uint32_t c = 1; c <= f.max_code; c++)
      bad += !(gir_f8_to_f32(t, (uint8_t)c) > gir_f8_to_f32(t, (uint8_t)(c - 1)));
    CHECKF(bad == 0, "%s: finite codes out of order", gir_dtype_name(t));
    /* midpoints of neighbours round to the even code, just above them up */
    bad = 0;
    for (uint32_t c = 0; c < f.max_code; c++) {
      float lo = gir_f8_to_f32(t, (uint8_t)c), hi = gir_f8_to_f32(t, (uint8_t)(c + 1)), mid = (lo + hi) / 2;
      bad += gir_f32_to_f8(t, mid) != (c & 1 ? c + 1 : c);
      bad += gir_f32_to_f8(t, nextafterf(mid, INFINITY)) != c + 1 || gir_f32_to_f8(t, nextafterf(mid, 0)) != c;
    }
    CHECKF(bad == 0, "%s: %d midpoints round wrongly", gir_dtype_name(t), bad);
  }
  /* through double: rounded to float32 first, as ml_dtypes does */
  CHECK_INT(gir_f64_to_f8(GIR_F8E4M3FN, 0.004882812509094947), 0x02);
  CHECK_INT(gir_f64_to_f8(GIR_F8E5M2, 1e300), 0x7c);
  /* loads and stores */
  unsigned char buf[8];
  gir_store_f64(GIR_F8E4M3FN, buf, 3, 1.0);
  CHECK_INT(buf[3], 0x38);
  CHECK_DBL(gir_load_f64(GIR_F8E4M3FN, buf, 3), 1.0);
  gir_store_f64(GIR_F8E5M2, buf, 0, 3.0);
  CHECK_INT(buf[0], 0x42);
  CHECK_INT(gir_load_i64(GIR_F8E5M2, buf, 0), 3);
}

/* int4 / uint4 / int2 / uint2: one byte each, stores wrap to the width. */
static void test_subbyte_ints(void) {
  static const struct {
    gir_dtype t;
    int64_t v, want;
  } w[] = {
      {GIR_I4, 7, 7},   {GIR_I4, 8, -8},  {GIR_I4, -9, 7},  {GIR_I4, 15, -1}, {GIR_I4, -8, -8}, {GIR_U4, 15, 15},
      {GIR_U4, 16, 0},  {GIR_U4, -1, 15}, {GIR_I2, 1, 1},   {GIR_I2, 2, -2},  {GIR_I2, -3, 1},  {GIR_I2, 3, -1},
      {GIR_U2, 3, 3},   {GIR_U2, 4, 0},   {GIR_U2, -1, 3},
  };
  unsigned char buf[4] = {0};
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
    gir_store_i64(w[i].t, buf, 1, w[i].v);
    CHECKF(gir_load_i64(w[i].t, buf, 1) == w[i].want, "%s(%lld)", gir_dtype_name(w[i].t), (long long)w[i].v);
    CHECKF((int8_t)buf[1] == w[i].want, "%s(%lld): byte", gir_dtype_name(w[i].t), (long long)w[i].v); /* extended */
    CHECK_INT(buf[0], 0);
    CHECK_INT(buf[2], 0);
  }
  /* float → int4: truncate toward zero, then wrap (numpy with ml_dtypes) */
  gir_store_f64(GIR_I4, buf, 0, -8.5);
  CHECK_INT(gir_load_i64(GIR_I4, buf, 0), -8);
  gir_store_f64(GIR_I4, buf, 0, 9.9);
  CHECK_INT(gir_load_i64(GIR_I4, buf, 0), -7);
  gir_store_f64(GIR_U2, buf, 0, 2.5);
  CHECK_INT(gir_load_i64(GIR_U2, buf, 0), 2);
  gir_store_f64(GIR_I2, buf, 0, NAN);
  CHECK_INT(gir_load_i64(GIR_I2, buf, 0), 0);
  CHECK_DBL(gir_load_f64(GIR_I4, (unsigned char[]){0xf9}, 0), -7);
}

static void test_load_store(void) {
  unsigned char buf[64];
  /* float → int truncates toward zero */
  gir_store_f64(GIR_I32, buf, 0, 3.9);
  CHECK_INT(gir_load_i64(GIR_I32, buf, 0), 3);
  gir_store_f64(GIR_I32, buf, 1, -3.9);
  CHECK_INT(gir_load_i64(GIR_I32, buf, 1), -3);
  gir_store_f64(GIR_I8, buf, 0, 127.9);
  CHECK_INT(gir_load_i64(GIR_I8, buf, 0), 127);
  gir_store_f64(GIR_I8, buf, 0, -128.9);
  CHECK_INT(gir_load_i64(GIR_I8, buf, 0), -128);
  gir_store_f64(GIR_U8, buf, 0, 255.9);
  CHECK_INT(gir_load_i64(GIR_U8, buf, 0), 255);
  /* int64: saturation at both ends, NaN → 0 */
  gir_store_f64(GIR_I64, buf, 0, 1e30);
  CHECK_INT(gir_load_i64(GIR_I64, buf, 0), INT64_MAX);
  gir_store_f64(GIR_I64, buf, 0, -1e30);
  CHECK_INT(gir_load_i64(GIR_I64, buf, 0), INT64_MIN);
  gir_store_f64(GIR_I64, buf, 0, INFINITY);
  CHECK_INT(gir_load_i64(GIR_I64, buf, 0), INT64_MAX);
  gir_store_f64(GIR_I64, buf, 0, NAN);
  CHECK_INT(gir_load_i64(GIR_I64, buf, 0), 0);
  gir_store_f64(GIR_I64, buf, 0, 9007199254740993.0); /* 2^53+1 rounds to 2^53 as a double */
  CHECK_INT(gir_load_i64(GIR_I64, buf, 0), 9007199254740992LL);
  /* uint64: negatives → 0, too large → max */
  gir_store_f64(GIR_U64, buf, 0, -5.0);
  CHECK_U64(rd_u64(buf), 0);
  gir_store_f64(GIR_U64, buf, 0, 1e30);
  CHECK_U64(rd_u64(buf), UINT64_MAX);
  gir_store_f64(GIR_U64, buf, 0, NAN);
  CHECK_U64(rd_u64(buf), 0);
  gir_store_f64(GIR_U64, buf, 0, 1.8e19);
  CHECK_U64(rd_u64(buf), 18000000000000000000ull);
  /* Narrower integers: truncation to int64 (saturating there, NaN → 0), then
   * two's-complement wrap to the width — the rule of dtype.c, te_eval.c and the
   * generated code alike (and what numpy/ONNX Runtime do on x86 for values in the
   * int64 range; ONNX leaves out-of-range casts undefined). */
  struct {
    gir_dtype t;
    double v;
    int64_t want;
  } wrapc[] = {
      {GIR_I8, 300.0, 44},             {GIR_I8, -300.0, -44},            {GIR_I16, 1e6, 16960},
      {GIR_I16, -1e6, -16960},         {GIR_I32, 1e10, 1410065408},      {GIR_I32, -1e10, -1410065408},
      {GIR_I32, INFINITY, -1},         {GIR_U8, 300.0, 44},              {GIR_U8, -1.0, 255},
      {GIR_U16, 70000.0, 4464},        {GIR_U16, -7.0, 65529},           {GIR_U32, 5e9, 705032704},
      {GIR_U32, -1.0, 4294967295LL},   {GIR_I8, NAN, 0},                 {GIR_U32, NAN, 0},
  };
  for (size_t i = 0; i < sizeof wrapc / sizeof wrapc[0]; i++) {
    memset(buf, 0x5a, sizeof buf);
    gir_store_f64(wrapc[i].t, buf, 0, wrapc[i].v);
    int64_t got = gir_load_i64(wrapc[i].t, buf, 0);
    CHECKF(got == wrapc[i].want, "gir_store_f64(%s, %g) → %lld, expected %lld (int64 truncation, then wrap)",
           gir_dtype_name(wrapc[i].t), wrapc[i].v, (long long)got, (long long)wrapc[i].want);
  }
  /* bool: non-zero (and NaN) is true */
  gir_store_f64(GIR_BOOL, buf, 0, 0.25);
  CHECK_INT(buf[0], 1);
  gir_store_f64(GIR_BOOL, buf, 0, 0.0);
  CHECK_INT(buf[0], 0);
  gir_store_f64(GIR_BOOL, buf, 0, -0.0);
  CHECK_INT(buf[0], 0);
  gir_store_i64(GIR_BOOL, buf, 0, 256);
  CHECK_INT(buf[0], 1);
  /* half types store with RNE and overflow to inf */
  gir_store_f64(GIR_F16, buf, 0, 65520.0);
  CHECK_BITS(rd_u16(buf, 0), 0x7c00);
  gir_store_f64(GIR_F16, buf, 1, -1e300);
  CHECK_BITS(rd_u16(buf, 1), 0xfc00);
  gir_store_f64(GIR_BF16, buf, 0, 1.0 + 0x1p-8);
  CHECK_BITS(rd_u16(buf, 0), 0x3f80);
  CHECK_DBL(gir_load_f64(GIR_F16, buf, 1), -INFINITY);
  gir_store_f64(GIR_F32, buf, 0, 1e300);
  CHECK_DBL(gir_load_f64(GIR_F32, buf, 0), INFINITY);
  /* index i addresses element i */
  for (int i = 0; i < 8; i++) gir_store_i64(GIR_I16, buf, i, -i * 1000);
  int idx_ok = 1;
  for (int i = 0; i < 8; i++) idx_ok &= gir_load_i64(GIR_I16, buf, i) == -i * 1000;
  CHECK(idx_ok);
  /* loads */
  uint64_t u = UINT64_MAX;
  CHECK_DBL(gir_load_f64(GIR_U64, &u, 0), 18446744073709551615.0);
  CHECK_INT(gir_load_i64(GIR_U64, &u, 0), -1); /* bit pattern */
  float fv[2] = {NAN, 1e30f};
  CHECK_INT(gir_load_i64(GIR_F32, fv, 0), 0);
  CHECK_INT(gir_load_i64(GIR_F32, fv, 1), INT64_MAX);
  int8_t i8 = -7;
  CHECK_DBL(gir_load_f64(GIR_I8, &i8, 0), -7.0);
  uint8_t b2 = 2;
  CHECK_DBL(gir_load_f64(GIR_BOOL, &b2, 0), 1.0);
  /* store_i64 wraps nothing that fits, and converts to floats */
  gir_store_i64(GIR_F64, buf, 0, -12345);
  CHECK_DBL(gir_load_f64(GIR_F64, buf, 0), -12345.0);
  gir_store_i64(GIR_U32, buf, 0, 4000000000LL);
  CHECK_INT(gir_load_i64(GIR_U32, buf, 0), 4000000000LL);
}

/* --- shapes --- */

static void test_shapes(void) {
  gir_err e = {{0}};
  gir_shape s = SH(2, 3, 4);
  CHECK_INT(gir_shape_numel(&s, &e), 24);
  CHECK_INT(gir_shape_numel(&SCALAR, &e), 1);
  s = SH(5, 0, 7);
  CHECK_INT(gir_shape_numel(&s, &e), 0);
  s = SH(0, INT64_MAX, INT64_MAX);
  CHECK_INT(gir_shape_numel(&s, &e), 0);
  s = SH(1ll << 31, 1ll << 31);
  CHECK_INT(gir_shape_numel(&s, &e), 1ll << 62);
  s = SH(INT64_MAX, 1);
  CHECK_INT(gir_shape_numel(&s, &e), INT64_MAX);
  CHECK(e.msg[0] == 0);
  s = SH(1ll << 32, 1ll << 32);
  CHECK_INT(gir_shape_numel(&s, &e), -1);
  CHECK_CONTAINS(e.msg, "overflow");
  e.msg[0] = 0;
  s = SH(1ll << 31, 1ll << 31, 2);
  CHECK_INT(gir_shape_numel(&s, &e), -1);
  CHECK(e.msg[0] != 0);
  e.msg[0] = 0;
  s = SH(INT64_MAX, 2);
  CHECK_INT(gir_shape_numel(&s, &e), -1);
  e.msg[0] = 0;
  s = SH(3, -1);
  CHECK_INT(gir_shape_numel(&s, &e), -1);
  CHECK_CONTAINS(e.msg, "negative");
  CHECK_INT(gir_shape_numel(&s, NULL), -1); /* NULL err is allowed */

  char b[160];
  s = SH(1, 3, 224, 224);
  CHECK_STR(gir_shape_str(&s, b, sizeof b), "1x3x224x224");
  CHECK_STR(gir_shape_str(&SCALAR, b, sizeof b), "scalar");
  s = SH(0);
  CHECK_STR(gir_shape_str(&s, b, sizeof b), "0");
  s = SH(INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX);
  gir_shape_str(&s, b, sizeof b); /* 8 × 19 digits + 7 'x' = 159 chars: fits in 160 */
  CHECK_INT(strlen(b), 159);
  char small[8];
  s = SH(123456, 789);
  gir_shape_str(&s, small, sizeof small); /* truncates, never overflows */
  CHECK(strlen(small) < sizeof small);

  gir_shape a = SH(2, 3), c = SH(2, 3), d = SH(3, 2), f = SH(2, 3, 1);
  CHECK(gir_shape_equal(&a, &c) && !gir_shape_equal(&a, &d) && !gir_shape_equal(&a, &f));
  CHECK(gir_shape_equal(&SCALAR, &SCALAR));

  gir_graph *g = gir_graph_new("shapes");
  gir_value *v = gir_value_new(g, "v", GIR_F16, &SH(3, 5));
  CHECK_INT(gir_value_numel(v), 15);
  CHECK_INT(gir_value_nbytes(v), 30);
  v = gir_value_new(g, "w", GIR_F64, &SH(1ll << 61));
  CHECK_INT(gir_value_nbytes(v), -1); /* 2^64 bytes */
  gir_value *k = gir_const_i64s(g, (int64_t[]){4, 5, 6}, 3);
  CHECK(k->data && ((int64_t *)k->data)[2] == 6 && k->shape.rank == 1 && k->shape.dims[0] == 3 && k->dtype == GIR_I64);
  gir_value *sc = gir_const_scalar(g, GIR_F16, 1.0);
  CHECK(sc->shape.rank == 0 && *(uint16_t *)sc->data == 0x3c00);
  gir_value *named = gir_value_new(g, "named", GIR_F32, NULL);
  CHECK_STR(named->name, "named");
  CHECK(named->shape.rank == 0);
  gir_value *anon = gir_value_new(g, NULL, GIR_F32, NULL);
  CHECK(anon->name && anon->name[0] == '%');
  CHECK(anon->id == g->n_values - 1 && g->values[anon->id] == anon);
  gir_graph_free(g);
}

/* --- shape inference, op by op --- */

static void test_infer_elementwise(gir_graph *g) {
  gir_value *x = input(g, GIR_F32, SH(2, 3)), *xi = input(g, GIR_I32, SH(2, 3)), *xb = input(g, GIR_BOOL, SH(2, 3));
  gir_node *n;
  n = NODE(g, GIR_OP_unary, x);
  set_i(g, n, "fn", GIR_UNARY_RELU);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3));
  n = NODE(g, GIR_OP_unary, x);
  set_i(g, n, "fn", GIR_UNARY_ISNAN);
  EXPECT_OUT(g, n, GIR_BOOL, SH(2, 3));
  n = NODE(g, GIR_OP_unary, x);
  set_i(g, n, "fn", GIR_UNARY_ISINF);
  EXPECT_OUT(g, n, GIR_BOOL, SH(2, 3));
  n = NODE(g, GIR_OP_unary, xb);
  set_i(g, n, "fn", GIR_UNARY_NOT);
  EXPECT_OUT(g, n, GIR_BOOL, SH(2, 3));
  n = NODE(g, GIR_OP_unary, xi);
  set_i(g, n, "fn", GIR_UNARY_BITNOT);
  EXPECT_OUT(g, n, GIR_I32, SH(2, 3));
  n = NODE(g, GIR_OP_unary, x);
  set_i(g, n, "fn", GIR_UNARY_NOT); /* not on float */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_unary, x);
  set_i(g, n, "fn", GIR_UNARY_BITNOT); /* bitnot on float */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_unary, x); /* no fn */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_unary, x);
  set_i(g, n, "fn", GIR_UNARY_COUNT);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_unary, x);
  set_i(g, n, "fn", -5);
  EXPECT_ERR(g, n);

  /* binary: numpy broadcasting */
  gir_value *a = input(g, GIR_F32, SH(2, 1, 4)), *b = input(g, GIR_F32, SH(3, 1)), *sc = input(g, GIR_F32, SCALAR);
  gir_value *e0 = input(g, GIR_F32, SH(0, 3)), *o3 = input(g, GIR_F32, SH(1, 3)), *bad = input(g, GIR_F32, SH(4, 3));
  gir_value *i64 = input(g, GIR_I64, SH(2, 3));
  n = NODE(g, GIR_OP_binary, a, b);
  set_i(g, n, "fn", GIR_BINARY_ADD);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_binary, b, a);
  set_i(g, n, "fn", GIR_BINARY_SUB);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_binary, sc, o3);
  set_i(g, n, "fn", GIR_BINARY_MUL);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 3));
  n = NODE(g, GIR_OP_binary, sc, sc);
  set_i(g, n, "fn", GIR_BINARY_MUL);
  EXPECT_OUT(g, n, GIR_F32, SCALAR);
  n = NODE(g, GIR_OP_binary, e0, o3); /* 0 broadcasts against 1 */
  set_i(g, n, "fn", GIR_BINARY_ADD);
  EXPECT_OUT(g, n, GIR_F32, SH(0, 3));
  n = NODE(g, GIR_OP_binary, x, bad);
  set_i(g, n, "fn", GIR_BINARY_ADD);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_binary, e0, x); /* 0 vs 2 does not broadcast */
  set_i(g, n, "fn", GIR_BINARY_ADD);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_binary, x, i64);
  set_i(g, n, "fn", GIR_BINARY_ADD);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_binary, x, a);
  set_i(g, n, "fn", GIR_BINARY_LT); /* comparisons give bool */
  EXPECT_ERR(g, n);                 /* [2,3] vs [2,1,4]: 3 vs 4 */
  n = NODE(g, GIR_OP_binary, x, o3);
  set_i(g, n, "fn", GIR_BINARY_GE);
  EXPECT_OUT(g, n, GIR_BOOL, SH(2, 3));
  n = NODE(g, GIR_OP_binary, x, i64);
  set_i(g, n, "fn", GIR_BINARY_POW); /* pow may mix types: result has the base's type */
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3));
  n = NODE(g, GIR_OP_binary, x, x);
  EXPECT_ERR(g, n); /* no fn */
  n = NODE(g, GIR_OP_binary, x, x);
  set_i(g, n, "fn", GIR_BINARY_COUNT);
  EXPECT_ERR(g, n);

  /* where */
  gir_value *c21 = input(g, GIR_BOOL, SH(2, 1)), *f13 = input(g, GIR_F32, SH(1, 3)), *f21 = input(g, GIR_F32, SH(2, 1));
  n = NODE(g, GIR_OP_where, c21, f13, f21);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3));
  n = NODE(g, GIR_OP_where, xb, sc, sc);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3));
  n = NODE(g, GIR_OP_where, x, f13, f21); /* float condition */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_where, c21, f13, i64); /* branches differ */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_where, c21, bad, f21); /* [2,1] vs [4,3] */
  EXPECT_ERR(g, n);

  /* cast: `to` is a gir_dtype */
  n = NODE(g, GIR_OP_cast, x);
  set_i(g, n, "to", GIR_F16);
  EXPECT_OUT(g, n, GIR_F16, SH(2, 3));
  n = NODE(g, GIR_OP_cast, x);
  set_i(g, n, "to", GIR_BOOL);
  EXPECT_OUT(g, n, GIR_BOOL, SH(2, 3));
  n = NODE(g, GIR_OP_cast, x);
  set_i(g, n, "to", GIR_STRING);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_cast, x);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_cast, x);
  set_i(g, n, "to", 999);
  EXPECT_ERR(g, n);

  /* iota: no inputs */
  n = gir_node_new(g, GIR_OP_iota, NULL, NULL, 0, 1);
  gir_attr_set_ints(g, n, "shape", INTS(2, 3));
  set_i(g, n, "axis", 1);
  set_i(g, n, "to", GIR_I32);
  EXPECT_OUT(g, n, GIR_I32, SH(2, 3));
  n = gir_node_new(g, GIR_OP_iota, NULL, NULL, 0, 1);
  gir_attr_set_ints(g, n, "shape", INTS(5));
  gir_attr_set_float(g, n, "start", 1.5);
  gir_attr_set_float(g, n, "delta", 0.5);
  set_i(g, n, "to", GIR_F32);
  EXPECT_OUT(g, n, GIR_F32, SH(5));
  n = gir_node_new(g, GIR_OP_iota, NULL, NULL, 0, 1);
  gir_attr_set_ints(g, n, "shape", INTS(2, 3));
  set_i(g, n, "axis", 2);
  EXPECT_ERR(g, n);
  n = gir_node_new(g, GIR_OP_iota, NULL, NULL, 0, 1);
  gir_attr_set_ints(g, n, "shape", INTS(2, 3));
  set_i(g, n, "to", GIR_STRING);
  EXPECT_ERR(g, n);
  n = gir_node_new(g, GIR_OP_iota, NULL, NULL, 0, 1);
  gir_attr_set_ints(g, n, "shape", INTS(2, -3));
  EXPECT_ERR(g, n);
  n = gir_node_new(g, GIR_OP_iota, NULL, NULL, 0, 1);
  gir_attr_set_ints(g, n, "shape", INTS(1, 1, 1, 1, 1, 1, 1, 1, 1));
  EXPECT_ERR(g, n);
  n = gir_node_new(g, GIR_OP_iota, NULL, NULL, 0, 1);
  gir_attr_set_ints(g, n, "shape", INTS(1ll << 40, 1ll << 40));
  EXPECT_ERR(g, n);
}

static void test_infer_movement(gir_graph *g) {
  gir_value *x = input(g, GIR_F32, SH(2, 3, 4)), *y = input(g, GIR_F32, SH(2, 5, 4));
  gir_value *yi = input(g, GIR_I32, SH(2, 5, 4));
  gir_node *n;
  /* reshape */
  n = NODE(g, GIR_OP_reshape, x);
  gir_attr_set_ints(g, n, "shape", INTS(6, 4));
  EXPECT_OUT(g, n, GIR_F32, SH(6, 4));
  n = NODE(g, GIR_OP_reshape, x);
  gir_attr_set_ints(g, n, "shape", INTS(24, 1, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(24, 1, 1));
  n = NODE(g, GIR_OP_reshape, x);
  gir_attr_set_ints(g, n, "shape", INTS(7));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_reshape, x); /* -1 is resolved by the importer, never seen here */
  gir_attr_set_ints(g, n, "shape", INTS(-1, 6));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_reshape, x);
  gir_attr_set_ints(g, n, "shape", INTS(1, 1, 1, 1, 1, 1, 2, 3, 4));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_reshape, x); /* missing shape = scalar: 24 elements do not fit */
  EXPECT_ERR(g, n);
  gir_value *one = input(g, GIR_F32, SH(1, 1));
  n = NODE(g, GIR_OP_reshape, one);
  gir_attr_set_ints(g, n, "shape", (int64_t[]){0}, 0);
  EXPECT_OUT(g, n, GIR_F32, SCALAR);
  n = NODE(g, GIR_OP_reshape, one);
  gir_attr_set_ints(g, n, "shape", INTS(1ll << 32, 1ll << 32)); /* numel overflow, not a match by accident */
  EXPECT_ERR(g, n);

  /* transpose */
  n = NODE(g, GIR_OP_transpose, x);
  gir_attr_set_ints(g, n, "perm", INTS(2, 0, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(4, 2, 3));
  n = NODE(g, GIR_OP_transpose, x);
  gir_attr_set_ints(g, n, "perm", INTS(0, 0, 1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_transpose, x);
  gir_attr_set_ints(g, n, "perm", INTS(0, 1, 3));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_transpose, x);
  gir_attr_set_ints(g, n, "perm", INTS(0, -1, 1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_transpose, x);
  gir_attr_set_ints(g, n, "perm", INTS(1, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_transpose, x);
  EXPECT_ERR(g, n);

  /* concat */
  n = NODE(g, GIR_OP_concat, x, y, x);
  set_i(g, n, "axis", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 11, 4));
  n = NODE(g, GIR_OP_concat, x, y);
  set_i(g, n, "axis", -2);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 8, 4));
  n = NODE(g, GIR_OP_concat, x);
  set_i(g, n, "axis", 0);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_concat, x, y);
  set_i(g, n, "axis", 0); /* 3 vs 5 on axis 1 */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_concat, x, y);
  set_i(g, n, "axis", 3);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_concat, x, yi);
  set_i(g, n, "axis", 1);
  EXPECT_ERR(g, n);
  gir_value *r2 = input(g, GIR_F32, SH(2, 3));
  n = NODE(g, GIR_OP_concat, x, r2);
  set_i(g, n, "axis", 0);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_concat, x, NULL);
  set_i(g, n, "axis", 0);
  EXPECT_ERR(g, n);
  gir_value *sc = input(g, GIR_F32, SCALAR);
  n = NODE(g, GIR_OP_concat, sc, sc);
  EXPECT_ERR(g, n);

  /* slice: one start/step/size per axis, fully normalized */
  gir_value *v10 = input(g, GIR_F32, SH(10)), *m = input(g, GIR_F32, SH(4, 6));
  n = NODE(g, GIR_OP_slice, v10); /* reads 2,5,8 */
  gir_attr_set_ints(g, n, "starts", INTS(2));
  gir_attr_set_ints(g, n, "steps", INTS(3));
  gir_attr_set_ints(g, n, "sizes", INTS(3));
  EXPECT_OUT(g, n, GIR_F32, SH(3));
  n = NODE(g, GIR_OP_slice, v10); /* would read 11 */
  gir_attr_set_ints(g, n, "starts", INTS(2));
  gir_attr_set_ints(g, n, "steps", INTS(3));
  gir_attr_set_ints(g, n, "sizes", INTS(4));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, v10); /* reads 9,7,5,3,1 */
  gir_attr_set_ints(g, n, "starts", INTS(9));
  gir_attr_set_ints(g, n, "steps", INTS(-2));
  gir_attr_set_ints(g, n, "sizes", INTS(5));
  EXPECT_OUT(g, n, GIR_F32, SH(5));
  n = NODE(g, GIR_OP_slice, v10); /* would read -1 */
  gir_attr_set_ints(g, n, "starts", INTS(9));
  gir_attr_set_ints(g, n, "steps", INTS(-2));
  gir_attr_set_ints(g, n, "sizes", INTS(6));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, v10); /* start past the end */
  gir_attr_set_ints(g, n, "starts", INTS(10));
  gir_attr_set_ints(g, n, "steps", INTS(1));
  gir_attr_set_ints(g, n, "sizes", INTS(1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, v10);
  gir_attr_set_ints(g, n, "starts", INTS(-1));
  gir_attr_set_ints(g, n, "steps", INTS(1));
  gir_attr_set_ints(g, n, "sizes", INTS(1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, v10); /* empty slice: start is never read */
  gir_attr_set_ints(g, n, "starts", INTS(10));
  gir_attr_set_ints(g, n, "steps", INTS(1));
  gir_attr_set_ints(g, n, "sizes", INTS(0));
  EXPECT_OUT(g, n, GIR_F32, SH(0));
  n = NODE(g, GIR_OP_slice, v10);
  gir_attr_set_ints(g, n, "starts", INTS(0));
  gir_attr_set_ints(g, n, "steps", INTS(0));
  gir_attr_set_ints(g, n, "sizes", INTS(1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, v10);
  gir_attr_set_ints(g, n, "starts", INTS(0));
  gir_attr_set_ints(g, n, "steps", INTS(1));
  gir_attr_set_ints(g, n, "sizes", INTS(-1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, v10); /* huge step: the last index overflows int64 */
  gir_attr_set_ints(g, n, "starts", INTS(0));
  gir_attr_set_ints(g, n, "steps", INTS(INT64_MAX));
  gir_attr_set_ints(g, n, "sizes", INTS(3));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, v10);
  gir_attr_set_ints(g, n, "starts", INTS(9));
  gir_attr_set_ints(g, n, "steps", INTS(INT64_MIN));
  gir_attr_set_ints(g, n, "sizes", INTS(2));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, m);
  gir_attr_set_ints(g, n, "starts", INTS(1, 5));
  gir_attr_set_ints(g, n, "steps", INTS(2, -1));
  gir_attr_set_ints(g, n, "sizes", INTS(2, 6));
  EXPECT_OUT(g, n, GIR_F32, SH(2, 6));
  n = NODE(g, GIR_OP_slice, m); /* one value per axis needed */
  gir_attr_set_ints(g, n, "starts", INTS(1));
  gir_attr_set_ints(g, n, "steps", INTS(1));
  gir_attr_set_ints(g, n, "sizes", INTS(1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_slice, m);
  EXPECT_ERR(g, n);

  /* pad: [begin..., end...], negative = crop */
  gir_value *p = input(g, GIR_F32, SH(3, 4)), *pv = input(g, GIR_F32, SCALAR), *pvi = input(g, GIR_I32, SCALAR);
  gir_value *pv2 = input(g, GIR_F32, SH(2)), *e = input(g, GIR_F32, SH(0, 4));
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(1, 2, 0, -1));
  EXPECT_OUT(g, n, GIR_F32, SH(4, 5));
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(-1, -2, -2, -2));
  EXPECT_OUT(g, n, GIR_F32, SH(0, 0));
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(-2, 0, -2, 0)); /* 3 - 4 < 0 */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(-4, 0, 0, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(INT64_MAX, 0, INT64_MAX, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(INT64_MIN, 0, 0, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(2, 3, 2, 3));
  set_i(g, n, "mode", GIR_PAD_REFLECT); /* pads < dim: fine */
  EXPECT_OUT(g, n, GIR_F32, SH(7, 10));
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(3, 0, 0, 0));
  set_i(g, n, "mode", GIR_PAD_REFLECT); /* reflect needs pads < dim */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(5, 0, 5, 0));
  set_i(g, n, "mode", GIR_PAD_EDGE);
  EXPECT_OUT(g, n, GIR_F32, SH(13, 4));
  n = NODE(g, GIR_OP_pad, e);
  gir_attr_set_ints(g, n, "pads", INTS(1, 0, 0, 0));
  set_i(g, n, "mode", GIR_PAD_EDGE); /* nothing to replicate */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, e);
  gir_attr_set_ints(g, n, "pads", INTS(1, 0, 1, 0));
  EXPECT_OUT(g, n, GIR_F32, SH(2, 4)); /* constant mode can pad an empty axis */
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(0, 0, 0, 0));
  set_i(g, n, "mode", GIR_PAD_COUNT);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, p);
  gir_attr_set_ints(g, n, "pads", INTS(1, 1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, p, pv);
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(5, 6));
  n = NODE(g, GIR_OP_pad, p, NULL); /* absent optional value */
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(5, 6));
  n = NODE(g, GIR_OP_pad, p, pvi);
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pad, p, pv2);
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  EXPECT_ERR(g, n);

  /* broadcast_to */
  gir_value *b31 = input(g, GIR_F32, SH(3, 1)), *b32 = input(g, GIR_F32, SH(3, 2)), *b13 = input(g, GIR_F32, SH(1, 3));
  n = NODE(g, GIR_OP_broadcast_to, b31);
  gir_attr_set_ints(g, n, "shape", INTS(2, 3, 4));
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_broadcast_to, sc);
  gir_attr_set_ints(g, n, "shape", INTS(5, 0));
  EXPECT_OUT(g, n, GIR_F32, SH(5, 0));
  n = NODE(g, GIR_OP_broadcast_to, b32);
  gir_attr_set_ints(g, n, "shape", INTS(3, 4));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_broadcast_to, b13); /* target of lower rank */
  gir_attr_set_ints(g, n, "shape", INTS(3));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_broadcast_to, sc);
  gir_attr_set_ints(g, n, "shape", INTS(1ll << 62));
  EXPECT_ERR(g, n); /* 2^62 floats: the byte size overflows */

  /* tile */
  gir_value *t23 = input(g, GIR_F32, SH(2, 3)), *big = input(g, GIR_U8, SH(1ll << 40));
  n = NODE(g, GIR_OP_tile, t23);
  gir_attr_set_ints(g, n, "repeats", INTS(2, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(4, 3));
  n = NODE(g, GIR_OP_tile, t23);
  gir_attr_set_ints(g, n, "repeats", INTS(0, 3));
  EXPECT_OUT(g, n, GIR_F32, SH(0, 9));
  n = NODE(g, GIR_OP_tile, t23);
  gir_attr_set_ints(g, n, "repeats", INTS(2));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_tile, t23);
  gir_attr_set_ints(g, n, "repeats", INTS(-1, 1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_tile, big);
  gir_attr_set_ints(g, n, "repeats", INTS(1ll << 40));
  EXPECT_ERR(g, n);

  /* gather */
  gir_value *d = input(g, GIR_F32, SH(5, 4, 3)), *ix = input(g, GIR_I64, SH(2, 6)), *ix32 = input(g, GIR_I32, SH(7));
  gir_value *ixs = input(g, GIR_I64, SCALAR), *ixf = input(g, GIR_F32, SH(2));
  n = NODE(g, GIR_OP_gather, d, ix);
  set_i(g, n, "axis", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(5, 2, 6, 3));
  n = NODE(g, GIR_OP_gather, d, ix);
  set_i(g, n, "axis", -1);
  EXPECT_OUT(g, n, GIR_F32, SH(5, 4, 2, 6));
  n = NODE(g, GIR_OP_gather, d, ix32);
  EXPECT_OUT(g, n, GIR_F32, SH(7, 4, 3));
  n = NODE(g, GIR_OP_gather, d, ixs);
  EXPECT_OUT(g, n, GIR_F32, SH(4, 3));
  n = NODE(g, GIR_OP_gather, d, ixf);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather, d, ix);
  set_i(g, n, "axis", 3);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather, sc, ix); /* scalar data has no axis 0 */
  EXPECT_ERR(g, n);
  gir_value *d5 = input(g, GIR_F32, SH(1, 1, 1, 1, 2)), *ix5 = input(g, GIR_I64, SH(1, 1, 1, 1, 1));
  n = NODE(g, GIR_OP_gather, d5, ix5); /* rank 4 + 5 = 9 */
  EXPECT_ERR(g, n);

  /* gather_elements */
  gir_value *ge = input(g, GIR_F32, SH(3, 4)), *gi = input(g, GIR_I32, SH(2, 4)), *gi1 = input(g, GIR_I64, SH(8));
  n = NODE(g, GIR_OP_gather_elements, ge, gi);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 4));
  n = NODE(g, GIR_OP_gather_elements, ge, gi);
  set_i(g, n, "axis", -1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 4));
  n = NODE(g, GIR_OP_gather_elements, ge, gi1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_elements, ge, ge);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_elements, ge, gi);
  set_i(g, n, "axis", 2);
  EXPECT_ERR(g, n);

  /* gather_nd: y = idx[:-1] + d[b + q:] */
  gir_value *nd = input(g, GIR_F32, SH(2, 3, 4));
  gir_value *q2 = input(g, GIR_I64, SH(5, 2)), *q3 = input(g, GIR_I64, SH(5, 3)), *q4 = input(g, GIR_I64, SH(5, 4));
  gir_value *qb = input(g, GIR_I64, SH(2, 5, 1)), *qbad = input(g, GIR_I64, SH(3, 5, 1));
  gir_value *q0 = input(g, GIR_I64, SH(5, 0));
  gir_value *q32 = input(g, GIR_I32, SH(5, 2)), *qs = input(g, GIR_I64, SCALAR);
  n = NODE(g, GIR_OP_gather_nd, nd, q2);
  EXPECT_OUT(g, n, GIR_F32, SH(5, 4));
  n = NODE(g, GIR_OP_gather_nd, nd, q3);
  EXPECT_OUT(g, n, GIR_F32, SH(5));
  n = NODE(g, GIR_OP_gather_nd, nd, qb);
  set_i(g, n, "batch_dims", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 5, 4));
  n = NODE(g, GIR_OP_gather_nd, nd, q4);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_nd, nd, qbad); /* batch dim 3 vs 2 */
  set_i(g, n, "batch_dims", 1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_nd, nd, q3); /* b + q > rank */
  set_i(g, n, "batch_dims", 1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_nd, nd, q2);
  set_i(g, n, "batch_dims", -1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_nd, nd, q2);
  set_i(g, n, "batch_dims", 2);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_nd, nd, q0);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_nd, nd, q32);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_gather_nd, nd, qs);
  EXPECT_ERR(g, n);

  /* one_hot: depth inserted at axis; values = [off, on] */
  gir_value *oi = input(g, GIR_I64, SH(2, 3)), *ov = input(g, GIR_F32, SH(2)), *ov3 = input(g, GIR_F32, SH(3));
  gir_value *ob = input(g, GIR_BOOL, SH(2, 3)), *of = input(g, GIR_F32, SH(2, 3));
  n = NODE(g, GIR_OP_one_hot, oi, ov);
  set_i(g, n, "depth", 5);
  set_i(g, n, "axis", 2);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 5));
  n = NODE(g, GIR_OP_one_hot, oi, ov);
  set_i(g, n, "depth", 5);
  set_i(g, n, "axis", 0);
  EXPECT_OUT(g, n, GIR_F32, SH(5, 2, 3));
  n = NODE(g, GIR_OP_one_hot, of, ov); /* float indices are allowed */
  set_i(g, n, "depth", 4);
  set_i(g, n, "axis", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 4, 3));
  n = NODE(g, GIR_OP_one_hot, oi, ov);
  set_i(g, n, "depth", 0);
  set_i(g, n, "axis", 0);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_one_hot, oi, ov3);
  set_i(g, n, "depth", 5);
  set_i(g, n, "axis", 0);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_one_hot, oi, ov);
  set_i(g, n, "depth", 5);
  set_i(g, n, "axis", 3);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_one_hot, ob, ov);
  set_i(g, n, "depth", 5);
  set_i(g, n, "axis", 0);
  EXPECT_ERR(g, n);
  gir_value *oi8 = input(g, GIR_I64, SH(1, 1, 1, 1, 1, 1, 1, 1));
  n = NODE(g, GIR_OP_one_hot, oi8, ov);
  set_i(g, n, "depth", 2);
  set_i(g, n, "axis", 0);
  EXPECT_ERR(g, n);

  /* resize */
  gir_value *img = input(g, GIR_F32, SH(1, 3, 4, 4)), *imgi = input(g, GIR_U8, SH(1, 3, 4, 4));
  n = NODE(g, GIR_OP_resize, img);
  gir_attr_set_ints(g, n, "sizes", INTS(1, 3, 8, 6));
  gir_attr_set_floats(g, n, "scales", (double[]){1, 1, 2, 1.5}, 4);
  set_i(g, n, "mode", GIR_RESIZE_LINEAR);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 3, 8, 6));
  n = NODE(g, GIR_OP_resize, imgi);
  gir_attr_set_ints(g, n, "sizes", INTS(1, 3, 2, 2));
  gir_attr_set_floats(g, n, "scales", (double[]){1, 1, 0.5, 0.5}, 4);
  set_i(g, n, "mode", GIR_RESIZE_NEAREST);
  EXPECT_OUT(g, n, GIR_U8, SH(1, 3, 2, 2));
  n = NODE(g, GIR_OP_resize, imgi);
  gir_attr_set_ints(g, n, "sizes", INTS(1, 3, 2, 2));
  gir_attr_set_floats(g, n, "scales", (double[]){1, 1, 0.5, 0.5}, 4);
  set_i(g, n, "mode", GIR_RESIZE_CUBIC);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_resize, img);
  gir_attr_set_ints(g, n, "sizes", INTS(8, 8));
  gir_attr_set_floats(g, n, "scales", (double[]){2, 2}, 2);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_resize, img);
  gir_attr_set_ints(g, n, "sizes", INTS(1, 3, 8, 8));
  EXPECT_ERR(g, n); /* no scales */
  n = NODE(g, GIR_OP_resize, img);
  gir_attr_set_ints(g, n, "sizes", INTS(1, 3, -8, 8));
  gir_attr_set_floats(g, n, "scales", (double[]){1, 1, 2, 2}, 4);
  EXPECT_ERR(g, n);
}

static void test_infer_reduce(gir_graph *g) {
  gir_value *x = input(g, GIR_F32, SH(2, 3, 4)), *xi = input(g, GIR_I32, SH(2, 3)), *e = input(g, GIR_F32, SH(2, 0));
  gir_node *n;
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_SUM);
  gir_attr_set_ints(g, n, "axes", INTS(1));
  set_i(g, n, "keepdims", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 1, 4));
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_MEAN);
  gir_attr_set_ints(g, n, "axes", INTS(1));
  set_i(g, n, "keepdims", 0);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 4));
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_MAX);
  gir_attr_set_ints(g, n, "axes", INTS(-1, 0));
  set_i(g, n, "keepdims", 0);
  EXPECT_OUT(g, n, GIR_F32, SH(3));
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_LOG_SUM_EXP);
  gir_attr_set_ints(g, n, "axes", INTS(0, 1, 2));
  set_i(g, n, "keepdims", 0);
  EXPECT_OUT(g, n, GIR_F32, SCALAR);
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_PROD);
  gir_attr_set_ints(g, n, "axes", INTS(0, 1, 2));
  set_i(g, n, "keepdims", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 1, 1));
  n = NODE(g, GIR_OP_reduce, xi);
  set_i(g, n, "fn", GIR_REDUCE_SUM); /* keepdims defaults to 1 */
  gir_attr_set_ints(g, n, "axes", INTS(0));
  EXPECT_OUT(g, n, GIR_I32, SH(1, 3));
  n = NODE(g, GIR_OP_reduce, e);
  set_i(g, n, "fn", GIR_REDUCE_SUM); /* sum over an empty axis is fine (0) */
  gir_attr_set_ints(g, n, "axes", INTS(1));
  set_i(g, n, "keepdims", 0);
  EXPECT_OUT(g, n, GIR_F32, SH(2));
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_SUM);
  gir_attr_set_ints(g, n, "axes", INTS(1, -2));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_SUM);
  gir_attr_set_ints(g, n, "axes", INTS(3));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_SUM);
  gir_attr_set_ints(g, n, "axes", INTS(-4));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_reduce, x);
  gir_attr_set_ints(g, n, "axes", INTS(0));
  EXPECT_ERR(g, n); /* no fn */
  n = NODE(g, GIR_OP_reduce, x);
  set_i(g, n, "fn", GIR_REDUCE_COUNT);
  gir_attr_set_ints(g, n, "axes", INTS(0));
  EXPECT_ERR(g, n);

  /* arg_reduce → int64 */
  n = NODE(g, GIR_OP_arg_reduce, x);
  set_i(g, n, "fn", GIR_ARG_MAX);
  set_i(g, n, "axis", 1);
  set_i(g, n, "keepdims", 0);
  EXPECT_OUT(g, n, GIR_I64, SH(2, 4));
  n = NODE(g, GIR_OP_arg_reduce, x);
  set_i(g, n, "fn", GIR_ARG_MIN);
  set_i(g, n, "axis", -1);
  set_i(g, n, "keepdims", 1);
  set_i(g, n, "last", 1);
  EXPECT_OUT(g, n, GIR_I64, SH(2, 3, 1));
  n = NODE(g, GIR_OP_arg_reduce, e);
  set_i(g, n, "fn", GIR_ARG_MAX);
  set_i(g, n, "axis", 1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_arg_reduce, x);
  set_i(g, n, "fn", GIR_ARG_MAX);
  set_i(g, n, "axis", 3);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_arg_reduce, x);
  set_i(g, n, "fn", GIR_ARG_COUNT);
  EXPECT_ERR(g, n);

  /* softmax */
  n = NODE(g, GIR_OP_softmax, x);
  set_i(g, n, "axis", -1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_softmax, x);
  set_i(g, n, "axis", 0);
  set_i(g, n, "log", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_softmax, xi);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_softmax, x);
  set_i(g, n, "axis", 3);
  EXPECT_ERR(g, n);

  /* layer_norm: scale/bias broadcast against x.shape[axis:] */
  gir_value *s4 = input(g, GIR_F32, SH(4)), *s34 = input(g, GIR_F32, SH(3, 4)), *s1 = input(g, GIR_F32, SH(1));
  gir_value *s3 = input(g, GIR_F32, SH(3)), *s234 = input(g, GIR_F32, SH(2, 3, 4)), *h4 = input(g, GIR_F16, SH(4));
  n = NODE(g, GIR_OP_layer_norm, x, s4, s4);
  set_i(g, n, "axis", -1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_layer_norm, x, s34, NULL);
  set_i(g, n, "axis", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_layer_norm, x, s1, s4);
  set_i(g, n, "axis", 2);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_layer_norm, x);
  set_i(g, n, "axis", 0);
  set_i(g, n, "rms", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_layer_norm, x, s3);
  set_i(g, n, "axis", -1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_layer_norm, x, s234); /* bigger than the normalized dims */
  set_i(g, n, "axis", 1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_layer_norm, x, h4);
  set_i(g, n, "axis", -1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_layer_norm, xi);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_layer_norm, x);
  set_i(g, n, "axis", 3);
  EXPECT_ERR(g, n);

  /* cumulate */
  n = NODE(g, GIR_OP_cumulate, x);
  set_i(g, n, "fn", GIR_CUM_PROD);
  set_i(g, n, "axis", 1);
  set_i(g, n, "exclusive", 1);
  set_i(g, n, "reverse", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 4));
  n = NODE(g, GIR_OP_cumulate, xi);
  set_i(g, n, "axis", -1);
  EXPECT_OUT(g, n, GIR_I32, SH(2, 3));
  n = NODE(g, GIR_OP_cumulate, x);
  set_i(g, n, "axis", 3);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_cumulate, x);
  set_i(g, n, "fn", GIR_CUM_COUNT);
  EXPECT_ERR(g, n);
}

static void test_infer_nn(gir_graph *g) {
  gir_node *n;
  /* conv: o = (i + pb + pe - (d*(k-1)+1)) / s + 1 */
  gir_value *x = input(g, GIR_F32, SH(1, 3, 32, 32)), *w = input(g, GIR_F32, SH(16, 3, 3, 3));
  gir_value *bias = input(g, GIR_F32, SH(16)), *bias15 = input(g, GIR_F32, SH(15));
  gir_value *bias2d = input(g, GIR_F32, SH(1, 16));
  n = NODE(g, GIR_OP_conv, x, w, bias);
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 16, 16, 16));
  n = NODE(g, GIR_OP_conv, x, w); /* defaults: stride 1, no pads */
  EXPECT_OUT(g, n, GIR_F32, SH(1, 16, 30, 30));
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "dilations", INTS(2, 3));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 16, 28, 26));
  n = NODE(g, GIR_OP_conv, x, w); /* asymmetric pads: [b_h, b_w, e_h, e_w] */
  gir_attr_set_ints(g, n, "pads", INTS(0, 1, 2, 3));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 16, 32, 34));
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "strides", INTS(3, 5));
  gir_attr_set_ints(g, n, "pads", INTS(1, 0, 1, 0));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 16, 11, 6)); /* (34-3)/3+1 = 11, (32-3)/5+1 = 6 */
  gir_value *xg = input(g, GIR_F32, SH(2, 8, 10, 10)), *wdw = input(g, GIR_F32, SH(8, 1, 3, 3));
  gir_value *wg4 = input(g, GIR_F32, SH(12, 2, 3, 3));
  n = NODE(g, GIR_OP_conv, xg, wdw);
  set_i(g, n, "group", 8);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 8, 8, 8));
  n = NODE(g, GIR_OP_conv, xg, wg4);
  set_i(g, n, "group", 4);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 12, 8, 8));
  gir_value *x1 = input(g, GIR_F32, SH(2, 4, 10)), *w1 = input(g, GIR_F32, SH(6, 4, 3));
  n = NODE(g, GIR_OP_conv, x1, w1);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 6, 8));
  gir_value *x3 = input(g, GIR_F32, SH(1, 2, 5, 6, 7)), *w3 = input(g, GIR_F32, SH(4, 2, 3, 3, 3));
  n = NODE(g, GIR_OP_conv, x3, w3);
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1, 1, 1));
  gir_attr_set_ints(g, n, "strides", INTS(1, 2, 3));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 4, 5, 3, 3));
  gir_value *wbad = input(g, GIR_F32, SH(16, 4, 3, 3)), *wbig = input(g, GIR_F32, SH(4, 3, 5, 5));
  gir_value *xsmall = input(g, GIR_F32, SH(1, 3, 2, 2)), *wh = input(g, GIR_F16, SH(16, 3, 3, 3));
  gir_value *x2d = input(g, GIR_F32, SH(3, 32)), *w2d = input(g, GIR_F32, SH(16, 3));
  n = NODE(g, GIR_OP_conv, x, wbad);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, xg, wg4);
  set_i(g, n, "group", 3);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, xg, wg4);
  set_i(g, n, "group", 0);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, xsmall, wbig);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, xsmall, wbig); /* the padding makes it fit */
  gir_attr_set_ints(g, n, "pads", INTS(2, 2, 1, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 4, 1, 1));
  n = NODE(g, GIR_OP_conv, x, w, bias15);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w, bias2d);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, wh);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x2d, w2d);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "strides", INTS(0, 1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "strides", INTS(1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "dilations", INTS(1, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "pads", INTS(-1, 0, 0, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "pads", INTS(1, 1));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "pads", INTS(INT64_MAX, 0, INT64_MAX, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "dilations", INTS(INT64_MAX, 1));
  EXPECT_ERR(g, n);

  /* conv_transpose: o = s*(i-1) + opad + (k-1)*d + 1 - pb - pe; w[C, M/g, k...] */
  gir_value *tx = input(g, GIR_F32, SH(1, 4, 5, 5)), *tw = input(g, GIR_F32, SH(4, 2, 3, 3));
  gir_value *tw3 = input(g, GIR_F32, SH(4, 3, 3, 3)), *twbad = input(g, GIR_F32, SH(3, 2, 3, 3));
  gir_value *tb = input(g, GIR_F32, SH(6)), *tx1 = input(g, GIR_F32, SH(1, 4, 1, 1));
  gir_value *tw1 = input(g, GIR_F32, SH(4, 2, 1, 1));
  n = NODE(g, GIR_OP_conv_transpose, tx, tw);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 2, 7, 7));
  n = NODE(g, GIR_OP_conv_transpose, tx, tw);
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  gir_attr_set_ints(g, n, "output_padding", INTS(1, 0));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 2, 10, 9));
  n = NODE(g, GIR_OP_conv_transpose, tx, tw);
  gir_attr_set_ints(g, n, "dilations", INTS(2, 2));
  gir_attr_set_ints(g, n, "strides", INTS(3, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 2, 17, 9));
  n = NODE(g, GIR_OP_conv_transpose, tx, tw3, tb);
  set_i(g, n, "group", 2);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 6, 7, 7));
  n = NODE(g, GIR_OP_conv_transpose, tx, tw, tb); /* bias of 6 for 2 channels */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv_transpose, tx, twbad);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv_transpose, tx, tw3);
  set_i(g, n, "group", 3);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv_transpose, tx, tw);
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  gir_attr_set_ints(g, n, "output_padding", INTS(2, 0)); /* must be < max(stride, dilation) */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv_transpose, tx, tw);
  gir_attr_set_ints(g, n, "output_padding", INTS(-1, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv_transpose, tx1, tw1);
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1)); /* 1 - 2 < 1 */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_conv_transpose, x2d, w2d);
  EXPECT_ERR(g, n);

  /* matmul: batch dims broadcast */
  gir_value *a = input(g, GIR_F32, SH(2, 3, 4)), *b = input(g, GIR_F32, SH(4, 5));
  gir_value *a4 = input(g, GIR_F32, SH(3, 1, 2, 3)), *b3 = input(g, GIR_F32, SH(4, 3, 6));
  gir_value *bb = input(g, GIR_F32, SH(3, 4, 5)), *bk = input(g, GIR_F32, SH(5, 5)), *v = input(g, GIR_F32, SH(4));
  gir_value *bi = input(g, GIR_I32, SH(4, 5));
  n = NODE(g, GIR_OP_matmul, a, b);
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 5));
  n = NODE(g, GIR_OP_matmul, a4, b3);
  EXPECT_OUT(g, n, GIR_F32, SH(3, 4, 2, 6));
  n = NODE(g, GIR_OP_matmul, b, bk);
  EXPECT_OUT(g, n, GIR_F32, SH(4, 5));
  n = NODE(g, GIR_OP_matmul, a, bk);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_matmul, a, bb); /* batch 2 vs 3 */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_matmul, v, b); /* rank 1: the importer reshapes first */
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_matmul, a, bi);
  EXPECT_ERR(g, n);

  /* pool */
  gir_value *px = input(g, GIR_F32, SH(1, 3, 32, 32)), *p5 = input(g, GIR_F32, SH(1, 1, 5, 5));
  gir_value *p2 = input(g, GIR_F32, SH(1, 1, 2, 2)), *p1d = input(g, GIR_F32, SH(2, 3, 10));
  n = NODE(g, GIR_OP_pool, px);
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(2, 2));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 3, 16, 16));
  n = NODE(g, GIR_OP_pool, px); /* ResNet's stem pool */
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(3, 3));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 3, 16, 16));
  n = NODE(g, GIR_OP_pool, px); /* same with ceil: 31/2 rounds up */
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(3, 3));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  set_i(g, n, "ceil", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 3, 17, 17));
  n = NODE(g, GIR_OP_pool, p5);
  set_i(g, n, "fn", GIR_POOL_AVG);
  gir_attr_set_ints(g, n, "kernel", INTS(2, 2));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  EXPECT_OUT(g, n, GIR_F32, SH(1, 1, 2, 2));
  n = NODE(g, GIR_OP_pool, p5);
  set_i(g, n, "fn", GIR_POOL_AVG);
  gir_attr_set_ints(g, n, "kernel", INTS(2, 2));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  set_i(g, n, "ceil", 1);
  set_i(g, n, "count_include_pad", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 1, 3, 3));
  n = NODE(g, GIR_OP_pool, p2); /* ceil mode never starts a window in the right padding */
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(1, 1));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  set_i(g, n, "ceil", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 1, 1, 1));
  n = NODE(g, GIR_OP_pool, p5); /* 5, k3, s2, pad 1 each side, ceil → 3 (last window starts at 4) */
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(3, 3));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  set_i(g, n, "ceil", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 1, 3, 3));
  gir_value *p4 = input(g, GIR_F32, SH(1, 1, 4, 4));
  n = NODE(g, GIR_OP_pool, p4); /* ONNX maxpool_2d_ceil test: 4x4, k3, s2, ceil → 2x2 */
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(3, 3));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  set_i(g, n, "ceil", 1);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 1, 2, 2));
  n = NODE(g, GIR_OP_pool, p1d);
  set_i(g, n, "fn", GIR_POOL_LP);
  set_i(g, n, "p", 3);
  gir_attr_set_ints(g, n, "kernel", INTS(3));
  gir_attr_set_ints(g, n, "dilations", INTS(2));
  EXPECT_OUT(g, n, GIR_F32, SH(2, 3, 6));
  n = NODE(g, GIR_OP_pool, px);
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(2));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pool, px);
  set_i(g, n, "fn", GIR_POOL_MAX);
  EXPECT_ERR(g, n); /* no kernel */
  n = NODE(g, GIR_OP_pool, p2);
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(3, 3));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pool, px);
  gir_attr_set_ints(g, n, "kernel", INTS(2, 2));
  EXPECT_ERR(g, n); /* no fn */
  n = NODE(g, GIR_OP_pool, x2d);
  set_i(g, n, "fn", GIR_POOL_AVG);
  gir_attr_set_ints(g, n, "kernel", INTS(2));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pool, px);
  set_i(g, n, "fn", GIR_POOL_AVG);
  gir_attr_set_ints(g, n, "kernel", INTS(2, 2));
  gir_attr_set_ints(g, n, "pads", INTS(0, 0, -1, 0));
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_pool, px);
  set_i(g, n, "fn", GIR_POOL_AVG);
  gir_attr_set_ints(g, n, "kernel", INTS(0, 2));
  EXPECT_ERR(g, n);

  /* lrn */
  n = NODE(g, GIR_OP_lrn, px);
  set_i(g, n, "size", 5);
  EXPECT_OUT(g, n, GIR_F32, SH(1, 3, 32, 32));
  n = NODE(g, GIR_OP_lrn, px);
  set_i(g, n, "size", 0);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_lrn, x2d);
  set_i(g, n, "size", 3);
  EXPECT_ERR(g, n);

  /* topk: two outputs, values and int64 indices */
  gir_value *tk = input(g, GIR_F32, SH(3, 10));
  n = NODE(g, GIR_OP_topk, tk);
  set_i(g, n, "k", 4);
  set_i(g, n, "axis", -1);
  EXPECT_OUT(g, n, GIR_F32, SH(3, 4));
  CHECK(n->out[1]->dtype == GIR_I64 && gir_shape_equal(&n->out[1]->shape, &SH(3, 4)));
  n = NODE(g, GIR_OP_topk, tk);
  set_i(g, n, "k", 0);
  set_i(g, n, "axis", 0);
  EXPECT_OUT_SLOT(g, n, 1, GIR_I64, SH(0, 10));
  n = NODE(g, GIR_OP_topk, tk);
  set_i(g, n, "k", 10);
  EXPECT_OUT(g, n, GIR_F32, SH(3, 10)); /* axis defaults to -1 */
  n = NODE(g, GIR_OP_topk, tk);
  set_i(g, n, "k", 11);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_topk, tk);
  EXPECT_ERR(g, n); /* no k */
  n = NODE(g, GIR_OP_topk, tk);
  set_i(g, n, "k", 1);
  set_i(g, n, "axis", 2);
  EXPECT_ERR(g, n);

  /* scatter_elements */
  gir_value *sd = input(g, GIR_F32, SH(3, 4)), *si = input(g, GIR_I64, SH(2, 4)), *su = input(g, GIR_F32, SH(2, 4));
  gir_value *su2 = input(g, GIR_F32, SH(2, 3)), *sui = input(g, GIR_I32, SH(2, 4)), *sif = input(g, GIR_F32, SH(2, 4));
  gir_value *si1 = input(g, GIR_I64, SH(8)), *su1 = input(g, GIR_F32, SH(8));
  n = NODE(g, GIR_OP_scatter_elements, sd, si, su);
  set_i(g, n, "axis", 0);
  set_i(g, n, "reduction", GIR_SCATTER_ADD);
  EXPECT_OUT(g, n, GIR_F32, SH(3, 4));
  n = NODE(g, GIR_OP_scatter_elements, sd, si, su2);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_scatter_elements, sd, si, sui);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_scatter_elements, sd, sif, su);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_scatter_elements, sd, si, su);
  set_i(g, n, "reduction", GIR_SCATTER_COUNT);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_scatter_elements, sd, si, su);
  set_i(g, n, "axis", 2);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_scatter_elements, sd, si1, su1);
  EXPECT_ERR(g, n);

  /* scatter_nd: updates = idx[:-1] + data[q:] */
  gir_value *nd = input(g, GIR_F32, SH(4, 5, 6)), *ni = input(g, GIR_I64, SH(2, 3, 2));
  gir_value *nu = input(g, GIR_F32, SH(2, 3, 6)), *nu_bad = input(g, GIR_F32, SH(2, 3, 5));
  gir_value *ni4 = input(g, GIR_I64, SH(2, 4)), *nu_rank = input(g, GIR_F32, SH(2, 6));
  gir_value *ni_s = input(g, GIR_I64, SCALAR), *ni3 = input(g, GIR_I64, SH(7, 3)), *nu3 = input(g, GIR_F32, SH(7));
  n = NODE(g, GIR_OP_scatter_nd, nd, ni, nu);
  EXPECT_OUT(g, n, GIR_F32, SH(4, 5, 6));
  n = NODE(g, GIR_OP_scatter_nd, nd, ni3, nu3);
  set_i(g, n, "reduction", GIR_SCATTER_MAX);
  EXPECT_OUT(g, n, GIR_F32, SH(4, 5, 6));
  n = NODE(g, GIR_OP_scatter_nd, nd, ni, nu_bad);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_scatter_nd, nd, ni4, nu_rank);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_scatter_nd, nd, ni, nu_rank);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_scatter_nd, nd, ni_s, nu);
  EXPECT_ERR(g, n);
}

/* Arity, missing inputs, unsupported element types: checked by gir_node_infer for
 * every op before its inference function runs. */
static void test_infer_arity(gir_graph *g) {
  gir_value *x = input(g, GIR_F32, SH(2, 2));
  gir_value *s = gir_value_new(g, "strings", GIR_STRING, &SH(2));
  gir_graph_add_input(g, s);
  gir_node *n;
  n = NODE(g, GIR_OP_binary, x);
  set_i(g, n, "fn", GIR_BINARY_ADD);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_unary, x, x);
  set_i(g, n, "fn", GIR_UNARY_NEG);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_unary, NULL);
  set_i(g, n, "fn", GIR_UNARY_NEG);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_where, x, NULL, x);
  EXPECT_ERR(g, n);
  n = gir_node_new(g, GIR_OP_concat, NULL, NULL, 0, 1);
  EXPECT_ERR(g, n);
  n = NODE(g, GIR_OP_unary, s);
  set_i(g, n, "fn", GIR_UNARY_NEG);
  EXPECT_ERR(g, n);
  n = gir_node_new(g, GIR_OP_topk, NULL, &x, 1, 1); /* topk has two outputs */
  set_i(g, n, "k", 1);
  EXPECT_ERR(g, n);
  n = gir_node_new(g, GIR_OP_unary, NULL, &x, 1, 2);
  set_i(g, n, "fn", GIR_UNARY_NEG);
  EXPECT_ERR(g, n);
  /* the origin, when set, is what the message names */
  n = NODE(g, GIR_OP_binary, x, x);
  n->origin = "Add 'my_add' (opset 13)";
  gir_err e = {{0}};
  CHECK_INT(gir_node_infer(g, n, &e), -1);
  CHECK_CONTAINS(e.msg, "Add 'my_add' (opset 13)");
  CHECK_CONTAINS(e.msg, "binary");
}

/* Dims near INT64_MAX, which a hostile model can declare as long as the element
 * count stays below 2^63: the arithmetic of each op must not overflow. */
static void test_infer_hostile(gir_graph *g) {
  const int64_t huge = INT64_MAX - 2;
  gir_value *x = input(g, GIR_I8, SH(1, 1, huge)), *w = input(g, GIR_I8, SH(1, 1, 1));
  gir_node *n;
  n = NODE(g, GIR_OP_conv, x, w); /* in + pads overflows */
  gir_attr_set_ints(g, n, "pads", INTS(1 << 20, 1 << 20));
  EXPECT_ERR_ISOLATED(g, n);
  gir_value *tx = input(g, GIR_I8, SH(1, 1, 1ll << 50));
  n = NODE(g, GIR_OP_conv_transpose, tx, w); /* stride * (in - 1) overflows */
  gir_attr_set_ints(g, n, "strides", INTS(1 << 20));
  EXPECT_ERR_ISOLATED(g, n);
  gir_value *p = input(g, GIR_I8, SH(huge));
  n = NODE(g, GIR_OP_pad, p); /* dim + begin + end overflows */
  gir_attr_set_ints(g, n, "pads", INTS(INT64_MAX / 4, INT64_MAX / 4));
  EXPECT_ERR_ISOLATED(g, n);
  n = NODE(g, GIR_OP_pool, x);
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(1));
  gir_attr_set_ints(g, n, "pads", INTS(1 << 20, 1 << 20));
  set_i(g, n, "ceil", 1);
  EXPECT_ERR_ISOLATED(g, n);
  gir_value *c = input(g, GIR_I8, SH(huge));
  n = NODE(g, GIR_OP_concat, c, c);
  EXPECT_ERR_ISOLATED(g, n);
  n = NODE(g, GIR_OP_tile, c);
  gir_attr_set_ints(g, n, "repeats", INTS(2));
  EXPECT_ERR_ISOLATED(g, n);
  gir_value *ow = input(g, GIR_I8, SH(1, 1, 1)), *oh = input(g, GIR_I8, SH(1, 1, huge));
  n = NODE(g, GIR_OP_conv, oh, ow); /* dilated kernel span overflows nothing, but stride math on huge input */
  gir_attr_set_ints(g, n, "strides", INTS(1 << 20));
  /* 8-bit operands accumulate in int32 */
  EXPECT_OUT(g, n, GIR_I32, SH(1, 1, (huge - 1) / (1 << 20) + 1));
}

/* --- verify, compact --- */

static gir_value *relu_of(gir_graph *g, gir_value *x, const char *name) {
  gir_node *n = gir_node_new(g, GIR_OP_unary, name, &x, 1, 1);
  set_i(g, n, "fn", GIR_UNARY_RELU);
  gir_err e = {{0}};
  if (gir_node_infer(g, n, &e) < 0) printf("     relu_of: %s\n", e.msg);
  return n->out[0];
}

static void test_verify(void) {
  gir_err e = {{0}};
  gir_graph *g = gir_graph_new("v");
  gir_value *x = input(g, GIR_F32, SH(2, 3));
  gir_value *a = relu_of(g, x, "first");
  gir_value *b = relu_of(g, a, "second");
  gir_graph_add_output(g, b);
  CHECKF(gir_verify(g, &e) == 0, "%s", e.msg);

  /* use before def: swap the two nodes */
  gir_node *n0 = g->nodes[0], *n1 = g->nodes[1];
  g->nodes[0] = n1;
  g->nodes[1] = n0;
  n1->id = 0;
  n0->id = 1;
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  CHECK_CONTAINS(e.msg, "second");
  CHECK_CONTAINS(e.msg, "before");
  g->nodes[0] = n0;
  g->nodes[1] = n1;
  n0->id = 0;
  n1->id = 1;
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "restored graph: %s", e.msg);

  /* node ids out of step with positions */
  n1->id = 7;
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  n1->id = 1;

  /* stale shape, stale dtype; verify must not repair them */
  a->shape = SH(3, 2);
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  CHECK_CONTAINS(e.msg, "stale");
  CHECK(gir_shape_equal(&a->shape, &SH(3, 2)));
  a->shape = SH(2, 3);
  b->dtype = GIR_F16;
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  CHECK_CONTAINS(e.msg, "stale");
  b->dtype = GIR_F32;
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "%s", e.msg);

  /* a node whose attributes became invalid fails re-inference */
  set_i(g, n1, "fn", 999);
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  set_i(g, n1, "fn", GIR_UNARY_RELU);

  /* broken producer link */
  b->producer_slot = 1;
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  b->producer_slot = 0;

  /* dangling output: produced by a node that is no longer in the graph */
  gir_value *c = relu_of(g, b, "third");
  gir_graph_add_output(g, c);
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "%s", e.msg);
  g->n_nodes--;
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  CHECK_CONTAINS(e.msg, "never produced");
  g->n_nodes++;

  /* a value from nowhere (no producer, no data, not an input) */
  gir_value *orphan = gir_value_new(g, "orphan", GIR_F32, &SH(2, 3));
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  CHECK_CONTAINS(e.msg, "orphan");
  orphan->is_input = 1;
  gir_graph_add_input(g, orphan);
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "%s", e.msg);

  /* an input value that belongs to another graph */
  gir_graph *h = gir_graph_new("other");
  gir_value *foreign = input(h, GIR_F32, SH(2, 3));
  foreign->id = 0; /* collides with x's id */
  relu_of(g, foreign, "uses_foreign");
  e.msg[0] = 0;
  CHECK_INT(gir_verify(g, &e), -1);
  CHECK_CONTAINS(e.msg, "not in the graph");
  gir_graph_free(h);
  gir_graph_free(g);
}

static void test_compact(void) {
  gir_err e = {{0}};
  gir_graph *g = gir_graph_new("c");
  gir_value *x = input(g, GIR_F32, SH(4));
  gir_value *unused_in = input(g, GIR_F32, SH(4));
  float cv[4] = {1, 2, 3, 4};
  gir_value *c = gir_const_new(g, "c", GIR_F32, &SH(4), cv);
  gir_value *c2 = gir_const_new(g, "c2", GIR_F32, &SH(4), cv);
  gir_const_new(g, "c3", GIR_F32, &SH(4), cv); /* used by nobody */
  gir_node *add = NODE(g, GIR_OP_binary, x, c);
  set_i(g, add, "fn", GIR_BINARY_ADD);
  gir_node_infer(g, add, &e);
  gir_graph_add_output(g, add->out[0]);
  gir_node *mul = NODE(g, GIR_OP_binary, x, c2); /* dead chain: mul → exp */
  set_i(g, mul, "fn", GIR_BINARY_MUL);
  gir_node_infer(g, mul, &e);
  gir_node *ex = NODE(g, GIR_OP_unary, mul->out[0]);
  set_i(g, ex, "fn", GIR_UNARY_EXP);
  gir_node_infer(g, ex, &e);
  gir_node *tk = NODE(g, GIR_OP_topk, x); /* live through its first output only */
  set_i(g, tk, "k", 2);
  gir_node_infer(g, tk, &e);
  gir_value *r = relu_of(g, tk->out[0], "relu_vals");
  gir_graph_add_output(g, r);
  CHECK_INT(g->n_nodes, 5);
  CHECK_INT(g->n_values, 11);
  CHECKF(gir_verify(g, &e) == 0, "%s", e.msg);

  gir_graph_compact(g);
  CHECK_INT(g->n_nodes, 3);
  if (g->n_nodes == 3) CHECK(g->nodes[0] == add && g->nodes[1] == tk && g->nodes[2]->out[0] == r);
  int ids_ok = 1;
  for (int i = 0; i < g->n_nodes; i++) ids_ok &= g->nodes[i]->id == i;
  for (int i = 0; i < g->n_values; i++) ids_ok &= g->values[i]->id == i;
  CHECK(ids_ok);
  /* kept: x, unused input, c, add out, both topk outputs, relu out */
  CHECK_INT(g->n_values, 7);
  int has_x = 0, has_unused = 0, has_c = 0, has_c2 = 0, has_idx = 0, has_mul = 0;
  for (int i = 0; i < g->n_values; i++) {
    has_x |= g->values[i] == x;
    has_unused |= g->values[i] == unused_in;
    has_c |= g->values[i] == c;
    has_c2 |= g->values[i] == c2;
    has_idx |= g->values[i] == tk->out[1];
    has_mul |= g->values[i] == mul->out[0];
  }
  CHECK(has_x && has_unused && has_c && has_idx);
  CHECK(!has_c2 && !has_mul);
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "after compact: %s", e.msg);
  /* compacting again changes nothing */
  gir_graph_compact(g);
  CHECK(g->n_nodes == 3 && g->n_values == 7);
  gir_graph_free(g);
}

/* --- tables and estimates --- */

static void test_tables(void) {
  int ok = 1;
  for (int i = 0; i < GIR_OP_COUNT; i++) {
    gir_op op = (gir_op)i;
    ok &= gir_op_from_name(gir_op_name(op)) == op;
    ok &= gir_op_category(op) >= 0 && gir_op_category(op) < GIR_CATEGORY_COUNT;
    ok &= gir_op_min_inputs(op) <= gir_op_max_inputs(op) && gir_op_outputs(op) >= 1;
    if (!ok) {
      CHECKF(0, "op table row %d (%s) is inconsistent", i, gir_op_name(op));
      break;
    }
  }
  CHECK(ok);
  CHECK_INT(gir_op_from_name("no_such_op"), GIR_OP_COUNT);
  CHECK_STR(gir_op_name(GIR_OP_COUNT), "?");
  CHECK_STR(gir_op_name(GIR_OP_conv), "conv");
  CHECK_INT(gir_op_category(GIR_OP_conv), GIR_COMPLEX);
  CHECK_INT(gir_op_category(GIR_OP_reduce), GIR_REDUCTION);
  CHECK_INT(gir_op_category(GIR_OP_topk), GIR_OPAQUE);
  CHECK_INT(gir_op_category(GIR_OP_transpose), GIR_INJECTIVE);
  CHECK_INT(gir_op_outputs(GIR_OP_topk), 2);
  CHECK_STR(gir_category_name(GIR_COMPLEX), "complex-out-fusable");
  CHECK_STR(gir_unary_name(GIR_UNARY_RELU), "relu");
  CHECK_STR(gir_unary_name(GIR_UNARY_COUNT), "?");
  CHECK_STR(gir_binary_name(GIR_BINARY_FMOD), "fmod");
  CHECK_STR(gir_reduce_name(GIR_REDUCE_LOG_SUM_EXP), "log_sum_exp");
  int cmp_ok = 1;
  for (int f = 0; f < GIR_BINARY_COUNT; f++) {
    int is_cmp = f == GIR_BINARY_EQ || f == GIR_BINARY_LT || f == GIR_BINARY_LE || f == GIR_BINARY_GT ||
                 f == GIR_BINARY_GE;
    cmp_ok &= gir_binary_is_compare((gir_binary_fn)f) == is_cmp;
  }
  CHECK(cmp_ok);
  CHECK(!gir_binary_is_compare(GIR_BINARY_COUNT));
  int uniq = 1;
  for (int i = 0; i < GIR_UNARY_COUNT; i++)
    for (int j = i + 1; j < GIR_UNARY_COUNT; j++)
      uniq &= strcmp(gir_unary_name((gir_unary_fn)i), gir_unary_name((gir_unary_fn)j)) != 0;
  CHECK(uniq);
}

static void test_flops(void) {
  gir_err e = {{0}};
  gir_graph *g = gir_graph_new("f");
  gir_value *x = input(g, GIR_F32, SH(1, 3, 32, 32)), *w = input(g, GIR_F32, SH(16, 3, 3, 3));
  gir_node *n = NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  gir_node_infer(g, n, &e);
  CHECK_INT(gir_node_flops(n), 2ll * 16 * 16 * 16 * 27); /* 2 × outputs × C/g × k² */
  gir_value *xg = input(g, GIR_F32, SH(1, 8, 10, 10)), *wg = input(g, GIR_F32, SH(8, 1, 3, 3));
  n = NODE(g, GIR_OP_conv, xg, wg);
  set_i(g, n, "group", 8);
  gir_node_infer(g, n, &e);
  CHECK_INT(gir_node_flops(n), 2ll * 8 * 8 * 8 * 9);
  gir_value *a = input(g, GIR_F32, SH(2, 3, 4)), *b = input(g, GIR_F32, SH(4, 5));
  n = NODE(g, GIR_OP_matmul, a, b);
  gir_node_infer(g, n, &e);
  CHECK_INT(gir_node_flops(n), 2ll * 2 * 3 * 5 * 4);
  n = NODE(g, GIR_OP_pool, x);
  set_i(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(2, 2));
  gir_attr_set_ints(g, n, "strides", INTS(2, 2));
  gir_node_infer(g, n, &e);
  CHECK_INT(gir_node_flops(n), 3ll * 16 * 16 * 4);
  n = NODE(g, GIR_OP_transpose, a);
  gir_attr_set_ints(g, n, "perm", INTS(0, 2, 1));
  gir_node_infer(g, n, &e);
  CHECK_INT(gir_node_flops(n), 0);
  CHECKF(e.msg[0] == 0, "%s", e.msg);
  gir_graph_free(g);
}

/* --- folding and output materialization --- */

/* A stand-in for lower/'s evaluator: float32 add, and a topk that forgets its
 * second output. Anything else cannot be folded. */
static int fake_eval(void *ctx, gir_graph *g, gir_node *n, gir_err *err) {
  int *calls = ctx;
  (*calls)++;
  if (n->op == GIR_OP_binary && gir_attr_int(n, "fn", -1) == GIR_BINARY_ADD && n->out[0]->dtype == GIR_F32) {
    int64_t cnt = gir_value_numel(n->out[0]);
    float *y = gir_arena_calloc(g->arena, (size_t)cnt + 1, sizeof *y);
    const float *a = n->in[0]->data, *b = n->in[1]->data;
    int64_t na = gir_value_numel(n->in[0]), nb = gir_value_numel(n->in[1]);
    for (int64_t i = 0; i < cnt; i++) y[i] = a[na == 1 ? 0 : i] + b[nb == 1 ? 0 : i];
    n->out[0]->data = y;
    return 0;
  }
  if (n->op == GIR_OP_topk) {
    n->out[0]->data = gir_arena_calloc(g->arena, (size_t)gir_value_numel(n->out[0]) + 1, sizeof(float));
    return 0;
  }
  return gir_errf(err, "fake evaluator: cannot fold %s", gir_op_name(n->op));
}

static gir_node *add_node(gir_graph *g, gir_value *a, gir_value *b) {
  gir_node *n = NODE(g, GIR_OP_binary, a, b);
  set_i(g, n, "fn", GIR_BINARY_ADD);
  gir_err e = {{0}};
  if (gir_node_infer(g, n, &e) < 0) printf("     add_node: %s\n", e.msg);
  return n;
}

static void test_fold(void) {
  int calls = 0;
  gir_evaluator ev = {fake_eval, &calls};
  gir_err e = {{0}};
  gir_graph *g = gir_graph_new("fold");
  gir_value *x = input(g, GIR_F32, SH(3));
  gir_value *c1 = gir_const_new(g, "c1", GIR_F32, &SH(3), (float[]){1, 2, 3});
  gir_value *c2 = gir_const_new(g, "c2", GIR_F32, &SH(3), (float[]){10, 20, 30});
  gir_node *n = add_node(g, c1, c2);
  gir_value *s = n->out[0];
  gir_node *use = add_node(g, x, s);
  gir_graph_add_output(g, use->out[0]);
  CHECK_INT(gir_fold_node(&ev, g, n, &e), 0);
  CHECKF(e.msg[0] == 0, "%s", e.msg);
  CHECK(s->data && s->producer == NULL && ((float *)s->data)[2] == 33.0f);
  CHECK_INT(n->n_out, 0);
  CHECK(use->in[1] == s);
  gir_graph_compact(g);
  CHECK_INT(g->n_nodes, 1);
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "after folding: %s", e.msg);

  /* a node with a run-time input is refused and left alone */
  e.msg[0] = 0;
  calls = 0;
  CHECK_INT(gir_fold_node(&ev, g, use, &e), -1);
  CHECK(e.msg[0] != 0 && calls == 0 && use->n_out == 1 && use->out[0]->producer == use);
  /* an evaluator error leaves the node as it was */
  gir_value *i1 = gir_const_new(g, "i1", GIR_I32, &SH(2), (int32_t[]){1, 2});
  gir_node *ni = NODE(g, GIR_OP_binary, i1, i1);
  set_i(g, ni, "fn", GIR_BINARY_ADD);
  gir_node_infer(g, ni, &e);
  gir_graph_add_output(g, ni->out[0]);
  e.msg[0] = 0;
  CHECK_INT(gir_fold_node(&ev, g, ni, &e), -1);
  CHECK_CONTAINS(e.msg, "cannot fold");
  CHECK(ni->n_out == 1 && ni->out[0]->producer == ni && ni->out[0]->data == NULL);
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "after a refused fold: %s", e.msg);
  /* an evaluator that fills one output of two: refused, and the graph stays consistent */
  gir_value *c5 = gir_const_new(g, "c5", GIR_F32, &SH(5), (float[]){5, 4, 3, 2, 1});
  gir_node *tk = NODE(g, GIR_OP_topk, c5);
  set_i(g, tk, "k", 2);
  gir_node_infer(g, tk, &e);
  gir_graph_add_output(g, tk->out[1]);
  e.msg[0] = 0;
  CHECK_INT(gir_fold_node(&ev, g, tk, &e), -1);
  CHECK(e.msg[0] != 0);
  CHECKF(tk->out[0]->producer == tk && tk->out[1]->producer == tk,
         "a failed fold detached output 0 from its node (producer %p, node %p)", (void *)tk->out[0]->producer,
         (void *)tk);
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "after a half-done fold: %s", e.msg);
  gir_graph_free(g);

  /* whole-graph folding: chains fold in one sweep; the byte limit is honoured */
  for (int limited = 0; limited < 2; limited++) {
    g = gir_graph_new("fold_all");
    x = input(g, GIR_F32, SH(3));
    c1 = gir_const_new(g, "c1", GIR_F32, &SH(3), (float[]){1, 2, 3});
    c2 = gir_const_new(g, "c2", GIR_F32, &SH(3), (float[]){10, 20, 30});
    gir_value *c3 = gir_const_scalar(g, GIR_F32, 100);
    gir_value *t1 = add_node(g, c1, c2)->out[0];
    gir_value *t2 = add_node(g, t1, c3)->out[0];
    gir_value *y = add_node(g, x, t2)->out[0];
    gir_value *z = add_node(g, c1, c1)->out[0]; /* a graph output computed from constants */
    z->name = "z";
    gir_graph_add_output(g, y);
    gir_graph_add_output(g, z);
    int32_t folded = -1;
    e.msg[0] = 0;
    CHECK_INT(gir_fold_constants(g, &ev, limited ? 8 : 0, &folded, &e), 0);
    if (limited) {
      CHECK_INT(folded, 0); /* every result is 12 bytes */
      CHECK_INT(g->n_nodes, 4);
    } else {
      CHECK_INT(folded, 3);
      CHECK_INT(g->n_nodes, 1);
      CHECK(t2->data && ((float *)t2->data)[0] == 111.0f && ((float *)t2->data)[2] == 133.0f);
      CHECK(z->data && z->producer == NULL && ((float *)z->data)[1] == 4.0f);
    }
    e.msg[0] = 0;
    CHECKF(gir_verify(g, &e) == 0, "after gir_fold_constants: %s", e.msg);
    /* every output gets a producing node, under its own name */
    gir_materialize_outputs(g);
    int produced = 1;
    for (int i = 0; i < g->n_outputs; i++) produced &= g->outputs[i]->producer != NULL;
    CHECK(produced);
    CHECK_STR(g->outputs[1]->name, "z");
    e.msg[0] = 0;
    CHECKF(gir_verify(g, &e) == 0, "after gir_materialize_outputs: %s", e.msg);
    gir_graph_free(g);
  }

  /* a graph input that is also an output keeps its name: users bind inputs by it */
  g = gir_graph_new("passthrough");
  x = gir_value_new(g, "x", GIR_F32, &SH(2));
  gir_graph_add_input(g, x);
  gir_graph_add_output(g, x);
  gir_materialize_outputs(g);
  CHECK_STR(g->inputs[0]->name, "x");
  CHECK(g->outputs[0]->producer != NULL && g->outputs[0] != x);
  e.msg[0] = 0;
  CHECKF(gir_verify(g, &e) == 0, "%s", e.msg);
  gir_graph_free(g);
}

/* --- printers --- */

static char *capture_print(const gir_graph *g, int dot, const int32_t *clusters, const char *const *labels) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  if (dot) gir_write_dot(g, f, clusters, labels);
  else gir_print(g, f);
  fclose(f);
  return buf;
}

static void test_print(void) {
  gir_err e = {{0}};
  gir_graph *g = gir_graph_new("demo");
  gir_value *x = gir_value_new(g, "x", GIR_F32, &SH(2, 3));
  gir_graph_add_input(g, x);
  float wv[3] = {1, 2, 3};
  gir_value *w = gir_const_new(g, "w", GIR_F32, &SH(3), wv);
  gir_node *r = gir_node_new(g, GIR_OP_unary, "r", &x, 1, 1);
  set_i(g, r, "fn", GIR_UNARY_RELU);
  gir_node_infer(g, r, &e);
  r->out[0]->name = "relu_y";
  gir_node *c = gir_node_new(g, GIR_OP_cast, "c", r->out, 1, 1);
  set_i(g, c, "to", GIR_F16);
  gir_node_infer(g, c, &e);
  c->out[0]->name = "half_y";
  gir_node *ad = gir_node_new(g, GIR_OP_binary, "ad", (gir_value *[]){x, w}, 2, 1);
  set_i(g, ad, "fn", GIR_BINARY_ADD);
  gir_node_infer(g, ad, &e);
  ad->out[0]->name = "sum";
  gir_node *t = gir_node_new(g, GIR_OP_transpose, "t", ad->out, 1, 1);
  gir_attr_set_ints(g, t, "perm", INTS(1, 0));
  gir_attr_set_float(g, t, "note", 0.5);
  gir_node_infer(g, t, &e);
  t->out[0]->name = "tr";
  gir_graph_add_output(g, c->out[0]);
  gir_graph_add_output(g, t->out[0]);
  CHECKF(gir_verify(g, &e) == 0, "%s", e.msg);

  char *txt = capture_print(g, 0, NULL, NULL);
  if (CHECK(txt != NULL)) {
    CHECK_CONTAINS(txt, "graph demo (4 nodes, 6 values)");
    CHECK_CONTAINS(txt, "  input %x:float32[2x3]\n");
    CHECK_CONTAINS(txt, "  %relu_y:float32[2x3] = unary(%x) {fn=relu}\n");
    CHECK_CONTAINS(txt, "  %half_y:float16[2x3] = cast(%relu_y) {to=float16}\n");
    CHECK_CONTAINS(txt, "  %sum:float32[2x3] = binary(%x, %w=const) {fn=add}\n");
    CHECK_CONTAINS(txt, "  %tr:float32[3x2] = transpose(%sum) {perm=[1,0] note=0.5}\n");
    CHECK_CONTAINS(txt, "  output %half_y:float16[2x3]\n");
    CHECK_CONTAINS(txt, "  output %tr:float32[3x2]\n");
  }
  free(txt);

  char *dot = capture_print(g, 1, NULL, NULL);
  if (CHECK(dot != NULL)) {
    CHECK(!strncmp(dot, "digraph kiln {", 14));
    CHECK_CONTAINS(dot, "v0 [shape=ellipse label=\"x\"];");
    CHECK_CONTAINS(dot, "n0 [shape=box label=\"unary relu\\n2x3\"];");
    CHECK_CONTAINS(dot, "n1 [shape=box label=\"cast\\n2x3\"];");
    CHECK_CONTAINS(dot, "n2 [shape=box label=\"binary add\\n2x3\"];");
    CHECK_CONTAINS(dot, "v0 -> n0;");
    CHECK_CONTAINS(dot, "n0 -> n1;");
    CHECK_CONTAINS(dot, "v0 -> n2;");
    CHECK_CONTAINS(dot, "n2 -> n3;");
    CHECK_CONTAINS(dot, "o0 [shape=ellipse label=\"half_y\"];");
    CHECK_CONTAINS(dot, "n1 -> o0;");
    CHECK_CONTAINS(dot, "n3 -> o1;");
    CHECK(strstr(dot, "v1 ->") == NULL); /* constants are not drawn */
    size_t len = strlen(dot);
    CHECK(len >= 2 && !strcmp(dot + len - 2, "}\n"));
  }
  free(dot);

  /* clusters and escaping */
  x->name = "we\"ird\\name";
  int32_t clusters[4] = {0, 0, -1, 1};
  const char *labels[2] = {"group \"A\"", NULL};
  dot = capture_print(g, 1, clusters, labels);
  if (CHECK(dot != NULL)) {
    CHECK_CONTAINS(dot, "label=\"we\\\"ird\\\\name\"");
    CHECK_CONTAINS(dot, "subgraph cluster_0 {");
    CHECK_CONTAINS(dot, "label=\"group \\\"A\\\"\"");
    CHECK_CONTAINS(dot, "subgraph cluster_1 {");
    CHECK_CONTAINS(dot, "    n0 [shape=box");
    CHECK_CONTAINS(dot, "    n3 [shape=box");
    CHECK_CONTAINS(dot, "\n  n2 [shape=box");
  }
  free(dot);

  /* scalars print as "scalar"; an empty graph prints its header */
  gir_graph *s = gir_graph_new("empty");
  txt = capture_print(s, 0, NULL, NULL);
  CHECK(txt && strstr(txt, "graph empty (0 nodes, 0 values)"));
  free(txt);
  gir_value *sv = gir_value_new(s, "sv", GIR_I64, &SCALAR);
  gir_graph_add_input(s, sv);
  txt = capture_print(s, 0, NULL, NULL);
  CHECK(txt && strstr(txt, "input %sv:int64[scalar]"));
  free(txt);
  gir_graph_free(s);
  gir_graph_free(g);
}

int main(void) {
  test_arena();
  test_dtype_props();
  test_f16();
  test_bf16();
  test_f8();
  test_subbyte_ints();
  test_load_store();
  test_shapes();
  gir_graph *g = gir_graph_new("infer");
  test_infer_elementwise(g);
  test_infer_movement(g);
  test_infer_reduce(g);
  test_infer_nn(g);
  test_infer_arity(g);
  test_infer_hostile(g);
  gir_graph_free(g);
  test_verify();
  test_compact();
  test_tables();
  test_flops();
  test_fold();
  test_print();
  return check_finish("test_graphir");
}
