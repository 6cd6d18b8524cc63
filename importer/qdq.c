/* qdq.c — QDQ node units: DequantizeLinear → Conv/MatMul/Gemm → QuantizeLinear imported
 * as one integer op; DequantizeLinear → Add/Mul/AveragePool/GlobalAveragePool/Sigmoid/
 * LeakyRelu/Softmax/Concat → QuantizeLinear as ONNX Runtime's QLinear op of it;
 * DequantizeLinear → MaxPool → QuantizeLinear with one scale and zero point on both
 * sides as MaxPool on the 8-bit values (ORT's DropQDQNodesRules).
 *
 * ONNX Runtime's quantizer (quantize_static, QDQ format) writes a quantized conv
 * as float Conv between DequantizeLinear nodes (activation, weights, int32 bias)
 * and a QuantizeLinear; ONNX Runtime then runs each such unit as QLinearConv /
 * QLinearMatMul (a Gemm as a matmul plus its int32 bias): int32 accumulation of the 8-bit values, requantized in float.
 * Imported node by node the unit would be float arithmetic on dequantized values
 * and its results off the integer ones by a step here and there — which then
 * compounds through the layers. So the importer finds the units first (as ONNX
 * Runtime's QDQ selectors do) and converts each at its QuantizeLinear as the
 * QLinear op (ops_nn.c) over the unit's quantized inputs; the float Conv/MatMul is
 * skipped. A unit whose parameters turn out unfit (not constant, a weight zero
 * point, a bias scale that is not x_scale · w_scale) converts node by node at the
 * QuantizeLinear, in order — its inputs are all defined by then.
 *
 * The other kinds (qlinear_kinds below) are what ONNX Runtime's optimizer (on by
 * default) turns into com.microsoft QLinearAdd, QLinearAveragePool, … whose rounding
 * differs from float arithmetic between DequantizeLinear and QuantizeLinear by a
 * step here and there; converting each through kiln's converter of that QLinear op
 * (ops_contrib_quant.c, which follows ORT's kernels) computes what ORT computes.
 *
 * Only at the top level, where the graph's outputs are known (a fused node's
 * output must have no reader but the QuantizeLinear). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ctx.h"
#include "ops.h"
#include "qdq.h"

static int is_op(const Onnx__NodeProto *n, const char *op) {
  return n && n->op_type && !strcmp(n->op_type, op) && (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx"));
}

static int named(const char *s) { return s && s[0]; }

/* The plan's index of node outputs: (name, node), sorted by name. */
struct imp_qdq_out {
  const char *name;
  int32_t node;
};

static int out_cmp(const void *x, const void *y) {
  return strcmp(((const imp_qdq_out *)x)->name, ((const imp_qdq_out *)y)->name);
}

/* The node of this graph that produces `name`, or -1. */
static long producer(const imp_qdq_plan *p, const char *name) {
  if (!named(name)) return -1;
  imp_qdq_out key = {name, 0};
  const imp_qdq_out *o = bsearch(&key, p->outs, p->n_outs, sizeof key, out_cmp);
  return o ? o->node : -1;
}

/* The other units, as ONNX Runtime's QDQ selectors find them
 * (onnxruntime/core/optimizer/qdq_transformer/selectors_actions: UnaryOpQDQRules,
 * BinaryOpQDQRules, VariadicOpQDQRules; CPU provider, 8-bit types): every input of
 * the op from a DequantizeLinear, the op's one output read by the QuantizeLinear only
 * and not a graph output, input and output types one type. ONNX Runtime then runs
 * the unit as the com.microsoft QLinear op, which kiln's converter of that op
 * (ops_contrib_quant.c) computes as ONNX Runtime's kernel does; a unit goes through
 * it. (A DequantizeLinear read elsewhere too still counts: ONNX Runtime first
 * duplicates it per reader, EnsureUniqueDQForNodeUnit.) Not taken here: a Relu or
 * Clip between the op and the QuantizeLinear that the QuantizeLinear makes
 * redundant, and QuantizeLinears that ONNX Runtime's QDQPropagationTransformer moves
 * up through Reshape / Transpose first. */
