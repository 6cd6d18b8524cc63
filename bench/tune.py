"""tune.py — benchmarks of `kiln tune` (issue 14). Numbers and plots for the README;
never a test. Each phase writes into --out (default bench/results/tune):

  tuned     for each workload of the fixed set — ResNet-18's conv layers C1–C12 (the
            AutoTVM paper's table), BERT-base FFN matmuls 128x768x3072 and 128x3072x768,
            a ViT-B/16 matmul with 197 rows (197x768x3072), an STFT-style 1-D conv (1
            input channel, kernel 512, stride 160, 257 outputs, 16000 samples), a 3x3
            conv with dilation 24 on a 32x32 map (256 channels), a depthwise 3x3 at
            112x112x32 — a single-op ONNX model is tuned (`kiln tune --trials N`, every
            task: the op and the layout changes around it). kiln's time is the sum over
            the model's kernels of the tuner's own measurements, default and best (one
            core, CPU time of the measuring thread); ONNX Runtime's is the same model on
            one thread, the caller's CPU time per run (median of 40). Both clocks ignore
            time the core spent on other processes, which on a shared 2-core machine
            is the only way to get numbers that mean anything. Reports default and
            tuned GFLOPS, % of the measured one-core peak, ONNX Runtime's time, the ratio.
  search    model-guided vs random search: each workload tuned twice from scratch
            (--search model / random, same trial budget); the best of the workload's
            main task after 64, 128 and 256 trials (the records keep the trial order),
            and a plot of best-so-far vs trials. Judged by consensus costs (each schedule's
            median over both runs), strictly better counted with the default schedule (both
            measure it first) and among the searches' own candidates; `search-report`
            recomputes that from the records.
  transfer  records of C1–C6 and the first matmul as --transfer-from for C7–C12 and the
            other matmuls: trials to reach 95% of the from-scratch best, with and
            without the transferred global model (and conv → matmul: matmul targets
            from conv records only).
  transfer-seeds  --transfer-seeds more searches per transfer target and side (other seeds,
            --transfer-seed-trials each) against the transfer phase's target: one search's
            trials-to-95% is a noisy number; the table gives all of them and the medians.
  transfer-check  the transfer phases' searches judged by costs measured side by side: each
            search's improving and fastest schedules, compiled with their knobs and re-measured
            together in shuffled rounds; trials to 95% of the from-scratch best by those
            costs (two searches minutes apart see different speeds of a shared VM).
  e2e       ResNet-50, MobileNetV2, the BERT-like encoder (build/bench-models, else
            models/gen_bench_models.py): tuned with a trial budget, then default and tuned
            bundles against ONNX Runtime with `kiln bench --compare onnxruntime
            --threads 2`, --e2e-rounds rounds alternating which bundle goes first
            (medians of the rounds); tuning time. With --e2e-reuse the records of an
            earlier run in --out are compiled and timed again without tuning.

usage: .venv/bin/python bench/tune.py [--kiln build/kiln] [--phases tuned,search,transfer,e2e]
       [--workloads C1,C2,...] [--trials 128] [--search-trials 256] [--transfer-trials 256]
       [--e2e-trials 400] [--models resnet50,...] [--out DIR]
Every phase appends to DIR/results.json (keyed by phase and workload), so phases can
run on different days; results.md and the plots are rewritten from it each time.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable

# name: (kind, params). conv: (C, H, W, M, k, stride, pad, dilation, group); conv1d: (C, L, M, k, stride);
# matmul: (M, K, N)
RESNET18 = {
    "C1": (3, 224, 224, 64, 7, 2, 3), "C2": (64, 56, 56, 64, 3, 1, 1), "C3": (64, 56, 56, 64, 1, 1, 0),
    "C4": (64, 56, 56, 128, 3, 2, 1), "C5": (64, 56, 56, 128, 1, 2, 0), "C6": (128, 28, 28, 128, 3, 1, 1),
    "C7": (128, 28, 28, 256, 3, 2, 1), "C8": (128, 28, 28, 256, 1, 2, 0), "C9": (256, 14, 14, 256, 3, 1, 1),
    "C10": (256, 14, 14, 512, 3, 2, 1), "C11": (256, 14, 14, 512, 1, 2, 0), "C12": (512, 7, 7, 512, 3, 1, 1),
}
WORKLOADS = {k: ("conv", v + (1, 1)) for k, v in RESNET18.items()}
WORKLOADS.update({
    "mm_ffn1": ("matmul", (128, 768, 3072)),
    "mm_ffn2": ("matmul", (128, 3072, 768)),
    "mm_vit197": ("matmul", (197, 768, 3072)),
    "stft1d": ("conv1d", (1, 16000, 257, 512, 160)),
    "dil24": ("conv", (256, 32, 32, 256, 3, 1, 24, 24, 1)),
    "dw112": ("conv", (32, 112, 112, 32, 3, 1, 1, 1, 32)),
    # beyond the set: groups no conv/matmul template covers, tuned in generated spaces
    "pool112": ("pool", (64, 112, 112, 3, 2, 1)),
    "softmax": ("softmax", (12, 128, 128)),
})
SOURCES = ["C1", "C2", "C3", "C4", "C5", "C6", "mm_ffn1"]
TARGETS = ["C7", "C8", "C9", "C10", "C11", "C12", "mm_ffn2", "mm_vit197"]


def make_model(name, path):
    kind, p = WORKLOADS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    t = lambda a, n: numpy_helper.from_array(a.astype(np.float32), n)
    if kind == "conv":
        C, H, W, M, k, s, pad, dil, grp = p
        w = t(rng.standard_normal((M, C // grp, k, k)) * 0.05, "w")
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[pad] * 4,
                                dilations=[dil, dil], group=grp)
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])
        flops = 2 * M * (C // grp) * k * k * ((H + 2 * pad - dil * (k - 1) - 1) // s + 1) * \
            ((W + 2 * pad - dil * (k - 1) - 1) // s + 1)
    elif kind == "conv1d":
        C, L, M, k, s = p
        w = t(rng.standard_normal((M, C, k)) * 0.05, "w")
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k], strides=[s])
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, L])
        flops = 2 * M * C * k * ((L - k) // s + 1)
    elif kind == "pool":
        C, H, W, k, s, pad = p
        node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[pad] * 4)
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])
        o = (H + 2 * pad - k) // s + 1
        g = helper.make_graph([node], name, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        return C * o * o * k * k
    elif kind == "softmax":
        Hh, S, S2 = p
        node = helper.make_node("Softmax", ["x"], ["y"], axis=-1)
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, Hh, S, S2])
        g = helper.make_graph([node], name, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        return 5 * Hh * S * S2
    else:
        M, K, N = p
        w = t(rng.standard_normal((K, N)) * 0.05, "w")
        node = helper.make_node("MatMul", ["x", "w"], ["y"])
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, M, K])
        flops = 2 * M * K * N
    g = helper.make_graph([node], name, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return flops


def run(argv, timeout=None, quiet=False):
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if p.returncode != 0 and not quiet:
        print("  failed (%d): %s\n%s" % (p.returncode, " ".join(argv), p.stderr[-600:]), flush=True)
    return p, time.monotonic() - t0


def load_records(path):
    out = []
    if os.path.exists(path):
        for line in open(path):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def main_workload(recs):
    """The workload key of the heaviest task in a records file (the op itself, not a relayout)."""
    w = {}
    for r in recs:
        w[r["workload"]] = max(w.get(r["workload"], 0), r.get("flops", 0))
    return max(w, key=w.get) if w else None


def trials(recs, key, with_default=False):
    """A search's trials of workload key in file order: its candidates, and the default
    schedule's measurement where with_default (the closing checks' records are no trials)."""
    return [r for r in recs if r["workload"] == key and (with_default or r["knobs"] != "default") and
            not r.get("confirm") and not r.get("model")]


def at_trial(c, n):
    """A best-so-far curve's value after n trials (its last where it is shorter)."""
    return c[min(n, len(c)) - 1] if c else float("nan")


