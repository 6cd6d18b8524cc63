/* test_schedule.c — property tests of schedules and bound inference: small int32
 * computes (an element-wise chain, a matmul, a padded 1-D convolution with its
 * padding as a separate stage, a two-pass normalisation) get random schedules —
 * splits with dividing and non-dividing factors, reorders, fuses, compute_at at a
 * random consumer loop (bound inference), compute_inline, cache_write,
 * parallel, vectorize (the vectorize pass), prefetch hints — are lowered,
 * compiled with the LLVM backend, run, and compared bit-exactly (integer
 * arithmetic: order does not matter) with the TE interpreter's result of the
 * unscheduled definition. The loop IR also runs in the loop-IR interpreter,
 * which checks every access, prefetches included, against its buffer. The
 * matmul template's run-time packing of an activation B (a panel copied at the
 * panel loop, read by the register tile computed at the row loop inside it) is
 * checked the same way on float32 batched matmuls of small integers (exact sums),
 * ragged and whole column panels, one and several row groups. Cross-thread
 * reductions (a reduce loop bound to threadIdx.x: warp shuffles, shared memory
 * across warps) run in the GPU emulation against the reference — by hand and
 * through the GPU reduction template with its consumer — and the structures the
 * lowering refuses are refused with a reason. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "llvm_backend.h"
#include "tir_passes.h"
#include "schedule.h"
#include "templates.h"
#include "te_eval.h"
#include "tir_eval.h"

typedef struct program {
  te_tensor *in[4], *out;
  int n_in;
  const char *name;
} program;

static te_expr *K(te_ctx *c, int64_t v) { return te_const(c, GIR_I32, (double)v); }

/* C = (A * 3 + 1) - A, through two stages */
static program prog_chain(te_ctx *c) {
  int64_t s[2] = {9, 13};
  te_tensor *a = te_placeholder(c, "A", GIR_I32, 2, s);
  te_var *x[2], *y[2];
  te_axes(c, 2, s, x);
  te_expr *ix[2] = {te_v(c, x[0]), te_v(c, x[1])};
  te_tensor *b = te_compute(c, "B", GIR_I32, 2, s, x, te_add(c, te_mul(c, te_load(c, a, ix), K(c, 3)), K(c, 1)));
  te_axes(c, 2, s, y);
  te_expr *iy[2] = {te_v(c, y[0]), te_v(c, y[1])};
  te_tensor *o = te_compute(c, "C", GIR_I32, 2, s, y, te_sub(c, te_load(c, b, iy), te_load(c, a, iy)));
  return (program){{a}, o, 1, "chain"};
}

/* C[i, j] = sum_k A[i, k] * B[k, j] */
static program prog_matmul(te_ctx *c) {
  int64_t sa[2] = {11, 7}, sb[2] = {7, 10}, so[2] = {11, 10};
  te_tensor *a = te_placeholder(c, "A", GIR_I32, 2, sa), *b = te_placeholder(c, "B", GIR_I32, 2, sb);
  te_var *ax[2], *k = te_var_new(c, "k", 7);
  te_axes(c, 2, so, ax);
  te_expr *ia[2] = {te_v(c, ax[0]), te_v(c, k)}, *ib[2] = {te_v(c, k), te_v(c, ax[1])};
  te_expr *body = te_reduce(c, TE_SUM, &k, 1, te_mul(c, te_load(c, a, ia), te_load(c, b, ib)), NULL);
  return (program){{a, b}, te_compute(c, "C", GIR_I32, 2, so, ax, body), 2, "matmul"};
}

