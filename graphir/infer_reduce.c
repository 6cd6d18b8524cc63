/* infer_reduce.c — shape inference for reductions and normalizations: reduce,
 * arg_reduce, softmax, layer_norm, cumulate. */
#include "infer.h"

int gir_infer_reduce(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  int64_t fn = gir_attr_int(n, "fn", -1), keep = gir_attr_int(n, "keepdims", 1);
  if (fn < 0 || fn >= GIR_REDUCE_COUNT) return gir_errf(err, "bad reduce function");
  int32_t na;
  const int64_t *axes = gir_attr_ints(n, "axes", &na);
  int red[GIR_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int64_t a;
    if (gir_norm_axis(axes[i], x->rank, &a, err) < 0) return -1;
    if (red[a]++) return gir_errf(err, "axis %lld repeated", (long long)a);
  }
  gir_shape s = {0};
  for (int i = 0; i < x->rank; i++) {
    if (!red[i])
      s.dims[s.rank++] = x->dims[i];
    else if (keep)
      s.dims[s.rank++] = 1;
  }
  return gir_set_out(n, 0, n->in[0]->dtype, &s, err);
}

int gir_infer_arg_reduce(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_shape *x = &n->in[0]->shape;
  int64_t axis, keep = gir_attr_int(n, "keepdims", 1), fn = gir_attr_int(n, "fn", -1);
  if (fn < 0 || fn >= GIR_ARG_COUNT) return gir_errf(err, "bad arg_reduce function");
  if (gir_norm_axis(gir_attr_int(n, "axis", 0), x->rank, &axis, err) < 0) return -1;
  if (x->dims[axis] == 0) return gir_errf(err, "arg_reduce over an empty axis");
  gir_shape s = {0};
  for (int i = 0; i < x->rank; i++) {
    if (i != axis)
      s.dims[s.rank++] = x->dims[i];
    else if (keep)
      s.dims[s.rank++] = 1;
  }
  return gir_set_out(n, 0, GIR_I64, &s, err);
}

int gir_infer_softmax(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int64_t axis;
  if (!gir_dtype_is_float(n->in[0]->dtype)) return gir_errf(err, "softmax needs a float input");
  if (gir_norm_axis(gir_attr_int(n, "axis", -1), n->in[0]->shape.rank, &axis, err) < 0) return -1;
  return gir_set_out(n, 0, n->in[0]->dtype, &n->in[0]->shape, err);
}

int gir_infer_layer_norm(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_value *x = n->in[0];
  int64_t axis;
  if (!gir_dtype_is_float(x->dtype)) return gir_errf(err, "layer_norm needs a float input");
  if (gir_norm_axis(gir_attr_int(n, "axis", -1), x->shape.rank, &axis, err) < 0) return -1;
  gir_shape inner = {.rank = x->shape.rank - (int32_t)axis};
  for (int i = 0; i < inner.rank; i++) inner.dims[i] = x->shape.dims[axis + i];
  for (int k = 1; k < n->n_in; k++) {
    if (!n->in[k]) continue;
    gir_shape b;
    if (n->in[k]->dtype != x->dtype) return gir_errf(err, "scale/bias element type differs from the input");
    if (gir_broadcast(&n->in[k]->shape, &inner, &b, err) < 0 || !gir_shape_equal(&b, &inner))
      return gir_errf(err, "scale/bias do not broadcast to the normalized dims");
  }
  return gir_set_out(n, 0, x->dtype, &x->shape, err);
}

int gir_infer_cumulate(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int64_t axis, fn = gir_attr_int(n, "fn", GIR_CUM_SUM);
  if (fn < 0 || fn >= GIR_CUM_COUNT) return gir_errf(err, "bad cumulate function");
  if (gir_norm_axis(gir_attr_int(n, "axis", 0), n->in[0]->shape.rank, &axis, err) < 0) return -1;
  return gir_set_out(n, 0, n->in[0]->dtype, &n->in[0]->shape, err);
}
