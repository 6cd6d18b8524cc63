/* lower_node.c — graph nodes → kernels. A set of nodes (one node, or one fused
 * group in topological order) becomes ONE kernel: every value the set reads from
 * outside becomes a placeholder, each node's compute definition is applied to the
 * tensors of its inputs (placeholders or the stages of earlier members), and the
 * values the set must hand on (read outside it, or graph outputs) are the kernel's
 * outputs. The stages then get the default schedule, are lowered to loop IR and go
 * through the loop-IR pipeline. */
#include <stdio.h>
#include <string.h>
#include "compute.h"
#include "flops.h"
#include "lower.h"
#include "tir_passes.h"

typedef struct vmap {
  const gir_value **v;
  te_tensor **t;
  int32_t n, cap;
  gir_arena *a;
} vmap;

static te_tensor *vmap_get(const vmap *m, const gir_value *v) {
  for (int i = 0; i < m->n; i++)
    if (m->v[i] == v) return m->t[i];
  return NULL;
}

static void vmap_put(vmap *m, const gir_value *v, te_tensor *t) {
  if (m->n == m->cap) {
    int32_t nc = m->cap ? m->cap * 2 : 32;
    m->v = gir_arena_grow(m->a, m->v, (size_t)m->n, (size_t)nc, sizeof *m->v);
    m->t = gir_arena_grow(m->a, m->t, (size_t)m->n, (size_t)nc, sizeof *m->t);
    m->cap = nc;
  }
  m->v[m->n] = v;
  m->t[m->n++] = t;
}

/* A stage that copies t (for an output that is an input unchanged, or an
 * output that must not alias another output). */
static te_tensor *copy_stage(te_ctx *c, te_tensor *t) {
  te_var *ax[GIR_MAX_RANK];
  te_expr *idx[GIR_MAX_RANK];
  te_axes(c, t->rank, t->shape, ax);
  for (int d = 0; d < t->rank; d++) idx[d] = te_v(c, ax[d]);
  return te_compute(c, "copy", t->dtype, t->rank, t->shape, ax, te_load(c, t, idx));
}

/* The placeholders of one-element constants (a GELU's 3, a layer-norm's epsilon, a
 * scale) and their values: their loads become immediate constants, so the
 * simplifier sees x^3 rather than x^c[0] (a libm call per lane), and the kernel
 * loses a parameter. */
typedef struct scalars {
  te_tensor **t;
  const gir_value **v;
  int32_t n;
} scalars;

static te_expr *inline_scalar(te_ctx *c, const te_expr *load, te_expr *const *idx, void *arg) {
  const scalars *sc = arg;
  for (int32_t i = 0; i < sc->n; i++)
    if (load->u.load.t == sc->t[i]) {
      const gir_value *v = sc->v[i];
      return te_const(c, v->dtype, gir_dtype_is_float(v->dtype) ? gir_load_f64(v->dtype, v->data, 0)
                                                                 : (double)gir_load_i64(v->dtype, v->data, 0));
    }
  return te_load(c, load->u.load.t, idx);
}

static int inlinable_scalar(const gir_value *v) {
  if (!v->data || gir_value_numel(v) != 1 || !gir_dtype_first_class(v->dtype) || gir_dtype_is_f8(v->dtype)) return 0;
  if (gir_dtype_is_float(v->dtype)) return 1;
  int64_t x = gir_load_i64(v->dtype, v->data, 0); /* exactly a double, as te_const holds it */
  return x > -(1ll << 53) && x < (1ll << 53);
}

/* The compute stages reachable from the outputs, in a growing list. */
typedef struct stages {
  te_tensor **t;
  int32_t n, cap;
  gir_arena *a;
} stages;

static void add_stage(te_tensor *t, void *arg) {
  stages *st = arg;
  if (t->kind != TE_COMPUTE) return;
  for (int32_t j = 0; j < st->n; j++)
    if (st->t[j] == t) return;
  if (st->n == st->cap) {
    int32_t nc = st->cap ? st->cap * 2 : 32;
    st->t = gir_arena_grow(st->a, st->t, (size_t)st->n, (size_t)nc, sizeof *st->t);
    st->cap = nc;
  }
  st->t[st->n++] = t;
}

/* Rewrites every stage reachable from the outputs, then drops the scalars from the
 * kernel's inputs (params and in, np of them, compacted in place). */
static void inline_scalars(te_ctx *c, gir_arena *a, te_tensor **params, const gir_value **in, int32_t *np,
                           te_tensor *const *ot, int32_t n_outs) {
  scalars sc = {gir_arena_calloc(a, (size_t)*np + 1, sizeof *sc.t), gir_arena_calloc(a, (size_t)*np + 1, sizeof *sc.v), 0};
  for (int32_t i = 0; i < *np; i++)
    if (inlinable_scalar(in[i])) sc.t[sc.n] = params[i], sc.v[sc.n++] = in[i];
  if (!sc.n) return;
  stages st = {.a = a};
  for (int32_t i = 0; i < n_outs; i++) add_stage(ot[i], &st);
  for (int32_t k = 0; k < st.n; k++) { /* the list grows as producers are found */
    te_visit_loads(st.t[k]->body, add_stage, &st);
    st.t[k]->body = te_rewrite_loads(c, st.t[k]->body, inline_scalar, &sc);
  }
  int32_t kept = 0;
  for (int32_t i = 0; i < *np; i++) {
    int scalar = 0;
    for (int32_t j = 0; j < sc.n; j++) scalar |= params[i] == sc.t[j];
    if (scalar) continue;
    params[kept] = params[i];
    in[kept++] = in[i];
  }
  *np = kept;
}

