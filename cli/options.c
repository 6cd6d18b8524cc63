/* options.c — option parsing shared by subcommands (--input-shape). */
#include <stdio.h>
#include <string.h>
#include "cli.h"

int cli_take_input_shape(cli_import *ci, int argc, char **argv, int *i) {
  if (strcmp(argv[*i], "--input-shape")) return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "kiln: --input-shape needs NAME:DIMS\n");
    return -1;
  }
  if (ci->n_shapes == (int32_t)(sizeof ci->shapes / sizeof ci->shapes[0])) {
    fprintf(stderr, "kiln: too many --input-shape options\n");
    return -1;
  }
  gir_err err = {{0}};
  if (imp_parse_input_shape(argv[*i + 1], &ci->shapes[ci->n_shapes], &err) < 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return -1;
  }
  ci->n_shapes++;
  (*i)++;
  return 1;
}

void cli_import_finish(cli_import *ci) {
  ci->opt.shapes = ci->shapes;
  ci->opt.n_shapes = ci->n_shapes;
}
