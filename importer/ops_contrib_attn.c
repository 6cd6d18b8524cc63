/* ops_contrib_attn.c — ONNX Runtime's com.microsoft attention ops, as its CPU
 * kernels compute them (onnxruntime/contrib_ops/cpu/bert and cpu/sparse), written
 * with canonical ops and the building blocks of the ONNX Attention decomposition
 * (attention.h): exported and ORT-optimized transformer models carry these fused
 * nodes instead of the ONNX-domain ones.
 *   Attention(input, weights, bias?, mask_index?, .., attention_bias?)
 *       QKV = input @ weights + bias, split by qkv_hidden_sizes; per head
 *       softmax(scale · Q Kᵀ + mask + attention_bias) V
 *   MultiHeadAttention(query, key, value, bias?, key_padding_mask?, attention_bias?)
 *       the same on separate Q, K, V ([B, L, D], or K and V already [B, N, L, H])
 *   RotaryEmbedding(input, position_ids, cos_cache, sin_cache)
 *       the ONNX op's rotation (imp_rotary) with ORT's input order, its 3-D form
 *       that may derive the head count from the cache, and a [1] position offset;
 *       its scale attribute is ignored, as ORT's CPU kernel ignores it
 *   GroupQueryAttention(query, key?, value?, past_key?, past_value?, seqlens_k,
 *       total_sequence_length, cos_cache?, sin_cache?)
 *       causal grouped-query attention with an optional KV cache, rotary, local
 *       window and softcap; seqlens_k and total_sequence_length must be constants
 *       that describe an unpadded batch (every row total_sequence_length long)
 * The masks follow attention_helper.h's PrepareMask: a key masked by mask_index is
 * biased by mask_filter_value (default -10000, not -inf), a key in the causal
 * triangle by the lowest float — all but the last query row, as PrepareMask's loop
 * runs, which MultiHeadAttention shows when keys outnumber queries. Cached states (past inputs of Attention and
 * MultiHeadAttention), packed QKV forms of MultiHeadAttention, 4-D Megatron masks
 * and padded GroupQueryAttention batches are refused with a message naming the
 * feature. ONNX Runtime is the reference (tests/py/test_contrib_attn.py). */
#include <float.h>
#include <math.h>
#include "attention.h"
#include "ops.h"

static const int64_t swap12[4] = {0, 2, 1, 3};
static const int64_t swap23[4] = {0, 1, 3, 2};

static int need_float(imp_ctx *c, const gir_value *v, const char *what) {
  if (!v) return imp_fail(c, "needs input %s", what);
  if (!gir_dtype_is_float(v->dtype))
    return imp_fail(c, "%s must be a float tensor, not %s", what, gir_dtype_name(v->dtype));
  return 0;
}

/* The type arithmetic runs in: float32 for the half types, else the type itself. */
static gir_dtype compute_type(gir_dtype t) { return t == GIR_F16 || t == GIR_BF16 ? GIR_F32 : t; }

static gir_value *reshape2(imp_ctx *c, gir_value *x, int64_t d0, int64_t d1) {
  int64_t d[2] = {d0, d1};
  return imp_reshape(c, x, 2, d);
}

static gir_value *reshape4(imp_ctx *c, gir_value *x, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
  int64_t d[4] = {d0, d1, d2, d3};
  return imp_reshape(c, x, 4, d);
}

/* A refused optional input or output: a one-line message naming it. */
static int refuse_input(imp_ctx *c, const imp_node *n, int i, const char *what) {
  if (imp_in(n, i)) return imp_fail(c, "input %d (%s) is not supported", i, what);
  return 0;
}
static int refuse_output(imp_ctx *c, const imp_node *n, int i, const char *what) {
  if (imp_out_wanted(n, i)) return imp_fail(c, "output %d (%s) is not supported", i, what);
  return 0;
}

/* ORT's PrepareMask as an additive bias of type ct, broadcasting to [B, N, S, T]
 * (NULL with no error when nothing is masked). mask: absent; [B] key lengths (keys
 * at or after them masked); [2B] ends then starts (keys before the start masked
 * too); [B, T] or [B, S, T] of 0/1 (0 masked). Masked keys get mfv; with causal,
 * keys after row + past get the lowest float instead. */
