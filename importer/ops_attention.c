/* ops_attention.c — the attention family of ONNX ops, decomposed into canonical
 * ops: Attention (opset 23, 24), RotaryEmbedding (23), LinearAttention (27),
 * CausalConvWithState (27) and ai.onnx.preview FlexAttention (1), whose score_mod
 * and prob_mod graphs are inlined like If branches (imp_inline_graph). Each
 * follows onnx/reference/ops/op_*.py and the op's function body: heads are
 * split with reshape + transpose, scores are matmuls, masks are additive float
 * biases built from where/iota (folded to constants when static), and grouped-
 * query attention folds the query heads of a group into the row axis of one
 * matmul instead of copying K and V per query head.
 * LinearAttention's recurrence is unrolled over the (static) sequence length.
 * Half-precision inputs are computed in float32 and rounded once at the end. */
#include <math.h>
#include <string.h>
#include "attention.h"
#include "ops.h"

/* Longest LinearAttention sequence unrolled into one graph. The steps' outputs
 * are joined by concats that fusion merges into one kernel, and a kernel reads at
 * most 64 values (lower/lower_node.c), so 64 until fusion caps a group's inputs. */
#define LINEAR_ATTENTION_MAX_STEPS 64

static gir_value *in_opt(const imp_node *n, int i) { return i < n->n_in ? n->in[i] : NULL; }

/* The type arithmetic runs in: float32 for the half types, else the type itself. */
static gir_dtype compute_type(gir_dtype t) { return t == GIR_F16 || t == GIR_BF16 ? GIR_F32 : t; }

gir_value *imp_attn_iota(imp_ctx *c, int32_t rank, const int64_t *dims, int axis, gir_dtype to, double start) {
  gir_node *nd = imp_new_node(c, GIR_OP_iota, NULL, 0, 1);
  gir_attr_set_ints(c->g, nd, "shape", dims, rank);
  gir_attr_set_int(c->g, nd, "axis", axis);
  gir_attr_set_int(c->g, nd, "to", to);
  gir_attr_set_float(c->g, nd, "start", start);
  gir_attr_set_float(c->g, nd, "delta", 1.0);
  return imp_finish(c, nd);
}

static gir_value *reshape4(imp_ctx *c, gir_value *x, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
  int64_t d[4] = {d0, d1, d2, d3};
  return imp_reshape(c, x, 4, d);
}

static const int64_t swap12[4] = {0, 2, 1, 3};

/* [B, S, H*D] → [B, H, S, D]. */
gir_value *imp_attn_split_heads(imp_ctx *c, gir_value *x, int64_t heads, const char *what) {
  if (!x) return NULL;
  const int64_t *d = x->shape.dims;
  if (heads <= 0 || d[2] % heads) {
    imp_fail(c, "%s: hidden size %lld is not a multiple of %lld heads", what, (long long)d[2], (long long)heads);
    return NULL;
  }
  return imp_transpose(c, reshape4(c, x, d[0], d[1], heads, d[2] / heads), swap12);
}

/* [B, H, S, D] → [B, S, H*D]. */
gir_value *imp_attn_merge_heads(imp_ctx *c, gir_value *x) {
  if (!x) return NULL;
  const int64_t *d = x->shape.dims;
  int64_t m[3] = {d[0], d[2], d[1] * d[3]};
  return imp_reshape(c, imp_transpose(c, x, swap12), 3, m);
}

static int need_float(imp_ctx *c, const gir_value *v, const char *what) {
  if (!gir_dtype_is_float(v->dtype))
    return imp_fail(c, "%s must be a float tensor, not %s", what, gir_dtype_name(v->dtype));
  return 0;
}

/* --- Attention --------------------------------------------------------------------------------------------- */

/* The additive bias of the scores [.., Sq, T] in type ct (NULL with no error when
 * nothing is masked): attn_mask (bool → 0/-inf, padded to T with -inf), the causal
 * triangle shifted by the past length, and the padding mask of nonpad_kv_seqlen. */
