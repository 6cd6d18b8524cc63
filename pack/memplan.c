/* memplan.c — greedy offset assignment (the scheme TFLite and TVM's static
 * planners use): take the tensors in some order; place each at the lowest aligned
 * offset that does not collide with an already placed tensor whose lifetime
 * overlaps. Orders tried: by size descending (greedy-by-size), by lifetime length
 * descending (greedy-by-breadth, good when short-lived workspaces sit between long
 * activations), by first use, and by size × lifetime; each with the lowest gap that
 * fits (first fit) and with the smallest (best fit); the smallest arena wins, and a
 * bounded local search over swaps in its order improves it further. Sizes are rounded up to
 * the alignment first, with overflow checks. O(n² log n) per placement, which is
 * nothing next to compiling the kernels. */
#include <stdlib.h>
#include "memplan.h"

typedef struct interval {
  int64_t lo, hi; /* [lo, hi) */
} interval;

static int by_size_desc(const void *a, const void *b, void *ctx) {
  const pack_tensor *t = ctx;
  int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
  if (t[i].bytes != t[j].bytes) return t[i].bytes < t[j].bytes ? 1 : -1;
  if (t[i].first != t[j].first) return t[i].first < t[j].first ? -1 : 1;
  return i < j ? -1 : i > j;
}

static int by_life_desc(const void *a, const void *b, void *ctx) {
  const pack_tensor *t = ctx;
  int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
  int32_t li = t[i].last - t[i].first, lj = t[j].last - t[j].first;
  if (li != lj) return li < lj ? 1 : -1;
  return by_size_desc(a, b, ctx);
}

static int by_first(const void *a, const void *b, void *ctx) {
  const pack_tensor *t = ctx;
  int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
  if (t[i].first != t[j].first) return t[i].first < t[j].first ? -1 : 1;
  return by_size_desc(a, b, ctx);
}

/* by size × lifetime descending: the tensors that block most of the plan first */
static int by_area_desc(const void *a, const void *b, void *ctx) {
  const pack_tensor *t = ctx;
  int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
  __int128 ai = (__int128)t[i].bytes * (t[i].last - t[i].first + 1), aj = (__int128)t[j].bytes * (t[j].last - t[j].first + 1);
  if (ai != aj) return ai < aj ? 1 : -1;
  return by_size_desc(a, b, ctx);
}

