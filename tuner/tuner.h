/* tuner.h — `kiln tune`: the schedule of each fused group searched on this
 * machine, guided by a learned cost model (AutoTVM, "Learning to Optimize Tensor
 * Programs", NeurIPS'18; FlexTensor, ASPLOS'20). The pieces, one file each:
 *
 *   tun_target.c   the target a task is compiled for, and this CPU's model name
 *   tun_key.c      a group's workload key: canonical text + short hash, stable across runs
 *   tun_space.c    search spaces: the templates' knobs with the candidates valid for a
 *                  shape, and points as flat indices (AutoTVM's ConfigEntity)
 *   tun_generic.c  FlexTensor-style spaces built from the compute definition itself, for
 *                  every group no template covers, and the schedule a point of one makes
 *   tun_build.c    the compiler as a library: a group + a point → loop IR → JIT kernel
 *   tun_task.c     the tasks of a model: its unique tunable groups, weighted
 *   tun_feature.c  fixed-length features read from the scheduled loop IR
 *   tun_model.c    cost models through XGBoost's C API (rank:pairwise), global + local
 *   tun_search.c   simulated annealing on the model, chains kept across rounds
 *   tun_measure.c  the measurer interface, and the local one (forked, pinned workers)
 *   tun_records.c  JSON-lines records, their filters, and the provider that applies them
 *   tun_tune.c     the tuning loop of one task and the scheduler over tasks
 *   tun_report.c   progress line, final table, SVG plot
 *
 * No global mutable state: everything lives in objects the caller owns, so one
 * process can tune (and compile thousands of variants) many times. */
#ifndef TUNER_H
#define TUNER_H
#include <stdint.h>
#include <stdio.h>
#include "err.h"
#include "graph.h"
#include "llvm_backend.h"
#include "lower.h"

#define TUN_MAX_KNOBS 24
#define TUN_MAX_CANDS 64
#define TUN_RECORD_FORMAT 1 /* the "v" of a record line */
/* A tuned schedule is applied only where the side-by-side check that ends its task
 * measured it at least this much faster than the default (tun_records.c) */
#define TUN_CONFIRM_MARGIN 0.02
#define TUN_FEATURE_VERSION 1

/* ---- target (tun_target.c) ---- */
typedef struct tun_target {
  char name[32];         /* "host", "x86_64-avx2" … (the --target name) */
  tgt_llvm_options llvm; /* how kernels are compiled */
  lower_target lower;    /* what the templates see (tuning NULL) */
  char cpu[128];         /* this machine's CPU model, from /proc/cpuinfo */
} tun_target;

int tun_target_init(tun_target *t, const char *name, gir_err *err);
/* The CPU model name of this machine ("unknown" when /proc/cpuinfo has none). */
void tun_cpu_model(char *buf, size_t n);

/* ---- search spaces (tun_space.c, tun_generic.c) ---- */
typedef struct tun_knob_space {
  char name[24];
  int32_t n;                   /* candidates */
  int32_t cand[TUN_MAX_CANDS]; /* values */
} tun_knob_space;

typedef struct tun_generic tun_generic; /* the description of a generated space (tun_generic.c) */

typedef struct tun_space {
  char tmpl[16];                /* "conv", "matmul" or "generic" */
  int32_t n_knobs;
  tun_knob_space knobs[TUN_MAX_KNOBS];
  int64_t size;                 /* product of the candidate counts (before validity) */
  /* validity: register tile bounds */
  int32_t vec_regs, conv_vecs;  /* conv: vectors per pixel of the tile (ob / vec) */
  int32_t threads;              /* the target's: a tuned kernel stays as parallel as the default */
  int32_t depthwise, vec_ow, conv_m; /* conv: depthwise; vectors along the row (vec_ow) over conv_m channels */
  int64_t conv_cin, conv_rows, conv_cols, conv_sw, conv_sh, conv_img; /* conv: what a tile's padded input spans (pad_tile) */
  const tun_generic *gen;       /* generic spaces */
} tun_space;

