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

/* Horizontal fusion (pass_hfuse.c): sibling matmuls with constant [K, N_i]
 * weights on the same input (and their per-column bias adds), and sibling
 * group-1 convs with the same window, become one op on concatenated weights
 * followed by a slice per sibling — when the slices cost nothing (each
 * sibling's result goes to one data-movement or reduction op) and there are
 * at least two such siblings. The concatenations are left as nodes on
 * constants for gir_fold_constants. Siblings whose weights exceed
 * max_weight_bytes together (0: no limit) stay apart. stats may be NULL.
 * -1 with a message only on an internal inference failure. */
#define GIR_HFUSE_MAX_WEIGHT_BYTES (64ll << 20)

typedef struct gir_hfuse_stats {
  int32_t matmul_groups, matmuls; /* merged groups of sibling matmuls, and the matmuls in them */
  int32_t conv_groups, convs;
  int32_t biases;                 /* bias adds taken into a merged matmul */
  int32_t skipped_large;          /* groups left alone for the size of their weights */
  int32_t left_out;               /* siblings left alone: a slice would cost them a kernel (an epilogue,
                                     a complex consumer, a graph output) */
} gir_hfuse_stats;

int gir_hfuse(gir_graph *g, int64_t max_weight_bytes, gir_hfuse_stats *stats, gir_err *err);

/* Input ranges (pass_input_range.c): for each integer graph input, whether its
 * values reach the index operand of a gather / gather_elements / gather_nd /
 * scatter_elements / scatter_nd only through ops that move them unchanged
 * (integer casts, reshape, transpose, slice, broadcast, tile, concat, a gather's
 * data): then every value in [lo, hi) = [0, the smallest indexed axis) is valid
 * (RANGE); through an op that computes new values (GIVEN: no invented data is
 * known to be valid); or not at all (ANY). Non-integer inputs are ANY. out[i]
 * describes g->inputs[i]. Reads the graph only; run it on the imported graph,
 * before passes rewrite the index computations. */
typedef enum gir_input_values { GIR_VALUES_ANY, GIR_VALUES_RANGE, GIR_VALUES_GIVEN } gir_input_values;

typedef struct gir_input_range {
  gir_input_values kind;
  int64_t lo, hi;
} gir_input_range;

int gir_input_ranges(const gir_graph *g, gir_input_range *out, gir_err *err);

#endif
