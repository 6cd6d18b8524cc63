/* sch_lower.c — lowering a schedule to loop IR (TVM's ScheduleOps + bound
 * inference + storage flattening, in one walk).
 *
 * Every non-inlined stage becomes a loop nest over its leaf iteration variables.
 * The values of its root axes are rebuilt from the leaves through the split/fuse
 * relations (split: parent = outer*factor + inner, guarded when the factor does
 * not divide; fuse: outer = fused / |inner|, inner = fused % |inner|). A stage
 * attached to a loop of a consumer is emitted inside that loop, over the region
 * the consumer reads there: bound inference takes each index the consumer loads
 * the producer with, treats the loops outside the attach point as fixed and the
 * loops inside it as ranging over their extents, and when an index is linear in
 * the loop variables gets the region [symbolic min + c0, symbolic min + c1];
 * otherwise (div/mod, data-dependent) it falls back to the whole axis. An attached
 * stage's buffer is LOCAL and holds exactly that region. A region that may reach
 * outside the producer's domain is computed under a domain guard.
 *
 * GPU schedules (tir.h's bound loops): a loop bound to a thread index that an
 * enclosing loop (of a consumer) already binds is not a loop of its own — its
 * variable is the enclosing one, guarded when its extent is smaller; this is how a
 * stage computed inside a consumer's thread loops spreads its work over the
 * block's threads (TVM's cooperative fetching). A SHARED stage is one per block:
 * its region is inferred with the enclosing thread loops ranging (every thread's
 * reads), and its computation sits between two barriers (the block's threads are
 * done reading the previous contents; the new ones are complete before use).
 *
 * A reduction whose outermost reduce loop is bound to threadIdx.x runs across the
 * block's threads (allreduce below: strided partials, a warp-shuffle butterfly,
 * the warps combined through shared memory).
 *
 * A stage whose body is a reduction gets an init nest (the identity, over the
 * spatial loops inside the first reduce loop) and an update nest; argmax/argmin
 * keep their running best value in a second buffer. Root intermediates become
 * workspace parameters after the outputs (the ABI's buffer order). */
#include <assert.h>
#include <math.h>
#include <string.h>
#include "schedule.h"
#include "tir_simplify.h"

typedef struct region {
  tir_expr *min[GIR_MAX_RANK]; /* per axis, an index expression valid at the attach point */
  int64_t extent[GIR_MAX_RANK];
  int may_escape;              /* the region may leave [0, shape) */
} region;

typedef struct stage_info {
  tir_buffer *buf, *aux;       /* aux: argmax/argmin running value */
  region reg;                  /* the stage's storage region */
  int emitted;
} stage_info;

typedef struct lower_ctx {
  sch_schedule *s;
  tir_builder *b;
  stage_info *info;            /* by stage id */
  tir_buffer **param_of;       /* placeholder buffers, by tensor id */
  int32_t n_tensor_ids;
  /* iteration state of the stage being emitted */
  tir_expr **iter_val;         /* by sch_iter id: value of the iteration variable */
  int32_t n_iters;
  gir_err *err;
  /* GPU: the thread-bound loops around the stage being emitted (outermost first) */
  tir_var *thr_var[32];
  int64_t thr_ext[32];
  tir_for_kind thr_kind[32];
  int32_t n_thr;
} lower_ctx;

/* ---- linear forms over tir vars, for bound inference ---- */

#define LIN_MAX 16
/* sum coef[i]·term[i] + c, where a term is a loop variable or an opaque
 * expression (a fused loop's div/mod…) the caller checks separately */
typedef struct lin {
  int ok;
  int n;
  const tir_expr *term[LIN_MAX];
  int64_t coef[LIN_MAX];
  int64_t c;
} lin;

static int tir_same(const tir_expr *a, const tir_expr *b);

static int same_term(const tir_expr *a, const tir_expr *b) {
  if (a->kind == TIR_VAR && b->kind == TIR_VAR) return a->u.var == b->u.var;
  return tir_same(a, b);
}

static void lin_add_term(lin *l, const tir_expr *t, int64_t k) {
  for (int i = 0; i < l->n; i++)
    if (same_term(l->term[i], t)) {
      l->coef[i] += k;
      return;
    }
  if (l->n == LIN_MAX) {
    l->ok = 0;
    return;
  }
  l->term[l->n] = t;
  l->coef[l->n++] = k;
}

static lin lin_of(const tir_expr *e);

/* x is y / d or y % d (op) with a constant d > 0: its operand and divisor. */
static int divmod_of(const tir_expr *x, te_binop op, const tir_expr **y, int64_t *d) {
  if (x->kind != TIR_BINARY || x->u.bin.op != op || x->u.bin.b->kind != TIR_INT || x->u.bin.b->u.i <= 0) return 0;
  *y = x->u.bin.a;
  *d = x->u.bin.b->u.i;
  return 1;
}

/* k·d·(y / d) + k·(y % d) → k·y (floor or truncating pairs alike: y = d·(y div d) +
 * (y mod d) for d > 0) — a flattened axis read back through a fused loop's div and
 * mod (sch_flatten) is then linear in the fused loop. 1 when a pair was folded. The
 * simplifier's linear forms fold the same pairs (tir/arith.c, fold_pair); bound
 * inference keeps its own form, over loop variables and opaque terms. */
static int lin_fold_divmod(lin *l) {
  static const te_binop pair[2][2] = {{TE_MOD, TE_DIV}, {TE_FLOORMOD, TE_FLOORDIV}};
  for (int i = 0; i < l->n; i++)
    for (int p = 0; p < 2; p++) {
      const tir_expr *y, *y2;
      int64_t d, d2, kd, k = l->coef[i];
      if (!k || !divmod_of(l->term[i], pair[p][0], &y, &d) || __builtin_mul_overflow(k, d, &kd)) continue;
      for (int j = 0; j < l->n; j++) {
        if (!divmod_of(l->term[j], pair[p][1], &y2, &d2) || d2 != d || l->coef[j] != kd || !tir_same(y, y2))
          continue;
        lin ly = lin_of(y);
        if (!ly.ok) continue;
        lin r = {.ok = 1, .c = l->c + k * ly.c};
        for (int m = 0; m < l->n; m++)
          if (m != i && m != j) lin_add_term(&r, l->term[m], l->coef[m]);
        for (int m = 0; m < ly.n; m++) lin_add_term(&r, ly.term[m], k * ly.coef[m]);
        *l = r;
        return 1;
      }
    }
  return 0;
}

static lin lin_of(const tir_expr *e) {
  lin r = {.ok = 1};
  if (e->lanes != 1 || e->dtype != GIR_I64) {
    r.ok = 0;
    return r;
  }
  switch (e->kind) {
  case TIR_INT: r.c = e->u.i; return r;
  case TIR_VAR: lin_add_term(&r, e, 1); return r;
  case TIR_BINARY: {
    if (e->u.bin.op != TE_ADD && e->u.bin.op != TE_SUB && e->u.bin.op != TE_MUL) break;
    lin a = lin_of(e->u.bin.a), b = lin_of(e->u.bin.b);
    if (!a.ok || !b.ok) break;
    if (e->u.bin.op == TE_ADD || e->u.bin.op == TE_SUB) {
      int64_t sg = e->u.bin.op == TE_ADD ? 1 : -1;
      r = a;
      for (int i = 0; i < b.n; i++) lin_add_term(&r, b.term[i], sg * b.coef[i]);
      r.c += sg * b.c;
      while (r.ok && lin_fold_divmod(&r)) {}
      return r;
    }
    if (a.n == 0 || b.n == 0) {
      lin *v = a.n ? &a : &b;
      int64_t k = a.n ? b.c : a.c;
      r = *v;
      for (int i = 0; i < r.n; i++) r.coef[i] *= k;
      r.c *= k;
      return r;
    }
    break;
  }
  default: break;
  }
  /* anything else is an opaque term */
  lin_add_term(&r, e, 1);
  return r;
}

/* ---- expressions ---- */

static tir_expr *lower_expr(lower_ctx *L, const te_expr *e, tir_expr *const *var_val, te_var *const *vars, int nv);

