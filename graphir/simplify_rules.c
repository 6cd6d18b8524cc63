/* simplify_rules.c — the graph rewrite rules, as data. Each row of the table at
 * the bottom is one rule: the op (and unary/binary function) it applies to, the
 * element types, what its operands must be (anything, a constant of a given
 * value, the output of a given op), a few flags (commutative, same operands,
 * "the result has x's type and shape"), the rewrite, and the algebra it applies.
 * The engine (simplify.c) runs them to a fixed point.
 *
 * What is deliberately not here: x*0 → 0 and x-x → 0 on floats (NaN*0, inf*0
 * and inf-inf are NaN), and cast chains that lose information (float → int →
 * float rounds). x+0 → x on floats loses only the sign of a zero x (-0+0 is +0),
 * which every ML compiler accepts.
 *
 * The per-channel folds move an affine op that follows a conv (conv_transpose,
 * matmul) into the producer's constant weights: BatchNormalization arrives as
 * conv → sub(mean) → mul(factor) → add(bias), all on per-channel constants,
 * and leaves as one conv with scaled weights and a bias. The new weights are
 * graph nodes on the old ones (mul, reshape), folded at once when the engine has
 * an evaluator, or later by gir_fold_constants: the fold path evaluates them
 * through the compute definitions, the single statement of each op's meaning. */
#include <math.h>
#include <string.h>
#include "simplify.h"

/* --- rewrites --- */

/* The node computes x: its consumers read x instead. */
static int rw_x(gir_sx *s, gir_node *n, const gir_match *m) { return gir_sx_replace_node(s, n, m->x); }

/* x^3 → x·x·x for a float x and a constant exponent that is 3 everywhere (GELU's tanh
 * form): two multiplications, within an ulp of pow, instead of a libm call per
 * element. The output keeps x's shape (a broadcast exponent would widen it). */
static int rw_cube(gir_sx *s, gir_node *n, const gir_match *m) {
  const gir_value *k = m->k;
  if (!k->data || !gir_shape_equal(&m->x->shape, &n->out[0]->shape) || k->dtype != m->x->dtype) return 0;
  for (int64_t i = 0; i < gir_value_numel(k); i++)
    if (gir_load_f64(k->dtype, k->data, i) != 3.0) return 0;
  gir_value *xx[2] = {m->x, m->x};
  gir_value *sq = gir_sx_node(s, GIR_OP_binary, GIR_BINARY_MUL, xx, 2, n);
  if (!sq) return -1;
  gir_value *cu[2] = {sq, m->x};
  gir_value *y = gir_sx_node(s, GIR_OP_binary, GIR_BINARY_MUL, cu, 2, n);
  return y ? gir_sx_replace_node(s, n, y) : -1;
}

/* The node computes zeros of its own type and shape. */
static int rw_zeros(gir_sx *s, gir_node *n, const gir_match *m) {
  (void)m;
  if (n->out[0]->is_output) return 0; /* a constant cannot carry an output's name */
  return gir_sx_replace_node(s, n, gir_sx_zeros(s, n->out[0]->dtype, &n->out[0]->shape));
}

/* f(f(y)) = y for an involution f: the consumers read y. */
static int rw_involution(gir_sx *s, gir_node *n, const gir_match *m) {
  gir_value *y = m->x->producer->in[0];
  if (y->dtype != n->out[0]->dtype || !gir_shape_equal(&y->shape, &n->out[0]->shape)) return 0;
  return gir_sx_replace_node(s, n, y);
}

static int rw_transpose_noop(gir_sx *s, gir_node *n, const gir_match *m) {
  int32_t r;
  const int64_t *perm = gir_attr_ints(n, "perm", &r);
  for (int i = 0; i < r; i++)
    if (perm[i] != i) return 0;
  return gir_sx_replace_node(s, n, m->x);
}

