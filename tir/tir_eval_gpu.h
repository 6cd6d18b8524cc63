/* tir_eval_gpu.h — internal to the loop-IR interpreter: what tir_eval.c (the
 * serial interpreter) and tir_eval_gpu.c (the emulation of GPU launches) call of
 * each other. Nothing else includes it; tir_eval.h is the interface. */
#ifndef TIR_EVAL_GPU_H
#define TIR_EVAL_GPU_H
#include "tir_eval.h"

/* tir_eval.c: runs s serially in env (its `run`); 0 or -1 with env->failed set. */
int tir_eval_run(tir_env *env, const tir_stmt *s);
/* tir_eval.c: the zeroed memory an ALLOCATE of buf binds in env (a SHARED buffer in
 * an emulated thread: its block's, from tir_gpu_shared); NULL on error (reported). */
void *tir_eval_alloc(tir_env *env, const tir_buffer *buf);

/* tir_eval_gpu.c: runs a loop bound to the grid met by tir_eval.c's run: a blockIdx
 * loop outside a launch starts one; a threadIdx loop in a thread runs its one
 * iteration or none. 0 or -1 (message in env->err). */
int tir_gpu_for(tir_env *env, const tir_stmt *s);
/* tir_eval_gpu.c: the access of an emulated thread (env->gpu) to element ix of the
 * SHARED or GLOBAL buffer buf (memory data, index in bounds): a load when stored is
 * NULL, else a store of *stored, checked before it is written. 0, or -1 on a race. */
int tir_gpu_access(tir_env *env, const tir_buffer *buf, void *data, int64_t ix, const tir_value *stored);
/* tir_eval_gpu.c: the memory of SHARED buffer buf in the block env's thread runs in
 * (allocated and zeroed when the first thread of the block reaches it); NULL on error,
 * as for a GLOBAL buffer (allocated inside a launch). */
void *tir_gpu_shared(tir_env *env, const tir_buffer *buf);

/* tir_eval_gpu.c: the value of shuffle e in the emulated thread env runs for, which
 * the phased interpreter computed from the other lane before running the statement
 * holding it; an error (and 0) for a shuffle it did not prepare. */
tir_value tir_gpu_shuffled(tir_env *env, const tir_expr *e);

#endif
