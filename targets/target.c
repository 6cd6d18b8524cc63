/* target.c — the backend table and the helpers every backend shares (see
 * target.h). Adding a backend is one row here plus its constructor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "target.h"

static const struct {
  const char *name;
  tgt_backend *(*make)(const tgt_options *opt, gir_err *err);
} backends[] = {
    {"llvm", tgt_llvm_backend_new},
    {"c", tgt_c_backend_new},
};

tgt_backend *tgt_backend_new(const char *name, const tgt_options *opt, gir_err *err) {
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (name && !strcmp(name, backends[i].name)) return backends[i].make(opt, err);
  gir_errf(err, "unknown backend '%s'", name ? name : "(null)");
  return NULL;
}

void tgt_backend_free(tgt_backend *b) {
  if (b) b->destroy(b);
}

int tgt_emit_file(const tgt_backend *b, const tgt_artifact *a, tgt_output what, const char *path, gir_err *err) {
  void *data;
  size_t n;
  if (b->emit(b, a, what, &data, &n, err) < 0) return -1;
  FILE *f = fopen(path, "wb");
  if (!f) {
    free(data);
    return gir_errf(err, "cannot create %s", path);
  }
  int rc = fwrite(data, 1, n, f) == n ? 0 : gir_errf(err, "cannot write %s", path);
  if (fclose(f) != 0 && rc == 0) rc = gir_errf(err, "cannot write %s", path);
  free(data);
  return rc;
}