typedef struct qlinear_kind {
  const char *op, *qop;
  imp_convert_fn fn; /* NULL: QLinearSoftmax, at the model's opset */
  int n_dq;          /* inputs (all from DequantizeLinear); 0: one or more (Concat) */
  int drop;          /* ORT's DropQDQNodesRules: with the same scale and zero point on both
                      * sides, the op itself on the 8-bit values (qop NULL) */
} qlinear_kind;

static const qlinear_kind qlinear_kinds[] = {
    {"Add", "QLinearAdd", imp_cv_ms_QLinearAdd, 2, 0},
    {"Mul", "QLinearMul", imp_cv_ms_QLinearMul, 2, 0},
    {"AveragePool", "QLinearAveragePool", imp_cv_ms_QLinearAveragePool, 1, 0},
    {"GlobalAveragePool", "QLinearGlobalAveragePool", imp_cv_ms_QLinearGlobalAveragePool, 1, 0},
    {"Sigmoid", "QLinearSigmoid", imp_cv_ms_QLinearSigmoid, 1, 0},
    {"LeakyRelu", "QLinearLeakyRelu", imp_cv_ms_QLinearLeakyRelu, 1, 0},
    {"Softmax", "QLinearSoftmax", NULL, 1, 0},
    {"Concat", "QLinearConcat", imp_cv_ms_QLinearConcat, 0, 0},
    /* max commutes with the increasing map q → s·(q − z), and quantizing with the same
     * s and z gives q back: the max of the 8-bit values, exactly */
    {"MaxPool", NULL, NULL, 1, 1},
};

static const qlinear_kind *kind_of(const Onnx__NodeProto *n) {
  for (size_t i = 0; i < sizeof qlinear_kinds / sizeof *qlinear_kinds; i++)
    if (is_op(n, qlinear_kinds[i].op)) return &qlinear_kinds[i];
  return NULL;
}

/* The op's input count fits the kind, every input present. */
static int k_inputs_fit(const qlinear_kind *k, const Onnx__NodeProto *n) {
  if (k->n_dq ? n->n_input != (size_t)k->n_dq : n->n_input < 1) return 0;
  for (size_t j = 0; j < n->n_input; j++)
    if (!named(n->input[j])) return 0;
  return 1;
}

/* Counts, per producing node, the inputs that read one of its outputs: in this
 * graph's nodes and, conservatively (a subgraph may shadow the name), in their
 * subgraphs. 0, or -1 when nesting goes deeper than any real model (no units). */
static int count_readers(imp_qdq_plan *p, Onnx__NodeProto *const *nodes, size_t n, int depth) {
  if (depth > 64) return -1;
  for (size_t i = 0; i < n; i++) {
    const Onnx__NodeProto *np = nodes[i];
    if (!np) continue;
    for (size_t j = 0; j < np->n_input; j++) {
      long d = producer(p, np->input[j]);
      if (d >= 0) p->readers[d]++;
    }
    for (size_t a = 0; a < np->n_attribute; a++) {
      const Onnx__AttributeProto *at = np->attribute[a];
      if (!at) continue;
      if (at->g && count_readers(p, (Onnx__NodeProto *const *)at->g->node, at->g->n_node, depth + 1) < 0) return -1;
      for (size_t k = 0; k < at->n_graphs; k++)
        if (at->graphs[k] &&
            count_readers(p, (Onnx__NodeProto *const *)at->graphs[k]->node, at->graphs[k]->n_node, depth + 1) < 0)
          return -1;
    }
  }
  return 0;
}

static int is_graph_output(const Onnx__GraphProto *gp, const char *name) {
  for (size_t i = 0; i < gp->n_output; i++)
    if (gp->output[i] && named(gp->output[i]->name) && !strcmp(gp->output[i]->name, name)) return 1;
  return 0;
}