static tir_expr *var_value(lower_ctx *L, te_var *v, tir_expr *const *var_val, te_var *const *vars, int nv) {
  for (int i = 0; i < nv; i++)
    if (vars[i] == v) return var_val[i];
  (void)L;
  assert(!"unbound TE variable");
  return NULL;
}

/* Flat offset of a load of tensor t at (already lowered) indices. */
static tir_expr *flat_index(lower_ctx *L, te_tensor *t, tir_expr *const *idx) {
  tir_builder *b = L->b;
  sch_stage *st = t->kind == TE_COMPUTE ? sch_stage_of(L->s, t) : NULL;
  region *reg = st ? &L->info[st->id].reg : NULL;
  tir_expr *off = tir_i64(b, 0);
  for (int i = 0; i < t->rank; i++) {
    int64_t ext = reg ? reg->extent[i] : t->shape[i];
    tir_expr *ix = idx[i];
    if (reg && !(reg->min[i]->kind == TIR_INT && reg->min[i]->u.i == 0)) ix = tir_bin(b, TE_SUB, ix, reg->min[i]);
    off = tir_bin(b, TE_ADD, tir_bin(b, TE_MUL, off, tir_i64(b, ext)), ix);
  }
  return off;
}

static tir_buffer *buffer_of(lower_ctx *L, te_tensor *t) {
  if (t->kind == TE_PLACEHOLDER) return L->param_of[t->id];
  sch_stage *st = sch_stage_of(L->s, t);
  return st ? L->info[st->id].buf : NULL;
}

static tir_expr *lower_expr(lower_ctx *L, const te_expr *e, tir_expr *const *vv, te_var *const *vars, int nv) {
  tir_builder *b = L->b;
  switch (e->kind) {
  case TE_INT: return tir_int(b, e->dtype, e->u.i);
  case TE_FLOAT: return tir_float(b, e->dtype, e->u.f);
  case TE_VAR: return var_value(L, e->u.var, vv, vars, nv);
  case TE_LOAD: {
    tir_expr *idx[GIR_MAX_RANK];
    for (int i = 0; i < e->u.load.t->rank; i++) idx[i] = lower_expr(L, e->u.load.idx[i], vv, vars, nv);
    tir_buffer *buf = buffer_of(L, e->u.load.t);
    assert(buf);
    return tir_load(b, buf, flat_index(L, e->u.load.t, idx));
  }
  case TE_UNARY: return tir_un(b, e->u.un.op, lower_expr(L, e->u.un.a, vv, vars, nv));
  case TE_BINARY:
    return tir_bin(b, e->u.bin.op, lower_expr(L, e->u.bin.a, vv, vars, nv), lower_expr(L, e->u.bin.b, vv, vars, nv));
  case TE_SELECT: {
    tir_expr *c = lower_expr(L, e->u.sel.c, vv, vars, nv), *x = lower_expr(L, e->u.sel.a, vv, vars, nv),
             *y = lower_expr(L, e->u.sel.b, vv, vars, nv);
    return te_may_trap_beyond(e->u.sel.a, e->u.sel.c) || te_may_trap_beyond(e->u.sel.b, e->u.sel.c)
               ? tir_if_then_else(b, c, x, y)
               : tir_select(b, c, x, y);
  }
  case TE_CAST: return tir_cast(b, e->dtype, lower_expr(L, e->u.cast.a, vv, vars, nv));
  case TE_BITCAST: return tir_bitcast(b, e->dtype, lower_expr(L, e->u.cast.a, vv, vars, nv));
  default: assert(!"reduction below the top of a stage"); return NULL;
  }
}

/* ---- iteration values ---- */

/* Recomputes leaf extents for a stage whose root axes range over root_ext. */
static void leaf_extents(const sch_stage *st, const int64_t *root_ext, int64_t *ext_by_id, int32_t n_ids) {
  (void)n_ids;
  for (int i = 0; i < st->n_root; i++) ext_by_id[st->root_axes[i]->id] = root_ext[i];
  for (int i = 0; i < st->n_reduce; i++) ext_by_id[st->reduce_axes[i]->id] = st->reduce_axes[i]->extent;
  for (int r = 0; r < st->n_rels; r++) {
    const sch_rel *rel = &st->rels[r];
    if (rel->kind == SCH_SPLIT) {
      int64_t pe = ext_by_id[rel->parent->id];
      int64_t f = rel->factor < pe ? rel->factor : pe;
      ext_by_id[rel->inner->id] = f ? f : 1;
      ext_by_id[rel->outer->id] = f ? (pe + f - 1) / f : 0;
    } else
      ext_by_id[rel->fused->id] = ext_by_id[rel->outer->id] * ext_by_id[rel->inner->id];
  }
}

/* Given values of the leaves (L->iter_val), derives the values of every iter up
 * to the roots; sets the guards for non-dividing splits of spatial and of reduce
 * iterations (NULL if none). */
static void derive_roots(lower_ctx *L, const sch_stage *st, const int64_t *ext, tir_expr **sguard, tir_expr **rguard) {
  tir_builder *b = L->b;
  *sguard = *rguard = NULL;
  for (int r = st->n_rels - 1; r >= 0; r--) {
    const sch_rel *rel = &st->rels[r];
    if (rel->kind == SCH_SPLIT) {
      tir_expr *o = L->iter_val[rel->outer->id], *i = L->iter_val[rel->inner->id];
      if (!o || !i) continue;
      int64_t f = ext[rel->inner->id];
      tir_expr *p = tir_bin(b, TE_ADD, tir_bin(b, TE_MUL, o, tir_i64(b, f)), i);
      L->iter_val[rel->parent->id] = p;
      if (f && ext[rel->parent->id] % f) {
        tir_expr *g = tir_bin(b, TE_LT, p, tir_i64(b, ext[rel->parent->id]));
        tir_expr **guard = rel->parent->reduce ? rguard : sguard;
        *guard = *guard ? tir_bin(b, TE_AND, *guard, g) : g;
      }
    } else {
      tir_expr *fv = L->iter_val[rel->fused->id];
      if (!fv) continue;
      int64_t ie = ext[rel->inner->id];
      L->iter_val[rel->outer->id] = tir_bin(b, TE_DIV, fv, tir_i64(b, ie));
      L->iter_val[rel->inner->id] = tir_bin(b, TE_MOD, fv, tir_i64(b, ie));
    }
  }
}

/* ---- bound inference ---- */

typedef struct access_arg {
  te_tensor *target;
  const te_expr **loads;
  int n, cap;
  gir_arena *a;
} access_arg;

static void collect_loads(const te_expr *e, access_arg *a) {
  switch (e->kind) {
  case TE_LOAD:
    if (e->u.load.t == a->target) {
      if (a->n == a->cap) {
        int nc = a->cap ? a->cap * 2 : 8;
        a->loads = gir_arena_grow(a->a, a->loads, (size_t)a->n, (size_t)nc, sizeof *a->loads);
        a->cap = nc;
      }
      a->loads[a->n++] = e;
    }
    for (int i = 0; i < e->u.load.t->rank; i++) collect_loads(e->u.load.idx[i], a);
    break;
  case TE_UNARY: collect_loads(e->u.un.a, a); break;
  case TE_BINARY: collect_loads(e->u.bin.a, a); collect_loads(e->u.bin.b, a); break;
  case TE_SELECT: collect_loads(e->u.sel.c, a); collect_loads(e->u.sel.a, a); collect_loads(e->u.sel.b, a); break;
  case TE_CAST: case TE_BITCAST: collect_loads(e->u.cast.a, a); break;
  case TE_REDUCE:
    collect_loads(e->u.red.src, a);
    if (e->u.red.cond) collect_loads(e->u.red.cond, a);
    break;
  default: break;
  }
}

