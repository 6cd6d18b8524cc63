/* cuda_backend.h — the CUDA target: loop IR with GPU bindings (tir.h's bound loops,
 * barriers, shared buffers) → LLVM IR for nvptx64-nvidia-cuda → PTX, through the
 * LLVM translator and LLVM 19's NVPTX back end (no nvcc). The targets:
 *   cuda, cuda-sm80   PTX for sm_80 (Ampere and later: the driver compiles it for
 *                     the GPU it finds when the bundle is opened)
 *   cuda-sm90         PTX for sm_90 (Hopper)
 * A compile is tgt_llvm_compile with the options given here; the PTX is the module's
 * assembly (tgt_llvm_asm_string). Each kernel becomes one entry point per launch,
 * named and sized by tir/gpu_launch.h; the runtime runs them through the CUDA
 * driver (runtime/cuda.c). */
#ifndef TGT_CUDA_BACKEND_H
#define TGT_CUDA_BACKEND_H
#include "llvm_backend.h"

/* 1 for "cuda", "cuda-sm80", "cuda-sm90". */
int tgt_cuda_is_target(const char *name);
/* The options for one of them (opt_level 3, gpu_sm 80 or 90, the NVPTX hooks); -1
 * with a message for another name. */
int tgt_cuda_named_target(const char *name, tgt_llvm_options *out, gir_err *err);
/* The CUDA targets, NULL-terminated. */
const char *const *tgt_cuda_target_names(void);

#endif
