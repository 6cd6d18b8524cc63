/* lower_cmd.c — `kiln lower MODEL [--input-shape …] [--test-data DIR]`: imports a
 * model and prints the loop IR of every kernel the default schedules produce. A
 * developer's view of what code generation receives. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "lower.h"

int kiln_cmd_lower(int argc, char **argv) {
  cli_import ci = {0};
  const char *model = NULL, *dir = NULL;
  for (int i = 0; i < argc; i++) {
    int t = cli_take_input_shape(&ci, argc, argv, &i);
    if (t < 0) return 2;
    if (t) continue;
    if (!strcmp(argv[i], "--test-data") && i + 1 < argc) dir = argv[++i];
    else if (argv[i][0] != '-' && !model) model = argv[i];
    else {
      fprintf(stderr, "kiln lower: unexpected argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!model) {
    fprintf(stderr, "usage: kiln lower MODEL.onnx [--input-shape NAME:DIMS]... [--test-data DIR]\n");
    return 2;
  }
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
