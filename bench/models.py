#!/usr/bin/env python3
"""bench/models.py — kiln against ONNX Runtime on the broad model set (issue 15).

Usage: .venv/bin/python bench/models.py --kiln build/kiln [--models NAME,...] [--mode both|alternating|alone]
                                        [--threads 2] [--repeat 30] [--warmup 3] [--rounds 2] [--profile-runs 5]
                                        [--out bench/results] [--model-dir build/broad-models] [--regenerate]
                                        [--python PATH] [--quiet-wait S] [--list]
       make bench-broad [BROAD_ARGS="--models resnet18,vit --mode alone"]

The sixteen architectures of models/gen_broad_models.py (`--list`): ResNet-18,
MobileNetV2, SqueezeNet 1.1, EfficientNet-B0, a UNet, a BERT-like encoder, a DCGAN
generator, ShuffleNetV2, the DQN Atari net, a ViT (197 tokens), a GPT-style decoder, an
LSTM language model, an audio front end (STFT conv + Conv1d stack), a YOLO-style
detector, a DeepLab-style segmentation net, a CRNN. Batch 1, --threads threads (2).
Every model gets one set of seeded inputs (floats uniform in [-1, 1), the distribution
its BatchNormalizations were calibrated on; token ids over the vocabulary), written to
an .npz that both runtimes read.

Two ways of timing, both by default (--mode):

  alternating  `kiln bench MODEL --inputs FILE.npz --compare onnxruntime --json`: kiln and
               ONNX Runtime (its workers' spinning off) alternating in batches of 5 in one
               run (bench/README.md) — what `make bench` measures. Also the per-kernel
               profile, % of peak, the generic-schedule count and the outputs' max abs diff.
  alone        each runtime by itself at its defaults, the bar issue 15 states: the model
               compiled once (`kiln compile`), then --rounds rounds of `kiln bench
               BUNDLE --json` (kiln alone) followed by bench/ort_alone.py (ONNX Runtime alone
               in a fresh process, default session options, spinning on); each runtime's
               figure is the mean of its rounds' medians (the README's "alone" columns were
               measured that way).

Outputs in --out: broad.json (the settings, the machine, every model's results) and
broad.md: per model the alternating kiln ms, ORT ms and ratio, the alone kiln ms, ORT ms
and ratio, conv and matmul % of peak, the generic-schedule count; the geometric mean of
each ratio column; the models over the bar (ratio > 1.25 in either mode) with the top
kernels of kiln's per-kernel profile. A model that fails is shown as failed and left out
of the means; the script then exits 1.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import run as bench_run  # noqa: E402  (bench_one, machine, fmt, geomean)
import quiet  # noqa: E402
import gen_broad_models  # noqa: E402

BAR = 1.25
SEED = 42


def write_inputs(name, path, out):
    """Seeded inputs for one model, saved as an .npz both runtimes read."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(SEED)
    ranges = gen_broad_models.INPUT_RANGES.get(name, {})
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.dtype(dtype).kind == "f":
            feeds[vi.name] = rng.uniform(-1, 1, shape).astype(dtype)
        else:
            lo, hi = ranges.get(vi.name, (0, 10))
            feeds[vi.name] = rng.integers(lo, hi, shape).astype(dtype)
    np.savez(out, **feeds)
    return out


def bench_with_inputs(args, path, npz):
    argv = [args.kiln, "bench", path, "--inputs", npz, "--compare", "onnxruntime", "--json", "--threads",
            str(args.threads), "--repeat", str(args.repeat), "--warmup", str(args.warmup), "--profile-runs",
            str(args.profile_runs), "--python", args.python]
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "replace").strip()
    if p.returncode != 0:
        return {"error": err.splitlines()[-1] if err else "kiln bench exited with status %d" % p.returncode,
                "bench_s": seconds}
    try:
        result = json.loads(p.stdout)
    except ValueError as e:
        return {"error": "kiln bench printed no JSON object: %s" % e, "bench_s": seconds}
    result["bench_s"] = seconds
    result["warnings"] = [l for l in err.splitlines() if l.startswith("kiln bench:")]
    return result


