/* schedule.h — schedules, after Halide/TVM: how the stages of a tensor-expression
 * program become loops, separately from what they compute. A schedule holds one
 * stage per compute tensor reachable from the outputs, in producer-first order.
 * Each stage has iteration variables (its output axes, its reduce axes, and the
 * ones split/fuse derive from them), a leaf order (the loop nest, outermost first)
 * with annotations (parallel, vectorized, unrolled, GPU binding), and an attach
 * point: at the root, inlined into its consumers, or computed at a loop of
 * another stage (bound inference then computes only the region needed there).
 *
 * Invariant kept by sch_create: a stage's body is either free of reductions or is
 * a single reduction at the top (nested reductions are split out into stages of
 * their own), so every stage's reduce axes are schedulable iteration variables.
 *
 * Primitives return 0, or -1 with a message in the schedule's error (a bad factor,
 * an iteration variable of another stage, inlining a reduction…). Knobs are plain
 * data (so that a tuner, planned, could enumerate them). */
#ifndef SCHEDULE_H
#define SCHEDULE_H
#include "te.h"
#include "tir.h"

typedef struct sch_stage sch_stage;

typedef struct sch_iter {
  int32_t id;
  const char *name;
  int64_t extent;
  int reduce;             /* a reduction variable (or derived only from them) */
  tir_for_kind kind;      /* annotation when it becomes a loop */
  const char *thread_tag; /* GPU binding: "blockIdx.x", "threadIdx.y"… or NULL */
  te_var *root;           /* the TE variable for original axes, NULL for derived */
  sch_stage *stage;
} sch_iter;

typedef enum sch_rel_kind { SCH_SPLIT, SCH_FUSE } sch_rel_kind;

typedef struct sch_rel {
  sch_rel_kind kind;
  sch_iter *parent;       /* split: the iteration split */
  sch_iter *outer, *inner;/* split: results; fuse: the inputs */
  sch_iter *fused;        /* fuse: result */
  int64_t factor;         /* split: inner extent */
} sch_rel;

typedef enum sch_attach { SCH_ROOT, SCH_INLINE, SCH_AT } sch_attach;

/* A software prefetch (sch_prefetch): at the top of each iteration of loop
 * `at`, count cache lines of placeholder t, from element `index` on, stride
 * elements apart; each address is clamped into t. */
typedef struct sch_prefetch_rec {
  sch_iter *at;
  te_tensor *t;
  te_expr *index;   /* int64, over the stage's root and reduce variables */
  int32_t count;
  int64_t stride;
} sch_prefetch_rec;

struct sch_stage {
  int32_t id;
  te_tensor *t;
  te_expr *body;           /* after inlining producers and splitting out reductions */
  sch_iter **root_axes;    /* one per output axis */
  sch_iter **reduce_axes;  /* of the top-level reduction, if any */
  int32_t n_root, n_reduce;
  sch_iter **leaf;         /* loop order, outermost first */
  int32_t n_leaf;
  sch_rel *rels;
  int32_t n_rels, cap_rels;
  sch_attach attach;
  sch_stage *at_stage;
  sch_iter *at_iter;
  tir_scope scope;
  int is_output;
  sch_prefetch_rec *prefetch;
  int32_t n_prefetch;
  const char *template_name; /* the schedule template that scheduled it (templates.c), or NULL */
  const struct sch_wmma *wmma; /* tensorized on tensor cores (sch_tensorize_wmma), or NULL */
};

typedef struct sch_schedule {
  te_ctx *te;
  gir_arena *arena;
  gir_err *err;
  sch_stage **stages;      /* producers before consumers */
  int32_t n_stages;
  te_tensor **inputs;      /* placeholders, in kernel parameter order */
  int32_t n_inputs;
  te_tensor **outputs;
  int32_t n_outputs;
  int32_t next_iter;
} sch_schedule;

/* A schedule for computing outputs from the placeholders inputs (both in kernel
 * parameter order: inputs first, then outputs). Every stage starts at the root
 * with its loops in axis order, serial. */
