/* flatten_reduce.c — a reduction over the trailing axes of a plain tensor (a
 * global max or average pool over H and W in NCHW, a reduce over the last two
 * axes) becomes a reduction over one axis of the same memory seen flat:
 *
 *   reduce(x[d0..dk-1, dk..dr-1], axes k..r-1)
 *     → reshape(reduce(reshape(x, [d0..dk-1, dk·…·dr-1]), axes [k]), out shape)
 *
 * The reshapes are views (no kernel, no copy). The reduction over the last axis
 * is what the per-row template vectorizes (rows of H·W in vector partials at a
 * parallel row loop); over two axes it fell to one scalar accumulator per row.
 * Runs after lay_nchwc: a spatial reduce the blocked layout took over keeps the
 * channel block innermost and its own vector template; only what stayed plain
 * is flattened. Every reduce function reduces a set of elements, so merging
 * adjacent axes of the set changes nothing but the order of a float sum. */
#include "layout.h"
#include "simplify.h"

/* k when axes are exactly {k, …, r-1} with at least two of them, else -1. */
static int trailing_from(const gir_node *n, int r) {
  int32_t na;
  const int64_t *axes = gir_attr_ints(n, "axes", &na);
  if (!axes || na < 2 || na > r) return -1;
  uint32_t seen = 0;
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < r - na || a >= r || (seen >> a & 1)) return -1;
    seen |= 1u << a;
  }
  return r - na;
}

int lay_flatten_reduce(gir_graph *g, int32_t *flattened, gir_err *err) {
  int32_t count = 0, n0 = g->n_nodes;
  for (int i = 0; i < n0; i++) {
    gir_node *n = g->nodes[i];
    g->cur_guard = n->guard; /* what this rewrite adds runs where n did */
    if (n->op != GIR_OP_reduce || n->n_in != 1 || n->n_out != 1) continue;
    gir_value *x = n->in[0];
    int r = x->shape.rank, k = trailing_from(n, r);
    if (k < 0) continue;
    int64_t dims[GIR_MAX_RANK], inner = 1;
    for (int d = 0; d < k; d++) dims[d] = x->shape.dims[d];
    for (int d = k; d < r; d++) inner *= x->shape.dims[d];
    dims[k] = inner;
    gir_node *flat = gir_node_new(g, GIR_OP_reshape, NULL, &x, 1, 1);
    flat->origin = n->origin;
    gir_attr_set_ints(g, flat, "shape", dims, k + 1);
    if (gir_node_infer(g, flat, err) < 0) return -1;
    gir_node *red = gir_node_new(g, GIR_OP_reduce, NULL, flat->out, 1, 1);
    red->origin = n->origin;
    int64_t axis = k;
    gir_attr_set_int(g, red, "fn", gir_attr_int(n, "fn", 0));
    gir_attr_set_ints(g, red, "axes", &axis, 1);
    gir_attr_set_int(g, red, "keepdims", 1);
    if (gir_node_infer(g, red, err) < 0) return -1;
    const gir_shape *os = &n->out[0]->shape;
    gir_node *back = gir_node_new(g, GIR_OP_reshape, NULL, red->out, 1, 1);
    back->origin = n->origin;
    gir_attr_set_ints(g, back, "shape", os->dims, os->rank);
    if (gir_node_infer(g, back, err) < 0) return -1;
    if (back->out[0]->dtype != n->out[0]->dtype || !gir_shape_equal(&back->out[0]->shape, os))
      return gir_errf(err, "flattening reduce %s: the result's type or shape changed", n->name);
    if (gir_replace_uses(g, n->out[0], back->out[0]) < 0)
      return gir_errf(err, "flattening reduce %s: cannot replace its output", n->name);
    count++;
  }
  g->cur_guard = NULL;
  if (count) gir_resort_compact(g);
  if (flattened) *flattened = count;
  return 0;
}
