/* test_importer.c — unit tests of the importer core (importer/): the --input-shape
 * parser, and imp_load_buffer / imp_load_file on small models built byte by byte
 * in this file: value names, element types and shapes of inputs and outputs,
 * constants decoded from raw_data and from every typed field, Constant nodes,
 * symbolic dims defaulting to 1 and bound by --input-shape, external data, the
 * report (op histogram, parameters, unsupported ops), and the one-line error of
 * every malformed or unsupported model.
 *
 * The models are encoded here with a twenty-line protobuf writer rather than the
 * protobuf-c generated API: onnx.pb-c.h lives in the build folder's gen/ and is
 * only on the private include path of kiln_importer, so a test cannot include it;
 * writing the wire format by hand also keeps each test model visible in the code
 * that builds it. Field numbers are those of onnx.proto. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "importer.h"

/* --- a minimal protobuf writer --- */

typedef struct pb {
  unsigned char *p;
  size_t n, cap;
} pb;

static void pb_put(pb *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    size_t nc = b->cap ? b->cap : 64;
    while (nc < b->n + n) nc *= 2;
    unsigned char *q = realloc(b->p, nc);
    if (!q) abort(); /* test harness: out of memory is fatal */
    b->p = q;
    b->cap = nc;
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void pb_varint(pb *b, uint64_t v) {
  unsigned char c[10];
  int k = 0;
  do {
    c[k] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) c[k] |= 0x80;
    k++;
  } while (v);
  pb_put(b, c, (size_t)k);
}

static void pb_key(pb *b, int field, int wire) { pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }
static void pb_int(pb *b, int field, int64_t v) {
  pb_key(b, field, 0);
  pb_varint(b, (uint64_t)v);
}
static void pb_bytes(pb *b, int field, const void *d, size_t n) {
  pb_key(b, field, 2);
  pb_varint(b, n);
  pb_put(b, d, n);
}
static void pb_str(pb *b, int field, const char *s) { pb_bytes(b, field, s, strlen(s)); }
static void pb_f32(pb *b, int field, float f) {
  pb_key(b, field, 5);
  pb_put(b, &f, 4);
}
/* Appends sub as a length-delimited field and frees it. */
static void pb_sub(pb *b, int field, pb *sub) {
  pb_bytes(b, field, sub->p, sub->n);
  free(sub->p);
  *sub = (pb){0};
}
static void pb_packed_varints(pb *b, int field, const int64_t *v, size_t n) {
  pb s = {0};
  for (size_t i = 0; i < n; i++) pb_varint(&s, (uint64_t)v[i]);
  pb_sub(b, field, &s);
}
static void pb_packed_u64(pb *b, int field, const uint64_t *v, size_t n) {
  pb s = {0};
  for (size_t i = 0; i < n; i++) pb_varint(&s, v[i]);
  pb_sub(b, field, &s);
}

/* onnx.proto field numbers */
enum {
  MODEL_IR_VERSION = 1, MODEL_PRODUCER = 2, MODEL_GRAPH = 7, MODEL_OPSET = 8,
  OPSET_DOMAIN = 1, OPSET_VERSION = 2,
  GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INIT = 5, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12, GRAPH_SPARSE_INIT = 15,
  NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP = 4, NODE_ATTR = 5, NODE_DOMAIN = 7,
  ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_T = 5, ATTR_FLOATS = 7, ATTR_INTS = 8, ATTR_TYPE = 20,
  T_DIMS = 1, T_DTYPE = 2, T_FLOAT = 4, T_INT32 = 5, T_INT64 = 7, T_NAME = 8, T_RAW = 9, T_DOUBLE = 10,
  T_UINT64 = 11, T_EXTERNAL = 13, T_LOCATION = 14,
  VI_NAME = 1, VI_TYPE = 2, TYPE_TENSOR = 1, TYPE_SEQUENCE = 4, TT_ELEM = 1, TT_SHAPE = 2,
  SHAPE_DIM = 1, DIM_VALUE = 1, DIM_PARAM = 2,
};
/* ONNX element type codes and attribute types */
enum { ONNX_F32 = 1, ONNX_U8 = 2, ONNX_I8 = 3, ONNX_U16 = 4, ONNX_I32 = 6, ONNX_I64 = 7, ONNX_STRING = 8,
       ONNX_BOOL = 9, ONNX_F16 = 10, ONNX_F64 = 11, ONNX_U32 = 12, ONNX_U64 = 13, ONNX_BF16 = 16 };
enum { AT_FLOAT = 1, AT_INT = 2, AT_TENSOR = 4, AT_FLOATS = 6, AT_INTS = 7 };

#define SYM (-1)     /* a symbolic dim ("N") in value_info() */
#define UNKNOWN (-2) /* a dim with neither value nor name */

static pb tensor_head(const char *name, int dtype, const int64_t *dims, int nd) {
  pb t = {0};
  for (int i = 0; i < nd; i++) pb_int(&t, T_DIMS, dims[i]);
  pb_int(&t, T_DTYPE, dtype);
  if (name) pb_str(&t, T_NAME, name);
  return t;
}

static pb tensor_raw(const char *name, int dtype, const int64_t *dims, int nd, const void *raw, size_t n) {
  pb t = tensor_head(name, dtype, dims, nd);
  pb_bytes(&t, T_RAW, raw, n);
  return t;
}

static pb tensor_floats(const char *name, const int64_t *dims, int nd, const float *v, size_t n) {
  pb t = tensor_head(name, ONNX_F32, dims, nd);
  pb_bytes(&t, T_FLOAT, v, n * 4); /* packed floats are their little-endian bytes */
  return t;
}

/* value_info with a tensor type; dims may hold SYM / UNKNOWN; nd < 0: no shape. */
static pb value_info(const char *name, int elem, const int64_t *dims, int nd) {
  pb vi = {0}, ty = {0}, tt = {0}, sh = {0};
  pb_str(&vi, VI_NAME, name);
  pb_int(&tt, TT_ELEM, elem);
  if (nd >= 0) {
    for (int i = 0; i < nd; i++) {
      pb d = {0};
      if (dims[i] == SYM) pb_str(&d, DIM_PARAM, "N");
      else if (dims[i] != UNKNOWN) pb_int(&d, DIM_VALUE, dims[i]);
      pb_sub(&sh, SHAPE_DIM, &d);
    }
    pb_sub(&tt, TT_SHAPE, &sh);
  }
  pb_sub(&ty, TYPE_TENSOR, &tt);
  pb_sub(&vi, VI_TYPE, &ty);
  return vi;
}

static pb node(const char *op, const char *name, const char *const *ins, int nin, const char *const *outs, int nout) {
  pb n = {0};
  for (int i = 0; i < nin; i++) pb_str(&n, NODE_INPUT, ins[i]);
  for (int i = 0; i < nout; i++) pb_str(&n, NODE_OUTPUT, outs[i]);
  if (name) pb_str(&n, NODE_NAME, name);
  pb_str(&n, NODE_OP, op);
  return n;
}
#define STRS(...) (const char *const[]){__VA_ARGS__}, (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))
#define DIMS(...) (const int64_t[]){__VA_ARGS__}, (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static void attr_tensor(pb *n, const char *name, pb *t) {
  pb a = {0};
  pb_str(&a, ATTR_NAME, name);
  pb_sub(&a, ATTR_T, t);
  pb_int(&a, ATTR_TYPE, AT_TENSOR);
  pb_sub(n, NODE_ATTR, &a);
}
static void attr_float(pb *n, const char *name, float f) {
  pb a = {0};
  pb_str(&a, ATTR_NAME, name);
  pb_f32(&a, ATTR_F, f);
  pb_int(&a, ATTR_TYPE, AT_FLOAT);
  pb_sub(n, NODE_ATTR, &a);
}
static void attr_int(pb *n, const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, ATTR_NAME, name);
  pb_int(&a, ATTR_I, v);
  pb_int(&a, ATTR_TYPE, AT_INT);
  pb_sub(n, NODE_ATTR, &a);
}
static void attr_ints(pb *n, const char *name, const int64_t *v, int cnt) {
  pb a = {0};
  pb_str(&a, ATTR_NAME, name);
  pb_packed_varints(&a, ATTR_INTS, v, (size_t)cnt);
  pb_int(&a, ATTR_TYPE, AT_INTS);
  pb_sub(n, NODE_ATTR, &a);
}
static void attr_floats(pb *n, const char *name, const float *v, int cnt) {
  pb a = {0};
  pb_str(&a, ATTR_NAME, name);
  pb_bytes(&a, ATTR_FLOATS, v, (size_t)cnt * 4);
  pb_int(&a, ATTR_TYPE, AT_FLOATS);
  pb_sub(n, NODE_ATTR, &a);
}

