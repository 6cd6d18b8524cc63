/* schedule.c — building a schedule from a TE program and the scheduling
 * primitives (see schedule.h). Creation walks the loads from the outputs to find
 * every compute stage, splits reductions nested inside expressions out into
 * stages of their own (so that every reduce axis is a schedulable iteration
 * variable), and gives each stage its root iteration variables in axis order. */
#include <stdlib.h>
#include <string.h>
#include "schedule.h"

static void *alloc(sch_schedule *s, size_t n) {
  void *p = gir_arena_alloc(s->arena, n);
  if (!p) abort();
  return p;
}

static sch_iter *iter_new(sch_schedule *s, sch_stage *st, const char *name, int64_t extent, int reduce, te_var *root) {
  sch_iter *it = alloc(s, sizeof *it);
  it->id = s->next_iter++;
  it->name = name;
  it->extent = extent;
  it->reduce = reduce;
  it->kind = TIR_SERIAL;
  it->root = root;
  it->stage = st;
  return it;
}

sch_stage *sch_stage_of(sch_schedule *s, const te_tensor *t) {
  for (int i = 0; i < s->n_stages; i++)
    if (s->stages[i]->t == t) return s->stages[i];
  return NULL;
}

static void set_leaves_to_roots(sch_schedule *s, sch_stage *st) {
  st->n_leaf = st->n_root + st->n_reduce;
  st->leaf = alloc(s, sizeof(sch_iter *) * (size_t)(st->n_leaf + 1));
  for (int i = 0; i < st->n_root; i++) st->leaf[i] = st->root_axes[i];
  for (int i = 0; i < st->n_reduce; i++) st->leaf[st->n_root + i] = st->reduce_axes[i];
  st->n_rels = 0;
}

static sch_stage *stage_new(sch_schedule *s, te_tensor *t, te_expr *body) {
  sch_stage *st = alloc(s, sizeof *st);
  st->t = t;
  st->body = body;
  st->attach = SCH_ROOT;
  st->scope = TIR_GLOBAL;
  st->n_root = t->rank;
  st->root_axes = alloc(s, sizeof(sch_iter *) * (size_t)(t->rank + 1));
  for (int i = 0; i < t->rank; i++) st->root_axes[i] = iter_new(s, st, t->axis[i]->name, t->shape[i], 0, t->axis[i]);
  if (body->kind == TE_REDUCE) {
    st->n_reduce = body->u.red.n_axes;
    st->reduce_axes = alloc(s, sizeof(sch_iter *) * (size_t)(st->n_reduce + 1));
    for (int i = 0; i < st->n_reduce; i++) {
      te_var *v = body->u.red.axes[i];
      st->reduce_axes[i] = iter_new(s, st, v->name, v->extent, 1, v);
    }
  }
  set_leaves_to_roots(s, st);
  return st;
}

static void push_stage(sch_schedule *s, sch_stage *st, int32_t *cap) {
  if (s->n_stages == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    s->stages = gir_arena_grow(s->arena, s->stages, (size_t)s->n_stages, (size_t)*cap, sizeof *s->stages);
  }
  st->id = s->n_stages;
  s->stages[s->n_stages++] = st;
}

typedef struct build_ctx {
  sch_schedule *s;
  int32_t cap;
  uint8_t *seen; /* by tensor id */
} build_ctx;

static void visit_tensor(te_tensor *t, void *arg);

/* Rewrites e so that no reduction is nested below its top: each nested one
 * becomes a stage over the enclosing stage's axes (te_tensor *owner). */
