"""gen_bench_models.py — the generated models of the benchmark set (bench/run.py).

Usage: .venv/bin/python models/gen_bench_models.py OUT_DIR

Writes, with seeded random weights (generated at bench time, never committed; opset 17):

    mobilenetv2.onnx    MobileNetV2 1.0, 224x224, batch 1, torchvision's architecture as
                        torch.onnx exports it: a 3x3 stride-2 stem, 17 inverted residual
                        blocks (1x1 expand, 3x3 depthwise, 1x1 linear projection, a
                        residual add where stride is 1 and the widths match), a 1x1 conv to
                        1280, global average pool, flatten, Gemm 1280 -> 1000. Every conv
                        has no bias and is followed by BatchNormalization; ReLU6 is Clip(0, 6).
                        Input "input" [1, 3, 224, 224], output "logits" [1, 1000].
    bert_encoder.onnx   a BERT-like encoder: 4 post-LN layers, d = 256, 4 heads, FFN 1024,
                        sequence 128, batch 1. Q/K/V/output projections and the FFN are
                        MatMul + Add; heads split with Reshape + Transpose; scores scaled by
                        1/sqrt(64), Softmax; GELU written with Erf (as BERT exports it);
                        LayerNormalization (opset 17) after each residual add.
                        Input "hidden" [1, 128, 256], output "encoded" [1, 128, 256].

Two more shapes, outside the default set (`bench/run.py --models dcgan_decoder,...`):

    dcgan_decoder.onnx  a DCGAN-style generator body: four ConvTranspose 4x4, stride 2,
                        pads 1 (512 -> 256 -> 128 -> 64 -> 32 channels), each with a bias
                        and a Relu. Input "z" [1, 512, 8, 8], output "image" [1, 32, 128, 128].
    resnext_blocks.onnx four ResNeXt bottleneck blocks at 28x28, 256 channels: 1x1 conv,
                        Relu, 3x3 conv in 32 groups of 8 channels, Relu, 1x1 conv, residual
                        Add, Relu (convs with biases, no BatchNormalization).
                        Input "x" [1, 256, 28, 28], output "y" [1, 256, 28, 28].

A BERT-style embedding, outside the default set too (the cost of checking token ids):

    bert_embedding.onnx the embedding layer of BERT-base: int64 "input_ids" [1, 128] into a
                        30522 x 768 word table, int64 "token_type_ids" [1, 128] into a 2 x 768
                        table, position embeddings for positions 0..127 (a Gather with constant
                        indices, folded at compile time), their sum, LayerNormalization.
                        Output "embedded" [1, 128, 768]. Every id is a run-time input, so every
                        Gather checks its indices (lower/index_checks.c).

Scales: conv weights are He-initialised and every BatchNormalization gets non-trivial
statistics taken from the layer's real activations: the network is run in NumPy on a
seeded batch of inputs drawn like kiln's (uniform in [-1, 1)), and each BN's running mean
and variance are the measured per-channel ones, perturbed (mean + 0.1 std noise, variance
x U(0.8, 1.25)), with gamma U(0.8, 1.2) and beta U(-0.1, 0.1). So post-BN activations are
of order one all the way down, like a trained network's, and the logits are not one-hot.
The encoder's projections use N(0, 1/fan_in), which keeps Q.K^T / sqrt(64) of order one
(attention neither uniform nor one-hot); LayerNormalization renormalises each layer.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F = TensorProto.FLOAT
# (expansion t, output channels c, repeats n, first stride s), torchvision's table
MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]
CALIBRATION_BATCH = 2


class Graph:
    """Nodes and seeded initializers of one model."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def fresh(self, stem):
        self.count += 1
        return "%s_%d" % (stem, self.count)

    def const(self, value, stem, dtype=np.float32):
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type, inputs, output=None, **attrs):
        out = output or self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=self.fresh(op_type), **attrs))
        return out

    def model(self, name, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="gen_bench_models.py")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m


# ---------------------------------------------------------------- MobileNetV2

def conv_np(x, w, stride, pad, group):
    """NCHW convolution in NumPy (float32), for calibration only."""
    n, c, h, wd = x.shape
    m, cg, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    taps = [xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride] for i in range(k) for j in range(k)]
    if group == 1:
        cols = np.stack(taps, axis=2).reshape(n, c * k * k, ho * wo)
        return np.matmul(w.reshape(m, c * k * k), cols).reshape(n, m, ho, wo)
    assert group == c == m and cg == 1, "only dense and depthwise convolutions"
    taps = np.stack(taps, axis=2)                                  # n, c, k*k, ho, wo
    return np.einsum("nctij,ct->ncij", taps, w.reshape(c, k * k), optimize=True)


