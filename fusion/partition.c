/* partition.c — fus_partition_graph: TVM's FuseOps (relay fuse_ops.cc / graph
 * partitioner), rewritten for kiln's graph IR.
 *
 * 1. The indexed forward graph. Nodes are the graph's nodes, in its topological
 *    order (TVM's post-DFS order); an edge p -> c is one use of a value of p by c
 *    and carries the pattern of the use: the consumer's op pattern, with
 *    broadcasting ops refined to ELEMWISE when the used value already has the
 *    output's shape (TVM does the same). The patterns are ordered
 *      ELEMWISE < BROADCAST < INJECTIVE < REDUCTION < COMPLEX < OPAQUE
 *    and refine graphir's four categories: unary and cast are element-wise;
 *    binary, where, broadcast_to and iota broadcast; the other data movement is
 *    injective. A node whose value is a graph output has an opaque use outside
 *    the graph (TVM's extern_ref): it never fuses into its consumers, but it may
 *    be the last node of a group (the kernel writes the output). The index
 *    operand of a gather or scatter is an opaque use too: the consumer's kernel
 *    checks those indices before it runs (lower/index_checks.c), so it must read
 *    them from a buffer. A use across If branches (a node of another guard,
 *    gir_guard) is opaque too: a kernel runs all of its nodes or none, and the
 *    producer of a branch's condition ends its group (the runtime reads it).
 * 2. The post-dominator tree, built backwards: a node's immediate post-dominator
 *    is the least common ancestor, in the tree built so far, of its consumers;
 *    walking up to it combines (max) the patterns on the way, so the node's
 *    "dom pattern" bounds every use on every path from it to its post-dominator.
 * 3. Union-find groups; each root knows its member count and its pattern (the
 *    largest member pattern, so COMPLEX / REDUCTION mean "has that master").
 *    Each node, in topological order, tries to merge its group — with every group
 *    on a path to its post-dominator — into the post-dominator's group. Merging
 *    along all paths is what keeps diamonds correct: a value used on two paths
 *    that rejoin is fused with both paths or not at all, and a value also used by
 *    something the paths cannot take (a conv input) keeps its own group, so no
 *    work is recomputed. Phases:
 *      0  a group with a COMPLEX master grows into its post-dominator when every
 *         use on the way is element-wise (same index as the conv output) and
 *         every group on the way is at most broadcast: conv -> bias -> relu ->
 *         residual add -> relu. Master-less element-wise/broadcast groups fuse
 *         forward too (into injective, reduction or complex consumers).
 *      1  master-less injective groups fuse into a post-dominator that is
 *         injective or a reduction, along injective paths (transpose -> cast ->
 *         reduce; TVM only lets element-wise ops into reductions) — except a lone
 *         reshape into a reduction, which stays a view the reduction reads flat.
 *      2  the rest: injective side inputs of a complex group's epilogue
 *         (conv -> add(·, transpose(y))) join it, inlined at the epilogue's index.
 *         And a group whose master is a SMALL matmul (at most SMALL_MATMUL_OUT
 *         output elements: a matrix-vector product, one step of a recurrence)
 *         grows into its post-dominator along injective paths too, when that
 *         group is master-less and computes something (an element-wise unary,
 *         binary or where; data movement alone — a reshape, an attention head's
 *         transpose — runs as a view or with the copies horizontal fusion
 *         arranges, as before):
 *         an LSTM step's h @ R^T -> + x W^T -> four gate slices -> activations
 *         -> cell and hidden state -> concat [h; c] becomes one kernel instead
 *         of three. The epilogue no longer runs at the matmul's output index, so
 *         the kernel keeps the product in a small buffer (the matmul template
 *         without an epilogue: a register tile copied out) and the injective
 *         stages read it at any index; that costs one write and read of a few
 *         KiB in cache, where a kernel boundary costs a call, a fork-join and
 *         the same write and read in the arena.
 *    A group never gets two masters, reductions never fuse forward (TVM), opaque
 *    nodes stay alone, and a merge that would make a group larger than
 *    max_group_nodes members is refused — counting distinct member nodes, not
 *    paths through a diamond (apache/tvm#6327).
 * Groups built this way have one exit (only the last node's value leaves), which
 * makes every merge convex; groups are then numbered by their last node, which is
 * an execution order. */
