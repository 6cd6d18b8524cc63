/* memplan.h — static memory planning: every intermediate tensor has a size and a
 * lifetime (the steps between its producer and its last consumer); the planner
 * places them in one arena so that tensors alive at the same time never overlap,
 * and reports the arena size next to the liveness lower bound (the largest total
 * size alive at any step), so users see how close the plan is to optimal. */
#ifndef PACK_MEMPLAN_H
#define PACK_MEMPLAN_H
#include <stdint.h>
#include "err.h"

#define PACK_ALIGN 64

typedef struct pack_tensor {
  int64_t bytes;
  int32_t first, last; /* inclusive step range during which it must stay intact */
  int64_t offset;      /* out: byte offset in the arena, PACK_ALIGN-aligned */
} pack_tensor;

typedef struct pack_plan_stats {
  int64_t arena_bytes;
  int64_t lower_bound;  /* max over steps of the (aligned) bytes alive */
  int64_t naive_bytes;  /* the sum of all sizes: what no reuse would need */
} pack_plan_stats;

/* Greedy by size: largest first, each at the lowest offset that overlaps no
 * placed tensor whose lifetime intersects its own. 0, or -1 on overflow. */
int pack_plan_memory(pack_tensor *t, int32_t n, pack_plan_stats *stats, gir_err *err);

#endif
