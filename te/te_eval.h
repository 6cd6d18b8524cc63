/* te_eval.h — the tensor-expression interpreter: evaluates a compute stage (and
 * every stage it reads) element by element, exactly as its definition says. It is
 * the constant folder's engine and the reference executor that code generation is
 * tested against; it is not meant to be fast. */
#ifndef TE_EVAL_H
#define TE_EVAL_H
#include "te.h"

typedef struct te_binding {
  te_tensor *t;     /* a placeholder */
  const void *data; /* row-major, t->dtype elements */
} te_binding;

/* Evaluates `out` into out_data (row-major, out->dtype). Scratch buffers of the
 * intermediate stages are allocated in scratch. `budget` bounds the number of
 * expression nodes evaluated (0: unbounded); exceeding it, an out-of-bounds load
 * (bad gather indices...) or an unbound placeholder is an error. */
int te_eval(te_ctx *c, te_tensor *out, const te_binding *bind, int32_t n_bind, void *out_data, gir_arena *scratch,
            int64_t budget, gir_err *err);

#endif
