/* args.c — the one option table of the `kiln` subcommands and its parser.
 *
 * Every option is a row below: its names, what its value is (none, a string, a
 * whole number in a range, a byte count, or a string given any number of
 * times), the line `kiln CMD --help` prints, and the subcommands that take it.
 * Parsing is the same for all of them, so they all fail the same way: an option
 * that needs a value says so, a number is range-checked and the message names
 * the option, an unknown option or one another subcommand owns is named, and
 * every such usage error is one line on stderr and exit status 2. Long options
 * take their value as the next argument or after '=' (--dump-after=link), short
 * ones as the next argument or attached (-O2, -oFILE). "--" ends the options. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "compile.h"
#include "layout.h"

#define ALL ((1u << CLI_CMD_COUNT) - 1)
#define C(x) (1u << CLI_CMD_##x)
#define IMPORTERS (C(COMPILE) | C(BENCH) | C(CHECK) | C(INSPECT) | C(INTERPRET) | C(LOWER) | C(TUNE))

static const cli_option_def table[CLI_OPT_COUNT] = {
    [CLI_OPT_HELP] = {"--help", "-h", CLI_FLAG, 0, 0, NULL, "print this help and exit", ALL},
    [CLI_OPT_OUTPUT] = {"--output", "-o", CLI_STRING, 0, 0, "FILE", "the bundle to write (with --aot: the folder)",
                        C(COMPILE)},
    [CLI_OPT_AOT] = {"--aot", NULL, CLI_FLAG, 0, 0, NULL,
                     "write a self-contained C project for a bare-metal board (model_run(), the kernels, the "
                     "weights as a const array) into the folder -o names; targets c, cortex-m4, cortex-m7, "
                     "cortex-m55",
                     C(COMPILE)},
    [CLI_OPT_FOOTPRINT] = {"--footprint", NULL, CLI_FLAG, 0, 0, NULL,
                           "compile for --target (writing nothing) and print the flash and RAM it needs: the code, "
                           "weights and arena; for the bare-metal targets measured with their C compiler, stack "
                           "included",
                           C(INSPECT)},
    [CLI_OPT_KERNELS] = {"--kernels", NULL, CLI_STRING, 0, 0, "c|llvm",
                         "for --aot on a Cortex-M target: the kernels as C from the C backend (default) or as an "
                         "LLVM object for the CPU (thumbv7em / thumbv8.1m.main, hard-float ABI)",
                         C(COMPILE) | C(INSPECT)},
    [CLI_OPT_TARGET] = {"--target", NULL, CLI_STRING, 0, 0, "NAME",
                        "host (default), x86_64, x86_64-avx2, x86_64-avx512, aarch64, aarch64-dotprod, aarch64-i8mm, "
                        "armv7, riscv64, c (portable C "
                        "compiled by the host's cc); with --aot: c, cortex-m4, cortex-m7, cortex-m55; check "
                        "runs only targets this machine can run",
                        C(COMPILE) | C(CHECK) | C(TUNE) | C(INSPECT)},
    [CLI_OPT_OPT_LEVEL] = {"--opt-level", "-O", CLI_INT, 0, 3, "N",
                           "0: no graph optimization; 1: folding and rewrites; 2: + NCHWc layout and fusion "
                           "(default); 3: + horizontal fusion",
                           C(COMPILE) | C(BENCH) | C(CHECK)},
    [CLI_OPT_INPUT_SHAPE] = {"--input-shape", NULL, CLI_REPEATED, 0, 0, "NAME:DIMS",
                             "bind input NAME's shape, e.g. data:1x3x224x224 (symbolic dims are 1 otherwise)",
                             IMPORTERS},
    [CLI_OPT_MAX_TRIPS] = {"--max-trips", NULL, CLI_INT, 1, 1000000, "N",
                           "build a Loop whose trip count or condition is computed at run time for at most N "
                           "iterations (default 64); a run that needs more fails, naming the Loop",
                           IMPORTERS},
    [CLI_OPT_WINOGRAD] = {"--winograd", NULL, CLI_STRING, 0, 0, "auto|on|off",
                          "3x3 stride-1 convs as Winograd F(4x4,3x3) or F(2x2,3x3) transforms around batched "
                          "GEMMs: auto (default) where channels and tiles make it pay, on every one (F(2x2,3x3) "
                          "with a ragged last tile where no tile size divides the output), off never",
                          C(COMPILE) | C(BENCH) | C(CHECK) | C(TUNE) | C(INSPECT)},
    [CLI_OPT_SPLIT_K] = {"--split-k", NULL, CLI_STRING, 0, 0, "auto|off|N",
                         "GPU targets: convs with few outputs and long reductions split over input-channel "
                         "slices (a grouped conv, the partial sums added): auto (default) by the rule, off "
                         "never, N (2 to 16) every conv of one group whose input channels N divides",
                         C(COMPILE) | C(CHECK)},
    [CLI_OPT_GPU_MATH] = {"--gpu-math", NULL, CLI_STRING, 0, 0, "fp32|tf32",
                          "GPU targets: fp32 (default) computes f32 as ONNX says, on CUDA cores; tf32 lets f32 "
                          "matmuls run on tensor cores with inputs rounded to TF32 (10-bit mantissas, f32 sums: "
                          "relative errors near 1e-3, as PyTorch's allow_tf32)",
                          C(COMPILE) | C(CHECK)},
    [CLI_OPT_MAX_STRING_BYTES] = {"--max-string-bytes", NULL, CLI_INT, 8, 65536, "N",
                                  "the slot of each element of a string tensor, its 4-byte length included (default "
                                  "64: strings of up to 60 bytes); longer strings are refused, naming the input",
                                  IMPORTERS},
    [CLI_OPT_DUMP_AFTER] = {"--dump-after", NULL, CLI_STRING, 0, 0, "STEP",
                            "print the IR (or what the step made) after STEP of the pipeline", C(COMPILE)},
    [CLI_OPT_MAX_ARENA] = {"--max-arena-bytes", NULL, CLI_BYTES, 1, INT64_MAX, "BYTES",
                           "refuse a model whose arena or any one tensor is larger (default 64G; suffixes K M G T)",
                           C(COMPILE) | C(BENCH) | C(CHECK)},
    [CLI_OPT_TEST_DATA] = {"--test-data", NULL, CLI_STRING, 0, 0, "DIR",
                           "input_N.pb (and output_N.pb) of an ONNX test case; the inputs' shapes bind the model's",
                           C(CHECK) | C(INTERPRET) | C(INSPECT) | C(LOWER)},
    [CLI_OPT_THREADS] = {"--threads", NULL, CLI_INT, 0, KILN_MAX_THREADS, "N",
                         "threads running the kernels, the caller included (0: one per core; check: 1 by default; "
                         "tune: the threads each candidate is measured on, 1 by default — tune on the threads the "
                         "model will run on)",
                         C(RUN) | C(BENCH) | C(CHECK) | C(TUNE)},
    [CLI_OPT_SPIN_US] = {"--spin-us", NULL, CLI_INT, 0, 10000000, "US",
                          "how long idle workers spin before sleeping (default 200; longer keeps a model run every "
                          "few ms fast after the gaps, at the price of a busy core while idle)",
                          C(RUN)},
    [CLI_OPT_REPEAT] = {"--repeat", NULL, CLI_INT, 1, 1000000, "N", "timed runs (run: 10, bench: 20)",
                        C(RUN) | C(BENCH)},
    [CLI_OPT_WARMUP] = {"--warmup", NULL, CLI_INT, 0, 1000000, "N", "untimed runs first (default 3)", C(BENCH)},
    [CLI_OPT_PROFILE_RUNS] = {"--profile-runs", NULL, CLI_INT, 0, 1000000, "N",
                              "runs with per-kernel timing, after the timed ones (default 5)", C(BENCH)},
    [CLI_OPT_PROFILE] = {"--profile", NULL, CLI_FLAG, 0, 0, NULL, "print per-kernel times against the peak",
                         C(RUN)},
    [CLI_OPT_TRACE] = {"--trace", NULL, CLI_STRING, 0, 0, "FILE.json",
                       "write a Chrome trace (the JSON ONNX Runtime's profiler writes; chrome://tracing, Perfetto): "
                       "per timed run a slice for the run and one per kernel call, with the kernel's FLOPs and "
                       "bytes; implies --profile",
                       C(RUN)},
    [CLI_OPT_INPUT] = {"--input", NULL, CLI_REPEATED, 0, 0, "NAME=FILE.npy", "feed input NAME from a .npy file",
                       C(RUN) | C(BENCH)},
    [CLI_OPT_INPUTS] = {"--inputs", NULL, CLI_STRING, 0, 0, "FILE.npz",
                        "feed the inputs named by the .npz's members (NAME.npy); --input wins", C(RUN) | C(BENCH)},
    [CLI_OPT_OUTPUT_DIR] = {"--output-dir", NULL, CLI_STRING, 0, 0, "DIR", "write every output as DIR/NAME.npy",
                            C(RUN)},
    [CLI_OPT_OUTPUTS] = {"--outputs", NULL, CLI_STRING, 0, 0, "FILE.npz", "write all outputs into one .npz",
                         C(RUN)},
    [CLI_OPT_COMPARE] = {"--compare", NULL, CLI_STRING, 0, 0, "onnxruntime",
                         "also time ONNX Runtime on the same inputs and compare the outputs", C(BENCH)},
    [CLI_OPT_ONNX] = {"--onnx", NULL, CLI_STRING, 0, 0, "MODEL.onnx", "the ONNX model of a bundle, for --compare",
                      C(BENCH)},
    [CLI_OPT_PYTHON] = {"--python", NULL, CLI_STRING, 0, 0, "PATH",
                        "the Python with onnxruntime (default $KILN_PYTHON, else python3)", C(BENCH)},
    [CLI_OPT_JSON] = {"--json", NULL, CLI_FLAG, 0, 0, NULL, "print one JSON object and nothing else on stdout",
                      C(BENCH)},
    [CLI_OPT_DOT] = {"--dot", NULL, CLI_STRING, 0, 0, "FILE", "write the graph as Graphviz DOT", C(INSPECT)},
    [CLI_OPT_SVG] = {"--svg", NULL, CLI_STRING, 0, 0, "FILE",
                     "render the graph (with --fused: its fused groups as clusters) as SVG with Graphviz's dot, "
                     "which must be on PATH (Debian: apt-get install graphviz; --dot writes DOT without it)",
                     C(INSPECT)},
    [CLI_OPT_PRINT] = {"--print", NULL, CLI_FLAG, 0, 0, NULL, "print the graph IR", C(INSPECT) | C(INTERPRET)},
    [CLI_OPT_FUSED] = {"--fused", NULL, CLI_FLAG, 0, 0, NULL, "fold constants and list the fused groups",
                       C(INSPECT)},
    [CLI_OPT_DUMP_IR] = {"--dump-ir", NULL, CLI_FLAG, 0, 0, NULL, "print the optimized LLVM IR of the kernels",
                         C(CHECK)},
    [CLI_OPT_EMULATE] = {"--emulate", NULL, CLI_FLAG, 0, 0, NULL,
                         "run the target's kernels in the loop-IR interpreter instead of on the hardware (a GPU "
                         "target's blocks, threads, barriers and shared memory emulated and checked)",
                         C(CHECK)},
    [CLI_OPT_SAVE_BUNDLE] = {"--save-bundle", NULL, CLI_STRING, 0, 0, "FILE",
                             "also write the bundle compiled with the test inputs bound to FILE (to run it elsewhere, "
                             "e.g. on a GPU machine with kiln-run)",
                             C(CHECK)},
    [CLI_OPT_PTXAS] = {"--ptxas", NULL, CLI_STRING, 0, 0, "PATH",
                       "with --emulate and a CUDA target: also assemble the PTX with this ptxas (the CUDA toolkit's) "
                       "for the target's sm",
                       C(CHECK)},
    [CLI_OPT_ATOL_SCALE] = {"--atol-scale", NULL, CLI_STRING, 0, 0, "X",
                            "float outputs: also allow X times the reference's largest magnitude (default 0; for targets "
                            "whose rounding differs from the reference's, e.g. no FMA, on long reductions)",
                            C(CHECK)},
    [CLI_OPT_TRIALS] = {"--trials", NULL, CLI_INT, 1, 100000000, "N",
                        "measurements in all, over every task, the default schedules' included (default 32 per task)",
                        C(TUNE)},
    [CLI_OPT_RECORDS] = {"--records", NULL, CLI_STRING, 0, 0, "FILE",
                         "tune: JSON-lines records, read first (a killed run resumes) and appended to; compile: apply "
                         "the best tuned schedule of each workload in FILE",
                         C(TUNE) | C(COMPILE)},
    [CLI_OPT_KNOBS] = {"--knobs", NULL, CLI_REPEATED, 0, 0, "TEMPLATE:NAME=V,...",
                       "set these knobs of every group that template schedules (conv, matmul, gpu_conv, gpu_matmul, "
                       "gpu_conv_tc, gpu_matmul_tc; "
                       "names and ranges in schedule/tuning.c), the rest as the default picks: for experiments and "
                       "sweeps; not with --records",
                       C(COMPILE) | C(CHECK)},
    [CLI_OPT_TRANSFER_FROM] = {"--transfer-from", NULL, CLI_REPEATED, 0, 0, "FILE",
                               "records of other workloads the global cost model learns from", C(TUNE)},
    [CLI_OPT_TASKS] = {"--tasks", NULL, CLI_STRING, 0, 0, "LIST",
                       "all (default), templates (conv and matmul only), conv, matmul, generic, task numbers "
                       "(0,2,5), or list (print the tasks and stop)",
                       C(TUNE)},
    [CLI_OPT_TIME_BUDGET] = {"--time-budget", NULL, CLI_INT, 1, 100000000, "SECONDS",
                             "stop after this many seconds (the records so far are kept)", C(TUNE)},
    [CLI_OPT_SEARCH] = {"--search", NULL, CLI_STRING, 0, 0, "model|random",
                        "model: simulated annealing on the cost model (default); random: uniform picks", C(TUNE)},
    [CLI_OPT_PLOT] = {"--plot", NULL, CLI_STRING, 0, 0, "FILE.svg",
                      "best-so-far GFLOPS vs trials per task (default: the records file with .svg)", C(TUNE)},
    [CLI_OPT_SEED] = {"--seed", NULL, CLI_INT, 0, INT64_MAX, "N", "seed of the search (default 1)", C(TUNE)},
    [CLI_OPT_COLD_WEIGHTS] = {"--cold-weights", NULL, CLI_FLAG, 0, 0, NULL,
                              "evict each candidate's weights from every cache before each timed call (not timed), "
                              "as a model whose weights outgrow the last-level cache reads them from memory each run "
                              "(TVM's enable_cpu_cache_flush); default: they stay cached, as in a loop over one kernel",
                              C(TUNE)},
    [CLI_OPT_MODEL_ROUNDS] = {"--model-rounds", NULL, CLI_INT, 0, 64, "N",
                              "the in-model check that ends the tune: the model with every tuned candidate and with "
                              "none, run alternately N times each with per-kernel timing; a tuned schedule is "
                              "applied only where its kernels were faster there (default 40; 0: no check)",
                              C(TUNE)},
    [CLI_OPT_MODEL_THREADS] = {"--model-threads", NULL, CLI_INT, 0, KILN_MAX_THREADS, "N",
                               "threads of the in-model check's runs (default 0: one per core, as `kiln run`)",
                               C(TUNE)},
};

static const struct {
  const char *name, *usage, *what;
  uint64_t required; /* bit per cli_opt */
} commands[CLI_CMD_COUNT] = {
    [CLI_CMD_COMPILE] = {"compile", "MODEL.onnx -o MODEL.kiln [options]", "compile an ONNX model into a bundle",
                         1u << CLI_OPT_OUTPUT},
    [CLI_CMD_RUN] = {"run", "MODEL.kiln [options]",
                     "run a bundle on given or seeded random inputs; print the outputs and the latency", 0},
    [CLI_CMD_BENCH] = {"bench", "MODEL(.onnx|.kiln) [options]",
                       "time a model (optionally against ONNX Runtime) with a per-kernel report", 0},
    [CLI_CMD_CHECK] = {"check", "MODEL.onnx --test-data DIR [options]",
                       "compile into a bundle in memory, run it with the runtime and compare with DIR/output_N.pb",
                       1u << CLI_OPT_TEST_DATA},
    [CLI_CMD_INSPECT] = {"inspect", "MODEL.onnx [options]", "import a model and report what it holds", 0},
    [CLI_CMD_INTERPRET] = {"interpret", "MODEL.onnx --test-data DIR [options]",
                           "run the reference interpreter and compare with DIR/output_N.pb", 1u << CLI_OPT_TEST_DATA},
    [CLI_CMD_LOWER] = {"lower", "MODEL.onnx [options]", "print the loop IR of every kernel", 0},
    [CLI_CMD_TUNE] = {"tune", "MODEL.onnx --records FILE [options]",
                      "search each fused group's schedule on this machine, guided by a learned cost model",
                      (uint64_t)1 << CLI_OPT_RECORDS},
};