/* P[i] = X[i - 2] (0 outside); Y[i] = sum_k P[i + k] * W[k] + 1 */
static program prog_conv(te_ctx *c) {
  int64_t sx = 20, sw = 5, sp = 24, sy = 20;
  te_tensor *x = te_placeholder(c, "X", GIR_I32, 1, &sx), *w = te_placeholder(c, "W", GIR_I32, 1, &sw);
  te_var *pi;
  te_axes(c, 1, &sp, &pi);
  te_expr *src = te_sub(c, te_v(c, pi), te_int(c, 2));
  te_tensor *p = te_compute(c, "P", GIR_I32, 1, &sp, &pi, te_select(c, te_in_range(c, src, sx), te_load(c, x, &src), K(c, 0)));
  te_var *yi, *k = te_var_new(c, "k", sw);
  te_axes(c, 1, &sy, &yi);
  te_expr *pk = te_add(c, te_v(c, yi), te_v(c, k)), *kk = te_v(c, k);
  te_expr *body = te_add(c, te_reduce(c, TE_SUM, &k, 1, te_mul(c, te_load(c, p, &pk), te_load(c, w, &kk)), NULL), K(c, 1));
  return (program){{x, w}, te_compute(c, "Y", GIR_I32, 1, &sy, &yi, body), 2, "conv"};
}

/* M[i] = max_j A[i, j]; Y[i, j] = A[i, j] - M[i] */
static program prog_norm(te_ctx *c) {
  int64_t s[2] = {6, 17}, sm = 6;
  te_tensor *a = te_placeholder(c, "A", GIR_I32, 2, s);
  te_var *mi, *j = te_var_new(c, "j", 17);
  te_axes(c, 1, &sm, &mi);
  te_expr *ia[2] = {te_v(c, mi), te_v(c, j)};
  te_tensor *m = te_compute(c, "M", GIR_I32, 1, &sm, &mi, te_reduce(c, TE_RMAX, &j, 1, te_load(c, a, ia), NULL));
  te_var *ax[2];
  te_axes(c, 2, s, ax);
  te_expr *io[2] = {te_v(c, ax[0]), te_v(c, ax[1])}, *im = te_v(c, ax[0]);
  return (program){{a}, te_compute(c, "Y", GIR_I32, 2, s, ax, te_sub(c, te_load(c, a, io), te_load(c, m, &im))), 1, "norm"};
}

