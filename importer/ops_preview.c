/* ops_preview.c — the ai.onnx.preview.training optimizers (opset 1): Adagrad,
 * Momentum (standard and Nesterov) and Adam, as element-wise canonical ops.
 *
 * Each takes R (learning rate) and T (update count), both one-element tensors,
 * then n tensors to optimize followed by n of each per-tensor state (G, then H
 * or V, or V and H), and yields n new values of each of X and its states. The
 * update of one tensor does not depend on the others, so the op is n copies of
 * the formula of onnx/reference/ops/aionnx_preview_training/op_*.py, written
 * in X's element type. T's branches (T > 0 ? ... : ...) are `where`s on the run-
 * time T, so a model whose T is a graph input still compiles. */
#include <string.h>
#include "ops.h"

static int is_training_node(const imp_node *n) {
  return n->proto->domain && !strcmp(n->proto->domain, "ai.onnx.preview.training");
}

/* The shared inputs and the layout of the per-tensor groups. */
typedef struct optim {
  int64_t count;  /* tensors optimized */
  gir_value *r;   /* learning rate, a scalar */
  gir_value *t;   /* update count, an int64 scalar */
} optim;

/* Checks the node's shape: 2 + groups*count inputs, at most outs*count outputs,
 * R and T one-element, each group's tensors of X's type and shape. */
static int optim_init(imp_ctx *c, imp_node *n, int groups, int outs, optim *o) {
  if (!is_training_node(n)) return imp_unsupported_node(c, n, "no converter");
  if (n->opset != 1)
    return imp_unsupported_node(c, n, "ai.onnx.preview.training opset %lld (kiln knows 1)", (long long)n->opset);
  if (n->n_in < 2 + groups || (n->n_in - 2) % groups)
    return imp_fail(c, "needs R, T and %d inputs per optimized tensor, has %d inputs", groups, n->n_in);
  o->count = (n->n_in - 2) / groups;
  if (n->n_out > outs * o->count)
    return imp_fail(c, "%d outputs for %lld optimized tensors (at most %lld)", n->n_out, (long long)o->count,
                    (long long)(outs * o->count));
  for (int i = 0; i < n->n_in; i++)
    if (!n->in[i]) return imp_fail(c, "input %d is missing", i);
  gir_value *r = n->in[0], *t = n->in[1];
  if (!gir_dtype_is_float(r->dtype) || gir_value_numel(r) != 1)
    return imp_fail(c, "R must be a float tensor of one element");
  if (!gir_dtype_is_int(t->dtype) || gir_value_numel(t) != 1)
    return imp_fail(c, "T must be an integer tensor of one element");
  int64_t none[1] = {0};
  o->r = imp_reshape(c, r, 0, none);
  o->t = imp_reshape(c, imp_cast(c, t, GIR_I64), 0, none);
  for (int64_t i = 0; i < o->count; i++) {
    const gir_value *x = n->in[2 + i];
    if (x->dtype != GIR_F32 && x->dtype != GIR_F64)
      return imp_fail(c, "optimized tensor %lld must be float or double, not %s", (long long)i,
                      gir_dtype_name(x->dtype));
    for (int gi = 1; gi < groups; gi++) {
      const gir_value *s = n->in[2 + gi * o->count + i];
      if (s->dtype != x->dtype || !gir_shape_equal(&s->shape, &x->shape))
        return imp_fail(c, "input %lld must have the type and shape of optimized tensor %lld",
                        (long long)(2 + gi * o->count + i), (long long)i);
    }
  }
  return o->r && o->t ? 0 : -1;
}

/* Group g's tensor i. */
static gir_value *group_in(const imp_node *n, const optim *o, int g, int64_t i) { return n->in[2 + g * o->count + i]; }

static gir_value *add(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_ADD, a, b); }
static gir_value *sub(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_SUB, a, b); }
static gir_value *mul(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_MUL, a, b); }
static gir_value *divide(imp_ctx *c, gir_value *a, gir_value *b) { return imp_binary(c, GIR_BINARY_DIV, a, b); }
static gir_value *k_like(imp_ctx *c, const gir_value *x, double v) { return imp_scalar_like(c, x, v); }

/* T > 0 as a bool scalar. */
static gir_value *t_positive(imp_ctx *c, const optim *o) {
  return imp_binary(c, GIR_BINARY_GT, o->t, imp_scalar(c, GIR_I64, 0.0));
}

/* G_regularized = norm_coefficient * X + G */
static gir_value *regularized(imp_ctx *c, gir_value *x, gir_value *g, double norm) {
  return add(c, mul(c, k_like(c, x, norm), x), g);
}

/* A float attribute the op requires (Momentum's have no defaults). */
static int required_float(imp_ctx *c, const imp_node *n, const char *name, double *out) {
  if (!imp_attr(n, name)) return imp_fail(c, "attribute %s is missing", name);
  *out = imp_attr_float(n, name, 0.0);
  return 0;
}

