/* bench.c — `kiln bench MODEL`: how fast is the compiled model, and how does that
 * compare with ONNX Runtime on the same machine, threads and inputs?
 *
 * An .onnx model is compiled in-process (kiln_compile) into a bundle in a temporary
 * folder; a .kiln bundle is used as it is. Inputs are those of `kiln run` (inputs.c:
 * --input NAME=FILE.npy, --inputs FILE.npz, else seeded random data, integers in the
 * range the bundle records). After a warm-up, the model runs --repeat times and we report the
 * median, p90 and min latency of one run (kiln_model_run, wall clock).
 *
 * With --compare onnxruntime a Python worker (embedded below; --python PATH, else
 * $KILN_PYTHON, else python3) loads the same .onnx with intra_op_num_threads = our
 * thread count, inter_op_num_threads = 1, ORT_SEQUENTIAL, ORT_ENABLE_ALL and its
 * workers' spinning off (session.intra_op.allow_spinning = 0: spinning ONNX Runtime
 * workers measurably took the cores from kiln's runs in between — kiln's SqueezeNet
 * median went from 5 to 8-11 ms even with 300 ms pauses — at the cost of ONNX
 * Runtime's own small-model latency, ~3.1 → ~4.4 ms on SqueezeNet here), reads the
 * same inputs from .npy files and times sess.run_with_iobinding the same way (inputs
 * bound once, like ours: the plain sess.run would add ~5 us of copies and conversions
 * per call, which is not ONNX Runtime's speed but Python's). We talk to it over
 * its stdin/stdout, one line per command and per answer. The two take turns in
 * batches of CLI_BENCH_BATCH runs, so a change in machine load (other processes, frequency)
 * hits both alike instead of whichever ran second; a 5 ms pause before each batch
 * lets kiln's own workers (which spin 0.2 ms) go to sleep. Afterwards both outputs are
 * compared (max abs diff per output; beyond rtol 1e-3 / atol 1e-4 we warn but do not
 * fail: a benchmark is not a conformance test).
 *
 * Per-kernel times come from separate runs with the runtime's profiling on (so the
 * timed runs carry no profiling overhead): each kernel's median over those runs,
 * reported against the measured fp32 peak
 * (peak.c, profile_report.c). --json prints exactly one JSON object on stdout and
 * nothing else there. The runs, the statistics and the JSON object are
 * bench_measure.c's, which the Python package's kiln.bench shares. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"
#include "compile.h"
#include "kiln.h"
#include "npy.h"

extern char **environ;

enum { MAX_FILES = 300, TOP_KERNELS = 20 };
static const double CMP_RTOL = 1e-3, CMP_ATOL = 1e-4;

/* The onnxruntime worker. argv: MODEL THREADS. Answers "ready VERSION" or "error MSG"
 * first, then one answer per command:
 *   input PATH<TAB>NAME  → ok             (feed NAME from the .npy at PATH)
 *   run K                → times T1 … TK  (ms of K sess.run calls)
 *   outputs DIR          → output PATH<TAB>NAME per output, then end
 *   quit
 * Any failure answers "error MSG" (one line). */
