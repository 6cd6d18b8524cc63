/* tir_eval_gpu.c — the interpreter's emulation of a GPU launch, so that the loop
 * IR of a GPU schedule (loops bound to blockIdx / threadIdx, TIR_BARRIER, SHARED
 * buffers; semantics in tir.h) can be run on the CPU and compared with the
 * reference, with what a GPU would do differently — races, divergent barriers,
 * out-of-bounds shared accesses — reported as errors.
 *
 * The structure it accepts (the rules a GPU code generator follows):
 * - A launch is the nest of blockIdx loops that the serial interpreter meets
 *   first: blockIdx loops, possibly with LETs between them, each kind at most
 *   once, at the top of the nest. What lies under the innermost one is the
 *   block body, run by every thread of every block; it holds no blockIdx loop.
 *   LET values between block loops are evaluated once, unchecked for races.
 * - A threadIdx loop outside any blockIdx loop is an error (tir.h: block loops
 *   enclose every thread loop), as is a barrier outside the block body.
 * - Every bound loop has min 0 and a constant extent (no variable, no load);
 *   the launch's dimension along a kind is the largest extent bound to it. A
 *   threadIdx loop of kind k appears at most once on any path (blockIdx.x ->
 *   threadIdx.y -> threadIdx.x -> body, never threadIdx.x inside threadIdx.x):
 *   in a thread whose index along k is c it runs one iteration (var = c) when c
 *   is below its extent, none otherwise. A block holds at most 1024 threads
 *   (64 along z), as on CUDA GPUs.
 * - Code of the block body outside the thread loops is run by every thread
 *   (redundantly: it may only compute values or store what all threads store).
 *
 * How it runs: blocks one after another (block loops iterate serially; blocks
 * share only GLOBAL buffers). In a block, each thread has its own environment
 * (a copy of the variables, its own LOCAL buffers) and the block body runs as
 * a phased interpreter: a statement without a barrier runs thread by thread,
 * in thread order; a SEQ runs its children in turn; a BARRIER ends a phase; a
 * loop holding a barrier must have the same bounds in every thread ("barrier in
 * a loop whose trip count differs between threads") and runs iteration by
 * iteration across the threads; an IF holding one must take the same branch in
 * every thread ("barrier in divergent code"; so must a threadIdx loop holding
 * one: its extent must be the block's dimension); LET and ALLOCATE holding one
 * bind in each thread. SHARED buffers are allocated once per block, zeroed,
 * when the first thread reaches their ALLOCATE.
 *
 * Warp shuffles (TIR_SHUFFLE) are run like barriers: a statement holding one is
 * reached by the block's threads together (the same checks: no divergent if,
 * loop or smaller threadIdx loop around it — stricter than a GPU, which asks it
 * of a warp's lanes only), and before the statement runs, each shuffle in its own
 * expressions (let value, store, if condition, loop bounds; inner shuffles first)
 * has its operand evaluated in every thread, and each thread gets the value its
 * source lane computed (warps: 32 consecutive linear thread indices; a block
 * holding a shuffle is whole warps). A shuffle under an if_then_else's branch is
 * divergent: an error.
 *
 * Warp matrix operations (TIR_WMMA) run like barriers too (the block's threads
 * reach them together): their operands (fragment numbers, memory index) are
 * evaluated in every thread and must be the same in every lane of a warp ("wmma in
 * divergent code" otherwise); each warp's operation then runs once, as its lane 0
 * (memory accesses checked for races and bounds as that thread's), and the fragment
 * it writes is copied to each lane's FRAGMENT buffer (per thread, like LOCAL ones:
 * every lane holds the whole tile). The MMA rounds A and B to TF32 and sums in f32
 * (tir_round_tf32), so results match a GPU's up to the order of the sums.
 *
 * Races: each SHARED and GLOBAL buffer the launch touches gets a shadow array
 * (16 bytes an element, malloc'ed for the launch and freed at its end) holding
 * the last writer and reader of each element and their phases. Two accesses
 * to one element by different threads, one of them a store, are a race when
 * they fall in the same phase of one block ("race between barriers") or in
 * different blocks ("race between blocks": nothing orders blocks). A store
 * that leaves the element's bytes as they were races with nothing: so threads
 * may all store the same value (redundant code), and then any thread of the
 * block may read it in that phase (the emulator does not tell which threads
 * were among the writers). A read of shared memory that no thread of the block
 * wrote is reported at the end of the block, unless a race is found first (the
 * write may come later in the phase: that is the race). Loads and stores out
 * of bounds fail as in the serial interpreter, the message naming the block and
 * thread. The work budget counts every thread's work. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tir_eval_gpu.h"

enum { MAX_THREADS = 1024, MAX_THREADS_Z = 64, WARP = 32, MAX_SHUFFLES = 16 };

/* An element's last accesses. Ids: 0 none; > 0 one thread, 1 + block * threads
 * + thread; -1 threads of several blocks; <= -2 several threads of block -id-2. */
typedef struct shadow {
  int32_t w, w_phase, r, r_phase;
} shadow;

typedef struct launch launch;

struct tir_gpu_thread {
  tir_env env;
  launch *L;
  int32_t t;        /* linear index in the block */
  int64_t c[3];     /* threadIdx.x, y, z */
  /* the shuffles of the statement being run: their results in this lane */
  const tir_expr *shfl[MAX_SHUFFLES];
  tir_value shfl_val[MAX_SHUFFLES];
  int32_t n_shfl;
};

