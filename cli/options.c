/* options.c — what the importing subcommands share once their options are parsed
 * (args.c): the import options with the folder as evaluator, and --test-data
 * inputs bound as known inputs. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "interp.h"
#include "tensorfile.h"

void cli_import_finish(cli_import *ci) {
  ci->opt.shapes = ci->shapes;
  ci->opt.n_shapes = ci->n_shapes;
  ci->eval = cli_fold_evaluator();
  ci->opt.eval = &ci->eval;
}

int cli_load_test_inputs(cli_import *ci, const char *dir, gir_arena *a) {
  int n = 0;
  for (; n < (int)(sizeof ci->known / sizeof ci->known[0]); n++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/input_%d.pb", dir, n);
    FILE *f = fopen(path, "rb");
    if (!f) break;
    fclose(f);
    imp_known_input t;
    gir_err err = {{0}};
    if (imp_read_value_file(path, a, &t, &err) < 0) {
      fprintf(stderr, "kiln: test input %s is not a tensor kiln supports (nor a sequence or optional of such "
                      "tensors): %s\n", path, err.msg);
      return -1;
    }
    ci->known[n] = t;
    /* A sequence or optional (a list) binds the tensor inputs it stands for by
     * name (importer.h); its length comes from here, not from --input-shape. */
    if (!t.is_list && ci->n_shapes < (int32_t)(sizeof ci->shapes / sizeof ci->shapes[0]) &&
        strlen(t.name) < sizeof ci->shapes[0].name) {
      imp_input_shape *s = &ci->shapes[ci->n_shapes++];
      strcpy(s->name, t.name);
      s->rank = t.shape.rank;
      memcpy(s->dims, t.shape.dims, sizeof s->dims);
    }
  }
  ci->opt.known = ci->known;
  ci->opt.n_known = n;
  return n;
}
