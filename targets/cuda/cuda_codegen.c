/* cuda_codegen.c — loop IR with GPU bindings → LLVM IR for nvptx64: the CUDA
 * target's part of the LLVM translator (targets/llvm does the expressions, loads,
 * stores, serial loops; this file what only GPU code has, through the hooks of
 * tgt_llvm_gpu). Each launch of a kernel (tir/gpu_launch.c) becomes one entry
 * point void sym(ptr buffer..., ptr fail) marked as a kernel in nvvm.annotations
 * with its block size (maxntid). A loop bound to the grid reads its special
 * register (ctaid / tid) instead of looping, guarded when its extent is below the
 * launch's dimension; a SHARED buffer is an addrspace(3) global; TIR_BARRIER is
 * llvm.nvvm.barrier0, TIR_SHUFFLE llvm.nvvm.shfl.sync.bfly / .down (f32, i32; 64-bit
 * values as two 32-bit halves); TIR_WMMA the m16n16k8 TF32 wmma intrinsics (below); a failed run-time check claims the launch's failure record
 * (runtime/FORMAT.md) with an atomic compare-and-swap and writes its numbers. */
#include <assert.h>
#include <string.h>
#include "cuda_internal.h"
#include "gpu_launch.h"

static LLVMValueRef gpu_call0(tgt_lcg *g, const char *name) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  assert(id && "unknown intrinsic");
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, NULL, 0);
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(f), f, NULL, 0, "");
}

/* A bound loop: var = its special register (+ min); the body runs where the
 * register is below the loop's extent (always, when the extent is the launch's). */
static void gpu_loop(tgt_lcg *g, const tir_stmt *s) {
  static const char *const sreg[6] = {"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
                                      "llvm.nvvm.read.ptx.sreg.ctaid.z", "llvm.nvvm.read.ptx.sreg.tid.x",
                                      "llvm.nvvm.read.ptx.sreg.tid.y",   "llvm.nvvm.read.ptx.sreg.tid.z"};
  int d = (int)s->u.loop.kind - TIR_BLOCK_X;
  LLVMBuilderRef B = g->b;
  const tir_var *v = s->u.loop.var;
  LLVMValueRef r = LLVMBuildZExt(B, gpu_call0(g, sreg[d]), g->t_i64, "");
  int64_t ext = s->u.loop.extent->kind == TIR_INT ? s->u.loop.extent->u.i : -1;
  LLVMBasicBlockRef end = NULL;
  if (ext < 0 || ext < g->gpu_dims[d]) {
    LLVMValueRef n = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.loop.extent), g->t_i64);
    LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "bound.in");
    end = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "bound.end");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, r, n, ""), in, end);
    LLVMPositionBuilderAtEnd(B, in);
  }
  LLVMValueRef lo = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.loop.min), g->t_i64);
  LLVMValueRef old = g->vars[v->id];
  g->vars[v->id] = tgt_llvm_int_to(g, LLVMBuildNSWAdd(B, lo, r, v->name), tgt_llvm_reg_type(g, v->dtype, 1));
  tgt_llvm_stmt(g, s->u.loop.body);
  g->vars[v->id] = old;
  if (end) {
    LLVMBuildBr(B, end);
    LLVMPositionBuilderAtEnd(B, end);
  }
}

/* A failed run-time check in GPU code: the first thread to claim the failure
 * record { i32 set, i32 check, i64 value, lo, hi } (g->status_ptr) writes it. */
static void gpu_fail_stmt(tgt_lcg *g, const tir_stmt *s) {
  LLVMBuilderRef B = g->b;
  LLVMValueRef v = tgt_llvm_expr(g, s->u.fail.value), lo = tgt_llvm_expr(g, s->u.fail.lo),
               hi = tgt_llvm_expr(g, s->u.fail.hi);
  LLVMValueRef x = LLVMBuildAtomicCmpXchg(B, g->status_ptr, LLVMConstInt(g->t_i32, 0, 0), LLVMConstInt(g->t_i32, 1, 0),
                                          LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef won = LLVMBuildExtractValue(B, x, 1, "");
  LLVMBasicBlockRef wr = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "fail.write");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->cur, "fail.done");
  LLVMBuildCondBr(B, won, wr, done);
  LLVMPositionBuilderAtEnd(B, wr);
  LLVMValueRef fields[4] = {LLVMConstInt(g->t_i32, (unsigned long long)s->u.fail.check, 0), v, lo, hi};
  const unsigned offs[4] = {4, 8, 16, 24};
  for (int i = 0; i < 4; i++) {
    LLVMValueRef off = LLVMConstInt(g->t_i64, offs[i], 0);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(B, g->t_i8, g->status_ptr, &off, 1, "");
    LLVMSetAlignment(LLVMBuildStore(B, fields[i], p), i == 0 ? 4 : 8);
  }
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
}

