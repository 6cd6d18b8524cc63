/* print.c — the text form of the graph IR, one line per node:
 *   %conv_3:f32[1x64x56x56] = conv(%x, %w) {strides=[1,1] pads=[1,1,1,1] group=1}
 * Function-valued attributes (fn of unary/binary/reduce) print by name. */
#include <string.h>
#include "graph.h"

static void print_value_ref(const gir_value *v, FILE *f) {
  if (!v) {
    fputs("_", f);
    return;
  }
  fprintf(f, "%s%s", v->name[0] == '%' ? "" : "%", v->name);
}

static void print_type(const gir_value *v, FILE *f) {
  char b[160];
  fprintf(f, "%s[%s]", gir_dtype_name(v->dtype), gir_shape_str(&v->shape, b, sizeof b));
}

static void print_attr(const gir_node *n, const gir_attr *a, FILE *f) {
  fprintf(f, "%s=", a->name);
  if (!strcmp(a->name, "fn") && a->kind == GIR_ATTR_INT) {
    if (n->op == GIR_OP_unary) fputs(gir_unary_name((gir_unary_fn)a->i), f);
    else if (n->op == GIR_OP_binary) fputs(gir_binary_name((gir_binary_fn)a->i), f);
    else if (n->op == GIR_OP_reduce) fputs(gir_reduce_name((gir_reduce_fn)a->i), f);
    else fprintf(f, "%lld", (long long)a->i);
    return;
  }
  if (!strcmp(a->name, "to") && a->kind == GIR_ATTR_INT) {
    fputs(gir_dtype_name((gir_dtype)a->i), f);
    return;
  }
  switch (a->kind) {
  case GIR_ATTR_INT: fprintf(f, "%lld", (long long)a->i); break;
  case GIR_ATTR_FLOAT: fprintf(f, "%g", a->f); break;
  case GIR_ATTR_STRING: fprintf(f, "\"%s\"", a->s); break;
  case GIR_ATTR_INTS:
    fputc('[', f);
    for (int i = 0; i < a->n; i++) fprintf(f, i ? ",%lld" : "%lld", (long long)a->ints[i]);
    fputc(']', f);
    break;
  case GIR_ATTR_FLOATS:
    fputc('[', f);
    for (int i = 0; i < a->n; i++) fprintf(f, i ? ",%g" : "%g", a->floats[i]);
    fputc(']', f);
    break;
  default: fputs("?", f);
  }
}

void gir_print(const gir_graph *g, FILE *f) {
  fprintf(f, "graph %s (%d nodes, %d values)\n", g->name, g->n_nodes, g->n_values);
  for (int i = 0; i < g->n_inputs; i++) {
    fputs("  input ", f);
    print_value_ref(g->inputs[i], f);
    fputc(':', f);
    print_type(g->inputs[i], f);
    fputc('\n', f);
  }
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    fputs("  ", f);
    for (int j = 0; j < n->n_out; j++) {
      if (j) fputs(", ", f);
      print_value_ref(n->out[j], f);
      fputc(':', f);
      print_type(n->out[j], f);
    }
    fprintf(f, " = %s(", gir_op_name(n->op));
    for (int j = 0; j < n->n_in; j++) {
      if (j) fputs(", ", f);
      print_value_ref(n->in[j], f);
      if (n->in[j] && n->in[j]->data) fputs("=const", f);
    }
    fputc(')', f);
    if (n->n_attrs) {
      fputs(" {", f);
      for (int j = 0; j < n->n_attrs; j++) {
        if (j) fputc(' ', f);
        print_attr(n, &n->attrs[j], f);
      }
      fputc('}', f);
    }
    for (const gir_guard *d = n->guard; d; d = d->parent) { /* an If branch: " when %c == 1" */
      fputs(d == n->guard ? " when " : " and ", f);
      print_value_ref(d->cond, f);
      fprintf(f, " == %d", d->when);
    }
    fputc('\n', f);
  }
  for (int i = 0; i < g->n_outputs; i++) {
    fputs("  output ", f);
    print_value_ref(g->outputs[i], f);
    fputc(':', f);
    print_type(g->outputs[i], f);
    fputc('\n', f);
  }
}
