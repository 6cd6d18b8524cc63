/* threadpool.c — persistent workers, static partition, epoch wake-up.
 *
 * Kernels are often sub-millisecond, so fork/join cost matters more than
 * anything clever. The caller publishes a task (fn, closure, n) and then one
 * 64-bit word, (generation << 16) | chunks, with a sequentially consistent
 * store; workers watch that word. A worker that saw no new word for SPIN_NS
 * (none when the pool has more threads than the process has cores: spinning
 * would only steal the CPU from the threads with work) goes to sleep on a
 * condition variable, announcing itself in `sleepers`; the
 * caller only takes the mutex to broadcast when someone sleeps. Both sides use
 * seq_cst on (word, sleepers) — store one, then load the other — so either the
 * caller sees the sleeper or the sleeper sees the new word: no lost wake-ups.
 *
 * The partition is static and contiguous: chunk t of [0, n) is thread t's
 * (the caller is thread 0), so a kernel run again touches the same data from
 * the same core. But a chunk belongs to whoever claims it first: a worker
 * claims its own chunk by raising claimed[t] to the current generation with a
 * CAS, and the caller, once done with chunk 0, claims whatever is still
 * unclaimed and runs it itself. A worker that is asleep, preempted or slow to
 * notice therefore never holds a call up — its chunk simply runs on the
 * caller — which matters on a loaded machine and for tiny loops. Claims only ever
 * grow, so a worker that wakes up a whole call late fails its claim and never
 * touches the fields of a newer task. `pending` counts the claimed-but-running
 * chunks other than 0, and the caller waits for it before returning, so task
 * fields are never rewritten while anyone runs a chunk; threads that take no
 * part (t >= chunks, carried in the word itself) never read them.
 * A `busy` flag makes nested or concurrent calls run serially instead of
 * corrupting the task in flight. Workers block all signals, so the
 * application's handlers run on its own threads. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krt.h"
#include "krt_threadpool.h"

#define SPIN_NS 200000     /* how long an idle worker spins before sleeping */
#define CALLER_SPINS 1024  /* the caller spins this often on running chunks before yielding */
#define CHUNK_BITS 16
#define CHUNK_MASK ((uint64_t)0xffff)

typedef struct {
  uint64_t claimed; /* atomic: last generation whose chunk `index` was claimed */
  krt_pool *pool;
  int32_t index; /* 1..threads-1: the chunk this worker owns */
  pthread_t thread;
} __attribute__((aligned(64))) krt_worker; /* one cache line each */

struct krt_pool {
  /* The task, written by the caller before it publishes `word`. */
  kiln_task_fn fn;
  void *closure;
  int64_t n;
  uint64_t generation; /* caller-only; 48 bits of it travel in `word` (never wraps in practice) */
  int32_t threads;
  int32_t started;
  int64_t spin_ns; /* atomic: SPIN_NS or krt_pool_set_spin's; 0 when there are more threads than cores */
  int32_t busy; /* atomic: a parallel_for is in flight */
  krt_worker *workers;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  char pad0[64];
  uint64_t word; /* atomic: (generation << 16) | chunks */
  char pad1[64];
  int32_t pending; /* atomic: chunks other than 0 not finished yet */
  char pad2[64];
  int32_t sleepers; /* atomic */
  int32_t stop;     /* atomic */
  uint32_t nudges;  /* atomic: bumped by krt_pool_wake, under lock */
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int32_t krt_online_cores(void) {
  long n = 0;
#ifdef CPU_COUNT
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
#endif
  if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0) n = 1;
  if (n > KILN_MAX_THREADS) n = KILN_MAX_THREADS;
  return (int32_t)n;
}

void krt_chunk(int64_t n, int32_t chunks, int32_t t, int64_t *begin, int64_t *end) {
  int64_t base = n / chunks, rem = n % chunks;
  *begin = t * base + (t < rem ? t : rem);
  *end = *begin + base + (t < rem ? 1 : 0);
}

/* Returns the next word different from `seen`, or `seen` itself on stop. A worker
 * spins for spin_ns, then sleeps; krt_pool_wake (a nudge, no task) sends it back to
 * spinning for another spin_ns, so that its wake-up overlaps the caller's own work. */
static uint64_t wait_for_task(krt_pool *p, uint64_t seen) {
  for (;;) {
    int64_t start = now_ns(), spin = __atomic_load_n(&p->spin_ns, __ATOMIC_RELAXED);
    for (uint32_t i = 1; spin > 0; i++) {
      uint64_t w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
      if (w != seen) return w;
      if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return seen;
      cpu_relax();
      if ((i & 127) == 0 && now_ns() - start > spin) break;
    }
    uint64_t w;
    pthread_mutex_lock(&p->lock);
    uint32_t nudges = __atomic_load_n(&p->nudges, __ATOMIC_RELAXED); /* written under the lock */
    __atomic_fetch_add(&p->sleepers, 1, __ATOMIC_SEQ_CST);
    while ((w = __atomic_load_n(&p->word, __ATOMIC_SEQ_CST)) == seen && !__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST) &&
           __atomic_load_n(&p->nudges, __ATOMIC_RELAXED) == nudges)
      pthread_cond_wait(&p->wake, &p->lock);
    __atomic_fetch_sub(&p->sleepers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&p->lock);
    if (w != seen || __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return w;
  }
}

/* Claims chunk w->index for generation gen; fails when it is already claimed
 * for gen, or for a later generation (the claimer is late). */
