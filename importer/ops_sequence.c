/* ops_sequence.c — ONNX sequence and optional ops (opsets 11 to 25), resolved at
 * import time.
 *
 * kiln compiles static graphs, so a sequence is known at compile time to be a list
 * of tensor values that the importer holds (imp_seq, ctx.h): the graph only ever
 * sees its elements. The ops that build, edit and read sequences are list edits
 * here, and whatever they compute becomes plain canonical ops:
 *   SequenceEmpty / SequenceConstruct   a new list
 *   SequenceInsert / SequenceErase      a list edit at a compile-time position
 *   SequenceAt                          that element
 *   SequenceLength                      an int64 constant
 *   SplitToSequence                     slices (reshaped when keepdims = 0)
 *   ConcatFromSequence                  concat (new_axis: of the elements with a unit axis inserted)
 * SequenceMap is unrolled per element in ops_control.c, like Loop.
 *
 * An optional is its content when present and "absent" otherwise, which is known
 * at compile time: Optional wraps (or makes an absent optional), OptionalHasElement
 * is a bool constant, OptionalGetElement unwraps. Opset 18 lets the last two read
 * plain tensors and sequences too; since a present optional is its content here,
 * every version reads them alike.
 *
 * Positions (SequenceInsert/Erase/At) and split sizes decide which values exist,
 * so they must be known at compile time: constants, values folded from constants,
 * or graph inputs bound with --test-data. Anything else is reported unsupported. */
#include <string.h>
#include "ops.h"

/* Sequence input i, or NULL with an error. */
static const imp_seq *seq_in(imp_ctx *c, const imp_node *n, int i, const char *what) {
  if (i < n->n_in && n->seq[i]) return n->seq[i];
  if (i < n->n_in && n->in[i]) imp_fail(c, "input '%s' must be a sequence, not a tensor", what);
  else imp_fail(c, "input '%s' is missing", what);
  return NULL;
}

static int since(imp_ctx *c, const imp_node *n, int64_t version) {
  if (n->opset >= version) return 0;
  return imp_fail(c, "%s exists from opset %lld on", n->op_type, (long long)version);
}

/* The position held by input i (absent: def), normalized against len within
 * [-len, len + extra - 1]. 0, -1 (error) or -2 (not known at compile time: reported). */
static int position(imp_ctx *c, imp_node *n, int i, int64_t def, int64_t len, int extra, int64_t *out) {
  int64_t p = def;
  if (i < n->n_in && n->in[i]) {
    gir_value *v = n->in[i];
    if (!gir_dtype_is_int(v->dtype) || gir_value_numel(v) != 1)
      return imp_fail(c, "input 'position' must be one integer, got %s with %lld elements", gir_dtype_name(v->dtype),
                      (long long)gir_value_numel(v));
    int32_t cnt;
    int64_t *pv = imp_const_ints(c, v, "input 'position'", &cnt);
    if (!pv) {
      c->err->msg[0] = 0;
      return imp_unsupported_node(c, n, "unsupported: sequence position not known at compile time ('%s' is computed "
                                        "at run time)", v->name);
    }
    p = pv[0];
  }
  if (p < -len || p > len - 1 + extra)
    return imp_fail(c, "position %lld is out of range for a sequence of length %lld", (long long)p, (long long)len);
  *out = p < 0 ? p + len : p;
  return 0;
}

static int check_elem(imp_ctx *c, const imp_seq *s, const gir_value *t) {
  if (s->elem == GIR_DTYPE_NONE || s->elem == t->dtype) return 0;
  return imp_fail(c, "the sequence holds %s, the tensor is %s", gir_dtype_name(s->elem), gir_dtype_name(t->dtype));
}

