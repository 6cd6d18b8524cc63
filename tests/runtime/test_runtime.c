/* test_runtime.c — the runtime end to end, on a bundle this test builds itself.
 *
 * A few hand-written kernels (KERNELS below, in the kernel ABI) are compiled
 * with `cc -shared -fPIC` into a temporary .so; manifest.json and plan.json
 * are written with cJSON, params.bin by hand, and the four entries packed with
 * libarchive — a miniature of what pack/ does. The model is
 *   t = 2·x (arena) ; y = relu(t + w) (w from params.bin) ; s = Σ y
 * with x, y : float32[4, 250] and s : float32[1], at non-zero arena and param
 * offsets. The test opens it from a file and from memory with several thread
 * counts, checks outputs, profiling and introspection, then every way
 * set_input / run / output can be misused (each must give the right status
 * and a message that names the problem). The thread pool is tested directly:
 * exact coverage of every index by a static contiguous partition in pieces, for many
 * sizes and thread counts, repeated calls, the sleep/wake path and krt_pool_wake's nudges, nested calls,
 * a slow worker's pieces taken by the caller.
 * Hostile bundles are tests/py/test_runtime_reject.py's job; two quick ones
 * (truncated, corrupted) are repeated here through kiln_model_open_memory. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cJSON.h>
#include <zlib.h>

#include "check.h"
#include "kiln.h"
#include "krt_threadpool.h"

#ifndef KILN_RUNTIME_DIR
#define KILN_RUNTIME_DIR "runtime"
#endif

#define N 1000
#define ARENA_T_OFFSET 128
#define PARAM_W_OFFSET 64

static const char *KERNELS =
    "#include <stdint.h>\n"
    "#include \"kiln_abi.h\"\n"
    "#define N 1000\n"
    "#ifndef SCALE\n"
    "#define SCALE 2.0f\n"
    "#endif\n"
    "static int aligned(const void *p) { return ((uintptr_t)p & 63) == 0; }\n"
    "typedef struct { const float *x; float *t; } scale_c;\n"
    "static void scale_task(void *c, int64_t b, int64_t e) {\n"
    "  scale_c *s = c;\n"
    "  for (int64_t i = b; i < e; i++) s->t[i] = SCALE * s->x[i];\n"
    "}\n"
    "int32_t k_scale(void *const *buf, const kiln_ctx *ctx) {\n"
    "  if (!aligned(buf[0]) || !aligned(buf[1])) return 3;\n"
    "  scale_c c = {buf[0], buf[1]};\n"
    "  return ctx->parallel_for(ctx, scale_task, &c, N);\n"
    "}\n"
    "typedef struct { const float *t, *w; float *y; } add_c;\n"
    "static void add_task(void *c, int64_t b, int64_t e) {\n"
    "  add_c *a = c;\n"
    "  for (int64_t i = b; i < e; i++) { float v = a->t[i] + a->w[i]; a->y[i] = v > 0 ? v : 0; }\n"
    "}\n"
    "int32_t k_add_relu(void *const *buf, const kiln_ctx *ctx) {\n"
    "  if (!aligned(buf[0]) || !aligned(buf[1]) || !aligned(buf[2])) return 3;\n"
    "  add_c c = {buf[0], buf[1], buf[2]};\n"
    "  return ctx->parallel_for(ctx, add_task, &c, N);\n"
    "}\n"
    "int32_t k_sum(void *const *buf, const kiln_ctx *ctx) {\n"
    "  if (!ctx->workspace || ctx->workspace_bytes < 8 || !aligned(ctx->workspace)) return 4;\n"
    "  double *acc = ctx->workspace;\n"
    "  const float *y = buf[0];\n"
    "  *acc = 0;\n"
    "  for (int i = 0; i < N; i++) *acc += y[i];\n"
    "  *(float *)buf[1] = (float)*acc;\n"
    "  return 0;\n"
    "}\n"
    "int32_t k_fail(void *const *buf, const kiln_ctx *ctx) { (void)buf; (void)ctx; return 7; }\n"
    "int kiln_test_data = 5;\n";

static char tmpdir[512];
static char lib_path[600], lib3_path[600]; /* y = relu(2x + w); the other one relu(3x + w) */

/* ------------------------------------------------------------------ bundle writer */

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

static int build_library(void) {
  char src[600], cmd[2048];
  snprintf(src, sizeof src, "%s/kernels.c", tmpdir);
  snprintf(lib_path, sizeof lib_path, "%s/kernels.so", tmpdir);
  snprintf(lib3_path, sizeof lib3_path, "%s/kernels3.so", tmpdir);
  FILE *f = fopen(src, "w");
  if (!f) return 0;
  fputs(KERNELS, f);
  fclose(f);
  const char *cc = getenv("KILN_TEST_CC");
  snprintf(cmd, sizeof cmd, "%s -O2 -shared -fPIC -I'%s' -o '%s' '%s'", cc && *cc ? cc : "cc", KILN_RUNTIME_DIR,
           lib_path, src);
  if (system(cmd) != 0) return 0;
  snprintf(cmd, sizeof cmd, "%s -O2 -shared -fPIC -DSCALE=3.0f -I'%s' -o '%s' '%s'", cc && *cc ? cc : "cc",
           KILN_RUNTIME_DIR, lib3_path, src);
  return system(cmd) == 0;
}

static cJSON *tensor_json(const char *name, const char *dtype, int rank, const int64_t *dims) {
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "name", name);
  cJSON_AddStringToObject(t, "dtype", dtype);
  cJSON *shape = cJSON_AddArrayToObject(t, "shape");
  for (int i = 0; i < rank; i++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)dims[i]));
  return t;
}

static cJSON *arg_index(const char *kind, int index) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "kind", kind);
  cJSON_AddNumberToObject(a, "index", index);
  return a;
}

static cJSON *arg_range(const char *kind, int64_t offset, int64_t bytes) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "kind", kind);
  cJSON_AddNumberToObject(a, "offset", (double)offset);
  cJSON_AddNumberToObject(a, "bytes", (double)bytes);
  return a;
}

