/* tir_eval.h — an interpreter for the loop IR. It is the reference that loop
 * passes are tested against: a pass (simplify, unroll, partition...) must not
 * change what a function computes, and running the function before and after
 * on the same buffers shows it. It is also the home of the scalar semantics of
 * every operator (tir_value_unop/binop/cast), which the simplifier's constant
 * folder calls so that folding and running can never disagree.
 *
 * Values follow te/te_eval.c exactly: integers travel as int64 wrapped to
 * their dtype's width (uint64 as its bit pattern, bool as 0/1), floats as double
 * rounded to their dtype's precision after every operation. Integer division or
 * modulo by zero gives 0. Vector expressions are evaluated lane by lane (a
 * scalar operand of a vector node is the same in every lane); a vector store
 * evaluates every lane of index and value before it writes any. PARALLEL loops
 * run serially. Loads and stores out of a buffer's [0, size) are errors, as is
 * exceeding the work budget; LOCAL/SHARED buffers are zeroed on allocation.
 *
 * Loops bound to the GPU grid (tir.h) are run as an emulated launch, in
 * tir/tir_eval_gpu.c: blocks one after another, the threads of a block in
 * lockstep between barriers, races on shared and global memory reported as
 * errors. The rules the emulated code must follow are written there. */
#ifndef TIR_EVAL_H
#define TIR_EVAL_H
#include "scalar.h"
#include "tir.h"


/* The shape of an emulated GPU launch (tir_eval_gpu.c): blocks along x, y, z
 * (the largest extents of the blockIdx loops, 1 for a dimension without one), threads
 * per block likewise, and the bytes of the distinct SHARED buffers a block allocated. */
typedef struct tir_gpu_geometry {
  int64_t grid[3], block[3];
  int64_t shared_bytes;
} tir_gpu_geometry;

struct tir_gpu_thread; /* tir_eval_gpu.c: the emulated thread an environment runs for */

/* Where variables and buffers live during a run. */
typedef struct tir_env {
  gir_arena *scratch;  /* allocations of ALLOCATE statements */
  int32_t n_vars, n_buffers;
  tir_value *vars;     /* by var id */
  void **bufs;         /* by buffer id; NULL = unbound */
  void **local_cache;  /* by buffer id: memory reused by repeated ALLOCATEs */
  int64_t budget, work; /* expression nodes evaluated; budget 0 = unbounded */
  gir_err *err;
  int failed;
  struct tir_gpu_thread *gpu; /* NULL but in the environment of an emulated GPU thread */
  int32_t n_launches;         /* GPU launches run so far; the last one's shape: */
  tir_gpu_geometry last_launch;
} tir_env;

/* n_vars / n_buffers: every id used is below these (a builder's next_var /
 * next_buffer). Returns -1 (message in err) when out of memory. */
int tir_env_init(tir_env *env, gir_arena *scratch, int32_t n_vars, int32_t n_buffers, int64_t budget, gir_err *err);
void tir_env_bind(tir_env *env, const tir_buffer *buf, void *data);
void tir_env_set(tir_env *env, const tir_var *v, tir_value x);
void tir_env_set_int(tir_env *env, const tir_var *v, int64_t x);

/* The value of one lane of e (lane 0 for scalars). On error env->failed is set
 * and the value is 0. */
tir_value tir_eval_expr(tir_env *env, const tir_expr *e, int32_t lane);
/* Runs s. 0 on success, -1 with a message in env->err. */
int tir_eval_stmt(tir_env *env, const tir_stmt *s);
/* Runs f on buffers[i] for f->params[i]. */
int tir_eval_func(const tir_func *f, void *const *buffers, gir_arena *scratch, int64_t budget, gir_err *err);

/* The value of an INT or FLOAT constant node, wrapped / rounded to its dtype
 * (the operators' scalar semantics are in scalar.h). */
tir_value tir_const_value(const tir_expr *e);

#endif
