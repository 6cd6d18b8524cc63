/* c_emit.c — loop IR (lower/tir.h) → C99 source: the C backend's code generator.
 *
 * For any toolchain LLVM lacks (Xtensa, DSPs, a vendor's Cortex-M compiler) and for
 * reading what a kernel does. The source includes <math.h>, <string.h>, <stdint.h>
 * and kiln_abi.h, then the prelude (c_prelude.h, embedded at build time), then the
 * kernels. Each tir_func becomes
 *     static void NAME__compute(const kiln_ctx *ctx, int32_t *status, T *restrict b0, ...)
 *     int32_t NAME(void *const *buffers, const kiln_ctx *ctx)
 * the ABI of runtime/kiln_abi.h, its buffers restrict (the kernel ABI promises they
 * do not overlap) and declared aligned. The semantics are the LLVM backend's
 * (targets/llvm/llvm_expr.c), operation by operation:
 * - registers: float16, bfloat16 and the float8/float4 formats are float, rounded
 *   after every inexact operation (kc_rnd_*); int4/int2 are int8_t sign-extended or
 *   uint8_t zero-extended, wrapped after every operation (kc_w_*); bool is uint8_t
 *   0/1; memory holds float16/bfloat16 as their 16-bit codes, the 8/4-bit formats
 *   as one byte;
 * - integer +, -, *, negation and bit operations are computed on uint64_t and
 *   converted back (wrapping; C's signed overflow would be undefined); division
 *   and modulo go through helpers that give 0 for a zero divisor and wrap
 *   INT_MIN / -1; shifts by the width or more give 0; SHR is logical;
 * - float → integer conversions saturate, NaN → 0; int64 → float goes through
 *   double; min/max are the interpreter's compare-and-select;
 * - SELECT and IF_THEN_ELSE are C's ?: (lazy: the chosen operand only — SELECT's
 *   operands are safe to evaluate, so not evaluating one changes nothing).
 * Vectors (RAMP, BROADCAST, loads and stores of several lanes) become a loop over the
 * lanes around the one statement (`for (ln = 0; ln < N; ln++) b[base + ln] = ...`),
 * each expression written for lane `ln` (a DOT4 writes its 8-bit operands for
 * lanes 4*ln + j, or j, and sums them with kc_dot4),
 * which the C compiler vectorizes; a store whose value reads the buffer it writes
 * goes through a temporary array first, so every lane reads before any lane
 * writes, as a vector store does. A vector LET is an array indexed by the lane.
 * PARALLEL loops are outlined as the LLVM backend outlines them: the body's free
 * variables and buffers go into a closure struct, the task
 *     static void NAME__tN(void *closure, int64_t begin, int64_t end)
 * runs iterations [begin, end), and the caller runs ctx->parallel_for(ctx, task,
 * &closure, extent) when extent > 0, storing a non-zero result into the status.
 * TIR_FAIL calls ctx->fail when set and makes the kernel return 1; TIR_PREFETCH is
 * __builtin_prefetch under GCC/Clang and nothing elsewhere.
 *
 * The generated code must be compiled without fast-math and without contraction
 * (-ffp-contract=off): the loop IR allows FMA, but the interpreter's float16 and
 * floormod computations do not, and c_build.c and the AOT Makefile pass it.
 *
 * Each kernel is checked first (dtypes computable, variables and buffers used in
 * their scope, scalar conditions, C-identifier kernel names): a bad kernel is an
 * error with one line, never a crash. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "c_backend.h"

/* --- output text --- */

typedef struct cbuf {
  char *p;
  size_t n, cap;
  int oom;
} cbuf;

static void put(cbuf *b, const char *s) {
  size_t k = strlen(s);
  if (b->oom) return;
  if (b->n + k + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + k + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, s, k + 1);
  b->n += k;
}

__attribute__((format(printf, 2, 3))) static void putf(cbuf *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  if ((size_t)k < sizeof small) {
    put(b, small);
    return;
  }
  char *big = malloc((size_t)k + 1);
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)k + 1, fmt, ap);
  va_end(ap);
  put(b, big);
  free(big);
}

