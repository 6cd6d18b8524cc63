/* deconv.c — transposed convolution as convolutions (the sub-pixel, or phase,
 * decomposition), so it runs on the conv template instead of a gather that tests
 * every tap for divisibility by the stride.
 *
 * Along one axis y[o] = sum over o + pad = i*s + k of x[i] w[k] (dilation 1). For
 * the outputs o = q*s + r of one phase r only the taps k ≡ r + pad (mod s) meet
 * an input, k = k0 + j*s, at i = q + E - j with E = (r + pad - k0)/s. That is a
 * plain stride-1 correlation over x with the T = ceil((K - k0)/s) taps reversed,
 * reading x from q + E - (T-1): slicing and zero padding of x put that at 0.
 * Every phase computes Q = ceil(O/s) outputs; the s phases are interleaved
 * (concat on a new unit axis after the spatial one, then a reshape merging the
 * two), and the interleaved tensor is cropped to O. With k axes there are
 * prod(s) phase convs whose FLOPs add up to the transposed conv's own: none are
 * spent on the zeros a dilate-then-convolve rewrite would multiply.
 *
 * The weights [C, M/g, K..] become each phase's [M, C/g, T..], grouped as the
 * original; a phase with no tap (K < s) or whose taps read only padding is the
 * bias (or zeros), broadcast. The new convs are plain `conv` nodes: lay_nchwc,
 * which runs next, moves them to NCHW[x]c like any other, and with them the
 * interleaves, the crop and the element-wise ops after them (nchwc.c,
 * interleave_blocked): in the blocked layout an interleave moves whole channel
 * blocks, contiguous vectors, to their output positions, and one relayout back to
 * NCHW remains at the end, tiled as any relayout out of blocks
 * (schedule/sched_movement.c). Left in NCHW, each output vector would gather its
 * lanes a block apart from every phase and select by the lanes' parity. When some
 * phase is a broadcast, or the output channels are too few to block (an image's 3:
 * plain NCHW, vectors along the rows), the interleave stays in NCHW. */
#include <string.h>
#include "layout.h"
#include "simplify.h"

#define MAX_PHASES 16

typedef struct deconv {
  gir_graph *g;
  gir_err *err;
  const gir_node *n;
  int k;                          /* spatial axes */
  int64_t s[GIR_MAX_RANK], K[GIR_MAX_RANK], H[GIR_MAX_RANK], O[GIR_MAX_RANK], Q[GIR_MAX_RANK], pb[GIR_MAX_RANK];
} deconv;

/* One phase along one axis: the first tap, the tap count, and the input rows
 * [lo, hi] (possibly outside x) its Q outputs read. */
typedef struct phase_axis {
  int64_t k0, T, lo, hi;
} phase_axis;

static phase_axis plan_axis(const deconv *d, int i, int64_t r) {
  phase_axis p = {0};
  p.k0 = (r + d->pb[i]) % d->s[i];
  p.T = p.k0 < d->K[i] ? (d->K[i] - p.k0 + d->s[i] - 1) / d->s[i] : 0;
  int64_t E = (r + d->pb[i] - p.k0) / d->s[i];
  p.lo = E - (p.T - 1);
  p.hi = p.lo + d->Q[i] + p.T - 2;
  return p;
}

static gir_node *add_node(deconv *d, gir_op op, gir_value *const *ins, int32_t n_in) {
  gir_node *nn = gir_node_new(d->g, op, NULL, ins, n_in, 1);
  nn->origin = d->n->origin;
  return nn;
}

static gir_value *finish(deconv *d, gir_node *nn) { return gir_node_infer(d->g, nn, d->err) < 0 ? NULL : nn->out[0]; }

static gir_value *reshape(deconv *d, gir_value *x, int32_t rank, const int64_t *dims) {
  gir_node *nn = add_node(d, GIR_OP_reshape, &x, 1);
  gir_attr_set_ints(d->g, nn, "shape", dims, rank);
  return finish(d, nn);
}

/* x[starts + i] for i < sizes on every axis (step 1); x itself when that is all of x. */
static gir_value *crop(deconv *d, gir_value *x, const int64_t *starts, const int64_t *sizes) {
  int r = x->shape.rank, whole = 1;
  int64_t steps[GIR_MAX_RANK];
  for (int j = 0; j < r; j++) {
    steps[j] = 1;
    whole &= starts[j] == 0 && sizes[j] == x->shape.dims[j];
  }
  if (whole) return x;
  gir_node *sn = add_node(d, GIR_OP_slice, &x, 1);
  gir_attr_set_ints(d->g, sn, "starts", starts, r);
  gir_attr_set_ints(d->g, sn, "steps", steps, r);
  gir_attr_set_ints(d->g, sn, "sizes", sizes, r);
  return finish(d, sn);
}

