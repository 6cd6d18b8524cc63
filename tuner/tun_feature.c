/* tun_feature.c — the features the cost model reads, computed from the loop IR
 * (never from knob values, so that a model trained on one workload or template
 * ranks another): AutoTVM's loop-context and context-relation features, made
 * fixed-length.
 *
 * The kernel's scheduled body (lower_kernel.scheduled: loops still annotated
 * parallel / vectorized / unrolled, before the loop passes) is walked once. The
 * dominant statement — the store executed most, weighted by its arithmetic — is
 * described loop by loop, for its TUN_FEAT_LOOPS innermost loops (innermost
 * last, missing outer loops zero):
 *   extent, product of extents from the top down to it and from it to the bottom,
 *   nest level; the annotation one-hot (serial, parallel, vectorized, unrolled);
 *   for each of TUN_FEAT_BUFS buffers (the stored one, then the loads in the order
 *   they appear): the stride of its index along this loop, the bytes it touches
 *   inside this loop, the reuse ratio (accesses over distinct elements there) and
 *   whether the access is contiguous along the loop.
 * Then global features: executed float ops by kind, integer ops (a dot4 of L
 * lanes as its 4L multiply-adds, a multiply and an add each), loads and stores,
 * vector lanes and statement count of the optimized body (what unrolling and
 * vectorizing made), loops, nest depth, the parallel extent, local buffers,
 * prefetches, branches. Quantities are log2(1 + x): the model sees orders of
 * magnitude. The walk depends on structure only (never on variable ids or
 * addresses), so equal kernels give equal vectors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tun_internal.h"

#define MAX_DEPTH 48
#define MAX_LETS 64

typedef struct binding {
  const tir_var *var;
  const tir_expr *value; /* a let's value (NULL: a loop variable) */
  int64_t fixed;         /* a loop variable's value in the evaluation */
} binding;

typedef struct walk {
  const tir_stmt *loops[MAX_DEPTH];
  int32_t depth;
  binding env[MAX_LETS + MAX_DEPTH];
  int32_t n_env;
  /* the dominant store */
  double best_score;
  const tir_stmt *best;
  const tir_stmt *best_loops[MAX_DEPTH];
  int32_t best_depth;
  binding best_env[MAX_LETS + MAX_DEPTH];
  int32_t best_n_env;
  /* totals, executed */
  double flops_add, flops_mul, flops_div, flops_special, compares, int_ops, loads, stores;
  /* static counts */
  double n_loops, max_depth, n_allocs, local_bytes, n_prefetch, n_ifs, n_stores, parallel_extent;
} walk;

static int64_t eval_int(const walk *w, const binding *env, int32_t n_env, const tir_expr *e, int depth);

static int64_t lookup(const walk *w, const binding *env, int32_t n_env, const tir_var *v, int depth) {
  for (int i = n_env - 1; i >= 0; i--)
    if (env[i].var == v) return env[i].value ? eval_int(w, env, i, env[i].value, depth + 1) : env[i].fixed;
  return 0;
}

/* The integer value of e with every loop variable at its `fixed` value (loads
 * and anything non-integral read as 0): enough to see how an index moves. */
static int64_t eval_int(const walk *w, const binding *env, int32_t n_env, const tir_expr *e, int depth) {
  if (!e || depth > 64) return 0;
  switch (e->kind) {
  case TIR_INT: return e->u.i;
  case TIR_FLOAT: return (int64_t)e->u.f;
  case TIR_VAR: return lookup(w, env, n_env, e->u.var, depth);
  case TIR_CAST: return eval_int(w, env, n_env, e->u.cast.a, depth + 1);
  case TIR_SELECT:
  case TIR_IF_THEN_ELSE:
    return eval_int(w, env, n_env, e->u.sel.c, depth + 1) ? eval_int(w, env, n_env, e->u.sel.a, depth + 1)
                                                           : eval_int(w, env, n_env, e->u.sel.b, depth + 1);
  case TIR_BINARY: {
    int64_t a = eval_int(w, env, n_env, e->u.bin.a, depth + 1), b = eval_int(w, env, n_env, e->u.bin.b, depth + 1);
    switch (e->u.bin.op) {
    case TE_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case TE_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case TE_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case TE_DIV: return b ? a / b : 0;
    case TE_FLOORDIV: return b ? (a / b - ((a % b != 0) && ((a < 0) != (b < 0)))) : 0;
    case TE_MOD: return b ? a % b : 0;
    case TE_FLOORMOD: return b ? ((a % b) + b) % b : 0;
    case TE_MIN: return a < b ? a : b;
    case TE_MAX: return a > b ? a : b;
    case TE_LT: return a < b;
    case TE_LE: return a <= b;
    case TE_GT: return a > b;
    case TE_GE: return a >= b;
    case TE_EQ: return a == b;
    case TE_NE: return a != b;
    case TE_AND: return a && b;
    case TE_OR: return a || b;
    default: return 0;
    }
  }
  default: return 0;
  }
}

