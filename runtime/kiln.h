/* kiln.h — the public API of the kiln runtime: open a compiled bundle
 * (model.kiln), describe its inputs and outputs, feed inputs, run, read outputs.
 *
 * The runtime is a small C99 library that knows nothing of the compiler: the
 * bundle (a tar archive of manifest.json, plan.json, params.bin and
 * lib/<target>.so) is the only contract between them. Opening validates
 * everything in the bundle and allocates everything a run needs (one arena, the
 * input and output buffers, the thread pool); kiln_model_run allocates nothing.
 * Every call reports failures as a kiln_status plus a message — the runtime
 * never aborts on bad input.
 *
 * A kiln_model is not thread-safe: use one model per thread (each owns its own
 * arena and thread pool). */
#ifndef KILN_H
#define KILN_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Versions of the bundle format this runtime reads (manifest "format_version"):
 * 2 added run-time checks (plan.json "checks", kiln_ctx.fail: kernels of a version 2
 * bundle may call it); version 1 bundles never do. 3 added conditional kernels
 * (plan.json "when", "fail": an If's branches). */
#define KILN_BUNDLE_FORMAT_VERSION 4
#define KILN_BUNDLE_FORMAT_MIN_VERSION 1
/* Largest tensor rank a bundle may declare. */
#define KILN_MAX_RANK 8
/* Most threads a model's pool may have (including the calling thread). */
#define KILN_MAX_THREADS 256

typedef enum {
  KILN_OK = 0,
  KILN_ERR_IO,               /* the bundle file could not be read */
  KILN_ERR_FORMAT,           /* the bundle is malformed (archive, entries, JSON, plan) */
  KILN_ERR_CHECKSUM,         /* an entry's size or CRC32 differs from the manifest */
  KILN_ERR_VERSION,          /* unsupported bundle format version */
  KILN_ERR_INVALID_ARGUMENT, /* bad argument (NULL pointer, index out of range, byte size…) */
  KILN_ERR_NAME,             /* no input with that name */
  KILN_ERR_DTYPE,            /* the data type differs from the model's */
  KILN_ERR_SHAPE,            /* the shape differs from the model's */
  KILN_ERR_NOMEM,            /* out of memory */
  KILN_ERR_LOAD,             /* the kernel library or one of its symbols could not be loaded */
  KILN_ERR_RUN,              /* a kernel failed, or the model cannot run yet */
  KILN_STATUS_COUNT
} kiln_status;

/* A short constant name for a status ("OK", "FORMAT", …); never NULL. */
const char *kiln_status_str(kiln_status status);

/* Element types. Every one takes whole bytes per element in tensors: the 4-
 * and 2-bit types one byte each (int4/int2 sign-extended, uint4/uint2
 * zero-extended, float4e2m1 its 4-bit code), the float8 types their 8-bit code
 * (packing two or four per byte exists only in ONNX files). */
typedef enum {
  KILN_DTYPE_FLOAT32 = 0,
  KILN_DTYPE_FLOAT16,
  KILN_DTYPE_BFLOAT16,
  KILN_DTYPE_FLOAT64,
  KILN_DTYPE_INT8,
  KILN_DTYPE_INT16,
  KILN_DTYPE_INT32,
  KILN_DTYPE_INT64,
  KILN_DTYPE_UINT8,
  KILN_DTYPE_UINT16,
  KILN_DTYPE_UINT32,
  KILN_DTYPE_UINT64,
  KILN_DTYPE_BOOL,
  KILN_DTYPE_FLOAT8E4M3FN,
  KILN_DTYPE_FLOAT8E4M3FNUZ,
  KILN_DTYPE_FLOAT8E5M2,
  KILN_DTYPE_FLOAT8E5M2FNUZ,
  KILN_DTYPE_UINT4,
  KILN_DTYPE_INT4,
  KILN_DTYPE_FLOAT4E2M1,
  KILN_DTYPE_FLOAT8E8M0,
  KILN_DTYPE_UINT2,
  KILN_DTYPE_INT2,
  KILN_DTYPE_STRING, /* a string per element, in a slot of kiln_model_string_bytes bytes (a
                        4-byte little-endian length, then the bytes): set and read with
                        kiln_model_set_input_strings / kiln_model_output_string */
  KILN_DTYPE_COUNT
} kiln_dtype;

/* The bundle's name of a dtype ("float32", …); "invalid" when out of range. */
const char *kiln_dtype_name(kiln_dtype dtype);
/* Bytes per element; 0 when out of range, and for KILN_DTYPE_STRING (the model's
 * slot: kiln_model_string_bytes). */
size_t kiln_dtype_size(kiln_dtype dtype);
/* Looks a dtype up by its bundle name; KILN_ERR_DTYPE when unknown. */
kiln_status kiln_dtype_from_name(const char *name, kiln_dtype *out);

typedef struct {
  int32_t threads;         /* threads running the kernels, the caller included; 0 = online cores */
  int32_t profile;         /* non-zero: time every kernel call (see kiln_model_profile) */
  int64_t max_entry_bytes; /* largest bundle entry accepted; 0 = KILN_DEFAULT_MAX_ENTRY_BYTES */
} kiln_options;

#define KILN_DEFAULT_MAX_ENTRY_BYTES ((int64_t)16 << 30)

/* Fills *options with the defaults (all zero). A NULL options pointer given to
 * kiln_model_open means the same. */
void kiln_options_init(kiln_options *options);

typedef struct kiln_model kiln_model;

/* Description of one input or output. The name stays valid until close. */
typedef struct {
  const char *name;
  kiln_dtype dtype;
  int32_t rank;
  int64_t dims[KILN_MAX_RANK];
  int64_t elements;
  int64_t bytes;
} kiln_tensor_info;

/* Per-kernel timing, one entry per kernel of the plan, in plan order. */
typedef struct {
  const char *name;
  int64_t calls;
  int64_t total_ns;
  int64_t flops; /* per call, as the compiler counted them */
  int64_t bytes; /* per call: the bytes of the buffers it is passed (inputs, outputs,
                    weights and arena ranges; the workspace not counted) */
} kiln_kernel_profile;

/* One kernel call of a profiled run: which kernel (its index in the profile's
 * entries, plan order) and when it started and returned, in nanoseconds of
 * CLOCK_MONOTONIC (comparable with the caller's own clock_gettime readings). */
typedef struct {
  int32_t kernel;
  int64_t start_ns;
  int64_t end_ns;
} kiln_kernel_call;

/* Opens and validates a bundle. On success *model owns everything and must be
 * closed; on failure *model is NULL and errbuf (when given) holds the message. */
kiln_status kiln_model_open(const char *path, const kiln_options *options, kiln_model **model,
                            char *errbuf, size_t errlen);
/* The same from a bundle already in memory; the caller's bytes are not kept. */
kiln_status kiln_model_open_memory(const void *data, size_t size, const kiln_options *options,
                                   kiln_model **model, char *errbuf, size_t errlen);
/* Frees everything the model owns; NULL is fine. */
void kiln_model_close(kiln_model *model);

const char *kiln_model_name(const kiln_model *model);
const char *kiln_model_compiler_version(const kiln_model *model);
const char *kiln_model_target_name(const kiln_model *model);
const char *kiln_model_target_triple(const kiln_model *model);

int32_t kiln_model_input_count(const kiln_model *model);
int32_t kiln_model_output_count(const kiln_model *model);
kiln_status kiln_model_input_info(const kiln_model *model, int32_t index, kiln_tensor_info *info);
kiln_status kiln_model_output_info(const kiln_model *model, int32_t index, kiln_tensor_info *info);
/* Index of the input / output with that name, -1 when there is none. */
int32_t kiln_model_input_index(const kiln_model *model, const char *name);
int32_t kiln_model_output_index(const kiln_model *model, const char *name);

/* What the compiler found about the values an integer input may take, for tools
 * that invent input data (manifest "range" / "random", FORMAT.md):
 *   KILN_VALUES_RANGE  every value in [*lo, *hi) is valid: the input indexes an
 *                      axis of *hi elements (an embedding table's rows…);
 *   KILN_VALUES_GIVEN  no invented data is known to be valid: the input is
 *                      computed into an index; feed real data;
 *   KILN_VALUES_ANY    nothing is known (float inputs, integers that index nothing).
 * lo and hi are set for KILN_VALUES_RANGE only (each may be NULL). Returns
 * KILN_ERR_INVALID_ARGUMENT when model or kind is NULL or index is out of range. */
typedef enum { KILN_VALUES_ANY = 0, KILN_VALUES_RANGE, KILN_VALUES_GIVEN } kiln_values;
kiln_status kiln_model_input_range(const kiln_model *model, int32_t index, kiln_values *kind, int64_t *lo,
                                   int64_t *hi);

/* Copies one input into the model. Checks, in order: arguments non-NULL
 * (KILN_ERR_INVALID_ARGUMENT), name (KILN_ERR_NAME), dtype (KILN_ERR_DTYPE),
 * rank and dims (KILN_ERR_SHAPE), bytes == the input's byte size and data
 * non-NULL (KILN_ERR_INVALID_ARGUMENT). dims may be NULL when rank is 0. */
kiln_status kiln_model_set_input(kiln_model *model, const char *name, kiln_dtype dtype, int32_t rank,
                                 const int64_t *dims, const void *data, size_t bytes);
/* String tensors (dtype KILN_DTYPE_STRING, README "String tensors"). The slot of one
 * element of input (is_output 0) or output index: a 4-byte length and at most
 * slot - 4 bytes of string; 0 when that tensor is not a string tensor or the
 * arguments are bad. */
int64_t kiln_model_string_bytes(const kiln_model *model, int32_t is_output, int32_t index);
/* Copies a string input into the model: strings[i] (lengths[i] bytes, any bytes,
 * not NUL-terminated; NULL when the length is 0) for each element in C order.
 * Checks as kiln_model_set_input does (name, dtype string, rank and dims), then
 * each length against the slot: a longer string is KILN_ERR_INVALID_ARGUMENT,
 * naming the input and the element (kiln compile --max-string-bytes raises the
 * slot). The input is left unset on any error. */
kiln_status kiln_model_set_input_strings(kiln_model *model, const char *name, int32_t rank, const int64_t *dims,
                                         const char *const *strings, const size_t *lengths);
/* Element `element` (C order, of the run's shape) of string output index after a
 * successful run: *data (not NUL-terminated, valid until the next run or close)
 * and *length. */
kiln_status kiln_model_output_string(kiln_model *model, int32_t index, int64_t element, const char **data,
                                     size_t *length);
/* Runs every kernel in order. Every input must have been set (once is enough:
 * inputs keep their values across runs). Allocates nothing. */
kiln_status kiln_model_run(kiln_model *model);
/* Output i of the last successful run: *data points into the model and stays
 * valid until the next run or close. info may be NULL. */
kiln_status kiln_model_output(kiln_model *model, int32_t index, const void **data, kiln_tensor_info *info);

/* Changes the number of threads (0 = online cores). A configuration call: it
 * restarts the pool (and may create threads), unlike run. */
kiln_status kiln_model_set_threads(kiln_model *model, int32_t threads);
int32_t kiln_model_threads(const kiln_model *model);

/* How long the pool's idle workers keep spinning after a parallel loop before
 * they sleep, in microseconds (default 200; 0 to sleep at once; at most 10 s).
 * A model run once per audio chunk, say every 20 ms, pays the machine's cost of
 * resuming sleeping cores on every run (kiln's own wake-up is ~10 us; on a VM the
 * whole run can take 2-3x its warm time); spinning through the gap avoids it at
 * the price of a busy core while idle — ONNX Runtime's allow_spinning trade-off.
 * Kept across kiln_model_set_threads. */
kiln_status kiln_model_set_spin_us(kiln_model *model, int64_t us);

/* Turns per-kernel timing on or off (the counters are kept). */
kiln_status kiln_model_set_profile(kiln_model *model, int32_t enabled);
/* The per-kernel counters (zero calls when profiling was never on). */
kiln_status kiln_model_profile(const kiln_model *model, const kiln_kernel_profile **entries, int32_t *count);
void kiln_model_profile_reset(kiln_model *model);
/* The kernel calls of the last run made with profiling on, in the order they ran:
 * one per kernel of the plan (after a failed run, the calls up to and including
 * the one that failed); *count is 0 before the first profiled run. The array is
 * allocated at open and belongs to the model: each profiled run overwrites it (the
 * two clock reads per call that profiling makes anyway, stored), so a caller who
 * wants every run's calls (a timeline, `kiln run --trace`) copies them after each
 * run. Valid until the next run or close; kiln_model_profile_reset leaves it. */
kiln_status kiln_model_profile_calls(const kiln_model *model, const kiln_kernel_call **calls, int32_t *count);

int64_t kiln_model_arena_bytes(const kiln_model *model);
int64_t kiln_model_weights_bytes(const kiln_model *model);
int64_t kiln_model_workspace_bytes(const kiln_model *model);
int32_t kiln_model_kernel_count(const kiln_model *model);

/* Message of the last failed call on this model ("" when none failed). */
const char *kiln_model_last_error(const kiln_model *model);

#ifdef __cplusplus
}
#endif
#endif
