#!/usr/bin/env python3
"""bench/run.py — kiln against ONNX Runtime on a fixed set of models.

Usage: .venv/bin/python bench/run.py --kiln build/kiln [--threads 2] [--repeat 50] [--warmup 3]
                                     [--out bench/results] [--models NAME,...] [--python PATH]
                                     [--profile-runs 5] [--model-dir build/bench-models] [--regenerate]

The model set (written to --model-dir the first time, reused afterwards; the default
folder is under build/, which git ignores: ResNet-50 alone is 100 MB):

    resnet50      the onnx package's light ResNet-50, its placeholder weights replaced by
                  seeded, calibrated random ones (models/randomize_weights.py, as
                  scripts/run.sh does)
    squeezenet    the light SqueezeNet 1.0, the same way
    mobilenetv2   MobileNetV2 1.0, 224x224 (models/gen_bench_models.py)
    bert_encoder  a 4-layer BERT-like encoder, d=256, seq 128 (models/gen_bench_models.py)

and, when named in --models: dcgan_decoder (four 4x4 stride-2 ConvTransposes) and
resnext_blocks (group-32 3x3 convs at 28x28), generated the same way, and the light
DenseNet-121 and Inception v1 (GoogLeNet), randomized like ResNet-50: channel concats
everywhere; and bert_embedding (BERT-base's embedding layer: token ids into a
30522 x 768 table, every id checked at run time).

For each model: `kiln bench MODEL --compare onnxruntime --json` (kiln and ONNX Runtime on
the same inputs and thread count, alternating batches of runs; see bench/README.md). Then:

    OUT/results.json   the machine, the settings, and every model's JSON from kiln bench
    OUT/results.md     a Markdown table: model, kiln ms, ORT ms, ratio, conv and matmul % of peak
    OUT/ratios.svg     a bar chart of the ratios (log scale, 1 = parity), written by hand

and prints the table and the geometric mean of the ratios (kiln median / ORT median:
below 1, kiln is faster). A model that fails is reported and left out of the mean.
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))

MODELS = ["resnet50", "squeezenet", "mobilenetv2", "bert_encoder"]
EXTRA = ["dcgan_decoder", "resnext_blocks", "densenet121", "inception_v1", "bert_embedding"]  # run when named in --models
LIGHT = {"resnet50": "light_resnet50", "squeezenet": "light_squeezenet", "densenet121": "light_densenet121",
         "inception_v1": "light_inception_v1"}


def light_model_path(name):
    import onnx
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", name + ".onnx")
    if not os.path.exists(path):
        raise SystemExit("bench/run.py: no light model %s in the onnx package (%s)" % (name, path))
    return path


def prepare_models(names, folder, regenerate):
    """{name: path} of each model, generated or randomized into folder when missing."""
    os.makedirs(folder, exist_ok=True)
    paths = {n: os.path.join(folder, n + ".onnx") for n in names}
    missing = [n for n in names if regenerate or not os.path.exists(paths[n])]
    if any(n in LIGHT for n in missing):
        import onnx
        import randomize_weights
        for n in missing:
            if n in LIGHT:
                print("preparing %s (randomized, calibrated weights)" % n, flush=True)
                model = onnx.load(light_model_path(LIGHT[n]))
                randomize_weights.randomize_model(model, seed=0)  # in place
                onnx.save(model, paths[n])
    generated = [n for n in missing if n not in LIGHT]
    if generated:
        import gen_bench_models
        print("generating %s" % ", ".join(generated), flush=True)
        gen_bench_models.generate(folder, generated)
    return paths


def machine():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}


def bench_one(args, path):
    """kiln bench's JSON for one model, or {"error": why}."""
    argv = [args.kiln, "bench", path, "--compare", "onnxruntime", "--json", "--threads", str(args.threads),
            "--repeat", str(args.repeat), "--warmup", str(args.warmup), "--profile-runs", str(args.profile_runs),
            "--python", args.python]
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


