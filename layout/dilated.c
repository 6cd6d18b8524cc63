/* dilated.c — dilated convolutions without the taps that land in padding.
 *
 * A 3x3 conv with dilation 24 on a 32x32 map (DeepLab's atrous pyramid) reads, for
 * most outputs, only its centre tap inside the image: the other taps fall on the
 * zero padding, and a schedule over a padded input multiplies zeros for them (four
 * times the useful work there). Along one axis, output o reads tap k at
 * o*s - p + k*d, which lies inside [0, H) for k in an interval [lo(o), hi(o)] that
 * changes only at a few outputs; the outputs with equal intervals form segments
 * (three here: [0, 8) with taps 1..2, [8, 24) with tap 1, [24, 32) with taps 0..1).
 *
 * Each pair of a row segment and a column segment becomes a conv of its own: the
 * input rows and columns the segment's valid taps read (all inside the input: no
 * padding), the kernel's valid taps, the same dilation and stride. Concatenating
 * the pieces along W, then along H, gives the conv's output (the bias is in every
 * piece). The FLOPs are exactly the valid taps'. lay_nchwc, which runs next, blocks
 * the pieces like any conv and keeps the slices and concats between them blocked.
 *
 * Rewritten: 2-D float32 convs with constant weights, any group, some dilation > 1,
 * when the pieces save at least a fifth of the FLOPs and there are at most 16. */
#include <string.h>
#include "layout.h"
#include "simplify.h"

#define MAX_SEGMENTS 4

/* Output segments along one axis: [from, to) with valid taps [lo, hi]. */
typedef struct segment {
  int64_t from, to, lo, hi;
} segment;

/* The segments of an axis of input size H, kernel K, stride s, pad p (before), dilation
 * d, with O outputs; 0 when there are more than MAX_SEGMENTS or a segment has no tap. */
static int segments(int64_t H, int64_t K, int64_t s, int64_t p, int64_t d, int64_t O, segment *seg) {
  int n = 0;
  for (int64_t o = 0; o < O; o++) {
    int64_t lo = K, hi = -1;
    for (int64_t k = 0; k < K; k++) {
      int64_t i = o * s - p + k * d;
      if (i >= 0 && i < H) {
        if (k < lo) lo = k;
        hi = k;
      }
    }
    if (hi < lo) return 0; /* an output reading only padding: leave the conv as it is */
    if (n && seg[n - 1].lo == lo && seg[n - 1].hi == hi && seg[n - 1].to == o) {
      seg[n - 1].to = o + 1;
      continue;
    }
    if (n == MAX_SEGMENTS) return 0;
    seg[n++] = (segment){o, o + 1, lo, hi};
  }
  return n;
}

static gir_value *finish(gir_graph *g, gir_node *n, gir_err *err) {
  return gir_node_infer(g, n, err) < 0 ? NULL : n->out[0];
}

/* x[:, :, r0:r0+nr, c0:c0+nc] */
static gir_value *crop(gir_graph *g, const gir_node *like, gir_value *x, int64_t r0, int64_t nr, int64_t c0,
                       int64_t nc, gir_err *err) {
  const int64_t *d = x->shape.dims;
  if (r0 == 0 && c0 == 0 && nr == d[2] && nc == d[3]) return x;
  gir_node *n = gir_node_new(g, GIR_OP_slice, NULL, &x, 1, 1);
  n->origin = like->origin;
  int64_t st[4] = {0, 0, r0, c0}, sp[4] = {1, 1, 1, 1}, sz[4] = {d[0], d[1], nr, nc};
  gir_attr_set_ints(g, n, "starts", st, 4);
  gir_attr_set_ints(g, n, "steps", sp, 4);
  gir_attr_set_ints(g, n, "sizes", sz, 4);
  return finish(g, n, err);
}

static gir_value *concat(gir_graph *g, const gir_node *like, gir_value **parts, int n, int64_t axis, gir_err *err) {
  if (n == 1) return parts[0];
  gir_node *c = gir_node_new(g, GIR_OP_concat, NULL, parts, n, 1);
  c->origin = like->origin;
  gir_attr_set_int(g, c, "axis", axis);
  return finish(g, c, err);
}