static cJSON *kernel_json(const char *name, const char *symbol, int64_t flops) {
  cJSON *k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "name", name);
  cJSON_AddStringToObject(k, "symbol", symbol);
  cJSON_AddNumberToObject(k, "flops", (double)flops);
  cJSON_AddArrayToObject(k, "args");
  return k;
}

static char *plan_text(int failing) {
  cJSON *root = cJSON_CreateObject();
  cJSON *kernels = cJSON_AddArrayToObject(root, "kernels");
  cJSON *k = kernel_json("scale", "k_scale", N);
  cJSON *args = cJSON_GetObjectItem(k, "args");
  cJSON_AddItemToArray(args, arg_index("input", 0));
  cJSON_AddItemToArray(args, arg_range("arena", ARENA_T_OFFSET, 4 * N));
  cJSON_AddItemToArray(kernels, k);
  k = kernel_json("add_relu", "k_add_relu", 2 * N);
  args = cJSON_GetObjectItem(k, "args");
  cJSON_AddItemToArray(args, arg_range("arena", ARENA_T_OFFSET, 4 * N));
  cJSON_AddItemToArray(args, arg_range("param", PARAM_W_OFFSET, 4 * N));
  cJSON_AddItemToArray(args, arg_index("output", 0));
  cJSON_AddItemToArray(kernels, k);
  if (failing) {
    k = kernel_json("broken", "k_fail", 0);
    cJSON_AddItemToArray(cJSON_GetObjectItem(k, "args"), arg_index("output", 1));
    cJSON_AddItemToArray(kernels, k);
  }
  k = kernel_json("sum", "k_sum", N);
  args = cJSON_GetObjectItem(k, "args");
  cJSON_AddItemToArray(args, arg_index("output", 0));
  cJSON_AddItemToArray(args, arg_index("output", 1));
  cJSON_AddItemToArray(kernels, k);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return text;
}

static void add_entry_json(cJSON *entries, const char *name, const void *data, size_t size) {
  char crc[16];
  snprintf(crc, sizeof crc, "%08lx", crc32(crc32(0L, Z_NULL, 0), data, (uInt)size));
  cJSON *e = cJSON_CreateObject();
  cJSON_AddNumberToObject(e, "bytes", (double)size);
  cJSON_AddStringToObject(e, "crc32", crc);
  cJSON_AddItemToObject(entries, name, e);
}

static char *manifest_text(const char *plan, const unsigned char *params, size_t params_size, const void *lib,
                           size_t lib_size) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "kiln-bundle");
  cJSON_AddNumberToObject(root, "format_version", 1);
  cJSON_AddStringToObject(root, "model", "tiny");
  cJSON_AddStringToObject(root, "compiler_version", "test");
  cJSON *target = cJSON_AddObjectToObject(root, "target");
  cJSON_AddStringToObject(target, "name", "host");
  cJSON_AddStringToObject(target, "triple", "x86_64-pc-linux-gnu");
  int64_t xy[2] = {4, 250}, one[1] = {1};
  cJSON *inputs = cJSON_AddArrayToObject(root, "inputs");
  cJSON_AddItemToArray(inputs, tensor_json("x", "float32", 2, xy));
  cJSON *outputs = cJSON_AddArrayToObject(root, "outputs");
  cJSON_AddItemToArray(outputs, tensor_json("y", "float32", 2, xy));
  cJSON_AddItemToArray(outputs, tensor_json("s", "float32", 1, one));
  cJSON_AddNumberToObject(root, "arena_bytes", ARENA_T_OFFSET + 4 * N);
  cJSON_AddNumberToObject(root, "weights_bytes", (double)params_size);
  cJSON_AddNumberToObject(root, "workspace_bytes", 64);
  cJSON *entries = cJSON_AddObjectToObject(root, "entries");
  add_entry_json(entries, "plan.json", plan, strlen(plan));
  add_entry_json(entries, "params.bin", params, params_size);
  add_entry_json(entries, "lib/host.so", lib, lib_size);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

static int write_tar(const char *path, const char *const *names, const void *const *datas, const size_t *sizes,
                     int count) {
  struct archive *a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (archive_write_open_filename(a, path) != ARCHIVE_OK) {
    archive_write_free(a);
    return 0;
  }
  int ok = 1;
  for (int i = 0; i < count && ok; i++) {
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, names[i]);
    archive_entry_set_size(e, (la_int64_t)sizes[i]);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    ok = archive_write_header(a, e) == ARCHIVE_OK &&
         archive_write_data(a, datas[i], sizes[i]) == (la_ssize_t)sizes[i];
    archive_entry_free(e);
  }
  ok = archive_write_close(a) == ARCHIVE_OK && ok;
  archive_write_free(a);
  return ok;
}

static float weight(int i) { return (float)(i % 5) - 2.0f; }

/* Writes the tiny model's bundle to path with the library at lib_file; failing adds a
 * kernel returning 7. */
static int build_bundle(const char *path, const char *lib_file, int failing) {
  size_t lib_size;
  unsigned char *lib = read_file(lib_file, &lib_size);
  if (!lib) return 0;
  size_t params_size = PARAM_W_OFFSET + 4 * N;
  unsigned char *params = calloc(1, params_size);
  memset(params, 0xAB, PARAM_W_OFFSET); /* junk before w: the offset must be honoured */
  for (int i = 0; i < N; i++) {
    float w = weight(i);
    memcpy(params + PARAM_W_OFFSET + 4 * i, &w, 4);
  }
  char *plan = plan_text(failing);
  char *manifest = manifest_text(plan, params, params_size, lib, lib_size);
  const char *names[4] = {"manifest.json", "plan.json", "params.bin", "lib/host.so"};
  const void *datas[4] = {manifest, plan, params, lib};
  size_t sizes[4] = {strlen(manifest), strlen(plan), params_size, lib_size};
  int ok = write_tar(path, names, datas, sizes, 4);
  free(lib);
  free(params);
  free(plan);
  free(manifest);
  return ok;
}

/* ------------------------------------------------------------------ helpers */

static float input_value(int i) { return (float)((i * 37) % 11) - 5.0f; }

static void fill_input(float *x) {
  for (int i = 0; i < N; i++) x[i] = input_value(i);
}