static te_expr *split_reductions(build_ctx *b, te_tensor *owner, te_expr *e, int top) {
  te_ctx *c = b->s->te;
  switch (e->kind) {
  case TE_REDUCE: {
    te_expr *r = e;
    te_expr *src = split_reductions(b, owner, e->u.red.src, 0);
    if (src != e->u.red.src) {
      r = gir_arena_alloc(c->arena, sizeof *r);
      *r = *e;
      r->u.red.src = src;
    }
    if (top) return r;
    te_var *ax[GIR_MAX_RANK];
    te_expr *repl[GIR_MAX_RANK], *idx[GIR_MAX_RANK];
    te_axes(c, owner->rank, owner->shape, ax);
    for (int i = 0; i < owner->rank; i++) {
      repl[i] = te_v(c, ax[i]);
      idx[i] = te_v(c, owner->axis[i]);
    }
    te_expr *body = te_subst(c, r, owner->axis, repl, owner->rank);
    te_tensor *t = te_compute(c, "red", r->dtype, owner->rank, owner->shape, ax, body);
    t->tag = owner->tag; /* the reduction is the heart of the owner's op: templates find it by tag */
    t->origin = owner->origin;
    visit_tensor(t, b); /* becomes a stage before the owner */
    return te_load(c, t, idx);
  }
  case TE_UNARY: {
    te_expr *a = split_reductions(b, owner, e->u.un.a, 0);
    return a == e->u.un.a ? e : te_un(c, e->u.un.op, a);
  }
  case TE_BINARY: {
    te_expr *x = split_reductions(b, owner, e->u.bin.a, 0), *y = split_reductions(b, owner, e->u.bin.b, 0);
    return x == e->u.bin.a && y == e->u.bin.b ? e : te_bin(c, e->u.bin.op, x, y);
  }
  case TE_SELECT: {
    te_expr *q = split_reductions(b, owner, e->u.sel.c, 0), *x = split_reductions(b, owner, e->u.sel.a, 0),
            *y = split_reductions(b, owner, e->u.sel.b, 0);
    return q == e->u.sel.c && x == e->u.sel.a && y == e->u.sel.b ? e : te_select(c, q, x, y);
  }
  case TE_CAST: case TE_BITCAST: {
    te_expr *a = split_reductions(b, owner, e->u.cast.a, 0);
    if (a == e->u.cast.a) return e;
    return e->kind == TE_CAST ? te_cast(c, e->dtype, a) : te_bitcast(c, e->dtype, a);
  }
  default: return e;
  }
}

static void visit_tensor(te_tensor *t, void *arg) {
  build_ctx *b = arg;
  if (t->kind != TE_COMPUTE || b->seen[t->id]) return;
  b->seen[t->id] = 1;
  te_visit_loads(t->body, visit_tensor, b); /* producers first */
  te_expr *body = split_reductions(b, t, t->body, 1);
  push_stage(b->s, stage_new(b->s, t, body), &b->cap);
}

sch_schedule *sch_create(te_ctx *c, te_tensor *const *inputs, int32_t n_in, te_tensor *const *outputs, int32_t n_out,
                         gir_err *err) {
  sch_schedule *s = gir_arena_alloc(c->arena, sizeof *s);
  if (!s) return NULL;
  s->te = c;
  s->arena = c->arena;
  s->err = err;
  s->inputs = alloc(s, sizeof(te_tensor *) * (size_t)(n_in + 1));
  s->outputs = alloc(s, sizeof(te_tensor *) * (size_t)(n_out + 1));
  for (int i = 0; i < n_in; i++) s->inputs[i] = inputs[i];
  for (int i = 0; i < n_out; i++) s->outputs[i] = outputs[i];
  s->n_inputs = n_in;
  s->n_outputs = n_out;
  /* tensors created while splitting reductions get ids past the current count */
  build_ctx b = {.s = s, .seen = alloc(s, (size_t)c->next_tensor * 4 + 64)};
  for (int i = 0; i < n_out; i++) {
    if (outputs[i]->kind != TE_COMPUTE) {
      gir_errf(err, "schedule: output %d is a placeholder", i);
      return NULL;
    }
    visit_tensor(outputs[i], &b);
  }
  for (int i = 0; i < n_out; i++) sch_stage_of(s, outputs[i])->is_output = 1;
  return s;
}

/* --- primitives --- */

static int leaf_pos(const sch_stage *st, const sch_iter *it) {
  for (int i = 0; i < st->n_leaf; i++)
    if (st->leaf[i] == it) return i;
  return -1;
}

/* Stages computed at `from` move to `to` when `from` stops being a loop: the
 * inner half of a split runs once per iteration of the original loop, the fused
 * loop at least that often, so the attached stage stays correct. */
static void move_attachments(sch_schedule *s, const sch_iter *from, sch_iter *to) {
  for (int i = 0; i < s->n_stages; i++)
    if (s->stages[i]->attach == SCH_AT && s->stages[i]->at_iter == from) s->stages[i]->at_iter = to;
}

