#!/usr/bin/env python3
"""torch_baseline.py — a framework baseline for kiln's GPU benchmark: PyTorch with cuDNN/cuBLAS.

ONNX Runtime's CUDA provider cannot run on the borrowed GPU machines (no network there, and its
wheel is larger than what a call may carry), but their image has PyTorch built for CUDA 13 with
cuDNN. This script times the three GPU benchmark models as PyTorch runs them, the way a PyTorch
user would deploy them, on the machine where kiln's bundles are timed (tests/gpu/device_run.sh):

  resnet50      torchvision's ResNet-50 (v1.5: a downsampling block's stride on its 3x3 conv;
                kiln's model is the ONNX zoo's ResNet-50 v1 architecture)
  mobilenetv2   torchvision's MobileNetV2 (1.0, 224)
  bert_encoder  4 post-LN layers, d 256, 4 heads, FFN 1024, exact GELU, seq 128 — the layers of
                models/gen_bench_models.py's bert_encoder, as torch.nn.TransformerEncoder

Weights are random (timing does not depend on them). Each configuration: eval mode, no grad,
cudnn.benchmark on, in two math modes (fp32: TF32 off for cuDNN and cuBLAS; tf32: on) and two
ways to launch (eager; a CUDA graph captured once and replayed, as kiln replays its launches).
As kiln-run's times, each timed run copies the input from pageable host memory to the GPU,
runs the model and copies the output back, synchronized; median of --repeat runs after
--warmup. Prints one JSON line per configuration and writes them to --out.

usage: torch_baseline.py [--batches 1,16] [--repeat 50] [--warmup 10] [--models ...] [--out FILE]
"""
import argparse, json, statistics, sys, time


def build(name, torch, nn):
    if name == "resnet50":
        import torchvision
        return torchvision.models.resnet50(weights=None), (3, 224, 224)
    if name == "mobilenetv2":
        import torchvision
        return torchvision.models.mobilenet_v2(weights=None), (3, 224, 224)
    if name == "bert_encoder":
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=False,
                                           layer_norm_eps=1e-12)
        return nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False), (128, 256)
    raise SystemExit("unknown model " + name)


def time_runs(fn, torch, repeat, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert_encoder")
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    import torch
    import torch.nn as nn
    if not torch.cuda.is_available():
        print("torch_baseline: no CUDA device visible to PyTorch; nothing timed")
        return 0
    dev = torch.device("cuda")
    print("torch %s, cuDNN %s, %s" % (torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name(0)))
    torch.backends.cudnn.benchmark = True
    lines = []
    for name in a.models.split(","):
        model, shape = build(name, torch, nn)
        model = model.to(dev).eval()
        for batch in [int(b) for b in a.batches.split(",")]:
            host = torch.rand((batch,) + shape) * 2 - 1
            for mode in ("fp32", "tf32"):
                torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
                torch.backends.cudnn.allow_tf32 = mode == "tf32"
                with torch.inference_mode():
                    def eager():
                        return model(host.to(dev)).cpu()
                    med, best = time_runs(eager, torch, a.repeat, a.warmup)
                    rec = {"model": name, "batch": batch, "math": mode, "launch": "eager", "median_ms": round(med, 4),
                           "min_ms": round(best, 4)}
                    print(json.dumps(rec), flush=True)
                    lines.append(rec)
                    # a CUDA graph: static input/output buffers, the host copies outside it
                    static_in = host.to(dev)
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        for _ in range(3):
                            model(static_in)
                    torch.cuda.current_stream().wait_stream(s)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        static_out = model(static_in)

                    def graphed():
                        static_in.copy_(host)
                        g.replay()
                        return static_out.cpu()
                    med, best = time_runs(graphed, torch, a.repeat, a.warmup)
                    rec = dict(rec, launch="cuda_graph", median_ms=round(med, 4), min_ms=round(best, 4))
                    print(json.dumps(rec), flush=True)
                    lines.append(rec)
                    del g
    if a.out:
        with open(a.out, "w") as f:
            for r in lines:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
