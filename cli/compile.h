/* compile.h — kiln_compile, the whole compiler as one flat list of named steps:
 * import → fold → outputs → lower → codegen → link → plan → pack. Each step is one
 * call into one module and can print its IR (--dump-after=STEP). Read this
 * function first to understand the compiler. */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H
#include <stdint.h>
#include <stdio.h>
#include "importer.h"

typedef struct kiln_compile_options {
  const char *model_path;
  const char *output_path;      /* the bundle */
  const char *target;           /* named target (targets/llvm): "host" by default */
  const imp_options *import;
  const char *dump_after;       /* step name or NULL */
  FILE *dump;                   /* where dumps go (stdout by default) */
  int threads_hint;             /* for default schedules */
} kiln_compile_options;

typedef struct kiln_compile_result {
  int32_t kernels;
  int64_t arena_bytes, arena_lower_bound, weights_bytes, workspace_bytes, code_bytes, flops;
  int32_t folded_nodes;
} kiln_compile_result;

extern const char *const kiln_compile_steps[]; /* NULL-terminated */

int kiln_compile(const kiln_compile_options *opt, kiln_compile_result *res, gir_err *err);

#endif