int imp_cv_SequenceEmpty(imp_ctx *c, imp_node *n) {
  if (since(c, n, 11) < 0) return -1;
  int64_t code = imp_attr_int(n, "dtype", 1); /* FLOAT */
  gir_dtype dt = gir_dtype_from_onnx((int32_t)code);
  if (dt == GIR_DTYPE_NONE || !gir_dtype_first_class(dt))
    return imp_unsupported_node(c, n, "dtype %lld is not a tensor type kiln supports", (long long)code);
  return imp_set_output_seq(c, n, 0, imp_seq_new(c, NULL, 0, dt));
}

int imp_cv_SequenceConstruct(imp_ctx *c, imp_node *n) {
  if (since(c, n, 11) < 0) return -1;
  if (n->n_in < 1) return imp_fail(c, "needs at least one input");
  for (int i = 0; i < n->n_in; i++) {
    if (!n->in[i]) return imp_fail(c, "input %d is missing", i);
    if (n->in[i]->dtype != n->in[0]->dtype)
      return imp_fail(c, "input %d is %s, input 0 is %s: a sequence holds one element type", i,
                      gir_dtype_name(n->in[i]->dtype), gir_dtype_name(n->in[0]->dtype));
  }
  return imp_set_output_seq(c, n, 0, imp_seq_new(c, n->in, n->n_in, n->in[0]->dtype));
}

int imp_cv_SequenceInsert(imp_ctx *c, imp_node *n) {
  if (since(c, n, 11) < 0) return -1;
  const imp_seq *s = seq_in(c, n, 0, "input_sequence");
  gir_value *t = n->n_in > 1 ? n->in[1] : NULL;
  if (!s) return -1;
  if (!t) return imp_fail(c, "input 'tensor' is missing");
  if (check_elem(c, s, t) < 0) return -1;
  int64_t at;
  int rc = position(c, n, 2, s->n, s->n, 1, &at);
  if (rc < 0) return rc;
  gir_value **items = gir_arena_calloc(c->g->arena, (size_t)s->n + 2, sizeof *items);
  for (int32_t i = 0, k = 0; i <= s->n; i++) items[i] = i == at ? t : s->items[k++];
  return imp_set_output_seq(c, n, 0, imp_seq_new(c, items, s->n + 1, t->dtype));
}

int imp_cv_SequenceErase(imp_ctx *c, imp_node *n) {
  if (since(c, n, 11) < 0) return -1;
  const imp_seq *s = seq_in(c, n, 0, "input_sequence");
  if (!s) return -1;
  if (s->n == 0) return imp_fail(c, "the sequence is empty: nothing to erase");
  int64_t at;
  int rc = position(c, n, 1, -1, s->n, 0, &at);
  if (rc < 0) return rc;
  gir_value **items = gir_arena_calloc(c->g->arena, (size_t)s->n + 1, sizeof *items);
  for (int32_t i = 0, k = 0; i < s->n; i++)
    if (i != at) items[k++] = s->items[i];
  return imp_set_output_seq(c, n, 0, imp_seq_new(c, items, s->n - 1, s->elem));
}

int imp_cv_SequenceAt(imp_ctx *c, imp_node *n) {
  if (since(c, n, 11) < 0) return -1;
  const imp_seq *s = seq_in(c, n, 0, "input_sequence");
  if (!s) return -1;
  if (n->n_in < 2 || !n->in[1]) return imp_fail(c, "input 'position' is missing");
  int64_t at;
  int rc = position(c, n, 1, 0, s->n, 0, &at);
  if (rc < 0) return rc;
  return imp_set_output(c, n, 0, s->items[at]);
}

int imp_cv_SequenceLength(imp_ctx *c, imp_node *n) {
  if (since(c, n, 11) < 0) return -1;
  const imp_seq *s = seq_in(c, n, 0, "input_sequence");
  if (!s) return -1;
  return imp_set_output(c, n, 0, gir_const_scalar(c->g, GIR_I64, (double)s->n));
}

