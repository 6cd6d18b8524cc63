/* cli.h — subcommands of the `kiln` command and the option helpers they share. */
#ifndef KILN_CLI_H
#define KILN_CLI_H
#include "importer.h"

#define KILN_VERSION "0.1.0"

int kiln_cmd_inspect(int argc, char **argv);
int kiln_cmd_interpret(int argc, char **argv);
int kiln_cmd_lower(int argc, char **argv);
int kiln_cmd_check(int argc, char **argv);
int kiln_cmd_compile(int argc, char **argv);
int kiln_cmd_run(int argc, char **argv);

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

/* Consumes "--input-shape SPEC" at argv[*i]; 1 if consumed, 0 if not, -1 on error. */
int cli_take_input_shape(cli_import *ci, int argc, char **argv, int *i);
void cli_import_finish(cli_import *ci);

/* --test-data DIR: DIR/input_N.pb become known inputs (their shapes bind the
 * graph inputs of the same name). Returns the count, -1 on error. Data lives in a. */
int cli_load_test_inputs(cli_import *ci, const char *dir, gir_arena *a);

/* Compares a computed output with DIR/output_N.pb: floats within rtol/atol (NaN
 * positions must match), integers and bools exactly. Prints one line; returns 1
 * if it matches, 0 if not, -1 if the reference cannot be read. */
int cli_compare_output(const gir_value *v, const void *data, const char *dir, int i, double rtol, double atol,
                       gir_arena *a);
#endif
