/* graph.c — importing a GraphProto: initializers become constants, inputs become
 * graph inputs with shapes bound (user shape, else declared dims, symbolic dims
 * = 1), nodes are converted in order, outputs are bound by name. Sequence and
 * optional inputs and outputs become the tensors they hold (naming: importer.h). Also the node
 * loop shared with function inlining: each node's inputs are looked up, its
 * converter is chosen by op type and opset, and an unsupported node poisons its
 * outputs so that import continues and every unsupported op gets reported. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ctx.h"
#include "function.h"
#include "ops.h"
#include "qdq.h"

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

/* Other domains with converters (ops_preview.c, ops_ml.c, FlexAttention in
 * ops_attention.c): a node of one of them is converted at that domain's opset,
 * which the converter reads from n->opset and checks itself. */
static int is_converted_domain(const char *d) {
  return d && (!strcmp(d, "ai.onnx.preview") || !strcmp(d, "ai.onnx.preview.training") || !strcmp(d, "ai.onnx.ml"));
}

static int64_t domain_opset(const imp_ctx *c, const char *d) {
  for (size_t i = 0; c->model && i < c->model->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = c->model->opset_import[i];
    if (o && o->domain && !strcmp(o->domain, d)) return o->version;
  }
  return 0;
}

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
  n.seq = gir_arena_calloc(c->g->arena, np->n_input + 1, sizeof *n.seq);
  n.out = gir_arena_calloc(c->g->arena, np->n_output + 1, sizeof *n.out);
  n.out_kind = gir_arena_calloc(c->g->arena, np->n_output + 1, sizeof *n.out_kind);
  const char *seq_in = NULL; /* the first input that is a sequence */
  int list_in = 0;           /* some input is a sequence or an absent optional */
  for (size_t j = 0; j < np->n_input; j++) {
    const char *in = np->input[j];
    if (!in || !in[0]) continue; /* absent optional input */
    imp_item it;
    imp_kind k = imp_scope_find(c, in, &it);
    if (k == IMP_NOT_FOUND)
      return imp_fail(c, "node '%s' (%s): input '%s' is not defined before use", name, op_type, in);
    if (k == IMP_TENSOR && !it.v) return poison_outputs(c, np); /* downstream of an unsupported node */
    n.in[j] = it.v;   /* NULL for an absent optional: read like an empty input name */
    n.seq[j] = it.s;
    if (k == IMP_SEQUENCE && !seq_in) seq_in = in;
    list_in |= k != IMP_TENSOR;
  }
  c->origin = gir_arena_printf(c->g->arena, "%s '%s' (opset %lld)", op_type, name, (long long)c->opset);
  for (size_t j = 0; j < np->n_input; j++)
    if (n.in[j] && n.in[j]->string_bytes && !imp_takes_strings(op_type)) {
      imp_unsupported_node(c, &n, "input '%s' is a string tensor, which %s does not take in kiln (Equal, "
                                  "StringConcat, StringNormalizer, StringSplit, RegexFullMatch, LabelEncoder and "
                                  "Identity do)", np->input[j], op_type);
      c->err->msg[0] = 0;
      return poison_outputs(c, np);
    }
  if (!imp_extent_accepts(c, &n)) { /* a data-dependent size (gir_value.extent) through the ops of extent.c */
    for (size_t j = 0; j < np->n_input; j++)
      if (n.in[j] && n.in[j]->extent) {
        imp_unsupported_node(c, &n, "input '%s' has a data-dependent shape (from NonMaxSuppression, Unique, NonZero "
                                    "or Compress at run time), which %s does not take in kiln yet (element-wise "
                                    "ops, Gather, GatherND, Slice, Squeeze, Unsqueeze, Transpose, Concat, Reshape, "
                                    "Flatten and MatMul do)",
                             np->input[j], op_type);
        break;
      }
    c->err->msg[0] = 0;
    return poison_outputs(c, np);
  }

  int rc;
  const Onnx__FunctionProto *fn = imp_find_function(c, np->domain, op_type);
  /* an absent optional reads as an absent input, except where the op passes it on */
  imp_convert_fn seq_conv = list_in && is_default_domain(np->domain) ? imp_find_sequence_converter(op_type) : NULL;
  if (seq_in && (fn || !seq_conv))
    rc = imp_unsupported_node(c, &n, "input '%s' is a sequence, which %s does not take in kiln", seq_in,
                              fn ? "a function" : op_type);
  else if (seq_conv && !fn)
    rc = c->opset ? seq_conv(c, &n) : imp_fail(c, "node '%s' (%s) uses the ai.onnx domain, which the model does "
                                                  "not import", name, op_type);
  else if (fn)
    rc = imp_inline_function(c, fn, &n);
  else if (is_converted_domain(np->domain)) {
    n.opset = domain_opset(c, np->domain);
    c->origin = gir_arena_printf(c->g->arena, "%s '%s' (%s opset %lld)", op_type, name, np->domain,
                                 (long long)n.opset);
    imp_convert_fn conv = imp_find_domain_converter(op_type);
    rc = conv ? conv(c, &n) : imp_unsupported_node(c, &n, "no converter");
  } else if (np->domain && !strcmp(np->domain, "com.microsoft")) { /* ONNX Runtime's contrib ops (ops_contrib.c) */
    n.opset = domain_opset(c, np->domain);
    c->origin = gir_arena_printf(c->g->arena, "%s '%s' (com.microsoft opset %lld)", op_type, name, (long long)n.opset);
    imp_convert_fn conv = imp_find_contrib_converter(op_type);
    rc = conv ? conv(c, &n) : imp_unsupported_node(c, &n, "com.microsoft op %s is not supported", op_type);
  } else if (!is_default_domain(np->domain))
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
    if (np->output[j] && np->output[j][0] && !n.out[j] && !n.out_kind[j])
      return imp_fail(c, "%s: output %zu ('%s') is not supported", c->origin, j, np->output[j]);
  if (!fn && imp_extent_propagate(c, &n) < 0) return gir_err_prefix(c->err, "%s", c->origin);
  return 0;
}

