"""test_inspect.py — `kiln inspect` as a user sees it, on the light ResNet-50 of
the onnx package (Caffe2's ResNet-50 with its weights replaced by
ConstantOfShape): inputs and outputs, ir_version, opsets, the ONNX op histogram
(compared with the model itself), parameters (ResNet-50 has about 25.56 M:
within 1%), estimated FLOPs (2 x MACs; the convolutions and the classifier of
this ResNet-50 are 8.18 G, plus a little element-wise work), the canonical node
count (equal to what --print shows), --dot, --input-shape rebinding a batch dim,
the one-line refusal when a rebinding contradicts the model, and usage errors
(exit 2).
"""
import collections
import os
import re
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

RESNET50_PARAMS = 25.557e6  # torchvision / Caffe2 ResNet-50 (conv + BN scale/shift + fc)
FLOPS_RANGE = (7.7e9, 8.3e9)


def conv_gemm_flops(model):
    """2 x MACs of every Conv and Gemm, from ONNX shape inference: the reference the
    estimate must contain."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    weight_shape = {n.output[0]: tuple(int(d) for d in inits[n.input[0]])
                    for n in model.graph.node if n.op_type == "ConstantOfShape"}
    inferred = shape_inference.infer_shapes(model)
    shapes = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        shapes[v.name] = tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
    total = 0
    for n in model.graph.node:
        if n.op_type == "Conv":
            w = weight_shape[n.input[1]]
            total += 2 * int(np.prod(shapes[n.output[0]])) * int(np.prod(w[1:]))
        elif n.op_type == "Gemm":
            a, y = shapes[n.input[0]], shapes[n.output[0]]
            total += 2 * int(np.prod(y)) * a[-1]
    return total


def tiny_model(path):
    """x[N, 4] → Relu → y, with a symbolic batch dim."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "tiny", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    args = util.parse_args(__doc__)
    c = util.Checks("test_inspect")
    light = util.onnx_data_dir("light")
    resnet = os.path.join(light, "light_resnet50.onnx")
    squeezenet = os.path.join(light, "light_squeezenet.onnx")
    model = onnx.load(resnet)

    # --- the report ---
    r = util.run_kiln(args.kiln, ["inspect", resnet], timeout=300)
    c.check(r.rc == 0, "inspect ResNet-50: %s: %s" % (r.describe(), r.err.strip()[:300]))
    c.check(r.err == "", "inspect ResNet-50 wrote to stderr: %r" % r.err[:300])
    info = util.parse_inspect(r.out)
    print("ResNet-50: %s params, %s FLOPs, %s canonical nodes, %s ONNX nodes" %
          (info["parameters"], info["flops"], info["canonical_nodes"], info["onnx_nodes"]))
    c.check(info["inputs"] == [("gpu_0/data_0", "float32", (1, 3, 224, 224))], "inputs: %r" % info["inputs"])
    c.check(info["outputs"] == [("gpu_0/softmax_1", "float32", (1, 1000))], "outputs: %r" % info["outputs"])
    c.check(info["ir_version"] == model.ir_version == 3, "ir_version: %r" % info["ir_version"])
    c.check(info["opsets"] == {"ai.onnx": 9}, "opsets: %r" % info["opsets"])
    want_hist = dict(collections.Counter(n.op_type for n in model.graph.node))
    c.check(info["histogram"] == want_hist, "op histogram %r, model has %r" % (info["histogram"], want_hist))
    c.check(info["onnx_nodes"] == len(model.graph.node) == 415, "ONNX node count %r" % info["onnx_nodes"])
    p = info["parameters"]
    c.check(p is not None and abs(p - RESNET50_PARAMS) <= 0.01 * RESNET50_PARAMS,
            "parameters %r, expected %.0f within 1%%" % (p, RESNET50_PARAMS))
    f = info["flops"]
    ref = conv_gemm_flops(model)
    c.check(f is not None and FLOPS_RANGE[0] <= f <= FLOPS_RANGE[1],
            "estimated FLOPs %r outside [%.2g, %.2g]" % (f, FLOPS_RANGE[0], FLOPS_RANGE[1]))
    c.check(f is not None and ref <= f <= ref * 1.01,
            "estimated FLOPs %r: convolutions and Gemm alone are %d (2 x MACs); the rest is element-wise "
            "work, well under 1%%" % (f, ref))
    n = info["canonical_nodes"]
    c.check(n is not None and n >= 53 + 1 + 2 + 1, "canonical nodes %r (53 conv, 1 matmul, 2 pools, a softmax)" % n)
    c.check(info["unsupported"] == 0, "unsupported ops: %r" % info["unsupported"])
    for key in ("model: ", "ir_version: ", "op histogram (", "opsets: ", "inputs:", "outputs:", "parameters: ",
                "estimated FLOPs: ", "canonical nodes: ", "unsupported ops: "):
        c.check(any(line.startswith(key) for line in r.out.splitlines()), "no line starting with %r" % key)

    # --print shows as many nodes as the count says
    r = util.run_kiln(args.kiln, ["inspect", resnet, "--print"], timeout=300)
    m = re.search(r"^graph .* \((\d+) nodes, (\d+) values\)$", r.out, re.M)
    c.check(r.rc == 0 and m is not None and int(m.group(1)) == n,
            "--print: %s, header %r, canonical nodes %r" % (r.describe(), m.group(0) if m else None, n))
    if m:
        body = [l for l in r.out.splitlines() if re.match(r"^  %\S+:\S+\[.*\] = \w+\(", l)]
        c.check(len(body) == int(m.group(1)), "--print lists %d node lines for %s nodes" % (len(body), m.group(1)))

    with tempfile.TemporaryDirectory() as tmp:
        # --- --dot ---
        dot = os.path.join(tmp, "resnet.dot")
        r = util.run_kiln(args.kiln, ["inspect", resnet, "--dot", dot], timeout=300)
        c.check(r.rc == 0, "--dot: %s: %s" % (r.describe(), r.err.strip()[:300]))
        text = open(dot).read() if os.path.exists(dot) else ""
        c.check(text.startswith("digraph"), "the DOT file starts with %r" % text[:20])
        c.check(text.rstrip().endswith("}"), "the DOT file is not closed")
        c.check(n is not None and text.count("[shape=box") == n,
                "the DOT file draws %d boxes for %r nodes" % (text.count("[shape=box"), n))
        r = util.run_kiln(args.kiln, ["inspect", resnet, "--dot", os.path.join(tmp, "no", "such", "dir.dot")])
        c.check(util.clean_failure(r) is None, "--dot into a missing folder: %s" % util.clean_failure(r))

        # --- --input-shape ---
        tiny = os.path.join(tmp, "tiny.onnx")
        tiny_model(tiny)
        r = util.run_kiln(args.kiln, ["inspect", tiny])
        t = util.parse_inspect(r.out)
        c.check(r.rc == 0 and t["outputs"] == [("y", "float32", (1, 4))],
                "symbolic batch defaults to 1: %s %r %s" % (r.describe(), t["outputs"], r.err.strip()))
        r = util.run_kiln(args.kiln, ["inspect", tiny, "--input-shape", "x:3x4"])
        t = util.parse_inspect(r.out)
        c.check(r.rc == 0 and t["inputs"] == [("x", "float32", (3, 4))] and t["outputs"] == [("y", "float32", (3, 4))],
                "--input-shape x:3x4: %s %r %r %s" % (r.describe(), t["inputs"], t["outputs"], r.err.strip()))
    r = util.run_kiln(args.kiln, ["inspect", squeezenet, "--input-shape", "data_0:2x3x224x224"], timeout=300)
    t = util.parse_inspect(r.out)
    c.check(r.rc == 0 and t["outputs"] == [("softmaxout_1", "float32", (2, 1000, 1, 1))],
            "SqueezeNet with batch 2: %s %r %s" % (r.describe(), t["outputs"], r.err.strip()[:300]))
    # ResNet-50 reshapes to a constant [1, 2048]: batch 2 cannot work, and says so in one line
    r = util.run_kiln(args.kiln, ["inspect", resnet, "--input-shape", "gpu_0/data_0:2x3x224x224"], timeout=300)
    why = util.clean_failure(r)
    c.check(why is None, "ResNet-50 with batch 2 must be refused cleanly: %s" % why)
    line = r.err.strip()
    c.check("Reshape" in line and "n173" in line, "the refusal names the Reshape node: %r" % line)
    c.check(line.count("Reshape 'n173' (opset 9)") == 1, "the refusal repeats the node's origin: %r" % line)

    # --- errors ---
    usage = [
        [],
        ["inspect"],
        ["inspect", "--bogus", resnet],
        ["inspect", resnet, squeezenet],
        ["inspect", resnet, "--input-shape"],
        ["inspect", resnet, "--input-shape", "nocolon"],
        ["inspect", resnet, "--input-shape", "x:1x-2"],
        ["inspect", resnet, "--dot"],
        ["frobnicate"],
    ]
    for argv in usage:
        r = util.run_kiln(args.kiln, argv)
        c.check(r.rc == 2 and r.err.strip() != "" and not r.sanitizer_report(),
                "kiln %s: %s (want exit 2 and a message), stderr %r" % (" ".join(argv), r.describe(), r.err[:200]))
    missing = os.path.join(tempfile.gettempdir(), "kiln_no_such_model.onnx")
    r = util.run_kiln(args.kiln, ["inspect", missing])
    c.check(util.clean_failure(r) is None and "kiln_no_such_model.onnx" in r.err,
            "missing model: %s %r" % (util.clean_failure(r), r.err))
    r = util.run_kiln(args.kiln, ["--version"])
    c.check(r.rc == 0 and r.out.startswith("kiln "), "--version: %s %r" % (r.describe(), r.out))
    c.finish()


if __name__ == "__main__":
    main()
