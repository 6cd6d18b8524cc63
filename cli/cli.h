/* cli.h — subcommands of the `kiln` command and the option helpers they share. */
#ifndef KILN_CLI_H
#define KILN_CLI_H
#include "importer.h"

#define KILN_VERSION "0.1.0"

int kiln_cmd_inspect(int argc, char **argv);

/* Shared import options built from --input-shape flags; the evaluator is the
 * compiler's constant folder when one is linked in. */
typedef struct cli_import {
  imp_input_shape shapes[64];
  int32_t n_shapes;
  imp_options opt;
} cli_import;

/* Consumes "--input-shape SPEC" at argv[*i]; 1 if consumed, 0 if not, -1 on error. */
int cli_take_input_shape(cli_import *ci, int argc, char **argv, int *i);
void cli_import_finish(cli_import *ci);

#endif