/* A SHARED buffer: a global of the shared address space (one per block), one per
 * buffer of the kernel — copies of a loop made by the loop passes share it. */
static LLVMValueRef shared(tgt_lcg *g, const tir_buffer *b, LLVMTypeRef at) {
  const char *name = gir_arena_printf(g->scratch, "%s.%s.%d", LLVMGetValueName(g->cur), b->name, b->id);
  LLVMValueRef gv = name ? LLVMGetNamedGlobal(g->mod, name) : NULL;
  if (!gv) {
    gv = LLVMAddGlobalInAddressSpace(g->mod, at, name ? name : b->name, 3);
    LLVMSetLinkage(gv, LLVMInternalLinkage);
    LLVMSetInitializer(gv, LLVMGetUndef(at));
    LLVMSetAlignment(gv, tgt_llvm_buf_align(b) > 16 ? tgt_llvm_buf_align(b) : 16);
  }
  return LLVMConstAddrSpaceCast(gv, g->t_ptr);
}

static void barrier(tgt_lcg *g) { gpu_call0(g, "llvm.nvvm.barrier0"); }

/* shfl.sync of a 32-bit value (f32 or i32) over the whole warp (mask 0xffffffff;
 * c = 0x1f: the warp is one segment, and down clamps at lane 31). */
static LLVMValueRef shfl32(tgt_lcg *g, tir_shfl_mode mode, LLVMValueRef v, int fl, int32_t offset) {
  static const char *const names[2][2] = {{"llvm.nvvm.shfl.sync.bfly.i32", "llvm.nvvm.shfl.sync.bfly.f32"},
                                          {"llvm.nvvm.shfl.sync.down.i32", "llvm.nvvm.shfl.sync.down.f32"}};
  const char *name = names[mode == TIR_SHFL_DOWN][fl];
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  assert(id && "unknown intrinsic");
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, NULL, 0);
  LLVMValueRef args[4] = {LLVMConstInt(g->t_i32, 0xffffffffu, 0), v, LLVMConstInt(g->t_i32, (unsigned long long)offset, 0),
                          LLVMConstInt(g->t_i32, 0x1f, 0)};
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(f), f, args, 4, "");
}

/* TIR_SHUFFLE: f32 and i32 in one shfl.sync; f64 and i64 as their two 32-bit halves. */
static LLVMValueRef shuffle(tgt_lcg *g, tir_shfl_mode mode, LLVMValueRef v, gir_dtype t, int32_t offset) {
  LLVMBuilderRef B = g->b;
  if (t == GIR_F32) return shfl32(g, mode, v, 1, offset);
  if (t == GIR_I32) return shfl32(g, mode, v, 0, offset);
  LLVMValueRef x = t == GIR_F64 ? LLVMBuildBitCast(B, v, g->t_i64, "") : v;
  LLVMValueRef lo = LLVMBuildTrunc(B, x, g->t_i32, "");
  LLVMValueRef hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, x, LLVMConstInt(g->t_i64, 32, 0), ""), g->t_i32, "");
  lo = LLVMBuildZExt(B, shfl32(g, mode, lo, 0, offset), g->t_i64, "");
  hi = LLVMBuildShl(B, LLVMBuildZExt(B, shfl32(g, mode, hi, 0, offset), g->t_i64, ""), LLVMConstInt(g->t_i64, 32, 0), "");
  LLVMValueRef r = LLVMBuildOr(B, hi, lo, "");
  return t == GIR_F64 ? LLVMBuildBitCast(B, r, g->t_double, "") : r;
}