/* A model around graph (consumed); opset < 0: no opset_import at all. */
static pb model(pb *graph, int64_t ir_version, int64_t opset) {
  pb m = {0};
  pb_int(&m, MODEL_IR_VERSION, ir_version);
  pb_str(&m, MODEL_PRODUCER, "kiln-test");
  if (opset >= 0) {
    pb o = {0};
    pb_str(&o, OPSET_DOMAIN, "");
    pb_int(&o, OPSET_VERSION, opset);
    pb_sub(&m, MODEL_OPSET, &o);
  }
  if (graph) pb_sub(&m, MODEL_GRAPH, graph);
  return m;
}

/* --- loading helpers --- */

typedef struct loaded {
  gir_graph *g;
  gir_err err;
  imp_report rep;
} loaded;

static void load_with(loaded *l, pb *m, const imp_options *opt) {
  memset(&l->err, 0, sizeof l->err);
  imp_report_init(&l->rep);
  l->g = imp_load_buffer(m->p, m->n, NULL, opt, &l->rep, &l->err);
  free(m->p);
  *m = (pb){0};
}

static void unload(loaded *l) {
  gir_graph_free(l->g);
  imp_report_free(&l->rep);
  l->g = NULL;
}

static gir_value *find_output(const gir_graph *g, const char *name) {
  for (int i = 0; g && i < g->n_outputs; i++)
    if (!strcmp(g->outputs[i]->name, name)) return g->outputs[i];
  return NULL;
}

static int shape_is_(const gir_value *v, int rank, const int64_t *dims, int line) {
  int ok = v && v->shape.rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = v->shape.dims[i] == dims[i];
  char b[160];
  return CHECKF(ok, "line %d: %s has shape %s", line, v ? v->name : "(null)",
                v ? gir_shape_str(&v->shape, b, sizeof b) : "-");
}
#define SHAPE_IS(v, ...) shape_is_(v, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)) - 1, \
                                   (int64_t[]){__VA_ARGS__} + 1, __LINE__)
/* SHAPE_IS(v, 0) is a scalar; SHAPE_IS(v, 0, 2, 3) is [2,3]: the leading 0 is a dummy
 * so that the scalar case has an argument. */

/* The import failed with a one-line message containing `want`. */
static int failed_with_(const loaded *l, const char *want, int line) {
  return CHECKF(!l->g && l->err.msg[0] && !strchr(l->err.msg, '\n') && (!want || strstr(l->err.msg, want)),
                "line %d: expected a failed import mentioning \"%s\"; got graph=%p, message \"%s\"", line,
                want ? want : "", (void *)l->g, l->err.msg);
}
#define FAILED_WITH(l, want) failed_with_(l, want, __LINE__)

static int imported_(const loaded *l, int line) {
  return CHECKF(l->g != NULL, "line %d: import failed: %s", line, l->err.msg);
}
#define IMPORTED(l) imported_(l, __LINE__)

/* x[dims] → op → y with one input and output; the graph is consumed into a model. */
static pb unary_model(const char *op, int elem, const int64_t *dims, int nd) {
  pb g = {0}, n = node(op, "the_node", STRS("x"), STRS("y")), in = value_info("x", elem, dims, nd);
  pb out = value_info("y", elem, NULL, -1);
  pb_sub(&g, GRAPH_NODE, &n);
  pb_str(&g, GRAPH_NAME, "g");
  pb_sub(&g, GRAPH_INPUT, &in);
  pb_sub(&g, GRAPH_OUTPUT, &out);
  return model(&g, 8, 13);
}

/* --- tests --- */

static void test_parse_input_shape(void) {
  imp_input_shape s;
  gir_err e = {{0}};
  CHECK_INT(imp_parse_input_shape("data:1x3x224x224", &s, &e), 0);
  CHECK_STR(s.name, "data");
  CHECK(s.rank == 4 && s.dims[0] == 1 && s.dims[1] == 3 && s.dims[2] == 224 && s.dims[3] == 224);
  CHECK_INT(imp_parse_input_shape("gpu_0/data_0:2,3", &s, &e), 0);
  CHECK_STR(s.name, "gpu_0/data_0");
  CHECK(s.rank == 2 && s.dims[0] == 2 && s.dims[1] == 3);
  CHECK_INT(imp_parse_input_shape("a:b:7", &s, &e), 0); /* the last colon separates */
  CHECK_STR(s.name, "a:b");
  CHECK(s.rank == 1 && s.dims[0] == 7);
  CHECK_INT(imp_parse_input_shape("x:0", &s, &e), 0);
  CHECK(s.rank == 1 && s.dims[0] == 0);
  CHECK_INT(imp_parse_input_shape("x:1x2x3x4x5x6x7x8", &s, &e), 0);
  CHECK(s.rank == 8 && s.dims[7] == 8);
  CHECK_INT(imp_parse_input_shape("x:9223372036854775807", &s, &e), 0);
  CHECK(s.rank == 1 && s.dims[0] == INT64_MAX);
  CHECKF(e.msg[0] == 0, "%s", e.msg);
  char longname[300];
  memset(longname, 'n', 255);
  strcpy(longname + 255, ":1");
  CHECK_INT(imp_parse_input_shape(longname, &s, &e), 0); /* 255 characters fit */
  CHECK_INT(strlen(s.name), 255);

  const char *bad[] = {
      "",          "x",         ":1x2",     "x:",          "x:-1",     "x:1x-2",   "x:1xx2",
      "x:abc",     "x:1;2",     "x:1x2x3x4x5x6x7x8x9",   "x:99999999999999999999", "x:1.5",
      "x:1x",      "x:1,",      "x:,1",     "x:x1",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gir_err be = {{0}};
    int rc = imp_parse_input_shape(bad[i], &s, &be);
    CHECKF(rc == -1 && be.msg[0] && !strchr(be.msg, '\n'), "spec \"%s\" must be refused with a message (rc %d, \"%s\")",
           bad[i], rc, be.msg);
  }
  memset(longname, 'n', 256);
  strcpy(longname + 256, ":1");
  gir_err le = {{0}};
  CHECK_INT(imp_parse_input_shape(longname, &s, &le), -1);
  CHECK_CONTAINS(le.msg, "too long");
}

static void test_identity(void) {
  pb g = {0}, n = node("Identity", "id0", STRS("x"), STRS("y"));
  pb in = value_info("x", ONNX_F32, DIMS(2, 3)), out = value_info("y", ONNX_F32, DIMS(2, 3));
  pb_sub(&g, GRAPH_NODE, &n);
  pb_str(&g, GRAPH_NAME, "identity_graph");
  pb_sub(&g, GRAPH_INPUT, &in);
  pb_sub(&g, GRAPH_OUTPUT, &out);
  pb m = model(&g, 8, 13);
  loaded l;
  load_with(&l, &m, NULL);
  if (IMPORTED(&l)) {
    CHECK_STR(l.g->name, "identity_graph");
    CHECK_INT(l.g->ir_version, 8);
    CHECK_STR(l.g->producer, "kiln-test");
    CHECK(l.g->n_opsets == 1 && !strcmp(l.g->opsets[0].domain, "") && l.g->opsets[0].version == 13);
    CHECK_INT(l.g->n_inputs, 1);
    CHECK_STR(l.g->inputs[0]->name, "x");
    CHECK_INT(l.g->inputs[0]->dtype, GIR_F32);
    SHAPE_IS(l.g->inputs[0], 0, 2, 3);
    CHECK(l.g->inputs[0]->is_input);
    CHECK_INT(l.g->n_outputs, 1);
    gir_value *y = find_output(l.g, "y");
    if (CHECK(y != NULL)) {
      CHECK_INT(y->dtype, GIR_F32);
      SHAPE_IS(y, 0, 2, 3);
      CHECK(y->is_output && y != l.g->inputs[0]); /* an input cannot also carry the output's name */
    }
    gir_err e = {{0}};
    CHECKF(gir_verify(l.g, &e) == 0, "%s", e.msg);
    CHECK_INT(l.rep.ir_version, 8);
    CHECK_INT(l.rep.onnx_nodes, 1);
    CHECK(l.rep.n_op_types == 1 && !strcmp(l.rep.op_types[0], "Identity") && l.rep.op_counts[0] == 1);
    CHECK_INT(l.rep.n_unsupported, 0);
    CHECK_INT(l.rep.param_count, 0);
  }
  unload(&l);
}