class MobileNet:
    """Builds the graph and runs the same network in NumPy to calibrate each BN."""

    def __init__(self, seed):
        self.g = Graph(seed)
        self.rng = self.g.rng
        self.x = self.rng.uniform(-1, 1, (CALIBRATION_BATCH, 3, 224, 224)).astype(np.float32)

    def conv_bn(self, name, value, cin, cout, k, stride, group=1, relu6=True):
        """Conv (no bias) → BatchNormalization [→ Clip(0, 6)]; value is (graph name, numpy activations)."""
        g, rng = self.g, self.rng
        fan_in = cin // group * k * k
        w = (rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        pad = (k - 1) // 2
        y = conv_np(value[1], w, stride, pad, group)
        mean = y.mean(axis=(0, 2, 3))
        std = y.std(axis=(0, 2, 3)) + 1e-3
        run_mean = mean + 0.1 * std * rng.standard_normal(cout)
        run_var = std ** 2 * rng.uniform(0.8, 1.25, cout)
        gamma, beta = rng.uniform(0.8, 1.2, cout), rng.uniform(-0.1, 0.1, cout)
        eps = 1e-5
        c = g.op("Conv", [value[0], g.const(w, name + "_w")], kernel_shape=[k, k], strides=[stride, stride],
                 pads=[pad] * 4, group=group)
        b = g.op("BatchNormalization", [c, g.const(gamma, name + "_gamma"), g.const(beta, name + "_beta"),
                                        g.const(run_mean, name + "_mean"), g.const(run_var, name + "_var")],
                 epsilon=eps)
        shape = (1, cout, 1, 1)
        yn = ((y - run_mean.reshape(shape)) / np.sqrt(run_var.reshape(shape) + eps) * gamma.reshape(shape)
              + beta.reshape(shape)).astype(np.float32)
        if not relu6:
            return b, yn
        return g.op("Clip", [b, self.zero, self.six]), np.clip(yn, 0, 6)

    def build(self):
        g = self.g
        self.zero, self.six = g.const(0.0, "relu6_min"), g.const(6.0, "relu6_max")
        v = self.conv_bn("stem", ("input", self.x), 3, 32, 3, 2)
        cin = 32
        for stage, (t, c, n, s) in enumerate(MOBILENET_V2):
            for i in range(n):
                stride = s if i == 0 else 1
                name = "block%d_%d" % (stage + 1, i)
                hidden = cin * t
                h = v
                if t != 1:
                    h = self.conv_bn(name + "_expand", h, cin, hidden, 1, 1)
                h = self.conv_bn(name + "_dw", h, hidden, hidden, 3, stride, group=hidden)
                h = self.conv_bn(name + "_project", h, hidden, c, 1, 1, relu6=False)
                if stride == 1 and cin == c:
                    h = (g.op("Add", [v[0], h[0]]), v[1] + h[1])
                v, cin = h, c
        v = self.conv_bn("head", v, cin, 1280, 1, 1)
        pooled = g.op("GlobalAveragePool", [v[0]])
        flat = g.op("Flatten", [pooled], axis=1)
        feat = v[1].mean(axis=(2, 3))
        w = self.rng.standard_normal((1000, 1280)) / np.sqrt(1280)
        logits = feat @ w.T
        w *= 2.0 / (logits.std() + 1e-6)                            # logits of std ~2
        g.op("Gemm", [flat, g.const(w, "fc_w"), g.const(self.rng.uniform(-0.05, 0.05, 1000), "fc_b")], "logits",
             transB=1)
        return g.model("mobilenetv2", [helper.make_tensor_value_info("input", F, [1, 3, 224, 224])],
                       [helper.make_tensor_value_info("logits", F, [1, 1000])])


def mobilenetv2(seed=7):
    return MobileNet(seed).build()


# ---------------------------------------------------------------- BERT encoder

def bert_encoder(seed=11, layers=4, d=256, heads=4, ffn=1024, seq=128):
    g = Graph(seed)
    rng = g.rng
    dh = d // heads
    i64 = np.int64

    def linear(x, din, dout, stem):
        w = g.const(rng.standard_normal((din, dout)) / np.sqrt(din), stem + "_w")
        return g.op("Add", [g.op("MatMul", [x, w]), g.const(rng.uniform(-0.05, 0.05, dout), stem + "_b")])

    def layer_norm(x, stem):
        return g.op("LayerNormalization", [x, g.const(rng.uniform(0.9, 1.1, d), stem + "_gamma"),
                                           g.const(rng.uniform(-0.1, 0.1, d), stem + "_beta")],
                    axis=-1, epsilon=1e-12)

    split = g.const([1, seq, heads, dh], "split_shape", i64)
    merge = g.const([1, seq, d], "merge_shape", i64)
    scale = g.const(1.0 / np.sqrt(dh), "attn_scale")
    sqrt2 = g.const(np.sqrt(2.0), "sqrt2")
    one, half = g.const(1.0, "one"), g.const(0.5, "half")
    x = "hidden"
    for layer in range(layers):
        p = "layer%d" % layer

        def heads_of(stem, perm):
            return g.op("Transpose", [g.op("Reshape", [linear(x, d, d, p + stem), split])], perm=perm)

        q = heads_of("_q", [0, 2, 1, 3])                                    # 1, h, S, dh
        k = heads_of("_k", [0, 2, 3, 1])                                    # 1, h, dh, S
        v = heads_of("_v", [0, 2, 1, 3])
        attn = g.op("Softmax", [g.op("Mul", [g.op("MatMul", [q, k]), scale])], axis=-1)
        ctx = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [attn, v])], perm=[0, 2, 1, 3]), merge])
        x = layer_norm(g.op("Add", [x, linear(ctx, d, d, p + "_o")]), p + "_ln1")
        h = linear(x, d, ffn, p + "_ffn1")
        gelu = g.op("Mul", [g.op("Mul", [h, half]), g.op("Add", [g.op("Erf", [g.op("Div", [h, sqrt2])]), one])])
        x = layer_norm(g.op("Add", [x, linear(gelu, ffn, d, p + "_ffn2")]), p + "_ln2")
    g.op("Identity", [x], "encoded")
    return g.model("bert_encoder", [helper.make_tensor_value_info("hidden", F, [1, seq, d])],
                   [helper.make_tensor_value_info("encoded", F, [1, seq, d])])


