/* nchwc.c — the NCHW[x]c layout pass (TVM's AlterOpLayout for x86, NeoCPU's
 * layout planning), in one forward sweep over the graph in topological order:
 *
 *   conv(x, w, b)            → relayout(conv_nchwc(relayout(x, 0→ib), pack(w), b'), ob→0)
 *   op(relayout(a, b→0), …)  → relayout(op'(a, …'), b→0)   for layout-agnostic ops
 *                              (element-wise, pooling, spatial reductions,
 *                              slices and resizes, concat on C, H or W, the stride-phase
 *                              interleave of a transposed conv)
 *   relayout(relayout(a, s→t), t→u) → relayout(a, s→u), or a itself when s = u
 *
 * Each rewrite leaves the value in plain NCHW behind a relayout, so every
 * consumer the sweep cannot convert still reads what it read before; consumers
 * that can convert look through the relayout when their turn comes. Relayouts
 * nobody reads any more are dropped by compaction, so transforms remain only at
 * the boundaries of the blocked region. Weights are packed here, in C, into new
 * constants; operands of element-wise ops that are constants get a relayout the
 * fold pass that follows computes at compile time. */
#include <string.h>
#include "layout.h"
#include "simplify.h"

typedef struct lay {
  gir_graph *g;
  gir_err *err;
  int32_t block;
  int q8_only; /* a scalar target: only 8-bit dense convs in quads of channels (dot4) */
  int32_t masked_loads; /* the target's vector loads under a mask (lay_nchwc) */
  lay_stats *st;
} lay;

static void copy_attrs(gir_graph *g, gir_node *dst, const gir_node *src) {
  for (int i = 0; i < src->n_attrs; i++) {
    const gir_attr *a = &src->attrs[i];
    switch (a->kind) {
    case GIR_ATTR_INT: gir_attr_set_int(g, dst, a->name, a->i); break;
    case GIR_ATTR_FLOAT: gir_attr_set_float(g, dst, a->name, a->f); break;
    case GIR_ATTR_INTS: gir_attr_set_ints(g, dst, a->name, a->ints, a->n); break;
    case GIR_ATTR_FLOATS: gir_attr_set_floats(g, dst, a->name, a->floats, a->n); break;
    case GIR_ATTR_STRING: gir_attr_set_string(g, dst, a->name, a->s); break;
    default: break;
    }
  }
}

/* A new node of op over ins, with like's attributes (like may be NULL). */
static gir_node *new_node(lay *L, gir_op op, gir_value *const *ins, int32_t n_in, const gir_node *like) {
  gir_node *n = gir_node_new(L->g, op, NULL, ins, n_in, 1);
  if (like) {
    copy_attrs(L->g, n, like);
    n->origin = like->origin;
  }
  return n;
}

static gir_value *finish(lay *L, gir_node *n) { return gir_node_infer(L->g, n, L->err) < 0 ? NULL : n->out[0]; }

/* v reshaped to dims (a new reshape node; NULL on error). */
static gir_value *reshape_to(lay *L, gir_value *v, const int64_t *dims, int32_t rank, const gir_node *origin) {
  gir_node *r = new_node(L, GIR_OP_reshape, &v, 1, NULL);
  r->origin = origin ? origin->origin : NULL;
  gir_attr_set_ints(L->g, r, "shape", dims, rank);
  return finish(L, r);
}

/* 1-D (NCW) tensors live in the blocked layout as NCHW[b]c with H = 1: a [N, C, W]
 * value is the squeeze of a [N, C, 1, W] one (squeeze_h) and goes in through an
 * unsqueeze (unsqueeze_h), so 1-D convolutions and the ops between them (a speech
 * model's Conv1d stack) get the same templates as 2-D ones. */
static gir_value *unsqueeze_h(lay *L, gir_value *v, const gir_node *origin) {
  int64_t d[4] = {v->shape.dims[0], v->shape.dims[1], 1, v->shape.dims[2]};
  return reshape_to(L, v, d, 4, origin);
}

static gir_value *squeeze_h(lay *L, gir_value *v, const gir_node *origin) {
  int64_t d[3] = {v->shape.dims[0], v->shape.dims[1], v->shape.dims[3]};
  return reshape_to(L, v, d, 3, origin);
}

/* A [N, C, W] value that is the squeeze of a [N, C, 1, W] one: that one, else NULL. */
static gir_value *unsqueezed_source(const gir_value *v) {
  const gir_node *p = v ? v->producer : NULL;
  if (!p || p->op != GIR_OP_reshape || v->shape.rank != 3) return NULL;
  const gir_value *s = p->in[0];
  if (s->shape.rank != 4 || s->shape.dims[2] != 1 || s->shape.dims[0] != v->shape.dims[0] ||
      s->shape.dims[1] != v->shape.dims[1] || s->shape.dims[3] != v->shape.dims[2])
    return NULL;
  return p->in[0];
}

