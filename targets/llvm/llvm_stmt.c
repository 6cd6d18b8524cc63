/* llvm_stmt.c — loop IR statements → LLVM IR: loops, lets, ifs, stores, local
 * allocations, outlined parallel loops, and the kernel's ABI wrapper.
 *
 * Code lives in "region" functions: internal functions whose parameters are the
 * kiln_ctx, a pointer to the kernel's status word, and every buffer the region
 * touches, each marked noalias + align + dereferenceable. A kernel
 *     int32_t k(void *const *buffers, const kiln_ctx *ctx)
 * loads its buffer pointers from the array and calls its region k.compute; the
 * inliner folds the region back in and turns noalias into scoped alias metadata,
 * which is how LLVM learns that the buffers do not overlap.
 *
 * A PARALLEL loop is outlined: its body's free variables and buffers (found by a
 * walk that tracks what the body binds itself) go into a closure struct on the
 * caller's stack, next to ctx, the status pointer and the loop's min. The task
 *     void k.taskN(void *closure, int64_t begin, int64_t end)
 * unpacks them and calls its region k.taskN.body, which runs var = min + i for
 * i in [begin, end). The caller runs ctx->parallel_for(ctx, task, &closure,
 * extent) when extent > 0; a non-zero return is stored (atomically: tasks may
 * run on several threads) into the status the kernel returns. Nested parallel
 * loops outline the same way from inside a task.
 *
 * GPU code (g->gpu set, by targets/cuda): bound loops, barriers, shared buffers
 * and failed checks go to the GPU target's hooks (tgt_llvm_gpu), which also make
 * the kernels' entry points; PARALLEL loops run serially and prefetch hints are
 * dropped.
 *
 * SERIAL, VECTORIZED and UNROLLED loops are plain counted loops; UNROLLED ones
 * carry llvm.loop.unroll.full, VECTORIZED ones llvm.loop.vectorize.enable. LOCAL
 * buffers are allocas in the entry block of the function being emitted.
 *
 * Before emitting, each kernel is checked: dtypes first class, every variable
 * and buffer used inside its scope, parameters numbered in order. Those are
 * reported as errors (a bad schedule must not crash the compiler); the rest of the
 * IR's well-formedness is asserted by the tir builder. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <llvm-c/DebugInfo.h>
#include "llvm_internal.h"

/* --- checks --- */

typedef struct checker {
  const tir_func *f;
  gir_err *err;
  int32_t *var_depth; /* > 0 while in scope */
  int32_t *buf_live;
  int gpu;      /* GPU code (targets/cuda): bound loops, barriers and shared memory allowed */
  int failed;
} checker;

__attribute__((format(printf, 2, 3))) static void cfail(checker *c, const char *fmt, ...) {
  if (c->failed) return;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  gir_errf(c->err, "kernel %s: %s", c->f->name, what);
  c->failed = 1;
}

static int first_class(gir_dtype t) { return t >= 0 && t < GIR_DTYPE_COUNT && gir_dtype_first_class(t); }

static const char *dtype_name(gir_dtype t) { return t >= 0 && t < GIR_DTYPE_COUNT ? gir_dtype_name(t) : "?"; }

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
  if (!first_class(b->dtype)) {
    cfail(c, "buffer %s has dtype %s, which the llvm target cannot compute on", b->name, dtype_name(b->dtype));
    return 0;
  }
  return 1;
}

static void check_use(checker *c, const tir_buffer *b) {
  if (buf_ok(c, b) && !c->buf_live[b->id])
    cfail(c, "buffer %s is used outside its allocation and is not a parameter", b->name);
}

static void check_expr(checker *c, const tir_expr *e) {
  if (c->failed) return;
  if (!first_class(e->dtype)) {
    cfail(c, "an expression has dtype %s, which the llvm target cannot compute on", dtype_name(e->dtype));
    return;
  }
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
  case TIR_RAMP: check_expr(c, e->u.ramp.base); check_expr(c, e->u.ramp.stride); break;
  case TIR_BROADCAST: check_expr(c, e->u.bcast.value); break;
  case TIR_DOT4: {
    const tir_expr *acc = e->u.dot4.acc, *a = e->u.dot4.a, *b = e->u.dot4.b;
    check_expr(c, acc);
    check_expr(c, a);
    check_expr(c, b);
    if (!c->failed && !tir_dot4_operands_ok(acc, a, b, e->lanes))
      cfail(c, "a dot4 needs an int32 accumulator of L lanes and 8-bit operands of 4L (or, for a, 4) lanes");
    break;
  }
  case TIR_SHUFFLE: {
    const tir_expr *v = e->u.shfl.value;
    check_expr(c, v);
    if (!c->gpu) cfail(c, "a warp shuffle is a GPU expression");
    else if (v->lanes != 1 || e->lanes != 1 || v->dtype != e->dtype || e->u.shfl.offset < 1 || e->u.shfl.offset > 31 ||
             (v->dtype != GIR_F32 && v->dtype != GIR_F64 && v->dtype != GIR_I32 && v->dtype != GIR_I64))
      cfail(c, "a warp shuffle takes a scalar f32, f64, i32 or i64 and an offset in [1, 31]");
    break;
  }
  default: break;
  }
}

