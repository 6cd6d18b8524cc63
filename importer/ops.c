/* ops.c — the registry of ONNX converters, generated from onnx_ops.def. */
#include <string.h>
#include "ctx.h"
#include "ops.h"

typedef struct entry {
  const char *op_type;
  imp_convert_fn fn;
} entry;

static imp_convert_fn find(const entry *t, size_t n, const char *op_type) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(t[i].op_type, op_type)) return t[i].fn;
  return NULL;
}

static const entry table[] = {
#define IMP_OP(op, fn) {#op, fn},
#include "onnx_ops.def"
#include "onnx_ops_tensor.def"
#include "onnx_ops_nn.def"
#include "onnx_ops_reduce.def"
#include "onnx_ops_rnn.def"
#include "onnx_ops_attention.def"
#include "onnx_ops_loss.def"
#include "onnx_ops_signal.def"
#include "onnx_ops_sequence.def"
#include "onnx_ops_misc2.def"
#include "onnx_ops_random.def"
#include "onnx_ops_string.def"
#undef IMP_OP
};

/* The ops of the other domains converted (ai.onnx.preview, ai.onnx.preview.training,
 * ai.onnx.ml), apart so that no op type of one domain finds a converter of another.
 * Each converter checks its node's exact domain and that domain's opset. */
static const entry domain_table[] = {
#define IMP_OP(op, fn) {#op, fn},
#include "onnx_ops_preview.def"
#include "onnx_ops_ml.def"
#undef IMP_OP
};

imp_convert_fn imp_find_converter(const char *op_type, int64_t opset) {
  (void)opset; /* converters check versions themselves */
  return find(table, sizeof table / sizeof table[0], op_type);
}

/* ONNX Runtime's com.microsoft ops (ops_contrib.c), apart for the same reason. */
static const entry contrib_table[] = {
#define IMP_OP(op, fn) {#op, fn},
#include "onnx_ops_contrib.def"
#undef IMP_OP
};

imp_convert_fn imp_find_contrib_converter(const char *op_type) {
  return find(contrib_table, sizeof contrib_table / sizeof contrib_table[0], op_type);
}

imp_convert_fn imp_find_domain_converter(const char *op_type) {
  return find(domain_table, sizeof domain_table / sizeof domain_table[0], op_type);
}
