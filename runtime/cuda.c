/* cuda.c — runs a GPU bundle (target triple nvptx64-*: `kiln compile --target cuda`)
 * through the CUDA driver API.
 *
 * The driver is opened with dlopen — $KILN_CUDA_DRIVER if set, else libcuda.so.1 —
 * and every entry point is looked up with dlsym under the name cuda.h maps its
 * API to (cuMemAlloc → cuMemAlloc_v2, …), so the runtime never links libcuda: a
 * CPU bundle runs on a machine without any NVIDIA software, and a GPU bundle
 * opened there fails with one clear KILN_ERR_LOAD instead of a missing library at
 * program start. Built without cuda.h (KILN_HAVE_CUDA undefined: board and cross
 * builds, or a host without the toolkit's headers), GPU bundles are refused at
 * open with a message saying so.
 *
 * Open: cuInit; the device $KILN_CUDA_DEVICE (default 0) with a compute
 * capability of at least the bundle's target.sm; its primary context, made
 * current (pushed and popped) around every group of calls so the model works
 * from any thread; the PTX module (JIT-compiled by the driver; its error log goes
 * into the message) and the function of every launch; a stream; ONE device
 * allocation laid out as
 *   [params.bin][arena][input 0]…[input n-1][output 0]…[output m-1][records]
 * (each part 64-byte aligned); params.bin copied once (and its host copy
 * freed). Every kernel's launch parameters — the device pointers of its args, in
 * order, then the pointer of its failure record — are computed once here.
 * Records: every kernel gets its own 32-byte record (krt_check_failure's layout,
 * {set, check, value, lo, hi}), so that a failed check names its kernel although
 * all kernels of a run are launched before any result is looked at.
 *
 * Run: inputs host → device, the records zeroed, every launch of every kernel
 * in order on the stream, the outputs and records device → host, one
 * synchronization. The zeroing and the launches are captured once into a CUDA
 * graph at open and replayed with one cuGraphLaunch per run, where the driver
 * has graphs ($KILN_CUDA_GRAPHS=0 turns them off; any failure while capturing
 * falls back to plain launches, which then report the failing launch
 * precisely). Profiled runs use plain launches with an event between kernels.
 *
 * Every failing call ends in KILN_ERR_LOAD (open) or KILN_ERR_RUN (run) naming
 * the call, the CUresult's name and text, and at run the kernel, launch symbol,
 * grid and block. Close releases whatever open got to. Nothing here is global:
 * each model holds its own handle of the driver (opened RTLD_NODELETE: the
 * driver's threads outlive any one model, so it must never be unmapped). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "krt.h"

int krt_triple_is_gpu(const char *triple) {
  return triple && strncmp(triple, "nvptx64", 7) == 0 && (triple[7] == '\0' || triple[7] == '-');
}

/* PTX is 7-bit ASCII text: no NUL (the driver reads it as a C string), nothing else. */
static kiln_status check_ptx(const krt_entry *ptx, krt_error *err) {
  if (!ptx || ptx->size == 0) return krt_fail(err, KILN_ERR_FORMAT, "bundle: the PTX library entry is empty");
  for (size_t i = 0; i < ptx->size; i++)
    if (ptx->data[i] == 0 || ptx->data[i] >= 0x80)
      return krt_fail(err, KILN_ERR_FORMAT, "%s: byte %zu is 0x%02x; PTX is 7-bit ASCII text without NUL",
                      ptx->name, i, (unsigned)ptx->data[i]);
  return KILN_OK;
}

#ifndef KILN_HAVE_CUDA

kiln_status krt_cuda_open(kiln_model *m, const krt_entry *ptx, krt_error *err) {
  if (check_ptx(ptx, err) != KILN_OK) return err->status;
  return krt_fail(err, KILN_ERR_LOAD, "bundle is built for %.64s (a GPU): this runtime was built without CUDA "
                  "support (cuda.h was not found at build time)", m->target_triple);
}

kiln_status krt_cuda_run(kiln_model *m, int32_t *failed_kernel, krt_error *err) {
  (void)m;
  *failed_kernel = -1;
  return krt_fail(err, KILN_ERR_RUN, "run: this runtime was built without CUDA support");
}

void krt_cuda_close(kiln_model *m) { (void)m; }

#else

#include <cuda.h>

