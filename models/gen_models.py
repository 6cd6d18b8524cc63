"""gen_models.py — small end-to-end test models with seeded random weights.

Usage: .venv/bin/python models/gen_models.py OUT_DIR

Writes OUT_DIR/<name>.onnx for every model in MODELS (each a few hundred KB at most;
generated at test time, never committed). Together they use every op of OPS at least
once; main() checks that, and onnx.checker checks each model.

    cnn          conv / batch-norm / relu / pooling / LRN / squeeze-excite / resize
                 (nearest and linear) / conv-transpose / concat / pad / gemm / softmax
    mlp          gemm (transB, alpha/beta) / matmul + bias / tanh / log-softmax
    transformer  one pre-norm encoder block (d=64, 2 heads, seq 16, symbolic batch):
                 layer-norm, Q/K/V projections, the Shape→Gather→Unsqueeze→Concat→Reshape
                 chain PyTorch exports for the head split, a causal mask built with
                 Less/Where, softmax attention, a Gelu feed-forward, residual adds
    lstm         LSTM over 8 steps, head on the last hidden state
    gru          bidirectional GRU (linear_before_reset), mean over time, head
    misc         the remaining element-wise, logical, reduction and data-movement ops,
                 with an int32 and a bool output
    concats      channel concats of conv branches that the bundle's plan drops (the
                 branches write into the concat's storage) and ones it must keep: an
                 input read twice, a concat of a concat, a graph input, a graph output

INPUT_SHAPES gives the shapes to bind for symbolic dims (passed to `kiln compile
--input-shape` and used for the reference run); the other inputs have static shapes.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPS = ["Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "Relu", "LeakyRelu", "Clip",
       "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu", "Erf", "Exp", "Log", "Sqrt", "Add", "Sub",
       "Mul", "Div", "Pow", "Max", "Min", "Neg", "Abs", "MaxPool", "AveragePool", "GlobalAveragePool", "LRN",
       "Flatten", "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "Unsqueeze", "Squeeze", "Shape",
       "ConstantOfShape", "Expand", "Tile", "Pad", "Resize", "Softmax", "LogSoftmax", "LayerNormalization",
       "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "Cast", "Where", "Equal", "Less", "Greater", "Not",
       "Dropout", "Identity", "LSTM", "GRU"]

# Symbolic dims bound at compile time and in the reference run: model → {input: shape}.
INPUT_SHAPES = {"transformer": {"x": [2, 16, 64]}}

F = TensorProto.FLOAT


class Builder:
    """Collects nodes and seeded initializers for one graph."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def fresh(self, stem):
        self.count += 1
        return "%s_%d" % (stem, self.count)

    def const(self, value, stem="c", dtype=np.float32):
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def he(self, shape, fan_in, stem="w"):
        return self.const(self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in), stem)

    def uniform(self, shape, lo, hi, stem="p"):
        return self.const(self.rng.uniform(lo, hi, shape), stem)

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.fresh("n_" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, cin, cout, k, bias=True, group=1, **attrs):
        w = self.he([cout, cin // group, k, k], cin // group * k * k)
        ins = [x, w] + ([self.uniform([cout], -0.05, 0.05, "b")] if bias else [])
        return self.op("Conv", ins, kernel_shape=[k, k], group=group, **attrs)

    def linear(self, x, din, dout):
        """MatMul + Add, the way PyTorch exports nn.Linear on 3-D inputs."""
        return self.op("Add", [self.op("MatMul", [x, self.he([din, dout], din)]), self.uniform([dout], -0.05, 0.05)])

    def model(self, name, inputs, outputs, opset):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gen_models.py")
        m.ir_version = 8 if opset <= 17 else 9 if opset <= 20 else 10
        onnx.checker.check_model(m, full_check=True)
        return m


def out(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def cnn():
    b = Builder(1)
    x = "image"
    r1 = b.op("Relu", [b.op("BatchNormalization", [b.conv(x, 3, 8, 3, pads=[1, 1, 1, 1]),
                                                  b.uniform([8], 0.9, 1.1), b.uniform([8], -0.1, 0.1),
                                                  b.uniform([8], -0.1, 0.1), b.uniform([8], 0.9, 1.1)],
                                   epsilon=1e-5)])                                  # 8x32x32
    p1 = b.op("MaxPool", [r1], kernel_shape=[2, 2], strides=[2, 2])                 # 8x16x16
    l2 = b.op("LeakyRelu", [b.conv(p1, 8, 16, 3, bias=False, pads=[1, 1, 1, 1])], alpha=0.1)
    c3 = b.op("Clip", [b.conv(l2, 16, 16, 3, group=4, pads=[2, 2, 2, 2], dilations=[2, 2]),
                       b.const(0.0), b.const(6.0)])
    ap = b.op("AveragePool", [c3], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=0)
    lrn = b.op("LRN", [ap], size=5, alpha=1e-3, beta=0.75, bias=1.0)
    # squeeze-and-excite
    g = b.op("GlobalAveragePool", [lrn])
    gate = b.op("Sigmoid", [b.conv(b.op("Relu", [b.conv(g, 16, 4, 1)]), 4, 16, 1)])
    se = b.op("Mul", [lrn, gate])
    down = b.op("HardSwish", [b.conv(se, 16, 16, 3, strides=[2, 2], pads=[1, 1, 1, 1])])   # 16x8x8
    up_n = b.op("Resize", [down, "", b.const([1, 1, 2, 2])], mode="nearest")
    up_l = b.op("Resize", [down, "", "", b.const([1, 16, 16, 16], dtype=np.int64)], mode="linear",
                coordinate_transformation_mode="half_pixel")
    up = b.op("Add", [up_n, up_l])                                                  # 16x16x16
    wt = b.const(b.rng.standard_normal([16, 8, 2, 2]) * np.sqrt(2.0 / (16 * 1)), "wt")
    up_t = b.op("ConvTranspose", [down, wt, b.uniform([8], -0.05, 0.05)], kernel_shape=[2, 2], strides=[2, 2])
    cat = b.op("Concat", [up, up_t, p1], axis=1)                                    # 32x16x16
    pad = b.op("Pad", [cat, b.const([0, 0, 1, 1, 0, 0, 1, 1], dtype=np.int64)], mode="reflect")
    c5 = b.op("Relu", [b.conv(pad, 32, 24, 3)])                                     # 24x16x16
    feat = b.op("Identity", [b.op("Dropout", [c5])])
    b.nodes.append(helper.make_node("Identity", [feat], ["features"]))
    flat = b.op("Flatten", [b.op("GlobalAveragePool", [feat])], axis=1)
    logits = b.op("Gemm", [flat, b.he([10, 24], 24), b.uniform([10], -0.05, 0.05)], transB=1)
    b.nodes.append(helper.make_node("Softmax", [logits], ["probs"], axis=1))
    return b.model("cnn", [out("image", F, [1, 3, 32, 32])],
                   [out("probs", F, [1, 10]), out("features", F, [1, 24, 16, 16])], 17)


def mlp():
    b = Builder(2)
    h1 = b.op("Relu", [b.op("Gemm", [b.op("Identity", ["x"]), b.he([64, 32], 32), b.uniform([64], -0.05, 0.05)],
                            transB=1)])
    h2 = b.op("Tanh", [b.linear(h1, 64, 64)])
    h3 = b.op("Gemm", [h2, b.he([64, 16], 64), b.uniform([1, 16], -0.05, 0.05)], alpha=0.5, beta=2.0)
    b.nodes.append(helper.make_node("LogSoftmax", [h3], ["log_probs"], axis=-1))
    b.nodes.append(helper.make_node("HardSigmoid", [h3], ["gate"], alpha=0.2, beta=0.5))
    return b.model("mlp", [out("x", F, [4, 32])], [out("log_probs", F, [4, 16]), out("gate", F, [4, 16])], 18)


def transformer():
    d, heads, seq = 64, 2, 16
    dh = d // heads
    b = Builder(3)
    x = "x"

    def layer_norm(v):
        return b.op("LayerNormalization", [v, b.uniform([d], 0.9, 1.1), b.uniform([d], -0.1, 0.1)],
                    axis=-1, epsilon=1e-5)

    # The shape chain PyTorch emits for x.view(B, S, heads, dh).
    shape = b.op("Shape", [x])
    batch = b.op("Unsqueeze", [b.op("Gather", [shape, b.const(0, dtype=np.int64)], axis=0),
                               b.const([0], dtype=np.int64)])
    length = b.op("Unsqueeze", [b.op("Gather", [shape, b.const(1, dtype=np.int64)], axis=0),
                                b.const([0], dtype=np.int64)])
    split_shape = b.op("Concat", [batch, length, b.const([heads], dtype=np.int64), b.const([dh], dtype=np.int64)],
                       axis=0)
    merge_shape = b.op("Concat", [batch, length, b.const([d], dtype=np.int64)], axis=0)

    ln1 = layer_norm(x)
    q = b.op("Transpose", [b.op("Reshape", [b.linear(ln1, d, d), split_shape])], perm=[0, 2, 1, 3])   # B,h,S,dh
    k = b.op("Transpose", [b.op("Reshape", [b.linear(ln1, d, d), split_shape])], perm=[0, 2, 3, 1])   # B,h,dh,S
    v = b.op("Transpose", [b.op("Reshape", [b.linear(ln1, d, d), split_shape])], perm=[0, 2, 1, 3])
    scores = b.op("Div", [b.op("MatMul", [q, k]), b.const(np.sqrt(dh))])
    # causal mask: position j is hidden from position i when i < j
    pos = b.const(np.arange(seq), "positions", dtype=np.int64)
    future = b.op("Less", [b.op("Unsqueeze", [pos, b.const([1], dtype=np.int64)]),
                           b.op("Unsqueeze", [pos, b.const([0], dtype=np.int64)])])
    masked = b.op("Where", [future, b.const(-1e9), scores])
    attn = b.op("Softmax", [masked], axis=-1)
    ctx = b.op("Reshape", [b.op("Transpose", [b.op("MatMul", [attn, v])], perm=[0, 2, 1, 3]), merge_shape])
    res1 = b.op("Add", [x, b.linear(ctx, d, d)])
    ff = b.linear(b.op("Gelu", [b.linear(layer_norm(res1), d, 2 * d)]), 2 * d, d)
    b.nodes.append(helper.make_node("Add", [res1, ff], ["y"]))
    return b.model("transformer", [out("x", F, ["batch", seq, d])], [out("y", F, ["batch", seq, d])], 20)


def lstm():
    seq, batch, inp, hidden = 8, 2, 16, 32
    b = Builder(4)
    w = b.const(b.rng.uniform(-1, 1, [1, 4 * hidden, inp]) / np.sqrt(inp), "W")
    r = b.const(b.rng.uniform(-1, 1, [1, 4 * hidden, hidden]) / np.sqrt(hidden), "R")
    bias = b.uniform([1, 8 * hidden], -0.1, 0.1, "B")
    h0 = b.uniform([1, batch, hidden], -0.5, 0.5, "h0")
    c0 = b.uniform([1, batch, hidden], -0.5, 0.5, "c0")
    y, y_h = b.op("LSTM", ["x", w, r, bias, "", h0, c0], n_out=2, hidden_size=hidden)
    b.nodes.append(helper.make_node("Squeeze", [y, b.const([1], dtype=np.int64)], ["y_seq"]))
    last = b.op("Squeeze", [y_h, b.const([0], dtype=np.int64)])
    b.nodes.append(helper.make_node("Gemm", [last, b.he([hidden, 10], hidden), b.uniform([10], -0.05, 0.05)],
                                    ["logits"]))
    return b.model("lstm", [out("x", F, [seq, batch, inp])],
                   [out("y_seq", F, [seq, batch, hidden]), out("logits", F, [batch, 10])], 17)


def gru():
    seq, batch, inp, hidden = 6, 2, 12, 16
    b = Builder(5)
    w = b.const(b.rng.uniform(-1, 1, [2, 3 * hidden, inp]) / np.sqrt(inp), "W")
    r = b.const(b.rng.uniform(-1, 1, [2, 3 * hidden, hidden]) / np.sqrt(hidden), "R")
    bias = b.uniform([2, 6 * hidden], -0.1, 0.1, "B")
    y = b.op("GRU", ["x", w, r, bias], hidden_size=hidden, direction="bidirectional", linear_before_reset=1)
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 1, 3]),
                         b.const([seq, batch, 2 * hidden], dtype=np.int64)])               # seq, batch, 2h
    pooled = b.op("ReduceMean", [y], axes=[0], keepdims=0)                                  # opset 17: attribute
    b.nodes.append(helper.make_node("Gemm", [pooled, b.he([2 * hidden, 5], 2 * hidden), b.uniform([5], -0.05, 0.05)],
                                    ["scores"]))
    b.nodes.append(helper.make_node("Identity", [y], ["states"]))
    return b.model("gru", [out("x", F, [seq, batch, inp])],
                   [out("scores", F, [batch, 5]), out("states", F, [seq, batch, 2 * hidden])], 17)


