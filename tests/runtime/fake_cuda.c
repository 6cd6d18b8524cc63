/* fake_cuda.c — a stand-in for libcuda.so.1 on host memory, so that the runtime's
 * GPU path (runtime/cuda.c) is tested on machines without a GPU (test-only:
 * libkiln_fake_cuda.so, never installed; tests/runtime/test_cuda_runtime.c points
 * KILN_CUDA_DRIVER at it).
 *
 * It defines exactly the driver entry points cuda.c looks up, under the names
 * cuda.h maps them to (the prototypes come from cuda.h, so a signature that
 * drifts does not compile). Device memory is malloc'ed host memory (a
 * CUdeviceptr is its address) and every copy, memset and kernel argument is
 * checked to lie inside a live allocation. It is strict where the real driver is:
 * nothing but cuInit and device queries works before cuInit, nothing that needs a
 * context works unless one is pushed, and pops must match pushes.
 *
 * Modules: the text must start with "//" or ".version" (else CUDA_ERROR_INVALID_PTX
 * and a line in the JIT error log); cuModuleGetFunction finds "NAME" iff the text
 * has ".entry NAME(" and counts its ".param"s. Kernels: kiln_fake_copy copies
 * 4 * grid.x * block.x bytes from its first parameter to its second;
 * kiln_fake_fail fills the failure record (its last parameter) with set 1,
 * check 0, value 7, range [0, 5) unless already set; any other kernel →
 * CUDA_ERROR_NOT_SUPPORTED. Stream capture records memsets and launches (copying
 * the parameter values, as the driver does) and a graph replays them.
 *
 * Error injection: FAKE_CUDA_FAIL=<symbol> (e.g. cuMemAlloc_v2) makes that entry
 * point fail (FAKE_CUDA_FAIL_CODE=<CUresult> chooses the error; else a fitting
 * default). fake_cuda_stats reports what is alive, for leak checks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#define EXPORT __attribute__((visibility("default")))

struct CUctx_st { int dummy; };
struct CUmod_st { char *text; };
struct CUfunc_st {
  char name[256];
  int params;
  struct CUfunc_st *next;
};
typedef struct {
  int launch; /* 0: memset */
  CUdeviceptr dst;
  unsigned char value;
  size_t bytes;
  CUfunction fn;
  unsigned grid[3], block[3];
  CUdeviceptr args[64];
} op;
struct CUstream_st {
  int capturing;
  int invalidated;
  op *ops;
  int count, cap;
};
struct CUgraph_st { op *ops; int count; };
struct CUgraphExec_st { op *ops; int count; };
struct CUevent_st { int64_t ns; };

typedef struct {
  int allocations, modules, functions, streams, events, graphs, execs, retains, pushes;
  int launches, graph_launches, inits;
} fake_cuda_stats_t;

static fake_cuda_stats_t stats;
static int inited;
static struct CUctx_st the_ctx;
static struct CUfunc_st *functions; /* every function handed out, freed with its module */

typedef struct {
  void *p;
  size_t bytes;
} allocation;
static allocation *allocs;
static int alloc_count, alloc_cap;

EXPORT void fake_cuda_stats(fake_cuda_stats_t *out) { *out = stats; }

static CUresult injected(const char *name, CUresult fallback) {
  const char *f = getenv("FAKE_CUDA_FAIL");
  if (!f || strcmp(f, name) != 0) return CUDA_SUCCESS;
  const char *code = getenv("FAKE_CUDA_FAIL_CODE");
  return code && *code ? (CUresult)atoi(code) : fallback;
}

#define INJECT(name, fallback)                                                                                    \
  do {                                                                                                            \
    CUresult r_ = injected(name, fallback);                                                                       \
    if (r_ != CUDA_SUCCESS) return r_;                                                                            \
  } while (0)
#define NEED_CONTEXT()                                                                                            \
  do {                                                                                                            \
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;                                                               \
    if (stats.pushes <= 0) return CUDA_ERROR_INVALID_CONTEXT;                                                     \
  } while (0)

