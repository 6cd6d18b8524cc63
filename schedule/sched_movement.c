/* sched_movement.c — the loop order of a transpose (or a relayout out of NCHW[b]c,
 * or a squeeze computed after one) that the default schedule has vectorized along
 * the output's innermost axis; and of a relayout into channel blocks that pad
 * (padded_relayout_in, below).
 *
 * A vector of the output's innermost axis reads the input with a stride when that
 * axis is not the input's innermost (NHWC -> NCHW reads 16 pixels 64 channels
 * apart). Each lane then touches its own cache line of the input, and the default
 * order — the other output axes outside in order — runs the output axis that does
 * walk the input's innermost (the channels) outermost: the 15 neighbours of every
 * line are read only after the whole image has gone through the cache, so each
 * line is fetched from memory once per element. Moving that axis just outside the
 * vector loop makes it a tile: for one vector of output columns, the loop over the
 * input's innermost axis reads the same few lines again and again (16 lines, each
 * reused for 16 consecutive values), and every store is still a whole output
 * vector — both sides contiguous at cache-line granularity. (When the input's
 * innermost axis is shorter than a vector, the lanes share a few lines and the
 * default order already streams them: left alone.) The leading loops are
 * then fused into the parallel loop here, keeping the ragged outer part of the
 * vector loop (if any) out of it, as the default schedule does. */
#include "templates.h"

#define PARALLEL_MIN_ELEMENTS 16384 /* as default_schedule.c */

/* 1 if the kernel of s computes (inlines) a stage of node n. */
static int computes(const sch_schedule *s, const gir_node *n) {
  for (int i = 0; i < s->n_stages; i++)
    if (s->stages[i]->t->origin == (const void *)n) return 1;
  return 0;
}

/* 1 if the stage only copies: its value a load, or (a relayout that pads) a load or a
 * constant. Only such a tile loop becomes a register transpose; one that computes
 * (a relayout fused after element-wise work) keeps its loops unsplit. */
static int copies(const sch_stage *st) {
  const te_expr *e = st->body;
  if (e && e->kind == TE_SELECT && (e->u.sel.b->kind == TE_FLOAT || e->u.sel.b->kind == TE_INT)) e = e->u.sel.a;
  return e && e->kind == TE_LOAD;
}

/* The output axis that walks the input's innermost axis, or -1: for a transpose
 * the one perm maps there; for a relayout out of NCHW[b]c into plain NCHW (or
 * NCHW1c) the channel axis, whose c % b is the input's innermost — also through a
 * reshape after it, in this kernel, that keeps N and C in front (a 1-D value's
 * squeeze of H = 1). */
static int inner_reader(const sch_schedule *s, const sch_stage *st, const gir_node *n, int r) {
  const gir_node *p = n->op == GIR_OP_reshape ? n->in[0]->producer : NULL;
  if (p && p->op == GIR_OP_relayout && n->in[0]->shape.rank >= 2 && r >= 2 &&
      n->in[0]->shape.dims[0] == n->out[0]->shape.dims[0] && n->in[0]->shape.dims[1] == n->out[0]->shape.dims[1] &&
      computes(s, p))
    n = p;
  if (n->op == GIR_OP_relayout) {
    int64_t src = gir_attr_int(n, "src", 0), dst = gir_attr_int(n, "dst", 0);
    if (src > 1 && dst <= 1) return 1;
    /* into blocks ([N, C/b, H, W, b] from NCHW): W walks the input's rows. Where the
     * last block pads ("channels"), loop partition gives it a copy of its own (the
     * channel test stays there) and the whole blocks tile as the rest — where the
     * stage only copies (what the tiles are for) */
    int64_t C = gir_attr_int(n, "channels", 0);
    return src <= 1 && dst > 1 && r == 5 && (!C || copies(st)) ? 3 : -1;
  }
  int32_t np;
  const int64_t *perm = gir_attr_ints(n, "perm", &np);
  if (!perm || np != r) return -1;
  for (int i = 0; i < r; i++)
    if (perm[i] == r - 1) return i;
  return -1;
}

/* The parallel loop of a stage that computes enough elements: its first loop fused
 * with the next ones, at most lead of them, until it has 4 iterations per thread. */
static int parallel_lead(sch_schedule *s, sch_stage *st, int lead, const lower_target *t) {
  int64_t numel = 1;
  for (int d = 0; d < st->n_root; d++) numel *= st->root_axes[d]->extent;
  if (numel < PARALLEL_MIN_ELEMENTS || lead < 1) return 0;
  sch_iter *outer = st->leaf[0];
  for (int fused = 1; fused < lead && outer->extent < 4 * t->threads; fused++)
    if (sch_fuse(s, st, outer, st->leaf[1], &outer) < 0) return -1;
  return outer->extent > 1 ? sch_annotate(s, st, outer, TIR_PARALLEL) : 0;
}

