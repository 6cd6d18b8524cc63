/* tun_util.c — the small helpers of tun_internal.h: a growable string, a seeded
 * splitmix64 generator whose state the caller owns, the median of a few costs, and
 * the id of a check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tun_internal.h"

void tun_sb_printf(tun_sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->n;
    int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = 1;
      return;
    }
    if (b->s && (size_t)w < room) {
      b->n += (size_t)w;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->n + (size_t)w + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = 1;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

void tun_sb_free(tun_sbuf *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

uint64_t tun_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double tun_rand01(uint64_t *state) { return (double)(tun_rand(state) >> 11) * (1.0 / 9007199254740992.0); }

int64_t tun_rand_below(uint64_t *state, int64_t n) { return n <= 1 ? 0 : (int64_t)(tun_rand(state) % (uint64_t)n); }

double tun_median(const double *v, int32_t n) {
  double s[64];
  if (n < 1) return -1;
  if (n > 64) n = 64;
  memcpy(s, v, sizeof s[0] * (size_t)n);
  for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
    for (int j = i; j > 0 && s[j] < s[j - 1]; j--) {
      double t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
    }
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

int64_t tun_check_id(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}