#include <assert.h>
#include <string.h>
#include "fusion.h"

typedef enum pattern {
  PAT_ELEMWISE,
  PAT_BROADCAST,
  PAT_INJECTIVE,
  PAT_REDUCTION,
  PAT_COMPLEX,
  PAT_OPAQUE,
} pattern;

static pattern node_pattern(const gir_node *n) {
  switch (gir_op_category(n->op)) {
  case GIR_REDUCTION: return PAT_REDUCTION;
  case GIR_COMPLEX: return PAT_COMPLEX;
  case GIR_OPAQUE: return PAT_OPAQUE;
  default: break;
  }
  switch (n->op) {
  case GIR_OP_unary: case GIR_OP_cast: return PAT_ELEMWISE;
  case GIR_OP_binary: case GIR_OP_where: case GIR_OP_broadcast_to: case GIR_OP_iota: return PAT_BROADCAST;
  default: return PAT_INJECTIVE;
  }
}

/* Whether v is the index operand of a gather or scatter: the kernel checks those
 * indices at run time before it reads them (lower/index_checks.c), so they must
 * arrive as a kernel input, never computed inside the consumer's kernel. */
static int index_operand(const gir_node *c, const gir_value *v) {
  switch (c->op) {
  case GIR_OP_gather: case GIR_OP_gather_elements: case GIR_OP_gather_nd: case GIR_OP_scatter_elements:
  case GIR_OP_scatter_nd: return c->n_in > 1 && c->in[1] == v && !v->data;
  default: return 0;
  }
}

/* The pattern of c's use of v. */
static pattern edge_pattern(const gir_node *c, const gir_value *v) {
  if (index_operand(c, v)) return PAT_OPAQUE; /* never fused into c */
  if (v->producer && v->producer->guard != c->guard) return PAT_OPAQUE; /* another branch: runs apart */
  pattern p = node_pattern(c);
  if (p == PAT_BROADCAST && c->n_out == 1 && gir_shape_equal(&v->shape, &c->out[0]->shape)) return PAT_ELEMWISE;
  return p;
}

static pattern max_pat(pattern a, pattern b) { return a > b ? a : b; }

typedef struct fuser {
  const gir_graph *g;
  int32_t n, cap;
  /* forward graph (CSR) */
  uint8_t *pat, *extern_ref;
  int32_t *first, *dst; /* edges of node k: dst[first[k] .. first[k+1]) */
  uint8_t *epat;
  /* post-dominator tree */
  int32_t *pd_parent, *pd_depth;
  uint8_t *pd_pat;
  /* union-find; size, gpat, master and work are valid at roots */
  int32_t *uf, *size, *master; /* master: the complex or reduction node, -1 if none */
  uint8_t *gpat, *work;         /* work: some member computes (unary, binary, where) */
  /* path walks */
  int32_t *seen, *root_seen, stamp, *stack, *found, n_found;
} fuser;

static int32_t find(fuser *f, int32_t x) {
  int32_t r = x;
  while (f->uf[r] != r) r = f->uf[r];
  while (f->uf[x] != r) {
    int32_t nx = f->uf[x];
    f->uf[x] = r;
    x = nx;
  }
  return r;
}

/* Merges group root child into group root parent. */
static void merge(fuser *f, int32_t child, int32_t parent) {
  if (child == parent) return;
  pattern c = f->gpat[child], p = f->gpat[parent];
  /* the one-master rule, guaranteed by the fusion conditions */
  assert(!(c >= PAT_REDUCTION && p >= PAT_REDUCTION));
  f->uf[child] = parent;
  f->size[parent] += f->size[child];
  f->gpat[parent] = max_pat(c, p);
  if (f->master[child] >= 0) f->master[parent] = f->master[child];
  f->work[parent] |= f->work[child];
}