static int inside(CUdeviceptr p, size_t bytes) {
  for (int i = 0; i < alloc_count; i++) {
    uintptr_t b = (uintptr_t)allocs[i].p;
    if (p >= b && p - b <= allocs[i].bytes && bytes <= allocs[i].bytes - (p - b)) return 1;
  }
  return 0;
}

static const struct { CUresult code; const char *name, *text; } errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **p) {
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].code == error) return *p = errors[i].name, CUDA_SUCCESS;
  *p = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **p) {
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].code == error) return *p = errors[i].text, CUDA_SUCCESS;
  *p = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuInit(unsigned int flags) {
  INJECT("cuInit", CUDA_ERROR_NO_DEVICE);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  inited = 1;
  stats.inits++;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *dev, int ordinal) {
  INJECT("cuDeviceGet", CUDA_ERROR_INVALID_DEVICE);
  if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0 || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "Fake GPU");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev) {
  INJECT("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE);
  if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  const char *cc = getenv("FAKE_CUDA_CC"); /* "MAJOR.MINOR", default 9.0 */
  int major = 9, minor = 0;
  if (cc && sscanf(cc, "%d.%d", &major, &minor) != 2) major = 9, minor = 0;
  *value = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? major
           : attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? minor
                                                                  : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  INJECT("cuDevicePrimaryCtxRetain", CUDA_ERROR_OUT_OF_MEMORY);
  if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = &the_ctx;
  stats.retains++;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (stats.retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  stats.retains--;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  INJECT("cuCtxPushCurrent_v2", CUDA_ERROR_INVALID_CONTEXT);
  if (ctx != &the_ctx || stats.retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  stats.pushes++;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *ctx) {
  if (stats.pushes <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  stats.pushes--;
  if (ctx) *ctx = &the_ctx;
  return CUDA_SUCCESS;
}

static void jit_log(unsigned n, CUjit_option *options, void **values, const char *msg) {
  char *buf = NULL;
  size_t cap = 0;
  for (unsigned i = 0; i < n; i++) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) buf = values[i];
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) cap = (size_t)(uintptr_t)values[i];
  }
  if (buf && cap > 0) snprintf(buf, cap, "%s", msg);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n, CUjit_option *options,
                                    void **values) {
  NEED_CONTEXT();
  const char *text = image;
  if (strncmp(text, "//", 2) != 0 && strncmp(text, ".version", 8) != 0) {
    jit_log(n, options, values, "ptxas fatal   : fake driver: PTX must start with '//' or '.version'\n");
    return CUDA_ERROR_INVALID_PTX;
  }
  CUresult r = injected("cuModuleLoadDataEx", CUDA_ERROR_INVALID_PTX);
  if (r != CUDA_SUCCESS) {
    jit_log(n, options, values, "ptxas application ptx input, line 1; error   : injected failure\n");
    return r;
  }
  struct CUmod_st *m = calloc(1, sizeof *m);
  m->text = strdup(text);
  *module = m;
  stats.modules++;
  return CUDA_SUCCESS;
}

static int ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name) {
  INJECT("cuModuleGetFunction", CUDA_ERROR_NOT_FOUND);
  NEED_CONTEXT();
  if (!module) return CUDA_ERROR_INVALID_HANDLE;
  size_t len = strlen(name);
  for (const char *p = strstr(module->text, ".entry"); p; p = strstr(p + 1, ".entry")) {
    const char *q = p + 6;
    while (*q == ' ' || *q == '\t') q++;
    if (strncmp(q, name, len) != 0 || ident(q[len])) continue;
    q += len;
    while (*q == ' ' || *q == '\t' || *q == '\n') q++;
    if (*q != '(') continue;
    const char *close = strchr(q, ')');
    int params = 0;
    for (const char *s = strstr(q, ".param"); s && (!close || s < close); s = strstr(s + 1, ".param")) params++;
    struct CUfunc_st *f = calloc(1, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->params = params;
    f->next = functions;
    functions = f;
    stats.functions++;
    *fn = f;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  if (!module) return CUDA_ERROR_INVALID_HANDLE;
  free(module->text);
  free(module);
  stats.modules--;
  if (stats.modules == 0) /* the test's models open one module each: free the handles with the last */
    while (functions) {
      struct CUfunc_st *next = functions->next;
      free(functions);
      functions = next;
      stats.functions--;
    }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  INJECT("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY);
  NEED_CONTEXT();
  (void)flags;
  *stream = calloc(1, sizeof **stream);
  stats.streams++;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  free(stream->ops);
  free(stream);
  stats.streams--;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  INJECT("cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS);
  NEED_CONTEXT();
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  INJECT("cuMemAlloc_v2", CUDA_ERROR_OUT_OF_MEMORY);
  NEED_CONTEXT();
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void *mem = NULL;
  if (posix_memalign(&mem, 256, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(mem, 0xA5, bytes); /* device memory is not zeroed */
  if (alloc_count == alloc_cap) {
    alloc_cap = alloc_cap ? 2 * alloc_cap : 8;
    allocs = realloc(allocs, (size_t)alloc_cap * sizeof *allocs);
  }
  allocs[alloc_count++] = (allocation){mem, bytes};
  stats.allocations++;
  *p = (CUdeviceptr)(uintptr_t)mem;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
  for (int i = 0; i < alloc_count; i++)
    if ((CUdeviceptr)(uintptr_t)allocs[i].p == p) {
      free(allocs[i].p);
      allocs[i] = allocs[--alloc_count];
      stats.allocations--;
      if (alloc_count == 0) {
        free(allocs);
        allocs = NULL;
        alloc_cap = 0;
      }
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  INJECT("cuMemcpyHtoD_v2", CUDA_ERROR_INVALID_VALUE);
  NEED_CONTEXT();
  if (!inside(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return CUDA_SUCCESS;
}

static CUresult stream_ok(CUstream s) {
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  return s->capturing ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
  INJECT("cuMemcpyHtoDAsync_v2", CUDA_ERROR_INVALID_VALUE);
  NEED_CONTEXT();
  CUresult r = stream_ok(s);
  if (r != CUDA_SUCCESS) return r;
  if (!inside(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
  INJECT("cuMemcpyDtoHAsync_v2", CUDA_ERROR_INVALID_VALUE);
  NEED_CONTEXT();
  CUresult r = stream_ok(s);
  if (r != CUDA_SUCCESS) return r;
  if (!inside(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

static CUresult run_op(const op *o) {
  if (!o->launch) {
    if (!inside(o->dst, o->bytes)) return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)o->dst, o->value, o->bytes);
    return CUDA_SUCCESS;
  }
  const CUdeviceptr *a = o->args;
  int n = o->fn->params;
  if (strcmp(o->fn->name, "kiln_fake_copy") == 0) {
    size_t bytes = 4 * (size_t)o->grid[0] * o->block[0];
    if (n < 2 || !inside(a[0], bytes) || !inside(a[1], bytes)) return CUDA_ERROR_ILLEGAL_ADDRESS;
    memmove((void *)(uintptr_t)a[1], (const void *)(uintptr_t)a[0], bytes);
  } else if (strcmp(o->fn->name, "kiln_fake_fail") == 0) {
    if (n < 1 || !inside(a[n - 1], 32)) return CUDA_ERROR_ILLEGAL_ADDRESS;
    struct { int32_t set, check; int64_t value, lo, hi; } *rec = (void *)(uintptr_t)a[n - 1];
    if (rec->set == 0) {
      rec->set = 1;
      rec->check = 0;
      rec->value = 7;
      rec->lo = 0;
      rec->hi = 5;
    }
  } else {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  stats.launches++;
  return CUDA_SUCCESS;
}

static CUresult enqueue(CUstream s, const op *o) {
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (!s->capturing) return run_op(o);
  if (s->count == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 8;
    s->ops = realloc(s->ops, (size_t)s->cap * sizeof *s->ops);
  }
  s->ops[s->count++] = *o;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream s) {
  INJECT("cuMemsetD8Async", CUDA_ERROR_INVALID_VALUE);
  NEED_CONTEXT();
  op o = {0};
  o.dst = dst;
  o.value = value;
  o.bytes = bytes;
  return enqueue(s, &o);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
  NEED_CONTEXT();
  CUresult r = injected("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  if (r == CUDA_SUCCESS && (!f || f->params > 64 || extra || shared != 0 || (f->params > 0 && !params)))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && strcmp(f->name, "kiln_fake_copy") != 0 && strcmp(f->name, "kiln_fake_fail") != 0)
    r = CUDA_ERROR_NOT_SUPPORTED;
  if (r != CUDA_SUCCESS) {
    if (s && s->capturing) s->invalidated = 1;
    return r;
  }
  op o = {0};
  o.launch = 1;
  o.fn = f;
  o.grid[0] = gx, o.grid[1] = gy, o.grid[2] = gz;
  o.block[0] = bx, o.block[1] = by, o.block[2] = bz;
  for (int i = 0; i < f->params; i++) memcpy(&o.args[i], params[i], sizeof(CUdeviceptr));
  return enqueue(s, &o);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned int flags) {
  INJECT("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY);
  NEED_CONTEXT();
  (void)flags;
  *e = calloc(1, sizeof **e);
  stats.events++;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) {
  INJECT("cuEventRecord", CUDA_ERROR_INVALID_HANDLE);
  NEED_CONTEXT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = stream_ok(s);
  if (r != CUDA_SUCCESS) return r;
  e->ns = now_ns();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  INJECT("cuEventElapsedTime_v2", CUDA_ERROR_INVALID_HANDLE);
  NEED_CONTEXT();
  if (!a || !b) return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)((double)(b->ns - a->ns) / 1e6);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  free(e);
  stats.events--;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  INJECT("cuStreamBeginCapture_v2", CUDA_ERROR_NOT_SUPPORTED);
  NEED_CONTEXT();
  (void)mode;
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  s->capturing = 1;
  s->invalidated = 0;
  s->count = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *graph) {
  NEED_CONTEXT();
  if (!s || !s->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  s->capturing = 0;
  *graph = NULL;
  if (s->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  CUresult r = injected("cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  if (r != CUDA_SUCCESS) return r;
  struct CUgraph_st *g = calloc(1, sizeof *g);
  g->ops = s->ops;
  g->count = s->count;
  s->ops = NULL;
  s->count = s->cap = 0;
  stats.graphs++;
  *graph = g;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *exec, CUgraph g, unsigned long long flags) {
  INJECT("cuGraphInstantiateWithFlags", CUDA_ERROR_NOT_SUPPORTED);
  NEED_CONTEXT();
  (void)flags;
  if (!g) return CUDA_ERROR_INVALID_HANDLE;
  struct CUgraphExec_st *x = calloc(1, sizeof *x);
  x->ops = malloc((size_t)(g->count ? g->count : 1) * sizeof *x->ops);
  memcpy(x->ops, g->ops, (size_t)g->count * sizeof *x->ops);
  x->count = g->count;
  stats.execs++;
  *exec = x;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec x, CUstream s) {
  INJECT("cuGraphLaunch", CUDA_ERROR_INVALID_VALUE);
  NEED_CONTEXT();
  if (!x) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = stream_ok(s);
  if (r != CUDA_SUCCESS) return r;
  for (int i = 0; i < x->count; i++)
    if ((r = run_op(&x->ops[i])) != CUDA_SUCCESS) return r;
  stats.graph_launches++;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec x) {
  if (!x) return CUDA_ERROR_INVALID_HANDLE;
  free(x->ops);
  free(x);
  stats.execs--;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
  if (!g) return CUDA_ERROR_INVALID_HANDLE;
  free(g->ops);
  free(g);
  stats.graphs--;
  return CUDA_SUCCESS;
}