static void test_symbolic_dims(void) {
  /* x[N, 3, ?] → Relu → y: symbolic and unknown dims default to 1 */
  pb m = unary_model("Relu", ONNX_F32, DIMS(SYM, 3, UNKNOWN));
  loaded l;
  load_with(&l, &m, NULL);
  if (IMPORTED(&l)) {
    SHAPE_IS(l.g->inputs[0], 0, 1, 3, 1);
    SHAPE_IS(find_output(l.g, "y"), 0, 1, 3, 1);
    CHECK_STR(l.g->inputs[0]->name, "x");
  }
  unload(&l);

  /* --input-shape binds them */
  imp_input_shape shapes[2];
  gir_err e = {{0}};
  CHECK_INT(imp_parse_input_shape("x:4x3x5", &shapes[0], &e), 0);
  CHECK_INT(imp_parse_input_shape("not_an_input:9", &shapes[1], &e), 0);
  imp_options opt = {.shapes = shapes, .n_shapes = 1};
  m = unary_model("Relu", ONNX_F32, DIMS(SYM, 3, UNKNOWN));
  load_with(&l, &m, &opt);
  if (IMPORTED(&l)) {
    SHAPE_IS(l.g->inputs[0], 0, 4, 3, 5);
    SHAPE_IS(find_output(l.g, "y"), 0, 4, 3, 5);
  }
  unload(&l);

  /* a binding for a name that is no input is a mistake, reported as such */
  opt.n_shapes = 2;
  m = unary_model("Relu", ONNX_F32, DIMS(SYM, 3, UNKNOWN));
  load_with(&l, &m, &opt);
  CHECK(l.g == NULL && strstr(l.err.msg, "not_an_input") != NULL);
  unload(&l);

  /* the user's shape wins over declared fixed dims too */
  CHECK_INT(imp_parse_input_shape("x:6x2", &shapes[0], &e), 0);
  opt.n_shapes = 1;
  m = unary_model("Relu", ONNX_F32, DIMS(2, 2));
  load_with(&l, &m, &opt);
  if (IMPORTED(&l)) SHAPE_IS(find_output(l.g, "y"), 0, 6, 2);
  unload(&l);

  /* a bound shape whose element count overflows is refused, not imported */
  CHECK_INT(imp_parse_input_shape("x:4294967296x4294967296x4", &shapes[0], &e), 0);
  m = unary_model("Relu", ONNX_F32, DIMS(SYM, 3));
  load_with(&l, &m, &opt);
  FAILED_WITH(&l, NULL);
  unload(&l);

  /* other element types come through */
  m = unary_model("Neg", ONNX_I64, DIMS(5));
  load_with(&l, &m, NULL);
  if (IMPORTED(&l)) {
    CHECK_INT(l.g->inputs[0]->dtype, GIR_I64);
    CHECK_INT(find_output(l.g, "y") ? find_output(l.g, "y")->dtype : -1, GIR_I64);
  }
  unload(&l);
  m = unary_model("Not", ONNX_BOOL, DIMS(0, 4));
  load_with(&l, &m, NULL);
  if (IMPORTED(&l)) {
    CHECK_INT(l.g->inputs[0]->dtype, GIR_BOOL);
    SHAPE_IS(find_output(l.g, "y"), 0, 0, 4);
  }
  unload(&l);
  m = unary_model("Relu", ONNX_F16, NULL, 0); /* a scalar input */
  load_with(&l, &m, NULL);
  if (IMPORTED(&l)) {
    CHECK_INT(l.g->inputs[0]->dtype, GIR_F16);
    SHAPE_IS(find_output(l.g, "y"), 0);
  }
  unload(&l);
}

/* Each initializer is a graph output of its own, so its decoded payload can be
 * read back from the graph. */
typedef struct const_case {
  const char *name;
  gir_dtype dtype;
  int rank;
  int64_t dims[2];
  const void *want;
  size_t want_bytes;
} const_case;

