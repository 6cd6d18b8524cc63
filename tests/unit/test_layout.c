/* test_layout.c — tests of the layout passes (layout/nchwc.c, pack_matmul.c). Each case
 * is a tiny graph built with the graphir API, run through lay_nchwc and checked
 * twice: structurally (which ops remain, which are relayouts, what the blocked
 * ops read, weight and bias shapes, the lay_stats counters, gir_verify clean)
 * and numerically (the reference interpreter, te/interp.h, runs the graph
 * before and after on random inputs and weights; outputs must agree to 1e-5 of
 * their scale). Cases: a conv chain, a residual diamond, pooling and a global
 * mean, concat on channels, broadcast constant operands of element-wise ops
 * (folded to constants afterwards), convs the pass must leave alone (grouped,
 * non-constant weight or bias, float16, block < 4), depthwise convs, a 3-channel
 * image input, graph outputs inside the blocked region, consumers that must
 * keep reading plain NCHW (channel or non-keepdims reductions, concat on another
 * axis, a transpose), a squeeze-excite block, operands in different blocks,
 * output channels padded to whole blocks, a few output channels in one narrow
 * padded block, 1-D convs (NCW as NCHW[x]c with H = 1) with a blocked relu between
 * them, and matmul weights packed in panels (layout/pack_matmul.c).
 * Block sizes are read from the graph (the pass picks them: output blocks up to
 * two vectors) and checked against the limits and ops.def's weight layout. */
#include <stdlib.h>
#include "check.h"
#include "graph_util.h"
#include "graph.h"
#include "interp.h"
#include "layout.h"
#include "passes.h"

#define NARGS64(...) ((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SH(...) ((gir_shape){.rank = NARGS64(__VA_ARGS__), .dims = {__VA_ARGS__}})
#define INTS(...) (int64_t[]){__VA_ARGS__}, NARGS64(__VA_ARGS__)
#define MAX_OUTS 8

/* --- building graphs --- */


static gir_value *crand(gir_graph *g, gir_dtype t, gir_shape s, rng *r) {
  gir_value *v = gir_const_new(g, NULL, t, &s, NULL);
  for (int64_t i = 0; i < gir_value_numel(v); i++) gir_store_f64(t, v->data, i, rnd(r));
  return v;
}

static gir_value *un(gir_graph *g, gir_unary_fn fn, gir_value *a) {
  gir_node *n = TU_NODE(g, GIR_OP_unary, a);
  gir_attr_set_int(g, n, "fn", fn);
  return tu_done(g, n);
}

static gir_value *bin(gir_graph *g, gir_binary_fn fn, gir_value *a, gir_value *b) {
  gir_node *n = TU_NODE(g, GIR_OP_binary, a, b);
  gir_attr_set_int(g, n, "fn", fn);
  return tu_done(g, n);
}

static gir_value *relu(gir_graph *g, gir_value *x) { return un(g, GIR_UNARY_RELU, x); }

/* conv with a square kernel, symmetric padding and stride; b may be NULL. */
static gir_value *conv_full(gir_graph *g, gir_value *x, gir_value *w, gir_value *b, int64_t group, int64_t pad,
                            int64_t stride) {
  gir_node *n = b ? TU_NODE(g, GIR_OP_conv, x, w, b) : TU_NODE(g, GIR_OP_conv, x, w);
  gir_attr_set_ints(g, n, "pads", INTS(pad, pad, pad, pad));
  gir_attr_set_ints(g, n, "strides", INTS(stride, stride));
  gir_attr_set_int(g, n, "group", group);
  return tu_done(g, n);
}

/* conv of x to m channels, k x k, "same" padding, random constant weight and bias. */
static gir_value *conv(gir_graph *g, gir_value *x, int64_t m, int64_t k, rng *r) {
  gir_value *w = crand(g, x->dtype, SH(m, x->shape.dims[1], k, k), r), *b = crand(g, x->dtype, SH(m), r);
  return conv_full(g, x, w, b, 1, k / 2, 1);
}

static gir_value *pool(gir_graph *g, gir_value *x, gir_pool_fn fn, int64_t k, int64_t stride, int64_t pad) {
  gir_node *n = TU_NODE(g, GIR_OP_pool, x);
  gir_attr_set_int(g, n, "fn", fn);
  gir_attr_set_ints(g, n, "kernel", INTS(k, k));
  gir_attr_set_ints(g, n, "strides", INTS(stride, stride));
  gir_attr_set_ints(g, n, "pads", INTS(pad, pad, pad, pad));
  return tu_done(g, n);
}

static gir_value *reduce(gir_graph *g, gir_value *x, gir_reduce_fn fn, const int64_t *axes, int32_t na, int keep) {
  gir_node *n = TU_NODE(g, GIR_OP_reduce, x);
  gir_attr_set_int(g, n, "fn", fn);
  gir_attr_set_ints(g, n, "axes", axes, na);
  gir_attr_set_int(g, n, "keepdims", keep);
  return tu_done(g, n);
}

static gir_value *with_ints(gir_graph *g, gir_op op, gir_value *x, const char *name, const int64_t *v, int32_t cnt) {
  gir_node *n = TU_NODE(g, op, x);
  gir_attr_set_ints(g, n, name, v, cnt);
  return tu_done(g, n);
}

static gir_value *concat(gir_graph *g, gir_value *a, gir_value *b, int64_t axis) {
  gir_node *n = TU_NODE(g, GIR_OP_concat, a, b);
  gir_attr_set_int(g, n, "axis", axis);
  return tu_done(g, n);
}

static gir_value *cast(gir_graph *g, gir_value *x, gir_dtype to) {
  gir_node *n = TU_NODE(g, GIR_OP_cast, x);
  gir_attr_set_int(g, n, "to", to);
  return tu_done(g, n);
}

/* --- inspecting graphs --- */


/* The i-th node of op in graph order, or NULL. */
static gir_node *nth(const gir_graph *g, gir_op op, int i) {
  for (int k = 0; k < g->n_nodes; k++)
    if (g->nodes[k]->op == op && i-- == 0) return g->nodes[k];
  return NULL;
}

static gir_op producer_op(const gir_value *v) { return v && v->producer ? v->producer->op : GIR_OP_COUNT; }

static int is_relayout(const gir_value *v, int64_t src, int64_t dst) {
  const gir_node *p = v ? v->producer : NULL;
  return p && p->op == GIR_OP_relayout && gir_attr_int(p, "src", -1) == src && gir_attr_int(p, "dst", -1) == dst;
}

/* relayout from any block back to plain NCHW */
static int is_unblock(const gir_value *v) {
  const gir_node *p = v ? v->producer : NULL;
  return p && p->op == GIR_OP_relayout && gir_attr_int(p, "src", 0) > 0 && gir_attr_int(p, "dst", -1) == 0;
}

/* The channel block of a 5-D value, 0 otherwise. */
static int64_t block_of(const gir_value *v) { return v && v->shape.rank == 5 ? v->shape.dims[4] : 0; }

static int shape_is(const gir_value *v, gir_shape s) { return v && gir_shape_equal(&v->shape, &s); }

static const char *shape_of(const gir_value *v, char *buf) { return v ? gir_shape_str(&v->shape, buf, 160) : "(none)"; }

static int verify_(const gir_graph *g, int line) {
  gir_err e = {{0}};
  return CHECKF(gir_verify(g, &e) == 0, "line %d: verify: %s", line, e.msg);
}
#define VERIFY(g) verify_(g, __LINE__)

/* A conv_nchwc of m output channels from c input channels with a kh x kw kernel
 * (dw: depthwise): its input block ib and output block ob are what the pass
 * chose; checked here are the contract (ops.def) and the choice's limits: ob a
 * power of two in [4, 2 * block] dividing m; ib dividing c; depthwise ib = ob.
 * Returns ob (0 when something is off). */
static int64_t conv_nchwc_ok_(const gir_node *n, int64_t m, int64_t c, int64_t kh, int64_t kw, int dw, int bias,
                              int32_t block, int line) {
  char b1[160], b2[160];
  if (!CHECKF(n && n->op == GIR_OP_conv_nchwc, "line %d: not a conv_nchwc", line)) return 0;
  int64_t ib = block_of(n->in[0]), ob = block_of(n->out[0]);
  int ok = CHECKF(ib > 0 && ob > 0, "line %d: x %s, y %s", line, shape_of(n->in[0], b1), shape_of(n->out[0], b2));
  if (!ok) return 0;
  ok &= CHECKF(ob >= 4 && ob <= 2 * block && !(ob & (ob - 1)) && m % ob == 0, "line %d: output block %lld (block %d)",
               line, (long long)ob, block);
  ok &= CHECKF(c % ib == 0 && (!dw || ib == ob), "line %d: input block %lld", line, (long long)ib);
  gir_shape ws = dw ? SH(m / ob, 1, kh, kw, 1, ob) : SH(m / ob, c / ib, kh, kw, ib, ob);
  ok &= CHECKF(shape_is(n->in[1], ws) && n->in[1]->data, "line %d: weight %s, want %s", line, shape_of(n->in[1], b1),
               gir_shape_str(&ws, b2, sizeof b2));
  ok &= CHECKF(gir_attr_int(n, "group", 1) == (dw ? c : 1), "line %d: group %lld", line,
               (long long)gir_attr_int(n, "group", 1));
  if (bias)
    ok &= CHECKF(n->n_in > 2 && shape_is(n->in[2], SH(m / ob, ob)) && n->in[2]->data, "line %d: bias %s", line,
                 n->n_in > 2 ? shape_of(n->in[2], b1) : "(none)");
  return ok ? ob : 0;
}
#define CONV_NCHWC_OK(n, m, c, kh, kw, dw, bias, block) conv_nchwc_ok_(n, m, c, kh, kw, dw, bias, block, __LINE__)

