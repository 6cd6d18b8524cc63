/* tir.h — the loop IR (like TVM's TIR): what schedules lower tensor expressions
 * to, what the loop passes transform, and what targets generate code from.
 *
 * A tir_func is one kernel with the ABI of runtime/kiln_abi.h: its parameters are
 * buffers (flat arrays of one dtype, inputs then outputs), its body a statement
 * tree. Buffers are indexed with flat int64 element offsets (storage flattening
 * happens when TE is lowered). Expressions have a dtype and a lane count (1 =
 * scalar; >1 = vector, produced by the vectorize pass with ramp/broadcast).
 *
 * Semantics that targets must honour:
 * - TIR_SELECT evaluates both operands (use it only when both are safe);
 *   TIR_IF_THEN_ELSE evaluates only the chosen one (it may guard a load).
 * - Integer arithmetic wraps (two's complement); integer division and modulo
 *   by zero give 0 (never trap). TE_DIV on integers truncates toward zero,
 *   TE_FLOORDIV/TE_FLOORMOD round toward -inf. MIN/MAX on floats propagate NaN.
 * - Float arithmetic may be contracted into FMA; no other fast-math. (The LLVM
 *   backend does not contract in kernels that touch 8-bit integers: see
 *   tgt_llvm_emit_func.)
 * - TIR_DOT4 (the building block of int8 kernels: x86 VNNI vpdpbusd, aarch64
 *   sdot/udot/usdot, Cortex-M smlad): acc is int32 with L lanes (L >= 1); a and b are
 *   8-bit integers (GIR_U8 or GIR_I8, independently); b has 4L lanes, a has 4L
 *   lanes or exactly 4 (then the same 4 bytes serve every output lane: one input
 *   pixel's 4 channels, broadcast). The result is int32 with L lanes:
 *     lane l = acc[l] + sum_{j<4} ext(a[4l+j] (or a[j])) * ext(b[4l+j])
 *   where ext zero-extends u8 and sign-extends i8, and the arithmetic wraps in
 *   int32. It appears only in code that is already vector (or scalar, L = 1);
 *   the vectorize pass does not widen it.
 * - TIR_SHUFFLE (GPU code only): the threads of a block form warps of 32 (linear
 *   thread index / 32; the lane is its remainder); the result in lane l is `value`
 *   (a scalar f32, f64, i32 or i64) as lane l ^ offset (XOR) or l + offset (DOWN; l
 *   itself past lane 31) evaluated it, at the same point of the program. Every
 *   lane of the warp must evaluate the shuffle together (CUDA's shfl.sync with a
 *   full mask): it is a cross-lane operation like TIR_BARRIER, so passes never put
 *   it under a condition or in a loop whose trip count may differ between the
 *   threads, never duplicate it into branches or hoist it (tir_stmt_has_sync),
 *   and a block holding one has a multiple of 32 threads. 1 <= offset < 32.
 * - TIR_FOR runs var over [min, min + extent); kind says how: serial, parallel
 *   (outlined into a task and run through ctx->parallel_for), vectorized (the
 *   vectorize pass rewrites it; a target may also run it serially) or unrolled.
 * - TIR_WMMA (GPU code only; CUDA's wmma API, shape m16n16k8, TF32 inputs, f32
 *   accumulation): warp-collective operations on fragments, which are tiles held by a
 *   warp as a whole (its lanes' registers). Fragment number i of a FRAGMENT buffer is
 *   elements [i·E, (i+1)·E) of it, E = tir_frag_elems. FILL sets accumulator `frag`[fi]
 *   to `value`; LOAD_A reads the 16 x 8 tile mem[index + r·ldm + c], LOAD_B the 8 x 16
 *   tile mem[index + r·ldm + c] (both row-major) into `frag`[fi]; MMA does frag[fi] += fa[ia] · fb[ib], each element of
 *   A and B first rounded to TF32 (10 mantissa bits, to nearest, ties away from zero:
 *   cvt.rna.tf32.f32), the products summed in f32 (in an order the hardware chooses);
 *   STORE writes accumulator frag[fi] to mem[index + r·ldm + c]. mem is GLOBAL or SHARED
 *   f32; index (int64) and the fragment numbers are scalars, ldm a constant multiple of
 *   4 (16-byte aligned rows) and index a multiple of 8 (the tile 32-byte aligned: mem's
 *   base is, tir_buffer.align >= 32). Every lane of a warp must
 *   reach the statement together with the same operands (like TIR_SHUFFLE: passes treat
 *   it as sync code), and a block holding one is whole warps.
 * - Buffers of scope LOCAL are allocated by TIR_ALLOCATE for the duration of its
 *   body (stack or registers); GLOBAL buffers are the function's parameters. */
