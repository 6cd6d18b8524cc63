/* ops_control.c — ONNX If, Loop and Scan (every opset: 1/8 to 25) where the
 * control flow is static → straight-line canonical ops.
 *
 * kiln's graph has no control flow: shapes are static and every node runs. So a
 * subgraph is converted in place, once per use, by the same node loop as the main
 * graph (imp_convert_nodes): a scope pushed on top of the current one binds the
 * body's formal inputs and initializers, and name lookups that miss it fall
 * through to the enclosing scopes, which is how ONNX lets a body read outer
 * values. Each copy's values are renamed "loop[3]/name" or "if/then_branch/name"
 * so that dumps stay readable; the scopes make the ONNX names themselves collide
 * harmlessly. Body initializers become constants once per node, for all copies.
 *
 *   If: a condition that is a constant (a literal or something folded from
 *   literals; a graph input is not a constant here even when its value is known)
 *   inlines the branch it takes. Otherwise both branches are inlined, each node
 *   guarded by its branch (gir_guard: the runtime runs only the taken branch's
 *   kernels), and each output is where(cond, then, else), which needs the two
 *   outputs to agree in element type and shape. A branch that cannot be built
 *   for the bound shapes (its error) becomes a trap node per output: if that
 *   branch is ever taken, the run fails with the reason, naming the If.
 *
 *   Loop: unrolled. Each iteration binds the iteration number as a constant, so
 *   the body's index arithmetic folds. A trip count M and a condition known at
 *   compile time (constants, or known inputs like a Reshape's shape) end the
 *   unrolling where the loop ends. With M or the condition computed at run time,
 *   iteration t is built under a guard (gir_guard) on active_t, which the runtime
 *   tests before the iteration's kernels: the loop costs the iterations it runs.
 *   The carried values stop changing once the loop has ended, v = where(active_t,
 *   v_body, v), and active_{t+1} = where(active_t, cond_body and t+1 < M, false).
 *   Without a trip count known at compile time, --max-trips iterations (default
 *   IMP_DEFAULT_MAX_TRIPS) are built, and a trap fails the run if the loop would
 *   go on. Scan outputs need a static iteration count, so they require M and the
 *   condition known at compile time. Scan outputs are stacked along a new axis 0.
 *   Without the cond input the first iteration runs and the body's condition is
 *   obeyed from then on, as onnxruntime does (the operator's pseudo-code says it
 *   is ignored; the reference implementation runs no iteration at all).
 *
 *   Scan (opset 9+): the sequence length is the static length of the scan axis;
 *   iteration t reads element t (reverse direction: S-1-t) of each scan input,
 *   and each scan output stacks its per-iteration values along its output axis,
 *   in iteration order or reversed (scan_output_directions = 1, prepending).
 *   Scan-8 is batched (axis 0 of every input and output) with the scan axis 1 and
 *   an optional sequence_lens: each batch entry is unrolled on its own for its
 *   length (which must be known at compile time), and its scan outputs are padded
 *   with zeros up to the maximum length (ONNX leaves those values undefined).
 *
 * Unrolling is bounded: one Loop or Scan may unroll at most CTRL_MAX_UNROLLED
 * (iterations × the body's nodes and outputs: outputs count because each one is
 * bound and stacked per iteration), and no unrolling starts an iteration once the
 * graph holds CTRL_MAX_GRAPH_VALUES values, which bounds nested loops as a whole.
 * Both refusals are reported as unsupported nodes.
 *
 * Sequences and optionals (ops_sequence.c) flow through bodies as importer items:
 * a Loop may carry a sequence that grows by one element per iteration, and an If
 * may yield one. With a condition computed at run time, where() selects between
 * them element by element when they agree in length and element types and
 * shapes; otherwise the If needs its cond known at compile time (a graph input
 * bound with --test-data is), and the Loop refuses.
 *
 *   SequenceMap (opset 17): unrolled like Scan, one copy of the body per element
 *   of the first input; each sequence input gives the body its element t, each
 *   tensor input itself, and output o is the sequence of the copies' outputs o. */
#include <string.h>
#include "ops.h"

#define CTRL_MAX_UNROLLED (1 << 16)      /* iterations × body size for one Loop or Scan */
#define CTRL_MAX_GRAPH_VALUES (1 << 20)  /* no iteration starts in a graph this large */


static int wants_output(const imp_node *n, int i) { return i < n->n_out && n->out_names[i] && n->out_names[i][0]; }

static const Onnx__GraphProto *graph_attr(imp_ctx *c, const imp_node *n, const char *name) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  if (!a || !a->g) {
    imp_fail(c, "attribute %s (a graph) is missing", name);
    return NULL;
  }
  return a->g;
}

/* --- converting a body once --- */

/* Renames the values made since index first to "name[it]/value" (an iteration)
 * or "name/label/value" (a branch); generated names stay. */
static void rename_values(imp_ctx *c, int32_t first, const char *name, const char *label, int64_t it) {
  for (int32_t i = first; i < c->g->n_values; i++) {
    gir_value *v = c->g->values[i];
    if (!v->name || v->name[0] == '%') continue;
    if (it >= 0) v->name = gir_arena_printf(c->g->arena, "%s[%lld]/%s", name, (long long)it, v->name);
    else v->name = gir_arena_printf(c->g->arena, "%s/%s/%s", name, label, v->name);
  }
}

/* A subgraph and its initializers, made into constants once for all its copies. */
typedef struct subgraph {
  const Onnx__GraphProto *g;
  gir_value **consts;
} subgraph;

static int body_init(imp_ctx *c, const Onnx__GraphProto *g, subgraph *b) {
  b->g = g;
  if (g->n_sparse_initializer) return imp_fail(c, "the body holds sparse initializers, which are not supported");
  b->consts = gir_arena_calloc(c->g->arena, g->n_initializer + 1, sizeof *b->consts);
  for (size_t i = 0; i < g->n_initializer; i++) {
    const Onnx__TensorProto *t = g->initializer[i];
    if (!t || !t->name || !t->name[0]) return imp_fail(c, "body initializer %zu has no name", i);
    if (!(b->consts[i] = imp_tensor_to_const(c, t, t->name))) return gir_err_prefix(c->err, "body initializer");
  }
  return 0;
}

