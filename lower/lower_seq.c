/* lower_seq.c — kernels written in loop IR directly, for the ops that are
 * sequential algorithms with no tensor-expression form (their lower_compute_*
 * says so): ONNX NonMaxSuppression (GIR_OP_nms), Unique (GIR_OP_unique) and NonZero
 * on run-time data (GIR_OP_nonzero). The kernel is serial
 * (one thread) and goes through the same loop passes, backends, plan and runtime
 * as any other; its buffers are the node's present inputs, then its outputs.
 * The kernels on strings (GIR_OP_strop) are built over the same frame in
 * lower_str.c.
 *
 * NonMaxSuppression follows ONNX's reference (onnx/reference/ops/
 * op_non_max_suppression.py) exactly: per batch and class, the candidates (every
 * box, or those scoring above score_threshold when it is given) in order of score,
 * ties by the lower box index; a candidate is kept unless its IoU with a box kept
 * before it in this class exceeds iou_threshold (corners normalized by min/max, or
 * from centre and size with center_point_box; empty intersections and degenerate
 * areas never suppress), until max_output_boxes_per_class are kept (absent: 0, as
 * ONNX says). Output row r is [batch, class, box] of the r-th kept box; rows past
 * the count are zero, and the count is the second output (the selected indices'
 * data-dependent extent, gir_value.extent). The order comes from ranks,
 * rank[i] = #{candidates j before i}, so it costs O(N²) per class, like the
 * suppression scan; both are bounded by the compiled shapes. */
#include <string.h>
#include "lower.h"
#include "tir_passes.h"

typedef struct seq {
  tir_builder *b;
} seq;

static tir_expr *i64(seq *s, int64_t v) { return tir_i64(s->b, v); }
static tir_expr *f32(seq *s, double v) { return tir_float(s->b, GIR_F32, v); }
static tir_expr *var(seq *s, tir_var *v) { return tir_var_ref(s->b, v); }
static tir_expr *bin(seq *s, te_binop op, tir_expr *x, tir_expr *y) { return tir_bin(s->b, op, x, y); }
static tir_expr *ld(seq *s, tir_buffer *buf, tir_expr *i) { return tir_load(s->b, buf, i); }
static tir_stmt *st(seq *s, tir_buffer *buf, tir_expr *i, tir_expr *v) { return tir_store(s->b, buf, i, v); }
static tir_stmt *loop(seq *s, tir_var *v, int64_t n, tir_stmt *body) {
  return tir_for(s->b, v, i64(s, 0), i64(s, n), TIR_SERIAL, body);
}
static tir_stmt *when(seq *s, tir_expr *c, tir_stmt *t) { return tir_if(s->b, c, t, NULL); }
static tir_stmt *seqn(seq *s, tir_stmt *const *x, int32_t n) { return tir_seq(s->b, x, n); }

/* The kernel's buffers: node n's present inputs (in[i], NULL when absent) and its
 * outputs — parameters for those the kernel hands on (outs, in node order), scratch
 * it allocates (local[q]) for the others. lower_sequential builds it; each op's
 * builder returns the kernel's body over it. */
#define SEQ_MAX_OPERANDS 8
typedef struct frame {
  tir_buffer *in[SEQ_MAX_OPERANDS], *out[SEQ_MAX_OPERANDS], *local[SEQ_MAX_OPERANDS];
} frame;

/* Coordinate k (0..3) of box i of batch bb. */
static tir_expr *coord(seq *s, tir_buffer *boxes, int64_t n_boxes, tir_expr *bb, tir_expr *i, int k) {
  tir_expr *row = bin(s, TE_ADD, bin(s, TE_MUL, bb, i64(s, n_boxes)), i);
  return ld(s, boxes, bin(s, TE_ADD, bin(s, TE_MUL, row, i64(s, 4)), i64(s, k)));
}

