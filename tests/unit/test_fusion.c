/* test_fusion.c — tests of the fused-group partition (fusion/). Each case is a
 * tiny graph built with the graphir API and its expected grouping written next to
 * it: conv chains and residual blocks, diamonds, a value read by a conv and by an
 * add, injective chains into reductions, opaque barriers, softmax/layer_norm,
 * the group-size cap (counted in members, also through diamonds), opt_level 0 and
 * graph outputs inside groups. Every partition, here and in a property test over
 * random graphs, is also checked against the invariants with code that does not
 * trust fusion/: each node in exactly one group, groups convex (no path leaves a
 * group and comes back, by brute force), at most one COMPLEX/REDUCTION node per
 * group, opaque nodes alone, a complex group's epilogue at the complex op's shape
 * and never holding the op's inputs — plus fus_verify_partition. Set
 * KILN_TEST_SEED to vary the random graphs. */
#include <stdlib.h>
#include "check.h"
#include "fusion.h"
#include "graph.h"

#define NARGS64(...) ((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SH(...) ((gir_shape){.rank = NARGS64(__VA_ARGS__), .dims = {__VA_ARGS__}})
#define INTS(...) (int64_t[]){__VA_ARGS__}, NARGS64(__VA_ARGS__)

/* --- building graphs --- */

static gir_value *input(gir_graph *g, gir_shape s) {
  gir_value *v = gir_value_new(g, NULL, GIR_F32, &s);
  gir_graph_add_input(g, v);
  return v;
}

static gir_value *cst(gir_graph *g, gir_shape s) {
  int64_t n = 1;
  for (int i = 0; i < s.rank; i++) n *= s.dims[i];
  float *data = calloc((size_t)n + 1, sizeof *data);
  gir_value *v = gir_const_new(g, NULL, GIR_F32, &s, data);
  free(data);
  return v;
}

/* Infers the node (a failure is a broken test, counted; success is not a check)
 * and returns it. */
static gir_node *fin(gir_graph *g, gir_node *n) {
  gir_err e = {{0}};
  if (gir_node_infer(g, n, &e) < 0) CHECKF(0, "%s", e.msg);
  return n;
}

static gir_node *mk(gir_graph *g, gir_op op, gir_value *a, gir_value *b) {
  gir_value *ins[2] = {a, b};
  return gir_node_new(g, op, NULL, ins, b ? 2 : 1, gir_op_outputs(op));
}

static gir_node *un(gir_graph *g, gir_unary_fn fn, gir_value *x) {
  gir_node *n = mk(g, GIR_OP_unary, x, NULL);
  gir_attr_set_int(g, n, "fn", fn);
  return fin(g, n);
}

static gir_node *bin(gir_graph *g, gir_binary_fn fn, gir_value *a, gir_value *b) {
  gir_node *n = mk(g, GIR_OP_binary, a, b);
  gir_attr_set_int(g, n, "fn", fn);
  return fin(g, n);
}

static gir_value *O(gir_node *n) { return n->out[0]; }
#define ADD(a, b) bin(g, GIR_BINARY_ADD, a, b)
#define RELU(x) un(g, GIR_UNARY_RELU, x)

/* k x k convolution, c -> m channels, "same" padding for odd k when pad. */
static gir_node *conv(gir_graph *g, gir_value *x, int64_t m, int64_t k, int pad) {
  gir_node *n = mk(g, GIR_OP_conv, x, cst(g, SH(m, x->shape.dims[1], k, k)));
  int64_t p = pad ? k / 2 : 0;
  gir_attr_set_ints(g, n, "pads", INTS(p, p, p, p));
  return fin(g, n);
}

static gir_node *pool(gir_graph *g, gir_value *x) {
  gir_node *n = mk(g, GIR_OP_pool, x, NULL);
  gir_attr_set_int(g, n, "fn", GIR_POOL_MAX);
  gir_attr_set_ints(g, n, "kernel", INTS(3, 3));
  gir_attr_set_ints(g, n, "pads", INTS(1, 1, 1, 1));
  return fin(g, n);
}

static gir_node *transpose(gir_graph *g, gir_value *x, const int64_t *perm) {
  gir_node *n = mk(g, GIR_OP_transpose, x, NULL);
  gir_attr_set_ints(g, n, "perm", perm, x->shape.rank);
  return fin(g, n);
}

static gir_node *cast(gir_graph *g, gir_value *x, gir_dtype to) {
  gir_node *n = mk(g, GIR_OP_cast, x, NULL);
  gir_attr_set_int(g, n, "to", to);
  return fin(g, n);
}

static gir_node *reduce(gir_graph *g, gir_reduce_fn fn, gir_value *x, int64_t axis, int keep) {
  gir_node *n = mk(g, GIR_OP_reduce, x, NULL);
  gir_attr_set_int(g, n, "fn", fn);
  gir_attr_set_ints(g, n, "axes", &axis, 1);
  gir_attr_set_int(g, n, "keepdims", keep);
  return fin(g, n);
}