static int attention_bias(imp_ctx *c, const imp_node *n, gir_dtype ct, int64_t b, int64_t sq, int64_t t, int64_t past,
                          gir_value **out) {
  gir_value *mask = in_opt(n, 3), *nonpad = in_opt(n, 6), *bias = NULL;
  gir_value *zero = imp_scalar(c, ct, 0.0), *ninf = imp_scalar(c, ct, -INFINITY);
  *out = NULL;
  if (mask) {
    int r = mask->shape.rank;
    if (r < 1) return imp_fail(c, "attn_mask must have rank >= 1");
    int64_t last = mask->shape.dims[r - 1];
    if (last > t)
      return imp_fail(c, "attn_mask's last dimension %lld exceeds the total sequence length %lld", (long long)last,
                      (long long)t);
    bias = mask->dtype == GIR_BOOL ? imp_where(c, mask, zero, ninf) : imp_cast(c, mask, ct);
    if (bias && last < t) {
      int64_t pads[2 * GIR_MAX_RANK] = {0};
      pads[r + r - 1] = t - last;
      gir_node *pn = imp_new_node(c, GIR_OP_pad, &bias, 1, 1);
      gir_attr_set_ints(c->g, pn, "pads", pads, 2 * r);
      gir_attr_set_int(c->g, pn, "mode", GIR_PAD_CONSTANT);
      gir_attr_set_float(c->g, pn, "value", -INFINITY);
      bias = imp_finish(c, pn);
    }
    if (!bias) return -1;
  }
  if (imp_attr_int(n, "is_causal", 0)) {
    /* masked where column > row + past */
    int64_t d[2] = {sq, t};
    gir_value *row = imp_attn_iota(c, 2, d, 0, GIR_I64, (double)past), *col = imp_attn_iota(c, 2, d, 1, GIR_I64, 0.0);
    gir_value *tri = imp_where(c, imp_binary(c, GIR_BINARY_GT, col, row), ninf, zero);
    bias = bias ? imp_binary(c, GIR_BINARY_ADD, bias, tri) : tri;
    if (!bias) return -1;
  }
  if (nonpad) {
    if (nonpad->shape.rank != 1 || nonpad->shape.dims[0] != b)
      return imp_fail(c, "nonpad_kv_seqlen must have shape [%lld]", (long long)b);
    if (!gir_dtype_is_int(nonpad->dtype)) return imp_fail(c, "nonpad_kv_seqlen must hold integers");
    int64_t d[2] = {b, t};
    gir_value *col = imp_attn_iota(c, 2, d, 1, GIR_I64, 0.0);
    int64_t d2[2] = {b, 1};
    gir_value *len = imp_reshape(c, imp_cast(c, nonpad, GIR_I64), 2, d2);
    gir_value *pad = imp_where(c, imp_binary(c, GIR_BINARY_LT, col, len), zero, ninf);
    pad = reshape4(c, pad, b, 1, 1, t);
    bias = bias ? imp_binary(c, GIR_BINARY_ADD, bias, pad) : pad;
    if (!bias) return -1;
  }
  *out = bias;
  return 0;
}

/* a [B, Hq, M, K] @ b [B, Hkv, K, N] with Hq = Hkv * rep: the rep query heads of a
 * group share b, so they are stacked along M ([B, Hkv, rep*M, K]) for one matmul. */
gir_value *imp_attn_grouped_matmul(imp_ctx *c, gir_value *a, gir_value *b, int64_t rep) {
  if (!a || !b) return NULL;
  if (rep == 1) return imp_matmul(c, a, b);
  const int64_t *d = a->shape.dims;
  int64_t bt = d[0], hq = d[1], m = d[2], k = d[3];
  gir_value *y = imp_matmul(c, reshape4(c, a, bt, hq / rep, rep * m, k), b);
  return y ? reshape4(c, y, bt, hq, m, y->shape.dims[3]) : NULL;
}