static void cbuf_free(cbuf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* --- state --- */

/* Shared subexpressions of one statement. The loop IR is a DAG, and lowering builds
 * the same index arithmetic again and again (a padded conv's border tests): printed
 * as a tree it grows exponentially. So each statement's own expressions are
 * hash-consed — every node gets the id of its structure (kind, dtype, lanes,
 * payload, children's ids), one pass over the distinct pointers — and a structure
 * used twice or more that is scalar and pure (no load, which an if_then_else may
 * guard; no vector) becomes `const T tN = ...;` before the statement, children
 * first. */
typedef struct cnode {
  const tir_expr *e; /* a representative */
  uint64_t hash;
  int64_t payload;
  int32_t kid[3];
  int32_t refs, temp; /* temp: -1 until named */
  int8_t pure;
} cnode;

typedef struct htab {
  const tir_expr **pk; /* pointer → node id */
  int32_t *pv, pcap, pn;
  int32_t *slot, scap; /* structure → node id (open addressing, -1 empty) */
  cnode *nodes;
  int32_t n, ncap;
  int active;
} htab;

typedef struct cgen {
  gir_arena *scratch;
  gir_err *err;
  const tir_func *fn;
  int32_t n_tasks;
  const char *fname;  /* the function being written: the kernel, or a task (whose tasks are NAME__tN) */
  cbuf *out;         /* the function being written */
  cbuf *funcs;       /* finished functions: tasks before the functions that call them */
  int32_t *var_lanes; /* by var id, while bound: the lanes of its value (> 1: an array) */
  const char *ln;     /* the C text of the lane being written ("ln"; a dot4's operands read other lanes) */
  int depth;          /* indentation */
  htab h;             /* the current statement's shared subexpressions */
  int32_t n_temps;
} cgen;

static void indent(cgen *g) {
  for (int i = 0; i < g->depth; i++) put(g->out, "  ");
}

/* --- types --- */

static int sub_byte(gir_dtype t) { return t == GIR_I4 || t == GIR_I2 || t == GIR_U4 || t == GIR_U2; }

/* The C type of a register holding a value of dtype t. */
static const char *reg_type(gir_dtype t) {
  switch (t) {
  case GIR_F64: return "double";
  case GIR_I8: case GIR_I4: case GIR_I2: return "int8_t";
  case GIR_I16: return "int16_t";
  case GIR_I32: return "int32_t";
  case GIR_I64: return "int64_t";
  case GIR_U8: case GIR_U4: case GIR_U2: case GIR_BOOL: return "uint8_t";
  case GIR_U16: return "uint16_t";
  case GIR_U32: return "uint32_t";
  case GIR_U64: return "uint64_t";
  default: return "float"; /* float32, float16, bfloat16, the float8/float4 formats */
  }
}

/* The C type of a buffer element of dtype t. */
static const char *mem_type(gir_dtype t) {
  switch (t) {
  case GIR_F16: case GIR_BF16: return "uint16_t";
  case GIR_F32: return "float";
  default: return gir_dtype_is_float(t) ? (t == GIR_F64 ? "double" : "uint8_t") : reg_type(t);
  }
}

/* The prelude's name of a float8 / float4 format. */
static const char *f8_name(gir_dtype t) {
  switch (t) {
  case GIR_F8E4M3FN: return "e4m3fn";
  case GIR_F8E4M3FNUZ: return "e4m3fnuz";
  case GIR_F8E5M2: return "e5m2";
  case GIR_F8E5M2FNUZ: return "e5m2fnuz";
  case GIR_F4E2M1: return "e2m1";
  default: return "e8m0";
  }
}

static int computable(gir_dtype t) { return t >= 0 && t < GIR_DTYPE_COUNT && gir_dtype_first_class(t); }

/* --- checks: what would make the source wrong, as errors --- */

typedef struct checker {
  const tir_func *f;
  gir_err *err;
  int32_t *var_depth, *buf_live;
  int failed;
} checker;

__attribute__((format(printf, 2, 3))) static void cfail(checker *c, const char *fmt, ...) {
  if (c->failed) return;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  gir_errf(c->err, "c: kernel %s: %s", c->f->name, what);
  c->failed = 1;
}

static int var_ok(checker *c, const tir_var *v) {
  if (v->id >= 0 && v->id < c->f->n_vars) return 1;
  cfail(c, "variable %s has id %d, beyond the kernel's %d variables", v->name, v->id, c->f->n_vars);
  return 0;
}

static int buf_ok(checker *c, const tir_buffer *b) {
  if (b->id < 0 || b->id >= c->f->n_buffers) {
    cfail(c, "buffer %s has id %d, beyond the kernel's %d buffers", b->name, b->id, c->f->n_buffers);
    return 0;
  }
  if (!computable(b->dtype)) {
    cfail(c, "buffer %s has a dtype the c target cannot compute on", b->name);
    return 0;
  }
  return 1;
}

static void check_use(checker *c, const tir_buffer *b) {
  if (buf_ok(c, b) && !c->buf_live[b->id]) cfail(c, "buffer %s is used outside its allocation", b->name);
}

static void check_expr(checker *c, const tir_expr *e) {
  if (c->failed) return;
  if (!computable(e->dtype)) return cfail(c, "an expression has a dtype the c target cannot compute on");
  if (e->lanes < 1 || e->lanes > 4096) return cfail(c, "an expression has %d lanes", e->lanes);
  switch (e->kind) {
  case TIR_VAR:
    if (var_ok(c, e->u.var) && !c->var_depth[e->u.var->id])
      cfail(c, "variable %s_%d is used outside its scope", e->u.var->name, e->u.var->id);
    break;
  case TIR_LOAD: check_use(c, e->u.load.buf); check_expr(c, e->u.load.index); break;
  case TIR_UNARY: check_expr(c, e->u.un.a); break;
  case TIR_BINARY: check_expr(c, e->u.bin.a); check_expr(c, e->u.bin.b); break;
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    check_expr(c, e->u.sel.c);
    check_expr(c, e->u.sel.a);
    check_expr(c, e->u.sel.b);
    break;
  case TIR_CAST: case TIR_BITCAST: check_expr(c, e->u.cast.a); break;
  case TIR_RAMP:
    check_expr(c, e->u.ramp.base);
    check_expr(c, e->u.ramp.stride);
    if (!c->failed && (e->u.ramp.base->lanes != 1 || e->u.ramp.stride->lanes != 1))
      cfail(c, "a ramp's base and stride must be scalars");
    break;
  case TIR_BROADCAST:
    check_expr(c, e->u.bcast.value);
    if (!c->failed && e->u.bcast.value->lanes != 1) cfail(c, "a broadcast's value must be a scalar");
    break;
  case TIR_DOT4: {
    const tir_expr *acc = e->u.dot4.acc, *a = e->u.dot4.a, *b = e->u.dot4.b;
    check_expr(c, acc);
    check_expr(c, a);
    check_expr(c, b);
    if (!c->failed && !tir_dot4_operands_ok(acc, a, b, e->lanes))
      cfail(c, "a dot4 needs an int32 accumulator of L lanes and 8-bit operands of 4L (or, for a, 4) lanes");
    break;
  }
  case TIR_INT: case TIR_FLOAT: break;
  case TIR_SHUFFLE: cfail(c, "a warp shuffle is a GPU expression"); break;
  default: cfail(c, "unknown expression kind %d", (int)e->kind); break;
  }
}

static void check_scalar(checker *c, const tir_expr *e, const char *what) {
  check_expr(c, e);
  if (!c->failed && e->lanes != 1) cfail(c, "%s must be a scalar", what);
}

static void check_stmt(checker *c, const tir_stmt *s) {
  if (!s || c->failed) return;
  switch (s->kind) {
  case TIR_FOR: {
    const tir_var *v = s->u.loop.var;
    check_scalar(c, s->u.loop.min, "a loop's min");
    check_scalar(c, s->u.loop.extent, "a loop's extent");
    if (c->failed || !var_ok(c, v)) return;
    if (!gir_dtype_is_int(v->dtype) || !gir_dtype_is_int(s->u.loop.min->dtype) ||
        !gir_dtype_is_int(s->u.loop.extent->dtype))
      return cfail(c, "loop %s_%d needs an integer variable, min and extent", v->name, v->id);
    if (s->u.loop.kind < 0 || s->u.loop.kind >= TIR_FOR_KIND_COUNT || tir_for_kind_is_gpu(s->u.loop.kind))
      return cfail(c, "loop %s_%d is bound to the GPU grid (or of an unknown kind): not C code", v->name, v->id);
    c->var_depth[v->id]++;
    check_stmt(c, s->u.loop.body);
    c->var_depth[v->id]--;
    break;
  }
  case TIR_LET: {
    const tir_var *v = s->u.let.var;
    check_expr(c, s->u.let.value);
    if (c->failed || !var_ok(c, v)) return;
    c->var_depth[v->id]++;
    check_stmt(c, s->u.let.body);
    c->var_depth[v->id]--;
    break;
  }
  case TIR_IF:
    check_scalar(c, s->u.ifs.cond, "an if statement's condition");
    if (!c->failed && s->u.ifs.cond->dtype != GIR_BOOL) return cfail(c, "an if statement's condition must be bool");
    check_stmt(c, s->u.ifs.then_s);
    check_stmt(c, s->u.ifs.else_s);
    break;
  case TIR_STORE:
    check_use(c, s->u.store.buf);
    check_expr(c, s->u.store.index);
    check_expr(c, s->u.store.value);
    if (!c->failed && s->u.store.index->lanes != 1 && s->u.store.value->lanes != 1 &&
        s->u.store.index->lanes != s->u.store.value->lanes)
      cfail(c, "a store's index and value have different lane counts");
    break;
  case TIR_PREFETCH:
    check_use(c, s->u.prefetch.buf);
    check_scalar(c, s->u.prefetch.index, "a prefetch's index");
    break;
  case TIR_FAIL: {
    const tir_expr *e[3] = {s->u.fail.value, s->u.fail.lo, s->u.fail.hi};
    for (int i = 0; i < 3; i++) {
      check_scalar(c, e[i], "a failed check's value and bounds");
      if (!c->failed && e[i]->dtype != GIR_I64) return cfail(c, "a failed check's value and bounds must be int64");
    }
    break;
  }
  case TIR_ALLOCATE: {
    const tir_buffer *b = s->u.alloc.buf;
    if (!buf_ok(c, b)) return;
    if (b->scope == TIR_SHARED) return cfail(c, "buffer %s: shared memory is a GPU scope", b->name);
    if (b->scope == TIR_GLOBAL) {
      if (b->param < 0) return cfail(c, "buffer %s: global buffers are parameters, never allocated", b->name);
      check_stmt(c, s->u.alloc.body);
      break;
    }
    if (b->size <= 0) return cfail(c, "local buffer %s has size %lld", b->name, (long long)b->size);
    c->buf_live[b->id]++;
    check_stmt(c, s->u.alloc.body);
    c->buf_live[b->id]--;
    break;
  }
  case TIR_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) check_stmt(c, s->u.seq.s[i]);
    break;
  case TIR_BARRIER: cfail(c, "a barrier is a GPU statement"); break;
  default: cfail(c, "unknown statement kind %d", (int)s->kind); break;
  }
}

static int c_identifier(const char *s) {
  if (!s || !s[0] || (s[0] >= '0' && s[0] <= '9')) return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
  return strncmp(s, "kc_", 3) != 0; /* the prelude's names */
}

static int check_func(cgen *g, const tir_func *f) {
  if (!f->name || !f->name[0]) return gir_errf(g->err, "c: a kernel has no name");
  if (!c_identifier(f->name))
    return gir_errf(g->err, "c: kernel name '%.80s' is not a C identifier (or starts with the prelude's kc_)", f->name);
  if (!f->body) return gir_errf(g->err, "c: kernel %s has no body", f->name);
  checker c = {.f = f, .err = g->err};
  c.var_depth = gir_arena_calloc(g->scratch, (size_t)f->n_vars + 1, sizeof *c.var_depth);
  c.buf_live = gir_arena_calloc(g->scratch, (size_t)f->n_buffers + 1, sizeof *c.buf_live);
  if (!c.var_depth || !c.buf_live) return gir_errf(g->err, "out of memory");
  for (int i = 0; i < f->n_params && !c.failed; i++) {
    const tir_buffer *b = f->params[i];
    if (!buf_ok(&c, b)) break;
    if (b->param != i || b->scope != TIR_GLOBAL) cfail(&c, "parameter %d (%s) is not a global buffer numbered %d", i, b->name, i);
    else c.buf_live[b->id] = 1;
  }
  check_stmt(&c, f->body);
  return c.failed ? -1 : 0;
}

/* --- expressions --- */

static void expr(cgen *g, const tir_expr *e, int lane);

/* Wraps the uint64_t expression text `x` (already written by the caller between
 * the two halves) to dtype t: the prefix and suffix around it. */
static const char *wrap_open(gir_dtype t) {
  switch (t) {
  case GIR_I4: return "kc_w_i4(";
  case GIR_I2: return "kc_w_i2(";
  case GIR_U4: return "kc_w_u4(";
  case GIR_U2: return "kc_w_u2(";
  case GIR_I8: return "((int8_t)(";
  case GIR_I16: return "((int16_t)(";
  case GIR_I32: return "((int32_t)(";
  case GIR_I64: return "((int64_t)(";
  case GIR_U8: return "((uint8_t)(";
  case GIR_U16: return "((uint16_t)(";
  case GIR_U32: return "((uint32_t)(";
  default: return "((uint64_t)(";
  }
}
static const char *wrap_close(gir_dtype t) { return sub_byte(t) ? ")" : "))"; }

