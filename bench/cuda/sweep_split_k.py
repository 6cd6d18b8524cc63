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
import os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import sweep_tiles  # noqa: E402

LAYERS = {  # name: (input channels, input map size, output channels, kernel[, stride]) at batch 1
    "c3_7": (512, 7, 512, 3), "c3s2_7": (512, 14, 512, 3, 2), "c1_7b": (2048, 7, 512, 1),
    "c3_14": (256, 14, 256, 3), "c3s2_14": (256, 28, 256, 3, 2), "c1_14b": (1024, 14, 256, 1),
    "c1_7_mnv2": (960, 7, 320, 1),  # MobileNetV2's last projection
}
SLICES = ["off", "2", "4", "8", "16"]
TILES = ["def", "1,7", "2,7", "4,7", "2,1", "1,1"]


def prepare(out, kiln, only=None):
    import numpy as np
    os.makedirs(out, exist_ok=True)
    for name, spec in LAYERS.items():
        if only and name not in only:
            continue
        c, oc, k = spec[0], spec[2], spec[3]
        w = ((np.arange(oc * c * k * k) % 16) - 7.5).astype(np.float32).reshape(oc, c, k, k) * 0.01
        for s in SLICES:
            sweep_tiles.sweep_model(kiln, out, name, sweep_tiles.conv_relu(name, spec, 1, w), TILES,
                                    lambda t: "gpu_conv:toc=%s,tow=%s" % tuple(t), ("--split-k", s), "s%s_" % s)
    print("prepared", len([f for f in os.listdir(out) if f.endswith(".kiln")]), "bundles in", out)


def run(d, kiln_run):
    """All of a bundle's kernels, µs per run (the conv and the adds of the partials)."""
    def measure(out):
        m = re.search(r"profile: ([\d.]+) ms per run in kernels", out)
        return round(float(m.group(1)) * 1000, 1) if m else None
    sweep_tiles.time_bundles(d, kiln_run, 100, measure, "split_k.json")


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