/* 1 if e mentions any of the variables vs. */
static int uses_any(const tir_expr *e, tir_var *const *vs, int n) {
  switch (e->kind) {
  case TIR_VAR:
    for (int i = 0; i < n; i++)
      if (vs[i] == e->u.var) return 1;
    return 0;
  case TIR_LOAD: return uses_any(e->u.load.index, vs, n);
  case TIR_UNARY: return uses_any(e->u.un.a, vs, n);
  case TIR_BINARY: return uses_any(e->u.bin.a, vs, n) || uses_any(e->u.bin.b, vs, n);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    return uses_any(e->u.sel.c, vs, n) || uses_any(e->u.sel.a, vs, n) || uses_any(e->u.sel.b, vs, n);
  case TIR_CAST: case TIR_BITCAST: return uses_any(e->u.cast.a, vs, n);
  case TIR_RAMP: return uses_any(e->u.ramp.base, vs, n) || uses_any(e->u.ramp.stride, vs, n);
  case TIR_BROADCAST: return uses_any(e->u.bcast.value, vs, n);
  case TIR_DOT4: return uses_any(e->u.dot4.acc, vs, n) || uses_any(e->u.dot4.a, vs, n) || uses_any(e->u.dot4.b, vs, n);
  default: return 0;
  }
}

/* Structural equality of two index expressions. */
static int tir_same(const tir_expr *a, const tir_expr *b) {
  if (a == b) return 1;
  if (a->kind != b->kind || a->dtype != b->dtype || a->lanes != b->lanes) return 0;
  switch (a->kind) {
  case TIR_INT: return a->u.i == b->u.i;
  case TIR_FLOAT: return a->u.f == b->u.f;
  case TIR_VAR: return a->u.var == b->u.var;
  case TIR_LOAD: return a->u.load.buf == b->u.load.buf && tir_same(a->u.load.index, b->u.load.index);
  case TIR_UNARY: return a->u.un.op == b->u.un.op && tir_same(a->u.un.a, b->u.un.a);
  case TIR_BINARY: return a->u.bin.op == b->u.bin.op && tir_same(a->u.bin.a, b->u.bin.a) && tir_same(a->u.bin.b, b->u.bin.b);
  case TIR_SELECT: case TIR_IF_THEN_ELSE:
    return tir_same(a->u.sel.c, b->u.sel.c) && tir_same(a->u.sel.a, b->u.sel.a) && tir_same(a->u.sel.b, b->u.sel.b);
  case TIR_CAST: case TIR_BITCAST: return tir_same(a->u.cast.a, b->u.cast.a);
  case TIR_DOT4:
    return tir_same(a->u.dot4.acc, b->u.dot4.acc) && tir_same(a->u.dot4.a, b->u.dot4.a) &&
           tir_same(a->u.dot4.b, b->u.dot4.b);
  default: return 0;
  }
}

/* sum coef[i]·term[i] + c as an expression. */
static tir_expr *lin_expr(lower_ctx *L, const lin *l) {
  tir_builder *b = L->b;
  tir_expr *e = tir_i64(b, l->c);
  for (int i = 0; i < l->n; i++)
    if (l->coef[i])
      e = tir_bin(b, TE_ADD, e, tir_bin(b, TE_MUL, (tir_expr *)l->term[i], tir_i64(b, l->coef[i])));
  return e;
}

/* A division by a constant d whose numerator is S + R — S made of loops outside the
 * attach point, all its coefficients and constant multiples of some g dividing d
 * (and not negative), R of the inner loops with positive coefficients spanning
 * less than g — is S / d: every inner iteration lands in the same quotient. A
 * grouped conv's group (m / channels-per-group) over a block whose channel tile
 * lies within one group is then a single point, not every group, and a division by 1
 * its numerator: a group of one block is that block (tir_simplify.c's
 * div_factor is the same rule over known ranges; here the outer part stays symbolic,
 * the attach point's region a function of it). Returns ix with
 * such divisions among its linear terms rewritten (ix itself when there are none). */
static tir_expr *outer_divs(lower_ctx *L, tir_expr *ix, tir_var *const *iv, const int64_t *iext, int ni) {
  lin l = lin_of(ix);
  int changed = 0;
  for (int i = 0; l.ok && i < l.n; i++) {
    const tir_expr *t = l.term[i];
    if (t->kind != TIR_BINARY || t->u.bin.op != TE_DIV || t->u.bin.b->kind != TIR_INT || t->u.bin.b->u.i <= 0 ||
        !uses_any(t, iv, ni))
      continue;
    int64_t d = t->u.bin.b->u.i, span = 0;
    if (d == 1) { /* x / 1 is x (a grouped conv of one output block per group: the group is the block) */
      l.term[i] = t->u.bin.a;
      changed = 1;
      continue;
    }
    lin a = lin_of(t->u.bin.a), sym = {.ok = 1, .c = a.c};
    int ok = a.ok && a.c >= 0;
    int64_t g = arith_gcd(d, a.c);
    for (int j = 0; ok && j < a.n; j++) {
      int inner = -1;
      for (int k = 0; k < ni && a.term[j]->kind == TIR_VAR; k++)
        if (iv[k] == a.term[j]->u.var) inner = k;
      if (inner >= 0) {
        ok = a.coef[j] > 0;
        span += a.coef[j] * (iext[inner] - 1);
      } else if (uses_any(a.term[j], iv, ni) || a.coef[j] < 0) {
        ok = 0;
      } else {
        g = arith_gcd(g, a.coef[j]);
        lin_add_term(&sym, a.term[j], a.coef[j]);
      }
    }
    if (!ok || span >= g) continue;
    l.term[i] = tir_bin(L->b, TE_DIV, lin_expr(L, &sym), tir_i64(L->b, d));
    changed = 1;
  }
  return changed ? lin_expr(L, &l) : ix;
}

/* Bound inference state: per axis of the producer, the union so far of the
 * index ranges read (a symbolic base plus [lo, hi]), or a single non-linear
 * point, or the whole axis. */
typedef struct region_acc {
  int have[GIR_MAX_RANK], full[GIR_MAX_RANK];
  lin base[GIR_MAX_RANK];
  int64_t lo[GIR_MAX_RANK], hi[GIR_MAX_RANK];
  tir_expr *point[GIR_MAX_RANK];
} region_acc;

/* Adds to ra the indices of t read by `body`, whose TE variables vars[i] have the
 * values vv[i] (tir expressions of loop variables); inner_vars range over
 * [0, inner_ext), the other variables are fixed at the attach point. */
static void add_reads(lower_ctx *L, te_tensor *t, const te_expr *body, tir_expr *const *vv, te_var *const *vars,
                      int nv, tir_var *const *inner_vars, const int64_t *inner_ext, int n_inner, region_acc *ra) {
  access_arg acc = {.target = t, .a = L->s->arena};
  collect_loads(body, &acc);
  int *have = ra->have, *full = ra->full;
  lin *base = ra->base;
  int64_t *lo = ra->lo, *hi = ra->hi;
  tir_expr **point = ra->point;
  for (int k = 0; k < acc.n; k++) {
    const te_expr *ld = acc.loads[k];
    for (int d = 0; d < t->rank; d++) {
      if (full[d]) continue;
      tir_expr *ix = lower_expr(L, ld->u.load.idx[d], vv, vars, nv);
      for (int j = 0; j < n_inner; j++) /* a loop of one iteration is 0 (a div/mod of it stays a point) */
        if (inner_ext[j] == 1 && uses_any(ix, &inner_vars[j], 1))
          ix = tir_substitute_expr(L->b, ix, inner_vars[j], tir_i64(L->b, 0));
      ix = outer_divs(L, ix, inner_vars, inner_ext, n_inner);
      lin l = lin_of(ix);
      if (!l.ok) {
        /* not linear, but made of loops outside the attach point only (a fused
         * loop's div/mod): a single point, the expression itself */
        if (!uses_any(ix, inner_vars, n_inner) && (!have[d] || (point[d] && tir_same(point[d], ix)))) {
          point[d] = ix;
          have[d] = 1;
          lo[d] = hi[d] = 0;
          base[d] = (lin){.ok = 1};
          continue;
        }
        full[d] = 1;
        continue;
      }
      if (point[d]) {
        full[d] = 1;
        continue;
      }
      /* split into fixed part (symbolic) and ranged part (inner loops) */
      lin sym = {.ok = 1, .c = 0};
      int64_t mn = l.c, mx = l.c;
      for (int i = 0; i < l.n; i++) {
        int inner = -1;
        if (l.term[i]->kind == TIR_VAR) {
          for (int j = 0; j < n_inner; j++)
            if (inner_vars[j] == l.term[i]->u.var) inner = j;
        } else if (uses_any(l.term[i], inner_vars, n_inner)) {
          sym.ok = 0; /* an opaque term that varies inside the attach point */
          break;
        }
        if (inner < 0) {
          lin_add_term(&sym, l.term[i], l.coef[i]);
          continue;
        }
        int64_t span = l.coef[i] * (inner_ext[inner] - 1);
        if (span > 0) mx += span;
        else mn += span;
      }
      if (!sym.ok) {
        full[d] = 1;
        continue;
      }
      if (!have[d]) {
        base[d] = sym;
        lo[d] = mn;
        hi[d] = mx;
        have[d] = 1;
        continue;
      }
      /* union: the symbolic parts must agree */
      int same = base[d].n == sym.n;
      for (int i = 0; same && i < sym.n; i++) {
        int found = 0;
        for (int j = 0; j < base[d].n; j++)
          if (same_term(base[d].term[j], sym.term[i]) && base[d].coef[j] == sym.coef[i]) found = 1;
        same = found;
      }
      if (!same) {
        full[d] = 1;
        continue;
      }
      if (mn < lo[d]) lo[d] = mn;
      if (mx > hi[d]) hi[d] = mx;
    }
  }
}