const cli_option_def *cli_option(cli_opt o) { return &table[o]; }
const char *cli_cmd_name(cli_cmd c) { return commands[c].name; }

/* Prints text from column `indent` on, breaking lines at spaces before `width`. */
static void print_wrapped(FILE *f, const char *text, int indent, int width) {
  int col = indent;
  for (const char *p = text; *p;) {
    size_t w = strcspn(p, " ");
    if (col > indent && col + 1 + (int)w > width) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    }
    if (col > indent) fputc(' ', f), col++;
    fprintf(f, "%.*s", (int)w, p);
    col += (int)w;
    p += w;
    while (*p == ' ') p++;
  }
  fputc('\n', f);
}

void cli_print_help(cli_cmd cmd, FILE *f) {
  fprintf(f, "usage: kiln %s %s\n%s\noptions:\n", commands[cmd].name, commands[cmd].usage, commands[cmd].what);
  for (int o = 0; o < CLI_OPT_COUNT; o++) {
    const cli_option_def *d = &table[o];
    if (!(d->commands & (1u << cmd))) continue;
    char names[96];
    snprintf(names, sizeof names, "%s%s%s%s%s", d->alias ? d->alias : "", d->alias ? ", " : "    ", d->name,
                     d->value ? " " : "", d->value ? d->value : "");
    char text[512];
    snprintf(text, sizeof text, "%s%s%s", d->help, d->kind == CLI_REPEATED ? " (repeatable)" : "",
             commands[cmd].required & ((uint64_t)1 << o) ? " (required)" : "");
    if (d->kind == CLI_INT) {
      size_t n = strlen(text);
      snprintf(text + n, sizeof text - n, " [%lld-%lld]", (long long)d->min, (long long)d->max);
    }
    fprintf(f, "  %-34s ", names);
    print_wrapped(f, text, 37, 100);
  }
  if (cmd == CLI_CMD_COMPILE) {
    fprintf(f, "steps for --dump-after:");
    for (int i = 0; kiln_compile_steps[i]; i++) fprintf(f, " %s", kiln_compile_steps[i]);
    fputc('\n', f);
  }
}

