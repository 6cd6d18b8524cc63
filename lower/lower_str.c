/* lower_str.c — the kernels on string tensors (the strop op, ops.def), written in
 * loop IR directly like lower_seq.c's: serial loops of byte loads and stores, so
 * they run through every backend (LLVM, the C backend, AOT) with no runtime code.
 *
 * A string tensor is uint8 with its last axis the slot of each string
 * (gir_value.string_bytes = w): a 4-byte little-endian length, then the bytes,
 * zero padded. Lengths are read clamped to [0, w-4], so a slot whose length was
 * never validated still makes every load land inside it; results are written with
 * their padding zeroed. The semantics of each kernel are on its builder; the
 * README's "String tensors" says where they differ from ONNX's reference. */
#include <string.h>
#include "lower.h"
#include "tir_passes.h"

typedef struct sk {
  tir_builder *b;
  int64_t w;     /* slot bytes */
  tir_buffer *st; /* scratch counters, i64[8] */
} sk;

static tir_expr *I(sk *s, int64_t v) { return tir_i64(s->b, v); }
static tir_expr *V(sk *s, tir_var *v) { return tir_var_ref(s->b, v); }
static tir_expr *B(sk *s, te_binop op, tir_expr *x, tir_expr *y) { return tir_bin(s->b, op, x, y); }
static tir_expr *ADD(sk *s, tir_expr *x, tir_expr *y) { return B(s, TE_ADD, x, y); }
static tir_expr *MUL(sk *s, tir_expr *x, tir_expr *y) { return B(s, TE_MUL, x, y); }
static tir_expr *LT(sk *s, tir_expr *x, tir_expr *y) { return B(s, TE_LT, x, y); }
static tir_expr *EQ(sk *s, tir_expr *x, tir_expr *y) { return B(s, TE_EQ, x, y); }
static tir_expr *AND(sk *s, tir_expr *x, tir_expr *y) { return B(s, TE_AND, x, y); }
static tir_expr *OR(sk *s, tir_expr *x, tir_expr *y) { return B(s, TE_OR, x, y); }
static tir_expr *CLAMP(sk *s, tir_expr *x, int64_t lo, int64_t hi) { return B(s, TE_MIN, B(s, TE_MAX, x, I(s, lo)), I(s, hi)); }
static tir_stmt *FOR(sk *s, tir_var *v, int64_t n, tir_stmt *body) {
  return tir_for(s->b, v, I(s, 0), I(s, n), TIR_SERIAL, body);
}
static tir_stmt *IF(sk *s, tir_expr *c, tir_stmt *t) { return tir_if(s->b, c, t, NULL); }
static tir_stmt *IFELSE(sk *s, tir_expr *c, tir_stmt *t, tir_stmt *e) { return tir_if(s->b, c, t, e); }
static tir_stmt *SEQ(sk *s, tir_stmt *const *x, int32_t n) { return tir_seq(s->b, x, n); }
#define SEQV(s, ...) SEQ(s, (tir_stmt *[]){__VA_ARGS__}, (int32_t)(sizeof((tir_stmt *[]){__VA_ARGS__}) / sizeof(tir_stmt *)))
static tir_var *VAR(sk *s, const char *name) { return tir_var_new(s->b, name, GIR_I64); }
static tir_stmt *LET(sk *s, tir_var *v, tir_expr *e, tir_stmt *body) { return tir_let(s->b, v, e, body); }
/* scratch counter q */
static tir_expr *C(sk *s, int q) { return tir_load(s->b, s->st, I(s, q)); }
static tir_stmt *SET(sk *s, int q, tir_expr *v) { return tir_store(s->b, s->st, I(s, q), v); }

