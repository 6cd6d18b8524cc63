#!/usr/bin/env python3
"""bench/layers.py — layer by layer: where does kiln lose to ONNX Runtime on one model?

Usage: .venv/bin/python bench/layers.py MODEL.onnx [--kiln build/kiln] [--threads 2] [--rounds 4]
                                        [--runs 20] [--top 25] [--json FILE]

A whole-model ratio (bench/run.py, bench/models.py) says how far apart the two runtimes are,
not where. This script times every layer in both, each by its own profiler: ONNX Runtime's
per-node profile (SessionOptions.enable_profiling; the session's optimizations left at their
defaults, so its NCHWc convs, fusions and reorders are what it runs) and kiln's per-kernel
trace (`kiln run --trace`). `rounds` rounds alternate which runtime goes first; each round
runs `runs` inferences after three warm-up runs, and a layer's time is the median over all
its timed runs (both profilers time each node or kernel on the calling thread, the pool's
work inside it included).

A layer is a conv or a matmul (ONNX Runtime: Conv, FusedConv, ConvTranspose, Gemm, MatMul,
FusedMatMul, FusedGemm and their quantized forms; kiln: its conv_nchwc, conv, matmul and
gemm kernels, and a Winograd conv's input transform, batched matmul and output transform
counted as one layer). The two runtimes' layers are paired in execution order where both
have as many (a check on the FLOPs of the direct convolution flags a pair that disagrees
by more than 3%: `?` in the table); else each ONNX Runtime layer is paired with the first
unpaired kiln layer of the same FLOPs (a Winograd layer's FLOPs are its matmul's, so those
stay unpaired and are listed apart; layers of equal FLOPs may pair wrongly there — a
stride-2 3x3 conv with a stride-1 one — so read the kernel names). Everything else (relayouts, pools, element-wise
kernels ONNX Runtime did not fuse, reorders) is summed as "other" per runtime. A kiln
layer includes the epilogue fused into it (an activation, a residual add, a swish, a
squeeze-excite's scale), which ONNX Runtime may run as nodes of their own, counted in its
"other": read a layer that kiln loses together with that sum.

The report: the CPU, both runtimes' totals, the layers where kiln loses the most time
(kiln − ONNX Runtime, µs), the layers where it gains the most, and the sum by layer kind.
Per-layer profiles add each runtime's own overhead (timestamps around every node or
kernel); compare the totals with bench/run.py's whole-model times for what it costs.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as bench_run  # noqa: E402  (machine())

ORT_LAYER_OPS = {"Conv", "FusedConv", "ConvTranspose", "Gemm", "MatMul", "FusedMatMul", "FusedGemm",
                 "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "DynamicQuantizeMatMul",
                 "MatMulIntegerToFloat", "NhwcFusedConv"}
KILN_LAYER_KINDS = ("conv_nchwc", "conv", "matmul", "gemm", "deconv")


def ort_feeds(sess):
    rng = np.random.default_rng(42)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        if "float" in i.type:
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(np.float16 if "float16" in i.type else np.float32)
        elif "int64" in i.type:
            feeds[i.name] = rng.integers(0, 10, shape).astype(np.int64)
        elif "int32" in i.type:
            feeds[i.name] = rng.integers(0, 10, shape).astype(np.int32)
        elif "bool" in i.type:
            feeds[i.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            raise SystemExit("layers: input %s of type %s: not generated here" % (i.name, i.type))
    return feeds


def dims(shape_entry):
    """ONNX Runtime's input_type_shape entries are {"float": [1, 64, 56, 56]}."""
    return list(shape_entry.values())[0] if shape_entry else []


def ort_flops(args):
    """The direct FLOPs of an ONNX Runtime conv or matmul node from its profiled shapes."""
    op, ins, outs = args.get("op_name", ""), args.get("input_type_shape", []), args.get("output_type_shape", [])
    try:
        if "Conv" in op and len(ins) >= 2 and outs:
            w, o = dims(ins[1]), dims(outs[0])
            if len(o) == 5:  # NCHWc: [N, C / b, H, W, b]
                o = [o[0], o[1] * o[4], o[2], o[3]]
            if op == "ConvTranspose":  # weights [C, M / g, kh, kw]: each input pixel x its taps
                x = dims(ins[0])
                return 2 * int(np.prod(x)) * int(np.prod(w[1:]))
            return 2 * int(np.prod(o)) * int(np.prod(w[1:]))
        if ("MatMul" in op or "Gemm" in op) and ins and outs:  # B prepacked: no shape of its own
            a, o = dims(ins[0]), dims(outs[0])
            k = a[-1] if not (op.endswith("Gemm") and args.get("transA")) else a[-2]
            return 2 * int(np.prod(o)) * int(k)
    except (TypeError, ValueError, IndexError):
        pass
    return 0


