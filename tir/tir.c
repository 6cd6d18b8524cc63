/* tir.c — constructors and the text printer of the loop IR (see tir.h). Type and
 * lane agreement of operands is an internal invariant, asserted. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "tir.h"

static void *alloc(tir_builder *b, size_t n) {
  void *p = gir_arena_alloc(b->arena, n);
  if (!p) abort(); /* out of memory while building IR */
  return p;
}

void tir_builder_init(tir_builder *b, gir_arena *a) {
  b->arena = a;
  b->next_var = 0;
  b->next_buffer = 0;
}

tir_var *tir_var_new(tir_builder *b, const char *name, gir_dtype t) {
  tir_var *v = alloc(b, sizeof *v);
  v->id = b->next_var++;
  v->name = name ? name : "v";
  v->dtype = t;
  return v;
}

tir_buffer *tir_buffer_new(tir_builder *b, const char *name, gir_dtype t, int64_t size, tir_scope scope, int32_t param) {
  tir_buffer *x = alloc(b, sizeof *x);
  x->id = b->next_buffer++;
  x->name = name ? name : "buf";
  x->dtype = t;
  x->size = size;
  x->scope = scope;
  x->param = param;
  x->align = scope == TIR_GLOBAL ? 64 : 16;
  return x;
}

static tir_expr *expr(tir_builder *b, tir_expr_kind k, gir_dtype t, int32_t lanes) {
  tir_expr *e = alloc(b, sizeof *e);
  e->kind = k;
  e->dtype = t;
  e->lanes = lanes;
  return e;
}

tir_expr *tir_int(tir_builder *b, gir_dtype t, int64_t v) {
  tir_expr *e = expr(b, TIR_INT, t, 1);
  e->u.i = v;
  return e;
}

tir_expr *tir_i64(tir_builder *b, int64_t v) { return tir_int(b, GIR_I64, v); }

tir_expr *tir_float(tir_builder *b, gir_dtype t, double v) {
  tir_expr *e = expr(b, TIR_FLOAT, t, 1);
  e->u.f = v;
  return e;
}

tir_expr *tir_const(tir_builder *b, gir_dtype t, double v) {
  if (gir_dtype_is_float(t)) return tir_float(b, t, v);
  if (t == GIR_BOOL) return tir_int(b, t, v != 0);
  if (v != v) return tir_int(b, t, 0);
  if (v >= 9.2233720368547758e18) return tir_int(b, t, INT64_MAX);
  if (v <= -9.2233720368547758e18) return tir_int(b, t, INT64_MIN);
  return tir_int(b, t, (int64_t)v);
}

tir_expr *tir_var_ref(tir_builder *b, tir_var *v) {
  tir_expr *e = expr(b, TIR_VAR, v->dtype, 1);
  e->u.var = v;
  return e;
}

tir_expr *tir_load(tir_builder *b, tir_buffer *buf, tir_expr *index) {
  assert(index->dtype == GIR_I64);
  tir_expr *e = expr(b, TIR_LOAD, buf->dtype, index->lanes);
  e->u.load.buf = buf;
  e->u.load.index = index;
  return e;
}

tir_expr *tir_un(tir_builder *b, te_unop op, tir_expr *a) {
  gir_dtype t = (op == TE_ISNAN || op == TE_ISINF) ? GIR_BOOL : a->dtype;
  tir_expr *e = expr(b, TIR_UNARY, t, a->lanes);
  e->u.un.op = op;
  e->u.un.a = a;
  return e;
}

tir_expr *tir_bin(tir_builder *b, te_binop op, tir_expr *x, tir_expr *y) {
  assert(x->dtype == y->dtype && x->lanes == y->lanes);
  tir_expr *e = expr(b, TIR_BINARY, op >= TE_EQ ? GIR_BOOL : x->dtype, x->lanes);
  e->u.bin.op = op;
  e->u.bin.a = x;
  e->u.bin.b = y;
  return e;
}

