/* tir_simplify.h — the arithmetic simplifier of the loop IR, and substitution.
 *
 * The simplifier rewrites expressions and statements into cheaper ones that
 * compute exactly the same thing (bit for bit: integer wrapping, division by
 * zero and float rounding included; see tir/tir_eval.h). What it does:
 * - folds constants with the interpreter's own operator functions (float
 *   operations only where the result is correctly rounded, so it cannot differ
 *   from what compiled code computes);
 * - applies exact identities (x+0, x*1, x*0 and x-x on integers, double
 *   negation, select on a constant condition, min/max of ordered operands...);
 * - puts integer index expressions into the canonical linear form of arith.h
 *   (like terms collected, (x/d)*d + x%d folded back into x);
 * - applies div/mod rules where operands are provably non-negative or within a
 *   range ((x*4 + y)/4 → x and (x*4 + y)%4 → y for 0 <= y < 4, nested div/mod);
 * - decides comparisons from the ranges of loop variables, and uses what an
 *   if's condition says about variables inside its branches;
 * - removes dead statements: if on a constant condition, loops of extent 0,
 *   loops of extent 1 (variable replaced by min), lets of constants and plain
 *   variables (inlined), empty branches;
 * - normalises loops to start at 0 (for v in [m, +e) becomes for v in [0, +e)
 *   with m + v for v in the body), so that v's range is known relative to m.
 * A statement that vanishes entirely becomes an empty seq (tir_nop). */
#ifndef TIR_SIMPLIFY_H
#define TIR_SIMPLIFY_H
#include "arith.h"

/* e simplified, knowing what ctx knows (NULL: nothing). Everything is built in
 * b's arena; ctx's arena holds temporaries. */
tir_expr *tir_simplify_expr(tir_builder *b, arith_ctx *ctx, tir_expr *e);
/* Requires: a well-typed statement tree. Preserves: what it computes. */
tir_stmt *tir_simplify(tir_builder *b, tir_stmt *s);
/* Same, inside the loops and facts ctx describes (left as it was found). */
tir_stmt *tir_simplify_in(tir_builder *b, arith_ctx *ctx, tir_stmt *s);

/* An empty statement, and whether s is one (NULL, or a seq of nothing). */
tir_stmt *tir_nop(tir_builder *b);
int tir_stmt_is_nop(const tir_stmt *s);
/* Whether s reads v anywhere. */
int tir_stmt_uses_var(const tir_stmt *s, const tir_var *v);

/* Every read of vars[i] replaced by values[i] (of the variable's dtype). Nodes
 * that do not change are shared, not copied. A loop or let that binds one of
 * the variables again hides it from its body. */
tir_expr *tir_substitute_expr_n(tir_builder *b, tir_expr *e, int32_t n, const tir_var *const *vars,
                                tir_expr *const *values);
tir_stmt *tir_substitute_n(tir_builder *b, tir_stmt *s, int32_t n, const tir_var *const *vars,
                           tir_expr *const *values);
tir_expr *tir_substitute_expr(tir_builder *b, tir_expr *e, const tir_var *v, tir_expr *value);
tir_stmt *tir_substitute(tir_builder *b, tir_stmt *s, const tir_var *v, tir_expr *value);

#endif