struct launch {
  tir_env *env;        /* the launching (serial) environment */
  int64_t grid[3];     /* blocks along x, y, z */
  int64_t dim[3];      /* threads along x, y, z */
  int32_t nthreads;
  int64_t bidx[3], block; /* the running block: its index and linear id */
  int32_t phase;       /* numbers the phases of the launch, every block's included */
  int64_t gen;         /* numbers the blocks run, for SHARED buffers' first allocation */
  struct tir_gpu_thread *th;
  shadow **gshadow;    /* by buffer id: GLOBAL (and SHARED bound outside) buffers' shadows */
  void **smem;         /* by buffer id: SHARED buffers' memory */
  shadow **sshadow;    /* by buffer id: SHARED buffers' shadows */
  int64_t *sgen;       /* by buffer id: the block (gen) that last allocated it */
  int64_t shared_bytes;
  int uninit;          /* a read of unwritten shared memory is pending (message in uninit_msg) */
  char uninit_msg[512];
};

static const char *const kind_names[6] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};
static const char *kind_name(tir_for_kind k) { return kind_names[k - TIR_BLOCK_X]; }
static int axis(tir_for_kind k) { return (int)(k - TIR_BLOCK_X) % 3; }

/* Reports an error in env (the first one wins), like the serial interpreter. */
__attribute__((format(printf, 2, 3))) static int failf(tir_env *env, const char *fmt, ...) {
  if (!env->failed) {
    char msg[sizeof env->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gir_errf(env->err, "%s", msg);
  }
  env->failed = 1;
  return -1;
}

/* --- static checks --- */

/* 1 if e reads no variable and no buffer (its value is the same everywhere). */
static int is_constant(const tir_expr *e) {
  switch (e->kind) {
  case TIR_INT: case TIR_FLOAT: return 1;
  case TIR_VAR: case TIR_LOAD: return 0;
  case TIR_UNARY: return is_constant(e->u.un.a);
  case TIR_BINARY: return is_constant(e->u.bin.a) && is_constant(e->u.bin.b);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    return is_constant(e->u.sel.c) && is_constant(e->u.sel.a) && is_constant(e->u.sel.b);
  case TIR_CAST: case TIR_BITCAST: return is_constant(e->u.cast.a);
  case TIR_RAMP: return is_constant(e->u.ramp.base) && is_constant(e->u.ramp.stride);
  case TIR_BROADCAST: return is_constant(e->u.bcast.value);
  case TIR_DOT4: return is_constant(e->u.dot4.acc) && is_constant(e->u.dot4.a) && is_constant(e->u.dot4.b);
  default: return 0;
  }
}

/* The extent of bound loop s, checked: min 0, a constant extent >= 0. -1 on error. */
static int64_t bound_extent(tir_env *env, const tir_stmt *s) {
  const char *name = kind_name(s->u.loop.kind);
  if (!is_constant(s->u.loop.min) || !is_constant(s->u.loop.extent))
    return failf(env, "%s loop over %s: its min and extent must be constants", name, s->u.loop.var->name);
  int64_t min = tir_eval_expr(env, s->u.loop.min, 0).i, extent = tir_eval_expr(env, s->u.loop.extent, 0).i;
  if (env->failed) return -1;
  if (min != 0) return failf(env, "%s loop over %s starts at %lld, not 0", name, s->u.loop.var->name, (long long)min);
  if (extent < 0) return failf(env, "%s loop over %s has a negative extent %lld", name, s->u.loop.var->name, (long long)extent);
  return extent;
}

/* Checks the block body s (no blockIdx loop; no threadIdx kind twice on a path:
 * `mask` holds the kinds bound above) and records the thread dimensions. */
static int scan_body(launch *L, const tir_stmt *s, unsigned mask) {
  if (!s) return 0;
  switch (s->kind) {
  case TIR_FOR: {
    tir_for_kind k = s->u.loop.kind;
    if (tir_for_kind_is_block(k))
      return failf(L->env, "%s loop over %s below a statement other than a blockIdx loop or a let: the block loops of a "
                   "launch form one nest at its top", kind_name(k), s->u.loop.var->name);
    if (tir_for_kind_is_gpu(k)) {
      unsigned bit = 1u << axis(k);
      if (mask & bit)
        return failf(L->env, "%s loop over %s nested inside another %s loop: a thread kind is bound at most once on a path",
                     kind_name(k), s->u.loop.var->name, kind_name(k));
      int64_t extent = bound_extent(L->env, s);
      if (extent < 0) return -1;
      if (extent > L->dim[axis(k)]) L->dim[axis(k)] = extent;
      mask |= bit;
    }
    return scan_body(L, s->u.loop.body, mask);
  }
  case TIR_LET: return scan_body(L, s->u.let.body, mask);
  case TIR_IF: return scan_body(L, s->u.ifs.then_s, mask) < 0 ? -1 : scan_body(L, s->u.ifs.else_s, mask);
  case TIR_ALLOCATE: return scan_body(L, s->u.alloc.body, mask);
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++)
      if (scan_body(L, s->u.seq.s[i], mask) < 0) return -1;
    return 0;
  default: return 0;
  }
}

/* Checks the nest of block loops from s down to the block body (returned in
 * *body) and records the grid. */
static int scan_nest(launch *L, const tir_stmt *s, const tir_stmt **body) {
  unsigned seen = 0;
  for (;;) {
    if (s && s->kind == TIR_FOR && tir_for_kind_is_block(s->u.loop.kind)) {
      int a = axis(s->u.loop.kind);
      if (seen & (1u << a))
        return failf(L->env, "%s loop over %s nested inside another %s loop", kind_name(s->u.loop.kind),
                     s->u.loop.var->name, kind_name(s->u.loop.kind));
      seen |= 1u << a;
      int64_t extent = bound_extent(L->env, s);
      if (extent < 0) return -1;
      L->grid[a] = extent;
      s = s->u.loop.body;
    } else if (s && s->kind == TIR_LET) {
      s = s->u.let.body;
    } else {
      *body = s;
      return scan_body(L, s, 0);
    }
  }
}

/* --- threads --- */

