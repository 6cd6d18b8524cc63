/* test_cuda_runtime.c — GPU bundles (target triple nvptx64-*, runtime/cuda.c)
 * without a GPU.
 *
 * The test writes small GPU bundles itself (manifest.json and plan.json with
 * cJSON, a hand-written PTX library, tar with libarchive) and opens them with
 * KILN_CUDA_DRIVER pointing at tests/runtime/fake_cuda.c's library, a stand-in
 * for libcuda on host memory (kiln_fake_copy copies its first argument to its
 * second; kiln_fake_fail fills its failure record). It checks:
 *   - a missing driver → KILN_ERR_LOAD naming the library;
 *   - end to end: input → launches → output, with CUDA graphs and without
 *     (KILN_CUDA_GRAPHS=0), profiled, several launches per kernel, from memory;
 *   - every driver call made to fail (FAKE_CUDA_FAIL=<symbol>) → the right status
 *     and a message naming the call and the CUresult, the graph calls falling
 *     back to plain launches, and everything released (the fake counts what is
 *     alive: nothing may be left after close);
 *   - malformed GPU bundles → KILN_ERR_FORMAT; a device too old, a device number
 *     that is not there, PTX the driver refuses, a missing entry → KILN_ERR_LOAD;
 *   - a kernel's failed run-time check → KILN_ERR_RUN quoting the check;
 *   - a CPU bundle opens and runs with no driver at all.
 * Built without cuda.h (no KILN_HAVE_CUDA) it checks that GPU bundles are refused
 * with that reason, and the format checks. KILN_TEST_REAL_CUDA=1 runs the end to
 * end and failed-check cases on the real driver (the PTX is real PTX for sm_80). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cJSON.h>
#include <zlib.h>

#include "check.h"
#include "kiln.h"

#ifndef KILN_RUNTIME_DIR
#define KILN_RUNTIME_DIR "runtime"
#endif

#define N 1024

static const char *PTX =
    "//\n"
    "// kiln test kernels (test_cuda_runtime.c): real PTX, also understood by fake_cuda.c\n"
    "//\n"
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry kiln_fake_copy(\n"
    "\t.param .u64 p_in,\n"
    "\t.param .u64 p_out,\n"
    "\t.param .u64 p_w,\n"
    "\t.param .u64 p_scratch,\n"
    "\t.param .u64 p_rec\n"
    ")\n"
    "{\n"
    "\t.reg .b32 %r<5>;\n"
    "\t.reg .b64 %rd<6>;\n"
    "\t.reg .f32 %f<2>;\n"
    "\tld.param.u64 %rd1, [p_in];\n"
    "\tld.param.u64 %rd2, [p_out];\n"
    "\tcvta.to.global.u64 %rd1, %rd1;\n"
    "\tcvta.to.global.u64 %rd2, %rd2;\n"
    "\tmov.u32 %r1, %ctaid.x;\n"
    "\tmov.u32 %r2, %ntid.x;\n"
    "\tmov.u32 %r3, %tid.x;\n"
    "\tmad.lo.s32 %r4, %r1, %r2, %r3;\n"
    "\tmul.wide.u32 %rd3, %r4, 4;\n"
    "\tadd.s64 %rd4, %rd1, %rd3;\n"
    "\tadd.s64 %rd5, %rd2, %rd3;\n"
    "\tld.global.f32 %f1, [%rd4];\n"
    "\tst.global.f32 [%rd5], %f1;\n"
    "\tret;\n"
    "}\n"
    "\n"
    ".visible .entry kiln_fake_fail(\n"
    "\t.param .u64 p_in,\n"
    "\t.param .u64 p_out,\n"
    "\t.param .u64 p_rec\n"
    ")\n"
    "{\n"
    "\t.reg .pred %p<2>;\n"
    "\t.reg .b32 %r<4>;\n"
    "\t.reg .b64 %rd<5>;\n"
    "\tld.param.u64 %rd1, [p_rec];\n"
    "\tcvta.to.global.u64 %rd1, %rd1;\n"
    "\tmov.u32 %r2, 0;\n"
    "\tmov.u32 %r3, 1;\n"
    "\tatom.global.cas.b32 %r1, [%rd1], %r2, %r3;\n"
    "\tsetp.ne.s32 %p1, %r1, 0;\n"
    "\t@%p1 bra DONE;\n"
    "\tst.global.u32 [%rd1+4], %r2;\n"
    "\tmov.u64 %rd2, 7;\n"
    "\tmov.u64 %rd3, 0;\n"
    "\tmov.u64 %rd4, 5;\n"
    "\tst.global.u64 [%rd1+8], %rd2;\n"
    "\tst.global.u64 [%rd1+16], %rd3;\n"
    "\tst.global.u64 [%rd1+24], %rd4;\n"
    "DONE:\n"
    "\tret;\n"
    "}\n";

static char tmpdir[512];
static int real_cuda; /* KILN_TEST_REAL_CUDA=1: the machine's driver, not the fake */

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
    ok = archive_write_header(a, e) == ARCHIVE_OK && archive_write_data(a, datas[i], sizes[i]) == (la_ssize_t)sizes[i];
    archive_entry_free(e);
  }
  ok = archive_write_close(a) == ARCHIVE_OK && ok;
  archive_write_free(a);
  return ok;
}

