"""test_control_flow.py — If with a condition computed at run time runs only the
branch it takes (importer/ops_control.c guards each branch's nodes; the plan's
"when" lists, runtime/plan.c), and a branch that cannot be built for the bound
shapes compiles into a run-time error naming the If instead of failing the compile.

Models (built here with onnx.helper), each compiled by kiln and run both ways,
compared with ONNX Runtime (rtol 1e-4, atol 1e-5) on the side that is valid:
  - both branches valid (matmul + relu / matmul + tanh), cond from the input's sum;
  - the else branch ill-shaped for the bound width (a matmul whose inner
    dimensions differ; the model's width is symbolic, one size per branch): compiles
    with a note, runs when then is taken, and fails cleanly naming the If when
    else is taken;
  - nested Ifs (an If inside the then branch, its cond from a second input): all
    four combinations;
  - a guarded gather: `ids < n ? table[ids] : 0`, run with an index out of range,
    which the untaken branch must not check (ONNX Runtime does not run it either);
  - the plan: the branches' kernels carry "when", the bundle is format version 3.

Options: --kiln PATH. Closing line: test_control_flow: N passed, M failed.
"""
import argparse
import json
import os
import sys
import tarfile
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402
import test_e2e  # noqa: E402

RNG = np.random.default_rng(7)


def const(name, arr):
    return nh.from_array(np.asarray(arr), name)


def branch(name, nodes, out, inits=()):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, T.FLOAT, None)], list(inits))


def save(path, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def mm_branch(name, w, act, out):
    return branch(name, [helper.make_node("MatMul", ["x", name + "_W"], [name + "_t"]),
                         helper.make_node(act, [name + "_t"], [out])], out, [const(name + "_W", w)])


def positive_cond(x_name, cond):
    """cond = sum(x) > 0"""
    return [helper.make_node("ReduceSum", [x_name], [cond + "_s"], keepdims=0),
            helper.make_node("Greater", [cond + "_s", "zero"], [cond])]


def both_valid(path, n=64):
    w1 = RNG.standard_normal((n, n)).astype(np.float32)
    w2 = RNG.standard_normal((n, n)).astype(np.float32)
    nodes = positive_cond("x", "c") + [helper.make_node(
        "If", ["c"], ["y"], name="If_0", then_branch=mm_branch("then", w1, "Relu", "ty"),
        else_branch=mm_branch("else", w2, "Tanh", "ey"))]
    save(path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [8, n])],
         [helper.make_tensor_value_info("y", T.FLOAT, [8, n])], [const("zero", np.float32(0))])


def bad_else(path, n=64):
    w1 = RNG.standard_normal((n, n)).astype(np.float32)
    w2 = RNG.standard_normal((n // 2, n)).astype(np.float32)  # inner dimensions n and n/2 differ
    els = branch("else", [helper.make_node("MatMul", ["x", "else_W"], ["ey"], name="bad_mm")], "ey",
                 [const("else_W", w2)])
    nodes = positive_cond("x", "c") + [helper.make_node(
        "If", ["c"], ["y"], name="If_0", then_branch=mm_branch("then", w1, "Relu", "ty"), else_branch=els)]
    # the width is symbolic, as in a model that serves two input sizes: each branch
    # fits one, and kiln binds it (--input-shape x:8x64) where ONNX Runtime checks at run time
    save(path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [8, "width"])],
         [helper.make_tensor_value_info("y", T.FLOAT, [8, None])], [const("zero", np.float32(0))])


def nested(path, n=32):
    w = [RNG.standard_normal((n, n)).astype(np.float32) for _ in range(3)]
    inner = helper.make_node("If", ["c2"], ["iy"], name="If_inner",
                             then_branch=mm_branch("it", w[0], "Relu", "ity"),
                             else_branch=mm_branch("ie", w[1], "Sigmoid", "iey"))
    then = branch("then", [inner, helper.make_node("Neg", ["iy"], ["ty"])], "ty")
    nodes = positive_cond("x", "c") + positive_cond("z", "c2") + [helper.make_node(
        "If", ["c"], ["y"], name="If_outer", then_branch=then, else_branch=mm_branch("oe", w[2], "Tanh", "ey"))]
    save(path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [4, n]),
                       helper.make_tensor_value_info("z", T.FLOAT, [3])],
         [helper.make_tensor_value_info("y", T.FLOAT, [4, n])], [const("zero", np.float32(0))])