/* Byte k (0-based, after the length) of slot `slot` of buf, as i64. */
static tir_expr *byte_at(sk *s, tir_buffer *buf, tir_expr *slot, tir_expr *k) {
  return tir_cast(s->b, GIR_I64, tir_load(s->b, buf, ADD(s, MUL(s, slot, I(s, s->w)), ADD(s, k, I(s, 4)))));
}
/* The length of slot `slot`, clamped to [0, w-4]. */
static tir_expr *len_of(sk *s, tir_buffer *buf, tir_expr *slot) {
  tir_expr *base = MUL(s, slot, I(s, s->w)), *len = NULL;
  for (int j = 0; j < 4; j++) {
    tir_expr *bj = tir_cast(s->b, GIR_I64, tir_load(s->b, buf, ADD(s, base, I(s, j))));
    bj = B(s, TE_SHL, bj, I(s, 8 * j));
    len = len ? B(s, TE_OR, len, bj) : bj;
  }
  return CLAMP(s, len, 0, s->w - 4);
}
static tir_stmt *set_len(sk *s, tir_buffer *buf, tir_expr *slot, tir_expr *len) {
  tir_expr *base = MUL(s, slot, I(s, s->w));
  tir_stmt *st[4];
  for (int j = 0; j < 4; j++)
    st[j] = tir_store(s->b, buf, ADD(s, base, I(s, j)),
                      tir_cast(s->b, GIR_U8, B(s, TE_AND, B(s, TE_SHR, len, I(s, 8 * j)), I(s, 255))));
  return SEQ(s, st, 4);
}
static tir_stmt *set_byte(sk *s, tir_buffer *buf, tir_expr *slot, tir_expr *k, tir_expr *v) {
  return tir_store(s->b, buf, ADD(s, MUL(s, slot, I(s, s->w)), ADD(s, k, I(s, 4))), tir_cast(s->b, GIR_U8, v));
}
/* Zeroes every byte of buf (n bytes). */
static tir_stmt *zero(sk *s, tir_buffer *buf, int64_t n) {
  tir_var *e = VAR(s, "z");
  return FOR(s, e, n, tir_store(s->b, buf, V(s, e), tir_int(s->b, GIR_U8, 0)));
}
static tir_expr *lower_ascii(sk *s, tir_expr *c) { /* A-Z → a-z */
  return tir_select(s->b, AND(s, B(s, TE_GE, c, I(s, 'A')), B(s, TE_LE, c, I(s, 'Z'))), ADD(s, c, I(s, 32)), c);
}
static tir_expr *upper_ascii(sk *s, tir_expr *c) {
  return tir_select(s->b, AND(s, B(s, TE_GE, c, I(s, 'a')), B(s, TE_LE, c, I(s, 'z'))), B(s, TE_SUB, c, I(s, 32)), c);
}

/* The element of x (ONNX shape xs, right-aligned against ys) that numpy
 * broadcasting pairs with flat element e of ys. */
static tir_expr *bcast_index(sk *s, tir_expr *e, const gir_shape *ys, const gir_shape *xs) {
  tir_expr *idx = I(s, 0);
  int64_t ystride = 1, xstride = 1;
  for (int d = ys->rank - 1, dx = xs->rank - 1; d >= 0; d--, dx--) {
    int64_t yd = ys->dims[d], xd = dx >= 0 ? xs->dims[dx] : 1;
    if (xd != 1 && yd > 0) {
      tir_expr *co = B(s, TE_MOD, B(s, TE_DIV, e, I(s, ystride)), I(s, yd));
      idx = ADD(s, idx, MUL(s, co, I(s, xstride)));
    }
    ystride *= yd > 0 ? yd : 1;
    if (dx >= 0) xstride *= xd > 0 ? xd : 1;
  }
  return idx;
}

static gir_shape onnx_shape(const gir_value *v) {
  gir_shape s = v->shape;
  if (v->string_bytes) s.rank--;
  return s;
}

/* Whether the strings at slot i of x and slot j of y are equal: counter q is left 1
 * if so, else 0. fold: compare ASCII case-insensitively. */
static tir_stmt *str_eq(sk *s, int q, tir_buffer *x, tir_expr *i, tir_buffer *y, tir_expr *j, int fold) {
  tir_var *k = VAR(s, "k");
  tir_expr *a = byte_at(s, x, i, V(s, k)), *bb = byte_at(s, y, j, V(s, k));
  if (fold) a = lower_ascii(s, a), bb = lower_ascii(s, bb);
  tir_expr *lx = len_of(s, x, i);
  return SEQV(s, SET(s, q, tir_cast(s->b, GIR_I64, EQ(s, lx, len_of(s, y, j)))),
              FOR(s, k, s->w - 4, IF(s, AND(s, LT(s, V(s, k), lx), B(s, TE_NE, a, bb)), SET(s, q, I(s, 0)))));
}