static void add_entry_json(cJSON *entries, const char *name, const void *data, size_t size) {
  char crc[16];
  snprintf(crc, sizeof crc, "%08lx", crc32(crc32(0L, Z_NULL, 0), data, (uInt)size));
  cJSON *e = cJSON_CreateObject();
  cJSON_AddNumberToObject(e, "bytes", (double)size);
  cJSON_AddStringToObject(e, "crc32", crc);
  cJSON_AddItemToObject(entries, name, e);
}

static cJSON *tensor_json(const char *name, int64_t n) {
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "name", name);
  cJSON_AddStringToObject(t, "dtype", "float32");
  cJSON *shape = cJSON_AddArrayToObject(t, "shape");
  cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)n));
  return t;
}

static cJSON *arg_json(const char *kind, int64_t a, int64_t b) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "kind", kind);
  if (b < 0) {
    cJSON_AddNumberToObject(j, "index", (double)a);
  } else {
    cJSON_AddNumberToObject(j, "offset", (double)a);
    cJSON_AddNumberToObject(j, "bytes", (double)b);
  }
  return j;
}

static cJSON *launch_json(const char *symbol, int gx, int gy, int gz, int bx, int by, int bz) {
  cJSON *l = cJSON_CreateObject();
  cJSON_AddStringToObject(l, "symbol", symbol);
  int g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  cJSON_AddItemToObject(l, "grid", cJSON_CreateIntArray(g, 3));
  cJSON_AddItemToObject(l, "block", cJSON_CreateIntArray(b, 3));
  return l;
}

/* What a bundle is made of; the defaults are a good GPU bundle (good_bundle). */
typedef struct {
  cJSON *manifest; /* without "entries": write_bundle adds them */
  cJSON *plan;
  const char *lib_name; /* NULL: lib/<target.name>.ptx */
  const void *lib;
  size_t lib_size;
} bundle;

/* y = x through kiln_fake_copy (in two launches when two_launches); with_fail adds a
 * kernel whose check always fails. */
static void good_bundle(bundle *b, int two_launches, int with_fail) {
  memset(b, 0, sizeof *b);
  cJSON *m = b->manifest = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "format", "kiln-bundle");
  cJSON_AddNumberToObject(m, "format_version", 2);
  cJSON_AddStringToObject(m, "model", "gpu-tiny");
  cJSON_AddStringToObject(m, "compiler_version", "test");
  cJSON *target = cJSON_AddObjectToObject(m, "target");
  cJSON_AddStringToObject(target, "name", "cuda");
  cJSON_AddStringToObject(target, "triple", "nvptx64-nvidia-cuda");
  cJSON_AddNumberToObject(target, "sm", 80);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "inputs"), tensor_json("x", N));
  cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "outputs"), tensor_json("y", N));
  cJSON_AddNumberToObject(m, "arena_bytes", 256);
  cJSON_AddNumberToObject(m, "weights_bytes", 128);
  cJSON_AddNumberToObject(m, "workspace_bytes", 0);

  cJSON *kernels = cJSON_AddArrayToObject(b->plan = cJSON_CreateObject(), "kernels");
  cJSON *k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "name", "copy");
  cJSON_AddNumberToObject(k, "flops", 0);
  cJSON *launches = cJSON_AddArrayToObject(k, "launches");
  if (two_launches) {
    cJSON_AddItemToArray(launches, launch_json("kiln_fake_copy", 8, 1, 1, 128, 1, 1));
    cJSON_AddItemToArray(launches, launch_json("kiln_fake_copy", 2, 1, 1, 512, 1, 1));
  } else {
    cJSON_AddItemToArray(launches, launch_json("kiln_fake_copy", 4, 1, 1, 256, 1, 1));
  }
  cJSON *args = cJSON_AddArrayToObject(k, "args");
  cJSON_AddItemToArray(args, arg_json("input", 0, -1));
  cJSON_AddItemToArray(args, arg_json("output", 0, -1));
  cJSON_AddItemToArray(args, arg_json("param", 64, 64));
  cJSON_AddItemToArray(args, arg_json("arena", 128, 128));
  cJSON_AddItemToArray(kernels, k);
  if (with_fail) {
    k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "name", "k1_gather");
    cJSON_AddStringToObject(k, "symbol", "kiln_fake_fail");
    cJSON_AddNumberToObject(k, "flops", 0);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(k, "launches"), launch_json("kiln_fake_fail", 2, 1, 1, 32, 1, 1));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(k, "checks"),
                         cJSON_CreateString("Gather 'embed' (opset 13), indices 'ids'"));
    args = cJSON_AddArrayToObject(k, "args");
    cJSON_AddItemToArray(args, arg_json("input", 0, -1));
    cJSON_AddItemToArray(args, arg_json("output", 0, -1));
    cJSON_AddItemToArray(kernels, k);
  }
  b->lib = PTX;
  b->lib_size = strlen(PTX);
}

