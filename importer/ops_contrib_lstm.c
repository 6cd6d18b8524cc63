/* ops_contrib_lstm.c — ONNX Runtime's com.microsoft DynamicQuantizeLSTM, as its CPU
 * kernel computes it (contrib_ops/cpu/quantization/dynamic_quantize_lstm.cc over
 * the deep_cpu LSTM of providers/cpu/rnn), on top of the LSTM converter (ops_rnn.c).
 *
 * What ORT computes. W [D, input, 4·hidden] and R [D, hidden, 4·hidden] (already
 * transposed, unlike ONNX LSTM's) are int8 or uint8 with a scale per direction or
 * per column ([D] or [D, 4·hidden]) and a zero point of which only the direction's
 * first value is used (ORT requires per-column int8 zero points to be 0 and uint8
 * ones to be all equal, and so does this converter). The float operands are
 * quantized on the fly to uint8 the DynamicQuantizeLinear way (range widened to
 * hold 0, scale = (max - min) / 255, zero point = round(-min / scale)), one scale
 * per matrix:
 *   - X once for all time steps (one [seq·batch, input] matrix, both directions),
 *   - H_{t-1} at every step ([batch, hidden], the whole batch),
 * each product an integer GEMM with int32 accumulation, scaled by
 * a_scale·w_scale[column]; the gates are (X·W^T + H·R^T) + (Wb + Rb), then the
 * LSTM's activations, peepholes, clip and input_forget as in ONNX LSTM.
 *
 * Why this way (exact emulation rather than dequantized float weights): the LSTM
 * converter's unrolled steps take the two products from a callback
 * (imp_lstm_with_matmul), so each is DynamicQuantizeLinear → MatMulInteger →
 * scale, through the importer's own converters, and everything else (activations,
 * masks, states, bidirectional output) is the float LSTM's code. Results then
 * match ORT to float rounding (measured: max abs difference <= 2.4e-7 on outputs in
 * [-1, 1], up to 40 steps, hidden 256), unless a last-bit difference (MLAS's tanh and
 * logistic approximations, the order of additions) moves an activation across a
 * quantization rounding boundary, which would cost about one quantization step
 * (~1e-4) — not seen in the tests. Dequantizing the weights instead (ORT's float
 * LSTM on them) differs from ORT's DynamicQuantizeLSTM by 2e-3 .. 6e-3 on the same
 * data: the activation quantization error, which the emulation avoids.
 *
 * ORT with more than one intra-op thread splits the batch into per-thread chunks
 * (batch > 4, or batch >= 2 with hidden <= 256) and quantizes each chunk's H
 * separately, so its own results depend on its thread count (4 threads vs 1:
 * 4e-3 .. 5e-3 max abs difference on the data above); this converter matches ORT
 * run with one intra-op thread (one chunk).
 *
 * Refused with a message: sequence_lens that is not a constant equal to the
 * sequence length for every batch entry (ORT then quantizes X over the longest
 * length only, and H over entries that stopped), zero points that ORT rejects,
 * scales or zero points of other shapes. */
#include <string.h>
#include "ops.h"

typedef struct dq_lstm {
  imp_rnn_matmul m; /* first: the callback gets &m */
  const imp_node *n;
  gir_value *w[2][2];  /* [recurrent][direction]: [K, 4H] 8-bit weights */
  gir_value *zp[2][2]; /* scalar zero points, NULL: 0 */
  gir_value *s[2][2];  /* scalar or [4H] float32 scales */
} dq_lstm;

/* DynamicQuantizeLinear(a) → MatMulInteger with the weights → · a_scale·w_scale. */
static gir_value *dq_matmul(imp_ctx *c, const imp_rnn_matmul *m, gir_value *a, int64_t d, int recurrent) {
  const dq_lstm *q = (const dq_lstm *)m;
  gir_value *aq[3], *ins[1] = {a};
  if (imp_contrib_onnx_op(c, q->n, imp_cv_DynamicQuantizeLinear, "DynamicQuantizeLinear", 11, ins, 1, aq, 3) < 0)
    return NULL;
  gir_value *mi[4] = {aq[0], q->w[recurrent][d], aq[2], q->zp[recurrent][d]}, *acc;
  if (imp_contrib_onnx_op(c, q->n, imp_cv_MatMulInteger, "MatMulInteger", 10, mi, mi[3] ? 4 : 3, &acc, 1) < 0)
    return NULL;
  /* ORT: scale_multiplier = a_scale · w_scale, then acc · multiplier */
  return imp_binary(c, GIR_BINARY_MUL, imp_cast(c, acc, GIR_F32),
                    imp_binary(c, GIR_BINARY_MUL, aq[1], q->s[recurrent][d]));
}

/* The value at flat index i of a constant 8-bit tensor; -1 with *known = 0 otherwise. */
static int q8_at(const gir_value *v, int64_t i, int *known) {
  *known = v->data != NULL;
  if (!*known) return -1;
  return v->dtype == GIR_I8 ? ((const int8_t *)v->data)[i] : ((const uint8_t *)v->data)[i];
}

