/* krt_threadpool.h — the runtime's thread pool behind kiln_ctx.parallel_for.
 *
 * A pool of T threads is the calling thread plus T-1 persistent workers
 * started once. parallel_for(n) splits [0, n) statically into min(T, n)
 * contiguous ranges (range t = the t-th share, sizes differing by at most one),
 * each cut into up to KRT_POOL_SUBCHUNKS pieces (likewise), wakes the workers by
 * bumping an atomic epoch, runs range 0's pieces itself and, after a grace period,
 * whatever pieces of the other ranges no thread has taken yet (a worker does the
 * same from its own range on), and waits for the rest: a preempted, slow or
 * sleeping worker delays a call by a piece, not by its share. The task function is
 * called once per piece, or once for a range's pieces after its first when that
 * one was quick (threadpool.c). It never allocates or creates threads. With T = 1 there are
 * no workers and parallel_for is a plain call (krt_serial_for). */
#ifndef KILN_THREADPOOL_H
#define KILN_THREADPOOL_H
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
#include "kiln_abi.h"

typedef struct krt_pool krt_pool;

/* The number of CPUs this process may run on (affinity mask), at least 1. */
int32_t krt_online_cores(void);

/* Starts a pool of `threads` threads (1..KILN_MAX_THREADS, the caller
 * included). On failure *pool is NULL and msg says why. */
kiln_status krt_pool_create(int32_t threads, krt_pool **pool, char *msg, size_t msglen);
/* Stops and joins the workers; NULL is fine. Must not run during a parallel_for. */
void krt_pool_destroy(krt_pool *pool);
int32_t krt_pool_threads(const krt_pool *pool);

/* Points ctx->parallel_for / ctx->pool at this pool (the serial version when
 * the pool has one thread or pool is NULL). */
void krt_pool_bind(krt_pool *pool, kiln_ctx *ctx);

/* Wakes the workers that sleep (they spin again for a while): a run calls it
 * before its first kernel, so the workers' wake-up overlaps the caller's work
 * instead of the first parallel_for waiting for it. One atomic load when no
 * worker sleeps; a no-op for NULL, one thread, or a pool whose workers never
 * spin (more threads than cores: a spinning worker would only steal a core). */
void krt_pool_wake(krt_pool *pool);

/* How long an idle worker spins before it sleeps, in ns (negative: the default,
 * 200 us). No-op for NULL, one thread, or more threads than cores (never spins). */
void krt_pool_set_spin(krt_pool *pool, int64_t ns);

/* kiln_ctx.parallel_for implementations. Both return 0, or 1 when fn is NULL
 * or n < 0. A parallel_for called from inside a task (or concurrently from
 * another thread) runs its loop serially on the calling thread. */
int32_t krt_pool_parallel_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n);
int32_t krt_serial_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n);

/* Pieces per range: at most 255 (the slot word's 8 bits). Four pieces a range let
 * the others absorb most of a slow thread's share while each call still runs a
 * quarter of it. */
#define KRT_POOL_SUBCHUNKS 4
/* How long a thread done with its range waits, at least, before it takes others'
 * pieces (threadpool.c's run_pieces; at most the pool's spin time, none without
 * spinning): longer than a worker's wake-up on a VM, far shorter than a time slice
 * another process takes. */
#define KRT_POOL_GRACE_NS 20000
/* A range whose first piece ran in less than this runs the rest of its pieces as
 * one call (threadpool.c's run_pieces). */
#define KRT_POOL_FINE_NS 5000

/* The static partition: chunk t of `chunks` over [0, n). */
void krt_chunk(int64_t n, int32_t chunks, int32_t t, int64_t *begin, int64_t *end);

#endif
