/* sched_conv.c — the direct-convolution template for conv_nchwc, after NeoCPU
 * (and TVM's conv2d_NCHWc x86 schedule). The output y[n, mo, oh, ow, mi] is cut
 * into register tiles of ow_tile pixels along W × the mi block (oc_vecs vectors).
 * For each tile the reduction runs input-channel blocks → kernel rows → kernel
 * columns → channels in the block, and innermost the tile: one broadcast of an
 * input value per pixel and one vector load of packed weights per vector, then
 * ow_tile · oc_vecs FMAs into accumulators LLVM keeps in registers. The epilogue
 * (bias is in the reduction; activation, residual add…) reads the tile from
 * registers. The tiles (n, mo, oh, ow/ow_tile) are fused into one parallel loop.
 * A depthwise conv has no channel reduction: its taps load input vectors.
 * The zero-padded input (stage tag "conv_pad") is a stage, so the inner loops
 * carry no bounds test: computed once, in parallel, before the convolution, or
 * (depthwise) per tile, where the few rows a tile reads stay in L1 instead of a
 * padded copy of the whole input going out to memory and back; or (vec_ow) not at
 * all: the row's vectors read through the bounds test as masked loads.
 * Knobs the tuner may set split further: oh_tile rows per register tile (a tile of
 * oh_tile x ow_tile pixels), the kernel columns or the block's input channels
 * unrolled by a factor (unroll_kw, ic_unroll). With px_flat the pixels are one axis
 * (the reduction flattened, sch_flatten; the epilogue's oh and ow fused): tiles of
 * ow_tile pixels run across row ends, so rows of 7 pixels in tiles of 6 leave one
 * ragged tile per image, not one per row.
 * The weights are read from memory once and then reused from cache over a window
 * (the rows of an output block; with image_tile the rows of an input block); the
 * next window's weights are prefetched while the current one computes.
 * A conv with a few output channels (the layout gives it blocks of one channel:
 * plain NCHW, in and out) would fill a vector with too few of them; with vec_ow the
 * tile is instead all M channels × ow_tile pixels, the pixels in vectors: each
 * input vector (contiguous at stride 1) is loaded once for M FMAs with broadcast
 * weights — an image's 3 output channels, a generator's last layer; at stride 2 a
 * depthwise conv whose channels fill no half vector (the layout gives it plain NCHW). */
#include <string.h>
#include "templates.h"

/* A conv_nchwc node's per-axis attribute (strides or dilations) along H (axis 0) or W
 * (axis 1); 1 for anything else. */
static int64_t conv_attr(const gir_node *n, const char *name, int axis) {
  int32_t ns;
  const int64_t *sv = n && n->op == GIR_OP_conv_nchwc ? gir_attr_ints(n, name, &ns) : NULL;
  return sv && ns == 2 ? sv[axis] : 1;
}
static int64_t conv_stride(const gir_node *n, int axis) { return conv_attr(n, "strides", axis); }

/* The register-tile work of covering an oh x ow map with tiles of r rows x w pixels
 * (the last tile of each row group ragged) where each pixel holds two or more vectors
 * (FMA-bound tiles), in accumulator-steps: a tile of p pixels
 * and v vectors each costs its p·v accumulators but at least 10 (fewer leave the FMA
 * units waiting on their latency: two FMAs a cycle, four cycles each, and the loads
 * between), plus one pixel's worth for the tile itself (its loop, the weights' and
 * inputs' addresses). Tiles over the flattened pixels (px_flat) pay one pixel more:
 * each of their pixels has an address of its own. On the AMD EPYC (Zen 3), one core,
 * ResNet-18's 3x3 convs: at 7x7 the flat tiles of 6 (142 against 182 for rows of 6 and
 * a ragged pixel: 3.9 -> 3.0 ms); at 14x14 tiles of 2 rows x 3 pixels (476 against 560
 * for rows of 6, 6 and 2: 1.84 -> 1.64 ms); at 28x28 rows of 6 and a ragged 4 (1904
 * against 2352 for rows of 4: 1.70 -> 1.57 ms). */
static int64_t tile_work(int64_t px, int64_t v) { return (px * v > 10 ? px * v : 10) + v; }

static int64_t rows_work(int64_t oh, int64_t ow, int64_t r, int64_t w, int64_t v) {
  return oh / r * (ow / w * tile_work(r * w, v) + (ow % w ? tile_work(r * (ow % w), v) : 0));
}

static int64_t flat_work(int64_t px, int64_t w, int64_t v) {
  return px / w * (tile_work(w, v) + v) + (px % w ? tile_work(px % w, v) + v : 0);
}

/* Whether one output block's weights of conv n (output o, [N, M/ob, ...]) pass 32 KiB of
 * L1. */
static int block_weights_pass_l1(const gir_node *n, const te_tensor *o) {
  return gir_value_nbytes(n->in[1]) / o->shape[1] > 32 * 1024;
}

/* The shape half of the whole-image rule for a dense float 1x1 conv (o its output
 * [N, M/ob, OH, OW, ob], flat: rows already in flat tiles): stride 1, at least 256 input
 * channels in blocks of at least 8, one step of the input-block loop (the block pair's
 * weights, the input block's padded image, the output block's partial sums) within 32
 * KiB of L1, and with flat tiles only where an output block's weights pass L1. */
