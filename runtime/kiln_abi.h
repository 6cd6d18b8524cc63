/* kiln_abi.h — the kernel ABI shared by generated code and the runtime (and the
 * tests that call kernels directly). Every kernel has the same signature;
 * buffers come in a fixed order (inputs, then outputs, then workspace). Parallel
 * loops in a kernel are outlined into task functions run through
 * ctx->parallel_for, which a caller may implement serially (tests do).
 * C99, no dependencies, so that any runtime can include it as is. */
#ifndef KILN_ABI_H
#define KILN_ABI_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_VERSION 2

typedef struct kiln_ctx kiln_ctx;

/* A task runs iterations [begin, end) of an outlined parallel loop. */
typedef void (*kiln_task_fn)(void *closure, int64_t begin, int64_t end);

struct kiln_ctx {
  /* Runs fn over [0, n), split into contiguous chunks across the pool's threads;
   * returns when all are done. 0 on success. */
  int32_t (*parallel_for)(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n);
  void *pool;          /* the thread pool behind parallel_for */
  void *workspace;     /* scratch memory for the kernel (64-byte aligned) */
  int64_t workspace_bytes;
  /* ABI 2. Called by a kernel whose run-time check number `check` (an index into
   * the kernel's "checks" in plan.json) found `value` outside [lo, hi) — a gather
   * index from a model input, say. The kernel then skips its work and returns
   * non-zero. May be called from any thread of the pool; may be NULL. */
  void (*fail)(const kiln_ctx *ctx, int32_t check, int64_t value, int64_t lo, int64_t hi);
};

/* 0 on success; non-zero when a run-time check failed (ctx->fail was called
 * first, when set). A kernel never fails otherwise. */
typedef int32_t (*kiln_kernel_fn)(void *const *buffers, const kiln_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
