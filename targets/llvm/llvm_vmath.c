/* llvm_vmath.c — exp, erf, tanh and log of float32 vectors as straight-line LLVM IR.
 *
 * libm has no vector entry points LLVM can call here, so a vector exp would
 * otherwise become one expf call per lane, which dominates kernels such as a
 * matmul with a GELU epilogue. exp and tanh are Cephes-style forms, erf fitted
 * polynomials around one exp:
 *   exp(x) = 2^n · p(r), n = round(x·log2 e), r = x − n·ln2 (split in two
 *   constants for exactness), p a degree-6 polynomial; 2^n is one VSCALEFPS on
 *   AVX-512, elsewhere built from exponent bits in two halves, so results that
 *   underflow to subnormals or zero, and overflow to +inf, come out right.
 *   Relative error ≈ 2 ulp.
 *   erf(x) = x·P(x²) for |x| < 0.921875 (P of degree 5), else sign(x)·(1 −
 *   exp(Q(|x|))) with Q of degree 8 fitted to log erfc on [0.921875, 3.9375]
 *   (scripts/fit_erf.py: near-minimax fits, checked in float32 arithmetic):
 *   absolute error at most 1.3e-7, within 2.5 ulp of the result, relative error
 *   below 2e-7 near 0 — no division and one exp, where the Numerical Recipes form
 *   it replaced (t = 1/(1 + |x|/2), a degree-9 polynomial in t, and a Taylor
 *   series for |x| < 0.5 beside it) took a division, 19 multiply-adds and an exp
 *   (a GELU epilogue made the BERT FFN's first matmul 25% slower than its second).
 *   NaN propagates; ±inf give ±1.
 *   tanh(x) = sign(x)·(1 − 2/(exp(2|x|) + 1)) for |x| ≥ 0.625, else Cephes
 *   tanhf's odd polynomial x + x³·P(x²) (degree 4 in x²): relative error a few
 *   ulp (an LSTM step evaluates it twice per hidden unit; per-lane tanhf calls
 *   cost more than the step's matrix-vector product). exp overflowing to +inf
 *   gives ±1, NaN stays NaN, −0 stays −0.
 *   log(x) = e·ln2 + log(1 + z), x = (1 + z)·2^e with 1 + z in [sqrt(1/2), sqrt(2))
 *   from the exponent and mantissa bits (subnormals scaled by 2^23 first), log(1 + z)
 *   = z − z²/2 + z³·P(z) with Cephes logf's P of degree 8: within 2 ulp
 *   (per-lane logf calls made a log-power spectrum, an audio front end's, cost
 *   15x its arithmetic). log(+inf) = +inf, log(±0) = −inf, negative and NaN give NaN. */
#include "llvm_internal.h"

#include <math.h>
#include <string.h>

#define MAX_LANES 64 /* callers use these for vectors of at most this many lanes */

static LLVMValueRef splat(LLVMValueRef c, int lanes) {
  LLVMValueRef e[MAX_LANES];
  for (int i = 0; i < lanes; i++) e[i] = c;
  return LLVMConstVector(e, (unsigned)lanes);
}

static LLVMValueRef splat_f(tgt_lcg *g, double v, int lanes) { return splat(LLVMConstReal(g->t_float, v), lanes); }

static LLVMValueRef splat_i(tgt_lcg *g, int32_t v, int lanes) {
  return splat(LLVMConstInt(g->t_i32, (unsigned long long)(uint32_t)v, 0), lanes);
}

static LLVMValueRef call1(tgt_lcg *g, const char *name, LLVMValueRef a) {
  LLVMTypeRef t = LLVMTypeOf(a);
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, &t, 1);
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(f), f, &a, 1, "");
}

static LLVMValueRef call2(tgt_lcg *g, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef args[2] = {a, b};
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, &t, 1);
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(f), f, args, 2, "");
}

/* a·b + c, contracted to an FMA */
static LLVMValueRef mad(tgt_lcg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  LLVMTypeRef t = LLVMTypeOf(a);
  unsigned id = LLVMLookupIntrinsicID("llvm.fma", 8);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, &t, 1);
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(f), f, args, 3, "");
}

/* p · 2^n for integer-valued float vectors n in [-150, 129]: two exponent-bit
 * halves, applied one after the other so neither overflows early. */
