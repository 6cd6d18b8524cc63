/* c_backend.h — the C backend: loop IR (tir_func) → portable C99 source
 * (c_emit.c), for toolchains LLVM lacks and for reading generated code; and the
 * driver that turns such a source into a shared library or an object with a C
 * compiler (c_build.c: `cc -std=c99 -O2 -fPIC -ffp-contract=off ...`, in a
 * private temporary folder, as pack/link.c links).
 *
 * Each tir_func becomes one external function with the kernel ABI of
 * runtime/kiln_abi.h, `int32_t name(void *const *buffers, const kiln_ctx *ctx)`,
 * computing what the LLVM backend computes (see c_emit.c for the rules). The
 * source includes only <math.h>, <string.h>, <stdint.h> and kiln_abi.h (as
 * opt->abi_header names it), whose text tgt_c_abi_text() returns so that a
 * caller can write it next to the source. */
#ifndef TGT_C_BACKEND_H
#define TGT_C_BACKEND_H
#include <stddef.h>
#include "err.h"
#include "kiln_abi.h"
#include "templates.h"
#include "tir.h"

typedef struct tgt_c_options {
  const char *abi_header; /* the #include of the kernel ABI; NULL: "kiln_abi.h" */
} tgt_c_options;

/* The C source of n kernels, malloc'ed and NUL-terminated (*len excludes the NUL).
 * -1 with one line in err on a kernel the backend cannot translate. */
int tgt_c_emit_source(const tir_func *const *fns, int32_t n, const tgt_c_options *opt, char **src, size_t *len,
                      gir_err *err);

/* The build-time copies of targets/c/c_prelude.h and runtime/kiln_abi.h. */
const char *tgt_c_prelude_text(void);
const char *tgt_c_abi_text(void);

/* The flags every compile of generated C gets (after -O2): C99, no contraction,
 * libm without errno (so sqrt and rint can be inlined; results are the same). */
#define TGT_C_FLAGS "-std=c99", "-ffp-contract=off", "-fno-math-errno"

/* Compiles a source with the C compiler `driver` (NULL: "cc") into a shared
 * library (`driver -std=c99 -O2 ... -fPIC -shared -o k.so k.c -lm`), returned in
 * *lib (malloc'ed). The source's kiln_abi.h is written beside it. */
int tgt_c_compile_shared(const char *src, size_t len, const char *driver, void **lib, size_t *lib_bytes, gir_err *err);
/* The same into a relocatable object (-c, no -shared). */
int tgt_c_compile_object(const char *src, size_t len, const char *driver, void **obj, size_t *obj_bytes, gir_err *err);

/* What the schedule templates tile for in generated C, by target name: "c" 4 float
 * lanes (the 128-bit vectors of SSE, NEON and MVE that C compilers vectorize to) and
 * 16 registers; "cortex-m4" / "cortex-m7" (an FPU, no SIMD) scalar tiles;
 * "cortex-m55" (MVE) 4 lanes and 8 registers, one thread. -1 on another name. */
int tgt_c_lower_target(const char *name, lower_target *out, gir_err *err);
/* The C compiler for a target's AOT project and its CPU flags (NULL-terminated):
 * "cortex-m4" → arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard
 * -mfpu=fpv4-sp-d16, "cortex-m7" → ... -mfpu=fpv5-d16, "cortex-m55" → ...
 * -mcpu=cortex-m55 (MVE with floats); "c" → cc, no flags. */
const char *tgt_c_compiler(const char *name, const char *const **cflags);
/* Whether name is one of the C backend's targets above; whether it is a bare-metal
 * Cortex-M one (no Linux runtime there: only `kiln compile --aot`). */
int tgt_c_is_target(const char *name);
int tgt_c_is_bare_metal(const char *name);
/* This machine's triple as the runtime checks it ("x86_64-unknown-linux-gnu",
 * from uname): what a bundle of C compiled by the host's cc is built for. */
const char *tgt_c_host_triple(char *buf, size_t cap);

#endif