/* Region of producer p read inside c's loop `at`, by c and by the stages computed
 * at the same loop after p (siblings, whose regions are already known). Loops of
 * c outside `at` are fixed (their tir vars); the loops inside range over
 * [0, ext). var_val maps c's TE root/reduce variables to tir expressions of the
 * leaf variables. A sibling's variables range over its region: its root axis i
 * is min_i + j with j in [0, extent_i), its reduce axes over their extents. */
static void infer_region(lower_ctx *L, sch_stage *p, sch_stage *c, tir_expr *const *vv, te_var *const *vars, int nv,
                         tir_var *const *inner_vars, const int64_t *inner_ext, int n_inner, region *out) {
  tir_builder *b = L->b;
  te_tensor *t = p->t;
  region_acc ra;
  memset(&ra, 0, sizeof ra);
  int *have = ra.have, *full = ra.full;
  lin *base = ra.base;
  int64_t *lo = ra.lo, *hi = ra.hi;
  tir_expr **point = ra.point;
  add_reads(L, t, c->body, vv, vars, nv, inner_vars, inner_ext, n_inner, &ra);
  for (int i = p->id + 1; i < L->s->n_stages; i++) {
    sch_stage *r = L->s->stages[i];
    if (r->attach != SCH_AT || r->at_stage != c || !sch_loop_within(c, r->at_iter, p->at_iter) || !sch_reads(r, p)) continue;
    const region *rr = &L->info[r->id].reg;
    te_var *rv[2 * GIR_MAX_RANK + 8];
    tir_expr *rval[2 * GIR_MAX_RANK + 8];
    tir_var *iv[64 + 2 * GIR_MAX_RANK + 8];
    int64_t ie[64 + 2 * GIR_MAX_RANK + 8];
    int n = 0, ni = 0;
    for (int k = 0; k < n_inner; k++) {
      iv[ni] = inner_vars[k];
      ie[ni++] = inner_ext[k];
    }
    for (int k = 0; k < r->n_root; k++) {
      tir_var *j = tir_var_new(b, "j", GIR_I64);
      iv[ni] = j;
      ie[ni++] = rr->extent[k];
      rv[n] = r->root_axes[k]->root;
      rval[n++] = tir_bin(b, TE_ADD, rr->min[k], tir_var_ref(b, j));
    }
    for (int k = 0; k < r->n_reduce; k++) {
      tir_var *j = tir_var_new(b, "j", GIR_I64);
      iv[ni] = j;
      ie[ni++] = r->reduce_axes[k]->extent;
      rv[n] = r->reduce_axes[k]->root;
      rval[n++] = tir_var_ref(b, j);
    }
    add_reads(L, t, r->body, rval, rv, n, iv, ie, ni, &ra);
  }
  out->may_escape = 0;
  for (int d = 0; d < t->rank; d++) {
    if (full[d] || !have[d] || hi[d] - lo[d] + 1 > t->shape[d]) {
      out->min[d] = tir_i64(b, 0);
      out->extent[d] = t->shape[d];
      continue;
    }
    if (point[d]) {
      out->min[d] = point[d];
      out->extent[d] = 1;
      continue;
    }
    tir_expr *m = tir_i64(b, lo[d]);
    for (int i = 0; i < base[d].n; i++)
      m = tir_bin(b, TE_ADD, m, tir_bin(b, TE_MUL, (tir_expr *)base[d].term[i], tir_i64(b, base[d].coef[i])));
    out->min[d] = m;
    out->extent[d] = hi[d] - lo[d] + 1;
    if (base[d].n || lo[d] < 0 || hi[d] >= t->shape[d]) out->may_escape = 1;
  }
}

/* ---- statements ---- */

static tir_stmt *emit_stage(lower_ctx *L, sch_stage *st);

/* The local buffers of the stages computed at loop `it` of st are allocated in
 * that loop's body: each iteration (each thread, for a parallel loop) has its own. */
static tir_stmt *alloc_attached(lower_ctx *L, sch_stage *st, sch_iter *it, tir_stmt *s) {
  for (int i = 0; i < L->s->n_stages; i++) {
    sch_stage *p = L->s->stages[i];
    if (p->attach == SCH_AT && p->at_stage == st && p->at_iter == it) {
      s = tir_allocate(L->b, L->info[p->id].buf, s);
      if (L->info[p->id].aux) s = tir_allocate(L->b, L->info[p->id].aux, s);
    }
  }
  return s;
}

static tir_expr *reduce_identity(lower_ctx *L, te_combiner comb, gir_dtype t) {
  tir_builder *b = L->b;
  int fl = gir_dtype_is_float(t);
  switch (comb) {
  case TE_SUM: return tir_const(b, t, 0);
  case TE_PROD: return tir_const(b, t, 1);
  case TE_RMAX: case TE_ARGMAX:
    if (fl) return tir_float(b, t, -INFINITY);
    switch (t) {
    case GIR_I8: return tir_int(b, t, INT8_MIN);
    case GIR_I16: return tir_int(b, t, INT16_MIN);
    case GIR_I32: return tir_int(b, t, INT32_MIN);
    case GIR_I64: return tir_int(b, t, INT64_MIN);
    default: return tir_int(b, t, 0);
    }
  default:
    if (fl) return tir_float(b, t, INFINITY);
    switch (t) {
    case GIR_I8: return tir_int(b, t, INT8_MAX);
    case GIR_I16: return tir_int(b, t, INT16_MAX);
    case GIR_I32: return tir_int(b, t, INT32_MAX);
    case GIR_I64: return tir_int(b, t, INT64_MAX);
    case GIR_U8: return tir_int(b, t, UINT8_MAX);
    case GIR_U16: return tir_int(b, t, UINT16_MAX);
    case GIR_U32: return tir_int(b, t, UINT32_MAX);
    case GIR_U64: return tir_int(b, t, -1);
    case GIR_BOOL: return tir_int(b, t, 1);
    default: return tir_int(b, t, INT64_MAX);
    }
  }
}

static tir_expr *combine(lower_ctx *L, te_combiner comb, tir_expr *acc, tir_expr *v) {
  tir_builder *b = L->b;
  switch (comb) {
  case TE_SUM: return tir_bin(b, TE_ADD, acc, v);
  case TE_PROD: return tir_bin(b, TE_MUL, acc, v);
  case TE_RMAX: return tir_bin(b, TE_MAX, acc, v);
  default: return tir_bin(b, TE_MIN, acc, v);
  }
}

/* The loop-nest builder: wraps `inner` in loops for leaves [from, to) of st,
 * inserting attached stages at their loops. */
typedef struct nest {
  tir_var *var[64];
} nest;