int imp_qdq_plan_build(imp_ctx *c, const Onnx__GraphProto *gp, imp_qdq_plan *p) {
  memset(p, 0, sizeof *p);
  size_t n = gp->n_node, n_outs = 0;
  Onnx__NodeProto *const *nodes = (Onnx__NodeProto *const *)gp->node;
  for (size_t i = 0; i < n; i++)
    if (nodes[i]) n_outs += nodes[i]->n_output;
  p->n_nodes = n;
  p->role = gir_arena_calloc(c->g->arena, n + 1, sizeof *p->role);
  p->op_of = gir_arena_calloc(c->g->arena, n + 1, sizeof *p->op_of);
  p->readers = gir_arena_calloc(c->g->arena, n + 1, sizeof *p->readers);
  p->outs = gir_arena_calloc(c->g->arena, n_outs + 1, sizeof *p->outs);
  if (!p->role || !p->op_of || !p->readers || !p->outs) return imp_fail(c, "out of memory");
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; nodes[i] && j < nodes[i]->n_output; j++)
      if (named(nodes[i]->output[j])) p->outs[p->n_outs++] = (imp_qdq_out){nodes[i]->output[j], (int32_t)i};
  qsort(p->outs, p->n_outs, sizeof *p->outs, out_cmp);
  if (count_readers(p, nodes, n, 0) < 0) return 0; /* no units */
  for (size_t q = 0; q < n; q++) {
    const Onnx__NodeProto *qn = nodes[q];
    if (!is_op(qn, "QuantizeLinear") || qn->n_input < 2 || qn->n_output != 1) continue;
    long o = producer(p, qn->input[0]);
    if (o < 0 || (size_t)o >= q || p->role[o]) continue;
    const Onnx__NodeProto *on = nodes[o];
    int conv = is_op(on, "Conv"), mm = is_op(on, "MatMul"), gemm = is_op(on, "Gemm");
    const qlinear_kind *k = kind_of(on);
    if (on->n_output != 1) continue;
    if (k ? !k_inputs_fit(k, on)
          : (!conv && !mm && !gemm) || on->n_input < 2 || (mm && on->n_input != 2) || on->n_input > 3)
      continue;
    if (is_graph_output(gp, on->output[0]) || p->readers[o] != 1) continue;
    int ok = 1;
    for (size_t j = 0; j < on->n_input && ok; j++) {
      long d = producer(p, on->input[j]);
      ok = d >= 0 && d < o && is_op(nodes[d], "DequantizeLinear");
    }
    if (!ok) continue;
    p->role[o] = IMP_QDQ_SKIPPED;
    p->role[q] = IMP_QDQ_QUANTIZE;
    p->op_of[q] = (int32_t)o;
    p->units++;
  }
  /* LayerNormalizations of a quantized model, X from a DequantizeLinear (layer_norm's
   * attribute ort, te/compute_reduce.c) */
  for (size_t i = 0; i < n; i++) {
    const Onnx__NodeProto *ln = nodes[i];
    if (!is_op(ln, "LayerNormalization") || ln->n_input < 1 || p->role[i]) continue;
    long d = producer(p, ln->input[0]);
    if (d >= 0 && is_op(nodes[d], "DequantizeLinear")) p->role[i] = IMP_QDQ_ORT_FLOAT;
  }
  return 0;
}

/* The DequantizeLinear node that produces `name` (the plan made sure there is one). */
static const Onnx__NodeProto *dq_of(const imp_qdq_plan *p, Onnx__NodeProto *const *nodes, const char *name) {
  long d = producer(p, name);
  return d >= 0 ? nodes[d] : NULL;
}

static gir_value *lookup(imp_ctx *c, const Onnx__NodeProto *np, size_t i) {
  gir_value *v = NULL;
  if (i >= np->n_input || !named(np->input[i])) return NULL;
  return imp_scope_lookup(c, np->input[i], &v) == 1 ? v : NULL;
}

/* The importer's typed attribute access (attrs.c) on a node not being converted. */
static int64_t attr_int(const Onnx__NodeProto *np, const char *name, int64_t def) {
  imp_node v = {.proto = np};
  return imp_attr_int(&v, name, def);
}

static double attr_float(const Onnx__NodeProto *np, const char *name, double def) {
  imp_node v = {.proto = np};
  return imp_attr_float(&v, name, def);
}

static int is_8bit(gir_dtype t) { return t == GIR_U8 || t == GIR_I8; }

