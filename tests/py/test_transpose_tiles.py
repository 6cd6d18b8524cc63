"""test_transpose_tiles.py — transposes and channel-block relayouts whose output vectors
gather a row apart in the input, on every x86-64 level this machine runs.

The schedule tiles the axis that walks the input's rows by (a divisor near) the vector's
lanes (schedule/sched_movement.c), and the LLVM backend emits each tile as row loads and
a transpose in registers (targets/llvm/llvm_transpose.c): square tiles (8 x 8 on AVX2,
4 x 4 on SSE, 16 x 16 on AVX-512) and narrower ones (7 columns of 8 lanes), every element
type whose registers are its memory, and the tails of rows that are no multiple of the
lanes. Checked here:
- Transpose of random shapes and permutations that move the innermost axis, float32,
  int32, int64, float64 and uint8: identical to numpy.
- 1x1 and depthwise 3x3 convs with channel counts and widths that make the NCHW <->
  NCHW[b]c relayouts around them tile in several ways: against a float64 numpy
  reference, |diff| <= 1e-4 + 1e-4 |want| (float32 sums of up to 64 products).
- The same with channel counts no block divides (12, 20, 58, 116 in, 20 or 58 out):
  relayouts into blocks that pad the last one, out of them with a ragged last tile of
  channels, widths of 7, 13, 14 and 28.
- That the tiles are emitted as shuffles: the LLVM IR of a 64 x 56 x 56 NCHW -> NHWC
  transpose holds shufflevector and no gather; those of the relayouts around a depthwise
  conv on 58 channels (padded to whole blocks in, a ragged tile of 2 channels out) hold
  two-input shuffles.
A level the CPU lacks (x86_64-avx512 on most AMD machines) is reported skipped.

Options: --kiln PATH. Closing line: test_transpose_tiles: N passed, M failed.
"""
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
DTYPES = [(np.float32, TensorProto.FLOAT), (np.int32, TensorProto.INT32), (np.int64, TensorProto.INT64),
          (np.float64, TensorProto.DOUBLE), (np.uint8, TensorProto.UINT8)]
SIZES = [3, 4, 5, 7, 8, 9, 12, 14, 16, 17, 24, 28, 32]
TWO_INPUT_SHUFFLE = re.compile(r"shufflevector <\d+ x float> %[\w.]+, <\d+ x float> %")


def save(graph, path):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def transpose_case(rng, t, d):
    npt, pt = DTYPES[t % len(DTYPES)]
    rank = 3 + t % 2
    shape = [1] + [int(rng.choice(SIZES)) for _ in range(rank - 1)]
    while True:  # the innermost axis moves
        perm = [int(p) for p in rng.permutation(rank)]
        if perm[-1] != rank - 1:
            break
    if np.issubdtype(npt, np.integer):
        x = rng.integers(0, 200, shape).astype(npt)
    else:
        x = rng.standard_normal(shape).astype(npt)
    g = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=perm)], "g",
                          [helper.make_tensor_value_info("x", pt, shape)],
                          [helper.make_tensor_value_info("y", pt, None)])
    path = os.path.join(d, "t%d.onnx" % t)
    save(g, path)
    return "transpose %s %s perm %s" % (np.dtype(npt).name, "x".join(map(str, shape)), perm), path, {"x": x}, \
        np.transpose(x, perm), True


def conv_case(rng, t, d, padded=False):
    c = int(rng.choice([8, 16, 24, 32, 48, 64]))
    h, w = int(rng.choice([5, 7, 8, 14])), int(rng.choice([7, 8, 12, 14, 16, 28, 30]))
    dw = t % 2 == 1
    if padded:  # channels no block divides: relayouts that pad, tiles with a ragged last one
        c, w = int(rng.choice([12, 20, 58, 116])), int(rng.choice([7, 13, 14, 28]))
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    if dw:
        wt = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
        node = helper.make_node("Conv", ["x", "w"], ["y"], group=c, pads=[1, 1, 1, 1])
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
        want = np.zeros((1, c, h, w))
        for kh in range(3):
            for kw in range(3):
                want += xp[:, :, kh:kh + h, kw:kw + w] * wt[:, 0, kh, kw].astype(np.float64)[None, :, None, None]
    else:
        m = int(rng.choice([20, 58] if padded else [8, 16, 32]))
        wt = rng.standard_normal((m, c, 1, 1)).astype(np.float32)
        node = helper.make_node("Conv", ["x", "w"], ["y"])
        want = np.einsum("nchw,mc->nmhw", x.astype(np.float64), wt[:, :, 0, 0].astype(np.float64))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(wt, "w")])
    path = os.path.join(d, "c%s%d.onnx" % ("p" if padded else "", t))
    save(g, path)
    return "%s conv %dx%dx%d%s" % ("depthwise 3x3" if dw else "1x1", c, h, w, "" if dw else " -> %d" % m), path, \
        {"x": x}, want, False


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_transpose_tiles")
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory(prefix="kiln_ttiles_") as d:
        cases = [transpose_case(rng, t, d) for t in range(30)] + [conv_case(rng, t, d) for t in range(16)]
        cases += [conv_case(rng, t, d, padded=True) for t in range(12)]
        for target, (label, _, _, want, exact), ys in util.run_on_targets(args.kiln, checks, TARGETS, cases, d):
            got = ys["y"]
            if exact:
                ok = got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)
                what = "not identical to numpy"
            else:
                err = np.abs(got.astype(np.float64) - want) - 1e-4 * np.abs(want)
                ok = got.shape == want.shape and float(err.max()) <= 1e-4
                what = "off the float64 reference by %.3g" % float(np.abs(got - want).max())
            checks.check(ok, "%s [%s]: %s" % (label, target, what))
        # the tiles take the shuffle path: no gather left in the transpose's LLVM IR
        g = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        path = os.path.join(d, "nhwc.onnx")
        save(g, path)
        for target in ("x86_64", "x86_64-avx2"):
            r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "n.kiln"), "--target", target,
                                          "--dump-after", "codegen"], timeout=120)
            checks.check(r.rc == 0 and "shufflevector" in r.out and "masked.gather" not in r.out,
                         "NCHW -> NHWC on %s: %s" % (target, "compile failed" if r.rc else
                                                     "no shuffles, or a gather left, in the LLVM IR"))
        # relayouts of 58 channels around a depthwise conv on AVX2: into blocks of 8 (the
        # last one padded to 64) and out of them (a ragged last tile of 2 channels)
        g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], group=58, pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 58, 28, 28])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.ones((58, 1, 3, 3), np.float32), "w")])
        path = os.path.join(d, "dw58.onnx")
        save(g, path)
        r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "p.kiln"), "--target", "x86_64-avx2",
                                      "--dump-after", "codegen"], timeout=120)
        kernels = {}
        for chunk in r.out.split("\ndefine ")[1:]:
            m = re.search(r"@(k\d+_relayout)", chunk.split("\n", 1)[0])
            if m:  # a two-input shuffle: a transpose stage, not a splat
                kernels[m.group(1)] = kernels.get(m.group(1), 0) + len(TWO_INPUT_SHUFFLE.findall(chunk))
        checks.check(r.rc == 0 and len(kernels) == 2 and all(kernels.values()),
                     "depthwise 3x3 on 58 channels, x86_64-avx2: %s" %
                     ("compile failed" if r.rc else "relayouts without transpose shuffles: %s" % kernels))
    checks.finish()


if __name__ == "__main__":
    main()
