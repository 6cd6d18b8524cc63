/* pass_outputs.c — graph outputs that no node produces (a constant, a graph input
 * passed through) get an identity copy, so that every output is written by a
 * kernel into the buffer the runtime hands it.
 * Requires: nothing. Preserves: semantics and topological order. */
#include "passes.h"

void gir_materialize_outputs(gir_graph *g) {
  for (int i = 0; i < g->n_outputs; i++) {
    gir_value *v = g->outputs[i];
    if (v->producer) continue;
    gir_node *n = gir_node_new(g, GIR_OP_reshape, NULL, &v, 1, 1);
    gir_attr_set_ints(g, n, "shape", v->shape.dims, v->shape.rank);
    n->out[0]->dtype = v->dtype;
    n->out[0]->shape = v->shape;
    n->out[0]->string_bytes = v->string_bytes; /* a string tensor stays one */
    n->out[0]->name = v->name; /* a graph input and an output may share a name: they are different buffers */
    n->out[0]->is_output = 1;
    v->is_output = 0;
    g->outputs[i] = n->out[0];
  }
}
