/* tir_eval.c — the loop-IR interpreter (see tir_eval.h). The scalar operator
 * semantics below are a transcription of lower/te_eval.c (TE is the statement
 * of each op's meaning; the loop IR must compute the same thing), kept in one
 * place here so that the simplifier folds constants with the very functions the
 * interpreter runs. Expressions are evaluated one lane at a time: every vector
 * node of the IR is lane-wise (ramp lane l is base + l*stride, broadcast repeats
 * its scalar), so a lane's value depends only on that lane of its operands. It
 * is slow and simple on purpose. */
#include <math.h>
#include <string.h>
#include "tir_eval.h"

/* --- scalar semantics --- */

int64_t tir_wrap_int(gir_dtype t, int64_t v) {
  switch (t) {
  case GIR_I8: return (int8_t)(uint8_t)v;
  case GIR_I16: return (int16_t)(uint16_t)v;
  case GIR_I32: return (int32_t)(uint32_t)v;
  case GIR_U8: return (uint8_t)v;
  case GIR_U16: return (uint16_t)v;
  case GIR_U32: return (uint32_t)v;
  case GIR_BOOL: return v != 0;
  default: return v;
  }
}

double tir_round_float(gir_dtype t, double v) {
  switch (t) {
  case GIR_F32: return (double)(float)v;
  case GIR_F16: return gir_f16_to_f32(gir_f32_to_f16((float)v));
  case GIR_BF16: return gir_bf16_to_f32(gir_f32_to_bf16((float)v));
  default: return v;
  }
}

static tir_value fval(double f) { return (tir_value){.f = f}; }
static tir_value ival(int64_t i) { return (tir_value){.i = i}; }

tir_value tir_const_value(const tir_expr *e) {
  if (e->kind == TIR_FLOAT) return fval(tir_round_float(e->dtype, e->u.f));
  return ival(tir_wrap_int(e->dtype, e->u.i));
}

tir_value tir_value_unop(te_unop op, gir_dtype t, tir_value a) {
  if (gir_dtype_is_float(t)) {
    double x = a.f, r;
    switch (op) {
    case TE_NEG: r = -x; break;
    case TE_ABS: r = fabs(x); break;
    case TE_EXP: r = exp(x); break;
    case TE_LOG: r = log(x); break;
    case TE_SQRT: r = sqrt(x); break;
    case TE_SIN: r = sin(x); break;
    case TE_COS: r = cos(x); break;
    case TE_TAN: r = tan(x); break;
    case TE_ASIN: r = asin(x); break;
    case TE_ACOS: r = acos(x); break;
    case TE_ATAN: r = atan(x); break;
    case TE_SINH: r = sinh(x); break;
    case TE_COSH: r = cosh(x); break;
    case TE_ASINH: r = asinh(x); break;
    case TE_ACOSH: r = acosh(x); break;
    case TE_ATANH: r = atanh(x); break;
    case TE_TANH: r = tanh(x); break;
    case TE_ERF: r = erf(x); break;
    case TE_FLOOR: r = floor(x); break;
    case TE_CEIL: r = ceil(x); break;
    case TE_ROUND: r = nearbyint(x); break; /* default rounding mode: half to even */
    case TE_TRUNC: r = trunc(x); break;
    case TE_ISNAN: return ival(isnan(x));
    case TE_ISINF: return ival(isinf(x));
    default: r = x; break;
    }
    return fval(tir_round_float(t, r));
  }
  int64_t x = a.i, r;
  switch (op) {
  case TE_NEG: r = (int64_t)(0 - (uint64_t)x); break;
  case TE_ABS: r = x < 0 && t != GIR_U64 ? (int64_t)(0 - (uint64_t)x) : x; break;
  case TE_NOT: r = !x; break;
  case TE_BITNOT: r = ~x; break;
  case TE_ISNAN: case TE_ISINF: return ival(0);
  default: r = x; break; /* floor/ceil/round/trunc (and the rest) of integers */
  }
  return ival(tir_wrap_int(t, r));
}