/* Verifies, runs the pass, verifies again. */
static lay_stats layout_(gir_graph *g, int32_t block, int line) {
  lay_stats st = {-1, -1, -1};
  gir_err e = {{0}};
  verify_(g, line);
  CHECKF(lay_nchwc(g, block, 1, &st, &e) == 0, "line %d: lay_nchwc: %s", line, e.msg);
  verify_(g, line);
  return st;
}
#define LAYOUT(g, block) layout_(g, block, __LINE__)

static void stats_(const lay_stats *st, int convs, int propagated, int transforms, int line) {
  CHECKF(st->convs == convs && st->propagated == propagated && st->transforms == transforms,
         "line %d: stats convs %d propagated %d transforms %d, want %d %d %d", line, st->convs, st->propagated,
         st->transforms, convs, propagated, transforms);
}
#define STATS(st, c, p, t) stats_(&(st), c, p, t, __LINE__)

/* --- numerical agreement --- */

/* Reference outputs of a graph, with the inputs they were computed from and
 * the outputs' names, dtypes and shapes (the pass must keep them). */
typedef struct ref {
  gir_arena *a;
  void **in;
  void *out[MAX_OUTS];
  int32_t n_out;
  const char *name[MAX_OUTS];
  gir_dtype dtype[MAX_OUTS];
  gir_shape shape[MAX_OUTS];
} ref;

static ref reference_(const gir_graph *g, uint64_t seed, int line) {
  ref r = {.a = gir_arena_new(), .n_out = g->n_outputs};
  rng rg = {seed * 7919u + 17u};
  r.in = gir_arena_calloc(r.a, (size_t)g->n_inputs + 1, sizeof *r.in);
  for (int i = 0; i < g->n_inputs; i++) {
    const gir_value *v = g->inputs[i];
    r.in[i] = gir_arena_alloc(r.a, (size_t)gir_value_nbytes(v) + 1);
    for (int64_t j = 0; j < gir_value_numel(v); j++) gir_store_f64(v->dtype, r.in[i], j, rnd(&rg));
  }
  CHECKF(g->n_outputs <= MAX_OUTS, "line %d: too many outputs", line);
  for (int i = 0; i < g->n_outputs && i < MAX_OUTS; i++) {
    r.name[i] = g->outputs[i]->name;
    r.dtype[i] = g->outputs[i]->dtype;
    r.shape[i] = g->outputs[i]->shape;
  }
  gir_err e = {{0}};
  CHECKF(lower_interpret(g, (const void *const *)r.in, r.out, r.a, &e) == 0, "line %d: interpret before: %s", line,
         e.msg);
  return r;
}
#define REFERENCE(g, seed) reference_(g, seed, __LINE__)

/* max |got - want| / max |want|: the pass only reorders channels and the
 * blocked conv sums in another order, so errors are measured on the output's
 * scale. NaN counts as the worst. */
static double rel_err(gir_dtype t, int64_t n, const void *got, const void *want) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < n; i++) {
    double a = gir_load_f64(t, got, i), b = gir_load_f64(t, want, i);
    if (!(fabs(a - b) <= worst)) worst = fabs(a - b);
    if (fabs(b) > scale) scale = fabs(b);
  }
  return worst / (scale > 0 ? scale : 1);
}

/* Runs g now and compares with the reference: same output count, names, dtypes,
 * shapes, and values to 1e-5. */
static void agree_(const gir_graph *g, ref *r, int line) {
  void *out[MAX_OUTS] = {0};
  gir_err e = {{0}};
  if (!CHECKF(g->n_outputs == r->n_out, "line %d: %d outputs, had %d", line, g->n_outputs, r->n_out)) return;
  if (!CHECKF(lower_interpret(g, (const void *const *)r->in, out, r->a, &e) == 0, "line %d: interpret after: %s",
              line, e.msg))
    return;
  for (int i = 0; i < r->n_out && i < MAX_OUTS; i++) {
    const gir_value *v = g->outputs[i];
    char b1[160], b2[160];
    CHECKF(r->name[i] && v->name && !strcmp(v->name, r->name[i]), "line %d: output %d is '%s', was '%s'", line, i,
           v->name ? v->name : "(null)", r->name[i] ? r->name[i] : "(null)");
    if (!CHECKF(v->dtype == r->dtype[i] && gir_shape_equal(&v->shape, &r->shape[i]),
                "line %d: output %d is %s, was %s", line, i, gir_shape_str(&v->shape, b1, sizeof b1),
                gir_shape_str(&r->shape[i], b2, sizeof b2)))
      continue;
    double err = rel_err(v->dtype, gir_value_numel(v), out[i], r->out[i]);
    CHECKF(err <= 1e-5, "line %d: output %d differs by %g", line, i, err);
  }
}
#define AGREE(g, r) agree_(g, r, __LINE__)

static void ref_free(ref *r) { gir_arena_free(r->a); }

/* Folds constant-only nodes with the interpreter's evaluator, as the compile
 * pipeline does after the layout pass. */
static int32_t fold(gir_graph *g) {
  gir_evaluator ev = lower_fold_evaluator();
  int32_t folded = 0;
  gir_err e = {{0}};
  gir_fold_constants(g, &ev, 0, &folded, &e);
  return folded;
}

/* --- 1. a conv chain --- */

/* x[1,8,6,6] → conv 3x3 (8) → relu → conv 1x1 (16) → output */
static gir_graph *chain_graph(uint64_t seed, gir_value **x) {
  rng r = {seed};
  gir_graph *g = gir_graph_new("chain");
  *x = tu_input(g, GIR_F32, SH(1, 8, 6, 6));
  gir_graph_add_output(g, conv(g, relu(g, conv(g, *x, 8, 3, &r)), 16, 1, &r));
  return g;
}

