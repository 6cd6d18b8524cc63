/* winograd.h — the Winograd minimal-filtering transforms F(m×m, 3×3) (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), shared by the
 * graph rewrite that turns a 3×3 convolution into them (layout/winograd.c) and the
 * compute definitions of the transform ops (te/compute_winograd.c).
 *
 * For an output tile Y of m×m pixels and the (m+2)×(m+2) input tile d under it,
 * Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A, g the 3×3 kernel (cross-correlation, as ONNX's
 * Conv). m = 2 (points 0, ±1) and m = 4 (points 0, ±1, ±2): 16 and 36 products per
 * tile instead of 36 and 144. */
#ifndef GIR_WINOGRAD_H
#define GIR_WINOGRAD_H
#include <stdint.h>

#define GIR_WINOGRAD_MAX_A 6 /* m + 2 for the largest m */

typedef struct gir_winograd {
  int32_t m, a;                                  /* output tile, input tile = m + 2 */
  double bt[GIR_WINOGRAD_MAX_A][GIR_WINOGRAD_MAX_A]; /* Bᵀ: a × a */
  double g[GIR_WINOGRAD_MAX_A][3];               /* G: a × 3 */
  double at[GIR_WINOGRAD_MAX_A][GIR_WINOGRAD_MAX_A]; /* Aᵀ: m × a */
} gir_winograd;

/* The matrices for output tile m (2 or 4); 0, or -1 for another m. */
int gir_winograd_get(int32_t m, gir_winograd *w);

#endif