/* A relayout from plain NCHW into blocks that pad the channels (116 into blocks of
 * 32: the last block holds 20 real channels, 12 zeros). The default order fuses the
 * blocks with the rows into the parallel loop, which hides the block index from loop
 * partition: the padding test `cb*b + c < C` then stays in every block, and its
 * vector loop is cut at C % b for all of them (the lanes past it scalar, with a
 * select) — when there are too few blocks to run in parallel alone (ShuffleNetV2's
 * 58 channels in 4 blocks of 16). Here N, H and W run outside the blocks, the leading ones in parallel
 * (N and H, and W too for a 1-D value's single row), so partition splits off the
 * last block: every full block copies without a test. For one pixel the blocks
 * read one line of each channel's row, which the next pixel reads again. */
static int padded_relayout_in(sch_schedule *s, sch_stage *st, const lower_target *t) {
  const gir_node *n = st->t->origin;
  if (!n || n->op != GIR_OP_relayout || st->attach != SCH_ROOT || st->n_rels != 1) return 0;
  int64_t dst = gir_attr_int(n, "dst", 0), C = gir_attr_int(n, "channels", 0);
  if (gir_attr_int(n, "src", 0) != 0 || dst < 2 || !C || C % dst == 0 || st->n_root != 5 || st->n_leaf != 6)
    return 0;
  /* enough blocks (times N) for the parallel loop alone: the default order keeps the
   * block loop unfused, and partition splits it there already */
  if (st->root_axes[0]->extent * st->root_axes[1]->extent >= 4 * t->threads) return 0;
  sch_iter *order[6] = {st->leaf[0], st->leaf[2], st->leaf[3], st->leaf[1], st->leaf[4], st->leaf[5]};
  if (sch_reorder(s, st, order, 6) < 0) return -1;
  return parallel_lead(s, st, 3, t) < 0 ? -1 : 1; /* N, H, then W (a 1-D value) */
}

int lower_sched_transpose(sch_schedule *s, sch_stage *st, const lower_target *t) {
  const gir_node *n = st->t->origin;
  int r = st->n_root;
  int done = padded_relayout_in(s, st, t);
  if (done) return done;
  if (!n || (n->op != GIR_OP_transpose && n->op != GIR_OP_relayout && n->op != GIR_OP_reshape) || r < 2 ||
      st->attach != SCH_ROOT || st->n_rels != 1)
    return 0;
  if (st->n_leaf != r + 1 || st->leaf[r]->kind != TIR_VECTORIZED) return 0; /* the vector split of the last axis */
  int a = inner_reader(s, st, n, r);
  /* a gather whose lanes are less than a line apart (3 channels: RGB) already reads
   * each line once, in order */
  if (a < 0 || a == r - 1 || st->root_axes[a]->extent < t->vec_f32) return 0;
  sch_iter *order[GIR_MAX_RANK + 1], *moved = st->root_axes[a];
  int k = 0, found = 0;
  for (int i = 0; i < st->n_leaf - 1; i++)
    found |= st->leaf[i] == moved;
  if (!found) return 0; /* the vector runs along it already (a relayout of a 1x1 map) */
  for (int i = 0; i < st->n_leaf - 1; i++)
    if (st->leaf[i] != moved) order[k++] = st->leaf[i];
  order[k++] = moved;
  order[k++] = st->leaf[st->n_leaf - 1];
  if (sch_reorder(s, st, order, k) < 0) return -1;
  /* that axis in tiles of one vector's lanes: the tile loop (one output vector per
   * iteration, whose lanes read `lanes` input rows at the same offset) is a tile x lanes
   * transpose, which the LLVM backend emits as row loads and shuffles
   * (llvm_transpose.c) instead of a gather per vector */
  int64_t lanes = st->leaf[st->n_leaf - 1]->extent, tile = 0;
  /* a tile of the lanes, or of fewer that divide the axis (28 or 14 columns in 7s);
   * else of the lanes with a ragged last tile (116 channels: 14 tiles of 8 and one of
   * 4), which loop partition cuts off — the tile loop stays outside the parallel one */
  for (int64_t d = lanes; d > lanes / 2 && !tile; d--)
    if (moved->extent % d == 0 && moved->extent > d) tile = d;
  if (!tile && moved->extent > lanes && copies(st)) tile = lanes;
  if (tile > 1) { /* (lanes > 1: a single lane gives a tile of 1) */
    sch_iter *mo, *mi;
    if (sch_split(s, st, moved, tile, &mo, &mi) < 0) return -1;
    return parallel_lead(s, st, st->n_leaf - 4, t) < 0 ? -1 : 1;
  }
  /* the parallel loop: the leading loops, up to (not into) the vector loop's outer part */
  return parallel_lead(s, st, st->n_leaf - 3, t) < 0 ? -1 : 1;
}
