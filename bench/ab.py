#!/usr/bin/env python3
"""bench/ab.py — two builds of kiln against each other, for "did this change cost time?".

Usage: .venv/bin/python bench/ab.py --a OLD/kiln --b NEW/kiln [--models resnet50,PATH.onnx,...] [--threads 2]
                                    [--rounds 8] [--repeat 30] [--model-dir build/bench-models]

Each model (bench/run.py's set and names: resnet50, squeezenet, mobilenetv2, bert_encoder,
bert_embedding, ...) is compiled by both builds, each bundle run by its own build's
`kiln run`; then `rounds` rounds alternate A and B (A first in even rounds, B first in odd
ones), each `kiln run --repeat N` on the same seeded inputs (an entry of --models that ends in
.onnx is that file: a shape class's single-op model, say), and the median of each run's
median is reported per build with the ratio B / A and the spread of the rounds (min-max of
B/A per round), which says what "within noise" means on this machine at this moment.
Name the CPU with the numbers (it is printed first).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as bench_run  # noqa: E402  (bench/run.py: the model set and its preparation)


def median_ms(kiln, bundle, threads, repeat):
    p = subprocess.run([kiln, "run", bundle, "--threads", str(threads), "--repeat", str(repeat)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    m = re.search(r"latency: median ([0-9.]+) ms", p.stdout)
    if p.returncode != 0 or not m:
        raise SystemExit("ab: %s run %s failed: %s" % (kiln, bundle, (p.stderr or p.stdout).strip()[-300:]))
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="the reference kiln binary")
    ap.add_argument("--b", required=True, help="the kiln binary under test")
    ap.add_argument("--models", default=",".join(bench_run.MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "bench-models"))
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    # an .onnx path (a single-op model of bench/shapes.py's, say) is taken as it is
    files = {os.path.basename(n)[:-5]: n for n in names if n.endswith(".onnx")}
    names = [os.path.basename(n)[:-5] if n.endswith(".onnx") else n for n in names]
    paths = bench_run.prepare_models([n for n in names if n not in files], args.model_dir, False)
    paths.update(files)
    print("%s, %d threads, %d rounds of %d runs each, A and B alternating" %
          (bench_run.machine()["cpu"], args.threads, args.rounds, args.repeat), flush=True)
    print("| model | A ms | B ms | B / A | B / A per round |")
    print("|---|---:|---:|---:|---|")
    work = tempfile.mkdtemp(prefix="kiln-ab-")
    for name in names:
        bundles = {}
        for tag, kiln in (("a", args.a), ("b", args.b)):
            bundles[tag] = os.path.join(work, "%s-%s.kiln" % (name, tag))
            p = subprocess.run([kiln, "compile", paths[name], "-o", bundles[tag]], capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit("ab: %s compile %s failed: %s" % (kiln, name, p.stderr.strip()[-300:]))
        a_ms, b_ms, ratios = [], [], []
        for r in range(args.rounds):
            order = [("a", args.a), ("b", args.b)] if r % 2 == 0 else [("b", args.b), ("a", args.a)]
            got = {tag: median_ms(kiln, bundles[tag], args.threads, args.repeat) for tag, kiln in order}
            a_ms.append(got["a"])
            b_ms.append(got["b"])
            ratios.append(got["b"] / got["a"])
        a, b = statistics.median(a_ms), statistics.median(b_ms)
        print("| %s | %.3f | %.3f | %.3f | %.2f-%.2f |" % (name, a, b, b / a, min(ratios), max(ratios)), flush=True)


if __name__ == "__main__":
    main()
