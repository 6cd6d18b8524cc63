"""util.py — helpers shared by the Python tests of kiln: argument parsing
(--kiln PATH), locating the test data shipped with the onnx package, running the
kiln binary with a timeout, parsing `kiln inspect` output, spotting sanitizer
reports, and a tiny check counter that prints the closing line every kiln test
ends with:

    NAME: N passed, M failed[, K skipped]

and exits non-zero when anything failed. Nothing is ever skipped silently: a
skip names its reason.
"""
import argparse
import os
import re
import subprocess
import sys

SANITIZER_MARKERS = ("AddressSanitizer", "runtime error:", "LeakSanitizer", "UndefinedBehaviorSanitizer")


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--kiln", required=True, help="path to the kiln binary")
    ap.add_argument("--filter", default="", help="only cases whose name contains this text")
    ap.add_argument("--verbose", "-v", action="store_true")
    return ap.parse_args()


def onnx_data_dir(kind):
    """The folder of the onnx package's backend test data of this kind ("node", "light"...)."""
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", kind)


class Run:
    """The outcome of one kiln run."""

    def __init__(self, argv, rc, out, err, timed_out, seconds):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err
        self.timed_out, self.seconds = timed_out, seconds

    def sanitizer_report(self):
        return next((m for m in SANITIZER_MARKERS if m in self.err), None)

    def err_lines(self):
        return [l for l in self.err.splitlines()]

    def describe(self):
        if self.timed_out:
            return "timed out after %.0f s" % self.seconds
        if self.rc < 0:
            return "killed by signal %d" % -self.rc
        return "exit %d" % self.rc


def run_kiln(kiln, args, timeout=60):
    import time
    argv = [kiln] + list(args)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return Run(argv, p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"),
                   False, time.monotonic() - t0)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        err = (e.stderr or b"").decode("utf-8", "replace")
        return Run(argv, None, out, err, True, time.monotonic() - t0)
    except OSError as e:  # no binary: every check that needs it fails, the closing line still prints
        return Run(argv, 127, "", "cannot run %s: %s" % (kiln, e), False, time.monotonic() - t0)


def target_unavailable(kiln, target):
    """Why this host cannot run code for target (`kiln check --target` names a CPU level
    or feature it lacks), or None when it can."""
    r = run_kiln(kiln, ["check", "-", "--test-data", "-", "--target", target])
    why = r.err.strip()
    return why if r.rc != 0 and ("this host is" in why or "which this host lacks" in why) else None


def runnable_targets(kiln, checks, targets):
    """(target, its `kiln compile` arguments) for each of targets ("host" included) this
    host can run code for; each other one is reported skipped with the reason."""
    for target in targets:
        if target != "host":
            why = target_unavailable(kiln, target)
            if why:
                checks.skip("level %s: %s" % (target, why))
                continue
        yield target, [] if target == "host" else ["--target", target]


def compile_and_run(kiln, checks, label, model, feeds, d, tag, compile_args=()):
    """`kiln compile` model (with compile_args) into d/TAG.kiln, `kiln run` it on feeds
    ({name: array}, written as d/TAG_in_NAME.npy): {output name: array} from d/TAG/, or
    None after a failed check ("LABEL: compile ..." / "LABEL: run ...")."""
    import numpy as np
    bundle, out = os.path.join(d, tag + ".kiln"), os.path.join(d, tag)
    os.makedirs(out, exist_ok=True)
    argv = []
    for name, arr in feeds.items():
        f = os.path.join(d, "%s_in_%s.npy" % (tag, name))
        np.save(f, arr)
        argv += ["--input", "%s=%s" % (name, f)]
    r = run_kiln(kiln, ["compile", model, "-o", bundle] + list(compile_args))
    if not checks.check(r.rc == 0, "%s: compile %s: %s" % (label, r.describe(), r.err.strip())):
        return None
    r = run_kiln(kiln, ["run", bundle, "--output-dir", out] + argv)
    if not checks.check(r.rc == 0, "%s: run %s: %s" % (label, r.describe(), r.err.strip())):
        return None
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}


def run_on_targets(kiln, checks, targets, cases, d):
    """Each case (label, model path, feeds, ...) compiled and run on every target of targets
    this host runs (runnable_targets): yields (target, case, {output name: array}) for those
    that ran; a failed compile or run is a failed check already."""
    for target, extra in runnable_targets(kiln, checks, targets):
        for k, case in enumerate(cases):
            ys = compile_and_run(kiln, checks, "%s [%s]" % (case[0], target), case[1], case[2], d, "k%d" % k, extra)
            if ys is not None:
                yield target, case, ys