static double lg(double x) { return log2(1.0 + (x > 0 ? x : 0)); }

static int64_t extent_of(const walk *w, const tir_stmt *loop) {
  int64_t e = eval_int(w, w->env, w->n_env, loop->u.loop.extent, 0);
  return e > 0 ? e : 1;
}

/* Arithmetic of an expression: float ops by kind, integer ops, comparisons, loads. */
typedef struct ops {
  double add, mul, div, special, cmp, iops, loads;
} ops;

static void count_ops(const tir_expr *e, ops *o, int depth) {
  if (!e || depth > 200) return;
  int fl = gir_dtype_is_float(e->dtype);
  switch (e->kind) {
  case TIR_LOAD:
    o->loads++;
    count_ops(e->u.load.index, o, depth + 1);
    return;
  case TIR_UNARY:
    if (fl) o->special++;
    else o->iops++;
    count_ops(e->u.un.a, o, depth + 1);
    return;
  case TIR_BINARY: {
    te_binop op = e->u.bin.op;
    if (op >= TE_EQ) o->cmp++;
    else if (!fl) o->iops++;
    else if (op == TE_ADD || op == TE_SUB || op == TE_MIN || op == TE_MAX) o->add++;
    else if (op == TE_MUL) o->mul++;
    else if (op == TE_DIV || op == TE_MOD || op == TE_FLOORMOD || op == TE_FLOORDIV) o->div++;
    else o->special++;
    count_ops(e->u.bin.a, o, depth + 1);
    count_ops(e->u.bin.b, o, depth + 1);
    return;
  }
  case TIR_SELECT:
  case TIR_IF_THEN_ELSE:
    o->cmp++;
    count_ops(e->u.sel.c, o, depth + 1);
    count_ops(e->u.sel.a, o, depth + 1);
    count_ops(e->u.sel.b, o, depth + 1);
    return;
  case TIR_CAST:
  case TIR_BITCAST: count_ops(e->u.cast.a, o, depth + 1); return;
  case TIR_RAMP:
    count_ops(e->u.ramp.base, o, depth + 1);
    count_ops(e->u.ramp.stride, o, depth + 1);
    return;
  case TIR_BROADCAST: count_ops(e->u.bcast.value, o, depth + 1); return;
  case TIR_SHUFFLE: count_ops(e->u.shfl.value, o, depth + 1); return;
  case TIR_DOT4: /* 4L multiply-adds, as the scalar code it replaces would count them */
    o->iops += 8.0 * e->lanes;
    count_ops(e->u.dot4.acc, o, depth + 1);
    count_ops(e->u.dot4.a, o, depth + 1);
    count_ops(e->u.dot4.b, o, depth + 1);
    return;
  default: return;
  }
}

static void visit(walk *w, const tir_stmt *s, double execs) {
  if (!s) return;
  switch (s->kind) {
  case TIR_FOR: {
    int64_t ext = extent_of(w, s);
    w->n_loops++;
    if (s->u.loop.kind == TIR_PARALLEL && w->parallel_extent == 0) w->parallel_extent = (double)ext;
    if (w->depth >= MAX_DEPTH || w->n_env >= MAX_LETS + MAX_DEPTH) return;
    w->loops[w->depth++] = s;
    if (w->depth > w->max_depth) w->max_depth = w->depth;
    w->env[w->n_env++] = (binding){s->u.loop.var, NULL, 0};
    visit(w, s->u.loop.body, execs * (double)ext);
    w->n_env--;
    w->depth--;
    return;
  }
  case TIR_LET:
    if (w->n_env >= MAX_LETS + MAX_DEPTH) return;
    w->env[w->n_env++] = (binding){s->u.let.var, s->u.let.value, 0};
    visit(w, s->u.let.body, execs);
    w->n_env--;
    return;
  case TIR_IF:
    w->n_ifs++;
    visit(w, s->u.ifs.then_s, execs);
    visit(w, s->u.ifs.else_s, execs);
    return;
  case TIR_ALLOCATE:
    w->n_allocs++;
    w->local_bytes += (double)s->u.alloc.buf->size * gir_dtype_size(s->u.alloc.buf->dtype);
    visit(w, s->u.alloc.body, execs);
    return;
  case TIR_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) visit(w, s->u.seq.s[i], execs);
    return;
  case TIR_PREFETCH: w->n_prefetch += execs; return;
  case TIR_STORE: {
    ops o = {0};
    count_ops(s->u.store.value, &o, 0);
    count_ops(s->u.store.index, &o, 0);
    w->n_stores++;
    w->stores += execs;
    w->loads += execs * o.loads;
    w->flops_add += execs * o.add;
    w->flops_mul += execs * o.mul;
    w->flops_div += execs * o.div;
    w->flops_special += execs * o.special;
    w->compares += execs * o.cmp;
    w->int_ops += execs * o.iops;
    double score = execs * (1.0 + o.add + o.mul + o.div + o.special);
    if (score > w->best_score) {
      w->best_score = score;
      w->best = s;
      memcpy(w->best_loops, w->loops, sizeof w->loops[0] * (size_t)w->depth);
      w->best_depth = w->depth;
      memcpy(w->best_env, w->env, sizeof w->env[0] * (size_t)w->n_env);
      w->best_n_env = w->n_env;
    }
    return;
  }
  default: return;
  }
}

