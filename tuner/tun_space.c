/* tun_space.c — search spaces over the templates' knobs (AutoTVM's ConfigSpace):
 * each knob lists the values worth trying for this shape, a point is one value per
 * knob, encoded as a flat mixed-radix index so that points are cheap to store,
 * hash and compare. tun_space_check rejects, before anything is compiled, the
 * points that cannot pay or that repeat another point: register tiles with more
 * accumulators than the target has vector registers, knob combinations the
 * template ignores (prefetch with pixel_outer, image_tile without whole rows…).
 * The knob names are the template's own (schedule/tuning.c), so a point applies
 * by name. */
#include <stdio.h>
#include <string.h>
#include "tun_internal.h"

void tun_space_values(const tun_space *s, int64_t idx, int32_t *values) {
  for (int i = 0; i < s->n_knobs; i++) {
    int32_t n = s->knobs[i].n;
    values[i] = s->knobs[i].cand[idx % n];
    idx /= n;
  }
}

int64_t tun_space_index(const tun_space *s, const int32_t *values) {
  int64_t idx = 0, mul = 1;
  for (int i = 0; i < s->n_knobs; i++) {
    int j = 0;
    while (j < s->knobs[i].n && s->knobs[i].cand[j] != values[i]) j++;
    if (j == s->knobs[i].n) return -1;
    idx += j * mul;
    mul *= s->knobs[i].n;
  }
  return idx;
}

int tun_space_knob(const tun_space *s, const char *name) {
  for (int i = 0; i < s->n_knobs; i++)
    if (!strcmp(s->knobs[i].name, name)) return i;
  return -1;
}

const char *tun_space_describe(const tun_space *s, const int32_t *values, char *buf, size_t n) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < s->n_knobs && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, "%s%s=%d", i ? "," : "", s->knobs[i].name, values[i]);
  return buf;
}

static void add_knob(tun_space *s, const char *name) {
  tun_knob_space *k = &s->knobs[s->n_knobs++];
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
}

static void add_cand(tun_space *s, int32_t v) {
  tun_knob_space *k = &s->knobs[s->n_knobs - 1];
  for (int i = 0; i < k->n; i++)
    if (k->cand[i] == v) return;
  if (k->n < TUN_MAX_CANDS) k->cand[k->n++] = v;
}

static int64_t dim(const gir_value *v, int d) { return d >= 0 && d < v->shape.rank ? v->shape.dims[d] : 1; }