static gir_node *softmax(gir_graph *g, gir_value *x) {
  gir_node *n = mk(g, GIR_OP_softmax, x, NULL);
  gir_attr_set_int(g, n, "axis", -1);
  return fin(g, n);
}

static gir_node *layer_norm(gir_graph *g, gir_value *x) {
  gir_node *n = mk(g, GIR_OP_layer_norm, x, NULL);
  gir_attr_set_int(g, n, "axis", -1);
  gir_attr_set_float(g, n, "epsilon", 1e-5);
  return fin(g, n);
}

static gir_node *topk(gir_graph *g, gir_value *x, int64_t k) {
  gir_node *n = mk(g, GIR_OP_topk, x, NULL);
  gir_attr_set_int(g, n, "k", k);
  gir_attr_set_int(g, n, "axis", -1);
  return fin(g, n);
}

static gir_node *reshape(gir_graph *g, gir_value *x, const int64_t *shape, int32_t rank) {
  gir_node *n = mk(g, GIR_OP_reshape, x, NULL);
  gir_attr_set_ints(g, n, "shape", shape, rank);
  return fin(g, n);
}

static gir_node *slice_last(gir_graph *g, gir_value *x, int64_t start, int64_t size) {
  gir_node *n = mk(g, GIR_OP_slice, x, NULL);
  int64_t st[GIR_MAX_RANK] = {0}, sp[GIR_MAX_RANK], sz[GIR_MAX_RANK];
  for (int i = 0; i < x->shape.rank; i++) {
    sp[i] = 1;
    sz[i] = x->shape.dims[i];
  }
  st[x->shape.rank - 1] = start;
  sz[x->shape.rank - 1] = size;
  gir_attr_set_ints(g, n, "starts", st, x->shape.rank);
  gir_attr_set_ints(g, n, "steps", sp, x->shape.rank);
  gir_attr_set_ints(g, n, "sizes", sz, x->shape.rank);
  return fin(g, n);
}

static gir_node *concat2(gir_graph *g, gir_value *a, gir_value *b, int64_t axis) {
  gir_node *n = mk(g, GIR_OP_concat, a, b);
  gir_attr_set_int(g, n, "axis", axis);
  return fin(g, n);
}

static void output(gir_graph *g, gir_node *n) { gir_graph_add_output(g, n->out[0]); }

/* --- checking partitions without trusting fusion/ --- */

/* 1 when some path leaves group gi and comes back into it. */
static int leaves_and_returns(const gir_graph *g, const fus_partition *p, int32_t gi, uint8_t *reach) {
  int32_t n = g->n_nodes;
  memset(reach, 0, (size_t)n);
  /* nodes are in topological order: one forward sweep finds everything reachable
   * from the group through a node outside it */
  for (int32_t k = 0; k < n; k++) {
    const gir_node *c = g->nodes[k];
    int from_outside_path = 0;
    for (int j = 0; j < c->n_in; j++) {
      const gir_value *v = c->in[j];
      if (!v || !v->producer || v->data) continue;
      int32_t q = v->producer->id;
      if ((p->group_of[q] == gi && p->group_of[k] != gi) || (reach[q] && p->group_of[q] != gi)) from_outside_path = 1;
    }
    if (!from_outside_path) continue;
    if (p->group_of[k] == gi) return 1;
    reach[k] = 1;
  }
  return 0;
}

/* Checks the invariants; returns 1 when they all hold. */
static int check_partition(const gir_graph *g, const fus_partition *p) {
  int ok = 1;
  int32_t n = g->n_nodes;
  int32_t *seen = calloc((size_t)n + 1, sizeof *seen);
  uint8_t *reach = calloc((size_t)n + 1, 1);
  for (int32_t i = 0; i < p->n_groups; i++) {
    const fus_group *gr = &p->groups[i];
    int masters = 0, opaque = 0;
    for (int32_t m = 0; m < gr->n_nodes; m++) {
      int32_t k = gr->nodes[m];
      if (k < 0 || k >= n) {
        ok = 0;
        continue;
      }
      seen[k]++;
      ok &= p->group_of[k] == i;
      gir_category c = gir_op_category(g->nodes[k]->op);
      masters += c == GIR_COMPLEX || c == GIR_REDUCTION;
      opaque += c == GIR_OPAQUE;
    }
    ok &= masters <= 1 && (!opaque || gr->n_nodes == 1);
    ok &= !leaves_and_returns(g, p, i, reach);
    /* a complex group: what follows the op has its output shape (unless the op is
     * a small matmul, whose product the kernel keeps in a buffer: partition.c,
     * phase 2), nothing before it (its inputs) is in the group */
    if (gr->category == GIR_COMPLEX) {
      const gir_node *m = g->nodes[gr->master];
      int small = m->op == GIR_OP_matmul && gir_value_numel(m->out[0]) <= 8192;
      memset(reach, 0, (size_t)n);
      reach[m->id] = 1;
      for (int32_t k = m->id + 1; k < n; k++) {
        const gir_node *c = g->nodes[k];
        if (p->group_of[k] != i) continue;
        for (int j = 0; j < c->n_in; j++)
          if (c->in[j] && c->in[j]->producer && reach[c->in[j]->producer->id]) reach[k] = 1;
        if (reach[k] && !small) ok &= gir_shape_equal(&c->out[0]->shape, &m->out[0]->shape);
      }
      for (int j = 0; j < m->n_in; j++)
        if (m->in[j] && m->in[j]->producer) ok &= p->group_of[m->in[j]->producer->id] != i;
    }
  }
  for (int32_t k = 0; k < n; k++) ok &= seen[k] == 1;
  gir_err e = {{0}};
  int v = fus_verify_partition(g, p, &e);
  if (v < 0) printf("     verify: %s\n", e.msg);
  free(seen);
  free(reach);
  return ok && v == 0;
}

