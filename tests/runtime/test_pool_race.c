/* test_pool_race.c — the thread pool under ThreadSanitizer (built with
 * -fsanitize=thread from runtime/threadpool.c itself; the release build only: TSan
 * and the sanitizer build's ASan exclude each other).
 *
 * The pool's taking of pieces is lock-free (runtime/threadpool.c): slot words
 * installed by whichever thread comes first in a generation, per-thread done
 * counts, a grace period before stealing, sleeping workers' pieces taken at once.
 * test_runtime checks what it computes; this checks how, under a race detector:
 * calls of many sizes on 2 to 6 threads whose pieces sleep at random (so threads
 * steal from each other at every stage of a call), with pauses that let the workers
 * fall asleep, wake-up nudges, a pool that never spins, and nested calls. Each
 * call's every index must run exactly once; any data race TSan reports fails the
 * test (TSan's exit code 66 when it reported anything). ctest runs it through run_tsan.sh (a
 * kernel whose mmap randomization leaves gcc 12's TSan no room: again under setarch -R). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "krt_threadpool.h"

#define MAX_N 65536

typedef struct {
  int32_t *hits; /* atomic */
  uint32_t seed;
  const kiln_ctx *ctx; /* nested calls, when set */
} call_t;

static void task(void *closure, int64_t begin, int64_t end) {
  call_t *c = closure;
  for (int64_t i = begin; i < end; i++) __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
  unsigned s = (unsigned)begin * 7919u + c->seed;
  if (rand_r(&s) % 13 == 0) usleep((useconds_t)(rand_r(&s) % 300)); /* a slow piece: others steal */
  if (c->ctx) { /* a parallel_for inside a task runs serially on this thread */
    int32_t inner[4] = {0, 0, 0, 0};
    call_t ic = {inner, c->seed, NULL};
    c->ctx->parallel_for(c->ctx, task, &ic, 4);
    for (int k = 0; k < 4; k++)
      if (inner[k] != 1) __atomic_fetch_add(&c->hits[begin], 1000, __ATOMIC_RELAXED); /* shows as a miscount */
  }
}

int main(void) {
  int32_t *hits = calloc(MAX_N, sizeof *hits);
  long calls = 0;
  int bad = 0;
  for (int32_t threads = 2; threads <= 6; threads++) {
    krt_pool *pool = NULL;
    char msg[256];
    if (!CHECKF(krt_pool_create(threads, &pool, msg, sizeof msg) == KILN_OK, "pool of %d: %s", threads, msg)) continue;
    if (threads == 3) krt_pool_set_spin(pool, 0); /* never spins: no grace period, sleeps at once */
    kiln_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    krt_pool_bind(pool, &ctx);
    for (int rep = 0; rep < 600; rep++) {
      int64_t n = 1 + (rep * 37) % (rep % 4 == 0 ? MAX_N : 300);
      memset(hits, 0, (size_t)n * sizeof *hits);
      call_t c = {hits, (uint32_t)rep, rep % 29 == 5 ? &ctx : NULL};
      CHECK_INT(ctx.parallel_for(&ctx, task, &c, n), 0);
      calls++;
      for (int64_t i = 0; i < n; i++)
        if (hits[i] != 1) {
          bad++;
          printf("     threads=%d n=%lld: index %lld ran %d times\n", threads, (long long)n, (long long)i, hits[i]);
          break;
        }
      if (rep % 97 == 0) usleep(3000); /* past the spin: the workers sleep */
      if (rep % 50 == 1) krt_pool_wake(pool);
    }
    krt_pool_destroy(pool);
  }
  CHECKF(bad == 0, "%d of %ld calls ran an index other than once", bad, calls);
  free(hits);
  return check_finish("test_pool_race");
}
