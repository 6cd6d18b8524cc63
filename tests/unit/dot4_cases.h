/* dot4_cases.h — the dot4 kernels test_llvm and test_c_backend both run: built by
 * hand with the tir.h builder, filled with seeded random bytes and accumulators
 * (the extremes 0, 255, -128, 127 and int32's ends among them, so that products
 * and sums wrap) and checked against a scalar C reference and the tir_eval
 * interpreter.
 *
 * Each case is one kernel over DOT4_ROWS rows:
 *     out[r*L + l] = dot4(acc[r*L + l], a[row r], b[r*4L + 4l + j])
 * for L lanes (1, 4, 6, 8, 12, 16, 32: the VPDPBUSD and SDOT widths, chunked ones
 * — 6 as three 2-lane SDOTs — and the generic rest), `a` of 4L lanes or of 4 (one group broadcast to every lane), the
 * four u8/i8 combinations; guarded forms, where a lazy if_then_else on a per-lane
 * condition (acc >= 0) picks dot4 or acc - 1, so that a backend emits the dot4 one
 * lane at a time for mixed conditions; and forms whose `a` is a vector let's
 * variable (the C backend reads its array at other lanes than the one written;
 * tir_eval has no vector lets, so those are not interpreted). */
#ifndef TESTS_DOT4_CASES_H
#define TESTS_DOT4_CASES_H
#include <stdint.h>
#include <string.h>
#include "tir.h"
#include "tir_eval.h"

#define DOT4_ROWS 5
#define DOT4_MAX_CASES 128

typedef struct dot4_case {
  int L, a4, guarded, let_a; /* a4: a has 4 lanes; let_a: a is bound by a vector let */
  gir_dtype ta, tb;
} dot4_case;

static inline int dot4_cases(dot4_case *out) {
  static const int Ls[] = {1, 4, 6, 8, 12, 16, 32};
  static const gir_dtype ts[2] = {GIR_U8, GIR_I8};
  int n = 0;
  for (int g = 0; g < 2; g++)
    for (size_t li = 0; li < sizeof Ls / sizeof Ls[0]; li++) {
      if (g && Ls[li] == 1) continue; /* a scalar condition is not the per-lane path */
      for (int a4 = 0; a4 < 2; a4++)
        for (int x = 0; x < 2; x++)
          for (int y = 0; y < 2; y++) out[n++] = (dot4_case){Ls[li], a4, g, 0, ts[x], ts[y]};
    }
  for (int L = 1; L <= 8; L += 7)
    for (int a4 = 0; a4 < 2; a4++)
      for (int x = 0; x < 2; x++) out[n++] = (dot4_case){L, a4, 0, 1, ts[x], ts[!x]};
  return n;
}

static inline const char *dot4_name(const dot4_case *c, char *buf, size_t n) {
  snprintf(buf, n, "dot4_L%d_%s_%s%s%s%s", c->L, c->ta == GIR_U8 ? "u8" : "i8", c->tb == GIR_U8 ? "u8" : "i8",
           c->a4 ? "_a4" : "", c->guarded ? "_guarded" : "", c->let_a ? "_let" : "");
  return buf;
}

/* Element counts of acc, a, b, out. */
static inline void dot4_sizes(const dot4_case *c, int64_t n[4]) {
  n[0] = n[3] = (int64_t)c->L * DOT4_ROWS;
  n[1] = (int64_t)(c->a4 ? 4 : 4 * c->L) * DOT4_ROWS;
  n[2] = (int64_t)4 * c->L * DOT4_ROWS;
}

