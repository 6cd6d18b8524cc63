/* plan.c — from kernels to a runnable plan (see plan.h). Lifetimes are counted in
 * kernel steps: an intermediate lives from the kernel that writes it to the last
 * kernel that reads it; a kernel's workspace lives during that kernel only. Graph
 * inputs and outputs are the runtime's buffers, constants go to params.bin (each
 * 64-byte aligned, each stored once however many kernels read it). Two kinds of
 * kernel move no bytes and are dropped: re-views (a reshape, or a slice that is
 * one contiguous byte range of its input at a 64-byte aligned offset: the leading
 * part of an LSTM step's state [h; c], a channel split at batch 1), and concats whose
 * inputs are consecutive ranges of their output, whose producers then write
 * straight into the concat's storage. A graph output that re-views a whole
 * intermediate gets that intermediate's writer writing its buffer, no copy.
 * A kernel of an If branch (lower_kernel.guard) runs only when its conditions
 * hold: the call lists where each bool lives ("when"); a condition that became a
 * constant decides at compile time (a branch never taken has no calls), and the
 * condition's storage lives until the branch's last kernel. A skipped kernel
 * writes nothing: only kernels of its branch read what it writes, and the where
 * that selects the If's output, which then reads the other branch's value. */
#include <string.h>
#include "plan.h"

typedef struct loc {
  pack_arg_kind kind;
  int64_t index, offset, bytes; /* arena values: offset within their memplan tensor */
  int32_t tensor; /* memplan index for arena values, -1 otherwise */
} loc;

/* Whether n's output holds its input's bytes in the same order: a reshape, or a
 * relayout between plain NCHW and whole channel blocks of a 1x1 image. */
static int is_view_node(const gir_node *n) {
  if (n->op == GIR_OP_reshape) return n->in[0]->dtype == n->out[0]->dtype;
  if (n->op != GIR_OP_relayout) return 0;
  const gir_shape *x = &n->in[0]->shape;
  int64_t src = gir_attr_int(n, "src", 0), dst = gir_attr_int(n, "dst", 0);
  return (src == 0 || dst == 0) && x->dims[2] * x->dims[3] == 1 &&
         gir_value_numel(n->in[0]) == gir_value_numel(n->out[0]);
}

/* The byte offset in its input of a slice whose output is one contiguous range
 * of that input (unit steps; the axes after the first one it cuts are whole, the
 * axes before it have size 1 in the output), else -1. */
static int64_t range_slice_offset(const gir_node *n) {
  if (n->op != GIR_OP_slice) return -1;
  const gir_shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int32_t ns = 0, np = 0;
  const int64_t *st = gir_attr_ints(n, "starts", &ns), *sp = gir_attr_ints(n, "steps", &np);
  if (!st || !sp || ns != x->rank || np != x->rank || y->rank != x->rank) return -1;
  int cut = -1; /* the last axis the slice does not take whole */
  for (int d = 0; d < x->rank; d++)
    if (y->dims[d] != x->dims[d]) cut = d;
  int64_t lin = 0;
  for (int d = 0; d < x->rank; d++) {
    if (sp[d] != 1 && y->dims[d] > 1) return -1;
    if (d < cut && y->dims[d] != 1) return -1;
    if (y->dims[d] > 0 && (st[d] < 0 || st[d] + y->dims[d] > x->dims[d])) return -1;
    lin = lin * x->dims[d] + (y->dims[d] > 0 ? st[d] : 0);
  }
  return lin * (int64_t)gir_dtype_size(n->in[0]->dtype);
}

/* Whether kernel kr only re-views its one input (a chain of view nodes and
 * range slices): the byte offset of its output in its input, else -1. */
static int64_t view_kernel_offset(const lower_kernel *kr) {
  if (kr->n_in != 1 || kr->n_out != 1 || kr->n_ws != 0 || !kr->node || kr->node->out[0] != kr->out[0]) return -1;
  const gir_node *n = kr->node;
  int64_t off = 0;
  for (int depth = 0; depth < 16; depth++) {
    int64_t o = range_slice_offset(n);
    if (o < 0 && !is_view_node(n)) return -1;
    if (o > 0) off += o;
    if (n->in[0] == kr->in[0])
      return off % PACK_ALIGN == 0 && off + gir_value_nbytes(kr->out[0]) <= gir_value_nbytes(kr->in[0]) ? off : -1;
    if (!(n = n->in[0]->producer)) return -1;
  }
  return -1;
}

