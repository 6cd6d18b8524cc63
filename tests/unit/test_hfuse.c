/* test_hfuse.c — tests of horizontal fusion (graphir/pass_hfuse.c): tiny graphs
 * of sibling matmuls and convs on one input, the nodes expected after gir_hfuse
 * and after the fold that follows it in the pipeline (gir_verify clean after
 * each), the siblings that must stay apart (an element-wise epilogue, a graph
 * output, a different window, group > 1, a non-constant weight, weights over
 * the size limit, a group of one), more siblings than a concat takes, and the
 * numbers: every graph is run by the reference interpreter (te/interp.h)
 * before the pass, after it and after the fold, on seeded random inputs, and
 * the outputs must agree to 1e-5 of their scale.
 *
 * With the light ResNet-50 present (scripts/model_path.sh), the whole model goes
 * through import → fold → simplify → hfuse: its only siblings (the first
 * bottleneck's 1x1 conv and projection shortcut) are left alone, because their
 * results feed a relu and a residual add. */
#include <stdlib.h>
#include "check.h"
#include "graph_util.h"
#include "fold.h"
#include "graph.h"
#include "importer.h"
#include "interp.h"
#include "passes.h"
#include "simplify.h"

#define NARGS64(...) ((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SH(...) ((gir_shape){.rank = NARGS64(__VA_ARGS__), .dims = {__VA_ARGS__}})
#define INTS(...) (int64_t[]){__VA_ARGS__}, NARGS64(__VA_ARGS__)

/* --- graph building --- */

static gir_value *input(gir_graph *g, gir_shape s) { return tu_input(g, GIR_F32, s); }

static gir_value *crand(gir_graph *g, gir_shape s, rng *r) {
  gir_value *v = gir_const_new(g, NULL, GIR_F32, &s, NULL);
  for (int64_t i = 0; i < gir_value_numel(v); i++) gir_store_f64(GIR_F32, v->data, i, rnd(r));
  return v;
}

static gir_value *node(gir_graph *g, gir_op op, gir_value *a, gir_value *b) {
  gir_value *ins[2] = {a, b};
  return tu_done(g, gir_node_new(g, op, NULL, ins, b ? 2 : 1, 1));
}

static gir_value *matmul(gir_graph *g, gir_value *x, gir_value *w) { return node(g, GIR_OP_matmul, x, w); }

static gir_value *add(gir_graph *g, gir_value *a, gir_value *b) {
  gir_node *n = gir_node_new(g, GIR_OP_binary, NULL, (gir_value *[]){a, b}, 2, 1);
  gir_attr_set_int(g, n, "fn", GIR_BINARY_ADD);
  return tu_done(g, n);
}

static gir_value *relu(gir_graph *g, gir_value *x) {
  gir_node *n = gir_node_new(g, GIR_OP_unary, NULL, &x, 1, 1);
  gir_attr_set_int(g, n, "fn", GIR_UNARY_RELU);
  return tu_done(g, n);
}

static gir_value *reshape(gir_graph *g, gir_value *x, const int64_t *dims, int32_t rank) {
  gir_node *n = gir_node_new(g, GIR_OP_reshape, NULL, &x, 1, 1);
  gir_attr_set_ints(g, n, "shape", dims, rank);
  return tu_done(g, n);
}

/* x flattened: the consumer a slice can join for free. */
static gir_value *flat(gir_graph *g, gir_value *x) {
  int64_t n = gir_value_numel(x);
  return reshape(g, x, &n, 1);
}

static gir_value *conv(gir_graph *g, gir_value *x, gir_value *w, gir_value *b, int64_t stride, int64_t pad,
                       int64_t group) {
  gir_node *n = gir_node_new(g, GIR_OP_conv, NULL, (gir_value *[]){x, w, b}, b ? 3 : 2, 1);
  gir_attr_set_ints(g, n, "strides", INTS(stride, stride));
  gir_attr_set_ints(g, n, "pads", INTS(pad, pad, pad, pad));
  gir_attr_set_ints(g, n, "dilations", INTS(1, 1));
  gir_attr_set_int(g, n, "group", group);
  return tu_done(g, n);
}


static int verify_(const gir_graph *g, int line) {
  gir_err e = {{0}};
  return CHECKF(gir_verify(g, &e) == 0, "line %d: verify: %s", line, e.msg);
}

/* --- running --- */

