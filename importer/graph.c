/* graph.c — importing a GraphProto: initializers become constants, inputs become
 * graph inputs with shapes bound (user shape, else declared dims, symbolic dims
 * = 1), nodes are converted in order, outputs are bound by name. Also the node
 * loop shared with function inlining: each node's inputs are looked up, its
 * converter is chosen by op type and opset, and an unsupported node poisons its
 * outputs so that import continues and every unsupported op gets reported. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ctx.h"
#include "function.h"

static void count_op(imp_ctx *c, const char *op_type) {
  imp_report *r = c->rep;
  if (!r) return;
  r->onnx_nodes++;
  for (int i = 0; i < r->n_op_types; i++)
    if (!strcmp(r->op_types[i], op_type)) {
      r->op_counts[i]++;
      return;
    }
  if (r->n_op_types == r->cap_op_types) {
    int32_t nc = r->cap_op_types ? r->cap_op_types * 2 : 32;
    r->op_types = gir_arena_grow(r->arena, r->op_types, (size_t)r->n_op_types, (size_t)nc, sizeof *r->op_types);
    r->op_counts = gir_arena_grow(r->arena, r->op_counts, (size_t)r->n_op_types, (size_t)nc, sizeof *r->op_counts);
    r->cap_op_types = nc;
  }
  r->op_types[r->n_op_types] = gir_arena_strdup(r->arena, op_type);
  r->op_counts[r->n_op_types++] = 1;
}

int imp_unsupported_node(imp_ctx *c, const imp_node *n, const char *fmt, ...) {
  imp_report *r = c->rep;
  if (r) {
    char reason[512] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    if (r->n_unsupported == r->cap_unsupported) {
      int32_t nc = r->cap_unsupported ? r->cap_unsupported * 2 : 16;
      r->unsupported = gir_arena_grow(r->arena, r->unsupported, (size_t)r->n_unsupported, (size_t)nc,
                                      sizeof *r->unsupported);
      r->cap_unsupported = nc;
    }
    imp_unsupported *u = &r->unsupported[r->n_unsupported++];
    u->op_type = gir_arena_strdup(r->arena, n->op_type);
    u->domain = gir_arena_strdup(r->arena, n->proto->domain ? n->proto->domain : "");
    u->node_name = gir_arena_strdup(r->arena, n->name);
    u->opset = n->opset;
    u->reason = gir_arena_strdup(r->arena, reason);
  }
  return -2;
}

static int is_default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

static int poison_outputs(imp_ctx *c, const Onnx__NodeProto *np) {
  for (size_t j = 0; j < np->n_output; j++)
    if (np->output[j] && np->output[j][0] && imp_scope_bind(c, np->output[j], NULL) < 0) return -1;
  return 0;
}

static int convert_one(imp_ctx *c, const Onnx__NodeProto *np, size_t index) {
  const char *op_type = np->op_type ? np->op_type : "";
  const char *name = np->name && np->name[0] ? np->name : gir_arena_printf(c->g->arena, "#%zu", index);
  count_op(c, op_type);
  if (np->n_input > 4096 || np->n_output > 4096) return imp_fail(c, "node '%s' (%s) has too many inputs or outputs", name, op_type);
  imp_node n = {.proto = np, .op_type = op_type, .name = name, .opset = c->opset,
                .n_in = (int32_t)np->n_input, .n_out = (int32_t)np->n_output,
                .out_names = (const char *const *)np->output};
  n.in = gir_arena_calloc(c->g->arena, np->n_input + 1, sizeof *n.in);
  n.out = gir_arena_calloc(c->g->arena, np->n_output + 1, sizeof *n.out);
  for (size_t j = 0; j < np->n_input; j++) {
    const char *in = np->input[j];
    if (!in || !in[0]) continue; /* absent optional input */
    gir_value *v;
    if (!imp_scope_lookup(c, in, &v))
      return imp_fail(c, "node '%s' (%s): input '%s' is not defined before use", name, op_type, in);
    if (!v) return poison_outputs(c, np); /* downstream of an unsupported node */
    n.in[j] = v;
  }
  c->origin = gir_arena_printf(c->g->arena, "%s '%s' (opset %lld)", op_type, name, (long long)c->opset);

  int rc;
  const Onnx__FunctionProto *fn = imp_find_function(c, np->domain, op_type);
  if (fn)
    rc = imp_inline_function(c, fn, &n);
  else if (!is_default_domain(np->domain))
    rc = imp_unsupported_node(c, &n, "domain '%s' is not supported", np->domain);
  else if (c->opset == 0) /* said in full here: the origin would read "(opset 0)" */
    return imp_fail(c, "node '%s' (%s) uses the ai.onnx domain, which the model does not import", name, op_type);
  else {
    imp_convert_fn conv = imp_find_converter(op_type, c->opset);
    rc = conv ? conv(c, &n) : imp_unsupported_node(c, &n, "no converter");
  }
  if (rc == -2) {
    c->err->msg[0] = 0;
    return poison_outputs(c, np);
  }
  if (rc < 0) {
    if (fn) return -1; /* the body node or the call names itself (function.c) */
    if (!c->err->msg[0]) imp_fail(c, "conversion failed");
    /* shape inference already names the node (its origin); don't say it twice */
    if (strncmp(c->err->msg, c->origin, strlen(c->origin))) return gir_err_prefix(c->err, "%s", c->origin);
    return -1;
  }
  for (size_t j = 0; j < np->n_output; j++)
    if (np->output[j] && np->output[j][0] && !n.out[j])
      return imp_fail(c, "%s: output %zu ('%s') is not supported", c->origin, j, np->output[j]);
  return 0;
}

