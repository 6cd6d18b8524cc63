/* interpret.c — `kiln interpret MODEL --test-data DIR`: imports the model with the
 * test inputs bound, runs it through the reference interpreter (the compute
 * definitions, evaluated element by element) and compares every output with
 * DIR/output_N.pb (rtol 1e-3, atol 1e-5; float16 1e-2 / 1e-3). Exit 0 when all
 * outputs match. A developer tool for checking converters and definitions before
 * any code is generated. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "interp.h"

int kiln_cmd_interpret(int argc, char **argv) {
  cli_args args;
  int r = cli_parse(CLI_CMD_INTERPRET, argc, argv, &args);
  if (r) return r < 0 ? 2 : 0;
  cli_import ci = {0};
  if (cli_args_import(&args, &ci) < 0) return 2;
  const char *model = args.positional, *dir = args.str[CLI_OPT_TEST_DATA];
  int print_ir = args.set[CLI_OPT_PRINT] > 0;
  gir_arena *a = gir_arena_new();
  if (cli_load_test_inputs(&ci, dir, a) < 0) {
    gir_arena_free(a);
    return 1;
  }
  cli_import_finish(&ci);
  gir_err err = {{0}};
  gir_graph *g = imp_load_file(model, &ci.opt, NULL, &err);
  int rc = 1;
  if (!g) {
    fprintf(stderr, "kiln interpret: %s\n", err.msg);
    gir_arena_free(a);
    return 1;
  }
  if (print_ir) gir_print(g, stdout);
  const void *inputs[256];
  int ok = g->n_inputs <= 256 && g->n_outputs <= 256;
  if (!ok) fprintf(stderr, "kiln interpret: more than 256 inputs or outputs\n");
  if (ok && cli_bind_test_inputs(g, &ci, inputs, &err) < 0) {
    fprintf(stderr, "kiln interpret: %s\n", err.msg);
    ok = 0;
  }
  void *outputs[256];
  if (ok && lower_interpret(g, inputs, outputs, a, &err) == 0) {
    cli_output *outs = cli_graph_outputs(g, outputs, a);
    rc = outs ? cli_compare_test_outputs(outs, g->n_outputs, dir, 0, a) : 1;
  } else if (ok) {
    fprintf(stderr, "kiln interpret: %s\n", err.msg);
  }
  gir_graph_free(g);
  gir_arena_free(a);
  return rc;
}
