/* tensorfile.c — test-data files → values: TensorProto files → imp_tensor, reusing
 * the importer's checked tensor decoding (tensor.c) through a scratch graph; and
 * SequenceProto / OptionalProto files → lists of such tensors.
 *
 * The generated protobuf code knows onnx.proto only, and SequenceProto and
 * OptionalProto live in onnx-data.proto, so those two are read here from the wire
 * format directly. They share it: name = 1, elem_type = 2, tensors = 3 (a
 * sequence's elements, an optional's value), sequences = 5 (a sequence's
 * sequences, an optional's sequence). A file alone therefore cannot say which of
 * the two it holds; it becomes a list (imp_known_input.is_list) of tensors or of
 * lists, and the importer reads it by the type the model declares.
 * A string tensor is read as imp_string elements (importer.h), not slots: the
 * slot size is the model's, not the file's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctx.h"
#include "tensorfile.h"

#define MAX_LIST_DEPTH 4

/* Decodes one TensorProto; 0 or -1 with a message in err. */
static int decode_tensor(const uint8_t *buf, size_t n, const char *label, gir_arena *a, imp_tensor *out,
                         gir_err *err) {
  Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, n, buf);
  if (!t) return gir_errf(err, "'%s' is not a TensorProto", label);
  gir_graph *g = gir_graph_new("tensorfile");
  imp_ctx c = {.g = g, .err = err};
  int rc = -1;
  if (g && t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__STRING) { /* strings: imp_string elements, any slot size */
    imp_string *s;
    if (imp_tensor_strings(&c, t, label, a, &out->shape, &s) == 0) {
      out->name = gir_arena_strdup(a, t->name ? t->name : "");
      out->dtype = GIR_STRING;
      out->data = s;
      rc = 0;
    }
    gir_graph_free(g);
    onnx__tensor_proto__free_unpacked(t, NULL);
    return rc;
  }
  gir_value *v = g ? imp_tensor_to_const(&c, t, label) : NULL;
  if (!g) gir_errf(err, "out of memory");
  if (v) {
    int64_t nb = gir_value_nbytes(v);
    out->name = gir_arena_strdup(a, t->name ? t->name : "");
    out->dtype = v->dtype;
    out->shape = v->shape;
    out->data = gir_arena_alloc(a, (size_t)(nb ? nb : 1));
    if (out->data) {
      memcpy(out->data, v->data, (size_t)nb);
      rc = 0;
    } else
      gir_errf(err, "out of memory");
  }
  gir_graph_free(g);
  onnx__tensor_proto__free_unpacked(t, NULL);
  return rc;
}

/* Decodes a SequenceProto / OptionalProto into a list. Fields other than the four
 * above, or of the wrong wire type, make it not one: -2; a list whose contents are
 * bad: -1. err says why. */
static int decode_list(const uint8_t *buf, size_t n, const char *label, int depth, gir_arena *a,
                       imp_known_input *out, gir_err *err) {
  if (depth > MAX_LIST_DEPTH) return gir_errf(err, "'%s': lists nest deeper than %d", label, MAX_LIST_DEPTH), -2;
  size_t pos = 0, cap = 0;
  int64_t elem = 0;
  imp_known_input *items = NULL;
  *out = (imp_known_input){.name = "", .is_list = 1};
  while (pos < n) {
    uint64_t key, len = 0;
    if (imp_wire_varint(buf, n, &pos, &key) < 0) return gir_errf(err, "'%s': truncated field key", label), -2;
    int field = (int)(key >> 3), wire = (int)(key & 7);
    if (field == 2 && wire == 0) {
      uint64_t v;
      if (imp_wire_varint(buf, n, &pos, &v) < 0 || v > 5) return gir_errf(err, "'%s': bad elem_type", label), -2;
      elem = (int64_t)v;
      continue;
    }
    if (wire != 2 || (field != 1 && field != 3 && field != 5))
      return gir_errf(err, "'%s': field %d (wire type %d) is not one of a sequence or an optional", label, field, wire),
             -2;
    if (imp_wire_varint(buf, n, &pos, &len) < 0 || len > n - pos) return gir_errf(err, "'%s': truncated field", label), -2;
    const uint8_t *p = buf + pos;
    pos += len;
    if (field == 1) {
      char *name = gir_arena_alloc(a, (size_t)len + 1);
      if (!name) return gir_errf(err, "out of memory");
      memcpy(name, p, (size_t)len);
      name[len] = 0;
      out->name = name;
      continue;
    }
    if ((size_t)out->n_items == cap) {
      size_t nc = cap ? cap * 2 : 4;
      if (nc > (1u << 20)) return gir_errf(err, "'%s': too many elements", label);
      items = gir_arena_grow(a, items, cap, nc, sizeof *items);
      if (!items) return gir_errf(err, "out of memory");
      cap = nc;
    }
    imp_known_input *it = &items[out->n_items++];
    if (field == 3) {
      imp_tensor t;
      if (decode_tensor(p, (size_t)len, label, a, &t, err) < 0)
        return gir_err_prefix(err, "element %d", out->n_items - 1);
      *it = (imp_known_input){.name = "", .dtype = t.dtype, .shape = t.shape, .data = t.data};
    } else {
      int rc = decode_list(p, (size_t)len, label, depth + 1, a, it, err);
      if (rc < 0) return rc;
    }
  }
  /* all tensors (elem_type TENSOR) or all lists (SEQUENCE); UNDEFINED is let pass */
  for (int32_t i = 0; i < out->n_items; i++)
    if (items[i].is_list != items[0].is_list || (elem && elem != (items[0].is_list ? 3 : 1)))
      return gir_errf(err, "'%s': element %d does not have elem_type %lld", label, i, (long long)elem);
  out->items = items;
  return 0;
}

static uint8_t *read_all(const char *path, size_t *size, gir_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return gir_errf(err, "cannot open '%s'", path), NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (n < 0 || n > (1l << 31)) {
    fclose(f);
    return gir_errf(err, "'%s': bad size", path), NULL;
  }
  uint8_t *buf = malloc((size_t)n + 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf || got != (size_t)n) {
    free(buf);
    return gir_errf(err, "cannot read '%s'", path), NULL;
  }
  *size = (size_t)n;
  return buf;
}

int imp_read_tensor_file(const char *path, gir_arena *a, imp_tensor *out, gir_err *err) {
  size_t n;
  uint8_t *buf = read_all(path, &n, err);
  int rc = buf ? decode_tensor(buf, n, path, a, out, err) : -1;
  free(buf);
  return rc;
}

int imp_read_value_buffer(const uint8_t *buf, size_t n, const char *label, gir_arena *a, imp_known_input *out,
                          gir_err *err) {
  imp_tensor t;
  int rc = decode_tensor(buf, n, label, a, &t, err);
  if (rc == 0) {
    *out = (imp_known_input){.name = t.name, .dtype = t.dtype, .shape = t.shape, .data = t.data};
    return 0;
  }
  /* not a tensor: a sequence or an optional? */
  gir_err le = {{0}};
  rc = decode_list(buf, n, label, 0, a, out, &le);
  if (rc == -1) *err = le; /* a list, but a bad one: that says more than "not a tensor" */
  if (rc == 0) err->msg[0] = 0;
  return rc < 0 ? -1 : 0;
}

int imp_read_value_file(const char *path, gir_arena *a, imp_known_input *out, gir_err *err) {
  size_t n;
  uint8_t *buf = read_all(path, &n, err);
  int rc = buf ? imp_read_value_buffer(buf, n, path, a, out, err) : -1;
  free(buf);
  return rc;
}
