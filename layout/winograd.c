/* winograd.c — 3×3 stride-1 convolutions in NCHW[x]c as Winograd F(m×m, 3×3)
 * (Lavin and Gray 2016; the matrices in graphir/winograd.h).
 *
 * A conv_nchwc becomes three ops: winograd_in (Bᵀ d B of every (m+2)² input tile
 * under an m×m output tile, zero outside the image: V[ξ, ν, tile, c]), a batched
 * matmul V[ξ, ν] @ U[ξ, ν] over the input channels — one GEMM of tiles × C × M per
 * point (ξ, ν), with U = G g Gᵀ computed here from the constant weights — and
 * winograd_out (Aᵀ M A per tile, plus the bias, back to NCHW[x]c; the conv's
 * element-wise epilogue fuses into it as into the conv). With m = 4 a tile costs
 * 36 products per input/output channel pair instead of 144 (m = 2: 16 for 36); the
 * GEMMs go through the matmul template (and the tuner) like any matmul.
 *
 * When it pays (lay_winograd_auto): the transforms' cost grows with C + M and the
 * GEMMs' saving with C·M, so both channel counts must be at least 32; each
 * transformed weight is reused once per tile, so a map needs at least 32 tiles
 * (ResNet's 56×56 and 28×28 stages with m = 4, 14×14 with m = 2) and whole tiles.
 * Targets with 8-float vectors and 16 registers (x86 AVX2: Zen 3, Intel before
 * Skylake-X), where direct convs run at 50–65% of peak, also take F(2×2) on maps of
 * 16 tiles and on maps that are no whole tiles (7×7, 13×13: the last tile row and
 * column half outside, their padding computed and dropped) — measured there on 3×3
 * convs of 64–512 channels at 7×7 to 15×15, one and two threads: 1.2–1.9x faster
 * than direct (ResNet-50's 512-channel 7×7 pair in the model, weights streamed from
 * memory: 3.6 → 2.1 ms), though the transformed weights take 16/9 of the conv's.
 * With 32 registers the direct conv runs closer to peak and the rule is unchanged
 * (not measured there). Inputs whose channel padding holds no zeros (a "channels"
 * attribute below the blocked count) stay direct: the GEMM would sum the padding.
 * Float error: F(4,3)'s transforms scale values by up to 8·4 and back; outputs
 * differ from the direct conv's by ~1e-6 relative on ResNet-style data
 * (tests/py/test_winograd.py states the bound it checks). */
#include <string.h>
#include "layout.h"
#include "simplify.h"
#include "winograd.h"

#define MIN_CHANNELS 32
#define MIN_TILES 32
#define MIN_TILES_SMALL_MAPS 16 /* F(2x2) with small_maps */
/* transformed weights are (m+2)²/9 times the conv's: past this a conv stays direct
 * (a 2048-channel 3x3 conv would need 600 MiB of them) */
#define MAX_WEIGHT_BYTES ((__int128)256 << 20)

/* The tile size for conv n (a conv_nchwc) under mode, or 0 to leave it direct;
 * small_maps: F(2x2) also on 16-tile and ragged maps (see the top). */
static int32_t pick_m(const gir_node *n, lay_winograd_mode mode, int32_t small_maps) {
  if (mode == LAY_WINOGRAD_OFF || n->op != GIR_OP_conv_nchwc) return 0;
  const gir_value *x = n->in[0], *w = n->in[1], *y = n->out[0];
  if (x->dtype != GIR_F32 || y->dtype != GIR_F32 || w->dtype != GIR_F32 || !w->data || w->shape.rank != 6 ||
      x->shape.rank != 5)
    return 0;
  if (n->n_in > 2 && n->in[2] && (!n->in[2]->data || n->in[2]->dtype != GIR_F32)) return 0;
  const int64_t *wd = w->shape.dims, *xd = x->shape.dims, *yd = y->shape.dims;
  if (gir_attr_int(n, "group", 1) != 1 || wd[2] != 3 || wd[3] != 3 || wd[4] != xd[4] || wd[1] != xd[1]) return 0;
  if (gir_attr_int(n, "pad_value", 0)) return 0;
  int64_t real = gir_attr_int(n, "channels", 0);
  if (real && real != xd[1] * xd[4]) return 0;
  int32_t ns, nd, np;
  const int64_t *st = gir_attr_ints(n, "strides", &ns), *dl = gir_attr_ints(n, "dilations", &nd),
                *pd = gir_attr_ints(n, "pads", &np);
  if (!st || !dl || !pd || ns != 2 || nd != 2 || np != 4 || st[0] != 1 || st[1] != 1 || dl[0] != 1 || dl[1] != 1)
    return 0;
  if (pd[0] > 2 || pd[1] > 2 || pd[0] < 0 || pd[1] < 0) return 0;
  int64_t C = xd[1] * xd[4], M = wd[0] * wd[5], OH = yd[2], OW = yd[3];
  for (int32_t m = 4; m >= 2; m -= 2) {
    int ragged = OH % m || OW % m;
    /* ragged tiles only with F(2x2): at most one row and column of padding per tile */
    if ((ragged && (m == 4 || (mode == LAY_WINOGRAD_AUTO && !small_maps))) ||
        (__int128)(m + 2) * (m + 2) * C * M * 4 > MAX_WEIGHT_BYTES)
      continue;
    if (mode == LAY_WINOGRAD_ON) return m;
    __int128 tiles = (__int128)yd[0] * ((OH + m - 1) / m) * ((OW + m - 1) / m); /* dims up to 2^31 each */
    int64_t min_tiles = m == 2 && small_maps ? MIN_TILES_SMALL_MAPS : MIN_TILES;
    if (C >= MIN_CHANNELS && M >= MIN_CHANNELS && tiles >= min_tiles) return m;
  }
  return 0;
}