static int build_forward(fuser *f, gir_arena *a, gir_err *err) {
  const gir_graph *g = f->g;
  int32_t n = f->n, n_edges = 0;
  f->pat = gir_arena_alloc(a, (size_t)n + 1);
  f->extern_ref = gir_arena_alloc(a, (size_t)n + 1);
  f->first = gir_arena_calloc(a, (size_t)n + 1, sizeof *f->first);
  int32_t *fill = gir_arena_calloc(a, (size_t)n + 1, sizeof *fill);
  if (!f->pat || !f->extern_ref || !f->first || !fill) return gir_errf(err, "fusion: out of memory");
  for (int32_t k = 0; k < n; k++) {
    const gir_node *c = g->nodes[k];
    if (c->id != k) return gir_errf(err, "fusion: node %d has id %d (run gir_graph_compact first)", k, c->id);
    f->pat[k] = (uint8_t)node_pattern(c);
    for (int j = 0; j < c->n_in; j++) {
      const gir_value *v = c->in[j];
      if (!v || v->data || !v->producer) continue; /* constants and graph inputs are not nodes */
      int32_t p = v->producer->id;
      if (p < 0 || p >= k || g->nodes[p] != v->producer)
        return gir_errf(err, "fusion: node %d (%s) reads a value of a node that is not before it", k, c->name);
      f->first[p + 1]++;
      n_edges++;
    }
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const gir_value *v = g->outputs[i];
    if (v->producer && !v->data) f->extern_ref[v->producer->id] = 1;
  }
  /* an If's condition is read by the runtime before the branch's kernels: its
   * producer ends a group, like a graph output's */
  for (int32_t k = 0; k < n; k++)
    for (const gir_guard *d = g->nodes[k]->guard; d; d = d->parent)
      if (d->cond->producer && !d->cond->data) f->extern_ref[d->cond->producer->id] = 1;
  for (int i = 0; i < g->n_outputs; i++) { /* an output's actual extent: read by the runtime too */
    const gir_value *e = g->outputs[i]->extent;
    if (e && e->producer && !e->data) f->extern_ref[e->producer->id] = 1;
  }
  for (int32_t k = 0; k < n; k++) f->first[k + 1] += f->first[k];
  f->dst = gir_arena_calloc(a, (size_t)n_edges + 1, sizeof *f->dst);
  f->epat = gir_arena_alloc(a, (size_t)n_edges + 1);
  if (!f->dst || !f->epat) return gir_errf(err, "fusion: out of memory");
  for (int32_t k = 0; k < n; k++) {
    const gir_node *c = g->nodes[k];
    for (int j = 0; j < c->n_in; j++) {
      const gir_value *v = c->in[j];
      if (!v || v->data || !v->producer) continue;
      int32_t p = v->producer->id, e = f->first[p] + fill[p]++;
      f->dst[e] = k;
      f->epat[e] = (uint8_t)edge_pattern(c, v);
    }
  }
  return 0;
}

/* Least common ancestor of x and y in the post-dominator tree (-1: none, the
 * virtual exit), combining the patterns of the tree edges walked into *pat. */
static int32_t lca(const fuser *f, int32_t x, int32_t y, pattern *pat) {
  while (x != y) {
    if (x < 0 || y < 0) return -1;
    int32_t dx = f->pd_depth[x], dy = f->pd_depth[y];
    if (dx >= dy) {
      *pat = max_pat(*pat, f->pd_pat[x]);
      x = f->pd_parent[x];
    }
    if (dy >= dx) {
      *pat = max_pat(*pat, f->pd_pat[y]);
      y = f->pd_parent[y];
    }
  }
  return x;
}

