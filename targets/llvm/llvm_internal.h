/* llvm_internal.h — state shared by the two halves of the loop IR → LLVM IR
 * translator: llvm_expr.c (types, conversions, expressions, loads and stores)
 * and llvm_stmt.c (statements, loops, outlined parallel tasks, the kernel
 * wrapper). Not part of the backend's contract: only targets/llvm includes it.
 *
 * Registers hold float16 and bfloat16 values as float rounded to their format
 * after every operation (the TE interpreter's model), bool as i1; memory holds
 * them as half, i16 and i8. Targets without float16 conversion instructions
 * (soft_half) convert with integer code instead of fptrunc/fpext, which would
 * become libcalls that older libgcc (riscv64 gcc 12) lacks. */
#ifndef TGT_LLVM_INTERNAL_H
#define TGT_LLVM_INTERNAL_H
#include <llvm-c/Core.h>
#include "arena.h"
#include "err.h"
#include "tir.h"

typedef struct tgt_lcg tgt_lcg;
typedef struct tgt_llvm_gpu tgt_llvm_gpu;

/* A strided vector load that shares a window with others of its statement sequence
 * (llvm_window.c): buf[at + j] for j < wide where mask[j] (and u holds), of which the
 * load's lane i is element off + k·i. */
typedef struct tgt_llvm_win {
  const tir_expr *load; /* the TIR_LOAD */
  const tir_expr *u;    /* the uniform (scalar) condition it is read under, or NULL */
  const tir_expr *at;   /* the window's first element (one node for all its members) */
  int64_t off;
  int32_t wide, k;
  const char *mask;
} tgt_llvm_win;

typedef struct tgt_llvm_wins {
  int32_t n;
  tgt_llvm_win *w;
} tgt_llvm_wins;

/* A GPU target's part of the translation (targets/cuda provides NVPTX's): the
 * kernels' entry points, the statements only GPU code has, and what the module
 * needs once translated (a device library linked in). */
struct tgt_llvm_gpu {
  int (*emit)(tgt_lcg *g, const tir_func *const *fns, int32_t n);
  int (*finish)(LLVMModuleRef m, const char *triple, gir_err *err);
  void (*loop)(tgt_lcg *g, const tir_stmt *s);          /* a loop bound to the grid */
  void (*fail)(tgt_lcg *g, const tir_stmt *s);          /* a failed run-time check */
  void (*barrier)(tgt_lcg *g);
  /* a warp shuffle (TIR_SHUFFLE) of v, a scalar of dtype t */
  LLVMValueRef (*shuffle)(tgt_lcg *g, tir_shfl_mode mode, LLVMValueRef v, gir_dtype t, int32_t offset);
  LLVMValueRef (*shared)(tgt_lcg *g, const tir_buffer *b, LLVMTypeRef array); /* a SHARED buffer's base */
  LLVMValueRef (*fragment)(tgt_lcg *g, const tir_buffer *b); /* a FRAGMENT buffer's base (a lane's registers) */
  void (*wmma)(tgt_lcg *g, const tir_stmt *s);               /* a warp matrix operation (TIR_WMMA) */
};

struct tgt_lcg {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  gir_arena *scratch; /* per-compile scratch (environments, names), freed at the end */
  gir_err *err;
  const char *cpu, *features; /* function attributes, "" to omit */
  int soft_half;              /* no float16 conversion instructions: convert with integer code */
  int soft_roundeven;         /* llvm.roundeven does not select on vectors (32-bit ARM) */
  int vnni512, vnni256;       /* x86 VPDPBUSD for dot4 on 512-bit / on 128- and 256-bit vectors */
  int neon_dot, neon_usdot;   /* aarch64 SDOT/UDOT (+dotprod) and USDOT (+i8mm) for dot4 */
  int scalef512, scalef256;   /* x86 VSCALEFPS for exp's 2^n on 512-bit / on 128- and 256-bit vectors */
  int masked_loads;           /* a masked vector load is one instruction (x86 AVX2, AVX-512): windows */
  int strided_loads;          /* gathers at a base + constant offsets as scalar loads (x86 without AVX-512) */
  const tgt_llvm_gpu *gpu;    /* GPU code (targets/cuda), else NULL */
  int64_t gpu_dims[6];        /* the launch being emitted: grid x, y, z, block x, y, z */
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_half, t_float, t_double, t_ptr;
  unsigned md_loop;           /* "llvm.loop" metadata kind */
  LLVMValueRef ipow;          /* kiln.ipow, created on first use */

