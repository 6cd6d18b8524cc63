/* ops_tensor.c — data-movement ONNX ops → canonical ops.
 *
 * Shapes are static, so every argument that decides an output shape (Reshape's
 * shape, Slice's starts/ends, Pad's pads, Resize's scales/sizes, TopK's k…) must
 * be a constant at import; the converters resolve ONNX's conventions (-1 and 0
 * dims, negative axes, clamped slice bounds, per-version attribute → input moves)
 * into the fully normalized attributes of the canonical ops, so nothing after the
 * importer needs to know ONNX.
 *
 * Ops without a canonical twin are decomposed: DepthToSpace/SpaceToDepth into
 * reshape + transpose + reshape, Trilu/EyeLike into iota + compare (+ where/cast),
 * ReverseSequence into an index computation + gather_elements, CenterCropPad into
 * slice + pad, Range into iota. Compress and NonZero have data-dependent output
 * shapes: with their deciding input a constant they become constants and gathers;
 * computed at run time, the nonzero op (a loop-IR kernel) finds the positions and
 * the output carries their count as its extent (gir_value.extent); so does TopK's
 * when K is computed at run time. */
#include <math.h>
#include <string.h>
#include "ops.h"

/* --- small helpers --- */


static int wants_output(const imp_node *n, int i) {
  return i < n->n_out && n->out_names[i] && n->out_names[i][0];
}

/* Index of s in names, or -1 with an error naming the attribute. */
static int pick(imp_ctx *c, const char *attr, const char *s, const char *const *names, int count) {
  for (int i = 0; i < count; i++)
    if (names[i] && !strcmp(names[i], s)) return i;
  return imp_fail(c, "attribute %s: unknown value '%s'", attr, s);
}

/* Normalizes axes against rank into out; rejects out-of-range and repeated axes. */
static int norm_axes(imp_ctx *c, const int64_t *axes, int32_t cnt, int32_t rank, int64_t *out) {
  int seen[GIR_MAX_RANK] = {0};
  if (cnt > rank) return imp_fail(c, "%d axes given for rank %d", cnt, rank);
  for (int i = 0; i < cnt; i++) {
    if (imp_axis(c, axes[i], rank, &out[i]) < 0) return -1;
    if (seen[out[i]]++) return imp_fail(c, "axis %lld is repeated", (long long)axes[i]);
  }
  return 0;
}

/* Constant payload of v when it has one, NULL (and no error) when it is computed at run time. */
static const void *peek_const(imp_ctx *c, const gir_value *v) {
  const void *d = imp_const_data(c, v, "value");
  if (!d) c->err->msg[0] = 0;
  return d;
}

static int check_rank(imp_ctx *c, int64_t rank) {
  if (rank > GIR_MAX_RANK) return imp_fail(c, "rank %lld exceeds the limit of %d", (long long)rank, GIR_MAX_RANK);
  return 0;
}

/* A slice over every axis (already normalized); x itself when it selects everything. */
static gir_value *slice_all(imp_ctx *c, gir_value *x, const int64_t *st, const int64_t *sp, const int64_t *sz) {
  int r = x->shape.rank, identity = 1;
  for (int i = 0; i < r; i++) identity &= st[i] == 0 && sp[i] == 1 && sz[i] == x->shape.dims[i];
  if (identity) return x;
  gir_node *nd = imp_new_node(c, GIR_OP_slice, &x, 1, 1);
  gir_attr_set_ints(c->g, nd, "starts", st, r);
  gir_attr_set_ints(c->g, nd, "steps", sp, r);
  gir_attr_set_ints(c->g, nd, "sizes", sz, r);
  return imp_finish(c, nd);
}

/* pad with canonical pads (all begins, then all ends); x itself when nothing moves.
 * value_in (may be NULL) is a scalar of x's dtype that overrides value. */
static gir_value *pad_node(imp_ctx *c, gir_value *x, const int64_t *pads, int mode, double value, gir_value *value_in) {
  if (!x) return NULL;
  int r = x->shape.rank, zero = 1;
  for (int i = 0; i < 2 * r; i++) zero &= pads[i] == 0;
  if (zero) return x;
  gir_value *ins[2] = {x, value_in};
  gir_node *nd = imp_new_node(c, GIR_OP_pad, ins, value_in ? 2 : 1, 1);
  gir_attr_set_ints(c->g, nd, "pads", pads, 2 * r);
  gir_attr_set_int(c->g, nd, "mode", mode);
  gir_attr_set_float(c->g, nd, "value", value);
  return imp_finish(c, nd);
}

static gir_value *iota(imp_ctx *c, int32_t rank, const int64_t *dims, int axis, gir_dtype to, double start,
                       double delta) {
  gir_node *nd = imp_new_node(c, GIR_OP_iota, NULL, 0, 1);
  gir_attr_set_ints(c->g, nd, "shape", dims, rank);
  gir_attr_set_int(c->g, nd, "axis", axis);
  gir_attr_set_int(c->g, nd, "to", to);
  gir_attr_set_float(c->g, nd, "start", start);
  gir_attr_set_float(c->g, nd, "delta", delta);
  return imp_finish(c, nd);
}

/* A one-element value as a rank-0 value (reshaped when needed). */
static gir_value *as_scalar(imp_ctx *c, gir_value *v, const char *what) {
  if (!v) return NULL;
  if (gir_value_numel(v) != 1) {
    imp_fail(c, "%s must hold exactly one element", what);
    return NULL;
  }
  static const int64_t no_dims[1] = {0};
  return imp_reshape(c, v, 0, no_dims);
}

/* One integer from a one-element constant input. */
static int const_int1(imp_ctx *c, const gir_value *v, const char *what, int64_t *out) {
  int32_t cnt;
  int64_t *p = imp_const_ints(c, v, what, &cnt);
  if (!p) return -1;
  if (cnt != 1) return imp_fail(c, "%s must hold exactly one value, has %d", what, cnt);
  *out = p[0];
  return 0;
}

/* The axis attribute (def when absent) normalized against rank. */
static int attr_axis(imp_ctx *c, const imp_node *n, int64_t def, int32_t rank, int64_t *out) {
  return imp_axis(c, imp_attr_int(n, "axis", def), rank, out);
}

/* --- reshaping --- */

int imp_cv_Reshape(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t *shape;
  int32_t r;
  if (imp_ints_attr_or_input(c, n, "shape", 1, 5, &shape, &r) < 0) return -1;
  if (r < 0) return imp_fail(c, "the target shape is missing");
  if (check_rank(c, r) < 0) return -1;
  int allowzero = n->opset >= 14 && imp_attr_int(n, "allowzero", 0) != 0;
  int64_t dims[GIR_MAX_RANK], known = 1;
  int infer_at = -1;
  for (int i = 0; i < r; i++) {
    int64_t d = shape[i];
    if (d == -1) {
      if (infer_at >= 0) return imp_fail(c, "shape has more than one -1");
      infer_at = i;
      dims[i] = 1;
      continue;
    }
    if (d == 0 && !allowzero) {
      if (i >= x->shape.rank)
        return imp_fail(c, "shape[%d] = 0 copies a dimension the input (rank %d) lacks", i, x->shape.rank);
      d = x->shape.dims[i];
    } else if (d < 0)
      return imp_fail(c, "shape[%d] = %lld is invalid", i, (long long)d);
    dims[i] = d;
    if (d && known > INT64_MAX / d) return imp_fail(c, "shape overflows");
    known *= d;
  }
  int64_t numel = gir_value_numel(x);
  if (infer_at >= 0) {
    if (known == 0) return imp_fail(c, "cannot infer the -1 dimension next to a zero dimension");
    if (numel % known) return imp_fail(c, "cannot reshape %lld elements with a -1 dimension", (long long)numel);
    dims[infer_at] = numel / known;
  }
  return imp_set_output(c, n, 0, imp_reshape(c, x, r, dims));
}

int imp_cv_Flatten(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int32_t r = x->shape.rank;
  int64_t axis = imp_attr_int(n, "axis", 1);
  if (axis < 0 && n->opset >= 11) axis += r;
  if (axis < 0 || axis > r)
    return imp_fail(c, "axis %lld is out of range for rank %d", (long long)imp_attr_int(n, "axis", 1), r);
  int64_t dims[2] = {1, 1};
  for (int i = 0; i < r; i++) dims[i >= axis] *= x->shape.dims[i];
  return imp_set_output(c, n, 0, imp_reshape(c, x, 2, dims));
}

