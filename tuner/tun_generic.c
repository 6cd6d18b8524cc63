/* tun_generic.c — search spaces generated from the compute definition itself
 * (FlexTensor, ASPLOS'20), for every group no template covers: so that any op —
 * a 1-D convolution, a pooling, a softmax, a transpose, an int8 matmul — can be
 * tuned, not only the conv and matmul templates.
 *
 * The space is read off the group's stages as lowering creates them. Injective
 * intermediates are inlined (as the default schedule does); the main stage O is
 * the output with the most elements; the reduction R is O itself or the one
 * reduction O reads. The knobs:
 *   tile_0..2  a two-level split of O's three innermost axes (inner factor; 1: no split)
 *   order      0: outer loops of the split axes, then their inner loops (a tile);
 *              1: each axis' outer and inner loops together (no tile)
 *   par        how many leading loops are fused into one parallel loop (0–3)
 *   vec        vectorize the innermost inner loop
 *   unroll     unroll the second innermost inner loop
 * and when there is a reduction:
 *   red_at     where R is computed: 0 at the root (its own buffer), 1 at O's last
 *              outer loop (a tile of accumulators: cache_write when R is O), 2 at
 *              O's innermost loop (one accumulator); the other reductions O reads
 *              (a softmax's max and sum) go to the same loop
 *   rtile      a two-level split of R's largest reduce axis (inner factor)
 *   rorder     0: R's reduce loops outside its spatial loops (the accumulators of a
 *              tile stay in registers while the reduction runs, as a micro-kernel);
 *              1: spatial loops outside, the reduction innermost
 * Register tiles that need more vector registers than the target has, vectorizing
 * a loop of one lane, unrolling nothing and knob values that change nothing are
 * rejected by tun_space_check; a point the schedule primitives refuse is an
 * invalid point of the search (tun_search.c). Every point computes what the
 * definition says: the primitives preserve meaning whatever the knobs. */
#include <string.h>
#include "tun_internal.h"

#define MAX_TILES 3

struct tun_generic {
  int32_t out_id;     /* O's stage index after sch_create */
  int32_t red_id;     /* R's, or -1; == out_id when O is the reduction (cache_write) */
  int32_t rank;       /* O's */
  int64_t ext[GIR_MAX_RANK];
  int32_t n_tiles;    /* split axes: the innermost min(rank, 3) */
  int32_t red_axis;   /* R's reduce axis to split */
  int64_t red_ext;
  int32_t f32;        /* O is float32 (vectorizable) */
  /* knob positions */
  int32_t k_tile[MAX_TILES], k_order, k_par, k_vec, k_unroll, k_red_at, k_rtile, k_rorder;
};

static int keep_stage(const sch_stage *st) {
  return st->t->tag && (!strcmp(st->t->tag, "conv_pad") || !strcmp(st->t->tag, "row_keep"));
}

/* The inlining the default schedule does first. */
static int inline_injective(sch_schedule *s) {
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (!st->is_output && st->n_reduce == 0 && !keep_stage(st) && sch_compute_inline(s, st) < 0) return -1;
  }
  return 0;
}

/* O and R of an inlined schedule. */
static void main_stages(sch_schedule *s, int32_t *out_id, int32_t *red_id) {
  int64_t best = -1;
  *out_id = *red_id = -1;
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (!st->is_output || st->attach == SCH_INLINE) continue;
    int64_t n = 1;
    for (int d = 0; d < st->n_root; d++) n *= st->root_axes[d]->extent;
    if (n > best) best = n, *out_id = i;
  }
  if (*out_id < 0) return;
  sch_stage *o = s->stages[*out_id];
  if (o->n_reduce) {
    *red_id = *out_id;
    return;
  }
  int64_t bw = 0;
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (i == *out_id || st->attach != SCH_ROOT || !st->n_reduce || !sch_reads(o, st)) continue;
    int64_t w = 1;
    for (int d = 0; d < st->n_reduce; d++) w *= st->reduce_axes[d]->extent;
    if (w > bw) bw = w, *red_id = i;
  }
}

