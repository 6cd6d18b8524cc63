/* dot.c — Graphviz DOT output: one box per node (op and output shape), graph
 * inputs/outputs as ellipses, constants omitted (they would drown the picture),
 * and optional clusters, which `kiln inspect --fused --dot` uses to draw the
 * fused groups. */
#include "graph.h"

static void dot_escape(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if (*s == '\n') { fputs("\\n", f); continue; }
    fputc(*s, f);
  }
}

static void dot_node(const gir_node *n, FILE *f, const char *indent) {
  char b[160];
  fprintf(f, "%sn%d [shape=box label=\"", indent, n->id);
  dot_escape(f, gir_op_name(n->op));
  if (n->op == GIR_OP_unary) fprintf(f, " %s", gir_unary_name((gir_unary_fn)gir_attr_int(n, "fn", 0)));
  if (n->op == GIR_OP_binary) fprintf(f, " %s", gir_binary_name((gir_binary_fn)gir_attr_int(n, "fn", 0)));
  if (n->op == GIR_OP_reduce) fprintf(f, " %s", gir_reduce_name((gir_reduce_fn)gir_attr_int(n, "fn", 0)));
  fprintf(f, "\\n%s\"];\n", n->n_out ? gir_shape_str(&n->out[0]->shape, b, sizeof b) : "");
}

void gir_write_dot(const gir_graph *g, FILE *f, const int32_t *cluster_of, const char *const *cluster_label) {
  fputs("digraph kiln {\n  rankdir=TB;\n  node [fontname=\"Helvetica\" fontsize=10];\n", f);
  for (int i = 0; i < g->n_inputs; i++) {
    fprintf(f, "  v%d [shape=ellipse label=\"", g->inputs[i]->id);
    dot_escape(f, g->inputs[i]->name);
    fputs("\"];\n", f);
  }
  int32_t max_cluster = -1;
  for (int k = 0; cluster_of && k < g->n_nodes; k++)
    if (cluster_of[k] > max_cluster) max_cluster = cluster_of[k];
  for (int32_t c = 0; c <= max_cluster; c++) {
    fprintf(f, "  subgraph cluster_%d {\n    style=rounded; color=gray40; label=\"", c);
    dot_escape(f, cluster_label && cluster_label[c] ? cluster_label[c] : "");
    fputs("\";\n", f);
    for (int k = 0; k < g->n_nodes; k++)
      if (cluster_of[k] == c) dot_node(g->nodes[k], f, "    ");
    fputs("  }\n", f);
  }
  for (int k = 0; k < g->n_nodes; k++)
    if (!cluster_of || cluster_of[k] < 0) dot_node(g->nodes[k], f, "  ");
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    for (int j = 0; j < n->n_in; j++) {
      const gir_value *v = n->in[j];
      if (!v || v->data) continue;
      if (v->producer)
        fprintf(f, "  n%d -> n%d;\n", v->producer->id, n->id);
      else if (v->is_input)
        fprintf(f, "  v%d -> n%d;\n", v->id, n->id);
    }
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const gir_value *v = g->outputs[i];
    fprintf(f, "  o%d [shape=ellipse label=\"", i);
    dot_escape(f, v->name);
    fputs("\"];\n", f);
    if (v->producer) fprintf(f, "  n%d -> o%d;\n", v->producer->id, i);
    else if (v->is_input) fprintf(f, "  v%d -> o%d;\n", v->id, i);
  }
  fputs("}\n", f);
}
