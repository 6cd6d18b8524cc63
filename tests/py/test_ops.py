"""test_ops.py — the per-op test: every canonical op of graphir/ops.def (every
function of unary.def, binary.def and reduce.def included) on several shapes,
broadcasts, attribute combinations and dtypes, compiled by kiln into a bundle that
the runtime runs, and compared with onnxruntime on the same seeded inputs.

The cases are the table of opcases.py: each is a small ONNX model built with
onnx.helper around the ONNX op(s) that map onto the canonical op. For each case
this test generates the inputs from a numpy RNG seeded with the case's name, runs
the model on onnxruntime's CPU provider to get the expected outputs, writes the
model (outputs typed and shaped as onnxruntime produced them), input_N.pb and
output_N.pb into a temporary folder, and runs

    kiln check model.onnx --test-data DIR [--target NAME]

which compiles the model into a bundle in memory (the steps of `kiln compile`),
runs it with the runtime on one thread and compares each output (rtol 1e-3 /
atol 1e-5 plus 1e-5 of the output's largest magnitude, see ATOL_SCALE; float16
1e-2 / 1e-3; integers and bools exactly; NaN positions must match). --target passes a named target to kiln check (one this machine can run:
host, x86_64, x86_64-avx2, x86_64-avx512). A few cases run at a time.

One line per case — PASS, FAIL (with kiln's mismatch or error line), or
KNOWN-FAIL for a case opcases.KNOWN_FAIL names (counted as failed all the same) —
then the closing line `test_ops: N passed, M failed`; the exit status is non-zero
when anything failed. A case onnxruntime refuses is a bug of the table: it is
reported as FAIL with onnxruntime's message.

    python tests/py/test_ops.py --kiln build/kiln [--filter TEXT] [-j N] [--keep DIR] [--list] [--target NAME]
"""
import argparse
import collections
import concurrent.futures
import os
import shutil
import sys
import tempfile
import time
import zlib

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opcases  # noqa: E402
import util  # noqa: E402

TIMEOUT = 300  # per kiln run; the ASan build is slow
# An output of a long reduction whose terms nearly cancel (a conv's 576 products
# summing to -0.0055 out of ~400) is exact to a few ulps of the terms, not of the
# result: kiln and ONNX Runtime sum in other orders (and a target without FMA rounds
# every product), so such an element can miss rtol 1e-3 / atol 1e-5 by rounding
# alone. Every float output therefore also gets 1e-5 of its largest magnitude as
# absolute tolerance (kiln check --atol-scale); a wrong tap or channel is far larger.
ATOL_SCALE = "1e-5"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="path to the kiln binary")
    ap.add_argument("--filter", default="", help="only cases whose name contains this text")
    ap.add_argument("-j", "--jobs", type=int, default=0, help="cases run at a time (default: CPUs + 1, at most 4)")
    ap.add_argument("--keep", default="", help="copy the folder of every failing case under this folder")
    ap.add_argument("--list", action="store_true", help="print the case names and the cases per op, run nothing")
    ap.add_argument("--verbose", "-v", action="store_true", help="print the kernel count and time of passing cases")
    ap.add_argument("--target", default="", help="the named target kiln check compiles for (default: host)")
    return ap.parse_args()


def tensor_type(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def materialize(case):
    """(inputs, inits): lists of (name, array), generated from the case's seed."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))

    def get(spec):
        a = spec(rng) if callable(spec) else spec
        return np.asarray(a)
    inputs = [(n, get(g)) for n, g in case.inputs]
    inits = [(n, get(g)) for n, g in case.inits]
    return inputs, inits


def build_model(case, inputs, inits, outputs=None):
    """The case's model; outputs typed and shaped from `outputs` [(name, array)]
    when given, untyped otherwise (onnxruntime infers them)."""
    vin = [helper.make_tensor_value_info(n, tensor_type(a.dtype), a.shape) for n, a in inputs]
    if outputs is None:
        vout = [helper.make_empty_tensor_value_info(n) for n in case.outputs]
    else:
        vout = [helper.make_tensor_value_info(n, tensor_type(a.dtype), a.shape) for n, a in outputs]
    inits_pb = [numpy_helper.from_array(a, n) for n, a in inits]
    graph = helper.make_graph(case.nodes, "case", vin, vout, initializer=inits_pb)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)], producer_name="test_ops")
    model.ir_version = 10 if case.opset > 8 else 3
    return model


def float64_twin(model):
    """The same model computing in float64: float32 inputs, outputs and
    initializers become float64 (the oracle for cases where float32 statistics
    of the reference implementations are too coarse)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == onnx.TensorProto.FLOAT:
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))
    return m


def reference(model, inputs, oracle="onnxruntime"):
    if oracle == "onnx":  # see opcases.REFERENCE_ORACLE
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(model).run(None, {n: a for n, a in inputs})
    if oracle == "float64":
        f64 = [(n, a.astype(np.float64) if a.dtype == np.float32 else a) for n, a in inputs]
        outs = reference(float64_twin(model), f64)
        return [o.astype(np.float32) if o.dtype == np.float64 else o for o in outs]
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {n: a for n, a in inputs})


