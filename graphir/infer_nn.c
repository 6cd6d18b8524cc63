/* infer_nn.c — shape inference for the complex-out-fusable and opaque ops: conv,
 * conv_transpose, matmul, pool, lrn, topk and the scatters. Padding arrives
 * resolved (auto_pad is an importer concern): pads = [begin..., end...]. */
#include "infer.h"

/* Reads an INTS attribute of exactly k values, or fills def when absent. */
static int spatial_attr(const gir_node *n, const char *name, int k, int64_t def, int64_t *out, gir_err *err) {
  int32_t cnt;
  const int64_t *v = gir_attr_ints(n, name, &cnt);
  if (!v) {
    for (int i = 0; i < k; i++) out[i] = def;
    return 0;
  }
  if (cnt != k) return gir_errf(err, "attribute %s needs %d values, has %d", name, k, cnt);
  for (int i = 0; i < cnt; i++) out[i] = v[i];
  return 0;
}

typedef struct window {
  int k;
  int64_t kernel[GIR_MAX_RANK], strides[GIR_MAX_RANK], dil[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK];
} window;

static int read_window(const gir_node *n, int k, const int64_t *kernel, window *w, gir_err *err) {
  w->k = k;
  for (int i = 0; i < k; i++) w->kernel[i] = kernel[i];
  if (spatial_attr(n, "strides", k, 1, w->strides, err) < 0 || spatial_attr(n, "dilations", k, 1, w->dil, err) < 0 ||
      spatial_attr(n, "pads", 2 * k, 0, w->pads, err) < 0)
    return -1;
  for (int i = 0; i < k; i++) {
    if (w->strides[i] < 1 || w->dil[i] < 1 || w->kernel[i] < 1 || w->kernel[i] > (1 << 20) ||
        w->strides[i] > (1 << 20) || w->dil[i] > (1 << 20))
      return gir_errf(err, "bad kernel, stride or dilation on spatial axis %d", i);
    if (w->pads[i] < 0 || w->pads[i + k] < 0 || w->pads[i] > (1 << 20) || w->pads[i + k] > (1 << 20))
      return gir_errf(err, "bad padding on spatial axis %d", i);
  }
  return 0;
}

/* Output extent of a sliding window; ceil mode drops a last window that would
 * start in the right padding (the rule ONNX Runtime and PyTorch use). */
static int64_t window_out(int64_t in, const window *w, int i, int ceil_mode) {
  /* kernel, stride, dilation and pads are bounded by 2^20 (read_window), dims by
   * int64: 128-bit arithmetic cannot overflow */
  __int128 span = (__int128)w->dil[i] * (w->kernel[i] - 1) + 1;
  __int128 num = (__int128)in + w->pads[i] + w->pads[i + w->k] - span;
  if (num < 0) return -1;
  __int128 o = (ceil_mode ? (num + w->strides[i] - 1) / w->strides[i] : num / w->strides[i]) + 1;
  if (ceil_mode && (o - 1) * w->strides[i] >= (__int128)in + w->pads[i]) o--;
  return o > INT64_MAX ? -1 : (int64_t)o;
}

/* Element types of a conv / matmul: both operands alike (the output too), or
 * both 8-bit integers of either signedness — int8 products accumulated in int32
 * (the output, and the bias, are int32; a conv may pad with "pad_value", the
 * input's zero point, instead of 0). */
static int product_types(const gir_node *n, gir_dtype *out, gir_err *err) {
  gir_dtype a = n->in[0]->dtype, b = n->in[1]->dtype;
  int q8 = (a == GIR_U8 || a == GIR_I8) && (b == GIR_U8 || b == GIR_I8);
  if (a != b && !q8) return gir_errf(err, "operand element types differ (%s, %s)", gir_dtype_name(a), gir_dtype_name(b));
  *out = q8 ? GIR_I32 : a;
  if (n->n_in > 2 && n->in[2] && n->in[2]->dtype != *out)
    return gir_errf(err, "bias must be %s, not %s", gir_dtype_name(*out), gir_dtype_name(n->in[2]->dtype));
  if (gir_attr_int(n, "pad_value", 0) && (!q8 || gir_attr_int(n, "pad_value", 0) < (a == GIR_U8 ? 0 : -128) ||
                                          gir_attr_int(n, "pad_value", 0) > (a == GIR_U8 ? 255 : 127)))
    return gir_errf(err, "pad_value %lld does not fit the 8-bit input", (long long)gir_attr_int(n, "pad_value", 0));
  return 0;
}