static int by_lo(const void *a, const void *b) {
  const interval *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int64_t align_up(int64_t v) { return (v + PACK_ALIGN - 1) & ~(int64_t)(PACK_ALIGN - 1); }

/* Places the tensors in `order`: each at the lowest aligned offset free of the
 * placed tensors whose lifetimes overlap its own (first fit), or at the start of the
 * smallest such gap below the top (best fit). Returns the arena size. */
static int64_t place(pack_tensor *t, const int32_t *order, int32_t n, int best_fit, interval *busy) {
  int64_t arena = 0;
  for (int32_t k = 0; k < n; k++) {
    pack_tensor *x = &t[order[k]];
    int64_t need = align_up(x->bytes);
    int32_t nb = 0;
    for (int32_t j = 0; j < k; j++) {
      const pack_tensor *y = &t[order[j]];
      if (y->first <= x->last && x->first <= y->last && y->bytes > 0)
        busy[nb++] = (interval){y->offset, y->offset + align_up(y->bytes)};
    }
    qsort(busy, (size_t)nb, sizeof *busy, by_lo);
    int64_t off = 0, pick = -1, pick_gap = 0;
    for (int32_t j = 0; j < nb; j++) {
      if (busy[j].lo >= off + need) { /* fits in the gap before this one */
        if (!best_fit) break;
        if (pick < 0 || busy[j].lo - off < pick_gap) pick = off, pick_gap = busy[j].lo - off;
      }
      if (busy[j].hi > off) off = busy[j].hi;
    }
    x->offset = best_fit && pick >= 0 ? pick : off;
    if (x->offset + need > arena) arena = x->offset + need;
  }
  return arena;
}

int pack_plan_memory(pack_tensor *t, int32_t n, pack_plan_stats *st, gir_err *err) {
  st->arena_bytes = st->lower_bound = st->naive_bytes = 0;
  if (n <= 0) return 0;
  int32_t *order = malloc(sizeof *order * (size_t)n);
  interval *busy = malloc(sizeof *busy * (size_t)n);
  int rc = 0;
  if (!order || !busy) {
    rc = gir_errf(err, "memory planner: out of memory");
    goto out;
  }
  int32_t max_step = 0;
  for (int32_t i = 0; i < n; i++) {
    if (t[i].bytes < 0 || t[i].bytes > INT64_MAX / 2 || t[i].first > t[i].last) {
      rc = gir_errf(err, "memory planner: bad tensor %d (bytes %lld, life %d..%d)", i, (long long)t[i].bytes,
                    t[i].first, t[i].last);
      goto out;
    }
    int64_t a = align_up(t[i].bytes);
    if (st->naive_bytes > INT64_MAX - a) {
      rc = gir_errf(err, "memory planner: total size overflows");
      goto out;
    }
    st->naive_bytes += a;
    order[i] = i;
    if (t[i].last > max_step) max_step = t[i].last;
  }
  /* liveness lower bound: a sweep over steps */
  int64_t *alive = calloc((size_t)max_step + 2, sizeof *alive);
  if (!alive) {
    rc = gir_errf(err, "memory planner: out of memory");
    goto out;
  }
  for (int32_t i = 0; i < n; i++) {
    alive[t[i].first] += align_up(t[i].bytes);
    alive[t[i].last + 1] -= align_up(t[i].bytes);
  }
  int64_t cur = 0;
  for (int32_t s = 0; s <= max_step; s++) {
    cur += alive[s];
    if (cur > st->lower_bound) st->lower_bound = cur;
  }
  free(alive);

  int (*const orders[])(const void *, const void *, void *) = {by_size_desc, by_life_desc, by_first, by_area_desc};
  int64_t *best = malloc(sizeof *best * (size_t)n);
  int32_t *best_order = malloc(sizeof *best_order * (size_t)n);
  if (!best || !best_order) {
    free(best);
    free(best_order);
    rc = gir_errf(err, "memory planner: out of memory");
    goto out;
  }
  st->arena_bytes = -1;
  int best_fit_of_best = 0;
  /* each order twice: first fit (the lowest gap that holds the tensor) and best fit
   * (the smallest such gap, the top of the arena counting as unbounded) */
  for (size_t o = 0; o < 2 * (sizeof orders / sizeof orders[0]); o++) {
    int best_fit = (int)(o & 1);
    qsort_r(order, (size_t)n, sizeof *order, orders[o / 2], t);
    int64_t arena = place(t, order, n, best_fit, busy);
    if (st->arena_bytes < 0 || arena < st->arena_bytes) {
      st->arena_bytes = arena;
      best_fit_of_best = best_fit;
      for (int32_t i = 0; i < n; i++) best[i] = t[i].offset, best_order[i] = order[i];
    }
  }
  /* Then a local search from the best: swap two tensors of the order, keep the swap
   * when the arena does not grow (short-lived large workspaces — Winograd's
   * transformed tiles next to a block's long-lived residual — leave holes the fixed
   * orders fill badly). Deterministic (a fixed-seed generator), and bounded by work:
   * about 2·10⁸ interval visits in all, so large graphs get fewer swaps. */
  int64_t swaps = n > 1 ? (int64_t)200000000 / ((int64_t)n * n + 1) : 0;
  if (swaps > 4000) swaps = 4000;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (int64_t it = 0; it < swaps && st->arena_bytes > st->lower_bound; it++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    int32_t a = (int32_t)((rng >> 33) % (uint64_t)n);
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    int32_t b = (int32_t)((rng >> 33) % (uint64_t)n);
    if (a == b) continue;
    int32_t tmp = best_order[a];
    best_order[a] = best_order[b];
    best_order[b] = tmp;
    int64_t arena = place(t, best_order, n, best_fit_of_best, busy);
    if (arena <= st->arena_bytes) {
      st->arena_bytes = arena;
      for (int32_t i = 0; i < n; i++) best[i] = t[i].offset;
    } else {
      best_order[b] = best_order[a];
      best_order[a] = tmp;
    }
  }
  for (int32_t i = 0; i < n; i++) t[i].offset = best[i];
  free(best);
  free(best_order);
out:
  free(order);
  free(busy);
  return rc;
}