/* A [N, C, H, W] value that is the view of a [N, C, H, W, 1] one (NCHW1c: the
 * output of a conv vectorized along its rows, relayout's reshape): that one, else NULL. */
static gir_value *block1_source(const gir_value *v) {
  const gir_node *p = v ? v->producer : NULL;
  if (!p || p->op != GIR_OP_reshape || v->shape.rank != 4 || p->in[0]->shape.rank != 5 ||
      p->in[0]->shape.dims[4] != 1 || p->in[0]->dtype != v->dtype)
    return NULL;
  for (int i = 0; i < 4; i++)
    if (p->in[0]->shape.dims[i] != v->shape.dims[i]) return NULL;
  return p->in[0];
}

/* A slice of a rank-r value (4: NCHW; 3: NCW) on its spatial axes only (all
 * channels, step 1 on them). */
static int spatial_slice(const gir_node *p, int r) {
  if (!p || p->op != GIR_OP_slice || p->in[0]->shape.rank != r) return 0;
  int32_t n, n2, n3;
  const int64_t *st = gir_attr_ints(p, "starts", &n), *sp = gir_attr_ints(p, "steps", &n2),
                *sz = gir_attr_ints(p, "sizes", &n3);
  return st && sp && sz && n == r && n2 == r && n3 == r && st[1] == 0 && sp[1] == 1 &&
         sz[1] == p->in[0]->shape.dims[1];
}

/* A slice of v, a 5-D blocked value, run where origin's op ran. */
static gir_value *slice5(lay *L, gir_value *v, const int64_t *starts, const int64_t *steps, const int64_t *sizes,
                         const gir_node *origin) {
  gir_node *n = new_node(L, GIR_OP_slice, &v, 1, NULL);
  n->origin = origin->origin;
  gir_attr_set_ints(L->g, n, "starts", starts, 5);
  gir_attr_set_ints(L->g, n, "steps", steps, 5);
  gir_attr_set_ints(L->g, n, "sizes", sizes, 5);
  return finish(L, n);
}

/* slice p's window on v, a 5-D blocked value (the block axis whole; a 1-D
 * slice's window on W, H = 1 whole). */
static gir_value *blocked_slice(lay *L, const gir_node *p, gir_value *v) {
  int32_t n1, n2, n3;
  const int64_t *st = gir_attr_ints(p, "starts", &n1), *sp = gir_attr_ints(p, "steps", &n2),
                *sz = gir_attr_ints(p, "sizes", &n3);
  int w = n1 == 3 ? 2 : 3; /* W's position in the slice */
  int64_t s5[5] = {st[0], 0, w == 3 ? st[2] : 0, st[w], 0}, p5[5] = {sp[0], 1, w == 3 ? sp[2] : 1, sp[w], 1},
          z5[5] = {sz[0], v->shape.dims[1], w == 3 ? sz[2] : 1, sz[w], v->shape.dims[4]};
  return slice5(L, v, s5, p5, z5, p);
}

/* x in layout src (0: plain NCHW, b: NCHW[b]c) as layout dst, looking through
 * a relayout that produced x. C is the number of real channels: a blocked side
 * holds whole blocks, the channels past C are padding. */
static gir_value *relayout(lay *L, gir_value *x, int64_t src, int64_t dst, int64_t C, const gir_node *origin) {
  /* a window of H and W of v (the pieces of a dilated conv, dilated.c): the window
   * of v's blocked form, so one relayout serves every window */
  if (!src && dst && spatial_slice(x->producer, 4)) {
    gir_value *vb = relayout(L, x->producer->in[0], 0, dst, C, origin);
    return vb ? blocked_slice(L, x->producer, vb) : NULL;
  }
  if (!src && x->shape.rank == 3) { /* NCW: as NCHW with H = 1 */
    gir_value *x4 = unsqueezed_source(x);
    if (!x4 && !(x4 = unsqueeze_h(L, x, origin))) return NULL;
    x = x4;
  }
  gir_node *p = x->producer;
  if (!src && dst == 1 && block1_source(x)) return block1_source(x);
  if (p && p->op == GIR_OP_relayout && gir_attr_int(p, "dst", 0) == src) {
    x = p->in[0];
    src = gir_attr_int(p, "src", 0);
  }
  if (src == dst) return x;
  /* NCHW and NCHW1c are the same memory: a view, not a copy (a few-channel conv's
   * input and output, vectorized along its rows) */
  if (src <= 1 && dst <= 1 && x->shape.rank == (src ? 5 : 4)) {
    int64_t d[5] = {x->shape.dims[0], x->shape.dims[1], x->shape.dims[2], x->shape.dims[3], 1};
    return reshape_to(L, x, d, dst ? 5 : 4, origin);
  }
  gir_node *n = new_node(L, GIR_OP_relayout, &x, 1, NULL);
  n->origin = origin ? origin->origin : NULL;
  gir_attr_set_int(L->g, n, "src", src);
  gir_attr_set_int(L->g, n, "dst", dst);
  if ((src && C % src) || (dst && C % dst)) gir_attr_set_int(L->g, n, "channels", C);
  return finish(L, n);
}

