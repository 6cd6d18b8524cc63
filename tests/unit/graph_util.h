/* graph_util.h — helpers the graph-pass unit tests share (test_simplify_graph,
 * test_hfuse, test_layout): a seeded generator for random weights and inputs,
 * graph inputs, building nodes, op counts, and light models from the onnx
 * package (imported and folded). */
#ifndef TESTS_GRAPH_UTIL_H
#define TESTS_GRAPH_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "graph.h"
#include "importer.h"
#include "interp.h"
#include "passes.h"

typedef struct rng {
  uint64_t s;
} rng;

static inline double rnd(rng *r) { /* uniform in [-1, 1) */
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(r->s >> 11) / (double)(1ull << 52) - 1.0;
}

/* A new graph input of dtype t and shape s. */
static inline gir_value *tu_input(gir_graph *g, gir_dtype t, gir_shape s) {
  gir_value *v = gir_value_new(g, NULL, t, &s);
  gir_graph_add_input(g, v);
  return v;
}

/* A node of op over ins, outputs as ops.def says; TU_NODE(g, op, a, b…) lists them. */
static inline gir_node *tu_mk(gir_graph *g, gir_op op, gir_value *const *ins, int32_t n_in) {
  return gir_node_new(g, op, NULL, ins, n_in, gir_op_outputs(op));
}
#define TU_NODE(g, op, ...) \
  tu_mk(g, op, (gir_value *[]){__VA_ARGS__}, (int32_t)(sizeof((gir_value *[]){__VA_ARGS__}) / sizeof(gir_value *)))

/* Infers n and returns its first output; a test graph that does not infer is
 * broken, and nothing after it would mean anything: abort. */
static inline gir_value *tu_done(gir_graph *g, gir_node *n) {
  gir_err e = {{0}};
  if (!CHECKF(gir_node_infer(g, n, &e) == 0, "%s: %s", gir_op_name(n->op), e.msg)) {
    fflush(stdout);
    abort();
  }
  return n->out[0];
}

static inline int tu_count_op(const gir_graph *g, gir_op op) {
  int c = 0;
  for (int k = 0; k < g->n_nodes; k++) c += g->nodes[k]->op == op;
  return c;
}

/* The path of the onnx package's light model `name` (scripts/model_path.sh) in
 * buf; 0 when it cannot be found. */
static inline int tu_light_model(const char *name, char *buf, size_t n) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "scripts/model_path.sh %s 2>/dev/null", name);
  FILE *p = popen(cmd, "r");
  buf[0] = 0;
  if (p) {
    if (!fgets(buf, (int)n, p)) buf[0] = 0;
    pclose(p);
  }
  buf[strcspn(buf, "\n")] = 0;
  return buf[0] != 0;
}

/* The light model `name` imported with *ev as its evaluator and constant-folded,
 * or NULL after a skip (not installed) or a failed check (import). */
static inline gir_graph *tu_light_folded(const char *name, const gir_evaluator *ev) {
  char path[4096];
  if (!tu_light_model(name, path, sizeof path)) {
    CHECK_SKIP("%s not found (scripts/model_path.sh: run setup.sh)", name);
    return NULL;
  }
  imp_options opt = {.eval = ev};
  gir_err e = {{0}};
  gir_graph *g = imp_load_file(path, &opt, NULL, &e);
  if (!CHECKF(g != NULL, "import: %s", e.msg)) return NULL;
  int32_t folded = 0;
  gir_fold_constants(g, ev, 0, &folded, &e);
  return g;
}

#endif
