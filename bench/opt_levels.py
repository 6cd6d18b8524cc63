#!/usr/bin/env python3
"""bench/opt_levels.py — what the graph optimization levels buy at run time: -O0
(one kernel per canonical node, no folding) against -O3 (fold, simplify,
horizontal fusion, layout, FuseOps) on three models, by median latency.

Usage: .venv/bin/python bench/opt_levels.py --kiln build/kiln [--repeat 5] [--warmup 1]
                                           [--threads 0] [--models NAME,...]
                                           [--model-dir build/bench-models] [--json OUT.json]

Models (written to --model-dir when missing, reused afterwards):

    resnet50      the onnx package's light ResNet-50, its placeholder weights replaced
                  by seeded, calibrated random ones (models/randomize_weights.py, as
                  scripts/run.sh does)
    mobilenetv2   MobileNetV2 1.0, 224x224 (models/gen_bench_models.py)
    bert_encoder  a 4-layer BERT-like encoder, d=256, seq 128 (models/gen_bench_models.py):
                  the model whose Q/K/V projections -O3 merges into one GEMM

Each model is timed with `kiln bench MODEL --opt-level N --json` (compiled in
process; inputs are kiln run's seeded ones; --repeat timed runs after --warmup
untimed ones; no per-kernel profiling), at -O0 and at -O3, and the table gives
both medians, the speed-up, the kernel counts and the compile times. The
kernels are slow today (naive schedules) and -O0 is slower still: a run of all
three takes many minutes, so keep --repeat small.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))

MODELS = ["resnet50", "mobilenetv2", "bert_encoder"]
LEVELS = (0, 3)


def prepare(names, folder):
    """{name: path}, generating or randomizing the missing models into folder."""
    os.makedirs(folder, exist_ok=True)
    paths = {n: os.path.join(folder, n + ".onnx") for n in names}
    if "resnet50" in names and not os.path.exists(paths["resnet50"]):
        import onnx
        import randomize_weights
        src = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx")
        print("preparing resnet50 (randomized, calibrated weights)", flush=True)
        model = onnx.load(src)
        randomize_weights.randomize_model(model, seed=0)
        onnx.save(model, paths["resnet50"])
    generated = [n for n in names if n != "resnet50" and not os.path.exists(paths[n])]
    if generated:
        import gen_bench_models
        print("generating %s" % ", ".join(generated), flush=True)
        gen_bench_models.generate(folder, generated)
    return paths


def kernels_of(kiln, path, level, folder):
    """The kernel count `kiln compile` reports (None if it fails)."""
    bundle = os.path.join(folder, "opt_levels_tmp.kiln")
    p = subprocess.run([kiln, "compile", path, "-o", bundle, "--opt-level", str(level)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    if os.path.exists(bundle):
        os.remove(bundle)
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        if line.strip().startswith("kernels:"):
            return int(line.split()[1])
    return None


def bench(args, path, level):
    """kiln bench's JSON at one level, or {"error": why}."""
    argv = [args.kiln, "bench", path, "--opt-level", str(level), "--json", "--repeat", str(args.repeat),
            "--warmup", str(args.warmup), "--profile-runs", "0", "--threads", str(args.threads)]
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "replace").strip()
    if p.returncode != 0:
        return {"error": err.splitlines()[-1] if err else "kiln bench exited with status %d" % p.returncode}
    try:
        result = json.loads(p.stdout)
    except ValueError as e:
        return {"error": "kiln bench printed no JSON object: %s" % e}
    result["bench_s"] = seconds
    return result


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="0: every online core")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "bench-models"))
    ap.add_argument("--json", default="", help="also write the results here")
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit("opt_levels.py: unknown model(s) %s (known: %s)" % (", ".join(unknown), ", ".join(MODELS)))
    paths = prepare(names, args.model_dir)
    rows = []
    for name in names:
        row = {"model": name}
        for level in LEVELS:
            print("%s -O%d ..." % (name, level), flush=True)
            r = bench(args, paths[name], level)
            r["kernels"] = kernels_of(args.kiln, paths[name], level, args.model_dir)
            row["O%d" % level] = r
            if "error" in r:
                print("  error: %s" % r["error"], flush=True)
            else:
                print("  median %.2f ms (p90 %.2f, min %.2f), %s kernels, compile %.1f s" % (
                    r["kiln_ms_median"], r["kiln_ms_p90"], r["kiln_ms_min"], r["kernels"], r.get("compile_s") or 0),
                    flush=True)
        rows.append(row)
    print()
    print("| model | -O0 ms | -O3 ms | speed-up | kernels -O0 | kernels -O3 | compile -O0 s | compile -O3 s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        a, b = row["O0"], row["O3"]
        ma, mb = a.get("kiln_ms_median"), b.get("kiln_ms_median")
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["model"], fmt(ma, ".2f"), fmt(mb, ".2f"), fmt(ma / mb if ma and mb else None, ".2f") + "x",
            fmt(a.get("kernels"), "d"), fmt(b.get("kernels"), "d"), fmt(a.get("compile_s"), ".1f"),
            fmt(b.get("compile_s"), ".1f")))
    print("\n%d timed runs after %d warm-up per model and level; threads %s" % (
        args.repeat, args.warmup, args.threads or "all cores"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"repeat": args.repeat, "warmup": args.warmup, "threads": args.threads, "models": rows}, f,
                      indent=1)
    return 1 if any("error" in row["O%d" % lv] for row in rows for lv in LEVELS) else 0


if __name__ == "__main__":
    sys.exit(main())
