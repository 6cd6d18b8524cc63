#!/usr/bin/env python3
"""bench/idle.py — the first run after idle (issue 15, item 5): kiln and ONNX Runtime with
N ms of sleep before every run, against back-to-back (warm) runs.

Usage: .venv/bin/python bench/idle.py [--build build] [--model PATH.onnx] [--idle-ms 0,1,5,20] [--threads 2]
                                      [--runs 40] [--rounds 3] [--python PATH] [--json FILE] [--spin-us 50000]

The use case: a wake-word or voice-activity model invoked once per audio chunk, the
process idle in between. The model defaults to the BERT-like encoder of bench/run.py
(models/gen_bench_models.py, in build/bench-models). kiln runs through bench/idle_run.c
(built here with the host cc against BUILD/libkiln_runtime.a), which sleeps --idle-ms
before each timed kiln_model_run; ONNX Runtime through bench/ort_alone.py --idle-ms, once
with its workers' spinning off (as `kiln bench --compare` runs it) and once at its default
(spinning on). The runtimes take turns for --rounds rounds; each figure is the median of
all its runs. Also `idle_run wake`: what waking kiln's thread pool costs by itself — the
time from a parallel_for's publish to a worker running its chunk, after the same idle
times, and how often the caller ran the sleeping worker's chunk itself — and kiln on one
thread (no pool to wake), which separates the pool's cost from the CPU's (caches,
frequency, the hypervisor descheduling an idle vCPU), and kiln with its idle workers
spinning --spin-us (kiln_model_set_spin_us: ONNX Runtime's allow_spinning trade-off).

Prints a Markdown table: runtime, then per idle time the median ms and its ratio to the
warm median. Name the CPU and the load with the numbers (it prints both).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as bench_run  # noqa: E402


def build_driver(build, out):
    lib = os.path.join(build, "libkiln_runtime.a")
    if not os.path.exists(lib):
        raise SystemExit("bench/idle.py: no %s (build kiln first, or pass --build)" % lib)
    libs = subprocess.run(["pkg-config", "--libs", "libarchive", "libcjson", "zlib"], stdout=subprocess.PIPE,
                          check=True).stdout.decode().split()
    cmd = ["cc", "-O2", "-std=c11", "-D_GNU_SOURCE", "-I", os.path.join(ROOT, "runtime"),
           os.path.join(HERE, "idle_run.c"), lib] + libs + ["-ldl", "-lm", "-lpthread", "-o", out]
    subprocess.run(cmd, check=True)
    return out


def kiln_times(driver, bundle, threads, runs, idle_ms, spin_us=-1):
    p = subprocess.run([driver, "run", bundle, "--threads", str(threads), "--runs", str(runs), "--idle-us",
                        str(int(idle_ms * 1000)), "--spin-us", str(spin_us)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("bench/idle.py: idle_run failed: %s" % p.stderr.strip())
    return [float(t) / 1e3 for t in p.stdout.split()[1:]]


def ort_times(python, model, threads, runs, idle_ms, spin):
    argv = [python, os.path.join(HERE, "ort_alone.py"), model, "--threads", str(threads), "--repeat", str(runs),
            "--idle-ms", str(idle_ms), "--json"] + ([] if spin else ["--no-spin"])
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("bench/idle.py: ort_alone.py failed: %s" % p.stderr.strip()[-300:])
    return json.loads(p.stdout)["times"]


def wake_probe(driver, threads, runs, idle_ms):
    p = subprocess.run([driver, "wake", "--threads", str(threads), "--runs", str(runs), "--idle-us",
                        str(int(idle_ms * 1000))], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("bench/idle.py: idle_run wake failed: %s" % p.stderr.strip())
    lines = {l.split()[0]: l.split()[1:] for l in p.stdout.splitlines() if l.strip()}
    wake = [float(v) for v in lines["wake_us"]]
    return {"wake_us": wake, "call_us": [float(v) for v in lines["call_us"]], "stolen": int(lines["stolen"][0])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default="", help="an .onnx model (default: the BERT-like encoder)")
    ap.add_argument("--idle-ms", default="0,1,5,20", help="comma-separated idle times; 0 is the warm baseline")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", default="", help="also write every sample to this file")
    ap.add_argument("--no-ort", action="store_true", help="kiln only")
    ap.add_argument("--spin-us", type=int, default=50000,
                    help="also time kiln with its idle workers spinning this long (kiln_model_set_spin_us; 0: no row)")
    args = ap.parse_args()
    idles = [float(v) for v in args.idle_ms.split(",")]
    if 0.0 not in idles:
        idles = [0.0] + idles
    kiln = os.path.join(args.build, "kiln")
    model = args.model or bench_run.prepare_models(["bert_encoder"], os.path.join(ROOT, "build", "bench-models"),
                                                   False)["bert_encoder"]
    work = tempfile.mkdtemp(prefix="kiln-idle-")
    driver = build_driver(args.build, os.path.join(work, "idle_run"))
    bundle = os.path.join(work, "model.kiln")
    subprocess.run([kiln, "compile", model, "-o", bundle], check=True, stdout=subprocess.DEVNULL)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print("%s, %d threads, %s; load average %s before; %d rounds of %d runs per setting" % (
        bench_run.machine()["cpu"], args.threads, os.path.basename(model), " ".join(load), args.rounds, args.runs),
        flush=True)
    rows = [("kiln", lambda ms: kiln_times(driver, bundle, args.threads, args.runs, ms)),
            ("kiln, 1 thread", lambda ms: kiln_times(driver, bundle, 1, args.runs, ms))]
    if args.spin_us > 0:
        rows.insert(1, ("kiln, spinning %g ms" % (args.spin_us / 1000),
                        lambda ms: kiln_times(driver, bundle, args.threads, args.runs, ms, args.spin_us)))
    if not args.no_ort:
        rows += [("ONNX Runtime, spinning off", lambda ms: ort_times(args.python, model, args.threads, args.runs, ms, False)),
                 ("ONNX Runtime, spinning on (default)",
                  lambda ms: ort_times(args.python, model, args.threads, args.runs, ms, True))]
    samples = {name: {ms: [] for ms in idles} for name, _ in rows}
    wake = {ms: {"wake_us": [], "call_us": [], "stolen": 0, "calls": 0} for ms in idles}
    for r in range(args.rounds):
        for ms in idles:
            for name, fn in (rows if r % 2 == 0 else rows[::-1]):
                samples[name][ms] += fn(ms)
            w = wake_probe(driver, args.threads, args.runs, ms)
            wake[ms]["wake_us"] += w["wake_us"]
            wake[ms]["call_us"] += w["call_us"]
            wake[ms]["stolen"] += w["stolen"]
            wake[ms]["calls"] += len(w["call_us"])
    head = "| runtime | " + " | ".join("warm ms" if ms == 0 else "after %g ms idle" % ms for ms in idles) + " |"
    print()
    print(head)
    print("|---|" + "---:|" * len(idles))
    for name, _ in rows:
        warm = statistics.median(samples[name][0.0])
        cells = []
        for ms in idles:
            med = statistics.median(samples[name][ms])
            cells.append("%.3f" % med if ms == 0 else "%.3f (%.2fx)" % (med, med / warm))
        print("| %s | %s |" % (name, " | ".join(cells)))
    print()
    print("kiln's pool alone (idle_run wake, %d threads): publish -> a worker runs its chunk, median (us); "
          "calls where the caller ran a worker's chunk itself:" % args.threads)
    for ms in idles:
        ws = [w for w in wake[ms]["wake_us"] if w >= 0]
        print("  after %g ms idle: wake %s us, stolen %d of %d" % (
            ms, "%.1f" % statistics.median(ws) if ws else "n/a (never)", wake[ms]["stolen"], wake[ms]["calls"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples": {n: {str(k): v for k, v in s.items()} for n, s in samples.items()},
                       "wake": {str(k): v for k, v in wake.items()}, "load": load}, f, indent=1)
    import shutil
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