static void check_stmt(checker *c, const tir_stmt *s) {
  if (!s || c->failed) return;
  switch (s->kind) {
  case TIR_FOR: {
    const tir_var *v = s->u.loop.var;
    const tir_expr *lo = s->u.loop.min, *n = s->u.loop.extent;
    check_expr(c, lo);
    check_expr(c, n);
    if (c->failed || !var_ok(c, v)) return;
    if (!gir_dtype_is_int(v->dtype) || !gir_dtype_is_int(lo->dtype) || !gir_dtype_is_int(n->dtype) ||
        lo->lanes != 1 || n->lanes != 1)
      return cfail(c, "loop %s_%d needs a scalar integer variable, min and extent", v->name, v->id);
    if (s->u.loop.kind < 0 || s->u.loop.kind >= TIR_FOR_KIND_COUNT)
      return cfail(c, "loop %s_%d has an unknown kind %d", v->name, v->id, (int)s->u.loop.kind);
    if (tir_for_kind_is_gpu(s->u.loop.kind) && !c->gpu)
      return cfail(c, "loop %s_%d is bound to the GPU grid: a GPU target's loop", v->name, v->id);
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
    check_expr(c, s->u.ifs.cond);
    if (!c->failed && (s->u.ifs.cond->lanes != 1 || s->u.ifs.cond->dtype != GIR_BOOL))
      return cfail(c, "an if statement's condition must be a scalar bool");
    check_stmt(c, s->u.ifs.then_s);
    check_stmt(c, s->u.ifs.else_s);
    break;
  case TIR_STORE:
    check_use(c, s->u.store.buf);
    check_expr(c, s->u.store.index);
    check_expr(c, s->u.store.value);
    break;
  case TIR_PREFETCH:
    check_use(c, s->u.prefetch.buf);
    check_expr(c, s->u.prefetch.index);
    if (!c->failed && s->u.prefetch.index->lanes != 1) return cfail(c, "a prefetch's index must be a scalar");
    break;
  case TIR_FAIL: {
    const tir_expr *e[3] = {s->u.fail.value, s->u.fail.lo, s->u.fail.hi};
    for (int i = 0; i < 3; i++) {
      check_expr(c, e[i]);
      if (!c->failed && (e[i]->lanes != 1 || e[i]->dtype != GIR_I64))
        return cfail(c, "a failed check's value and bounds must be scalar int64");
    }
    break;
  }
  case TIR_ALLOCATE: {
    const tir_buffer *b = s->u.alloc.buf;
    if (!buf_ok(c, b)) return;
    if (b->scope == TIR_SHARED && !c->gpu) return cfail(c, "buffer %s: shared memory is a GPU scope", b->name);
    if (b->scope == TIR_FRAGMENT && (!c->gpu || b->frag == TIR_FRAG_NONE || b->dtype != GIR_F32 ||
                                     b->size % tir_frag_elems(b->frag)))
      return cfail(c, "buffer %s: a fragment buffer is GPU code's, f32, whole fragments of a role", b->name);
    if (b->scope == TIR_GLOBAL) { /* a parameter, already live */
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
  case TIR_BARRIER:
    if (!c->gpu) cfail(c, "a barrier is a GPU statement");
    break;
  case TIR_WMMA: {
    if (!c->gpu) return cfail(c, "a warp matrix operation (wmma) is a GPU statement");
    const tir_buffer *fb[3] = {s->u.wmma.frag, s->u.wmma.fa, s->u.wmma.fb};
    const tir_expr *e[4] = {s->u.wmma.fi, s->u.wmma.ia, s->u.wmma.ib, s->u.wmma.index};
    for (int i = 0; i < 3; i++)
      if (fb[i]) {
        check_use(c, fb[i]);
        if (!c->failed && (fb[i]->scope != TIR_FRAGMENT || fb[i]->frag == TIR_FRAG_NONE))
          return cfail(c, "wmma on buffer %s, which is not a fragment buffer", fb[i]->name);
      }
    tir_wmma_op op = s->u.wmma.op;
    tir_frag role = op == TIR_WMMA_LOAD_A ? TIR_FRAG_A : op == TIR_WMMA_LOAD_B ? TIR_FRAG_B : TIR_FRAG_ACC;
    if (fb[0]->frag != role || (op == TIR_WMMA_MMA && (!fb[1] || !fb[2] || fb[1]->frag != TIR_FRAG_A ||
                                                       fb[2]->frag != TIR_FRAG_B)))
      return cfail(c, "wmma on fragment buffer %s of the wrong role", fb[0]->name);
    if ((op == TIR_WMMA_MMA) != (s->u.wmma.ia != NULL) || (op == TIR_WMMA_MMA) != (s->u.wmma.ib != NULL) ||
        (op == TIR_WMMA_LOAD_A || op == TIR_WMMA_LOAD_B || op == TIR_WMMA_STORE) != (s->u.wmma.mem != NULL))
      return cfail(c, "a wmma with the wrong operands for its operation");
    for (int i = 0; i < 4; i++)
      if (e[i]) {
        check_expr(c, e[i]);
        if (!c->failed && (e[i]->lanes != 1 || e[i]->dtype != GIR_I64))
          return cfail(c, "a wmma's fragment numbers and index must be scalar int64");
      }
    if (s->u.wmma.mem) {
      check_use(c, s->u.wmma.mem);
      if (!c->failed && (s->u.wmma.mem->dtype != GIR_F32 || s->u.wmma.mem->scope == TIR_LOCAL ||
                         s->u.wmma.mem->scope == TIR_FRAGMENT || s->u.wmma.ldm <= 0 || s->u.wmma.ldm % 4 ||
                         s->u.wmma.ldm > INT32_MAX))
        return cfail(c, "a wmma load or store takes global or shared f32 memory and a positive ldm, a multiple of 4");
    }
    break;
  }
  default: cfail(c, "unknown statement kind %d", (int)s->kind); break;
  }
}

static int check_func(tgt_lcg *g, const tir_func *f) {
  if (!f->name || !f->name[0]) return gir_errf(g->err, "a kernel has no name");
  if (!f->body) return gir_errf(g->err, "kernel %s has no body", f->name);
  checker c = {.f = f, .err = g->err, .gpu = g->gpu != NULL};
  c.var_depth = gir_arena_calloc(g->scratch, (size_t)f->n_vars + 1, sizeof *c.var_depth);
  c.buf_live = gir_arena_calloc(g->scratch, (size_t)f->n_buffers + 1, sizeof *c.buf_live);
  if (!c.var_depth || !c.buf_live) return gir_errf(g->err, "out of memory");
  for (int i = 0; i < f->n_params && !c.failed; i++) {
    const tir_buffer *b = f->params[i];
    if (!buf_ok(&c, b)) break;
    if (b->param != i || b->scope != TIR_GLOBAL)
      cfail(&c, "parameter %d (%s) is not a global buffer numbered %d", i, b->name, i);
    else
      c.buf_live[b->id] = 1;
  }
  check_stmt(&c, f->body);
  return c.failed ? -1 : 0;
}

/* --- free variables and buffers of a statement --- */

typedef struct freeset {
  int32_t *var_bound, *buf_bound;  /* binding depth inside the statement */
  const tir_var **var_used;        /* by id: used while unbound */
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
  case TIR_SHUFFLE: free_expr(fs, e->u.shfl.value); break;
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

/* --- functions --- */

void tgt_llvm_add_attr(tgt_lcg *g, LLVMValueRef fn, unsigned idx, const char *name, uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  assert(kind);
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(g->ctx, kind, val));
}

static void fn_attrs(tgt_lcg *g, LLVMValueRef fn) {
  tgt_llvm_add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  if (g->cpu && g->cpu[0])
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(g->ctx, "target-cpu", 10, g->cpu, (unsigned)strlen(g->cpu)));
  if (g->features && g->features[0])
    LLVMAddAttributeAtIndex(
        fn, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(g->ctx, "target-features", 15, g->features, (unsigned)strlen(g->features)));
}

/* The alignment a buffer's base pointer is known to have (at least its element's). */
unsigned tgt_llvm_buf_align(const tir_buffer *b) {
  unsigned a = b->align > 0 && (b->align & (b->align - 1)) == 0 ? (unsigned)b->align : 1;
  unsigned esz = (unsigned)gir_dtype_size(b->dtype);
  return a > esz ? a : esz;
}

/* Loads a buffer's base pointer, telling LLVM its alignment: !align survives
 * inlining (the region's align attributes do not) and feeds alignment inference. */
static LLVMValueRef load_base(tgt_lcg *g, LLVMValueRef slot, const tir_buffer *b) {
  LLVMValueRef p = LLVMBuildLoad2(g->b, g->t_ptr, slot, b->name);
  LLVMMetadataRef a = LLVMValueAsMetadata(LLVMConstInt(g->t_i64, tgt_llvm_buf_align(b), 0));
  LLVMSetMetadata(p, LLVMGetMDKindIDInContext(g->ctx, "align", 5), LLVMMetadataAsValue(g->ctx, LLVMMDNodeInContext2(g->ctx, &a, 1)));
  return p;
}

typedef struct saved {
  LLVMValueRef cur, ctx_ptr, status_ptr;
  LLVMBasicBlockRef entry, block;
  LLVMValueRef *vars, *bufs;
} saved;

static saved save(tgt_lcg *g) {
  return (saved){g->cur, g->ctx_ptr, g->status_ptr, g->entry, LLVMGetInsertBlock(g->b), g->vars, g->bufs};
}

static void restore(tgt_lcg *g, saved s) {
  g->cur = s.cur;
  g->ctx_ptr = s.ctx_ptr;
  g->status_ptr = s.status_ptr;
  g->entry = s.entry;
  g->vars = s.vars;
  g->bufs = s.bufs;
  if (s.block) LLVMPositionBuilderAtEnd(g->b, s.block);
}

/* Starts a region: void name(ptr ctx, ptr status, i64 x n_i64, ptr noalias buf..., var...).
 * Leaves the builder in its body with a fresh environment binding the
 * parameters; the caller emits the body and the return. */
static LLVMValueRef region(tgt_lcg *g, const char *name, int n_i64, int nb, const tir_buffer *const *bufs, int nv,
                           const tir_var *const *vars, const LLVMTypeRef *var_types) {
  int np = 2 + n_i64 + nb + nv;
  LLVMTypeRef *pt = gir_arena_calloc(g->scratch, (size_t)np, sizeof *pt);
  assert(pt);
  int k = 0;
  pt[k++] = g->t_ptr;
  pt[k++] = g->t_ptr;
  for (int i = 0; i < n_i64; i++) pt[k++] = g->t_i64;
  for (int i = 0; i < nb; i++) pt[k++] = g->t_ptr;
  for (int i = 0; i < nv; i++) pt[k++] = var_types[i];
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->t_void, pt, (unsigned)np, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  fn_attrs(g, fn);

  g->cur = fn;
  g->entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, fn, "body");
  LLVMPositionBuilderAtEnd(g->b, g->entry);
  LLVMBuildBr(g->b, body);
  LLVMPositionBuilderAtEnd(g->b, body);

  g->vars = gir_arena_calloc(g->scratch, (size_t)g->fn->n_vars + 1, sizeof *g->vars);
  g->bufs = gir_arena_calloc(g->scratch, (size_t)g->fn->n_buffers + 1, sizeof *g->bufs);
  assert(g->vars && g->bufs);
  g->ctx_ptr = LLVMGetParam(fn, 0);
  g->status_ptr = LLVMGetParam(fn, 1);
  for (int i = 0; i < nb; i++) {
    unsigned p = (unsigned)(2 + n_i64 + i);
    const tir_buffer *b = bufs[i];
    g->bufs[b->id] = LLVMGetParam(fn, p);
    tgt_llvm_add_attr(g, fn, p + 1, "noalias", 0);
    tgt_llvm_add_attr(g, fn, p + 1, "align", tgt_llvm_buf_align(b));
    if (b->size > 0) tgt_llvm_add_attr(g, fn, p + 1, "dereferenceable", (uint64_t)b->size * gir_dtype_size(b->dtype));
  }
  for (int i = 0; i < nv; i++) g->vars[vars[i]->id] = LLVMGetParam(fn, (unsigned)(2 + n_i64 + nb + i));
  return fn;
}

static void stmt(tgt_lcg *g, const tir_stmt *s);

static void loop_md(tgt_lcg *g, LLVMValueRef br, tir_for_kind kind) {
  LLVMMetadataRef prop;
  if (kind == TIR_UNROLLED) {
    LLVMMetadataRef key = LLVMMDStringInContext2(g->ctx, "llvm.loop.unroll.full", 21);
    prop = LLVMMDNodeInContext2(g->ctx, &key, 1);
  } else if (kind == TIR_VECTORIZED) {
    LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(g->ctx, "llvm.loop.vectorize.enable", 26),
                              LLVMValueAsMetadata(LLVMConstInt(g->t_i1, 1, 0))};
    prop = LLVMMDNodeInContext2(g->ctx, ops, 2);
  } else {
    return;
  }
  /* a loop ID is a distinct node whose first operand is itself */
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(g->ctx, NULL, 0);
  LLVMMetadataRef ops[2] = {tmp, prop};
  LLVMMetadataRef id = LLVMMDNodeInContext2(g->ctx, ops, 2);
  LLVMMetadataReplaceAllUsesWith(tmp, id); /* also deletes tmp */
  LLVMSetMetadata(br, g->md_loop, LLVMMetadataAsValue(g->ctx, id));
}

