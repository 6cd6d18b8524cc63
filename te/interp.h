/* interp.h — executing graph IR through the compute definitions: the constant
 * folder handed to the importer and graph passes, and a whole-graph reference
 * interpreter (slow, exact to the definitions) that compiled code is tested
 * against. */
#ifndef LOWER_INTERP_H
#define LOWER_INTERP_H
#include "fold.h"
#include "graph.h"

/* An evaluator whose work per fold is bounded (an over-expensive fold fails and
 * the node is left to run at run time). Stateless: safe to share. */
gir_evaluator lower_fold_evaluator(void);

/* Runs n on input buffers (n->n_in entries, NULL for absent optional inputs),
 * writing outputs into out (n->n_out caller-allocated buffers). */
int lower_eval_node(const gir_node *n, const void *const *inputs, void *const *outputs, int64_t budget, gir_err *err);

/* Runs the graph: inputs in g->inputs order; outputs (g->n_outputs pointers)
 * are allocated in `a`. */
int lower_interpret(const gir_graph *g, const void *const *inputs, void **outputs, gir_arena *a, gir_err *err);

#endif
