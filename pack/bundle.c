/* bundle.c — the bundle writer (see bundle.h). JSON is built with cJSON; entries
 * are written with libarchive as a ustar archive of regular files; every entry's
 * size and zlib CRC32 go into the manifest, which is written first so that a
 * reader can validate the rest as it streams. */
#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "bundle.h"

static const char *const arg_kinds[PACK_ARG_KIND_COUNT] = {"input", "output", "arena", "param"};

static cJSON *io_json(const pack_io *io, int32_t n) {
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", io[i].name);
    cJSON_AddStringToObject(o, "dtype", gir_dtype_name(io[i].dtype));
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int d = 0; d < io[i].shape.rank; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)io[i].shape.dims[d]));
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

static char *plan_json(const pack_bundle *b) {
  cJSON *root = cJSON_CreateObject();
  cJSON *ks = cJSON_AddArrayToObject(root, "kernels");
  for (int k = 0; k < b->n_calls; k++) {
    const pack_call *c = &b->calls[k];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "symbol", c->symbol);
    cJSON_AddNumberToObject(o, "flops", (double)c->flops);
    cJSON *args = cJSON_AddArrayToObject(o, "args");
    for (int i = 0; i < c->n_args; i++) {
      const pack_arg *a = &c->args[i];
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "kind", arg_kinds[a->kind]);
      if (a->kind == PACK_ARG_INPUT || a->kind == PACK_ARG_OUTPUT) cJSON_AddNumberToObject(x, "index", (double)a->index);
      else {
        cJSON_AddNumberToObject(x, "offset", (double)a->offset);
        cJSON_AddNumberToObject(x, "bytes", (double)a->bytes);
      }
      cJSON_AddItemToArray(args, x);
    }
    cJSON_AddItemToArray(ks, o);
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

static void add_entry_info(cJSON *entries, const char *name, const void *data, int64_t n) {
  char crc[16];
  uLong c = crc32(0L, Z_NULL, 0);
  const unsigned char *p = data;
  for (int64_t off = 0; off < n;) { /* crc32 takes uInt lengths */
    uInt chunk = (uInt)(n - off > (1 << 30) ? (1 << 30) : n - off);
    c = crc32(c, p + off, chunk);
    off += chunk;
  }
  snprintf(crc, sizeof crc, "%08lx", (unsigned long)c);
  cJSON *o = cJSON_AddObjectToObject(entries, name);
  cJSON_AddNumberToObject(o, "bytes", (double)n);
  cJSON_AddStringToObject(o, "crc32", crc);
}

static int write_entry(struct archive *ar, const char *name, const void *data, int64_t n, gir_err *err) {
  struct archive_entry *e = archive_entry_new();
  archive_entry_set_pathname(e, name);
  archive_entry_set_size(e, n);
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  int rc = 0;
  if (archive_write_header(ar, e) != ARCHIVE_OK) rc = gir_errf(err, "bundle: %s", archive_error_string(ar));
  for (int64_t off = 0; rc == 0 && off < n;) {
    la_ssize_t w = archive_write_data(ar, (const char *)data + off, (size_t)(n - off));
    if (w <= 0) rc = gir_errf(err, "bundle: writing %s: %s", name, archive_error_string(ar));
    else off += w;
  }
  archive_entry_free(e);
  return rc;
}

int pack_write_bundle(const char *path, const pack_bundle *b, gir_err *err) {
  char *plan = plan_json(b);
  char lib_name[128];
  snprintf(lib_name, sizeof lib_name, "lib/%s.so", b->target_name);
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "format", "kiln-bundle");
  cJSON_AddNumberToObject(m, "format_version", PACK_FORMAT_VERSION);
  cJSON_AddStringToObject(m, "model", b->model);
  cJSON_AddStringToObject(m, "compiler_version", b->compiler_version);
  cJSON *tg = cJSON_AddObjectToObject(m, "target");
  cJSON_AddStringToObject(tg, "name", b->target_name);
  cJSON_AddStringToObject(tg, "triple", b->triple);
  cJSON_AddItemToObject(m, "inputs", io_json(b->inputs, b->n_inputs));
  cJSON_AddItemToObject(m, "outputs", io_json(b->outputs, b->n_outputs));
  cJSON_AddNumberToObject(m, "arena_bytes", (double)b->arena_bytes);
  cJSON_AddNumberToObject(m, "weights_bytes", (double)b->params_bytes);
  cJSON_AddNumberToObject(m, "workspace_bytes", (double)b->workspace_bytes);
  cJSON *entries = cJSON_AddObjectToObject(m, "entries");
  add_entry_info(entries, "plan.json", plan, (int64_t)strlen(plan));
  add_entry_info(entries, "params.bin", b->params, b->params_bytes);
  add_entry_info(entries, lib_name, b->lib, b->lib_bytes);
  char *manifest = cJSON_Print(m);
  cJSON_Delete(m);

  int rc = 0;
  struct archive *ar = archive_write_new();
  archive_write_set_format_pax_restricted(ar);
  if (archive_write_open_filename(ar, path) != ARCHIVE_OK) rc = gir_errf(err, "cannot write '%s': %s", path, archive_error_string(ar));
  if (rc == 0) rc = write_entry(ar, "manifest.json", manifest, (int64_t)strlen(manifest), err);
  if (rc == 0) rc = write_entry(ar, "plan.json", plan, (int64_t)strlen(plan), err);
  if (rc == 0) rc = write_entry(ar, "params.bin", b->params, b->params_bytes, err);
  if (rc == 0) rc = write_entry(ar, lib_name, b->lib, b->lib_bytes, err);
  if (archive_write_close(ar) != ARCHIVE_OK && rc == 0) rc = gir_errf(err, "bundle: %s", archive_error_string(ar));
  archive_write_free(ar);
  free(manifest);
  free(plan);
  return rc;
}