int imp_cv_Attention(imp_ctx *c, imp_node *n) {
  gir_value *q = in_opt(n, 0), *k = in_opt(n, 1), *v = in_opt(n, 2);
  gir_value *past_k = in_opt(n, 4), *past_v = in_opt(n, 5);
  if (!q || !k || !v) return imp_fail(c, "needs inputs Q, K and V");
  if (n->opset < 24 && in_opt(n, 6)) return imp_fail(c, "input nonpad_kv_seqlen needs opset 24");
  if (need_float(c, q, "Q") < 0 || need_float(c, k, "K") < 0 || need_float(c, v, "V") < 0) return -1;
  int rank = q->shape.rank;
  if ((rank != 3 && rank != 4) || k->shape.rank != rank || v->shape.rank != rank)
    return imp_fail(c, "Q, K and V must all be 3-D or all 4-D (ranks %d, %d, %d)", q->shape.rank, k->shape.rank,
                    v->shape.rank);
  if (rank == 3) {
    int64_t qh = imp_attr_int(n, "q_num_heads", 0), kvh = imp_attr_int(n, "kv_num_heads", 0);
    if (qh <= 0 || kvh <= 0) return imp_fail(c, "3-D inputs need attributes q_num_heads and kv_num_heads");
    q = imp_attn_split_heads(c, q, qh, "Q");
    k = imp_attn_split_heads(c, k, kvh, "K");
    v = imp_attn_split_heads(c, v, kvh, "V");
    if (!q || !k || !v) return -1;
  }
  const int64_t *qd = q->shape.dims, *kd = k->shape.dims, *vd = v->shape.dims;
  int64_t b = qd[0], hq = qd[1], sq = qd[2], dh = qd[3], hkv = kd[1];
  if (kd[0] != b || vd[0] != b || vd[1] != hkv || kd[3] != dh || vd[2] != kd[2])
    return imp_fail(c, "Q, K and V disagree: batch, kv heads, head size or kv sequence length");
  if (hq <= 0 || hkv <= 0 || hq % hkv)
    return imp_fail(c, "%lld query heads are not a positive multiple of %lld kv heads", (long long)hq, (long long)hkv);
  int64_t rep = hq / hkv;

  /* KV cache: present = concat(past, new) on the sequence axis */
  gir_value *pk = k, *pv = v;
  int64_t past = 0;
  if (past_k) {
    const int64_t *p = past_k->shape.dims;
    if (past_k->shape.rank != 4 || p[0] != b || p[1] != hkv || p[3] != dh || past_k->dtype != k->dtype)
      return imp_fail(c, "past_key must be [%lld, %lld, past, %lld] of K's type", (long long)b, (long long)hkv,
                      (long long)dh);
    past = p[2];
    gir_value *xs[2] = {past_k, k};
    pk = imp_concat(c, xs, 2, 2);
  }
  if (past_v) {
    const int64_t *p = past_v->shape.dims;
    if (past_v->shape.rank != 4 || p[0] != b || p[1] != hkv || p[3] != vd[3] || past_v->dtype != v->dtype)
      return imp_fail(c, "past_value must be [%lld, %lld, past, %lld] of V's type", (long long)b, (long long)hkv,
                      (long long)vd[3]);
    gir_value *xs[2] = {past_v, v};
    pv = imp_concat(c, xs, 2, 2);
  }
  if (!pk || !pv) return -1;
  int64_t t = pk->shape.dims[2];
  if (pv->shape.dims[2] != t) return imp_fail(c, "present key and value differ in sequence length");

  /* scores = (Q * sqrt(scale)) @ (K * sqrt(scale))^T, optionally soft-capped */
  gir_dtype ct = compute_type(q->dtype);
  const Onnx__AttributeProto *sa = imp_attr(n, "scale");
  double scale = sa ? sa->f : 1.0 / sqrt((double)dh);
  gir_value *sqs = imp_scalar(c, ct, sqrt(scale));
  gir_value *qs = imp_binary(c, GIR_BINARY_MUL, imp_cast(c, q, ct), sqs);
  gir_value *ks = imp_binary(c, GIR_BINARY_MUL, imp_cast(c, pk, ct), sqs);
  static const int64_t swap23[4] = {0, 1, 3, 2};
  gir_value *scores = imp_attn_grouped_matmul(c, qs, imp_transpose(c, ks, swap23), rep);
  if (!scores) return -1;
  gir_value *capped = scores;
  double softcap = imp_attr_float(n, "softcap", 0.0);
  if (softcap > 0) {
    gir_value *cap = imp_scalar(c, ct, softcap);
    capped =
        imp_binary(c, GIR_BINARY_MUL, imp_unary(c, GIR_UNARY_TANH, imp_binary(c, GIR_BINARY_DIV, scores, cap)), cap);
  }

  gir_value *bias, *biased = capped;
  if (attention_bias(c, n, ct, b, sq, t, past, &bias) < 0) return -1;
  if (bias) {
    biased = imp_binary(c, GIR_BINARY_ADD, capped, bias);
    if (!biased) return -1;
    if (!gir_shape_equal(&biased->shape, &capped->shape)) {
      char s1[160], s2[160];
      return imp_fail(c, "attn_mask of shape %s does not broadcast to the scores' shape %s",
                      gir_shape_str(&bias->shape, s1, sizeof s1), gir_shape_str(&capped->shape, s2, sizeof s2));
    }
  }

  /* softmax over the keys, in softmax_precision when given */
  gir_value *sm_in = biased;
  const Onnx__AttributeProto *spa = imp_attr(n, "softmax_precision");
  if (spa) {
    gir_dtype sp = gir_dtype_from_onnx((int32_t)spa->i);
    if (!gir_dtype_is_float(sp)) return imp_fail(c, "softmax_precision %lld is not a float type", (long long)spa->i);
    sm_in = imp_cast(c, biased, sp);
  }
  if (!sm_in) return -1;
  gir_node *sn = imp_new_node(c, GIR_OP_softmax, &sm_in, 1, 1);
  gir_attr_set_int(c->g, sn, "axis", 3);
  gir_attr_set_int(c->g, sn, "log", 0);
  gir_value *probs = imp_finish(c, sn);

  gir_value *y = imp_attn_grouped_matmul(c, imp_cast(c, probs, ct), imp_cast(c, pv, ct), rep);
  if (rank == 3) y = imp_attn_merge_heads(c, y);
  if (imp_set_output(c, n, 0, imp_cast(c, y, q->dtype)) < 0) return -1;
  if (imp_set_output(c, n, 1, pk) < 0 || imp_set_output(c, n, 2, pv) < 0) return -1;
  /* qk_matmul_output: 0 raw scores (the spec and function body; the Python
   * reference returns them soft-capped), 1 soft-capped, 2 with the bias, 3 softmax */
  int64_t mode = imp_attr_int(n, "qk_matmul_output_mode", 0);
  gir_value *qk = mode == 0 ? scores : mode == 1 ? capped : mode == 2 ? biased : mode == 3 ? probs : NULL;
  if (!qk) return imp_fail(c, "qk_matmul_output_mode %lld is not 0, 1, 2 or 3", (long long)mode);
  if (n->n_out > 3 && n->out_names[3] && n->out_names[3][0]) return imp_set_output(c, n, 3, imp_cast(c, qk, q->dtype));
  return 0;
}

