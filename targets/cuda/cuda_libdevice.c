/* cuda_libdevice.c — libdevice, the CUDA toolkit's bitcode math library: GPU code
 * calls its __nv_expf, __nv_powf… for the math functions the CPU targets take from
 * libm (targets/llvm/llvm_expr.c names them so); linked into the module after
 * translation, before the optimization pipeline (whose NVVMReflect pass resolves
 * its __nvvm_reflect queries: no flush-to-zero, as ONNX needs denormals). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include "cuda_internal.h"

/* libdevice, the CUDA toolkit's bitcode math library (__nv_expf…): $KILN_LIBDEVICE,
 * else the one found when kiln was configured, else the toolkit's usual places. NULL
 * when none is found. */
static const char *libdevice_path(void) {
  static const char *const where[] = {"/usr/local/cuda/nvvm/libdevice/libdevice.10.bc",
                                      "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc",
                                      "/usr/lib/cuda/nvvm/libdevice/libdevice.10.bc", NULL};
  const char *env = getenv("KILN_LIBDEVICE");
  if (env && env[0]) return env;
#ifdef KILN_LIBDEVICE_DEFAULT /* found when kiln was configured (CMakeLists.txt) */
  FILE *d = fopen(KILN_LIBDEVICE_DEFAULT, "rb");
  if (d) {
    fclose(d);
    return KILN_LIBDEVICE_DEFAULT;
  }
#endif
  for (int i = 0; where[i]; i++) {
    FILE *f = fopen(where[i], "rb");
    if (f) {
      fclose(f);
      return where[i];
    }
  }
  return NULL;
}

/* Links libdevice when a kernel calls one of its functions, then makes every
 * function but the kernels internal, so that what is not called disappears. */
int tgt_cuda_link_libdevice(LLVMModuleRef mod, const char *triple, gir_err *err) {
  const char *needs = NULL;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) && !strncmp(name, "__nv_", 5)) needs = name;
  }
  if (!needs) return 0;
  const char *path = libdevice_path();
  if (!path)
    return gir_errf(err, "cuda: a kernel calls %s: libdevice.10.bc (the CUDA toolkit's math library) was not found "
                    "under /usr/local/cuda/nvvm/libdevice; set KILN_LIBDEVICE to its path", needs);
  LLVMMemoryBufferRef mb = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &mb, &msg)) {
    gir_errf(err, "cuda: cannot read %s: %s", path, msg ? msg : "");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMModuleRef lib = NULL;
  int bad = LLVMParseBitcodeInContext2(LLVMGetModuleContext(mod), mb, &lib);
  LLVMDisposeMemoryBuffer(mb);
  if (bad) return gir_errf(err, "cuda: %s is not LLVM bitcode this LLVM reads", path);
  LLVMSetTarget(lib, triple);
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
  if (LLVMLinkModules2(mod, lib)) return gir_errf(err, "cuda: linking %s failed", path);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (!LLVMIsDeclaration(f) && !strncmp(name, "__nv_", 5)) LLVMSetLinkage(f, LLVMInternalLinkage);
  }
  LLVMValueRef one = LLVMConstInt(LLVMInt32TypeInContext(LLVMGetModuleContext(mod)), 0, 0);
  LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16, LLVMValueAsMetadata(one));
  return 0;
}