int imp_cv_Transpose(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int32_t r = x->shape.rank;
  int64_t *perm;
  int32_t cnt = imp_attr_ints(c, n, "perm", &perm);
  if (c->err->msg[0]) return -1;
  int64_t rev[GIR_MAX_RANK];
  if (cnt < 0) {
    for (int i = 0; i < r; i++) rev[i] = r - 1 - i;
    perm = rev;
  } else if (cnt != r)
    return imp_fail(c, "perm has %d entries for rank %d", cnt, r);
  return imp_set_output(c, n, 0, imp_transpose(c, x, perm));
}

int imp_cv_Concat(imp_ctx *c, imp_node *n) {
  if (n->n_in < 1) return imp_fail(c, "needs at least one input");
  for (int i = 0; i < n->n_in; i++)
    if (!n->in[i]) return imp_fail(c, "input %d is missing", i);
  if (!imp_attr(n, "axis")) return imp_fail(c, "attribute axis is missing");
  int64_t axis;
  if (attr_axis(c, n, 0, n->in[0]->shape.rank, &axis) < 0) return -1;
  /* concat takes at most 64 inputs: longer lists are joined in groups of 64 */
  gir_value **xs = n->in;
  int32_t cnt = n->n_in;
  while (cnt > 64) {
    int32_t groups = (cnt + 63) / 64;
    gir_value **next = gir_arena_calloc(c->g->arena, (size_t)groups, sizeof *next);
    for (int32_t g = 0; g < groups; g++) {
      int32_t take = cnt - g * 64 < 64 ? cnt - g * 64 : 64;
      if (!(next[g] = imp_concat(c, xs + g * 64, take, axis))) return -1;
    }
    xs = next;
    cnt = groups;
  }
  return imp_set_output(c, n, 0, imp_concat(c, xs, cnt, axis));
}

int imp_cv_Split(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t axis;
  if (attr_axis(c, n, 0, x->shape.rank, &axis) < 0) return -1;
  int64_t dim = x->shape.dims[axis], *split;
  int32_t ns;
  if (imp_ints_attr_or_input(c, n, "split", 1, 13, &split, &ns) < 0) return -1;
  if (ns == 0) ns = -1; /* an empty split means "not given" */
  int32_t k = n->n_out;
  if (n->opset >= 18 && imp_attr(n, "num_outputs")) {
    if (ns >= 0) return imp_fail(c, "split and num_outputs are both given");
    int64_t no = imp_attr_int(n, "num_outputs", 0);
    if (no != k) return imp_fail(c, "num_outputs = %lld but the node has %d outputs", (long long)no, k);
  }
  if (k < 1) return imp_fail(c, "needs at least one output");
  int64_t *sizes = gir_arena_calloc(c->g->arena, (size_t)k, sizeof *sizes);
  if (ns < 0) {
    /* ceil-sized chunks, the last one takes the rest (smaller when uneven) */
    int64_t chunk = dim / k + (dim % k != 0);
    for (int i = 0; i < k; i++) sizes[i] = chunk;
    sizes[k - 1] = dim - chunk * (k - 1);
    if (sizes[k - 1] < 0) return imp_fail(c, "cannot split %lld elements into %d parts", (long long)dim, k);
  } else {
    if (ns != k) return imp_fail(c, "split has %d entries for %d outputs", ns, k);
    int64_t sum = 0;
    for (int i = 0; i < k; i++) {
      if (split[i] < 0 || split[i] > dim) return imp_fail(c, "split[%d] = %lld is invalid", i, (long long)split[i]);
      sizes[i] = split[i];
      sum += split[i];
      if (sum > dim) break;
    }
    if (sum != dim) return imp_fail(c, "split sums to %lld, the axis has %lld", (long long)sum, (long long)dim);
  }
  int64_t pos = 0;
  for (int i = 0; i < k; i++) {
    if (wants_output(n, i) && imp_set_output(c, n, i, imp_slice_axis(c, x, (int)axis, pos, 1, sizes[i])) < 0)
      return -1;
    pos += sizes[i];
  }
  return 0;
}

