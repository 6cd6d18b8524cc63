/* winograd.c — the F(2×2, 3×3) and F(4×4, 3×3) transform matrices (winograd.h),
 * as Lavin and Gray give them; tests/unit/test_winograd.c checks
 * Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A against the direct 3×3 correlation of random tiles. */
#include <string.h>
#include "winograd.h"

int gir_winograd_get(int32_t m, gir_winograd *w) {
  memset(w, 0, sizeof *w);
  if (m == 2) {
    static const double bt[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
    static const double g[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    static const double at[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
    w->m = 2, w->a = 4;
    for (int i = 0; i < 4; i++) {
      memcpy(w->bt[i], bt[i], sizeof bt[i]);
      memcpy(w->g[i], g[i], sizeof g[i]);
    }
    for (int i = 0; i < 2; i++) memcpy(w->at[i], at[i], sizeof at[i]);
    return 0;
  }
  if (m == 4) {
    static const double bt[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                    {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
    static const double g[6][3] = {{1.0 / 4, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
    static const double at[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
    w->m = 4, w->a = 6;
    for (int i = 0; i < 6; i++) {
      memcpy(w->bt[i], bt[i], sizeof bt[i]);
      memcpy(w->g[i], g[i], sizeof g[i]);
    }
    for (int i = 0; i < 4; i++) memcpy(w->at[i], at[i], sizeof at[i]);
    return 0;
  }
  return -1;
}