static tir_expr *sel(tir_builder *b, tir_expr_kind k, tir_expr *c, tir_expr *x, tir_expr *y) {
  assert(c->dtype == GIR_BOOL && x->dtype == y->dtype && x->lanes == y->lanes);
  assert(c->lanes == 1 || c->lanes == x->lanes);
  tir_expr *e = expr(b, k, x->dtype, x->lanes);
  e->u.sel.c = c;
  e->u.sel.a = x;
  e->u.sel.b = y;
  return e;
}

tir_expr *tir_select(tir_builder *b, tir_expr *c, tir_expr *x, tir_expr *y) { return sel(b, TIR_SELECT, c, x, y); }
tir_expr *tir_if_then_else(tir_builder *b, tir_expr *c, tir_expr *x, tir_expr *y) {
  return sel(b, TIR_IF_THEN_ELSE, c, x, y);
}

tir_expr *tir_cast(tir_builder *b, gir_dtype t, tir_expr *a) {
  if (a->dtype == t) return a;
  tir_expr *e = expr(b, TIR_CAST, t, a->lanes);
  e->u.cast.a = a;
  return e;
}

tir_expr *tir_bitcast(tir_builder *b, gir_dtype t, tir_expr *a) {
  assert(gir_dtype_size(t) == gir_dtype_size(a->dtype));
  if (a->dtype == t) return a;
  tir_expr *e = expr(b, TIR_BITCAST, t, a->lanes);
  e->u.cast.a = a;
  return e;
}

tir_expr *tir_ramp(tir_builder *b, tir_expr *base, tir_expr *stride, int32_t lanes) {
  assert(base->lanes == 1 && stride->lanes == 1 && base->dtype == stride->dtype && lanes > 1);
  tir_expr *e = expr(b, TIR_RAMP, base->dtype, lanes);
  e->u.ramp.base = base;
  e->u.ramp.stride = stride;
  return e;
}

tir_expr *tir_broadcast(tir_builder *b, tir_expr *value, int32_t lanes) {
  assert(value->lanes == 1);
  if (lanes == 1) return value;
  tir_expr *e = expr(b, TIR_BROADCAST, value->dtype, lanes);
  e->u.bcast.value = value;
  return e;
}

int tir_dot4_operands_ok(const tir_expr *acc, const tir_expr *a, const tir_expr *x, int32_t lanes) {
  return acc->dtype == GIR_I32 && acc->lanes == lanes && lanes >= 1 && (a->dtype == GIR_U8 || a->dtype == GIR_I8) &&
         (x->dtype == GIR_U8 || x->dtype == GIR_I8) && x->lanes == 4 * lanes && (a->lanes == x->lanes || a->lanes == 4);
}

tir_expr *tir_dot4(tir_builder *b, tir_expr *acc, tir_expr *a, tir_expr *x) {
  assert(tir_dot4_operands_ok(acc, a, x, acc->lanes));
  tir_expr *e = expr(b, TIR_DOT4, GIR_I32, acc->lanes);
  e->u.dot4.acc = acc;
  e->u.dot4.a = a;
  e->u.dot4.b = x;
  return e;
}

tir_expr *tir_shuffle(tir_builder *b, tir_shfl_mode mode, tir_expr *value, int32_t offset) {
  assert(value->lanes == 1 && offset >= 1 && offset < 32 &&
         (value->dtype == GIR_F32 || value->dtype == GIR_F64 || value->dtype == GIR_I32 || value->dtype == GIR_I64));
  tir_expr *e = expr(b, TIR_SHUFFLE, value->dtype, 1);
  e->u.shfl.value = value;
  e->u.shfl.offset = offset;
  e->u.shfl.mode = mode;
  return e;
}