int imp_cv_SplitToSequence(imp_ctx *c, imp_node *n) {
  if (since(c, n, 11) < 0) return -1;
  gir_value *x = n->n_in > 0 ? n->in[0] : NULL, *split = n->n_in > 1 ? n->in[1] : NULL;
  if (!x) return imp_fail(c, "input 'input' is missing");
  int32_t r = x->shape.rank;
  if (r < 1) return imp_fail(c, "input 'input' is a scalar: nothing to split");
  int64_t axis;
  if (imp_axis(c, imp_attr_int(n, "axis", 0), r, &axis) < 0) return -1;
  int64_t dim = x->shape.dims[axis], keepdims = imp_attr_int(n, "keepdims", 1);
  int64_t *sizes, cnt = 0;
  if (!split) { /* pieces of 1, the axis kept or removed */
    sizes = gir_arena_calloc(c->g->arena, (size_t)dim + 1, sizeof *sizes);
    for (; cnt < dim; cnt++) sizes[cnt] = 1;
  } else {
    if (split->shape.rank > 1)
      return imp_fail(c, "input 'split' must be a scalar or 1-D, has rank %d", split->shape.rank);
    if (!gir_dtype_is_int(split->dtype)) return imp_fail(c, "input 'split' must hold integers");
    int32_t got;
    int64_t *sv = imp_const_ints(c, split, "input 'split'", &got);
    if (!sv) {
      c->err->msg[0] = 0;
      return imp_unsupported_node(c, n, "unsupported: the split sizes (which fix the sequence length) are not known "
                                        "at compile time ('%s' is computed at run time)", split->name);
    }
    if (split->shape.rank == 0) { /* chunks of sv[0], the last one smaller */
      if (sv[0] <= 0) return imp_fail(c, "input 'split' is %lld; a chunk size must be positive", (long long)sv[0]);
      int64_t pieces = dim / sv[0] + (dim % sv[0] != 0);
      sizes = gir_arena_calloc(c->g->arena, (size_t)pieces + 1, sizeof *sizes);
      for (int64_t at = 0; at < dim; at += sv[0]) sizes[cnt++] = dim - at < sv[0] ? dim - at : sv[0];
    } else {
      int64_t sum = 0;
      for (int32_t i = 0; i < got; i++) {
        if (sv[i] < 0) return imp_fail(c, "input 'split' holds %lld; sizes must be >= 0", (long long)sv[i]);
        sum += sv[i];
      }
      if (sum != dim)
        return imp_fail(c, "input 'split' sums to %lld, but axis %lld has size %lld", (long long)sum, (long long)axis,
                        (long long)dim);
      sizes = sv;
      cnt = got;
    }
  }
  if (cnt > (1 << 16)) return imp_unsupported_node(c, n, "a sequence of %lld elements", (long long)cnt);
  gir_value **items = gir_arena_calloc(c->g->arena, (size_t)cnt + 1, sizeof *items);
  int64_t dims[GIR_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++)
    if (i != axis) dims[k++] = x->shape.dims[i];
  for (int64_t i = 0, at = 0; i < cnt; at += sizes[i++]) {
    gir_value *p = imp_slice_axis(c, x, (int)axis, at, 1, sizes[i]);
    if (p && !split && !keepdims) p = imp_reshape(c, p, r - 1, dims);
    if (!(items[i] = p)) return -1;
  }
  return imp_set_output_seq(c, n, 0, imp_seq_new(c, items, (int32_t)cnt, x->dtype));
}