/* Converts the body once: its formal inputs bound to ins, its nodes converted in
 * a scope that sees the enclosing ones; outs[i] receives output i. Inputs and
 * outputs are items: tensors, sequences or absent optionals. This copy is
 * iteration `it` of node `name`, or (it < 0) its branch `label`: that names its
 * values and its errors. 0, -1 (error), -2 (the body holds unsupported ops,
 * already reported) or -3 (the graph is too large to unroll more). */
static int run_items(imp_ctx *c, const subgraph *b, const char *name, const char *label, int64_t it,
                     const imp_item *ins, size_t n_ins, imp_item *outs) {
  const Onnx__GraphProto *body = b->g;
  if (c->depth >= IMP_MAX_SUBGRAPH_DEPTH) return imp_fail(c, "subgraphs nest deeper than %d", IMP_MAX_SUBGRAPH_DEPTH);
  if (c->g->n_values >= CTRL_MAX_GRAPH_VALUES) return -3;
  int32_t first = c->g->n_values;
  const char *origin = c->origin;
  imp_scope *saved = c->scope;
  if (!imp_scope_push(c)) return imp_fail(c, "out of memory");
  int rc = 0;
  if (body->n_input != n_ins) rc = imp_fail(c, "the body has %zu inputs, expected %zu", body->n_input, n_ins);
  for (size_t i = 0; i < body->n_initializer && rc == 0; i++)
    rc = imp_scope_bind(c, body->initializer[i]->name, b->consts[i]);
  for (size_t i = 0; i < n_ins && rc == 0; i++) {
    const Onnx__ValueInfoProto *vi = body->input[i];
    if (!vi || !vi->name || !vi->name[0]) rc = imp_fail(c, "body input %zu has no name", i);
    else rc = imp_scope_bind_item(c, vi->name, ins[i]);
  }
  c->depth++;
  if (rc == 0) rc = imp_convert_nodes(c, (Onnx__NodeProto *const *)body->node, body->n_node);
  c->depth--;
  int poisoned = 0;
  for (size_t i = 0; i < body->n_output && rc == 0; i++) {
    const Onnx__ValueInfoProto *vi = body->output[i];
    imp_item o = {0};
    if (!vi || !vi->name || imp_scope_find(c, vi->name, &o) == IMP_NOT_FOUND)
      rc = imp_fail(c, "body output '%s' is never produced", vi && vi->name ? vi->name : "?");
    else if (o.kind == IMP_TENSOR && !o.v)
      poisoned = 1;
    outs[i] = o;
  }
  c->scope = saved;
  c->origin = origin;
  rename_values(c, first, name, label, it);
  if (rc < 0) {
    if (!c->err->msg[0]) return imp_fail(c, "%s: conversion failed", label);
    if (it >= 0) return gir_err_prefix(c->err, "iteration %lld", (long long)it);
    return gir_err_prefix(c->err, "%s", label);
  }
  return poisoned ? -2 : 0;
}

/* run_items for a body of tensors only: outs[i] receives output i. */
static int run_body(imp_ctx *c, const subgraph *b, const char *name, const char *label, int64_t it,
                    gir_value *const *ins, size_t n_ins, gir_value **outs) {
  imp_item *ii = gir_arena_calloc(c->g->arena, n_ins + 1, sizeof *ii);
  imp_item *oi = gir_arena_calloc(c->g->arena, b->g->n_output + 1, sizeof *oi);
  for (size_t i = 0; i < n_ins; i++) ii[i] = (imp_item){.kind = IMP_TENSOR, .v = ins[i]};
  int rc = run_items(c, b, name, label, it, ii, n_ins, oi);
  for (size_t i = 0; i < b->g->n_output && rc >= 0; i++) {
    if (oi[i].kind != IMP_TENSOR) {
      const char *on = b->g->output[i] && b->g->output[i]->name ? b->g->output[i]->name : "?";
      return imp_fail(c, "body output '%s' is %s, where a tensor is needed", on,
                      oi[i].kind == IMP_SEQUENCE ? "a sequence" : "an absent optional");
    }
    outs[i] = oi[i].v;
  }
  return rc;
}

static int too_large(imp_ctx *c, const imp_node *n) {
  return imp_unsupported_node(c, n, "unrolling stopped: the graph holds more than %d values", CTRL_MAX_GRAPH_VALUES);
}

/* Inlines graph g once for node n (FlexAttention's score_mod…): ins bound to its
 * formal inputs, outs[g->n_output] receives its outputs, and its values are named
 * "<node>/<label>/<value>". 0, -1 (error) or -2 (unsupported ops inside, reported). */
int imp_inline_graph(imp_ctx *c, const imp_node *n, const Onnx__GraphProto *g, const char *label,
                     gir_value *const *ins, size_t n_ins, gir_value **outs) {
  subgraph b;
  if (body_init(c, g, &b) < 0) return -1;
  int rc = run_body(c, &b, n->name, label, -1, ins, n_ins, outs);
  return rc == -3 ? too_large(c, n) : rc;
}

/* Binds output i to v. A value this node made (index >= first) takes the output's
 * name, so that the model's names survive and no renamed copy is needed. */
static int set_out(imp_ctx *c, imp_node *n, int i, gir_value *v, int32_t first) {
  if (v && wants_output(n, i) && v->id >= first && !v->is_input)
    v->name = gir_arena_strdup(c->g->arena, n->out_names[i]);
  return imp_set_output(c, n, i, v);
}

/* What one iteration of g costs: its nodes and outputs (at least 1). */
static int64_t body_size(const Onnx__GraphProto *g) { return (int64_t)(g->n_node + g->n_output) + 1; }

static int over_limit(imp_ctx *c, const imp_node *n, int64_t iters, int64_t size) {
  return imp_unsupported_node(c, n, "%lld iterations of a body of %lld nodes and outputs exceed the unrolling limit "
                                    "(%d)", (long long)iters, (long long)size - 1, CTRL_MAX_UNROLLED);
}

/* --- shared builders --- */

/* x with a unit axis inserted at axis. */
static gir_value *unsqueeze(imp_ctx *c, gir_value *x, int64_t axis) {
  if (!x) return NULL;
  if (x->shape.rank >= GIR_MAX_RANK) {
    imp_fail(c, "stacking a rank-%d value exceeds the rank limit", x->shape.rank);
    return NULL;
  }
  int64_t dims[GIR_MAX_RANK];
  for (int i = 0, k = 0; i <= x->shape.rank; i++) dims[i] = i == axis ? 1 : x->shape.dims[k++];
  return imp_reshape(c, x, x->shape.rank + 1, dims);
}