/* Rounding of a float register to t's precision: the prefix ("" when none). */
static const char *round_open(gir_dtype t) {
  switch (t) {
  case GIR_F16: return "kc_rnd_f16(";
  case GIR_BF16: return "kc_rnd_bf16(";
  case GIR_F8E4M3FN: return "kc_rnd_e4m3fn(";
  case GIR_F8E4M3FNUZ: return "kc_rnd_e4m3fnuz(";
  case GIR_F8E5M2: return "kc_rnd_e5m2(";
  case GIR_F8E5M2FNUZ: return "kc_rnd_e5m2fnuz(";
  case GIR_F4E2M1: return "kc_rnd_e2m1(";
  case GIR_F8E8M0: return "kc_rnd_e8m0(";
  default: return "";
  }
}
static const char *round_close(gir_dtype t) { return round_open(t)[0] ? ")" : ""; }

/* The interpreter's rounding of a float constant to its dtype. */
static double round_const(gir_dtype t, double v) {
  switch (t) {
  case GIR_F32: return (float)v;
  case GIR_F16: return gir_f16_to_f32(gir_f32_to_f16((float)v));
  case GIR_BF16: return gir_bf16_to_f32(gir_f32_to_bf16((float)v));
  default: return gir_dtype_is_f8(t) ? gir_f8_to_f32(t, gir_f64_to_f8(t, v)) : v;
  }
}

/* A float constant, exactly: in decimal when a short decimal reads back as the same
 * value, else in hexadecimal. */
static void float_const(cgen *g, gir_dtype t, double v) {
  const char *suffix = t == GIR_F64 ? "" : "f";
  if (isnan(v)) return put(g->out, signbit(v) ? "(-NAN)" : "NAN");
  if (isinf(v)) return put(g->out, v < 0 ? "(-INFINITY)" : "INFINITY");
  char dec[64];
  snprintf(dec, sizeof dec, t == GIR_F64 ? "%.17g" : "%.9g", fabs(v));
  for (int digits = 1; digits <= (t == GIR_F64 ? 17 : 9); digits++) { /* the shortest that reads back */
    char d[64];
    snprintf(d, sizeof d, "%.*g", digits, fabs(v));
    double back = strtod(d, NULL);
    if (t == GIR_F64 ? back == fabs(v) : (float)back == (float)fabs(v)) {
      snprintf(dec, sizeof dec, "%s", d);
      break;
    }
  }
  int plain = strspn(dec, "0123456789.e+-") == strlen(dec) && strtod(dec, NULL) == fabs(v);
  const char *sign = signbit(v) ? "-" : "";
  if (!plain) putf(g->out, "%s%a%s", sign, fabs(v), suffix);
  else putf(g->out, "%s%s%s%s", sign, dec, strpbrk(dec, ".e") ? "" : ".0", suffix);
}

static void int_const(cgen *g, gir_dtype t, int64_t v) {
  if (t == GIR_BOOL) return put(g->out, v ? "((uint8_t)1)" : "((uint8_t)0)");
  if (t == GIR_U64) return putf(g->out, "UINT64_C(%llu)", (unsigned long long)v);
  if (t == GIR_I64) {
    if (v == INT64_MIN) return put(g->out, "INT64_MIN");
    return putf(g->out, "INT64_C(%lld)", (long long)v);
  }
  putf(g->out, "((%s)%lld)", reg_type(t), (long long)v);
}

static const char *libm_name(te_unop op) {
  switch (op) {
  case TE_EXP: return "exp";
  case TE_LOG: return "log";
  case TE_SIN: return "sin";
  case TE_COS: return "cos";
  case TE_TAN: return "tan";
  case TE_ASIN: return "asin";
  case TE_ACOS: return "acos";
  case TE_ATAN: return "atan";
  case TE_SINH: return "sinh";
  case TE_COSH: return "cosh";
  case TE_ASINH: return "asinh";
  case TE_ACOSH: return "acosh";
  case TE_ATANH: return "atanh";
  case TE_TANH: return "tanh";
  case TE_ERF: return "erf";
  case TE_SQRT: return "sqrt";
  case TE_FLOOR: return "floor";
  case TE_CEIL: return "ceil";
  case TE_ROUND: return "rint"; /* the default rounding mode: half to even */
  case TE_TRUNC: return "trunc";
  case TE_ABS: return "fabs";
  default: return NULL;
  }
}

/* op on a float register of dtype t (float32-computed for every format but float64). */
static void float_unary(cgen *g, te_unop op, gir_dtype t, const tir_expr *a, int lane) {
  const char *f = t == GIR_F64 ? "" : "f";
  switch (op) {
  case TE_NEG: put(g->out, "(-"); expr(g, a, lane); put(g->out, ")"); return;
  case TE_ISNAN: put(g->out, "((uint8_t)(isnan("); expr(g, a, lane); put(g->out, ") != 0))"); return;
  case TE_ISINF: put(g->out, "((uint8_t)(isinf("); expr(g, a, lane); put(g->out, ") != 0))"); return;
  case TE_NOT: case TE_BITNOT: expr(g, a, lane); return; /* meaningless on floats: passed through */
  default: break;
  }
  const char *name = libm_name(op);
  int exact = op == TE_ABS || op == TE_FLOOR || op == TE_CEIL || op == TE_ROUND || op == TE_TRUNC;
  if (!name) { /* not built on floats */
    expr(g, a, lane);
    return;
  }
  if (!exact) put(g->out, round_open(t));
  putf(g->out, "%s%s(", name, f);
  expr(g, a, lane);
  put(g->out, ")");
  if (!exact) put(g->out, round_close(t));
}

static void unary(cgen *g, const tir_expr *e, int lane) {
  te_unop op = e->u.un.op;
  const tir_expr *a = e->u.un.a;
  gir_dtype t = a->dtype;
  cbuf *o = g->out;
  if (gir_dtype_is_f8(t) && op != TE_ISNAN && op != TE_ISINF) {
    /* even -x or floor(x) may leave the format (FNUZ has no -0, e8m0 no sign or 0) */
    put(o, round_open(t));
    float_unary(g, op, GIR_F32, a, lane);
    put(o, round_close(t));
    return;
  }
  if (gir_dtype_is_float(t)) return float_unary(g, op, t, a, lane);
  if (t == GIR_BOOL) {
    switch (op) {
    case TE_NOT: put(o, "((uint8_t)("); expr(g, a, lane); put(o, " ^ 1))"); return;
    case TE_BITNOT: put(o, "((uint8_t)1)"); return; /* ~0 and ~1 are both non-zero */
    case TE_ISNAN: case TE_ISINF: put(o, "((uint8_t)0)"); return;
    default: expr(g, a, lane); return;
    }
  }
  switch (op) {
  case TE_NEG:
    put(o, wrap_open(t)), put(o, "0 - (uint64_t)("), expr(g, a, lane), put(o, ")"), put(o, wrap_close(t));
    return;
  case TE_ABS:
    if (!gir_dtype_is_signed(t)) return expr(g, a, lane);
    put(o, "("), expr(g, a, lane), put(o, " < 0 ? "); /* INT_MIN stays INT_MIN */
    put(o, wrap_open(t)), put(o, "0 - (uint64_t)("), expr(g, a, lane), put(o, ")"), put(o, wrap_close(t));
    put(o, " : "), expr(g, a, lane), put(o, ")");
    return;
  case TE_NOT: putf(o, "((%s)(", reg_type(t)), expr(g, a, lane), put(o, " == 0))"); return;
  case TE_BITNOT:
    put(o, wrap_open(t)), put(o, "~(uint64_t)("), expr(g, a, lane), put(o, ")"), put(o, wrap_close(t));
    return;
  case TE_ISNAN: case TE_ISINF: put(o, "((uint8_t)0)"); return;
  default: expr(g, a, lane); return; /* floor, ceil, round, trunc of an integer */
  }
}

static const char *cmp_op(te_binop op) {
  switch (op) {
  case TE_EQ: return "==";
  case TE_NE: return "!=";
  case TE_LT: return "<";
  case TE_LE: return "<=";
  case TE_GT: return ">";
  case TE_GE: return ">=";
  default: return NULL;
  }
}

/* call(a, b) with both operands converted by the same cast (may be ""). */
static void call2(cgen *g, const char *fn, const char *cast, const tir_expr *a, const tir_expr *b, int lane) {
  putf(g->out, "%s(%s(", fn, cast);
  expr(g, a, lane);
  putf(g->out, "), %s(", cast);
  expr(g, b, lane);
  put(g->out, "))");
}