static int64_t shadow_block(const launch *L, int32_t id) {
  return id > 0 ? (id - 1) / L->nthreads : id <= -2 ? -(int64_t)id - 2 : -1;
}

/* "(x,y,z)" of linear index i in a box of extents d. */
static void coords(char *out, size_t n, int64_t i, const int64_t d[3]) {
  snprintf(out, n, "(%lld,%lld,%lld)", (long long)(i % d[0]), (long long)(i / d[0] % d[1]), (long long)(i / d[0] / d[1]));
}

/* Who shadow id `id` is, for messages: "thread (x,y,z)" (of its block when `block`). */
static void who(const launch *L, char *out, size_t n, int32_t id, int block) {
  char b[64], t[64];
  if (id == -1) {
    snprintf(out, n, "threads of several blocks");
    return;
  }
  coords(b, sizeof b, shadow_block(L, id), L->grid);
  if (id <= -2) {
    snprintf(out, n, "several threads of block %s", b);
    return;
  }
  coords(t, sizeof t, (id - 1) % L->nthreads, L->dim);
  if (block) snprintf(out, n, "thread %s of block %s", t, b);
  else snprintf(out, n, "thread %s", t);
}

static int race(tir_env *env, const launch *L, const tir_buffer *buf, int64_t ix, int32_t me, int writes, int32_t other,
                int other_wrote) {
  int cross = shadow_block(L, other) != L->block;
  char a[160], b[160], blk[64];
  who(L, a, sizeof a, me, cross);
  who(L, b, sizeof b, other, cross);
  coords(blk, sizeof blk, L->block, L->grid);
  const char *scope = buf->scope == TIR_SHARED ? "shared" : "global";
  if (cross)
    return failf(env, "race between blocks on %s buffer %s[%lld]: %s %s it, %s %s it in the same launch (blocks are not "
                 "synchronized)", scope, buf->name, (long long)ix, a, writes ? "writes" : "reads", b,
                 other_wrote ? "wrote" : "read");
  return failf(env, "race between barriers on %s buffer %s[%lld] in block %s: %s %s it, %s %s it in the same phase", scope,
               buf->name, (long long)ix, blk, a, writes ? "writes" : "reads", b, other_wrote ? "wrote" : "read");
}

/* The shadow of buf for the running block (allocated on first use); *block_shared
 * says whether buf is a SHARED buffer the block allocated. */
static shadow *shadow_of(tir_env *env, launch *L, const tir_buffer *buf, int *block_shared) {
  *block_shared = buf->scope == TIR_SHARED && L->sshadow[buf->id] && L->sgen[buf->id] == L->gen;
  if (*block_shared) return L->sshadow[buf->id];
  if (!L->gshadow[buf->id]) {
    L->gshadow[buf->id] = calloc(buf->size > 0 ? (size_t)buf->size : 1, sizeof(shadow));
    if (!L->gshadow[buf->id]) failf(env, "out of memory for the race shadow of %s", buf->name);
  }
  return L->gshadow[buf->id];
}

int tir_gpu_access(tir_env *env, const tir_buffer *buf, void *data, int64_t ix, const tir_value *stored) {
  struct tir_gpu_thread *th = env->gpu;
  launch *L = th->L;
  int block_shared;
  shadow *sh = shadow_of(env, L, buf, &block_shared);
  if (!sh) return -1;
  sh += ix;
  int32_t me = (int32_t)(1 + L->block * L->nthreads + th->t), several = (int32_t)(-2 - L->block);
  int32_t phase = L->phase;
  int64_t block = L->block;
  /* other's access conflicts with this thread's in this phase */
#define CONFLICTS(other, other_phase) \
  ((other) != 0 && (other) != me && ((other) == -1 || shadow_block(L, other) != block || (other_phase) == phase))
  if (!stored) {
    if (sh->w == 0 && block_shared && !L->uninit) {
      char t[160];
      who(L, t, sizeof t, me, 0);
      L->uninit = 1;
      snprintf(L->uninit_msg, sizeof L->uninit_msg,
               "%s reads shared buffer %s[%lld], which no thread of its block wrote (shared memory starts "
               "uninitialized on a GPU)", t, buf->name, (long long)ix);
    }
    /* reads of what several threads stored alike in this phase are allowed (see above) */
    if (CONFLICTS(sh->w, sh->w_phase) && !(sh->w == several)) return race(env, L, buf, ix, me, 0, sh->w, 1);
    if (sh->r == 0 || sh->r == me) sh->r = me;
    else if (sh->r != -1) {
      if (shadow_block(L, sh->r) != block) sh->r = -1;
      else if (sh->r_phase != phase) sh->r = me; /* earlier phases' reads are ordered before */
      else sh->r = several;
    }
    sh->r_phase = phase;
    return 0;
  }
  size_t elem = gir_dtype_size(buf->dtype);
  unsigned char now[16];
  if (gir_dtype_is_float(buf->dtype)) gir_store_f64(buf->dtype, now, 0, stored->f);
  else gir_store_i64(buf->dtype, now, 0, stored->i);
  int unchanged = elem <= sizeof now && !memcmp(now, (unsigned char *)data + (size_t)ix * elem, elem);
  int cw = CONFLICTS(sh->w, sh->w_phase), cr = CONFLICTS(sh->r, sh->r_phase);
  if (!unchanged && cw) return race(env, L, buf, ix, me, 1, sh->w, 1);
  if (!unchanged && cr) return race(env, L, buf, ix, me, 1, sh->r, 0);
  if (cw) sh->w = sh->w == -1 || shadow_block(L, sh->w) != block ? -1 : several;
  else sh->w = me;
  sh->w_phase = phase;
  return 0;
#undef CONFLICTS
}