sch_schedule *sch_create(te_ctx *c, te_tensor *const *inputs, int32_t n_in, te_tensor *const *outputs, int32_t n_out,
                         gir_err *err);
sch_stage *sch_stage_of(sch_schedule *s, const te_tensor *t);

int sch_split(sch_schedule *s, sch_stage *st, sch_iter *it, int64_t factor, sch_iter **outer, sch_iter **inner);
int sch_fuse(sch_schedule *s, sch_stage *st, sch_iter *outer, sch_iter *inner, sch_iter **fused);
/* New leaf order for the listed iterators (they keep the positions the listed set
 * occupied; unlisted leaves stay where they are). */
int sch_reorder(sch_schedule *s, sch_stage *st, sch_iter *const *order, int32_t n);
/* split x and y, order x_outer, y_outer, x_inner, y_inner. */
int sch_tile(sch_schedule *s, sch_stage *st, sch_iter *x, sch_iter *y, int64_t fx, int64_t fy, sch_iter **xo,
             sch_iter **yo, sch_iter **xi, sch_iter **yi);
int sch_annotate(sch_schedule *s, sch_stage *st, sch_iter *it, tir_for_kind kind); /* vectorize/unroll/parallel */
/* A reduce loop may be bound to threadIdx.x only: it must then be the stage's
 * outermost reduce loop with serial reduce loops inside, and lowers to a
 * cross-thread reduction (TVM's allreduce; sch_lower.c). */
int sch_bind(sch_schedule *s, sch_stage *st, sch_iter *it, const char *thread_tag);
/* Every other reader of producer must be inlined or already computed at the same
 * loop `at` (a sibling after it: its reads widen producer's region). */
int sch_compute_at(sch_schedule *s, sch_stage *producer, sch_stage *consumer, sch_iter *at);
int sch_compute_inline(sch_schedule *s, sch_stage *st);
int sch_compute_root(sch_schedule *s, sch_stage *st);
int sch_set_scope(sch_schedule *s, sch_stage *st, tir_scope scope);
/* Prefetch hints (TVM's prefetch, made explicit): at the top of each iteration
 * of st's loop `at`, prefetch `count` lines of placeholder t starting at element
 * `index` (an int64 TE expression over st's root and reduce variables; loops
 * inside `at` count as 0 there), `stride` elements apart, each address clamped
 * into the tensor. Schedules use it to
 * fetch the next reuse window's data while computing on the current one. */
int sch_prefetch(sch_schedule *s, sch_stage *st, sch_iter *at, te_tensor *t, te_expr *index, int32_t count,
                 int64_t stride);
/* cache_read: a new stage copying t for the readers listed (scope as given);
 * readers then load the copy. cache_write: st's computation moves into a new
 * stage (returned) in `scope`, st becomes a copy of it (e.g. accumulate in
 * registers, then write back). */
sch_stage *sch_cache_read(sch_schedule *s, te_tensor *t, tir_scope scope, sch_stage *const *readers, int32_t n);
/* cache_read of t extended by lo[i] / hi[i] elements before / after axis i that hold
 * `value` (a zero-padded window): the readers' loads t[i] become copy[i + lo], so
 * their own tests for taps outside t may go (the caller drops them). */
sch_stage *sch_cache_read_pad(sch_schedule *s, te_tensor *t, tir_scope scope, const int64_t *lo, const int64_t *hi,
                              double value, sch_stage *const *readers, int32_t n);
sch_stage *sch_cache_write(sch_schedule *s, sch_stage *st, tir_scope scope);
/* Root axes axis and axis + 1 of st (an intermediate, not yet split, fused or attached)
 * merged into one of their product's extent: t[.., a, b, ..] becomes t'[.., a·B + b, ..],
 * st's body reads a = p / B, b = p % B, and its readers' loads follow (TVM's
 * transform_layout). A consumer that fuses the same two axes and splits the product by
 * any factor then attaches st at the outer part over exactly the tile it reads, where
 * the two axes apart would give a bounding box of whole rows. Returns the new stage,
 * which takes st's place. */
