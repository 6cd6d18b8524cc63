/* np_random.c — numpy's legacy generator, numpy.random.RandomState: the Mersenne
 * Twister MT19937 (Matsumoto & Nishimura 1998) seeded by init_genrand, as
 * np.random.seed(int) seeds it, and random_sample's doubles from two 32-bit draws.
 * The ONNX reference of training-mode Dropout draws its mask this way
 * (np.random.seed(seed); np.random.uniform(0, 1.0, shape) >= ratio), so kiln
 * documents it as the generator of that op and reproduces the reference's masks
 * bit for bit. The state lives on the caller's stack: no global state. */
#include "np_random.h"

#define MT_N 624
#define MT_M 397

typedef struct mt_state {
  uint32_t key[MT_N];
  int pos;
} mt_state;

static void mt_seed(mt_state *s, uint32_t seed) {
  for (int i = 0; i < MT_N; i++) {
    s->key[i] = seed;
    seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)i + 1u;
  }
  s->pos = MT_N;
}

static void mt_generate(mt_state *s) {
  for (int i = 0; i < MT_N; i++) {
    uint32_t y = (s->key[i] & 0x80000000u) | (s->key[(i + 1) % MT_N] & 0x7fffffffu);
    s->key[i] = s->key[(i + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
  }
  s->pos = 0;
}

static uint32_t mt_next(mt_state *s) {
  if (s->pos == MT_N) mt_generate(s);
  uint32_t y = s->key[s->pos++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

void imp_np_random_sample(uint32_t seed, double *out, int64_t n) {
  mt_state s;
  mt_seed(&s, seed);
  for (int64_t i = 0; i < n; i++) {
    uint32_t a = mt_next(&s) >> 5, b = mt_next(&s) >> 6;
    out[i] = ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
  }
}