/* Values of point idx (one per knob). */
void tun_space_values(const tun_space *s, int64_t idx, int32_t *values);
/* The point whose values are these; -1 when one is no candidate. */
int64_t tun_space_index(const tun_space *s, const int32_t *values);
/* 0 when the point may be measured, -1 with why (register pressure, a no-op
 * combination, tile products…) otherwise. */
int tun_space_check(const tun_space *s, const int32_t *values, char *why, size_t why_len);
/* The knob named name, or -1. */
int tun_space_knob(const tun_space *s, const char *name);
/* The template space of an anchor node, from its shapes and its default cfg
 * (knob values in lower_template_knobs order). 0, or -1 when tmpl has no space. */
int tun_space_template(tun_space *s, const char *tmpl, const gir_node *anchor, const int32_t *defaults,
                       const lower_target *t);
/* The knob values as "ow_tile=7,unroll_kw=0,…" into buf. */
const char *tun_space_describe(const tun_space *s, const int32_t *values, char *buf, size_t n);

/* ---- tasks (tun_task.c) ---- */
typedef struct tun_group {
  const gir_node *const *nodes; /* topological order, in the model's graph */
  int32_t n_nodes;
  const gir_value *const *outs; /* the values the group hands on */
  int32_t n_outs;
} tun_group;

typedef struct tun_task {
  int32_t id;
  const char *key;        /* canonical workload key (tun_key.c) */
  char hash[17];          /* its FNV-1a 64 in hex */
  char label[96];         /* "conv 64x56x56 k3x3 s1 -> 64" for tables */
  tun_group group;        /* one group of the model with this key */
  int32_t occurrences;    /* groups of the model with this key */
  int64_t flops;          /* of one occurrence */
  tun_space space;
  int32_t defaults[TUN_MAX_KNOBS]; /* the template's default knobs (TUN_MAX_KNOBS -1s for generic) */
  int has_defaults;       /* defaults is a point of the space */
} tun_task;

typedef struct tun_tasks {
  tun_task *tasks;        /* heaviest (flops × occurrences) first */
  int32_t n;
  int32_t n_groups;       /* groups seen */
  int32_t n_skipped;      /* groups with nothing to tune (no float work, copies…) */
  gir_arena *arena;
} tun_tasks;

/* The probe: a lower_tuning that records every group lowering sees (its nodes,
 * outputs, and the template with its defaults), for tun_tasks_build. */
typedef struct tun_probe tun_probe;
tun_probe *tun_probe_new(const tun_target *t);
const lower_tuning *tun_probe_hook(tun_probe *p);
void tun_probe_free(tun_probe *p);
/* Unique tunable groups of what the probe saw. keep_generic 0: template groups only. */
int tun_tasks_build(const tun_probe *p, const tun_target *t, int keep_generic, tun_tasks *out, gir_err *err);
void tun_tasks_free(tun_tasks *ts);

/* ---- workload keys (tun_key.c) ---- */
/* A template group's key is its anchor (the conv or matmul) alone, as AutoTVM's
 * workloads: the fused epilogue does not change the space. A generic group's key is
 * every member with its wiring. Arena-allocated. */
const char *tun_key_template(gir_arena *a, const char *tmpl, const gir_node *anchor, const tun_target *t);
const char *tun_key_generic(gir_arena *a, const tun_group *g, const tun_target *t);
void tun_key_hash(const char *key, char out[17]);
/* The group's anchor: its first non-injective node, else its last. */
const gir_node *tun_group_anchor(const tun_group *g);

/* ---- the compiler as a library (tun_build.c) ---- */
typedef struct tun_kernel {
  gir_arena *arena;   /* the loop IR and everything lowering made */
  lower_kernel k;
  int applied;        /* the point was applied (a template got its knobs, or the generic schedule ran) */
  tgt_llvm_module *mod;
  tgt_llvm_jit *jit;
  kiln_kernel_fn fn;  /* after tun_build_jit */
} tun_kernel;

