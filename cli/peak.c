/* peak.c — the machine's fp32 peak, measured rather than looked up.
 *
 * "% of peak" is only honest against a number this machine actually reaches, so we
 * run the loop every BLAS author runs first: many independent FMA chains, each a
 * register accumulator, with no loads or stores inside the loop. Enough chains are
 * in flight (16 zmm on AVX-512, 10 ymm on AVX2) to cover the FMA latency on two
 * ports, so the loop is bound by FMA throughput alone. The widest instruction set
 * the CPU has is picked at run time (__builtin_cpu_supports); each variant is
 * compiled for its own ISA with __attribute__((target)), so this file builds with
 * the default flags and runs on any x86-64. Elsewhere, a scalar loop of independent
 * multiply-adds gives a (pessimistic) figure.
 *
 * We measure one core and multiply by the thread count: cores of one socket share
 * no FMA units, and a measurement on all cores at once mostly measures whoever else
 * is using the machine. For the same reason the clock is the thread's CPU time (time
 * spent preempted by other processes does not count) and the best of ten ~10 ms
 * trials is kept. Frequency drops under heavy AVX-512 load are part of the figure, as
 * they are part of every kernel's. */
#include <stdint.h>
#include <time.h>
#include "cli.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_PEAK_X86 1
#endif

static double peak_now_s(void) { /* this thread's CPU time: time spent preempted is not ours */
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every variant returns the FLOPs it did and writes a value derived from all its
 * accumulators to *sink, so no chain is dead code. The chains start from different
 * values, or the compiler may prove them equal and keep only one. a*x+b with a just
 * below 1 keeps the values bounded and normal. */
#ifdef KILN_PEAK_X86
__attribute__((target("avx512f"))) static double fma_avx512(int64_t iters, float seed, float *sink) {
  __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(seed * 1e-3f);
#define S(k) _mm512_set1_ps(seed + (k) * 1e-3f)
  __m512 c0 = S(0), c1 = S(1), c2 = S(2), c3 = S(3), c4 = S(4), c5 = S(5), c6 = S(6), c7 = S(7);
  __m512 c8 = S(8), c9 = S(9), c10 = S(10), c11 = S(11), c12 = S(12), c13 = S(13), c14 = S(14), c15 = S(15);
#undef S
  for (int64_t i = 0; i < iters; i++) {
    c0 = _mm512_fmadd_ps(c0, a, b), c1 = _mm512_fmadd_ps(c1, a, b), c2 = _mm512_fmadd_ps(c2, a, b);
    c3 = _mm512_fmadd_ps(c3, a, b), c4 = _mm512_fmadd_ps(c4, a, b), c5 = _mm512_fmadd_ps(c5, a, b);
    c6 = _mm512_fmadd_ps(c6, a, b), c7 = _mm512_fmadd_ps(c7, a, b), c8 = _mm512_fmadd_ps(c8, a, b);
    c9 = _mm512_fmadd_ps(c9, a, b), c10 = _mm512_fmadd_ps(c10, a, b), c11 = _mm512_fmadd_ps(c11, a, b);
    c12 = _mm512_fmadd_ps(c12, a, b), c13 = _mm512_fmadd_ps(c13, a, b), c14 = _mm512_fmadd_ps(c14, a, b);
    c15 = _mm512_fmadd_ps(c15, a, b);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)),
                                     _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15))));
  *sink = _mm512_reduce_add_ps(s);
  return (double)iters * 16 * 16 * 2;
}

__attribute__((target("avx2,fma"))) static double fma_avx2(int64_t iters, float seed, float *sink) {
  __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(seed * 1e-3f);
#define S(k) _mm256_set1_ps(seed + (k) * 1e-3f)
  __m256 c0 = S(0), c1 = S(1), c2 = S(2), c3 = S(3), c4 = S(4), c5 = S(5), c6 = S(6), c7 = S(7), c8 = S(8), c9 = S(9);
#undef S
  for (int64_t i = 0; i < iters; i++) {
    c0 = _mm256_fmadd_ps(c0, a, b), c1 = _mm256_fmadd_ps(c1, a, b), c2 = _mm256_fmadd_ps(c2, a, b);
    c3 = _mm256_fmadd_ps(c3, a, b), c4 = _mm256_fmadd_ps(c4, a, b), c5 = _mm256_fmadd_ps(c5, a, b);
    c6 = _mm256_fmadd_ps(c6, a, b), c7 = _mm256_fmadd_ps(c7, a, b), c8 = _mm256_fmadd_ps(c8, a, b);
    c9 = _mm256_fmadd_ps(c9, a, b);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
  s = _mm256_add_ps(s, _mm256_add_ps(c8, c9));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  *sink = lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
  return (double)iters * 10 * 8 * 2;
}
#endif

static double fma_scalar(int64_t iters, float seed, float *sink) {
  float a = 0.999999f, b = seed * 1e-3f;
  float c[8];
  for (int j = 0; j < 8; j++) c[j] = seed + j * 1e-3f;
  for (int64_t i = 0; i < iters; i++)
    for (int j = 0; j < 8; j++) c[j] = c[j] * a + b;
  *sink = c[0] + c[1] + c[2] + c[3] + c[4] + c[5] + c[6] + c[7];
  return (double)iters * 8 * 2;
}

typedef double (*fma_loop)(int64_t iters, float seed, float *sink);

void cli_measure_peak(cli_peak *out) {
  fma_loop loop = fma_scalar;
  out->isa = "scalar";
#ifdef KILN_PEAK_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    loop = fma_avx512;
    out->isa = "avx512";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    loop = fma_avx2;
    out->isa = "avx2+fma";
  }
#endif
  volatile float seed = 1.0f, sink = 0;
  float s;
  /* grow the trip count until one trial takes ~10 ms (also warms the core up) */
  int64_t iters = 1024;
  double t = 0;
  for (;;) {
    double t0 = peak_now_s();
    loop(iters, seed, &s);
    t = peak_now_s() - t0;
    sink += s;
    if (t >= 0.003 || iters > ((int64_t)1 << 40)) break;
    iters *= 4;
  }
  if (t > 0) iters = (int64_t)((double)iters * 0.01 / t) + 1;
  double best = 0;
  for (int trial = 0; trial < 10; trial++) {
    double t0 = peak_now_s();
    double flops = loop(iters, seed, &s);
    double dt = peak_now_s() - t0;
    sink += s;
    if (dt > 0 && flops / dt > best) best = flops / dt;
  }
  (void)sink;
  out->gflops_per_core = best / 1e9;
}