static int usage_error(cli_cmd cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line on stderr that ends by pointing at --help; returns -1. */
static int usage_error(cli_cmd cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "kiln %s: ", commands[cmd].name);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (kiln %s --help lists the options)\n", commands[cmd].name);
  va_end(ap);
  return -1;
}

/* A whole number, or with a byte suffix (K, M, G, T: powers of 1024, optionally
 * followed by "iB" or "B"); 0 when the text is not one, -1 when it overflows. */
static int parse_number(const char *s, int bytes, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || isspace((unsigned char)*s) || *s == '+') return 0;
  if (errno == ERANGE) return -1;
  int shift = 0;
  if (bytes && *end) {
    const char *units = "KMGT", *u = strchr(units, end[0] >= 'a' ? end[0] - 32 : end[0]);
    if (!u) return 0;
    shift = 10 * (int)(u - units + 1);
    end++;
    if (!strcmp(end, "iB") || !strcmp(end, "B")) end += strlen(end);
  }
  if (*end) return 0;
  if (shift && (v > (INT64_MAX >> shift) || v < -(INT64_MAX >> shift))) return -1;
  *out = (int64_t)v * ((int64_t)1 << shift);
  return 1;
}

/* Stores the value of option o (named as the user spelled it). */
static int take_value(cli_cmd cmd, cli_args *a, cli_opt o, const char *spelled, const char *v) {
  const cli_option_def *d = &table[o];
  if (a->n_given == CLI_MAX_GIVEN) return usage_error(cmd, "more than %d options", CLI_MAX_GIVEN);
  a->given[a->n_given].opt = o;
  a->given[a->n_given++].value = v;
  a->set[o]++;
  a->str[o] = v;
  if (d->kind == CLI_INT || d->kind == CLI_BYTES) {
    int64_t x = 0;
    int r = parse_number(v, d->kind == CLI_BYTES, &x);
    if (r == 0) {
      fprintf(stderr, "kiln %s: %s takes %s, not '%s'\n", commands[cmd].name, spelled,
              d->kind == CLI_BYTES ? "a byte count (e.g. 68719476736 or 64G)" : "a whole number", v);
      return -1;
    }
    if (r < 0 || x < d->min || x > d->max) {
      if (d->max == INT64_MAX)
        fprintf(stderr, "kiln %s: %s must be at least %lld, not '%s'\n", commands[cmd].name, spelled,
                (long long)d->min, v);
      else
        fprintf(stderr, "kiln %s: %s must be between %lld and %lld, not '%s'\n", commands[cmd].name, spelled,
                (long long)d->min, (long long)d->max, v);
      return -1;
    }
    a->num[o] = x;
  }
  return 0;
}

