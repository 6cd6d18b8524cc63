/* lower_cmd.c — `kiln lower MODEL [--input-shape …] [--test-data DIR]`: imports a
 * model and prints the loop IR of every kernel the default schedules produce. A
 * developer's view of what code generation receives. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "lower.h"

int kiln_cmd_lower(int argc, char **argv) {
  cli_args args;
  int r = cli_parse(CLI_CMD_LOWER, argc, argv, &args);
  if (r) return r < 0 ? 2 : 0;
  cli_import ci = {0};
  if (cli_args_import(&args, &ci) < 0) return 2;
  const char *model = args.positional, *dir = args.str[CLI_OPT_TEST_DATA];
  gir_arena *a = gir_arena_new();
  if (dir && cli_load_test_inputs(&ci, dir, a) < 0) {
    gir_arena_free(a);
    return 1;
  }
  cli_import_finish(&ci);
  gir_err err = {{0}};
  gir_graph *g = imp_load_file(model, &ci.opt, NULL, &err);
  int rc = 1;
  if (g) {
    tir_builder b;
    tir_builder_init(&b, a);
    lower_program p;
    if (lower_graph(g, &b, NULL, &p, &err) == 0) {
      for (int k = 0; k < p.n_kernels; k++) tir_print_func(p.kernels[k].fn, stdout);
      rc = 0;
    }
  }
  if (rc) fprintf(stderr, "kiln lower: %s\n", err.msg);
  gir_graph_free(g);
  gir_arena_free(a);
  return rc;
}
