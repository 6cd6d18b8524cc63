/* attrs.c — typed access to an ONNX node's attributes. A missing attribute gives
 * the caller's default; one of the wrong type is treated as missing only where
 * ONNX allows no other type, and checked callers report it. */
#include <stdint.h>
#include <string.h>
#include "ctx.h"

const Onnx__AttributeProto *imp_attr(const imp_node *n, const char *name) {
  for (size_t i = 0; i < n->proto->n_attribute; i++) {
    const Onnx__AttributeProto *a = n->proto->attribute[i];
    if (a && a->name && !strcmp(a->name, name)) return a;
  }
  return NULL;
}

int64_t imp_attr_int(const imp_node *n, const char *name, int64_t def) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  if (!a) return def;
  if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT || a->has_i) return a->i;
  if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) { /* saturated: a cast out of range is undefined */
    if (a->f != a->f) return def;
    return a->f >= 0x1p63f ? INT64_MAX : a->f < -0x1p63f ? INT64_MIN : (int64_t)a->f;
  }
  return def;
}

double imp_attr_float(const imp_node *n, const char *name, double def) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  if (!a) return def;
  if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT || a->has_f) return a->f;
  if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) return (double)a->i;
  return def;
}

const char *imp_attr_string(imp_ctx *c, const imp_node *n, const char *name, const char *def) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  if (!a || !a->has_s) return def;
  if (!a->s.len) return ""; /* protobuf-c may leave data NULL */
  return gir_arena_strndup(c->g->arena, (const char *)a->s.data, a->s.len);
}

int32_t imp_attr_ints(imp_ctx *c, const imp_node *n, const char *name, int64_t **out) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  *out = NULL;
  if (!a) return -1;
  if (a->n_ints > (1u << 24)) return gir_errf(c->err, "attribute %s has too many values", name), -1;
  *out = gir_arena_calloc(c->g->arena, a->n_ints + 1, sizeof **out);
  if (!*out) return -1;
  for (size_t i = 0; i < a->n_ints; i++) (*out)[i] = a->ints[i];
  return (int32_t)a->n_ints;
}

int32_t imp_attr_floats(imp_ctx *c, const imp_node *n, const char *name, double **out) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  *out = NULL;
  if (!a) return -1;
  if (a->n_floats > (1u << 24)) return gir_errf(c->err, "attribute %s has too many values", name), -1;
  *out = gir_arena_calloc(c->g->arena, a->n_floats + 1, sizeof **out);
  if (!*out) return -1;
  for (size_t i = 0; i < a->n_floats; i++) (*out)[i] = a->floats[i];
  return (int32_t)a->n_floats;
}

gir_value *imp_attr_tensor(imp_ctx *c, const imp_node *n, const char *name) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  if (!a || !a->t) {
    imp_fail(c, "attribute %s: missing tensor", name);
    return NULL;
  }
  return imp_tensor_to_const(c, a->t, name);
}