/* Whether kernel kr is one concat whose inputs are consecutive byte ranges of its
 * output (only unit dims before the axis: a channel concat at batch 1, in NCHW or
 * NCHW[x]c), each at a 64-byte aligned offset (kernels assume aligned buffers). */
static int is_range_concat(const lower_kernel *kr) {
  const gir_node *n = kr->node;
  if (!n || n->op != GIR_OP_concat || kr->n_out != 1 || kr->n_ws || kr->out[0] != n->out[0] || kr->n_in != n->n_in)
    return 0;
  int64_t axis = gir_attr_int(n, "axis", 0), off = 0;
  const gir_shape *s = &n->out[0]->shape;
  if (axis < 0) axis += s->rank;
  for (int64_t d = 0; d < axis; d++)
    if (s->dims[d] != 1) return 0;
  for (int i = 0; i < n->n_in; i++) {
    if (kr->in[i] != n->in[i] || off % PACK_ALIGN) return 0;
    for (int j = 0; j < i; j++)
      if (n->in[j] == n->in[i]) return 0;
    off += gir_value_nbytes(n->in[i]);
  }
  return off == gir_value_nbytes(n->out[0]);
}

/* The kernel that writes each value (-1: none), or NULL out of memory. */
static int32_t *writers(const gir_graph *g, const lower_program *p, gir_arena *a) {
  int32_t *writer = gir_arena_calloc(a, (size_t)g->n_values + 1, sizeof *writer);
  if (!writer) return NULL;
  for (int i = 0; i < g->n_values; i++) writer[i] = -1;
  for (int k = 0; k < p->n_kernels; k++)
    for (int i = 0; i < p->kernels[k].n_out; i++) writer[p->kernels[k].out[i]->id] = k;
  return writer;
}

/* Concat elision: for each value that a dropped concat takes in, the concat's
 * output (into[]) and the byte offset there (at[]). A concat is dropped when
 * its output is an intermediate and each input is an intermediate that a kernel
 * other than a view writes (or a dropped concat: nested concats nest their
 * storage, DenseNet's chains) and that no earlier dropped concat took: a value
 * lives in one place. Other readers of an input read it inside the concat's
 * storage, which lives as long as any part of it is read. */
static void elide_concats(const lower_program *p, const int32_t *writer, const char *view, const loc *where,
                          char *elided, const gir_value **into, int64_t *at) {
  for (int k = 0; k < p->n_kernels; k++) {
    const lower_kernel *kr = &p->kernels[k];
    if (!is_range_concat(kr) || where[kr->out[0]->id].kind != PACK_ARG_KIND_COUNT) continue;
    int ok = 1;
    for (int i = 0; i < kr->n_in && ok; i++) {
      const gir_value *v = kr->in[i];
      int32_t w = writer[v->id];
      ok = where[v->id].kind == PACK_ARG_KIND_COUNT && !into[v->id] && w >= 0 && !view[w];
    }
    if (!ok) continue;
    elided[k] = 1;
    int64_t off = 0;
    for (int i = 0; i < kr->n_in; i++) {
      into[kr->in[i]->id] = kr->out[0];
      at[kr->in[i]->id] = off;
      off += gir_value_nbytes(kr->in[i]);
    }
  }
}

/* A graph output that re-views a whole intermediate (a conv in NCHW1c, viewed as
 * NCHW at the end): the intermediate is placed in the output's buffer, so its
 * writer writes the output and the view moves no bytes, where it would copy the
 * output. Only where the intermediate is one no other output took, a kernel that is
 * no view writes it, and neither kernel lies in an If branch (a view skipped with
 * its branch would leave the output to the where that selects it). */