def curve(recs, key, candidates_only=False):
    """Best-so-far seconds after each trial of workload key, in file order (the default
    schedule's measurement included, or left out: the search's own progress)."""
    best, out = float("inf"), []
    for r in trials(recs, key, with_default=not candidates_only):
        if not r["error"] and r["cost"] > 0:
            best = min(best, r["cost"])
        out.append(best)
    return out


def consensus_curves(recs_by_strategy, key):
    """Best-so-far curves judged by one cost per schedule: the median of every
    measurement of that schedule (knobs) in all the strategies' records. A search is
    then credited for the schedules it found, not for a lucky measurement of one both
    found (on a shared 2-core VM one schedule's medians move by 1-3% between runs).
    Also the number of distinct valid schedules each strategy measured."""
    pooled = {}
    for recs in recs_by_strategy.values():
        for r in recs:
            if r["workload"] == key and not r["error"]:
                pooled.setdefault(json.dumps(r["knobs"], sort_keys=True), []).extend(
                    c for c in r.get("costs") or [r["cost"]] if c > 0)
    cost = {k: float(np.median(v)) for k, v in pooled.items() if v}
    out = {}
    for s, recs in recs_by_strategy.items():
        best, c, seen = float("inf"), [], set()
        for r in recs:
            if r["workload"] != key:
                continue
            k = json.dumps(r["knobs"], sort_keys=True)
            if not r["error"] and k in cost:
                best = min(best, cost[k])
                seen.add(k)
            c.append(best)
        out[s] = (c, len(seen))
    return out


