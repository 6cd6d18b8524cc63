/* compute_movement.c — compute definitions of the data-movement ops: each output
 * element reads one input element at an index computed from the output index
 * (reshape through the linear offset, transpose by permuting, concat by a chain of
 * lazy selects, pad with bounds-guarded loads and the reflect/edge/wrap maps),
 * and the gathers, which read an index from a second tensor first. */
#include "compute.h"

int lower_compute_reshape(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  const gir_shape *os = &n->out[0]->shape;
  te_tensor *x = in[0];
  te_expr *lin = te_int(c, 0);
  for (int i = 0; i < os->rank; i++) lin = te_add(c, te_mul(c, lin, te_int(c, os->dims[i])), te_v(c, ax[i]));
  te_expr *idx[GIR_MAX_RANK];
  int64_t stride = 1;
  for (int j = x->rank - 1; j >= 0; j--) {
    te_expr *q = stride == 1 ? lin : te_div(c, lin, te_int(c, stride));
    idx[j] = j == 0 ? q : te_bin(c, TE_MOD, q, te_int(c, x->shape[j]));
    stride *= x->shape[j];
  }
  out[0] = lower_stage(c, n, 0, ax, te_load(c, x, idx));
  return 0;
}

int lower_compute_transpose(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  int32_t r;
  const int64_t *perm = gir_attr_ints(n, "perm", &r);
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) idx[perm[i]] = te_v(c, ax[i]);
  out[0] = lower_stage(c, n, 0, ax, te_load(c, in[0], idx));
  return 0;
}

int lower_compute_concat(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  int r = n->out[0]->shape.rank;
  int64_t axis = gir_attr_int(n, "axis", 0);
  if (axis < 0) axis += r;
  /* offsets of each input along the axis; build the select chain from the back */
  int64_t off[65];
  off[0] = 0;
  for (int i = 0; i < n->n_in; i++) off[i + 1] = off[i] + in[i]->shape[axis];
  te_expr *body = NULL;
  for (int i = n->n_in - 1; i >= 0; i--) {
    if (in[i]->shape[axis] == 0) continue;
    te_expr *idx[GIR_MAX_RANK];
    for (int d = 0; d < r; d++) idx[d] = te_v(c, ax[d]);
    /* an input one element thick (an interleave's unit slices, layout/deconv.c) is read
     * at 0 along the axis: the same element where it is selected, and an index in
     * bounds where it is not, which the loop-IR simplifier can prove, making the lazy
     * choice an eager select that vectorizes (tir_simplify.c) — with three or more
     * such inputs their offsets hid that */
    idx[axis] = in[i]->shape[axis] == 1 ? te_int(c, 0) : te_sub(c, te_v(c, ax[axis]), te_int(c, off[i]));
    te_expr *ld = te_load(c, in[i], idx);
    body = body ? te_select(c, te_lt(c, te_v(c, ax[axis]), te_int(c, off[i + 1])), ld, body) : ld;
  }
  if (!body) body = te_const(c, n->out[0]->dtype, 0); /* empty output */
  out[0] = lower_stage(c, n, 0, ax, body);
  return 0;
}

int lower_compute_slice(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  int32_t r;
  const int64_t *st = gir_attr_ints(n, "starts", &r), *sp = gir_attr_ints(n, "steps", &r);
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) idx[i] = te_add(c, te_int(c, st[i]), te_mul(c, te_v(c, ax[i]), te_int(c, sp[i])));
  out[0] = lower_stage(c, n, 0, ax, te_load(c, in[0], idx));
  return 0;
}

/* Maps an index j (possibly outside [0, d)) into the input for the pad modes;
 * j ranges over [-before, d + after). Where one reflection (or wrap) reaches every
 * index, the map is a select on the range j is in, which loop partition turns into
 * three loops: the middle one a plain, vectorizable copy. */