static sch_rel *rel_new(sch_schedule *s, sch_stage *st) {
  if (st->n_rels == st->cap_rels) {
    int32_t nc = st->cap_rels ? st->cap_rels * 2 : 8;
    st->rels = gir_arena_grow(s->arena, st->rels, (size_t)st->n_rels, (size_t)nc, sizeof *st->rels);
    st->cap_rels = nc;
  }
  sch_rel *r = &st->rels[st->n_rels++];
  memset(r, 0, sizeof *r);
  return r;
}

int sch_split(sch_schedule *s, sch_stage *st, sch_iter *it, int64_t factor, sch_iter **outer, sch_iter **inner) {
  int p = leaf_pos(st, it);
  if (p < 0) return gir_errf(s->err, "split: %s is not a loop of stage %s", it->name, st->t->name);
  if (factor < 1) return gir_errf(s->err, "split: factor %lld must be positive", (long long)factor);
  sch_iter *o = iter_new(s, st, "o", (it->extent + factor - 1) / factor, it->reduce, NULL);
  sch_iter *in = iter_new(s, st, "i", factor < it->extent ? factor : it->extent, it->reduce, NULL);
  sch_rel *r = rel_new(s, st);
  r->kind = SCH_SPLIT;
  r->parent = it;
  r->outer = o;
  r->inner = in;
  r->factor = factor;
  sch_iter **nl = alloc(s, sizeof(sch_iter *) * (size_t)(st->n_leaf + 2));
  for (int i = 0, k = 0; i < st->n_leaf; i++) {
    if (i == p) {
      nl[k++] = o;
      nl[k++] = in;
    } else
      nl[k++] = st->leaf[i];
  }
  st->leaf = nl;
  st->n_leaf++;
  move_attachments(s, it, in);
  if (outer) *outer = o;
  if (inner) *inner = in;
  return 0;
}

int sch_fuse(sch_schedule *s, sch_stage *st, sch_iter *outer, sch_iter *inner, sch_iter **fused) {
  int p = leaf_pos(st, outer), q = leaf_pos(st, inner);
  if (p < 0 || q != p + 1) return gir_errf(s->err, "fuse: the loops must be adjacent, outer first");
  if (outer->reduce != inner->reduce) return gir_errf(s->err, "fuse: cannot fuse a reduce loop with a spatial one");
  if (outer->extent > INT64_MAX / (inner->extent ? inner->extent : 1)) return gir_errf(s->err, "fuse: extent overflows");
  sch_iter *f = iter_new(s, st, "f", outer->extent * inner->extent, outer->reduce, NULL);
  sch_rel *r = rel_new(s, st);
  r->kind = SCH_FUSE;
  r->outer = outer;
  r->inner = inner;
  r->fused = f;
  st->leaf[p] = f;
  for (int i = q; i + 1 < st->n_leaf; i++) st->leaf[i] = st->leaf[i + 1];
  st->n_leaf--;
  move_attachments(s, outer, f);
  move_attachments(s, inner, f);
  if (fused) *fused = f;
  return 0;
}

int sch_reorder(sch_schedule *s, sch_stage *st, sch_iter *const *order, int32_t n) {
  int pos[64];
  if (n > 64) return gir_errf(s->err, "reorder: too many loops");
  for (int i = 0; i < n; i++) {
    pos[i] = leaf_pos(st, order[i]);
    if (pos[i] < 0) return gir_errf(s->err, "reorder: %s is not a loop of stage %s", order[i]->name, st->t->name);
    for (int j = 0; j < i; j++)
      if (pos[j] == pos[i]) return gir_errf(s->err, "reorder: loop listed twice");
  }
  /* the listed loops take the sorted positions they occupied, in the given order */
  int sorted[64];
  memcpy(sorted, pos, sizeof(int) * (size_t)n);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
      int t = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = t;
    }
  for (int i = 0; i < n; i++) st->leaf[sorted[i]] = order[i];
  return 0;
}

