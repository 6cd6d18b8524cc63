/* sched_reduce.c — the template for reductions that leave the innermost axis
 * alone (pooling and spatial means in NCHW[x]c, where the innermost axis is a
 * block of channels; reductions over leading axes): the innermost output axis is
 * cut into vectors, the reduction runs at each vector of its epilogue with the
 * reduce loops outside and the vector lane innermost, so every tap is one vector
 * load and one vector add/max into a register. Sibling reductions the epilogue
 * also reads (an average pool's tap count) go to the same place. */
#include "templates.h"

#define PARALLEL_ROWS 64 /* enough chunks for two to eight threads to balance */

static int is_plain(const sch_stage *st) {
  const te_expr *b = st->body;
  if (b->kind != TE_REDUCE) return 0;
  te_combiner c = b->u.red.comb;
  if (b->dtype != b->u.red.src->dtype) return 0; /* te_reduce_narrow: its steps in order */
  return c == TE_SUM || c == TE_PROD || c == TE_RMAX || c == TE_RMIN;
}

int lower_reduce_lane_axis(const sch_stage *st) {
  int a = st->n_root - 1;
  while (a > 0 && st->root_axes[a]->extent == 1) a--;
  return a;
}

int lower_vector_reduce_ok(const sch_stage *red, int32_t vec, int ragged) {
  if (vec < 2 || !is_plain(red) || red->n_root < 1) return 0;
  int64_t last = red->root_axes[lower_reduce_lane_axis(red)]->extent;
  return (ragged ? last >= vec : last % vec == 0) && red->t->dtype == GIR_F32;
}

/* The reduction at `at` of its epilogue: reduce loops outside, then the tile's
 * output vectors (lo, unrolled when the tile holds several: independent chains of
 * max/add that the CPU overlaps, where one accumulator would wait on its own
 * latency every tap), the lanes innermost. */
static int sched_red_at(sch_schedule *s, sch_stage *red, sch_stage *epi, sch_iter *at, int32_t vec) {
  if (sch_compute_at(s, red, epi, at) < 0) return -1;
  int la = lower_reduce_lane_axis(red);
  sch_iter *lane = red->root_axes[la], *lo, *li;
  if (sch_split(s, red, lane, vec, &lo, &li) < 0) return -1;
  sch_iter *order[2 * GIR_MAX_RANK + 2];
  int n = 0;
  for (int i = la + 1; i < red->n_root; i++) order[n++] = red->root_axes[i]; /* unit axes: outside */
  for (int i = 0; i < red->n_reduce; i++) order[n++] = red->reduce_axes[i];
  order[n++] = lo;
  order[n++] = li;
  if (sch_reorder(s, red, order, n) < 0) return -1;
  if (lo->extent > 1 && sch_annotate(s, red, lo, TIR_UNROLLED) < 0) return -1;
  return sch_annotate(s, red, li, TIR_VECTORIZED);
}

#define TILE_VECTORS 4 /* output vectors a reduction tile keeps in registers */

int lower_sched_vector_reduce(sch_schedule *s, sch_stage *red, sch_stage *epi, int32_t vec, int parallel) {
  int r = epi->n_root, la = lower_reduce_lane_axis(epi);
  sch_iter *lo, *li, *lio = NULL;
  /* a row of several vectors (a plain pool's output row): tiles of up to
   * TILE_VECTORS vectors, computed together */
  int64_t row = epi->root_axes[la]->extent, vecs = (row + vec - 1) / vec;
  int64_t tile = vecs < TILE_VECTORS ? vecs : TILE_VECTORS;
  while (tile > 1 && vecs % tile && vecs > TILE_VECTORS) tile--; /* whole tiles where a divisor allows */
  if (sch_split(s, epi, epi->root_axes[la], vec * tile, &lo, &li) < 0) return -1;
  if (tile > 1) {
    sch_iter *lii;
    if (sch_split(s, epi, li, vec, &lio, &lii) < 0) return -1;
    li = lii;
  }
  if (sch_annotate(s, epi, li, TIR_VECTORIZED) < 0) return -1;
  if (la < r - 1) { /* unit axes after the lanes (a pool in NCHW1c): outside the row */
    sch_iter *order[GIR_MAX_RANK + 3];
    int n = 0;
    for (int i = la + 1; i < r; i++) order[n++] = epi->root_axes[i];
    order[n++] = lo;
    if (lio) order[n++] = lio;
    order[n++] = li;
    if (sch_reorder(s, epi, order, n) < 0) return -1;
  }
  /* leading loops fused until there is enough parallel work (rows of a pool),
   * the inner ones (along a row) left as loops whose index arithmetic LLVM
   * strength-reduces, instead of one div/mod chain per output vector */
  sch_iter *outer = epi->leaf[0]; /* lo itself when the output is one row of vectors */
  while (outer != lo && outer->extent < PARALLEL_ROWS && epi->leaf[1] != lo)
    if (sch_fuse(s, epi, outer, epi->leaf[1], &outer) < 0) return -1;
  if (parallel && outer->extent > 1 && sch_annotate(s, epi, outer, TIR_PARALLEL) < 0) return -1;
  if (sched_red_at(s, red, epi, lo, vec) < 0) return -1;
  for (int i = 0; i < s->n_stages; i++) { /* siblings: other reductions of the same epilogue */
    sch_stage *p = s->stages[i];
    if (p == red || p->attach != SCH_ROOT || p->n_rels || !p->n_reduce || !is_plain(p)) continue;
    if (lower_epilogue_of(s, p) != NULL || !sch_reads(epi, p) || p->t->rank != red->t->rank) continue;
    int same = 1;
    for (int d = 0; d < p->t->rank; d++) same &= p->t->shape[d] == red->t->shape[d];
    int only_epi = 1;
    for (int j = p->id + 1; j < s->n_stages; j++)
      if (s->stages[j] != epi && s->stages[j]->attach != SCH_INLINE && sch_reads(s->stages[j], p)) only_epi = 0;
    if (same && only_epi && sched_red_at(s, p, epi, lo, vec) < 0) return -1;
  }
  return 0;
}
