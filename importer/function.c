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
  if (c->depth >= IMP_MAX_SUBGRAPH_DEPTH) return imp_fail(c, "functions nested deeper than %d (recursive?)", IMP_MAX_SUBGRAPH_DEPTH);
  if ((size_t)n->n_in > fn->n_input || (size_t)n->n_out > fn->n_output)
    return imp_fail(c, "function '%s' called with too many inputs or outputs", fn->name);
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
  if (rc == 0) rc = imp_convert_nodes(c, body, fn->n_node);
  c->depth--;
  gir_value **outs = gir_arena_calloc(c->g->arena, fn->n_output + 1, sizeof *outs);
  int poisoned = 0;
  for (size_t i = 0; i < fn->n_output && rc == 0; i++) {
    gir_value *v = NULL;
    if (!imp_scope_lookup(c, renamed(c, tag, fn->output[i]), &v))
      rc = imp_fail(c, "function '%s' never produces its output '%s'", fn->name, fn->output[i]);
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