typedef struct capture {
  tun_generic *gen;
  int ok;
} capture;

/* The lowering hook that reads the stages and stops the lowering (its kernel is
 * not wanted). */
static int capture_schedule(void *self, sch_schedule *s, const lower_target *t) {
  capture *c = self;
  (void)t;
  if (inline_injective(s) < 0) return -1;
  tun_generic *g = c->gen;
  main_stages(s, &g->out_id, &g->red_id);
  if (g->out_id < 0) return gir_errf(s->err, "no output stage");
  sch_stage *o = s->stages[g->out_id];
  g->rank = o->n_root;
  for (int d = 0; d < o->n_root; d++) g->ext[d] = o->root_axes[d]->extent;
  g->f32 = o->t->dtype == GIR_F32;
  g->red_axis = -1;
  if (g->red_id >= 0) {
    sch_stage *r = s->stages[g->red_id];
    for (int d = 0; d < r->n_reduce; d++)
      if (g->red_axis < 0 || r->reduce_axes[d]->extent > g->red_ext) g->red_axis = d, g->red_ext = r->reduce_axes[d]->extent;
  }
  c->ok = 1;
  return gir_errf(s->err, "captured");
}

static void knob(tun_space *s, const char *name, int32_t *pos) {
  *pos = s->n_knobs;
  tun_knob_space *k = &s->knobs[s->n_knobs++];
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
}

static void cand(tun_space *s, int32_t v) {
  tun_knob_space *k = &s->knobs[s->n_knobs - 1];
  for (int i = 0; i < k->n; i++)
    if (k->cand[i] == v) return;
  if (k->n < TUN_MAX_CANDS) k->cand[k->n++] = v;
}

/* Split factors worth trying for an extent: 1 (no split), the divisors up to 64
 * and the powers of two below the extent (a tail loop), at most 12. */
static void factors(tun_space *s, int64_t ext) {
  cand(s, 1);
  for (int64_t f = 2; f <= 64 && f < ext && s->knobs[s->n_knobs - 1].n < 12; f++)
    if (ext % f == 0 || (f & (f - 1)) == 0) cand(s, (int32_t)f);
}

int tun_space_generic(tun_space *sp, const tun_group *grp, const tun_target *t, gir_arena *a, gir_err *err) {
  memset(sp, 0, sizeof *sp);
  tun_generic *g = gir_arena_calloc(a, 1, sizeof *g);
  if (!g) return gir_errf(err, "out of memory");
  capture c = {g, 0};
  lower_tuning hook = {.self = &c, .schedule = capture_schedule};
  lower_target lt = t->lower;
  lt.tuning = &hook;
  gir_arena *tmp = gir_arena_new();
  if (!tmp) return gir_errf(err, "out of memory");
  tir_builder b;
  tir_builder_init(&b, tmp);
  te_ctx tc;
  gir_err lerr = {{0}};
  te_ctx_init(&tc, tmp, &lerr);
  lower_kernel k;
  lower_nodes(&b, &tc, grp->nodes, grp->n_nodes, grp->outs, grp->n_outs, "capture", &lt, &k, &lerr);
  gir_arena_free(tmp);
  if (!c.ok) return gir_errf(err, "no generated space: %s", lerr.msg);
  snprintf(sp->tmpl, sizeof sp->tmpl, "generic");
  sp->vec_regs = t->lower.vec_regs;
  sp->threads = t->lower.threads;
  sp->gen = g;
  g->n_tiles = g->rank < MAX_TILES ? g->rank : MAX_TILES;
  for (int j = 0; j < MAX_TILES; j++) g->k_tile[j] = -1;
  g->k_red_at = g->k_rtile = g->k_rorder = -1;
  for (int j = 0; j < g->n_tiles; j++) {
    char name[16];
    snprintf(name, sizeof name, "tile_%d", j);
    knob(sp, name, &g->k_tile[j]);
    factors(sp, g->ext[g->rank - g->n_tiles + j]);
  }
  knob(sp, "order", &g->k_order);
  cand(sp, 0);
  if (g->n_tiles > 1) cand(sp, 1);
  knob(sp, "par", &g->k_par);
  for (int p = 0; p <= 3; p++) cand(sp, p);
  knob(sp, "vec", &g->k_vec);
  cand(sp, 0);
  if (g->f32 && t->lower.vec_f32 > 1 && g->n_tiles > 0) cand(sp, 1);
  knob(sp, "unroll", &g->k_unroll);
  cand(sp, 0);
  if (g->n_tiles > 1) cand(sp, 1);
  if (g->red_id >= 0) {
    knob(sp, "red_at", &g->k_red_at);
    for (int p = 0; p <= 2; p++) cand(sp, p);
    knob(sp, "rtile", &g->k_rtile);
    factors(sp, g->red_ext);
    knob(sp, "rorder", &g->k_rorder);
    cand(sp, 0);
    cand(sp, 1);
  }
  sp->size = 1;
  for (int i = 0; i < sp->n_knobs; i++) sp->size *= sp->knobs[i].n;
  if (sp->size < 2) return gir_errf(err, "no generated space: nothing to choose");
  return 0;
}