static int build_postdom(fuser *f, gir_arena *a, gir_err *err) {
  int32_t n = f->n;
  f->pd_parent = gir_arena_calloc(a, (size_t)n + 1, sizeof *f->pd_parent);
  f->pd_depth = gir_arena_calloc(a, (size_t)n + 1, sizeof *f->pd_depth);
  f->pd_pat = gir_arena_alloc(a, (size_t)n + 1);
  if (!f->pd_parent || !f->pd_depth || !f->pd_pat) return gir_errf(err, "fusion: out of memory");
  for (int32_t k = n - 1; k >= 0; k--) {
    int32_t parent = -1;
    pattern pat = PAT_ELEMWISE;
    if (f->extern_ref[k]) {
      pat = PAT_OPAQUE; /* read outside the graph: post-dominated by the exit only */
    } else if (f->first[k] < f->first[k + 1]) {
      parent = f->dst[f->first[k]];
      pat = f->epat[f->first[k]];
      for (int32_t e = f->first[k] + 1; e < f->first[k + 1]; e++) {
        parent = lca(f, parent, f->dst[e], &pat);
        pat = max_pat(pat, f->epat[e]);
      }
    }
    f->pd_parent[k] = parent;
    f->pd_depth[k] = parent >= 0 ? f->pd_depth[parent] + 1 : 1;
    f->pd_pat[k] = (uint8_t)pat;
  }
  return 0;
}

/* Walks every path from src until it reaches the sink's group. Fails when a
 * group on the way has a pattern above inter_max, or when the groups on the way
 * hold more than max_members nodes (which also bounds the walk). Otherwise the
 * distinct groups on the way are left in found[0..n_found) and *members gets
 * their member count. */
static int walk_paths(fuser *f, int32_t src, int32_t sink_root, pattern inter_max, int64_t max_members,
                      int64_t *members) {
  int32_t top = 0;
  f->stamp++;
  f->n_found = 0;
  *members = 0;
  for (int32_t e = f->first[src]; e < f->first[src + 1]; e++) f->stack[top++] = f->dst[e];
  while (top > 0) {
    int32_t v = f->stack[--top];
    if (f->seen[v] == f->stamp) continue;
    f->seen[v] = f->stamp;
    int32_t r = find(f, v);
    if (r == sink_root) continue; /* inside the sink's group: its paths stay there */
    if (f->gpat[r] > inter_max) return 0;
    if (f->first[v] == f->first[v + 1] || f->extern_ref[v]) return 0; /* a path that misses the sink */
    if (f->root_seen[r] != f->stamp) {
      f->root_seen[r] = f->stamp;
      f->found[f->n_found++] = r;
      *members += f->size[r];
      if (*members > max_members) return 0;
    }
    for (int32_t e = f->first[v]; e < f->first[v + 1]; e++)
      if (f->seen[f->dst[e]] != f->stamp) f->stack[top++] = f->dst[e];
  }
  return 1;
}

/* Whether group root r's master is a matmul small enough to keep its whole
 * product in a kernel-local buffer (phase 2 above). */
#define SMALL_MATMUL_OUT 8192
static int small_matmul_group(const fuser *f, int32_t r) {
  if (f->master[r] < 0) return 0;
  const gir_node *m = f->g->nodes[f->master[r]];
  return m->op == GIR_OP_matmul && m->n_out == 1 && gir_value_numel(m->out[0]) <= SMALL_MATMUL_OUT;
}