static int64_t ipow(int64_t b, int64_t e) {
  if (e < 0) return b == 1 ? 1 : b == -1 ? (e & 1 ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)b;
  while (e) {
    if (e & 1) r *= x;
    x *= x;
    e >>= 1;
  }
  return (int64_t)r;
}

tir_value tir_value_binop(te_binop op, gir_dtype t, tir_value a, tir_value b) {
  if (gir_dtype_is_float(t)) {
    double x = a.f, y = b.f, r;
    switch (op) {
    case TE_ADD: r = x + y; break;
    case TE_SUB: r = x - y; break;
    case TE_MUL: r = x * y; break;
    case TE_DIV: r = x / y; break;
    case TE_FLOORDIV: r = floor(x / y); break;
    case TE_MOD: r = fmod(x, y); break;
    case TE_FLOORMOD: r = x - floor(x / y) * y; break;
    case TE_MIN: r = isnan(x) || isnan(y) ? NAN : x < y ? x : y; break;
    case TE_MAX: r = isnan(x) || isnan(y) ? NAN : x > y ? x : y; break;
    case TE_POW: r = pow(x, y); break;
    case TE_EQ: return ival(x == y);
    case TE_NE: return ival(x != y);
    case TE_LT: return ival(x < y);
    case TE_LE: return ival(x <= y);
    case TE_GT: return ival(x > y);
    case TE_GE: return ival(x >= y);
    default: r = 0; break; /* logical ops are never built on floats */
    }
    return fval(tir_round_float(t, r));
  }
  int64_t x = a.i, y = b.i, r;
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  int u64 = t == GIR_U64;
  int bits = gir_dtype_bits(t);
  switch (op) {
  case TE_ADD: r = (int64_t)(ux + uy); break;
  case TE_SUB: r = (int64_t)(ux - uy); break;
  case TE_MUL: r = (int64_t)(ux * uy); break;
  case TE_DIV:
    if (y == 0) r = 0;
    else if (u64) r = (int64_t)(ux / uy);
    else if (x == INT64_MIN && y == -1) r = x;
    else r = x / y;
    break;
  case TE_FLOORDIV:
    if (y == 0) r = 0;
    else if (u64) r = (int64_t)(ux / uy);
    else if (x == INT64_MIN && y == -1) r = x;
    else {
      r = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) r--;
    }
    break;
  case TE_MOD:
    if (y == 0) r = 0;
    else if (u64) r = (int64_t)(ux % uy);
    else if (y == -1) r = 0;
    else r = x % y;
    break;
  case TE_FLOORMOD:
    if (y == 0) r = 0;
    else if (u64) r = (int64_t)(ux % uy);
    else if (y == -1) r = 0;
    else {
      r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
    }
    break;
  case TE_MIN: r = u64 ? (int64_t)(ux < uy ? ux : uy) : (x < y ? x : y); break;
  case TE_MAX: r = u64 ? (int64_t)(ux > uy ? ux : uy) : (x > y ? x : y); break;
  case TE_POW: r = ipow(x, y); break;
  case TE_AND: r = t == GIR_BOOL ? (x && y) : (x & y); break;
  case TE_OR: r = t == GIR_BOOL ? (x || y) : (x | y); break;
  case TE_XOR: r = t == GIR_BOOL ? ((!x) != (!y)) : (x ^ y); break;
  case TE_SHL: r = (uy >= (uint64_t)bits) ? 0 : (int64_t)(ux << uy); break;
  case TE_SHR: {
    uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
    r = (uy >= (uint64_t)bits) ? 0 : (int64_t)((ux & mask) >> uy);
    break;
  }
  case TE_EQ: return ival(x == y);
  case TE_NE: return ival(x != y);
  case TE_LT: return ival(u64 ? ux < uy : x < y);
  case TE_LE: return ival(u64 ? ux <= uy : x <= y);
  case TE_GT: return ival(u64 ? ux > uy : x > y);
  case TE_GE: return ival(u64 ? ux >= uy : x >= y);
  default: r = 0; break;
  }
  return ival(tir_wrap_int(t, r));
}

