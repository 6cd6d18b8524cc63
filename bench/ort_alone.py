#!/usr/bin/env python3
"""bench/ort_alone.py — ONNX Runtime timed by itself, at its defaults (workers spinning).

Usage: .venv/bin/python bench/ort_alone.py MODEL.onnx [--inputs FILE.npz] [--threads 2] [--repeat 30]
                                          [--warmup 3] [--idle-ms 0] [--no-spin] [--json]

The counterpart of `kiln bench MODEL --json` without --compare: one process, one
InferenceSession with intra_op_num_threads = --threads, inter_op_num_threads = 1,
ORT_SEQUENTIAL, ORT_ENABLE_ALL and everything else at ONNX Runtime's defaults — in
particular session.intra_op.allow_spinning stays on (--no-spin turns it off, as `kiln
bench --compare` does). Inputs come from the .npz (members NAME.npy; what bench/models.py
writes for kiln too), else seeded uniform [-1, 1) floats and integers in [0, 10). Runs go
through run_with_iobinding with the inputs bound once, as kiln bench's worker does, each
timed with time.perf_counter. --idle-ms N sleeps N ms before every timed run (bench/idle.py:
the first run after idle). Prints the median, p90, min (ms), or one JSON object with
--json: ms_median, ms_p90, ms_min, ms_mean, times, version, threads, spinning, idle_ms.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np


def make_session(model, threads, spinning):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    if not spinning:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def load_feeds(sess, npz):
    feeds = {}
    if npz:
        with np.load(npz) as z:
            feeds = {k: np.ascontiguousarray(z[k]) for k in z.files}
    rng = np.random.default_rng(42)
    for i in sess.get_inputs():
        if i.name in feeds:
            continue
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        if i.type == "tensor(float)":
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            feeds[i.name] = rng.integers(0, 10, shape).astype(np.int64)
    return feeds


def bind(sess, feeds):
    binding = sess.io_binding()
    for name, value in feeds.items():
        binding.bind_cpu_input(name, value)
    for info in sess.get_outputs():
        binding.bind_output(info.name, "cpu")
    return binding


def time_runs(sess, binding, repeat, warmup, idle_ms=0.0):
    for _ in range(warmup):
        sess.run_with_iobinding(binding)
    times = []
    for _ in range(repeat):
        if idle_ms > 0:
            time.sleep(idle_ms / 1e3)
        t0 = time.perf_counter()
        sess.run_with_iobinding(binding)
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def summary(times):
    s = sorted(times)
    return {"ms_median": statistics.median(s), "ms_p90": s[min(len(s) - 1, max(0, -(-9 * len(s) // 10) - 1))],
            "ms_min": s[0], "ms_mean": statistics.fmean(s)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--inputs", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--idle-ms", type=float, default=0.0)
    ap.add_argument("--no-spin", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import onnxruntime as ort
    sess = make_session(args.model, args.threads, not args.no_spin)
    binding = bind(sess, load_feeds(sess, args.inputs))
    times = time_runs(sess, binding, args.repeat, args.warmup, args.idle_ms)
    result = dict(summary(times), times=times, version=ort.__version__, threads=args.threads,
                  spinning=not args.no_spin, idle_ms=args.idle_ms)
    if args.json:
        print(json.dumps(result))
    else:
        print("onnxruntime %s, %d threads, spinning %s: median %.4f ms, p90 %.4f ms, min %.4f ms" % (
            result["version"], args.threads, "on" if result["spinning"] else "off", result["ms_median"],
            result["ms_p90"], result["ms_min"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
