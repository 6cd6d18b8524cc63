#!/usr/bin/env python3
"""make_bundle_corpus.py — the seed corpus of the bundle fuzzer (fuzz_bundle.c).

Usage: make_bundle_corpus.py OUT_DIR --kiln KILN --reference FILE

Builds a few small models (a conv with its activation; two inputs through a
matmul, a softmax and two outputs; a pooled, concatenated, reshaped image),
compiles each into a bundle with `kiln compile` (and an If on a run-time condition, whose plan has
conditional kernels, and a NonMaxSuppression, whose output has a data-dependent extent), and writes two seeds per bundle:
byte 0 followed by the whole bundle (mode 0: archive and manifest) and byte 1
followed by its plan.json (mode 1: the plan against a real manifest). The first
bundle is also copied to --reference, the manifest mode 1 checks plans against.
Files are named by content hash. Deterministic.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save(path, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def models(d):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    save(os.path.join(d, "conv.onnx"),
         [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
         [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], [w])
    save(os.path.join(d, "matmul.onnx"),
         [helper.make_node("MatMul", ["a", "b"], ["m"]), helper.make_node("Softmax", ["m"], ["s"], axis=-1),
          helper.make_node("Add", ["m", "a"], ["t"])],
         [vi("a", [4, 4]), vi("b", [4, 4])], [vi("s", [4, 4]), vi("t", [4, 4])])
    save(os.path.join(d, "pool.onnx"),
         [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
          helper.make_node("AveragePool", ["x"], ["q"], kernel_shape=[2, 2], strides=[2, 2]),
          helper.make_node("Concat", ["p", "q"], ["c"], axis=1),
          helper.make_node("Reshape", ["c", "shape"], ["y"])],
         [vi("x", [1, 2, 6, 6])], [vi("y", [1, 36])],
         [numpy_helper.from_array(np.array([1, 36], np.int64), "shape")])
    def branch(name, op, out):
        return helper.make_graph([helper.make_node(op, ["x"], [out])], name, [], [vi(out, None)])
    save(os.path.join(d, "branch.onnx"),  # an If on a run-time condition: conditional kernels, a format 3 plan
         [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
          helper.make_node("Greater", ["s", "zero"], ["c"]),
          helper.make_node("If", ["c"], ["y"], then_branch=branch("then", "Relu", "ty"),
                           else_branch=branch("else", "Neg", "ey"))],
         [vi("x", [1, 3, 8, 8])], [vi("y", [1, 3, 8, 8])], [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    save(os.path.join(d, "nms.onnx"),  # a data-dependent output shape: the manifest's "extent"
         [helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou"], ["sel"])],
         [vi("boxes", [1, 6, 4]), vi("scores", [1, 2, 6])],
         [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])],
         [numpy_helper.from_array(np.array([3], np.int64), "limit"),
          numpy_helper.from_array(np.array([0.5], np.float32), "iou")])
    return ["conv", "matmul", "pool", "branch", "nms"]


def put(out, data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--reference", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        names = models(d)
        for i, n in enumerate(names):
            bundle = os.path.join(d, n + ".kiln")
            r = subprocess.run([a.kiln, "compile", os.path.join(d, n + ".onnx"), "-o", bundle],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("make_bundle_corpus: kiln compile %s failed: %s" % (n, r.stderr.strip()))
            with open(bundle, "rb") as f:
                put(a.out, b"\x00" + f.read())
            with tarfile.open(bundle) as t:
                put(a.out, b"\x01" + t.extractfile("plan.json").read())
            if i == 0:
                shutil.copyfile(bundle, a.reference)
    print("make_bundle_corpus: %d seeds in %s" % (2 * len(names), a.out))


if __name__ == "__main__":
    main()
