/* tensor.c — ONNX TensorProto → constant value, and ValueInfo types → dtype and
 * shape. Data may come from raw_data (little-endian bytes), the typed repeated
 * fields (int32_data carries every narrow integer, bool, the 16-bit floats and
 * the float8 codes as bit patterns), or external data (extdata.c). Every count
 * is checked against dims × element size before anything is copied. The 4-bit
 * types (int4, uint4, float4e2m1) come two to a byte and the 2-bit ones four,
 * low bits first, in all three places (int32_data: one packed byte per entry);
 * they are unpacked here to kiln's one element per byte (graphir/dtypes.def).
 * Strings come from string_data only; a constant string tensor becomes uint8
 * slots (gir_value.string_bytes), each string checked against the slot. */
#include <string.h>
#include "ctx.h"
#include "extdata.h"

static const char *tensor_label(const Onnx__TensorProto *t, const char *what) {
  return t->name && t->name[0] ? t->name : what;
}

static int read_dims(imp_ctx *c, size_t n_dims, const int64_t *dims, const char *label, gir_shape *s) {
  if (n_dims > GIR_MAX_RANK)
    return imp_fail(c, "tensor '%s' has rank %zu, above the limit of %d", label, n_dims, GIR_MAX_RANK);
  s->rank = (int32_t)n_dims;
  for (size_t i = 0; i < n_dims; i++) {
    if (dims[i] < 0) return imp_fail(c, "tensor '%s' has negative dimension %lld", label, (long long)dims[i]);
    s->dims[i] = dims[i];
  }
  gir_err e = {{0}};
  if (gir_shape_numel(s, &e) < 0) return imp_fail(c, "tensor '%s': %s", label, e.msg);
  return 0;
}

static const char *ext_field(const Onnx__TensorProto *t, const char *key) {
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *kv = t->external_data[i];
    if (kv && kv->key && !strcmp(kv->key, key)) return kv->value ? kv->value : "";
  }
  return NULL;
}

static int parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return -1;
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return 0;
}

/* Elements per byte in ONNX files: 2 or 4 for the sub-byte types, else 1. */
static int packing(gir_dtype dt) { return gir_dtype_bits(dt) < 8 ? 8 / gir_dtype_bits(dt) : 1; }

/* numel packed elements of src → one per byte in dst: integers sign- or
 * zero-extended, float4e2m1 codes as they are. */
static void unpack(gir_dtype dt, const uint8_t *src, int64_t numel, uint8_t *dst) {
  int bits = gir_dtype_bits(dt), per = 8 / bits;
  for (int64_t i = 0; i < numel; i++) {
    uint8_t u = (uint8_t)((src[i / per] >> (bits * (int)(i % per))) & ((1u << bits) - 1));
    if (gir_dtype_is_int(dt)) gir_store_i64(dt, dst, i, u);
    else dst[i] = u;
  }
}

int64_t imp_string_bytes(const imp_ctx *c) {
  return c->opt && c->opt->max_string_bytes ? c->opt->max_string_bytes : IMP_DEFAULT_STRING_BYTES;
}

int imp_tensor_strings(imp_ctx *c, const Onnx__TensorProto *t, const char *what, gir_arena *a, gir_shape *s,
                       imp_string **out) {
  const char *label = tensor_label(t, what);
  *s = (gir_shape){0};
  if (read_dims(c, t->n_dims, t->dims, label, s) < 0) return -1;
  if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__STRING) return imp_fail(c, "tensor '%s' is not a string tensor", label);
  if ((t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
      (t->has_raw_data && t->raw_data.len > 0) || t->segment)
    return imp_fail(c, "tensor '%s' is a string tensor with raw, external or segmented data (ONNX keeps strings in "
                       "string_data)", label);
  int64_t numel = gir_shape_numel(s, NULL);
  if (numel < 0 || (uint64_t)numel != (uint64_t)t->n_string_data)
    return imp_fail(c, "tensor '%s' holds %zu strings, its dims need %lld", label, t->n_string_data, (long long)numel);
  imp_string *v = gir_arena_calloc(a, (size_t)numel + 1, sizeof *v);
  if (!v) return imp_fail(c, "tensor '%s': out of memory", label);
  for (int64_t i = 0; i < numel; i++) {
    const ProtobufCBinaryData *d = &t->string_data[i];
    if (d->len > (size_t)IMP_MAX_FILE_BYTES) return imp_fail(c, "tensor '%s': string %lld is too long", label, (long long)i);
    uint8_t *b = gir_arena_alloc(a, d->len + 1);
    if (!b) return imp_fail(c, "tensor '%s': out of memory", label);
    if (d->len) memcpy(b, d->data, d->len);
    v[i] = (imp_string){b, (int64_t)d->len};
  }
  *out = v;
  return 0;
}