int tir_expr_has_shuffle(const tir_expr *e) {
  if (!e) return 0;
  switch (e->kind) {
  case TIR_SHUFFLE: return 1;
  case TIR_LOAD: return tir_expr_has_shuffle(e->u.load.index);
  case TIR_UNARY: return tir_expr_has_shuffle(e->u.un.a);
  case TIR_BINARY: return tir_expr_has_shuffle(e->u.bin.a) || tir_expr_has_shuffle(e->u.bin.b);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    return tir_expr_has_shuffle(e->u.sel.c) || tir_expr_has_shuffle(e->u.sel.a) || tir_expr_has_shuffle(e->u.sel.b);
  case TIR_CAST: case TIR_BITCAST: return tir_expr_has_shuffle(e->u.cast.a);
  case TIR_RAMP: return tir_expr_has_shuffle(e->u.ramp.base) || tir_expr_has_shuffle(e->u.ramp.stride);
  case TIR_BROADCAST: return tir_expr_has_shuffle(e->u.bcast.value);
  case TIR_DOT4:
    return tir_expr_has_shuffle(e->u.dot4.acc) || tir_expr_has_shuffle(e->u.dot4.a) || tir_expr_has_shuffle(e->u.dot4.b);
  default: return 0;
  }
}

int tir_expr_reads_memory(const tir_expr *e) {
  if (!e) return 0;
  switch (e->kind) {
  case TIR_LOAD: case TIR_DOT4: case TIR_SHUFFLE: return 1;
  case TIR_UNARY: return tir_expr_reads_memory(e->u.un.a);
  case TIR_BINARY: return tir_expr_reads_memory(e->u.bin.a) || tir_expr_reads_memory(e->u.bin.b);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    return tir_expr_reads_memory(e->u.sel.c) || tir_expr_reads_memory(e->u.sel.a) || tir_expr_reads_memory(e->u.sel.b);
  case TIR_CAST: case TIR_BITCAST: return tir_expr_reads_memory(e->u.cast.a);
  case TIR_RAMP: return tir_expr_reads_memory(e->u.ramp.base) || tir_expr_reads_memory(e->u.ramp.stride);
  case TIR_BROADCAST: return tir_expr_reads_memory(e->u.bcast.value);
  default: return 0;
  }
}

static tir_stmt *stmt(tir_builder *b, tir_stmt_kind k) {
  tir_stmt *s = alloc(b, sizeof *s);
  s->kind = k;
  return s;
}

tir_stmt *tir_for(tir_builder *b, tir_var *v, tir_expr *min, tir_expr *extent, tir_for_kind k, tir_stmt *body) {
  tir_stmt *s = stmt(b, TIR_FOR);
  s->u.loop.var = v;
  s->u.loop.min = min;
  s->u.loop.extent = extent;
  s->u.loop.kind = k;
  s->u.loop.body = body;
  return s;
}

tir_stmt *tir_let(tir_builder *b, tir_var *v, tir_expr *value, tir_stmt *body) {
  tir_stmt *s = stmt(b, TIR_LET);
  s->u.let.var = v;
  s->u.let.value = value;
  s->u.let.body = body;
  return s;
}

tir_stmt *tir_if(tir_builder *b, tir_expr *cond, tir_stmt *then_s, tir_stmt *else_s) {
  tir_stmt *s = stmt(b, TIR_IF);
  s->u.ifs.cond = cond;
  s->u.ifs.then_s = then_s;
  s->u.ifs.else_s = else_s;
  return s;
}

tir_stmt *tir_store(tir_builder *b, tir_buffer *buf, tir_expr *index, tir_expr *value) {
  assert(index->dtype == GIR_I64 && index->lanes == value->lanes && value->dtype == buf->dtype);
  tir_stmt *s = stmt(b, TIR_STORE);
  s->u.store.buf = buf;
  s->u.store.index = index;
  s->u.store.value = value;
  return s;
}

tir_stmt *tir_allocate(tir_builder *b, tir_buffer *buf, tir_stmt *body) {
  tir_stmt *s = stmt(b, TIR_ALLOCATE);
  s->u.alloc.buf = buf;
  s->u.alloc.body = body;
  return s;
}