/* Output i's error against want, relative to want's magnitude. */
static double rel_err(const gir_value *v, const void *got, const void *want) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < gir_value_numel(v); i++) {
    double a = gir_load_f64(v->dtype, got, i), b = gir_load_f64(v->dtype, want, i);
    if (!(fabs(a - b) <= worst)) worst = fabs(a - b); /* NaN counts as the worst */
    if (fabs(b) > scale) scale = fabs(b);
  }
  return worst / (scale > 0 ? scale : 1);
}

typedef struct run {
  gir_arena *a;
  void **in;
  void **ref; /* outputs before the pass */
  const char **names;
} run;

/* Random inputs and the reference outputs of the untouched graph. */
static run run_before(const gir_graph *g, uint64_t seed) {
  run r = {.a = gir_arena_new()};
  rng rg = {seed * 7919u + 17u};
  r.in = gir_arena_calloc(r.a, (size_t)g->n_inputs + 1, sizeof *r.in);
  r.ref = gir_arena_calloc(r.a, (size_t)g->n_outputs + 1, sizeof *r.ref);
  r.names = gir_arena_calloc(r.a, (size_t)g->n_outputs + 1, sizeof *r.names);
  for (int i = 0; i < g->n_inputs; i++) {
    const gir_value *v = g->inputs[i];
    r.in[i] = gir_arena_alloc(r.a, (size_t)gir_value_nbytes(v) + 1);
    for (int64_t j = 0; j < gir_value_numel(v); j++) gir_store_f64(v->dtype, r.in[i], j, rnd(&rg));
  }
  for (int i = 0; i < g->n_outputs; i++) r.names[i] = g->outputs[i]->name;
  gir_err e = {{0}};
  CHECKF(lower_interpret(g, (const void *const *)r.in, r.ref, r.a, &e) == 0, "interpret: %s", e.msg);
  return r;
}

/* Runs g again and compares with the reference; output names must not change. */
static void compare_(const gir_graph *g, const run *r, const char *stage, int line) {
  void **got = gir_arena_calloc(r->a, (size_t)g->n_outputs + 1, sizeof *got);
  gir_err e = {{0}};
  if (!CHECKF(lower_interpret(g, (const void *const *)r->in, got, r->a, &e) == 0, "line %d (%s): interpret: %s",
              line, stage, e.msg))
    return;
  for (int i = 0; i < g->n_outputs; i++) {
    CHECKF(!strcmp(g->outputs[i]->name, r->names[i]), "line %d (%s): output %d is '%s', was '%s'", line, stage, i,
           g->outputs[i]->name, r->names[i]);
    double err = rel_err(g->outputs[i], got[i], r->ref[i]);
    CHECKF(err <= 1e-5, "line %d (%s): output %d differs by %g", line, stage, i, err);
  }
}

/* hfuse → verify → compare → fold → verify → compare; returns the stats. */
static gir_hfuse_stats hfuse_(gir_graph *g, int64_t max_bytes, uint64_t seed, int line) {
  verify_(g, line);
  run r = run_before(g, seed);
  gir_hfuse_stats st;
  memset(&st, 0, sizeof st);
  gir_err e = {{0}};
  CHECKF(gir_hfuse(g, max_bytes, &st, &e) == 0, "line %d: hfuse: %s", line, e.msg);
  verify_(g, line);
  compare_(g, &r, "after hfuse", line);
  gir_evaluator ev = lower_fold_evaluator();
  int32_t folded = 0;
  gir_fold_constants(g, &ev, 0, &folded, &e);
  verify_(g, line);
  compare_(g, &r, "after fold", line);
  gir_arena_free(r.a);
  return st;
}
#define HFUSE(g, max_bytes, seed) hfuse_(g, max_bytes, seed, __LINE__)

/* --- matmuls --- */

/* Q/K/V: three projections of x, biases of different shapes (per column, per
 * column with leading 1s and the constant first, none), each reshaped into
 * heads → one matmul, one add, three slices. */
