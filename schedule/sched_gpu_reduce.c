/* sched_gpu_reduce.c — the GPU schedule of reductions whose rows are long: a block
 * (or a warp) per output row, the row's reduction split over the threads (each a
 * strided partial, so that a warp's loads are consecutive), then combined across
 * them (sch_lower.c's allreduce: a warp-shuffle butterfly, the warps through shared
 * memory). The element-wise consumer of the row's statistics — softmax's normalize,
 * layer-norm's scale and bias, a mean's division — runs in the same block: the
 * statistics are computed at its row loop, into registers every thread holds, and
 * its threads then sweep the row. Where one output per thread is as good
 * (lower_gpu_reduce_fits) the default schedule (sched_gpu.c) stays. */
#include <string.h>
#include "templates.h"

#define WARP 32
#define BLOCK_MAX 256 /* threads a block of rows holds */

typedef struct inner_walk {
  te_var *const *vs;
  int n, found;
} inner_walk;

static void note_inner(const te_expr *ld, void *arg) {
  inner_walk *w = arg;
  int r = ld->u.load.t->rank;
  if (r > 0 && ld->u.load.t->shape[r - 1] > 1 && te_uses_vars(ld->u.load.idx[r - 1], w->vs, w->n)) w->found = 1;
}

/* 1 if a load in e indexes its tensor's innermost axis with one of the vars vs. */
static int walks_inner(const te_expr *e, te_var *const *vs, int n) {
  inner_walk w = {vs, n, 0};
  te_visit_load_exprs(e, note_inner, &w);
  return w.found;
}