/* The stages attached at c's loop it, in *out (NULL if none); -1 on error. */
static int attached_at(lower_ctx *L, sch_stage *c, sch_iter *it, tir_var *const *lv, const int64_t *ext,
                       tir_stmt **out) {
  tir_stmt *acc = NULL;
  int32_t saved = L->n_thr;
  int pos = 0;
  while (pos < c->n_leaf && c->leaf[pos] != it) pos++;
  for (int k = 0; k <= pos && k < c->n_leaf; k++) { /* c's thread loops around the attached stages */
    tir_for_kind kind = c->leaf[k]->kind;
    int reused = 0;
    for (int j = 0; j < saved; j++) reused |= L->thr_kind[j] == kind;
    if (kind >= TIR_THREAD_X && kind <= TIR_THREAD_Z && !reused && L->n_thr < 32) {
      L->thr_var[L->n_thr] = lv[k];
      L->thr_ext[L->n_thr] = ext[c->leaf[k]->id];
      L->thr_kind[L->n_thr++] = kind;
    }
  }
  for (int i = 0; i < L->s->n_stages; i++) {
    sch_stage *p = L->s->stages[i];
    if (p->attach == SCH_AT && p->at_stage == c && p->at_iter == it && !L->info[p->id].emitted) {
      tir_stmt *s = emit_stage(L, p);
      if (!s) {
        L->n_thr = saved;
        return -1;
      }
      if (p->scope == TIR_SHARED) { /* the block's threads in step around its contents */
        tir_stmt *xs[3] = {tir_barrier(L->b), s, tir_barrier(L->b)};
        s = tir_seq(L->b, xs, 3);
      }
      acc = acc ? tir_seq2(L->b, acc, s) : s;
    }
  }
  L->n_thr = saved;
  *out = acc;
  return 0;
}

/* A loop of leaf k of st over [0, ext): a new loop, or, for a thread index an
 * enclosing loop already binds, that loop's variable (guarded when ext is smaller). */
static tir_stmt *leaf_loop(lower_ctx *L, const sch_stage *st, sch_iter *it, tir_var *v, int64_t ext, tir_for_kind kind,
                           tir_stmt *body) {
  tir_builder *b = L->b;
  if (kind >= TIR_THREAD_X && kind <= TIR_THREAD_Z)
    for (int j = 0; j < L->n_thr; j++) {
      if (L->thr_kind[j] != kind) continue;
      if (ext > L->thr_ext[j]) {
        gir_errf(L->err, "stage %s: loop %s is bound to a thread index of extent %lld inside one of %lld", st->t->name,
                 it->name, (long long)ext, (long long)L->thr_ext[j]);
        return NULL;
      }
      tir_expr *t = tir_var_ref(b, L->thr_var[j]);
      if (ext < L->thr_ext[j]) body = tir_if(b, tir_bin(b, TE_LT, t, tir_i64(b, ext)), body, NULL);
      return tir_let(b, v, t, body);
    }
  return tir_for(b, v, tir_i64(b, 0), tir_i64(b, ext), kind, body);
}

/* Lowered value of st's body (no reduction) or the reduction's src/cond. */
typedef struct stage_vals {
  te_var *vars[2 * GIR_MAX_RANK + 8];
  tir_expr *vals[2 * GIR_MAX_RANK + 8];
  int n;
} stage_vals;

static void bind_roots(lower_ctx *L, const sch_stage *st, const region *reg, stage_vals *sv) {
  tir_builder *b = L->b;
  sv->n = 0;
  for (int i = 0; i < st->n_root; i++) {
    tir_expr *v = L->iter_val[st->root_axes[i]->id];
    if (!v) v = tir_i64(b, 0);
    if (reg && !(reg->min[i]->kind == TIR_INT && reg->min[i]->u.i == 0)) v = tir_bin(b, TE_ADD, reg->min[i], v);
    sv->vars[sv->n] = st->root_axes[i]->root;
    sv->vals[sv->n++] = v;
  }
  for (int i = 0; i < st->n_reduce; i++) {
    tir_expr *v = L->iter_val[st->reduce_axes[i]->id];
    sv->vars[sv->n] = st->reduce_axes[i]->root;
    sv->vals[sv->n++] = v ? v : tir_i64(b, 0);
  }
}

/* The prefetches st asks for at the top of leaf k's loop body (sch_prefetch),
 * prepended to body: indices are lowered with the leaves inside k at 0 and
 * clamped into [0, size) of the tensor. Rewrites L->iter_val (the caller is past using it). */
static int with_prefetches(lower_ctx *L, const sch_stage *st, int k, tir_var *const *lv, const int64_t *ext,
                           tir_stmt **body) {
  tir_builder *b = L->b;
  int any = 0;
  for (int i = 0; i < st->n_prefetch; i++) any |= st->prefetch[i].at == st->leaf[k];
  if (!any) return 0;
  for (int j = 0; j < L->n_iters; j++) L->iter_val[j] = NULL;
  for (int j = 0; j < st->n_leaf; j++) L->iter_val[st->leaf[j]->id] = j <= k ? tir_var_ref(b, lv[j]) : tir_i64(b, 0);
  tir_expr *sguard, *rguard;
  derive_roots(L, st, ext, &sguard, &rguard);
  stage_vals sv;
  bind_roots(L, st, &L->info[st->id].reg, &sv);
  tir_stmt *acc = NULL;
  for (int i = 0; i < st->n_prefetch; i++) {
    const sch_prefetch_rec *r = &st->prefetch[i];
    if (r->at != st->leaf[k]) continue;
    tir_buffer *buf = L->param_of[r->t->id];
    if (!buf) return gir_errf(L->err, "prefetch: %s is not a parameter of the kernel", r->t->name);
    tir_expr *ix = lower_expr(L, r->index, sv.vals, sv.vars, sv.n), *last = tir_i64(b, buf->size - 1);
    for (int32_t c = 0; c < r->count; c++) {
      tir_expr *e = c ? tir_bin(b, TE_ADD, ix, tir_i64(b, c * r->stride)) : ix;
      e = tir_bin(b, TE_MAX, tir_bin(b, TE_MIN, e, last), tir_i64(b, 0));
      acc = tir_seq2(b, acc, tir_prefetch(b, buf, e));
    }
  }
  *body = tir_seq2(b, acc, *body);
  return 0;
}

/* ---- cross-thread reductions ---- */

/* A reduction whose outermost reduce leaf (first) is bound to threadIdx.x (T
 * threads, a multiple of the warp's 32): TVM's cross-thread allreduce. Each thread
 * folds its strided share of the reduce loops into a register (acc), the warp
 * combines its lanes with a butterfly of shuffles (every lane ends with the warp's
 * result, bit for bit the same: each step combines the same two values), and with
 * several warps each warp's lane 0 puts its result in shared memory between two
 * barriers, where every thread combines them in warp order. Then the result is
 * stored: by every thread into a LOCAL buffer (the stage computed at a consumer's
 * loop: each thread has its copy), by thread 0 into a shared or global one. The
 * spatial guard covers the loads and the store, never the shuffles (every lane
 * reaches them). NULL with a message where the stage does not fit. */
/* 0 if stage st (its reduce leaf xr bound to a thread index, `first` its first
 * reduce leaf) fits allreduce, else -1 with the reason. */