gir_value *imp_string_const(imp_ctx *c, const char *name, const gir_shape *s, const imp_string *strs,
                            const char *label) {
  int64_t w = imp_string_bytes(c), numel = gir_shape_numel(s, NULL);
  if (s->rank >= GIR_MAX_RANK) {
    imp_fail(c, "tensor '%s' is a string tensor of rank %d; kiln takes them up to rank %d", label, s->rank,
             GIR_MAX_RANK - 1);
    return NULL;
  }
  if (numel < 0 || numel > IMP_MAX_FILE_BYTES / w) {
    imp_fail(c, "tensor '%s' is too large (%lld strings of %lld-byte slots)", label, (long long)numel,
             (long long)w);
    return NULL;
  }
  for (int64_t i = 0; i < numel; i++)
    if (strs[i].len > w - 4) {
      imp_fail(c, "tensor '%s': element %lld is %lld bytes, over the %lld a string slot holds (raise "
                  "--max-string-bytes, now %lld, to at least %lld)", label, (long long)i, (long long)strs[i].len,
               (long long)(w - 4), (long long)w, (long long)strs[i].len + 4);
      return NULL;
    }
  gir_shape ss = *s;
  ss.dims[ss.rank++] = w;
  gir_value *v = gir_const_new(c->g, name, GIR_U8, &ss, NULL);
  v->string_bytes = (int32_t)w;
  uint8_t *d = v->data;
  for (int64_t i = 0; i < numel; i++) {
    uint8_t *slot = d + i * w;
    uint32_t len = (uint32_t)strs[i].len;
    for (int k = 0; k < 4; k++) slot[k] = (uint8_t)(len >> (8 * k));
    if (len) memcpy(slot + 4, strs[i].bytes, len);
  }
  return v;
}