typedef struct fx {
  gir_graph *g;
  gir_arena *a;
  fus_partition p;
} fx;

static fx start(void) { return (fx){.g = gir_graph_new("t"), .a = gir_arena_new()}; }

static int part(fx *f, int32_t cap, int opt_level) {
  fus_options o = fus_default_options();
  if (cap) o.max_group_nodes = cap;
  o.opt_level = opt_level;
  gir_err e = {{0}};
  int rc = fus_partition_graph(f->g, &o, f->a, &f->p, &e);
  if (!CHECKF(rc == 0, "%s", e.msg)) return 0;
  return CHECK(check_partition(f->g, &f->p));
}

static void done(fx *f) {
  gir_graph_free(f->g);
  gir_arena_free(f->a);
}

#define GROUP(n) (f.p.group_of[(n)->id])
#define SAME(a, b) (GROUP(a) == GROUP(b))

/* --- cases --- */

/* conv -> bias add -> relu: one group on the conv. */
static void test_conv_chain(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_value *x = input(g, SH(1, 3, 8, 8));
  gir_node *c = conv(g, x, 8, 3, 1), *b = ADD(O(c), cst(g, SH(8, 1, 1))), *r = RELU(O(b));
  output(g, r);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 1);
    CHECK_INT(f.p.groups[0].category, GIR_COMPLEX);
    CHECK_INT(f.p.groups[0].master, c->id);
    CHECK_INT(f.p.groups[0].n_nodes, 3);
    CHECK(SAME(c, r) && SAME(b, r));
    /* the kernel's interface: the activation, then the constants; one output */
    gir_value *io[8];
    CHECK_INT(fus_group_inputs(g, &f.p, 0, io, 8), 3);
    CHECK(io[0] == x && io[1] == c->in[1] && io[2] == b->in[1]);
    CHECK_INT(fus_group_outputs(g, &f.p, 0, io, 8), 1);
    CHECK(io[0] == O(r));
    CHECK_INT(fus_group_outputs(g, &f.p, 0, NULL, 0), 1);
    CHECK_INT(f.p.groups[0].n_graph_outputs, 1);
    CHECK_STR(fus_describe_group(g, &f.p, 0, f.a), "conv+add+relu");
  }
  done(&f);
}

/* conv -> relu -> conv -> add(block input) -> relu, the block input a graph
 * input, then the same block on a computed input (used by a conv and an add). */
static void test_residual(void) {
  for (int computed = 0; computed < 2; computed++) {
    fx f = start();
    gir_graph *g = f.g;
    gir_value *x = input(g, SH(1, 8, 8, 8));
    gir_node *c0 = NULL, *r0 = NULL;
    if (computed) {
      c0 = conv(g, x, 8, 3, 1);
      r0 = RELU(O(c0));
      x = O(r0);
    }
    gir_node *c1 = conv(g, x, 8, 3, 1), *r1 = RELU(O(c1));
    gir_node *c2 = conv(g, O(r1), 8, 3, 1), *a = ADD(O(c2), x), *r2 = RELU(O(a));
    output(g, r2);
    if (part(&f, 0, 1)) {
      CHECK_INT(f.p.n_groups, 2 + computed);
      CHECK(SAME(c1, r1) && SAME(c2, a) && SAME(a, r2) && !SAME(r1, c2));
      if (computed) {
        CHECK(SAME(c0, r0) && !SAME(r0, a) && !SAME(r0, c1));
        /* the block input is read by both groups from its own group's output */
        gir_value *io[8];
        int32_t ni = fus_group_inputs(g, &f.p, GROUP(a), io, 8);
        CHECK(ni >= 2 && io[0] == O(r1) && io[1] == x);
        CHECK_INT(fus_group_outputs(g, &f.p, GROUP(r0), io, 8), 1);
        CHECK(io[0] == O(r0));
      }
    }
    done(&f);
  }
}