static void test_chain(void) {
  for (int32_t block = 4; block <= 16; block *= 2) {
    gir_value *x;
    gir_graph *g = chain_graph(1 + (uint64_t)block, &x);
    ref r = REFERENCE(g, 1 + (uint64_t)block);
    lay_stats st = LAYOUT(g, block);
    STATS(st, 2, 1, 2);
    CHECK_INT(tu_count_op(g, GIR_OP_conv), 0);
    CHECK_INT(tu_count_op(g, GIR_OP_conv_nchwc), 2);
    CHECK_INT(tu_count_op(g, GIR_OP_relayout), 2);
    CHECK_INT(g->n_nodes, 5);
    gir_node *c1 = nth(g, GIR_OP_conv_nchwc, 0), *c2 = nth(g, GIR_OP_conv_nchwc, 1), *u = nth(g, GIR_OP_unary, 0);
    if (CHECK(c1 && c2 && u)) {
      int64_t ob1 = CONV_NCHWC_OK(c1, 8, 8, 3, 3, 0, 1, block);
      int64_t ob2 = CONV_NCHWC_OK(c2, 16, 8, 1, 1, 0, 1, block);
      /* input side: relayout(x, 0→ib) feeds the first conv */
      CHECK(is_relayout(c1->in[0], 0, block_of(c1->in[0])) && c1->in[0]->producer->in[0] == x);
      /* relu runs blocked, directly on the first conv's output, and feeds the second conv unchanged */
      CHECK(u->in[0] == c1->out[0] && u->in[0]->shape.rank == 5);
      CHECK(c2->in[0] == u->out[0] && block_of(c2->in[0]) == ob1);
      /* output side: relayout(y2, ob→0) is the graph output */
      CHECK(is_relayout(g->outputs[0], ob2, 0) && g->outputs[0]->producer->in[0] == c2->out[0]);
      printf("chain, block %d: blocks %lld → %lld → %lld\n", block, (long long)block_of(c1->in[0]), (long long)ob1,
             (long long)ob2);
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* --- 2. a residual diamond --- */

static void test_residual(void) {
  for (int32_t block = 4; block <= 8; block *= 2) {
    rng rr = {3};
    gir_graph *g = gir_graph_new("residual");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 5, 5));
    gir_value *a = relu(g, conv(g, x, 8, 3, &rr));
    gir_value *s = bin(g, GIR_BINARY_ADD, conv(g, a, 8, 3, &rr), a);
    gir_graph_add_output(g, relu(g, s));
    ref r = REFERENCE(g, 3);
    lay_stats st = LAYOUT(g, block);
    STATS(st, 2, 3, 2);
    CHECK_INT(tu_count_op(g, GIR_OP_conv_nchwc), 2);
    CHECK_INT(tu_count_op(g, GIR_OP_relayout), 2);
    CHECK_INT(g->n_nodes, 7);
    gir_node *add = nth(g, GIR_OP_binary, 0), *c1 = nth(g, GIR_OP_conv_nchwc, 0), *c2 = nth(g, GIR_OP_conv_nchwc, 1),
             *u1 = nth(g, GIR_OP_unary, 0), *u2 = nth(g, GIR_OP_unary, 1);
    if (CHECK(add && c1 && c2 && u1 && u2)) {
      CONV_NCHWC_OK(c1, 8, 8, 3, 3, 0, 1, block);
      CONV_NCHWC_OK(c2, 8, 8, 3, 3, 0, 1, block);
      /* no relayout between the convs and the add: it reads the second conv and the first relu, both blocked */
      CHECK(u1->in[0] == c1->out[0] && c2->in[0] == u1->out[0]);
      CHECK(add->in[0] == c2->out[0] && add->in[1] == u1->out[0]);
      CHECK(block_of(add->in[0]) > 0 && block_of(add->in[0]) == block_of(add->in[1]));
      CHECK(u2->in[0] == add->out[0]);
      CHECK(is_relayout(g->outputs[0], block_of(u2->out[0]), 0) && g->outputs[0]->producer->in[0] == u2->out[0]);
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* --- 3. pooling and a global mean --- */

static void test_pool_mean(void) {
  for (int c = 0; c < 2; c++) {
    int32_t block = c ? 8 : 4;
    rng rr = {4 + (uint64_t)c};
    gir_graph *g = gir_graph_new("pool");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 16, 8, 8));
    gir_value *p = pool(g, conv(g, x, 16, 3, &rr), c ? GIR_POOL_AVG : GIR_POOL_MAX, 3, 2, 1);
    gir_value *m = reduce(g, p, GIR_REDUCE_MEAN, INTS(2, 3), 1);
    gir_graph_add_output(g, with_ints(g, GIR_OP_reshape, m, "shape", INTS(1, 16)));
    ref r = REFERENCE(g, 4 + (uint64_t)c);
    lay_stats st = LAYOUT(g, block);
    STATS(st, 1, 2, 2);
    CHECK_INT(tu_count_op(g, GIR_OP_relayout), 2);
    gir_node *cn = nth(g, GIR_OP_conv_nchwc, 0), *pn = nth(g, GIR_OP_pool, 0), *rn = nth(g, GIR_OP_reduce, 0),
             *sh = nth(g, GIR_OP_reshape, 0);
    char b[160];
    if (CHECK(cn && pn && rn && sh)) {
      int64_t ob = CONV_NCHWC_OK(cn, 16, 16, 3, 3, 0, 1, block);
      CHECK_INT(gir_attr_int(pn, "blocked", 0), 1);
      CHECK(pn->in[0] == cn->out[0]);
      CHECKF(ob && shape_is(pn->out[0], SH(1, 16 / ob, 4, 4, ob)), "pool %s", shape_of(pn->out[0], b));
      CHECK(rn->in[0] == pn->out[0]);
      CHECKF(ob && shape_is(rn->out[0], SH(1, 16 / ob, 1, 1, ob)), "mean %s", shape_of(rn->out[0], b));
      /* the one relayout back to NCHW sits right before the reshape */
      CHECK(is_relayout(sh->in[0], ob, 0) && sh->in[0]->producer->in[0] == rn->out[0]);
      CHECK(sh->out[0] == g->outputs[0]);
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* --- 4. concat on channels --- */

static void test_concat(void) {
  /* two convs on one input → concat axis 1 → conv */
  for (int32_t block = 4; block <= 8; block *= 2) {
    rng rr = {6};
    gir_graph *g = gir_graph_new("concat");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 6, 6));
    gir_value *cat = concat(g, conv(g, x, 8, 3, &rr), conv(g, x, 8, 1, &rr), 1);
    gir_graph_add_output(g, conv(g, cat, 8, 3, &rr));
    ref r = REFERENCE(g, 6);
    lay_stats st = LAYOUT(g, block);
    CHECK_INT(st.convs, 3);
    CHECK_INT(st.propagated, 1);
    CHECK_INT(tu_count_op(g, GIR_OP_conv_nchwc), 3);
    gir_node *cn = nth(g, GIR_OP_concat, 0), *c3 = nth(g, GIR_OP_conv_nchwc, 2);
    char b[160];
    if (CHECK(cn && c3)) {
      int64_t ob = block_of(cn->in[0]);
      CHECK(producer_op(cn->in[0]) == GIR_OP_conv_nchwc && producer_op(cn->in[1]) == GIR_OP_conv_nchwc);
      CHECKF(ob && shape_is(cn->out[0], SH(1, 16 / ob, 6, 6, ob)), "concat %s", shape_of(cn->out[0], b));
      CHECK(c3->in[0] == cn->out[0]);
      CONV_NCHWC_OK(c3, 8, 16, 3, 3, 0, 1, block);
    }
    /* relayouts remain only at the boundary: on x and on the output */
    int on_x = 0, other = 0;
    for (int k = 0; k < g->n_nodes; k++) {
      const gir_node *n = g->nodes[k];
      if (n->op != GIR_OP_relayout) continue;
      if (n->in[0] == x && gir_attr_int(n, "src", -1) == 0) on_x++;
      else if (n->out[0] != g->outputs[0]) other++;
    }
    CHECK(on_x >= 1);
    CHECK_INT(other, 0);
    CHECK(is_unblock(g->outputs[0]));
    CHECK_INT(st.transforms, on_x + 1);
    if (on_x > 1) printf("note: block %d: %d identical relayouts of the shared input x (no CSE in the pass)\n", block,
                         on_x);
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
  /* inputs in different blocks (8 and 4 channels): the first input's block is
   * the concat's; a second input that block does not divide keeps the concat
   * plain, one it divides is re-blocked */
  for (int c = 0; c < 2; c++) {
    rng rr = {7};
    gir_graph *g = gir_graph_new("concat2");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 4, 4));
    gir_value *a = conv(g, x, c ? 4 : 8, 1, &rr), *bb = conv(g, x, c ? 8 : 4, 1, &rr);
    gir_graph_add_output(g, relu(g, concat(g, a, bb, 1)));
    ref r = REFERENCE(g, 7);
    lay_stats st = LAYOUT(g, 8);
    CHECK_INT(st.convs, 2);
    gir_node *cn = nth(g, GIR_OP_concat, 0), *k0 = nth(g, GIR_OP_conv_nchwc, 0), *k1 = nth(g, GIR_OP_conv_nchwc, 1);
    if (CHECK(cn && k0 && k1)) {
      /* the convs in graph order: k0 makes the concat's first input */
      int64_t b0 = block_of(k0->out[0]), b1 = block_of(k1->out[0]), c1 = c ? 8 : 4;
      printf("concat of blocks %lld and %lld: %s\n", (long long)b0, (long long)b1,
             cn->out[0]->shape.rank == 5 ? "blocked" : "plain");
      if (c1 % b0) {
        CHECK_INT(cn->out[0]->shape.rank, 4);
        CHECK(is_unblock(cn->in[0]) && is_unblock(cn->in[1]));
      } else {
        CHECK_INT(cn->out[0]->shape.rank, 5);
        CHECK(cn->in[0] == k0->out[0]);
        CHECK(b1 == b0 ? cn->in[1] == k1->out[0] : is_relayout(cn->in[1], b1, b0));
      }
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* --- 5. broadcast operands of element-wise ops --- */

static void test_broadcast_operands(void) {
  rng rr = {8};
  gir_graph *g = gir_graph_new("bcast");
  gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 4, 5));
  gir_value *y = conv(g, x, 8, 3, &rr);
  y = bin(g, GIR_BINARY_ADD, y, crand(g, GIR_F32, SH(8, 1, 1), &rr));     /* per channel, rank 3 */
  y = bin(g, GIR_BINARY_MUL, crand(g, GIR_F32, SH(1), &rr), y);          /* a [1] on the left */
  y = bin(g, GIR_BINARY_MUL, y, gir_const_scalar(g, GIR_F32, 0.75));      /* a scalar */
  y = bin(g, GIR_BINARY_SUB, y, crand(g, GIR_F32, SH(1, 8, 1, 1), &rr));  /* per channel, rank 4 */
  y = bin(g, GIR_BINARY_DIV, y, crand(g, GIR_F32, SH(5), &rr));           /* along W */
  gir_value *cond = bin(g, GIR_BINARY_GT, y, gir_const_scalar(g, GIR_F32, 0));
  gir_node *wn = TU_NODE(g, GIR_OP_where, cond, y, crand(g, GIR_F32, SH(8, 1, 1), &rr));
  y = cast(g, tu_done(g, wn), GIR_F64);
  gir_graph_add_output(g, y);
  /* the DIV's [5] would divide by values near 0: keep them at least 0.5 in magnitude */
  {
    gir_node *dn = nth(g, GIR_OP_binary, 4);
    float *d = dn->in[1]->data;
    for (int i = 0; i < 5; i++) d[i] = d[i] < 0 ? d[i] - 0.5f : d[i] + 0.5f;
  }
  ref r = REFERENCE(g, 8);
  lay_stats st = LAYOUT(g, 4);
  /* add, mul, mul, sub, div, gt, where, cast run blocked */
  CHECK_INT(st.convs, 1);
  CHECK_INT(st.propagated, 8);
  gir_node *cv = nth(g, GIR_OP_conv_nchwc, 0);
  int64_t ob = cv ? CONV_NCHWC_OK(cv, 8, 8, 3, 3, 0, 1, 4) : 0;
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    if (n->op == GIR_OP_binary || n->op == GIR_OP_where || n->op == GIR_OP_cast)
      CHECKF(block_of(n->out[0]) == ob, "%s not blocked", gir_op_name(n->op));
  }
  /* the constant operands' relayouts and reshapes read constants only */
  int const_side = 0;
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    if (n->op != GIR_OP_relayout && n->op != GIR_OP_reshape) continue;
    const gir_value *v = n->in[0];
    while (v->producer && (v->producer->op == GIR_OP_reshape || v->producer->op == GIR_OP_relayout))
      v = v->producer->in[0];
    if (v->data) const_side++;
  }
  CHECK(const_side >= 5);
  CHECK_INT(st.transforms, tu_count_op(g, GIR_OP_relayout));
  printf("broadcast operands: %d relayouts and %d reshapes before folding\n", tu_count_op(g, GIR_OP_relayout),
         tu_count_op(g, GIR_OP_reshape));
  AGREE(g, &r);
  /* after folding, only the two boundary relayouts and no reshape are left; every
   * operand that was a constant is a constant in the blocked layout */
  CHECK(fold(g) >= 5);
  VERIFY(g);
  CHECK_INT(tu_count_op(g, GIR_OP_relayout), 2);
  CHECK_INT(tu_count_op(g, GIR_OP_reshape), 0);
  char b[160];
  gir_node *add = nth(g, GIR_OP_binary, 0), *mul1 = nth(g, GIR_OP_binary, 1), *mul2 = nth(g, GIR_OP_binary, 2),
           *sub = nth(g, GIR_OP_binary, 3), *dv = nth(g, GIR_OP_binary, 4), *wh = nth(g, GIR_OP_where, 0);
  if (CHECK(ob && add && mul1 && mul2 && sub && dv && wh)) {
    gir_shape pc = SH(1, 8 / ob, 1, 1, ob), one = SH(1, 1, 1, 1, 1);
    CHECKF(add->in[1]->data && shape_is(add->in[1], pc), "add operand %s", shape_of(add->in[1], b));
    CHECKF(mul1->in[0]->data && shape_is(mul1->in[0], one), "mul operand %s", shape_of(mul1->in[0], b));
    CHECKF(mul2->in[1]->data && shape_is(mul2->in[1], one), "mul operand %s", shape_of(mul2->in[1], b));
    CHECKF(sub->in[1]->data && shape_is(sub->in[1], pc), "sub operand %s", shape_of(sub->in[1], b));
    CHECKF(dv->in[1]->data && shape_is(dv->in[1], SH(1, 1, 1, 5, 1)), "div operand %s", shape_of(dv->in[1], b));
    CHECKF(wh->in[2]->data && shape_is(wh->in[2], pc), "where operand %s", shape_of(wh->in[2], b));
    CHECK(wh->in[0]->dtype == GIR_BOOL && block_of(wh->in[0]) == ob);
  }
  CHECK(is_relayout(g->outputs[0], ob, 0) && g->outputs[0]->dtype == GIR_F64);
  AGREE(g, &r);
  ref_free(&r);
  gir_graph_free(g);
}

/* --- 6. cases left alone --- */

static void unchanged_(gir_graph *g, int32_t block, int line) {
  int32_t n = g->n_nodes;
  gir_op ops[16];
  for (int k = 0; k < n && k < 16; k++) ops[k] = g->nodes[k]->op;
  ref r = reference_(g, 9, line);
  lay_stats st = layout_(g, block, line);
  stats_(&st, 0, 0, 0, line);
  CHECKF(g->n_nodes == n, "line %d: %d nodes, had %d", line, g->n_nodes, n);
  int same = g->n_nodes == n;
  for (int k = 0; same && k < n && k < 16; k++) same = g->nodes[k]->op == ops[k];
  CHECKF(same, "line %d: ops changed", line);
  CHECKF(tu_count_op(g, GIR_OP_conv_nchwc) == 0 && tu_count_op(g, GIR_OP_relayout) == 0, "line %d: rewritten", line);
  agree_(g, &r, line);
  ref_free(&r);
}
#define UNCHANGED(g, block) unchanged_(g, block, __LINE__)

static void test_left_alone(void) {
  rng rr = {10};
  /* group 2 with 3 output channels per group at stride 2: no block (at stride 1
   * it takes blocks of one channel, test_grouped) */
  {
    gir_graph *g = gir_graph_new("group2");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 6, 6));
    gir_value *y = conv_full(g, x, crand(g, GIR_F32, SH(6, 4, 3, 3), &rr), crand(g, GIR_F32, SH(6), &rr), 2, 1, 2);
    gir_graph_add_output(g, relu(g, y));
    UNCHANGED(g, 4);
    CHECK_INT(tu_count_op(g, GIR_OP_conv), 1);
    gir_graph_free(g);
  }
  /* depthwise with a channel multiplier (group 8, 16 outputs) at stride 2: neither */
  {
    gir_graph *g = gir_graph_new("dwmult");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 6, 6));
    gir_value *y = conv_full(g, x, crand(g, GIR_F32, SH(16, 1, 3, 3), &rr), NULL, 8, 1, 2);
    gir_graph_add_output(g, relu(g, y));
    UNCHANGED(g, 4);
    gir_graph_free(g);
  }
  /* weight that is a graph input */
  {
    gir_graph *g = gir_graph_new("winput");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 6, 6)), *w = tu_input(g, GIR_F32, SH(8, 8, 3, 3));
    gir_graph_add_output(g, relu(g, conv_full(g, x, w, crand(g, GIR_F32, SH(8), &rr), 1, 1, 1)));
    UNCHANGED(g, 4);
    CHECK_INT(tu_count_op(g, GIR_OP_conv), 1);
    gir_graph_free(g);
  }
  /* bias that is a graph input */
  {
    gir_graph *g = gir_graph_new("binput");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 6, 6)), *b = tu_input(g, GIR_F32, SH(8));
    gir_graph_add_output(g, relu(g, conv_full(g, x, crand(g, GIR_F32, SH(8, 8, 3, 3), &rr), b, 1, 1, 1)));
    UNCHANGED(g, 4);
    gir_graph_free(g);
  }
  /* float16 */
  {
    gir_graph *g = gir_graph_new("f16");
    gir_value *x = tu_input(g, GIR_F16, SH(1, 8, 6, 6));
    gir_graph_add_output(g, relu(g, conv(g, x, 8, 3, &rr)));
    UNCHANGED(g, 4);
    CHECK_INT(tu_count_op(g, GIR_OP_conv), 1);
    gir_graph_free(g);
  }
  /* a 3-D conv (rank 5) */
  {
    gir_graph *g = gir_graph_new("conv3d");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 4, 4, 4));
    gir_node *n = TU_NODE(g, GIR_OP_conv, x, crand(g, GIR_F32, SH(8, 8, 1, 1, 1), &rr));
    gir_attr_set_int(g, n, "group", 1);
    gir_graph_add_output(g, relu(g, tu_done(g, n)));
    UNCHANGED(g, 4);
    gir_graph_free(g);
  }
  /* block < 4 does nothing, even to an eligible chain */
  for (int32_t block = 0; block < 4; block++) {
    gir_value *x;
    gir_graph *g = chain_graph(11, &x);
    UNCHANGED(g, block);
    CHECK_INT(tu_count_op(g, GIR_OP_conv), 2);
    gir_graph_free(g);
  }
}