static int ort_mask(imp_ctx *c, gir_value *mask, int causal, int64_t b, int64_t s, int64_t t, int64_t past,
                    double mfv, gir_dtype ct, gir_value **out) {
  gir_value *zero = imp_scalar(c, ct, 0.0), *filt = imp_scalar(c, ct, mfv), *bias = NULL;
  *out = NULL;
  if (mask) {
    if (!gir_dtype_is_int(mask->dtype)) return imp_fail(c, "the mask must hold integers");
    const int64_t *md = mask->shape.dims;
    int r = mask->shape.rank;
    if (r == 1 && (md[0] == b || md[0] == 2 * b)) {
      int64_t d[2] = {b, t};
      gir_value *col = imp_attn_iota(c, 2, d, 1, GIR_I64, 0.0);
      gir_value *m64 = imp_cast(c, mask, GIR_I64);
      gir_value *end = reshape2(c, imp_slice_axis(c, m64, 0, 0, 1, b), b, 1);
      bias = imp_where(c, imp_binary(c, GIR_BINARY_LT, col, end), zero, filt);
      if (md[0] == 2 * b) {
        gir_value *start = reshape2(c, imp_slice_axis(c, m64, 0, b, 1, b), b, 1);
        bias = imp_where(c, imp_binary(c, GIR_BINARY_LT, col, start), filt, bias);
      }
      bias = reshape4(c, bias, b, 1, 1, t);
    } else if (r == 2 && md[0] == b && md[1] == t) {
      bias = imp_where(c, imp_binary(c, GIR_BINARY_GT, mask, imp_scalar_like(c, mask, 0)), zero, filt);
      bias = reshape4(c, bias, b, 1, 1, t);
    } else if (r == 3 && md[0] == b && md[1] == s && md[2] == t) {
      bias = imp_where(c, imp_binary(c, GIR_BINARY_GT, mask, imp_scalar_like(c, mask, 0)), zero, filt);
      bias = reshape4(c, bias, b, 1, s, t);
    } else if (r == 4) {
      return imp_fail(c, "a 4-D mask (Megatron) is not supported, as in ONNX Runtime's CPU kernel");
    } else {
      char sh[160];
      return imp_fail(c, "mask of shape %s is not [%lld], [%lld], [%lld, %lld] or [%lld, %lld, %lld]",
                      gir_shape_str(&mask->shape, sh, sizeof sh), (long long)b, (long long)(2 * b), (long long)b,
                      (long long)t, (long long)b, (long long)s, (long long)t);
    }
    if (!bias) return -1;
  }
  if (causal) { /* keys after row + past: the lowest float; PrepareMask skips the last row (which sees
                 * every key when there are more keys than past + S: MultiHeadAttention's cross case) */
    int64_t d[2] = {s, t};
    gir_value *row = imp_attn_iota(c, 2, d, 0, GIR_I64, (double)past), *col = imp_attn_iota(c, 2, d, 1, GIR_I64, 0.0);
    double lowest = ct == GIR_F64 ? -DBL_MAX : -FLT_MAX;
    gir_value *tri = imp_binary(c, GIR_BINARY_AND, imp_binary(c, GIR_BINARY_GT, col, row),
                                imp_binary(c, GIR_BINARY_LT, row, imp_scalar(c, GIR_I64, (double)(past + s - 1))));
    bias = imp_where(c, tri, imp_scalar(c, ct, lowest), bias ? bias : zero);
    if (!bias) return -1;
  }
  *out = bias;
  return 0;
}

