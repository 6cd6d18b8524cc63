/* compute.c — dispatch from a canonical op to its compute definition (generated
 * from ops.def) and the helpers the definitions share. */
#include "compute.h"

typedef int (*compute_fn)(te_ctx *, const gir_node *, te_tensor *const *, te_tensor **);

static const compute_fn table[GIR_OP_COUNT] = {
#define GIR_OP(name, cat, min_in, max_in, n_out) [GIR_OP_##name] = lower_compute_##name,
#include "ops.def"
#undef GIR_OP
};

int lower_compute(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  return table[n->op](c, n, in, out);
}

void lower_out_axes(te_ctx *c, const gir_node *n, int i, te_var **axes) {
  te_axes(c, n->out[i]->shape.rank, n->out[i]->shape.dims, axes);
}

te_tensor *lower_stage(te_ctx *c, const gir_node *n, int i, te_var *const *axes, te_expr *body) {
  const gir_value *v = n->out[i];
  te_tensor *t = te_compute(c, n->name, v->dtype, v->shape.rank, v->shape.dims, axes, body);
  t->tag = gir_op_name(n->op);
  t->origin = n;
  return t;
}

te_expr *lower_idx_const(te_ctx *c, int64_t v) { return te_int(c, v); }

te_expr *lower_clamp(te_ctx *c, te_expr *x, int64_t lo, int64_t hi) {
  return te_bin(c, TE_MIN, te_bin(c, TE_MAX, x, te_int(c, lo)), te_int(c, hi));
}

te_expr *lower_wrap_index(te_ctx *c, te_expr *loaded, int64_t dim) {
  te_expr *i = te_cast(c, GIR_I64, loaded);
  return te_select(c, te_lt(c, i, te_int(c, 0)), te_add(c, i, te_int(c, dim)), i);
}