static int conv_space(tun_space *s, const gir_node *n, const int32_t *def, const lower_target *t) {
  /* knob order = lower_template_knobs("conv"):
   * ow_tile unroll_kw pad_tile image_tile pixel_outer prefetch vec_ow vec oc_tile oc_blocks oh_tile ic_unroll
   * px_flat fuse_kw */
  const gir_value *y = n->out[0], *w = n->in[1];
  if (y->shape.rank != 5 || !w || w->shape.rank != 6) return -1;
  int64_t ow = dim(y, 3), ob = dim(y, 4), kw = dim(w, 3);
  int32_t vec = def[7];
  s->conv_vecs = (int32_t)(vec > 0 ? (ob + vec - 1) / vec : ob);
  /* depthwise: one input channel per output channel (packed weights with blocks of one input channel) */
  int64_t groups = gir_attr_int(n, "group", 1);
  s->depthwise = !def[6] && groups > 1 && dim(w, 4) == 1;
  s->vec_ow = def[6];
  s->conv_m = (int32_t)dim(y, 1);
  int32_t npad, ns, nd;
  const int64_t *pads = gir_attr_ints(n, "pads", &npad), *st = gir_attr_ints(n, "strides", &ns);
  const int64_t *dl = gir_attr_ints(n, "dilations", &nd);
  int padded = 0;
  for (int i = 0; pads && i < npad; i++) padded |= pads[i] != 0;
  /* a tile's padded input (pad_tile): its channels, rows and columns */
  const gir_value *x = n->in[0];
  s->conv_cin = s->depthwise ? ob : groups > 1 ? dim(w, 1) * dim(w, 4) : dim(x, 1) * dim(x, 4);
  s->conv_rows = (dim(w, 2) - 1) * (dl && nd > 0 ? dl[0] : 1) + 1;
  s->conv_cols = (kw - 1) * (dl && nd > 1 ? dl[1] : 1) + 1;
  s->conv_sw = st && ns > 1 ? st[1] : 1;
  s->conv_sh = st && ns > 0 ? st[0] : 1;
  s->conv_img = (dim(x, 2) + (pads && npad == 4 ? pads[0] + pads[2] : 0)) *
                (dim(x, 3) + (pads && npad == 4 ? pads[1] + pads[3] : 0));
  add_knob(s, "ow_tile");
  if (s->vec_ow) /* whole vectors of pixels, up to four */
    for (int64_t v = 1; v <= 4 && (v - 1) * vec < ow; v++) add_cand(s, (int32_t)(v * vec));
  else
    for (int64_t p = 1; p <= ow && p <= 32; p++) add_cand(s, (int32_t)p);
  add_cand(s, def[0]);
  add_knob(s, "unroll_kw");
  add_cand(s, def[1]);
  if (kw > 1) add_cand(s, !def[1]); /* vec_ow: the taps of a row straight-line or a loop */
  /* partial unrolls of a wide kernel's columns (a 1-D conv's 512 taps) */
  for (int32_t k = 2; k <= 16 && !s->vec_ow; k *= 2)
    if (k < kw && kw % k == 0) add_cand(s, k);
  add_knob(s, "pad_tile"); /* 0: one padded copy, 1: per tile, 2: none (masked loads: rows in
                              vectors, or a depthwise conv's taps on border pixels) */
  add_cand(s, def[2]);
  if (padded && (s->vec_ow || s->depthwise)) {
    add_cand(s, 1), add_cand(s, 0);
    if (t->masked_loads) add_cand(s, 2);
  }
  else if (padded) add_cand(s, !def[2]);
  add_knob(s, "image_tile");
  add_cand(s, def[3]);
  if (ow <= 32 && !s->vec_ow) add_cand(s, !def[3]);
  add_knob(s, "pixel_outer");
  add_cand(s, def[4]);
  if (!s->vec_ow) add_cand(s, !def[4]);
  add_knob(s, "prefetch");
  add_cand(s, def[5]);
  if (!s->depthwise && !s->vec_ow) add_cand(s, !def[5]);
  add_knob(s, "vec_ow"); /* the layout decided: one channel per block or not */
  add_cand(s, def[6]);
  add_knob(s, "vec");
  add_cand(s, def[7]);
  add_knob(s, "oc_tile"); /* vec_ow: channels per tile (0: all), divisors of M up to 16 */
  add_cand(s, def[8]);
  if (s->vec_ow)
    for (int32_t m = 2; m <= 16 && m < s->conv_m; m++)
      if (s->conv_m % m == 0) add_cand(s, m);
  /* output blocks per register tile (MLAS's filter sets): a dense float conv's, dividing
   * the block count */
  add_knob(s, "oc_blocks");
  add_cand(s, def[9] > 0 ? def[9] : 1);
  if (!s->vec_ow && !s->depthwise && y->dtype == GIR_F32)
    for (int32_t b = 2; b <= 4; b *= 2)
      if (s->conv_m % b == 0) add_cand(s, b);
  /* rows per register tile (the multi-level split of OH): divisors of the map's height up
   * to 8 (a 7x7 map's whole columns) */
  int64_t oh = dim(y, 2);
  add_knob(s, "oh_tile");
  add_cand(s, def[10] > 0 ? def[10] : 1);
  for (int32_t r = 2; r <= 8 && !s->vec_ow; r++)
    if (oh % r == 0) add_cand(s, r);
  /* the input-channel loop of a dense float conv unrolled (divisors of its block) */
  int64_t icb = dim(w, 4);
  add_knob(s, "ic_unroll");
  add_cand(s, def[11] > 0 ? def[11] : 1);
  if (!s->vec_ow && !s->depthwise && y->dtype == GIR_F32)
    for (int32_t f = 2; f <= 8; f *= 2)
      if (f < icb && icb % f == 0) add_cand(s, f);
  /* a dense conv's pixels as one axis, tiles across row ends */
  add_knob(s, "px_flat");
  add_cand(s, def[12]);
  if (!s->vec_ow && !s->depthwise && oh > 1) add_cand(s, !def[12]);
  /* a dense float conv's kernel columns and block channels one loop (dilation 1 along W) */
  add_knob(s, "fuse_kw");
  add_cand(s, def[13]);
  if (!s->vec_ow && !s->depthwise && y->dtype == GIR_F32 && kw > 1 && (!dl || nd < 2 || dl[1] == 1))
    add_cand(s, !def[13]);
  return 0;
}