/* Tensor cores (TIR_WMMA, m16n16k8, TF32 in, f32 accumulation): the wmma intrinsics of
 * LLVM's NVPTX back end. A FRAGMENT buffer is each lane's share of its tiles, an alloca
 * that SROA turns into registers once the fragment numbers are constants (the loops
 * over fragments are unrolled): 4 x i32 per A or B fragment (TF32 bits), 8 x f32 per
 * accumulator. Loads round each element to TF32 to nearest (cvt.rna.tf32.f32, as
 * CUDA's wmma::__float_to_tf32), which is what the emulator's rounding assumes. */
static int frag_words(tir_frag f) { return f == TIR_FRAG_ACC ? 8 : 4; }

static LLVMTypeRef frag_elem(tgt_lcg *g, tir_frag f) { return f == TIR_FRAG_ACC ? g->t_float : g->t_i32; }

static LLVMValueRef fragment(tgt_lcg *g, const tir_buffer *b) {
  int64_t n = b->size / tir_frag_elems(b->frag) * frag_words(b->frag);
  return tgt_llvm_alloca(g, LLVMArrayType2(frag_elem(g, b->frag), (uint64_t)n), 16, b->name);
}

/* Word w of fragment fi of buffer f in this lane. */
static LLVMValueRef frag_word(tgt_lcg *g, const tir_buffer *f, LLVMValueRef fi, int w) {
  LLVMValueRef ix = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, fi, LLVMConstInt(g->t_i64, (unsigned long long)frag_words(f->frag), 0), ""),
                                 LLVMConstInt(g->t_i64, (unsigned long long)w, 0), "");
  return LLVMBuildInBoundsGEP2(g->b, frag_elem(g, f->frag), g->bufs[f->id], &ix, 1, "");
}

static LLVMValueRef intrinsic(tgt_lcg *g, const char *name, LLVMTypeRef *over, size_t n_over) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  assert(id && "unknown intrinsic");
  return LLVMGetIntrinsicDeclaration(g->mod, id, over, n_over);
}

static void wmma(tgt_lcg *g, const tir_stmt *s) {
  LLVMBuilderRef B = g->b;
  const tir_buffer *f = s->u.wmma.frag;
  LLVMValueRef fi = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.wmma.fi), g->t_i64);
  LLVMValueRef ptr = NULL, ldm = NULL;
  LLVMTypeRef pt = g->t_ptr; /* the intrinsics' pointer: shared memory's own address space where it is shared */
  if (s->u.wmma.mem) {
    LLVMValueRef ix = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.wmma.index), g->t_i64);
    ptr = LLVMBuildInBoundsGEP2(B, g->t_float, g->bufs[s->u.wmma.mem->id], &ix, 1, "");
    if (s->u.wmma.mem->scope == TIR_SHARED) {
      pt = LLVMPointerTypeInContext(g->ctx, 3);
      ptr = LLVMBuildAddrSpaceCast(B, ptr, pt, "");
    }
    ldm = LLVMConstInt(g->t_i32, (unsigned long long)s->u.wmma.ldm, 0);
  }
  switch (s->u.wmma.op) {
  case TIR_WMMA_FILL:
    for (int w = 0; w < 8; w++) LLVMBuildStore(B, LLVMConstReal(g->t_float, s->u.wmma.value), frag_word(g, f, fi, w));
    break;
  case TIR_WMMA_LOAD_A:
  case TIR_WMMA_LOAD_B: {
    LLVMValueRef fn = intrinsic(g, s->u.wmma.op == TIR_WMMA_LOAD_A ? "llvm.nvvm.wmma.m16n16k8.load.a.row.stride.tf32"
                                                                  : "llvm.nvvm.wmma.m16n16k8.load.b.row.stride.tf32",
                                &pt, 1);
    LLVMValueRef cvt = intrinsic(g, "llvm.nvvm.f2tf32.rna", NULL, 0);
    LLVMValueRef args[2] = {ptr, ldm};
    LLVMValueRef r = LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, args, 2, "");
    for (int w = 0; w < 4; w++) {
      LLVMValueRef x = LLVMBuildBitCast(B, LLVMBuildExtractValue(B, r, (unsigned)w, ""), g->t_float, "");
      x = LLVMBuildCall2(B, LLVMGlobalGetValueType(cvt), cvt, &x, 1, "");
      LLVMBuildStore(B, x, frag_word(g, f, fi, w));
    }
    break;
  }
  case TIR_WMMA_MMA: {
    LLVMValueRef fn = intrinsic(g, "llvm.nvvm.wmma.m16n16k8.mma.row.row.tf32", NULL, 0);
    LLVMValueRef ia = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.wmma.ia), g->t_i64);
    LLVMValueRef ib = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.wmma.ib), g->t_i64);
    LLVMValueRef args[16];
    for (int w = 0; w < 4; w++) {
      args[w] = LLVMBuildLoad2(B, g->t_i32, frag_word(g, s->u.wmma.fa, ia, w), "");
      args[4 + w] = LLVMBuildLoad2(B, g->t_i32, frag_word(g, s->u.wmma.fb, ib, w), "");
    }
    for (int w = 0; w < 8; w++) args[8 + w] = LLVMBuildLoad2(B, g->t_float, frag_word(g, f, fi, w), "");
    LLVMValueRef r = LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, args, 16, "");
    for (int w = 0; w < 8; w++) LLVMBuildStore(B, LLVMBuildExtractValue(B, r, (unsigned)w, ""), frag_word(g, f, fi, w));
    break;
  }
  case TIR_WMMA_STORE: {
    LLVMValueRef fn = intrinsic(g, "llvm.nvvm.wmma.m16n16k8.store.d.row.stride.f32", &pt, 1);
    LLVMValueRef args[10];
    args[0] = ptr;
    for (int w = 0; w < 8; w++) args[1 + w] = LLVMBuildLoad2(B, g->t_float, frag_word(g, f, fi, w), "");
    args[9] = ldm;
    LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, args, 10, "");
    break;
  }
  }
}

