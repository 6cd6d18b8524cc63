/* sched_matmul.c — the matmul template (dense, matmul, batch matmul), after
 * BLIS/GotoBLAS's micro-kernel: the output is cut into mr × (nr_vecs·vec) tiles;
 * for each tile the reduction runs with k outermost and the tile's accumulators
 * innermost (fully unrolled rows, vector columns), so every step is one vector
 * load of B per column vector, one broadcast of A per row and mr·nr_vecs FMAs that
 * LLVM keeps in registers. The epilogue (bias, activation) then reads the tile from
 * registers and writes the output once. Tiles are independent: the batch and tile
 * loops are fused into one parallel loop, rows outside column panels, or panels
 * outside rows when B outweighs A (each panel then stays in cache for all rows).
 * B an activation (attention's Q·Kᵀ, a batched matmul of two inputs) gets no
 * panels at compile time: its panels are then packed at run time, one at a time
 * at the panel loop (pack_b). */
#include "templates.h"

/* The largest panel of B packed at run time (K x nr floats, on the stack). */
#define PACK_B_MAX_BYTES (256 * 1024)

/* B as the reduction reads it, when it can be packed at run time: a kernel input
 * loaded at [.., k, n] (k the reduction's variable, n the output's last axis) and
 * loaded nowhere else in the body (x·x would pack A's rows with it); NULL
 * otherwise (weights packed in panels at compile time, a transposed operand). */
typedef struct find_act_b {
  const te_var *k, *n;
  te_tensor *t;          /* the tensor of the pattern's load */
  int n_b;               /* loads of the pattern */
  te_tensor *other[8];   /* tensors loaded otherwise */
  int n_other;
} find_act_b;

static void walk_b(const te_expr *e, find_act_b *f) {
  switch (e->kind) {
  case TE_LOAD: {
    te_tensor *t = e->u.load.t;
    te_expr *const *idx = e->u.load.idx;
    int r = t->rank;
    if (t->kind == TE_PLACEHOLDER && r >= 2 && idx[r - 1]->kind == TE_VAR && idx[r - 1]->u.var == f->n &&
        idx[r - 2]->kind == TE_VAR && idx[r - 2]->u.var == f->k) {
      f->t = t;
      f->n_b++;
    } else {
      f->other[f->n_other < 8 ? f->n_other : 7] = t;
      f->n_other++;
    }
    for (int i = 0; i < r; i++) walk_b(idx[i], f);
    return;
  }
  case TE_UNARY: walk_b(e->u.un.a, f); return;
  case TE_BINARY: walk_b(e->u.bin.a, f), walk_b(e->u.bin.b, f); return;
  case TE_SELECT: walk_b(e->u.sel.c, f), walk_b(e->u.sel.a, f), walk_b(e->u.sel.b, f); return;
  case TE_CAST:
  case TE_BITCAST: walk_b(e->u.cast.a, f); return;
  case TE_REDUCE:
    walk_b(e->u.red.src, f);
    if (e->u.red.cond) walk_b(e->u.red.cond, f);
    return;
  default: return;
  }
}

static te_tensor *activation_b(const sch_stage *red) {
  int r = red->n_root;
  if (r < 2 || red->n_reduce != 1 || red->t->dtype != GIR_F32) return NULL;
  find_act_b f = {red->reduce_axes[0]->root, red->root_axes[r - 1]->root, NULL, 0, {NULL}, 0};
  walk_b(red->body, &f);
  if (f.n_b != 1 || f.n_other > 8) return NULL;
  for (int i = 0; i < f.n_other; i++)
    if (f.other[i] == f.t) return NULL;
  return f.t;
}

/* Rows of the register tile: the candidate (largest first) that covers n rows in
 * the fewest tiles, the largest among equals — a ragged last tile costs one
 * partial tile (the loop-partition pass gives it its own straight-line copy), where
 * shrinking the tile to a divisor of n (1 for a prime like ViT's 197 tokens) would
 * cost the whole matmul its register reuse. */