static int matmul_space(tun_space *s, const gir_node *n, const int32_t *def, const lower_target *t) {
  /* knob order = lower_template_knobs("matmul"):
   * mr nr_vecs vec k_unroll panel_outer prefetch pack_b row_groups */
  const gir_value *y = n->out[0], *a = n->in[0];
  if (y->shape.rank < 2 || !a) return -1;
  int64_t M = dim(y, y->shape.rank - 2), N = dim(y, y->shape.rank - 1), K = dim(a, a->shape.rank - 1);
  add_knob(s, "mr");
  for (int64_t r = 1; r <= M && r <= 16; r++) add_cand(s, (int32_t)r);
  add_cand(s, def[0]);
  int32_t v = y->dtype == GIR_F32 ? t->vec_f32 : 1;
  add_knob(s, "nr_vecs");
  int32_t minvec = v >= 8 ? v / 2 : v;
  for (int32_t k = 1; k <= 8 && (int64_t)(k - 1) * minvec < N; k++) add_cand(s, k);
  add_cand(s, def[1]);
  add_knob(s, "vec");
  add_cand(s, def[2]);
  if (v >= 8) add_cand(s, v), add_cand(s, v / 2);
  add_knob(s, "k_unroll");
  for (int32_t k = 1; k <= 8 && k <= K; k *= 2) add_cand(s, k);
  add_cand(s, def[3]);
  add_knob(s, "panel_outer");
  add_cand(s, def[4]);
  if (M > 1) add_cand(s, !def[4]);
  add_knob(s, "prefetch");
  add_cand(s, def[5]);
  if (gir_attr_int(n, "packed", 0)) add_cand(s, !def[5]);
  /* B an activation (no constant panels): packed at run time or read as it lies,
   * and the rows of each batch in 1, 2 or 4 groups of the parallel loop */
  const gir_value *b = n->n_in > 1 ? n->in[1] : NULL;
  int act_b = y->dtype == GIR_F32 && b && !b->data && !gir_attr_int(n, "packed", 0) && M > 1 && v > 1;
  add_knob(s, "pack_b");
  add_cand(s, def[6]);
  if (act_b) add_cand(s, !def[6]);
  add_knob(s, "row_groups");
  add_cand(s, def[7]);
  if (act_b)
    for (int32_t g = 1; g <= 4 && g <= M; g *= 2) add_cand(s, g);
  return 0;
}

int tun_space_template(tun_space *s, const char *tmpl, const gir_node *anchor, const int32_t *defaults,
                       const lower_target *t) {
  memset(s, 0, sizeof *s);
  snprintf(s->tmpl, sizeof s->tmpl, "%s", tmpl);
  s->vec_regs = t->vec_regs;
  int rc = !strcmp(tmpl, "conv") ? conv_space(s, anchor, defaults, t)
           : !strcmp(tmpl, "matmul") ? matmul_space(s, anchor, defaults, t)
                                     : -1;
  if (rc < 0) return -1;
  s->size = 1;
  for (int i = 0; i < s->n_knobs; i++) s->size *= s->knobs[i].n;
  return 0;
}

static int32_t val(const tun_space *s, const int32_t *v, const char *name) {
  int i = tun_space_knob(s, name);
  return i < 0 ? 0 : v[i];
}