static int rw_pad_noop(gir_sx *s, gir_node *n, const gir_match *m) {
  int32_t r;
  const int64_t *pads = gir_attr_ints(n, "pads", &r);
  for (int i = 0; i < r; i++)
    if (pads[i]) return 0;
  return gir_sx_replace_node(s, n, m->x);
}

/* Every axis reads 0, 1, 2… (a size-1 axis reads index 0 whatever its step). */
static int rw_slice_noop(gir_sx *s, gir_node *n, const gir_match *m) {
  int32_t r1, r2, r3;
  const int64_t *st = gir_attr_ints(n, "starts", &r1), *sp = gir_attr_ints(n, "steps", &r2),
                *sz = gir_attr_ints(n, "sizes", &r3);
  const gir_shape *x = &m->x->shape;
  if (r1 != x->rank || r2 != x->rank || r3 != x->rank) return 0;
  for (int i = 0; i < x->rank; i++) {
    if (sz[i] != x->dims[i]) return 0;
    if (sz[i] > 0 && st[i] != 0) return 0;
    if (sz[i] > 1 && sp[i] != 1) return 0;
  }
  return gir_sx_replace_node(s, n, m->x);
}

static int rw_where_same(gir_sx *s, gir_node *n, const gir_match *m) {
  (void)m;
  gir_value *a = n->in[1];
  if (a != n->in[2] || a->dtype != n->out[0]->dtype || !gir_shape_equal(&a->shape, &n->out[0]->shape)) return 0;
  return gir_sx_replace_node(s, n, a);
}

/* reshape(reshape(y, s), t) reads y directly: a reshape only relabels. */
static int rw_reshape_chain(gir_sx *s, gir_node *n, const gir_match *m) {
  gir_sx_set_input(s, n, 0, m->x->producer->in[0]);
  return 1;
}

/* transpose(transpose(y, p), q): out[i] = mid[q[i]] = y[p[q[i]]]. */
static int rw_transpose_chain(gir_sx *s, gir_node *n, const gir_match *m) {
  gir_node *inner = m->x->producer;
  int32_t rp, rq;
  const int64_t *p = gir_attr_ints(inner, "perm", &rp), *q = gir_attr_ints(n, "perm", &rq);
  if (rp != rq || rq > GIR_MAX_RANK) return 0;
  int64_t c[GIR_MAX_RANK];
  for (int i = 0; i < rq; i++) c[i] = p[q[i]];
  gir_attr_set_ints(gir_sx_graph(s), n, "perm", c, rq);
  gir_sx_set_input(s, n, 0, inner->in[0]);
  return 1;
}

/* Mantissa digits of a float type (integers up to 2^digits are exact). */
static int float_digits(gir_dtype t) {
  switch (t) {
  case GIR_F16: return 11;
  case GIR_BF16: return 8;
  case GIR_F32: return 24;
  case GIR_F64: return 53;
  default: return 0;
  }
}

/* Whether every value of type a is exactly a value of type b. */
static int cast_exact(gir_dtype a, gir_dtype b) {
  if (a == b || a == GIR_BOOL) return 1; /* bool: 0 and 1 exist everywhere */
  if (b == GIR_BOOL) return 0;
  int fa = gir_dtype_is_float(a), fb = gir_dtype_is_float(b);
  if (fa && fb) /* more digits, and range: bfloat16's and float8e8m0's reach beyond float16's (the
                  * float8/float4 types count 0 digits: nothing is exact in them) */
    return float_digits(b) > float_digits(a) && !((a == GIR_BF16 || a == GIR_F8E8M0) && b == GIR_F16);
  if (fa) return 0; /* float → int truncates */
  int sa = gir_dtype_is_signed(a), sb = gir_dtype_is_signed(b), bits = gir_dtype_bits(a) - sa;
  if (fb) return float_digits(b) >= bits;
  if (sa && !sb) return 0;
  return gir_dtype_bits(b) - sb >= bits;
}

/* cast(cast(y: A, B), C) = cast(y, C) when the first cast keeps every value:
 * a cast is a function of the value, not of the type it is carried in. */
