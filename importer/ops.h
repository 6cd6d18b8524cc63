/* ops.h — declarations of every converter named in onnx_ops.def. */
#ifndef IMP_OPS_H
#define IMP_OPS_H
#include "ctx.h"

#define IMP_OP(op, fn) int fn(imp_ctx *c, imp_node *n);
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
#include "onnx_ops_preview.def"
#include "onnx_ops_ml.def"
#include "onnx_ops_contrib.def"
#undef IMP_OP

/* Strings (ops_string.c): whether op_type takes string tensors; Equal on strings. */
int imp_takes_strings(const char *op_type);
int imp_cv_string_equal(imp_ctx *c, imp_node *n);

/* The converter of an op of ai.onnx.preview, ai.onnx.preview.training or ai.onnx.ml
 * (ops.c), NULL if none. */
imp_convert_fn imp_find_domain_converter(const char *op_type);
/* The converter of a com.microsoft op (onnx_ops_contrib.def), NULL if none. */
imp_convert_fn imp_find_contrib_converter(const char *op_type);

/* QLinearMatMul's arithmetic (ops_nn.c) with an optional int32 bias added to the
 * accumulator before requantizing — also a QDQ Gemm unit's (qdq.c). NULL + error. */
gir_value *imp_qlinear_matmul(imp_ctx *c, gir_value *a, gir_value *as, gir_value *azp, gir_value *b, gir_value *bs,
                              gir_value *bzp, gir_value *ys, gir_value *yzp, gir_value *bias);

/* Data-dependent extents through ONNX ops (extent.c): whether node n may read a
 * value with one, and, after its conversion, the extents of its outputs (0, or -1
 * + error when they would not keep it). */
int imp_extent_accepts(imp_ctx *c, const imp_node *n);
int imp_extent_propagate(imp_ctx *c, imp_node *n);

/* An LSTM whose products by W and R another converter supplies (ops_rnn.c): fn returns
 * a [.., K] times direction d's W^T (recurrent = 0, K = input size) or R^T (recurrent
 * = 1, K = hidden size) as float32 [.., 4·hidden]. The gates are then summed as ONNX
 * Runtime's deep_cpu LSTM does, (X·W^T + H·R^T) + (Wb + Rb); layout 0, inputs W and R
 * of the node are not read (the owner checks them). Used by DynamicQuantizeLSTM. */
typedef struct imp_rnn_matmul imp_rnn_matmul;
struct imp_rnn_matmul {
  gir_value *(*fn)(imp_ctx *c, const imp_rnn_matmul *m, gir_value *a, int64_t d, int recurrent);
  int64_t hidden_size;
};
int imp_lstm_with_matmul(imp_ctx *c, imp_node *n, const imp_rnn_matmul *m);
/* QLinearSoftmax's arithmetic (ops_contrib_quant.c) with the Softmax opset given, not
 * read from attribute opset — also a QDQ Softmax unit's (qdq.c), at the model's opset. */
int imp_qlinear_softmax(imp_ctx *c, imp_node *n, int64_t opset);
/* Runs the importer's converter of an ai.onnx op (fn at `opset`) on ins with node n's
 * attributes, n_out outputs into outs (ops_contrib_quant.c). 0, or -1 with the error set. */
int imp_contrib_onnx_op(imp_ctx *c, const imp_node *n, imp_convert_fn fn, const char *op, int64_t opset,
                        gir_value **ins, int32_t n_in, gir_value **outs, int32_t n_out);

/* Helpers shared by converters (ops_common.c). */
/* An optional constant that is absent or holds only zeros (a zero point that is 0). */
int imp_zero_or_absent(const gir_value *v);
/* Reads ints from attribute `name` (opset < since) or from input idx (opset >= since). */
int imp_ints_attr_or_input(imp_ctx *c, imp_node *n, const char *name, int idx, int64_t since, int64_t **out,
                           int32_t *cnt);
/* The op's element-wise unary/binary function from its ONNX name. */
int imp_unary_fn_of(const char *op_type);
int imp_binary_fn_of(const char *op_type);
/* INTS attribute of exactly `want` values; absent or empty gives `def` each
 * (*present, if given, says whether it was there). */
int imp_spatial_ints(imp_ctx *c, const imp_node *n, const char *name, int want, int64_t def, int64_t *out,
                     int *present);
/* Concatenation of n values along axis, in rounds when n exceeds concat's 64 inputs. */
gir_value *imp_concat_many(imp_ctx *c, gir_value *const *xs, int64_t n, int64_t axis);
/* Inlines a graph attribute once (ops_control.c): ins bound to its inputs, outs[g->n_output]
 * receives its outputs; 0, -1 (error) or -2 (unsupported ops inside, already reported). */
int imp_inline_graph(imp_ctx *c, const imp_node *n, const Onnx__GraphProto *g, const char *label,
                     gir_value *const *ins, size_t n_ins, gir_value **outs);
/* Normalizes a possibly negative axis against rank, with an error naming the op. */
int imp_axis(imp_ctx *c, int64_t axis, int32_t rank, int64_t *out);

#endif
