/* ops_misc2.c — BitCast, TensorScatter, TfIdfVectorizer and MelWeightMatrix.
 *
 * BitCast maps onto the canonical bitcast. The others decompose:
 * - TensorScatter (a KV-cache write) picks, at every cache position j of batch b,
 *   update[j - w_b] where 0 <= j - w_b < S (the positions taken modulo the cache
 *   length in circular mode) and the old cache elsewhere: an iota, the write
 *   indices, a gather_elements of the update and a where.
 * - TfIdfVectorizer's pool is static, so every n-gram of it and every skip become
 *   equality tests of shifted views of the input against a constant table, ANDed
 *   over the n-gram's items and summed over the positions; a constant matrix (a
 *   matmul) adds each n-gram's weighted count into its output column. This counts
 *   what the reference's trie walk counts: an n-gram of the pool whose size is in
 *   [min_gram_length, max_gram_length], at items i, i+s, ..., i+(n-1)s for every
 *   skip distance s = 1..max_skip_count+1 (unigrams once).
 * - MelWeightMatrix's output depends only on its (constant) inputs: it is computed
 *   here, in the reference's precision (float32 for the mel edges, float64 for
 *   the rest), and becomes a constant. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops.h"


/* --- BitCast --- */

int imp_cv_BitCast(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t code = imp_attr_int(n, "to", -1);
  gir_dtype to = gir_dtype_from_onnx((int32_t)code), from = x->dtype;
  if (to == GIR_DTYPE_NONE) return imp_fail(c, "attribute to: unknown element type code %lld", (long long)code);
  if (!gir_dtype_first_class(from)) return imp_unsupported_node(c, n, "bitcast from %s", gir_dtype_name(from));
  if (!gir_dtype_first_class(to)) return imp_unsupported_node(c, n, "bitcast to %s", gir_dtype_name(to));
  if (gir_dtype_bits(to) != gir_dtype_bits(from))
    return imp_fail(c, "bitcast from %s to %s: the element types differ in width", gir_dtype_name(from),
                    gir_dtype_name(to));
  if (to == from) return imp_set_output(c, n, 0, x);
  gir_node *b = imp_new_node(c, GIR_OP_bitcast, &x, 1, 1);
  gir_attr_set_int(c->g, b, "to", to);
  return imp_set_output(c, n, 0, imp_finish(c, b));
}

/* --- TensorScatter --- */

static gir_value *iota_i64(imp_ctx *c, int32_t rank, const int64_t *dims, int axis) {
  gir_node *nd = imp_new_node(c, GIR_OP_iota, NULL, 0, 1);
  gir_attr_set_ints(c->g, nd, "shape", dims, rank);
  gir_attr_set_int(c->g, nd, "axis", axis);
  gir_attr_set_int(c->g, nd, "to", GIR_I64);
  gir_attr_set_float(c->g, nd, "start", 0.0);
  gir_attr_set_float(c->g, nd, "delta", 1.0);
  return imp_finish(c, nd);
}

int imp_cv_TensorScatter(imp_ctx *c, imp_node *n) {
  gir_value *past = imp_in(n, 0), *upd = imp_in(n, 1), *wi = imp_in(n, 2);
  if (!past || !upd) return imp_fail(c, "needs inputs past_cache and update");
  int32_t r = past->shape.rank;
  if (upd->shape.rank != r) return imp_fail(c, "update has rank %d, past_cache %d", upd->shape.rank, r);
  if (upd->dtype != past->dtype) return imp_fail(c, "update and past_cache differ in element type");
  int64_t axis;
  if (imp_axis(c, imp_attr_int(n, "axis", -2), r, &axis) < 0) return -1;
  if (axis == 0) return imp_fail(c, "axis 0 is the batch axis; the sequence axis must follow it");
  const char *mode = imp_attr_string(c, n, "mode", "linear");
  int circular = !strcmp(mode, "circular");
  if (!circular && strcmp(mode, "linear")) return imp_fail(c, "attribute mode: unknown value '%s'", mode);
  for (int i = 0; i < r; i++)
    if (i == axis ? upd->shape.dims[i] > past->shape.dims[i] : upd->shape.dims[i] != past->shape.dims[i])
      return imp_fail(c, "update's dimension %d (%lld) does not fit past_cache's (%lld)", i,
                      (long long)upd->shape.dims[i], (long long)past->shape.dims[i]);
  int64_t M = past->shape.dims[axis], S = upd->shape.dims[axis], B = past->shape.dims[0];
  if (S == 0) return imp_set_output(c, n, 0, past); /* nothing written */
  int64_t dims[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) dims[i] = i == axis ? M : 1;
  gir_value *k = iota_i64(c, r, dims, (int)axis); /* the cache position j */
  if (wi) {
    if (!gir_dtype_is_int(wi->dtype) || wi->shape.rank != 1 || wi->shape.dims[0] != B)
      return imp_fail(c, "write_indices must be %lld integers (one per batch entry)", (long long)B);
    for (int i = 0; i < r; i++) dims[i] = i == 0 ? B : 1;
    k = imp_binary(c, GIR_BINARY_SUB, k, imp_reshape(c, imp_cast(c, wi, GIR_I64), r, dims));
  }
  if (circular) k = imp_binary(c, GIR_BINARY_MOD, k, imp_scalar(c, GIR_I64, (double)M));
  if (!k) return -1;
  /* k = j - w: the update row written to position j, if 0 <= k < S */
  gir_value *mask = imp_binary(c, GIR_BINARY_AND, imp_binary(c, GIR_BINARY_GE, k, imp_scalar(c, GIR_I64, 0)),
                               imp_binary(c, GIR_BINARY_LT, k, imp_scalar(c, GIR_I64, (double)S)));
  gir_value *ix = imp_broadcast_to(c, imp_where(c, mask, k, imp_scalar(c, GIR_I64, 0)), &past->shape);
  if (!ix) return -1;
  gir_value *ins[2] = {upd, ix};
  gir_node *g = imp_new_node(c, GIR_OP_gather_elements, ins, 2, 1);
  gir_attr_set_int(c->g, g, "axis", axis);
  return imp_set_output(c, n, 0, imp_where(c, mask, imp_finish(c, g), past));
}