/* The blocked tensor behind v, when v is relayout(a, b→0) or a's NCHW1c view (b = 1)
 * (or, for a 1-D value, its squeeze); its block in *b. */
static gir_value *blocked_source(const gir_value *v, int64_t *b) {
  const gir_value *v4 = unsqueezed_source(v);
  if (v4) v = v4;
  gir_value *v5 = block1_source(v);
  if (v5) {
    *b = 1;
    return v5;
  }
  const gir_node *p = v ? v->producer : NULL;
  if (!p || p->op != GIR_OP_relayout || gir_attr_int(p, "dst", 0) != 0 || gir_attr_int(p, "src", 0) == 0) return NULL;
  *b = gir_attr_int(p, "src", 0);
  return p->in[0];
}

/* The largest power-of-two block ≤ max (and ≥ 4) dividing c, or 0. */
static int64_t pick_block(int64_t c, int64_t max) {
  for (int64_t b = max; b >= 4; b /= 2)
    if (c % b == 0) return b;
  return 0;
}

/* ---- convolutions ---- */

/* A dense float 1x1 conv with a stride and no padding (a ResNet's projection shortcut,
 * 512 -> 1024 from 28x28 to 14x14) that runs better on its input subsampled first: a
 * strided slice of the blocked input, then the conv at stride 1. Read in place, the
 * strided pixels of an input block fall on every other cache line (every other set of
 * L1), so a tile's weights, input and partial sums miss where the compact input's do
 * not, and the whole-image tiles that keep a 1x1 conv's weights in L1 thrash it. On
 * the AMD EPYC (Zen 3), one core, ResNet-50's projections (the conv kernels): 512 ->
 * 1024 from 28x28 3.67 -> 3.02 ms, 1024 -> 2048 from 14x14 3.70 -> 3.12; in the model
 * on two threads, slices included, 2.02 -> 1.62 and 1.90 -> 1.64 ms. The slice reads the
 * input once and writes a quarter of it, which the conv's gain must pay for: single
 * convs after a conv on two threads, slice included, gained from 512 input channels
 * (512 -> 1024 from 28x28 0.80x, from 14x14 0.85x; 1024 -> 2048 from 14x14 0.83x) and
 * mostly lost below (64 -> 128 from 56x56 1.10x, 256 -> 512 from 14x14 or 28x28
 * 1.05-1.11x, 256 -> 256 1.10x; 256 -> 512 from 56x56 0.96x), where an output block's
 * weights (C x 16 floats on AVX2) stay within L1 and a tile reads them from there,
 * strided input or not. So: at least 512 input channels in whole vector blocks, and at
 * least as many outputs. */
/* Its strides (H, W) when conv n is such a conv, else NULL. */
static const int64_t *subsampled_1x1(const lay *L, const gir_node *n, int64_t C, int64_t M, int64_t ib,
                                     int64_t group) {
  const gir_value *x = n->in[0], *w = n->in[1];
  if (x->shape.rank != 4 || x->dtype != GIR_F32 || group != 1 || w->shape.dims[2] != 1 || w->shape.dims[3] != 1 ||
      ib < L->block || C % ib || C < 512 || M < C)
    return NULL;
  int32_t ns, np;
  const int64_t *st = gir_attr_ints(n, "strides", &ns), *pd = gir_attr_ints(n, "pads", &np);
  if (!st || ns != 2 || (st[0] == 1 && st[1] == 1)) return NULL;
  for (int i = 0; pd && i < np; i++)
    if (pd[i]) return NULL;
  return st;
}

/* v (blocked, [N, CB, H, W, b]) at strides st: every pixel a 1x1 conv of those strides
 * reads. */
static gir_value *subsample(lay *L, gir_value *v, const int64_t *st, const gir_node *origin) {
  const int64_t *d = v->shape.dims;
  int64_t s5[5] = {0}, p5[5] = {1, 1, st[0], st[1], 1},
          z5[5] = {d[0], d[1], (d[2] - 1) / st[0] + 1, (d[3] - 1) / st[1] + 1, d[4]};
  return slice5(L, v, s5, p5, z5, origin);
}

