/* flops.h — work estimates per node, for reports (inspect, per-kernel GFLOPS). */
#ifndef GIR_FLOPS_H
#define GIR_FLOPS_H
#include "graph.h"

/* Floating-point operations of one node: 2 × MACs for conv, conv_transpose and
 * matmul; window size × outputs for pooling; a small per-element count for the
 * rest; 0 for pure data movement. */
int64_t gir_node_flops(const gir_node *n);
/* a + b, saturating at INT64_MAX (work totals of hostile models overflow). */
static inline int64_t gir_flops_add(int64_t a, int64_t b) { return b > INT64_MAX - a ? INT64_MAX : a + b; }

/* Marks values computable from constants alone (const_derived[v->id] = 1). */
void gir_const_derived(const gir_graph *g, uint8_t *const_derived);

#endif
