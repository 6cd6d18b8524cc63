/* index_checks.c — run-time checks of indices that come from a model's inputs.
 *
 * Gather, GatherElements, GatherND, ScatterElements and ScatterND read an index
 * tensor and use its values as coordinates of another tensor. When those values
 * come from the model's inputs (token ids, say) they are untrusted data: ONNX
 * allows [-n, n) on the indexed axis and anything else must be an error, never
 * a read or write out of bounds nor a silently wrong result.
 *
 * Constant indices are checked here, at compile time, and cost nothing at run
 * time. Every other index tensor is a kernel input (fusion never fuses the
 * producer of an index operand into its consumer: fusion/partition.c), and the
 * kernel gets a prologue, before any of its work:
 *
 *     bad = false
 *     for e in indices: bad |= idx[e] < -n(e) || idx[e] >= n(e)    (one pass, vectorizable)
 *     if bad: for e in indices: if out of range: fail(check, idx[e], -n(e), n(e))
 *     else:   the kernel's work
 *
 * so a kernel with a bad index writes nothing and returns non-zero, after
 * ctx->fail has named the first bad value (runtime/kiln_abi.h). Check j of a
 * kernel is described by k->checks[j] (the ONNX node and the index tensor), which
 * the plan carries to the runtime for its message. The scan reads the indices
 * once more, which is small next to what a gather moves (an embedding lookup reads
 * a row of the table per index). */
#include <string.h>
#include "lower.h"

/* What indexes what: element e of the index tensor is component e % q of a
 * coordinate, checked against dims[e % q]. */
typedef struct index_use {
  const gir_value *indices;
  int64_t q;
  int64_t dims[GIR_MAX_RANK];
} index_use;

static int index_use_of(const gir_node *n, index_use *u) {
  const gir_value *d = n->n_in > 0 ? n->in[0] : NULL, *ix = n->n_in > 1 ? n->in[1] : NULL;
  if (!d || !ix) return 0;
  int r = d->shape.rank;
  int64_t axis = gir_attr_int(n, "axis", 0);
  if (axis < 0) axis += r;
  memset(u, 0, sizeof *u);
  u->indices = ix;
  switch (n->op) {
  case GIR_OP_gather: case GIR_OP_gather_elements: case GIR_OP_scatter_elements:
    if (axis < 0 || axis >= r) return 0;
    u->q = 1;
    u->dims[0] = d->shape.dims[axis];
    return 1;
  case GIR_OP_gather_nd: case GIR_OP_scatter_nd: {
    int64_t b = n->op == GIR_OP_gather_nd ? gir_attr_int(n, "batch_dims", 0) : 0;
    if (ix->shape.rank < 1) return 0;
    u->q = ix->shape.dims[ix->shape.rank - 1];
    if (u->q < 1 || b < 0 || b + u->q > r) return 0;
    for (int64_t k = 0; k < u->q; k++) u->dims[k] = d->shape.dims[b + k];
    return 1;
  }
  default: return 0;
  }
}

/* "Gather 'g' (opset 13), indices 'ids'" */
static const char *describe(gir_arena *a, const gir_node *n, const gir_value *ix) {
  return gir_arena_printf(a, "%s, indices '%s'", n->origin ? n->origin : n->name, ix->name);
}

static int check_constant(const index_use *u, gir_err *err) {
  int64_t count = gir_value_numel(u->indices);
  for (int64_t e = 0; e < count; e++) {
    int64_t v = gir_load_i64(u->indices->dtype, u->indices->data, e), dim = u->dims[e % u->q];
    if (v < -dim || v >= dim)
      return gir_errf(err, "index %lld in '%s' is out of range [%lld, %lld]", (long long)v, u->indices->name,
                      (long long)-dim, (long long)dim - 1);
  }
  return 0;
}

/* The index value idx[row * q + k] as int64. */
static tir_expr *index_at(tir_builder *b, tir_buffer *buf, tir_var *row, int64_t q, int64_t k) {
  tir_expr *e = tir_bin(b, TE_ADD, tir_bin(b, TE_MUL, tir_var_ref(b, row), tir_i64(b, q)), tir_i64(b, k));
  tir_expr *v = tir_load(b, buf, e);
  return v->dtype == GIR_I64 ? v : tir_cast(b, GIR_I64, v);
}

