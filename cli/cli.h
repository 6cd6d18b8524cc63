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
int kiln_cmd_tune(int argc, char **argv);
/* kiln compile --records FILE (tune.c): the best tuned schedule per workload, as a
 * lowering hook; the report line says how many groups it matched and what it skipped. */
typedef struct cli_records cli_records;
cli_records *cli_records_open(const char *path, const char *target, gir_err *err);
const struct lower_tuning *cli_records_hook(cli_records *r);
void cli_records_report(const cli_records *r, const char *path, FILE *f);
void cli_records_free(cli_records *r);

/* The in-model check that ends `kiln tune` (tune_check.c): the model compiled with
 * every workload's tuned candidate and with none, run alternately (rounds each) on
 * `threads` threads with the per-kernel profile on; each workload's kernels' medians
 * appended to the records as one check (`kiln compile --records` applies a point only
 * where it was faster there), then the bundle `kiln compile --records` makes timed
 * against the default. 0, or -1 with err. */
struct kiln_compile_options;
struct tun_tasks;
struct tun_target;
int cli_tune_model_check(const struct kiln_compile_options *base, const struct tun_tasks *ts,
                         const struct tun_target *t, const char *records, int32_t threads, int32_t rounds,
                         gir_err *err);

/* kiln compile --knobs TEMPLATE:NAME=V,... (knobs.c): those knobs of every group of
 * that template, as a lowering hook (free() the result). */
typedef struct cli_knobs cli_knobs;
cli_knobs *cli_knobs_parse(const char *const *specs, int n_specs, gir_err *err);
const struct lower_tuning *cli_knobs_hook(cli_knobs *k);

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

void cli_import_finish(cli_import *ci);

/* ---- the option table (args.c): one parser for every subcommand ---- */
typedef enum cli_cmd {
  CLI_CMD_COMPILE, CLI_CMD_RUN, CLI_CMD_BENCH, CLI_CMD_CHECK, CLI_CMD_INSPECT, CLI_CMD_INTERPRET, CLI_CMD_LOWER,
  CLI_CMD_TUNE, CLI_CMD_COUNT
} cli_cmd;

typedef enum cli_opt {
  CLI_OPT_HELP, CLI_OPT_OUTPUT, CLI_OPT_TARGET, CLI_OPT_OPT_LEVEL, CLI_OPT_INPUT_SHAPE, CLI_OPT_DUMP_AFTER,
  CLI_OPT_MAX_ARENA, CLI_OPT_TEST_DATA, CLI_OPT_THREADS, CLI_OPT_REPEAT, CLI_OPT_WARMUP, CLI_OPT_PROFILE_RUNS,
  CLI_OPT_PROFILE, CLI_OPT_INPUT, CLI_OPT_INPUTS, CLI_OPT_OUTPUT_DIR, CLI_OPT_OUTPUTS, CLI_OPT_COMPARE,
  CLI_OPT_ONNX, CLI_OPT_PYTHON, CLI_OPT_JSON, CLI_OPT_DOT, CLI_OPT_PRINT, CLI_OPT_FUSED, CLI_OPT_DUMP_IR, CLI_OPT_ATOL_SCALE,
  CLI_OPT_AOT, CLI_OPT_TRIALS, CLI_OPT_RECORDS, CLI_OPT_TRANSFER_FROM, CLI_OPT_TASKS, CLI_OPT_TIME_BUDGET,
  CLI_OPT_SEARCH, CLI_OPT_PLOT, CLI_OPT_SEED, CLI_OPT_COLD_WEIGHTS, CLI_OPT_FOOTPRINT, CLI_OPT_KERNELS, CLI_OPT_SPIN_US, CLI_OPT_TRACE,
  CLI_OPT_SVG, CLI_OPT_EMULATE, CLI_OPT_PTXAS, CLI_OPT_SAVE_BUNDLE, CLI_OPT_MAX_TRIPS, CLI_OPT_WINOGRAD, CLI_OPT_SPLIT_K,
  CLI_OPT_MAX_STRING_BYTES, CLI_OPT_KNOBS, CLI_OPT_GPU_MATH, CLI_OPT_MODEL_ROUNDS, CLI_OPT_MODEL_THREADS,
  CLI_OPT_COUNT
} cli_opt;

