/* llvm_window.c — one load for the strided vectors that a row's taps share.
 *
 * A stride-2 conv vectorized along its rows reads, for kernel columns kw = 0, 1, 2,
 * x[X + c + 2i] over lanes i with c = c0, c0 + 1, c0 + 2: three spans that overlap in
 * all but an element or two. Loaded each on its own, every tap is a span load (two
 * vectors' worth) and a shuffle; loaded once for the three (a window), the taps are
 * shuffles of it — a third of the loads.
 *
 * The plan is made per statement sequence, whose statements run in order, each once
 * per run of the sequence. Its candidates are the vector loads with a constant stride
 * of 2 to 4 that those statements read unconditionally: plain ones (every lane), and
 * the masked-load form if_then_else(cond, load, x) whose cond is constants per lane
 * (a column of padding) and at most one uniform (scalar) condition (a row of padding):
 * its enabled lanes. Candidates group by buffer, stride, lanes, the uniform condition
 * and the non-constant part of the index base (its linear form, tir/arith.h); within a
 * group, members whose elements lie within twice the width a single member's span
 * load takes share a window: the union of their elements.
 * Each of those elements is read by a member of the same sequence, under the same
 * uniform condition, so loading all of them wherever one member loads is safe. Every
 * member is emitted as the window's masked load — the same address, mask and
 * condition, which LLVM's CSE merges into one — and a shuffle of its lanes
 * (llvm_expr.c). A group of one keeps the usual span load. */
#include <stdlib.h>
#include <string.h>
#include "arith.h"
#include "llvm_internal.h"

/* Constants of a lane condition (a padding threshold, a ramp over the lanes) small
 * enough that no sum of two, nor base + 63 strides, leaves int32: evaluated in int64
 * they give what the condition's own dtype computes. */
static int small(int64_t v) { return v > -((int64_t)1 << 24) && v < ((int64_t)1 << 24); }

/* Lane i's value of e when it is a constant there (integers and bools of constants,
 * ramps and broadcasts of them): 1 and *v, else 0. */
static int lane_const(const tir_expr *e, int i, int64_t *v) {
  int64_t a, b;
  switch (e->kind) {
  case TIR_INT: *v = e->u.i; return 1;
  case TIR_BROADCAST: return lane_const(e->u.bcast.value, 0, v);
  case TIR_RAMP: /* constants of a condition are small; a sum past int64 is no lane mask we know */
    if (!lane_const(e->u.ramp.base, 0, &a) || !lane_const(e->u.ramp.stride, 0, &b) || !small(a) || !small(b))
      return 0;
    *v = a + (int64_t)i * b;
    return 1;
  case TIR_BINARY:
    if (gir_dtype_is_float(e->u.bin.a->dtype) || !lane_const(e->u.bin.a, i, &a) || !lane_const(e->u.bin.b, i, &b) ||
        !small(a) || !small(b))
      return 0;
    switch (e->u.bin.op) {
    case TE_ADD: *v = a + b; return 1;
    case TE_SUB: *v = a - b; return 1;
    case TE_AND: *v = a && b; return e->dtype == GIR_BOOL;
    case TE_OR: *v = a || b; return e->dtype == GIR_BOOL;
    case TE_EQ: *v = a == b; return 1;
    case TE_NE: *v = a != b; return 1;
    case TE_LT: *v = a < b; return 1;
    case TE_LE: *v = a <= b; return 1;
    case TE_GT: *v = a > b; return 1;
    case TE_GE: *v = a >= b; return 1;
    default: return 0;
    }
  default: return 0;
  }
}

/* cond (n lanes) as constants per lane ∧ at most one uniform condition: clears on[i]
 * where a lane is off, sets *u; 0 when cond has another form. */
static int split_cond(const tir_expr *c, int n, char *on, const tir_expr **u) {
  if (c->lanes == 1 || c->kind == TIR_BROADCAST) {
    if (*u) return 0;
    *u = c->lanes == 1 ? c : c->u.bcast.value;
    return (*u)->lanes == 1;
  }
  if (c->kind == TIR_BINARY && c->u.bin.op == TE_AND && c->dtype == GIR_BOOL)
    return split_cond(c->u.bin.a, n, on, u) && split_cond(c->u.bin.b, n, on, u);
  for (int i = 0; i < n; i++) {
    int64_t v;
    if (!lane_const(c, i, &v)) return 0;
    if (!v) on[i] = 0;
  }
  return 1;
}

typedef struct cand {
  const tir_expr *load;
  const tir_expr *u;
  arith_linear x; /* the index base; x.c its constant */
  int32_t k, n;
  char *on;       /* [n] lanes read */
  int64_t lo, hi; /* the elements read, relative to the base's non-constant part */
  int32_t group;  /* -1 until grouped; -2: never (its node occurs elsewhere too) */
} cand;

typedef struct plan {
  arith_ctx ac;
  gir_arena *a;
  cand *c;
  int32_t n, cap;
  const tir_expr **all; /* every load node of the sequence's stores */
  int32_t n_all, cap_all;
} plan;

