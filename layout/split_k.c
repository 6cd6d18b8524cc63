/* split_k.c — a GPU conv whose outputs are too few to fill the GPU, with its
 * reduction split over S slices of the input channels (split-K): each slice's
 * partial sums are the output of one group of a grouped conv, and element-wise
 * adds sum them, then the bias and whatever followed the conv:
 *
 *   conv(x, w[M, C, k..], b) → (p[:, 0:M] + p[:, M:2M] + … + p[:, (S-1)M:SM]) + b,
 *   p = conv(x, w', group S)
 *
 *   w'[s·M + m, c, k..] = w[m, s·C/S + c, k..]
 *
 * Group s of the grouped conv reads input channels [s·C/S, (s+1)·C/S) — the slice —
 * and writes its own M channels, so the conv has S times the outputs (threads)
 * and each does 1/S of the taps; the FLOPs are the conv's own, and the sum reads
 * S partials per output. ResNet-50's last stage at batch 1 (7×7 maps, 512
 * channels: 25k outputs of 4608 taps each) leaves an H100's 132 multiprocessors
 * mostly idle otherwise. Exact up to the order of the float sum (each partial
 * sums its slice in the conv's order). Runs for GPU targets only, before fusion:
 * the adds are element-wise, so the conv's epilogue (bias, residual add,
 * activation) fuses with them into one kernel after the conv's. */
#include <string.h>
#include "layout.h"
#include "simplify.h"

#define MIN_TAPS 512       /* a shorter reduction is cheap to run whole */
#define MIN_SLICE 16       /* input channels per slice at least */
#define MAX_SLICES 16
#define OUTPUTS_PER_SM 512 /* outputs per multiprocessor below which a conv splits */

/* Slices for conv n on sms multiprocessors: where the outputs are fewer than
 * OUTPUTS_PER_SM a multiprocessor, the most of 2, 4, 8, 16 that divide the input
 * channels into slices of MIN_SLICE or more; 1: no split. A sweep of slice counts
 * and thread tiles over ResNet-50's and MobileNetV2's small-output convs at batch 1
 * on an H100 (bench/cuda/sweep_split_k.py, bench/cuda/README.md) had 16 slices best
 * or within 10% of the best on all seven (a 7x7 3x3 conv of 512 channels: 183 µs
 * whole, 138 in 4 slices, 32 in 16), and fewer slices sometimes slower than none.
 * force (--split-k): that many wherever it divides the channels. */
static int64_t slices(const gir_node *n, int32_t sms, int32_t force) {
  const gir_value *x = n->in[0], *w = n->in[1], *y = n->out[0];
  if (x->shape.rank != 4 || x->dtype != GIR_F32 || w->dtype != GIR_F32 || !w->data ||
      gir_attr_int(n, "group", 1) != 1 || n->n_attrs > 4)
    return 1;
  int64_t outputs = 1, C = w->shape.dims[1], taps = C * w->shape.dims[2] * w->shape.dims[3];
  if (force) return C % force ? 1 : force;
  for (int i = 0; i < 4; i++) outputs *= y->shape.dims[i];
  if (taps < MIN_TAPS || outputs >= (int64_t)sms * OUTPUTS_PER_SM) return 1;
  int64_t best = 1;
  for (int64_t s = 2; s <= MAX_SLICES && C % s == 0 && C / s >= MIN_SLICE; s *= 2) best = s;
  return best;
}

static gir_node *add_node(gir_graph *g, const gir_node *like, gir_op op, gir_value *const *ins, int32_t n_in) {
  gir_node *nn = gir_node_new(g, op, NULL, ins, n_in, 1);
  nn->origin = like->origin;
  return nn;
}

/* nn's output once its type and shape are inferred, or NULL with the reason. */
static gir_value *finish(gir_graph *g, gir_node *nn, gir_err *err) {
  return gir_node_infer(g, nn, err) < 0 ? NULL : nn->out[0];
}

/* a + b (broadcasting), or NULL with the reason. */
static gir_value *sum(gir_graph *g, const gir_node *like, gir_value *a, gir_value *b, gir_err *err) {
  gir_value *ab[2] = {a, b};
  gir_node *ad = add_node(g, like, GIR_OP_binary, ab, 2);
  gir_attr_set_int(g, ad, "fn", GIR_BINARY_ADD);
  return finish(g, ad, err);
}

