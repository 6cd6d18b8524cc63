/* test_simplify_graph.c — tests of graph simplification (graphir/simplify*.c,
 * graphir/pass_cse.c): one tiny graph per rule with the nodes expected after
 * gir_simplify (count and ops, and gir_verify clean after every stage), the
 * cases a rule must leave alone (x*0 on floats, float → int → float casts, a conv
 * whose output has a second consumer, constants that are not per-channel), CSE,
 * graph output names, and numerical checks of the per-channel folds: the graph
 * is run by the reference interpreter (te/interp.h) before and after, on
 * random inputs, and must agree to rtol 1e-5.
 *
 * With the light ResNet-50 present (scripts/model_path.sh), the whole model goes
 * through import → fold → simplify → fold, and every BatchNormalization must end
 * up inside its conv. */
#include <stdlib.h>
#include "check.h"
#include "graph_util.h"
#include "fold.h"
#include "graph.h"
#include "importer.h"
#include "interp.h"
#include "passes.h"
#include "simplify.h"

/* --- helpers --- */

#define NARGS64(...) ((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SH(...) ((gir_shape){.rank = NARGS64(__VA_ARGS__), .dims = {__VA_ARGS__}})
#define INTS(...) (int64_t[]){__VA_ARGS__}, NARGS64(__VA_ARGS__)


static gir_value *cfill(gir_graph *g, gir_dtype t, gir_shape s, double x) {
  gir_value *v = gir_const_new(g, NULL, t, &s, NULL);
  for (int64_t i = 0; i < gir_value_numel(v); i++) gir_store_f64(t, v->data, i, x);
  return v;
}

/* Random constant; offset and scale shape the range (e.g. variances > 0). */
static gir_value *crand(gir_graph *g, gir_dtype t, gir_shape s, rng *r, double offset, double scale) {
  gir_value *v = gir_const_new(g, NULL, t, &s, NULL);
  for (int64_t i = 0; i < gir_value_numel(v); i++) gir_store_f64(t, v->data, i, offset + scale * rnd(r));
  return v;
}

static gir_value *bin(gir_graph *g, gir_binary_fn fn, gir_value *a, gir_value *b) {
  gir_node *n = TU_NODE(g, GIR_OP_binary, a, b);
  gir_attr_set_int(g, n, "fn", fn);
  return tu_done(g, n);
}

static gir_value *un(gir_graph *g, gir_unary_fn fn, gir_value *a) {
  gir_node *n = TU_NODE(g, GIR_OP_unary, a);
  gir_attr_set_int(g, n, "fn", fn);
  return tu_done(g, n);
}

static gir_value *with_ints(gir_graph *g, gir_op op, gir_value *x, const char *name, const int64_t *v, int32_t cnt) {
  gir_node *n = TU_NODE(g, op, x);
  gir_attr_set_ints(g, n, name, v, cnt);
  return tu_done(g, n);
}

static gir_value *cast(gir_graph *g, gir_value *x, gir_dtype to) {
  gir_node *n = TU_NODE(g, GIR_OP_cast, x);
  gir_attr_set_int(g, n, "to", to);
  return tu_done(g, n);
}

static gir_value *conv(gir_graph *g, gir_value *x, gir_value *w, gir_value *b, int64_t group, int64_t pad) {
  gir_node *n = b ? TU_NODE(g, GIR_OP_conv, x, w, b) : TU_NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "pads", INTS(pad, pad, pad, pad));
  gir_attr_set_int(g, n, "group", group);
  return tu_done(g, n);
}

static int count_op(const gir_graph *g, gir_op op, int fn) {
  int c = 0;
  for (int k = 0; k < g->n_nodes; k++)
    if (g->nodes[k]->op == op && (fn < 0 || gir_attr_int(g->nodes[k], "fn", -1) == fn)) c++;
  return c;
}

static int verify_(const gir_graph *g, int line) {
  gir_err e = {{0}};
  return CHECKF(gir_verify(g, &e) == 0, "line %d: verify: %s", line, e.msg);
}
#define VERIFY(g) verify_(g, __LINE__)

static int rule_index(const char *name) {
  for (int i = 0; i < gir_simplify_rule_count(); i++)
    if (!strcmp(gir_simplify_rule(i)->name, name)) return i;
  return -1;
}

/* Verifies, simplifies (no evaluator unless given), verifies again. */
static gir_simplify_stats simplify_(gir_graph *g, const gir_evaluator *ev, int line) {
  gir_simplify_stats st;
  memset(&st, 0, sizeof st);
  gir_err e = {{0}};
  verify_(g, line);
  CHECKF(gir_simplify(g, ev, &st, &e) == 0, "line %d: simplify: %s", line, e.msg);
  verify_(g, line);
  return st;
}
#define SIMPLIFY(g) simplify_(g, NULL, __LINE__)
#define SIMPLIFY_EV(g, ev) simplify_(g, ev, __LINE__)

/* --- arithmetic identities --- */