/* What an option's value is: none, a string, a whole number in [min, max], a
 * byte count (a number with an optional K/M/G/T suffix) in [min, max], or a
 * string that may be given several times. */
typedef enum cli_kind { CLI_FLAG, CLI_STRING, CLI_INT, CLI_BYTES, CLI_REPEATED } cli_kind;

typedef struct cli_option_def {
  const char *name, *alias; /* "--output" and "-o" (alias may be NULL) */
  cli_kind kind;
  int64_t min, max;         /* CLI_INT, CLI_BYTES */
  const char *value;        /* the value's name in messages and help: "FILE", "N" */
  const char *help;
  unsigned commands;        /* bit (1 << cli_cmd) per subcommand that takes it */
} cli_option_def;

#define CLI_MAX_GIVEN 1024
typedef struct cli_args {
  cli_cmd cmd;
  const char *positional;         /* the model or bundle */
  int set[CLI_OPT_COUNT];         /* times given */
  const char *str[CLI_OPT_COUNT]; /* the (last) value */
  int64_t num[CLI_OPT_COUNT];     /* CLI_INT, CLI_BYTES: the number */
  struct {
    cli_opt opt;
    const char *value;
  } given[CLI_MAX_GIVEN];         /* every value, in order (repeated options) */
  int n_given;
} cli_args;

/* Parses argv (after the subcommand): 0 when parsed, 1 when --help was printed
 * (exit 0), -1 after one line on stderr for a usage error (exit 2). Checks the
 * one positional argument and the command's required options. */
int cli_parse(cli_cmd cmd, int argc, char **argv, cli_args *a);
void cli_print_help(cli_cmd cmd, FILE *f);
const cli_option_def *cli_option(cli_opt o);
const char *cli_cmd_name(cli_cmd c);
/* The values of a repeated option, in order: their count (at most max stored). */
int cli_values(const cli_args *a, cli_opt o, const char **out, int max);
/* --input-shape values into ci: 0, or -1 after a usage message. */
int cli_args_import(const cli_args *a, cli_import *ci);
/* --winograd auto|on|off as a lay_winograd_mode (auto when not given); -1 after a
 * message for another value. */
int cli_winograd_mode(const cli_args *a);
/* --split-k auto|off|N as lay_split_k's `force` (0 auto when not given, 1 off, N
 * slices); -1 after a message for anything else. */
int cli_split_k(const cli_args *a);
/* --gpu-math fp32|tf32: 1 for tf32 (tensor cores), 0 for fp32 (the default); -1 after a
 * message on another value. */
int cli_gpu_tf32(const cli_args *a);

/* --test-data DIR: DIR/input_N.pb become known inputs (their shapes bind the
 * graph inputs of the same name). Returns the count, -1 on error. Data lives in a. */
int cli_load_test_inputs(cli_import *ci, const char *dir, gir_arena *a);

#include "tensorfile.h"
/* An output kiln computed, as the comparison sees it: from the runtime's buffers
 * (`kiln check`) or the reference interpreter's (`kiln interpret`). */
typedef struct cli_output {
  const char *name;
  gir_dtype dtype;
  gir_shape shape;
  const void *data;
  int64_t string_bytes; /* dtype string: data is slots of this many bytes (a 4-byte length, the bytes) */
} cli_output;
/* g's outputs with data[i] as output i's bytes (data may be NULL: no data), in a. */
cli_output *cli_graph_outputs(const gir_graph *g, void *const *data, gir_arena *a);
/* Compares a computed output with a reference read from DIR/output_N.pb: floats
 * within rtol/atol (NaN positions must match), integers and bools exactly. Prints
 * one line; returns 1 if it matches, 0 if not. */