static LLVMValueRef scale_pow2(tgt_lcg *g, LLVMValueRef p, LLVMValueRef n, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = LLVMVectorType(g->t_i32, (unsigned)lanes), ft = LLVMVectorType(g->t_float, (unsigned)lanes);
  LLVMValueRef ni = LLVMBuildFPToSI(B, n, it, "");
  LLVMValueRef h1 = LLVMBuildAShr(B, ni, splat_i(g, 1, lanes), ""); /* floor(n/2) */
  LLVMValueRef h2 = LLVMBuildSub(B, ni, h1, "");
  LLVMValueRef s1 = LLVMBuildBitCast(B, LLVMBuildShl(B, LLVMBuildAdd(B, h1, splat_i(g, 127, lanes), ""),
                                                     splat_i(g, 23, lanes), ""), ft, "");
  LLVMValueRef s2 = LLVMBuildBitCast(B, LLVMBuildShl(B, LLVMBuildAdd(B, h2, splat_i(g, 127, lanes), ""),
                                                     splat_i(g, 23, lanes), ""), ft, "");
  return LLVMBuildFMul(B, LLVMBuildFMul(B, p, s1, ""), s2, "");
}

/* Whether p · 2^n can be VSCALEFPS (AVX-512: exact, subnormal results and overflow
 * to +inf included): the lanes of the form that does it (the vector itself, or pieces
 * of it: an epilogue computed in two vectors' worth of lanes, templates.c), else 0.
 * It replaces scale_pow2's eight integer and float steps, which sat on the critical
 * path of every exp: a swish epilogue (exp, a division, two multiplies per element) is
 * bound by that path's latency, not by its instruction count. */
static int scalef_lanes(const tgt_lcg *g, int lanes) {
  int w = g->scalef512 && lanes % 16 == 0 ? 16 : g->scalef256 && lanes % 8 == 0 ? 8 : g->scalef256 && lanes == 4 ? 4 : 0;
  return w && lanes <= MAX_LANES && ((lanes / w) & (lanes / w - 1)) == 0 ? w : 0; /* whole pieces, a power of two */
}

/* min(a, b) that keeps a NaN in a (a > b ? b : a, what MINPS computes), and max */
static LLVMValueRef min_keep_nan(tgt_lcg *g, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, a, b, ""), b, a, "");
}

static LLVMValueRef max_keep_nan(tgt_lcg *g, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, a, b, ""), b, a, "");
}

/* lanes [at, at + w) of v */
static LLVMValueRef piece(tgt_lcg *g, LLVMValueRef v, int at, int w) {
  LLVMValueRef ix[MAX_LANES];
  for (int i = 0; i < w; i++) ix[i] = LLVMConstInt(g->t_i32, (unsigned)(at + i), 0);
  return LLVMBuildShuffleVector(g->b, v, LLVMGetUndef(LLVMTypeOf(v)), LLVMConstVector(ix, (unsigned)w), "");
}

static LLVMValueRef scale_pow2_x86(tgt_lcg *g, LLVMValueRef p, LLVMValueRef n, int lanes) {
  int w = scalef_lanes(g, lanes);
  const char *name = w == 16 ? "llvm.x86.avx512.mask.scalef.ps.512"
                     : w == 8 ? "llvm.x86.avx512.mask.scalef.ps.256"
                              : "llvm.x86.avx512.mask.scalef.ps.128";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, NULL, 0);
  LLVMTypeRef mt = w == 16 ? g->t_i16 : g->t_i8;
  /* one VSCALEFPS per piece of w lanes, the pieces joined again pairwise */
  LLVMValueRef parts[MAX_LANES];
  int np = lanes / w;
  for (int k = 0; k < np; k++) {
    LLVMValueRef pk = np > 1 ? piece(g, p, k * w, w) : p, nk = np > 1 ? piece(g, n, k * w, w) : n;
    LLVMValueRef args[5] = {pk, nk, LLVMGetUndef(LLVMTypeOf(pk)), LLVMConstAllOnes(mt), LLVMConstInt(g->t_i32, 4, 0)};
    parts[k] = LLVMBuildCall2(g->b, LLVMGlobalGetValueType(f), f, args, w == 16 ? 5 : 4, "");
  }
  for (int pw = w; np > 1; pw *= 2, np /= 2)
    for (int k = 0; k < np / 2; k++) {
      LLVMValueRef ix[MAX_LANES];
      for (int i = 0; i < 2 * pw; i++) ix[i] = LLVMConstInt(g->t_i32, (unsigned)i, 0);
      parts[k] = LLVMBuildShuffleVector(g->b, parts[2 * k], parts[2 * k + 1], LLVMConstVector(ix, (unsigned)(2 * pw)), "");
    }
  return parts[0];
}