static int rewrite_conv(lay *L, gir_node *n) {
  gir_graph *g = L->g;
  gir_value *x = n->in[0], *w = n->in[1], *bias = n->n_in > 2 ? n->in[2] : NULL;
  int rank = x->shape.rank; /* 4: NCHW; 3: NCW, as NCHW with H = 1 */
  /* float32, or 8-bit integers accumulated in int32 (the packed weights stay 8-bit) */
  int q8 = (x->dtype == GIR_U8 || x->dtype == GIR_I8) && (w->dtype == GIR_U8 || w->dtype == GIR_I8);
  if ((rank != 4 && rank != 3) || (x->dtype != GIR_F32 && !q8) || !w->data || (bias && !bias->data)) return 0;
  int64_t C = x->shape.dims[1], M = w->shape.dims[0], KH = rank == 4 ? w->shape.dims[2] : 1,
          KW = w->shape.dims[rank - 1];
  int64_t group = gir_attr_int(n, "group", 1), cpg = w->shape.dims[1]; /* input channels per group */
  /* a scalar target blocks only what a 4-way dot product serves: 8-bit, dense, input
   * channels in whole quads (a block of 4 either side: four scalar accumulators) */
  if (L->q8_only && (!q8 || group != 1 || C % 4)) return 0;
  int dw = group != 1 && group == C && M == C && cpg == 1;
  /* grouped (ResNeXt): each group's channels are whole blocks on both sides */
  if (group != 1 && !dw && (group < 1 || C % group || M % group || cpg != C / group)) return 0;
  /* input block: the producer's when it is blocked already (no re-blocking),
   * else the widest that divides C (all of C when C is small, e.g. RGB);
   * output block: two vectors when they divide M (a 2-vector register tile
   * halves the broadcasts per FMA), else one */
  int64_t in_b = 0, ib, ob;
  /* a producer that padded its channels to whole blocks (below): a dense conv reads
   * the blocks as they are, its reduction skipping the padding (attribute
   * "channels"); a depthwise conv computes the padding channels too (zero weights),
   * its consumers never read them; a grouped conv re-blocks */
  if (blocked_source(x, &in_b) && group != 1 && !dw && cpg % in_b) in_b = 0;
  /* the stride along W and the output rows' length: what a template that vectorizes
   * along the rows (blocks of one channel, below) needs */
  int32_t n_st;
  const int64_t *strides = gir_attr_ints(n, "strides", &n_st);
  int64_t sw = strides && n_st >= 1 ? strides[n_st - 1] : 1, ow = n->out[0]->shape.dims[rank - 1];
  if (dw) {
    /* channels no block divides (ShuffleNetV2's 58, 116, 232): padded to whole
     * vectors, the padding computed with zero weights and never read */
    int64_t pb = pick_block(C, 2 * (int64_t)L->block);
    ib = ob = in_b ? in_b : pb;
    if (!ib) ib = ob = L->block;
    /* a stride-2 one on a plain input whose channels fill no half vector (ShuffleNetV2's
     * 116 in blocks of 4, 58 padded to 64): plain NCHW (blocks of one channel, no
     * relayout either side), vectorized along its output rows — each tap's pixels one
     * span load and a shuffle, the padding read through masked loads. 116 channels at
     * 28x28: 33 -> 24 us on one core, relayouts included; 58 at 56x56: 71 -> 47 us. At
     * stride 1 rows that no vector divides ran slower than the blocks (120 at 28x28:
     * 57 -> 129 us), and channels in whole half vectors of 8 gain nothing. Blocks of
     * 4 (116 channels on AVX2, where they are half a vector too) run 4-lane vectors: the
     * rows beat them there (AMD EPYC Zen 3, 2 threads: 36 -> 27 us) */
    if (L->masked_loads && !in_b && pb <= 4 && pb < L->block && sw == 2 && 2 * ow >= L->block && x->dtype == GIR_F32)
      ib = ob = 1;
  } else if (group != 1) {
    ib = in_b ? in_b : pick_block(cpg, 2 * (int64_t)L->block);
    ob = pick_block(M / group, 2 * (int64_t)L->block);
    /* groups no block (or only a quarter vector) divides (ShuffleNet's 4 x 34 or
     * 4 x 68 channels), at stride 1 along W
     * over rows of half a vector or more: blocks of one channel (plain NCHW), which the
     * conv template vectorizes along the rows, a few channels per tile */
    if ((!ib || !ob || 4 * ob <= L->block) && sw == 1 && 2 * ow >= L->block) ib = ob = 1;
  } else {
    ib = in_b ? in_b : C <= L->block ? C : pick_block(C, 2 * (int64_t)L->block);
    /* input channels no block divides (an STFT's 257 bins, a shuffle's 58): whole
     * vectors, the relayout padding them with zeros and the reduction stopping at the
     * real ones (attribute "channels") */
    if (!ib) ib = L->block;
    ob = pick_block(M, 2 * (int64_t)L->block);
    /* output channels that no full vector divides (MobileNet's 24, SqueezeNet's
     * 1000): padded up to whole vectors, with zero weights and bias, rather than
     * run narrow: two vectors when that pads at most a third more, else one. Up
     * to half a vector (4 or 8 channels) stays narrow. */
    if (ob < L->block && 2 * M > L->block) {
      int64_t two = 2 * (int64_t)L->block, up = (M + two - 1) / two * two;
      ob = (up - M) * 3 <= M ? two : L->block;
    }
    /* a few output channels (at most half a vector: an image's 3, a generator's
     * last layer) over rows of a vector or more, at stride 1 along W: plain NCHW in
     * and out (blocks of one channel), which the conv template vectorizes along the
     * output rows instead of across channels; else one narrow block of 4 or 8 */
    if (2 * M <= L->block && sw == 1 && ow >= L->block) ob = ib = 1;
    else if (!ob) ob = M <= 4 ? 4 : 8;
  }
  if (!ob || !ib || (L->q8_only && (ib % 4 || ob % 4))) return 0;
  int64_t cg = cpg, wb = dw ? 1 : ib, Mp = (M + ob - 1) / ob * ob, CB = (cg + wb - 1) / wb;
  gir_shape ws = {.rank = 6, .dims = {Mp / ob, CB, KH, KW, wb, ob}};
  /* 8-bit, dense, whole quads of channels per block: each output channel's four
   * consecutive input channels side by side, [M/ob, CB, KH, KW, wb/4, ob, 4] —
   * one vector of ob·4 weights per quad, what a 4-way dot product (vpdpbusd,
   * sdot) multiplies with one pixel's four input bytes */
  int quad = q8 && group == 1 && wb % 4 == 0;
  if (quad) ws = (gir_shape){.rank = 7, .dims = {Mp / ob, CB, KH, KW, wb / 4, ob, 4}};
  gir_value *wv = gir_const_new(g, NULL, w->dtype, &ws, NULL); /* packed in place, padding zero */
  size_t es = gir_dtype_size(w->dtype);
  char *wp = wv->data;
  memset(wp, 0, (size_t)gir_value_nbytes(wv));
  const char *wd = w->data;
  for (int64_t m = 0; m < M; m++)
    for (int64_t c = 0; c < cg; c++)
      for (int64_t t = 0; t < KH * KW; t++) {
        int64_t dst = ((((m / ob) * CB + c / wb) * KH * KW + t) * wb + c % wb) * ob + m % ob;
        if (quad) dst = (((((m / ob) * CB + c / wb) * KH * KW + t) * (wb / 4) + c % wb / 4) * ob + m % ob) * 4 + c % 4;
        memcpy(wp + dst * es, wd + ((m * cg + c) * KH * KW + t) * es, es);
      }
  gir_value *ins[3];
  ins[0] = relayout(L, x, 0, ib, C, n);
  if (!ins[0]) return -1;
  const int64_t *sub = subsampled_1x1(L, n, C, M, ib, group);
  if (sub && !(ins[0] = subsample(L, ins[0], sub, n))) return -1;
  ins[1] = wv;
  ins[2] = NULL;
  if (bias) { /* [M] and [M/ob, ob] share the row-major order; the padding is zero */
    gir_shape bs = {.rank = 2, .dims = {Mp / ob, ob}};
    ins[2] = gir_const_new(g, NULL, bias->dtype, &bs, NULL); /* float32 or int32 */
    memset(ins[2]->data, 0, (size_t)gir_value_nbytes(ins[2]));
    memcpy(ins[2]->data, bias->data, (size_t)gir_value_nbytes(bias));
  }
  gir_node *cn = new_node(L, GIR_OP_conv_nchwc, ins, bias ? 3 : 2, n);
  if (sub) gir_attr_set_ints(g, cn, "strides", (const int64_t[]){1, 1}, 2);
  if (gir_attr_int(n, "pad_value", 0)) gir_attr_set_int(g, cn, "pad_value", gir_attr_int(n, "pad_value", 0));
  if (dw && Mp != C) gir_attr_set_int(g, cn, "group", Mp);           /* every (padded) channel its own group */
  if (!dw && group == 1 && C % ib) gir_attr_set_int(g, cn, "channels", C); /* the real ones of CB·ib */
  if (rank == 3) { /* the 1-D window on W, a unit one on H */
    int32_t nv;
    const int64_t *sv = gir_attr_ints(n, "strides", &nv), *dv = gir_attr_ints(n, "dilations", &nv),
                  *pv = gir_attr_ints(n, "pads", &nv);
    int64_t st[2] = {1, sv ? sv[0] : 1}, dl[2] = {1, dv ? dv[0] : 1}, pd[4] = {0, pv ? pv[0] : 0, 0, pv ? pv[1] : 0};
    gir_attr_set_ints(g, cn, "strides", st, 2);
    gir_attr_set_ints(g, cn, "dilations", dl, 2);
    gir_attr_set_ints(g, cn, "pads", pd, 4);
  }
  gir_value *y = finish(L, cn);
  if (!y || !(y = relayout(L, y, ob, 0, M, n))) return -1;
  if (rank == 3 && !(y = squeeze_h(L, y, n))) return -1;
  if (gir_replace_uses(g, n->out[0], y) < 0) return 0;
  L->st->convs++;
  return 1;
}

