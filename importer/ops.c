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
