/* templates.h — schedule templates: for each kind of heavy stage (matmul, conv in
 * NCHWc, depthwise conv…) a function that schedules it from a configuration of
 * named knobs, and an analytic rule that picks a good default configuration from
 * the shapes and the target. The knobs are plain data (AutoTVM's "config entity"),
 * so that a tuner (planned) could enumerate and record them; a template never
 * branches on anything but its configuration and the shapes.
 *
 * A template receives the reduction stage and its epilogue: the element-wise
 * stage of the same shape that reads it (bias, activation, residual add…); when
 * there is none, lower_apply_templates makes one by caching the reduction in a
 * register stage (cache_write), so epi is never NULL.
 * The register tile (the accumulators) is the reduction computed at the epilogue's
 * tile loop, so the epilogue runs on values still in registers. */
#ifndef LOWER_TEMPLATES_H
#define LOWER_TEMPLATES_H
#include "schedule.h"

typedef struct lower_tuning lower_tuning;

/* What the templates need to know about the target. */
typedef struct lower_target {
  int32_t vec_f32;  /* float lanes per vector register: 16 AVX-512, 8 AVX2, 4 NEON/SSE, 1 none */
  int32_t vec_regs; /* vector registers: 32 AVX-512 and AArch64, 16 AVX2 and NEON on armv7 */
  int32_t threads;  /* worker threads the runtime usually has */
  int32_t gpu;      /* a GPU (targets/cuda): stages are bound to blocks and threads (sched_gpu.c) */
  int32_t gpu_sms;  /* its multiprocessors (108 for sm_80's A100, 132 for sm_90's H100/H200): the
                       templates pick tiles that give every one of them blocks */
  const lower_tuning *tuning; /* NULL (the default): every schedule is the analytic default (tuning.c) */
  int32_t gpu_tf32; /* a GPU may compute f32 matmuls on tensor cores with TF32 inputs (10-bit mantissas; opt-in:
                       `kiln compile --gpu-math tf32`): sched_gpu_matmul_tc.c */
  int32_t masked_loads; /* vector loads under a lane mask are single instructions (x86 with AVX2 or AVX-512):
                           a padded input is read through its bounds test rather than copied, and a vector
                           loop keeps such a load whole (tir_optimize). Elsewhere LLVM would load lane by lane */
} lower_target;

/* The GPU matmul template (sched_gpu_matmul.c): bm × bn output tiles per block,
 * tm × tn per thread in registers, the reduction in steps of bk over tiles of A
 * and B the block copies into shared memory. */
typedef struct lower_gpu_matmul_cfg {
  int32_t bm, bn, bk; /* block tile and reduction step */
  int32_t tm, tn;     /* thread tile: (bm/tm)·(bn/tn) threads per block, at most 1024 */
} lower_gpu_matmul_cfg;
/* The default tiles: the largest whose grid gives each multiprocessor two blocks;
 * *use 0 when even the smallest leaves most of the GPU idle (one row, a tiny
 * product): then one output per thread (the default schedule) runs wider. */
lower_gpu_matmul_cfg lower_gpu_matmul_default(const sch_stage *red, const lower_target *t, int *use);
int lower_sched_gpu_matmul(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_gpu_matmul_cfg *cfg);

/* The GPU tensor-core matmul template (sched_gpu_matmul_tc.c; with lower_target.gpu_tf32):
 * bm × bn output tiles per block computed by warps of wm × wn on tensor cores (TF32
 * inputs, f32 sums; sch_tensorize_wmma), the reduction in steps of bk through shared
 * memory, the epilogue on the tile in shared memory. */
typedef struct lower_gpu_matmul_tc_cfg {
  int32_t bm, bn, bk; /* block tile and reduction step (bk a multiple of 8) */
  int32_t wm, wn;     /* warp tile (multiples of 16): (bm/wm)·(bn/wn) warps per block */
} lower_gpu_matmul_tc_cfg;
/* The default tiles, *use 0 where the template does not fit (not a plain f32 sum of a
 * product of rows and columns — sch_wmma_operands —, fewer than 16 rows or 32 columns,
 * K below 8): the CUDA-core templates then run. */
lower_gpu_matmul_tc_cfg lower_gpu_matmul_tc_default(const sch_stage *red, const lower_target *t, int *use);
int lower_sched_gpu_matmul_tc(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_gpu_matmul_tc_cfg *cfg);

