/* tun_target.c — the target a tuning session compiles for, and this machine's
 * CPU model. Tuning measures kernels here, so the target must be one this CPU
 * runs (host or an x86-64 level it has); records carry the target name and the
 * CPU model, and records from another CPU are not applied (a schedule that wins on
 * one microarchitecture is only a guess on another). */
#include <stdio.h>
#include <string.h>
#include "cuda_backend.h"
#include "tuner.h"

void tun_cpu_model(char *buf, size_t n) {
  snprintf(buf, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    /* x86: "model name : Intel(R) Xeon(R) …"; aarch64 kernels may say "CPU part" only */
    if (strncmp(line, "model name", 10) && strncmp(line, "Model", 5)) continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    size_t l = strcspn(v, "\n");
    while (l > 0 && (v[l - 1] == ' ' || v[l - 1] == '\t')) l--;
    if (l) snprintf(buf, n, "%.*s", (int)l, v);
    break;
  }
  fclose(f);
}

int tun_target_init(tun_target *t, const char *name, gir_err *err) {
  memset(t, 0, sizeof *t);
  if (!name) name = "host";
  if (strlen(name) >= sizeof t->name) return gir_errf(err, "unknown target '%s'", name);
  snprintf(t->name, sizeof t->name, "%s", name);
  if (tgt_cuda_is_target(name))
    return gir_errf(err, "tuning measures kernels on this machine's CPU: GPU targets (%s) are not tuned yet "
                         "(their schedules' knobs are data, lower_gpu_*_cfg, but there is no GPU measurer)", name);
  if (tgt_llvm_named_target(name, &t->llvm, err) < 0) return -1;
  char why[256];
  if (!tgt_llvm_target_runs_here(name, why, sizeof why))
    return gir_errf(err, "tuning measures kernels on this machine, which cannot run target %s: %s", name, why);
  if (tgt_llvm_lower_target(&t->llvm, &t->lower) < 0) return gir_errf(err, "target %s: no vector description", name);
  t->lower.tuning = NULL;
  tun_cpu_model(t->cpu, sizeof t->cpu);
  return 0;
}