/* The piece of conv n for a row segment and a column segment. */
static gir_value *piece(gir_graph *g, const gir_node *n, const segment *rs, const segment *cs, const int64_t *st,
                        const int64_t *pd, const int64_t *dl, gir_err *err) {
  gir_value *x = n->in[0], *w = n->in[1], *b = n->n_in > 2 ? n->in[2] : NULL;
  int64_t KH = w->shape.dims[2], KW = w->shape.dims[3], M = w->shape.dims[0], CG = w->shape.dims[1];
  int64_t th = rs->hi - rs->lo + 1, tw = cs->hi - cs->lo + 1;
  /* the input rows the piece reads: from its first output's first valid tap to its
   * last output's last valid tap */
  int64_t r0 = rs->from * st[0] - pd[0] + rs->lo * dl[0], r1 = (rs->to - 1) * st[0] - pd[0] + rs->hi * dl[0];
  int64_t c0 = cs->from * st[1] - pd[1] + cs->lo * dl[1], c1 = (cs->to - 1) * st[1] - pd[1] + cs->hi * dl[1];
  gir_value *xin = crop(g, n, x, r0, r1 - r0 + 1, c0, c1 - c0 + 1, err);
  if (!xin) return NULL;
  gir_shape ws = {.rank = 4, .dims = {M, CG, th, tw}};
  gir_value *wv = gir_const_new(g, NULL, GIR_F32, &ws, NULL);
  const float *src = w->data;
  float *dst = wv->data;
  for (int64_t m = 0; m < M * CG; m++)
    for (int64_t i = 0; i < th; i++)
      memcpy(dst + (m * th + i) * tw, src + (m * KH + rs->lo + i) * KW + cs->lo, (size_t)tw * sizeof(float));
  gir_value *ins[3] = {xin, wv, b};
  gir_node *c = gir_node_new(g, GIR_OP_conv, NULL, ins, b ? 3 : 2, 1);
  c->origin = n->origin;
  int64_t zero[4] = {0, 0, 0, 0};
  gir_attr_set_ints(g, c, "strides", st, 2);
  gir_attr_set_ints(g, c, "dilations", dl, 2);
  gir_attr_set_ints(g, c, "pads", zero, 4);
  gir_attr_set_int(g, c, "group", gir_attr_int(n, "group", 1));
  gir_value *y = finish(g, c, err);
  if (y && (y->shape.dims[2] != rs->to - rs->from || y->shape.dims[3] != cs->to - cs->from)) {
    gir_errf(err, "dilated conv split: a piece has the wrong shape (an internal error)");
    return NULL;
  }
  return y;
}

static int rewrite(gir_graph *g, gir_node *n, gir_err *err) {
  gir_value *x = n->in[0], *w = n->in[1], *b = n->n_in > 2 ? n->in[2] : NULL;
  if (x->shape.rank != 4 || x->dtype != GIR_F32 || !w->data || (b && !b->data)) return 0;
  int32_t ns, nd, np;
  const int64_t *st = gir_attr_ints(n, "strides", &ns), *dl = gir_attr_ints(n, "dilations", &nd),
                *pd = gir_attr_ints(n, "pads", &np);
  if (!st || !dl || !pd || ns != 2 || nd != 2 || np != 4 || (dl[0] == 1 && dl[1] == 1)) return 0;
  const int64_t *xd = x->shape.dims, *od = n->out[0]->shape.dims;
  int64_t KH = w->shape.dims[2], KW = w->shape.dims[3];
  segment rs[MAX_SEGMENTS], cs[MAX_SEGMENTS];
  int nr = segments(xd[2], KH, st[0], pd[0], dl[0], od[2], rs), nc = segments(xd[3], KW, st[1], pd[1], dl[1], od[3], cs);
  if (!nr || !nc) return 0;
  /* worth it: the valid taps at most 4/5 of the kernel's over the output */
  int64_t valid = 0, all = od[2] * od[3] * KH * KW;
  for (int i = 0; i < nr; i++)
    for (int j = 0; j < nc; j++)
      valid += (rs[i].to - rs[i].from) * (cs[j].to - cs[j].from) * (rs[i].hi - rs[i].lo + 1) * (cs[j].hi - cs[j].lo + 1);
  if (valid * 5 > all * 4) return 0;
  gir_value *rows[MAX_SEGMENTS];
  for (int i = 0; i < nr; i++) {
    gir_value *cols[MAX_SEGMENTS];
    for (int j = 0; j < nc; j++)
      if (!(cols[j] = piece(g, n, &rs[i], &cs[j], st, pd, dl, err))) return -1;
    if (!(rows[i] = concat(g, n, cols, nc, 3, err))) return -1;
  }
  gir_value *y = concat(g, n, rows, nr, 2, err);
  if (!y) return -1;
  if (gir_replace_uses(g, n->out[0], y) < 0) return 0;
  return 1;
}

int lay_split_dilated_conv(gir_graph *g, int32_t *rewritten, gir_err *err) {
  int32_t n0 = g->n_nodes, done = 0;
  for (int k = 0; k < n0; k++) {
    gir_node *n = g->nodes[k];
    g->cur_guard = n->guard; /* what this rewrite adds runs where n did */
    if (n->op != GIR_OP_conv) continue;
    int r = rewrite(g, n, err);
    if (r < 0) return -1;
    done += r;
  }
  g->cur_guard = NULL;
  if (done) gir_resort_compact(g);
  if (rewritten) *rewritten = done;
  return 0;
}
