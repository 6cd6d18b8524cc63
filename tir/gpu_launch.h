/* gpu_launch.h — a GPU kernel's launches. A kernel's loop IR computes its stages one
 * after the other, and a stage may read what an earlier one wrote anywhere in a
 * buffer: on a GPU, where no barrier spans the grid, each such stage is a launch of
 * its own (launches on one stream run in order). tir_gpu_launches cuts a kernel's
 * body into launches and sizes each one's grid from its bound loops (tir.h). */
#ifndef TIR_GPU_LAUNCH_H
#define TIR_GPU_LAUNCH_H
#include "err.h"
#include "tir.h"

#define TIR_GPU_MAX_LAUNCHES 64
#define TIR_GPU_MAX_THREADS 1024 /* threads per block */

typedef struct tir_gpu_launch {
  tir_stmt *body;
  int64_t dims[6]; /* grid x, y, z, then block x, y, z: each the largest extent bound to it, 1 if none */
} tir_gpu_launch;

/* The launches of f, in order (allocated in b's arena). A statement "has grid
 * work" when it holds a bound loop or stores into a GLOBAL buffer; every other
 * statement (local computations: a run-time check's scan, a let) is replayed in
 * each launch that follows it, and wrappers (allocate, let, if) are repeated
 * around each launch cut from their body. A statement with global stores and no
 * bound loop runs as a launch of one thread. -1 with a message when a bound
 * extent is not a constant, a block has more than 1024 threads, a grid dimension
 * is too large, or there are more than TIR_GPU_MAX_LAUNCHES launches. */
int tir_gpu_launches(tir_builder *b, const tir_func *f, tir_gpu_launch **out, int32_t *n, gir_err *err);

/* The entry point of launch i of kernel `kernel`: "<kernel>_l<i>" (into buf). */
const char *tir_gpu_launch_symbol(const char *kernel, int32_t i, char *buf, size_t size);

#endif