def bench(kiln, bundle, onnx_path, threads, repeat=30):
    env = dict(os.environ, KILN_PYTHON=PY)
    p = subprocess.run([kiln, "bench", bundle, "--onnx", onnx_path, "--compare", "onnxruntime", "--threads",
                        str(threads), "--json", "--repeat", str(repeat)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        print("  bench failed: %s" % p.stderr[-400:], flush=True)
        return None
    return json.loads(p.stdout)


def load_results(out):
    path = os.path.join(out, "results.json")
    return json.load(open(path)) if os.path.exists(path) else {}


def save_results(out, res):
    json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=1, sort_keys=True)


def uptime():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def ort_cpu_ms(model, feeds, runs=40):
    """ONNX Runtime on one thread: the median CPU time of the calling thread per run
    (with intra_op_num_threads = 1 the session runs its kernels in the caller), the
    same clock the tuner's measurements use, so both survive a busy machine."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for _ in range(5):
        sess.run(None, feeds)
    ts = []
    for _ in range(runs):
        t0 = time.thread_time()
        sess.run(None, feeds)
        ts.append(time.thread_time() - t0)
    return float(np.median(ts)) * 1e3


def tuner_table(out):
    """The per-task rows of `kiln tune`'s final table: (label, occ, default ms, tuned ms)."""
    rows = []
    for line in out.splitlines():
        m = re.match(r"^(\d+)\s+(.*?)\s+(\d+)\s+([\d.na]+)\s+([\d.na]+)\s+[\d.na]+x\s", line)
        if m:
            rows.append((m.group(2).strip(), int(m.group(3)), float(m.group(4)), float(m.group(5))))
    return rows


def phase_tuned(a, res):
    for name in a.workloads:
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        model = os.path.join(d, name + ".onnx")
        flops = make_model(name, model)
        rec = os.path.join(d, "tuned.json")
        if os.path.exists(rec):
            os.remove(rec)
        print("[tuned] %s: load %s, tuning %d trials" % (name, uptime(), a.trials), flush=True)
        p, secs = run([a.kiln, "tune", model, "--records", rec, "--trials", str(a.trials)])
        rows = tuner_table(p.stdout)
        peak = re.search(r"peak: (\d+) GFLOPS on (?:one|1) core ", p.stdout)
        if not rows or not peak:
            print("  no table: %s" % p.stdout[-500:], flush=True)
            a.failed.append("tuned " + name)
            continue
        peak = float(peak.group(1))
        dflt = sum(o * dm for _, o, dm, _ in rows)
        tuned = sum(o * tm for _, o, _, tm in rows)
        kind, prm = WORKLOADS[name]
        shape = {"conv": lambda: (1, prm[0], prm[1], prm[2]), "conv1d": lambda: (1, prm[0], prm[1]),
                 "matmul": lambda: (1, prm[0], prm[1]), "pool": lambda: (1, prm[0], prm[1], prm[2]),
                 "softmax": lambda: (1,) + tuple(prm)}[kind]()
        feeds = {"x": np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)}
        ort_ms = ort_cpu_ms(model, feeds)
        r = {"flops": flops, "default_ms": dflt, "tuned_ms": tuned, "ort_ms": ort_ms, "peak": peak, "tune_s": secs,
             "trials": a.trials, "load": uptime(), "tasks": rows}
        r["default_gflops"] = flops / dflt * 1e-6
        r["tuned_gflops"] = flops / tuned * 1e-6
        res.setdefault("tuned", {})[name] = r
        print("  default %.3f ms (%.0f GFLOPS), tuned %.3f ms (%.0f GFLOPS, %.0f%% of peak), ORT %.3f ms, "
              "tuned/ORT %.2f; %.0f s" % (dflt, r["default_gflops"], tuned, r["tuned_gflops"],
                                           100 * r["tuned_gflops"] / peak, ort_ms, tuned / ort_ms, secs), flush=True)
        save_results(a.out, res)


def phase_search(a, res):
    for name in a.workloads:
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        model = os.path.join(d, name + ".onnx")
        make_model(name, model)
        out, all_recs = {}, {}
        for strategy in ("model", "random"):
            rec = os.path.join(d, "search-%s.json" % strategy)
            if os.path.exists(rec):
                os.remove(rec)
            print("[search] %s %s: load %s, %d trials" % (name, strategy, uptime(), a.search_trials), flush=True)
            _, secs = run([a.kiln, "tune", model, "--records", rec, "--trials", str(a.search_trials), "--search",
                           strategy, "--tasks", "0", "--seed", "1"])
            recs = load_records(rec)
            all_recs[strategy] = recs
            c = curve(recs, main_workload(recs))
            out[strategy] = {"curve": c, "seconds": secs}
        search_consensus(out, all_recs)
        res.setdefault("search", {})[name] = out
        at = lambda s, n: at_trial(out[s]["curve"], n)
        print("  best ms at 64/128/%d: model %s, random %s" % (
            a.search_trials, " ".join("%.4f" % (at("model", n) * 1e3) for n in (64, 128, a.search_trials)),
            " ".join("%.4f" % (at("random", n) * 1e3) for n in (64, 128, a.search_trials))), flush=True)
        save_results(a.out, res)


def search_consensus(out, all_recs):
    """The consensus curves of a workload's two searches into out[strategy]: with the default
    schedule (measured first by both), and of the searches' own candidates alone."""
    key = main_workload(all_recs["model"])
    for strategy, (c, distinct) in consensus_curves(all_recs, key).items():
        out[strategy]["consensus"], out[strategy]["distinct"] = c, distinct
    own = {st: trials(r, key) for st, r in all_recs.items()}
    for strategy, (c, _) in consensus_curves(own, key).items():
        out[strategy]["consensus_own"] = c


def phase_search_report(a, res):
    """Recomputes the search phase's consensus curves from the records it left (no tuning)."""
    for name in a.workloads:
        d = os.path.join(a.out, name)
        all_recs = {st: load_records(os.path.join(d, "search-%s.json" % st)) for st in ("model", "random")}
        if all_recs["model"] and all_recs["random"] and name in res.get("search", {}):
            search_consensus(res["search"][name], all_recs)
    save_results(a.out, res)


def trials_to(c, target):
    for i, v in enumerate(c):
        if v <= target:
            return i + 1
    return None