static void test_identities(void) {
  /* x+0, 0+x, x-0, x*1, x/1 disappear: relu reads x */
  for (int c = 0; c < 5; c++) {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(2, 3)), *y;
    if (c == 0) y = bin(g, GIR_BINARY_ADD, x, cfill(g, GIR_F32, SH(3), 0));
    else if (c == 1) y = bin(g, GIR_BINARY_ADD, cfill(g, GIR_F32, SH(1, 1), -0.0), x);
    else if (c == 2) y = bin(g, GIR_BINARY_SUB, x, cfill(g, GIR_F32, SH(1), 0));
    else if (c == 3) y = bin(g, GIR_BINARY_MUL, cfill(g, GIR_F32, SH(2, 3), 1), x);
    else y = bin(g, GIR_BINARY_DIV, x, cfill(g, GIR_F32, SH(3), 1));
    gir_value *r = un(g, GIR_UNARY_RELU, y);
    gir_graph_add_output(g, r);
    gir_simplify_stats st = SIMPLIFY(g);
    CHECKF(g->n_nodes == 1 && g->nodes[0]->op == GIR_OP_unary && g->nodes[0]->in[0] == x, "case %d: %d nodes", c,
           g->n_nodes);
    CHECK_INT(st.nodes_before, 2);
    CHECK_INT(st.nodes_after, 1);
    const char *want[] = {"add_zero", "add_zero", "sub_zero", "mul_one", "div_one"};
    CHECK_INT(st.fired[rule_index(want[c])], 1);
    gir_graph_free(g);
  }
  /* a zero that broadcasts x to a bigger shape is not a no-op */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(3));
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, bin(g, GIR_BINARY_ADD, x, cfill(g, GIR_F32, SH(2, 3), 0))));
    SIMPLIFY(g);
    CHECK_INT(g->n_nodes, 2);
    gir_graph_free(g);
  }
  /* x^3 on floats → x*x*x; not with an exponent that is not 3 everywhere, nor one that broadcasts x */
  for (int c = 0; c < 3; c++) {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(2, 3)), *e;
    if (c == 0) e = cfill(g, GIR_F32, SH(1), 3);
    else if (c == 1) e = cfill(g, GIR_F32, SH(3), 2.5);
    else e = cfill(g, GIR_F32, SH(4, 2, 3), 3);
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, bin(g, GIR_BINARY_POW, x, e)));
    gir_simplify_stats st = SIMPLIFY(g);
    CHECK_INT(count_op(g, GIR_OP_binary, GIR_BINARY_MUL), c == 0 ? 2 : 0);
    CHECK_INT(count_op(g, GIR_OP_binary, GIR_BINARY_POW), c == 0 ? 0 : 1);
    CHECK_INT(st.fired[rule_index("pow_three")], c == 0);
    gir_graph_free(g);
  }
  /* x-0 is a rule, 0-x is not */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(3));
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, bin(g, GIR_BINARY_SUB, cfill(g, GIR_F32, SH(3), 0), x)));
    SIMPLIFY(g);
    CHECK_INT(g->n_nodes, 2);
    gir_graph_free(g);
  }
  /* x*0: floats keep it (NaN*0 is NaN), integers become a constant 0 */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(4));
    gir_graph_add_output(g, un(g, GIR_UNARY_NEG, bin(g, GIR_BINARY_MUL, x, cfill(g, GIR_F32, SH(1), 0))));
    SIMPLIFY(g);
    CHECK_INT(count_op(g, GIR_OP_binary, GIR_BINARY_MUL), 1);
    gir_graph_free(g);
  }
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_I32, SH(4));
    gir_graph_add_output(g, un(g, GIR_UNARY_NEG, bin(g, GIR_BINARY_MUL, cfill(g, GIR_I32, SH(4), 0), x)));
    gir_simplify_stats st = SIMPLIFY(g);
    CHECK_INT(g->n_nodes, 1);
    CHECK_INT(st.fired[rule_index("mul_zero")], 1);
    const gir_value *z = g->nodes[0]->in[0];
    CHECK(z->data && z->dtype == GIR_I32 && gir_value_numel(z) == 4 && gir_load_i64(GIR_I32, z->data, 3) == 0);
    gir_graph_free(g);
  }
  /* x-x: integers only; max(x,x) → x for any type */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *xf = tu_input(g, GIR_F32, SH(4)), *xi = tu_input(g, GIR_I64, SH(4));
    gir_graph_add_output(g, un(g, GIR_UNARY_NEG, bin(g, GIR_BINARY_SUB, xf, xf)));
    gir_graph_add_output(g, un(g, GIR_UNARY_NEG, bin(g, GIR_BINARY_SUB, xi, xi)));
    gir_graph_add_output(g, un(g, GIR_UNARY_NEG, bin(g, GIR_BINARY_MAX, xf, xf)));
    SIMPLIFY(g);
    CHECK_INT(count_op(g, GIR_OP_binary, GIR_BINARY_SUB), 1);
    CHECK_INT(count_op(g, GIR_OP_binary, GIR_BINARY_MAX), 0);
    CHECK_INT(g->n_nodes, 4);
    gir_graph_free(g);
  }
  /* integer bits and bool logic */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_U8, SH(4)), *b = tu_input(g, GIR_BOOL, SH(4));
    gir_value *y = bin(g, GIR_BINARY_BITAND, x, cfill(g, GIR_U8, SH(1), 255));
    y = bin(g, GIR_BINARY_BITOR, y, cfill(g, GIR_U8, SH(1), 0));
    y = bin(g, GIR_BINARY_SHL, y, cfill(g, GIR_U8, SH(1), 0));
    gir_graph_add_output(g, un(g, GIR_UNARY_BITNOT, y));
    gir_value *c = bin(g, GIR_BINARY_AND, cfill(g, GIR_BOOL, SH(4), 1), b);
    c = bin(g, GIR_BINARY_OR, c, cfill(g, GIR_BOOL, SH(1), 0));
    gir_graph_add_output(g, un(g, GIR_UNARY_NOT, c));
    SIMPLIFY(g);
    CHECK_INT(g->n_nodes, 2);
    CHECK(g->nodes[0]->in[0] == x || g->nodes[0]->in[0] == b);
    /* bitand with 0xfe is no identity */
    gir_graph *h = gir_graph_new("t");
    gir_value *z = tu_input(h, GIR_U8, SH(4));
    gir_graph_add_output(h, un(h, GIR_UNARY_BITNOT, bin(h, GIR_BINARY_BITAND, z, cfill(h, GIR_U8, SH(1), 254))));
    SIMPLIFY(h);
    CHECK_INT(h->n_nodes, 2);
    gir_graph_free(h);
    gir_graph_free(g);
  }
  /* double negation, also through not and bitnot */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(4)), *b = tu_input(g, GIR_BOOL, SH(4));
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, un(g, GIR_UNARY_NEG, un(g, GIR_UNARY_NEG, x))));
    gir_graph_add_output(g, bin(g, GIR_BINARY_XOR, un(g, GIR_UNARY_NOT, un(g, GIR_UNARY_NOT, b)), b));
    /* three negations leave one */
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, un(g, GIR_UNARY_NEG, un(g, GIR_UNARY_NEG, un(g, GIR_UNARY_NEG, x)))));
    gir_simplify_stats st = SIMPLIFY(g);
    CHECK_INT(count_op(g, GIR_OP_unary, GIR_UNARY_NEG), 1);
    CHECK_INT(count_op(g, GIR_OP_unary, GIR_UNARY_NOT), 0);
    CHECK_INT(g->n_nodes, 4);
    CHECK_INT(st.fired[rule_index("neg_neg")], 2);
    gir_graph_free(g);
  }
}

