/* fusion.h — the partition of a graph into fused groups, each of which lowers to
 * ONE kernel. The algorithm is TVM's FuseOps (partition.c explains it): a
 * post-dominator tree over the value uses, union-find groups, and three phases —
 * complex ops (conv, matmul, pool…) take the element-wise chain after them,
 * injective chains fold into the injective or reduction op that post-dominates
 * them, and what is left of the injective side inputs joins the complex groups.
 *
 * Invariants of every partition (fus_verify_partition checks them):
 *   - every node is in exactly one group; constants are not nodes;
 *   - a group holds at most one COMPLEX or REDUCTION node (its master), and an
 *     OPAQUE node is alone;
 *   - groups are listed in an order that runs: a group reads only values of
 *     groups before it (so no path leaves a group and re-enters it);
 *   - a group has one exit: only its last node's values are read outside it or
 *     are graph outputs (a lone multi-output opaque node may have two). */
#ifndef FUS_FUSION_H
#define FUS_FUSION_H
#include <stdint.h>
#include "graph.h"

typedef struct fus_group {
  int32_t id;
  gir_category category; /* COMPLEX / REDUCTION: has such a master; OPAQUE: one opaque node; else INJECTIVE */
  int32_t master;        /* the node whose schedule the group follows: its complex-out-fusable or
                            reduction op, else the last node */
  int32_t n_nodes;
  int32_t *nodes;        /* node ids in topological order */
  /* What the kernel reads and writes (also through fus_group_inputs/_outputs). */
  int32_t n_inputs;
  gir_value **inputs;    /* non-constant values from outside (first use order), then constants */
  int32_t n_outputs;
  gir_value **outputs;   /* values produced here and read by other groups or graph outputs */
  int32_t n_graph_outputs; /* how many of the outputs are graph outputs: the kernel writes them
                              into the output buffers (an output may also be read by other groups) */
} fus_group;

typedef struct fus_partition {
  int32_t n_groups;
  fus_group *groups;  /* in execution order */
  int32_t *group_of;  /* by node id */
} fus_partition;

typedef struct fus_options {
  int32_t max_group_nodes; /* default 256; counts member nodes (not paths: apache/tvm#6327) */
  int opt_level;           /* 0: every node its own group; >= 1: FuseOps */
} fus_options;

fus_options fus_default_options(void);

/* Partitions g (opt NULL: defaults). The partition lives in a. Requires: node ids
 * equal positions in g->nodes (gir_graph_compact), topological order.
 * Preserves: the graph (it is only read). -1 with a message on a graph that breaks
 * the requirements or when a runs out of memory. */
int fus_partition_graph(const gir_graph *g, const fus_options *opt, gir_arena *a, fus_partition *out, gir_err *err);

/* The group's outputs / inputs (see fus_group); writes at most max of them into
 * out (which may be NULL when max is 0) and returns how many there are. */
int32_t fus_group_outputs(const gir_graph *g, const fus_partition *p, int32_t group, gir_value **out, int32_t max);
int32_t fus_group_inputs(const gir_graph *g, const fus_partition *p, int32_t group, gir_value **out, int32_t max);

/* "conv+sub+mul+add+relu": the member ops in order (unary/binary/reduce by their
 * function), in a. */
const char *fus_describe_group(const gir_graph *g, const fus_partition *p, int32_t group, gir_arena *a);
/* The short name of a node's op ("conv", "relu", "sum"…). */
const char *fus_node_op_name(const gir_node *n);

/* Checks the invariants listed at the top of this file; 0 or -1 with a message. */
int fus_verify_partition(const gir_graph *g, const fus_partition *p, gir_err *err);

#endif