static int image_tiles_fit(const gir_node *n, const te_tensor *o, int flat) {
  if (!n || n->op != GIR_OP_conv_nchwc || conv_stride(n, 0) != 1 || conv_stride(n, 1) != 1 || n->n_in < 2 ||
      n->in[1]->shape.rank != 6 || n->in[0]->shape.rank != 5)
    return 0;
  const int64_t *w = n->in[1]->shape.dims, *x = n->in[0]->shape.dims; /* [MO, CB, KH, KW, icb, ob] */
  if (w[4] < 8 || w[1] * w[4] < 256 || (flat && !block_weights_pass_l1(n, o))) return 0;
  int32_t np;
  const int64_t *pd = gir_attr_ints(n, "pads", &np);
  int64_t ih = x[2] + (pd && np == 4 ? pd[0] + pd[2] : 0), iw = x[3] + (pd && np == 4 ? pd[1] + pd[3] : 0);
  int64_t ob = o->shape[4], img_px = o->shape[2] * o->shape[3];
  return 4 * (w[2] * w[3] * w[4] * ob + ih * iw * w[4] + img_px * ob) <= 32 * 1024;
}

lower_conv_cfg lower_conv_default(const sch_stage *red, const lower_target *t) {
  const te_tensor *o = red->t; /* [N, M/ob, OH, OW, ob] */
  int64_t ow = o->shape[3], ob = o->shape[4];
  lower_conv_cfg c = {.ow_tile = 1, .oc_vecs = 1, .vec = t->vec_f32, .unroll_kw = 0, .parallel = 1, .oc_blocks = 1,
                      .oh_tile = 1, .ic_unroll = 1};
  if (o->dtype != GIR_F32 && o->dtype != GIR_I32) c.vec = 1; /* float32, or int32 sums of 8-bit products */
  while (c.vec > 1 && ob % c.vec) c.vec /= 2;
  c.oc_vecs = (int32_t)(ob / c.vec);
  if (c.oc_vecs > 4) c.oc_vecs = 4;
  /* pixels per tile: the largest divisor of OW the registers allow (accumulators,
   * the weight vectors, one broadcast) */
  /* scalar int32 accumulators (8-bit convs on a scalar target) live in the integer
   * registers: about 12 on Thumb-2, whatever the FPU has */
  int32_t regs = c.vec == 1 && o->dtype == GIR_I32 && t->vec_f32 == 1 ? 12 : t->vec_regs;
  int64_t max_px = (regs - c.oc_vecs - 1) / c.oc_vecs;
  if (max_px < 1) max_px = 1;
  if (max_px > 14) max_px = 14;
  /* a strided depthwise conv: tiles of two pixels. Its kernel columns are unrolled
   * (below), so a tile of T pixels keeps (T - 1)·stride + KW input vectors of a row live
   * at once beside T accumulators and KW weights, which at T = 14 spill; two pixels
   * stay in registers (the tuner's best for three of four stride-2 depthwise classes was
   * 2-4 pixels, the fourth within 6% at 3: 5x5 on 240 channels 45 -> 27 us on one core; MobileNetV2 2.91 -> 2.79-2.84
   * ms, EfficientNet-B0 5.07 -> 4.95 on two threads) */
  int dw = red->n_reduce == 2;
  /* a float depthwise conv where masked loads are single instructions and there are 16
   * vector registers (x86 AVX2): no padded copy at all (pad_tile 2, below) and about six
   * accumulators, 3 pixels of a two-vector block or 6 of one, the last tile ragged. The
   * per-tile copy of the padded window (35 vector copies for a 5x5 stride-2 tile's 100
   * FMAs) had the load port busier than the FMAs; read through the bounds test instead,
   * each tap of a border pixel is a masked load. On the AMD EPYC (Zen 3), one core, 21
   * depthwise layers of MobileNetV2 / EfficientNet shapes (3x3 and 5x5, stride 1 and 2,
   * 24-1152 channels, 7x7 to 112x112): 0.45-0.97x the time of the better of the former
   * tilings, 5x5 stride 2 on 240 channels at 28x28 79 -> 40 us, 3x3 on 144 at 56x56
   * 194 -> 124 us. AVX-512 keeps the tiles below (not measured this way). */
  int dw_masked = dw && t->masked_loads && t->vec_regs <= 16 && o->dtype == GIR_F32;
  if (dw_masked) max_px = 6 / c.oc_vecs > 1 ? 6 / c.oc_vecs : 1;
  else if (dw && conv_stride(o->origin, 1) > 1) max_px = 2;
  /* a stride-1 depthwise conv: for a 3x3 kernel at most a quarter of the registers
   * as accumulators (tiles of 4 pixels for blocks of two vectors, 8 for one), for a
   * wider one half. The (T - 1) + KW input vectors of a row its unrolled kernel
   * columns keep live come on top, and with T = 14 LLVM spilled: on two threads 3x3
   * over 192 channels at 28x28 55 -> 19 us (T = 4), 384 at 14x14 21 -> 11 us (T = 2),
   * 960 at 7x7 14 -> 7 us (T = 4, a ragged tail), 144 at 56x56 (one vector) 157 ->
   * 131 us (T = 8); 5x5 over 672 at 14x14 72 -> 57 us (T = 7; T = 2 lost in the model) */
  else if (dw) {
    int64_t acc = t->vec_regs / (red->reduce_axes[1]->extent <= 3 ? 4 : 2);
    max_px = acc / c.oc_vecs > 1 ? acc / c.oc_vecs : 1;
  }
  if (dw_masked) c.ow_tile = (int32_t)(ow < max_px ? ow : max_px); /* ragged beat smaller divisors */
  else {
    for (int64_t p = max_px; p >= 1; p--)
      if (ow % p == 0) {
        c.ow_tile = (int32_t)p;
        break;
      }
    /* no divisor worth having: a guarded tail beats tiny tiles (a depthwise conv's
     * small tiles are a choice: only a single pixel is too small) */
    if (c.ow_tile < (dw ? 2 : 4) && ow > max_px) c.ow_tile = (int32_t)(max_px < 8 ? max_px : 8);
  }
  /* a dense float conv on 16 vector registers whose rows no tile of max_px pixels
   * divides: the least work (tile_work, above) of those tiles, rows in tiles of max_px
   * with a ragged last one, or two rows of max_px / 2 (AVX-512's 32 registers keep the
   * rows: not measured there) */
  int64_t oh = o->shape[2];
  if (!dw && red->n_reduce == 4 && o->dtype == GIR_F32 && c.vec > 1 && c.oc_vecs >= 2 && t->vec_regs <= 16 &&
      ow > max_px && ow % max_px) {
    int64_t v = c.oc_vecs, best = rows_work(oh, ow, 1, c.ow_tile, v), w2 = max_px / 2;
    int64_t ragged = rows_work(oh, ow, 1, max_px, v);
    if (ragged < best) {
      best = ragged;
      c.ow_tile = (int32_t)max_px;
    }
    if (oh % 2 == 0 && w2 >= 2 && rows_work(oh, ow, 2, w2, v) < best) {
      c.ow_tile = (int32_t)w2;
      c.oh_tile = 2;
    }
  }
  /* depthwise (no channel reduction): each tile's padded rows are its own (on AVX2 no
   * padded rows at all, above), and the kernel columns unrolled let LLVM load each input vector of a row once for the
   * (up to) kw taps that read it, instead of once per tap */
  c.unroll_kw = dw;
  c.pad_tile = dw_masked ? 2 : dw;
  /* images of at most 64 pixels (ResNet's 7x7 stage) whose rows are one tile wide, when
   * there are output blocks enough for every thread to get four (fewer, as
   * MobileNet's 160 channels in 5 blocks, split 3:2 over two threads). A kernel
   * wider than 1x1 reads each input row for several output rows and each weight
   * window for every row: there whole images pay up to the size whose partial sums of
   * one output block still fit in 32 KiB of L1 (14x14 x 32 channels) — ResNet-50's
   * 3x3 stride-2 conv to 14x14 x 256 went from ~740 to ~670 us on two threads, where
   * the 1x1 convs at 14x14 ran the same or up to 10% slower as whole images */
  int64_t kpix = red->n_reduce == 4 ? red->reduce_axes[1]->extent * red->reduce_axes[2]->extent : 1;
  int64_t img_px = o->shape[2] * ow;
  c.image_tile = red->n_reduce == 4 && (img_px <= 64 || (kpix > 1 && img_px * ob * 4 <= 32 * 1024)) &&
                 c.ow_tile == ow && o->shape[2] > 1 && o->shape[0] * o->shape[1] >= 4 * (int64_t)t->threads;
  const gir_node *n = o->origin;
  if (!c.image_tile && red->n_reduce == 4 && o->shape[1] > 1 && n && n->op == GIR_OP_conv_nchwc)
    c.pixel_outer = gir_value_nbytes(n->in[0]) > gir_value_nbytes(n->in[1]);
  /* a grouped conv with one output block per group (ResNeXt's 32 groups of 8): no other
   * tile reads a tile's input block, so its padded rows are made per tile, in L1, instead
   * of a padded copy of the whole input going out and back (32 x 8 channels at 28x28,
   * stride 2: 0.206 -> 0.165 ms on one core; 3 groups of 24, three blocks reading each
   * input block, lost 7% that way) */
  int64_t groups = n && n->op == GIR_OP_conv_nchwc ? gir_attr_int(n, "group", 1) : 1;
  if (red->n_reduce == 4 && groups > 1 && groups == o->shape[1]) c.pad_tile = 1;
  /* rows that end in a ragged tile (7 or 13 pixels in tiles of 6) and a map of them: the
   * pixels one axis (px_flat), in tiles that run across row ends, where that is less work
   * (tile_work: a 7x7 map in 9 tiles, not 14). On the AMD EPYC (Zen 3), one core:
   * ResNet-18's 3x3 convs at 7x7 (512 -> 512) 3.9 -> 3.0 ms and 256 -> 512 stride 2
   * 2.0 -> 1.7; at 14x14 (33 tiles against 42 of rows) no faster, and two-row tiles are
   * less work. The parallel loop is then the images' output blocks alone (the tiles of
   * an image stay a loop of their own, its ragged last one cut off by loop partition):
   * only where they are four per thread or share out evenly */
  if (red->n_reduce == 4 && !c.image_tile && !c.pixel_outer && !c.pad_tile && c.vec > 1 &&
      (ow % c.ow_tile || c.oh_tile > 1)) {
    int64_t v = c.oc_vecs, rows = c.oh_tile > 1 ? c.oh_tile : 1, par = o->shape[0] * o->shape[1], th = t->threads;
    /* one vector per pixel (blocks of 8 on AVX2): a broadcast per FMA, load-bound, where
     * tile_work does not hold — there flat tiles of the same width where they cut the
     * tile count by a quarter */
    int flat = v >= 2 ? flat_work(oh * ow, max_px, v) < rows_work(oh, ow, rows, c.ow_tile, v)
                      : 4 * ((oh * ow + c.ow_tile - 1) / c.ow_tile) <= 3 * oh * ((ow + c.ow_tile - 1) / c.ow_tile);
    if (flat && (th <= 1 || par >= 4 * th || par % th == 0)) {
      c.px_flat = 1;
      if (v >= 2) c.ow_tile = (int32_t)max_px;
      c.oh_tile = 1;
    }
  }
  /* a small image whose rows need more than one register tile (16 vector registers: at
   * most 6 pixels of a two-vector block): whole images per output block all the same
   * (image_tile), the input-channel blocks outside flat tiles of max_px pixels, where
   * what one step of the input-block loop touches fits L1 — the block pair's weights,
   * the input block's padded image and the output block's partial sums. Each tile's
   * weights then come from L1, not streamed from L2 once per tile. On the AMD EPYC (Zen
   * 3), ResNet-50's 1x1 conv 1024 -> 256 at 14x14 (26 KiB): 1.05 -> 0.77 ms on two
   * threads, 1.66 -> 1.46 on one; 2048 -> 512 at 7x7 0.92 -> 0.78 on two; 512 -> 2048
   * at 7x7 the same; a stride-2 1x1 from 28x28 (its input block 50 KiB) 1.8 -> 2.2,
   * hence the bound. In ResNet-50 on two threads, kernel by kernel: the
   * 1x1 convs at 14x14 (from two-row tiles) 0.78-0.86x, at 7x7 from 2048 channels (128
   * KiB of weights per output block, past L1) 0.88x — but from 512 channels (their 32
   * KiB already in L1 with flat tiles) 1.08x and strided from 14x14 1.25x: those keep
   * their tiles; so do convs over fewer than 256 input channels or in blocks of fewer
   * than 8 (MobileNetV2's 96 -> 576 at 14x14 1.14x, ShuffleNetV2's 116 -> 128 in blocks
   * of 4 1.25x: a tile's partial sums loaded and stored for every few FMAs). 3x3 convs at
   * 7x7 take whole images by the rule below */
  if (red->n_reduce == 4 && kpix == 1 && !c.image_tile && !c.pad_tile && o->dtype == GIR_F32 && c.vec > 1 &&
      c.oc_vecs >= 2 && t->vec_regs <= 16 && ow > max_px && o->shape[0] * o->shape[1] >= 4 * (int64_t)t->threads &&
      image_tiles_fit(n, o, c.px_flat)) {
    c.image_tile = 1;
    c.px_flat = 1;
    c.pixel_outer = 0;
    c.ow_tile = (int32_t)max_px;
    c.oh_tile = 1;
  }
  /* the same for a wider kernel (3x3) over a map of at most 64 pixels in flat tiles (7x7
   * in tiles of 6 on AVX2, whose rows no register tile holds whole — AVX-512's tiles of 7
   * take the rule above): an output block's weights, 9 taps' worth, pass L1 from 57
   * input channels on, and flat tiles stream all of them from L2 once per tile, 9 times
   * per block for a 7x7 map. On the AMD EPYC (Zen 3), two threads: ResNet-50's 3x3
   * stride-2 conv 512 -> 512 to 7x7 2.04 -> 1.84 ms; ResNet-18's 256 -> 512 to 7x7 1.01
   * -> 1.00; 3x3 stride 1 over 512 at 7x7 (C12 direct, --winograd off) 1.96 -> 1.84 (3.84
   * -> 3.30 on one thread) */
  if (red->n_reduce == 4 && kpix > 1 && c.px_flat && !c.image_tile && !c.pad_tile && !c.pixel_outer &&
      img_px <= 64 && o->shape[2] > 1 && o->shape[0] * o->shape[1] >= 4 * (int64_t)t->threads &&
      n && n->n_in > 1 && block_weights_pass_l1(n, o))
    c.image_tile = 1;
  /* with pixels outside, every tile reuses all the weights from L2: no window to fetch
   * ahead for; with rows in the tile, the windows are not counted by rows */
  c.prefetch = red->n_reduce == 4 && !c.pixel_outer && c.oh_tile <= 1;
  /* a dense float conv's kernel columns and block channels one loop (fuse_kw): with a
   * kernel row's KW loops of icb steps each, a 3x3 conv's innermost loop (icb 16, two
   * channels per unrolled step) ran 8 steps of 24 FMAs, then a loop exit and the next
   * column's addresses and prefetches (LLVM unrolls the three columns, not the exits
   * between them). On the AMD EPYC (Zen 3), one core,
   * kernel medians of 30 interleaved rounds: 256 -> 512 stride 2 from 14x14
   * (ResNet-18's C10) 1.93 -> 1.69 ms, 128 -> 256 stride 2 from 28x28 (C7) 1.83 ->
   * 1.75; in ResNet-50 (20 rounds) its 512-channel stride-2 conv to 7x7 0.95x, the
   * other stride-2 3x3s and the 7x7 stem 0.99x. Blocks of at least 8 input channels: a
   * stem's 3 channels (3x3 on 128x128, 24 outputs) went 1.10x slower fused — LLVM
   * unrolls a 3-channel loop whole. Dilation 1 only (a dilated row's taps are not one
   * run); AVX-512 keeps the loops (not measured there) */
  if (red->n_reduce == 4 && o->dtype == GIR_F32 && c.vec > 1 && t->vec_regs <= 16 &&
      red->reduce_axes[2]->extent > 1 && red->reduce_axes[3]->extent >= 8 && conv_attr(n, "dilations", 1) == 1)
    c.fuse_kw = 1;
  /* one channel per block, stride 1 or 2 along W: vectors along the row (at stride 2 each
   * tap's pixels one span load and a shuffle), all M channels in the tile */
  int64_t M = o->shape[1], sw = conv_stride(n, 1);
  int32_t lanes = t->vec_f32;
  if (ob == 1 && red->n_reduce == 4 && (sw == 1 || sw == 2) && lanes > 1 && o->dtype == GIR_F32) {
    /* a row narrower than a vector: half vectors (at stride 2 only a row of half a vector
     * or less: each tap's span load reads two vectors' worth whatever the lanes) */
    while (lanes > 4 && (sw == 2 ? 2 * ow <= lanes : ow < lanes)) lanes /= 2;
    /* more channels than registers (a grouped conv of 4 x 34): tiles of up to 8 channels,
     * a divisor of M where one is at least 4, else a ragged last tile */
    int64_t mt = M;
    if (M > t->vec_regs - 2) {
      mt = 8;
      for (int64_t d = 8; d >= 4; d--)
        if (M % d == 0) {
          mt = d;
          break;
        }
    }
    int64_t max = (t->vec_regs - 2) / mt, need = (ow + lanes - 1) / lanes, vecs = 1;
    if (max > 4) max = 4;
    /* a row in one tile, else the most vectors that divide the row's (the tiles of a
     * row are a loop of their own, so a ragged last one gets its own copy) */
    if (need <= max) vecs = need;
    else
      for (int64_t v = max; v >= 1; v--)
        if (need % v == 0) {
          vecs = v;
          break;
        }
    if (vecs == 1 && max >= 2 && need > max) vecs = max;
    /* no padded copy at all: the taps read the input through the bounds test, which
     * the vector row turns into masked loads (the padding's lanes never loaded) — a
     * stride-2 deconv's phases, 64 -> 3 channels at 64x64, 0.38 -> 0.20 ms on one core
     * against a padded copy per row tile; 7x7 64 -> 3 at 64x64 0.57 -> 0.52 ms against
     * one padded copy. (Blocked convs keep the copy: their padding test is on pixels,
     * outside the vector of channels.) A target without masked loads pads per row tile
     * when each input row is copied at most twice (kernels of one or two rows: the
     * deconv's phases 64 -> 43 us each), else once for all (a 3x3 conv 32 -> 3 at
     * 128x128: 173 us against 212 per tile) */
    int32_t pad_tile = t->masked_loads ? 2 : red->reduce_axes[1]->extent <= 2;
    if (max >= 1) {
      c = (lower_conv_cfg){.ow_tile = (int32_t)(vecs * lanes), .oc_vecs = 1, .vec = lanes, .parallel = 1, .vec_ow = 1,
                           .oc_tile = mt < M ? (int32_t)mt : 0, .oc_blocks = 1, .pad_tile = pad_tile,
                           .unroll_kw = sw == 2};
    }
  }
  return c;
}