/* for (i = from; i < to; i++) { var = offset + i (or i), in var's type; body } */
static void counted_loop(tgt_lcg *g, LLVMValueRef from, LLVMValueRef to, LLVMValueRef offset, const tir_var *var,
                         tir_for_kind kind, const tir_stmt *body) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = LLVMTypeOf(from);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "for.head");
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "for.body");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "for.end");
  LLVMBuildBr(B, head);
  LLVMPositionBuilderAtEnd(B, head);
  LLVMValueRef i = LLVMBuildPhi(B, it, var->name);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, i, to, ""), bb, exit);

  LLVMPositionBuilderAtEnd(B, bb);
  LLVMValueRef old = g->vars[var->id];
  LLVMValueRef v = offset ? LLVMBuildAdd(B, offset, i, var->name) : i;
  g->vars[var->id] = tgt_llvm_int_to(g, v, tgt_llvm_reg_type(g, var->dtype, 1));
  stmt(g, body);
  g->vars[var->id] = old;
  LLVMValueRef next = LLVMBuildNSWAdd(B, i, LLVMConstInt(it, 1, 0), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
  loop_md(g, LLVMBuildBr(B, head), kind);
  LLVMValueRef vals[2] = {from, next};
  LLVMBasicBlockRef blocks[2] = {pre, latch};
  LLVMAddIncoming(i, vals, blocks, 2);
  LLVMPositionBuilderAtEnd(B, exit);
}