/* Node k's group G tries to fuse into the group S of k's post-dominator. */
static void try_fuse(fuser *f, int32_t k, int phase) {
  int32_t sink = f->pd_parent[k];
  if (sink < 0) return;
  int32_t G = find(f, k), S = find(f, sink);
  if (G == S) return;
  pattern gp = f->gpat[G], sp = f->gpat[S], dom = f->pd_pat[k];
  if (gp == PAT_OPAQUE || sp == PAT_OPAQUE || dom == PAT_OPAQUE || gp == PAT_REDUCTION) return;
  pattern inter_max;
  if (gp == PAT_COMPLEX) {
    if (phase == 0 && dom == PAT_ELEMWISE && sp <= PAT_BROADCAST) /* the epilogue runs at the conv output's */
      inter_max = PAT_BROADCAST;                                    /* index: element-wise uses only */
    else if (phase == 2 && dom <= PAT_INJECTIVE && sp <= PAT_INJECTIVE && f->work[S] && small_matmul_group(f, G))
      inter_max = PAT_INJECTIVE; /* a small product kept in a buffer, read at any index */
    else
      return;
  } else {
    /* master-less: its work is inlined into the sink group's kernel */
    int into_reduce = dom == PAT_REDUCTION && sp == PAT_REDUCTION; /* the last use is the reduction's */
    /* a lone reshape stays a view: the reduction reads the flat buffer at a linear
     * index instead of the div/mod of unflattening it (a global pool over H·W,
     * GroupNorm's [N, G, C/G·H·W] rows), which the row template can vectorize */
    if (into_reduce && f->size[G] == 1 && f->g->nodes[k]->op == GIR_OP_reshape) return;
    int sink_ok;
    if (phase == 2) /* injective side inputs of a complex group's epilogue */
      sink_ok = sp == PAT_COMPLEX && dom <= PAT_INJECTIVE;
    else if (gp <= PAT_BROADCAST) /* element-wise: into anything but opaque, from phase 0 */
      sink_ok = dom <= PAT_INJECTIVE || into_reduce;
    else /* injective: into injective or reduction groups, in phase 1 (after the complex groups grew) */
      sink_ok = phase == 1 && sp != PAT_COMPLEX && (dom <= PAT_INJECTIVE || into_reduce);
    if (!sink_ok) return;
    inter_max = PAT_INJECTIVE;
  }
  int64_t members, room = (int64_t)f->cap - f->size[G] - f->size[S];
  if (room < 0 || !walk_paths(f, k, S, inter_max, room, &members)) return;
  for (int32_t i = 0; i < f->n_found; i++) merge(f, f->found[i], S);
  merge(f, G, S);
}

fus_options fus_default_options(void) { return (fus_options){.max_group_nodes = 256, .opt_level = 1}; }

/* Turns the union-find forest into numbered groups with their inputs/outputs. */
static int collect_groups(fuser *f, const int32_t *root, gir_arena *a, fus_partition *out, gir_err *err);

/* A chain of element-wise nodes ending group R's kernel that starts at a widening
 * cast of an 8-bit integer (a quantized model's DequantizeLinear: cast to float32,
 * minus the zero point, times the scale) would make the kernel write four bytes per
 * element where its value before the cast has one. When that chain's only reader
 * is one complex group (a conv whose epilogue adds it: a quantized residual), the
 * chain moves into that group — computed where it is read, at the epilogue's
 * index — and R writes the 8-bit value. root[] is each node's group (updated). */
static void narrow_exits(fuser *f, int32_t *root) {
  const gir_graph *g = f->g;
  for (int32_t k = f->n - 1; k >= 0; k--) {
    const gir_node *t = g->nodes[k];
    int32_t R = root[k], C = -1;
    if (t->n_out != 1 || f->extern_ref[k] || f->first[k] == f->first[k + 1]) continue;
    int ok = 1;
    for (int32_t e = f->first[k]; e < f->first[k + 1] && ok; e++) {
      int32_t c = f->dst[e];
      if (C < 0) C = root[c];
      ok = root[c] == C && C != R && f->epat[e] == PAT_ELEMWISE && f->gpat[C] == PAT_COMPLEX;
    }
    if (!ok) continue;
    /* walk back: single-use element-wise nodes of R, each with one computed input */
    int32_t chain[4], len = 0, at = k;
    int widening = 0;
    while (len < 4) {
      const gir_node *c = g->nodes[at];
      if (root[at] != R || (c->op != GIR_OP_unary && c->op != GIR_OP_binary && c->op != GIR_OP_cast)) break;
      const gir_value *in = NULL;
      int computed = 0;
      for (int j = 0; j < c->n_in; j++)
        if (c->in[j] && !c->in[j]->data) {
          in = c->in[j];
          computed++;
        }
      if (computed != 1 || !in->producer) break;
      chain[len++] = at;
      if (c->op == GIR_OP_cast && (in->dtype == GIR_U8 || in->dtype == GIR_I8) && c->out[0]->dtype == GIR_F32) {
        widening = root[in->producer->id] == R; /* R keeps the 8-bit value's producer */
        break;
      }
      int32_t p = in->producer->id;
      if (f->first[p + 1] - f->first[p] != 1) break; /* used elsewhere too */
      at = p;
    }
    if (!widening) continue;
    for (int32_t i = 0; i < len; i++) root[chain[i]] = C;
    f->size[R] -= len;
    f->size[C] += len;
  }
}

