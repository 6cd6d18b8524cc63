/* check.c — `kiln check MODEL --test-data DIR`: the conformance path, which is
 * the user's path. The model is compiled with the test inputs bound (as
 * `--input-shape` binds dimensions; inputs that decide a shape or a type are
 * read as constants) by kiln_compile — the same steps as `kiln compile`, plan,
 * link and pack included — into a bundle in memory; the runtime opens it
 * (kiln_model_open_memory), gets every input the bundle has by name, runs, and
 * each output as the runtime gives it is compared with DIR/output_N.pb (rtol
 * 1e-3, atol 1e-5 unless the dtype needs looser; integers, bools and
 * float8/float4 values exactly; strings byte for byte; NaN positions must match). Sequence and
 * optional inputs and outputs are compared element by element (importer.h names
 * the tensors they become; an empty sequence output compares as length 0). One
 * thread unless --threads says otherwise; --target runs code for another named
 * target this machine can run (x86_64, x86_64-avx2…). Exit 0 when every output
 * matches. `make conformance` and tests/py/test_ops.py run it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "compile.h"
#include "c_backend.h"
#include "cuda_backend.h"
#include "llvm_backend.h"

/* Sets every input of the bundle from the test data (NAME.K of a sequence too). */
static int set_inputs(kiln_model *m, const cli_import *ci, gir_err *err) {
  for (int32_t i = 0; i < kiln_model_input_count(m); i++) {
    kiln_tensor_info info;
    kiln_model_input_info(m, i, &info);
    const imp_known_input *k = imp_known_find(&ci->opt, info.name);
    if (!k || k->is_list) return gir_errf(err, "no test data for input '%s'", info.name);
    if (k->dtype == GIR_STRING) { /* imp_string elements (importer.h) */
      int64_t n = gir_shape_numel(&k->shape, NULL);
      const imp_string *s = k->data;
      const char **ptrs = calloc((size_t)n + 1, sizeof *ptrs);
      size_t *lens = calloc((size_t)n + 1, sizeof *lens);
      kiln_status st = KILN_ERR_NOMEM;
      if (ptrs && lens) {
        for (int64_t e = 0; e < n; e++) ptrs[e] = (const char *)s[e].bytes, lens[e] = (size_t)s[e].len;
        st = kiln_model_set_input_strings(m, info.name, k->shape.rank, k->shape.dims, ptrs, lens);
      }
      free(ptrs);
      free(lens);
      if (st != KILN_OK) return gir_errf(err, "the test data does not fit: %s", kiln_model_last_error(m));
      continue;
    }
    kiln_dtype dt;
    if (kiln_dtype_from_name(gir_dtype_name(k->dtype), &dt) != KILN_OK)
      return gir_errf(err, "input '%s': the runtime has no dtype %s", info.name, gir_dtype_name(k->dtype));
    int64_t bytes = gir_shape_numel(&k->shape, NULL) * (int64_t)gir_dtype_size(k->dtype);
    if (kiln_model_set_input(m, info.name, dt, k->shape.rank, k->shape.dims, k->data, (size_t)bytes) != KILN_OK)
      return gir_errf(err, "the test data does not fit: %s", kiln_model_last_error(m));
  }
  return 0;
}

