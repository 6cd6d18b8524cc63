"""test_random_ops.py — ONNX's random generators as kiln implements them
(importer/ops_random.c: RandomUniform, RandomNormal, RandomUniformLike,
RandomNormalLike, Bernoulli, Multinomial, and Dropout in training mode). The node
suite cannot check them (its expected bits come from numpy's generator), so this
test compiles and runs models with kiln and checks:

- shapes and dtypes, at two or more shapes and dtypes per op (float, double, float16;
  int32/int64/bool outputs of Bernoulli and Multinomial; a scalar shape);
- the documented generator: the draws are recomputed here in numpy from the
  description in ops_random.c's header (splitmix64, the seed's float32 bits as key,
  FNV-1a of the output name without a seed) and must match bit for bit for uniforms
  and Bernoulli masks, and to 1e-12 relative (libm's log/cos against numpy's) for
  normals; Dropout's mask (importer/np_random.c) bit for bit against numpy's
  RandomState, as its ONNX reference draws it;
- statistics, with bounds from the sample size n (every bound is about 4 standard
  deviations or a 1e-3 critical value, so a correct generator fails one only by a
  ~1e-3 accident, and with fixed seeds the outcome never changes between runs):
  uniform range [low, high), mean within 4·(high−low)/√(12n), variance within 4 sd of
  the sample variance; normal mean within 4·scale/√n, std within 4·scale/√(2n);
  Kolmogorov–Smirnov statistic below 1.95/√n (the α = 1e-3 critical value) for
  n ≥ 10^4; Bernoulli frequency per row of equal p within 4·√(p(1−p)/n) (exact for
  p = 0 and 1); Multinomial class counts per row against softmax probabilities with
  a chi-square statistic below its α = 1e-3 critical value (and never a class of
  probability 0); Dropout's kept fraction and its scaling;
- determinism: the same model compiled twice and run twice gives identical bytes; other
  seeds give other values; two seedless nodes differ, two nodes with one seed agree;
- refusals: a *Like of an integer input without dtype, Multinomial of rank 1.

Options: --kiln PATH. Closing line: test_random_ops: N passed, M failed.
"""
import argparse
import math
import os
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto as TP, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402

KS_1E3 = 1.9495  # sqrt(ln(2/1e-3)/2): the Kolmogorov-Smirnov critical value at alpha 1e-3, times sqrt(n)
CHI2_1E3 = {1: 10.828, 2: 13.816, 3: 16.266, 4: 18.467, 5: 20.515, 6: 22.458, 7: 24.322, 8: 26.124}
NP = {TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.FLOAT16: np.float16, TP.INT32: np.int32,
      TP.INT64: np.int64, TP.BOOL: np.bool_}

# --- the generator, from ops_random.c's header ---
GAMMA, M1, M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def seed_key(seed):
    return int(np.array([seed], np.float32).view(np.uint32)[0])


def name_key(name):
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def draws(key, j):
    with np.errstate(over="ignore"):
        x = np.uint64(key) + (np.asarray(j, np.uint64) + np.uint64(1)) * GAMMA
        z = (x ^ (x >> np.uint64(30))) * M1
        z = (z ^ (z >> np.uint64(27))) * M2
        return z ^ (z >> np.uint64(31))


def units(key, j, p):
    return np.ldexp((draws(key, j) >> np.uint64(64 - p)).astype(np.float64), -p)


UNIT_BITS = {TP.DOUBLE: 53, TP.FLOAT: 24, TP.FLOAT16: 11}


def want_uniform(key, shape, dt, low=0.0, high=1.0):
    n = int(np.prod(shape))
    return (low + (high - low) * units(key, np.arange(n), UNIT_BITS[dt])).astype(NP[dt]).reshape(shape)


