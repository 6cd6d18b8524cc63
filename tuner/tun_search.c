/* tun_search.c — finding the candidates worth measuring, on the model alone
 * (AutoTVM's SimulatedAnnealingOptimizer and submodular pick).
 *
 * The cache maps a point to its feature vector: a point is lowered to loop IR
 * once (tun_build_lower; no LLVM), invalid points — rejected by the space's checks
 * or by the schedule itself — are remembered as such and never measured.
 *
 * Simulated annealing runs many chains side by side: each step moves every chain
 * to a neighbour (one knob changed to another candidate), scores the new points
 * with the model in one batch, and accepts a worse point with probability
 * exp(Δscore / T), T cooling linearly. The chains' positions are kept between
 * rounds, so after the model is retrained the search continues from where it
 * was, instead of from random points. The best unmeasured points seen are kept
 * in a small sorted list; the run stops early when that list stops changing.
 *
 * The batch is then picked for diversity: from the model's top candidates, those
 * maximizing rank plus the number of knob values not yet in the batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tun_internal.h"

/* ---- the feature cache: open addressing on the point index ---- */
typedef struct slot {
  int64_t idx;  /* -1: empty */
  int64_t feat; /* offset in pool, or -1: invalid */
} slot;

struct tun_cache {
  const tun_task *task;
  const tun_target *t;
  slot *slots;
  int64_t cap, n;
  float *pool;
  int64_t pool_n, pool_cap;
  int64_t lowered;
};

tun_cache *tun_cache_new(const tun_task *task, const tun_target *t) {
  tun_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->task = task;
  c->t = t;
  c->cap = 1024;
  c->slots = malloc(sizeof *c->slots * (size_t)c->cap);
  if (!c->slots) {
    free(c);
    return NULL;
  }
  for (int64_t i = 0; i < c->cap; i++) c->slots[i].idx = -1;
  return c;
}

void tun_cache_free(tun_cache *c) {
  if (!c) return;
  free(c->slots);
  free(c->pool);
  free(c);
}

int64_t tun_cache_lowered(const tun_cache *c) { return c->lowered; }

static uint64_t mix(int64_t x) {
  uint64_t z = (uint64_t)x * 0x9e3779b97f4a7c15ull;
  return z ^ (z >> 29);
}

static slot *find(tun_cache *c, int64_t idx) {
  uint64_t h = mix(idx) & (uint64_t)(c->cap - 1);
  while (c->slots[h].idx != -1 && c->slots[h].idx != idx) h = (h + 1) & (uint64_t)(c->cap - 1);
  return &c->slots[h];
}

static int grow(tun_cache *c) {
  slot *old = c->slots;
  int64_t oc = c->cap;
  c->cap *= 2;
  c->slots = malloc(sizeof *c->slots * (size_t)c->cap);
  if (!c->slots) {
    c->slots = old;
    c->cap = oc;
    return -1;
  }
  for (int64_t i = 0; i < c->cap; i++) c->slots[i].idx = -1;
  for (int64_t i = 0; i < oc; i++)
    if (old[i].idx != -1) *find(c, old[i].idx) = old[i];
  free(old);
  return 0;
}

const float *tun_cache_features(tun_cache *c, int64_t idx) {
  slot *s = find(c, idx);
  if (s->idx == idx) return s->feat < 0 ? NULL : c->pool + s->feat;
  if ((c->n + 1) * 2 > c->cap) {
    if (grow(c) < 0) return NULL;
    s = find(c, idx);
  }
  int32_t values[TUN_MAX_KNOBS];
  tun_space_values(&c->task->space, idx, values);
  char why[160];
  int64_t off = -1;
  if (tun_space_check(&c->task->space, values, why, sizeof why) == 0) {
    if (c->pool_n + TUN_N_FEATURES > c->pool_cap) {
      int64_t nc = c->pool_cap ? c->pool_cap * 2 : TUN_N_FEATURES * 64;
      float *p = realloc(c->pool, sizeof *p * (size_t)nc);
      if (!p) return NULL;
      c->pool = p;
      c->pool_cap = nc;
    }
    tun_kernel k;
    gir_err err = {{0}};
    c->lowered++;
    if (tun_build_lower(c->task, c->t, values, &k, &err) == 0) {
      off = c->pool_n;
      tun_features(&k.k, c->pool + off);
      c->pool_n += TUN_N_FEATURES;
    }
    tun_kernel_free(&k);
  }
  s->idx = idx;
  s->feat = off;
  c->n++;
  return off < 0 ? NULL : c->pool + off;
}