int imp_cv_Adagrad(imp_ctx *c, imp_node *n) {
  optim o;
  int rc = optim_init(c, n, 3, 2, &o);
  if (rc < 0) return rc;
  double decay = imp_attr_float(n, "decay_factor", 0.0), eps = imp_attr_float(n, "epsilon", 1e-6);
  double norm = imp_attr_float(n, "norm_coefficient", 0.0);
  for (int64_t i = 0; i < o.count; i++) {
    gir_value *x = group_in(n, &o, 0, i), *g = group_in(n, &o, 1, i), *h = group_in(n, &o, 2, i);
    /* r = R / (1 + T * decay_factor) */
    gir_value *tf = imp_cast(c, o.t, x->dtype);
    gir_value *r = divide(c, imp_cast(c, o.r, x->dtype), add(c, k_like(c, x, 1.0), mul(c, tf, k_like(c, x, decay))));
    gir_value *gr = regularized(c, x, g, norm);
    gir_value *h_new = add(c, h, mul(c, gr, gr));
    gir_value *h_adaptive = add(c, imp_unary(c, GIR_UNARY_SQRT, h_new), k_like(c, x, eps));
    gir_value *x_new = sub(c, x, divide(c, mul(c, r, gr), h_adaptive));
    if (imp_set_output(c, n, (int)i, x_new) < 0 || imp_set_output(c, n, (int)(o.count + i), h_new) < 0) return -1;
  }
  return 0;
}

int imp_cv_Momentum(imp_ctx *c, imp_node *n) {
  optim o;
  int rc = optim_init(c, n, 3, 2, &o);
  if (rc < 0) return rc;
  double alpha = 0, beta = 0, norm = 0;
  if (required_float(c, n, "alpha", &alpha) < 0 || required_float(c, n, "beta", &beta) < 0 ||
      required_float(c, n, "norm_coefficient", &norm) < 0)
    return -1;
  if (!imp_attr(n, "mode")) return imp_fail(c, "attribute mode is missing");
  const char *mode = imp_attr_string(c, n, "mode", "");
  int nesterov = !strcmp(mode, "nesterov");
  if (!nesterov && strcmp(mode, "standard")) return imp_fail(c, "mode '%s' is not standard or nesterov", mode);
  gir_value *first = t_positive(c, &o);
  for (int64_t i = 0; i < o.count; i++) {
    gir_value *x = group_in(n, &o, 0, i), *g = group_in(n, &o, 1, i), *v = group_in(n, &o, 2, i);
    gir_value *r = imp_cast(c, o.r, x->dtype), *a = k_like(c, x, alpha);
    gir_value *gr = regularized(c, x, g, norm);
    /* the gradient's coefficient is 1 at the first update (T = 0) */
    gir_value *beta_adj = imp_where(c, first, k_like(c, x, beta), k_like(c, x, 1.0));
    gir_value *v_new = add(c, mul(c, a, v), mul(c, beta_adj, gr));
    gir_value *step = nesterov ? add(c, gr, mul(c, a, v_new)) : v_new;
    gir_value *x_new = sub(c, x, mul(c, r, step));
    if (imp_set_output(c, n, (int)i, x_new) < 0 || imp_set_output(c, n, (int)(o.count + i), v_new) < 0) return -1;
  }
  return 0;
}

int imp_cv_Adam(imp_ctx *c, imp_node *n) {
  optim o;
  int rc = optim_init(c, n, 4, 3, &o);
  if (rc < 0) return rc;
  double alpha = imp_attr_float(n, "alpha", 0.9), beta = imp_attr_float(n, "beta", 0.999);
  double eps = imp_attr_float(n, "epsilon", 1e-6), norm = imp_attr_float(n, "norm_coefficient", 0.0);
  double norm_post = imp_attr_float(n, "norm_coefficient_post", 0.0);
  gir_value *later = t_positive(c, &o);
  for (int64_t i = 0; i < o.count; i++) {
    gir_value *x = group_in(n, &o, 0, i), *g = group_in(n, &o, 1, i);
    gir_value *v = group_in(n, &o, 2, i), *h = group_in(n, &o, 3, i);
    gir_value *gr = regularized(c, x, g, norm);
    gir_value *v_new = add(c, mul(c, k_like(c, x, alpha), v), mul(c, k_like(c, x, 1.0 - alpha), gr));
    gir_value *h_new = add(c, mul(c, k_like(c, x, beta), h), mul(c, k_like(c, x, 1.0 - beta), mul(c, gr, gr)));
    gir_value *h_sqrt = add(c, imp_unary(c, GIR_UNARY_SQRT, h_new), k_like(c, x, eps));
    /* bias correction once T > 0: R * sqrt(1 - beta^T) / (1 - alpha^T) */
    gir_value *r = imp_cast(c, o.r, x->dtype), *tf = imp_cast(c, o.t, x->dtype), *one = k_like(c, x, 1.0);
    gir_value *beta_t = imp_binary(c, GIR_BINARY_POW, k_like(c, x, beta), tf);
    gir_value *alpha_t = imp_binary(c, GIR_BINARY_POW, k_like(c, x, alpha), tf);
    gir_value *bc = divide(c, imp_unary(c, GIR_UNARY_SQRT, sub(c, one, beta_t)), sub(c, one, alpha_t));
    gir_value *r_adj = imp_where(c, later, mul(c, r, bc), r);
    gir_value *x_new = sub(c, x, mul(c, r_adj, divide(c, v_new, h_sqrt)));
    gir_value *x_final = mul(c, k_like(c, x, 1.0 - norm_post), x_new);
    if (imp_set_output(c, n, (int)i, x_final) < 0 || imp_set_output(c, n, (int)(o.count + i), v_new) < 0 ||
        imp_set_output(c, n, (int)(2 * o.count + i), h_new) < 0)
      return -1;
  }
  return 0;
}