/* Whether box i suppresses box j (IoU above thr), the reference's suppress_by_iou. */
static tir_expr *suppresses(seq *s, tir_buffer *boxes, int64_t n_boxes, int center, tir_expr *bb, tir_expr *i,
                            tir_expr *j, tir_expr *thr) {
  tir_expr *lo[2][2], *hi[2][2]; /* [box][x, y] */
  tir_expr *ix[2] = {i, j};
  for (int q = 0; q < 2; q++) {
    tir_expr *c[4];
    for (int k = 0; k < 4; k++) c[k] = coord(s, boxes, n_boxes, bb, ix[q], k);
    if (!center) { /* [y1, x1, y2, x2] */
      lo[q][0] = bin(s, TE_MIN, c[1], c[3]), hi[q][0] = bin(s, TE_MAX, c[1], c[3]);
      lo[q][1] = bin(s, TE_MIN, c[0], c[2]), hi[q][1] = bin(s, TE_MAX, c[0], c[2]);
    } else { /* [x_center, y_center, width, height] */
      tir_expr *hw = bin(s, TE_DIV, c[2], f32(s, 2)), *hh = bin(s, TE_DIV, c[3], f32(s, 2));
      lo[q][0] = bin(s, TE_SUB, c[0], hw), hi[q][0] = bin(s, TE_ADD, c[0], hw);
      lo[q][1] = bin(s, TE_SUB, c[1], hh), hi[q][1] = bin(s, TE_ADD, c[1], hh);
    }
  }
  tir_expr *ilo[2], *ihi[2];
  for (int d = 0; d < 2; d++) {
    ilo[d] = bin(s, TE_MAX, lo[0][d], lo[1][d]);
    ihi[d] = bin(s, TE_MIN, hi[0][d], hi[1][d]);
  }
  tir_expr *inter = bin(s, TE_MUL, bin(s, TE_SUB, ihi[0], ilo[0]), bin(s, TE_SUB, ihi[1], ilo[1]));
  tir_expr *a1 = bin(s, TE_MUL, bin(s, TE_SUB, hi[0][0], lo[0][0]), bin(s, TE_SUB, hi[0][1], lo[0][1]));
  tir_expr *a2 = bin(s, TE_MUL, bin(s, TE_SUB, hi[1][0], lo[1][0]), bin(s, TE_SUB, hi[1][1], lo[1][1]));
  tir_expr *uni = bin(s, TE_SUB, bin(s, TE_ADD, a1, a2), inter);
  tir_expr *ok = bin(s, TE_AND, bin(s, TE_GT, ihi[0], ilo[0]), bin(s, TE_GT, ihi[1], ilo[1]));
  ok = bin(s, TE_AND, ok, bin(s, TE_GT, inter, f32(s, 0)));
  ok = bin(s, TE_AND, ok, bin(s, TE_AND, bin(s, TE_GT, a1, f32(s, 0)), bin(s, TE_GT, a2, f32(s, 0))));
  ok = bin(s, TE_AND, ok, bin(s, TE_GT, uni, f32(s, 0)));
  /* the division only where ok: a zero union would make it inf or NaN, which the
   * comparison would then discard anyway */
  tir_expr *safe = tir_select(s->b, ok, uni, f32(s, 1));
  return bin(s, TE_AND, ok, bin(s, TE_GT, bin(s, TE_DIV, inter, safe), thr));
}

