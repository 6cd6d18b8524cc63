/* extent.c — data-dependent extents (gir_value.extent: the shape is a bound, an
 * int64 value the actual size along one axis) through the ONNX ops that keep them,
 * so that detection post-processing can follow NonMaxSuppression (and masks can
 * follow NonZero: transpose, then GatherND): take the box
 * index column (Gather or Slice + Squeeze), gather the boxes and scores it selects,
 * decode them (element-wise arithmetic, a MatMul by constants), transpose, concat
 * the columns. Elements past the extent are computed from the padding (NMS pads
 * with zeros, which are valid indices), so they are defined but meaningless; the
 * runtime reports only the prefix.
 *
 * The rules are stated on the ONNX node, before its converter runs (which inputs may
 * be dynamic) and after (where each output's extent lies):
 *   element-wise ops and Cast/Identity   an output of the dynamic input's shape keeps
 *                                        its axis; other inputs must not stretch that
 *                                        axis (size 1 or absent there), or carry the
 *                                        same extent on the same axis
 *   Gather                               dynamic indices: the axis moves to axis + a;
 *                                        dynamic data gathered along another axis
 *   GatherND                             dynamic index tuples (batch_dims 0)
 *   Slice, Squeeze, Unsqueeze, Transpose the axis is kept (not sliced, not squeezed)
 *                                        and renumbered
 *   Concat                               along another axis, every input with the
 *                                        same extent
 *   Reshape, Flatten                     only when the dynamic axis is the first and
 *                                        keeps its size
 *   MatMul                               a dynamic row (or batch) axis of A, B static
 * Anything else that reads a dynamic value is refused, naming the input. */
#include <string.h>
#include "ops.h"

static const char *const elementwise[] = {
    "Identity", "Cast", "CastLike", "Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal",
    "Floor", "Ceil", "Round", "Sign", "Not", "Clip", "LeakyRelu", "Softplus", "Softsign", "HardSigmoid", "Elu",
    "Selu", "Erf", "Sin", "Cos", "IsNaN", "IsInf", "Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Mod", "Equal",
    "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Where", "BitShift", "BitwiseAnd",
    "BitwiseOr", "BitwiseXor", "PRelu", NULL};

static int is_elementwise(const char *op) {
  for (int i = 0; elementwise[i]; i++)
    if (!strcmp(op, elementwise[i])) return 1;
  return 0;
}

static const char *const taken[] = {"Gather", "GatherND", "Slice", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Reshape",
                                    "Flatten", "MatMul", NULL};

/* The first dynamic input of n, or -1. */
static int dynamic_input(const imp_node *n) {
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] && n->in[i]->extent) return i;
  return -1;
}

int imp_extent_accepts(imp_ctx *c, const imp_node *n) {
  int d = dynamic_input(n);
  if (d < 0) return 1;
  if (is_elementwise(n->op_type)) return 1;
  for (int i = 0; taken[i]; i++)
    if (!strcmp(n->op_type, taken[i])) return 1;
  (void)c;
  return 0;
}

/* A constant int list input i (or attribute `attr` when the opset had it there),
 * NULL (no error left) when absent or not constant. */
static const int64_t *int_list(imp_ctx *c, const imp_node *n, int i, const char *attr, int32_t *cnt) {
  *cnt = 0;
  if (attr) {
    int64_t *v = NULL;
    int32_t k = imp_attr_ints(c, n, attr, &v);
    if (k > 0 && v) {
      *cnt = k;
      return v;
    }
  }
  const gir_value *x = i >= 0 ? imp_in(n, i) : NULL;
  if (!x || !x->data) return NULL;
  int64_t *v = imp_const_ints(c, x, "a list", cnt);
  if (!v) c->err->msg[0] = 0;
  return v;
}

static int64_t norm(int64_t a, int rank) { return a < 0 ? a + rank : a; }

/* Where output o of n keeps input d's extent (d's axis a): the axis, or -1 when the
 * rule does not hold. */