/* x -> exp, x -> neg, add(exp, neg): one group, also with x computed; and the
 * same diamond hanging off an input that a conv also reads stays apart. */
static void test_diamond(void) {
  for (int computed = 0; computed < 2; computed++) {
    fx f = start();
    gir_graph *g = f.g;
    gir_value *x = input(g, SH(2, 16));
    gir_node *r = NULL;
    if (computed) {
      r = RELU(x);
      x = O(r);
    }
    gir_node *e = un(g, GIR_UNARY_EXP, x), *n = un(g, GIR_UNARY_NEG, x), *a = ADD(O(e), O(n));
    output(g, a);
    if (part(&f, 0, 1)) {
      CHECK_INT(f.p.n_groups, 1);
      CHECK_INT(f.p.groups[0].n_nodes, 3 + computed);
      CHECK_INT(f.p.groups[0].category, GIR_INJECTIVE);
      CHECK_INT(f.p.groups[0].master, a->id);
    }
    done(&f);
  }
  /* relu feeds two graph outputs through exp and neg: no post-dominator, so the
   * relu is not copied into both */
  fx f = start();
  gir_graph *g = f.g;
  gir_node *r = RELU(input(g, SH(4, 4)));
  gir_node *e = un(g, GIR_UNARY_EXP, O(r)), *n = un(g, GIR_UNARY_NEG, O(r));
  output(g, e);
  output(g, n);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 3);
    CHECK(!SAME(r, e) && !SAME(r, n) && !SAME(e, n));
  }
  done(&f);
}

/* relu feeds a conv and the add after it: the relu stays alone (fusing it into
 * the add would recompute it, and the conv reads it whole). */
static void test_conv_and_add_share_input(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_value *x = input(g, SH(1, 4, 6, 6));
  gir_node *r = RELU(x), *c = conv(g, O(r), 4, 1, 0), *a = ADD(O(c), O(r)), *r2 = RELU(O(a));
  output(g, r2);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 2);
    CHECK(SAME(c, a) && SAME(a, r2) && !SAME(r, c));
    CHECK_INT(f.p.groups[GROUP(c)].master, c->id);
  }
  done(&f);
  /* ... and with an element-wise op between: relu -> sigmoid -> add(conv, ·) */
  f = start();
  g = f.g;
  x = input(g, SH(1, 4, 6, 6));
  r = RELU(x);
  c = conv(g, O(r), 4, 1, 0);
  gir_node *s = un(g, GIR_UNARY_SIGMOID, O(r));
  a = ADD(O(c), O(s));
  output(g, a);
  if (part(&f, 0, 1)) {
    CHECK(!SAME(r, c) && !SAME(r, s) && SAME(c, a));
    /* sigmoid is an element-wise side input of the conv's epilogue */
    CHECK(SAME(s, a));
  }
  done(&f);
}

/* transpose -> cast -> reduce: one group on the reduction; the reduction does not
 * fuse forward, but what follows folds into the next reduction. */
static void test_injective_into_reduction(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_value *x = input(g, SH(4, 8, 6));
  gir_node *t = transpose(g, x, (int64_t[]){2, 0, 1}), *c = cast(g, O(t), GIR_F64);
  gir_node *r = reduce(g, GIR_REDUCE_SUM, O(c), 1, 1);
  gir_node *e = un(g, GIR_UNARY_EXP, O(r)), *r2 = reduce(g, GIR_REDUCE_MAX, O(e), 2, 0);
  output(g, r2);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 2);
    CHECK(SAME(t, c) && SAME(c, r) && !SAME(r, e) && SAME(e, r2));
    CHECK_INT(f.p.groups[0].category, GIR_REDUCTION);
    CHECK_INT(f.p.groups[0].master, r->id);
    CHECK_STR(fus_describe_group(g, &f.p, 0, f.a), "transpose+cast+sum");
  }
  done(&f);
  /* a value used by a reduction and by the broadcast after it (decomposed
   * softmax): nothing fuses, nothing is recomputed */
  f = start();
  g = f.g;
  x = input(g, SH(4, 8));
  gir_node *rl = RELU(x), *s = reduce(g, GIR_REDUCE_SUM, O(rl), 1, 1), *d = bin(g, GIR_BINARY_DIV, O(rl), O(s));
  output(g, d);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 3);
    CHECK(!SAME(rl, s) && !SAME(rl, d) && !SAME(s, d));
  }
  done(&f);
}

/* exp -> topk -> neg: the topk is a barrier. */
static void test_opaque_barrier(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_value *x = input(g, SH(3, 10));
  gir_node *e = un(g, GIR_UNARY_EXP, x), *t = topk(g, O(e), 4), *n = un(g, GIR_UNARY_NEG, t->out[0]);
  gir_node *m = bin(g, GIR_BINARY_MUL, O(n), O(n));
  output(g, m);
  gir_graph_add_output(g, t->out[1]);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 3);
    CHECK(!SAME(e, t) && !SAME(t, n) && SAME(n, m));
    CHECK_INT(f.p.groups[GROUP(t)].category, GIR_OPAQUE);
    CHECK_INT(f.p.groups[GROUP(t)].n_outputs, 2);
    CHECK_INT(f.p.groups[GROUP(t)].n_graph_outputs, 1);
  }
  done(&f);
}