/* Lowers task's group with the point `values` (NULL: the default schedule) into
 * out: loop IR only. -1 with err (a schedule error is the point's error). */
int tun_build_lower(const tun_task *task, const tun_target *t, const int32_t *values, tun_kernel *out, gir_err *err);
/* Compiles out's kernel with LLVM and loads it in this process. */
int tun_build_jit(tun_kernel *k, const tun_target *t, gir_err *err);
void tun_kernel_free(tun_kernel *k);

/* ---- features (tun_feature.c) ---- */
#define TUN_FEAT_LOOPS 8   /* loops of the dominant nest described, innermost last */
#define TUN_FEAT_BUFS 4    /* buffers described per loop */
#define TUN_FEAT_PER_BUF 4
#define TUN_FEAT_PER_LOOP (4 + 4 + TUN_FEAT_BUFS * TUN_FEAT_PER_BUF)
#define TUN_FEAT_GLOBAL 24
#define TUN_N_FEATURES (TUN_FEAT_LOOPS * TUN_FEAT_PER_LOOP + TUN_FEAT_GLOBAL)
/* The feature vector of a lowered kernel (deterministic; from k->scheduled and the
 * optimized body). */
void tun_features(const lower_kernel *k, float *out);

/* ---- cost model (tun_model.c) ---- */
typedef struct tun_model tun_model;
/* A model trained on n rows of TUN_N_FEATURES features with relevance labels y
 * (higher = faster), ranked within groups (group_sizes, summing to n); base:
 * per-row margins from another model (NULL: none). NULL with err on failure. */
tun_model *tun_model_train(const float *x, const float *y, int64_t n, const uint32_t *group_sizes, int32_t n_groups,
                           const float *base, int rounds, gir_err *err);
/* Scores of n rows (higher = predicted faster), base margins added when given. */
int tun_model_predict(const tun_model *m, const float *x, int64_t n, const float *base, float *out, gir_err *err);
void tun_model_free(tun_model *m);

/* ---- measurement (tun_measure.c) ---- */
typedef struct tun_measure_input {
  const tun_task *task;
  const int32_t *values; /* NULL: the default schedule */
} tun_measure_input;

typedef struct tun_measure_result {
  double cost;           /* median seconds per call; < 0 with error */
  double costs[16];      /* the repeats' per-call seconds */
  int32_t n_costs;
  char error[160];       /* "" when it ran */
  double build_s, run_s; /* seconds spent compiling and measuring */
} tun_measure_result;

/* A measurer builds and times candidates somewhere: here in forked workers, later
 * on another machine or a board. measure fills out[i] for each in[i]; a candidate
 * that does not compile, crashes, fails or hangs gets its error, never the
 * tuner's death. Returns 0, or -1 when the measurer itself broke (err). */
typedef struct tun_measurer {
  void *self;
  const char *name;
  int (*measure)(void *self, const tun_target *t, const tun_measure_input *in, int32_t n, tun_measure_result *out,
                 gir_err *err);
  void (*free)(void *self);
} tun_measurer;

typedef struct tun_local_options {
  double timeout_s;      /* per candidate's run (default 10) */
  double build_timeout_s; /* per candidate's build (default 15: LLVM has pathological cases) */
  double min_repeat_ms;  /* one repeat lasts at least this (default 2) */
  int32_t max_repeats;   /* at most (default 10), at least 3 */
  double spread;         /* stop once the middle half is within this fraction of the median (0.02) */
  int32_t measure_cpu;   /* core the workers run on; -1: pick (the second allowed one) */
  int32_t cold_weights;  /* evict the kernel's constant inputs (weights) from every cache before each timed call
                            (not timed), as a model whose weights outgrow the caches reads them from memory on
                            every run (TVM's enable_cpu_cache_flush); 0: they stay hot, as a loop over one
                            kernel keeps them */
  int32_t threads;       /* 1 (default): the kernel's parallel loops serially on the measuring core, the next
                            candidate building on the other; N > 1: the loops over a pool of N threads (the
                            runtime's) on every core the process may use, no build running meanwhile, timed by
                            the wall clock: the cost a model run on N threads sees (cross-core traffic, the
                            parallel loop's split) */
  /* tests: replaces the kernel of candidate number i (counted from 0 over the
   * measurer's life) before it runs; NULL: none */
  kiln_kernel_fn (*sabotage)(void *ctx, int64_t i);
  void *sabotage_ctx;
} tun_local_options;

