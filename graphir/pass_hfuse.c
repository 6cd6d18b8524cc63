/* pass_hfuse.c — horizontal fusion (the NeoFlow idea): sibling ops that read
 * the same input and whose other operands are constants become one wider op,
 * and slices hand each sibling's consumers its part of the result.
 *
 *   matmul(x, W1) + b1, matmul(x, W2) + b2, matmul(x, W3)
 *     → y = matmul(x, concat(W1, W2, W3; axis -1)) + concat(b1, b2, 0)
 *       then y[..., 0:N1], y[..., N1:N1+N2], y[..., N1+N2:N]
 *   conv(x, W1, b1), conv(x, W2)   (same window attributes, group 1)
 *     → y = conv(x, concat(W1, W2; axis 0), concat(b1, 0)) then y[:, 0:M1], y[:, M1:M]
 *
 * This is what turns the Q/K/V projections of attention into one GEMM: x is
 * read once, and one wide GEMM keeps the machine busier than three narrow ones.
 * A missing bias is a zero bias (x + 0 only turns -0 into +0, as simplify's
 * x+0 → x accepts), so one sibling without a bias does not cost the others
 * theirs. A matmul's bias is its add of a per-column constant, when that add
 * is the matmul's single consumer.
 *
 * Only when it pays. A slice is a data-movement op: it costs nothing when the
 * sibling's result went to one data-movement op or reduction (Q/K/V → reshape
 * → transpose), which runs in a kernel of its own anyway and takes the slice
 * in. A sibling whose result had an element-wise consumer would lose its
 * epilogue (conv → relu: the relu would become a kernel of its own), and one
 * feeding a conv, matmul, pool or graph output would read a copy; such
 * siblings stay as they are. In ResNet-50 the only siblings are the first
 * bottleneck's 1x1 conv (→ relu) and its projection shortcut (→ residual add):
 * merged, the kernel count stays and 0.7 MiB more intermediates are written
 * per run, so they are left alone. Groups of one are left alone too, and so
 * are siblings whose weights together exceed max_weight_bytes (folding would
 * hold two copies). A group has at most 64 members, the most inputs a concat
 * takes; more siblings make several groups.
 *
 * The concatenated weights and biases are graph nodes on the old constants
 * (concat, broadcast_to): the fold pass that follows evaluates them through
 * the compute definitions, like every other weight transform.
 *
 * The new nodes are placed where the group's first sibling stood: they read x
 * (produced before it) and constants only, and every consumer of a sibling
 * comes after that sibling, so the order stays topological. */
#include <stdlib.h>
#include <string.h>
#include "passes.h"
#include "simplify.h"

#define MAX_MEMBERS 64 /* a concat's input limit (ops.def) */

typedef enum { KIND_MATMUL, KIND_CONV } kind;

typedef struct bucket {
  kind k;
  gir_node **members;
  int32_t n;
  int32_t next_of_x;      /* the next bucket on the same input, -1 at the end */
  int32_t new_lo, new_hi; /* the new nodes, as positions in g->nodes */
} bucket;

typedef struct hf {
  gir_graph *g;
  gir_arena *tmp;
  int32_t *uses;         /* consumer slots per value id (graph outputs not counted) */
  gir_node **consumer;   /* the last consumer per value id */
  bucket *buckets;
  int32_t n_buckets;
  int32_t *head;         /* first bucket per input value id, -1 if none */
} hf;

static int same_attrs(const gir_node *a, const gir_node *b) {
  if (a->n_attrs != b->n_attrs) return 0;
  for (int i = 0; i < a->n_attrs; i++) {
    const gir_attr *o = gir_attr_find(b, a->attrs[i].name);
    if (!o || !gir_attr_equal(&a->attrs[i], o)) return 0;
  }
  return 1;
}