static int check_outputs(kiln_model *m, const char *what) {
  const void *data = NULL;
  kiln_tensor_info info;
  int ok = CHECKF(kiln_model_output(m, 0, &data, &info) == KILN_OK && data, "%s: output 0", what);
  if (!ok) return 0;
  CHECK_STR(info.name, "y");
  CHECK_INT(info.rank, 2);
  CHECK_INT(info.dims[1], 250);
  const float *y = data;
  int bad = 0;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    float v = 2.0f * input_value(i) + weight(i);
    float want = v > 0 ? v : 0;
    sum += want;
    if (y[i] != want && bad++ < 3) printf("     %s: y[%d] = %g, expected %g\n", what, i, (double)y[i], (double)want);
  }
  CHECKF(bad == 0, "%s: %d wrong values in y", what, bad);
  ok = CHECKF(kiln_model_output(m, 1, &data, &info) == KILN_OK, "%s: output 1", what);
  if (ok) {
    CHECK_STR(info.name, "s");
    CHECKF(*(const float *)data == (float)sum, "%s: s = %g, expected %g", what, (double)*(const float *)data, sum);
  }
  return bad == 0;
}

static int set_x(kiln_model *m) {
  float x[N];
  fill_input(x);
  int64_t dims[2] = {4, 250};
  return kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 2, dims, x, sizeof x) == KILN_OK;
}

/* ------------------------------------------------------------------ tests: tables */