/* An attention_bias input: [B or 1, N or 1, S, T], cast to ct and added to *bias. */
static int add_attention_bias(imp_ctx *c, gir_value *ab, int64_t b, int64_t nh, int64_t s, int64_t t, gir_dtype ct,
                              gir_value **bias) {
  if (!ab) return 0;
  const int64_t *d = ab->shape.dims;
  if (need_float(c, ab, "attention_bias") < 0) return -1;
  if (ab->shape.rank != 4 || (d[0] != b && d[0] != 1) || (d[1] != nh && d[1] != 1) || d[2] != s || d[3] != t)
    return imp_fail(c, "attention_bias must be [%lld or 1, %lld or 1, %lld, %lld]", (long long)b, (long long)nh,
                    (long long)s, (long long)t);
  gir_value *v = imp_cast(c, ab, ct);
  *bias = *bias ? imp_binary(c, GIR_BINARY_ADD, *bias, v) : v;
  return *bias ? 0 : -1;
}

/* softmax(softcap(scale · q @ kᵀ) + bias) @ v on heads: q [B, N, S, Dk], k [B, Nkv, T, Dk],
 * v [B, Nkv, T, Dv], N a multiple of Nkv; in type ct, the result [B, N, S, Dv] too. As
 * ORT's kernels: the product is scaled, then soft-capped, then the mask is added. */
static gir_value *sdpa(imp_ctx *c, gir_value *q, gir_value *k, gir_value *v, double scale, double softcap,
                       gir_value *bias, gir_dtype ct) {
  if (!q || !k || !v) return NULL;
  int64_t rep = q->shape.dims[1] / k->shape.dims[1];
  gir_value *kt = imp_transpose(c, imp_cast(c, k, ct), swap23);
  gir_value *scores = imp_attn_grouped_matmul(c, imp_cast(c, q, ct), kt, rep);
  scores = imp_binary(c, GIR_BINARY_MUL, scores, imp_scalar(c, ct, scale));
  if (softcap > 0) {
    gir_value *cap = imp_scalar(c, ct, softcap);
    scores =
        imp_binary(c, GIR_BINARY_MUL, imp_unary(c, GIR_UNARY_TANH, imp_binary(c, GIR_BINARY_DIV, scores, cap)), cap);
  }
  if (bias) scores = imp_binary(c, GIR_BINARY_ADD, scores, bias);
  if (!scores) return NULL;
  gir_node *sn = imp_new_node(c, GIR_OP_softmax, &scores, 1, 1);
  gir_attr_set_int(c->g, sn, "axis", 3);
  gir_attr_set_int(c->g, sn, "log", 0);
  return imp_attn_grouped_matmul(c, imp_finish(c, sn), imp_cast(c, v, ct), rep);
}

/* The scale attribute: 0 (its default) means 1/sqrt(head size). */
static double attr_scale(const imp_node *n, int64_t head) {
  double s = imp_attr_float(n, "scale", 0.0);
  return s != 0.0 ? s : 1.0 / sqrt((double)head);
}

/* --- Attention ---------------------------------------------------------------------------------------------- */