/* The GPU tensor-core conv template (sched_gpu_conv_tc.c; with lower_target.gpu_tf32):
 * dense 2-D convs as implicit GEMMs on tensor cores, a block per bm output channels ×
 * boh whole output rows of one image (bn = boh × the map's width pixels), warp tiles
 * wm × wn, the flattened reduction (input channels × taps) in steps of bk. */
typedef struct lower_gpu_conv_tc_cfg {
  int32_t bm, boh, bk; /* output channels and rows per block, reduction step (a multiple of 8) */
  int32_t wm, wn;      /* warp tile (multiples of 16) */
} lower_gpu_conv_tc_cfg;
/* The default tile, *use 0 where the template does not fit (no dense conv in NCHW, fewer
 * than 16 channels, rows too narrow to make whole fragments within the map's height):
 * the CUDA-core conv template then runs. */
lower_gpu_conv_tc_cfg lower_gpu_conv_tc_default(const sch_stage *red, const lower_target *t, int *use);
int lower_sched_gpu_conv_tc(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_gpu_conv_tc_cfg *cfg);

/* The GPU conv template (sched_gpu_conv.c): 2-D convs of one group, a block per
 * boc channels × boh × bow output pixels, toc × tow per thread in registers, input
 * channels in steps of bic through shared memory. */
typedef struct lower_gpu_conv_cfg {
  int32_t boc, toc;      /* output channels per block, per thread */
  int32_t boh, bow, tow; /* output rows and columns per block, columns per thread */
  int32_t bic;           /* input channels per step */
} lower_gpu_conv_cfg;
int lower_gpu_conv_fits(const sch_stage *red);
lower_gpu_conv_cfg lower_gpu_conv_default(const sch_stage *red, const lower_target *t, int *use); /* as matmul's */
/* The block (boc channels, boh x bow pixels) for c's thread tile (toc, tow): channel
 * groups dividing the channels, a patch dividing the map (the default's rules). */
void lower_gpu_conv_blocks(const sch_stage *red, lower_gpu_conv_cfg *c);
int lower_sched_gpu_conv(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_gpu_conv_cfg *cfg);

/* The GPU reduction template (sched_gpu_reduce.c): a block per output row (or, with
 * 32 threads a row, a warp per row and `rows` rows a block along threadIdx.y), the
 * row's reduction split over `threads` threads along threadIdx.x (strided partials,
 * then a warp-shuffle butterfly and, with several warps, a combine through shared
 * memory: sch_lower.c), its element-wise consumer computed by the same block. */
typedef struct lower_gpu_reduce_cfg {
  int32_t threads; /* threads a row: a multiple of 32, at most 1024 */
  int32_t rows;    /* rows a block: 1, or up to 32 with threads == 32 */
} lower_gpu_reduce_cfg;
/* The rule: a plain reduction (sum, product, max, min of f32, f64, i32, i64) over
 * 32 or more elements a row that either walks its input's innermost axis (one
 * output per thread would read a run of memory per thread, uncoalesced) or has too
 * few outputs to give every multiprocessor a block of 256 threads. Shorter rows,
 * and many rows reduced across the innermost axis (a warp's threads then read
 * neighbouring elements), keep one output per thread. */
int lower_gpu_reduce_fits(const sch_stage *red, const lower_target *t);
/* Default knobs: threads the smallest of 32, 64, 128, 256 giving each thread at
 * most 8 elements of a row of k (256 for longer rows); a warp per row packs up to 8
 * rows a block. */
lower_gpu_reduce_cfg lower_gpu_reduce_default(int64_t rows, int64_t k, const lower_target *t);
/* Schedules every reduction that fits, with the element-wise consumer of its rows
 * where there is one (the reductions computed at its row loop), else by itself. */
int lower_sched_gpu_reduce(sch_schedule *s, const lower_target *t);

/* Shared by the GPU templates (sched_gpu.c): ceil(a / b); the distinct tensors st's
 * body loads (their count; the first max in t); a copy into shared memory computed
 * inside a block's thread loops, its axes fused and spread over the tz × ty × tx
 * threads (x fastest, bound to the enclosing thread indices: cooperative fetching). */
int64_t lower_cdiv(int64_t a, int64_t b);
int lower_gpu_loads(const sch_stage *st, te_tensor **t, int max);
int lower_gpu_fetch(sch_schedule *s, sch_stage *sh, int64_t tz, int64_t ty, int64_t tx);

/* The GPU's default schedule (sched_gpu.c): templates for the heavy stages, one
 * output element per thread for the rest. */
int lower_sched_gpu(sch_schedule *s, const lower_target *t);

/* The default target description: AVX-512, 2 threads. */
lower_target lower_target_default(void);

