/* sched_gpu_matmul_tc.c — the GPU matmul template on tensor cores (dense, matmul,
 * batch matmul of f32 with lower_target.gpu_tf32, `kiln compile --gpu-math tf32`):
 * TVM's tensor-core schedule. The output is cut into bm × bn tiles, one per block
 * (blockIdx.x over columns, .y over rows, .z over the batch); the matmul stage is
 * computed at the block loop into shared memory and tensorized (sch_tensorize_wmma,
 * sch_wmma.c): the block's warps each accumulate a wm × wn tile in 16 × 16 fragments
 * with m16n16k8 TF32 MMAs, over tiles of A and B the block copies to shared memory in
 * steps of bk (zero-padded: ragged M, N and K need no other path), then store the
 * fragments to the shared tile. The epilogue (bias, activation) is the consumer: the
 * same threads (warps along threadIdx.y, 32 lanes along threadIdx.x) read the shared
 * tile, a lane per column (coalesced stores), and write the output. TF32 rounds the
 * inputs to 10-bit mantissas (the products and sums stay f32), which is why the
 * template is opt-in. Knobs are data (lower_gpu_matmul_tc_cfg, tuning.c). */
#include "templates.h"

/* 1 if st is a matmul this template computes: a plain f32 sum of a product of rows and
 * columns (any number of batch axes: they are fused into blockIdx.z). */
static int tc_fits(const sch_stage *st) {
  const te_expr *a, *b, *bc;
  return st->t->rank >= 2 && st->n_reduce == 1 && sch_wmma_operands(st, &a, &b, &bc) == st->t->rank - 2;
}

lower_gpu_matmul_tc_cfg lower_gpu_matmul_tc_default(const sch_stage *red, const lower_target *t, int *use) {
  const te_tensor *o = red->t;
  int64_t M = o->shape[o->rank - 2], N = o->shape[o->rank - 1], batch = o->rank > 2 ? o->shape[0] : 1;
  int64_t K = red->n_reduce == 1 ? red->reduce_axes[0]->extent : 0;
  int64_t sms = t && t->gpu_sms > 0 ? t->gpu_sms : 132;
  /* 64 x 64 tiles of four warps of 32 x 32 (2 x 2 fragments each), k in steps of 32
   * (35 KB of shared memory: two blocks or more a multiprocessor); halved, the larger
   * side first, down to 32 x 32, while the grid has fewer blocks than three
   * multiprocessors in four; a side larger than the matrix's halved down to 16 (rows)
   * or 32 (columns: a warp's lanes span the epilogue's row). Not measured on a GPU yet. */
  lower_gpu_matmul_tc_cfg c = {.bm = 64, .bn = 64, .bk = 32, .wm = 32, .wn = 32};
  while (batch * lower_cdiv(M, c.bm) * lower_cdiv(N, c.bn) < 3 * sms / 4 && (c.bm > 32 || c.bn > 32)) {
    if (c.bm >= c.bn && c.bm > 32) c.bm /= 2, c.wm /= 2;
    else c.bn /= 2, c.wn /= 2;
  }
  while (c.bm > 16 && M < c.bm) c.bm /= 2, c.wm = c.wm > 16 ? c.wm / 2 : 16;
  while (c.bn > 32 && N < c.bn) c.bn /= 2, c.wn = c.wn > 16 ? c.wn / 2 : 16;
  *use = red->n_reduce == 1 && tc_fits(red) && M >= c.bm && N >= c.bn && K >= 8;
  return c;
}

int lower_sched_gpu_matmul_tc(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_gpu_matmul_tc_cfg *c) {
  if (c->wm < 16 || c->wn < 16 || c->bm % c->wm || c->bn % c->wn)
    return gir_errf(s->err, "gpu matmul (tensor cores): warp tile %dx%d does not divide block tile %dx%d", c->wm,
                    c->wn, c->bm, c->bn);
  int64_t warps = (int64_t)(c->bm / c->wm) * (c->bn / c->wn);
  if (c->bm % warps || warps > 32)
    return gir_errf(s->err, "gpu matmul (tensor cores): %lld warps do not divide the block's %d rows (at most 32 warps)",
                    (long long)warps, c->bm);
  int r = epi->n_root;
  if (r < 2 || !tc_fits(red)) return gir_errf(s->err, "gpu matmul (tensor cores): %s does not fit", red->t->name);
  int64_t M = epi->leaf[r - 2]->extent, N = epi->leaf[r - 1]->extent;
  if (M < c->bm || N < c->bn)
    return gir_errf(s->err, "gpu matmul (tensor cores): a %dx%d tile is larger than the %lldx%lld output", c->bm, c->bn,
                    (long long)M, (long long)N);
  /* the epilogue: batch → blockIdx.z, row tiles → .y, column tiles → .x; inside a tile,
   * rows over the warps (threadIdx.y), columns over the lanes (threadIdx.x) */
  sch_iter *m = epi->leaf[r - 2], *n = epi->leaf[r - 1], *bz = NULL;
  if (r > 2) {
    bz = epi->leaf[0];
    for (int i = 1; i < r - 2; i++)
      if (sch_fuse(s, epi, bz, epi->leaf[1], &bz) < 0) return -1;
  }
  sch_iter *mo, *mi, *mio, *ty, *no, *ni, *nio, *tx;
  if (sch_split(s, epi, m, c->bm, &mo, &mi) < 0 || sch_split(s, epi, mi, warps, &mio, &ty) < 0 ||
      sch_split(s, epi, n, c->bn, &no, &ni) < 0 || sch_split(s, epi, ni, 32, &nio, &tx) < 0)
    return -1;
  sch_iter *order[7];
  int k = 0;
  if (bz) order[k++] = bz;
  order[k++] = mo, order[k++] = no, order[k++] = ty, order[k++] = tx, order[k++] = mio, order[k++] = nio;
  if (sch_reorder(s, epi, order, k) < 0) return -1;
  if ((bz && sch_bind(s, epi, bz, "blockIdx.z") < 0) || sch_bind(s, epi, mo, "blockIdx.y") < 0 ||
      sch_bind(s, epi, no, "blockIdx.x") < 0 || sch_bind(s, epi, ty, "threadIdx.y") < 0 ||
      sch_bind(s, epi, tx, "threadIdx.x") < 0)
    return -1;
  /* the matmul: the block's tile in shared memory, on tensor cores */
  sch_wmma w = {.bm = c->bm, .bn = c->bn, .bk = c->bk, .wm = c->wm, .wn = c->wn};
  if (sch_compute_at(s, red, epi, no) < 0 || sch_set_scope(s, red, TIR_SHARED) < 0 || sch_tensorize_wmma(s, red, &w) < 0)
    return -1;
  red->template_name = epi->template_name = "gpu_matmul_tc";
  return 0;
}