# ---------------------------------------------------------------- extra shapes

def dcgan_decoder(seed=13):
    g = Graph(seed)
    x, cin = "z", 512
    for i, cout in enumerate([256, 128, 64, 32]):
        # each output sees cin x 4 taps (a 4x4 kernel at stride 2): He scale over those
        w = g.const(g.rng.standard_normal((cin, cout, 4, 4)) * np.sqrt(2.0 / (cin * 4)), "deconv%d_w" % i)
        b = g.const(g.rng.uniform(-0.05, 0.05, cout), "deconv%d_b" % i)
        x = g.op("Relu", [g.op("ConvTranspose", [x, w, b], kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1])],
                 "image" if i == 3 else None)
        cin = cout
    return g.model("dcgan_decoder", [helper.make_tensor_value_info("z", F, [1, 512, 8, 8])],
                   [helper.make_tensor_value_info("image", F, [1, 32, 128, 128])])


def resnext_blocks(seed=17, blocks=4, c=256, width=256, groups=32, hw=28):
    g = Graph(seed)

    def conv(x, cin, cout, k, group=1):
        w = g.const(g.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / (cin // group * k * k)),
                    "conv_w")
        return g.op("Conv", [x, w, g.const(g.rng.uniform(-0.05, 0.05, cout), "conv_b")], kernel_shape=[k, k],
                    pads=[k // 2] * 4, group=group)

    x = "x"
    for i in range(blocks):
        h = g.op("Relu", [conv(x, c, width, 1)])
        h = g.op("Relu", [conv(h, width, width, 3, groups)])
        # the residual branch scaled down so the sum stays of order one over the blocks
        h = g.op("Mul", [conv(h, width, c, 1), g.const(0.5, "branch_scale")])
        x = g.op("Relu", [g.op("Add", [x, h])], "y" if i == blocks - 1 else None)
    return g.model("resnext_blocks", [helper.make_tensor_value_info("x", F, [1, c, hw, hw])],
                   [helper.make_tensor_value_info("y", F, [1, c, hw, hw])])


def bert_embedding(seed=19, vocab=30522, d=768, seq=128, types=2):
    g = Graph(seed)
    rng = g.rng
    i64 = np.int64
    words = g.const(rng.standard_normal((vocab, d)) * 0.02, "word_embeddings")
    kinds = g.const(rng.standard_normal((types, d)) * 0.02, "token_type_embeddings")
    places = g.const(rng.standard_normal((512, d)) * 0.02, "position_embeddings")
    pos = g.op("Gather", [places, g.const(np.arange(seq).reshape(1, seq), "position_ids", i64)], axis=0)
    word = g.op("Gather", [words, "input_ids"], axis=0)
    kind = g.op("Gather", [kinds, "token_type_ids"], axis=0)
    x = g.op("Add", [g.op("Add", [word, kind]), pos])
    g.op("LayerNormalization", [x, g.const(rng.uniform(0.9, 1.1, d), "ln_gamma"),
                                g.const(rng.uniform(-0.1, 0.1, d), "ln_beta")], "embedded", axis=-1, epsilon=1e-12)
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, seq]) for n in ("input_ids", "token_type_ids")]
    return g.model("bert_embedding", ids, [helper.make_tensor_value_info("embedded", F, [1, seq, d])])


MODELS = {"mobilenetv2": mobilenetv2, "bert_encoder": bert_encoder, "dcgan_decoder": dcgan_decoder,
          "resnext_blocks": resnext_blocks, "bert_embedding": bert_embedding}


def generate(out_dir, names=None):
    """Writes the models (all, or those named); returns {name: path}."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name, make in MODELS.items():
        if names and name not in names:
            continue
        paths[name] = os.path.join(out_dir, name + ".onnx")
        onnx.save(make(), paths[name])
    return paths


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for name, path in generate(sys.argv[1]).items():
        print("%s: %s (%.1f MB)" % (name, path, os.path.getsize(path) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