/* The padded input: computed at the root, rows in parallel, channels vectorized;
 * or, with cfg->pad_tile, at each tile (before the reduction computed there), over
 * the rows and columns that tile reads. */
static int sched_pad(sch_schedule *s, sch_stage *red, sch_stage *epi, sch_iter *tile, const lower_conv_cfg *cfg) {
  int32_t vec = cfg->vec;
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *p = s->stages[i];
    if (p->attach != SCH_ROOT || p->n_rels || !p->t->tag || strcmp(p->t->tag, "conv_pad") || !sch_reads(red, p))
      continue;
    if (p->n_root != 5) continue;
    if (cfg->pad_tile == 2) { /* no padded copy: the taps read through the bounds test (masked loads) */
      if (sch_compute_inline(s, p) < 0) return -1;
      continue;
    }
    if (cfg->pad_tile) {
      if (sch_compute_at(s, p, epi, tile) < 0) return -1;
      sch_iter *ci = p->leaf[p->n_leaf - 1], *co, *cv;
      if (vec > 1 && ci->extent % vec == 0 &&
          (sch_split(s, p, ci, vec, &co, &cv) < 0 || sch_annotate(s, p, cv, TIR_VECTORIZED) < 0))
        return -1;
      continue;
    }
    sch_iter *rows;
    if (sch_fuse(s, p, p->leaf[0], p->leaf[1], &rows) < 0 || sch_fuse(s, p, rows, p->leaf[1], &rows) < 0) return -1;
    if (sch_annotate(s, p, rows, TIR_PARALLEL) < 0) return -1;
    sch_iter *ci = p->leaf[p->n_leaf - 1];
    if (vec > 1 && ci->extent % vec == 0) {
      sch_iter *co, *cv;
      if (sch_split(s, p, ci, vec, &co, &cv) < 0 || sch_annotate(s, p, cv, TIR_VECTORIZED) < 0) return -1;
    }
  }
  return 0;
}