int imp_cv_ms_Attention(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *w = imp_in(n, 1), *bias = imp_in(n, 2), *mask = imp_in(n, 3);
  if (need_float(c, x, "input") < 0 || need_float(c, w, "weights") < 0 || (bias && need_float(c, bias, "bias") < 0))
    return -1;
  if (refuse_input(c, n, 4, "past, a cached state") < 0 || refuse_input(c, n, 6, "past_sequence_length") < 0 ||
      refuse_output(c, n, 1, "present, a cached state") < 0)
    return -1;
  if (imp_attr_int(n, "do_rotary", 0)) return imp_fail(c, "do_rotary is not supported");
  if (x->shape.rank != 3) return imp_fail(c, "input must be 3-D (batch, sequence, input_hidden), not rank %d",
                                          x->shape.rank);
  const int64_t *xd = x->shape.dims;
  int64_t b = xd[0], s = xd[1];
  if (w->shape.rank != 2 || w->shape.dims[0] != xd[2])
    return imp_fail(c, "weights must be [%lld, hidden sizes of Q, K and V]", (long long)xd[2]);
  int64_t total = w->shape.dims[1], nh = imp_attr_int(n, "num_heads", 0), hs[3];
  if (nh <= 0) return imp_fail(c, "needs attribute num_heads > 0");
  int64_t *qkv;
  int32_t cnt = imp_attr_ints(c, n, "qkv_hidden_sizes", &qkv);
  if (cnt < 0 && c->err->msg[0]) return -1;
  if (cnt > 0) {
    if (cnt != 3) return imp_fail(c, "qkv_hidden_sizes must have 3 values, not %d", cnt);
    for (int i = 0; i < 3; i++) hs[i] = qkv[i];
  } else {
    if (total % 3) return imp_fail(c, "weights' %lld columns are not 3 equal hidden sizes", (long long)total);
    hs[0] = hs[1] = hs[2] = total / 3;
  }
  if (hs[0] <= 0 || hs[0] != hs[1] || hs[2] <= 0 || hs[0] + hs[1] + hs[2] != total)
    return imp_fail(c, "hidden sizes %lld, %lld, %lld must be positive, Q's equal K's, and sum to weights' %lld "
                    "columns",
                    (long long)hs[0], (long long)hs[1], (long long)hs[2], (long long)total);
  if (hs[0] % nh || hs[2] % nh)
    return imp_fail(c, "hidden sizes %lld and %lld are not multiples of num_heads %lld", (long long)hs[0],
                    (long long)hs[2], (long long)nh);
  if (bias && (bias->shape.rank != 1 || bias->shape.dims[0] != total))
    return imp_fail(c, "bias must be [%lld]", (long long)total);

  gir_dtype ct = compute_type(x->dtype);
  gir_value *proj = imp_matmul(c, imp_cast(c, x, ct), imp_cast(c, w, ct));
  if (bias) proj = imp_binary(c, GIR_BINARY_ADD, proj, imp_cast(c, bias, ct));
  gir_value *q = imp_attn_split_heads(c, imp_slice_axis(c, proj, 2, 0, 1, hs[0]), nh, "Q");
  gir_value *k = imp_attn_split_heads(c, imp_slice_axis(c, proj, 2, hs[0], 1, hs[1]), nh, "K");
  gir_value *v = imp_attn_split_heads(c, imp_slice_axis(c, proj, 2, hs[0] + hs[1], 1, hs[2]), nh, "V");
  if (!q || !k || !v) return -1;

  gir_value *mb;
  int causal = imp_attr_int(n, "unidirectional", 0) != 0;
  if (ort_mask(c, mask, causal, b, s, s, 0, imp_attr_float(n, "mask_filter_value", -10000.0), ct, &mb) < 0 ||
      add_attention_bias(c, imp_in(n, 5), b, nh, s, s, ct, &mb) < 0)
    return -1;
  gir_value *y = sdpa(c, q, k, v, attr_scale(n, hs[0] / nh), 0.0, mb, ct);
  return imp_set_output(c, n, 0, imp_cast(c, imp_attn_merge_heads(c, y), x->dtype));
}

/* --- MultiHeadAttention ------------------------------------------------------------------------------------- */

