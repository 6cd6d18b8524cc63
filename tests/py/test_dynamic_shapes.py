"""test_dynamic_shapes.py — outputs whose shape depends on the data:
NonMaxSuppression, Unique, and NonZero, Compress and TopK on run-time data.

kiln compiles them into loop-IR kernels (lower/lower_seq.c) whose outputs are sized
by the most they can hold and carry the actual size (gir_value.extent; manifest
"extent"); the runtime reports each output's actual shape. Checked against ONNX
Runtime (outputs identical, shapes included):
  - random boxes (corner and centre formats), several batches and classes, box
    counts 1 to 300, the thresholds as constants or as run-time inputs, the limit
    per class constant, run-time, absent (keep none) or larger than the boxes;
  - a YOLO-style detection head end to end: a 1x1 conv over a feature map, sigmoid,
    box decoding (grid offsets, anchors, xywh) into [1, boxes, 4] and class scores,
    then NMS — two inputs, one of them an image with no confident box;
  - the bundle declares the extent (format version 3);
  - post-processing after NMS: the box-index column gathered, the kept boxes and scores
    gathered by it, unsqueezed, concatenated, scaled and transposed (the data-dependent
    size then on axis 1, which the runtime compacts) — each output identical;
  - a consumer that would read the padding (a reduction over the selected indices) is
    refused with a clear message;
  - NonZero of a mask computed at run time (the extent on axis 1: the runtime
    compacts it), transposed and fed to GatherND; Compress with a run-time condition,
    along an axis and flattened; with some, none and all elements selected;
  - TopK with K a run-time input (0, 1, 4, the whole axis; largest and smallest),
    then a cast; a K beyond the axis fails the run with a clear message;
  - Unique: int64 and float inputs, flattened or along each axis (negative too),
    sorted and in order of first occurrence, with all four outputs or Y alone,
    arrays with many repeats and with none.

Options: --kiln PATH. Closing line: test_dynamic_shapes: N passed, M failed.
"""
import argparse
import json
import os
import sys
import tarfile
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402
import test_e2e  # noqa: E402

RNG = np.random.default_rng(11)


