/* plan.h — the execution plan of a compiled graph: where every value lives at run
 * time (a graph input or output buffer, a range of params.bin for constants, a
 * range of the arena for intermediates and kernel workspace, placed by the memory
 * planner from their lifetimes) and the ordered kernel calls with their buffer
 * arguments. */
#ifndef PACK_PLAN_H
#define PACK_PLAN_H
#include "bundle.h"
#include "lower.h"
#include "memplan.h"

typedef struct pack_plan {
  pack_call *calls;
  int32_t n_calls;
  void *params;             /* the constants, packed (arena-owned) */
  int64_t params_bytes;
  pack_plan_stats mem;      /* arena bytes and the liveness lower bound */
  int64_t workspace_bytes;  /* part of the arena used by kernel workspace at its peak */
  pack_arg *out_extent;     /* per graph output: where its actual extent (gir_value.extent) lives after a
                               run, kind PACK_ARG_KIND_COUNT for a static output */
} pack_plan;

/* Builds the plan; everything is allocated in arena a. */
int pack_build_plan(const gir_graph *g, const lower_program *p, gir_arena *a, pack_plan *out, gir_err *err);

#endif