/* Steps of any magnitude without overflow: elements in (lo, hi] reached by |step|. */
static int64_t slice_count(int64_t span, int64_t step) {
  if (span <= 0) return 0;
  uint64_t mag = step < 0 ? (uint64_t)(-(step + 1)) + 1 : (uint64_t)step;
  return (int64_t)(((uint64_t)span - 1) / mag + 1);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

int imp_cv_Slice(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int32_t r = x->shape.rank, n_st, n_en, n_ax = -1, n_sp = -1;
  int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  if (n->opset < 10) {
    n_st = imp_attr_ints(c, n, "starts", &starts);
    n_en = imp_attr_ints(c, n, "ends", &ends);
    n_ax = imp_attr_ints(c, n, "axes", &axes);
    if (c->err->msg[0]) return -1;
    if (n_st < 0 || n_en < 0) return imp_fail(c, "attributes starts and ends are required");
  } else {
    starts = imp_const_ints(c, imp_in(n, 1), "input 'starts'", &n_st);
    ends = imp_const_ints(c, imp_in(n, 2), "input 'ends'", &n_en);
    if (!starts || !ends) return -1;
    if (imp_in(n, 3) && !(axes = imp_const_ints(c, n->in[3], "input 'axes'", &n_ax))) return -1;
    if (imp_in(n, 4) && !(steps = imp_const_ints(c, n->in[4], "input 'steps'", &n_sp))) return -1;
  }
  if (n_en != n_st) return imp_fail(c, "starts has %d entries, ends %d", n_st, n_en);
  if (n_ax >= 0 && n_ax != n_st) return imp_fail(c, "axes has %d entries, starts %d", n_ax, n_st);
  if (n_sp >= 0 && n_sp != n_st) return imp_fail(c, "steps has %d entries, starts %d", n_sp, n_st);
  if (n_ax < 0 && n_st > r) return imp_fail(c, "%d starts for rank %d", n_st, r);
  int64_t ax[GIR_MAX_RANK], st[GIR_MAX_RANK], sp[GIR_MAX_RANK], sz[GIR_MAX_RANK];
  if (n_ax >= 0) {
    if (norm_axes(c, axes, n_ax, r, ax) < 0) return -1;
  } else
    for (int i = 0; i < n_st; i++) ax[i] = i;
  for (int i = 0; i < r; i++) {
    st[i] = 0;
    sp[i] = 1;
    sz[i] = x->shape.dims[i];
  }
  for (int i = 0; i < n_st; i++) {
    int64_t a = ax[i], d = x->shape.dims[a], step = steps ? steps[i] : 1, s = starts[i], e = ends[i], size;
    if (step == 0) return imp_fail(c, "step on axis %lld is 0", (long long)a);
    if (s < 0) s += d;
    if (e < 0) e += d;
    if (step > 0) {
      s = clamp64(s, 0, d);
      e = clamp64(e, 0, d);
      size = slice_count(e - s, step);
    } else {
      s = clamp64(s, 0, d - 1);
      e = clamp64(e, -1, d - 1);
      size = slice_count(s - e, step);
    }
    if (d == 0 || size == 0) size = s = 0;
    st[a] = s;
    sp[a] = step;
    sz[a] = size;
  }
  return imp_set_output(c, n, 0, slice_all(c, x, st, sp, sz));
}

int imp_cv_Unsqueeze(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t *axes;
  int32_t cnt;
  if (imp_ints_attr_or_input(c, n, "axes", 1, 13, &axes, &cnt) < 0) return -1;
  if (cnt < 0) return imp_fail(c, "axes are missing");
  int32_t r = x->shape.rank, ro = r + cnt;
  if (check_rank(c, ro) < 0) return -1;
  int64_t ax[GIR_MAX_RANK], dims[GIR_MAX_RANK];
  int inserted[GIR_MAX_RANK] = {0};
  if (norm_axes(c, axes, cnt, ro, ax) < 0) return -1;
  for (int i = 0; i < cnt; i++) inserted[ax[i]] = 1;
  for (int i = 0, k = 0; i < ro; i++) dims[i] = inserted[i] ? 1 : x->shape.dims[k++];
  return imp_set_output(c, n, 0, imp_reshape(c, x, ro, dims));
}

int imp_cv_Squeeze(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t *axes;
  int32_t cnt, r = x->shape.rank;
  if (imp_ints_attr_or_input(c, n, "axes", 1, 13, &axes, &cnt) < 0) return -1;
  if (cnt == 0 && n->opset < 13) cnt = -1; /* an empty axes attribute squeezes every 1 */
  int drop[GIR_MAX_RANK] = {0};
  if (cnt < 0) {
    for (int i = 0; i < r; i++) drop[i] = x->shape.dims[i] == 1;
  } else {
    int64_t ax[GIR_MAX_RANK];
    if (norm_axes(c, axes, cnt, r, ax) < 0) return -1;
    for (int i = 0; i < cnt; i++) {
      if (x->shape.dims[ax[i]] != 1)
        return imp_fail(c, "cannot squeeze axis %lld of size %lld", (long long)ax[i], (long long)x->shape.dims[ax[i]]);
      drop[ax[i]] = 1;
    }
  }
  int64_t dims[GIR_MAX_RANK];
  int32_t ro = 0;
  for (int i = 0; i < r; i++)
    if (!drop[i]) dims[ro++] = x->shape.dims[i];
  return imp_set_output(c, n, 0, imp_reshape(c, x, ro, dims));
}

int imp_cv_Expand(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int32_t cnt;
  int64_t *shape = imp_const_ints(c, imp_in(n, 1), "input 'shape'", &cnt);
  if (!shape) return -1;
  int32_t r = x->shape.rank > cnt ? x->shape.rank : cnt;
  if (check_rank(c, r) < 0) return -1;
  gir_shape s = {.rank = r};
  for (int i = 0; i < r; i++) {
    int64_t a = i - (r - x->shape.rank) >= 0 ? x->shape.dims[i - (r - x->shape.rank)] : 1;
    int64_t b = i - (r - cnt) >= 0 ? shape[i - (r - cnt)] : 1;
    if (b < 0) return imp_fail(c, "shape[%d] = %lld is negative", i - (r - cnt), (long long)b);
    if (a != b && a != 1 && b != 1)
      return imp_fail(c, "input dimension %lld does not broadcast to %lld", (long long)a, (long long)b);
    s.dims[i] = a == 1 ? b : a;
  }
  return imp_set_output(c, n, 0, imp_broadcast_to(c, x, &s));
}

int imp_cv_Tile(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (n->opset < 6) return imp_unsupported_node(c, n, "Tile before opset 6 (tiles/axis inputs)");
  int32_t cnt;
  int64_t *rep = imp_const_ints(c, imp_in(n, 1), "input 'repeats'", &cnt);
  if (!rep) return -1;
  if (cnt != x->shape.rank) return imp_fail(c, "repeats has %d entries for rank %d", cnt, x->shape.rank);
  int all_one = 1;
  for (int i = 0; i < cnt; i++) all_one &= rep[i] == 1;
  if (all_one) return imp_set_output(c, n, 0, x);
  gir_node *nd = imp_new_node(c, GIR_OP_tile, &x, 1, 1);
  gir_attr_set_ints(c->g, nd, "repeats", rep, cnt);
  return imp_set_output(c, n, 0, imp_finish(c, nd));
}

/* --- padding and cropping --- */

int imp_cv_Pad(imp_ctx *c, imp_node *n) {
  static const char *const modes[] = {[GIR_PAD_CONSTANT] = "constant", [GIR_PAD_REFLECT] = "reflect",
                                      [GIR_PAD_EDGE] = "edge", [GIR_PAD_WRAP] = "wrap"};
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int32_t r = x->shape.rank;
  int mode = pick(c, "mode", imp_attr_string(c, n, "mode", "constant"), modes, GIR_PAD_COUNT);
  if (mode < 0) return -1;
  if (mode == GIR_PAD_WRAP && n->opset < 19) return imp_fail(c, "mode 'wrap' needs opset 19");
  int64_t *pads, *axes = NULL;
  int32_t np, na = -1;
  double value = 0;
  gir_value *value_in = NULL;
  if (n->opset < 11) {
    np = imp_attr_ints(c, n, n->opset < 2 ? "paddings" : "pads", &pads);
    if (c->err->msg[0]) return -1;
    if (np < 0) return imp_fail(c, "attribute pads is missing");
    value = imp_attr_float(n, "value", 0.0);
  } else {
    if (!(pads = imp_const_ints(c, imp_in(n, 1), "input 'pads'", &np))) return -1;
    gir_value *cv = imp_in(n, 2);
    if (cv && mode == GIR_PAD_CONSTANT) {
      if (gir_value_numel(cv) != 1) return imp_fail(c, "constant_value must hold one element");
      const void *d = peek_const(c, cv);
      int64_t iv = d ? gir_load_i64(cv->dtype, d, 0) : 0;
      int exact = d && (gir_dtype_is_float(cv->dtype) || cv->dtype == GIR_BOOL ||
                        (iv >= -(INT64_C(1) << 53) && iv <= (INT64_C(1) << 53)));
      if (exact)
        value = gir_load_f64(cv->dtype, d, 0);
      else if (!(value_in = as_scalar(c, cv, "constant_value")))
        return -1;
    }
    if (n->opset >= 18 && imp_in(n, 3) && !(axes = imp_const_ints(c, n->in[3], "input 'axes'", &na))) return -1;
  }
  int64_t ax[GIR_MAX_RANK];
  if (na >= 0) {
    if (norm_axes(c, axes, na, r, ax) < 0) return -1;
  } else {
    na = r;
    for (int i = 0; i < r; i++) ax[i] = i;
  }
  if (np != 2 * na) return imp_fail(c, "pads has %d entries, %d expected", np, 2 * na);
  int64_t full[2 * GIR_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    full[ax[i]] = pads[i];
    full[ax[i] + r] = pads[na + i];
  }
  return imp_set_output(c, n, 0, pad_node(c, x, full, mode, value, value_in));
}

int imp_cv_CenterCropPad(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int32_t r = x->shape.rank, ns, na;
  int64_t *shape = imp_const_ints(c, imp_in(n, 1), "input 'shape'", &ns), *axes;
  if (!shape) return -1;
  na = imp_attr_ints(c, n, "axes", &axes);
  if (c->err->msg[0]) return -1;
  int64_t ax[GIR_MAX_RANK];
  if (na >= 0) {
    if (norm_axes(c, axes, na, r, ax) < 0) return -1;
  } else {
    na = r;
    for (int i = 0; i < r; i++) ax[i] = i;
  }
  if (ns != na) return imp_fail(c, "shape has %d entries for %d axes", ns, na);
  int64_t st[GIR_MAX_RANK], sp[GIR_MAX_RANK], sz[GIR_MAX_RANK], pads[2 * GIR_MAX_RANK] = {0};
  for (int i = 0; i < r; i++) {
    st[i] = 0;
    sp[i] = 1;
    sz[i] = x->shape.dims[i];
  }
  /* the crop (or pad) is centred; an odd difference puts the extra element at the end */
  for (int i = 0; i < na; i++) {
    int64_t a = ax[i], d = x->shape.dims[a], want = shape[i];
    if (want < 0) return imp_fail(c, "shape[%d] = %lld is negative", i, (long long)want);
    if (want < d) {
      st[a] = (d - want) / 2;
      sz[a] = want;
    } else if (want > d) {
      pads[a] = (want - d) / 2;
      pads[a + r] = want - d - pads[a];
    }
  }
  gir_value *y = slice_all(c, x, st, sp, sz);
  return imp_set_output(c, n, 0, pad_node(c, y, pads, GIR_PAD_CONSTANT, 0.0, NULL));
}

/* --- depth/space rearrangements --- */

static int block_of(imp_ctx *c, const imp_node *n, const gir_value *x, int64_t *b) {
  if (x->shape.rank != 4) return imp_fail(c, "input must have rank 4, has %d", x->shape.rank);
  *b = imp_attr_int(n, "blocksize", 0);
  if (*b < 1) return imp_fail(c, "blocksize must be positive");
  return 0;
}

int imp_cv_DepthToSpace(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t b = 1;
  if (block_of(c, n, x, &b) < 0) return -1;
  const int64_t *d = x->shape.dims;
  if (b > d[1] / b || d[1] % (b * b))
    return imp_fail(c, "channels (%lld) are not divisible by blocksize^2", (long long)d[1]);
  int crd = n->opset >= 11 && !strcmp(imp_attr_string(c, n, "mode", "DCR"), "CRD");
  if (n->opset >= 11 && !crd && strcmp(imp_attr_string(c, n, "mode", "DCR"), "DCR"))
    return imp_fail(c, "attribute mode must be DCR or CRD");
  int64_t cc = d[1] / (b * b);
  int64_t dcr_shape[6] = {d[0], b, b, cc, d[2], d[3]}, dcr_perm[6] = {0, 3, 4, 1, 5, 2};
  int64_t crd_shape[6] = {d[0], cc, b, b, d[2], d[3]}, crd_perm[6] = {0, 1, 4, 2, 5, 3};
  int64_t out[4] = {d[0], cc, d[2] * b, d[3] * b};
  gir_value *y = imp_reshape(c, x, 6, crd ? crd_shape : dcr_shape);
  y = imp_transpose(c, y, crd ? crd_perm : dcr_perm);
  return imp_set_output(c, n, 0, imp_reshape(c, y, 4, out));
}

int imp_cv_SpaceToDepth(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t b = 1;
  if (block_of(c, n, x, &b) < 0) return -1;
  const int64_t *d = x->shape.dims;
  if (d[2] % b || d[3] % b) return imp_fail(c, "spatial dims are not divisible by blocksize %lld", (long long)b);
  int64_t shape[6] = {d[0], d[1], d[2] / b, b, d[3] / b, b}, perm[6] = {0, 3, 5, 1, 2, 4};
  int64_t out[4] = {d[0], d[1] * b * b, d[2] / b, d[3] / b};
  gir_value *y = imp_transpose(c, imp_reshape(c, x, 6, shape), perm);
  return imp_set_output(c, n, 0, imp_reshape(c, y, 4, out));
}

/* --- gathers and scatters --- */

static int gather_like(imp_ctx *c, imp_node *n, gir_op op) {
  gir_value *x = imp_in(n, 0), *idx = imp_in(n, 1);
  if (!x || !idx) return imp_fail(c, "needs data and indices");
  int64_t axis = 0;
  if (op != GIR_OP_gather_nd && attr_axis(c, n, 0, x->shape.rank, &axis) < 0) return -1;
  gir_value *ins[2] = {x, idx};
  gir_node *nd = imp_new_node(c, op, ins, 2, 1);
  if (op == GIR_OP_gather_nd)
    gir_attr_set_int(c->g, nd, "batch_dims", n->opset >= 12 ? imp_attr_int(n, "batch_dims", 0) : 0);
  else
    gir_attr_set_int(c->g, nd, "axis", axis);
  return imp_set_output(c, n, 0, imp_finish(c, nd));
}

int imp_cv_Gather(imp_ctx *c, imp_node *n) { return gather_like(c, n, GIR_OP_gather); }
int imp_cv_GatherElements(imp_ctx *c, imp_node *n) { return gather_like(c, n, GIR_OP_gather_elements); }
int imp_cv_GatherND(imp_ctx *c, imp_node *n) { return gather_like(c, n, GIR_OP_gather_nd); }

static int scatter_reduction(imp_ctx *c, const imp_node *n, int *out) {
  static const char *const names[] = {[GIR_SCATTER_NONE] = "none", [GIR_SCATTER_ADD] = "add",
                                      [GIR_SCATTER_MUL] = "mul", [GIR_SCATTER_MAX] = "max",
                                      [GIR_SCATTER_MIN] = "min"};
  *out = GIR_SCATTER_NONE;
  if (strcmp(n->op_type, "Scatter") == 0 || n->opset < 16) return 0;
  int r = pick(c, "reduction", imp_attr_string(c, n, "reduction", "none"), names, GIR_SCATTER_COUNT);
  if (r < 0) return -1;
  if ((r == GIR_SCATTER_MAX || r == GIR_SCATTER_MIN) && n->opset < 18)
    return imp_fail(c, "reduction '%s' needs opset 18", names[r]);
  *out = r;
  return 0;
}

static int scatter_like(imp_ctx *c, imp_node *n, gir_op op) {
  gir_value *x = imp_in(n, 0), *idx = imp_in(n, 1), *upd = imp_in(n, 2);
  if (!x || !idx || !upd) return imp_fail(c, "needs data, indices and updates");
  int red;
  int64_t axis = 0;
  if (scatter_reduction(c, n, &red) < 0) return -1;
  if (op == GIR_OP_scatter_elements && attr_axis(c, n, 0, x->shape.rank, &axis) < 0) return -1;
  gir_value *ins[3] = {x, idx, upd};
  gir_node *nd = imp_new_node(c, op, ins, 3, 1);
  gir_attr_set_int(c->g, nd, "reduction", red);
  if (op == GIR_OP_scatter_elements) gir_attr_set_int(c->g, nd, "axis", axis);
  return imp_set_output(c, n, 0, imp_finish(c, nd));
}

int imp_cv_ScatterElements(imp_ctx *c, imp_node *n) { return scatter_like(c, n, GIR_OP_scatter_elements); }
int imp_cv_ScatterND(imp_ctx *c, imp_node *n) { return scatter_like(c, n, GIR_OP_scatter_nd); }

int imp_cv_OneHot(imp_ctx *c, imp_node *n) {
  gir_value *idx = imp_in(n, 0), *vals = imp_in(n, 2);
  if (!idx || !imp_in(n, 1) || !vals) return imp_fail(c, "needs indices, depth and values");
  int32_t cnt;
  double *depth = imp_const_floats(c, n->in[1], "input 'depth'", &cnt);
  if (!depth) return -1;
  if (cnt != 1) return imp_fail(c, "depth must hold exactly one value");
  if (!(depth[0] >= 1 && depth[0] < 9.2e18)) return imp_fail(c, "depth %g is not a positive count", depth[0]);
  if (gir_value_numel(vals) != 2) return imp_fail(c, "values must hold [off_value, on_value]");
  if (check_rank(c, idx->shape.rank + 1) < 0) return -1;
  int64_t axis;
  if (attr_axis(c, n, -1, idx->shape.rank + 1, &axis) < 0) return -1;
  gir_value *ins[2] = {idx, vals};
  gir_node *nd = imp_new_node(c, GIR_OP_one_hot, ins, 2, 1);
  gir_attr_set_int(c->g, nd, "depth", (int64_t)depth[0]);
  gir_attr_set_int(c->g, nd, "axis", axis);
  return imp_set_output(c, n, 0, imp_finish(c, nd));
}

/* --- generated tensors --- */

int imp_cv_Range(imp_ctx *c, imp_node *n) {
  gir_value *v[3] = {imp_in(n, 0), imp_in(n, 1), imp_in(n, 2)};
  static const char *const what[3] = {"input 'start'", "input 'limit'", "input 'delta'"};
  const void *d[3];
  for (int i = 0; i < 3; i++) {
    if (!(d[i] = imp_const_data(c, v[i], what[i]))) return -1;
    if (gir_value_numel(v[i]) != 1) return imp_fail(c, "%s must be a scalar", what[i]);
    if (v[i]->dtype != v[0]->dtype) return imp_fail(c, "start, limit and delta differ in type");
  }
  gir_dtype t = v[0]->dtype;
  double start, delta;
  int64_t count;
  if (gir_dtype_is_int(t)) {
    int64_t s = gir_load_i64(t, d[0], 0), l = gir_load_i64(t, d[1], 0), dl = gir_load_i64(t, d[2], 0);
    if (dl == 0) return imp_fail(c, "delta is 0");
    /* ceil((l - s) / dl) without overflow: the distance fits in uint64 */
    uint64_t span = dl > 0 ? (l > s ? (uint64_t)l - (uint64_t)s : 0) : (s > l ? (uint64_t)s - (uint64_t)l : 0);
    uint64_t mag = dl < 0 ? (uint64_t)(-(dl + 1)) + 1 : (uint64_t)dl, q = span ? (span - 1) / mag + 1 : 0;
    if (q > (uint64_t)INT64_MAX) return imp_fail(c, "Range has too many elements");
    count = (int64_t)q;
    start = (double)s;
    delta = (double)dl;
  } else if (gir_dtype_is_float(t)) {
    start = gir_load_f64(t, d[0], 0);
    double l = gir_load_f64(t, d[1], 0);
    delta = gir_load_f64(t, d[2], 0);
    double q = ceil((l - start) / delta);
    if (delta == 0 || !isfinite(q) || q > 1e15) return imp_fail(c, "start, limit and delta give no finite length");
    count = q < 0 ? 0 : (int64_t)q;
  } else
    return imp_fail(c, "Range of %s", gir_dtype_name(t));
  return imp_set_output(c, n, 0, iota(c, 1, &count, 0, t, start, delta));
}

/* mask[i, j] = j OP i + k over the last two dims, as [N, M] (k may be a run-time scalar). */
static gir_value *diag_mask(imp_ctx *c, int64_t rows, int64_t cols, gir_binary_fn cmp, int64_t k, gir_value *k_in) {
  int64_t rshape[2] = {rows, 1}, cshape[2] = {1, cols};
  gir_value *ri = iota(c, 2, rshape, 0, GIR_I64, k_in ? 0.0 : (double)k, 1.0);
  if (k_in) ri = imp_binary(c, GIR_BINARY_ADD, ri, imp_cast(c, k_in, GIR_I64));
  gir_value *ci = iota(c, 2, cshape, 1, GIR_I64, 0.0, 1.0);
  return imp_binary(c, cmp, ci, ri);
}

int imp_cv_Trilu(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *k_in = NULL;
  if (!x) return imp_fail(c, "needs an input");
  int32_t r = x->shape.rank;
  if (r < 2) return imp_fail(c, "input must have rank >= 2, has %d", r);
  int64_t k = 0;
  if (imp_in(n, 1)) {
    if (peek_const(c, n->in[1])) {
      if (const_int1(c, n->in[1], "input 'k'", &k) < 0) return -1;
    } else if (!(k_in = as_scalar(c, n->in[1], "input 'k'")))
      return -1;
  }
  int upper = imp_attr_int(n, "upper", 1) != 0;
  gir_value *mask = diag_mask(c, x->shape.dims[r - 2], x->shape.dims[r - 1], upper ? GIR_BINARY_GE : GIR_BINARY_LE,
                              k, k_in);
  return imp_set_output(c, n, 0, imp_where(c, mask, x, imp_scalar_like(c, x, 0)));
}

int imp_cv_EyeLike(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (x->shape.rank != 2) return imp_fail(c, "input must have rank 2, has %d", x->shape.rank);
  gir_dtype to = x->dtype;
  if (imp_attr(n, "dtype")) {
    int64_t code = imp_attr_int(n, "dtype", 0);
    to = gir_dtype_from_onnx((int32_t)code);
    if (to == GIR_DTYPE_NONE) return imp_fail(c, "attribute dtype: unknown element type code %lld", (long long)code);
  }
  if (!gir_dtype_first_class(to)) return imp_unsupported_node(c, n, "EyeLike of %s", gir_dtype_name(to));
  gir_value *mask = diag_mask(c, x->shape.dims[0], x->shape.dims[1], GIR_BINARY_EQ, imp_attr_int(n, "k", 0), NULL);
  return imp_set_output(c, n, 0, imp_cast(c, mask, to));
}

/* --- sorting and scans --- */

/* TopK with K computed at run time: every element sorted (k = the axis' length), and
 * the outputs carry K as their extent along the axis (a data-dependent size); a K
 * outside [0, length] takes a trap, as ONNX Runtime's error. */
static int topk_at_run_time(imp_ctx *c, imp_node *n, gir_value *x, gir_value *K, int64_t axis) {
  if (K->dtype != GIR_I64 || gir_value_numel(K) != 1) return imp_fail(c, "input 'K' must be one int64");
  int64_t dim = x->shape.dims[axis];
  gir_node *nd = imp_new_node(c, GIR_OP_topk, &x, 1, 2);
  gir_attr_set_int(c->g, nd, "k", dim);
  gir_attr_set_int(c->g, nd, "axis", axis);
  gir_attr_set_int(c->g, nd, "largest", imp_attr_int(n, "largest", 1) != 0);
  gir_attr_set_int(c->g, nd, "sorted", 1); /* the first K of all, in order: any K's answer */
  if (gir_node_infer(c->g, nd, c->err) < 0) return -1;
  gir_value *k = imp_scalar_of(c, K), *len = gir_const_scalar(c->g, GIR_I64, (double)dim);
  gir_value *bad = imp_binary(c, GIR_BINARY_OR, imp_binary(c, GIR_BINARY_LT, k, gir_const_scalar(c->g, GIR_I64, 0)),
                              imp_binary(c, GIR_BINARY_GT, k, len));
  gir_value *ext = imp_binary(c, GIR_BINARY_MAX, imp_binary(c, GIR_BINARY_MIN, k, len), gir_const_scalar(c->g, GIR_I64, 0));
  if (!bad || !ext) return -1;
  const gir_guard *g = gir_guard_new(c->g, bad, 1, c->g->cur_guard, "TopK's K out of range");
  const char *msg = gir_arena_printf(c->g->arena, "%s: K is outside [0, %lld], the length of axis %lld",
                                     c->origin ? c->origin : n->name, (long long)dim, (long long)axis);
  for (int i = 0; i < 2; i++) {
    gir_value *t = imp_trap(c, g, nd->out[i], msg);
    gir_value *y = t ? imp_where(c, bad, t, nd->out[i]) : NULL;
    if (!y) return -1;
    y->extent = ext;
    y->extent_axis = (int32_t)axis;
    if (imp_set_output(c, n, i, y) < 0) return -1;
  }
  return 0;
}

int imp_cv_TopK(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t k = 0, axis;
  if (n->opset < 10) {
    if (!imp_attr(n, "k")) return imp_fail(c, "attribute k is missing");
    k = imp_attr_int(n, "k", 0);
  } else if (imp_in(n, 1) && !peek_const(c, imp_in(n, 1))) { /* K computed at run time */
    if (attr_axis(c, n, -1, x->shape.rank, &axis) < 0) return -1;
    return topk_at_run_time(c, n, x, imp_in(n, 1), axis);
  } else if (const_int1(c, imp_in(n, 1), "input 'K'", &k) < 0)
    return -1;
  if (attr_axis(c, n, -1, x->shape.rank, &axis) < 0) return -1;
  if (k < 0 || k > x->shape.dims[axis])
    return imp_fail(c, "k = %lld is out of range for an axis of %lld", (long long)k, (long long)x->shape.dims[axis]);
  gir_node *nd = imp_new_node(c, GIR_OP_topk, &x, 1, 2);
  gir_attr_set_int(c->g, nd, "k", k);
  gir_attr_set_int(c->g, nd, "axis", axis);
  gir_attr_set_int(c->g, nd, "largest", n->opset >= 11 ? imp_attr_int(n, "largest", 1) != 0 : 1);
  gir_attr_set_int(c->g, nd, "sorted", n->opset >= 11 ? imp_attr_int(n, "sorted", 1) != 0 : 1);
  if (!imp_finish(c, nd)) return -1;
  if (imp_set_output(c, n, 0, nd->out[0]) < 0) return -1;
  return imp_set_output(c, n, 1, nd->out[1]);
}

static int cumulate(imp_ctx *c, imp_node *n, gir_cum_fn fn) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int64_t a = 0, axis;
  if (const_int1(c, imp_in(n, 1), "input 'axis'", &a) < 0 || imp_axis(c, a, x->shape.rank, &axis) < 0) return -1;
  gir_node *nd = imp_new_node(c, GIR_OP_cumulate, &x, 1, 1);
  gir_attr_set_int(c->g, nd, "fn", fn);
  gir_attr_set_int(c->g, nd, "axis", axis);
  gir_attr_set_int(c->g, nd, "exclusive", imp_attr_int(n, "exclusive", 0) != 0);
  gir_attr_set_int(c->g, nd, "reverse", imp_attr_int(n, "reverse", 0) != 0);
  return imp_set_output(c, n, 0, imp_finish(c, nd));
}

