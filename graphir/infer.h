/* infer.h — shape/dtype inference functions, one per canonical op (ops.def), and
 * helpers shared by them. Internal to graphir: callers use gir_node_infer. Each
 * function sets the dtype and shape of every output of n or returns -1 with a
 * message (gir_node_infer adds the node's name and origin). */
#ifndef GIR_INFER_H
#define GIR_INFER_H
#include "graph.h"

#define GIR_OP(name, cat, min_in, max_in, n_out) int gir_infer_##name(gir_graph *g, gir_node *n, gir_err *err);
#include "ops.def"
#undef GIR_OP

/* numpy broadcasting of a and b into out; -1 if incompatible. */
int gir_broadcast(const gir_shape *a, const gir_shape *b, gir_shape *out, gir_err *err);
/* Normalizes axis in [-rank, rank) to [0, rank); -1 if out of range. */
int gir_norm_axis(int64_t axis, int32_t rank, int64_t *out, gir_err *err);
/* Sets output slot i; checks the element count stays within int64. */
int gir_set_out(gir_node *n, int i, gir_dtype t, const gir_shape *s, gir_err *err);

#endif