/* ---- random points ---- */
/* Valid points can be rare: of the 15360 points of a 1x1 conv's space on AVX2 (56x56, 64
 * channels) about 1% pass the register check, and 256 draws that each counted as a try
 * found none in some runs — the task then ended after its default. So the space's own
 * check (cheap: no lowering) screens the draws, up to 64 per try, and a try is a point
 * lowered; after max_tries of those, a scan from a random start over up to SCAN_MAX
 * points (the whole of a smaller space) takes the first that lowers. A task ends only
 * when no valid unmeasured point is left within reach. */
#define SCAN_MAX ((int64_t)1 << 20)

static int try_point(const tun_space *s, tun_cache *c, int64_t idx, int (*is_measured)(void *ctx, int64_t idx),
                     void *mctx, int32_t *lowered) {
  int32_t values[TUN_MAX_KNOBS];
  char why[160];
  if (is_measured && is_measured(mctx, idx)) return 0;
  tun_space_values(s, idx, values);
  if (tun_space_check(s, values, why, sizeof why)) return 0;
  ++*lowered;
  return tun_cache_features(c, idx) != NULL;
}

int64_t tun_random_point(const tun_space *s, tun_cache *c, uint64_t *rng, int (*is_measured)(void *ctx, int64_t idx),
                         void *mctx, int32_t max_tries) {
  if (s->size <= 0) return -1;
  int32_t lowered = 0;
  for (int64_t i = 0; i < (int64_t)max_tries * 64 && lowered < max_tries; i++) {
    int64_t idx = tun_rand_below(rng, s->size);
    if (try_point(s, c, idx, is_measured, mctx, &lowered)) return idx;
  }
  int64_t n = s->size < SCAN_MAX ? s->size : SCAN_MAX, start = tun_rand_below(rng, s->size);
  for (int64_t i = 0; i < n && lowered < 4 * max_tries; i++) {
    int64_t idx = i < s->size - start ? start + i : i - (s->size - start); /* (start + i) mod size, no overflow */
    if (try_point(s, c, idx, is_measured, mctx, &lowered)) return idx;
  }
  return -1;
}

/* ---- simulated annealing ---- */
struct tun_sa {
  const tun_space *space;
  int32_t n_chains;
  int64_t *points;
  float *scores;
  uint64_t rng;
  int started;
};

tun_sa *tun_sa_new(const tun_space *s, int32_t n_chains, uint64_t seed) {
  tun_sa *sa = calloc(1, sizeof *sa);
  if (!sa) return NULL;
  sa->space = s;
  sa->n_chains = n_chains;
  sa->points = calloc((size_t)n_chains, sizeof *sa->points);
  sa->scores = calloc((size_t)n_chains, sizeof *sa->scores);
  sa->rng = seed * 0x2545f4914f6cdd1dull + 17;
  if (!sa->points || !sa->scores) {
    tun_sa_free(sa);
    return NULL;
  }
  return sa;
}

void tun_sa_free(tun_sa *sa) {
  if (!sa) return;
  free(sa->points);
  free(sa->scores);
  free(sa);
}

/* A neighbour of idx: one knob moved to another of its candidates. */
static int64_t neighbour(const tun_space *s, int64_t idx, uint64_t *rng) {
  int movable[TUN_MAX_KNOBS], nm = 0;
  for (int i = 0; i < s->n_knobs; i++)
    if (s->knobs[i].n > 1) movable[nm++] = i;
  if (!nm) return idx;
  int k = movable[tun_rand_below(rng, nm)];
  int64_t mul = 1;
  for (int i = 0; i < k; i++) mul *= s->knobs[i].n;
  int64_t n = s->knobs[k].n, cur = (idx / mul) % n;
  int64_t to = tun_rand_below(rng, n - 1);
  if (to >= cur) to++;
  return idx + (to - cur) * mul;
}

/* Scores of n points (invalid: -inf) through the model, in one batch. */
static int score_points(tun_cache *c, const int64_t *pts, int32_t n, tun_predict_fn predict, void *pctx, float *out) {
  float *x = malloc(sizeof *x * (size_t)TUN_N_FEATURES * (size_t)(n ? n : 1));
  int32_t *row = malloc(sizeof *row * (size_t)(n ? n : 1));
  if (!x || !row) {
    free(x);
    free(row);
    return -1;
  }
  int32_t m = 0;
  for (int i = 0; i < n; i++) {
    const float *f = tun_cache_features(c, pts[i]);
    out[i] = -INFINITY;
    if (!f) continue;
    memcpy(x + (size_t)m * TUN_N_FEATURES, f, sizeof *x * TUN_N_FEATURES);
    row[m++] = i;
  }
  float *s = malloc(sizeof *s * (size_t)(m ? m : 1));
  int rc = s && (m == 0 || predict(pctx, x, m, s) == 0) ? 0 : -1;
  for (int j = 0; rc == 0 && j < m; j++) out[row[j]] = s[j];
  free(s);
  free(x);
  free(row);
  return rc;
}

