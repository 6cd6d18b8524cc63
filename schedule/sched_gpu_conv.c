/* sched_gpu_conv.c — the GPU template for 2-D convolutions (NCHW, one group):
 * the matmul template's structure (sched_gpu_matmul.c) over a direct conv. A block
 * computes boc output channels × a boh × bow patch of output pixels (blockIdx.y over
 * channel tiles, .x over patches, .z over the batch); each thread a toc × tow tile
 * (channels × pixels along the row) in registers; the reduction over input channels
 * runs in steps of bic, each step's weights [boc, bic, kh, kw] and input window
 * [bic, rows, cols] (the patch's receptive field, its halo included) copied into
 * shared memory by the block's threads together, between barriers. The input
 * window is copied zero-padded (sch_cache_read_pad: zeros where the taps fall in
 * the conv's padding), so the reduction drops its tests of the taps and its inner
 * loops are straight-line FMAs on registers loaded once per step. Depthwise
 * convs (one input channel per output channel) take the same template: the
 * reduction over input channels has one step, and the block's window holds the
 * rows of its own channels. Grouped convs too, with a block's channels inside one
 * group (boc divides the channels per group): the block's group is then one
 * value, and its window holds only that group's input channels (bound inference
 * takes m / channels-per-group over such a tile as a point: sch_lower.c). */
#include <stdlib.h>
#include <string.h>
#include "templates.h"

/* The shared memory one step's tiles take, in bytes: the weights [boc, bic, KH, KW]
 * and the input window [bic, rows, cols] (strides and dilations from the conv node;
 * 1 when it is not known, which only underestimates when they are larger). */
static int64_t tile_bytes(const sch_stage *red, const lower_gpu_conv_cfg *c, int depthwise) {
  const gir_node *n = red->t->origin;
  int64_t st[2] = {1, 1}, dl[2] = {1, 1};
  int32_t cnt;
  const int64_t *v = n ? gir_attr_ints(n, "strides", &cnt) : NULL;
  for (int i = 0; v && i < 2 && i < cnt; i++) st[i] = v[i];
  v = n ? gir_attr_ints(n, "dilations", &cnt) : NULL;
  for (int i = 0; v && i < 2 && i < cnt; i++) dl[i] = v[i];
  int64_t KH = red->reduce_axes[1]->extent, KW = red->reduce_axes[2]->extent;
  int64_t rows = (c->boh - 1) * st[0] + (KH - 1) * dl[0] + 1, cols = (c->bow - 1) * st[1] + (KW - 1) * dl[1] + 1;
  int64_t window_channels = depthwise ? c->boc : c->bic; /* depthwise: the block's own */
  return 4 * ((int64_t)c->boc * c->bic * KH * KW + window_channels * rows * cols);
}

/* A block's patch of output pixels for tow columns per thread: kx threads along a
 * row (bow = kx·tow columns) and ky rows, at most 64 threads, chosen so the patch
 * divides the map (a ragged last patch runs every tap under a bounds test), then
 * nearest 16 threads, then the wider row (coalesced stores). */
static void pick_patch(int64_t OH, int64_t OW, lower_gpu_conv_cfg *c) {
  int best = -1000;
  for (int32_t kx = 1; kx <= 16; kx++)
    for (int32_t ky = 1; ky <= 16; ky++) {
      int32_t n = kx * ky;
      if (n > 64 || (kx > 1 && (int64_t)(kx - 1) * c->tow >= OW) || (ky > 1 && ky - 1 >= OH)) continue;
      int score = 100 * ((OW % ((int64_t)kx * c->tow) == 0) + (OH % ky == 0)) - 2 * abs(n - 16) + kx;
      if (score > best) best = score, c->bow = kx * c->tow, c->boh = ky;
    }
}

/* A block's output channels for toc per thread: tz = boc / toc thread groups, 8 to
 * 32 of them, boc dividing the channels where some such tz does (144 = 18 x 8: a
 * last block with 16 of 128 channels would idle most of its threads), else the
 * fewest blocks; fewer channels than toc x 8: one group per channel tile. */