int imp_convert_nodes(imp_ctx *c, Onnx__NodeProto *const *nodes, size_t n_nodes) {
  for (size_t i = 0; i < n_nodes; i++) {
    if (!nodes[i]) continue;
    if (convert_one(c, nodes[i], i) < 0) return -1;
  }
  return 0;
}

/* The top-level node loop: as imp_convert_nodes, with QDQ units (qdq.c) converted
 * as one integer op at their QuantizeLinear — or node by node there when unfit. */
static int convert_top_nodes(imp_ctx *c, const Onnx__GraphProto *gp) {
  imp_qdq_plan p;
  if (imp_qdq_plan_build(c, gp, &p) < 0) return -1;
  Onnx__NodeProto *const *nodes = (Onnx__NodeProto *const *)gp->node;
  for (size_t i = 0; i < gp->n_node; i++) {
    if (!nodes[i] || p.role[i] == IMP_QDQ_SKIPPED) continue;
    if (p.role[i] == IMP_QDQ_QUANTIZE) {
      size_t o = (size_t)p.op_of[i];
      int rc = imp_qdq_convert(c, &p, nodes, i);
      if (rc < 0) return -1;
      if (rc == 1) {
        count_op(c, nodes[o]->op_type ? nodes[o]->op_type : "");
        count_op(c, nodes[i]->op_type);
        if (c->rep) c->rep->qdq_units++;
        continue;
      }
      if (convert_one(c, nodes[o], o) < 0) return -1;
    }
    c->ort_float = p.role[i] == IMP_QDQ_ORT_FLOAT;
    int rc = convert_one(c, nodes[i], i);
    c->ort_float = 0;
    if (rc < 0) return -1;
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
  n->out[0]->string_bytes = v->string_bytes;
  return n->out[0];
}

/* --- sequence and optional graph inputs and outputs (naming: importer.h) --- */

static const imp_known_input *known_named(const imp_options *opt, const char *name, int list) {
  for (int i = 0; opt && i < opt->n_known; i++) {
    const imp_known_input *k = &opt->known[i];
    if (!k->is_list == !list && k->name && !strcmp(k->name, name)) return k;
  }
  return NULL;
}

const imp_known_input *imp_known_find(const imp_options *opt, const char *name) {
  const imp_known_input *k = known_named(opt, name, 0);
  if (k || !name) return k;
  for (int i = 0; opt && i < opt->n_known; i++) {
    const imp_known_input *l = &opt->known[i];
    size_t len = l->is_list && l->name ? strlen(l->name) : 0;
    if (!len || strncmp(name, l->name, len)) continue;
    if (!name[len]) { /* an optional holding a tensor */
      if (l->n_items == 1 && !l->items[0].is_list) return &l->items[0];
      continue;
    }
    if (name[len] != '.' || !name[len + 1]) continue;
    int64_t at = 0;
    const char *p = name + len + 1;
    for (; *p >= '0' && *p <= '9' && at < INT32_MAX; p++) at = at * 10 + (*p - '0');
    if (*p || (name[len + 1] == '0' && name[len + 2])) continue; /* not a plain index */
    if (l->n_items == 1 && l->items[0].is_list) l = &l->items[0]; /* an optional holding a sequence */
    if (at < l->n_items && !l->items[at].is_list) return &l->items[at];
  }
  return NULL;
}

/* The element type a sequence type declares (GIR_DTYPE_NONE: none or not a tensor). */
static gir_dtype declared_elem(const Onnx__TypeProto *tp) {
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE || !tp->sequence_type) return GIR_DTYPE_NONE;
  const Onnx__TypeProto *e = tp->sequence_type->elem_type;
  if (!e || e->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !e->tensor_type) return GIR_DTYPE_NONE;
  return gir_dtype_from_onnx(e->tensor_type->elem_type);
}