def guarded_gather(path, rows=10, n=16):
    table = RNG.standard_normal((rows, n)).astype(np.float32)
    then = branch("then", [helper.make_node("Gather", ["table", "ids"], ["ty"], axis=0)], "ty", [const("table", table)])
    els = branch("else", [helper.make_node("ConstantOfShape", ["shape"], ["ey"],
                                           value=helper.make_tensor("v", T.FLOAT, [1], [0.0]))], "ey",
                 [const("shape", np.array([n], np.int64))])
    nodes = [helper.make_node("Less", ["ids", "rows"], ["lt"]),
             helper.make_node("GreaterOrEqual", ["ids", "z64"], ["ge"]),
             helper.make_node("And", ["lt", "ge"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="If_gather", then_branch=then, else_branch=els)]
    save(path, nodes, [helper.make_tensor_value_info("ids", T.INT64, [])],
         [helper.make_tensor_value_info("y", T.FLOAT, [n])],
         [const("rows", np.int64(rows)), const("z64", np.int64(0))])


class Case:
    def __init__(self, args, checks, d):
        self.args, self.checks, self.d = args, checks, d

    def compile(self, name, path, extra=()):
        bundle = os.path.join(self.d, name + ".kiln")
        r = util.run_kiln(self.args.kiln, ["compile", path, "-o", bundle] + list(extra))
        ok = self.checks.check(r.rc == 0, "%s: compile %s: %s" % (name, r.describe(), r.err.strip()))
        return (bundle if ok else None), r

    def run(self, name, bundle, feeds, tag):
        out = os.path.join(self.d, "%s_%s" % (name, tag))
        os.makedirs(out, exist_ok=True)
        argv = []
        for k, v in feeds.items():
            f = os.path.join(out, "in_%s.npy" % k)
            np.save(f, v)
            argv += ["--input", "%s=%s" % (k, f)]
        r = util.run_kiln(self.args.kiln, ["run", bundle, "--output-dir", out] + argv)
        return r, out

    def agree(self, name, path, bundle, feeds, tag):
        r, out = self.run(name, bundle, feeds, tag)
        if not self.checks.check(r.rc == 0, "%s (%s): run %s: %s" % (name, tag, r.describe(), r.err.strip())):
            return
        want = test_e2e.reference(path, feeds)[0]["y"]
        ok, why, _, _ = test_e2e.compare(np.load(os.path.join(out, "y.npy")), want, 1e-4, 1e-5)
        self.checks.check(ok, "%s (%s) matches ONNX Runtime: %s" % (name, tag, why))


def plan_of(bundle):
    with tarfile.open(bundle) as t:
        return (json.load(t.extractfile("plan.json")), json.load(t.extractfile("manifest.json")))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    args = ap.parse_args()
    checks = util.Checks("test_control_flow")
    pos = np.abs(RNG.standard_normal((8, 64))).astype(np.float32) + 0.1
    with tempfile.TemporaryDirectory(prefix="kiln_cf_") as d:
        c = Case(args, checks, d)

        path = os.path.join(d, "both.onnx")
        both_valid(path)
        bundle, _ = c.compile("both", path)
        if bundle:
            c.agree("both", path, bundle, {"x": pos}, "then")
            c.agree("both", path, bundle, {"x": -pos}, "else")
            plan, manifest = plan_of(bundle)
            conditional = [k for k in plan["kernels"] if "when" in k]
            checks.check(len(conditional) == 2 and {k["when"][0]["is"] for k in conditional} == {True, False},
                         "each branch's kernel runs under its condition: %s" %
                         [(k["name"], k.get("when")) for k in plan["kernels"]])
            checks.check(manifest["format_version"] == 3, "a bundle with conditional kernels is format version 3: %s"
                         % manifest["format_version"])

        path = os.path.join(d, "bad_else.onnx")
        bad_else(path)
        bundle, r = c.compile("bad_else", path, ["--input-shape", "x:8x64"])
        checks.check("If 'If_0' else_branch" in r.err and "inner dimensions" in r.err,
                     "compiling notes the branch that cannot run and why: %r" % r.err)
        if bundle:
            c.agree("bad_else", path, bundle, {"x": pos}, "then")
            r, _ = c.run("bad_else", bundle, {"x": -pos}, "else")
            checks.check(r.rc == 1 and "If 'If_0' else_branch was taken" in r.err and "inner dimensions" in r.err
                         and not util.clean_failure(r),
                         "taking the branch that cannot run fails the run, naming it: %s %r" % (r.describe(), r.err))

        path = os.path.join(d, "nested.onnx")
        nested(path)
        bundle, _ = c.compile("nested", path)
        if bundle:
            x = np.abs(RNG.standard_normal((4, 32))).astype(np.float32) + 0.1
            z = np.ones(3, np.float32)
            for sx in (1, -1):
                for sz in (1, -1):
                    c.agree("nested", path, bundle, {"x": sx * x, "z": sz * z}, "x%+d_z%+d" % (sx, sz))
            plan, _ = plan_of(bundle)
            depth = max((len(k.get("when", [])) for k in plan["kernels"]), default=0)
            checks.check(depth == 2, "the inner If's kernels run under both conditions: %d" % depth)

        path = os.path.join(d, "gather.onnx")
        guarded_gather(path)
        bundle, _ = c.compile("gather", path)
        if bundle:
            for ids in (3, 9, 10, 1000, -1):  # 10, 1000 and -1 only reach the untaken branch
                c.agree("gather", path, bundle, {"ids": np.array(ids, np.int64)}, "ids%d" % ids)
    checks.finish()


if __name__ == "__main__":
    main()