static void copy_attrs(gir_graph *g, gir_node *to, const gir_node *from) {
  for (int i = 0; i < from->n_attrs; i++) {
    const gir_attr *a = &from->attrs[i];
    switch (a->kind) {
    case GIR_ATTR_INT: gir_attr_set_int(g, to, a->name, a->i); break;
    case GIR_ATTR_FLOAT: gir_attr_set_float(g, to, a->name, a->f); break;
    case GIR_ATTR_INTS: gir_attr_set_ints(g, to, a->name, a->ints, a->n); break;
    case GIR_ATTR_FLOATS: gir_attr_set_floats(g, to, a->name, a->floats, a->n); break;
    case GIR_ATTR_STRING: gir_attr_set_string(g, to, a->name, a->s); break;
    default: break;
    }
  }
}

/* A constant proper: a graph input with a default value may be overridden. */
static int is_const(const gir_value *v) { return v && v->data && !v->producer && !v->is_input; }

/* Which kind of sibling n can be, or -1. Requires the operand types to agree
 * (inference checked them) and first-class element types (byte-sized). */
static int candidate_kind(const gir_node *n) {
  if (n->n_out != 1 || n->n_in < 2 || !n->in[0] || n->in[0]->data || n->out[0]->data || !is_const(n->in[1]))
    return -1;
  if (!gir_dtype_size(n->in[0]->dtype) || n->in[0]->dtype != n->in[1]->dtype) return -1;
  if (n->op == GIR_OP_matmul && n->in[1]->shape.rank == 2) return KIND_MATMUL;
  if (n->op == GIR_OP_conv && gir_attr_int(n, "group", 1) == 1 && (n->n_in < 3 || !n->in[2] || is_const(n->in[2])))
    return KIND_CONV;
  return -1;
}

/* Whether n may join bucket b: the same op and, for convs, the same weight
 * shape past the output channels and the same window attributes. */
static int fits(const bucket *b, const gir_node *n, kind k) {
  if (b->k != k || b->n >= MAX_MEMBERS) return 0;
  const gir_node *f = b->members[0];
  if (f->guard != n->guard) return 0; /* siblings in different If branches run apart */
  if (k == KIND_MATMUL) return f->in[1]->shape.dims[0] == n->in[1]->shape.dims[0];
  const gir_shape *a = &f->in[1]->shape, *w = &n->in[1]->shape;
  if (a->rank != w->rank) return 0;
  for (int d = 1; d < a->rank; d++)
    if (a->dims[d] != w->dims[d]) return 0;
  return same_attrs(f, n);
}

/* The bias add of matmul m, when it can be taken into the merged matmul: m's
 * only consumer, not a graph output itself, adding a constant that varies only
 * along the last axis (one value per column, or one value in all). */
static gir_node *bias_add(const hf *h, const gir_node *m, gir_value **bias) {
  const gir_value *y = m->out[0];
  if (y->is_output || h->uses[y->id] != 1) return NULL;
  gir_node *a = h->consumer[y->id];
  if (a->op != GIR_OP_binary || gir_attr_int(a, "fn", -1) != GIR_BINARY_ADD || a->n_out != 1) return NULL;
  if (a->guard != m->guard) return NULL;
  gir_value *k = a->in[0] == y ? a->in[1] : a->in[0];
  if (!is_const(k) || k->dtype != y->dtype) return NULL;
  if (a->out[0]->dtype != y->dtype || !gir_shape_equal(&a->out[0]->shape, &y->shape)) return NULL;
  if (k->shape.rank > y->shape.rank) return NULL;
  int64_t cols = y->shape.dims[y->shape.rank - 1];
  for (int d = 0; d + 1 < k->shape.rank; d++)
    if (k->shape.dims[d] != 1) return NULL;
  if (k->shape.rank && k->shape.dims[k->shape.rank - 1] != cols && k->shape.dims[k->shape.rank - 1] != 1) return NULL;
  *bias = k;
  return a;
}

/* The value a slice of the merged result stands for: the bias add when it is
 * taken, else the member's output. */
static const gir_value *member_result(const hf *h, const gir_node *m, kind k) {
  gir_value *bias;
  gir_node *a = k == KIND_MATMUL ? bias_add(h, m, &bias) : NULL;
  return a ? a->out[0] : m->out[0];
}