/* --- RotaryEmbedding --------------------------------------------------------------------------------------- */

/* x [B, S, H, D] rotated over its first rd features of each head (rd even, at most
 * D); the caches give [B or 1, S or 1, rd/2] directly, or are 2-D tables gathered
 * at pos [B or 1, S] when pos is given. */
gir_value *imp_rotary(imp_ctx *c, gir_value *x, gir_value *cosc, gir_value *sinc, gir_value *pos, int64_t rd,
                      int interleaved) {
  if (!x || !cosc || !sinc) return NULL;
  if (cosc->dtype != x->dtype || sinc->dtype != x->dtype) {
    imp_fail(c, "cos_cache and sin_cache must be of the input's type");
    return NULL;
  }
  int64_t bs = x->shape.dims[0], s = x->shape.dims[1], d = x->shape.dims[3];
  if (rd == 0) rd = d;
  if (rd < 0 || rd > d || rd % 2) {
    imp_fail(c, "rotary_embedding_dim %lld must be even and at most the head size %lld", (long long)rd, (long long)d);
    return NULL;
  }
  int64_t half = rd / 2;

  /* cos/sin: [B, S, half] (gathered at position_ids), then [B, S, 1, half] */
  if (pos && pos->shape.rank != 2) {
    imp_fail(c, "position_ids must be 2-D (batch, sequence)");
    return NULL;
  }
  gir_value *cs[2] = {cosc, sinc};
  for (int i = 0; i < 2; i++) {
    if (pos) {
      if (cs[i]->shape.rank != 2) {
        imp_fail(c, "with position_ids the caches must be 2-D");
        return NULL;
      }
      if (!gir_dtype_is_int(pos->dtype)) {
        imp_fail(c, "position_ids must hold integers");
        return NULL;
      }
      gir_value *ins[2] = {cs[i], pos};
      gir_node *gn = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
      gir_attr_set_int(c->g, gn, "axis", 0);
      cs[i] = imp_finish(c, gn);
      if (!cs[i]) return NULL;
    }
    /* batch and sequence may broadcast, as in the reference */
    const int64_t *cd = cs[i]->shape.dims;
    if (cs[i]->shape.rank != 3 || (cd[0] != bs && cd[0] != 1) || (cd[1] != s && cd[1] != 1) || cd[2] != half) {
      imp_fail(c, "the %s cache must give [%lld, %lld, %lld] (batch, sequence, rotary_embedding_dim/2)",
               i ? "sin" : "cos", (long long)bs, (long long)s, (long long)half);
      return NULL;
    }
    cs[i] = reshape4(c, cs[i], cd[0], cd[1], 1, half);
  }

  gir_value *xr = imp_slice_axis(c, x, 3, 0, 1, rd);
  gir_value *x1 = interleaved ? imp_slice_axis(c, xr, 3, 0, 2, half) : imp_slice_axis(c, xr, 3, 0, 1, half);
  gir_value *x2 = interleaved ? imp_slice_axis(c, xr, 3, 1, 2, half) : imp_slice_axis(c, xr, 3, half, 1, half);
  gir_value *re =
      imp_binary(c, GIR_BINARY_SUB, imp_binary(c, GIR_BINARY_MUL, cs[0], x1), imp_binary(c, GIR_BINARY_MUL, cs[1], x2));
  gir_value *im =
      imp_binary(c, GIR_BINARY_ADD, imp_binary(c, GIR_BINARY_MUL, cs[1], x1), imp_binary(c, GIR_BINARY_MUL, cs[0], x2));
  if (!re || !im) return NULL;
  int64_t h = x->shape.dims[2];
  gir_value *rot;
  if (interleaved) {
    int64_t d5[5] = {bs, s, h, half, 1};
    gir_value *pair[2] = {imp_reshape(c, re, 5, d5), imp_reshape(c, im, 5, d5)};
    rot = reshape4(c, imp_concat(c, pair, 2, 4), bs, s, h, rd);
  } else {
    gir_value *pair[2] = {re, im};
    rot = imp_concat(c, pair, 2, 3);
  }
  if (rd == d || !rot) return rot;
  gir_value *parts[2] = {rot, imp_slice_axis(c, x, 3, rd, 1, d - rd)};
  return imp_concat(c, parts, 2, 3);
}