/* ---- layout-agnostic ops ---- */

/* Operand v of an element-wise op whose output is [N, C, H, W] (rank 4) or
 * [N, C, W] (rank 3: H = 1), in layout b. */
static gir_value *blocked_operand(lay *L, gir_value *v, int64_t C, int64_t b, int rank, const gir_node *origin) {
  int64_t vb;
  if (blocked_source(v, &vb)) return relayout(L, v, 0, b, C, origin);
  if (v->shape.rank > rank) return NULL;
  int64_t d[4] = {1, 1, 1, 1};
  for (int i = 0; i < v->shape.rank; i++) {
    int k = rank - v->shape.rank + i; /* v's axis k of the op's rank */
    d[rank == 4 || k < 2 ? k : 3] = v->shape.dims[i];
  }
  gir_value *v4 = v;
  if (v->shape.rank != 4 && d[1] != 1) {
    gir_node *r = new_node(L, GIR_OP_reshape, &v, 1, NULL);
    r->origin = origin->origin;
    gir_attr_set_ints(L->g, r, "shape", d, 4);
    if (!(v4 = finish(L, r))) return NULL;
  }
  if (d[1] == C) return relayout(L, v4, 0, b, C, origin);
  if (d[1] != 1) return NULL;
  int64_t d5[5] = {d[0], 1, d[2], d[3], 1};
  gir_node *r = new_node(L, GIR_OP_reshape, &v, 1, NULL);
  r->origin = origin->origin;
  gir_attr_set_ints(L->g, r, "shape", d5, 5);
  return finish(L, r);
}