/* --- ops that copy their input, and chains --- */

static void test_noops(void) {
  gir_graph *g = gir_graph_new("t");
  gir_value *x = tu_input(g, GIR_F32, SH(2, 3, 4)), *y = x;
  y = with_ints(g, GIR_OP_reshape, y, "shape", INTS(2, 3, 4));
  y = with_ints(g, GIR_OP_transpose, y, "perm", INTS(0, 1, 2));
  y = cast(g, y, GIR_F32);
  y = with_ints(g, GIR_OP_pad, y, "pads", INTS(0, 0, 0, 0, 0, 0));
  gir_node *sl = TU_NODE(g, GIR_OP_slice, y);
  gir_attr_set_ints(g, sl, "starts", INTS(0, 0, 0));
  gir_attr_set_ints(g, sl, "steps", INTS(1, 1, 1));
  gir_attr_set_ints(g, sl, "sizes", INTS(2, 3, 4));
  y = tu_done(g, sl);
  y = with_ints(g, GIR_OP_broadcast_to, y, "shape", INTS(2, 3, 4));
  y = with_ints(g, GIR_OP_tile, y, "repeats", INTS(1, 1, 1));
  gir_node *cc = TU_NODE(g, GIR_OP_concat, y);
  gir_attr_set_int(g, cc, "axis", 1);
  y = tu_done(g, cc);
  gir_graph_add_output(g, un(g, GIR_UNARY_RELU, y));
  gir_simplify_stats st = SIMPLIFY(g);
  CHECK_INT(st.nodes_before, 9);
  CHECK_INT(g->n_nodes, 1);
  CHECK(g->n_nodes == 1 && g->nodes[0]->in[0] == x);
  const char *rules[] = {"reshape_noop", "transpose_noop", "cast_noop", "pad_noop", "slice_noop",
                         "broadcast_noop", "tile_noop", "concat_noop"};
  for (int i = 0; i < 8; i++) CHECKF(st.fired[rule_index(rules[i])] == 1, "%s", rules[i]);
  gir_graph_free(g);

  /* look-alikes that move data stay: a transpose of a square, a reversing
   * slice, pads that crop one end and grow the other */
  g = gir_graph_new("t");
  x = tu_input(g, GIR_F32, SH(3, 3));
  gir_graph_add_output(g, un(g, GIR_UNARY_RELU, with_ints(g, GIR_OP_transpose, x, "perm", INTS(1, 0))));
  sl = TU_NODE(g, GIR_OP_slice, x);
  gir_attr_set_ints(g, sl, "starts", INTS(2, 0));
  gir_attr_set_ints(g, sl, "steps", INTS(-1, 1));
  gir_attr_set_ints(g, sl, "sizes", INTS(3, 3));
  gir_graph_add_output(g, un(g, GIR_UNARY_RELU, tu_done(g, sl)));
  gir_graph_add_output(g, un(g, GIR_UNARY_RELU, with_ints(g, GIR_OP_pad, x, "pads", INTS(1, 0, -1, 0))));
  SIMPLIFY(g);
  CHECK_INT(g->n_nodes, 6);
  gir_graph_free(g);
}