static int64_t numel(const te_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

/* Random primitives on one stage; failures of individual primitives (e.g. an
 * illegal fuse) are fine: they must leave the schedule valid. */
/* A prefetch of input t at loop it of st: an index over st's variables that
 * strays out of t on both sides (the lowering clamps it). */
static int random_prefetch(sch_schedule *s, sch_stage *st, sch_iter *it, te_tensor *t, unsigned *seed) {
  te_ctx *c = s->te;
  te_expr *ix = te_int(c, -3);
  for (int i = 0; i < st->n_root; i++)
    ix = te_add(c, ix, te_mul(c, te_v(c, st->root_axes[i]->root), te_int(c, 1 + rand_r(seed) % 5)));
  for (int i = 0; i < st->n_reduce; i++) ix = te_add(c, ix, te_v(c, st->reduce_axes[i]->root));
  return sch_prefetch(s, st, it, t, ix, 1 + rand_r(seed) % 3, 1 + rand_r(seed) % 4);
}

static void random_schedule(sch_schedule *s, const program *p, unsigned *seed, char *log, size_t loglen) {
  size_t o = 0;
  for (int step = 0; step < 6; step++) {
    sch_stage *st = s->stages[rand_r(seed) % s->n_stages];
    if (st->attach == SCH_INLINE || st->n_leaf == 0) continue;
    sch_iter *it = st->leaf[rand_r(seed) % st->n_leaf];
    int op = rand_r(seed) % 9;
    gir_err e = {{0}};
    s->err = &e;
    switch (op) {
    case 0: case 1: {
      int64_t f = 1 + rand_r(seed) % 6;
      if (sch_split(s, st, it, f, NULL, NULL) == 0) o += (size_t)snprintf(log + o, loglen - o, " split(%s,%lld)", st->t->name, (long long)f);
      break;
    }
    case 2: {
      if (st->n_leaf < 2) break;
      sch_iter *order[2] = {st->leaf[st->n_leaf - 1], st->leaf[0]};
      if (sch_reorder(s, st, order, 2) == 0) o += (size_t)snprintf(log + o, loglen - o, " reorder(%s)", st->t->name);
      break;
    }
    case 3:
      if (st->n_leaf >= 2 && sch_fuse(s, st, st->leaf[0], st->leaf[1], NULL) == 0)
        o += (size_t)snprintf(log + o, loglen - o, " fuse(%s)", st->t->name);
      break;
    case 4: { /* compute_at a later stage's loop */
      if (st->is_output || st->id + 1 >= s->n_stages) break;
      sch_stage *c = s->stages[st->id + 1 + rand_r(seed) % (s->n_stages - st->id - 1)];
      if (c->attach == SCH_INLINE || !c->n_leaf) break;
      sch_iter *at = c->leaf[rand_r(seed) % c->n_leaf];
      if (sch_compute_at(s, st, c, at) == 0) o += (size_t)snprintf(log + o, loglen - o, " compute_at(%s,%s)", st->t->name, c->t->name);
      break;
    }
    case 5:
      if (sch_compute_inline(s, st) == 0) o += (size_t)snprintf(log + o, loglen - o, " inline(%s)", st->t->name);
      break;
    case 6:
      if (!it->reduce && sch_annotate(s, st, it, TIR_PARALLEL) == 0)
        o += (size_t)snprintf(log + o, loglen - o, " parallel(%s)", st->t->name);
      break;
    case 7:
      if (sch_annotate(s, st, st->leaf[st->n_leaf - 1], TIR_VECTORIZED) == 0)
        o += (size_t)snprintf(log + o, loglen - o, " vectorize(%s)", st->t->name);
      break;
    case 8:
      if (random_prefetch(s, st, it, p->in[rand_r(seed) % p->n_in], seed) == 0)
        o += (size_t)snprintf(log + o, loglen - o, " prefetch(%s,%s)", st->t->name, it->name);
      break;
    }
  }
}

static int32_t pfor3(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) { /* uneven chunks */
  (void)ctx;
  int64_t a = n / 3, b = (2 * n) / 3;
  if (a > 0) fn(closure, 0, a);
  if (b > a) fn(closure, a, b);
  if (n > b) fn(closure, b, n);
  return 0;
}

static int refused;

static void run_trials(program (*make)(te_ctx *), int trials, unsigned seed0, int cache_write) {
  for (int t = 0; t < trials; t++) {
    unsigned seed = seed0 + (unsigned)t * 7919u;
    gir_arena *a = gir_arena_new();
    gir_err err = {{0}};
    te_ctx c;
    te_ctx_init(&c, a, &err);
    program p = make(&c);
    /* inputs and reference */
    void *in[4];
    te_binding bind[4];
    for (int i = 0; i < p.n_in; i++) {
      int64_t n = numel(p.in[i]);
      int32_t *d = gir_arena_alloc(a, (size_t)(n * 4 + 64));
      for (int64_t k = 0; k < n; k++) d[k] = (int32_t)(rand_r(&seed) % 201) - 100;
      in[i] = d;
      bind[i] = (te_binding){p.in[i], d};
    }
    int64_t no = numel(p.out);
    int32_t *ref = gir_arena_alloc(a, (size_t)(no * 4 + 64)), *got = gir_arena_alloc(a, (size_t)(no * 4 + 64));
    if (te_eval(&c, p.out, bind, p.n_in, ref, a, 0, &err) < 0) {
      CHECKF(0, "%s: reference failed: %s", p.name, err.msg);
      gir_arena_free(a);
      continue;
    }
    sch_schedule *s = sch_create(&c, p.in, p.n_in, &p.out, 1, &err);
    char log[1024] = "";
    if (cache_write) {
      sch_stage *o = sch_stage_of(s, p.out);
      if (o->n_reduce) sch_cache_write(s, o, TIR_LOCAL);
    }
    random_schedule(s, &p, &seed, log, sizeof log);
    tir_builder b;
    tir_builder_init(&b, a);
    gir_err le = {{0}};
    s->err = &le;
    tir_func *f = sch_lower(s, &b, "k");
    if (!f) {
      /* an illegal combination (compute_at then inlining a reader…) must be refused
       * with a reason, never lowered wrongly */
      CHECKF(le.msg[0] != 0, "%s trial %d:%s: lowering failed without a message", p.name, t, log);
      refused++;
      gir_arena_free(a);
      continue;
    }
    f->body = tir_vectorize(&b, f->body, 0);
    { /* the interpreter checks every access, prefetches included */
      void *bufs[16];
      int nb = 0;
      for (int i = 0; i < p.n_in; i++) bufs[nb++] = in[i];
      bufs[nb++] = got;
      for (int i = nb; i < f->n_params; i++)
        bufs[nb++] = gir_arena_alloc(a, (size_t)(f->params[i]->size * (int64_t)gir_dtype_size(f->params[i]->dtype) + 64));
      gir_err ie = {{0}};
      memset(got, 0x5a, (size_t)no * 4);
      int rc = tir_eval_func(f, bufs, a, 0, &ie);
      CHECKF(rc == 0, "%s trial %d:%s: the loop-IR interpreter failed: %s", p.name, t, log, ie.msg);
      int bad = 0;
      for (int64_t k = 0; rc == 0 && k < no; k++) bad += got[k] != ref[k];
      CHECKF(bad == 0, "%s trial %d:%s: the interpreter's %d of %lld elements differ", p.name, t, log, bad, (long long)no);
    }
    const tir_func *fns[1] = {f};
    tgt_llvm_module *m = tgt_llvm_compile(fns, 1, NULL, &err);
    tgt_llvm_jit *j = m ? tgt_llvm_jit_new(m, &err) : NULL;
    kiln_kernel_fn fn = j ? tgt_llvm_jit_lookup(j, "k", &err) : NULL;
    if (CHECKF(fn != NULL, "%s trial %d:%s: codegen failed: %s", p.name, t, log, err.msg)) {
      void *args[16];
      int na = 0;
      for (int i = 0; i < p.n_in; i++) args[na++] = in[i];
      args[na++] = got;
      for (int i = na; i < f->n_params; i++) { /* workspace */
        const tir_buffer *wb = f->params[i];
        args[na++] = gir_arena_alloc(a, (size_t)(wb->size * (int64_t)gir_dtype_size(wb->dtype) + 64));
      }
      kiln_ctx ctx = {.parallel_for = pfor3};
      memset(got, 0x5a, (size_t)no * 4);
      fn(args, &ctx);
      int bad = 0;
      for (int64_t k = 0; k < no; k++) bad += got[k] != ref[k];
      if (!CHECKF(bad == 0, "%s trial %d:%s: %d of %lld elements differ", p.name, t, log, bad, (long long)no)) tir_print_func(f, stdout);
    }
    tgt_llvm_jit_free(j);
    tgt_llvm_module_free(m);
    gir_arena_free(a);
  }
}

/* sch_prefetch refuses what it cannot lower, with a message */
static void prefetch_refusals(void) {
  gir_arena *a = gir_arena_new();
  gir_err err = {{0}};
  te_ctx c;
  te_ctx_init(&c, a, &err);
  program p = prog_conv(&c); /* stages P (the padding) and Y */
  sch_schedule *s = sch_create(&c, p.in, p.n_in, &p.out, 1, &err);
  sch_stage *st = sch_stage_of(s, p.out), *other = NULL;
  for (int i = 0; i < s->n_stages; i++)
    if (s->stages[i] != st) other = s->stages[i];
  te_expr *ix = te_v(&c, st->root_axes[0]->root);
  struct { const char *what; sch_iter *at; te_tensor *t; te_expr *ix; int32_t count; int64_t stride; } bad[] = {
      {"a loop of another stage", other ? other->leaf[0] : NULL, p.in[0], ix, 1, 16},
      {"a computed tensor", st->leaf[0], p.out, ix, 1, 16},
      {"a float index", st->leaf[0], p.in[0], te_const(&c, GIR_F32, 1.0), 1, 16},
      {"no lines", st->leaf[0], p.in[0], ix, 0, 16},
      {"too many lines", st->leaf[0], p.in[0], ix, 65, 16},
      {"a zero stride", st->leaf[0], p.in[0], ix, 1, 0},
  };
  CHECK(other != NULL);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (!bad[i].at) continue;
    gir_err e = {{0}};
    s->err = &e;
    CHECKF(sch_prefetch(s, st, bad[i].at, bad[i].t, bad[i].ix, bad[i].count, bad[i].stride) < 0 && e.msg[0],
           "sch_prefetch accepted %s", bad[i].what);
  }
  CHECK(st->n_prefetch == 0);
  gir_arena_free(a);
}