def top_kernels(kernels, n=5):
    parts = []
    for k in (kernels or [])[:n]:
        peak = "" if k.get("pct_peak") is None else ", %.1f%% peak" % k["pct_peak"]
        parts.append("%s %.3f ms (%.0f%%%s)" % (k["name"], k["ms"], k["share"], peak))
    return "; ".join(parts)


def markdown(names, results, settings, gms):
    f = bench_run.fmt
    lines = ["# kiln vs ONNX Runtime, broad model set", "",
             "%s; %d threads, batch 1, median of %d runs after %d warm-up runs; %s." % (
                 settings["machine"]["cpu"], settings["threads"], settings["repeat"], settings["warmup"],
                 settings["date"]),
             "Alternating: kiln and ONNX Runtime in one run, ONNX Runtime's spinning off (`make bench`'s way). "
             "Alone: each runtime by itself at its defaults (ONNX Runtime spinning), mean of %d rounds' medians." %
             settings["rounds"], "",
             "| model | kiln ms | ORT ms | ratio | kiln alone | ORT alone | ratio alone | conv % peak | "
             "matmul % peak | generic | max abs diff |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def ratio_cell(v):
        return "**%.2f**" % v if v is not None and v > BAR else f(v, ".2f")

    for name in names:
        r = results[name]
        alt, aln = r.get("alternating") or {}, r.get("alone") or {}
        errors = ["%s failed: %s" % (m, (r.get(m) or {})["error"].replace("|", "\\|"))
                  for m in ("alternating", "alone") if "error" in (r.get(m) or {})]
        if errors:
            lines.append("| %s | %s | | | | | | | | | |" % (name, "; ".join(errors)))
            continue
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, f(alt.get("kiln_ms_median"), ".2f", ""), f(alt.get("ort_ms_median"), ".2f", ""),
            ratio_cell(alt.get("ratio")), f(aln.get("kiln_ms"), ".2f", ""), f(aln.get("ort_ms"), ".2f", ""),
            ratio_cell(aln.get("ratio")), f(alt.get("conv_pct_peak"), ".1f"), f(alt.get("matmul_pct_peak"), ".1f"),
            f(alt.get("generic_groups"), "d", "?" if alt else ""), f(alt.get("max_abs_diff"), ".2g", "")))
    lines.append("| geometric mean | | | **%s** | | | **%s** | | | | |" % (f(gms.get("alternating"), ".3f"),
                                                                       f(gms.get("alone"), ".3f")))
    lines.append("")
    over = [n for n in names if any((results[n].get(m) or {}).get("ratio", 0) > BAR for m in ("alternating", "alone"))]
    if over:
        lines += ["Over the bar (ratio > %.2f in either mode), with where kiln's time goes (per-kernel profile, "
                  "median of the profiled runs):" % BAR, ""]
        for n in over:
            alt, aln = results[n].get("alternating") or {}, results[n].get("alone") or {}
            lines.append("- `%s` (%s; ratio %s alternating, %s alone): %s" % (
                n, gen_broad_models.MODELS[n][0], f(alt.get("ratio"), ".2f"), f(aln.get("ratio"), ".2f"),
                top_kernels(alt.get("kernels") or aln.get("kernels"))))
        lines.append("")
    if settings.get("not_quiet"):
        lines += ["Measured without a quiet machine (other processes > 15%% busy before): %s." %
                  ", ".join(settings["not_quiet"]), ""]
    lines += ["generic: groups on the generic (non-template) schedule as `kiln bench` reports them (`?`: this kiln "
              "does not report it). Conv / matmul %% peak: FLOP-weighted over the kernels named after a conv "
              "(matmul, gemm), against the measured peak (%s GFLOPS)." %
              f(next((r["alternating"].get("peak_gflops") for r in results.values()
                      if (r.get("alternating") or {}).get("peak_gflops")), None), ".0f"), ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--models", default="", help="comma-separated subset (default: all sixteen)")
    ap.add_argument("--mode", choices=["both", "alternating", "alone"], default="both")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2, help="alone mode: rounds of kiln then ONNX Runtime")
    ap.add_argument("--profile-runs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--python", default=sys.executable, help="the Python that runs onnxruntime (default: this one)")
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "broad-models"))
    ap.add_argument("--regenerate", action="store_true", help="rebuild the model files even if present")
    ap.add_argument("--quiet-wait", type=float, default=0, metavar="S",
                    help="before each model, wait up to S seconds for the machine to be quiet (at most 15%% busy "
                         "over two 2-second windows); the busy %% is recorded (default 0: no wait)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for name, (what, _) in gen_broad_models.MODELS.items():
            print("%-16s %s" % (name, what))
        return 0
    names = [n for n in args.models.split(",") if n] or list(gen_broad_models.MODELS)
    unknown = [n for n in names if n not in gen_broad_models.MODELS]
    if unknown:
        ap.error("unknown model(s) %s; the set is %s" % (", ".join(unknown), ", ".join(gen_broad_models.MODELS)))
    if not os.access(args.kiln, os.X_OK):
        ap.error("no kiln binary at %s (build it, or pass --kiln)" % args.kiln)
    print("preparing %d models in %s" % (len(names), args.model_dir), flush=True)
    paths = gen_broad_models.generate(args.model_dir, names, regenerate=args.regenerate)
    work = tempfile.mkdtemp(prefix="kiln-broad-")
    results = {}
    try:
        for name in names:
            npz = write_inputs(name, paths[name], os.path.join(work, name + "_inputs.npz"))
            r = results[name] = {}
            print("%-16s ..." % name, end="", flush=True)
            r["quiet"], r["busy_pct_before"] = quiet.wait_quiet(args.quiet_wait)
            if args.mode in ("both", "alternating"):
                r["alternating"] = bench_with_inputs(args, paths[name], npz)
                a = r["alternating"]
                print(" alternating: %s" % (a["error"] if "error" in a else "kiln %.2f ms, ORT %.2f ms, ratio %.2f" % (
                    a["kiln_ms_median"], a["ort_ms_median"], a["ratio"])), end="", flush=True)
                for w in a.get("warnings", []):
                    print("\n    %s" % w, end="", flush=True)
            if args.mode in ("both", "alone"):
                if args.mode == "both":
                    calm, busy = quiet.wait_quiet(args.quiet_wait)
                    r["quiet"] = None if calm is None else bool(r["quiet"] and calm)
                r["alone"] = bench_run.alone(args, paths[name], work, npz)
                a = r["alone"]
                print(" alone: %s" % (a["error"] if "error" in a else "kiln %.2f ms, ORT %.2f ms, ratio %.2f" % (
                    a["kiln_ms"], a["ort_ms"], a["ratio"])), end="", flush=True)
            if r["quiet"] is False:
                print(" (NOT quiet: %.0f%% busy before)" % r["busy_pct_before"], end="")
            print(flush=True)
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    gms = {}
    for mode in ("alternating", "alone"):
        vals = [r[mode]["ratio"] for r in results.values() if (r.get(mode) or {}).get("ratio")]
        if vals:
            gms[mode] = bench_run.geomean(vals)
    settings = {"threads": args.threads, "repeat": args.repeat, "warmup": args.warmup, "rounds": args.rounds,
                "mode": args.mode, "profile_runs": args.profile_runs, "machine": bench_run.machine(),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "kiln": subprocess.run([args.kiln, "--version"], stdout=subprocess.PIPE).stdout.decode().strip(),
                "bar": BAR, "quiet_wait": args.quiet_wait,
                "not_quiet": [n for n, r in results.items() if r.get("quiet") is False]}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "broad.json"), "w") as fh:
        json.dump({"settings": settings, "geomean_ratio": gms, "models": results}, fh, indent=1)
        fh.write("\n")
    md = markdown(names, results, settings, gms)
    with open(os.path.join(args.out, "broad.md"), "w") as fh:
        fh.write(md)
    print()
    print(md)
    print("wrote %s/broad.json, broad.md" % args.out)
    failed = any("error" in (r.get(m) or {}) for r in results.values() for m in ("alternating", "alone"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