#define STR_(x) #x
#define STR(x) STR_(x) /* the symbol cuda.h maps a name to: STR(cuMemAlloc) is "cuMemAlloc_v2" */

/* Every entry point used: X(name, required). The optional ones: graphs (plain
 * launches without them), and calls that only improve messages. */
#define DRIVER_API(X)                                                                                                 \
  X(cuGetErrorName, 1) X(cuGetErrorString, 1) X(cuInit, 1) X(cuDriverGetVersion, 0) X(cuDeviceGetCount, 0)         \
  X(cuDeviceGet, 1) X(cuDeviceGetName, 0) X(cuDeviceGetAttribute, 1) X(cuDevicePrimaryCtxRetain, 1)                  \
  X(cuDevicePrimaryCtxRelease, 1) X(cuCtxPushCurrent, 1) X(cuCtxPopCurrent, 1) X(cuModuleLoadDataEx, 1)              \
  X(cuModuleGetFunction, 1) X(cuModuleUnload, 1) X(cuStreamCreate, 1) X(cuStreamDestroy, 1)                          \
  X(cuStreamSynchronize, 1) X(cuMemAlloc, 1) X(cuMemFree, 1) X(cuMemcpyHtoD, 1) X(cuMemcpyHtoDAsync, 1)              \
  X(cuMemcpyDtoHAsync, 1) X(cuMemsetD8Async, 1) X(cuLaunchKernel, 1) X(cuEventCreate, 1) X(cuEventRecord, 1)         \
  X(cuEventElapsedTime, 1) X(cuEventDestroy, 1) X(cuStreamBeginCapture, 0) X(cuStreamEndCapture, 0)                  \
  X(cuGraphInstantiate, 0) X(cuGraphLaunch, 0) X(cuGraphExecDestroy, 0) X(cuGraphDestroy, 0)

typedef struct {
#define DRIVER_FIELD(f, required) __typeof__(&f) p_##f;
  DRIVER_API(DRIVER_FIELD)
#undef DRIVER_FIELD
} driver_api;

#define RECORD_BYTES ((uint64_t)sizeof(krt_check_failure))

struct krt_cuda {
  void *lib;
  char driver[256]; /* the path dlopen'ed, for messages */
  driver_api api;
  CUdevice dev;
  int device_number;
  int ctx_retained;
  CUcontext ctx;
  CUmodule module;
  CUstream stream;
  CUdeviceptr mem;            /* the one allocation; 0: none */
  CUdeviceptr params, arena, records;
  CUdeviceptr *inputs, *outputs;
  CUdeviceptr *values;        /* kernel k's parameters at values + first_arg + k: its args, then its record */
  void **param_ptrs;          /* &values[i]: what cuLaunchKernel reads */
  krt_check_failure *host_records; /* kernel_count, copied back after every run */
  CUgraph graph;
  CUgraphExec exec;           /* NULL: plain launches */
  CUevent *events;            /* kernel_count + 1, created at the first profiled run */
  int32_t event_count;
};