static void serial_loop(tgt_lcg *g, const tir_stmt *s) {
  if (tgt_llvm_transpose_loop(g, s)) return; /* a relayout's tile (llvm_transpose.c) */
  const tir_var *v = s->u.loop.var;
  LLVMTypeRef it = tgt_llvm_reg_type(g, v->dtype, 1);
  LLVMValueRef lo = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.loop.min), it);
  LLVMValueRef n = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.loop.extent), it);
  counted_loop(g, lo, LLVMBuildAdd(g->b, lo, n, ""), NULL, v, s->u.loop.kind, s->u.loop.body);
}

/* Outlines a PARALLEL loop (see the header comment). Closure layout:
 * { ptr ctx, ptr status, i64 min, ptr buffer..., variable... }. */
static void parallel_loop(tgt_lcg *g, const tir_stmt *s) {
  LLVMBuilderRef B = g->b;
  const tir_func *f = g->fn;
  const tir_var *lv = s->u.loop.var;
  size_t nvars = (size_t)f->n_vars + 1, nbufs = (size_t)f->n_buffers + 1;

  LLVMValueRef lo = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.loop.min), g->t_i64);
  LLVMValueRef n = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.loop.extent), g->t_i64);

  /* what the body uses from outside: variables (but the loop's own) and buffers */
  freeset fs = {gir_arena_calloc(g->scratch, nvars, sizeof(int32_t)), gir_arena_calloc(g->scratch, nbufs, sizeof(int32_t)),
                gir_arena_calloc(g->scratch, nvars, sizeof(tir_var *)),
                gir_arena_calloc(g->scratch, nbufs, sizeof(tir_buffer *))};
  const tir_buffer **bufs = gir_arena_calloc(g->scratch, nbufs, sizeof *bufs);
  const tir_var **vars = gir_arena_calloc(g->scratch, nvars, sizeof *vars);
  LLVMTypeRef *fields = gir_arena_calloc(g->scratch, 3 + nbufs + nvars, sizeof *fields);
  LLVMValueRef *vals = gir_arena_calloc(g->scratch, 3 + nbufs + nvars, sizeof *vals);
  assert(fs.var_bound && fs.buf_bound && fs.var_used && fs.buf_used && bufs && vars && fields && vals);
  fs.var_bound[lv->id]++;
  free_stmt(&fs, s->u.loop.body);

  int nb = 0, nv = 0, nf = 0;
  fields[nf] = g->t_ptr, vals[nf++] = g->ctx_ptr;
  fields[nf] = g->t_ptr, vals[nf++] = g->status_ptr;
  fields[nf] = g->t_i64, vals[nf++] = lo;
  for (int id = 0; id < f->n_buffers; id++)
    if (fs.buf_used[id]) {
      assert(g->bufs[id]);
      bufs[nb++] = fs.buf_used[id];
      fields[nf] = g->t_ptr, vals[nf++] = g->bufs[id];
    }
  for (int id = 0; id < f->n_vars; id++)
    if (fs.var_used[id]) {
      assert(g->vars[id]);
      vars[nv++] = fs.var_used[id];
      fields[nf] = LLVMTypeOf(g->vars[id]), vals[nf++] = g->vars[id];
    }
  LLVMTypeRef ct = LLVMStructTypeInContext(g->ctx, fields, (unsigned)nf, 0);

  /* the task's region: for i in [begin, end): var = min + i; body */
  saved sv = save(g);
  const char *name = gir_arena_printf(g->scratch, "%s.task%d", f->name, g->n_tasks++);
  const char *body_name = gir_arena_printf(g->scratch, "%s.body", name);
  assert(name && body_name);
  LLVMValueRef body = region(g, body_name, 3, nb, bufs, nv, vars, fields + 3 + nb);
  counted_loop(g, LLVMGetParam(body, 2), LLVMGetParam(body, 3), LLVMGetParam(body, 4), lv, TIR_SERIAL,
               s->u.loop.body);
  LLVMBuildRetVoid(B);

  /* the task: unpack the closure, call the region */
  LLVMTypeRef tp[3] = {g->t_ptr, g->t_i64, g->t_i64};
  LLVMValueRef task = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->t_void, tp, 3, 0));
  LLVMSetLinkage(task, LLVMInternalLinkage);
  fn_attrs(g, task);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(g->ctx, task, "entry"));
  LLVMValueRef cl = LLVMGetParam(task, 0);
  LLVMValueRef *args = gir_arena_calloc(g->scratch, (size_t)nf + 2, sizeof *args);
  assert(args);
  int na = 0;
  for (int k = 0; k < nf; k++) {
    LLVMValueRef slot = LLVMBuildStructGEP2(B, ct, cl, (unsigned)k, "");
    LLVMValueRef v = k >= 3 && k < 3 + nb ? load_base(g, slot, bufs[k - 3]) : LLVMBuildLoad2(B, fields[k], slot, "");
    if (k == 2) { /* begin, end come before min */
      args[na++] = LLVMGetParam(task, 1);
      args[na++] = LLVMGetParam(task, 2);
    }
    args[na++] = v;
  }
  LLVMBuildCall2(B, LLVMGlobalGetValueType(body), body, args, (unsigned)na, "");
  LLVMBuildRetVoid(B);
  restore(g, sv);

  /* the call: fill the closure, run ctx->parallel_for when there is work */
  LLVMValueRef closure = tgt_llvm_alloca(g, ct, 16, "closure");
  for (int k = 0; k < nf; k++) LLVMBuildStore(B, vals[k], LLVMBuildStructGEP2(B, ct, closure, (unsigned)k, ""));
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "par.run");
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "par.fail");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "par.done");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGT, n, LLVMConstInt(g->t_i64, 0, 0), ""), run, done);
  LLVMPositionBuilderAtEnd(B, run);
  LLVMTypeRef pp[4] = {g->t_ptr, g->t_ptr, g->t_ptr, g->t_i64};
  LLVMTypeRef pft = LLVMFunctionType(g->t_i32, pp, 4, 0);
  LLVMValueRef pf = LLVMBuildLoad2(B, g->t_ptr, g->ctx_ptr, "parallel_for"); /* kiln_ctx's first field */
  LLVMValueRef cargs[4] = {g->ctx_ptr, task, closure, n};
  LLVMValueRef rc = LLVMBuildCall2(B, pft, pf, cargs, 4, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, rc, LLVMConstInt(g->t_i32, 0, 0), ""), bad, done);
  LLVMPositionBuilderAtEnd(B, bad);
  LLVMValueRef st = LLVMBuildStore(B, rc, g->status_ptr);
  LLVMSetAlignment(st, 4);
  LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
}