def save(path, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def random_boxes(b, n, center):
    if center:
        xy = RNG.uniform(0, 100, (b, n, 2))
        wh = RNG.uniform(2, 30, (b, n, 2))
        return np.concatenate([xy, wh], -1).astype(np.float32)
    p = RNG.uniform(0, 100, (b, n, 2))
    q = p + RNG.uniform(-30, 30, (b, n, 2))  # corners in either order
    return np.concatenate([p[..., :1], p[..., 1:], q[..., :1], q[..., 1:]], -1).astype(np.float32)


def nms_model(path, b, c, n, center, limit, iou, score, runtime):
    """limit/iou/score: a value, or None for an absent input; runtime: they are graph inputs"""
    ins = [helper.make_tensor_value_info("boxes", T.FLOAT, [b, n, 4]),
           helper.make_tensor_value_info("scores", T.FLOAT, [b, c, n])]
    inits, names = [], ["boxes", "scores"]
    for name, v, t, np_t in (("limit", limit, T.INT64, np.int64), ("iou", iou, T.FLOAT, np.float32),
                             ("score", score, T.FLOAT, np.float32)):
        if v is None:
            names.append("")
            continue
        names.append(name)
        if runtime:
            ins.append(helper.make_tensor_value_info(name, t, [1]))
        else:
            inits.append(nh.from_array(np.array([v], np_t), name))
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node("NonMaxSuppression", names, ["selected"], center_point_box=int(center), name="nms")
    save(path, [node], ins, [helper.make_tensor_value_info("selected", T.INT64, [None, 3])], inits)


def yolo_model(path, grid=8, ch=16, classes=3, anchors=((10, 14), (23, 27))):
    """conv 1x1 → sigmoid → decode → NMS; x: [1, ch, grid, grid]"""
    na = len(anchors)
    per = 5 + classes
    w = (RNG.standard_normal((na * per, ch, 1, 1)) * 0.5).astype(np.float32)
    bias = RNG.standard_normal(na * per).astype(np.float32)
    gy, gx = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
    offs = np.stack([gx, gy], -1).reshape(1, 1, grid * grid, 2).astype(np.float32)   # [1,1,G,2]
    anc = np.array(anchors, np.float32).reshape(1, na, 1, 2)
    inits = [nh.from_array(w, "W"), nh.from_array(bias, "B"), nh.from_array(offs, "offs"), nh.from_array(anc, "anc"),
             nh.from_array(np.array([1, na, per, grid * grid], np.int64), "shape1"),
             nh.from_array(np.array([1, na * grid * grid, 4], np.int64), "shape_boxes"),
             nh.from_array(np.array([1, na * grid * grid, classes], np.int64), "shape_cls"),
             nh.from_array(np.array([0, 2, 4, 5 + classes], np.int64), "splits"),
             nh.from_array(np.array(8.0, np.float32), "stride"),
             nh.from_array(np.array([20], np.int64), "limit"),
             nh.from_array(np.array([0.45], np.float32), "iou"),
             nh.from_array(np.array([0.25], np.float32), "thr")]
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["h"]),
        helper.make_node("Sigmoid", ["h"], ["s"]),
        helper.make_node("Reshape", ["s", "shape1"], ["r"]),                      # [1, na, per, G]
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 1, 3, 2]),          # [1, na, G, per]
        helper.make_node("Slice", ["t", "splits_xy0", "splits_xy1", "ax3"], ["xy"]),
        helper.make_node("Slice", ["t", "splits_wh0", "splits_wh1", "ax3"], ["wh"]),
        helper.make_node("Slice", ["t", "splits_obj0", "splits_obj1", "ax3"], ["obj"]),
        helper.make_node("Slice", ["t", "splits_cls0", "splits_cls1", "ax3"], ["cls"]),
        helper.make_node("Add", ["xy", "offs"], ["xy1"]),
        helper.make_node("Mul", ["xy1", "stride"], ["cxy"]),                      # centre in pixels
        helper.make_node("Mul", ["wh", "two"], ["wh2"]),
        helper.make_node("Mul", ["wh2", "wh2"], ["wh4"]),
        helper.make_node("Mul", ["wh4", "anc"], ["bwh"]),                         # (2σ)² · anchor
        helper.make_node("Concat", ["cxy", "bwh"], ["box4"], axis=3),
        helper.make_node("Reshape", ["box4", "shape_boxes"], ["boxes"]),
        helper.make_node("Mul", ["cls", "obj"], ["conf"]),
        helper.make_node("Reshape", ["conf", "shape_cls"], ["conf2"]),
        helper.make_node("Transpose", ["conf2"], ["scores"], perm=[0, 2, 1]),   # [1, classes, boxes]
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou", "thr"], ["selected"],
                         center_point_box=1),
    ]
    for name, lo, hi in (("xy", 0, 2), ("wh", 2, 4), ("obj", 4, 5), ("cls", 5, 5 + classes)):
        inits += [nh.from_array(np.array([lo], np.int64), "splits_%s0" % name),
                  nh.from_array(np.array([hi], np.int64), "splits_%s1" % name)]
    inits += [nh.from_array(np.array([3], np.int64), "ax3"), nh.from_array(np.array(2.0, np.float32), "two")]
    save(path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [1, ch, grid, grid])],
         [helper.make_tensor_value_info("selected", T.INT64, [None, 3])], inits)


