/* compile.h — kiln_compile, the whole compiler as one flat list of named steps:
 * import → fold → simplify → hfuse → layout → fuse → outputs → lower → codegen → link → plan → pack. Each step is one
 * call into one module and can print its IR (--dump-after=STEP). Read this
 * function first to understand the compiler. */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H
#include <stdint.h>
#include <stdio.h>
#include "importer.h"

typedef struct kiln_compile_options {
  int opt_level;                /* 0: no graph optimization; 1: fold + simplify; 2: + NCHWc layout and
                                 * fusion (default); 3: + horizontal fusion */
  const char *model_path;
  const char *output_path;      /* the bundle */
  const char *target;           /* named target (targets/llvm): "host" by default */
  const imp_options *import;
  const char *dump_after;       /* step name or NULL */
  FILE *dump;                   /* where dumps go (stdout by default) */
  int threads_hint;             /* for default schedules */
} kiln_compile_options;

typedef struct kiln_compile_result {
  int32_t kernels, calls; /* calls: the plan's (kernels that move no bytes are dropped) */
  int64_t arena_bytes, arena_lower_bound, weights_bytes, workspace_bytes, code_bytes, flops;
  int32_t folded_nodes;
} kiln_compile_result;

extern const char *const kiln_compile_steps[]; /* NULL-terminated */

int kiln_compile(const kiln_compile_options *opt, kiln_compile_result *res, gir_err *err);

/* The front half of the pipeline, shared with `kiln check`: import → fold → simplify → hfuse → layout → fuse →
 * outputs → lower. On success f holds the graph and its kernels (free with
 * kiln_front_free). */
#include "lower.h"
typedef struct kiln_front {
  gir_arena *arena;
  gir_graph *g;
  tir_builder b;
  lower_program prog;
} kiln_front;

int kiln_compile_front(const kiln_compile_options *opt, kiln_front *f, kiln_compile_result *res, gir_err *err);
void kiln_front_free(kiln_front *f);
/* Parses "--opt-level N" / "-O N" / "-ON" at argv[*i]: 1 consumed, 0 not, -1 bad. */
int cli_take_opt_level(int argc, char **argv, int *i, int *level);

#endif