static int64_t numel(const te_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

static int64_t reduce_extent(const sch_stage *st) {
  int64_t k = 1;
  for (int i = 0; i < st->n_reduce; i++) k *= st->reduce_axes[i]->extent;
  return k;
}

int lower_gpu_reduce_fits(const sch_stage *st, const lower_target *t) {
  if (st->attach != SCH_ROOT || st->n_rels || st->template_name || !st->n_reduce || st->n_root < 1) return 0;
  if (st->body->kind != TE_REDUCE) return 0;
  te_combiner c = st->body->u.red.comb;
  gir_dtype d = st->t->dtype;
  if (c != TE_SUM && c != TE_PROD && c != TE_RMAX && c != TE_RMIN) return 0;
  if (d != GIR_F32 && d != GIR_F64 && d != GIR_I32 && d != GIR_I64) return 0;
  if (reduce_extent(st) < WARP) return 0; /* a short row: one thread does it as fast */
  te_var *rv[GIR_MAX_RANK];
  int n = st->n_reduce < GIR_MAX_RANK ? st->n_reduce : GIR_MAX_RANK;
  for (int i = 0; i < n; i++) rv[i] = st->reduce_axes[i]->root;
  /* along the innermost axis, one thread per output walks its own run of memory and a
   * warp's loads are 32 runs apart; across it, a warp's threads read neighbours and
   * one output per thread is coalesced already — unless there are too few outputs
   * to give each multiprocessor a block of threads */
  int64_t sms = t->gpu_sms > 0 ? t->gpu_sms : 1;
  return walks_inner(st->body, rv, n) || numel(st->t) < sms * BLOCK_MAX;
}

lower_gpu_reduce_cfg lower_gpu_reduce_default(int64_t rows, int64_t k, const lower_target *t) {
  (void)t;
  lower_gpu_reduce_cfg c = {WARP, 1};
  while (c.threads < BLOCK_MAX && (int64_t)c.threads * 8 < k) c.threads *= 2; /* at least 8 elements a thread */
  if (c.threads == WARP) c.rows = (int32_t)(rows < BLOCK_MAX / WARP ? rows : BLOCK_MAX / WARP);
  if (c.rows < 1) c.rows = 1;
  return c;
}

/* The reduce axes of red fused, split by the threads, the thread loop outside. */
static int sched_red(sch_schedule *s, sch_stage *red, const lower_gpu_reduce_cfg *c) {
  sch_iter *f = red->reduce_axes[0];
  for (int i = 1; i < red->n_reduce; i++)
    if (sch_fuse(s, red, f, red->reduce_axes[i], &f) < 0) return -1;
  sch_iter *ro, *ri;
  if (sch_split(s, red, f, c->threads, &ro, &ri) < 0 || sch_bind(s, red, ri, "threadIdx.x") < 0) return -1;
  sch_iter *order[2] = {ri, ro};
  if (sch_reorder(s, red, order, 2) < 0) return -1;
  red->template_name = "gpu_reduce";
  return 0;
}

/* Rows of st (its leading axes through leaf `last`, fused) bound to blocks, c->rows
 * of them to threadIdx.y; with `point` (no columns: one value a row) a loop of one
 * thread along x inside, so that one thread stores it. *at: the loop a row's
 * reductions are computed at. */
static int bind_rows(sch_schedule *s, sch_stage *st, sch_iter *last, const lower_gpu_reduce_cfg *c, int point,
                      sch_iter **at) {
  sch_iter *row = lower_fuse_through(s, st, last), *bo, *bi = NULL, *one = NULL;
  if (!row) return -1;
  if (point && sch_split(s, st, row, 1, &row, &one) < 0) return -1;
  bo = row;
  if (c->rows > 1 && (sch_split(s, st, row, c->rows, &bo, &bi) < 0 || sch_bind(s, st, bi, "threadIdx.y") < 0)) return -1;
  if (sch_bind(s, st, bo, "blockIdx.x") < 0 || (one && sch_bind(s, st, one, "threadIdx.x") < 0)) return -1;
  *at = bi ? bi : bo;
  return 0;
}

/* A reduction scheduled by itself: a row per output. */
static int sched_alone(sch_schedule *s, sch_stage *red, const lower_target *t) {
  lower_gpu_reduce_cfg c = lower_gpu_reduce_default(numel(red->t), reduce_extent(red), t);
  lower_tune_knobs(t, "gpu_reduce", &c, sizeof c);
  sch_iter *at;
  if (bind_rows(s, red, red->root_axes[red->n_root - 1], &c, 0, &at) < 0) return -1;
  return sched_red(s, red, &c);
}

/* 1 if every load of red in e reads the row of e's own: red's axes of more than one
 * element indexed by e's row axes (rax, in order) themselves. */
static int row_aligned(const te_expr *e, const te_tensor *red, te_var *const *rax, int nr) {
  if (!e) return 1;
  switch (e->kind) {
  case TE_LOAD:
    if (e->u.load.t == red) {
      int k = 0;
      for (int d = 0; d < red->rank; d++) {
        if (red->shape[d] == 1) continue;
        const te_expr *ix = e->u.load.idx[d];
        if (k >= nr || ix->kind != TE_VAR || ix->u.var != rax[k]) return 0;
        k++;
      }
      if (k != nr) return 0;
    }
    for (int i = 0; i < e->u.load.t->rank; i++)
      if (!row_aligned(e->u.load.idx[i], red, rax, nr)) return 0;
    return 1;
  case TE_UNARY: return row_aligned(e->u.un.a, red, rax, nr);
  case TE_BINARY: return row_aligned(e->u.bin.a, red, rax, nr) && row_aligned(e->u.bin.b, red, rax, nr);
  case TE_SELECT:
    return row_aligned(e->u.sel.c, red, rax, nr) && row_aligned(e->u.sel.a, red, rax, nr) &&
           row_aligned(e->u.sel.b, red, rax, nr);
  case TE_CAST: case TE_BITCAST: return row_aligned(e->u.cast.a, red, rax, nr);
  case TE_REDUCE: return row_aligned(e->u.red.src, red, rax, nr) && row_aligned(e->u.red.cond, red, rax, nr);
  default: return 1;
  }
}

/* E's row axes for reductions of `rows` outputs: the largest p whose leading axes
 * hold `rows` elements; their variables of more than one element in rax (*nr).
 * -1 if none. */
static int row_prefix(const sch_stage *E, int64_t rows, te_var **rax, int *nr) {
  int p = -1;
  int64_t n = 1;
  for (int a = 0; a <= E->n_root; a++) {
    if (n == rows) p = a;
    if (a < E->n_root) n *= E->t->shape[a];
  }
  *nr = 0;
  for (int a = 0; a < p; a++)
    if (E->t->shape[a] != 1) rax[(*nr)++] = E->root_axes[a]->root;
  return p;
}

/* E, the element-wise consumer of the fitting reductions in fam (n of them, producer
 * first): its rows bound to blocks, its columns to threadIdx.x, the reductions
 * computed at its row loop. The reductions it could not take stay at the root. */
static int sched_consumer(sch_schedule *s, sch_stage *E, sch_stage **fam, int n, const lower_target *t) {
  int64_t rows = numel(fam[0]->t), k = 0;
  for (int i = 0; i < n; i++)
    if (reduce_extent(fam[i]) > k) k = reduce_extent(fam[i]);
  te_var *rax[GIR_MAX_RANK];
  int nr, p = row_prefix(E, rows, rax, &nr);
  if (p < 1) return 0;
  for (int i = 0; i < n; i++) /* the same rows, read where E is */
    if (numel(fam[i]->t) != rows || !row_aligned(E->body, fam[i]->t, rax, nr)) return 0;
  lower_gpu_reduce_cfg c = lower_gpu_reduce_default(rows, k, t);
  lower_tune_knobs(t, "gpu_reduce", &c, sizeof c);
  sch_iter *at;
  int point = p == E->n_root;
  if (bind_rows(s, E, E->leaf[p - 1], &c, point, &at) < 0) return -1;
  if (!point) { /* the columns: threads along x, each a strided share */
    int pos = 0;
    while (E->leaf[pos] != at) pos++;
    sch_iter *col = E->leaf[pos + 1], *co, *ci;
    while (E->n_leaf > pos + 2)
      if (sch_fuse(s, E, col, E->leaf[pos + 2], &col) < 0) return -1;
    if (sch_split(s, E, col, c.threads, &co, &ci) < 0 || sch_bind(s, E, ci, "threadIdx.x") < 0) return -1;
    sch_iter *order[2] = {ci, co};
    if (sch_reorder(s, E, order, 2) < 0) return -1;
  }
  E->template_name = "gpu_reduce";
  for (int i = n - 1; i >= 0; i--) { /* consumers first: compute_at wants them inside */
    gir_err e = {{0}};
    gir_err *saved = s->err;
    s->err = &e; /* a refusal leaves the reduction at the root, scheduled by itself */
    int rc = sch_compute_at(s, fam[i], E, at);
    s->err = saved;
    if (rc == 0 && sched_red(s, fam[i], &c) < 0) return -1;
  }
  return 0;
}

int lower_sched_gpu_reduce(sch_schedule *s, const lower_target *t) {
  int ns = s->n_stages;
  uint8_t *fit = gir_arena_calloc(s->arena, (size_t)ns + 1, 1);
  sch_stage **fam = gir_arena_calloc(s->arena, (size_t)ns + 1, sizeof *fam);
  if (!fit || !fam) return gir_errf(s->err, "out of memory");
  int any = 0;
  for (int i = 0; i < ns; i++) any |= fit[i] = (uint8_t)lower_gpu_reduce_fits(s->stages[i], t);
  if (!any) return 0;
  /* element-wise consumers: each with the fitting reductions it reads whose every
   * other reader is another of them */
  for (int j = 0; j < ns; j++) {
    sch_stage *E = s->stages[j];
    if (E->attach != SCH_ROOT || E->n_reduce || E->n_rels || E->template_name || E->n_root < 1) continue;
    uint8_t *in = gir_arena_calloc(s->arena, (size_t)ns + 1, 1);
    if (!in) return gir_errf(s->err, "out of memory");
    int n = 0;
    for (int i = 0; i < j; i++) in[i] = fit[i] && s->stages[i]->attach == SCH_ROOT && sch_reads(E, s->stages[i]);
    for (int changed = 1; changed;) {
      changed = 0;
      for (int i = 0; i < j; i++) {
        if (!in[i]) continue;
        for (int r = i + 1; r < ns && in[i]; r++) {
          sch_stage *c = s->stages[r];
          if (c == E || c->attach == SCH_INLINE || (r < j && in[r]) || !sch_reads(c, s->stages[i])) continue;
          in[i] = 0;
          changed = 1;
        }
      }
    }
    for (int i = 0; i < j; i++)
      if (in[i]) fam[n++] = s->stages[i];
    if (n && sched_consumer(s, E, fam, n, t) < 0) return -1;
  }
  /* the rest: rows of their own */
  for (int i = 0; i < ns; i++)
    if (fit[i] && lower_gpu_reduce_fits(s->stages[i], t) && sched_alone(s, s->stages[i], t) < 0) return -1;
  return 0;
}
