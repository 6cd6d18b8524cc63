/* qdq.h — QDQ node units (qdq.c): DequantizeLinear → Conv/MatMul/Gemm (or Add, Mul,
 * AveragePool, GlobalAveragePool, Sigmoid, LeakyRelu, Softmax, Concat) →
 * QuantizeLinear found before the top-level graph is converted, each converted as one
 * QLinear op at its QuantizeLinear. */
#ifndef IMP_QDQ_H
#define IMP_QDQ_H
#include "ctx.h"

/* IMP_QDQ_ORT_FLOAT: a float op of a quantized model that ONNX Runtime runs with its
 * float kernel, a LayerNormalization of a DequantizeLinear's output, converted with
 * imp_ctx.ort_float set: a QuantizeLinear after it turns its last bit into a whole
 * step now and then. */
enum { IMP_QDQ_NONE = 0, IMP_QDQ_SKIPPED, IMP_QDQ_QUANTIZE, IMP_QDQ_ORT_FLOAT };

typedef struct imp_qdq_out imp_qdq_out;

typedef struct imp_qdq_plan {
  size_t n_nodes;
  uint8_t *role;    /* per node: IMP_QDQ_* */
  int32_t *op_of;   /* per QuantizeLinear of a unit: the index of its op */
  int32_t *readers; /* per node: inputs (here and in subgraphs) that read its outputs */
  imp_qdq_out *outs; /* every node output, sorted by name: producer lookups in log time */
  size_t n_outs;
  int32_t units;
} imp_qdq_plan;

int imp_qdq_plan_build(imp_ctx *c, const Onnx__GraphProto *gp, imp_qdq_plan *p);
/* At the unit's QuantizeLinear q: 1 converted as one QLinear op, 0 unfit (nothing
 * emitted: the caller converts the Conv/MatMul and then q as usual), -1 error. */
int imp_qdq_convert(imp_ctx *c, const imp_qdq_plan *p, Onnx__NodeProto *const *nodes, size_t q);

#endif