def misc():
    b = Builder(6)
    a, c = "a", "c"                                # a: 2x3x8x8, c: 3x1x8 (broadcasts against a)
    i64 = dict(dtype=np.int64)
    one = b.const(1.0)
    e = b.op("Erf", [a])
    ex = b.op("Exp", [b.op("Min", [a, b.const(3.0)])])
    mx = b.op("Max", [a, c])
    pw = b.op("Pow", [b.op("Add", [b.op("Abs", [a]), one]), b.const(1.5)])
    lg = b.op("Log", [b.op("Add", [b.op("Abs", [c]), one])])
    sq = b.op("Sqrt", [b.op("Abs", [a])])
    dv = b.op("Div", [a, b.op("Add", [b.op("Abs", [c]), b.const(0.5)])])
    ng = b.op("Neg", [b.op("Sub", [a, c])])
    acc = b.op("Add", [b.op("Add", [b.op("Add", [e, ex]), b.op("Sub", [mx, pw])]),
                       b.op("Add", [b.op("Mul", [lg, sq]), b.op("Add", [dv, ng])])])
    # data movement
    s0, s1 = b.op("Split", [a, b.const([1, 2], **i64)], n_out=2, axis=1)              # 2x1x8x8, 2x2x8x8
    tiled = b.op("Tile", [s0, b.const([1, 3, 1, 1], **i64)])                           # 2x3x8x8
    sl = b.op("Slice", [s1, b.const([0, 1], **i64), b.const([8, 7], **i64), b.const([2, 3], **i64),
                        b.const([2, 1], **i64)])                                       # 2x2x4x6
    rev = b.op("Slice", [a, b.const([-1], **i64), b.const([-100], **i64), b.const([3], **i64),
                         b.const([-1], **i64)])                                        # a flipped along W
    gathered = b.op("Gather", [a, b.const([2, 0, 1], **i64)], axis=1)
    sq0 = b.op("Squeeze", [s0, b.const([1], **i64)])                                   # 2x8x8
    back = b.op("Unsqueeze", [sq0, b.const([1], **i64)])                               # 2x1x8x8
    fill = b.op("ConstantOfShape", [b.op("Shape", [back])],
                value=numpy_helper.from_array(np.array([0.25], dtype=np.float32)))
    expanded = b.op("Expand", [c, b.const([2, 3, 8, 8], **i64)])
    moved = b.op("Add", [b.op("Add", [tiled, gathered]), b.op("Mul", [expanded, b.op("Add", [back, fill])])])
    moved = b.op("Add", [moved, rev])
    b.nodes.append(helper.make_node("Add", [acc, moved], ["mixed"]))
    b.nodes.append(helper.make_node("Transpose", [sl], ["sliced"], perm=[0, 3, 1, 2]))   # 2x6x2x4
    # reductions (opset 18: axes are an input)
    b.nodes.append(helper.make_node("ReduceMean", [a, b.const([2, 3], **i64)], ["mean"], keepdims=1))
    b.nodes.append(helper.make_node("ReduceSum", [a, b.const([1], **i64)], ["sum"], keepdims=0))
    b.nodes.append(helper.make_node("ReduceMax", [a, b.const([-1], **i64)], ["max"], keepdims=0))
    b.nodes.append(helper.make_node("ReduceMin", [a], ["min"], keepdims=0))
    # casts and logic
    q = b.op("Cast", [b.op("Mul", [a, b.const(4.0)])], to=TensorProto.INT32)            # truncation toward 0
    b.nodes.append(helper.make_node("Identity", [q], ["quantized"]))
    even = b.op("Equal", [q, b.const(0, dtype=np.int32)])
    big = b.op("Greater", [a, b.const(0.5)])
    small = b.op("Less", [a, c])
    keep = b.op("Not", [big])
    picked = b.op("Where", [keep, a, b.op("Cast", [q], to=TensorProto.FLOAT)])
    b.nodes.append(helper.make_node("Where", [small, picked, b.op("Cast", [even], to=TensorProto.FLOAT)],
                                    ["selected"]))
    b.nodes.append(helper.make_node("Not", [b.op("Equal", [big, small])], ["differs"]))
    return b.model("misc", [out("a", F, [2, 3, 8, 8]), out("c", F, [3, 1, 8])],
                   [out("mixed", F, [2, 3, 8, 8]), out("sliced", F, [2, 6, 2, 4]), out("mean", F, [2, 3, 1, 1]),
                    out("sum", F, [2, 8, 8]), out("max", F, [2, 3, 8]), out("min", F, []),
                    out("quantized", TensorProto.INT32, [2, 3, 8, 8]), out("selected", F, [2, 3, 8, 8]),
                    out("differs", TensorProto.BOOL, [2, 3, 8, 8])], 18)