/* DequantizeLinear's own parameters fit a QLinear op: no blocks, x 8-bit, scale
 * float32 constant, zero point constant of x's type. */
static int dq_params(const Onnx__NodeProto *dq, gir_value *x, gir_value *s, gir_value *zp, int const_x) {
  if (attr_int(dq, "block_size", 0)) return 0;
  if (!x || !is_8bit(x->dtype) || (const_x && !x->data)) return 0;
  if (!s || !s->data || s->dtype != GIR_F32) return 0;
  return !zp || (zp->data && zp->dtype == x->dtype);
}

/* The int32 bias of a QDQ conv: DequantizeLinear of an int32 constant with zero
 * point 0 and scale x_scale · w_scale (per channel, as the quantizer writes it). */
static gir_value *qdq_bias(imp_ctx *c, const Onnx__NodeProto *dq, float xs, const gir_value *ws, int64_t m) {
  gir_value *b = lookup(c, dq, 0), *s = lookup(c, dq, 1), *zp = lookup(c, dq, 2);
  if (!b || !b->data || b->dtype != GIR_I32 || b->shape.rank != 1 || b->shape.dims[0] != m) return NULL;
  if (!s || !s->data || s->dtype != GIR_F32 || !imp_zero_or_absent(zp)) return NULL;
  int64_t ns = gir_value_numel(s), nw = gir_value_numel(ws);
  if ((ns != 1 && ns != m) || (nw != 1 && nw != m)) return NULL;
  const float *sv = s->data, *wv = ws->data;
  for (int64_t i = 0; i < m; i++) {
    float want = xs * wv[nw == 1 ? 0 : i], have = sv[ns == 1 ? 0 : i];
    if (!(fabsf(want - have) <= 1e-6f * fabsf(want))) return NULL;
  }
  return b;
}

/* A unit of the other kinds (qlinear_kinds) through its QLinear op's converter; 1
 * done, 0 unfit (nothing emitted), -1 error. Fit: per-tensor constant scales (float32)
 * and zero points of one 8-bit type throughout, the QuantizeLinear's zero point given
 * (it sets the output type), a pool's input of rank >= 3. */
/* One constant scalar, its value as a double in *out. */
static int scalar_const(const gir_value *v, double *out) {
  if (!v || !v->data || gir_value_numel(v) != 1) return 0;
  *out = gir_load_f64(v->dtype, v->data, 0);
  return 1;
}

/* A drop kind: the op on the DequantizeLinear's 8-bit input, named as the QuantizeLinear's
 * output, when both sides have one scale and zero point, the same (else 0: node by node). */
static int convert_drop(imp_ctx *c, const imp_qdq_plan *p, Onnx__NodeProto *const *nodes, const Onnx__NodeProto *on,
                        const Onnx__NodeProto *qn) {
  const Onnx__NodeProto *dq = dq_of(p, nodes, on->input[0]);
  gir_value *x = lookup(c, dq, 0), *s = lookup(c, dq, 1), *zp = lookup(c, dq, 2);
  gir_value *ys = lookup(c, qn, 1), *yzp = lookup(c, qn, 2);
  double sv, ysv, zv = 0, yzv = 0;
  if (!dq_params(dq, x, s, zp, 0) || !scalar_const(s, &sv) || !scalar_const(ys, &ysv) || sv != ysv || !(sv > 0)) return 0;
  if ((zp && !scalar_const(zp, &zv)) || !yzp || !scalar_const(yzp, &yzv) || zv != yzv || yzp->dtype != x->dtype)
    return 0;
  if (attr_int(qn, "block_size", 0) || attr_int(dq, "block_size", 0)) return 0;
  imp_convert_fn fn = imp_find_converter(on->op_type, c->opset);
  if (!fn) return 0;
  gir_value *in[1] = {x};
  imp_node u = {.proto = on, .op_type = on->op_type, .name = on->name, .opset = c->opset, .n_in = 1, .in = in,
                .n_out = 1, .out_names = (const char *const *)qn->output};
  u.out = gir_arena_calloc(c->g->arena, 2, sizeof *u.out);
  u.out_kind = gir_arena_calloc(c->g->arena, 2, sizeof *u.out_kind);
  if (!u.out || !u.out_kind) return imp_fail(c, "out of memory");
  return fn(c, &u) < 0 ? -1 : 1;
}

