/* compare.c — checking a computed tensor against a reference TensorProto file:
 * floats by |a - b| <= atol + rtol * |b| with NaN positions (and infinities)
 * matching exactly; integers and bools exactly. Used by `kiln interpret` and the
 * conformance runner. A reference file may hold a sequence or an optional: its
 * tensors are then matched with the kiln outputs named after it (importer.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "tensorfile.h"

int cli_compare_ref(const cli_output *v, const imp_tensor *ref, double rtol, double atol) {
  char b1[160], b2[160];
  const void *data = v->data;
  imp_tensor t = *ref;
  if (t.dtype != v->dtype || !gir_shape_equal(&t.shape, &v->shape)) {
    printf("  output %s: kiln %s[%s], expected %s[%s]: MISMATCH\n", v->name, gir_dtype_name(v->dtype),
           gir_shape_str(&v->shape, b1, sizeof b1), gir_dtype_name(t.dtype), gir_shape_str(&t.shape, b2, sizeof b2));
    return 0;
  }
  int64_t n = gir_shape_numel(&v->shape, NULL), bad = 0, first = -1;
  double worst = 0;
  if (v->dtype == GIR_STRING) { /* slots against the reference's strings, byte for byte */
    const imp_string *want = t.data;
    const uint8_t *slots = data;
    int64_t w = v->string_bytes;
    for (int64_t k = 0; k < n && w >= 8 && slots; k++) {
      const uint8_t *s = slots + k * w;
      int64_t len = (int64_t)((uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24);
      if (len > w - 4 || len != want[k].len || (len && memcmp(s + 4, want[k].bytes, (size_t)len))) {
        if (bad++ == 0) first = k;
        if (bad == 1)
          printf("  output %s: element %lld is '%.*s' (%lld bytes), expected '%.*s': MISMATCH\n", v->name,
                 (long long)k, (int)(len > w - 4 ? 0 : len), (const char *)s + 4, (long long)len,
                 (int)(want[k].len > 200 ? 200 : want[k].len), (const char *)want[k].bytes);
      }
    }
    if (bad || w < 8) {
      if (w < 8) printf("  output %s: no string slots: MISMATCH\n", v->name);
      return 0;
    }
    printf("  output %s: string[%s] matches\n", v->name, gir_shape_str(&v->shape, b1, sizeof b1));
    return 1;
  }
  for (int64_t k = 0; k < n; k++) {
    int ok;
    if (gir_dtype_is_float(v->dtype)) {
      double x = gir_load_f64(v->dtype, data, k), y = gir_load_f64(t.dtype, t.data, k);
      if (isnan(x) || isnan(y)) ok = isnan(x) && isnan(y);
      else if (isinf(x) || isinf(y)) ok = x == y;
      else {
        double d = fabs(x - y);
        ok = d <= atol + rtol * fabs(y);
        if (d > worst) worst = d;
      }
    } else {
      int64_t x = gir_load_i64(v->dtype, data, k), y = gir_load_i64(t.dtype, t.data, k);
      ok = x == y;
      double d = fabs((double)x - (double)y);
      if (d > worst) worst = d;
    }
    if (!ok && bad++ == 0) first = k;
  }
  if (bad) {
    double x = gir_load_f64(v->dtype, data, first), y = gir_load_f64(t.dtype, t.data, first);
    printf("  output %s: %lld of %lld elements differ (first at %lld: %.9g vs %.9g; max abs diff %.3g): MISMATCH\n",
           v->name, (long long)bad, (long long)n, (long long)first, x, y, worst);
    return 0;
  }
  printf("  output %s: %s[%s] matches (max abs diff %.3g)\n", v->name, gir_dtype_name(v->dtype),
         gir_shape_str(&v->shape, b1, sizeof b1), worst);
  return 1;
}

/* Whether kiln output `name` is one of the tensors of ONNX output `base`: base
 * itself, or base.K (importer.h). */
