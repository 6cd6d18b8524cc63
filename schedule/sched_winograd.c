/* sched_winograd.c — the schedules of the Winograd transform kernels
 * (te/compute_winograd.c, layout/winograd.c). Both walk tiles in a parallel loop
 * and unroll the points of a tile, so the selects of the compute definition fold
 * and each point keeps only its own constant-coefficient terms; the channels run
 * innermost in vectors (the blocked layout's block, and v's channel axis, are
 * contiguous on both sides).
 *
 * winograd_in, v[ξ, ν, t, c]: t and the channel block outside (parallel), then the
 * a×a points unrolled, the block's vectors innermost: each tile's input patch
 * (a·a vectors per block) is loaded once and combined into the a·a outputs.
 * winograd_out, y[n, o/ob, h, w, o%ob] (or the epilogue stage it is inlined into,
 * which has its shape): h and w split by m (a map of no whole tiles, 7×7 by 2, gets
 * its last tile's outside pixels guarded), the m×m pixels of a tile and the
 * block's vectors unrolled inside the parallel tile loop, so the a·a vectors of
 * v a tile reads are loaded once for its m·m outputs. The parallel loop is
 * (n, tile row, channel block), tile rows outside the channel blocks: the threads'
 * static shares are then bands of tiles with all their channels, each reading
 * whole rows of v (every channel of a tile, contiguous) rather than every tile's
 * share of one block's channels. With the blocks outside, ResNet-50's 56×56 and
 * 28×28 output transforms ran no faster on two threads than on one (84 and 45 µs
 * on the Sapphire Rapids VM of the README); with the rows outside, 33–44 and
 * 22–25 µs. */
#include <string.h>
#include "templates.h"

static int is_tag(const sch_stage *st, const char *tag) { return st->t->tag && !strcmp(st->t->tag, tag); }

/* The widest vector (halving from the target's) dividing a block of b lanes. */
static int64_t lanes_for(int64_t b, const lower_target *t) {
  int64_t v = t->vec_f32 > 1 ? t->vec_f32 : 1;
  while (v > 1 && b % v) v /= 2;
  return v;
}

static int sched_in(sch_schedule *s, sch_stage *st, const lower_target *t) {
  const gir_node *n = st->t->origin;
  int64_t b = n->in[0]->shape.dims[4], v = lanes_for(b, t);
  sch_iter **r = st->root_axes; /* ξ, ν, t, c */
  sch_iter *cb, *cr, *co = NULL, *ci;
  if (sch_split(s, st, r[3], b, &cb, &cr) < 0) return -1;
  if (v < b) {
    if (sch_split(s, st, cr, v, &co, &ci) < 0) return -1;
  } else {
    ci = cr;
  }
  sch_iter *order[6];
  int k = 0;
  order[k++] = r[2];
  order[k++] = cb;
  if (co) order[k++] = co;
  order[k++] = r[0];
  order[k++] = r[1];
  order[k++] = ci;
  if (sch_reorder(s, st, order, k) < 0) return -1;
  sch_iter *par;
  if (sch_fuse(s, st, r[2], cb, &par) < 0) return -1;
  if ((co && sch_annotate(s, st, co, TIR_UNROLLED) < 0) || sch_annotate(s, st, r[0], TIR_UNROLLED) < 0 ||
      sch_annotate(s, st, r[1], TIR_UNROLLED) < 0 || (v > 1 && sch_annotate(s, st, ci, TIR_VECTORIZED) < 0) ||
      sch_annotate(s, st, par, TIR_PARALLEL) < 0)
    return -1;
  st->template_name = "winograd_in";
  return 0;
}

static int sched_out(sch_schedule *s, sch_stage *st, int64_t m, const lower_target *t) {
  sch_iter **r = st->root_axes; /* n, o/ob, h, w, o%ob */
  /* the conv's epilogue in two registers' lanes where its math is long (a swish) */
  int64_t ob = r[4]->extent, v = lower_math_lanes(st, ob, (int32_t)lanes_for(ob, t));
  sch_iter *ho, *hi, *wo, *wi, *mo = NULL, *mi;
  if (sch_split(s, st, r[2], m, &ho, &hi) < 0 || sch_split(s, st, r[3], m, &wo, &wi) < 0) return -1;
  if (v < ob) {
    if (sch_split(s, st, r[4], v, &mo, &mi) < 0) return -1;
  } else {
    mi = r[4];
  }
  sch_iter *order[8];
  int k = 0;
  order[k++] = r[0];
  order[k++] = ho;
  order[k++] = r[1];
  order[k++] = wo;
  if (mo) order[k++] = mo;
  order[k++] = hi;
  order[k++] = wi;
  order[k++] = mi;
  if (sch_reorder(s, st, order, k) < 0) return -1;
  sch_iter *par = lower_fuse_through(s, st, r[1]);
  if (!par) return -1;
  if ((mo && sch_annotate(s, st, mo, TIR_UNROLLED) < 0) || sch_annotate(s, st, hi, TIR_UNROLLED) < 0 ||
      sch_annotate(s, st, wi, TIR_UNROLLED) < 0 || (v > 1 && sch_annotate(s, st, mi, TIR_VECTORIZED) < 0) ||
      sch_annotate(s, st, par, TIR_PARALLEL) < 0)
    return -1;
  st->template_name = "winograd_out";
  return 0;
}

int lower_sched_winograd(sch_schedule *s, const lower_target *t) {
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (is_tag(st, "winograd_in") && st->attach == SCH_ROOT && !st->n_rels) {
      if (sched_in(s, st, t) < 0) return -1;
      continue;
    }
    if (!is_tag(st, "winograd_out")) continue;
    /* the transform itself when it is the output, else the epilogue it is inlined into:
     * the root stages of its shape */
    int64_t m = gir_attr_int(st->t->origin, "m", 0);
    for (int j = i; j < s->n_stages; j++) {
      sch_stage *e = s->stages[j];
      if (e->attach != SCH_ROOT || e->n_reduce || e->n_rels || e->t->rank != 5) continue;
      int same = 1;
      for (int d = 0; d < 5; d++) same &= e->t->shape[d] == st->t->shape[d];
      if (same && sched_out(s, e, m, t) < 0) return -1;
    }
  }
  return 0;
}