int sch_tile(sch_schedule *s, sch_stage *st, sch_iter *x, sch_iter *y, int64_t fx, int64_t fy, sch_iter **xo,
             sch_iter **yo, sch_iter **xi, sch_iter **yi) {
  sch_iter *a, *b, *c2, *d;
  if (sch_split(s, st, x, fx, &a, &b) < 0 || sch_split(s, st, y, fy, &c2, &d) < 0) return -1;
  sch_iter *order[4] = {a, c2, b, d};
  if (sch_reorder(s, st, order, 4) < 0) return -1;
  if (xo) *xo = a;
  if (yo) *yo = c2;
  if (xi) *xi = b;
  if (yi) *yi = d;
  return 0;
}

int sch_annotate(sch_schedule *s, sch_stage *st, sch_iter *it, tir_for_kind kind) {
  if (leaf_pos(st, it) < 0) return gir_errf(s->err, "annotate: %s is not a loop of stage %s", it->name, st->t->name);
  if (kind == TIR_PARALLEL && it->reduce) return gir_errf(s->err, "parallel: cannot run a reduce loop in parallel");
  it->kind = kind;
  return 0;
}

int sch_bind(sch_schedule *s, sch_stage *st, sch_iter *it, const char *tag) {
  if (leaf_pos(st, it) < 0) return gir_errf(s->err, "bind: %s is not a loop of stage %s", it->name, st->t->name);
  tir_for_kind k = tir_for_kind_of_tag(tag);
  if (k == TIR_FOR_KIND_COUNT || k == TIR_SERIAL)
    return gir_errf(s->err, "bind: '%s' is not blockIdx.x/y/z or threadIdx.x/y/z", tag ? tag : "(null)");
  /* a reduce loop bound to threadIdx.x is a cross-thread reduction (sch_lower.c's
   * allreduce); across blocks, or along y and z, its iterations could not meet */
  if (it->reduce && k != TIR_THREAD_X)
    return gir_errf(s->err, "bind: %s is a reduce loop: its iterations depend on each other (only threadIdx.x may "
                    "split a reduction, across the threads of a block)", it->name);
  it->thread_tag = tag;
  it->kind = k; /* the loop's kind in loop IR (tir.h) */
  return 0;
}

static void note_load(te_tensor *t, void *arg) {
  te_tensor **want = arg;
  if (t == want[0]) want[1] = t;
}

int sch_reads(const sch_stage *reader, const sch_stage *producer) {
  te_tensor *want[2] = {producer->t, NULL};
  te_visit_loads(reader->body, note_load, want);
  return want[1] != NULL;
}

int sch_loop_within(const sch_stage *c, const sch_iter *inner, const sch_iter *outer) {
  int i = leaf_pos(c, inner), o = leaf_pos(c, outer);
  return i >= 0 && o >= 0 && i >= o;
}

/* r is computed at the same loop as p or at one nested inside it (or, while p is
 * being attached, at some loop: the caller checks which), after it: bound
 * inference widens p's region to what r reads there, for every iteration of the
 * loops between — a panel of B packed once at the panel loop and read by the
 * register tile computed at the row loop inside it (sched_matmul.c). */
static int sibling_after(const sch_stage *r, const sch_stage *p) {
  return r->attach == SCH_AT && r->id > p->id &&
         (p->attach != SCH_AT || (r->at_stage == p->at_stage && sch_loop_within(r->at_stage, r->at_iter, p->at_iter)));
}

int sch_check_attachments(sch_schedule *s) {
  for (int i = 0; i < s->n_stages; i++) {
    sch_stage *p = s->stages[i];
    if (p->attach != SCH_AT) continue;
    for (int j = 0; j < s->n_stages; j++) {
      sch_stage *r = s->stages[j];
      if (r == p || r == p->at_stage || r->attach == SCH_INLINE || sibling_after(r, p)) continue;
      if (sch_reads(r, p))
        return gir_errf(s->err, "compute_at: %s is computed inside %s but also read by %s", p->t->name,
                        p->at_stage->t->name, r->t->name);
    }
  }
  return 0;
}

