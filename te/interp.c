/* interp.c — graph execution by interpretation of the compute definitions (see
 * interp.h). Each node gets a fresh TE context whose placeholders are bound to
 * its input buffers; the node's output stages are then evaluated by te_eval. */
#include <string.h>
#include "compute.h"
#include "interp.h"
#include "te_eval.h"

#define FOLD_BUDGET (200ll * 1000 * 1000)

int lower_eval_node(const gir_node *n, const void *const *inputs, void *const *outputs, int64_t budget, gir_err *err) {
  gir_arena *a = gir_arena_new();
  if (!a) return gir_errf(err, "out of memory");
  te_ctx c;
  te_ctx_init(&c, a, err);
  te_tensor *in[64] = {0}, *out[8] = {0};
  te_binding bind[64];
  int nb = 0, rc = 0;
  if (n->n_in > 64 || n->n_out > 8) rc = gir_errf(err, "%s: too many operands to evaluate", n->name);
  for (int i = 0; rc == 0 && i < n->n_in; i++) {
    const gir_value *v = n->in[i];
    if (!v) continue;
    in[i] = te_placeholder(&c, v->name, v->dtype, v->shape.rank, v->shape.dims);
    bind[nb++] = (te_binding){in[i], inputs[i]};
  }
  if (rc == 0) rc = lower_compute(&c, n, in, out);
  for (int i = 0; rc == 0 && i < n->n_out; i++) rc = te_eval(&c, out[i], bind, nb, outputs[i], a, budget, err);
  if (rc < 0 && err->msg[0] && strncmp(err->msg, n->name, strlen(n->name)))
    gir_err_prefix(err, "evaluating %s (%s)", n->name, gir_op_name(n->op));
  gir_arena_free(a);
  return rc;
}

static int fold_eval(void *ctx, gir_graph *g, gir_node *n, gir_err *err) {
  (void)ctx;
  const void *ins[64] = {0};
  void *outs[8] = {0};
  if (n->n_in > 64 || n->n_out > 8) return gir_errf(err, "%s: too many operands to fold", n->name);
  for (int i = 0; i < n->n_in; i++) ins[i] = n->in[i] ? n->in[i]->data : NULL;
  for (int i = 0; i < n->n_out; i++) {
    int64_t nb = gir_value_nbytes(n->out[i]);
    outs[i] = gir_arena_alloc(g->arena, (size_t)(nb > 0 ? nb : 1));
    if (!outs[i]) return gir_errf(err, "out of memory");
  }
  if (lower_eval_node(n, ins, outs, FOLD_BUDGET, err) < 0) return -1;
  for (int i = 0; i < n->n_out; i++) n->out[i]->data = outs[i];
  return 0;
}

gir_evaluator lower_fold_evaluator(void) { return (gir_evaluator){.eval = fold_eval, .ctx = NULL}; }

int lower_interpret(const gir_graph *g, const void *const *inputs, void **outputs, gir_arena *a, gir_err *err) {
  const void **buf = gir_arena_calloc(a, (size_t)g->n_values + 1, sizeof *buf);
  if (!buf) return gir_errf(err, "out of memory");
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i]->data) buf[i] = g->values[i]->data;
  for (int i = 0; i < g->n_inputs; i++) buf[g->inputs[i]->id] = inputs[i];
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    const void *ins[64] = {0};
    void *outs[8] = {0};
    if (n->n_in > 64 || n->n_out > 8) return gir_errf(err, "%s: too many operands", n->name);
    for (int i = 0; i < n->n_in; i++) ins[i] = n->in[i] ? buf[n->in[i]->id] : NULL;
    for (int i = 0; i < n->n_out; i++) {
      int64_t nb = gir_value_nbytes(n->out[i]);
      outs[i] = gir_arena_alloc(a, (size_t)(nb > 0 ? nb : 1));
      if (!outs[i]) return gir_errf(err, "out of memory");
      buf[n->out[i]->id] = outs[i];
    }
    if (lower_eval_node(n, ins, outs, 0, err) < 0) return -1;
  }
  for (int i = 0; i < g->n_outputs; i++) outputs[i] = (void *)buf[g->outputs[i]->id];
  return 0;
}