static int is_spatial_reduce(const gir_node *n) {
  int32_t na;
  const int64_t *axes = gir_attr_ints(n, "axes", &na);
  if (!axes || !gir_attr_int(n, "keepdims", 1)) return 0;
  for (int i = 0; i < na; i++)
    if (axes[i] != 2 && axes[i] != 3) return 0;
  return 1;
}

/* A resize of a rank-r value (4: NCHW; 3: NCW) on its spatial axes only: N and C
 * keep their size at scale 1 (an identity mapping in every coordinate mode but
 * tf_crop_and_resize, which is left plain). */
static int spatial_resize(const gir_node *n, int r) {
  int32_t ns, nc;
  const int64_t *sz = gir_attr_ints(n, "sizes", &ns);
  const double *sc = gir_attr_floats(n, "scales", &nc);
  const gir_shape *x = &n->in[0]->shape;
  return sz && sc && ns == r && nc == r && x->rank == r &&
         gir_attr_int(n, "coord", GIR_COORD_HALF_PIXEL) != GIR_COORD_TF_CROP_AND_RESIZE && sz[0] == x->dims[0] &&
         sz[1] == x->dims[1] && sc[0] == 1 && sc[1] == 1;
}

/* The attributes of resize n's copy nn on n's blocked input (a 5-D value, new_node
 * copied n's mode and coordinates): the same sizes and scales on H and W (a 1-D
 * resize's on W, H = 1 kept), N, the blocks and the block axis kept, so every tap
 * reads a whole block (a contiguous vector) where the plain form gathered along
 * rows. roi, which only tf_crop_and_resize reads, becomes the whole range. */