static cJSON *target_of(bundle *b) { return cJSON_GetObjectItem(b->manifest, "target"); }
static cJSON *kernel_of(bundle *b, int k) { return cJSON_GetArrayItem(cJSON_GetObjectItem(b->plan, "kernels"), k); }
static cJSON *launch_of(bundle *b, int k, int l) {
  return cJSON_GetArrayItem(cJSON_GetObjectItem(kernel_of(b, k), "launches"), l);
}

/* Writes the bundle to path and frees its JSON. */
static int write_bundle(const char *path, bundle *b) {
  unsigned char params[128];
  for (int i = 0; i < 128; i++) params[i] = (unsigned char)i;
  char lib_name[128];
  if (b->lib_name) snprintf(lib_name, sizeof lib_name, "%s", b->lib_name);
  else snprintf(lib_name, sizeof lib_name, "lib/%s.ptx", cJSON_GetObjectItem(target_of(b), "name")->valuestring);
  char *plan = cJSON_PrintUnformatted(b->plan);
  cJSON *entries = cJSON_AddObjectToObject(b->manifest, "entries");
  add_entry_json(entries, "plan.json", plan, strlen(plan));
  add_entry_json(entries, "params.bin", params, sizeof params);
  add_entry_json(entries, lib_name, b->lib, b->lib_size);
  char *manifest = cJSON_Print(b->manifest);
  const char *names[4] = {"manifest.json", "plan.json", "params.bin", lib_name};
  const void *datas[4] = {manifest, plan, params, b->lib};
  size_t sizes[4] = {strlen(manifest), strlen(plan), sizeof params, b->lib_size};
  int ok = write_tar(path, names, datas, sizes, 4);
  free(plan);
  free(manifest);
  cJSON_Delete(b->manifest);
  cJSON_Delete(b->plan);
  memset(b, 0, sizeof *b);
  return ok;
}

static char *path_in_tmp(const char *name) {
  static char paths[8][700];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, sizeof paths[0], "%s/%s", tmpdir, name);
  return p;
}

/* ------------------------------------------------------------------ the fake's counters */

typedef struct {
  int allocations, modules, functions, streams, events, graphs, execs, retains, pushes;
  int launches, graph_launches, inits;
} fake_cuda_stats_t;

