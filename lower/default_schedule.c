/* default_schedule.c — the schedule every op gets when nothing better is known:
 * correct for any shape, reasonably parallel. Non-reducing intermediate stages are
 * inlined into their consumers; for each remaining stage the leading spatial loops
 * are fused until there is enough parallel work, and that loop runs in parallel
 * when the stage computes enough elements to pay for the fork. Speed comes from
 * the op-specific templates (a later step), which start from this. */
#include "lower.h"

#define PARALLEL_MIN_ELEMENTS 16384

int lower_default_schedule(sch_schedule *s, int threads_hint) {
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (!st->is_output && st->n_reduce == 0 && sch_compute_inline(s, st) < 0) return -1;
  }
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->attach != SCH_ROOT || st->n_root == 0) continue;
    int64_t numel = 1;
    for (int d = 0; d < st->n_root; d++) numel *= st->root_axes[d]->extent;
    if (numel < PARALLEL_MIN_ELEMENTS) continue;
    sch_iter *outer = st->leaf[0];
    int fused = 1;
    while (outer->extent < 4 * threads_hint && fused < st->n_root && st->n_leaf > 1 && !st->leaf[1]->reduce) {
      if (sch_fuse(s, st, outer, st->leaf[1], &outer) < 0) return -1;
      fused++;
    }
    if (outer->extent > 1 && sch_annotate(s, st, outer, TIR_PARALLEL) < 0) return -1;
  }
  return 0;
}