static te_expr *pad_map(te_ctx *c, gir_pad_mode mode, te_expr *j, int64_t d, int64_t before, int64_t after) {
  te_expr *below = te_lt(c, j, te_int(c, 0)), *above = te_ge(c, j, te_int(c, d));
  switch (mode) {
  case GIR_PAD_EDGE:
    return te_select(c, below, te_int(c, 0), te_select(c, above, te_int(c, d - 1), j));
  case GIR_PAD_WRAP:
    if (before <= d && after <= d)
      return te_select(c, below, te_add(c, j, te_int(c, d)), te_select(c, above, te_sub(c, j, te_int(c, d)), j));
    return te_bin(c, TE_FLOORMOD, j, te_int(c, d));
  case GIR_PAD_REFLECT: {
    if (d == 1) return te_int(c, 0);
    if (before <= d - 1 && after <= d - 1) /* -j, j, 2(d-1) - j */
      return te_select(c, below, te_sub(c, te_int(c, 0), j),
                       te_select(c, above, te_sub(c, te_int(c, 2 * (d - 1)), j), j));
    int64_t period = 2 * (d - 1);
    te_expr *m = te_bin(c, TE_FLOORMOD, j, te_int(c, period));
    return te_select(c, te_lt(c, m, te_int(c, d)), m, te_sub(c, te_int(c, period), m));
  }
  default: return j;
  }
}

int lower_compute_pad(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_tensor *x = in[0];
  int r = x->rank;
  int32_t np;
  const int64_t *pads = gir_attr_ints(n, "pads", &np);
  gir_pad_mode mode = (gir_pad_mode)gir_attr_int(n, "mode", GIR_PAD_CONSTANT);
  te_expr *idx[GIR_MAX_RANK], *inside = NULL;
  for (int i = 0; i < r; i++) {
    te_expr *j = te_sub(c, te_v(c, ax[i]), te_int(c, pads[i]));
    if (mode == GIR_PAD_CONSTANT) {
      te_expr *ok = te_in_range(c, j, x->shape[i]);
      inside = inside ? te_and(c, inside, ok) : ok;
      idx[i] = j;
    } else
      idx[i] = pad_map(c, mode, j, x->shape[i], pads[i], pads[i + r]);
  }
  te_expr *body = te_load(c, x, idx);
  if (mode == GIR_PAD_CONSTANT && inside) {
    te_expr *value;
    if (n->n_in > 1 && in[1]) {
      te_expr *z[GIR_MAX_RANK];
      for (int i = 0; i < in[1]->rank; i++) z[i] = te_int(c, 0);
      value = te_load(c, in[1], z);
    } else
      value = te_const(c, x->dtype, gir_attr_float(n, "value", 0));
    body = te_select(c, inside, body, value);
  }
  out[0] = lower_stage(c, n, 0, ax, body);
  return 0;
}

int lower_compute_broadcast_to(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  out[0] = lower_stage(c, n, 0, ax, te_load_bcast_axes(c, in[0], ax, n->out[0]->shape.rank));
  return 0;
}

int lower_compute_tile(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < in[0]->rank; i++) idx[i] = te_bin(c, TE_MOD, te_v(c, ax[i]), te_int(c, in[0]->shape[i]));
  out[0] = lower_stage(c, n, 0, ax, te_load(c, in[0], idx));
  return 0;
}

int lower_compute_gather(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_tensor *d = in[0], *ix = in[1];
  int64_t axis = gir_attr_int(n, "axis", 0);
  if (axis < 0) axis += d->rank;
  te_expr *iidx[GIR_MAX_RANK], *didx[GIR_MAX_RANK];
  for (int i = 0; i < ix->rank; i++) iidx[i] = te_v(c, ax[axis + i]);
  for (int i = 0; i < axis; i++) didx[i] = te_v(c, ax[i]);
  didx[axis] = lower_wrap_index(c, te_load(c, ix, iidx), d->shape[axis]);
  for (int i = (int)axis + 1; i < d->rank; i++) didx[i] = te_v(c, ax[i - 1 + ix->rank]);
  out[0] = lower_stage(c, n, 0, ax, te_load(c, d, didx));
  return 0;
}

