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
#include "simplify.h"

/* The template's tile width for N columns and M rows: the widest of 1–2 vectors
 * (4 for a single row; 4 too for a batch of weight matrices with 32 vector registers
 * and rows for a 6-row tile) of vec, vec halving down to 4, that divides N; 0 if none.
 * The batched GEMMs are Winograd's per-point matrices: a 6 x 4-vector tile loads 10
 * vectors (6 broadcasts of A, 4 of B) per 24 FMAs, where 8 x 2 vectors load 10 per
 * 16; on ResNet-50's (K, N of 64 to 256, 16 to 196 rows) the GEMMs ran 8–12% faster
 * (Sapphire Rapids VM, 2 threads). */
static int64_t panel_width(int64_t N, int64_t M, int32_t vec, int batched, int32_t vec_regs) {
  int64_t max_vecs = M == 1 || (batched && vec_regs >= 32 && M >= 6) ? 4 : 2;
  for (int64_t v = vec; v >= 4; v /= 2)
    for (int64_t nv = max_vecs; nv >= 1; nv /= 2)
      if (N % (v * nv) == 0) return v * nv;
  return 0;
}

int lay_pack_matmul(gir_graph *g, int32_t vec, int32_t vec_regs, int32_t *packed, gir_err *err) {
  int32_t count = 0, grew = 0, n0 = g->n_nodes;
  for (int k = 0; k < n0 && vec >= 4; k++) {
    gir_node *n = g->nodes[k];
    g->cur_guard = n->guard; /* what this rewrite adds runs where n did */
    if (n->op != GIR_OP_matmul || gir_attr_int(n, "packed", 0)) continue;
    gir_value *a = n->in[0], *b = n->in[1];
    int q8 = (a->dtype == GIR_U8 || a->dtype == GIR_I8) && (b->dtype == GIR_U8 || b->dtype == GIR_I8);
    /* float32 weights may be batched ([batch.., K, N]: a batch of GEMMs with constant
     * weights, Winograd's per-point matrices): each batch's panels in turn */
    int32_t pb = b->shape.rank - 2;
    if (!b->data || pb < 0 || (pb && (q8 || b->dtype != GIR_F32)) ||
        ((b->dtype != GIR_F32 || a->dtype != GIR_F32) && !q8))
      continue;
    int64_t K = b->shape.dims[pb], N = b->shape.dims[pb + 1], M = a->shape.dims[a->shape.rank - 2], nb = 1;
    for (int i = 0; i < pb; i++) nb *= b->shape.dims[i];
    int64_t nr = panel_width(N, M, vec, pb > 0, vec_regs), Np = N;
    /* no panel of whole vectors divides N (a 1000-class classifier): the panels
     * pad the columns with zeros and a slice drops them from the output */
    if ((!nr || nr < vec) && N >= 4 * (int64_t)vec && !pb) {
      nr = (M == 1 ? 4 : 2) * (int64_t)vec;
      Np = (N + nr - 1) / nr * nr;
    }
    if (!nr || K < 2) continue;
    int64_t np = Np / nr + (Np % nr != 0);
    gir_shape ps = {.rank = 3 + pb};
    for (int i = 0; i < pb; i++) ps.dims[i] = b->shape.dims[i];
    ps.dims[pb] = np, ps.dims[pb + 1] = K, ps.dims[pb + 2] = nr;
    /* 8-bit weights with K a multiple of 4: each column's four consecutive k side by
     * side, [np, K/4, nr, 4] — the vector a 4-way dot product multiplies with four
     * bytes of A's row (tir/pass_dot4.c) */
    int quad = q8 && K % 4 == 0;
    if (quad) ps = (gir_shape){.rank = 4, .dims = {np, K / 4, nr, 4}};
    gir_value *pv = gir_const_new(g, NULL, b->dtype, &ps, NULL); /* packed in place */
    size_t es = gir_dtype_size(b->dtype);
    char *p = pv->data;
    memset(p, 0, (size_t)gir_value_nbytes(pv));
    const char *bd = b->data;
    for (int64_t bi = 0; bi < nb; bi++)
      for (int64_t j = 0; j < np; j++)
        for (int64_t kk = 0; kk < K; kk++)
          for (int64_t i = 0; i < nr && j * nr + i < N; i++) {
            int64_t dst = quad ? ((j * (K / 4) + kk / 4) * nr + i) * 4 + kk % 4 : ((bi * np + j) * K + kk) * nr + i;
            memcpy(p + dst * es, bd + ((bi * K + kk) * N + j * nr + i) * es, es);
          }
    count++;
    if (Np == N) {
      n->in[1] = pv;
      gir_attr_set_int(g, n, "packed", nr);
      gir_attr_set_int(g, n, "n", N);
      if (pb) gir_attr_set_int(g, n, "pbatch", pb);
      if (gir_node_infer(g, n, err) < 0) return -1;
      continue;
    }
    gir_node *mm = gir_node_new(g, GIR_OP_matmul, NULL, (gir_value *[]){a, pv}, 2, 1);
    mm->origin = n->origin;
    gir_attr_set_int(g, mm, "packed", nr);
    gir_attr_set_int(g, mm, "n", Np);
    if (gir_node_infer(g, mm, err) < 0) return -1;
    const gir_shape *os = &mm->out[0]->shape;
    int64_t starts[GIR_MAX_RANK] = {0}, steps[GIR_MAX_RANK], sizes[GIR_MAX_RANK];
    for (int i = 0; i < os->rank; i++) {
      steps[i] = 1;
      sizes[i] = i == os->rank - 1 ? N : os->dims[i];
    }
    gir_node *sl = gir_node_new(g, GIR_OP_slice, NULL, mm->out, 1, 1);
    sl->origin = n->origin;
    gir_attr_set_ints(g, sl, "starts", starts, os->rank);
    gir_attr_set_ints(g, sl, "steps", steps, os->rank);
    gir_attr_set_ints(g, sl, "sizes", sizes, os->rank);
    if (gir_node_infer(g, sl, err) < 0) return -1;
    if (gir_replace_uses(g, n->out[0], sl->out[0]) < 0) return gir_errf(err, "packing %s: cannot replace its output", n->name);
    grew = 1;
  }
  g->cur_guard = NULL;
  if (grew) {
    gir_arena *tmp = gir_arena_new();
    gir_topo_sort(g, tmp);
    gir_arena_free(tmp);
  }
  if (count) gir_graph_compact(g);
  if (packed) *packed = count;
  return 0;
}