static void float_binary(cgen *g, te_binop op, gir_dtype t, const tir_expr *a, const tir_expr *b, int lane) {
  cbuf *o = g->out;
  const char *f = t == GIR_F64 ? "" : "f";
  const char *c = cmp_op(op);
  if (c) {
    put(o, "((uint8_t)(("), expr(g, a, lane), putf(o, ") %s (", c), expr(g, b, lane), put(o, ")))");
    return;
  }
  switch (op) {
  case TE_ADD: case TE_SUB: case TE_MUL: case TE_DIV: {
    const char *sym = op == TE_ADD ? "+" : op == TE_SUB ? "-" : op == TE_MUL ? "*" : "/";
    put(o, round_open(t)), put(o, "(("), expr(g, a, lane), putf(o, ") %s (", sym), expr(g, b, lane), put(o, "))");
    put(o, round_close(t));
    return;
  }
  case TE_MOD: putf(o, "fmod%s", f), call2(g, "", "", a, b, lane); return; /* exact */
  case TE_FLOORDIV: case TE_FLOORMOD: {
    const char *fn = op == TE_FLOORDIV ? "kc_ffloordiv" : "kc_ffloormod";
    if (t == GIR_F64) return call2(g, fn, "", a, b, lane);
    put(o, round_open(t)), put(o, "((float)"), call2(g, fn, "(double)", a, b, lane), put(o, ")"), put(o, round_close(t));
    return;
  }
  case TE_MIN: case TE_MAX:
    return call2(g, op == TE_MIN ? (t == GIR_F64 ? "kc_fmin" : "kc_fminf") : (t == GIR_F64 ? "kc_fmax" : "kc_fmaxf"), "", a,
                 b, lane);
  case TE_POW: put(o, round_open(t)), putf(o, "pow%s", f), call2(g, "", "", a, b, lane), put(o, round_close(t)); return;
  default: putf(o, "((%s)0)", reg_type(t)); return; /* logic and shifts are never built on floats */
  }
}

static void int_binary(cgen *g, te_binop op, gir_dtype t, const tir_expr *a, const tir_expr *b, int lane) {
  cbuf *o = g->out;
  const char *c = cmp_op(op);
  if (c) {
    put(o, "((uint8_t)(("), expr(g, a, lane), putf(o, ") %s (", c), expr(g, b, lane), put(o, ")))");
    return;
  }
  if (t == GIR_BOOL) {
    if (op == TE_AND || op == TE_OR || op == TE_XOR) {
      const char *sym = op == TE_AND ? "&" : op == TE_OR ? "|" : "^";
      put(o, "((uint8_t)(("), expr(g, a, lane), putf(o, ") %s (", sym), expr(g, b, lane), put(o, ")))");
      return;
    }
    /* arithmetic on 0/1 as the interpreter does it: as uint8, then != 0 */
    put(o, "((uint8_t)(");
    int_binary(g, op, GIR_U8, a, b, lane);
    put(o, " != 0))");
    return;
  }
  int sg = gir_dtype_is_signed(t), w = gir_dtype_bits(t);
  switch (op) {
  case TE_ADD: case TE_SUB: case TE_MUL: case TE_AND: case TE_OR: case TE_XOR: {
    const char *sym = op == TE_ADD ? "+" : op == TE_SUB ? "-" : op == TE_MUL ? "*" : op == TE_AND ? "&" : op == TE_OR ? "|" : "^";
    put(o, wrap_open(t)), put(o, "(uint64_t)("), expr(g, a, lane), putf(o, ") %s (uint64_t)(", sym), expr(g, b, lane);
    put(o, ")"), put(o, wrap_close(t));
    return;
  }
  case TE_DIV: case TE_FLOORDIV: case TE_MOD: case TE_FLOORMOD: {
    const char *fn = sg ? (op == TE_DIV ? "kc_sdiv" : op == TE_FLOORDIV ? "kc_sfloordiv" : op == TE_MOD ? "kc_smod" : "kc_sfloormod")
                        : (op == TE_DIV || op == TE_FLOORDIV ? "kc_udiv" : "kc_umod");
    put(o, wrap_open(t)), put(o, "(uint64_t)"), call2(g, fn, sg ? "(int64_t)" : "(uint64_t)", a, b, lane), put(o, wrap_close(t));
    return;
  }
  case TE_MIN: case TE_MAX: {
    const char *fn = sg ? (op == TE_MIN ? "kc_smin" : "kc_smax") : (op == TE_MIN ? "kc_umin" : "kc_umax");
    putf(o, "((%s)", reg_type(t)), call2(g, fn, sg ? "(int64_t)" : "(uint64_t)", a, b, lane), put(o, ")");
    return;
  }
  case TE_POW: /* the interpreter's integer power on int64: operands sign- or zero-extended */
    put(o, wrap_open(t)), put(o, "(uint64_t)"), call2(g, "kc_ipow", sg ? "(int64_t)" : "(int64_t)(uint64_t)", a, b, lane);
    put(o, wrap_close(t));
    return;
  case TE_SHL: case TE_SHR: { /* the count is unsigned in t's width: a negative one is huge, so it also gives 0 */
    unsigned long long mask = w >= 64 ? ~0ull : (1ull << w) - 1;
    put(o, wrap_open(t)), putf(o, "%s((uint64_t)(", op == TE_SHL ? "kc_shl" : "kc_shr"), expr(g, a, lane);
    put(o, "), (uint64_t)("), expr(g, b, lane), putf(o, ") & 0x%llxu, %d)", mask, w), put(o, wrap_close(t));
    return;
  }
  default: assert(!"unknown binop"); expr(g, a, lane); return;
  }
}

/* A register of dtype t from the memory text written by `inner`. */
static void from_mem_open(cgen *g, gir_dtype t) {
  switch (t) {
  case GIR_F16: put(g->out, "kc_f16_to_f32("); return;
  case GIR_BF16: put(g->out, "kc_bf16_to_f32("); return;
  case GIR_BOOL: put(g->out, "((uint8_t)(0 != "); return;
  case GIR_I4: put(g->out, "kc_w_i4((uint64_t)"); return;
  case GIR_I2: put(g->out, "kc_w_i2((uint64_t)"); return;
  case GIR_U4: put(g->out, "kc_w_u4("); return;
  case GIR_U2: put(g->out, "kc_w_u2("); return;
  default:
    if (gir_dtype_is_f8(t)) putf(g->out, "kc_from_%s(", f8_name(t));
    else put(g->out, "(");
  }
}
static void from_mem_close(cgen *g, gir_dtype t) { put(g->out, t == GIR_BOOL ? "))" : ")"); }

static void to_mem_open(cgen *g, gir_dtype t) {
  switch (t) {
  case GIR_F16: put(g->out, "kc_f32_to_f16("); return;
  case GIR_BF16: put(g->out, "((uint16_t)(kc_fbits("); return; /* registers are rounded already */
  case GIR_BOOL: case GIR_U4: case GIR_U2: put(g->out, "((uint8_t)("); return;
  case GIR_I4: case GIR_I2: put(g->out, "((int8_t)("); return;
  default:
    if (gir_dtype_is_f8(t)) putf(g->out, "kc_to_%s(", f8_name(t));
    else put(g->out, "(");
  }
}
static void to_mem_close(cgen *g, gir_dtype t) {
  if (t == GIR_BF16) put(g->out, ") >> 16))");
  else put(g->out, t == GIR_BOOL || sub_byte(t) ? "))" : ")");
}

static void cast(cgen *g, gir_dtype from, gir_dtype to, const tir_expr *a, int lane) {
  cbuf *o = g->out;
  if (from == to) return expr(g, a, lane);
  int ff = gir_dtype_is_float(from);
  if (gir_dtype_is_float(to)) {
    if (to == GIR_F64) {
      put(o, "((double)("), expr(g, a, lane), put(o, "))");
      return;
    }
    put(o, round_open(to));
    if (ff) {
      put(o, from == GIR_F64 ? "((float)(" : "(("), expr(g, a, lane), put(o, "))");
    } else if (gir_dtype_bits(from) == 64) { /* through double, as the interpreter goes */
      put(o, "((float)(double)("), expr(g, a, lane), put(o, "))");
    } else {
      put(o, "((float)("), expr(g, a, lane), put(o, "))");
    }
    put(o, round_close(to));
    return;
  }
  if (to == GIR_BOOL) {
    put(o, "((uint8_t)(("), expr(g, a, lane), put(o, ") != 0))");
    return;
  }
  if (ff) { /* NaN → 0, saturated at the int64 (uint64) range, then wrapped to the width */
    if (to == GIR_U64) {
      put(o, "kc_f2u((double)("), expr(g, a, lane), put(o, "))");
      return;
    }
    put(o, wrap_open(to)), put(o, "(uint64_t)kc_f2i((double)("), expr(g, a, lane), put(o, "))"), put(o, wrap_close(to));
    return;
  }
  if (sub_byte(to)) { /* the low bits */
    put(o, wrap_open(to)), put(o, "(uint64_t)("), expr(g, a, lane), put(o, ")"), put(o, wrap_close(to));
    return;
  }
  putf(o, "((%s)(", reg_type(to)), expr(g, a, lane), put(o, "))"); /* C extends by the source's signedness */
}

