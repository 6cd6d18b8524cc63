/* ops_string.c — the ONNX ops on string tensors → the strop op (ops.def), whose
 * kernels lower/lower_str.c writes in loop IR: Equal on strings (opset 19+),
 * StringConcat (20), StringNormalizer (10), StringSplit (20), RegexFullMatch (20)
 * and ai.onnx.ml LabelEncoder (ml opsets 2-4: string keys or values, the
 * numeric-only form too). A string tensor is uint8 slots of the model's slot size
 * (gir_value.string_bytes, README "String tensors"); constant strings (attributes)
 * are checked against it here.
 *   StringSplit's pieces and StringNormalizer's kept strings are data-dependent
 * sizes: the output is sized by the most it can hold (StringSplit: the pieces a
 * slot's length allows, at most maxsplit + 1; StringNormalizer: the input's count)
 * and carries the actual size as its extent (gir_value.extent), as ops_dynamic.c's
 * ops do. RegexFullMatch's pattern is compiled here into a DFA table (regex.c). */
#include <string.h>
#include "ops.h"
#include "regex.h"

int imp_takes_strings(const char *op_type) {
  static const char *const ops[] = {"Equal", "StringConcat", "StringNormalizer", "StringSplit", "RegexFullMatch",
                                    "LabelEncoder", "Identity"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op_type, ops[i])) return 1;
  return 0;
}

static gir_node *strop(imp_ctx *c, gir_str_fn fn, gir_value **ins, int32_t n_in) {
  gir_node *nd = imp_new_node(c, GIR_OP_strop, ins, n_in, 3);
  gir_attr_set_int(c->g, nd, "fn", fn);
  gir_attr_set_int(c->g, nd, "w", imp_string_bytes(c));
  return nd;
}

static int finish(imp_ctx *c, imp_node *n, gir_node *nd) {
  if (gir_node_infer(c->g, nd, c->err) < 0) return -1;
  return imp_set_output(c, n, 0, nd->out[0]);
}

static int need_strings(imp_ctx *c, imp_node *n, int count) {
  for (int i = 0; i < count; i++)
    if (!imp_in(n, i) || !n->in[i]->string_bytes) return imp_fail(c, "input %d must be a string tensor", i);
  return 0;
}

/* Equal with string operands (ops_elementwise.c's imp_cv_binary sends it here). */
int imp_cv_string_equal(imp_ctx *c, imp_node *n) {
  if (need_strings(c, n, 2) < 0) return -1;
  return finish(c, n, strop(c, GIR_STR_EQUAL, n->in, 2));
}

int imp_cv_StringConcat(imp_ctx *c, imp_node *n) {
  if (need_strings(c, n, 2) < 0) return -1;
  return finish(c, n, strop(c, GIR_STR_CONCAT, n->in, 2));
}

int imp_cv_RegexFullMatch(imp_ctx *c, imp_node *n) {
  if (need_strings(c, n, 1) < 0) return -1;
  const Onnx__AttributeProto *p = imp_attr(n, "pattern");
  if (!p || !p->has_s) return imp_fail(c, "needs the attribute pattern");
  gir_arena *scratch = gir_arena_new();
  imp_regex_dfa d;
  char why[512];
  if (!scratch) return imp_fail(c, "out of memory");
  if (imp_regex_compile((const char *)p->s.data, p->s.len, 0, scratch, &d, why, sizeof why) < 0) {
    gir_arena_free(scratch);
    return imp_fail(c, "pattern '%.*s': %s", (int)(p->s.len > 200 ? 200 : p->s.len), (const char *)p->s.data, why);
  }
  gir_shape s = {.rank = 2, .dims = {d.n_states, IMP_REGEX_COLS}};
  gir_value *table = gir_const_new(c->g, NULL, GIR_I32, &s, d.table);
  gir_arena_free(scratch);
  gir_value *ins[2] = {n->in[0], table};
  return finish(c, n, strop(c, GIR_STR_REGEX, ins, 2));
}