/* C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] in float32, scheduled by the matmul
 * template with B packed at run time: lowered, run by the interpreter and by LLVM,
 * compared exactly with the TE interpreter (small integers: exact sums). */
static void matmul_pack_b(int64_t nb, int64_t m, int64_t kk, int64_t n, int32_t mr, int32_t nr_vecs, int32_t vec,
                          int32_t groups) {
  gir_arena *a = gir_arena_new();
  gir_err err = {{0}};
  te_ctx c;
  te_ctx_init(&c, a, &err);
  int64_t sa[3] = {nb, m, kk}, sb[3] = {nb, kk, n}, so[3] = {nb, m, n};
  te_tensor *ta = te_placeholder(&c, "A", GIR_F32, 3, sa), *tb = te_placeholder(&c, "B", GIR_F32, 3, sb);
  te_var *ax[3], *k = te_var_new(&c, "k", kk);
  te_axes(&c, 3, so, ax);
  te_expr *ia[3] = {te_v(&c, ax[0]), te_v(&c, ax[1]), te_v(&c, k)}, *ib[3] = {te_v(&c, ax[0]), te_v(&c, k), te_v(&c, ax[2])};
  te_expr *body = te_reduce(&c, TE_SUM, &k, 1, te_mul(&c, te_load(&c, ta, ia), te_load(&c, tb, ib)), NULL);
  te_tensor *out = te_compute(&c, "C", GIR_F32, 3, so, ax, body), *ins[2] = {ta, tb};
  unsigned seed = 77;
  float *d[2];
  te_binding bind[2];
  for (int i = 0; i < 2; i++) {
    int64_t ne = numel(ins[i]);
    d[i] = gir_arena_alloc(a, (size_t)(ne * 4 + 64));
    for (int64_t q = 0; q < ne; q++) d[i][q] = (float)((int)(rand_r(&seed) % 21) - 10);
    bind[i] = (te_binding){ins[i], d[i]};
  }
  int64_t no = numel(out);
  float *ref = gir_arena_alloc(a, (size_t)(no * 4 + 64)), *got = gir_arena_alloc(a, (size_t)(no * 4 + 64));
  char what[128];
  snprintf(what, sizeof what, "pack_b %lldx%lldx%lldx%lld tile %dx%dx%d groups %d", (long long)nb, (long long)m,
           (long long)kk, (long long)n, mr, nr_vecs, vec, groups);
  if (!CHECKF(te_eval(&c, out, bind, 2, ref, a, 0, &err) == 0, "%s: reference failed: %s", what, err.msg)) {
    gir_arena_free(a);
    return;
  }
  sch_schedule *s = sch_create(&c, ins, 2, &out, 1, &err);
  sch_stage *epi = sch_stage_of(s, out), *red = sch_cache_write(s, epi, TIR_LOCAL);
  lower_matmul_cfg cfg = {.mr = mr, .nr_vecs = nr_vecs, .vec = vec, .k_unroll = 1, .parallel = 1, .panel_outer = 1,
                          .pack_b = 1, .row_groups = groups};
  int rc = red ? lower_sched_matmul(s, red, epi, &cfg) : -1;
  int packed = 0;
  for (int i = 0; i < s->n_stages; i++) packed += s->stages[i]->attach == SCH_AT && s->stages[i]->at_stage == epi &&
                                                  s->stages[i] != red;
  tir_builder b;
  tir_builder_init(&b, a);
  tir_func *f = rc == 0 ? sch_lower(s, &b, "k") : NULL;
  if (!CHECKF(f && packed == 1, "%s: not scheduled with a packed B (%s)", what, err.msg)) {
    gir_arena_free(a);
    return;
  }
  f->body = tir_vectorize(&b, f->body, 0);
  void *bufs[8] = {d[0], d[1], got};
  for (int i = 3; i < f->n_params && i < 8; i++)
    bufs[i] = gir_arena_alloc(a, (size_t)(f->params[i]->size * (int64_t)gir_dtype_size(f->params[i]->dtype) + 64));
  gir_err ie = {{0}};
  memset(got, 0x5a, (size_t)no * 4);
  rc = tir_eval_func(f, bufs, a, 0, &ie);
  int bad = 0;
  for (int64_t q = 0; rc == 0 && q < no; q++) bad += got[q] != ref[q];
  CHECKF(rc == 0 && bad == 0, "%s: the interpreter failed (%s) or %d elements differ", what, ie.msg, bad);
  const tir_func *fns[1] = {f};
  tgt_llvm_module *mod = tgt_llvm_compile(fns, 1, NULL, &err);
  tgt_llvm_jit *j = mod ? tgt_llvm_jit_new(mod, &err) : NULL;
  kiln_kernel_fn fn = j ? tgt_llvm_jit_lookup(j, "k", &err) : NULL;
  if (CHECKF(fn != NULL, "%s: codegen failed: %s", what, err.msg)) {
    kiln_ctx ctx = {.parallel_for = pfor3};
    memset(got, 0x5a, (size_t)no * 4);
    fn(bufs, &ctx);
    bad = 0;
    for (int64_t q = 0; q < no; q++) bad += got[q] != ref[q];
    CHECKF(bad == 0, "%s: %d of %lld elements differ", what, bad, (long long)no);
  }
  tgt_llvm_jit_free(j);
  tgt_llvm_module_free(mod);
  gir_arena_free(a);
}