static void test_tables(void) {
  CHECK_STR(kiln_status_str(KILN_OK), "OK");
  CHECK_STR(kiln_status_str(KILN_ERR_CHECKSUM), "CHECKSUM");
  CHECK_STR(kiln_status_str(KILN_ERR_RUN), "RUN");
  CHECK_STR(kiln_status_str((kiln_status)999), "UNKNOWN");
  for (int s = 0; s < KILN_STATUS_COUNT; s++) CHECK(strcmp(kiln_status_str((kiln_status)s), "UNKNOWN") != 0);
  for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
    kiln_dtype back;
    CHECK(kiln_dtype_from_name(kiln_dtype_name((kiln_dtype)d), &back) == KILN_OK && back == (kiln_dtype)d);
    CHECK(kiln_dtype_size((kiln_dtype)d) > 0 || d == KILN_DTYPE_STRING); /* a string's size is its model's slot */
  }
  CHECK_INT(kiln_dtype_size(KILN_DTYPE_STRING), 0);
  CHECK_STR(kiln_dtype_name(KILN_DTYPE_STRING), "string");
  CHECK_INT(kiln_dtype_size(KILN_DTYPE_BFLOAT16), 2);
  CHECK_INT(kiln_dtype_size(KILN_DTYPE_INT64), 8);
  CHECK_INT(kiln_dtype_size(KILN_DTYPE_BOOL), 1);
  CHECK_INT(kiln_dtype_size((kiln_dtype)-1), 0);
  kiln_dtype d;
  CHECK_INT(kiln_dtype_from_name("float128", &d), KILN_ERR_DTYPE);
  CHECK_INT(kiln_dtype_from_name(NULL, &d), KILN_ERR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------ tests: thread pool */

#define MAX_N 100003
#define MAX_CALLS 64

typedef struct {
  int32_t *hits;                 /* per index, incremented atomically */
  int64_t begins[MAX_CALLS], ends[MAX_CALLS];
  int32_t calls;                 /* atomic */
  const kiln_ctx *ctx;           /* for nested calls */
  int nested;
} cover_t;

static void cover_task(void *closure, int64_t begin, int64_t end) {
  cover_t *c = closure;
  int32_t slot = __atomic_fetch_add(&c->calls, 1, __ATOMIC_RELAXED);
  if (slot < MAX_CALLS) {
    c->begins[slot] = begin;
    c->ends[slot] = end;
  }
  for (int64_t i = begin; i < end; i++) __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
}

/* Checks one parallel_for over [0, n): each index hit once, by calls on
 * non-empty contiguous spans: at least one per range (min(T, n) ranges) and at
 * most one per piece (each range in min(KRT_POOL_SUBCHUNKS, its length) pieces;
 * a range's pieces after its first run as one call when the first was quick). */
static int check_cover(const kiln_ctx *ctx, int32_t threads, int64_t n, cover_t *c) {
  memset(c->hits, 0, (size_t)(n > 0 ? n : 1) * sizeof *c->hits);
  c->calls = 0;
  int32_t rc = ctx->parallel_for(ctx, cover_task, c, n);
  int ok = rc == 0;
  for (int64_t i = 0; i < n && ok; i++) ok = c->hits[i] == 1;
  int64_t most = 0, ranges = threads == 1 ? (n > 0) : n < threads ? n : threads; /* one thread: one call */
  for (int32_t t = 0; t < ranges; t++) {
    int64_t b, e;
    krt_chunk(n, (int32_t)ranges, t, &b, &e);
    most += threads == 1 ? 1 : e - b < KRT_POOL_SUBCHUNKS ? e - b : KRT_POOL_SUBCHUNKS;
  }
  ok = ok && c->calls >= ranges && c->calls <= most;
  int64_t covered = 0;
  for (int32_t k = 0; ok && k < c->calls && k < MAX_CALLS; k++) {
    int64_t len = c->ends[k] - c->begins[k];
    covered += len;
    ok = len >= 1;
  }
  ok = ok && covered == n;
  if (!ok)
    printf("     threads=%d n=%lld: rc=%d calls=%d (expected %lld..%lld) covered %lld\n", threads, (long long)n, rc,
           c->calls, (long long)ranges, (long long)most, (long long)covered);
  return ok;
}

static void nested_task(void *closure, int64_t begin, int64_t end) {
  cover_t *c = closure;
  for (int64_t i = begin; i < end; i++) {
    /* inner loop over 4 sub-indices of i, through the same ctx */
    cover_t inner;
    int32_t hits[4] = {0, 0, 0, 0};
    inner.hits = hits;
    inner.calls = 0;
    c->ctx->parallel_for(c->ctx, cover_task, &inner, 4);
    if (hits[0] == 1 && hits[1] == 1 && hits[2] == 1 && hits[3] == 1) __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
  }
}

typedef struct {
  int64_t sum; /* atomic */
} sum_t;

static void sum_task(void *closure, int64_t begin, int64_t end) {
  sum_t *s = closure;
  int64_t local = 0;
  for (int64_t i = begin; i < end; i++) local += i;
  __atomic_fetch_add(&s->sum, local, __ATOMIC_RELAXED);
}

/* One slow thread: every piece run on it sleeps 100 ms — off the calling thread
 * (a slow worker), or on it (a slow caller). */
typedef struct {
  pthread_t caller;
  int slow_caller;
  int32_t on_caller, elsewhere; /* atomic: iterations run */
  int32_t hits[8];              /* atomic */
} slow_t;

static void slow_task(void *closure, int64_t begin, int64_t end) {
  slow_t *s = closure;
  int caller = pthread_equal(pthread_self(), s->caller);
  __atomic_fetch_add(caller ? &s->on_caller : &s->elsewhere, (int32_t)(end - begin), __ATOMIC_RELAXED);
  for (int64_t i = begin; i < end; i++) __atomic_fetch_add(&s->hits[i], 1, __ATOMIC_RELAXED);
  if (caller == s->slow_caller) usleep(100000);
}

/* Two threads over 8 iterations: two ranges of four pieces. The fast thread
 * finishes its own at once and, after the grace period, takes the slow one's
 * untaken pieces from the end, so the slow one holds the call up for one piece of
 * 100 ms (two if the fast one was descheduled that long), not its four: the fast
 * thread runs at least six of the eight — the caller for a slow worker, the worker
 * for a slow caller. */
static void test_pool_steal(void) {
  for (int slow_caller = 0; slow_caller <= 1; slow_caller++) {
    krt_pool *pool = NULL;
    char msg[256];
    if (!CHECKF(krt_pool_create(2, &pool, msg, sizeof msg) == KILN_OK, "pool of 2: %s", msg)) return;
    kiln_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    krt_pool_bind(pool, &ctx);
    slow_t s;
    memset(&s, 0, sizeof s);
    s.caller = pthread_self();
    s.slow_caller = slow_caller;
    CHECK_INT(ctx.parallel_for(&ctx, slow_task, &s, 8), 0);
    int once = 1;
    for (int i = 0; i < 8; i++) once &= s.hits[i] == 1;
    CHECKF(once, "a slow %s's pieces: each index run once", slow_caller ? "caller" : "worker");
    int32_t fast = slow_caller ? s.elsewhere : s.on_caller;
    CHECKF(s.on_caller + s.elsewhere == 8 && fast >= 6, "a slow %s's pieces taken (%d on the caller, %d on the worker)",
           slow_caller ? "caller" : "worker", s.on_caller, s.elsewhere);
    krt_pool_destroy(pool);
  }
}

static void test_chunks(void) {
  int ok = 1;
  for (int64_t n = 0; n <= 70 && ok; n++)
    for (int32_t chunks = 1; chunks <= 17 && ok; chunks++) {
      int64_t expect_begin = 0;
      for (int32_t t = 0; t < chunks && ok; t++) {
        int64_t b, e;
        krt_chunk(n, chunks, t, &b, &e);
        ok = b == expect_begin && e >= b && (e - b == n / chunks || e - b == n / chunks + 1);
        expect_begin = e;
      }
      ok = ok && expect_begin == n;
    }
  CHECKF(ok, "krt_chunk partitions [0, n) contiguously and evenly");
  int64_t b, e;
  krt_chunk(INT64_MAX, 7, 6, &b, &e);
  CHECK(e == INT64_MAX && b < e);
}

static void test_pool(void) {
  static const int32_t thread_counts[] = {1, 2, 3, 4, 7, 16};
  static const int64_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 63, 64, 65, 100, 1000, 4097, MAX_N};
  cover_t *c = calloc(1, sizeof *c);
  c->hits = calloc(MAX_N, sizeof *c->hits);
  for (size_t ti = 0; ti < sizeof thread_counts / sizeof *thread_counts; ti++) {
    int32_t threads = thread_counts[ti];
    krt_pool *pool = NULL;
    char msg[256];
    if (!CHECKF(krt_pool_create(threads, &pool, msg, sizeof msg) == KILN_OK, "pool of %d: %s", threads, msg)) continue;
    CHECK_INT(krt_pool_threads(pool), threads);
    kiln_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    krt_pool_bind(pool, &ctx);
    CHECK(ctx.parallel_for == (threads == 1 ? krt_serial_for : krt_pool_parallel_for));
    int all = 1;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) all &= check_cover(&ctx, threads, sizes[si], c);
    CHECKF(all, "threads=%d: every size covered exactly once", threads);

    /* Many quick calls in a row: the spinning path. */
    int sums_ok = 1;
    for (int rep = 0; rep < 20000 && sums_ok; rep++) {
      int64_t n = 1 + rep % (3 * threads + 5);
      sum_t s = {0};
      sums_ok = ctx.parallel_for(&ctx, sum_task, &s, n) == 0 && s.sum == n * (n - 1) / 2;
    }
    CHECKF(sums_ok, "threads=%d: 20000 repeated calls", threads);

    /* Calls after the workers went to sleep: the condition-variable path. */
    int sleep_ok = 1;
    for (int rep = 0; rep < 4; rep++) {
      usleep(3000);
      sleep_ok &= check_cover(&ctx, threads, 1000 + rep, c);
    }
    CHECKF(sleep_ok, "threads=%d: calls after the workers slept", threads);

    /* krt_pool_wake (what a run does first): nudges while the workers sleep or
     * spin, followed by calls at once or a little later, and one followed by none. */
    int wake_ok = 1;
    for (int rep = 0; rep < 6; rep++) {
      usleep(3000);
      krt_pool_wake(pool);
      if (rep % 3 == 1) usleep(50);
      if (rep % 3 == 2) krt_pool_wake(pool);
      wake_ok &= check_cover(&ctx, threads, 2000 + rep, c);
      krt_pool_wake(pool);
    }
    usleep(3000);
    krt_pool_wake(pool);
    CHECKF(wake_ok, "threads=%d: calls after krt_pool_wake", threads);

    /* A task that calls parallel_for itself runs the inner loop serially. */
    memset(c->hits, 0, 64 * sizeof *c->hits);
    c->ctx = &ctx;
    CHECK_INT(ctx.parallel_for(&ctx, nested_task, c, 64), 0);
    int nested_ok = 1;
    for (int i = 0; i < 64; i++) nested_ok &= c->hits[i] == 1;
    CHECKF(nested_ok, "threads=%d: nested parallel_for", threads);

    CHECK_INT(ctx.parallel_for(&ctx, NULL, c, 10), 1);
    CHECK_INT(ctx.parallel_for(&ctx, cover_task, c, -1), 1);
    krt_pool_destroy(pool);
  }
  /* The serial version on its own, with no pool at all. */
  kiln_ctx serial;
  memset(&serial, 0, sizeof serial);
  krt_pool_bind(NULL, &serial);
  krt_pool_wake(NULL); /* no pool: nothing to wake */
  CHECK(serial.parallel_for == krt_serial_for);
  CHECK(check_cover(&serial, 1, 777, c));
  CHECK_INT(krt_serial_for(&serial, NULL, c, 3), 1);
  /* Create / destroy cycles without any call, and bad counts. */
  for (int rep = 0; rep < 20; rep++) {
    krt_pool *pool = NULL;
    char msg[256];
    CHECK(krt_pool_create(1 + rep % 5, &pool, msg, sizeof msg) == KILN_OK);
    if (rep % 2) krt_pool_wake(pool); /* a nudge right before the stop */
    krt_pool_destroy(pool);
  }
  krt_pool *pool = (krt_pool *)1;
  char msg[256];
  CHECK_INT(krt_pool_create(0, &pool, msg, sizeof msg), KILN_ERR_INVALID_ARGUMENT);
  CHECK(pool == NULL);
  CHECK_CONTAINS(msg, "thread count");
  CHECK_INT(krt_pool_create(KILN_MAX_THREADS + 1, &pool, msg, sizeof msg), KILN_ERR_INVALID_ARGUMENT);
  CHECK(krt_online_cores() >= 1);
  free(c->hits);
  free(c);
}