static int convert_qlinear(imp_ctx *c, const imp_qdq_plan *p, Onnx__NodeProto *const *nodes,
                           const Onnx__NodeProto *on, const Onnx__NodeProto *qn, const qlinear_kind *k) {
  if (k->drop) return convert_drop(c, p, nodes, on, qn);
  size_t n_dq = on->n_input;
  int32_t n_in = (int32_t)(3 * n_dq + 2);
  gir_value **in = gir_arena_calloc(c->g->arena, (size_t)n_in, sizeof *in);
  if (!in) return imp_fail(c, "out of memory");
  int concat = k->n_dq == 0;
  gir_dtype t = GIR_F32;
  for (size_t j = 0; j < n_dq; j++) {
    const Onnx__NodeProto *dq = dq_of(p, nodes, on->input[j]);
    gir_value *x = lookup(c, dq, 0), *s = lookup(c, dq, 1), *zp = lookup(c, dq, 2);
    if (!dq_params(dq, x, s, zp, 0) || gir_value_numel(s) != 1 || (zp && gir_value_numel(zp) != 1)) return 0;
    if (j > 0 && x->dtype != t) return 0;
    t = x->dtype;
    size_t at = concat ? 2 + 3 * j : 3 * j; /* QLinearConcat: Y's parameters first */
    in[at] = x, in[at + 1] = s, in[at + 2] = zp;
  }
  gir_value *ys = lookup(c, qn, 1), *yzp = lookup(c, qn, 2);
  if (!ys || !ys->data || ys->dtype != GIR_F32 || gir_value_numel(ys) != 1 || attr_int(qn, "block_size", 0)) return 0;
  if (!yzp || !yzp->data || yzp->dtype != t || gir_value_numel(yzp) != 1) return 0;
  if ((is_op(on, "AveragePool") || is_op(on, "GlobalAveragePool")) && in[0]->shape.rank < 3) return 0;
  size_t yat = concat ? 0 : 3 * n_dq;
  in[yat] = ys, in[yat + 1] = yzp;
  imp_node u = {.proto = on, .op_type = k->qop, .name = on->name, .opset = c->opset, .n_in = n_in, .in = in,
                .n_out = 1, .out_names = (const char *const *)qn->output};
  u.out = gir_arena_calloc(c->g->arena, 2, sizeof *u.out);
  u.out_kind = gir_arena_calloc(c->g->arena, 2, sizeof *u.out_kind);
  if (!u.out || !u.out_kind) return imp_fail(c, "out of memory");
  int rc = k->fn ? k->fn(c, &u) : imp_qlinear_softmax(c, &u, c->opset);
  return rc < 0 ? -1 : 1;
}