int cli_compare_ref(const cli_output *v, const imp_tensor *ref, double rtol, double atol);
/* The reference of each of the n outputs: DIR/output_N.pb holds ONNX output N, a
 * tensor (the next kiln output) or a sequence or optional (the kiln outputs named
 * after it, NAME or NAME.K: importer.h; none for an empty one). refs[i].name is
 * NULL where output i has none ("no reference", printed). Returns the number of
 * outputs whose structure differs (a line ending in MISMATCH printed for each). */
int cli_output_refs(const cli_output *outs, int n, const char *dir, gir_arena *a, imp_tensor *refs);
/* The test data of each input of g (NAME.K of a sequence too) into inputs[]: 0, or
 * -1 with err set when one has none or an element's shape differs from the input's. */
int cli_bind_test_inputs(const gir_graph *g, const cli_import *ci, const void **inputs, gir_err *err);
/* Compares every output with DIR's references at the tolerance its dtype needs
 * (float16/bfloat16 looser, float8/float4 exact on the decoded values). 0 when
 * all match, 1 otherwise. */
int cli_compare_test_outputs(const cli_output *outs, int n, const char *dir, double atol_scale, gir_arena *a);
/* kiln check --emulate (emulate.c): the plan's kernels run in the loop-IR interpreter
 * (a GPU target's blocks and threads emulated), outputs compared with DIR's; 0 when
 * all match, 1 otherwise (message in err when it did not get that far). */
struct kiln_compile_options;
int cli_emulate_check(const struct kiln_compile_options *o, const cli_import *ci, const char *dir,
                      double atol_scale, const char *ptxas, gir_arena *a, gir_err *err);

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

/* `kiln run --trace FILE.json` (trace.c): a Chrome trace (the JSON array of "X"
 * events that ONNX Runtime's profiler writes; chrome://tracing and Perfetto open it)
 * with, per profiled run, one "Session" slice for the run and one "Node" slice per
 * kernel call, from kiln_model_profile_calls. Open before the runs, add each run
 * after it, close at the end: 0, or -1 after one line on stderr. */
typedef struct cli_trace {
  FILE *f;
  const char *path;
  int64_t origin_ns; /* the first run's start: ts 0 */
  long pid;
  int64_t events;
} cli_trace;
int cli_trace_open(cli_trace *t, const char *path);
/* Monotonic clock in ns, the clock kiln_kernel_call's times are on. */
int64_t cli_trace_now_ns(void);
/* The run `run` (0-based) of m, which began at start_ns and ended at end_ns. */
int cli_trace_add_run(cli_trace *t, kiln_model *m, int run, int64_t start_ns, int64_t end_ns);
/* Ends the JSON array and closes the file (also after a failure: the file stays
 * valid JSON). NULL-safe when the trace was never opened. */
int cli_trace_close(cli_trace *t);

/* `kiln inspect --svg FILE` (svg.c): the DOT text rendered by Graphviz's `dot -Tsvg`
 * (found on PATH, fed through a socket, its stdout the file). 0, or -1 after one line
 * on stderr: without dot, it says to install Debian's graphviz or use --dot. */
int cli_render_svg(const char *dot_text, size_t len, const char *path);
/* The measuring half of `kiln bench` (bench_measure.c), shared with the Python
 * package (python/: kiln.bench). Latency statistics of n samples in ms (sorts ms). */
typedef struct cli_latency {
  double median, p90, min, mean;
} cli_latency;
cli_latency cli_latency_of(double *ms, int n);
/* Another runtime timed batch by batch between kiln's batches (bench.c's ONNX
 * Runtime worker): run makes k timed runs and writes their ms; -1 when it failed,
 * having reported why itself. */
typedef struct cli_bench_rival {
  int (*run)(void *ctx, int k, double *ms);
  void *ctx;
} cli_bench_rival;
typedef struct cli_bench_measurement {
  int32_t threads;
  cli_latency kiln, rival;     /* rival: zeros without one */
  int64_t flops;               /* per run, as the compiler counted them */
  cli_profile_summary profile; /* each kernel's median over the profiled runs (none with 0 of them) */
} cli_bench_measurement;
/* On m, whose inputs are set: warmup runs (the rival's too), then repeat timed runs
 * in batches of CLI_BENCH_BATCH, alternating with the rival's batches when there is
 * one (a pause before each batch lets the other's idle workers sleep), then
 * profile_runs runs with per-kernel timing on. 0, or -1 with the message in why
 * ("" when the rival failed: it reported itself). Free with cli_bench_measurement_free. */
