"""test_input_dims.py — graph-input dims a model leaves open: symbolic ('H'), empty
(no value) and -1 (what some exporters write for "dynamic"; ONNX Runtime reads it
so) all default to 1 unless --input-shape binds them, and kiln says which ones:
`kiln compile` / `kiln bench` print one note on stderr listing every open dim by
input and position, `kiln inspect` a line. A bound model gets no note; a dim below
-1 is refused with a clear error; the defaulted bundle runs and matches ONNX Runtime
at the shape it was compiled for.

Options: --kiln PATH. Closing line: test_input_dims: N passed, M failed.
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


def model(path, dims):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [d if d != "none" else None for d in dims])
    for i, d in enumerate(dims):
        if d == "none":
            x.type.tensor_type.shape.dim[i].Clear()
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    args = ap.parse_args()
    checks = util.Checks("test_input_dims")
    with tempfile.TemporaryDirectory(prefix="kiln_dims_") as d:
        path = os.path.join(d, "m.onnx")
        model(path, [-1, 3, "H", "none"])
        bundle = os.path.join(d, "m.kiln")
        r = util.run_kiln(args.kiln, ["compile", path, "-o", bundle])
        checks.check(r.rc == 0, "compile with open dims: %s" % r.describe())
        want = "kiln compile: note: 3 input dims left open by the model default to 1: x[0] -1, x[2] 'H', x[3] (no value)"
        checks.check(want in r.err, "compile names every open dim: %r" % r.err)
        r = util.run_kiln(args.kiln, ["inspect", path])
        checks.check("unbound input dims (1 assumed; --input-shape NAME:DIMS binds them): 3: x[0] -1, x[2] 'H', "
                     "x[3] (no value)" in r.out, "inspect lists them: %r" % r.out)
        checks.check("1x3x1x1" in r.out,
                     "inspect shows the defaulted shape 1x3x1x1")
        # the defaulted bundle runs, matching ONNX Runtime at 1x3x1x1
        x = np.array([-1.0, 0.5, 2.0], np.float32).reshape(1, 3, 1, 1)
        f = os.path.join(d, "x.npy")
        np.save(f, x)
        out = os.path.join(d, "out")
        os.makedirs(out)
        r = util.run_kiln(args.kiln, ["run", bundle, "--input", "x=" + f, "--output-dir", out])
        checks.check(r.rc == 0, "run the defaulted bundle: %s %s" % (r.describe(), r.err.strip()))
        if r.rc == 0:
            ref, _, _ = test_e2e.reference(path, {"x": x})
            checks.check(np.array_equal(np.load(os.path.join(out, "y.npy")), ref["y"]), "matches ONNX Runtime")
        # bound: no note, the bound shape
        r = util.run_kiln(args.kiln, ["compile", path, "-o", bundle, "--input-shape", "x:2x3x4x5"])
        checks.check(r.rc == 0 and "note:" not in r.err, "bound with --input-shape: no note (%r)" % r.err)
        r = util.run_kiln(args.kiln, ["run", bundle])
        checks.check(r.rc == 0 and "2x3x4x5" in r.out, "the bound bundle's output is 2x3x4x5: %r" % r.out[:300])
        # below -1: a clear error
        model(path, [-2, 3])
        r = util.run_kiln(args.kiln, ["compile", path, "-o", bundle])
        checks.check(r.rc == 1 and "input 'x' has negative dimension -2" in r.err and not util.clean_failure(r),
                     "a dim of -2 is refused: %s %r" % (r.describe(), r.err))
    checks.finish()


if __name__ == "__main__":
    main()