static int belongs(const char *name, const char *base) {
  size_t n = strlen(base);
  if (strncmp(name, base, n)) return 0;
  if (!name[n]) return 1;
  if (name[n] != '.' || !name[n + 1]) return 0;
  for (const char *p = name + n + 1; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

int cli_output_refs(const cli_output *outs, int n_outs, const char *dir, gir_arena *a, imp_tensor *refs) {
  int o = 0, bad = 0;
  for (int i = 0; i < n_outs; i++) refs[i] = (imp_tensor){0};
  for (int i = 0;; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/output_%d.pb", dir, i);
    FILE *f = fopen(path, "rb");
    if (!f) break;
    fclose(f);
    imp_known_input r;
    gir_err err = {{0}};
    if (imp_read_value_file(path, a, &r, &err) < 0) {
      printf("  output %s: no reference (%s)\n", o < n_outs ? outs[o].name : "?", err.msg);
      o++;
      continue;
    }
    if (!r.is_list) {
      if (o < n_outs)
        refs[o] = (imp_tensor){.name = r.name, .dtype = r.dtype, .shape = r.shape, .data = (void *)r.data};
      else
        printf("  output %d (%s): kiln has no such output: MISMATCH\n", i, r.name), bad++;
      o++;
      continue;
    }
    /* a sequence, or an optional: its tensors are the next kiln outputs */
    const imp_known_input *l = r.n_items == 1 && r.items[0].is_list ? &r.items[0] : &r;
    int cnt = 0;
    if (r.name[0])
      while (o + cnt < n_outs && belongs(outs[o + cnt].name, r.name)) cnt++;
    else
      cnt = l->n_items < n_outs - o ? l->n_items : n_outs - o;
    int nested = 0;
    for (int k = 0; k < l->n_items; k++) nested |= l->items[k].is_list;
    if (cnt != l->n_items || nested) {
      printf("  output %s: kiln yields %d tensors, expected %s of %d%s: MISMATCH\n", r.name[0] ? r.name : "?", cnt,
             r.n_items == 1 && l == &r ? "one value (or a sequence)" : "a sequence", l->n_items,
             nested ? " sequences" : "");
      o += cnt, bad++;
      continue;
    }
    if (!cnt) printf("  output %s: empty (no value, or a sequence of length 0): matches\n", r.name);
    for (int k = 0; k < cnt; k++, o++) {
      const imp_known_input *e = &l->items[k];
      refs[o] = (imp_tensor){.name = r.name, .dtype = e->dtype, .shape = e->shape, .data = (void *)e->data};
    }
  }
  for (; o < n_outs; o++) printf("  output %s: no reference (no output file for it)\n", outs[o].name);
  return bad;
}

int cli_bind_test_inputs(const gir_graph *g, const cli_import *ci, const void **inputs, gir_err *err) {
  for (int i = 0; i < g->n_inputs; i++) {
    const imp_known_input *k = imp_known_find(&ci->opt, g->inputs[i]->name); /* also NAME.K of a sequence */
    inputs[i] = k ? k->data : NULL;
    int element = k != NULL; /* of a sequence or an optional: its shape was not bound by --input-shape */
    for (int j = 0; j < ci->opt.n_known; j++) element &= k != &ci->known[j];
    if (element && (k->dtype != g->inputs[i]->dtype || !gir_shape_equal(&k->shape, &g->inputs[i]->shape))) {
      char b1[160], b2[160];
      return gir_errf(err, "the test data for input '%s' is %s[%s], the input %s[%s]", g->inputs[i]->name,
                      gir_dtype_name(k->dtype), gir_shape_str(&k->shape, b1, sizeof b1),
                      gir_dtype_name(g->inputs[i]->dtype), gir_shape_str(&g->inputs[i]->shape, b2, sizeof b2));
    }
    if (!inputs[i]) return gir_errf(err, "no test data for input '%s'", g->inputs[i]->name);
  }
  return 0;
}

cli_output *cli_graph_outputs(const gir_graph *g, void *const *data, gir_arena *a) {
  cli_output *outs = gir_arena_calloc(a, (size_t)g->n_outputs + 1, sizeof *outs);
  for (int i = 0; outs && i < g->n_outputs; i++)
    outs[i] = (cli_output){g->outputs[i]->name, g->outputs[i]->dtype, g->outputs[i]->shape, data ? data[i] : NULL, 0};
  return outs;
}

/* atol_scale > 0 adds atol_scale × max |reference| to a float output's atol: a sum of
 * many terms that nearly cancel is exact to a few ulps of the terms, not of the result,
 * so a target that rounds otherwise than the reference (no FMA) needs that much. */
static double max_abs(const imp_tensor *t) {
  double m = 0;
  int64_t n = gir_shape_numel(&t->shape, NULL);
  for (int64_t k = 0; k < n && gir_dtype_is_float(t->dtype); k++) {
    double v = fabs(gir_load_f64(t->dtype, t->data, k));
    if (v > m && !isinf(v)) m = v;
  }
  return m;
}

int cli_compare_test_outputs(const cli_output *outs, int n_outs, const char *dir, double atol_scale, gir_arena *a) {
  int rc = 0;
  imp_tensor *refs = gir_arena_calloc(a, (size_t)n_outs + 1, sizeof *refs);
  if (!refs) return 1;
  if (cli_output_refs(outs, n_outs, dir, a, refs)) rc = 1; /* sequences and optionals: one reference per element */
  for (int i = 0; i < n_outs; i++) {
    gir_dtype t = outs[i].dtype;
    int loose = t == GIR_F16 || t == GIR_BF16, exact = gir_dtype_is_f8(t); /* float8/float4: rounded conversions */
    double rtol = exact ? 0 : loose ? 1e-2 : 1e-3, atol = exact ? 0 : loose ? 1e-3 : 1e-5;
    if (atol_scale > 0 && !exact && refs[i].name) atol += atol_scale * max_abs(&refs[i]);
    if (!refs[i].name || cli_compare_ref(&outs[i], &refs[i], rtol, atol) != 1) rc = 1;
  }
  return rc;
}
