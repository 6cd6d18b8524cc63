"""test_index_checks.py — indices that come from a model's inputs are untrusted.

For each op whose indices can come from a run-time input (Gather, GatherElements,
GatherND, ScatterElements, ScatterND; also an index computed at run time from an
input, and Gather on a BERT-style embedding table) a small ONNX model is built with
onnx.helper, compiled with `kiln compile` and run with `kiln run` on .npy inputs:

- valid indices, negative ones included: every output matches onnxruntime exactly
  (these ops move values, so float outputs are compared bit for bit);
- an index one past the end (n), one before the start (-n - 1) and 10^12 (the
  int32 maximum for int32 indices): `kiln run`
  exits 1 with one line on stderr naming the ONNX node, the bad index and the valid
  range [-n, n - 1], with no sanitizer report (in the ASan build) — onnxruntime
  rejects the same inputs too, which the test confirms, so the reference agrees
  they are invalid.

OneHot is different: ONNX defines out-of-range indices (the row is all off_value),
so there the test compares with onnxruntime on out-of-range indices instead.

Constant indices are checked at compile time: a model with a constant
out-of-range Gather index fails `kiln compile` with one line naming the node.

Closing line: test_index_checks: N passed, M failed.
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

BIG = 10 ** 12


def model(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32


def cases():
    """(name, node name, model, {input: valid array}, index input, axis size n, bad fill)."""
    rng = np.random.default_rng(7)
    out = []
    table = rng.standard_normal((10, 4)).astype(np.float32)
    m = model([helper.make_node("Gather", ["table", "ids"], ["y"], name="embed", axis=0)],
              [vi("ids", I64, [3])], [vi("y", F, [3, 4])], [numpy_helper.from_array(table, "table")])
    out.append(("gather", "embed", m, {"ids": np.array([0, 9, -10], np.int64)}, "ids", 10))

    m = model([helper.make_node("Gather", ["x", "ids"], ["y"], name="pick_cols", axis=1)],
              [vi("x", F, [2, 6]), vi("ids", I32, [2, 2])], [vi("y", F, [2, 2, 2])])
    out.append(("gather_axis1_int32", "pick_cols", m,
                {"x": rng.standard_normal((2, 6)).astype(np.float32), "ids": np.array([[0, 5], [-1, -6]], np.int32)},
                "ids", 6))

    m = model([helper.make_node("GatherElements", ["x", "ids"], ["y"], name="ge", axis=1)],
              [vi("x", F, [3, 5]), vi("ids", I64, [3, 2])], [vi("y", F, [3, 2])])
    out.append(("gather_elements", "ge", m,
                {"x": rng.standard_normal((3, 5)).astype(np.float32),
                 "ids": np.array([[0, 4], [-5, 2], [1, -1]], np.int64)}, "ids", 5))

    m = model([helper.make_node("GatherND", ["x", "ids"], ["y"], name="gnd")],
              [vi("x", F, [4, 7, 3]), vi("ids", I64, [2, 2])], [vi("y", F, [2, 3])])
    # the second component indexes the axis of size 7; the bad value goes there
    out.append(("gather_nd", "gnd", m,
                {"x": rng.standard_normal((4, 7, 3)).astype(np.float32), "ids": np.array([[0, 6], [3, -7]], np.int64)},
                "ids", 7))

    m = model([helper.make_node("ScatterElements", ["x", "ids", "u"], ["y"], name="se", axis=0)],
              [vi("x", F, [6, 2]), vi("ids", I64, [2, 2]), vi("u", F, [2, 2])], [vi("y", F, [6, 2])])
    out.append(("scatter_elements", "se", m,
                {"x": rng.standard_normal((6, 2)).astype(np.float32), "ids": np.array([[0, 5], [-1, 2]], np.int64),
                 "u": rng.standard_normal((2, 2)).astype(np.float32)}, "ids", 6))

    m = model([helper.make_node("ScatterND", ["x", "ids", "u"], ["y"], name="snd")],
              [vi("x", F, [8]), vi("ids", I64, [2, 1]), vi("u", F, [2])], [vi("y", F, [8])])
    out.append(("scatter_nd", "snd", m,
                {"x": rng.standard_normal(8).astype(np.float32), "ids": np.array([[7], [-8]], np.int64),
                 "u": rng.standard_normal(2).astype(np.float32)}, "ids", 8))

    # indices computed from an input inside the graph (Add, then Gather): still checked
    m = model([helper.make_node("Add", ["ids", "one"], ["ids1"], name="shift"),
               helper.make_node("Gather", ["table", "ids1"], ["y"], name="embed_shifted", axis=0),
               helper.make_node("Relu", ["y"], ["z"], name="relu")],
              [vi("ids", I64, [4])], [vi("z", F, [4, 4])],
              [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array(1, np.int64), "one")])
    out.append(("gather_computed", "embed_shifted", m, {"ids": np.array([0, 8, -11, 3], np.int64)}, "ids1", 10))
    return out


def write_inputs(d, arrays):
    args = []
    for name, a in arrays.items():
        p = os.path.join(d, name + ".npy")
        np.save(p, a)
        args += ["--input", "%s=%s" % (name, p)]
    return args


def ort_run(path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 4  # its refusals are expected here; the test prints its own lines
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def main():
    args = util.parse_args(__doc__)
    c = util.Checks("test_index_checks")
    work = tempfile.mkdtemp(prefix="kiln-index-")
    for name, node, m, valid, ix_name, n in cases():
        if args.filter and args.filter not in name:
            continue
        d = os.path.join(work, name)
        os.makedirs(d)
        mp, bp = os.path.join(d, "m.onnx"), os.path.join(d, "m.kiln")
        onnx.save(m, mp)
        r = util.run_kiln(args.kiln, ["compile", mp, "-o", bp], timeout=300)
        if not c.check(r.rc == 0, "%s: compile: %s %s" % (name, r.describe(), r.err.strip()[:300])):
            continue
        # valid indices: the same values as onnxruntime
        od = os.path.join(d, "out")
        r = util.run_kiln(args.kiln, ["run", bp, "--repeat", "1", "--output-dir", od] + write_inputs(d, valid),
                          timeout=120)
        if c.check(r.rc == 0, "%s: run with valid indices: %s %s" % (name, r.describe(), r.err.strip()[:300])):
            want = ort_run(mp, valid)
            got = np.load(os.path.join(od, m.graph.output[0].name + ".npy"))
            c.check(got.shape == want[0].shape and np.array_equal(got, want[0]),
                    "%s: valid indices: kiln %s differs from onnxruntime %s" % (name, got.ravel()[:6], want[0].ravel()[:6]))
        # bad indices: one past the end, one before the start, 10^12
        src = "ids"
        shift = -1 if ix_name == "ids1" else 0  # the computed case adds 1 to its input
        big = BIG if valid[src].dtype == np.int64 else np.iinfo(valid[src].dtype).max
        for bad in (n, -n - 1, big):
            feeds = dict(valid)
            a = feeds[src].copy()
            a.flat[a.size - 1] = bad + shift
            feeds[src] = a
            r = util.run_kiln(args.kiln, ["run", bp, "--repeat", "1"] + write_inputs(d, feeds), timeout=120)
            why = util.clean_failure(r)
            c.check(why is None, "%s: index %d: want a clean failure, got %s: %s" % (name, bad, why, r.err.strip()[:300]))
            msg = r.err.strip()
            rng = "[%d, %d]" % (-n, n - 1)
            c.check("'%s'" % node in msg and str(bad) in msg and rng in msg,
                    "%s: index %d: the message must name node '%s', the index and the range %s: %r"
                    % (name, bad, node, rng, msg))
            try:
                ort_run(mp, feeds)
                ort_refuses = False
            except Exception:  # noqa: BLE001 - onnxruntime raises its own exception types
                ort_refuses = True
            c.check(ort_refuses,
                    "%s: index %d: onnxruntime accepted it, so it is no invalid input" % (name, bad))
        if args.verbose:
            print("ok %s" % name, flush=True)

    # OneHot: out-of-range indices are defined (all off_value), as onnxruntime computes them
    d = os.path.join(work, "one_hot")
    os.makedirs(d)
    m = model([helper.make_node("OneHot", ["ids", "depth", "values"], ["y"], name="oh", axis=-1)],
              [vi("ids", I64, [5])], [vi("y", F, [5, 4])],
              [numpy_helper.from_array(np.array(4, np.int64), "depth"),
               numpy_helper.from_array(np.array([0.5, 2.0], np.float32), "values")], opset=11)
    mp, bp = os.path.join(d, "m.onnx"), os.path.join(d, "m.kiln")
    onnx.save(m, mp)
    r = util.run_kiln(args.kiln, ["compile", mp, "-o", bp], timeout=300)
    if c.check(r.rc == 0, "one_hot: compile: %s %s" % (r.describe(), r.err.strip()[:300])):
        feeds = {"ids": np.array([0, 3, -4, 4, BIG], np.int64)}
        od = os.path.join(d, "out")
        r = util.run_kiln(args.kiln, ["run", bp, "--repeat", "1", "--output-dir", od] + write_inputs(d, feeds))
        if c.check(r.rc == 0, "one_hot: run: %s %s" % (r.describe(), r.err.strip()[:300])):
            got, want = np.load(os.path.join(od, "y.npy")), ort_run(mp, feeds)[0]
            c.check(np.array_equal(got, want), "one_hot: kiln %s, onnxruntime %s" % (got.tolist(), want.tolist()))

    # a constant index out of range: a compile error naming the node
    d = os.path.join(work, "const")
    os.makedirs(d)
    m = model([helper.make_node("Gather", ["x", "k"], ["y"], name="const_pick", axis=1)],
              [vi("x", F, [2, 3])], [vi("y", F, [2, 2])], [numpy_helper.from_array(np.array([1, 3], np.int64), "k")])
    mp = os.path.join(d, "m.onnx")
    onnx.save(m, mp)
    r = util.run_kiln(args.kiln, ["compile", mp, "-o", os.path.join(d, "m.kiln")], timeout=120)
    why = util.clean_failure(r)
    c.check(why is None and "'const_pick'" in r.err and "3" in r.err and "[-3, 2]" in r.err,
            "constant index: want one line naming 'const_pick', 3 and [-3, 2]; got %s: %r" % (why, r.err[:300]))
    c.finish()


if __name__ == "__main__":
    main()
