/* ops_rnn.c — ONNX LSTM, GRU and RNN (opsets 7, 14 and 22; later opsets did not
 * change them) → canonical ops, unrolled over the sequence.
 *
 * Shapes are static after import, so the recurrence becomes one small group of
 * canonical nodes per time step and direction. Everything that does not depend on
 * the previous state is hoisted out of the unrolled loop:
 *   - the input projection of every step and every direction is ONE matmul,
 *     X viewed as [seq*batch, input] @ W^T viewed as [input, D*G*hidden] (G gates,
 *     D directions), plus the biases that can be pre-added (Wb + Rb), viewed as
 *     [seq, batch, D*G*hidden] (layout 1: one transpose) so that the gates of
 *     step t, direction d are one slice;
 *   - W and R are transposed once (they are constants: folded at import);
 *   - the validity mask t < sequence_lens[b] is one bool tensor [seq, batch, 1].
 * A step then costs one matmul (H_{t-1} @ R^T; two for GRU without
 * linear_before_reset) and element-wise gate arithmetic that fusion turns into one
 * kernel. States are [1, batch, hidden], so per-step slices feed them directly; a
 * state that is known to be zero (no initial_h / initial_c) is NULL and the terms it
 * would cancel are not emitted.
 *
 * sequence_lens: a batch entry b only advances while t < len[b]. Both directions
 * are one rule: the state is carried unchanged where the step is invalid,
 *   H_t = where(t < len[b], H_candidate, H_{t-1}),
 * and Y is zeroed there by one where over the whole output. Forward, the state
 * freezes after step len-1, so Y_h is the last valid state; reverse runs t = S-1 ..
 * 0 and the state stays initial_h until t = len-1, which is exactly ONNX's reverse
 * pass over the first len steps of each sequence. With constant lengths the mask is
 * a constant, steps valid for the whole batch need no where, and steps invalid for
 * the whole batch are not emitted at all; lengths computed at run time compare an
 * iota of the step index against them.
 *
 * Activations (f for RNN, f g for GRU, f g h for LSTM; one list per direction, or
 * one list that serves both) map onto canonical unary ops, Affine and ScaledTanh
 * onto mul/add/tanh. activation_alpha / activation_beta are consumed in list order,
 * each value by the next function that takes that parameter (as onnxruntime does);
 * a function left without a value takes the default of the ONNX operator of that
 * name, as the spec says (LeakyRelu 0.01, ThresholdedRelu 1, HardSigmoid 0.2/0.5,
 * Elu 1; Affine 1/0 and ScaledTanh 1/1, the former experimental ops' defaults —
 * onnxruntime uses 0 for ThresholdedRelu, Affine and ScaledTanh instead). clip
 * bounds every gate pre-activation to [-clip, clip] before its activation; the cell
 * state fed to h is not clipped (as in onnxruntime).
 *
 * imp_lstm_with_matmul is the same LSTM with the products by W and R supplied by
 * another converter (com.microsoft DynamicQuantizeLSTM, ops_contrib_lstm.c: dynamic
 * quantization and integer GEMMs); the biases Wb + Rb are then added after both
 * products, as ONNX Runtime's deep_cpu LSTM does.
 *
 * Opsets before 7 (the output_sequence attribute) are reported unsupported, and so
 * is a node whose unrolling would exceed RNN_MAX_STEPS steps. */
#include <string.h>
#include "ops.h"

#define RNN_MAX_STEPS 8192 /* time steps × directions unrolled for one node */

typedef enum {
  ACT_RELU,
  ACT_TANH,
  ACT_SIGMOID,
  ACT_AFFINE,
  ACT_LEAKY_RELU,
  ACT_THRESHOLDED_RELU,
  ACT_SCALED_TANH,
  ACT_HARD_SIGMOID,
  ACT_ELU,
  ACT_SOFTSIGN,
  ACT_SOFTPLUS,
  ACT_COUNT
} act_fn;

static const struct {
  const char *name;
  int uses_alpha, uses_beta;
  double alpha, beta; /* defaults */
} act_info[ACT_COUNT] = {
    [ACT_RELU] = {"Relu", 0, 0, 0, 0},
    [ACT_TANH] = {"Tanh", 0, 0, 0, 0},
    [ACT_SIGMOID] = {"Sigmoid", 0, 0, 0, 0},
    [ACT_AFFINE] = {"Affine", 1, 1, 1.0, 0.0},
    [ACT_LEAKY_RELU] = {"LeakyRelu", 1, 0, 0.01, 0},
    [ACT_THRESHOLDED_RELU] = {"ThresholdedRelu", 1, 0, 1.0, 0},
    [ACT_SCALED_TANH] = {"ScaledTanh", 1, 1, 1.0, 1.0},
    [ACT_HARD_SIGMOID] = {"HardSigmoid", 1, 1, 0.2, 0.5},
    [ACT_ELU] = {"Elu", 1, 0, 1.0, 0},
    [ACT_SOFTSIGN] = {"Softsign", 0, 0, 0, 0},
    [ACT_SOFTPLUS] = {"Softplus", 0, 0, 0, 0},
};

typedef struct act {
  act_fn fn;
  double alpha, beta;
} act;

typedef enum { KIND_RNN, KIND_GRU, KIND_LSTM } rnn_kind;

