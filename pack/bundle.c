/* bundle.c — the bundle writer (see bundle.h). JSON is built with cJSON; entries
 * are written with libarchive as a ustar archive of regular files; every entry's
 * size and zlib CRC32 go into the manifest, which is written first so that a
 * reader can validate the rest as it streams. */
#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "bundle.h"

static const char *const arg_kinds[PACK_ARG_KIND_COUNT] = {"input", "output", "arena", "param"};

static cJSON *arg_json(const pack_arg *a) {
  cJSON *x = cJSON_CreateObject();
  cJSON_AddStringToObject(x, "kind", arg_kinds[a->kind]);
  if (a->kind == PACK_ARG_INPUT || a->kind == PACK_ARG_OUTPUT) cJSON_AddNumberToObject(x, "index", (double)a->index);
  else {
    cJSON_AddNumberToObject(x, "offset", (double)a->offset);
    cJSON_AddNumberToObject(x, "bytes", (double)a->bytes);
  }
  return x;
}

static cJSON *io_json(const pack_io *io, int32_t n) {
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", io[i].name);
    cJSON_AddStringToObject(o, "dtype", gir_dtype_name(io[i].dtype));
    if (io[i].string_bytes) cJSON_AddNumberToObject(o, "string_bytes", io[i].string_bytes);
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int d = 0; d < io[i].shape.rank; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)io[i].shape.dims[d]));
    if (io[i].values == PACK_VALUES_RANGE) {
      cJSON *r = cJSON_AddArrayToObject(o, "range");
      cJSON_AddItemToArray(r, cJSON_CreateNumber((double)io[i].lo));
      cJSON_AddItemToArray(r, cJSON_CreateNumber((double)io[i].hi));
    } else if (io[i].values == PACK_VALUES_GIVEN)
      cJSON_AddStringToObject(o, "random", "none");
    if (io[i].has_extent) { /* a data-dependent size along one axis */
      cJSON *e = cJSON_AddObjectToObject(o, "extent");
      cJSON_AddNumberToObject(e, "axis", io[i].extent_axis);
      cJSON_AddItemToObject(e, "arg", arg_json(&io[i].extent));
    }
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}


/* The format version b needs: 4 when an input or output is a string tensor, 3 when
 * a call is conditional or a trap or an output has a data-dependent extent, else 2. */