static tir_stmt *nms_body(seq *s, const gir_node *n, const frame *fr) {
  tir_builder *b = s->b;
  const gir_value *bx = n->in[0], *sc = n->in[1];
  int64_t B = bx->shape.dims[0], N = bx->shape.dims[1], C = sc->shape.dims[1];
  int64_t cap = n->out[0]->shape.dims[0];
  int center = (int)gir_attr_int(n, "center_point_box", 0);
  tir_buffer *const *in = fr->in, *sel = fr->out[0], *cnt_out = fr->out[1];

  /* scratch: the order of the candidates, the kept boxes, and three counters */
  int64_t n1 = N > 0 ? N : 1;
  tir_buffer *order = tir_buffer_new(b, "order", GIR_I64, n1, TIR_LOCAL, -1);
  tir_buffer *kept = tir_buffer_new(b, "kept", GIR_I64, n1, TIR_LOCAL, -1);
  tir_buffer *ctr = tir_buffer_new(b, "counters", GIR_I64, 4, TIR_LOCAL, -1); /* 0 rows, 1 kept, 2 rank, 3 ok */
  tir_expr *maxk = in[2] ? bin(s, TE_MAX, ld(s, in[2], i64(s, 0)), i64(s, 0)) : i64(s, 0);
  tir_expr *iou = in[3] ? ld(s, in[3], i64(s, 0)) : f32(s, 0);
  tir_var *e = tir_var_new(b, "e", GIR_I64), *bb = tir_var_new(b, "b", GIR_I64), *cc = tir_var_new(b, "c", GIR_I64);
  tir_var *i = tir_var_new(b, "i", GIR_I64), *j = tir_var_new(b, "j", GIR_I64), *r = tir_var_new(b, "r", GIR_I64);
  tir_var *q = tir_var_new(b, "q", GIR_I64), *bi = tir_var_new(b, "box", GIR_I64);

  /* score(x) of batch b, class c; candidate(x): passes the score threshold */
  tir_expr *srow = bin(s, TE_MUL, bin(s, TE_ADD, bin(s, TE_MUL, var(s, bb), i64(s, C)), var(s, cc)), i64(s, N));
#define SCORE(x) ld(s, in[1], bin(s, TE_ADD, srow, (x)))
#define CAND(x) (in[4] ? bin(s, TE_GT, SCORE(x), ld(s, in[4], i64(s, 0))) : tir_int(b, GIR_BOOL, 1))
  /* j before i: a higher score, or the same score and a lower index */
  tir_expr *before = bin(s, TE_OR, bin(s, TE_GT, SCORE(var(s, j)), SCORE(var(s, i))),
                         bin(s, TE_AND, bin(s, TE_EQ, SCORE(var(s, j)), SCORE(var(s, i))), bin(s, TE_LT, var(s, j), var(s, i))));
  tir_stmt *rank_i[] = {
      st(s, ctr, i64(s, 2), i64(s, 0)),
      loop(s, j, N, when(s, bin(s, TE_AND, CAND(var(s, j)), before),
                         st(s, ctr, i64(s, 2), bin(s, TE_ADD, ld(s, ctr, i64(s, 2)), i64(s, 1))))),
      st(s, order, ld(s, ctr, i64(s, 2)), var(s, i)),
  };
  tir_stmt *ranks[] = {loop(s, r, N, st(s, order, var(s, r), i64(s, -1))),
                       loop(s, i, N, when(s, CAND(var(s, i)), seqn(s, rank_i, 3)))};
  /* the greedy scan over the candidates in order */
  tir_expr *nkept = ld(s, ctr, i64(s, 1)), *rows = ld(s, ctr, i64(s, 0));
  tir_stmt *check_q = when(s, bin(s, TE_LT, var(s, q), nkept),
                           when(s, suppresses(s, in[0], N, center, var(s, bb), var(s, bi), ld(s, kept, var(s, q)), iou),
                                st(s, ctr, i64(s, 3), i64(s, 0))));
  tir_expr *row3 = bin(s, TE_MUL, rows, i64(s, 3));
  tir_stmt *keep[] = {
      st(s, kept, nkept, var(s, bi)),
      st(s, ctr, i64(s, 1), bin(s, TE_ADD, nkept, i64(s, 1))),
      when(s, bin(s, TE_LT, rows, i64(s, cap)),
           seqn(s, (tir_stmt *[]){st(s, sel, row3, var(s, bb)), st(s, sel, bin(s, TE_ADD, row3, i64(s, 1)), var(s, cc)),
                                  st(s, sel, bin(s, TE_ADD, row3, i64(s, 2)), var(s, bi)),
                                  st(s, ctr, i64(s, 0), bin(s, TE_ADD, rows, i64(s, 1)))},
                4)),
  };
  tir_stmt *visit[] = {
      st(s, ctr, i64(s, 3), i64(s, 1)),
      loop(s, q, N, check_q),
      when(s, bin(s, TE_NE, ld(s, ctr, i64(s, 3)), i64(s, 0)), seqn(s, keep, 3)),
  };
  tir_stmt *scan = loop(
      s, r, N,
      tir_let(b, bi, ld(s, order, var(s, r)),
              when(s, bin(s, TE_AND, bin(s, TE_GE, var(s, bi), i64(s, 0)), bin(s, TE_LT, nkept, maxk)), seqn(s, visit, 3))));
  tir_stmt *per_class[] = {ranks[0], ranks[1], st(s, ctr, i64(s, 1), i64(s, 0)), scan};
  tir_stmt *body[] = {
      loop(s, e, cap * 3, st(s, sel, var(s, e), i64(s, 0))),
      st(s, ctr, i64(s, 0), i64(s, 0)),
      loop(s, bb, B, loop(s, cc, C, seqn(s, per_class, 4))),
      st(s, cnt_out, i64(s, 0), rows),
  };
#undef SCORE
#undef CAND
  return tir_allocate(b, order, tir_allocate(b, kept, tir_allocate(b, ctr, seqn(s, body, 4))));
}

