/* test_winograd.c — the Winograd matrices (graphir/winograd.h) against the direct
 * 3×3 correlation: for random (m+2)² input tiles d and kernels g, every output of
 * Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A equals Σ d[i+u][j+v]·g[u][v] to double rounding; and
 * only m = 2 and m = 4 exist. The graph rewrite and the transform kernels are
 * checked end to end against ONNX Runtime by tests/py/test_winograd.py. */
#include <stdlib.h>
#include "check.h"
#include "winograd.h"

#define A GIR_WINOGRAD_MAX_A

static double rnd(void) { return (double)rand() / RAND_MAX * 2 - 1; }

static void check_tile(int32_t m) {
  gir_winograd w;
  if (!CHECKF(gir_winograd_get(m, &w) == 0, "m=%d", m)) return;
  CHECK_INT(w.m, m);
  CHECK_INT(w.a, m + 2);
  int a = w.a;
  for (int trial = 0; trial < 50; trial++) {
    double d[A][A], g[3][3], u[A][A], v[A][A], t[A][A], y[A][A];
    for (int i = 0; i < a; i++)
      for (int j = 0; j < a; j++) d[i][j] = rnd();
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) g[i][j] = rnd();
    for (int x = 0; x < a; x++) /* U = G g Gᵀ */
      for (int z = 0; z < a; z++) {
        double s = 0;
        for (int i = 0; i < 3; i++)
          for (int j = 0; j < 3; j++) s += w.g[x][i] * g[i][j] * w.g[z][j];
        u[x][z] = s;
      }
    for (int x = 0; x < a; x++) /* V = Bᵀ d B */
      for (int z = 0; z < a; z++) {
        double s = 0;
        for (int i = 0; i < a; i++)
          for (int j = 0; j < a; j++) s += w.bt[x][i] * d[i][j] * w.bt[z][j];
        v[x][z] = s;
      }
    for (int x = 0; x < a; x++)
      for (int z = 0; z < a; z++) t[x][z] = u[x][z] * v[x][z];
    for (int i = 0; i < m; i++) /* Y = Aᵀ (U ⊙ V) A */
      for (int j = 0; j < m; j++) {
        double s = 0;
        for (int x = 0; x < a; x++)
          for (int z = 0; z < a; z++) s += w.at[i][x] * t[x][z] * w.at[j][z];
        y[i][j] = s;
      }
    double worst = 0;
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++) {
        double ref = 0;
        for (int p = 0; p < 3; p++)
          for (int q = 0; q < 3; q++) ref += d[i + p][j + q] * g[p][q];
        double e = fabs(y[i][j] - ref);
        if (e > worst) worst = e;
      }
    CHECKF(worst < 1e-12, "F(%d,3) trial %d: max error %g", m, trial, worst);
  }
}

int main(void) {
  srand(11);
  check_tile(2);
  check_tile(4);
  gir_winograd w;
  CHECK(gir_winograd_get(3, &w) < 0);
  CHECK(gir_winograd_get(6, &w) < 0);
  return check_finish("test_winograd");
}
