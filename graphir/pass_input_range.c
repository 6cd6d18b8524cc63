/* pass_input_range.c — which values may an integer graph input take? (see
 * passes.h: gir_input_ranges)
 *
 * Tools that invent input data (`kiln run` / `kiln bench` without input files)
 * must not feed a token-id input numbers the embedding table has no row for: the
 * model would read out of bounds or, at best, the comparison with another
 * runtime would fail on the inputs. The compiler knows better: it sees where an
 * input ends up. For each integer input we follow its values forward through the
 * ops that only move or select them — casts between integer types, reshapes,
 * transposes, slices, broadcasts, tiles, concats, the data operand of a gather or
 * of a scatter without a reduction — to the index operands of gather,
 * gather_elements, gather_nd, scatter_elements and scatter_nd. Each such use
 * accepts [0, n) for the size n of the axis (or axes) it indexes; the input gets
 * the smallest such range (negative indices are valid too, but an inventor does
 * not need them). Anything else computes new values from the input ("derived"):
 * if a derived value reaches an index operand, no invented data is known to be
 * valid, and the input is marked as needing given data. One forward pass over
 * the nodes in topological order per input: O(nodes × inputs). */
#include <stdlib.h>
#include "passes.h"

enum { NOT_REACHED = 0, SAME_VALUES = 1, DERIVED = 2 };

/* The operand through which the values move to the output unchanged (-1: none),
 * for op with the reached operand at slot. */
static int moves_values(const gir_node *n, int slot) {
  switch (n->op) {
  case GIR_OP_reshape: case GIR_OP_transpose: case GIR_OP_slice: case GIR_OP_broadcast_to: case GIR_OP_tile:
  case GIR_OP_concat:
    return 1;
  case GIR_OP_cast:
    return gir_dtype_is_int(n->out[0]->dtype);
  case GIR_OP_gather: case GIR_OP_gather_elements: case GIR_OP_gather_nd:
    return slot == 0;
  case GIR_OP_scatter_elements: case GIR_OP_scatter_nd:
    return (slot == 0 || slot == 2) && gir_attr_int(n, "reduction", GIR_SCATTER_NONE) == GIR_SCATTER_NONE;
  default:
    return 0;
  }
}

/* The largest value + 1 an integer type holds, capped at INT64_MAX. */
static int64_t type_limit(gir_dtype t) {
  int bits = gir_dtype_bits(t) - gir_dtype_is_signed(t);
  return bits >= 63 ? INT64_MAX : (int64_t)1 << bits;
}

/* Whether slot is an index operand of n; *n_out gets the size of the axis it
 * indexes (the smallest of the axes, for gather_nd / scatter_nd tuples). */
static int index_operand(const gir_node *n, int slot, int64_t *n_out) {
  const gir_shape *d = n->in[0] ? &n->in[0]->shape : NULL;
  if (slot != 1 || !d || !n->in[1]) return 0;
  switch (n->op) {
  case GIR_OP_gather: case GIR_OP_gather_elements: case GIR_OP_scatter_elements: {
    int64_t axis = gir_attr_int(n, "axis", 0);
    if (axis < 0) axis += d->rank;
    if (axis < 0 || axis >= d->rank) return 0;
    *n_out = d->dims[axis];
    return 1;
  }
  case GIR_OP_gather_nd: case GIR_OP_scatter_nd: {
    const gir_shape *ix = &n->in[1]->shape;
    int64_t b = n->op == GIR_OP_gather_nd ? gir_attr_int(n, "batch_dims", 0) : 0;
    int64_t k = ix->rank ? ix->dims[ix->rank - 1] : 0, m = INT64_MAX;
    for (int64_t a = b; a < b + k && a < d->rank; a++)
      if (d->dims[a] < m) m = d->dims[a];
    *n_out = m == INT64_MAX ? 0 : m;
    return 1;
  }
  default:
    return 0;
  }
}

static void analyze(const gir_graph *g, const gir_value *input, uint8_t *state, gir_input_range *r) {
  for (int i = 0; i < g->n_values; i++) state[i] = NOT_REACHED;
  state[input->id] = SAME_VALUES;
  *r = (gir_input_range){GIR_VALUES_ANY, 0, 0};
  int64_t hi = INT64_MAX, bound = INT64_MAX; /* bound: type limits on the way */
  int derived_index = 0;
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    int out_state = NOT_REACHED;
    for (int j = 0; j < n->n_in; j++) {
      const gir_value *v = n->in[j];
      if (!v || state[v->id] == NOT_REACHED) continue;
      int64_t axis_n;
      if (index_operand(n, j, &axis_n)) {
        if (state[v->id] == DERIVED) derived_index = 1;
        else if (axis_n < hi) hi = axis_n;
      }
      int s = state[v->id] == SAME_VALUES && moves_values(n, j) ? SAME_VALUES : DERIVED;
      if (index_operand(n, j, &axis_n) && !moves_values(n, j)) s = NOT_REACHED; /* the output holds data, not indices */
      if (n->op == GIR_OP_cast && s == SAME_VALUES && type_limit(n->out[0]->dtype) < bound)
        bound = type_limit(n->out[0]->dtype);
      if (s > out_state) out_state = s;
    }
    for (int o = 0; o < n->n_out; o++)
      if (n->out[o] && out_state > state[n->out[o]->id]) state[n->out[o]->id] = (uint8_t)out_state;
  }
  if (derived_index) r->kind = GIR_VALUES_GIVEN;
  else if (hi != INT64_MAX) *r = (gir_input_range){GIR_VALUES_RANGE, 0, hi < bound ? hi : bound};
}

int gir_input_ranges(const gir_graph *g, gir_input_range *out, gir_err *err) {
  uint8_t *state = calloc((size_t)g->n_values + 1, 1);
  if (!state) return gir_errf(err, "input ranges: out of memory");
  for (int i = 0; i < g->n_inputs; i++) {
    const gir_value *v = g->inputs[i];
    if (gir_dtype_is_int(v->dtype)) analyze(g, v, state, &out[i]);
    else out[i] = (gir_input_range){GIR_VALUES_ANY, 0, 0};
  }
  free(state);
  return 0;
}
