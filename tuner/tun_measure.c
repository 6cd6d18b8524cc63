/* tun_measure.c — the measurer interface and the local measurer.
 *
 * The local measurer gives each candidate a forked child process. The child
 * builds it (tun_build: loop IR → LLVM → code loaded into that process through
 * ORC LLJIT) on the search core, tells the parent, waits for its turn, pins itself
 * to the measuring core and times the kernel: one warm-up call, a calibration of
 * how many calls make one repeat last min_repeat_ms, then repeats until the middle
 * half of them is within `spread` of their median (at least 3, at most
 * max_repeats); it reports the median and the repeats through a pipe. Everything
 * that can go wrong with a candidate goes wrong in its child: a build that LLVM
 * takes forever over (killed at build_timeout_s), a build or a kernel that crashes
 * (the signal, whatever handler the tuner runs with), a kernel that hangs (killed
 * at timeout_s), a kernel that returns non-zero — each becomes the candidate's
 * recorded error, and the tuner goes on.
 *
 * Builds and runs overlap: candidate i+1 compiles in its child on the search core
 * while candidate i measures on the measuring core (tun_pin_search splits the
 * cores); i+1 starts measuring only when i is done, so the measuring core runs one
 * kernel at a time. Kernels run on one thread (their parallel loops serially): a
 * tuned schedule is the fastest single-core schedule. Times are the measuring
 * thread's CPU time, so that a core shared with other processes still gives the
 * kernel's own time (preemption does not count; the caches they disturb still do).
 *
 * With threads > 1 a candidate is measured as a model run on that many threads
 * runs it: its parallel loops over the runtime's thread pool (krt_pool, the same
 * static split), the child free to use every core of the process, timed by the
 * wall clock — and nothing else runs meanwhile: the next candidate's build starts
 * only after this measurement ends, and the search waits for the batch. What one
 * core cannot show then counts: how the parallel loop splits the work, each core's
 * share of the weights, the pool's wake-ups — though not which core's cache holds
 * the input, which in a model run the previous kernel decides (a loop over one
 * kernel leaves a clean copy of it in every core's). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "krt_threadpool.h"
#include "tun_internal.h"

typedef struct local {
  tun_local_options o;
  int64_t count;
} local;

tun_local_options tun_local_defaults(void) {
  return (tun_local_options){.timeout_s = 10, .build_timeout_s = 15, .min_repeat_ms = 2, .max_repeats = 10,
                             .spread = 0.02, .measure_cpu = -1, .threads = 1};
}

int32_t tun_online_cores(void) { return krt_online_cores(); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The measuring thread's CPU time: time the core spent on another process (a
 * build, another user's job) does not count, so a shared core gives the kernel's
 * own time, as cli/peak.c measures the peak. */
static double cpu_s(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return now_s();
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int32_t serial_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) {
  (void)ctx;
  if (n > 0) fn(closure, 0, n);
  return 0;
}

/* What a child reports. */
enum { STATUS_NO_POOL = -1000 }; /* the measuring threads could not start */
typedef struct child_report {
  int32_t status;   /* 0 ran; else the kernel's non-zero return */
  int32_t n;
  double median;
  double costs[16];
} child_report;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The buffers evicted before each timed call (cold_weights): the kernel's constants. */
typedef struct cold_set {
  int32_t n;
  const void *p[32];
  size_t bytes[32];
} cold_set;

/* Writes back and invalidates every line of the regions in every cache of the
 * machine (coherent: the other cores' copies too), as TVM's cache flush does. */
static void evict(const cold_set *c) {
  for (int i = 0; i < c->n; i++)
    for (size_t o = 0; o < c->bytes[i]; o += 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_clflush((const char *)c->p[i] + o);
#elif defined(__aarch64__)
      __asm__ volatile("dc civac, %0" ::"r"((const char *)c->p[i] + o) : "memory");
#endif
    }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_mfence();
#elif defined(__aarch64__)
  __asm__ volatile("dsb ish" ::: "memory");
#endif
}