/* softmax and layer_norm take their element-wise producers; their consumers are
 * separate kernels (a reduction never gets an epilogue, as in TVM); a matmul
 * group never takes a reduction. */
static void test_softmax_layer_norm(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_value *x = input(g, SH(2, 4, 16)), *y = input(g, SH(2, 4, 16));
  gir_node *m = bin(g, GIR_BINARY_MUL, x, cst(g, SH(1))), *s = softmax(g, O(m)), *r = RELU(O(s));
  gir_node *a = ADD(O(r), y), *ln = layer_norm(g, O(a)), *m2 = bin(g, GIR_BINARY_MUL, O(ln), cst(g, SH(16)));
  output(g, m2);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 3);
    CHECK(SAME(m, s) && !SAME(s, r) && SAME(r, a) && SAME(a, ln) && !SAME(ln, m2));
    CHECK_INT(f.p.groups[GROUP(s)].category, GIR_REDUCTION);
    CHECK_INT(f.p.groups[GROUP(ln)].master, ln->id);
    CHECK_INT(f.p.groups[GROUP(m2)].category, GIR_INJECTIVE);
  }
  done(&f);
  /* matmul -> bias add -> softmax: {matmul, add}, {softmax} */
  f = start();
  g = f.g;
  gir_value *in = input(g, SH(3, 8));
  gir_node *mm = mk(g, GIR_OP_matmul, in, cst(g, SH(8, 5)));
  fin(g, mm);
  gir_node *b = ADD(O(mm), cst(g, SH(5))), *sm = softmax(g, O(b));
  output(g, sm);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 2);
    CHECK(SAME(mm, b) && !SAME(b, sm));
  }
  done(&f);
}

/* A chain of 1000 adds: groups of at most max_group_nodes members. */
static void test_size_cap(void) {
  int32_t caps[] = {256, 1000, 7};
  int32_t want[] = {4, 1, 143};
  for (int c = 0; c < 3; c++) {
    fx f = start();
    gir_graph *g = f.g;
    gir_value *v = input(g, SH(1, 16));
    gir_value *k = cst(g, SH(16));
    for (int i = 0; i < 1000; i++) v = O(ADD(v, k));
    gir_graph_add_output(g, v);
    if (part(&f, caps[c], 1)) {
      CHECK_INT(f.p.n_groups, want[c]);
      int32_t biggest = 0;
      for (int32_t i = 0; i < f.p.n_groups; i++)
        if (f.p.groups[i].n_nodes > biggest) biggest = f.p.groups[i].n_nodes;
      CHECK_INT(biggest, caps[c] < 1000 ? caps[c] : 1000);
      if (c == 0) CHECK_INT(f.p.groups[3].n_nodes, 1000 - 3 * 256);
    }
    done(&f);
  }
  /* the cap counts members, not paths (apache/tvm#6327): a transpose before a
   * 5-node diamond makes a 6-node group under a cap of 6, and stays out under 5 */
  for (int32_t cap = 5; cap <= 6; cap++) {
    fx f = start();
    gir_graph *g = f.g;
    gir_node *t = transpose(g, input(g, SH(4, 6)), (int64_t[]){1, 0});
    gir_node *e1 = un(g, GIR_UNARY_EXP, O(t)), *e2 = un(g, GIR_UNARY_NEG, O(e1));
    gir_node *n1 = un(g, GIR_UNARY_NEG, O(t)), *n2 = un(g, GIR_UNARY_ABS, O(n1)), *a = ADD(O(e2), O(n2));
    output(g, a);
    if (part(&f, cap, 1)) {
      CHECK_INT(f.p.n_groups, cap == 6 ? 1 : 2);
      CHECK(SAME(e1, a) && SAME(n2, a));
      CHECK(SAME(t, a) == (cap == 6));
    }
    done(&f);
  }
  /* groups on the way to the post-dominator count too: t -> t2 -> t3 -> add(t3, t)
   * under a cap of 3 cannot take t once t2, t3 and the add are one group */
  fx f = start();
  gir_graph *g = f.g;
  int64_t perm[2] = {1, 0};
  gir_node *t = transpose(g, input(g, SH(5, 5)), perm), *t2 = transpose(g, O(t), perm);
  gir_node *t3 = transpose(g, O(t2), perm), *a = ADD(O(t3), O(t));
  output(g, a);
  if (part(&f, 3, 1)) {
    CHECK_INT(f.p.n_groups, 2);
    CHECK(!SAME(t, a) && SAME(t2, a) && SAME(t3, a));
  }
  done(&f);
}