static int32_t pick_rows(int64_t n, const int32_t *cand, int nc) {
  int32_t best = cand[0];
  for (int i = 1; i < nc; i++)
    if ((n + cand[i] - 1) / cand[i] < (n + best - 1) / best) best = cand[i];
  return best;
}

lower_matmul_cfg lower_matmul_default(const sch_stage *red, const lower_target *t) {
  const te_tensor *o = red->t;
  int64_t M = o->shape[o->rank - 2], N = o->shape[o->rank - 1];
  lower_matmul_cfg c = {.mr = 1, .nr_vecs = 1, .vec = t->vec_f32, .k_unroll = 1, .parallel = 1};
  if (o->dtype != GIR_F32 && o->dtype != GIR_I32) c.vec = 1; /* float32, or int32 sums of 8-bit products */
  /* columns: the widest tile (up to 2 vectors, 4 for a single row) whose width
   * divides N, halving the vector if need be; else full vectors and a guarded tail */
  int32_t max_vecs = M == 1 ? 4 : 2, found = 0;
  for (int32_t v = c.vec; v >= 4 && !found; v /= 2)
    for (int32_t nv = max_vecs; nv >= 1 && !found; nv /= 2)
      if (N % ((int64_t)v * nv) == 0) {
        c.vec = v;
        c.nr_vecs = nv;
        found = 1;
      }
  if (!found) {
    while (c.vec > 1 && N < c.vec) c.vec /= 2;
    c.nr_vecs = c.vec > 1 && N >= 2 * c.vec ? 2 : 1;
  }
  if (c.vec == 1) c.nr_vecs = (int32_t)(N < 1 ? 1 : N < 8 ? N : 8); /* N = 0: an empty output, still a valid tile */
  /* weights packed in panels (pack_matmul.c): the tile is one panel wide */
  const gir_node *n = o->origin;
  int64_t panel = n && n->op == GIR_OP_matmul ? gir_attr_int(n, "packed", 0) : 0;
  if (panel && (o->dtype == GIR_F32 || o->dtype == GIR_I32)) {
    c.vec = t->vec_f32;
    while (c.vec > 1 && panel % c.vec) c.vec /= 2;
    c.nr_vecs = (int32_t)(panel / c.vec);
    /* one-vector panels (N a multiple of the vector but not of two: GPT's 5000-word
     * vocabulary on AVX2) under several rows: the tile spans two panels, two B loads per
     * broadcast as with two-vector panels, where a one-vector tile loads a broadcast per
     * FMA. Its last tile is one panel (the panel count is odd), which lower_sched_matmul
     * cuts off the parallel loop. 128 x 256 x 5000 on the AMD EPYC (Zen 3), kernel
     * medians of interleaved rounds: 3.26 -> 2.61 ms alone on two threads, 4.85 -> 3.94
     * on one, 3.13 -> 2.40 inside the GPT decoder on two. Float, unbatched weights */
    if (c.nr_vecs == 1 && c.vec > 1 && M > 1 && N >= 2 * panel && o->dtype == GIR_F32 &&
        !gir_attr_int(n, "pbatch", 0))
      c.nr_vecs = 2;
  }
  /* rows: as many as the registers allow (accumulators + B vectors + a broadcast) */
  int32_t max_rows = (t->vec_regs - c.nr_vecs - 2) / c.nr_vecs;
  if (max_rows > 8) max_rows = 8;
  static const int32_t rows[] = {8, 7, 6, 5, 4, 3, 2, 1};
  int32_t cand[8], nc = 0;
  for (int i = 0; i < 8; i++)
    if (rows[i] <= max_rows) cand[nc++] = rows[i];
  c.mr = M < 1 ? 1 : M < cand[0] ? (int32_t)M : pick_rows(M, cand, nc); /* M = 0: no rows, any tile */
  /* k in steps of 4: the loop overhead amortised over 4·mr·nr_vecs FMAs */
  int64_t K = red->reduce_axes[0]->extent;
  c.k_unroll = K % 4 == 0 ? 4 : K % 2 == 0 ? 2 : 1;
  /* panels outside rows when B (K × N) outweighs A (M × K): each panel of B is
   * then read once and stays in cache for every row tile, where rows outside
   * would stream all of B once per row tile */
  c.panel_outer = M > c.mr && N >= M;
  /* weights in panels, each reused by a few row tiles only: the next panel comes from
   * memory while this one computes (a batch of weight matrices larger than the caches) */
  int64_t wbytes = panel && n->n_in > 1 ? gir_value_nbytes(n->in[1]) : 0;
  c.prefetch = c.panel_outer && wbytes > ((int64_t)1 << 20);
  /* B an activation whose rows are not whole cache lines (N·4 bytes not a multiple
   * of 64), panels outside rows: pack each panel at run time. One thread, thread CPU
   * time, median of 3 x 300 runs: attn_scores_12x197x64 (rows of 197 floats) 0.386
   * -> 0.353 ms, its 6-head copy (the ViT's) 0.174 -> 0.169,
   * batch_matmul_7x127x251x509 (rows of 509) 1.66 -> 1.44 ms. With rows of whole
   * lines B already streams aligned (4 heads of 128 x 64 x 128, the BERT encoder's:
   * packing took it from 0.038 to 0.044 ms), so it is left out there */
  int64_t nr = (int64_t)c.nr_vecs * c.vec;
  c.row_groups = 1;
  c.pack_b = c.panel_outer && c.vec > 1 && (N * 4) % 64 != 0 && K * nr * 4 <= PACK_B_MAX_BYTES &&
             activation_b(red) != NULL;
  /* row groups: enough units for the threads' static partition to be even (the
   * smallest count that splits evenly, or gives 8 units per thread) */
  int64_t batch = 1, tiles = (M + c.mr - 1) / c.mr, th = t->threads > 1 ? t->threads : 1;
  for (int i = 0; i < red->n_root - 2; i++) batch *= red->root_axes[i]->extent;
  while (c.pack_b && c.row_groups < tiles && (batch * c.row_groups) % th && batch * c.row_groups < 8 * th)
    c.row_groups++;
  return c;
}

