#!/usr/bin/env python3
"""scripts/fit_erf.py — the coefficients of float32 erf in targets/llvm/llvm_vmath.c.

Usage: .venv/bin/python scripts/fit_erf.py

erf(x) = x * P(x^2) for |x| < 0.921875 (P of degree 5, fitted to erf(x)/x over x^2),
else sign(x) * (1 - exp(Q(|x|))) with Q of degree 8 fitted to log(erfc(a)) on
[0.921875, 3.9375] (erfc below 1e-8 beyond: erf rounds to 1 in float32). Each fit is
a least-squares fit on Chebyshev nodes reweighted by its errors (Lawson's iteration),
which approaches the minimax polynomial. The coefficients are rounded to float32 and
the whole formula is then evaluated as the generated code does — float32 Horner
steps with fused multiply-adds, the clamp, the blend — on two million points of
[-5, 5]; it prints the coefficients (highest degree first) and the largest absolute
error, relative error near 0 and error in ulps of the result against erf in double.
"""
import math

import numpy as np

F32 = np.float32
LO, HI = 0.921875, 3.9375


def fit(fun, lo, hi, deg, n=4000, rounds=60):
    k = np.arange(n)
    xs = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)
    v, y, w = np.vander(xs, deg + 1), fun(xs), np.ones(n)
    for _ in range(rounds):
        c, *_ = np.linalg.lstsq(v * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)
        e = np.abs(v @ c - y)
        w = w * e
        w /= w.sum()
    return [float(F32(ci)) for ci in c]


def horner(coefs, x):
    """float32 Horner with a fused multiply-add per step (one rounding)."""
    p = np.full(x.shape, F32(coefs[0]), dtype=np.float32)
    for c in coefs[1:]:
        p = (p.astype(np.float64) * x.astype(np.float64) + float(c)).astype(np.float32)
    return p


def main():
    erf, erfc = np.vectorize(math.erf), np.vectorize(math.erfc)
    ps = fit(lambda s: erf(np.sqrt(s)) / np.sqrt(np.maximum(s, 1e-300)), 0.0, LO * LO, 5)
    qs = fit(lambda a: np.log(erfc(a)), LO, HI, 8)
    x = np.linspace(-5, 5, 2000001).astype(np.float32)
    a = np.abs(x)
    small = (x.astype(np.float64) * horner(ps, (a * a).astype(np.float32))).astype(np.float32)
    q = horner(qs, np.minimum(np.maximum(a, F32(LO)), F32(HI)))
    big = np.copysign((F32(1) - np.exp(q.astype(np.float64)).astype(np.float32)).astype(np.float32), x)
    y = np.where(a < LO, small, big)
    ref = erf(x.astype(np.float64))
    err = np.abs(y - ref)
    m = (a < LO) & (a > 1e-30)
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    print("P (|x| < %g, in x^2):" % LO, ", ".join("%.17g" % c for c in ps))
    print("Q (in |x|, clamped to [%g, %g]):" % (LO, HI), ", ".join("%.17g" % c for c in qs))
    print("max abs error %.3g at x = %.6g; max relative error for |x| < %g: %.3g; max %.2f ulp of the result"
          % (err.max(), x[err.argmax()], LO, (err[m] / np.abs(ref[m])).max(), (err / ulp).max()))


if __name__ == "__main__":
    main()