/* Equal: y[e] = a[e'] == b[e''] (broadcast), bytes and lengths. */
static tir_stmt *equal_body(sk *s, const gir_node *n, tir_buffer *const *in, tir_buffer *const *out) {
  gir_shape ys = n->out[0]->shape, as = onnx_shape(n->in[0]), bs = onnx_shape(n->in[1]);
  tir_var *e = VAR(s, "e"), *ia = VAR(s, "ia"), *ib = VAR(s, "ib");
  tir_stmt *one = SEQV(s, str_eq(s, 0, in[0], V(s, ia), in[1], V(s, ib), 0),
                       tir_store(s->b, out[0], V(s, e), tir_cast(s->b, GIR_BOOL, C(s, 0))));
  return FOR(s, e, gir_value_numel(n->out[0]),
             LET(s, ia, bcast_index(s, V(s, e), &ys, &as), LET(s, ib, bcast_index(s, V(s, e), &ys, &bs), one)));
}

/* StringConcat: y[e] = a[e'] + b[e''] (broadcast). A result longer than a slot
 * fails the run (check `check`); its slot then holds the first w-4 bytes. */
static tir_stmt *concat_body(sk *s, const gir_node *n, tir_buffer *const *in, tir_buffer *const *out, int32_t check) {
  gir_shape ys = onnx_shape(n->out[0]), as = onnx_shape(n->in[0]), bs = onnx_shape(n->in[1]);
  int64_t cap = s->w - 4;
  tir_var *e = VAR(s, "e"), *ia = VAR(s, "ia"), *ib = VAR(s, "ib"), *la = VAR(s, "la"), *lb = VAR(s, "lb");
  tir_var *k = VAR(s, "k");
  tir_expr *sum = ADD(s, V(s, la), V(s, lb)), *L = B(s, TE_MIN, sum, I(s, cap));
  tir_expr *from_b = byte_at(s, in[1], V(s, ib), CLAMP(s, B(s, TE_SUB, V(s, k), V(s, la)), 0, cap - 1));
  tir_expr *v = tir_select(s->b, LT(s, V(s, k), V(s, la)), byte_at(s, in[0], V(s, ia), V(s, k)),
                           tir_select(s->b, LT(s, V(s, k), L), from_b, I(s, 0)));
  tir_stmt *one = SEQV(s, IF(s, B(s, TE_GT, sum, I(s, cap)), tir_fail(s->b, check, sum, I(s, 0), I(s, cap + 1))),
                       set_len(s, out[0], V(s, e), L), FOR(s, k, cap, set_byte(s, out[0], V(s, e), V(s, k), v)));
  one = LET(s, la, len_of(s, in[0], V(s, ia)), LET(s, lb, len_of(s, in[1], V(s, ib)), one));
  return FOR(s, e, gir_value_numel(n->out[0]) / s->w,
             LET(s, ia, bcast_index(s, V(s, e), &ys, &as), LET(s, ib, bcast_index(s, V(s, e), &ys, &bs), one)));
}

/* RegexFullMatch: walk the DFA (importer/regex.c) over each string's bytes from
 * state 0; table row q holds the next state for each byte, then (column 256)
 * whether q accepts at the end of the text. */
static tir_stmt *regex_body(sk *s, const gir_node *n, tir_buffer *const *in, tir_buffer *const *out) {
  tir_var *e = VAR(s, "e"), *k = VAR(s, "k"), *L = VAR(s, "len");
  tir_expr *row = MUL(s, C(s, 0), I(s, 257));
  tir_expr *next = tir_cast(s->b, GIR_I64, tir_load(s->b, in[1], ADD(s, row, byte_at(s, in[0], V(s, e), V(s, k)))));
  tir_expr *acc = B(s, TE_NE, tir_cast(s->b, GIR_I64, tir_load(s->b, in[1], ADD(s, row, I(s, 256)))), I(s, 0));
  tir_stmt *one = SEQV(s, SET(s, 0, I(s, 0)), FOR(s, k, s->w - 4, IF(s, LT(s, V(s, k), V(s, L)), SET(s, 0, next))),
                       tir_store(s->b, out[0], V(s, e), tir_cast(s->b, GIR_BOOL, acc)));
  return FOR(s, e, gir_value_numel(n->out[0]), LET(s, L, len_of(s, in[0], V(s, e)), one));
}