/* ------------------------------------------------------------------ tests: running */

static void test_run(const char *bundle) {
  static const int32_t thread_counts[] = {1, 2, 4, 0};
  for (size_t ti = 0; ti < sizeof thread_counts / sizeof *thread_counts; ti++) {
    kiln_options o;
    kiln_options_init(&o);
    o.threads = thread_counts[ti];
    kiln_model *m = NULL;
    char err[512];
    kiln_status s = kiln_model_open(bundle, &o, &m, err, sizeof err);
    if (!CHECKF(s == KILN_OK, "open with %d threads: %s: %s", o.threads, kiln_status_str(s), err)) continue;
    CHECK_STR(err, "");
    CHECK_INT(kiln_model_threads(m), o.threads ? o.threads : krt_online_cores());
    CHECK(set_x(m));
    CHECK_INT(kiln_model_run(m), KILN_OK);
    char what[64];
    snprintf(what, sizeof what, "threads=%d", o.threads);
    check_outputs(m, what);
    /* Inputs persist: a second run without set_input gives the same result. */
    CHECK_INT(kiln_model_run(m), KILN_OK);
    check_outputs(m, what);
    kiln_model_close(m);
  }
}

static void test_introspection(const char *bundle) {
  kiln_model *m = NULL;
  char err[512];
  if (!CHECKF(kiln_model_open(bundle, NULL, &m, err, sizeof err) == KILN_OK, "%s", err)) return;
  CHECK_STR(kiln_model_name(m), "tiny");
  CHECK_STR(kiln_model_compiler_version(m), "test");
  CHECK_STR(kiln_model_target_name(m), "host");
  CHECK_STR(kiln_model_target_triple(m), "x86_64-pc-linux-gnu");
  CHECK_INT(kiln_model_input_count(m), 1);
  CHECK_INT(kiln_model_output_count(m), 2);
  CHECK_INT(kiln_model_kernel_count(m), 3);
  CHECK_INT(kiln_model_arena_bytes(m), ARENA_T_OFFSET + 4 * N);
  CHECK_INT(kiln_model_weights_bytes(m), PARAM_W_OFFSET + 4 * N);
  CHECK_INT(kiln_model_workspace_bytes(m), 64);
  kiln_tensor_info info;
  CHECK_INT(kiln_model_input_info(m, 0, &info), KILN_OK);
  CHECK_STR(info.name, "x");
  CHECK_INT(info.dtype, KILN_DTYPE_FLOAT32);
  CHECK_INT(info.rank, 2);
  CHECK_INT(info.dims[0], 4);
  CHECK_INT(info.dims[1], 250);
  CHECK_INT(info.elements, N);
  CHECK_INT(info.bytes, 4 * N);
  CHECK_INT(kiln_model_output_info(m, 1, &info), KILN_OK);
  CHECK_STR(info.name, "s");
  CHECK_INT(info.rank, 1);
  CHECK_INT(info.bytes, 4);
  CHECK_INT(kiln_model_input_info(m, 1, &info), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_output_info(m, -1, &info), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_output_info(m, 0, NULL), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_input_index(m, "x"), 0);
  CHECK_INT(kiln_model_input_index(m, "y"), -1);
  CHECK_INT(kiln_model_output_index(m, "s"), 1);
  CHECK_INT(kiln_model_output_index(m, NULL), -1);

  /* Profiling: off at open, counts calls once on, names, flops and bytes from the
   * plan, the last profiled run's calls in order. */
  const kiln_kernel_profile *prof = NULL;
  const kiln_kernel_call *calls = NULL;
  int32_t count = 0, n_calls = -1;
  CHECK(set_x(m));
  CHECK_INT(kiln_model_run(m), KILN_OK);
  CHECK_INT(kiln_model_profile(m, &prof, &count), KILN_OK);
  CHECK_INT(count, 3);
  CHECK_INT(prof[0].calls, 0);
  CHECK_INT(kiln_model_profile_calls(m, &calls, &n_calls), KILN_OK);
  CHECK_INT(n_calls, 0);
  CHECK_INT(kiln_model_set_profile(m, 1), KILN_OK);
  for (int i = 0; i < 5; i++) CHECK_INT(kiln_model_run(m), KILN_OK);
  CHECK_INT(kiln_model_profile(m, &prof, &count), KILN_OK);
  CHECK_STR(prof[0].name, "scale");
  CHECK_STR(prof[1].name, "add_relu");
  CHECK_STR(prof[2].name, "sum");
  CHECK_INT(prof[1].flops, 2 * N);
  int calls_ok = 1, time_ok = 1;
  for (int k = 0; k < 3; k++) {
    calls_ok &= prof[k].calls == 5;
    time_ok &= prof[k].total_ns >= 0;
  }
  CHECK(calls_ok);
  CHECK(time_ok);
  CHECK_INT(prof[0].bytes, 4 * N + 4 * N);      /* x, t */
  CHECK_INT(prof[1].bytes, 3 * 4 * N);          /* t, w, y */
  CHECK_INT(prof[2].bytes, 4 * N + 4);          /* y, s */
  CHECK_INT(kiln_model_profile_calls(m, &calls, &n_calls), KILN_OK);
  CHECK_INT(n_calls, 3);
  int order_ok = 1;
  for (int k = 0; k < n_calls; k++)
    order_ok &= calls[k].kernel == k && calls[k].start_ns <= calls[k].end_ns &&
                (k == 0 || calls[k - 1].end_ns <= calls[k].start_ns);
  CHECK(order_ok);
  int64_t last_start = calls[0].start_ns;
  kiln_model_profile_reset(m);
  CHECK_INT(prof[0].calls, 0);
  CHECK_INT(prof[0].total_ns, 0);
  CHECK_INT(kiln_model_profile_calls(m, &calls, &n_calls), KILN_OK);
  CHECK_INT(n_calls, 3); /* the reset keeps the last run's calls */
  CHECK_INT(kiln_model_run(m), KILN_OK);
  CHECK_INT(kiln_model_profile_calls(m, &calls, &n_calls), KILN_OK);
  CHECK(n_calls == 3 && calls[0].start_ns >= last_start);
  CHECK_INT(kiln_model_set_profile(m, 0), KILN_OK); /* off: the last profiled run's calls stay */
  CHECK_INT(kiln_model_run(m), KILN_OK);
  CHECK_INT(kiln_model_profile_calls(m, &calls, &n_calls), KILN_OK);
  CHECK_INT(n_calls, 3);
  CHECK_INT(kiln_model_profile(m, NULL, &count), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_profile_calls(m, NULL, &n_calls), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_profile_calls(NULL, &calls, &n_calls), KILN_ERR_INVALID_ARGUMENT);

  /* Thread count changes between runs keep the results. */
  static const int32_t changes[] = {3, 1, 2, 0, 8, 1};
  for (size_t i = 0; i < sizeof changes / sizeof *changes; i++) {
    CHECK_INT(kiln_model_set_threads(m, changes[i]), KILN_OK);
    CHECK_INT(kiln_model_threads(m), changes[i] ? changes[i] : krt_online_cores());
    CHECK_INT(kiln_model_run(m), KILN_OK);
    check_outputs(m, "after set_threads");
  }
  CHECK_INT(kiln_model_set_threads(m, -1), KILN_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kiln_model_last_error(m), "set_threads");
  CHECK_INT(kiln_model_set_threads(m, KILN_MAX_THREADS + 1), KILN_ERR_INVALID_ARGUMENT);

  /* The idle spin: sleeping at once, spinning long, kept across thread changes,
   * never changing a result; out of range refused with the call named. */
  static const int64_t spins[] = {0, 50000, 200, 0};
  for (size_t i = 0; i < sizeof spins / sizeof *spins; i++) {
    CHECK_INT(kiln_model_set_spin_us(m, spins[i]), KILN_OK);
    CHECK_INT(kiln_model_set_threads(m, i % 2 ? 2 : 3), KILN_OK);
    for (int rep = 0; rep < 3; rep++) CHECK_INT(kiln_model_run(m), KILN_OK);
    check_outputs(m, "after set_spin_us");
  }
  CHECK_INT(kiln_model_set_spin_us(m, -1), KILN_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kiln_model_last_error(m), "set_spin_us");
  CHECK_INT(kiln_model_set_spin_us(m, 10000001), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_set_spin_us(NULL, 0), KILN_ERR_INVALID_ARGUMENT);
  kiln_model_close(m);
}

