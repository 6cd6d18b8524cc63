/* pack_matmul.c — constant matmul weights packed into column panels at compile
 * time (GotoBLAS's packed B, which oneDNN and MLAS also prepare ahead for
 * constant weights): B[K, N] becomes P[ceil(N/nr), K, nr], P[j, k, i] =
 * B[k, j·nr + i], zero past N, with nr the column width of the matmul
 * template's register tile. The micro-kernel then streams one contiguous panel
 * (nr floats per k step) instead of nr floats out of every N-float row of B, which
 * the hardware prefetchers follow and which touches K·nr·4 bytes of memory per
 * tile instead of K cache lines with a page stride. */
#include <string.h>
#include "layout.h"

/* The template's tile width for N columns and M rows: the widest of 1–2 vectors
 * (4 for a single row) of vec, vec halving down to 4, that divides N; 0 if none. */
static int64_t panel_width(int64_t N, int64_t M, int32_t vec) {
  int64_t max_vecs = M == 1 ? 4 : 2;
  for (int64_t v = vec; v >= 4; v /= 2)
    for (int64_t nv = max_vecs; nv >= 1; nv /= 2)
      if (N % (v * nv) == 0) return v * nv;
  return 0;
}

int lay_pack_matmul(gir_graph *g, int32_t vec, int32_t *packed, gir_err *err) {
  int32_t count = 0;
  for (int k = 0; k < g->n_nodes && vec >= 4; k++) {
    gir_node *n = g->nodes[k];
    if (n->op != GIR_OP_matmul || gir_attr_int(n, "packed", 0)) continue;
    gir_value *a = n->in[0], *b = n->in[1];
    if (!b->data || b->shape.rank != 2 || b->dtype != GIR_F32 || a->dtype != GIR_F32) continue;
    int64_t K = b->shape.dims[0], N = b->shape.dims[1], M = a->shape.dims[a->shape.rank - 2];
    int64_t nr = panel_width(N, M, vec);
    if (!nr || K < 2) continue;
    int64_t np = (N + nr - 1) / nr;
    float *p = gir_arena_calloc(g->arena, (size_t)(np * K * nr), sizeof *p);
    if (!p) return gir_errf(err, "out of memory packing the weights of %s", n->name);
    const float *bd = b->data;
    for (int64_t j = 0; j < np; j++)
      for (int64_t kk = 0; kk < K; kk++)
        for (int64_t i = 0; i < nr && j * nr + i < N; i++) p[(j * K + kk) * nr + i] = bd[kk * N + j * nr + i];
    gir_shape ps = {.rank = 3, .dims = {np, K, nr}};
    gir_value *pv = gir_const_new(g, NULL, GIR_F32, &ps, p);
    if (!pv) return gir_errf(err, "out of memory packing the weights of %s", n->name);
    n->in[1] = pv;
    gir_attr_set_int(g, n, "packed", nr);
    gir_attr_set_int(g, n, "n", N);
    if (gir_node_infer(g, n, err) < 0) return -1;
    count++;
  }
  if (count) gir_graph_compact(g);
  if (packed) *packed = count;
  return 0;
}
