/* tir_eval.c — the loop-IR interpreter (see tir_eval.h). The scalar operator
 * semantics are those of scalar.c, shared with the TE interpreter and the
 * simplifier's constant folding, so that all three compute the same thing. Expressions are evaluated one lane at a time: every vector
 * node of the IR is lane-wise (ramp lane l is base + l*stride, broadcast repeats
 * its scalar), so a lane's value depends only on that lane of its operands —
 * except dot4, whose lane l reads lanes 4l..4l+3 of its 8-bit operands (or lanes
 * 0..3 of a 4-lane a). It is slow and simple on purpose. Loops bound to the GPU
 * grid are handed to the launch emulator (tir_eval_gpu.c), which runs each
 * emulated thread's code through this interpreter in an environment of its own
 * (env->gpu set): then loads and stores of SHARED and GLOBAL buffers are reported
 * to it for race checking, and SHARED allocations come from it. */
#include <math.h>
#include <string.h>
#include "tir_eval.h"
#include "tir_eval_gpu.h"

static tir_value fval(double f) { return (tir_value){.f = f}; }
static tir_value ival(int64_t i) { return (tir_value){.i = i}; }

tir_value tir_const_value(const tir_expr *e) {
  if (e->kind == TIR_FLOAT) return fval(tir_round_float(e->dtype, e->u.f));
  return ival(tir_wrap_int(e->dtype, e->u.i));
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
    if (buf->scope == TIR_FRAGMENT) return fail(env, "element-wise load of fragment buffer ", buf->name), ival(0);
    void *data = buffer(env, buf);
    if (!data || !in_bounds(env, buf, ix, "load")) return ival(0);
    if (env->gpu && buf->scope != TIR_LOCAL && tir_gpu_access(env, buf, data, ix, NULL) < 0) return ival(0);
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
  case TIR_BITCAST: return tir_value_bitcast(e->dtype, e->u.cast.a->dtype, tir_eval_expr(env, e->u.cast.a, lane));
  case TIR_RAMP: {
    gir_dtype t = e->dtype;
    tir_value base = tir_eval_expr(env, e->u.ramp.base, 0), stride = tir_eval_expr(env, e->u.ramp.stride, 0);
    tir_value l = gir_dtype_is_float(t) ? fval(lane) : ival(tir_wrap_int(t, lane));
    return tir_value_binop(TE_ADD, t, base, tir_value_binop(TE_MUL, t, l, stride));
  }
  case TIR_BROADCAST: return tir_eval_expr(env, e->u.bcast.value, 0);
  case TIR_DOT4: {
    const tir_expr *a = e->u.dot4.a, *b = e->u.dot4.b;
    uint32_t sum = (uint32_t)tir_eval_expr(env, e->u.dot4.acc, lane).i;
    for (int32_t j = 0; j < 4; j++) {
      int64_t x = tir_wrap_int(a->dtype, tir_eval_expr(env, a, a->lanes == 4 ? j : 4 * lane + j).i);
      int64_t y = tir_wrap_int(b->dtype, tir_eval_expr(env, b, 4 * lane + j).i);
      sum += (uint32_t)(x * y); /* |x * y| <= 2^16: exact, then wrapping int32 adds */
    }
    return ival(tir_wrap_int(GIR_I32, (int64_t)sum));
  }
  case TIR_SHUFFLE: /* the emulator evaluates the lanes' values first (tir_eval_gpu.c) */
    if (!env->gpu) {
      fail(env, "warp shuffle outside the threads of a GPU launch", NULL);
      return ival(0);
    }
    return tir_gpu_shuffled(env, e);
  default: fail(env, "unknown expression kind", NULL); return ival(0);
  }
}

/* --- statements --- */

static int run(tir_env *env, const tir_stmt *s);

int tir_eval_run(tir_env *env, const tir_stmt *s) { return run(env, s); }

static int run_for(tir_env *env, const tir_stmt *s) {
  if (tir_for_kind_is_gpu(s->u.loop.kind)) return tir_gpu_for(env, s);
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
  if (buf->scope == TIR_FRAGMENT) return fail(env, "element-wise store to fragment buffer ", buf->name);
  void *data = buffer(env, buf);
  if (env->failed || !data) return -1;
  for (int32_t l = 0; l < lanes; l++) {
    if (!in_bounds(env, buf, ix[l], "store")) return -1;
    if (env->gpu && buf->scope != TIR_LOCAL && tir_gpu_access(env, buf, data, ix[l], &val[l]) < 0) return -1;
    if (gir_dtype_is_float(buf->dtype)) gir_store_f64(buf->dtype, data, ix[l], val[l].f);
    else gir_store_i64(buf->dtype, data, ix[l], val[l].i);
  }
  return 0;
}

static void *fail_null(tir_env *env, const char *what, const char *name) {
  fail(env, what, name);
  return NULL;
}

void *tir_eval_alloc(tir_env *env, const tir_buffer *buf) {
  if (buf->id < 0 || buf->id >= env->n_buffers) return fail_null(env, "buffer id out of range: ", buf->name);
  size_t elem = gir_dtype_size(buf->dtype), n = buf->size > 0 ? (size_t)buf->size : 1;
  if (!elem) return fail_null(env, "allocation of a non-first-class dtype: ", buf->name);
  if (env->gpu && buf->scope != TIR_LOCAL && buf->scope != TIR_FRAGMENT) return tir_gpu_shared(env, buf); /* SHARED: the block's */
  if (!env->local_cache[buf->id]) env->local_cache[buf->id] = gir_arena_calloc(env->scratch, n, elem);
  if (!env->local_cache[buf->id]) return fail_null(env, "out of memory allocating ", buf->name);
  memset(env->local_cache[buf->id], 0, n * elem);
  return env->local_cache[buf->id];
}

static int run_allocate(tir_env *env, const tir_stmt *s) {
  const tir_buffer *buf = s->u.alloc.buf;
  void *mem = tir_eval_alloc(env, buf);
  if (!mem) return -1;
  void *saved = env->bufs[buf->id];
  env->bufs[buf->id] = mem;
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
  case TIR_PREFETCH: { /* no effect, but the index must be in bounds */
    int64_t ix = tir_eval_expr(env, s->u.prefetch.index, 0).i;
    if (env->failed || !buffer(env, s->u.prefetch.buf)) return -1;
    return in_bounds(env, s->u.prefetch.buf, ix, "prefetch") ? 0 : -1;
  }
  case TIR_FAIL: { /* a failed run-time check ends the run with its numbers */
    int64_t v = tir_eval_expr(env, s->u.fail.value, 0).i, lo = tir_eval_expr(env, s->u.fail.lo, 0).i,
            hi = tir_eval_expr(env, s->u.fail.hi, 0).i;
    if (env->failed) return -1;
    env->failed = 1;
    gir_errf(env->err, "check %d failed: %lld is outside [%lld, %lld)", s->u.fail.check, (long long)v, (long long)lo,
             (long long)hi);
    return -1;
  }
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++)
      if (run(env, s->u.seq.s[i]) < 0) return -1;
    return 0;
  case TIR_BARRIER: /* the emulator runs the statements holding barriers itself */
    return fail(env, "barrier outside the threads of a GPU launch", NULL);
  case TIR_WMMA: /* warp-collective: the emulator runs it (tir_eval_gpu.c) */
    return fail(env, "wmma outside the threads of a GPU launch", NULL);
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