static void test_open_memory(const char *bundle) {
  size_t size;
  unsigned char *data = read_file(bundle, &size);
  if (!CHECK(data)) return;
  kiln_options o;
  kiln_options_init(&o);
  o.threads = 2;
  o.profile = 1;
  kiln_model *m = NULL;
  char err[512];
  kiln_status s = kiln_model_open_memory(data, size, &o, &m, err, sizeof err);
  if (CHECKF(s == KILN_OK, "open_memory: %s", err)) {
    memset(data, 0, size); /* the model must not keep the caller's bytes */
    CHECK(set_x(m));
    CHECK_INT(kiln_model_run(m), KILN_OK);
    check_outputs(m, "open_memory");
    const kiln_kernel_profile *prof;
    int32_t count;
    CHECK(kiln_model_profile(m, &prof, &count) == KILN_OK && count == 3 && prof[2].calls == 1);
    kiln_model_close(m);
  }
  free(data);

  /* Quick hostile cases through memory (the full set is in test_runtime_reject.py). */
  data = read_file(bundle, &size);
  if (!CHECK(data)) return;
  s = kiln_model_open_memory(data, size / 2, NULL, &m, err, sizeof err);
  CHECK_INT(s, KILN_ERR_FORMAT);
  CHECK(m == NULL);
  CHECK_CONTAINS(err, "truncated");
  s = kiln_model_open_memory(data, 100, NULL, &m, err, sizeof err);
  CHECK_INT(s, KILN_ERR_FORMAT);
  s = kiln_model_open_memory(data, 0, NULL, &m, err, sizeof err);
  CHECK_INT(s, KILN_ERR_FORMAT);
  /* Flip one byte of w inside params.bin: find the weight pattern. */
  float w1 = weight(1), w2 = weight(2);
  unsigned char pattern[8];
  memcpy(pattern, &w1, 4);
  memcpy(pattern + 4, &w2, 4);
  unsigned char *hit = NULL;
  for (size_t i = 0; i + 8 <= size && !hit; i++)
    if (memcmp(data + i, pattern, 8) == 0) hit = data + i;
  if (CHECK(hit)) {
    hit[0] ^= 1;
    s = kiln_model_open_memory(data, size, NULL, &m, err, sizeof err);
    CHECK_INT(s, KILN_ERR_CHECKSUM);
    CHECK_CONTAINS(err, "params.bin");
  }
  free(data);
  CHECK_INT(kiln_model_open_memory(NULL, 10, NULL, &m, err, sizeof err), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_open_memory(NULL, 0, NULL, &m, err, sizeof err), KILN_ERR_FORMAT);
}