static void test_chains(void) {
  /* reshape∘reshape → one reshape of x */
  gir_graph *g = gir_graph_new("t");
  gir_value *x = tu_input(g, GIR_F32, SH(2, 3, 4));
  gir_value *y = with_ints(g, GIR_OP_reshape, x, "shape", INTS(6, 4));
  y = with_ints(g, GIR_OP_reshape, y, "shape", INTS(4, 6));
  gir_graph_add_output(g, un(g, GIR_UNARY_RELU, y));
  SIMPLIFY(g);
  CHECK_INT(count_op(g, GIR_OP_reshape, -1), 1);
  CHECK(g->n_nodes == 2 && g->nodes[0]->in[0] == x && g->nodes[0]->out[0]->shape.dims[1] == 6);
  gir_graph_free(g);

  /* reshape there and back: gone */
  g = gir_graph_new("t");
  x = tu_input(g, GIR_F32, SH(2, 3, 4));
  y = with_ints(g, GIR_OP_reshape, with_ints(g, GIR_OP_reshape, x, "shape", INTS(24)), "shape", INTS(2, 3, 4));
  gir_graph_add_output(g, un(g, GIR_UNARY_RELU, y));
  SIMPLIFY(g);
  CHECK_INT(g->n_nodes, 1);
  gir_graph_free(g);

  /* transpose∘transpose → one with the composed perm; inverse pairs vanish */
  g = gir_graph_new("t");
  x = tu_input(g, GIR_F32, SH(2, 3, 4));
  y = with_ints(g, GIR_OP_transpose, with_ints(g, GIR_OP_transpose, x, "perm", INTS(1, 2, 0)), "perm", INTS(0, 2, 1));
  gir_graph_add_output(g, un(g, GIR_UNARY_RELU, y)); /* [3,4,2] then [3,2,4]: x[d1, d0, d2], perm 1,0,2 */
  gir_value *z = with_ints(g, GIR_OP_transpose, with_ints(g, GIR_OP_transpose, x, "perm", INTS(1, 2, 0)), "perm",
                           INTS(2, 0, 1));
  gir_graph_add_output(g, un(g, GIR_UNARY_NEG, z));
  gir_simplify_stats st = SIMPLIFY(g);
  CHECK_INT(count_op(g, GIR_OP_transpose, -1), 1);
  CHECK_INT(g->n_nodes, 3);
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    if (n->op == GIR_OP_transpose) {
      int32_t r;
      const int64_t *p = gir_attr_ints(n, "perm", &r);
      CHECK(n->in[0] == x && r == 3 && p[0] == 1 && p[1] == 0 && p[2] == 2);
    }
    if (n->op == GIR_OP_unary && gir_attr_int(n, "fn", -1) == GIR_UNARY_NEG) CHECK(n->in[0] == x);
  }
  CHECK(st.fired[rule_index("transpose_chain")] >= 2);
  gir_graph_free(g);

  /* int8 → int32 → int64: one cast; float → int → float and int32 → int8 → int32 stay */
  g = gir_graph_new("t");
  gir_value *xi = tu_input(g, GIR_I8, SH(4)), *xf = tu_input(g, GIR_F32, SH(4)), *xw = tu_input(g, GIR_I32, SH(4));
  gir_graph_add_output(g, un(g, GIR_UNARY_NEG, cast(g, cast(g, xi, GIR_I32), GIR_I64)));
  gir_graph_add_output(g, un(g, GIR_UNARY_NEG, cast(g, cast(g, xf, GIR_I32), GIR_F32)));
  gir_graph_add_output(g, un(g, GIR_UNARY_NEG, cast(g, cast(g, xw, GIR_I8), GIR_I32)));
  /* float16 → float32 → float16 is the identity; uint8 → int16 → float32 one cast */
  gir_value *xh = tu_input(g, GIR_F16, SH(4)), *xu = tu_input(g, GIR_U8, SH(4));
  gir_graph_add_output(g, un(g, GIR_UNARY_NEG, cast(g, cast(g, xh, GIR_F32), GIR_F16)));
  gir_graph_add_output(g, un(g, GIR_UNARY_NEG, cast(g, cast(g, xu, GIR_I16), GIR_F32)));
  SIMPLIFY(g);
  CHECK_INT(count_op(g, GIR_OP_cast, -1), 1 + 2 + 2 + 0 + 1);
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    if (n->op == GIR_OP_cast && n->out[0]->dtype == GIR_I64) CHECK(n->in[0] == xi);
    if (n->op == GIR_OP_unary && n->out[0]->dtype == GIR_F16) CHECK(n->in[0] == xh);
  }
  gir_graph_free(g);
}

/* quantize(dequantize(q)) with the same scale and zero point → q: the chain the
 * importer makes of a QDQ pair (ops_nn.c: (float(q) − z)·s, then round(v/s) + z
 * clamped to the type's range, cast), with a reshape between the halves too; a
 * different scale, zero point or clamp stays. */
static gir_value *qdq_pair(gir_graph *g, gir_value *q, double sc, double z, double z2, double s2, double hi,
                           int reshape) {
  gir_value *v = bin(g, GIR_BINARY_SUB, cast(g, q, GIR_F32), cfill(g, GIR_F32, SH(), z));
  v = bin(g, GIR_BINARY_MUL, v, cfill(g, GIR_F32, SH(), sc));
  if (reshape) v = with_ints(g, GIR_OP_reshape, v, "shape", INTS(6, 4));
  v = un(g, GIR_UNARY_ROUND, bin(g, GIR_BINARY_DIV, v, cfill(g, GIR_F32, SH(), s2)));
  v = bin(g, GIR_BINARY_ADD, v, cfill(g, GIR_F32, SH(), z2));
  v = bin(g, GIR_BINARY_MAX, v, cfill(g, GIR_F32, SH(), 0));
  v = bin(g, GIR_BINARY_MIN, v, cfill(g, GIR_F32, SH(), hi));
  return cast(g, v, GIR_U8);
}

static void test_requant_roundtrip(void) {
  gir_graph *g = gir_graph_new("t");
  gir_value *q = tu_input(g, GIR_U8, SH(2, 3, 4));
  gir_graph_add_output(g, un(g, GIR_UNARY_BITNOT, qdq_pair(g, q, 0.0371475257, 124, 124, 0.0371475257, 255, 0)));
  gir_graph_add_output(g, un(g, GIR_UNARY_BITNOT, qdq_pair(g, q, 0.02, 3, 3, 0.02, 255, 1)));
  gir_simplify_stats st = SIMPLIFY(g);
  CHECK_INT(st.fired[rule_index("requant_roundtrip")], 2);
  CHECK_INT(count_op(g, GIR_OP_cast, -1), 0);
  CHECK_INT(count_op(g, GIR_OP_reshape, -1), 1); /* q reshaped to [6, 4] */
  gir_graph_free(g);

  g = gir_graph_new("t"); /* near misses: another scale, zero point, clamp */
  q = tu_input(g, GIR_U8, SH(2, 3, 4));
  gir_graph_add_output(g, un(g, GIR_UNARY_BITNOT, qdq_pair(g, q, 0.02, 3, 3, 0.03, 255, 0)));
  gir_graph_add_output(g, un(g, GIR_UNARY_BITNOT, qdq_pair(g, q, 0.02, 3, 4, 0.02, 255, 0)));
  gir_graph_add_output(g, un(g, GIR_UNARY_BITNOT, qdq_pair(g, q, 0.02, 3, 3, 0.02, 200, 0)));
  st = SIMPLIFY(g);
  CHECK_INT(st.fired[rule_index("requant_roundtrip")], 0);
  CHECK_INT(count_op(g, GIR_OP_cast, -1), 4); /* the three casts back to uint8, one shared cast of q */
  gir_graph_free(g);
}

