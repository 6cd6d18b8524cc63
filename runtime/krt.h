/* krt.h — the runtime's internal contract between its files (never installed).
 *
 * Opening a bundle is a short pipeline, one file per step:
 *   archive.c   tar archive → the expected entries, in memory, each checked
 *   manifest.c  manifest.json → model description; every entry's size and CRC32
 *   plan.c      plan.json → kernels and their buffer arguments, range-checked
 *   library.c   lib/<target>.so → dlopen'ed from a private copy, symbols resolved
 *   cuda.c      (nvptx64 bundles instead) lib/<target>.ptx → loaded through the
 *               CUDA driver (dlopen'ed), device memory, launches
 *   model.c     the public API: runs the steps above, allocates the one memory
 *               block, precomputes every kernel's buffer array, runs, reports
 * Every step reports failure through a krt_error (first failure wins) and
 * leaves whatever it allocated hanging off the model, which kiln_model_close
 * frees however far the open got. */
#ifndef KILN_KRT_H
#define KILN_KRT_H
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
#include "kiln_abi.h"
#include "krt_threadpool.h"

#define KRT_ERR_MAX 512
#define KRT_ALIGN 64
/* The archive holds exactly four entries, five with the C target's source (src/<target>.c). */
#define KRT_ENTRY_COUNT 5
/* Most kernels / arguments per kernel a plan may have: sanity bounds only. */
#define KRT_MAX_KERNELS (1 << 20)
#define KRT_MAX_KERNEL_ARGS 4096
#define KRT_MAX_WHEN 64 /* conditions on one kernel (nested If branches) */
#define KRT_MAX_TENSORS 65536
#define KRT_MAX_SYMBOL 255
#define KRT_MAX_CHECKS 4096      /* run-time checks per kernel */
#define KRT_MAX_CHECK_TEXT 1024  /* characters describing one */

typedef struct {
  kiln_status status; /* KILN_OK until the first failure */
  char msg[KRT_ERR_MAX];
} krt_error;

/* Records the first failure (later ones are dropped) and returns its status. The
 * message is one line: control characters (from names in the bundle) become '?'. */