/* --- 6b. few output channels, and 1-D convs --- */

/* A conv with a few output channels (at most half a vector: 1, 3, 6, 8 of 16) at
 * stride 1 along W, over rows of a vector or more, runs on blocks of one channel
 * (plain NCHW in and out, for the template's row vectors); at stride 2 it gets one
 * narrow block of 4 or 8, padded.
 * 1-D convs (NCW) run as NCHW[x]c with H = 1, and the element-wise ops between two
 * of them stay blocked (one relayout in, one out). */
static void test_narrow_and_1d(void) {
  rng rr = {31};
  static const int64_t ms[] = {1, 3, 6, 8};
  for (int i = 0; i < 8; i++) {
    int64_t m = ms[i % 4], stride = i < 4 ? 1 : 2;
    gir_graph *g = gir_graph_new("narrow");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 5, 37)); /* rows of 37: two vectors and a ragged one */
    gir_value *w = crand(g, GIR_F32, SH(m, 8, 3, 3), &rr), *b = crand(g, GIR_F32, SH(m), &rr);
    gir_graph_add_output(g, relu(g, conv_full(g, x, w, b, 1, 1, stride)));
    ref r = REFERENCE(g, 40 + (uint64_t)i);
    LAYOUT(g, 16);
    CHECK_INT(tu_count_op(g, GIR_OP_conv), 0);
    gir_node *c = nth(g, GIR_OP_conv_nchwc, 0);
    if (CHECK(c)) {
      int64_t ob = block_of(c->out[0]), ib = block_of(c->in[0]);
      int64_t want = stride == 1 ? 1 : m <= 4 ? 4 : 8;
      CHECKF(ob == want && ib == (stride == 1 ? 1 : 8), "m %lld stride %lld: blocks %lld -> %lld", (long long)m,
             (long long)stride, (long long)ib, (long long)ob);
      CHECK(shape_is(c->in[1], SH((m + want - 1) / want, 8 / ib, 3, 3, ib, want)));
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
  for (int32_t block = 4; block <= 16; block *= 4) {
    /* x[1,8,20] → conv1d k5 pad 2 (16) → relu → conv1d k3 stride 2 dilation 2 (8) + bias → output */
    gir_graph *g = gir_graph_new("conv1d");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 20));
    gir_node *n1 = TU_NODE(g, GIR_OP_conv, x, crand(g, GIR_F32, SH(16, 8, 5), &rr), crand(g, GIR_F32, SH(16), &rr));
    gir_attr_set_ints(g, n1, "pads", INTS(2, 2));
    gir_attr_set_int(g, n1, "group", 1);
    gir_value *h = relu(g, tu_done(g, n1));
    gir_node *n2 = TU_NODE(g, GIR_OP_conv, h, crand(g, GIR_F32, SH(8, 16, 3), &rr), crand(g, GIR_F32, SH(8), &rr));
    gir_attr_set_ints(g, n2, "pads", INTS(1, 2));
    gir_attr_set_ints(g, n2, "strides", INTS(2));
    gir_attr_set_ints(g, n2, "dilations", INTS(2));
    gir_attr_set_int(g, n2, "group", 1);
    gir_graph_add_output(g, tu_done(g, n2));
    ref r = REFERENCE(g, 50 + (uint64_t)block);
    lay_stats st = LAYOUT(g, block);
    CHECK_INT(st.convs, 2);
    CHECK_INT(st.propagated, 1); /* the relu */
    CHECK_INT(tu_count_op(g, GIR_OP_conv), 0);
    CHECK_INT(tu_count_op(g, GIR_OP_relayout), 2);
    gir_node *c2 = nth(g, GIR_OP_conv_nchwc, 1);
    if (CHECK(c2)) {
      int32_t n;
      const int64_t *pd = gir_attr_ints(c2, "pads", &n);
      CHECK(n == 4 && pd[0] == 0 && pd[1] == 1 && pd[2] == 0 && pd[3] == 2);
      CHECK(c2->in[0]->shape.rank == 5 && c2->in[0]->shape.dims[2] == 1);
    }
    CHECK(g->outputs[0]->shape.rank == 3);
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* --- 7. depthwise --- */