static int rw_cast_chain(gir_sx *s, gir_node *n, const gir_match *m) {
  gir_node *inner = m->x->producer;
  if (!cast_exact(inner->in[0]->dtype, m->x->dtype)) return 0;
  gir_sx_set_input(s, n, 0, inner->in[0]);
  return 1;
}

/* A scalar float32 constant (one element): its value. */
static int f32_scalar(const gir_value *v, double *out) {
  if (!v || !v->data || v->dtype != GIR_F32 || gir_value_numel(v) != 1) return 0;
  *out = gir_load_f64(GIR_F32, v->data, 0);
  return 1;
}

/* v = op(x, c) with c a float32 scalar constant: x (and *c), else NULL. */
static gir_value *with_const(const gir_value *v, gir_op op, int fn, double *c) {
  const gir_node *p = v ? v->producer : NULL;
  if (!p || p->op != op || p->n_in != 2 || gir_attr_int(p, "fn", -1) != fn || !f32_scalar(p->in[1], c)) return NULL;
  return p->in[0];
}

/* QuantizeLinear of DequantizeLinear with the same scale s and zero point z, on the
 * quantized type T itself:
 *   cast_T(min(max(round(((float(q) − z)·s)/s) + z, lo_T), hi_T))  →  q
 * (a quantized model's Q/DQ pairs around a Reshape; a reshape between the halves is
 * allowed and moves onto q). Exact: q − z
 * is a small integer, the product and the quotient round twice by at most 2^-24
 * relatively, far from a half, so round gives q − z back, and adding z, the clamp
 * to T's own range and the cast change nothing — for a normal, finite s. A zero z
 * has neither sub nor add (x ± 0 was simplified away). */
static int rw_requant_roundtrip(gir_sx *s, gir_node *n, const gir_match *m) {
  gir_dtype t = n->out[0]->dtype;
  double lo_t = t == GIR_U8 ? 0 : -128, hi_t = t == GIR_U8 ? 255 : 127, hi, lo, z2 = 0, s2, s1, z1 = 0;
  if (t != GIR_U8 && t != GIR_I8) return 0;
  gir_value *v = with_const(m->x, GIR_OP_binary, GIR_BINARY_MIN, &hi);
  v = v ? with_const(v, GIR_OP_binary, GIR_BINARY_MAX, &lo) : NULL;
  if (!v || hi != hi_t || lo != lo_t) return 0;
  gir_value *r = with_const(v, GIR_OP_binary, GIR_BINARY_ADD, &z2);
  if (!r) r = v, z2 = 0;
  const gir_node *rn = r->producer;
  if (!rn || rn->op != GIR_OP_unary || gir_attr_int(rn, "fn", -1) != GIR_UNARY_ROUND) return 0;
  gir_value *d = with_const(rn->in[0], GIR_OP_binary, GIR_BINARY_DIV, &s2);
  /* a reshape between the two (the quantizer's Q/DQ pair around a Reshape): element-wise
   * work commutes with it, q is reshaped instead */
  if (d && d->producer && d->producer->op == GIR_OP_reshape) d = d->producer->in[0];
  gir_value *g = d ? with_const(d, GIR_OP_binary, GIR_BINARY_MUL, &s1) : NULL;
  if (!g || s1 != s2 || !(fabs(s1) > 1e-30 && fabs(s1) < 1e30)) return 0;
  gir_value *h = with_const(g, GIR_OP_binary, GIR_BINARY_SUB, &z1);
  if (!h) h = g, z1 = 0;
  const gir_node *c = h->producer;
  if (z1 != z2 || !c || c->op != GIR_OP_cast || h->dtype != GIR_F32) return 0;
  gir_value *q = c->in[0];
  const gir_shape *os = &n->out[0]->shape;
  if (q->dtype != t || gir_value_numel(q) != gir_value_numel(n->out[0])) return 0;
  if (!gir_shape_equal(&q->shape, os) && !(q = gir_sx_reshape(s, q, os->rank, os->dims, n))) return -1;
  return gir_sx_replace_node(s, n, q);
}