/* --- TfIdfVectorizer ---
 * The weights scale the counts of the pool's n-grams (weights[i]: the i-th
 * n-gram), as the operator's text and ONNX Runtime have it; the onnx reference
 * indexes them by output column instead, which agrees when ngram_indexes is the
 * identity. IDF truncates each n-gram's count to 1 before weighting. */

typedef struct gram {
  const int64_t *tok; /* n items of the pool */
  int64_t n, q;       /* size, index among all n-grams of the pool */
} gram;

static int gram_cmp(const void *pa, const void *pb) {
  const gram *a = pa, *b = pb;
  for (int64_t i = 0; i < a->n; i++)
    if (a->tok[i] != b->tok[i]) return a->tok[i] < b->tok[i] ? -1 : 1;
  return a->q < b->q ? -1 : a->q > b->q;
}

/* *cnt = the counts of the n-grams gs[0..k) (all of size n) in the rows of x
 * [B, C] (int64), over every skip distance: [B, k] float32, or NULL when no
 * position fits. 0 or -1. */
static int count_grams(imp_ctx *c, gir_value *x, const gram *gs, int64_t k, int64_t n, int64_t max_skip,
                       gir_value **cnt) {
  gir_arena *a = c->g->arena;
  int64_t B = x->shape.dims[0], C = x->shape.dims[1];
  int64_t *col = gir_arena_calloc(a, (size_t)k + 1, sizeof *col);
  *cnt = NULL;
  if (!col) return imp_fail(c, "out of memory");
  for (int64_t s = 1; s <= (n == 1 ? 1 : max_skip + 1); s++) {
    int64_t P = C - s * (n - 1); /* start positions whose last item is in the row */
    if (P <= 0) break;
    gir_value *all = NULL;
    for (int64_t t = 0; t < n; t++) {
      for (int64_t j = 0; j < k; j++) col[j] = gs[j].tok[t];
      int64_t d3[3] = {B, P, 1};
      gir_value *xs = imp_reshape(c, imp_slice_axis(c, x, 1, s * t, 1, P), 3, d3);
      gir_value *eq = imp_binary(c, GIR_BINARY_EQ, xs, gir_const_i64s(c->g, col, (int32_t)k));
      all = all ? imp_binary(c, GIR_BINARY_AND, all, eq) : eq;
    }
    int64_t ax = 1;
    gir_value *sum = imp_reduce(c, GIR_REDUCE_SUM, imp_cast(c, all, GIR_F32), &ax, 1, 0);
    *cnt = *cnt ? imp_binary(c, GIR_BINARY_ADD, *cnt, sum) : sum;
    if (!*cnt) return -1;
  }
  return 0;
}

