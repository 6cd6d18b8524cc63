/* function.c — inlining model-local functions. A call site becomes a copy of the
 * function body: each body node is cloned with its inner value names prefixed by
 * a per-call tag (so two calls never collide), attributes that reference the
 * caller's attributes (ref_attr_name) replaced by the caller's values, and the
 * body converted in a fresh scope that sees only the formal inputs. Calls nest up
 * to the subgraph depth limit, which also stops recursive functions. */
#include <string.h>
#include "function.h"

static int same_domain(const char *a, const char *b) {
  int da = !a || !a[0] || !strcmp(a, "ai.onnx"), db = !b || !b[0] || !strcmp(b, "ai.onnx");
  if (da || db) return da && db;
  return !strcmp(a, b);
}

const Onnx__FunctionProto *imp_find_function(imp_ctx *c, const char *domain, const char *op_type) {
  const Onnx__ModelProto *m = c->model;
  for (size_t i = 0; m && i < m->n_functions; i++) {
    const Onnx__FunctionProto *f = m->functions[i];
    if (f && f->name && !strcmp(f->name, op_type) && same_domain(f->domain, domain)) return f;
  }
  return NULL;
}

static int64_t function_opset(const imp_ctx *c, const Onnx__FunctionProto *fn) {
  for (size_t i = 0; i < fn->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = fn->opset_import[i];
    if (o && same_domain(o->domain, "")) return o->version;
  }
  return c->opset;
}

static const char *renamed(imp_ctx *c, const char *tag, const char *name) {
  if (!name || !name[0]) return "";
  return gir_arena_printf(c->g->arena, "%s/%s", tag, name);
}

/* Clone a body node with renamed values and resolved attribute references. */
static Onnx__NodeProto *clone_node(imp_ctx *c, const Onnx__NodeProto *src, const char *tag, const imp_node *call) {
  gir_arena *a = c->g->arena;
  Onnx__NodeProto *d = gir_arena_alloc(a, sizeof *d);
  *d = *src;
  d->name = (char *)renamed(c, tag, src->name && src->name[0] ? src->name : src->op_type);
  d->input = gir_arena_calloc(a, src->n_input + 1, sizeof *d->input);
  d->output = gir_arena_calloc(a, src->n_output + 1, sizeof *d->output);
  for (size_t i = 0; i < src->n_input; i++) d->input[i] = (char *)renamed(c, tag, src->input[i]);
  for (size_t i = 0; i < src->n_output; i++) d->output[i] = (char *)renamed(c, tag, src->output[i]);
  d->attribute = gir_arena_calloc(a, src->n_attribute + 1, sizeof *d->attribute);
  d->n_attribute = 0;
  for (size_t i = 0; i < src->n_attribute; i++) {
    const Onnx__AttributeProto *at = src->attribute[i];
    if (!at) continue;
    if (at->ref_attr_name && at->ref_attr_name[0]) {
      const Onnx__AttributeProto *val = imp_attr(call, at->ref_attr_name);
      if (!val) continue; /* not given by the caller: the op's default applies */
      Onnx__AttributeProto *cp = gir_arena_alloc(a, sizeof *cp);
      *cp = *val;
      cp->name = at->name;
      d->attribute[d->n_attribute++] = cp;
    } else
      d->attribute[d->n_attribute++] = (Onnx__AttributeProto *)at;
  }
  return d;
}

int imp_inline_function(imp_ctx *c, const Onnx__FunctionProto *fn, imp_node *n) {
  /* Errors of the call itself name the call site; errors in the body name the body
   * node, whose name holds the chain of calls (the caller adds no prefix). */
  if (c->depth >= IMP_MAX_SUBGRAPH_DEPTH)
    return imp_fail(c, "function '%s' nests calls deeper than %d (recursive?)", fn->name, IMP_MAX_SUBGRAPH_DEPTH);
  if ((size_t)n->n_in > fn->n_input || (size_t)n->n_out > fn->n_output)
    return imp_fail(c, "%s: function '%s' called with %d inputs and %d outputs; it has %zu and %zu", c->origin,
                    fn->name, n->n_in, n->n_out, fn->n_input, fn->n_output);
  const char *tag = gir_arena_printf(c->g->arena, "%s#%d", n->name, c->g->next_name++);
  imp_scope *saved_scope = c->scope;
  int64_t saved_opset = c->opset;
  const char *saved_origin = c->origin;
  c->scope = NULL;
  if (!imp_scope_push(c)) return imp_fail(c, "out of memory");
  int rc = 0;
  for (size_t i = 0; i < fn->n_input && rc == 0; i++)
    if ((int32_t)i < n->n_in && n->in[i]) rc = imp_scope_bind(c, renamed(c, tag, fn->input[i]), n->in[i]);
  Onnx__NodeProto **body = gir_arena_calloc(c->g->arena, fn->n_node + 1, sizeof *body);
  for (size_t i = 0; i < fn->n_node && rc == 0; i++)
    if (fn->node[i]) body[i] = clone_node(c, fn->node[i], tag, n);
  c->depth++;
  c->opset = function_opset(c, fn);
  if (c->opset != saved_opset && (c->opset < 1 || c->opset > IMP_MAX_OPSET)) /* its own ai.onnx import */
    rc = imp_fail(c, "%s: function '%s' imports ai.onnx opset %lld; kiln supports 1 to %d", saved_origin, fn->name,
                  (long long)c->opset, IMP_MAX_OPSET);
  if (rc == 0) rc = imp_convert_nodes(c, body, fn->n_node);
  c->depth--;
  gir_value **outs = gir_arena_calloc(c->g->arena, fn->n_output + 1, sizeof *outs);
  int poisoned = 0;
  for (size_t i = 0; i < fn->n_output && rc == 0; i++) {
    gir_value *v = NULL;
    if (!imp_scope_lookup(c, renamed(c, tag, fn->output[i]), &v))
      rc = imp_fail(c, "%s: function '%s' never produces its output '%s'", saved_origin, fn->name, fn->output[i]);
    else if (!v)
      poisoned = 1;
    outs[i] = v;
  }
  c->scope = saved_scope;
  c->opset = saved_opset;
  c->origin = saved_origin;
  if (rc < 0) return rc;
  if (poisoned) return -2; /* the body held unsupported ops, already reported */
  for (int i = 0; i < n->n_out && rc == 0; i++) rc = imp_set_output(c, n, i, outs[i]);
  return rc;
}