/* The extent along `axis` of a constant k that broadcasts against y only
 * along that axis (1 or y's extent there), or -1 if it is not per-channel. */
static int64_t channel_extent(const gir_shape *y, const gir_value *k, int axis) {
  if (k->shape.rank > y->rank) return -1;
  int64_t ext = 1;
  for (int j = 0; j < k->shape.rank; j++) {
    int a = y->rank - k->shape.rank + j;
    int64_t d = k->shape.dims[j];
    if (a == axis && (d == 1 || d == y->dims[a])) ext = d;
    else if (d != 1) return -1;
  }
  return ext;
}

/* p's weight input scaled by s (extent cm, 1 or the channel count) per output
 * channel. conv weights are [M, C/g, k…]: output channel m is row m.
 * conv_transpose weights are [C, M/g, k…]: output channel gi*(M/g)+j is column
 * j of group gi's rows, hence the detour through [g, C/g, M/g, k…] when g > 1.
 * matmul weights are [… K, N]: output column n is column n. */
static gir_value *scaled_weights(gir_sx *s, gir_node *p, gir_value *sv, int64_t cm) {
  gir_value *w = p->in[1];
  int32_t r = w->shape.rank;
  int64_t d[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) d[i] = 1;
  if (p->op == GIR_OP_matmul) {
    d[0] = cm;
    gir_value *ins[2] = {w, gir_sx_reshape(s, sv, 1, d, p)};
    return ins[1] ? gir_sx_node(s, GIR_OP_binary, GIR_BINARY_MUL, ins, 2, p) : NULL;
  }
  int64_t group = gir_attr_int(p, "group", 1);
  if (p->op == GIR_OP_conv || cm == 1 || group == 1) {
    d[p->op == GIR_OP_conv ? 0 : 1] = cm;
    gir_value *ins[2] = {w, gir_sx_reshape(s, sv, r, d, p)};
    return ins[1] ? gir_sx_node(s, GIR_OP_binary, GIR_BINARY_MUL, ins, 2, p) : NULL;
  }
  int64_t wd[GIR_MAX_RANK], sd[GIR_MAX_RANK];
  wd[0] = sd[0] = group;
  wd[1] = w->shape.dims[0] / group;
  sd[1] = 1;
  wd[2] = sd[2] = w->shape.dims[1];
  for (int i = 2; i < r; i++) {
    wd[i + 1] = w->shape.dims[i];
    sd[i + 1] = 1;
  }
  gir_value *ins[2] = {gir_sx_reshape(s, w, r + 1, wd, p), gir_sx_reshape(s, sv, r + 1, sd, p)};
  if (!ins[0] || !ins[1]) return NULL;
  gir_value *prod = gir_sx_node(s, GIR_OP_binary, GIR_BINARY_MUL, ins, 2, p);
  return prod ? gir_sx_reshape(s, prod, r, w->shape.dims, p) : NULL;
}

/* y = p(x, w, b) followed by y ∘ t with t per output channel, where ∘ is mul,
 * add or sub and y has no other consumer: the affine map moves into p's
 * constant weights and bias (a bias of zeros is created when p has none). */
