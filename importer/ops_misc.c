/* ops_misc.c — constants, identities and shape queries. Shapes are static, so
 * Shape and Size become constants; ConstantOfShape becomes a broadcast of its
 * scalar (folded when small); Dropout is the identity in inference mode and draws
 * the ONNX reference's mask in training mode (numpy's generator, np_random.c). */
#include <stdlib.h>
#include <string.h>
#include "np_random.h"
#include "ops.h"


int imp_cv_Constant(imp_ctx *c, imp_node *n) {
  const Onnx__AttributeProto *a = n->proto->n_attribute ? n->proto->attribute[0] : NULL;
  if (!a || !a->name) return imp_fail(c, "Constant needs a value attribute");
  gir_value *v = NULL;
  if (!strcmp(a->name, "value")) {
    if (!a->t) return imp_fail(c, "attribute value holds no tensor");
    v = imp_tensor_to_const(c, a->t, n->name);
  } else if (!strcmp(a->name, "value_float")) {
    v = gir_const_scalar(c->g, GIR_F32, a->f);
  } else if (!strcmp(a->name, "value_int")) {
    v = gir_const_scalar(c->g, GIR_I64, 0);
    *(int64_t *)v->data = a->i;
  } else if (!strcmp(a->name, "value_floats")) {
    gir_shape s = {.rank = 1, .dims = {(int64_t)a->n_floats}};
    v = gir_const_new(c->g, NULL, GIR_F32, &s, a->floats);
  } else if (!strcmp(a->name, "value_ints")) {
    v = gir_const_i64s(c->g, a->ints, (int32_t)a->n_ints);
  } else {
    return imp_unsupported_node(c, n, "Constant with attribute %s", a->name);
  }
  if (!v) return -1;
  if (c->rep && c->depth == 0) {
    c->rep->param_count += gir_value_numel(v);
    c->rep->param_bytes += gir_value_nbytes(v);
  }
  return imp_set_output(c, n, 0, v);
}

int imp_cv_Identity(imp_ctx *c, imp_node *n) {
  if (n->n_in < 1 || !n->in[0]) return imp_fail(c, "needs an input");
  return imp_set_output(c, n, 0, n->in[0]);
}

/* Training-mode Dropout: the mask the ONNX reference draws, np.random.seed(seed);
 * np.random.uniform(0, 1.0, shape) >= ratio (np_random.c: numpy's MT19937), made
 * at compile time from the seed (0 when absent, as the reference's default); y =
 * mask · x · 1/(1 − ratio), ratio and training_mode as given (at run time too). */
#define DROPOUT_MAX_ELEMENTS (1 << 22) /* the uniform draws are a float64 constant */

static int dropout_training(imp_ctx *c, imp_node *n, gir_value *x, gir_value *ratio, gir_value *training) {
  int64_t numel = gir_value_numel(x);
  if (numel > DROPOUT_MAX_ELEMENTS)
    return imp_unsupported_node(c, n, "training-mode dropout of %lld elements (its draws are made at compile time, "
                                      "at most %d)", (long long)numel, DROPOUT_MAX_ELEMENTS);
  if (!gir_dtype_is_float(x->dtype)) return imp_fail(c, "input 'data' must be floating point");
  if (imp_reserve(c, numel, sizeof(double), "the dropout draws") < 0) return -1;
  double *u = malloc((size_t)(numel > 0 ? numel : 1) * sizeof *u);
  if (!u) return imp_fail(c, "out of memory for the dropout draws");
  imp_np_random_sample((uint32_t)imp_attr_int(n, "seed", 0), u, numel);
  gir_value *draws = gir_const_new(c->g, NULL, GIR_F64, &x->shape, u);
  free(u);
  gir_value *r = ratio ? imp_cast(c, imp_scalar_of(c, ratio), GIR_F32) : imp_scalar(c, GIR_F32, 0.5);
  gir_value *mask = imp_binary(c, GIR_BINARY_GE, draws, imp_cast(c, r, GIR_F64));
  gir_value *scale = imp_binary(c, GIR_BINARY_DIV, imp_scalar(c, GIR_F32, 1.0),
                                imp_binary(c, GIR_BINARY_SUB, imp_scalar(c, GIR_F32, 1.0), r));
  gir_value *y = imp_binary(c, GIR_BINARY_MUL, imp_binary(c, GIR_BINARY_MUL, imp_cast(c, mask, x->dtype), x),
                            imp_cast(c, scale, x->dtype));
  if (training) { /* decided at run time: the identity and an all-true mask when off */
    gir_value *t = imp_scalar_of(c, training);
    y = imp_where(c, t, y, x);
    mask = imp_binary(c, GIR_BINARY_OR, mask, imp_unary(c, GIR_UNARY_NOT, t));
  }
  if (!y || !mask || imp_set_output(c, n, 0, y) < 0) return -1;
  return n->n_out > 1 ? imp_set_output(c, n, 1, mask) : 0;
}