def first_problem(run):
    """kiln's mismatch lines, else its error line, else how it ended."""
    mism = [l.strip() for l in run.out.splitlines() if l.strip().endswith("MISMATCH") or "no reference" in l]
    if mism:
        return "; ".join(mism)
    err = [l.strip() for l in run.err.splitlines() if l.strip()]
    san = run.sanitizer_report()
    if san:
        return "sanitizer report (%s): %s" % (san, " | ".join(err[:3]))
    if err:
        return "%s: %s" % (run.describe(), err[0])
    return run.describe()


Result = collections.namedtuple("Result", "case ok detail seconds")


def run_case(case, kiln, keep, target=""):
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="kiln_ops_")
    try:
        try:
            inputs, inits = materialize(case)
            model = build_model(case, inputs, inits)
            outs = reference(model, inputs, opcases.oracle_of(case.name))
        except Exception as e:  # noqa: BLE001 — a table bug: say so, don't hide it
            msg = str(e).strip().splitlines()
            return Result(case, False, "onnxruntime refused the case (a bug of the table): %s" % (msg[0] if msg else e),
                          time.monotonic() - t0)
        outputs = [(n, np.asarray(a)) for n, a in zip(case.outputs, outs)]
        model = build_model(case, inputs, inits, outputs)
        onnx.save(model, os.path.join(tmp, "model.onnx"))
        for i, (n, a) in enumerate(inputs):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(tmp, "input_%d.pb" % i))
        for i, (n, a) in enumerate(outputs):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(tmp, "output_%d.pb" % i))
        argv = ["check", os.path.join(tmp, "model.onnx"), "--test-data", tmp] + (["--target", target] if target else [])
        argv += ["--atol-scale", ATOL_SCALE]
        run = util.run_kiln(kiln, argv, timeout=TIMEOUT)
        ok = run.rc == 0 and not run.timed_out and not run.sanitizer_report()
        kernels = next((l for l in run.out.splitlines() if l.endswith(" kernels")), "no kernel count")
        detail = kernels if ok else first_problem(run)
        if not ok and keep:
            dst = os.path.join(keep, case.name.replace("/", "_"))
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(tmp, dst)
            with open(os.path.join(dst, "kiln.log"), "w") as f:
                f.write(" ".join(run.argv) + "\n--- stdout\n" + run.out + "--- stderr\n" + run.err)
        return Result(case, ok, detail, time.monotonic() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    args = parse_args()
    cases = [c for c in opcases.ALL if args.filter in c.name]
    names = collections.Counter(c.name for c in opcases.ALL)
    dups = [n for n, k in names.items() if k > 1]
    per_op = collections.Counter(c.op for c in cases)
    if args.list:
        for c in cases:
            print(c.name)
        for op, k in sorted(per_op.items()):
            print("%-18s %d" % (op, k))
        print("%d cases" % len(cases))
        return
    jobs = args.jobs or min(4, (os.cpu_count() or 1) + 1)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    passed = failed = 0
    failures = []
    for n in dups:
        print("FAIL case name %s is used %d times in opcases.py" % (n, names[n]), flush=True)
        failed += 1
    if args.target:  # a target this machine cannot run: a skip (exit 77, ctest's SKIP_RETURN_CODE), never a pass
        why = util.target_unavailable(args.kiln, args.target)
        if why:
            print("SKIP test_ops --target %s: %s" % (args.target, why), flush=True)
            print("test_ops: 0 passed, 0 failed, 1 skipped", flush=True)
            sys.exit(77)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        for r in ex.map(lambda c: run_case(c, args.kiln, args.keep, args.target), cases):
            if r.ok:
                passed += 1
                if opcases.oracle_reason(r.case.name):
                    print("NOTE %s is checked against %s: %s" % (r.case.name, opcases.oracle_of(r.case.name),
                                                                   opcases.oracle_reason(r.case.name)))
                print("PASS %s%s" % (r.case.name, " (%s, %.1f s)" % (r.detail, r.seconds) if args.verbose else ""),
                      flush=True)
                continue
            failed += 1
            known = opcases.KNOWN_FAIL.get(r.case.name)
            if known:
                print("KNOWN-FAIL %s: %s [%s]" % (r.case.name, r.detail, known), flush=True)
            else:
                print("FAIL %s: %s" % (r.case.name, r.detail), flush=True)
            failures.append(r)
    fail_ops = collections.Counter(r.case.op for r in failures)
    print("cases per op (failed): " + ", ".join("%s %d%s" % (op, k, " (%d)" % fail_ops[op] if fail_ops[op] else "")
                                                for op, k in sorted(per_op.items())), flush=True)
    print("%d cases in %.0f s with %d jobs" % (len(cases), time.monotonic() - t0, jobs), flush=True)
    print("test_ops: %d passed, %d failed" % (passed, failed), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
