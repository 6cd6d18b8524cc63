/* infer_movement.c — shape inference for data-movement ops: reshape, transpose,
 * concat, slice, pad, broadcast_to, tile, the gathers, one_hot and resize. Their
 * attributes are already resolved by the importer (no -1 dims, normalized slice
 * starts/steps/sizes), so inference here is validation plus arithmetic. */
#include "infer.h"

static int ints_attr(const gir_node *n, const char *name, int32_t want, const int64_t **out, gir_err *err) {
  int32_t cnt;
  *out = gir_attr_ints(n, name, &cnt);
  if (cnt != want || (want && !*out))
    return gir_errf(err, "attribute %s needs %d values, has %d", name, want, cnt);
  return 0;
}

int gir_infer_reshape(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int32_t r;
  const int64_t *dims = gir_attr_ints(n, "shape", &r);
  if (r > GIR_MAX_RANK) return gir_errf(err, "rank %d exceeds the limit of %d", r, GIR_MAX_RANK);
  gir_shape s = {.rank = r};
  for (int i = 0; i < r; i++) s.dims[i] = dims[i];
  int64_t a = gir_shape_numel(&n->in[0]->shape, err), b = gir_shape_numel(&s, err);
  if (a < 0 || b < 0) return -1;
  if (a != b) return gir_errf(err, "cannot reshape %lld elements into %lld", (long long)a, (long long)b);
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_transpose(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  const int64_t *perm;
  if (ints_attr(n, "perm", x->rank, &perm, err) < 0) return -1;
  gir_shape s = {.rank = x->rank};
  int seen[GIR_MAX_RANK] = {0};
  for (int i = 0; i < x->rank; i++) {
    if (perm[i] < 0 || perm[i] >= x->rank || seen[perm[i]]++) return gir_errf(err, "perm is not a permutation");
    s.dims[i] = x->dims[perm[i]];
  }
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_concat(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_value *x0 = n->in[0];
  int64_t axis;
  if (gir_norm_axis(gir_attr_int(n, "axis", 0), x0->shape.rank, &axis, err) < 0) return -1;
  gir_shape s = x0->shape;
  s.dims[axis] = 0;
  for (int i = 0; i < n->n_in; i++) {
    const gir_value *x = n->in[i];
    if (!x) return gir_errf(err, "input %d missing", i);
    if (x->dtype != x0->dtype || x->shape.rank != s.rank) return gir_errf(err, "input %d differs in type or rank", i);
    for (int d = 0; d < s.rank; d++)
      if (d != axis && x->shape.dims[d] != s.dims[d])
        return gir_errf(err, "input %d differs in dimension %d", i, d);
    if (s.dims[axis] > INT64_MAX - x->shape.dims[axis]) return gir_errf(err, "concatenated size overflows");
    s.dims[axis] += x->shape.dims[axis];
  }
  return gir_set_out(n, 0, x0->dtype, &s, err);
}

int gir_infer_slice(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  const int64_t *st, *sp, *sz;
  if (ints_attr(n, "starts", x->rank, &st, err) < 0 || ints_attr(n, "steps", x->rank, &sp, err) < 0 ||
      ints_attr(n, "sizes", x->rank, &sz, err) < 0)
    return -1;
  gir_shape s = {.rank = x->rank};
  for (int i = 0; i < x->rank; i++) {
    if (sz[i] < 0 || sp[i] == 0) return gir_errf(err, "bad size or step on axis %d", i);
    if (sz[i] > 0) {
      /* first and last element read must lie inside the input */
      __int128 last = (__int128)st[i] + (__int128)(sz[i] - 1) * sp[i];
      if (st[i] < 0 || st[i] >= x->dims[i] || last < 0 || last >= x->dims[i])
        return gir_errf(err, "slice reads outside the input on axis %d", i);
    }
    s.dims[i] = sz[i];
  }
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_pad(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  const int64_t *p;
  if (ints_attr(n, "pads", 2 * x->rank, &p, err) < 0) return -1;
  int64_t mode = gir_attr_int(n, "mode", GIR_PAD_CONSTANT);
  if (mode < 0 || mode >= GIR_PAD_COUNT) return gir_errf(err, "bad pad mode");
  if (n->n_in > 1 && n->in[1] && (n->in[1]->dtype != n->in[0]->dtype || gir_value_numel(n->in[1]) != 1))
    return gir_errf(err, "pad value must be a scalar of the input's type");
  gir_shape s = {.rank = x->rank};
  for (int i = 0; i < x->rank; i++) {
    int64_t b = p[i], e = p[i + x->rank];
    if (b > INT64_MAX / 4 || e > INT64_MAX / 4 || b < -x->dims[i] || e < -x->dims[i])
      return gir_errf(err, "pads out of range on axis %d", i);
    __int128 d = (__int128)x->dims[i] + b + e;
    if (d < 0) return gir_errf(err, "negative padded size on axis %d", i);
    if (d > INT64_MAX) return gir_errf(err, "padded size overflows on axis %d", i);
    s.dims[i] = (int64_t)d;
    if (mode == GIR_PAD_REFLECT && (b >= x->dims[i] || e >= x->dims[i]) && (b > 0 || e > 0))
      return gir_errf(err, "reflect padding must be smaller than the dimension (axis %d)", i);
    if (mode != GIR_PAD_CONSTANT && x->dims[i] == 0 && (b > 0 || e > 0))
      return gir_errf(err, "cannot pad an empty axis %d in this mode", i);
  }
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_broadcast_to(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int32_t r;
  const int64_t *dims = gir_attr_ints(n, "shape", &r);
  if (r > GIR_MAX_RANK) return gir_errf(err, "rank %d exceeds the limit", r);
  gir_shape s = {.rank = r}, b;
  for (int i = 0; i < r; i++) s.dims[i] = dims[i];
  if (gir_broadcast(&n->in[0]->shape, &s, &b, err) < 0) return -1;
  if (!gir_shape_equal(&b, &s)) return gir_errf(err, "input does not broadcast to the target shape");
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_tile(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  const int64_t *rep;
  if (ints_attr(n, "repeats", x->rank, &rep, err) < 0) return -1;
  gir_shape s = {.rank = x->rank};
  for (int i = 0; i < x->rank; i++) {
    if (rep[i] < 0) return gir_errf(err, "negative repeat");
    if (rep[i] && x->dims[i] > INT64_MAX / rep[i]) return gir_errf(err, "tiled size overflows");
    s.dims[i] = x->dims[i] * rep[i];
  }
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

static int check_index_type(const gir_value *idx, gir_err *err) {
  if (idx->dtype != GIR_I64 && idx->dtype != GIR_I32)
    return gir_errf(err, "indices must be int32 or int64, got %s", gir_dtype_name(idx->dtype));
  return 0;
}

int gir_infer_gather(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *d = &n->in[0]->shape, *ix = &n->in[1]->shape;
  int64_t axis;
  /* uint8 indices too: a table lookup (QLinearSoftmax, importer/ops_contrib_quant.c) */
  if ((n->in[1]->dtype != GIR_U8 && check_index_type(n->in[1], err) < 0) || gir_norm_axis(gir_attr_int(n, "axis", 0), d->rank, &axis, err) < 0)
    return -1;
  gir_shape s = {.rank = d->rank - 1 + ix->rank};
  if (s.rank > GIR_MAX_RANK) return gir_errf(err, "result rank exceeds the limit");
  int k = 0;
  for (int i = 0; i < axis; i++) s.dims[k++] = d->dims[i];
  for (int i = 0; i < ix->rank; i++) s.dims[k++] = ix->dims[i];
  for (int i = (int)axis + 1; i < d->rank; i++) s.dims[k++] = d->dims[i];
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_gather_elements(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *d = &n->in[0]->shape, *ix = &n->in[1]->shape;
  int64_t axis;
  if (check_index_type(n->in[1], err) < 0 || gir_norm_axis(gir_attr_int(n, "axis", 0), d->rank, &axis, err) < 0)
    return -1;
  if (d->rank != ix->rank) return gir_errf(err, "data and indices differ in rank");
  return gir_set_out(n, 0, n->in[0]->dtype, ix, err);
}

int gir_infer_gather_nd(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *d = &n->in[0]->shape, *ix = &n->in[1]->shape;
  int64_t b = gir_attr_int(n, "batch_dims", 0);
  if (n->in[1]->dtype != GIR_I64) return gir_errf(err, "indices must be int64");
  if (ix->rank < 1 || b < 0 || b >= ix->rank || b >= d->rank) return gir_errf(err, "bad batch_dims or ranks");
  int64_t q = ix->dims[ix->rank - 1];
  if (q < 1 || q > d->rank - b) return gir_errf(err, "index tuple length %lld out of range", (long long)q);
  for (int i = 0; i < b; i++)
    if (d->dims[i] != ix->dims[i]) return gir_errf(err, "batch dimension %d differs", i);
  gir_shape s = {.rank = (int32_t)(ix->rank - 1 + d->rank - b - q)};
  if (s.rank > GIR_MAX_RANK) return gir_errf(err, "result rank exceeds the limit");
  int k = 0;
  for (int i = 0; i < ix->rank - 1; i++) s.dims[k++] = ix->dims[i];
  for (int i = (int)(b + q); i < d->rank; i++) s.dims[k++] = d->dims[i];
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_one_hot(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *ix = &n->in[0]->shape;
  int64_t depth = gir_attr_int(n, "depth", -1), axis = gir_attr_int(n, "axis", -1);
  if (!gir_dtype_is_int(n->in[0]->dtype) && !gir_dtype_is_float(n->in[0]->dtype))
    return gir_errf(err, "indices must be numeric");
  if (depth < 1) return gir_errf(err, "depth must be positive");
  if (gir_value_numel(n->in[1]) != 2) return gir_errf(err, "values must hold [off, on]");
  if (gir_norm_axis(axis, ix->rank + 1, &axis, err) < 0) return -1;
  if (ix->rank + 1 > GIR_MAX_RANK) return gir_errf(err, "result rank exceeds the limit");
  gir_shape s = {.rank = ix->rank + 1};
  for (int i = 0, k = 0; i < s.rank; i++) s.dims[i] = i == axis ? depth : ix->dims[k++];
  return gir_set_out(n, 0, n->in[1]->dtype, &s, err);
}

int gir_infer_resize(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  const int64_t *sizes;
  if (ints_attr(n, "sizes", x->rank, &sizes, err) < 0) return -1;
  int32_t ns;
  gir_attr_floats(n, "scales", &ns);
  if (ns != x->rank) return gir_errf(err, "resize needs one scale per axis");
  if (!gir_dtype_is_float(n->in[0]->dtype) && gir_attr_int(n, "mode", 0) != GIR_RESIZE_NEAREST)
    return gir_errf(err, "interpolating resize needs a float input");
  gir_shape s = {.rank = x->rank};
  for (int i = 0; i < x->rank; i++) {
    if (sizes[i] < 0) return gir_errf(err, "negative output size");
    s.dims[i] = sizes[i];
  }
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_relayout(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  int64_t src = gir_attr_int(n, "src", 0), dst = gir_attr_int(n, "dst", 0);
  if (src < 0 || dst < 0) return gir_errf(err, "relayout: negative block size");
  if (x->rank != (src ? 5 : 4) || (src && x->dims[4] != src))
    return gir_errf(err, "relayout: input is not in the NCHW%s layout it claims", src ? "[b]c" : "");
  /* a blocked side may pad the channels up to whole blocks: `channels` says how many are real */
  int64_t held = src ? x->dims[1] * src : x->dims[1], channels = gir_attr_int(n, "channels", held);
  if (channels < 1 || channels > held || (src && channels <= held - src))
    return gir_errf(err, "relayout: %lld channels do not fit an input holding %lld", (long long)channels, (long long)held);
  gir_shape s = {.rank = dst ? 5 : 4,
                 .dims = {x->dims[0], dst ? (channels + dst - 1) / dst : channels, x->dims[2], x->dims[3], dst}};
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}
