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
  - the plan: the branches' kernels carry "when", the bundle is format version 3;
  - a Loop whose trip count M is an input (built for --max-trips 6 iterations: M of
    0, 1, 3, 6 and -2 against ONNX Runtime, M = 7 fails the run naming the Loop), and
    a while loop (no M, its condition computed at run time) that stops after 0, 1
    and 6 iterations, and one that would need more than the default 64.

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


def loop_runtime_m(path, n=16):
    """y = x, then M times: y = tanh(y @ W) + x (M an input); also the iteration count"""
    w = (RNG.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "W"], ["p"]), helper.make_node("Tanh", ["p"], ["t"]),
         helper.make_node("Add", ["t", "x"], ["y_out"]), helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["k_in", "one"], ["k_out"])],
        "body", [helper.make_tensor_value_info("i", T.INT64, []), helper.make_tensor_value_info("c_in", T.BOOL, []),
                 helper.make_tensor_value_info("y_in", T.FLOAT, [2, n]),
                 helper.make_tensor_value_info("k_in", T.INT64, [])],
        [helper.make_tensor_value_info("c_out", T.BOOL, []), helper.make_tensor_value_info("y_out", T.FLOAT, [2, n]),
         helper.make_tensor_value_info("k_out", T.INT64, [])], [const("W", w), const("one", np.int64(1))])
    nodes = [helper.make_node("Loop", ["M", "", "x", "k0"], ["y", "k"], name="Loop_M", body=body)]
    save(path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [2, n]), helper.make_tensor_value_info("M", T.INT64, [])],
         [helper.make_tensor_value_info("y", T.FLOAT, [2, n]), helper.make_tensor_value_info("k", T.INT64, [])],
         [const("k0", np.int64(0))])


def loop_while(path, n=8):
    """while sum(y) < limit: y = y * 2 (no trip count; the condition computed at run time)"""
    body = helper.make_graph(
        [helper.make_node("Mul", ["y_in", "two"], ["y_out"]), helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["c_out"])],
        "body", [helper.make_tensor_value_info("i", T.INT64, []), helper.make_tensor_value_info("c_in", T.BOOL, []),
                 helper.make_tensor_value_info("y_in", T.FLOAT, [n])],
        [helper.make_tensor_value_info("c_out", T.BOOL, []), helper.make_tensor_value_info("y_out", T.FLOAT, [n])],
        [const("two", np.float32(2))])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s0"], keepdims=0), helper.make_node("Less", ["s0", "limit"], ["c0"]),
             helper.make_node("Loop", ["", "c0", "x"], ["y"], name="Loop_while", body=body)]
    save(path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [n]), helper.make_tensor_value_info("limit", T.FLOAT, [])],
         [helper.make_tensor_value_info("y", T.FLOAT, [n])])


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

    def agree(self, name, path, bundle, feeds, tag, outputs=("y",)):
        r, out = self.run(name, bundle, feeds, tag)
        if not self.checks.check(r.rc == 0, "%s (%s): run %s: %s" % (name, tag, r.describe(), r.err.strip())):
            return
        wants = test_e2e.reference(path, feeds)[0]
        for o in outputs:
            ok, why, _, _ = test_e2e.compare(np.load(os.path.join(out, o + ".npy")), wants[o], 1e-4, 1e-5)
            self.checks.check(ok, "%s (%s) output %s matches ONNX Runtime: %s" % (name, tag, o, why))


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

        path = os.path.join(d, "loop_m.onnx")
        loop_runtime_m(path)
        bundle, r = c.compile("loop_m", path, ["--max-trips", "6"])
        if bundle:
            x = RNG.standard_normal((2, 16)).astype(np.float32)
            for m in (0, 1, 3, 6, -2):
                c.agree("loop_m", path, bundle, {"x": x, "M": np.array(m, np.int64)}, "M%d" % m, ("y", "k"))
            r, _ = c.run("loop_m", bundle, {"x": x, "M": np.array(7, np.int64)}, "M7")
            checks.check(r.rc == 1 and "Loop 'Loop_M' needs more than the 6 iterations" in r.err and "--max-trips" in r.err
                         and not util.clean_failure(r),
                         "a trip count past --max-trips fails the run, naming the Loop: %s %r" % (r.describe(), r.err))
            plan, _ = plan_of(bundle)
            guarded = sum(1 for k in plan["kernels"] if "when" in k)
            checks.check(guarded >= 6, "each iteration's kernels run under its condition: %d conditional kernels" % guarded)

        path = os.path.join(d, "loop_while.onnx")
        loop_while(path)
        bundle, r = c.compile("loop_while", path)
        if bundle:
            x = np.abs(RNG.standard_normal(8)).astype(np.float32) + 0.5
            s = float(x.sum())
            for limit, tag in ((s * 0.5, "no iteration"), (s * 1.5, "one"), (s * 40, "six"), (1e30, "past the bound")):
                feeds = {"x": x, "limit": np.array(limit, np.float32)}
                if tag != "past the bound":
                    c.agree("loop_while", path, bundle, feeds, tag)
                    continue
                r, _ = c.run("loop_while", bundle, feeds, "past")
                checks.check(r.rc == 1 and "Loop 'Loop_while' needs more than the 64 iterations" in r.err and
                             not util.clean_failure(r),
                             "a while loop past the default bound fails the run: %s %r" % (r.describe(), r.err))
    checks.finish()


if __name__ == "__main__":
    main()