int imp_cv_RotaryEmbedding(imp_ctx *c, imp_node *n) {
  gir_value *x = in_opt(n, 0), *cosc = in_opt(n, 1), *sinc = in_opt(n, 2), *pos = in_opt(n, 3);
  if (!x || !cosc || !sinc) return imp_fail(c, "needs inputs X, cos_cache and sin_cache");
  if (need_float(c, x, "X") < 0) return -1;
  if (cosc->dtype != x->dtype || sinc->dtype != x->dtype)
    return imp_fail(c, "cos_cache and sin_cache must be of X's type");
  int rank = x->shape.rank;
  gir_shape xs = x->shape;
  /* → [B, S, H, D] */
  if (rank == 4) {
    x = imp_transpose(c, x, swap12);
  } else if (rank == 3) {
    int64_t nh = imp_attr_int(n, "num_heads", 0);
    if (nh <= 0) return imp_fail(c, "3-D input needs attribute num_heads");
    if (xs.dims[2] % nh)
      return imp_fail(c, "hidden size %lld is not a multiple of num_heads %lld", (long long)xs.dims[2], (long long)nh);
    x = reshape4(c, x, xs.dims[0], xs.dims[1], nh, xs.dims[2] / nh);
  } else
    return imp_fail(c, "X must be 3-D or 4-D, not rank %d", rank);
  gir_value *y = imp_rotary(c, x, cosc, sinc, pos, imp_attr_int(n, "rotary_embedding_dim", 0),
                            imp_attr_int(n, "interleaved", 0) != 0);
  if (!y) return -1;
  y = rank == 3 ? imp_reshape(c, y, 3, xs.dims) : imp_transpose(c, y, swap12);
  return imp_set_output(c, n, 0, y);
}

/* --- CausalConvWithState ----------------------------------------------------------------------------------- */

int imp_cv_CausalConvWithState(imp_ctx *c, imp_node *n) {
  gir_value *x = in_opt(n, 0), *w = in_opt(n, 1), *bias = in_opt(n, 2), *past = in_opt(n, 3);
  if (!x || !w) return imp_fail(c, "needs inputs input and weight");
  if (need_float(c, x, "input") < 0) return -1;
  if (x->shape.rank != 3) return imp_fail(c, "input must be 3-D (batch, channels, length), not rank %d", x->shape.rank);
  int64_t b = x->shape.dims[0], ch = x->shape.dims[1], len = x->shape.dims[2];
  if (w->shape.rank != 3 || w->shape.dims[0] != ch || w->shape.dims[1] != 1 || w->shape.dims[2] < 1)
    return imp_fail(c, "weight must be [%lld, 1, k]", (long long)ch);
  if (w->dtype != x->dtype) return imp_fail(c, "weight must be of input's type");
  int64_t k = w->shape.dims[2];
  const char *act = imp_attr_string(c, n, "activation", "none");
  if (!act) return -1;
  int silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none")) return imp_fail(c, "activation '%s' is not none, silu or swish", act);
  if (bias && (bias->shape.rank != 1 || bias->shape.dims[0] != ch || bias->dtype != x->dtype))
    return imp_fail(c, "bias must be [%lld] of input's type", (long long)ch);

  /* padded = concat(past_state or zeros, input) on the time axis */
  gir_value *padded = x;
  if (past) {
    const int64_t *p = past->shape.dims;
    if (past->shape.rank != 3 || p[0] != b || p[1] != ch || p[2] != k - 1 || past->dtype != x->dtype)
      return imp_fail(c, "past_state must be [%lld, %lld, %lld] of input's type", (long long)b, (long long)ch,
                      (long long)(k - 1));
    gir_value *xs[2] = {past, x};
    if (k > 1) padded = imp_concat(c, xs, 2, 2);
  } else if (k > 1) {
    int64_t pads[6] = {0, 0, k - 1, 0, 0, 0};
    gir_node *pn = imp_new_node(c, GIR_OP_pad, &x, 1, 1);
    gir_attr_set_ints(c->g, pn, "pads", pads, 6);
    gir_attr_set_int(c->g, pn, "mode", GIR_PAD_CONSTANT);
    gir_attr_set_float(c->g, pn, "value", 0.0);
    padded = imp_finish(c, pn);
  }
  if (!padded) return -1;

  /* depthwise conv, valid padding */
  gir_value *ins[3] = {padded, w, bias};
  gir_node *cn = imp_new_node(c, GIR_OP_conv, ins, bias ? 3 : 2, 1);
  int64_t one = 1, zeros[2] = {0, 0};
  gir_attr_set_ints(c->g, cn, "strides", &one, 1);
  gir_attr_set_ints(c->g, cn, "pads", zeros, 2);
  gir_attr_set_ints(c->g, cn, "dilations", &one, 1);
  gir_attr_set_int(c->g, cn, "group", ch);
  gir_value *y = imp_finish(c, cn);
  if (silu) {
    gir_dtype ct = compute_type(x->dtype);
    y = imp_cast(c, imp_unary_p(c, GIR_UNARY_SWISH, imp_cast(c, y, ct), 1.0, 0.0, 0.0), x->dtype);
  }
  if (imp_set_output(c, n, 0, y) < 0) return -1;
  return imp_set_output(c, n, 1, imp_slice_axis(c, padded, 2, len, 1, k - 1));
}