/* The bits of a register of dtype from, read as dtype to (same memory size). */
static void bitcast(cgen *g, gir_dtype from, gir_dtype to, const tir_expr *a, int lane) {
  cbuf *o = g->out;
  const char *mf = mem_type(from), *mt = mem_type(to);
  from_mem_open(g, to);
  /* each prefix opens three parentheses */
  if (!strcmp(mf, "float") && strcmp(mt, "float")) putf(o, "((%s)kc_fbits((", mt);
  else if (!strcmp(mt, "float") && strcmp(mf, "float")) put(o, "(kc_bitsf((uint32_t)(");
  else if (!strcmp(mf, "double") && strcmp(mt, "double")) putf(o, "((%s)kc_dbits((", mt);
  else if (!strcmp(mt, "double") && strcmp(mf, "double")) put(o, "(kc_bitsd((uint64_t)(");
  else putf(o, "((%s)((", mt);
  to_mem_open(g, from);
  expr(g, a, lane);
  to_mem_close(g, from);
  put(o, ")))");
  from_mem_close(g, to);
}

static void load(cgen *g, const tir_expr *e, int lane) {
  const tir_buffer *buf = e->u.load.buf;
  from_mem_open(g, buf->dtype);
  putf(g->out, "b%d[", buf->id);
  expr(g, e->u.load.index, lane);
  put(g->out, "]");
  from_mem_close(g, buf->dtype);
}

static int32_t hptr(const struct htab *h, const tir_expr *e);

/* Lane k of a dot4 operand x, for the result lane being written (lane 0 when
 * `lane` is 0, else g->ln): lane 4l + j, or j of an operand of 4 lanes. */
static void dot4_operand(cgen *g, const tir_expr *x, int lane, int j) {
  const char *saved = g->ln, *at;
  if (x->lanes == 4 || !lane) {
    if (!j) {
      put(g->out, "(int32_t)("), expr(g, x, 0), put(g->out, ")");
      return;
    }
    at = gir_arena_printf(g->scratch, "%d", j);
  } else {
    at = gir_arena_printf(g->scratch, "4 * (%s) + %d", g->ln, j);
  }
  if (!at) {
    g->out->oom = 1;
    return;
  }
  g->ln = at;
  put(g->out, "(int32_t)("), expr(g, x, 1), put(g->out, ")");
  g->ln = saved;
}

/* kc_dot4(acc, a0..a3, b0..b3): the operands' lanes of this result lane, each
 * extended to int32 by its own dtype (C converts int8_t and uint8_t so). */
static int contiguous_load(const tir_expr *x) {
  const tir_expr *ix = x->kind == TIR_LOAD ? x->u.load.index : NULL;
  return ix && ix->kind == TIR_RAMP && ix->u.ramp.stride->kind == TIR_INT && ix->u.ramp.stride->u.i == 1;
}

/* &buf[index of the operand's first byte for this result lane] */
static void dot4_address(cgen *g, const tir_expr *x, int lane) {
  const char *saved = g->ln;
  int vec = x->lanes != 4 && lane;
  if (vec && !(g->ln = gir_arena_printf(g->scratch, "4 * (%s)", saved))) {
    g->out->oom = 1;
    g->ln = saved;
    return;
  }
  putf(g->out, "&b%d[", x->u.load.buf->id);
  expr(g, x->u.load.index, vec);
  put(g->out, "]");
  g->ln = saved;
}

static void dot4(cgen *g, const tir_expr *e, int lane) {
  const tir_expr *a = e->u.dot4.a, *b = e->u.dot4.b;
  if (contiguous_load(a) && contiguous_load(b)) { /* both sides' bytes in memory: the packed form (SMLAD) */
    putf(g->out, "kc_dot4_%c%c(", a->dtype == GIR_U8 ? 'u' : 's', b->dtype == GIR_U8 ? 'u' : 's');
    expr(g, e->u.dot4.acc, lane);
    put(g->out, ", "), dot4_address(g, a, lane), put(g->out, ", "), dot4_address(g, b, lane), put(g->out, ")");
    return;
  }
  put(g->out, "kc_dot4("), expr(g, e->u.dot4.acc, lane);
  for (int j = 0; j < 4; j++) put(g->out, ", "), dot4_operand(g, e->u.dot4.a, lane, j);
  for (int j = 0; j < 4; j++) put(g->out, ", "), dot4_operand(g, e->u.dot4.b, lane, j);
  put(g->out, ")");
}

static void expr(cgen *g, const tir_expr *e, int lane) {
  cbuf *o = g->out;
  if (g->h.active) {
    int32_t id = hptr(&g->h, e);
    if (id >= 0 && g->h.nodes[id].temp >= 0) {
      putf(o, "t%d", g->h.nodes[id].temp);
      return;
    }
  }
  if (e->kind == TIR_VAR) { /* a vector let's array, read at the lane */
    putf(o, "v%d", e->u.var->id);
    if (g->var_lanes[e->u.var->id] > 1) lane ? putf(o, "[%s]", g->ln) : put(o, "[0]");
    return;
  }
  if (e->lanes == 1) lane = 0; /* a scalar inside a vector expression: the same in every lane */
  switch (e->kind) {
  case TIR_INT:
    if (gir_dtype_is_float(e->dtype)) return float_const(g, e->dtype, round_const(e->dtype, (double)e->u.i));
    return int_const(g, e->dtype, e->u.i);
  case TIR_FLOAT: return float_const(g, e->dtype, round_const(e->dtype, e->u.f));
  case TIR_LOAD: return load(g, e, lane);
  case TIR_UNARY: return unary(g, e, lane);
  case TIR_BINARY: {
    gir_dtype t = e->u.bin.a->dtype;
    if (gir_dtype_is_float(t)) return float_binary(g, e->u.bin.op, t, e->u.bin.a, e->u.bin.b, lane);
    return int_binary(g, e->u.bin.op, t, e->u.bin.a, e->u.bin.b, lane);
  }
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    put(o, "(("), expr(g, e->u.sel.c, lane), put(o, ") ? ("), expr(g, e->u.sel.a, lane), put(o, ") : (");
    expr(g, e->u.sel.b, lane), put(o, "))");
    return;
  case TIR_CAST: return cast(g, e->u.cast.a->dtype, e->dtype, e->u.cast.a, lane);
  case TIR_BITCAST: return bitcast(g, e->u.cast.a->dtype, e->dtype, e->u.cast.a, lane);
  case TIR_RAMP: {
    gir_dtype t = e->dtype;
    if (!lane) { /* lane 0 */
      expr(g, e->u.ramp.base, 0);
      return;
    }
    if (gir_dtype_is_float(t)) {
      put(o, "(("), expr(g, e->u.ramp.base, 0), put(o, ") + ("), expr(g, e->u.ramp.stride, 0);
      putf(o, ") * (%s)(%s))", reg_type(t), g->ln);
      return;
    }
    put(o, wrap_open(t)), put(o, "(uint64_t)("), expr(g, e->u.ramp.base, 0), put(o, ") + (uint64_t)(");
    expr(g, e->u.ramp.stride, 0), putf(o, ") * (uint64_t)(%s)", g->ln), put(o, wrap_close(t));
    return;
  }
  case TIR_BROADCAST: return expr(g, e->u.bcast.value, 0);
  case TIR_DOT4: return dot4(g, e, lane);
  default: assert(!"unknown expression kind"); return;
  }
}

/* --- shared subexpressions --- */

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  return h * 0xbf58476d1ce4e5b9ull;
}

/* The node id of a pointer already counted, or -1. */
static int32_t hptr(const htab *h, const tir_expr *e) {
  if (!h->pcap) return -1;
  for (uint32_t i = (uint32_t)mix(0, (uint64_t)(uintptr_t)e) & (uint32_t)(h->pcap - 1);;
       i = (i + 1) & (uint32_t)(h->pcap - 1)) {
    if (h->pk[i] == e) return h->pv[i];
    if (!h->pk[i]) return -1;
  }
}

static int hptr_put(htab *h, const tir_expr *e, int32_t id) {
  if ((h->pn + 1) * 2 > h->pcap) {
    int32_t cap = h->pcap ? h->pcap * 2 : 256, ocap = h->pcap;
    const tir_expr **ok = h->pk;
    int32_t *ov = h->pv;
    h->pk = calloc((size_t)cap, sizeof *h->pk);
    h->pv = calloc((size_t)cap, sizeof *h->pv);
    if (!h->pk || !h->pv) return -1;
    h->pcap = cap, h->pn = 0;
    for (int32_t i = 0; i < ocap; i++)
      if (ok[i]) hptr_put(h, ok[i], ov[i]);
    free(ok), free(ov);
  }
  uint32_t i = (uint32_t)mix(0, (uint64_t)(uintptr_t)e) & (uint32_t)(h->pcap - 1);
  while (h->pk[i]) i = (i + 1) & (uint32_t)(h->pcap - 1);
  h->pk[i] = e, h->pv[i] = id, h->pn++;
  return 0;
}

static int same_structure(const cnode *n, const tir_expr *e, int64_t payload, const int32_t *kid) {
  return n->e->kind == e->kind && n->e->dtype == e->dtype && n->e->lanes == e->lanes && n->payload == payload &&
         n->kid[0] == kid[0] && n->kid[1] == kid[1] && n->kid[2] == kid[2];
}