static void test_depthwise(void) {
  for (int32_t block = 4; block <= 8; block *= 2) {
    rng rr = {12};
    gir_graph *g = gir_graph_new("dw");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 6, 6));
    gir_value *y =
        conv_full(g, x, crand(g, GIR_F32, SH(8, 1, 3, 3), &rr), crand(g, GIR_F32, SH(8), &rr), 8, 1, 1);
    gir_graph_add_output(g, y);
    ref r = REFERENCE(g, 12);
    lay_stats st = LAYOUT(g, block);
    STATS(st, 1, 0, 2);
    gir_node *c = nth(g, GIR_OP_conv_nchwc, 0);
    if (CHECK(c)) {
      /* weight [8/b, 1, 3, 3, 1, b] */
      int64_t b = CONV_NCHWC_OK(c, 8, 8, 3, 3, 1, 1, block);
      CHECK(is_relayout(c->in[0], 0, b) && c->in[0]->producer->in[0] == x);
      CHECK(is_relayout(g->outputs[0], b, 0));
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
  /* a MobileNet block, strided: 1x1 → relu → depthwise 3x3 s2 → relu → 1x1; no relayout inside */
  for (int32_t block = 4; block <= 16; block *= 2) {
    rng rr = {13};
    gir_graph *g = gir_graph_new("mobilenet");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 7, 7));
    gir_value *a = relu(g, conv(g, x, 16, 1, &rr));
    a = relu(g, conv_full(g, a, crand(g, GIR_F32, SH(16, 1, 3, 3), &rr), crand(g, GIR_F32, SH(16), &rr), 16, 1, 2));
    gir_graph_add_output(g, conv(g, a, 8, 1, &rr));
    ref r = REFERENCE(g, 13);
    lay_stats st = LAYOUT(g, block);
    STATS(st, 3, 2, 2);
    CHECK_INT(tu_count_op(g, GIR_OP_relayout), 2);
    gir_node *pw1 = nth(g, GIR_OP_conv_nchwc, 0), *dw = nth(g, GIR_OP_conv_nchwc, 1),
             *pw2 = nth(g, GIR_OP_conv_nchwc, 2);
    if (CHECK(pw1 && dw && pw2)) {
      CONV_NCHWC_OK(pw1, 16, 8, 1, 1, 0, 1, block);
      CONV_NCHWC_OK(dw, 16, 16, 3, 3, 1, 1, block);
      CONV_NCHWC_OK(pw2, 8, 16, 1, 1, 0, 1, block);
      CHECK(producer_op(dw->in[0]) == GIR_OP_unary && dw->in[0]->shape.rank == 5);
      CHECK(producer_op(pw2->in[0]) == GIR_OP_unary && pw2->in[0]->shape.rank == 5);
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* grouped convs: whole blocks per group on both sides; groups no block (or only a
 * quarter vector) divides take blocks of one channel at stride 1 over rows of half
 * a block or more (the conv template's vectors along the rows), else stay plain */
static void test_grouped(void) {
  for (int32_t block = 4; block <= 16; block *= 2) {
    rng rr = {14};
    gir_graph *g = gir_graph_new("grouped");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 32, 7, 7));
    /* 4 groups of 8 input and 4 output channels, then 2 groups whose 6 output channels no block divides */
    gir_value *y =
        relu(g, conv_full(g, x, crand(g, GIR_F32, SH(16, 8, 3, 3), &rr), crand(g, GIR_F32, SH(16), &rr), 4, 1, 1));
    y = conv_full(g, y, crand(g, GIR_F32, SH(12, 8, 1, 1), &rr), NULL, 2, 0, 1);
    gir_graph_add_output(g, y);
    ref r = REFERENCE(g, 14);
    lay_stats st = LAYOUT(g, block);
    int narrow = 4 * 4 <= block, ones = 2 * 7 >= block; /* the first conv's 4 per group; the rows of 7 */
    CHECK_INT(st.convs, 1 + ones);
    gir_node *c = nth(g, GIR_OP_conv_nchwc, 0);
    if (CHECK(c)) {
      int64_t ib = c->in[0]->shape.dims[4], ob = c->out[0]->shape.dims[4];
      int64_t wib = narrow && ones ? 1 : 8, wob = narrow && ones ? 1 : 4;
      CHECKF(ib == wib && ob == wob, "block %d: blocks %lld -> %lld", block, (long long)ib, (long long)ob);
      /* weight [16/ob, 8/ib, 3, 3, ib, ob]: one group's input blocks per output block */
      CHECK(shape_is(c->in[1], SH(16 / ob, 8 / ib, 3, 3, ib, ob)));
      CHECK_INT(gir_attr_int(c, "group", 1), 4);
    }
    gir_node *c2 = nth(g, GIR_OP_conv_nchwc, st.convs - 1);
    if (ones && CHECK(c2)) { /* the 2 x 6 one: blocks of one channel, weight [12, 8, 1, 1, 1, 1] */
      CHECKF(c2->in[0]->shape.dims[4] == 1 && c2->out[0]->shape.dims[4] == 1, "block %d: 2 x 6 in blocks of one", block);
      CHECK(shape_is(c2->in[1], SH(12, 8, 1, 1, 1, 1)));
      CHECK_INT(gir_attr_int(c2, "group", 1), 2);
    }
    CHECK_INT(tu_count_op(g, GIR_OP_conv), 2 - st.convs);
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
  /* a depthwise conv with a channel multiplier (8 groups of 1 in, 2 out): blocks of one */
  {
    rng rr = {15};
    gir_graph *g = gir_graph_new("dwmult");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 6, 9));
    gir_graph_add_output(g, relu(g, conv_full(g, x, crand(g, GIR_F32, SH(16, 1, 3, 3), &rr), NULL, 8, 1, 1)));
    ref r = REFERENCE(g, 15);
    lay_stats st = LAYOUT(g, 16);
    CHECK_INT(st.convs, 1);
    gir_node *c = nth(g, GIR_OP_conv_nchwc, 0);
    if (CHECK(c)) CHECK(shape_is(c->in[1], SH(16, 1, 3, 3, 1, 1)) && c->in[0]->shape.dims[4] == 1);
    /* the relu follows it into NCHW1c (reading its output, not the plain view), so
     * that it fuses into the conv's epilogue; the output is a view of the relu's */
    gir_node *u = nth(g, GIR_OP_unary, 0);
    if (CHECK(c && u)) {
      CHECK(u->in[0] == c->out[0] && u->out[0]->shape.rank == 5);
      CHECK(producer_op(g->outputs[0]) == GIR_OP_reshape && g->outputs[0]->producer->in[0] == u->out[0]);
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* transposed convs → one conv per stride phase, interleaved (deconv.c) */
static gir_value *conv_t(gir_graph *g, gir_value *x, gir_value *w, gir_value *b, const int64_t *st, const int64_t *pd,
                         const int64_t *dil, int64_t group) {
  gir_node *n = b ? TU_NODE(g, GIR_OP_conv_transpose, x, w, b) : TU_NODE(g, GIR_OP_conv_transpose, x, w);
  gir_attr_set_ints(g, n, "strides", st, 2);
  gir_attr_set_ints(g, n, "pads", pd, 4);
  gir_attr_set_ints(g, n, "dilations", dil, 2);
  gir_attr_set_int(g, n, "group", group);
  return tu_done(g, n);
}

/* The concats of g whose output has the given rank. */
static int count_concats(const gir_graph *g, int rank) {
  int cnt = 0;
  for (int k = 0; k < g->n_nodes; k++)
    cnt += g->nodes[k]->op == GIR_OP_concat && g->nodes[k]->out[0]->shape.rank == rank;
  return cnt;
}

/* The channel block of the first op node's output (0: plain, or no such node). */
static int64_t first_block(const gir_graph *g, gir_op op) {
  const gir_node *n = nth(g, op, 0);
  return n ? block_of(n->out[0]) : 0;
}

/* The relayouts of g out of a block into plain NCHW. */
static int count_unblocks(const gir_graph *g) {
  int cnt = 0;
  for (int k = 0; k < g->n_nodes; k++) cnt += g->nodes[k]->op == GIR_OP_relayout && is_unblock(g->nodes[k]->out[0]);
  return cnt;
}

static void test_conv_transpose(void) {
  /* blocked: the phase interleaves lay_nchwc moves into the blocked layout (6-D
   * concats, whole blocks per position), the rest staying 5-D in NCHW; each
   * blocked deconv then leaves one relayout back to NCHW, after its relu */
  static const struct {
    int64_t c, m, k, group, st[2], pd[4], dil, convs, blocked;
  } cases[] = {
      {16, 8, 4, 1, {2, 2}, {1, 1, 1, 1}, 1, 4, 3}, /* DCGAN-style: 4 phases of 2x2 taps */
      {8, 8, 3, 2, {2, 1}, {0, 1, 2, 0}, 1, 2, 1},  /* grouped, asymmetric: phases along H only */
      {8, 4, 1, 1, {3, 2}, {0, 0, 0, 0}, 1, 1, 0},  /* 1x1 kernel, stride 3x2: 5 of 6 phases are bias only */
      {8, 4, 3, 1, {1, 1}, {2, 2, 2, 2}, 1, 1, 0},  /* stride 1: one flipped conv, pads past the kernel */
      {8, 4, 3, 1, {2, 2}, {0, 0, 0, 0}, 2, 0, 0}, /* dilation: left alone */
      {8, 16, 2, 1, {2, 2}, {0, 0, 0, 0}, 1, 4, 3}, /* UNet up: 2x2 stride 2, blocks of 16 */
      {8, 12, 3, 1, {2, 2}, {1, 1, 1, 1}, 1, 4, 3}, /* 12 channels padded to a block of 16; output cropped */
  };
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    rng rr = {(uint64_t)(30 + i)};
    gir_graph *g = gir_graph_new("deconv");
    gir_value *x = tu_input(g, GIR_F32, SH(1, cases[i].c, 5, 6));
    gir_value *w = crand(g, GIR_F32, SH(cases[i].c, cases[i].m / cases[i].group, cases[i].k, cases[i].k), &rr);
    int64_t dil[2] = {cases[i].dil, cases[i].dil};
    gir_value *y = conv_t(g, x, w, i == 2 ? NULL : crand(g, GIR_F32, SH(cases[i].m), &rr), cases[i].st, cases[i].pd,
                          dil, cases[i].group);
    gir_graph_add_output(g, relu(g, y));
    ref r = REFERENCE(g, 30 + i);
    int32_t n = -1;
    gir_err e = {{0}};
    CHECKF(lay_split_conv_transpose(g, &n, &e) == 0, "case %d: %s", i, e.msg);
    CHECKF(n == (cases[i].convs > 0), "case %d: %d rewritten", i, n);
    CHECKF(tu_count_op(g, GIR_OP_conv) == cases[i].convs, "case %d: %d convs, want %lld", i,
           tu_count_op(g, GIR_OP_conv), (long long)cases[i].convs);
    CHECK_INT(tu_count_op(g, GIR_OP_conv_transpose), cases[i].convs ? 0 : 1);
    VERIFY(g);
    AGREE(g, &r);
    int plain = count_concats(g, 5);
    LAYOUT(g, 8); /* and blocked */
    CHECKF(tu_count_op(g, GIR_OP_conv_nchwc) == cases[i].convs, "case %d: %d blocked", i,
           tu_count_op(g, GIR_OP_conv_nchwc));
    CHECKF(count_concats(g, 6) == cases[i].blocked && count_concats(g, 5) == plain - cases[i].blocked,
           "case %d: %d blocked interleaves and %d plain, want %lld of %d blocked", i, count_concats(g, 6),
           count_concats(g, 5), (long long)cases[i].blocked, plain);
    if (cases[i].blocked)
      CHECKF(count_unblocks(g) == 1 && tu_count_op(g, GIR_OP_unary) == 1 && first_block(g, GIR_OP_unary) > 0,
             "case %d: %d relayouts to NCHW, want 1 after a blocked relu", i, count_unblocks(g));
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* A 1-D transposed conv (NCW) with channels enough for blocks: its one interleave
 * (three phases) and its crop run blocked, as NCHW[b]c with H = 1, behind one
 * relayout and squeeze back at the end. */
static void test_conv_transpose_1d(void) {
  rng rr = {37};
  gir_graph *g = gir_graph_new("deconv1d");
  gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 7));
  gir_value *w = crand(g, GIR_F32, SH(8, 16, 5), &rr), *b = crand(g, GIR_F32, SH(16), &rr);
  gir_node *n = TU_NODE(g, GIR_OP_conv_transpose, x, w, b);
  int64_t st[1] = {3}, pd[2] = {2, 1}, dl[1] = {1};
  gir_attr_set_ints(g, n, "strides", st, 1);
  gir_attr_set_ints(g, n, "pads", pd, 2);
  gir_attr_set_ints(g, n, "dilations", dl, 1);
  gir_value *y = tu_done(g, n); /* [1, 16, 20]: three phases of 7, interleaved to 21, cropped */
  CHECK(shape_is(y, SH(1, 16, 20)));
  gir_graph_add_output(g, relu(g, y));
  ref r = REFERENCE(g, 37);
  int32_t cnt = -1;
  gir_err e = {{0}};
  CHECKF(lay_split_conv_transpose(g, &cnt, &e) == 0 && cnt == 1, "%d rewritten: %s", cnt, e.msg);
  CHECK_INT(count_concats(g, 4), 1);
  LAYOUT(g, 8);
  CHECK_INT(tu_count_op(g, GIR_OP_conv_nchwc), 3);
  CHECKF(count_concats(g, 6) == 1 && count_concats(g, 4) == 0, "%d blocked interleaves, %d plain",
         count_concats(g, 6), count_concats(g, 4));
  CHECKF(count_unblocks(g) == 1 && first_block(g, GIR_OP_unary) > 0 && first_block(g, GIR_OP_slice) > 0,
         "%d relayouts to NCW, want 1 after a blocked crop and relu", count_unblocks(g));
  AGREE(g, &r);
  ref_free(&r);
  gir_graph_free(g);
}

/* --- more: image input, graph outputs, plain consumers --- */

static void test_image_input(void) {
  /* 3 input channels: one input block of all 3 */
  for (int32_t block = 4; block <= 8; block *= 2) {
    rng rr = {14};
    gir_graph *g = gir_graph_new("rgb");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 3, 9, 9));
    gir_value *y = conv_full(g, x, crand(g, GIR_F32, SH(8, 3, 3, 3), &rr), crand(g, GIR_F32, SH(8), &rr), 1, 1, 2);
    gir_graph_add_output(g, relu(g, y));
    ref r = REFERENCE(g, 14);
    lay_stats st = LAYOUT(g, block);
    STATS(st, 1, 1, 2);
    gir_node *c = nth(g, GIR_OP_conv_nchwc, 0);
    char b[160];
    if (CHECK(c)) {
      int64_t ob = CONV_NCHWC_OK(c, 8, 3, 3, 3, 0, 1, block);
      CHECKF(shape_is(c->in[0], SH(1, 1, 9, 9, 3)), "x %s", shape_of(c->in[0], b));
      CHECKF(ob && shape_is(c->out[0], SH(1, 8 / ob, 5, 5, ob)), "y %s", shape_of(c->out[0], b));
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

static void test_graph_outputs(void) {
  /* the first conv's output and the relu are graph outputs too: each keeps its
   * name behind its own relayout; the chain itself stays blocked */
  rng rr = {15};
  gir_graph *g = gir_graph_new("outs");
  gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 5, 5));
  gir_value *c1 = conv(g, x, 8, 3, &rr), *a = relu(g, c1);
  gir_graph_add_output(g, c1);
  gir_graph_add_output(g, a);
  gir_graph_add_output(g, conv(g, a, 8, 3, &rr));
  ref r = REFERENCE(g, 15);
  lay_stats st = LAYOUT(g, 4);
  STATS(st, 2, 1, 4);
  for (int i = 0; i < 3; i++) CHECKF(is_unblock(g->outputs[i]), "output %d", i);
  gir_node *k2 = nth(g, GIR_OP_conv_nchwc, 1);
  if (CHECK(k2)) CHECK(producer_op(k2->in[0]) == GIR_OP_unary);
  AGREE(g, &r);
  ref_free(&r);
  gir_graph_free(g);
}