/* Inserts (idx, score) into the sorted top list if it belongs there and is new. */
static int top_insert(int64_t *best, float *bs, int32_t *n, int32_t cap, int64_t idx, float score) {
  for (int i = 0; i < *n; i++)
    if (best[i] == idx) return 0;
  if (*n == cap && score <= bs[*n - 1]) return 0;
  int i = *n < cap ? (*n)++ : cap - 1;
  while (i > 0 && bs[i - 1] < score) {
    best[i] = best[i - 1];
    bs[i] = bs[i - 1];
    i--;
  }
  best[i] = idx;
  bs[i] = score;
  return 1;
}

int32_t tun_sa_run(tun_sa *sa, tun_cache *c, tun_predict_fn predict, void *pctx,
                   int (*is_measured)(void *ctx, int64_t idx), void *mctx, int32_t n_iter, int64_t *best,
                   float *best_score, int32_t n_best) {
  const tun_space *s = sa->space;
  int32_t nc = sa->n_chains, nb = 0;
  int64_t *next = malloc(sizeof *next * (size_t)nc);
  float *ns = malloc(sizeof *ns * (size_t)nc);
  if (!next || !ns) {
    free(next);
    free(ns);
    return 0;
  }
  if (!sa->started) { /* chains start at random valid points */
    for (int i = 0; i < nc; i++) {
      int64_t p = tun_random_point(s, c, &sa->rng, NULL, NULL, 64);
      sa->points[i] = p < 0 ? 0 : p;
    }
    sa->started = 1;
  }
  /* the chains' current scores under the present model */
  if (score_points(c, sa->points, nc, predict, pctx, sa->scores) < 0) goto out;
  for (int i = 0; i < nc; i++)
    if (isfinite(sa->scores[i]) && !(is_measured && is_measured(mctx, sa->points[i])))
      top_insert(best, best_score, &nb, n_best, sa->points[i], sa->scores[i]);
  int still = 0;
  for (int it = 0; it < n_iter; it++) {
    double temp = 1.0 - (double)it / (double)n_iter; /* 1 → 0 */
    for (int i = 0; i < nc; i++) next[i] = neighbour(s, sa->points[i], &sa->rng);
    if (score_points(c, next, nc, predict, pctx, ns) < 0) break;
    int changed = 0;
    for (int i = 0; i < nc; i++) {
      if (!isfinite(ns[i])) continue;
      if (!(is_measured && is_measured(mctx, next[i])))
        changed |= top_insert(best, best_score, &nb, n_best, next[i], ns[i]);
      double d = (double)ns[i] - (double)sa->scores[i];
      if (d >= 0 || !isfinite(sa->scores[i]) || tun_rand01(&sa->rng) < exp(d / (temp + 1e-5))) {
        sa->points[i] = next[i];
        sa->scores[i] = ns[i];
      }
    }
    still = changed ? 0 : still + 1;
    if (still >= 20 && it >= n_iter / 4) break; /* the top list stopped moving */
  }
out:
  free(next);
  free(ns);
  return nb;
}

/* ---- diversity-aware pick ---- */
int32_t tun_pick_diverse(const tun_space *s, const int64_t *cand, const float *score, int32_t n, int32_t k,
                         double diversity, int64_t *out) {
  (void)score; /* cand is sorted best first: its rank is the score */
  uint8_t *taken = calloc((size_t)(n ? n : 1), 1);
  uint8_t(*seen)[TUN_MAX_CANDS] = calloc(TUN_MAX_KNOBS, TUN_MAX_CANDS);
  int32_t m = 0;
  if (!taken || !seen) goto out;
  while (m < k && m < n) {
    int bi = -1;
    double bv = -1e300;
    for (int i = 0; i < n; i++) {
      if (taken[i]) continue;
      double v = 1.0 - (double)i / (double)n;
      int64_t idx = cand[i];
      for (int j = 0; j < s->n_knobs; j++) {
        int32_t kn = s->knobs[j].n, pos = (int32_t)(idx % kn);
        idx /= kn;
        if (!seen[j][pos]) v += diversity;
      }
      if (v > bv) bv = v, bi = i;
    }
    if (bi < 0) break;
    taken[bi] = 1;
    out[m++] = cand[bi];
    int64_t idx = cand[bi];
    for (int j = 0; j < s->n_knobs; j++) {
      int32_t kn = s->knobs[j].n;
      seen[j][idx % kn] = 1;
      idx /= kn;
    }
  }
out:
  free(taken);
  free(seen);
  return m;
}