/* Whether a slice can stand for r at no cost: r's single consumer reads it
 * from memory in a kernel of its own anyway, and FuseOps takes the slice into
 * that kernel — a data-movement op (reshape, transpose, concat…) or a
 * reduction (softmax, layer_norm…). An element-wise consumer would have been
 * the member's epilogue (conv → relu: merged, the relu would need a kernel of
 * its own), a complex one (conv, matmul, pool) would read the slice from a
 * copy, and so would a graph output. */
static int slice_is_free(const hf *h, const gir_value *r) {
  if (r->is_output || h->uses[r->id] != 1) return 0;
  const gir_node *c = h->consumer[r->id];
  switch (c->op) {
  case GIR_OP_unary: case GIR_OP_binary: case GIR_OP_where: case GIR_OP_cast: return 0;
  default: break;
  }
  gir_category cat = gir_op_category(c->op);
  return cat == GIR_INJECTIVE || cat == GIR_REDUCTION;
}

/* --- building the merged op --- */

static int infer(gir_graph *g, gir_node *n, const gir_node *origin, gir_err *err) {
  n->origin = origin->origin;
  return gir_node_infer(g, n, err);
}

static gir_value *concat(gir_graph *g, gir_value **vals, int32_t n, int64_t axis, const gir_node *origin,
                         gir_err *err) {
  gir_node *c = gir_node_new(g, GIR_OP_concat, NULL, vals, n, 1);
  gir_attr_set_int(g, c, "axis", axis);
  return infer(g, c, origin, err) < 0 ? NULL : c->out[0];
}

/* Bias k (a constant with one value, or one per column) as a [cols] vector;
 * NULL k gives zeros. */
static gir_value *bias_vector(gir_graph *g, gir_value *k, gir_dtype t, int64_t cols, const gir_node *origin,
                              gir_err *err) {
  gir_shape s = gir_shape_make(1, &cols);
  if (!k) return gir_const_new(g, NULL, t, &s, NULL); /* arena memory is zeroed */
  if (gir_value_numel(k) == cols) return gir_const_new(g, NULL, t, &s, k->data);
  int64_t one = 1;
  gir_shape s1 = gir_shape_make(1, &one);
  gir_value *k1 = gir_const_new(g, NULL, t, &s1, k->data);
  gir_node *b = gir_node_new(g, GIR_OP_broadcast_to, NULL, &k1, 1, 1);
  gir_attr_set_ints(g, b, "shape", &cols, 1);
  return infer(g, b, origin, err) < 0 ? NULL : b->out[0];
}

/* y[..., off : off+size, ...] on axis. */
static gir_value *slice(gir_graph *g, gir_value *y, int axis, int64_t off, int64_t size, const gir_node *origin,
                        gir_err *err) {
  int64_t starts[GIR_MAX_RANK] = {0}, steps[GIR_MAX_RANK], sizes[GIR_MAX_RANK];
  int32_t r = y->shape.rank;
  for (int d = 0; d < r; d++) {
    steps[d] = 1;
    sizes[d] = y->shape.dims[d];
  }
  starts[axis] = off;
  sizes[axis] = size;
  gir_node *s = gir_node_new(g, GIR_OP_slice, NULL, &y, 1, 1);
  gir_attr_set_ints(g, s, "starts", starts, r);
  gir_attr_set_ints(g, s, "steps", steps, r);
  gir_attr_set_ints(g, s, "sizes", sizes, r);
  return infer(g, s, origin, err) < 0 ? NULL : s->out[0];
}

/* Replaces bucket b's members by one op and slices; the new nodes are appended
 * to g->nodes from b->new_lo on. 0, or -1 on an inference failure (a bug: the
 * members' own inference accepted the same shapes); the consumers redirected
 * by then read slices that are valid nodes, so the graph stays whole. */