/* StringSplit, as Python's str.split (the reference's np.char.split): with a
 * delimiter, pieces between its non-overlapping occurrences left to right, at
 * most maxsplit splits (the rest one piece), "" giving [""]; without one, runs of
 * whitespace (ASCII: space, \t \n \v \f \r and \x1c-\x1f, as str.isspace) split and
 * the ends are stripped, "" giving []; after maxsplit pieces the rest, its leading
 * whitespace stripped, is the last. Row e of y gets the pieces, padded with "";
 * z[e] their count; n the most pieces of any row (y's extent). Counters: 0 piece
 * start, 1 count, 2 skip-to (delimiter) / in a word (whitespace), 3 splits, 4 most,
 * 5 done. */
static tir_stmt *split_body(sk *s, const gir_node *n, tir_buffer *const *in, tir_buffer *const *out) {
  int32_t nd = 0;
  const int64_t *delim = gir_attr_ints(n, "delim", &nd);
  int64_t maxsplit = gir_attr_int(n, "maxsplit", -1), P = gir_attr_int(n, "pieces", 1), cap = s->w - 4;
  tir_buffer *X = in[0], *Y = out[0], *Z = out[1], *N = out[2];
  tir_var *e = VAR(s, "e"), *k = VAR(s, "k"), *L = VAR(s, "len"), *m = VAR(s, "m"), *pl = VAR(s, "plen");
  tir_var *from = VAR(s, "from"), *to = VAR(s, "to");
  /* emit(from, to): the piece X[e][from:to] → Y[e][count], count += 1 */
  tir_expr *slot = ADD(s, MUL(s, V(s, e), I(s, P)), C(s, 1));
  tir_stmt *copy = FOR(s, m, cap, IF(s, LT(s, V(s, m), V(s, pl)),
                                     set_byte(s, Y, slot, V(s, m), byte_at(s, X, V(s, e), CLAMP(s, ADD(s, V(s, from), V(s, m)), 0, cap - 1)))));
  tir_stmt *emit_body = IF(s, LT(s, C(s, 1), I(s, P)),
                           SEQV(s, LET(s, pl, CLAMP(s, B(s, TE_SUB, V(s, to), V(s, from)), 0, cap),
                                       SEQV(s, set_len(s, Y, slot, V(s, pl)), copy)),
                                SET(s, 1, ADD(s, C(s, 1), I(s, 1)))));
#define EMIT(f, t) LET(s, from, (f), LET(s, to, (t), emit_body))
  tir_expr *kk = V(s, k), *more = maxsplit >= 0 ? LT(s, C(s, 3), I(s, maxsplit)) : tir_int(s->b, GIR_BOOL, 1);
  tir_stmt *scan;
  if (nd > 0) {
    tir_expr *match = B(s, TE_LE, ADD(s, kk, I(s, nd)), V(s, L));
    for (int32_t j = 0; j < nd; j++)
      match = AND(s, match, EQ(s, byte_at(s, X, V(s, e), CLAMP(s, ADD(s, kk, I(s, j)), 0, cap - 1)), I(s, delim[j])));
    tir_expr *at = AND(s, AND(s, LT(s, kk, V(s, L)), B(s, TE_GE, kk, C(s, 2))), more);
    tir_stmt *split = SEQV(s, EMIT(C(s, 0), kk), SET(s, 0, ADD(s, kk, I(s, nd))), SET(s, 2, ADD(s, kk, I(s, nd))),
                           SET(s, 3, ADD(s, C(s, 3), I(s, 1))));
    scan = SEQV(s, FOR(s, k, cap, IF(s, at, IF(s, match, split))), EMIT(C(s, 0), V(s, L)));
  } else {
    tir_expr *c = byte_at(s, X, V(s, e), CLAMP(s, kk, 0, cap - 1));
    tir_expr *ws = OR(s, EQ(s, kk, V(s, L)),
                      OR(s, EQ(s, c, I(s, 32)), OR(s, AND(s, B(s, TE_GE, c, I(s, 9)), B(s, TE_LE, c, I(s, 13))),
                                                       AND(s, B(s, TE_GE, c, I(s, 28)), B(s, TE_LE, c, I(s, 31))))));
    tir_expr *last = maxsplit >= 0 ? EQ(s, C(s, 1), I(s, maxsplit)) : tir_int(s->b, GIR_BOOL, 0);
    tir_stmt *start = IFELSE(s, last, SEQV(s, EMIT(kk, V(s, L)), SET(s, 5, I(s, 1))),
                             SEQV(s, SET(s, 2, I(s, 1)), SET(s, 0, kk)));
    tir_stmt *step = IFELSE(s, EQ(s, C(s, 2), I(s, 0)), IF(s, EQ(s, tir_cast(s->b, GIR_I64, ws), I(s, 0)), start),
                            IF(s, ws, SEQV(s, EMIT(C(s, 0), kk), SET(s, 2, I(s, 0)))));
    scan = FOR(s, k, cap + 1, IF(s, AND(s, EQ(s, C(s, 5), I(s, 0)), B(s, TE_LE, kk, V(s, L))), step));
  }
#undef EMIT
  tir_stmt *row = SEQV(s, SET(s, 0, I(s, 0)), SET(s, 1, I(s, 0)), SET(s, 2, I(s, 0)), SET(s, 3, I(s, 0)),
                       SET(s, 5, I(s, 0)), scan, tir_store(s->b, Z, V(s, e), C(s, 1)),
                       SET(s, 4, B(s, TE_MAX, C(s, 4), C(s, 1))));
  int64_t rows = gir_value_numel(n->out[1]);
  return SEQV(s, zero(s, Y, gir_value_numel(n->out[0])), SET(s, 4, I(s, 0)),
              FOR(s, e, rows, LET(s, L, len_of(s, X, V(s, e)), row)), tir_store(s->b, N, I(s, 0), C(s, 4)));
}

