/* compute.h — the compute definition of every canonical op (ops.def), the single
 * statement of its semantics: from the TE tensors of a node's inputs (NULL for an
 * absent optional input) it builds the stage(s) computing the node's outputs,
 * whose dtypes and shapes shape inference already fixed (n->out[i]). Definitions
 * are grouped by area in compute_*.c. */
#ifndef LOWER_COMPUTE_H
#define LOWER_COMPUTE_H
#include "te.h"

#define GIR_OP(name, cat, min_in, max_in, n_out) \
  int lower_compute_##name(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out);
#include "ops.def"
#undef GIR_OP

/* Dispatches on n->op. out has n->n_out slots. 0, or -1 with c->err set. */
int lower_compute(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out);

/* Helpers shared by the definitions (compute.c). */
/* A compute stage with n's output i dtype/shape, named after the node. */
te_tensor *lower_stage(te_ctx *c, const gir_node *n, int i, te_var *const *axes, te_expr *body);
/* Iteration variables for n's output i. */
void lower_out_axes(te_ctx *c, const gir_node *n, int i, te_var **axes);
/* Integer attribute as an index expression. */
te_expr *lower_idx_const(te_ctx *c, int64_t v);
/* x clamped into [lo, hi] (int64). */
te_expr *lower_clamp(te_ctx *c, te_expr *x, int64_t lo, int64_t hi);
/* An index loaded from an int32/int64 tensor, as int64, with negative values
 * wrapped by adding dim (ONNX's convention for gather-like ops). */
te_expr *lower_wrap_index(te_ctx *c, te_expr *loaded, int64_t dim);

#endif
