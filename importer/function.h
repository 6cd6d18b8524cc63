/* function.h — model-local functions (FunctionProto), inlined at their call sites. */
#ifndef IMP_FUNCTION_H
#define IMP_FUNCTION_H
#include "ctx.h"

/* The model-local function called (domain, op_type), or NULL. */
const Onnx__FunctionProto *imp_find_function(imp_ctx *c, const char *domain, const char *op_type);
/* Converts the function's body in place of node n: formal inputs bound to n's
 * inputs, attribute references resolved against n's attributes, inner names
 * made unique, outputs bound to n's outputs. 0, -1 (error) or -2 (unsupported). */
int imp_inline_function(imp_ctx *c, const Onnx__FunctionProto *fn, imp_node *n);

#define IMP_MAX_OPSET 27 /* newest ai.onnx opset of the onnx release we test against */

/* Inlined nodes are bounded: a few kilobytes of functions calling each other twice
 * per level would otherwise expand exponentially. */
#define IMP_MAX_INLINED_NODES (1 << 18)

/* Counts the nodes that inlining the function calls of graph g (subgraphs and
 * nested calls included) will create; -1 with a message naming the function when
 * a function calls itself, or when the total is above IMP_MAX_INLINED_NODES. Run
 * before anything is converted. */
int imp_check_functions(imp_ctx *c, const Onnx__GraphProto *g);

#endif