def parse_shape(text):
    """"1x3x224x224" → (1, 3, 224, 224); "scalar" → ()."""
    if text == "scalar":
        return ()
    return tuple(int(d) for d in text.split("x"))


def parse_inspect(out):
    """Parses `kiln inspect` stdout into a dict:
    inputs / outputs: lists of (name, dtype, shape tuple); histogram: {op: count};
    onnx_nodes, ir_version, parameters, flops, canonical_nodes, unsupported (ints,
    None when absent); opsets: {domain: version}; unsupported_ops: list of
    (op_type, detail line); test_outputs: list of (name, "OK"|"MISMATCH", line)."""
    info = {"inputs": [], "outputs": [], "histogram": {}, "opsets": {}, "unsupported_ops": [], "test_outputs": [],
            "ir_version": None, "onnx_nodes": None, "parameters": None, "flops": None, "canonical_nodes": None,
            "unsupported": None}
    section = None
    for line in out.splitlines():
        if not line.startswith("  "):
            section = None
            m = re.match(r"ir_version: (-?\d+)$", line)
            if m:
                info["ir_version"] = int(m.group(1))
            m = re.match(r"op histogram \((\d+) ONNX nodes\):$", line)
            if m:
                info["onnx_nodes"] = int(m.group(1))
                section = "histogram"
            if line.startswith("opsets:"):
                for item in line[len("opsets:"):].split():
                    dom, _, ver = item.rpartition("=")
                    info["opsets"][dom] = int(ver)
            if line == "inputs:":
                section = "inputs"
            if line == "outputs:":
                section = "outputs"
            if line == "test data outputs:":
                section = "test"
            m = re.match(r"parameters: (\d+) ", line)
            if m:
                info["parameters"] = int(m.group(1))
            m = re.match(r"estimated FLOPs: (\d+) ", line)
            if m:
                info["flops"] = int(m.group(1))
            m = re.match(r"canonical nodes: (\d+)$", line)
            if m:
                info["canonical_nodes"] = int(m.group(1))
            m = re.match(r"unsupported ops: (\d+)$", line)
            if m:
                info["unsupported"] = int(m.group(1))
                section = "unsupported"
            continue
        body = line.strip()
        if section in ("inputs", "outputs"):
            parts = body.split()
            if len(parts) >= 3:
                name = " ".join(parts[:-2])
                try:
                    info[section].append((name, parts[-2], parse_shape(parts[-1])))
                except ValueError:
                    info[section].append((name, parts[-2], None))
        elif section == "histogram":
            parts = body.rsplit(None, 1)
            if len(parts) == 2 and parts[1].isdigit():
                info["histogram"][parts[0]] = int(parts[1])
        elif section == "unsupported":
            m = re.match(r"unsupported op (\S+) \(opset (\d+)\) at node '(.*?)': (.*)$", body)
            if m:
                info["unsupported_ops"].append((m.group(1), body))
        elif section == "test":
            m = re.match(r"output (.*?) kiln .* (OK|MISMATCH)$", body)
            if m:
                info["test_outputs"].append((m.group(1), m.group(2), body))
            elif body.endswith("MISMATCH"):
                info["test_outputs"].append((body, "MISMATCH", body))
    return info


def numpy_dtype_name(arr):
    """The kiln dtype name of a numpy array's element type."""
    name = str(arr.dtype)
    return {"bool": "bool", "object": "string"}.get(name, name)


class Checks:
    """Counts passes, failures and skips; finish() prints the closing line and exits."""

    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s" % what, flush=True)
        return ok

    def skip(self, why):
        self.skipped += 1
        print("SKIP %s" % why, flush=True)

    def finish(self):
        line = "%s: %d passed, %d failed" % (self.name, self.passed, self.failed)
        if self.skipped:
            line += ", %d skipped" % self.skipped
        print(line, flush=True)
        sys.exit(1 if self.failed else 0)


def clean_failure(run):
    """None when a failed run failed cleanly (exit 1, exactly one non-empty line on
    stderr, no sanitizer report); otherwise why not."""
    if run.timed_out:
        return run.describe()
    if run.rc is None or run.rc < 0:
        return run.describe()
    s = run.sanitizer_report()
    if s:
        return "sanitizer report (%s)" % s
    if run.rc != 1:
        return "unexpected exit code %d" % run.rc
    lines = run.err_lines()
    if len(lines) != 1 or not lines[0].strip():
        return "stderr has %d lines (want exactly one non-empty line): %r" % (len(lines), run.err[:300])
    return None