/* Unique: X as [outer, L, inner] (axis a: L = dims[a]; no axis: X flattened, L =
 * numel), element i the slice X[:, i, :] (outer · inner values, in C order).
 *   first[i]  the lowest j with slice j == slice i;   K = #{i : first[i] = i}
 *   uid[i]    of a first: its place among the uniques — sorted: how many unique
 *             slices are lexicographically smaller; else how many firsts precede it
 *   Y[:, uid[i], :] = slice i, indices[uid[i]] = i, counts[uid[first[j]]] += 1,
 *   inverse[j] = uid[first[j]]
 * as numpy.unique (return_index, return_inverse, return_counts) and ONNX's
 * reference; Y, indices and counts are sized by L and padded with zeros past K,
 * the count (their extent). O(L² · slice) comparisons. */
static tir_stmt *unique_body(seq *s, const gir_node *n, const frame *fr) {
  tir_builder *b = s->b;
  const gir_value *x = n->in[0];
  int64_t axis = gir_attr_int(n, "axis", -1), srt = gir_attr_int(n, "sorted", 1);
  int64_t outer = 1, L = gir_value_numel(x), inner = 1;
  if (axis >= 0) {
    L = x->shape.dims[axis];
    for (int d = 0; d < axis; d++) outer *= x->shape.dims[d];
    for (int d = (int)axis + 1; d < x->shape.rank; d++) inner *= x->shape.dims[d];
  }
  int64_t slice = outer * inner, L1 = L > 0 ? L : 1;
  tir_buffer *X = fr->in[0], *Y = fr->out[0], *IX = fr->out[1], *INV = fr->out[2], *CNT = fr->out[3], *K = fr->out[4];
  tir_buffer *first = tir_buffer_new(b, "first", GIR_I64, L1, TIR_LOCAL, -1);
  tir_buffer *uid = tir_buffer_new(b, "uid", GIR_I64, L1, TIR_LOCAL, -1);
  tir_buffer *c = tir_buffer_new(b, "state", GIR_I64, 8, TIR_LOCAL, -1); /* 0 decided 1 less 2 found 3 rank 4 K */
  tir_var *i = tir_var_new(b, "i", GIR_I64), *j = tir_var_new(b, "j", GIR_I64), *t = tir_var_new(b, "t", GIR_I64);
  tir_var *e = tir_var_new(b, "e", GIR_I64);
#define C(q) ld(s, c, i64(s, q))
#define SET(q, v) st(s, c, i64(s, q), (v))
#define AT(sl, tt) /* element tt of slice sl */                                                                     \
  bin(s, TE_ADD, bin(s, TE_MUL, bin(s, TE_ADD, bin(s, TE_MUL, bin(s, TE_DIV, (tt), i64(s, inner)), i64(s, L)), (sl)), \
                     i64(s, inner)),                                                                                  \
      bin(s, TE_MOD, (tt), i64(s, inner)))
  /* compare slices j and i: state 0 = they differ, state 1 = slice j < slice i */
  tir_expr *a = ld(s, X, AT(var(s, j), var(s, t))), *bv = ld(s, X, AT(var(s, i), var(s, t)));
  tir_stmt *cmp_t[] = {when(s, bin(s, TE_AND, bin(s, TE_EQ, C(0), i64(s, 0)), bin(s, TE_NE, a, bv)),
                            seqn(s, (tir_stmt *[]){SET(0, i64(s, 1)), SET(1, tir_cast(b, GIR_I64, bin(s, TE_LT, a, bv)))}, 2))};
  tir_stmt *compare = seqn(s, (tir_stmt *[]){SET(0, i64(s, 0)), SET(1, i64(s, 0)), loop(s, t, slice, cmp_t[0])}, 3);
  /* 1. first occurrences */
  tir_stmt *find = when(s, bin(s, TE_AND, bin(s, TE_LT, var(s, j), var(s, i)), bin(s, TE_EQ, C(2), i64(s, 0))),
                        seqn(s, (tir_stmt *[]){compare, when(s, bin(s, TE_EQ, C(0), i64(s, 0)),
                                                            seqn(s, (tir_stmt *[]){st(s, first, var(s, i), var(s, j)),
                                                                                   SET(2, i64(s, 1))}, 2))}, 2));
  tir_stmt *firsts = loop(s, i, L, seqn(s, (tir_stmt *[]){st(s, first, var(s, i), var(s, i)), SET(2, i64(s, 0)),
                                                          loop(s, j, L, find)}, 3));
  /* 2. each first's place */
  tir_expr *is_first_j = bin(s, TE_EQ, ld(s, first, var(s, j)), var(s, j));
  tir_stmt *count_j = srt ? when(s, bin(s, TE_AND, is_first_j, bin(s, TE_NE, var(s, j), var(s, i))),
                                 seqn(s, (tir_stmt *[]){compare, when(s, bin(s, TE_NE, C(1), i64(s, 0)),
                                                                     SET(3, bin(s, TE_ADD, C(3), i64(s, 1))))}, 2))
                          : when(s, bin(s, TE_AND, is_first_j, bin(s, TE_LT, var(s, j), var(s, i))),
                                 SET(3, bin(s, TE_ADD, C(3), i64(s, 1))));
  tir_expr *is_first_i = bin(s, TE_EQ, ld(s, first, var(s, i)), var(s, i));
  tir_expr *u = ld(s, uid, var(s, i));
  tir_stmt *place_i[] = {
      SET(3, i64(s, 0)), loop(s, j, L, count_j), st(s, uid, var(s, i), C(3)), SET(4, bin(s, TE_ADD, C(4), i64(s, 1))),
      st(s, IX, u, var(s, i)),
      loop(s, t, slice, st(s, Y, AT(u, var(s, t)), ld(s, X, AT(var(s, i), var(s, t))))),
  };
  tir_stmt *places = loop(s, i, L, when(s, is_first_i, seqn(s, place_i, 6)));
  /* 3. counts and the inverse */
  tir_expr *uf = ld(s, uid, ld(s, first, var(s, i)));
  tir_stmt *tally = loop(s, i, L, seqn(s, (tir_stmt *[]){st(s, INV, var(s, i), uf),
                                                         st(s, CNT, uf, bin(s, TE_ADD, ld(s, CNT, uf), i64(s, 1)))}, 2));
  tir_stmt *body[] = {
      loop(s, e, gir_value_numel(n->out[0]), st(s, Y, var(s, e), tir_const(b, x->dtype, 0))),
      loop(s, e, L, seqn(s, (tir_stmt *[]){st(s, IX, var(s, e), i64(s, 0)), st(s, CNT, var(s, e), i64(s, 0))}, 2)),
      SET(4, i64(s, 0)), firsts, places, tally, st(s, K, i64(s, 0), C(4)),
  };
#undef C
#undef SET
#undef AT
  return tir_allocate(b, first, tir_allocate(b, uid, tir_allocate(b, c, seqn(s, body, 7))));
}