gir_value *imp_tensor_to_const(imp_ctx *c, const Onnx__TensorProto *t, const char *what) {
  const char *label = tensor_label(t, what);
  gir_shape s = {0};
  if (read_dims(c, t->n_dims, t->dims, label, &s) < 0) return NULL;
  gir_dtype dt = gir_dtype_from_onnx(t->data_type);
  if (dt == GIR_STRING) {
    imp_string *strs;
    if (imp_tensor_strings(c, t, what, c->g->arena, &s, &strs) < 0) return NULL;
    return imp_string_const(c, t->name && t->name[0] ? t->name : NULL, &s, strs, label);
  }
  if (dt == GIR_DTYPE_NONE) {
    imp_fail(c, "tensor '%s' has unknown element type code %d", label, t->data_type);
    return NULL;
  }
  if (!gir_dtype_first_class(dt)) {
    imp_fail(c, "tensor '%s' has element type %s, which kiln does not support", label, gir_dtype_name(dt));
    return NULL;
  }
  if (t->segment) {
    imp_fail(c, "tensor '%s' is segmented, which kiln does not support", label);
    return NULL;
  }
  int64_t numel = gir_shape_numel(&s, NULL);
  size_t es = gir_dtype_size(dt);
  if (numel > INT64_MAX / (int64_t)es || numel * (int64_t)es > IMP_MAX_FILE_BYTES * 8) {
    imp_fail(c, "tensor '%s' is too large (%lld elements)", label, (long long)numel);
    return NULL;
  }
  int per = packing(dt);
  /* bytes in the file (packed), and how to read the typed field counts */
  int64_t nbytes = per > 1 ? (numel + per - 1) / per : numel * (int64_t)es;
  const char *name = t->name && t->name[0] ? t->name : NULL;
  gir_value *v;
  unsigned char *dst;
  /* Every size is checked against the data before the payload is allocated: a
   * few bytes of protobuf must not make the importer allocate gigabytes. */
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    int64_t off = 0, len = nbytes;
    const char *loc = ext_field(t, "location"), *o = ext_field(t, "offset"), *l = ext_field(t, "length");
    if ((o && parse_i64(o, &off) < 0) || (l && parse_i64(l, &len) < 0)) {
      imp_fail(c, "tensor '%s': bad external data offset '%s' or length '%s' (expected decimal numbers)", label,
               o ? o : "", l ? l : "");
      return NULL;
    }
    if (len != nbytes) {
      if (per > 1)
        imp_fail(c, "tensor '%s': external data length %lld does not equal the %lld bytes of %lld packed %s elements",
                 label, (long long)len, (long long)nbytes, (long long)numel, gir_dtype_name(dt));
      else
        imp_fail(c, "tensor '%s': external data length %lld does not equal %lld elements x %zu bytes", label,
                 (long long)len, (long long)numel, es);
      return NULL;
    }
    gir_err e = {{0}};
    if (imp_read_external(c->base_dir, loc, off, len, NULL, &e) < 0) { /* checks only */
      imp_fail(c, "tensor '%s': %s", label, e.msg);
      return NULL;
    }
    v = gir_const_new(c->g, name, dt, &s, NULL);
    void *raw = per > 1 ? gir_arena_alloc(c->g->arena, (size_t)len + 1) : v->data;
    if (!raw) {
      imp_fail(c, "tensor '%s': out of memory", label);
      return NULL;
    }
    if (imp_read_external(c->base_dir, loc, off, len, raw, &e) < 0) {
      imp_fail(c, "tensor '%s': %s", label, e.msg);
      return NULL;
    }
    if (per > 1) unpack(dt, raw, numel, v->data);
    return v;
  }
  if (t->has_raw_data && (t->raw_data.len > 0 || nbytes == 0)) {
    if ((int64_t)t->raw_data.len != nbytes) {
      imp_fail(c, "tensor '%s': raw_data holds %zu bytes, dims x %s need %lld", label, t->raw_data.len,
               gir_dtype_name(dt), (long long)nbytes);
      return NULL;
    }
    if (per > 1) {
      v = gir_const_new(c->g, name, dt, &s, NULL);
      unpack(dt, t->raw_data.data, numel, v->data);
      return v;
    }
    v = gir_const_new(c->g, name, dt, &s, t->raw_data.data); /* little-endian host (checked at build) */
    dst = v->data;
    if (dt == GIR_BOOL)
      for (int64_t i = 0; i < numel; i++) dst[i] = dst[i] != 0;
    return v;
  }
  /* typed fields */
  size_t have;
  switch (dt) {
  case GIR_F32: have = t->n_float_data; break;
  case GIR_F64: have = t->n_double_data; break;
  case GIR_I64: have = t->n_int64_data; break;
  case GIR_U32: case GIR_U64: have = t->n_uint64_data; break;
  default: have = t->n_int32_data; break;
  }
  int64_t need = per > 1 ? nbytes : numel;
  if ((int64_t)have != need) {
    imp_fail(c, "tensor '%s' holds %zu values, its dims need %lld", label, have, (long long)need);
    return NULL;
  }
  v = gir_const_new(c->g, name, dt, &s, NULL);
  dst = v->data;
  if (per > 1) {
    uint8_t *bytes = gir_arena_alloc(c->g->arena, (size_t)need + 1);
    if (!bytes) {
      imp_fail(c, "tensor '%s': out of memory", label);
      return NULL;
    }
    for (int64_t i = 0; i < need; i++) bytes[i] = (uint8_t)t->int32_data[i];
    unpack(dt, bytes, numel, dst);
    return v;
  }
  for (int64_t i = 0; i < numel; i++) {
    switch (dt) {
    case GIR_F32: ((float *)(void *)dst)[i] = t->float_data[i]; break;
    case GIR_F64: ((double *)(void *)dst)[i] = t->double_data[i]; break;
    case GIR_I64: ((int64_t *)(void *)dst)[i] = t->int64_data[i]; break;
    case GIR_U32: ((uint32_t *)(void *)dst)[i] = (uint32_t)t->uint64_data[i]; break;
    case GIR_U64: ((uint64_t *)(void *)dst)[i] = t->uint64_data[i]; break;
    case GIR_F16: case GIR_BF16: case GIR_U16: ((uint16_t *)(void *)dst)[i] = (uint16_t)t->int32_data[i]; break;
    case GIR_BOOL: dst[i] = t->int32_data[i] != 0; break;
    default:
      if (gir_dtype_is_f8(dt)) dst[i] = (uint8_t)t->int32_data[i]; /* the code */
      else gir_store_i64(dt, dst, i, t->int32_data[i]);
      break;
    }
  }
  return v;
}

