/* kiln_run.c — kiln-run, the board-side runner: opens a bundle with the runtime,
 * feeds its inputs from .npy files (or the members of one .npz), runs it, writes
 * every output as DIR/NAME.npy and prints the median time of N runs.
 *
 * It is what a Linux board needs and nothing more: the runtime (runtime/kiln.h),
 * the .npy/.npz readers of cli/npy.c and cli/npz.c (which depend on kiln.h and libc
 * only; npz.c on libarchive, which the runtime links anyway) and libc. No LLVM, no
 * compiler, no Python, so it cross-builds with the runtime for every board target
 * (CMakeLists.txt, cmake/board.cmake) and runs under qemu-user in the tests. Unlike
 * `kiln run` it invents no input data: every input must be given.
 *
 * usage: kiln-run MODEL.kiln [--input NAME=FILE.npy]... [--inputs FILE.npz]
 *                 [--output-dir DIR] [--repeat N] [--threads N] [--profile] [--quiet]
 * Exit status: 0 success, 1 a failure (one line on stderr), 2 a usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "kiln.h"
#include "npy.h"

#define MAX_INPUT_FLAGS 1024
#define MAX_NPZ_BYTES ((int64_t)16 << 30)

static const char usage[] =
    "usage: kiln-run MODEL.kiln [--input NAME=FILE.npy]... [--inputs FILE.npz] [--output-dir DIR]\n"
    "                [--repeat N] [--threads N] [--profile] [--quiet]\n"
    "  --input NAME=FILE.npy  data of input NAME (every input must be given, here or in --inputs)\n"
    "  --inputs FILE.npz      inputs as the members NAME.npy of one .npz\n"
    "  --output-dir DIR       write every output as DIR/NAME.npy ('/' in a name becomes '_')\n"
    "  --repeat N             run N times (1-1000000, default 1; one untimed warm-up run first when N > 1)\n"
    "                         and print the median time\n"
    "  --threads N            threads, the caller included (0-256; default 0 = online cores)\n"
    "  --profile              after the timed runs, 10 profiled runs: each kernel's share of the time\n"
    "  --quiet                print only the timing line\n";

typedef struct {
  const char *bundle, *npz, *outdir;
  const char *input[MAX_INPUT_FLAGS]; /* NAME=FILE.npy */
  int n_input;
  long repeat, threads;
  int profile;
  int quiet;
} options;

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "kiln-run: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (kiln-run --help)\n");
  return 2;
}

/* An integer option in [lo, hi]; 0, or 2 (usage error) after one line. */
static int parse_num(const char *opt, const char *text, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || !*text || *end || errno || v < lo || v > hi) {
    fprintf(stderr, "kiln-run: %s takes a number from %ld to %ld, not '%s' (kiln-run --help)\n", opt, lo, hi,
            text ? text : "");
    return 2;
  }
  *out = v;
  return 0;
}

static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  o->repeat = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage, stdout);
      return 1;
    }
    if (!strcmp(a, "--quiet")) {
      o->quiet = 1;
      continue;
    }
    if (!strcmp(a, "--profile")) {
      o->profile = 1;
      continue;
    }
    if (a[0] == '-' && a[1]) {
      int known = !strcmp(a, "--input") || !strcmp(a, "--inputs") || !strcmp(a, "--output-dir") ||
                  !strcmp(a, "--repeat") || !strcmp(a, "--threads");
      if (!known) return usage_error("unknown option '%s'", a);
      if (!val) return usage_error("%s needs a value", a);
      i++;
      if (!strcmp(a, "--input")) {
        if (!strchr(val, '=') || val[0] == '=') return usage_error("--input takes NAME=FILE.npy, not '%s'", val);
        if (o->n_input == MAX_INPUT_FLAGS) return usage_error("more than %s --input options", "1024");
        o->input[o->n_input++] = val;
      } else if (!strcmp(a, "--inputs")) {
        o->npz = val;
      } else if (!strcmp(a, "--output-dir")) {
        o->outdir = val;
      } else if (!strcmp(a, "--repeat")) {
        if (parse_num(a, val, 1, 1000000, &o->repeat)) return 2;
      } else if (parse_num(a, val, 0, KILN_MAX_THREADS, &o->threads)) {
        return 2;
      }
      continue;
    }
    if (o->bundle) return usage_error("more than one bundle given ('%s')", a);
    o->bundle = a;
  }
  if (!o->bundle) return usage_error("%s", "no bundle given");
  return 0;
}