int sch_compute_at(sch_schedule *s, sch_stage *p, sch_stage *c, sch_iter *at) {
  if (leaf_pos(c, at) < 0) return gir_errf(s->err, "compute_at: %s is not a loop of stage %s", at->name, c->t->name);
  if (p->id >= c->id) return gir_errf(s->err, "compute_at: %s does not come before %s", p->t->name, c->t->name);
  if (p->is_output) return gir_errf(s->err, "compute_at: output stage %s must stay at the root", p->t->name);
  for (int j = 0; j < s->n_stages; j++) {
    sch_stage *r = s->stages[j];
    if (r != p && r != c && r->attach != SCH_INLINE &&
        !(sibling_after(r, p) && r->at_stage == c && sch_loop_within(c, r->at_iter, at)) &&
        sch_reads(r, p))
      return gir_errf(s->err, "compute_at: %s is also read by %s, which is not computed inside %s", p->t->name,
                      r->t->name, c->t->name);
  }
  p->attach = SCH_AT;
  p->at_stage = c;
  p->at_iter = at;
  return 0;
}

int sch_compute_root(sch_schedule *s, sch_stage *st) {
  (void)s;
  st->attach = SCH_ROOT;
  st->at_stage = NULL;
  st->at_iter = NULL;
  return 0;
}

int sch_set_scope(sch_schedule *s, sch_stage *st, tir_scope scope) {
  (void)s;
  st->scope = scope;
  return 0;
}

int sch_prefetch(sch_schedule *s, sch_stage *st, sch_iter *at, te_tensor *t, te_expr *index, int32_t count,
                 int64_t stride) {
  if (leaf_pos(st, at) < 0) return gir_errf(s->err, "prefetch: %s is not a loop of stage %s", at->name, st->t->name);
  if (t->kind != TE_PLACEHOLDER) return gir_errf(s->err, "prefetch: %s is not a kernel input", t->name);
  if (index->dtype != GIR_I64) return gir_errf(s->err, "prefetch: the index into %s is not int64", t->name);
  if (count < 1 || count > 64 || stride < 1) return gir_errf(s->err, "prefetch: %d lines %lld apart", count, (long long)stride);
  sch_prefetch_rec *r = gir_arena_grow(s->arena, st->prefetch, (size_t)st->n_prefetch, (size_t)st->n_prefetch + 1, sizeof *r);
  if (!r) return gir_errf(s->err, "out of memory");
  r[st->n_prefetch++] = (sch_prefetch_rec){at, t, index, count, stride};
  st->prefetch = r;
  return 0;
}

/* A load of p's tensor becomes p's body at the loaded indices. */
static te_expr *inline_load(te_ctx *c, const te_expr *ld, te_expr *const *idx, void *arg) {
  const sch_stage *p = arg;
  if (ld->u.load.t == p->t) return te_subst(c, p->body, p->t->axis, idx, p->t->rank);
  return te_load(c, ld->u.load.t, idx);
}

int sch_compute_inline(sch_schedule *s, sch_stage *st) {
  if (st->n_reduce) return gir_errf(s->err, "compute_inline: %s is a reduction", st->t->name);
  if (st->is_output) return gir_errf(s->err, "compute_inline: %s is an output", st->t->name);
  for (int i = st->id + 1; i < s->n_stages; i++) {
    sch_stage *c = s->stages[i];
    if (c->attach == SCH_INLINE) continue;
    c->body = te_rewrite_loads(s->te, c->body, inline_load, st);
  }
  st->attach = SCH_INLINE;
  return 0;
}

static void insert_stage_before(sch_schedule *s, sch_stage *nst, sch_stage *before) {
  int32_t cap = s->n_stages; /* force growth by one */
  push_stage(s, nst, &cap);
  int at = before->id;
  for (int i = s->n_stages - 1; i > at; i--) s->stages[i] = s->stages[i - 1];
  s->stages[at] = nst;
  for (int i = 0; i < s->n_stages; i++) s->stages[i]->id = i;
}

typedef struct shift_arg {
  te_tensor *from, *to;
  const int64_t *lo;
} shift_arg;

static te_expr *redirect_shifted(te_ctx *c, const te_expr *ld, te_expr *const *idx, void *arg) {
  const shift_arg *a = arg;
  if (ld->u.load.t != a->from) return te_load(c, ld->u.load.t, idx);
  te_expr *ix[GIR_MAX_RANK];
  for (int i = 0; i < a->from->rank; i++) ix[i] = a->lo[i] ? te_add(c, idx[i], te_int(c, a->lo[i])) : idx[i];
  return te_load(c, a->to, ix);
}