tir_stmt *tir_fail(tir_builder *b, int32_t check, tir_expr *value, tir_expr *lo, tir_expr *hi) {
  assert(check >= 0 && value->dtype == GIR_I64 && value->lanes == 1 && lo->dtype == GIR_I64 && lo->lanes == 1 &&
         hi->dtype == GIR_I64 && hi->lanes == 1);
  tir_stmt *s = stmt(b, TIR_FAIL);
  s->u.fail.check = check;
  s->u.fail.value = value;
  s->u.fail.lo = lo;
  s->u.fail.hi = hi;
  return s;
}

tir_stmt *tir_barrier(tir_builder *b) { return stmt(b, TIR_BARRIER); }

tir_buffer *tir_fragment_new(tir_builder *b, const char *name, tir_frag f, int64_t n) {
  assert(f != TIR_FRAG_NONE && n >= 1);
  tir_buffer *x = tir_buffer_new(b, name, GIR_F32, n * tir_frag_elems(f), TIR_FRAGMENT, -1);
  x->frag = f;
  return x;
}

static inline int wmma_scalar(const tir_expr *e) { return e && e->dtype == GIR_I64 && e->lanes == 1; }

static tir_stmt *wmma(tir_builder *b, tir_wmma_op op, tir_buffer *frag, tir_expr *fi) {
  assert(frag->scope == TIR_FRAGMENT && wmma_scalar(fi));
  tir_stmt *s = stmt(b, TIR_WMMA);
  s->u.wmma.op = op;
  s->u.wmma.frag = frag;
  s->u.wmma.fi = fi;
  return s;
}

tir_stmt *tir_wmma_fill(tir_builder *b, tir_buffer *acc, tir_expr *fi, double value) {
  assert(acc->frag == TIR_FRAG_ACC);
  tir_stmt *s = wmma(b, TIR_WMMA_FILL, acc, fi);
  s->u.wmma.value = value;
  return s;
}

tir_stmt *tir_wmma_load(tir_builder *b, tir_buffer *frag, tir_expr *fi, tir_buffer *mem, tir_expr *index, int64_t ldm) {
  assert(frag->frag == TIR_FRAG_A || frag->frag == TIR_FRAG_B);
  assert(mem->dtype == GIR_F32 && (mem->scope == TIR_GLOBAL || mem->scope == TIR_SHARED) && wmma_scalar(index) &&
         ldm > 0 && ldm % 4 == 0);
  tir_stmt *s = wmma(b, frag->frag == TIR_FRAG_A ? TIR_WMMA_LOAD_A : TIR_WMMA_LOAD_B, frag, fi);
  s->u.wmma.mem = mem;
  s->u.wmma.index = index;
  s->u.wmma.ldm = ldm;
  return s;
}

tir_stmt *tir_wmma_mma(tir_builder *b, tir_buffer *acc, tir_expr *fi, tir_buffer *fa, tir_expr *ia, tir_buffer *fb,
                       tir_expr *ib) {
  assert(acc->frag == TIR_FRAG_ACC && fa->frag == TIR_FRAG_A && fb->frag == TIR_FRAG_B && wmma_scalar(ia) &&
         wmma_scalar(ib));
  tir_stmt *s = wmma(b, TIR_WMMA_MMA, acc, fi);
  s->u.wmma.fa = fa;
  s->u.wmma.fb = fb;
  s->u.wmma.ia = ia;
  s->u.wmma.ib = ib;
  return s;
}

tir_stmt *tir_wmma_store(tir_builder *b, tir_buffer *acc, tir_expr *fi, tir_buffer *mem, tir_expr *index, int64_t ldm) {
  assert(acc->frag == TIR_FRAG_ACC && mem->dtype == GIR_F32 && (mem->scope == TIR_GLOBAL || mem->scope == TIR_SHARED) &&
         wmma_scalar(index) && ldm > 0 && ldm % 4 == 0);
  tir_stmt *s = wmma(b, TIR_WMMA_STORE, acc, fi);
  s->u.wmma.mem = mem;
  s->u.wmma.index = index;
  s->u.wmma.ldm = ldm;
  return s;
}

