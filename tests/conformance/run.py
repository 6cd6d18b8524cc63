#!/usr/bin/env python3
"""run.py — the ONNX conformance runner behind `make conformance`.

Every test in the onnx package's backend node suite (onnx/backend/test/data/node)
is compiled and run by `kiln check MODEL --test-data DIR` (import with the test
inputs bound, the whole `kiln compile` pipeline into a bundle in memory, the runtime
running it on one thread, comparison with output_N.pb at rtol 1e-3 / atol 1e-5,
exact for integers and bool, NaN positions matching). One line per test, then the totals:

    conformance: P passed, F failed, U unsupported of T

"unsupported" means kiln refused the model with a clear unsupported-op or
unsupported-type message; "failed" is everything else that did not match (wrong
numbers, errors, crashes, timeouts). Excluded tests (tests/conformance/exclusions.txt,
one `test_name  reason` per line; `TARGET:test_name  reason` for one --target only, e.g.
`cuda:`) are reported as excluded and counted as not passed.

--ops-table FILE writes the per-op Markdown table (passed/total per op);
--readme rewrites the table between the conformance markers in README.md.
--require-ops A,B,... (or --require-light) exits non-zero if any test of those ops
did not pass. --check exits non-zero unless every test passed or is excluded with its
reason, and at least --min-pass (default 0.95) of all tests passed: `make test` runs
the whole suite that way (ctest conformance_all, release build).
"""
import argparse, collections, concurrent.futures as cf, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The ops of the onnx package's light models, and the prefixes of the node tests
# that test them (the suite names tests after the op: test_conv_*, test_batchnorm_*…).
LIGHT_OPS = {"Conv": ["test_conv_", "test_basic_conv_"], "BatchNormalization": ["test_batchnorm_"],
             "Relu": ["test_relu"], "MaxPool": ["test_maxpool_"], "AveragePool": ["test_averagepool_"],
             "GlobalAveragePool": ["test_globalaveragepool"], "Gemm": ["test_gemm_"], "Reshape": ["test_reshape_"],
             "Softmax": ["test_softmax_"], "Dropout": ["test_dropout_", "test_training_dropout"], "LRN": ["test_lrn"],
             "Concat": ["test_concat_"], "Sum": ["test_sum_"], "Unsqueeze": ["test_unsqueeze"], "Mul": ["test_mul"],
             "Add": ["test_add"], "Transpose": ["test_transpose_"], "ConstantOfShape": ["test_constantofshape_"]}


def node_dir():
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def test_ops(path):
    import onnx
    try:
        m = onnx.load(path, load_external_data=False)
    except Exception:
        return []
    ops = set()
    def walk(g):
        for n in g.node:
            ops.add(n.op_type if n.domain in ("", "ai.onnx") else n.domain + "." + n.op_type)
            for a in n.attribute:
                if a.g and a.g.node:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(m.graph)
    # expanded tests are function bodies: name them by the op the test is about
    return sorted(ops)


def load_exclusions(target=None):
    """{test: reason}; a line "TARGET:test reason" excludes the test for that target only."""
    ex = {}
    p = os.path.join(HERE, "exclusions.txt")
    if os.path.exists(p):
        for line in open(p):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            only, sep, test = name.partition(":")
            if sep and only != (target or "host"):
                continue
            ex[test if sep else name] = reason.strip()
    return ex


