"""test_bench.py — `kiln bench` and `kiln run --profile` on a tiny generated model.

Usage: .venv/bin/python tests/py/test_bench.py --kiln PATH [--filter TEXT] [-v]

The model (generated here with onnx.helper) is a conv → relu → global pool → matmul →
add → softmax chain, small enough that a bench run takes a fraction of a second. The
checks are about the contract, never about speed (no time bound is asserted):

  json         `kiln bench M.onnx --compare onnxruntime --json --repeat 3`: stdout is
               exactly one JSON object with every documented key; latencies > 0 and
               min <= median <= p90 for both; ratio = kiln median / ORT median; outputs
               agree with onnxruntime; per-kernel entries are sane; peak_gflops > 0;
               the temporary folder is gone afterwards
  no-compare   without --compare every ORT field is null
  opt-level-1  at -O1 each node is a kernel named after its op, so the conv and matmul
               figures (% of peak) are present and positive
  bundle       a .kiln bundle needs --onnx for --compare (exit 2, one line); with it, works
  human        the human report has both latency lines, the ratio and the kernel table
  no-ort       a Python that cannot import onnxruntime: exit 1, one clear line
  no-python    a --python that does not exist: exit 1, one clear line
  run-profile  `kiln run --profile` prints the %peak column and the peak line

The ORT worker runs with this interpreter (sys.executable), which has onnxruntime.
Closing line: test_bench: N passed, M failed.
"""
import json
import math
import os
import stat
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402

KEYS = ["model", "threads", "repeat", "warmup", "kiln_ms_median", "kiln_ms_p90", "kiln_ms_min", "ort_ms_median",
        "ort_ms_p90", "ort_ms_min", "ratio", "max_abs_diff", "outputs", "kernels", "peak_gflops",
        "peak_gflops_per_core", "conv_pct_peak", "matmul_pct_peak", "flops"]
ORT_KEYS = ["ort_ms_median", "ort_ms_p90", "ort_ms_min", "ratio", "max_abs_diff"]


def tiny_model(path):
    rng = np.random.default_rng(5)

    def init(name, a):
        return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"], axis=1),
             helper.make_node("MatMul", ["f", "m"], ["mm"]),
             helper.make_node("Add", ["mm", "bias"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    inits = [init("w", rng.standard_normal((8, 3, 3, 3)) * 0.3), init("b", rng.uniform(-0.1, 0.1, 8)),
             init("m", rng.standard_normal((8, 10)) * 0.5), init("bias", rng.uniform(-0.1, 0.1, 10))]
    graph = helper.make_graph(nodes, "bench_tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10]),
                               helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 8, 16, 16])],
                              initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="test_bench.py")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


def parse_json(c, run, what):
    """The one JSON object on stdout, or None (a failed check)."""
    if not c.check(run.rc == 0, "%s: %s: %s" % (what, run.describe(), run.err.strip()[:300])):
        return None
    try:
        obj = json.loads(run.out)
    except ValueError as e:
        c.check(False, "%s: stdout is not one JSON object (%s): %r" % (what, e, run.out[:300]))
        return None
    c.check(isinstance(obj, dict), "%s: the JSON value is an object" % what)
    return obj if isinstance(obj, dict) else None


def leftovers(folder):
    """kiln bench's temporary folders left in folder (onnxruntime drops a .ses file of its own there)."""
    return [n for n in os.listdir(folder) if n.startswith("kiln-bench")]


def positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def check_timings(c, j, prefix, what):
    lo, med, p90 = j.get(prefix + "_min"), j.get(prefix + "_median"), j.get(prefix + "_p90")
    c.check(all(positive(v) for v in (lo, med, p90)),
            "%s: %s times are positive: %r %r %r" % (what, prefix, lo, med, p90))
    if all(positive(v) for v in (lo, med, p90)):
        c.check(lo <= med <= p90, "%s: %s min <= median <= p90 (%g %g %g)" % (what, prefix, lo, med, p90))


