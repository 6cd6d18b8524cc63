/* simplify.h — graph simplification: algebraic rewrite rules kept as data (one
 * row each: a pattern, a rewrite, and the algebra it applies), an engine that
 * runs them to a fixed point, common-subexpression elimination, and the helper
 * every rewrite uses to redirect the consumers of a value.
 *
 * The rule table lives in simplify_rules.c, the engine in simplify.c, CSE in
 * pass_cse.c. The rule types are public so that tests and reports can list the
 * rules with their algebra; passes only need gir_simplify and gir_cse. */
#ifndef GIR_SIMPLIFY_H
#define GIR_SIMPLIFY_H
#include "fold.h"
#include "graph.h"

/* --- the pass --- */

#define GIR_SIMPLIFY_MAX_RULES 64

typedef struct gir_simplify_stats {
  int32_t nodes_before, nodes_after;
  int32_t sweeps;                          /* rule sweeps over the graph */
  int32_t rewrites;                        /* rule rewrites in all */
  int32_t cse_merged;                      /* nodes and constants merged by CSE */
  int32_t fired[GIR_SIMPLIFY_MAX_RULES];   /* rewrites per rule, in gir_simplify_rule order */
} gir_simplify_stats;

/* Applies every rule until none applies, merges common subexpressions, and
 * repeats until neither changes the graph; ends with gir_graph_compact. ev (may
 * be NULL) folds the constant nodes a rewrite creates (scaled conv weights…) at
 * once; without it they stay as nodes for gir_fold_constants. stats may be NULL.
 * -1 with a message only if the rules do not converge (a rule cycle: a bug).
 * Requires: topological order. Preserves: semantics (up to float rounding of
 * folded per-channel scales), topological order, graph output names. */
int gir_simplify(gir_graph *g, const gir_evaluator *ev, gir_simplify_stats *stats, gir_err *err);

/* Merges nodes with the same op, the same inputs and equal attributes (every
 * attribute compared exactly, floats bit for bit), and constants with the same
 * dtype, shape and bytes; *merged (may be NULL) gets the count. Graph outputs
 * keep their names (a merge that would lose one is skipped). Always 0.
 * Requires: topological order. Preserves: semantics, topological order. */
int gir_cse(gir_graph *g, int32_t *merged);

/* Redirects every consumer of old (node inputs, graph outputs) to new, which
 * must have old's dtype and shape. A graph output keeps its name: new takes it
 * over, which is only possible when new is produced by a node and is not
 * already a graph input or output; otherwise nothing changes and -1 is
 * returned (the caller keeps old). 0 on success. */
int gir_replace_uses(gir_graph *g, gir_value *old, gir_value *new_value);
/* Restores topological order after a pass appended nodes (ids must be positions:
 * nothing removed since the last compaction); tmp holds the scratch arrays. */
void gir_topo_sort(gir_graph *g, gir_arena *tmp);
/* gir_topo_sort with its own scratch arena, then gir_graph_compact: what a pass
 * that appended nodes and rerouted uses does last. */
void gir_resort_compact(gir_graph *g);
/* Whether gir_replace_uses(g, old, new_value) would succeed. */
int gir_can_replace_uses(const gir_value *old, const gir_value *new_value);

/* --- rules as data (for rule writers, tests and reports) --- */

/* What one operand of a pattern must be. */
typedef enum gir_operand_cond {
  GIR_PAT_ANY,       /* anything */
  GIR_PAT_CONST,     /* a constant (has data) */
  GIR_PAT_ZERO,      /* a constant whose every element is 0 (or -0) */
  GIR_PAT_ONE,       /* a constant whose every element is 1 */
  GIR_PAT_ALL_BITS,  /* a constant whose every element has all bits set (integers: ~0; bool: true) */
  GIR_PAT_FROM,      /* produced by a node of the given op (and function, unless -1) */
  GIR_PAT_COND_COUNT
} gir_operand_cond;

typedef struct gir_operand_pat {
  gir_operand_cond cond;
  gir_op op; /* GIR_PAT_FROM: the producer's op */
  int fn;    /* GIR_PAT_FROM: the producer's fn attribute, -1 for any */
} gir_operand_pat;

/* Which element types a rule applies to (by the dtype of operand 0). */
typedef enum gir_type_class {
  GIR_TYPES_ANY,
  GIR_TYPES_INT,   /* signed and unsigned integers */
  GIR_TYPES_FLOAT,
  GIR_TYPES_BOOL,
  GIR_TYPES_INT_OR_BOOL,
  GIR_TYPE_CLASS_COUNT
} gir_type_class;

/* Flags of a rule row. */
enum {
  GIR_RULE_COMMUTE = 1,   /* binary: also try the operands swapped */
  GIR_RULE_SAME = 2,      /* operands 0 and 1 are the same value */
  GIR_RULE_KEEPS_X = 4,   /* the node's output has operand x's dtype and shape (x may replace it) */
};

/* A match handed to the rewrite: x and k are the node's operands 0 and 1 in
 * the pattern's order (swapped when a commutative rule matched that way). */
typedef struct gir_match {
  gir_value *x, *k;
  int swapped;
} gir_match;

typedef struct gir_sx gir_sx; /* the engine's state, handed to rewrites */

/* Returns 1 when it rewrote the graph, 0 when it declined (a condition the
 * pattern cannot express does not hold), -1 on an internal error. */
typedef int (*gir_rewrite_fn)(gir_sx *s, gir_node *n, const gir_match *m);

typedef struct gir_rule {
  const char *name;
  gir_op op;
  int fn;                 /* unary/binary function, -1 for any (or not applicable) */
  gir_type_class types;
  gir_operand_pat in[2];  /* conditions on operands 0 and 1 */
  int flags;
  gir_rewrite_fn rewrite;
  const char *algebra;    /* e.g. "x*1 → x" */
} gir_rule;

int gir_simplify_rule_count(void);
const gir_rule *gir_simplify_rule(int i);

/* Engine services for rewrites (simplify.c). */
gir_graph *gir_sx_graph(gir_sx *s);
/* Consumers of v among live nodes (graph outputs not counted). */
int32_t gir_sx_uses(gir_sx *s, const gir_value *v);
/* Whether v is computable from constants alone (a constant, or the output of a
 * node whose inputs all are). */
int gir_sx_const_derived(const gir_value *v);
/* Replaces n's output slot 0 by v and retires n; 0 (nothing changed) when the
 * output is a graph output that v cannot take over. */
int gir_sx_replace_node(gir_sx *s, gir_node *n, gir_value *v);
/* Sets n->in[i] (growing n's input array when i == n->n_in). */
void gir_sx_set_input(gir_sx *s, gir_node *n, int i, gir_value *v);
/* A new node of op over ins with the given function (-1: none) and inferred
 * outputs, folded at once when its inputs are constants and the engine has an
 * evaluator. Returns its output 0, or NULL with the engine's error set. The node
 * carries `origin` (the node whose rewrite made it). */
gir_value *gir_sx_node(gir_sx *s, gir_op op, int fn, gir_value *const *ins, int32_t n_in, const gir_node *origin);
/* v reshaped to dims: constants are relabelled without a node. */
gir_value *gir_sx_reshape(gir_sx *s, gir_value *v, int32_t rank, const int64_t *dims, const gir_node *origin);
/* A zero-filled constant. */
gir_value *gir_sx_zeros(gir_sx *s, gir_dtype t, const gir_shape *shape);
/* Marks the graph as changed by an in-place edit of a node. */
void gir_sx_touch(gir_sx *s);

#endif