def ort_round(model, threads, runs, work):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(work, "ort")
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = ort_feeds(sess)
    for _ in range(3 + runs):  # three warm-up runs, then the timed ones
        sess.run(None, feeds)
    prof = sess.end_profiling()
    with open(prof) as f:
        events = json.load(f)
    os.remove(prof)
    # the node events of the last `runs` model runs, in execution order within a run
    nodes = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    runs_ev = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    start = runs_ev[-runs]["ts"] if len(runs_ev) >= runs else 0
    per = collections.OrderedDict()
    for e in nodes:
        if e["ts"] < start:
            continue
        name = e["name"][: -len("_kernel_time")]
        if name not in per:
            per[name] = {"op": e["args"].get("op_name", ""), "flops": ort_flops(e["args"]), "us": []}
        per[name]["us"].append(e["dur"])
    return per


def kiln_round(kiln, bundle, threads, runs, work):
    trace = os.path.join(work, "kiln.json")
    p = subprocess.run([kiln, "run", bundle, "--threads", str(threads), "--repeat", str(runs + 3), "--trace", trace],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        raise SystemExit("layers: kiln run failed: %s" % p.stderr.strip()[-300:])
    with open(trace) as f:
        events = [e for e in json.load(f) if e.get("cat") == "Node" and e["args"]["run"] >= 3]
    events.sort(key=lambda e: (e["args"]["run"], e["ts"]))
    per = collections.OrderedDict()
    for e in events:
        k = e["name"]
        if k not in per:
            per[k] = {"flops": e["args"].get("flops", 0), "us": []}
        per[k]["us"].append(e["dur"])
    return per


def kiln_kind(name):
    """k12_conv_nchwc -> conv_nchwc"""
    return name.split("_", 1)[1] if "_" in name else name


def kiln_layers(per):
    """The kernels grouped into layers (a Winograd conv's three kernels one layer), in plan order,
    and the rest."""
    layers, other, wino = [], [], None
    for k, v in per.items():
        kind = kiln_kind(k)
        if kind.startswith("winograd_in"):
            wino = {"kernels": [k], "flops": 0, "us": v["us"], "winograd": True}
            continue
        if wino is not None:
            wino["kernels"].append(k)
            wino["us"] = [a + b for a, b in zip(wino["us"], v["us"])]
            if kind.startswith("matmul"):
                wino["flops"] += v["flops"]
            if kind.startswith("winograd_out"):
                layers.append(wino)
                wino = None
            continue
        if any(kind == t or kind.startswith(t + "_") for t in KILN_LAYER_KINDS):
            layers.append({"kernels": [k], "flops": v["flops"], "us": v["us"], "winograd": False})
        else:
            other.append((k, v))
    return layers, other


def pair(ort_layers, k_layers):
    """[(ort_index, kiln_index or None)], and whether the pairing was by order."""
    if len(ort_layers) == len(k_layers):
        return [(i, i) for i in range(len(ort_layers))], True
    used, out = set(), []
    for i, o in enumerate(ort_layers):
        j = next((j for j, k in enumerate(k_layers) if j not in used and not k["winograd"] and o["flops"] and
                  abs(k["flops"] - o["flops"]) <= 0.03 * o["flops"]), None)
        if j is not None:
            used.add(j)
        out.append((i, j))
    return out, False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", help="write the per-layer rows here too")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kiln-layers-")
    bundle = os.path.join(work, "model.kiln")
    p = subprocess.run([args.kiln, "compile", args.model, "-o", bundle], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        raise SystemExit("layers: kiln compile failed: %s" % p.stdout.strip()[-300:])
    ort_acc, k_acc = collections.OrderedDict(), collections.OrderedDict()
    for r in range(args.rounds):
        for side in (("ort", "kiln") if r % 2 == 0 else ("kiln", "ort")):
            if side == "ort":
                for n, v in ort_round(args.model, args.threads, args.runs, work).items():
                    ort_acc.setdefault(n, {"op": v["op"], "flops": v["flops"], "us": []})["us"] += v["us"]
            else:
                for n, v in kiln_round(args.kiln, bundle, args.threads, args.runs, work).items():
                    k_acc.setdefault(n, {"flops": v["flops"], "us": []})["us"] += v["us"]
    med = statistics.median
    ort_layers = [{"name": n, "op": v["op"], "flops": v["flops"], "us": med(v["us"])}
                  for n, v in ort_acc.items() if v["op"] in ORT_LAYER_OPS]
    ort_other = sum(med(v["us"]) for v in ort_acc.values() if v["op"] not in ORT_LAYER_OPS)
    k_raw, k_other_list = kiln_layers(k_acc)
    k_layers = [dict(l, us=med(l["us"])) for l in k_raw]
    k_other = sum(med(v["us"]) for _, v in k_other_list)
    pairs, by_order = pair(ort_layers, k_layers)
    rows = []
    for i, j in pairs:
        o = ort_layers[i]
        k = k_layers[j] if j is not None else None
        flag = ""
        if k is not None and not k["winograd"] and o["flops"] and abs(k["flops"] - o["flops"]) > 0.03 * o["flops"]:
            flag = "?"
        rows.append({"ort_node": o["name"], "op": o["op"], "mflops": o["flops"] / 1e6, "ort_us": o["us"],
                     "kiln": "+".join(k["kernels"]) if k else None, "winograd": bool(k and k["winograd"]),
                     "kiln_us": k["us"] if k else None, "flag": flag})
    paired = [r for r in rows if r["kiln_us"] is not None]
    paired_k = {j for _, j in pairs}
    unpaired_k = [k for j, k in enumerate(k_layers) if j not in paired_k]
    cpu = bench_run.machine()["cpu"]
    t_ort = sum(l["us"] for l in ort_layers) + ort_other
    t_k = sum(l["us"] for l in k_layers) + k_other
    print("%s; %s; %d threads; %d rounds x %d runs, alternating; per-layer medians (us) from each runtime's "
          "profiler" % (os.path.basename(args.model), cpu, args.threads, args.rounds, args.runs))
    print()
    print("| | ONNX Runtime us | kiln us | kiln / ORT |")
    print("|---|---:|---:|---:|")
    print("| all nodes / kernels | %.0f | %.0f | %.2f |" % (t_ort, t_k, t_k / t_ort))
    po, pk = sum(r["ort_us"] for r in paired), sum(r["kiln_us"] for r in paired)
    print("| %d paired layers (%s) | %.0f | %.0f | %.2f |" % (len(paired), "in order" if by_order else "by FLOPs",
                                                            po, pk, pk / po if po else float("nan")))
    wr = [r for r in paired if r["winograd"]]
    if wr:
        wo, wk = sum(r["ort_us"] for r in wr), sum(r["kiln_us"] for r in wr)
        print("| of which kiln runs as Winograd (%d) | %.0f | %.0f | %.2f |" % (len(wr), wo, wk, wk / wo))
    uo = sum(r["ort_us"] for r in rows if r["kiln_us"] is None)
    uk = sum(k["us"] for k in unpaired_k)
    if uo or uk:
        print("| unpaired layers (%d ORT, %d kiln) | %.0f | %.0f | |" % (len(rows) - len(paired), len(unpaired_k), uo, uk))
    print("| everything else | %.0f | %.0f | %.2f |" % (ort_other, k_other, k_other / ort_other if ort_other else float("nan")))
    print()

    def table(title, sel):
        print(title)
        print()
        print("| ORT node | op | MFLOPs | ORT us | kiln kernels | kiln us | kiln / ORT | kiln − ORT us |")
        print("|---|---|---:|---:|---|---:|---:|---:|")
        for r in sel:
            print("| %s | %s | %.1f | %.0f | %s%s | %.0f | %.2f | %+.0f |" % (
                r["ort_node"], r["op"], r["mflops"], r["ort_us"], r["kiln"], r["flag"], r["kiln_us"],
                r["kiln_us"] / r["ort_us"], r["kiln_us"] - r["ort_us"]))
        print()

    by_loss = sorted(paired, key=lambda r: r["ort_us"] - r["kiln_us"])
    table("Where kiln loses the most time:", [r for r in by_loss if r["kiln_us"] > r["ort_us"]][:args.top])
    table("Where kiln gains the most:", [r for r in reversed(by_loss) if r["kiln_us"] < r["ort_us"]][:args.top])
    if unpaired_k:
        print("Unpaired kiln layers: " + ", ".join("%s (%.0f us)" % ("+".join(k["kernels"]), k["us"])
                                                    for k in unpaired_k[:args.top]))
        print()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "cpu": cpu, "threads": args.threads, "rounds": args.rounds,
                       "runs": args.runs, "rows": rows, "ort_other_us": ort_other, "kiln_other_us": k_other,
                       "unpaired_kiln": unpaired_k}, f, indent=1)


if __name__ == "__main__":
    main()
