/* passes.h — graph passes of graphir/. Each states what it requires and what it
 * preserves above its definition. */
#ifndef GIR_PASSES_H
#define GIR_PASSES_H
#include "fold.h"
#include "graph.h"

/* Folds every node whose inputs are constant and whose outputs total at most
 * max_bytes (0: no limit). *folded gets the count. Never fails on a node it
 * cannot fold (it stays); err receives the first such reason, for reports. */
int gir_fold_constants(gir_graph *g, const gir_evaluator *ev, int64_t max_bytes, int32_t *folded, gir_err *err);

/* Gives every graph output a producing node: outputs that are constants or graph
 * inputs get an identity copy (the runtime writes outputs into their own buffers). */
void gir_materialize_outputs(gir_graph *g);

#endif