/* StringNormalizer on x [C] or [1, C]: the strings that are not stop words (compared
 * exactly when is_case_sensitive, else ASCII case-insensitively), in order, case
 * changed (ASCII: LOWER a-z, UPPER A-Z; other bytes kept); [""] when none is left.
 * n: how many (y's extent). */
static tir_stmt *normalize_body(sk *s, const gir_node *n, tir_buffer *const *in, tir_buffer *const *out) {
  int64_t C_ = n->in[0]->shape.dims[n->in[0]->shape.rank - 2], act = gir_attr_int(n, "case", 0);
  int fold = !gir_attr_int(n, "sensitive", 0);
  int64_t K = in[1] ? gir_value_numel(n->in[1]) / s->w : 0;
  tir_buffer *X = in[0], *Y = out[0];
  tir_var *i = VAR(s, "i"), *j = VAR(s, "j"), *k = VAR(s, "k"), *L = VAR(s, "len");
  tir_expr *c = byte_at(s, X, V(s, i), V(s, k));
  c = act == 1 ? lower_ascii(s, c) : act == 2 ? upper_ascii(s, c) : c;
  tir_stmt *keep = SEQV(s, set_len(s, Y, C(s, 1), V(s, L)),
                        FOR(s, k, s->w - 4, IF(s, LT(s, V(s, k), V(s, L)), set_byte(s, Y, C(s, 1), V(s, k), c))),
                        SET(s, 1, ADD(s, C(s, 1), I(s, 1))));
  tir_stmt *stops = K ? FOR(s, j, K, SEQV(s, str_eq(s, 2, X, V(s, i), in[1], V(s, j), fold),
                                          IF(s, B(s, TE_NE, C(s, 2), I(s, 0)), SET(s, 0, I(s, 0)))))
                      : NULL;
  tir_stmt *one = LET(s, L, len_of(s, X, V(s, i)),
                      SEQV(s, SET(s, 0, I(s, 1)), stops, IF(s, B(s, TE_NE, C(s, 0), I(s, 0)), keep)));
  return SEQV(s, zero(s, Y, gir_value_numel(n->out[0])), SET(s, 1, I(s, 0)), FOR(s, i, C_, one),
              tir_store(s->b, out[2], I(s, 0), B(s, TE_MAX, C(s, 1), I(s, 1))));
}