/* Concats along H and W run blocked when every input is in the same block (the
 * pieces of a dilated conv, layout/dilated.c). */
static void test_spatial_concat(void) {
  rng rr = {19};
  gir_graph *g = gir_graph_new("hw_concat");
  gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 4, 5));
  gir_value *a = relu(g, conv(g, x, 16, 3, &rr)), *b = relu(g, conv(g, x, 16, 1, &rr));
  gir_value *w = concat(g, a, b, 3), *h = concat(g, w, w, 2);
  gir_graph_add_output(g, conv(g, h, 8, 1, &rr));
  ref r = REFERENCE(g, 19);
  LAYOUT(g, 16);
  int unblocks = 0; /* back to plain: the output only (x goes in once per conv: no CSE in the pass) */
  for (int k = 0; k < g->n_nodes; k++) unblocks += g->nodes[k]->op == GIR_OP_relayout && is_unblock(g->nodes[k]->out[0]);
  CHECK_INT(unblocks, 1);
  gir_node *c = nth(g, GIR_OP_concat, 1);
  if (CHECK(c)) CHECK(c->out[0]->shape.rank == 5 && gir_attr_int(c, "axis", 0) == 2);
  AGREE(g, &r);
  ref_free(&r);
  gir_graph_free(g);
}

static void test_plain_consumers(void) {
  /* ops that need plain NCHW read a relayout back; the values they compute agree */
  for (int c = 0; c < 5; c++) {
    rng rr = {16 + (uint64_t)c};
    gir_graph *g = gir_graph_new("plain");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 4, 4));
    gir_value *a = relu(g, conv(g, x, 8, 3, &rr)), *y;
    if (c == 0) y = reduce(g, a, GIR_REDUCE_SUM, INTS(1), 1);               /* over channels */
    else if (c == 1) y = reduce(g, a, GIR_REDUCE_MAX, INTS(2, 3), 0);       /* spatial, no keepdims */
    else if (c == 2) y = reduce(g, a, GIR_REDUCE_MEAN, INTS(-2, -1), 1);    /* negative axes */
    else if (c == 3) y = concat(g, a, a, 0);                /* concat on N (on H or W it runs blocked) */
    else y = with_ints(g, GIR_OP_transpose, a, "perm", INTS(0, 2, 3, 1));  /* to NHWC */
    gir_node *consumer = y->producer;
    gir_graph_add_output(g, y);
    ref r = REFERENCE(g, 16 + (uint64_t)c);
    lay_stats st = LAYOUT(g, 4);
    CHECK_INT(st.convs, 1);
    /* c == 2: negative axes are spatial too; propagating them is allowed, not required */
    if (c != 2) {
      CHECKF(st.propagated == 1, "case %d: propagated %d", c, st.propagated);
      CHECKF(consumer->in[0]->shape.rank == 4 && is_unblock(consumer->in[0]), "case %d", c);
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

static void test_mixed_blocks(void) {
  /* squeeze-excite: x' = conv(x); s = sigmoid(conv(relu(conv(mean(x'))))); x' * s, with
   * the [N,C,1,1] scale and the [N,C,H,W] map both blocked; 8 → 4 → 8 channels */
  for (int32_t block = 4; block <= 8; block *= 2) {
    rng rr = {20};
    gir_graph *g = gir_graph_new("se");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 6, 6));
    gir_value *f = conv(g, x, 8, 3, &rr);
    gir_value *s = reduce(g, f, GIR_REDUCE_MEAN, INTS(2, 3), 1);
    s = un(g, GIR_UNARY_SIGMOID, conv(g, relu(g, conv(g, s, 4, 1, &rr)), 8, 1, &rr));
    gir_graph_add_output(g, bin(g, GIR_BINARY_MUL, f, s));
    ref r = REFERENCE(g, 20);
    lay_stats st = LAYOUT(g, block);
    STATS(st, 3, 4, 2);
    gir_node *mul = nth(g, GIR_OP_binary, 0);
    if (CHECK(mul)) {
      CHECK(block_of(mul->in[0]) > 0 && block_of(mul->in[0]) == block_of(mul->in[1]));
      CHECK(!is_unblock(mul->in[0]) && !is_unblock(mul->in[1]));
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
  /* add(concat(conv 4, conv 4), conv 8): 8 channels in blocks of 4 on the left,
   * of 8 on the right at block 8; the right operand is re-blocked 8 → 4 */
  {
    rng rr = {21};
    gir_graph *g = gir_graph_new("reblock");
    gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 4, 4));
    gir_value *cat = concat(g, conv(g, x, 4, 1, &rr), conv(g, x, 4, 3, &rr), 1);
    gir_graph_add_output(g, relu(g, bin(g, GIR_BINARY_ADD, cat, conv(g, x, 8, 1, &rr))));
    ref r = REFERENCE(g, 21);
    lay_stats st = LAYOUT(g, 8);
    CHECK_INT(st.convs, 3);
    CHECK_INT(st.propagated, 3);
    gir_node *add = nth(g, GIR_OP_binary, 0);
    if (CHECK(add)) {
      int64_t bl = block_of(add->in[0]);
      printf("re-blocking add: left block %lld, right %s\n", (long long)bl,
             add->in[1]->producer ? gir_op_name(add->in[1]->producer->op) : "?");
      CHECK(producer_op(add->in[0]) == GIR_OP_concat && bl == 4);
      CHECK(is_relayout(add->in[1], 8, 4));
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

/* --- padded output channels, packed matmul weights --- */

/* 36 output channels, which no 8-float vector divides: the conv pads them to 48
 * (three 16-float blocks, two vectors each: 12 more is at most a third; zero
 * weights and bias), the blocked region spreads through relu, an add of a
 * per-channel constant and a global mean, and the relayout back crops to 36. A
 * concat on channels must not take the padded tensor. 12 channels pad to one
 * 16-float block; 6 (under half a vector) would stay plain. A conv reading the
 * padded 36 takes its blocks as they are and reduces over the real channels
 * only. */
static void test_padded_channels(void) {
  rng rr = {21};
  gir_graph *g = gir_graph_new("padded");
  gir_value *x = tu_input(g, GIR_F32, SH(1, 8, 5, 5));
  gir_value *a = bin(g, GIR_BINARY_ADD, relu(g, conv(g, x, 36, 3, &rr)), crand(g, GIR_F32, SH(36, 1, 1), &rr));
  gir_graph_add_output(g, reduce(g, a, GIR_REDUCE_MEAN, INTS(2, 3), 1));
  gir_graph_add_output(g, concat(g, a, x, 1));
  gir_graph_add_output(g, conv(g, x, 12, 1, &rr));
  gir_graph_add_output(g, conv(g, relu(g, a), 10, 1, &rr)); /* reads the padded blocks */
  ref r = REFERENCE(g, 21);
  LAYOUT(g, 8);
  fold(g);
  gir_node *c = nth(g, GIR_OP_conv_nchwc, 0), *c12 = nth(g, GIR_OP_conv_nchwc, 1), *c10 = nth(g, GIR_OP_conv_nchwc, 2);
  if (CHECK(c)) {
    CHECK_INT(c->in[1]->shape.dims[0], 3); /* 48 / 16 blocks */
    CHECK_INT(c->in[1]->shape.dims[5], 16);
    CHECK_INT(c->out[0]->shape.dims[1], 3);
    CHECK(c->n_in == 3 && c->in[2]->shape.dims[0] == 3 && c->in[2]->shape.dims[1] == 16);
    /* the padded weights and bias are zero */
    const float *w = c->in[1]->data, *b = c->in[2]->data;
    int zero = 1;
    for (int64_t i = 36; i < 48; i++) zero &= b[i] == 0.0f;
    int64_t per_block = gir_value_numel(c->in[1]) / 3;
    for (int64_t i = 2 * per_block; i < 3 * per_block; i++)
      if ((i % 16) >= 4) zero &= w[i] == 0.0f;
    CHECK(zero);
  }
  if (CHECK(c12)) CHECK_INT(c12->in[1]->shape.dims[5], 16); /* 12: one block of 16, 4 padding */
  if (CHECK(c10)) { /* input blocks of 16 over 36 channels: 3, the reduction stops at 36 */
    CHECK_INT(c10->in[0]->shape.dims[1], 3);
    CHECK_INT(c10->in[1]->shape.dims[1], 3);
    CHECK_INT(gir_attr_int(c10, "channels", 0), 36);
  }
  CHECK(is_relayout(g->outputs[0], 16, 0) && gir_attr_int(g->outputs[0]->producer, "channels", 0) == 36);
  CHECK(producer_op(g->outputs[0]->producer->in[0]) == GIR_OP_reduce);
  gir_node *cat = nth(g, GIR_OP_concat, 0);
  CHECK(cat && cat->out[0]->shape.rank == 4);
  AGREE(g, &r);
  ref_free(&r);
  gir_graph_free(g);
  /* a depthwise conv over 58 channels from plain NCHW (no block divides 58): padded
   * to whole blocks, every padded channel its own group, not left plain */
  g = gir_graph_new("dw58");
  x = tu_input(g, GIR_F32, SH(1, 58, 6, 6));
  gir_graph_add_output(g, relu(g, conv_full(g, x, crand(g, GIR_F32, SH(58, 1, 3, 3), &rr),
                                            crand(g, GIR_F32, SH(58), &rr), 58, 1, 1)));
  r = REFERENCE(g, 22);
  LAYOUT(g, 8);
  fold(g);
  CHECK_INT(tu_count_op(g, GIR_OP_conv), 0);
  gir_node *dw = nth(g, GIR_OP_conv_nchwc, 0);
  if (CHECK(dw)) {
    CHECK_INT(dw->out[0]->shape.dims[4], 8); /* one vector (block 8) */
    CHECK_INT(gir_attr_int(dw, "group", 0), 64);
  }
  AGREE(g, &r);
  ref_free(&r);
  gir_graph_free(g);
}

static gir_value *matmul(gir_graph *g, gir_value *a, gir_value *b) { return tu_done(g, TU_NODE(g, GIR_OP_matmul, a, b)); }

/* Constant [K, N] weights become panels [ceil(N/nr), K, nr] with nr the matmul
 * template's tile width; activations on both sides stay as they were. */
static void test_pack_matmul(void) {
  static const struct {
    int64_t m, k, n;
    int32_t vec;
    int64_t nr;
  } cases[] = {{5, 12, 24, 8, 8}, {5, 12, 20, 8, 4}, {1, 16, 64, 16, 64}, {3, 7, 32, 16, 32}, {2, 6, 6, 16, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rng rr = {31 + i};
    gir_graph *g = gir_graph_new("pack");
    gir_value *a = tu_input(g, GIR_F32, SH(2, cases[i].m, cases[i].k));
    gir_value *act = tu_input(g, GIR_F32, SH(2, cases[i].n, 3));
    gir_value *y = matmul(g, a, crand(g, GIR_F32, SH(cases[i].k, cases[i].n), &rr));
    gir_graph_add_output(g, matmul(g, y, act)); /* activation × activation: never packed */
    ref r = REFERENCE(g, 31 + i);
    int32_t packed = -1;
    gir_err e = {{0}};
    CHECKF(lay_pack_matmul(g, cases[i].vec, 32, &packed, &e) == 0, "lay_pack_matmul: %s", e.msg);
    verify_(g, __LINE__);
    CHECK_INT(packed, cases[i].nr ? 1 : 0);
    gir_node *mm = nth(g, GIR_OP_matmul, 0);
    if (cases[i].nr && CHECK(mm)) {
      int64_t nr = cases[i].nr, np = (cases[i].n + nr - 1) / nr;
      CHECK_INT(gir_attr_int(mm, "packed", 0), nr);
      CHECK_INT(gir_attr_int(mm, "n", 0), cases[i].n);
      CHECK(shape_is(mm->in[1], SH(np, cases[i].k, nr)));
    }
    CHECK_INT(gir_attr_int(nth(g, GIR_OP_matmul, 1), "packed", 0), 0);
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
  /* a batch of weight matrices (Winograd's per-point ones): panels of 4 vectors with
   * 32 registers and rows for a 6-row tile, else of 2 */
  static const struct {
    int64_t m;
    int32_t regs;
    int64_t nr;
  } bcases[] = {{8, 32, 64}, {8, 16, 32}, {4, 32, 32}};
  for (size_t i = 0; i < sizeof bcases / sizeof bcases[0]; i++) {
    rng rr = {51 + i};
    gir_graph *g = gir_graph_new("pack_batched");
    gir_value *a = tu_input(g, GIR_F32, SH(4, bcases[i].m, 16));
    gir_graph_add_output(g, matmul(g, a, crand(g, GIR_F32, SH(4, 16, 128), &rr)));
    ref r = REFERENCE(g, 51 + i);
    int32_t packed = -1;
    gir_err e = {{0}};
    CHECKF(lay_pack_matmul(g, 16, bcases[i].regs, &packed, &e) == 0, "lay_pack_matmul: %s", e.msg);
    verify_(g, __LINE__);
    CHECK_INT(packed, 1);
    gir_node *mm = nth(g, GIR_OP_matmul, 0);
    if (CHECK(mm)) {
      CHECK_INT(gir_attr_int(mm, "packed", 0), bcases[i].nr);
      CHECK_INT(gir_attr_int(mm, "pbatch", 0), 1);
      CHECK(shape_is(mm->in[1], SH(4, 128 / bcases[i].nr, 16, bcases[i].nr)));
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
  /* 200 columns, which only 8-float panels divide: padded to 256 in 64-wide panels
   * (a single row gets four vectors), the output sliced back to 200 */
  {
    rng rr = {41};
    gir_graph *g = gir_graph_new("pack_pad");
    gir_value *a = tu_input(g, GIR_F32, SH(1, 16));
    gir_graph_add_output(g, relu(g, matmul(g, a, crand(g, GIR_F32, SH(16, 200), &rr))));
    ref r = REFERENCE(g, 41);
    int32_t packed = -1;
    gir_err e = {{0}};
    CHECKF(lay_pack_matmul(g, 16, 32, &packed, &e) == 0, "lay_pack_matmul: %s", e.msg);
    verify_(g, __LINE__);
    CHECK_INT(packed, 1);
    gir_node *mm = nth(g, GIR_OP_matmul, 0), *sl = nth(g, GIR_OP_slice, 0);
    if (CHECK(mm && sl)) {
      CHECK_INT(gir_attr_int(mm, "packed", 0), 64);
      CHECK_INT(gir_attr_int(mm, "n", 0), 256);
      CHECK(shape_is(mm->in[1], SH(4, 16, 64)) && shape_is(mm->out[0], SH(1, 256)));
      CHECK(sl->in[0] == mm->out[0] && shape_is(sl->out[0], SH(1, 200)));
    }
    AGREE(g, &r);
    ref_free(&r);
    gir_graph_free(g);
  }
}

int main(void) {
  test_narrow_and_1d();
  test_spatial_concat();
  test_chain();
  test_residual();
  test_pool_mean();
  test_concat();
  test_broadcast_operands();
  test_left_alone();
  test_depthwise();
  test_grouped();
  test_conv_transpose();
  test_conv_transpose_1d();
  test_image_input();
  test_graph_outputs();
  test_plain_consumers();
  test_mixed_blocks();
  test_padded_channels();
  test_pack_matmul();
  return check_finish("test_layout");
}