/* x without its axis `axis` (which has size 1). */
static gir_value *squeeze(imp_ctx *c, gir_value *x, int64_t axis) {
  if (!x) return NULL;
  int64_t dims[GIR_MAX_RANK];
  for (int i = 0, k = 0; i < x->shape.rank; i++)
    if (i != axis) dims[k++] = x->shape.dims[i];
  return imp_reshape(c, x, x->shape.rank - 1, dims);
}

/* Element t of x along axis, without that axis. */
static gir_value *element(imp_ctx *c, gir_value *x, int64_t axis, int64_t t) {
  return squeeze(c, imp_slice_axis(c, x, (int)axis, t, 1, 1), axis);
}

/* The per-iteration values xs[0..cnt) stacked along a new axis (reversed: last first). */
static gir_value *stack(imp_ctx *c, gir_value *const *xs, int64_t cnt, int64_t axis, int reversed) {
  gir_value **u = gir_arena_calloc(c->g->arena, (size_t)cnt + 1, sizeof *u);
  for (int64_t i = 0; i < cnt; i++) {
    gir_value *x = xs[reversed ? cnt - 1 - i : i];
    if (x->shape.rank != xs[0]->shape.rank || x->dtype != xs[0]->dtype || !gir_shape_equal(&x->shape, &xs[0]->shape)) {
      char a[160], b[160];
      imp_fail(c, "a scan output changes across iterations: %s %s, then %s %s", gir_dtype_name(xs[0]->dtype),
               gir_shape_str(&xs[0]->shape, a, sizeof a), gir_dtype_name(x->dtype),
               gir_shape_str(&x->shape, b, sizeof b));
      return NULL;
    }
    if (!(u[i] = unsqueeze(c, x, axis))) return NULL;
  }
  return imp_concat_many(c, u, cnt, axis);
}

/* The static type of a body output (every dim a number), or -1 without error. */
static int static_type(const Onnx__ValueInfoProto *vi, gir_dtype *dt, gir_shape *s) {
  const Onnx__TypeProto *tp = vi ? vi->type : NULL;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return -1;
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  *dt = gir_dtype_from_onnx(tt->elem_type);
  if (*dt == GIR_DTYPE_NONE || !gir_dtype_first_class(*dt) || !tt->shape || tt->shape->n_dim >= GIR_MAX_RANK) return -1;
  s->rank = (int32_t)tt->shape->n_dim;
  for (int i = 0; i < s->rank; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    if (!d || d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || d->dim_value < 0) return -1;
    s->dims[i] = d->dim_value;
  }
  return 0;
}

/* A scan output of zero iterations: empty along axis, the element shape taken from
 * the body's declared output type. */
static gir_value *empty_stack(imp_ctx *c, const imp_node *n, const Onnx__ValueInfoProto *vi, int64_t axis, int *rc) {
  gir_dtype dt;
  gir_shape s;
  if (static_type(vi, &dt, &s) < 0 || axis > s.rank) {
    *rc = imp_unsupported_node(c, n, "zero iterations, and the body does not declare the static shape of scan output "
                                     "'%s'", vi && vi->name ? vi->name : "?");
    return NULL;
  }
  for (int i = s.rank; i > axis; i--) s.dims[i] = s.dims[i - 1];
  s.dims[axis] = 0;
  s.rank++;
  return imp_broadcast_to(c, imp_scalar(c, dt, 0.0), &s);
}

/* --- items: sequences and optionals through If and Loop --- */

/* Binds output i to an item; a tensor as set_out does. */
static int set_out_item(imp_ctx *c, imp_node *n, int i, imp_item it, int32_t first) {
  return it.kind == IMP_TENSOR ? set_out(c, n, i, it.v, first) : imp_set_output_item(c, n, i, it);
}

static int same_type(const gir_value *a, const gir_value *b) {
  return a->dtype == b->dtype && a->string_bytes == b->string_bytes && gir_shape_equal(&a->shape, &b->shape);
}

/* Whether where(sel, a, b) can choose between two items at run time: tensors of
 * one type and shape, sequences of one length whose elements are such tensors,
 * or two absent optionals. */
static int selectable(imp_item a, imp_item b) {
  if (a.kind != b.kind) return 0;
  if (a.kind == IMP_TENSOR) return a.v == b.v || same_type(a.v, b.v);
  if (a.kind != IMP_SEQUENCE) return 1;
  if (a.s->n != b.s->n) return 0;
  for (int32_t k = 0; k < a.s->n; k++)
    if (a.s->items[k] != b.s->items[k] && !same_type(a.s->items[k], b.s->items[k])) return 0;
  return 1;
}

/* where(sel, a, b) of two selectable items, element by element for sequences. */
static imp_item select_item(imp_ctx *c, gir_value *sel, imp_item a, imp_item b) {
  if (a.kind == IMP_TENSOR) {
    gir_value *v = a.v == b.v ? a.v : imp_where(c, sel, a.v, b.v);
    if (v && v != a.v) v->string_bytes = a.v->string_bytes; /* string slots select as bytes do */
    return (imp_item){.kind = IMP_TENSOR, .v = v};
  }
  if (a.kind != IMP_SEQUENCE || a.s == b.s) return a;
  gir_value **items = gir_arena_calloc(c->g->arena, (size_t)a.s->n + 1, sizeof *items);
  for (int32_t k = 0; k < a.s->n; k++)
    items[k] = a.s->items[k] == b.s->items[k] ? a.s->items[k] : imp_where(c, sel, a.s->items[k], b.s->items[k]);
  return (imp_item){.kind = IMP_SEQUENCE, .s = imp_seq_new(c, items, a.s->n, a.s->elem)};
}

static const char *item_kind(imp_item it) {
  return it.kind == IMP_SEQUENCE ? "a sequence" : it.kind == IMP_ABSENT ? "an absent optional" : "a tensor";
}

/* --- If --- */

/* The taken branch alone, when cond is known at compile time: its nodes run
 * where the If does. */
static int if_taken(imp_ctx *c, imp_node *n, const Onnx__GraphProto *br, int then, imp_item *outs, int32_t first) {
  subgraph b;
  if (body_init(c, br, &b) < 0) return -1;
  int rc = run_items(c, &b, n->name, then ? "then_branch" : "else_branch", -1, NULL, 0, outs);
  if (rc == -3) return too_large(c, n);
  if (rc < 0) return rc;
  for (int i = 0; i < n->n_out; i++)
    if (set_out_item(c, n, i, outs[i], first) < 0) return -1;
  return 0;
}

