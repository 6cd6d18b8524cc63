/* profile_report.c — the per-kernel report of `kiln run --profile` and `kiln bench`.
 *
 * The runtime counts, for every kernel of the plan, its calls, the nanoseconds they
 * took and the FLOPs of one call (as the compiler counted them). From those we
 * derive what tells a schedule author where to look: ms per call, the share of the
 * total, GFLOPS, and the percentage of the machine's measured peak (peak.c: one
 * core's FMA peak × the threads the model runs on). Two summary figures single out
 * the kernels whose speed is decided by compute rather than memory: the FLOP-weighted
 * average % of peak of the kernels whose name says conv, and of those whose name says
 * matmul or gemm. Kernel names come from the bundle's plan, where the compiler names
 * a fused kernel after its group's anchor (k<N>_<op>: the first op that is not
 * injective, e.g. k12_conv_nchwc for a conv + bias + relu), so a name is a fair guide
 * to what dominates a kernel's FLOPs. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static int name_says(const char *name, const char *word) {
  size_t n = strlen(word);
  for (const char *p = name; *p; p++) {
    size_t i = 0;
    while (i < n && p[i] && tolower((unsigned char)p[i]) == word[i]) i++;
    if (i == n) return 1;
  }
  return 0;
}

static int by_time(const void *a, const void *b) { /* longest first, then by name */
  const cli_kernel_stat *x = a, *y = b;
  if (x->ms != y->ms) return x->ms < y->ms ? 1 : -1;
  return strcmp(x->name, y->name);
}

int cli_profile_summarize(const kiln_kernel_profile *pr, int32_t n, const cli_peak *peak, int32_t threads,
                          cli_profile_summary *s) {
  memset(s, 0, sizeof *s);
  s->peak = *peak;
  s->threads = threads;
  double peak_gflops = s->peak_gflops = peak->gflops_per_core * threads;
  s->conv_pct_peak = s->matmul_pct_peak = -1;
  s->kernels = calloc((size_t)n + 1, sizeof *s->kernels);
  if (!s->kernels) return -1;
  s->n = n;
  double conv_w = 0, conv_f = 0, mm_w = 0, mm_f = 0;
  for (int k = 0; k < n; k++) {
    cli_kernel_stat *st = &s->kernels[k];
    st->name = pr[k].name ? pr[k].name : "?";
    st->calls = pr[k].calls;
    st->flops = pr[k].flops;
    st->ms = pr[k].calls ? (double)pr[k].total_ns / 1e6 / (double)pr[k].calls : 0;
    st->gflops = st->ms > 0 ? (double)st->flops / (st->ms * 1e6) : 0;
    st->pct_peak = st->flops > 0 && st->ms > 0 && peak_gflops > 0 ? 100.0 * st->gflops / peak_gflops : -1;
    s->total_ms += st->ms;
    if (st->pct_peak < 0) continue;
    if (name_says(st->name, "conv")) {
      conv_w += (double)st->flops * st->pct_peak, conv_f += (double)st->flops;
      s->n_conv++;
    } else if (name_says(st->name, "matmul") || name_says(st->name, "gemm")) {
      mm_w += (double)st->flops * st->pct_peak, mm_f += (double)st->flops;
      s->n_matmul++;
    }
  }
  for (int k = 0; k < n; k++) s->kernels[k].share = s->total_ms > 0 ? 100.0 * s->kernels[k].ms / s->total_ms : 0;
  if (conv_f > 0) s->conv_pct_peak = conv_w / conv_f;
  if (mm_f > 0) s->matmul_pct_peak = mm_w / mm_f;
  qsort(s->kernels, (size_t)n, sizeof *s->kernels, by_time);
  return 0;
}

static void print_average(FILE *f, const char *what, const char *words, int32_t count, double pct, double peak) {
  if (count == 0) fprintf(f, "%s kernels: none (no kernel with FLOPs is named %s)\n", what, words);
  else
    fprintf(f, "%s kernels: %d, FLOP-weighted average %.1f%% of peak (%.1f GFLOPS)\n", what, count, pct,
            pct * peak / 100);
}

void cli_profile_print(FILE *f, const cli_profile_summary *s, int top) {
  int shown = top > 0 && top < s->n ? top : s->n;
  fprintf(f, "%-40s %10s %6s %9s %7s\n", "kernel", "ms/call", "%", "GFLOPS", "%peak");
  for (int k = 0; k < shown; k++) {
    const cli_kernel_stat *st = &s->kernels[k];
    fprintf(f, "%-40.40s %10.4f %6.1f %9.2f ", st->name, st->ms, st->share, st->gflops);
    if (st->pct_peak >= 0) fprintf(f, "%7.1f\n", st->pct_peak);
    else fprintf(f, "%7s\n", "-");
  }
  if (shown < s->n) {
    double rest = 0;
    for (int k = shown; k < s->n; k++) rest += s->kernels[k].share;
    fprintf(f, "… %d more kernels (%.1f%% of the time)\n", s->n - shown, rest);
  }
  fprintf(f, "kernels: %.3f ms per run in all; peak %.1f GFLOPS (%d threads x %.1f per core, measured, %s)\n",
          s->total_ms, s->peak_gflops, s->threads, s->peak.gflops_per_core, s->peak.isa);
  print_average(f, "conv", "*conv*", s->n_conv, s->conv_pct_peak, s->peak_gflops);
  print_average(f, "matmul", "*matmul* or *gemm*", s->n_matmul, s->matmul_pct_peak, s->peak_gflops);
}

void cli_profile_free(cli_profile_summary *s) {
  free(s->kernels);
  memset(s, 0, sizeof *s);
}