/* --- LinearAttention --------------------------------------------------------------------------------------- */

/* [B, T, H*X] → [B, H, T, X] in float32 (X = last / H). */
static gir_value *la_heads(imp_ctx *c, gir_value *x, int64_t heads, const char *what) {
  if (x->shape.rank != 3) {
    imp_fail(c, "%s must be 3-D (batch, sequence, heads*size), not rank %d", what, x->shape.rank);
    return NULL;
  }
  return imp_attn_split_heads(c, imp_cast(c, x, GIR_F32), heads, what);
}

int imp_cv_LinearAttention(imp_ctx *c, imp_node *n) {
  gir_value *q = in_opt(n, 0), *k = in_opt(n, 1), *v = in_opt(n, 2);
  gir_value *past = in_opt(n, 3), *decay = in_opt(n, 4), *beta = in_opt(n, 5);
  if (!q || !k || !v) return imp_fail(c, "needs inputs query, key and value");
  if (need_float(c, q, "query") < 0 || need_float(c, k, "key") < 0 || need_float(c, v, "value") < 0) return -1;
  const char *rule = imp_attr_string(c, n, "update_rule", "gated_delta");
  if (!rule) return -1;
  int gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
  int delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (!gating && !delta && strcmp(rule, "linear"))
    return imp_fail(c, "update_rule '%s' is not linear, gated, delta or gated_delta", rule);
  if (gating != (decay != NULL))
    return imp_fail(c, "update_rule '%s' %s input decay", rule, gating ? "needs" : "forbids");
  if (delta != (beta != NULL)) return imp_fail(c, "update_rule '%s' %s input beta", rule, delta ? "needs" : "forbids");
  int64_t hq = imp_attr_int(n, "q_num_heads", 0), hkv = imp_attr_int(n, "kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv)
    return imp_fail(c, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)", (long long)hq,
                    (long long)hkv);
  gir_value *q4 = la_heads(c, q, hq, "query"), *k4 = la_heads(c, k, hkv, "key"), *v4 = la_heads(c, v, hkv, "value");
  if (!q4 || !k4 || !v4) return -1;
  int64_t b = q4->shape.dims[0], t = q4->shape.dims[2], dk = q4->shape.dims[3], dv = v4->shape.dims[3];
  int64_t rep = hq / hkv;
  if (k4->shape.dims[0] != b || v4->shape.dims[0] != b || k4->shape.dims[2] != t || v4->shape.dims[2] != t ||
      k4->shape.dims[3] != dk)
    return imp_fail(c, "query, key and value disagree: batch, sequence length or key head size");
  if (t > LINEAR_ATTENTION_MAX_STEPS)
    return imp_unsupported_node(c, n, "sequence length %lld: the recurrence is unrolled step by step, up to %d steps",
                                (long long)t, LINEAR_ATTENTION_MAX_STEPS);

  /* decay → [B, Hkv, T, 1 or dk]; beta → [B, Hkv or 1, T, 1] */
  gir_value *g4 = NULL, *b4 = NULL;
  if (decay) {
    const int64_t *d = decay->shape.dims;
    if (decay->shape.rank != 3 || d[0] != b || d[1] != t || (d[2] != hkv && d[2] != hkv * dk))
      return imp_fail(c, "decay must be [%lld, %lld, %lld or %lld]", (long long)b, (long long)t, (long long)hkv,
                      (long long)(hkv * dk));
    g4 = imp_attn_split_heads(c, imp_cast(c, decay, GIR_F32), hkv, "decay");
    if (!g4) return -1;
  }
  if (beta) {
    const int64_t *d = beta->shape.dims;
    if (beta->shape.rank != 3 || d[0] != b || d[1] != t || (d[2] != hkv && d[2] != 1))
      return imp_fail(c, "beta must be [%lld, %lld, %lld or 1]", (long long)b, (long long)t, (long long)hkv);
    b4 = imp_attn_split_heads(c, imp_cast(c, beta, GIR_F32), d[2], "beta");
    if (!b4) return -1;
  }

  /* state [B, Hkv, dk, dv] in float32 */
  gir_shape ss = {.rank = 4, .dims = {b, hkv, dk, dv}};
  gir_value *state;
  if (past) {
    if (!gir_shape_equal(&past->shape, &ss))
      return imp_fail(c, "past_state must be [%lld, %lld, %lld, %lld]", (long long)b, (long long)hkv, (long long)dk,
                      (long long)dv);
    if (need_float(c, past, "past_state") < 0) return -1;
    state = imp_cast(c, past, GIR_F32);
  } else
    state = imp_broadcast_to(c, imp_scalar(c, GIR_F32, 0.0), &ss);
  double scale = imp_attr_float(n, "scale", 0.0);
  if (scale == 0.0) scale = 1.0 / sqrt((double)dk);
  gir_value *scale_v = imp_scalar(c, GIR_F32, scale);

  gir_value **outs = gir_arena_calloc(c->g->arena, (size_t)t + 1, sizeof *outs);
  for (int64_t i = 0; i < t; i++) {
    gir_value *qt = imp_slice_axis(c, q4, 2, i, 1, 1); /* [B, Hq, 1, dk] */
    gir_value *kt = imp_slice_axis(c, k4, 2, i, 1, 1); /* [B, Hkv, 1, dk] */
    gir_value *vt = imp_slice_axis(c, v4, 2, i, 1, 1); /* [B, Hkv, 1, dv] */
    if (gating) { /* state *= exp(g_t) along dk */
      gir_value *gt = imp_slice_axis(c, g4, 2, i, 1, 1);
      if (!gt) return -1;
      gt = reshape4(c, imp_unary(c, GIR_UNARY_EXP, gt), b, hkv, gt->shape.dims[3], 1);
      state = imp_binary(c, GIR_BINARY_MUL, state, gt);
    }
    if (delta) { /* v_t = beta_t * (v_t - k_t @ state) */
      gir_value *bt = imp_slice_axis(c, b4, 2, i, 1, 1);
      vt = imp_binary(c, GIR_BINARY_MUL, bt, imp_binary(c, GIR_BINARY_SUB, vt, imp_matmul(c, kt, state)));
    }
    /* state += k_t ⊗ v_t */
    state = imp_binary(c, GIR_BINARY_ADD, state, imp_binary(c, GIR_BINARY_MUL, reshape4(c, kt, b, hkv, dk, 1), vt));
    /* o_t = scale * q_t @ state, the rep query heads of a group reading one state */
    gir_value *o = imp_matmul(c, reshape4(c, qt, b, hkv, rep, dk), state);
    outs[i] = reshape4(c, imp_binary(c, GIR_BINARY_MUL, o, scale_v), b, hq, 1, dv);
    if (!outs[i]) return -1;
  }
  /* join the steps on the sequence axis; concat takes at most 64 inputs, so in blocks */
  int64_t cnt = t;
  while (cnt > 1) {
    int64_t m = 0;
    for (int64_t i = 0; i < cnt; i += 64) {
      int32_t blk = (int32_t)(cnt - i < 64 ? cnt - i : 64);
      outs[m++] = imp_concat(c, outs + i, blk, 2);
      if (!outs[m - 1]) return -1;
    }
    cnt = m;
  }
  gir_shape empty = {.rank = 4, .dims = {b, hq, 0, dv}};
  gir_value *y = t ? outs[0] : imp_broadcast_to(c, imp_scalar(c, GIR_F32, 0.0), &empty);
  if (imp_set_output(c, n, 0, imp_cast(c, imp_attn_merge_heads(c, y), q->dtype)) < 0) return -1;
  return imp_set_output(c, n, 1, imp_cast(c, state, past ? past->dtype : q->dtype));
}

