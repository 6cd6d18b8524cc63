/* te_eval.c — the TE interpreter (see te_eval.h). Values travel as a small union:
 * floats as double rounded to their dtype's precision after every operation (so
 * float32 arithmetic matches what compiled code computes), integers as int64
 * wrapped to their dtype's width (two's complement overflow, which ONNX specifies),
 * uint64 as its bit pattern. Integer division by zero yields 0 instead of trapping:
 * bad data must never crash the compiler. */
#include <math.h>
#include <string.h>
#include "te_eval.h"

typedef union val {
  int64_t i;
  double f;
} val;

typedef struct interp {
  te_ctx *c;
  gir_arena *scratch;
  void **buf;       /* by tensor id */
  int64_t *var;     /* by var id */
  int64_t work, budget;
  gir_err *err;
  int failed;
} interp;

static double round_to(gir_dtype t, double v) {
  switch (t) {
  case GIR_F32: return (double)(float)v;
  case GIR_F16: return gir_f16_to_f32(gir_f32_to_f16((float)v));
  case GIR_BF16: return gir_bf16_to_f32(gir_f32_to_bf16((float)v));
  default: return v;
  }
}

static int64_t wrap(gir_dtype t, int64_t v) {
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
  val a = eval(in, e->u.un.a);
  gir_dtype t = e->u.un.a->dtype;
  if (gir_dtype_is_float(t)) {
    double x = a.f, r;
    switch (e->u.un.op) {
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
    return fval(round_to(t, r));
  }
  int64_t x = a.i, r;
  switch (e->u.un.op) {
  case TE_NEG: r = (int64_t)(0 - (uint64_t)x); break;
  case TE_ABS: r = x < 0 && t != GIR_U64 ? (int64_t)(0 - (uint64_t)x) : x; break;
  case TE_NOT: r = !x; break;
  case TE_BITNOT: r = ~x; break;
  case TE_ISNAN: case TE_ISINF: return ival(0);
  default: r = x; break; /* floor/ceil/round/trunc of integers */
  }
  return ival(wrap(t, r));
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

static val eval_binary(interp *in, const te_expr *e) {
  val a = eval(in, e->u.bin.a), b = eval(in, e->u.bin.b);
  gir_dtype t = e->u.bin.a->dtype;
  te_binop op = e->u.bin.op;
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
    return fval(round_to(t, r));
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
  return ival(wrap(t, r));
}

static val eval_cast(interp *in, const te_expr *e) {
  gir_dtype from = e->u.cast.a->dtype, to = e->dtype;
  val a = eval(in, e->u.cast.a);
  if (gir_dtype_is_float(to)) {
    double d = gir_dtype_is_float(from) ? a.f : from == GIR_U64 ? (double)(uint64_t)a.i : (double)a.i;
    return fval(round_to(to, d));
  }
  if (to == GIR_BOOL) return ival(gir_dtype_is_float(from) ? a.f != 0 : a.i != 0);
  if (gir_dtype_is_float(from)) {
    double d = a.f;
    if (d != d) return ival(0);
    if (to == GIR_U64) return ival(d <= 0 ? 0 : d >= 1.8446744073709552e19 ? -1 : (int64_t)(uint64_t)d);
    int64_t i = d >= 9.2233720368547758e18 ? INT64_MAX : d <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)d;
    return ival(wrap(to, i));
  }
  return ival(wrap(to, a.i));
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
      } else if (gir_dtype_is_float(st)) {
        double r;
        switch (comb) {
        case TE_SUM: r = acc.f + v.f; break;
        case TE_PROD: r = acc.f * v.f; break;
        case TE_RMAX: r = isnan(acc.f) || isnan(v.f) ? NAN : acc.f > v.f ? acc.f : v.f; break;
        default: r = isnan(acc.f) || isnan(v.f) ? NAN : acc.f < v.f ? acc.f : v.f; break;
        }
        acc.f = round_to(st, r);
      } else {
        int64_t r;
        int u64 = st == GIR_U64;
        switch (comb) {
        case TE_SUM: r = (int64_t)((uint64_t)acc.i + (uint64_t)v.i); break;
        case TE_PROD: r = (int64_t)((uint64_t)acc.i * (uint64_t)v.i); break;
        case TE_RMAX: r = u64 ? ((uint64_t)acc.i > (uint64_t)v.i ? acc.i : v.i) : (acc.i > v.i ? acc.i : v.i); break;
        default: r = u64 ? ((uint64_t)acc.i < (uint64_t)v.i ? acc.i : v.i) : (acc.i < v.i ? acc.i : v.i); break;
        }
        acc.i = wrap(st, r);
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
  case TE_FLOAT: return fval(round_to(e->dtype, e->u.f));
  case TE_VAR: return ival(in->var[e->u.var->id]);
  case TE_LOAD: return eval_load(in, e);
  case TE_UNARY: return eval_unary(in, e);
  case TE_BINARY: return eval_binary(in, e);
  case TE_SELECT: return eval(in, e->u.sel.c).i ? eval(in, e->u.sel.a) : eval(in, e->u.sel.b);
  case TE_CAST: return eval_cast(in, e);
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