tir_stmt *tir_wmma_with(tir_builder *b, const tir_stmt *s, tir_expr *fi, tir_expr *ia, tir_expr *ib, tir_expr *index) {
  assert(s->kind == TIR_WMMA);
  tir_stmt *x = stmt(b, TIR_WMMA);
  x->u.wmma = s->u.wmma;
  if (fi) x->u.wmma.fi = fi;
  if (ia) x->u.wmma.ia = ia;
  if (ib) x->u.wmma.ib = ib;
  if (index) x->u.wmma.index = index;
  return x;
}

float tir_round_tf32(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) { /* finite: add half an ulp of the 10-bit mantissa, truncate */
    u += 0x1000u;
    u &= 0xffffe000u;
  }
  memcpy(&x, &u, 4);
  return x;
}

int tir_stmt_has_sync(const tir_stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
  case TIR_BARRIER: return 1;
  case TIR_WMMA: return 1;
  case TIR_FOR:
    return tir_expr_has_shuffle(s->u.loop.min) || tir_expr_has_shuffle(s->u.loop.extent) ||
           tir_stmt_has_sync(s->u.loop.body);
  case TIR_LET: return tir_expr_has_shuffle(s->u.let.value) || tir_stmt_has_sync(s->u.let.body);
  case TIR_IF:
    return tir_expr_has_shuffle(s->u.ifs.cond) || tir_stmt_has_sync(s->u.ifs.then_s) || tir_stmt_has_sync(s->u.ifs.else_s);
  case TIR_STORE: return tir_expr_has_shuffle(s->u.store.index) || tir_expr_has_shuffle(s->u.store.value);
  case TIR_ALLOCATE: return tir_stmt_has_sync(s->u.alloc.body);
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++)
      if (tir_stmt_has_sync(s->u.seq.s[i])) return 1;
    return 0;
  default: return 0;
  }
}

tir_for_kind tir_for_kind_of_tag(const char *tag) {
  static const char *const tags[6] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  if (!tag) return TIR_SERIAL;
  for (int i = 0; i < 6; i++)
    if (!strcmp(tag, tags[i])) return (tir_for_kind)(TIR_BLOCK_X + i);
  return TIR_FOR_KIND_COUNT;
}

tir_stmt *tir_prefetch(tir_builder *b, tir_buffer *buf, tir_expr *index) {
  assert(index->dtype == GIR_I64 && index->lanes == 1);
  tir_stmt *s = stmt(b, TIR_PREFETCH);
  s->u.prefetch.buf = buf;
  s->u.prefetch.index = index;
  return s;
}

tir_stmt *tir_seq(tir_builder *b, tir_stmt *const *xs, int32_t n) {
  int32_t cnt = 0;
  for (int i = 0; i < n; i++)
    if (xs[i]) cnt += xs[i]->kind == TIR_SEQ ? xs[i]->u.seq.n : 1;
  tir_stmt *s = stmt(b, TIR_SEQ);
  s->u.seq.s = alloc(b, sizeof(tir_stmt *) * (size_t)(cnt + 1));
  for (int i = 0; i < n; i++) {
    if (!xs[i]) continue;
    if (xs[i]->kind == TIR_SEQ)
      for (int j = 0; j < xs[i]->u.seq.n; j++) s->u.seq.s[s->u.seq.n++] = xs[i]->u.seq.s[j];
    else
      s->u.seq.s[s->u.seq.n++] = xs[i];
  }
  return s;
}

tir_stmt *tir_seq2(tir_builder *b, tir_stmt *x, tir_stmt *y) {
  tir_stmt *xs[2] = {x, y};
  return tir_seq(b, xs, 2);
}

/* --- printer --- */

