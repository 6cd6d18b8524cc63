"""test_tune.py — `kiln tune` and `kiln compile --records` end to end, short.

A small model (conv 3x3 + relu twice with one shape, a 1x1 conv, a matmul + bias,
a softmax) is tuned for a few trials; then:
  - with records that match nothing, the bundle is byte for byte the default one;
  - the tuned bundle (`kiln compile --records`) says how many groups it matched,
    and its outputs equal ONNX Runtime's on the same inputs (rtol 1e-3, atol 1e-5),
    as do the default bundle's and those of a bundle made from records doctored so
    that a non-default point of every workload is applied;
  - the records are JSON lines with the fields the format promises, one per trial, and
    three pairs per workload of the closing side-by-side check;
  - the in-model check that ends the tune wrote one default and one tuned record per
    workload it timed (one id, the run's threads), and `kiln compile --records` applies
    exactly what it printed and the checks decide (the later one: the in-model check);
    on a model with an input computed into an index (no values can be invented) the
    tune still finishes and the check says why it did not run;
  - a run killed with SIGKILL part way resumes: the rerun finishes the same trial
    budget, reads every record the killed run wrote (a torn last line is counted
    as malformed, not fatal) and measures no point twice;
  - records from another CPU and from an incompatible kiln version are skipped
    with their counts;
  - --tasks list prints the tasks; usage errors exit 2 with one line;
  - a conv whose space has ~1% valid points (a 1x1 conv on AVX2) gets all its trials in
    both searches.
The trial counts are small: this checks behaviour, never speed (bench/tune.py).
Closing line: test_tune: N passed, M failed.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402

RTOL, ATOL = 1e-3, 1e-5


def make_model(path, index_input=False):
    """index_input: one more input, computed into an index (a Gather's, after an Add), whose values no
    tool can invent: the in-model check cannot run such a model and says so."""
    rng = np.random.default_rng(3)
    w = lambda *s: numpy_helper.from_array((rng.standard_normal(s) * 0.1).astype(np.float32))
    inits = []
    for name, shape in [("w1", (32, 32, 3, 3)), ("b1", (32,)), ("w2", (32, 32, 3, 3)), ("b2", (32,)),
                        ("w3", (48, 32, 1, 1)), ("m", (96, 80)), ("mb", (80,))]:
        t = w(*shape)
        t.name = name
        inits.append(t)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["y"]),
        helper.make_node("MatMul", ["a", "m"], ["mm"]),
        helper.make_node("Add", ["mm", "mb"], ["z0"]),
        helper.make_node("Softmax", ["z0"], ["z"], axis=-1),
    ]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 14, 14]),
           helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 24, 96])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, None)]
    if index_input:
        table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
        one = numpy_helper.from_array(np.array([1], dtype=np.int64), "one")
        inits += [table, one]
        nodes += [helper.make_node("Add", ["idx", "one"], ["idx1"]),
                  helper.make_node("Gather", ["table", "idx1"], ["g"], axis=0)]
        ins.append(helper.make_tensor_value_info("idx", TensorProto.INT64, [2]))
        outs.append(helper.make_tensor_value_info("g", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "tune_small", ins, outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8  # opset 17 needs no more; a newer onnx's default may pass what ORT reads
    onnx.save(m, path)


def records(path):
    good, bad = [], 0
    if not os.path.exists(path):
        return good, bad
    for line in open(path):
        try:
            good.append(json.loads(line))
        except ValueError:
            bad += 1
    return good, bad


def compare(c, kiln, bundle, inputs, ref, what, work):
    args = ["run", bundle, "--repeat", "1", "--outputs", os.path.join(work, "out.npz")]
    for name, f in inputs.items():
        args += ["--input", "%s=%s" % (name, f)]
    r = util.run_kiln(kiln, args, timeout=300)
    if not c.check(r.rc == 0, "%s: kiln run: %s %s" % (what, r.describe(), r.err[:300])):
        return
    out = np.load(os.path.join(work, "out.npz"))
    for name, want in ref.items():
        got = out[name]
        ok = got.shape == want.shape and np.all(np.abs(got - want) <= ATOL + RTOL * np.abs(want))
        c.check(ok, "%s: output %s differs from ONNX Runtime (max abs diff %g)" %
                (what, name, float(np.max(np.abs(got - want))) if got.shape == want.shape else -1))


def main():
    args = util.parse_args(__doc__)
    kiln = args.kiln
    c = util.Checks("test_tune")
    asan = "asan" in kiln
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "small.onnx")
        make_model(model)
        rec = os.path.join(work, "small.json")
        # usage errors
        for bad in (["tune", model], ["tune", model, "--records", rec, "--tasks", "bogus"],
                    ["tune", model, "--records", rec, "--search", "greedy"],
                    ["tune", model, "--records", rec, "--trials", "0"]):
            r = util.run_kiln(kiln, bad)
            c.check(r.rc == 2 and len(r.err_lines()) == 1, "%s: want one usage line, exit 2 (%s: %r)" %
                    (" ".join(bad[2:]), r.describe(), r.err[:200]))
        r = util.run_kiln(kiln, ["tune", model, "--records", rec, "--tasks", "list"])
        c.check(r.rc == 0 and "conv" in r.out and "matmul" in r.out and not os.path.exists(rec),
                "--tasks list: %s %r" % (r.describe(), r.out[-400:]))

        # a tune, then a bundle from its records, against ONNX Runtime
        trials = 24  # every task, generated spaces included
        r = util.run_kiln(kiln, ["tune", model, "--records", rec, "--trials", str(trials)], timeout=900)
        c.check(r.rc == 0 and "tuned tasks:" in r.out, "tune: %s %s" % (r.describe(), r.err[:300]))
        good, bad = records(rec)
        checks = [x for x in good if x.get("confirm")]  # the closing side-by-side checks: not trials
        in_model = [x for x in good if x.get("model")]  # the in-model check: not trials either
        good = [x for x in good if not x.get("confirm") and not x.get("model")]
        c.check(len(good) == trials and bad == 0, "records: %d lines, %d malformed (want %d)" % (len(good), bad, trials))
        c.check(len(checks) % 6 == 0 and all(x["workload"] in {y["workload"] for y in good} for x in checks),
                "closing checks: three pairs per checked workload (%d lines)" % len(checks))
        keys = {"v", "kiln", "workload", "hash", "template", "target", "cpu", "knobs", "cost", "error", "time",
                "flops", "fv", "features"}
        c.check(all(keys <= set(x) for x in good), "every record has %s" % sorted(keys))
        c.check(any(x["knobs"] == "default" for x in good), "the default schedules are measured")
        c.check({"conv", "matmul", "generic"} <= {x["template"] for x in good}, "conv, matmul and generic tasks tuned")
        c.check(os.path.exists(rec + ".svg") and "<svg" in open(rec + ".svg").read(), "the plot is written")
        mline = re.search(r"model check: (\d+) workloads? with a tuned schedule, timed inside whole-model runs on (\d+) "
                          r"thread", r.out)
        none = "model check: no workload of the model has a tuned schedule" in r.out
        c.check(bool(mline) != none, "the in-model check ran or said why not: %r" % r.out[-600:])
        by_wl = {}
        for x in in_model:
            by_wl.setdefault(x["workload"], []).append(x)
        c.check(len({x["model"] for x in in_model}) <= 1 and
                all(len(v) == 2 and sum(y["knobs"] == "default" for y in v) == 1 for v in by_wl.values()) and
                set(by_wl) <= {x["workload"] for x in good} and
                (none or (int(mline.group(1)) == len(by_wl) and
                          all(x["threads"] == int(mline.group(2)) for x in in_model))),
                "in-model check: one default and one tuned record per workload, one id, the run's threads (%d lines)"
                % len(in_model))
        applies = re.search(r"`kiln compile --records` applies tuned schedules to (\d+) of (\d+) groups", r.out)

        rng = np.random.default_rng(5)
        feeds = {"x": rng.uniform(-1, 1, (1, 32, 14, 14)).astype(np.float32),
                 "a": rng.uniform(-1, 1, (1, 24, 96)).astype(np.float32)}
        inputs = {}
        for n, v in feeds.items():
            inputs[n] = os.path.join(work, n + ".npy")
            np.save(inputs[n], v)
        import onnxruntime as ort
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        ref = dict(zip(["y", "z"], sess.run(["y", "z"], feeds)))
        # records that apply to nothing change nothing: the bundle is byte for byte the default one
        empty = os.path.join(work, "empty.json")
        open(empty, "w").close()
        b1, b2 = os.path.join(work, "plain.kiln"), os.path.join(work, "hooked.kiln")
        r1 = util.run_kiln(kiln, ["compile", model, "-o", b1], timeout=300)
        r2 = util.run_kiln(kiln, ["compile", model, "-o", b2, "--records", empty], timeout=300)
        c.check(r1.rc == 0 and r2.rc == 0 and open(b1, "rb").read() == open(b2, "rb").read(),
                "with an empty records file the bundle is the default one, byte for byte")

        # which workloads beat their default (only those are applied)
        best, default = {}, {}
        for x in good:
            if x["error"] or x["cost"] <= 0:
                continue
            d = default if x["knobs"] == "default" else best
            d[x["workload"]] = min(d.get(x["workload"], 1e30), x["cost"])
        # ... unless a closing check measured them side by side: then its medians decide, by 2%
        checked = {}
        for x in checks:
            if not x["error"] and x["cost"] > 0:
                checked.setdefault(x["workload"], ([], []))[x["knobs"] != "default"].append(x["cost"])
        applied = {k for k in best if k in default and best[k] < default[k]}
        for k, (d, b) in checked.items():
            if d and b:
                applied.discard(k)
                if np.median(b) < 0.98 * np.median(d):
                    applied.add(k)
        # ... and where the in-model check (the later check) timed it, that decides, by 2%
        for k, v in by_wl.items():
            d = next(y["cost"] for y in v if y["knobs"] == "default")
            t = next(y["cost"] for y in v if y["knobs"] != "default")
            applied.discard(k)
            if t < 0.98 * d:
                applied.add(k)
        beaten = len(applied)
        # every non-default record made "fastest" (and no closing checks), so the bundle runs tuned
        # kernels whatever the timings said
        forced = os.path.join(work, "forced.json")
        with open(forced, "w") as f:
            picked = set()
            for x in good:
                if x["knobs"] != "default" and not x["error"] and x["workload"] not in picked:
                    picked.add(x["workload"])
                    x = dict(x, cost=1e-12)
                f.write(json.dumps(x) + "\n")
        for what, extra in (("default", []), ("tuned", ["--records", rec]), ("forced", ["--records", forced])):
            bundle = os.path.join(work, what + ".kiln")
            r = util.run_kiln(kiln, ["compile", model, "-o", bundle] + extra, timeout=300)
            if not c.check(r.rc == 0, "compile %s: %s %s" % (what, r.describe(), r.err[:300])):
                continue
            if extra:
                line = next((l for l in r.out.splitlines() if "records:" in l), "")
                m = re.search(r"tuned schedules for (\d+) of (\d+) groups \((\d+) workloads", line)
                want = len(picked) if what == "forced" else beaten
                c.check(m and int(m.group(3)) == want and (int(m.group(1)) >= want),
                        "compile --records (%s): %d workloads to apply, the line says %r" % (what, want, line))
                if what == "tuned" and m and applies:
                    c.check(applies.group(1) == m.group(1) and applies.group(2) == m.group(2),
                            "the tune's in-model check said %s of %s groups, compile --records %s of %s" %
                            (applies.group(1), applies.group(2), m.group(1), m.group(2)))
            compare(c, kiln, bundle, inputs, ref, what, work)

        # a model whose inputs cannot be invented: the tune finishes, the in-model check says why it did not run
        model_ix = os.path.join(work, "index_input.onnx")
        make_model(model_ix, index_input=True)
        forced2 = os.path.join(work, "forced2.json")
        open(forced2, "w").write(open(forced).read())
        r = util.run_kiln(kiln, ["tune", model_ix, "--records", forced2, "--trials", str(trials), "--tasks", "templates"],
                          timeout=900)
        c.check(r.rc == 0 and "model check: not run: input 'idx' is computed into an index" in r.out,
                "in-model check on a model with an index input: %s %r %r" % (r.describe(), r.out[-500:], r.err[-300:]))

        # records from another CPU or version are skipped, with counts
        other = os.path.join(work, "other.json")
        with open(other, "w") as f:
            for x in good[:3]:
                f.write(json.dumps(dict(x, cpu="Some Other CPU")) + "\n")
            for x in good[3:5]:
                f.write(json.dumps(dict(x, kiln="9.4.0")) + "\n")
            f.write('{"v": 1, "workl\n')
        r = util.run_kiln(kiln, ["compile", model, "-o", os.path.join(work, "o.kiln"), "--records", other])
        c.check(r.rc == 0 and "tuned schedules for 0 of" in r.out and "3 records from another CPU skipped" in r.out
                and "2 from an incompatible kiln version skipped" in r.out and "1 malformed" in r.out,
                "skipped records counted: %r" % r.out[-400:])
        r = util.run_kiln(kiln, ["compile", model, "-o", os.path.join(work, "o.kiln"), "--records",
                                 os.path.join(work, "missing.json")])
        c.check(util.clean_failure(r) is None, "a missing records file is one clean error: %s" % util.clean_failure(r))

        # a killed run resumes
        rec2 = os.path.join(work, "resume.json")
        total = 24
        argv = [kiln, "tune", model, "--records", rec2, "--trials", str(total), "--tasks", "templates"]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + (600 if asan else 240)
        while time.monotonic() < deadline and p.poll() is None and len(records(rec2)[0]) < 6:
            time.sleep(0.05)
        killed = p.poll() is None
        if killed:
            p.send_signal(signal.SIGKILL)
        p.wait()
        before = len(records(rec2)[0])
        c.check(killed and 0 < before < total, "the first run was killed part way (%d records)" % before)
        r = util.run_kiln(kiln, argv[1:], timeout=900)
        c.check(r.rc == 0, "the rerun: %s %s" % (r.describe(), r.err[:300]))
        good2, bad2 = records(rec2)
        good2 = [x for x in good2 if not x.get("confirm") and not x.get("model")]
        c.check(len(good2) == total and bad2 <= 1, "resumed to %d records (%d torn), want %d" % (len(good2), bad2, total))
        seen = set()
        dup = 0
        for x in good2:
            k = (x["workload"], json.dumps(x["knobs"], sort_keys=True))
            dup += k in seen
            seen.add(k)
        c.check(dup == 0, "no point measured twice (%d twice)" % dup)
        sparse_space(c, kiln, work)
    c.finish()


def sparse_space(c, kiln, work):
    """A space whose valid points are rare still gets its trials: a 1x1 conv of 64 channels at
    56x56 (ResNet-18's C3), whose AVX2 space holds ~1% valid points (the register check),
    tuned for 12 trials by each search. Its task once ended after the default, no valid
    point among 256 random draws."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.random.default_rng(3).uniform(-1, 1, (64, 64, 1, 1)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "c3", [x], [y], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(work, "c3.onnx")
    onnx.save(m, path)
    for search in ("random", "model"):
        rec = os.path.join(work, "c3_%s.json" % search)
        r = util.run_kiln(kiln, ["tune", path, "--records", rec, "--trials", "12", "--tasks", "0", "--search", search,
                                 "--seed", "1"], timeout=600)
        trials = [x for x in records(rec)[0] if not x.get("confirm") and not x.get("model")]
        c.check(r.rc == 0 and len(trials) == 12 and len({x["workload"] for x in trials}) == 1,
                "sparse space, %s search: %d trials of 12 (%s)" % (search, len(trials), r.describe()))


if __name__ == "__main__":
    main()