def concats():
    b = Builder(7)
    x = "x"                                                                         # 16x8x8

    def branch(src, cin, k=1):
        return b.op("Relu", [b.conv(src, cin, 32, k, pads=[k // 2] * 4)])
    # dropped: two branches read by the concat alone (a fire module)
    c1 = b.conv(b.op("Concat", [branch(x, 16), branch(x, 16, 3)], axis=1), 64, 32, 1)
    # kept: d is read by the concat and by the add
    d = branch(x, 16)
    f = b.op("Add", [d, c1])
    c2 = b.conv(b.op("Concat", [d, branch(c1, 32)], axis=1), 64, 32, 3, pads=[1, 1, 1, 1])
    # a concat of a concat: the inner one dropped, the outer kept
    inner = b.op("Concat", [branch(c2, 32), branch(f, 32)], axis=1)
    outer = b.op("Concat", [inner, branch(c2, 32, 3)], axis=1)                     # 96x8x8
    # a graph input as a concat input, and a concat that is a graph output
    with_x = b.op("Concat", [x, branch(f, 32)], axis=1)                            # 48x8x8
    y = b.op("Add", [b.conv(outer, 96, 32, 1), b.conv(with_x, 48, 32, 1)])
    b.nodes.append(helper.make_node("Concat", [y, c2], ["cat"], axis=1))
    b.nodes.append(helper.make_node("GlobalAveragePool", [y], ["pooled"]))
    return b.model("concats", [out("x", F, [1, 16, 8, 8])], [out("pooled", F, [1, 32, 1, 1]),
                                                               out("cat", F, [1, 64, 8, 8])], 17)


MODELS = {"cnn": cnn, "mlp": mlp, "transformer": transformer, "lstm": lstm, "gru": gru, "misc": misc,
          "concats": concats}


def generate(out_dir):
    """Writes every model; returns {name: path}."""
    os.makedirs(out_dir, exist_ok=True)
    paths, used = {}, set()
    for name, make in MODELS.items():
        m = make()
        used |= {n.op_type for n in m.graph.node}
        paths[name] = os.path.join(out_dir, name + ".onnx")
        onnx.save(m, paths[name])
    missing = [op for op in OPS if op not in used]
    assert not missing, "gen_models.py: no model uses %s" % ", ".join(missing)
    return paths


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for name, path in generate(sys.argv[1]).items():
        print("%s: %s (%d bytes)" % (name, path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
