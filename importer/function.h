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

#endif