/* load (under cond, or NULL: every lane) as a candidate, if it is one */
static void add_cand(plan *p, const tir_expr *load, const tir_expr *cond) {
  const tir_buffer *buf = load->u.load.buf;
  const tir_expr *ix = load->u.load.index;
  int n = load->lanes;
  if (buf->dtype != GIR_F32 && buf->dtype != GIR_I32 && buf->dtype != GIR_I64 && buf->dtype != GIR_F64) return;
  if (ix->kind == TIR_CAST && ix->u.cast.a->dtype == GIR_I32 && ix->dtype == GIR_I64) ix = ix->u.cast.a;
  if (ix->kind != TIR_RAMP || ix->lanes != n || ix->u.ramp.stride->kind != TIR_INT) return;
  int64_t k = ix->u.ramp.stride->u.i;
  const tir_expr *base = ix->u.ramp.base;
  /* a base read from memory could differ between two members: their elements would not be
   * each other's */
  if (k < 2 || k > 4 || n * k > 64 || base->lanes != 1 || (base->dtype != GIR_I32 && base->dtype != GIR_I64) ||
      tir_expr_reads_memory(base))
    return;
  char *on = gir_arena_alloc(p->a, (size_t)n);
  if (!on) return;
  memset(on, 1, (size_t)n);
  const tir_expr *u = NULL;
  if (cond && !split_cond(cond, n, on, &u)) return;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int i = 0; i < n; i++)
    if (on[i]) lo = lo < k * i ? lo : k * i, hi = hi > k * i ? hi : k * i;
  if (lo > hi) return; /* no lane read */
  if (p->n == p->cap) {
    int32_t cap = p->cap ? 2 * p->cap : 16;
    cand *c = gir_arena_grow(p->a, p->c, (size_t)p->n, (size_t)cap, sizeof *c);
    if (!c) return;
    p->c = c, p->cap = cap;
  }
  arith_linear x = arith_linear_of(&p->ac, base);
  if (x.c <= -((int64_t)1 << 40) || x.c >= (int64_t)1 << 40) return; /* lo and hi stay inside int64 */
  p->c[p->n++] = (cand){.load = load, .u = u, .x = x, .k = (int32_t)k, .n = n, .on = on,
                        .lo = x.c + lo, .hi = x.c + hi, .group = -1};
}

/* Every load node in e into p->all; the candidates among those that evaluating e
 * always performs (lazy: e sits in an if_then_else's arm, or is an index). */
static void walk(plan *p, const tir_expr *e, int lazy) {
  if (!e) return;
  switch (e->kind) {
  case TIR_LOAD:
    if (p->n_all == p->cap_all) {
      int32_t cap = p->cap_all ? 2 * p->cap_all : 64;
      const tir_expr **a = gir_arena_grow(p->a, p->all, (size_t)p->n_all, (size_t)cap, sizeof *a);
      if (!a) return;
      p->all = a, p->cap_all = cap;
    }
    p->all[p->n_all++] = e;
    if (!lazy && e->lanes > 1) add_cand(p, e, NULL);
    walk(p, e->u.load.index, 1);
    return;
  case TIR_IF_THEN_ELSE: /* lazy arms; the masked-load form's load a candidate under its condition */
    if (!lazy && e->lanes > 1 && e->u.sel.a->kind == TIR_LOAD && e->u.sel.a->lanes == e->lanes &&
        !tir_expr_reads_memory(e->u.sel.a->u.load.index) && !tir_expr_reads_memory(e->u.sel.b))
      add_cand(p, e->u.sel.a, e->u.sel.c);
    walk(p, e->u.sel.c, lazy), walk(p, e->u.sel.a, 1), walk(p, e->u.sel.b, 1);
    return;
  case TIR_UNARY: walk(p, e->u.un.a, lazy); return;
  case TIR_BINARY: walk(p, e->u.bin.a, lazy), walk(p, e->u.bin.b, lazy); return;
  case TIR_SELECT: walk(p, e->u.sel.c, lazy), walk(p, e->u.sel.a, lazy), walk(p, e->u.sel.b, lazy); return;
  case TIR_CAST: case TIR_BITCAST: walk(p, e->u.cast.a, lazy); return;
  case TIR_RAMP: walk(p, e->u.ramp.base, 1), walk(p, e->u.ramp.stride, 1); return;
  case TIR_BROADCAST: walk(p, e->u.bcast.value, lazy); return;
  case TIR_DOT4: walk(p, e->u.dot4.acc, lazy), walk(p, e->u.dot4.a, lazy), walk(p, e->u.dot4.b, lazy); return;
  case TIR_SHUFFLE: walk(p, e->u.shfl.value, 1); return;
  default: return;
  }
}

static int by_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)*(const tir_expr *const *)a, y = (uintptr_t)*(const tir_expr *const *)b;
  return x < y ? -1 : x > y;
}

/* Whether load node e occurs once in the sequence (p->all sorted): a node shared with
 * another place (under another condition) must not take this place's window. */
static int occurs_once(const plan *p, const tir_expr *e) {
  const tir_expr **f = bsearch(&e, p->all, (size_t)p->n_all, sizeof *p->all, by_ptr);
  if (!f) return 0;
  return !(f > p->all && f[-1] == e) && !(f + 1 < p->all + p->n_all && f[1] == e);
}