/* One launch of a kernel on the GPU: void symbol(ptr buffer..., ptr fail), the
 * buffers the kernel's parameters in order, fail its launch's failure record;
 * body is the launch's statement, dims its grid and block (tir/gpu_launch.c). */
/* The bytes of the SHARED buffers s allocates, each buffer once (seen: by id). */
static int64_t shared_bytes(const tir_stmt *s, unsigned char *seen) {
  if (!s) return 0;
  switch (s->kind) {
  case TIR_FOR: return shared_bytes(s->u.loop.body, seen);
  case TIR_LET: return shared_bytes(s->u.let.body, seen);
  case TIR_IF: return shared_bytes(s->u.ifs.then_s, seen) + shared_bytes(s->u.ifs.else_s, seen);
  case TIR_SEQ: {
    int64_t n = 0;
    for (int32_t i = 0; i < s->u.seq.n; i++) n += shared_bytes(s->u.seq.s[i], seen);
    return n;
  }
  case TIR_ALLOCATE: {
    const tir_buffer *b = s->u.alloc.buf;
    int64_t n = 0;
    if (b->scope == TIR_SHARED && !seen[b->id]) n = b->size * (int64_t)gir_dtype_size(b->dtype), seen[b->id] = 1;
    return n + shared_bytes(s->u.alloc.body, seen);
  }
  default: return 0;
  }
}

/* What a block may have statically (sm_80 and sm_90 alike; more needs dynamic shared memory). */
#define GPU_STATIC_SHARED 49152

