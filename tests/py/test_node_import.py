"""test_node_import.py — every ONNX backend node test (onnx package,
backend/test/data/node/*/model.onnx) goes through
`kiln inspect MODEL --test-data DIR/test_data_set_0`, a few at a time.

Each run must end in one of two ways:
  - imported: exit 0 (the inspect output prints OK or MISMATCH per output; a
    MISMATCH makes inspect exit 1 with nothing on stderr, and is counted as
    "imported, shape mismatch": a converter bug, listed here, but not a failure
    of this test);
  - refused: exit 1 with exactly one non-empty line on stderr, classified as
    "unsupported op" when stdout lists unsupported ops, else "error".
Anything else fails the test: a crash (signal, exit code other than 0/1), a
sanitizer report on stderr, an empty or multi-line stderr on failure, or a run
longer than 60 s.

Prints the counts, every shape mismatch, the most common refusal reasons, every
failure, then the closing line.
"""
import collections
import concurrent.futures
import glob
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

TIMEOUT = 60
TOP = 25


def classify(kiln, model_dir):
    """(kind, detail): kind is one of imported, mismatch, unsupported, error, FAIL."""
    model = os.path.join(model_dir, "model.onnx")
    run = util.run_kiln(kiln, ["inspect", model, "--test-data", os.path.join(model_dir, "test_data_set_0")],
                        timeout=TIMEOUT)
    san = run.sanitizer_report()
    if run.timed_out or run.rc is None or run.rc < 0 or san:
        why = "sanitizer report (%s)" % san if san else run.describe()
        return "FAIL", "%s: %s" % (why, run.err.strip()[-2000:])
    info = util.parse_inspect(run.out)
    mismatches = [line for _, verdict, line in info["test_outputs"] if verdict == "MISMATCH"]
    if run.rc == 0:
        if mismatches:
            return "mismatch", "; ".join(mismatches)
        if not info["test_outputs"]:
            return "imported", "no reference outputs compared"
        return "imported", ""
    if run.rc == 1 and "test data outputs:" in run.out and mismatches:
        if run.err.strip():
            return "FAIL", "shape mismatch and a message on stderr: %r" % run.err[:300]
        return "mismatch", "; ".join(mismatches)
    why = util.clean_failure(run)
    if why:
        return "FAIL", why
    line = run.err.strip()
    if info["unsupported"]:
        ops = sorted({op for op, _ in info["unsupported_ops"]})
        return "unsupported", "%s\t%s" % (",".join(ops) or "?", line)
    return "error", line


def normalize(line, model_dir):
    """A refusal message without the model's path, names and numbers, for grouping."""
    for prefix in ("kiln inspect: ", "kiln: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
    line = line.replace(os.path.join(model_dir, "model.onnx") + ": ", "")
    line = re.sub(r"'[^']*'", "'…'", line)
    line = re.sub(r"\b\d+\b", "N", line)
    return line[:160]


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_node_import")
    root = util.onnx_data_dir("node")
    dirs = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "model.onnx")))
    if args.filter:
        dirs = [d for d in dirs if args.filter in os.path.basename(d)]
    checks.check(len(dirs) > 0, "no node tests found under %s" % root)
    workers = max(2, min(4, os.cpu_count() or 2))
    t0 = time.monotonic()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futs = {pool.submit(classify, args.kiln, d): d for d in dirs}
        for fut in concurrent.futures.as_completed(futs):
            d = futs[fut]
            results[d] = fut.result()
            if args.verbose:
                print("%-60s %s %s" % (os.path.basename(d), results[d][0], results[d][1][:200]), flush=True)
    elapsed = time.monotonic() - t0

    counts = collections.Counter(kind for kind, _ in results.values())
    print("node tests: %d in %.0f s with %d workers" % (len(dirs), elapsed, workers))
    print("  imported, shapes match:      %d" % counts["imported"])
    print("  imported, shape mismatch:    %d" % counts["mismatch"])
    print("  refused, unsupported op:     %d" % counts["unsupported"])
    print("  refused, error:              %d" % counts["error"])
    print("  FAILED (crash, sanitizer, timeout, bad stderr): %d" % counts["FAIL"])

    mism = sorted((os.path.basename(d), det) for d, (k, det) in results.items() if k == "mismatch")
    if mism:
        print("\nshape mismatches (converter bugs, not failures of this test):")
        for name, det in mism:
            print("  %-55s %s" % (name, det))

    unsup = collections.Counter()
    for d, (k, det) in results.items():
        if k == "unsupported":
            for op in det.split("\t", 1)[0].split(","):
                unsup[op] += 1
    if unsup:
        print("\nunsupported ops (tests refused because of each; %d of %d):" % (min(TOP, len(unsup)), len(unsup)))
        for op, n in unsup.most_common(TOP):
            print("  %5d  %s" % (n, op))

    errs = collections.Counter()
    example = {}
    for d, (k, det) in results.items():
        if k == "error":
            key = normalize(det, d)
            errs[key] += 1
            example.setdefault(key, os.path.basename(d))
    if errs:
        print("\nrefusal errors (%d of %d kinds; e.g. = one test showing it):" % (min(TOP, len(errs)), len(errs)))
        for key, n in errs.most_common(TOP):
            print("  %5d  %s  (e.g. %s)" % (n, key, example[key]))

    fails = sorted((os.path.basename(d), det) for d, (k, det) in results.items() if k == "FAIL")
    if fails:
        print("\nFAILURES:")
    for name, det in fails:
        print("  %s: %s" % (name, det.replace("\n", "\n      ")))
    for d in dirs:
        kind, det = results[d]
        checks.check(kind != "FAIL", "%s (details above)" % os.path.basename(d))
    checks.finish()


if __name__ == "__main__":
    main()