int lower_nodes(tir_builder *b, te_ctx *c, const gir_node *const *nodes, int32_t n_nodes, const gir_value *const *outs,
                int32_t n_outs, const char *name, const lower_target *t, lower_kernel *k, gir_err *err) {
  gir_arena *a = b->arena;
  c->gpu = t && t->gpu;
  if (n_nodes == 1 && lower_is_sequential(nodes[0]->op)) /* opaque: always alone */
    return lower_sequential(b, nodes[0], outs, n_outs, name, k, err);
  vmap m = {.a = a};
  int32_t cap = 1; /* a kernel reads at most every input of its nodes */
  for (int j = 0; j < n_nodes; j++) cap += nodes[j]->n_in;
  te_tensor **params = gir_arena_calloc(a, (size_t)cap, sizeof *params);
  int32_t np = 0;
  k->in = gir_arena_calloc(a, (size_t)cap, sizeof *k->in);
  k->node = nodes[n_nodes - 1];
  k->flops = 0;
  for (int j = 0; j < n_nodes; j++) {
    const gir_node *n = nodes[j];
    te_tensor *in[64] = {0}, *o[8] = {0};
    if (n->n_in > 64 || n->n_out > 8) return gir_errf(err, "%s: too many operands", n->name);
    for (int i = 0; i < n->n_in; i++) {
      const gir_value *v = n->in[i];
      if (!v) continue;
      in[i] = vmap_get(&m, v);
      if (!in[i]) {
        in[i] = te_placeholder(c, v->name, v->dtype, v->shape.rank, v->shape.dims);
        vmap_put(&m, v, in[i]);
        k->in[np] = v;
        params[np++] = in[i];
      }
    }
    if (lower_compute(c, n, in, o) < 0) return gir_err_prefix(err, "%s", n->origin ? n->origin : n->name);
    k->flops = gir_flops_add(k->flops, gir_node_flops(n));
    for (int i = 0; i < n->n_out; i++) vmap_put(&m, n->out[i], o[i]);
  }
  k->n_in = np;
  k->n_out = n_outs;
  k->out = gir_arena_calloc(a, (size_t)n_outs + 1, sizeof *k->out);
  te_tensor **ot = gir_arena_calloc(a, (size_t)n_outs + 1, sizeof *ot);
  for (int i = 0; i < n_outs; i++) {
    k->out[i] = outs[i];
    ot[i] = vmap_get(&m, outs[i]);
    if (!ot[i]) return gir_errf(err, "%s: output %s is not produced by the kernel's nodes", name, outs[i]->name);
    int dup = ot[i]->kind == TE_PLACEHOLDER;
    for (int j = 0; j < i; j++) dup |= ot[j] == ot[i];
    if (dup) ot[i] = copy_stage(c, ot[i]);
  }
  inline_scalars(c, a, params, k->in, &np, ot, n_outs);
  k->n_in = np;
  if (t && t->tuning && t->tuning->group) t->tuning->group(t->tuning->self, nodes, n_nodes, outs, n_outs, name, t);
  sch_schedule *s = sch_create(c, params, np, ot, n_outs, err);
  if (!s || lower_default_schedule(s, t) < 0) return gir_err_prefix(err, "scheduling %s", name);
  k->generic = lower_generic_heavy_stage(s);
  k->fn = sch_lower(s, b, name);
  if (!k->fn) return gir_err_prefix(err, "lowering %s", name);
  k->scheduled = k->fn->body;
  k->fn->body = tir_optimize(b, k->fn->body, t ? t->masked_loads : 0);
  if (lower_index_checks(b, nodes, n_nodes, k, err) < 0) return -1;
  k->n_ws = k->fn->n_params - np - n_outs;
  k->ws_bytes = gir_arena_calloc(a, (size_t)k->n_ws + 1, sizeof *k->ws_bytes);
  for (int i = 0; i < k->n_ws; i++) {
    const tir_buffer *wb = k->fn->params[np + n_outs + i];
    k->ws_bytes[i] = wb->size * (int64_t)gir_dtype_size(wb->dtype);
  }
  return 0;
}

int lower_node(tir_builder *b, te_ctx *c, const gir_node *n, const char *name, const lower_target *t, lower_kernel *out,
               gir_err *err) {
  const gir_value *outs[8];
  if (n->n_out > 8) return gir_errf(err, "%s: too many outputs", n->name);
  for (int i = 0; i < n->n_out; i++) outs[i] = n->out[i];
  return lower_nodes(b, c, &n, 1, outs, n->n_out, name, t, out, err);
}