/* The packed weights: the rank-6 kernel input the reduction loads. */
static te_tensor *packed_weights(const te_expr *e) {
  if (!e) return NULL;
  te_tensor *t = NULL;
  switch (e->kind) {
  case TE_LOAD:
    return e->u.load.t->kind == TE_PLACEHOLDER && (e->u.load.t->rank == 6 || e->u.load.t->rank == 7) ? e->u.load.t
                                                                                                      : NULL;
  case TE_UNARY: return packed_weights(e->u.un.a);
  case TE_BINARY: return (t = packed_weights(e->u.bin.a)) ? t : packed_weights(e->u.bin.b);
  case TE_CAST: return packed_weights(e->u.cast.a);
  case TE_REDUCE: return packed_weights(e->u.red.src);
  default: return NULL;
  }
}

/* fuse_kw in effect: on a float conv's kernel columns and channel block (not a depthwise
 * conv's taps, not 8-bit quads, not vec_ow's rows: nothing to fuse there, so `--knobs
 * conv:fuse_kw=1` leaves them as they are), and yielding to the knobs that split the
 * loops it would fuse (so that `--knobs conv:ic_unroll=4` means what it says beside the
 * default's fuse_kw) */
static int fuses_kw(const lower_conv_cfg *cfg, const sch_stage *red) {
  const te_tensor *w = packed_weights(red->body);
  return cfg->fuse_kw && !cfg->unroll_kw && cfg->ic_unroll <= 1 && !cfg->vec_ow && red->n_reduce == 4 &&
         !(w && w->rank == 7);
}