/* Whether s can be an option's value: not another option (a negative number is
 * a value, which the range check then refuses where it must). */
static int value_like(const char *s) {
  if (s[0] != '-' || !s[1]) return 1;
  return s[1] >= '0' && s[1] <= '9';
}

int cli_parse(cli_cmd cmd, int argc, char **argv, cli_args *a) {
  memset(a, 0, sizeof *a);
  a->cmd = cmd;
  int only_positional = 0;
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i];
    if (only_positional || s[0] != '-' || !s[1]) {
      if (a->positional) return usage_error(cmd, "unexpected argument '%s' (one model at a time)", s);
      a->positional = s;
      continue;
    }
    if (!strcmp(s, "--")) {
      only_positional = 1;
      continue;
    }
    /* which option, and an attached value */
    int o = -1;
    const char *attached = NULL;
    char spelled[64];
    for (int k = 0; k < CLI_OPT_COUNT && o < 0; k++) {
      const cli_option_def *d = &table[k];
      size_t n = strlen(d->name);
      if (!strncmp(s, d->name, n) && (s[n] == 0 || s[n] == '=')) {
        o = k;
        attached = s[n] == '=' ? s + n + 1 : NULL;
        snprintf(spelled, sizeof spelled, "%s", d->name);
      } else if (d->alias && s[1] != '-' && s[1] == d->alias[1]) {
        o = k;
        attached = s[2] ? s + 2 : NULL;
        snprintf(spelled, sizeof spelled, "%s", d->alias);
      }
    }
    if (o < 0) {
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)strcspn(s, "="), s);
      return usage_error(cmd, "unknown option '%s'", name);
    }
    const cli_option_def *d = &table[o];
    if (!(d->commands & (1u << cmd)))
      return usage_error(cmd, "%s is not an option of kiln %s", spelled, commands[cmd].name);
    if (o == CLI_OPT_HELP) {
      if (attached) return usage_error(cmd, "%s takes no value", spelled);
      cli_print_help(cmd, stdout);
      return 1;
    }
    if (d->kind == CLI_FLAG) {
      if (attached) return usage_error(cmd, "%s takes no value", spelled);
      a->set[o]++;
      continue;
    }
    if (!attached) {
      if (i + 1 >= argc || !value_like(argv[i + 1])) {
        fprintf(stderr, "kiln %s: option %s needs a value (%s)\n", commands[cmd].name, spelled, d->value);
        return -1;
      }
      attached = argv[++i];
    }
    if (d->kind != CLI_REPEATED && a->set[o])
      return usage_error(cmd, "%s is given twice", spelled);
    if (take_value(cmd, a, (cli_opt)o, spelled, attached) < 0) return -1;
  }
  if (!a->positional) {
    fprintf(stderr, "kiln %s: no model given (usage: kiln %s %s)\n", commands[cmd].name, commands[cmd].name,
            commands[cmd].usage);
    return -1;
  }
  for (int o = 0; o < CLI_OPT_COUNT; o++)
    if ((commands[cmd].required & ((uint64_t)1 << o)) && !a->set[o]) {
      fprintf(stderr, "kiln %s: missing %s %s (usage: kiln %s %s)\n", commands[cmd].name,
              table[o].alias ? table[o].alias : table[o].name, table[o].value, commands[cmd].name,
              commands[cmd].usage);
      return -1;
    }
  return 0;
}