def want_normal(key, shape, dt, mean=0.0, scale=1.0):
    n = int(np.prod(shape))
    u1, u2 = units(key, 2 * np.arange(n), 53), units(key, 2 * np.arange(n) + 1, 53)
    z = np.sqrt(-2.0 * np.log(1.0 - u1)) * np.cos(6.283185307179586 * u2)
    return (mean + scale * z).astype(NP[dt]).reshape(shape)


def work_units(key, shape, double):
    """The uniforms Bernoulli, Multinomial and Dropout compare with."""
    n = int(np.prod(shape))
    u = units(key, np.arange(n), 53 if double else 24)
    return (u if double else u.astype(np.float32)).reshape(shape)


# --- statistics ---

def ks_uniform(x, low, high):
    x = np.sort((np.asarray(x, np.float64).ravel() - low) / (high - low))
    n = len(x)
    i = np.arange(1, n + 1)
    return max(np.max(i / n - x), np.max(x - (i - 1) / n))


def ks_normal(x, mean, scale):
    x = np.sort((np.asarray(x, np.float64).ravel() - mean) / scale)
    n = len(x)
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    i = np.arange(1, n + 1)
    return max(np.max(i / n - cdf), np.max(cdf - (i - 1) / n))


# --- models ---

def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, None if shape is None else list(shape))