int imp_cv_CumSum(imp_ctx *c, imp_node *n) { return cumulate(c, n, GIR_CUM_SUM); }
int imp_cv_CumProd(imp_ctx *c, imp_node *n) { return cumulate(c, n, GIR_CUM_PROD); }

/* y[b, t] = x[b, t < len[b] ? len[b] - 1 - t : t] — an index tensor built from
 * iota and the lengths, broadcast to x's shape, then gather_elements on time. */
int imp_cv_ReverseSequence(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *lens = imp_in(n, 1);
  if (!x || !lens) return imp_fail(c, "needs input and sequence_lens");
  int32_t r = x->shape.rank;
  if (r < 2) return imp_fail(c, "input must have rank >= 2, has %d", r);
  int64_t ba = imp_attr_int(n, "batch_axis", 1), ta = imp_attr_int(n, "time_axis", 0);
  if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0))) return imp_fail(c, "batch_axis and time_axis must be 0 and 1");
  int64_t bs = x->shape.dims[ba], ts = x->shape.dims[ta];
  if (lens->shape.rank != 1 || lens->shape.dims[0] != bs)
    return imp_fail(c, "sequence_lens must have shape [%lld]", (long long)bs);
  int64_t s2[2], l2[2] = {1, 1};
  s2[ba] = bs;
  s2[ta] = ts;
  l2[ba] = bs;
  gir_value *t = iota(c, 2, s2, (int)ta, GIR_I64, 0.0, 1.0);
  gir_value *len = imp_reshape(c, imp_cast(c, lens, GIR_I64), 2, l2);
  gir_value *rev = imp_binary(c, GIR_BINARY_SUB, imp_binary(c, GIR_BINARY_SUB, len, imp_scalar(c, GIR_I64, 1)), t);
  gir_value *idx = imp_where(c, imp_binary(c, GIR_BINARY_LT, t, len), rev, t);
  int64_t dims[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) dims[i] = i < 2 ? s2[i] : 1;
  idx = imp_broadcast_to(c, imp_reshape(c, idx, r, dims), &x->shape);
  if (!idx) return -1;
  gir_value *ins[2] = {x, idx};
  gir_node *nd = imp_new_node(c, GIR_OP_gather_elements, ins, 2, 1);
  gir_attr_set_int(c->g, nd, "axis", ta);
  return imp_set_output(c, n, 0, imp_finish(c, nd));
}