/* The packed weights: the placeholder of the node's second input's shape. */
typedef struct find_b {
  const gir_value *b;
  te_tensor *t;
} find_b;

static void match_b(te_tensor *t, void *arg) {
  find_b *f = arg;
  if (f->t || t->kind != TE_PLACEHOLDER || t->rank != f->b->shape.rank) return;
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] != f->b->shape.dims[i]) return;
  f->t = t;
}

/* cfg->prefetch: at each step of the k loop of a tile, the u-th share of the next
 * panel's K·nr floats (the panel after this one in the packed weights — the next
 * tile a thread takes with panels outside rows), u counting the k steps of this
 * panel's row tiles: u = row tile · K/ku + k/ku. */
static int sched_prefetch(sch_schedule *s, sch_stage *red, sch_iter *at, const lower_matmul_cfg *cfg) {
  const gir_node *n = red->t->origin;
  int64_t nr = n ? gir_attr_int(n, "packed", 0) : 0;
  if (!nr || n->n_in < 2) return 0;
  find_b f = {n->in[1], NULL};
  te_visit_loads(red->body, match_b, &f);
  if (!f.t) return 0;
  te_ctx *c = s->te;
  int r = red->n_root, pb = (int)gir_attr_int(n, "pbatch", 0);
  int64_t K = red->reduce_axes[0]->extent, M = red->root_axes[r - 2]->extent, ku = cfg->k_unroll > 0 ? cfg->k_unroll : 1;
  int64_t np = f.t->shape[pb], rows = (M + cfg->mr - 1) / cfg->mr;
#define V(x) te_v(c, (x)->root)
  /* the panel: batch index (b's own batch axes, the output's last pb before m, n) · np + n / nr */
  te_expr *panel = te_div(c, V(red->root_axes[r - 1]), te_int(c, nr));
  te_expr *bflat = te_int(c, 0);
  for (int i = 0; i < pb; i++) {
    te_expr *bi = f.t->shape[i] == 1 ? te_int(c, 0) : V(red->root_axes[r - 2 - pb + i]);
    bflat = te_add(c, te_mul(c, bflat, te_int(c, f.t->shape[i])), bi);
  }
  panel = te_add(c, te_mul(c, bflat, te_int(c, np)), panel);
  int64_t tp = (int64_t)cfg->nr_vecs * cfg->vec / nr; /* panels per tile: the next tile's start */
  if (tp < 1) tp = 1;
  te_expr *next = te_mul(c, te_add(c, panel, te_int(c, tp)), te_int(c, K * nr));
  te_expr *u = te_add(c, te_mul(c, te_div(c, V(red->root_axes[r - 2]), te_int(c, cfg->mr)), te_int(c, K / ku)),
                      te_div(c, V(red->reduce_axes[0]), te_int(c, ku)));
#undef V
  return lower_prefetch_ahead(s, red, at, f.t, next, u, rows * (K / ku), tp * K * nr);
}