/* cond's value when the compiler knows it (a constant, or computed from graph
 * inputs bound with --test-data): 1 or 0; -1 unknown (no error left behind). */
static int if_known(imp_ctx *c, gir_value *cond) {
  const void *d = cond->data ? cond->data : imp_const_data(c, cond, "input 'cond'");
  if (!d) c->err->msg[0] = 0;
  return d ? *(const uint8_t *)d != 0 : -1;
}

int imp_cv_If(imp_ctx *c, imp_node *n) {
  int32_t first = c->g->n_values;
  const Onnx__GraphProto *tb = graph_attr(c, n, "then_branch"), *eb = tb ? graph_attr(c, n, "else_branch") : NULL;
  gir_value *cond = n->n_in > 0 ? n->in[0] : NULL;
  if (!eb) return -1;
  if (!cond) return imp_fail(c, "needs input cond");
  if (cond->dtype != GIR_BOOL || gir_value_numel(cond) != 1)
    return imp_fail(c, "cond must be a bool tensor of one element, got %s", gir_dtype_name(cond->dtype));
  if (tb->n_output != eb->n_output)
    return imp_fail(c, "then_branch has %zu outputs, else_branch %zu", tb->n_output, eb->n_output);
  if ((size_t)n->n_out > tb->n_output)
    return imp_fail(c, "%d outputs, but the branches have %zu", n->n_out, tb->n_output);
  size_t k = tb->n_output;
  imp_item *outs = gir_arena_calloc(c->g->arena, 2 * k + 1, sizeof *outs);
  if (cond->data) return if_taken(c, n, *(const uint8_t *)cond->data ? tb : eb, *(const uint8_t *)cond->data != 0, outs, first);

  /* Both branches are built, each node guarded by its branch (gir_guard): the
   * runtime runs the taken branch's kernels only, and a where selects the output.
   * A branch that cannot be built for these shapes becomes a trap: taken, the run
   * fails with the reason. */
  subgraph tbb, ebb;
  if (body_init(c, tb, &tbb) < 0 || body_init(c, eb, &ebb) < 0) return -1;
  const gir_guard *outer = c->g->cur_guard;
  gir_value *sel = imp_scalar_of(c, cond);
  const gir_guard *guard[2];
  const char *why[2] = {NULL, NULL};
  for (int b = 0; b < 2; b++) {
    const char *label = b == 0 ? "then_branch" : "else_branch";
    guard[b] = gir_guard_new(c->g, sel, b == 0, outer, gir_arena_printf(c->g->arena, "If '%s' %s", n->name, label));
    c->g->cur_guard = guard[b];
    int rc = run_items(c, b == 0 ? &tbb : &ebb, n->name, label, -1, NULL, 0, outs + b * k);
    c->g->cur_guard = outer;
    if (rc == -3) return too_large(c, n);
    if (rc == -1 && c->err->msg[0]) { /* the reason, for the run-time error; go on */
      why[b] = gir_arena_strdup(c->g->arena, c->err->msg);
      c->err->msg[0] = 0;
    } else if (rc < 0)
      return rc;
  }
  if (why[0] && why[1]) return imp_fail(c, "neither branch can be built for these shapes: %s; %s", why[0], why[1]);

  /* Outputs are selected at run time. Tensors must agree in type and shape,
   * sequences and optionals in length and presence; where they do not, cond must
   * be known at compile time (computed from graph inputs bound with --test-data,
   * as AffineGrid's expanded form tests a dimension taken from its size input):
   * the taken branch is then all there is, built again where the If runs (the
   * guarded copies are left unused). */
  int differ = -1;
  for (int i = 0; i < n->n_out && differ < 0 && !why[0] && !why[1]; i++)
    if (wants_output(n, i) && !selectable(outs[i], outs[k + i])) differ = i;
  int bad = why[0] ? 0 : why[1] ? 1 : -1;
  for (int i = 0; i < n->n_out && bad >= 0 && differ < 0; i++)
    if (wants_output(n, i) && outs[(1 - bad) * k + i].kind != IMP_TENSOR) differ = i; /* a trap stands in for tensors only */
  if (differ >= 0 || bad >= 0) {
    int known = if_known(c, cond);
    if (known >= 0 && (bad < 0 || known != (bad == 0)))
      return if_taken(c, n, known ? tb : eb, known, outs, first);
  }
  if (differ >= 0) {
    imp_item a = outs[differ], b = outs[k + differ];
    if (bad >= 0)
      return imp_unsupported_node(c, n, "%s cannot be built for these shapes (%s), and output %d of the other branch "
                                        "is %s, which a run-time error cannot stand in for", guard[bad]->what, why[bad],
                                  differ, item_kind(outs[(1 - bad) * k + differ]));
    if (a.kind == IMP_TENSOR && b.kind == IMP_TENSOR) {
      char sa[160], sb[160];
      return imp_unsupported_node(c, n, "cond is computed at run time and output %d differs between the branches "
                                        "(then %s %s, else %s %s): only outputs of one type and shape can be "
                                        "selected",
                                  differ, gir_dtype_name(a.v->dtype), gir_shape_str(&a.v->shape, sa, sizeof sa),
                                  gir_dtype_name(b.v->dtype), gir_shape_str(&b.v->shape, sb, sizeof sb));
    }
    return imp_unsupported_node(c, n, "cond is computed at run time and output %d differs between the branches "
                                      "(then %s%s, else %s%s): which sequence or optional the If yields must be "
                                      "known at compile time", differ, item_kind(a),
                                a.kind == IMP_SEQUENCE ? gir_arena_printf(c->g->arena, " of %d", a.s->n) : "",
                                item_kind(b),
                                b.kind == IMP_SEQUENCE ? gir_arena_printf(c->g->arena, " of %d", b.s->n) : "");
  }
  if (bad >= 0) { /* one trap per output, in the bad branch */
    const char *msg = gir_arena_printf(c->g->arena, "%s was taken, but it cannot run for the compiled shapes: %s",
                                       guard[bad]->what, why[bad]);
    if (c->rep && !c->rep->n_trapped++)
      snprintf(c->rep->trapped, sizeof c->rep->trapped, "%s (%s)", guard[bad]->what, why[bad]);
    for (int i = 0; i < n->n_out; i++) {
      if (!wants_output(n, i)) continue;
      gir_value *t = imp_trap(c, guard[bad], outs[(1 - bad) * k + i].v, msg);
      if (!t) return -1;
      outs[bad * k + i] = (imp_item){.kind = IMP_TENSOR, .v = t};
    }
  }
  for (int i = 0; i < n->n_out; i++) {
    if (!wants_output(n, i)) continue;
    imp_item y = select_item(c, sel, outs[i], outs[k + i]);
    if (c->err->msg[0]) return -1;
    if (set_out_item(c, n, i, y, first) < 0) return -1;
  }
  return 0;
}