def check_kernels(c, j, what):
    ks = j.get("kernels")
    if not c.check(isinstance(ks, list) and ks, "%s: a non-empty kernels list" % what):
        return
    for k in ks:
        ok = isinstance(k.get("name"), str) and k["name"] and isinstance(k.get("ms"), (int, float)) and k["ms"] >= 0 \
            and isinstance(k.get("gflops"), (int, float)) and k["gflops"] >= 0 \
            and (k.get("pct_peak") is None or k["pct_peak"] >= 0)
        if not c.check(ok, "%s: kernel entry is sane: %r" % (what, k)):
            return
    c.check(any(positive(k["ms"]) for k in ks), "%s: some kernel took time" % what)
    c.check(any(k.get("pct_peak") is not None for k in ks), "%s: some kernel has a %% of peak" % what)
    c.check(positive(j.get("peak_gflops")), "%s: peak_gflops > 0 (%r)" % (what, j.get("peak_gflops")))


def main():
    args = util.parse_args(__doc__)
    c = util.Checks("test_bench")
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="kiln-test-bench-") as work:
        model = os.path.join(work, "tiny.onnx")
        tiny_model(model)
        scratch = os.path.join(work, "tmp")  # kiln bench's TMPDIR: no kiln-bench-* left in it afterwards
        os.mkdir(scratch)
        os.environ["TMPDIR"] = scratch

        def want(name):
            return args.filter in name

        if want("json"):
            r = util.run_kiln(args.kiln, ["bench", model, "--compare", "onnxruntime", "--json", "--repeat", "3",
                                          "--warmup", "1", "--threads", "1", "--python", py], timeout=180)
            j = parse_json(c, r, "json")
            if j is not None:
                missing = [k for k in KEYS if k not in j]
                c.check(not missing, "json: keys present (missing %s)" % missing)
                c.check(j.get("threads") == 1 and j.get("repeat") == 3, "json: threads 1, repeat 3 (%r, %r)" %
                        (j.get("threads"), j.get("repeat")))
                c.check(j.get("model") == model, "json: model is the path given")
                check_timings(c, j, "kiln_ms", "json")
                check_timings(c, j, "ort_ms", "json")
                if positive(j.get("kiln_ms_median")) and positive(j.get("ort_ms_median")):
                    want_ratio = j["kiln_ms_median"] / j["ort_ms_median"]
                    c.check(positive(j.get("ratio")) and abs(j["ratio"] - want_ratio) <= 1e-9 * want_ratio,
                            "json: ratio = kiln median / ORT median (%r vs %r)" % (j.get("ratio"), want_ratio))
                d = j.get("max_abs_diff")
                c.check(isinstance(d, (int, float)) and 0 <= d < 1e-3, "json: outputs agree with ORT (%r)" % d)
                outs = j.get("outputs") or []
                c.check(sorted(o.get("name") for o in outs) == ["probs", "r"] and all(o.get("within_tolerance")
                                                                                      for o in outs),
                        "json: both outputs compared and within tolerance: %r" % outs)
                check_kernels(c, j, "json")
                c.check(positive(j.get("flops")), "json: flops > 0")
            c.check(not leftovers(scratch), "json: temporary files removed (%r)" % leftovers(scratch))

        if want("no-compare"):
            r = util.run_kiln(args.kiln, ["bench", model, "--json", "--repeat", "2", "--warmup", "0"], timeout=120)
            j = parse_json(c, r, "no-compare")
            if j is not None:
                check_timings(c, j, "kiln_ms", "no-compare")
                c.check(all(k in j and j[k] is None for k in ORT_KEYS), "no-compare: ORT fields are null: %r" %
                        {k: j.get(k, "absent") for k in ORT_KEYS})

        if want("opt-level-1"):
            r = util.run_kiln(args.kiln, ["bench", model, "--json", "--repeat", "2", "--warmup", "0", "-O1"],
                              timeout=120)
            j = parse_json(c, r, "opt-level-1")
            if j is not None:
                names = [k.get("name", "") for k in j.get("kernels", [])]
                c.check(any("conv" in n for n in names), "opt-level-1: a kernel named conv (%r)" % names)
                c.check(positive(j.get("conv_pct_peak")),
                        "opt-level-1: conv_pct_peak > 0 (%r)" % j.get("conv_pct_peak"))
                c.check(positive(j.get("matmul_pct_peak")),
                        "opt-level-1: matmul_pct_peak > 0 (%r)" % j.get("matmul_pct_peak"))

        if want("bundle"):
            bundle = os.path.join(work, "tiny.kiln")
            r = util.run_kiln(args.kiln, ["compile", model, "-o", bundle], timeout=120)
            if c.check(r.rc == 0, "bundle: compile: %s %s" % (r.describe(), r.err.strip()[:200])):
                r = util.run_kiln(args.kiln, ["bench", bundle, "--compare", "onnxruntime", "--python", py])
                why = None if r.rc == 2 else "exit %r" % r.rc
                lines = [l for l in r.err.splitlines() if l.strip()]
                c.check(why is None and len(lines) == 1 and "--onnx" in lines[0],
                        "bundle: --compare without --onnx is a usage error naming --onnx (%s, %r)" % (why, r.err))
                r = util.run_kiln(args.kiln, ["bench", bundle, "--onnx", model, "--compare", "onnxruntime", "--json",
                                              "--repeat", "2", "--warmup", "0", "--python", py], timeout=120)
                j = parse_json(c, r, "bundle")
                if j is not None:
                    check_timings(c, j, "ort_ms", "bundle")
                    c.check(j.get("format") == "kiln" and j.get("opt_level") is None,
                            "bundle: format kiln, no opt level")

        if want("human"):
            r = util.run_kiln(args.kiln, ["bench", model, "--compare", "onnxruntime", "--repeat", "2", "--warmup", "0",
                                          "--python", py], timeout=120)
            ok = r.rc == 0
            for text in ("kiln ", "onnxruntime ", "ratio kiln / onnxruntime", "output probs: max abs diff",
                         "%peak", "conv kernels", "matmul kernels"):
                ok = c.check(ok and text in r.out, "human: output has %r (%s): %s" % (text, r.describe(), r.out[-600:]))

        if want("no-ort"):
            fake = os.path.join(work, "python-without-site")
            with open(fake, "w") as f:  # -S: no site-packages, so neither numpy nor onnxruntime
                f.write("#!/bin/sh\nexec '%s' -S \"$@\"\n" % py)
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
            r = util.run_kiln(args.kiln, ["bench", model, "--compare", "onnxruntime", "--repeat", "1", "--json",
                                          "--python", fake], timeout=120)
            why = util.clean_failure(r)
            c.check(why is None and "onnxruntime" in r.err, "no-ort: one clear line (%s): %r" % (why, r.err))
            c.check(r.out.strip() == "", "no-ort: nothing on stdout (%r)" % r.out[:200])

        if want("no-python"):
            r = util.run_kiln(args.kiln, ["bench", model, "--compare", "onnxruntime", "--repeat", "1",
                                          "--python", os.path.join(work, "no-such-python")], timeout=120)
            why = util.clean_failure(r)
            c.check(why is None and "cannot run" in r.err, "no-python: one clear line (%s): %r" % (why, r.err))

        if want("run-profile"):
            bundle = os.path.join(work, "tiny_run.kiln")
            r = util.run_kiln(args.kiln, ["compile", model, "-o", bundle], timeout=120)
            if c.check(r.rc == 0, "run-profile: compile: %s" % r.describe()):
                r = util.run_kiln(args.kiln, ["run", bundle, "--profile", "--repeat", "2"], timeout=120)
                c.check(r.rc == 0 and "%peak" in r.out and "GFLOPS (" in r.out and "conv kernels" in r.out,
                        "run-profile: per-kernel report with %%peak (%s): %s" % (r.describe(), r.out[-600:]))
        c.check(not leftovers(scratch), "temporary files removed (%r)" % leftovers(scratch))
    c.finish()


if __name__ == "__main__":
    main()
