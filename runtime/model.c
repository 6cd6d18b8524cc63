/* model.c — the public API: open (validate + allocate everything), set
 * inputs, run, read outputs, profile, close.
 *
 * Open is a straight line of steps (archive → manifest → params → plan →
 * library → memory → buffer arrays → thread pool); each either succeeds or
 * leaves a status and a message, and a failed open closes whatever the steps
 * got to. Memory is one 64-byte aligned block laid out as
 *   [arena][workspace][input 0]…[input n-1][output 0]…[output m-1]
 * (each part rounded up to 64 bytes), plus params.bin kept where the archive
 * reader put it. Inputs are copied in by set_input — so kernels always see
 * aligned, runtime-owned buffers — and outputs are read in place. After open
 * the buffer pointer array of every kernel is fixed, so run is only the calls
 * (and two clock reads per kernel when profiling).
 *
 * A GPU bundle (target triple nvptx64-*: PTX, cuda.c) branches off at three
 * points: its library is loaded through the CUDA driver instead of dlopen'ed,
 * the block here holds only the host copies of the inputs and outputs (the
 * arena and params.bin live in device memory), and run hands over to
 * krt_cuda_run. It has no thread pool. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "krt.h"

static kiln_status fail(kiln_model *m, kiln_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static kiln_status fail(kiln_model *m, kiln_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->last_error, sizeof m->last_error, fmt, ap);
  va_end(ap);
  return status;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---------------------------------------------------------------- open / close */

static void free_tensors(krt_tensor *t, int32_t count) {
  for (int32_t i = 0; t && i < count; i++) {
    free(t[i].name);
    cJSON_Delete(t[i].extent_json);
  }
  free(t);
}

void kiln_model_close(kiln_model *m) {
  if (!m) return;
  krt_pool_destroy(m->pool);
  krt_library_close(m);
  krt_cuda_close(m);
  for (int32_t k = 0; m->kernels && k < m->kernel_count; k++) {
    free(m->kernels[k].name);
    free(m->kernels[k].symbol);
    for (int32_t l = 0; l < m->kernels[k].launch_count; l++) free(m->kernels[k].launches[l].symbol);
    free(m->kernels[k].launches);
    for (int32_t j = 0; j < m->kernels[k].check_count; j++) free(m->kernels[k].checks[j]);
    free(m->kernels[k].checks);
    free(m->kernels[k].when_is);
    free(m->kernels[k].fail);
  }
  free(m->kernels);
  free(m->profile);
  free(m->calls);
  free(m->arg_descs);
  free(m->args);
  free(m->block);
  free(m->params);
  free_tensors(m->inputs, m->input_count);
  free_tensors(m->outputs, m->output_count);
  free(m->name);
  free(m->compiler_version);
  free(m->target_name);
  free(m->target_triple);
  for (int32_t i = 0; i < m->target_feature_count; i++) free(m->target_features[i]);
  free(m->target_features);
  free(m);
}

/* kiln_ctx.fail: keeps the first failed check of the run (the ctx lives inside
 * its model). */