static void test_constants(void) {
  pb g = {0}, t;
  const float f4[4] = {1.5f, -2.0f, 3.25f, 0.0f}, f3[3] = {0.5f, -1.0f, 7.0f}, f1 = 42.0f;
  const int64_t i2[2] = {-3, 1ll << 40};
  const double d2[2] = {0.1, -1e300};
  const int8_t i8[3] = {-5, 7, 127};
  const uint16_t u16[2] = {65535, 1}, h2[2] = {0x3c00, 0xc000}, bf1 = 0x3f80, hraw[2] = {0x3c00, 0x7c00};
  const uint8_t b3[3] = {0, 1, 1}, b3raw[3] = {0, 2, 1}, u8[2] = {200, 0};
  const uint32_t u32[2] = {4000000000u, 7};
  const uint64_t u64 = UINT64_MAX, u64s[2] = {4000000000u, 7};

  t = tensor_raw("raw_f32", ONNX_F32, DIMS(2, 2), f4, sizeof f4);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_floats("typed_f32", DIMS(3), f3, 3);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_floats("scalar_f32", NULL, 0, &f1, 1);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_raw("raw_i64", ONNX_I64, DIMS(2), i2, sizeof i2);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_i64", ONNX_I64, DIMS(2));
  pb_packed_varints(&t, T_INT64, i2, 2);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_i8", ONNX_I8, DIMS(3));
  pb_packed_varints(&t, T_INT32, (const int64_t[]){-5, 7, 127}, 3);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_u8", ONNX_U8, DIMS(2));
  pb_packed_varints(&t, T_INT32, (const int64_t[]){200, 0}, 2);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_u16", ONNX_U16, DIMS(2));
  pb_packed_varints(&t, T_INT32, (const int64_t[]){65535, 1}, 2);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_f16", ONNX_F16, DIMS(2)); /* half bit patterns in int32_data */
  pb_packed_varints(&t, T_INT32, (const int64_t[]){0x3c00, 0xc000}, 2);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_bf16", ONNX_BF16, DIMS(1));
  pb_packed_varints(&t, T_INT32, (const int64_t[]){0x3f80}, 1);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_raw("raw_f16", ONNX_F16, DIMS(2), hraw, sizeof hraw);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_bool", ONNX_BOOL, DIMS(3));
  pb_packed_varints(&t, T_INT32, (const int64_t[]){0, 2, 1}, 3);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_raw("raw_bool", ONNX_BOOL, DIMS(3), b3raw, sizeof b3raw); /* bytes other than 0/1 normalized */
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_f64", ONNX_F64, DIMS(2));
  pb_bytes(&t, T_DOUBLE, d2, sizeof d2);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_u32", ONNX_U32, DIMS(2));
  pb_packed_u64(&t, T_UINT64, u64s, 2);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("typed_u64", ONNX_U64, DIMS(1));
  pb_packed_u64(&t, T_UINT64, &u64, 1);
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_head("empty_f32", ONNX_F32, DIMS(0, 5)); /* no data at all */
  pb_sub(&g, GRAPH_INIT, &t);
  t = tensor_raw("empty_raw", ONNX_I32, DIMS(0), "", 0);
  pb_sub(&g, GRAPH_INIT, &t);

  /* Constant nodes: tensor (raw), value_float, value_int, value_ints, value_floats */
  pb n = node("Constant", "k_t", NULL, 0, STRS("c_t"));
  t = tensor_raw(NULL, ONNX_I64, DIMS(2), i2, sizeof i2);
  attr_tensor(&n, "value", &t);
  pb_sub(&g, GRAPH_NODE, &n);
  n = node("Constant", "k_f", NULL, 0, STRS("c_f"));
  attr_float(&n, "value_float", 2.5f);
  pb_sub(&g, GRAPH_NODE, &n);
  n = node("Constant", "k_i", NULL, 0, STRS("c_i"));
  attr_int(&n, "value_int", -7);
  pb_sub(&g, GRAPH_NODE, &n);
  n = node("Constant", "k_is", NULL, 0, STRS("c_is"));
  attr_ints(&n, "value_ints", (const int64_t[]){4, -5}, 2);
  pb_sub(&g, GRAPH_NODE, &n);
  n = node("Constant", "k_fs", NULL, 0, STRS("c_fs"));
  attr_floats(&n, "value_floats", (const float[]){0.5f, 1.5f}, 2);
  pb_sub(&g, GRAPH_NODE, &n);

  const char *outs[] = {"raw_f32", "typed_f32", "scalar_f32", "raw_i64", "typed_i64", "typed_i8", "typed_u8",
                        "typed_u16", "typed_f16", "typed_bf16", "raw_f16", "typed_bool", "raw_bool", "typed_f64",
                        "typed_u32", "typed_u64", "empty_f32", "empty_raw", "c_t", "c_f", "c_i", "c_is", "c_fs"};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    pb o = value_info(outs[i], ONNX_F32, NULL, -1);
    pb_sub(&g, GRAPH_OUTPUT, &o);
  }
  pb_str(&g, GRAPH_NAME, "constants");
  pb m = model(&g, 8, 17);
  loaded l;
  load_with(&l, &m, NULL);
  if (!IMPORTED(&l)) {
    unload(&l);
    return;
  }
  const float cf = 2.5f, cfs[2] = {0.5f, 1.5f};
  const int64_t ci = -7, cis[2] = {4, -5};
  const const_case cases[] = {
      {"raw_f32", GIR_F32, 2, {2, 2}, f4, sizeof f4},
      {"typed_f32", GIR_F32, 1, {3}, f3, sizeof f3},
      {"scalar_f32", GIR_F32, 0, {0}, &f1, 4},
      {"raw_i64", GIR_I64, 1, {2}, i2, sizeof i2},
      {"typed_i64", GIR_I64, 1, {2}, i2, sizeof i2},
      {"typed_i8", GIR_I8, 1, {3}, i8, sizeof i8},
      {"typed_u8", GIR_U8, 1, {2}, u8, sizeof u8},
      {"typed_u16", GIR_U16, 1, {2}, u16, sizeof u16},
      {"typed_f16", GIR_F16, 1, {2}, h2, sizeof h2},
      {"typed_bf16", GIR_BF16, 1, {1}, &bf1, 2},
      {"raw_f16", GIR_F16, 1, {2}, hraw, sizeof hraw},
      {"typed_bool", GIR_BOOL, 1, {3}, b3, sizeof b3},
      {"raw_bool", GIR_BOOL, 1, {3}, b3, sizeof b3},
      {"typed_f64", GIR_F64, 1, {2}, d2, sizeof d2},
      {"typed_u32", GIR_U32, 1, {2}, u32, sizeof u32},
      {"typed_u64", GIR_U64, 1, {1}, &u64, 8},
      {"empty_f32", GIR_F32, 2, {0, 5}, NULL, 0},
      {"empty_raw", GIR_I32, 1, {0}, NULL, 0},
      {"c_t", GIR_I64, 1, {2}, i2, sizeof i2},
      {"c_f", GIR_F32, 0, {0}, &cf, 4},
      {"c_i", GIR_I64, 0, {0}, &ci, 8},
      {"c_is", GIR_I64, 1, {2}, cis, sizeof cis},
      {"c_fs", GIR_F32, 1, {2}, cfs, sizeof cfs},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const const_case *k = &cases[i];
    gir_value *v = find_output(l.g, k->name);
    if (!CHECKF(v != NULL, "output %s missing", k->name)) continue;
    int shape_ok = v->shape.rank == k->rank;
    for (int d = 0; shape_ok && d < k->rank; d++) shape_ok = v->shape.dims[d] == k->dims[d];
    char b[160];
    CHECKF(v->dtype == k->dtype && shape_ok, "%s: %s[%s], expected %s", k->name, gir_dtype_name(v->dtype),
           gir_shape_str(&v->shape, b, sizeof b), gir_dtype_name(k->dtype));
    /* the output is the constant itself or a copy of it: find the payload */
    const gir_value *c = v->data ? v : (v->producer && v->producer->n_in ? v->producer->in[0] : NULL);
    if (!CHECKF(c && c->data, "%s: no constant payload", k->name)) continue;
    CHECKF(gir_value_nbytes(c) == (int64_t)k->want_bytes &&
               (!k->want_bytes || !memcmp(c->data, k->want, k->want_bytes)),
           "%s: payload differs", k->name);
  }
  /* parameters: every initializer and Constant element */
  int64_t elements = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    elements += (int64_t)cases[i].want_bytes / (int64_t)gir_dtype_size(cases[i].dtype);
  CHECK_INT(elements, 43);
  CHECK_INT(l.rep.param_count, elements);
  CHECK_INT(l.rep.onnx_nodes, 5);
  CHECK(l.rep.n_op_types == 1 && l.rep.op_counts[0] == 5);
  unload(&l);
}

/* An initializer listed among the inputs too (IR version 3 style) is a constant,
 * not a graph input. */
static void test_initializer_as_input(void) {
  const float w[2] = {1, 2};
  pb g = {0}, t = tensor_raw("w", ONNX_F32, DIMS(2), w, sizeof w);
  pb n = node("Add", "add", STRS("x", "w"), STRS("y"));
  pb x = value_info("x", ONNX_F32, DIMS(2)), wi = value_info("w", ONNX_F32, DIMS(2));
  pb y = value_info("y", ONNX_F32, DIMS(2));
  pb_sub(&g, GRAPH_INIT, &t);
  pb_sub(&g, GRAPH_NODE, &n);
  pb_sub(&g, GRAPH_INPUT, &x);
  pb_sub(&g, GRAPH_INPUT, &wi);
  pb_sub(&g, GRAPH_OUTPUT, &y);
  pb m = model(&g, 3, 8);
  loaded l;
  load_with(&l, &m, NULL);
  if (IMPORTED(&l)) {
    CHECK_INT(l.g->n_inputs, 1);
    CHECK_STR(l.g->inputs[0]->name, "x");
    CHECK_INT(l.rep.param_count, 2);
    CHECK_INT(l.rep.param_bytes, 8);
    gir_value *out = find_output(l.g, "y");
    CHECK(out && out->producer && out->producer->op == GIR_OP_binary);
  }
  unload(&l);
}

/* Builds a graph around one initializer tensor (consumed) used as the output. */
static pb init_model(pb *t, const char *name) {
  pb g = {0}, o = value_info(name, ONNX_F32, NULL, -1);
  pb_sub(&g, GRAPH_INIT, t);
  pb_sub(&g, GRAPH_OUTPUT, &o);
  return model(&g, 8, 13);
}

