"""test_contrib_ops.py — ONNX Runtime's com.microsoft ops that kiln converts
(importer/ops_contrib.c: Gelu, FastGelu with and without bias, BiasGelu, QuickGelu
with its default and another alpha, BiasAdd, SkipLayerNormalization with and
without beta and bias and its sum output, SkipSimplifiedLayerNormalization, FusedMatMul
with alpha and each transpose), each a
one-node model at several
shapes, compiled and run by kiln and compared with ONNX Runtime's own kernels (the
reference for that domain; BiasAdd, which it implements for CUDA only, against its
documented X + bias + skip in numpy): rtol 1e-4, atol 1e-5 on float32 inputs
normal(0, 2).
An unsupported com.microsoft op still fails naming the op, its domain and the node.

Options: --kiln PATH. Closing line: test_contrib_ops: N passed, M failed.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402
import test_e2e  # noqa: E402

SHAPES = [(7,), (2, 3, 16), (1, 128, 768)]


def model(path, op, inputs, attrs=None, outputs=("Y",)):
    """One com.microsoft node; inputs: [(name, shape)] ("" for an absent optional input),
    outputs of the first input's shape ("" for an absent one)."""
    vis = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs if n]
    node = helper.make_node(op, [n for n, _ in inputs], list(outputs), domain="com.microsoft", name=op + "_0",
                            **(attrs or {}))
    shape = None if op == "FusedMatMul" else list(inputs[0][1])  # a product's shape: left to inference
    ys = [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o in outputs if o]
    g = helper.make_graph([node], "g", vis, ys)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    onnx.save(m, path)


def cases():
    for s in SHAPES:
        last = (s[-1],)
        yield "Gelu", [("X", s)], None
        yield "FastGelu", [("X", s)], None
        yield "FastGelu", [("X", s), ("bias", last)], None
        yield "BiasGelu", [("A", s), ("B", last)], None
        yield "QuickGelu", [("X", s)], None
        yield "QuickGelu", [("X", s)], {"alpha": 1.0}
        if len(s) == 3:
            yield "BiasAdd", [("X", s), ("bias", last), ("skip", s)], None
            eps = {"epsilon": 1e-5}
            yield "SkipLayerNormalization", [("X", s), ("skip", s), ("gamma", last), ("beta", last), ("bias", last)], eps
            yield "SkipLayerNormalization", [("X", s), ("skip", s), ("gamma", last)], eps
            yield "SkipLayerNormalization", [("X", s), ("skip", s), ("gamma", last), ("beta", last)], eps, ("Y", "", "", "S")
            yield "SkipSimplifiedLayerNormalization", [("X", s), ("skip", s), ("gamma", last)], eps
            yield "SkipSimplifiedLayerNormalization", [("X", s), ("skip", s), ("gamma", last), ("bias", last)], eps
    for ta in (0, 1):
        for tb in (0, 1):
            a = (2, 5, 3) if ta else (2, 3, 5)
            b = (4, 5) if tb else (5, 4)
            yield "FusedMatMul", [("A", a), ("B", b)], {"alpha": 0.5, "transA": ta, "transB": tb}
    yield "FusedMatMul", [("A", (1, 16, 64)), ("B", (1, 16, 64))], {"alpha": 0.125, "transB": 1}
    yield "FusedMatMul", [("A", (7, 9)), ("B", (9, 11))], None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    args = ap.parse_args()
    checks = util.Checks("test_contrib_ops")
    rng = np.random.default_rng(29)
    with tempfile.TemporaryDirectory(prefix="kiln_contrib_") as d:
        for i, case in enumerate(cases()):
            op, inputs, attrs = case[:3]
            outputs = case[3] if len(case) > 3 else ("Y",)
            label = "%s%s %s %s" % (op, attrs or "", [n for n, _ in inputs], [s for _, s in inputs])
            path = os.path.join(d, "m%d.onnx" % i)
            model(path, op, inputs, attrs, outputs)
            feeds, argv = {}, []
            for name, s in inputs:
                feeds[name] = (rng.standard_normal(s) * 2).astype(np.float32)
                f = os.path.join(d, "m%d_%s.npy" % (i, name))
                np.save(f, feeds[name])
                argv += ["--input", "%s=%s" % (name, f)]
            bundle, out = os.path.join(d, "m%d.kiln" % i), os.path.join(d, "out%d" % i)
            os.makedirs(out)
            r = util.run_kiln(args.kiln, ["compile", path, "-o", bundle])
            if not checks.check(r.rc == 0, "%s: compile %s: %s" % (label, r.describe(), r.err.strip())):
                continue
            r = util.run_kiln(args.kiln, ["run", bundle, "--output-dir", out] + argv)
            if not checks.check(r.rc == 0, "%s: run %s: %s" % (label, r.describe(), r.err.strip())):
                continue
            if op == "BiasAdd":  # ONNX Runtime implements it for CUDA only: its documented sum, in numpy
                want = feeds["X"] + feeds["bias"] + feeds["skip"]
                wants = {"Y": want}
            else:
                wants = test_e2e.reference(path, feeds)[0]
            for o in (o for o in outputs if o):
                ok, why, mabs, _ = test_e2e.compare(np.load(os.path.join(out, o + ".npy")), wants[o], 1e-4, 1e-5)
                checks.check(ok, "%s, output %s: %s" % (label, o, why))
        path = os.path.join(d, "stats.onnx")  # the statistics outputs: refused with one line saying so
        model(path, "SkipLayerNormalization", [("X", (2, 4)), ("skip", (2, 4)), ("gamma", (4,))], None, ("Y", "M"))
        r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "stats.kiln")])
        checks.check(r.rc == 1 and "mean, inv_std_var" in r.err and not util.clean_failure(r),
                     "SkipLayerNormalization's mean output is refused clearly: %s %r" % (r.describe(), r.err))
        path = os.path.join(d, "bad.onnx")
        model(path, "SkipLayerNormalizationX", [("X", (2, 4))])  # no such op
        r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "bad.kiln")])
        checks.check(r.rc == 1 and "com.microsoft" in r.err and "SkipLayerNormalizationX" in r.err and
                     "SkipLayerNormalizationX_0" in r.err and not util.clean_failure(r),
                     "an unsupported com.microsoft op fails naming op, domain and node: %s %r" % (r.describe(), r.err))
    checks.finish()


if __name__ == "__main__":
    main()
