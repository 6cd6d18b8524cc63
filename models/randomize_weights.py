"""randomize_weights.py — gives a model with placeholder weights seeded random ones.

Usage: .venv/bin/python models/randomize_weights.py IN.onnx OUT.onnx [--seed N]

The "light" model-zoo networks that ship with the onnx package keep only the graph:
every weight is a ConstantOfShape node filling its shape with 0.02, and the few real
tensors left (batch-norm statistics, some biases) belong to trained weights that are no
longer there. Run through such a network, a ReLU stack collapses or explodes and the
softmax comes out uniform, so comparing two runtimes on it proves little.

This script replaces every float ConstantOfShape whose shape is a constant with an
initializer of the same name holding seeded random values, and re-draws the float
initializers that sit in the same parameter slots (so that a trained batch-norm
variance of 4000 does not meet a random convolution). The distribution of each tensor
follows the role its consumers give it; the role is found by following the value
through layout-only ops (Unsqueeze, Reshape, Squeeze, Flatten, Transpose, Identity):

    Conv / ConvTranspose weight, Gemm / MatMul B   N(0, 2 / fan_in)  (He; fan_in from
                                                   the shape the consumer sees)
    any bias (Conv/Gemm input 2, Add operand)      U(-0.05, 0.05)
    BatchNormalization scale, Mul operand          U(0.9, 1.1)
    BatchNormalization bias                        U(-0.1, 0.1)
    BatchNormalization mean                        U(-0.1, 0.1)
    BatchNormalization variance                    U(0.9, 1.1)
    anything else                                  N(0, 0.05)

He scaling keeps the variance of a conv→relu stack roughly constant, but every
residual block of a ResNet adds its branch to the skip path, the variance grows block
after block, and the classifier then sees logits so far apart that the softmax is
one-hot. So, unless --no-calibrate is given, the weights are then
calibrated on seeded random inputs with onnxruntime (when it is installed): walking
the graph in order, each Conv/ConvTranspose/Gemm/MatMul weight is rescaled so that
its output has a standard deviation near 1 (near 2 for the last one, the logits),
the way LSUV initialisation does. The result is deterministic for a given --seed.

The __SHAPE initializers (and their graph-input entries) that fed only the replaced
nodes are removed; new initializers are listed as graph inputs when the model's IR
version (< 4) requires it, as the original ones are.
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

LAYOUT_OPS = {"Unsqueeze", "Reshape", "Squeeze", "Flatten", "Transpose", "Identity"}


def consumers_of(graph):
    uses = {}
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name:
                uses.setdefault(name, []).append((node, i))
    return uses


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def find_role(name, uses, shapes):
    """(role, consumer node, the shape that consumer sees) of the value `name`, following
    layout-only ops. The first consumer that decides the role wins."""
    seen = set()
    frontier = [name]
    while frontier:
        value = frontier.pop(0)
        if value in seen:
            continue
        seen.add(value)
        for node, idx in uses.get(value, []):
            op = node.op_type
            if op in LAYOUT_OPS and idx == 0:
                frontier.extend(node.output)
                continue
            if op in ("Conv", "ConvTranspose"):
                if idx == 1:
                    return "weight", node, shapes.get(value)
                if idx == 2:
                    return "bias", node, shapes.get(value)
            if op == "Gemm":
                if idx == 1:
                    return "weight", node, shapes.get(value)
                if idx == 2:
                    return "bias", node, shapes.get(value)
                if idx == 0:
                    return "weight_a", node, shapes.get(value)
            if op == "MatMul":
                return ("weight" if idx == 1 else "weight_a"), node, shapes.get(value)
            if op == "BatchNormalization" and 1 <= idx <= 4:
                return ("bn_scale", "bn_bias", "bn_mean", "bn_var")[idx - 1], node, shapes.get(value)
            if op in ("Mul", "Div"):
                return "scale", node, shapes.get(value)
            if op in ("Add", "Sub", "Sum"):
                return "bias", node, shapes.get(value)
    return "other", None, None


def fan_in(role, node, shape, own_shape):
    shape = list(shape) if shape else list(own_shape)
    if node is None or not shape:
        return max(1, int(np.prod(own_shape)))
    op = node.op_type
    if op == "Conv":
        return max(1, int(np.prod(shape[1:])))
    if op == "ConvTranspose":  # W is (C_in, C_out/group, k...): each output sums C_in * k taps
        k = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        return max(1, shape[0] * k)
    if op == "Gemm":
        if role == "weight":
            return max(1, shape[1] if attr(node, "transB", 0) else shape[0])
        return max(1, shape[0] if attr(node, "transA", 0) else shape[-1])
    if op == "MatMul":
        return max(1, shape[-2] if len(shape) >= 2 else shape[0])
    return max(1, int(np.prod(shape[1:])))


def draw(rng, role, fan, shape):
    if role in ("weight", "weight_a"):
        return rng.standard_normal(shape) * np.sqrt(2.0 / fan)
    if role == "bias":
        return rng.uniform(-0.05, 0.05, shape)
    if role in ("scale", "bn_scale", "bn_var"):
        return rng.uniform(0.9, 1.1, shape)
    if role in ("bn_bias", "bn_mean"):
        return rng.uniform(-0.1, 0.1, shape)
    return rng.standard_normal(shape) * 0.05


def value_shapes(model):
    """Shapes of all values onnx shape inference can work out (names → list of ints)."""
    try:
        inferred = shape_inference.infer_shapes(model)
    except Exception:  # a model shape inference cannot handle: fall back to the tensors' own shapes
        inferred = model
    shapes = {}
    g = inferred.graph
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        dims = vi.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = [d.dim_value for d in dims]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    return shapes


def randomize(model, seed=0):
    """Replaces the placeholder weights of `model` in place. Returns the number of tensors
    drawn and the names of the weights (for calibration), in graph order."""
    graph = model.graph
    rng = np.random.default_rng(seed)
    inits = {t.name: t for t in graph.initializer}
    uses = consumers_of(graph)
    shapes = value_shapes(model)

    new_tensors = []   # (name, shape, dtype)
    drop_nodes = []
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or not node.input or node.input[0] not in inits:
            continue
        value = attr(node, "value", None)
        dtype = numpy_helper.to_array(value).dtype if value is not None else np.dtype(np.float32)
        if dtype.kind != "f":
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[node.input[0]]).ravel()]
        new_tensors.append((node.output[0], shape, dtype))
        drop_nodes.append(node)

    # Float initializers in parameter slots: re-drawn in place.
    redraw = []
    graph_outputs = {o.name for o in graph.output}
    for t in graph.initializer:
        if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16):
            continue
        if t.name in graph_outputs:
            continue
        role, _, _ = find_role(t.name, uses, shapes)
        if role != "other":
            redraw.append(t)

    weights = []
    for name, shape, dtype in new_tensors:
        role, node, seen_shape = find_role(name, uses, shapes)
        arr = draw(rng, role, fan_in(role, node, seen_shape, shape), shape).astype(dtype)
        if role == "weight":
            weights.append(name)
        graph.initializer.append(numpy_helper.from_array(arr, name))
    for t in redraw:
        role, node, seen_shape = find_role(t.name, uses, shapes)
        arr0 = numpy_helper.to_array(t)
        arr = draw(rng, role, fan_in(role, node, seen_shape, list(arr0.shape)), list(arr0.shape)).astype(arr0.dtype)
        if role == "weight":
            weights.append(t.name)
        t.CopyFrom(numpy_helper.from_array(arr, t.name))

    for node in drop_nodes:
        graph.node.remove(node)

    # Drop shape initializers nothing reads any more.
    still_used = {name for node in graph.node for name in node.input}
    still_used |= graph_outputs
    for t in list(graph.initializer):
        if t.name not in still_used and any(t.name == n.input[0] for n in drop_nodes):
            graph.initializer.remove(t)
            for vi in list(graph.input):
                if vi.name == t.name:
                    graph.input.remove(vi)

    if model.ir_version < 4:  # initializers must also be graph inputs
        listed = {vi.name for vi in graph.input}
        for name, shape, dtype in new_tensors:
            if name not in listed:
                elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
                graph.input.append(helper.make_tensor_value_info(name, elem, shape))

    order = {}
    for i, node in enumerate(graph.node):
        for name in node.input:
            order.setdefault(name, i)
    weights.sort(key=lambda n: order.get(n, 1 << 30))
    return len(new_tensors) + len(redraw), weights


def real_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def seeded_feeds(model, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in real_inputs(model):
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                for d in vi.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        feeds[vi.name] = rng.standard_normal(dims).astype(dtype)
    return feeds


HOMOGENEOUS_SUM = {"Add", "Sum", "Sub"}


def calibrate(model, weights, seed, rounds=4):
    """LSUV-style: rescale each weight so that the output of its consumer has std ≈ 1
    (≈ 2 for the last weight of the graph: the logits), in graph order. Needs
    onnxruntime; returns False when it is missing.

    One onnxruntime run per layer would cost minutes on DenseNet, so each round runs
    the graph once, records the std of every value, and then walks the graph predicting
    how each value's std changes when earlier weights are rescaled: convolutions and
    matrix products scale with their input and their weight, element-wise sums add
    their parts' variances, everything else (ReLU, pooling, batch-norm with small
    statistics, reshapes) passes the scale through. The predictions are not exact
    (biases, batch-norm means, LRN), so a few rounds are run until every weight is
    within 5% of its target."""
    try:
        import onnxruntime as ort
    except ImportError:
        return False
    graph = model.graph
    uses = consumers_of(graph)
    inits = {t.name: t for t in graph.initializer}
    shapes = value_shapes(model)
    weight_of = {}  # consumer node output -> weight name
    for name in weights:
        role, node, _ = find_role(name, uses, shapes)
        if node is not None and node.output:
            weight_of[id(node)] = name
    if not weight_of:
        return True
    last_weight = weights[-1]
    feeds = seeded_feeds(model, seed + 1)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL

    # The probe is the model with every value as an output and the weights as graph
    # inputs, so that one session serves all rounds (the weights are fed each run).
    wset = set(weights)
    probe = onnx.ModelProto()
    probe.ir_version = model.ir_version
    probe.opset_import.extend(model.opset_import)
    probe.graph.name = graph.name
    probe.graph.node.extend(graph.node)
    probe.graph.input.extend(graph.input)
    probe.graph.output.extend(graph.output)
    probe.graph.initializer.extend(t for t in graph.initializer if t.name not in wset)
    listed_in = {vi.name for vi in probe.graph.input}
    for name in weights:
        if name not in listed_in:
            t = inits[name]
            probe.graph.input.append(helper.make_tensor_value_info(name, t.data_type, list(t.dims)))
    if probe.ir_version < 4:
        probe.ir_version = 4  # initializers need not be graph inputs any more
    listed = {o.name for o in probe.graph.output}
    for node in probe.graph.node:
        for out in node.output:
            if out and out not in listed:
                probe.graph.output.append(onnx.ValueInfoProto(name=out))
                listed.add(out)
    sess = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"])
    del probe
    names = [o.name for o in sess.get_outputs()]
    values = {name: numpy_helper.to_array(inits[name]) for name in weights}
    for _ in range(rounds):
        std = {}
        for n, v in zip(names, sess.run(None, dict(feeds, **values))):
            if isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.size:
                std[n] = float(np.std(v.astype(np.float64)))
        scale = {}  # value -> predicted factor by which its std changes
        factors = {}
        for node in graph.node:
            ins = [scale.get(x, 1.0) for x in node.input if x]
            outs = [o for o in node.output if o]
            if id(node) in weight_of:
                wname = weight_of[id(node)]
                idx = list(node.input).index(wname) if wname in node.input else 1
                data = node.input[1 - idx] if node.op_type == "MatMul" and idx in (0, 1) else node.input[0]
                c_in = scale.get(data, 1.0)
                s_out = std.get(outs[0], 0.0)
                want = 2.0 if wname == last_weight else 1.0
                if s_out > 1e-12 and np.isfinite(s_out):
                    f = want / (s_out * c_in)
                    factors[wname] = f
                    scale[outs[0]] = c_in * f
                else:
                    scale[outs[0]] = c_in
                continue
            if node.op_type in HOMOGENEOUS_SUM or node.op_type == "Concat":
                parts = [(std.get(x), scale.get(x, 1.0)) for x in node.input if x]
                parts = [(s, c) for s, c in parts if s is not None]
                s_out = std.get(outs[0]) if outs else None
                if parts and s_out and s_out > 1e-12:
                    pred = np.sqrt(sum((s * c) ** 2 for s, c in parts) / (len(parts) if node.op_type == "Concat" else 1))
                    base = np.sqrt(sum(s ** 2 for s, c in parts) / (len(parts) if node.op_type == "Concat" else 1))
                    f = pred / base if base > 1e-12 else 1.0
                    for o in outs:
                        scale[o] = f
                    continue
            if node.op_type in ("Mul",) and len(ins) == 2:
                c = ins[0] * ins[1]
            elif node.op_type in ("Softmax", "LogSoftmax", "Shape", "Sigmoid", "Tanh"):
                c = 1.0
            else:
                c = ins[0] if ins else 1.0
            for o in outs:
                scale[o] = c
        worst = 0.0
        for name, f in factors.items():
            worst = max(worst, abs(np.log(f)))
            values[name] = (values[name] * f).astype(values[name].dtype)
        if worst < 0.05:
            break
    for name in weights:
        inits[name].CopyFrom(numpy_helper.from_array(values[name], name))
    return True


def randomize_model(model, seed=0, calibrated=True):
    """randomize + calibrate (when asked and onnxruntime is there), in place. Returns
    (tensors drawn, whether the weights were calibrated)."""
    count, weights = randomize(model, seed)
    done = calibrate(model, weights, seed) if calibrated else False
    return count, done


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-calibrate", action="store_true")
    args = ap.parse_args()
    model = onnx.load(args.input)
    count, calibrated = randomize_model(model, args.seed, not args.no_calibrate)
    onnx.save(model, args.output)
    print("randomize_weights: %s -> %s: %d tensors drawn (seed %d)%s" % (
        args.input, args.output, count, args.seed, ", calibrated" if calibrated else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