/* The buffers the dominant store touches: the stored one, then loads in order. */
typedef struct access {
  const tir_buffer *buf;
  const tir_expr *index;
} access;

static void collect_loads(const tir_expr *e, access *acc, int *n, int depth) {
  if (!e || depth > 200 || *n >= TUN_FEAT_BUFS) return;
  switch (e->kind) {
  case TIR_LOAD: {
    int seen = 0;
    for (int i = 0; i < *n; i++) seen |= acc[i].buf == e->u.load.buf;
    if (!seen) acc[(*n)++] = (access){e->u.load.buf, e->u.load.index};
    collect_loads(e->u.load.index, acc, n, depth + 1);
    return;
  }
  case TIR_UNARY: collect_loads(e->u.un.a, acc, n, depth + 1); return;
  case TIR_BINARY:
    collect_loads(e->u.bin.a, acc, n, depth + 1);
    collect_loads(e->u.bin.b, acc, n, depth + 1);
    return;
  case TIR_SELECT:
  case TIR_IF_THEN_ELSE:
    collect_loads(e->u.sel.c, acc, n, depth + 1);
    collect_loads(e->u.sel.a, acc, n, depth + 1);
    collect_loads(e->u.sel.b, acc, n, depth + 1);
    return;
  case TIR_CAST:
  case TIR_BITCAST: collect_loads(e->u.cast.a, acc, n, depth + 1); return;
  case TIR_DOT4:
    collect_loads(e->u.dot4.acc, acc, n, depth + 1);
    collect_loads(e->u.dot4.a, acc, n, depth + 1);
    collect_loads(e->u.dot4.b, acc, n, depth + 1);
    return;
  case TIR_SHUFFLE: collect_loads(e->u.shfl.value, acc, n, depth + 1); return;
  default: return;
  }
}

/* Statement count and widest vector of the optimized body. */
static void code_size(const tir_stmt *s, double *stmts, double *lanes, int depth) {
  if (!s || depth > 400) return;
  (*stmts)++;
  switch (s->kind) {
  case TIR_FOR: code_size(s->u.loop.body, stmts, lanes, depth + 1); return;
  case TIR_LET: code_size(s->u.let.body, stmts, lanes, depth + 1); return;
  case TIR_IF:
    code_size(s->u.ifs.then_s, stmts, lanes, depth + 1);
    code_size(s->u.ifs.else_s, stmts, lanes, depth + 1);
    return;
  case TIR_ALLOCATE: code_size(s->u.alloc.body, stmts, lanes, depth + 1); return;
  case TIR_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) code_size(s->u.seq.s[i], stmts, lanes, depth + 1);
    return;
  case TIR_STORE:
    if (s->u.store.value->lanes > *lanes) *lanes = s->u.store.value->lanes;
    return;
  default: return;
  }
}