static int merge(hf *h, bucket *b, gir_hfuse_stats *st, gir_err *err) {
  gir_graph *g = h->g;
  const gir_node *first = b->members[0];
  int32_t n = b->n;
  b->new_lo = g->n_nodes;
  gir_value **ws = gir_arena_calloc(h->tmp, (size_t)n, sizeof *ws);
  gir_value **bs = gir_arena_calloc(h->tmp, (size_t)n, sizeof *bs);
  gir_node **adds = gir_arena_calloc(h->tmp, (size_t)n, sizeof *adds);
  if (!ws || !bs || !adds) return gir_errf(err, "hfuse: out of memory");
  int any_bias = 0;
  for (int i = 0; i < n; i++) {
    gir_node *m = b->members[i];
    ws[i] = m->in[1];
    if (b->k == KIND_MATMUL) adds[i] = bias_add(h, m, &bs[i]);
    else bs[i] = m->n_in > 2 ? m->in[2] : NULL;
    any_bias |= bs[i] != NULL;
  }
  int axis = b->k == KIND_MATMUL ? first->out[0]->shape.rank - 1 : 1; /* of the outputs */
  gir_value *w = concat(g, ws, n, b->k == KIND_MATMUL ? 1 : 0, first, err);
  if (!w) return -1;
  gir_value *bias = NULL;
  if (any_bias) {
    for (int i = 0; i < n; i++) {
      int64_t cols = b->members[i]->out[0]->shape.dims[axis];
      if (!(bs[i] = bias_vector(g, bs[i], w->dtype, cols, first, err))) return -1;
    }
    if (!(bias = concat(g, bs, n, 0, first, err))) return -1;
  }
  gir_value *x = first->in[0], *y; /* the members' input as it is now */
  if (b->k == KIND_MATMUL) {
    gir_node *mm = gir_node_new(g, GIR_OP_matmul, NULL, (gir_value *[]){x, w}, 2, 1);
    if (infer(g, mm, first, err) < 0) return -1;
    y = mm->out[0];
    if (bias) {
      gir_node *ad = gir_node_new(g, GIR_OP_binary, NULL, (gir_value *[]){y, bias}, 2, 1);
      gir_attr_set_int(g, ad, "fn", GIR_BINARY_ADD);
      if (infer(g, ad, first, err) < 0) return -1;
      y = ad->out[0];
    }
  } else {
    gir_node *cv = gir_node_new(g, GIR_OP_conv, NULL, (gir_value *[]){x, w, bias}, bias ? 3 : 2, 1);
    copy_attrs(g, cv, first);
    if (infer(g, cv, first, err) < 0) return -1;
    y = cv->out[0];
  }
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    gir_node *m = b->members[i];
    int64_t cols = m->out[0]->shape.dims[axis];
    gir_value *part = slice(g, y, axis, off, cols, m, err);
    if (!part) return -1;
    off += cols;
    /* the slice stands for the bias add when it was taken, else for the member */
    gir_value *old = adds[i] ? adds[i]->out[0] : m->out[0];
    if (gir_replace_uses(g, old, part) < 0) return gir_errf(err, "hfuse: %s: cannot take over its output", m->name);
    st->biases += adds[i] != NULL;
  }
  if (b->k == KIND_MATMUL) {
    st->matmul_groups++;
    st->matmuls += n;
  } else {
    st->conv_groups++;
    st->convs += n;
  }
  return 0;
}

/* Puts each bucket's new nodes (appended at the end) where its first member
 * stands. Ids are positions up to n_orig. */
static void reorder(hf *h, int32_t n_orig) {
  gir_graph *g = h->g;
  int32_t total = g->n_nodes, cnt = 0;
  gir_node **order = gir_arena_calloc(h->tmp, (size_t)total + 1, sizeof *order);
  int32_t *at = gir_arena_calloc(h->tmp, (size_t)n_orig + 1, sizeof *at); /* bucket + 1 anchored at a node */
  if (!order || !at) abort(); /* out of memory, as graph.c treats it */
  for (int i = 0; i < h->n_buckets; i++)
    if (h->buckets[i].new_hi > h->buckets[i].new_lo) at[h->buckets[i].members[0]->id] = i + 1;
  for (int k = 0; k < n_orig; k++) {
    if (at[k]) {
      const bucket *b = &h->buckets[at[k] - 1];
      for (int j = b->new_lo; j < b->new_hi; j++) order[cnt++] = g->nodes[j];
    }
    order[cnt++] = g->nodes[k];
  }
  for (int k = 0; k < cnt; k++) {
    g->nodes[k] = order[k];
    g->nodes[k]->id = k;
  }
  g->n_nodes = cnt; /* == total: every appended node belongs to a merged bucket */
}

