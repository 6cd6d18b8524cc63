#!/usr/bin/env python3
"""bench/shapes.py — kiln against ONNX Runtime, one shape class at a time (issue 15).

Usage: .venv/bin/python bench/shapes.py --kiln build/kiln [--classes NAME,GROUP,PATTERN,...] [--threads 2]
                                        [--repeat 30] [--warmup 3] [--profile-runs 5] [--out bench/results]
                                        [--model-dir build/shape-models] [--regenerate] [--python PATH] [--quiet-wait S]
                                        [--list]
       make bench-shapes [SHAPES_ARGS="--classes conv1d,matmul"]

Every class is a single-op (or tiny) model written by models/gen_shape_models.py (the
classes, their groups and what each is: `--list`). For each: `kiln bench MODEL --compare
onnxruntime --json` — kiln and ONNX Runtime (its workers' spinning off) on the same seeded
inputs and thread count, alternating in batches of 5 (bench/README.md) — then

    OUT/shapes.json   the machine, the settings, and every class's JSON from kiln bench
    OUT/shapes.md     a Markdown table: class, group, kiln ms, ORT ms, ratio, GFLOPS, % of
                      peak (kiln bench's measured per-core FMA peak x threads; conv, conv1d,
                      dwconv, deconv and matmul classes only; the model's time, its
                      relayouts included), the conv and matmul kernels' own % of peak and
                      GB/s (kiln's profile, FLOP-weighted), the working set (inputs,
                      weights and outputs, MB) and whether it fits the L2 caches, the
                      number of groups on the generic schedule (where kiln reports it),
                      the max abs diff against ONNX Runtime; then the geometric mean of
                      the ratios, per group and over all, and the classes over the bar
                      (ratio > 1.25) with where their time goes (the top kernels), and
                      the conv and matmul classes that fit L2 whose kernels run below 30%
                      of peak

--alone also times each runtime by itself, as bench/models.py's "alone" mode does: the
class compiled once, then --rounds rounds of `kiln bench BUNDLE --json` (kiln alone, its
own seeded inputs) and bench/ort_alone.py (ONNX Runtime alone in a fresh process, default
session options, spinning on); each figure the mean of its rounds' medians. Alternating
batches put every kiln batch right after ONNX Runtime's, when kiln's workers resume from
sleep, which on a VM can cost a sub-millisecond class up to 2x; alone, each runtime's
warm median is what a caller running the model back to back sees. The table then gets
"kiln alone", "ORT alone" and "ratio alone" columns and a second geometric mean.

--classes takes class names, group names (conv1d, conv, dwconv, deconv, matmul, pool,
norm, resize, movement), `issue` (the classes of issue 15's table) or shell patterns.
A class that fails is shown as failed and left out of the means; the script then exits 1.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import run as bench_run  # noqa: E402  (bench_one, machine, fmt, geomean)
import quiet  # noqa: E402
import gen_shape_models  # noqa: E402

BAR = 1.25  # issue 15: every class at kiln / ORT <= 1.25
LOW_PEAK = 30  # issue 15: no conv or matmul class below 30% of peak where it fits the cache
FLOP_GROUPS = ("conv1d", "conv", "dwconv", "deconv", "matmul")


def l2_bytes(threads):
    """The L2 capacity the threads can use (per-core L2 x threads), from sysfs; None if unknown."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            text = f.read().strip()
    except OSError:
        return None
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    try:
        size = int(text.rstrip("KMGkmg")) * mult
    except ValueError:
        return None
    return size * max(1, threads)


def working_set(path):
    """Bytes of a model's inputs, initializers and outputs (float32 unless declared)."""
    import onnx
    m = onnx.load(path)
    total = sum(onnx.numpy_helper.to_array(t).nbytes for t in m.graph.initializer)
    for vi in list(m.graph.input) + list(m.graph.output):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if dims and all(d > 0 for d in dims):
            total += 4 * math.prod(dims)
    return total


def pct_peak(r, group):
    if group not in FLOP_GROUPS or not r.get("flops") or not r.get("peak_gflops") or not r.get("kiln_ms_median"):
        return None
    return 100.0 * r["flops"] / (r["kiln_ms_median"] * 1e6) / r["peak_gflops"]


def kernel_pct_peak(r):
    """The FLOP-weighted % of peak of the kernels that carry the class's FLOPs (its convs and
    matmuls, from kiln's profile), without the relayouts around them that a single-op model
    pays and a whole model amortizes; and those kernels' bytes per second over the class's
    working set (inputs, weights, outputs once), GB/s."""
    ks = [k for k in (r.get("kernels") or []) if k.get("flops")]
    ms = sum(k["ms"] for k in ks)
    if not ks or not ms or not r.get("peak_gflops"):
        return None, None
    pct = 100.0 * sum(k["flops"] for k in ks) / (ms * 1e6) / r["peak_gflops"]
    ws = r.get("working_set_bytes")
    return pct, (ws / (ms * 1e6) if ws else None)