/* A failed run-time check: ctx->fail(ctx, check, value, lo, hi) when ctx and
 * its fail are set (kiln_ctx's fifth field), and the kernel's status becomes 1. */
static void fail_stmt(tgt_lcg *g, const tir_stmt *s) {
  LLVMBuilderRef B = g->b;
  LLVMValueRef v = tgt_llvm_expr(g, s->u.fail.value), lo = tgt_llvm_expr(g, s->u.fail.lo),
               hi = tgt_llvm_expr(g, s->u.fail.hi);
  LLVMTypeRef fields[5] = {g->t_ptr, g->t_ptr, g->t_ptr, g->t_i64, g->t_ptr};
  LLVMTypeRef ctx_t = LLVMStructTypeInContext(g->ctx, fields, 5, 0);
  LLVMBasicBlockRef has_ctx = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "fail.ctx");
  LLVMBasicBlockRef call = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "fail.call");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "fail.done");
  LLVMBuildCondBr(B, LLVMBuildIsNotNull(B, g->ctx_ptr, ""), has_ctx, done);
  LLVMPositionBuilderAtEnd(B, has_ctx);
  LLVMValueRef fn = LLVMBuildLoad2(B, g->t_ptr, LLVMBuildStructGEP2(B, ctx_t, g->ctx_ptr, 4, ""), "fail");
  LLVMBuildCondBr(B, LLVMBuildIsNotNull(B, fn, ""), call, done);
  LLVMPositionBuilderAtEnd(B, call);
  LLVMTypeRef pt[5] = {g->t_ptr, g->t_i32, g->t_i64, g->t_i64, g->t_i64};
  LLVMValueRef args[5] = {g->ctx_ptr, LLVMConstInt(g->t_i32, (unsigned long long)s->u.fail.check, 0), v, lo, hi};
  LLVMBuildCall2(B, LLVMFunctionType(LLVMVoidTypeInContext(g->ctx), pt, 5, 0), fn, args, 5, "");
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
  LLVMValueRef st = LLVMBuildStore(B, LLVMConstInt(g->t_i32, 1, 0), g->status_ptr);
  LLVMSetAlignment(st, 4);
  LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic); /* tasks may fail on several threads */
}