/* Requires: topological order, node ids equal positions (gir_graph_compact).
 * Preserves: semantics (a missing bias becomes + 0), topological order, graph
 * output names; leaves the weight concatenations as nodes on constants, for
 * gir_fold_constants; compacts. */
int gir_hfuse(gir_graph *g, int64_t max_weight_bytes, gir_hfuse_stats *stats, gir_err *err) {
  gir_hfuse_stats st;
  memset(&st, 0, sizeof st);
  if (stats) *stats = st;
  hf h = {.g = g, .tmp = gir_arena_new()};
  int32_t nv = g->n_values, nn = g->n_nodes;
  if (!h.tmp) return 0; /* out of memory: merging nothing is correct */
  h.uses = gir_arena_calloc(h.tmp, (size_t)nv + 1, sizeof *h.uses);
  h.consumer = gir_arena_calloc(h.tmp, (size_t)nv + 1, sizeof *h.consumer);
  h.head = gir_arena_calloc(h.tmp, (size_t)nv + 1, sizeof *h.head);
  h.buckets = gir_arena_calloc(h.tmp, (size_t)nn + 1, sizeof *h.buckets);
  if (!h.uses || !h.consumer || !h.head || !h.buckets) {
    gir_arena_free(h.tmp);
    return 0;
  }
  for (int i = 0; i < nv; i++) h.head[i] = -1;
  for (int k = 0; k < nn; k++) {
    gir_node *n = g->nodes[k];
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j]) {
        h.uses[n->in[j]->id]++;
        h.consumer[n->in[j]->id] = n;
      }
  }
  /* buckets of siblings, members in node order */
  for (int k = 0; k < nn; k++) {
    gir_node *n = g->nodes[k];
    int kd = candidate_kind(n);
    if (kd < 0) continue;
    gir_value *x = n->in[0];
    int32_t bi = h.head[x->id];
    while (bi >= 0 && !fits(&h.buckets[bi], n, (kind)kd)) bi = h.buckets[bi].next_of_x;
    if (bi < 0) {
      bi = h.n_buckets++;
      int32_t cap = h.uses[x->id] < MAX_MEMBERS ? h.uses[x->id] : MAX_MEMBERS;
      gir_node **members = gir_arena_calloc(h.tmp, (size_t)cap, sizeof *members);
      if (!members) abort(); /* out of memory, as graph.c treats it */
      h.buckets[bi] = (bucket){.k = (kind)kd, .members = members, .next_of_x = h.head[x->id]};
      h.head[x->id] = bi;
    }
    bucket *b = &h.buckets[bi];
    b->members[b->n++] = n;
  }
  int rc = 0;
  for (int i = 0; i < h.n_buckets && rc == 0; i++) {
    bucket *b = &h.buckets[i];
    if (b->n < 2) continue;
    int32_t keep = 0; /* the siblings a slice serves for free */
    for (int j = 0; j < b->n; j++)
      if (slice_is_free(&h, member_result(&h, b->members[j], b->k))) b->members[keep++] = b->members[j];
    st.left_out += b->n - keep;
    b->n = keep;
    if (b->n < 2) continue;
    int64_t bytes = 0;
    for (int j = 0; j < b->n; j++) bytes += gir_value_nbytes(b->members[j]->in[1]);
    if (max_weight_bytes > 0 && bytes > max_weight_bytes) {
      st.skipped_large++;
      continue;
    }
    g->cur_guard = b->members[0]->guard;
    rc = merge(&h, b, &st, err);
    g->cur_guard = NULL;
    b->new_hi = g->n_nodes;
  }
  reorder(&h, nn);
  gir_arena_free(h.tmp);
  gir_graph_compact(g);
  if (stats) *stats = st;
  return rc;
}