/* opt_level 0: one node per group, in order. */
static void test_opt_level_0(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_node *c = conv(g, input(g, SH(1, 3, 8, 8)), 4, 3, 1), *r = RELU(O(c));
  output(g, RELU(O(pool(g, O(r)))));
  if (part(&f, 0, 0)) {
    CHECK_INT(f.p.n_groups, g->n_nodes);
    for (int32_t i = 0; i < f.p.n_groups; i++) CHECK(f.p.groups[i].n_nodes == 1 && f.p.groups[i].nodes[0] == i);
  }
  done(&f);
}

/* Graph outputs inside groups: a graph output ends its group (it never fuses into
 * its consumers: an opaque use), and the group says it writes one. */
static void test_graph_outputs(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_value *x = input(g, SH(1, 4, 5, 5));
  gir_node *c = conv(g, x, 4, 3, 1), *b = ADD(O(c), cst(g, SH(4, 1, 1))), *r = RELU(O(b));
  output(g, b);
  output(g, r);
  gir_node *c2 = conv(g, O(r), 4, 1, 0), *r2 = RELU(O(c2));
  output(g, r2);
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 3);
    CHECK(SAME(c, b) && !SAME(b, r) && SAME(c2, r2));
    const fus_group *gb = &f.p.groups[GROUP(b)], *gr = &f.p.groups[GROUP(r)];
    CHECK(gb->n_outputs == 1 && gb->outputs[0] == O(b) && gb->n_graph_outputs == 1);
    /* r is a graph output and read by the next conv's group: one value, written once */
    CHECK(gr->n_outputs == 1 && gr->outputs[0] == O(r) && gr->n_graph_outputs == 1);
    CHECK_INT(f.p.groups[GROUP(r2)].n_graph_outputs, 1);
  }
  done(&f);
}

/* What a complex group's epilogue may take: element-wise uses of the conv output
 * (not a broadcast of it, not a reshape), and injective side inputs (phase 2). */
static void test_complex_epilogue(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_value *x = input(g, SH(1, 4, 4, 4)), *y = input(g, SH(1, 4, 4, 4));
  gir_node *c = conv(g, x, 4, 4, 0); /* 1x4x1x1, broadcast into the add */
  gir_node *a = ADD(O(c), y);
  output(g, a);
  if (part(&f, 0, 1)) CHECK(!SAME(c, a));
  done(&f);

  f = start();
  g = f.g;
  x = input(g, SH(1, 4, 4, 4));
  c = conv(g, x, 4, 3, 1);
  gir_node *rs = reshape(g, O(c), INTS(1, 64));
  output(g, RELU(O(rs)));
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 2);
    CHECK(!SAME(c, rs));
  }
  done(&f);

  f = start();
  g = f.g;
  x = input(g, SH(1, 4, 4, 4));
  y = input(g, SH(1, 4, 4, 4));
  c = conv(g, x, 4, 3, 1);
  gir_node *t = transpose(g, y, (int64_t[]){0, 1, 3, 2});
  a = ADD(O(c), O(t));
  output(g, RELU(O(a)));
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 1);
    CHECK_INT(f.p.groups[0].master, c->id);
    gir_value *io[4];
    CHECK_INT(fus_group_inputs(g, &f.p, 0, io, 4), 3);
    CHECK(io[0] == x && io[1] == y);
  }
  done(&f);

  /* two convs meeting in one add: the first takes the add, the second stays
   * alone (one master per group) — a ResNet projection block */
  f = start();
  g = f.g;
  x = input(g, SH(1, 4, 4, 4));
  gir_node *c1 = conv(g, x, 4, 3, 1), *c2 = conv(g, x, 4, 1, 0), *s = ADD(O(c1), O(c2));
  output(g, RELU(O(s)));
  if (part(&f, 0, 1)) {
    CHECK_INT(f.p.n_groups, 2);
    CHECK(SAME(c1, s) != SAME(c2, s));
  }
  done(&f);
}

static void test_errors(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_node *r = RELU(input(g, SH(2)));
  output(g, r);
  r->id = 5; /* not compacted */
  gir_err e = {{0}};
  CHECK(fus_partition_graph(g, NULL, f.a, &f.p, &e) < 0);
  CHECK_CONTAINS(e.msg, "gir_graph_compact");
  r->id = 0;
  /* an empty graph: no groups */
  done(&f);
  f = start();
  e.msg[0] = 0;
  CHECK(fus_partition_graph(f.g, NULL, f.a, &f.p, &e) == 0 && f.p.n_groups == 0);
  done(&f);
}

/* The checkers themselves refuse broken partitions made by hand: {exp, abs} +
 * {neg} over the chain exp -> neg -> abs (a path leaves a group and comes back),
 * and a conv with a reduction in one group (two masters). */