static int format_version(const pack_bundle *b) {
  for (int i = 0; i < b->n_inputs + b->n_outputs; i++)
    if ((i < b->n_inputs ? b->inputs[i] : b->outputs[i - b->n_inputs]).string_bytes) return PACK_FORMAT_VERSION_STRINGS;
  for (int k = 0; k < b->n_calls; k++)
    if (b->calls[k].n_when || b->calls[k].fail) return PACK_FORMAT_VERSION_GUARDS;
  for (int i = 0; i < b->n_outputs; i++)
    if (b->outputs[i].has_extent) return PACK_FORMAT_VERSION_GUARDS;
  return PACK_FORMAT_VERSION;
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
    for (int i = 0; i < c->n_args; i++) cJSON_AddItemToArray(args, arg_json(&c->args[i]));
    if (c->n_launches > 0) { /* a GPU kernel's launches, each its entry point and geometry */
      cJSON *ls = cJSON_AddArrayToObject(o, "launches");
      for (int j = 0; j < c->n_launches; j++) {
        const pack_launch *l = &c->launches[j];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "symbol", l->symbol);
        cJSON *gd = cJSON_AddArrayToObject(x, "grid"), *bd = cJSON_AddArrayToObject(x, "block");
        for (int d = 0; d < 3; d++) {
          cJSON_AddItemToArray(gd, cJSON_CreateNumber((double)l->grid[d]));
          cJSON_AddItemToArray(bd, cJSON_CreateNumber((double)l->block[d]));
        }
        cJSON_AddItemToArray(ls, x);
      }
    }
    if (c->n_when > 0) { /* the If branch it belongs to: run only when each bool holds the value */
      cJSON *ws = cJSON_AddArrayToObject(o, "when");
      for (int j = 0; j < c->n_when; j++) {
        cJSON *x = arg_json(&c->when[j]);
        cJSON_AddBoolToObject(x, "is", c->when_is[j]);
        cJSON_AddItemToArray(ws, x);
      }
    }
    if (c->fail) cJSON_AddStringToObject(o, "fail", c->fail);
    if (c->n_checks > 0) { /* what the kernel's run-time check j is about, for the runtime's message */
      cJSON *cs = cJSON_AddArrayToObject(o, "checks");
      for (int j = 0; j < c->n_checks; j++) cJSON_AddItemToArray(cs, cJSON_CreateString(c->checks[j]));
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

/* manifest.json and plan.json of b, malloc'ed (cJSON_free), with lib_name set. */
static int build_texts(const pack_bundle *b, char **manifest, char **plan, char lib_name[128], gir_err *err) {
  *manifest = NULL;
  *plan = plan_json(b);
  snprintf(lib_name, 128, "lib/%s.%s", b->target_name, b->gpu_sm > 0 ? "ptx" : "so");
  char src_name[128];
  snprintf(src_name, sizeof src_name, "src/%s.c", b->target_name);
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "format", "kiln-bundle");
  cJSON_AddNumberToObject(m, "format_version", format_version(b));
  cJSON_AddStringToObject(m, "model", b->model);
  cJSON_AddStringToObject(m, "compiler_version", b->compiler_version);
  cJSON *tg = cJSON_AddObjectToObject(m, "target");
  cJSON_AddStringToObject(tg, "name", b->target_name);
  cJSON_AddStringToObject(tg, "triple", b->triple);
  if (b->gpu_sm > 0) cJSON_AddNumberToObject(tg, "sm", b->gpu_sm);
  if (b->cpu_features && *b->cpu_features) { /* the runtime refuses the bundle on a CPU that lacks one */
    cJSON *fs = cJSON_AddArrayToObject(tg, "features");
    for (const char *p = b->cpu_features; *p;) {
      size_t n = strcspn(p, ",");
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
      cJSON_AddItemToArray(fs, cJSON_CreateString(name));
      p += n + (p[n] == ',');
    }
  }
  cJSON_AddItemToObject(m, "inputs", io_json(b->inputs, b->n_inputs));
  cJSON_AddItemToObject(m, "outputs", io_json(b->outputs, b->n_outputs));
  cJSON_AddNumberToObject(m, "arena_bytes", (double)b->arena_bytes);
  cJSON_AddNumberToObject(m, "weights_bytes", (double)b->params_bytes);
  cJSON_AddNumberToObject(m, "workspace_bytes", (double)b->workspace_bytes);
  cJSON *entries = cJSON_AddObjectToObject(m, "entries");
  if (*plan) add_entry_info(entries, "plan.json", *plan, (int64_t)strlen(*plan));
  add_entry_info(entries, "params.bin", b->params, b->params_bytes);
  add_entry_info(entries, lib_name, b->lib, b->lib_bytes);
  if (b->source) add_entry_info(entries, src_name, b->source, b->source_bytes);
  *manifest = cJSON_Print(m);
  cJSON_Delete(m);
  if (!*manifest || !*plan) {
    cJSON_free(*manifest);
    cJSON_free(*plan);
    *manifest = *plan = NULL;
    return gir_errf(err, "bundle: out of memory");
  }
  return 0;
}

/* Where the archive's bytes go: a file descriptor (path names it in messages) or
 * a growing block in memory. libarchive calls sink_write; the first failure is
 * kept in err (with errno's reason for files). */
typedef struct sink {
  int fd;               /* -1: memory */
  const char *path;
  unsigned char *data;  /* memory */
  size_t size, cap;
  gir_err *err;
  int failed;
} sink;

static la_ssize_t sink_fail(sink *s, const char *why) {
  gir_errf(s->err, "%s", why); /* the first message wins: later ones from libarchive are dropped */
  s->failed = 1;
  return -1;
}

static la_ssize_t sink_write(struct archive *ar, void *client, const void *buf, size_t n) {
  (void)ar;
  sink *s = client;
  if (s->fd >= 0) {
    for (size_t done = 0; done < n;) {
      ssize_t w = write(s->fd, (const char *)buf + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        char why[4200];
        snprintf(why, sizeof why, "cannot write '%s': %s", s->path, w < 0 ? strerror(errno) : "short write");
        return sink_fail(s, why);
      }
      done += (size_t)w;
    }
    return (la_ssize_t)n;
  }
  if (n > s->cap - s->size) {
    if (n > SIZE_MAX - s->size) return sink_fail(s, "bundle: larger than this address space");
    size_t need = s->size + n, cap = s->cap ? s->cap : (size_t)1 << 16;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    unsigned char *d = realloc(s->data, cap);
    if (!d) return sink_fail(s, "bundle: out of memory");
    s->data = d;
    s->cap = cap;
  }
  memcpy(s->data + s->size, buf, n);
  s->size += n;
  return (la_ssize_t)n;
}

