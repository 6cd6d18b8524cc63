/* layout.h — data-layout transforms of the graph (ARCHITECTURE.md). For CPU
 * convolutions, activations move to NCHW[x]c (channel blocks of x innermost, x
 * from the target's vector width) and weights to OIHW[x]i[y]o, packed at compile
 * time so bundles ship them packed. The blocked layout then spreads through the
 * layout-agnostic ops (element-wise, pooling, spatial reductions and slices, concat,
 * a transposed conv's phase interleave), so transforms remain only where a
 * layout-bound op needs plain NCHW;
 * a transform back followed by one forward cancels (or becomes one re-blocking). */
#ifndef LAY_LAYOUT_H
#define LAY_LAYOUT_H
#include "graph.h"

typedef struct lay_stats {
  int32_t convs;       /* convolutions moved to conv_nchwc */
  int32_t propagated;  /* layout-agnostic ops now running blocked */
  int32_t transforms;  /* relayout nodes left in the graph */
} lay_stats;

/* Rewrites eligible 2-D and 1-D float32 convolutions with constant weights (group
 * 1, depthwise, or grouped with whole blocks per group) into conv_nchwc and
 * propagates the layout; a 1-D (NCW) conv runs as NCHW[x]c with H = 1 behind a
 * reshape. `block` is the vector width in floats: output blocks are 2·block when
 * that divides the channels (a two-vector register tile), else block or a smaller
 * power of two ≥ 4; channels no block divides are padded to whole blocks (a few —
 * an image's 3 — to one narrow block of 4 or 8); an input already blocked keeps its
 * block. A target without vectors (block < 4) gets only its 8-bit dense convs
 * whose input channels come in quads, in blocks of 4 channels either side: each
 * output channel's quad of weights beside one pixel's quad of input bytes, the
 * operands of a scalar 4-way dot product (SMLAD pairs on Cortex-M4/M7).
 * masked_loads (lower_target.masked_loads): a stride-2 depthwise conv on a plain input
 * whose channels fill no half vector stays plain NCHW (its rows in vectors, the
 * padding read through masked loads) instead of narrow blocks.
 * Requires: topological order.
 * Preserves: semantics, output names and shapes; compacts the graph. */
int lay_nchwc(gir_graph *g, int32_t block, int32_t masked_loads, lay_stats *stats, gir_err *err);

/* Rewrites float32 transposed convolutions (1 to 3 spatial axes, constant
 * weights and bias, dilation 1, at most 16 stride phases) into one plain conv per
 * stride phase and an interleave (deconv.c), for lay_nchwc to block next.
 * *rewritten counts them (may be NULL). Requires: topological order.
 * Preserves: semantics, output names and shapes; compacts the graph. */
int lay_split_conv_transpose(gir_graph *g, int32_t *rewritten, gir_err *err);

/* Rewrites float32 2-D dilated convolutions with constant weights whose taps land in
 * the zero padding for a good share of the outputs (an atrous pyramid's dilation 24 on
 * a 32x32 map) into one conv per output region with the taps valid there, on the input
 * rows and columns those taps read, concatenated along W and H (dilated.c): no FLOPs
 * on padding. Requires: topological order. Preserves: semantics, output names and
 * shapes; compacts the graph. */
int lay_split_dilated_conv(gir_graph *g, int32_t *rewritten, gir_err *err);

/* Rewrites 3x3 stride-1 float32 conv_nchwc nodes (group 1, constant weights) into
 * winograd_in, a batched matmul with the transformed weights and winograd_out
 * (winograd.c): LAY_WINOGRAD_AUTO where channels and tiles make it pay, ON on every
 * one (F(4x4) where the output is whole 4x4 tiles, else F(2x2), ragged where it
 * must), OFF never. vec_f32 and vec_regs, the target's float lanes and vector
 * registers: with 8 and 16 (x86 AVX2) direct convs run far from peak, so AUTO takes
 * F(2x2) on smaller and ragged maps too. Runs
 * after lay_nchwc. *rewritten counts them (may be NULL). Requires: topological
 * order. Preserves: semantics up to float rounding, output names and shapes;
 * compacts the graph. */
typedef enum lay_winograd_mode { LAY_WINOGRAD_AUTO, LAY_WINOGRAD_ON, LAY_WINOGRAD_OFF } lay_winograd_mode;
int lay_winograd(gir_graph *g, lay_winograd_mode mode, int32_t vec_f32, int32_t vec_regs, int32_t *rewritten,
                 gir_err *err);

/* Packs the constant float32 [K, N] weights of matmuls into column panels
 * [ceil(N/nr), K, nr] (matmul attributes packed = nr, n = N), nr the matmul
 * template's tile width for `vec` lanes and `vec_regs` vector registers
 * (pack_matmul.c). *packed counts them.
 * Preserves: semantics, output shapes; compacts the graph. */
int lay_pack_matmul(gir_graph *g, int32_t vec, int32_t vec_regs, int32_t *packed, gir_err *err);

/* Rewrites float32 2-D max pools with windows of 5x5 or more into a pool over
 * rows (kh x 1) and one over columns (1 x kw) (separable_pool.c): kh + kw
 * comparisons per output instead of kh·kw, exactly. *split counts them.
 * Requires: topological order. Preserves: semantics, output names and shapes;
 * compacts the graph. */
int lay_separable_pool(gir_graph *g, int32_t *split, gir_err *err);

/* Rewrites every reduce over two or more trailing axes (a global pool over H and W
 * left in plain NCHW) into a reduce over the last axis of a flat view of them,
 * between two reshapes (views): the per-row template's shape (flatten_reduce.c).
 * *flattened counts them. Requires: topological order. Preserves: semantics up to
 * the order of a float sum, output names and shapes; compacts the graph. */
int lay_flatten_reduce(gir_graph *g, int32_t *flattened, gir_err *err);

/* Rewrites float32 2-D convs of one group with constant weights whose outputs are
 * too few to fill a GPU of `sms` multiprocessors and whose reductions are long
 * into a grouped conv over S slices of the input channels, a sum over the slices
 * and the bias (split_k.c: split-K). GPU targets only. force 0: S by the rule; 1:
 * none; N: N slices for every such conv (whatever its size) whose channels N divides. *rewritten counts them (may
 * be NULL). Requires: topological order. Preserves: semantics up to the order of
 * a float sum, output names and shapes; compacts the graph. */
int lay_split_k(gir_graph *g, int32_t sms, int32_t force, int32_t *rewritten, gir_err *err);
#endif