static int32_t kv(const int32_t *v, int32_t k, int32_t def) { return k >= 0 ? v[k] : def; }

/* O's loops at point v, outermost first, as the apply makes them: 1 for an inner
 * loop of a split (or an axis kept whole inside the tile), 0 for the others; the
 * count is returned. */
static int32_t loop_kinds(const tun_generic *g, const int32_t *v, uint8_t *inner, int64_t *ext) {
  int32_t n = 0, lead = g->rank - g->n_tiles;
  for (int d = 0; d < lead; d++) ext[n] = g->ext[d], inner[n++] = 0;
  for (int pass = 0; pass < (v[g->k_order] == 0 ? 2 : 1); pass++)
    for (int j = 0; j < g->n_tiles; j++) {
      int64_t f = v[g->k_tile[j]], e = g->ext[lead + j];
      int has_outer = f <= 1 || f < e, has_inner = f > 1;
      if (v[g->k_order] == 0 ? pass == 0 && has_outer : has_outer) ext[n] = f > 1 ? (e + f - 1) / f : e, inner[n++] = 0;
      if (v[g->k_order] == 0 ? pass == 1 && has_inner : has_inner) ext[n] = f < e ? f : e, inner[n++] = 1;
    }
  return n;
}

/* Loops before the first inner one (what par may fuse and where a tile's
 * reduction goes), and the extent of the first `par` of them fused. */
static int32_t outer_loops(const tun_generic *g, const int32_t *v, int64_t *par_extent) {
  uint8_t inner[GIR_MAX_RANK * 2];
  int64_t ext[GIR_MAX_RANK * 2];
  int32_t n = loop_kinds(g, v, inner, ext), k = 0;
  *par_extent = 1;
  while (k < n && !inner[k]) {
    if (k < v[g->k_par]) *par_extent *= ext[k];
    k++;
  }
  return k;
}

