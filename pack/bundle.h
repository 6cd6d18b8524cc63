/* bundle.h — what a bundle holds and the writer that packs it (a tar archive
 * written with libarchive): manifest.json (format, model, compiler, target,
 * inputs/outputs with names, dtypes and shapes, arena/weights/workspace bytes, the
 * size and CRC32 of every other entry), plan.json (the ordered kernel calls, each
 * argument an input, an output, an arena range or a params.bin range), params.bin
 * (the constants, 64-byte aligned) and lib/<target>.so (the kernels); a bundle of the C
 * target also carries the source the library was compiled from (src/<target>.c). The runtime
 * (runtime/) reads exactly this; nothing else connects the two. */
#ifndef PACK_BUNDLE_H
#define PACK_BUNDLE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "graph.h"

#define PACK_FORMAT_VERSION 2 /* 2: kernels may call kiln_ctx.fail (plan.json "checks") */
#define PACK_FORMAT_VERSION_GUARDS 3 /* 3: kernels may run conditionally (plan.json "when", "fail") */
#define PACK_FORMAT_VERSION_STRINGS 4 /* 4: inputs and outputs may be strings (manifest "string_bytes") */

typedef enum pack_arg_kind { PACK_ARG_INPUT, PACK_ARG_OUTPUT, PACK_ARG_ARENA, PACK_ARG_PARAM, PACK_ARG_KIND_COUNT } pack_arg_kind;

typedef struct pack_arg {
  pack_arg_kind kind;
  int64_t index;  /* INPUT / OUTPUT: graph input / output index */
  int64_t offset; /* ARENA / PARAM: byte offset */
  int64_t bytes;
} pack_arg;

/* One launch of a GPU kernel (plan.json "launches", targets/cuda): its entry point
 * and its grid and block dimensions (x, y, z each). */
typedef struct pack_launch {
  const char *symbol;
  int64_t grid[3], block[3];
} pack_launch;

typedef struct pack_call {
  const char *name, *symbol;
  int64_t flops;
  int32_t n_args;
  pack_arg *args;
  int32_t n_checks;          /* the kernel's run-time checks (kiln_ctx.fail's check numbers) */
  const char *const *checks; /* what each is about: "Gather 'g' (opset 13), indices 'ids'" */
  int32_t n_launches;        /* GPU bundles: the kernel's launches, in order; 0 for CPU code */
  const pack_launch *launches;
  int32_t n_when;            /* the call runs only when every when[j] (a bool) equals when_is[j]: */
  const pack_arg *when;      /* an If branch's conditions, innermost first (plan.json "when") */
  const uint8_t *when_is;
  const char *fail;          /* non-NULL: not called; the run fails with this message (plan.json "fail") */
} pack_call;

/* What the compiler knows about the values an integer input may take (manifest
 * "range" / "random", runtime/FORMAT.md): nothing, the indices [lo, hi) of an axis
 * it indexes, or that only given data makes sense (it is computed into an index). */
typedef enum pack_values { PACK_VALUES_ANY, PACK_VALUES_RANGE, PACK_VALUES_GIVEN } pack_values;

typedef struct pack_io {
  const char *name;
  gir_dtype dtype;
  gir_shape shape;
  pack_values values; /* inputs only */
  int64_t lo, hi;     /* PACK_VALUES_RANGE: [lo, hi) */
  uint8_t has_extent;  /* outputs: a data-dependent size along extent_axis, whose int64 value lives */
  int32_t extent_axis; /* at `extent` after a run (manifest "extent") */
  pack_arg extent;
  int32_t string_bytes; /* dtype string: the slot of each element (manifest "string_bytes"), else 0 */
} pack_io;

typedef struct pack_bundle {
  const char *model, *compiler_version, *target_name, *triple;
  const char *cpu_features; /* comma-separated CPU features the code may use (manifest target.features), or NULL */
  pack_io *inputs, *outputs;
  int32_t n_inputs, n_outputs;
  pack_call *calls;
  int32_t n_calls;
  int64_t arena_bytes, workspace_bytes;
  const void *params;
  int64_t params_bytes;
  const void *lib;           /* the kernels: a shared library, or PTX text for a GPU (gpu_sm > 0) */
  int64_t lib_bytes;
  int32_t gpu_sm;            /* a CUDA bundle: the compute capability (manifest target.sm), lib/<target>.ptx */
  const char *source; /* the kernels' C source (the C target): entry src/<target>.c; NULL: none */
  int64_t source_bytes;
} pack_bundle;

/* Writes the bundle to a file (a failed write removes it; the message names the
 * path and says why), or into a malloc'ed block (*data, *size; the caller frees).
 * Both go through one archive writer: the bytes are the same. */
int pack_write_bundle(const char *path, const pack_bundle *b, gir_err *err);
int pack_bundle_to_memory(const pack_bundle *b, void **data, size_t *size, gir_err *err);
/* Prints the entries with their sizes and the manifest (with every entry's CRC32):
 * `kiln compile --dump-after=pack`. */
int pack_print_bundle(FILE *f, const pack_bundle *b, gir_err *err);

#endif
