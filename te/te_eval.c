/* te_eval.c — the TE interpreter (see te_eval.h). The value of every operator on
 * scalars comes from scalar.c (shared with the loop-IR interpreter and the
 * simplifier); this file walks expressions, loads, reductions and stages. */
#include <math.h>
#include <string.h>
#include "scalar.h"
#include "te_eval.h"

typedef tir_value val;

typedef struct interp {
  te_ctx *c;
  gir_arena *scratch;
  void **buf;       /* by tensor id */
  int64_t *var;     /* by var id */
  int64_t work, budget;
  gir_err *err;
  int failed;
} interp;

static val fval(double f) { return (val){.f = f}; }
static val ival(int64_t i) { return (val){.i = i}; }

static val eval(interp *in, const te_expr *e);

static int64_t dtype_min(gir_dtype t) {
  switch (t) {
  case GIR_I8: return INT8_MIN;
  case GIR_I16: return INT16_MIN;
  case GIR_I32: return INT32_MIN;
  case GIR_I64: return INT64_MIN;
  default: return 0; /* unsigned, bool */
  }
}

static int64_t dtype_max(gir_dtype t) {
  switch (t) {
  case GIR_I8: return INT8_MAX;
  case GIR_I16: return INT16_MAX;
  case GIR_I32: return INT32_MAX;
  case GIR_U8: return UINT8_MAX;
  case GIR_U16: return UINT16_MAX;
  case GIR_U32: return UINT32_MAX;
  case GIR_U64: return -1; /* all ones */
  case GIR_BOOL: return 1;
  default: return INT64_MAX;
  }
}

static val eval_unary(interp *in, const te_expr *e) {
  return tir_value_unop(e->u.un.op, e->u.un.a->dtype, eval(in, e->u.un.a));
}

static val eval_binary(interp *in, const te_expr *e) {
  val a = eval(in, e->u.bin.a), b = eval(in, e->u.bin.b);
  return tir_value_binop(e->u.bin.op, e->u.bin.a->dtype, a, b);
}

static val eval_cast(interp *in, const te_expr *e) {
  return tir_value_cast(e->dtype, e->u.cast.a->dtype, eval(in, e->u.cast.a));
}

static void *materialize(interp *in, te_tensor *t);

static val eval_load(interp *in, const te_expr *e) {
  te_tensor *t = e->u.load.t;
  void *data = in->buf[t->id];
  if (!data) data = materialize(in, t);
  if (!data) return ival(0);
  int64_t off = 0;
  for (int i = 0; i < t->rank; i++) {
    int64_t ix = eval(in, e->u.load.idx[i]).i;
    if (ix < 0 || ix >= t->shape[i]) {
      if (!in->failed)
        gir_errf(in->err, "index %lld out of bounds [0, %lld) on axis %d of %s", (long long)ix,
                 (long long)t->shape[i], i, t->name ? t->name : "tensor");
      in->failed = 1;
      return ival(0);
    }
    off = off * t->shape[i] + ix;
  }
  if (gir_dtype_is_float(t->dtype)) return fval(gir_load_f64(t->dtype, data, off));
  return ival(gir_load_i64(t->dtype, data, off));
}

static val reduce_init(te_combiner comb, gir_dtype t) {
  int fl = gir_dtype_is_float(t);
  switch (comb) {
  case TE_SUM: return fl ? fval(0) : ival(0);
  case TE_PROD: return fl ? fval(1) : ival(1);
  case TE_RMAX: return fl ? fval(-INFINITY) : ival(dtype_min(t));
  case TE_RMIN: return fl ? fval(INFINITY) : ival(dtype_max(t));
  default: return ival(0);
  }
}

static int better(gir_dtype t, te_combiner comb, val v, val best, int last) {
  if (gir_dtype_is_float(t)) {
    if (isnan(best.f)) return 0;
    if (isnan(v.f)) return 1;
    return comb == TE_ARGMAX ? (last ? v.f >= best.f : v.f > best.f) : (last ? v.f <= best.f : v.f < best.f);
  }
  if (t == GIR_U64) {
    uint64_t a = (uint64_t)v.i, b = (uint64_t)best.i;
    return comb == TE_ARGMAX ? (last ? a >= b : a > b) : (last ? a <= b : a < b);
  }
  return comb == TE_ARGMAX ? (last ? v.i >= best.i : v.i > best.i) : (last ? v.i <= best.i : v.i < best.i);
}