/* U[ξ, ν, c, o] = Σ G[ξ][kh] G[ν][kw] w[o, c, kh, kw], from the packed weight
 * w[M/ob, C/ib, 3, 3, ib, ob]. */
static gir_value *transform_weights(gir_graph *g, const gir_value *w, const gir_winograd *t) {
  const int64_t *wd = w->shape.dims;
  int64_t Mb = wd[0], Cb = wd[1], ib = wd[4], ob = wd[5], C = Cb * ib, M = Mb * ob, a = t->a;
  gir_shape us = {.rank = 4, .dims = {a, a, C, M}};
  gir_value *u = gir_const_new(g, NULL, GIR_F32, &us, NULL);
  if (!u) return NULL;
  const float *src = w->data;
  float *dst = u->data;
  for (int64_t mo = 0; mo < Mb; mo++)
    for (int64_t cb = 0; cb < Cb; cb++)
      for (int64_t ci = 0; ci < ib; ci++)
        for (int64_t mi = 0; mi < ob; mi++) {
          double k[3][3], gk[GIR_WINOGRAD_MAX_A][3];
          for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++) k[kh][kw] = src[((((mo * Cb + cb) * 3 + kh) * 3 + kw) * ib + ci) * ob + mi];
          for (int x = 0; x < a; x++) /* G k */
            for (int kw = 0; kw < 3; kw++) gk[x][kw] = t->g[x][0] * k[0][kw] + t->g[x][1] * k[1][kw] + t->g[x][2] * k[2][kw];
          int64_t c = cb * ib + ci, o = mo * ob + mi;
          for (int x = 0; x < a; x++) /* (G k) Gᵀ */
            for (int y = 0; y < a; y++)
              dst[((x * a + y) * C + c) * M + o] = (float)(gk[x][0] * t->g[y][0] + gk[x][1] * t->g[y][1] + gk[x][2] * t->g[y][2]);
        }
  return u;
}

static int rewrite(gir_graph *g, gir_node *n, int32_t m, gir_err *err) {
  gir_winograd t;
  if (gir_winograd_get(m, &t) < 0) return 0;
  gir_value *x = n->in[0], *b = n->n_in > 2 ? n->in[2] : NULL;
  const int64_t *yd = n->out[0]->shape.dims;
  int32_t np;
  const int64_t *pd = gir_attr_ints(n, "pads", &np);
  gir_value *u = transform_weights(g, n->in[1], &t);
  if (!u) return gir_errf(err, "winograd: out of memory");
  gir_node *in = gir_node_new(g, GIR_OP_winograd_in, NULL, &x, 1, 1);
  in->origin = n->origin;
  gir_attr_set_int(g, in, "m", m);
  gir_attr_set_ints(g, in, "pads", (int64_t[]){pd[0], pd[1]}, 2);
  gir_attr_set_int(g, in, "oh", yd[2]);
  gir_attr_set_int(g, in, "ow", yd[3]);
  if (gir_node_infer(g, in, err) < 0) return -1;
  gir_node *mm = gir_node_new(g, GIR_OP_matmul, NULL, (gir_value *[]){in->out[0], u}, 2, 1);
  mm->origin = n->origin;
  if (gir_node_infer(g, mm, err) < 0) return -1;
  gir_value *ins[2] = {mm->out[0], b};
  gir_node *out = gir_node_new(g, GIR_OP_winograd_out, NULL, ins, b ? 2 : 1, 1);
  out->origin = n->origin;
  gir_attr_set_int(g, out, "m", m);
  gir_attr_set_int(g, out, "oh", yd[2]);
  gir_attr_set_int(g, out, "ow", yd[3]);
  gir_attr_set_int(g, out, "ob", yd[4]);
  if (gir_node_infer(g, out, err) < 0) return -1;
  if (!gir_shape_equal(&out->out[0]->shape, &n->out[0]->shape))
    return gir_errf(err, "winograd: '%s' changed shape (an internal error)", n->name);
  if (gir_replace_uses(g, n->out[0], out->out[0]) < 0) return 0;
  return 1;
}

int lay_winograd(gir_graph *g, lay_winograd_mode mode, int32_t vec_f32, int32_t vec_regs, int32_t *rewritten,
                 gir_err *err) {
  int32_t small_maps = vec_f32 == 8 && vec_regs <= 16; /* x86 AVX2: see the top */
  int32_t n0 = g->n_nodes, done = 0;
  for (int k = 0; k < n0; k++) {
    gir_node *n = g->nodes[k];
    int32_t m = pick_m(n, mode, small_maps);
    if (!m) continue;
    g->cur_guard = n->guard; /* what this rewrite adds runs where n did */
    int r = rewrite(g, n, m, err);
    if (r < 0) return -1;
    done += r;
  }
  g->cur_guard = NULL;
  if (done) gir_resort_compact(g);
  if (rewritten) *rewritten = done;
  return 0;
}