/* Dense / matmul / batch-matmul: C[b.., m, n] = sum_k A[b.., m, k] B[b.., k, n].
 * Register tile mr × (nr_vecs · vec) accumulators; k innermost of the reduction. */
typedef struct lower_matmul_cfg {
  int32_t mr;        /* rows of the register tile */
  int32_t nr_vecs;   /* vectors per row of the tile */
  int32_t vec;       /* lanes per vector (1: scalar) */
  int32_t k_unroll;  /* unroll of the k loop (1: none) */
  int32_t parallel;  /* run the tile loops in parallel */
  int32_t panel_outer; /* tiles ordered column panel, then rows: each panel of B is read from memory once
                          and reused from cache by every row tile (else rows, then panels: B is read
                          once per row tile, from cache when it fits) */
  int32_t prefetch;  /* with panel_outer and packed weights: while the row tiles of one panel compute,
                        software-prefetch the next panel (batched weights streaming from memory, as
                        Winograd's per-point matrices at batch 1) */
  int32_t pack_b;     /* B a kernel input read as it lies ([.., K, N], an activation: no panels packed at
                         compile time), with panel_outer: each column panel of B is copied at the panel
                         loop into a contiguous K x nr buffer on the stack (GotoBLAS's packed B, at run
                         time), which every row tile then reads from L1 with aligned loads, where B's rows
                         of N floats cost unaligned loads a page of stride apart */
  int32_t row_groups; /* with pack_b: the rows of each batch in this many groups, and the parallel loop
                         over batches x groups (panels, then row tiles inside each): enough work units
                         for the threads while each panel is still packed once per group */
} lower_matmul_cfg;

lower_matmul_cfg lower_matmul_default(const sch_stage *red, const lower_target *t);
int lower_sched_matmul(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_matmul_cfg *cfg);

/* Direct convolution in NCHW[x]c (the conv_nchwc op): out[n, ob, oh, ow, oc] over
 * (ib, kh, kw, ic). Register tile: ow_tile output pixels × oc_vecs vectors of the
 * output-channel block × oc_blocks blocks; the loop order from outside is (n, ob, oh)
 * fused and parallel → ow tiles → ib → kh → kw → ic → tile. */
typedef struct lower_conv_cfg {
  int32_t ow_tile;   /* output pixels along W in the register tile */
  int32_t oc_vecs;   /* vectors of output channels in the tile (the block is oc_vecs · vec) */
  int32_t vec;
  int32_t unroll_kw; /* unroll the kernel-width loop: 1 wholly, k > 1 (dividing KW) by k, 0 not */
  int32_t parallel;
  int32_t pad_tile;  /* 1: the zero-padded input per tile (in cache, a few rows recomputed) instead of once for
                        all (0): pays when no output block reuses an input block, as in depthwise convs;
                        2 (vec_ow): no padded input, the taps read through the bounds test as masked loads */
  int32_t image_tile; /* a small image: the reduction runs per output-channel block over the whole image,
                         rows (or, with ow_tile below the row or px_flat, the image's register tiles) inside
                         the input-channel-block loop, so one block's weights (kh·kw·ib·ob floats) stay in L1
                         for every row or tile instead of streaming from L2 once per tile */
  int32_t pixel_outer; /* the parallel tile loop runs pixels outside output-channel blocks: each input tile is
                          read from memory once for all blocks (whose weights stay in L2), where channel blocks
                          outside would read the whole input once per block; pays when the input outweighs
                          the weights (the large early images) */
  int32_t vec_ow;      /* a conv with one channel per block (NCHW1c in and out: a few output channels) keeps all
                          its output channels in the tile and vectorizes along the output row instead:
                          ow_tile pixels (a multiple of vec) × M channels, each input vector loaded once
                          for the M FMAs that use it, weights broadcast; stride 1 or 2 along W */
  int32_t prefetch;    /* software-prefetch the weights the next reuse window needs (the next output-channel
                          block's, or with image_tile the next input-channel block's) a few lines per kernel
                          column, spread over the current window: the weights are read from memory once and
                          then reused from cache, so without it each window's first pass waits on a burst of
                          memory traffic while the rest of the window leaves the memory bus idle */
  int32_t oc_tile;     /* vec_ow: output channels per tile (0: all M); more channels than the registers hold
                          (a grouped conv whose groups no vector divides, ShuffleNet's 4 x 34) take tiles of
                          oc_tile channels, a loop outside the row's pixel tiles */
  int32_t oc_blocks;   /* output-channel blocks in the register tile (1 or a divisor of the block count): each
                          input broadcast feeds oc_blocks x oc_vecs FMAs, so a tile as narrow as a 7x7 map's
                          row (7 pixels) still holds enough accumulators to keep the FMA units busy and needs
                          fewer loads per FMA (MLAS's filter sets); the weights of the blocks stream side by
                          side. Not with prefetch (its window is one block) */
  int32_t oh_tile;     /* output rows in the register tile (0 or 1: one row; else a divisor of OH): a tile of
                          oh_tile x ow_tile pixels, so a map whose rows are short (7 or 14 pixels) still fills
                          the accumulators, and each weight vector loaded feeds more FMAs (TVM's tile_oh of
                          its 1x1 NCHWc schedule). Not with image_tile, vec_ow or prefetch */
  int32_t ic_unroll;   /* the input-channel loop of the reduction (within a block) unrolled by this factor (0 or
                          1: a loop; it divides the block's channels): fewer loop branches and induction
                          updates per register tile, at the price of code size */
  int32_t px_flat;     /* the image's pixels one axis (oh·OW + ow) cut into tiles of ow_tile: a map whose rows no
                          good tile width divides (7 or 14 pixels) gets whole tiles across row ends and one ragged
                          tile per image instead of one per row (ResNet's 7x7 maps in tiles of 6: 9 tiles, not
                          14; with image_tile, inside the input-channel-block loop). Not with pixel_outer,
                          oh_tile, vec_ow or a padded copy per tile */
  int32_t fuse_kw;     /* the kernel columns and the block's input channels one reduction loop (kw·icb + ic): in
                          NCHW[x]c a kernel row's inputs (kw·dilation·icb + ic along the padded row) and its
                          packed weights ((kw·icb + ic)·ob) are each one run, so the innermost loop runs KW·icb
                          steps instead of KW loops of icb — one loop exit and one round of address updates per
                          kernel row, not per tap. Dilation 1 only (else the inputs' index keeps a division);
                          nothing to fuse in depthwise, 8-bit or vec_ow convs; yields to unroll_kw and ic_unroll
                          (they split the loops it would fuse; the tuner's space rejects the pair) */
} lower_conv_cfg;

