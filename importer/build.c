/* build.c — builder helpers for converters: create canonical nodes, infer their
 * shapes, fold them when every input is constant (through the evaluator the
 * caller supplied), read constant payloads, and report errors with the ONNX
 * node they came from. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ctx.h"

#define DEFAULT_FOLD_MAX (1 << 20)           /* elements of one folded output */
#define FOLD_MAX_BYTES ((int64_t)256 << 20)  /* all folded outputs of one import */

int imp_fail(imp_ctx *c, const char *fmt, ...) {
  if (c->err->msg[0]) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
  va_end(ap);
  gir_err_oneline(c->err);
  return -1;
}

gir_node *imp_new_node(imp_ctx *c, gir_op op, gir_value *const *ins, int32_t n_in, int32_t n_out) {
  gir_node *n = gir_node_new(c->g, op, NULL, ins, n_in, n_out);
  n->origin = c->origin;
  return n;
}

gir_value *imp_trap(imp_ctx *c, const gir_guard *g, const gir_value *like, const char *msg) {
  const gir_guard *outer = c->g->cur_guard;
  c->g->cur_guard = g;
  gir_node *t = imp_new_node(c, GIR_OP_trap, NULL, 0, 1);
  c->g->cur_guard = outer;
  gir_attr_set_ints(c->g, t, "shape", like->shape.dims, like->shape.rank);
  gir_attr_set_int(c->g, t, "to", like->dtype);
  gir_attr_set_string(c->g, t, "message", msg);
  return gir_node_infer(c->g, t, c->err) < 0 ? NULL : t->out[0];
}

static int all_inputs_const(const gir_node *n) {
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] && !n->in[i]->data) return 0;
  return 1;
}

gir_value *imp_finish(imp_ctx *c, gir_node *n) {
  if (gir_node_infer(c->g, n, c->err) < 0) return NULL;
  gir_value *first = n->n_out ? n->out[0] : NULL;
  if (!c->opt || !c->opt->eval || !all_inputs_const(n)) return first;
  int64_t limit = c->opt->fold_max_elements > 0 ? c->opt->fold_max_elements : DEFAULT_FOLD_MAX;
  int64_t bytes = 0;
  for (int i = 0; i < n->n_out; i++) {
    if (gir_value_numel(n->out[i]) > limit) return first;
    bytes += gir_value_nbytes(n->out[i]);
  }
  /* past the budget, constant nodes are left to run at run time */
  if (bytes > FOLD_MAX_BYTES - c->folded_bytes) return first;
  c->folded_bytes += bytes;
  gir_err e = {{0}};
  /* An evaluator that cannot fold this node leaves it to run at run time. */
  if (gir_fold_node(c->opt->eval, c->g, n, &e) == 0 && c->g->nodes[c->g->n_nodes - 1] == n) c->g->n_nodes--;
  return first;
}

int imp_reserve(imp_ctx *c, int64_t count, size_t elem, const char *what) {
  int64_t left = IMP_MADE_MAX_BYTES - c->made_bytes;
  if (count < 0 || elem == 0 || count > left / (int64_t)elem)
    return imp_fail(c, "%s: %lld elements of %zu bytes exceed what is left (%lld bytes) of the importer's %lld MiB "
                    "budget for data it builds",
                    what, (long long)count, elem, (long long)left, (long long)(IMP_MADE_MAX_BYTES >> 20));
  c->made_bytes += count * (int64_t)elem;
  return 0;
}

void *imp_scratch(imp_ctx *c, int64_t count, size_t elem, const char *what) {
  if (imp_reserve(c, count + 1, elem, what) < 0) return NULL;
  void *p = gir_arena_calloc(c->g->arena, (size_t)count + 1, elem);
  if (!p) imp_fail(c, "%s: out of memory", what);
  return p;
}

gir_value *imp_const_new(imp_ctx *c, gir_dtype t, const gir_shape *s, const void *data, const char *what) {
  gir_err e = {{0}};
  int64_t numel = gir_shape_numel(s, &e);
  if (numel < 0) {
    imp_fail(c, "%s: %s", what, e.msg);
    return NULL;
  }
  if (imp_reserve(c, numel, gir_dtype_size(t), what) < 0) return NULL;
  return gir_const_new(c->g, NULL, t, s, data);
}

static gir_node *node1(imp_ctx *c, gir_op op, gir_value *x) { return imp_new_node(c, op, &x, 1, 1); }

gir_value *imp_unary_p(imp_ctx *c, gir_unary_fn fn, gir_value *x, double alpha, double beta, double gamma) {
  if (!x) return NULL;
  gir_node *n = node1(c, GIR_OP_unary, x);
  gir_attr_set_int(c->g, n, "fn", fn);
  gir_attr_set_float(c->g, n, "alpha", alpha);
  gir_attr_set_float(c->g, n, "beta", beta);
  gir_attr_set_float(c->g, n, "gamma", gamma);
  return imp_finish(c, n);
}

