"""layers.py — the convolutions and matrix products of an ONNX model, as JSON, for baseline.c.

Usage: .venv/bin/python bench/cuda/layers.py MODEL.onnx --batch N [-o OUT.json] [--quiet]

The cuDNN/cuBLAS baseline (bench/cuda/baseline.c, issue 20) times the same convs and GEMMs
that kiln runs on the GPU. This script finds them: it sets the batch dimension (the first
dimension of every graph input; the benchmark models are exported at batch 1, so a Reshape
whose constant target shape starts with that batch gets -1 there instead, or 0 when it
already has a -1), runs onnx.shape_inference, and lists

  conv: N, C, H, W (input), M (output channels), kh, kw, strides, pads (top, left, bottom,
        right), dilations, group, output OH, OW, whether it has a bias input, whether a
        BatchNormalization follows (folded into a bias at inference time, so "bias" in the
        baseline is bias input OR BN), and the activation after it (through the BN): "relu",
        "clip" (with its min/max: ReLU6 is Clip(0, 6)) or "none";
  gemm: the product as cuBLAS sees it, row-major C[batch][M][N] = op(A)[M][K] op(B)[K][N]:
        batch, M, N, K, transA, transB, whether A / B advance per batch (a MatMul with a 2-D
        weight folds the activation's leading dims into M), and whether a bias follows (Gemm's
        C input, or an Add of a constant right after a MatMul) — noted, not timed.

Each distinct shape is listed once, in first-appearance order, with "count"; "flops" is per
instance (2 x multiply-adds). Totals go to stderr unless --quiet.
"""
import argparse
import json
import sys

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def set_batch(model, batch):
    """Batch dim of every graph input set to batch; batch-1 Reshape targets made batch-free."""
    inits = {i.name: i for i in model.graph.initializer}
    orig = None
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        dims = inp.type.tensor_type.shape.dim
        if len(dims) == 0:
            continue
        if dims[0].HasField("dim_value") and orig is None:
            orig = dims[0].dim_value
        dims[0].Clear()
        dims[0].dim_value = batch
    # shapes recorded at the exported batch would contradict the new one: infer them afresh
    del model.graph.value_info[:]
    for out in model.graph.output:
        dims = out.type.tensor_type.shape.dim
        if len(dims) > 0 and dims[0].HasField("dim_value") and dims[0].dim_value == orig:
            dims[0].Clear()
            dims[0].dim_param = "batch"
    consts = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}
    produced = {o for n in model.graph.node for o in n.output}
    patched = 0
    for node in model.graph.node:
        if node.op_type != "Reshape" or len(node.input) < 2:
            continue
        data = node.input[0]
        if data in inits or (data in consts):
            continue  # reshaping a constant: no batch in it
        if data not in produced and not any(i.name == data for i in model.graph.input):
            continue
        target = node.input[1]
        if target in inits:
            tensor = inits[target]
        elif target in consts:
            tensor = attr(consts[target], "value")
        else:
            continue  # computed at run time (Shape -> ...): follows the input already
        shape = numpy_helper.to_array(tensor).copy()
        if shape.ndim != 1 or shape.size == 0 or orig is None or shape[0] != orig:
            continue
        shape[0] = 0 if (shape[1:] == -1).any() else -1
        tensor.CopyFrom(numpy_helper.from_array(shape.astype(np.int64), tensor.name))
        patched += 1
    return orig, patched


def shapes_of(model):
    shapes = {}
    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    for node in model.graph.node:
        if node.op_type == "Constant":
            value = attr(node, "value")
            if value is not None:
                shapes[node.output[0]] = list(value.dims)
    return shapes


def const_value(model, name):
    for init in model.graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            return numpy_helper.to_array(attr(node, "value"))
    return None


def need(shape, what, node):
    if shape is None or any(d is None or d <= 0 for d in shape):
        raise SystemExit("layers.py: %s of %s %r has no static shape after inference (%r)"
                         % (what, node.op_type, node.name, shape))
    return shape


