"""test_depthwise.py — random depthwise convolutions against a float64 numpy reference.

A depthwise conv's default schedule depends on the target: on x86 AVX2 (masked loads,
16 vector registers) its taps read the input through the bounds test (a border pixel's
taps are masked loads, no padded copy) in tiles of about six accumulators with a ragged
last tile; elsewhere each tile copies its padded window (schedule/sched_conv.c). Random
channel counts (whole blocks and padded ones), sizes, kernels 3/5/7, strides 1 and 2,
dilations 1 and 2, asymmetric padding, with bias and ReLU; |diff| <= 1e-4 + 1e-4 |want|.
On a CPU with AVX2 and no AVX-512 the test also checks that the float convs on blocked
channels took the no-copy path (no padded window allocated in their loop IR). Three
stride-2 convs on 116 and 58 channels run with a padded window per tile (the knob
pad_tile=1), checked against the reference and that each window holds only its tile's
channels.

Options: --kiln PATH. Closing line: test_depthwise: N passed, M failed.
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

CASES = 40


def reference(x, w, b, stride, dil, pads):
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    span = (k - 1) * dil + 1
    oh = (xp.shape[2] - span) // stride + 1
    ow = (xp.shape[3] - span) // stride + 1
    y = np.zeros((n, c, oh, ow))
    for kh in range(k):
        for kw in range(k):
            r0, c0 = kh * dil, kw * dil
            win = xp[:, :, r0:r0 + (oh - 1) * stride + 1:stride, c0:c0 + (ow - 1) * stride + 1:stride]
            y += win * w[:, 0, kh, kw].astype(np.float64)[None, :, None, None]
    return np.maximum(y + b.astype(np.float64)[None, :, None, None], 0)


def dw_case(rng, path, c, h, w, k, stride, dil, pads):
    """A random depthwise conv + bias + Relu saved as an ONNX model at path: (its input, the
    float64 reference output)."""
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=c, pads=pads, strides=[stride, stride],
                          dilations=[dil, dil]),
         helper.make_node("Relu", ["c"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return x, reference(x, wt, b, stride, dil, pads)


def close(got, want):
    """|diff| <= 1e-4 + 1e-4 |want| everywhere, shapes equal."""
    return got.shape == want.shape and float((np.abs(got - want) - 1e-4 * np.abs(want)).max()) <= 1e-4


def per_tile_windows(kiln, checks, rng, d):
    """Stride-2 depthwise convs whose channels fill no half vector (116, 58: plain NCHW on
    x86, vectorized along the rows, a few channels per tile) compiled with a padded window
    per tile (`--knobs conv:pad_tile=1`, a point of the tuner's space): against the
    reference, and (where the template took the rows) each tile's window holds that tile's
    channels, not all of them (the group of a one-block group is the block itself in the
    bound inference: 116 channels at 28x28 once copied all 116 per tile)."""
    for c, hw in ((116, 28), (58, 56), (116, 15)):
        label = "dw 3x3 c%d %dx%d stride 2, pad_tile 1" % (c, hw, hw)
        path = os.path.join(d, "pt%d_%d.onnx" % (c, hw))
        x, want = dw_case(rng, path, c, hw, hw, 3, 2, 1, [1, 1, 1, 1])
        knobs = ["--knobs", "conv:pad_tile=1"]
        ys = util.compile_and_run(kiln, checks, label, path, {"x": x}, d, "pt%d_%d" % (c, hw), knobs)
        if ys is not None:
            checks.check(close(ys["y"], want), "%s: off the float64 reference" % label)
        low = util.run_kiln(kiln, ["compile", path, "-o", os.path.join(d, "l.kiln"), "--dump-after", "lower"] + knobs,
                            timeout=120)
        sizes = [int(t.split("]")[0]) for t in low.out.split("allocate pad: float32[")[1:]]
        if "ramp(" in low.out and sizes:  # rows in vectors, a window per tile
            # a tile has at most 16 channels; its window 3 rows of the padded width
            checks.check(max(sizes) <= 16 * 3 * (hw + 2),
                         "%s: a tile's padded window of %d floats (all %d channels: %d)"
                         % (label, max(sizes), c, c * 3 * (hw + 2)))


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_depthwise")
    rng = np.random.default_rng(23)
    # AVX2 without AVX-512, as kiln's own CPU detection sees the host
    avx2 = (util.target_unavailable(args.kiln, "x86_64-avx2") is None and
            util.target_unavailable(args.kiln, "x86_64-avx512") is not None)
    no_copy = [0, 0]  # [blocked float cases, of them without a padded window]
    with tempfile.TemporaryDirectory(prefix="kiln_dw_") as d:
        for t in range(CASES):
            c = int(rng.choice([8, 16, 24, 32, 40, 48, 58, 64, 96, 144]))
            k = int(rng.choice([3, 3, 5, 7]))
            stride, dil = int(rng.choice([1, 2])), int(rng.choice([1, 1, 2]))
            span = (k - 1) * dil + 1
            h, w = int(rng.integers(span, 40)), int(rng.integers(span, 40))
            pads = [int(rng.integers(0, span // 2 + 1)) for _ in range(4)]
            label = "dw %dx%d c%d %dx%d stride %d dilation %d pads %s" % (k, k, c, h, w, stride, dil, pads)
            path = os.path.join(d, "m%d.onnx" % t)
            x, want = dw_case(rng, path, c, h, w, k, stride, dil, pads)
            ys = util.compile_and_run(args.kiln, checks, label, path, {"x": x}, d, "m%d" % t)
            if ys is None:
                continue
            got = ys["y"]
            checks.check(close(got, want), "%s: %s" % (label, "shape %s, want %s" % (got.shape, want.shape) if got.shape != want.shape
                                         else "off the float64 reference by %.3g" % float(np.abs(got - want).max())))
            if avx2 and c % 8 == 0 and dil == 1 and any(pads):
                low = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "l.kiln"), "--dump-after",
                                                "lower"], timeout=120)
                conv = low.out[low.out.find("conv_nchwc("):] if "conv_nchwc(" in low.out else ""
                conv = conv[:conv.find("\nkernel ")] if "\nkernel " in conv else conv
                no_copy[0] += 1
                no_copy[1] += bool(conv) and "allocate pad" not in conv
        per_tile_windows(args.kiln, checks, rng, d)
        if avx2:
            print("AVX2 without AVX-512: %d of %d padded depthwise convs on whole blocks read without a padded copy"
                  % (no_copy[1], no_copy[0]))
            checks.check(no_copy[0] > 0 and no_copy[1] == no_copy[0],
                         "AVX2: %d of %d padded blocked depthwise convs without a padded copy" % tuple(reversed(no_copy)))
    checks.finish()


if __name__ == "__main__":
    main()
