/* group.c — questions about the groups of a partition: what a group's kernel
 * reads and writes (the lowering builds one kernel from exactly these), a short
 * description for reports, and fus_verify_partition, which re-checks the
 * invariants fusion.h promises from the graph alone, without trusting how the
 * partition was built (tests and debug builds run it after every partition). */
#include <stdio.h>
#include <string.h>
#include "fusion.h"

static int32_t copy_values(gir_value *const *vs, int32_t n, gir_value **out, int32_t max) {
  for (int32_t i = 0; i < n && i < max; i++) out[i] = vs[i];
  return n;
}

int32_t fus_group_outputs(const gir_graph *g, const fus_partition *p, int32_t group, gir_value **out, int32_t max) {
  (void)g;
  if (group < 0 || group >= p->n_groups) return 0;
  return copy_values(p->groups[group].outputs, p->groups[group].n_outputs, out, max);
}

int32_t fus_group_inputs(const gir_graph *g, const fus_partition *p, int32_t group, gir_value **out, int32_t max) {
  (void)g;
  if (group < 0 || group >= p->n_groups) return 0;
  return copy_values(p->groups[group].inputs, p->groups[group].n_inputs, out, max);
}

const char *fus_node_op_name(const gir_node *n) {
  switch (n->op) {
  case GIR_OP_unary: return gir_unary_name((gir_unary_fn)gir_attr_int(n, "fn", 0));
  case GIR_OP_binary: return gir_binary_name((gir_binary_fn)gir_attr_int(n, "fn", 0));
  case GIR_OP_reduce: return gir_reduce_name((gir_reduce_fn)gir_attr_int(n, "fn", 0));
  default: return gir_op_name(n->op);
  }
}

const char *fus_describe_group(const gir_graph *g, const fus_partition *p, int32_t group, gir_arena *a) {
  if (group < 0 || group >= p->n_groups) return "";
  const fus_group *gr = &p->groups[group];
  size_t len = 1;
  for (int32_t i = 0; i < gr->n_nodes; i++) len += strlen(fus_node_op_name(g->nodes[gr->nodes[i]])) + 1;
  char *s = gir_arena_alloc(a, len);
  if (!s) return "";
  size_t at = 0;
  for (int32_t i = 0; i < gr->n_nodes; i++) {
    const char *name = fus_node_op_name(g->nodes[gr->nodes[i]]);
    if (i) s[at++] = '+';
    memcpy(s + at, name, strlen(name));
    at += strlen(name);
  }
  s[at] = 0;
  return s;
}

int fus_verify_partition(const gir_graph *g, const fus_partition *p, gir_err *err) {
  int32_t n = g->n_nodes, total = 0;
  for (int32_t k = 0; k < n; k++) {
    if (g->nodes[k]->id != k) return gir_errf(err, "fusion: node %d has id %d", k, g->nodes[k]->id);
    int32_t gi = p->group_of[k];
    if (gi < 0 || gi >= p->n_groups) return gir_errf(err, "fusion: node %d is in no group", k);
  }
  for (int32_t i = 0; i < p->n_groups; i++) {
    const fus_group *gr = &p->groups[i];
    if (gr->id != i || gr->n_nodes < 1) return gir_errf(err, "fusion: group %d is empty or misnumbered", i);
    int32_t masters = 0, opaque = 0, prev = -1;
    for (int32_t m = 0; m < gr->n_nodes; m++) {
      int32_t k = gr->nodes[m];
      if (k <= prev || k >= n) return gir_errf(err, "fusion: group %d lists its nodes out of order", i);
      prev = k;
      if (p->group_of[k] != i) return gir_errf(err, "fusion: node %d is listed in group %d but mapped to %d", k, i,
                                              p->group_of[k]);
      gir_category c = gir_op_category(g->nodes[k]->op);
      masters += c == GIR_COMPLEX || c == GIR_REDUCTION;
      opaque += c == GIR_OPAQUE;
    }
    total += gr->n_nodes;
    if (masters > 1) return gir_errf(err, "fusion: group %d has %d complex/reduction nodes", i, masters);
    if (opaque && gr->n_nodes > 1) return gir_errf(err, "fusion: group %d fuses an opaque node", i);
    if (gr->master < 0 || gr->master >= n || p->group_of[gr->master] != i)
      return gir_errf(err, "fusion: group %d has master %d outside it", i, gr->master);
    for (int32_t o = 0; o < gr->n_outputs; o++)
      if (!gr->outputs[o]->producer || gr->outputs[o]->producer->id != gr->nodes[gr->n_nodes - 1])
        return gir_errf(err, "fusion: group %d has an exit before its last node", i);
    gir_category mc = gir_op_category(g->nodes[gr->master]->op);
    if (masters ? mc == GIR_INJECTIVE : gr->master != gr->nodes[gr->n_nodes - 1])
      return gir_errf(err, "fusion: group %d has the wrong master", i);
  }
  if (total != n) return gir_errf(err, "fusion: %d nodes in groups, %d in the graph", total, n);
  /* Every value crossing groups goes to a later group: the order runs, and no
   * path can leave a group and come back into it. */
  for (int32_t k = 0; k < n; k++) {
    const gir_node *c = g->nodes[k];
    for (int j = 0; j < c->n_in; j++) {
      const gir_value *v = c->in[j];
      if (!v || v->data || !v->producer) continue;
      int32_t from = p->group_of[v->producer->id], to = p->group_of[k];
      if (from > to) return gir_errf(err, "fusion: group %d reads a value of the later group %d", to, from);
      if (from == to) continue;
      const fus_group *src = &p->groups[from], *dst = &p->groups[to];
      int found = 0;
      for (int32_t o = 0; o < src->n_outputs; o++) found |= src->outputs[o] == v;
      for (int32_t o = 0; o < dst->n_inputs; o++) found |= (dst->inputs[o] == v) << 1;
      if (found != 3) return gir_errf(err, "fusion: value %s between groups %d and %d is not a group output/input",
                                      v->name, from, to);
    }
  }
  return 0;
}