/* --- graph outputs keep their names --- */

static void test_outputs(void) {
  /* relu(x)*1 is the output: relu's value takes the output's name */
  gir_graph *g = gir_graph_new("t");
  gir_value *x = tu_input(g, GIR_F32, SH(4));
  gir_value *y = bin(g, GIR_BINARY_MUL, un(g, GIR_UNARY_RELU, x), cfill(g, GIR_F32, SH(1), 1));
  y->name = "result";
  gir_graph_add_output(g, y);
  SIMPLIFY(g);
  CHECK_INT(g->n_nodes, 1);
  CHECK_STR(g->outputs[0]->name, "result");
  CHECK(g->outputs[0]->is_output && g->outputs[0]->producer == g->nodes[0]);
  gir_graph_free(g);

  /* x*1 with x a graph input: nothing can carry the output's name, the node stays */
  g = gir_graph_new("t");
  x = tu_input(g, GIR_F32, SH(4));
  y = bin(g, GIR_BINARY_MUL, x, cfill(g, GIR_F32, SH(1), 1));
  y->name = "result";
  gir_graph_add_output(g, y);
  SIMPLIFY(g);
  CHECK_INT(g->n_nodes, 1);
  CHECK_STR(g->outputs[0]->name, "result");
  /* gir_replace_uses says no and changes nothing */
  CHECK_INT(gir_replace_uses(g, g->outputs[0], x), -1);
  CHECK(g->outputs[0] != x && !x->is_output);
  gir_graph_free(g);

  /* two outputs that would both become relu's value: the second stays */
  g = gir_graph_new("t");
  x = tu_input(g, GIR_F32, SH(4));
  gir_value *r = un(g, GIR_UNARY_RELU, x);
  gir_value *a = bin(g, GIR_BINARY_MUL, r, cfill(g, GIR_F32, SH(1), 1)),
            *b = bin(g, GIR_BINARY_ADD, r, cfill(g, GIR_F32, SH(1), 0));
  a->name = "a";
  b->name = "b";
  gir_graph_add_output(g, a);
  gir_graph_add_output(g, b);
  SIMPLIFY(g);
  CHECK_INT(g->n_nodes, 2);
  CHECK_STR(g->outputs[0]->name, "a");
  CHECK_STR(g->outputs[1]->name, "b");
  gir_graph_free(g);
}

/* --- CSE --- */

static void test_cse(void) {
  gir_graph *g = gir_graph_new("t");
  gir_value *x = tu_input(g, GIR_F32, SH(2, 3));
  /* the same relu twice; two identical constants; chains built on them */
  gir_value *r1 = un(g, GIR_UNARY_RELU, x), *r2 = un(g, GIR_UNARY_RELU, x);
  gir_value *c1 = cfill(g, GIR_F32, SH(3), 0.5), *c2 = cfill(g, GIR_F32, SH(3), 0.5);
  gir_value *a1 = bin(g, GIR_BINARY_MUL, r1, c1), *a2 = bin(g, GIR_BINARY_MUL, r2, c2);
  gir_graph_add_output(g, bin(g, GIR_BINARY_ADD, a1, a2));
  /* different attributes stay apart: leaky_relu alpha 0.1 vs 0.1000001 */
  gir_node *l1 = TU_NODE(g, GIR_OP_unary, x), *l2 = TU_NODE(g, GIR_OP_unary, x);
  gir_attr_set_int(g, l1, "fn", GIR_UNARY_LEAKY_RELU);
  gir_attr_set_float(g, l1, "alpha", 0.1);
  gir_attr_set_float(g, l2, "alpha", 0.1000001); /* attribute order differs too */
  gir_attr_set_int(g, l2, "fn", GIR_UNARY_LEAKY_RELU);
  gir_graph_add_output(g, bin(g, GIR_BINARY_SUB, tu_done(g, l1), tu_done(g, l2)));
  /* same attributes set in another order merge */
  gir_node *l3 = TU_NODE(g, GIR_OP_unary, x);
  gir_attr_set_float(g, l3, "alpha", 0.1);
  gir_attr_set_int(g, l3, "fn", GIR_UNARY_LEAKY_RELU);
  gir_graph_add_output(g, bin(g, GIR_BINARY_DIV, l1->out[0], tu_done(g, l3)));
  VERIFY(g);
  int32_t merged = -1;
  CHECK_INT(gir_cse(g, &merged), 0);
  VERIFY(g);
  CHECK_INT(merged, 4); /* c2, r2, a2, l3 */
  CHECK_INT(count_op(g, GIR_OP_unary, GIR_UNARY_RELU), 1);
  CHECK_INT(count_op(g, GIR_OP_binary, GIR_BINARY_MUL), 1);
  CHECK_INT(count_op(g, GIR_OP_unary, GIR_UNARY_LEAKY_RELU), 2);
  CHECK_INT(g->n_nodes, 7);
  gir_graph_free(g);

  /* two graph outputs computing the same thing keep both names */
  g = gir_graph_new("t");
  x = tu_input(g, GIR_F32, SH(4));
  r1 = un(g, GIR_UNARY_RELU, x);
  r2 = un(g, GIR_UNARY_RELU, x);
  r1->name = "p";
  r2->name = "q";
  gir_graph_add_output(g, r1);
  gir_graph_add_output(g, r2);
  merged = -1;
  gir_cse(g, &merged);
  VERIFY(g);
  CHECK_INT(merged, 0);
  CHECK_INT(g->n_nodes, 2);
  gir_graph_free(g);

  /* nodes with two outputs merge whole; when one output of the later node is
   * a graph output and the earlier one's is too, neither merges */
  for (int outs = 0; outs < 2; outs++) {
    g = gir_graph_new("t");
    x = tu_input(g, GIR_F32, SH(2, 6));
    gir_node *t1 = TU_NODE(g, GIR_OP_topk, x), *t2 = TU_NODE(g, GIR_OP_topk, x);
    for (int i = 0; i < 2; i++) {
      gir_node *t = i ? t2 : t1;
      gir_attr_set_int(g, t, "k", 3);
      tu_done(g, t);
    }
    gir_graph_add_output(g, bin(g, GIR_BINARY_ADD, t1->out[0], t2->out[0]));
    gir_graph_add_output(g, bin(g, GIR_BINARY_SUB, t1->out[1], t2->out[1]));
    if (outs) {
      gir_graph_add_output(g, t1->out[0]);
      gir_graph_add_output(g, t2->out[0]);
    }
    merged = -1;
    gir_cse(g, &merged);
    VERIFY(g);
    CHECK_INT(merged, outs ? 0 : 1);
    CHECK_INT(count_op(g, GIR_OP_topk, -1), outs ? 2 : 1);
    gir_graph_free(g);
  }

  /* CSE inside gir_simplify lets rules see equal operands: relu(x) - relu(x) on int */
  g = gir_graph_new("t");
  gir_value *xi = tu_input(g, GIR_I32, SH(4));
  gir_value *d = bin(g, GIR_BINARY_SUB, un(g, GIR_UNARY_ABS, xi), un(g, GIR_UNARY_ABS, xi));
  gir_graph_add_output(g, un(g, GIR_UNARY_NEG, d));
  gir_simplify_stats st = SIMPLIFY(g);
  CHECK_INT(g->n_nodes, 1);
  CHECK_INT(st.cse_merged, 1);
  CHECK_INT(st.fired[rule_index("sub_self")], 1);
  gir_graph_free(g);
}