void *tir_gpu_shared(tir_env *env, const tir_buffer *buf) {
  launch *L = env->gpu->L;
  int32_t id = buf->id;
  if (buf->scope != TIR_SHARED) {
    failf(env, "allocation of global buffer %s inside a GPU launch", buf->name);
    return NULL;
  }
  size_t elem = gir_dtype_size(buf->dtype), n = buf->size > 0 ? (size_t)buf->size : 1;
  if (!L->smem[id]) {
    L->smem[id] = calloc(n, elem);
    L->sshadow[id] = calloc(n, sizeof(shadow));
    if (!L->smem[id] || !L->sshadow[id]) {
      failf(env, "out of memory allocating shared buffer %s", buf->name);
      return NULL;
    }
    L->shared_bytes += (int64_t)(n * elem);
    L->sgen[id] = L->gen;
  } else if (L->sgen[id] != L->gen) {
    memset(L->smem[id], 0, n * elem);
    memset(L->sshadow[id], 0, n * sizeof(shadow));
    L->sgen[id] = L->gen;
  }
  return L->smem[id];
}

/* Work on thread th's environment begins: it counts on the launch's budget. */
static void thread_begin(launch *L, struct tir_gpu_thread *th) {
  th->env.work = L->env->work;
  th->env.budget = L->env->budget;
}

/* ... and ends: -1 if it failed, the message then naming the block and thread
 * (a race's names both threads already). */
static int thread_end(launch *L, struct tir_gpu_thread *th) {
  L->env->work = th->env.work;
  if (!th->env.failed) return 0;
  if (!L->env->failed && strncmp(th->env.err->msg, "race between", strlen("race between"))) {
    char b[64], t[64];
    coords(b, sizeof b, L->block, L->grid);
    coords(t, sizeof t, th->t, L->dim);
    gir_err_prefix(th->env.err, "block %s thread %s", b, t);
  }
  L->env->failed = 1;
  return -1;
}

static int each_thread(launch *L, const tir_stmt *s) {
  for (int32_t t = 0; t < L->nthreads; t++) {
    thread_begin(L, &L->th[t]);
    tir_eval_run(&L->th[t].env, s);
    if (thread_end(L, &L->th[t]) < 0) return -1;
  }
  return 0;
}

/* The value of e in every thread (into v). */
static int eval_each(launch *L, const tir_expr *e, tir_value *v) {
  for (int32_t t = 0; t < L->nthreads; t++) {
    thread_begin(L, &L->th[t]);
    v[t] = tir_eval_expr(&L->th[t].env, e, 0);
    if (thread_end(L, &L->th[t]) < 0) return -1;
  }
  return 0;
}