static int emit_kernel(tgt_lcg *g, const tir_func *f, const tir_stmt *body, const int64_t dims[6],
                             const char *symbol) {
  if (LLVMGetNamedFunction(g->mod, symbol)) return gir_errf(g->err, "two kernels are named %s", symbol);
  unsigned char *seen = gir_arena_calloc(g->scratch, (size_t)f->n_buffers + 1, 1);
  if (!seen) return gir_errf(g->err, "out of memory");
  int64_t sh = shared_bytes(body, seen);
  if (sh > GPU_STATIC_SHARED)
    return gir_errf(g->err, "kernel %s: %lld bytes of shared memory per block, more than the %d a block may have "
                            "statically (its schedule's tiles are too large)", symbol, (long long)sh, GPU_STATIC_SHARED);
  LLVMBuilderRef B = g->b;
  g->fn = f;
  g->n_tasks = 0;
  for (int d = 0; d < 6; d++) g->gpu_dims[d] = dims[d];
  int np = f->n_params + 1;
  LLVMTypeRef *pt = gir_arena_calloc(g->scratch, (size_t)np, sizeof *pt);
  g->vars = gir_arena_calloc(g->scratch, (size_t)f->n_vars + 1, sizeof *g->vars);
  g->bufs = gir_arena_calloc(g->scratch, (size_t)f->n_buffers + 1, sizeof *g->bufs);
  if (!pt || !g->vars || !g->bufs) return gir_errf(g->err, "out of memory");
  for (int i = 0; i < np; i++) pt[i] = g->t_ptr;
  LLVMValueRef fn = LLVMAddFunction(g->mod, symbol, LLVMFunctionType(g->t_void, pt, (unsigned)np, 0));
  tgt_llvm_add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  g->cur = fn;
  g->entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(g->ctx, fn, "body");
  LLVMPositionBuilderAtEnd(B, g->entry);
  LLVMBuildBr(B, bb);
  LLVMPositionBuilderAtEnd(B, bb);
  g->ctx_ptr = NULL;
  g->status_ptr = LLVMGetParam(fn, (unsigned)f->n_params);
  for (int i = 0; i < f->n_params; i++) {
    const tir_buffer *b = f->params[i];
    g->bufs[b->id] = LLVMGetParam(fn, (unsigned)i);
    tgt_llvm_add_attr(g, fn, (unsigned)i + 1, "noalias", 0);
    tgt_llvm_add_attr(g, fn, (unsigned)i + 1, "align", tgt_llvm_buf_align(b));
  }
  tgt_llvm_stmt(g, body);
  LLVMBuildRetVoid(B);
  /* !nvvm.annotations = !{!{ptr @symbol, !"kernel", i32 1}, !{ptr @symbol, !"maxntidx", i32 n}} */
  int64_t threads = dims[3] * dims[4] * dims[5];
  LLVMMetadataRef k[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(g->ctx, "kernel", 6),
                          LLVMValueAsMetadata(LLVMConstInt(g->t_i32, 1, 0))};
  LLVMAddNamedMetadataOperand(g->mod, "nvvm.annotations", LLVMMetadataAsValue(g->ctx, LLVMMDNodeInContext2(g->ctx, k, 3)));
  const char *names[3] = {"maxntidx", "maxntidy", "maxntidz"};
  for (int d = 0; d < 3 && threads <= 1024; d++) {
    LLVMMetadataRef m[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(g->ctx, names[d], 8),
                            LLVMValueAsMetadata(LLVMConstInt(g->t_i32, (unsigned long long)dims[3 + d], 0))};
    LLVMAddNamedMetadataOperand(g->mod, "nvvm.annotations", LLVMMetadataAsValue(g->ctx, LLVMMDNodeInContext2(g->ctx, m, 3)));
  }
  return 0;
}

/* GPU: every kernel's launches (tir/gpu_launch.c), each an entry point. */
static int emit(tgt_lcg *g, const tir_func *const *fns, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    if (tgt_llvm_check_func(g, fns[i]) < 0) return -1;
    tir_builder tb = {.arena = g->scratch};
    tir_gpu_launch *ls = NULL;
    int32_t nl = 0;
    if (tir_gpu_launches(&tb, fns[i], &ls, &nl, g->err) < 0) return -1;
    for (int32_t k = 0; k < nl; k++) {
      char sym[300];
      if (emit_kernel(g, fns[i], ls[k].body, ls[k].dims, tir_gpu_launch_symbol(fns[i]->name, k, sym, sizeof sym)) < 0)
        return -1;
    }
  }
  return 0;
}

const tgt_llvm_gpu tgt_cuda_gpu = {.emit = emit, .finish = tgt_cuda_link_libdevice, .loop = gpu_loop,
                                   .fail = gpu_fail_stmt, .barrier = barrier, .shuffle = shuffle, .shared = shared,
                                   .fragment = fragment, .wmma = wmma};
