/* compile.h — kiln_compile, the whole compiler as one flat list of named steps:
 * import → ranges → fold → simplify → hfuse → layout → fuse → outputs → lower → plan → codegen → link → pack.
 * Each step is one call into one module and can print its IR or what it made
 * (--dump-after=STEP). The bundle goes to a file or into memory (`kiln check`
 * runs it from there with the runtime, exactly as `kiln run` runs the file); both
 * are the same pipeline. Read this function first to understand the compiler. */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "importer.h"
#include "passes.h"

/* Largest arena (and largest single tensor) a bundle may need unless
 * kiln_compile_options.max_arena_bytes says otherwise: 64 GiB. */
#define KILN_DEFAULT_MAX_ARENA_BYTES ((int64_t)64 << 30)

typedef struct kiln_compile_options {
  int opt_level;                /* 0: no graph optimization; 1: fold + simplify; 2: + NCHWc layout and
                                 * fusion (default); 3: + horizontal fusion */
  const char *model_path;
  const char *output_path;      /* the bundle file; NULL: into memory (kiln_compile_result.bundle) */
  const char *target;           /* named target (targets/llvm): "host" by default */
  const imp_options *import;
  const char *dump_after;       /* step name or NULL */
  FILE *dump;                   /* where dumps go (stdout by default) */
  int threads_hint;             /* for default schedules */
  int64_t max_arena_bytes;      /* 0: KILN_DEFAULT_MAX_ARENA_BYTES */
  const struct lower_tuning *tuning; /* sees every group lowered and may tune it (tuner/); NULL: the defaults */
  int aot;                      /* 1: output_path is a folder that gets a C project (pack/aot.h), no bundle */
  const char *kernels;          /* --aot on a Cortex-M target: "c" (NULL: the default) or "llvm" */
  int split_k;                  /* GPU convs split over input-channel slices (layout/split_k.c): 0 by the
                                 * rule, 1 never, N slices wherever N divides the channels */
  int winograd;                 /* 3x3 convs as Winograd F(m,3) (layout/winograd.c): a lay_winograd_mode,
                                 * LAY_WINOGRAD_AUTO (0: where it pays, on targets with 8+ float lanes), ON, OFF */
  int gpu_tf32;                 /* GPU targets: f32 matmuls on tensor cores, inputs rounded to TF32 (--gpu-math tf32) */
} kiln_compile_options;

typedef struct kiln_compile_result {
  int32_t kernels, calls; /* calls: the plan's (kernels that move no bytes are dropped) */
  int64_t arena_bytes, arena_lower_bound, weights_bytes, workspace_bytes, code_bytes, flops;
  int64_t intermediate_bytes; /* written into intermediates per run */
  int32_t folded_nodes;
  int32_t winograd_convs;     /* 3x3 convs rewritten as Winograd transforms (layout/winograd.c) */
  int32_t generic_conv, generic_matmul, generic_pool; /* groups whose conv / matmul / pooling stage no template
                                                         scheduled (the generic default schedule) */
  char generic_names[256];    /* the first of those kernels' names, space-separated */
  int32_t n_unbound;          /* graph-input dims left open (symbolic, empty, -1) and defaulted to 1 */
  char unbound[512];          /* which: "x[0] 'batch', y[2] -1" (importer.h) */
  int32_t n_trapped;          /* If branches that cannot run for these shapes: run-time errors if taken */
  char trapped[512];          /* the first one's reason */
  void *bundle;               /* output_path NULL: the bundle, malloc'ed (the caller frees) */
  /* --aot: the project's footprint, measured with the target's C compiler (pack/aot.h) */
  int footprint_measured;     /* 0: footprint_why says why not */
  char footprint_why[256], footprint_compiler[160];
  int64_t flash_kernels, flash_runtime, flash_weights, ram_data, ram_stack;
  int stack_exact;
  size_t bundle_bytes;
} kiln_compile_result;

extern const char *const kiln_compile_steps[]; /* NULL-terminated */

int kiln_compile(const kiln_compile_options *opt, kiln_compile_result *res, gir_err *err);

/* `kiln inspect --footprint`: compiles for the target without keeping anything (the
 * C targets through an --aot project in a temporary folder, measured with their C
 * compiler; the others into a bundle in memory) and prints the flash and RAM. */
int kiln_print_footprint(const kiln_compile_options *opt, FILE *out, gir_err *err);

/* The front half of the pipeline: import → ranges → fold → simplify → hfuse →
 * layout → fuse → outputs → lower, for a tool that wants the graph and its
 * kernels without code. On success f holds them (free with kiln_front_free). */
#include "llvm_backend.h"
#include "lower.h"
typedef struct kiln_front {
  gir_arena *arena;
  gir_graph *g;
  gir_input_range *ranges; /* per graph input, found on the imported graph */
  tir_builder b;
  lower_program prog;
  tgt_llvm_options topt;   /* the LLVM backend's options for the target (unset when c_kernels) */
  int c_kernels;           /* the kernels are C (targets/c) */
} kiln_front;

int kiln_compile_front(const kiln_compile_options *opt, kiln_front *f, kiln_compile_result *res, gir_err *err);
void kiln_front_free(kiln_front *f);

#endif