def run_json(argv, what):
    """The one JSON object a command prints, or {"error": why}."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    err = p.stderr.decode("utf-8", "replace").strip()
    if p.returncode != 0:
        return {"error": "%s: %s" % (what, err.splitlines()[-1] if err else "exit status %d" % p.returncode)}
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        return {"error": "%s printed no JSON object: %s" % (what, e)}


def alone(args, path, work, npz=None):
    """Each runtime by itself, the bar issue 15 states: path compiled once into work, then
    args.rounds x (`kiln bench BUNDLE --json`, then bench/ort_alone.py in a fresh process,
    ONNX Runtime at its defaults, spinning on), both on npz's inputs (None: each its own
    seeded ones); each runtime's figure the mean of its rounds' medians. kiln's per-kernel
    profile (args.profile_runs runs) comes from the first round."""
    bundle = os.path.join(work, os.path.basename(path).replace(".onnx", ".kiln"))
    p = subprocess.run([args.kiln, "compile", path, "-o", bundle], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip()
        return {"error": "kiln compile: %s" % (err.splitlines()[-1] if err else "exit %d" % p.returncode)}
    feed = ["--inputs", npz] if npz else []
    kiln_meds, ort_meds, version, kernels = [], [], None, None
    for _ in range(args.rounds):
        k = run_json([args.kiln, "bench", bundle] + feed + ["--json", "--threads", str(args.threads),
                      "--repeat", str(args.repeat), "--warmup", str(args.warmup), "--profile-runs",
                      str(args.profile_runs if kernels is None else 0)], "kiln bench (alone)")
        if "error" in k:
            return k
        kiln_meds.append(k["kiln_ms_median"])
        kernels = kernels or k.get("kernels")
        o = run_json([args.python, os.path.join(HERE, "ort_alone.py"), path] + feed + ["--threads", str(args.threads),
                      "--repeat", str(args.repeat), "--warmup", str(args.warmup), "--json"], "ort_alone.py")
        if "error" in o:
            return o
        ort_meds.append(o["ms_median"])
        version = o["version"]
    kiln_ms, ort_ms = sum(kiln_meds) / len(kiln_meds), sum(ort_meds) / len(ort_meds)
    return {"kiln_ms": kiln_ms, "ort_ms": ort_ms, "ratio": kiln_ms / ort_ms, "kiln_medians": kiln_meds,
            "ort_medians": ort_meds, "ort_version": version, "kernels": kernels}


def fmt(v, spec, missing="n/a"):
    return missing if v is None else format(v, spec)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def markdown(results, settings, gm):
    lines = ["# kiln vs ONNX Runtime", "",
             "%s; %d threads, median of %d runs after %d warm-up runs (kiln and ONNX Runtime alternating)." %
             (settings["machine"]["cpu"], settings["threads"], settings["repeat"], settings["warmup"]), "",
             "| model | kiln ms | ORT ms | ratio | conv % peak | matmul % peak | max abs diff |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        if "error" in r:
            lines.append("| %s | failed: %s | | | | | |" % (name, r["error"].replace("|", "\\|")))
            continue
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            name, fmt(r.get("kiln_ms_median"), ".2f"), fmt(r.get("ort_ms_median"), ".2f"), fmt(r.get("ratio"), ".2f"),
            fmt(r.get("conv_pct_peak"), ".1f"), fmt(r.get("matmul_pct_peak"), ".1f"),
            fmt(r.get("max_abs_diff"), ".2g")))
    lines += ["", "Geometric mean of the ratios (kiln / ORT, below 1 = kiln faster): %s" % fmt(gm, ".3f"), "",
              "Peak: %s GFLOPS (measured FMA peak per core x threads). Conv / matmul %% peak: FLOP-weighted average "
              "over the kernels named after a conv (matmul, gemm); n/a: the model has none." %
              fmt(next((r.get("peak_gflops") for r in results.values() if r.get("peak_gflops")), None), ".0f"), ""]
    return "\n".join(lines)


def esc(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_chart(results, settings, gm):
    """Horizontal bars of log(ratio) from the parity line: right = kiln slower, left = faster."""
    rows = [(n, r["ratio"]) for n, r in results.items() if r.get("ratio")]
    failed = [n for n, r in results.items() if not r.get("ratio")]
    left, width, bar, gap, top = 130, 520, 22, 12, 60
    height = top + max(1, len(rows)) * (bar + gap) + 60
    lo = min([r for _, r in rows] + [0.5]) / 1.5
    hi = max([r for _, r in rows] + [2.0]) * 1.5
    a, b = math.log10(lo), math.log10(hi)

    def x(v):
        return left + (math.log10(v) - a) / (b - a) * width

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">'
           % (left + width + 90, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="20" font-size="14" font-weight="bold">kiln / ONNX Runtime median latency (log scale)</text>'
           % left,
           '<text x="%d" y="38" fill="#555">%d threads; left of 1: kiln faster; geometric mean %s</text>'
           % (left, settings["threads"], fmt(gm, ".2f"))]
    ticks = [m * 10 ** e for e in range(math.floor(a) - 1, math.ceil(b) + 1) for m in (1, 2, 5)]
    axis_y = top + len(rows) * (bar + gap)
    for t in ticks:
        if lo <= t <= hi:
            out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x(t), top - 6, x(t), axis_y))
            out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g</text>' % (x(t), axis_y + 16, t))
    for i, (name, ratio) in enumerate(rows):
        y = top + i * (bar + gap)
        x0, x1 = sorted((x(1.0), x(ratio)))
        color = "#2e7d32" if ratio < 1 else "#c62828"
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 8, y + bar * 0.7, esc(name)))
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>' % (x0, y, max(x1 - x0, 1), bar, color))
        anchor, tx = ("start", x1 + 4) if ratio >= 1 else ("end", x0 - 4)
        out.append('<text x="%.1f" y="%d" text-anchor="%s">%.2fx</text>' % (tx, y + bar * 0.7, anchor, ratio))
    out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-width="1.5"/>'
               % (x(1.0), top - 8, x(1.0), axis_y))
    if failed:
        out.append('<text x="%d" y="%d" fill="#c62828">failed: %s</text>' % (left, axis_y + 40, esc(", ".join(failed))))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile-runs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of " + ", ".join(MODELS + EXTRA) + " (default: the first four)")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs onnxruntime (default: this one)")
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "bench-models"),
                    help="where the model files are written and reused")
    ap.add_argument("--regenerate", action="store_true", help="rebuild the model files even if present")
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS + EXTRA]
    if unknown:
        ap.error("unknown model(s) %s; the set is %s" % (", ".join(unknown), ", ".join(MODELS + EXTRA)))
    if not os.access(args.kiln, os.X_OK):
        ap.error("no kiln binary at %s (build it, or pass --kiln)" % args.kiln)
    paths = prepare_models(names, args.model_dir, args.regenerate)

    results = {}
    for name in names:
        print("%-14s ..." % name, end="", flush=True)
        r = results[name] = bench_one(args, paths[name])
        if "error" in r:
            print(" failed: %s" % r["error"], flush=True)
            continue
        print(" kiln %s ms, ORT %s ms, ratio %s (%.0f s)" % (fmt(r.get("kiln_ms_median"), ".2f"),
                                                             fmt(r.get("ort_ms_median"), ".2f"),
                                                             fmt(r.get("ratio"), ".2f"), r["bench_s"]), flush=True)
        for w in r.get("warnings", []):
            print("    %s" % w, flush=True)
    gm = geomean([r["ratio"] for r in results.values() if r.get("ratio")])
    settings = {"threads": args.threads, "repeat": args.repeat, "warmup": args.warmup,
                "profile_runs": args.profile_runs, "machine": machine(),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "kiln": subprocess.run([args.kiln, "--version"], stdout=subprocess.PIPE).stdout.decode().strip()}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"settings": settings, "geomean_ratio": gm, "models": results}, f, indent=1)
        f.write("\n")
    md = markdown(results, settings, gm)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "ratios.svg"), "w") as f:
        f.write(svg_chart(results, settings, gm))
    print()
    print(md)
    print("geometric mean ratio (kiln / ORT): %s" % fmt(gm, ".3f"))
    print("wrote %s/results.json, results.md, ratios.svg" % args.out)
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