#ifndef TIR_H
#define TIR_H
#include <stdint.h>
#include <stdio.h>
#include "te.h"

typedef enum tir_expr_kind {
  TIR_INT, TIR_FLOAT, TIR_VAR, TIR_LOAD, TIR_UNARY, TIR_BINARY, TIR_SELECT, TIR_IF_THEN_ELSE, TIR_CAST,
  TIR_RAMP,      /* base, base+stride, ... (lanes) */
  TIR_BROADCAST, /* value repeated (lanes) */
  TIR_BITCAST,   /* the bits of a read as dtype, which has a's element size (u.cast) */
  TIR_DOT4,      /* 4-way 8-bit dot product accumulated into int32 lanes (u.dot4; see below) */
  TIR_SHUFFLE,   /* GPU warp shuffle: value as another lane of the warp computed it (u.shfl; see below) */
  TIR_EXPR_KIND_COUNT
} tir_expr_kind;

/* TIR_SHUFFLE's lane: lane ^ offset (a butterfly) or lane + offset (down; a lane past
 * the warp's last gets its own value), as CUDA's __shfl_xor_sync / __shfl_down_sync. */
typedef enum tir_shfl_mode { TIR_SHFL_XOR, TIR_SHFL_DOWN } tir_shfl_mode;

/* TIR_FRAGMENT (GPU code only): a warp's tensor-core operand or accumulator tiles
 * (tir_buffer.frag says which), opaque: only TIR_WMMA statements touch them. */
typedef enum tir_scope { TIR_GLOBAL, TIR_LOCAL, TIR_SHARED, TIR_FRAGMENT, TIR_SCOPE_COUNT } tir_scope;

/* A FRAGMENT buffer's role, and the m16n16k8 tile each of its fragments holds: A 16 x 8
 * (TF32), B 8 x 16 (TF32), the accumulator 16 x 16 (f32). */
typedef enum tir_frag { TIR_FRAG_NONE, TIR_FRAG_A, TIR_FRAG_B, TIR_FRAG_ACC } tir_frag;
enum { TIR_WMMA_M = 16, TIR_WMMA_N = 16, TIR_WMMA_K = 8 };
/* Elements of one fragment of role f (128 for A and B, 256 for the accumulator). */
static inline int64_t tir_frag_elems(tir_frag f) { return f == TIR_FRAG_ACC ? TIR_WMMA_M * TIR_WMMA_N : TIR_WMMA_M * TIR_WMMA_K; }

typedef struct tir_var {
  int32_t id;
  const char *name;
  gir_dtype dtype; /* loop variables are int64 */
} tir_var;

typedef struct tir_buffer {
  int32_t id;
  const char *name;
  gir_dtype dtype;
  int64_t size;        /* elements */
  tir_scope scope;
  int32_t param;       /* index in the kernel's buffer array, -1 if allocated */
  int32_t align;       /* bytes the base pointer is known to be aligned to */
  tir_frag frag;       /* FRAGMENT buffers: the role of their fragments (size: count x tir_frag_elems) */
} tir_buffer;