static void test_bad_tensors(void) {
  loaded l;
  const float f2[2] = {1, 2};
  pb t, m;
  t = tensor_raw("short_raw", ONNX_F32, DIMS(3), f2, sizeof f2);
  m = init_model(&t, "short_raw");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "short_raw");
  CHECK_CONTAINS(l.err.msg, "raw_data");
  unload(&l);

  t = tensor_floats("few_floats", DIMS(2, 2), f2, 2);
  m = init_model(&t, "few_floats");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "few_floats");
  unload(&l);

  t = tensor_floats("many_floats", DIMS(1), f2, 2);
  m = init_model(&t, "many_floats");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "many_floats");
  unload(&l);

  t = tensor_raw("bad_type", 99, DIMS(1), f2, 4);
  m = init_model(&t, "bad_type");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "bad_type");
  unload(&l);

  /* a string initializer: uint8 slots (README "String tensors"), 32 bytes each here */
  t = tensor_head("strings", ONNX_STRING, DIMS(2));
  pb_bytes(&t, 6, "abc", 3);
  pb_bytes(&t, 6, "", 0);
  m = init_model(&t, "strings");
  imp_options so = {.max_string_bytes = 32};
  load_with(&l, &m, &so);
  if (CHECKF(l.g && l.g->n_outputs == 1, "%s", l.err.msg)) {
    const gir_value *v = l.g->outputs[0];
    CHECK(v->dtype == GIR_U8 && v->string_bytes == 32 && v->shape.rank == 2 && v->shape.dims[0] == 2 &&
          v->shape.dims[1] == 32 && v->data);
    const uint8_t *d = v->data;
    if (d) CHECK(d[0] == 3 && d[1] == 0 && !memcmp(d + 4, "abc", 3) && d[7] == 0 && d[32] == 0 && d[36] == 0);
  }
  unload(&l);
  t = tensor_head("strings", ONNX_STRING, DIMS(2));
  pb_bytes(&t, 6, "abc", 3);
  m = init_model(&t, "strings");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "holds 1 strings, its dims need 2");
  unload(&l);
  t = tensor_head("strings", ONNX_STRING, DIMS(1));
  pb_bytes(&t, 6, "abcdefghij", 10);
  m = init_model(&t, "strings");
  so.max_string_bytes = 12;
  load_with(&l, &m, &so);
  FAILED_WITH(&l, "element 0 is 10 bytes, over the 8 a string slot holds");
  unload(&l);

  t = tensor_raw("neg_dim", ONNX_F32, DIMS(-2), f2, sizeof f2);
  m = init_model(&t, "neg_dim");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "neg_dim");
  unload(&l);

  t = tensor_raw("rank9", ONNX_F32, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1), f2, 4);
  m = init_model(&t, "rank9");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "rank9");
  unload(&l);

  t = tensor_raw("huge", ONNX_F32, DIMS(1ll << 32, 1ll << 32), f2, sizeof f2);
  m = init_model(&t, "huge");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "huge");
  unload(&l);

  t = tensor_raw("too_big", ONNX_F32, DIMS(1ll << 40), f2, sizeof f2); /* 4 TiB claimed, 8 bytes given */
  m = init_model(&t, "too_big");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "too_big");
  unload(&l);

  t = tensor_raw(NULL, ONNX_F32, DIMS(2), f2, sizeof f2); /* an initializer needs a name */
  m = init_model(&t, "w");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "name");
  unload(&l);

  /* external data is refused without a base folder */
  t = tensor_head("ext", ONNX_F32, DIMS(2));
  pb kv = {0};
  pb_str(&kv, 1, "location");
  pb_str(&kv, 2, "weights.bin");
  pb_sub(&t, T_EXTERNAL, &kv);
  pb_int(&t, T_LOCATION, 1);
  m = init_model(&t, "ext");
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "ext");
  unload(&l);
}

static pb graph_with_io(pb *nodes, int n_nodes, pb *inputs, int n_in, const char *const *outs, int n_out) {
  pb g = {0};
  for (int i = 0; i < n_nodes; i++) pb_sub(&g, GRAPH_NODE, &nodes[i]);
  pb_str(&g, GRAPH_NAME, "g");
  for (int i = 0; i < n_in; i++) pb_sub(&g, GRAPH_INPUT, &inputs[i]);
  for (int i = 0; i < n_out; i++) {
    pb o = value_info(outs[i], ONNX_F32, NULL, -1);
    pb_sub(&g, GRAPH_OUTPUT, &o);
  }
  return g;
}

static void test_bad_models(void) {
  loaded l;
  pb m, g, n[3], in[2];

  /* input declared without a shape */
  m = unary_model("Relu", ONNX_F32, NULL, -1);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "--input-shape");
  unload(&l);
  /* ... which --input-shape then fixes */
  imp_input_shape s;
  gir_err e = {{0}};
  imp_parse_input_shape("x:3", &s, &e);
  imp_options opt = {.shapes = &s, .n_shapes = 1};
  m = unary_model("Relu", ONNX_F32, NULL, -1);
  load_with(&l, &m, &opt);
  if (IMPORTED(&l)) SHAPE_IS(find_output(l.g, "y"), 0, 3);
  unload(&l);

  m = unary_model("Relu", ONNX_F32, DIMS(2, -3));
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "negative");
  unload(&l);

  m = unary_model("Relu", ONNX_F32, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1));
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "rank");
  unload(&l);

  m = unary_model("Relu", ONNX_F32, DIMS(1ll << 32, 1ll << 32));
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "x");
  unload(&l);

  m = unary_model("Relu", ONNX_STRING, DIMS(2));
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "string");
  unload(&l);

  m = unary_model("Relu", 77, DIMS(2));
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "77");
  unload(&l);

  /* a sequence-typed input */
  {
    pb vi = {0}, ty = {0}, seq = {0};
    pb_str(&vi, VI_NAME, "x");
    pb_sub(&ty, TYPE_SEQUENCE, &seq);
    pb_sub(&vi, VI_TYPE, &ty);
    n[0] = node("Relu", "r", STRS("x"), STRS("y"));
    g = graph_with_io(n, 1, &vi, 1, STRS("y"));
    m = model(&g, 8, 13);
    load_with(&l, &m, NULL);
    FAILED_WITH(&l, "not a tensor");
    unload(&l);
  }

  /* a node reading a name nothing defines */
  n[0] = node("Relu", "reader", STRS("nowhere"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 1, in, 1, STRS("y"));
  m = model(&g, 8, 13);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "nowhere");
  unload(&l);

  /* an output nothing produces */
  n[0] = node("Relu", "r", STRS("x"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 1, in, 1, STRS("y", "ghost"));
  m = model(&g, 8, 13);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "ghost");
  unload(&l);

  /* no outputs at all */
  n[0] = node("Relu", "r", STRS("x"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 1, in, 1, NULL, 0);
  m = model(&g, 8, 13);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "output");
  unload(&l);

  /* opsets: an IR 2 model imports none and means opset 1 */
  n[0] = node("Relu", "r", STRS("x"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 1, in, 1, STRS("y"));
  m = model(&g, 2, -1);
  load_with(&l, &m, NULL);
  if (IMPORTED(&l)) SHAPE_IS(find_output(l.g, "y"), 0, 2);
  unload(&l);
  /* importing only another domain, then using ai.onnx */
  n[0] = node("Relu", "r", STRS("x"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 1, in, 1, STRS("y"));
  m = (pb){0};
  {
    pb o = {0};
    pb_int(&m, MODEL_IR_VERSION, 8);
    pb_str(&o, OPSET_DOMAIN, "com.example");
    pb_int(&o, OPSET_VERSION, 1);
    pb_sub(&m, MODEL_OPSET, &o);
    pb_sub(&m, MODEL_GRAPH, &g);
  }
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "ai.onnx");
  CHECK_CONTAINS(l.err.msg, "'r'");
  unload(&l);
  /* too new, invalid */
  n[0] = node("Relu", "r", STRS("x"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 1, in, 1, STRS("y"));
  m = model(&g, 8, 99);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "99");
  unload(&l);
  n[0] = node("Relu", "r", STRS("x"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 1, in, 1, STRS("y"));
  m = model(&g, 8, 0);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "opset");
  unload(&l);

  /* no graph */
  m = model(NULL, 8, 13);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "graph");
  unload(&l);

  /* a sparse initializer */
  {
    const float f = 1;
    pb sp = {0}, vals = tensor_raw("v", ONNX_F32, DIMS(1), &f, 4);
    pb_sub(&sp, 1, &vals);
    n[0] = node("Relu", "r", STRS("x"), STRS("y"));
    in[0] = value_info("x", ONNX_F32, DIMS(2));
    g = graph_with_io(n, 1, in, 1, STRS("y"));
    pb_sub(&g, GRAPH_SPARSE_INIT, &sp);
    m = model(&g, 8, 13);
    load_with(&l, &m, NULL);
    FAILED_WITH(&l, "sparse");
    unload(&l);
  }

  /* bytes that are not a model */
  const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff};
  m = (pb){0};
  pb_put(&m, junk, sizeof junk);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "malformed");
  unload(&l);
  /* a valid model cut short at every length: refused with a message, never a crash */
  pb full = unary_model("Relu", ONNX_F32, DIMS(2, 3));
  int cut_ok = 1, cut_imported = 0;
  for (size_t len = 0; len < full.n; len++) {
    gir_err ce = {{0}};
    imp_report rep;
    imp_report_init(&rep);
    gir_graph *cg = imp_load_buffer(full.p, len, NULL, NULL, &rep, &ce);
    if (cg) cut_imported++;
    else if (!ce.msg[0] || strchr(ce.msg, '\n')) cut_ok = 0;
    gir_graph_free(cg);
    imp_report_free(&rep);
  }
  CHECKF(cut_ok, "a truncated model failed without a one-line message");
  CHECKF(cut_imported == 0, "%d truncated versions of the model imported", cut_imported);
  free(full.p);
  /* an empty buffer */
  {
    gir_err ee = {{0}};
    gir_graph *eg = imp_load_buffer("", 0, NULL, NULL, NULL, &ee);
    CHECKF(!eg && ee.msg[0], "empty buffer: %s", ee.msg);
    gir_graph_free(eg);
  }
}