enum { CLI_BENCH_BATCH = 5 };
int cli_bench_measure(kiln_model *m, int repeat, int warmup, int profile_runs, const cli_peak *peak,
                      const cli_bench_rival *rival, cli_bench_measurement *out, char *why, size_t whylen);
void cli_bench_measurement_free(cli_bench_measurement *r);
/* One output compared with the rival's (bench.c). */
typedef struct cli_bench_output {
  const char *name;
  double max_abs_diff; /* NAN: could not compare */
  int within;          /* within rtol/atol */
  char note[200];      /* why it could not be compared */
} cli_bench_output;
/* Everything `kiln bench --json` reports. */
typedef struct cli_bench_report {
  const char *model;
  int is_onnx;                      /* compiled here: opt_level, compile_s, generic_groups are known */
  int opt_level, generic_groups;
  double compile_s;
  int repeat, warmup, profile_runs;
  const cli_bench_measurement *measured;
  const char *ort_version;          /* NULL: no comparison (every ort_ field null) */
  const cli_bench_output *outputs;  /* with a comparison: n_outputs of them */
  int n_outputs;
} cli_bench_report;
/* The report as one line of JSON, malloc'ed (free()); NULL when out of memory. */
char *cli_bench_json(const cli_bench_report *r);

/* Seeded random input data, the same numbers `kiln run` feeds (seeded_inputs.c):
 * call once per input, in input order, with one seed variable starting at 42.
 * The _range form draws integers uniformly from [lo, hi) (one draw per element,
 * as the plain form). */
void cli_fill_random(kiln_dtype t, void *data, int64_t n, uint64_t *seed);
void cli_fill_random_range(kiln_dtype t, void *data, int64_t n, int64_t lo, int64_t hi, uint64_t *seed);

/* The inputs of `kiln run` and `kiln bench` (inputs.c): --input NAME=FILE.npy,
 * else a member of --inputs FILE.npz, else seeded random data (integers in the
 * range the bundle records; none for an input it marks as needing given data).
 * Sets them all on m and keeps each one's data in ins[i] (n = the input count);
 * logs where each came from to log (NULL: quiet). 0, or -1 after one line on
 * stderr. Free with cli_inputs_free. */
#include "npy.h"
typedef struct cli_input {
  const char *name;   /* the model's */
  npy_array arr;      /* the data set */
  const char *source; /* the file, or NULL: invented */
  int ranged;         /* invented in [lo, hi) */
  int64_t lo, hi;
} cli_input;
int cli_set_inputs(kiln_model *m, const cli_args *a, cli_input *ins, FILE *log);
/* What cli_set_inputs invents for input i (seeded random data, integers in the range
 * the bundle records; none for an input that needs given data), into in (the data
 * malloc'ed); how says how to give real data, for the messages ("--input x=FILE.npy").
 * Call in input order with one seed variable starting at 42. 0, or -1 with why. */
int cli_invent_input(kiln_model *m, int32_t i, cli_input *in, uint64_t *seed, const char *how, char *why,
                     size_t whylen);
void cli_inputs_free(cli_input *ins, int32_t n);
/* Element i of a buffer of dtype t, as a double. */
double cli_value_at(kiln_dtype t, const void *data, int64_t i);
/* One note for the graph-input dims a model leaves open (symbolic, empty, -1) that
 * no --input-shape bound: "WHO: note: N unbound input dims default to 1: x[0] 'batch';
 * bind them with --input-shape NAME:DIMS" (inputs.c). Nothing when n is 0. */
void cli_note_unbound(FILE *f, const char *who, int32_t n, const char *list);

#endif