def top_kernels(r, n=3):
    """'k0_conv 12.48 ms (100%, 0.5% peak); …' — where kiln's time goes."""
    parts = []
    for k in (r.get("kernels") or [])[:n]:
        peak = "" if k.get("pct_peak") is None else ", %.1f%% peak" % k["pct_peak"]
        parts.append("%s %.3f ms (%.0f%%%s)" % (k["name"], k["ms"], k["share"], peak))
    return "; ".join(parts)


def markdown(classes, results, settings, gms):
    lines = ["# kiln vs ONNX Runtime, by shape class", "",
             "%s; %d threads, median of %d runs after %d warm-up runs (kiln and ONNX Runtime alternating, "
             "ONNX Runtime's spinning off); %s." % (settings["machine"]["cpu"], settings["threads"],
                                                    settings["repeat"], settings["warmup"], settings["date"]), "",
             "| class | group | kiln ms | ORT ms | ratio | GFLOPS | % peak | kernel % peak | kernel GB/s | MB | fits L2 | generic | max abs diff |" +
             (" kiln alone | ORT alone | ratio alone |" if settings.get("alone") else ""),
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|:-:|---:|---:|" + ("---:|---:|---:|" if settings.get("alone") else "")]
    for c in classes:
        r = results[c.name]
        if "error" in r:
            lines.append("| %s | %s | failed: %s | | | | | | | | | | |" % (c.name, c.group, r["error"].replace("|", "\\|")))
            continue
        ratio = r.get("ratio")
        mark = "**%.2f**" % ratio if ratio is not None and ratio > BAR else bench_run.fmt(ratio, ".2f")
        gflops = r["flops"] / (r["kiln_ms_median"] * 1e6) if c.group in FLOP_GROUPS and r.get("flops") else None
        ws = r.get("working_set_bytes")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c.name, c.group, bench_run.fmt(r.get("kiln_ms_median"), ".3f"), bench_run.fmt(r.get("ort_ms_median"), ".3f"),
            mark, bench_run.fmt(gflops, ".1f", ""), bench_run.fmt(r.get("pct_peak"), ".1f", ""),
            bench_run.fmt(r.get("kernel_pct_peak"), ".1f", ""), bench_run.fmt(r.get("kernel_gbps"), ".0f", ""),
            bench_run.fmt(ws / 1e6 if ws else None, ".2f", ""),
            {True: "yes", False: "no", None: ""}[r.get("fits_l2")],
            bench_run.fmt(r.get("generic_groups"), "d", "?"), bench_run.fmt(r.get("max_abs_diff"), ".2g")))
        if settings.get("alone"):
            a = r.get("alone") or {}
            ra = a.get("ratio")
            lines[-1] += " %s | %s | %s |" % (bench_run.fmt(a.get("kiln_ms"), ".3f", a.get("error", "")),
                                              bench_run.fmt(a.get("ort_ms"), ".3f", ""),
                                              "**%.2f**" % ra if ra is not None and ra > BAR else bench_run.fmt(ra, ".2f", ""))
    lines += ["", "Geometric mean of the ratios (kiln / ORT, below 1 = kiln faster): **%s** over %d classes" %
              (bench_run.fmt(gms.get("all"), ".3f"), sum(1 for r in results.values() if r.get("ratio"))), ""]
    per_group = ["%s %s" % (g, bench_run.fmt(gms[g], ".2f")) for g in gen_shape_models.GROUPS if g in gms]
    lines += ["By group: " + ", ".join(per_group) + ".", ""]
    if settings.get("alone"):
        al = [r["alone"]["ratio"] for r in results.values() if (r.get("alone") or {}).get("ratio")]
        over_alone = [c.name for c in classes if ((results[c.name].get("alone") or {}).get("ratio") or 0) > BAR]
        lines += ["Each runtime alone (mean of %d rounds' medians): geometric mean **%s** over %d classes; over the bar: %s." % (
            settings["rounds"], bench_run.fmt(bench_run.geomean(al) if al else None, ".3f"), len(al),
            ", ".join(over_alone) if over_alone else "none"), ""]
    low = [c for c in classes if c.group in FLOP_GROUPS and results[c.name].get("fits_l2")
           and results[c.name].get("kernel_pct_peak") is not None and results[c.name]["kernel_pct_peak"] < LOW_PEAK]
    lines += ["Conv and matmul classes that fit L2 with their kernels below %d%% of peak: %s." % (
        LOW_PEAK, ", ".join("`%s` %.1f%% (%.0f GB/s)" % (c.name, results[c.name]["kernel_pct_peak"],
                                                        results[c.name].get("kernel_gbps") or 0) for c in low)
        if low else "none"), ""]
    over = [c for c in classes if (results[c.name].get("ratio") or 0) > BAR]
    if over:
        lines += ["Over the bar (ratio > %.2f), with where kiln's time goes:" % BAR, ""]
        for c in over:
            r = results[c.name]
            lines.append("- `%s` (%s, ratio %.2f): %s" % (c.name, c.what, r["ratio"], top_kernels(r)))
        lines.append("")
    if settings.get("not_quiet"):
        lines += ["Measured without a quiet machine (other processes > 15%% busy before): %s." %
                  ", ".join(settings["not_quiet"]), ""]
    lines += ["Peak: %s GFLOPS (measured FMA peak per core x threads). GFLOPS and %% peak only where the FLOPs are "
              "a conv's or a matmul's (%% peak: the whole single-op model's time, its relayouts in and out included; kernel %% "
              "peak and GB/s: the conv and matmul kernels alone, FLOP-weighted, GB/s their time over MB); MB: inputs + weights + outputs; fits L2: MB <= %s MB (L2 per core x threads); "
              "generic: groups on the generic (non-template) schedule, `?` where this kiln does not report it." %
              (bench_run.fmt(next((r.get("peak_gflops") for r in results.values() if r.get("peak_gflops")), None), ".0f"),
               bench_run.fmt(settings["l2_bytes"] / 1e6 if settings.get("l2_bytes") else None, ".1f")), ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--classes", default="", help="class names, groups, 'issue' or patterns (default: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile-runs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--python", default=sys.executable, help="the Python that runs onnxruntime (default: this one)")
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "shape-models"))
    ap.add_argument("--regenerate", action="store_true", help="rebuild the model files even if present")
    ap.add_argument("--quiet-wait", type=float, default=0, metavar="S",
                    help="before each class, wait up to S seconds for the machine to be quiet (at most 15%% busy "
                         "over two 2-second windows); the busy %% is recorded (default 0: no wait)")
    ap.add_argument("--list", action="store_true", help="list the selected classes and exit")
    ap.add_argument("--alone", action="store_true", help="also time each runtime by itself (see above)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the --alone timing (default 2)")
    args = ap.parse_args()
    try:
        classes = gen_shape_models.select(args.classes)
    except ValueError as e:
        ap.error(str(e))
    if args.list:
        for c in classes:
            print("%-30s %-9s %s" % (c.name, c.group, c.what))
        return 0
    if not os.access(args.kiln, os.X_OK):
        ap.error("no kiln binary at %s (build it, or pass --kiln)" % args.kiln)
    paths = gen_shape_models.generate(args.model_dir, classes, args.regenerate)
    l2 = l2_bytes(args.threads)

    os.makedirs(args.out, exist_ok=True)
    results = {}
    for c in classes:
        print("%-30s ..." % c.name, end="", flush=True)
        calm, busy = quiet.wait_quiet(args.quiet_wait)
        r = results[c.name] = bench_run.bench_one(args, paths[c.name])
        r["quiet"], r["busy_pct_before"] = calm, busy
        r["group"] = c.group
        r["what"] = c.what
        if "error" in r:
            print(" failed: %s" % r["error"], flush=True)
            continue
        if args.alone:
            r["alone"] = bench_run.alone(args, paths[c.name], args.out)
        r["pct_peak"] = pct_peak(r, c.group)
        r["working_set_bytes"] = working_set(paths[c.name])
        r["fits_l2"] = None if l2 is None else r["working_set_bytes"] <= l2
        r["kernel_pct_peak"], r["kernel_gbps"] = kernel_pct_peak(r) if c.group in FLOP_GROUPS else (None, None)
        print(" kiln %s ms, ORT %s ms, ratio %s%s%s" % (
            bench_run.fmt(r.get("kiln_ms_median"), ".3f"), bench_run.fmt(r.get("ort_ms_median"), ".3f"),
            bench_run.fmt(r.get("ratio"), ".2f"),
            "" if r["pct_peak"] is None else ", %.1f%% of peak" % r["pct_peak"],
            "" if calm is None else " (%s, %.0f%% busy before)" % ("quiet" if calm else "NOT quiet", busy)), flush=True)
        for w in r.get("warnings", []):
            print("    %s" % w, flush=True)
    gms = {"all": bench_run.geomean([r["ratio"] for r in results.values() if r.get("ratio")])}
    for g in gen_shape_models.GROUPS:
        vals = [results[c.name]["ratio"] for c in classes if c.group == g and results[c.name].get("ratio")]
        if vals:
            gms[g] = bench_run.geomean(vals)
    settings = {"threads": args.threads, "repeat": args.repeat, "warmup": args.warmup,
                "profile_runs": args.profile_runs, "machine": bench_run.machine(), "l2_bytes": l2,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "kiln": subprocess.run([args.kiln, "--version"], stdout=subprocess.PIPE).stdout.decode().strip(),
                "bar": BAR, "quiet_wait": args.quiet_wait, "alone": args.alone, "rounds": args.rounds,
                "not_quiet": [n for n, r in results.items() if r.get("quiet") is False]}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "shapes.json"), "w") as f:
        json.dump({"settings": settings, "geomean_ratio": gms, "classes": results}, f, indent=1)
        f.write("\n")
    md = markdown(classes, results, settings, gms)
    with open(os.path.join(args.out, "shapes.md"), "w") as f:
        f.write(md)
    print()
    print(md)
    print("wrote %s/shapes.json, shapes.md" % args.out)
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