/* Lowers s, checks the loop IR holds (or not) warp shuffles, runs it in the GPU
 * emulation with A (n_a int32s) and compares out with ref; 0 when it ran. */
static int run_gpu(sch_schedule *s, gir_arena *a, const int32_t *A, int32_t *got, const int32_t *ref, int64_t no,
                   const char *what) {
  tir_builder b;
  tir_builder_init(&b, a);
  tir_func *f = sch_lower(s, &b, "k");
  if (!CHECKF(f != NULL, "%s: lowering failed: %s", what, s->err->msg)) return -1;
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  tir_print_func(f, m);
  fclose(m);
  CHECKF(strstr(text, "shfl_xor(") != NULL, "%s: no warp shuffle in\n%s", what, text);
  free(text);
  void *bufs[8] = {(void *)A, got};
  for (int i = 2; i < f->n_params && i < 8; i++)
    bufs[i] = gir_arena_alloc(a, (size_t)(f->params[i]->size * (int64_t)gir_dtype_size(f->params[i]->dtype) + 64));
  gir_err ie = {{0}};
  memset(got, 0x5a, (size_t)no * 4);
  int rc = tir_eval_func(f, bufs, a, 0, &ie);
  int bad = 0;
  for (int64_t q = 0; rc == 0 && q < no; q++) bad += got[q] != ref[q];
  CHECKF(rc == 0 && bad == 0, "%s: the emulation failed (%s) or %d elements differ", what, ie.msg, bad);
  return rc;
}