int tun_generic_check(const tun_space *s, const int32_t *v, char *why, size_t n) {
  const tun_generic *g = s->gen;
#define REJECT(...) return (snprintf(why, n, __VA_ARGS__), -1)
  int32_t split = 0, last = g->n_tiles ? v[g->k_tile[g->n_tiles - 1]] : 1;
  int64_t tile = 1;
  for (int j = 0; j < g->n_tiles; j++) {
    int32_t f = v[g->k_tile[j]];
    if (f > 1) split++, tile *= f;
  }
  if (v[g->k_order] == 1 && split < 2) REJECT("order 1 is order 0 with fewer than two split axes");
  /* the deployed kernel runs on every thread: as parallel as the default schedule */
  int64_t pext, numel = 1;
  int32_t outer = outer_loops(g, v, &pext);
  for (int d = 0; d < g->rank; d++) numel *= g->ext[d];
  if (v[g->k_par] > outer) REJECT("par fuses more loops than lie outside the tile");
  if (numel >= 16384 && v[g->k_par] == 0) REJECT("a kernel this large runs its outer loops in parallel");
  if (numel < 16384 && v[g->k_par] > 0) REJECT("a kernel this small is not worth a parallel loop");
  if (v[g->k_par] > 0 && pext < 2 * (int64_t)s->threads && v[g->k_par] < outer)
    REJECT("the parallel loop has %lld iterations: fuse more", (long long)pext);
  if (v[g->k_vec] && (last < 2 || last > 64)) REJECT("vec needs an inner loop of 2 to 64 lanes");
  if (v[g->k_unroll] && (g->n_tiles < 2 || split < 2 || last < 2)) REJECT("unroll needs a second inner loop");
  if (g->red_id >= 0) {
    int32_t at = v[g->k_red_at], ro = v[g->k_rorder];
    if (at == 1 && (split == 0 || outer == 0)) REJECT("red_at 1 needs a tile with a loop outside it");
    if (at == 2 && ro == 1) REJECT("rorder does nothing with one accumulator");
    if (at == 1 && ro == 0) { /* accumulators live across the reduction: they must fit */
      int32_t lanes = v[g->k_vec] ? last : 1;
      if (tile / lanes > s->vec_regs - 2) REJECT("a tile of %lld accumulators does not fit the registers", (long long)tile);
    }
    if (at == 0 && v[g->k_rtile] > 1 && ro == 1 && g->red_id == g->out_id) REJECT("nothing to reorder in place");
  }
  return 0;
#undef REJECT
}

static int is_one_of(const sch_iter *it, sch_iter *const *list, int32_t n) {
  for (int i = 0; i < n; i++)
    if (list[i] == it) return 1;
  return 0;
}