/* --- data-dependent shapes: only with constant inputs --- */

/* The positions where v is non-zero, [1, numel] with its count as extent along axis
 * 1 (zeros past it), at run time (lower/lower_seq.c). */
static gir_value *nonzero_at_run_time(imp_ctx *c, gir_value *v) {
  gir_node *nd = imp_new_node(c, GIR_OP_nonzero, &v, 1, 2);
  if (gir_node_infer(c->g, nd, c->err) < 0) return NULL;
  nd->out[0]->extent = nd->out[1];
  nd->out[0]->extent_axis = 1;
  return nd->out[0];
}

/* Compress with a condition computed at run time: gather x by the positions where
 * it holds (a data-dependent count: an extent on the output's axis). A position
 * beyond the axis is an index the gather's run-time check refuses. */
static int compress_at_run_time(imp_ctx *c, imp_node *n, gir_value *x, gir_value *cond) {
  int has_axis = imp_attr(n, "axis") != NULL;
  int64_t axis = 0;
  if (has_axis && attr_axis(c, n, 0, x->shape.rank, &axis) < 0) return -1;
  if (!has_axis) {
    int64_t numel = gir_value_numel(x);
    if (!(x = imp_reshape(c, x, 1, &numel))) return -1;
  }
  gir_value *pos = nonzero_at_run_time(c, cond);
  if (!pos) return -1;
  int64_t m = cond->shape.dims[0];
  gir_value *idx = imp_reshape(c, pos, 1, &m);
  if (!idx) return -1;
  gir_value *ins[2] = {x, idx};
  gir_node *nd = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
  gir_attr_set_int(c->g, nd, "axis", axis);
  if (gir_node_infer(c->g, nd, c->err) < 0) return -1;
  nd->out[0]->extent = pos->extent;
  nd->out[0]->extent_axis = (int32_t)axis;
  return imp_set_output(c, n, 0, nd->out[0]);
}