/* NonZero: the coordinates of x's non-zero elements (NaN counts), in C order, one
 * row per axis: indices[a][j] of the j-th such element; the count is the extent
 * along axis 1, and columns past it are zero. One pass. */
static tir_stmt *nonzero_body(seq *s, const gir_node *n, const frame *fr) {
  tir_builder *b = s->b;
  const gir_value *x = n->in[0];
  int64_t numel = gir_value_numel(x);
  int r = x->shape.rank;
  tir_buffer *X = fr->in[0], *const *o = fr->out;
  tir_buffer *ctr = tir_buffer_new(b, "count", GIR_I64, 1, TIR_LOCAL, -1);
  tir_var *e = tir_var_new(b, "e", GIR_I64);
  tir_expr *cnt = ld(s, ctr, i64(s, 0));
  tir_stmt *coords[GIR_MAX_RANK + 1];
  int nc = 0;
  int64_t stride = 1;
  for (int a = (r ? r : 1) - 1; a >= 0; a--) { /* coordinate a of element e: (e / stride) % dim */
    int64_t dim = r ? x->shape.dims[a] : 1;
    tir_expr *co = bin(s, TE_MOD, bin(s, TE_DIV, var(s, e), i64(s, stride)), i64(s, dim > 0 ? dim : 1));
    coords[nc++] = st(s, o[0], bin(s, TE_ADD, i64(s, (int64_t)a * numel), cnt), co);
    stride *= dim > 0 ? dim : 1;
  }
  coords[nc++] = st(s, ctr, i64(s, 0), bin(s, TE_ADD, cnt, i64(s, 1)));
  tir_expr *nz = bin(s, TE_NE, ld(s, X, var(s, e)), tir_const(b, x->dtype, 0));
  tir_stmt *body[] = {
      loop(s, e, (int64_t)(r ? r : 1) * numel, st(s, o[0], var(s, e), i64(s, 0))),
      st(s, ctr, i64(s, 0), i64(s, 0)),
      loop(s, e, numel, when(s, nz, seqn(s, coords, nc))),
      st(s, o[1], i64(s, 0), cnt),
  };
  return tir_allocate(b, ctr, seqn(s, body, 4));
}