int fus_partition_graph(const gir_graph *g, const fus_options *opt, gir_arena *a, fus_partition *out, gir_err *err) {
  fus_options o = opt ? *opt : fus_default_options();
  if (o.max_group_nodes <= 0) o.max_group_nodes = fus_default_options().max_group_nodes;
  memset(out, 0, sizeof *out);
  fuser f = {.g = g, .n = g->n_nodes, .cap = o.max_group_nodes};
  size_t n1 = (size_t)f.n + 1;
  f.uf = gir_arena_calloc(a, n1, sizeof *f.uf);
  f.size = gir_arena_calloc(a, n1, sizeof *f.size);
  f.master = gir_arena_calloc(a, n1, sizeof *f.master);
  f.gpat = gir_arena_alloc(a, n1);
  f.work = gir_arena_alloc(a, n1);
  f.seen = gir_arena_calloc(a, n1, sizeof *f.seen);
  f.root_seen = gir_arena_calloc(a, n1, sizeof *f.root_seen);
  f.found = gir_arena_calloc(a, n1, sizeof *f.found);
  if (!f.uf || !f.size || !f.master || !f.gpat || !f.work || !f.seen || !f.root_seen || !f.found) return gir_errf(err, "fusion: out of memory");
  if (build_forward(&f, a, err) < 0) return -1;
  /* every edge is pushed at most once per walk */
  f.stack = gir_arena_calloc(a, (size_t)f.first[f.n] + 1, sizeof *f.stack);
  if (!f.stack) return gir_errf(err, "fusion: out of memory");
  for (int32_t k = 0; k < f.n; k++) {
    f.uf[k] = k;
    f.size[k] = 1;
    f.gpat[k] = f.pat[k];
    f.master[k] = f.pat[k] >= PAT_REDUCTION && f.pat[k] <= PAT_COMPLEX ? k : -1;
    gir_op op = g->nodes[k]->op;
    f.work[k] = op == GIR_OP_unary || op == GIR_OP_binary || op == GIR_OP_where;
  }
  if (o.opt_level > 0) {
    if (build_postdom(&f, a, err) < 0) return -1;
    for (int phase = 0; phase < 3; phase++)
      for (int32_t k = 0; k < f.n; k++) try_fuse(&f, k, phase);
  }
  int32_t *root = gir_arena_calloc(a, (size_t)f.n + 1, sizeof *root);
  if (!root) return gir_errf(err, "fusion: out of memory");
  for (int32_t k = 0; k < f.n; k++) root[k] = find(&f, k);
  if (o.opt_level > 0) narrow_exits(&f, root);
  return collect_groups(&f, root, a, out, err);
}