def phase_transfer(a, res):
    src_recs = []
    for group, targets, sources in (("all", TARGETS, SOURCES), ("conv->matmul", ["mm_ffn2", "mm_vit197"],
                                                                   [s for s in SOURCES if s.startswith("C")])):
        srcs = []
        for name in sources:
            d = os.path.join(a.out, name)
            os.makedirs(d, exist_ok=True)
            model = os.path.join(d, name + ".onnx")
            make_model(name, model)
            rec = os.path.join(d, "source.json")
            if not os.path.exists(rec):
                print("[transfer] source %s: load %s" % (name, uptime()), flush=True)
                run([a.kiln, "tune", model, "--records", rec, "--trials", str(a.transfer_trials // 2), "--tasks", "0"])
            srcs.append(rec)
        src_recs = srcs
        for name in targets:
            d = os.path.join(a.out, name)
            os.makedirs(d, exist_ok=True)
            model = os.path.join(d, name + ".onnx")
            make_model(name, model)
            curves = {}
            for how in ("scratch", "transfer"):
                if how == "scratch" and group != "all" and "scratch" in res.get("transfer", {}).get(name, {}):
                    curves[how] = res["transfer"][name]["scratch"]
                    continue
                rec = os.path.join(d, "%s-%s.json" % (how, group.replace(">", "")))
                if os.path.exists(rec):
                    os.remove(rec)
                argv = [a.kiln, "tune", model, "--records", rec, "--trials", str(a.transfer_trials), "--tasks", "0"]
                if how == "transfer":
                    for s in src_recs:
                        argv += ["--transfer-from", s]
                print("[transfer] %s %s (%s): load %s" % (name, how, group, uptime()), flush=True)
                run(argv)
                recs = load_records(rec)
                curves[how] = curve(recs, main_workload(recs), candidates_only=True)
            # the search's own progress (the default schedule's measurement left out): trials until a
            # candidate within 95% of the from-scratch best throughput
            best = min(curves["scratch"]) if curves["scratch"] else float("nan")
            target = best / 0.95
            n_s, n_t = trials_to(curves["scratch"], target), trials_to(curves["transfer"], target)
            res.setdefault("transfer", {}).setdefault(name, {})["scratch"] = curves["scratch"]
            res["transfer"][name][group] = {"curve": curves["transfer"], "trials_95": n_t, "scratch_trials_95": n_s}
            print("  %s: a candidate within 95%% of the from-scratch best after %s trials from scratch, %s with "
                  "transfer (%s)" % (name, n_s, n_t, group), flush=True)
            save_results(a.out, res)


def phase_transfer_seeds(a, res):
    """More searches per target with other seeds (--seed 2.., --transfer-seed-trials each), from scratch and with
    the transfer phase's source records, against the same target (95% of the transfer phase's from-scratch best):
    one search's trials-to-95% is a noisy number."""
    srcs = [os.path.join(a.out, n, "source.json") for n in SOURCES]
    if not all(os.path.exists(p) for p in srcs):
        print("[transfer-seeds] run the transfer phase first", flush=True)
        return
    for name in TARGETS:
        d = os.path.join(a.out, name)
        sc = load_records(os.path.join(d, "scratch-all.json"))
        if not sc:
            continue
        target = min(curve(sc, main_workload(sc), candidates_only=True)) / 0.95
        model = os.path.join(d, name + ".onnx")
        x = res.setdefault(a.seeds_key, {}).setdefault(name, {"scratch": [], "transfer": []})
        for seed in range(a.seed_first, a.seed_first + a.transfer_seeds):
            for how in a.seed_sides.split(","):
                rec = os.path.join(d, "seed%d-%s%s.json" % (seed, how, a.seeds_key.replace("transfer_seeds", "")))
                if os.path.exists(rec):
                    os.remove(rec)
                argv = [a.kiln, "tune", model, "--records", rec, "--trials", str(a.transfer_seed_trials), "--tasks",
                        "0", "--seed", str(seed), "--model-rounds", "0"]
                if how == "transfer":
                    for p in srcs:
                        argv += ["--transfer-from", p]
                run(argv)
                recs = load_records(rec)
                n = trials_to(curve(recs, main_workload(recs), candidates_only=True), target)
                x[how].append(n if n is not None else a.transfer_seed_trials + 1)
            print("  %s seed %d: %s from scratch, %s with transfer" % (
                name, seed, x["scratch"][-1] if x["scratch"] else "-", x["transfer"][-1] if x["transfer"] else "-"),
                flush=True)
            save_results(a.out, res)


def worth_remeasuring(cands, top):
    """The knobs of the candidates at which the search's best-so-far improved, and of its
    `top` fastest by its own measurements."""
    best, out = float("inf"), set()
    ok = [r for r in cands if not r["error"] and r["cost"] > 0]
    for r in ok:
        if r["cost"] < best:
            best = r["cost"]
            out.add(json.dumps(r["knobs"], sort_keys=True))
    for r in sorted(ok, key=lambda r: r["cost"])[:top]:
        out.add(json.dumps(r["knobs"], sort_keys=True))
    return out


def kernel_ms(a, bundle):
    """The main kernel's time (the one with the most FLOPs) in one `kiln bench` profile, one thread."""
    p, _ = run([a.kiln, "bench", bundle, "--threads", "1", "--repeat", "3", "--warmup", "3", "--profile-runs",
                str(a.recheck_runs), "--json"], quiet=True)
    try:
        ks = json.loads(p.stdout)["kernels"]
    except (ValueError, KeyError):
        return None
    k = max(ks, key=lambda k: k.get("flops", 0))
    return k["ms"] if k.get("ms", 0) > 0 else None


def phase_transfer_check(a, res):
    """The transfer table by costs measured side by side. The transfer phase compares two
    searches run minutes apart, and on a shared VM one schedule's cost moves by up to 1.5x
    between such minutes (C7's default 0.88 ms in one search, 1.28 in the next), so a 95%
    target taken from one run is out of the other's reach or given away. Here the
    schedules at which each search's best-so-far improved and its --recheck-top fastest
    (by its own measurements) are compiled with their knobs (`kiln compile --knobs`) and
    the lot measured again in --recheck-rounds rounds, each round all schedules in a
    shuffled order (the main kernel's time in `kiln bench`'s profile, one thread), each
    getting the median of its rounds; every search's curve is then rebuilt from those
    costs (best-so-far over the re-measured schedules it had measured) and the target is
    95% of the best the search from scratch reached."""
    rng = random.Random(1)
    for name in TARGETS:
        d = os.path.join(a.out, name)
        model = os.path.join(d, name + ".onnx")
        runs = {how: load_records(os.path.join(d, f)) for how, f in
                (("scratch", "scratch-all.json"), ("transfer", "transfer-all.json"),
                 ("conv->matmul", "transfer-conv-matmul.json"))}
        for f in sorted(os.listdir(d)):  # the transfer-seeds phase's searches: seedN-scratch, seedN-transfer
            m = re.fullmatch(r"seed(\d+)-(scratch|transfer)\.json", f)
            if m:
                runs["seed%s-%s" % m.groups()] = load_records(os.path.join(d, f))
        runs = {how: r for how, r in runs.items() if r}
        if "scratch" not in runs or not os.path.exists(model):
            continue
        key = main_workload(runs["scratch"])
        cands = {how: trials(r, key) for how, r in runs.items()}
        sched = {}  # knobs -> template
        for c in cands.values():
            for k in worth_remeasuring(c, a.recheck_top):
                sched[k] = c[0]["template"]
        bundles = {}
        for k, tmpl in sched.items():  # the model's one group of the template gets the record's knobs
            out = os.path.join(d, "check-%d.kiln" % len(bundles))
            knobs = "%s:%s" % (tmpl, ",".join("%s=%d" % kv for kv in sorted(json.loads(k).items())))
            p, _ = run([a.kiln, "compile", model, "-o", out, "--knobs", knobs])
            if p.returncode == 0:
                bundles[k] = out
        costs = {k: [] for k in bundles}
        print("[transfer-check] %s: %d schedules, %d rounds, load %s" % (name, len(bundles), a.recheck_rounds,
                                                                        uptime()), flush=True)
        for _ in range(a.recheck_rounds):
            order = list(bundles)
            rng.shuffle(order)
            for k in order:
                ms = kernel_ms(a, bundles[k])
                if ms:
                    costs[k].append(ms)
        med = {k: float(np.median(v)) for k, v in costs.items() if v}
        curves = {}  # best-so-far by the re-measured costs (a schedule not re-measured: none)
        for how, c in cands.items():
            best, curves[how] = float("inf"), []
            for r in c:
                best = min(best, med.get(json.dumps(r["knobs"], sort_keys=True), float("inf")))
                curves[how].append(best)
        if not curves["scratch"] or curves["scratch"][-1] == float("inf"):
            continue
        target = curves["scratch"][-1] / 0.95
        x = res.setdefault("transfer_check", {}).setdefault(name, {})
        x["schedules"] = len(med)
        x["best_ms"] = {how: c[-1] for how, c in curves.items() if c}
        for how, c in curves.items():
            x[how] = trials_to(c, target)
        for side in ("scratch", "transfer"):  # every search of a side; one that never got there: its trials + 1
            hs = [h for h in sorted(curves) if h == side or h.endswith("-" + side)]
            x[side + "_all"] = [x[h] if x[h] is not None else len(cands[h]) + 1 for h in hs]
        print("  %s: 95%% of the from-scratch best (%.4f ms, re-measured) after %s trials from scratch, %s with "
              "transfer%s" % (name, curves["scratch"][-1], x["scratch"], x.get("transfer"),
                              ", %s from conv records only" % x["conv->matmul"] if "conv->matmul" in x else ""),
              flush=True)
        save_results(a.out, res)


def phase_transfer_report(a, res):
    """Recomputes the transfer table from the records the transfer phase left (no tuning)."""
    for name in TARGETS:
        d = os.path.join(a.out, name)
        sc = load_records(os.path.join(d, "scratch-all.json"))
        if not sc:
            continue
        c_s = curve(sc, main_workload(sc), candidates_only=True)
        target = min(c_s) / 0.95
        x = res.setdefault("transfer", {}).setdefault(name, {})
        x["scratch"] = c_s
        for group, f in (("all", "transfer-all.json"), ("conv->matmul", "transfer-conv-matmul.json")):
            tr = load_records(os.path.join(d, f))
            if not tr:
                continue
            c_t = curve(tr, main_workload(tr), candidates_only=True)
            x[group] = {"curve": c_t, "trials_95": trials_to(c_t, target), "scratch_trials_95": trials_to(c_s, target)}
    save_results(a.out, res)


def phase_e2e(a, res):
    models_dir = os.path.join(ROOT, "build", "bench-models")
    for name in a.models:
        model = os.path.join(models_dir, name + ".onnx")
        if not os.path.exists(model):
            run([PY, os.path.join(ROOT, "models", "gen_bench_models.py"), "--out", models_dir])
        d = os.path.join(a.out, "e2e-" + name)
        os.makedirs(d, exist_ok=True)
        rec = os.path.join(d, "tuned.json")
        if a.e2e_reuse and os.path.exists(rec):
            secs = res.get("e2e", {}).get(name, {}).get("tune_s", float("nan"))
            print("[e2e] %s: load %s, the records of an earlier run" % (name, uptime()), flush=True)
        else:
            print("[e2e] %s: load %s, %d trials" % (name, uptime(), a.e2e_trials), flush=True)
            p, secs = run([a.kiln, "tune", model, "--records", rec, "--trials", str(a.e2e_trials), "--tasks",
                           "templates"])
            # the tune's in-model check: how many workloads it kept, and its own whole-run comparison
            kept = re.search(r"kept (\d+) of (\d+):", p.stdout)
            whole = re.search(r"median of \d+: default ([\d.]+) ms, tuned ([\d.]+) ms", p.stdout)
            res.setdefault("e2e_check", {})[name] = {
                "kept": kept.group(0) if kept else "", "default_ms": float(whole.group(1)) if whole else None,
                "tuned_ms": float(whole.group(2)) if whole else None}
        dflt, tuned = os.path.join(d, "default.kiln"), os.path.join(d, "tuned.kiln")
        run([a.kiln, "compile", model, "-o", dflt])
        pc, _ = run([a.kiln, "compile", model, "-o", tuned, "--records", rec])
        matched = re.search(r"tuned schedules for (\d+) of (\d+) groups", pc.stdout)
        # rounds alternating which bundle goes first, each against ONNX Runtime: this VM has
        # slow phases of seconds, which one run of each would put on one side only
        runs = {"default": [], "tuned": [], "ort": []}
        for rnd in range(a.e2e_rounds):
            for tag, bundle in ((("default", dflt), ("tuned", tuned)) if rnd % 2 == 0 else
                                (("tuned", tuned), ("default", dflt))):
                b = bench(a.kiln, bundle, model, 2)
                if b:
                    runs[tag].append(b["kiln_ms_median"])
                    runs["ort"].append(b["ort_ms_median"])
        if not runs["default"] or not runs["tuned"]:
            continue
        med = lambda v: float(np.median(v))
        r = {"tune_s": secs, "trials": a.e2e_trials, "default_ms": med(runs["default"]), "tuned_ms": med(runs["tuned"]),
             "ort_ms": med(runs["ort"]), "rounds": len(runs["default"]), "matched": matched.group(0) if matched else "",
             "load": uptime()}
        r["ratio_default"] = r["default_ms"] / r["ort_ms"]
        r["ratio_tuned"] = r["tuned_ms"] / r["ort_ms"]
        res.setdefault("e2e", {})[name] = r
        print("  default %.2f ms, tuned %.2f ms, ORT %.2f ms: ratio %.2f -> %.2f; tuning %.0f s" %
              (r["default_ms"], r["tuned_ms"], r["ort_ms"], r["ratio_default"], r["ratio_tuned"], secs), flush=True)
        save_results(a.out, res)


def svg_curves(path, series, title):
    """series: [(label, [best seconds per trial], flops)] → GFLOPS curves."""
    W, H, L, R, T, B = 860, 460, 60, 260, 36, 44
    pw, ph = W - L - R, H - T - B
    maxt = max((len(c) for _, c, _ in series), default=1) or 1
    gf = lambda c, f: [f / v * 1e-9 if v and v != float("inf") else 0 for v in c]
    maxg = max((max(gf(c, f) or [0]) for _, c, f in series), default=1) or 1
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
              "#17becf"]
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' %
         (W, H), '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="14">%s</text>' % (L, title)]
    s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T + ph, L + pw, T + ph))
    s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, T + ph))
    for k in range(5):
        y = T + ph - ph * k / 4
        s.append('<text x="%d" y="%.0f" text-anchor="end">%.0f</text>' % (L - 5, y + 4, maxg * k / 4))
        s.append('<text x="%.0f" y="%d" text-anchor="middle">%.0f</text>' % (L + pw * k / 4, T + ph + 15, maxt * k / 4))
    s.append('<text x="%d" y="%d" text-anchor="middle">trials</text>' % (L + pw / 2, H - 8))
    for i, (label, c, f) in enumerate(series):
        pts = " ".join("%.1f,%.1f" % (L + pw * (j + 1) / maxt, T + ph - ph * g / maxg) for j, g in enumerate(gf(c, f)))
        dash = ' stroke-dasharray="5 3"' if "random" in label or "scratch" in label else ""
        s.append('<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>' % (colors[i // 2 % 10], dash, pts))
        y = T + 10 + i * 14
        s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' %
                 (L + pw + 10, y - 4, L + pw + 28, y - 4, colors[i // 2 % 10], dash))
        s.append('<text x="%d" y="%d">%s</text>' % (L + pw + 32, y, label))
    s.append("</svg>")
    open(path, "w").write("\n".join(s) + "\n")


def write_report(a, res):
    lines = []
    t = res.get("tuned", {})
    if t:
        lines += ["| workload | default GFLOPS | tuned GFLOPS | tuned % peak | ONNX Runtime ms | tuned ms | tuned / ORT | trials | tuning s | load |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for n in WORKLOADS:
            if n in t:
                r = t[n]
                lines.append("| %s | %.1f | %.1f | %.0f | %.3f | %.3f | %.2f | %d | %.0f | %s |" % (
                    n, r["default_gflops"], r["tuned_gflops"], 100 * r["tuned_gflops"] / r["peak"], r["ort_ms"],
                    r["tuned_ms"], r["tuned_ms"] / r["ort_ms"], r["trials"], r["tune_s"], r["load"]))
        lines.append("")
    s = res.get("search", {})
    if s:
        lines += ["| workload | model best ms @64 | @128 | @256 | random best ms @64 | @128 | @256 |", "|---|---:|---:|---:|---:|---:|---:|"]
        wins, n = 0, 0
        series = []
        for name in WORKLOADS:
            if name not in s:
                continue
            at = lambda k, t: at_trial(s[name][k]["curve"], t) * 1e3
            lines.append("| %s | %s | %s |" % (name, " | ".join("%.4f" % at("model", t) for t in (64, 128, 256)),
                                               " | ".join("%.4f" % at("random", t) for t in (64, 128, 256))))
            for t_ in (64, 128, 256):
                n += 1
                wins += at("model", t_) <= at("random", t_)
            flops = make_flops(name)
            series.append((name + " model", s[name]["model"]["curve"], flops))
            series.append((name + " random", s[name]["random"]["curve"], flops))
        lines.append("")
        lines.append("model-guided at least as good as random in %d of %d (workload, budget) pairs" % (wins, n))
        lines.append("")
        # the same, each schedule judged by the median of all its measurements in both runs
        lines += ["| workload | schedules measured (model / random) | model @64 | @128 | @256 | random @64 | @128 | @256 |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        cw, cn = 0, 0
        for name in WORKLOADS:
            if name not in s or "consensus" not in s[name]["model"]:
                continue
            cat = lambda k, t: at_trial(s[name][k]["consensus"], t) * 1e3
            lines.append("| %s | %d / %d | %s | %s |" % (
                name, s[name]["model"]["distinct"], s[name]["random"]["distinct"],
                " | ".join("%.4f" % cat("model", t) for t in (64, 128, 256)),
                " | ".join("%.4f" % cat("random", t) for t in (64, 128, 256))))
            for t_ in (64, 128, 256):
                cn += 1
                cw += cat("model", t_) <= cat("random", t_)
        # the issue's bar: strictly better, with the default and among the searches' own candidates
        for view, what in (("consensus", "with the default"), ("consensus_own", "the searches' own candidates")):
            better, behind, total = [0, 0, 0], [0, 0, 0], 0
            for name in WORKLOADS:
                if name not in s or view not in s[name]["model"] or not s[name]["model"][view]:
                    continue
                total += 1
                for i, t_ in enumerate((64, 128, 256)):
                    m, r = (at_trial(s[name][k][view], t_) for k in ("model", "random"))
                    better[i] += m < r
                    behind[i] += m > r
            if total:
                lines.append("strictly better by consensus costs (%s): %s of %d workloads at 64/128/256 trials "
                             "(random ahead on %s)" % (what, "/".join(map(str, better)), total,
                                                      "/".join(map(str, behind))))
        if cn:
            lines.append("")
            lines.append("judged by each schedule's median over both runs: model-guided at least as good as random in "
                         "%d of %d pairs" % (cw, cn))
            lines.append("")
        svg_curves(os.path.join(a.out, "search.svg"), series[:20], "best-so-far GFLOPS: model-guided (solid) vs random (dashed)")
    tr = res.get("transfer", {})
    if tr:
        lines += ["| workload | trials to 95% of scratch best: scratch | transfer (C1–C6 + mm) | transfer (convs only) |",
                  "|---|---:|---:|---:|"]
        for name in TARGETS:
            if name in tr:
                x = tr[name]
                g = x.get("all", {})
                c = x.get("conv->matmul", {})
                lines.append("| %s | %s | %s | %s |" % (name, g.get("scratch_trials_95", "-"), g.get("trials_95", "-"),
                                                        c.get("trials_95", "-")))
        lines.append("")
    tc = res.get("transfer_check", {})
    if any(len(x.get("scratch_all", [])) > 1 for x in tc.values()):
        lines += ["| workload | every search: trials to 95% (re-measured), from scratch | with transfer | median "
                  "scratch | median transfer | fewer |", "|---|---|---|---:|---:|---:|"]
        ms, mt = [], []
        for name in TARGETS:
            x = tc.get(name)
            if not x or not x.get("scratch_all") or not x.get("transfer_all"):
                continue
            a_, b_ = float(np.median(x["scratch_all"])), float(np.median(x["transfer_all"]))
            ms.append(a_)
            mt.append(b_)
            lines.append("| %s | %s | %s | %.1f | %.1f | %.1fx |" % (
                name, ", ".join(map(str, x["scratch_all"])), ", ".join(map(str, x["transfer_all"])), a_, b_, a_ / b_))
        if ms:
            lines += ["", "sum of the medians: %.1f trials from scratch, %.1f with transfer (%.2fx fewer)" % (
                sum(ms), sum(mt), sum(ms) / sum(mt)), ""]
    if tc:
        lines += ["| workload | schedules re-measured | best ms: scratch | transfer | trials to 95%: scratch | transfer "
                  "(C1–C6 + mm) | transfer (convs only) |", "|---|---:|---:|---:|---:|---:|---:|"]
        fmt = lambda v: "-" if v is None else str(v)
        for name in TARGETS:
            x = tc.get(name)
            if x:
                b = x.get("best_ms", {})
                lines.append("| %s | %d | %.4f | %s | %s | %s | %s |" % (
                    name, x["schedules"], b.get("scratch", float("nan")),
                    "%.4f" % b["transfer"] if "transfer" in b else "-", fmt(x.get("scratch")), fmt(x.get("transfer")),
                    fmt(x.get("conv->matmul"))))
        lines.append("")
    ts_ = res.get("transfer_seeds", {})
    if ts_:
        lines += ["| workload | all searches: trials to 95%, from scratch | with transfer | median scratch | median "
                  "transfer | fewer |", "|---|---|---|---:|---:|---:|"]
        ms, mt = [], []
        for name in TARGETS:
            x = ts_.get(name)
            g = tr.get(name, {}).get("all", {})
            if not x or not g:
                continue
            sc = [g.get("scratch_trials_95")] + x["scratch"]
            tt = [g.get("trials_95")] + x["transfer"]
            sc = [v if v is not None else a.transfer_trials + 1 for v in sc]
            tt = [v if v is not None else a.transfer_trials + 1 for v in tt]
            a_, b_ = float(np.median(sc)), float(np.median(tt))
            ms.append(a_)
            mt.append(b_)
            lines.append("| %s | %s | %s | %.0f | %.0f | %.1fx |" % (name, ", ".join(map(str, sc)), ", ".join(map(str, tt)),
                                                                   a_, b_, a_ / b_))
        if ms:
            lines.append("")
            lines.append("sum of the medians: %.0f trials from scratch, %.0f with transfer (%.1fx fewer)" %
                         (sum(ms), sum(mt), sum(ms) / sum(mt)))
            lines.append("")
    e = res.get("e2e", {})
    if e:
        lines += ["| model | default ms | tuned ms | ONNX Runtime ms | ratio default | ratio tuned | tuning s | trials | groups "
                  "| in-model check | its whole runs, default -> tuned ms |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
        for name, r in e.items():
            ck = res.get("e2e_check", {}).get(name, {})
            whole = ("%.2f -> %.2f" % (ck["default_ms"], ck["tuned_ms"])) if ck.get("tuned_ms") else "-"
            lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %d | %s | %s | %s |" % (
                name, r["default_ms"], r["tuned_ms"], r["ort_ms"], r["ratio_default"], r["ratio_tuned"], r["tune_s"],
                r["trials"], r["matched"], ck.get("kept", "-"), whole))
    open(os.path.join(a.out, "results.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


def make_flops(name):
    kind, p = WORKLOADS[name]
    if kind == "conv":
        C, H, W, M, k, s, pad, dil, grp = p
        o = lambda n: (n + 2 * pad - dil * (k - 1) - 1) // s + 1
        return 2 * M * (C // grp) * k * k * o(H) * o(W)
    if kind == "conv1d":
        C, L, M, k, s = p
        return 2 * M * C * k * ((L - k) // s + 1)
    if kind == "pool":
        C, H, W, k, s, pad = p
        o = (H + 2 * pad - k) // s + 1
        return C * o * o * k * k
    if kind == "softmax":
        Hh, S, S2 = p
        return 5 * Hh * S * S2
    M, K, N = p
    return 2 * M * K * N


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--phases", default="tuned,search,transfer,e2e")
    ap.add_argument("--workloads", default=",".join(w for w in WORKLOADS if w not in ("pool112", "softmax")),
                    help="default: the issue's set; pool112 and softmax (generated spaces) on request")
    ap.add_argument("--trials", type=int, default=128)
    ap.add_argument("--search-trials", type=int, default=256)
    ap.add_argument("--transfer-trials", type=int, default=256)
    ap.add_argument("--transfer-seeds", type=int, default=3, help="transfer-seeds: searches per target and side")
    ap.add_argument("--transfer-seed-trials", type=int, default=192)
    ap.add_argument("--seed-first", type=int, default=2, help="transfer-seeds: the first seed")
    ap.add_argument("--seed-sides", default="scratch,transfer", help="transfer-seeds: which searches")
    ap.add_argument("--seeds-key", default="transfer_seeds", help="transfer-seeds: where results.json keeps them")
    ap.add_argument("--recheck-rounds", type=int, default=5, help="transfer-check: rounds of re-measurement")
    ap.add_argument("--recheck-runs", type=int, default=20, help="transfer-check: profiled runs per measurement")
    ap.add_argument("--recheck-top", type=int, default=6, help="transfer-check: each search's fastest re-measured")
    ap.add_argument("--e2e-trials", type=int, default=400)
    ap.add_argument("--e2e-reuse", action="store_true", help="e2e: time the records already in --out again")
    ap.add_argument("--e2e-rounds", type=int, default=4, help="rounds of default and tuned bundles, alternating")
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert_encoder")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "tune"))
    a = ap.parse_args()
    a.workloads = [w for w in a.workloads.split(",") if w]
    bad = [w for w in a.workloads if w not in WORKLOADS]
    if bad:
        sys.exit("unknown workloads: %s (known: %s)" % (", ".join(bad), ", ".join(WORKLOADS)))
    a.models = [m for m in a.models.split(",") if m]
    os.makedirs(a.out, exist_ok=True)
    res = load_results(a.out)
    a.failed = []  # workloads a phase could not read kiln's output for: the run exits 1
    for ph in a.phases.split(","):
        {"tuned": phase_tuned, "search": phase_search, "transfer": phase_transfer, "e2e": phase_e2e,
         "transfer-seeds": phase_transfer_seeds,
         "transfer-report": phase_transfer_report, "transfer-check": phase_transfer_check,
         "search-report": phase_search_report}[ph](a, res)
    write_report(a, res)
    if a.failed:
        sys.exit("failed: %s" % ", ".join(a.failed))


if __name__ == "__main__":
    main()