/* The copy of t, extended by lo[i] / hi[i] elements before / after each axis that
 * hold `value` (no extension: lo, hi NULL), made a stage before the first reader;
 * the readers' loads t[i] become copy[i + lo]. */
static sch_stage *cache_read(sch_schedule *s, te_tensor *t, tir_scope scope, const int64_t *lo, const int64_t *hi,
                             double value, sch_stage *const *readers, int32_t n) {
  te_ctx *c = s->te;
  te_var *ax[GIR_MAX_RANK];
  te_expr *idx[GIR_MAX_RANK], *ok = NULL;
  int64_t shape[GIR_MAX_RANK];
  for (int i = 0; i < t->rank; i++) shape[i] = t->shape[i] + (lo ? lo[i] + hi[i] : 0);
  te_axes(c, t->rank, shape, ax);
  for (int i = 0; i < t->rank; i++) {
    idx[i] = te_v(c, ax[i]);
    if (!lo || (!lo[i] && !hi[i])) continue;
    if (lo[i]) idx[i] = te_sub(c, idx[i], te_int(c, lo[i]));
    te_expr *in = te_in_range(c, idx[i], t->shape[i]);
    ok = ok ? te_and(c, ok, in) : in;
  }
  te_expr *body = te_load(c, t, idx);
  if (ok) body = te_select(c, ok, body, te_const(c, t->dtype, value));
  te_tensor *copy = te_compute(c, "cache", t->dtype, t->rank, shape, ax, body);
  sch_stage *nst = stage_new(s, copy, copy->body);
  nst->scope = scope;
  sch_stage *first = readers[0];
  for (int i = 1; i < n; i++)
    if (readers[i]->id < first->id) first = readers[i];
  insert_stage_before(s, nst, first);
  static const int64_t none[GIR_MAX_RANK];
  shift_arg a = {t, copy, lo ? lo : none};
  for (int i = 0; i < n; i++) readers[i]->body = te_rewrite_loads(c, readers[i]->body, redirect_shifted, &a);
  return nst;
}

sch_stage *sch_cache_read(sch_schedule *s, te_tensor *t, tir_scope scope, sch_stage *const *readers, int32_t n) {
  return cache_read(s, t, scope, NULL, NULL, 0, readers, n);
}

sch_stage *sch_cache_read_pad(sch_schedule *s, te_tensor *t, tir_scope scope, const int64_t *lo, const int64_t *hi,
                              double value, sch_stage *const *readers, int32_t n) {
  for (int i = 0; i < t->rank; i++)
    if (lo[i] < 0 || hi[i] < 0) {
      gir_errf(s->err, "cache_read_pad: negative extension of %s", t->name);
      return NULL;
    }
  return cache_read(s, t, scope, lo, hi, value, readers, n);
}

sch_stage *sch_cache_write(sch_schedule *s, sch_stage *st, tir_scope scope) {
  if (st->n_rels) {
    gir_errf(s->err, "cache_write: %s must be cached before it is split or fused", st->t->name);
    return NULL;
  }
  te_ctx *c = s->te;
  te_tensor *t = st->t;
  te_var *ax[GIR_MAX_RANK];
  te_expr *repl[GIR_MAX_RANK], *idx[GIR_MAX_RANK];
  te_axes(c, t->rank, t->shape, ax);
  for (int i = 0; i < t->rank; i++) {
    repl[i] = te_v(c, ax[i]);
    idx[i] = te_v(c, t->axis[i]);
  }
  te_expr *body = te_subst(c, st->body, t->axis, repl, t->rank);
  te_tensor *work = te_compute(c, "local", t->dtype, t->rank, t->shape, ax, body);
  work->tag = t->tag;
  work->origin = t->origin;
  sch_stage *nst = stage_new(s, work, body);
  nst->scope = scope;
  insert_stage_before(s, nst, st);
  st->body = te_load(c, work, idx);
  st->n_reduce = 0;
  st->reduce_axes = NULL;
  set_leaves_to_roots(s, st);
  return nst;
}

typedef struct flat_arg {
  te_tensor *from, *to;
  int32_t axis;
} flat_arg;