int cli_values(const cli_args *a, cli_opt o, const char **out, int max) {
  int n = 0;
  for (int i = 0; i < a->n_given; i++)
    if (a->given[i].opt == o && n < max) out[n++] = a->given[i].value;
  return n;
}

int cli_winograd_mode(const cli_args *a) {
  const char *v = a->str[CLI_OPT_WINOGRAD];
  if (!v || !strcmp(v, "auto")) return LAY_WINOGRAD_AUTO;
  if (!strcmp(v, "on")) return LAY_WINOGRAD_ON;
  if (!strcmp(v, "off")) return LAY_WINOGRAD_OFF;
  fprintf(stderr, "kiln %s: --winograd takes auto, on or off, not '%s'\n", commands[a->cmd].name, v);
  return -1;
}

int cli_split_k(const cli_args *a) {
  const char *v = a->str[CLI_OPT_SPLIT_K];
  if (!v || !strcmp(v, "auto")) return 0;
  if (!strcmp(v, "off")) return 1;
  char *end = NULL;
  long n = strtol(v, &end, 10);
  if (end != v && !*end && n >= 2 && n <= 16) return (int)n;
  fprintf(stderr, "kiln %s: --split-k takes auto, off or a slice count from 2 to 16, not '%s'\n", commands[a->cmd].name, v);
  return -1;
}