/* A failure of the block as a whole (not of one thread). */
__attribute__((format(printf, 2, 3))) static int block_fail(launch *L, const char *fmt, ...) {
  if (!L->env->failed) {
    char msg[sizeof L->env->err->msg], b[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    coords(b, sizeof b, L->block, L->grid);
    gir_errf(L->env->err, "block %s: %s", b, msg);
  }
  L->env->failed = 1;
  return -1;
}

static int phased(launch *L, const tir_stmt *s);

/* Binds var in every thread to vals[t] (or the thread's index along `along` when
 * vals is NULL), runs body phased, restores the variable. */
static int phased_bind(launch *L, const tir_var *v, const tir_value *vals, int along, const tir_stmt *body) {
  if (v->id < 0 || v->id >= L->env->n_vars) return block_fail(L, "variable id out of range: %s", v->name);
  tir_value *saved = malloc(sizeof *saved * (size_t)L->nthreads);
  if (!saved) return block_fail(L, "out of memory");
  for (int32_t t = 0; t < L->nthreads; t++) {
    saved[t] = L->th[t].env.vars[v->id];
    L->th[t].env.vars[v->id] = vals ? vals[t] : (tir_value){.i = L->th[t].c[along]};
  }
  int rc = phased(L, body);
  for (int32_t t = 0; t < L->nthreads; t++) L->th[t].env.vars[v->id] = saved[t];
  free(saved);
  return rc;
}

/* A loop holding a barrier: the same bounds in every thread, run iteration by
 * iteration across them. */
static int phased_for(launch *L, const tir_stmt *s) {
  tir_for_kind k = s->u.loop.kind;
  const tir_var *v = s->u.loop.var;
  if (tir_for_kind_is_block(k)) return block_fail(L, "%s loop inside a block body", kind_name(k));
  if (tir_for_kind_is_gpu(k)) {
    int64_t extent = tir_eval_expr(L->env, s->u.loop.extent, 0).i; /* a constant (scan_body) */
    if (L->env->failed) return -1;
    if (extent < L->dim[axis(k)])
      return block_fail(L, "barrier in divergent code: a %s loop of extent %lld, in a block of %lld threads along %c, "
                        "holds a barrier or a warp shuffle", kind_name(k), (long long)extent, (long long)L->dim[axis(k)],
                        'x' + axis(k));
    return phased_bind(L, v, NULL, axis(k), s->u.loop.body);
  }
  tir_value *mins = malloc(sizeof *mins * (size_t)L->nthreads * 2);
  if (!mins) return block_fail(L, "out of memory");
  tir_value *exts = mins + L->nthreads;
  int rc = eval_each(L, s->u.loop.min, mins);
  if (rc == 0) rc = eval_each(L, s->u.loop.extent, exts);
  for (int32_t t = 1; rc == 0 && t < L->nthreads; t++)
    if (mins[t].i != mins[0].i || exts[t].i != exts[0].i) {
      char a[64], b[64];
      coords(a, sizeof a, 0, L->dim);
      coords(b, sizeof b, t, L->dim);
      rc = block_fail(L, "barrier in a loop whose trip count differs between threads (a barrier or a warp shuffle): loop "
                      "over %s runs [%lld, +%lld) in "
                      "thread %s, [%lld, +%lld) in thread %s", v->name, (long long)mins[0].i, (long long)exts[0].i, a,
                      (long long)mins[t].i, (long long)exts[t].i, b);
    }
  int64_t min = mins[0].i, extent = exts[0].i;
  free(mins);
  if (rc < 0) return -1;
  if (v->id < 0 || v->id >= L->env->n_vars) return block_fail(L, "variable id out of range: %s", v->name);
  tir_value *vals = malloc(sizeof *vals * (size_t)L->nthreads);
  if (!vals) return block_fail(L, "out of memory");
  for (int64_t i = 0; rc == 0 && i < extent; i++) {
    for (int32_t t = 0; t < L->nthreads; t++) vals[t].i = (int64_t)((uint64_t)min + (uint64_t)i);
    rc = phased_bind(L, v, vals, 0, s->u.loop.body);
  }
  free(vals);
  return rc;
}

/* --- warp shuffles --- */

tir_value tir_gpu_shuffled(tir_env *env, const tir_expr *e) {
  struct tir_gpu_thread *th = env->gpu;
  for (int32_t i = 0; i < th->n_shfl; i++)
    if (th->shfl[i] == e) return th->shfl_val[i];
  failf(env, "a warp shuffle where the emulator cannot run it (in a statement other than a let, store, if or loop "
        "bounds)");
  return (tir_value){.i = 0};
}

/* Computes the shuffles in e (inner ones first) across the block's threads: each
 * thread's result is the value its source lane computed, recorded in the thread for
 * tir_gpu_shuffled. `cond` is 1 under a branch of an if_then_else (lanes may skip it:
 * an error). */
static int prepare_shuffles(launch *L, const tir_expr *e, int cond) {
  if (!e || !tir_expr_has_shuffle(e)) return 0;
  switch (e->kind) {
  case TIR_LOAD: return prepare_shuffles(L, e->u.load.index, cond);
  case TIR_UNARY: return prepare_shuffles(L, e->u.un.a, cond);
  case TIR_BINARY: return prepare_shuffles(L, e->u.bin.a, cond) < 0 ? -1 : prepare_shuffles(L, e->u.bin.b, cond);
  case TIR_SELECT: case TIR_IF_THEN_ELSE: {
    int lazy = e->kind == TIR_IF_THEN_ELSE;
    if (prepare_shuffles(L, e->u.sel.c, cond) < 0 || prepare_shuffles(L, e->u.sel.a, cond || lazy) < 0) return -1;
    return prepare_shuffles(L, e->u.sel.b, cond || lazy);
  }
  case TIR_CAST: case TIR_BITCAST: return prepare_shuffles(L, e->u.cast.a, cond);
  case TIR_SHUFFLE: break;
  default: return block_fail(L, "a warp shuffle inside a vector expression");
  }
  if (cond) return block_fail(L, "warp shuffle in divergent code: under a branch of an if_then_else");
  if (L->nthreads % WARP)
    return block_fail(L, "warp shuffle in a block of %d threads: a block holding one is made of whole warps of %d",
                      L->nthreads, WARP);
  if (prepare_shuffles(L, e->u.shfl.value, 0) < 0) return -1;
  tir_value *v = malloc(sizeof *v * (size_t)L->nthreads);
  if (!v) return block_fail(L, "out of memory");
  int rc = eval_each(L, e->u.shfl.value, v);
  for (int32_t t = 0; rc == 0 && t < L->nthreads; t++) {
    struct tir_gpu_thread *th = &L->th[t];
    int32_t lane = t % WARP, off = e->u.shfl.offset;
    int32_t src = e->u.shfl.mode == TIR_SHFL_XOR ? t - lane + (lane ^ off) : lane + off < WARP ? t + off : t;
    int32_t i = 0;
    while (i < th->n_shfl && th->shfl[i] != e) i++;
    if (i == MAX_SHUFFLES) rc = block_fail(L, "more than %d warp shuffles in one statement", MAX_SHUFFLES);
    else {
      th->shfl[i] = e;
      th->shfl_val[i] = v[src];
      if (i == th->n_shfl) th->n_shfl++;
    }
  }
  free(v);
  return rc;
}

/* The shuffles in statement s's own expressions (not its children's), prepared. */
static int prepare_stmt(launch *L, const tir_stmt *s) {
  for (int32_t t = 0; t < L->nthreads; t++) L->th[t].n_shfl = 0;
  switch (s->kind) {
  case TIR_FOR: return prepare_shuffles(L, s->u.loop.min, 0) < 0 ? -1 : prepare_shuffles(L, s->u.loop.extent, 0);
  case TIR_LET: return prepare_shuffles(L, s->u.let.value, 0);
  case TIR_IF: return prepare_shuffles(L, s->u.ifs.cond, 0);
  case TIR_STORE: return prepare_shuffles(L, s->u.store.index, 0) < 0 ? -1 : prepare_shuffles(L, s->u.store.value, 0);
  default: return 0;
  }
}

/* --- warp matrix operations (TIR_WMMA) --- */

static const char *const wmma_names[5] = {"fill", "load_a", "load_b", "mma", "store"};

/* Fragment i of FRAGMENT buffer f in env's thread, or NULL (reported). */
static float *wmma_frag(tir_env *env, const tir_buffer *f, int64_t i) {
  float *d = f->id >= 0 && f->id < env->n_buffers ? env->bufs[f->id] : NULL;
  int64_t e = tir_frag_elems(f->frag);
  if (!d) return failf(env, "wmma on fragment buffer %s, which is not allocated", f->name), NULL;
  if (f->scope != TIR_FRAGMENT || f->frag == TIR_FRAG_NONE || f->dtype != GIR_F32)
    return failf(env, "wmma on buffer %s, which is not an f32 fragment buffer", f->name), NULL;
  if (i < 0 || (i + 1) * e > f->size)
    return failf(env, "wmma on fragment %lld of %s, which holds %lld", (long long)i, f->name, (long long)(f->size / e)),
           NULL;
  return d + i * e;
}

/* Element (r, c) of the memory tile of wmma s, at `index` (row-major). */
static int64_t wmma_offset(const tir_stmt *s, int64_t index, int r, int c) { return index + (int64_t)r * s->u.wmma.ldm + c; }

/* The memory of wmma s in env (bound, f32), or NULL (reported). */
static float *wmma_mem(tir_env *env, const tir_stmt *s) {
  const tir_buffer *m = s->u.wmma.mem;
  float *data = m->id >= 0 && m->id < env->n_buffers ? env->bufs[m->id] : NULL;
  if (!data) return failf(env, "wmma.%s of unbound buffer %s", wmma_names[s->u.wmma.op], m->name), NULL;
  if (m->dtype != GIR_F32 || (m->scope != TIR_GLOBAL && m->scope != TIR_SHARED))
    return failf(env, "wmma.%s of %s: memory must be f32, global or shared", wmma_names[s->u.wmma.op], m->name), NULL;
  return data;
}

/* Runs wmma s once for a warp, as its lane 0 (env; memory accesses checked for races as
 * that thread's): op[] holds the fragment number, MMA's two operand numbers and index. */
static int wmma_exec(tir_env *env, const tir_stmt *s, const int64_t op[4]) {
  tir_wmma_op k = s->u.wmma.op;
  tir_frag role = k == TIR_WMMA_LOAD_A ? TIR_FRAG_A : k == TIR_WMMA_LOAD_B ? TIR_FRAG_B : TIR_FRAG_ACC;
  if (s->u.wmma.frag->frag != role || (k == TIR_WMMA_MMA && (s->u.wmma.fa->frag != TIR_FRAG_A || s->u.wmma.fb->frag != TIR_FRAG_B)))
    return failf(env, "wmma.%s on fragments of the wrong role (%s)", wmma_names[k], s->u.wmma.frag->name);
  float *d = wmma_frag(env, s->u.wmma.frag, op[0]);
  if (!d) return -1;
  if (k == TIR_WMMA_FILL) {
    for (int e = 0; e < TIR_WMMA_M * TIR_WMMA_N; e++) d[e] = (float)s->u.wmma.value;
    return 0;
  }
  if (k == TIR_WMMA_MMA) { /* TF32 inputs (exact products in f32), f32 sums */
    const float *a = wmma_frag(env, s->u.wmma.fa, op[1]), *b = wmma_frag(env, s->u.wmma.fb, op[2]);
    if (!a || !b) return -1;
    for (int i = 0; i < TIR_WMMA_M; i++)
      for (int j = 0; j < TIR_WMMA_N; j++) {
        float acc = d[i * TIR_WMMA_N + j];
        for (int q = 0; q < TIR_WMMA_K; q++)
          acc += tir_round_tf32(a[i * TIR_WMMA_K + q]) * tir_round_tf32(b[q * TIR_WMMA_N + j]);
        d[i * TIR_WMMA_N + j] = acc;
      }
    env->work += TIR_WMMA_M * TIR_WMMA_N * TIR_WMMA_K;
    return 0;
  }
  float *data = wmma_mem(env, s);
  if (!data) return -1;
  const tir_buffer *m = s->u.wmma.mem;
  int rows = k == TIR_WMMA_LOAD_B ? TIR_WMMA_K : TIR_WMMA_M, cols = k == TIR_WMMA_LOAD_A ? TIR_WMMA_K : TIR_WMMA_N;
  if (op[3] % 8 || s->u.wmma.ldm % 4)
    return failf(env, "wmma.%s of %s at %lld, ldm %lld: a tile starts 32-byte aligned, its rows 16", wmma_names[k], m->name,
                 (long long)op[3], (long long)s->u.wmma.ldm);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      int64_t ix = wmma_offset(s, op[3], r, c);
      if (ix < 0 || ix >= m->size)
        return failf(env, "wmma.%s of %s: element %lld out of bounds [0, %lld)", wmma_names[k], m->name, (long long)ix,
                     (long long)m->size);
      if (k == TIR_WMMA_STORE) {
        tir_value v = {.f = d[r * cols + c]};
        if (tir_gpu_access(env, m, data, ix, &v) < 0) return -1;
        data[ix] = d[r * cols + c];
      } else {
        if (tir_gpu_access(env, m, data, ix, NULL) < 0) return -1;
        d[r * cols + c] = data[ix];
      }
    }
  env->work += rows * cols;
  return 0;
}

