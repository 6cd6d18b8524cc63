/* cuda_target.c — the CUDA targets by name: nvptx64-nvidia-cuda, the sm as the
 * LLVM CPU, PTX ISA 7.8 (what sm_90 needs, and what CUDA 11.8 and later drivers
 * load), and the NVPTX hooks of the translator (cuda_codegen.c). */
#include <string.h>
#include "cuda_backend.h"
#include "cuda_internal.h"

typedef struct cuda_target {
  const char *name, *cpu;
  int sm;
} cuda_target;

static const cuda_target targets[] = {{"cuda", "sm_80", 80}, {"cuda-sm80", "sm_80", 80}, {"cuda-sm90", "sm_90", 90}};
static const char *const names[] = {"cuda", "cuda-sm80", "cuda-sm90", NULL};

const char *const *tgt_cuda_target_names(void) { return names; }

int tgt_cuda_is_target(const char *name) {
  for (size_t i = 0; name && i < sizeof targets / sizeof targets[0]; i++)
    if (!strcmp(name, targets[i].name)) return 1;
  return 0;
}

int tgt_cuda_named_target(const char *name, tgt_llvm_options *out, gir_err *err) {
  for (size_t i = 0; name && i < sizeof targets / sizeof targets[0]; i++)
    if (!strcmp(name, targets[i].name)) {
      *out = (tgt_llvm_options){.triple = "nvptx64-nvidia-cuda", .cpu = targets[i].cpu, .features = "+ptx78",
                                .opt_level = 3, .gpu_sm = targets[i].sm, .gpu = &tgt_cuda_gpu};
      return 0;
    }
  return gir_errf(err, "unknown CUDA target '%s' (known: cuda, cuda-sm80, cuda-sm90)", name ? name : "(null)");
}