/* number calls of the kernel; their time by clock_s, without the evictions */
static double timed_calls(kiln_kernel_fn fn, void *const *bufs, const kiln_ctx *ctx, int64_t number,
                          const cold_set *cold, double (*clock_s)(void)) {
  if (!cold->n) {
    double t0 = clock_s();
    for (int64_t i = 0; i < number; i++) fn(bufs, ctx);
    return clock_s() - t0;
  }
  double t = 0;
  for (int64_t i = 0; i < number; i++) {
    evict(cold);
    double t0 = clock_s();
    fn(bufs, ctx);
    t += clock_s() - t0;
  }
  return t;
}

static void child_main(kiln_kernel_fn fn, void *const *bufs, const cold_set *cold, const tun_local_options *o,
                       int fd) {
  /* a crash is the candidate's: it ends this process by its signal, whatever
   * handler the tuner runs with (a sanitizer's prints a report and exits 1) */
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
  if (o->measure_cpu >= 0 && o->threads <= 1) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(o->measure_cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
  }
  kiln_ctx ctx = {.parallel_for = serial_for};
  child_report r;
  memset(&r, 0, sizeof r);
  /* threads > 1: the runtime's pool, timed by the wall clock (the workers' time is
   * not this thread's) */
  krt_pool *pool = NULL;
  char msg[128];
  if (o->threads > 1 && krt_pool_create(o->threads, &pool, msg, sizeof msg) != KILN_OK) {
    r.status = STATUS_NO_POOL;
    ssize_t w = write(fd, &r, sizeof r);
    (void)w;
    _exit(0);
  }
  if (pool) krt_pool_bind(pool, &ctx);
  double (*clock_s)(void) = pool ? now_s : cpu_s;
  r.status = fn(bufs, &ctx);
  if (r.status == 0) {
    /* calibrate: calls per repeat so that a repeat lasts min_repeat_ms */
    int64_t number = 1;
    for (;;) {
      double dt = timed_calls(fn, bufs, &ctx, number, cold, clock_s);
      if (dt * 1e3 >= o->min_repeat_ms || number >= (1 << 20)) break;
      int64_t want = dt > 0 ? (int64_t)(number * (o->min_repeat_ms * 1e-3 / dt) * 1.2) + 1 : number * 8;
      number = want > number * 8 ? number * 8 : want > number ? want : number + 1;
    }
    int32_t max = o->max_repeats < 3 ? 3 : o->max_repeats > 16 ? 16 : o->max_repeats;
    double sorted[16];
    while (r.n < max) {
      r.costs[r.n++] = timed_calls(fn, bufs, &ctx, number, cold, clock_s) / (double)number;
      if (r.n < 3) continue;
      memcpy(sorted, r.costs, sizeof sorted[0] * (size_t)r.n);
      qsort(sorted, (size_t)r.n, sizeof sorted[0], cmp_double);
      double q1 = sorted[r.n / 4], q3 = sorted[(3 * r.n) / 4 - ((3 * r.n) % 4 == 0)], med = sorted[r.n / 2];
      r.median = med;
      if (med > 0 && (q3 - q1) / med <= o->spread) break;
    }
    memcpy(sorted, r.costs, sizeof sorted[0] * (size_t)r.n);
    qsort(sorted, (size_t)r.n, sizeof sorted[0], cmp_double);
    r.median = sorted[r.n / 2];
  }
  ssize_t w = write(fd, &r, sizeof r);
  (void)w;
  _exit(0);
}

/* The buffers of a kernel: inputs (constants' data, else seeded random floats in
 * [-1, 1) and integer zeros, which index element 0 of any table), outputs and
 * workspace, 64-byte aligned. */
static void **make_buffers(const lower_kernel *k, uint64_t seed) {
  int32_t n = k->n_in + k->n_out + k->n_ws;
  void **b = calloc((size_t)n + 1, sizeof *b);
  if (!b) return NULL;
  for (int i = 0; i < n; i++) {
    int64_t bytes;
    const gir_value *v = i < k->n_in ? k->in[i] : i < k->n_in + k->n_out ? k->out[i - k->n_in] : NULL;
    bytes = v ? gir_value_nbytes(v) : k->ws_bytes[i - k->n_in - k->n_out];
    size_t sz = (size_t)((bytes + 63) / 64 * 64 + 64);
    b[i] = aligned_alloc(64, sz);
    if (!b[i]) goto fail;
    memset(b[i], 0, sz);
    if (i >= k->n_in || !v) continue;
    if (v->data) {
      memcpy(b[i], v->data, (size_t)bytes);
    } else if (v->dtype == GIR_F32) {
      float *f = b[i];
      for (int64_t e = 0; e < bytes / 4; e++) f[e] = (float)(tun_rand01(&seed) * 2 - 1);
    } else if (v->dtype == GIR_F64) {
      double *f = b[i];
      for (int64_t e = 0; e < bytes / 8; e++) f[e] = tun_rand01(&seed) * 2 - 1;
    }
  }
  return b;
fail:
  for (int i = 0; i < n; i++) free(b[i]);
  free(b);
  return NULL;
}