kiln_status krt_fail(krt_error *err, kiln_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 64-byte aligned allocation of at least one byte; NULL when out of memory. */
void *krt_aligned_alloc(size_t bytes);
/* Rounds up to KRT_ALIGN; 0 when that overflows (callers treat it as too big). */
uint64_t krt_round_up(uint64_t bytes);
/* *out = a * b / a + b without overflow past INT64_MAX; 0 when it would overflow. */
int krt_mul_i64(int64_t a, int64_t b, int64_t *out);
int krt_add_i64(int64_t a, int64_t b, int64_t *out);
uint32_t krt_crc32(const unsigned char *data, size_t size);

/* ---- archive.c ---- */

typedef struct {
  char *name;
  unsigned char *data; /* 64-byte aligned, owned */
  size_t size;
} krt_entry;

typedef struct {
  krt_entry entries[KRT_ENTRY_COUNT];
  int32_t count;
} krt_archive;

/* Reads every entry of a plain tar archive into memory. Accepts only regular
 * files named manifest.json, plan.json, params.bin, lib/NAME.so or lib/NAME.ptx
 * (one library in all), src/NAME.c, each at most
 * once and at most max_entry_bytes (and never more than the archive) long. */
kiln_status krt_archive_read_file(const char *path, int64_t max_entry_bytes, krt_archive *out, krt_error *err);
kiln_status krt_archive_read_memory(const void *data, size_t size, int64_t max_entry_bytes, krt_archive *out,
                                    krt_error *err);
void krt_archive_free(krt_archive *archive);
krt_entry *krt_archive_find(krt_archive *archive, const char *name);

/* ---- the model, filled in by the steps ---- */

typedef struct {
  char *name;
  kiln_dtype dtype;
  int32_t rank;
  int64_t dims[KILN_MAX_RANK];
  int64_t elements;
  int64_t bytes;
  unsigned char *data; /* inside the model's block */
  int32_t set;         /* inputs: set since open */
  kiln_values values;  /* inputs: the manifest's "range" / "random" (manifest.c) */
  int64_t range_lo, range_hi;
  /* outputs: a data-dependent size along extent_axis (manifest "extent"): dims is the
   * bound; after a run the int64 at `extent` (plan.c checks the argument) is the size
   * and `actual` the dims kiln_model_output reports (the data compacted to them) */
  int32_t has_extent, extent_axis;
  struct cJSON *extent_json; /* the argument, between manifest.c and plan.c */
  int32_t extent_arg;        /* index into kiln_model.arg_descs / .args */
  int64_t actual[KILN_MAX_RANK];
  int64_t string_bytes; /* dtype string: the slot of each element (manifest "string_bytes"), else 0 */
} krt_tensor;

/* Bytes per element of t: its dtype's, or a string's slot. */
static inline int64_t krt_elem_bytes(const krt_tensor *t) {
  return t->dtype == KILN_DTYPE_STRING ? t->string_bytes : (int64_t)kiln_dtype_size(t->dtype);
}

typedef enum { KRT_ARG_INPUT, KRT_ARG_OUTPUT, KRT_ARG_ARENA, KRT_ARG_PARAM } krt_arg_kind;

typedef struct {
  krt_arg_kind kind;
  int64_t index;  /* input / output */
  int64_t offset; /* arena / param */
  int64_t bytes;  /* arena / param */
} krt_arg;

/* One launch of a GPU kernel (plan.json "launches", nvptx64 bundles). */
typedef struct {
  char *symbol;
  uint32_t grid[3], block[3];
  void *fn; /* its CUfunction, once the module is loaded (cuda.c) */
} krt_launch;

#define KRT_MAX_LAUNCHES 64

typedef struct {
  char *name;
  char *symbol; /* GPU kernels: "symbol" if given, else the first launch's symbol */
  int64_t flops;
  kiln_kernel_fn fn;
  krt_launch *launches; /* GPU kernels only: run in order */
  int32_t launch_count;
  int64_t first_arg; /* into kiln_model.arg_descs / .args */
  int32_t arg_count;
  char **checks;      /* what the kernel's run-time check j is about (plan.json "checks") */
  int32_t check_count;
  int32_t when_count; /* plan.json "when": the bools at args[first_arg + arg_count + j], after the */
  uint8_t *when_is;   /* kernel's own (it never reads them); it runs only if each equals when_is[j] */
  char *fail;         /* plan.json "fail": not called; the run fails with this message */
} krt_kernel;

/* The first failed run-time check of a run (kiln_ctx.fail), set atomically:
 * kernels may report from any thread of the pool. */
typedef struct {
  int32_t set;
  int32_t check;
  int64_t value, lo, hi;
} krt_check_failure;

struct kiln_model {
  char *name, *compiler_version, *target_name, *target_triple;
  char **target_features; /* manifest target.features: the CPU features the code may use */
  int32_t target_feature_count;
  int32_t gpu;       /* the triple's architecture is nvptx64: PTX run through the CUDA driver (cuda.c) */
  int32_t target_sm; /* GPU bundles: target.sm, the least compute capability (major * 10 + minor) */
  struct krt_cuda *cuda; /* GPU bundles: the driver, device, module, memory, stream (cuda.c) */
  krt_tensor *inputs, *outputs;
  int32_t input_count, output_count;
  int64_t arena_bytes, weights_bytes, workspace_bytes;

  krt_kernel *kernels;
  int32_t kernel_count;
  krt_arg *arg_descs;
  void **args; /* precomputed buffer pointers, kernel k's at args + first_arg */
  int64_t arg_count;

  unsigned char *params; /* params.bin, 64-byte aligned, owned */
  size_t params_size;
  unsigned char *block; /* arena, workspace, inputs, outputs: the one allocation */
  void *lib;            /* dlopen handle */
  int lib_fd;           /* the memfd lib was loaded from, open while it is (library.c); -1: none */

  krt_pool *pool;
  int64_t spin_us; /* kiln_model_set_spin_us's; -1: the pool's default */
  kiln_ctx ctx;
  krt_check_failure failure;
  int32_t threads;

  kiln_kernel_profile *profile;
  kiln_kernel_call *calls; /* the last profiled run's calls, kernel_count of them */
  int32_t call_count;
  int32_t profiling;
  int32_t outputs_ready;
  char last_error[KRT_ERR_MAX];
};

/* ---- manifest.c ---- */

/* Parses and checks manifest.json, fills the model's description (names,
 * target, inputs, outputs, sizes), checks that the archive holds exactly the
 * entries it lists with the sizes and CRC32s it states. */
kiln_status krt_manifest_load(kiln_model *model, krt_archive *archive, krt_error *err);

/* ---- plan.c ---- */

/* Parses and checks plan.json against the model's description. */
kiln_status krt_plan_load(kiln_model *model, const krt_entry *plan, krt_error *err);
/* Fills model->args from the descriptors once every buffer has its place. */
void krt_plan_bind(kiln_model *model);

/* ---- library.c ---- */

/* dlopens the kernel library from a private copy and resolves every kernel's
 * symbol, which must lie inside that library. */
kiln_status krt_library_load(kiln_model *model, const krt_entry *lib, krt_error *err);
void krt_library_close(kiln_model *model);

/* ---- cuda.c: GPU bundles (target triple nvptx64-*) through the CUDA driver API ---- */

/* Whether a triple's architecture is nvptx64 (a GPU bundle). */
int krt_triple_is_gpu(const char *triple);
/* Checks the PTX text, opens the driver (dlopen: $KILN_CUDA_DRIVER or libcuda.so.1),
 * the device ($KILN_CUDA_DEVICE, default 0), loads the module and resolves every
 * launch's function, allocates the one device block, copies params.bin into it and
 * precomputes every launch's parameters. KILN_ERR_LOAD naming the call that failed. */
kiln_status krt_cuda_open(kiln_model *model, const krt_entry *ptx, krt_error *err);
/* One run: inputs to the device, the launches, outputs and failure records back.
 * KILN_ERR_RUN naming the call (and kernel / launch) that failed. When a kernel's
 * run-time check failed, returns KILN_OK with *failed_kernel = its index and
 * model->failure = its record; else *failed_kernel = -1. Profiles when profiling. */
kiln_status krt_cuda_run(kiln_model *model, int32_t *failed_kernel, krt_error *err);
/* Releases whatever krt_cuda_open got to (NULL-safe). */
void krt_cuda_close(kiln_model *model);

/* ---- cpu.c: the CPU features a bundle's code uses, present on this CPU? ---- */

#define KRT_MAX_FEATURES 64
/* KILN_OK when every named feature (LLVM's x86 names: "avx2", "avx512fp16", …) is
 * present and enabled by the OS; else KILN_ERR_LOAD naming the missing ones and
 * this CPU. A name it does not know counts as missing. */
kiln_status krt_cpu_check(const char *const *names, int32_t count, const char *target_name, krt_error *err);

/* ---- json.c: cJSON access with type checks and messages naming the field ---- */

struct cJSON;
/* Parses a whole entry (nothing but whitespace may follow the value). */
kiln_status krt_json_parse(const krt_entry *entry, struct cJSON **out, krt_error *err);
/* obj must be an object without duplicated keys. */
kiln_status krt_json_object(const struct cJSON *obj, const char *where, krt_error *err);
/* A required member; where names the object ("manifest.json: inputs[0]"). */
kiln_status krt_json_member(const struct cJSON *obj, const char *key, const char *where,
                            const struct cJSON **out, krt_error *err);
kiln_status krt_json_string(const struct cJSON *obj, const char *key, const char *where, const char **out,
                            krt_error *err);
/* An integral number in [min, max] (and within ±2^53, where doubles are exact). */
kiln_status krt_json_int(const struct cJSON *obj, const char *key, const char *where, int64_t min, int64_t max,
                         int64_t *out, krt_error *err);
kiln_status krt_json_int_item(const struct cJSON *item, const char *where, int64_t min, int64_t max,
                              int64_t *out, krt_error *err);
kiln_status krt_json_array(const struct cJSON *obj, const char *key, const char *where, const struct cJSON **out,
                           int32_t *count, krt_error *err);
/* strdup that reports KILN_ERR_NOMEM. */
kiln_status krt_strdup(const char *s, char **out, krt_error *err);

#endif