static void alias_outputs(const lower_program *p, const int32_t *writer, char *view, const int64_t *view_off,
                          loc *where) {
  for (int k = 0; k < p->n_kernels; k++) {
    const lower_kernel *kr = &p->kernels[k];
    if (view_off[k] != 0 || kr->guard || kr->out[0]->extent || where[kr->out[0]->id].kind != PACK_ARG_OUTPUT) continue;
    const gir_value *v = kr->in[0];
    int32_t w = writer[v->id];
    if (where[v->id].kind != PACK_ARG_KIND_COUNT || w < 0 || w >= k || view[w] || p->kernels[w].guard ||
        gir_value_nbytes(v) != gir_value_nbytes(kr->out[0]))
      continue;
    where[v->id] = where[kr->out[0]->id];
    view[k] = 1;
  }
}

/* The memplan tensors, growing. */
typedef struct tensors {
  pack_tensor *t;
  int32_t n, cap;
  gir_arena *a;
} tensors;

/* A new tensor of `bytes` alive at step k: its index, or -1 out of memory. */
static int32_t new_tensor(tensors *ts, int64_t bytes, int k) {
  if (ts->n == ts->cap) {
    pack_tensor *grown = gir_arena_grow(ts->a, ts->t, (size_t)ts->n, (size_t)ts->cap * 2, sizeof *ts->t);
    if (!grown) return -1;
    ts->t = grown;
    ts->cap *= 2;
  }
  ts->t[ts->n] = (pack_tensor){.bytes = bytes, .first = k, .last = k};
  return ts->n++;
}

/* Gives v (written at step k) its storage: inside the dropped concat that takes
 * it (placing that one first), else a memplan tensor of its own. */
static int place(const gir_value *v, int k, loc *where, const gir_value **into, const int64_t *at, tensors *ts) {
  if (where[v->id].kind != PACK_ARG_KIND_COUNT) return 0;
  const gir_value *o = into[v->id];
  if (o) {
    if (place(o, k, where, into, at, ts) < 0) return -1;
    where[v->id] = (loc){PACK_ARG_ARENA, 0, where[o->id].offset + at[v->id], gir_value_nbytes(v), where[o->id].tensor};
    return 0;
  }
  int32_t i = new_tensor(ts, gir_value_nbytes(v), k);
  if (i < 0) return -1;
  where[v->id] = (loc){PACK_ARG_ARENA, 0, 0, gir_value_nbytes(v), i};
  return 0;
}

