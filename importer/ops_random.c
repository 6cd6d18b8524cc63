/* ops_random.c — ONNX's random generators: RandomNormal, RandomUniform,
 * RandomNormalLike, RandomUniformLike, Bernoulli and Multinomial, with a documented
 * counter-based generator: every value is a pure function of the node's key and
 * the element's index, so every compile and every run of a bundle gives the same
 * values, there is no run-time state, and anyone can reproduce them from this
 * comment (tests/py/test_random_ops.py does, in numpy).
 *
 * The generator is splitmix64 (Steele, Lea & Flood 2014; Vigna's reference code):
 * draw j (j = 0, 1, ...) of a node with key K is, in uint64 arithmetic (wrapping
 * multiplies, logical shifts),
 *     x = K + (j + 1) · 0x9E3779B97F4A7C15
 *     z = (x ^ (x >> 30)) · 0xBF58476D1CE4E5B9
 *     z = (z ^ (z >> 27)) · 0x94D049BB133111EB
 *     z =  z ^ (z >> 31)
 * i.e. the (j+1)-th output of splitmix64 started from state K.
 *
 * The key K:
 *   - with a `seed` attribute: the 32 bits of the seed as an IEEE-754 float32
 *     (ONNX stores it as a float), zero-extended — seed 1.0 is K = 0x3F800000;
 *     nodes with the same seed give the same stream, as ONNX asks;
 *   - without: ONNX lets the implementation choose; kiln uses the 64-bit FNV-1a
 *     hash of the node's first output name (offset basis 0xCBF29CE484222325,
 *     prime 0x100000001B3, over the name's bytes): fixed, so every compile and run
 *     gives the same values (ONNX Runtime instead draws a new seed per session),
 *     and different per node, since output names are unique in a graph. (A node
 *     repeated under the same name — a function body inlined twice — repeats its
 *     values.)
 *
 * A uniform u in [0, 1) with p bits is (z >> (64 − p)) · 2^−p. Elements are
 * numbered in row-major order from 0.
 *   RandomUniform(Like)   y[i] = low + (high − low) · u, u from draw i with p = 53
 *                         for double, 24 float, 11 float16, 8 bfloat16 (so u is
 *                         exact in the output type); computed in float64 and
 *                         rounded to dtype (to nearest even: a value just below
 *                         `high` may round to `high`).
 *   RandomNormal(Like)    Box–Muller, p = 53, in float64, rounded to dtype:
 *                         y[i] = mean + scale · sqrt(−2 ln(1 − u_2i)) · cos(2π u_2i+1)
 *                         (u_k from draw k; 1 − u avoids log 0).
 *   Bernoulli(p)          y[i] = u_i < p[i], u_i from draw i with 53 bits compared in
 *                         float64 when the input is double, else 24 bits in float32;
 *                         cast to dtype (default: the input's type).
 *   Multinomial(x)        x [batch, classes]: unnormalized log-probabilities. Per row
 *                         b, cdf = cumsum(softmax(x[b])) (float32; float64 for
 *                         double); sample s of row b is the number of classes c with
 *                         cdf[c] <= u, clamped to classes − 1 (inverse-CDF sampling),
 *                         u from draw b·sample_size + s (bits as for Bernoulli); int32
 *                         or int64 (dtype).
(Training-mode Dropout is not drawn here: its ONNX reference defines its mask with
 * numpy's own generator, which kiln reproduces exactly — importer/np_random.c.)
 * The *Like ops take their shape from the input and, when dtype is absent, their
 * type (which must then be a float type).
 *
 * Why the draws are computed here, in C, as constants: they depend on no input
 * data, so constant folding would turn any graph that computes them into a
 * constant anyway — and written with canonical uint64 ops (an iota and ~15 binary
 * ops per stream, which the IR supports) the fold pass materializes every
 * intermediate, ~240 bytes per element (1 GB of compiler memory for a 2048x2048
 * RandomNormal). Computed here they cost the output's size, drawn from the
 * importer's budget (IMP_MADE_MAX_BYTES), which refuses absurd shapes with a
 * message. The normal and uniform outputs are constants of the graph (weights in
 * the bundle); Bernoulli, Multinomial and Dropout compare a constant tensor of
 * uniforms with their input in kernels. */
#include <math.h>
#include <string.h>
#include "ops.h"

#define RND_GAMMA 0x9E3779B97F4A7C15ull
#define RND_M1 0xBF58476D1CE4E5B9ull
#define RND_M2 0x94D049BB133111EBull
#define RND_FNV_BASIS 0xCBF29CE484222325ull
#define RND_FNV_PRIME 0x100000001B3ull