static te_expr *redirect_flat(te_ctx *c, const te_expr *ld, te_expr *const *idx, void *arg) {
  const flat_arg *a = arg;
  if (ld->u.load.t != a->from) return te_load(c, ld->u.load.t, idx);
  te_expr *ix[GIR_MAX_RANK];
  int32_t k = 0;
  for (int32_t i = 0; i < a->from->rank; i++) {
    if (i == a->axis) {
      ix[k++] = te_add(c, te_mul(c, idx[i], te_int(c, a->from->shape[i + 1])), idx[i + 1]);
      i++;
    } else
      ix[k++] = idx[i];
  }
  return te_load(c, a->to, ix);
}

sch_stage *sch_flatten(sch_schedule *s, sch_stage *st, int32_t axis) {
  te_tensor *t = st->t;
  if (st->n_rels || st->attach != SCH_ROOT || st->is_output || axis < 0 || axis + 1 >= t->rank) {
    gir_errf(s->err, "flatten: %s must be an intermediate not yet scheduled, with axes %d and %d", t->name, axis,
             axis + 1);
    return NULL;
  }
  te_ctx *c = s->te;
  int64_t B = t->shape[axis + 1], shape[GIR_MAX_RANK];
  if (t->shape[axis] > INT64_MAX / (B ? B : 1)) {
    gir_errf(s->err, "flatten: the extent of %s overflows", t->name);
    return NULL;
  }
  int32_t rank = t->rank - 1;
  for (int32_t i = 0, k = 0; i < t->rank; i++) shape[k++] = i == axis ? t->shape[i] * B : t->shape[i + (i > axis)];
  te_var *ax[GIR_MAX_RANK];
  te_axes(c, rank, shape, ax);
  te_expr *repl[GIR_MAX_RANK];
  for (int32_t i = 0; i < t->rank; i++) {
    if (i < axis) repl[i] = te_v(c, ax[i]);
    else if (i == axis) repl[i] = te_div(c, te_v(c, ax[axis]), te_int(c, B));
    else if (i == axis + 1) repl[i] = te_bin(c, TE_MOD, te_v(c, ax[axis]), te_int(c, B));
    else repl[i] = te_v(c, ax[i - 1]);
  }
  te_expr *body = te_subst(c, st->body, t->axis, repl, t->rank);
  te_tensor *flat = te_compute(c, t->name, t->dtype, rank, shape, ax, body);
  flat->tag = t->tag;
  flat->origin = t->origin;
  sch_stage *nst = stage_new(s, flat, body);
  nst->scope = st->scope;
  nst->template_name = st->template_name;
  nst->id = st->id;
  s->stages[st->id] = nst;
  flat_arg a = {t, flat, axis};
  for (int i = nst->id + 1; i < s->n_stages; i++) {
    sch_stage *r = s->stages[i];
    if (r->attach != SCH_INLINE) r->body = te_rewrite_loads(c, r->body, redirect_flat, &a);
  }
  return nst;
}

void sch_print(const sch_schedule *s, FILE *f) {
  static const char *const attach[] = {"root", "inline", "at"};
  static const char *const kinds[TIR_FOR_KIND_COUNT] = {"", " parallel", " vectorized", " unrolled", " blockIdx.x",
                                                        " blockIdx.y", " blockIdx.z", " threadIdx.x", " threadIdx.y",
                                                        " threadIdx.z"};
  for (int i = 0; i < s->n_stages; i++) {
    const sch_stage *st = s->stages[i];
    fprintf(f, "stage %d %s [%s%s%s]:", st->id, st->t->name, attach[st->attach], st->at_stage ? " " : "",
            st->at_stage ? st->at_stage->t->name : "");
    for (int k = 0; k < st->n_leaf; k++)
      fprintf(f, " %s%d(%lld%s%s)", st->leaf[k]->name, st->leaf[k]->id, (long long)st->leaf[k]->extent,
              st->leaf[k]->reduce ? " r" : "", kinds[st->leaf[k]->kind]);
    for (int k = 0; k < st->n_prefetch; k++)
      fprintf(f, " prefetch(%s at %s, %d x %lld)", st->prefetch[k].t->name, st->prefetch[k].at->name,
              st->prefetch[k].count, (long long)st->prefetch[k].stride);
    fputc('\n', f);
  }
}