tun_local_options tun_local_defaults(void);
/* The cores this process may run on (its affinity mask), at least 1. */
int32_t tun_online_cores(void);
tun_measurer *tun_local_measurer(const tun_local_options *o, gir_err *err);

/* Which cores the search and the measurement use: the caller's allowed set split
 * in two when it has two or more (search on the first, measurement on the second);
 * describes it in buf. Pins the calling thread to the search core; returns 1 when
 * pinned, 0 when there was one core only. */
int tun_pin_search(int32_t *measure_cpu, char *buf, size_t n);

/* ---- records (tun_records.c) ---- */
typedef struct tun_record {
  const char *key;         /* workload key */
  char hash[17];
  const char *tmpl;
  const char *target, *cpu, *version;
  int32_t n_knobs;
  const char **knob_names; /* NULL for the default schedule */
  int32_t *knob_values;
  int is_default;          /* measured the default schedule */
  double cost;             /* seconds; < 0 with error */
  const double *costs;     /* the repeats (written; not read back) */
  int32_t n_costs;
  const char *error;
  double time;             /* unix seconds when measured */
  int32_t threads;         /* the threads its kernel ran on (1 when a record does not say) */
  int64_t confirm;         /* > 0: a measurement of the side-by-side check that ends a task's tuning (the
                              default and the best alternately), all of one check sharing this id; 0: a trial */
  int64_t model;           /* > 0: one side of the in-model check that ends a tune (cli/tune_check.c): the
                              workload's kernels' time inside whole-model runs (cost: the median per run, threads:
                              the run's), its default and its point sharing this id; 0: a trial */
  int64_t flops;
  int32_t n_features;      /* TUN_N_FEATURES when stored */
  float *features;
} tun_record;

typedef struct tun_record_set {
  gir_arena *arena;
  tun_record *r;
  int32_t n, cap;
  /* what loading skipped */
  int32_t malformed, other_cpu, other_version, other_target, other_threads;
} tun_record_set;

/* Reads every line of path into set (kept lines must match target name and CPU,
 * a compatible version and, unless threads is 0, the measuring threads; the rest
 * are counted). A missing file is an empty set when missing_ok. */
int tun_records_load(tun_record_set *set, const char *path, const tun_target *t, const char *version, int32_t threads,
                     int missing_ok, gir_err *err);
void tun_records_free(tun_record_set *set);
/* Appends one line to f (flushed: a kill loses at most the line being written). */
int tun_record_write(FILE *f, const tun_record *r, gir_err *err);
/* Whether two versions are compatible ("0.1.0" and "0.1.7": same major.minor). */
int tun_version_compatible(const char *a, const char *b);

/* The provider `kiln compile --records` hands to lowering: the best record per
 * workload (the fastest error-free one, only when faster than the default schedule
 * measured in the same records), among the workload's records measured on the most
 * threads (costs on 1 and on 2 threads do not compare). Counts the groups it matched. */
typedef struct tun_apply tun_apply;
tun_apply *tun_apply_new(const tun_record_set *set, const tun_target *t);
const lower_tuning *tun_apply_hook(tun_apply *a);
/* What the hook applies: the checked best (the default mode, `kiln compile --records`);
 * every workload's candidate — its latest check's point, else its best that beat the
 * default — whatever the checks said (the tuned side of the in-model check); or
 * nothing, noting the same kernels (its default side). */