int lower_graph_groups(const gir_graph *g, const int32_t *group_of, int32_t n_groups, tir_builder *b,
                       const lower_target *t, lower_program *p, gir_err *err) {
  gir_arena *a = b->arena;
  /* members of each group, in topological order */
  int32_t *count = gir_arena_calloc(a, (size_t)n_groups + 1, sizeof *count);
  for (int k = 0; k < g->n_nodes; k++) count[group_of[k]]++;
  const gir_node ***members = gir_arena_calloc(a, (size_t)n_groups + 1, sizeof *members);
  int32_t *fill = gir_arena_calloc(a, (size_t)n_groups + 1, sizeof *fill);
  for (int i = 0; i < n_groups; i++) members[i] = gir_arena_calloc(a, (size_t)count[i] + 1, sizeof **members);
  for (int k = 0; k < g->n_nodes; k++) members[group_of[k]][fill[group_of[k]]++] = g->nodes[k];
  /* a value leaves its group when a node of another group reads it, or it is a graph output */
  uint8_t *leaves = gir_arena_calloc(a, (size_t)g->n_values + 1, 1);
  for (int k = 0; k < g->n_nodes; k++)
    for (int i = 0; i < g->nodes[k]->n_in; i++) {
      const gir_value *v = g->nodes[k]->in[i];
      if (v && v->producer && group_of[v->producer->id] != group_of[k]) leaves[v->id] = 1;
    }
  for (int i = 0; i < g->n_outputs; i++) leaves[g->outputs[i]->id] = 1;
  for (int i = 0; i < g->n_outputs; i++) /* outputs' actual extents: the runtime reads them */
    if (g->outputs[i]->extent) leaves[g->outputs[i]->extent->id] = 1;
  for (int k = 0; k < g->n_nodes; k++) /* If conditions: the runtime reads them */
    for (const gir_guard *d = g->nodes[k]->guard; d; d = d->parent) leaves[d->cond->id] = 1;
  /* groups in the order of their last node: every group a group reads from ends
   * before it starts computing (groups are convex), so this order can run — the
   * order of first nodes cannot (a group may start before one it reads from ends) */
  p->n_kernels = 0;
  p->kernels = gir_arena_calloc(a, (size_t)n_groups + 1, sizeof *p->kernels);
  int32_t *last = gir_arena_calloc(a, (size_t)n_groups + 1, sizeof *last);
  for (int k = 0; k < g->n_nodes; k++) last[group_of[k]] = k;
  te_ctx c;
  te_ctx_init(&c, a, err);
  for (int k = 0; k < g->n_nodes; k++) {
    int32_t gi = group_of[k];
    if (last[gi] != k) continue;
    int32_t ocap = 1;
    for (int j = 0; j < count[gi]; j++) ocap += members[gi][j]->n_out;
    const gir_value **outs = gir_arena_calloc(a, (size_t)ocap, sizeof *outs);
    int32_t no = 0;
    for (int j = 0; j < count[gi]; j++)
      for (int i = 0; i < members[gi][j]->n_out; i++)
        if (leaves[members[gi][j]->out[i]->id]) outs[no++] = members[gi][j]->out[i];
    /* named after the group's anchor: its first non-injective op (conv, matmul,
     * a reduction…), else its last op; profiles group kernels by these names */
    const gir_node *anchor = members[gi][count[gi] - 1];
    for (int j = 0; j < count[gi]; j++)
      if (gir_op_category(members[gi][j]->op) != GIR_INJECTIVE) {
        anchor = members[gi][j];
        break;
      }
    char *name = gir_arena_printf(a, "k%d_%s", p->n_kernels, gir_op_name(anchor->op));
    lower_kernel *kr = &p->kernels[p->n_kernels];
    if (lower_nodes(b, &c, members[gi], count[gi], outs, no, name, t, kr, err) < 0) return -1;
    kr->guard = members[gi][0]->guard;
    for (int j = 0; j < count[gi]; j++) {
      const gir_node *m = members[gi][j];
      if (m->guard != kr->guard)
        return gir_errf(err, "lower: kernel %s holds nodes of two If branches (%s, %s)", name, m->name,
                        members[gi][0]->name);
      if (m->op == GIR_OP_trap) {
        const gir_attr *msg = gir_attr_find(m, "message");
        kr->trap = msg && msg->s ? msg->s : "a branch that cannot run was taken";
      }
    }
    p->n_kernels++;
  }
  return 0;
}

int lower_graph(const gir_graph *g, tir_builder *b, const lower_target *t, lower_program *p, gir_err *err) {
  int32_t *group_of = gir_arena_calloc(b->arena, (size_t)g->n_nodes + 1, sizeof *group_of);
  for (int k = 0; k < g->n_nodes; k++) group_of[k] = k;
  return lower_graph_groups(g, group_of, g->n_nodes, b, t, p, err);
}