typedef struct tir_expr tir_expr;
struct tir_expr {
  tir_expr_kind kind;
  gir_dtype dtype;
  int32_t lanes;
  union {
    int64_t i;
    double f;
    tir_var *var;
    struct { tir_buffer *buf; tir_expr *index; } load; /* index lanes == expr lanes */
    struct { te_unop op; tir_expr *a; } un;
    struct { te_binop op; tir_expr *a, *b; } bin;
    struct { tir_expr *c, *a, *b; } sel;                 /* SELECT and IF_THEN_ELSE */
    struct { tir_expr *a; } cast;                         /* CAST and BITCAST */
    struct { tir_expr *base, *stride; } ramp;
    struct { tir_expr *value; } bcast;
    struct { tir_expr *acc, *a, *b; } dot4;
    struct { tir_expr *value; int32_t offset; tir_shfl_mode mode; } shfl;
  } u;
};

/* TIR_PREFETCH: a hint that buf[index] (scalar index, in bounds) will be read
 * soon; targets without prefetch instructions drop it.
 * TIR_FAIL: the kernel's run-time check number `check` failed — value (a scalar
 * int64) lies outside [lo, hi). Targets call ctx->fail(ctx, check, value, lo,
 * hi) when ctx and its fail are non-NULL, and the kernel returns a non-zero
 * status; execution continues after the statement, so the code around it must
 * not go on to use the bad value (lower/index_checks.c skips the kernel's work). */
/* GPU code (targets/cuda) binds loops to the launch grid: a loop of kind
 * TIR_BLOCK_X..Z runs its iterations as the blocks of the grid along that
 * dimension, TIR_THREAD_X..Z as the threads of a block (CUDA's blockIdx / threadIdx).
 * A bound loop starts at 0 and has a constant extent; the launch's dimension is the
 * largest extent bound to it in the launch, and a bound loop of a smaller extent
 * runs only in the threads below it. Block loops enclose every thread loop and
 * every statement with effects. Code between the block loops and a thread loop runs
 * in every thread of the block (redundantly: it may only compute what each thread
 * uses itself, or store what all store alike). TIR_SHARED buffers are allocated
 * once per block; TIR_BARRIER makes every thread of the block wait until all have
 * reached it (CUDA's __syncthreads; it must be reached by all threads of the block
 * or by none). LOCAL buffers are per thread.
 * The interpreter emulates this on the CPU (tir/tir_eval_gpu.c, which states the
 * structure it accepts: the blockIdx loops one nest at the top of a launch, each
 * threadIdx kind at most once on a path), checking races on shared and global
 * memory, divergent barriers and bounds; CPU backends refuse bound loops and barriers. */
typedef enum tir_stmt_kind {
  TIR_FOR, TIR_LET, TIR_IF, TIR_STORE, TIR_ALLOCATE, TIR_SEQ, TIR_PREFETCH, TIR_FAIL, TIR_BARRIER,
  TIR_WMMA, /* a warp's tensor-core operation on fragments (u.wmma; see above) */
  TIR_STMT_KIND_COUNT
} tir_stmt_kind;
typedef enum tir_wmma_op { TIR_WMMA_FILL, TIR_WMMA_LOAD_A, TIR_WMMA_LOAD_B, TIR_WMMA_MMA, TIR_WMMA_STORE } tir_wmma_op;
typedef enum tir_for_kind {
  TIR_SERIAL, TIR_PARALLEL, TIR_VECTORIZED, TIR_UNROLLED,
  TIR_BLOCK_X, TIR_BLOCK_Y, TIR_BLOCK_Z, TIR_THREAD_X, TIR_THREAD_Y, TIR_THREAD_Z,
  TIR_FOR_KIND_COUNT
} tir_for_kind;
/* 1 for the loop kinds bound to the GPU grid (blocks or threads). */
static inline int tir_for_kind_is_gpu(tir_for_kind k) { return k >= TIR_BLOCK_X && k <= TIR_THREAD_Z; }
/* 1 for TIR_BLOCK_X..Z. */
static inline int tir_for_kind_is_block(tir_for_kind k) { return k >= TIR_BLOCK_X && k <= TIR_BLOCK_Z; }
/* The for kind a GPU binding tag names ("blockIdx.x" … "threadIdx.z"); TIR_SERIAL for NULL,
 * TIR_FOR_KIND_COUNT for another name. */