/* --- per-channel folds, checked numerically --- */

/* Runs g on its (float) inputs; returns the output buffers (in a). */
static int interpret(const gir_graph *g, void *const *inputs, void **outs, gir_arena *a) {
  gir_err e = {{0}};
  int rc = lower_interpret(g, (const void *const *)inputs, outs, a, &e);
  CHECKF(rc == 0, "interpret: %s", e.msg);
  return rc;
}

/* Random values for every graph input (float types only). */
static void **random_inputs(const gir_graph *g, gir_arena *a, rng *r) {
  void **in = gir_arena_calloc(a, (size_t)g->n_inputs + 1, sizeof *in);
  for (int i = 0; i < g->n_inputs; i++) {
    const gir_value *v = g->inputs[i];
    in[i] = gir_arena_alloc(a, (size_t)gir_value_nbytes(v) + 1);
    for (int64_t j = 0; j < gir_value_numel(v); j++) gir_store_f64(v->dtype, in[i], j, rnd(r));
  }
  return in;
}

/* Error of an output against a reference, relative to the reference's
 * magnitude: max |got - want| / max |want|. A fold changes the rounding of
 * each element (a BN's (y - mean) * f cancels where y is near its mean), so
 * errors are measured on the output's scale, not per element. */
static double rel_err(const gir_value *v, const void *got, const void *want) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < gir_value_numel(v); i++) {
    double a = gir_load_f64(v->dtype, got, i), b = gir_load_f64(v->dtype, want, i);
    if (!(fabs(a - b) <= worst)) worst = fabs(a - b); /* NaN counts as the worst */
    if (fabs(b) > scale) scale = fabs(b);
  }
  return worst / (scale > 0 ? scale : 1);
}

/* Simplifies g (with or without the folding evaluator; without it, constant
 * folding runs afterwards as the compile pipeline does) and compares outputs. */
static gir_simplify_stats fold_and_compare_(gir_graph *g, int use_ev, double rtol, uint64_t seed, int line) {
  gir_arena *a = gir_arena_new();
  rng r = {seed * 7919u + 17u};
  void **in = random_inputs(g, a, &r);
  void *before[8] = {0}, *after[8] = {0};
  interpret(g, in, before, a);
  gir_evaluator ev = lower_fold_evaluator();
  gir_simplify_stats st = simplify_(g, use_ev ? &ev : NULL, line);
  if (!use_ev) {
    int32_t folded = 0;
    gir_err e = {{0}};
    gir_fold_constants(g, &ev, 0, &folded, &e);
    verify_(g, line);
  }
  interpret(g, in, after, a);
  for (int i = 0; i < g->n_outputs && i < 8; i++) {
    double err = rel_err(g->outputs[i], after[i], before[i]);
    CHECKF(err <= rtol, "line %d: output %d differs by %g (rtol %g)", line, i, err, rtol);
  }
  gir_arena_free(a);
  return st;
}
#define FOLD_AND_COMPARE(g, use_ev, rtol, seed) fold_and_compare_(g, use_ev, rtol, seed, __LINE__)

/* conv → sub(mean) → mul(factor) → add(bias) as the importer writes a
 * BatchNormalization, with per-channel constants of shape [M,1,1]. */
static gir_value *batchnorm(gir_graph *g, gir_value *y, rng *r) {
  int64_t m = y->shape.dims[1];
  gir_value *mean = crand(g, y->dtype, SH(m, 1, 1), r, 0, 1), *factor = crand(g, y->dtype, SH(m, 1, 1), r, 1, 0.5),
            *bias = crand(g, y->dtype, SH(m, 1, 1), r, 0, 1);
  return bin(g, GIR_BINARY_ADD, bin(g, GIR_BINARY_MUL, bin(g, GIR_BINARY_SUB, y, mean), factor), bias);
}