static void test_qkv(void) {
  rng r = {1};
  gir_graph *g = gir_graph_new("qkv");
  gir_value *x = input(g, SH(2, 5, 8));
  gir_value *q = add(g, matmul(g, x, crand(g, SH(8, 4), &r)), crand(g, SH(4), &r));
  gir_value *k = add(g, crand(g, SH(1, 1, 4), &r), matmul(g, x, crand(g, SH(8, 4), &r)));
  gir_value *v = matmul(g, x, crand(g, SH(8, 6), &r));
  gir_graph_add_output(g, reshape(g, q, INTS(2, 5, 2, 2)));
  gir_graph_add_output(g, reshape(g, k, INTS(2, 5, 2, 2)));
  gir_graph_add_output(g, reshape(g, v, INTS(2, 5, 2, 3)));
  gir_hfuse_stats st = HFUSE(g, GIR_HFUSE_MAX_WEIGHT_BYTES, 1);
  CHECK_INT(st.matmul_groups, 1);
  CHECK_INT(st.matmuls, 3);
  CHECK_INT(st.biases, 2);
  CHECK_INT(st.left_out, 0);
  CHECK_INT(tu_count_op(g, GIR_OP_matmul), 1);
  CHECK_INT(tu_count_op(g, GIR_OP_binary), 1);
  CHECK_INT(tu_count_op(g, GIR_OP_slice), 3);
  CHECK_INT(tu_count_op(g, GIR_OP_concat), 0); /* folded */
  CHECK_INT(g->n_nodes, 8);                 /* matmul, add, 3 slices, 3 reshapes */
  for (int k2 = 0; k2 < g->n_nodes; k2++) {
    const gir_node *n = g->nodes[k2];
    if (n->op == GIR_OP_matmul) {
      CHECK(n->in[0] == x);
      CHECK(n->in[1]->data && n->in[1]->shape.rank == 2 && n->in[1]->shape.dims[0] == 8 &&
            n->in[1]->shape.dims[1] == 14);
    }
    if (n->op == GIR_OP_binary) CHECK(n->in[1]->data && n->in[1]->shape.rank == 1 && n->in[1]->shape.dims[0] == 14);
  }
  gir_graph_free(g);
}

/* Biases holding one value for all columns: a scalar and a [1] (broadcast to
 * the columns), next to one per column; the results go to a softmax and a
 * transpose (a reduction and a data-movement op: both take the slice in). */
static void test_scalar_bias(void) {
  rng r = {2};
  gir_graph *g = gir_graph_new("scalar_bias");
  gir_value *x = input(g, SH(3, 6));
  gir_value *a = add(g, matmul(g, x, crand(g, SH(6, 5), &r)), crand(g, (gir_shape){.rank = 0}, &r));
  gir_value *b = add(g, matmul(g, x, crand(g, SH(6, 2), &r)), crand(g, SH(1), &r));
  gir_value *c = add(g, matmul(g, x, crand(g, SH(6, 3), &r)), crand(g, SH(1, 3), &r));
  gir_node *sm = gir_node_new(g, GIR_OP_softmax, NULL, &a, 1, 1);
  gir_attr_set_int(g, sm, "axis", 1);
  gir_graph_add_output(g, tu_done(g, sm));
  gir_node *tr = gir_node_new(g, GIR_OP_transpose, NULL, &b, 1, 1);
  gir_attr_set_ints(g, tr, "perm", INTS(1, 0));
  gir_graph_add_output(g, tu_done(g, tr));
  gir_graph_add_output(g, flat(g, c));
  gir_hfuse_stats st = HFUSE(g, 0, 2);
  CHECK_INT(st.matmul_groups, 1);
  CHECK_INT(st.biases, 3);
  CHECK_INT(tu_count_op(g, GIR_OP_matmul), 1);
  CHECK_INT(tu_count_op(g, GIR_OP_broadcast_to), 0); /* folded */
  CHECK_INT(tu_count_op(g, GIR_OP_slice), 3);
  gir_graph_free(g);
}

/* Siblings whose slice would cost a kernel stay apart: one with an element-wise
 * epilogue (relu), one that is a graph output, one whose bias add is also read
 * elsewhere (the add is not taken, so the matmul's consumer is element-wise),
 * one read by two reshapes. The two plain ones merge. */
