/* gpu_launch.c — cutting a kernel's loop IR into GPU launches (gpu_launch.h).
 * parts() returns the launch bodies a statement splits into: a statement without
 * grid work is not a launch by itself (it is replayed before the ones after it),
 * a sequence cuts between its children with grid work, and allocate / let / if
 * statements are repeated around every part of their body. */
#include <stdio.h>
#include <string.h>
#include "gpu_launch.h"

typedef struct list {
  tir_stmt **s;
  int32_t n, cap;
} list;

typedef struct cutter {
  tir_builder *b;
  gir_err *err;
  int failed;
} cutter;

static void push(cutter *c, list *l, tir_stmt *s) {
  if (l->n == l->cap) {
    int32_t cap = l->cap ? 2 * l->cap : 8;
    tir_stmt **ns = gir_arena_calloc(c->b->arena, (size_t)cap, sizeof *ns);
    if (!ns) {
      c->failed = 1;
      return;
    }
    if (l->n) memcpy(ns, l->s, sizeof *ns * (size_t)l->n);
    l->s = ns;
    l->cap = cap;
  }
  l->s[l->n++] = s;
}

static int grid_work(const tir_stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
  case TIR_FOR: return tir_for_kind_is_gpu(s->u.loop.kind) || grid_work(s->u.loop.body);
  case TIR_LET: return grid_work(s->u.let.body);
  case TIR_IF: return grid_work(s->u.ifs.then_s) || grid_work(s->u.ifs.else_s);
  case TIR_STORE: return s->u.store.buf->scope == TIR_GLOBAL;
  case TIR_WMMA: return s->u.wmma.op == TIR_WMMA_STORE && s->u.wmma.mem->scope == TIR_GLOBAL;
  case TIR_ALLOCATE: return grid_work(s->u.alloc.body);
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++)
      if (grid_work(s->u.seq.s[i])) return 1;
    return 0;
  default: return 0;
  }
}

static list parts(cutter *c, tir_stmt *s);

static list parts_seq(cutter *c, tir_stmt *s) {
  list out = {0}, prefix = {0};
  int32_t last = -1;
  for (int32_t i = 0; i < s->u.seq.n; i++)
    if (grid_work(s->u.seq.s[i])) last = i;
  for (int32_t i = 0; i < s->u.seq.n; i++) {
    tir_stmt *x = s->u.seq.s[i];
    if (!grid_work(x)) {
      if (last >= 0 && i > last && out.n) out.s[out.n - 1] = tir_seq2(c->b, out.s[out.n - 1], x); /* trailing: the last launch */
      else push(c, &prefix, x);
      continue;
    }
    list sub = parts(c, x);
    for (int32_t k = 0; k < sub.n; k++) {
      push(c, &prefix, sub.s[k]);
      push(c, &out, tir_seq(c->b, prefix.s, prefix.n));
      prefix.n--;
    }
  }
  if (!out.n) push(c, &out, s);
  return out;
}

static list parts(cutter *c, tir_stmt *s) {
  list out = {0};
  if (c->failed) return out;
  if (!grid_work(s)) {
    push(c, &out, s);
    return out;
  }
  switch (s->kind) {
  case TIR_SEQ: return parts_seq(c, s);
  case TIR_ALLOCATE: {
    list sub = parts(c, s->u.alloc.body);
    for (int32_t k = 0; k < sub.n; k++) push(c, &out, tir_allocate(c->b, s->u.alloc.buf, sub.s[k]));
    return out;
  }
  case TIR_LET: {
    list sub = parts(c, s->u.let.body);
    for (int32_t k = 0; k < sub.n; k++) push(c, &out, tir_let(c->b, s->u.let.var, s->u.let.value, sub.s[k]));
    return out;
  }
  case TIR_IF: {
    list t = parts(c, s->u.ifs.then_s), e = s->u.ifs.else_s ? parts(c, s->u.ifs.else_s) : (list){0};
    int32_t n = t.n > e.n ? t.n : e.n;
    for (int32_t k = 0; k < n; k++)
      push(c, &out, tir_if(c->b, s->u.ifs.cond, k < t.n ? t.s[k] : tir_seq(c->b, NULL, 0), k < e.n ? e.s[k] : NULL));
    return out;
  }
  default: push(c, &out, s); return out; /* a loop (bound or not) or a store: one launch */
  }
}

static void measure(cutter *c, const tir_stmt *s, int64_t dims[6], const char *kernel) {
  if (!s || c->failed) return;
  switch (s->kind) {
  case TIR_FOR:
    if (tir_for_kind_is_gpu(s->u.loop.kind)) {
      const tir_expr *e = s->u.loop.extent;
      if (e->kind != TIR_INT || e->u.i < 1) {
        c->failed = 1;
        gir_errf(c->err, "kernel %s: loop %s is bound to the GPU grid but its extent is not a positive constant", kernel,
                 s->u.loop.var->name);
        return;
      }
      int d = (int)s->u.loop.kind - TIR_BLOCK_X;
      if (e->u.i > dims[d]) dims[d] = e->u.i;
    }
    measure(c, s->u.loop.body, dims, kernel);
    return;
  case TIR_LET: measure(c, s->u.let.body, dims, kernel); return;
  case TIR_IF:
    measure(c, s->u.ifs.then_s, dims, kernel);
    measure(c, s->u.ifs.else_s, dims, kernel);
    return;
  case TIR_ALLOCATE: measure(c, s->u.alloc.body, dims, kernel); return;
  case TIR_SEQ:
    for (int32_t i = 0; i < s->u.seq.n; i++) measure(c, s->u.seq.s[i], dims, kernel);
    return;
  default: return;
  }
}

int tir_gpu_launches(tir_builder *b, const tir_func *f, tir_gpu_launch **out, int32_t *n, gir_err *err) {
  cutter c = {b, err, 0};
  list l = parts(&c, f->body);
  if (c.failed) return gir_errf(err, "kernel %s: out of memory", f->name);
  if (l.n > TIR_GPU_MAX_LAUNCHES)
    return gir_errf(err, "kernel %s needs %d GPU launches (at most %d)", f->name, l.n, TIR_GPU_MAX_LAUNCHES);
  tir_gpu_launch *ls = gir_arena_calloc(b->arena, (size_t)l.n + 1, sizeof *ls);
  if (!ls) return gir_errf(err, "out of memory");
  for (int32_t i = 0; i < l.n; i++) {
    ls[i].body = l.s[i];
    for (int d = 0; d < 6; d++) ls[i].dims[d] = 1;
    measure(&c, l.s[i], ls[i].dims, f->name);
    if (c.failed) return -1;
    int64_t *d = ls[i].dims;
    if (d[3] * d[4] * d[5] > TIR_GPU_MAX_THREADS || d[5] > 64)
      return gir_errf(err, "kernel %s, launch %d: a block of %lld x %lld x %lld threads (at most %d, z at most 64)", f->name,
                      i, (long long)d[3], (long long)d[4], (long long)d[5], TIR_GPU_MAX_THREADS);
    if (d[0] > 2147483647LL || d[1] > 65535 || d[2] > 65535)
      return gir_errf(err, "kernel %s, launch %d: a grid of %lld x %lld x %lld blocks is too large", f->name, i,
                      (long long)d[0], (long long)d[1], (long long)d[2]);
  }
  *out = ls;
  *n = l.n;
  return 0;
}

const char *tir_gpu_launch_symbol(const char *kernel, int32_t i, char *buf, size_t size) {
  snprintf(buf, size, "%s_l%d", kernel, i);
  return buf;
}