int imp_cv_ConcatFromSequence(imp_ctx *c, imp_node *n) {
  if (since(c, n, 11) < 0) return -1;
  const imp_seq *s = seq_in(c, n, 0, "input_sequence");
  if (!s) return -1;
  if (!imp_attr(n, "axis")) return imp_fail(c, "attribute axis is missing");
  if (s->n == 0) return imp_fail(c, "the sequence is empty: nothing to concatenate");
  int64_t new_axis = imp_attr_int(n, "new_axis", 0), axis;
  if (new_axis != 0 && new_axis != 1)
    return imp_fail(c, "attribute new_axis must be 0 or 1, got %lld", (long long)new_axis);
  int32_t r = s->items[0]->shape.rank;
  if (new_axis && r >= GIR_MAX_RANK) return imp_fail(c, "stacking rank-%d elements exceeds the rank limit", r);
  if (imp_axis(c, imp_attr_int(n, "axis", 0), r + (int32_t)new_axis, &axis) < 0) return -1;
  gir_value **xs = s->items;
  if (new_axis) { /* stack: each element with a unit axis inserted */
    xs = gir_arena_calloc(c->g->arena, (size_t)s->n + 1, sizeof *xs);
    for (int32_t i = 0; i < s->n; i++) {
      const gir_value *e = s->items[i];
      if (e->shape.rank != r) return imp_fail(c, "element %d has rank %d, element 0 rank %d", i, e->shape.rank, r);
      int64_t dims[GIR_MAX_RANK];
      for (int d = 0, k = 0; d <= r; d++) dims[d] = d == axis ? 1 : e->shape.dims[k++];
      if (!(xs[i] = imp_reshape(c, s->items[i], r + 1, dims))) return -1;
    }
  }
  return imp_set_output(c, n, 0, imp_concat_many(c, xs, s->n, axis));
}

int imp_cv_Optional(imp_ctx *c, imp_node *n) {
  if (since(c, n, 15) < 0) return -1;
  if (n->n_in > 0 && (n->in[0] || n->seq[0])) return imp_set_output_item(c, n, 0, imp_input_item(n, 0));
  if (n->n_in == 0 && !imp_attr(n, "type"))
    return imp_fail(c, "an Optional without input needs attribute type");
  return imp_set_output_absent(c, n, 0); /* no input, or an absent optional */
}

int imp_cv_OptionalHasElement(imp_ctx *c, imp_node *n) {
  if (since(c, n, 15) < 0) return -1;
  int has = n->n_in > 0 && (n->in[0] || n->seq[0]);
  return imp_set_output(c, n, 0, gir_const_scalar(c->g, GIR_BOOL, has));
}

int imp_cv_OptionalGetElement(imp_ctx *c, imp_node *n) {
  if (since(c, n, 15) < 0) return -1;
  if (n->n_in < 1 || (!n->in[0] && !n->seq[0]))
    return imp_fail(c, "the optional is absent (known at compile time): it has no element to get");
  return imp_set_output_item(c, n, 0, imp_input_item(n, 0));
}

/* Identity of a sequence or of an absent optional. */
static int identity(imp_ctx *c, imp_node *n) {
  if (n->n_in < 1) return imp_fail(c, "needs an input");
  return imp_set_output_item(c, n, 0, imp_input_item(n, 0));
}

static const struct {
  const char *op_type;
  imp_convert_fn fn;
} takes_sequences[] = {
    {"Identity", identity},
    {"SequenceInsert", imp_cv_SequenceInsert},
    {"SequenceErase", imp_cv_SequenceErase},
    {"SequenceAt", imp_cv_SequenceAt},
    {"SequenceLength", imp_cv_SequenceLength},
    {"ConcatFromSequence", imp_cv_ConcatFromSequence},
    {"SequenceMap", imp_cv_SequenceMap},
    {"Optional", imp_cv_Optional},
    {"OptionalHasElement", imp_cv_OptionalHasElement},
    {"OptionalGetElement", imp_cv_OptionalGetElement},
    {"Loop", imp_cv_Loop},
};

imp_convert_fn imp_find_sequence_converter(const char *op_type) {
  for (size_t i = 0; i < sizeof takes_sequences / sizeof takes_sequences[0]; i++)
    if (!strcmp(takes_sequences[i].op_type, op_type)) return takes_sequences[i].fn;
  return NULL;
}