static int allreduce_fits(lower_ctx *L, sch_stage *st, tir_var *const *lv, const int64_t *ext, int first, int xr,
                          int plain) {
  const char *name = st->t->name;
  sch_iter *tx = st->leaf[xr];
  int64_t T = ext[tx->id];
  gir_dtype t = st->t->dtype;
  if (!plain) return gir_errf(L->err, "stage %s: an arg-reduction cannot run across threads", name);
  if (xr != first || tx->kind != TIR_THREAD_X)
    return gir_errf(L->err, "stage %s: a reduce loop bound across threads must be the outermost reduce loop, bound to "
                    "threadIdx.x", name);
  for (int k = first + 1; k < st->n_leaf; k++) {
    tir_for_kind kk = st->leaf[k]->kind;
    if (!st->leaf[k]->reduce || tir_for_kind_is_gpu(kk) || kk == TIR_PARALLEL || kk == TIR_VECTORIZED)
      return gir_errf(L->err, "stage %s: only serial reduce loops may lie inside a cross-thread reduce loop", name);
  }
  if (t != GIR_F32 && t != GIR_F64 && t != GIR_I32 && t != GIR_I64)
    return gir_errf(L->err, "stage %s: a cross-thread reduction of %s (warp shuffles take f32, f64, i32, i64)", name,
                    gir_dtype_name(t));
  if (T % 32 || T < 32 || T > 1024)
    return gir_errf(L->err, "stage %s: a cross-thread reduction over %lld threads (a multiple of 32, at most 1024)",
                    name, (long long)T);
  int rows = 0; /* other thread indices around: several rows a block */
  for (int j = 0; j < L->n_thr; j++) {
    if (L->thr_kind[j] == TIR_THREAD_X)
      return gir_errf(L->err, "stage %s: a cross-thread reduction inside a threadIdx.x loop", name);
    rows = 1;
  }
  for (int k = 0; k < first; k++) rows |= st->leaf[k]->kind == TIR_THREAD_Y || st->leaf[k]->kind == TIR_THREAD_Z;
  if (rows && T > 32)
    return gir_errf(L->err, "stage %s: a cross-thread reduction over several warps in a block of several rows", name);
  for (int k = first; k < st->n_leaf; k++) {
    tir_stmt *att;
    if (attached_at(L, st, st->leaf[k], lv, ext, &att) < 0) return -1;
    if (att) return gir_errf(L->err, "stage %s: a stage computed inside a cross-thread reduction", name);
  }
  return 0;
}

static tir_stmt *allreduce(lower_ctx *L, sch_stage *st, tir_var *const *lv, const int64_t *ext, int first, int xr,
                           tir_expr *src, tir_expr *cond, tir_expr *guard, tir_expr *rguard, tir_expr *off) {
  if (allreduce_fits(L, st, lv, ext, first, xr, src != NULL) < 0) return NULL;
  tir_builder *b = L->b;
  sch_iter *tx = st->leaf[xr];
  int64_t T = ext[tx->id];
  gir_dtype t = st->t->dtype;
  te_combiner comb = st->body->u.red.comb;
  tir_buffer *acc = tir_buffer_new(b, "red_acc", t, 1, TIR_LOCAL, -1);
  tir_expr *zero = tir_i64(b, 0), *a0 = tir_load(b, acc, zero), *txv = tir_var_ref(b, lv[first]);
  tir_stmt *s = tir_store(b, acc, zero, combine(L, comb, a0, src));
  if (cond) s = tir_if(b, cond, s, NULL);
  if (guard) s = tir_if(b, guard, s, NULL);
  if (rguard) s = tir_if(b, rguard, s, NULL);
  for (int k = st->n_leaf - 1; k > first; k--) {
    sch_iter *it = st->leaf[k];
    s = tir_for(b, lv[k], zero, tir_i64(b, ext[it->id]), it->kind == TIR_UNROLLED ? TIR_UNROLLED : TIR_SERIAL, s);
  }
  tir_stmt *xs[16];
  int n = 0;
  xs[n++] = tir_store(b, acc, zero, reduce_identity(L, comb, t));
  xs[n++] = s;
  for (int32_t o = 16; o >= 1; o /= 2) /* the warp's butterfly */
    xs[n++] = tir_store(b, acc, zero, combine(L, comb, a0, tir_shuffle(b, TIR_SHFL_XOR, a0, o)));
  tir_buffer *sh = NULL;
  if (T > 32) { /* the warps' results through shared memory */
    int64_t nw = T / 32;
    sh = tir_buffer_new(b, "red_warps", t, nw, TIR_SHARED, -1);
    tir_expr *lane0 = tir_bin(b, TE_EQ, tir_bin(b, TE_MOD, txv, tir_i64(b, 32)), zero);
    xs[n++] = tir_barrier(b); /* the last use of red_warps is over */
    xs[n++] = tir_if(b, lane0, tir_store(b, sh, tir_bin(b, TE_DIV, txv, tir_i64(b, 32)), a0), NULL);
    xs[n++] = tir_barrier(b);
    tir_expr *r = tir_load(b, sh, zero);
    for (int64_t w = 1; w < nw; w++) r = combine(L, comb, r, tir_load(b, sh, tir_i64(b, w)));
    xs[n++] = tir_store(b, acc, zero, r);
  }
  tir_buffer *out = L->info[st->id].buf;
  tir_expr *wc = guard;
  if (out->scope != TIR_LOCAL) {
    tir_expr *t0 = tir_bin(b, TE_EQ, txv, zero);
    wc = wc ? tir_bin(b, TE_AND, wc, t0) : t0;
  }
  tir_stmt *w = tir_store(b, out, off, a0);
  xs[n++] = wc ? tir_if(b, wc, w, NULL) : w;
  s = tir_allocate(b, acc, tir_seq(b, xs, n));
  s = leaf_loop(L, st, tx, lv[first], T, TIR_THREAD_X, s);
  return s && sh ? tir_allocate(b, sh, s) : s;
}

/* A stage tensorized on tensor cores (sch_wmma.c): the factors of its product lowered
 * with the tile's row, its column and the flat reduce index as free variables (a column
 * index taken apart over the column axes' extents in the region, row-major; the reduce
 * index over the reduce axes'), their domain tests, and the loop IR from sch_wmma_lower.
 * Its region must be the one tile: one row of each batch axis, bm rows, columns whose
 * extents multiply to bn. */
static tir_stmt *emit_wmma(lower_ctx *L, sch_stage *st) {
  tir_builder *b = L->b;
  stage_info *si = &L->info[st->id];
  const sch_wmma *w = st->wmma;
  const region *reg = &si->reg;
  const te_expr *ae, *be, *bc;
  int r = st->n_root, ma = sch_wmma_operands(st, &ae, &be, &bc), ok = ma >= 0 && si->buf && si->buf->scope == TIR_SHARED;
  int64_t cols = 1, K = 1;
  for (int i = 0; ok && i < r; i++) {
    if (i < ma) ok &= reg->extent[i] == 1;
    if (i > ma) cols *= reg->extent[i];
  }
  ok &= ma >= 0 && reg->extent[ma] == w->bm && cols == w->bn;
  for (int i = 0; i < L->s->n_stages; i++) ok &= !(L->s->stages[i]->attach == SCH_AT && L->s->stages[i]->at_stage == st);
  if (!ok) {
    char ext[160] = "";
    for (int i = 0, n = 0; i < r && n >= 0 && n < (int)sizeof ext; i++)
      n += snprintf(ext + n, sizeof ext - (size_t)n, "%s%lld", i ? "x" : "", (long long)reg->extent[i]);
    gir_errf(L->err, "stage %s is tensorized on a %dx%d tile but its consumer reads a region of %s (or it is not "
             "shared, or has stages computed inside it)", st->t->name, w->bm, w->bn, ext);
    return NULL;
  }
  for (int j = 0; j < st->n_reduce; j++) K *= st->reduce_axes[j]->extent;
  sch_wmma_args a = {.c = si->buf, .K = K};
  a.vm = tir_var_new(b, "m", GIR_I64), a.vn = tir_var_new(b, "n", GIR_I64);
  a.ka = tir_var_new(b, "k", GIR_I64), a.kb = tir_var_new(b, "k", GIR_I64);
  te_var *vars[2 * GIR_MAX_RANK + 8];
  tir_expr *va[2 * GIR_MAX_RANK + 8], *vb[2 * GIR_MAX_RANK + 8];
  int nv = r + st->n_reduce;
  if (nv > 2 * GIR_MAX_RANK + 8) {
    gir_errf(L->err, "stage %s: too many axes to tensorize", st->t->name);
    return NULL;
  }
  /* output axes: A at (row vm, the tile's first column), B at (the tile's row, column vn) */
  int64_t stride = 1;
  for (int i = r - 1; i >= 0; i--) {
    vars[i] = st->root_axes[i]->root;
    va[i] = vb[i] = reg->min[i];
    tir_expr *rel = NULL, **guard = NULL;
    if (i == ma) rel = tir_var_ref(b, a.vm), va[i] = tir_bin(b, TE_ADD, reg->min[i], rel), guard = &a.a_ok;
    if (i > ma) {
      rel = tir_var_ref(b, a.vn);
      if (stride > 1) rel = tir_bin(b, TE_DIV, rel, tir_i64(b, stride));
      if (i > ma + 1) rel = tir_bin(b, TE_MOD, rel, tir_i64(b, reg->extent[i]));
      stride *= reg->extent[i];
      vb[i] = tir_bin(b, TE_ADD, reg->min[i], rel), guard = &a.b_ok;
    }
    if (guard && st->t->shape[i] % reg->extent[i]) { /* a ragged last tile along the axis */
      tir_expr *in = tir_bin(b, TE_LT, i == ma ? va[i] : vb[i], tir_i64(b, st->t->shape[i]));
      *guard = *guard ? tir_bin(b, TE_AND, *guard, in) : in;
    }
  }
  /* reduce axes: the flat indices ka, kb taken apart, the last axis fastest */
  int64_t kstride = 1;
  for (int j = st->n_reduce - 1; j >= 0; j--) {
    int64_t e = st->reduce_axes[j]->extent;
    tir_expr *x[2] = {tir_var_ref(b, a.ka), tir_var_ref(b, a.kb)};
    for (int q = 0; q < 2; q++) {
      if (kstride > 1) x[q] = tir_bin(b, TE_DIV, x[q], tir_i64(b, kstride));
      if (j > 0) x[q] = tir_bin(b, TE_MOD, x[q], tir_i64(b, e));
    }
    vars[r + j] = st->reduce_axes[j]->root, va[r + j] = x[0], vb[r + j] = x[1];
    kstride *= e;
  }
  a.a_val = lower_expr(L, ae, va, vars, nv);
  a.b_val = lower_expr(L, be, vb, vars, nv);
  if (bc) /* the reduction's condition (a conv's padding): B is zero where it is false */
    a.b_val = tir_if_then_else(b, lower_expr(L, bc, vb, vars, nv), a.b_val, tir_float(b, GIR_F32, 0));
  si->emitted = 1;
  return sch_wmma_lower(b, w, &a);
}