tir_value tir_value_cast(gir_dtype to, gir_dtype from, tir_value a) {
  if (gir_dtype_is_float(to)) {
    double d = gir_dtype_is_float(from) ? a.f : from == GIR_U64 ? (double)(uint64_t)a.i : (double)a.i;
    return fval(tir_round_float(to, d));
  }
  if (to == GIR_BOOL) return ival(gir_dtype_is_float(from) ? a.f != 0 : a.i != 0);
  if (gir_dtype_is_float(from)) {
    double d = a.f;
    if (d != d) return ival(0);
    if (to == GIR_U64) return ival(d <= 0 ? 0 : d >= 1.8446744073709552e19 ? -1 : (int64_t)(uint64_t)d);
    int64_t i = d >= 9.2233720368547758e18 ? INT64_MAX : d <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)d;
    return ival(tir_wrap_int(to, i));
  }
  return ival(tir_wrap_int(to, a.i));
}

/* --- environment --- */

int tir_env_init(tir_env *env, gir_arena *scratch, int32_t n_vars, int32_t n_buffers, int64_t budget, gir_err *err) {
  memset(env, 0, sizeof *env);
  env->scratch = scratch;
  env->n_vars = n_vars;
  env->n_buffers = n_buffers;
  env->budget = budget;
  env->err = err;
  env->vars = gir_arena_calloc(scratch, (size_t)n_vars + 1, sizeof *env->vars);
  env->bufs = gir_arena_calloc(scratch, (size_t)n_buffers + 1, sizeof *env->bufs);
  env->local_cache = gir_arena_calloc(scratch, (size_t)n_buffers + 1, sizeof *env->local_cache);
  if (!env->vars || !env->bufs || !env->local_cache) return gir_errf(err, "out of memory");
  return 0;
}

void tir_env_bind(tir_env *env, const tir_buffer *buf, void *data) {
  if (buf->id >= 0 && buf->id < env->n_buffers) env->bufs[buf->id] = data;
}

void tir_env_set(tir_env *env, const tir_var *v, tir_value x) {
  if (v->id >= 0 && v->id < env->n_vars) env->vars[v->id] = x;
}

void tir_env_set_int(tir_env *env, const tir_var *v, int64_t x) { tir_env_set(env, v, ival(x)); }

static int fail(tir_env *env, const char *what, const char *name) {
  if (!env->failed) gir_errf(env->err, "%s%s", what, name ? name : "");
  env->failed = 1;
  return -1;
}

/* The buffer's memory, or NULL (error reported). */
static void *buffer(tir_env *env, const tir_buffer *buf) {
  if (buf->id < 0 || buf->id >= env->n_buffers || !env->bufs[buf->id]) {
    fail(env, "buffer is not bound: ", buf->name);
    return NULL;
  }
  return env->bufs[buf->id];
}

static int in_bounds(tir_env *env, const tir_buffer *buf, int64_t ix, const char *what) {
  if (ix >= 0 && ix < buf->size) return 1;
  if (!env->failed)
    gir_errf(env->err, "%s of %s out of bounds: index %lld not in [0, %lld)", what, buf->name, (long long)ix,
             (long long)buf->size);
  env->failed = 1;
  return 0;
}

/* --- expressions --- */