int imp_cv_StringSplit(imp_ctx *c, imp_node *n) {
  if (need_strings(c, n, 1) < 0) return -1;
  const Onnx__AttributeProto *da = imp_attr(n, "delimiter");
  size_t nd = da && da->has_s ? da->s.len : 0;
  int64_t w = imp_string_bytes(c), cap = w - 4, maxsplit = imp_attr_int(n, "maxsplit", -1);
  if (nd > (size_t)cap) return imp_fail(c, "the delimiter is %zu bytes, longer than a string slot holds", nd);
  int64_t *delim = gir_arena_calloc(c->g->arena, nd + 1, sizeof *delim);
  if (!delim) return imp_fail(c, "out of memory");
  for (size_t i = 0; i < nd; i++) delim[i] = da->s.data[i];
  /* the most pieces a string of cap bytes splits into */
  int64_t pieces = nd ? cap / (int64_t)nd + 1 : (cap + 1) / 2;
  if (maxsplit >= 0 && maxsplit + 1 < pieces) pieces = maxsplit + 1;
  if (pieces < 1) pieces = 1;
  gir_node *nd_ = strop(c, GIR_STR_SPLIT, n->in, 1);
  gir_attr_set_ints(c->g, nd_, "delim", delim, (int32_t)nd);
  gir_attr_set_int(c->g, nd_, "maxsplit", maxsplit < 0 ? -1 : maxsplit);
  gir_attr_set_int(c->g, nd_, "pieces", pieces);
  if (gir_node_infer(c->g, nd_, c->err) < 0) return -1;
  nd_->out[0]->extent = nd_->out[2];
  nd_->out[0]->extent_axis = n->in[0]->shape.rank - 1; /* the pieces' axis in the ONNX shape */
  if (imp_set_output(c, n, 0, nd_->out[0]) < 0) return -1;
  return imp_set_output(c, n, 1, nd_->out[1]);
}

/* Strings attribute `name` (absent: count 0) as a string constant [count]. */
static gir_value *strings_const(imp_ctx *c, const imp_node *n, const char *name, int32_t *count) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  *count = a ? (int32_t)a->n_strings : 0;
  if (!a) return NULL;
  imp_string *s = gir_arena_calloc(c->g->arena, a->n_strings + 1, sizeof *s);
  if (!s) {
    imp_fail(c, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < a->n_strings; i++) s[i] = (imp_string){a->strings[i].data, (int64_t)a->strings[i].len};
  gir_shape sh = {.rank = 1, .dims = {(int64_t)a->n_strings}};
  return imp_string_const(c, NULL, &sh, s, name);
}

int imp_cv_StringNormalizer(imp_ctx *c, imp_node *n) {
  if (need_strings(c, n, 1) < 0) return -1;
  const char *act = imp_attr_string(c, n, "case_change_action", "NONE");
  const char *loc = imp_attr_string(c, n, "locale", "");
  int64_t cs = !strcmp(act, "NONE") ? 0 : !strcmp(act, "LOWER") ? 1 : !strcmp(act, "UPPER") ? 2 : -1;
  if (cs < 0) return imp_fail(c, "case_change_action '%s' is none of LOWER, UPPER, NONE", act);
  if (loc[0] && strncmp(loc, "en", 2) && strcmp(loc, "C") && strcmp(loc, "POSIX"))
    return imp_fail(c, "locale '%s' is not supported: kiln maps case in ASCII, as en_US and C do", loc);
  const gir_value *x = n->in[0];
  if (x->shape.rank != 2 && !(x->shape.rank == 3 && x->shape.dims[0] == 1))
    return imp_fail(c, "input must be [C] or [1, C]");
  int32_t k;
  gir_value *stops = strings_const(c, n, "stopwords", &k);
  if (imp_attr(n, "stopwords") && !stops) return -1;
  gir_value *ins[2] = {n->in[0], k ? stops : NULL};
  gir_node *nd = strop(c, GIR_STR_NORMALIZE, ins, 2);
  gir_attr_set_int(c->g, nd, "case", cs);
  gir_attr_set_int(c->g, nd, "sensitive", imp_attr_int(n, "is_case_sensitive", 0) != 0);
  if (gir_node_infer(c->g, nd, c->err) < 0) return -1;
  nd->out[0]->extent = nd->out[2];
  nd->out[0]->extent_axis = x->shape.rank - 2;
  return imp_set_output(c, n, 0, nd->out[0]);
}