static tir_stmt *emit_stage(lower_ctx *L, sch_stage *st) {
  tir_builder *b = L->b;
  stage_info *si = &L->info[st->id];
  if (st->wmma) return emit_wmma(L, st);
  si->emitted = 1;
  region *reg = &si->reg;
  int64_t *ext = gir_arena_calloc(L->s->arena, (size_t)L->s->next_iter + 1, sizeof *ext);
  leaf_extents(st, reg->extent, ext, L->s->next_iter);
  for (int i = 0; i < L->n_iters; i++) L->iter_val[i] = NULL;

  /* Attached stages need their regions before the consumer's body is lowered:
   * infer them with the leaf variables the consumer will use. */
  tir_var *lv[64];
  if (st->n_leaf > 64) {
    gir_errf(L->err, "stage %s has too many loops", st->t->name);
    return NULL;
  }
  for (int k = 0; k < st->n_leaf; k++) {
    lv[k] = tir_var_new(b, st->leaf[k]->name, GIR_I64);
    L->iter_val[st->leaf[k]->id] = tir_var_ref(b, lv[k]);
  }
  tir_expr *guard, *rguard;
  derive_roots(L, st, ext, &guard, &rguard);
  stage_vals sv;
  bind_roots(L, st, reg, &sv);
  /* consumers first: a stage's region includes what its siblings read */
  for (int i = L->s->n_stages - 1; i >= 0; i--) {
    sch_stage *p = L->s->stages[i];
    if (p->attach != SCH_AT || p->at_stage != st) continue;
    int pos = -1;
    for (int k = 0; k < st->n_leaf; k++)
      if (st->leaf[k] == p->at_iter) pos = k;
    tir_var *inner[64 + 32];
    int64_t iext[64 + 32];
    int ni = 0;
    for (int k = pos + 1; k < st->n_leaf; k++) {
      inner[ni] = lv[k];
      iext[ni++] = ext[st->leaf[k]->id];
    }
    if (p->scope == TIR_SHARED) { /* one per block: what all its threads read */
      for (int j = 0; j < L->n_thr; j++) {
        inner[ni] = L->thr_var[j];
        iext[ni++] = L->thr_ext[j];
      }
      for (int k = 0; k <= pos; k++)
        if (st->leaf[k]->kind >= TIR_THREAD_X && st->leaf[k]->kind <= TIR_THREAD_Z) {
          inner[ni] = lv[k];
          iext[ni++] = ext[st->leaf[k]->id];
        }
    }
    infer_region(L, p, st, sv.vals, sv.vars, sv.n, inner, iext, ni, &L->info[p->id].reg);
    int64_t size = 1;
    for (int d = 0; d < p->t->rank; d++) size *= L->info[p->id].reg.extent[d];
    L->info[p->id].buf = tir_buffer_new(b, p->t->name, p->t->dtype, size, p->scope == TIR_SHARED ? TIR_SHARED : TIR_LOCAL, -1);
    if (p->body->kind == TE_REDUCE && (p->body->u.red.comb == TE_ARGMAX || p->body->u.red.comb == TE_ARGMIN))
      L->info[p->id].aux = tir_buffer_new(b, "argbest", p->body->u.red.src->dtype, size, TIR_LOCAL, -1);
  }

  /* the statements at the bottom of the nest */
  tir_expr *idx[GIR_MAX_RANK];
  for (int i = 0; i < st->n_root; i++) idx[i] = L->iter_val[st->root_axes[i]->id] ? L->iter_val[st->root_axes[i]->id] : tir_i64(b, 0);
  tir_expr *off = tir_i64(b, 0);
  for (int i = 0; i < st->n_root; i++) off = tir_bin(b, TE_ADD, tir_bin(b, TE_MUL, off, tir_i64(b, reg->extent[i])), idx[i]);
  /* domain guard for regions that may leave the producer's domain */
  tir_expr *dom = NULL;
  if (reg->may_escape)
    for (int i = 0; i < st->n_root; i++) {
      tir_expr *v = sv.vals[i];
      tir_expr *ok = tir_bin(b, TE_AND, tir_bin(b, TE_GE, v, tir_i64(b, 0)), tir_bin(b, TE_LT, v, tir_i64(b, st->t->shape[i])));
      dom = dom ? tir_bin(b, TE_AND, dom, ok) : ok;
    }
  if (dom) guard = guard ? tir_bin(b, TE_AND, guard, dom) : dom;

  const te_expr *body = st->body;
  tir_stmt *init = NULL, *update;
  int first_red = st->n_leaf;
  tir_expr *red_src = NULL, *red_cond = NULL; /* a plain reduction's, for a cross-thread one */
  if (body->kind == TE_REDUCE) {
    te_combiner comb = body->u.red.comb;
    int arg = comb == TE_ARGMAX || comb == TE_ARGMIN;
    tir_expr *src = lower_expr(L, body->u.red.src, sv.vals, sv.vars, sv.n);
    tir_expr *cond = body->u.red.cond ? lower_expr(L, body->u.red.cond, sv.vals, sv.vars, sv.n) : NULL;
    if (!arg) red_src = src, red_cond = cond;
    gir_dtype sdt = body->u.red.src->dtype;
    if (arg) {
      /* linear index over the reduce axes */
      tir_expr *lin_ix = tir_i64(b, 0);
      for (int i = 0; i < st->n_reduce; i++)
        lin_ix = tir_bin(b, TE_ADD, tir_bin(b, TE_MUL, lin_ix, tir_i64(b, st->reduce_axes[i]->extent)),
                         L->iter_val[st->reduce_axes[i]->id]);
      tir_var *v = tir_var_new(b, "v", sdt);
      tir_expr *vr = tir_var_ref(b, v), *best = tir_load(b, si->aux, off);
      tir_expr *better;
      te_binop cmpop = comb == TE_ARGMAX ? (body->u.red.select_last ? TE_GE : TE_GT) : (body->u.red.select_last ? TE_LE : TE_LT);
      better = tir_bin(b, cmpop, vr, best);
      if (gir_dtype_is_float(sdt))
        better = tir_bin(b, TE_AND, tir_un(b, TE_NOT, tir_un(b, TE_ISNAN, best)),
                         tir_bin(b, TE_OR, tir_un(b, TE_ISNAN, vr), better));
      tir_stmt *upd = tir_if(b, better, tir_seq2(b, tir_store(b, si->aux, off, vr), tir_store(b, si->buf, off, lin_ix)), NULL);
      if (cond) upd = tir_if(b, cond, upd, NULL);
      update = tir_let(b, v, src, upd);
      init = tir_seq2(b, tir_store(b, si->aux, off, reduce_identity(L, comb, sdt)), tir_store(b, si->buf, off, tir_i64(b, 0)));
    } else {
      tir_expr *acc = tir_load(b, si->buf, off);
      if (st->t->dtype != sdt) /* te_reduce_narrow: the step in src's type, rounded to the accumulator's */
        update = tir_store(b, si->buf, off, tir_cast(b, st->t->dtype, combine(L, comb, tir_cast(b, sdt, acc), src)));
      else
        update = tir_store(b, si->buf, off, combine(L, comb, acc, src));
      if (cond) update = tir_if(b, cond, update, NULL);
      init = tir_store(b, si->buf, off, reduce_identity(L, comb, st->t->dtype));
    }
    for (int k = 0; k < st->n_leaf; k++)
      if (st->leaf[k]->reduce) {
        first_red = k;
        break;
      }
  } else {
    update = tir_store(b, si->buf, off, lower_expr(L, body, sv.vals, sv.vars, sv.n));
  }
  if (guard) {
    update = tir_if(b, guard, update, NULL);
    if (init) init = tir_if(b, guard, init, NULL);
  }
  if (rguard) update = tir_if(b, rguard, update, NULL);

  /* a reduce loop bound to a thread index: a cross-thread reduction inside the
   * spatial loops */
  for (int k = first_red; init && k < st->n_leaf; k++)
    if (st->leaf[k]->reduce && tir_for_kind_is_gpu(st->leaf[k]->kind)) {
      tir_stmt *s = allreduce(L, st, lv, ext, first_red, k, red_src, red_cond, guard, rguard, off);
      for (int j = first_red - 1; s && j >= 0; j--) {
        sch_iter *it = st->leaf[j];
        tir_stmt *att;
        if (attached_at(L, st, it, lv, ext, &att) < 0) return NULL;
        if (att) s = alloc_attached(L, st, it, tir_seq2(b, att, s));
        s = leaf_loop(L, st, it, lv[j], ext[it->id], it->kind, s);
      }
      return s;
    }

  /* update nest: all leaves from first_red inward (or the whole nest) */
  tir_stmt *s = update;
  for (int k = st->n_leaf - 1; k >= (init ? first_red : 0); k--) {
    sch_iter *it = st->leaf[k];
    tir_stmt *att;
    if (attached_at(L, st, it, lv, ext, &att) < 0) return NULL;
    if (att) s = alloc_attached(L, st, it, tir_seq2(b, att, s));
    if (with_prefetches(L, st, k, lv, ext, &s) < 0) return NULL;
    if (!(s = leaf_loop(L, st, it, lv[k], ext[it->id], it->kind, s))) return NULL;
  }
  if (init) {
    /* init nest: the spatial leaves inside the first reduce loop, fresh variables */
    tir_stmt *is = init;
    for (int k = st->n_leaf - 1; k >= first_red; k--) {
      sch_iter *it = st->leaf[k];
      if (it->reduce) continue;
      tir_var *nv = tir_var_new(b, it->name, GIR_I64);
      /* rename: substitute the loop variable by a fresh one through a let */
      is = tir_for(b, nv, tir_i64(b, 0), tir_i64(b, ext[it->id]), it->kind == TIR_PARALLEL ? TIR_SERIAL : it->kind,
                   tir_let(b, lv[k], tir_var_ref(b, nv), is));
    }
    s = tir_seq2(b, is, s);
    for (int k = first_red - 1; k >= 0; k--) {
      sch_iter *it = st->leaf[k];
      tir_stmt *att;
      if (attached_at(L, st, it, lv, ext, &att) < 0) return NULL;
      if (att) s = alloc_attached(L, st, it, tir_seq2(b, att, s));
      if (with_prefetches(L, st, k, lv, ext, &s) < 0) return NULL;
      if (!(s = leaf_loop(L, st, it, lv[k], ext[it->id], it->kind, s))) return NULL;
    }
  }
  return s;
}

