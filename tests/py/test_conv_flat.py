"""test_conv_flat.py — dense convs whose register tiles run across row ends (the conv
template's px_flat: the reduction's (oh, ow) one axis of pixels, schedule/sched_conv.c),
against ONNX Runtime, on every x86-64 level this machine runs.

A map whose rows no good tile width divides (7 pixels in tiles of 6) is tiled over its
flattened pixels: the reduction is attached at a tile of the epilogue's fused (oh, ow)
and covers just that tile's pixels (schedule.c's sch_flatten; the bound inference folds
the fused loop's div/mod pair back into one linear index), the last tile of each image
ragged. Checked here, each conv compiled with px_flat off and on:
- 3x3 and 1x1 convs, stride 1 and 2, maps of 7x7, 13x13, 5x9, 3x3, 14x14 and 28x28
  (where the default tiles two rows of 3 pixels, or rows of 6 and a ragged 4), batch 1 and 2,
  input channels 16-64 and output channels 16-64, with an epilogue (bias, Relu, a
  residual add) or none (the reduction is the model's output): outputs against ONNX
  Runtime, |diff| <= 1e-4 + 1e-4 |want| (float32 sums of up to 576 products in another
  order).
- That the default takes the flat tiles on ResNet's 7x7 stage (512 -> 512, 3x3), in whole
  images (an output block's weights pass L1): its loop IR is the one `--knobs` with
  px_flat=1 and image_tile=1 gives, and not the one px_flat=0 gives.
- Whole images per output block in flat tiles (image_tile with px_flat: the input-channel
  blocks outside tiles of 6 pixels, each tile's partial sums kept in memory between
  blocks, the last tile ragged) on every shape above, against ONNX Runtime the same way;
  and that the default takes them for ResNet-50's 1x1 conv 1024 -> 256 at 14x14 on AVX2
  (its loop IR is the one `--knobs` gives), not for a stride-2 1x1 conv from 28x28 (whose
  input block does not fit L1).
- The kernel columns and block channels as one reduction loop (fuse_kw) on and off on
  every shape above, against ONNX Runtime the same way; and that the default takes it on
  AVX2 for a 3x3 conv over blocks of 16 input channels (256 -> 512, stride 2, 14x14: its
  loop IR is the one fuse_kw=1 gives, not fuse_kw=0's), not for a conv over 3 input
  channels nor a dilated one, and not on AVX-512.
- That a tuning record written before px_flat existed (no value for it) applies as it
  was tuned, px_flat off, even with knobs flat tiles exclude (7 rows x 1 pixel), and the
  bundle computes what ONNX Runtime does.
Every conv is compiled with --winograd off: the direct template is what is checked (on
AVX2 the 3x3 stride-1 convs here would otherwise run as Winograd, layout/winograd.c,
and their conv knobs would have no conv to apply to).
A level the CPU lacks (x86_64-avx512 on most AMD machines) is reported skipped.

Options: --kiln PATH. Closing line: test_conv_flat: N passed, M failed.
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402

DIRECT = ["--winograd", "off"]  # the direct conv template, not Winograd (see the top)
TARGETS = ["host", "x86_64", "x86_64-avx2", "x86_64-avx512"]
FLAT_ON = "conv:px_flat=1,pixel_outer=0,image_tile=0,pad_tile=0,oh_tile=1"
FLAT_OFF = "conv:px_flat=0"
IMAGE_FLAT = "conv:image_tile=1,px_flat=1,ow_tile=6,pixel_outer=0,pad_tile=0,oh_tile=1"
FUSE_ON = "conv:fuse_kw=1"
FUSE_OFF = "conv:fuse_kw=0"


def save(graph, path):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def conv_model(rng, d, tag, n, c, m, h, w, k, stride, epilogue, dilation=1):
    pad = dilation * (k // 2)
    ke = dilation * (k - 1) + 1  # the kernel's extent
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((m, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    inits = [numpy_helper.from_array(wt, "w")]
    conv_in = ["x", "w"]
    if epilogue:
        inits.append(numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b"))
        conv_in.append("b")
    nodes = [helper.make_node("Conv", conv_in, ["c" if epilogue else "y"], pads=[pad] * 4, strides=[stride] * 2,
                              dilations=[dilation] * 2)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))]
    feeds = {"x": x}
    if epilogue:
        oh, ow = (h + 2 * pad - ke) // stride + 1, (w + 2 * pad - ke) // stride + 1
        r = rng.standard_normal((n, m, oh, ow)).astype(np.float32)
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, list(r.shape)))
        feeds["r"] = r
        nodes += [helper.make_node("Relu", ["c"], ["a"]), helper.make_node("Add", ["a", "r"], ["y"])]
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = os.path.join(d, tag + ".onnx")
    save(g, path)
    label = "%dx%d conv s%d%s %dx%dx%dx%d -> %d%s" % (k, k, stride, " d%d" % dilation if dilation > 1 else "", n, c, h,
                                                     w, m, " +bias,relu,add" if epilogue else "")
    return label, path, feeds


def records_before_flat(kiln, checks, rng, d):
    """A record tuned before px_flat existed names no value for it: it applies as it was
    tuned (px_flat 0), also where the default now takes flat tiles and the record's knobs
    (7 rows x 1 pixel) could not go with them."""
    import onnxruntime as ort
    label, path, feeds = conv_model(rng, d, "old", 1, 64, 64, 7, 7, 3, 1, True)
    rec, forced = os.path.join(d, "old.json"), os.path.join(d, "old_forced.json")
    r = util.run_kiln(kiln, ["tune", path, "--records", rec, "--trials", "2", "--target", "x86_64-avx2"] + DIRECT,
                      timeout=600)
    if not checks.check(r.rc == 0, "%s: tune: %s %s" % (label, r.describe(), r.err[-300:])):
        return
    lines = [json.loads(l) for l in open(rec) if l.strip()]
    lines = [x for x in lines if not x.get("confirm") and not x.get("model")]  # trials only: no checks decide
    conv = next((x for x in lines if x.get("template") == "conv" and isinstance(x.get("knobs"), dict)), None)
    if not checks.check(conv is not None and "px_flat" in conv["knobs"], "%s: a conv record with px_flat" % label):
        return
    knobs = dict(conv["knobs"], oh_tile=7, ow_tile=1, image_tile=0, prefetch=0, pixel_outer=0, pad_tile=0)
    del knobs["px_flat"]
    with open(forced, "w") as f:
        for x in lines + [dict(conv, knobs=knobs, cost=1e-12)]:
            f.write(json.dumps(x) + "\n")
    compile_args = ["--target", "x86_64-avx2", "--records", forced] + DIRECT
    r = util.run_kiln(kiln, ["compile", path, "-o", os.path.join(d, "old.kiln")] + compile_args, timeout=120)
    if not checks.check(r.rc == 0 and "tuned schedules for 1 of" in r.out,
                        "%s: a record without px_flat (oh_tile 7) does not apply: %s %s" %
                        (label, r.describe(), (r.err or r.out)[-300:])):
        return
    ys = util.compile_and_run(kiln, checks, label + " with the old record", path, feeds, d, "old", compile_args)
    if ys is None:
        return
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(["y"], feeds)[0].astype(np.float64)
    got = ys["y"].astype(np.float64)
    checks.check(got.shape == want.shape and float((np.abs(got - want) - 1e-4 * np.abs(want)).max()) <= 1e-4,
                 "%s with the old record: off ONNX Runtime" % label)


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_conv_flat")
    rng = np.random.default_rng(7)
    import onnxruntime as ort
    shapes = [  # n, c, m, h, w, k, stride, epilogue
        (1, 64, 64, 7, 7, 3, 1, True), (1, 32, 48, 7, 7, 3, 1, False), (2, 16, 32, 13, 13, 3, 1, True),
        (1, 32, 64, 14, 14, 3, 2, True), (1, 48, 32, 5, 9, 3, 1, False), (1, 64, 16, 3, 3, 3, 1, True),
        (1, 64, 64, 7, 7, 1, 1, True), (2, 32, 32, 13, 13, 1, 2, False), (1, 16, 64, 9, 7, 3, 1, False),
        # rows the default tiles otherwise on AVX2: two rows of 3 pixels (14 wide), rows of 6
        # and a ragged 4 (28 wide)
        (1, 32, 32, 14, 14, 3, 1, True), (1, 16, 32, 56, 56, 3, 2, False),
    ]
    with tempfile.TemporaryDirectory(prefix="kiln_flat_") as d:
        cases = []
        for i, s in enumerate(shapes):
            label, path, feeds = conv_model(rng, d, "c%d" % i, *s)
            if args.filter and args.filter not in label:
                continue
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            cases.append((label, path, feeds, sess.run(["y"], feeds)[0].astype(np.float64)))
        for target, extra in util.runnable_targets(args.kiln, checks, TARGETS):
            for k, (label, path, feeds, want) in enumerate(cases):
                for knobs in (FLAT_OFF, FLAT_ON, IMAGE_FLAT, FUSE_ON, FUSE_OFF):
                    what = "%s [%s, %s]" % (label, target, knobs)
                    ys = util.compile_and_run(args.kiln, checks, what, path, feeds, d, "k%d" % k,
                                              extra + DIRECT + ["--knobs", knobs])
                    if ys is None:
                        continue
                    got = ys["y"].astype(np.float64)
                    err = float((np.abs(got - want) - 1e-4 * np.abs(want)).max()) if got.shape == want.shape else 1e9
                    checks.check(err <= 1e-4, "%s: off ONNX Runtime by %.3g" % (what, float(np.abs(got - want).max())
                                                                              if got.shape == want.shape else -1))
        # the default picks the flat tiles on a 7x7 map of 512 channels, whole images of them
        label, path, _ = conv_model(rng, d, "r7", 1, 512, 512, 7, 7, 3, 1, True)
        irs = {}
        for knobs in (None, IMAGE_FLAT, FLAT_OFF):
            r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "r7.kiln"), "--target",
                                          "x86_64-avx2", "--dump-after", "lower"] + DIRECT +
                              (["--knobs", knobs] if knobs else []), timeout=120)
            irs[knobs] = r.out if r.rc == 0 else None
        checks.check(all(irs.values()) and irs[None] == irs[IMAGE_FLAT] and irs[None] != irs[FLAT_OFF],
                     "%s on x86_64-avx2: the default's loop IR is not whole images in flat tiles' "
                     "(px_flat=1, image_tile=1)" % label)
        # whole images in flat tiles: the default for a 1x1 conv whose input block, weights
        # and partial sums fit L1 (1024 -> 256 at 14x14), not for one whose input block does
        # not (a stride-2 1x1 conv from 28x28: 50 KiB)
        for tag, shape, want_image in (("i14", (1, 1024, 256, 14, 14, 1, 1, True), True),
                                       ("i28", (1, 256, 512, 28, 28, 1, 2, True), False)):
            label, path, _ = conv_model(rng, d, tag, *shape)
            irs = {}
            for knobs in (None, IMAGE_FLAT):
                r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, tag + ".kiln"), "--target",
                                              "x86_64-avx2", "--dump-after", "lower"] + DIRECT +
                                  (["--knobs", knobs] if knobs else []), timeout=120)
                irs[knobs] = r.out if r.rc == 0 else None
            checks.check(all(irs.values()) and (irs[None] == irs[IMAGE_FLAT]) == want_image,
                         "%s on x86_64-avx2: the default's loop IR %s whole images in flat tiles'" %
                         (label, "is not" if want_image else "is"))
        # fuse_kw: the default on AVX2 for blocks of 16 input channels, not for 3 channels,
        # not for a dilated conv, not on AVX-512
        for tag, shape, dil, target, want_fused in (
                ("f10", (1, 256, 512, 14, 14, 3, 2, True), 1, "x86_64-avx2", True),
                ("f10", (1, 256, 512, 14, 14, 3, 2, True), 1, "x86_64-avx512", False),
                ("f3", (1, 3, 24, 32, 32, 3, 1, True), 1, "x86_64-avx2", False),
                ("fd", (1, 64, 64, 20, 20, 3, 1, True), 2, "x86_64-avx2", False)):
            label, path, _ = conv_model(rng, d, tag, *shape, dilation=dil)
            irs = {}
            for knobs in (None, FUSE_ON, FUSE_OFF):
                r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, tag + ".kiln"), "--target",
                                              target, "--dump-after", "lower"] + DIRECT +
                                  (["--knobs", knobs] if knobs else []), timeout=120)
                irs[knobs] = r.out if r.rc == 0 else None
            checks.check(all(irs.values()) and irs[FUSE_ON] != irs[FUSE_OFF] and
                         irs[None] == irs[FUSE_ON if want_fused else FUSE_OFF],
                         "%s on %s: the default's loop IR %s the fused kernel columns' (fuse_kw=1)" %
                         (label, target, "is not" if want_fused else "is"))
        records_before_flat(args.kiln, checks, rng, d)
    checks.finish()


if __name__ == "__main__":
    main()