int imp_cv_Compress(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0), *cond = imp_in(n, 1);
  if (!x || !cond) return imp_fail(c, "needs input and condition");
  const void *cd = peek_const(c, cond);
  if (cond->shape.rank != 1 || !gir_dtype_first_class(cond->dtype)) return imp_fail(c, "condition must be a 1-D bool");
  if (!cd) return compress_at_run_time(c, n, x, cond);
  int has_axis = imp_attr(n, "axis") != NULL;
  int64_t axis = 0;
  if (has_axis && attr_axis(c, n, 0, x->shape.rank, &axis) < 0) return -1;
  if (!has_axis) {
    int64_t numel = gir_value_numel(x);
    x = imp_reshape(c, x, 1, &numel);
    if (!x) return -1;
  }
  int64_t dim = x->shape.dims[axis], m = cond->shape.dims[0], k = 0;
  int64_t *picked = gir_arena_calloc(c->g->arena, (size_t)m + 1, sizeof *picked);
  for (int64_t i = 0; i < m; i++)
    if (gir_load_f64(cond->dtype, cd, i) != 0) {
      if (i >= dim)
        return imp_fail(c, "condition selects index %lld beyond the axis of %lld", (long long)i, (long long)dim);
      picked[k++] = i;
    }
  gir_value *ins[2] = {x, gir_const_i64s(c->g, picked, (int32_t)k)};
  gir_node *nd = imp_new_node(c, GIR_OP_gather, ins, 2, 1);
  gir_attr_set_int(c->g, nd, "axis", axis);
  return imp_set_output(c, n, 0, imp_finish(c, nd));
}

int imp_cv_NonZero(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  const void *d = peek_const(c, x);
  if (!gir_dtype_first_class(x->dtype)) return imp_unsupported_node(c, n, "NonZero of %s", gir_dtype_name(x->dtype));
  if (!d) return imp_set_output(c, n, 0, nonzero_at_run_time(c, x)); /* a data-dependent count */
  int64_t numel = gir_value_numel(x), nnz = 0;
  int32_t r = x->shape.rank ? x->shape.rank : 1; /* a scalar counts as a 1-element vector, as in numpy */
  for (int64_t i = 0; i < numel; i++) nnz += gir_load_f64(x->dtype, d, i) != 0;
  gir_shape s = {.rank = 2, .dims = {r, nnz}};
  gir_value *y = imp_const_new(c, GIR_I64, &s, NULL, "nonzero indices");
  if (!y) return -1;
  int64_t *out = y->data, j = 0;
  for (int64_t i = 0; i < numel; i++) {
    if (gir_load_f64(x->dtype, d, i) == 0) continue;
    int64_t rem = i;
    for (int a = r - 1; a >= 0; a--) {
      int64_t dim = x->shape.rank ? x->shape.dims[a] : 1;
      out[a * nnz + j] = rem % dim;
      rem /= dim;
    }
    j++;
  }
  return imp_set_output(c, n, 0, y);
}

/* --- Resize and Upsample --- */

typedef struct resize_args {
  int64_t sizes[GIR_MAX_RANK];
  double scales[GIR_MAX_RANK];
  double roi[2 * GIR_MAX_RANK];
  int mode, coord, nearest, exclude, has_roi;
  double cubic_a, extrapolation;
} resize_args;

static gir_value *emit_resize(imp_ctx *c, gir_value *x, const resize_args *a);

/* Rounds an interpolated integer tensor y (float64) half to even, saturates it
 * into t and casts, as the reference's saturate_cast. */
static gir_value *round_to_int(imp_ctx *c, gir_value *y, gir_dtype t) {
  if (!y) return NULL;
  gir_dtype ft = GIR_F64;
  int bits = gir_dtype_bits(t);
  y = imp_unary(c, GIR_UNARY_ROUND, y);
  if (bits <= 32) {
    double lo = gir_dtype_is_signed(t) ? -ldexp(1.0, bits - 1) : 0.0;
    double hi = gir_dtype_is_signed(t) ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
    y = imp_binary(c, GIR_BINARY_MIN, imp_binary(c, GIR_BINARY_MAX, y, imp_scalar(c, ft, lo)), imp_scalar(c, ft, hi));
  }
  return imp_cast(c, y, t);
}

/* Interpolating an integer tensor: in float64 (float32 would move values across
 * the .5 rounding boundary), then rounded and saturated back by round_to_int. */
static gir_value *emit_int_resize(imp_ctx *c, gir_value *x, const resize_args *a) {
  return round_to_int(c, emit_resize(c, imp_cast(c, x, GIR_F64), a), x->dtype);
}

static gir_value *emit_resize(imp_ctx *c, gir_value *x, const resize_args *a) {
  if (!x) return NULL;
  if (a->mode != GIR_RESIZE_NEAREST && gir_dtype_is_int(x->dtype)) return emit_int_resize(c, x, a);
  int r = x->shape.rank;
  gir_node *nd = imp_new_node(c, GIR_OP_resize, &x, 1, 1);
  gir_attr_set_ints(c->g, nd, "sizes", a->sizes, r);
  gir_attr_set_floats(c->g, nd, "scales", a->scales, r);
  gir_attr_set_int(c->g, nd, "mode", a->mode);
  gir_attr_set_int(c->g, nd, "coord", a->coord);
  gir_attr_set_int(c->g, nd, "nearest", a->nearest);
  gir_attr_set_float(c->g, nd, "cubic_a", a->cubic_a);
  gir_attr_set_int(c->g, nd, "exclude", a->exclude);
  gir_attr_set_float(c->g, nd, "extrapolation", a->extrapolation);
  if (a->has_roi) gir_attr_set_floats(c->g, nd, "roi", a->roi, 2 * r);
  return imp_finish(c, nd);
}

/* --- antialiased Resize ---
 * Antialiased linear and cubic resizing (Resize 18+, as the onnx reference's
 * _linear_coeffs_antialias/_cubic_coeffs_antialias): where an axis shrinks, the
 * filter is stretched by 1/scale and has as many taps as that takes. Every axis
 * is resized on its own (the reference is separable too), so each becomes a
 * matmul with a constant [out, in] weight matrix computed here, in double, from
 * the static shapes: the taps of each output position, edge taps clamped onto
 * the border as the reference's edge padding does. */

/* The taps' weights at `ratio` (in (0, 1]) into co (cap entries); the count, or
 * -1 when there would be more than cap. */
