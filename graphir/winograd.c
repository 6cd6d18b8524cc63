/* winograd.c — the F(2×2, 3×3) and F(4×4, 3×3) transform matrices (winograd.h),
 * as Lavin and Gray give them; tests/unit/test_winograd.c checks
 * Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A against the direct 3×3 correlation of random tiles. */
#include "winograd.h"

static const gir_winograd F2 = {
    .m = 2,
    .a = 4,
    .bt = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
    .g = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
    .at = {{1, 1, 1, 0}, {0, 1, -1, -1}},
};

static const gir_winograd F4 = {
    .m = 4,
    .a = 6,
    .bt = {{4, 0, -5, 0, 1, 0},
           {0, -4, -4, 1, 1, 0},
           {0, 4, -4, -1, 1, 0},
           {0, -2, -1, 2, 1, 0},
           {0, 2, -1, -2, 1, 0},
           {0, 4, 0, -5, 0, 1}},
    .g = {{1.0 / 4, 0, 0},
          {-1.0 / 6, -1.0 / 6, -1.0 / 6},
          {-1.0 / 6, 1.0 / 6, -1.0 / 6},
          {1.0 / 24, 1.0 / 12, 1.0 / 6},
          {1.0 / 24, -1.0 / 12, 1.0 / 6},
          {0, 0, 1}},
    .at = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}},
};

int gir_winograd_get(int32_t m, gir_winograd *w) {
  if (m != 2 && m != 4) return -1;
  *w = m == 2 ? F2 : F4;
  return 0;
}
