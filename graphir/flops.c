/* flops.c — per-node work estimates (see flops.h). Counts follow the usual
 * convention of model zoos: a multiply-add is two operations. */
#include "flops.h"

/* Work counts saturate at INT64_MAX: a hostile model's shapes may multiply past it. */
static int64_t sat(__int128 v) { return v > INT64_MAX ? INT64_MAX : v < 0 ? 0 : (int64_t)v; }

static __int128 prod(const int64_t *d, int n) {
  __int128 p = 1;
  for (int i = 0; i < n && p <= INT64_MAX; i++) p *= d[i];
  return p;
}

int64_t gir_node_flops(const gir_node *n) {
  if (!n->n_out) return 0;
  const gir_value *y = n->out[0];
  __int128 out = gir_value_numel(y);
  switch (n->op) {
  case GIR_OP_conv: {
    const gir_shape *w = &n->in[1]->shape; /* [M, C/g, k...]: MACs per output = C/g * prod(k) */
    return sat(2 * out * sat(prod(w->dims + 1, w->rank - 1)));
  }
  case GIR_OP_conv_nchwc: {
    const gir_shape *w = &n->in[1]->shape; /* [M/ob, Cg/wb, kh, kw, wb, ob]: MACs per output = Cg * kh * kw */
    return sat(2 * out * sat(prod(w->dims + 1, 4) * (w->rank == 7 ? w->dims[6] : 1))); /* 7-D: quads of channels */
  }
  case GIR_OP_conv_transpose: {
    const gir_shape *w = &n->in[1]->shape; /* each input element × (M/g) × prod(k) */
    return sat(2 * (__int128)gir_value_numel(n->in[0]) * sat(prod(w->dims + 1, w->rank - 1)));
  }
  case GIR_OP_matmul: {
    const gir_shape *a = &n->in[0]->shape;
    return sat(2 * out * a->dims[a->rank - 1]);
  }
  case GIR_OP_pool: {
    int32_t k;
    const int64_t *kernel = gir_attr_ints(n, "kernel", &k);
    return sat(out * (kernel ? sat(prod(kernel, k)) : 1));
  }
  case GIR_OP_unary: case GIR_OP_binary: case GIR_OP_where: return sat(out);
  case GIR_OP_reduce: case GIR_OP_arg_reduce: case GIR_OP_cumulate: return gir_value_numel(n->in[0]);
  case GIR_OP_softmax: return sat(5 * out);
  case GIR_OP_layer_norm: return sat(8 * out);
  case GIR_OP_lrn: return sat(out * (gir_attr_int(n, "size", 1) + 4));
  case GIR_OP_resize: return sat(4 * out);
  default: return 0;
  }
}

void gir_const_derived(const gir_graph *g, uint8_t *cd) {
  for (int i = 0; i < g->n_values; i++) cd[i] = g->values[i]->data != NULL;
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    int all = 1;
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j] && !cd[n->in[j]->id]) all = 0;
    for (int j = 0; j < n->n_out; j++) cd[n->out[j]->id] = (uint8_t)all;
  }
}