static const char *const for_kinds[TIR_FOR_KIND_COUNT] = {"for", "parallel", "vectorized", "unrolled", "blockIdx.x", "blockIdx.y", "blockIdx.z",
                                                              "threadIdx.x", "threadIdx.y", "threadIdx.z"};

/* name(x, y, z) */
static void print_call3(FILE *f, const char *name, const tir_expr *x, const tir_expr *y, const tir_expr *z) {
  fprintf(f, "%s(", name);
  tir_print_expr(x, f);
  fputs(", ", f);
  tir_print_expr(y, f);
  fputs(", ", f);
  tir_print_expr(z, f);
  fputc(')', f);
}

void tir_print_expr(const tir_expr *e, FILE *f) {
  switch (e->kind) {
  case TIR_INT: fprintf(f, "%lld", (long long)e->u.i); break;
  case TIR_FLOAT: fprintf(f, "%.9gf", e->u.f); break;
  case TIR_VAR: fprintf(f, "%s_%d", e->u.var->name, e->u.var->id); break;
  case TIR_LOAD:
    fprintf(f, "%s[", e->u.load.buf->name);
    tir_print_expr(e->u.load.index, f);
    fputc(']', f);
    break;
  case TIR_UNARY:
    fprintf(f, "%s(", te_unop_name(e->u.un.op));
    tir_print_expr(e->u.un.a, f);
    fputc(')', f);
    break;
  case TIR_BINARY:
    fprintf(f, "%s(", te_binop_name(e->u.bin.op));
    tir_print_expr(e->u.bin.a, f);
    fputs(", ", f);
    tir_print_expr(e->u.bin.b, f);
    fputc(')', f);
    break;
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    print_call3(f, e->kind == TIR_SELECT ? "select" : "if_then_else", e->u.sel.c, e->u.sel.a, e->u.sel.b);
    break;
  case TIR_CAST: case TIR_BITCAST:
    fprintf(f, e->kind == TIR_CAST ? "%s(" : "bitcast<%s>(", gir_dtype_name(e->dtype));
    tir_print_expr(e->u.cast.a, f);
    fputc(')', f);
    break;
  case TIR_RAMP:
    fputs("ramp(", f);
    tir_print_expr(e->u.ramp.base, f);
    fputs(", ", f);
    tir_print_expr(e->u.ramp.stride, f);
    fprintf(f, ", %d)", e->lanes);
    break;
  case TIR_BROADCAST:
    fputs("x", f);
    fprintf(f, "%d(", e->lanes);
    tir_print_expr(e->u.bcast.value, f);
    fputc(')', f);
    break;
  case TIR_DOT4: print_call3(f, "dot4", e->u.dot4.acc, e->u.dot4.a, e->u.dot4.b); break;
  case TIR_SHUFFLE:
    fputs(e->u.shfl.mode == TIR_SHFL_XOR ? "shfl_xor(" : "shfl_down(", f);
    tir_print_expr(e->u.shfl.value, f);
    fprintf(f, ", %d)", e->u.shfl.offset);
    break;
  default: fputs("?", f);
  }
}