/* TIR_WMMA across the block: its operands evaluated in every thread, the same in every
 * lane of a warp (else an error: the operation is warp-collective), run once per warp;
 * the fragment written is then the same in each of the warp's lanes. */
static int phased_wmma(launch *L, const tir_stmt *s) {
  const char *name = wmma_names[s->u.wmma.op];
  if (L->nthreads % WARP)
    return block_fail(L, "wmma.%s in a block of %d threads: a block holding one is made of whole warps of %d", name,
                      L->nthreads, WARP);
  const tir_expr *ex[4] = {s->u.wmma.fi, s->u.wmma.ia, s->u.wmma.ib, s->u.wmma.index};
  static const char *const what[4] = {"fragment", "A fragment", "B fragment", "memory index"};
  tir_value *v = calloc((size_t)L->nthreads * 4, sizeof *v);
  if (!v) return block_fail(L, "out of memory");
  int rc = 0;
  for (int k = 0; k < 4 && rc == 0; k++)
    if (ex[k]) rc = eval_each(L, ex[k], v + (size_t)k * (size_t)L->nthreads);
  for (int32_t w = 0; rc == 0 && w < L->nthreads; w += WARP) {
    int64_t op[4];
    for (int k = 0; k < 4; k++) op[k] = v[(size_t)k * (size_t)L->nthreads + (size_t)w].i;
    for (int32_t t = w + 1; rc == 0 && t < w + WARP; t++)
      for (int k = 0; k < 4 && rc == 0; k++)
        if (v[(size_t)k * (size_t)L->nthreads + (size_t)t].i != op[k]) {
          char a[64], b[64];
          coords(a, sizeof a, w, L->dim);
          coords(b, sizeof b, t, L->dim);
          rc = block_fail(L, "warp-collective wmma.%s in divergent code: its %s is %lld in thread %s and %lld in thread "
                          "%s of the same warp (every lane of a warp must run it together, with the same operands)",
                          name, what[k], (long long)op[k], a, (long long)v[(size_t)k * (size_t)L->nthreads + (size_t)t].i,
                          b);
        }
    if (rc < 0) break;
    struct tir_gpu_thread *th = &L->th[w];
    thread_begin(L, th);
    wmma_exec(&th->env, s, op);
    if ((rc = thread_end(L, th)) < 0) break;
    if (s->u.wmma.op == TIR_WMMA_STORE) continue;
    const tir_buffer *f = s->u.wmma.frag;
    int64_t e = tir_frag_elems(f->frag);
    const float *src = (const float *)th->env.bufs[f->id] + op[0] * e;
    for (int32_t t = w + 1; rc == 0 && t < w + WARP; t++) {
      float *dst = L->th[t].env.bufs[f->id];
      if (!dst) rc = block_fail(L, "fragment buffer %s is not allocated in every lane", f->name);
      else memcpy(dst + op[0] * e, src, (size_t)e * sizeof *src);
    }
  }
  free(v);
  return rc;
}