/* "CALL: CUDA_ERROR_NAME (its text)" after the prefix. */
static kiln_status cu_fail(const struct krt_cuda *c, krt_error *err, kiln_status status, const char *prefix,
                           const char *call, CUresult r) {
  const char *name = NULL, *text = NULL;
  if (!c->api.p_cuGetErrorName || c->api.p_cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = NULL;
  if (!c->api.p_cuGetErrorString || c->api.p_cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = NULL;
  char code[32];
  snprintf(code, sizeof code, "CUresult %d", (int)r);
  return krt_fail(err, status, "%s%s: %s (%s)", prefix, call, name ? name : code, text ? text : "no description");
}

/* Calls driver entry point f; on failure returns from the calling function with
 * cu_fail's status. */
#define TRY(c, err, status, prefix, f, ...)                                                                       \
  do {                                                                                                            \
    CUresult r_ = (c)->api.p_##f(__VA_ARGS__);                                                                    \
    if (r_ != CUDA_SUCCESS) return cu_fail((c), (err), (status), (prefix), STR(f), r_);                           \
  } while (0)

static kiln_status resolve(struct krt_cuda *c, const char *name, int required, void *slot, krt_error *err) {
  void *sym = dlsym(c->lib, name);
  if (!sym && strcmp(name, "cuEventElapsedTime_v2") == 0) sym = dlsym(c->lib, "cuEventElapsedTime"); /* < 12.8 */
  if (!sym && required)
    return krt_fail(err, KILN_ERR_LOAD, "GPU bundle: the CUDA driver %s lacks %s (an older driver than this "
                    "runtime needs?)", c->driver, name);
  memcpy(slot, &sym, sizeof sym); /* POSIX: a dlsym'd function address converts to a function pointer */
  return KILN_OK;
}

static kiln_status open_driver(struct krt_cuda *c, krt_error *err) {
  const char *path = getenv("KILN_CUDA_DRIVER");
  if (!path || !*path) path = "libcuda.so.1";
  snprintf(c->driver, sizeof c->driver, "%s", path);
  dlerror();
  c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!c->lib) {
    const char *why = dlerror();
    return krt_fail(err, KILN_ERR_LOAD, "GPU bundle: cannot load the CUDA driver %s: %s (a GPU bundle needs the "
                    "NVIDIA driver; $KILN_CUDA_DRIVER names another library)", c->driver, why ? why : "dlopen failed");
  }
#define DRIVER_RESOLVE(f, required)                                                                                \
  if (resolve(c, STR(f), required, &c->api.p_##f, err) != KILN_OK) return err->status;
  DRIVER_API(DRIVER_RESOLVE)
#undef DRIVER_RESOLVE
  return KILN_OK;
}

/* $KILN_CUDA_DEVICE (default 0), its compute capability against target.sm. */
static kiln_status open_device(kiln_model *m, struct krt_cuda *c, krt_error *err) {
  const char *p = "GPU bundle: ";
  TRY(c, err, KILN_ERR_LOAD, p, cuInit, 0);
  const char *env = getenv("KILN_CUDA_DEVICE");
  if (env && *env) {
    char *end = NULL;
    long n = strtol(env, &end, 10);
    if (*end || n < 0 || n > 1023)
      return krt_fail(err, KILN_ERR_LOAD, "GPU bundle: KILN_CUDA_DEVICE='%.32s' is not a device number", env);
    c->device_number = (int)n;
  }
  CUresult r = c->api.p_cuDeviceGet(&c->dev, c->device_number);
  if (r != CUDA_SUCCESS) {
    int count = -1;
    char pre[128];
    if (c->api.p_cuDeviceGetCount && c->api.p_cuDeviceGetCount(&count) != CUDA_SUCCESS) count = -1;
    if (count >= 0)
      snprintf(pre, sizeof pre, "GPU bundle: device %d (the driver sees %d): ", c->device_number, count);
    else
      snprintf(pre, sizeof pre, "GPU bundle: device %d: ", c->device_number);
    return cu_fail(c, err, KILN_ERR_LOAD, pre, STR(cuDeviceGet), r);
  }
  int major = 0, minor = 0;
  TRY(c, err, KILN_ERR_LOAD, p, cuDeviceGetAttribute, &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev);
  TRY(c, err, KILN_ERR_LOAD, p, cuDeviceGetAttribute, &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev);
  if (major * 10 + minor < m->target_sm) {
    char name[128] = "";
    if (c->api.p_cuDeviceGetName && c->api.p_cuDeviceGetName(name, (int)sizeof name, c->dev) != CUDA_SUCCESS)
      name[0] = '\0';
    return krt_fail(err, KILN_ERR_LOAD, "bundle is built for compute capability %d.%d (sm_%d, target '%.64s'); "
                    "device %d%s%s%s is %d.%d", m->target_sm / 10, m->target_sm % 10, m->target_sm, m->target_name,
                    c->device_number, name[0] ? " (" : "", name, name[0] ? ")" : "", major, minor);
  }
  TRY(c, err, KILN_ERR_LOAD, p, cuDevicePrimaryCtxRetain, &c->ctx, c->dev);
  c->ctx_retained = 1;
  return KILN_OK;
}

/* The module, with the JIT's error log in the message when it does not compile. */
static kiln_status load_module(kiln_model *m, struct krt_cuda *c, const krt_entry *ptx, krt_error *err) {
  char *text = malloc(ptx->size + 1);
  if (!text) return krt_fail(err, KILN_ERR_NOMEM, "out of memory copying %s", ptx->name);
  memcpy(text, ptx->data, ptx->size);
  text[ptx->size] = '\0';
  char log[4096] = "";
  CUjit_option options[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2] = {log, (void *)(uintptr_t)sizeof log};
  CUresult r = c->api.p_cuModuleLoadDataEx(&c->module, text, 2, options, values);
  free(text);
  if (r != CUDA_SUCCESS) {
    c->module = NULL;
    log[sizeof log - 1] = '\0';
    for (char *s = log; *s; s++)
      if (*s == '\n' || *s == '\r' || *s == '\t') *s = ' ';
    size_t n = strlen(log);
    while (n > 0 && log[n - 1] == ' ') log[--n] = '\0';
    char pre[KRT_ERR_MAX / 2];
    snprintf(pre, sizeof pre, "%s: ", ptx->name);
    cu_fail(c, err, KILN_ERR_LOAD, pre, STR(cuModuleLoadDataEx), r);
    if (n > 0) { /* append the log to the message, as far as it fits */
      size_t used = strlen(err->msg);
      snprintf(err->msg + used, sizeof err->msg - used, "; JIT log: %s", log);
      for (char *s = err->msg; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
    }
    return err->status;
  }
  for (int32_t k = 0; k < m->kernel_count; k++)
    for (int32_t l = 0; l < m->kernels[k].launch_count; l++) {
      krt_launch *ln = &m->kernels[k].launches[l];
      CUfunction fn = NULL;
      r = c->api.p_cuModuleGetFunction(&fn, c->module, ln->symbol);
      if (r != CUDA_SUCCESS) {
        char pre[KRT_ERR_MAX / 2];
        snprintf(pre, sizeof pre, "plan.json: kernels[%d] '%.64s': launch %d: entry '%.64s' of %s: ", k,
                 m->kernels[k].name, l, ln->symbol, ptx->name);
        return cu_fail(c, err, KILN_ERR_LOAD, pre, STR(cuModuleGetFunction), r);
      }
      ln->fn = fn;
    }
  return KILN_OK;
}

/* The one device allocation, params.bin copied in, every launch's parameters. */
static kiln_status allocate(kiln_model *m, struct krt_cuda *c, krt_error *err) {
  uint64_t total = 0, part;
  int ok = 1;
#define PLACE(offset, bytes)                                                                                      \
  do {                                                                                                            \
    part = krt_round_up((uint64_t)(bytes));                                                                       \
    ok = ok && (part != 0 || (bytes) == 0) && total <= UINT64_MAX - part;                                         \
    (offset) = total;                                                                                             \
    total += part;                                                                                                \
  } while (0)
  uint64_t params_off, arena_off, records_off;
  c->inputs = calloc((size_t)m->input_count + 1, sizeof *c->inputs);
  c->outputs = calloc((size_t)m->output_count + 1, sizeof *c->outputs);
  c->host_records = calloc((size_t)m->kernel_count, sizeof *c->host_records);
  c->values = calloc((size_t)(m->arg_count + m->kernel_count), sizeof *c->values);
  c->param_ptrs = calloc((size_t)(m->arg_count + m->kernel_count), sizeof *c->param_ptrs);
  if (!c->inputs || !c->outputs || !c->host_records || !c->values || !c->param_ptrs)
    return krt_fail(err, KILN_ERR_NOMEM, "out of memory for the launch parameters");
  PLACE(params_off, m->params_size);
  PLACE(arena_off, (uint64_t)m->arena_bytes);
  for (int32_t i = 0; i < m->input_count; i++) PLACE(c->inputs[i], (uint64_t)m->inputs[i].bytes);
  for (int32_t i = 0; i < m->output_count; i++) PLACE(c->outputs[i], (uint64_t)m->outputs[i].bytes);
  PLACE(records_off, RECORD_BYTES * (uint64_t)m->kernel_count);
#undef PLACE
  if (!ok || total > (uint64_t)SIZE_MAX)
    return krt_fail(err, KILN_ERR_NOMEM, "GPU bundle: params.bin, the arena, inputs and outputs do not fit in "
                    "device memory");
  char pre[128];
  snprintf(pre, sizeof pre, "GPU bundle: %llu bytes of device memory: ", (unsigned long long)total);
  TRY(c, err, KILN_ERR_LOAD, pre, cuMemAlloc, &c->mem, (size_t)total);
  c->params = c->mem + params_off;
  c->arena = c->mem + arena_off;
  c->records = c->mem + records_off;
  for (int32_t i = 0; i < m->input_count; i++) c->inputs[i] += c->mem;
  for (int32_t i = 0; i < m->output_count; i++) c->outputs[i] += c->mem;
  if (m->params_size > 0) {
    TRY(c, err, KILN_ERR_LOAD, "GPU bundle: params.bin: ", cuMemcpyHtoD, c->params, m->params, m->params_size);
    free(m->params); /* the device has it: the host copy is never read again */
    m->params = NULL;
  }
  for (int32_t k = 0; k < m->kernel_count; k++) {
    const krt_kernel *kn = &m->kernels[k];
    CUdeviceptr *v = c->values + kn->first_arg + k;
    for (int32_t a = 0; a < kn->arg_count; a++) {
      const krt_arg *d = &m->arg_descs[kn->first_arg + a];
      switch (d->kind) {
      case KRT_ARG_INPUT: v[a] = c->inputs[d->index]; break;
      case KRT_ARG_OUTPUT: v[a] = c->outputs[d->index]; break;
      case KRT_ARG_ARENA: v[a] = c->arena + (CUdeviceptr)d->offset; break;
      case KRT_ARG_PARAM: v[a] = c->params + (CUdeviceptr)d->offset; break;
      }
    }
    v[kn->arg_count] = c->records + RECORD_BYTES * (CUdeviceptr)k;
  }
  for (int64_t i = 0; i < m->arg_count + m->kernel_count; i++) c->param_ptrs[i] = &c->values[i];
  return KILN_OK;
}

/* "run: kernel 'NAME': launch L 'SYMBOL' grid [..] block [..]: " */
static void launch_prefix(const krt_kernel *kn, int32_t l, char *buf, size_t cap) {
  const krt_launch *ln = &kn->launches[l];
  snprintf(buf, cap, "run: kernel '%.64s': launch %d '%.64s' grid [%u, %u, %u] block [%u, %u, %u]: ", kn->name, l,
           ln->symbol, ln->grid[0], ln->grid[1], ln->grid[2], ln->block[0], ln->block[1], ln->block[2]);
}

static kiln_status launch_kernel(kiln_model *m, struct krt_cuda *c, int32_t k, krt_error *err) {
  const krt_kernel *kn = &m->kernels[k];
  void **params = c->param_ptrs + kn->first_arg + k;
  for (int32_t l = 0; l < kn->launch_count; l++) {
    const krt_launch *ln = &kn->launches[l];
    CUresult r = c->api.p_cuLaunchKernel((CUfunction)ln->fn, ln->grid[0], ln->grid[1], ln->grid[2], ln->block[0],
                                         ln->block[1], ln->block[2], 0, c->stream, params, NULL);
    if (r != CUDA_SUCCESS) {
      char pre[KRT_ERR_MAX / 2];
      launch_prefix(kn, l, pre, sizeof pre);
      return cu_fail(c, err, KILN_ERR_RUN, pre, STR(cuLaunchKernel), r);
    }
  }
  return KILN_OK;
}

/* The records zeroed, then every launch: what one run enqueues (and the graph holds). */
static kiln_status enqueue_all(kiln_model *m, struct krt_cuda *c, krt_error *err) {
  TRY(c, err, KILN_ERR_RUN, "run: zeroing the failure records: ", cuMemsetD8Async, c->records, 0,
      (size_t)(RECORD_BYTES * (uint64_t)m->kernel_count), c->stream);
  for (int32_t k = 0; k < m->kernel_count; k++)
    if (launch_kernel(m, c, k, err) != KILN_OK) return err->status;
  return KILN_OK;
}

/* Captures enqueue_all into a graph where the driver can; any failure leaves
 * plain launches (c->exec NULL), which report a failing launch precisely. */
static void capture_graph(kiln_model *m, struct krt_cuda *c) {
  const char *env = getenv("KILN_CUDA_GRAPHS");
  if (env && strcmp(env, "0") == 0) return;
  if (!c->api.p_cuStreamBeginCapture || !c->api.p_cuStreamEndCapture || !c->api.p_cuGraphInstantiate ||
      !c->api.p_cuGraphLaunch || !c->api.p_cuGraphExecDestroy || !c->api.p_cuGraphDestroy)
    return;
  if (c->api.p_cuStreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) return;
  krt_error scratch = {KILN_OK, ""};
  enqueue_all(m, c, &scratch);
  CUgraph graph = NULL;
  CUresult r = c->api.p_cuStreamEndCapture(c->stream, &graph);
  if (r == CUDA_SUCCESS && scratch.status == KILN_OK && graph) {
    CUgraphExec exec = NULL;
    if (c->api.p_cuGraphInstantiate(&exec, graph, 0) == CUDA_SUCCESS && exec) {
      c->graph = graph;
      c->exec = exec;
      return;
    }
  }
  if (graph) c->api.p_cuGraphDestroy(graph);
}

/* Everything after the context is current. */
static kiln_status open_in_context(kiln_model *m, struct krt_cuda *c, const krt_entry *ptx, krt_error *err) {
  if (load_module(m, c, ptx, err) != KILN_OK) return err->status;
  TRY(c, err, KILN_ERR_LOAD, "GPU bundle: ", cuStreamCreate, &c->stream, CU_STREAM_NON_BLOCKING);
  if (allocate(m, c, err) != KILN_OK) return err->status;
  capture_graph(m, c);
  return KILN_OK;
}

kiln_status krt_cuda_open(kiln_model *m, const krt_entry *ptx, krt_error *err) {
  if (check_ptx(ptx, err) != KILN_OK) return err->status;
  struct krt_cuda *c = calloc(1, sizeof *c);
  if (!c) return krt_fail(err, KILN_ERR_NOMEM, "out of memory for the CUDA state");
  m->cuda = c;
  m->threads = 1;
  if (open_driver(c, err) != KILN_OK || open_device(m, c, err) != KILN_OK) return err->status;
  TRY(c, err, KILN_ERR_LOAD, "GPU bundle: ", cuCtxPushCurrent, c->ctx);
  open_in_context(m, c, ptx, err);
  CUcontext popped;
  CUresult r = c->api.p_cuCtxPopCurrent(&popped);
  if (r != CUDA_SUCCESS) cu_fail(c, err, KILN_ERR_LOAD, "GPU bundle: ", STR(cuCtxPopCurrent), r);
  return err->status;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Profiled: plain launches with an event before kernel 0 and after every kernel. */
static kiln_status enqueue_profiled(kiln_model *m, struct krt_cuda *c, krt_error *err) {
  if (!c->events && !(c->events = calloc((size_t)m->kernel_count + 1, sizeof *c->events)))
    return krt_fail(err, KILN_ERR_NOMEM, "run: out of memory for the profiling events");
  for (; c->event_count < m->kernel_count + 1; c->event_count++) /* the rest, after a failed run */
    TRY(c, err, KILN_ERR_RUN, "run: profiling: ", cuEventCreate, &c->events[c->event_count], CU_EVENT_DEFAULT);
  TRY(c, err, KILN_ERR_RUN, "run: zeroing the failure records: ", cuMemsetD8Async, c->records, 0,
      (size_t)(RECORD_BYTES * (uint64_t)m->kernel_count), c->stream);
  TRY(c, err, KILN_ERR_RUN, "run: profiling: ", cuEventRecord, c->events[0], c->stream);
  for (int32_t k = 0; k < m->kernel_count; k++) {
    if (launch_kernel(m, c, k, err) != KILN_OK) return err->status;
    TRY(c, err, KILN_ERR_RUN, "run: profiling: ", cuEventRecord, c->events[k + 1], c->stream);
  }
  return KILN_OK;
}

/* After a profiled run: each kernel's time between its events, placed on the host's
 * clock from the moment the launches were enqueued (the device's clock is not the
 * host's: start times are that moment plus the device's offsets). */
static kiln_status read_profile(kiln_model *m, struct krt_cuda *c, int64_t base_ns, krt_error *err) {
  int64_t at = base_ns;
  for (int32_t k = 0; k < m->kernel_count; k++) {
    float ms = 0;
    TRY(c, err, KILN_ERR_RUN, "run: profiling: ", cuEventElapsedTime, &ms, c->events[k], c->events[k + 1]);
    int64_t ns = (int64_t)((double)ms * 1e6);
    m->profile[k].total_ns += ns;
    m->profile[k].calls++;
    m->calls[m->call_count++] = (kiln_kernel_call){k, at, at + ns};
    at += ns;
  }
  return KILN_OK;
}

static kiln_status run_in_context(kiln_model *m, struct krt_cuda *c, int32_t *failed_kernel, krt_error *err) {
  for (int32_t i = 0; i < m->input_count; i++) {
    if (m->inputs[i].bytes == 0) continue;
    char pre[128];
    snprintf(pre, sizeof pre, "run: input '%.64s': ", m->inputs[i].name);
    TRY(c, err, KILN_ERR_RUN, pre, cuMemcpyHtoDAsync, c->inputs[i], m->inputs[i].data, (size_t)m->inputs[i].bytes,
        c->stream);
  }
  int64_t base_ns = now_ns();
  if (m->profiling) {
    if (enqueue_profiled(m, c, err) != KILN_OK) return err->status;
  } else if (c->exec) {
    TRY(c, err, KILN_ERR_RUN, "run: ", cuGraphLaunch, c->exec, c->stream);
  } else if (enqueue_all(m, c, err) != KILN_OK) {
    return err->status;
  }
  for (int32_t i = 0; i < m->output_count; i++) {
    if (m->outputs[i].bytes == 0) continue;
    char pre[128];
    snprintf(pre, sizeof pre, "run: output '%.64s': ", m->outputs[i].name);
    TRY(c, err, KILN_ERR_RUN, pre, cuMemcpyDtoHAsync, m->outputs[i].data, c->outputs[i], (size_t)m->outputs[i].bytes,
        c->stream);
  }
  TRY(c, err, KILN_ERR_RUN, "run: the failure records: ", cuMemcpyDtoHAsync, c->host_records, c->records,
      (size_t)(RECORD_BYTES * (uint64_t)m->kernel_count), c->stream);
  CUresult r = c->api.p_cuStreamSynchronize(c->stream);
  if (r != CUDA_SUCCESS) /* a kernel faulted (or the device went away): the context is lost */
    return cu_fail(c, err, KILN_ERR_RUN, "run: after the launches (a kernel failed on the device; reopen the "
                   "model): ", STR(cuStreamSynchronize), r);
  if (m->profiling && read_profile(m, c, base_ns, err) != KILN_OK) return err->status;
  for (int32_t k = 0; k < m->kernel_count; k++)
    if (c->host_records[k].set != 0) {
      m->failure = c->host_records[k];
      m->failure.set = 1;
      *failed_kernel = k;
      break;
    }
  return KILN_OK;
}

kiln_status krt_cuda_run(kiln_model *m, int32_t *failed_kernel, krt_error *err) {
  struct krt_cuda *c = m->cuda;
  *failed_kernel = -1;
  if (!c || !c->mem) return krt_fail(err, KILN_ERR_RUN, "run: the model's GPU state is missing");
  TRY(c, err, KILN_ERR_RUN, "run: ", cuCtxPushCurrent, c->ctx);
  run_in_context(m, c, failed_kernel, err);
  CUcontext popped;
  CUresult r = c->api.p_cuCtxPopCurrent(&popped);
  if (r != CUDA_SUCCESS) cu_fail(c, err, KILN_ERR_RUN, "run: ", STR(cuCtxPopCurrent), r);
  return err->status;
}

void krt_cuda_close(kiln_model *m) {
  struct krt_cuda *c = m->cuda;
  if (!c) return;
  if (c->ctx_retained) {
    int pushed = c->api.p_cuCtxPushCurrent(c->ctx) == CUDA_SUCCESS;
    if (pushed) {
      if (c->stream) c->api.p_cuStreamSynchronize(c->stream);
      if (c->exec) c->api.p_cuGraphExecDestroy(c->exec);
      if (c->graph) c->api.p_cuGraphDestroy(c->graph);
      for (int32_t i = 0; i < c->event_count; i++) c->api.p_cuEventDestroy(c->events[i]);
      if (c->mem) c->api.p_cuMemFree(c->mem);
      if (c->stream) c->api.p_cuStreamDestroy(c->stream);
      if (c->module) c->api.p_cuModuleUnload(c->module);
      CUcontext popped;
      c->api.p_cuCtxPopCurrent(&popped);
    }
    c->api.p_cuDevicePrimaryCtxRelease(c->dev);
  }
  if (c->lib) dlclose(c->lib);
  free(c->events);
  free(c->inputs);
  free(c->outputs);
  free(c->host_records);
  free(c->values);
  free(c->param_ptrs);
  free(c);
  m->cuda = NULL;
}

#endif
