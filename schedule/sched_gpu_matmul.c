/* sched_gpu_matmul.c — the GPU matmul template (dense, matmul, batch matmul), the
 * TVM paper's §4.2 schedule: the output is cut into bm × bn tiles, one per block
 * (blockIdx.x over columns, .y over rows, .z over the batch); each of the block's
 * (bm/tm)·(bn/tn) threads accumulates a tm × tn tile in registers (the reduction
 * computed at the thread loop, its tile loops unrolled); the reduction runs in
 * steps of bk, and at each step the block's threads first copy the A and B tiles
 * it needs into shared memory together (cooperative fetching: the copy's loops
 * are bound to the same thread indices, sch_lower.c), between barriers, so each
 * element of A and B is read from global memory once per block instead of once per
 * thread. The epilogue (bias, activation) runs on the registers. Knobs are data
 * (lower_gpu_matmul_cfg) for the tuner. */
#include <string.h>
#include "templates.h"

lower_gpu_matmul_cfg lower_gpu_matmul_default(const sch_stage *red, const lower_target *t, int *use) {
  const te_tensor *o = red->t;
  int64_t M = o->shape[o->rank - 2], N = o->shape[o->rank - 1], batch = 1;
  for (int i = 0; i < o->rank - 2; i++) batch *= o->shape[i];
  int64_t sms = t && t->gpu_sms > 0 ? t->gpu_sms : 132;
  /* 64 x 64 tiles of 4 x 4 per thread, halved (the larger side first, then the
   * thread tile) until the grid has a block for three multiprocessors in four: a
   * sweep of the tiles over the BERT-like encoder's products at batch 16 on an H200
   * (bench/cuda/sweep_tiles.py) had 64 x 64 best or within 10% of the best on every
   * one, halving for two blocks per multiprocessor up to 21% slower */
  lower_gpu_matmul_cfg c = {.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4};
  while (batch * lower_cdiv(M, c.bm) * lower_cdiv(N, c.bn) < 3 * sms / 4 && (c.bm > 16 || c.bn > 16)) {
    if (c.bm >= c.bn && c.bm > 16) c.bm /= 2, c.tm = c.bm / 16;
    else c.bn /= 2, c.tn = c.bn / 16;
  }
  while (c.bm > 16 && M <= c.bm / 2) c.bm /= 2, c.tm = c.bm / 16 > 0 ? c.bm / 16 : 1;
  while (c.bn > 16 && N <= c.bn / 2) c.bn /= 2, c.tn = c.bn / 16 > 0 ? c.bn / 16 : 1;
  if (c.tm < 1) c.tm = 1;
  if (c.tn < 1) c.tn = 1;
  /* a few rows (a matrix-vector product) or a grid of a handful of blocks: a thread per output */
  *use = M >= 16 && batch * lower_cdiv(M, c.bm) * lower_cdiv(N, c.bn) >= sms / 2;
  return c;
}

int lower_sched_gpu_matmul(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_gpu_matmul_cfg *c) {
  if (c->bm < 1 || c->bn < 1 || c->bk < 1 || c->tm < 1 || c->tn < 1 || c->bm % c->tm || c->bn % c->tn ||
      (c->bm / c->tm) * (c->bn / c->tn) > 1024)
    return gir_errf(s->err, "gpu matmul: tiles %dx%dx%d / %dx%d do not make a block of at most 1024 threads", c->bm,
                    c->bn, c->bk, c->tm, c->tn);
  te_tensor *lt[4];
  int nl = lower_gpu_loads(red, lt, 4);
  int r = epi->n_root;
  if (r < 2 || nl > 4) return gir_errf(s->err, "gpu matmul: %s is not a matmul", red->t->name);
  /* threads per block: a tile wider than the output has only the rows and columns there are */
  int64_t M = epi->leaf[r - 2]->extent, N = epi->leaf[r - 1]->extent;
  int64_t me = M < c->bm ? M : c->bm, ne = N < c->bn ? N : c->bn;
  int64_t ty = (me + c->tm - 1) / c->tm, tx = (ne + c->tn - 1) / c->tn;
  if (ty < 1) ty = 1;
  if (tx < 1) tx = 1;
  /* the epilogue: batch → blockIdx.z, row tiles → .y, column tiles → .x, threads inside */
  sch_iter *m = epi->leaf[r - 2], *n = epi->leaf[r - 1], *bz = NULL;
  if (r > 2) {
    bz = epi->leaf[0];
    for (int i = 1; i < r - 2; i++)
      if (sch_fuse(s, epi, bz, epi->leaf[1], &bz) < 0) return -1;
  }
  sch_iter *mo, *mi, *no, *ni, *tyi, *mii, *txi, *nii;
  if (sch_split(s, epi, m, c->bm, &mo, &mi) < 0 || sch_split(s, epi, mi, c->tm, &tyi, &mii) < 0 ||
      sch_split(s, epi, n, c->bn, &no, &ni) < 0 || sch_split(s, epi, ni, c->tn, &txi, &nii) < 0)
    return -1;
  sch_iter *order[7];
  int k = 0;
  if (bz) order[k++] = bz;
  order[k++] = mo, order[k++] = no, order[k++] = tyi, order[k++] = txi, order[k++] = mii, order[k++] = nii;
  if (sch_reorder(s, epi, order, k) < 0) return -1;
  if ((bz && sch_bind(s, epi, bz, "blockIdx.z") < 0) || sch_bind(s, epi, mo, "blockIdx.y") < 0 ||
      sch_bind(s, epi, no, "blockIdx.x") < 0 || sch_bind(s, epi, tyi, "threadIdx.y") < 0 ||
      sch_bind(s, epi, txi, "threadIdx.x") < 0 || sch_annotate(s, epi, mii, TIR_UNROLLED) < 0 ||
      sch_annotate(s, epi, nii, TIR_UNROLLED) < 0)
    return -1;
  /* the register tile: the reduction at the thread loop, k split by bk, the tile inside */
  if (sch_compute_at(s, red, epi, txi) < 0) return -1;
  sch_iter *rk = red->leaf[red->n_leaf - 1], *ko, *ki;
  if (!rk->reduce || sch_split(s, red, rk, c->bk, &ko, &ki) < 0) return -1;
  sch_iter *rorder[GIR_MAX_RANK + 2];
  int q = 0;
  rorder[q++] = ko;
  rorder[q++] = ki;
  for (int i = 0; i < red->n_root; i++) rorder[q++] = red->leaf[i];
  if (sch_reorder(s, red, rorder, q) < 0) return -1;
  for (int i = 0; i < red->n_leaf; i++)
    if (red->leaf[i] != ko && red->leaf[i] != ki && red->leaf[i]->extent > 1 &&
        sch_annotate(s, red, red->leaf[i], TIR_UNROLLED) < 0)
      return -1;
  /* the operands' tiles in shared memory, fetched at each step of ko */
  for (int i = 0; i < nl && i < 4; i++) {
    sch_stage *rd[1] = {red};
    sch_stage *sh = sch_cache_read(s, lt[i], TIR_SHARED, rd, 1);
    if (!sh || sch_compute_at(s, sh, red, ko) < 0 || lower_gpu_fetch(s, sh, 1, ty, tx) < 0) return -1;
  }
  red->template_name = epi->template_name = "gpu_matmul";
  return 0;
}