static val eval_reduce(interp *in, const te_expr *e) {
  int n = e->u.red.n_axes;
  te_var *const *ax = e->u.red.axes;
  te_combiner comb = e->u.red.comb;
  gir_dtype st = e->u.red.src->dtype;
  val acc = reduce_init(comb, st), best = {0};
  int64_t best_idx = 0, lin = 0;
  int have = 0;
  for (int i = 0; i < n; i++) {
    if (ax[i]->extent == 0) return comb == TE_ARGMAX || comb == TE_ARGMIN ? ival(0) : acc;
    in->var[ax[i]->id] = 0;
  }
  for (;;) {
    if (!e->u.red.cond || eval(in, e->u.red.cond).i) {
      val v = eval(in, e->u.red.src);
      if (in->failed) return acc;
      if (comb == TE_ARGMAX || comb == TE_ARGMIN) {
        if (!have || better(st, comb, v, best, e->u.red.select_last)) {
          best = v;
          best_idx = lin;
          have = 1;
        }
      } else {
        static const te_binop op_of[] = {[TE_SUM] = TE_ADD, [TE_PROD] = TE_MUL, [TE_RMAX] = TE_MAX, [TE_RMIN] = TE_MIN};
        acc = tir_value_binop(op_of[comb], st, acc, v);
        if (e->dtype != st) acc = tir_value_cast(st, e->dtype, tir_value_cast(e->dtype, st, acc)); /* te_reduce_narrow */
      }
    }
    /* odometer over the reduce axes, last fastest */
    int k = n - 1;
    lin++;
    while (k >= 0 && ++in->var[ax[k]->id] == ax[k]->extent) in->var[ax[k--]->id] = 0;
    if (k < 0) break;
  }
  return comb == TE_ARGMAX || comb == TE_ARGMIN ? ival(best_idx) : acc;
}

static val eval(interp *in, const te_expr *e) {
  if (in->failed) return ival(0);
  if (in->budget && ++in->work > in->budget) {
    gir_errf(in->err, "evaluation exceeds its work budget");
    in->failed = 1;
    return ival(0);
  }
  switch (e->kind) {
  case TE_INT: return ival(e->u.i);
  case TE_FLOAT: return fval(tir_round_float(e->dtype, e->u.f));
  case TE_VAR: return ival(in->var[e->u.var->id]);
  case TE_LOAD: return eval_load(in, e);
  case TE_UNARY: return eval_unary(in, e);
  case TE_BINARY: return eval_binary(in, e);
  case TE_SELECT: return eval(in, e->u.sel.c).i ? eval(in, e->u.sel.a) : eval(in, e->u.sel.b);
  case TE_CAST: return eval_cast(in, e);
  case TE_BITCAST: return tir_value_bitcast(e->dtype, e->u.cast.a->dtype, eval(in, e->u.cast.a));
  case TE_REDUCE: return eval_reduce(in, e);
  default: return ival(0);
  }
}

/* Computes every element of t into a fresh scratch buffer (or `dst`). */
static int fill(interp *in, te_tensor *t, void *dst) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    n *= t->shape[i];
    in->var[t->axis[i]->id] = 0;
  }
  for (int64_t k = 0; k < n; k++) {
    val v = eval(in, t->body);
    if (in->failed) return -1;
    if (gir_dtype_is_float(t->dtype)) gir_store_f64(t->dtype, dst, k, v.f);
    else gir_store_i64(t->dtype, dst, k, v.i);
    for (int i = t->rank - 1; i >= 0; i--) {
      if (++in->var[t->axis[i]->id] < t->shape[i]) break;
      in->var[t->axis[i]->id] = 0;
    }
  }
  return 0;
}

static void *materialize(interp *in, te_tensor *t) {
  if (t->kind == TE_PLACEHOLDER) {
    if (!in->failed) gir_errf(in->err, "placeholder %s is not bound", t->name ? t->name : "?");
    in->failed = 1;
    return NULL;
  }
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  void *buf = gir_arena_calloc(in->scratch, (size_t)n + 1, gir_dtype_size(t->dtype));
  if (!buf) {
    gir_errf(in->err, "out of memory");
    in->failed = 1;
    return NULL;
  }
  /* A stage evaluated in the middle of another one touches only its own
   * variables (compute definitions never share axes between stages). */
  if (fill(in, t, buf) < 0) return NULL;
  in->buf[t->id] = buf;
  return buf;
}

int te_eval(te_ctx *c, te_tensor *out, const te_binding *bind, int32_t n_bind, void *out_data, gir_arena *scratch,
            int64_t budget, gir_err *err) {
  interp in = {.c = c, .scratch = scratch, .err = err, .budget = budget};
  in.buf = gir_arena_calloc(scratch, (size_t)c->next_tensor + 1, sizeof *in.buf);
  in.var = gir_arena_calloc(scratch, (size_t)c->next_var + 1, sizeof *in.var);
  if (!in.buf || !in.var) return gir_errf(err, "out of memory");
  for (int i = 0; i < n_bind; i++) in.buf[bind[i].t->id] = (void *)bind[i].data;
  if (out->kind == TE_PLACEHOLDER) {
    if (!in.buf[out->id]) return gir_errf(err, "placeholder %s is not bound", out->name ? out->name : "?");
    int64_t n = 1;
    for (int i = 0; i < out->rank; i++) n *= out->shape[i];
    memcpy(out_data, in.buf[out->id], (size_t)n * gir_dtype_size(out->dtype));
    return 0;
  }
  return fill(&in, out, out_data) < 0 ? -1 : 0;
}
