/* scalar.h — one-scalar semantics of the TE / loop-IR operators (scalar.c). */
#ifndef LOWER_SCALAR_H
#define LOWER_SCALAR_H
#include <stdint.h>
#include "te.h"

typedef union tir_value {
  int64_t i; /* integers and bool */
  double f;  /* floats */
} tir_value;

int64_t tir_wrap_int(gir_dtype t, int64_t v);   /* to t's width: sign- or zero-extended, bool 0/1 */
double tir_round_float(gir_dtype t, double v);  /* to t's precision */
/* op applied to operand(s) of dtype t (the result has t, or bool for
 * comparisons, ISNAN and ISINF). */
tir_value tir_value_unop(te_unop op, gir_dtype t, tir_value a);
tir_value tir_value_binop(te_binop op, gir_dtype t, tir_value a, tir_value b);
tir_value tir_value_cast(gir_dtype to, gir_dtype from, tir_value a);
/* The bits of a (of dtype from) read as dtype to of the same size. */
tir_value tir_value_bitcast(gir_dtype to, gir_dtype from, tir_value a);

#endif
