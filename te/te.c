/* te.c — constructors for tensor expressions (see te.h). Type agreement between
 * operands is an internal invariant of the compute definitions, so it is asserted,
 * not reported: user input never reaches these checks unvalidated. */
#include <assert.h>
#include <string.h>
#include <stdlib.h>
#include "te.h"

static const char *const unop_names[TE_UNOP_COUNT] = {
    "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "asinh", "acosh", "atanh", "tanh", "erf", "floor", "ceil", "round", "trunc", "not", "bitnot", "isnan", "isinf"};
static const char *const binop_names[TE_BINOP_COUNT] = {
    "add", "sub", "mul", "div", "floordiv", "mod", "floormod", "min", "max", "pow", "and", "or", "xor",
    "shl", "shr", "eq", "ne", "lt", "le", "gt", "ge"};

const char *te_unop_name(te_unop op) { return op >= 0 && op < TE_UNOP_COUNT ? unop_names[op] : "?"; }
const char *te_binop_name(te_binop op) { return op >= 0 && op < TE_BINOP_COUNT ? binop_names[op] : "?"; }

void te_ctx_init(te_ctx *c, gir_arena *a, gir_err *err) {
  c->arena = a;
  c->err = err;
  c->next_var = 0;
  c->next_tensor = 0;
  c->gpu = 0;
}

static void *alloc(te_ctx *c, size_t n) {
  void *p = gir_arena_alloc(c->arena, n);
  if (!p) abort(); /* out of memory while building IR: nothing sensible to report */
  return p;
}

static te_expr *expr(te_ctx *c, te_kind k, gir_dtype t) {
  te_expr *e = alloc(c, sizeof *e);
  e->kind = k;
  e->dtype = t;
  return e;
}

te_var *te_var_new(te_ctx *c, const char *name, int64_t extent) {
  te_var *v = alloc(c, sizeof *v);
  v->id = c->next_var++;
  v->name = name;
  v->extent = extent;
  return v;
}

te_tensor *te_placeholder(te_ctx *c, const char *name, gir_dtype t, int32_t rank, const int64_t *shape) {
  assert(rank >= 0 && rank <= GIR_MAX_RANK);
  te_tensor *x = alloc(c, sizeof *x);
  memset(x, 0, sizeof *x);
  x->kind = TE_PLACEHOLDER;
  x->name = name;
  x->dtype = t;
  x->rank = rank;
  for (int i = 0; i < rank; i++) x->shape[i] = shape[i];
  x->id = c->next_tensor++;
  return x;
}

void te_axes(te_ctx *c, int32_t rank, const int64_t *shape, te_var **axes) {
  static const char *const names[GIR_MAX_RANK] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
  for (int i = 0; i < rank; i++) axes[i] = te_var_new(c, names[i], shape[i]);
}

te_tensor *te_compute(te_ctx *c, const char *name, gir_dtype t, int32_t rank, const int64_t *shape, te_var *const *axes,
                      te_expr *body) {
  te_tensor *x = te_placeholder(c, name, t, rank, shape);
  x->kind = TE_COMPUTE;
  for (int i = 0; i < rank; i++) {
    assert(axes[i]->extent == shape[i]);
    x->axis[i] = axes[i];
  }
  assert(body->dtype == t);
  x->body = body;
  return x;
}

te_expr *te_int(te_ctx *c, int64_t v) {
  te_expr *e = expr(c, TE_INT, GIR_I64);
  e->u.i = v;
  return e;
}

te_expr *te_const(te_ctx *c, gir_dtype t, double v) {
  te_expr *e;
  if (gir_dtype_is_float(t)) {
    e = expr(c, TE_FLOAT, t);
    e->u.f = v;
  } else {
    e = expr(c, TE_INT, t);
    if (t == GIR_BOOL) e->u.i = v != 0;
    else if (v != v) e->u.i = 0;
    else if (v >= 9.2233720368547758e18) e->u.i = INT64_MAX;
    else if (v <= -9.2233720368547758e18) e->u.i = INT64_MIN;
    else e->u.i = (int64_t)v;
  }
  return e;
}

te_expr *te_v(te_ctx *c, te_var *v) {
  te_expr *e = expr(c, TE_VAR, GIR_I64);
  e->u.var = v;
  return e;
}

te_expr *te_load(te_ctx *c, te_tensor *t, te_expr *const *idx) {
  te_expr *e = expr(c, TE_LOAD, t->dtype);
  e->u.load.t = t;
  e->u.load.idx = alloc(c, sizeof(te_expr *) * (size_t)(t->rank + 1));
  for (int i = 0; i < t->rank; i++) {
    assert(idx[i]->dtype == GIR_I64);
    e->u.load.idx[i] = idx[i];
  }
  return e;
}

te_expr *te_un(te_ctx *c, te_unop op, te_expr *a) {
  gir_dtype t = (op == TE_ISNAN || op == TE_ISINF) ? GIR_BOOL : a->dtype;
  te_expr *e = expr(c, TE_UNARY, t);
  e->u.un.op = op;
  e->u.un.a = a;
  return e;
}

te_expr *te_bin(te_ctx *c, te_binop op, te_expr *a, te_expr *b) {
  assert(a->dtype == b->dtype);
  gir_dtype t = op >= TE_EQ ? GIR_BOOL : a->dtype;
  te_expr *e = expr(c, TE_BINARY, t);
  e->u.bin.op = op;
  e->u.bin.a = a;
  e->u.bin.b = b;
  return e;
}

te_expr *te_select(te_ctx *c, te_expr *cond, te_expr *a, te_expr *b) {
  assert(cond->dtype == GIR_BOOL && a->dtype == b->dtype);
  te_expr *e = expr(c, TE_SELECT, a->dtype);
  e->u.sel.c = cond;
  e->u.sel.a = a;
  e->u.sel.b = b;
  return e;
}

te_expr *te_cast(te_ctx *c, gir_dtype t, te_expr *a) {
  if (a->dtype == t) return a;
  te_expr *e = expr(c, TE_CAST, t);
  e->u.cast.a = a;
  return e;
}

te_expr *te_bitcast(te_ctx *c, gir_dtype t, te_expr *a) {
  assert(gir_dtype_size(t) == gir_dtype_size(a->dtype));
  if (a->dtype == t) return a;
  te_expr *e = expr(c, TE_BITCAST, t);
  e->u.cast.a = a;
  return e;
}

static te_expr *reduce(te_ctx *c, te_combiner comb, te_var *const *axes, int32_t n_axes, te_expr *src, te_expr *cond,
                       gir_dtype t) {
  te_expr *e = expr(c, TE_REDUCE, t);
  e->u.red.comb = comb;
  e->u.red.n_axes = n_axes;
  e->u.red.axes = alloc(c, sizeof(te_var *) * (size_t)(n_axes + 1));
  for (int i = 0; i < n_axes; i++) e->u.red.axes[i] = axes[i];
  e->u.red.src = src;
  e->u.red.cond = cond;
  return e;
}

te_expr *te_reduce(te_ctx *c, te_combiner comb, te_var *const *axes, int32_t n_axes, te_expr *src, te_expr *cond) {
  assert(comb != TE_ARGMAX && comb != TE_ARGMIN);
  assert(!cond || cond->dtype == GIR_BOOL);
  return reduce(c, comb, axes, n_axes, src, cond, src->dtype);
}

te_expr *te_reduce_narrow(te_ctx *c, te_var *const *axes, int32_t n_axes, te_expr *src, gir_dtype t) {
  assert(gir_dtype_is_float(t) && gir_dtype_is_float(src->dtype) && gir_dtype_size(t) < gir_dtype_size(src->dtype));
  return reduce(c, TE_SUM, axes, n_axes, src, NULL, t);
}

te_expr *te_argreduce(te_ctx *c, te_combiner comb, te_var *const *axes, int32_t n_axes, te_expr *src, int select_last) {
  assert(comb == TE_ARGMAX || comb == TE_ARGMIN);
  te_expr *e = reduce(c, comb, axes, n_axes, src, NULL, GIR_I64);
  e->u.red.select_last = select_last;
  return e;
}

te_expr *te_add(te_ctx *c, te_expr *a, te_expr *b) { return te_bin(c, TE_ADD, a, b); }
te_expr *te_sub(te_ctx *c, te_expr *a, te_expr *b) { return te_bin(c, TE_SUB, a, b); }
te_expr *te_mul(te_ctx *c, te_expr *a, te_expr *b) { return te_bin(c, TE_MUL, a, b); }
te_expr *te_div(te_ctx *c, te_expr *a, te_expr *b) { return te_bin(c, TE_DIV, a, b); }
te_expr *te_lt(te_ctx *c, te_expr *a, te_expr *b) { return te_bin(c, TE_LT, a, b); }
te_expr *te_ge(te_ctx *c, te_expr *a, te_expr *b) { return te_bin(c, TE_GE, a, b); }
te_expr *te_and(te_ctx *c, te_expr *a, te_expr *b) { return te_bin(c, TE_AND, a, b); }

te_expr *te_in_range(te_ctx *c, te_expr *i, int64_t n) {
  return te_and(c, te_ge(c, i, te_int(c, 0)), te_lt(c, i, te_int(c, n)));
}

te_expr *te_load_bcast(te_ctx *c, te_tensor *t, te_expr *const *idx, int32_t out_rank) {
  te_expr *ix[GIR_MAX_RANK];
  int off = out_rank - t->rank;
  assert(off >= 0);
  for (int i = 0; i < t->rank; i++) ix[i] = t->shape[i] == 1 ? te_int(c, 0) : idx[off + i];
  return te_load(c, t, ix);
}

te_expr *te_load_bcast_axes(te_ctx *c, te_tensor *t, te_var *const *axes, int32_t out_rank) {
  te_expr *ix[GIR_MAX_RANK];
  for (int i = 0; i < out_rank; i++) ix[i] = te_v(c, axes[i]);
  return te_load_bcast(c, t, ix, out_rank);
}

te_expr *te_subst(te_ctx *c, const te_expr *e, te_var *const *vars, te_expr *const *repl, int32_t n) {
  te_expr *x;
  switch (e->kind) {
  case TE_VAR:
    for (int i = 0; i < n; i++)
      if (vars[i] == e->u.var) return repl[i];
    return (te_expr *)e;
  case TE_INT: case TE_FLOAT: return (te_expr *)e;
  case TE_LOAD: {
    te_expr *idx[GIR_MAX_RANK];
    for (int i = 0; i < e->u.load.t->rank; i++) idx[i] = te_subst(c, e->u.load.idx[i], vars, repl, n);
    return te_load(c, e->u.load.t, idx);
  }
  case TE_UNARY: return te_un(c, e->u.un.op, te_subst(c, e->u.un.a, vars, repl, n));
  case TE_BINARY:
    return te_bin(c, e->u.bin.op, te_subst(c, e->u.bin.a, vars, repl, n), te_subst(c, e->u.bin.b, vars, repl, n));
  case TE_SELECT:
    return te_select(c, te_subst(c, e->u.sel.c, vars, repl, n), te_subst(c, e->u.sel.a, vars, repl, n),
                     te_subst(c, e->u.sel.b, vars, repl, n));
  case TE_CAST: return te_cast(c, e->dtype, te_subst(c, e->u.cast.a, vars, repl, n));
  case TE_BITCAST: return te_bitcast(c, e->dtype, te_subst(c, e->u.cast.a, vars, repl, n));
  case TE_REDUCE:
    x = alloc(c, sizeof *x);
    *x = *e;
    x->u.red.src = te_subst(c, e->u.red.src, vars, repl, n);
    x->u.red.cond = e->u.red.cond ? te_subst(c, e->u.red.cond, vars, repl, n) : NULL;
    return x;
  default: return (te_expr *)e;
  }
}

int te_uses_vars(const te_expr *e, te_var *const *vs, int n) {
  if (!e) return 0;
  switch (e->kind) {
  case TE_VAR:
    for (int i = 0; i < n; i++)
      if (vs[i] == e->u.var) return 1;
    return 0;
  case TE_LOAD:
    for (int i = 0; i < e->u.load.t->rank; i++)
      if (te_uses_vars(e->u.load.idx[i], vs, n)) return 1;
    return 0;
  case TE_UNARY: return te_uses_vars(e->u.un.a, vs, n);
  case TE_BINARY: return te_uses_vars(e->u.bin.a, vs, n) || te_uses_vars(e->u.bin.b, vs, n);
  case TE_SELECT:
    return te_uses_vars(e->u.sel.c, vs, n) || te_uses_vars(e->u.sel.a, vs, n) || te_uses_vars(e->u.sel.b, vs, n);
  case TE_CAST: case TE_BITCAST: return te_uses_vars(e->u.cast.a, vs, n);
  case TE_REDUCE: return te_uses_vars(e->u.red.src, vs, n) || te_uses_vars(e->u.red.cond, vs, n);
  default: return 0;
  }
}

void te_visit_load_exprs(const te_expr *e, void (*f)(const te_expr *load, void *arg), void *arg) {
  switch (e->kind) {
  case TE_LOAD:
    f(e, arg);
    for (int i = 0; i < e->u.load.t->rank; i++) te_visit_load_exprs(e->u.load.idx[i], f, arg);
    break;
  case TE_UNARY: te_visit_load_exprs(e->u.un.a, f, arg); break;
  case TE_BINARY:
    te_visit_load_exprs(e->u.bin.a, f, arg);
    te_visit_load_exprs(e->u.bin.b, f, arg);
    break;
  case TE_SELECT:
    te_visit_load_exprs(e->u.sel.c, f, arg);
    te_visit_load_exprs(e->u.sel.a, f, arg);
    te_visit_load_exprs(e->u.sel.b, f, arg);
    break;
  case TE_CAST: case TE_BITCAST: te_visit_load_exprs(e->u.cast.a, f, arg); break;
  case TE_REDUCE:
    te_visit_load_exprs(e->u.red.src, f, arg);
    if (e->u.red.cond) te_visit_load_exprs(e->u.red.cond, f, arg);
    break;
  default: break;
  }
}

typedef struct tensor_visit {
  void (*f)(te_tensor *t, void *arg);
  void *arg;
} tensor_visit;

static void visit_tensor(const te_expr *load, void *arg) {
  const tensor_visit *v = arg;
  v->f(load->u.load.t, v->arg);
}

void te_visit_loads(const te_expr *e, void (*f)(te_tensor *t, void *arg), void *arg) {
  tensor_visit v = {f, arg};
  te_visit_load_exprs(e, visit_tensor, &v);
}

int te_may_trap(const te_expr *e) {
  switch (e->kind) {
  case TE_LOAD: return 1;
  case TE_UNARY: return te_may_trap(e->u.un.a);
  case TE_BINARY:
    if (!gir_dtype_is_float(e->u.bin.a->dtype) &&
        (e->u.bin.op == TE_DIV || e->u.bin.op == TE_MOD || e->u.bin.op == TE_FLOORDIV || e->u.bin.op == TE_FLOORMOD))
      return 1;
    return te_may_trap(e->u.bin.a) || te_may_trap(e->u.bin.b);
  case TE_SELECT: return te_may_trap(e->u.sel.c) || te_may_trap(e->u.sel.a) || te_may_trap(e->u.sel.b);
  case TE_CAST: case TE_BITCAST: return te_may_trap(e->u.cast.a);
  case TE_REDUCE: return 1;
  default: return 0;
  }
}

/* Structural equality of two expressions (same variables, same tensors). */
static int te_same(const te_expr *a, const te_expr *b) {
  if (a == b) return 1;
  if (a->kind != b->kind || a->dtype != b->dtype) return 0;
  switch (a->kind) {
  case TE_INT: return a->u.i == b->u.i;
  case TE_FLOAT: return a->u.f == b->u.f || (a->u.f != a->u.f && b->u.f != b->u.f);
  case TE_VAR: return a->u.var == b->u.var;
  case TE_LOAD:
    if (a->u.load.t != b->u.load.t) return 0;
    for (int i = 0; i < a->u.load.t->rank; i++)
      if (!te_same(a->u.load.idx[i], b->u.load.idx[i])) return 0;
    return 1;
  case TE_UNARY: return a->u.un.op == b->u.un.op && te_same(a->u.un.a, b->u.un.a);
  case TE_BINARY: return a->u.bin.op == b->u.bin.op && te_same(a->u.bin.a, b->u.bin.a) && te_same(a->u.bin.b, b->u.bin.b);
  case TE_SELECT: return te_same(a->u.sel.c, b->u.sel.c) && te_same(a->u.sel.a, b->u.sel.a) && te_same(a->u.sel.b, b->u.sel.b);
  case TE_CAST: case TE_BITCAST: return te_same(a->u.cast.a, b->u.cast.a);
  default: return 0;
  }
}

/* 1 if e occurs in hay. */
static int te_occurs(const te_expr *e, const te_expr *hay) {
  if (te_same(e, hay)) return 1;
  switch (hay->kind) {
  case TE_LOAD:
    for (int i = 0; i < hay->u.load.t->rank; i++)
      if (te_occurs(e, hay->u.load.idx[i])) return 1;
    return 0;
  case TE_UNARY: return te_occurs(e, hay->u.un.a);
  case TE_BINARY: return te_occurs(e, hay->u.bin.a) || te_occurs(e, hay->u.bin.b);
  case TE_SELECT: return te_occurs(e, hay->u.sel.c) || te_occurs(e, hay->u.sel.a) || te_occurs(e, hay->u.sel.b);
  case TE_CAST: case TE_BITCAST: return te_occurs(e, hay->u.cast.a);
  default: return 0;
  }
}

int te_may_trap_beyond(const te_expr *e, const te_expr *done) {
  if (!te_may_trap(e) || te_occurs(e, done)) return 0;
  switch (e->kind) {
  case TE_LOAD: return 1; /* a load evaluated nowhere else */
  case TE_UNARY: return te_may_trap_beyond(e->u.un.a, done);
  case TE_BINARY:
    if (!gir_dtype_is_float(e->u.bin.a->dtype) &&
        (e->u.bin.op == TE_DIV || e->u.bin.op == TE_MOD || e->u.bin.op == TE_FLOORDIV || e->u.bin.op == TE_FLOORMOD))
      return 1;
    return te_may_trap_beyond(e->u.bin.a, done) || te_may_trap_beyond(e->u.bin.b, done);
  case TE_SELECT:
    return te_may_trap_beyond(e->u.sel.c, done) || te_may_trap_beyond(e->u.sel.a, done) ||
           te_may_trap_beyond(e->u.sel.b, done);
  case TE_CAST: case TE_BITCAST: return te_may_trap_beyond(e->u.cast.a, done);
  default: return 1;
  }
}

te_expr *te_rewrite_loads(te_ctx *c, const te_expr *e, te_load_fn f, void *arg) {
  switch (e->kind) {
  case TE_LOAD: {
    te_expr *idx[GIR_MAX_RANK];
    for (int i = 0; i < e->u.load.t->rank; i++) idx[i] = te_rewrite_loads(c, e->u.load.idx[i], f, arg);
    return f(c, e, idx, arg);
  }
  case TE_UNARY: return te_un(c, e->u.un.op, te_rewrite_loads(c, e->u.un.a, f, arg));
  case TE_BINARY:
    return te_bin(c, e->u.bin.op, te_rewrite_loads(c, e->u.bin.a, f, arg), te_rewrite_loads(c, e->u.bin.b, f, arg));
  case TE_SELECT:
    return te_select(c, te_rewrite_loads(c, e->u.sel.c, f, arg), te_rewrite_loads(c, e->u.sel.a, f, arg),
                     te_rewrite_loads(c, e->u.sel.b, f, arg));
  case TE_CAST: return te_cast(c, e->dtype, te_rewrite_loads(c, e->u.cast.a, f, arg));
  case TE_BITCAST: return te_bitcast(c, e->dtype, te_rewrite_loads(c, e->u.cast.a, f, arg));
  case TE_REDUCE: {
    te_expr *r = alloc(c, sizeof *r);
    *r = *e;
    r->u.red.src = te_rewrite_loads(c, e->u.red.src, f, arg);
    if (e->u.red.cond) r->u.red.cond = te_rewrite_loads(c, e->u.red.cond, f, arg);
    return r;
  }
  default: return (te_expr *)e;
  }
}
