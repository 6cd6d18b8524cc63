/* fuzz_importer.c — libFuzzer target for the ONNX importer. Each input is taken as
 * the bytes of a model file and imported from memory (no base folder, so external
 * data is refused and nothing outside the process is touched), with a report, as
 * `kiln inspect` does. Whatever the bytes, the importer must return a graph or a
 * one-line error, never crash, trip a sanitizer or leak: the graph and the report
 * are freed on every path, and LeakSanitizer checks that nothing else was kept.
 *
 * A failed import must say why, in one line (a message without a reason, or with
 * a newline, aborts here so that the fuzzer reports it too); a successful one has
 * passed gir_verify inside the importer, and the per-node FLOP estimates `kiln
 * inspect` prints are computed too (they must not overflow). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "flops.h"
#include "importer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  imp_report rep;
  imp_report_init(&rep);
  gir_err err = {{0}};
  imp_options opt = {0};
  gir_graph *g = imp_load_buffer(data, size, NULL, &opt, &rep, &err);
  if (!g && (!err.msg[0] || !strcmp(err.msg, "import failed (no reason given: a bug in kiln)") ||
             strchr(err.msg, '\n'))) {
    fprintf(stderr, "fuzz_importer: import failed without a proper one-line message: '%s'\n", err.msg);
    abort();
  }
  if (g) { /* what `kiln inspect` computes next: parameters and FLOPs */
    uint8_t *cd = calloc((size_t)g->n_values + 1, 1);
    gir_const_derived(g, cd);
    int64_t flops = 0;
    for (int k = 0; k < g->n_nodes; k++) {
      int64_t f = gir_node_flops(g->nodes[k]);
      flops = f > INT64_MAX - flops ? INT64_MAX : flops + f;
    }
    free(cd);
  }
  gir_graph_free(g);
  imp_report_free(&rep);
  return 0;
}