/* The one writer behind both entry points: the four entries (five with the C
 * target's source), manifest first. */
static int write_archive(sink *s, const pack_bundle *b, gir_err *err) {
  char *manifest, *plan, lib_name[128];
  if (build_texts(b, &manifest, &plan, lib_name, err) < 0) return -1;
  int rc = 0;
  struct archive *ar = archive_write_new();
  if (!ar) rc = gir_errf(err, "bundle: out of memory");
  if (rc == 0) {
    archive_write_set_format_pax_restricted(ar);
    archive_write_set_bytes_in_last_block(ar, 1); /* no padding to a whole 10 KiB block at the end */
    if (archive_write_open2(ar, s, NULL, sink_write, NULL, NULL) != ARCHIVE_OK)
      rc = gir_errf(err, "bundle: %s", archive_error_string(ar));
  }
  if (rc == 0) rc = write_entry(ar, "manifest.json", manifest, (int64_t)strlen(manifest), err);
  if (rc == 0) rc = write_entry(ar, "plan.json", plan, (int64_t)strlen(plan), err);
  if (rc == 0) rc = write_entry(ar, "params.bin", b->params, b->params_bytes, err);
  if (rc == 0) rc = write_entry(ar, lib_name, b->lib, b->lib_bytes, err);
  if (rc == 0 && b->source) { /* the C target: the source lib/<target>.so was compiled from */
    char src_name[128];
    snprintf(src_name, sizeof src_name, "src/%s.c", b->target_name);
    rc = write_entry(ar, src_name, b->source, b->source_bytes, err);
  }
  if (ar && archive_write_close(ar) != ARCHIVE_OK && rc == 0)
    rc = gir_errf(err, "bundle: %s", archive_error_string(ar));
  if (ar) archive_write_free(ar);
  if (s->failed) rc = -1;
  cJSON_free(manifest);
  cJSON_free(plan);
  return rc;
}

int pack_write_bundle(const char *path, const pack_bundle *b, gir_err *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return gir_errf(err, "cannot write '%s': %s", path, strerror(errno));
  struct stat st;
  int regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode); /* not /dev/null, a FIFO… */
  sink s = {.fd = fd, .path = path, .err = err};
  int rc = write_archive(&s, b, err);
  if (close(fd) != 0 && rc == 0) rc = gir_errf(err, "cannot write '%s': %s", path, strerror(errno));
  if (rc < 0 && regular) unlink(path); /* no half-written bundle left behind (never a device's name) */
  return rc;
}

int pack_bundle_to_memory(const pack_bundle *b, void **data, size_t *size, gir_err *err) {
  sink s = {.fd = -1, .path = "memory", .err = err};
  *data = NULL;
  *size = 0;
  if (write_archive(&s, b, err) < 0) {
    free(s.data);
    return -1;
  }
  *data = s.data;
  *size = s.size;
  return 0;
}

int pack_print_bundle(FILE *f, const pack_bundle *b, gir_err *err) {
  char *manifest, *plan, lib_name[128];
  if (build_texts(b, &manifest, &plan, lib_name, err) < 0) return -1;
  fprintf(f, "bundle entries (a tar archive, in this order):\n");
  fprintf(f, "  %-24s %12zu bytes\n", "manifest.json", strlen(manifest));
  fprintf(f, "  %-24s %12zu bytes  (%d kernel calls)\n", "plan.json", strlen(plan), b->n_calls);
  fprintf(f, "  %-24s %12lld bytes\n", "params.bin", (long long)b->params_bytes);
  fprintf(f, "  %-24s %12lld bytes  (%s)\n", lib_name, (long long)b->lib_bytes, b->triple);
  if (b->source) {
    char src_name[128];
    snprintf(src_name, sizeof src_name, "src/%s.c", b->target_name);
    fprintf(f, "  %-24s %12lld bytes  (the C source of the library)\n", src_name, (long long)b->source_bytes);
  }
  fprintf(f, "manifest.json:\n%s\n", manifest);
  cJSON_free(manifest);
  cJSON_free(plan);
  return 0;
}