int lower_prefetch_ahead(sch_schedule *s, sch_stage *st, sch_iter *at, te_tensor *t, te_expr *next, te_expr *u,
                         int64_t steps, int64_t elems) {
  te_ctx *c = s->te;
  int64_t line = 64 / (int64_t)gir_dtype_size(t->dtype);
  if (line < 1) line = 1;
  int64_t lines = (elems + line - 1) / line;
  if (steps < 1 || lines < 1) return 0;
  if (lines <= steps) /* one line every steps/lines steps: step u fetches line u·lines/steps */
    return sch_prefetch(s, st, at, t, te_add(c, next, te_mul(c, te_div(c, te_mul(c, u, te_int(c, lines)), te_int(c, steps)), te_int(c, line))), 1, line);
  int64_t per = (lines + steps - 1) / steps;
  if (per > 16) per = 16; /* more would stall the loads; the rest comes on demand */
  return sch_prefetch(s, st, at, t, te_add(c, next, te_mul(c, u, te_int(c, per * line))), (int32_t)per, line);
}

/* cfg->prefetch: at each kernel column (kw loop) of the reduction, the u-th share
 * of the next window's weights (lower_prefetch_ahead), where u counts the kernel
 * columns of the current window:
 *   rows of a block (the tile is one row piece of output block mo; the next window
 *   is block mo + 1, S floats on): u = ((oh·OWO + owo)·CB + ib)·KH·KW + kh·KW + kw;
 *   image_tile (the window is input block ib, reused by every row; the next one
 *   follows it in memory): u = (oh·KH + kh)·KW + kw. */