lower_conv_cfg lower_conv_default(const sch_stage *red, const lower_target *t);
/* Fetch-ahead of a reuse window (the conv and matmul templates' prefetch knobs): at each
 * of the `steps` iterations of loop `at` that make up the current window (u counts
 * them, 0 ≤ u < steps), prefetch the u-th share of the `elems` elements of t from
 * element `next` on (the next window's data), so that the lines arrive spread evenly
 * over the window: a line every few steps, or a few lines per step (at most 16). */
int lower_prefetch_ahead(sch_schedule *s, sch_stage *st, sch_iter *at, te_tensor *t, te_expr *next, te_expr *u,
                         int64_t steps, int64_t elems);
int lower_sched_conv(sch_schedule *s, sch_stage *red, sch_stage *epi, const lower_conv_cfg *cfg);

/* Reductions that keep the innermost axis (pooling in NCHW[x]c, spatial means):
 * vectors of the innermost axis, reduce loops outside the lanes. */
/* The output axis the vector-reduce template cuts into vectors: the innermost one
 * with more than one element (a pool in NCHW1c runs along its rows). */
int lower_reduce_lane_axis(const sch_stage *st);
/* ragged: the innermost axis may end in a partial vector (it must hold one whole) */
int lower_vector_reduce_ok(const sch_stage *red, int32_t vec, int ragged);
int lower_sched_vector_reduce(sch_schedule *s, sch_stage *red, sch_stage *epi, int32_t vec, int parallel);

/* Per-row statistics along the innermost axis (softmax, layer-norm: the
 * row_partial/row_stat/row_keep stages of compute_reduce.c), computed at their
 * consumer's parallel row loop with vector lanes (sched_rows.c); and lanes whose
 * steps keep their order (row_lanes), a block of rows at each step. */
int lower_sched_rows(sch_schedule *s, const lower_target *t);

/* The Winograd transform kernels (sched_winograd.c): winograd_in's stage, and the
 * root stage(s) of winograd_out's shape (the transform or the epilogue it is
 * inlined into) — tiles in parallel, a tile's points unrolled, channels in vectors. */
int lower_sched_winograd(sch_schedule *s, const lower_target *t);

/* The tuning hook (tuning.c; `kiln tune`, `kiln compile --records`): a caller's
 * interface that sees each group before it is scheduled and may change a
 * template's knobs or schedule the group itself. A template's knobs are listed as
 * data — name, offset of the int32_t field in its cfg struct, the values a caller
 * may set (AutoTVM's config entity as a vector of named integers). Without a
 * lower_target.tuning nothing changes: the defaults are exactly the same. */