int tun_generic_apply(const tun_space *sp, const int32_t *v, sch_schedule *s, const lower_target *t) {
  const tun_generic *g = sp->gen;
  (void)t;
  if (inline_injective(s) < 0) return -1;
  if (g->out_id >= s->n_stages) return gir_errf(s->err, "generic: the group changed");
  sch_stage *o = s->stages[g->out_id];
  sch_stage *r = g->red_id >= 0 ? s->stages[g->red_id] : NULL;
  int32_t at = kv(v, g->k_red_at, 0);
  if (r == o) { /* the output reduces: the reduction into a local stage, o copies it out */
    if (at == 0) r = NULL; /* o reduces in place, one accumulator per element */
    else if (!(r = sch_cache_write(s, o, TIR_LOCAL))) return -1;
  }
  if (o->n_root != g->rank) return gir_errf(s->err, "generic: the group changed");
  /* O: split the innermost axes, order the loops */
  int32_t lead = g->rank - g->n_tiles;
  sch_iter *outer[MAX_TILES], *inner[MAX_TILES], *order[GIR_MAX_RANK * 2];
  int32_t n = 0;
  for (int j = 0; j < g->n_tiles; j++) {
    sch_iter *ax = o->root_axes[lead + j];
    int32_t f = v[g->k_tile[j]];
    inner[j] = NULL;
    outer[j] = ax;
    if (f > 1 && f < ax->extent && sch_split(s, o, ax, f, &outer[j], &inner[j]) < 0) return -1;
    if (f > 1 && f >= ax->extent) inner[j] = ax, outer[j] = NULL; /* the whole axis is the inner loop */
  }
  for (int d = 0; d < lead; d++) order[n++] = o->root_axes[d];
  if (v[g->k_order] == 0) {
    for (int j = 0; j < g->n_tiles; j++)
      if (outer[j]) order[n++] = outer[j];
    for (int j = 0; j < g->n_tiles; j++)
      if (inner[j]) order[n++] = inner[j];
  } else {
    for (int j = 0; j < g->n_tiles; j++) {
      if (outer[j]) order[n++] = outer[j];
      if (inner[j]) order[n++] = inner[j];
    }
  }
  if (sch_reorder(s, o, order, n) < 0) return -1;
  /* the innermost inner loop and the one before it (par fuses only loops outside them) */
  sch_iter *last_inner = NULL, *second = NULL;
  for (int j = 0; j < g->n_tiles; j++)
    if (inner[j]) second = last_inner, last_inner = inner[j];
  int32_t first_inner = 0; /* the loops before it are the tile's outer loops */
  while (first_inner < o->n_leaf && !o->leaf[first_inner]->reduce && !is_one_of(o->leaf[first_inner], inner, g->n_tiles))
    first_inner++;
  /* parallel: the leading loops fused */
  int32_t par = v[g->k_par];
  if (par > first_inner) par = first_inner;
  if (par > 0) {
    sch_iter *f = o->leaf[0];
    for (int i = 1; i < par; i++)
      if (sch_fuse(s, o, f, o->leaf[1], &f) < 0) return -1;
    if (f->extent > 1 && sch_annotate(s, o, f, TIR_PARALLEL) < 0) return -1;
    first_inner -= par - 1;
  }
  sch_iter *tile_loop = first_inner > 0 ? o->leaf[first_inner - 1] : NULL;
  if (v[g->k_vec] && last_inner && sch_annotate(s, o, last_inner, TIR_VECTORIZED) < 0) return -1;
  if (v[g->k_unroll] && second && sch_annotate(s, o, second, TIR_UNROLLED) < 0) return -1;
  if (!r) return 0;
  /* R: where, and its own loops */
  int32_t ns = 0; /* O's spatial loops come first, its own reduce loops (in place) after them */
  while (ns < o->n_leaf && !o->leaf[ns]->reduce) ns++;
  sch_iter *where = at == 1 ? tile_loop : at == 2 && ns > 0 ? o->leaf[ns - 1] : NULL;
  if (where) {
    /* R goes there, with every other reduction or kept stage O reads through it or
     * beside it (the statistics of a softmax or a layer-norm: a max, a sum, the
     * exps), consumers first: compute_at wants every other reader already inside */
    uint8_t mark[256] = {0};
    if (s->n_stages > 256) return gir_errf(s->err, "generic: too many stages");
    for (int i = s->n_stages - 1; i >= 0; i--) {
      sch_stage *st = s->stages[i];
      if (st == o || st->attach != SCH_ROOT || (!st->n_reduce && !keep_stage(st))) continue;
      int read = sch_reads(o, st);
      for (int j = i + 1; j < s->n_stages && !read; j++) read = mark[j] && sch_reads(s->stages[j], st);
      mark[i] = read || st == r;
    }
    for (int i = s->n_stages - 1; i >= 0; i--)
      if (mark[i] && sch_compute_at(s, s->stages[i], o, where) < 0) return -1;
  }
  int32_t rt = v[g->k_rtile];
  sch_iter *rax = g->red_axis >= 0 && g->red_axis < r->n_reduce ? r->reduce_axes[g->red_axis] : NULL, *ro, *ri;
  if (rax && rt > 1 && rt < rax->extent && sch_split(s, r, rax, rt, &ro, &ri) < 0) return -1;
  if (v[g->k_rorder] == 0) { /* reduce loops first, then R's spatial loops */
    sch_iter *ord[GIR_MAX_RANK * 3];
    int32_t m = 0;
    for (int i = 0; i < r->n_leaf; i++)
      if (r->leaf[i]->reduce) ord[m++] = r->leaf[i];
    for (int i = 0; i < r->n_leaf; i++)
      if (!r->leaf[i]->reduce) ord[m++] = r->leaf[i];
    if (sch_reorder(s, r, ord, m) < 0) return -1;
    sch_iter *rl = r->leaf[r->n_leaf - 1];
    if (at == 1 && !rl->reduce) { /* the register tile: lanes innermost, the rest unrolled */
      if (v[g->k_vec] && rl->extent >= 2 && rl->extent <= 64 && sch_annotate(s, r, rl, TIR_VECTORIZED) < 0) return -1;
      int64_t prod = 1;
      for (int i = r->n_leaf - 2; i >= 0 && !r->leaf[i]->reduce; i--) prod *= r->leaf[i]->extent;
      for (int i = r->n_leaf - 2; prod <= 64 && i >= 0 && !r->leaf[i]->reduce; i--)
        if (r->leaf[i]->extent > 1 && sch_annotate(s, r, r->leaf[i], TIR_UNROLLED) < 0) return -1;
    }
  }
  return 0;
}