/* --- Loop --- */

/* 1 true, 0 false, -1 computed at run time (no error left behind). */
static int known_bool(imp_ctx *c, const gir_value *v) {
  if (!v) return -1;
  const void *d = imp_const_data(c, v, "the loop condition");
  if (!d) {
    c->err->msg[0] = 0;
    return -1;
  }
  return gir_load_f64(v->dtype, d, 0) != 0;
}

/* The most iterations a Loop with a run-time trip count or condition is built for. */
static int64_t max_trips(const imp_ctx *c) {
  return c->opt && c->opt->max_trips > 0 ? c->opt->max_trips : IMP_DEFAULT_MAX_TRIPS;
}

int imp_cv_Loop(imp_ctx *c, imp_node *n) {
  int32_t first = c->g->n_values;
  const Onnx__GraphProto *body = graph_attr(c, n, "body");
  if (!body) return -1;
  if (n->n_in < 2) return imp_fail(c, "needs inputs M and cond (either may be empty)");
  int64_t N = n->n_in - 2;
  if (body->n_input != (size_t)N + 2)
    return imp_fail(c, "the body has %zu inputs, expected %lld (iteration number, condition, %lld carried values)",
                    body->n_input, (long long)N + 2, (long long)N);
  if (body->n_output < (size_t)N + 1)
    return imp_fail(c, "the body has %zu outputs, expected at least %lld", body->n_output, (long long)N + 1);
  int64_t K = (int64_t)body->n_output - 1 - N;
  if (n->n_out > N + K) return imp_fail(c, "%d outputs, but the body yields %lld", n->n_out, (long long)(N + K));
  if (n->seq[0] || n->seq[1]) return imp_fail(c, "inputs M and cond must be tensors, not sequences");

  gir_value *M = n->in[0], *cond0 = n->in[1], *m_rt = NULL; /* m_rt: a trip count computed at run time */
  int64_t trips = -1; /* -1: no trip count known at compile time */
  int64_t size = body_size(body), max_iters = CTRL_MAX_UNROLLED / size, bound = max_trips(c);
  if (M) {
    int32_t cnt;
    int64_t *m = imp_const_ints(c, M, "input 'M'", &cnt);
    if (m) {
      if (cnt != 1) return imp_fail(c, "input 'M' must hold one value, has %d", cnt);
      trips = m[0] < 0 ? 0 : m[0];
    } else {
      c->err->msg[0] = 0;
      if (gir_value_numel(M) != 1 || M->dtype != GIR_I64) return imp_fail(c, "input 'M' must be one int64");
      if (K > 0) return imp_unsupported_node(c, n, "scan outputs with a trip count computed at run time");
      m_rt = imp_scalar_of(c, M);
    }
  }
  if (trips > max_iters) return over_limit(c, n, trips, size);
  if (bound > max_iters) bound = max_iters;

  /* cond_state: 1 known true, 0 known false, -1 run time (active holds it). With a
   * run-time trip count or condition, iteration t is built under a guard on active_t
   * (gir_guard: its kernels run only while the loop goes on) and the carried values
   * are selected, v = where(active_t, v_body, v); active_{t+1} = where(active_t,
   * cond_body && t+1 < M, false), computed where the Loop runs. Without a trip
   * count known at compile time, `bound` (--max-trips) iterations are built and a
   * trap fails the run if the loop would go on. */
  int cond_state = cond0 ? known_bool(c, cond0) : 1;
  gir_value *active = NULL;
  if (cond_state < 0 && (cond0->dtype != GIR_BOOL || gir_value_numel(cond0) != 1))
    return imp_fail(c, "cond must be a bool tensor of one element");
  if (cond_state < 0 && K > 0) return imp_unsupported_node(c, n, "scan outputs with a condition computed at run time");
  if (cond_state != 0 && (cond_state < 0 || m_rt)) {
    active = cond_state < 0 ? imp_scalar_of(c, cond0) : gir_const_scalar(c->g, GIR_BOOL, 1);
    if (m_rt)
      active = imp_binary(c, GIR_BINARY_AND, active, imp_binary(c, GIR_BINARY_LT, gir_const_scalar(c->g, GIR_I64, 0), m_rt));
  }
  int bounded = m_rt || (active && trips < 0); /* built for `bound` iterations, not for all */

  subgraph b;
  if (body_init(c, body, &b) < 0) return -1;
  /* carried values are items: a sequence may grow from one iteration to the next */
  imp_item *carried = gir_arena_calloc(c->g->arena, (size_t)N + 1, sizeof *carried);
  for (int64_t i = 0; i < N; i++) carried[i] = imp_input_item(n, (int)(2 + i));
  int64_t cap = trips >= 0 ? trips : bounded ? bound : max_iters;
  gir_value **scans = gir_arena_calloc(c->g->arena, (size_t)(K * (cap > 0 ? cap : 1)) + 1, sizeof *scans);
  imp_item *ins = gir_arena_calloc(c->g->arena, (size_t)N + 3, sizeof *ins);
  imp_item *outs = gir_arena_calloc(c->g->arena, body->n_output + 1, sizeof *outs);
  const gir_guard *outer = c->g->cur_guard;
  int64_t it = 0;
  for (; cond_state != 0; it++) {
    if (it == cap) {
      if (trips >= 0 || bounded) break;
      return imp_unsupported_node(c, n, "the condition is still true after %lld iterations of a body of %lld nodes "
                                        "and outputs (the unrolling limit is %d)", (long long)it, (long long)size - 1,
                                  CTRL_MAX_UNROLLED);
    }
    ins[0] = (imp_item){.kind = IMP_TENSOR, .v = gir_const_scalar(c->g, GIR_I64, (double)it)};
    ins[1] = (imp_item){.kind = IMP_TENSOR, .v = active ? active : gir_const_scalar(c->g, GIR_BOOL, 1)};
    for (int64_t i = 0; i < N; i++) ins[2 + i] = carried[i];
    const gir_guard *g_it = active ? gir_guard_new(c->g, active, 1, outer,
                                                   gir_arena_printf(c->g->arena, "Loop '%s' iteration %lld", n->name,
                                                                    (long long)it))
                                   : outer;
    c->g->cur_guard = g_it;
    int rc = run_items(c, &b, n->name, "body", it, ins, (size_t)N + 2, outs);
    c->g->cur_guard = outer;
    if (rc == -3) return too_large(c, n);
    if (rc < 0) return rc;
    for (int64_t i = 0; i < N; i++) {
      imp_item v = outs[1 + i];
      if (active) {
        if (!selectable(v, carried[i]))
          return imp_unsupported_node(c, n, "carried value %lld changes type, shape or length under a condition "
                                            "computed at run time", (long long)i);
        v = select_item(c, active, v, carried[i]);
        if (c->err->msg[0]) return -1;
      }
      carried[i] = v;
    }
    for (int64_t j = 0; j < K; j++) {
      if (outs[1 + N + j].kind != IMP_TENSOR)
        return imp_unsupported_node(c, n, "scan output %lld is %s; scan outputs are tensors", (long long)j,
                                    item_kind(outs[1 + N + j]));
      scans[j * cap + it] = outs[1 + N + j].v;
    }
    gir_value *co = outs[0].kind == IMP_TENSOR ? outs[0].v : NULL;
    if (!co || co->dtype != GIR_BOOL || gir_value_numel(co) != 1)
      return imp_fail(c, "iteration %lld: the body's condition must be a bool tensor of one element", (long long)it);
    if (!active) {
      cond_state = known_bool(c, co);
      if (cond_state >= 0) continue;
      if (K > 0) return imp_unsupported_node(c, n, "scan outputs with a condition computed at run time");
      if (trips < 0) { /* from here on, `bound` more iterations at most */
        bounded = 1;
        cap = it + 1 + bound < max_iters ? it + 1 + bound : max_iters;
      }
      active = gir_const_scalar(c->g, GIR_BOOL, 1);
    }
    gir_value *go_on = imp_scalar_of(c, co); /* the body's condition, and t+1 < M: computed in iteration t's branch */
    if (m_rt) {
      gir_value *more = imp_binary(c, GIR_BINARY_LT, gir_const_scalar(c->g, GIR_I64, (double)(it + 1)), m_rt);
      c->g->cur_guard = g_it;
      go_on = imp_binary(c, GIR_BINARY_AND, go_on, more);
      c->g->cur_guard = outer;
    }
    active = g_it != outer ? imp_where(c, active, go_on, gir_const_scalar(c->g, GIR_BOOL, 0)) : go_on;
  }
  if (c->err->msg[0]) return -1;
  if (bounded && active) { /* the loop would go on: taken, a trap fails the run */
    const char *msg = gir_arena_printf(c->g->arena, "Loop '%s' needs more than the %lld iterations it was built for "
                                                    "(kiln compile --max-trips N builds more)", n->name, (long long)it);
    const gir_guard *past = gir_guard_new(c->g, active, 1, outer,
                                          gir_arena_printf(c->g->arena, "Loop '%s' past its bound", n->name));
    for (int64_t i = 0; i < N; i++) {
      if (carried[i].kind != IMP_TENSOR) continue; /* a sequence keeps its last value (its length is static) */
      gir_value *t = imp_trap(c, past, carried[i].v, msg);
      if (!t || !(carried[i].v = imp_where(c, active, t, carried[i].v))) return -1;
    }
  }
  for (int64_t i = 0; i < N; i++)
    if (set_out_item(c, n, (int)i, carried[i], first) < 0) return -1;
  for (int64_t j = 0; j < K; j++) {
    if (!wants_output(n, (int)(N + j))) continue;
    int rc = 0;
    gir_value *y = it ? stack(c, scans + j * cap, it, 0, 0) : empty_stack(c, n, body->output[1 + N + j], 0, &rc);
    if (rc) return rc;
    if (!y || set_out(c, n, (int)(N + j), y, first) < 0) return -1;
  }
  return 0;
}