/* 1 if every value of integer type t lies in [-dim, dim): nothing to check (a table
 * of 256 entries indexed by uint8 bytes: QLinearSoftmax's exp table). */
static int always_inside(gir_dtype t, int64_t dim) {
  switch (t) {
  case GIR_U8: return dim >= 256;
  case GIR_I8: return dim >= 128;
  case GIR_U16: return dim >= 65536;
  case GIR_I16: return dim >= 32768;
  default: return 0;
  }
}

static tir_expr *outside(tir_builder *b, tir_expr *v, int64_t dim) {
  return tir_bin(b, TE_OR, tir_bin(b, TE_LT, v, tir_i64(b, -dim)), tir_bin(b, TE_GE, v, tir_i64(b, dim)));
}

int lower_index_checks(tir_builder *b, const gir_node *const *nodes, int32_t n_nodes, lower_kernel *k, gir_err *err) {
  gir_arena *a = b->arena;
  k->n_checks = 0;
  k->checks = NULL;
  tir_buffer *bad = NULL;
  tir_stmt *scan = NULL, *report = NULL;
  for (int32_t j = 0; j < n_nodes; j++) {
    const gir_node *n = nodes[j];
    index_use u;
    if (!index_use_of(n, &u) || gir_value_numel(u.indices) == 0) continue;
    if (u.indices->data) {
      if (check_constant(&u, err) < 0) return gir_err_prefix(err, "%s", n->origin ? n->origin : n->name);
      continue;
    }
    int inside = 1;
    for (int64_t q = 0; q < u.q; q++) inside &= always_inside(u.indices->dtype, u.dims[q]);
    if (inside) continue;
    tir_buffer *buf = NULL;
    for (int32_t i = 0; i < k->n_in; i++)
      if (k->in[i] == u.indices) buf = k->fn->params[i];
    if (!buf || !gir_dtype_is_int(buf->dtype))
      return gir_errf(err, "%s: its indices '%s' must be an integer input of kernel %s to be checked",
                      n->origin ? n->origin : n->name, u.indices->name, k->fn->name);
    if (!bad) bad = tir_buffer_new(b, "index_bad", GIR_BOOL, 1, TIR_LOCAL, -1);
    int32_t check = k->n_checks;
    k->checks = gir_arena_grow(a, k->checks, (size_t)check, (size_t)check + 1, sizeof *k->checks);
    k->checks[k->n_checks++] = describe(a, n, u.indices);
    int64_t rows = gir_value_numel(u.indices) / u.q;
    tir_var *r1 = tir_var_new(b, "ci", GIR_I64), *r2 = tir_var_new(b, "ci", GIR_I64);
    tir_stmt *s1 = NULL, *s2 = NULL;
    for (int64_t q = 0; q < u.q; q++) {
      tir_expr *acc = tir_bin(b, TE_OR, tir_load(b, bad, tir_i64(b, 0)), outside(b, index_at(b, buf, r1, u.q, q), u.dims[q]));
      s1 = tir_seq2(b, s1, tir_store(b, bad, tir_i64(b, 0), acc));
      tir_expr *v = index_at(b, buf, r2, u.q, q);
      tir_stmt *f = tir_fail(b, check, v, tir_i64(b, -u.dims[q]), tir_i64(b, u.dims[q]));
      s2 = tir_seq2(b, s2, tir_if(b, outside(b, v, u.dims[q]), f, NULL));
    }
    scan = tir_seq2(b, scan, tir_for(b, r1, tir_i64(b, 0), tir_i64(b, rows), u.q == 1 ? TIR_VECTORIZED : TIR_SERIAL, s1));
    report = tir_seq2(b, report, tir_for(b, r2, tir_i64(b, 0), tir_i64(b, rows), TIR_SERIAL, s2));
  }
  if (!bad) return 0;
  tir_stmt *init = tir_store(b, bad, tir_i64(b, 0), tir_int(b, GIR_BOOL, 0));
  tir_stmt *guarded = tir_if(b, tir_load(b, bad, tir_i64(b, 0)), report, k->fn->body);
  k->fn->body = tir_allocate(b, bad, tir_seq2(b, tir_seq2(b, init, scan), guarded));
  k->fn->n_vars = b->next_var;
  k->fn->n_buffers = b->next_buffer;
  return 0;
}
