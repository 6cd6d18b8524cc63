#!/usr/bin/env python3
"""bench/worklist.py — the work queue of issue 15 from the benchmarks' JSON: every shape
class and broad model over the bar (kiln / ONNX Runtime > 1.25), worst first, each with
where kiln's time goes (the top kernels of its per-kernel profile, % of peak).

Usage: .venv/bin/python bench/worklist.py [--results bench/results] [--out FILE.md] [--top 8] [--bar 1.25]

Reads RESULTS/shapes.json (bench/shapes.py) and RESULTS/broad.json (bench/models.py),
whichever exist; prints the Markdown (or writes it to --out).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def kernels_md(kernels, top):
    lines = []
    for k in (kernels or [])[:top]:
        peak = "" if k.get("pct_peak") is None else ", %.1f%% of peak" % k["pct_peak"]
        gflops = "" if not k.get("flops") else ", %.1f GFLOPS" % k.get("gflops", 0)
        lines.append("  - `%s` %.3f ms per run (%.1f%%%s%s)" % (k["name"], k["ms"], k["share"], gflops, peak))
    rest = len(kernels or []) - top
    if rest > 0:
        lines.append("  - … %d more kernels (%.1f%% of the time)" % (rest, sum(k["share"] for k in kernels[top:])))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--out", default="")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--bar", type=float, default=1.25)
    args = ap.parse_args()
    out = ["# issue 15 work queue: what is over the bar (kiln / ONNX Runtime > %.2f)" % args.bar, ""]
    found = False
    path = os.path.join(args.results, "broad.json")
    if os.path.exists(path):
        found = True
        with open(path) as f:
            data = json.load(f)
        s = data["settings"]
        out += ["## Broad models", "",
                "%s, %d threads, median of %d runs, %s. Ratios: alternating (ONNX Runtime's spinning off) and "
                "alone at the defaults (spinning on)." % (s["machine"]["cpu"], s["threads"], s["repeat"], s["date"]),
                ""]
        rows = []
        for name, r in data["models"].items():
            alt, aln = r.get("alternating") or {}, r.get("alone") or {}
            worst = max(alt.get("ratio") or 0, aln.get("ratio") or 0)
            if worst > args.bar:
                rows.append((worst, name, alt, aln))
        for worst, name, alt, aln in sorted(rows, reverse=True):
            modes = []
            if alt.get("ratio"):
                modes.append("%.2f alternating (kiln %s ms, ORT %s ms)" % (
                    alt["ratio"], fmt(alt.get("kiln_ms_median")), fmt(alt.get("ort_ms_median"))))
            if aln.get("ratio"):
                modes.append("%.2f alone (kiln %s ms, ORT %s ms)" % (aln["ratio"], fmt(aln.get("kiln_ms")),
                                                                    fmt(aln.get("ort_ms"))))
            out.append("- **%s**: ratio %s; conv %s%% / matmul %s%% of peak; generic groups: %s" % (
                name, ", ".join(modes), fmt(alt.get("conv_pct_peak"), ".1f"), fmt(alt.get("matmul_pct_peak"), ".1f"),
                fmt(alt.get("generic_groups"), "d")))
            out += kernels_md(alt.get("kernels") or aln.get("kernels"), args.top)
        if not rows:
            out.append("none")
        out.append("")
    path = os.path.join(args.results, "shapes.json")
    if os.path.exists(path):
        found = True
        with open(path) as f:
            data = json.load(f)
        s = data["settings"]
        out += ["## Shape classes", "",
                "%s, %d threads, median of %d runs, alternating, %s." % (s["machine"]["cpu"], s["threads"],
                                                                        s["repeat"], s["date"]), ""]
        rows = sorted(((r["ratio"], n, r) for n, r in data["classes"].items() if (r.get("ratio") or 0) > args.bar),
                      reverse=True)
        for ratio, name, r in rows:
            out.append("- **%s** (%s: %s): ratio %.2f (kiln %s ms, ORT %s ms)%s; generic groups: %s" % (
                name, r.get("group"), r.get("what"), ratio, fmt(r.get("kiln_ms_median"), ".3f"),
                fmt(r.get("ort_ms_median"), ".3f"),
                "" if r.get("pct_peak") is None else ", %.1f%% of peak" % r["pct_peak"],
                fmt(r.get("generic_groups"), "d")))
            out += kernels_md(r.get("kernels"), args.top)
        if not rows:
            out.append("none")
        out.append("")
    if not found:
        raise SystemExit("bench/worklist.py: neither shapes.json nor broad.json in %s" % args.results)
    text = "\n".join(out)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


def fmt(v, spec=".2f"):
    return "?" if v is None else format(v, spec)


if __name__ == "__main__":
    sys.exit(main())