int kiln_cmd_check(int argc, char **argv) {
  cli_args args;
  int r = cli_parse(CLI_CMD_CHECK, argc, argv, &args);
  if (r) return r < 0 ? 2 : 0;
  cli_import ci = {0};
  if (cli_args_import(&args, &ci) < 0) return 2;
  kiln_compile_options o = {.opt_level = 2, .threads_hint = 2, .model_path = args.positional,
                            .target = args.str[CLI_OPT_TARGET]};
  if (args.set[CLI_OPT_OPT_LEVEL]) o.opt_level = (int)args.num[CLI_OPT_OPT_LEVEL];
  if (args.set[CLI_OPT_MAX_ARENA]) o.max_arena_bytes = args.num[CLI_OPT_MAX_ARENA];
  if (args.set[CLI_OPT_DUMP_IR]) o.dump_after = "codegen";
  if ((o.winograd = cli_winograd_mode(&args)) < 0 || (o.split_k = cli_split_k(&args)) < 0) return 2;
  if ((o.gpu_tf32 = cli_gpu_tf32(&args)) < 0) return 2;
  const char *dir = args.str[CLI_OPT_TEST_DATA];
  double atol_scale = 0;
  if (args.str[CLI_OPT_ATOL_SCALE]) {
    char *end = NULL;
    atol_scale = strtod(args.str[CLI_OPT_ATOL_SCALE], &end);
    if (!end || *end || !(atol_scale >= 0 && atol_scale <= 1)) {
      fprintf(stderr, "kiln check: --atol-scale takes a number in [0, 1], not '%s'\n", args.str[CLI_OPT_ATOL_SCALE]);
      return 2;
    }
  }
  int emulate = args.set[CLI_OPT_EMULATE];
  if (o.target && !emulate && !tgt_cuda_is_target(o.target)) { /* the code runs here: refuse targets this machine
                                                                  cannot run before compiling (a GPU: the runtime says) */
    char why[512];
    if (tgt_c_is_bare_metal(o.target)) snprintf(why, sizeof why, "a bare-metal target; kiln check runs code here");
    if (tgt_c_is_bare_metal(o.target) || (!tgt_c_is_target(o.target) && !tgt_llvm_target_runs_here(o.target, why, sizeof why))) {
      fprintf(stderr, "kiln check: --target %s: %s\n", o.target, why);
      return 1;
    }
  }
  const char *specs[64];
  int n_specs = cli_values(&args, CLI_OPT_KNOBS, specs, 64);
  gir_err kerr = {{0}};
  cli_knobs *knobs = n_specs > 0 ? cli_knobs_parse(specs, n_specs, &kerr) : NULL; /* --knobs: as compile's */
  if (n_specs > 0 && !knobs) {
    fprintf(stderr, "kiln check: %s\n", kerr.msg);
    return 2;
  }
  if (knobs) o.tuning = cli_knobs_hook(knobs);
  gir_arena *a = gir_arena_new();
  if (cli_load_test_inputs(&ci, dir, a) < 0) {
    gir_arena_free(a);
    free(knobs);
    return 1;
  }
  cli_import_finish(&ci);
  o.import = &ci.opt;
  gir_err err = {{0}};
  int rc = 1;
  kiln_model *m = NULL;
  kiln_compile_result res = {0};
  const char *save = args.str[CLI_OPT_SAVE_BUNDLE];
  if (save) { /* the bundle itself, for a run elsewhere (a GPU machine) */
    kiln_compile_options so = o;
    so.output_path = save;
    if (kiln_compile(&so, &res, &err) < 0) goto out;
    free(res.bundle);
    res = (kiln_compile_result){0};
  }
  if (emulate) {
    rc = cli_emulate_check(&o, &ci, dir, atol_scale, args.str[CLI_OPT_PTXAS], a, &err);
    goto out;
  }
  if (kiln_compile(&o, &res, &err) < 0) goto out;
  kiln_options ko;
  kiln_options_init(&ko);
  ko.threads = args.set[CLI_OPT_THREADS] ? (int32_t)args.num[CLI_OPT_THREADS] : 1;
  char why[1024] = "";
  kiln_status st = kiln_model_open_memory(res.bundle, res.bundle_bytes, &ko, &m, why, sizeof why);
  free(res.bundle);
  res.bundle = NULL;
  if (st != KILN_OK) {
    gir_errf(&err, "the runtime refused the bundle: %s: %s", kiln_status_str(st), why);
    goto out;
  }
  if (set_inputs(m, &ci, &err) < 0) goto out;
  if (kiln_model_run(m) != KILN_OK) {
    gir_errf(&err, "%s", kiln_model_last_error(m));
    goto out;
  }
  printf("%d kernels\n", res.kernels);
  int n = kiln_model_output_count(m);
  cli_output *outs = gir_arena_calloc(a, (size_t)n + 1, sizeof *outs);
  if (!outs) {
    gir_errf(&err, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++) {
    kiln_tensor_info info;
    const void *data;
    kiln_model_output(m, i, &data, &info);
    outs[i] = (cli_output){info.name, gir_dtype_from_name(kiln_dtype_name(info.dtype)),
                           gir_shape_make(info.rank, info.dims), data, kiln_model_string_bytes(m, 1, i)};
  }
  rc = cli_compare_test_outputs(outs, n, dir, atol_scale, a);
out:
  if (err.msg[0]) fprintf(stderr, "kiln check: %s\n", err.msg);
  kiln_model_close(m);
  gir_arena_free(a);
  free(knobs);
  return rc;
}