/* The node's key K (see the header). */
static uint64_t node_key(const imp_node *n) {
  if (imp_attr(n, "seed")) {
    float f = (float)imp_attr_float(n, "seed", 0.0);
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
  }
  uint64_t h = RND_FNV_BASIS;
  const char *name = n->n_out > 0 && n->out_names[0] ? n->out_names[0] : "";
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * RND_FNV_PRIME;
  return h;
}

/* Draw j of the generator with key K. */
static uint64_t draw(uint64_t key, uint64_t j) {
  uint64_t z = key + (j + 1) * RND_GAMMA;
  z = (z ^ (z >> 30)) * RND_M1;
  z = (z ^ (z >> 27)) * RND_M2;
  return z ^ (z >> 31);
}

/* u in [0, 1) with p bits from draw j (exact in a double). */
static double unit(uint64_t key, uint64_t j, int p) { return ldexp((double)(draw(key, j) >> (64 - p)), -p); }

static int generated_type(imp_ctx *c, gir_dtype t, const char *what) {
  if (t == GIR_F32 || t == GIR_F64 || t == GIR_F16 || t == GIR_BF16) return 0;
  return imp_fail(c, "%s must be float, double, float16 or bfloat16, not %s", what, gir_dtype_name(t));
}

/* The output's shape and type: from the attributes (RandomNormal/RandomUniform) or
 * from input 0 (the *Like ops, whose dtype attribute overrides the input's type). */
static int out_shape_type(imp_ctx *c, imp_node *n, int like, gir_shape *s, gir_dtype *t) {
  const Onnx__AttributeProto *dt = imp_attr(n, "dtype");
  if (like) {
    gir_value *x = imp_in(n, 0);
    if (!x) return imp_fail(c, "needs an input");
    *s = x->shape;
    *t = x->dtype;
  } else {
    int64_t *dims;
    int32_t r = imp_attr_ints(c, n, "shape", &dims);
    if (r < 0) return imp_fail(c, "needs attribute shape");
    if (r > GIR_MAX_RANK) return imp_fail(c, "shape has rank %d, more than %d", r, GIR_MAX_RANK);
    s->rank = r;
    for (int i = 0; i < r; i++) {
      if (dims[i] < 0) return imp_fail(c, "shape[%d] is %lld, negative", i, (long long)dims[i]);
      s->dims[i] = dims[i];
    }
    *t = GIR_F32;
  }
  if (dt) {
    *t = gir_dtype_from_onnx((int32_t)imp_attr_int(n, "dtype", 1));
    if (*t == GIR_DTYPE_NONE) return imp_fail(c, "attribute dtype: unknown element type code %lld", (long long)dt->i);
  }
  return generated_type(c, *t, like && !dt ? "the input's type (no dtype attribute)" : "dtype");
}

/* A new constant of type t and shape s for the generator to fill; NULL + error
 * (the shape's element count, the importer's budget). */
static gir_value *new_values(imp_ctx *c, gir_dtype t, const gir_shape *s, int64_t *numel) {
  gir_err e = {{0}};
  *numel = gir_shape_numel(s, &e);
  if (*numel < 0) {
    imp_fail(c, "shape: %s", e.msg);
    return NULL;
  }
  return imp_const_new(c, t, s, NULL, "random values");
}

static int uniform(imp_ctx *c, imp_node *n, int like) {
  gir_shape s;
  gir_dtype t;
  int64_t numel;
  if (out_shape_type(c, n, like, &s, &t) < 0) return -1;
  gir_value *y = new_values(c, t, &s, &numel);
  if (!y) return -1;
  uint64_t key = node_key(n);
  int p = t == GIR_F64 ? 53 : t == GIR_F16 ? 11 : t == GIR_BF16 ? 8 : 24;
  double low = imp_attr_float(n, "low", 0.0), high = imp_attr_float(n, "high", 1.0);
  for (int64_t i = 0; i < numel; i++) gir_store_f64(t, y->data, i, low + (high - low) * unit(key, (uint64_t)i, p));
  return imp_set_output(c, n, 0, y);
}

static int normal(imp_ctx *c, imp_node *n, int like) {
  gir_shape s;
  gir_dtype t;
  int64_t numel;
  if (out_shape_type(c, n, like, &s, &t) < 0) return -1;
  gir_value *y = new_values(c, t, &s, &numel);
  if (!y) return -1;
  uint64_t key = node_key(n);
  double mean = imp_attr_float(n, "mean", 0.0), scale = imp_attr_float(n, "scale", 1.0);
  for (int64_t i = 0; i < numel; i++) {
    double u1 = unit(key, 2 * (uint64_t)i, 53), u2 = unit(key, 2 * (uint64_t)i + 1, 53);
    double z = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
    gir_store_f64(t, y->data, i, mean + scale * z);
  }
  return imp_set_output(c, n, 0, y);
}