/* exp's argument reduction and polynomial: n = x·log2 e rounded to the nearest integer
 * (as a float, and *t = x·log2 e + 1.5·2^23, whose low mantissa bits hold n), r = x −
 * n·ln2 in two steps, and p(r) = exp(r) on [−ln2/2, ln2/2]; exp(x) = p · 2^n. */
static LLVMValueRef exp_reduced(tgt_lcg *g, LLVMValueRef xc, int lanes, LLVMValueRef *n_out, LLVMValueRef *t_out) {
  LLVMBuilderRef B = g->b;
  /* n rounded by adding and subtracting 1.5·2^23 (|x·log2 e| < 2^22): two adds, fewer
   * steps than a floor */
  LLVMValueRef magic = splat_f(g, 12582912.0, lanes);
  LLVMValueRef t = mad(g, xc, splat_f(g, 1.44269504088896341, lanes), magic);
  LLVMValueRef n = LLVMBuildFSub(B, t, magic, "");
  LLVMValueRef r = mad(g, n, splat_f(g, -0.693359375, lanes), xc);
  r = mad(g, n, splat_f(g, 2.12194440e-4, lanes), r);
  LLVMValueRef p = splat_f(g, 1.9875691500e-4, lanes);
  static const double c[] = {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
  for (int i = 0; i < 5; i++) p = mad(g, p, r, splat_f(g, c[i], lanes));
  LLVMValueRef r2 = LLVMBuildFMul(B, r, r, "");
  *n_out = n;
  *t_out = t;
  return mad(g, p, r2, LLVMBuildFAdd(B, r, splat_f(g, 1.0, lanes), "")); /* 1 + r + r²·p */
}

LLVMValueRef tgt_llvm_vexpf(tgt_lcg *g, LLVMValueRef x, int lanes) {
  LLVMBuilderRef B = g->b;
  int sf = scalef_lanes(g, lanes) != 0;
  /* Below -104 the result is 0, chosen by a select at the end, and those lanes
   * compute exp(0) meanwhile: computing p·2^-150 there gave 0 too, but through a
   * subnormal intermediate, which costs a microcode assist per vector on x86 — a
   * causal softmax, half of whose scores are masked to -inf, ran 8x slower. Above
   * 89 the result is +inf (n ≤ 129 keeps the halves valid). With VSCALEFPS the
   * clamp keeps a NaN (min_keep_nan; x < lo is false for it) and the NaN flows
   * through every step to the result; else minnum drops it and a select puts it
   * back at the end. */
  LLVMValueRef lo = splat_f(g, -104.0, lanes), hi = splat_f(g, 89.0, lanes), zero = splat_f(g, 0.0, lanes), xc;
  LLVMValueRef under = LLVMBuildFCmp(B, LLVMRealOLT, x, lo, "");
  xc = LLVMBuildSelect(B, under, zero, x, "");
  xc = sf ? min_keep_nan(g, xc, hi) : call2(g, "llvm.minnum", xc, hi);
  LLVMValueRef n, t;
  LLVMValueRef p = exp_reduced(g, xc, lanes, &n, &t);
  LLVMValueRef y = sf ? scale_pow2_x86(g, p, n, lanes) : scale_pow2(g, p, n, lanes);
  y = LLVMBuildSelect(B, under, zero, y, "");
  if (sf) return y;
  LLVMValueRef nan = LLVMBuildFCmp(B, LLVMRealUNO, x, x, "");
  return LLVMBuildSelect(B, nan, x, y, "");
}

/* exp of an argument at most 0 by construction (sigmoid's and softplus's exp(−|x|)),
 * bit for bit what tgt_llvm_vexpf gives there, in about two thirds of its steps: no
 * clamp above, and 2^n without scale_pow2's two halves — 2^(n+25) comes from t's low
 * bits (t = 1.5·2^23 + n, so bits(t) + 152 holds n + 25 + 127 in its low nine bits,
 * which the shift into the exponent keeps), p · 2^(n+25) is exact (a normal float for
 * n ≥ −150) and the multiply by 2^−25 rounds it once, into the subnormals where it
 * falls there, as scale_pow2's second half does. Exact for x ≤ 70 (n ≤ 102); a NaN
 * flows through p to the result. The lanes below −104 compute exp(0) and are zeroed,
 * as in tgt_llvm_vexpf. With VSCALEFPS (AVX-512) tgt_llvm_vexpf is as short. */
LLVMValueRef tgt_llvm_vexpf_nonpos(tgt_lcg *g, LLVMValueRef x, int lanes) {
  if (scalef_lanes(g, lanes)) return tgt_llvm_vexpf(g, x, lanes);
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = LLVMVectorType(g->t_i32, (unsigned)lanes), ft = LLVMVectorType(g->t_float, (unsigned)lanes);
  LLVMValueRef zero = splat_f(g, 0.0, lanes);
  LLVMValueRef under = LLVMBuildFCmp(B, LLVMRealOLT, x, splat_f(g, -104.0, lanes), "");
  LLVMValueRef n, t, p = exp_reduced(g, LLVMBuildSelect(B, under, zero, x, ""), lanes, &n, &t);
  LLVMValueRef e = LLVMBuildAdd(B, LLVMBuildBitCast(B, t, it, ""), splat_i(g, 152, lanes), "");
  LLVMValueRef s = LLVMBuildBitCast(B, LLVMBuildShl(B, e, splat_i(g, 23, lanes), ""), ft, "");
  LLVMValueRef y = LLVMBuildFMul(B, LLVMBuildFMul(B, p, s, ""), splat_f(g, 0x1p-25, lanes), "");
  return LLVMBuildSelect(B, under, zero, y, "");
}

LLVMValueRef tgt_llvm_verff(tgt_lcg *g, LLVMValueRef x, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMValueRef z = call1(g, "llvm.fabs", x), lo = splat_f(g, 0.921875, lanes), hi = splat_f(g, 3.9375, lanes);
  /* |x| < 0.921875: x·P(x²) */
  static const double ps[] = {-6.013393285684288e-4, 4.998000804334879e-3, -2.6770232245326042e-2,
                              1.1281926929950714e-1, -3.761250674724579e-1, 1.1283791065216064};
  LLVMValueRef s = LLVMBuildFMul(B, x, x, ""), p = splat_f(g, ps[0], lanes);
  for (int i = 1; i < 6; i++) p = mad(g, p, s, splat_f(g, ps[i], lanes));
  LLVMValueRef small = LLVMBuildFMul(B, x, p, "");
  /* else 1 − exp(Q(|x|)), |x| clamped to [0.921875, 3.9375] (erf is 1 in float32
   * from 3.9375 on); the clamp keeps a NaN, which flows through exp to the result */
  LLVMValueRef zc = min_keep_nan(g, max_keep_nan(g, z, lo), hi);
  static const double qs[] = {1.6259724588962854e-6, -4.5804306864738464e-5, 5.943849100731313e-4,
                              -4.7469111159443855e-3, 2.638121508061886e-2, -1.1000289022922516e-1,
                              -6.319155097007751e-1, -1.1301766633987427, 3.050566010642797e-4};
  LLVMValueRef q = splat_f(g, qs[0], lanes);
  for (int i = 1; i < 9; i++) q = mad(g, q, zc, splat_f(g, qs[i], lanes));
  /* Q(|x|) approximates log erfc(|x|) < 0 on the clamped range (from about −1.6 down to
   * −18.2): the exp of a non-positive argument, bit for bit the general one */
  LLVMValueRef big = LLVMBuildFSub(B, splat_f(g, 1.0, lanes), tgt_llvm_vexpf_nonpos(g, q, lanes), "");
  big = call2(g, "llvm.copysign", big, x);
  return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, z, lo, ""), small, big, "");
}

