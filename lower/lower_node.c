/* lower_node.c — one graph node → one kernel: placeholders for its inputs, the
 * op's compute definition, the default schedule, schedule lowering. And the
 * whole-graph driver that does this for every node (before fusion exists, each
 * node is its own group). */
#include <stdio.h>
#include "compute.h"
#include "lower.h"
#include "tir_passes.h"

int lower_node(tir_builder *b, te_ctx *c, const gir_node *n, const char *name, lower_kernel *out, gir_err *err) {
  te_tensor *in[64] = {0}, *outs[8] = {0}, *params[64];
  int np = 0;
  if (n->n_in > 64 || n->n_out > 8) return gir_errf(err, "%s: too many operands", n->name);
  out->node = n;
  out->in = gir_arena_calloc(b->arena, (size_t)n->n_in + 1, sizeof *out->in);
  out->out = gir_arena_calloc(b->arena, (size_t)n->n_out + 1, sizeof *out->out);
  for (int i = 0; i < n->n_in; i++) {
    const gir_value *v = n->in[i];
    if (!v) continue;
    in[i] = te_placeholder(c, v->name, v->dtype, v->shape.rank, v->shape.dims);
    out->in[np] = v;
    params[np++] = in[i];
  }
  out->n_in = np;
  if (lower_compute(c, n, in, outs) < 0) return -1;
  /* An output that is an input unchanged (a no-op compute) still needs a copy stage. */
  for (int i = 0; i < n->n_out; i++) {
    out->out[i] = n->out[i];
    if (outs[i]->kind == TE_PLACEHOLDER) {
      te_var *ax[GIR_MAX_RANK];
      te_expr *idx[GIR_MAX_RANK];
      te_axes(c, outs[i]->rank, outs[i]->shape, ax);
      for (int d = 0; d < outs[i]->rank; d++) idx[d] = te_v(c, ax[d]);
      outs[i] = te_compute(c, "copy", outs[i]->dtype, outs[i]->rank, outs[i]->shape, ax, te_load(c, outs[i], idx));
    }
  }
  out->n_out = n->n_out;
  sch_schedule *s = sch_create(c, params, np, outs, n->n_out, err);
  if (!s || lower_default_schedule(s, 2) < 0) return gir_err_prefix(err, "scheduling %s", n->name);
  out->fn = sch_lower(s, b, name);
  if (!out->fn) return gir_err_prefix(err, "lowering %s", n->name);
  out->fn->body = tir_optimize(b, out->fn->body);
  out->n_ws = out->fn->n_params - np - n->n_out;
  out->ws_bytes = gir_arena_calloc(b->arena, (size_t)out->n_ws + 1, sizeof *out->ws_bytes);
  for (int i = 0; i < out->n_ws; i++) {
    const tir_buffer *wb = out->fn->params[np + n->n_out + i];
    out->ws_bytes[i] = wb->size * (int64_t)gir_dtype_size(wb->dtype);
  }
  return 0;
}

int lower_graph(const gir_graph *g, tir_builder *b, lower_program *p, gir_err *err) {
  p->n_kernels = 0;
  p->kernels = gir_arena_calloc(b->arena, (size_t)g->n_nodes + 1, sizeof *p->kernels);
  te_ctx c;
  te_ctx_init(&c, b->arena, err);
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    char *name = gir_arena_printf(b->arena, "k%d_%s", k, gir_op_name(n->op));
    if (lower_node(b, &c, n, name, &p->kernels[p->n_kernels], err) < 0) return -1;
    p->n_kernels++;
  }
  return 0;
}