int imp_cv_RandomUniform(imp_ctx *c, imp_node *n) { return uniform(c, n, 0); }
int imp_cv_RandomUniformLike(imp_ctx *c, imp_node *n) { return uniform(c, n, 1); }
int imp_cv_RandomNormal(imp_ctx *c, imp_node *n) { return normal(c, n, 0); }
int imp_cv_RandomNormalLike(imp_ctx *c, imp_node *n) { return normal(c, n, 1); }

/* The uniforms Bernoulli and Multinomial compare with, as a constant of shape s:
 * float64 with 53 bits when the input is double, else float32 with 24. */
static gir_value *unit_values(imp_ctx *c, const imp_node *n, gir_dtype input, const gir_shape *s) {
  gir_dtype wt = input == GIR_F64 ? GIR_F64 : GIR_F32;
  int64_t numel;
  gir_value *u = new_values(c, wt, s, &numel);
  if (!u) return NULL;
  uint64_t key = node_key(n);
  for (int64_t i = 0; i < numel; i++) gir_store_f64(wt, u->data, i, unit(key, (uint64_t)i, wt == GIR_F64 ? 53 : 24));
  return u;
}

int imp_cv_Bernoulli(imp_ctx *c, imp_node *n) {
  gir_value *p = imp_in(n, 0);
  if (!p) return imp_fail(c, "needs input 'input' (the probabilities)");
  if (generated_type(c, p->dtype, "input") < 0) return -1;
  gir_dtype t = p->dtype;
  if (imp_attr(n, "dtype")) {
    t = gir_dtype_from_onnx((int32_t)imp_attr_int(n, "dtype", 1));
    if (t == GIR_DTYPE_NONE || !gir_dtype_first_class(t))
      return imp_fail(c, "attribute dtype: unsupported element type code %lld", (long long)imp_attr_int(n, "dtype", 1));
  }
  gir_value *u = unit_values(c, n, p->dtype, &p->shape);
  if (!u) return -1;
  gir_value *hit = imp_binary(c, GIR_BINARY_LT, u, imp_cast(c, p, u->dtype));
  return imp_set_output(c, n, 0, imp_cast(c, hit, t));
}

int imp_cv_Multinomial(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (generated_type(c, x->dtype, "input") < 0) return -1;
  if (x->shape.rank != 2) return imp_fail(c, "input must be [batch_size, class_size], not rank %d", x->shape.rank);
  int64_t batch = x->shape.dims[0], classes = x->shape.dims[1], samples = imp_attr_int(n, "sample_size", 1);
  if (classes < 1) return imp_fail(c, "class_size is 0: nothing to sample");
  if (samples < 1) return imp_fail(c, "sample_size is %lld; it must be >= 1", (long long)samples);
  if (batch > 0 && samples > INT64_MAX / batch / classes)
    return imp_fail(c, "batch_size x sample_size x class_size overflows");
  gir_dtype t = gir_dtype_from_onnx((int32_t)imp_attr_int(n, "dtype", 6));
  if (t != GIR_I32 && t != GIR_I64) return imp_fail(c, "attribute dtype must be int32 or int64");
  gir_shape us = {3, {batch, samples, 1}};
  gir_value *u = unit_values(c, n, x->dtype, &us);
  if (!u) return -1;
  gir_value *xw = imp_cast(c, x, u->dtype);
  if (!xw) return -1;
  gir_node *sm = imp_new_node(c, GIR_OP_softmax, &xw, 1, 1);
  gir_attr_set_int(c->g, sm, "axis", 1);
  gir_attr_set_int(c->g, sm, "log", 0);
  gir_value *prob = imp_finish(c, sm);
  if (!prob) return -1;
  gir_node *cu = imp_new_node(c, GIR_OP_cumulate, &prob, 1, 1);
  gir_attr_set_int(c->g, cu, "fn", GIR_CUM_SUM);
  gir_attr_set_int(c->g, cu, "axis", 1);
  gir_attr_set_int(c->g, cu, "exclusive", 0);
  gir_attr_set_int(c->g, cu, "reverse", 0);
  gir_value *cdf = imp_finish(c, cu);
  int64_t cdims[3] = {batch, 1, classes};
  /* [batch, samples, classes]: cdf[c] <= u, counted over the classes */
  gir_value *below = imp_binary(c, GIR_BINARY_LE, cdf ? imp_reshape(c, cdf, 3, cdims) : NULL, u);
  int64_t axis = 2;
  gir_value *count = below ? imp_reduce(c, GIR_REDUCE_SUM, imp_cast(c, below, t), &axis, 1, 0) : NULL;
  gir_value *y = imp_binary(c, GIR_BINARY_MIN, count, imp_scalar(c, t, (double)(classes - 1)));
  return imp_set_output(c, n, 0, y);
}
