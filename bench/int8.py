#!/usr/bin/env python3
"""bench/int8.py — quantized (int8) models: kiln against ONNX Runtime, and kiln int8
against kiln fp32 (issue 17's benchmark).

Usage: .venv/bin/python bench/int8.py --kiln build/kiln [--threads 2] [--repeat 30]
                                      [--models resnet50,mobilenetv2,bert_encoder]
                                      [--model-dir build/quant-models] [--out bench/results-int8]

The models come from models/gen_quant_models.py (ONNX Runtime's quantize_static:
QDQ, per-channel int8 weights, uint8 activations, seeded calibration), written to
--model-dir the first time, with their fp32 sources. For each model, `kiln bench
--compare onnxruntime --json` on the int8 model (kiln and ONNX Runtime alternating
in batches, same inputs and thread count) and on the fp32 model. Prints and writes
(OUT/int8.md, OUT/int8.json) a table: kiln int8 ms, ONNX Runtime int8 ms, their
ratio (the issue's bar: <= 0.8), kiln fp32 ms and the int8 speedup over it (bar:
>= 2.5x on ResNet-50 where the CPU has VNNI), with the CPU and its int8 flags.
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
sys.path.insert(0, HERE)
import gen_quant_models  # noqa: E402
import run as bench_run  # noqa: E402  (machine())


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return []
    return [x for x in flags if x in ("avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8")]


def bench(args, path):
    argv = [args.kiln, "bench", path, "--compare", "onnxruntime", "--json", "--threads", str(args.threads),
            "--repeat", str(args.repeat), "--python", args.python]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        return {"error": p.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]}
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--models", default=",".join(gen_quant_models.MODELS))
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "quant-models"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results-int8"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    args = ap.parse_args()
    names = args.models.split(",")
    paths = gen_quant_models.generate(args.model_dir, names)
    m = bench_run.machine()
    m["int8_flags"] = cpu_flags()
    rows, results = [], {"machine": m, "threads": args.threads, "date": time.strftime("%Y-%m-%d"), "models": {}}
    for name in names:
        q = bench(args, paths[name])
        f = bench(args, os.path.join(args.model_dir, name + ".onnx"))
        results["models"][name] = {"int8": q, "fp32": f}
        if "error" in q or "error" in f:
            rows.append("| %s | failed: %s |" % (name, (q.get("error") or f.get("error"))))
            continue
        rows.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx |" % (
            name, q["kiln_ms_median"], q["ort_ms_median"], q["ratio"], f["kiln_ms_median"], f["ort_ms_median"],
            f["kiln_ms_median"] / q["kiln_ms_median"]))
    table = ["CPU: %s (%d cores; int8 flags: %s), %d threads, medians of %d runs, alternating with ONNX Runtime %s"
             % (m["cpu"], m["cores"], " ".join(m["int8_flags"]) or "none", args.threads, args.repeat,
                next((r["int8"].get("ort_version") for r in results["models"].values() if "ort_version" in r["int8"]),
                     "?")),
             "",
             "| model | kiln int8 ms | ORT int8 ms | kiln/ORT int8 | kiln fp32 ms | ORT fp32 ms | int8 speedup (kiln fp32/int8) |",
             "|---|---:|---:|---:|---:|---:|---:|"] + rows
    text = "\n".join(table) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "int8.md"), "w") as fh:
        fh.write(text)
    with open(os.path.join(args.out, "int8.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
