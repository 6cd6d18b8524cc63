/* arith.h — integer arithmetic analysis of loop-IR expressions: what the
 * simplifier, the loop passes and bound inference use to reason about index math.
 *
 * Two tools:
 * - Interval analysis. An arith_ctx maps variables in scope (loop variables,
 *   let-bound values, facts learnt from enclosing conditions) to inclusive
 *   ranges; arith_bounds gives a range that every value of an integer expression
 *   lies in, given those. Results are sound under the IR's wrapping semantics:
 *   whenever a computation could overflow its dtype, the answer is the dtype's
 *   full range. uint64 is never reasoned about (always "full": its order is not
 *   int64's) and neither are floats.
 * - A canonical linear form, Σ coef·atom + const, for integer expressions built
 *   from +, -, negation and multiplication by constants. Atoms are the maximal
 *   subexpressions that are not such (variables, div/mod, loads, products of two
 *   non-constants...), kept sorted in a fixed structural order and merged when
 *   structurally equal, so x*4 + y*2 + x*8 becomes x*12 + y*2. Coefficients and
 *   constant are the dtype's signed representatives, the form is exact modulo
 *   2^bits (the dtype's ring), and "the integer Σ coef·atom + c" equals the
 *   expression's value whenever its range fits in the dtype — which
 *   arith_linear_bounds checks with non-wrapping arithmetic.
 *
 * Temporaries (linear forms, context entries) live in the context's arena. */
#ifndef ARITH_H
#define ARITH_H
#include "tir.h"

typedef struct arith_range {
  int64_t min, max; /* inclusive; min > max means empty */
} arith_range;

typedef struct arith_binding {
  const tir_var *var;
  arith_range r;
} arith_binding;

typedef struct arith_ctx {
  gir_arena *arena;
  int32_t n, cap;
  arith_binding *b; /* a stack: the latest binding of a variable wins */
} arith_ctx;

void arith_ctx_init(arith_ctx *c, gir_arena *a);
/* Scopes: mark before entering, reset to the mark when leaving. */
int32_t arith_ctx_mark(const arith_ctx *c);
void arith_ctx_reset(arith_ctx *c, int32_t mark);
/* Enters v ∈ r, intersected with what is already known of v. */
void arith_ctx_push(arith_ctx *c, const tir_var *v, arith_range r);
/* What is known of v (its dtype's full range if nothing). */
arith_range arith_ctx_lookup(const arith_ctx *c, const tir_var *v);
/* Enters what `cond` being `truth` implies about the variables in it (loop
 * variables bounded by comparisons, conjunctions of them...). Sound, possibly
 * weak; never wrong. */
void arith_ctx_assume(arith_ctx *c, const tir_expr *cond, int truth);

/* The representable range of an integer dtype; [INT64_MIN, INT64_MAX] for
 * int64, uint64 and every non-integer type. */
arith_range arith_full(gir_dtype t);
/* A range containing every value of e (over all lanes of a vector). */
arith_range arith_bounds(const arith_ctx *c, const tir_expr *e);
/* 1: cond is true (in every lane) whenever evaluated in c; 0: always false;
 * -1: unknown. */
int arith_prove(const arith_ctx *c, const tir_expr *cond);
/* The exact (mathematical, non-wrapping) range of a - b for scalar integer
 * expressions of one dtype; 0 on success, -1 when it cannot be bounded. */
int arith_diff_bounds(const arith_ctx *c, const tir_expr *a, const tir_expr *b, arith_range *out);

/* The values of v for which cond provably holds whatever the values of its
 * other terms (for_all = 1), or for which it can hold (for_all = 0). cond is a
 * comparison of scalar integers that is linear in v (v appears only as a term
 * v·k, nowhere inside another atom), or a conjunction of such (and conjuncts
 * without v: for_all needs them proved, otherwise they are ignored). Returns 0
 * and sets *out (empty when min > max) on success, -1 when cond has another
 * form. */
int arith_solve(const arith_ctx *c, const tir_expr *cond, const tir_var *v, int for_all, arith_range *out);

/* Structural total order and equality of expressions (constants by value,
 * variables and buffers by id). */
int arith_expr_cmp(const tir_expr *a, const tir_expr *b);
int arith_expr_equal(const tir_expr *a, const tir_expr *b);
/* Whether e reads v. */
int arith_uses_var(const tir_expr *e, const tir_var *v);
/* The greatest common divisor of a and b (not negative; gcd(a, 0) = |a|). */
int64_t arith_gcd(int64_t a, int64_t b);

/* --- linear forms --- */

typedef struct arith_term {
  const tir_expr *atom;
  int64_t coef; /* non-zero signed representative in the dtype */
} arith_term;

typedef struct arith_linear {
  gir_dtype dtype;
  int32_t n;
  arith_term *t; /* sorted by arith_expr_cmp of the atoms, atoms distinct */
  int64_t c;
} arith_linear;

/* Whether linear forms apply to t: integer types other than bool. */
int arith_linear_dtype(gir_dtype t);
/* The linear form of a scalar expression of such a type (an expression of any
 * other type or lanes becomes a single atom). Also folds d·floordiv(x, d) +
 * floormod(x, d) (and the truncating pair) back into x. */
arith_linear arith_linear_of(const arith_ctx *c, const tir_expr *e);
arith_linear arith_linear_const(gir_dtype t, int64_t v);
/* x + k·y, exact modulo 2^bits. */
arith_linear arith_linear_add(const arith_ctx *c, const arith_linear *x, const arith_linear *y, int64_t k);
/* The coefficient of atom `var` (a variable reference), 0 if absent. */
int64_t arith_linear_coef(const arith_linear *l, const tir_var *v);
/* The range of the integer Σ coef·atom + c, each atom ranging over its bounds;
 * 0 on success, -1 if that computation overflows int64. */
int arith_linear_bounds(const arith_ctx *c, const arith_linear *l, arith_range *out);
/* Whether the linear form's integer value always fits its dtype (and therefore
 * equals the value of the expression it came from). */
int arith_linear_exact(const arith_ctx *c, const arith_linear *l);
/* a - b for scalar integer expressions of one dtype, as a "mathematical" linear
 * form: exact int64 coefficients (not reduced modulo 2^bits) over the operands'
 * own forms where those are exact, the operands themselves as atoms where not.
 * Its integer value is a - b without wrapping. 0 on success, -1 when the types
 * do not allow it (uint64, bool, vectors) or int64 overflows. */
int arith_linear_diff(const arith_ctx *c, const tir_expr *a, const tir_expr *b, arith_linear *out);
/* The canonical expression: positive terms in order, then negative ones
 * subtracted, then the constant. */
tir_expr *arith_linear_expr(tir_builder *b, const arith_linear *l);

/* Floor division and modulo of int64 (b != 0; floor of INT64_MIN / -1 is not
 * asked for). */
int64_t arith_floordiv(int64_t a, int64_t b);
int64_t arith_floormod(int64_t a, int64_t b);

#endif