typedef struct rnn {
  rnn_kind kind;
  int gates;                      /* G: 1 RNN, 3 GRU (z r h), 4 LSTM (i o f c) */
  int64_t S, B, I, H, D;          /* seq, batch, input, hidden, directions */
  int layout;                     /* 1: batch-major X, Y, initial and final states */
  int reverse;                    /* direction == "reverse" */
  int has_clip, input_forget, lbr; /* lbr: GRU linear_before_reset */
  double clip;
  act acts[2][3];                 /* [direction][f g h] */
  gir_value *X, *W, *R, *Bias, *lens, *h0, *c0, *P;
  gir_value *xproj;               /* [S, B, D*G*H]: X W^T + hoisted biases */
  gir_value *mask;                /* [S, B, 1] bool, NULL when every step is valid */
  const uint8_t *mask_const;      /* its payload when sequence_lens is constant */
  gir_value *zeros;               /* [1, B, H] zeros, made on first use */
  const imp_rnn_matmul *mm;       /* LSTM only: products by W and R from another converter */
} rnn;

/* One direction's parameters and running state. NULL state = known zero. */
typedef struct dir_state {
  const act *acts;
  gir_value *rt;                  /* R^T [H, G*H] (rank 2: a constant one is packed into panels) */
  gir_value *rt_zr, *rt_h;        /* GRU, linear_before_reset = 0: [H, 2H], [H, H] */
  gir_value *rbh;                 /* GRU, linear_before_reset != 0: Rbh [1, H] (NULL: no B) */
  gir_value *p_i, *p_o, *p_f;     /* LSTM peepholes [1, H] (NULL: no P) */
  gir_value *bias;                /* r->mm: Wb + Rb [1, G*H], added after the products (NULL: no B) */
  int64_t d;                      /* direction index */
  gir_value *h, *cell;
} dir_state;

static gir_value *opt_in(const imp_node *n, int i) { return i < n->n_in ? n->in[i] : NULL; }

static int wants_output(const imp_node *n, int i) { return i < n->n_out && n->out_names[i] && n->out_names[i][0]; }