static void test_left_out(void) {
  rng r = {3};
  gir_graph *g = gir_graph_new("left_out");
  gir_value *x = input(g, SH(4, 8));
  gir_graph_add_output(g, relu(g, matmul(g, x, crand(g, SH(8, 3), &r))));
  gir_graph_add_output(g, matmul(g, x, crand(g, SH(8, 3), &r)));
  gir_value *m = matmul(g, x, crand(g, SH(8, 3), &r));
  gir_graph_add_output(g, add(g, m, crand(g, SH(3), &r)));
  gir_graph_add_output(g, flat(g, m));
  gir_value *two = matmul(g, x, crand(g, SH(8, 2), &r));
  gir_graph_add_output(g, flat(g, two));
  gir_graph_add_output(g, reshape(g, two, INTS(2, 2, 2)));
  gir_graph_add_output(g, flat(g, matmul(g, x, crand(g, SH(8, 5), &r))));
  gir_graph_add_output(g, flat(g, add(g, matmul(g, x, crand(g, SH(8, 7), &r)), crand(g, SH(7), &r))));
  gir_hfuse_stats st = HFUSE(g, 0, 3);
  CHECK_INT(st.matmul_groups, 1);
  CHECK_INT(st.matmuls, 2);
  CHECK_INT(st.left_out, 4);
  CHECK_INT(tu_count_op(g, GIR_OP_matmul), 5);
  CHECK_INT(tu_count_op(g, GIR_OP_slice), 2);
  gir_graph_free(g);
}

/* Nothing to merge: a non-constant weight, a sibling on another input,
 * weights over the limit (96 bytes, limit 95). */
static void test_untouched(void) {
  rng r = {4};
  for (int c = 0; c < 3; c++) {
    gir_graph *g = gir_graph_new("untouched");
    gir_value *x = input(g, SH(2, 4));
    gir_graph_add_output(g, flat(g, matmul(g, x, crand(g, SH(4, 3), &r))));
    if (c == 0) gir_graph_add_output(g, flat(g, matmul(g, x, input(g, SH(4, 3)))));
    if (c == 1) gir_graph_add_output(g, flat(g, matmul(g, input(g, SH(2, 4)), crand(g, SH(4, 3), &r))));
    if (c == 2) gir_graph_add_output(g, flat(g, matmul(g, x, crand(g, SH(4, 3), &r))));
    int before = g->n_nodes;
    gir_hfuse_stats st = HFUSE(g, c == 2 ? 95 : 0, 4 + c);
    CHECKF(g->n_nodes == before && st.matmul_groups == 0, "case %d: %d nodes (was %d), %d groups", c, g->n_nodes,
           before, st.matmul_groups);
    CHECK_INT(st.skipped_large, c == 2);
    gir_graph_free(g);
  }
}

/* More siblings than a concat takes: 70 → groups of 64 and 6. */
static void test_many(void) {
  rng r = {5};
  gir_graph *g = gir_graph_new("many");
  gir_value *x = input(g, SH(2, 4));
  for (int i = 0; i < 70; i++)
    gir_graph_add_output(g, flat(g, add(g, matmul(g, x, crand(g, SH(4, 1 + i % 3), &r)), crand(g, SH(1), &r))));
  gir_hfuse_stats st = HFUSE(g, 0, 5);
  CHECK_INT(st.matmul_groups, 2);
  CHECK_INT(st.matmuls, 70);
  CHECK_INT(tu_count_op(g, GIR_OP_matmul), 2);
  CHECK_INT(tu_count_op(g, GIR_OP_slice), 70);
  gir_graph_free(g);
}

/* A merged group whose consumers feed each other's siblings downstream (a
 * second group on the first one's reshaped results): order stays topological. */
static void test_stacked(void) {
  rng r = {6};
  gir_graph *g = gir_graph_new("stacked");
  gir_value *x = input(g, SH(3, 4));
  gir_value *h1 = reshape(g, matmul(g, x, crand(g, SH(4, 4), &r)), INTS(3, 4));
  gir_value *h2 = reshape(g, matmul(g, x, crand(g, SH(4, 4), &r)), INTS(3, 4));
  gir_value *s = add(g, h1, h2);
  gir_graph_add_output(g, flat(g, matmul(g, s, crand(g, SH(4, 2), &r))));
  gir_graph_add_output(g, flat(g, matmul(g, s, crand(g, SH(4, 3), &r))));
  gir_graph_add_output(g, flat(g, matmul(g, h1, crand(g, SH(4, 3), &r))));
  gir_hfuse_stats st = HFUSE(g, 0, 6);
  CHECK_INT(st.matmul_groups, 2);
  CHECK_INT(st.matmuls, 4);
  CHECK_INT(tu_count_op(g, GIR_OP_matmul), 3);
  gir_graph_free(g);
}

/* --- convs --- */

