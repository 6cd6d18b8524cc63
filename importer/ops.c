/* ops.c — the registry of ONNX converters, generated from onnx_ops.def. */
#include <string.h>
#include "ctx.h"
#include "ops.h"

static const struct {
  const char *op_type;
  imp_convert_fn fn;
} table[] = {
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
#undef IMP_OP
};

/* The ops of the other domains converted (ai.onnx.preview, ai.onnx.preview.training,
 * ai.onnx.ml), apart so that no op type of one domain finds a converter of another.
 * Each converter checks its node's exact domain and that domain's opset. */
static const struct {
  const char *op_type;
  imp_convert_fn fn;
} domain_table[] = {
#define IMP_OP(op, fn) {#op, fn},
#include "onnx_ops_preview.def"
#include "onnx_ops_ml.def"
#undef IMP_OP
};

imp_convert_fn imp_find_converter(const char *op_type, int64_t opset) {
  (void)opset; /* converters check versions themselves */
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(table[i].op_type, op_type)) return table[i].fn;
  return NULL;
}

static const struct {
  const char *op_type;
  imp_convert_fn fn;
} contrib_table[] = {
#define IMP_OP(op, fn) {#op, fn},
#include "onnx_ops_contrib.def"
#undef IMP_OP
};

imp_convert_fn imp_find_contrib_converter(const char *op_type) {
  for (size_t i = 0; i < sizeof contrib_table / sizeof contrib_table[0]; i++)
    if (!strcmp(contrib_table[i].op_type, op_type)) return contrib_table[i].fn;
  return NULL;
}

imp_convert_fn imp_find_domain_converter(const char *op_type) {
  for (size_t i = 0; i < sizeof domain_table / sizeof domain_table[0]; i++)
    if (!strcmp(domain_table[i].op_type, op_type)) return domain_table[i].fn;
  return NULL;
}
