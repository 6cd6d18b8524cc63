/* idle_run.c — bench/idle.py's driver: how long is kiln's first run after the process
 * has been idle, against a warm run? And what does waking the thread pool cost?
 *
 * Built by bench/idle.py with the host cc against the build's libkiln_runtime.a (only
 * runtime/kiln.h and runtime/krt_threadpool.h are used; nothing here is part of kiln).
 *
 *   idle_run run BUNDLE [--threads N] [--runs R] [--warmup W] [--idle-us U] [--profile 1] [--spin-us S]
 *     opens the bundle, fills every float input with seeded uniform [-1, 1) data and
 *     every integer input with zeros, runs W untimed runs, then R timed runs, sleeping
 *     U microseconds (nanosleep) before each one (U = 0: back to back, warm). Prints
 *     one line: "times_us T1 T2 ... TR" (each kiln_model_run, CLOCK_MONOTONIC). With
 *     --profile 1 the runtime's per-kernel timing is on, and one more line per kernel
 *     follows: "kernel NAME K1 ... KR" (its microseconds in each run).
 *
 *   idle_run wake [--threads N] [--runs R] [--idle-us U]
 *     the pool alone: a pool of N threads, then R times: sleep U us, then one
 *     parallel_for over N items whose task records when each chunk starts and on which
 *     thread. Prints "wake_us W1 ... WR" (publish to the first chunk run by a worker
 *     thread, -1 when the caller ran every chunk itself), "call_us C1 ... CR" (the whole
 *     parallel_for) and "stolen K" (calls where the caller ran a worker's chunk). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln.h"
#include "krt_threadpool.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(int64_t us) {
  if (us <= 0) return;
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static uint64_t rng_state = 42;
static float uniform(void) { /* splitmix64 → [-1, 1) */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

typedef struct {
  long threads, runs, warmup, idle_us, profile, spin_us;
} opts;

static int parse(int argc, char **argv, int first, opts *o) {
  o->threads = 2, o->runs = 30, o->warmup = 3, o->idle_us = 0, o->profile = 0, o->spin_us = -1;
  for (int i = first; i < argc; i++) {
    long *dst = !strcmp(argv[i], "--threads") ? &o->threads
                : !strcmp(argv[i], "--runs")  ? &o->runs
                : !strcmp(argv[i], "--warmup") ? &o->warmup
                : !strcmp(argv[i], "--idle-us") ? &o->idle_us
                : !strcmp(argv[i], "--profile") ? &o->profile
                : !strcmp(argv[i], "--spin-us") ? &o->spin_us
                                                : NULL;
    if (!dst || i + 1 >= argc) {
      fprintf(stderr, "idle_run: unknown option or missing value: %s\n", argv[i]);
      return -1;
    }
    *dst = strtol(argv[++i], NULL, 10);
  }
  if (o->runs < 1 || o->threads < 0 || o->warmup < 0 || o->idle_us < 0) {
    fprintf(stderr, "idle_run: bad numbers\n");
    return -1;
  }
  return 0;
}

static int cmd_run(const char *bundle, const opts *o) {
  kiln_options ko;
  kiln_options_init(&ko);
  ko.threads = (int32_t)o->threads;
  kiln_model *m = NULL;
  char err[1024];
  if (kiln_model_open(bundle, &ko, &m, err, sizeof err) != KILN_OK) {
    fprintf(stderr, "idle_run: %s\n", err);
    return 1;
  }
  if (o->spin_us >= 0 && kiln_model_set_spin_us(m, o->spin_us) != KILN_OK) {
    fprintf(stderr, "idle_run: %s\n", kiln_model_last_error(m));
    return 1;
  }
  for (int32_t i = 0; i < kiln_model_input_count(m); i++) {
    kiln_tensor_info info;
    kiln_model_input_info(m, i, &info);
    void *data = calloc((size_t)info.bytes + 1, 1);
    if (!data) return 1;
    if (info.dtype == KILN_DTYPE_FLOAT32)
      for (int64_t k = 0; k < info.elements; k++) ((float *)data)[k] = uniform();
    if (kiln_model_set_input(m, info.name, info.dtype, info.rank, info.dims, data, (size_t)info.bytes) != KILN_OK) {
      fprintf(stderr, "idle_run: %s\n", kiln_model_last_error(m));
      return 1;
    }
    free(data);
  }
  for (long i = 0; i < o->warmup; i++)
    if (kiln_model_run(m) != KILN_OK) {
      fprintf(stderr, "idle_run: %s\n", kiln_model_last_error(m));
      return 1;
    }
  int32_t nk = kiln_model_kernel_count(m);
  double *per_kernel = calloc((size_t)nk * (size_t)o->runs + 1, sizeof *per_kernel);
  if (!per_kernel) return 1;
  if (o->profile) kiln_model_set_profile(m, 1);
  printf("times_us");
  for (long i = 0; i < o->runs; i++) {
    if (o->profile) kiln_model_profile_reset(m);
    sleep_us(o->idle_us);
    int64_t t0 = now_ns();
    if (kiln_model_run(m) != KILN_OK) {
      fprintf(stderr, "idle_run: %s\n", kiln_model_last_error(m));
      return 1;
    }
    printf(" %.2f", (double)(now_ns() - t0) / 1e3);
    const kiln_kernel_profile *pr;
    int32_t n;
    if (o->profile && kiln_model_profile(m, &pr, &n) == KILN_OK)
      for (int32_t k = 0; k < n && k < nk; k++) per_kernel[(size_t)k * (size_t)o->runs + (size_t)i] = pr[k].total_ns / 1e3;
  }
  printf("\n");
  if (o->profile) {
    const kiln_kernel_profile *pr;
    int32_t n;
    kiln_model_profile(m, &pr, &n);
    for (int32_t k = 0; k < n && k < nk; k++) {
      printf("kernel %s", pr[k].name);
      for (long i = 0; i < o->runs; i++) printf(" %.2f", per_kernel[(size_t)k * (size_t)o->runs + (size_t)i]);
      printf("\n");
    }
  }
  free(per_kernel);
  kiln_model_close(m);
  return 0;
}