static int collect_groups(fuser *f, const int32_t *root, gir_arena *a, fus_partition *out, gir_err *err) {
  const gir_graph *g = f->g;
  int32_t n = f->n;
  /* number groups by their last node: an execution order */
  int32_t *last = gir_arena_calloc(a, (size_t)n + 1, sizeof *last);
  int32_t *gid = gir_arena_calloc(a, (size_t)n + 1, sizeof *gid);
  out->group_of = gir_arena_calloc(a, (size_t)n + 1, sizeof *out->group_of);
  if (!last || !gid || !out->group_of) return gir_errf(err, "fusion: out of memory");
  for (int32_t k = 0; k < n; k++) last[root[k]] = k;
  int32_t ng = 0;
  for (int32_t k = 0; k < n; k++)
    if (last[root[k]] == k) gid[root[k]] = ng++;
  out->n_groups = ng;
  out->groups = gir_arena_calloc(a, (size_t)ng + 1, sizeof *out->groups);
  if (!out->groups) return gir_errf(err, "fusion: out of memory");
  for (int32_t k = 0; k < n; k++) {
    int32_t r = root[k], id = gid[r];
    fus_group *gr = &out->groups[id];
    out->group_of[k] = id;
    if (!gr->nodes) {
      gr->id = id;
      gr->nodes = gir_arena_calloc(a, (size_t)f->size[r], sizeof *gr->nodes);
      if (!gr->nodes) return gir_errf(err, "fusion: out of memory");
      gr->master = -1;
      gr->category = GIR_INJECTIVE;
    }
    gr->nodes[gr->n_nodes++] = k;
    gir_category c = gir_op_category(g->nodes[k]->op);
    if (c != GIR_INJECTIVE) {
      gr->category = c;
      gr->master = k;
    }
  }
  for (int32_t i = 0; i < ng; i++)
    if (out->groups[i].master < 0) out->groups[i].master = out->groups[i].nodes[out->groups[i].n_nodes - 1];

  /* outputs: values read by a node of another group, or graph outputs */
  uint8_t *leaves = gir_arena_alloc(a, (size_t)g->n_values + 1);
  int32_t *mark = gir_arena_calloc(a, (size_t)g->n_values + 1, sizeof *mark);
  if (!leaves || !mark) return gir_errf(err, "fusion: out of memory");
  for (int i = 0; i < g->n_outputs; i++) leaves[g->outputs[i]->id] |= 2;
  for (int32_t k = 0; k < n; k++) {
    const gir_node *c = g->nodes[k];
    for (int j = 0; j < c->n_in; j++) {
      const gir_value *v = c->in[j];
      if (v && v->producer && !v->data && out->group_of[v->producer->id] != out->group_of[k]) leaves[v->id] |= 1;
    }
  }
  for (int32_t i = 0; i < ng; i++) {
    fus_group *gr = &out->groups[i];
    int32_t n_out = 0, n_in = 0;
    for (int pass = 0; pass < 2; pass++) {
      for (int32_t m = 0; m < gr->n_nodes; m++) {
        const gir_node *c = g->nodes[gr->nodes[m]];
        for (int j = 0; j < c->n_out; j++) {
          const gir_value *v = c->out[j];
          if (!leaves[v->id]) continue;
          if (pass) gr->outputs[gr->n_outputs++] = (gir_value *)v;
          else n_out++;
          if (pass && (leaves[v->id] & 2)) gr->n_graph_outputs++;
        }
      }
      if (!pass) {
        gr->outputs = gir_arena_calloc(a, (size_t)n_out + 1, sizeof *gr->outputs);
        if (!gr->outputs) return gir_errf(err, "fusion: out of memory");
      }
    }
    /* inputs: count (mark = i+1 for "seen in this group"), then fill: activations, then constants */
    for (int32_t m = 0; m < gr->n_nodes; m++) {
      const gir_node *c = g->nodes[gr->nodes[m]];
      for (int j = 0; j < c->n_in; j++) {
        const gir_value *v = c->in[j];
        if (!v || mark[v->id] == i + 1) continue;
        if (!v->data && v->producer && out->group_of[v->producer->id] == i) continue;
        mark[v->id] = i + 1;
        n_in++;
      }
    }
    gr->inputs = gir_arena_calloc(a, (size_t)n_in + 1, sizeof *gr->inputs);
    if (!gr->inputs) return gir_errf(err, "fusion: out of memory");
    for (int want_const = 0; want_const < 2; want_const++)
      for (int32_t m = 0; m < gr->n_nodes; m++) {
        const gir_node *c = g->nodes[gr->nodes[m]];
        for (int j = 0; j < c->n_in; j++) {
          gir_value *v = c->in[j];
          if (!v || mark[v->id] != i + 1 || (v->data != NULL) != want_const) continue;
          mark[v->id] = -(i + 1); /* taken */
          gr->inputs[gr->n_inputs++] = v;
        }
      }
  }
  return 0;
}