tir_value tir_eval_expr(tir_env *env, const tir_expr *e, int32_t lane) {
  if (env->failed) return ival(0);
  if (env->budget && ++env->work > env->budget) {
    fail(env, "evaluation exceeds its work budget", NULL);
    return ival(0);
  }
  if (e->lanes == 1) lane = 0;
  switch (e->kind) {
  case TIR_INT: case TIR_FLOAT: return tir_const_value(e);
  case TIR_VAR:
    if (e->u.var->id < 0 || e->u.var->id >= env->n_vars) {
      fail(env, "variable id out of range: ", e->u.var->name);
      return ival(0);
    }
    return env->vars[e->u.var->id];
  case TIR_LOAD: {
    const tir_buffer *buf = e->u.load.buf;
    int64_t ix = tir_eval_expr(env, e->u.load.index, lane).i;
    void *data = buffer(env, buf);
    if (!data || !in_bounds(env, buf, ix, "load")) return ival(0);
    if (gir_dtype_is_float(buf->dtype)) return fval(gir_load_f64(buf->dtype, data, ix));
    return ival(gir_load_i64(buf->dtype, data, ix));
  }
  case TIR_UNARY: return tir_value_unop(e->u.un.op, e->u.un.a->dtype, tir_eval_expr(env, e->u.un.a, lane));
  case TIR_BINARY: {
    tir_value a = tir_eval_expr(env, e->u.bin.a, lane), b = tir_eval_expr(env, e->u.bin.b, lane);
    return tir_value_binop(e->u.bin.op, e->u.bin.a->dtype, a, b);
  }
  case TIR_SELECT: {
    tir_value c = tir_eval_expr(env, e->u.sel.c, lane);
    tir_value a = tir_eval_expr(env, e->u.sel.a, lane), b = tir_eval_expr(env, e->u.sel.b, lane);
    return c.i ? a : b;
  }
  case TIR_IF_THEN_ELSE:
    return tir_eval_expr(env, e->u.sel.c, lane).i ? tir_eval_expr(env, e->u.sel.a, lane)
                                                  : tir_eval_expr(env, e->u.sel.b, lane);
  case TIR_CAST: return tir_value_cast(e->dtype, e->u.cast.a->dtype, tir_eval_expr(env, e->u.cast.a, lane));
  case TIR_RAMP: {
    gir_dtype t = e->dtype;
    tir_value base = tir_eval_expr(env, e->u.ramp.base, 0), stride = tir_eval_expr(env, e->u.ramp.stride, 0);
    tir_value l = gir_dtype_is_float(t) ? fval(lane) : ival(tir_wrap_int(t, lane));
    return tir_value_binop(TE_ADD, t, base, tir_value_binop(TE_MUL, t, l, stride));
  }
  case TIR_BROADCAST: return tir_eval_expr(env, e->u.bcast.value, 0);
  default: fail(env, "unknown expression kind", NULL); return ival(0);
  }
}

/* --- statements --- */

static int run(tir_env *env, const tir_stmt *s);

static int run_for(tir_env *env, const tir_stmt *s) {
  const tir_var *v = s->u.loop.var;
  if (v->id < 0 || v->id >= env->n_vars) return fail(env, "variable id out of range: ", v->name);
  int64_t min = tir_eval_expr(env, s->u.loop.min, 0).i, extent = tir_eval_expr(env, s->u.loop.extent, 0).i;
  if (env->failed) return -1;
  tir_value saved = env->vars[v->id];
  for (int64_t k = 0; k < extent; k++) {
    env->vars[v->id] = ival((int64_t)((uint64_t)min + (uint64_t)k));
    if (run(env, s->u.loop.body) < 0) return -1;
  }
  env->vars[v->id] = saved;
  return 0;
}