static void blocked_resize_attrs(lay *L, gir_node *nn, const gir_node *n) {
  int32_t r;
  const int64_t *sz = gir_attr_ints(n, "sizes", &r);
  const double *sc = gir_attr_floats(n, "scales", &r);
  const gir_shape *v = &nn->in[0]->shape;
  int w = r - 1; /* W's position in n's axes */
  int64_t s5[5] = {v->dims[0], v->dims[1], r == 4 ? sz[2] : 1, sz[w], v->dims[4]};
  double c5[5] = {1, 1, r == 4 ? sc[2] : 1, sc[w], 1}, roi[10] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  gir_attr_set_ints(L->g, nn, "sizes", s5, 5);
  gir_attr_set_floats(L->g, nn, "scales", c5, 5);
  if (gir_attr_find(n, "roi")) gir_attr_set_floats(L->g, nn, "roi", roi, 10);
}

static int propagate(lay *L, gir_node *n) {
  int rank = n->n_out == 1 ? n->out[0]->shape.rank : 0;
  if (rank != 4 && rank != 3) return 0;
  int64_t b = 0, C = n->out[0]->shape.dims[1];
  for (int i = 0; i < n->n_in && !b; i++) blocked_source(n->in[i], &b);
  if (!b) return 0;
  gir_value *ins[64];
  if (n->n_in > 64) return 0;
  /* after a conv in NCHW1c only the element-wise ops follow, into its epilogue: a
   * pool or a concat on blocks of one would vectorize nothing */
  if (b == 1 && n->op != GIR_OP_unary && n->op != GIR_OP_cast && n->op != GIR_OP_binary && n->op != GIR_OP_where)
    return 0;
  switch (n->op) {
  case GIR_OP_unary: case GIR_OP_cast: case GIR_OP_binary: case GIR_OP_where:
    /* channels past C (padding to whole blocks) compute garbage nobody reads */
    for (int i = 0; i < n->n_in; i++) {
      ins[i] = blocked_operand(L, n->in[i], C, b, rank, n);
      if (!ins[i]) return 0; /* an operand that cannot follow: the op stays plain */
    }
    break;
  case GIR_OP_pool:
    if (gir_attr_int(n, "blocked", 0) || n->in[0]->shape.rank != 4 || rank != 4) return 0;
    ins[0] = blocked_source(n->in[0], &b);
    break;
  case GIR_OP_reduce:
    if (!is_spatial_reduce(n) || n->in[0]->shape.rank != 4 || rank != 4) return 0;
    ins[0] = blocked_source(n->in[0], &b);
    break;
  case GIR_OP_concat: {
    int64_t axis = gir_attr_int(n, "axis", 0);
    if (axis == 1) {
      for (int i = 0; i < n->n_in; i++) {
        if (n->in[i]->shape.rank != rank || n->in[i]->shape.dims[1] % b) return 0;
        if (!(ins[i] = relayout(L, n->in[i], 0, b, n->in[i]->shape.dims[1], n))) return -1;
      }
    } else if (rank == 4 && (axis == 2 || axis == 3)) { /* along H or W: every input in block b already */
      for (int i = 0; i < n->n_in; i++) {
        int64_t bi = 0;
        if (!(ins[i] = blocked_source(n->in[i], &bi)) || bi != b) return 0;
      }
    } else {
      return 0;
    }
    break;
  }
  case GIR_OP_slice: /* a spatial window (a transposed conv's crop, deconv.c): every channel block */
    if (!spatial_slice(n, rank)) return 0;
    break;
  case GIR_OP_resize:
    if (!spatial_resize(n, rank)) return 0;
    ins[0] = blocked_source(n->in[0], &b);
    break;
  default: return 0;
  }
  gir_value *y;
  if (n->op == GIR_OP_slice) {
    y = blocked_slice(L, n, blocked_source(n->in[0], &b));
  } else {
    gir_node *nn = new_node(L, n->op, ins, n->n_in, n);
    if (n->op == GIR_OP_pool) gir_attr_set_int(L->g, nn, "blocked", 1);
    if (n->op == GIR_OP_resize) blocked_resize_attrs(L, nn, n);
    y = finish(L, nn);
  }
  if (!y || !(y = relayout(L, y, b, 0, C, n))) return -1;
  if (rank == 3 && !(y = squeeze_h(L, y, n))) return -1;
  if (gir_replace_uses(L->g, n->out[0], y) < 0) return 0;
  L->st->propagated++;
  return 1;
}

/* ---- the stride-phase interleave of a transposed conv (deconv.c) ----
 *
 * deconv.c interleaves s phase outputs p_r [N, C, H, W] along spatial axis a as
 * reshape(concat(reshape(p_0, unit axis after a), .., axis a + 1), a and a + 1
 * merged). Left in NCHW behind the phases' relayouts, its kernel reads the blocks
 * with a channel-stride gather per output lane and picks the phase by a select on
 * the lane's parity. In the blocked layout the same three steps, with the unit
 * axis before the block axis, move whole blocks: the block stays the contiguous
 * vector and only spatial positions are permuted. The two interleaves of a 2-D
 * deconv both follow (a 1-D deconv's one, on NCW, as NCHW with H = 1), and so
 * do its crop and the element-wise ops after them; one relayout back remains,
 * at the end. */
