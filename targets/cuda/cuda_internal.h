/* cuda_internal.h — what the CUDA target's files share (never included outside
 * targets/cuda): the LLVM translator's internals, the hooks this target gives it,
 * and libdevice's linker. */
#ifndef TGT_CUDA_INTERNAL_H
#define TGT_CUDA_INTERNAL_H
#include "llvm_internal.h"

extern const tgt_llvm_gpu tgt_cuda_gpu;
/* Links libdevice into mod when a kernel calls one of its functions (else does
 * nothing); -1 with a message when it is needed and not found. */
int tgt_cuda_link_libdevice(LLVMModuleRef mod, const char *triple, gir_err *err);

#endif
