/* cli.h — subcommands of the `kiln` command and the option helpers they share. */
#ifndef KILN_CLI_H
#define KILN_CLI_H
#include <stdio.h>
#include "importer.h"
#include "kiln.h"

#define KILN_VERSION "0.1.0"

int kiln_cmd_inspect(int argc, char **argv);
int kiln_cmd_interpret(int argc, char **argv);
int kiln_cmd_lower(int argc, char **argv);
int kiln_cmd_check(int argc, char **argv);
int kiln_cmd_compile(int argc, char **argv);
int kiln_cmd_run(int argc, char **argv);
int kiln_cmd_bench(int argc, char **argv);

/* Shared import options built from --input-shape flags; the evaluator is the
 * compiler's constant folder when one is linked in. */
typedef struct cli_import {
  imp_input_shape shapes[256];
  int32_t n_shapes;
  imp_known_input known[256];
  gir_evaluator eval;
  imp_options opt;
} cli_import;

/* The constant folder: the TE interpreter for small nodes, compiled code for
 * large ones (fold_jit.c). Stateless. */
gir_evaluator cli_fold_evaluator(void);
/* A kiln_ctx whose parallel_for runs serially, for in-process kernel calls. */
#include "kiln_abi.h"
const kiln_ctx *cli_serial_ctx(void);

/* Consumes "--input-shape SPEC" at argv[*i]; 1 if consumed, 0 if not, -1 on error. */
int cli_take_input_shape(cli_import *ci, int argc, char **argv, int *i);
void cli_import_finish(cli_import *ci);

/* --test-data DIR: DIR/input_N.pb become known inputs (their shapes bind the
 * graph inputs of the same name). Returns the count, -1 on error. Data lives in a. */
int cli_load_test_inputs(cli_import *ci, const char *dir, gir_arena *a);

#include "tensorfile.h"
/* Compares a computed output with a reference read from DIR/output_N.pb: floats
 * within rtol/atol (NaN positions must match), integers and bools exactly. Prints
 * one line; returns 1 if it matches, 0 if not. */
int cli_compare_ref(const gir_value *v, const void *data, const imp_tensor *ref, double rtol, double atol);
/* The reference of each output of g: DIR/output_N.pb holds ONNX output N, a
 * tensor (the next kiln output) or a sequence or optional (the kiln outputs named
 * after it, NAME or NAME.K: importer.h; none for an empty one). refs[i].name is
 * NULL where output i has none ("no reference", printed). Returns the number of
 * outputs whose structure differs (a line ending in MISMATCH printed for each). */
int cli_output_refs(const gir_graph *g, const char *dir, gir_arena *a, imp_tensor *refs);
/* The test data of each input of g (NAME.K of a sequence too) into inputs[]: 0, or
 * -1 with err set when one has none or an element's shape differs from the input's. */
int cli_bind_test_inputs(const gir_graph *g, const cli_import *ci, const void **inputs, gir_err *err);
/* Compares every output (outs[i] is output i's data) with DIR's references at the
 * tolerance its dtype needs (float16/bfloat16 looser, float8/float4 exact on the
 * decoded values). 0 when all match, 1 otherwise. */
int cli_compare_test_outputs(const gir_graph *g, const void *const *outs, const char *dir, gir_arena *a);

/* Monotonic wall clock in ms, and a qsort order for latency samples (timing.c). */
double cli_now_ms(void);
int cli_cmp_double(const void *a, const void *b);

/* The fp32 peak of one core, measured with a loop of independent FMAs in the
 * widest ISA the CPU has (peak.c; takes ~0.1 s). */
typedef struct cli_peak {
  double gflops_per_core;
  const char *isa; /* "avx512", "avx2+fma" or "scalar" */
} cli_peak;
void cli_measure_peak(cli_peak *out);

/* Per-kernel report shared by `kiln run --profile` and `kiln bench`
 * (profile_report.c). Kernels are sorted by time, longest first; pct_peak is
 * < 0 for kernels that count no FLOPs. Conv kernels are those whose name says
 * conv, matmul kernels those whose name says matmul or gemm; their *_pct_peak is
 * the FLOP-weighted average of the kernels' % of peak (< 0 when there are none). */
typedef struct cli_kernel_stat {
  const char *name;
  int64_t calls, flops;       /* flops per call */
  double ms, share, gflops, pct_peak;
} cli_kernel_stat;
typedef struct cli_profile_summary {
  cli_kernel_stat *kernels;   /* malloc'ed, n of them */
  int32_t n;
  double total_ms;            /* sum of the kernels' ms per call */
  double peak_gflops;         /* per core x threads */
  cli_peak peak;              /* per core */
  int32_t threads;
  double conv_pct_peak, matmul_pct_peak;
  int32_t n_conv, n_matmul;
} cli_profile_summary;
int cli_profile_summarize(const kiln_kernel_profile *pr, int32_t n, const cli_peak *peak, int32_t threads,
                          cli_profile_summary *s);
/* Prints the top `top` kernels (all when top <= 0), then the conv/matmul averages. */
void cli_profile_print(FILE *f, const cli_profile_summary *s, int top);
void cli_profile_free(cli_profile_summary *s);

/* Seeded random input data, the same numbers `kiln run` feeds (seeded_inputs.c):
 * call once per input, in input order, with one seed variable starting at 42. */
void cli_fill_random(kiln_dtype t, void *data, int64_t n, uint64_t *seed);
/* Element i of a buffer of dtype t, as a double. */
double cli_value_at(kiln_dtype t, const void *data, int64_t i);
#endif