int gir_infer_conv(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape, *wt = &n->in[1]->shape;
  int k = x->rank - 2;
  int64_t group = gir_attr_int(n, "group", 1);
  if (k < 1 || wt->rank != x->rank) return gir_errf(err, "conv needs input and weight of the same rank >= 3");
  gir_dtype ot;
  if (product_types(n, &ot, err) < 0) return -1;
  if (group < 1 || x->dims[1] % group || wt->dims[0] % group || x->dims[1] / group != wt->dims[1])
    return gir_errf(err, "channels %lld, weight %lldx%lld and group %lld disagree", (long long)x->dims[1],
                    (long long)wt->dims[0], (long long)wt->dims[1], (long long)group);
  if (n->n_in > 2 && n->in[2] && (n->in[2]->shape.rank != 1 || n->in[2]->shape.dims[0] != wt->dims[0]))
    return gir_errf(err, "bias must have one value per output channel");
  window w;
  if (read_window(n, k, wt->dims + 2, &w, err) < 0) return -1;
  gir_shape s = {.rank = x->rank, .dims = {x->dims[0], wt->dims[0]}};
  for (int i = 0; i < k; i++) {
    s.dims[2 + i] = window_out(x->dims[2 + i], &w, i, 0);
    if (s.dims[2 + i] < 1) return gir_errf(err, "kernel larger than padded input on spatial axis %d", i);
  }
  return gir_set_out(n, 0, ot, &s, err);
}

int gir_infer_conv_nchwc(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape, *wt = &n->in[1]->shape;
  int64_t group = gir_attr_int(n, "group", 1);
  gir_dtype ot;
  if (x->rank != 5 || (wt->rank != 6 && wt->rank != 7))
    return gir_errf(err, "conv_nchwc needs a 5-D input and a 6-D weight");
  if (product_types(n, &ot, err) < 0) return -1;
  gir_shape w6 = *wt; /* 7-D: 8-bit weights in quads of input channels, [M/ob, CB, KH, KW, wb/4, ob, 4] */
  if (wt->rank == 7) {
    if (ot != GIR_I32 || wt->dims[6] != 4 || group != 1)
      return gir_errf(err, "conv_nchwc: a 7-D weight holds quads of 8-bit input channels, dense");
    w6.rank = 6;
    w6.dims[4] = wt->dims[4] * 4;
  }
  wt = &w6;
  int64_t ib = x->dims[4], ob = wt->dims[5], channels = x->dims[1] * ib;
  if (group < 1) return gir_errf(err, "conv_nchwc: group %lld", (long long)group);
  if (group != 1 && wt->dims[4] == 1 && ib > 1) { /* depthwise (a grouped conv in blocks of one is not) */
    if (group != channels || wt->dims[1] != 1 || ob != ib || wt->dims[0] != x->dims[1])
      return gir_errf(err, "conv_nchwc: group %lld is not depthwise", (long long)group);
  } else if (wt->dims[1] * group != x->dims[1] || wt->dims[4] != ib || wt->dims[0] % group) {
    return gir_errf(err, "conv_nchwc: weight blocks do not match the input's in %lld group(s)", (long long)group);
  }
  if (n->n_in > 2 && n->in[2] &&
      (n->in[2]->shape.rank != 2 || n->in[2]->shape.dims[0] != wt->dims[0] || n->in[2]->shape.dims[1] != ob))
    return gir_errf(err, "conv_nchwc: bias must be [M/ob, ob]");
  int64_t real = gir_attr_int(n, "channels", 0); /* input padded to whole blocks: the real channels */
  if (real < 0 || real > channels || (real && group != 1))
    return gir_errf(err, "conv_nchwc: %lld real channels of %lld", (long long)real, (long long)channels);
  window w;
  if (read_window(n, 2, wt->dims + 2, &w, err) < 0) return -1;
  gir_shape s = {.rank = 5, .dims = {x->dims[0], wt->dims[0], 0, 0, ob}};
  for (int i = 0; i < 2; i++) {
    s.dims[2 + i] = window_out(x->dims[2 + i], &w, i, 0);
    if (s.dims[2 + i] < 1) return gir_errf(err, "kernel larger than padded input on spatial axis %d", i);
  }
  return gir_set_out(n, 0, ot, &s, err);
}

