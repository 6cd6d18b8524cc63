/* target.h — the backend interface: loop IR into code, whatever the backend (a
 * vtable + context, like ggml's backends). tests/unit/test_llvm.c goes through
 * it; cli/compile.c calls the LLVM backend's own API (llvm_backend.h). A backend
 * is made for one target ("host", "aarch64"...):
 *   supports   — can it compile this dtype / op / loop kind / memory scope?
 *   build      — a list of tir_funcs → an artifact (one module of kernels)
 *   emit       — an artifact's object code, assembly or IR as bytes
 *   lookup     — a kernel of the artifact, loaded into this process (only where
 *                the target is this machine)
 * Backends: "llvm" (targets/llvm) and "c" (targets/c: portable C99 source), the
 * rows of the table in target.c. The CUDA target (targets/cuda) is the LLVM backend
 * with NVPTX hooks, driven through llvm_backend.h and cuda_backend.h.
 * Artifacts die with free_artifact, backends with tgt_backend_free. */
#ifndef TGT_TARGET_H
#define TGT_TARGET_H
#include <stddef.h>
#include "err.h"
#include "kiln_abi.h"
#include "tir.h"

typedef enum tgt_query {
  TGT_Q_DTYPE,    /* value: unused; the dtype */
  TGT_Q_UNOP,     /* value: a te_unop, on the dtype */
  TGT_Q_BINOP,    /* value: a te_binop, on the dtype */
  TGT_Q_FOR_KIND, /* value: a tir_for_kind */
  TGT_Q_SCOPE,    /* value: a tir_scope */
  TGT_QUERY_COUNT
} tgt_query;

typedef enum tgt_output {
  TGT_OUT_OBJECT, /* relocatable object (ELF for the llvm targets) */
  TGT_OUT_ASM,    /* target assembly, text */
  TGT_OUT_IR,     /* the backend's IR (LLVM IR for llvm), text */
  TGT_OUTPUT_COUNT
} tgt_output;

typedef struct tgt_options {
  const char *target; /* a named target; NULL = "host" */
  int opt_level;      /* 0..3 */
} tgt_options;

typedef struct tgt_artifact tgt_artifact; /* backend-defined */
typedef struct tgt_backend tgt_backend;

struct tgt_backend {
  const char *name;   /* "llvm" */
  const char *target; /* the named target it builds for */
  void *ctx;          /* the backend's own state */
  int (*supports)(const tgt_backend *b, tgt_query q, int value, gir_dtype t);
  tgt_artifact *(*build)(const tgt_backend *b, const tir_func *const *fns, int32_t n, gir_err *err);
  /* malloc'ed bytes (text outputs NUL-terminated, size excludes the NUL). */
  int (*emit)(const tgt_backend *b, const tgt_artifact *a, tgt_output what, void **data, size_t *size, gir_err *err);
  /* NULL with a message when the kernel is missing or the target is not this machine. */
  kiln_kernel_fn (*lookup)(const tgt_backend *b, tgt_artifact *a, const char *kernel, gir_err *err);
  void (*free_artifact)(const tgt_backend *b, tgt_artifact *a);
  void (*destroy)(tgt_backend *b);
};

/* The backend `name` ("llvm") for opt->target (opt NULL: host, O3). */
tgt_backend *tgt_backend_new(const char *name, const tgt_options *opt, gir_err *err);
void tgt_backend_free(tgt_backend *b);
/* Writes an output of an artifact to a file. */
int tgt_emit_file(const tgt_backend *b, const tgt_artifact *a, tgt_output what, const char *path, gir_err *err);

/* The backends' constructors (the table in target.c lists them). */
tgt_backend *tgt_llvm_backend_new(const tgt_options *opt, gir_err *err);
/* targets/c: opt->target "c" (or "host", or NULL: the host's cc), "cortex-m4",
 * "cortex-m7", "cortex-m55"; its IR output is the C source. */
tgt_backend *tgt_c_backend_new(const tgt_options *opt, gir_err *err);

#endif