static int rw_fold_affine(gir_sx *s, gir_node *n, const gir_match *m) {
  gir_value *y = m->x, *t = m->k;
  gir_node *p = y->producer;
  gir_binary_fn fn = (gir_binary_fn)gir_attr_int(n, "fn", -1);
  int axis = p->op == GIR_OP_matmul ? y->shape.rank - 1 : 1;
  gir_value *w = p->in[1], *b = p->n_in > 2 ? p->in[2] : NULL;
  if (t->dtype != y->dtype || y->is_output || gir_sx_uses(s, y) != 1) return 0;
  if (!gir_sx_const_derived(t) || !gir_sx_const_derived(w) || (b && !gir_sx_const_derived(b))) return 0;
  if (p->op == GIR_OP_matmul && fn != GIR_BINARY_MUL) return 0; /* matmul has no bias to absorb a shift */
  if (w->dtype != y->dtype || (b && b->dtype != y->dtype)) return 0;
  int64_t cm = channel_extent(&y->shape, t, axis), nch = y->shape.dims[axis];
  if (cm < 0) return 0;
  if (p->op == GIR_OP_conv_transpose && cm > 1 && gir_attr_int(p, "group", 1) > 1 &&
      w->shape.rank + 1 > GIR_MAX_RANK)
    return 0;
  gir_value *tv = gir_sx_reshape(s, t, 1, &cm, n);
  if (!tv) return -1;
  gir_value *nw = w, *nb = b;
  if (fn == GIR_BINARY_MUL) {
    if (!(nw = scaled_weights(s, p, tv, cm))) return -1;
    if (b) {
      gir_value *ins[2] = {b, tv};
      if (!(nb = gir_sx_node(s, GIR_OP_binary, GIR_BINARY_MUL, ins, 2, n))) return -1;
    }
  } else {
    gir_shape bs = {.rank = 1, .dims = {nch}};
    gir_value *ins[2] = {b ? b : gir_sx_zeros(s, y->dtype, &bs), tv};
    if (!(nb = gir_sx_node(s, GIR_OP_binary, fn, ins, 2, n))) return -1;
  }
  gir_sx_set_input(s, p, 1, nw);
  if (nb) gir_sx_set_input(s, p, 2, nb);
  return gir_sx_replace_node(s, n, y) ? 1 : -1; /* y is no output: the output name can always move to it */
}

/* --- the rules --- */

#define ANY {GIR_PAT_ANY, GIR_OP_COUNT, -1}
#define CONST {GIR_PAT_CONST, GIR_OP_COUNT, -1}
#define ZERO {GIR_PAT_ZERO, GIR_OP_COUNT, -1}
#define ONE {GIR_PAT_ONE, GIR_OP_COUNT, -1}
#define ALL_BITS {GIR_PAT_ALL_BITS, GIR_OP_COUNT, -1}
#define FROM(op, fn) {GIR_PAT_FROM, GIR_OP_##op, fn}
#define BIN(f) GIR_OP_binary, GIR_BINARY_##f
#define UN(f) GIR_OP_unary, GIR_UNARY_##f
#define OP(o) GIR_OP_##o, -1
#define COMMUTE GIR_RULE_COMMUTE
#define SAME GIR_RULE_SAME
#define KEEPS_X GIR_RULE_KEEPS_X
#define T(c) GIR_TYPES_##c