int imp_cv_ms_MultiHeadAttention(imp_ctx *c, imp_node *n) {
  gir_value *q = imp_in(n, 0), *k = imp_in(n, 1), *v = imp_in(n, 2), *bias = imp_in(n, 3), *mask = imp_in(n, 4);
  if (need_float(c, q, "query") < 0) return -1;
  if (!k && !v) return imp_fail(c, "packed QKV (key and value absent) is not supported");
  if (need_float(c, k, "key") < 0 || need_float(c, v, "value") < 0) return -1;
  if (k->shape.rank == 5) return imp_fail(c, "packed KV (a 5-D key) is not supported");
  if (refuse_input(c, n, 6, "past_key, a cached state") < 0 ||
      refuse_input(c, n, 7, "past_value, a cached state") < 0 ||
      refuse_input(c, n, 8, "past_sequence_length") < 0 || refuse_input(c, n, 9, "cache_indirection") < 0 ||
      refuse_output(c, n, 3, "qk") < 0)
    return -1;
  int64_t nh = imp_attr_int(n, "num_heads", 0);
  if (nh <= 0) return imp_fail(c, "needs attribute num_heads > 0");
  if (q->shape.rank != 3)
    return imp_fail(c, "query must be 3-D (batch, sequence, hidden), not rank %d (packed forms are not supported)",
                    q->shape.rank);
  int64_t b = q->shape.dims[0], s = q->shape.dims[1], d = q->shape.dims[2];
  if (d % nh) return imp_fail(c, "query's hidden size %lld is not a multiple of num_heads %lld", (long long)d,
                              (long long)nh);
  int64_t hk = d / nh;
  gir_dtype ct = compute_type(q->dtype);
  gir_value *q4, *k4, *v4;
  if (k->shape.rank == 3 && v->shape.rank == 3) {
    const int64_t *kd = k->shape.dims, *vd = v->shape.dims;
    if (kd[0] != b || vd[0] != b || kd[2] != d || vd[1] != kd[1])
      return imp_fail(c, "key must be [%lld, L, %lld] and value [%lld, L, Dv]", (long long)b, (long long)d,
                      (long long)b);
    int64_t dv = vd[2];
    gir_value *qc = imp_cast(c, q, ct), *kc = imp_cast(c, k, ct), *vc = imp_cast(c, v, ct);
    if (bias) {
      if (bias->shape.rank != 1 || bias->shape.dims[0] != 2 * d + dv)
        return imp_fail(c, "bias must be [%lld] (Q, K and V hidden sizes)", (long long)(2 * d + dv));
      gir_value *bc = imp_cast(c, bias, ct);
      qc = imp_binary(c, GIR_BINARY_ADD, qc, imp_slice_axis(c, bc, 0, 0, 1, d));
      kc = imp_binary(c, GIR_BINARY_ADD, kc, imp_slice_axis(c, bc, 0, d, 1, d));
      vc = imp_binary(c, GIR_BINARY_ADD, vc, imp_slice_axis(c, bc, 0, 2 * d, 1, dv));
    }
    q4 = imp_attn_split_heads(c, qc, nh, "query");
    k4 = imp_attn_split_heads(c, kc, nh, "key");
    v4 = imp_attn_split_heads(c, vc, nh, "value");
  } else if (k->shape.rank == 4 && v->shape.rank == 4) { /* key and value given per head: [B, N, L, H] */
    const int64_t *kd = k->shape.dims, *vd = v->shape.dims;
    if (kd[0] != b || kd[1] != nh || kd[3] != hk || vd[0] != b || vd[1] != nh || vd[2] != kd[2])
      return imp_fail(c, "4-D key and value must be [%lld, %lld, L, %lld] and [%lld, %lld, L, Hv]", (long long)b,
                      (long long)nh, (long long)hk, (long long)b, (long long)nh);
    if (bias) return imp_fail(c, "bias with a 4-D (per-head) key and value is not supported");
    q4 = imp_attn_split_heads(c, imp_cast(c, q, ct), nh, "query");
    k4 = imp_cast(c, k, ct);
    v4 = imp_cast(c, v, ct);
  } else
    return imp_fail(c, "key and value must both be 3-D or both 4-D (ranks %d, %d)", k->shape.rank, v->shape.rank);
  if (!q4 || !k4 || !v4) return -1;
  int64_t t = k4->shape.dims[2];

  gir_value *mb;
  int causal = imp_attr_int(n, "unidirectional", 0) != 0;
  if (ort_mask(c, mask, causal, b, s, t, 0, imp_attr_float(n, "mask_filter_value", -10000.0), ct, &mb) < 0 ||
      add_attention_bias(c, imp_in(n, 5), b, nh, s, t, ct, &mb) < 0)
    return -1;
  gir_value *y = sdpa(c, q4, k4, v4, attr_scale(n, hk), 0.0, mb, ct);
  if (imp_set_output(c, n, 0, imp_cast(c, imp_attn_merge_heads(c, y), q->dtype)) < 0) return -1;
  /* present_key/value without a past: the heads of this key and value */
  if (imp_out_wanted(n, 1) && imp_set_output(c, n, 1, imp_cast(c, k4, k->dtype)) < 0) return -1;
  if (imp_out_wanted(n, 2) && imp_set_output(c, n, 2, imp_cast(c, v4, v->dtype)) < 0) return -1;
  return 0;
}

/* --- RotaryEmbedding ---------------------------------------------------------------------------------------- */

