/* te.h — tensor expressions (TE), after Halide/TVM: a tensor is either a
 * placeholder (an input buffer) or a compute stage: a shape, one iteration
 * variable per output axis, and a body expression giving the value at those
 * indices, possibly a reduction over extra reduce variables. Each canonical op's
 * compute definition (compute_*.c) builds its output stage(s) from its inputs'
 * tensors; that definition is the single statement of the op's semantics, read by
 * the interpreter (te_eval.c, used for constant folding and as a reference
 * executor) and by lowering to loop IR.
 *
 * Expressions are typed with a gir_dtype; index arithmetic is int64. `select` is
 * lazy (if-then-else): the branch not taken is never evaluated, so a compute may
 * guard an out-of-bounds load with it (padding, gathers). Everything lives in the
 * te_ctx's arena. */
#ifndef TE_H
#define TE_H
#include <stdint.h>
#include "graph.h"

typedef enum te_kind {
  TE_INT,     /* integer constant of any integer/bool dtype */
  TE_FLOAT,   /* float constant */
  TE_VAR,     /* iteration variable (int64) */
  TE_LOAD,    /* tensor[idx...] */
  TE_UNARY,
  TE_BINARY,
  TE_SELECT,  /* lazy: c ? a : b */
  TE_CAST,
  TE_REDUCE,
  TE_BITCAST, /* the bits of a read as dtype (same size): u.cast */
  TE_KIND_COUNT
} te_kind;

typedef enum te_unop {
  TE_NEG, TE_ABS, TE_EXP, TE_LOG, TE_SQRT, TE_SIN, TE_COS, TE_TAN, TE_ASIN, TE_ACOS, TE_ATAN, TE_SINH,
  TE_COSH, TE_ASINH, TE_ACOSH, TE_ATANH, TE_TANH, TE_ERF, TE_FLOOR, TE_CEIL, TE_ROUND /* half to even */,
  TE_TRUNC, TE_NOT /* bool */, TE_BITNOT, TE_ISNAN /* → bool */, TE_ISINF /* → bool */, TE_UNOP_COUNT
} te_unop;

typedef enum te_binop {
  TE_ADD, TE_SUB, TE_MUL,
  TE_DIV,      /* float division; integers truncate toward zero */
  TE_FLOORDIV, /* integers: rounds toward -inf */
  TE_MOD,      /* integers: remainder with the dividend's sign (C %); floats: fmod */
  TE_FLOORMOD, /* result has the divisor's sign (Python %) */
  TE_MIN, TE_MAX, /* NaN-propagating for floats */
  TE_POW,
  TE_AND, TE_OR, TE_XOR, /* logical on bool, bitwise on integers */
  TE_SHL, TE_SHR,
  TE_EQ, TE_NE, TE_LT, TE_LE, TE_GT, TE_GE, /* → bool */
  TE_BINOP_COUNT
} te_binop;

typedef enum te_combiner { TE_SUM, TE_PROD, TE_RMAX, TE_RMIN, TE_ARGMAX, TE_ARGMIN, TE_COMBINER_COUNT } te_combiner;

typedef struct te_var {
  int32_t id;
  const char *name;
  int64_t extent; /* ranges over [0, extent) */
} te_var;

typedef struct te_tensor te_tensor;
typedef struct te_expr te_expr;

struct te_expr {
  te_kind kind;
  gir_dtype dtype;
  union {
    int64_t i;      /* TE_INT */
    double f;       /* TE_FLOAT */
    te_var *var;    /* TE_VAR */
    struct { te_tensor *t; te_expr **idx; } load;
    struct { te_unop op; te_expr *a; } un;
    struct { te_binop op; te_expr *a, *b; } bin;
    struct { te_expr *c, *a, *b; } sel;
    struct { te_expr *a; } cast; /* TE_CAST and TE_BITCAST */
    struct {
      te_combiner comb;
      int32_t n_axes;
      te_var **axes;
      te_expr *src;   /* value reduced */
      te_expr *cond;  /* NULL or bool: points where it is false are skipped */
      int select_last; /* ARGMAX/ARGMIN: ties pick the last index */
    } red;
  } u;
};

typedef enum te_tensor_kind { TE_PLACEHOLDER, TE_COMPUTE } te_tensor_kind;

struct te_tensor {
  te_tensor_kind kind;
  const char *name;
  gir_dtype dtype;
  int32_t rank;
  int64_t shape[GIR_MAX_RANK];
  te_var *axis[GIR_MAX_RANK]; /* COMPUTE: iteration variable of each output axis */
  te_expr *body;              /* COMPUTE */
  int32_t id;
  const char *tag;            /* COMPUTE: the canonical op that defined it ("conv", "matmul"…), or
                               * NULL; schedule templates dispatch on it, as TVM's tags */
  const void *origin;         /* the gir_node it came from (its attributes), or NULL */
};

typedef struct te_ctx {
  gir_arena *arena;
  gir_err *err;
  int32_t next_var, next_tensor;
  int32_t gpu; /* computing for a GPU: a row statistic is one plain reduction (the GPU schedule
                  spreads a row over threads), not the lane partials CPUs vectorize */
} te_ctx;

void te_ctx_init(te_ctx *c, gir_arena *a, gir_err *err);

