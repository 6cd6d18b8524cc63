/* passes_vectorize.h — the vectorize pass (pass_vectorize.c). */
#ifndef PASSES_VECTORIZE_H
#define PASSES_VECTORIZE_H
#include "tir.h"

/* Rewrites VECTORIZED loops into vector statements where safe; the others
 * become serial loops. Requires: flat buffer indices. Preserves: semantics. */
tir_stmt *tir_vectorize(tir_builder *b, tir_stmt *s);

#endif