void tir_print_stmt(const tir_stmt *s, FILE *f, int ind) {
  if (!s) return;
  switch (s->kind) {
  case TIR_FOR:
    fprintf(f, "%*s%s %s_%d in [", ind, "", for_kinds[s->u.loop.kind], s->u.loop.var->name, s->u.loop.var->id);
    tir_print_expr(s->u.loop.min, f);
    fputs(", +", f);
    tir_print_expr(s->u.loop.extent, f);
    fputs("):\n", f);
    tir_print_stmt(s->u.loop.body, f, ind + 2);
    break;
  case TIR_LET:
    fprintf(f, "%*slet %s_%d = ", ind, "", s->u.let.var->name, s->u.let.var->id);
    tir_print_expr(s->u.let.value, f);
    fputc('\n', f);
    tir_print_stmt(s->u.let.body, f, ind);
    break;
  case TIR_IF:
    fprintf(f, "%*sif ", ind, "");
    tir_print_expr(s->u.ifs.cond, f);
    fputs(":\n", f);
    tir_print_stmt(s->u.ifs.then_s, f, ind + 2);
    if (s->u.ifs.else_s) {
      fprintf(f, "%*selse:\n", ind, "");
      tir_print_stmt(s->u.ifs.else_s, f, ind + 2);
    }
    break;
  case TIR_STORE:
    fprintf(f, "%*s%s[", ind, "", s->u.store.buf->name);
    tir_print_expr(s->u.store.index, f);
    fputs("] = ", f);
    tir_print_expr(s->u.store.value, f);
    fputc('\n', f);
    break;
  case TIR_PREFETCH:
    fprintf(f, "%*sprefetch %s[", ind, "", s->u.prefetch.buf->name);
    tir_print_expr(s->u.prefetch.index, f);
    fputs("]\n", f);
    break;
  case TIR_BARRIER: fprintf(f, "%*sbarrier\n", ind, ""); break;
  case TIR_WMMA: {
    static const char *const ops[5] = {"fill", "load_a", "load_b", "mma", "store"};
    fprintf(f, "%*swmma.%s %s[", ind, "", ops[s->u.wmma.op], s->u.wmma.frag->name);
    tir_print_expr(s->u.wmma.fi, f);
    fputc(']', f);
    if (s->u.wmma.op == TIR_WMMA_FILL) fprintf(f, " = %g", s->u.wmma.value);
    if (s->u.wmma.op == TIR_WMMA_MMA) {
      fprintf(f, " += %s[", s->u.wmma.fa->name);
      tir_print_expr(s->u.wmma.ia, f);
      fprintf(f, "] * %s[", s->u.wmma.fb->name);
      tir_print_expr(s->u.wmma.ib, f);
      fputc(']', f);
    }
    if (s->u.wmma.mem) {
      fprintf(f, " %s %s[", s->u.wmma.op == TIR_WMMA_STORE ? "->" : "<-", s->u.wmma.mem->name);
      tir_print_expr(s->u.wmma.index, f);
      fprintf(f, "] ldm %lld", (long long)s->u.wmma.ldm);
    }
    fputc('\n', f);
    break;
  }
  case TIR_FAIL:
    fprintf(f, "%*sfail check %d: ", ind, "", s->u.fail.check);
    tir_print_expr(s->u.fail.value, f);
    fputs(" not in [", f);
    tir_print_expr(s->u.fail.lo, f);
    fputs(", ", f);
    tir_print_expr(s->u.fail.hi, f);
    fputs(")\n", f);
    break;
  case TIR_ALLOCATE:
    fprintf(f, "%*sallocate %s: %s[%lld] %s\n", ind, "", s->u.alloc.buf->name, gir_dtype_name(s->u.alloc.buf->dtype),
            (long long)s->u.alloc.buf->size, s->u.alloc.buf->scope == TIR_LOCAL      ? "local"
            : s->u.alloc.buf->scope == TIR_SHARED   ? "shared"
            : s->u.alloc.buf->scope == TIR_FRAGMENT ? "fragment"
                                                    : "global");
    tir_print_stmt(s->u.alloc.body, f, ind);
    break;
  case TIR_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) tir_print_stmt(s->u.seq.s[i], f, ind);
    break;
  default: fprintf(f, "%*s?\n", ind, "");
  }
}

void tir_print_func(const tir_func *fn, FILE *f) {
  fprintf(f, "kernel %s(", fn->name);
  for (int i = 0; i < fn->n_params; i++)
    fprintf(f, "%s%s: %s[%lld]", i ? ", " : "", fn->params[i]->name, gir_dtype_name(fn->params[i]->dtype),
            (long long)fn->params[i]->size);
  fputs("):\n", f);
  tir_print_stmt(fn->body, f, 2);
}