static void stmt_in(tgt_lcg *g, const tir_stmt *s);

/* A statement with the windows its loads may use (llvm_window.c): a sequence's own
 * plan; a store its sequence's; any other statement none (its body plans its own). */
static void stmt(tgt_lcg *g, const tir_stmt *s) {
  const tgt_llvm_wins *outer = g->wins;
  if (s->kind == TIR_SEQ) g->wins = g->masked_loads ? tgt_llvm_plan_windows(g, s->u.seq.s, s->u.seq.n) : NULL;
  else if (s->kind != TIR_STORE) g->wins = NULL;
  stmt_in(g, s);
  g->wins = outer;
}

static void stmt_in(tgt_lcg *g, const tir_stmt *s) {
  if (!s) return;
  LLVMBuilderRef B = g->b;
  switch (s->kind) {
  case TIR_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) stmt(g, s->u.seq.s[i]);
    break;
  case TIR_STORE: tgt_llvm_store(g, s); break;
  case TIR_PREFETCH:
    if (!g->gpu) tgt_llvm_prefetch(g, s);
    break;
  case TIR_FAIL:
    if (g->gpu) g->gpu->fail(g, s);
    else fail_stmt(g, s);
    break;
  case TIR_BARRIER: g->gpu->barrier(g); break; /* the checker let it through: GPU code */
  case TIR_WMMA: g->gpu->wmma(g, s); break;
  case TIR_LET: {
    const tir_var *v = s->u.let.var;
    LLVMValueRef val = tgt_llvm_expr(g, s->u.let.value), old = g->vars[v->id];
    g->vars[v->id] = val;
    stmt(g, s->u.let.body);
    g->vars[v->id] = old;
    break;
  }
  case TIR_IF: {
    LLVMValueRef c = tgt_llvm_expr(g, s->u.ifs.cond);
    LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "if.then");
    LLVMBasicBlockRef bf = s->u.ifs.else_s ? LLVMAppendBasicBlockInContext(g->ctx, g->cur, "if.else") : NULL;
    LLVMBasicBlockRef end = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "if.end");
    LLVMBuildCondBr(B, c, bt, bf ? bf : end);
    LLVMPositionBuilderAtEnd(B, bt);
    stmt(g, s->u.ifs.then_s);
    LLVMBuildBr(B, end);
    if (bf) {
      LLVMPositionBuilderAtEnd(B, bf);
      stmt(g, s->u.ifs.else_s);
      LLVMBuildBr(B, end);
    }
    LLVMPositionBuilderAtEnd(B, end);
    break;
  }
  case TIR_ALLOCATE: {
    const tir_buffer *b = s->u.alloc.buf;
    if (b->scope == TIR_GLOBAL) { /* a parameter: nothing to allocate */
      stmt(g, s->u.alloc.body);
      break;
    }
    LLVMTypeRef at = LLVMArrayType2(tgt_llvm_mem_type(g, b->dtype), (uint64_t)b->size);
    LLVMValueRef old = g->bufs[b->id];
    if (b->scope == TIR_SHARED) { /* GPU code: the target's shared memory */
      g->bufs[b->id] = g->gpu->shared(g, b, at);
    } else if (b->scope == TIR_FRAGMENT) { /* GPU code: a lane's share of a warp's tiles */
      g->bufs[b->id] = g->gpu->fragment(g, b);
    } else {
      g->bufs[b->id] = tgt_llvm_alloca(g, at, tgt_llvm_buf_align(b), b->name);
    }
    stmt(g, s->u.alloc.body);
    g->bufs[b->id] = old;
    break;
  }
  case TIR_FOR:
    if (tir_for_kind_is_gpu(s->u.loop.kind)) g->gpu->loop(g, s); /* the checker let it through: GPU code */
    else if (s->u.loop.kind == TIR_PARALLEL && !g->gpu) parallel_loop(g, s);
    else serial_loop(g, s);
    break;
  default: assert(!"unknown statement kind"); break;
  }
}