/* C[i] = sum_k A[i, k] over rows of K, by hand (threads threads a row, rows along
 * threadIdx.y) and E[i, j] = A[i, j] - max_k A[i, k] through the GPU template. */
static void cross_thread(int64_t R, int64_t K, int threads, int rows) {
  gir_arena *a = gir_arena_new();
  gir_err err = {{0}};
  te_ctx c;
  te_ctx_init(&c, a, &err);
  int64_t sa[2] = {R, K}, so[1] = {R};
  te_tensor *A = te_placeholder(&c, "A", GIR_I32, 2, sa);
  te_var *ax[1], *k = te_var_new(&c, "k", K);
  te_axes(&c, 1, so, ax);
  te_expr *ia[2] = {te_v(&c, ax[0]), te_v(&c, k)};
  te_tensor *C = te_compute(&c, "C", GIR_I32, 1, so, ax, te_reduce(&c, TE_SUM, &k, 1, te_load(&c, A, ia), NULL));
  int32_t *d = gir_arena_alloc(a, (size_t)(R * K * 4 + 64)), *ref = gir_arena_alloc(a, (size_t)(R * K * 4 + 64)),
          *got = gir_arena_alloc(a, (size_t)(R * K * 4 + 64));
  unsigned seed = (unsigned)(R * 131 + K);
  for (int64_t q = 0; q < R * K; q++) d[q] = (int32_t)(rand_r(&seed) % 2001) - 1000;
  te_binding bind = {A, d};
  char what[96];
  snprintf(what, sizeof what, "cross-thread sum %lldx%lld over %d threads, %d rows a block", (long long)R, (long long)K,
           threads, rows);
  CHECKF(te_eval(&c, C, &bind, 1, ref, a, 0, &err) == 0, "%s: reference: %s", what, err.msg);
  sch_schedule *s = sch_create(&c, &A, 1, &C, 1, &err);
  sch_stage *st = sch_stage_of(s, C);
  sch_iter *bo = st->root_axes[0], *bi = NULL, *ro, *ri;
  int rc = 0;
  if (rows > 1) rc |= sch_split(s, st, st->root_axes[0], rows, &bo, &bi) | sch_bind(s, st, bi, "threadIdx.y");
  rc |= sch_bind(s, st, bo, "blockIdx.x") | sch_split(s, st, st->reduce_axes[0], threads, &ro, &ri);
  rc |= sch_bind(s, st, ri, "threadIdx.x");
  sch_iter *order[2] = {ri, ro};
  rc |= sch_reorder(s, st, order, 2);
  if (CHECKF(rc == 0, "%s: scheduling: %s", what, err.msg)) run_gpu(s, a, d, got, ref, R, what);
  /* E = A - rowmax(A): the template, the max computed at E's row loop */
  te_var *mx[2], *ex[2], *k2 = te_var_new(&c, "k2", K);
  int64_t sm[2] = {R, 1};
  te_axes(&c, 2, sm, mx);
  te_expr *im[2] = {te_v(&c, mx[0]), te_v(&c, k2)};
  te_tensor *M = te_compute(&c, "M", GIR_I32, 2, sm, mx, te_reduce(&c, TE_RMAX, &k2, 1, te_load(&c, A, im), NULL));
  te_axes(&c, 2, sa, ex);
  te_expr *ie[2] = {te_v(&c, ex[0]), te_v(&c, ex[1])}, *iz[2] = {te_v(&c, ex[0]), te_int(&c, 0)};
  te_tensor *E = te_compute(&c, "E", GIR_I32, 2, sa, ex, te_sub(&c, te_load(&c, A, ie), te_load(&c, M, iz)));
  snprintf(what, sizeof what, "row max %lldx%lld through the GPU template", (long long)R, (long long)K);
  CHECKF(te_eval(&c, E, &bind, 1, ref, a, 0, &err) == 0, "%s: reference: %s", what, err.msg);
  s = sch_create(&c, &A, 1, &E, 1, &err);
  lower_target t = lower_target_default();
  t.gpu = 1;
  t.gpu_sms = 132;
  CHECKF(lower_gpu_reduce_fits(sch_stage_of(s, M), &t), "%s: the template's rule refuses it", what);
  if (CHECKF(lower_sched_gpu(s, &t) == 0, "%s: %s", what, err.msg)) {
    CHECKF(sch_stage_of(s, M)->attach == SCH_AT, "%s: the max is not computed at the consumer's row loop", what);
    run_gpu(s, a, d, got, ref, R * K, what);
  }
  gir_arena_free(a);
}

