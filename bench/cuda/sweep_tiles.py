#!/usr/bin/env python3
"""sweep_tiles.py — the GPU templates' tiles over the benchmark models' layer shapes.

The GPU conv template's default thread tiles (schedule/sched_gpu_conv.c, lower_gpu_conv_default)
were chosen from this sweep over ResNet-50's conv shapes; the matmul template's tiles are swept
over the BERT-like encoder's matrix products. `kiln tune` has no GPU measurer, and the GPU machines are lent for
minutes, so the sweep is split in two:

  prepare OUT   (here, with kiln and the onnx package) one single-op model per layer class —
                Conv + Relu at batch 16, or MatMul — its weights a model input so nothing large
                travels, compiled for cuda-sm90 once with the default tiles and once per tile
                (`kiln compile --knobs gpu_conv:toc=T,tow=W`, the block derived from the thread
                tile as the default derives it; `--knobs gpu_matmul:bm=..,bn=..,bk=..,tm=..,tn=..`):
                OUT/<layer>__<tile>.kiln
  run OUT       (on the GPU machine, numpy only) random inputs made there, each bundle timed with
                kiln-run --repeat 40 --profile; the kernel's GFLOP/s per layer and tile printed and
                written to $OUT/sweep.json (or ./sweep.json)

usage: sweep_tiles.py prepare OUT [--kiln build/kiln] [--batch 16] [--layers c3_7,mm_qkv,...]
       sweep_tiles.py run OUT [--kiln-run PATH]
"""
import json, os, re, subprocess, sys, tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LAYERS = {  # name: (input channels, map size, output channels, kernel[, stride]) — ResNet-50's classes
    "c3_7": (512, 7, 512, 3), "c3_14": (256, 14, 256, 3), "c3_28": (128, 28, 128, 3), "c3_56": (64, 56, 64, 3),
    "c1_7a": (512, 7, 2048, 1), "c1_7b": (2048, 7, 512, 1), "c1_14a": (256, 14, 1024, 1),
    "c1_14b": (1024, 14, 256, 1), "c1_28b": (512, 28, 128, 1), "c1_56a": (64, 56, 256, 1), "c1_56b": (256, 56, 64, 1),
    # stride 2 (input map size given): the stage-opening 3x3 convs and the 7x7 stem
    "c3s2_7": (512, 14, 512, 3, 2), "c3s2_14": (256, 28, 256, 3, 2), "c3s2_28": (128, 56, 128, 3, 2),
    "c7s2_112": (3, 224, 64, 7, 2),
}
TILES = ["def", "8,4", "4,4", "8,2", "4,2", "2,2", "8,1", "4,1", "2,1", "8,7", "4,7", "2,7", "1,7"]
BATCH = 16
# the BERT-like encoder's products at batch 16 (rows = 16 x 128): name: (A shape, B shape)
MATMULS = {"qkv": ([2048, 256], [256, 256]), "ffn1": ([2048, 256], [256, 1024]), "ffn2": ([2048, 1024], [1024, 256]),
           "scores": ([64, 128, 64], [64, 64, 128]), "context": ([64, 128, 128], [64, 128, 64])}
MM_TILES = ["def"] + ["%d,%d,%d,%d,%d" % t for t in (
    (64, 64, 16, 4, 4), (64, 64, 8, 4, 4), (64, 64, 32, 4, 4), (128, 64, 16, 8, 4), (64, 128, 16, 4, 8),
    (128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (32, 64, 16, 2, 4), (64, 32, 16, 4, 2), (32, 32, 16, 2, 2),
    (32, 32, 32, 2, 2), (128, 32, 16, 8, 2), (32, 128, 16, 2, 8), (64, 64, 16, 8, 8), (128, 64, 16, 4, 4))]


def sweep_model(kiln, out, label, graph, tiles, knobs_of, extra=(), variant=""):
    """graph saved as a model, compiled once per tile (knobs_of(tile): the --knobs value;
    `extra`: more compile options) into OUT/<label>__<variant><tile>.kiln ("def": the
    default tiles)."""
    import onnx
    from onnx import helper
    model = os.path.join(out, label + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    for tile in tiles:
        knobs = [] if tile == "def" else ["--knobs", knobs_of(tile.split(","))]
        bundle = os.path.join(out, "%s__%s%s.kiln" % (label, variant, tile.replace(",", "x")))
        r = subprocess.run([kiln, "compile", model, "--target", "cuda-sm90", "-o", bundle] + list(extra) + knobs,
                           capture_output=True, text=True)
        if r.returncode:
            print("FAIL %s %s%s: %s" % (label, variant, tile, r.stderr.strip()))
    os.remove(model)


def conv_relu(name, spec, batch, weights=None):
    """Conv + Relu for spec = (input channels, map size, output channels, kernel[, stride]),
    'same' padding; the weights a model input, or the constant array given."""
    from onnx import helper, numpy_helper, TensorProto as T
    c, h, oc, k = spec[:4]
    st = spec[4] if len(spec) > 4 else 1
    p = k // 2
    oh = (h + 2 * p - k) // st + 1
    inputs = [helper.make_tensor_value_info("x", T.FLOAT, [batch, c, h, h])]
    if weights is None:
        inputs.append(helper.make_tensor_value_info("w", T.FLOAT, [oc, c, k, k]))
    return helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[p] * 4, kernel_shape=[k, k], strides=[st, st]),
         helper.make_node("Relu", ["c"], ["y"])], name, inputs,
        [helper.make_tensor_value_info("y", T.FLOAT, [batch, oc, oh, oh])],
        [] if weights is None else [numpy_helper.from_array(weights, "w")])