static int run_store(tir_env *env, const tir_stmt *s) {
  const tir_buffer *buf = s->u.store.buf;
  int32_t lanes = s->u.store.value->lanes;
  int64_t ix_small[64];
  tir_value v_small[64];
  int64_t *ix = ix_small;
  tir_value *val = v_small;
  if (lanes > 64) {
    ix = gir_arena_calloc(env->scratch, (size_t)lanes, sizeof *ix);
    val = gir_arena_calloc(env->scratch, (size_t)lanes, sizeof *val);
    if (!ix || !val) return fail(env, "out of memory", NULL);
  }
  for (int32_t l = 0; l < lanes; l++) {
    ix[l] = tir_eval_expr(env, s->u.store.index, l).i;
    val[l] = tir_eval_expr(env, s->u.store.value, l);
  }
  void *data = buffer(env, buf);
  if (env->failed || !data) return -1;
  for (int32_t l = 0; l < lanes; l++) {
    if (!in_bounds(env, buf, ix[l], "store")) return -1;
    if (gir_dtype_is_float(buf->dtype)) gir_store_f64(buf->dtype, data, ix[l], val[l].f);
    else gir_store_i64(buf->dtype, data, ix[l], val[l].i);
  }
  return 0;
}

static int run_allocate(tir_env *env, const tir_stmt *s) {
  const tir_buffer *buf = s->u.alloc.buf;
  if (buf->id < 0 || buf->id >= env->n_buffers) return fail(env, "buffer id out of range: ", buf->name);
  size_t elem = gir_dtype_size(buf->dtype), n = buf->size > 0 ? (size_t)buf->size : 1;
  if (!elem) return fail(env, "allocation of a non-first-class dtype: ", buf->name);
  if (!env->local_cache[buf->id]) env->local_cache[buf->id] = gir_arena_calloc(env->scratch, n, elem);
  if (!env->local_cache[buf->id]) return fail(env, "out of memory allocating ", buf->name);
  memset(env->local_cache[buf->id], 0, n * elem);
  void *saved = env->bufs[buf->id];
  env->bufs[buf->id] = env->local_cache[buf->id];
  int rc = run(env, s->u.alloc.body);
  env->bufs[buf->id] = saved;
  return rc;
}

static int run(tir_env *env, const tir_stmt *s) {
  if (env->failed) return -1;
  if (!s) return 0;
  switch (s->kind) {
  case TIR_FOR: return run_for(env, s);
  case TIR_LET: {
    const tir_var *v = s->u.let.var;
    if (v->id < 0 || v->id >= env->n_vars) return fail(env, "variable id out of range: ", v->name);
    tir_value x = tir_eval_expr(env, s->u.let.value, 0), saved = env->vars[v->id];
    if (env->failed) return -1;
    env->vars[v->id] = x;
    int rc = run(env, s->u.let.body);
    env->vars[v->id] = saved;
    return rc;
  }
  case TIR_IF: {
    int64_t c = tir_eval_expr(env, s->u.ifs.cond, 0).i;
    if (env->failed) return -1;
    return run(env, c ? s->u.ifs.then_s : s->u.ifs.else_s);
  }
  case TIR_STORE: return run_store(env, s);
  case TIR_ALLOCATE: return run_allocate(env, s);
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++)
      if (run(env, s->u.seq.s[i]) < 0) return -1;
    return 0;
  default: return fail(env, "unknown statement kind", NULL);
  }
}

int tir_eval_stmt(tir_env *env, const tir_stmt *s) {
  int rc = run(env, s);
  return rc < 0 || env->failed ? -1 : 0;
}

int tir_eval_func(const tir_func *f, void *const *buffers, gir_arena *scratch, int64_t budget, gir_err *err) {
  int32_t nb = f->n_buffers;
  for (int32_t i = 0; i < f->n_params; i++)
    if (f->params[i]->id >= nb) nb = f->params[i]->id + 1;
  tir_env env;
  if (tir_env_init(&env, scratch, f->n_vars, nb, budget, err) < 0) return -1;
  for (int32_t i = 0; i < f->n_params; i++) tir_env_bind(&env, f->params[i], buffers[i]);
  if (tir_eval_stmt(&env, f->body) < 0) return gir_err_prefix(err, "kernel %s", f->name ? f->name : "?");
  return 0;
}