/* position_ids [1] (an offset: row s at offset + s) → [1, S]; [B, S] as it is. */
static gir_value *positions(imp_ctx *c, gir_value *pos, int64_t b, int64_t s) {
  if (!gir_dtype_is_int(pos->dtype)) {
    imp_fail(c, "position_ids must hold integers");
    return NULL;
  }
  if (pos->shape.rank == 1 && pos->shape.dims[0] == 1) {
    int64_t d[2] = {1, s};
    return imp_binary(c, GIR_BINARY_ADD, imp_attn_iota(c, 2, d, 1, GIR_I64, 0.0),
                      reshape2(c, imp_cast(c, pos, GIR_I64), 1, 1));
  }
  if (pos->shape.rank == 2 && pos->shape.dims[0] == b && pos->shape.dims[1] == s) return pos;
  imp_fail(c, "position_ids must be [1] or [%lld, %lld]", (long long)b, (long long)s);
  return NULL;
}

int imp_cv_ms_RotaryEmbedding(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *pos = imp_in(n, 1), *cosc = imp_in(n, 2), *sinc = imp_in(n, 3);
  if (need_float(c, x, "input") < 0) return -1;
  if (!pos || !cosc || !sinc) return imp_fail(c, "needs inputs position_ids, cos_cache and sin_cache");
  if (imp_attr_int(n, "is_packed_batching", 0)) return imp_fail(c, "is_packed_batching is not supported");
  if (cosc->shape.rank != 2 || sinc->shape.rank != 2)
    return imp_fail(c, "cos_cache and sin_cache must be 2-D (max position, rotary_embedding_dim/2)");
  int64_t nh = imp_attr_int(n, "num_heads", 0), rd = imp_attr_int(n, "rotary_embedding_dim", 0);
  int rank = x->shape.rank;
  gir_shape xs = x->shape;
  if (rank == 3) { /* [B, S, N*H] → [B, S, N, H]; without num_heads, H = 2 · the cache's width */
    int64_t head;
    if (nh > 0) {
      head = xs.dims[2] / nh;
    } else {
      if (rd > 0) return imp_fail(c, "rotary_embedding_dim needs num_heads with a 3-D input");
      head = 2 * cosc->shape.dims[1];
      nh = head > 0 ? xs.dims[2] / head : 0;
    }
    if (head <= 0 || nh <= 0 || nh * head != xs.dims[2])
      return imp_fail(c, "hidden size %lld is not num_heads x head size", (long long)xs.dims[2]);
    x = reshape4(c, x, xs.dims[0], xs.dims[1], nh, head);
  } else if (rank == 4) { /* [B, N, S, H] */
    x = imp_transpose(c, x, swap12);
  } else
    return imp_fail(c, "input must be 3-D or 4-D, not rank %d", rank);
  if (!x) return -1;
  pos = positions(c, pos, x->shape.dims[0], x->shape.dims[1]);
  gir_value *y = imp_rotary(c, x, cosc, sinc, pos, rd, imp_attr_int(n, "interleaved", 0) != 0);
  if (!y) return -1;
  y = rank == 3 ? imp_reshape(c, y, 3, xs.dims) : imp_transpose(c, y, swap12);
  return imp_set_output(c, n, 0, y);
}

/* --- GroupQueryAttention ------------------------------------------------------------------------------------ */

/* A per-head cache input [B, Nkv, P, H] (NULL: absent), checked against the new heads. */
static int past_state(imp_ctx *c, gir_value *p, const char *what, int64_t b, int64_t nkv, int64_t h, gir_dtype t) {
  if (!p) return 0;
  const int64_t *d = p->shape.dims;
  if (p->shape.rank != 4 || d[0] != b || d[1] != nkv || d[3] != h || p->dtype != t)
    return imp_fail(c, "%s must be [%lld, %lld, past, %lld] of the query's type (BNSH)", what, (long long)b,
                    (long long)nkv, (long long)h);
  return 0;
}

