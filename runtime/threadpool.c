/* threadpool.c — persistent workers, static partition with stealing, epoch wake-up.
 *
 * Kernels are often sub-millisecond, so fork/join cost matters more than
 * anything clever. The caller publishes a task (fn, closure, n) and then one
 * 64-bit word, (generation << 16) | ranges, with a sequentially consistent
 * store; workers watch that word. A worker that saw no new word for SPIN_NS
 * (none when the pool has more threads than the process has cores: spinning
 * would only steal the CPU from the threads with work) goes to sleep on a
 * condition variable, announcing itself in `sleepers`; the
 * caller only takes the mutex to broadcast when someone sleeps. Both sides use
 * seq_cst on (word, sleepers) — store one, then load the other — so either the
 * caller sees the sleeper or the sleeper sees the new word: no lost wake-ups.
 *
 * The partition is static and contiguous: range t of [0, n) is thread t's (the
 * caller is thread 0), so a kernel run again touches the same data from the same
 * core. Each range is cut into up to KRT_POOL_SUBCHUNKS pieces. Its owner runs
 * them in order — the rest as one call after the first when the first was quick
 * (a short loop gains nothing from pieces and pays a call for each) —; a thread
 * done with its own range waits a grace period (its first piece's time, at least
 * KRT_POOL_GRACE_NS, at most the pool's spin time) and then takes the pieces still untaken in the others'
 * ranges, from their ends. So a worker that is asleep, preempted or slow (on a VM a
 * vCPU runs slow for milliseconds after it was idle) holds a call up by a piece,
 * not by its whole share, while a worker only a little late (waking up, a range a
 * little heavier) keeps its data, in its own cache, to itself: stealing at once
 * cost a recurrent model's few-microsecond matrix-vector steps 5-10%.
 *
 * Taking is lock-free on one word per range, its slot: (generation << 16) |
 * (end << 8) | next, the untaken pieces being [next, end). The caller never
 * writes the slots: the first taker of a new generation finds the slot at an
 * older one, reads the task's n, and installs the new generation with a CAS
 * (the owner taking piece 0, a thief the last). A generation's call cannot end
 * while any slot is older than it (every range has a piece, none yet taken), so a
 * CAS from an older slot proves the task still in flight and the n read before it
 * that task's; a taker that is late (its generation older than the slot's, or the
 * slot its own with nothing left) fails and never touches a newer task's fields.
 * Each thread counts the pieces it has run in its own line (`done`, written by it
 * alone: no read-modify-write on a shared line), and the caller waits until the
 * counts add up to every piece published so far (`expected`) before returning,
 * so task fields are never rewritten while anyone runs a piece;
 * threads that take no part (t >= ranges, carried in the word itself) never read
 * them.
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
#define CALLER_SPINS 1024  /* the caller spins this often on others' running pieces before yielding */
#define CHUNK_BITS 16
#define CHUNK_MASK ((uint64_t)0xffff)

typedef struct {
  uint64_t slot; /* atomic: (generation << 16) | (end << 8) | next — the untaken pieces of range `index` */
  krt_pool *pool;
  int32_t index; /* the range this thread owns: 0 the caller, 1..threads-1 a worker */
  pthread_t thread;
  /* atomic: pieces this thread has run, in all calls; written by this thread only. A
   * line of its own: the others poll it while this thread takes pieces from `slot` */
  uint64_t done __attribute__((aligned(64)));
} __attribute__((aligned(64))) krt_worker; /* two cache lines each; workers[0] is only the caller's */