/* --- the expansion check ---
 * Inlining copies a body at every call, so functions that call each other twice
 * per level grow exponentially: 40 functions in 2 KB would expand to 2^40 nodes.
 * Before anything is converted, each function's inlined size (its nodes, those of
 * the graphs in its attributes, and those of the functions it calls) is counted
 * once (memoized, saturating) and the total over all call sites is bounded.
 * Recursion is refused here too, with the function's name. */

typedef struct expand {
  imp_ctx *c;
  int64_t *size;  /* per function: inlined node count */
  uint8_t *state; /* 0 unvisited, 1 being counted, 2 done */
} expand;

static int64_t count_nodes(expand *x, Onnx__NodeProto *const *nodes, size_t n_nodes, int fdepth);

static size_t function_index(const imp_ctx *c, const Onnx__FunctionProto *fn) {
  size_t i = 0;
  while (c->model->functions[i] != fn) i++;
  return i;
}

/* a + b, or IMP_MAX_INLINED_NODES + 1 once above the limit (both are within it) */
static int64_t saturate(int64_t a, int64_t b) {
  return a > IMP_MAX_INLINED_NODES - b ? IMP_MAX_INLINED_NODES + 1 : a + b;
}

static int64_t function_size(expand *x, const Onnx__FunctionProto *fn, int fdepth) {
  size_t i = function_index(x->c, fn);
  if (x->state[i] == 2) return x->size[i];
  if (x->state[i] == 1)
    return imp_fail(x->c, "function '%s' is recursive (it calls itself, directly or through other functions), "
                          "which cannot be inlined", fn->name);
  if (fdepth >= IMP_MAX_SUBGRAPH_DEPTH)
    return imp_fail(x->c, "function '%s' nests calls deeper than %d", fn->name, IMP_MAX_SUBGRAPH_DEPTH);
  x->state[i] = 1;
  int64_t s = count_nodes(x, (Onnx__NodeProto *const *)fn->node, fn->n_node, fdepth + 1);
  if (s < 0) return -1;
  x->state[i] = 2;
  x->size[i] = saturate(s, (int64_t)fn->n_node);
  return x->size[i];
}

static int64_t count_graph(expand *x, const Onnx__GraphProto *g, int fdepth) {
  return g ? count_nodes(x, (Onnx__NodeProto *const *)g->node, g->n_node, fdepth) : 0;
}

/* Nodes added by inlining the calls among nodes (and in their subgraphs). */
static int64_t count_nodes(expand *x, Onnx__NodeProto *const *nodes, size_t n_nodes, int fdepth) {
  int64_t total = 0;
  for (size_t i = 0; i < n_nodes && total <= IMP_MAX_INLINED_NODES; i++) {
    const Onnx__NodeProto *np = nodes[i];
    if (!np) continue;
    const Onnx__FunctionProto *fn = np->op_type ? imp_find_function(x->c, np->domain, np->op_type) : NULL;
    int64_t s = fn ? function_size(x, fn, fdepth) : 0;
    for (size_t a = 0; a < np->n_attribute && s >= 0; a++) {
      const Onnx__AttributeProto *at = np->attribute[a];
      if (!at) continue;
      int64_t t = count_graph(x, at->g, fdepth);
      s = t < 0 ? -1 : saturate(s, t);
      for (size_t k = 0; k < at->n_graphs && s >= 0; k++) {
        t = count_graph(x, at->graphs[k], fdepth);
        s = t < 0 ? -1 : saturate(s, t);
      }
    }
    if (s < 0) return -1;
    total = saturate(total, s);
  }
  return total;
}

int imp_check_functions(imp_ctx *c, const Onnx__GraphProto *g) {
  const Onnx__ModelProto *m = c->model;
  if (!m || m->n_functions == 0) return 0;
  expand x = {.c = c, .size = gir_arena_calloc(c->g->arena, m->n_functions, sizeof *x.size),
              .state = gir_arena_calloc(c->g->arena, m->n_functions, 1)};
  if (!x.size || !x.state) return imp_fail(c, "out of memory");
  int64_t total = count_graph(&x, g, 0);
  if (total < 0) return -1;
  if (total > IMP_MAX_INLINED_NODES)
    return imp_fail(c, "the model's function calls expand to too many nodes (more than %d once inlined)",
                    IMP_MAX_INLINED_NODES);
  return 0;
}