/* ------------------------------------------------------------------ tests: misuse */

static void expect(kiln_model *m, kiln_status got, kiln_status want, const char *needle, const char *what) {
  CHECKF(got == want, "%s: got %s, expected %s (%s)", what, kiln_status_str(got), kiln_status_str(want),
         kiln_model_last_error(m));
  if (needle) CHECKF(strstr(kiln_model_last_error(m), needle) != NULL, "%s: message '%s' lacks '%s'", what,
                     kiln_model_last_error(m), needle);
}

static void test_input_validation(const char *bundle) {
  kiln_model *m = NULL;
  char err[512];
  if (!CHECKF(kiln_model_open(bundle, NULL, &m, err, sizeof err) == KILN_OK, "%s", err)) return;
  float x[N];
  fill_input(x);
  int64_t dims[2] = {4, 250}, bad_dims[2] = {4, 251}, flat[1] = {1000}, deep[9] = {1, 1, 1, 1, 1, 1, 1, 4, 250};
  const void *out = NULL;

  expect(m, kiln_model_run(m), KILN_ERR_RUN, "'x' has not been set", "run before set_input");
  expect(m, kiln_model_output(m, 0, &out, NULL), KILN_ERR_RUN, "no successful run", "output before run");
  CHECK(out == NULL);

  expect(m, kiln_model_set_input(m, "z", KILN_DTYPE_FLOAT32, 2, dims, x, sizeof x), KILN_ERR_NAME, "'z'",
         "wrong name");
  CHECK_CONTAINS(kiln_model_last_error(m), "'x'"); /* lists the real inputs */
  expect(m, kiln_model_set_input(m, "", KILN_DTYPE_FLOAT32, 2, dims, x, sizeof x), KILN_ERR_NAME, NULL, "empty name");
  expect(m, kiln_model_set_input(m, NULL, KILN_DTYPE_FLOAT32, 2, dims, x, sizeof x), KILN_ERR_INVALID_ARGUMENT,
         "name is NULL", "NULL name");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_INT64, 2, dims, x, sizeof x), KILN_ERR_DTYPE, "int64",
         "wrong dtype");
  CHECK_CONTAINS(kiln_model_last_error(m), "float32");
  expect(m, kiln_model_set_input(m, "x", (kiln_dtype)77, 2, dims, x, sizeof x), KILN_ERR_DTYPE, "invalid",
         "dtype out of range");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 2, bad_dims, x, sizeof x), KILN_ERR_SHAPE,
         "[4, 251]", "wrong dim");
  CHECK_CONTAINS(kiln_model_last_error(m), "[4, 250]");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 1, flat, x, sizeof x), KILN_ERR_SHAPE, "[1000]",
         "wrong rank");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 9, deep, x, sizeof x), KILN_ERR_SHAPE, "rank 9",
         "rank over the limit");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, -1, dims, x, sizeof x), KILN_ERR_SHAPE, "rank -1",
         "negative rank");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 2, NULL, x, sizeof x), KILN_ERR_INVALID_ARGUMENT,
         "dims is NULL", "NULL dims");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 2, dims, x, sizeof x - 4), KILN_ERR_INVALID_ARGUMENT,
         "4000 bytes, got 3996", "short byte count");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 2, dims, x, sizeof x + 1), KILN_ERR_INVALID_ARGUMENT,
         "got 4001", "long byte count");
  expect(m, kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 2, dims, NULL, sizeof x), KILN_ERR_INVALID_ARGUMENT,
         "data is NULL", "NULL data");
  CHECK_INT(kiln_model_set_input(NULL, "x", KILN_DTYPE_FLOAT32, 2, dims, x, sizeof x), KILN_ERR_INVALID_ARGUMENT);
  /* None of the failures set the input. */
  expect(m, kiln_model_run(m), KILN_ERR_RUN, "has not been set", "run after failed set_input");

  CHECK_INT(kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 2, dims, x, sizeof x), KILN_OK);
  memset(x, 0, sizeof x); /* the model copied the input */
  CHECK_INT(kiln_model_run(m), KILN_OK);
  check_outputs(m, "after misuse");
  expect(m, kiln_model_output(m, 2, &out, NULL), KILN_ERR_INVALID_ARGUMENT, "out of range", "output index 2");
  expect(m, kiln_model_output(m, -1, &out, NULL), KILN_ERR_INVALID_ARGUMENT, "out of range", "output index -1");
  expect(m, kiln_model_output(m, 0, NULL, NULL), KILN_ERR_INVALID_ARGUMENT, "NULL", "NULL output pointer");
  CHECK_INT(kiln_model_run(NULL), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_output(NULL, 0, &out, NULL), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_set_profile(NULL, 1), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_set_threads(NULL, 1), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_input_count(NULL), 0);
  CHECK_STR(kiln_model_last_error(NULL), "model is NULL");
  kiln_model_close(m);
  kiln_model_close(NULL);
}