/* One tensor graph input made from a known value. */
static gir_value *known_tensor_input(imp_ctx *c, const char *name, const imp_known_input *k, gir_dtype declared) {
  if (k->dtype == GIR_STRING) {
    imp_fail(c, "input '%s': sequences and optionals of strings are not supported", name);
    return NULL;
  }
  if (declared != GIR_DTYPE_NONE && k->dtype != declared) {
    imp_fail(c, "input '%s': the model declares %s, the bound value is %s", name, gir_dtype_name(declared),
             gir_dtype_name(k->dtype));
    return NULL;
  }
  gir_value *v = gir_value_new(c->g, name, k->dtype, &k->shape);
  gir_graph_add_input(c->g, v);
  return v;
}

/* A sequence graph input bound to the known list l: one tensor input per element. */
static int sequence_input(imp_ctx *c, const char *name, const imp_known_input *l, gir_dtype declared) {
  gir_value **items = gir_arena_calloc(c->g->arena, (size_t)l->n_items + 1, sizeof *items);
  for (int32_t j = 0; j < l->n_items; j++) {
    if (l->items[j].is_list) return imp_fail(c, "input '%s': sequences of sequences are not supported", name);
    const char *en = gir_arena_printf(c->g->arena, "%s.%d", name, j);
    if (!(items[j] = known_tensor_input(c, en, &l->items[j], declared))) return -1;
  }
  imp_seq *s = imp_seq_new(c, items, l->n_items, declared);
  return s ? imp_scope_bind_item(c, name, (imp_item){.kind = IMP_SEQUENCE, .s = s}) : -1;
}

/* A graph input of sequence or optional type. Its length, or whether it holds a
 * value, is fixed at compile time by the value bound to it (--test-data). */
