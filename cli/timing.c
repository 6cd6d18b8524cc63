/* timing.c — the wall clock and the ordering that `kiln run` and `kiln bench`
 * compute their latency statistics (median, p90, min) with. */
#include <time.h>
#include "cli.h"

double cli_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int cli_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