/* --- FlexAttention ----------------------------------------------------------------------------------------- */

/* Applies the modifier subgraph attribute `name` (score_mod, prob_mod) to *x when
 * the node has it: inlined once, its one input bound to *x, its one output of
 * *x's shape cast back to *x's type (the reference's np.asarray(dtype=...)). */
static int flex_modifier(imp_ctx *c, const imp_node *n, const char *name, gir_value **x) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  if (!a) return 0;
  if (!a->g) return imp_fail(c, "attribute %s must be a graph", name);
  if (a->g->n_input != 1 || a->g->n_output != 1)
    return imp_fail(c, "%s must have one input and one output, not %zu and %zu", name, a->g->n_input,
                    a->g->n_output);
  gir_value *y = NULL;
  int rc = imp_inline_graph(c, n, a->g, name, x, 1, &y);
  if (rc < 0) return rc;
  if (!gir_shape_equal(&y->shape, &(*x)->shape)) {
    char s1[160], s2[160];
    return imp_fail(c, "%s yields shape %s; it must keep its input's shape %s", name,
                    gir_shape_str(&y->shape, s1, sizeof s1), gir_shape_str(&(*x)->shape, s2, sizeof s2));
  }
  *x = imp_cast(c, y, (*x)->dtype);
  return *x ? 0 : -1;
}