/* An input's element count and byte size must fit in int64 (every later size
 * computation relies on it). */
static int check_size(gir_dtype dt, const gir_shape *s, gir_err *e) {
  int64_t n = gir_shape_numel(s, e);
  if (n < 0) return -1;
  int64_t es = (int64_t)gir_dtype_size(dt);
  if (es && n > INT64_MAX / es)
    return gir_errf(e, "%lld elements of %s: the byte size overflows int64", (long long)n, gir_dtype_name(dt));
  return 0;
}

int imp_type_to_shape(imp_ctx *c, const Onnx__ValueInfoProto *vi, gir_dtype *dt, gir_shape *s) {
  const char *name = vi->name ? vi->name : "?";
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return imp_fail(c, "input '%s' is not a tensor (sequence, map and optional types are not supported)", name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  *dt = gir_dtype_from_onnx(tt->elem_type);
  if (*dt == GIR_DTYPE_NONE) return imp_fail(c, "input '%s' has unknown element type code %d", name, tt->elem_type);
  if (!gir_dtype_first_class(*dt) && *dt != GIR_STRING)
    return imp_fail(c, "input '%s' has element type %s, which kiln does not support", name, gir_dtype_name(*dt));
  /* user-bound shape wins, if its rank is the declared one */
  for (int i = 0; c->opt && i < c->opt->n_shapes; i++)
    if (!strcmp(c->opt->shapes[i].name, name)) {
      const imp_input_shape *u = &c->opt->shapes[i];
      if (tt->shape && tt->shape->n_dim != (size_t)u->rank)
        return imp_fail(c, "--input-shape gives input '%s' rank %d, but the model declares rank %zu", name, u->rank,
                        tt->shape->n_dim);
      *s = gir_shape_make(u->rank, u->dims);
      gir_err e = {{0}};
      if (check_size(*dt, s, &e) < 0) return imp_fail(c, "--input-shape for input '%s': %s", name, e.msg);
      return 0;
    }
  if (!tt->shape) return imp_fail(c, "input '%s' has no shape; give one with --input-shape %s:DIMS", name, name);
  if (tt->shape->n_dim > GIR_MAX_RANK)
    return imp_fail(c, "input '%s' has rank %zu, above the limit of %d", name, tt->shape->n_dim, GIR_MAX_RANK);
  s->rank = (int32_t)tt->shape->n_dim;
  for (size_t i = 0; i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    int fixed = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value != -1;
    if (fixed) {
      if (d->dim_value < 0) return imp_fail(c, "input '%s' has negative dimension %lld", name, (long long)d->dim_value);
      s->dims[i] = d->dim_value;
      continue;
    }
    /* symbolic, empty or -1 (which exporters write for "dynamic", as ONNX Runtime reads
     * it): 1 unless bound with --input-shape; the report lists each one */
    s->dims[i] = 1;
    imp_report *r = c->rep;
    if (!r || c->depth) continue;
    r->n_unbound++;
    size_t used = strlen(r->unbound);
    const char *sym = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                              d->dim_param[0] ? d->dim_param : NULL;
    char one[200];
    if (sym) snprintf(one, sizeof one, "%s%s[%zu] '%.64s'", used ? ", " : "", name, i, sym);
    else snprintf(one, sizeof one, "%s%s[%zu] %s", used ? ", " : "", name, i,
                  d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? "-1" : "(no value)");
    if (used + strlen(one) + 4 < sizeof r->unbound) strcat(r->unbound, one);
    else if (used + 4 < sizeof r->unbound && !strstr(r->unbound, "…")) strcat(r->unbound, " …");
  }
  gir_err e = {{0}};
  if (check_size(*dt, s, &e) < 0) return imp_fail(c, "input '%s': %s", name, e.msg);
  return 0;
}
