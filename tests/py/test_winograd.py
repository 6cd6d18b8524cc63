"""test_winograd.py — 3x3 convolutions as Winograd F(4x4,3x3) and F(2x2,3x3)
(layout/winograd.c): each case a Conv (with its bias, and an epilogue where given)
compiled with --winograd on, run by kiln and compared with ONNX Runtime on the same
seeded inputs; then which convs the default (--winograd auto) rewrites — for both
x86 classes, whose rules differ (AVX2, 16 registers, also takes F(2x2) on 16-tile
and ragged maps) — and that --winograd off rewrites none.

Tolerance: the transforms scale values by up to 8 x 4 (F(4,3)'s Aᵀ and Bᵀ) and back,
so outputs are compared relative to the output's magnitude: max |kiln − ORT| <=
2e-5 · max |ORT| (+1e-6); measured 1e-6–5e-6 of it on these cases (printed).

Options: --kiln PATH. Closing line: test_winograd: N passed, M failed.
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402


class Case:
    def __init__(self, label, n, c, m, h, w, pads=(1, 1, 1, 1), epilogue="relu", tile=4, auto=None):
        self.label, self.n, self.c, self.m, self.h, self.w = label, n, c, m, h, w
        self.pads, self.epilogue, self.tile = pads, epilogue, tile
        # whether --winograd auto rewrites it: one bool for both x86 classes, or
        # (on x86_64-avx2, on x86_64-avx512); None: not checked
        self.auto = auto if auto is None or isinstance(auto, tuple) else (auto, auto)


CASES = [
    Case("c64 m64 56x56 relu (F4, ResNet stage 1)", 1, 64, 64, 56, 56, auto=True),
    Case("c32 m48 14x14 residual add + relu (F2: 14 is no multiple of 4)", 1, 32, 48, 14, 14, epilogue="residual",
         tile=2, auto=True),
    Case("c16 m32 18x18 no padding -> 16x16", 1, 16, 32, 18, 18, pads=(0, 0, 0, 0), auto=False),
    Case("c32 m32 17x17 padded top/left only -> 16x16", 1, 32, 32, 17, 17, pads=(1, 1, 0, 0), epilogue="none"),
    Case("batch 2 c32 m32 8x8 (F2: 32 tiles over the batch)", 2, 32, 32, 8, 8, epilogue="none", auto=True),
    Case("c40 m24 12x20 sigmoid", 1, 40, 24, 12, 20, epilogue="sigmoid"),
    Case("c128 m128 28x28 relu (F4, stage 2)", 1, 128, 128, 28, 28, auto=True),
    Case("c256 m256 7x7 (F2, the last tile row and column half outside; auto on AVX2)", 1, 256, 256, 7, 7,
         tile=2, auto=(True, False)),
    Case("c64 m32 13x13 residual add + relu (F2 ragged, 49 tiles; auto on AVX2)", 1, 64, 32, 13, 13,
         epilogue="residual", tile=2, auto=(True, False)),
    Case("c32 m40 9x9 unpadded -> 7x7 (F2 ragged, taps past the input read zero)", 1, 32, 40, 9, 9,
         pads=(0, 0, 0, 0), epilogue="none", tile=2, auto=(True, False)),
    Case("c48 m32 8x8 sigmoid (F2: 16 whole tiles; auto on AVX2)", 1, 48, 32, 8, 8, epilogue="sigmoid", tile=2,
         auto=(True, False)),
    Case("c32 m32 5x5 (F2 ragged, 9 tiles: auto leaves it direct)", 1, 32, 32, 5, 5, tile=2, auto=False),
    Case("c3 m16 32x32 (a narrow block, zero-padded by its relayout; auto: too few channels)", 1, 3, 16, 32, 32,
         auto=False),
]


def build(path, case, rng):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [case.n, case.c, case.h, case.w])
    oh = case.h + case.pads[0] + case.pads[2] - 2
    ow = case.w + case.pads[1] + case.pads[3] - 2
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [case.n, case.m, oh, ow])
    w = rng.standard_normal((case.m, case.c, 3, 3)).astype(np.float32) * np.float32(1 / np.sqrt(9 * case.c))
    b = rng.standard_normal(case.m).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=list(case.pads))]
    inputs = [x]
    if case.epilogue == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    elif case.epilogue == "sigmoid":
        nodes.append(helper.make_node("Sigmoid", ["c"], ["y"]))
    elif case.epilogue == "residual":
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [case.n, case.m, oh, ow]))
        nodes.append(helper.make_node("Add", ["c", "r"], ["s"]))
        nodes.append(helper.make_node("Relu", ["s"], ["y"]))
    else:
        nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "winograd", inputs, [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    feeds = {"x": rng.standard_normal((case.n, case.c, case.h, case.w)).astype(np.float32)}
    if case.epilogue == "residual":
        feeds["r"] = rng.standard_normal((case.n, case.m, oh, ow)).astype(np.float32)
    return feeds


def rewritten(kiln, path, mode, target="host"):
    """How many winograd_in nodes the layout step leaves (kiln compile --dump-after layout)."""
    r = util.run_kiln(kiln, ["compile", path, "-o", os.devnull, "--winograd", mode, "--target", target,
                             "--dump-after", "layout"])
    return None if r.rc != 0 else r.out.count("winograd_in(")


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_winograd")
    import onnxruntime as ort
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as d:
        for i, case in enumerate(CASES):
            if args.filter and args.filter not in case.label:
                continue
            path = os.path.join(d, "w%d.onnx" % i)
            feeds = build(path, case, rng)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            want = sess.run(None, feeds)[0]
            on = rewritten(args.kiln, path, "on")
            checks.check(on == (1 if case.tile else 0),
                         "%s: --winograd on rewrote %s conv(s), want %d" % (case.label, on, 1 if case.tile else 0))
            for target, want_auto in zip(("x86_64-avx2", "x86_64-avx512"), case.auto or ()):
                au = rewritten(args.kiln, path, "auto", target)
                checks.check(au == int(want_auto), "%s: --winograd auto rewrote %s conv(s) on %s, want %d" % (
                    case.label, au, target, int(want_auto)))
            off = rewritten(args.kiln, path, "off")
            checks.check(off == 0, "%s: --winograd off rewrote %s conv(s)" % (case.label, off))
            ys = util.compile_and_run(args.kiln, checks, case.label, path, feeds, d, "w%d" % i, ["--winograd", "on"])
            if ys is None:
                continue
            got = ys["y"]
            if not checks.check(got.shape == want.shape, "%s: shape %s, want %s" % (case.label, got.shape, want.shape)):
                continue
            scale = float(np.abs(want).max())
            err = float(np.abs(got - want).max())
            ok = err <= 2e-5 * scale + 1e-6
            print("  %-66s %s: max diff %.2e = %.1e of max |y| %.2f" % (case.label[:66], "ok" if ok else "FAIL", err,
                                                                    err / max(scale, 1e-30), scale), flush=True)
            checks.check(ok, "%s: max |kiln - ORT| %.3g > 2e-5 * %.3g" % (case.label, err, scale))
    checks.finish()


if __name__ == "__main__":
    main()