static void test_checkers_reject(void) {
  fx f = start();
  gir_graph *g = f.g;
  gir_node *e = un(g, GIR_UNARY_EXP, input(g, SH(4))), *n = un(g, GIR_UNARY_NEG, O(e)), *a = un(g, GIR_UNARY_ABS, O(n));
  output(g, a);
  int32_t group_of[3] = {0, 1, 0}, g0[2] = {0, 2}, g1[1] = {1};
  gir_value *outs0[1] = {O(a)}, *outs1[1] = {O(n)}, *ins0[2] = {e->in[0], O(n)}, *ins1[1] = {O(e)};
  fus_group groups[2] = {
      {.id = 0, .category = GIR_INJECTIVE, .master = 2, .n_nodes = 2, .nodes = g0, .n_inputs = 2, .inputs = ins0,
       .n_outputs = 1, .outputs = outs0, .n_graph_outputs = 1},
      {.id = 1, .category = GIR_INJECTIVE, .master = 1, .n_nodes = 1, .nodes = g1, .n_inputs = 1, .inputs = ins1,
       .n_outputs = 1, .outputs = outs1},
  };
  fus_partition p = {.n_groups = 2, .groups = groups, .group_of = group_of};
  CHECK(!check_partition(g, &p));
  gir_err err = {{0}};
  CHECK(fus_verify_partition(g, &p, &err) < 0);
  done(&f);

  f = start();
  g = f.g;
  gir_node *c = conv(g, input(g, SH(1, 2, 3, 3)), 2, 1, 0), *r = reduce(g, GIR_REDUCE_SUM, O(c), 3, 1);
  output(g, r);
  int32_t go[2] = {0, 0}, nodes[2] = {0, 1};
  gir_value *o1[1] = {O(r)};
  fus_group one = {.id = 0, .category = GIR_COMPLEX, .master = 0, .n_nodes = 2, .nodes = nodes, .n_outputs = 1,
                   .outputs = o1, .n_graph_outputs = 1};
  p = (fus_partition){.n_groups = 1, .groups = &one, .group_of = go};
  CHECK(!check_partition(g, &p));
  err.msg[0] = 0;
  CHECK(fus_verify_partition(g, &p, &err) < 0);
  CHECK_CONTAINS(err.msg, "complex/reduction");
  done(&f);
}

/* --- random graphs --- */

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng_state >> 33) % n;
}

/* A random DAG of same-shaped (1x4x4x4) values mixing every kind of op. */
static gir_graph *random_graph(void) {
  gir_graph *g = gir_graph_new("rand");
  gir_value *vals[200];
  int nv = 0;
  gir_shape s = SH(1, 4, 4, 4);
  vals[nv++] = input(g, s);
  if (rnd(2)) vals[nv++] = input(g, s);
  int n_ops = 5 + (int)rnd(40);
  for (int i = 0; i < n_ops && nv < 190; i++) {
    gir_value *x = vals[nv - 1 - (int)rnd((uint32_t)(nv < 4 ? nv : 4))], *y = vals[rnd((uint32_t)nv)];
    gir_node *n = NULL;
    switch (rnd(13)) {
    case 0: n = RELU(x); break;
    case 1: n = un(g, GIR_UNARY_EXP, x); break;
    case 2: n = ADD(x, y); break;
    case 3: n = bin(g, GIR_BINARY_MUL, x, cst(g, SH(4, 1, 1))); break;
    case 4: n = conv(g, x, 4, 1 + 2 * (int)rnd(2), 1); break;
    case 5: n = pool(g, x); break;
    case 6: n = transpose(g, x, (int64_t[]){0, 1, 3, 2}); break;
    case 7: n = softmax(g, x); break;
    case 8: n = ADD(y, O(reduce(g, GIR_REDUCE_SUM, x, 3, 1))); break;
    case 9: n = topk(g, x, 4); break;
    case 10: n = fin(g, mk(g, GIR_OP_matmul, x, y)); break;
    case 11: n = reshape(g, O(reshape(g, x, INTS(1, 4, 16))), INTS(1, 4, 4, 4)); break;
    default: n = layer_norm(g, ADD(x, y)->out[0]); break;
    }
    vals[nv++] = n->out[0];
    if (rnd(6) == 0) gir_graph_add_output(g, n->out[0]);
  }
  gir_graph_add_output(g, vals[nv - 1]);
  gir_graph_compact(g);
  return g;
}

