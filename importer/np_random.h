/* np_random.h — numpy's legacy random generator (numpy.random.RandomState), for
 * the ops whose ONNX reference defines their values through it (np_random.c). */
#ifndef IMP_NP_RANDOM_H
#define IMP_NP_RANDOM_H
#include <stdint.h>

/* out[0..n) = what np.random.seed(seed); np.random.random_sample(n) gives (and
 * np.random.uniform(0, 1.0, n)): MT19937 seeded by init_genrand, each double made
 * from two 32-bit draws, (a >> 5) · 2^26 + (b >> 6), over 2^53. */
void imp_np_random_sample(uint32_t seed, double *out, int64_t n);

#endif