/* What the cross-thread lowering and sch_bind refuse, each with its reason. */
static void cross_thread_refusals(void) {
  gir_arena *a = gir_arena_new();
  gir_err err = {{0}};
  te_ctx c;
  te_ctx_init(&c, a, &err);
  int64_t sa[2] = {4, 96}, so[1] = {4};
  te_tensor *A = te_placeholder(&c, "A", GIR_I32, 2, sa);
  te_var *ax[1], *k = te_var_new(&c, "k", 96);
  te_axes(&c, 1, so, ax);
  te_expr *ia[2] = {te_v(&c, ax[0]), te_v(&c, k)};
  te_tensor *C = te_compute(&c, "C", GIR_I32, 1, so, ax, te_reduce(&c, TE_SUM, &k, 1, te_load(&c, A, ia), NULL));
  static const char *const why[3] = {"only threadIdx.x may split a reduction", "must be the outermost reduce loop",
                                     "over 48 threads (a multiple of 32"};
  for (int v = 0; v < 3; v++) {
    memset(&err, 0, sizeof err);
    sch_schedule *s = sch_create(&c, &A, 1, &C, 1, &err);
    sch_stage *st = sch_stage_of(s, C);
    sch_iter *ro, *ri;
    int rc = sch_bind(s, st, st->root_axes[0], "blockIdx.x");
    rc |= sch_split(s, st, st->reduce_axes[0], v == 2 ? 48 : 32, &ro, &ri);
    if (v == 0) rc |= sch_bind(s, st, ri, "blockIdx.y"); /* refused here */
    else rc |= sch_bind(s, st, ri, "threadIdx.x");
    tir_builder b;
    tir_builder_init(&b, a);
    if (rc == 0) { /* v == 1: ro (serial) stays outside the thread loop; v == 2: 48 threads */
      if (v == 2) {
        sch_iter *order[2] = {ri, ro};
        sch_reorder(s, st, order, 2);
      }
      rc = sch_lower(s, &b, "k") ? 0 : -1;
    }
    CHECK(rc != 0);
    CHECK_CONTAINS(err.msg, why[v]);
  }
  gir_arena_free(a);
}

int main(void) {
  prefetch_refusals();
  matmul_pack_b(3, 11, 7, 21, 4, 2, 4, 1);  /* ragged panel (21 = 2 x 8 + 5), ragged rows */
  matmul_pack_b(3, 11, 7, 21, 4, 2, 4, 2);  /* two row groups */
  matmul_pack_b(2, 9, 5, 16, 3, 1, 4, 3);   /* whole panels, three groups */
  matmul_pack_b(1, 13, 9, 37, 8, 2, 16, 2); /* one panel, partly filled */
  run_trials(prog_chain, 40, 1, 0);
  run_trials(prog_matmul, 40, 2, 0);
  run_trials(prog_matmul, 30, 3, 1);
  run_trials(prog_conv, 40, 4, 0);
  run_trials(prog_norm, 40, 5, 0);
  cross_thread(5, 100, 64, 1);  /* two warps, through shared memory; a ragged last step */
  cross_thread(13, 40, 32, 4);  /* a warp a row, 4 rows a block: the last block partly past the rows */
  cross_thread(3, 1000, 256, 1);
  cross_thread_refusals();
  printf("%d random schedules were refused as illegal (with a reason)\n", refused);
  return check_finish("test_schedule");
}