static const char *const ort_worker_py =
    "import os, sys, time\n"
    "def reply(line):\n"
    "    sys.stdout.write(line.replace('\\n', ' ') + '\\n')\n"
    "    sys.stdout.flush()\n"
    "def main():\n"
    "    model, threads = sys.argv[1], int(sys.argv[2])\n"
    "    try:\n"
    "        import numpy as np\n"
    "        import onnxruntime as ort\n"
    "    except Exception as e:\n"
    "        reply('error onnxruntime cannot be imported by %s (%s); pass --python PATH or set KILN_PYTHON'\n"
    "              % (sys.executable, e))\n"
    "        return 1\n"
    "    try:\n"
    "        so = ort.SessionOptions()\n"
    "        so.intra_op_num_threads = threads\n"
    "        so.inter_op_num_threads = 1\n"
    "        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL\n"
    "        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL\n"
    "        so.log_severity_level = 3  # errors only: its warnings are not ours to print\n"
    "        # its idle workers would otherwise spin and take the cores kiln's alternating runs need\n"
    "        so.add_session_config_entry('session.intra_op.allow_spinning', '0')\n"
    "        sess = ort.InferenceSession(model, so, providers=['CPUExecutionProvider'])\n"
    "    except Exception as e:\n"
    "        reply('error onnxruntime cannot load %s: %s' % (model, e))\n"
    "        return 1\n"
    "    reply('ready ' + ort.__version__)\n"
    "    feed, binding = {}, None\n"
    "    for line in sys.stdin:\n"
    "        cmd, _, arg = line.rstrip('\\n').partition(' ')\n"
    "        try:\n"
    "            if cmd == 'input':\n"
    "                path, name = arg.split('\\t', 1)\n"
    "                names = [i.name for i in sess.get_inputs()]\n"
    "                if name not in names:\n"
    "                    reply('error the ONNX model %s has no input named %r (its inputs: %s)'\n"
    "                          % (model, name, ', '.join(names)))\n"
    "                    continue\n"
    "                feed[name] = np.ascontiguousarray(np.load(path))\n"
    "                binding = None\n"
    "                reply('ok')\n"
    "                continue\n"
    "            if binding is None:  # inputs bound once, outputs left in ORT's memory: no copies per run\n"
    "                binding = sess.io_binding()\n"
    "                for name, value in feed.items():\n"
    "                    binding.bind_cpu_input(name, value)\n"
    "                for info in sess.get_outputs():\n"
    "                    binding.bind_output(info.name, 'cpu')\n"
    "            if cmd == 'run':\n"
    "                times = []\n"
    "                for _ in range(int(arg)):\n"
    "                    t0 = time.perf_counter()\n"
    "                    sess.run_with_iobinding(binding)\n"
    "                    times.append((time.perf_counter() - t0) * 1e3)\n"
    "                reply('times ' + ' '.join('%.6f' % t for t in times))\n"
    "            elif cmd == 'outputs':\n"
    "                sess.run_with_iobinding(binding)\n"
    "                values = binding.copy_outputs_to_cpu()\n"
    "                for i, (info, value) in enumerate(zip(sess.get_outputs(), values)):\n"
    "                    path = os.path.join(arg, 'ort_out_%d.npy' % i)\n"
    "                    np.save(path, np.ascontiguousarray(value))\n"
    "                    reply('output %s\\t%s' % (path, info.name))\n"
    "                reply('end')\n"
    "            elif cmd == 'quit':\n"
    "                return 0\n"
    "            else:\n"
    "                reply('error unknown command ' + cmd)\n"
    "        except Exception as e:\n"
    "            reply('error %s' % e)\n"
    "    return 0\n"
    "sys.exit(main())\n";

typedef struct bench_opts {
  const char *model, *onnx, *python, *compare;
  int threads, repeat, warmup, profile_runs, opt_level, json;
  int64_t max_arena_bytes;
  int winograd; /* --winograd, a lay_winograd_mode */
  cli_import ci;
  cli_args args; /* --input, --inputs */
} bench_opts;

/* Everything one bench owns; released by bench_free whatever happened. */
typedef struct bench {
  char dir[4096];             /* temporary folder, "" when none */
  char *files[MAX_FILES];     /* created in dir, removed at the end */
  int n_files;
  kiln_model *m;
  pid_t worker;               /* 0 when none */
  FILE *to, *from;            /* the worker's stdin and stdout */
  char *line;                 /* last line read from the worker */
  size_t line_cap;
  struct sigaction old_pipe;
  int pipe_saved;
} bench;

