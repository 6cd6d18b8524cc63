"""test_long_math.py — exp, log, tanh and erf computed in vectors of two registers' lanes.

Where a matmul or conv epilogue, softmax's exp row or an element-wise kernel evaluates one
to three of those functions, the schedule vectorizes it over twice the lanes of a register
(schedule/templates.c, lower_math_lanes), so that the backend emits two independent
dependency chains side by side; an expression with more of them (an LSTM cell's three
sigmoids and two tanh) keeps one register's lanes. On AVX-512 the exp's VSCALEFPS then runs
on pieces of the wider vector (targets/llvm/llvm_vmath.c). Checked here:
- Values: a matmul with a bias and the erf form of GELU, a 1x1 conv with a swish, a 3x3
  conv with a swish (Winograd on AVX2: the swish in the output transform), a softmax over rows of 200 (12 full vectors of 16 and a ragged one), element-wise erf, tanh
  and log, and an LSTM-cell-like expression of five functions, on every x86-64 level this
  machine runs, against float64 numpy references: |diff| <= 2e-5 + 2e-5 |want|.
- The loop IR on x86_64-avx2 (compiled, not run, so on any host): the statements that call
  erf, exp, tanh or log in the first six models are vectors of 16 lanes, the five-function
  expression's of 8.
- On x86_64-avx512 (compiled, not run): the GELU epilogue is 32 lanes (a ragged tile of 16
  beside) and its exp's scaling 16-lane VSCALEFPS calls on the pieces in the LLVM IR.
A level the CPU lacks (x86_64-avx512 on most AMD machines) is reported skipped for the
values.

Options: --kiln PATH. Closing line: test_long_math: N passed, M failed.
"""
import math
import os
import re
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402

TARGETS = ["host", "x86_64", "x86_64-avx2", "x86_64-avx512"]
ERF = np.vectorize(math.erf)
LONG_CALL = re.compile(r"\b(erf|exp|tanh|log)\(")
LANES = re.compile(r"ramp\([^=]*, 1, (\d+)\)\] = ")


