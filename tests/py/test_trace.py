"""test_trace.py — `kiln run --trace FILE.json`: a Chrome trace of the profiled runs.

On a small classifier (Conv → Relu → GlobalAveragePool → Flatten → Gemm → Softmax,
a few kernels) compiled here:
- `--trace` implies `--profile` (the per-kernel table is printed) and the file is one
  JSON array of complete events in ONNX Runtime's profiler format: every event has
  exactly cat, pid, tid, dur, ts, ph ("X"), name and args, times non-negative numbers;
- with --repeat 3, three "Session" slices named model_run and one "Node" slice per
  kernel call of each run: 3 x the kernels of the bundle's plan.json, in plan order
  within each run, named after the plan's kernels, args kernel (the plan index), run,
  flops (the plan's) and bytes (the plan's buffers: inputs and outputs by their
  manifest shape, params and arena ranges by their bytes); each run's calls lie inside
  its model_run slice, one after another; runs follow each other;
- --repeat 1 gives one run; --help says --trace implies --profile; an unwritable
  trace path fails with one line naming it (exit 1); --trace without a value is a
  usage error (exit 2).

Closing line: test_trace: N passed, M failed.
"""
import json
import os
import shutil
import sys
import tarfile
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

KEYS = {"cat", "pid", "tid", "dur", "ts", "ph", "name", "args"}
DTYPE_BYTES = {"float32": 4, "float16": 2, "int64": 8, "int32": 4, "uint8": 1, "int8": 1, "bool": 1, "float64": 8}
EPS_US = 0.002  # ts and dur are microseconds with ns resolution, printed as doubles


def model(path):
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array((rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((10, 16)).astype(np.float32), "g"),
             numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "gb")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "g", "gb"], ["l"], transB=1),
             helper.make_node("Softmax", ["l"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "traced", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 24, 24])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def plan_of(bundle):
    """[(name, flops, bytes)] per kernel of the plan."""
    with tarfile.open(bundle) as t:
        manifest = json.load(t.extractfile("manifest.json"))
        plan = json.load(t.extractfile("plan.json"))

    def tensor_bytes(info):
        return int(np.prod(info["shape"], dtype=np.int64)) * DTYPE_BYTES[info["dtype"]]
    out = []
    for k in plan["kernels"]:
        b = 0
        for a in k["args"]:
            if a["kind"] in ("input", "output"):
                b += tensor_bytes(manifest[a["kind"] + "s"][a["index"]])
            else:
                b += a["bytes"]
        out.append((k["name"], k["flops"], b))
    return out


def check_trace(c, path, kernels, runs):
    try:
        with open(path, encoding="utf-8") as f:
            events = json.load(f)
    except (OSError, ValueError) as e:
        c.check(False, "%s is JSON: %s" % (path, e))
        return
    if not c.check(isinstance(events, list), "the trace is a JSON array"):
        return
    bad = [e for e in events if not isinstance(e, dict) or set(e) != KEYS or e["ph"] != "X" or
           not all(isinstance(e[k], (int, float)) and e[k] >= 0 for k in ("ts", "dur")) or
           not isinstance(e["pid"], int) or not isinstance(e["tid"], int) or not isinstance(e["args"], dict) or
           not isinstance(e["name"], str)]
    c.check(not bad, "every event has exactly %s, ph X, ts/dur >= 0: %s" % (sorted(KEYS), bad[:2]))
    if bad:
        return
    sessions = [e for e in events if e["cat"] == "Session"]
    nodes = [e for e in events if e["cat"] == "Node"]
    c.check(len(sessions) + len(nodes) == len(events), "events are Session or Node slices")
    c.check(len(sessions) == runs and all(e["name"] == "model_run" for e in sessions) and
            [e["args"].get("run") for e in sessions] == list(range(runs)),
            "%d model_run slices, runs 0..%d: %s" % (runs, runs - 1, [(e["name"], e["args"]) for e in sessions]))
    c.check(len(nodes) == runs * len(kernels),
            "one Node slice per kernel call: %d, want %d runs x %d kernels" % (len(nodes), runs, len(kernels)))
    for r, s in enumerate(sessions):
        mine = [e for e in nodes if e["args"].get("run") == r]
        got = [(e["name"], e["args"].get("kernel"), e["args"].get("flops"), e["args"].get("bytes")) for e in mine]
        want = [(n, i, f, b) for i, (n, f, b) in enumerate(kernels)]
        c.check(got == want, "run %d: the calls in plan order with kernel, flops, bytes: %s, want %s" % (r, got, want))
        inside = all(s["ts"] - EPS_US <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + EPS_US for e in mine)
        seq = all(a["ts"] + a["dur"] <= b["ts"] + EPS_US for a, b in zip(mine, mine[1:]))
        c.check(inside and seq, "run %d: its calls lie inside its model_run slice, one after another" % r)
        if r:
            prev = sessions[r - 1]
            c.check(prev["ts"] + prev["dur"] <= s["ts"] + EPS_US, "run %d starts after run %d ends" % (r, r - 1))
    c.check(len({(e["pid"], e["tid"]) for e in events}) == 1, "one pid/tid throughout")


def main():
    args = util.parse_args(__doc__)
    c = util.Checks("test_trace")
    tmp = tempfile.mkdtemp(prefix="kiln-trace-")
    try:
        onnx_path, bundle = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "m.kiln")
        model(onnx_path)
        r = util.run_kiln(args.kiln, ["compile", onnx_path, "-o", bundle], timeout=300)
        if c.check(r.rc == 0, "compile: %s %s" % (r.describe(), r.err[-500:])):
            kernels = plan_of(bundle)
            c.check(len(kernels) >= 2, "the plan has several kernels: %s" % kernels)
            for runs in (3, 1):
                trace = os.path.join(tmp, "trace%d.json" % runs)
                r = util.run_kiln(args.kiln, ["run", bundle, "--trace", trace, "--repeat", str(runs)], timeout=120)
                ok = c.check(r.rc == 0 and not r.sanitizer_report(), "run --trace --repeat %d: %s %s"
                             % (runs, r.describe(), r.err[-500:]))
                c.check("ms/call" in r.out and "%peak" in r.out, "--trace implies --profile: the per-kernel table")
                c.check("trace: %s (%d runs, %d kernel calls each)" % (trace, runs, len(kernels)) in r.out,
                        "run says where the trace went: %r" % r.out[-300:])
                if ok:
                    check_trace(c, trace, kernels, runs)
            bad = os.path.join(tmp, "no-such-dir", "t.json")
            r = util.run_kiln(args.kiln, ["run", bundle, "--trace", bad, "--repeat", "1"])
            why = util.clean_failure(r)
            c.check(r.rc == 1 and why is None and bad in r.err,
                    "an unwritable trace: one line naming it, exit 1: %s %r" % (why, r.err))
            r = util.run_kiln(args.kiln, ["run", bundle, "--trace"])
            c.check(r.rc == 2, "--trace without a value: exit 2, got %s" % r.describe())
        r = util.run_kiln(args.kiln, ["run", "--help"])
        c.check(r.rc == 0 and "--trace FILE.json" in r.out and "implies --profile" in r.out,
                "run --help lists --trace and says it implies --profile")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
