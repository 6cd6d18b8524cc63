/* aot.h — the ahead-of-time project for a bare-metal board (kiln compile --aot -o
 * DIR): the plan compiled into C instead of packed into a bundle, so that the board
 * needs no runtime, no plan parsing, no allocation and no file system. The folder
 * holds
 *   kernels.c        the kernels, C from the C backend (targets/c), kernel ABI (or
 *   kernels.o        with --kernels llvm: LLVM's object for the CPU)
 *   kiln_abi.h       the kernel ABI (runtime/kiln_abi.h)
 *   model.h          model_run(), the inputs' and outputs' names, dtypes, shapes
 *                    and byte sizes, MODEL_ARENA_BYTES
 *   model.c          model_run(): every kernel call of the plan in order, with its
 *                    buffers (an input, an output, an arena or a weights offset)
 *                    baked in; parallel_for runs a task's whole range at once
 *   model_weights.c  the constants as one const, 64-byte aligned array (flash)
 *   manifest.json    what the project is, with its measured footprint
 * and nothing else: it compiles with any C99 compiler that has <math.h> (see the
 * README's Makefile for arm-none-eabi-gcc). */
#ifndef PACK_AOT_H
#define PACK_AOT_H
#include <stddef.h>
#include <stdint.h>
#include "bundle.h"

typedef struct pack_aot {
  const char *model, *compiler_version, *target_name;
  const pack_io *inputs, *outputs;
  int32_t n_inputs, n_outputs;
  const pack_call *calls;
  int32_t n_calls;
  int64_t arena_bytes, arena_lower_bound;
  const void *params;
  int64_t params_bytes;
  const char *kernels_c; /* the kernels' source; NULL: kernels_obj instead */
  size_t kernels_c_bytes;
  const void *kernels_obj; /* the kernels as an object (LLVM's, for the CPU): kernels.o */
  size_t kernels_obj_bytes;
  const char *abi_h; /* kiln_abi.h's text */
} pack_aot;

/* Sizes measured by compiling the project for its CPU (pack_aot_measure). */
typedef struct pack_footprint {
  int measured;            /* 0: not measured (why says why) */
  char why[256];
  char compiler[160];      /* the compiler and flags that measured */
  int64_t kernel_code;     /* flash: kernels.c's code and constants */
  int64_t runtime_code;    /* flash: model.c's (everything but the kernels and weights) */
  int64_t weights;         /* flash: model_weights.c */
  int64_t data;            /* RAM: .data + .bss of all three (0: the project has none) */
  int64_t arena;           /* RAM: MODEL_ARENA_BYTES */
  int64_t stack;           /* RAM: the deepest call chain of model_run, from -fstack-usage */
  int stack_exact;         /* 0: some frame was dynamic or unknown (then stack is a lower bound): an
                            * LLVM kernels.o has no -fstack-usage, its frames are not in stack */
} pack_footprint;

/* Writes the project into dir (created when missing; files in it are replaced). */
int pack_write_aot(const char *dir, const pack_aot *p, gir_err *err);

/* Compiles dir's three sources with `driver cflags... -O2 -fstack-usage -c` in a
 * temporary folder and reads their section sizes and stack frames. A missing
 * driver is not an error: fp->measured stays 0 with the reason. */
int pack_aot_measure(const char *dir, const char *driver, const char *const *cflags, const pack_aot *p,
                     pack_footprint *fp, gir_err *err);

/* Writes dir/manifest.json: the project's description and footprint. */
int pack_write_aot_manifest(const char *dir, const pack_aot *p, const pack_footprint *fp, gir_err *err);

#endif