static void test_conv_bn(void) {
  for (int variant = 0; variant < 6; variant++) {
    /* 0: no bias, folding evaluator; 1: no evaluator (fold afterwards); 2: a conv
     * bias; 3: depthwise; 4: float64; 5: constants on the left, scalar scale */
    rng r = {100u + (uint64_t)variant};
    gir_dtype t = variant == 4 ? GIR_F64 : GIR_F32;
    gir_graph *g = gir_graph_new("bn");
    gir_value *x = tu_input(g, t, SH(2, 4, 7, 6));
    int64_t group = variant == 3 ? 4 : 1, m = variant == 3 ? 4 : 5;
    gir_value *w = crand(g, t, SH(m, 4 / group, 3, 3), &r, 0, 0.5);
    gir_value *b = variant == 2 ? crand(g, t, SH(m), &r, 0, 1) : NULL;
    gir_value *y = conv(g, x, w, b, group, 1);
    if (variant == 5) {
      y = bin(g, GIR_BINARY_MUL, cfill(g, t, SH(1), 1.5), y);
      y = bin(g, GIR_BINARY_ADD, crand(g, t, SH(1, m, 1, 1), &r, 0, 1), y);
    } else
      y = batchnorm(g, y, &r);
    y->name = "out";
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, y));
    gir_simplify_stats st = FOLD_AND_COMPARE(g, variant != 1, t == GIR_F64 ? 1e-12 : 1e-5, (uint64_t)variant);
    CHECKF(g->n_nodes == 2 && count_op(g, GIR_OP_conv, -1) == 1 && count_op(g, GIR_OP_unary, GIR_UNARY_RELU) == 1,
           "variant %d: %d nodes", variant, g->n_nodes);
    const gir_node *c = g->nodes[0];
    CHECKF(c->n_in == 3 && c->in[1]->data && c->in[2] && c->in[2]->data, "variant %d: weights and bias constant",
           variant);
    if (variant != 5) {
      CHECK_INT(st.fired[rule_index("conv_sub")], 1);
      CHECK_INT(st.fired[rule_index("conv_mul")], 1);
      CHECK_INT(st.fired[rule_index("conv_add")], 1);
    }
    gir_graph_free(g);
  }

  /* BN whose add is the graph output: the conv's value takes the name */
  {
    rng r = {7};
    gir_graph *g = gir_graph_new("bn");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 3, 5, 5));
    gir_value *y = batchnorm(g, conv(g, x, crand(g, GIR_F32, SH(6, 3, 1, 1), &r, 0, 1), NULL, 1, 0), &r);
    y->name = "features";
    gir_graph_add_output(g, y);
    FOLD_AND_COMPARE(g, 1, 1e-5, 10);
    CHECK_INT(g->n_nodes, 1);
    CHECK_STR(g->outputs[0]->name, "features");
    CHECK(g->outputs[0]->producer && g->outputs[0]->producer->op == GIR_OP_conv);
    gir_graph_free(g);
  }

  /* conv_transpose, groups 1 and 2, and matmul with a per-column scale */
  for (int group = 1; group <= 2; group++) {
    rng r = {(uint64_t)group + 30};
    gir_graph *g = gir_graph_new("ct");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 4, 5, 5));
    gir_node *n = TU_NODE(g, GIR_OP_conv_transpose, x, crand(g, GIR_F32, SH(4, 3, 3, 3), &r, 0, 1));
    gir_attr_set_ints(g, n, "strides", INTS(2, 2));
    gir_attr_set_int(g, n, "group", group);
    gir_value *y = tu_done(g, n); /* [1, 3*group, 11, 11] */
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, batchnorm(g, y, &r)));
    gir_simplify_stats st = FOLD_AND_COMPARE(g, 1, 1e-5, 20u + (uint64_t)group);
    CHECKF(g->n_nodes == 2, "group %d: %d nodes", group, g->n_nodes);
    CHECK_INT(st.fired[rule_index("conv_transpose_mul")], 1);
    gir_graph_free(g);
  }
  {
    rng r = {40};
    gir_graph *g = gir_graph_new("mm");
    gir_value *a = tu_input(g, GIR_F32, SH(2, 3, 8));
    gir_value *y = bin(g, GIR_BINARY_MUL, tu_done(g, TU_NODE(g, GIR_OP_matmul, a, crand(g, GIR_F32, SH(8, 5), &r, 0, 1))),
                       crand(g, GIR_F32, SH(5), &r, 1, 0.5));
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, y));
    gir_simplify_stats st = FOLD_AND_COMPARE(g, 1, 1e-5, 30);
    CHECK_INT(g->n_nodes, 2);
    CHECK_INT(st.fired[rule_index("matmul_mul")], 1);
    gir_graph_free(g);
  }
}