static void pick_channels(int64_t OC, lower_gpu_conv_cfg *c) {
  if (OC <= 8 * (int64_t)c->toc) {
    c->toc = OC >= 8 ? (int32_t)(OC / 8) : 1;
    c->boc = (int32_t)(OC < 8 ? OC : c->toc * (OC / c->toc));
    if (OC % c->boc) c->boc = (int32_t)OC, c->toc = 1;
    return;
  }
  int32_t best_tz = 16;
  int64_t best = -1;
  for (int32_t tz = 8; tz <= 32; tz++) {
    int64_t boc = (int64_t)tz * c->toc, blocks = lower_cdiv(OC, boc), waste = blocks * boc - OC;
    int64_t score = (waste == 0 ? 1000000 : 0) - waste * 100 - labs(tz - 16);
    if (score > best) best = score, best_tz = tz;
  }
  c->boc = best_tz * c->toc;
}

/* Output channels per group of a grouped conv (lower_gpu_conv_fits 3), else 0. */
static int64_t group_channels(const sch_stage *red) {
  if (lower_gpu_conv_fits(red) != 3) return 0;
  const gir_node *n = red->t->origin;
  int64_t g = n ? gir_attr_int(n, "group", 1) : 1;
  return g > 1 && red->t->shape[1] % g == 0 ? red->t->shape[1] / g : 0;
}

void lower_gpu_conv_blocks(const sch_stage *red, lower_gpu_conv_cfg *c) {
  const te_tensor *o = red->t;
  int64_t OC = o->shape[1], OH = o->shape[2], OW = o->shape[3], mpg = group_channels(red);
  if (OW % c->tow && OW < 4 * c->tow) c->tow = 1; /* a ragged run on a narrow map: one column */
  /* grouped: the channel groups of one group's channels (a block within a group) */
  if (mpg && mpg % c->toc) c->toc = 1;
  pick_channels(mpg ? mpg : OC, c);
  while (mpg && mpg % c->boc) c->boc -= c->toc;
  pick_patch(OH, OW, c);
  if (lower_gpu_conv_fits(red) == 2 && c->bow < OW) { /* depthwise: whole rows (lower_sched_gpu_conv) */
    int32_t kx = (int32_t)lower_cdiv(OW, c->tow);
    c->bow = kx * c->tow;
    c->boh = kx >= 64 ? 1 : (int32_t)(64 / kx < OH ? 64 / kx : OH);
  }
  while ((int64_t)(c->boc / c->toc) * c->boh * (c->bow / c->tow) > 1024 && c->boh > 1) c->boh = (c->boh + 1) / 2;
}