static int hslot_grow(htab *h) {
  int32_t cap = h->scap ? h->scap * 2 : 256;
  int32_t *slot = malloc(sizeof *slot * (size_t)cap);
  if (!slot) return -1;
  for (int32_t i = 0; i < cap; i++) slot[i] = -1;
  for (int32_t id = 0; id < h->n; id++) {
    uint32_t i = (uint32_t)h->nodes[id].hash & (uint32_t)(cap - 1);
    while (slot[i] >= 0) i = (i + 1) & (uint32_t)(cap - 1);
    slot[i] = id;
  }
  free(h->slot);
  h->slot = slot, h->scap = cap;
  return 0;
}

/* The id of e's structure, counting one reference per parent edge of a new
 * structure (so a subexpression shared by two different parents counts 2). */
static int32_t hcount(cgen *g, const tir_expr *e) {
  htab *h = &g->h;
  int32_t id = hptr(h, e);
  if (id >= 0) return id;
  int32_t kid[3] = {-1, -1, -1};
  int64_t payload = 0;
  const tir_expr *ch[3] = {NULL, NULL, NULL};
  switch (e->kind) {
  case TIR_INT: payload = e->u.i; break;
  case TIR_FLOAT: memcpy(&payload, &e->u.f, sizeof payload); break;
  case TIR_VAR: payload = e->u.var->id; break;
  case TIR_LOAD: payload = e->u.load.buf->id, ch[0] = e->u.load.index; break;
  case TIR_UNARY: payload = e->u.un.op, ch[0] = e->u.un.a; break;
  case TIR_BINARY: payload = e->u.bin.op, ch[0] = e->u.bin.a, ch[1] = e->u.bin.b; break;
  case TIR_SELECT: case TIR_IF_THEN_ELSE: ch[0] = e->u.sel.c, ch[1] = e->u.sel.a, ch[2] = e->u.sel.b; break;
  case TIR_CAST: case TIR_BITCAST: ch[0] = e->u.cast.a; break;
  case TIR_RAMP: ch[0] = e->u.ramp.base, ch[1] = e->u.ramp.stride; break;
  case TIR_BROADCAST: ch[0] = e->u.bcast.value; break;
  case TIR_DOT4: ch[0] = e->u.dot4.acc, ch[1] = e->u.dot4.a, ch[2] = e->u.dot4.b; break;
  default: break;
  }
  for (int k = 0; k < 3; k++)
    if (ch[k] && (kid[k] = hcount(g, ch[k])) < 0) return -1;
  uint64_t hash = mix(mix(mix((uint64_t)e->kind, (uint64_t)e->dtype), (uint64_t)e->lanes), (uint64_t)payload);
  for (int k = 0; k < 3; k++) hash = mix(hash, (uint64_t)(int64_t)kid[k]);
  if ((h->n + 1) * 2 > h->scap && hslot_grow(h) < 0) return -1;
  uint32_t i = (uint32_t)hash & (uint32_t)(h->scap - 1);
  for (; h->slot[i] >= 0; i = (i + 1) & (uint32_t)(h->scap - 1))
    if (h->nodes[h->slot[i]].hash == hash && same_structure(&h->nodes[h->slot[i]], e, payload, kid)) {
      id = h->slot[i];
      return hptr_put(h, e, id) < 0 ? -1 : id; /* a known structure: its children are counted already */
    }
  if (h->n == h->ncap) {
    int32_t cap = h->ncap ? h->ncap * 2 : 256;
    cnode *nodes = realloc(h->nodes, sizeof *nodes * (size_t)cap);
    if (!nodes) return -1;
    h->nodes = nodes, h->ncap = cap;
  }
  int pure = e->lanes == 1 && e->kind != TIR_LOAD && (e->kind != TIR_VAR || g->var_lanes[e->u.var->id] <= 1);
  for (int k = 0; k < 3; k++) {
    if (kid[k] < 0) continue;
    h->nodes[kid[k]].refs++;
    pure &= h->nodes[kid[k]].pure;
  }
  id = h->n++;
  h->nodes[id] = (cnode){e, hash, payload, {kid[0], kid[1], kid[2]}, 0, -1, (int8_t)pure};
  h->slot[i] = id;
  return hptr_put(h, e, id) < 0 ? -1 : id;
}

static int worth_naming(const cnode *n) {
  return n->refs >= 2 && n->pure && n->e->kind != TIR_INT && n->e->kind != TIR_FLOAT && n->e->kind != TIR_VAR;
}

/* Opens a block naming the shared subexpressions of a statement's own expressions
 * (up to 4; NULLs skipped); close with hoist_end. Returns whether a block was opened. */
static int hoist_begin(cgen *g, const tir_expr *a, const tir_expr *b, const tir_expr *c, const tir_expr *d) {
  const tir_expr *es[4] = {a, b, c, d};
  htab *h = &g->h;
  if (h->pcap) memset(h->pk, 0, sizeof *h->pk * (size_t)h->pcap);
  for (int32_t i = 0; i < h->scap; i++) h->slot[i] = -1;
  h->pn = h->n = 0;
  h->active = 0;
  for (int i = 0; i < 4; i++)
    if (es[i]) {
      int32_t id = hcount(g, es[i]);
      if (id < 0) {
        g->out->oom = 1;
        return 0;
      }
      h->nodes[id].refs++;
    }
  int shared = 0;
  for (int32_t id = 0; id < h->n; id++) shared |= worth_naming(&h->nodes[id]);
  if (!shared) return 0;
  indent(g), put(g->out, "{\n");
  g->depth++;
  h->active = 1;
  for (int32_t id = 0; id < h->n; id++) { /* ids are in post-order: children first */
    cnode *n = &h->nodes[id];
    if (!worth_naming(n)) continue;
    int32_t t = g->n_temps++;
    indent(g), putf(g->out, "const %s t%d = ", reg_type(n->e->dtype), t), expr(g, n->e, 0), put(g->out, ";\n");
    n->temp = t;
  }
  return 1;
}

/* The statement's own expressions are written: later statements have their own table. */
static void hoist_done(cgen *g) { g->h.active = 0; }

static void hoist_end(cgen *g, int opened) {
  g->h.active = 0;
  if (!opened) return;
  g->depth--;
  indent(g), put(g->out, "}\n");
}

/* --- statements --- */

static void stmt(cgen *g, const tir_stmt *s);

static int reads_buffer(const tir_expr *e, const tir_buffer *b) {
  switch (e->kind) {
  case TIR_LOAD: return e->u.load.buf == b || reads_buffer(e->u.load.index, b);
  case TIR_UNARY: return reads_buffer(e->u.un.a, b);
  case TIR_BINARY: return reads_buffer(e->u.bin.a, b) || reads_buffer(e->u.bin.b, b);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    return reads_buffer(e->u.sel.c, b) || reads_buffer(e->u.sel.a, b) || reads_buffer(e->u.sel.b, b);
  case TIR_CAST: case TIR_BITCAST: return reads_buffer(e->u.cast.a, b);
  case TIR_RAMP: return reads_buffer(e->u.ramp.base, b) || reads_buffer(e->u.ramp.stride, b);
  case TIR_BROADCAST: return reads_buffer(e->u.bcast.value, b);
  case TIR_DOT4: return reads_buffer(e->u.dot4.acc, b) || reads_buffer(e->u.dot4.a, b) || reads_buffer(e->u.dot4.b, b);
  default: return 0;
  }
}

static void store(cgen *g, const tir_stmt *s) {
  const tir_buffer *buf = s->u.store.buf;
  const tir_expr *ix = s->u.store.index, *v = s->u.store.value;
  int n = v->lanes > ix->lanes ? v->lanes : ix->lanes;
  cbuf *o = g->out;
  if (n == 1) {
    indent(g), putf(o, "b%d[", buf->id), expr(g, ix, 0), put(o, "] = ");
    to_mem_open(g, buf->dtype), expr(g, v, 0), to_mem_close(g, buf->dtype), put(o, ";\n");
    return;
  }
  if (reads_buffer(v, buf) || reads_buffer(ix, buf)) { /* every lane reads before any lane writes */
    indent(g), putf(o, "{\n");
    g->depth++;
    indent(g), putf(o, "%s st_[%d];\n", reg_type(v->dtype), n);
    indent(g), putf(o, "for (int32_t ln = 0; ln < %d; ln++) st_[ln] = ", n), expr(g, v, 1), put(o, ";\n");
    indent(g), putf(o, "for (int32_t ln = 0; ln < %d; ln++) b%d[", n, buf->id), expr(g, ix, 1), put(o, "] = ");
    to_mem_open(g, buf->dtype), put(o, "st_[ln]"), to_mem_close(g, buf->dtype), put(o, ";\n");
    g->depth--;
    indent(g), put(o, "}\n");
    return;
  }
  indent(g), putf(o, "for (int32_t ln = 0; ln < %d; ln++) b%d[", n, buf->id), expr(g, ix, 1), put(o, "] = ");
  to_mem_open(g, buf->dtype), expr(g, v, 1), to_mem_close(g, buf->dtype), put(o, ";\n");
}