/* --- SequenceMap (opset 17) --- */

/* Unrolled per element: iteration t binds element t of each sequence input and
 * every tensor input as it is; output o collects the body's output o. */
int imp_cv_SequenceMap(imp_ctx *c, imp_node *n) {
  if (n->opset < 17) return imp_fail(c, "SequenceMap exists from opset 17 on");
  const Onnx__GraphProto *body = graph_attr(c, n, "body");
  if (!body) return -1;
  if (n->n_in < 1 || !n->seq[0]) return imp_fail(c, "input 'input_sequence' must be a sequence");
  if (body->n_input != (size_t)n->n_in)
    return imp_fail(c, "the body has %zu inputs, the node %d", body->n_input, n->n_in);
  if (body->n_output < (size_t)n->n_out)
    return imp_fail(c, "%d outputs, but the body yields %zu", n->n_out, body->n_output);
  int32_t len = n->seq[0]->n;
  for (int j = 1; j < n->n_in; j++) {
    if (!n->in[j] && !n->seq[j]) return imp_fail(c, "input %d is missing", j);
    if (n->seq[j] && n->seq[j]->n != len)
      return imp_fail(c, "input %d is a sequence of %d, input 0 one of %d", j, n->seq[j]->n, len);
  }
  int64_t size = body_size(body);
  if (len > CTRL_MAX_UNROLLED / size) return over_limit(c, n, len, size);
  subgraph b;
  if (body_init(c, body, &b) < 0) return -1;
  size_t K = body->n_output;
  gir_value **per = gir_arena_calloc(c->g->arena, K * (size_t)len + 1, sizeof *per); /* [K][len] */
  gir_value **ins = gir_arena_calloc(c->g->arena, (size_t)n->n_in + 1, sizeof *ins);
  gir_value **outs = gir_arena_calloc(c->g->arena, K + 1, sizeof *outs);
  for (int32_t t = 0; t < len; t++) {
    for (int j = 0; j < n->n_in; j++) ins[j] = n->seq[j] ? n->seq[j]->items[t] : n->in[j];
    int rc = run_body(c, &b, n->name, "body", t, ins, (size_t)n->n_in, outs);
    if (rc == -3) return too_large(c, n);
    if (rc < 0) return rc;
    for (size_t o = 0; o < K; o++) per[o * (size_t)len + (size_t)t] = outs[o];
  }
  for (int o = 0; o < n->n_out; o++) {
    if (!wants_output(n, o)) continue;
    const Onnx__TypeProto *tp = body->output[o] ? body->output[o]->type : NULL;
    gir_dtype dt = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type
                       ? gir_dtype_from_onnx(tp->tensor_type->elem_type) : GIR_DTYPE_NONE;
    if (imp_set_output_seq(c, n, o, imp_seq_new(c, per + (size_t)o * (size_t)len, len, dt)) < 0) return -1;
  }
  return 0;
}