/* Two convs with the same window (one with a bias, one without) merge into a
 * conv with 9 output channels; a conv with another stride, a grouped conv and
 * one with a relu epilogue stay as they are. */
static void test_conv(void) {
  rng r = {7};
  gir_graph *g = gir_graph_new("conv");
  gir_value *x = input(g, SH(1, 3, 8, 8));
  gir_graph_add_output(g, flat(g, conv(g, x, crand(g, SH(4, 3, 3, 3), &r), crand(g, SH(4), &r), 1, 1, 1)));
  gir_value *b = conv(g, x, crand(g, SH(5, 3, 3, 3), &r), NULL, 1, 1, 1);
  gir_node *tr = gir_node_new(g, GIR_OP_transpose, NULL, &b, 1, 1);
  gir_attr_set_ints(g, tr, "perm", INTS(0, 2, 3, 1));
  gir_graph_add_output(g, tu_done(g, tr));
  gir_graph_add_output(g, flat(g, conv(g, x, crand(g, SH(4, 3, 3, 3), &r), NULL, 2, 1, 1)));
  gir_graph_add_output(g, flat(g, conv(g, x, crand(g, SH(3, 1, 3, 3), &r), NULL, 1, 1, 3)));
  gir_graph_add_output(g, relu(g, conv(g, x, crand(g, SH(2, 3, 3, 3), &r), crand(g, SH(2), &r), 1, 1, 1)));
  gir_hfuse_stats st = HFUSE(g, 0, 7);
  CHECK_INT(st.conv_groups, 1);
  CHECK_INT(st.convs, 2);
  CHECK_INT(st.left_out, 1);
  CHECK_INT(tu_count_op(g, GIR_OP_conv), 4);
  CHECK_INT(tu_count_op(g, GIR_OP_slice), 2);
  int merged = 0;
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    if (n->op == GIR_OP_conv && n->out[0]->shape.dims[1] == 9) {
      merged++;
      CHECK(n->n_in == 3 && n->in[2] && n->in[2]->data && n->in[1]->data);
      CHECK_INT(gir_attr_int(n, "group", 0), 1);
    }
  }
  CHECK_INT(merged, 1);
  gir_graph_free(g);
}

/* Two convs without biases merge into a conv without one. */
static void test_conv_no_bias(void) {
  rng r = {8};
  gir_graph *g = gir_graph_new("conv_no_bias");
  gir_value *x = input(g, SH(2, 2, 5, 5));
  gir_graph_add_output(g, flat(g, conv(g, x, crand(g, SH(3, 2, 1, 1), &r), NULL, 1, 0, 1)));
  gir_graph_add_output(g, flat(g, conv(g, x, crand(g, SH(1, 2, 1, 1), &r), NULL, 1, 0, 1)));
  gir_hfuse_stats st = HFUSE(g, 0, 8);
  CHECK_INT(st.conv_groups, 1);
  CHECK_INT(tu_count_op(g, GIR_OP_conv), 1);
  for (int k = 0; k < g->n_nodes; k++)
    if (g->nodes[k]->op == GIR_OP_conv) CHECK(g->nodes[k]->n_in == 2);
  gir_graph_free(g);
}

/* --- the light ResNet-50 --- */

static void test_resnet50(void) {
  gir_evaluator ev = lower_fold_evaluator();
  gir_graph *g = tu_light_folded("light_resnet50", &ev);
  if (!g) return;
  gir_err e = {{0}};
  CHECKF(gir_simplify(g, &ev, NULL, &e) == 0, "simplify: %s", e.msg);
  int before = g->n_nodes;
  gir_hfuse_stats st;
  CHECKF(gir_hfuse(g, GIR_HFUSE_MAX_WEIGHT_BYTES, &st, &e) == 0, "hfuse: %s", e.msg);
  verify_(g, __LINE__);
  printf("light_resnet50: %d nodes; hfuse: %d conv groups, %d matmul groups, %d siblings left out\n", before,
         st.conv_groups, st.matmul_groups, st.left_out);
  CHECK_INT(g->n_nodes, before);
  CHECK_INT(st.conv_groups + st.matmul_groups, 0);
  CHECK_INT(st.left_out, 2);
  gir_graph_free(g);
}

int main(void) {
  test_qkv();
  test_scalar_bias();
  test_left_out();
  test_untouched();
  test_many();
  test_stacked();
  test_conv();
  test_conv_no_bias();
  test_resnet50();
  return check_finish("test_hfuse");
}
