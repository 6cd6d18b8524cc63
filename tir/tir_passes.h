/* tir_passes.h — loop-IR passes that rewrite a kernel's statement tree. Each one
 * preserves what the tree computes (tests/unit/test_passes.c runs random loop
 * nests through them with the interpreter of tir_eval.h) and says in a line
 * what it requires and what it guarantees. Everything new is built in the
 * builder's arena. The simplifier and substitution live in tir_simplify.h. */
#ifndef TIR_PASSES_H
#define TIR_PASSES_H
#include "tir_simplify.h"

/* Requires: nothing. Guarantees: no UNROLLED loop remains — those with a
 * constant extent <= max_extent are replaced by one copy of their body per
 * iteration (variable replaced by its value, then simplified), the others
 * become SERIAL. Copies are simplified before their own loops are looked at,
 * so inner extents that depend on the outer variable count as constants. */
tir_stmt *tir_unroll(tir_builder *b, tir_stmt *s, int64_t max_extent);

/* Requires: nothing. Guarantees: a loop with constant bounds whose body tests
 * conditions linear in its variable (if statements, if_then_else and select
 * conditions: padding and non-divisible-split guards) is split into a prologue,
 * a main loop on the range where those conditions are provably true (and are
 * therefore gone), and an epilogue; each piece is simplified (pieces of extent
 * 1 become straight-line code) and partitioned further. A vectorized loop is cut
 * too (each piece a shorter vector without the test) — except, with masked_loads,
 * around a masked load (tir_is_masked_load), which the vectorizer keeps whole. As
 * TVM's LoopPartition, without the need for "likely" hints. */
tir_stmt *tir_loop_partition(tir_builder *b, tir_stmt *s, int masked_loads);

/* Requires: nothing. Guarantees: a loop (not a vectorized one) whose body tests,
 * inside an inner loop, a condition that reads no memory and no variable bound in
 * the body, has the body `if (all those tests) {body, each test true} else {body}`:
 * the ragged last tile of a fused parallel loop keeps its guards, the full tiles
 * lose them (pass_unswitch.c). */
tir_stmt *tir_unswitch(tir_builder *b, tir_stmt *s);

/* Requires: flat buffer indices. Guarantees: VECTORIZED loops become vector
 * statements (ramp/broadcast, vector loads and stores) where that is safe, the
 * others (a body holding a dot4 among them) SERIAL loops (pass_vectorize.c). With
 * masked_loads (the target loads vectors under a mask: x86 with AVX2 or AVX-512), a
 * masked load over the lanes stays a vector. */
tir_stmt *tir_vectorize(tir_builder *b, tir_stmt *s, int masked_loads);
/* if_then_else(c, buf[i], x) with nothing but that load reading memory: per lane a
 * masked load (a padded input read through its bounds test) */
int tir_is_masked_load(const tir_expr *e);

/* The loop-IR pipeline every kernel goes through after schedule lowering:
 * simplify → loop partition → vectorize → unroll → unswitch → simplify
 * (lower_passes.c). */
/* Four unrolled 8-bit multiply-adds into one int32 accumulator vector (the int8
 * conv template's quads of input channels) into one TIR_DOT4 (pass_dot4.c). */
tir_stmt *tir_fuse_dot4(tir_builder *b, tir_stmt *s);

/* Requires: vectorized code. Guarantees: the same values at every load and store;
 * gather and scatter indices whose every intermediate value provably fits in int32
 * are computed in int32 and widened at the end (pass_narrow.c). */
tir_stmt *tir_narrow_indices(tir_builder *b, tir_stmt *s);

/* masked_loads: lower_target.masked_loads */
tir_stmt *tir_optimize(tir_builder *b, tir_stmt *s, int masked_loads);

#endif