/* ai.onnx.preview FlexAttention (opset 1), after onnx/reference/ops/aionnx_preview/
 * op_flex_attention.py: Q and K are each scaled by sqrt(scale) (computed in float32,
 * rounded to Q's type) and multiplied in Q's type, as the reference and the function
 * body do; the scores are cast to the softmax type (softmax_precision, else float32
 * for the half types and Q's type otherwise), score_mod and prob_mod are inlined
 * around the softmax, and probs @ V runs in the softmax type, cast to V's type. */
int imp_cv_FlexAttention(imp_ctx *c, imp_node *n) {
  if (!n->proto->domain || strcmp(n->proto->domain, "ai.onnx.preview"))
    return imp_unsupported_node(c, n, "no converter");
  if (n->opset != 1)
    return imp_unsupported_node(c, n, "ai.onnx.preview opset %lld (kiln knows 1)", (long long)n->opset);
  gir_value *q = in_opt(n, 0), *k = in_opt(n, 1), *v = in_opt(n, 2);
  if (!q || !k || !v) return imp_fail(c, "needs inputs Q, K and V");
  if (need_float(c, q, "Q") < 0 || need_float(c, k, "K") < 0 || need_float(c, v, "V") < 0) return -1;
  if (k->dtype != q->dtype || v->dtype != q->dtype) return imp_fail(c, "Q, K and V must have one element type");
  if (q->shape.rank != 4 || k->shape.rank != 4 || v->shape.rank != 4)
    return imp_fail(c, "Q, K and V must be 4-D (ranks %d, %d, %d)", q->shape.rank, k->shape.rank, v->shape.rank);
  const int64_t *qd = q->shape.dims, *kd = k->shape.dims, *vd = v->shape.dims;
  int64_t hq = qd[1], hkv = kd[1], e = qd[3];
  if (kd[0] != qd[0] || vd[0] != qd[0]) return imp_fail(c, "Q, K and V differ in batch size");
  if (vd[1] != hkv) return imp_fail(c, "K and V differ in head count (%lld, %lld)", (long long)hkv, (long long)vd[1]);
  if (vd[2] != kd[2]) return imp_fail(c, "K and V differ in sequence length");
  if (kd[3] != e) return imp_fail(c, "Q and K differ in head size (%lld, %lld)", (long long)e, (long long)kd[3]);
  if (hq <= 0 || hkv <= 0 || hq % hkv)
    return imp_fail(c, "%lld query heads are not a positive multiple of %lld kv heads", (long long)hq, (long long)hkv);
  int64_t rep = hq / hkv;

  gir_dtype sp = compute_type(q->dtype);
  const Onnx__AttributeProto *spa = imp_attr(n, "softmax_precision");
  if (spa) {
    sp = gir_dtype_from_onnx((int32_t)spa->i);
    if (sp != GIR_F32 && sp != GIR_F16 && sp != GIR_BF16 && sp != GIR_F64)
      return imp_fail(c, "softmax_precision %lld is not float, float16, bfloat16 or double", (long long)spa->i);
  }
  const Onnx__AttributeProto *sa = imp_attr(n, "scale");
  double scale = sa ? sa->f : 1.0 / sqrt((double)e);
  gir_value *sqs = imp_scalar(c, q->dtype, (double)sqrtf((float)scale));
  static const int64_t swap23[4] = {0, 1, 3, 2};
  gir_value *kt = imp_transpose(c, imp_binary(c, GIR_BINARY_MUL, k, sqs), swap23);
  gir_value *scores = imp_cast(c, imp_attn_grouped_matmul(c, imp_binary(c, GIR_BINARY_MUL, q, sqs), kt, rep), sp);
  if (!scores) return -1;
  int rc = flex_modifier(c, n, "score_mod", &scores);
  if (rc < 0) return rc;
  gir_node *sn = imp_new_node(c, GIR_OP_softmax, &scores, 1, 1);
  gir_attr_set_int(c->g, sn, "axis", 3);
  gir_attr_set_int(c->g, sn, "log", 0);
  gir_value *probs = imp_finish(c, sn);
  if (!probs) return -1;
  if ((rc = flex_modifier(c, n, "prob_mod", &probs)) < 0) return rc;
  gir_value *y = imp_attn_grouped_matmul(c, probs, imp_cast(c, v, sp), rep);
  return imp_set_output(c, n, 0, imp_cast(c, y, v->dtype));
}