static void test_unsupported(void) {
  loaded l;
  pb g, n[3], in[1], m;

  /* one unknown op: reported with its node, op type and opset */
  m = unary_model("FooBar", ONNX_F32, DIMS(2));
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "FooBar");
  CHECK_CONTAINS(l.err.msg, "the_node");
  if (CHECK_INT(l.rep.n_unsupported, 1)) {
    CHECK_STR(l.rep.unsupported[0].op_type, "FooBar");
    CHECK_STR(l.rep.unsupported[0].node_name, "the_node");
    CHECK_INT(l.rep.unsupported[0].opset, 13);
    CHECK(l.rep.unsupported[0].reason && l.rep.unsupported[0].reason[0]);
  }
  CHECK_INT(l.rep.onnx_nodes, 1);
  unload(&l);

  /* a foreign domain */
  n[0] = node("Relu", "custom", STRS("x"), STRS("y"));
  pb_str(&n[0], NODE_DOMAIN, "com.example");
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 1, in, 1, STRS("y"));
  m = model(&g, 8, 13);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "com.example");
  if (CHECK_INT(l.rep.n_unsupported, 1)) CHECK_STR(l.rep.unsupported[0].domain, "com.example");
  unload(&l);

  /* every unsupported op is reported, its consumers are not */
  n[0] = node("FooBar", "f1", STRS("x"), STRS("a"));
  n[1] = node("Relu", "after_f1", STRS("a"), STRS("b"));
  n[2] = node("BazQux", "f2", STRS("x"), STRS("c"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 3, in, 1, STRS("b", "c"));
  m = model(&g, 8, 13);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "2 unsupported ops");
  if (CHECK_INT(l.rep.n_unsupported, 2)) {
    CHECK_STR(l.rep.unsupported[0].op_type, "FooBar");
    CHECK_STR(l.rep.unsupported[1].op_type, "BazQux");
  }
  CHECK_INT(l.rep.onnx_nodes, 3);
  unload(&l);

  /* Without a report the import still fails when any output cannot be computed
   * (importer.h: NULL "when the model cannot be imported completely"). */
  for (int all = 0; all < 2; all++) {
    n[0] = node("Relu", "fine", STRS("x"), STRS("ok"));
    n[1] = node("FooBar", "bad", STRS("x"), STRS("broken"));
    in[0] = value_info("x", ONNX_F32, DIMS(2));
    g = all ? graph_with_io(n + 1, 1, in, 1, STRS("broken")) : graph_with_io(n, 2, in, 1, STRS("ok", "broken"));
    if (all) free(n[0].p);
    m = model(&g, 8, 13);
    gir_err e = {{0}};
    gir_graph *gg = imp_load_buffer(m.p, m.n, NULL, NULL, NULL, &e);
    CHECKF(!gg && e.msg[0], "%s outputs unsupported, no report: graph=%p, message \"%s\"", all ? "all" : "one of two",
           (void *)gg, e.msg);
    gir_graph_free(gg);
    free(m.p);
  }
}