sch_stage *sch_flatten(sch_schedule *s, sch_stage *st, int32_t axis);

/* 1 if loop `inner` of c is loop `outer` or one nested inside it (a stage computed
 * at `inner` then reads what a stage computed at `outer` made, on every iteration of
 * the loops between). */
int sch_loop_within(const sch_stage *c, const sch_iter *inner, const sch_iter *outer);
/* 1 if reader's body loads producer's tensor. */
int sch_reads(const sch_stage *reader, const sch_stage *producer);
/* Checks that every stage computed at a consumer's loop is read by that consumer
 * only (inlining can break this after the fact); -1 with a message otherwise. */
int sch_check_attachments(sch_schedule *s);

/* Tensorize on tensor cores (TVM's tensorize with the WMMA intrinsics; sch_wmma.c): a
 * stage C[b.., m, n..] = sum_k.. A(b.., m, k..) · B(b.., k.., n..) of f32 (its body a
 * sum of one product, its condition, if any (a conv's padding), free of m and taken as
 * B's zeros; the row axis m one output axis, the column axes n.. every axis
 * after it, the reduce axes k.. flattened into one: a matmul, or a conv as an implicit
 * GEMM with m its output channels and n its pixels; sch_wmma_operands), SHARED and
 * computed at a block loop of its consumer whose region of C is one tile of bm rows
 * and bn columns (one row of each batch axis, the column axes' extents multiplying to
 * bn: the tile row-major), is lowered to warps of TIR_WMMA instead of its loop nest:
 * the block's (bm/wm)·(bn/wn) warps (threadIdx.y; lanes threadIdx.x, 32, which the
 * consumer's thread loops must match) step through K by bk, copying the A and B tiles
 * to shared memory together (zero past M, N and K: ragged shapes), each warp
 * accumulating a wm x wn tile in (wm/16)·(wn/16) fragments of TF32 products, then
 * storing them to C's tile for the consumer (the epilogue) to read. The stage's own
 * loops are ignored. */
typedef struct sch_wmma {
  int32_t bm, bn, bk; /* the block's tile of C and the reduction step (bk a multiple of 8) */
  int32_t wm, wn;     /* a warp's tile (multiples of 16 dividing bm, bn) */
} sch_wmma;
int sch_tensorize_wmma(sch_schedule *s, sch_stage *st, const sch_wmma *w);
/* The row axis m of such a stage (the last output axis such that A, the factor
 * returned in *a, reads no output axis after it and B, in *b, does not read it: the one
 * before last for a matmul, the channels for a conv in NCHW), or -1 when st is no plain
 * f32 sum of one such product; *b_cond the reduction's condition (NULL: none), which
 * reads no row axis either: B is zero where it is false. */
int sch_wmma_operands(const sch_stage *st, const te_expr **a, const te_expr **b, const te_expr **b_cond);
/* The loop IR of a tensorized stage (sch_lower.c gives it the lowered factors): a_val is
 * A at row vm of the tile and flat reduce index ka, b_val B at flat reduce index kb and
 * column vn of the tile; a_ok and b_ok (NULL: always) say where they lie inside C's
 * domain (zeros elsewhere; the test of the reduce index against K is added here); c
 * the SHARED buffer of the tile; K the reduce axes' extents multiplied. */
typedef struct sch_wmma_args {
  tir_buffer *c;
  tir_expr *a_val, *b_val, *a_ok, *b_ok;
  tir_var *vm, *vn, *ka, *kb;
  int64_t K;
} sch_wmma_args;
tir_stmt *sch_wmma_lower(tir_builder *b, const sch_wmma *w, const sch_wmma_args *a);

/* Lowers the schedule to one kernel: parameters are the inputs then the outputs;
 * intermediate stages get buffers (LOCAL scope at their attach point, shrunk to the
 * region bound inference computes). */
tir_func *sch_lower(sch_schedule *s, tir_builder *b, const char *name);

void sch_print(const sch_schedule *s, FILE *f);

#endif