/* The alignment a buffer's base pointer is known to have (at least its element's). */
static int buf_align(const tir_buffer *b) {
  int a = b->align > 0 && (b->align & (b->align - 1)) == 0 ? b->align : 1;
  int esz = (int)gir_dtype_size(b->dtype);
  return a > esz ? a : esz;
}

/* --- free variables and buffers of a parallel loop's body --- */

typedef struct freeset {
  int32_t *var_bound, *buf_bound;
  const tir_var **var_used;
  const tir_buffer **buf_used;
} freeset;

static void free_expr(freeset *fs, const tir_expr *e) {
  switch (e->kind) {
  case TIR_VAR:
    if (!fs->var_bound[e->u.var->id]) fs->var_used[e->u.var->id] = e->u.var;
    break;
  case TIR_LOAD:
    if (!fs->buf_bound[e->u.load.buf->id]) fs->buf_used[e->u.load.buf->id] = e->u.load.buf;
    free_expr(fs, e->u.load.index);
    break;
  case TIR_UNARY: free_expr(fs, e->u.un.a); break;
  case TIR_BINARY: free_expr(fs, e->u.bin.a); free_expr(fs, e->u.bin.b); break;
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    free_expr(fs, e->u.sel.c);
    free_expr(fs, e->u.sel.a);
    free_expr(fs, e->u.sel.b);
    break;
  case TIR_CAST: case TIR_BITCAST: free_expr(fs, e->u.cast.a); break;
  case TIR_RAMP: free_expr(fs, e->u.ramp.base); free_expr(fs, e->u.ramp.stride); break;
  case TIR_BROADCAST: free_expr(fs, e->u.bcast.value); break;
  case TIR_DOT4:
    free_expr(fs, e->u.dot4.acc);
    free_expr(fs, e->u.dot4.a);
    free_expr(fs, e->u.dot4.b);
    break;
  default: break;
  }
}

static void free_stmt(freeset *fs, const tir_stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case TIR_FOR:
    free_expr(fs, s->u.loop.min);
    free_expr(fs, s->u.loop.extent);
    fs->var_bound[s->u.loop.var->id]++;
    free_stmt(fs, s->u.loop.body);
    fs->var_bound[s->u.loop.var->id]--;
    break;
  case TIR_LET:
    free_expr(fs, s->u.let.value);
    fs->var_bound[s->u.let.var->id]++;
    free_stmt(fs, s->u.let.body);
    fs->var_bound[s->u.let.var->id]--;
    break;
  case TIR_IF:
    free_expr(fs, s->u.ifs.cond);
    free_stmt(fs, s->u.ifs.then_s);
    free_stmt(fs, s->u.ifs.else_s);
    break;
  case TIR_STORE:
    if (!fs->buf_bound[s->u.store.buf->id]) fs->buf_used[s->u.store.buf->id] = s->u.store.buf;
    free_expr(fs, s->u.store.index);
    free_expr(fs, s->u.store.value);
    break;
  case TIR_PREFETCH:
    if (!fs->buf_bound[s->u.prefetch.buf->id]) fs->buf_used[s->u.prefetch.buf->id] = s->u.prefetch.buf;
    free_expr(fs, s->u.prefetch.index);
    break;
  case TIR_FAIL:
    free_expr(fs, s->u.fail.value);
    free_expr(fs, s->u.fail.lo);
    free_expr(fs, s->u.fail.hi);
    break;
  case TIR_ALLOCATE: {
    int local = s->u.alloc.buf->scope != TIR_GLOBAL;
    if (local) fs->buf_bound[s->u.alloc.buf->id]++;
    free_stmt(fs, s->u.alloc.body);
    if (local) fs->buf_bound[s->u.alloc.buf->id]--;
    break;
  }
  case TIR_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) free_stmt(fs, s->u.seq.s[i]);
    break;
  default: break;
  }
}

/* The declaration of a captured variable: a scalar, or a vector let's array. */
static void var_decl(cgen *g, cbuf *o, const tir_var *v) {
  if (g->var_lanes[v->id] > 1) putf(o, "const %s *v%d", reg_type(v->dtype), v->id);
  else putf(o, "%s v%d", reg_type(v->dtype), v->id);
}

static void parallel_loop(cgen *g, const tir_stmt *s) {
  const tir_func *f = g->fn;
  const tir_var *lv = s->u.loop.var;
  size_t nvars = (size_t)f->n_vars + 1, nbufs = (size_t)f->n_buffers + 1;
  freeset fs = {gir_arena_calloc(g->scratch, nvars, sizeof(int32_t)), gir_arena_calloc(g->scratch, nbufs, sizeof(int32_t)),
                gir_arena_calloc(g->scratch, nvars, sizeof(tir_var *)),
                gir_arena_calloc(g->scratch, nbufs, sizeof(tir_buffer *))};
  if (!fs.var_bound || !fs.buf_bound || !fs.var_used || !fs.buf_used) {
    g->out->oom = 1;
    return;
  }
  fs.var_bound[lv->id]++;
  free_stmt(&fs, s->u.loop.body);
  int id = g->n_tasks++;
  const char *kn = g->fname; /* a nested task is named after the task it runs in */
  const char *saved_fname = g->fname;
  g->fname = gir_arena_printf(g->scratch, "%s__t%d", kn, id);
  if (!g->fname) {
    g->out->oom = 1;
    return;
  }

  /* the closure type, the task's body and the task, written before the caller */
  cbuf task = {0}, *caller = g->out;
  int caller_depth = g->depth;
  g->out = &task;
  putf(&task, "struct %s__t%d_closure {\n  const kiln_ctx *ctx;\n  int32_t *status;\n  int64_t min;\n", kn, id);
  for (int b = 0; b < f->n_buffers; b++)
    if (fs.buf_used[b]) putf(&task, "  %s *b%d;\n", mem_type(fs.buf_used[b]->dtype), b);
  for (int v = 0; v < f->n_vars; v++)
    if (fs.var_used[v]) put(&task, "  "), var_decl(g, &task, fs.var_used[v]), put(&task, ";\n");
  put(&task, "};\n\n");
  putf(&task, "static void %s__t%d_body(const kiln_ctx *ctx, int32_t *status, int64_t begin, int64_t end, int64_t min",
       kn, id);
  for (int b = 0; b < f->n_buffers; b++)
    if (fs.buf_used[b]) putf(&task, ", %s *restrict b%d", mem_type(fs.buf_used[b]->dtype), b);
  for (int v = 0; v < f->n_vars; v++)
    if (fs.var_used[v]) put(&task, ", "), var_decl(g, &task, fs.var_used[v]);
  put(&task, ") {\n  (void)ctx;\n  (void)status;\n");
  putf(&task, "  for (int64_t i_ = begin; i_ < end; i_++) {\n    %s v%d = (%s)(min + i_);\n", reg_type(lv->dtype), lv->id,
       reg_type(lv->dtype));
  int32_t saved_lanes = g->var_lanes[lv->id];
  g->var_lanes[lv->id] = 1;
  g->depth = 2;
  stmt(g, s->u.loop.body);
  g->var_lanes[lv->id] = saved_lanes;
  put(&task, "  }\n}\n\n");
  putf(&task, "static void %s__t%d(void *closure, int64_t begin, int64_t end) {\n", kn, id);
  putf(&task, "  const struct %s__t%d_closure *c = (const struct %s__t%d_closure *)closure;\n", kn, id, kn, id);
  putf(&task, "  %s__t%d_body(c->ctx, c->status, begin, end, c->min", kn, id);
  for (int b = 0; b < f->n_buffers; b++)
    if (fs.buf_used[b]) putf(&task, ", c->b%d", b);
  for (int v = 0; v < f->n_vars; v++)
    if (fs.var_used[v]) putf(&task, ", c->v%d", v);
  put(&task, ");\n}\n\n");
  put(g->funcs, task.p ? task.p : "");
  if (task.oom) g->funcs->oom = 1;
  cbuf_free(&task);
  g->out = caller;
  g->depth = caller_depth;
  g->fname = saved_fname;

  /* the call: fill the closure, run ctx->parallel_for when there is work */
  cbuf *o = g->out;
  int h = hoist_begin(g, s->u.loop.extent, s->u.loop.min, NULL, NULL);
  indent(g), put(o, "{\n");
  g->depth++;
  indent(g), put(o, "int64_t n_ = (int64_t)("), expr(g, s->u.loop.extent, 0), put(o, ");\n");
  indent(g), putf(o, "struct %s__t%d_closure c_ = {ctx, status, (int64_t)(", kn, id), expr(g, s->u.loop.min, 0), put(o, ")");
  for (int b = 0; b < f->n_buffers; b++)
    if (fs.buf_used[b]) putf(o, ", b%d", b);
  for (int v = 0; v < f->n_vars; v++)
    if (fs.var_used[v]) putf(o, ", v%d", v);
  put(o, "};\n");
  indent(g), put(o, "if (n_ > 0) {\n");
  indent(g), putf(o, "  int32_t rc_ = ctx->parallel_for(ctx, %s__t%d, &c_, n_);\n", kn, id);
  indent(g), put(o, "  if (rc_ != 0) KC_STATUS_SET(status, rc_);\n");
  indent(g), put(o, "}\n");
  g->depth--;
  indent(g), put(o, "}\n");
  hoist_end(g, h);
}

