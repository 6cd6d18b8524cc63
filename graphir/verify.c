/* verify.c — structural checks of a graph, run at the end of every import
 * (importer/load.c) and by the tests after graph passes: ids match positions,
 * every input is produced before use (topological order), producer links are
 * consistent, constants have payloads, and each node's recorded output
 * types/shapes equal a fresh inference; and that If branches' guards nest
 * (gir_verify_guards, run again by the compiler after its graph passes). */
#include <string.h>
#include "graph.h"

int gir_verify_guards(const gir_graph *g, gir_err *err) {
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    for (const gir_guard *d = n->guard; d; d = d->parent) {
      const gir_value *c = d->cond;
      if (!c || c->dtype != GIR_BOOL || gir_value_numel(c) != 1)
        return gir_errf(err, "verify: node %s runs under %s, whose condition is not a bool scalar", n->name, d->what);
      if (c->producer && c->producer->id >= n->id)
        return gir_errf(err, "verify: node %s runs under %s, whose condition is computed after it", n->name, d->what);
      if (c->producer && !gir_guard_implies(d->parent, c->producer->guard))
        return gir_errf(err, "verify: the condition of %s (node %s) may not have been computed", d->what, n->name);
    }
    for (int j = 0; j < n->n_in; j++) {
      const gir_value *v = n->in[j];
      const gir_guard *h = v && v->producer ? v->producer->guard : NULL;
      if (!h || gir_guard_implies(n->guard, h)) continue;
      /* the where selecting an If's output reads both branches of its own level */
      if (n->op == GIR_OP_where && gir_guard_implies(n->guard, h->parent)) continue;
      return gir_errf(err, "verify: node %s (%s) reads %s, computed only under %s", n->name,
                      n->guard ? n->guard->what : "always run", v->name, h->what);
    }
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const gir_value *v = g->outputs[i], *e = v->extent;
    if (e && (e->dtype != GIR_I64 || e->shape.rank != 0 || v->extent_axis < 0 || v->extent_axis >= v->shape.rank ||
              (e->producer && e->producer->guard)))
      return gir_errf(err, "verify: graph output %s has a malformed extent", v->name);
    if (v->producer && v->producer->guard)
      return gir_errf(err, "verify: graph output %s is computed only under %s", v->name, v->producer->guard->what);
  }
  return 0;
}

int gir_verify(const gir_graph *g, gir_err *err) {
  gir_arena *tmp = gir_arena_new();
  if (!tmp) return gir_errf(err, "verify: out of memory");
  uint8_t *ready = gir_arena_calloc(tmp, (size_t)g->n_values + 1, 1);
  int rc = 0;
  for (int i = 0; i < g->n_values && rc == 0; i++) {
    const gir_value *v = g->values[i];
    if (v->id != i) rc = gir_errf(err, "verify: value %s has id %d at position %d", v->name, v->id, i);
    else if (!v->producer) {
      if (!v->data && !v->is_input) rc = gir_errf(err, "verify: value %s has no producer, data or input flag", v->name);
      ready[i] = 1;
    }
  }
  for (int k = 0; k < g->n_nodes && rc == 0; k++) {
    gir_node *n = g->nodes[k];
    if (n->id != k) {
      rc = gir_errf(err, "verify: node %s has id %d at position %d", n->name, n->id, k);
      break;
    }
    for (int j = 0; j < n->n_in && rc == 0; j++) {
      const gir_value *v = n->in[j];
      if (!v) continue;
      if (v->id < 0 || v->id >= g->n_values || g->values[v->id] != v)
        rc = gir_errf(err, "verify: node %s input %d is not in the graph", n->name, j);
      else if (!ready[v->id])
        rc = gir_errf(err, "verify: node %s uses %s before it is produced", n->name, v->name);
    }
    if (rc) break;
    /* Re-infer into scratch copies of the outputs and compare. */
    gir_value *saved = gir_arena_calloc(tmp, (size_t)n->n_out + 1, sizeof *saved);
    for (int j = 0; j < n->n_out; j++) {
      if (n->out[j]->producer != n || n->out[j]->producer_slot != j) {
        rc = gir_errf(err, "verify: output %d of node %s has a wrong producer link", j, n->name);
        break;
      }
      saved[j] = *n->out[j];
    }
    if (rc) break;
    gir_err e2 = {{0}};
    if (gir_node_infer((gir_graph *)g, n, &e2) < 0) rc = gir_errf(err, "verify: %s", e2.msg);
    for (int j = 0; j < n->n_out; j++) {
      if (!rc && (n->out[j]->dtype != saved[j].dtype || !gir_shape_equal(&n->out[j]->shape, &saved[j].shape)))
        rc = gir_errf(err, "verify: node %s output %d has a stale type or shape", n->name, j);
      *n->out[j] = saved[j];
      ready[n->out[j]->id] = 1;
    }
  }
  for (int i = 0; i < g->n_outputs && rc == 0; i++)
    if (!ready[g->outputs[i]->id]) rc = gir_errf(err, "verify: graph output %s is never produced", g->outputs[i]->name);
  gir_arena_free(tmp);
  if (rc == 0) rc = gir_verify_guards(g, err);
  return rc;
}