static int64_t aa_weights(const resize_args *a, double ratio, double scale, double *co, int64_t cap) {
  double s = scale < 1 ? scale : 1, sum = 0, A = a->cubic_a;
  int64_t n = 0;
  if (a->mode == GIR_RESIZE_LINEAR) {
    int64_t start = (int64_t)floor(-1 / s) + 1, foot = 2 - 2 * start;
    if (foot > cap) return -1;
    for (n = 0; n < foot; n++) {
      double t = 1 - fabs(((double)(start + n) - ratio) * s);
      co[n] = t < 0 ? 0 : t > 1 ? 1 : t;
    }
  } else {
    int64_t i0 = (int64_t)floor(-2 / s) + 1, i1 = 2 - i0;
    if (i1 - i0 > cap) return -1;
    for (int64_t i = i0; i < i1; i++, n++) {
      double x = fabs(s * ((double)i - ratio)), x2 = x * x, x3 = x * x2;
      co[n] = x <= 1 ? (A + 2) * x3 - (A + 3) * x2 + 1 : x < 2 ? A * x3 - 5 * A * x2 + 8 * A * x - 4 * A : 0.0;
    }
  }
  for (int64_t k = 0; k < n; k++) sum += co[k];
  for (int64_t k = 0; k < n; k++) co[k] /= sum;
  return n;
}

/* The source coordinate of output index y on an axis (the reference's _compute_x_ori). */
static double aa_x_ori(const resize_args *a, int ax, int r, int64_t in, int64_t out, double y) {
  double scale = a->scales[ax], out_w = scale * (double)in;
  switch (a->coord) {
  case GIR_COORD_ALIGN_CORNERS: return out_w == 1 ? 0 : y * (double)(in - 1) / (out_w - 1);
  case GIR_COORD_ASYMMETRIC: return y / scale;
  case GIR_COORD_TF_CROP_AND_RESIZE: {
    double r0 = a->roi[ax], r1 = a->roi[r + ax];
    return (out_w == 1 ? (r1 - r0) * (double)(in - 1) / 2 : y * (r1 - r0) * (double)(in - 1) / (out_w - 1)) +
           r0 * (double)(in - 1);
  }
  case GIR_COORD_PYTORCH_HALF_PIXEL: return out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  case GIR_COORD_HALF_PIXEL_SYMMETRIC:
    return (double)in / 2 * (1 - (double)out / out_w) + (y + 0.5) / scale - 0.5;
  default: return (y + 0.5) / scale - 0.5;
  }
}

/* x resized along axis ax by a matmul (x in the compute type). */
static gir_value *aa_axis(imp_ctx *c, gir_value *x, const resize_args *a, int ax) {
  int r = x->shape.rank;
  int64_t in = x->shape.dims[ax], out = a->sizes[ax], P = 1, Q = 1;
  for (int i = 0; i < r; i++) {
    if (i < ax) P *= x->shape.dims[i];
    if (i > ax) Q *= x->shape.dims[i];
  }
  double scale = a->scales[ax], s = scale < 1 ? scale : 1;
  int64_t cap = (int64_t)(4 / s) + 8; /* more than either filter's taps */
  if (cap > (1 << 24) || (double)out * (double)in > 1e8) {
    imp_fail(c, "antialiased resizing of axis %d (%lld to %lld) is too large", ax, (long long)in, (long long)out);
    return NULL;
  }
  double *co = imp_scratch(c, cap, sizeof *co, "antialias filter taps");
  double *w = co ? imp_scratch(c, out * in, sizeof *w, "antialias weight matrix") : NULL;
  double *bias = w ? imp_scratch(c, out, sizeof *bias, "antialias bias") : NULL;
  if (!bias) return NULL;
  int has_bias = 0;
  for (int64_t y = 0; y < out; y++) {
    double xo = aa_x_ori(a, ax, r, in, out, (double)y), xf = floor(xo);
    if (a->coord == GIR_COORD_TF_CROP_AND_RESIZE && (xo < 0 || xo > (double)(in - 1))) {
      bias[y] = a->extrapolation; /* the reference's extrapolation: the value itself, no taps */
      has_bias = 1;
      continue;
    }
    int64_t n = aa_weights(a, xo == xf ? 1.0 : xo - xf, scale, co, cap);
    if (n < 1) {
      imp_fail(c, "antialiased resizing: no filter taps on axis %d", ax);
      return NULL;
    }
    /* the n taps nearest xo, ties to the left (the reference's neighbour search) */
    int64_t pad = (n + 1) / 2;
    double xp = xo + (double)pad, pf = floor(xp), frac = xp - pf;
    int64_t off = n % 2 == 0 ? -(n / 2) + (frac != 0) : -((n - 1) / 2) + (frac > 0.5);
    int64_t first = (int64_t)pf + off - pad;
    if (a->exclude) {
      double sum = 0;
      for (int64_t k = 0; k < n; k++) {
        if (first + k < 0 || first + k >= in) co[k] = 0;
        sum += co[k];
      }
      for (int64_t k = 0; k < n; k++) co[k] /= sum == 0 ? 1 : sum;
    }
    for (int64_t k = 0; k < n; k++) {
      int64_t i = first + k < 0 ? 0 : first + k >= in ? in - 1 : first + k;
      w[y * in + i] += co[k];
    }
  }
  gir_dtype t = x->dtype;
  gir_shape ws = {.rank = 2, .dims = {out, in}};
  gir_value *wv = imp_const_new(c, t, &ws, NULL, "antialias weight matrix");
  if (!wv) return NULL;
  for (int64_t i = 0; i < out * in; i++) gir_store_f64(t, wv->data, i, w[i]);
  int64_t d3[3] = {P, in, Q};
  gir_value *y = imp_matmul(c, wv, imp_reshape(c, x, 3, d3)); /* [P, out, Q] */
  if (has_bias) {
    gir_shape bs = {.rank = 2, .dims = {out, 1}};
    gir_value *bv = imp_const_new(c, t, &bs, NULL, "antialias bias");
    if (!bv) return NULL;
    for (int64_t i = 0; i < out; i++) gir_store_f64(t, bv->data, i, bias[i]);
    y = imp_binary(c, GIR_BINARY_ADD, y, bv);
  }
  int64_t dims[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) dims[i] = i == ax ? out : x->shape.dims[i];
  return imp_reshape(c, y, r, dims);
}

static gir_value *emit_antialias(imp_ctx *c, gir_value *x, const resize_args *a) {
  gir_dtype t = x->dtype, ct = t == GIR_F32 || t == GIR_F16 || t == GIR_BF16 ? GIR_F32 : GIR_F64;
  int r = x->shape.rank;
  gir_value *y = imp_cast(c, x, ct);
  for (int ax = 0; y && ax < r; ax++) {
    int same_roi = !a->has_roi || (fabs(a->roi[ax]) <= 1e-9 && fabs(a->roi[r + ax] - 1) <= 1e-9);
    if (fabs(a->scales[ax] - 1) <= 1e-9 * fmax(1.0, fabs(a->scales[ax])) && a->sizes[ax] == x->shape.dims[ax] &&
        same_roi)
      continue; /* the identity, skipped as the reference does */
    y = aa_axis(c, y, a, ax);
  }
  if (!y) return NULL;
  return gir_dtype_is_int(t) ? round_to_int(c, y, t) : imp_cast(c, y, t);
}

/* Upsample (7-9) and Resize-10: output = floor(in * scale), asymmetric coordinates.
 * Their nearest rounding (as in onnxruntime) floors when upsampling an axis and
 * takes the ceiling when downsampling it; nearest resizing is separable, so a mix
 * of both becomes two resizes, downsampled axes first. */