/* The phase output [N, M, Q..] when no tap reaches x: the bias, or zeros. */
static gir_value *empty_phase(deconv *d, const gir_value *bias, int64_t M) {
  int r = d->k + 2;
  gir_shape cs = {.rank = r - 1, .dims = {M}}, ys = {.rank = r, .dims = {d->n->in[0]->shape.dims[0], M}};
  for (int i = 0; i < d->k; i++) {
    cs.dims[1 + i] = 1;
    ys.dims[2 + i] = d->Q[i];
  }
  gir_value *c = gir_const_new(d->g, NULL, GIR_F32, &cs, NULL);
  if (bias) memcpy(c->data, bias->data, (size_t)M * sizeof(float));
  else memset(c->data, 0, (size_t)M * sizeof(float));
  gir_node *nn = add_node(d, GIR_OP_broadcast_to, &c, 1);
  gir_attr_set_ints(d->g, nn, "shape", ys.dims, r);
  return finish(d, nn);
}

/* The conv computing phase r[] (one residue per axis). */
static gir_value *phase_conv(deconv *d, const int64_t *r, gir_value *x, const gir_value *w, const gir_value *bias) {
  int k = d->k, rank = k + 2;
  int64_t group = gir_attr_int(d->n, "group", 1), C = x->shape.dims[1], mg = w->shape.dims[1], M = mg * group;
  int64_t cg = C / group;
  phase_axis pa[GIR_MAX_RANK];
  int64_t starts[GIR_MAX_RANK] = {0}, sizes[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK];
  sizes[0] = x->shape.dims[0];
  sizes[1] = C;
  for (int i = 0; i < k; i++) {
    pa[i] = plan_axis(d, i, r[i]);
    int64_t from = pa[i].lo > 0 ? pa[i].lo : 0, to = pa[i].hi < d->H[i] - 1 ? pa[i].hi : d->H[i] - 1;
    if (pa[i].T == 0 || from > to) return empty_phase(d, bias, M);
    starts[2 + i] = from;
    sizes[2 + i] = to - from + 1;
    pads[i] = pa[i].lo < 0 ? -pa[i].lo : 0;
    pads[k + i] = pa[i].hi > d->H[i] - 1 ? pa[i].hi - (d->H[i] - 1) : 0;
  }
  gir_value *xin = crop(d, x, starts, sizes);
  if (!xin) return NULL;
  /* w'[m, c, t..] = w[g*cg + c, m % mg, k0 + (T-1-t)*s ..], g = m / mg */
  gir_shape ws = {.rank = rank, .dims = {M, cg}};
  int64_t taps = 1, ktaps = 1;
  for (int i = 0; i < k; i++) {
    ws.dims[2 + i] = pa[i].T;
    taps *= pa[i].T;
    ktaps *= d->K[i];
  }
  gir_value *wv = gir_const_new(d->g, NULL, GIR_F32, &ws, NULL);
  float *dst = wv->data;
  const float *src = w->data;
  for (int64_t m = 0; m < M; m++)
    for (int64_t c = 0; c < cg; c++)
      for (int64_t t = 0; t < taps; t++) {
        int64_t rest = t, ks = 0, kstride = 1;
        for (int i = k - 1; i >= 0; i--) {
          int64_t ti = rest % pa[i].T;
          rest /= pa[i].T;
          ks += (pa[i].k0 + (pa[i].T - 1 - ti) * d->s[i]) * kstride;
          kstride *= d->K[i];
        }
        int64_t ci = (m / mg) * cg + c;
        dst[(m * cg + c) * taps + t] = src[(ci * mg + m % mg) * ktaps + ks];
      }
  int64_t ones[GIR_MAX_RANK];
  for (int i = 0; i < k; i++) ones[i] = 1;
  gir_value *ins[3] = {xin, wv, (gir_value *)bias};
  gir_node *cn = add_node(d, GIR_OP_conv, ins, bias ? 3 : 2);
  gir_attr_set_ints(d->g, cn, "strides", ones, k);
  gir_attr_set_ints(d->g, cn, "dilations", ones, k);
  gir_attr_set_ints(d->g, cn, "pads", pads, 2 * k);
  gir_attr_set_int(d->g, cn, "group", group);
  return finish(d, cn);
}

