/* flops.h — work estimates per node, for reports (inspect, per-kernel GFLOPS). */
#ifndef GIR_FLOPS_H
#define GIR_FLOPS_H
#include "graph.h"

/* Floating-point operations of one node: 2 × MACs for conv, conv_transpose and
 * matmul; window size × outputs for pooling; a small per-element count for the
 * rest; 0 for pure data movement. */
int64_t gir_node_flops(const gir_node *n);

/* Marks values computable from constants alone (const_derived[v->id] = 1). */
void gir_const_derived(const gir_graph *g, uint8_t *const_derived);

#endif