/* LabelEncoder's keys or values: the NAME_strings / NAME_int64s / NAME_floats
 * attribute, or NAME_tensor (ml opset 4). NULL with *err when absent or bad. */
static gir_value *ml_list(imp_ctx *c, const imp_node *n, const char *name, int *err) {
  char an[64];
  int32_t cnt;
  snprintf(an, sizeof an, "%s_strings", name);
  if (imp_attr(n, an)) {
    gir_value *v = strings_const(c, n, an, &cnt);
    if (!v) *err = -1;
    return v;
  }
  snprintf(an, sizeof an, "%s_int64s", name);
  int64_t *iv;
  if ((cnt = imp_attr_ints(c, n, an, &iv)) >= 0) {
    gir_shape s = {.rank = 1, .dims = {cnt}};
    return gir_const_new(c->g, NULL, GIR_I64, &s, iv);
  }
  snprintf(an, sizeof an, "%s_floats", name);
  double *fv;
  if ((cnt = imp_attr_floats(c, n, an, &fv)) >= 0) {
    gir_shape s = {.rank = 1, .dims = {cnt}};
    gir_value *v = gir_const_new(c->g, NULL, GIR_F32, &s, NULL);
    for (int32_t i = 0; i < cnt; i++) gir_store_f64(GIR_F32, v->data, i, fv[i]);
    return v;
  }
  snprintf(an, sizeof an, "%s_tensor", name);
  if (imp_attr(n, an)) {
    gir_value *v = imp_attr_tensor(c, n, an);
    if (!v) *err = -1;
    else if (v->shape.rank != (v->string_bytes ? 2 : 1)) *err = imp_fail(c, "%s must be one-dimensional", an);
    return *err ? NULL : v;
  }
  *err = imp_fail(c, "needs %s_strings, %s_int64s, %s_floats or %s_tensor", name, name, name, name);
  return NULL;
}

int imp_cv_LabelEncoder(imp_ctx *c, imp_node *n) {
  if (!n->proto->domain || strcmp(n->proto->domain, "ai.onnx.ml")) return imp_unsupported_node(c, n, "no converter");
  if (n->opset < 2) return imp_fail(c, "LabelEncoder of ai.onnx.ml opset %lld (before 2) is not supported", (long long)n->opset);
  gir_value *x = imp_in(n, 0);
  if (!x) return imp_fail(c, "needs an input");
  int err = 0;
  gir_value *keys = ml_list(c, n, "keys", &err), *vals = keys ? ml_list(c, n, "values", &err) : NULL;
  if (err || !keys || !vals) return -1;
  gir_value *def;
  if (imp_attr(n, "default_tensor")) {
    if (!(def = imp_attr_tensor(c, n, "default_tensor"))) return -1;
    if (gir_value_numel(def) != (def->string_bytes ? def->string_bytes : 1))
      return imp_fail(c, "default_tensor must hold one value");
  } else if (vals->string_bytes) {
    const char *d = imp_attr_string(c, n, "default_string", "_Unused");
    imp_string s = {(const uint8_t *)d, (int64_t)strlen(d)};
    gir_shape one = {.rank = 1, .dims = {1}};
    if (!(def = imp_string_const(c, NULL, &one, &s, "default_string"))) return -1;
  } else {
    gir_shape one = {.rank = 1, .dims = {1}};
    def = gir_const_new(c->g, NULL, vals->dtype, &one, NULL);
    if (gir_dtype_is_int(vals->dtype)) gir_store_i64(vals->dtype, def->data, 0, imp_attr_int(n, "default_int64", -1));
    else gir_store_f64(vals->dtype, def->data, 0, imp_attr_float(n, "default_float", -0.0));
  }
  if (!!x->string_bytes != !!keys->string_bytes || (!x->string_bytes && x->dtype != keys->dtype))
    return imp_fail(c, "the keys are %s, the input %s", keys->string_bytes ? "strings" : gir_dtype_name(keys->dtype),
                    x->string_bytes ? "strings" : gir_dtype_name(x->dtype));
  if (def->dtype != vals->dtype || !!def->string_bytes != !!vals->string_bytes)
    return imp_fail(c, "the default's type differs from the values'");
  gir_value *ins[4] = {x, keys, vals, def};
  return finish(c, n, strop(c, GIR_STR_LABEL, ins, 4));
}
