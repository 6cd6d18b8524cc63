#!/usr/bin/env python3
"""sweep_split_k.py — split-K (layout/split_k.c) over the convs with few outputs, on a GPU.

A conv of one group whose output is small (ResNet-50's 7x7 and 14x14 stages at batch 1)
leaves most of a GPU idle; `kiln compile --split-k N` splits its reduction over N slices
of the input channels (a grouped conv with N times the outputs, then element-wise adds
of the partials with the epilogue). This sweep measures, per layer, the time of all of a
bundle's kernels for each slice count (off, 2, 4, 8, 16) and a few thread tiles of the
conv template (`--knobs gpu_conv:toc=T,tow=W`), so that the default rule
(`slices` in layout/split_k.c) is read off measurements:

  prepare OUT   (here, with kiln and the onnx package) Conv + Relu models at batch 1 whose
                weights are constants (split-K needs them at compile time) of a repeating
                pattern — the times do not depend on the values, and the bundles then
                compress to a few hundred KB for the trip to the GPU machine:
                OUT/<layer>__s<N>_<tile>.kiln
  run OUT       (on the GPU machine, numpy only) each bundle timed with kiln-run
                --repeat 100 --profile: the kernels' total µs per run, printed and written
                to $OUT/split_k.json (or ./split_k.json)

usage: sweep_split_k.py prepare OUT [--kiln build/kiln] [--layers c3_7,...]
       sweep_split_k.py run OUT [--kiln-run PATH]
"""
import json, os, re, subprocess, sys, tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LAYERS = {  # name: (input channels, input map size, output channels, kernel[, stride]) at batch 1
    "c3_7": (512, 7, 512, 3), "c3s2_7": (512, 14, 512, 3, 2), "c1_7b": (2048, 7, 512, 1),
    "c3_14": (256, 14, 256, 3), "c3s2_14": (256, 28, 256, 3, 2), "c1_14b": (1024, 14, 256, 1),
    "c1_7_mnv2": (960, 7, 320, 1),  # MobileNetV2's last projection
}
SLICES = ["off", "2", "4", "8", "16"]
TILES = ["def", "1,7", "2,7", "4,7", "2,1", "1,1"]


def prepare(out, kiln, only=None):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto as T
    os.makedirs(out, exist_ok=True)
    for name, spec in LAYERS.items():
        if only and name not in only:
            continue
        c, h, oc, k = spec[:4]
        st = spec[4] if len(spec) > 4 else 1
        p = k // 2
        oh = (h + 2 * p - k) // st + 1
        w = ((np.arange(oc * c * k * k) % 16) - 7.5).astype(np.float32).reshape(oc, c, k, k) * 0.01
        g = helper.make_graph(
            [helper.make_node("Conv", ["x", "w"], ["c"], pads=[p] * 4, kernel_shape=[k, k], strides=[st, st]),
             helper.make_node("Relu", ["c"], ["y"])], name,
            [helper.make_tensor_value_info("x", T.FLOAT, [1, c, h, h])],
            [helper.make_tensor_value_info("y", T.FLOAT, [1, oc, oh, oh])], [numpy_helper.from_array(w, "w")])
        model = os.path.join(out, name + ".onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model)
        for s in SLICES:
            for tile in TILES:
                knobs = [] if tile == "def" else ["--knobs", "gpu_conv:toc=%s,tow=%s" % tuple(tile.split(","))]
                bundle = os.path.join(out, "%s__s%s_%s.kiln" % (name, s, tile.replace(",", "x")))
                r = subprocess.run([kiln, "compile", model, "--target", "cuda-sm90", "--split-k", s, "-o", bundle] + knobs,
                                   capture_output=True, text=True)
                if r.returncode:
                    print("FAIL %s s%s %s: %s" % (name, s, tile, r.stderr.strip()[-200:]))
        os.remove(model)
    print("prepared", len([f for f in os.listdir(out) if f.endswith(".kiln")]), "bundles in", out)


def run(d, kiln_run):
    import numpy as np
    tmp = "/tmp/split-k-inputs"
    os.makedirs(tmp, exist_ok=True)
    res = {}
    for f in sorted(os.listdir(d)):
        if not f.endswith(".kiln"):
            continue
        layer, variant = f[:-5].split("__")
        man = json.load(tarfile.open(os.path.join(d, f)).extractfile("manifest.json"))
        args = []
        for i in man["inputs"]:
            p = os.path.join(tmp, "%s_%s.npy" % (layer, i["name"]))
            if not os.path.exists(p):
                np.save(p, np.random.default_rng(1).random(i["shape"], dtype=np.float32) - 0.5)
            args += ["--input", "%s=%s" % (i["name"], p)]
        r = subprocess.run([kiln_run, os.path.join(d, f), "--repeat", "100", "--profile"] + args, capture_output=True,
                           text=True, timeout=60)
        m = re.search(r"profile: ([\d.]+) ms per run in kernels", r.stdout)
        res.setdefault(layer, {})[variant] = round(float(m.group(1)) * 1000, 1) if m else "error: " + (r.stdout + r.stderr)[-200:]
        print(layer, variant, res[layer][variant], flush=True)
    json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "split_k.json"), "w"), indent=1)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("prepare", "run"):
        raise SystemExit(__doc__)
    opt = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], opt.get("--kiln", os.path.join(ROOT, "build", "kiln")),
                set(filter(None, opt.get("--layers", "").split(","))))
    else:
        run(sys.argv[2], opt.get("--kiln-run", os.path.join(ROOT, ".gpu", "bin", "kiln-run")))


if __name__ == "__main__":
    main()