/* --- Scan --- */

typedef struct scan {
  const Onnx__GraphProto *body;
  subgraph b;       /* the body with its initializers made constants */
  int64_t N, M, K;  /* states, scan inputs, scan outputs */
  int64_t *in_axis, *in_dir, *out_axis, *out_dir;
} scan;

/* Runs the scan over `len` iterations on unbatched values: states[N] in (final
 * values out), xs[M] the scan inputs (axis in_axis), per[K][len] receives the
 * scan output elements in iteration order. tag names the copies. */
static int scan_run(imp_ctx *c, const imp_node *n, const scan *s, const char *tag, int64_t len, gir_value **states,
                    gir_value *const *xs, gir_value **per) {
  gir_value **ins = gir_arena_calloc(c->g->arena, (size_t)(s->N + s->M) + 1, sizeof *ins);
  gir_value **outs = gir_arena_calloc(c->g->arena, s->body->n_output + 1, sizeof *outs);
  for (int64_t t = 0; t < len; t++) {
    for (int64_t i = 0; i < s->N; i++) ins[i] = states[i];
    for (int64_t j = 0; j < s->M; j++) {
      int64_t at = s->in_dir[j] ? len - 1 - t : t;
      if (!(ins[s->N + j] = element(c, xs[j], s->in_axis[j], at))) return -1;
    }
    int rc = run_body(c, &s->b, tag, "body", t, ins, (size_t)(s->N + s->M), outs);
    if (rc == -3) return too_large(c, n);
    if (rc < 0) return rc;
    for (int64_t i = 0; i < s->N; i++) states[i] = outs[i];
    for (int64_t k = 0; k < s->K; k++) per[k * len + t] = outs[s->N + k];
  }
  return 0;
}

/* Reads an axis or direction list of count entries (absent: zeros). */
static int64_t *flags(imp_ctx *c, const imp_node *n, const char *name, int64_t count, int is_direction) {
  int64_t *v;
  int32_t got = imp_attr_ints(c, n, name, &v);
  if (c->err->msg[0]) return NULL;
  if (got < 0) return gir_arena_calloc(c->g->arena, (size_t)count + 1, sizeof *v);
  if (got != count) {
    imp_fail(c, "attribute %s has %d values, expected %lld", name, got, (long long)count);
    return NULL;
  }
  for (int64_t i = 0; i < count; i++)
    if (is_direction && v[i] != 0 && v[i] != 1) {
      imp_fail(c, "attribute %s must hold 0 or 1, got %lld", name, (long long)v[i]);
      return NULL;
    }
  return v;
}

static int parse_scan(imp_ctx *c, imp_node *n, int batched, scan *s) {
  s->body = graph_attr(c, n, "body");
  if (!s->body) return -1;
  const Onnx__AttributeProto *m = imp_attr(n, "num_scan_inputs");
  if (!m) return imp_fail(c, "attribute num_scan_inputs is missing");
  s->M = imp_attr_int(n, "num_scan_inputs", 0);
  int64_t avail = n->n_in - batched;
  if (s->M < 1 || s->M > avail)
    return imp_fail(c, "num_scan_inputs is %lld, with %lld inputs", (long long)s->M, (long long)avail);
  s->N = avail - s->M;
  if (s->body->n_input != (size_t)(s->N + s->M))
    return imp_fail(c, "the body has %zu inputs, expected %lld", s->body->n_input, (long long)(s->N + s->M));
  if (s->body->n_output < (size_t)s->N)
    return imp_fail(c, "the body has %zu outputs, fewer than the %lld states", s->body->n_output, (long long)s->N);
  s->K = (int64_t)s->body->n_output - s->N;
  if (n->n_out > s->N + s->K)
    return imp_fail(c, "%d outputs, but the body yields %lld", n->n_out, (long long)(s->N + s->K));
  for (int64_t i = 0; i < s->N + s->M; i++)
    if (!n->in[batched + i]) return imp_fail(c, "input %lld is missing", (long long)(batched + i));
  if (batched) {
    s->in_dir = flags(c, n, "directions", s->M, 1);
    s->in_axis = gir_arena_calloc(c->g->arena, (size_t)s->M + 1, sizeof *s->in_axis); /* axis 1 of the batched input */
    s->out_axis = gir_arena_calloc(c->g->arena, (size_t)s->K + 1, sizeof *s->out_axis);
    s->out_dir = gir_arena_calloc(c->g->arena, (size_t)s->K + 1, sizeof *s->out_dir);
  } else {
    s->in_dir = flags(c, n, "scan_input_directions", s->M, 1);
    s->in_axis = flags(c, n, "scan_input_axes", s->M, 0);
    s->out_dir = flags(c, n, "scan_output_directions", s->K, 1);
    s->out_axis = flags(c, n, "scan_output_axes", s->K, 0);
  }
  if (!s->in_dir || !s->in_axis || !s->out_dir || !s->out_axis) return -1;
  return body_init(c, s->body, &s->b);
}

