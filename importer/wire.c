/* wire.c — a pre-scan of the protobuf wire format, guided by protobuf-c's message
 * descriptors, before the bytes are handed to protobuf-c. protobuf-c rejects most
 * malformed input on its own, but it recurses once per nested message, so a file
 * of a few kilobytes can nest deep enough to exhaust the stack; and its errors do
 * not say where. This walk bounds message nesting and subgraph nesting and names
 * the byte offset and field path of the first problem. */
#include <stdio.h>
#include <string.h>
#include "ctx.h"

#define MAX_MESSAGE_DEPTH 128

typedef struct walker {
  const uint8_t *base;
  gir_err *err;
  const char *path[MAX_MESSAGE_DEPTH + 1];
  int depth;
} walker;

/* "malformed ONNX file: WHAT at byte N in field graph.node.attribute": the path of
 * message fields down to the problem, its middle elided when the nesting is deep. */
static int fail(walker *w, size_t at, const char *what) {
  char path[512] = "";
  size_t o = 0;
  for (int i = 0; i < w->depth && o < sizeof path; i++) {
    if (w->depth > 12 && i == 4) {
      o += (size_t)snprintf(path + o, sizeof path - o, ".<%d more>", w->depth - 8);
      i = w->depth - 4;
    }
    o += (size_t)snprintf(path + o, sizeof path - o, i ? ".%s" : "%s", w->path[i]);
  }
  return gir_errf(w->err, "malformed ONNX file: %s at byte %zu%s%s", what, at, path[0] ? " in field " : "", path);
}

/* Same, naming the field whose encoding is wrong. */
static int fail_field(walker *w, size_t at, const char *what, const ProtobufCFieldDescriptor *f) {
  char buf[160];
  snprintf(buf, sizeof buf, "%s for field '%s'", what, f->name);
  return fail(w, at, buf);
}

int imp_wire_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= n) return -1;
    uint8_t b = p[(*pos)++];
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

static int is_varint_type(ProtobufCType t) {
  return t == PROTOBUF_C_TYPE_INT32 || t == PROTOBUF_C_TYPE_SINT32 || t == PROTOBUF_C_TYPE_UINT32 ||
         t == PROTOBUF_C_TYPE_INT64 || t == PROTOBUF_C_TYPE_SINT64 || t == PROTOBUF_C_TYPE_UINT64 ||
         t == PROTOBUF_C_TYPE_BOOL || t == PROTOBUF_C_TYPE_ENUM;
}

static int is_fixed64_type(ProtobufCType t) {
  return t == PROTOBUF_C_TYPE_DOUBLE || t == PROTOBUF_C_TYPE_FIXED64 || t == PROTOBUF_C_TYPE_SFIXED64;
}

static int is_fixed32_type(ProtobufCType t) {
  return t == PROTOBUF_C_TYPE_FLOAT || t == PROTOBUF_C_TYPE_FIXED32 || t == PROTOBUF_C_TYPE_SFIXED32;
}

/* A length-delimited field: a string, bytes, a message, or a packed repeated scalar. */
static int takes_length(const ProtobufCFieldDescriptor *f) {
  return f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES ||
         f->type == PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED;
}

static int walk(walker *w, const ProtobufCMessageDescriptor *d, size_t start, size_t end, int graph_depth) {
  size_t pos = start;
  const uint8_t *p = w->base;
  if (d == &onnx__graph_proto__descriptor && ++graph_depth > IMP_MAX_SUBGRAPH_DEPTH + 1)
    return fail(w, start, "subgraphs nested deeper than the limit of 32");
  while (pos < end) {
    size_t at = pos;
    uint64_t key;
    if (imp_wire_varint(p, end, &pos, &key) < 0) return fail(w, at, "truncated or overlong field key");
    uint32_t field = (uint32_t)(key >> 3), wt = (uint32_t)(key & 7);
    if (field == 0 || key >> 32) return fail(w, at, "invalid field number");
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, field);
    switch (wt) {
    case 0: {
      uint64_t v;
      if (imp_wire_varint(p, end, &pos, &v) < 0) return fail(w, at, "truncated varint");
      if (f && !is_varint_type(f->type)) return fail_field(w, at, "wrong wire type (varint)", f);
      break;
    }
    case 1:
      if (end - pos < 8) return fail(w, at, "truncated 64-bit value");
      if (f && !is_fixed64_type(f->type)) return fail_field(w, at, "wrong wire type (64-bit)", f);
      pos += 8;
      break;
    case 5:
      if (end - pos < 4) return fail(w, at, "truncated 32-bit value");
      if (f && !is_fixed32_type(f->type)) return fail_field(w, at, "wrong wire type (32-bit)", f);
      pos += 4;
      break;
    case 2: {
      uint64_t len;
      if (imp_wire_varint(p, end, &pos, &len) < 0) return fail(w, at, "truncated length");
      if (len > end - pos) {
        if (f) return fail_field(w, at, "length runs past the end of the data", f);
        return fail(w, at, "length runs past the end of the data");
      }
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
        if (w->depth >= MAX_MESSAGE_DEPTH) return fail(w, at, "messages nested too deeply");
        w->path[w->depth++] = f->name;
        if (walk(w, f->descriptor, pos, pos + (size_t)len, graph_depth) < 0) return -1;
        w->depth--;
      } else if (f && !takes_length(f)) {
        return fail_field(w, at, "wrong wire type (length-delimited)", f);
      } else if (f && f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES) {
        /* packed repeated scalars: whole values only */
        if ((is_fixed32_type(f->type) && len % 4) || (is_fixed64_type(f->type) && len % 8))
          return fail_field(w, at, "packed values of a partial size", f);
        if (is_varint_type(f->type))
          for (size_t q = pos; q < pos + (size_t)len;) {
            uint64_t v;
            if (imp_wire_varint(p, pos + (size_t)len, &q, &v) < 0)
              return fail_field(w, at, "truncated packed varint", f);
          }
      }
      pos += (size_t)len;
      break;
    }
    default:
      return fail(w, at, wt == 3 || wt == 4 ? "group wire type (not used by ONNX)" : "invalid wire type");
    }
  }
  return 0;
}

int imp_wire_check(const uint8_t *data, size_t n, gir_err *err) {
  walker w = {.base = data, .err = err};
  return walk(&w, &onnx__model_proto__descriptor, 0, n, 0);
}