def prepare(out, kiln, batch=BATCH, only=None):
    from onnx import helper, TensorProto as T
    os.makedirs(out, exist_ok=True)
    for name, spec in LAYERS.items():
        if only and name not in only:
            continue
        sweep_model(kiln, out, name, conv_relu(name, spec, batch), TILES, lambda t: "gpu_conv:toc=%s,tow=%s" % tuple(t))
    for name, (a, b) in MATMULS.items():
        if only and "mm_" + name not in only:
            continue
        if batch != BATCH:  # the encoder's rows or its heads' batch scale with the batch
            a, b = [a[0] * batch // BATCH] + a[1:], ([b[0] * batch // BATCH] + b[1:]) if len(b) == 3 else b
        g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], name,
                              [helper.make_tensor_value_info("a", T.FLOAT, a), helper.make_tensor_value_info("b", T.FLOAT, b)],
                              [helper.make_tensor_value_info("y", T.FLOAT, a[:-1] + b[-1:])])
        sweep_model(kiln, out, "mm_" + name, g, MM_TILES, lambda t: "gpu_matmul:bm=%s,bn=%s,bk=%s,tm=%s,tn=%s" % tuple(t))
    print("prepared", len([f for f in os.listdir(out) if f.endswith(".kiln")]), "bundles in", out)


def time_bundles(d, kiln_run, repeat, measure, out_name):
    """Every OUT/<layer>__<variant>.kiln in d run with kiln-run --repeat N --profile on random
    inputs made here (the same per layer); measure(stdout) is the figure kept (None: the run's
    error instead); printed and written to $OUT/<out_name> (or ./<out_name>)."""
    import numpy as np
    tmp = "/tmp/sweep-inputs"
    os.makedirs(tmp, exist_ok=True)
    res = {}
    for f in sorted(os.listdir(d)):
        if not f.endswith(".kiln"):
            continue
        layer, variant = f[:-5].split("__")
        man = json.load(tarfile.open(os.path.join(d, f)).extractfile("manifest.json"))
        args = []
        for i in man["inputs"]:
            p = os.path.join(tmp, "%s_%s_%s.npy" % (layer, i["name"], "x".join(map(str, i["shape"]))))
            if not os.path.exists(p):
                np.save(p, np.random.default_rng(1).random(i["shape"], dtype=np.float32) - 0.5)
            args += ["--input", "%s=%s" % (i["name"], p)]
        r = subprocess.run([kiln_run, os.path.join(d, f), "--repeat", str(repeat), "--profile"] + args,
                           capture_output=True, text=True, timeout=60)
        v = measure(r.stdout)
        res.setdefault(layer, {})[variant] = v if v is not None else "error: " + (r.stdout + r.stderr)[-200:]
        print(layer, variant, res[layer][variant], flush=True)
    json.dump(res, open(os.path.join(os.environ.get("OUT", "."), out_name), "w"), indent=1)


def run(d, kiln_run):
    """The first (busiest) kernel's GFLOP/s per bundle."""
    def measure(out):
        m = re.search(r"([\d.]+) us\s+([\d.]+) GFLOP/s", out)
        return float(m.group(2)) if m else None
    time_bundles(d, kiln_run, 40, measure, "sweep.json")


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("prepare", "run"):
        raise SystemExit(__doc__)
    opt = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], opt.get("--kiln", os.path.join(ROOT, "build", "kiln")), int(opt.get("--batch", BATCH)),
                set(filter(None, opt.get("--layers", "").split(","))))
    else:
        run(sys.argv[2], opt.get("--kiln-run", os.path.join(ROOT, ".gpu", "bin", "kiln-run")))


if __name__ == "__main__":
    main()