/* Scan 9 and later. */
static int scan9(imp_ctx *c, imp_node *n) {
  int32_t first = c->g->n_values;
  scan s = {0};
  if (parse_scan(c, n, 0, &s) < 0) return -1;
  gir_value **states = gir_arena_calloc(c->g->arena, (size_t)s.N + 1, sizeof *states);
  gir_value **xs = n->in + s.N;
  for (int64_t i = 0; i < s.N; i++) states[i] = n->in[i];
  int64_t len = -1;
  for (int64_t j = 0; j < s.M; j++) {
    int32_t r = xs[j]->shape.rank;
    if (r < 1) return imp_fail(c, "scan input %lld is a scalar", (long long)j);
    if (imp_axis(c, s.in_axis[j], r, &s.in_axis[j]) < 0) return -1;
    int64_t l = xs[j]->shape.dims[s.in_axis[j]];
    if (len >= 0 && l != len)
      return imp_fail(c, "scan inputs differ in sequence length (%lld and %lld)", (long long)len, (long long)l);
    len = l;
  }
  int64_t size = body_size(s.body);
  if (len > CTRL_MAX_UNROLLED / size) return over_limit(c, n, len, size);
  gir_value **per = gir_arena_calloc(c->g->arena, (size_t)(s.K * len) + 1, sizeof *per);
  int rc = scan_run(c, n, &s, n->name, len, states, xs, per);
  if (rc < 0) return rc;
  for (int64_t i = 0; i < s.N; i++)
    if (set_out(c, n, (int)i, states[i], first) < 0) return -1;
  for (int64_t k = 0; k < s.K; k++) {
    if (!wants_output(n, (int)(s.N + k))) continue;
    const Onnx__ValueInfoProto *vi = s.body->output[s.N + k];
    int32_t r = len ? per[k * len]->shape.rank + 1 : 0;
    gir_dtype dt;
    gir_shape es;
    if (!len) r = static_type(vi, &dt, &es) < 0 ? 1 : es.rank + 1;
    int64_t axis;
    if (imp_axis(c, s.out_axis[k], r, &axis) < 0) return -1;
    gir_value *y = len ? stack(c, per + k * len, len, axis, (int)s.out_dir[k]) : empty_stack(c, n, vi, axis, &rc);
    if (rc) return rc;
    if (!y || set_out(c, n, (int)(s.N + k), y, first) < 0) return -1;
  }
  return 0;
}

/* Scan 8: batch axis 0 everywhere, scan axis 1, optional sequence_lens. */
static int scan8(imp_ctx *c, imp_node *n) {
  int32_t first = c->g->n_values;
  scan s = {0};
  if (parse_scan(c, n, 1, &s) < 0) return -1;
  gir_value **init = n->in + 1, **xs = n->in + 1 + s.N;
  int64_t B = -1, S = -1;
  for (int64_t i = 0; i < s.N + s.M; i++) {
    gir_value *v = init[i];
    int is_scan = i >= s.N;
    if (v->shape.rank < (is_scan ? 2 : 1))
      return imp_fail(c, "input %lld must have a batch axis%s", (long long)(1 + i), is_scan ? " and a scan axis" : "");
    if (B >= 0 && v->shape.dims[0] != B) return imp_fail(c, "inputs differ in batch size");
    B = v->shape.dims[0];
    if (is_scan) {
      if (S >= 0 && v->shape.dims[1] != S) return imp_fail(c, "scan inputs differ in sequence length");
      S = v->shape.dims[1];
    }
  }
  int64_t *lens = NULL;
  if (n->in[0]) {
    int32_t cnt;
    lens = imp_const_ints(c, n->in[0], "input 'sequence_lens'", &cnt);
    if (!lens) {
      c->err->msg[0] = 0;
      return imp_unsupported_node(c, n, "sequence_lens is computed at run time");
    }
    if (cnt != B) return imp_fail(c, "sequence_lens has %d values for batch size %lld", cnt, (long long)B);
    for (int64_t b = 0; b < B; b++)
      if (lens[b] < 0 || lens[b] > S)
        return imp_fail(c, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b, (long long)lens[b],
                        (long long)S);
  }
  int64_t size = body_size(s.body);
  if (B == 0) return imp_unsupported_node(c, n, "batch size 0");
  if (B > CTRL_MAX_UNROLLED / size || (S > 0 && S > CTRL_MAX_UNROLLED / size / B))
    return over_limit(c, n, S > INT64_MAX / B ? INT64_MAX : B * (S > 0 ? S : 1), size);

  gir_value **fin = gir_arena_calloc(c->g->arena, (size_t)(s.N * B) + 1, sizeof *fin);  /* [N][B] */
  gir_value **outb = gir_arena_calloc(c->g->arena, (size_t)(s.K * B) + 1, sizeof *outb); /* [K][B] */
  gir_value **states = gir_arena_calloc(c->g->arena, (size_t)s.N + 1, sizeof *states);
  gir_value **xb = gir_arena_calloc(c->g->arena, (size_t)s.M + 1, sizeof *xb);
  gir_value **per = gir_arena_calloc(c->g->arena, (size_t)(s.K * S) + 1, sizeof *per);
  for (int64_t b = 0; b < B; b++) {
    int64_t len = lens ? lens[b] : S;
    for (int64_t i = 0; i < s.N; i++) states[i] = element(c, init[i], 0, b);
    for (int64_t j = 0; j < s.M; j++) xb[j] = element(c, xs[j], 0, b);
    if (c->err->msg[0]) return -1;
    const char *tag = gir_arena_printf(c->g->arena, "%s[batch %lld]", n->name, (long long)b);
    int rc = scan_run(c, n, &s, tag, len, states, xb, per);
    if (rc < 0) return rc;
    for (int64_t i = 0; i < s.N; i++) fin[i * B + b] = states[i];
    for (int64_t k = 0; k < s.K; k++) {
      if (!wants_output(n, (int)(s.N + k))) continue;
      gir_value *y;
      if (len == 0) {
        rc = 0;
        y = empty_stack(c, n, s.body->output[s.N + k], 0, &rc);
        if (rc) return rc;
      } else {
        y = stack(c, per + k * len, len, 0, 0);
      }
      if (y && len < S) { /* pad to the maximum length with zeros */
        int64_t pads[2 * GIR_MAX_RANK] = {0};
        pads[y->shape.rank] = S - len;
        gir_node *p = imp_new_node(c, GIR_OP_pad, &y, 1, 1);
        gir_attr_set_ints(c->g, p, "pads", pads, 2 * y->shape.rank);
        gir_attr_set_int(c->g, p, "mode", GIR_PAD_CONSTANT);
        gir_attr_set_float(c->g, p, "value", 0.0);
        y = imp_finish(c, p);
      }
      if (!y) return -1;
      outb[k * B + b] = y;
    }
  }
  for (int64_t i = 0; i < s.N; i++)
    if (wants_output(n, (int)i) && set_out(c, n, (int)i, stack(c, fin + i * B, B, 0, 0), first) < 0) return -1;
  for (int64_t k = 0; k < s.K; k++)
    if (wants_output(n, (int)(s.N + k)) && set_out(c, n, (int)(s.N + k), stack(c, outb + k * B, B, 0, 0), first) < 0)
      return -1;
  return c->err->msg[0] ? -1 : 0;
}

int imp_cv_Scan(imp_ctx *c, imp_node *n) { return n->opset < 9 ? scan8(c, n) : scan9(c, n); }
