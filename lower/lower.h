/* lower.h — from graph IR to kernels: each fused group (or each node, without
 * fusion) becomes one tir_func through its compute definitions and the default
 * schedule (templates.h for heavy stages), plus the plan that says which graph
 * values each kernel reads and writes and how much workspace it needs. */
#ifndef LOWER_H
#define LOWER_H
#include "graph.h"
#include "schedule.h"
#include "templates.h"
#include "tir.h"

typedef struct lower_kernel {
  tir_func *fn;
  const gir_node *node;     /* the last node of the kernel's group */
  int32_t n_in, n_out;      /* buffer params: n_in input values, n_out outputs, then workspace */
  const gir_value **in;     /* graph values bound to the input params (NULL: absent optional input) */
  const gir_value **out;
  int64_t flops;            /* of all its nodes (gir_node_flops) */
  int32_t n_ws;             /* workspace params after the outputs */
  int64_t *ws_bytes;
  const char *generic;      /* a heavy stage's tag (conv, matmul, pool…) when no template scheduled it, else NULL */
  int32_t n_checks;         /* run-time checks (index_checks.c): check j reports as checks[j], */
  const char **checks;      /* "Gather 'g' (opset 13), indices 'ids'" */
  tir_stmt *scheduled;      /* fn's body as the schedule lowered it, before the loop passes (loops
                               still annotated: what the tuner's features read, tuner/tun_feature.c) */
  const gir_guard *guard;   /* the If branch the kernel's nodes lie in: it runs only when that holds */
  const char *trap;         /* a trap's message: the runtime fails the run instead of calling it */
} lower_kernel;

typedef struct lower_program {
  lower_kernel *kernels;
  int32_t n_kernels;
} lower_program;

/* One kernel computing outs (n_outs values produced by the nodes) from the nodes
 * (topological order), named `name`. */
int lower_nodes(tir_builder *b, te_ctx *c, const gir_node *const *nodes, int32_t n_nodes, const gir_value *const *outs,
                int32_t n_outs, const char *name, const lower_target *t, lower_kernel *k, gir_err *err);
/* Ops whose kernel is written in loop IR directly (lower_seq.c): sequential
 * algorithms with no tensor-expression form (NonMaxSuppression). */
int lower_is_sequential(gir_op op);
/* k: the kernel of node n (such an op), named `name`, writing outs (all of n's outputs). */
int lower_sequential(tir_builder *b, const gir_node *n, const gir_value *const *outs, int32_t n_outs, const char *name,
                     lower_kernel *k, gir_err *err);
/* The body of a strop kernel (lower_str.c) over node n's input and output buffers
 * (in[i] NULL when absent); registers its run-time checks in k. */
int lower_str_body(tir_builder *b, const gir_node *n, tir_buffer *const *in, tir_buffer *const *out,
                   lower_kernel *k, tir_stmt **body, gir_err *err);
/* One kernel for node n. */
int lower_node(tir_builder *b, te_ctx *c, const gir_node *n, const char *name, const lower_target *t, lower_kernel *out,
               gir_err *err);

/* Checks the indices of the gathers and scatters among nodes: constant ones now
 * (an error names the node and the index), the others at run time by a prologue
 * added to k's function, described in k->checks. Requires every non-constant index
 * tensor to be a kernel input. */
int lower_index_checks(tir_builder *b, const gir_node *const *nodes, int32_t n_nodes, lower_kernel *k, gir_err *err);

/* One kernel per group: group_of[node id] in [0, n_groups), groups convex. */
int lower_graph_groups(const gir_graph *g, const int32_t *group_of, int32_t n_groups, tir_builder *b,
                       const lower_target *t, lower_program *p, gir_err *err);
/* One kernel per node. */
int lower_graph(const gir_graph *g, tir_builder *b, const lower_target *t, lower_program *p, gir_err *err);

#endif