/* 1 rewritten, -1 error. */
static int rewrite(gir_graph *g, gir_node *n, int64_t S, gir_err *err) {
  gir_value *x = n->in[0], *w = n->in[1], *bias = n->n_in > 2 ? n->in[2] : NULL, *y0 = n->out[0];
  const int64_t *wd = w->shape.dims;
  int64_t M = wd[0], C = wd[1], K = wd[2] * wd[3], cs = C / S;
  gir_shape ws = {.rank = 4, .dims = {S * M, cs, wd[2], wd[3]}};
  gir_value *wv = gir_const_new(g, NULL, GIR_F32, &ws, NULL);
  const float *src = w->data;
  float *dst = wv->data;
  for (int64_t s = 0; s < S; s++)
    for (int64_t m = 0; m < M; m++)
      memcpy(dst + ((s * M + m) * cs) * K, src + (m * C + s * cs) * K, (size_t)(cs * K) * sizeof(float));
  gir_value *ins[2] = {x, wv};
  gir_node *cn = add_node(g, n, GIR_OP_conv, ins, 2);
  static const char *const keep[] = {"strides", "pads", "dilations"};
  for (int i = 0; i < 3; i++) {
    int32_t cnt = 0;
    const int64_t *v = gir_attr_ints(n, keep[i], &cnt);
    if (v) gir_attr_set_ints(g, cn, keep[i], v, cnt);
  }
  gir_attr_set_int(g, cn, "group", S);
  gir_value *p = finish(g, cn, err);
  if (!p) return -1;
  /* the partial sums, added slice by slice (element-wise ops: one kernel with the
   * bias and the conv's epilogue, where a reduce would be a kernel of its own) */
  const int64_t *yd = y0->shape.dims;
  gir_value *y = NULL;
  for (int64_t s = 0; s < S; s++) {
    int64_t starts[4] = {0, s * M, 0, 0}, steps[4] = {1, 1, 1, 1}, sizes[4] = {yd[0], M, yd[2], yd[3]};
    gir_node *sn = add_node(g, n, GIR_OP_slice, &p, 1);
    gir_attr_set_ints(g, sn, "starts", starts, 4);
    gir_attr_set_ints(g, sn, "steps", steps, 4);
    gir_attr_set_ints(g, sn, "sizes", sizes, 4);
    gir_value *part = finish(g, sn, err);
    if (!part || !(y = y ? sum(g, n, y, part, err) : part)) return -1;
  }
  if (bias) { /* b[M] as [M, 1, 1] against [N, M, OH, OW] */
    int64_t bd[3] = {M, 1, 1};
    gir_node *br = add_node(g, n, GIR_OP_reshape, &bias, 1);
    gir_attr_set_ints(g, br, "shape", bd, 3);
    gir_value *b = finish(g, br, err);
    if (!b || !(y = sum(g, n, y, b, err))) return -1;
  }
  if (y->dtype != y0->dtype || !gir_shape_equal(&y->shape, &y0->shape))
    return gir_errf(err, "split-K of %s: the result's type or shape changed", n->name);
  if (gir_replace_uses(g, y0, y) < 0) return gir_errf(err, "split-K of %s: cannot replace its output", n->name);
  return 1;
}

int lay_split_k(gir_graph *g, int32_t sms, int32_t force, int32_t *rewritten, gir_err *err) {
  int32_t n0 = g->n_nodes, cnt = 0;
  for (int i = 0; i < n0 && sms > 0; i++) {
    gir_node *n = g->nodes[i];
    if (n->op != GIR_OP_conv || n->n_out != 1) continue;
    int64_t S = slices(n, sms, force);
    if (S == 1) continue;
    g->cur_guard = n->guard; /* what this rewrite adds runs where n did */
    if (rewrite(g, n, S, err) < 0) return -1;
    cnt++;
  }
  g->cur_guard = NULL;
  if (cnt) gir_resort_compact(g);
  if (rewritten) *rewritten = cnt;
  return 0;
}
