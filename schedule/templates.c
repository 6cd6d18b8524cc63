/* templates.c — which template schedules which stage. A reduction stage whose tag
 * names an op with a template (matmul, conv_nchwc) gets it, with its epilogue: the
 * sole reader of the same shape that does not reduce (bias, activation, residual
 * add, all inlined into one stage by then). Everything else keeps the default
 * schedule (default_schedule.c), which runs after this and leaves scheduled stages
 * alone. */
#include <string.h>
#include "templates.h"

lower_target lower_target_default(void) {
  return (lower_target){.vec_f32 = 16, .vec_regs = 32, .threads = 2, .masked_loads = 1};
}

static int same_shape(const te_tensor *a, const te_tensor *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

sch_stage *lower_epilogue_of(sch_schedule *s, sch_stage *st) {
  sch_stage *r = NULL;
  for (int i = st->id + 1; i < s->n_stages; i++) {
    sch_stage *c = s->stages[i];
    if (c->attach == SCH_INLINE || !sch_reads(c, st)) continue;
    if (r) return NULL;
    r = c;
  }
  if (!r || r->n_reduce || r->attach != SCH_ROOT || r->n_rels || !same_shape(r->t, st->t)) return NULL;
  return r;
}

/* How many exp, log, tanh and erf e evaluates, looking through the compute stages it
 * loads from that do not reduce (budget: the expression nodes left to look at). */
static int long_math(const te_expr *e, int *budget) {
  if (!e || --*budget < 0) return 0;
  switch (e->kind) {
  case TE_UNARY: {
    te_unop op = e->u.un.op;
    return (op == TE_EXP || op == TE_LOG || op == TE_TANH || op == TE_ERF) + long_math(e->u.un.a, budget);
  }
  case TE_BINARY: return long_math(e->u.bin.a, budget) + long_math(e->u.bin.b, budget);
  case TE_SELECT: return long_math(e->u.sel.c, budget) + long_math(e->u.sel.a, budget) + long_math(e->u.sel.b, budget);
  case TE_CAST:
  case TE_BITCAST: return long_math(e->u.cast.a, budget);
  case TE_LOAD: {
    const te_tensor *t = e->u.load.t;
    return t->kind == TE_COMPUTE && t->body && t->body->kind != TE_REDUCE ? long_math(t->body, budget) : 0;
  }
  default: return 0;
  }
}

int lower_long_math(const sch_stage *st) {
  int budget = 4096, n = long_math(st->t->body, &budget);
  return n >= 1 && n <= 3;
}

int32_t lower_math_lanes(const sch_stage *st, int64_t width, int32_t vec) {
  return vec > 1 && width % (2 * (int64_t)vec) == 0 && lower_long_math(st) ? 2 * vec : vec;
}

sch_iter *lower_fuse_through(sch_schedule *s, sch_stage *st, sch_iter *last) {
  sch_iter *f = st->leaf[0];
  while (f != last) {
    sch_iter *next = st->leaf[1];
    if (sch_fuse(s, st, f, next, &f) < 0) return NULL;
    if (next == last) break;
  }
  return f;
}

static int is_tag(const sch_stage *st, const char *tag) { return st->t->tag && !strcmp(st->t->tag, tag); }

/* A reduction whose output keeps its input's innermost axis: a pool in NCHW[x]c,
 * or a reduce that does not reduce over the last axis; or a pool in plain NCHW,
 * whose output rows are vectors too (its taps strided loads along the row). */
static int keeps_last_axis(const sch_stage *st) {
  const gir_node *n = st->t->origin;
  if (!n) return 0;
  if (n->op == GIR_OP_pool) return 1;
  if (n->op != GIR_OP_reduce) return 0;
  int32_t na;
  const int64_t *axes = gir_attr_ints(n, "axes", &na);
  int last = n->in[0]->shape.rank - 1;
  for (int i = 0; axes && i < na; i++)
    if (axes[i] == last) return 0;
  return axes != NULL && last >= 0;
}

const char *lower_generic_heavy_stage(const sch_schedule *s) {
  static const char *const heavy[] = {"conv", "conv_nchwc", "conv_transpose", "matmul", "pool", NULL};
  for (int i = 0; i < s->n_stages; i++) {
    const sch_stage *st = s->stages[i];
    if (!st->n_reduce || st->template_name || !st->t->tag || st->attach == SCH_INLINE) continue;
    for (int k = 0; heavy[k]; k++)
      if (!strcmp(st->t->tag, heavy[k])) return heavy[k];
  }
  return NULL;
}

/* A pool in plain NCHW (or NCHW1c, the same memory): its rows are the vectors,
 * and a row may end in a partial one (loop partition makes it a shorter vector). */
static int plain_pool(const sch_stage *st) {
  const gir_node *n = st->t->origin;
  return n && n->op == GIR_OP_pool && (!gir_attr_int(n, "blocked", 0) || st->t->shape[st->t->rank - 1] == 1);
}

/* Lanes for the vector-reduce template: the target's vector; for a blocked layout
 * or a reduction halved down to 4 until it divides the innermost output axis. */
static int32_t vreduce_lanes(const sch_stage *st, const lower_target *t) {
  int64_t last = st->root_axes[lower_reduce_lane_axis(st)]->extent;
  int32_t v = t->vec_f32;
  if (plain_pool(st) && last >= v) return v;
  while (v > 4 && last % v) v /= 2;
  return v;
}

int lower_apply_templates(sch_schedule *s, const lower_target *t) {
  if (lower_sched_winograd(s, t) < 0) return -1;
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->attach != SCH_ROOT || !st->n_reduce || st->n_rels) continue;
    /* float32; the int32 sums of 8-bit products take the matmul and conv templates too */
    int i32 = st->t->dtype == GIR_I32;
    if (st->t->dtype != GIR_F32 && !i32) continue;
    enum { MATMUL, CONV, VREDUCE, NONE } kind = is_tag(st, "matmul") && st->n_reduce == 1 ? MATMUL
                                               : is_tag(st, "conv_nchwc")                  ? CONV
                                               : !i32 && keeps_last_axis(st) && lower_vector_reduce_ok(st, vreduce_lanes(st, t), plain_pool(st))
                                                   ? VREDUCE
                                                   : NONE;
    if (kind == NONE) continue;
    sch_stage *epi = lower_epilogue_of(s, st);
    if (!epi) { /* no epilogue: the reduction moves into a register stage, st copies it out */
      epi = st;
      if (!(st = sch_cache_write(s, st, TIR_LOCAL))) return -1;
    }
    static const char *const names[] = {"matmul", "conv_nchwc", "vector_reduce"};
    st->template_name = epi->template_name = names[kind];
    int rc;
    if (kind == MATMUL) {
      lower_matmul_cfg cfg = lower_matmul_default(st, t);
      lower_tune_knobs(t, "matmul", &cfg, sizeof cfg);
      rc = lower_sched_matmul(s, st, epi, &cfg);
    } else if (kind == CONV) {
      lower_conv_cfg cfg = lower_conv_default(st, t);
      lower_tune_knobs(t, "conv", &cfg, sizeof cfg);
      rc = lower_sched_conv(s, st, epi, &cfg);
    } else {
      rc = lower_sched_vector_reduce(s, st, epi, vreduce_lanes(st, t), 1);
    }
    if (rc < 0) return -1;
  }
  return lower_sched_rows(s, t);
}