static void test_conv_negative(void) {
  rng r = {3};
  /* the conv's output feeds a second consumer: nothing moves into it */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 3, 5, 5));
    gir_value *y = conv(g, x, crand(g, GIR_F32, SH(4, 3, 3, 3), &r, 0, 1), NULL, 1, 1);
    gir_graph_add_output(g, bin(g, GIR_BINARY_MUL, y, crand(g, GIR_F32, SH(4, 1, 1), &r, 1, 0.5)));
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, y));
    SIMPLIFY(g);
    CHECK_INT(g->n_nodes, 3);
    CHECK_INT(g->nodes[0]->n_in, 2);
    gir_graph_free(g);
  }
  /* the conv's output is itself a graph output */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 3, 5, 5));
    gir_value *y = conv(g, x, crand(g, GIR_F32, SH(4, 3, 3, 3), &r, 0, 1), NULL, 1, 1);
    gir_graph_add_output(g, y);
    gir_graph_add_output(g, bin(g, GIR_BINARY_ADD, y, crand(g, GIR_F32, SH(4, 1, 1), &r, 1, 0.5)));
    SIMPLIFY(g);
    CHECK_INT(g->n_nodes, 2);
    gir_graph_free(g);
  }
  /* constants that vary along other axes, or along the channel with a wrong
   * alignment ([4,1] lines up with H and W), stay */
  gir_shape bad[] = {SH(1, 4, 4, 5), SH(5), SH(4, 1), SH(1, 1, 4, 1), SH(2, 4, 1, 1)};
  for (int i = 0; i < 5; i++) {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 3, 4, 5));
    gir_value *y = conv(g, x, crand(g, GIR_F32, SH(4, 3, 1, 1), &r, 0, 1), NULL, 1, 0);
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, bin(g, GIR_BINARY_MUL, y, crand(g, GIR_F32, bad[i], &r, 1, 0.5))));
    SIMPLIFY(g);
    CHECKF(g->n_nodes == 3, "constant %d: %d nodes", i, g->n_nodes);
    gir_graph_free(g);
  }
  /* weights that are not constant (a second input) */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 3, 5, 5)), *w = tu_input(g, GIR_F32, SH(4, 3, 1, 1));
    gir_value *y = conv(g, x, w, NULL, 1, 0);
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, bin(g, GIR_BINARY_MUL, y, crand(g, GIR_F32, SH(4, 1, 1), &r, 1, 1))));
    SIMPLIFY(g);
    CHECK_INT(g->n_nodes, 3);
    gir_graph_free(g);
  }
  /* c - conv(x) is no per-channel shift of the conv */
  {
    gir_graph *g = gir_graph_new("t");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 3, 5, 5));
    gir_value *y = conv(g, x, crand(g, GIR_F32, SH(4, 3, 1, 1), &r, 0, 1), NULL, 1, 0);
    gir_graph_add_output(g, un(g, GIR_UNARY_RELU, bin(g, GIR_BINARY_SUB, crand(g, GIR_F32, SH(4, 1, 1), &r, 1, 1), y)));
    SIMPLIFY(g);
    CHECK_INT(g->n_nodes, 3);
    gir_graph_free(g);
  }
}

static void test_rule_table(void) {
  int n = gir_simplify_rule_count();
  CHECK(n > 0 && n <= GIR_SIMPLIFY_MAX_RULES);
  for (int i = 0; i < n; i++) {
    const gir_rule *r = gir_simplify_rule(i);
    CHECKF(r->name && r->algebra && strstr(r->algebra, "→") && r->rewrite && r->op < GIR_OP_COUNT, "rule %d", i);
    for (int j = 0; j < i; j++) CHECKF(strcmp(r->name, gir_simplify_rule(j)->name), "duplicate rule %s", r->name);
  }
  CHECK(gir_simplify_rule(n) == NULL);
}

/* --- the light ResNet-50 --- */

static void test_resnet50(void) {
  gir_evaluator ev = lower_fold_evaluator();
  gir_graph *g = tu_light_folded("light_resnet50", &ev);
  if (!g) return;
  gir_err e = {{0}};
  VERIFY(g);
  int imported = g->n_nodes, muls = count_op(g, GIR_OP_binary, GIR_BINARY_MUL),
      adds = count_op(g, GIR_OP_binary, GIR_BINARY_ADD), subs = count_op(g, GIR_OP_binary, GIR_BINARY_SUB);
  gir_simplify_stats st = SIMPLIFY_EV(g, &ev);
  int32_t folded = 0;
  gir_fold_constants(g, &ev, 0, &folded, &e);
  VERIFY(g);
  printf("light_resnet50: %d nodes after import and fold (%d mul, %d add, %d sub) -> %d after simplify and fold "
         "(%d sweeps, %d rewrites, %d merged by CSE)\n",
         imported, muls, adds, subs, g->n_nodes, st.sweeps, st.rewrites, st.cse_merged);
  for (int i = 0; i < gir_simplify_rule_count(); i++)
    if (st.fired[i])
      printf("  %-20s %4d  %s\n", gir_simplify_rule(i)->name, st.fired[i], gir_simplify_rule(i)->algebra);
  int hist[GIR_OP_COUNT] = {0};
  for (int k = 0; k < g->n_nodes; k++) hist[g->nodes[k]->op]++;
  printf("  ops left:");
  for (int o = 0; o < GIR_OP_COUNT; o++)
    if (hist[o]) printf(" %s %d", gir_op_name((gir_op)o), hist[o]);
  printf("; binary: mul %d, add %d, sub %d\n", count_op(g, GIR_OP_binary, GIR_BINARY_MUL),
         count_op(g, GIR_OP_binary, GIR_BINARY_ADD), count_op(g, GIR_OP_binary, GIR_BINARY_SUB));
  /* every BN is inside its conv: no sub or mul is left; the adds left are the 16
   * residual adds (two non-constant operands) and the classifier's bias */
  CHECK_INT(count_op(g, GIR_OP_binary, GIR_BINARY_SUB), 0);
  CHECK_INT(count_op(g, GIR_OP_binary, GIR_BINARY_MUL), 0);
  int const_adds = 0;
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    if (n->op == GIR_OP_binary && gir_attr_int(n, "fn", -1) == GIR_BINARY_ADD &&
        (n->in[0]->data || n->in[1]->data) && (n->in[0]->producer && n->in[0]->producer->op == GIR_OP_conv))
      const_adds++;
  }
  CHECK_INT(const_adds, 0);
  CHECK_INT(st.fired[rule_index("conv_mul")], 53);
  gir_graph_free(g);
}

int main(void) {
  test_rule_table();
  test_identities();
  test_noops();
  test_chains();
  test_requant_roundtrip();
  test_outputs();
  test_cse();
  test_conv_bn();
  test_conv_negative();
  test_resnet50();
  return check_finish("test_simplify_graph");
}