int imp_cv_Dropout(imp_ctx *c, imp_node *n) {
  if (n->n_in < 1 || !n->in[0]) return imp_fail(c, "needs an input");
  gir_value *x = n->in[0], *ratio = n->n_in > 1 ? n->in[1] : NULL, *training = n->n_in > 2 ? n->in[2] : NULL;
  if (training) {
    if (training->dtype != GIR_BOOL || gir_value_numel(training) != 1)
      return imp_fail(c, "input 'training_mode' must be one bool");
    if (ratio && gir_value_numel(ratio) != 1) return imp_fail(c, "input 'ratio' must be a scalar");
    const void *tm = training->data;
    const void *r = ratio ? ratio->data : NULL;
    /* training with ratio 0 drops nothing: the identity (as the reference returns x) */
    int off = (tm && !*(const uint8_t *)tm) || (r && gir_load_f64(ratio->dtype, r, 0) == 0);
    if (!off) return dropout_training(c, n, x, ratio, tm ? NULL : training);
  }
  if (imp_set_output(c, n, 0, x) < 0) return -1;
  if (n->n_out > 1) {
    gir_value *ones = imp_broadcast_to(c, gir_const_scalar(c->g, GIR_BOOL, 1), &x->shape);
    if (imp_set_output(c, n, 1, ones) < 0) return -1;
  }
  return 0;
}

int imp_cv_Shape(imp_ctx *c, imp_node *n) {
  if (n->n_in < 1 || !n->in[0]) return imp_fail(c, "needs an input");
  const gir_shape *s = &n->in[0]->shape;
  int64_t start = imp_attr_int(n, "start", 0), end = imp_attr_int(n, "end", s->rank);
  if (start < 0) start += s->rank;
  if (end < 0) end += s->rank;
  if (start < 0) start = 0;
  if (start > s->rank) start = s->rank;
  if (end > s->rank) end = s->rank;
  if (end < start) end = start;
  return imp_set_output(c, n, 0, gir_const_i64s(c->g, s->dims + start, (int32_t)(end - start)));
}

int imp_cv_Size(imp_ctx *c, imp_node *n) {
  if (n->n_in < 1 || !n->in[0]) return imp_fail(c, "needs an input");
  gir_value *v = gir_const_scalar(c->g, GIR_I64, 0);
  *(int64_t *)v->data = gir_value_numel(n->in[0]);
  return imp_set_output(c, n, 0, v);
}

int imp_cv_ConstantOfShape(imp_ctx *c, imp_node *n) {
  int32_t rank;
  int64_t *dims = imp_const_ints(c, n->n_in ? n->in[0] : NULL, "input 'input' (the shape)", &rank);
  if (!dims) return -1;
  if (rank > GIR_MAX_RANK) return imp_fail(c, "rank %d is above the limit of %d", rank, GIR_MAX_RANK);
  gir_shape s = gir_shape_make(rank, dims);
  gir_err e = {{0}};
  if (gir_shape_numel(&s, &e) < 0) return imp_fail(c, "shape: %s", e.msg);
  gir_value *scalar;
  const Onnx__AttributeProto *a = imp_attr(n, "value");
  if (a && a->t) {
    gir_value *t = imp_tensor_to_const(c, a->t, "value");
    if (!t) return -1;
    if (gir_value_numel(t) != 1) return imp_fail(c, "attribute value must hold one element");
    gir_shape sc = {0};
    scalar = gir_const_new(c->g, NULL, t->dtype, &sc, t->data);
  } else
    scalar = gir_const_scalar(c->g, GIR_F32, 0.0);
  return imp_set_output(c, n, 0, imp_broadcast_to(c, scalar, &s));
}

/* Cast and CastLike: the canonical cast, carrying `saturate` (opset 19+; it
 * matters for the four float8 formats only) and `round` (round_mode, opset 24+;
 * float8e8m0 only) where they differ from their defaults (1, "up"). */
static int cast_to(imp_ctx *c, imp_node *n, gir_value *x, gir_dtype to) {
  int64_t sat = n->opset >= 19 ? imp_attr_int(n, "saturate", 1) : 1;
  gir_e8m0_round round = GIR_E8M0_UP;
  const char *mode = n->opset >= 24 ? imp_attr_string(c, n, "round_mode", "up") : "up";
  if (!strcmp(mode, "down")) round = GIR_E8M0_DOWN;
  else if (!strcmp(mode, "nearest")) round = GIR_E8M0_NEAREST;
  else if (strcmp(mode, "up")) return imp_fail(c, "round_mode '%s' is none of up, down, nearest", mode);
  if (x->dtype == to) return imp_set_output(c, n, 0, x);
  gir_node *k = imp_new_node(c, GIR_OP_cast, &x, 1, 1);
  gir_attr_set_int(c->g, k, "to", to);
  if (!sat && gir_dtype_is_f8(to) && to != GIR_F8E8M0 && to != GIR_F4E2M1) gir_attr_set_int(c->g, k, "saturate", 0);
  if (round != GIR_E8M0_UP && to == GIR_F8E8M0) gir_attr_set_int(c->g, k, "round", round);
  return imp_set_output(c, n, 0, imp_finish(c, k));
}

int imp_cv_Cast(imp_ctx *c, imp_node *n) {
  if (n->n_in < 1 || !n->in[0]) return imp_fail(c, "needs an input");
  int64_t code = imp_attr_int(n, "to", -1);
  gir_dtype to = gir_dtype_from_onnx((int32_t)code);
  if (to == GIR_DTYPE_NONE) return imp_fail(c, "attribute to: unknown element type code %lld", (long long)code);
  if (!gir_dtype_first_class(to)) return imp_unsupported_node(c, n, "cast to %s", gir_dtype_name(to));
  return cast_to(c, n, n->in[0], to);
}

int imp_cv_CastLike(imp_ctx *c, imp_node *n) {
  if (n->n_in < 2 || !n->in[0] || !n->in[1]) return imp_fail(c, "needs two inputs");
  return cast_to(c, n, n->in[0], n->in[1]->dtype);
}
