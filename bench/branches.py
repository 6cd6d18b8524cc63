#!/usr/bin/env python3
"""bench/branches.py — an If runs in the time of the branch it takes (issue 18).

Usage: .venv/bin/python bench/branches.py --kiln build/kiln [--threads 2] [--repeat 30] [--warmup 3]
                                          [--out bench/results] [--python PATH]

Three models, written here with onnx.helper (x: float32[256, 512]):
  if.onnx      cond = sum(x) > -1e30 (computed at run time, always true) chooses between
               two branches of equal work: four 512x512 matmuls with relu (then) or tanh (else)
  taken.onnx   the then branch alone: what the If should cost
  both.onnx    both branches computed and a where selecting (what kiln did before it ran
               only the taken branch; ONNX Runtime's cost of the If is compared too)
Each is timed with `kiln bench MODEL --compare onnxruntime --json` (kiln and ONNX Runtime
alternating on the same inputs and thread count, medians), and the script prints and writes
OUT/branches.md and OUT/branches.json: kiln's and ONNX Runtime's median for each model and
kiln's if / taken and if / both ratios (an If running only its taken branch: if / taken ≈ 1,
if / both ≈ 0.5).
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as bench_run  # noqa: E402  (bench_one, machine)

ROWS, N, DEPTH = 256, 512, 4


def chain(prefix, act, x, out, rng):
    nodes, inits, cur = [], [], x
    for i in range(DEPTH):
        w = "%s_W%d" % (prefix, i)
        inits.append(nh.from_array((rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32), w))
        t, y = "%s_t%d" % (prefix, i), (out if i == DEPTH - 1 else "%s_y%d" % (prefix, i))
        nodes += [helper.make_node("MatMul", [cur, w], [t]), helper.make_node(act, [t], [y])]
        cur = y
    return nodes, inits


def save(path, nodes, inits):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [ROWS, N])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [ROWS, N])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def models(d):
    cond = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Greater", ["s", "low"], ["c"])]
    low = nh.from_array(np.array(-1e30, np.float32), "low")
    tn, ti = chain("then", "Relu", "x", "ty", np.random.default_rng(1))
    en, ei = chain("else", "Tanh", "x", "ey", np.random.default_rng(2))
    out = {}
    then = helper.make_graph(tn, "then", [], [helper.make_tensor_value_info("ty", T.FLOAT, None)], ti)
    els = helper.make_graph(en, "else", [], [helper.make_tensor_value_info("ey", T.FLOAT, None)], ei)
    out["if"] = os.path.join(d, "if.onnx")
    save(out["if"], cond + [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=els)], [low])
    out["taken"] = os.path.join(d, "taken.onnx")
    tn2, ti2 = chain("then", "Relu", "x", "y", np.random.default_rng(1))
    save(out["taken"], tn2, ti2)
    out["both"] = os.path.join(d, "both.onnx")
    save(out["both"], cond + tn + en + [helper.make_node("Where", ["c", "ty", "ey"], ["y"])], [low] + ti + ei)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile-runs", type=int, default=0)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="kiln_branches_") as d:
        for name, path in models(d).items():
            results[name] = bench_run.bench_one(args, path)
            if "error" in results[name]:
                print("%s: failed: %s" % (name, results[name]["error"]))
                return 1
    k = {n: r["kiln_ms_median"] for n, r in results.items()}
    o = {n: r["ort_ms_median"] for n, r in results.items()}
    cpu = bench_run.machine()["cpu"]
    lines = ["# An If runs its taken branch only", "",
             "%s; %d threads, medians of %d runs (kiln and ONNX Runtime alternating); x: float32[%d, %d], "
             "each branch %d matmuls of %dx%d." % (cpu, args.threads, args.repeat, ROWS, N, DEPTH, N, N), "",
             "| model | kiln ms | ORT ms | kiln / ORT |", "|---|---:|---:|---:|"]
    for n in ("if", "taken", "both"):
        lines.append("| %s | %.3f | %.3f | %.2f |" % (n, k[n], o[n], k[n] / o[n]))
    lines += ["", "kiln: if / taken = %.2f, if / both = %.2f" % (k["if"] / k["taken"], k["if"] / k["both"])]
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "branches.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "branches.json"), "w") as f:
        json.dump({"cpu": cpu, "threads": args.threads, "repeat": args.repeat, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
