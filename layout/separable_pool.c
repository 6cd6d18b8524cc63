/* separable_pool.c — a 2-D max pool with a large window as two 1-D ones: the
 * max over a kh×kw window is the max over its kh rows of the max over each row's
 * kw columns, so
 *
 *   pool(max, [kh, kw], strides [sh, sw], pads [t, l, b, r])
 *     → pool(max, [1, kw], [1, sw], [0, l, 0, r]) ∘ pool(max, [kh, 1], [sh, 1], [t, 0, b, 0])
 *
 * (rows first: the intermediate has the output's height and the input's width).
 * Every window is the product of one range per axis — padding, dilation and the
 * ceil-mode rule are per axis too — so the result is exact: a max has no rounding.
 * kh + kw comparisons per output instead of kh·kw: a 7×7 pool does 14, not 49.
 * Windows under 5×5 stay whole (3×3: 6 against 9 does not pay for the extra pass).
 * Runs before lay_nchwc, so both halves take the blocked layout like the pool did. */
#include "layout.h"
#include "simplify.h"

#define MIN_AREA 25

static gir_value *half(gir_graph *g, gir_value *x, const gir_node *like, const int64_t *kernel, const int64_t *strides,
                       const int64_t *dil, const int64_t *pads, gir_err *err) {
  gir_node *p = gir_node_new(g, GIR_OP_pool, NULL, &x, 1, 1);
  p->origin = like->origin;
  gir_attr_set_int(g, p, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, p, "kernel", kernel, 2);
  gir_attr_set_ints(g, p, "strides", strides, 2);
  gir_attr_set_ints(g, p, "dilations", dil, 2);
  gir_attr_set_ints(g, p, "pads", pads, 4);
  gir_attr_set_int(g, p, "ceil", gir_attr_int(like, "ceil", 0));
  return gir_node_infer(g, p, err) < 0 ? NULL : p->out[0];
}

int lay_separable_pool(gir_graph *g, int32_t *split, gir_err *err) {
  int32_t count = 0, n0 = g->n_nodes;
  for (int i = 0; i < n0; i++) {
    gir_node *n = g->nodes[i];
    g->cur_guard = n->guard; /* what this rewrite adds runs where n did */
    if (n->op != GIR_OP_pool || n->n_in != 1 || n->n_out != 1 || gir_attr_int(n, "fn", -1) != GIR_POOL_MAX ||
        gir_attr_int(n, "blocked", 0) || n->in[0]->shape.rank != 4 || n->in[0]->dtype != GIR_F32)
      continue;
    int32_t nk, ns, nd, np;
    const int64_t *k = gir_attr_ints(n, "kernel", &nk), *s = gir_attr_ints(n, "strides", &ns),
                  *d = gir_attr_ints(n, "dilations", &nd), *p = gir_attr_ints(n, "pads", &np);
    if (!k || nk != 2 || k[0] * k[1] < MIN_AREA || k[0] < 2 || k[1] < 2) continue;
    int64_t st[2] = {s && ns == 2 ? s[0] : 1, s && ns == 2 ? s[1] : 1};
    int64_t dl[2] = {d && nd == 2 ? d[0] : 1, d && nd == 2 ? d[1] : 1};
    int64_t pd[4] = {0, 0, 0, 0};
    for (int j = 0; p && np == 4 && j < 4; j++) pd[j] = p[j];
    int64_t k_rows[2] = {k[0], 1}, s_rows[2] = {st[0], 1}, d_rows[2] = {dl[0], 1}, p_rows[4] = {pd[0], 0, pd[2], 0};
    int64_t k_cols[2] = {1, k[1]}, s_cols[2] = {1, st[1]}, d_cols[2] = {1, dl[1]}, p_cols[4] = {0, pd[1], 0, pd[3]};
    gir_value *rows = half(g, n->in[0], n, k_rows, s_rows, d_rows, p_rows, err);
    if (!rows) return -1;
    gir_value *y = half(g, rows, n, k_cols, s_cols, d_cols, p_cols, err);
    if (!y) return -1;
    if (!gir_shape_equal(&y->shape, &n->out[0]->shape))
      return gir_errf(err, "separating pool %s: the shape changed", n->name);
    if (gir_replace_uses(g, n->out[0], y) < 0) return gir_errf(err, "separating pool %s: cannot replace its output", n->name);
    count++;
  }
  g->cur_guard = NULL;
  if (count) gir_resort_compact(g);
  if (split) *split = count;
  return 0;
}