lower_gpu_conv_cfg lower_gpu_conv_default(const sch_stage *red, const lower_target *t, int *use) {
  const te_tensor *o = red->t;
  int64_t N = o->shape[0], OC = o->shape[1], OH = o->shape[2], OW = o->shape[3], C = red->reduce_axes[0]->extent;
  int64_t sms = t && t->gpu_sms > 0 ? t->gpu_sms : 132;
  /* Register tiles (toc channels x tow columns per thread), from a sweep of every
   * tile over ResNet-50's conv shapes at batch 16 on an H200 (bench/cuda/README.md):
   * a spatial kernel wants a run of 5 to 8 columns per thread (neighbouring taps
   * of a row share the window's elements: 2 x 7 gave 11 to 17 TFLOP/s, against 2
   * to 9 for 4 x 4 and 8 x 4), one channel when that leaves under 40k threads; a
   * 1 x 1 kernel 4 x 4 on maps of 16 columns or more, 8 x 2 on narrower even maps,
   * else the run of columns. The first candidate whose grid has 40k threads (20k
   * for a 1 x 1 kernel's lighter threads) and half a block per multiprocessor is
   * taken; none: the smallest tile. */
  int64_t KHW = red->reduce_axes[1]->extent * red->reduce_axes[2]->extent;
  int32_t run = 0;
  static const int32_t runs[] = {7, 8, 6, 5}; /* 7 measured; the others its neighbours */
  for (int i = 0; i < 4 && !run; i++)
    if (OW % runs[i] == 0) run = runs[i];
  if (!run) run = OW % 4 == 0 ? 4 : OW <= 8 ? (int32_t)OW : 4;
  int32_t cand[8][2], nc = 0;
#define CAND(a, b) (cand[nc][0] = (a), cand[nc][1] = (b), nc++)
  int depthwise = lower_gpu_conv_fits(red) == 2;
  const gir_node *node = red->t->origin;
  int32_t ns = 0;
  const int64_t *strides = node ? gir_attr_ints(node, "strides", &ns) : NULL;
  int strided = strides && ns > 0 && strides[0] > 1;
  if (depthwise) CAND(1, run), CAND(1, 2); /* one channel per thread: its own window */
  else if (KHW == 1 && OW % 4 == 0 && OW >= 16) CAND(4, 4), CAND(4, 2);
  else if (KHW == 1 && OW % 2 == 0 && OW >= 8) CAND(8, 2), CAND(4, 2);
  else {
    /* strided, 28 columns or more: four channels (their window's taps share less
     * along a row: 3x3 stride 2 at 28x28, 9.7 TFLOP/s against 6.8 for two; the
     * 7x7 stem, whose window is larger, keeps two) */
    if (strided && OW >= 28 && KHW <= 9) CAND(4, run);
    CAND(2, run), CAND(1, run);
  }
  CAND(2, 2), CAND(2, 1), CAND(1, 1);
#undef CAND
  lower_gpu_conv_cfg c = {0};
  int64_t blocks = 0;
  for (int k = 0; k < nc; k++) {
    c = (lower_gpu_conv_cfg){.toc = cand[k][0], .tow = cand[k][1], .bic = 1};
    lower_gpu_conv_blocks(red, &c);
    if (k + 1 < nc && !depthwise && tile_bytes(red, &c, depthwise) > 45056) continue; /* overflows at one channel a step */
    c.bic = 8;
    blocks = N * lower_cdiv(OC, c.boc) * lower_cdiv(OH, c.boh) * lower_cdiv(OW, c.bow);
    int64_t threads = (int64_t)(c.boc / c.toc) * c.boh * (c.bow / c.tow);
    if (blocks * 2 >= sms && blocks * threads >= (KHW > 1 ? 40000 : 20000)) break;
  }
  /* a depthwise block's window holds its channels' rows: fewer rows until it fits */
  while (depthwise && c.boh > 1 && tile_bytes(red, &c, depthwise) > 45056) c.boh = (c.boh + 1) / 2;
  while (depthwise && c.boc > 1 && tile_bytes(red, &c, depthwise) > 45056) c.boc /= 2;
  blocks = N * lower_cdiv(OC, c.boc) * lower_cdiv(OH, c.boh) * lower_cdiv(OW, c.bow);
  *use = blocks >= sms / 2 && (!depthwise || (tile_bytes(red, &c, depthwise) <= 45056 && c.bow >= OW));
  /* input channels per step: a divisor of C (a ragged last step would be a second
   * copy of the loop, shared buffers included), both tiles within 44 KiB of the
   * 48 KiB a block may have statically, and at most 8 for a spatial kernel (two
   * blocks per multiprocessor then fit) */
  int32_t best = 1, most = red->reduce_axes[1]->extent * red->reduce_axes[2]->extent > 1 ? 8 : 16;
  for (int64_t d = 1; d <= most && d <= C; d++) {
    c.bic = (int32_t)d;
    if (C % d == 0 && tile_bytes(red, &c, depthwise) <= 45056) best = (int32_t)d;
  }
  c.bic = best;
  if (tile_bytes(red, &c, depthwise) > 45056) *use = 0; /* even one channel a step overflows: the default schedule */
  return c;
}

int lower_gpu_conv_fits(const sch_stage *st) {
  if (st->t->rank != 4 || st->n_reduce != 3 || st->t->dtype != GIR_F32 || !st->t->tag || strcmp(st->t->tag, "conv"))
    return 0;
  te_tensor *lt[4];
  int nl = lower_gpu_loads(st, lt, 4);
  if (nl != 2) return 0;
  /* one group: the weights [OC, C, KH, KW] span every input channel; depthwise: one
   * input channel per output channel, [OC, 1, KH, KW] over an input of OC channels;
   * grouped: [OC, C/g, KH, KW], g groups of OC/g output channels */
  const gir_node *n = st->t->origin;
  int64_t g = n ? gir_attr_int(n, "group", 1) : 1;
  for (int i = 0; i < 2; i++) {
    const te_tensor *w = lt[i], *x = lt[1 - i];
    if (w->rank != 4 || x->rank != 4 || w->shape[0] != st->t->shape[1]) continue;
    if (w->shape[1] == x->shape[1] && w->shape[1] == st->reduce_axes[0]->extent) return 1;
    if (w->shape[1] == 1 && st->reduce_axes[0]->extent == 1 && x->shape[1] == w->shape[0]) return 2;
    if (g > 1 && w->shape[1] == st->reduce_axes[0]->extent && x->shape[1] == g * w->shape[1] && w->shape[0] % g == 0)
      return 3;
  }
  return 0;
}

