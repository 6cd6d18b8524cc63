/* fold.h — the constant-evaluation hook. graphir cannot depend on lower/, where
 * each op's compute definition (the single statement of its semantics) lives, so
 * whoever folds constants (the importer, the fold pass) is handed an evaluator
 * that lower/ implements. */
#ifndef GIR_FOLD_H
#define GIR_FOLD_H
#include "graph.h"

typedef struct gir_evaluator {
  /* Fills n->out[i]->data (allocated in g's arena) from n's inputs, all of which
   * are constants. 0, or -1 with a message. */
  int (*eval)(void *ctx, gir_graph *g, gir_node *n, gir_err *err);
  void *ctx;
} gir_evaluator;

/* Evaluates n (whose inputs must all be constant) and turns its outputs into
 * constants detached from n; n itself is left for gir_graph_compact to drop. */
int gir_fold_node(const gir_evaluator *ev, gir_graph *g, gir_node *n, gir_err *err);

#endif