void tun_features(const lower_kernel *k, float *out) {
  memset(out, 0, sizeof(float) * TUN_N_FEATURES);
  walk *w = calloc(1, sizeof *w);
  if (!w) return;
  visit(w, k->scheduled ? k->scheduled : k->fn->body, 1.0);
  if (w->best) {
    const tir_stmt *st = w->best;
    access acc[TUN_FEAT_BUFS];
    int na = 0;
    acc[na++] = (access){st->u.store.buf, st->u.store.index};
    collect_loads(st->u.store.value, acc, &na, 0);
    int32_t depth = w->best_depth;
    int64_t ext[MAX_DEPTH];
    for (int l = 0; l < depth; l++) {
      int64_t e = eval_int(w, w->best_env, w->best_n_env, w->best_loops[l]->u.loop.extent, 0);
      ext[l] = e > 0 ? e : 1;
    }
    /* strides: index at loop variable l = 1 minus index at all zero */
    double stride[MAX_DEPTH][TUN_FEAT_BUFS];
    binding env[MAX_LETS + MAX_DEPTH];
    memcpy(env, w->best_env, sizeof env[0] * (size_t)w->best_n_env);
    for (int b = 0; b < na; b++) {
      int64_t base = eval_int(w, env, w->best_n_env, acc[b].index, 0);
      for (int l = 0; l < depth; l++) {
        for (int i = 0; i < w->best_n_env; i++)
          if (env[i].var == w->best_loops[l]->u.loop.var && !env[i].value) env[i].fixed = 1;
        stride[l][b] = fabs((double)(eval_int(w, env, w->best_n_env, acc[b].index, 0) - base));
        for (int i = 0; i < w->best_n_env; i++)
          if (env[i].var == w->best_loops[l]->u.loop.var && !env[i].value) env[i].fixed = 0;
      }
    }
    int first = depth > TUN_FEAT_LOOPS ? depth - TUN_FEAT_LOOPS : 0;
    for (int l = first; l < depth; l++) {
      float *f = out + (TUN_FEAT_LOOPS - (depth - l)) * TUN_FEAT_PER_LOOP;
      double top = 1, bottom = 1;
      for (int j = 0; j <= l; j++) top *= (double)ext[j];
      for (int j = l; j < depth; j++) bottom *= (double)ext[j];
      f[0] = (float)lg((double)ext[l]);
      f[1] = (float)lg(top);
      f[2] = (float)lg(bottom);
      f[3] = (float)l / 16.0f;
      tir_for_kind kind = w->best_loops[l]->u.loop.kind;
      f[4 + (kind < 4 ? kind : 0)] = 1.0f;
      for (int b = 0; b < na; b++) {
        double foot = 1; /* distinct elements touched inside loop l (overlaps ignored) */
        for (int j = l; j < depth; j++)
          if (stride[j][b] != 0) foot *= (double)ext[j];
        float *fb = f + 8 + b * TUN_FEAT_PER_BUF;
        fb[0] = (float)lg(stride[l][b]);
        fb[1] = (float)lg(foot * gir_dtype_size(acc[b].buf->dtype));
        fb[2] = (float)lg(bottom / foot);
        fb[3] = stride[l][b] == 1 ? 1.0f : 0.0f;
      }
    }
  }
  float *g = out + TUN_FEAT_LOOPS * TUN_FEAT_PER_LOOP;
  double stmts = 0, lanes = 1;
  code_size(k->fn->body, &stmts, &lanes, 0);
  int i = 0;
  g[i++] = (float)lg(w->flops_add);
  g[i++] = (float)lg(w->flops_mul);
  g[i++] = (float)lg(w->flops_div);
  g[i++] = (float)lg(w->flops_special);
  g[i++] = (float)lg(w->compares);
  g[i++] = (float)lg(w->int_ops);
  g[i++] = (float)lg(w->loads);
  g[i++] = (float)lg(w->stores);
  g[i++] = (float)lg(w->flops_add + w->flops_mul + w->flops_div + w->flops_special);
  g[i++] = (float)lg(lanes);
  g[i++] = (float)lg(stmts);
  g[i++] = (float)lg(w->n_loops);
  g[i++] = (float)w->max_depth / 16.0f;
  g[i++] = (float)lg(w->parallel_extent);
  g[i++] = (float)lg(w->n_allocs);
  g[i++] = (float)lg(w->local_bytes);
  g[i++] = (float)lg(w->n_prefetch);
  g[i++] = (float)lg(w->n_ifs);
  g[i++] = (float)lg(w->n_stores);
  g[i++] = (float)w->best_depth / 16.0f;
  g[i++] = (float)lg(w->best_score);
  g[i++] = (float)lg(w->loads / (w->stores > 0 ? w->stores : 1));
  g[i++] = (float)lg((w->flops_add + w->flops_mul) / (w->loads > 0 ? w->loads : 1) * 16);
  g[i++] = (float)lg(stmts / (w->n_stores > 0 ? w->n_stores : 1));
  free(w);
}