static int legacy_resize(imp_ctx *c, imp_node *n, gir_value *x, const double *scales, int32_t cnt) {
  int32_t r = x->shape.rank;
  if (cnt != r) return imp_fail(c, "scales has %d entries for rank %d", cnt, r);
  const char *ms = imp_attr_string(c, n, "mode", "nearest");
  int mode;
  if (!strcmp(ms, "nearest")) mode = GIR_RESIZE_NEAREST;
  else if (!strcmp(ms, "linear") || !strcmp(ms, "bilinear")) mode = GIR_RESIZE_LINEAR;
  else return imp_fail(c, "attribute mode: unknown value '%s'", ms);
  resize_args a = {.mode = mode, .coord = GIR_COORD_ASYMMETRIC, .nearest = GIR_NEAREST_FLOOR, .cubic_a = -0.75};
  int down = 0, up = 0;
  for (int i = 0; i < r; i++) {
    if (!(scales[i] > 0) || !isfinite(scales[i])) return imp_fail(c, "scale %g on axis %d is invalid", scales[i], i);
    double o = floor(scales[i] * (double)x->shape.dims[i]);
    if (o > 9e18) return imp_fail(c, "scale %g on axis %d overflows", scales[i], i);
    down |= scales[i] < 1;
    up |= scales[i] > 1;
  }
  gir_value *y = x;
  for (int pass = 0; pass < 2; pass++) {
    /* pass 0: every axis (linear, or nearest in one direction); nearest with both: downsampled ones first */
    int split = mode == GIR_RESIZE_NEAREST && down && up;
    if (pass == 1 && !split) break;
    for (int i = 0; i < r; i++) {
      int take = !split || (pass == 0 ? scales[i] < 1 : scales[i] >= 1);
      a.scales[i] = take ? scales[i] : 1.0;
      a.sizes[i] = take ? (int64_t)floor(scales[i] * (double)y->shape.dims[i]) : y->shape.dims[i];
    }
    a.nearest = (split ? pass == 0 : down) ? GIR_NEAREST_CEIL : GIR_NEAREST_FLOOR;
    y = emit_resize(c, y, &a);
    if (!y) return -1;
  }
  return imp_set_output(c, n, 0, y);
}

int imp_cv_Upsample(imp_ctx *c, imp_node *n) {
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  if (n->opset < 7) return imp_unsupported_node(c, n, "Upsample before opset 7 (height_scale/width_scale)");
  double *scales;
  int32_t cnt;
  if (n->opset < 9) {
    cnt = imp_attr_floats(c, n, "scales", &scales);
    if (c->err->msg[0]) return -1;
    if (cnt < 0) return imp_fail(c, "attribute scales is missing");
  } else if (!(scales = imp_const_floats(c, imp_in(n, 1), "input 'scales'", &cnt)))
    return -1;
  return legacy_resize(c, n, x, scales, cnt);
}

int imp_cv_Resize(imp_ctx *c, imp_node *n) {
  static const char *const modes[] = {[GIR_RESIZE_NEAREST] = "nearest", [GIR_RESIZE_LINEAR] = "linear",
                                      [GIR_RESIZE_CUBIC] = "cubic"};
  static const char *const coords[] = {[GIR_COORD_HALF_PIXEL] = "half_pixel",
                                       [GIR_COORD_HALF_PIXEL_SYMMETRIC] = "half_pixel_symmetric",
                                       [GIR_COORD_PYTORCH_HALF_PIXEL] = "pytorch_half_pixel",
                                       [GIR_COORD_ALIGN_CORNERS] = "align_corners",
                                       [GIR_COORD_ASYMMETRIC] = "asymmetric",
                                       [GIR_COORD_TF_CROP_AND_RESIZE] = "tf_crop_and_resize"};
  static const char *const nearests[] = {[GIR_NEAREST_ROUND_PREFER_FLOOR] = "round_prefer_floor",
                                         [GIR_NEAREST_ROUND_PREFER_CEIL] = "round_prefer_ceil",
                                         [GIR_NEAREST_FLOOR] = "floor", [GIR_NEAREST_CEIL] = "ceil"};
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int32_t r = x->shape.rank, cnt;
  if (n->opset < 11) {
    double *scales = imp_const_floats(c, imp_in(n, 1), "input 'scales'", &cnt);
    return scales ? legacy_resize(c, n, x, scales, cnt) : -1;
  }
  resize_args a = {0};
  const char *cs = imp_attr_string(c, n, "coordinate_transformation_mode", "half_pixel");
  if (!strcmp(cs, "tf_half_pixel_for_nn"))
    return imp_unsupported_node(c, n, "coordinate_transformation_mode 'tf_half_pixel_for_nn'");
  if ((a.mode = pick(c, "mode", imp_attr_string(c, n, "mode", "nearest"), modes, GIR_RESIZE_MODE_COUNT)) < 0 ||
      (a.coord = pick(c, "coordinate_transformation_mode", cs, coords, GIR_COORD_COUNT)) < 0 ||
      (a.nearest = pick(c, "nearest_mode", imp_attr_string(c, n, "nearest_mode", "round_prefer_floor"), nearests,
                        GIR_NEAREST_COUNT)) < 0)
    return -1;
  a.cubic_a = imp_attr_float(n, "cubic_coeff_a", -0.75);
  a.exclude = imp_attr_int(n, "exclude_outside", 0) != 0;
  a.extrapolation = imp_attr_float(n, "extrapolation_value", 0.0);
  int stretch = 1, larger = 0, antialias = 0;
  int64_t ax[GIR_MAX_RANK];
  int32_t na = -1;
  if (n->opset >= 18) {
    antialias = imp_attr_int(n, "antialias", 0) && a.mode != GIR_RESIZE_NEAREST; /* nearest ignores it */
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
    const char *policy = imp_attr_string(c, n, "keep_aspect_ratio_policy", "stretch");
    int p = pick(c, "keep_aspect_ratio_policy", policy, policies, 3);
    if (p < 0) return -1;
    stretch = p == 0;
    larger = p == 2;
    int64_t *axes;
    na = imp_attr_ints(c, n, "axes", &axes);
    if (c->err->msg[0]) return -1;
    if (na >= 0 && norm_axes(c, axes, na, r, ax) < 0) return -1;
  }
  if (na < 0) {
    na = r;
    for (int i = 0; i < r; i++) ax[i] = i;
  }
  /* scales and sizes: exactly one is given (an empty tensor counts as absent) */
  gir_value *sv = imp_in(n, 2), *zv = imp_in(n, 3);
  if (sv && gir_value_numel(sv) == 0) sv = NULL;
  if (zv && gir_value_numel(zv) == 0) zv = NULL;
  if (!sv == !zv) return imp_fail(c, "exactly one of scales and sizes must be given");
  for (int i = 0; i < r; i++) {
    a.sizes[i] = x->shape.dims[i];
    a.scales[i] = 1.0;
  }
  if (sv) {
    double *sc = imp_const_floats(c, sv, "input 'scales'", &cnt);
    if (!sc) return -1;
    if (cnt != na) return imp_fail(c, "scales has %d entries for %d axes", cnt, na);
    for (int i = 0; i < na; i++) {
      /* the product in float32, as ONNX Runtime computes it (5 x 1.4f is 7.0 there,
       * 6.99… in double): what a model exported with scale 1.4 expects */
      double o = (double)((float)sc[i] * (float)x->shape.dims[ax[i]]);
      if (!(sc[i] > 0) || !(o < 9e18)) return imp_fail(c, "scale %g is invalid", sc[i]);
      a.scales[ax[i]] = sc[i];
      a.sizes[ax[i]] = (int64_t)o; /* floor (o > 0) */
    }
  } else {
    int64_t *sz = imp_const_ints(c, zv, "input 'sizes'", &cnt);
    if (!sz) return -1;
    if (cnt != na) return imp_fail(c, "sizes has %d entries for %d axes", cnt, na);
    double keep = 0;
    for (int i = 0; i < na; i++) {
      int64_t d = x->shape.dims[ax[i]];
      if (sz[i] < 0) return imp_fail(c, "sizes[%d] = %lld is negative", i, (long long)sz[i]);
      if (d == 0 && sz[i]) return imp_fail(c, "cannot resize an empty axis %lld", (long long)ax[i]);
      double s = d ? (double)sz[i] / (double)d : 1.0;
      a.sizes[ax[i]] = sz[i];
      a.scales[ax[i]] = s;
      if (i == 0 || (larger ? s > keep : s < keep)) keep = s;
    }
    if (!stretch)
      for (int i = 0; i < na; i++) {
        a.scales[ax[i]] = keep;
        a.sizes[ax[i]] = (int64_t)(keep * (double)x->shape.dims[ax[i]] + 0.5);
      }
  }
  if (a.coord == GIR_COORD_TF_CROP_AND_RESIZE) {
    double *roi = imp_const_floats(c, imp_in(n, 1), "input 'roi'", &cnt);
    if (!roi) return -1;
    if (cnt != 2 * na) return imp_fail(c, "roi has %d entries, %d expected", cnt, 2 * na);
    for (int i = 0; i < r; i++) {
      a.roi[i] = 0.0;
      a.roi[r + i] = 1.0;
    }
    for (int i = 0; i < na; i++) {
      a.roi[ax[i]] = roi[i];
      a.roi[r + ax[i]] = roi[na + i];
    }
    a.has_roi = 1;
  }
  return imp_set_output(c, n, 0, antialias ? emit_antialias(c, x, &a) : emit_resize(c, x, &a));
}