typedef struct lower_knob {
  const char *name;
  size_t offset;  /* of its int32_t field in the cfg struct */
  int32_t lo, hi; /* the values a caller may set; anything else puts the default back */
} lower_knob;

/* The knobs of template "conv" (lower_conv_cfg), "matmul" (lower_matmul_cfg), "gpu_conv"
 * (lower_gpu_conv_cfg), "gpu_matmul" (lower_gpu_matmul_cfg), "gpu_conv_tc" or "gpu_matmul_tc"
 * (the tensor-core cfgs), or NULL. */
const lower_knob *lower_template_knobs(const char *tmpl, int32_t *n);

struct lower_tuning {
  void *self;
  /* lower_nodes, before the group's stages are created: its nodes, the values it hands on, and the
   * name its kernel gets (the name a profile of the bundle shows) */
  void (*group)(void *self, const gir_node *const *nodes, int32_t n_nodes, const gir_value *const *outs,
                int32_t n_outs, const char *kernel, const lower_target *t);
  /* first thing in lower_default_schedule: 1 when it scheduled every stage itself, 0 to keep the
   * default schedule, -1 on error (the message in s->err) */
  int (*schedule)(void *self, sch_schedule *s, const lower_target *t);
  /* a template about to run with its default knobs in cfg: may change them (a value outside its
   * knob's range puts every default back) */
  void (*knobs)(void *self, const char *tmpl, const lower_knob *knobs, int32_t n_knobs, void *cfg);
};

/* Hands a template's default cfg to t->tuning (if any) and checks what comes back. */
void lower_tune_knobs(const lower_target *t, const char *tmpl, void *cfg, size_t cfg_size);

/* Picks and applies the template of every heavy stage it knows; stages it does
 * not know keep the default schedule. Returns 0, or -1 with the schedule's error. */
int lower_apply_templates(sch_schedule *s, const lower_target *t);

/* After scheduling: the tag of a heavy stage (conv, conv_nchwc, conv_transpose,
 * matmul, pool) that no template scheduled — it runs on the generic default
 * schedule, correct but far from peak — or NULL. */
const char *lower_generic_heavy_stage(const sch_schedule *s);

/* The default schedule of a stage set: non-reducing intermediates inlined, heavy
 * stages scheduled by their templates, the leading spatial loops of the others
 * fused and run in parallel when the stage is large. t NULL: lower_target_default. */
int lower_default_schedule(sch_schedule *s, const lower_target *t);
/* A transpose stage the default schedule vectorized along the output's innermost
 * axis: the output axis that walks the input's innermost moves just outside the
 * vector loop, the leading loops become the parallel loop (sched_movement.c).
 * 1 if it scheduled st, 0 if st is not such a stage, -1 on error. */
int lower_sched_transpose(sch_schedule *s, sch_stage *st, const lower_target *t);
/* The element-wise stage that is st's only reader, has its shape and is still
 * unscheduled at the root, or NULL. */
sch_stage *lower_epilogue_of(sch_schedule *s, sch_stage *st);
/* 1 where stage st evaluates one to three of exp, log, tanh and erf (a GELU, a swish, a
 * sigmoid, a mish): it computes them in vectors of two registers' lanes. Those
 * functions are long dependency chains (erf: about 110
 * cycles of latency on AVX2 through its polynomial and an exp), and an out-of-order core
 * overlaps only the few whose instructions fit its window; in vectors of twice the width
 * the backend emits two independent chains side by side. An LSTM cell's five (three
 * sigmoids, two tanh) are independent chains already, and twice the lanes only added
 * spills (the CRNN's step kernels 1.19x slower on AVX2). The matmul and conv templates
 * take it for their epilogues, the Winograd output transform for the conv's epilogue
 * (sched_winograd.c), the row template for softmax's exp row (sched_rows.c), the default
 * schedule for element-wise stages (default_schedule.c). */
int lower_long_math(const sch_stage *st);
/* The lanes of st's vectors along an axis of `width` elements: 2·vec where
 * lower_long_math(st) and width holds whole vectors of them, else vec. */
int32_t lower_math_lanes(const sch_stage *st, int64_t width, int32_t vec);
/* Fuses st's leading loops up to and including `last` into one; returns it (NULL on error). */
sch_iter *lower_fuse_through(sch_schedule *s, sch_stage *st, sch_iter *last);

#endif
