/* default_schedule.c — the schedule of a kernel's stages: non-reducing
 * intermediate stages are inlined into their consumers, heavy stages get their
 * template (templates.c: matmul, conv in NCHWc), and every other stage gets a
 * schedule that is correct for any shape and reasonably parallel: a reduction is
 * computed at its epilogue's innermost loop, and the leading spatial loops are
 * fused until there is enough parallel work, running in parallel when the stage
 * computes enough elements to pay for the fork. */
#include <string.h>
#include "templates.h"

#define PARALLEL_MIN_ELEMENTS 16384

int lower_default_schedule(sch_schedule *s, const lower_target *t) {
  lower_target def = lower_target_default();
  if (!t) t = &def;
  int tuned = t->tuning && t->tuning->schedule ? t->tuning->schedule(t->tuning->self, s, t) : 0;
  if (tuned) return tuned < 0 ? -1 : 0; /* a tuner's schedule (tuning.c) */
  if (t->gpu) return lower_sched_gpu(s, t);
  int threads_hint = t->threads;
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    /* a convolution's padded input and softmax's exp stay stages: their templates
     * compute them once; so do a resize's per-axis passes (compute_resize.c) and the
     * computed input of a definition that reads it in several passes (kept_input) */
    int keep = st->t->tag && (!strcmp(st->t->tag, "conv_pad") || !strcmp(st->t->tag, "row_keep") ||
                              !strcmp(st->t->tag, "resize_pass") || !strcmp(st->t->tag, "kept_input"));
    if (!st->is_output && st->n_reduce == 0 && !keep && sch_compute_inline(s, st) < 0) return -1;
  }
  if (lower_apply_templates(s, t) < 0) return -1;
  /* A reduction feeding only an element-wise epilogue of its own shape (conv →
   * bias → relu, matmul → add) is computed at the epilogue's innermost loop: its
   * accumulator shrinks to one element, a register, instead of a buffer. */
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->is_output || !st->n_reduce || st->attach != SCH_ROOT || st->n_rels) continue;
    sch_stage *c = lower_epilogue_of(s, st);
    if (!c || !c->n_leaf) continue;
    gir_err e = {{0}};
    gir_err *saved = s->err;
    s->err = &e; /* a refusal just keeps the stage at the root */
    sch_compute_at(s, st, c, c->leaf[c->n_leaf - 1]);
    s->err = saved;
  }
  /* element-wise stages (float32, int32, 8-bit): the innermost axis in vectors when it holds at
   * least one and nothing is computed inside that loop; a ragged last vector
   * keeps a guard that loop partition turns into one shorter vector */
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    gir_dtype dt = st->t->dtype; /* float32, and the int32 / 8-bit values of quantized models */
    if (st->attach != SCH_ROOT || st->n_root == 0 || st->n_rels || st->n_reduce ||
        (dt != GIR_F32 && dt != GIR_I32 && dt != GIR_U8 && dt != GIR_I8))
      continue;
    int has_attached = 0;
    for (int j = 0; j < s->n_stages; j++)
      has_attached |= s->stages[j]->attach == SCH_AT && s->stages[j]->at_stage == st;
    /* trailing axes of extent 1 (a relayout to NCHW1c) do not count: the vector
     * runs along the innermost axis that has more, and moves inside them */
    int at = st->n_leaf - 1;
    while (at > 0 && st->leaf[at]->extent == 1 && !st->leaf[at]->reduce) at--;
    sch_iter *last = st->leaf[at], *lo, *li;
    if (has_attached || t->vec_f32 < 2 || last->reduce || last->extent < t->vec_f32) continue;
    /* two registers' lanes where the stage's math is long (exp, log, tanh, erf) */
    int32_t w = dt == GIR_F32 ? lower_math_lanes(st, last->extent, t->vec_f32) : t->vec_f32;
    if (sch_split(s, st, last, w, &lo, &li) < 0 || sch_annotate(s, st, li, TIR_VECTORIZED) < 0) return -1;
    if (at + 2 < st->n_leaf) { /* li, then the unit loops: the unit loops, then li */
      sch_iter *order[GIR_MAX_RANK + 2];
      int k = 0;
      for (int j = at + 2; j < st->n_leaf; j++) order[k++] = st->leaf[j];
      order[k++] = li;
      if (sch_reorder(s, st, order, k) < 0) return -1;
    }
    if (lower_sched_transpose(s, st, t) < 0) return -1; /* a strided read: tile its loop order */
  }
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->attach != SCH_ROOT || st->n_root == 0) continue;
    /* a template's stage keeps its schedule; the vector split above is the only rel we add */
    if (st->n_rels && !(st->leaf[st->n_leaf - 1]->kind == TIR_VECTORIZED && st->n_rels == 1)) continue;
    if (st->leaf[0]->kind == TIR_PARALLEL) continue; /* sched_movement.c's */
    int64_t numel = 1;
    for (int d = 0; d < st->n_root; d++) numel *= st->root_axes[d]->extent;
    if (numel < PARALLEL_MIN_ELEMENTS) continue;
    sch_iter *outer = st->leaf[0];
    /* the vector loop's ragged outer part stays out of the parallel loop: its
     * guard must stay a test on a loop of its own for partition to remove */
    int fused = 1, ragged = st->n_rels == 1 && st->root_axes[st->n_root - 1]->extent % t->vec_f32 != 0;
    while (outer->extent < 4 * threads_hint && fused < st->n_root - ragged && st->n_leaf > 1 && !st->leaf[1]->reduce) {
      if (sch_fuse(s, st, outer, st->leaf[1], &outer) < 0) return -1;
      fused++;
    }
    if (outer->extent > 1 && sch_annotate(s, st, outer, TIR_PARALLEL) < 0) return -1;
  }
  return 0;
}
