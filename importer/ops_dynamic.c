/* ops_dynamic.c — ONNX ops whose output shapes depend on the data: NonMaxSuppression
 * (opset 10, 11) and Unique (11) → the canonical nms and unique ops, whose kernels
 * lower/lower_seq.c writes in loop IR. Each output is sized by the most it can
 * hold and carries the actual size as its extent (gir_value.extent), which the
 * runtime reports as the output's shape. Such outputs may only be graph outputs
 * (the importer refuses other consumers, graph.c).
 *   NonMaxSuppression: bound B · C · min(N, max_output_boxes_per_class) when that is
 *   a constant (else B · C · N); optional scalar inputs may be absent or empty
 *   (ONNX's defaults: keep none, IoU threshold 0, no score threshold).
 *   Unique: bound the axis' length (or the element count without an axis) for Y,
 *   indices and counts; inverse_indices has its static shape. */
#include "ops.h"

/* Input i as a scalar, NULL when absent or empty. */
static gir_value *opt_scalar(imp_ctx *c, imp_node *n, int i, gir_dtype t, const char *what, int *bad) {
  gir_value *v = imp_in(n, i);
  if (!v || gir_value_numel(v) == 0) return NULL;
  if (v->dtype != t || gir_value_numel(v) != 1) {
    *bad = imp_fail(c, "input '%s' must hold one %s", what, gir_dtype_name(t));
    return NULL;
  }
  return imp_scalar_of(c, v);
}

int imp_cv_NonMaxSuppression(imp_ctx *c, imp_node *n) {
  gir_value *boxes = imp_in(n, 0), *scores = imp_in(n, 1);
  if (!boxes || !scores) return imp_fail(c, "needs inputs boxes and scores");
  if (boxes->dtype != GIR_F32 || scores->dtype != GIR_F32) return imp_fail(c, "boxes and scores must be float32");
  if (boxes->shape.rank != 3 || boxes->shape.dims[2] != 4)
    return imp_fail(c, "boxes must be [batches, boxes, 4]");
  int bad = 0;
  gir_value *ins[5] = {boxes, scores, opt_scalar(c, n, 2, GIR_I64, "max_output_boxes_per_class", &bad),
                       opt_scalar(c, n, 3, GIR_F32, "iou_threshold", &bad),
                       opt_scalar(c, n, 4, GIR_F32, "score_threshold", &bad)};
  if (bad) return -1;
  int64_t B = boxes->shape.dims[0], N = boxes->shape.dims[1];
  if (scores->shape.rank != 3 || scores->shape.dims[0] != B || scores->shape.dims[2] != N)
    return imp_fail(c, "scores must be [batches, classes, boxes] = [%lld, classes, %lld]", (long long)B, (long long)N);
  int64_t C = scores->shape.dims[1]; /* B · C · N is the scores' element count: no overflow below */
  /* the most it can keep: a constant limit bounds each class (a run-time one may be
   * anything, so N); absent, ONNX keeps none */
  int64_t per_class = N;
  const gir_value *m = imp_in(n, 2);
  if (!ins[2]) per_class = 0;
  else if (m->data) {
    int64_t k = gir_load_i64(m->dtype, m->data, 0);
    per_class = k < 0 ? 0 : k < N ? k : N;
  }
  gir_node *nd = imp_new_node(c, GIR_OP_nms, ins, 5, 2);
  gir_attr_set_int(c->g, nd, "center_point_box", imp_attr_int(n, "center_point_box", 0));
  gir_attr_set_int(c->g, nd, "cap", B * C * per_class); /* shapes never overflow; C checked by inference */
  if (gir_node_infer(c->g, nd, c->err) < 0) return -1;
  nd->out[0]->extent = nd->out[1];
  nd->out[0]->extent_axis = 0;
  return imp_set_output(c, n, 0, nd->out[0]);
}

int imp_cv_Unique(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs input X");
  int64_t axis = -1;
  if (imp_attr(n, "axis")) {
    axis = imp_attr_int(n, "axis", 0);
    if (axis < -x->shape.rank || axis >= x->shape.rank)
      return imp_fail(c, "axis %lld is out of range for rank %d", (long long)axis, x->shape.rank);
    if (axis < 0) axis += x->shape.rank;
  }
  gir_node *nd = imp_new_node(c, GIR_OP_unique, &x, 1, 5);
  gir_attr_set_int(c->g, nd, "axis", axis);
  gir_attr_set_int(c->g, nd, "sorted", imp_attr_int(n, "sorted", 1) != 0);
  if (gir_node_infer(c->g, nd, c->err) < 0) return -1;
  static const int dyn[4] = {1, 1, 0, 1}; /* Y, indices, inverse_indices (static), counts */
  for (int i = 0; i < 4; i++) {
    if (dyn[i]) {
      nd->out[i]->extent = nd->out[4];
      nd->out[i]->extent_axis = i == 0 && axis >= 0 ? (int32_t)axis : 0;
    }
    if (i < n->n_out && n->out_names[i] && n->out_names[i][0] && imp_set_output(c, n, i, nd->out[i]) < 0) return -1;
  }
  return 0;
}