te_var *te_var_new(te_ctx *c, const char *name, int64_t extent);
te_tensor *te_placeholder(te_ctx *c, const char *name, gir_dtype t, int32_t rank, const int64_t *shape);
/* Fresh iteration variables for an output of the given shape (axes[i] ranges shape[i]). */
void te_axes(te_ctx *c, int32_t rank, const int64_t *shape, te_var **axes);
/* A compute stage; axes must come from te_axes with the same shape. */
te_tensor *te_compute(te_ctx *c, const char *name, gir_dtype t, int32_t rank, const int64_t *shape, te_var *const *axes,
                      te_expr *body);

te_expr *te_int(te_ctx *c, int64_t v);                    /* int64 constant */
te_expr *te_const(te_ctx *c, gir_dtype t, double v);      /* constant of any dtype */
te_expr *te_v(te_ctx *c, te_var *v);
te_expr *te_load(te_ctx *c, te_tensor *t, te_expr *const *idx);
te_expr *te_un(te_ctx *c, te_unop op, te_expr *a);
/* Operand dtypes must agree (shifts and pow included); comparisons give bool. */
te_expr *te_bin(te_ctx *c, te_binop op, te_expr *a, te_expr *b);
te_expr *te_select(te_ctx *c, te_expr *cond, te_expr *a, te_expr *b);
te_expr *te_cast(te_ctx *c, gir_dtype t, te_expr *a);
/* a's bits reinterpreted as t, which has a's element size. */
te_expr *te_bitcast(te_ctx *c, gir_dtype t, te_expr *a);
te_expr *te_reduce(te_ctx *c, te_combiner comb, te_var *const *axes, int32_t n_axes, te_expr *src, te_expr *cond);
/* A sum into an accumulator of the narrower float type t, each step rounded to it:
 * acc = (t)((src type)acc + src), in the reduce axes' order (ONNX Runtime's float32
 * FMA accumulations, emulated on float64 terms: compute_reduce.c, layer_norm_ort).
 * Schedules keep its order: no template splits or reorders its reduce axes. */
te_expr *te_reduce_narrow(te_ctx *c, te_var *const *axes, int32_t n_axes, te_expr *src, gir_dtype t);
te_expr *te_argreduce(te_ctx *c, te_combiner comb, te_var *const *axes, int32_t n_axes, te_expr *src, int select_last);

/* Shorthands used throughout the compute definitions. */
te_expr *te_add(te_ctx *c, te_expr *a, te_expr *b);
te_expr *te_sub(te_ctx *c, te_expr *a, te_expr *b);
te_expr *te_mul(te_ctx *c, te_expr *a, te_expr *b);
te_expr *te_div(te_ctx *c, te_expr *a, te_expr *b);
te_expr *te_lt(te_ctx *c, te_expr *a, te_expr *b);
te_expr *te_ge(te_ctx *c, te_expr *a, te_expr *b);
te_expr *te_and(te_ctx *c, te_expr *a, te_expr *b);
/* 0 <= i < n, as bool */
te_expr *te_in_range(te_ctx *c, te_expr *i, int64_t n);
/* Load t at the numpy-broadcast of output indices idx (rank out_rank): leading
 * axes of the output that t lacks are dropped, size-1 axes of t read index 0. */
te_expr *te_load_bcast(te_ctx *c, te_tensor *t, te_expr *const *idx, int32_t out_rank);
/* Same with the output's iteration variables. */
te_expr *te_load_bcast_axes(te_ctx *c, te_tensor *t, te_var *const *axes, int32_t out_rank);

const char *te_unop_name(te_unop op);
const char *te_binop_name(te_binop op);

/* Copies e with every variable vars[i] replaced by repl[i] (index expressions).
 * Reduce variables inside e are kept (they are bound by their reduction). */
te_expr *te_subst(te_ctx *c, const te_expr *e, te_var *const *vars, te_expr *const *repl, int32_t n);
/* Copies e, replacing every load by f(c, load, its rewritten indices, arg) —
 * f returns the replacement (te_load of the same tensor keeps it). */
typedef te_expr *(*te_load_fn)(te_ctx *c, const te_expr *load, te_expr *const *idx, void *arg);
te_expr *te_rewrite_loads(te_ctx *c, const te_expr *e, te_load_fn f, void *arg);
/* Calls f(t, arg) for each tensor loaded anywhere in e (with repeats). */
void te_visit_loads(const te_expr *e, void (*f)(te_tensor *t, void *arg), void *arg);
/* Calls f(load, arg) for each load expression in e, its indices included (outer first). */
void te_visit_load_exprs(const te_expr *e, void (*f)(const te_expr *load, void *arg), void *arg);
/* 1 if e (NULL: no expression) reads one of the n variables vs. */
int te_uses_vars(const te_expr *e, te_var *const *vs, int n);
/* 1 if e contains a load or an integer division (evaluating it could fault or
 * read out of bounds), so a select over it must stay lazy. */
int te_may_trap(const te_expr *e);
/* Same, but a trapping part of e that also occurs in `done` (an expression that
 * is evaluated anyway, such as a select's condition) does not count: relu's
 * select(x < 0, 0, x) reads nothing its condition did not, so it can be eager
 * (and vectorized). */
int te_may_trap_beyond(const te_expr *e, const te_expr *done);

#endif