LLVMValueRef tgt_llvm_vtanhf(tgt_lcg *g, LLVMValueRef x, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMValueRef z = call1(g, "llvm.fabs", x), one = splat_f(g, 1.0, lanes);
  LLVMValueRef e = tgt_llvm_vexpf(g, LLVMBuildFAdd(B, z, z, ""), lanes);
  LLVMValueRef big = LLVMBuildFSub(B, one, LLVMBuildFDiv(B, splat_f(g, 2.0, lanes), LLVMBuildFAdd(B, e, one, ""), ""), "");
  static const double c[] = {2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1};
  LLVMValueRef s = LLVMBuildFMul(B, z, z, ""), p = splat_f(g, -5.70498872745e-3, lanes);
  for (int i = 0; i < 4; i++) p = mad(g, p, s, splat_f(g, c[i], lanes));
  LLVMValueRef small = mad(g, LLVMBuildFMul(B, z, s, ""), p, z);
  LLVMValueRef y = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, z, splat_f(g, 0.625, lanes), ""), small, big, "");
  return call2(g, "llvm.copysign", y, x); /* NaN: big is NaN, and stays NaN */
}

LLVMValueRef tgt_llvm_vlogf(tgt_lcg *g, LLVMValueRef x, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = LLVMVectorType(g->t_i32, (unsigned)lanes), ft = LLVMVectorType(g->t_float, (unsigned)lanes);
  /* subnormals scaled by 2^23 into the normal range first, their exponent put back */
  LLVMValueRef sub = LLVMBuildFCmp(B, LLVMRealOLT, x, splat_f(g, 0x1p-126, lanes), "");
  LLVMValueRef xs = LLVMBuildSelect(B, sub, LLVMBuildFMul(B, x, splat_f(g, 0x1p23, lanes), ""), x, "");
  LLVMValueRef bits = LLVMBuildBitCast(B, xs, it, "");
  /* x = m·2^e, m in [0.5, 1): e from the exponent bits, m with exponent -1 */
  LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLShr(B, bits, splat_i(g, 23, lanes), ""), splat_i(g, 126, lanes), "");
  e = LLVMBuildSelect(B, sub, LLVMBuildSub(B, e, splat_i(g, 23, lanes), ""), e, "");
  LLVMValueRef m = LLVMBuildBitCast(
      B, LLVMBuildOr(B, LLVMBuildAnd(B, bits, splat_i(g, 0x007fffff, lanes), ""), splat_i(g, 0x3f000000, lanes), ""),
      ft, "");
  /* m below sqrt(1/2): 2m − 1 and e − 1, so that z = m − 1 lies in [−0.29, 0.41] */
  LLVMValueRef lowm = LLVMBuildFCmp(B, LLVMRealOLT, m, splat_f(g, 0.707106781186547524, lanes), "");
  LLVMValueRef one = splat_f(g, 1.0, lanes);
  LLVMValueRef z = LLVMBuildFSub(B, LLVMBuildSelect(B, lowm, LLVMBuildFAdd(B, m, m, ""), m, ""), one, "");
  LLVMValueRef ef = LLVMBuildSIToFP(B, LLVMBuildSelect(B, lowm, LLVMBuildSub(B, e, splat_i(g, 1, lanes), ""), e, ""), ft, "");
  /* log(1 + z) = z − z²/2 + z³·P(z) (Cephes logf), e·ln2 in two constants */
  static const double c[] = {-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
                             -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1};
  LLVMValueRef p = splat_f(g, 7.0376836292e-2, lanes);
  for (int i = 0; i < 8; i++) p = mad(g, p, z, splat_f(g, c[i], lanes));
  LLVMValueRef z2 = LLVMBuildFMul(B, z, z, "");
  LLVMValueRef y = LLVMBuildFMul(B, LLVMBuildFMul(B, p, z, ""), z2, "");
  y = mad(g, ef, splat_f(g, -2.12194440e-4, lanes), y);
  y = mad(g, z2, splat_f(g, -0.5, lanes), y);
  LLVMValueRef r = mad(g, ef, splat_f(g, 0.693359375, lanes), LLVMBuildFAdd(B, z, y, ""));
  /* log(+inf) = +inf, log(±0) = −inf, log(x < 0) and log(NaN) = NaN */
  r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, x, splat_f(g, INFINITY, lanes), ""), x, r, "");
  r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, x, splat_f(g, 0.0, lanes), ""), splat_f(g, -INFINITY, lanes), r, "");
  /* below 0 the NaN an invalid operation makes, (x − x)·inf: the hardware's default
   * NaN, as libm's logf returns (its sign differs between x86 and Arm, and shows in
   * a conversion to a format without NaN) */
  LLVMValueRef invalid = LLVMBuildFMul(B, LLVMBuildFSub(B, x, x, ""), splat_f(g, INFINITY, lanes), "");
  r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, splat_f(g, 0.0, lanes), ""), invalid, r, "");
  return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""), x, r, "");
}