static void test_random_graphs(void) {
  const char *seed = getenv("KILN_TEST_SEED");
  rng_state = seed ? strtoull(seed, NULL, 10) : 12345;
  int bad = 0, fused = 0, total = 0;
  for (int t = 0; t < 300 && bad < 3; t++) {
    gir_graph *g = random_graph();
    int32_t caps[] = {2, 3, 5, 256};
    for (int c = 0; c < 4; c++) {
      gir_arena *a = gir_arena_new();
      fus_partition p;
      fus_options o = {.max_group_nodes = caps[c], .opt_level = 1};
      gir_err e = {{0}};
      if (fus_partition_graph(g, &o, a, &p, &e) < 0 || !check_partition(g, &p)) {
        printf("     random graph %d (cap %d) failed: %s\n", t, caps[c], e.msg);
        gir_print(g, stdout);
        bad++;
      } else {
        for (int32_t i = 0; i < p.n_groups; i++) bad += p.groups[i].n_nodes > caps[c];
        fused += g->n_nodes - p.n_groups;
        total += g->n_nodes;
      }
      gir_arena_free(a);
    }
    gir_graph_free(g);
  }
  CHECK_INT(bad, 0);
  CHECKF(fused > total / 5, "only %d of %d nodes fused away", fused, total); /* the property test does fuse */
  printf("random graphs: %d of %d nodes fused away\n", fused, total);
}

/* One LSTM step, as the importer builds it: h @ R^T (a small matmul) + x W^T, four
 * gate slices, activations, the cell and hidden state, concat [h; c]. The small
 * product grows along the injective paths into one group with one exit; the same
 * step at a size whose product does not stay small keeps its old three groups. */
static void lstm_step(int64_t hidden, int *groups, int *one_exit_group) {
  fx f = start();
  gir_graph *g = f.g;
  int64_t H = hidden;
  gir_value *h = input(g, SH(1, 1, H)), *c = input(g, SH(1, 1, H)), *xw = input(g, SH(1, 1, 4 * H));
  gir_node *mm = fin(g, mk(g, GIR_OP_matmul, h, cst(g, SH(H, 4 * H))));
  gir_node *pre = ADD(O(mm), xw);
  gir_value *gate[4];
  for (int k = 0; k < 4; k++)
    gate[k] = O(un(g, k == 3 ? GIR_UNARY_TANH : GIR_UNARY_SIGMOID, O(slice_last(g, O(pre), k * H, H))));
  gir_node *cell = ADD(O(bin(g, GIR_BINARY_MUL, gate[2], c)), O(bin(g, GIR_BINARY_MUL, gate[0], gate[3])));
  gir_node *hid = bin(g, GIR_BINARY_MUL, gate[1], O(un(g, GIR_UNARY_TANH, O(cell))));
  gir_node *state = concat2(g, O(hid), O(cell), 0);
  output(g, state);
  if (part(&f, 0, 1)) {
    *groups = f.p.n_groups;
    *one_exit_group = SAME(mm, state) && f.p.groups[GROUP(state)].n_outputs == 1;
  }
  done(&f);
}

static void test_small_matmul_injective(void) {
  int groups = 0, fused = 0;
  lstm_step(32, &groups, &fused); /* a [1,1,128] product */
  CHECK_INT(groups, 1);
  CHECK(fused);
  lstm_step(2100, &groups, &fused); /* [1,1,8400]: over SMALL_MATMUL_OUT */
  CHECK(groups > 1);
  CHECK(!fused);
  /* a product that is only moved (a re-view, an attention head's transpose)
   * stays alone: a reshape is a view in the plan, horizontal fusion arranges the
   * copies of merged projections */
  fx f = start();
  gir_graph *g = f.g;
  gir_node *mm = fin(g, mk(g, GIR_OP_matmul, input(g, SH(4, 8)), cst(g, SH(8, 16))));
  gir_node *r = reshape(g, O(mm), INTS(4, 4, 4));
  gir_node *t = transpose(g, O(r), (int64_t[]){1, 0, 2});
  gir_node *mm2 = fin(g, mk(g, GIR_OP_matmul, O(t), cst(g, SH(4, 4))));
  output(g, mm2);
  if (part(&f, 0, 1)) CHECK(!SAME(mm, r) && !SAME(mm, t));
  done(&f);
  /* ... one that is reshaped and computed on takes both */
  f = start();
  g = f.g;
  mm = fin(g, mk(g, GIR_OP_matmul, input(g, SH(4, 8)), cst(g, SH(8, 16))));
  r = reshape(g, O(mm), INTS(4, 4, 4));
  gir_node *sg = un(g, GIR_UNARY_SIGMOID, O(transpose(g, O(r), (int64_t[]){1, 0, 2})));
  mm2 = fin(g, mk(g, GIR_OP_matmul, O(sg), cst(g, SH(4, 4))));
  output(g, mm2);
  if (part(&f, 0, 1)) {
    CHECK(SAME(mm, r) && SAME(mm, sg));
    CHECK(!SAME(sg, mm2));
  }
  done(&f);
}

int main(void) {
  test_conv_chain();
  test_residual();
  test_diamond();
  test_conv_and_add_share_input();
  test_injective_into_reduction();
  test_opaque_barrier();
  test_softmax_layer_norm();
  test_size_cap();
  test_opt_level_0();
  test_graph_outputs();
  test_complex_epilogue();
  test_small_matmul_injective();
  test_errors();
  test_checkers_reject();
  test_random_graphs();
  return check_finish("test_fusion");
}
