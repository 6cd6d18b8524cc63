/* ops_loss.c — ONNX NegativeLogLikelihoodLoss (opsets 12, 13, 22) and
 * SoftmaxCrossEntropyLoss (opsets 12, 13) → canonical ops.
 *
 * Both losses are the ONNX function bodies written out with canonical ops, on
 * input x [N, C, d1..dk] and target [N, d1..dk]:
 *   ignored = target == ignore_index              (only when the attribute is given)
 *   t       = where(ignored, 0, target)           (an ignored target may be any value,
 *                                                  even out of [0, C): never gather it)
 *   picked  = gather_elements(x, t viewed as [N, 1, d..], axis 1) viewed as [N, d..]
 *   loss    = -where(ignored, 0, picked)
 *   w       = where(ignored, 0, gather(weight, t))   (weight given)
 *           = where(ignored, 0, 1)                   (no weight, ignore_index given)
 *   loss    = loss * w                                (weight given)
 * then reduction "none" returns loss, "sum" its sum and "mean" sum(loss) / sum(w)
 * when w exists (the mean over the weights of the targets that are not ignored),
 * else the plain mean. The reference implementation (op_negative_log_likelihood_loss.py)
 * skips w for ignore_index = -1 without weight and then averages over ignored
 * targets too; the function body and the operator's text divide by the count of
 * targets that are not ignored, which is what is built here.
 *
 * SoftmaxCrossEntropyLoss is the same loss on log_prob = log_softmax(x) over the
 * class axis 1 (one canonical softmax with log = 1: it normalizes along that axis
 * for every N, d position, so no transpose is needed), and returns log_prob as its
 * optional second output. */
#include <string.h>
#include "ops.h"

typedef enum { RED_NONE, RED_SUM, RED_MEAN } reduction;

typedef struct loss_in {
  gir_value *x, *target, *weight;
  int has_ii;
  int64_t ii;
  reduction red;
} loss_in;

static int parse(imp_ctx *c, imp_node *n, gir_value *x, loss_in *li) {
  li->x = x;
  li->target = n->n_in > 1 ? n->in[1] : NULL;
  li->weight = n->n_in > 2 ? n->in[2] : NULL;
  if (!li->x || !li->target) return imp_fail(c, "needs inputs scores and target");
  const char *red = imp_attr_string(c, n, "reduction", "mean");
  if (!strcmp(red, "none")) li->red = RED_NONE;
  else if (!strcmp(red, "sum")) li->red = RED_SUM;
  else if (!strcmp(red, "mean")) li->red = RED_MEAN;
  else return imp_fail(c, "attribute reduction must be none, sum or mean, got '%s'", red);
  li->has_ii = imp_attr(n, "ignore_index") != NULL;
  li->ii = imp_attr_int(n, "ignore_index", 0);

  const gir_shape *xs = &x->shape, *ts = &li->target->shape;
  if (!gir_dtype_is_float(x->dtype))
    return imp_fail(c, "scores must be floating-point, got %s", gir_dtype_name(x->dtype));
  if (li->target->dtype != GIR_I32 && li->target->dtype != GIR_I64)
    return imp_fail(c, "target must be int32 or int64, got %s", gir_dtype_name(li->target->dtype));
  if (xs->rank < 2) return imp_fail(c, "scores must have rank >= 2 ([N, C, d1..dk]), has %d", xs->rank);
  int ok = ts->rank == xs->rank - 1 && ts->dims[0] == xs->dims[0];
  for (int i = 1; ok && i < ts->rank; i++) ok = ts->dims[i] == xs->dims[i + 1];
  if (!ok) {
    char a[160], b[160];
    return imp_fail(c, "target has shape %s, scores %s: expected target [N, d1..dk] for scores [N, C, d1..dk]",
                    gir_shape_str(ts, a, sizeof a), gir_shape_str(xs, b, sizeof b));
  }
  if (li->weight) {
    if (li->weight->dtype != x->dtype)
      return imp_fail(c, "weight is %s but scores are %s", gir_dtype_name(li->weight->dtype), gir_dtype_name(x->dtype));
    if (li->weight->shape.rank != 1 || li->weight->shape.dims[0] != xs->dims[1])
      return imp_fail(c, "weight must have shape [C] = [%lld]", (long long)xs->dims[1]);
  }
  return 0;
}