tir_for_kind tir_for_kind_of_tag(const char *tag);

typedef struct tir_stmt tir_stmt;
struct tir_stmt {
  tir_stmt_kind kind;
  union {
    struct { tir_var *var; tir_expr *min, *extent; tir_for_kind kind; tir_stmt *body; } loop;
    struct { tir_var *var; tir_expr *value; tir_stmt *body; } let;
    struct { tir_expr *cond; tir_stmt *then_s, *else_s; } ifs;  /* else_s may be NULL */
    struct { tir_buffer *buf; tir_expr *index, *value; } store;
    struct { tir_buffer *buf; tir_stmt *body; } alloc;
    struct { tir_buffer *buf; tir_expr *index; } prefetch;
    struct { int32_t check; tir_expr *value, *lo, *hi; } fail;
    struct { int32_t n; tir_stmt **s; } seq;
    struct {
      tir_wmma_op op;
      tir_buffer *frag; tir_expr *fi;  /* the fragment written (MMA: and accumulated) */
      tir_buffer *fa, *fb; tir_expr *ia, *ib; /* MMA's operands */
      tir_buffer *mem; tir_expr *index; int64_t ldm; /* LOAD_A/B, STORE */
      double value; /* FILL */
    } wmma;
  } u;
};

typedef struct tir_func {
  const char *name;
  int32_t n_params;
  tir_buffer **params;  /* params[i]->param == i */
  tir_stmt *body;
  int32_t n_vars, n_buffers; /* ids are below these */
} tir_func;

/* Everything is allocated in the builder's arena. */
typedef struct tir_builder {
  gir_arena *arena;
  int32_t next_var, next_buffer;
} tir_builder;

void tir_builder_init(tir_builder *b, gir_arena *a);
tir_var *tir_var_new(tir_builder *b, const char *name, gir_dtype t);
tir_buffer *tir_buffer_new(tir_builder *b, const char *name, gir_dtype t, int64_t size, tir_scope scope, int32_t param);

tir_expr *tir_int(tir_builder *b, gir_dtype t, int64_t v);
tir_expr *tir_i64(tir_builder *b, int64_t v);
tir_expr *tir_float(tir_builder *b, gir_dtype t, double v);
tir_expr *tir_const(tir_builder *b, gir_dtype t, double v); /* int or float by dtype */
tir_expr *tir_var_ref(tir_builder *b, tir_var *v);
tir_expr *tir_load(tir_builder *b, tir_buffer *buf, tir_expr *index);
tir_expr *tir_un(tir_builder *b, te_unop op, tir_expr *a);
tir_expr *tir_bin(tir_builder *b, te_binop op, tir_expr *x, tir_expr *y);
tir_expr *tir_select(tir_builder *b, tir_expr *c, tir_expr *x, tir_expr *y);
tir_expr *tir_if_then_else(tir_builder *b, tir_expr *c, tir_expr *x, tir_expr *y);
tir_expr *tir_cast(tir_builder *b, gir_dtype t, tir_expr *a);
tir_expr *tir_bitcast(tir_builder *b, gir_dtype t, tir_expr *a);
tir_expr *tir_ramp(tir_builder *b, tir_expr *base, tir_expr *stride, int32_t lanes);
tir_expr *tir_broadcast(tir_builder *b, tir_expr *value, int32_t lanes);
tir_expr *tir_dot4(tir_builder *b, tir_expr *acc, tir_expr *a, tir_expr *x); /* x: the b operand; see TIR_DOT4 */
/* A warp shuffle of scalar value (f32, f64, i32 or i64) by offset (1..31); see TIR_SHUFFLE. */
tir_expr *tir_shuffle(tir_builder *b, tir_shfl_mode mode, tir_expr *value, int32_t offset);
/* 1 if e holds a TIR_SHUFFLE. */
int tir_expr_has_shuffle(const tir_expr *e);
/* Whether evaluating e touches memory: a load, a dot4's or a warp shuffle's operands
 * (treated as reads) anywhere in it */
