/* compare.c — checking a computed tensor against a reference TensorProto file:
 * floats by |a - b| <= atol + rtol * |b| with NaN positions (and infinities)
 * matching exactly; integers and bools exactly. Used by `kiln interpret` and the
 * conformance runner. */
#include <math.h>
#include <stdio.h>
#include "cli.h"
#include "tensorfile.h"

int cli_compare_output(const gir_value *v, const void *data, const char *dir, int i, double rtol, double atol,
                       gir_arena *a) {
  char path[4096], b1[160], b2[160];
  snprintf(path, sizeof path, "%s/output_%d.pb", dir, i);
  imp_tensor t;
  gir_err err = {{0}};
  if (imp_read_tensor_file(path, a, &t, &err) < 0) {
    printf("  output %s: no reference (%s)\n", v->name, err.msg);
    return -1;
  }
  if (t.dtype != v->dtype || !gir_shape_equal(&t.shape, &v->shape)) {
    printf("  output %s: kiln %s[%s], expected %s[%s]: MISMATCH\n", v->name, gir_dtype_name(v->dtype),
           gir_shape_str(&v->shape, b1, sizeof b1), gir_dtype_name(t.dtype), gir_shape_str(&t.shape, b2, sizeof b2));
    return 0;
  }
  int64_t n = gir_value_numel(v), bad = 0, first = -1;
  double worst = 0;
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