static int claim(krt_worker *w, uint64_t gen) {
  uint64_t cur = __atomic_load_n(&w->claimed, __ATOMIC_RELAXED);
  while (cur < gen)
    if (__atomic_compare_exchange_n(&w->claimed, &cur, gen, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return 1;
  return 0;
}

static void run_chunk(krt_pool *p, int32_t chunks, int32_t t) {
  int64_t begin, end;
  krt_chunk(p->n, chunks, t, &begin, &end);
  p->fn(p->closure, begin, end);
  __atomic_fetch_sub(&p->pending, 1, __ATOMIC_RELEASE);
}

static void *worker_main(void *arg) {
  krt_worker *self = arg;
  krt_pool *p = self->pool;
  uint64_t seen = 0; /* the word's value before any task: workers may start late */
  for (;;) {
    uint64_t word = wait_for_task(p, seen);
    if (word == seen) break;
    seen = word;
    int32_t chunks = (int32_t)(word & CHUNK_MASK);
    if (self->index < chunks && claim(self, word >> CHUNK_BITS)) run_chunk(p, chunks, self->index);
  }
  return NULL;
}

int32_t krt_serial_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) {
  (void)ctx;
  if (!fn || n < 0) return 1;
  if (n > 0) fn(closure, 0, n);
  return 0;
}

int32_t krt_pool_parallel_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) {
  if (!fn || n < 0) return 1;
  if (n == 0) return 0;
  krt_pool *p = ctx ? (krt_pool *)ctx->pool : NULL;
  if (!p || p->threads <= 1 || n == 1 || __atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE) != 0) {
    fn(closure, 0, n);
    return 0;
  }
  int32_t chunks = n < p->threads ? (int32_t)n : p->threads;
  p->fn = fn;
  p->closure = closure;
  p->n = n;
  p->generation++;
  __atomic_store_n(&p->pending, chunks - 1, __ATOMIC_RELAXED);
  __atomic_store_n(&p->word, p->generation << CHUNK_BITS | (uint64_t)chunks, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) {
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
  }
  int64_t begin, end;
  krt_chunk(n, chunks, 0, &begin, &end);
  fn(closure, begin, end);
  for (int32_t t = chunks - 1; t >= 1; t--)
    if (claim(&p->workers[t - 1], p->generation)) run_chunk(p, chunks, t);
  uint32_t spins = __atomic_load_n(&p->spin_ns, __ATOMIC_RELAXED) > 0 ? CALLER_SPINS : 0;
  for (uint32_t i = 0; __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0; i++) {
    if (i < spins) cpu_relax();
    else sched_yield();
  }
  __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
  return 0;
}

void krt_pool_set_spin(krt_pool *p, int64_t ns) {
  if (!p || p->threads <= 1 || p->threads > krt_online_cores()) return; /* never spins */
  __atomic_store_n(&p->spin_ns, ns < 0 ? SPIN_NS : ns, __ATOMIC_RELAXED);
}

void krt_pool_wake(krt_pool *p) {
  if (!p || p->threads <= 1 || __atomic_load_n(&p->spin_ns, __ATOMIC_RELAXED) <= 0 ||
      __atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) == 0)
    return;
  pthread_mutex_lock(&p->lock);
  __atomic_fetch_add(&p->nudges, 1, __ATOMIC_RELAXED);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
}

static void stop_workers(krt_pool *p) {
  __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&p->lock);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (int32_t i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
  p->started = 0;
}

kiln_status krt_pool_create(int32_t threads, krt_pool **out, char *msg, size_t msglen) {
  *out = NULL;
  if (threads < 1 || threads > KILN_MAX_THREADS) {
    snprintf(msg, msglen, "thread count %d is outside [1, %d]", threads, KILN_MAX_THREADS);
    return KILN_ERR_INVALID_ARGUMENT;
  }
  krt_pool *p = krt_aligned_alloc(sizeof *p);
  if (!p) {
    snprintf(msg, msglen, "out of memory for the thread pool");
    return KILN_ERR_NOMEM;
  }
  memset(p, 0, sizeof *p);
  p->threads = threads;
  p->spin_ns = threads <= krt_online_cores() ? SPIN_NS : 0;
  p->workers = krt_aligned_alloc((size_t)threads * sizeof *p->workers);
  if (p->workers) memset(p->workers, 0, (size_t)threads * sizeof *p->workers);
  if (!p->workers || pthread_mutex_init(&p->lock, NULL) != 0) {
    free(p->workers);
    free(p);
    snprintf(msg, msglen, "out of memory for the thread pool");
    return KILN_ERR_NOMEM;
  }
  if (pthread_cond_init(&p->wake, NULL) != 0) {
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p);
    snprintf(msg, msglen, "cannot create the thread pool's condition variable");
    return KILN_ERR_NOMEM;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (int32_t i = 1; i < threads; i++) {
    p->workers[i - 1].pool = p;
    p->workers[i - 1].index = i;
  }
  int rc = 0;
  for (int32_t i = 1; i < threads; i++) {
    krt_worker *w = &p->workers[i - 1];
    rc = pthread_create(&w->thread, NULL, worker_main, w);
    if (rc != 0) break;
    p->started++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    snprintf(msg, msglen, "cannot start worker thread %d of %d: %s", p->started + 1, threads - 1, strerror(rc));
    krt_pool_destroy(p);
    return KILN_ERR_LOAD;
  }
  *out = p;
  return KILN_OK;
}

void krt_pool_destroy(krt_pool *p) {
  if (!p) return;
  stop_workers(p);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->lock);
  free(p->workers);
  free(p);
}

int32_t krt_pool_threads(const krt_pool *p) { return p ? p->threads : 1; }

void krt_pool_bind(krt_pool *p, kiln_ctx *ctx) {
  ctx->pool = p;
  ctx->parallel_for = (p && p->threads > 1) ? krt_pool_parallel_for : krt_serial_for;
}