int tun_space_check(const tun_space *s, const int32_t *v, char *why, size_t why_len) {
#define REJECT(...) return (snprintf(why, why_len, __VA_ARGS__), -1)
  if (!strcmp(s->tmpl, "conv") && s->vec_ow) {
    int64_t ow = val(s, v, "ow_tile"), vec = val(s, v, "vec"), mt = val(s, v, "oc_tile");
    if (mt <= 0 || mt > s->conv_m) mt = s->conv_m;
    if (vec < 2 || ow % vec) REJECT("vec_ow tiles are whole vectors of pixels");
    if (ow / vec * mt + 2 > s->vec_regs)
      REJECT("register tile of %lld x %lld vectors needs more than %d registers", (long long)(ow / vec), (long long)mt,
             s->vec_regs);
    return 0;
  }
  if (!strcmp(s->tmpl, "conv")) {
    int64_t cv = s->conv_vecs, ow = val(s, v, "ow_tile"), img = val(s, v, "image_tile");
    int64_t nb = val(s, v, "oc_blocks") > 1 ? val(s, v, "oc_blocks") : 1;
    int64_t rows = val(s, v, "oh_tile") > 1 ? val(s, v, "oh_tile") : 1, kwu = val(s, v, "unroll_kw");
    /* several blocks: the pixel's broadcast folds into the FMAs' memory operand */
    if (rows * ow * cv * nb + cv * nb + (nb == 1) > s->vec_regs)
      REJECT("register tile of %lld x %lld vectors needs more than %d registers", (long long)(rows * ow),
             (long long)(cv * nb), s->vec_regs);
    if (rows > 1 && img) REJECT("image_tile computes whole images: oh_tile does nothing");
    if (rows > 1 && val(s, v, "prefetch")) REJECT("prefetch counts windows by rows: not with oh_tile");
    if (kwu > 1 && val(s, v, "prefetch")) REJECT("prefetch steps whole kernel columns: not with a partial unroll_kw");
    if (nb > 1 && val(s, v, "prefetch")) REJECT("prefetch does nothing with oc_blocks");
    if (img && val(s, v, "pixel_outer")) REJECT("pixel_outer does nothing with image_tile");
    if (val(s, v, "pad_tile") == 2 && !s->vec_ow && !s->depthwise)
      REJECT("pad_tile 2 (taps through masked loads) is for rows in vectors (vec_ow) and depthwise convs");
    if (val(s, v, "pad_tile") == 1) { /* the padded input of a tile lives on the stack */
      int64_t bytes = s->conv_cin * 4 *
                      (img ? s->conv_img : ((rows - 1) * s->conv_sh + s->conv_rows) * ((ow - 1) * s->conv_sw + s->conv_cols));
      if (bytes > 256 * 1024) REJECT("a tile's padded input would be %lld KiB", (long long)(bytes >> 10));
    }
    if (val(s, v, "prefetch") && val(s, v, "pixel_outer")) REJECT("prefetch does nothing with pixel_outer");
    if (val(s, v, "px_flat") && (rows > 1 || val(s, v, "pixel_outer") || val(s, v, "pad_tile")))
      REJECT("px_flat tiles the pixels of rows: not with oh_tile, pixel_outer or pad_tile");
    if (val(s, v, "fuse_kw") && (kwu || val(s, v, "ic_unroll") > 1))
      REJECT("fuse_kw makes the kernel columns and channels one loop: not with unroll_kw or ic_unroll");
    return 0;
  }
  if (!strcmp(s->tmpl, "matmul")) {
    int64_t mr = val(s, v, "mr"), nr = val(s, v, "nr_vecs");
    if (mr * nr + nr + 2 > s->vec_regs)
      REJECT("register tile of %lld x %lld vectors needs more than %d registers", (long long)mr, (long long)nr,
             s->vec_regs);
    if (!val(s, v, "pack_b") && val(s, v, "row_groups") != 1) REJECT("row_groups does nothing without pack_b");
    if (val(s, v, "pack_b") && !val(s, v, "panel_outer")) REJECT("pack_b packs panels only with panel_outer");
    return 0;
  }
  if (!strcmp(s->tmpl, "generic")) return tun_generic_check(s, v, why, why_len);
  return 0;
#undef REJECT
}