int lower_sched_matmul(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_matmul_cfg *cfg) {
  int r = epi->n_root;
  if (r < 2 || red->n_reduce != 1) return gir_errf(s->err, "matmul template: %s is not a matmul", red->t->name);
  int64_t nr = (int64_t)cfg->nr_vecs * cfg->vec;
  sch_iter *mo, *mi, *no, *ni, *nio, *nii;
  if (sch_split(s, epi, epi->root_axes[r - 2], cfg->mr, &mo, &mi) < 0 ||
      sch_split(s, epi, epi->root_axes[r - 1], nr, &no, &ni) < 0)
    return -1;
  /* columns no tile width divides (197 keys of a ViT's attention): the row's column
   * tiles stay a loop of their own inside the parallel rows, so the loop-partition
   * pass gives the ragged last tile its own copy (a shorter vector) and the others no
   * bounds test; fused into the parallel loop every tile would test every lane */
  int ragged_n = epi->root_axes[r - 1]->extent % nr != 0;
  /* B packed at run time: batches x row groups in parallel, then the column panels
   * (B's panel packed at each), then the group's row tiles; the panel loop stays a
   * loop of its own, so a ragged last panel is partitioned as above */
  int64_t K = red->reduce_axes[0]->extent;
  te_tensor *bt = cfg->pack_b && cfg->panel_outer && cfg->vec > 1 && K * nr * 4 <= PACK_B_MAX_BYTES ? activation_b(red)
                                                                                                    : NULL;
  /* a tile of two one-vector panels (lower_matmul_default) whose last tile is one panel:
   * panels outside rows all the same, the parallel loop the full tiles alone (loop
   * partition cuts the last one off, run after them), so that each panel is read from
   * memory once and the next one prefetched, where rows outside stream all of B once per
   * row tile (GPT's vocabulary projection in the model: 2.55 -> 1.93 ms on two threads) */
  const gir_node *on = red->t->origin;
  int64_t packed = on && on->op == GIR_OP_matmul ? gir_attr_int(on, "packed", 0) : 0;
  int two_panels = ragged_n && packed && nr == 2 * packed && epi->root_axes[r - 1]->extent % packed == 0;
  int panel_outer = cfg->panel_outer && (!ragged_n || bt || two_panels);
  sch_iter *par, *tile;
  if (bt) {
    int64_t tiles = mo->extent, g = cfg->row_groups > 1 ? cfg->row_groups : 1, per = (tiles + g - 1) / g;
    sch_iter *mg, *mt;
    if (sch_split(s, epi, mo, per > 1 ? per : 1, &mg, &mt) < 0) return -1;
    sch_iter *order[5] = {mg, no, mt, mi, ni};
    if (sch_reorder(s, epi, order, 5) < 0 || !(par = lower_fuse_through(s, epi, mg))) return -1;
    if (cfg->parallel && par->extent > 1 && sch_annotate(s, epi, par, TIR_PARALLEL) < 0) return -1;
    tile = mt;
  } else {
    sch_iter *order[4] = {panel_outer ? no : mo, panel_outer ? mo : no, mi, ni};
    if (sch_reorder(s, epi, order, 4) < 0) return -1;
    par = lower_fuse_through(s, epi, ragged_n ? order[0] : order[1]);
    if (!par) return -1;
    if (cfg->parallel && par->extent > 1 && sch_annotate(s, epi, par, TIR_PARALLEL) < 0) return -1;
    tile = ragged_n ? order[1] : par;
  }
  /* the epilogue in vectors of one vector's lanes, or two where its math is long */
  if (sch_split(s, epi, ni, lower_math_lanes(epi, nr, cfg->vec), &nio, &nii) < 0) return -1;
  if (cfg->vec > 1 && sch_annotate(s, epi, nii, TIR_VECTORIZED) < 0) return -1;
  if (sch_compute_at(s, red, epi, tile) < 0) return -1;
  if (bt) { /* the panel: K x nr floats copied in vectors at the panel loop */
    sch_stage *rd[1] = {red};
    sch_stage *pk = sch_cache_read(s, bt, TIR_LOCAL, rd, 1);
    sch_iter *po, *pi;
    if (!pk || sch_compute_at(s, pk, epi, no) < 0 ||
        sch_split(s, pk, pk->leaf[pk->n_leaf - 1], cfg->vec, &po, &pi) < 0 ||
        sch_annotate(s, pk, pi, TIR_VECTORIZED) < 0)
      return -1;
  }
  /* the register tile: k outermost, rows and column vectors unrolled inside it */
  sch_iter *k = red->reduce_axes[0], *m = red->root_axes[r - 2], *n = red->root_axes[r - 1], *n_o, *n_i;
  if (sch_split(s, red, n, cfg->vec, &n_o, &n_i) < 0) return -1;
  /* 8-bit weights in quads of k (pack_matmul.c): each quad innermost, inside the rows
   * and column vectors, so that every accumulator gets its four multiply-adds in a row
   * — one 4-way dot product (tir/pass_dot4.c) */
  const gir_node *mn = red->t->origin;
  if (red->t->dtype == GIR_I32 && cfg->vec > 1 && mn && mn->op == GIR_OP_matmul && mn->n_in > 1 &&
      mn->in[1]->shape.rank == 4 && gir_attr_int(mn, "packed", 0) && !gir_attr_int(mn, "pbatch", 0)) {
    sch_iter *ko, *kq;
    if (sch_split(s, red, k, 4, &ko, &kq) < 0) return -1;
    sch_iter *qorder[5] = {ko, m, n_o, kq, n_i};
    if (sch_reorder(s, red, qorder, 5) < 0) return -1;
    if (sch_annotate(s, red, m, TIR_UNROLLED) < 0 || sch_annotate(s, red, n_o, TIR_UNROLLED) < 0 ||
        sch_annotate(s, red, kq, TIR_UNROLLED) < 0 || sch_annotate(s, red, n_i, TIR_VECTORIZED) < 0)
      return -1;
    return 0;
  }
  sch_iter *rorder[4] = {k, m, n_o, n_i};
  if (sch_reorder(s, red, rorder, 4) < 0) return -1;
  if (sch_annotate(s, red, m, TIR_UNROLLED) < 0 || sch_annotate(s, red, n_o, TIR_UNROLLED) < 0) return -1;
  if (cfg->vec > 1 && sch_annotate(s, red, n_i, TIR_VECTORIZED) < 0) return -1;
  sch_iter *kstep = k;
  if (cfg->k_unroll > 1) {
    sch_iter *ki;
    if (sch_split(s, red, k, cfg->k_unroll, &kstep, &ki) < 0) return -1;
    if (sch_annotate(s, red, ki, TIR_UNROLLED) < 0) return -1;
  }
  return cfg->prefetch && panel_outer && red->t->dtype == GIR_F32 ? sched_prefetch(s, red, kstep, cfg) : 0;
}