static int list_input(imp_ctx *c, const Onnx__ValueInfoProto *vi) {
  const Onnx__TypeProto *tp = vi->type;
  int opt = tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
  const Onnx__TypeProto *inner = opt ? (tp->optional_type ? tp->optional_type->elem_type : NULL) : tp;
  int inner_seq = inner && inner->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
  if (inner && !inner_seq && inner->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return imp_fail(c, "input '%s' is an optional of a map or an optional, which kiln does not support", vi->name);
  gir_dtype declared = inner_seq ? declared_elem(inner)
                       : inner && inner->tensor_type ? gir_dtype_from_onnx(inner->tensor_type->elem_type)
                                                     : GIR_DTYPE_NONE;
  const imp_known_input *k = known_named(c->opt, vi->name, 1);
  if (!k) k = known_named(c->opt, vi->name, 0);
  if (!k)
    return imp_fail(c, "input '%s' is %s, not a tensor: kiln needs %s at compile time (bind a value with --test-data)",
                    vi->name, opt ? "an optional" : "a sequence",
                    opt ? "whether it holds a value, and its shape" : "its length and the shapes of its elements");
  if (!opt) {
    if (!k->is_list) return imp_fail(c, "input '%s' is a sequence, but the value bound to it is a tensor", vi->name);
    return sequence_input(c, vi->name, k, declared);
  }
  if (k->is_list && k->n_items == 0) return imp_scope_bind_item(c, vi->name, (imp_item){.kind = IMP_ABSENT});
  if (k->is_list && k->n_items > 1)
    return imp_fail(c, "input '%s' is an optional, but the value bound to it holds %d values", vi->name, k->n_items);
  const imp_known_input *content = k->is_list ? &k->items[0] : k;
  if (content->is_list != inner_seq && inner)
    return imp_fail(c, "input '%s' is an optional %s, but the value bound to it holds a %s", vi->name,
                    inner_seq ? "sequence" : "tensor", content->is_list ? "sequence" : "tensor");
  if (content->is_list) return sequence_input(c, vi->name, content, declared);
  gir_value *v = known_tensor_input(c, vi->name, content, declared);
  return v ? imp_scope_bind(c, vi->name, v) : -1;
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
    int kind = vi->type ? (int)vi->type->value_case : 0;
    if (kind == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE || kind == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
      if (list_input(c, vi) < 0) return -1;
      continue;
    }
    gir_dtype dt;
    gir_shape s = {0};
    if (imp_type_to_shape(c, vi, &dt, &s) < 0) return -1;
    int64_t sb = 0;
    if (dt == GIR_STRING) { /* uint8 slots along a last axis (README "String tensors") */
      if (s.rank >= GIR_MAX_RANK)
        return imp_fail(c, "input '%s' is a string tensor of rank %d; kiln takes them up to rank %d", vi->name, s.rank,
                        GIR_MAX_RANK - 1);
      sb = imp_string_bytes(c);
      s.dims[s.rank++] = sb, dt = GIR_U8;
      gir_err e = {{0}};
      if (gir_shape_numel(&s, &e) < 0) return imp_fail(c, "input '%s': %s", vi->name, e.msg);
    }
    gir_value *v = gir_value_new(c->g, vi->name, dt, &s);
    v->string_bytes = (int32_t)sb;
    if (top_level) gir_graph_add_input(c->g, v);
    if (imp_scope_bind(c, vi->name, v) < 0) return -1;
  }
  if (top_level ? convert_top_nodes(c, gp) < 0
                : imp_convert_nodes(c, (Onnx__NodeProto *const *)gp->node, gp->n_node) < 0)
    return -1;
  if (!top_level) return 0;
  if (gp->n_output == 0) return imp_fail(c, "the graph has no outputs");
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    if (!vi || !vi->name || !vi->name[0]) return imp_fail(c, "graph output %zu has no name", i);
    imp_item it;
    imp_kind k = imp_scope_find(c, vi->name, &it);
    if (k == IMP_NOT_FOUND) return imp_fail(c, "graph output '%s' is never produced", vi->name);
    if (k == IMP_ABSENT) continue; /* an absent optional: no tensor */
    if (k == IMP_TENSOR && !it.v) continue; /* poisoned: reported as unsupported */
    c->origin = gir_arena_printf(c->g->arena, "graph output '%s'", vi->name);
    /* a sequence: its elements are the outputs NAME.0, NAME.1, … (importer.h) */
    int32_t cnt = k == IMP_SEQUENCE ? it.s->n : 1;
    for (int32_t j = 0; j < cnt; j++) {
      gir_value *v = k == IMP_SEQUENCE ? it.s->items[j] : it.v;
      const char *name = k == IMP_SEQUENCE ? gir_arena_printf(c->g->arena, "%s.%d", vi->name, j) : vi->name;
      gir_value *o = named_output(c, v, name);
      if (!o) return -1;
      gir_graph_add_output(c->g, o);
    }
  }
  return 0;
}