/* Copies one array into input NAME; -1 after one line on stderr. */
static int set_input(kiln_model *m, const char *name, const npy_array *arr, const char *source) {
  kiln_status st = kiln_model_set_input(m, name, arr->dtype, arr->rank, arr->dims, arr->data, (size_t)arr->bytes);
  if (st != KILN_OK) {
    fprintf(stderr, "kiln-run: input '%s' from %s: %s\n", name, source, kiln_model_last_error(m));
    return -1;
  }
  return 0;
}

/* Every input from the --input files, then the .npz's members; each input exactly once. */
static int feed_inputs(kiln_model *m, const options *o) {
  int32_t n = kiln_model_input_count(m);
  char *given = calloc((size_t)n + 1, 1);
  char why[1024];
  int rc = given ? 0 : -1;
  if (!given) fprintf(stderr, "kiln-run: out of memory\n");
  for (int i = 0; rc == 0 && i < o->n_input; i++) {
    const char *eq = strchr(o->input[i], '=');
    char name[1024];
    snprintf(name, sizeof name, "%.*s", (int)(eq - o->input[i]), o->input[i]);
    int32_t k = kiln_model_input_index(m, name);
    if (k < 0) {
      fprintf(stderr, "kiln-run: --input %s: the model has no input '%s'\n", o->input[i], name);
      rc = -1;
      break;
    }
    if (given[k]) {
      fprintf(stderr, "kiln-run: input '%s' is given twice\n", name);
      rc = -1;
      break;
    }
    kiln_tensor_info info;
    kiln_model_input_info(m, k, &info);
    if (info.dtype == KILN_DTYPE_STRING) {
      fprintf(stderr, "kiln-run: input '%s' is a string tensor, which kiln-run does not feed (.npy holds numbers; "
                      "use the C API's kiln_model_set_input_strings)\n", name);
      rc = -1;
      break;
    }
    npy_array arr;
    if (npy_read(eq + 1, info.dtype, &arr, why, sizeof why) < 0) {
      fprintf(stderr, "kiln-run: %s\n", why);
      rc = -1;
      break;
    }
    rc = set_input(m, name, &arr, eq + 1);
    free(arr.data);
    given[k] = 1;
  }
  if (rc == 0 && o->npz) {
    npz_file z;
    if (npz_read(o->npz, MAX_NPZ_BYTES, &z, why, sizeof why) < 0) {
      fprintf(stderr, "kiln-run: %s\n", why);
      rc = -1;
    } else {
      for (int32_t j = 0; rc == 0 && j < z.n; j++) {
        int32_t k = kiln_model_input_index(m, z.members[j].name);
        if (k < 0) {
          fprintf(stderr, "kiln-run: %s: member '%s.npy' names no input of the model\n", o->npz, z.members[j].name);
          rc = -1;
          break;
        }
        if (given[k]) {
          fprintf(stderr, "kiln-run: input '%s' is given twice\n", z.members[j].name);
          rc = -1;
          break;
        }
        kiln_tensor_info info;
        kiln_model_input_info(m, k, &info);
        npy_array arr;
        char where[1200];
        snprintf(where, sizeof where, "%s:%s.npy", o->npz, z.members[j].name);
        if (npy_parse(z.members[j].bytes, z.members[j].size, where, info.dtype, &arr, why, sizeof why) < 0) {
          fprintf(stderr, "kiln-run: %s\n", why);
          rc = -1;
          break;
        }
        rc = set_input(m, z.members[j].name, &arr, where);
        free(arr.data);
        given[k] = 1;
      }
      npz_free(&z);
    }
  }
  for (int32_t k = 0; rc == 0 && k < n; k++)
    if (!given[k]) {
      kiln_tensor_info info;
      kiln_model_input_info(m, k, &info);
      fprintf(stderr, "kiln-run: input '%s' is not given (--input %s=FILE.npy or --inputs FILE.npz)\n", info.name,
              info.name);
      rc = -1;
    }
  free(given);
  return rc;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int write_outputs(kiln_model *m, const options *o) {
  char why[1024];
  if (mkdir(o->outdir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "kiln-run: cannot create '%s': %s\n", o->outdir, strerror(errno));
    return -1;
  }
  for (int32_t i = 0; i < kiln_model_output_count(m); i++) {
    const void *data;
    kiln_tensor_info info;
    kiln_model_output(m, i, &data, &info);
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s.npy", o->outdir, info.name);
    if (n < 0 || (size_t)n >= sizeof path) {
      fprintf(stderr, "kiln-run: output path too long for '%s'\n", info.name);
      return -1;
    }
    for (char *p = path + strlen(o->outdir) + 1; *p; p++)
      if (*p == '/') *p = '_';
    if (npy_write(path, info.dtype, info.rank, info.dims, data, why, sizeof why) < 0) {
      fprintf(stderr, "kiln-run: %s\n", why);
      return -1;
    }
  }
  return 0;
}

static int by_time(const void *a, const void *b) { /* kernels, most time first */
  const kiln_kernel_profile *x = *(const kiln_kernel_profile *const *)a, *y = *(const kiln_kernel_profile *const *)b;
  return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

/* --profile: 10 profiled runs, then the kernels by their share of the time. */
static int print_profile(kiln_model *m) {
  if (kiln_model_set_profile(m, 1) != KILN_OK) {
    fprintf(stderr, "kiln-run: %s\n", kiln_model_last_error(m));
    return 1;
  }
  kiln_model_profile_reset(m);
  for (int i = 0; i < 10; i++)
    if (kiln_model_run(m) != KILN_OK) {
      fprintf(stderr, "kiln-run: %s\n", kiln_model_last_error(m));
      return 1;
    }
  const kiln_kernel_profile *e = NULL;
  int32_t n = 0;
  kiln_model_profile(m, &e, &n);
  const kiln_kernel_profile **r = calloc((size_t)n + 1, sizeof *r);
  if (!r) return 1;
  int64_t total = 0;
  for (int32_t i = 0; i < n; i++) {
    r[i] = &e[i];
    total += e[i].total_ns;
  }
  qsort(r, (size_t)n, sizeof *r, by_time);
  printf("profile: %.3f ms per run in kernels (10 runs)\n", total / 1e7);
  for (int32_t i = 0; i < n && i < 25; i++) {
    const kiln_kernel_profile *p = r[i];
    double us = p->calls ? p->total_ns / 1e3 / (double)p->calls : 0;
    printf("  %6.1f%% %9.1f us %8.1f GFLOP/s  %s\n", total ? 100.0 * p->total_ns / total : 0, us,
           us > 0 ? p->flops / us / 1e3 : 0, p->name);
  }
  free(r);
  return 0;
}

int main(int argc, char **argv) {
  options o;
  int r = parse_args(argc, argv, &o);
  if (r) return r == 1 ? 0 : r;
  kiln_options opt;
  kiln_options_init(&opt);
  opt.threads = (int32_t)o.threads;
  kiln_model *m = NULL;
  char why[1024] = "";
  kiln_status st = kiln_model_open(o.bundle, &opt, &m, why, sizeof why);
  if (st != KILN_OK) {
    fprintf(stderr, "kiln-run: %s: %s: %s\n", o.bundle, kiln_status_str(st), why);
    return 1;
  }
  int rc = feed_inputs(m, &o) < 0;
  double *times = rc ? NULL : calloc((size_t)o.repeat, sizeof *times);
  if (!rc && !times) {
    fprintf(stderr, "kiln-run: out of memory\n");
    rc = 1;
  }
  if (!rc && o.repeat > 1 && kiln_model_run(m) != KILN_OK) { /* warm-up */
    fprintf(stderr, "kiln-run: %s\n", kiln_model_last_error(m));
    rc = 1;
  }
  for (long i = 0; !rc && i < o.repeat; i++) {
    double t0 = now_ms();
    if (kiln_model_run(m) != KILN_OK) {
      fprintf(stderr, "kiln-run: %s\n", kiln_model_last_error(m));
      rc = 1;
    }
    times[i] = now_ms() - t0;
  }
  if (!rc && !o.quiet) {
    printf("model %s, target %s (%s), %d kernels, %d threads\n", kiln_model_name(m), kiln_model_target_name(m),
           kiln_model_target_triple(m), kiln_model_kernel_count(m), kiln_model_threads(m));
    for (int32_t i = 0; i < kiln_model_output_count(m); i++) {
      kiln_tensor_info info;
      kiln_model_output_info(m, i, &info);
      printf("output %s: %s[", info.name, kiln_dtype_name(info.dtype));
      for (int d = 0; d < info.rank; d++) printf(d ? "x%lld" : "%lld", (long long)info.dims[d]);
      printf("]\n");
    }
  }
  if (!rc && o.outdir && write_outputs(m, &o) < 0) rc = 1;
  if (!rc) {
    qsort(times, (size_t)o.repeat, sizeof *times, cmp_double);
    double med = o.repeat % 2 ? times[o.repeat / 2] : (times[o.repeat / 2 - 1] + times[o.repeat / 2]) / 2;
    printf("median %.3f ms of %ld run%s (min %.3f, max %.3f)\n", med, o.repeat, o.repeat > 1 ? "s" : "", times[0],
           times[o.repeat - 1]);
  }
  if (!rc && o.profile) rc = print_profile(m);
  free(times);
  kiln_model_close(m);
  return rc;
}