class Runner:
    def __init__(self, args, checks, d):
        self.args, self.checks, self.d, self.n = args, checks, d, 0

    def case(self, label, path, feeds_list, extra=(), outputs=("selected",)):
        self.n += 1
        bundle = os.path.join(self.d, "m%d.kiln" % self.n)
        r = util.run_kiln(self.args.kiln, ["compile", path, "-o", bundle] + list(extra))
        if not self.checks.check(r.rc == 0, "%s: compile %s: %s" % (label, r.describe(), r.err.strip())):
            return None
        for k, feeds in enumerate(feeds_list):
            out = os.path.join(self.d, "out%d_%d" % (self.n, k))
            os.makedirs(out)
            argv = []
            for name, v in feeds.items():
                f = os.path.join(out, "in_%s.npy" % name)
                np.save(f, v)
                argv += ["--input", "%s=%s" % (name, f)]
            r = util.run_kiln(self.args.kiln, ["run", bundle, "--output-dir", out] + argv)
            if not self.checks.check(r.rc == 0, "%s [%d]: run %s: %s" % (label, k, r.describe(), r.err.strip())):
                continue
            wants = test_e2e.reference(path, feeds)[0]
            for o in outputs:
                got, want = np.load(os.path.join(out, o + ".npy")), wants[o]
                same = got.shape == want.shape and np.array_equal(got, want)
                self.checks.check(same, "%s [%d] %s: kiln %s, ONNX Runtime %s%s" % (
                    label, k, o, got.shape, want.shape,
                    "" if got.shape != want.shape else ", %d values differ" % int((got != want).sum())))
        return bundle


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    args = ap.parse_args()
    checks = util.Checks("test_dynamic_shapes")
    with tempfile.TemporaryDirectory(prefix="kiln_det_") as d:
        run = Runner(args, checks, d)
        configs = [  # batches, classes, boxes, centre, limit, iou, score, thresholds at run time
            (1, 1, 1, False, 10, 0.5, None, False),
            (1, 2, 50, False, 5, 0.5, None, False),
            (2, 3, 120, False, 20, 0.3, 0.2, False),
            (2, 2, 80, True, 1000, 0.6, 0.5, False),
            (1, 4, 300, True, 30, 0.4, 0.3, True),
            (3, 1, 40, False, 7, 0.0, 0.1, True),
            (1, 2, 30, False, None, None, None, False),  # limit absent: keeps none
        ]
        for i, (b, c, n, center, limit, iou, score, rt) in enumerate(configs):
            path = os.path.join(d, "nms%d.onnx" % i)
            nms_model(path, b, c, n, center, limit, iou, score, rt)
            feeds_list = []
            for k in range(2):
                feeds = {"boxes": random_boxes(b, n, center),
                         "scores": RNG.uniform(0, 1, (b, c, n)).astype(np.float32)}
                if k == 1:  # ties in the scores: the lower box index goes first
                    feeds["scores"] = np.round(feeds["scores"] * 4) / 4
                if rt:
                    for name, v, np_t in (("limit", limit, np.int64), ("iou", iou, np.float32), ("score", score, np.float32)):
                        if v is not None:
                            feeds[name] = np.array([v], np_t)
                feeds_list.append(feeds)
            label = "NMS %dx%dx%d %s limit=%s iou=%s score=%s%s" % (b, c, n, "centre" if center else "corners", limit,
                                                                   iou, score, " (run-time inputs)" if rt else "")
            bundle = run.case(label, path, feeds_list)
            if bundle and i == 2:
                with tarfile.open(bundle) as t:
                    man = json.load(t.extractfile("manifest.json"))
                ext = man["outputs"][0].get("extent")
                checks.check(ext is not None and ext["axis"] == 0 and man["format_version"] == 3,
                             "the manifest declares the output's extent: %s (format %s)" % (ext, man["format_version"]))
                checks.check(man["outputs"][0]["shape"] == [2 * 3 * 20, 3],
                             "the bound is batches x classes x the limit: %s" % man["outputs"][0]["shape"])

        path = os.path.join(d, "yolo.onnx")
        yolo_model(path)
        x = RNG.standard_normal((1, 16, 8, 8)).astype(np.float32)
        run.case("YOLO-style head + NMS", path, [{"x": x}, {"x": x * 0.2}, {"x": np.full_like(x, -3.0)}])

        # post-processing after NMS: the kept boxes and scores gathered, joined, scaled,
        # transposed (a data-dependent size on axis 1: compacted by the runtime)
        path = os.path.join(d, "post.onnx")
        n_boxes = 60
        nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou"], ["sel"]),
                 helper.make_node("Gather", ["sel", "two"], ["idx"], axis=1),
                 helper.make_node("Squeeze", ["boxes", "zero1"], ["b2"]),
                 helper.make_node("Gather", ["b2", "idx"], ["kb"], axis=0),
                 helper.make_node("Reshape", ["scores", "flat"], ["s2"]),
                 helper.make_node("Gather", ["s2", "idx"], ["ks"], axis=0),
                 helper.make_node("Unsqueeze", ["ks", "one1"], ["ks2"]),
                 helper.make_node("Concat", ["kb", "ks2"], ["cat"], axis=1),
                 helper.make_node("Mul", ["cat", "scale"], ["dets"]),
                 helper.make_node("Transpose", ["dets"], ["dets_t"], perm=[1, 0])]
        save(path, nodes, [helper.make_tensor_value_info("boxes", T.FLOAT, [1, n_boxes, 4]),
                           helper.make_tensor_value_info("scores", T.FLOAT, [1, 1, n_boxes])],
             [helper.make_tensor_value_info("dets", T.FLOAT, [None, 5]),
              helper.make_tensor_value_info("dets_t", T.FLOAT, [5, None])],
             [nh.from_array(np.array([15], np.int64), "limit"), nh.from_array(np.array([0.4], np.float32), "iou"),
              nh.from_array(np.array(2, np.int64), "two"), nh.from_array(np.array([0], np.int64), "zero1"),
              nh.from_array(np.array([n_boxes], np.int64), "flat"), nh.from_array(np.array([1], np.int64), "one1"),
              nh.from_array(np.array([[0.5, 0.5, 2, 2, 10]], np.float32), "scale")])
        run.case("NMS, then gathers, concat, scale and transpose", path,
                 [{"boxes": random_boxes(1, n_boxes, False), "scores": RNG.uniform(0, 1, (1, 1, n_boxes)).astype(np.float32)}
                  for _ in range(2)], outputs=("dets", "dets_t"))

        # a consumer of the selected indices: refused, clearly
        path = os.path.join(d, "consumer.onnx")
        nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit"], ["sel"], name="nms"),
                 helper.make_node("ReduceMax", ["sel"], ["y"], keepdims=1)]  # over the padding too: refused
        save(path, nodes, [helper.make_tensor_value_info("boxes", T.FLOAT, [1, 5, 4]),
                           helper.make_tensor_value_info("scores", T.FLOAT, [1, 1, 5])],
             [helper.make_tensor_value_info("y", T.INT64, [1, 1])], [nh.from_array(np.array([3], np.int64), "limit")])
        r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "consumer.kiln")])
        checks.check(r.rc == 1 and "data-dependent shape" in r.err and "ReduceMax" in r.err and
                     not util.clean_failure(r), "a consumer of NMS's output is refused clearly: %s %r" % (r.describe(), r.err))

        # NonZero and Compress on run-time data: the positions of a mask, then the values there
        path = os.path.join(d, "nonzero.onnx")
        nodes = [helper.make_node("Greater", ["x", "thr"], ["mask"]),
                 helper.make_node("NonZero", ["mask"], ["nz"]),               # [2, k]: the extent on axis 1
                 helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),  # [k, 2]
                 helper.make_node("GatherND", ["x", "nzt"], ["vals"]),         # [k]
                 helper.make_node("Compress", ["x", "rowsel"], ["rows"], axis=0),
                 helper.make_node("Compress", ["x", "flatsel"], ["flat"])]
        save(path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [6, 7]),
                           helper.make_tensor_value_info("thr", T.FLOAT, []),
                           helper.make_tensor_value_info("rowsel", T.BOOL, [6]),
                           helper.make_tensor_value_info("flatsel", T.BOOL, [42])],
             [helper.make_tensor_value_info(nm, t, None) for nm, t in
              (("nz", T.INT64), ("vals", T.FLOAT), ("rows", T.FLOAT), ("flat", T.FLOAT))])
        feeds = []
        for thr, p_row in ((0.5, 0.5), (10.0, 0.0), (-10.0, 1.0)):  # some, none, all
            x = RNG.standard_normal((6, 7)).astype(np.float32)
            feeds.append({"x": x, "thr": np.array(thr, np.float32), "rowsel": RNG.uniform(0, 1, 6) < p_row,
                          "flatsel": RNG.uniform(0, 1, 42) < p_row})
        run.case("NonZero, GatherND and Compress on run-time data", path, feeds, outputs=("nz", "vals", "rows", "flat"))

        # TopK with K a run-time input (largest and smallest), then a cast of the indices
        for largest in (1, 0):
            path = os.path.join(d, "topk%d.onnx" % largest)
            nodes = [helper.make_node("TopK", ["x", "K"], ["vals", "idx"], axis=1, largest=largest),
                     helper.make_node("Cast", ["idx"], ["idx32"], to=T.INT32)]
            save(path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [3, 9]),
                               helper.make_tensor_value_info("K", T.INT64, [1])],
                 [helper.make_tensor_value_info("vals", T.FLOAT, None), helper.make_tensor_value_info("idx32", T.INT32, None)])
            x = RNG.standard_normal((3, 9)).astype(np.float32)
            bundle = run.case("TopK (largest=%d) with a run-time K" % largest, path,
                              [{"x": x, "K": np.array([kk], np.int64)} for kk in (0, 1, 4, 9)], outputs=("vals", "idx32"))
            if bundle and largest:
                out = os.path.join(d, "topk_bad")
                os.makedirs(out, exist_ok=True)
                np.save(os.path.join(out, "x.npy"), x)
                np.save(os.path.join(out, "K.npy"), np.array([10], np.int64))
                r = util.run_kiln(args.kiln, ["run", bundle, "--input", "x=%s/x.npy" % out, "--input", "K=%s/K.npy" % out])
                checks.check(r.rc == 1 and "K is outside [0, 9]" in r.err and not util.clean_failure(r),
                             "a K beyond the axis fails the run clearly: %s %r" % (r.describe(), r.err))

        # Unique
        for i, (shape, dt, axis, srt, outs) in enumerate([
                ((40,), np.int64, None, 1, 4), ((40,), np.int64, None, 0, 4), ((6, 5), np.float32, None, 1, 4),
                ((7, 3), np.float32, 0, 1, 4), ((4, 6, 2), np.int64, 1, 1, 4), ((3, 4, 5), np.float32, -1, 0, 4),
                ((50,), np.float32, None, 1, 1), ((9,), np.int64, None, 0, 2)]):
            tt = T.INT64 if dt == np.int64 else T.FLOAT
            names = ["Y", "indices", "inverse_indices", "counts"][:outs]
            attrs = {"sorted": srt}
            if axis is not None:
                attrs["axis"] = axis
            path = os.path.join(d, "unique%d.onnx" % i)
            save(path, [helper.make_node("Unique", ["X"], names, **attrs)], [helper.make_tensor_value_info("X", tt, list(shape))],
                 [helper.make_tensor_value_info(nm, tt if nm == "Y" else T.INT64, None) for nm in names])
            def draw(kind):
                if kind == "repeats":  # few distinct values; along an axis, repeated slices
                    if axis is None:
                        return RNG.integers(0, 5, shape).astype(dt)
                    base = RNG.integers(0, 3, shape).astype(dt)
                    ax = axis % len(shape)
                    pick = RNG.integers(0, 2, shape[ax])  # slices copied from two prototypes
                    return np.take(np.take(base, [0, 1], axis=ax), pick, axis=ax)
                return (RNG.permutation(int(np.prod(shape))).reshape(shape) - 10).astype(dt)  # all distinct
            label = "Unique %s %s axis=%s sorted=%d outputs=%d" % (shape, np.dtype(dt).name, axis, srt, outs)
            run.case(label, path, [{"X": draw("repeats")}, {"X": draw("distinct")}], outputs=names)
    checks.finish()


if __name__ == "__main__":
    main()
