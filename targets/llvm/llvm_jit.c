/* llvm_jit.c — in-process kernels through ORC LLJIT, for constant folding of
 * large tensors (cli/fold_jit.c), tests and anything that wants to run a kernel
 * without writing a shared library.
 *
 * The JIT is handed the module's object code (the same bytes a bundle would
 * ship), not its IR: the module stays with its owner, nothing is compiled twice,
 * and what runs here is exactly what an object file would contain. Symbols the
 * code needs from outside (libm, memset/memcpy, the compiler runtime) resolve
 * against this process: libm's by address from a table, the rest through a
 * process-wide search generator. Errors ORC reports asynchronously are kept in
 * the JIT and returned with the next failing lookup instead of going to stderr. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include "llvm_backend.h"

struct tgt_llvm_jit {
  LLVMOrcLLJITRef jit;
  char pending[512]; /* the first error ORC reported on its own */
};

typedef void (*any_fn)(void);

static const struct {
  const char *name;
  any_fn addr;
} libm[] = {
#define F(n) {#n, (any_fn)n}, {#n "f", (any_fn)n##f}
    F(exp), F(log), F(pow), F(sin), F(cos), F(tan), F(asin), F(acos), F(atan), F(sinh), F(cosh),
    F(asinh), F(acosh), F(atanh), F(tanh), F(erf), F(fmod), F(floor), F(ceil), F(trunc), F(sqrt),
    F(roundeven), F(fmin), F(fmax),
#undef F
};

static void report(void *ctx, LLVMErrorRef e) {
  tgt_llvm_jit *j = ctx;
  char *msg = LLVMGetErrorMessage(e);
  if (!j->pending[0]) snprintf(j->pending, sizeof j->pending, "%s", msg);
  LLVMDisposeErrorMessage(msg);
}

static int fail(tgt_llvm_jit *j, LLVMErrorRef e, const char *what, gir_err *err) {
  char *msg = LLVMGetErrorMessage(e);
  gir_errf(err, "jit: %s: %s%s%s", what, msg, j && j->pending[0] ? "; " : "", j ? j->pending : "");
  LLVMDisposeErrorMessage(msg);
  return -1;
}

void tgt_llvm_jit_free(tgt_llvm_jit *j) {
  if (!j) return;
  if (j->jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(j->jit);
    if (e) LLVMConsumeError(e);
  }
  free(j);
}

static int define_libm(tgt_llvm_jit *j, LLVMOrcJITDylibRef jd, gir_err *err) {
  enum { N = sizeof libm / sizeof libm[0] };
  LLVMOrcCSymbolMapPair syms[N];
  for (int i = 0; i < N; i++) {
    syms[i].Name = LLVMOrcLLJITMangleAndIntern(j->jit, libm[i].name);
    syms[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)libm[i].addr;
    syms[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    syms[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(syms, N);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(jd, mu);
  if (e) {
    LLVMOrcDisposeMaterializationUnit(mu);
    return fail(j, e, "cannot define libm's symbols", err);
  }
  return 0;
}

tgt_llvm_jit *tgt_llvm_jit_new(const tgt_llvm_module *m, gir_err *err) {
  if (!tgt_llvm_module_is_host(m)) {
    gir_errf(err, "jit: the module is compiled for %s, which this process cannot run", tgt_llvm_module_triple(m));
    return NULL;
  }
  void *obj;
  size_t size;
  if (tgt_llvm_emit_object_mem(m, &obj, &size, err) < 0) return NULL;
  tgt_llvm_jit *j = calloc(1, sizeof *j);
  if (!j) {
    free(obj);
    gir_errf(err, "out of memory");
    return NULL;
  }
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&j->jit, NULL);
  if (e) {
    j->jit = NULL;
    goto fail_e;
  }
  LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(j->jit), report, j);
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
  LLVMOrcDefinitionGeneratorRef gen;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL, NULL);
  if (e) goto fail_e;
  LLVMOrcJITDylibAddGenerator(jd, gen);
  if (define_libm(j, jd, err) < 0) goto fail;
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, size, "kiln-kernels");
  free(obj);
  obj = NULL;
  e = LLVMOrcLLJITAddObjectFile(j->jit, jd, mb); /* takes the buffer */
  if (e) goto fail_e;
  return j;
fail_e:
  fail(j, e, "cannot set up", err);
fail:
  free(obj);
  tgt_llvm_jit_free(j);
  return NULL;
}

kiln_kernel_fn tgt_llvm_jit_lookup(tgt_llvm_jit *j, const char *name, gir_err *err) {
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef e = LLVMOrcLLJITLookup(j->jit, &addr, name);
  if (e) {
    char what[300];
    snprintf(what, sizeof what, "kernel %s", name);
    fail(j, e, what, err);
    return NULL;
  }
  return (kiln_kernel_fn)(uintptr_t)addr;
}