static int is_8bit(gir_dtype t) { return t == GIR_U8 || t == GIR_I8; }

/* 1 if the expression reads or converts 8-bit integers. */
static int expr_q8(const tir_expr *e) {
  if (!e) return 0;
  switch (e->kind) {
  case TIR_LOAD: return is_8bit(e->u.load.buf->dtype) || expr_q8(e->u.load.index);
  case TIR_UNARY: return expr_q8(e->u.un.a);
  case TIR_BINARY: return expr_q8(e->u.bin.a) || expr_q8(e->u.bin.b);
  case TIR_SELECT: case TIR_IF_THEN_ELSE: return expr_q8(e->u.sel.c) || expr_q8(e->u.sel.a) || expr_q8(e->u.sel.b);
  case TIR_CAST: case TIR_BITCAST: return is_8bit(e->dtype) || expr_q8(e->u.cast.a);
  case TIR_RAMP: return expr_q8(e->u.ramp.base) || expr_q8(e->u.ramp.stride);
  case TIR_BROADCAST: return expr_q8(e->u.bcast.value);
  case TIR_DOT4: return 1;
  case TIR_SHUFFLE: return expr_q8(e->u.shfl.value);
  default: return 0;
  }
}

/* 1 if the statement reads, writes or converts 8-bit integers. */
static int stmt_q8(const tir_stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
  case TIR_FOR: return expr_q8(s->u.loop.min) || expr_q8(s->u.loop.extent) || stmt_q8(s->u.loop.body);
  case TIR_LET: return expr_q8(s->u.let.value) || stmt_q8(s->u.let.body);
  case TIR_IF: return expr_q8(s->u.ifs.cond) || stmt_q8(s->u.ifs.then_s) || stmt_q8(s->u.ifs.else_s);
  case TIR_STORE: return is_8bit(s->u.store.buf->dtype) || expr_q8(s->u.store.index) || expr_q8(s->u.store.value);
  case TIR_ALLOCATE: return stmt_q8(s->u.alloc.body);
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++)
      if (stmt_q8(s->u.seq.s[i])) return 1;
    return 0;
  default: return 0;
  }
}