class Spec:
    """One model: nodes, graph inputs (name, dtype, shape, data) and outputs (name, dtype, shape)."""

    def __init__(self):
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], []

    def node(self, op, ins, out, dt, oshape, **attrs):
        empty = [k for k, v in attrs.items() if isinstance(v, list) and not v]  # a scalar's shape=[]: INTS
        nd = helper.make_node(op, ins, [out] if isinstance(out, str) else list(out),
                              name=op + "_" + (out if isinstance(out, str) else out[0]),
                              **{k: v for k, v in attrs.items() if k not in empty})
        nd.attribute.extend(helper.make_attribute(k, [], attr_type=onnx.AttributeProto.INTS) for k in empty)
        self.nodes.append(nd)
        for o, t, s in ([(out, dt, oshape)] if isinstance(out, str) else zip(out, dt, oshape)):
            self.outputs.append((o, t, s))

    def input(self, name, data, dt):
        self.inputs.append((name, dt, data))

    def const(self, name, data):
        self.inits.append(onnx.numpy_helper.from_array(data, name))

    def save(self, path, opset=22):
        g = helper.make_graph(self.nodes, "random", [vi(n, t, d.shape) for n, t, d in self.inputs],
                              [vi(n, t, s) for n, t, s in self.outputs], initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 10
        onnx.save(m, path)


BERN_P = np.array([0.0, 0.05, 0.2, 0.5, 0.7, 0.9, 0.99, 1.0])
MULTI_LOGITS32 = np.array([[0.0, 1.0, 2.0, -1.0, 0.5], [3.0, 3.0, 3.0, 3.0, 3.0], [-2.0, 0.0, 4.0, 1.0, -5.0]],
                          np.float32)
MULTI_LOGITS64 = np.array([[0.1, -np.inf, 1.2, 0.3, -0.4, 2.0, 0.0], [5.0, 4.0, -np.inf, 1.0, 0.0, 2.0, 3.0]])


def main_spec(seed_shift=0.0):
    """Every op at two or more shapes and dtypes; seeds shifted by seed_shift."""
    s = Spec()
    sd = lambda v: float(v + seed_shift)  # noqa: E731
    s.node("RandomUniform", [], "u32", TP.FLOAT, (200, 100), shape=[200, 100], seed=sd(1))
    s.node("RandomUniform", [], "u64", TP.DOUBLE, (50000,), shape=[50000], dtype=TP.DOUBLE, low=-2.0, high=3.0,
           seed=sd(2))
    s.node("RandomUniform", [], "u16", TP.FLOAT16, (4, 8, 16), shape=[4, 8, 16], dtype=TP.FLOAT16)  # no seed
    s.node("RandomNormal", [], "n32", TP.FLOAT, (100, 200), shape=[100, 200], seed=sd(3))
    s.node("RandomNormal", [], "n64", TP.DOUBLE, (30000,), shape=[30000], dtype=TP.DOUBLE, mean=5.0, scale=2.0,
           seed=sd(4))
    s.node("RandomNormal", [], "n16", TP.FLOAT16, (3, 5, 7), shape=[3, 5, 7], dtype=TP.FLOAT16, seed=sd(5))
    s.node("RandomNormal", [], "n0", TP.FLOAT, (), shape=[], seed=sd(6))
    x = np.zeros((64, 320), np.float32)
    s.input("X", x, TP.FLOAT)
    s.input("I", np.zeros((2, 3, 4), np.int64), TP.INT64)
    s.node("RandomUniformLike", ["X"], "ul32", TP.FLOAT, x.shape, seed=sd(7))
    s.node("RandomUniformLike", ["I"], "ul16", TP.FLOAT16, (2, 3, 4), dtype=TP.FLOAT16, low=10.0, high=12.0,
           seed=sd(8))
    s.node("RandomNormalLike", ["X"], "nl64", TP.DOUBLE, x.shape, dtype=TP.DOUBLE, mean=-1.0, scale=0.5,
           seed=sd(9))
    s.node("RandomNormalLike", ["I"], "nl32", TP.FLOAT, (2, 3, 4), dtype=TP.FLOAT, seed=sd(10))
    p32 = np.repeat(BERN_P[:, None], 5000, axis=1).astype(np.float32)
    p64 = np.repeat(np.array([0.1, 0.3, 0.6, 0.95])[:, None], 2000, axis=1)
    s.input("P32", p32, TP.FLOAT)
    s.input("P64", p64, TP.DOUBLE)
    s.node("Bernoulli", ["P32"], "b32", TP.FLOAT, p32.shape, seed=sd(11))
    s.node("Bernoulli", ["P64"], "b64i", TP.INT32, p64.shape, dtype=TP.INT32, seed=sd(12))
    s.node("Bernoulli", ["P32"], "b32b", TP.BOOL, p32.shape, dtype=TP.BOOL)  # no seed
    s.input("L32", MULTI_LOGITS32, TP.FLOAT)
    s.input("L64", MULTI_LOGITS64, TP.DOUBLE)
    s.node("Multinomial", ["L32"], "m32", TP.INT32, (3, 20000), sample_size=20000, seed=sd(13))
    s.node("Multinomial", ["L64"], "m64", TP.INT64, (2, 10000), sample_size=10000, dtype=TP.INT64, seed=sd(14))
    xd = np.linspace(-3, 3, 20000, dtype=np.float32).reshape(100, 200)
    s.input("XD", xd, TP.FLOAT)
    s.const("ratio", np.array(0.3, np.float32))
    s.const("train", np.array(True))
    s.node("Dropout", ["XD", "ratio", "train"], ("dy", "dmask"), (TP.FLOAT, TP.BOOL), (xd.shape, xd.shape),
           seed=int(sd(15)))  # Dropout's seed is an int: numpy's generator, as the ONNX reference draws it
    s.node("RandomNormal", [], "free1", TP.FLOAT, (1000,), shape=[1000])  # two seedless nodes
    s.node("RandomNormal", [], "free2", TP.FLOAT, (1000,), shape=[1000])
    s.node("RandomNormal", [], "same1", TP.FLOAT, (1000,), shape=[1000], seed=sd(16))  # two with one seed
    s.node("RandomNormal", [], "same2", TP.FLOAT, (1000,), shape=[1000], seed=sd(16))
    return s


class Runner:
    def __init__(self, kiln, d, checks):
        self.kiln, self.d, self.checks, self.k = kiln, d, checks, 0

    def compile(self, spec, label):
        self.k += 1
        path = os.path.join(self.d, "m%d.onnx" % self.k)
        spec.save(path)
        bundle = os.path.join(self.d, "m%d.kiln" % self.k)
        r = util.run_kiln(self.kiln, ["compile", path, "-o", bundle], timeout=120)
        if not self.checks.check(r.rc == 0 and not r.sanitizer_report(),
                                 "%s: compile %s: %s" % (label, r.describe(), r.err.strip())):
            return None
        return bundle

    def run(self, spec, bundle, label):
        self.k += 1
        argv = []
        for name, _, data in spec.inputs:
            f = os.path.join(self.d, "in%d_%s.npy" % (self.k, name))
            np.save(f, data)
            argv += ["--input", "%s=%s" % (name, f)]
        out = os.path.join(self.d, "out%d" % self.k)
        os.makedirs(out)
        r = util.run_kiln(self.kiln, ["run", bundle, "--output-dir", out] + argv, timeout=120)
        if not self.checks.check(r.rc == 0 and not r.sanitizer_report(),
                                 "%s: run %s: %s" % (label, r.describe(), r.err.strip())):
            return None
        return {n: np.load(os.path.join(out, n + ".npy")) for n, _, _ in spec.outputs}


def check_main(c, spec, ys):
    # shapes and dtypes
    for name, dt, shape in spec.outputs:
        y = ys[name]
        c.check(y.shape == tuple(shape) and y.dtype == NP[dt],
                "%s: %s %s, want %s %s" % (name, y.dtype, y.shape, np.dtype(NP[dt]), tuple(shape)))

    # the documented generator, recomputed
    def same(name, want, rtol=0.0):
        y = ys[name]
        if rtol == 0.0:
            ok = y.shape == want.shape and np.array_equal(y, want)
        else:
            ok = y.shape == want.shape and np.allclose(y.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                                       atol=rtol)
        bad = int(np.sum(y != want)) if y.shape == want.shape else -1
        c.check(ok, "%s: values differ from the documented generator (%d of %d)" % (name, bad, want.size))

    same("u32", want_uniform(seed_key(1), (200, 100), TP.FLOAT))
    same("u64", want_uniform(seed_key(2), (50000,), TP.DOUBLE, -2.0, 3.0))
    same("u16", want_uniform(name_key("u16"), (4, 8, 16), TP.FLOAT16))  # the seedless key: FNV-1a of the name
    same("ul32", want_uniform(seed_key(7), (64, 320), TP.FLOAT))
    same("ul16", want_uniform(seed_key(8), (2, 3, 4), TP.FLOAT16, 10.0, 12.0))
    same("n64", want_normal(seed_key(4), (30000,), TP.DOUBLE, 5.0, 2.0), 1e-12)
    same("nl64", want_normal(seed_key(9), (64, 320), TP.DOUBLE, -1.0, 0.5), 1e-12)
    same("n32", want_normal(seed_key(3), (100, 200), TP.FLOAT), 1e-6)
    same("n16", want_normal(seed_key(5), (3, 5, 7), TP.FLOAT16), 1e-3)
    same("n0", want_normal(seed_key(6), (), TP.FLOAT), 1e-6)
    same("nl32", want_normal(seed_key(10), (2, 3, 4), TP.FLOAT), 1e-6)
    p32, p64 = dict((n, d) for n, _, d in spec.inputs)["P32"], dict((n, d) for n, _, d in spec.inputs)["P64"]
    same("b32", (work_units(seed_key(11), p32.shape, False) < p32).astype(np.float32))
    same("b64i", (work_units(seed_key(12), p64.shape, True) < p64).astype(np.int32))
    same("b32b", work_units(name_key("b32b"), p32.shape, False) < p32)
    same("dmask", np.random.RandomState(15).uniform(0, 1.0, (100, 200)) >= np.float32(0.3))

    # uniform: range, mean, variance, KS
    for name, low, high in (("u32", 0.0, 1.0), ("u64", -2.0, 3.0), ("ul32", 0.0, 1.0), ("u16", 0.0, 1.0),
                            ("ul16", 10.0, 12.0)):
        y = ys[name].astype(np.float64).ravel()
        n, w = y.size, high - low
        c.check(y.min() >= low and y.max() < high, "%s: range [%g, %g] outside [%g, %g)" % (name, y.min(), y.max(),
                                                                                          low, high))
        if n < 10000:
            continue
        c.check(abs(y.mean() - (low + high) / 2) < 4 * w / math.sqrt(12 * n),
                "%s: mean %g, want %g within %g" % (name, y.mean(), (low + high) / 2, 4 * w / math.sqrt(12 * n)))
        sd_var = w * w * math.sqrt(1 / 80 - 1 / 144) / math.sqrt(n)
        c.check(abs(y.var() - w * w / 12) < 4 * sd_var, "%s: variance %g, want %g within %g" %
                (name, y.var(), w * w / 12, 4 * sd_var))
        ks = ks_uniform(y, low, high)
        c.check(ks < KS_1E3 / math.sqrt(n), "%s: KS statistic %g >= %g" % (name, ks, KS_1E3 / math.sqrt(n)))

    # normal: mean, std, KS
    for name, mean, scale in (("n32", 0.0, 1.0), ("n64", 5.0, 2.0), ("nl64", -1.0, 0.5), ("free1", 0.0, 1.0)):
        y = ys[name].astype(np.float64).ravel()
        n = y.size
        c.check(np.all(np.isfinite(y)), "%s: non-finite values" % name)
        c.check(abs(y.mean() - mean) < 4 * scale / math.sqrt(n),
                "%s: mean %g, want %g within %g" % (name, y.mean(), mean, 4 * scale / math.sqrt(n)))
        c.check(abs(y.std() - scale) < 4 * scale / math.sqrt(2 * n),
                "%s: std %g, want %g within %g" % (name, y.std(), scale, 4 * scale / math.sqrt(2 * n)))
        if n >= 10000:
            ks = ks_normal(y, mean, scale)
            c.check(ks < KS_1E3 / math.sqrt(n), "%s: KS statistic %g >= %g" % (name, ks, KS_1E3 / math.sqrt(n)))
    c.check(np.all(np.isfinite(ys["n16"].astype(np.float32))), "n16: non-finite values")

    # Bernoulli: frequency per row of equal p
    for name, p in (("b32", p32), ("b32b", p32), ("b64i", p64)):
        y = ys[name].astype(np.float64)
        for row in range(p.shape[0]):
            q, n, f = float(p[row, 0]), p.shape[1], y[row].mean()
            tol = 4 * math.sqrt(q * (1 - q) / n)
            c.check(set(np.unique(y[row])) <= {0.0, 1.0} and abs(f - q) <= tol,
                    "%s row %d: frequency %g, p %g, tolerance %g" % (name, row, f, q, tol))

    # Multinomial: class counts against softmax(logits), chi-square at alpha 1e-3
    for name, logits in (("m32", MULTI_LOGITS32), ("m64", MULTI_LOGITS64)):
        y = ys[name]
        k = logits.shape[1]
        for row in range(logits.shape[0]):
            lg = logits[row].astype(np.float64)
            prob = np.exp(lg - lg.max())
            prob /= prob.sum()
            counts = np.bincount(y[row].astype(np.int64), minlength=k) if y[row].min() >= 0 else None
            if not c.check(counts is not None and len(counts) == k, "%s row %d: samples outside [0, %d)" %
                           (name, row, k)):
                continue
            live = prob > 0
            c.check(np.all(counts[~live] == 0), "%s row %d: classes of probability 0 drawn: %s" %
                    (name, row, counts[~live]))
            n = y.shape[1]
            exp = n * prob[live]
            chi2 = float(np.sum((counts[live] - exp) ** 2 / exp))
            crit = CHI2_1E3[int(live.sum()) - 1]
            c.check(chi2 < crit, "%s row %d: chi-square %g >= %g (counts %s, expected %s)" %
                    (name, row, chi2, crit, counts, np.round(exp)))

    # Dropout: kept fraction ~ 0.7, kept values scaled by 1/0.7, dropped ones 0
    xd, m, dy = dict((n, d) for n, _, d in spec.inputs)["XD"], ys["dmask"], ys["dy"]
    n = m.size
    c.check(abs(m.mean() - 0.7) < 4 * math.sqrt(0.21 / n), "Dropout: kept %g, want 0.7" % m.mean())
    c.check(np.allclose(dy, np.where(m, xd * np.float32(1 / 0.7), 0), rtol=1e-6, atol=0) and np.all(dy[~m] == 0),
            "Dropout: output is not x / (1 - ratio) where kept and 0 elsewhere")

    # seedless nodes differ; one seed, one stream
    c.check(not np.array_equal(ys["free1"], ys["free2"]), "two seedless RandomNormal nodes gave the same values")
    c.check(np.array_equal(ys["same1"], ys["same2"]), "two RandomNormal nodes with one seed differ")
    c.check(not np.array_equal(ys["b32"].astype(bool), ys["b32b"]), "seeded and seedless Bernoulli agree")


def check_refusals(c, r):
    s = Spec()
    s.input("I", np.zeros((2, 3), np.int32), TP.INT32)
    s.node("RandomNormalLike", ["I"], "y", TP.FLOAT, (2, 3))
    path = os.path.join(r.d, "bad1.onnx")
    s.save(path)
    run = util.run_kiln(r.kiln, ["compile", path, "-o", os.path.join(r.d, "bad1.kiln")])
    c.check(run.rc == 1 and "dtype" in run.err and not util.clean_failure(run),
            "RandomNormalLike of int32 without dtype is refused naming dtype: %s %r" % (run.describe(), run.err))
    s = Spec()
    s.input("L", np.zeros((5,), np.float32), TP.FLOAT)
    s.node("Multinomial", ["L"], "y", TP.INT32, (5,))
    path = os.path.join(r.d, "bad2.onnx")
    s.save(path)
    run = util.run_kiln(r.kiln, ["compile", path, "-o", os.path.join(r.d, "bad2.kiln")])
    c.check(run.rc == 1 and "batch_size, class_size" in run.err and not util.clean_failure(run),
            "Multinomial of rank 1 is refused clearly: %s %r" % (run.describe(), run.err))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    args = ap.parse_args()
    c = util.Checks("test_random_ops")
    with tempfile.TemporaryDirectory(prefix="kiln_random_") as d:
        r = Runner(args.kiln, d, c)
        spec = main_spec()
        b1, b2 = r.compile(spec, "model"), r.compile(spec, "model, again")
        y1 = r.run(spec, b1, "model") if b1 else None
        if y1:
            check_main(c, spec, y1)
            y2 = r.run(spec, b1, "model, second run")
            y3 = r.run(spec, b2, "model, second compile") if b2 else None
            for other, what in ((y2, "a second run"), (y3, "a second compile")):
                if other:
                    diff = [n for n in y1 if y1[n].tobytes() != other[n].tobytes()]
                    c.check(not diff, "%s changed outputs %s" % (what, diff))
            spec2 = main_spec(seed_shift=100.0)
            b3 = r.compile(spec2, "model with other seeds")
            y4 = r.run(spec2, b3, "model with other seeds") if b3 else None
            if y4:
                seeded = [n for n, _, _ in spec.outputs if n not in ("u16", "b32b", "free1", "free2")]
                same = [n for n in seeded if y1[n].tobytes() == y4[n].tobytes()]
                c.check(not same, "other seeds gave the same outputs %s" % same)
                c.check(np.array_equal(y1["u16"], y4["u16"]), "a seedless node changed with the other nodes' seeds")
        check_refusals(c, r)
    c.finish()


if __name__ == "__main__":
    main()