/* Tries the fused conversion; 1 done, 0 unfit (nothing emitted), -1 error. */
static int convert_unit(imp_ctx *c, const imp_qdq_plan *p, Onnx__NodeProto *const *nodes, const Onnx__NodeProto *on,
                        const Onnx__NodeProto *qn) {
  const qlinear_kind *k = kind_of(on);
  if (k) return convert_qlinear(c, p, nodes, on, qn, k);
  const Onnx__NodeProto *dqx = dq_of(p, nodes, on->input[0]), *dqw = dq_of(p, nodes, on->input[1]);
  gir_value *x = lookup(c, dqx, 0), *xs = lookup(c, dqx, 1), *xzp = lookup(c, dqx, 2);
  gir_value *w = lookup(c, dqw, 0), *ws = lookup(c, dqw, 1), *wzp = lookup(c, dqw, 2);
  gir_value *ys = lookup(c, qn, 1), *yzp = lookup(c, qn, 2);
  int conv = is_op(on, "Conv"), gemm = is_op(on, "Gemm");
  /* a conv's (a Gemm's) weights are constants with zero points 0 (as the quantizer
   * writes them); a matmul's right operand may be computed (attention's K and V) with
   * any zero point */
  int cw = conv || gemm;
  if (!dq_params(dqx, x, xs, xzp, 0) || !dq_params(dqw, w, ws, wzp, cw) || (cw && !imp_zero_or_absent(wzp))) return 0;
  if (gir_value_numel(xs) != 1 || (xzp && gir_value_numel(xzp) != 1)) return 0;
  if (!ys || !ys->data || ys->dtype != GIR_F32 || gir_value_numel(ys) != 1) return 0;
  if (yzp && (!yzp->data || !is_8bit(yzp->dtype) || gir_value_numel(yzp) != 1)) return 0;
  if (attr_int(qn, "block_size", 0)) return 0;
  if (!yzp) return 0; /* the quantizer always writes one; without, the output type needs output_dtype */
  int64_t trans_b = gemm ? attr_int(on, "transB", 0) : 0;
  if (gemm) { /* y = x · w(ᵀ) + bias only: no scaling, x not transposed */
    if (attr_int(on, "transA", 0) || attr_float(on, "alpha", 1.0) != 1.0 || attr_float(on, "beta", 1.0) != 1.0) return 0;
    if (x->shape.rank != 2 || w->shape.rank != 2) return 0;
  }
  int r = w->shape.rank;
  int64_t waxis = attr_int(dqw, "axis", 1);
  if (waxis < 0) waxis += r;
  int64_t nws = gir_value_numel(ws);
  /* per channel: a conv along the output channels, a matmul along the columns (a Gemm's
   * transposed weight: along its rows) */
  int64_t want_axis = conv || (gemm && trans_b) ? 0 : r - 1;
  if (nws != 1 && (ws->shape.rank != 1 || r < 2 || waxis != want_axis || nws != w->shape.dims[waxis])) return 0;
  if (!conv && (w->shape.rank < 2 || x->shape.rank < 2 || (nws != 1 && w->shape.rank != 2))) return 0;
  gir_value *bias = NULL;
  if (cw && on->n_input == 3 && named(on->input[2])) {
    const Onnx__NodeProto *dqb = dq_of(p, nodes, on->input[2]);
    bias = qdq_bias(c, dqb, ((const float *)xs->data)[0], ws, w->shape.dims[want_axis]);
    if (!bias) return 0;
  }
  gir_value *in[9] = {x, xs, xzp, w, ws, wzp, ys, yzp, bias};
  imp_node u = {.proto = on, .op_type = conv ? "QLinearConv" : "QLinearMatMul", .name = on->name, .opset = c->opset,
                .n_in = conv ? 9 : 8, .n_out = 1, .out_names = (const char *const *)qn->output};
  u.in = in;
  u.out = gir_arena_calloc(c->g->arena, 2, sizeof *u.out);
  u.out_kind = gir_arena_calloc(c->g->arena, 2, sizeof *u.out_kind);
  if (!u.out || !u.out_kind) return imp_fail(c, "out of memory");
  if (conv) return imp_cv_QLinearConv(c, &u) < 0 ? -1 : 1;
  if (gemm && trans_b) {
    int64_t perm[2] = {1, 0};
    if (!(w = imp_transpose(c, w, perm))) return -1;
  }
  gir_value *y = imp_qlinear_matmul(c, x, xs, xzp, w, ws, wzp, ys, yzp, bias);
  return y && imp_set_output(c, &u, 0, y) == 0 ? 1 : -1;
}

int imp_qdq_convert(imp_ctx *c, const imp_qdq_plan *p, Onnx__NodeProto *const *nodes, size_t q) {
  size_t o = (size_t)p->op_of[q];
  const char *saved = c->origin;
  c->origin = gir_arena_printf(c->g->arena, "%s '%s' (QDQ unit, opset %lld)", nodes[o]->op_type,
                               named(nodes[o]->name) ? nodes[o]->name : "?", (long long)c->opset);
  int rc = convert_unit(c, p, nodes, nodes[o], nodes[q]);
  if (rc < 0 && strncmp(c->err->msg, c->origin, strlen(c->origin))) gir_err_prefix(c->err, "%s", c->origin);
  c->origin = saved;
  return rc;
}