/* The kernel's parameters (acc, a, b, out) into ps and its body. */
static inline tir_stmt *dot4_kernel(tir_builder *b, const dot4_case *c, tir_buffer *ps[4]) {
  int64_t n[4];
  dot4_sizes(c, n);
  ps[0] = tir_buffer_new(b, "acc", GIR_I32, n[0], TIR_GLOBAL, 0);
  ps[1] = tir_buffer_new(b, "a", c->ta, n[1], TIR_GLOBAL, 1);
  ps[2] = tir_buffer_new(b, "b", c->tb, n[2], TIR_GLOBAL, 2);
  ps[3] = tir_buffer_new(b, "out", GIR_I32, n[3], TIR_GLOBAL, 3);
  tir_var *r = tir_var_new(b, "r", GIR_I64);
  tir_expr *rv = tir_var_ref(b, r);
  int L = c->L, na = c->a4 ? 4 : 4 * L;
  tir_expr *ix = tir_bin(b, TE_MUL, rv, tir_i64(b, L));
  if (L > 1) ix = tir_ramp(b, ix, tir_i64(b, 1), L);
  tir_expr *ia = tir_ramp(b, tir_bin(b, TE_MUL, rv, tir_i64(b, na)), tir_i64(b, 1), na);
  tir_expr *ib = tir_ramp(b, tir_bin(b, TE_MUL, rv, tir_i64(b, 4 * L)), tir_i64(b, 1), 4 * L);
  tir_expr *acc = tir_load(b, ps[0], ix), *av = tir_load(b, ps[1], ia);
  tir_var *va = c->let_a ? tir_var_new(b, "va", c->ta) : NULL;
  if (va) {
    av = tir_var_ref(b, va);
    av->lanes = na; /* a vector let's variable, read as a vector */
  }
  tir_expr *v = tir_dot4(b, acc, av, tir_load(b, ps[2], ib));
  if (c->guarded) {
    tir_expr *zero = tir_broadcast(b, tir_int(b, GIR_I32, 0), L), *one = tir_broadcast(b, tir_int(b, GIR_I32, 1), L);
    v = tir_if_then_else(b, tir_bin(b, TE_GE, acc, zero), v, tir_bin(b, TE_SUB, acc, one));
  }
  tir_stmt *st = tir_store(b, ps[3], ix, v);
  if (va) st = tir_let(b, va, tir_load(b, ps[1], ia), st);
  return tir_for(b, r, tir_i64(b, 0), tir_i64(b, DOT4_ROWS), TIR_SERIAL, st);
}

static inline uint32_t dot4_next(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return (uint32_t)(*s >> 16);
}

/* Inputs: about a third of the bytes and accumulators are extremes. */
static inline void dot4_fill(const dot4_case *c, uint64_t seed, int32_t *acc, uint8_t *a, uint8_t *b) {
  static const uint8_t xb[] = {0x00, 0xff, 0x80, 0x7f, 0x01, 0x81};
  static const int32_t xa[] = {0, -1, INT32_MAX, INT32_MIN, INT32_MAX - 1000, INT32_MIN + 1000};
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  int64_t n[4];
  dot4_sizes(c, n);
  for (int64_t i = 0; i < n[0]; i++) {
    uint32_t x = dot4_next(&s);
    acc[i] = x % 3 == 0 ? xa[(x >> 8) % 6] : (int32_t)(dot4_next(&s) % 2000001u) - 1000000;
  }
  uint8_t *ab[2] = {a, b};
  for (int k = 0; k < 2; k++)
    for (int64_t i = 0; i < n[1 + k]; i++) {
      uint32_t x = dot4_next(&s);
      ab[k][i] = x % 3 == 0 ? xb[(x >> 8) % 6] : (uint8_t)(x >> 12);
    }
  if (c->L >= 4) /* row 0 lane 0: the largest and smallest products */
    for (int j = 0; j < 4; j++) a[j] = c->ta == GIR_U8 ? 0xff : 0x80, b[j] = c->tb == GIR_U8 ? 0xff : 0x80;
}

static inline int32_t dot4_ext(gir_dtype t, uint8_t x) { return t == GIR_U8 ? (int32_t)x : (int32_t)(int8_t)x; }

/* The scalar reference. */
static inline void dot4_reference(const dot4_case *c, const int32_t *acc, const uint8_t *a, const uint8_t *b,
                                  int32_t *out) {
  int L = c->L, na = c->a4 ? 4 : 4 * L;
  for (int r = 0; r < DOT4_ROWS; r++)
    for (int l = 0; l < L; l++) {
      int32_t s = acc[r * L + l];
      if (c->guarded && s < 0) {
        out[r * L + l] = (int32_t)((uint32_t)s - 1u);
        continue;
      }
      uint32_t u = (uint32_t)s;
      for (int j = 0; j < 4; j++)
        u += (uint32_t)(dot4_ext(c->ta, a[r * na + (c->a4 ? j : 4 * l + j)]) * dot4_ext(c->tb, b[r * 4 * L + 4 * l + j]));
      out[r * L + l] = (int32_t)u;
    }
}

/* Lanes of got that differ from want; the first few are described in msg. */
static inline int dot4_compare(const dot4_case *c, const int32_t *got, const int32_t *want, char *msg, size_t n) {
  int bad = 0;
  msg[0] = 0;
  for (int i = 0; i < c->L * DOT4_ROWS; i++)
    if (got[i] != want[i] && bad++ < 3) {
      size_t used = strlen(msg);
      snprintf(msg + used, n - used, " [%d] got %d want %d;", i, got[i], want[i]);
    }
  return bad;
}

#endif