int pack_build_plan(const gir_graph *g, const lower_program *p, gir_arena *a, pack_plan *out, gir_err *err) {
  memset(out, 0, sizeof *out);
  loc *where = gir_arena_calloc(a, (size_t)g->n_values + 1, sizeof *where);
  if (!where) return gir_errf(err, "plan: out of memory");
  for (int i = 0; i < g->n_values; i++) where[i].tensor = -1, where[i].kind = PACK_ARG_KIND_COUNT;
  for (int i = 0; i < g->n_inputs; i++) where[g->inputs[i]->id] = (loc){PACK_ARG_INPUT, i, 0, gir_value_nbytes(g->inputs[i]), -1};
  for (int i = 0; i < g->n_outputs; i++) where[g->outputs[i]->id] = (loc){PACK_ARG_OUTPUT, i, 0, gir_value_nbytes(g->outputs[i]), -1};

  /* constants read by kernels (or, an output's constant extent, by the runtime) → params.bin */
  int64_t pbytes = 0;
  for (int k = 0; k <= p->n_kernels; k++)
    for (int i = 0; i < (k < p->n_kernels ? p->kernels[k].n_in : g->n_outputs); i++) {
      const gir_value *v = k < p->n_kernels ? p->kernels[k].in[i] : g->outputs[i]->extent;
      if (!v || !v->data || where[v->id].kind != PACK_ARG_KIND_COUNT) continue;
      int64_t nb = gir_value_nbytes(v);
      where[v->id] = (loc){PACK_ARG_PARAM, 0, pbytes, nb, -1};
      pbytes += (nb + PACK_ALIGN - 1) & ~(int64_t)(PACK_ALIGN - 1);
    }
  out->params = gir_arena_alloc(a, (size_t)(pbytes ? pbytes : 1));
  out->params_bytes = pbytes;
  for (int i = 0; i < g->n_values; i++)
    if (where[i].kind == PACK_ARG_PARAM) memcpy((char *)out->params + where[i].offset, g->values[i]->data, (size_t)where[i].bytes);

  /* a kernel that only re-views its input (a reshape between two complex ops,
   * which keep it out of both their groups) moves no bytes: its output is its
   * input's storage, and the call is dropped */
  char *view = gir_arena_calloc(a, (size_t)p->n_kernels + 1, 1);
  int64_t *view_off = gir_arena_calloc(a, (size_t)p->n_kernels + 1, sizeof *view_off);
  if (!view || !view_off) return gir_errf(err, "plan: out of memory");
  for (int k = 0; k < p->n_kernels; k++) {
    const lower_kernel *kr = &p->kernels[k];
    view_off[k] = view_kernel_offset(kr);
    view[k] = view_off[k] >= 0 && where[kr->out[0]->id].kind == PACK_ARG_KIND_COUNT;
  }
  const int32_t *writer = writers(g, p, a);
  if (!writer) return gir_errf(err, "plan: out of memory");
  alias_outputs(p, writer, view, view_off, where);
  char *elided = gir_arena_calloc(a, (size_t)p->n_kernels + 1, 1);
  const gir_value **into = gir_arena_calloc(a, (size_t)g->n_values + 1, sizeof *into);
  int64_t *at = gir_arena_calloc(a, (size_t)g->n_values + 1, sizeof *at);
  if (!view || !elided || !into || !at) return gir_errf(err, "plan: out of memory");
  elide_concats(p, writer, view, where, elided, into, at);
  /* intermediates and workspace → memplan tensors */
  tensors ts = {.t = gir_arena_calloc(a, 64, sizeof(pack_tensor)), .cap = 64, .a = a};
  int32_t **ws_tensor = gir_arena_calloc(a, (size_t)p->n_kernels + 1, sizeof *ws_tensor);
  if (!ts.t || !ws_tensor) return gir_errf(err, "plan: out of memory");
  for (int k = 0; k < p->n_kernels; k++) {
    const lower_kernel *kr = &p->kernels[k];
    const loc *src = view[k] ? &where[kr->in[0]->id] : NULL;
    /* inputs and outputs are whole buffers: a view inside one must start at it */
    if (src && src->kind != PACK_ARG_KIND_COUNT &&
        (view_off[k] == 0 || src->kind == PACK_ARG_ARENA || src->kind == PACK_ARG_PARAM)) {
      where[kr->out[0]->id] = *src;
      where[kr->out[0]->id].offset += view_off[k];
      where[kr->out[0]->id].bytes = gir_value_nbytes(kr->out[0]);
      ws_tensor[k] = NULL;
      continue;
    }
    view[k] = 0;
    if (elided[k]) { /* its inputs' writers made its output's tensor */
      ws_tensor[k] = NULL;
      continue;
    }
    for (int i = 0; i < kr->n_out; i++)
      if (place(kr->out[i], k, where, into, at, &ts) < 0) return gir_errf(err, "plan: out of memory");
    ws_tensor[k] = gir_arena_calloc(a, (size_t)kr->n_ws + 1, sizeof **ws_tensor);
    if (!ws_tensor[k]) return gir_errf(err, "plan: out of memory");
    for (int i = 0; i < kr->n_ws; i++)
      if ((ws_tensor[k][i] = new_tensor(&ts, kr->ws_bytes[i], k)) < 0) return gir_errf(err, "plan: out of memory");
  }
  pack_tensor *t = ts.t;
  int32_t nt = ts.n;
  /* extend lifetimes to the last reader (an If's condition: to the last kernel of its branches) */
  for (int k = 0; k < p->n_kernels; k++) {
    for (int i = 0; i < p->kernels[k].n_in; i++) {
      const loc *l = &where[p->kernels[k].in[i]->id];
      if (l->kind == PACK_ARG_KIND_COUNT)
        return gir_errf(err, "plan: kernel %s reads %s, which nothing produces", p->kernels[k].fn->name, p->kernels[k].in[i]->name);
      if (l->tensor >= 0 && t[l->tensor].last < k) t[l->tensor].last = k;
    }
    for (const gir_guard *d = p->kernels[k].guard; d; d = d->parent) {
      const loc *l = &where[d->cond->id];
      if (d->cond->data) continue; /* decided here (below) */
      if (l->kind == PACK_ARG_KIND_COUNT)
        return gir_errf(err, "plan: kernel %s runs under %s, whose condition nothing produces", p->kernels[k].fn->name, d->what);
      if (l->tensor >= 0 && t[l->tensor].last < k) t[l->tensor].last = k;
    }
  }
  /* an output's actual extent is read after the run: it lives to the end */
  for (int i = 0; i < g->n_outputs; i++) {
    const gir_value *e = g->outputs[i]->extent;
    if (!e) continue;
    const loc *l = &where[e->id];
    if (l->kind == PACK_ARG_KIND_COUNT) return gir_errf(err, "plan: nothing computes the extent of output %s", g->outputs[i]->name);
    if (l->tensor >= 0) t[l->tensor].last = p->n_kernels;
  }
  if (pack_plan_memory(t, nt, &out->mem, err) < 0) return -1;
  out->out_extent = gir_arena_calloc(a, (size_t)g->n_outputs + 1, sizeof *out->out_extent);
  if (!out->out_extent) return gir_errf(err, "plan: out of memory");
  for (int i = 0; i < g->n_outputs; i++) {
    const gir_value *e = g->outputs[i]->extent;
    out->out_extent[i].kind = PACK_ARG_KIND_COUNT;
    if (!e) continue;
    const loc *l = &where[e->id];
    out->out_extent[i] = (pack_arg){l->kind, l->index, l->kind == PACK_ARG_ARENA ? t[l->tensor].offset + l->offset : l->offset,
                                    gir_value_nbytes(e)};
  }
  for (int k = 0; k < p->n_kernels; k++) {
    int64_t ws = 0;
    for (int i = 0; i < p->kernels[k].n_ws; i++) ws += p->kernels[k].ws_bytes[i];
    if (ws > out->workspace_bytes) out->workspace_bytes = ws;
  }

  /* calls */
  out->calls = gir_arena_calloc(a, (size_t)p->n_kernels + 1, sizeof *out->calls);
  for (int k = 0; k < p->n_kernels; k++) {
    const lower_kernel *kr = &p->kernels[k];
    if (view[k] || elided[k]) continue;
    /* its conditions: a constant one (folded after import) is decided now */
    int n_when = 0, never = 0;
    for (const gir_guard *d = kr->guard; d; d = d->parent)
      if (!d->cond->data) n_when++;
      else never |= (*(const uint8_t *)d->cond->data != 0) != d->when;
    if (never) continue;
    pack_call *c = &out->calls[out->n_calls++];
    if (n_when) {
      pack_arg *w = gir_arena_calloc(a, (size_t)n_when, sizeof *w);
      uint8_t *is = gir_arena_calloc(a, (size_t)n_when, 1);
      if (!w || !is) return gir_errf(err, "plan: out of memory");
      int j = 0;
      for (const gir_guard *d = kr->guard; d; d = d->parent) {
        if (d->cond->data) continue;
        const loc *l = &where[d->cond->id];
        w[j] = (pack_arg){l->kind, l->index, l->kind == PACK_ARG_ARENA ? t[l->tensor].offset + l->offset : l->offset, 1};
        is[j++] = d->when;
      }
      c->n_when = n_when;
      c->when = w;
      c->when_is = is;
    }
    c->fail = kr->trap;
    c->name = kr->fn->name;
    c->symbol = kr->fn->name;
    c->flops = kr->flops;
    c->n_checks = kr->n_checks;
    c->checks = kr->checks;
    c->n_args = kr->n_in + kr->n_out + kr->n_ws;
    c->args = gir_arena_calloc(a, (size_t)c->n_args + 1, sizeof *c->args);
    int j = 0;
    for (int i = 0; i < kr->n_in + kr->n_out; i++) {
      const gir_value *v = i < kr->n_in ? kr->in[i] : kr->out[i - kr->n_in];
      const loc *l = &where[v->id];
      pack_arg *x = &c->args[j++];
      x->kind = l->kind;
      x->index = l->index;
      x->bytes = l->bytes;
      x->offset = l->kind == PACK_ARG_ARENA ? t[l->tensor].offset + l->offset : l->offset;
    }
    for (int i = 0; i < kr->n_ws; i++)
      c->args[j++] = (pack_arg){PACK_ARG_ARENA, 0, t[ws_tensor[k][i]].offset, kr->ws_bytes[i]};
  }
  return 0;
}