typedef enum tun_apply_mode { TUN_APPLY_CHECKED, TUN_APPLY_CANDIDATES, TUN_APPLY_NONE } tun_apply_mode;
void tun_apply_set_mode(tun_apply *a, tun_apply_mode mode);
/* A kernel the hook applied a point to (or, in TUN_APPLY_NONE, would have): its name in
 * the bundle, its workload, the point's record. */
typedef struct tun_apply_kernel {
  const char *kernel, *key;
  const tun_record *point;
} tun_apply_kernel;
/* The kernels so far, in lowering order (valid until tun_apply_free). */
const tun_apply_kernel *tun_apply_kernels(const tun_apply *a, int32_t *n);
void tun_apply_stats(const tun_apply *a, int32_t *groups, int32_t *matched, int32_t *workloads);
void tun_apply_free(tun_apply *a);

/* ---- tuning (tun_tune.c) ---- */
typedef enum tun_strategy { TUN_MODEL, TUN_RANDOM } tun_strategy;

typedef struct tun_options {
  int64_t trials;            /* total measurements over all tasks (defaults included) */
  double time_budget_s;      /* 0: none */
  int32_t batch;             /* candidates per round (default 8) */
  tun_strategy strategy;
  double epsilon;            /* share of random picks in a model-guided batch (0.1) */
  uint64_t seed;
  const char *records_path;  /* appended to; read first to resume */
  const char *const *transfer_paths;
  int32_t n_transfer;
  const char *version;       /* the compiler's, stored in records */
  int32_t threads;           /* the measurer's threads (tun_local_options.threads), stored in records;
                                1 in tun_default_options */
  double peak_gflops;        /* the measuring threads' cores', for % of peak (0: not shown) */
  FILE *progress;            /* live lines (NULL: quiet) */
  int progress_tty;          /* rewrite the line in place */
  const char *plot_path;     /* SVG of best-so-far vs trials per task (NULL: none) */
  int32_t per_task_max;      /* 0: no cap other than the space */
  int32_t confirm_pairs;     /* the check that ends the tune: per task whose best beat its default, the
                                default and the best measured alternately this many times each (3 in
                                tun_default_options; 0: none); not counted in trials */
} tun_options;

tun_options tun_default_options(void);

typedef struct tun_task_result {
  int64_t trials, errors;
  double default_s;          /* the default schedule's time (< 0: not measured) */
  double best_s;             /* best tuned time (< 0: none) */
  int32_t best[TUN_MAX_KNOBS];
  int has_best;              /* with a check: only where the check kept it */
  int confirmed;             /* default_s and best_s are the check's medians, side by side */
  double *curve;             /* best-so-far seconds after each trial (trials entries) */
  int64_t resumed;           /* records that were already in the file */
} tun_task_result;

typedef struct tun_result {
  tun_task_result *tasks;    /* per task */
  int32_t n;
  double seconds;            /* wall time of the tune */
  int64_t trials;
  int32_t transfer_records;  /* records the global model was trained on */
} tun_result;

/* Tunes the tasks with the measurer; results into res (free with tun_result_free). */
int tun_tune(const tun_tasks *ts, const tun_target *t, tun_measurer *m, const tun_options *o, tun_result *res,
             gir_err *err);
void tun_result_free(tun_result *r);

/* The median of v[0..n) (n ≤ 64; the mean of the middle two for even n), v unchanged; -1 for n < 1 (tun_util.c). */
double tun_median(const double *v, int32_t n);
/* The id of a check (its records' confirm or model field): the Unix time in
 * milliseconds, so that a later check replaces an earlier one (tun_util.c). */
int64_t tun_check_id(void);

/* ---- reports (tun_report.c) ---- */
/* peak_gflops: of all the measuring threads' cores together */
void tun_report_table(FILE *f, const tun_tasks *ts, const tun_result *r, double peak_gflops, int32_t threads);
int tun_report_svg(const char *path, const tun_tasks *ts, const tun_result *r, gir_err *err);

#endif
