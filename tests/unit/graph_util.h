/* graph_util.h — helpers the graph-pass unit tests share (test_simplify_graph,
 * test_hfuse, test_layout): a seeded generator for random weights and inputs,
 * graph inputs, op counts, and the path of a light model from the onnx package. */
#ifndef TESTS_GRAPH_UTIL_H
#define TESTS_GRAPH_UTIL_H
#include <stdio.h>
#include <string.h>
#include "graph.h"

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

#endif