static int sched_prefetch(sch_schedule *s, sch_stage *red, const lower_conv_cfg *cfg) {
  te_tensor *w = packed_weights(red->body);
  if (!w || red->n_reduce != 4 || cfg->pixel_outer || cfg->oc_blocks > 1 || cfg->oh_tile > 1 ||
      (cfg->unroll_kw > 1 && cfg->unroll_kw < red->reduce_axes[2]->extent))
    return 0;
  te_ctx *c = s->te;
  const te_tensor *o = red->t;
  int64_t MO = w->shape[0], CB = w->shape[1], KH = w->shape[2], KW = w->shape[3],
          blk = w->shape[4] * w->shape[5] * (w->rank == 7 ? w->shape[6] : 1);
  /* px_flat: the pixels one axis (o is [N, M/ob, OH·OW, ob]), a single "row" of tiles */
  int flat = cfg->px_flat != 0;
  int64_t S = CB * KH * KW * blk, OH = flat ? 1 : o->shape[2],
          OWO = (o->shape[3 - flat] + cfg->ow_tile - 1) / cfg->ow_tile;
#define V(x) te_v(c, (x)->root)
  te_expr *mo = V(red->root_axes[1]), *oh = flat ? te_int(c, 0) : V(red->root_axes[2]), *ib = V(red->reduce_axes[0]);
  /* the steps: kernel columns, or with fuse_kw (no column loop left) kernel rows */
  int fused = fuses_kw(cfg, red);
  sch_iter *at = fused ? red->reduce_axes[1] : red->reduce_axes[2];
  te_expr *col = fused ? V(red->reduce_axes[1])
                       : te_add(c, te_mul(c, V(red->reduce_axes[1]), te_int(c, KW)), V(red->reduce_axes[2]));
  int64_t taps = fused ? KH : KH * KW;
  if (cfg->image_tile) { /* the window's steps: rows (or the flat pixels) x tiles x kh x kw */
    te_expr *next = te_mul(c, te_add(c, te_add(c, te_mul(c, mo, te_int(c, CB)), ib), te_int(c, 1)), te_int(c, KH * KW * blk));
    te_expr *tile = te_add(c, te_mul(c, oh, te_int(c, OWO)),
                           OWO > 1 ? te_div(c, V(red->root_axes[3 - flat]), te_int(c, cfg->ow_tile)) : te_int(c, 0));
    te_expr *u = te_add(c, te_mul(c, tile, te_int(c, taps)), col);
    return lower_prefetch_ahead(s, red, at, w, next, u, OH * OWO * taps, KH * KW * blk);
  }
  if (MO < 2) return 0;
  te_expr *tile =
      te_add(c, te_mul(c, oh, te_int(c, OWO)), te_div(c, V(red->root_axes[3 - flat]), te_int(c, cfg->ow_tile)));
  te_expr *next = te_mul(c, te_add(c, mo, te_int(c, 1)), te_int(c, S));
  te_expr *u = te_add(c, te_mul(c, te_add(c, te_mul(c, tile, te_int(c, CB)), ib), te_int(c, taps)), col);
#undef V
  return lower_prefetch_ahead(s, red, at, w, next, u, OH * OWO * CB * taps, S);
}

/* vec_ow: rows (n, oh) in parallel, the row's tiles of ow_tile pixels in a loop of
 * their own (the loop-partition pass gives a ragged last tile its own copy, so the
 * others carry no bounds test); in a tile the reduction runs (cb, kh, kw, ic)
 * outside and M channels × ow_tile pixels (vectors) inside. With oc_tile, tiles of
 * oc_tile channels, their loop outside the pixel tiles (the row's input stays in L1
 * for all of them). */
static int sched_conv_vec_ow(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_conv_cfg *cfg) {
  if (red->n_reduce != 4 || epi->root_axes[4]->extent != 1 || cfg->vec < 2 || cfg->ow_tile % cfg->vec)
    return gir_errf(s->err, "conv template: vec_ow needs one channel per block and whole vectors per tile");
  sch_iter *owo, *owi, *owio, *owiv, *mo = NULL, *mi = epi->root_axes[1];
  if (sch_split(s, epi, epi->root_axes[3], cfg->ow_tile, &owo, &owi) < 0) return -1;
  if (cfg->oc_tile > 0 && cfg->oc_tile < mi->extent && sch_split(s, epi, mi, cfg->oc_tile, &mo, &mi) < 0) return -1;
  sch_iter *order[6];
  int no = 0;
  order[no++] = epi->root_axes[2];
  if (mo) order[no++] = mo;
  order[no++] = owo;
  order[no++] = mi;
  order[no++] = owi;
  order[no++] = epi->root_axes[4];
  if (sch_reorder(s, epi, order, no) < 0) return -1;
  sch_iter *rows = lower_fuse_through(s, epi, epi->root_axes[2]);
  if (!rows) return gir_errf(s->err, "conv template: cannot fuse the row loops of %s", epi->t->name);
  if (mo && sch_fuse(s, epi, rows, mo, &rows) < 0) return -1; /* rows x channel tiles: the parallel work */
  if (cfg->parallel && rows->extent > 1 && sch_annotate(s, epi, rows, TIR_PARALLEL) < 0) return -1;
  if (sch_split(s, epi, owi, cfg->vec, &owio, &owiv) < 0 || sch_annotate(s, epi, owiv, TIR_VECTORIZED) < 0) return -1;
  if (sch_compute_at(s, red, epi, owo) < 0 || sched_pad(s, red, epi, owo, cfg) < 0) return -1;
  sch_iter *m = red->root_axes[1], *ow = red->root_axes[3], *ow_o, *ow_v;
  if (sch_split(s, red, ow, cfg->vec, &ow_o, &ow_v) < 0) return -1;
  sch_iter *rorder[8] = {red->reduce_axes[0], red->reduce_axes[1], red->reduce_axes[2], red->reduce_axes[3],
                         m, ow_o, ow_v, red->root_axes[4]};
  if (sch_reorder(s, red, rorder, 8) < 0) return -1;
  /* unroll_kw: a row's taps straight-line, where the backend loads the span their
   * strided vectors share once (targets/llvm/llvm_window.c) */
  if (cfg->unroll_kw && sch_annotate(s, red, red->reduce_axes[2], TIR_UNROLLED) < 0) return -1;
  if (sch_annotate(s, red, m, TIR_UNROLLED) < 0 || sch_annotate(s, red, ow_o, TIR_UNROLLED) < 0 ||
      sch_annotate(s, red, ow_v, TIR_VECTORIZED) < 0)
    return -1;
  return 0;
}

