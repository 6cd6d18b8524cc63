/* load.c — the importer's entry points: read the file (bounded at 2 GiB), pre-scan
 * the wire format (wire.c), decode with protobuf-c, pick the ai.onnx opset, import
 * the main graph, then drop folded and dead nodes and verify the result. Also the
 * --input-shape parser and the report's lifetime. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ctx.h"
#include "function.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "raw_data is little-endian; big-endian hosts need byte swaps");

void imp_report_init(imp_report *r) {
  memset(r, 0, sizeof *r);
  r->arena = gir_arena_new();
}

void imp_report_free(imp_report *r) {
  if (r) gir_arena_free(r->arena);
}

static int64_t default_opset(const Onnx__ModelProto *m, gir_err *err) {
  int64_t v = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    if (o && (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))) v = o->version;
  }
  if (v < 0) /* pre-opset models (IR < 3) mean opset 1; otherwise only other domains may be used */
    return m->n_opset_import == 0 && m->has_ir_version && m->ir_version < 3 ? 1 : 0;
  if (v < 1) return gir_errf(err, "invalid ai.onnx opset version %lld", (long long)v);
  if (v > IMP_MAX_OPSET)
    return gir_errf(err, "ai.onnx opset %lld is newer than kiln supports (up to %d)", (long long)v, IMP_MAX_OPSET);
  return v;
}

/* Messages quote names taken from the file; a newline or escape in one must not
 * break the one-line contract or the user's terminal. */
static void one_line(gir_err *err) {
  for (char *p = err->msg; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
}

static gir_graph *load_buffer(const void *data, size_t n, const char *base_dir, const imp_options *opt,
                              imp_report *rep, gir_err *err) {
  if (n == 0) {
    gir_errf(err, "the file is empty (not an ONNX model)");
    return NULL;
  }
  if ((int64_t)n > IMP_MAX_FILE_BYTES) {
    gir_errf(err, "model is %zu bytes, above the 2 GiB limit", n);
    return NULL;
  }
  if (imp_wire_check(data, n, err) < 0) return NULL;
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, data);
  if (!m) {
    gir_errf(err, "malformed ONNX file: protobuf decoding failed");
    return NULL;
  }
  gir_graph *g = NULL;
  int64_t opset = default_opset(m, err);
  if (opset < 0) goto out;
  if (!m->graph) {
    gir_errf(err, "the model has no graph");
    goto out;
  }
  g = gir_graph_new(m->graph->name);
  if (!g) {
    gir_errf(err, "out of memory");
    goto out;
  }
  g->ir_version = m->has_ir_version ? m->ir_version : 0;
  g->producer = gir_arena_strdup(g->arena, m->producer_name ? m->producer_name : "");
  g->opsets = gir_arena_calloc(g->arena, m->n_opset_import + 1, sizeof *g->opsets);
  for (size_t i = 0; i < m->n_opset_import; i++)
    if (m->opset_import[i]) {
      g->opsets[g->n_opsets].domain = gir_arena_strdup(g->arena, m->opset_import[i]->domain ? m->opset_import[i]->domain : "");
      g->opsets[g->n_opsets++].version = m->opset_import[i]->version;
    }
  imp_report own;
  if (!rep) { /* unsupported ops must still fail the import: keep a report of our own */
    imp_report_init(&own);
    rep = &own;
  }
  rep->ir_version = g->ir_version;
  imp_ctx c = {.g = g, .err = err, .opt = opt, .rep = rep, .base_dir = base_dir, .model = m, .opset = opset};
  int rc = !imp_scope_push(&c) ? gir_errf(err, "out of memory")
           : imp_check_functions(&c, m->graph) < 0 ? -1
           : imp_import_graph(&c, m->graph, 1);
  if (rc == 0 && rep->n_unsupported) {
    const imp_unsupported *u = &rep->unsupported[0];
    rc = gir_errf(err, "%d unsupported op%s; first: %s%s%s (opset %lld) at node '%s': %s", rep->n_unsupported,
                  rep->n_unsupported > 1 ? "s" : "", u->domain[0] ? u->domain : "", u->domain[0] ? "." : "",
                  u->op_type, (long long)u->opset, u->node_name, u->reason);
  }
  if (rep == &own) imp_report_free(&own);
  if (rc == 0) {
    gir_graph_compact(g);
    rc = gir_verify(g, err);
  }
  if (rc < 0) {
    gir_graph_free(g);
    g = NULL;
  }
out:
  onnx__model_proto__free_unpacked(m, NULL);
  return g;
}