static int out_axis(imp_ctx *c, const imp_node *n, int d, const gir_value *o) {
  const gir_value *x = n->in[d];
  int a = x->extent_axis, r = x->shape.rank, ro = o->shape.rank;
  const char *op = n->op_type;
  if (is_elementwise(op)) {
    if (!gir_shape_equal(&o->shape, &x->shape)) return -1; /* the dynamic input is not stretched */
    for (int i = 0; i < n->n_in; i++) {
      const gir_value *y = n->in[i];
      if (!y || i == d) continue;
      if (y->extent) {
        if (y->extent != x->extent || y->shape.rank - y->extent_axis != r - a) return -1;
        continue;
      }
      int ya = y->shape.rank - (r - a); /* y's dim aligned with axis a, from the right */
      if (ya >= 0 && y->shape.dims[ya] != 1) return -1;
    }
    return a;
  }
  if (!strcmp(op, "Gather")) {
    int64_t g = norm(imp_attr_int(n, "axis", 0), n->in[0]->shape.rank);
    if (d == 1) return n->in[0]->extent ? -1 : (int)g + a; /* indices: their axes replace data's axis g */
    if (a == g || (n->in[1] && n->in[1]->extent)) return -1;
    return a < g ? a : a - 1 + n->in[1]->shape.rank;
  }
  if (!strcmp(op, "GatherND")) { /* dynamic index tuples (not their last axis): out = indices[:-1] + data[q:] */
    if (d != 1 || n->in[0]->extent || a >= r - 1 || imp_attr_int(n, "batch_dims", 0) != 0) return -1;
    return a;
  }
  if (!strcmp(op, "MatMul")) {
    if (d != 0 || (n->in[1] && n->in[1]->extent) || r < 2 || a >= r - 1) return -1; /* rows or batch of A */
    return a + (ro - r);
  }
  if (!strcmp(op, "Transpose")) {
    int32_t k;
    const int64_t *perm = int_list(c, n, -1, "perm", &k);
    if (!perm) return r - 1 - a; /* default: reversed */
    for (int j = 0; j < k; j++)
      if (perm[j] == a) return j;
    return -1;
  }
  if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze")) {
    int32_t k;
    const int64_t *axes = int_list(c, n, 1, n->opset < 13 ? "axes" : NULL, &k);
    int sq = op[0] == 'S';
    if (!axes) return -1; /* which axes go is not known here: refused */
    int pos = a;
    if (sq) {
      for (int j = 0; j < k; j++) {
        int64_t s = norm(axes[j], r);
        if (s == a) return -1;
        if (s < a) pos--;
      }
      return pos;
    }
    /* unsqueeze: output axis positions in increasing order; input axes fill the rest */
    for (int out = 0, in = 0; out < ro; out++) {
      int inserted = 0;
      for (int j = 0; j < k; j++) inserted |= norm(axes[j], ro) == out;
      if (inserted) continue;
      if (in++ == a) return out;
    }
    return -1;
  }
  if (!strcmp(op, "Slice")) {
    int32_t ns, ne, na, nst;
    const int64_t *st = int_list(c, n, 1, n->opset < 10 ? "starts" : NULL, &ns);
    const int64_t *en = int_list(c, n, 2, n->opset < 10 ? "ends" : NULL, &ne);
    const int64_t *ax = int_list(c, n, 3, n->opset < 10 ? "axes" : NULL, &na);
    const int64_t *sp = n->opset >= 10 ? int_list(c, n, 4, NULL, &nst) : NULL;
    if (!st || !en || ns != ne || d != 0) return -1;
    for (int j = 0; j < ns; j++) {
      int64_t s = ax ? norm(ax[j], r) : j;
      if (s != a) continue;
      int64_t step = sp && j < nst ? sp[j] : 1;
      if (st[j] != 0 || step != 1 || en[j] < x->shape.dims[a]) return -1; /* the dynamic axis must stay whole */
    }
    return a;
  }
  if (!strcmp(op, "Concat")) {
    int64_t axis = norm(imp_attr_int(n, "axis", 0), r);
    if (axis == a) return -1;
    for (int i = 0; i < n->n_in; i++)
      if (!n->in[i] || n->in[i]->extent != x->extent || n->in[i]->extent_axis != a) return -1;
    return a;
  }
  if (!strcmp(op, "Reshape") || !strcmp(op, "Flatten"))
    return a == 0 && d == 0 && ro >= 1 && o->shape.dims[0] == x->shape.dims[0] ? 0 : -1;
  return -1;
}

int imp_extent_propagate(imp_ctx *c, imp_node *n) {
  int d = dynamic_input(n);
  if (d < 0) return 0;
  for (int j = 0; j < n->n_out; j++) {
    gir_value *o = n->out[j];
    if (!o) continue;
    int a = out_axis(c, n, d, o);
    if (a < 0 || a >= o->shape.rank || o->shape.dims[a] != n->in[d]->shape.dims[n->in[d]->extent_axis])
      return imp_fail(c, "input '%s' has a data-dependent size along axis %d (from NonMaxSuppression, Unique, "
                         "NonZero or Compress), and output %d would not keep it on one axis of the same bound",
                      n->proto->input[d], n->in[d]->extent_axis, j);
    if (o->extent && (o->extent != n->in[d]->extent || o->extent_axis != a))
      return imp_fail(c, "output %d already carries another data-dependent size", j);
    o->extent = n->in[d]->extent;
    o->extent_axis = a;
  }
  return 0;
}