/* A path in the bench's folder, remembered for removal. */
static const char *bench_file(bench *b, const char *fmt, int i) {
  if (b->n_files == MAX_FILES) return NULL;
  char name[128], path[4400];
  snprintf(name, sizeof name, fmt, i);
  snprintf(path, sizeof path, "%s/%s", b->dir, name);
  if (!(b->files[b->n_files] = strdup(path))) return NULL;
  return b->files[b->n_files++];
}

/* ---------------------------------------------------------------- the worker */

static int worker_fail(bench *b, const char *what) {
  fprintf(stderr, "kiln bench: onnxruntime worker: %s\n", what);
  return -1;
}

/* Reads one answer; "error MSG" and end of file are failures (reported here). */
static int worker_read(bench *b) {
  ssize_t n = getline(&b->line, &b->line_cap, b->from);
  if (n <= 0) {
    int status = 0;
    if (b->worker > 0 && waitpid(b->worker, &status, 0) == b->worker) b->worker = 0;
    char why[160];
    if (WIFEXITED(status)) snprintf(why, sizeof why, "exited (status %d) without an answer", WEXITSTATUS(status));
    else snprintf(why, sizeof why, "killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return worker_fail(b, why);
  }
  while (n > 0 && (b->line[n - 1] == '\n' || b->line[n - 1] == '\r')) b->line[--n] = 0;
  if (!strncmp(b->line, "error ", 6)) {
    fprintf(stderr, "kiln bench: %s\n", b->line + 6);
    return -1;
  }
  return 0;
}

static int worker_send(bench *b, const char *line) {
  fputs(line, b->to);
  if (fflush(b->to) != 0) return worker_read(b) < 0 ? -1 : worker_fail(b, "stopped reading commands");
  return 0;
}

static int worker_start(bench *b, const char *python, const char *onnx, int threads) {
  int in[2], out[2];
  if (pipe(in) < 0) return worker_fail(b, strerror(errno));
  if (pipe(out) < 0) {
    close(in[0]), close(in[1]);
    return worker_fail(b, strerror(errno));
  }
  char nthreads[16];
  snprintf(nthreads, sizeof nthreads, "%d", threads);
  char *argv[] = {(char *)python, "-u", "-c", (char *)ort_worker_py, (char *)onnx, nthreads, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  int fds[] = {in[0], in[1], out[0], out[1]};
  for (int i = 0; i < 4; i++)
    if (fds[i] > 2) posix_spawn_file_actions_addclose(&fa, fds[i]);
  int rc = posix_spawnp(&b->worker, python, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]), close(out[1]);
  if (rc != 0) {
    b->worker = 0;
    close(in[1]), close(out[0]);
    fprintf(stderr, "kiln bench: cannot run '%s': %s (pass --python PATH or set KILN_PYTHON)\n", python, strerror(rc));
    return -1;
  }
  /* a worker that dies must give us EPIPE, not kill us with SIGPIPE */
  struct sigaction ign = {0};
  ign.sa_handler = SIG_IGN;
  b->pipe_saved = sigaction(SIGPIPE, &ign, &b->old_pipe) == 0;
  if (!(b->to = fdopen(in[1], "w"))) close(in[1]);
  if (!(b->from = fdopen(out[0], "r"))) close(out[0]);
  if (!b->to || !b->from) return worker_fail(b, strerror(errno));
  if (worker_read(b) < 0) return -1;
  if (strncmp(b->line, "ready", 5)) return worker_fail(b, "unexpected first answer");
  return 0;
}

/* K timed runs of the worker, appended to ms. */
static int worker_run(bench *b, int k, double *ms) {
  char cmd[32];
  snprintf(cmd, sizeof cmd, "run %d\n", k);
  if (worker_send(b, cmd) < 0 || worker_read(b) < 0) return -1;
  if (strncmp(b->line, "times", 5)) return worker_fail(b, "unexpected answer to run");
  char *p = b->line + 5, *end;
  for (int i = 0; i < k; i++) {
    ms[i] = strtod(p, &end);
    if (end == p) return worker_fail(b, "fewer times than runs");
    p = end;
  }
  return 0;
}

/* The worker as bench_measure.c's rival: K timed runs of it. */
static int rival_run(void *ctx, int k, double *ms) { return worker_run(ctx, k, ms); }

static void worker_stop(bench *b) {
  if (b->to) {
    fputs("quit\n", b->to);
    fclose(b->to);
    b->to = NULL;
  }
  if (b->from) {
    fclose(b->from);
    b->from = NULL;
  }
  if (b->worker > 0) waitpid(b->worker, NULL, 0);
  b->worker = 0;
  if (b->pipe_saved) sigaction(SIGPIPE, &b->old_pipe, NULL);
  b->pipe_saved = 0;
}

static void bench_free(bench *b) {
  worker_stop(b);
  kiln_model_close(b->m);
  for (int i = b->n_files - 1; i >= 0; i--) {
    remove(b->files[i]);
    free(b->files[i]);
  }
  if (b->dir[0]) rmdir(b->dir);
  free(b->line);
}

/* ---------------------------------------------------------------- outputs */

static int is_float(kiln_dtype t) {
  return t == KILN_DTYPE_FLOAT32 || t == KILN_DTYPE_FLOAT64 || t == KILN_DTYPE_FLOAT16 || t == KILN_DTYPE_BFLOAT16;
}

static void compare_values(const kiln_tensor_info *info, const void *got, const npy_array *ref, cli_bench_output *c) {
  c->max_abs_diff = 0;
  c->within = 1;
  if (ref->dtype != info->dtype || ref->rank != info->rank ||
      memcmp(ref->dims, info->dims, sizeof *ref->dims * (size_t)info->rank)) {
    snprintf(c->note, sizeof c->note, "onnxruntime gives %s of rank %d, kiln %s of rank %d (or other dims)",
             kiln_dtype_name(ref->dtype), ref->rank, kiln_dtype_name(info->dtype), info->rank);
    c->max_abs_diff = NAN;
    c->within = 0;
    return;
  }
  for (int64_t i = 0; i < info->elements; i++) {
    double x = cli_value_at(info->dtype, got, i), y = cli_value_at(ref->dtype, ref->data, i), d;
    if (isnan(x) || isnan(y)) d = isnan(x) && isnan(y) ? 0 : INFINITY;
    else if (x == y) d = 0; /* also equal infinities */
    else d = fabs(x - y);
    if (d > c->max_abs_diff) c->max_abs_diff = d;
    if (is_float(info->dtype) ? !(d <= CMP_ATOL + CMP_RTOL * fabs(y)) : d != 0) c->within = 0;
  }
}

/* Asks the worker for its outputs and compares each with kiln's (matched by name). */
static int compare_outputs(bench *b, cli_bench_output *cmp, int n_out) {
  for (int i = 0; i < n_out; i++) {
    kiln_tensor_info info;
    kiln_model_output_info(b->m, i, &info);
    cmp[i] = (cli_bench_output){.name = info.name, .max_abs_diff = NAN};
    snprintf(cmp[i].note, sizeof cmp[i].note, "onnxruntime has no output of that name");
  }
  for (int i = 0; i < n_out; i++)
    if (!bench_file(b, "ort_out_%d.npy", i)) return worker_fail(b, "too many outputs");
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "outputs %s\n", b->dir);
  if (worker_send(b, cmd) < 0) return -1;
  for (;;) {
    if (worker_read(b) < 0) return -1;
    if (!strcmp(b->line, "end")) return 0;
    char *tab = strchr(b->line, '\t');
    if (strncmp(b->line, "output ", 7) || !tab) return worker_fail(b, "unexpected answer to outputs");
    *tab = 0;
    const char *path = b->line + 7, *name = tab + 1;
    int k = kiln_model_output_index(b->m, name);
    if (k < 0) continue;
    const void *data;
    kiln_tensor_info info;
    kiln_model_output(b->m, k, &data, &info);
    npy_array ref;
    char why[512];
    if (npy_read(path, info.dtype, &ref, why, sizeof why) < 0) {
      snprintf(cmp[k].note, sizeof cmp[k].note, "%.190s", why);
      continue;
    }
    cmp[k].note[0] = 0;
    compare_values(&info, data, &ref, &cmp[k]);
    free(ref.data);
  }
}

