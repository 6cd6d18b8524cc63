/* infer_string.c — shape inference of the strop op (ops.def): the kernels on string
 * tensors. A string tensor is uint8 with its last axis the slot of each string
 * (gir_value.string_bytes = w, README "String tensors"); the ONNX shape is the
 * other axes. Inference checks the operands are such slots of the node's w and
 * gives each result its type, shape and, for string results, its slot. */
#include "infer.h"

static int is_slots(const gir_value *v, int64_t w) {
  return v && v->dtype == GIR_U8 && v->string_bytes == w && v->shape.rank >= 1 && v->shape.dims[v->shape.rank - 1] == w;
}

/* The ONNX shape of string tensor v (its slots dropped). */
static gir_shape onnx_shape(const gir_value *v) {
  gir_shape s = v->shape;
  s.rank--;
  return s;
}

static int set_slots(gir_node *n, int i, gir_shape s, int64_t w, gir_err *err) {
  if (s.rank >= GIR_MAX_RANK) return gir_errf(err, "a string result of rank %d is over the limit of %d", s.rank, GIR_MAX_RANK - 1);
  s.dims[s.rank++] = w;
  if (gir_set_out(n, i, GIR_U8, &s, err) < 0) return -1;
  n->out[i]->string_bytes = (int32_t)w;
  return 0;
}

int gir_infer_strop(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int64_t fn = gir_attr_int(n, "fn", -1), w = gir_attr_int(n, "w", 0);
  if (w < 8 || w > 65536) return gir_errf(err, "string slot of %lld bytes is outside [8, 65536]", (long long)w);
  const gir_value *x = n->in[0];
  gir_shape y = {0}, one = {.rank = 1, .dims = {1}}, scalar = {0};
  gir_err e = {{0}};
  int rc;
  switch (fn) {
  case GIR_STR_EQUAL:
  case GIR_STR_CONCAT: {
    if (n->n_in != 2 || !is_slots(x, w) || !is_slots(n->in[1], w)) return gir_errf(err, "needs two string tensors of one slot size");
    gir_shape a = onnx_shape(x), b = onnx_shape(n->in[1]);
    if (gir_broadcast(&a, &b, &y, &e) < 0) return gir_errf(err, "%s", e.msg);
    rc = fn == GIR_STR_EQUAL ? gir_set_out(n, 0, GIR_BOOL, &y, err) : set_slots(n, 0, y, w, err);
    break;
  }
  case GIR_STR_REGEX: {
    const gir_value *t = n->n_in > 1 ? n->in[1] : NULL;
    if (n->n_in != 2 || !is_slots(x, w) || !t || t->dtype != GIR_I32 || t->shape.rank != 2 || t->shape.dims[1] != 257 ||
        t->shape.dims[0] < 1)
      return gir_errf(err, "needs a string tensor and an int32 DFA table [states, 257]");
    y = onnx_shape(x);
    rc = gir_set_out(n, 0, GIR_BOOL, &y, err);
    break;
  }
  case GIR_STR_SPLIT: {
    int64_t pieces = gir_attr_int(n, "pieces", 0);
    if (n->n_in != 1 || !is_slots(x, w)) return gir_errf(err, "needs a string tensor");
    if (pieces < 1 || pieces > w) return gir_errf(err, "pieces %lld is outside [1, %lld]", (long long)pieces, (long long)w);
    gir_shape z = onnx_shape(x);
    y = z;
    if (y.rank + 1 >= GIR_MAX_RANK) return gir_errf(err, "rank %d is over the limit", y.rank);
    y.dims[y.rank++] = pieces;
    if (set_slots(n, 0, y, w, err) < 0) return -1;
    if (gir_set_out(n, 1, GIR_I64, &z, err) < 0) return -1;
    return gir_set_out(n, 2, GIR_I64, &scalar, err);
  }
  case GIR_STR_NORMALIZE: {
    y = onnx_shape(x);
    if (!is_slots(x, w) || (n->n_in > 1 && n->in[1] && !is_slots(n->in[1], w)))
      return gir_errf(err, "needs a string tensor (and stop words of its slot size)");
    if (y.rank != 1 && !(y.rank == 2 && y.dims[0] == 1)) return gir_errf(err, "input must be [C] or [1, C]");
    if (y.dims[y.rank - 1] == 0) y.dims[y.rank - 1] = 1; /* [""] when nothing is left */
    rc = set_slots(n, 0, y, w, err);
    break;
  }
  case GIR_STR_LABEL: {
    const gir_value *k = n->in[1], *v = n->in[2], *d = n->in[3];
    if (n->n_in != 4 || !k || !v || !d) return gir_errf(err, "needs x, keys, values and a default");
    int xs = x->string_bytes != 0, ks = k->string_bytes != 0, vs = v->string_bytes != 0;
    if (xs != ks || (xs && !is_slots(x, w)) || (ks && !is_slots(k, w)) || (vs && !is_slots(v, w)) ||
        (!xs && x->dtype != k->dtype) || v->dtype != d->dtype || (d->string_bytes != 0) != vs)
      return gir_errf(err, "keys must have x's type, the default the values'");
    int64_t nk = xs ? gir_value_numel(k) / w : gir_value_numel(k), nv = vs ? gir_value_numel(v) / w : gir_value_numel(v);
    int64_t nd = vs ? gir_value_numel(d) / w : gir_value_numel(d);
    if (nk != nv || nd != 1) return gir_errf(err, "%lld keys, %lld values and %lld defaults (need as many keys as values, one default)",
                                            (long long)nk, (long long)nv, (long long)nd);
    y = xs ? onnx_shape(x) : x->shape;
    rc = vs ? set_slots(n, 0, y, w, err) : gir_set_out(n, 0, v->dtype, &y, err);
    break;
  }
  default: return gir_errf(err, "unknown string kernel %lld", (long long)fn);
  }
  if (rc < 0) return -1;
  if (gir_set_out(n, 1, GIR_I64, &one, err) < 0) return -1;
  return gir_set_out(n, 2, GIR_I64, &scalar, err);
}