/* Interleaves groups of s phase outputs along spatial axis i: each [.., Q_i, rest..]
 * becomes [.., Q_i, 1, rest..], they are concatenated on the unit axis, and the
 * result reshaped to [.., Q_i*s, rest..]. */
static gir_value *interleave(deconv *d, gir_value *const *parts, int i) {
  const gir_shape *ps = &parts[0]->shape;
  int ax = 2 + i;
  int64_t s = d->s[i];
  if (s == 1) return parts[0];
  int64_t ud[GIR_MAX_RANK + 1], md[GIR_MAX_RANK];
  for (int j = 0, o = 0; j < ps->rank; j++) {
    ud[o++] = ps->dims[j];
    if (j == ax) ud[o++] = 1;
    md[j] = j == ax ? ps->dims[j] * s : ps->dims[j];
  }
  gir_value *u[MAX_PHASES];
  for (int64_t j = 0; j < s; j++)
    if (!(u[j] = reshape(d, parts[j], ps->rank + 1, ud))) return NULL;
  gir_node *cn = add_node(d, GIR_OP_concat, u, (int32_t)s);
  gir_attr_set_int(d->g, cn, "axis", ax + 1);
  gir_value *y = finish(d, cn);
  return y ? reshape(d, y, ps->rank, md) : NULL;
}

/* 1 rewritten, 0 left alone, -1 error. */
static int rewrite(gir_graph *g, gir_node *n, gir_err *err) {
  gir_value *x = n->in[0], *w = n->in[1], *bias = n->n_in > 2 ? n->in[2] : NULL, *y0 = n->out[0];
  int r = x->shape.rank, k = r - 2;
  if (k < 1 || k > 3 || x->dtype != GIR_F32 || w->dtype != GIR_F32 || !w->data ||
      (bias && (bias->dtype != GIR_F32 || !bias->data)))
    return 0;
  deconv d = {.g = g, .err = err, .n = n, .k = k};
  int32_t ns, nd, np;
  const int64_t *st = gir_attr_ints(n, "strides", &ns), *dl = gir_attr_ints(n, "dilations", &nd);
  const int64_t *pd = gir_attr_ints(n, "pads", &np); /* output_padding is in y0's shape already */
  int64_t phases = 1;
  for (int i = 0; i < k; i++) {
    if (dl && nd == k && dl[i] != 1) return 0;
    d.s[i] = st && ns == k ? st[i] : 1;
    d.pb[i] = pd && np == 2 * k ? pd[i] : 0;
    d.K[i] = w->shape.dims[2 + i];
    d.H[i] = x->shape.dims[2 + i];
    d.O[i] = y0->shape.dims[2 + i];
    if (d.s[i] < 1 || d.s[i] > MAX_PHASES) return 0;
    d.Q[i] = (d.O[i] + d.s[i] - 1) / d.s[i];
    phases *= d.s[i];
    if (phases > MAX_PHASES) return 0;
  }
  /* the phases in row-major order of their residues (the last axis fastest) */
  gir_value *part[MAX_PHASES];
  for (int64_t p = 0; p < phases; p++) {
    int64_t res[GIR_MAX_RANK], rest = p;
    for (int i = k - 1; i >= 0; i--) {
      res[i] = rest % d.s[i];
      rest /= d.s[i];
    }
    if (!(part[p] = phase_conv(&d, res, x, w, bias))) return -1;
  }
  /* interleave the last axis first: groups of s_i consecutive entries */
  int64_t cnt = phases;
  for (int i = k - 1; i >= 0; i--) {
    int64_t groups = cnt / d.s[i];
    for (int64_t j = 0; j < groups; j++)
      if (!(part[j] = interleave(&d, part + j * d.s[i], i))) return -1;
    cnt = groups;
  }
  int64_t starts[GIR_MAX_RANK] = {0};
  gir_value *y = crop(&d, part[0], starts, y0->shape.dims);
  if (!y) return -1;
  return gir_replace_uses(g, y0, y) < 0 ? 0 : 1;
}

int lay_split_conv_transpose(gir_graph *g, int32_t *rewritten, gir_err *err) {
  int32_t n0 = g->n_nodes, cnt = 0;
  for (int i = 0; i < n0; i++) {
    gir_node *n = g->nodes[i];
    g->cur_guard = n->guard; /* what this rewrite adds runs where n did */
    if (n->op != GIR_OP_conv_transpose) continue;
    int rc = rewrite(g, n, err);
    if (rc < 0) return -1;
    cnt += rc;
  }
  g->cur_guard = NULL;
  if (g->n_nodes != n0) gir_resort_compact(g);
  if (rewritten) *rewritten = cnt;
  return 0;
}
