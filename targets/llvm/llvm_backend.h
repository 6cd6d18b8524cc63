/* llvm_backend.h — the LLVM backend: loop IR (tir_func) → LLVM IR through the
 * LLVM 19 C API → optimized with the standard default<O3> pipeline → an object
 * file (for bundles), textual IR / assembly (for dumps), or code loaded into this
 * process through ORC LLJIT (for constant folding and tests).
 *
 * Every tir_func becomes one external function with the kernel ABI of
 * runtime/kiln_abi.h, `int32_t name(void *const *buffers, const kiln_ctx *ctx)`.
 * Its buffers are promised not to overlap (they are marked noalias) and to be
 * aligned as tir_buffer.align says; PARALLEL loops are outlined into tasks run
 * through ctx->parallel_for, so ctx may be NULL only for kernels without one.
 *
 * Each compile owns its LLVM context, module and target machine; freeing the
 * module (and the JIT made from it) releases everything, so one process can
 * compile thousands of kernels. A module is used by one thread at a time;
 * different modules may be compiled on different threads. */
#ifndef TGT_LLVM_BACKEND_H
#define TGT_LLVM_BACKEND_H
#include <stddef.h>
#include <stdio.h>
#include "err.h"
#include "kiln_abi.h"
#include "templates.h"
#include "tir.h"

typedef struct tgt_llvm_options {
  const char *triple;   /* NULL: the host (and cpu/features default to the host's) */
  const char *cpu;      /* NULL: host CPU for the host, "generic" otherwise */
  const char *features; /* NULL: host features for the host, "" otherwise; "+avx2,-avx512f" */
  const char *abi;      /* NULL: the triple's default (riscv64 needs "lp64d" to link with gcc) */
  int opt_level;        /* 0..3: the default<On> pipeline and the code generator's level */
  int portable;         /* 1: always use the libcall-free lowerings (float16 conversions as
                         * integer code, round-half-even by the 2^23 trick) that targets
                         * without those instructions get anyway; for tests and old runtimes */
  int gpu_sm;           /* a GPU target (targets/cuda): its compute capability (80, 90) */
  const struct tgt_llvm_gpu *gpu; /* a GPU target's part of the translation (targets/cuda), else NULL */
} tgt_llvm_options;

/* Options of a named target: "host", "x86_64" (generic x86-64), "x86_64-avx2",
 * "x86_64-avx512", "aarch64" (+neon), "aarch64-dotprod" (+dotprod: SDOT/UDOT),
 * "aarch64-i8mm" (+dotprod, +i8mm: USDOT too), "armv7" (armv7-linux-gnueabihf,
 * +neon), "riscv64" (riscv64-linux-gnu, rv64gc). opt_level is set to 3. -1 on an
 * unknown name. */
int tgt_llvm_named_target(const char *name, tgt_llvm_options *out, gir_err *err);
/* The names above, NULL-terminated. */
const char *const *tgt_llvm_target_names(void);

/* Whether code for the named target runs on this machine: same architecture as
 * the host and every CPU feature its level needs (x86-64-v3: AVX2, FMA, BMI…;
 * v4: AVX-512 F/BW/CD/DQ/VL; aarch64-dotprod: dotprod; aarch64-i8mm: dotprod and
 * i8mm). 0 with the reason in why otherwise. */
int tgt_llvm_target_runs_here(const char *name, char *why, size_t why_len);

/* The vector width and register count the schedule templates tile for. */
int tgt_llvm_lower_target(const tgt_llvm_options *opt, lower_target *out);

typedef struct tgt_llvm_module tgt_llvm_module;

/* Translates n kernels into one module and optimizes it. opt may be NULL (host,
 * O3). NULL with a message on bad input (unsupported dtype, a variable or buffer
 * used outside its scope, an unknown triple...). */
tgt_llvm_module *tgt_llvm_compile(const tir_func *const *fns, int32_t n, const tgt_llvm_options *opt, gir_err *err);
void tgt_llvm_module_free(tgt_llvm_module *m);

/* The instruction-set features the module's code may use, comma-separated: x86's
 * ("avx2,fma,…"), aarch64's dot-product ones ("dotprod,i8mm"), "" for other
 * architectures: a bundle records them and the runtime refuses it on a CPU without
 * one (runtime/cpu.c). */
const char *tgt_llvm_module_features(const tgt_llvm_module *m);
/* The normalized target triple the module was compiled for; whether it is the host. */
const char *tgt_llvm_module_triple(const tgt_llvm_module *m);
int tgt_llvm_module_is_host(const tgt_llvm_module *m);

/* A relocatable ELF (or the triple's format) object: into a malloc'ed block the
 * caller frees, or into a file. */
int tgt_llvm_emit_object_mem(const tgt_llvm_module *m, void **data, size_t *size, gir_err *err);
int tgt_llvm_emit_object(const tgt_llvm_module *m, const char *path, gir_err *err);
/* Textual LLVM IR (after optimization) and the target's assembly, for dumps. */
int tgt_llvm_dump_ir(const tgt_llvm_module *m, FILE *out, gir_err *err);
int tgt_llvm_dump_asm(const tgt_llvm_module *m, FILE *out, gir_err *err);
/* Same, into malloc'ed NUL-terminated strings (size excludes the NUL). */
int tgt_llvm_ir_string(const tgt_llvm_module *m, char **text, size_t *size, gir_err *err);
int tgt_llvm_asm_string(const tgt_llvm_module *m, char **text, size_t *size, gir_err *err);

/* In-process code: an ORC LLJIT holding the module's object code (the module
 * must target the host; it stays owned by the caller and may be freed at once).
 * Kernels looked up stay valid until tgt_llvm_jit_free. */
typedef struct tgt_llvm_jit tgt_llvm_jit;
tgt_llvm_jit *tgt_llvm_jit_new(const tgt_llvm_module *m, gir_err *err);
kiln_kernel_fn tgt_llvm_jit_lookup(tgt_llvm_jit *j, const char *name, gir_err *err);
void tgt_llvm_jit_free(tgt_llvm_jit *j);

#endif
