/* sched_gpu.c — the default schedule for a GPU (targets/cuda): every stage that
 * is not inlined and no template takes (matmuls and convs — on tensor cores with
 * lower_target.gpu_tf32 where they fit —, reductions over long rows:
 * sched_gpu_*.c) computes one output element per thread, its output axes fused and
 * split into blocks of up to 256 threads (blockIdx.x, threadIdx.x), reductions in a
 * serial loop inside the thread; a reduction feeding an element-wise epilogue of
 * its shape (conv → bias → relu) is computed at the epilogue's thread loop, so its
 * accumulator is a register. Correct for every group and shape (the interpreter's
 * GPU emulation checks it), and the floor the GPU templates improve on. Each root
 * stage becomes a launch of its own (tir/gpu_launch.c). */
#include <string.h>
#include "templates.h"

#define GPU_THREADS 256

int64_t lower_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

typedef struct loads {
  te_tensor **t;
  int n, max;
} loads;

static void note(te_tensor *t, void *arg) {
  loads *l = arg;
  for (int i = 0; i < l->n && i < l->max; i++)
    if (l->t[i] == t) return;
  if (l->n < l->max) l->t[l->n] = t;
  l->n++;
}

int lower_gpu_loads(const sch_stage *st, te_tensor **t, int max) {
  loads l = {t, 0, max};
  te_visit_loads(st->body, note, &l);
  return l.n;
}

int lower_gpu_fetch(sch_schedule *s, sch_stage *sh, int64_t tz, int64_t ty, int64_t tx) {
  sch_iter *f = sh->leaf[0];
  while (sh->n_leaf > 1)
    if (sch_fuse(s, sh, f, sh->leaf[1], &f) < 0) return -1;
  sch_iter *o, *xi, *oo, *yi, *ooo, *zi;
  if (sch_split(s, sh, f, tx, &o, &xi) < 0 || sch_split(s, sh, o, ty, &oo, &yi) < 0 ||
      sch_bind(s, sh, yi, "threadIdx.y") < 0 || sch_bind(s, sh, xi, "threadIdx.x") < 0)
    return -1;
  if (tz > 1 && (sch_split(s, sh, oo, tz, &ooo, &zi) < 0 || sch_bind(s, sh, zi, "threadIdx.z") < 0)) return -1;
  return 0;
}

/* Output axes fused, split by the block size, bound to blocks and threads; the
 * thread loop, or NULL for a stage without output axes (one thread computes it). */
static int bind_stage(sch_schedule *s, sch_stage *st, sch_iter **thread) {
  *thread = NULL;
  if (st->n_root == 0) return 0;
  sch_iter *f = st->leaf[0];
  for (int i = 1; i < st->n_root; i++) {
    if (st->leaf[1]->reduce) break;
    if (sch_fuse(s, st, f, st->leaf[1], &f) < 0) return -1;
  }
  int64_t n = f->extent, tb = n < GPU_THREADS ? n : GPU_THREADS;
  if (n < 1) return 0; /* an empty tensor: nothing to compute */
  sch_iter *bo, *ti;
  if (sch_split(s, st, f, tb, &bo, &ti) < 0 || sch_bind(s, st, bo, "blockIdx.x") < 0 ||
      sch_bind(s, st, ti, "threadIdx.x") < 0)
    return -1;
  *thread = ti;
  return 0;
}

int lower_sched_gpu(sch_schedule *s, const lower_target *t) {
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (!st->is_output && st->n_reduce == 0 && sch_compute_inline(s, st) < 0) return -1;
  }
  /* matmuls and 2-D convs of one group (float32): their templates, each stage's
   * epilogue with it (a register stage made when it has none, as on CPUs) */
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->attach != SCH_ROOT || st->n_rels || st->t->dtype != GIR_F32 || !st->t->tag) continue;
    int matmul = !strcmp(st->t->tag, "matmul") && st->n_reduce == 1 && st->t->rank >= 2, use = 0, tc = 0;
    if (!matmul && !lower_gpu_conv_fits(st)) continue;
    lower_gpu_matmul_cfg mc;
    lower_gpu_matmul_tc_cfg tcc;
    lower_gpu_conv_tc_cfg tcv;
    lower_gpu_conv_cfg cc;
    if (t && t->gpu_tf32) { /* opt-in: tensor cores */
      if (matmul) tcc = lower_gpu_matmul_tc_default(st, t, &tc);
      else tcv = lower_gpu_conv_tc_default(st, t, &tc);
    }
    if (tc) use = 1;
    else if (matmul) mc = lower_gpu_matmul_default(st, t, &use);
    else cc = lower_gpu_conv_default(st, t, &use);
    if (!use) continue;
    sch_stage *epi = lower_epilogue_of(s, st);
    if (!epi) {
      epi = st;
      if (!(st = sch_cache_write(s, st, TIR_LOCAL))) return -1;
    }
    if (tc && matmul) {
      lower_tune_knobs(t, "gpu_matmul_tc", &tcc, sizeof tcc);
      if (lower_sched_gpu_matmul_tc(s, st, epi, &tcc) < 0) return -1;
      continue;
    }
    if (tc) {
      lower_tune_knobs(t, "gpu_conv_tc", &tcv, sizeof tcv);
      if (lower_sched_gpu_conv_tc(s, st, epi, &tcv) < 0) return -1;
      continue;
    }
    if (matmul) lower_tune_knobs(t, "gpu_matmul", &mc, sizeof mc);
    else {
      /* a tuned thread tile whose block was left as the default's: the block for it */
      lower_gpu_conv_cfg d = cc;
      lower_tune_knobs(t, "gpu_conv", &cc, sizeof cc);
      if ((cc.toc != d.toc || cc.tow != d.tow) && cc.boc == d.boc && cc.boh == d.boh && cc.bow == d.bow)
        lower_gpu_conv_blocks(st, &cc);
    }
    if ((matmul ? lower_sched_gpu_matmul(s, st, epi, &mc) : lower_sched_gpu_conv(s, st, epi, &cc)) < 0) return -1;
  }
  /* reductions over long rows: threads split each row (sched_gpu_reduce.c) */
  if (lower_sched_gpu_reduce(s, t) < 0) return -1;
  /* reductions with an epilogue: attached there after the epilogue is bound */
  sch_stage **epi = gir_arena_calloc(s->arena, (size_t)s->n_stages + 1, sizeof *epi);
  if (!epi) return gir_errf(s->err, "out of memory");
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (!st->is_output && st->n_reduce && st->attach == SCH_ROOT && !st->n_rels) epi[i] = lower_epilogue_of(s, st);
  }
  sch_iter **thread = gir_arena_calloc(s->arena, (size_t)s->n_stages + 1, sizeof *thread);
  if (!thread) return gir_errf(s->err, "out of memory");
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->attach != SCH_ROOT || epi[i] || st->template_name) continue;
    if (bind_stage(s, st, &thread[i]) < 0) return -1;
  }
  for (int i = 0; i < s->n_stages; i++) {
    if (!epi[i]) continue;
    sch_stage *st = s->stages[i], *c = epi[i];
    sch_iter *at = thread[c->id];
    gir_err e = {{0}};
    gir_err *saved = s->err;
    s->err = &e; /* a refusal keeps the reduction a stage (a launch) of its own */
    int rc = at ? sch_compute_at(s, st, c, at) : -1;
    s->err = saved;
    if (rc < 0 && bind_stage(s, st, &thread[i]) < 0) return -1;
  }
  return 0;
}
