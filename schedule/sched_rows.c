/* sched_rows.c — the row template, for softmax, layer-norm and the other per-row
 * statistics along the innermost axis that compute_reduce.c builds with row_stat:
 * the consumer's leading axes are fused into one parallel row loop, and at each
 * row the partial stages reduce into vectors (lanes innermost), the statistics
 * combine the lanes, a kept stage (softmax's exp) is computed once into a row
 * buffer, and the output row is written in vectors. A row stays in L1 from the
 * first pass to the last, where the default schedule made serial passes over the
 * whole tensor. Lanes whose steps must keep their order (row_lanes: ONNX Runtime's
 * LayerNormalization and QLinearSoftmax sums) get a schedule of their own first:
 * sched_row_lanes. */
#include <string.h>
#include "templates.h"

static int row_kind(const sch_stage *st) {
  const char *g = st->t->tag;
  if (!g || st->attach != SCH_ROOT || st->n_rels) return 0;
  if (!strcmp(g, "row_partial")) return 1;
  if (!strcmp(g, "row_stat")) return 2;
  if (!strcmp(g, "row_keep")) return 3;
  if (!strcmp(g, "row_fold")) return 4;
  return 0;
}

/* Splits the innermost root axis of st by vec (halved down to 4 until it divides
 * the axis) and vectorizes it. A row no such vector divides (197) is split by the
 * full vector all the same when it holds two: loop partition gives the ragged last
 * vector its own copy, a shorter vector, and the others no test. wide (vec, or two
 * registers' lanes for long math) is taken first wherever the row holds two of it:
 * there a ragged last vector costs less than chains one register wide. */
static int vector_inner(sch_schedule *s, sch_stage *st, int32_t vec, int32_t wide, sch_iter **outer,
                        sch_iter **inner) {
  sch_iter *last = st->root_axes[st->n_root - 1];
  *outer = *inner = last;
  int32_t full = vec;
  if (wide > vec && last->extent >= 2 * wide) vec = wide;
  else {
    while (vec > 4 && last->extent % vec) vec /= 2;
    if (last->extent % vec && full >= 4 && last->extent >= 2 * full) vec = full;
    else if (vec < 4 || last->extent % vec) return 0;
  }
  if (sch_split(s, st, last, vec, outer, inner) < 0 || sch_annotate(s, st, *inner, TIR_VECTORIZED) < 0) return -1;
  return 1;
}

/* Lanes stages whose lanes are chains of dependent steps in a fixed order (tag
 * row_lanes: ONNX Runtime's LayerNormalization, compute_reduce.c): a block of rows
 * at each step, rows outside the block in parallel, lanes in a vector, so that the
 * block's chains overlap instead of each row waiting on its own latency. Each lane
 * still takes its steps in order. */
#define LANES_BLOCK 16

static int sched_row_lanes(sch_schedule *s, const lower_target *t) {
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->attach != SCH_ROOT || st->n_rels || st->n_reduce != 1 || st->n_root < 2 || !st->t->tag ||
        strcmp(st->t->tag, "row_lanes"))
      continue;
    int r = st->n_root;
    sch_iter *lanes = st->root_axes[r - 1], *k = st->reduce_axes[0], *row, *ro, *ri;
    if (!(row = lower_fuse_through(s, st, st->leaf[r - 2]))) return -1;
    int64_t blk = LANES_BLOCK;
    while (blk > 1 && row->extent % blk) blk /= 2;
    if (sch_split(s, st, row, blk, &ro, &ri) < 0) return -1;
    sch_iter *order[4] = {ro, k, ri, lanes};
    if (sch_reorder(s, st, order, 4) < 0) return -1;
    if (lanes->extent >= 4 && lanes->extent <= t->vec_f32 && sch_annotate(s, st, lanes, TIR_VECTORIZED) < 0) return -1;
    if (ro->extent > 1 && row->extent * lanes->extent * k->extent >= 4096 && sch_annotate(s, st, ro, TIR_PARALLEL) < 0)
      return -1;
    st->template_name = "row_lanes";
  }
  return 0;
}

int lower_sched_rows(sch_schedule *s, const lower_target *t) {
  if (sched_row_lanes(s, t) < 0) return -1;
  /* the consumer: the one root stage that reads the statistics */
  sch_stage *E = NULL;
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->attach != SCH_ROOT || st->n_reduce || st->n_rels || row_kind(st)) continue;
    int reads = 0;
    for (int j = 0; j < i; j++) {
      int k = row_kind(s->stages[j]);
      reads |= k && sch_reads(st, s->stages[j]); /* the folds may be inlined into it */
    }
    if (!reads) continue;
    if (E) return 0; /* two consumers: leave it to the default schedule */
    E = st;
  }
  if (!E || E->n_root < 1) return 0;
  /* E runs over the rows and along them (softmax, layer-norm), or over the rows
   * only (a reduction without keepdims: one element each) */
  int r = E->n_root, per_row = 0;
  for (int i = 0; i < s->n_stages; i++) {
    const te_tensor *p = s->stages[i]->t;
    if (!row_kind(s->stages[i])) continue;
    if (p->rank != r && p->rank != r + 1) return 0;
    per_row = p->rank == r + 1;
    for (int d = 0; d < p->rank - 1; d++)
      if (p->shape[d] != E->t->shape[d]) return 0;
  }
  if (!per_row && r < 2) return 0;
  sch_iter *io, *ii, *row;
  int64_t numel, along = 1; /* the elements a row reduces: a partial's lanes times its steps */
  for (int i = 0; i < s->n_stages; i++) {
    const sch_stage *p = s->stages[i];
    if (row_kind(p) == 1 && p->n_reduce && p->t->shape[p->t->rank - 1] * p->reduce_axes[0]->extent > along)
      along = p->t->shape[p->t->rank - 1] * p->reduce_axes[0]->extent;
  }
  if (per_row) {
    if (!(row = lower_fuse_through(s, E, E->leaf[r - 1]))) return -1;
    numel = row->extent;
  } else {
    if (vector_inner(s, E, t->vec_f32, t->vec_f32, &io, &ii) < 0) return -1;
    if (!(row = lower_fuse_through(s, E, E->leaf[r - 2]))) return -1;
    numel = row->extent * E->t->shape[r - 1];
  }
  if (along > numel / (row->extent > 0 ? row->extent : 1)) numel = row->extent * along;
  if (row->extent > 1 && numel >= 4096 && sch_annotate(s, E, row, TIR_PARALLEL) < 0) return -1;
  for (int i = s->n_stages - 1; i >= 0; i--) { /* consumers first: compute_at wants them inside */
    sch_stage *p = s->stages[i];
    int k = row_kind(p);
    if (!k) continue;
    if (sch_compute_at(s, p, E, row) < 0) return -1;
    if (k == 2) continue; /* the lanes' combination: a few scalar steps */
    sch_iter *lo, *li;
    /* a kept stage (softmax's exp) in vectors of two registers where its math is long */
    int32_t wide = k == 3 && lower_long_math(p) ? 2 * t->vec_f32 : t->vec_f32;
    int v = vector_inner(s, p, t->vec_f32, wide, &lo, &li);
    if (v < 0) return -1;
    if (k == 1 && v && p->n_reduce) { /* reduce loop outside the lanes: every step is one vector op */
      sch_iter *order[3] = {p->reduce_axes[0], lo, li};
      if (sch_reorder(s, p, order, 3) < 0) return -1;
    }
  }
  return 0;
}