static void record_check_failure(const kiln_ctx *ctx, int32_t check, int64_t value, int64_t lo, int64_t hi) {
  kiln_model *m = (kiln_model *)(void *)((char *)ctx - offsetof(kiln_model, ctx));
  int32_t expected = 0;
  if (!__atomic_compare_exchange_n(&m->failure.set, &expected, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
  m->failure.check = check;
  m->failure.value = value;
  m->failure.lo = lo;
  m->failure.hi = hi;
  __atomic_store_n(&m->failure.set, 1, __ATOMIC_RELEASE);
}

/* Lays out and allocates the one block; points every tensor into it. A GPU
 * bundle's arena is on the device: its block holds the inputs and outputs only. */
static kiln_status allocate_block(kiln_model *m, krt_error *err) {
  uint64_t total = m->gpu ? 0 : krt_round_up((uint64_t)m->arena_bytes);
  uint64_t ws_offset = total;
  int ok = total != 0 || m->arena_bytes == 0 || m->gpu;
  uint64_t part = krt_round_up((uint64_t)m->workspace_bytes);
  ok = ok && total <= UINT64_MAX - part;
  total += part;
  for (int32_t pass = 0; pass < 2 && ok; pass++) {
    krt_tensor *list = pass == 0 ? m->inputs : m->outputs;
    int32_t count = pass == 0 ? m->input_count : m->output_count;
    for (int32_t i = 0; i < count && ok; i++) {
      part = krt_round_up((uint64_t)list[i].bytes);
      ok = total <= UINT64_MAX - part;
      list[i].data = (unsigned char *)(uintptr_t)total; /* an offset until the block exists */
      total += part;
    }
  }
  if (!ok || total > (uint64_t)INT64_MAX || total > (uint64_t)SIZE_MAX)
    return krt_fail(err, KILN_ERR_NOMEM, "the arena, workspace, inputs and outputs do not fit in memory");
  m->block = krt_aligned_alloc((size_t)total);
  if (!m->block)
    return krt_fail(err, KILN_ERR_NOMEM, "cannot allocate %llu bytes for the arena, workspace, inputs and outputs",
                    (unsigned long long)total);
  memset(m->block, 0, (size_t)total);
  for (int32_t pass = 0; pass < 2; pass++) {
    krt_tensor *list = pass == 0 ? m->inputs : m->outputs;
    int32_t count = pass == 0 ? m->input_count : m->output_count;
    for (int32_t i = 0; i < count; i++) list[i].data = m->block + (uintptr_t)list[i].data;
  }
  m->ctx.workspace = m->block + ws_offset;
  m->ctx.workspace_bytes = m->workspace_bytes;
  m->ctx.fail = record_check_failure;
  return KILN_OK;
}

/* The message of a kernel that returned rc: its failed check when it reported one. */
static kiln_status kernel_failed(kiln_model *m, int32_t k, int32_t rc) {
  const krt_kernel *kn = &m->kernels[k];
  if (__atomic_load_n(&m->failure.set, __ATOMIC_ACQUIRE) != 1)
    return fail(m, KILN_ERR_RUN, "run: kernel %d '%s' failed with status %d", k, kn->name, (int)rc);
  const krt_check_failure *f = &m->failure;
  const char *what = f->check >= 0 && f->check < kn->check_count ? kn->checks[f->check] : "a run-time check";
  if (!strncmp(what, "string:", 7)) /* a string result over its slot (lower/lower_str.c) */
    return fail(m, KILN_ERR_RUN,
                "run: kernel '%s': %s: a result string of %lld bytes is over the %lld a string slot holds (kiln "
                "compile --max-string-bytes N, N >= %lld, raises it)",
                kn->name, what + 7, (long long)f->value, (long long)f->hi - 1, (long long)f->value + 4);
  if (f->lo >= f->hi)
    return fail(m, KILN_ERR_RUN, "run: kernel '%s': %s: index %lld is out of range (the indexed axis is empty)",
                kn->name, what, (long long)f->value);
  return fail(m, KILN_ERR_RUN, "run: kernel '%s': %s: index %lld is out of range [%lld, %lld]", kn->name, what,
              (long long)f->value, (long long)f->lo, (long long)f->hi - 1);
}

static kiln_status start_pool(kiln_model *m, int32_t threads, krt_error *err) {
  if (threads == 0) threads = krt_online_cores();
  char msg[KRT_ERR_MAX / 2];
  kiln_status s = krt_pool_create(threads, &m->pool, msg, sizeof msg);
  if (s != KILN_OK) return krt_fail(err, s, "thread pool: %s", msg);
  m->threads = threads;
  krt_pool_set_spin(m->pool, m->spin_us < 0 ? -1 : m->spin_us * 1000);
  krt_pool_bind(m->pool, &m->ctx);
  return KILN_OK;
}

static kiln_status check_options(const kiln_options *o, krt_error *err) {
  if (o->threads < 0 || o->threads > KILN_MAX_THREADS)
    return krt_fail(err, KILN_ERR_INVALID_ARGUMENT, "options: threads %d is outside [0, %d]", o->threads,
                    KILN_MAX_THREADS);
  if (o->max_entry_bytes < 0)
    return krt_fail(err, KILN_ERR_INVALID_ARGUMENT, "options: max_entry_bytes %lld is negative",
                    (long long)o->max_entry_bytes);
  return KILN_OK;
}

/* Everything after the archive has been read. */
static kiln_status build(kiln_model *m, krt_archive *archive, const kiln_options *o, krt_error *err) {
  if (krt_manifest_load(m, archive, err) != KILN_OK) return err->status;
  krt_entry *params = krt_archive_find(archive, "params.bin");
  m->params = params->data; /* taken over: 64-byte aligned already */
  m->params_size = params->size;
  params->data = NULL;
  if (krt_plan_load(m, krt_archive_find(archive, "plan.json"), err) != KILN_OK) return err->status;
  char lib_name[80];
  snprintf(lib_name, sizeof lib_name, "lib/%s.%s", m->target_name, m->gpu ? "ptx" : "so");
  m->profiling = o->profile != 0;
  if (m->gpu) { /* the device holds everything but the inputs' and outputs' host copies */
    if (allocate_block(m, err) != KILN_OK) return err->status;
    return krt_cuda_open(m, krt_archive_find(archive, lib_name), err);
  }
  if (krt_library_load(m, krt_archive_find(archive, lib_name), err) != KILN_OK) return err->status;
  if (allocate_block(m, err) != KILN_OK) return err->status;
  krt_plan_bind(m);
  if (start_pool(m, o->threads, err) != KILN_OK) return err->status;
  return KILN_OK;
}

static kiln_status finish_open(krt_error *err, kiln_model *m, kiln_model **out, char *errbuf, size_t errlen) {
  if (err->status != KILN_OK) {
    kiln_model_close(m);
    if (errbuf && errlen > 0) snprintf(errbuf, errlen, "%s", err->msg);
    return err->status;
  }
  if (errbuf && errlen > 0) errbuf[0] = '\0';
  *out = m;
  return KILN_OK;
}

typedef struct {
  const char *path;
  const void *data;
  size_t size;
} bundle_source;

static kiln_status open_any(const bundle_source *src, const kiln_options *options, kiln_model **out, char *errbuf,
                            size_t errlen) {
  krt_error err = {KILN_OK, ""};
  if (!out) {
    krt_fail(&err, KILN_ERR_INVALID_ARGUMENT, "kiln_model_open: model pointer is NULL");
    return finish_open(&err, NULL, out, errbuf, errlen);
  }
  *out = NULL;
  kiln_options o;
  kiln_options_init(&o);
  if (options) o = *options;
  if (check_options(&o, &err) != KILN_OK) return finish_open(&err, NULL, out, errbuf, errlen);
  kiln_model *m = calloc(1, sizeof *m);
  if (!m) {
    krt_fail(&err, KILN_ERR_NOMEM, "out of memory for the model");
    return finish_open(&err, NULL, out, errbuf, errlen);
  }
  m->threads = 1;
  m->spin_us = -1;
  m->lib_fd = -1;
  krt_archive archive;
  if (src->path) krt_archive_read_file(src->path, o.max_entry_bytes, &archive, &err);
  else krt_archive_read_memory(src->data, src->size, o.max_entry_bytes, &archive, &err);
  if (err.status == KILN_OK) build(m, &archive, &o, &err);
  krt_archive_free(&archive);
  return finish_open(&err, m, out, errbuf, errlen);
}

kiln_status kiln_model_open(const char *path, const kiln_options *options, kiln_model **model, char *errbuf,
                            size_t errlen) {
  if (!path) {
    if (model) *model = NULL;
    if (errbuf && errlen > 0) snprintf(errbuf, errlen, "kiln_model_open: path is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  bundle_source src = {path, NULL, 0};
  return open_any(&src, options, model, errbuf, errlen);
}

kiln_status kiln_model_open_memory(const void *data, size_t size, const kiln_options *options, kiln_model **model,
                                   char *errbuf, size_t errlen) {
  if (!data && size > 0) {
    if (model) *model = NULL;
    if (errbuf && errlen > 0) snprintf(errbuf, errlen, "kiln_model_open_memory: data is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  bundle_source src = {NULL, data, size};
  return open_any(&src, options, model, errbuf, errlen);
}

/* ---------------------------------------------------------------- description */

const char *kiln_model_name(const kiln_model *m) { return m ? m->name : ""; }
const char *kiln_model_compiler_version(const kiln_model *m) { return m ? m->compiler_version : ""; }
const char *kiln_model_target_name(const kiln_model *m) { return m ? m->target_name : ""; }
const char *kiln_model_target_triple(const kiln_model *m) { return m ? m->target_triple : ""; }
int32_t kiln_model_input_count(const kiln_model *m) { return m ? m->input_count : 0; }
int32_t kiln_model_output_count(const kiln_model *m) { return m ? m->output_count : 0; }
int64_t kiln_model_arena_bytes(const kiln_model *m) { return m ? m->arena_bytes : 0; }
int64_t kiln_model_weights_bytes(const kiln_model *m) { return m ? m->weights_bytes : 0; }
int64_t kiln_model_workspace_bytes(const kiln_model *m) { return m ? m->workspace_bytes : 0; }
int32_t kiln_model_kernel_count(const kiln_model *m) { return m ? m->kernel_count : 0; }
int32_t kiln_model_threads(const kiln_model *m) { return m ? m->threads : 0; }
const char *kiln_model_last_error(const kiln_model *m) { return m ? m->last_error : "model is NULL"; }

static void fill_info(const krt_tensor *t, kiln_tensor_info *info) {
  memset(info, 0, sizeof *info);
  info->name = t->name;
  info->dtype = t->dtype;
  info->rank = t->rank;
  memcpy(info->dims, t->dims, sizeof info->dims);
  info->elements = t->elements;
  info->bytes = t->bytes;
}

kiln_status kiln_model_input_info(const kiln_model *m, int32_t index, kiln_tensor_info *info) {
  if (!m || !info || index < 0 || index >= m->input_count) return KILN_ERR_INVALID_ARGUMENT;
  fill_info(&m->inputs[index], info);
  return KILN_OK;
}

kiln_status kiln_model_output_info(const kiln_model *m, int32_t index, kiln_tensor_info *info) {
  if (!m || !info || index < 0 || index >= m->output_count) return KILN_ERR_INVALID_ARGUMENT;
  fill_info(&m->outputs[index], info);
  return KILN_OK;
}

static int32_t find(const krt_tensor *list, int32_t count, const char *name) {
  for (int32_t i = 0; name && i < count; i++)
    if (strcmp(list[i].name, name) == 0) return i;
  return -1;
}

int32_t kiln_model_input_index(const kiln_model *m, const char *name) {
  return m ? find(m->inputs, m->input_count, name) : -1;
}

int32_t kiln_model_output_index(const kiln_model *m, const char *name) {
  return m ? find(m->outputs, m->output_count, name) : -1;
}

/* ---------------------------------------------------------------- inputs, run, outputs */

static void format_dims(char *buf, size_t cap, int32_t rank, const int64_t *dims) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int32_t i = 0; i < rank && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

static kiln_status unknown_input(kiln_model *m, const char *name) {
  char list[256] = "";
  size_t n = 0;
  for (int32_t i = 0; i < m->input_count && n < sizeof list; i++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s'%s'", i ? ", " : "", m->inputs[i].name);
  if (m->input_count == 0) snprintf(list, sizeof list, "none");
  return fail(m, KILN_ERR_NAME, "set_input: the model has no input named '%.64s' (its inputs: %s)", name, list);
}

kiln_status kiln_model_set_input(kiln_model *m, const char *name, kiln_dtype dtype, int32_t rank,
                                 const int64_t *dims, const void *data, size_t bytes) {
  if (!m) return KILN_ERR_INVALID_ARGUMENT;
  if (!name) return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_input: name is NULL");
  int32_t i = find(m->inputs, m->input_count, name);
  if (i < 0) return unknown_input(m, name);
  krt_tensor *t = &m->inputs[i];
  if (dtype != t->dtype)
    return fail(m, KILN_ERR_DTYPE, "set_input: input '%s' is %s, got %s", t->name, kiln_dtype_name(t->dtype),
                kiln_dtype_name(dtype));
  if (dtype == KILN_DTYPE_STRING)
    return fail(m, KILN_ERR_DTYPE, "set_input: input '%s' is a string tensor: set it with kiln_model_set_input_strings",
                t->name);
  char want[256], got[256];
  format_dims(want, sizeof want, t->rank, t->dims);
  if (rank < 0 || rank > KILN_MAX_RANK)
    return fail(m, KILN_ERR_SHAPE, "set_input: input '%s' has shape %s, got rank %d", t->name, want, rank);
  if (rank > 0 && !dims)
    return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_input: input '%s': dims is NULL with rank %d", t->name, rank);
  int same = rank == t->rank;
  for (int32_t d = 0; same && d < rank; d++) same = dims[d] == t->dims[d];
  if (!same) {
    format_dims(got, sizeof got, rank, dims);
    return fail(m, KILN_ERR_SHAPE, "set_input: input '%s' has shape %s, got %s", t->name, want, got);
  }
  if ((uint64_t)bytes != (uint64_t)t->bytes)
    return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_input: input '%s' (%s %s) is %lld bytes, got %zu", t->name,
                kiln_dtype_name(t->dtype), want, (long long)t->bytes, bytes);
  if (!data && bytes > 0) return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_input: input '%s': data is NULL", t->name);
  if (bytes > 0) memcpy(t->data, data, bytes);
  t->set = 1;
  return KILN_OK;
}

int64_t kiln_model_string_bytes(const kiln_model *m, int32_t is_output, int32_t index) {
  if (!m || index < 0 || index >= (is_output ? m->output_count : m->input_count)) return 0;
  return (is_output ? m->outputs : m->inputs)[index].string_bytes;
}

kiln_status kiln_model_set_input_strings(kiln_model *m, const char *name, int32_t rank, const int64_t *dims,
                                         const char *const *strings, const size_t *lengths) {
  if (!m) return KILN_ERR_INVALID_ARGUMENT;
  if (!name) return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_input: name is NULL");
  int32_t i = find(m->inputs, m->input_count, name);
  if (i < 0) return unknown_input(m, name);
  krt_tensor *t = &m->inputs[i];
  if (t->dtype != KILN_DTYPE_STRING)
    return fail(m, KILN_ERR_DTYPE, "set_input: input '%s' is %s, got strings", t->name, kiln_dtype_name(t->dtype));
  char want[256], got[256];
  format_dims(want, sizeof want, t->rank, t->dims);
  if (rank < 0 || rank > KILN_MAX_RANK || (rank > 0 && !dims)) {
    return fail(m, rank > 0 && !dims && rank <= KILN_MAX_RANK ? KILN_ERR_INVALID_ARGUMENT : KILN_ERR_SHAPE,
                "set_input: input '%s' has shape %s, got rank %d%s", t->name, want, rank, dims ? "" : " and no dims");
  }
  int same = rank == t->rank;
  for (int32_t d = 0; same && d < rank; d++) same = dims[d] == t->dims[d];
  if (!same) {
    format_dims(got, sizeof got, rank, dims);
    return fail(m, KILN_ERR_SHAPE, "set_input: input '%s' has shape %s, got %s", t->name, want, got);
  }
  if (t->elements > 0 && (!strings || !lengths))
    return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_input: input '%s': strings or lengths is NULL", t->name);
  int64_t w = t->string_bytes;
  t->set = 0;
  for (int64_t e = 0; e < t->elements; e++) { /* every length checked before anything is copied */
    if (lengths[e] > (size_t)(w - 4))
      return fail(m, KILN_ERR_INVALID_ARGUMENT,
                  "set_input: input '%s': element %lld is %zu bytes, over the %lld a string slot of this model holds "
                  "(kiln compile --max-string-bytes N, N >= %zu, raises it)",
                  t->name, (long long)e, lengths[e], (long long)(w - 4), lengths[e] + 4);
    if (lengths[e] > 0 && !strings[e])
      return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_input: input '%s': element %lld is NULL", t->name, (long long)e);
  }
  for (int64_t e = 0; e < t->elements; e++) {
    unsigned char *slot = t->data + e * w;
    uint32_t len = (uint32_t)lengths[e];
    memset(slot, 0, (size_t)w);
    for (int k = 0; k < 4; k++) slot[k] = (unsigned char)(len >> (8 * k));
    if (len) memcpy(slot + 4, strings[e], len);
  }
  t->set = 1;
  return KILN_OK;
}

kiln_status kiln_model_output_string(kiln_model *m, int32_t index, int64_t element, const char **data,
                                     size_t *length) {
  if (!m) return KILN_ERR_INVALID_ARGUMENT;
  if (!data || !length) return fail(m, KILN_ERR_INVALID_ARGUMENT, "output_string: data or length is NULL");
  *data = NULL, *length = 0;
  if (index < 0 || index >= m->output_count)
    return fail(m, KILN_ERR_INVALID_ARGUMENT, "output_string: index %d is out of range (the model has %d outputs)",
                index, m->output_count);
  const krt_tensor *t = &m->outputs[index];
  if (t->dtype != KILN_DTYPE_STRING)
    return fail(m, KILN_ERR_DTYPE, "output_string: output '%s' is %s", t->name, kiln_dtype_name(t->dtype));
  if (!m->outputs_ready) return fail(m, KILN_ERR_RUN, "output_string: no successful run yet");
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++) n *= t->has_extent ? t->actual[d] : t->dims[d];
  if (element < 0 || element >= n)
    return fail(m, KILN_ERR_INVALID_ARGUMENT, "output_string: element %lld of output '%s' is out of range [0, %lld)",
                (long long)element, t->name, (long long)n);
  const unsigned char *slot = t->data + element * t->string_bytes;
  uint32_t len = (uint32_t)slot[0] | (uint32_t)slot[1] << 8 | (uint32_t)slot[2] << 16 | (uint32_t)slot[3] << 24;
  if (len > (uint32_t)(t->string_bytes - 4)) len = (uint32_t)(t->string_bytes - 4); /* never trusted */
  *data = (const char *)slot + 4;
  *length = len;
  return KILN_OK;
}

/* After a run: each output with a data-dependent extent gets its actual dims, and
 * its data is moved to be that shape's C-order tensor (along axis 0 it already is:
 * a prefix; along a later axis each outer block moves down, in place, in order). */
static kiln_status settle_extents(kiln_model *m) {
  for (int32_t o = 0; o < m->output_count; o++) {
    krt_tensor *t = &m->outputs[o];
    if (!t->has_extent) continue;
    int64_t e;
    memcpy(&e, m->args[t->extent_arg], sizeof e);
    int32_t a = t->extent_axis;
    if (e < 0 || e > t->dims[a])
      return fail(m, KILN_ERR_RUN, "run: output '%s': its extent %lld is outside [0, %lld] (a kernel bug)", t->name,
                  (long long)e, (long long)t->dims[a]);
    memcpy(t->actual, t->dims, sizeof t->actual);
    t->actual[a] = e;
    int64_t outer = 1, inner = krt_elem_bytes(t);
    for (int32_t d = 0; d < a; d++) outer *= t->dims[d];
    for (int32_t d = a + 1; d < t->rank; d++) inner *= t->dims[d];
    if (e < t->dims[a])
      for (int64_t i = 1; i < outer; i++)
        memmove(t->data + i * e * inner, t->data + i * t->dims[a] * inner, (size_t)(e * inner));
  }
  return KILN_OK;
}

/* Whether each of kn's conditions (an If branch's bools) holds. */
static int conditions_hold(const kiln_model *m, const krt_kernel *kn) {
  void *const *at = m->args + kn->first_arg + kn->arg_count;
  for (int32_t j = 0; j < kn->when_count; j++)
    if ((*(const uint8_t *)at[j] != 0) != kn->when_is[j]) return 0;
  return 1;
}

/* A GPU bundle's run (cuda.c); a failed check is reported as the CPU path does. */
static kiln_status run_gpu(kiln_model *m) {
  krt_error err = {KILN_OK, ""};
  int32_t failed = -1;
  if (m->profiling) m->call_count = 0;
  if (krt_cuda_run(m, &failed, &err) != KILN_OK) return fail(m, err.status, "%s", err.msg);
  if (failed >= 0) return kernel_failed(m, failed, 1);
  m->outputs_ready = 1;
  return KILN_OK;
}

kiln_status kiln_model_run(kiln_model *m) {
  if (!m) return KILN_ERR_INVALID_ARGUMENT;
  for (int32_t i = 0; i < m->input_count; i++)
    if (!m->inputs[i].set) return fail(m, KILN_ERR_RUN, "run: input '%s' has not been set", m->inputs[i].name);
  m->outputs_ready = 0;
  m->failure.set = 0;
  if (m->gpu) return run_gpu(m);
  krt_pool_wake(m->pool); /* workers asleep after idle start waking while the first kernels run */
  if (m->profiling) m->call_count = 0;
  for (int32_t k = 0; k < m->kernel_count; k++) {
    const krt_kernel *kn = &m->kernels[k];
    int32_t rc;
    if (kn->when_count && !conditions_hold(m, kn)) continue; /* the If took the other branch */
    if (kn->fail) return fail(m, KILN_ERR_RUN, "run: kernel '%s': %s", kn->name, kn->fail);
    if (m->profiling) {
      int64_t t0 = now_ns();
      rc = kn->fn(m->args + kn->first_arg, &m->ctx);
      int64_t t1 = now_ns();
      m->profile[k].total_ns += t1 - t0;
      m->profile[k].calls++;
      m->calls[m->call_count++] = (kiln_kernel_call){k, t0, t1};
    } else {
      rc = kn->fn(m->args + kn->first_arg, &m->ctx);
    }
    if (rc != 0) return kernel_failed(m, k, rc);
  }
  if (settle_extents(m) != KILN_OK) return KILN_ERR_RUN;
  m->outputs_ready = 1;
  return KILN_OK;
}

kiln_status kiln_model_output(kiln_model *m, int32_t index, const void **data, kiln_tensor_info *info) {
  if (!m) return KILN_ERR_INVALID_ARGUMENT;
  if (!data) return fail(m, KILN_ERR_INVALID_ARGUMENT, "output: data pointer is NULL");
  *data = NULL;
  if (index < 0 || index >= m->output_count)
    return fail(m, KILN_ERR_INVALID_ARGUMENT, "output: index %d is out of range (the model has %d outputs)", index,
                m->output_count);
  if (!m->outputs_ready) return fail(m, KILN_ERR_RUN, "output: no successful run yet");
  *data = m->outputs[index].data;
  if (info) {
    const krt_tensor *t = &m->outputs[index];
    fill_info(t, info);
    if (t->has_extent) { /* the run's shape, not the bound */
      memcpy(info->dims, t->actual, sizeof info->dims);
      info->elements = 1;
      for (int32_t d = 0; d < t->rank; d++) info->elements *= t->actual[d];
      info->bytes = info->elements * krt_elem_bytes(t);
    }
  }
  return KILN_OK;
}

/* ---------------------------------------------------------------- threads, profile */

kiln_status kiln_model_set_spin_us(kiln_model *m, int64_t us) {
  if (!m) return KILN_ERR_INVALID_ARGUMENT;
  if (us < 0 || us > 10000000)
    return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_spin_us: %lld is outside [0, 10000000]", (long long)us);
  m->spin_us = us;
  krt_pool_set_spin(m->pool, us * 1000);
  return KILN_OK;
}

kiln_status kiln_model_set_threads(kiln_model *m, int32_t threads) {
  if (!m) return KILN_ERR_INVALID_ARGUMENT;
  if (threads < 0 || threads > KILN_MAX_THREADS)
    return fail(m, KILN_ERR_INVALID_ARGUMENT, "set_threads: %d is outside [0, %d]", threads, KILN_MAX_THREADS);
  if (m->gpu) return KILN_OK; /* a GPU bundle's kernels run on the device: no pool */
  int32_t want = threads == 0 ? krt_online_cores() : threads;
  if (want == m->threads && m->pool) return KILN_OK;
  krt_pool_destroy(m->pool);
  m->pool = NULL;
  m->threads = 1;
  krt_pool_bind(NULL, &m->ctx); /* serial until the new pool is up */
  krt_error err = {KILN_OK, ""};
  if (start_pool(m, want, &err) != KILN_OK) return fail(m, err.status, "set_threads: %s (running serially)", err.msg);
  return KILN_OK;
}

kiln_status kiln_model_set_profile(kiln_model *m, int32_t enabled) {
  if (!m) return KILN_ERR_INVALID_ARGUMENT;
  m->profiling = enabled != 0;
  return KILN_OK;
}

kiln_status kiln_model_profile(const kiln_model *m, const kiln_kernel_profile **entries, int32_t *count) {
  if (!m || !entries || !count) return KILN_ERR_INVALID_ARGUMENT;
  *entries = m->profile;
  *count = m->kernel_count;
  return KILN_OK;
}

kiln_status kiln_model_profile_calls(const kiln_model *m, const kiln_kernel_call **calls, int32_t *count) {
  if (!m || !calls || !count) return KILN_ERR_INVALID_ARGUMENT;
  *calls = m->calls;
  *count = m->call_count;
  return KILN_OK;
}

void kiln_model_profile_reset(kiln_model *m) {
  for (int32_t k = 0; m && k < m->kernel_count; k++) {
    m->profile[k].calls = 0;
    m->profile[k].total_ns = 0;
  }
}