int imp_convert_nodes(imp_ctx *c, Onnx__NodeProto *const *nodes, size_t n_nodes) {
  for (size_t i = 0; i < n_nodes; i++) {
    if (!nodes[i]) continue;
    if (convert_one(c, nodes[i], i) < 0) return -1;
  }
  return 0;
}

/* Graph outputs must carry their ONNX names; a value already named otherwise (an
 * input, or a value that is two outputs at once) gets a named copy. */
static gir_value *named_output(imp_ctx *c, gir_value *v, const char *name) {
  if (!strcmp(v->name, name) && !v->is_output) return v;
  gir_node *n = imp_new_node(c, GIR_OP_reshape, &v, 1, 1);
  gir_attr_set_ints(c->g, n, "shape", v->shape.dims, v->shape.rank);
  if (gir_node_infer(c->g, n, c->err) < 0) return NULL;
  n->out[0]->name = gir_arena_strdup(c->g->arena, name);
  return n->out[0];
}

/* tensor.c says "tensor 'w' ..."; for an initializer, say "initializer 'w' ...". */
static int initializer_error(imp_ctx *c) {
  char *m = c->err->msg;
  if (strncmp(m, "tensor '", 8)) return gir_err_prefix(c->err, "initializer");
  size_t len = strlen(m);
  if (len + 5 >= sizeof c->err->msg) return -1;
  memmove(m + 11, m + 6, len - 6 + 1); /* "tensor" → "initializer" */
  memcpy(m, "initializer", 11);
  return -1;
}

/* Every --input-shape must name a graph input that is not an initializer. */
static int check_user_shapes(imp_ctx *c, const Onnx__GraphProto *gp) {
  for (int i = 0; c->opt && i < c->opt->n_shapes; i++) {
    const char *name = c->opt->shapes[i].name;
    int found = 0;
    for (size_t j = 0; j < gp->n_input && !found; j++)
      found = gp->input[j] && gp->input[j]->name && !strcmp(gp->input[j]->name, name);
    if (!found) return imp_fail(c, "--input-shape names '%s', which is not an input of the model", name);
  }
  return 0;
}

int imp_import_graph(imp_ctx *c, const Onnx__GraphProto *gp, int top_level) {
  if (top_level && check_user_shapes(c, gp) < 0) return -1;
  if (gp->n_sparse_initializer) return imp_fail(c, "sparse initializers are not supported");
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    if (!t) continue;
    if (!t->name || !t->name[0]) return imp_fail(c, "initializer %zu has no name", i);
    gir_value *v = imp_tensor_to_const(c, t, t->name);
    if (!v) return initializer_error(c);
    if (c->rep && top_level) {
      c->rep->param_count += gir_value_numel(v);
      c->rep->param_bytes += gir_value_nbytes(v);
    }
    if (imp_scope_bind(c, t->name, v) < 0) return -1;
  }
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    if (!vi || !vi->name || !vi->name[0]) return imp_fail(c, "graph input %zu has no name", i);
    gir_value *existing;
    if (imp_scope_lookup(c, vi->name, &existing) && existing && existing->data) continue; /* initializer */
    gir_dtype dt;
    gir_shape s = {0};
    if (imp_type_to_shape(c, vi, &dt, &s) < 0) return -1;
    gir_value *v = gir_value_new(c->g, vi->name, dt, &s);
    if (top_level) gir_graph_add_input(c->g, v);
    if (imp_scope_bind(c, vi->name, v) < 0) return -1;
  }
  if (imp_convert_nodes(c, (Onnx__NodeProto *const *)gp->node, gp->n_node) < 0) return -1;
  if (!top_level) return 0;
  if (gp->n_output == 0) return imp_fail(c, "the graph has no outputs");
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    if (!vi || !vi->name || !vi->name[0]) return imp_fail(c, "graph output %zu has no name", i);
    gir_value *v;
    if (!imp_scope_lookup(c, vi->name, &v)) return imp_fail(c, "graph output '%s' is never produced", vi->name);
    if (!v) continue; /* poisoned: reported as unsupported */
    c->origin = gir_arena_printf(c->g->arena, "graph output '%s'", vi->name);
    gir_value *o = named_output(c, v, vi->name);
    if (!o) return -1;
    gir_graph_add_output(c->g, o);
  }
  return 0;
}