static int name_is(const char *name, const uint8_t *s, size_t len) {
  if (strlen(name) != len) return 0;
  for (size_t i = 0; i < len; i++) {
    char a = name[i], b = (char)s[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
    if (a != b) return 0;
  }
  return 1;
}

/* --- small builders where NULL means "known zero" --- */

static gir_value *add0(imp_ctx *c, gir_value *a, gir_value *b) {
  if (!a) return b;
  if (!b) return a;
  return imp_binary(c, GIR_BINARY_ADD, a, b);
}

static gir_value *mul0(imp_ctx *c, gir_value *a, gir_value *b) {
  if (!a || !b) return NULL;
  return imp_binary(c, GIR_BINARY_MUL, a, b);
}

static gir_value *zeros_state(imp_ctx *c, rnn *r) {
  if (!r->zeros) {
    gir_shape s = {.rank = 3, .dims = {1, r->B, r->H}};
    r->zeros = imp_broadcast_to(c, imp_scalar(c, r->X->dtype, 0.0), &s);
  }
  return r->zeros;
}

/* x viewed as view[rank], permuted by perm, reshaped to out[out_rank]. Unit dims
 * are dropped from the permutation first, so a permutation that only moves unit
 * dims costs a single reshape and others one transpose between reshapes. */
static gir_value *regroup(imp_ctx *c, gir_value *x, int rank, const int64_t *view, const int64_t *perm,
                          int out_rank, const int64_t *out) {
  int64_t rview[GIR_MAX_RANK], rperm[GIR_MAX_RANK], newidx[GIR_MAX_RANK];
  int rr = 0, identity = 1;
  for (int i = 0; i < rank; i++) {
    newidx[i] = rr;
    if (view[i] != 1) rview[rr++] = view[i];
  }
  int k = 0;
  for (int i = 0; i < rank; i++)
    if (view[perm[i]] != 1) {
      rperm[k] = newidx[perm[i]];
      identity &= rperm[k] == k;
      k++;
    }
  if (identity) return imp_reshape(c, x, out_rank, out);
  gir_value *v = imp_transpose(c, imp_reshape(c, x, rr, rview), rperm);
  return imp_reshape(c, v, out_rank, out);
}

static gir_value *pad_end(imp_ctx *c, gir_value *x, int axis, int64_t amount) {
  if (!x) return NULL;
  int64_t pads[2 * GIR_MAX_RANK] = {0};
  pads[x->shape.rank + axis] = amount;
  gir_node *nd = imp_new_node(c, GIR_OP_pad, &x, 1, 1);
  gir_attr_set_ints(c->g, nd, "pads", pads, 2 * x->shape.rank);
  gir_attr_set_int(c->g, nd, "mode", GIR_PAD_CONSTANT);
  gir_attr_set_float(c->g, nd, "value", 0.0);
  return imp_finish(c, nd);
}

/* --- activations --- */

static gir_value *apply_act(imp_ctx *c, const act *a, gir_value *x) {
  if (!x) return NULL;
  switch (a->fn) {
  case ACT_RELU: return imp_unary(c, GIR_UNARY_RELU, x);
  case ACT_TANH: return imp_unary(c, GIR_UNARY_TANH, x);
  case ACT_SIGMOID: return imp_unary(c, GIR_UNARY_SIGMOID, x);
  case ACT_SOFTSIGN: return imp_unary(c, GIR_UNARY_SOFTSIGN, x);
  case ACT_SOFTPLUS: return imp_unary(c, GIR_UNARY_SOFTPLUS, x);
  case ACT_LEAKY_RELU: return imp_unary_p(c, GIR_UNARY_LEAKY_RELU, x, a->alpha, 0, 0);
  case ACT_THRESHOLDED_RELU: return imp_unary_p(c, GIR_UNARY_THRESHOLDED_RELU, x, a->alpha, 0, 0);
  case ACT_ELU: return imp_unary_p(c, GIR_UNARY_ELU, x, a->alpha, 0, 0);
  case ACT_HARD_SIGMOID: return imp_unary_p(c, GIR_UNARY_HARD_SIGMOID, x, a->alpha, a->beta, 0);
  case ACT_AFFINE: /* alpha*x + beta */
    if (a->alpha != 1.0) x = imp_binary(c, GIR_BINARY_MUL, x, imp_scalar_like(c, x, a->alpha));
    if (a->beta != 0.0 && x) x = imp_binary(c, GIR_BINARY_ADD, x, imp_scalar_like(c, x, a->beta));
    return x;
  case ACT_SCALED_TANH: /* alpha*tanh(beta*x) */
    if (a->beta != 1.0) x = imp_binary(c, GIR_BINARY_MUL, x, imp_scalar_like(c, x, a->beta));
    x = imp_unary(c, GIR_UNARY_TANH, x);
    if (a->alpha != 1.0 && x) x = imp_binary(c, GIR_BINARY_MUL, x, imp_scalar_like(c, x, a->alpha));
    return x;
  case ACT_COUNT: break;
  }
  return NULL;
}

/* clip(x) = min(max(x, -clip), clip), on gate pre-activations only. */
static gir_value *clip_pre(imp_ctx *c, const rnn *r, gir_value *x) {
  if (!r->has_clip || !x) return x;
  x = imp_binary(c, GIR_BINARY_MAX, x, imp_scalar_like(c, x, -r->clip));
  return x ? imp_binary(c, GIR_BINARY_MIN, x, imp_scalar_like(c, x, r->clip)) : NULL;
}

static gir_value *gate(imp_ctx *c, const rnn *r, const act *a, gir_value *pre) {
  return apply_act(c, a, clip_pre(c, r, pre));
}

/* --- one time step --- */

/* This step's part of the hoisted projection r->xproj [S, B, D*G*H]: row t,
 * columns [d*G*H, (d+1)*G*H). Gate columns are sliced straight from xproj (one
 * node) unless the whole row is needed anyway. */
typedef struct step_in {
  gir_value *xproj, *row;
  int64_t t, col0, gh;
} step_in;

/* x[t, :, col:col+ncol] keeping rank 3, as one slice node (none if that is all of x). */
static gir_value *slice_row_cols(imp_ctx *c, gir_value *x, int64_t t, int64_t col, int64_t ncol) {
  if (!x) return NULL;
  if (x->shape.dims[0] == 1 && col == 0 && ncol == x->shape.dims[2]) return x;
  int64_t st[3] = {t, 0, col}, sp[3] = {1, 1, 1}, sz[3] = {1, x->shape.dims[1], ncol};
  gir_node *nd = imp_new_node(c, GIR_OP_slice, &x, 1, 1);
  gir_attr_set_ints(c->g, nd, "starts", st, 3);
  gir_attr_set_ints(c->g, nd, "steps", sp, 3);
  gir_attr_set_ints(c->g, nd, "sizes", sz, 3);
  return imp_finish(c, nd);
}

static gir_value *xp_row(imp_ctx *c, step_in *si) {
  if (!si->row) si->row = slice_row_cols(c, si->xproj, si->t, si->col0, si->gh);
  return si->row;
}

static gir_value *xp_cols(imp_ctx *c, step_in *si, int64_t col, int64_t ncol) {
  if (si->row) return imp_slice_axis(c, si->row, 2, col, 1, ncol);
  return slice_row_cols(c, si->xproj, si->t, si->col0 + col, ncol);
}

/* Columns [col, col+ncol) of the gate sums: of sum when the recurrent term exists,
 * else straight from the projection. */
static gir_value *cols(imp_ctx *c, step_in *si, gir_value *sum, int64_t col, int64_t ncol) {
  return sum ? imp_slice_axis(c, sum, 2, col, 1, ncol) : xp_cols(c, si, col, ncol);
}

/* RNN (f = acts[0], default Tanh):
 *   Ht = f(clip(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)) */
static gir_value *step_rnn(imp_ctx *c, const rnn *r, const dir_state *ds, step_in *si) {
  gir_value *pre = add0(c, xp_row(c, si), ds->h ? imp_matmul(c, ds->h, ds->rt) : NULL);
  return gate(c, r, &ds->acts[0], pre);
}

/* GRU (f, g = acts[0..1], default Sigmoid, Tanh), gate order z r h:
 *   zt = f(clip(Xt*(Wz^T) + Ht-1*(Rz^T) + Wbz + Rbz))
 *   rt = f(clip(Xt*(Wr^T) + Ht-1*(Rr^T) + Wbr + Rbr))
 *   ht = g(clip(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh))      linear_before_reset = 0
 *   ht = g(clip(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh))    linear_before_reset != 0
 *   Ht = (1 - zt) (.) ht + zt (.) Ht-1
 * The projection already holds Xt*W^T + Wb + [Rbz, Rbr, Rbh if linear_before_reset = 0]. */
static gir_value *step_gru(imp_ctx *c, const rnn *r, const dir_state *ds, step_in *si) {
  int64_t H = r->H;
  gir_value *zr = NULL, *rh = NULL;
  if (ds->h && !r->lbr) {
    zr = imp_binary(c, GIR_BINARY_ADD, xp_cols(c, si, 0, 2 * H), imp_matmul(c, ds->h, ds->rt_zr));
  } else if (ds->h) {
    gir_value *hr = imp_matmul(c, ds->h, ds->rt); /* Ht-1*(R^T), all three gates */
    zr = imp_binary(c, GIR_BINARY_ADD, xp_row(c, si), hr); /* only its z and r columns are read */
    rh = add0(c, imp_slice_axis(c, hr, 2, 2 * H, 1, H), ds->rbh);
  } else {
    rh = ds->rbh;
  }
  gir_value *z = gate(c, r, &ds->acts[0], cols(c, si, zr, 0, H));
  gir_value *xh = xp_cols(c, si, 2 * H, H), *pre_h;
  if (!r->lbr) {
    gir_value *rt = ds->h ? gate(c, r, &ds->acts[0], cols(c, si, zr, H, H)) : NULL; /* unused when Ht-1 = 0 */
    gir_value *rh = mul0(c, rt, ds->h);
    if (rh && z) { /* the first matmul's group has one exit, [rt (.) Ht-1; zt]: a prefix view feeds the second */
      gir_value *pair[2] = {rh, z}, *both = imp_concat(c, pair, 2, 0);
      rh = imp_slice_axis(c, both, 0, 0, 1, 1);
      z = imp_slice_axis(c, both, 0, 1, 1, 1);
    }
    pre_h = add0(c, xh, rh ? imp_matmul(c, rh, ds->rt_h) : NULL);
  } else {
    gir_value *rt = rh ? gate(c, r, &ds->acts[0], cols(c, si, zr, H, H)) : NULL;
    pre_h = add0(c, xh, mul0(c, rt, rh));
  }
  gir_value *ht = gate(c, r, &ds->acts[1], pre_h);
  gir_value *one_minus_z = z ? imp_binary(c, GIR_BINARY_SUB, imp_scalar_like(c, z, 1.0), z) : NULL;
  return add0(c, mul0(c, one_minus_z, ht), mul0(c, z, ds->h));
}

/* LSTM (f, g, h = acts[0..2], default Sigmoid, Tanh, Tanh), gate order i o f c:
 *   it = f(clip(Xt*(Wi^T) + Ht-1*(Ri^T) + Pi (.) Ct-1 + Wbi + Rbi))
 *   ft = f(clip(Xt*(Wf^T) + Ht-1*(Rf^T) + Pf (.) Ct-1 + Wbf + Rbf))   input_forget: ft = 1 - it
 *   ct = g(clip(Xt*(Wc^T) + Ht-1*(Rc^T) + Wbc + Rbc))
 *   Ct = ft (.) Ct-1 + it (.) ct
 *   ot = f(clip(Xt*(Wo^T) + Ht-1*(Ro^T) + Po (.) Ct + Wbo + Rbo))
 *   Ht = ot (.) h(Ct)
 * Returns Ht; Ct in *cell_out. */
static gir_value *step_lstm(imp_ctx *c, const rnn *r, const dir_state *ds, step_in *si, gir_value **cell_out) {
  int64_t H = r->H;
  const act *a = ds->acts;
  gir_value *rec = !ds->h ? NULL : r->mm ? r->mm->fn(c, r->mm, ds->h, ds->d, 1) : imp_matmul(c, ds->h, ds->rt);
  gir_value *g = rec ? imp_binary(c, GIR_BINARY_ADD, xp_row(c, si), rec) : NULL;
  if (ds->bias) g = imp_binary(c, GIR_BINARY_ADD, g ? g : xp_row(c, si), ds->bias); /* r->mm: as deep_cpu */
  gir_value *it = gate(c, r, &a[0], add0(c, cols(c, si, g, 0, H), mul0(c, ds->p_i, ds->cell)));
  gir_value *ft;
  if (r->input_forget)
    ft = it ? imp_binary(c, GIR_BINARY_SUB, imp_scalar_like(c, it, 1.0), it) : NULL;
  else
    ft = gate(c, r, &a[0], add0(c, cols(c, si, g, 2 * H, H), mul0(c, ds->p_f, ds->cell)));
  gir_value *ct = gate(c, r, &a[1], cols(c, si, g, 3 * H, H));
  gir_value *cell = add0(c, mul0(c, ft, ds->cell), mul0(c, it, ct));
  gir_value *ot = gate(c, r, &a[0], add0(c, cols(c, si, g, H, H), mul0(c, ds->p_o, cell)));
  *cell_out = cell;
  return mul0(c, ot, apply_act(c, &a[2], cell));
}

/* --- attributes and inputs --- */

static int parse_activations(imp_ctx *c, imp_node *n, rnn *r, int per_dir) {
  static const act_fn defaults[3][3] = {
      [KIND_RNN] = {ACT_TANH}, [KIND_GRU] = {ACT_SIGMOID, ACT_TANH}, [KIND_LSTM] = {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
  int total = per_dir * (int)r->D;
  act_fn fns[6];
  const Onnx__AttributeProto *a = imp_attr(n, "activations");
  if (!a || !a->n_strings) {
    for (int i = 0; i < total; i++) fns[i] = defaults[r->kind][i % per_dir];
  } else {
    /* per_dir names serve every direction; extra names (RNN's schema default lists two) are ignored */
    if (a->n_strings != (size_t)per_dir && a->n_strings < (size_t)total)
      return imp_fail(c, "attribute activations has %zu functions, expected %d", a->n_strings, total);
    for (int i = 0; i < total; i++) {
      const ProtobufCBinaryData *s = &a->strings[a->n_strings == (size_t)per_dir ? i % per_dir : i];
      int f = 0;
      while (f < ACT_COUNT && !name_is(act_info[f].name, s->data, s->len)) f++;
      if (f == ACT_COUNT)
        return imp_fail(c, "attribute activations: unknown function '%.*s'", (int)(s->len > 64 ? 64 : s->len),
                        s->data ? (const char *)s->data : "");
      fns[i] = (act_fn)f;
    }
  }
  double *alphas, *betas;
  int32_t na = imp_attr_floats(c, n, "activation_alpha", &alphas);
  int32_t nb = imp_attr_floats(c, n, "activation_beta", &betas);
  if (c->err->msg[0]) return -1;
  int ia = 0, ib = 0;
  for (int i = 0; i < total; i++) {
    act *out = &r->acts[i / per_dir][i % per_dir];
    out->fn = fns[i];
    out->alpha = act_info[fns[i]].alpha;
    out->beta = act_info[fns[i]].beta;
    if (act_info[fns[i]].uses_alpha && ia < na) out->alpha = alphas[ia++];
    if (act_info[fns[i]].uses_beta && ib < nb) out->beta = betas[ib++];
  }
  return 0;
}

static int check_shape(imp_ctx *c, const gir_value *v, const char *what, int rank, const int64_t *dims) {
  int ok = v->shape.rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = v->shape.dims[i] == dims[i];
  if (ok) return 0;
  char have[160], want[160];
  gir_shape w = gir_shape_make(rank, dims);
  return imp_fail(c, "input %s has shape %s, expected %s", what, gir_shape_str(&v->shape, have, sizeof have),
                  gir_shape_str(&w, want, sizeof want));
}

static int parse(imp_ctx *c, imp_node *n, rnn_kind kind, rnn *r) {
  if (!r->mm && n->opset < 7)
    return imp_unsupported_node(c, n, "%s before opset 7 (output_sequence attribute) is not handled", n->op_type);
  r->kind = kind;
  r->gates = kind == KIND_RNN ? 1 : kind == KIND_GRU ? 3 : 4;
  r->X = opt_in(n, 0);
  r->W = opt_in(n, 1);
  r->R = opt_in(n, 2);
  if (!r->X || !r->W || !r->R) return imp_fail(c, "needs inputs X, W and R");
  r->Bias = opt_in(n, 3);
  r->lens = opt_in(n, 4);
  r->h0 = opt_in(n, 5);
  if (kind == KIND_LSTM) {
    r->c0 = opt_in(n, 6);
    r->P = opt_in(n, 7);
  }

  const char *dir = imp_attr_string(c, n, "direction", "forward");
  if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) r->D = 1;
  else if (!strcmp(dir, "bidirectional")) r->D = 2;
  else return imp_fail(c, "attribute direction must be forward, reverse or bidirectional, got '%s'", dir);
  r->reverse = !strcmp(dir, "reverse");
  int64_t layout = n->opset >= 14 && !r->mm ? imp_attr_int(n, "layout", 0) : 0;
  if (layout != 0 && layout != 1) return imp_fail(c, "attribute layout must be 0 or 1, got %lld", (long long)layout);
  r->layout = (int)layout;
  r->has_clip = imp_attr(n, "clip") != NULL;
  r->clip = imp_attr_float(n, "clip", 0.0);
  if (r->has_clip && !(r->clip >= 0)) return imp_fail(c, "attribute clip must be a non-negative threshold");
  r->input_forget = kind == KIND_LSTM && imp_attr_int(n, "input_forget", 0) != 0;
  r->lbr = kind == KIND_GRU && imp_attr_int(n, "linear_before_reset", 0) != 0;

  gir_dtype t = r->X->dtype;
  if (!gir_dtype_is_float(t)) return imp_fail(c, "X must be a floating-point tensor, got %s", gir_dtype_name(t));
  if (r->mm && t != GIR_F32) return imp_fail(c, "X must be float32, got %s", gir_dtype_name(t));
  gir_value *same[] = {r->Bias, r->h0, r->c0, r->P, r->W, r->R};
  static const char *const same_names[] = {"B", "initial_h", "initial_c", "P", "W", "R"};
  for (int i = 0; i < (r->mm ? 4 : 6); i++)
    if (same[i] && same[i]->dtype != t)
      return imp_fail(c, "input %s is %s but X is %s", same_names[i], gir_dtype_name(same[i]->dtype),
                      gir_dtype_name(t));

  if (r->X->shape.rank != 3) return imp_fail(c, "input X must have rank 3, has %d", r->X->shape.rank);
  if (r->R->shape.rank != 3) return imp_fail(c, "input R must have rank 3, has %d", r->R->shape.rank);
  r->S = r->X->shape.dims[r->layout ? 1 : 0];
  r->B = r->X->shape.dims[r->layout ? 0 : 1];
  r->I = r->X->shape.dims[2];
  r->H = r->mm ? r->mm->hidden_size : r->R->shape.dims[2];
  int64_t G = r->gates, H = r->H, D = r->D, B = r->B;
  const Onnx__AttributeProto *hs = imp_attr(n, "hidden_size");
  if (hs && imp_attr_int(n, "hidden_size", -1) != H)
    return imp_fail(c, "attribute hidden_size is %lld but R has hidden size %lld",
                    (long long)imp_attr_int(n, "hidden_size", -1), (long long)H);
  int64_t wd[3] = {D, G * H, r->I}, rd[3] = {D, G * H, H}, bd[2] = {D, 2 * G * H}, pd[2] = {D, 3 * H};
  int64_t sd[3] = {D, B, H}, sd1[3] = {B, D, H};
  if (!r->mm && (check_shape(c, r->W, "W", 3, wd) < 0 || check_shape(c, r->R, "R", 3, rd) < 0)) return -1;
  if (r->Bias && check_shape(c, r->Bias, "B", 2, bd) < 0) return -1;
  if (r->P && check_shape(c, r->P, "P", 2, pd) < 0) return -1;
  if (r->h0 && check_shape(c, r->h0, "initial_h", 3, r->layout ? sd1 : sd) < 0) return -1;
  if (r->c0 && check_shape(c, r->c0, "initial_c", 3, r->layout ? sd1 : sd) < 0) return -1;
  if (r->lens && (r->lens->shape.rank != 1 || r->lens->shape.dims[0] != B || !gir_dtype_is_int(r->lens->dtype)))
    return imp_fail(c, "input sequence_lens must be an integer tensor of shape [%lld]", (long long)B);
  if (r->S > RNN_MAX_STEPS / D)
    return imp_unsupported_node(c, n, "sequence length %lld x %lld direction(s) is too long to unroll (limit %d steps)",
                                (long long)r->S, (long long)D, RNN_MAX_STEPS);
  return parse_activations(c, n, r, kind == KIND_RNN ? 1 : kind == KIND_GRU ? 2 : 3);
}

/* --- hoisted computations --- */

/* X W^T + Wb + Rb for every step and direction, as [S, B, D*G*H]. GRU with
 * linear_before_reset keeps Rbh out: it is scaled by the reset gate. */
static int build_projection(imp_ctx *c, rnn *r) {
  int64_t S = r->S, B = r->B, I = r->I, D = r->D, GH = r->gates * r->H;
  if (r->mm) { /* the supplied products; the biases are added per step, after R's */
    int64_t x2[2] = {S * B, I}, out[3] = {S, B, D * GH};
    gir_value *x = imp_reshape(c, r->X, 2, x2), *parts[2] = {NULL, NULL};
    for (int64_t d = 0; d < D; d++)
      if (!x || !(parts[d] = r->mm->fn(c, r->mm, x, d, 0))) return -1;
    r->xproj = imp_reshape(c, D > 1 ? imp_concat(c, parts, (int32_t)D, 1) : parts[0], 3, out);
    return r->xproj ? 0 : -1;
  }
  int64_t wview[3] = {D, GH, I}, wperm[3] = {2, 0, 1}, wout[2] = {I, D * GH};
  gir_value *wt = regroup(c, r->W, 3, wview, wperm, 2, wout); /* [I, D*G*H] */
  int64_t x2[2] = {S * B, I};
  gir_value *proj = imp_matmul(c, imp_reshape(c, r->X, 2, x2), wt); /* [S*B (or B*S), D*G*H] */
  if (r->Bias) {
    gir_value *wb = imp_slice_axis(c, r->Bias, 1, 0, 1, GH), *rb;
    if (r->lbr) rb = pad_end(c, imp_slice_axis(c, r->Bias, 1, GH, 1, 2 * r->H), 1, r->H); /* [Rbz Rbr 0] */
    else rb = imp_slice_axis(c, r->Bias, 1, GH, 1, GH);
    int64_t flat[1] = {D * GH};
    proj = imp_binary(c, GIR_BINARY_ADD, proj, imp_reshape(c, imp_binary(c, GIR_BINARY_ADD, wb, rb), 1, flat));
  }
  int64_t view1[3] = {B, S, D * GH}, perm1[3] = {1, 0, 2}, out[3] = {S, B, D * GH};
  r->xproj = r->layout ? regroup(c, proj, 3, view1, perm1, 3, out) : imp_reshape(c, proj, 3, out);
  return r->xproj ? 0 : -1;
}

/* The validity mask [S, B, 1]: t < sequence_lens[b]. NULL when all steps are valid. */
static int build_mask(imp_ctx *c, rnn *r) {
  if (!r->lens) return 0;
  int64_t S = r->S, B = r->B;
  const void *d = imp_const_data(c, r->lens, "input 'sequence_lens'");
  if (!d) { /* computed at run time */
    c->err->msg[0] = 0;
    gir_node *io = imp_new_node(c, GIR_OP_iota, NULL, 0, 1);
    int64_t shape[3] = {S, B, 1}, lshape[3] = {1, B, 1};
    gir_attr_set_ints(c->g, io, "shape", shape, 3);
    gir_attr_set_int(c->g, io, "axis", 0);
    gir_attr_set_int(c->g, io, "to", r->lens->dtype);
    gir_attr_set_float(c->g, io, "start", 0.0);
    gir_attr_set_float(c->g, io, "delta", 1.0);
    r->mask = imp_binary(c, GIR_BINARY_LT, imp_finish(c, io), imp_reshape(c, r->lens, 3, lshape));
    return r->mask ? 0 : -1;
  }
  uint8_t *m = imp_scratch(c, S * B, 1, "sequence mask");
  if (!m) return -1;
  int any_invalid = 0;
  for (int64_t b = 0; b < B; b++) {
    int64_t len = gir_load_i64(r->lens->dtype, d, b);
    if (len < 0 || len > S)
      return imp_fail(c, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b, (long long)len, (long long)S);
    for (int64_t t = 0; t < S; t++) {
      m[t * B + b] = t < len;
      any_invalid |= t >= len;
    }
  }
  if (!any_invalid) return 0;
  gir_shape s = {.rank = 3, .dims = {S, B, 1}};
  r->mask_const = m;
  r->mask = imp_const_new(c, GIR_BOOL, &s, m, "sequence mask");
  return r->mask ? 0 : -1;
}

/* 1: every batch entry is valid at step t, 0: none is, 2: some are. */
static int step_validity(const rnn *r, int64_t t) {
  if (!r->mask) return 1;
  if (!r->mask_const) return 2;
  int64_t valid = 0;
  for (int64_t b = 0; b < r->B; b++) valid += r->mask_const[t * r->B + b];
  return valid == r->B ? 1 : valid == 0 ? 0 : 2;
}

static gir_value *step_mask(imp_ctx *c, const rnn *r, int64_t t) {
  if (!r->mask_const) return imp_slice_axis(c, r->mask, 0, t, 1, 1);
  gir_shape s = {.rank = 3, .dims = {1, r->B, 1}};
  return gir_const_new(c->g, NULL, GIR_BOOL, &s, r->mask_const + t * r->B);
}

/* Direction d's slice of a per-direction initial state [D, B, H] (layout 1: [B, D, H]) as [1, B, H]. */
static gir_value *initial_state(imp_ctx *c, const rnn *r, gir_value *v, int64_t d) {
  if (!v) return NULL;
  if (!r->layout) return imp_slice_axis(c, v, 0, d, 1, 1);
  int64_t s[3] = {1, r->B, r->H};
  return imp_reshape(c, imp_slice_axis(c, v, 1, d, 1, 1), 3, s);
}

static int setup_direction(imp_ctx *c, const rnn *r, int64_t d, gir_value *rt_all, dir_state *ds) {
  int64_t H = r->H;
  ds->acts = r->acts[d];
  ds->d = d;
  int64_t rt2[2] = {H, r->gates * H};
  if (r->mm) {
    if (r->Bias) {
      gir_value *b = imp_slice_axis(c, r->Bias, 0, d, 1, 1); /* [1, 2GH] */
      ds->bias = imp_binary(c, GIR_BINARY_ADD, imp_slice_axis(c, b, 1, 0, 1, rt2[1]),
                            imp_slice_axis(c, b, 1, rt2[1], 1, rt2[1]));
    }
  } else if (rt_all) {
    ds->rt = imp_reshape(c, imp_slice_axis(c, rt_all, 0, d, 1, 1), 2, rt2); /* [H, G*H] */
  }
  if (r->kind == KIND_GRU && !r->lbr) {
    ds->rt_zr = imp_slice_axis(c, ds->rt, 1, 0, 1, 2 * H);
    ds->rt_h = imp_slice_axis(c, ds->rt, 1, 2 * H, 1, H);
  }
  if (r->kind == KIND_GRU && r->lbr && r->Bias)
    ds->rbh = imp_slice_axis(c, imp_slice_axis(c, r->Bias, 0, d, 1, 1), 1, 5 * H, 1, H);
  if (r->P) {
    gir_value *p = imp_slice_axis(c, r->P, 0, d, 1, 1); /* [1, 3H]: P[iof] */
    ds->p_i = imp_slice_axis(c, p, 1, 0, 1, H);
    ds->p_o = imp_slice_axis(c, p, 1, H, 1, H);
    ds->p_f = imp_slice_axis(c, p, 1, 2 * H, 1, H);
  }
  ds->h = initial_state(c, r, r->h0, d);
  ds->cell = initial_state(c, r, r->c0, d);
  return c->err->msg[0] ? -1 : 0;
}

/* Runs direction d over all steps; ys[t] receives the state after step t. */
static int run_direction(imp_ctx *c, rnn *r, int64_t d, dir_state *ds, gir_value **ys) {
  int backward = d == 1 || r->reverse;
  for (int64_t k = 0; k < r->S; k++) {
    int64_t t = backward ? r->S - 1 - k : k;
    int valid = step_validity(r, t);
    if (valid == 0) { /* no batch entry advances; Y is zero here */
      ys[t] = zeros_state(c, r);
      continue;
    }
    step_in si = {.xproj = r->xproj, .t = t, .col0 = d * r->gates * r->H, .gh = r->gates * r->H};
    gir_value *cell = NULL, *h;
    if (r->kind == KIND_RNN) h = step_rnn(c, r, ds, &si);
    else if (r->kind == KIND_GRU) h = step_gru(c, r, ds, &si);
    else h = step_lstm(c, r, ds, &si, &cell);
    if (valid == 2) {
      gir_value *m = step_mask(c, r, t);
      if (h) h = imp_where(c, m, h, ds->h ? ds->h : imp_scalar_like(c, h, 0.0));
      if (cell) cell = imp_where(c, m, cell, ds->cell ? ds->cell : imp_scalar_like(c, cell, 0.0));
    }
    if (c->err->msg[0] || !h) return imp_fail(c, "time step %lld could not be built", (long long)t);
    if (cell) { /* LSTM: the step's one exit is its state [h; c]; h is a prefix (a view), c a side input */
      gir_value *hc[2] = {h, cell}, *state = imp_concat(c, hc, 2, 0);
      h = imp_slice_axis(c, state, 0, 0, 1, 1);
      cell = imp_slice_axis(c, state, 0, 1, 1, 1);
      if (!h || !cell) return imp_fail(c, "time step %lld could not be built", (long long)t);
    }
    ds->h = h;
    ds->cell = cell;
    ys[t] = h;
  }
  return 0;
}

/* Final states [1, B, H] per direction → [D, B, H] (layout 1: [B, D, H]). */
static gir_value *stack_final(imp_ctx *c, rnn *r, gir_value *const *per_dir) {
  gir_value *v[2];
  for (int d = 0; d < r->D; d++) v[d] = per_dir[d] ? per_dir[d] : zeros_state(c, r);
  gir_value *s = imp_concat(c, v, (int32_t)r->D, 0);
  if (!r->layout) return s;
  int64_t view[3] = {r->D, r->B, r->H}, perm[3] = {1, 0, 2}, out[3] = {r->B, r->D, r->H};
  return regroup(c, s, 3, view, perm, 3, out);
}

static int convert(imp_ctx *c, imp_node *n, rnn_kind kind, const imp_rnn_matmul *mm) {
  rnn r = {.mm = mm};
  int rc = parse(c, n, kind, &r);
  if (rc) return rc;
  int64_t S = r.S, B = r.B, H = r.H, D = r.D;
  int want_y = wants_output(n, 0);

  gir_value *rt_all = NULL;
  if (S > 0) {
    if (build_projection(c, &r) < 0 || build_mask(c, &r) < 0) return -1;
    int64_t perm[3] = {0, 2, 1};
    if (!mm) rt_all = imp_transpose(c, r.R, perm); /* [D, H, G*H] */
  }
  gir_value **ys = gir_arena_calloc(c->g->arena, (size_t)(D * S) + 1, sizeof *ys);
  gir_value *final_h[2] = {0}, *final_c[2] = {0};
  for (int64_t d = 0; d < D; d++) {
    dir_state ds = {0};
    if (setup_direction(c, &r, d, rt_all, &ds) < 0 || run_direction(c, &r, d, &ds, ys + d * S) < 0) return -1;
    final_h[d] = ds.h;
    final_c[d] = ds.cell;
  }

  if (want_y) {
    gir_value *y;
    if (S == 0) {
      gir_shape s = r.layout ? gir_shape_make(4, (int64_t[]){B, 0, D, H}) : gir_shape_make(4, (int64_t[]){0, D, B, H});
      y = imp_broadcast_to(c, imp_scalar(c, r.X->dtype, 0.0), &s);
    } else {
      gir_value *dirs[2];
      for (int64_t d = 0; d < D; d++) dirs[d] = imp_concat_many(c, ys + d * S, S, 0); /* [S, B, H] */
      y = imp_concat(c, dirs, (int32_t)D, 0);                                      /* [D*S, B, H] */
      int64_t view[4] = {D, S, B, H};
      if (r.mask) {
        if (D > 1) y = imp_reshape(c, y, 4, view);
        y = imp_where(c, r.mask, y, imp_scalar(c, r.X->dtype, 0.0));
      }
      int64_t perm0[4] = {1, 0, 2, 3}, out0[4] = {S, D, B, H};
      int64_t perm1[4] = {2, 1, 0, 3}, out1[4] = {B, S, D, H};
      y = r.layout ? regroup(c, y, 4, view, perm1, 4, out1) : regroup(c, y, 4, view, perm0, 4, out0);
    }
    if (imp_set_output(c, n, 0, y) < 0) return -1;
  }
  if (wants_output(n, 1) && imp_set_output(c, n, 1, stack_final(c, &r, final_h)) < 0) return -1;
  if (kind == KIND_LSTM && wants_output(n, 2) && imp_set_output(c, n, 2, stack_final(c, &r, final_c)) < 0) return -1;
  return c->err->msg[0] ? -1 : 0;
}

int imp_cv_LSTM(imp_ctx *c, imp_node *n) { return convert(c, n, KIND_LSTM, NULL); }
int imp_cv_GRU(imp_ctx *c, imp_node *n) { return convert(c, n, KIND_GRU, NULL); }
int imp_cv_RNN(imp_ctx *c, imp_node *n) { return convert(c, n, KIND_RNN, NULL); }
int imp_lstm_with_matmul(imp_ctx *c, imp_node *n, const imp_rnn_matmul *m) { return convert(c, n, KIND_LSTM, m); }