def save(nodes, inputs, out_shape, inits, path):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def cases(d, rng):
    """(label, path, feeds, float64 reference, vector lanes expected on AVX2)"""
    out = []
    # matmul + bias + GELU as exported by PyTorch: x * 0.5 * (1 + erf(x / sqrt 2))
    x = rng.standard_normal((1, 24, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 48)) * 0.2).astype(np.float32)
    b = (rng.standard_normal(48) * 0.2).astype(np.float32)
    k = {"w": w, "b": b, "s2": np.array(math.sqrt(2), np.float32), "one": np.array(1, np.float32),
         "half": np.array(0.5, np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Div", ["a", "s2"], ["q"]), helper.make_node("Erf", ["q"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["a", "e1"], ["p"]),
             helper.make_node("Mul", ["p", "half"], ["y"])]
    path = os.path.join(d, "gelu.onnx")
    save(nodes, [("x", [1, 24, 64])], [1, 24, 48], k, path)
    a = x.astype(np.float64) @ w + b
    out.append(("matmul + GELU", path, {"x": x}, a * 0.5 * (1 + ERF(a / math.sqrt(2))), 16))
    # 1x1 conv + swish
    x = rng.standard_normal((1, 32, 10, 10)).astype(np.float32)
    w = (rng.standard_normal((48, 32, 1, 1)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Mul", ["c", "s"], ["y"])]
    path = os.path.join(d, "swish.onnx")
    save(nodes, [("x", [1, 32, 10, 10])], [1, 48, 10, 10], {"w": w}, path)
    c = np.einsum("oi,ihw->ohw", w[:, :, 0, 0].astype(np.float64), x[0].astype(np.float64))[None]
    out.append(("conv 1x1 + swish", path, {"x": x}, c * sigmoid(c), 16))
    # 3x3 conv + swish, which AVX2 runs as Winograd: the swish in the output transform
    x = rng.standard_normal((1, 32, 20, 20)).astype(np.float32)
    w = (rng.standard_normal((32, 32, 3, 3)) * 0.05).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Mul", ["c", "s"], ["y"])]
    path = os.path.join(d, "wino_swish.onnx")
    save(nodes, [("x", [1, 32, 20, 20])], [1, 32, 20, 20], {"w": w}, path)
    xp = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    c = sum(np.einsum("oi,ihw->ohw", w[:, :, i, j].astype(np.float64), xp[:, i:i + 20, j:j + 20])
            for i in range(3) for j in range(3))[None]
    out.append(("conv 3x3 (Winograd) + swish", path, {"x": x}, c * sigmoid(c), 16))
    # softmax over rows of 200
    x = (rng.standard_normal((4, 37, 200)) * 3).astype(np.float32)
    path = os.path.join(d, "softmax.onnx")
    save([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [("x", [4, 37, 200])], [4, 37, 200], {}, path)
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    out.append(("softmax rows of 200", path, {"x": x}, e / e.sum(-1, keepdims=True), 16))
    # element-wise: erf, tanh, log of |x| + 0.5 (three functions in one kernel)
    x = (rng.standard_normal((2, 3, 40, 64)) * 2).astype(np.float32)
    k = {"h": np.array(0.5, np.float32)}
    nodes = [helper.make_node("Erf", ["x"], ["e"]), helper.make_node("Tanh", ["x"], ["t"]),
             helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Add", ["a", "h"], ["a5"]),
             helper.make_node("Log", ["a5"], ["l"]), helper.make_node("Add", ["e", "t"], ["et"]),
             helper.make_node("Add", ["et", "l"], ["y"])]
    path = os.path.join(d, "eltwise.onnx")
    save(nodes, [("x", [2, 3, 40, 64])], [2, 3, 40, 64], k, path)
    xd = x.astype(np.float64)
    out.append(("erf + tanh + log", path, {"x": x}, ERF(xd) + np.tanh(xd) + np.log(np.abs(xd) + 0.5), 16))
    # an LSTM cell's five: sigmoid(i) tanh(g) + sigmoid(f) c, times sigmoid(o), then tanh
    names = ["i", "g", "f", "c", "o"]
    feeds = {n: rng.standard_normal((4, 256)).astype(np.float32) for n in names}
    nodes = [helper.make_node("Sigmoid", ["i"], ["si"]), helper.make_node("Tanh", ["g"], ["tg"]),
             helper.make_node("Sigmoid", ["f"], ["sf"]), helper.make_node("Sigmoid", ["o"], ["so"]),
             helper.make_node("Mul", ["si", "tg"], ["ig"]), helper.make_node("Mul", ["sf", "c"], ["fc"]),
             helper.make_node("Add", ["ig", "fc"], ["c1"]), helper.make_node("Tanh", ["c1"], ["tc"]),
             helper.make_node("Mul", ["so", "tc"], ["y"])]
    path = os.path.join(d, "cell.onnx")
    save(nodes, [(n, [4, 256]) for n in names], [4, 256], {}, path)
    f = {n: v.astype(np.float64) for n, v in feeds.items()}
    c1 = sigmoid(f["i"]) * np.tanh(f["g"]) + sigmoid(f["f"]) * f["c"]
    out.append(("LSTM-like cell", path, feeds, sigmoid(f["o"]) * np.tanh(c1), 8))
    return out


def long_lanes(kiln, checks, label, path, target, d):
    """The lanes of every loop-IR store whose value calls erf, exp, tanh or log."""
    r = util.run_kiln(kiln, ["compile", path, "-o", os.path.join(d, "l.kiln"), "--target", target,
                             "--dump-after", "lower"], timeout=120)
    if not checks.check(r.rc == 0, "%s [%s]: compile %s: %s" % (label, target, r.describe(), r.err.strip())):
        return None
    lanes = set()
    for line in r.out.splitlines():
        m = LANES.search(line)
        if m and LONG_CALL.search(line[m.end():]):
            lanes.add(int(m.group(1)))
    return lanes


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_long_math")
    rng = np.random.default_rng(5)
    with tempfile.TemporaryDirectory(prefix="kiln_longmath_") as d:
        cs = cases(d, rng)
        for target, (label, _, _, want, _), ys in util.run_on_targets(args.kiln, checks, TARGETS, cs, d):
            got = ys["y"]
            err = np.abs(got.astype(np.float64) - want) - 2e-5 * np.abs(want)
            checks.check(got.shape == want.shape and float(err.max()) <= 2e-5,
                         "%s [%s]: off the float64 reference by %.3g" % (label, target, float(np.abs(got - want).max())))
        # the vector widths on AVX2: 16 lanes (two registers) for one to three functions,
        # 8 for the cell's five; the ragged tail of the softmax row may add a shorter one
        for label, path, _, _, lanes in cs:
            got = long_lanes(args.kiln, checks, label, path, "x86_64-avx2", d)
            if got is None:
                continue
            ok = lanes in got and max(got) == lanes
            checks.check(ok, "%s [x86_64-avx2]: the long math's vectors have %s lanes, want %d" %
                         (label, sorted(got), lanes))
        # AVX-512: 32 lanes, the exp scaled by two 16-lane VSCALEFPS per vector
        label, path = cs[0][0], cs[0][1]
        got = long_lanes(args.kiln, checks, label, path, "x86_64-avx512", d)
        if got is not None:  # 48 columns: a tile of 32 and a ragged one of 16
            checks.check(max(got) == 32, "%s [x86_64-avx512]: lanes %s, want 32" % (label, sorted(got)))
        r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "z.kiln"), "--target", "x86_64-avx512",
                                      "--dump-after", "codegen"], timeout=120)
        calls = re.findall(r"call <(\d+) x float> @llvm\.x86\.avx512\.mask\.scalef\.ps\.512", r.out)
        checks.check(r.rc == 0 and len(calls) >= 2 and set(calls) == {"16"},
                     "%s [x86_64-avx512]: %s" % (label, "compile failed" if r.rc else
                                                 "VSCALEFPS calls %s, want 16-lane pieces" % calls))
    checks.finish()


if __name__ == "__main__":
    main()
