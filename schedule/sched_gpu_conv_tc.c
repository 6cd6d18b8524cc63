/* sched_gpu_conv_tc.c — 2-D convs on tensor cores (NCHW, one group, f32, with
 * lower_target.gpu_tf32: `kiln compile --gpu-math tf32`): an implicit GEMM through the
 * tensorized stage of sch_wmma.c, whose rows are the output channels, whose columns a
 * block's pixels (boh whole output rows of the map, row-major), and whose reduction the input
 * channels and taps flattened (the weights' rows are A; B, the input window of each
 * pixel and tap, is gathered by the tile copy itself: lowering the conv's input load
 * at each (tap, pixel), zero in the padding). A block per bm channels × boh rows of
 * one image (blockIdx.y, .x, .z); the epilogue (bias, activation, residual) reads the
 * shared tile, warps' rows along threadIdx.y and a row's pixels along threadIdx.x (in
 * pieces of 32 past 32 columns).
 * Maps whose rows cannot make whole 16-column fragments within the map's height (7 × 7:
 * 16 rows of 7 would be needed) keep the CUDA-core conv template, as do depthwise and
 * grouped convs. Knobs are data (lower_gpu_conv_tc_cfg, tuning.c). Not timed on a GPU. */
#include "arith.h"
#include "templates.h"

/* 1 if st is a dense conv the tensorized stage computes: channels as its rows. */
static int tc_fits(const sch_stage *st) {
  const te_expr *a, *b, *bc;
  return st->t->rank == 4 && lower_gpu_conv_fits(st) == 1 && sch_wmma_operands(st, &a, &b, &bc) == 1;
}

lower_gpu_conv_tc_cfg lower_gpu_conv_tc_default(const sch_stage *red, const lower_target *t, int *use) {
  (void)t;
  const te_tensor *o = red->t;
  int64_t OC = o->shape[1], OH = o->shape[2], OW = o->shape[3], K = 1;
  for (int j = 0; j < red->n_reduce; j++) K *= red->reduce_axes[j]->extent;
  /* 64 channels (two warps of 32 along them) × whole rows, up to 128 pixels, warp tiles
   * 32 pixels wide (16 where 32-pixel fragments would need more rows than that or than
   * the map has: 112 pixels of ResNet-50's 112, 56, 28 and 14-wide maps take 7 of 16),
   * k in steps of 32 (16 past 64 pixels: the 48 KB of shared memory) */
  lower_gpu_conv_tc_cfg c = {.bm = OC >= 64 ? 64 : OC >= 32 ? 32 : 16, .boh = 1, .bk = 32, .wm = 16, .wn = 32};
  c.wm = c.bm >= 32 ? c.bm / 2 : 16;
  int64_t cols = OW, h = 0;
  for (int32_t wn = 32; wn >= 16 && !h; wn /= 2) {
    int64_t need = wn / arith_gcd(cols, wn); /* rows for whole fragments */
    if (need <= OH && need * cols <= 128) h = need, c.wn = wn;
  }
  while (h && 2 * h <= OH && 2 * h * cols <= 128) h *= 2;
  c.boh = (int32_t)(h ? h : 1);
  if (h * cols > 64) c.bk = 16;
  *use = tc_fits(red) && h > 0 && OC >= 16 && K >= 8;
  return c;
}

int lower_sched_gpu_conv_tc(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_gpu_conv_tc_cfg *c) {
  if (!tc_fits(red) || epi->n_root != 4) return gir_errf(s->err, "gpu conv (tensor cores): %s does not fit", red->t->name);
  int64_t OC = epi->leaf[1]->extent, OH = epi->leaf[2]->extent, OW = epi->leaf[3]->extent;
  int64_t bn = (int64_t)c->boh * OW;
  if (c->bm > OC || c->boh > OH || c->wm < 16 || c->wn < 16 || c->bm % c->wm || bn % c->wn)
    return gir_errf(s->err, "gpu conv (tensor cores): a %d channel x %d row tile (%lld columns) does not fit the %lldx%lldx%lld "
                    "output or the %dx%d warp tile", c->bm, c->boh, (long long)bn, (long long)OC, (long long)OH,
                    (long long)OW, c->wm, c->wn);
  int64_t warps = (int64_t)(c->bm / c->wm) * (bn / c->wn), ty_n = warps < c->bm ? warps : c->bm;
  while (c->bm % ty_n) ty_n--; /* the epilogue's rows per step: warps dividing the channels */
  /* the epilogue: image → blockIdx.z, channel tiles → .y, row tiles → .x; inside,
   * channels over threadIdx.y, a row's pixels over threadIdx.x */
  sch_iter *n = epi->leaf[0], *oc = epi->leaf[1], *oh = epi->leaf[2], *ow = epi->leaf[3];
  sch_iter *oco, *oci, *ocio, *ty, *oho, *ohi, *owo = NULL, *tx = ow;
  if (sch_split(s, epi, oc, c->bm, &oco, &oci) < 0 || sch_split(s, epi, oci, ty_n, &ocio, &ty) < 0 ||
      sch_split(s, epi, oh, c->boh, &oho, &ohi) < 0 || (OW > 32 && sch_split(s, epi, ow, 32, &owo, &tx) < 0))
    return -1;
  sch_iter *order[8] = {n, oco, oho, ty, tx, ocio, ohi, owo};
  if (sch_reorder(s, epi, order, owo ? 8 : 7) < 0) return -1;
  if (sch_bind(s, epi, n, "blockIdx.z") < 0 || sch_bind(s, epi, oco, "blockIdx.y") < 0 ||
      sch_bind(s, epi, oho, "blockIdx.x") < 0 || sch_bind(s, epi, ty, "threadIdx.y") < 0 ||
      sch_bind(s, epi, tx, "threadIdx.x") < 0)
    return -1;
  sch_wmma w = {.bm = c->bm, .bn = (int32_t)bn, .bk = c->bk, .wm = c->wm, .wn = c->wn};
  if (sch_compute_at(s, red, epi, oho) < 0 || sch_set_scope(s, red, TIR_SHARED) < 0 || sch_tensorize_wmma(s, red, &w) < 0)
    return -1;
  red->template_name = epi->template_name = "gpu_conv_tc";
  return 0;
}