def run_one(kiln, d, timeout, target=None, extra=()):
    t = os.path.basename(d)
    cmd = [kiln, "check", os.path.join(d, "model.onnx"), "--test-data", os.path.join(d, "test_data_set_0")]
    if target:
        cmd += ["--target", target]
    cmd += list(extra)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return t, "failed", "timeout after %ds" % timeout
    err = p.stderr.strip().splitlines()
    msg = err[-1] if err else ""
    if p.returncode == 0:
        return t, "passed", ""
    if p.returncode < 0 or p.returncode > 2:
        return t, "failed", "crash (exit %d) %s" % (p.returncode, msg[-200:])
    if re.search(r"unsupported op|which kiln does not support|(is|are) not supported|not a tensor kiln supports", msg):
        return t, "unsupported", msg.split(": ", 1)[-1][:200]
    mism = [l.strip() for l in p.stdout.splitlines() if "MISMATCH" in l]
    return t, "failed", (mism[0] if mism else msg)[:240]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--ops-table")
    ap.add_argument("--readme", action="store_true")
    ap.add_argument("--require-ops")
    ap.add_argument("--require-light", action="store_true")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every test passed or is excluded with a reason, and P/T >= --min-pass")
    ap.add_argument("--min-pass", type=float, default=0.95)
    ap.add_argument("--target", help="compile for this named target (kiln check --target): c for the C backend")
    ap.add_argument("--emulate", action="store_true",
                    help="kiln check --emulate: the target's kernels in the loop-IR interpreter (a GPU target without a GPU)")
    ap.add_argument("--ptxas", help="with --emulate and a CUDA target: also assemble the PTX with this ptxas")
    a = ap.parse_args()

    base = node_dir()
    tests = sorted(t for t in os.listdir(base) if re.search(a.filter, t))
    ops_of = {t: test_ops(os.path.join(base, t, "model.onnx")) for t in tests}
    required = [p for op in (a.require_ops.split(",") if a.require_ops else LIGHT_OPS if a.require_light else [])
                for p in LIGHT_OPS.get(op, ["test_" + op.lower() + "_"])]
    if required:
        tests = [t for t in tests if any(t.startswith(p) for p in required)]
    excl = load_exclusions(a.target)
    results = {}
    todo = [t for t in tests if t not in excl]
    for t in tests:
        if t in excl:
            results[t] = ("excluded", excl[t])
            print("EXCLUDED %s: %s" % (t, excl[t]), flush=True)
    with cf.ThreadPoolExecutor(max(1, a.jobs)) as ex:
        extra = (["--emulate"] if a.emulate else []) + (["--ptxas", a.ptxas] if a.ptxas else [])
        futs = [ex.submit(run_one, a.kiln, os.path.join(base, t), a.timeout, a.target, extra) for t in todo]
        for f in cf.as_completed(futs):
            t, status, why = f.result()
            results[t] = (status, why)
            print("%s %s%s" % (status.upper(), t, (": " + why) if why else ""), flush=True)

    count = collections.Counter(s for s, _ in results.values())
    per_op = collections.defaultdict(lambda: [0, 0])
    for t, (s, _) in results.items():
        for op in ops_of[t]:
            per_op[op][1] += 1
            per_op[op][0] += s == "passed"
    table = ["| op | passed / tests |", "|---|---|"]
    for op in sorted(per_op):
        table.append("| %s | %d / %d |" % (op, per_op[op][0], per_op[op][1]))
    summary = "conformance: %d passed, %d failed, %d unsupported of %d" % (
        count["passed"], count["failed"], count["unsupported"], len(tests))
    if count["excluded"]:
        summary += " (%d excluded, counted as not passed)" % count["excluded"]
    if a.ops_table:
        open(a.ops_table, "w").write("\n".join(table) + "\n")
    if a.readme:
        rp = os.path.join(ROOT, "README.md")
        text = open(rp).read()
        block = "<!-- conformance:begin -->\n%s\n\n<details><summary>per-op results</summary>\n\n%s\n\n</details>\n<!-- conformance:end -->" % (
            summary, "\n".join(table))
        if "<!-- conformance:begin -->" in text:
            text = re.sub(r"<!-- conformance:begin -->.*<!-- conformance:end -->", lambda m: block, text, flags=re.S)
        else:
            text += "\n" + block + "\n"
        open(rp, "w").write(text)
    print(summary)
    if a.check:
        bad = sorted(t for t in tests if results[t][0] not in ("passed", "excluded"))
        ratio = count["passed"] / max(1, len(tests))
        if bad:
            print("check: %d tests neither passed nor are excluded: %s" % (len(bad), " ".join(bad[:50])))
        if ratio < a.min_pass:
            print("check: %.1f%% passed, below %.1f%%" % (100 * ratio, 100 * a.min_pass))
        if bad or ratio < a.min_pass:
            return 1
    if required:  # excluded tests carry their reason in exclusions.txt and are listed above
        bad = [t for t in tests if results[t][0] not in ("passed", "excluded")]
        if bad:
            print("required ops: %d tests did not pass: %s" % (len(bad), " ".join(sorted(bad)[:50])))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