/* LabelEncoder: y[e] = values[j] for the first key j equal to x[e] (strings: bytes
 * and length; numbers: ==), else the default. */
static tir_stmt *label_body(sk *s, const gir_node *n, tir_buffer *const *in, tir_buffer *const *out) {
  const gir_value *x = n->in[0], *vals = n->in[2];
  int xs = x->string_bytes != 0, vs = vals->string_bytes != 0;
  int64_t K = xs ? gir_value_numel(n->in[1]) / s->w : gir_value_numel(n->in[1]);
  int64_t ne = xs ? gir_value_numel(x) / s->w : gir_value_numel(x);
  tir_var *e = VAR(s, "e"), *j = VAR(s, "j"), *m = VAR(s, "m");
  tir_stmt *test = xs ? SEQV(s, str_eq(s, 1, in[0], V(s, e), in[1], V(s, j), 0),
                             IF(s, B(s, TE_NE, C(s, 1), I(s, 0)), SET(s, 0, V(s, j))))
                      : IF(s, EQ(s, tir_load(s->b, in[0], V(s, e)), tir_load(s->b, in[1], V(s, j))), SET(s, 0, V(s, j)));
  tir_stmt *find = SEQV(s, SET(s, 0, I(s, -1)), FOR(s, j, K, IF(s, LT(s, C(s, 0), I(s, 0)), test)));
  tir_expr *found = B(s, TE_GE, C(s, 0), I(s, 0)), *at = B(s, TE_MAX, C(s, 0), I(s, 0));
  tir_stmt *put;
  if (vs)
    put = FOR(s, m, s->w,
              tir_store(s->b, out[0], ADD(s, MUL(s, V(s, e), I(s, s->w)), V(s, m)),
                        tir_select(s->b, found, tir_load(s->b, in[2], ADD(s, MUL(s, at, I(s, s->w)), V(s, m))),
                                   tir_load(s->b, in[3], V(s, m)))));
  else
    put = tir_store(s->b, out[0], V(s, e), tir_select(s->b, found, tir_load(s->b, in[2], at), tir_load(s->b, in[3], I(s, 0))));
  return FOR(s, e, ne, SEQV(s, find, put));
}

int lower_str_body(tir_builder *b, const gir_node *n, tir_buffer *const *in, tir_buffer *const *out,
                   lower_kernel *k, tir_stmt **body, gir_err *err) {
  sk s = {b, gir_attr_int(n, "w", 0), NULL};
  s.st = tir_buffer_new(b, "counters", GIR_I64, 8, TIR_LOCAL, -1);
  tir_stmt *x;
  switch (gir_attr_int(n, "fn", -1)) {
  case GIR_STR_EQUAL: x = equal_body(&s, n, in, out); break;
  case GIR_STR_CONCAT: {
    int32_t check = k->n_checks;
    k->checks = gir_arena_grow(b->arena, k->checks, (size_t)check, (size_t)check + 1, sizeof *k->checks);
    if (!k->checks) return gir_errf(err, "out of memory");
    k->checks[k->n_checks++] = gir_arena_printf(b->arena, "string:%s", n->origin ? n->origin : n->name);
    x = concat_body(&s, n, in, out, check);
    break;
  }
  case GIR_STR_REGEX: x = regex_body(&s, n, in, out); break;
  case GIR_STR_SPLIT: x = split_body(&s, n, in, out); break;
  case GIR_STR_NORMALIZE: x = normalize_body(&s, n, in, out); break;
  case GIR_STR_LABEL: x = label_body(&s, n, in, out); break;
  default: return gir_errf(err, "%s: unknown string kernel", n->name);
  }
  /* the unused outputs (z, n) of the kernels that do not write them */
  for (int q = 1; q < 3; q++)
    if (out[q] && gir_attr_int(n, "fn", -1) != GIR_STR_SPLIT && !(q == 2 && gir_attr_int(n, "fn", -1) == GIR_STR_NORMALIZE))
      x = tir_seq2(b, x, tir_store(b, out[q], tir_i64(b, 0), tir_i64(b, 0)));
  *body = tir_allocate(b, s.st, x);
  return 0;
}