/* Same group: buffer, stride, lanes, uniform condition, the base's non-constant part. */
static int same_group(const cand *a, const cand *b) {
  if (a->load->u.load.buf != b->load->u.load.buf || a->k != b->k || a->n != b->n || a->x.dtype != b->x.dtype ||
      a->x.n != b->x.n || !a->u != !b->u || (a->u && !arith_expr_equal(a->u, b->u)))
    return 0;
  for (int i = 0; i < a->x.n; i++)
    if (a->x.t[i].coef != b->x.t[i].coef || !arith_expr_equal(a->x.t[i].atom, b->x.t[i].atom)) return 0;
  return 1;
}

static int by_lo(const void *a, const void *b) {
  const cand *x = *(cand *const *)a, *y = *(cand *const *)b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* One window over members m[0..n) (sorted by lo, all within wide elements): each
 * member's entry, all sharing the start index (the base's non-constant part + lo, one
 * expression: the same code wherever a member emits it) and the mask. */
static int add_window(tgt_llvm_wins *w, gir_arena *a, cand *const *m, int n, int64_t wide) {
  int64_t lo = m[0]->lo;
  char *mask = gir_arena_calloc(a, (size_t)wide, 1);
  tgt_llvm_win *e = gir_arena_grow(a, w->w, (size_t)w->n, (size_t)(w->n + n), sizeof *e);
  if (!mask || !e) return -1;
  w->w = e;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m[j]->n; i++)
      if (m[j]->on[i]) mask[m[j]->x.c + (int64_t)m[j]->k * i - lo] = 1;
  arith_linear x = m[0]->x;
  /* lo in the index's dtype (an int32 index wraps as its own arithmetic would: the
   * element it names is in range, so the wrapped sum is exact) */
  x.c = x.dtype == GIR_I32 ? (int64_t)(int32_t)(uint32_t)lo : lo;
  tir_builder b;
  tir_builder_init(&b, a);
  const tir_expr *at = arith_linear_expr(&b, &x);
  if (!at) return -1;
  for (int j = 0; j < n; j++)
    w->w[w->n++] = (tgt_llvm_win){.load = m[j]->load, .u = m[j]->u, .at = at, .off = m[j]->x.c - lo,
                                  .wide = (int32_t)wide, .k = m[j]->k, .mask = mask};
  return 0;
}

tgt_llvm_wins *tgt_llvm_plan_windows(tgt_lcg *g, tir_stmt *const *s, int32_t n) {
  plan p = {.a = g->scratch};
  arith_ctx_init(&p.ac, g->scratch);
  for (int32_t i = 0; i < n; i++)
    if (s[i]->kind == TIR_STORE) walk(&p, s[i]->u.store.value, 0), walk(&p, s[i]->u.store.index, 1);
  if (p.n < 2) return NULL;
  qsort(p.all, (size_t)p.n_all, sizeof *p.all, by_ptr);
  for (int32_t i = 0; i < p.n; i++)
    if (!occurs_once(&p, p.c[i].load)) p.c[i].group = -2; /* never grouped */
  tgt_llvm_wins *w = gir_arena_calloc(g->scratch, 1, sizeof *w);
  cand **m = gir_arena_calloc(g->scratch, (size_t)p.n, sizeof *m);
  if (!w || !m) return NULL;
  for (int32_t i = 0; i < p.n; i++) {
    if (p.c[i].group != -1) continue;
    int nm = 0;
    for (int32_t j = i; j < p.n; j++)
      if (p.c[j].group == -1 && same_group(&p.c[i], &p.c[j])) p.c[j].group = i, m[nm++] = &p.c[j];
    if (nm < 2) continue;
    qsort(m, (size_t)nm, sizeof *m, by_lo);
    /* windows up to twice the power of two one member's span load takes (k·(n - 1) + 1
     * elements), at most 64: a full row of 16 lanes at stride 2 spans 31 elements, and
     * its three taps 33 */
    int64_t span = (int64_t)m[0]->k * (m[0]->n - 1) + 1, lim = 1;
    while (lim < span) lim *= 2;
    if (2 * lim <= 64) lim *= 2;
    for (int j = 0; j < nm;) {
      int e = j + 1;
      int64_t hi = m[j]->hi, wide = 1;
      while (e < nm && (m[e]->hi > hi ? m[e]->hi : hi) - m[j]->lo < lim) hi = m[e]->hi > hi ? m[e]->hi : hi, e++;
      while (wide < hi - m[j]->lo + 1) wide *= 2;
      if (e - j >= 2 && add_window(w, g->scratch, m + j, e - j, wide) < 0) return NULL;
      j = e;
    }
  }
  return w->n ? w : NULL;
}

const tgt_llvm_win *tgt_llvm_find_window(const tgt_lcg *g, const tir_expr *load) {
  const tgt_llvm_wins *w = g->wins;
  for (int32_t i = 0; w && i < w->n; i++)
    if (w->w[i].load == load) return &w->w[i];
  return NULL;
}