int gir_infer_conv_transpose(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape, *wt = &n->in[1]->shape;
  int k = x->rank - 2;
  int64_t group = gir_attr_int(n, "group", 1), opad[GIR_MAX_RANK];
  if (k < 1 || wt->rank != x->rank) return gir_errf(err, "conv_transpose needs input and weight of the same rank >= 3");
  if (group < 1 || x->dims[1] != wt->dims[0] || wt->dims[0] % group)
    return gir_errf(err, "channels and weight disagree");
  window w;
  if (read_window(n, k, wt->dims + 2, &w, err) < 0 || spatial_attr(n, "output_padding", k, 0, opad, err) < 0)
    return -1;
  gir_shape s = {.rank = x->rank, .dims = {x->dims[0], wt->dims[1] * group}};
  if (n->n_in > 2 && n->in[2] && (n->in[2]->shape.rank != 1 || n->in[2]->shape.dims[0] != s.dims[1]))
    return gir_errf(err, "bias must have one value per output channel");
  for (int i = 0; i < k; i++) {
    if (opad[i] < 0 || opad[i] >= (w.strides[i] > w.dil[i] ? w.strides[i] : w.dil[i]))
      return gir_errf(err, "output_padding out of range on axis %d", i);
    __int128 o = (__int128)w.strides[i] * (x->dims[2 + i] - 1) + opad[i] + (__int128)(w.kernel[i] - 1) * w.dil[i] + 1 -
                 w.pads[i] - w.pads[i + k];
    if (o < 1) return gir_errf(err, "empty output on spatial axis %d", i);
    if (o > INT64_MAX) return gir_errf(err, "output size overflows on spatial axis %d", i);
    s.dims[2 + i] = (int64_t)o;
  }
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_matmul(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *a = &n->in[0]->shape, *b = &n->in[1]->shape;
  if (a->rank < 2 || b->rank < 2) return gir_errf(err, "matmul operands need rank >= 2");
  gir_dtype ot;
  if (product_types(n, &ot, err) < 0) return -1;
  int64_t m = a->dims[a->rank - 2], ka = a->dims[a->rank - 1], kb = b->dims[b->rank - 2], nn = b->dims[b->rank - 1];
  int64_t nr = gir_attr_int(n, "packed", 0), pb = gir_attr_int(n, "pbatch", 0);
  if (nr) { /* b in panels [batch.., ceil(N/nr), K, nr] (pbatch batch dims); 8-bit: [ceil(N/nr), K/4, nr, 4] */
    nn = gir_attr_int(n, "n", 0);
    int quad = b->rank == 4 && ot == GIR_I32 && b->dims[3] == 4 && !pb;
    const int64_t *p = b->dims + (pb > 0 && pb < b->rank ? pb : 0);
    if (nr < 0 || pb < 0 || (b->rank != 3 + pb && !quad) || p[2] != nr || nn < 1 || p[0] != (nn + nr - 1) / nr)
      return gir_errf(err, "packed matmul: weight panels do not hold %lld columns of %lld", (long long)nn, (long long)nr);
    kb = quad ? p[1] * 4 : p[1];
  }
  if (ka != kb) return gir_errf(err, "inner dimensions %lld and %lld differ", (long long)ka, (long long)kb);
  gir_shape ba = {.rank = a->rank - 2}, bb = {.rank = b->rank - 2}, s;
  for (int i = 0; i < ba.rank; i++) ba.dims[i] = a->dims[i];
  for (int i = 0; i < bb.rank; i++) bb.dims[i] = b->dims[i];
  if (nr) bb.rank = (int32_t)pb;
  if (gir_broadcast(&ba, &bb, &s, err) < 0) return -1;
  s.dims[s.rank++] = m;
  s.dims[s.rank++] = nn;
  return gir_set_out(n, 0, ot, &s, err);
}

int gir_infer_pool(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  int blocked = gir_attr_int(n, "blocked", 0) != 0;
  int k = x->rank - 2 - blocked;
  int64_t fn = gir_attr_int(n, "fn", -1);
  if (fn < 0 || fn >= GIR_POOL_COUNT) return gir_errf(err, "bad pool function");
  if (k < 1) return gir_errf(err, "pool needs rank >= 3");
  const int64_t *kernel;
  int32_t nk;
  kernel = gir_attr_ints(n, "kernel", &nk);
  if (nk != k) return gir_errf(err, "kernel needs %d values, has %d", k, nk);
  window w;
  if (read_window(n, k, kernel, &w, err) < 0) return -1;
  gir_shape s = *x;
  for (int i = 0; i < k; i++) {
    s.dims[2 + i] = window_out(x->dims[2 + i], &w, i, (int)gir_attr_int(n, "ceil", 0));
    if (s.dims[2 + i] < 1) return gir_errf(err, "window larger than padded input on spatial axis %d", i);
  }
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_pool_index(gir_graph *g, gir_node *n, gir_err *err) {
  /* the windows of a max pool; storage_order 1 (column-major indices) only for 2-D */
  int64_t so = gir_attr_int(n, "storage_order", 0);
  if (so != 0 && (so != 1 || n->in[0]->shape.rank != 4)) return gir_errf(err, "storage_order must be 0, or 1 for 2-D");
  if (gir_attr_int(n, "fn", -1) != GIR_POOL_MAX) return gir_errf(err, "pool_index needs fn=max");
  if (gir_infer_pool(g, n, err) < 0) return -1;
  n->out[0]->dtype = GIR_I64;
  return 0;
}

int gir_infer_lrn(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  if (n->in[0]->shape.rank < 3 || gir_attr_int(n, "size", 0) < 1) return gir_errf(err, "lrn needs rank >= 3 and size >= 1");
  return gir_set_out(n, 0, n->in[0]->dtype, &n->in[0]->shape, err);
}

int gir_infer_nms(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_value *bx = n->in[0], *sc = n->in[1];
  if (bx->dtype != GIR_F32 || sc->dtype != GIR_F32) return gir_errf(err, "boxes and scores must be float32");
  if (bx->shape.rank != 3 || bx->shape.dims[2] != 4) return gir_errf(err, "boxes must be [batches, boxes, 4]");
  if (sc->shape.rank != 3 || sc->shape.dims[0] != bx->shape.dims[0] || sc->shape.dims[2] != bx->shape.dims[1])
    return gir_errf(err, "scores must be [batches, classes, boxes] for boxes [batches, boxes, 4]");
  static const gir_dtype want[5] = {GIR_F32, GIR_F32, GIR_I64, GIR_F32, GIR_F32};
  for (int i = 2; i < n->n_in; i++)
    if (n->in[i] && (n->in[i]->dtype != want[i] || gir_value_numel(n->in[i]) != 1))
      return gir_errf(err, "input %d must be one %s", i, gir_dtype_name(want[i]));
  int64_t cap = gir_attr_int(n, "cap", -1), center = gir_attr_int(n, "center_point_box", 0);
  int64_t most = bx->shape.dims[0] * sc->shape.dims[1] * bx->shape.dims[1]; /* shapes never overflow */
  if (cap < 0 || cap > most) return gir_errf(err, "cap %lld is outside [0, %lld]", (long long)cap, (long long)most);
  if (center != 0 && center != 1) return gir_errf(err, "center_point_box must be 0 or 1");
  gir_shape s = {.rank = 2, .dims = {cap, 3}}, one = {.rank = 0};
  if (gir_set_out(n, 0, GIR_I64, &s, err) < 0) return -1;
  return gir_set_out(n, 1, GIR_I64, &one, err);
}

int gir_infer_nonzero(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_value *x = n->in[0];
  if (!gir_dtype_first_class(x->dtype) || gir_dtype_is_f8(x->dtype)) return gir_errf(err, "unsupported element type");
  gir_shape s = {.rank = 2, .dims = {x->shape.rank ? x->shape.rank : 1, gir_value_numel(x)}}, one = {.rank = 0};
  if (gir_set_out(n, 0, GIR_I64, &s, err) < 0) return -1;
  return gir_set_out(n, 1, GIR_I64, &one, err);
}

int gir_infer_unique(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_value *x = n->in[0];
  int64_t axis = gir_attr_int(n, "axis", -1), L = gir_value_numel(x);
  if (axis < -1 || axis >= x->shape.rank) return gir_errf(err, "axis %lld out of range", (long long)axis);
  if (!gir_dtype_first_class(x->dtype) || gir_dtype_is_f8(x->dtype)) return gir_errf(err, "unsupported element type");
  gir_shape y = {.rank = 1, .dims = {L}};
  if (axis >= 0) y = x->shape, L = x->shape.dims[axis];
  gir_shape l = {.rank = 1, .dims = {L}}, one = {.rank = 0};
  if (gir_set_out(n, 0, x->dtype, &y, err) < 0) return -1;
  for (int i = 1; i < 4; i++)
    if (gir_set_out(n, i, GIR_I64, &l, err) < 0) return -1;
  return gir_set_out(n, 4, GIR_I64, &one, err);
}

int gir_infer_topk(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  int64_t axis, k = gir_attr_int(n, "k", -1);
  if (gir_norm_axis(gir_attr_int(n, "axis", -1), x->rank, &axis, err) < 0) return -1;
  if (k < 0 || k > x->dims[axis]) return gir_errf(err, "k=%lld out of range", (long long)k);
  gir_shape s = *x;
  s.dims[axis] = k;
  if (gir_set_out(n, 0, n->in[0]->dtype, &s, err) < 0) return -1;
  return gir_set_out(n, 1, GIR_I64, &s, err);
}

static int infer_scatter(gir_node *n, gir_err *err) {
  if (n->in[1]->dtype != GIR_I64 && n->in[1]->dtype != GIR_I32) return gir_errf(err, "indices must be integers");
  if (n->in[2]->dtype != n->in[0]->dtype) return gir_errf(err, "updates differ in element type");
  int64_t r = gir_attr_int(n, "reduction", 0);
  if (r < 0 || r >= GIR_SCATTER_COUNT) return gir_errf(err, "bad reduction");
  return gir_set_out(n, 0, n->in[0]->dtype, &n->in[0]->shape, err);
}

int gir_infer_scatter_elements(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int64_t axis;
  if (gir_norm_axis(gir_attr_int(n, "axis", 0), n->in[0]->shape.rank, &axis, err) < 0) return -1;
  if (!gir_shape_equal(&n->in[1]->shape, &n->in[2]->shape) || n->in[1]->shape.rank != n->in[0]->shape.rank)
    return gir_errf(err, "indices and updates must share a shape of the data's rank");
  return infer_scatter(n, err);
}

int gir_infer_scatter_nd(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *d = &n->in[0]->shape, *ix = &n->in[1]->shape, *u = &n->in[2]->shape;
  if (ix->rank < 1) return gir_errf(err, "indices need rank >= 1");
  int64_t q = ix->dims[ix->rank - 1];
  if (q < 1 || q > d->rank) return gir_errf(err, "index tuple length out of range");
  if (u->rank != ix->rank - 1 + d->rank - q) return gir_errf(err, "updates have the wrong rank");
  for (int i = 0; i < ix->rank - 1; i++)
    if (u->dims[i] != ix->dims[i]) return gir_errf(err, "updates shape mismatch");
  for (int i = 0; i < d->rank - q; i++)
    if (u->dims[ix->rank - 1 + i] != d->dims[q + i]) return gir_errf(err, "updates shape mismatch");
  return infer_scatter(n, err);
}

/* Winograd transforms (graphir/winograd.h): the tile counts along H and W. */
static int winograd_tiles(const gir_node *n, int64_t *m, int64_t *th, int64_t *tw, gir_err *err) {
  *m = gir_attr_int(n, "m", 0);
  int64_t oh = gir_attr_int(n, "oh", 0), ow = gir_attr_int(n, "ow", 0);
  if ((*m != 2 && *m != 4) || oh < 1 || ow < 1 || oh > INT32_MAX || ow > INT32_MAX)
    return gir_errf(err, "%s: tile m=%lld over %lldx%lld outputs", gir_op_name(n->op), (long long)*m, (long long)oh,
                    (long long)ow);
  *th = (oh + *m - 1) / *m;
  *tw = (ow + *m - 1) / *m;
  return 0;
}

int gir_infer_winograd_in(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  int64_t m, th, tw;
  if (winograd_tiles(n, &m, &th, &tw, err) < 0) return -1;
  if (x->rank != 5 || n->in[0]->dtype != GIR_F32) return gir_errf(err, "winograd_in needs a 5-D float32 input");
  int32_t np;
  const int64_t *p = gir_attr_ints(n, "pads", &np);
  if (!p || np != 2 || p[0] < 0 || p[1] < 0 || p[0] > 2 || p[1] > 2)
    return gir_errf(err, "winograd_in: pads must be [top, left] in 0..2");
  __int128 t = (__int128)x->dims[0] * th * tw;
  if (t > INT32_MAX) return gir_errf(err, "winograd_in: too many tiles");
  gir_shape s = {.rank = 4, .dims = {m + 2, m + 2, (int64_t)t, x->dims[1] * x->dims[4]}};
  return gir_set_out(n, 0, GIR_F32, &s, err);
}

int gir_infer_winograd_out(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *v = &n->in[0]->shape;
  int64_t m, th, tw, ob = gir_attr_int(n, "ob", 0);
  if (winograd_tiles(n, &m, &th, &tw, err) < 0) return -1;
  if (v->rank != 4 || n->in[0]->dtype != GIR_F32 || v->dims[0] != m + 2 || v->dims[1] != m + 2 || v->dims[2] % (th * tw))
    return gir_errf(err, "winograd_out needs a float32 [%lld, %lld, N*%lld, M] input", (long long)(m + 2),
                    (long long)(m + 2), (long long)(th * tw));
  if (ob < 1 || v->dims[3] % ob) return gir_errf(err, "winograd_out: block %lld does not divide %lld channels", (long long)ob, (long long)v->dims[3]);
  if (n->n_in > 1 && n->in[1] &&
      (n->in[1]->shape.rank != 2 || n->in[1]->shape.dims[0] != v->dims[3] / ob || n->in[1]->shape.dims[1] != ob ||
       n->in[1]->dtype != GIR_F32))
    return gir_errf(err, "winograd_out: bias must be float32 [M/ob, ob]");
  gir_shape s = {.rank = 5,
                 .dims = {v->dims[2] / (th * tw), v->dims[3] / ob, gir_attr_int(n, "oh", 0), gir_attr_int(n, "ow", 0), ob}};
  return gir_set_out(n, 0, GIR_F32, &s, err);
}