int imp_cv_TfIdfVectorizer(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  gir_arena *a = c->g->arena;
  int64_t *pool, *counts, *oix;
  double *w;
  int32_t np = imp_attr_ints(c, n, "pool_int64s", &pool);
  if (np < 0 && imp_attr(n, "pool_strings")) return imp_unsupported_node(c, n, "a pool of strings (pool_strings)");
  if (x->dtype == GIR_STRING) return imp_unsupported_node(c, n, "string input");
  int32_t nc = imp_attr_ints(c, n, "ngram_counts", &counts), ni = imp_attr_ints(c, n, "ngram_indexes", &oix);
  int32_t nw = imp_attr_floats(c, n, "weights", &w);
  if (c->err->msg[0]) return -1;
  if (np < 0) np = 0;
  if (nc < 1 || ni < 1) return imp_fail(c, "attributes ngram_counts and ngram_indexes must not be empty");
  if (!gir_dtype_is_int(x->dtype) || x->dtype == GIR_BOOL)
    return imp_fail(c, "input must hold int32 or int64 items, got %s", gir_dtype_name(x->dtype));
  int64_t lo = imp_attr_int(n, "min_gram_length", 0), hi = imp_attr_int(n, "max_gram_length", 0);
  int64_t skip = imp_attr_int(n, "max_skip_count", 0);
  if (lo < 1 || hi < lo || skip < 0)
    return imp_fail(c, "bad n-gram lengths [%lld, %lld] or skip count %lld", (long long)lo, (long long)hi,
                    (long long)skip);
  const char *ms = imp_attr_string(c, n, "mode", "");
  int mode = !strcmp(ms, "TF") ? 0 : !strcmp(ms, "IDF") ? 1 : !strcmp(ms, "TFIDF") ? 2 : -1;
  if (mode < 0) return imp_fail(c, "attribute mode: unknown value '%s'", ms);
  int64_t O = 0;
  for (int i = 0; i < ni; i++) {
    if (oix[i] < 0) return imp_fail(c, "ngram_indexes[%d] = %lld is negative", i, (long long)oix[i]);
    if (oix[i] + 1 > O) O = oix[i] + 1;
  }
  if (nw > 0 && mode != 0 && nw < ni) return imp_fail(c, "weights has %d entries for %d n-grams", nw, ni);
  int32_t r = x->shape.rank;
  if (r > 2) return imp_fail(c, "input must have rank 1 or 2, got %d", r);
  int64_t B = r == 2 ? x->shape.dims[0] : 1, C = r ? x->shape.dims[r - 1] : 1;
  int64_t d2[2] = {B, C};
  gir_value *x2 = imp_cast(c, imp_reshape(c, x, 2, d2), GIR_I64);
  if (!x2) return -1;

  /* the pool's n-grams, sizes 1.. in order; q numbers them all */
  gram *gs = gir_arena_calloc(a, (size_t)np + 1, sizeof *gs);
  if (!gs) return imp_fail(c, "out of memory");
  gir_value *y = NULL;
  int64_t q = 0;
  for (int i = 0; i < nc; i++) {
    int64_t size = i + 1, start = counts[i], end = i + 1 < nc ? counts[i + 1] : np;
    if (start < 0 || end > np || end < start)
      return imp_fail(c, "ngram_counts[%d] = %lld is out of the pool's range", i, (long long)start);
    int64_t k = (end - start) / size, m = 0;
    if (size < lo || size > hi) {
      q += k;
      continue;
    }
    for (int64_t j = 0; j < k; j++, q++) {
      if (q >= ni) return imp_fail(c, "ngram_indexes has %d entries, the pool more n-grams", ni);
      gs[m++] = (gram){pool + start + j * size, size, q};
    }
    /* a repeated n-gram counts for its last occurrence only (the trie keeps the last id) */
    qsort(gs, (size_t)m, sizeof *gs, gram_cmp);
    int64_t u = 0;
    for (int64_t j = 0; j < m; j++)
      if (j + 1 == m || memcmp(gs[j].tok, gs[j + 1].tok, (size_t)size * sizeof(int64_t))) gs[u++] = gs[j];
    if (!u) continue;
    gir_value *cnt;
    if (count_grams(c, x2, gs, u, size, skip, &cnt) < 0) return -1;
    if (!cnt) continue;
    if (mode == 1) cnt = imp_binary(c, GIR_BINARY_MIN, cnt, imp_scalar(c, GIR_F32, 1)); /* IDF: present or not */
    /* row j: n-gram j's weight (1 for TF or without weights) in its output column */
    gir_shape ms2 = {.rank = 2, .dims = {u, O}};
    gir_value *place = imp_const_new(c, GIR_F32, &ms2, NULL, "n-gram placement matrix");
    if (!place) return -1;
    float *pl = place->data;
    memset(pl, 0, (size_t)(u * O) * sizeof *pl);
    for (int64_t j = 0; j < u; j++) pl[j * O + oix[gs[j].q]] = mode != 0 && nw > 0 ? (float)w[gs[j].q] : 1.0f;
    gir_value *part = imp_matmul(c, cnt, place);
    y = y ? imp_binary(c, GIR_BINARY_ADD, y, part) : part;
    if (!y) return -1;
  }
  gir_shape ys = {.rank = 2, .dims = {B, O}};
  if (!y) y = imp_broadcast_to(c, imp_scalar(c, GIR_F32, 0), &ys);
  return imp_set_output(c, n, 0, r == 2 ? y : imp_reshape(c, y, 1, &O));
}