int imp_cv_ms_GroupQueryAttention(imp_ctx *c, imp_node *n) {
  gir_value *q = imp_in(n, 0), *k = imp_in(n, 1), *v = imp_in(n, 2), *pk = imp_in(n, 3), *pv = imp_in(n, 4);
  gir_value *seqlens = imp_in(n, 5), *total_v = imp_in(n, 6), *cosc = imp_in(n, 7), *sinc = imp_in(n, 8);
  if (need_float(c, q, "query") < 0) return -1;
  if (!seqlens || !total_v) return imp_fail(c, "needs inputs seqlens_k and total_sequence_length");
  if (refuse_input(c, n, 9, "position_ids") < 0 || refuse_input(c, n, 10, "attention_bias") < 0 ||
      refuse_input(c, n, 11, "head_sink") < 0 || refuse_output(c, n, 3, "output_qk") < 0)
    return -1;
  if (imp_attr_int(n, "smooth_softmax", 0)) return imp_fail(c, "smooth_softmax is not supported");
  if (imp_attr_int(n, "qk_output", 0)) return imp_fail(c, "qk_output is not supported");
  int64_t nh = imp_attr_int(n, "num_heads", 0), nkv = imp_attr_int(n, "kv_num_heads", 0);
  if (nh <= 0 || nkv <= 0 || nh % nkv)
    return imp_fail(c, "num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)", (long long)nh,
                    (long long)nkv);
  if (q->shape.rank != 3) return imp_fail(c, "query must be 3-D (batch, sequence, hidden), not rank %d",
                                          q->shape.rank);
  int64_t b = q->shape.dims[0], s = q->shape.dims[1], h;
  if (!k && !v) { /* packed: query holds Q, K and V, [B, S, (N + 2 Nkv) H] */
    int64_t all = q->shape.dims[2];
    if (all % (nh + 2 * nkv)) return imp_fail(c, "packed QKV's %lld columns are not (num_heads + 2 kv_num_heads) "
                                              "x head size", (long long)all);
    h = all / (nh + 2 * nkv);
    gir_value *packed = q;
    q = imp_slice_axis(c, packed, 2, 0, 1, nh * h);
    k = imp_slice_axis(c, packed, 2, nh * h, 1, nkv * h);
    v = imp_slice_axis(c, packed, 2, (nh + nkv) * h, 1, nkv * h);
    if (!q || !k || !v) return -1;
  } else {
    if (need_float(c, k, "key") < 0 || need_float(c, v, "value") < 0) return -1;
    if (q->shape.dims[2] % nh) return imp_fail(c, "query's hidden size is not a multiple of num_heads");
    h = q->shape.dims[2] / nh;
    gir_shape want = {.rank = 3, .dims = {b, s, nkv * h}};
    if (!gir_shape_equal(&k->shape, &want) || !gir_shape_equal(&v->shape, &want) || k->dtype != q->dtype ||
        v->dtype != q->dtype)
      return imp_fail(c, "key and value must be [%lld, %lld, %lld] of the query's type", (long long)b, (long long)s,
                      (long long)(nkv * h));
  }
  if (past_state(c, pk, "past_key", b, nkv, h, q->dtype) < 0 ||
      past_state(c, pv, "past_value", b, nkv, h, q->dtype) < 0)
    return -1;
  int64_t past = pk ? pk->shape.dims[2] : 0;
  if ((pv ? pv->shape.dims[2] : 0) != past) return imp_fail(c, "past_key and past_value differ in length");

  /* the lengths: constants describing a batch whose rows all hold total_sequence_length */
  int32_t nt, ns;
  int64_t *tv = imp_const_ints(c, total_v, "total_sequence_length (kiln needs it constant)", &nt);
  if (!tv) return -1;
  if (nt != 1) return imp_fail(c, "total_sequence_length must hold one value");
  int64_t total = tv[0];
  if (total != past + s)
    return imp_fail(c, "total_sequence_length %lld is not the past length %lld + sequence length %lld (a shared or "
                    "larger KV buffer is not supported)", (long long)total, (long long)past, (long long)s);
  int64_t *sl = imp_const_ints(c, seqlens, "seqlens_k (kiln needs it constant)", &ns);
  if (!sl) return -1;
  if (ns != b) return imp_fail(c, "seqlens_k must have %lld values", (long long)b);
  for (int32_t i = 0; i < ns; i++)
    if (sl[i] != total - 1)
      return imp_fail(c, "seqlens_k[%d] = %lld: a padded batch (rows shorter than total_sequence_length %lld) is not "
                      "supported", i, (long long)sl[i], (long long)total);
  int64_t lws = imp_attr_int(n, "local_window_size", -1);

  gir_dtype ct = compute_type(q->dtype);
  gir_value *q4 = reshape4(c, imp_cast(c, q, ct), b, s, nh, h), *k4 = reshape4(c, imp_cast(c, k, ct), b, s, nkv, h);
  if (imp_attr_int(n, "do_rotary", 0)) { /* rows at positions past + s, the rotation on [B, S, N, H] */
    if (!cosc || !sinc) return imp_fail(c, "do_rotary needs cos_cache and sin_cache");
    if (cosc->shape.rank != 2 || sinc->shape.rank != 2)
      return imp_fail(c, "cos_cache and sin_cache must be 2-D (max position, rotary dim/2)");
    if (past + s > cosc->shape.dims[0] || past + s > sinc->shape.dims[0])
      return imp_fail(c, "cos_cache and sin_cache have fewer than %lld positions", (long long)(past + s));
    int64_t d[2] = {1, s};
    gir_value *pos = imp_attn_iota(c, 2, d, 1, GIR_I64, (double)past);
    int il = imp_attr_int(n, "rotary_interleaved", 0) != 0;
    int64_t rd = 2 * cosc->shape.dims[1];
    gir_value *cc = imp_cast(c, cosc, ct), *sc = imp_cast(c, sinc, ct);
    q4 = imp_rotary(c, q4, cc, sc, pos, rd, il);
    k4 = imp_rotary(c, k4, cc, sc, pos, rd, il);
  } else if (cosc || sinc)
    return imp_fail(c, "cos_cache and sin_cache need do_rotary");
  q4 = imp_transpose(c, q4, swap12);
  k4 = imp_transpose(c, k4, swap12);
  gir_value *v4 = imp_attn_split_heads(c, imp_cast(c, v, ct), nkv, "value");
  if (!q4 || !k4 || !v4) return -1;
  gir_value *present_k = imp_cast(c, k4, q->dtype), *present_v = imp_cast(c, v4, q->dtype);
  if (pk) {
    gir_value *ks[2] = {pk, present_k}, *vs[2] = {pv, present_v};
    present_k = imp_concat(c, ks, 2, 2);
    present_v = imp_concat(c, vs, 2, 2);
  }
  if (!present_k || !present_v) return -1;

  /* causal, and with a local window only the last local_window_size keys, the row's own
   * among them (ORT 1.31's CPU kernel: keys after position - local_window_size) */
  int64_t d[2] = {s, total};
  gir_value *row = imp_attn_iota(c, 2, d, 0, GIR_I64, (double)past), *col = imp_attn_iota(c, 2, d, 1, GIR_I64, 0.0);
  gir_value *ninf = imp_scalar(c, ct, -INFINITY), *zero = imp_scalar(c, ct, 0.0);
  gir_value *mb = imp_where(c, imp_binary(c, GIR_BINARY_GT, col, row), ninf, zero);
  if (lws > 0) {
    gir_value *lo = imp_binary(c, GIR_BINARY_SUB, row, imp_scalar(c, GIR_I64, (double)(lws - 1)));
    mb = imp_where(c, imp_binary(c, GIR_BINARY_LT, col, lo), ninf, mb);
  }
  gir_value *y = sdpa(c, q4, imp_cast(c, present_k, ct), imp_cast(c, present_v, ct), attr_scale(n, h),
                      imp_attr_float(n, "softcap", 0.0), mb, ct);
  if (imp_set_output(c, n, 0, imp_cast(c, imp_attn_merge_heads(c, y), q->dtype)) < 0) return -1;
  if (imp_out_wanted(n, 1) && imp_set_output(c, n, 1, present_k) < 0) return -1;
  if (imp_out_wanted(n, 2) && imp_set_output(c, n, 2, present_v) < 0) return -1;
  return 0;
}