typedef struct find_input {
  const te_var *oc; /* output axis 1: the weights' first index */
  te_tensor *x;
} find_input;

static void note_input(const te_expr *ld, void *arg) {
  find_input *f = arg;
  const te_expr *i0 = ld->u.load.idx[0];
  if (ld->u.load.t->rank == 4 && !(i0->kind == TE_VAR && i0->u.var == f->oc)) f->x = ld->u.load.t;
}

/* The conv's input (the operand not indexed by the output channel first), or NULL. */
static te_tensor *conv_input(const sch_stage *red) {
  find_input f = {red->t->axis[1], NULL};
  te_visit_load_exprs(red->body, note_input, &f);
  return f.x;
}

int lower_sched_gpu_conv(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_gpu_conv_cfg *c) {
  if (c->boc < 1 || c->toc < 1 || c->bow < 1 || c->boh < 1 || c->tow < 1 || c->bic < 1 || c->boc % c->toc ||
      c->bow % c->tow)
    return gir_errf(s->err, "gpu conv: bad tiles");
  te_tensor *lt[4];
  int nl = lower_gpu_loads(red, lt, 4);
  if (epi->n_root != 4 || nl != 2) return gir_errf(s->err, "gpu conv: %s is not a 2-D conv", red->t->name);
  int64_t OC = epi->leaf[1]->extent, OH = epi->leaf[2]->extent, OW = epi->leaf[3]->extent;
  int64_t oce = OC < c->boc ? OC : c->boc, owe = OW < c->bow ? OW : c->bow, ohe = OH < c->boh ? OH : c->boh;
  /* threads: z over channel groups, y over rows, x over column groups — three loops
   * of their own, so a shared window's region stays linear in them */
  int64_t tz = (oce + c->toc - 1) / c->toc, ty = ohe, tx = (owe + c->tow - 1) / c->tow;
  if (tz * ty * tx > 1024 || tz > 64) return gir_errf(s->err, "gpu conv: %lldx%lldx%lld threads per block", (long long)tx, (long long)ty, (long long)tz);
  sch_iter *n = epi->leaf[0], *oc = epi->leaf[1], *oh = epi->leaf[2], *ow = epi->leaf[3];
  sch_iter *oco, *oci, *tzi, *oci_i, *oho, *ohi, *owo, *owi, *owt, *owi_i;
  if (sch_split(s, epi, oc, c->boc, &oco, &oci) < 0 || sch_split(s, epi, oci, c->toc, &tzi, &oci_i) < 0 ||
      sch_split(s, epi, oh, c->boh, &oho, &ohi) < 0 || sch_split(s, epi, ow, c->bow, &owo, &owi) < 0 ||
      sch_split(s, epi, owi, c->tow, &owt, &owi_i) < 0)
    return -1;
  /* blocks: z over (image, channel tile), y over row tiles, x over column tiles. A
   * depthwise window's channels follow the block's channel tile, which must stay a
   * plain block index (a fused one reaches the window's region as a modulo, whose
   * range is every channel): there the image goes with the column tiles, one per row */
  int depthwise = lower_gpu_conv_fits(red) == 2;
  int64_t mpg = group_channels(red);
  if (mpg && mpg % c->boc)
    return gir_errf(s->err, "gpu conv: a block's %d channels straddle groups of %lld", c->boc, (long long)mpg);
  if (depthwise && lower_cdiv(OW, c->bow) != 1)
    return gir_errf(s->err, "gpu conv: a depthwise block takes whole rows (bow %d < %lld columns)", c->bow, (long long)OW);
  sch_iter *order[9] = {n, oco, oho, owo, tzi, ohi, owt, oci_i, owi_i};
  if (depthwise) order[0] = oco, order[1] = oho, order[2] = n;
  if (sch_reorder(s, epi, order, 9) < 0) return -1;
  sch_iter *bz = oco, *bx = owo, *txi = owt;
  if (depthwise ? sch_fuse(s, epi, n, owo, &bx) < 0 : sch_fuse(s, epi, n, oco, &bz) < 0) return -1;
  if (sch_bind(s, epi, bz, "blockIdx.z") < 0 || sch_bind(s, epi, oho, "blockIdx.y") < 0 ||
      sch_bind(s, epi, bx, "blockIdx.x") < 0 || sch_bind(s, epi, tzi, "threadIdx.z") < 0 ||
      sch_bind(s, epi, ohi, "threadIdx.y") < 0 || sch_bind(s, epi, owt, "threadIdx.x") < 0 ||
      sch_annotate(s, epi, oci_i, TIR_UNROLLED) < 0 || sch_annotate(s, epi, owi_i, TIR_UNROLLED) < 0)
    return -1;
  /* the register tile: the reduction at the thread loop, input channels in steps of bic */
  if (sch_compute_at(s, red, epi, txi) < 0) return -1;
  sch_iter *rc = red->reduce_axes[0], *rco, *rci;
  if (sch_split(s, red, rc, c->bic, &rco, &rci) < 0) return -1;
  sch_iter *rorder[8] = {rco, rci, red->reduce_axes[1], red->reduce_axes[2], red->leaf[0], red->leaf[1], red->leaf[2],
                         red->leaf[3]};
  if (sch_reorder(s, red, rorder, 8) < 0) return -1;
  for (int i = 4; i < 8; i++)
    if (rorder[i]->extent > 1 && sch_annotate(s, red, rorder[i], TIR_UNROLLED) < 0) return -1;
  /* the kernel's taps unrolled too (up to 5 x 5): neighbouring columns' taps read the
   * same window elements, which then load from shared memory once per step */
  int64_t KH = red->reduce_axes[1]->extent, KW = red->reduce_axes[2]->extent;
  if (KH * KW > 1 && KH * KW <= 25 &&
      ((KW > 1 && sch_annotate(s, red, red->reduce_axes[2], TIR_UNROLLED) < 0) ||
       (KH > 1 && sch_annotate(s, red, red->reduce_axes[1], TIR_UNROLLED) < 0)))
    return -1;
  te_tensor *x = conv_input(red);
  const gir_node *node = red->t->origin;
  int32_t np = 0;
  const int64_t *pads = node ? gir_attr_ints(node, "pads", &np) : NULL;
  int64_t lo[4] = {0}, hi[4] = {0};
  int padded = 0;
  for (int i = 0; pads && np == 4 && i < 2; i++) {
    lo[2 + i] = pads[i], hi[2 + i] = pads[2 + i];
    padded |= pads[i] || pads[2 + i];
  }
  /* zero padding: the window holds the zeros, the taps need no test (float convs
   * only — an 8-bit conv's pad value is its zero point, read through a select) */
  if (padded && (!x || red->body->kind != TE_REDUCE || !red->body->u.red.cond || gir_attr_int(node, "pad_value", 0)))
    padded = 0;
  for (int i = 0; i < 2; i++) {
    sch_stage *rd[1] = {red};
    sch_stage *sh = padded && lt[i] == x ? sch_cache_read_pad(s, lt[i], TIR_SHARED, lo, hi, 0.0, rd, 1)
                                         : sch_cache_read(s, lt[i], TIR_SHARED, rd, 1);
    if (!sh || sch_compute_at(s, sh, red, rco) < 0 || lower_gpu_fetch(s, sh, tz, ty, tx) < 0) return -1;
  }
  if (padded) {
    te_expr *r = gir_arena_alloc(s->arena, sizeof *r);
    if (!r) return gir_errf(s->err, "out of memory");
    *r = *red->body;
    r->u.red.cond = NULL;
    red->body = r;
  }
  red->template_name = epi->template_name = "gpu_conv";
  return 0;
}