gir_graph *imp_load_buffer(const void *data, size_t n, const char *base_dir, const imp_options *opt,
                           imp_report *rep, gir_err *err) {
  gir_graph *g = load_buffer(data, n, base_dir, opt, rep, err);
  if (!g) {
    if (!err->msg[0]) gir_errf(err, "import failed (no reason given: a bug in kiln)");
    one_line(err);
  }
  return g;
}

/* Reads a whole regular file. O_NONBLOCK: opening a FIFO must not wait for a writer. */
static void *read_file(const char *path, size_t *n, gir_err *err) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return gir_errf(err, "cannot open '%s': %s", path, strerror(errno)), NULL;
  struct stat st;
  void *buf = NULL;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) gir_errf(err, "'%s' is not a regular file", path);
  else if (st.st_size > IMP_MAX_FILE_BYTES)
    gir_errf(err, "'%s' is %lld bytes, above the 2 GiB limit", path, (long long)st.st_size);
  else if (!(buf = malloc(st.st_size ? (size_t)st.st_size : 1)))
    gir_errf(err, "'%s': out of memory", path);
  size_t done = 0;
  while (buf && done < (size_t)st.st_size) {
    ssize_t r = read(fd, (char *)buf + done, (size_t)st.st_size - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      gir_errf(err, "cannot read '%s': %s", path, r < 0 ? strerror(errno) : "the file shrank while being read");
      free(buf);
      buf = NULL;
    } else
      done += (size_t)r;
  }
  close(fd);
  *n = done;
  return buf;
}

gir_graph *imp_load_file(const char *path, const imp_options *opt, imp_report *rep, gir_err *err) {
  size_t n;
  void *buf = read_file(path, &n, err);
  gir_graph *g = NULL;
  if (buf) {
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    const char *base = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    g = imp_load_buffer(buf, n, base, opt, rep, err);
    if (!g) gir_err_prefix(err, "%s", path);
    free(dir);
    free(buf);
  }
  if (!g) one_line(err);
  return g;
}

int imp_parse_input_shape(const char *spec, imp_input_shape *out, gir_err *err) {
  const char *colon = strrchr(spec, ':');
  if (!colon || colon == spec) return gir_errf(err, "--input-shape '%s': expected NAME:DIMS, e.g. data:1x3x224x224", spec);
  memset(out, 0, sizeof *out);
  if ((size_t)(colon - spec) >= sizeof out->name) return gir_errf(err, "--input-shape '%s': name too long", spec);
  memcpy(out->name, spec, (size_t)(colon - spec));
  const char *p = colon + 1;
  if (!*p) return gir_errf(err, "--input-shape '%s': no dims", spec);
  while (*p) {
    if (out->rank == GIR_MAX_RANK) return gir_errf(err, "--input-shape '%s': more than %d dims", spec, GIR_MAX_RANK);
    char *end;
    errno = 0;
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0 || errno) return gir_errf(err, "--input-shape '%s': bad dimension", spec);
    out->dims[out->rank++] = d;
    p = end;
    if (*p == 'x' || *p == ',') {
      p++;
      if (!*p) return gir_errf(err, "--input-shape '%s': a dimension is missing after the last separator", spec);
    } else if (*p)
      return gir_errf(err, "--input-shape '%s': bad separator '%c'", spec, *p);
  }
  return 0;
}