int lower_sched_conv(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_conv_cfg *cfg) {
  if (epi->n_root != 5) return gir_errf(s->err, "conv template: %s is not in NCHWc", red->t->name);
  if (cfg->vec_ow) return sched_conv_vec_ow(s, red, epi, cfg);
  sch_iter *owo, *owi, *last, *mob = epi->root_axes[1], *moi = NULL, *oho = epi->root_axes[2], *ohi = NULL;
  /* px_flat: the reduction's (oh, ow) one axis of pixels, and the epilogue's fused
   * the same way, so that a tile of ow_tile pixels may run across a row's end and
   * the reduction attached at it covers just its pixels (sch_flatten) */
  sch_iter *pix = epi->root_axes[3];
  int flat = cfg->px_flat != 0;
  if (flat) {
    if (red->n_reduce != 4 || cfg->pixel_outer || cfg->oh_tile > 1 || cfg->pad_tile)
      return gir_errf(s->err, "conv template: px_flat is for a dense conv's row tiles (not with pixel_outer, "
                              "oh_tile or pad_tile)");
    if (!(red = sch_flatten(s, red, 2)) || sch_fuse(s, epi, epi->root_axes[2], epi->root_axes[3], &pix) < 0) return -1;
    oho = NULL;
  }
  if (sch_split(s, epi, pix, cfg->ow_tile, &owo, &owi) < 0) return -1;
  /* oh_tile: the tile's rows an inner loop of their own, outside its pixels */
  if (cfg->oh_tile > 1 && !cfg->image_tile) {
    if (oho->extent % cfg->oh_tile)
      return gir_errf(s->err, "conv template: oh_tile %d does not divide the %lld output rows of %s", cfg->oh_tile,
                      (long long)oho->extent, epi->t->name);
    if (sch_split(s, epi, epi->root_axes[2], cfg->oh_tile, &oho, &ohi) < 0) return -1;
  }
  /* oc_blocks: the tile's blocks an inner loop of their own, beside its pixels */
  if (cfg->oc_blocks > 1) {
    if (mob->extent % cfg->oc_blocks)
      return gir_errf(s->err, "conv template: oc_blocks %d does not divide the %lld output blocks of %s",
                      cfg->oc_blocks, (long long)mob->extent, epi->t->name);
    if (sch_split(s, epi, epi->root_axes[1], cfg->oc_blocks, &mob, &moi) < 0) return -1;
  }
  /* a row no tile width divides (a prime like 37): the row's tiles stay a loop of
   * their own inside the parallel loop, which the loop-partition pass cuts into the
   * full tiles (no bounds test) and the ragged last one (straight-line code for its
   * few pixels) — fused into the parallel loop, every tile would carry the tests */
  int ragged = !cfg->image_tile && pix->extent % cfg->ow_tile != 0;
  /* the tile: (n, mo) with image_tile, (n, oh, ow / ow_tile, mo) with pixel_outer,
   * else (n, mo, oh, ow / ow_tile); ragged: the parallel part stops before ow / ow_tile */
  sch_iter *par_last;
  if (cfg->image_tile) {
    last = par_last = mob;
  } else {
    sch_iter *order[5];
    int no = 0;
    if (oho) order[no++] = oho;
    order[no++] = owo;
    if (cfg->pixel_outer) order[no++] = mob;
    if (moi) order[no++] = moi;
    if (ohi) order[no++] = ohi;
    if (no > 1 && sch_reorder(s, epi, order, no) < 0) return -1;
    last = cfg->pixel_outer ? mob : owo;
    par_last = !ragged ? last : oho ? oho : mob;
  }
  sch_iter *par = lower_fuse_through(s, epi, par_last);
  if (!par) return gir_errf(s->err, "conv template: cannot fuse the tile loops of %s", epi->t->name);
  if (cfg->parallel && par->extent > 1 && sch_annotate(s, epi, par, TIR_PARALLEL) < 0) return -1;
  sch_iter *tile = par_last == last ? par : last;
  sch_iter *mi = epi->leaf[epi->n_leaf - 1];
  if (cfg->vec > 1) {
    sch_iter *mo, *mv;
    if (sch_split(s, epi, mi, lower_math_lanes(epi, mi->extent, cfg->vec), &mo, &mv) < 0 ||
        sch_annotate(s, epi, mv, TIR_VECTORIZED) < 0)
      return -1;
  }
  if (sch_compute_at(s, red, epi, tile) < 0 || sched_pad(s, red, epi, tile, cfg) < 0) return -1;
  /* the register tile: reduction loops outside, pixels × channel vectors inside */
  sch_iter *ow = red->root_axes[3 - flat], *oc = red->root_axes[4 - flat], *oco = NULL, *ocv = oc;
  if (cfg->vec > 1 && sch_split(s, red, oc, cfg->vec, &oco, &ocv) < 0) return -1;
  /* image_tile with tiles narrower than the row (or the flat pixels): the input block's
   * loop outside the tiles, so its weights stay in L1 for every tile of the image */
  sch_iter *img_tiles = NULL;
  if (cfg->image_tile && red->n_reduce == 4 && cfg->ow_tile < ow->extent &&
      sch_split(s, red, ow, cfg->ow_tile, &img_tiles, &ow) < 0)
    return -1;
  /* 8-bit weights in quads of input channels (7-D): each quad's four channels
   * innermost, inside the pixels and channel vectors, so that every accumulator
   * gets its four multiply-adds in a row — one 4-way dot product (tir/pass_dot4.c) */
  const te_tensor *w = packed_weights(red->body);
  sch_iter *quad = NULL, *quads = NULL;
  if (w && w->rank == 7 && red->n_reduce == 4 && sch_split(s, red, red->reduce_axes[3], 4, &quads, &quad) < 0)
    return -1;
  /* scalar lanes (vec 1: Cortex-M4/M7): each output channel's quad innermost, its
   * four multiply-adds in a row on one scalar accumulator (a dot4: SMLAD pairs) */
  int scalar_quad = quad && cfg->vec == 1;
  sch_iter *order[16];
  int n = 0;
  sch_iter *ra[4] = {NULL};
  for (int i = 0; i < red->n_reduce && i < 4; i++) ra[i] = red->reduce_axes[i];
  if (quad) ra[3] = quads;
  /* partial unrolls: the kernel columns by unroll_kw (below KW), the block's input
   * channels by ic_unroll — each loop split, its inner part unrolled right inside */
  int kwi_at = red->n_reduce == 4 ? 2 : 1;
  sch_iter *kwi = NULL, *ici = NULL;
  if (cfg->unroll_kw > 1 && red->n_reduce > kwi_at && cfg->unroll_kw < ra[kwi_at]->extent) {
    if (ra[kwi_at]->extent % cfg->unroll_kw)
      return gir_errf(s->err, "conv template: unroll_kw %d does not divide the kernel's %lld columns", cfg->unroll_kw,
                      (long long)ra[kwi_at]->extent);
    if (sch_split(s, red, ra[kwi_at], cfg->unroll_kw, &ra[kwi_at], &kwi) < 0) return -1;
  }
  if (cfg->ic_unroll > 1 && red->n_reduce == 4 && !quad && cfg->ic_unroll < ra[3]->extent) {
    if (ra[3]->extent % cfg->ic_unroll)
      return gir_errf(s->err, "conv template: ic_unroll %d does not divide the block's %lld input channels",
                      cfg->ic_unroll, (long long)ra[3]->extent);
    if (sch_split(s, red, ra[3], cfg->ic_unroll, &ra[3], &ici) < 0) return -1;
  }
  for (int i = 0; i < red->n_reduce; i++) {
    order[n++] = ra[i];
    /* image_tile: ib, then the rows, then kh, kw, ic */
    if (i == 0 && cfg->image_tile && red->n_reduce == 4) {
      if (!flat) order[n++] = red->root_axes[2];
      if (img_tiles) order[n++] = img_tiles;
    }
    if (i == kwi_at && kwi) order[n++] = kwi;
  }
  if (ici) order[n++] = ici;
  /* oh_tile: the tile's rows outside its pixels */
  if (ohi) order[n++] = red->root_axes[2];
  /* pixels outside the blocks: one broadcast live at a time, used by every block */
  sch_iter *blocks = cfg->oc_blocks > 1 ? red->root_axes[1] : NULL;
  order[n++] = ow;
  if (blocks) order[n++] = blocks;
  if (oco) order[n++] = oco;
  if (quad && !scalar_quad) order[n++] = quad;
  order[n++] = ocv;
  if (scalar_quad) order[n++] = quad;
  if (sch_reorder(s, red, order, n) < 0) return -1;
  if (quad && sch_annotate(s, red, quad, TIR_UNROLLED) < 0) return -1;
  if (sch_annotate(s, red, ow, TIR_UNROLLED) < 0) return -1;
  if (ohi && sch_annotate(s, red, red->root_axes[2], TIR_UNROLLED) < 0) return -1;
  if (ici && sch_annotate(s, red, ici, TIR_UNROLLED) < 0) return -1;
  if (kwi && sch_annotate(s, red, kwi, TIR_UNROLLED) < 0) return -1;
  if (blocks && sch_annotate(s, red, blocks, TIR_UNROLLED) < 0) return -1;
  if (oco && sch_annotate(s, red, oco, TIR_UNROLLED) < 0) return -1;
  if (cfg->vec > 1 && sch_annotate(s, red, ocv, TIR_VECTORIZED) < 0) return -1;
  if (scalar_quad && ocv->extent > 1 && sch_annotate(s, red, ocv, TIR_UNROLLED) < 0) return -1;
  if (cfg->unroll_kw && !kwi && red->n_reduce > kwi_at) {
    sch_iter *kw = ra[kwi_at];
    if (sch_annotate(s, red, kw, TIR_UNROLLED) < 0) return -1;
  }
  /* fuse_kw: kw and ic one loop (adjacent after the reorder); the bound inference and
   * the simplifier fold the fused loop's (f / icb)·icb + f % icb back into f */
  if (fuses_kw(cfg, red) && sch_fuse(s, red, ra[2], ra[3], NULL) < 0) return -1;
  return cfg->prefetch ? sched_prefetch(s, red, cfg) : 0;
}
