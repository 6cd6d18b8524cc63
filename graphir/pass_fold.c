/* pass_fold.c — constant folding over the whole graph: every node whose inputs
 * are all constants is evaluated (through the evaluator the caller supplies: the
 * compute definitions in lower/) and replaced by its results, in topological
 * order so that chains fold in one sweep. Weight transforms (BatchNormalization
 * folded into scale/shift, a light model's ConstantOfShape weights, reshapes and
 * transposes of weights) disappear here, before code generation.
 * Requires: topological order. Preserves: semantics; leaves folded nodes for
 * gir_graph_compact, which it calls. */
#include "fold.h"
#include "passes.h"

int gir_fold_constants(gir_graph *g, const gir_evaluator *ev, int64_t max_bytes, int32_t *folded, gir_err *err) {
  int32_t count = 0;
  for (int k = 0; k < g->n_nodes; k++) {
    gir_node *n = g->nodes[k];
    if (!n->n_out || n->op == GIR_OP_trap) continue; /* a trap's value is never computed */
    int all = 1;
    for (int i = 0; i < n->n_in && all; i++)
      if (n->in[i] && !n->in[i]->data) all = 0;
    if (!all) continue;
    int64_t bytes = 0;
    for (int i = 0; i < n->n_out; i++) bytes += gir_value_nbytes(n->out[i]);
    if (max_bytes > 0 && bytes > max_bytes) continue;
    /* graph outputs fold too: gir_materialize_outputs gives them a copy */
    gir_err e = {{0}};
    if (gir_fold_node(ev, g, n, &e) < 0) {
      if (err && !err->msg[0]) gir_errf(err, "%s", e.msg); /* the first reason, for reports */
      continue; /* not foldable (too expensive, unsupported): it runs at run time */
    }
    count++;
  }
  gir_graph_compact(g);
  if (folded) *folded = count;
  return 0;
}