typedef struct flight {
  pid_t pid;
  int up, go; /* the child's reports; its go signal */
  double started;
  tun_measure_result *out;
} flight;

/* What a child says when its build is done. */
typedef struct build_note {
  int32_t ok;
  double build_s;
  char msg[150];
} build_note;

/* Reads n bytes from fd until deadline (wall seconds); returns the bytes read
 * (fewer: end of file or time out, *timed_out says which). */
static size_t read_until(int fd, void *buf, size_t n, double deadline, int *timed_out) {
  size_t got = 0;
  *timed_out = 0;
  while (got < n) {
    int ms = (int)((deadline - now_s()) * 1e3);
    if (ms < 0) ms = 0; /* past the deadline: only what is already written counts */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int pr = poll(&p, 1, ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      *timed_out = 1;
      break;
    }
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  return got;
}

/* Ends a child: killed if it must be, reaped; the reason it died when it died. */
static void reap(flight *f, int kill_it, char *why, size_t n) {
  if (kill_it) kill(f->pid, SIGKILL);
  int status = 0;
  while (waitpid(f->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (why && WIFSIGNALED(status))
    snprintf(why, n, "crashed: signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (why)
    snprintf(why, n, "the measuring process exited with status %d before reporting",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  close(f->up);
  if (f->go >= 0) close(f->go);
  f->pid = 0;
}

/* Waits for the child in flight (measuring) and fills its result. */
static void land(const local *l, flight *f) {
  if (f->pid <= 0) return;
  child_report r;
  int timed_out;
  size_t got = read_until(f->up, &r, sizeof r, f->started + l->o.timeout_s, &timed_out);
  tun_measure_result *o = f->out;
  char why[160];
  reap(f, timed_out, why, sizeof why);
  o->run_s = now_s() - f->started;
  o->cost = -1;
  if (timed_out) snprintf(o->error, sizeof o->error, "timed out after %.1f s (killed)", l->o.timeout_s);
  else if (got < sizeof r) snprintf(o->error, sizeof o->error, "%s", why);
  else if (r.status == STATUS_NO_POOL)
    snprintf(o->error, sizeof o->error, "could not start %d measuring threads", l->o.threads);
  else if (r.status != 0) snprintf(o->error, sizeof o->error, "the kernel returned %d", r.status);
  else {
    o->cost = r.median;
    o->n_costs = r.n;
    memcpy(o->costs, r.costs, sizeof r.costs);
  }
}

/* The child: builds the candidate (on the search core, where the parent runs),
 * says so, waits for its turn on the measuring core, measures. A build that
 * crashes or never ends takes only this process with it. */
static void child_build_and_run(const local *l, const tun_target *t, const tun_measure_input *in, int64_t number,
                                int up, int go) {
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
  build_note note;
  memset(&note, 0, sizeof note);
  double t0 = now_s();
  tun_kernel k;
  gir_err berr = {{0}};
  note.ok = tun_build_lower(in->task, t, in->values, &k, &berr) == 0 && tun_build_jit(&k, t, &berr) == 0;
  void **bufs = note.ok ? make_buffers(&k.k, 0x5eed + (uint64_t)in->task->id) : NULL;
  if (note.ok && !bufs) note.ok = 0, snprintf(berr.msg, sizeof berr.msg, "out of memory");
  note.build_s = now_s() - t0;
  snprintf(note.msg, sizeof note.msg, "%.149s", berr.msg);
  ssize_t w = write(up, &note, sizeof note);
  (void)w;
  char c;
  if (!note.ok || read(go, &c, 1) != 1) _exit(0);
  kiln_kernel_fn fn = k.fn;
  if (l->o.sabotage) {
    kiln_kernel_fn s = l->o.sabotage(l->o.sabotage_ctx, number);
    if (s) fn = s;
  }
  cold_set cold = {0};
  for (int i = 0; l->o.cold_weights && i < k.k.n_in && cold.n < 32; i++)
    if (k.k.in[i]->data) cold.p[cold.n] = bufs[i], cold.bytes[cold.n++] = (size_t)gir_value_nbytes(k.k.in[i]);
  child_main(fn, bufs, &cold, &l->o, up);
}

static int local_measure(void *self, const tun_target *t, const tun_measure_input *in, int32_t n,
                         tun_measure_result *out, gir_err *err) {
  local *l = self;
  flight f = {0};
  for (int i = 0; i < n; i++) {
    tun_measure_result *o = &out[i];
    memset(o, 0, sizeof *o);
    o->cost = -1;
    int64_t number = l->count++;
    /* measuring on every core: the previous candidate's measurement ends before this build starts */
    if (l->o.threads > 1) land(l, &f);
    int up[2], go[2];
    if (pipe(up) < 0) return gir_errf(err, "measure: pipe: %s", strerror(errno));
    if (pipe(go) < 0) {
      close(up[0]), close(up[1]);
      return gir_errf(err, "measure: pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      close(up[0]);
      close(go[1]);
      if (f.pid > 0) close(f.up), close(f.go); /* the previous child's pipes are the parent's business */
      child_build_and_run(l, t, &in[i], number, up[1], go[0]);
    }
    close(up[1]);
    close(go[0]);
    if (pid < 0) {
      close(up[0]), close(go[1]);
      return gir_errf(err, "measure: fork: %s", strerror(errno));
    }
    flight c = {pid, up[0], go[1], now_s(), o};
    /* its build, while the previous candidate measures */
    build_note note;
    int timed_out;
    size_t got = read_until(c.up, &note, sizeof note, c.started + l->o.build_timeout_s, &timed_out);
    o->build_s = now_s() - c.started;
    if (got < sizeof note || !note.ok) {
      char why[160];
      reap(&c, timed_out, why, sizeof why);
      if (timed_out) snprintf(o->error, sizeof o->error, "build: timed out after %.0f s (killed)", l->o.build_timeout_s);
      else if (got < sizeof note) snprintf(o->error, sizeof o->error, "build %.150s", why);
      else snprintf(o->error, sizeof o->error, "build: %.150s", note.msg);
      continue;
    }
    o->build_s = note.build_s;
    land(l, &f); /* the previous candidate's measurement ends before this one's starts */
    c.started = now_s();
    char go_byte = 'g';
    if (write(c.go, &go_byte, 1) != 1) {
      reap(&c, 1, NULL, 0);
      snprintf(o->error, sizeof o->error, "measure: the worker went away");
      continue;
    }
    close(c.go);
    c.go = -1;
    f = c;
  }
  land(l, &f);
  return 0;
}

static void local_free(void *self) { free(self); }

tun_measurer *tun_local_measurer(const tun_local_options *o, gir_err *err) {
  tun_measurer *m = calloc(1, sizeof *m);
  local *l = calloc(1, sizeof *l);
  if (!m || !l) {
    free(m);
    free(l);
    gir_errf(err, "out of memory");
    return NULL;
  }
  l->o = o ? *o : tun_local_defaults();
  if (l->o.timeout_s <= 0) l->o.timeout_s = 10;
  if (l->o.min_repeat_ms <= 0) l->o.min_repeat_ms = 2;
  if (l->o.build_timeout_s <= 0) l->o.build_timeout_s = 15;
  m->self = l;
  m->name = "local";
  m->measure = local_measure;
  m->free = local_free;
  return m;
}

int tun_pin_search(int32_t *measure_cpu, char *buf, size_t n) {
  cpu_set_t set;
  *measure_cpu = -1;
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) {
    snprintf(buf, n, "one core: search and measurement take turns on it");
    return 0;
  }
  int first = -1, second = -1;
  for (int c = 0; c < CPU_SETSIZE && second < 0; c++)
    if (CPU_ISSET(c, &set)) {
      if (first < 0) first = c;
      else second = c;
    }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    snprintf(buf, n, "could not pin the search (%s): cores shared", strerror(errno));
    return 0;
  }
  *measure_cpu = second;
  snprintf(buf, n, "search and compilation on core %d, measurement on core %d (sched_setaffinity)", first, second);
  return 1;
}
