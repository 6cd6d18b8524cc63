/* tensorfile.c — TensorProto files → imp_tensor, reusing the importer's checked
 * tensor decoding (tensor.c) through a scratch graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctx.h"
#include "tensorfile.h"

int imp_read_tensor_file(const char *path, gir_arena *a, imp_tensor *out, gir_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return gir_errf(err, "cannot open '%s'", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (n < 0 || n > (1l << 31)) {
    fclose(f);
    return gir_errf(err, "'%s': bad size", path);
  }
  uint8_t *buf = malloc((size_t)n + 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf || got != (size_t)n) {
    free(buf);
    return gir_errf(err, "cannot read '%s'", path);
  }
  Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, (size_t)n, buf);
  free(buf);
  if (!t) return gir_errf(err, "'%s' is not a TensorProto", path);
  gir_graph *g = gir_graph_new("tensorfile");
  imp_ctx c = {.g = g, .err = err};
  gir_value *v = g ? imp_tensor_to_const(&c, t, path) : NULL;
  int rc = -1;
  if (v) {
    int64_t nb = gir_value_nbytes(v);
    out->name = gir_arena_strdup(a, t->name ? t->name : "");
    out->dtype = v->dtype;
    out->shape = v->shape;
    out->data = gir_arena_alloc(a, (size_t)nb);
    if (out->data) {
      memcpy(out->data, v->data, (size_t)nb);
      rc = 0;
    }
  }
  gir_graph_free(g);
  onnx__tensor_proto__free_unpacked(t, NULL);
  return rc;
}