/* ---------------------------------------------------------------- report */

static void print_human(const bench_opts *o, int threads, const cli_latency *ks, const cli_latency *os,
                        const char *ort_version, const cli_bench_output *cmp, int n_out, const cli_profile_summary *sum,
                        int64_t flops) {
  printf("%d threads, %d timed runs each after %d warm-up runs%s\n", threads, o->repeat, o->warmup,
         os ? ", kiln and onnxruntime alternating in batches of 5" : "");
  printf("kiln         median %10.4f ms   p90 %10.4f ms   min %10.4f ms   (%.2f GFLOPS at the median)\n", ks->median,
         ks->p90, ks->min, ks->median > 0 ? (double)flops / (ks->median * 1e6) : 0);
  if (os) {
    printf("onnxruntime  median %10.4f ms   p90 %10.4f ms   min %10.4f ms   (onnxruntime %s)\n", os->median, os->p90,
           os->min, ort_version);
    printf("ratio kiln / onnxruntime (medians): %.3f%s\n", os->median > 0 ? ks->median / os->median : 0,
           os->median > 0 && ks->median < os->median ? " (kiln faster)" : "");
    for (int i = 0; i < n_out; i++) {
      if (isnan(cmp[i].max_abs_diff)) printf("output %s: not compared: %s\n", cmp[i].name, cmp[i].note);
      else printf("output %s: max abs diff %.3g vs onnxruntime%s\n", cmp[i].name, cmp[i].max_abs_diff,
                  cmp[i].within ? "" : " (beyond rtol 1e-3 / atol 1e-4)");
    }
  }
  if (sum->n == 0) return; /* --profile-runs 0 */
  printf("per kernel (median of %d profiled runs):\n", (int)sum->kernels[0].calls);
  cli_profile_print(stdout, sum, TOP_KERNELS);
}