static int phased(launch *L, const tir_stmt *s) {
  if (L->env->failed) return -1;
  if (!s) return 0;
  if (!tir_stmt_has_sync(s)) return each_thread(L, s);
  if (prepare_stmt(L, s) < 0) return -1;
  switch (s->kind) {
  case TIR_STORE: return each_thread(L, s);
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++)
      if (phased(L, s->u.seq.s[i]) < 0) return -1;
    return 0;
  case TIR_WMMA: return phased_wmma(L, s);
  case TIR_BARRIER:
    if (L->phase == INT32_MAX) return block_fail(L, "too many barriers to emulate");
    L->phase++;
    return 0;
  case TIR_FOR: return phased_for(L, s);
  case TIR_IF: {
    tir_value *c = malloc(sizeof *c * (size_t)L->nthreads);
    if (!c) return block_fail(L, "out of memory");
    int rc = eval_each(L, s->u.ifs.cond, c);
    int32_t diff = 0;
    for (int32_t t = 1; rc == 0 && t < L->nthreads && !diff; t++)
      if (!c[t].i != !c[0].i) diff = t;
    int taken = rc == 0 && c[0].i != 0;
    free(c);
    if (rc < 0) return -1;
    if (diff) {
      char a[64], b[64];
      coords(a, sizeof a, 0, L->dim);
      coords(b, sizeof b, diff, L->dim);
      return block_fail(L, "barrier in divergent code: the condition of an if holding a barrier or a warp shuffle is %s in "
                        "thread %s and %s in thread %s", taken ? "true" : "false", a, taken ? "false" : "true", b);
    }
    return phased(L, taken ? s->u.ifs.then_s : s->u.ifs.else_s);
  }
  case TIR_LET: {
    tir_value *v = malloc(sizeof *v * (size_t)L->nthreads);
    if (!v) return block_fail(L, "out of memory");
    int rc = eval_each(L, s->u.let.value, v);
    if (rc == 0) rc = phased_bind(L, s->u.let.var, v, 0, s->u.let.body);
    free(v);
    return rc;
  }
  case TIR_ALLOCATE: {
    const tir_buffer *buf = s->u.alloc.buf;
    void **saved = malloc(sizeof *saved * (size_t)L->nthreads);
    if (!saved) return block_fail(L, "out of memory");
    int rc = 0;
    int32_t bound = 0;
    for (; bound < L->nthreads; bound++) {
      struct tir_gpu_thread *th = &L->th[bound];
      thread_begin(L, th);
      void *mem = tir_eval_alloc(&th->env, buf);
      if ((rc = thread_end(L, th)) < 0) break;
      saved[bound] = th->env.bufs[buf->id];
      th->env.bufs[buf->id] = mem;
    }
    if (rc == 0) rc = phased(L, s->u.alloc.body);
    for (int32_t t = 0; t < bound; t++) L->th[t].env.bufs[buf->id] = saved[t];
    free(saved);
    return rc;
  }
  default: return block_fail(L, "a barrier where the emulator cannot run it");
  }
}

/* --- launches --- */

/* Runs the block body once per thread of the block whose index is L->bidx. */
static int run_block(launch *L, const tir_stmt *body) {
  L->block = L->bidx[0] + L->grid[0] * (L->bidx[1] + L->grid[1] * L->bidx[2]);
  L->gen++;
  if (L->phase == INT32_MAX) return block_fail(L, "too many barriers to emulate");
  L->phase++;
  L->uninit = 0;
  tir_env *env = L->env;
  for (int32_t t = 0; t < L->nthreads; t++) {
    tir_env *te = &L->th[t].env;
    memcpy(te->vars, env->vars, sizeof *te->vars * ((size_t)env->n_vars + 1));
    memcpy(te->bufs, env->bufs, sizeof *te->bufs * ((size_t)env->n_buffers + 1));
    te->failed = 0;
  }
  if (phased(L, body) < 0) return -1;
  if (L->uninit) return block_fail(L, "%s", L->uninit_msg);
  return 0;
}

