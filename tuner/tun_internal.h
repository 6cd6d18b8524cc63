/* tun_internal.h — what the tuner's files share and nobody else needs: a growable
 * string buffer, a deterministic random generator (each owner keeps its own state:
 * no global state anywhere), the search, and the feature/point cache. */
#ifndef TUN_INTERNAL_H
#define TUN_INTERNAL_H
#include <stdarg.h>
#include "tuner.h"

/* ---- strings ---- */
typedef struct tun_sbuf {
  char *s;
  size_t n, cap;
  int oom;
} tun_sbuf;
void tun_sb_printf(tun_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tun_sb_free(tun_sbuf *b);

/* ---- random numbers: splitmix64, state owned by the caller ---- */
uint64_t tun_rand(uint64_t *state);
double tun_rand01(uint64_t *state);   /* [0, 1) */
int64_t tun_rand_below(uint64_t *state, int64_t n); /* [0, n), n > 0 */

/* ---- generic spaces (tun_generic.c) ---- */
/* Builds the generated space of a group that no template covers: lowers it once
 * with the default inlining to read its stages. 0, or -1 when nothing in it is
 * worth a space (no loops to speak of) with err. The description lives in a. */
int tun_space_generic(tun_space *s, const tun_group *g, const tun_target *t, gir_arena *a, gir_err *err);
/* Schedules s's stages at point values of space sp (the lower_tuning schedule hook). */
int tun_generic_apply(const tun_space *sp, const int32_t *values, sch_schedule *s, const lower_target *t);
/* tun_space_check for generated spaces. */
int tun_generic_check(const tun_space *s, const int32_t *values, char *why, size_t why_len);

/* ---- the search (tun_search.c) ---- */
typedef struct tun_cache tun_cache; /* per task: point → features / invalid */
tun_cache *tun_cache_new(const tun_task *task, const tun_target *t);
void tun_cache_free(tun_cache *c);
/* The features of point idx (lowering it once; later calls hit the cache): a
 * pointer to TUN_N_FEATURES floats, or NULL when the point is invalid. */
const float *tun_cache_features(tun_cache *c, int64_t idx);
int64_t tun_cache_lowered(const tun_cache *c);

typedef struct tun_sa tun_sa; /* simulated-annealing chains of one task */
tun_sa *tun_sa_new(const tun_space *s, int32_t n_chains, uint64_t seed);
void tun_sa_free(tun_sa *sa);
/* Runs the chains on scores from predict (model over features), returning in
 * best up to n_best unmeasured valid points, best first (count returned). */
typedef int (*tun_predict_fn)(void *ctx, const float *x, int64_t n, float *out);
int32_t tun_sa_run(tun_sa *sa, tun_cache *c, tun_predict_fn predict, void *pctx,
                   int (*is_measured)(void *ctx, int64_t idx), void *mctx, int32_t n_iter, int64_t *best,
                   float *best_score, int32_t n_best);
/* A random valid unmeasured point (draws screened by the space's check, max_tries of them
 * lowered, then a scan from a random start), or -1 when none was found. */
int64_t tun_random_point(const tun_space *s, tun_cache *c, uint64_t *rng, int (*is_measured)(void *ctx, int64_t idx),
                         void *mctx, int32_t max_tries);
/* Diversity-aware pick (AutoTVM's submodular pick): chooses k of the n candidates
 * maximizing score rank plus the number of knob values not yet covered. */
int32_t tun_pick_diverse(const tun_space *s, const int64_t *cand, const float *score, int32_t n, int32_t k,
                         double diversity, int64_t *out);

#endif