/* ---------------------------------------------------------------- the command */

/* A bundle is a tar archive ("ustar" at offset 257); anything else is taken for ONNX. */
static int is_bundle(const char *path) {
  char hdr[262];
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(hdr, 1, sizeof hdr, f);
  fclose(f);
  return n == sizeof hdr && !memcmp(hdr + 257, "ustar", 5);
}

static int bench_main(bench_opts *o, bench *b) {
  int is_onnx = !is_bundle(o->model);
  const char *onnx = o->onnx ? o->onnx : is_onnx ? o->model : NULL;
  if (o->compare && strcmp(o->compare, "onnxruntime")) {
    fprintf(stderr, "kiln bench: --compare knows only 'onnxruntime', not '%s'\n", o->compare);
    return 2;
  }
  if (o->compare && !onnx) {
    fprintf(stderr, "kiln bench: %s is a bundle, which holds no ONNX model: give the model with --onnx PATH\n",
            o->model);
    return 2;
  }
  if (!is_onnx && o->ci.n_shapes) {
    fprintf(stderr, "kiln bench: --input-shape applies to .onnx models; %s is a bundle\n", o->model);
    return 2;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(b->dir, sizeof b->dir, "%s/kiln-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(b->dir)) {
    fprintf(stderr, "kiln bench: cannot create a temporary folder %s: %s\n", b->dir, strerror(errno));
    b->dir[0] = 0;
    return 1;
  }

  /* compile */
  const char *bundle = o->model;
  double compile_s = 0;
  int generic = 0;
  if (is_onnx) {
    bundle = bench_file(b, "model.kiln", 0);
    cli_import_finish(&o->ci);
    kiln_compile_options co = {.opt_level = o->opt_level, .model_path = o->model, .output_path = bundle,
                               .import = &o->ci.opt, .threads_hint = 2, .max_arena_bytes = o->max_arena_bytes,
                               .winograd = o->winograd};
    kiln_compile_result cr;
    gir_err err = {{0}};
    double t0 = cli_now_ms();
    if (kiln_compile(&co, &cr, &err) < 0) {
      fprintf(stderr, "kiln bench: %s\n", err.msg);
      return 1;
    }
    compile_s = (cli_now_ms() - t0) / 1e3;
    cli_note_unbound(stderr, "kiln bench", cr.n_unbound, cr.unbound);
    generic = cr.generic_conv + cr.generic_matmul + cr.generic_pool;
    if (!o->json)
      printf("compiled %s at -O%d in %.2f s: %d kernels (%d on the generic schedule), %.3f GFLOPs per run\n",
             o->model, o->opt_level, compile_s, cr.kernels, generic, cr.flops / 1e9);
  }

  /* open, feed */
  kiln_options ko;
  kiln_options_init(&ko);
  ko.threads = o->threads;
  char why[1024] = "";
  kiln_status st = kiln_model_open(bundle, &ko, &b->m, why, sizeof why);
  if (st != KILN_OK) {
    fprintf(stderr, "kiln bench: %s: %s\n", kiln_status_str(st), why);
    return 1;
  }
  int threads = kiln_model_threads(b->m);
  const char *in_paths[256] = {0};
  int n_in = kiln_model_input_count(b->m);
  if (n_in > 256) {
    fprintf(stderr, "kiln bench: the model has %d inputs; at most 256 are supported\n", n_in);
    return 1;
  }
  cli_input ins[256];
  if (cli_set_inputs(b->m, &o->args, ins, o->json ? NULL : stdout) < 0) return 1;
  int rc = 0;
  for (int i = 0; i < n_in && rc == 0 && o->compare; i++) { /* onnxruntime gets the same data, from .npy files */
    const npy_array *x = &ins[i].arr;
    if (strpbrk(ins[i].name, "\t\n\r")) {
      fprintf(stderr, "kiln bench: input name '%s' has a tab or line break, which the worker protocol cannot carry\n",
              ins[i].name);
      rc = -1;
    } else if (!(in_paths[i] = bench_file(b, "input_%d.npy", i)) ||
               npy_write(in_paths[i], x->dtype, x->rank, x->dims, x->data, why, sizeof why) < 0) {
      fprintf(stderr, "kiln bench: %s\n", in_paths[i] ? why : "too many files");
      rc = -1;
    }
  }
  cli_inputs_free(ins, n_in);
  if (rc < 0) return 1;

  /* the peak, measured while nothing else of ours runs */
  cli_peak peak;
  cli_measure_peak(&peak);

  /* the worker */
  char ort_version[64] = "";
  if (o->compare) {
    if (worker_start(b, o->python, onnx, threads) < 0) return 1;
    snprintf(ort_version, sizeof ort_version, "%s", b->line[5] ? b->line + 6 : "?");
    for (int i = 0; i < n_in; i++) {
      kiln_tensor_info info;
      kiln_model_input_info(b->m, i, &info);
      char *cmd = malloc(strlen(in_paths[i]) + strlen(info.name) + 16);
      if (!cmd) return 1;
      sprintf(cmd, "input %s\t%s\n", in_paths[i], info.name);
      int rc = worker_send(b, cmd);
      free(cmd);
      if (rc < 0 || worker_read(b) < 0) return 1;
    }
  }

  /* warm-up, then alternating batches, then the profiled runs (bench_measure.c) */
  cli_bench_rival rival = {rival_run, b};
  cli_bench_measurement me;
  if (cli_bench_measure(b->m, o->repeat, o->warmup, o->profile_runs, &peak, o->compare ? &rival : NULL, &me, why,
                        sizeof why) < 0) {
    if (why[0]) fprintf(stderr, "kiln bench: %s\n", why); /* else the worker said what failed */
    cli_bench_measurement_free(&me);
    return 1;
  }

  /* outputs against onnxruntime's */
  int n_out = kiln_model_output_count(b->m);
  cli_bench_output *cmp = calloc((size_t)n_out + 1, sizeof *cmp);
  if (!cmp) rc = 1;
  if (rc == 0 && o->compare && compare_outputs(b, cmp, n_out) < 0) rc = 1;
  for (int i = 0; rc == 0 && o->compare && i < n_out; i++) {
    if (isnan(cmp[i].max_abs_diff))
      fprintf(stderr, "kiln bench: warning: output %s not compared with onnxruntime: %s\n", cmp[i].name, cmp[i].note);
    else if (!cmp[i].within)
      fprintf(stderr, "kiln bench: warning: output %s differs from onnxruntime beyond rtol 1e-3 / atol 1e-4 "
                      "(max abs diff %.3g)\n", cmp[i].name, cmp[i].max_abs_diff);
  }
  if (rc == 0 && o->json) {
    cli_bench_report rep = {.model = o->model, .is_onnx = is_onnx, .opt_level = o->opt_level,
                            .generic_groups = generic, .compile_s = compile_s, .repeat = o->repeat,
                            .warmup = o->warmup, .profile_runs = o->profile_runs, .measured = &me,
                            .ort_version = o->compare ? ort_version : NULL, .outputs = cmp, .n_outputs = n_out};
    char *text = cli_bench_json(&rep);
    if (text) puts(text);
    else fprintf(stderr, "kiln bench: out of memory\n"), rc = 1;
    free(text);
  } else if (rc == 0) {
    print_human(o, threads, &me.kiln, o->compare ? &me.rival : NULL, ort_version, cmp, n_out, &me.profile, me.flops);
  }
  free(cmp);
  cli_bench_measurement_free(&me);
  return rc;
}

int kiln_cmd_bench(int argc, char **argv) {
  bench_opts *o = calloc(1, sizeof *o); /* cli_args is large: not on the stack */
  if (!o) {
    fprintf(stderr, "kiln bench: out of memory\n");
    return 1;
  }
  cli_args *a = &o->args;
  int r = cli_parse(CLI_CMD_BENCH, argc, argv, a);
  if (r || cli_args_import(a, &o->ci) < 0) {
    free(o);
    return r > 0 ? 0 : 2;
  }
  o->model = a->positional;
  o->repeat = a->set[CLI_OPT_REPEAT] ? (int)a->num[CLI_OPT_REPEAT] : 20;
  o->warmup = a->set[CLI_OPT_WARMUP] ? (int)a->num[CLI_OPT_WARMUP] : 3;
  o->profile_runs = a->set[CLI_OPT_PROFILE_RUNS] ? (int)a->num[CLI_OPT_PROFILE_RUNS] : 5;
  o->opt_level = a->set[CLI_OPT_OPT_LEVEL] ? (int)a->num[CLI_OPT_OPT_LEVEL] : 2;
  o->threads = (int)a->num[CLI_OPT_THREADS];
  o->max_arena_bytes = a->num[CLI_OPT_MAX_ARENA];
  if ((o->winograd = cli_winograd_mode(a)) < 0) {
    free(o);
    return 2;
  }
  o->json = a->set[CLI_OPT_JSON] > 0;
  o->compare = a->str[CLI_OPT_COMPARE];
  o->onnx = a->str[CLI_OPT_ONNX];
  const char *env = getenv("KILN_PYTHON");
  o->python = a->str[CLI_OPT_PYTHON] ? a->str[CLI_OPT_PYTHON] : env && *env ? env : "python3";
  bench b;
  memset(&b, 0, sizeof b);
  int rc = bench_main(o, &b);
  bench_free(&b);
  free(o);
  return rc;
}