static void test_open_errors(void) {
  kiln_model *m = (kiln_model *)1;
  char err[512];
  CHECK_INT(kiln_model_open(NULL, NULL, &m, err, sizeof err), KILN_ERR_INVALID_ARGUMENT);
  CHECK(m == NULL);
  char missing[700];
  snprintf(missing, sizeof missing, "%s/no-such.kiln", tmpdir);
  CHECK_INT(kiln_model_open(missing, NULL, &m, err, sizeof err), KILN_ERR_IO);
  CHECK_CONTAINS(err, "no-such.kiln");
  CHECK_INT(kiln_model_open(tmpdir, NULL, &m, err, sizeof err), KILN_ERR_IO);
  CHECK_CONTAINS(err, "not a regular file");
  kiln_options o;
  kiln_options_init(&o);
  o.threads = -2;
  CHECK_INT(kiln_model_open(missing, &o, &m, err, sizeof err), KILN_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS(err, "threads");
  o.threads = 0;
  o.max_entry_bytes = -1;
  CHECK_INT(kiln_model_open(missing, &o, &m, err, sizeof err), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_open(missing, NULL, NULL, err, sizeof err), KILN_ERR_INVALID_ARGUMENT);
  CHECK_INT(kiln_model_open(missing, NULL, &m, NULL, 0), KILN_ERR_IO); /* no error buffer is fine */
  char tiny[8];
  CHECK_INT(kiln_model_open(missing, NULL, &m, tiny, sizeof tiny), KILN_ERR_IO); /* truncated, terminated */
  CHECK(strlen(tiny) == sizeof tiny - 1);
}

static void test_entry_cap(const char *bundle) {
  kiln_options o;
  kiln_options_init(&o);
  o.max_entry_bytes = 1000; /* params.bin is 4064 bytes */
  kiln_model *m = NULL;
  char err[512];
  CHECK_INT(kiln_model_open(bundle, &o, &m, err, sizeof err), KILN_ERR_FORMAT);
  CHECK_CONTAINS(err, "over the cap");
}

static void test_kernel_failure(const char *bundle) {
  kiln_model *m = NULL;
  char err[512];
  if (!CHECKF(kiln_model_open(bundle, NULL, &m, err, sizeof err) == KILN_OK, "%s", err)) return;
  CHECK(set_x(m));
  expect(m, kiln_model_run(m), KILN_ERR_RUN, "'broken' failed with status 7", "failing kernel");
  const void *out = NULL;
  expect(m, kiln_model_output(m, 0, &out, NULL), KILN_ERR_RUN, "no successful run", "output after a failed run");
  /* profiled, the failed run's calls end with the one that failed */
  const kiln_kernel_call *calls = NULL;
  int32_t n_calls = -1;
  CHECK_INT(kiln_model_set_profile(m, 1), KILN_OK);
  expect(m, kiln_model_run(m), KILN_ERR_RUN, "'broken' failed with status 7", "failing kernel, profiled");
  CHECK_INT(kiln_model_profile_calls(m, &calls, &n_calls), KILN_OK);
  CHECK(n_calls == 3 && calls[2].kernel == 2);
  kiln_model_close(m);
}

/* y[i] of a model whose first kernel scales by scale: i where it differs, else -1. */
static int first_wrong(kiln_model *m, float scale) {
  const void *data = NULL;
  if (kiln_model_output(m, 0, &data, NULL) != KILN_OK || !data) return 0;
  for (int i = 0; i < N; i++) {
    float v = scale * input_value(i) + weight(i);
    if (((const float *)data)[i] != (v > 0 ? v : 0)) return i;
  }
  return -1;
}

/* Models open side by side each run their own library. dlopen returns an object
 * already loaded under the same name, and the name of a library loaded from a memfd
 * is /proc/self/fd/N: were N closed after dlopen, the next model's memfd would get
 * N and its dlopen the first model's library — it would run the other's kernels. */
static void test_models_side_by_side(const char *bundle2, const char *bundle3) {
  for (int from_memory = 0; from_memory < 2; from_memory++) {
    kiln_model *m[4] = {NULL};
    const char *paths[4] = {bundle2, bundle3, bundle3, bundle2};
    char err[512];
    for (int k = 0; k < 4; k++) {
      size_t size = 0;
      unsigned char *data = from_memory ? read_file(paths[k], &size) : NULL;
      kiln_status s = from_memory ? kiln_model_open_memory(data, size, NULL, &m[k], err, sizeof err)
                                  : kiln_model_open(paths[k], NULL, &m[k], err, sizeof err);
      free(data);
      CHECKF(s == KILN_OK, "side by side, model %d: %s", k, err);
      if (k == 1) { /* a closed model's names are free again; the open ones' stay theirs */
        kiln_model_close(m[0]);
        CHECKF(kiln_model_open(paths[0], NULL, &m[0], err, sizeof err) == KILN_OK, "reopened: %s", err);
      }
    }
    for (int k = 0; k < 4; k++) {
      if (!m[k] || !CHECK(set_x(m[k])) || !CHECK(kiln_model_run(m[k]) == KILN_OK)) continue;
      int bad = first_wrong(m[k], paths[k] == bundle2 ? 2.0f : 3.0f);
      CHECKF(bad < 0, "side by side (%s), model %d runs another model's kernels: y[%d] is wrong",
             from_memory ? "from memory" : "from files", k, bad);
    }
    for (int k = 0; k < 4; k++) kiln_model_close(m[k]);
  }
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/kiln-rt-test-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("cannot create a temporary folder: %s\n", strerror(errno));
    return 1;
  }
  test_tables();
  test_chunks();
  test_pool();
  test_pool_steal();
  test_open_errors();
  char bundle[700], failing[700], scale3[700];
  snprintf(bundle, sizeof bundle, "%s/tiny.kiln", tmpdir);
  snprintf(scale3, sizeof scale3, "%s/scale3.kiln", tmpdir);
  snprintf(failing, sizeof failing, "%s/failing.kiln", tmpdir);
  if (CHECKF(build_library(), "compiling the test kernels with cc -shared failed (cc and the C headers come with "
                              "the Debian packages gcc and libc6-dev; scripts/setup.sh installs them)") &&
      CHECK(build_bundle(bundle, lib_path, 0)) && CHECK(build_bundle(failing, lib_path, 1)) &&
      CHECK(build_bundle(scale3, lib3_path, 0))) {
    test_run(bundle);
    test_introspection(bundle);
    test_open_memory(bundle);
    test_input_validation(bundle);
    test_entry_cap(bundle);
    test_kernel_failure(failing);
    test_models_side_by_side(bundle, scale3);
  }
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("note: could not remove %s\n", tmpdir);
  return check_finish("test_runtime");
}