int cli_gpu_tf32(const cli_args *a) {
  const char *v = a->str[CLI_OPT_GPU_MATH];
  if (!v || !strcmp(v, "fp32")) return 0;
  if (!strcmp(v, "tf32")) return 1;
  fprintf(stderr, "kiln %s: --gpu-math takes fp32 or tf32, not '%s'\n", commands[a->cmd].name, v);
  return -1;
}

int cli_args_import(const cli_args *a, cli_import *ci) {
  if (a->set[CLI_OPT_MAX_TRIPS]) ci->opt.max_trips = a->num[CLI_OPT_MAX_TRIPS];
  if (a->set[CLI_OPT_MAX_STRING_BYTES]) ci->opt.max_string_bytes = a->num[CLI_OPT_MAX_STRING_BYTES];
  for (int i = 0; i < a->n_given; i++) {
    if (a->given[i].opt != CLI_OPT_INPUT_SHAPE) continue;
    if (ci->n_shapes == (int32_t)(sizeof ci->shapes / sizeof ci->shapes[0])) {
      fprintf(stderr, "kiln %s: too many --input-shape options\n", commands[a->cmd].name);
      return -1;
    }
    gir_err err = {{0}};
    if (imp_parse_input_shape(a->given[i].value, &ci->shapes[ci->n_shapes], &err) < 0) {
      fprintf(stderr, "kiln %s: %s\n", commands[a->cmd].name, err.msg);
      return -1;
    }
    ci->n_shapes++;
  }
  return 0;
}