/* One weight (input 1 or 2) with its scale and zero point (inputs si, si + 1). */
static int weights_of(imp_ctx *c, imp_node *n, dq_lstm *q, int recurrent, int64_t D, int64_t K, int64_t H) {
  const char *wn = recurrent ? "R" : "W", *sn = recurrent ? "R_scale" : "W_scale",
             *zn = recurrent ? "R_zero_point" : "W_zero_point";
  int si = recurrent ? 10 : 8;
  gir_value *w = imp_in(n, recurrent ? 2 : 1), *s = imp_in(n, si), *zp = imp_in(n, si + 1);
  if (!w) return imp_fail(c, "needs input %s", wn);
  if (w->dtype != GIR_I8 && w->dtype != GIR_U8)
    return imp_fail(c, "%s must be int8 or uint8, not %s", wn, gir_dtype_name(w->dtype));
  if (w->shape.rank != 3 || w->shape.dims[0] != D || w->shape.dims[1] != K || w->shape.dims[2] != 4 * H)
    return imp_fail(c, "%s must have shape [%lld, %lld, %lld] (num_directions, %s, 4·hidden_size)", wn,
                    (long long)D, (long long)K, (long long)(4 * H), recurrent ? "hidden_size" : "input_size");
  if (!s || s->dtype != GIR_F32) return imp_fail(c, "needs input %s, float32", sn);
  int per_col = s->shape.rank == 2;
  if (!((s->shape.rank == 1 && s->shape.dims[0] == D) ||
        (per_col && s->shape.dims[0] == D && s->shape.dims[1] == 4 * H)))
    return imp_fail(c, "%s must have shape [%lld] or [%lld, %lld]", sn, (long long)D, (long long)D, (long long)(4 * H));
  int64_t zcols = 1;
  if (zp) {
    if (zp->dtype != w->dtype) return imp_fail(c, "%s must have %s's type %s", zn, wn, gir_dtype_name(w->dtype));
    if (!((zp->shape.rank == 1 && zp->shape.dims[0] == D) ||
          (zp->shape.rank == 2 && zp->shape.dims[0] == D && zp->shape.dims[1] == 4 * H)))
      return imp_fail(c, "%s must have shape [%lld] or [%lld, %lld]", zn, (long long)D, (long long)D,
                      (long long)(4 * H));
    if (zp->shape.rank == 2) { /* ORT uses each direction's first value; it checks that is all there is */
      zcols = 4 * H;
      int known, z0 = q8_at(zp, 0, &known);
      for (int64_t i = 0; known && i < D * zcols; i++) {
        int z = q8_at(zp, i, &known);
        if (w->dtype == GIR_I8 ? z != 0 : z != z0)
          return imp_fail(c, "per-column %s must be %s (as ONNX Runtime requires)", zn,
                          w->dtype == GIR_I8 ? "all 0 for int8 weights" : "one value throughout");
      }
      if (!known) return imp_fail(c, "per-column %s must be a constant", zn);
    }
  }
  int64_t k4[2] = {K, 4 * H}, none = 0, cols[1] = {4 * H};
  for (int64_t d = 0; d < D; d++) {
    q->w[recurrent][d] = imp_reshape(c, imp_slice_axis(c, w, 0, d, 1, 1), 2, k4);
    gir_value *sd = imp_slice_axis(c, s, 0, d, 1, 1);
    q->s[recurrent][d] = per_col ? imp_reshape(c, sd, 1, cols) : imp_reshape(c, sd, 0, &none);
    if (zp) {
      int64_t flat[1] = {D * zcols};
      gir_value *zd = imp_slice_axis(c, imp_reshape(c, zp, 1, flat), 0, d * zcols, 1, 1);
      q->zp[recurrent][d] = imp_reshape(c, zd, 0, &none);
      if (imp_zero_or_absent(q->zp[recurrent][d])) q->zp[recurrent][d] = NULL;
    }
  }
  return c->err->msg[0] ? -1 : 0;
}

int imp_cv_ms_DynamicQuantizeLSTM(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *r = imp_in(n, 2), *lens = imp_in(n, 4);
  if (!x || x->dtype != GIR_F32 || x->shape.rank != 3) return imp_fail(c, "X must be a float32 tensor of rank 3");
  if (!r || r->shape.rank != 3) return imp_fail(c, "R must have rank 3");
  if (imp_attr(n, "layout")) return imp_fail(c, "attribute layout is not an attribute of DynamicQuantizeLSTM");
  const char *dir = imp_attr_string(c, n, "direction", "forward");
  if (!dir) return -1;
  if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional"))
    return imp_fail(c, "attribute direction must be forward, reverse or bidirectional, got '%s'", dir);
  int64_t D = !strcmp(dir, "bidirectional") ? 2 : 1, S = x->shape.dims[0], B = x->shape.dims[1], I = x->shape.dims[2];
  int64_t H = imp_attr_int(n, "hidden_size", r->shape.dims[1]);
  if (H < 1 || H != r->shape.dims[1])
    return imp_fail(c, "attribute hidden_size (%lld) must be R's dimension 1 (%lld)", (long long)H,
                    (long long)r->shape.dims[1]);
  if (lens) { /* ORT quantizes X over the longest sequence only, H over stopped entries too */
    const void *ld = imp_const_data(c, lens, "input 'sequence_lens'");
    if (!ld) {
      c->err->msg[0] = 0;
      return imp_fail(c, "sequence_lens computed at run time is not supported (a constant equal to the sequence length is)");
    }
    if (lens->shape.rank != 1 || lens->shape.dims[0] != B || !gir_dtype_is_int(lens->dtype))
      return imp_fail(c, "sequence_lens must be an integer tensor of shape [%lld]", (long long)B);
    for (int64_t b = 0; b < B; b++)
      if (gir_load_i64(lens->dtype, ld, b) != S)
        return imp_fail(c, "sequence_lens other than the sequence length (%lld) for every batch entry are not supported",
                        (long long)S);
  }
  dq_lstm q = {.m = {.fn = dq_matmul, .hidden_size = H}, .n = n};
  if (weights_of(c, n, &q, 0, D, I, H) < 0 || weights_of(c, n, &q, 1, D, H, H) < 0) return -1;
  return imp_lstm_with_matmul(c, n, &q.m);
}
