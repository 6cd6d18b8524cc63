"""test_resize_nearest.py — nearest-neighbour Resize over random sizes, every coordinate
transformation mode but tf_crop_and_resize and every nearest_mode, compiled and run by
kiln and compared with the onnx package's reference implementation (ReferenceEvaluator):
outputs must be identical (a nearest resize copies input values).

kiln writes a nearest resize's source index as integer arithmetic, clamp(floor((p·k + q) / d)),
when that form gives the double-precision formula's index for every output index k — found
at compile time (te/compute_resize.c, nearest_affine) — and keeps the double formula
otherwise. The sizes here are integer up- and down-scales and arbitrary ratios, so both
paths run; the test also checks that the integer path is taken for the integer scales
(no float64 left in the loop IR: x86 converts int64 <-> double lanes only with AVX-512DQ)
and that the double formula still serves ratios whose reduced denominators are large
primes (197/7, 257/5, ...).

Options: --kiln PATH. Closing line: test_resize_nearest: N passed, M failed.
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

COORDS = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
CASES = 60
PRIME = [(7, 13, 197, 211), (3, 5, 131, 257), (29, 31, 149, 139)]  # h, w, oh, ow


def main():
    from onnx.reference import ReferenceEvaluator
    args = util.parse_args(__doc__)
    checks = util.Checks("test_resize_nearest")
    rng = np.random.default_rng(5)
    integer_path = {"integer scale": [0, 0], "other ratio": [0, 0]}  # [cases, cases on the integer path]
    with tempfile.TemporaryDirectory(prefix="kiln_resize_") as d:
        for t in range(CASES + len(PRIME)):
            h, w = int(rng.integers(1, 30)), int(rng.integers(1, 30))
            if t >= CASES:  # ratios whose reduced denominator is too large for the integer form
                h, w, oh, ow = PRIME[t - CASES]
            elif t % 3 == 0:
                oh, ow = h * int(rng.integers(1, 5)), w * int(rng.integers(1, 5))
            elif t % 3 == 1:
                oh, ow = int(rng.integers(1, 60)), int(rng.integers(1, 60))
            else:
                oh, ow = max(1, h // int(rng.integers(1, 4))), max(1, w // int(rng.integers(1, 4)))
            cm, nm = COORDS[t % 5], NEAREST[(t // 5) % 4]
            label = "%dx%d -> %dx%d %s %s" % (h, w, oh, ow, cm, nm)
            x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
            node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                                    coordinate_transformation_mode=cm, nearest_mode=nm)
            g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, h, w])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  [numpy_helper.from_array(np.array([1, 3, oh, ow], np.int64), "sizes")])
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
            m.ir_version = 9
            path = os.path.join(d, "m%d.onnx" % t)
            onnx.save(m, path)
            want = ReferenceEvaluator(m).run(None, {"x": x})[0]
            ys = util.compile_and_run(args.kiln, checks, label, path, {"x": x}, d, "m%d" % t)
            if ys is None:
                continue
            got = ys["y"]
            checks.check(got.shape == want.shape and np.array_equal(got, want),
                         "%s: differs from the onnx reference (%s)" % (
                             label, "shape %s vs %s" % (got.shape, want.shape) if got.shape != want.shape else
                             "%d of %d elements" % (int(np.count_nonzero(got != want)), want.size)))
            low = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "l.kiln"), "--dump-after", "lower"],
                                timeout=120)
            kind = "integer scale" if (oh % h == 0 and ow % w == 0) else "other ratio"
            integer_path[kind][0] += 1
            integer_path[kind][1] += low.rc == 0 and "float64" not in low.out
            if args.verbose:
                print("%s: %s" % (label, "integer" if low.rc == 0 and "float64" not in low.out else "double"))
    for kind, (n, k) in integer_path.items():
        print("%s: %d of %d cases with integer source indices" % (kind, k, n))
    n, k = integer_path["integer scale"]
    checks.check(n > 0 and k == n, "integer scales: %d of %d cases on the integer path" % (k, n))
    n, k = integer_path["other ratio"]
    checks.check(k < n, "every other ratio took the integer path too (%d of %d): the double formula went untested" % (k, n))
    checks.finish()


if __name__ == "__main__":
    main()