tir_func *sch_lower(sch_schedule *s, tir_builder *b, const char *name) {
  if (sch_check_attachments(s) < 0) return NULL;
  lower_ctx L = {.s = s, .b = b, .err = s->err};
  L.info = gir_arena_calloc(s->arena, (size_t)s->n_stages + 1, sizeof *L.info);
  L.n_tensor_ids = s->te->next_tensor;
  L.param_of = gir_arena_calloc(s->arena, (size_t)L.n_tensor_ids + 1, sizeof *L.param_of);
  L.n_iters = s->next_iter;
  L.iter_val = gir_arena_calloc(s->arena, (size_t)L.n_iters + 1, sizeof *L.iter_val);
  tir_func *f = gir_arena_alloc(s->arena, sizeof *f);
  int np = s->n_inputs + s->n_outputs;
  for (int i = 0; i < s->n_stages; i++)
    if (s->stages[i]->attach == SCH_ROOT && !s->stages[i]->is_output) np++;
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->body->kind == TE_REDUCE && (st->body->u.red.comb == TE_ARGMAX || st->body->u.red.comb == TE_ARGMIN) &&
        st->attach == SCH_ROOT)
      np++;
  }
  f->name = name;
  f->params = gir_arena_calloc(s->arena, (size_t)np + 1, sizeof *f->params);
  int k = 0; /* inputs, then outputs (at n_inputs + their index), then workspace */
  for (int i = 0; i < s->n_inputs; i++) {
    te_tensor *t = s->inputs[i];
    int64_t size = 1;
    for (int d = 0; d < t->rank; d++) size *= t->shape[d];
    L.param_of[t->id] = f->params[k] = tir_buffer_new(b, t->name ? t->name : "in", t->dtype, size, TIR_GLOBAL, k);
    k++;
  }
  /* outputs, then root intermediates (workspace); every root stage's region is its whole domain */
  k = s->n_inputs + s->n_outputs;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < s->n_stages; i++) {
      sch_stage *st = s->stages[i];
      if (st->attach != SCH_ROOT || st->is_output != !pass) continue;
      int64_t size = 1;
      for (int d = 0; d < st->t->rank; d++) {
        L.info[i].reg.min[d] = tir_i64(b, 0);
        L.info[i].reg.extent[d] = st->t->shape[d];
        size *= st->t->shape[d];
      }
      if (pass == 0) {
        int o = 0;
        while (s->outputs[o] != st->t) o++;
        L.info[i].buf = f->params[s->n_inputs + o] = tir_buffer_new(b, st->t->name, st->t->dtype, size, TIR_GLOBAL, s->n_inputs + o);
      } else {
        L.info[i].buf = f->params[k] = tir_buffer_new(b, st->t->name, st->t->dtype, size, TIR_GLOBAL, k);
        k++;
      }
      if (st->body->kind == TE_REDUCE && (st->body->u.red.comb == TE_ARGMAX || st->body->u.red.comb == TE_ARGMIN)) {
        L.info[i].aux = f->params[k] = tir_buffer_new(b, "argbest", st->body->u.red.src->dtype, size, TIR_GLOBAL, k);
        k++;
      }
    }
  f->n_params = np;
  tir_stmt *body = NULL;
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *st = s->stages[i];
    if (st->attach != SCH_ROOT) continue;
    tir_stmt *x = emit_stage(&L, st);
    if (!x) return NULL;
    body = body ? tir_seq2(b, body, x) : x;
  }
  for (int i = 0; i < s->n_stages; i++)
    if (s->stages[i]->attach == SCH_AT && !L.info[i].emitted) {
      gir_errf(s->err, "stage %s is attached to a loop that is never emitted", s->stages[i]->t->name);
      return NULL;
    }
  f->body = body;
  f->n_vars = b->next_var;
  f->n_buffers = b->next_buffer;
  return f;
}
