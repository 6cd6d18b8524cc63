/* tun_key.c — workload keys: the identity of what a tuning record is about, stable
 * across runs, processes and kiln versions that keep the op set. A key is
 * canonical text (op names, every attribute sorted by name, dtypes, shapes, which
 * inputs are constants, the target name with its vector width and register
 * count) plus its 64-bit FNV-1a hash in hex for tables and file names. Node and
 * value names, ids and arena addresses never enter it.
 *
 * A template group is keyed by its anchor alone (the conv or the matmul, as
 * AutoTVM's workloads): the epilogue fused after it (bias, activation, residual
 * add) does not change the template's space, and every ResNet block that repeats
 * a conv shape shares one task. A generic group is keyed by all its members and
 * how they are wired, since its generated space is built from all of them. */
#include <stdlib.h>
#include <string.h>
#include "tun_internal.h"

static int attr_cmp(const void *a, const void *b) {
  return strcmp((*(const gir_attr *const *)a)->name, (*(const gir_attr *const *)b)->name);
}

static void put_attrs(tun_sbuf *b, const gir_node *n) {
  const gir_attr *sorted[64];
  int m = n->n_attrs < 64 ? n->n_attrs : 64;
  for (int i = 0; i < m; i++) sorted[i] = &n->attrs[i];
  qsort(sorted, (size_t)m, sizeof sorted[0], attr_cmp);
  tun_sb_printf(b, "{");
  for (int i = 0; i < m; i++) {
    const gir_attr *a = sorted[i];
    tun_sb_printf(b, "%s%s=", i ? ";" : "", a->name);
    switch (a->kind) {
    case GIR_ATTR_INT: tun_sb_printf(b, "%lld", (long long)a->i); break;
    case GIR_ATTR_FLOAT: tun_sb_printf(b, "%.17g", a->f); break;
    case GIR_ATTR_INTS:
      for (int j = 0; j < a->n; j++) tun_sb_printf(b, "%s%lld", j ? "," : "", (long long)a->ints[j]);
      break;
    case GIR_ATTR_FLOATS:
      for (int j = 0; j < a->n; j++) tun_sb_printf(b, "%s%.17g", j ? "," : "", a->floats[j]);
      break;
    case GIR_ATTR_STRING: tun_sb_printf(b, "\"%s\"", a->s ? a->s : ""); break;
    default: tun_sb_printf(b, "?"); break;
    }
  }
  tun_sb_printf(b, "}");
}

static void put_type(tun_sbuf *b, const gir_value *v) {
  tun_sb_printf(b, "%s[", gir_dtype_name(v->dtype));
  for (int d = 0; d < v->shape.rank; d++) tun_sb_printf(b, "%s%lld", d ? "x" : "", (long long)v->shape.dims[d]);
  tun_sb_printf(b, "]%s", v->data ? "=c" : "");
}

static void put_target(tun_sbuf *b, const char *tmpl, const tun_target *t) {
  tun_sb_printf(b, "kiln-wk1;target=%s;vec=%d;regs=%d;tmpl=%s;", t->name, t->lower.vec_f32, t->lower.vec_regs, tmpl);
}

static const char *finish(gir_arena *a, tun_sbuf *b) {
  const char *s = b->oom ? NULL : gir_arena_strdup(a, b->s);
  tun_sb_free(b);
  return s;
}

const char *tun_key_template(gir_arena *a, const char *tmpl, const gir_node *n, const tun_target *t) {
  tun_sbuf b = {0};
  put_target(&b, tmpl, t);
  tun_sb_printf(&b, "op=%s", gir_op_name(n->op));
  put_attrs(&b, n);
  tun_sb_printf(&b, "(");
  for (int i = 0; i < n->n_in; i++) {
    if (i) tun_sb_printf(&b, ",");
    if (n->in[i]) put_type(&b, n->in[i]);
    else tun_sb_printf(&b, "none");
  }
  tun_sb_printf(&b, ")->");
  for (int i = 0; i < n->n_out; i++) {
    if (i) tun_sb_printf(&b, ",");
    put_type(&b, n->out[i]);
  }
  return finish(a, &b);
}

/* The member of g producing v, or -1. */
static int member_of(const tun_group *g, const gir_value *v) {
  for (int j = 0; j < g->n_nodes; j++)
    if (v && v->producer == g->nodes[j]) return j;
  return -1;
}

const char *tun_key_generic(gir_arena *a, const tun_group *g, const tun_target *t) {
  tun_sbuf b = {0};
  put_target(&b, "generic", t);
  const gir_value *ext[512];
  int n_ext = 0;
  for (int j = 0; j < g->n_nodes; j++) {
    const gir_node *n = g->nodes[j];
    tun_sb_printf(&b, "n%d=%s", j, gir_op_name(n->op));
    put_attrs(&b, n);
    tun_sb_printf(&b, "(");
    for (int i = 0; i < n->n_in; i++) {
      const gir_value *v = n->in[i];
      if (i) tun_sb_printf(&b, ",");
      if (!v) {
        tun_sb_printf(&b, "none");
        continue;
      }
      int m = member_of(g, v);
      if (m >= 0) {
        tun_sb_printf(&b, "n%d.%d", m, v->producer_slot);
        continue;
      }
      int e = 0;
      while (e < n_ext && ext[e] != v) e++;
      if (e == n_ext && n_ext < 512) ext[n_ext++] = v;
      tun_sb_printf(&b, "x%d:", e);
      put_type(&b, v);
    }
    tun_sb_printf(&b, ")->");
    for (int i = 0; i < n->n_out; i++) {
      if (i) tun_sb_printf(&b, ",");
      put_type(&b, n->out[i]);
    }
    tun_sb_printf(&b, ";");
  }
  tun_sb_printf(&b, "out=");
  for (int i = 0; i < g->n_outs; i++) {
    int m = member_of(g, g->outs[i]);
    tun_sb_printf(&b, "%sn%d.%d", i ? "," : "", m, g->outs[i]->producer_slot);
  }
  return finish(a, &b);
}

void tun_key_hash(const char *key, char out[17]) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

const gir_node *tun_group_anchor(const tun_group *g) {
  for (int j = 0; j < g->n_nodes; j++)
    if (gir_op_category(g->nodes[j]->op) != GIR_INJECTIVE) return g->nodes[j];
  return g->nodes[g->n_nodes - 1];
}
