/* infer_elementwise.c — shape/dtype inference for element-wise ops: unary, binary,
 * where, cast, bitcast and iota. Broadcasting follows numpy (gir_broadcast). */
#include "infer.h"

int gir_infer_unary(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int64_t fn = gir_attr_int(n, "fn", -1);
  if (fn < 0 || fn >= GIR_UNARY_COUNT) return gir_errf(err, "bad unary function %lld", (long long)fn);
  const gir_value *x = n->in[0];
  gir_dtype t = x->dtype;
  if (fn == GIR_UNARY_ISNAN || fn == GIR_UNARY_ISINF || fn == GIR_UNARY_NOT) t = GIR_BOOL;
  if (fn == GIR_UNARY_NOT && x->dtype != GIR_BOOL) return gir_errf(err, "not needs bool input");
  if (fn == GIR_UNARY_BITNOT && !gir_dtype_is_int(x->dtype)) return gir_errf(err, "bitnot needs integers");
  return gir_set_out(n, 0, t, &x->shape, err);
}

int gir_infer_binary(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int64_t fn = gir_attr_int(n, "fn", -1);
  if (fn < 0 || fn >= GIR_BINARY_COUNT) return gir_errf(err, "bad binary function %lld", (long long)fn);
  const gir_value *a = n->in[0], *b = n->in[1];
  if (fn != GIR_BINARY_POW && fn != GIR_BINARY_PRELU && a->dtype != b->dtype)
    return gir_errf(err, "%s of %s and %s: element types differ", gir_binary_name((gir_binary_fn)fn),
                    gir_dtype_name(a->dtype), gir_dtype_name(b->dtype));
  gir_shape s;
  if (gir_broadcast(&a->shape, &b->shape, &s, err) < 0) return -1;
  return gir_set_out(n, 0, gir_binary_is_compare((gir_binary_fn)fn) ? GIR_BOOL : a->dtype, &s, err);
}

int gir_infer_where(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  const gir_value *c = n->in[0], *a = n->in[1], *b = n->in[2];
  if (c->dtype != GIR_BOOL) return gir_errf(err, "condition must be bool, got %s", gir_dtype_name(c->dtype));
  if (a->dtype != b->dtype) return gir_errf(err, "branches differ in element type");
  gir_shape s, t;
  if (gir_broadcast(&c->shape, &a->shape, &s, err) < 0 || gir_broadcast(&s, &b->shape, &t, err) < 0) return -1;
  return gir_set_out(n, 0, a->dtype, &t, err);
}

int gir_infer_cast(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int64_t to = gir_attr_int(n, "to", -1);
  if (!gir_dtype_first_class((gir_dtype)to)) return gir_errf(err, "cannot cast to element type %lld", (long long)to);
  return gir_set_out(n, 0, (gir_dtype)to, &n->in[0]->shape, err);
}

int gir_infer_bitcast(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  int64_t to = gir_attr_int(n, "to", -1);
  gir_dtype from = n->in[0]->dtype;
  if (to < 0 || to >= GIR_DTYPE_COUNT || !gir_dtype_first_class((gir_dtype)to))
    return gir_errf(err, "cannot bitcast to element type %lld", (long long)to);
  if (!gir_dtype_first_class(from)) return gir_errf(err, "cannot bitcast from %s", gir_dtype_name(from));
  if (gir_dtype_bits((gir_dtype)to) != gir_dtype_bits(from))
    return gir_errf(err, "bitcast from %s to %s: element sizes differ", gir_dtype_name(from),
                    gir_dtype_name((gir_dtype)to));
  return gir_set_out(n, 0, (gir_dtype)to, &n->in[0]->shape, err);
}

/* The shape an op makes from nothing (iota, trap): its "shape" attribute. */
static int shape_attr(const gir_node *n, gir_shape *s, gir_err *err) {
  int32_t r;
  const int64_t *dims = gir_attr_ints(n, "shape", &r);
  if (r > GIR_MAX_RANK) return gir_errf(err, "rank %d exceeds the limit", r);
  *s = (gir_shape){.rank = r};
  for (int i = 0; i < r; i++) s->dims[i] = dims[i];
  return 0;
}

int gir_infer_trap(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  gir_shape s;
  if (shape_attr(n, &s, err) < 0) return -1;
  int64_t to = gir_attr_int(n, "to", GIR_F32);
  if (!gir_dtype_first_class((gir_dtype)to)) return gir_errf(err, "bad element type");
  const gir_attr *m = gir_attr_find(n, "message");
  if (!m || m->kind != GIR_ATTR_STRING || !m->s || !m->s[0]) return gir_errf(err, "trap needs a message");
  return gir_set_out(n, 0, (gir_dtype)to, &s, err);
}

int gir_infer_iota(gir_graph *g, gir_node *n, gir_err *err) {
  (void)g;
  gir_shape s;
  if (shape_attr(n, &s, err) < 0) return -1;
  int32_t r = s.rank;
  int64_t axis;
  if (r && gir_norm_axis(gir_attr_int(n, "axis", 0), r, &axis, err) < 0) return -1;
  int64_t to = gir_attr_int(n, "to", GIR_I64);
  if (!gir_dtype_first_class((gir_dtype)to)) return gir_errf(err, "bad element type");
  return gir_set_out(n, 0, (gir_dtype)to, &s, err);
}