typedef struct {
  pthread_t caller;
  int64_t first_worker_ns; /* atomic: when a worker thread first ran a chunk */
  int32_t stolen;          /* atomic: chunks other than 0 run by the caller */
} probe;

static void probe_task(void *c, int64_t begin, int64_t end) {
  probe *p = c;
  int64_t t = now_ns();
  if (pthread_equal(pthread_self(), p->caller)) {
    if (begin > 0) __atomic_fetch_add(&p->stolen, 1, __ATOMIC_RELAXED);
  } else {
    int64_t zero = 0;
    __atomic_compare_exchange_n(&p->first_worker_ns, &zero, t, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  }
  /* a little work, so the caller does not finish its own chunk before anyone wakes */
  volatile double x = 0;
  for (int64_t i = begin; i < end; i++)
    for (int k = 0; k < 200000; k++) x += k * 1e-9; /* ~0.3-0.8 ms: longer than a wake-up */
}

static int cmd_wake(const opts *o) {
  int32_t threads = o->threads > 0 ? (int32_t)o->threads : krt_online_cores();
  krt_pool *pool = NULL;
  char msg[256];
  if (krt_pool_create(threads, &pool, msg, sizeof msg) != KILN_OK) {
    fprintf(stderr, "idle_run: %s\n", msg);
    return 1;
  }
  kiln_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  krt_pool_bind(pool, &ctx);
  double *wake = calloc((size_t)o->runs, sizeof *wake), *call = calloc((size_t)o->runs, sizeof *call);
  int stolen_calls = 0;
  for (long i = 0; i < o->runs; i++) {
    sleep_us(o->idle_us);
    probe p = {pthread_self(), 0, 0};
    int64_t t0 = now_ns();
    ctx.parallel_for(&ctx, probe_task, &p, threads);
    int64_t t1 = now_ns();
    wake[i] = p.first_worker_ns ? (double)(p.first_worker_ns - t0) / 1e3 : -1;
    call[i] = (double)(t1 - t0) / 1e3;
    if (p.stolen) stolen_calls++;
  }
  printf("wake_us");
  for (long i = 0; i < o->runs; i++) printf(" %.2f", wake[i]);
  printf("\ncall_us");
  for (long i = 0; i < o->runs; i++) printf(" %.2f", call[i]);
  printf("\nstolen %d\n", stolen_calls);
  free(wake);
  free(call);
  krt_pool_destroy(pool);
  return 0;
}

int main(int argc, char **argv) {
  opts o;
  if (argc >= 3 && !strcmp(argv[1], "run")) {
    if (parse(argc, argv, 3, &o) < 0) return 2;
    return cmd_run(argv[2], &o);
  }
  if (argc >= 2 && !strcmp(argv[1], "wake")) {
    if (parse(argc, argv, 2, &o) < 0) return 2;
    return cmd_wake(&o);
  }
  fprintf(stderr, "usage: idle_run run BUNDLE [--threads N] [--runs R] [--warmup W] [--idle-us U]\n"
                  "       idle_run wake [--threads N] [--runs R] [--idle-us U]\n");
  return 2;
}
