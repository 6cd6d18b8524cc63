/* fold.c — turning one node with constant inputs into constants (see fold.h). */
#include "fold.h"

int gir_fold_node(const gir_evaluator *ev, gir_graph *g, gir_node *n, gir_err *err) {
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] && !n->in[i]->data) return gir_errf(err, "fold: input %d of %s is not constant", i, n->name);
  if (ev->eval(ev->ctx, g, n, err) < 0) return -1;
  for (int i = 0; i < n->n_out; i++)
    if (!n->out[i]->data) {
      for (int j = 0; j < n->n_out; j++) n->out[j]->data = NULL; /* all or nothing */
      return gir_errf(err, "fold: evaluator left output %d of %s empty", i, n->name);
    }
  for (int i = 0; i < n->n_out; i++) {
    n->out[i]->producer = NULL;
    n->out[i]->producer_slot = 0;
  }
  n->n_out = 0; /* the node now produces nothing: compaction removes it */
  return 0;
}