static int interleave_blocked(lay *L, gir_node *n) {
  const gir_shape *ys = &n->out[0]->shape;
  const gir_node *cat = n->in[0]->producer;
  int r = ys->rank; /* 4: NCHW; 3: NCW, blocked as NCHW with H = 1 */
  if ((r != 4 && r != 3) || !cat || cat->op != GIR_OP_concat || cat->n_in > 64) return 0;
  const gir_shape *cs = &cat->out[0]->shape;
  int64_t a = gir_attr_int(cat, "axis", 0), b = 0;
  a = (a < 0 ? a + cs->rank : a) - 1; /* the spatial axis interleaved */
  if (cs->rank != r + 1 || a < 2 || a >= r || ys->dims[a] != cs->dims[a] * cs->dims[a + 1]) return 0;
  for (int j = 0; j < r; j++)
    if (j != a && ys->dims[j] != cs->dims[j < a ? j : j + 1]) return 0;
  gir_value *ins[64];
  for (int i = 0; i < cat->n_in; i++) { /* each a blocked phase, viewed with a unit axis after a */
    const gir_node *u = cat->in[i]->producer;
    int64_t bi = 0;
    if (!u || u->op != GIR_OP_reshape || u->in[0]->shape.rank != r || cat->in[i]->shape.dims[a + 1] != 1) return 0;
    for (int j = 0; j < r; j++)
      if (u->in[0]->shape.dims[j] != cat->in[i]->shape.dims[j <= a ? j : j + 1]) return 0;
    if (!(ins[i] = blocked_source(u->in[0], &bi)) || (b && bi != b) || ins[i]->shape.rank != 5) return 0;
    b = bi;
  }
  /* [N, C/b, H, W, b] → the unit axis after a → concat on it → a and a + 1 merged */
  int64_t C = ys->dims[1], ab = a + 4 - r, d6[6], d5[5]; /* ab: a's axis in the blocked form */
  for (int i = 0; i < cat->n_in; i++) {
    const gir_shape *s5 = &ins[i]->shape;
    for (int j = 0, o = 0; j < 5; j++) {
      d6[o++] = s5->dims[j];
      if (j == ab) d6[o++] = 1;
    }
    if (!(ins[i] = reshape_to(L, ins[i], d6, 6, n))) return -1;
  }
  gir_node *nc = new_node(L, GIR_OP_concat, ins, cat->n_in, cat);
  gir_attr_set_int(L->g, nc, "axis", ab + 1);
  gir_value *y = finish(L, nc);
  if (!y) return -1;
  for (int j = 0, o = 0; j < 6; j++) {
    if (j == ab + 1) continue;
    d5[o++] = j == ab ? y->shape.dims[ab] * y->shape.dims[ab + 1] : y->shape.dims[j];
  }
  if (!(y = reshape_to(L, y, d5, 5, n)) || !(y = relayout(L, y, b, 0, C, n))) return -1;
  if (r == 3 && !(y = squeeze_h(L, y, n))) return -1;
  if (gir_replace_uses(L->g, n->out[0], y) < 0) return 0;
  L->st->propagated++;
  return 1;
}

int lay_nchwc(gir_graph *g, int32_t block, int32_t masked_loads, lay_stats *stats, gir_err *err) {
  lay_stats st = {0};
  lay L = {.g = g, .err = err, .block = block, .masked_loads = masked_loads, .st = &st};
  int32_t n0 = g->n_nodes;
  /* scalar targets (Cortex-M4/M7, rv64gc): 8-bit convs alone, in blocks of 4
   * channels, so each output channel's quads of input bytes meet its weights' in
   * a 4-way dot product (SMLAD pairs on the Cortex-M DSP extension) */
  if (block < 4) L.block = 2, L.q8_only = 1;
  for (int k = 0; k < n0; k++) {
    gir_node *n = g->nodes[k];
    g->cur_guard = n->guard; /* what this rewrite adds runs where n did */
    int r = n->op == GIR_OP_conv      ? rewrite_conv(&L, n)
            : n->op == GIR_OP_reshape ? interleave_blocked(&L, n)
                                      : propagate(&L, n);
    if (r < 0) return -1;
  }
  g->cur_guard = NULL;
  if (g->n_nodes != n0) gir_resort_compact(g);
  for (int k = 0; k < g->n_nodes; k++) st.transforms += g->nodes[k]->op == GIR_OP_relayout;
  if (stats) *stats = st;
  return 0;
}