int tgt_llvm_emit_func(tgt_lcg *g, const tir_func *f) {
  if (check_func(g, f) < 0) return -1;
  if (LLVMGetNamedFunction(g->mod, f->name)) return gir_errf(g->err, "two kernels are named %s", f->name);
  LLVMBuilderRef B = g->b;
  g->fn = f;
  g->n_tasks = 0;
  /* A kernel of a quantized model's float region (DequantizeLinear → float ops →
   * QuantizeLinear, fused) rounds every product as ONNX Runtime's separate kernels do:
   * an FMA there (a dequantized product contracted into the Sum after it) changes
   * the last bit, which the QuantizeLinear after it turns into a whole step now and
   * then (ResNet-50's residual Sums: one step in 1 of 400 000 elements of one layer,
   * compounding to 2 steps at the output). The integer kernels have no float
   * multiply-add to lose; elsewhere contraction stays (tir/tir.h). */
  g->no_contract = stmt_q8(f->body);

  /* the body region takes every parameter, in order */
  const char *body_name = gir_arena_printf(g->scratch, "%s.compute", f->name);
  assert(body_name);
  LLVMValueRef body = region(g, body_name, 0, f->n_params, (const tir_buffer *const *)f->params, 0, NULL, NULL);
  stmt(g, f->body);
  LLVMBuildRetVoid(B);

  /* int32_t name(void *const *buffers, const kiln_ctx *ctx) */
  LLVMTypeRef kp[2] = {g->t_ptr, g->t_ptr};
  LLVMValueRef k = LLVMAddFunction(g->mod, f->name, LLVMFunctionType(g->t_i32, kp, 2, 0));
  fn_attrs(g, k);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(g->ctx, k, "entry"));
  LLVMValueRef status = LLVMBuildAlloca(B, g->t_i32, "status");
  LLVMSetAlignment(LLVMBuildStore(B, LLVMConstInt(g->t_i32, 0, 0), status), 4);
  LLVMValueRef *args = gir_arena_calloc(g->scratch, (size_t)f->n_params + 2, sizeof *args);
  assert(args);
  args[0] = LLVMGetParam(k, 1);
  args[1] = status;
  for (int i = 0; i < f->n_params; i++) {
    LLVMValueRef ix = LLVMConstInt(g->t_i64, (unsigned long long)i, 0);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->t_ptr, LLVMGetParam(k, 0), &ix, 1, "");
    args[2 + i] = load_base(g, slot, f->params[i]);
  }
  LLVMBuildCall2(B, LLVMGlobalGetValueType(body), body, args, (unsigned)f->n_params + 2, "");
  LLVMValueRef ret = LLVMBuildLoad2(B, g->t_i32, status, "");
  LLVMSetAlignment(ret, 4);
  LLVMBuildRet(B, ret);
  return 0;
}

/* The checks tgt_llvm_emit_func makes, for a GPU kernel's launches. */
int tgt_llvm_check_func(tgt_lcg *g, const tir_func *f) { return check_func(g, f); }

void tgt_llvm_stmt(tgt_lcg *g, const tir_stmt *s) { stmt(g, s); }