struct krt_pool {
  /* The task, written by the caller before it publishes `word` (n atomic: a taker
   * reads it before its CAS proves it current, see above). */
  kiln_task_fn fn;
  void *closure;
  int64_t n;
  uint64_t generation; /* caller-only; 48 bits of it travel in `word` (never wraps in practice) */
  uint64_t expected;   /* caller-only: pieces of every call so far, the current one's included */
  int32_t threads;
  int32_t started;
  int64_t spin_ns; /* atomic: SPIN_NS or krt_pool_set_spin's; 0 when there are more threads than cores */
  int32_t busy; /* atomic: a parallel_for is in flight */
  krt_worker *workers;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  char pad0[64];
  uint64_t word; /* atomic: (generation << 16) | ranges */
  char pad1[64];
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

/* The pieces a range of len iterations is cut into. */
static int64_t pieces_of(int64_t len) { return len < KRT_POOL_SUBCHUNKS ? len : KRT_POOL_SUBCHUNKS; }

/* The pieces of range t of `ranges` over [0, n). */
static int64_t range_pieces(int64_t n, int32_t ranges, int32_t t) {
  int64_t b, e;
  krt_chunk(n, ranges, t, &b, &e);
  return pieces_of(e - b);
}

/* Takes a piece of range t for generation gen — the first untaken for its owner,
 * the last for a thief, so that the owner keeps walking its data in order —: its
 * index, or -1 when there is none (all taken, or the taker is late). */
static int32_t take(krt_pool *p, uint64_t gen, int32_t ranges, int32_t t, int thief) {
  krt_worker *w = &p->workers[t];
  uint64_t cur = __atomic_load_n(&w->slot, __ATOMIC_ACQUIRE), want;
  for (;;) {
    uint64_t g = cur >> CHUNK_BITS, next = cur & 0xff, end = (cur >> 8) & 0xff;
    int32_t piece;
    if (g > gen) return -1;
    if (g < gen) { /* the generation's first taker of this range */
      uint64_t k = (uint64_t)range_pieces(__atomic_load_n(&p->n, __ATOMIC_RELAXED), ranges, t);
      want = thief ? gen << CHUNK_BITS | (k - 1) << 8 : gen << CHUNK_BITS | k << 8 | 1;
      piece = thief ? (int32_t)k - 1 : 0;
    } else {
      if (next >= end) return -1;
      want = thief ? cur - 256 : cur + 1;
      piece = thief ? (int32_t)end - 1 : (int32_t)next;
    }
    if (__atomic_compare_exchange_n(&w->slot, &cur, want, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return piece;
  }
}

/* The owner takes all its range's untaken pieces at once: the first's index in
 * *first, and their count (0 when none is left). */
static int32_t take_rest(krt_pool *p, uint64_t gen, int32_t t, int32_t *first) {
  krt_worker *w = &p->workers[t];
  uint64_t cur = __atomic_load_n(&w->slot, __ATOMIC_ACQUIRE);
  while (cur >> CHUNK_BITS == gen && (cur & 0xff) < ((cur >> 8) & 0xff)) {
    uint64_t next = cur & 0xff, end = (cur >> 8) & 0xff;
    if (__atomic_compare_exchange_n(&w->slot, &cur, (cur & ~(uint64_t)0xff) | end, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      *first = (int32_t)next;
      return (int32_t)(end - next);
    }
  }
  return 0;
}

/* Runs pieces first..first+count-1 of range t as one call. */
static void run_span(krt_pool *p, int32_t ranges, int32_t t, int32_t first, int32_t count) {
  int64_t b, e, len, begin, end, unused;
  krt_chunk(p->n, ranges, t, &b, &e);
  len = e - b;
  int32_t pieces = (int32_t)pieces_of(len);
  krt_chunk(len, pieces, first, &begin, &unused);
  krt_chunk(len, pieces, first + count - 1, &unused, &end);
  p->fn(p->closure, b + begin, b + end);
}

/* Whether every piece published so far has run. */
static int all_done(krt_pool *p, uint64_t expected) {
  uint64_t sum = 0;
  for (int32_t t = 0; t < p->threads; t++) sum += __atomic_load_n(&p->workers[t].done, __ATOMIC_ACQUIRE);
  return sum == expected;
}

static void count_done(krt_worker *w, int32_t pieces) {
  __atomic_store_n(&w->done, __atomic_load_n(&w->done, __ATOMIC_RELAXED) + (uint64_t)pieces, __ATOMIC_RELEASE);
}

/* Thread `self`'s part in generation gen (see the top of the file); the caller
 * passes the count all_done waits for. After its own range a thread waits out the
 * grace period before it steals: the caller polling the workers' counts, a worker
 * only the word (which the caller writes once a call, so polling it costs the
 * caller nothing; a worker polling the caller's lines would slow each of its
 * writes there). */
static void run_pieces(krt_pool *p, uint64_t gen, int32_t ranges, int32_t self, uint64_t expected) {
  krt_worker *me = &p->workers[self];
  int32_t piece = take(p, gen, ranges, self, 0), done = 0, first, count;
  int64_t grace = KRT_POOL_GRACE_NS;
  if (piece >= 0) {
    int64_t t0 = now_ns();
    run_span(p, ranges, self, piece, 1);
    int64_t t1 = now_ns();
    done = 1;
    if (t1 - t0 > grace) grace = t1 - t0;
    if (t1 - t0 < KRT_POOL_FINE_NS) {
      if ((count = take_rest(p, gen, self, &first)) > 0) run_span(p, ranges, self, first, count), done += count;
    } else
      while ((piece = take(p, gen, ranges, self, 0)) >= 0) run_span(p, ranges, self, piece, 1), done++;
    count_done(me, done);
    if (ranges == 1 || (self == 0 && all_done(p, expected))) return;
    /* the grace spins at most as long as an idle worker would (the pool's spin time,
     * 200 us unless set), so a worker is never kept spinning longer after a call;
     * none with more threads than cores (no spinning): a thread waiting would only
     * keep the late one off a core, so it takes that one's pieces at once */
    int64_t t2 = now_ns(), spin = __atomic_load_n(&p->spin_ns, __ATOMIC_RELAXED);
    if (grace > spin) grace = spin;
    /* a worker still asleep (the first calls after idle) has not touched its range:
     * no cache of its own to keep, and a wake-up on a VM can take longer than the
     * grace — the caller takes its pieces now */
    for (uint32_t i = 1; grace > 0; i++) {
      if (self == 0 ? all_done(p, expected) : __atomic_load_n(&p->word, __ATOMIC_ACQUIRE) >> CHUNK_BITS != gen) return;
      if (self == 0 && __atomic_load_n(&p->sleepers, __ATOMIC_RELAXED) > 0) break;
      cpu_relax();
      if ((i & 63) == 0 && now_ns() - t2 > grace) break;
    }
  }
  int32_t stolen = 0;
  for (int32_t k = 1; k < ranges; k++)
    for (int32_t victim = (self + k) % ranges; (piece = take(p, gen, ranges, victim, 1)) >= 0; stolen++)
      run_span(p, ranges, victim, piece, 1);
  if (stolen) count_done(me, stolen);
}

static void *worker_main(void *arg) {
  krt_worker *self = arg;
  krt_pool *p = self->pool;
  uint64_t seen = 0; /* the word's value before any task: workers may start late */
  for (;;) {
    uint64_t word = wait_for_task(p, seen);
    if (word == seen) break;
    seen = word;
    int32_t ranges = (int32_t)(word & CHUNK_MASK);
    if (self->index < ranges) run_pieces(p, word >> CHUNK_BITS, ranges, self->index, 0);
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
  int32_t ranges = n < p->threads ? (int32_t)n : p->threads, pieces = 0;
  for (int32_t t = 0; t < ranges; t++) pieces += (int32_t)range_pieces(n, ranges, t);
  p->fn = fn;
  p->closure = closure;
  __atomic_store_n(&p->n, n, __ATOMIC_RELAXED);
  p->generation++;
  uint64_t expected = p->expected += (uint64_t)pieces;
  /* seq_cst (a release too): the task fields above are visible to whoever sees the word */
  __atomic_store_n(&p->word, p->generation << CHUNK_BITS | (uint64_t)ranges, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) {
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
  }
  run_pieces(p, p->generation, ranges, 0, expected);
  uint32_t spins = __atomic_load_n(&p->spin_ns, __ATOMIC_RELAXED) > 0 ? CALLER_SPINS : 0;
  for (uint32_t i = 0; !all_done(p, expected); i++) {
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
  for (int32_t i = 1; i <= p->started; i++) pthread_join(p->workers[i].thread, NULL);
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
  for (int32_t i = 0; i < threads; i++) {
    p->workers[i].pool = p;
    p->workers[i].index = i;
  }
  int rc = 0;
  for (int32_t i = 1; i < threads; i++) {
    krt_worker *w = &p->workers[i];
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
