/* lower_passes.c — the fixed loop-IR pipeline after schedule lowering. The
 * simplifier first cleans the index arithmetic bound inference and split/fuse
 * produce, so that loop partition can solve boundary conditions; partition peels
 * padding and non-dividing-split guards off the main loops, which the vectorizer
 * then accepts; unrolling expands UNROLLED loops into straight code;
 * unswitching then takes the guards partition cannot solve (a ragged tile's rows,
 * through the modulo of a fused loop, each row a constant once unrolled) out of
 * the inner loops; a last
 * simplification folds what unrolling exposed, and four unrolled 8-bit
 * multiply-adds into one accumulator become one 4-way dot product (pass_dot4.c); last,
 * gather and scatter indices that fit move to 32-bit arithmetic (pass_narrow.c). */
#include "tir_passes.h"

#define UNROLL_MAX_EXTENT 64

tir_stmt *tir_optimize(tir_builder *b, tir_stmt *s, int masked_loads) {
  s = tir_simplify(b, s);
  s = tir_loop_partition(b, s, masked_loads);
  s = tir_vectorize(b, s, masked_loads);
  s = tir_unroll(b, s, UNROLL_MAX_EXTENT);
  s = tir_unswitch(b, s);
  return tir_narrow_indices(b, tir_fuse_dot4(b, tir_simplify(b, s)));
}