static int write_file(const char *path, const void *d, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(d, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

/* --- sequences and optionals (ops_sequence.c; naming: importer.h) --- */

enum { ATTR_G = 6, ATTR_TP = 14, AT_GRAPH = 5, AT_TYPE_PROTO = 13, TYPE_OPTIONAL = 9, SEQ_ELEM = 1, OPT_ELEM = 1 };

/* value_info of a sequence of elem tensors, or (opt) of an optional of one. */
static pb seq_info(const char *name, int elem, int opt) {
  pb vi = {0}, ty = {0}, seq = {0}, et = {0}, tt = {0};
  pb_str(&vi, VI_NAME, name);
  pb_int(&tt, TT_ELEM, elem);
  pb_sub(&et, TYPE_TENSOR, &tt);
  pb_sub(&seq, SEQ_ELEM, &et);
  if (opt) {
    pb st = {0}, o = {0};
    pb_sub(&st, TYPE_SEQUENCE, &seq);
    pb_sub(&o, OPT_ELEM, &st);
    pb_sub(&ty, TYPE_OPTIONAL, &o);
  } else {
    pb_sub(&ty, TYPE_SEQUENCE, &seq);
  }
  pb_sub(&vi, VI_TYPE, &ty);
  return vi;
}

/* value_info of an optional tensor. */
static pb opt_tensor_info(const char *name, int elem) {
  pb vi = {0}, ty = {0}, o = {0}, et = {0}, tt = {0};
  pb_str(&vi, VI_NAME, name);
  pb_int(&tt, TT_ELEM, elem);
  pb_sub(&et, TYPE_TENSOR, &tt);
  pb_sub(&o, OPT_ELEM, &et);
  pb_sub(&ty, TYPE_OPTIONAL, &o);
  pb_sub(&vi, VI_TYPE, &ty);
  return vi;
}

static void attr_graph(pb *n, const char *name, pb *g) {
  pb a = {0};
  pb_str(&a, ATTR_NAME, name);
  pb_sub(&a, ATTR_G, g);
  pb_int(&a, ATTR_TYPE, AT_GRAPH);
  pb_sub(n, NODE_ATTR, &a);
}

static pb i64_init(const char *name, int64_t v) { return tensor_raw(name, ONNX_I64, NULL, 0, &v, sizeof v); }

/* The constant an output copies (outputs are named copies of what they hold), or NULL. */
static const gir_value *output_source(const gir_graph *g, const char *name) {
  const gir_value *o = find_output(g, name);
  if (!o) return NULL;
  return o->producer && o->producer->n_in ? o->producer->in[0] : o;
}

static int64_t const_i64(const gir_value *v) { return v && v->data ? gir_load_i64(v->dtype, v->data, 0) : -999; }

static void test_sequences(void) {
  loaded l;
  pb g, n[12], in[5], m, t;

  /* list edits: construct, insert at 1, at -1, length, concat, stack, split, erase; a sequence output */
  n[0] = node("SequenceConstruct", "sc", STRS("x", "y"), STRS("s"));
  n[1] = node("SequenceInsert", "si", STRS("s", "z", "one"), STRS("s2")); /* x z y */
  n[2] = node("SequenceAt", "sa", STRS("s2", "minus_one"), STRS("last"));
  n[3] = node("SequenceLength", "sl", STRS("s2"), STRS("len"));
  n[4] = node("ConcatFromSequence", "cat", STRS("s2"), STRS("cat"));
  attr_int(&n[4], "axis", 0);
  n[5] = node("ConcatFromSequence", "stk", STRS("s2"), STRS("stk"));
  attr_int(&n[5], "axis", -1);
  attr_int(&n[5], "new_axis", 1);
  n[6] = node("SplitToSequence", "split", STRS("cat"), STRS("parts"));
  attr_int(&n[6], "keepdims", 0);
  n[7] = node("SequenceErase", "erase", STRS("parts"), STRS("parts2"));
  for (int i = 0; i < 3; i++) in[i] = value_info((const char *[]){"x", "y", "z"}[i], ONNX_F32, DIMS(2, 3));
  g = graph_with_io(n, 8, in, 3, STRS("last", "len", "cat", "stk", "s2", "parts2"));
  t = i64_init("one", 1);
  pb_sub(&g, GRAPH_INIT, &t);
  t = i64_init("minus_one", -1);
  pb_sub(&g, GRAPH_INIT, &t);
  m = model(&g, 8, 13);
  load_with(&l, &m, NULL);
  if (IMPORTED(&l)) {
    CHECK_INT(l.g->n_outputs, 4 + 3 + 5);
    CHECK(output_source(l.g, "last") == l.g->inputs[1]);
    CHECK_INT(const_i64(output_source(l.g, "len")), 3);
    SHAPE_IS(find_output(l.g, "cat"), 0, 6, 3);
    SHAPE_IS(find_output(l.g, "stk"), 0, 2, 3, 3);
    CHECK(output_source(l.g, "s2.0") == l.g->inputs[0]);
    CHECK(output_source(l.g, "s2.1") == l.g->inputs[2]);
    CHECK(output_source(l.g, "s2.2") == l.g->inputs[1]);
    CHECK(find_output(l.g, "s2") == NULL && find_output(l.g, "s2.3") == NULL);
    SHAPE_IS(find_output(l.g, "parts2.4"), 0, 3);
    CHECK(find_output(l.g, "parts2.5") == NULL);
    gir_err e = {{0}};
    CHECKF(gir_verify(l.g, &e) == 0, "%s", e.msg);
  }
  unload(&l);

  /* sequence and optional inputs bound to known lists */
  float f[8] = {0};
  imp_known_input xs_items[2] = {{.name = "", .dtype = GIR_F32, .shape = {.rank = 1, .dims = {2}}, .data = f},
                                 {.name = "", .dtype = GIR_F32, .shape = {.rank = 1, .dims = {3}}, .data = f}};
  imp_known_input ot_item = {.name = "", .dtype = GIR_F32, .shape = {.rank = 1, .dims = {4}}, .data = f};
  imp_known_input os_leaf[3] = {{.name = "", .dtype = GIR_I64, .shape = {.rank = 0}, .data = f},
                                {.name = "", .dtype = GIR_I64, .shape = {.rank = 0}, .data = f},
                                {.name = "", .dtype = GIR_I64, .shape = {.rank = 0}, .data = f}};
  imp_known_input os_seq = {.name = "", .is_list = 1, .n_items = 3, .items = os_leaf};
  imp_known_input known[4] = {{.name = "xs", .is_list = 1, .n_items = 2, .items = xs_items},
                              {.name = "ot", .is_list = 1, .n_items = 1, .items = &ot_item},
                              {.name = "os", .is_list = 1, .n_items = 1, .items = &os_seq},
                              {.name = "oa", .is_list = 1, .n_items = 0}};
  imp_options opt = {.known = known, .n_known = 4};
  CHECK(imp_known_find(&opt, "xs.1") == &xs_items[1]);
  CHECK(imp_known_find(&opt, "ot") == &ot_item);
  CHECK(imp_known_find(&opt, "os.2") == &os_leaf[2]);
  CHECK(imp_known_find(&opt, "xs") == NULL && imp_known_find(&opt, "xs.2") == NULL);
  CHECK(imp_known_find(&opt, "xs.01") == NULL && imp_known_find(&opt, "oa") == NULL);
  n[0] = node("SequenceAt", "at", STRS("xs", "one"), STRS("a"));
  n[1] = node("OptionalGetElement", "get_t", STRS("ot"), STRS("b"));
  n[2] = node("OptionalGetElement", "get_s", STRS("os"), STRS("sq"));
  n[3] = node("SequenceLength", "len", STRS("sq"), STRS("n"));
  n[4] = node("OptionalHasElement", "has_a", STRS("oa"), STRS("has_a"));
  n[5] = node("OptionalHasElement", "has_t", STRS("ot"), STRS("has_t"));
  n[6] = node("Identity", "ys", STRS("xs"), STRS("ys"));
  n[7] = node("Identity", "za", STRS("oa"), STRS("za"));
  in[0] = seq_info("xs", ONNX_F32, 0);
  in[1] = opt_tensor_info("ot", ONNX_F32);
  in[2] = seq_info("os", ONNX_I64, 1);
  in[3] = seq_info("oa", ONNX_F32, 1);
  g = graph_with_io(n, 8, in, 4, STRS("a", "b", "n", "has_a", "has_t", "ys", "za"));
  t = i64_init("one", 1);
  pb_sub(&g, GRAPH_INIT, &t);
  m = model(&g, 8, 18);
  load_with(&l, &m, &opt);
  if (IMPORTED(&l)) {
    const char *names[] = {"xs.0", "xs.1", "ot", "os.0", "os.1", "os.2"};
    if (CHECK_INT(l.g->n_inputs, 6))
      for (int i = 0; i < 6; i++) CHECK_STR(l.g->inputs[i]->name, names[i]);
    SHAPE_IS(find_output(l.g, "a"), 0, 3);
    SHAPE_IS(find_output(l.g, "b"), 0, 4);
    CHECK_INT(const_i64(output_source(l.g, "n")), 3);
    CHECK_INT(const_i64(output_source(l.g, "has_a")), 0);
    CHECK_INT(const_i64(output_source(l.g, "has_t")), 1);
    CHECK(find_output(l.g, "ys.1") != NULL && find_output(l.g, "ys.2") == NULL);
    CHECK(find_output(l.g, "za") == NULL); /* an absent optional output is no tensor */
    CHECK_INT(l.g->n_outputs, 7);
  }
  unload(&l);

  /* a sequence input bound to a tensor, and one bound to nothing */
  n[0] = node("SequenceLength", "len", STRS("xs"), STRS("n"));
  in[0] = seq_info("xs", ONNX_F32, 0);
  g = graph_with_io(n, 1, in, 1, STRS("n"));
  m = model(&g, 8, 13);
  imp_known_input tensor_xs = {.name = "xs", .dtype = GIR_F32, .shape = {.rank = 1, .dims = {2}}, .data = f};
  imp_options topt = {.known = &tensor_xs, .n_known = 1};
  load_with(&l, &m, &topt);
  FAILED_WITH(&l, "bound to it is a tensor");
  unload(&l);

  /* positions must be known at compile time */
  n[0] = node("SequenceConstruct", "sc", STRS("x", "x"), STRS("s"));
  n[1] = node("SequenceAt", "sa", STRS("s", "p"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  in[1] = value_info("p", ONNX_I64, DIMS(1));
  g = graph_with_io(n, 2, in, 2, STRS("y"));
  m = model(&g, 8, 13);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "sequence position not known at compile time");
  if (CHECK_INT(l.rep.n_unsupported, 1)) CHECK_STR(l.rep.unsupported[0].op_type, "SequenceAt");
  unload(&l);

  /* a sequence where a tensor op wants a tensor; the absent optional's element */
  n[0] = node("SequenceConstruct", "sc", STRS("x"), STRS("s"));
  n[1] = node("Relu", "relu", STRS("s"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 2, in, 1, STRS("y"));
  m = model(&g, 8, 13);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "is a sequence");
  if (CHECK_INT(l.rep.n_unsupported, 1)) CHECK_STR(l.rep.unsupported[0].op_type, "Relu");
  unload(&l);
  n[0] = node("Optional", "none", NULL, 0, STRS("o"));
  {
    pb a = {0}, ty = {0}, tt = {0};
    pb_int(&tt, TT_ELEM, ONNX_F32);
    pb_sub(&ty, TYPE_TENSOR, &tt);
    pb_str(&a, ATTR_NAME, "type");
    pb_sub(&a, ATTR_TP, &ty);
    pb_int(&a, ATTR_TYPE, AT_TYPE_PROTO);
    pb_sub(&n[0], NODE_ATTR, &a);
  }
  n[1] = node("OptionalGetElement", "get", STRS("o"), STRS("y"));
  in[0] = value_info("x", ONNX_F32, DIMS(2));
  g = graph_with_io(n, 2, in, 1, STRS("y"));
  m = model(&g, 8, 18);
  load_with(&l, &m, NULL);
  FAILED_WITH(&l, "absent");
  unload(&l);

  /* a Loop whose carried sequence grows by one element per iteration */
  {
    pb body = {0}, bn[2], bi[3];
    bn[0] = node("Identity", "c", STRS("cond_in"), STRS("cond_out"));
    bn[1] = node("SequenceInsert", "ins", STRS("s_in", "x"), STRS("s_out"));
    for (int i = 0; i < 2; i++) pb_sub(&body, GRAPH_NODE, &bn[i]);
    pb_str(&body, GRAPH_NAME, "body");
    bi[0] = value_info("i", ONNX_I64, NULL, 0);
    bi[1] = value_info("cond_in", ONNX_BOOL, NULL, 0);
    bi[2] = seq_info("s_in", ONNX_F32, 0);
    for (int i = 0; i < 3; i++) pb_sub(&body, GRAPH_INPUT, &bi[i]);
    pb o1 = value_info("cond_out", ONNX_BOOL, NULL, 0), o2 = seq_info("s_out", ONNX_F32, 0);
    pb_sub(&body, GRAPH_OUTPUT, &o1);
    pb_sub(&body, GRAPH_OUTPUT, &o2);
    n[0] = node("SequenceEmpty", "empty", NULL, 0, STRS("e"));
    n[1] = node("Loop", "loop", STRS("three", "", "e"), STRS("r"));
    attr_graph(&n[1], "body", &body);
    in[0] = value_info("x", ONNX_F32, DIMS(2));
    g = graph_with_io(n, 2, in, 1, STRS("r"));
    t = i64_init("three", 3);
    pb_sub(&g, GRAPH_INIT, &t);
    m = model(&g, 8, 13);
    load_with(&l, &m, NULL);
    if (IMPORTED(&l)) {
      CHECK_INT(l.g->n_outputs, 3);
      CHECK(output_source(l.g, "r.2") == l.g->inputs[0]);
    }
    unload(&l);
  }

  /* an If yielding sequences of different lengths: cond must be known */
  for (int bound = 0; bound < 2; bound++) {
    pb tb = {0}, eb = {0}, tn = node("SequenceConstruct", "t", STRS("x"), STRS("ts"));
    pb en = node("SequenceConstruct", "e", STRS("x", "x"), STRS("es"));
    pb_sub(&tb, GRAPH_NODE, &tn);
    pb_str(&tb, GRAPH_NAME, "then");
    pb to = seq_info("ts", ONNX_F32, 0), eo = seq_info("es", ONNX_F32, 0);
    pb_sub(&tb, GRAPH_OUTPUT, &to);
    pb_sub(&eb, GRAPH_NODE, &en);
    pb_str(&eb, GRAPH_NAME, "else");
    pb_sub(&eb, GRAPH_OUTPUT, &eo);
    n[0] = node("If", "if", STRS("cond"), STRS("r"));
    attr_graph(&n[0], "then_branch", &tb);
    attr_graph(&n[0], "else_branch", &eb);
    in[0] = value_info("x", ONNX_F32, DIMS(2));
    in[1] = value_info("cond", ONNX_BOOL, NULL, 0);
    g = graph_with_io(n, 1, in, 2, STRS("r"));
    m = model(&g, 8, 13);
    uint8_t yes = 1;
    imp_known_input kc = {.name = "cond", .dtype = GIR_BOOL, .shape = {.rank = 0}, .data = &yes};
    imp_options copt = {.known = &kc, .n_known = 1};
    load_with(&l, &m, bound ? &copt : NULL);
    if (!bound) {
      FAILED_WITH(&l, "must be known at compile time");
    } else if (IMPORTED(&l)) {
      CHECK_INT(l.g->n_outputs, 1);
      CHECK(find_output(l.g, "r.0") != NULL);
    }
    unload(&l);
  }
}

static void test_files(void) {
  char dir[] = "/tmp/kiln_test_importer_XXXXXX";
  if (!CHECK(mkdtemp(dir) != NULL)) return;
  char path[512], wpath[512], sub[512];
  gir_err e = {{0}};

  /* missing file, folder */
  snprintf(path, sizeof path, "%s/missing.onnx", dir);
  CHECK(imp_load_file(path, NULL, NULL, &e) == NULL);
  CHECK_CONTAINS(e.msg, "missing.onnx");
  e.msg[0] = 0;
  CHECK(imp_load_file(dir, NULL, NULL, &e) == NULL);
  CHECK(e.msg[0] != 0);

  /* a model on disk whose weights live in weights.bin next to it */
  const float w[4] = {1, 2, 3, 4};
  snprintf(wpath, sizeof wpath, "%s/weights.bin", dir);
  unsigned char blob[32] = {0};
  memcpy(blob + 16, w, sizeof w);
  CHECK(write_file(wpath, blob, sizeof blob) == 0);
  struct {
    const char *location, *offset, *length, *fail_with;
  } ext[] = {
      {"weights.bin", "16", "16", NULL},
      {"weights.bin", "24", "16", "weights.bin"},   /* runs past the end of the file */
      {"weights.bin", "16", "8", "length"},         /* length disagrees with the dims */
      {"../weights.bin", "0", "16", "weights.bin"}, /* leaves the model's folder */
      {"/etc/passwd", "0", "16", "passwd"},         /* absolute */
      {"nope.bin", "0", "16", "nope.bin"},
      {"weights.bin", "-1", "16", "offset"},
  };
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
    pb t = tensor_head("wt", ONNX_F32, DIMS(2, 2)), kv = {0};
    const char *keys[3] = {"location", "offset", "length"}, *vals[3] = {ext[i].location, ext[i].offset, ext[i].length};
    for (int k = 0; k < 3; k++) {
      pb_str(&kv, 1, keys[k]);
      pb_str(&kv, 2, vals[k]);
      pb_sub(&t, T_EXTERNAL, &kv);
    }
    pb_int(&t, T_LOCATION, 1);
    pb m = init_model(&t, "wt");
    CHECK(write_file(path, m.p, m.n) == 0);
    free(m.p);
    gir_err fe = {{0}};
    imp_report rep;
    imp_report_init(&rep);
    gir_graph *g = imp_load_file(path, NULL, &rep, &fe);
    if (!ext[i].fail_with) {
      if (CHECKF(g != NULL, "external data %s: %s", ext[i].location, fe.msg)) {
        gir_value *v = find_output(g, "wt");
        CHECK(v && v->dtype == GIR_F32 && v->shape.rank == 2 && v->data && !memcmp(v->data, w, sizeof w));
        CHECK_INT(rep.param_count, 4);
      }
    } else {
      CHECKF(!g && fe.msg[0] && !strchr(fe.msg, '\n') && strstr(fe.msg, ext[i].fail_with),
             "external data %s offset %s length %s: expected a failure mentioning '%s', got \"%s\"", ext[i].location,
             ext[i].offset, ext[i].length, ext[i].fail_with, fe.msg);
    }
    gir_graph_free(g);
    imp_report_free(&rep);
  }
  /* a symbolic link to the weights is refused */
  snprintf(sub, sizeof sub, "%s/link.bin", dir);
  if (CHECK(symlink("weights.bin", sub) == 0)) {
    pb t = tensor_head("wt", ONNX_F32, DIMS(2, 2)), kv = {0};
    pb_str(&kv, 1, "location");
    pb_str(&kv, 2, "link.bin");
    pb_sub(&t, T_EXTERNAL, &kv);
    pb_int(&t, T_LOCATION, 1);
    pb m = init_model(&t, "wt");
    CHECK(write_file(path, m.p, m.n) == 0);
    free(m.p);
    gir_err fe = {{0}};
    gir_graph *g = imp_load_file(path, NULL, NULL, &fe);
    CHECKF(!g && strstr(fe.msg, "link"), "symlinked external data: %s", fe.msg);
    gir_graph_free(g);
    unlink(sub);
  }
  /* the same Identity model from a file imports like from memory */
  {
    pb m = unary_model("Identity", ONNX_F32, DIMS(4));
    CHECK(write_file(path, m.p, m.n) == 0);
    free(m.p);
    gir_err fe = {{0}};
    gir_graph *g = imp_load_file(path, NULL, NULL, &fe);
    CHECKF(g && g->n_outputs == 1 && g->outputs[0]->shape.dims[0] == 4, "%s", fe.msg);
    gir_graph_free(g);
  }
  unlink(path);
  unlink(wpath);
  CHECKF(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}

int main(void) {
  test_parse_input_shape();
  test_identity();
  test_symbolic_dims();
  test_constants();
  test_initializer_as_input();
  test_bad_tensors();
  test_bad_models();
  test_unsupported();
  test_sequences();
  test_files();
  return check_finish("test_importer");
}