#ifdef KILN_HAVE_CUDA
static void fake_stats(fake_cuda_stats_t *s) {
  memset(s, 0, sizeof *s);
#ifdef KILN_FAKE_CUDA
  if (real_cuda) return;
  void *h = dlopen(KILN_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  void (*fn)(fake_cuda_stats_t *);
  void *sym = dlsym(h, "fake_cuda_stats");
  memcpy(&fn, &sym, sizeof sym);
  if (fn) fn(s);
  dlclose(h);
#endif
}
#endif

#ifdef KILN_HAVE_CUDA
/* Nothing of the fake's is alive (after every model is closed). */
static void check_released(const char *what) {
  if (real_cuda) return;
  fake_cuda_stats_t s;
  fake_stats(&s);
  CHECKF(s.allocations == 0 && s.modules == 0 && s.functions == 0 && s.streams == 0 && s.events == 0 &&
             s.graphs == 0 && s.execs == 0 && s.retains == 0 && s.pushes == 0,
         "%s: left alive: %d allocations, %d modules, %d functions, %d streams, %d events, %d graphs, %d graph "
         "execs, %d context retains, %d pushes",
         what, s.allocations, s.modules, s.functions, s.streams, s.events, s.graphs, s.execs, s.retains, s.pushes);
}
#endif

/* ------------------------------------------------------------------ helpers */

static float input_value(int i) { return (float)((i * 37) % 101) - 50.5f; }

static int set_x(kiln_model *m) {
  float x[N];
  for (int i = 0; i < N; i++) x[i] = input_value(i);
  int64_t dims[1] = {N};
  return kiln_model_set_input(m, "x", KILN_DTYPE_FLOAT32, 1, dims, x, sizeof x) == KILN_OK;
}

static int output_is_input(kiln_model *m, const char *what) {
  const void *data = NULL;
  if (!CHECKF(kiln_model_output(m, 0, &data, NULL) == KILN_OK && data, "%s: output: %s", what,
              kiln_model_last_error(m)))
    return 0;
  int bad = 0;
  for (int i = 0; i < N; i++)
    if (((const float *)data)[i] != input_value(i) && bad++ < 3)
      printf("     %s: y[%d] = %g, expected %g\n", what, i, (double)((const float *)data)[i], (double)input_value(i));
  return CHECKF(bad == 0, "%s: %d wrong values in y", what, bad);
}

static kiln_model *open_ok(const char *path, int profile, const char *what) {
  kiln_options o;
  kiln_options_init(&o);
  o.profile = profile;
  kiln_model *m = NULL;
  char err[512];
  kiln_status s = kiln_model_open(path, &o, &m, err, sizeof err);
  CHECKF(s == KILN_OK, "%s: open: %s: %s", what, kiln_status_str(s), err);
  return m;
}

/* Opens path expecting status want and a message holding every needle (NULL-ended). */
static void expect_open(const char *path, kiln_status want, const char *what, ...) {
  kiln_model *m = NULL;
  char err[512];
  kiln_status s = kiln_model_open(path, NULL, &m, err, sizeof err);
  CHECKF(s == want && m == NULL, "%s: got %s, expected %s (%s)", what, kiln_status_str(s), kiln_status_str(want), err);
  va_list ap;
  va_start(ap, what);
  for (const char *needle; (needle = va_arg(ap, const char *));)
    CHECKF(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
  va_end(ap);
  if (m) kiln_model_close(m);
}

#ifdef KILN_HAVE_CUDA
static void expect_run(kiln_model *m, kiln_status want, const char *what, ...) {
  kiln_status s = kiln_model_run(m);
  const char *err = kiln_model_last_error(m);
  CHECKF(s == want, "%s: run got %s, expected %s (%s)", what, kiln_status_str(s), kiln_status_str(want), err);
  va_list ap;
  va_start(ap, what);
  for (const char *needle; (needle = va_arg(ap, const char *));)
    CHECKF(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
  va_end(ap);
}
#endif

/* ------------------------------------------------------------------ tests */

static void test_no_driver(const char *gpu_bundle) {
  const char *missing = path_in_tmp("no-such-libcuda.so.1");
  setenv("KILN_CUDA_DRIVER", missing, 1);
#ifdef KILN_HAVE_CUDA
  expect_open(gpu_bundle, KILN_ERR_LOAD, "missing driver", "cannot load the CUDA driver", missing, (char *)NULL);
#else
  expect_open(gpu_bundle, KILN_ERR_LOAD, "no CUDA support", "built without CUDA support", (char *)NULL);
#endif
  unsetenv("KILN_CUDA_DRIVER");
}

#ifdef KILN_HAVE_CUDA
static void test_end_to_end(const char *one, const char *two) {
  const char *paths[2] = {one, two};
  for (int graphs = 1; graphs >= 0; graphs--)
    for (int p = 0; p < 2; p++) {
      if (!graphs) setenv("KILN_CUDA_GRAPHS", "0", 1);
      char what[96];
      snprintf(what, sizeof what, "%s, %s", p ? "two launches" : "one launch", graphs ? "graphs" : "no graphs");
      fake_cuda_stats_t before, after;
      kiln_model *m = open_ok(paths[p], 0, what);
      if (m) {
        CHECK_STR(kiln_model_target_name(m), "cuda");
        CHECK_STR(kiln_model_target_triple(m), "nvptx64-nvidia-cuda");
        CHECK_INT(kiln_model_threads(m), 1);
        CHECK_INT(kiln_model_set_threads(m, 4), KILN_OK);
        CHECK_INT(kiln_model_kernel_count(m), 1);
        CHECK(set_x(m));
        fake_stats(&before);
        CHECKF(kiln_model_run(m) == KILN_OK, "%s: run: %s", what, kiln_model_last_error(m));
        output_is_input(m, what);
        CHECKF(kiln_model_run(m) == KILN_OK, "%s: second run: %s", what, kiln_model_last_error(m));
        output_is_input(m, what);
        fake_stats(&after);
        if (!real_cuda) {
          CHECKF(after.graph_launches - before.graph_launches == (graphs ? 2 : 0), "%s: %d graph launches", what,
                 after.graph_launches - before.graph_launches);
          CHECKF(after.launches - before.launches == 2 * (p ? 2 : 1), "%s: %d kernel launches", what,
                 after.launches - before.launches);
        }
        /* profiled: events around each kernel, plain launches */
        CHECK_INT(kiln_model_set_profile(m, 1), KILN_OK);
        CHECKF(kiln_model_run(m) == KILN_OK, "%s: profiled run: %s", what, kiln_model_last_error(m));
        output_is_input(m, what);
        const kiln_kernel_profile *prof = NULL;
        const kiln_kernel_call *calls = NULL;
        int32_t count = 0, ncalls = 0;
        CHECK(kiln_model_profile(m, &prof, &count) == KILN_OK && count == 1 && prof[0].calls == 1 &&
              prof[0].total_ns >= 0 && strcmp(prof[0].name, "copy") == 0);
        CHECK(kiln_model_profile_calls(m, &calls, &ncalls) == KILN_OK && ncalls == 1 && calls[0].kernel == 0 &&
              calls[0].end_ns >= calls[0].start_ns);
        kiln_model_close(m);
      }
      check_released(what);
      unsetenv("KILN_CUDA_GRAPHS");
    }
  /* from memory, the caller's bytes not kept */
  size_t size;
  unsigned char *data = read_file(one, &size);
  kiln_model *m = NULL;
  char err[512];
  if (CHECKF(kiln_model_open_memory(data, size, NULL, &m, err, sizeof err) == KILN_OK, "open_memory: %s", err)) {
    memset(data, 0, size);
    CHECK(set_x(m));
    CHECKF(kiln_model_run(m) == KILN_OK, "open_memory: run: %s", kiln_model_last_error(m));
    output_is_input(m, "open_memory");
    kiln_model_close(m);
  }
  free(data);
  check_released("open_memory");
}

static void test_failed_check(const char *path) {
  for (int graphs = 1; graphs >= 0; graphs--) {
    if (!graphs) setenv("KILN_CUDA_GRAPHS", "0", 1);
    kiln_model *m = open_ok(path, 0, "failed check");
    if (m) {
      CHECK(set_x(m));
      expect_run(m, KILN_ERR_RUN, "failed check",
                 "run: kernel 'k1_gather': Gather 'embed' (opset 13), indices 'ids': index 7 is out of range [0, 4]",
                 (char *)NULL);
      const void *out = NULL;
      CHECK_INT(kiln_model_output(m, 0, &out, NULL), KILN_ERR_RUN);
      /* the records are zeroed every run: the same failure again, not a stale one */
      expect_run(m, KILN_ERR_RUN, "failed check again", "index 7 is out of range [0, 4]", (char *)NULL);
      kiln_model_close(m);
    }
    unsetenv("KILN_CUDA_GRAPHS");
  }
  check_released("failed check");
}
#endif

#ifdef KILN_FAKE_CUDA
/* One driver call made to fail at open. */
static void inject_open(const char *path, const char *call, const char *error, const char *extra) {
  setenv("FAKE_CUDA_FAIL", call, 1);
  char what[128];
  snprintf(what, sizeof what, "FAKE_CUDA_FAIL=%s", call);
  expect_open(path, KILN_ERR_LOAD, what, call, error, extra, (char *)NULL);
  unsetenv("FAKE_CUDA_FAIL");
  check_released(what);
}

/* One driver call made to fail in a run (opened without failures); the next run works. */
static void inject_run(const char *path, const char *call, const char *error, int graphs, int profile,
                       const char *extra) {
  char what[128];
  snprintf(what, sizeof what, "FAKE_CUDA_FAIL=%s at run (graphs %s%s)", call, graphs ? "on" : "off",
           profile ? ", profiled" : "");
  if (!graphs) setenv("KILN_CUDA_GRAPHS", "0", 1);
  kiln_model *m = open_ok(path, profile, what);
  if (m) {
    CHECK(set_x(m));
    setenv("FAKE_CUDA_FAIL", call, 1);
    expect_run(m, KILN_ERR_RUN, what, call, error, extra, (char *)NULL);
    unsetenv("FAKE_CUDA_FAIL");
    CHECKF(kiln_model_run(m) == KILN_OK, "%s: the next run: %s", what, kiln_model_last_error(m));
    output_is_input(m, what);
    kiln_model_close(m);
  }
  unsetenv("KILN_CUDA_GRAPHS");
  check_released(what);
}

/* A graph call failing at open: plain launches instead, the runs still right. */
static void inject_fallback(const char *path, const char *call) {
  char what[128];
  snprintf(what, sizeof what, "FAKE_CUDA_FAIL=%s (falls back to plain launches)", call);
  setenv("FAKE_CUDA_FAIL", call, 1);
  kiln_model *m = open_ok(path, 0, what);
  unsetenv("FAKE_CUDA_FAIL");
  if (m) {
    fake_cuda_stats_t before, after;
    fake_stats(&before);
    CHECK(set_x(m));
    CHECKF(kiln_model_run(m) == KILN_OK, "%s: run: %s", what, kiln_model_last_error(m));
    output_is_input(m, what);
    fake_stats(&after);
    CHECKF(after.graph_launches == before.graph_launches && after.launches == before.launches + 1,
           "%s: expected one plain launch, no graph launch", what);
    kiln_model_close(m);
  }
  check_released(what);
}

static void test_injected(const char *path) {
  inject_open(path, "cuInit", "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device");
  inject_open(path, "cuDeviceGet", "CUDA_ERROR_INVALID_DEVICE", "device 0");
  inject_open(path, "cuDeviceGetAttribute", "CUDA_ERROR_INVALID_VALUE", NULL);
  inject_open(path, "cuDevicePrimaryCtxRetain", "CUDA_ERROR_OUT_OF_MEMORY", NULL);
  inject_open(path, "cuCtxPushCurrent_v2", "CUDA_ERROR_INVALID_CONTEXT", NULL);
  inject_open(path, "cuModuleLoadDataEx", "CUDA_ERROR_INVALID_PTX", "JIT log: ptxas application ptx input");
  inject_open(path, "cuModuleGetFunction", "CUDA_ERROR_NOT_FOUND", "entry 'kiln_fake_copy' of lib/cuda.ptx");
  inject_open(path, "cuStreamCreate", "CUDA_ERROR_OUT_OF_MEMORY", NULL);
  inject_open(path, "cuMemAlloc_v2", "CUDA_ERROR_OUT_OF_MEMORY", "bytes of device memory");
  inject_open(path, "cuMemcpyHtoD_v2", "CUDA_ERROR_INVALID_VALUE", "params.bin");
  setenv("FAKE_CUDA_FAIL_CODE", "12345", 1); /* a code the driver cannot name */
  inject_open(path, "cuInit", "CUresult 12345", "no description");
  unsetenv("FAKE_CUDA_FAIL_CODE");

  inject_fallback(path, "cuStreamBeginCapture_v2");
  inject_fallback(path, "cuStreamEndCapture");
  inject_fallback(path, "cuGraphInstantiateWithFlags");
  inject_fallback(path, "cuLaunchKernel"); /* while capturing: plain launches then */
  inject_fallback(path, "cuMemsetD8Async");

  for (int graphs = 0; graphs < 2; graphs++) {
    inject_run(path, "cuMemcpyHtoDAsync_v2", "CUDA_ERROR_INVALID_VALUE", graphs, 0, "input 'x'");
    inject_run(path, "cuMemcpyDtoHAsync_v2", "CUDA_ERROR_INVALID_VALUE", graphs, 0, "output 'y'");
    inject_run(path, "cuStreamSynchronize", "CUDA_ERROR_ILLEGAL_ADDRESS", graphs, 0, "reopen the model");
    inject_run(path, "cuCtxPushCurrent_v2", "CUDA_ERROR_INVALID_CONTEXT", graphs, 0, NULL);
  }
  inject_run(path, "cuGraphLaunch", "CUDA_ERROR_INVALID_VALUE", 1, 0, NULL);
  inject_run(path, "cuLaunchKernel", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 0, 0,
             "run: kernel 'copy': launch 0 'kiln_fake_copy' grid [4, 1, 1] block [256, 1, 1]: cuLaunchKernel");
  inject_run(path, "cuMemsetD8Async", "CUDA_ERROR_INVALID_VALUE", 0, 0, "failure records");
  inject_run(path, "cuLaunchKernel", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 1, 1, "kernel 'copy'");
  inject_run(path, "cuEventRecord", "CUDA_ERROR_INVALID_HANDLE", 1, 1, "profiling");
  inject_run(path, "cuEventElapsedTime_v2", "CUDA_ERROR_INVALID_HANDLE", 1, 1, "profiling");
  inject_run(path, "cuEventCreate", "CUDA_ERROR_OUT_OF_MEMORY", 1, 1, "profiling");
}

/* The driver works, the bundle or device does not fit. */
static void test_load_errors(void) {
  bundle b;
  const char *path = path_in_tmp("load.kiln");

  good_bundle(&b, 0, 0); /* needs sm_90, the fake is told to be 8.6 */
  cJSON_ReplaceItemInObject(target_of(&b), "sm", cJSON_CreateNumber(90));
  CHECK(write_bundle(path, &b));
  setenv("FAKE_CUDA_CC", "8.6", 1);
  expect_open(path, KILN_ERR_LOAD, "device too old", "compute capability 9.0 (sm_90", "Fake GPU", "is 8.6",
              (char *)NULL);
  unsetenv("FAKE_CUDA_CC");
  check_released("device too old");

  good_bundle(&b, 0, 0);
  CHECK(write_bundle(path, &b));
  setenv("KILN_CUDA_DEVICE", "1", 1);
  expect_open(path, KILN_ERR_LOAD, "device 1", "device 1 (the driver sees 1)", "cuDeviceGet",
              "CUDA_ERROR_INVALID_DEVICE", (char *)NULL);
  setenv("KILN_CUDA_DEVICE", "one", 1);
  expect_open(path, KILN_ERR_LOAD, "device 'one'", "KILN_CUDA_DEVICE='one' is not a device number", (char *)NULL);
  unsetenv("KILN_CUDA_DEVICE");
  check_released("device numbers");

  good_bundle(&b, 0, 0); /* text the JIT refuses */
  static const char junk[] = "not ptx at all\n";
  b.lib = junk;
  b.lib_size = strlen(junk);
  CHECK(write_bundle(path, &b));
  expect_open(path, KILN_ERR_LOAD, "PTX refused", "lib/cuda.ptx: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX",
              "JIT log: ptxas fatal", (char *)NULL);
  check_released("PTX refused");

  good_bundle(&b, 0, 0); /* a launch symbol the PTX does not have */
  cJSON_ReplaceItemInObject(launch_of(&b, 0, 0), "symbol", cJSON_CreateString("kiln_nowhere"));
  CHECK(write_bundle(path, &b));
  expect_open(path, KILN_ERR_LOAD, "missing entry", "kernels[0] 'copy': launch 0: entry 'kiln_nowhere'",
              "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND", (char *)NULL);
  check_released("missing entry");

  good_bundle(&b, 0, 0); /* a launch the device refuses: named at run */
  static char ptx_other[8192];
  snprintf(ptx_other, sizeof ptx_other, "%s\n.visible .entry kiln_other(\n\t.param .u64 a,\n\t.param .u64 b,\n"
           "\t.param .u64 c,\n\t.param .u64 d,\n\t.param .u64 r\n)\n{\n\tret;\n}\n", PTX);
  b.lib = ptx_other;
  b.lib_size = strlen(ptx_other);
  cJSON_ReplaceItemInObject(launch_of(&b, 0, 0), "symbol", cJSON_CreateString("kiln_other"));
  CHECK(write_bundle(path, &b));
  kiln_model *m = open_ok(path, 0, "unsupported kernel");
  if (m) {
    CHECK(set_x(m));
    expect_run(m, KILN_ERR_RUN, "unsupported kernel",
               "run: kernel 'copy': launch 0 'kiln_other' grid [4, 1, 1] block [256, 1, 1]: cuLaunchKernel: "
               "CUDA_ERROR_NOT_SUPPORTED (operation not supported)",
               (char *)NULL);
    kiln_model_close(m);
  }
  check_released("unsupported kernel");
}
#endif

/* Malformed GPU bundles: refused before any driver is touched. */
static void test_format_errors(void) {
  const char *path = path_in_tmp("bad.kiln");
  bundle b;
#define BAD(what, needle, ...)                                                                                    \
  do {                                                                                                            \
    good_bundle(&b, 0, 0);                                                                                        \
    __VA_ARGS__;                                                                                                  \
    CHECK(write_bundle(path, &b));                                                                                \
    expect_open(path, KILN_ERR_FORMAT, what, needle, (char *)NULL);                                               \
  } while (0)
  BAD("no launches", "kernels[0]: a GPU kernel needs 'launches'", cJSON_DeleteItemFromObject(kernel_of(&b, 0), "launches"));
  BAD("empty launches", "0 launches (a GPU kernel has 1 to 64)",
      cJSON_ReplaceItemInObject(kernel_of(&b, 0), "launches", cJSON_CreateArray()));
  BAD("65 launches", "65 launches", {
    cJSON *l = cJSON_GetObjectItem(kernel_of(&b, 0), "launches");
    for (int i = 0; i < 64; i++) cJSON_AddItemToArray(l, launch_json("kiln_fake_copy", 1, 1, 1, 1, 1, 1));
  });
  BAD("grid 0", "launches[0]: grid x: 0 is out of range [1, 2147483647]",
      cJSON_ReplaceItemInObject(launch_of(&b, 0, 0), "grid", cJSON_CreateIntArray((int[]){0, 1, 1}, 3)));
  BAD("grid y", "grid y: 65536 is out of range [1, 65535]",
      cJSON_ReplaceItemInObject(launch_of(&b, 0, 0), "grid", cJSON_CreateIntArray((int[]){1, 65536, 1}, 3)));
  BAD("grid of 2", "grid must be [x, y, z], got 2 numbers",
      cJSON_ReplaceItemInObject(launch_of(&b, 0, 0), "grid", cJSON_CreateIntArray((int[]){1, 1}, 2)));
  BAD("block 2048 threads", "block [64, 32, 1] is 2048 threads, over CUDA's 1024",
      cJSON_ReplaceItemInObject(launch_of(&b, 0, 0), "block", cJSON_CreateIntArray((int[]){64, 32, 1}, 3)));
  BAD("block z 65", "block z: 65 is out of range [1, 64]",
      cJSON_ReplaceItemInObject(launch_of(&b, 0, 0), "block", cJSON_CreateIntArray((int[]){1, 1, 65}, 3)));
  BAD("bad symbol", "symbol 'kiln-k0' is not a C identifier",
      cJSON_ReplaceItemInObject(launch_of(&b, 0, 0), "symbol", cJSON_CreateString("kiln-k0")));
  BAD("no sm", "manifest.json: target: missing 'sm'", cJSON_DeleteItemFromObject(target_of(&b), "sm"));
  BAD("sm a string", "'sm'", cJSON_ReplaceItemInObject(target_of(&b), "sm", cJSON_CreateString("80")));
  BAD("workspace", "workspace_bytes is 64, but a GPU bundle",
      cJSON_ReplaceItemInObject(b.manifest, "workspace_bytes", cJSON_CreateNumber(64)));
  BAD("features", "target.features lists CPU features",
      cJSON_AddItemToObject(target_of(&b), "features", cJSON_CreateStringArray((const char *[]){"avx2"}, 1)));
  BAD("a .so in a GPU bundle", "expected plan.json, params.bin, lib/cuda.ptx", b.lib_name = "lib/cuda.so");
  BAD("PTX with NUL", "lib/cuda.ptx: byte 2 is 0x00; PTX is 7-bit ASCII", b.lib = "//\0x", b.lib_size = 4);
  BAD("PTX not ASCII", "byte 0 is 0xc3", b.lib = "\xc3\xa9", b.lib_size = 2);
  BAD("empty PTX", "the PTX library entry is empty", b.lib_size = 0);
#undef BAD
  /* lib/cuda.so in the archive while the manifest lists lib/cuda.ptx */
  good_bundle(&b, 0, 0);
  char *plan = cJSON_PrintUnformatted(b.plan);
  unsigned char params[128] = {0};
  cJSON *entries = cJSON_AddObjectToObject(b.manifest, "entries");
  add_entry_json(entries, "plan.json", plan, strlen(plan));
  add_entry_json(entries, "params.bin", params, sizeof params);
  add_entry_json(entries, "lib/cuda.ptx", PTX, strlen(PTX));
  char *manifest = cJSON_Print(b.manifest);
  const char *names[5] = {"manifest.json", "plan.json", "params.bin", "lib/cuda.so", "lib/cuda.ptx"};
  const void *datas[5] = {manifest, plan, params, PTX, PTX};
  size_t sizes[5] = {strlen(manifest), strlen(plan), sizeof params, strlen(PTX), strlen(PTX)};
  CHECK(write_tar(path, names, datas, sizes, 4));
  expect_open(path, KILN_ERR_FORMAT, "archive .so", "library entry 'lib/cuda.so' does not match the target "
              "(expected 'lib/cuda.ptx')", (char *)NULL);
  CHECK(write_tar(path, names, datas, sizes, 5));
  expect_open(path, KILN_ERR_FORMAT, "two libraries", "more than one library entry", (char *)NULL);
  free(plan);
  free(manifest);
  cJSON_Delete(b.manifest);
  cJSON_Delete(b.plan);
}

/* A CPU bundle: runs with no CUDA driver anywhere; a .ptx library in it is refused. */
static void test_cpu_bundle(void) {
  char src[700], lib[700], cmd[2400];
  snprintf(src, sizeof src, "%s/k.c", tmpdir);
  snprintf(lib, sizeof lib, "%s/k.so", tmpdir);
  FILE *f = fopen(src, "w");
  if (!CHECK(f)) return;
  fputs("#include \"kiln_abi.h\"\n"
        "int32_t k_copy(void *const *b, const kiln_ctx *ctx) {\n"
        "  (void)ctx; for (int i = 0; i < 1024; i++) ((float *)b[1])[i] = ((const float *)b[0])[i];\n"
        "  return 0;\n}\n",
        f);
  fclose(f);
  const char *cc = getenv("KILN_TEST_CC");
  snprintf(cmd, sizeof cmd, "%s -O2 -shared -fPIC -I'%s' -o '%s' '%s'", cc && *cc ? cc : "cc", KILN_RUNTIME_DIR, lib,
           src);
  if (!CHECKF(system(cmd) == 0, "cc -shared failed")) return;
  size_t lib_size = 0;
  unsigned char *so = read_file(lib, &lib_size);
  if (!CHECK(so)) return;
  const char *path = path_in_tmp("cpu.kiln");
  for (int as_ptx = 0; as_ptx < 2; as_ptx++) {
    bundle b;
    good_bundle(&b, 0, 0);
    cJSON *t = target_of(&b);
    cJSON_ReplaceItemInObject(t, "name", cJSON_CreateString("host"));
    cJSON_ReplaceItemInObject(t, "triple", cJSON_CreateString("x86_64-pc-linux-gnu"));
    cJSON_DeleteItemFromObject(t, "sm");
    cJSON *k = kernel_of(&b, 0);
    cJSON_DeleteItemFromObject(k, "launches");
    cJSON_AddStringToObject(k, "symbol", "k_copy");
    b.lib = so;
    b.lib_size = lib_size;
    b.lib_name = as_ptx ? "lib/host.ptx" : "lib/host.so";
    CHECK(write_bundle(path, &b));
    if (as_ptx) {
      expect_open(path, KILN_ERR_FORMAT, "a .ptx in a CPU bundle", "lib/host.so", (char *)NULL);
      continue;
    }
#if defined(__x86_64__)
    setenv("KILN_CUDA_DRIVER", path_in_tmp("no-such-libcuda.so"), 1);
    kiln_model *m = open_ok(path, 0, "CPU bundle without a driver");
    if (m) {
      CHECK(kiln_model_threads(m) >= 1);
      CHECK(set_x(m));
      CHECKF(kiln_model_run(m) == KILN_OK, "CPU bundle: %s", kiln_model_last_error(m));
      output_is_input(m, "CPU bundle");
      kiln_model_close(m);
    }
    unsetenv("KILN_CUDA_DRIVER");
#endif
  }
  free(so);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/kiln-cuda-test-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("cannot create a temporary folder: %s\n", strerror(errno));
    return 1;
  }
  const char *real = getenv("KILN_TEST_REAL_CUDA");
  real_cuda = real && strcmp(real, "1") == 0;
  unsetenv("KILN_CUDA_GRAPHS");
  unsetenv("KILN_CUDA_DEVICE");
  unsetenv("FAKE_CUDA_FAIL");
  char *one = strdup(path_in_tmp("one.kiln")), *two = strdup(path_in_tmp("two.kiln")),
       *failing = strdup(path_in_tmp("failing.kiln"));
  bundle b;
  good_bundle(&b, 0, 0);
  CHECK(write_bundle(one, &b));
  good_bundle(&b, 1, 0);
  CHECK(write_bundle(two, &b));
  good_bundle(&b, 0, 1);
  CHECK(write_bundle(failing, &b));

  test_no_driver(one);
  test_format_errors();
  if (!real_cuda) test_cpu_bundle(); /* needs cc, which a GPU machine may lack */
#ifdef KILN_HAVE_CUDA
  if (real_cuda) {
    printf("test_cuda_runtime: on the real CUDA driver\n");
    unsetenv("KILN_CUDA_DRIVER");
    test_end_to_end(one, two);
    test_failed_check(failing);
  }
#endif
#ifdef KILN_FAKE_CUDA
  if (!real_cuda) {
    setenv("KILN_CUDA_DRIVER", KILN_FAKE_CUDA, 1);
    test_end_to_end(one, two);
    test_failed_check(failing);
    test_injected(one);
    test_load_errors();
    unsetenv("KILN_CUDA_DRIVER");
  }
#else
  CHECK_SKIP("the fake CUDA driver is not built (no cuda.h): only the refusal and format checks ran");
#endif
  free(one);
  free(two);
  free(failing);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("note: could not remove %s\n", tmpdir);
  return check_finish("test_cuda_runtime");
}