gir_value *imp_unary(imp_ctx *c, gir_unary_fn fn, gir_value *x) {
  if (!x) return NULL;
  gir_node *n = node1(c, GIR_OP_unary, x);
  gir_attr_set_int(c->g, n, "fn", fn);
  return imp_finish(c, n);
}

gir_value *imp_binary(imp_ctx *c, gir_binary_fn fn, gir_value *a, gir_value *b) {
  if (!a || !b) return NULL;
  gir_value *ins[2] = {a, b};
  gir_node *n = imp_new_node(c, GIR_OP_binary, ins, 2, 1);
  gir_attr_set_int(c->g, n, "fn", fn);
  return imp_finish(c, n);
}

gir_value *imp_where(imp_ctx *c, gir_value *cond, gir_value *a, gir_value *b) {
  if (!cond || !a || !b) return NULL;
  gir_value *ins[3] = {cond, a, b};
  return imp_finish(c, imp_new_node(c, GIR_OP_where, ins, 3, 1));
}

gir_value *imp_cast(imp_ctx *c, gir_value *x, gir_dtype to) {
  if (!x) return NULL;
  if (x->dtype == to) return x;
  gir_node *n = node1(c, GIR_OP_cast, x);
  gir_attr_set_int(c->g, n, "to", to);
  return imp_finish(c, n);
}

gir_value *imp_reshape(imp_ctx *c, gir_value *x, int32_t rank, const int64_t *dims) {
  if (!x) return NULL;
  gir_shape s = {.rank = rank};
  if (rank <= GIR_MAX_RANK) {
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
    if (gir_shape_equal(&s, &x->shape)) return x;
  }
  gir_node *n = node1(c, GIR_OP_reshape, x);
  gir_attr_set_ints(c->g, n, "shape", dims, rank);
  return imp_finish(c, n);
}

gir_value *imp_transpose(imp_ctx *c, gir_value *x, const int64_t *perm) {
  if (!x) return NULL;
  int identity = 1;
  for (int i = 0; i < x->shape.rank; i++) identity &= perm[i] == i;
  if (identity) return x;
  gir_node *n = node1(c, GIR_OP_transpose, x);
  gir_attr_set_ints(c->g, n, "perm", perm, x->shape.rank);
  return imp_finish(c, n);
}

gir_value *imp_concat(imp_ctx *c, gir_value *const *xs, int32_t cnt, int64_t axis) {
  for (int i = 0; i < cnt; i++)
    if (!xs[i]) return NULL;
  if (cnt == 1) return xs[0];
  gir_node *n = imp_new_node(c, GIR_OP_concat, xs, cnt, 1);
  gir_attr_set_int(c->g, n, "axis", axis);
  return imp_finish(c, n);
}

gir_value *imp_slice_axis(imp_ctx *c, gir_value *x, int axis, int64_t start, int64_t step, int64_t size) {
  if (!x) return NULL;
  int r = x->shape.rank;
  int64_t st[GIR_MAX_RANK], sp[GIR_MAX_RANK], sz[GIR_MAX_RANK];
  for (int i = 0; i < r; i++) {
    st[i] = 0;
    sp[i] = 1;
    sz[i] = x->shape.dims[i];
  }
  st[axis] = start;
  sp[axis] = step;
  sz[axis] = size;
  if (start == 0 && step == 1 && size == x->shape.dims[axis]) return x;
  gir_node *n = node1(c, GIR_OP_slice, x);
  gir_attr_set_ints(c->g, n, "starts", st, r);
  gir_attr_set_ints(c->g, n, "steps", sp, r);
  gir_attr_set_ints(c->g, n, "sizes", sz, r);
  return imp_finish(c, n);
}

gir_value *imp_broadcast_to(imp_ctx *c, gir_value *x, const gir_shape *s) {
  if (!x) return NULL;
  if (gir_shape_equal(&x->shape, s)) return x;
  gir_node *n = node1(c, GIR_OP_broadcast_to, x);
  gir_attr_set_ints(c->g, n, "shape", s->dims, s->rank);
  return imp_finish(c, n);
}

gir_value *imp_layer_norm(imp_ctx *c, gir_value *x, gir_value *scale, gir_value *bias, int64_t axis, double eps,
                          int rms) {
  if (!x) return NULL;
  gir_value *ins[3] = {x, scale, bias};
  int n_in = bias ? 3 : scale ? 2 : 1;
  gir_node *g = imp_new_node(c, GIR_OP_layer_norm, ins, n_in, 1);
  gir_attr_set_int(c->g, g, "axis", axis);
  gir_attr_set_float(c->g, g, "epsilon", eps);
  gir_attr_set_int(c->g, g, "rms", rms);
  if (c->ort_float) gir_attr_set_int(c->g, g, "ort", 1); /* as ONNX Runtime's kernel (compute_reduce.c) */
  return imp_finish(c, g);
}

int imp_out_wanted(const imp_node *n, int i) { return i < n->n_out && n->out_names[i] && n->out_names[i][0]; }