def conv_layer(node, shapes, consumers, model):
    x = need(shapes.get(node.input[0]), "input", node)
    w = need(shapes.get(node.input[1]), "weight", node)
    y = need(shapes.get(node.output[0]), "output", node)
    if len(x) != 4:
        raise SystemExit("layers.py: only 2-D convs are handled (%s has input %r)" % (node.name, x))
    kh, kw = w[2], w[3]
    strides = list(attr(node, "strides", [1, 1]))
    dil = list(attr(node, "dilations", [1, 1]))
    pads = list(attr(node, "pads", [0, 0, 0, 0]))  # ONNX: begins then ends: t, l, b, r
    ap = attr(node, "auto_pad", b"NOTSET")
    ap = ap.decode() if isinstance(ap, bytes) else ap
    if ap in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for i, (inp, k) in enumerate(((x[2], kh), (x[3], kw))):
            total = max(0, (y[2 + i] - 1) * strides[i] + (k - 1) * dil[i] + 1 - inp)
            small = total // 2
            pads.append((small, total - small) if ap == "SAME_UPPER" else (total - small, small))
        pads = [pads[0][0], pads[1][0], pads[0][1], pads[1][1]]
    elif ap == "VALID":
        pads = [0, 0, 0, 0]
    group = attr(node, "group", 1)
    out = node.output[0]
    bn = False
    act, clip = "none", None
    nxt = consumers.get(out, [])
    if len(nxt) == 1 and nxt[0].op_type == "BatchNormalization":
        bn = True
        out = nxt[0].output[0]
        nxt = consumers.get(out, [])
    if len(nxt) == 1 and nxt[0].op_type == "Relu":
        act = "relu"
    elif len(nxt) == 1 and nxt[0].op_type == "Clip":
        act = "clip"
        c = nxt[0]
        lo = attr(c, "min") if len(c.input) < 2 else (const_value(model, c.input[1]) if c.input[1] else None)
        hi = attr(c, "max") if len(c.input) < 3 else (const_value(model, c.input[2]) if c.input[2] else None)
        clip = [None if lo is None else float(lo), None if hi is None else float(hi)]
    n, c_in, h, wd = x
    m = w[0]
    flops = 2 * n * m * y[2] * y[3] * (c_in // group) * kh * kw
    layer = {"op": "conv", "N": n, "C": c_in, "H": h, "W": wd, "M": m, "kh": kh, "kw": kw,
             "strides": strides, "pads": pads, "dilations": dil, "group": group,
             "OH": y[2], "OW": y[3], "has_bias": len(node.input) > 2 and node.input[2] != "",
             "bn": bn, "act": act}
    if clip is not None:
        layer["clip"] = clip
    return layer, flops


def gemm_layer(node, shapes, consumers, model, inits):
    a = need(shapes.get(node.input[0]), "A", node)
    b = need(shapes.get(node.input[1]), "B", node)
    if node.op_type == "Gemm":
        ta, tb = attr(node, "transA", 0), attr(node, "transB", 0)
        m, k = (a[1], a[0]) if ta else (a[0], a[1])
        n = b[0] if tb else b[1]
        layer = {"op": "gemm", "batch": 1, "M": m, "N": n, "K": k, "transA": ta, "transB": tb,
                 "a_batched": False, "b_batched": False,
                 "bias": len(node.input) > 2 and node.input[2] != "", "source": "Gemm"}
        return layer, 2 * m * n * k
    # MatMul, numpy semantics
    if len(a) == 1 or len(b) == 1:
        raise SystemExit("layers.py: 1-D MatMul operand in %r not handled" % node.name)
    m, k = a[-2], a[-1]
    n = b[-1]
    abat, bbat = a[:-2], b[:-2]
    if not bbat or all(d == 1 for d in bbat):
        # weight without batch dims: the activation's leading dims fold into M
        m = int(np.prod(abat, dtype=np.int64)) * m if abat else m
        batch, a_b, b_b = 1, False, False
    elif not abat or all(d == 1 for d in abat):
        batch, a_b, b_b = int(np.prod(bbat)), False, True
    else:
        full = list(np.broadcast_shapes(tuple(abat), tuple(bbat)))
        if list(abat) != full or list(bbat) != full:
            raise SystemExit("layers.py: partially broadcast MatMul %r (%r x %r) not handled" % (node.name, a, b))
        batch, a_b, b_b = int(np.prod(full)), True, True
    nxt = consumers.get(node.output[0], [])
    bias = len(nxt) == 1 and nxt[0].op_type == "Add" and any(i in inits for i in nxt[0].input)
    layer = {"op": "gemm", "batch": batch, "M": m, "N": n, "K": k, "transA": 0, "transB": 0,
             "a_batched": a_b, "b_batched": b_b, "bias": bias, "source": "MatMul"}
    return layer, 2 * batch * m * n * k


def extract(path, batch):
    model = onnx.load(path)
    orig, patched = set_batch(model, batch)
    model = shape_inference.infer_shapes(model, strict_mode=True)
    shapes = shapes_of(model)
    inits = {i.name for i in model.graph.initializer}
    consumers = {}
    for node in model.graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    layers, index = [], {}
    total = {"conv": 0, "gemm": 0}
    for node in model.graph.node:
        if node.op_type == "Conv":
            layer, flops = conv_layer(node, shapes, consumers, model)
        elif node.op_type in ("MatMul", "Gemm"):
            layer, flops = gemm_layer(node, shapes, consumers, model, inits)
        else:
            continue
        total[layer["op"]] += flops
        key = json.dumps(layer, sort_keys=True)
        if key in index:
            layers[index[key]]["count"] += 1
        else:
            index[key] = len(layers)
            layer["flops"] = flops
            layer["count"] = 1
            layers.append(layer)
    for layer in layers:
        if layer["op"] == "conv" and layer["N"] != batch:
            print("layers.py: warning: a conv of %s has N = %d, not the batch %d" % (path, layer["N"], batch),
                  file=sys.stderr)
    inputs = {i.name: shapes.get(i.name) for i in model.graph.input if i.name not in inits}
    name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return {"model": name, "path": path, "batch": batch, "exported_batch": orig,
            "reshapes_patched": patched, "inputs": inputs,
            "conv_flops": total["conv"], "gemm_flops": total["gemm"],
            "layers": layers}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("-o", "--output", help="write the JSON here (default: stdout)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    out = extract(args.model, args.batch)
    text = json.dumps(out, indent=1)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    if not args.quiet:
        convs = [l for l in out["layers"] if l["op"] == "conv"]
        gemms = [l for l in out["layers"] if l["op"] == "gemm"]
        print("%s batch %d: %d convs (%d distinct) %.3f GFLOP, %d gemms (%d distinct) %.3f GFLOP, total %.3f GFLOP"
              % (out["model"], args.batch, sum(l["count"] for l in convs), len(convs), out["conv_flops"] / 1e9,
                 sum(l["count"] for l in gemms), len(gemms), out["gemm_flops"] / 1e9,
                 (out["conv_flops"] + out["gemm_flops"]) / 1e9), file=sys.stderr)


if __name__ == "__main__":
    main()