  /* the kernel being translated */
  const tir_func *fn;
  int32_t n_tasks;
  int no_contract; /* no FMA contraction in this kernel: it reads or writes 8-bit integers (see
                      tgt_llvm_emit_func) */

  /* the LLVM function being emitted (the kernel's body or an outlined task) */
  LLVMValueRef cur;
  LLVMBasicBlockRef entry; /* holds the allocas, ends with a branch */
  LLVMValueRef ctx_ptr, status_ptr;
  LLVMValueRef *vars; /* by tir_var id: the value in cur, NULL out of scope */
  LLVMValueRef *bufs; /* by tir_buffer id: the base pointer in cur */
  const tgt_llvm_wins *wins; /* the windows of the statement sequence being emitted, or NULL */
};

/* llvm_expr.c */
LLVMTypeRef tgt_llvm_reg_type(tgt_lcg *g, gir_dtype t, int lanes);
LLVMTypeRef tgt_llvm_mem_type(tgt_lcg *g, gir_dtype t);
LLVMValueRef tgt_llvm_expr(tgt_lcg *g, const tir_expr *e);
void tgt_llvm_store(tgt_lcg *g, const tir_stmt *s);
/* &buf[idx]; idx a scalar or a vector (then a vector of pointers). */
LLVMValueRef tgt_llvm_elem_ptr(tgt_lcg *g, const tir_buffer *buf, LLVMValueRef idx);
/* shufflevector(x, y or poison, ix[0..n)); a negative index is a poison lane. */
LLVMValueRef tgt_llvm_shuffle(tgt_lcg *g, LLVMValueRef x, LLVMValueRef y, const int *ix, int n);
void tgt_llvm_prefetch(tgt_lcg *g, const tir_stmt *s);
/* An alloca in the current function's entry block. */
LLVMValueRef tgt_llvm_alloca(tgt_lcg *g, LLVMTypeRef t, unsigned align, const char *name);
/* Converts an integer value to the integer type `to` (sign-extending). */
LLVMValueRef tgt_llvm_int_to(tgt_lcg *g, LLVMValueRef v, LLVMTypeRef to);

/* llvm_window.c: the windows of the strided loads that statements s[0..n), run in
 * order, share (NULL: none); the window of a load, NULL if it has none. */
tgt_llvm_wins *tgt_llvm_plan_windows(tgt_lcg *g, tir_stmt *const *s, int32_t n);
const tgt_llvm_win *tgt_llvm_find_window(const tgt_lcg *g, const tir_expr *load);

/* llvm_transpose.c: a serial loop of vector stores gathered from rows, emitted as row
 * loads and a transpose in registers; 0 (nothing emitted) when s is not one. */
int tgt_llvm_transpose_loop(tgt_lcg *g, const tir_stmt *s);
/* llvm_stmt.c */
int tgt_llvm_emit_func(tgt_lcg *g, const tir_func *f);
int tgt_llvm_check_func(tgt_lcg *g, const tir_func *f);
/* For a GPU target's kernels: a statement, in the function being emitted; an enum
 * attribute; the alignment a buffer's base is known to have. */
void tgt_llvm_stmt(tgt_lcg *g, const tir_stmt *s);
void tgt_llvm_add_attr(tgt_lcg *g, LLVMValueRef fn, unsigned idx, const char *name, uint64_t val);
unsigned tgt_llvm_buf_align(const tir_buffer *b);

/* exp, erf and tanh of a <lanes x float> vector (lanes ≤ 64) as inline IR (llvm_vmath.c). */
LLVMValueRef tgt_llvm_vexpf(tgt_lcg *g, LLVMValueRef x, int lanes);
LLVMValueRef tgt_llvm_vexpf_nonpos(tgt_lcg *g, LLVMValueRef x, int lanes); /* x ≤ 0 by construction */
LLVMValueRef tgt_llvm_verff(tgt_lcg *g, LLVMValueRef x, int lanes);
LLVMValueRef tgt_llvm_vlogf(tgt_lcg *g, LLVMValueRef x, int lanes);
LLVMValueRef tgt_llvm_vtanhf(tgt_lcg *g, LLVMValueRef x, int lanes);

#endif
