/* llvm_target.c — the LLVM backend behind the generic interface of
 * targets/target.h. An artifact is a compiled module plus, once a kernel is
 * looked up, the JIT that holds its code in this process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llvm_backend.h"
#include "target.h"

typedef struct llvm_backend {
  tgt_backend base;
  tgt_llvm_options opt;
  char target[32];
} llvm_backend;

struct tgt_artifact {
  tgt_llvm_module *mod;
  tgt_llvm_jit *jit; /* made by the first lookup */
};

static int supports(const tgt_backend *b, tgt_query q, int value, gir_dtype t) {
  (void)b;
  int dtype_ok = t >= 0 && t < GIR_DTYPE_COUNT && gir_dtype_first_class(t);
  switch (q) {
  case TGT_Q_DTYPE: return dtype_ok;
  case TGT_Q_UNOP: return dtype_ok && value >= 0 && value < TE_UNOP_COUNT;
  case TGT_Q_BINOP: return dtype_ok && value >= 0 && value < TE_BINOP_COUNT;
  case TGT_Q_FOR_KIND: return value >= 0 && value < TIR_FOR_KIND_COUNT && !tir_for_kind_is_gpu((tir_for_kind)value);
  case TGT_Q_SCOPE: return value == TIR_GLOBAL || value == TIR_LOCAL;
  default: return 0;
  }
}

static tgt_artifact *build(const tgt_backend *b, const tir_func *const *fns, int32_t n, gir_err *err) {
  const llvm_backend *lb = (const llvm_backend *)b;
  tgt_artifact *a = calloc(1, sizeof *a);
  if (!a) {
    gir_errf(err, "out of memory");
    return NULL;
  }
  a->mod = tgt_llvm_compile(fns, n, &lb->opt, err);
  if (!a->mod) {
    free(a);
    return NULL;
  }
  return a;
}

static int emit(const tgt_backend *b, const tgt_artifact *a, tgt_output what, void **data, size_t *size,
                gir_err *err) {
  (void)b;
  switch (what) {
  case TGT_OUT_OBJECT: return tgt_llvm_emit_object_mem(a->mod, data, size, err);
  case TGT_OUT_ASM: return tgt_llvm_asm_string(a->mod, (char **)data, size, err);
  case TGT_OUT_IR: return tgt_llvm_ir_string(a->mod, (char **)data, size, err);
  default: return gir_errf(err, "llvm: unknown output kind %d", (int)what);
  }
}

static kiln_kernel_fn lookup(const tgt_backend *b, tgt_artifact *a, const char *kernel, gir_err *err) {
  (void)b;
  if (!a->jit && !(a->jit = tgt_llvm_jit_new(a->mod, err))) return NULL;
  return tgt_llvm_jit_lookup(a->jit, kernel, err);
}

static void free_artifact(const tgt_backend *b, tgt_artifact *a) {
  (void)b;
  if (!a) return;
  tgt_llvm_jit_free(a->jit);
  tgt_llvm_module_free(a->mod);
  free(a);
}

static void destroy(tgt_backend *b) { free(b); }

tgt_backend *tgt_llvm_backend_new(const tgt_options *opt, gir_err *err) {
  const char *name = opt && opt->target ? opt->target : "host";
  llvm_backend *lb = calloc(1, sizeof *lb);
  if (!lb) {
    gir_errf(err, "out of memory");
    return NULL;
  }
  if (tgt_llvm_named_target(name, &lb->opt, err) < 0) {
    free(lb);
    return NULL;
  }
  lb->opt.opt_level = opt ? opt->opt_level : 3;
  if (lb->opt.opt_level < 0 || lb->opt.opt_level > 3) {
    gir_errf(err, "llvm: optimization level %d is not in 0..3", lb->opt.opt_level);
    free(lb);
    return NULL;
  }
  snprintf(lb->target, sizeof lb->target, "%s", name);
  lb->base = (tgt_backend){.name = "llvm", .target = lb->target, .ctx = lb, .supports = supports, .build = build,
                           .emit = emit, .lookup = lookup, .free_artifact = free_artifact, .destroy = destroy};
  return &lb->base;
}