static void stmt(cgen *g, const tir_stmt *s) {
  if (!s) return;
  cbuf *o = g->out;
  switch (s->kind) {
  case TIR_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) stmt(g, s->u.seq.s[i]);
    break;
  case TIR_STORE: {
    int h = hoist_begin(g, s->u.store.index, s->u.store.value, NULL, NULL);
    store(g, s);
    hoist_end(g, h);
    break;
  }
  case TIR_PREFETCH: {
    int h = hoist_begin(g, s->u.prefetch.index, NULL, NULL, NULL);
    indent(g), putf(o, "KC_PREFETCH(&b%d[", s->u.prefetch.buf->id), expr(g, s->u.prefetch.index, 0), put(o, "]);\n");
    hoist_end(g, h);
    break;
  }
  case TIR_FAIL: { /* ctx->fail when set; the kernel then returns 1 */
    int h = hoist_begin(g, s->u.fail.value, s->u.fail.lo, s->u.fail.hi, NULL);
    indent(g), put(o, "{\n");
    indent(g), put(o, "  int64_t fv_ = "), expr(g, s->u.fail.value, 0), put(o, ", flo_ = "), expr(g, s->u.fail.lo, 0);
    put(o, ", fhi_ = "), expr(g, s->u.fail.hi, 0), put(o, ";\n");
    indent(g), putf(o, "  if (ctx && ctx->fail) ctx->fail(ctx, %d, fv_, flo_, fhi_);\n", s->u.fail.check);
    indent(g), put(o, "  KC_STATUS_SET(status, 1);\n");
    indent(g), put(o, "}\n");
    hoist_end(g, h);
    break;
  }
  case TIR_LET: {
    const tir_var *v = s->u.let.var;
    int n = s->u.let.value->lanes;
    int h = hoist_begin(g, s->u.let.value, NULL, NULL, NULL);
    indent(g), put(o, "{\n");
    g->depth++;
    if (n == 1) {
      indent(g), putf(o, "%s v%d = ", reg_type(v->dtype), v->id), expr(g, s->u.let.value, 0), put(o, ";\n");
    } else {
      indent(g), putf(o, "%s v%d[%d];\n", reg_type(v->dtype), v->id, n);
      indent(g), putf(o, "for (int32_t ln = 0; ln < %d; ln++) v%d[ln] = ", n, v->id), expr(g, s->u.let.value, 1);
      put(o, ";\n");
    }
    hoist_done(g);
    int32_t saved = g->var_lanes[v->id];
    g->var_lanes[v->id] = n;
    stmt(g, s->u.let.body);
    g->var_lanes[v->id] = saved;
    g->depth--;
    indent(g), put(o, "}\n");
    hoist_end(g, h);
    break;
  }
  case TIR_IF: {
    int h = hoist_begin(g, s->u.ifs.cond, NULL, NULL, NULL);
    indent(g), put(o, "if ("), expr(g, s->u.ifs.cond, 0), put(o, ") {\n");
    hoist_done(g);
    g->depth++;
    stmt(g, s->u.ifs.then_s);
    g->depth--;
    if (s->u.ifs.else_s) {
      indent(g), put(o, "} else {\n");
      g->depth++;
      stmt(g, s->u.ifs.else_s);
      g->depth--;
    }
    indent(g), put(o, "}\n");
    hoist_end(g, h);
    break;
  }
  case TIR_ALLOCATE: {
    const tir_buffer *b = s->u.alloc.buf;
    if (b->scope == TIR_GLOBAL) { /* a parameter: nothing to allocate */
      stmt(g, s->u.alloc.body);
      break;
    }
    indent(g), put(o, "{\n");
    g->depth++;
    indent(g), putf(o, "KC_ALIGNED(%d) %s b%d[%lld];\n", buf_align(b), mem_type(b->dtype), b->id, (long long)b->size);
    stmt(g, s->u.alloc.body);
    g->depth--;
    indent(g), put(o, "}\n");
    break;
  }
  case TIR_FOR: {
    if (s->u.loop.kind == TIR_PARALLEL) {
      parallel_loop(g, s);
      break;
    }
    const tir_var *v = s->u.loop.var;
    const char *vt = reg_type(v->dtype);
    int h = hoist_begin(g, s->u.loop.min, s->u.loop.extent, NULL, NULL);
    indent(g), putf(o, "for (%s v%d = (%s)(", vt, v->id, vt), expr(g, s->u.loop.min, 0);
    putf(o, "), v%d_end = (%s)(v%d + (%s)(", v->id, vt, v->id, vt), expr(g, s->u.loop.extent, 0);
    putf(o, ")); v%d < v%d_end; v%d++) {\n", v->id, v->id, v->id);
    hoist_done(g);
    int32_t saved = g->var_lanes[v->id];
    g->var_lanes[v->id] = 1;
    g->depth++;
    stmt(g, s->u.loop.body);
    g->depth--;
    g->var_lanes[v->id] = saved;
    indent(g), put(o, "}\n");
    hoist_end(g, h);
    break;
  }
  default: assert(!"unknown statement kind"); break;
  }
}

static int emit_func(cgen *g, const tir_func *f) {
  if (check_func(g, f) < 0) return -1;
  g->fn = f;
  g->fname = f->name;
  g->n_tasks = 0;
  g->var_lanes = gir_arena_calloc(g->scratch, (size_t)f->n_vars + 1, sizeof *g->var_lanes);
  if (!g->var_lanes) return gir_errf(g->err, "out of memory");
  g->ln = "ln";
  cbuf body = {0};
  g->out = &body;
  g->depth = 1;
  putf(&body, "static void %s__compute(const kiln_ctx *ctx, int32_t *status", f->name);
  for (int i = 0; i < f->n_params; i++)
    putf(&body, ", %s *restrict b%d", mem_type(f->params[i]->dtype), f->params[i]->id);
  put(&body, ") {\n  (void)ctx;\n  (void)status;\n");
  for (int i = 0; i < f->n_params; i++) {
    const tir_buffer *b = f->params[i];
    if (buf_align(b) > (int)gir_dtype_size(b->dtype))
      putf(&body, "  b%d = (%s *)KC_ASSUME_ALIGNED(b%d, %d); /* %s */\n", b->id, mem_type(b->dtype), b->id, buf_align(b),
           b->name ? b->name : "");
  }
  stmt(g, f->body);
  put(&body, "}\n\n");
  putf(&body, "int32_t %s(void *const *buffers, const kiln_ctx *ctx) {\n  int32_t status = 0;\n  %s__compute(ctx, &status",
       f->name, f->name);
  for (int i = 0; i < f->n_params; i++) putf(&body, ",\n      (%s *)buffers[%d]", mem_type(f->params[i]->dtype), i);
  put(&body, ");\n  return status;\n}\n\n");
  put(g->funcs, body.p ? body.p : "");
  int oom = body.oom;
  cbuf_free(&body);
  return oom ? gir_errf(g->err, "out of memory") : 0;
}

int tgt_c_emit_source(const tir_func *const *fns, int32_t n, const tgt_c_options *opt, char **src, size_t *len,
                      gir_err *err) {
  *src = NULL;
  *len = 0;
  cbuf out = {0}, funcs = {0};
  cgen g = {.scratch = gir_arena_new(), .err = err, .funcs = &funcs};
  if (!g.scratch) return gir_errf(err, "out of memory");
  int rc = 0;
  for (int32_t i = 0; i < n && rc == 0; i++) {
    for (int32_t j = 0; j < i; j++)
      if (!strcmp(fns[i]->name, fns[j]->name)) {
        rc = gir_errf(err, "c: two kernels are named %s", fns[i]->name);
        break;
      }
    if (rc == 0) rc = emit_func(&g, fns[i]);
  }
  if (rc == 0) {
    put(&out, "/* Generated by kiln's C backend (targets/c): ");
    putf(&out, "%d kernel%s with the ABI of kiln_abi.h.\n", n, n == 1 ? "" : "s");
    put(&out, " * Compile without fast-math and with -ffp-contract=off (the kernels round float16 and\n"
              " * the float8 formats after every operation, as kiln's reference interpreter does). */\n");
    put(&out, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n");
    putf(&out, "#include \"%s\"\n\n", opt && opt->abi_header ? opt->abi_header : "kiln_abi.h");
    put(&out, tgt_c_prelude_text());
    put(&out, "\n");
    put(&out, funcs.p ? funcs.p : "");
    if (out.oom || funcs.oom) rc = gir_errf(err, "out of memory");
  }
  gir_arena_free(g.scratch);
  free(g.h.pk), free(g.h.pv), free(g.h.slot), free(g.h.nodes);
  cbuf_free(&funcs);
  if (rc < 0) {
    cbuf_free(&out);
    return -1;
  }
  *src = out.p;
  *len = out.n;
  return 0;
}