int lower_is_sequential(gir_op op) {
  return op == GIR_OP_nms || op == GIR_OP_unique || op == GIR_OP_nonzero || op == GIR_OP_strop;
}

int lower_sequential(tir_builder *b, const gir_node *n, const gir_value *const *outs, int32_t n_outs, const char *name,
                     lower_kernel *k, gir_err *err) {
  /* the outputs handed on are parameters, in node order; the others scratch */
  for (int i = 0, q = 0; i < n_outs; i++, q++) {
    while (q < n->n_out && n->out[q] != outs[i]) q++;
    if (q == n->n_out) return gir_errf(err, "%s: output %s is not its node's, or out of order", name, outs[i]->name);
  }
  if (n->n_in > SEQ_MAX_OPERANDS || n->n_out > SEQ_MAX_OPERANDS) return gir_errf(err, "%s: too many operands", name);
  frame fr;
  memset(&fr, 0, sizeof fr);
  tir_buffer **params = gir_arena_calloc(b->arena, (size_t)(n->n_in + n_outs) + 1, sizeof *params);
  k->in = gir_arena_calloc(b->arena, (size_t)n->n_in + 1, sizeof *k->in);
  tir_func *f = gir_arena_calloc(b->arena, 1, sizeof *f);
  if (!params || !k->in || !f) return gir_errf(err, "%s: out of memory", name);
  int32_t np = 0;
  for (int i = 0; i < n->n_in; i++) {
    const gir_value *v = n->in[i];
    if (!v) continue;
    params[np] = fr.in[i] = tir_buffer_new(b, v->name, v->dtype, gir_value_numel(v), TIR_GLOBAL, np);
    k->in[np++] = v;
  }
  for (int q = 0, at = 0; q < n->n_out; q++) {
    const gir_value *v = n->out[q];
    int64_t size = gir_value_numel(v);
    if (at < n_outs && outs[at] == v)
      params[np + at] = fr.out[q] = tir_buffer_new(b, v->name, v->dtype, size, TIR_GLOBAL, np + at), at++;
    else
      fr.out[q] = fr.local[q] = tir_buffer_new(b, v->name, v->dtype, size > 0 ? size : 1, TIR_LOCAL, -1);
  }
  seq S = {b};
  tir_stmt *body;
  switch (n->op) {
  case GIR_OP_nms: body = nms_body(&S, n, &fr); break;
  case GIR_OP_unique: body = unique_body(&S, n, &fr); break;
  case GIR_OP_nonzero: body = nonzero_body(&S, n, &fr); break;
  case GIR_OP_strop: /* lower_str.c */
    k->n_checks = 0, k->checks = NULL;
    if (lower_str_body(b, n, fr.in, fr.out, k, &body, err) < 0) return -1;
    break;
  default: return gir_errf(err, "%s: %s has no loop-IR kernel", name, gir_op_name(n->op));
  }
  for (int q = 0; q < n->n_out; q++)
    if (fr.local[q]) body = tir_allocate(b, fr.local[q], body);
  *f = (tir_func){name, np + n_outs, params, body, b->next_var, b->next_buffer};
  k->fn = f;
  k->node = n;
  k->n_in = np;
  k->n_out = n_outs;
  k->out = (const gir_value **)outs;
  k->flops = 0;
  k->scheduled = f->body;
  f->body = tir_optimize(b, f->body, 0); /* serial: no vector loops */
  k->n_ws = 0;
  k->ws_bytes = NULL;
  return 0;
}