/* --- MelWeightMatrix --- */

/* Python's float floor division (numpy's //), exact where floor(a / b) is not. */
static double py_floordiv(double a, double b) {
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0;
  if (div == 0) return copysign(0.0, a / b);
  double f = floor(div);
  return div - f > 0.5 ? f + 1.0 : f;
}

static int scalar_input(imp_ctx *c, const imp_node *n, int i, const char *name, double *v) {
  gir_value *x = imp_in(n, i);
  if (!x) return imp_fail(c, "input '%s' is missing", name);
  char what[64];
  snprintf(what, sizeof what, "input '%s'", name);
  if (gir_value_numel(x) != 1) return imp_fail(c, "%s must hold one value", what);
  const void *d = imp_const_data(c, x, what);
  if (!d) return -1;
  *v = gir_load_f64(x->dtype, d, 0);
  return 0;
}

int imp_cv_MelWeightMatrix(imp_ctx *c, imp_node *n) {
  double bins_d, dft_d, rate_d, lo_hz, hi_hz;
  if (scalar_input(c, n, 0, "num_mel_bins", &bins_d) < 0 || scalar_input(c, n, 1, "dft_length", &dft_d) < 0 ||
      scalar_input(c, n, 2, "sample_rate", &rate_d) < 0 || scalar_input(c, n, 3, "lower_edge_hertz", &lo_hz) < 0 ||
      scalar_input(c, n, 4, "upper_edge_hertz", &hi_hz) < 0)
    return -1;
  int64_t code = imp_attr_int(n, "output_datatype", 1);
  gir_dtype t = gir_dtype_from_onnx((int32_t)code);
  if (t == GIR_DTYPE_NONE)
    return imp_fail(c, "attribute output_datatype: unknown element type code %lld", (long long)code);
  if (!gir_dtype_first_class(t)) return imp_unsupported_node(c, n, "output_datatype %s", gir_dtype_name(t));
  if (!(bins_d >= 1 && bins_d <= 1e6 && dft_d >= 1 && dft_d <= 1e8 && rate_d >= 1))
    return imp_fail(c, "num_mel_bins (%g), dft_length (%g) and sample_rate (%g) must be positive and sane", bins_d,
                    dft_d, rate_d);
  int64_t bins = (int64_t)bins_d, dft = (int64_t)dft_d, S = dft / 2 + 1;
  /* the mel edges in float32, as numpy computes them from float32 inputs */
  float lo_mel = 2595.0f * log10f(1.0f + (float)lo_hz / 700.0f);
  float hi_mel = 2595.0f * log10f(1.0f + (float)hi_hz / 700.0f);
  float step = (hi_mel - lo_mel) / (float)(bins + 2);
  int64_t *fb = imp_scratch(c, bins + 2, sizeof *fb, "mel band edges");
  double *out = fb ? imp_scratch(c, S * bins, sizeof *out, "mel weight matrix") : NULL;
  if (!out) return -1;
  for (int64_t i = 0; i < bins + 2; i++) {
    double hz = 700.0 * (pow(10.0, ((double)i * (double)step + (double)lo_mel) / 2595.0) - 1.0);
    double b = py_floordiv((double)(dft + 1) * hz, rate_d);
    if (!(b >= -1e15 && b <= 1e15)) return imp_fail(c, "mel frequency bin %g out of range", b);
    fb[i] = (int64_t)b;
  }
  for (int64_t i = 0; i < bins; i++) {
    int64_t l = fb[i], m = fb[i + 1], h = fb[i + 2];
    int64_t first = m == l ? m : l < m ? l : m, last = h > m ? h - 1 : m; /* the bins written below */
    if (first < 0 || last >= S)
      return imp_fail(c, "mel band %lld spans bins [%lld, %lld], outside the %lld spectrogram bins", (long long)i,
                      (long long)first, (long long)last, (long long)S);
    if (m == l) out[m * bins + i] = 1;
    else
      for (int64_t j = l; j <= m; j++) out[j * bins + i] = (double)(j - l) / (double)(m - l);
    for (int64_t j = m; j < h; j++) out[j * bins + i] = (double)(h - j) / (double)(h - m);
  }
  gir_shape s = {.rank = 2, .dims = {S, bins}};
  gir_value *y = imp_const_new(c, t, &s, NULL, "mel weight matrix");
  if (!y) return -1;
  for (int64_t i = 0; i < S * bins; i++) gir_store_f64(t, y->data, i, out[i]);
  return imp_set_output(c, n, 0, y);
}
