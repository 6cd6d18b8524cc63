/* sched_gpu_conv.c — the GPU template for 2-D convolutions (NCHW, one group):
 * the matmul template's structure (sched_gpu_matmul.c) over a direct conv. A block
 * computes boc output channels × a boh × bow patch of output pixels (blockIdx.y over
 * channel tiles, .x over patches, .z over the batch); each thread a toc × tow tile
 * (channels × pixels along the row) in registers; the reduction over input channels
 * runs in steps of bic, each step's weights [boc, bic, kh, kw] and input window
 * [bic, rows, cols] (the patch's receptive field, its halo included; outside the
 * image the copy is skipped and the conv's own condition skips the taps) copied
 * into shared memory by the block's threads together, between barriers. Grouped
 * and depthwise convs keep the default schedule: their input channel depends on
 * the output channel, and a shared window would be the whole input. */
#include <string.h>
#include "templates.h"

/* The shared memory one step's tiles take, in bytes: the weights [boc, bic, KH, KW]
 * and the input window [bic, rows, cols] (strides and dilations from the conv node;
 * 1 when it is not known, which only underestimates when they are larger). */
static int64_t tile_bytes(const sch_stage *red, const lower_gpu_conv_cfg *c) {
  const gir_node *n = red->t->origin;
  int64_t st[2] = {1, 1}, dl[2] = {1, 1};
  int32_t cnt;
  const int64_t *v = n ? gir_attr_ints(n, "strides", &cnt) : NULL;
  for (int i = 0; v && i < 2 && i < cnt; i++) st[i] = v[i];
  v = n ? gir_attr_ints(n, "dilations", &cnt) : NULL;
  for (int i = 0; v && i < 2 && i < cnt; i++) dl[i] = v[i];
  int64_t KH = red->reduce_axes[1]->extent, KW = red->reduce_axes[2]->extent;
  int64_t rows = (c->boh - 1) * st[0] + (KH - 1) * dl[0] + 1, cols = (c->bow - 1) * st[1] + (KW - 1) * dl[1] + 1;
  return 4 * ((int64_t)c->boc * c->bic * KH * KW + (int64_t)c->bic * rows * cols);
}

lower_gpu_conv_cfg lower_gpu_conv_default(const sch_stage *red, const lower_target *t, int *use) {
  const te_tensor *o = red->t;
  int64_t N = o->shape[0], OC = o->shape[1], OH = o->shape[2], OW = o->shape[3], C = red->reduce_axes[0]->extent;
  int64_t sms = t && t->gpu_sms > 0 ? t->gpu_sms : 132;
  /* 16 x 16 threads, each toc channels x tow columns: the largest register tile whose
   * grid gives every multiprocessor two blocks (a 7 x 7 map at batch 1 has few patches) */
  static const int32_t tiles[][2] = {{4, 4}, {4, 2}, {2, 2}, {2, 1}, {1, 1}};
  lower_gpu_conv_cfg c = {0};
  int64_t blocks = 0;
  for (int k = 0; k < 5; k++) {
    c = (lower_gpu_conv_cfg){.toc = tiles[k][0], .tow = tiles[k][1], .bic = 8};
    c.boc = 16 * c.toc;
    while (c.boc > 16 && OC <= c.boc / 2) c.boc /= 2;
    if (c.boc < 16 * c.toc) c.toc = c.boc / 16 > 0 ? c.boc / 16 : 1;
    c.bow = 4 * c.tow;
    while (c.bow > c.tow && OW <= c.bow / 2) c.bow /= 2;
    c.boh = 16 / (c.bow / c.tow);
    blocks = N * lower_cdiv(OC, c.boc) * lower_cdiv(OH, c.boh) * lower_cdiv(OW, c.bow);
    if (blocks >= 2 * sms) break;
  }
  *use = blocks >= sms / 2;
  /* input channels per step: a divisor of C (a ragged last step would be a second
   * copy of the loop, shared buffers included), both tiles within 44 KiB of the
   * 48 KiB a block may have statically, and at most 8 for a spatial kernel (two
   * blocks per multiprocessor then fit) */
  int32_t best = 1, most = red->reduce_axes[1]->extent * red->reduce_axes[2]->extent > 1 ? 8 : 16;
  for (int64_t d = 1; d <= most && d <= C; d++) {
    c.bic = (int32_t)d;
    if (C % d == 0 && tile_bytes(red, &c) <= 45056) best = (int32_t)d;
  }
  c.bic = best;
  return c;
}

int lower_gpu_conv_fits(const sch_stage *st) {
  if (st->t->rank != 4 || st->n_reduce != 3 || st->t->dtype != GIR_F32 || !st->t->tag || strcmp(st->t->tag, "conv"))
    return 0;
  te_tensor *lt[4];
  int nl = lower_gpu_loads(st, lt, 4);
  if (nl != 2) return 0;
  /* one group: the weights [OC, C, KH, KW] span every input channel */
  for (int i = 0; i < 2; i++) {
    const te_tensor *w = lt[i], *x = lt[1 - i];
    if (w->rank == 4 && x->rank == 4 && w->shape[0] == st->t->shape[1] && w->shape[1] == x->shape[1] &&
        w->shape[1] == st->reduce_axes[0]->extent)
      return 1;
  }
  return 0;
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
  sch_iter *order[9] = {n, oco, oho, owo, tzi, ohi, owt, oci_i, owi_i};
  if (sch_reorder(s, epi, order, 9) < 0) return -1;
  sch_iter *bz, *txi = owt;
  if (sch_fuse(s, epi, n, oco, &bz) < 0) return -1;
  if (sch_bind(s, epi, bz, "blockIdx.z") < 0 || sch_bind(s, epi, oho, "blockIdx.y") < 0 ||
      sch_bind(s, epi, owo, "blockIdx.x") < 0 || sch_bind(s, epi, tzi, "threadIdx.z") < 0 ||
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
  for (int i = 0; i < 2; i++) {
    sch_stage *rd[1] = {red};
    sch_stage *sh = sch_cache_read(s, lt[i], TIR_SHARED, rd, 1);
    if (!sh || sch_compute_at(s, sh, red, rco) < 0 || lower_gpu_fetch(s, sh, tz, ty, tx) < 0) return -1;
  }
  red->template_name = epi->template_name = "gpu_conv";
  return 0;
}