static const gir_rule rules[] = {
  /* arithmetic identities */
  {"add_zero",      BIN(ADD),  T(ANY),   {ANY, ZERO},     COMMUTE | KEEPS_X, rw_x,     "x+0 → x"},
  {"sub_zero",      BIN(SUB),  T(ANY),   {ANY, ZERO},     KEEPS_X,           rw_x,     "x-0 → x"},
  {"mul_one",       BIN(MUL),  T(ANY),   {ANY, ONE},      COMMUTE | KEEPS_X, rw_x,     "x*1 → x"},
  {"div_one",       BIN(DIV),  T(ANY),   {ANY, ONE},      KEEPS_X,           rw_x,     "x/1 → x"},
  {"pow_one",       BIN(POW),  T(ANY),   {ANY, ONE},      KEEPS_X,           rw_x,     "x^1 → x"},
  {"pow_three",     BIN(POW),  T(FLOAT), {ANY, ANY},      0,                 rw_cube,  "x^3 → x*x*x (floats, within an ulp)"},
  {"mul_zero",      BIN(MUL),  T(INT),   {ANY, ZERO},     COMMUTE,           rw_zeros, "x*0 → 0 (integers only: NaN*0 is NaN)"},
  {"sub_self",      BIN(SUB),  T(INT),   {ANY, ANY},      SAME,              rw_zeros, "x-x → 0 (integers only: inf-inf is NaN)"},
  {"max_self",      BIN(MAX),  T(ANY),   {ANY, ANY},      SAME | KEEPS_X,    rw_x,     "max(x,x) → x"},
  {"min_self",      BIN(MIN),  T(ANY),   {ANY, ANY},      SAME | KEEPS_X,    rw_x,     "min(x,x) → x"},
  /* logic and bits */
  {"and_true",      BIN(AND),  T(BOOL),  {ANY, ALL_BITS}, COMMUTE | KEEPS_X, rw_x,     "x∧true → x"},
  {"or_false",      BIN(OR),   T(BOOL),  {ANY, ZERO},     COMMUTE | KEEPS_X, rw_x,     "x∨false → x"},
  {"and_self",      BIN(AND),  T(BOOL),  {ANY, ANY},      SAME | KEEPS_X,    rw_x,     "x∧x → x"},
  {"or_self",       BIN(OR),   T(BOOL),  {ANY, ANY},      SAME | KEEPS_X,    rw_x,     "x∨x → x"},
  {"bitand_ones",   BIN(BITAND), T(INT), {ANY, ALL_BITS}, COMMUTE | KEEPS_X, rw_x,     "x&~0 → x"},
  {"bitand_zero",   BIN(BITAND), T(INT), {ANY, ZERO},     COMMUTE,           rw_zeros, "x&0 → 0"},
  {"bitand_self",   BIN(BITAND), T(INT), {ANY, ANY},      SAME | KEEPS_X,    rw_x,     "x&x → x"},
  {"bitor_zero",    BIN(BITOR),  T(INT), {ANY, ZERO},     COMMUTE | KEEPS_X, rw_x,     "x|0 → x"},
  {"bitor_self",    BIN(BITOR),  T(INT), {ANY, ANY},      SAME | KEEPS_X,    rw_x,     "x|x → x"},
  {"bitxor_zero",   BIN(BITXOR), T(INT), {ANY, ZERO},     COMMUTE | KEEPS_X, rw_x,     "x^0 → x"},
  {"bitxor_self",   BIN(BITXOR), T(INT), {ANY, ANY},      SAME,              rw_zeros, "x^x → 0"},
  {"shl_zero",      BIN(SHL),  T(INT),   {ANY, ZERO},     KEEPS_X,           rw_x,     "x<<0 → x"},
  {"shr_zero",      BIN(SHR),  T(INT),   {ANY, ZERO},     KEEPS_X,           rw_x,     "x>>0 → x"},
  /* involutions */
  {"neg_neg",       UN(NEG),    T(ANY),  {FROM(unary, GIR_UNARY_NEG), ANY},    0, rw_involution, "-(-x) → x"},
  {"not_not",       UN(NOT),    T(BOOL), {FROM(unary, GIR_UNARY_NOT), ANY},    0, rw_involution, "¬¬x → x"},
  {"bitnot_bitnot", UN(BITNOT), T(INT),  {FROM(unary, GIR_UNARY_BITNOT), ANY}, 0, rw_involution, "~~x → x"},
  /* ops that copy their input */
  {"reshape_noop",   OP(reshape),      T(ANY), {ANY, ANY}, KEEPS_X, rw_x,              "reshape(x, shape(x)) → x"},
  {"transpose_noop", OP(transpose),    T(ANY), {ANY, ANY}, 0,       rw_transpose_noop, "transpose(x, [0,1,…]) → x"},
  {"cast_noop",      OP(cast),         T(ANY), {ANY, ANY}, KEEPS_X, rw_x,              "cast(x: T, T) → x"},
  {"pad_noop",       OP(pad),          T(ANY), {ANY, ANY}, 0,       rw_pad_noop,       "pad(x, 0…0) → x"},
  {"slice_noop",     OP(slice),        T(ANY), {ANY, ANY}, 0,       rw_slice_noop,     "x[0:n:1, …] → x"},
  {"broadcast_noop", OP(broadcast_to), T(ANY), {ANY, ANY}, KEEPS_X, rw_x,              "broadcast_to(x, shape(x)) → x"},
  {"tile_noop",      OP(tile),         T(ANY), {ANY, ANY}, KEEPS_X, rw_x,              "tile(x, 1…1) → x"},
  {"concat_noop",    OP(concat),       T(ANY), {ANY, ANY}, KEEPS_X, rw_x,              "concat(x) → x"},
  {"where_same",     OP(where),        T(ANY), {ANY, ANY}, 0,       rw_where_same,     "where(c, x, x) → x"},
  /* chains */
  {"reshape_chain",   OP(reshape),   T(ANY), {FROM(reshape, -1), ANY},   0, rw_reshape_chain,
   "reshape(reshape(x, s), t) → reshape(x, t)"},
  {"transpose_chain", OP(transpose), T(ANY), {FROM(transpose, -1), ANY}, 0, rw_transpose_chain,
   "transpose(transpose(x, p), q) → transpose(x, p∘q), (p∘q)[i] = p[q[i]]"},
  {"cast_chain",      OP(cast),      T(ANY), {FROM(cast, -1), ANY},      0, rw_cast_chain,
   "cast(cast(x: A, B), C) → cast(x, C) when every A is exactly a B"},
  {"requant_roundtrip", OP(cast),    T(FLOAT), {FROM(binary, GIR_BINARY_MIN), ANY}, 0, rw_requant_roundtrip,
   "quantize(dequantize(q, s, z), s, z) → q (8-bit q, one scalar scale and zero point)"},
  /* per-channel affine ops into the producer's weights */
  {"conv_mul", BIN(MUL), T(FLOAT), {FROM(conv, -1), ANY}, COMMUTE | KEEPS_X, rw_fold_affine,
   "conv(x, w, b) * s[m] → conv(x, w*s[m], b*s[m])"},
  {"conv_add", BIN(ADD), T(FLOAT), {FROM(conv, -1), ANY}, COMMUTE | KEEPS_X, rw_fold_affine,
   "conv(x, w, b) + t[m] → conv(x, w, b+t[m])"},
  {"conv_sub", BIN(SUB), T(FLOAT), {FROM(conv, -1), ANY}, KEEPS_X, rw_fold_affine,
   "conv(x, w, b) - t[m] → conv(x, w, b-t[m])"},
  {"conv_transpose_mul", BIN(MUL), T(FLOAT), {FROM(conv_transpose, -1), ANY}, COMMUTE | KEEPS_X, rw_fold_affine,
   "conv_transpose(x, w, b) * s[m] → conv_transpose(x, w*s[m], b*s[m])"},
  {"conv_transpose_add", BIN(ADD), T(FLOAT), {FROM(conv_transpose, -1), ANY}, COMMUTE | KEEPS_X, rw_fold_affine,
   "conv_transpose(x, w, b) + t[m] → conv_transpose(x, w, b+t[m])"},
  {"conv_transpose_sub", BIN(SUB), T(FLOAT), {FROM(conv_transpose, -1), ANY}, KEEPS_X, rw_fold_affine,
   "conv_transpose(x, w, b) - t[m] → conv_transpose(x, w, b-t[m])"},
  {"matmul_mul", BIN(MUL), T(FLOAT), {FROM(matmul, -1), ANY}, COMMUTE | KEEPS_X, rw_fold_affine,
   "(a @ w) * s[n] → a @ (w*s[n])"},
};

int gir_simplify_rule_count(void) { return (int)(sizeof rules / sizeof rules[0]); }

const gir_rule *gir_simplify_rule(int i) {
  return i >= 0 && i < gir_simplify_rule_count() ? &rules[i] : NULL;
}