gir_value *imp_reduce(imp_ctx *c, gir_reduce_fn fn, gir_value *x, const int64_t *axes, int32_t n_axes, int keepdims) {
  if (!x) return NULL;
  gir_node *n = node1(c, GIR_OP_reduce, x);
  gir_attr_set_int(c->g, n, "fn", fn);
  gir_attr_set_ints(c->g, n, "axes", axes, n_axes);
  gir_attr_set_int(c->g, n, "keepdims", keepdims);
  return imp_finish(c, n);
}

gir_value *imp_matmul(imp_ctx *c, gir_value *a, gir_value *b) {
  if (!a || !b) return NULL;
  gir_value *ins[2] = {a, b};
  return imp_finish(c, imp_new_node(c, GIR_OP_matmul, ins, 2, 1));
}

gir_value *imp_scalar(imp_ctx *c, gir_dtype t, double v) { return gir_const_scalar(c->g, t, v); }
gir_value *imp_scalar_like(imp_ctx *c, const gir_value *x, double v) { return gir_const_scalar(c->g, x->dtype, v); }

static const void *known_data(imp_ctx *c, const gir_value *v) {
  if (!v->is_input || !c->opt) return NULL;
  for (int i = 0; i < c->opt->n_known; i++) {
    const imp_known_input *k = &c->opt->known[i];
    if (!strcmp(k->name, v->name) && k->dtype == v->dtype && gir_shape_equal(&k->shape, &v->shape)) return k->data;
  }
  return NULL;
}

/* The value of v if it can be computed at import: a constant, a known input, or
 * the output of a node whose inputs are such values (evaluated on demand, for
 * this question only: the graph keeps computing v at run time). */
static const void *demand(imp_ctx *c, gir_value *v, int depth) {
  if (v->data) return v->data;
  const void *k = known_data(c, v);
  if (k || !v->producer || depth > 64 || !c->opt || !c->opt->eval) return k;
  gir_node *n = v->producer;
  const void *vals[64];
  if (n->n_in > 64 || n->n_out > 8) return NULL;
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] && !(vals[i] = demand(c, n->in[i], depth + 1))) return NULL;
  /* evaluate with the inputs' values lent to them, then take everything back */
  int lent[64] = {0};
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] && !n->in[i]->data) {
      n->in[i]->data = (void *)vals[i];
      lent[i] = 1;
    }
  gir_err e = {{0}};
  int rc = c->opt->eval->eval(c->opt->eval->ctx, c->g, n, &e);
  const void *result = rc == 0 ? v->data : NULL;
  for (int i = 0; i < n->n_in; i++)
    if (lent[i]) n->in[i]->data = NULL;
  for (int i = 0; i < n->n_out; i++) n->out[i]->data = NULL;
  return result;
}

const void *imp_const_data(imp_ctx *c, const gir_value *v, const char *what) {
  if (!v) {
    imp_fail(c, "%s is missing", what);
    return NULL;
  }
  const void *d = demand(c, (gir_value *)v, 0);
  if (d) return d;
  imp_fail(c, "%s must be a constant, but '%s' is computed at run time", what, v->name);
  return NULL;
}

int64_t *imp_const_ints(imp_ctx *c, const gir_value *v, const char *what, int32_t *n) {
  const void *d = imp_const_data(c, v, what);
  if (!d) return NULL;
  if (!gir_dtype_is_int(v->dtype)) {
    imp_fail(c, "%s must hold integers, not %s", what, gir_dtype_name(v->dtype));
    return NULL;
  }
  int64_t cnt = gir_value_numel(v);
  if (cnt > (1 << 24)) {
    imp_fail(c, "%s has too many elements", what);
    return NULL;
  }
  int64_t *out = gir_arena_calloc(c->g->arena, (size_t)cnt + 1, sizeof *out);
  for (int64_t i = 0; i < cnt; i++) out[i] = gir_load_i64(v->dtype, d, i);
  *n = (int32_t)cnt;
  return out;
}

double *imp_const_floats(imp_ctx *c, const gir_value *v, const char *what, int32_t *n) {
  const void *d = imp_const_data(c, v, what);
  if (!d) return NULL;
  int64_t cnt = gir_value_numel(v);
  if (cnt > (1 << 24)) {
    imp_fail(c, "%s has too many elements", what);
    return NULL;
  }
  double *out = gir_arena_calloc(c->g->arena, (size_t)cnt + 1, sizeof *out);
  for (int64_t i = 0; i < cnt; i++) out[i] = gir_load_f64(v->dtype, d, i);
  *n = (int32_t)cnt;
  return out;
}

int imp_set_output(imp_ctx *c, imp_node *n, int i, gir_value *v) {
  if (i >= n->n_out || !n->out_names[i] || !n->out_names[i][0]) return 0; /* output not requested */
  if (!v) return imp_fail(c, "output %d was not produced", i);
  n->out[i] = v;
  /* Generated names take the ONNX name, so dumps and errors read like the model. */
  if (v->name[0] == '%') v->name = gir_arena_strdup(c->g->arena, n->out_names[i]);
  return imp_scope_bind(c, n->out_names[i], v);
}

gir_value *imp_scalar_of(imp_ctx *c, gir_value *x) {
  int64_t none[1] = {0};
  return imp_reshape(c, x, 0, none);
}