/* The loss of the targets of li over scores lp (x, or its log_softmax). */
static gir_value *nll(imp_ctx *c, const loss_in *li, gir_value *lp) {
  gir_value *target = li->target;
  const gir_shape *ts = &target->shape;
  gir_value *ignored = NULL, *t = target;
  /* an int32 target never equals an ignore_index outside the int32 range */
  int representable = target->dtype == GIR_I64 || (li->ii >= INT32_MIN && li->ii <= INT32_MAX);
  if (li->has_ii && representable) {
    ignored = imp_binary(c, GIR_BINARY_EQ, target, imp_scalar_like(c, target, (double)li->ii));
    t = imp_where(c, ignored, imp_scalar_like(c, target, 0.0), target);
  }
  int64_t view[GIR_MAX_RANK] = {ts->dims[0], 1};
  for (int i = 1; i < ts->rank; i++) view[i + 1] = ts->dims[i];
  gir_value *picked = imp_reshape(c, t, ts->rank + 1, view);
  if (picked) {
    gir_value *ins[2] = {lp, picked};
    gir_node *g = imp_new_node(c, GIR_OP_gather_elements, ins, 2, 1);
    gir_attr_set_int(c->g, g, "axis", 1);
    picked = imp_reshape(c, imp_finish(c, g), ts->rank, ts->dims);
  }
  if (ignored) picked = imp_where(c, ignored, imp_scalar_like(c, lp, 0.0), picked);
  gir_value *loss = imp_unary(c, GIR_UNARY_NEG, picked);

  gir_value *w = NULL;
  if (li->weight) {
    gir_value *ins[2] = {li->weight, t};
    gir_node *g = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
    gir_attr_set_int(c->g, g, "axis", 0);
    w = t ? imp_finish(c, g) : NULL;
    if (ignored) w = imp_where(c, ignored, imp_scalar_like(c, lp, 0.0), w);
    loss = imp_binary(c, GIR_BINARY_MUL, loss, w);
  } else if (ignored && li->red == RED_MEAN) {
    w = imp_where(c, ignored, imp_scalar_like(c, lp, 0.0), imp_scalar_like(c, lp, 1.0));
  }
  if (!loss || li->red == RED_NONE) return loss;

  int64_t axes[GIR_MAX_RANK];
  for (int i = 0; i < ts->rank; i++) axes[i] = i;
  if (li->red == RED_MEAN && !w) return imp_reduce(c, GIR_REDUCE_MEAN, loss, axes, ts->rank, 0);
  gir_value *sum = imp_reduce(c, GIR_REDUCE_SUM, loss, axes, ts->rank, 0);
  if (li->red == RED_SUM) return sum;
  return imp_binary(c, GIR_BINARY_DIV, sum, imp_reduce(c, GIR_REDUCE_SUM, w, axes, ts->rank, 0));
}

int imp_cv_NegativeLogLikelihoodLoss(imp_ctx *c, imp_node *n) {
  if (n->opset < 12) return imp_unsupported_node(c, n, "NegativeLogLikelihoodLoss before opset 12 does not exist");
  loss_in li = {0};
  if (parse(c, n, n->n_in > 0 ? n->in[0] : NULL, &li) < 0) return -1;
  gir_value *loss = nll(c, &li, li.x);
  if (!loss) return -1;
  return imp_set_output(c, n, 0, loss);
}

int imp_cv_SoftmaxCrossEntropyLoss(imp_ctx *c, imp_node *n) {
  if (n->opset < 12) return imp_unsupported_node(c, n, "SoftmaxCrossEntropyLoss before opset 12 does not exist");
  loss_in li = {0};
  if (parse(c, n, n->n_in > 0 ? n->in[0] : NULL, &li) < 0) return -1;
  gir_node *sm = imp_new_node(c, GIR_OP_softmax, &li.x, 1, 1);
  gir_attr_set_int(c->g, sm, "axis", 1);
  gir_attr_set_int(c->g, sm, "log", 1);
  gir_value *log_prob = imp_finish(c, sm);
  gir_value *loss = log_prob ? nll(c, &li, log_prob) : NULL;
  if (!loss) return -1;
  if (imp_set_output(c, n, 0, loss) < 0) return -1;
  return imp_set_output(c, n, 1, log_prob);
}