int tir_expr_reads_memory(const tir_expr *e);
/* Whether acc, a and x make a dot4 of `lanes` lanes (the constructor asserts it; the
 * backends check loop IR they are given with it). */
int tir_dot4_operands_ok(const tir_expr *acc, const tir_expr *a, const tir_expr *x, int32_t lanes);

tir_stmt *tir_for(tir_builder *b, tir_var *v, tir_expr *min, tir_expr *extent, tir_for_kind k, tir_stmt *body);
tir_stmt *tir_let(tir_builder *b, tir_var *v, tir_expr *value, tir_stmt *body);
tir_stmt *tir_if(tir_builder *b, tir_expr *cond, tir_stmt *then_s, tir_stmt *else_s);
tir_stmt *tir_store(tir_builder *b, tir_buffer *buf, tir_expr *index, tir_expr *value);
tir_stmt *tir_allocate(tir_builder *b, tir_buffer *buf, tir_stmt *body);
tir_stmt *tir_prefetch(tir_builder *b, tir_buffer *buf, tir_expr *index);
tir_stmt *tir_fail(tir_builder *b, int32_t check, tir_expr *value, tir_expr *lo, tir_expr *hi); /* scalar int64s */
tir_stmt *tir_barrier(tir_builder *b); /* the threads of a GPU block wait for each other */
/* A FRAGMENT buffer of n fragments of role f. */
tir_buffer *tir_fragment_new(tir_builder *b, const char *name, tir_frag f, int64_t n);
/* TIR_WMMA statements (see above); fragment numbers and index are int64 scalars. */
tir_stmt *tir_wmma_fill(tir_builder *b, tir_buffer *acc, tir_expr *fi, double value);
tir_stmt *tir_wmma_load(tir_builder *b, tir_buffer *frag, tir_expr *fi, tir_buffer *mem, tir_expr *index, int64_t ldm);
tir_stmt *tir_wmma_mma(tir_builder *b, tir_buffer *acc, tir_expr *fi, tir_buffer *fa, tir_expr *ia, tir_buffer *fb,
                       tir_expr *ib);
tir_stmt *tir_wmma_store(tir_builder *b, tir_buffer *acc, tir_expr *fi, tir_buffer *mem, tir_expr *index, int64_t ldm);
/* A copy of TIR_WMMA s with its expressions replaced (NULL: the ones s has; a pass
 * rewriting expressions rebuilds the statement with it). */
tir_stmt *tir_wmma_with(tir_builder *b, const tir_stmt *s, tir_expr *fi, tir_expr *ia, tir_expr *ib, tir_expr *index);
/* Rounds an f32 to TF32 as cvt.rna.tf32.f32 does (the low 13 bits cleared, to nearest, ties
 * away from zero; infinities and NaNs kept). */
float tir_round_tf32(float x);
/* 1 if s holds a TIR_BARRIER, a TIR_WMMA or a TIR_SHUFFLE (code that the threads of a block, or of
 * a warp, must reach together): passes must not put such code under a condition that
 * may differ between the threads (unswitching, for one). */
int tir_stmt_has_sync(const tir_stmt *s);
tir_stmt *tir_seq(tir_builder *b, tir_stmt *const *s, int32_t n); /* flattens nested seqs, drops NULLs */
tir_stmt *tir_seq2(tir_builder *b, tir_stmt *x, tir_stmt *y);

/* Text dump, Python-like, one statement per line. */
void tir_print_func(const tir_func *f, FILE *out);
void tir_print_stmt(const tir_stmt *s, FILE *out, int indent);
void tir_print_expr(const tir_expr *e, FILE *out);

#endif