/* Walks the nest of block loops (checked by scan_nest) down to the body. */
static int run_nest(launch *L, const tir_stmt *s, const tir_stmt *body) {
  tir_env *env = L->env;
  if (s == body) return run_block(L, body);
  const tir_var *v = s->kind == TIR_FOR ? s->u.loop.var : s->u.let.var;
  if (v->id < 0 || v->id >= env->n_vars) return failf(env, "variable id out of range: %s", v->name);
  tir_value saved = env->vars[v->id];
  int rc = 0;
  if (s->kind == TIR_LET) {
    tir_value x = tir_eval_expr(env, s->u.let.value, 0);
    if (env->failed) return -1;
    env->vars[v->id] = x;
    rc = run_nest(L, s->u.let.body, body);
  } else {
    int a = axis(s->u.loop.kind);
    for (int64_t i = 0; rc == 0 && i < L->grid[a]; i++) {
      env->vars[v->id] = (tir_value){.i = i};
      L->bidx[a] = i;
      rc = run_nest(L, s->u.loop.body, body);
    }
    L->bidx[a] = 0;
  }
  env->vars[v->id] = saved;
  return rc;
}

static int launch_run(tir_env *env, const tir_stmt *s) {
  launch L = {.env = env, .grid = {1, 1, 1}, .dim = {1, 1, 1}};
  const tir_stmt *body = NULL;
  if (scan_nest(&L, s, &body) < 0) return -1;
  if (L.dim[0] > MAX_THREADS || L.dim[1] > MAX_THREADS || L.dim[2] > MAX_THREADS_Z ||
      L.dim[0] * L.dim[1] * L.dim[2] > MAX_THREADS)
    return failf(env, "a block of %lld x %lld x %lld threads: a GPU block holds at most %d (%d along z)",
                 (long long)L.dim[0], (long long)L.dim[1], (long long)L.dim[2], MAX_THREADS, MAX_THREADS_Z);
  L.nthreads = (int32_t)(L.dim[0] * L.dim[1] * L.dim[2]);
  double blocks = (double)L.grid[0] * (double)L.grid[1] * (double)L.grid[2];
  if (blocks * L.nthreads >= (double)(INT32_MAX / 2))
    return failf(env, "a launch of %.0f blocks of %d threads: too large to emulate", blocks, L.nthreads);
  env->n_launches++;
  env->last_launch = (tir_gpu_geometry){{L.grid[0], L.grid[1], L.grid[2]}, {L.dim[0], L.dim[1], L.dim[2]}, 0};

  int rc = -1;
  size_t nb = (size_t)env->n_buffers + 1, nv = (size_t)env->n_vars + 1;
  L.th = calloc((size_t)L.nthreads, sizeof *L.th);
  L.gshadow = calloc(nb, sizeof *L.gshadow);
  L.smem = calloc(nb, sizeof *L.smem);
  L.sshadow = calloc(nb, sizeof *L.sshadow);
  L.sgen = calloc(nb, sizeof *L.sgen);
  int ok = L.th && L.gshadow && L.smem && L.sshadow && L.sgen;
  for (int32_t t = 0; ok && t < L.nthreads; t++) {
    struct tir_gpu_thread *th = &L.th[t];
    th->L = &L;
    th->t = t;
    th->c[0] = t % L.dim[0];
    th->c[1] = t / L.dim[0] % L.dim[1];
    th->c[2] = t / L.dim[0] / L.dim[1];
    tir_env *te = &th->env;
    te->scratch = env->scratch;
    te->n_vars = env->n_vars;
    te->n_buffers = env->n_buffers;
    te->err = env->err;
    te->gpu = th;
    te->vars = malloc(nv * sizeof *te->vars);
    te->bufs = malloc(nb * sizeof *te->bufs);
    te->local_cache = calloc(nb, sizeof *te->local_cache); /* LOCAL memory: in the arena, reused by the thread */
    ok = te->vars && te->bufs && te->local_cache;
  }
  if (!ok) failf(env, "out of memory emulating a launch of %d threads a block", L.nthreads);
  else rc = run_nest(&L, s, body);
  env->last_launch.shared_bytes = L.shared_bytes;

  for (int32_t t = 0; L.th && t < L.nthreads; t++) {
    free(L.th[t].env.vars);
    free(L.th[t].env.bufs);
    free(L.th[t].env.local_cache);
  }
  for (size_t i = 0; i < nb; i++) {
    if (L.gshadow) free(L.gshadow[i]);
    if (L.smem) free(L.smem[i]);
    if (L.sshadow) free(L.sshadow[i]);
  }
  free(L.th);
  free(L.gshadow);
  free(L.smem);
  free(L.sshadow);
  free(L.sgen);
  return rc < 0 || env->failed ? -1 : 0;
}

int tir_gpu_for(tir_env *env, const tir_stmt *s) {
  tir_for_kind k = s->u.loop.kind;
  struct tir_gpu_thread *th = env->gpu;
  if (!th) {
    if (tir_for_kind_is_block(k)) return launch_run(env, s);
    return failf(env, "%s loop over %s outside any blockIdx loop (block loops enclose every thread loop)", kind_name(k),
                 s->u.loop.var->name);
  }
  if (tir_for_kind_is_block(k)) return failf(env, "%s loop inside a block body", kind_name(k));
  /* a thread loop in one thread: one iteration, var = the thread's index, if it is below the extent */
  const tir_var *v = s->u.loop.var;
  int64_t extent = tir_eval_expr(env, s->u.loop.extent, 0).i;
  if (env->failed) return -1;
  if (th->c[axis(k)] >= extent) return 0;
  if (v->id < 0 || v->id >= env->n_vars) return failf(env, "variable id out of range: %s", v->name);
  tir_value saved = env->vars[v->id];
  env->vars[v->id] = (tir_value){.i = th->c[axis(k)]};
  int rc = tir_eval_run(env, s->u.loop.body);
  env->vars[v->id] = saved;
  return rc;
}