int lower_compute_gather_elements(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_tensor *d = in[0], *ix = in[1];
  int64_t axis = gir_attr_int(n, "axis", 0);
  if (axis < 0) axis += d->rank;
  te_expr *iidx[GIR_MAX_RANK], *didx[GIR_MAX_RANK];
  for (int i = 0; i < ix->rank; i++) iidx[i] = didx[i] = te_v(c, ax[i]);
  didx[axis] = lower_wrap_index(c, te_load(c, ix, iidx), d->shape[axis]);
  out[0] = lower_stage(c, n, 0, ax, te_load(c, d, didx));
  return 0;
}

int lower_compute_gather_nd(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  te_tensor *d = in[0], *ix = in[1];
  int64_t b = gir_attr_int(n, "batch_dims", 0), q = ix->shape[ix->rank - 1];
  int pre = ix->rank - 1;
  te_expr *didx[GIR_MAX_RANK];
  for (int i = 0; i < b; i++) didx[i] = te_v(c, ax[i]);
  for (int k = 0; k < q; k++) {
    te_expr *iidx[GIR_MAX_RANK];
    for (int i = 0; i < pre; i++) iidx[i] = te_v(c, ax[i]);
    iidx[pre] = te_int(c, k);
    didx[b + k] = lower_wrap_index(c, te_load(c, ix, iidx), d->shape[b + k]);
  }
  for (int i = (int)(b + q); i < d->rank; i++) didx[i] = te_v(c, ax[pre + i - b - q]);
  out[0] = lower_stage(c, n, 0, ax, te_load(c, d, didx));
  return 0;
}

int lower_compute_one_hot(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  int r = n->out[0]->shape.rank;
  int64_t axis = gir_attr_int(n, "axis", -1), depth = gir_attr_int(n, "depth", 1);
  if (axis < 0) axis += r;
  te_expr *iidx[GIR_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++)
    if (i != axis) iidx[k++] = te_v(c, ax[i]);
  te_expr *v = lower_wrap_index(c, te_load(c, in[0], iidx), depth);
  te_expr *on_i = te_int(c, 1), *off_i = te_int(c, 0);
  te_expr *on = te_load(c, in[1], &on_i), *off = te_load(c, in[1], &off_i);
  out[0] = lower_stage(c, n, 0, ax, te_select(c, te_bin(c, TE_EQ, v, te_v(c, ax[axis])), on, off));
  return 0;
}

/* NCHW <-> NCHW[b]c: channel c lives at (c / b, c % b) in a blocked tensor; the
 * channels a blocked output pads with read 0. */
int lower_compute_relayout(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_var *ax[GIR_MAX_RANK];
  lower_out_axes(c, n, 0, ax);
  int64_t src = gir_attr_int(n, "src", 0), dst = gir_attr_int(n, "dst", 0);
  int64_t held = src ? in[0]->shape[1] * src : in[0]->shape[1], channels = gir_attr_int(n, "channels", held);
  te_expr *ch = dst ? te_add(c, te_mul(c, te_v(c, ax[1]), te_int(c, dst)), te_v(c, ax[4])) : te_v(c, ax[1]);
  te_expr *idx[5] = {te_v(c, ax[0]), ch, te_v(c, ax[2]), te_v(c, ax[3]), NULL};
  if (src) {
    idx[1] = te_div(c, ch, te_int(c, src));
    idx[4] = te_bin(c, TE_MOD, ch, te_int(c, src));
  }
  te_expr *v = te_load(c, in[0], idx);
  if (dst && n->out[0]->shape.dims[1] * dst > channels)
    v = te_select(c, te_lt(c, ch, te_int(c, channels)), v, te_const(c, in[0]->dtype, 0));
  out[0] = lower_stage(c, n, 0, ax, v);
  return 0;
}
