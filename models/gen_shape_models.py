"""gen_shape_models.py — single-op (or tiny) models, one per shape class, for bench/shapes.py.

Usage: .venv/bin/python models/gen_shape_models.py OUT_DIR [--classes NAME,GROUP,PATTERN...] [--list]

Each shape class is one ONNX model (opset 17, batch 1, seeded random weights generated at
bench time, never committed): the shapes of issue 15's second table (an STFT front end as
a strided 1-D conv, the Conv1d stack of a small speech model, ViT-B/16's 197-token
projections, DeepLab's dilated ASPP conv, a segmentation head's Resize) and the common
ones — 1x1 / 3x3 / 5x5 / 7x7 convs at stride 1 and 2 with even and odd channel counts,
grouped and depthwise convs, transposed convs, pooling windows, GEMM and batched GEMM
with prime sizes, softmax and layer-norm over odd lengths, Resize modes and the data
movement of channel shuffles, split/concat, pad and transpose.

Each class has a group (conv1d, conv, dwconv, deconv, matmul, pool, norm, resize,
movement); --classes takes class names, group names or shell patterns (`conv3x3*`).

Scales: conv and matmul weights are He-initialised (N(0, 2 / fan_in)) or N(0, 1 / fan_in)
where no ReLU follows, biases U(-0.05, 0.05); inputs are kiln bench's uniform [-1, 1), so
outputs are of order one. The STFT conv's weights are a Hann-windowed cosine basis (what
a real front end computes), scaled by 1/sqrt(512).
"""
import argparse
import fnmatch
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F = TensorProto.FLOAT
GROUPS = ["conv1d", "conv", "dwconv", "deconv", "matmul", "pool", "norm", "resize", "movement"]


class Tiny:
    """One small graph with seeded initializers."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def fresh(self, stem):
        self.count += 1
        return "%s_%d" % (stem, self.count)

    def const(self, value, stem="c", dtype=np.float32):
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type, inputs, output=None, n_out=1, **attrs):
        outs = [output] if output else [self.fresh(op_type.lower()) for _ in range(n_out)]
        if output and n_out > 1:
            outs = [output] + [self.fresh(op_type.lower()) for _ in range(n_out - 1)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.fresh(op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, cin, cout, k, stride=1, pad=None, group=1, dilation=1, relu_scale=True, output=None, dims=2):
        ks = [k] * dims
        fan_in = cin // group * k ** dims
        w = self.rng.standard_normal([cout, cin // group] + ks) * np.sqrt((2.0 if relu_scale else 1.0) / fan_in)
        pad = dilation * (k - 1) // 2 if pad is None else pad
        return self.op("Conv", [x, self.const(w, "w"), self.const(self.rng.uniform(-0.05, 0.05, cout), "b")], output,
                       kernel_shape=ks, strides=[stride] * dims, pads=[pad] * (2 * dims), group=group,
                       dilations=[dilation] * dims)

    def model(self, name, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                                  [helper.make_tensor_value_info(n, F, None) for n in outputs],
                                  initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="gen_shape_models.py")
        m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        # declare the inferred output shapes (kiln and ONNX Runtime both infer them; this
        # keeps the file self-describing)
        inferred = {v.name: v for v in m.graph.value_info}
        for o in m.graph.output:
            if o.name in inferred:
                o.type.CopyFrom(inferred[o.name].type)
        onnx.checker.check_model(m, full_check=True)
        return m


# ---------------------------------------------------------------- builders

def conv2d(cin, cout, k, stride, hw, group=1, dilation=1, relu=True, seed=1):
    def build(name):
        t = Tiny(seed)
        y = t.conv("x", cin, cout, k, stride, group=group, dilation=dilation)
        if relu:
            t.op("Relu", [y], "y")
        else:
            t.op("Identity", [y], "y")
        return t.model(name, [("x", [1, cin, hw, hw])], ["y"])
    return build


def conv1d(cin, cout, k, stride, length, pad=None, relu=True, seed=2):
    def build(name):
        t = Tiny(seed)
        y = t.conv("x", cin, cout, k, stride, pad=pad, dims=1)
        t.op("Relu" if relu else "Identity", [y], "y")
        return t.model(name, [("x", [1, cin, length])], ["y"])
    return build


def stft_conv1d(n_fft=512, hop=160, samples=16000, bins=257):
    """The real part of an STFT as a strided Conv1d: 1 input channel, 257 Hann-windowed cosines."""
    def build(name):
        t = Tiny(3)
        n = np.arange(n_fft)
        window = 0.5 - 0.5 * np.cos(2 * np.pi * n / n_fft)
        basis = np.cos(2 * np.pi * np.outer(np.arange(bins), n) / n_fft) * window / np.sqrt(n_fft)
        w = t.const(basis.reshape(bins, 1, n_fft), "stft_cos")
        t.op("Conv", ["audio", w], "spec", kernel_shape=[n_fft], strides=[hop], pads=[0, 0])
        return t.model(name, [("audio", [1, 1, samples])], ["spec"])
    return build


def speech_conv1d_stack(length=300):
    """A small speech model's encoder: 80 mel bins, Conv1d k5 → 128, then three k3 128 → 128 / 64, ReLU."""
    def build(name):
        t = Tiny(4)
        x = t.op("Relu", [t.conv("mel", 80, 128, 5, dims=1)])
        x = t.op("Relu", [t.conv(x, 128, 128, 3, dims=1)])
        x = t.op("Relu", [t.conv(x, 128, 128, 3, dims=1)])
        t.op("Relu", [t.conv(x, 128, 64, 3, dims=1)], "features")
        return t.model(name, [("mel", [1, 80, length])], ["features"])
    return build


def deconv(cin, cout, k, stride, pad, hw, seed=5):
    def build(name):
        t = Tiny(seed)
        taps = max(1, (k // stride) ** 2)
        w = t.const(t.rng.standard_normal((cin, cout, k, k)) * np.sqrt(2.0 / (cin * taps)), "w")
        y = t.op("ConvTranspose", ["x", w, t.const(t.rng.uniform(-0.05, 0.05, cout), "b")], kernel_shape=[k, k],
                 strides=[stride, stride], pads=[pad] * 4)
        t.op("Relu", [y], "y")
        return t.model(name, [("x", [1, cin, hw, hw])], ["y"])
    return build


def matmul_const(m, k, n, batch=None, bias=True, seed=6):
    """x [batch.., m, k] @ W [k, n] (+ b): a linear layer."""
    def build(name):
        t = Tiny(seed)
        w = t.const(t.rng.standard_normal((k, n)) / np.sqrt(k), "w")
        lead = [1] if batch is None else list(batch)
        y = t.op("MatMul", ["x", w])
        if bias:
            t.op("Add", [y, t.const(t.rng.uniform(-0.05, 0.05, n), "b")], "y")
        else:
            t.op("Identity", [y], "y")
        return t.model(name, [("x", lead + [m, k])], ["y"])
    return build


def gemm_prime(m, k, n):
    def build(name):
        t = Tiny(7)
        w = t.const(t.rng.standard_normal((n, k)) / np.sqrt(k), "w")
        t.op("Gemm", ["a", w, t.const(t.rng.uniform(-0.05, 0.05, n), "b")], "y", transB=1)
        return t.model(name, [("a", [m, k])], ["y"])
    return build


def batch_matmul(batch, m, k, n):
    """Both operands activations (attention's Q.K^T): [b, m, k] @ [b, k, n]."""
    def build(name):
        t = Tiny(8)
        # inputs are U(-1, 1) (variance 1/3): scale the product back to order one
        t.op("Mul", [t.op("MatMul", ["a", "b"]), t.const(np.sqrt(3.0 / k), "scale")], "y")
        return t.model(name, [("a", [batch, m, k]), ("b", [batch, k, n])], ["y"])
    return build


def pool(kind, c, hw, k=None, stride=1, pad=0):
    def build(name):
        t = Tiny(9)
        if kind in ("GlobalAveragePool", "GlobalMaxPool"):
            t.op(kind, ["x"], "y")
        elif kind == "AveragePool":
            t.op(kind, ["x"], "y", kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                 count_include_pad=0)
        else:
            t.op(kind, ["x"], "y", kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        return t.model(name, [("x", [1, c, hw, hw])], ["y"])
    return build


def softmax(shape):
    def build(name):
        t = Tiny(10)
        t.op("Softmax", [t.op("Mul", ["x", t.const(4.0, "temp")])], "y", axis=-1)
        return t.model(name, [("x", shape)], ["y"])
    return build


def layer_norm(shape):
    def build(name):
        t = Tiny(11)
        d = shape[-1]
        t.op("LayerNormalization", ["x", t.const(t.rng.uniform(0.9, 1.1, d), "gamma"),
                                    t.const(t.rng.uniform(-0.1, 0.1, d), "beta")], "y", axis=-1, epsilon=1e-5)
        return t.model(name, [("x", shape)], ["y"])
    return build


def resize(shape, out_hw, mode, ctm="half_pixel", nearest_mode=None):
    def build(name):
        t = Tiny(12)
        sizes = t.const(list(shape[:2]) + list(out_hw), "sizes", np.int64)
        attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
        if nearest_mode:
            attrs["nearest_mode"] = nearest_mode
        if mode == "cubic":
            attrs["cubic_coeff_a"] = -0.75
        t.op("Resize", ["x", "", "", sizes], "y", **attrs)
        return t.model(name, [("x", shape)], ["y"])
    return build


def channel_shuffle(c, hw, groups=2):
    def build(name):
        t = Tiny(13)
        r = t.op("Reshape", ["x", t.const([1, groups, c // groups, hw, hw], "split_shape", np.int64)])
        s = t.op("Transpose", [r], perm=[0, 2, 1, 3, 4])
        t.op("Reshape", [s, t.const([1, c, hw, hw], "merge_shape", np.int64)], "y")
        return t.model(name, [("x", [1, c, hw, hw])], ["y"])
    return build


def split_concat(c, hw):
    """Split the channels in two halves and concat them the other way round (a ShuffleNet unit's data flow)."""
    def build(name):
        t = Tiny(14)
        a, b = t.op("Split", ["x", t.const([c // 2, c - c // 2], "split", np.int64)], n_out=2, axis=1)
        t.op("Concat", [b, a], "y", axis=1)
        return t.model(name, [("x", [1, c, hw, hw])], ["y"])
    return build


def pad(shape, pads, mode):
    def build(name):
        t = Tiny(15)
        t.op("Pad", ["x", t.const(pads, "pads", np.int64)], "y", mode=mode)
        return t.model(name, [("x", shape)], ["y"])
    return build


def transpose(shape, perm):
    def build(name):
        t = Tiny(16)
        t.op("Transpose", ["x"], "y", perm=perm)
        return t.model(name, [("x", shape)], ["y"])
    return build


# ---------------------------------------------------------------- the classes

class ShapeClass:
    def __init__(self, name, group, what, build, issue=False):
        self.name, self.group, self.what, self.build, self.issue = name, group, what, build, issue


CLASSES = [
    # issue 15's second table
    ShapeClass("stft_conv1d", "conv1d", "Conv1d 1 -> 257 channels, kernel 512, stride 160, 16000 samples (STFT front end)",
               stft_conv1d(), issue=True),
    ShapeClass("speech_conv1d_stack", "conv1d", "four Conv1d + ReLU, 80 -> 128 (k5) -> 128 (k3) -> 128 (k3) -> 64 (k3), 300 frames",
               speech_conv1d_stack(), issue=True),
    ShapeClass("conv1d_k3_c128", "conv1d", "Conv1d 128 -> 128, kernel 3, 300 frames", conv1d(128, 128, 3, 1, 300)),
    ShapeClass("conv1d_k5_c64_s2", "conv1d", "Conv1d 64 -> 64, kernel 5, stride 2, 400 frames", conv1d(64, 64, 5, 2, 400)),
    ShapeClass("matmul_vit_m197", "matmul", "MatMul + bias [1,197,768] x [768,768] (ViT-B/16)",
               matmul_const(197, 768, 768), issue=True),
    ShapeClass("matmul_vit_m192", "matmul", "MatMul + bias [1,192,768] x [768,768]", matmul_const(192, 768, 768), issue=True),
    ShapeClass("matmul_vit_m196", "matmul", "MatMul + bias [1,196,768] x [768,768]", matmul_const(196, 768, 768), issue=True),
    ShapeClass("matmul_vit_m200", "matmul", "MatMul + bias [1,200,768] x [768,768]", matmul_const(200, 768, 768), issue=True),
    ShapeClass("matmul_vit_mlp_m197", "matmul", "MatMul + bias [1,197,768] x [768,3072] (ViT-B MLP)",
               matmul_const(197, 768, 3072)),
    ShapeClass("aspp_conv3x3_d24", "conv", "3x3 conv, dilation 24, 256 -> 256 channels, 32x32 (DeepLab ASPP)",
               conv2d(256, 256, 3, 1, 32, dilation=24), issue=True),
    ShapeClass("resize_bilinear_seg", "resize", "Resize linear [1,21,64,64] -> 512x512, half_pixel (segmentation head)",
               resize([1, 21, 64, 64], [512, 512], "linear"), issue=True),
    # dense convs
    ShapeClass("conv3x3_s2_c3_32_224", "conv", "3x3 stride 2, 3 -> 32 channels, 224x224 (a stem)",
               conv2d(3, 32, 3, 2, 224)),
    ShapeClass("conv7x7_s2_c3_64_224", "conv", "7x7 stride 2, 3 -> 64 channels, 224x224 (ResNet stem)",
               conv2d(3, 64, 7, 2, 224)),
    ShapeClass("conv3x3_s1_c64_56", "conv", "3x3, 64 -> 64 channels, 56x56", conv2d(64, 64, 3, 1, 56)),
    ShapeClass("conv3x3_s2_c128_256_28", "conv", "3x3 stride 2, 128 -> 256 channels, 28x28", conv2d(128, 256, 3, 2, 28)),
    ShapeClass("conv1x1_s1_c24_72_56", "conv", "1x1, 24 -> 72 channels, 56x56 (odd channel counts)",
               conv2d(24, 72, 1, 1, 56)),
    ShapeClass("conv1x1_s1_c100_100_28", "conv", "1x1, 100 -> 100 channels, 28x28", conv2d(100, 100, 1, 1, 28)),
    ShapeClass("conv1x1_s2_c256_512_28", "conv", "1x1 stride 2, 256 -> 512 channels, 28x28 (a downsample)",
               conv2d(256, 512, 1, 2, 28, relu=False)),
    ShapeClass("conv3x3_s1_c72_28", "conv", "3x3, 72 -> 72 channels, 28x28", conv2d(72, 72, 3, 1, 28)),
    ShapeClass("conv3x3_s1_c3_24_128", "conv", "3x3, 3 -> 24 channels, 128x128", conv2d(3, 24, 3, 1, 128)),
    ShapeClass("conv5x5_s1_c24_56", "conv", "5x5, 24 -> 24 channels, 56x56", conv2d(24, 24, 5, 1, 56)),
    ShapeClass("conv5x5_s2_c72_100_28", "conv", "5x5 stride 2, 72 -> 100 channels, 28x28", conv2d(72, 100, 5, 2, 28)),
    ShapeClass("conv7x7_s1_c64_3_64", "conv", "7x7, 64 -> 3 channels, 64x64 (an image-output head)",
               conv2d(64, 3, 7, 1, 64, relu=False)),
    # grouped and depthwise
    ShapeClass("dw3x3_s1_c144_56", "dwconv", "depthwise 3x3, 144 channels, 56x56", conv2d(144, 144, 3, 1, 56, group=144)),
    ShapeClass("dw3x3_s2_c96_112", "dwconv", "depthwise 3x3 stride 2, 96 channels, 112x112",
               conv2d(96, 96, 3, 2, 112, group=96)),
    ShapeClass("dw3x3_s2_c116_28", "dwconv", "depthwise 3x3 stride 2, 116 channels, 28x28 (ShuffleNetV2)",
               conv2d(116, 116, 3, 2, 28, group=116, relu=False)),
    ShapeClass("dw3x3_s1_c58_28", "dwconv", "depthwise 3x3, 58 channels, 28x28 (ShuffleNetV2 0.5x)",
               conv2d(58, 58, 3, 1, 28, group=58, relu=False)),
    ShapeClass("dw3x3_s2_c58_56", "dwconv", "depthwise 3x3 stride 2, 58 channels (no vector divides them), 56x56",
               conv2d(58, 58, 3, 2, 56, group=58)),
    ShapeClass("dw5x5_s2_c240_28", "dwconv", "depthwise 5x5 stride 2, 240 channels, 28x28 (EfficientNet)",
               conv2d(240, 240, 5, 2, 28, group=240)),
    ShapeClass("group3x3_g3_c72_28", "dwconv", "3x3 conv in 3 groups of 24 channels, 28x28", conv2d(72, 72, 3, 1, 28, group=3)),
    ShapeClass("group3x3_g32_c256_s2_28", "dwconv", "3x3 stride 2 in 32 groups, 256 channels, 28x28 (ResNeXt)",
               conv2d(256, 256, 3, 2, 28, group=32)),
    # transposed
    ShapeClass("deconv4x4_s2_c64_3_64", "deconv", "ConvTranspose 4x4 stride 2, 64 -> 3 channels, 64x64 -> 128x128 (DCGAN output)",
               deconv(64, 3, 4, 2, 1, 64)),
    ShapeClass("deconv4x4_s2_c128_64_32", "deconv", "ConvTranspose 4x4 stride 2, 128 -> 64 channels, 32x32",
               deconv(128, 64, 4, 2, 1, 32)),
    ShapeClass("deconv2x2_s2_c64_32_64", "deconv", "ConvTranspose 2x2 stride 2, 64 -> 32 channels, 64x64 (UNet up)",
               deconv(64, 32, 2, 2, 0, 64)),
    # pooling
    ShapeClass("maxpool3x3_s2_c64_112", "pool", "MaxPool 3x3 stride 2 pad 1, 64 channels, 112x112", pool("MaxPool", 64, 112, 3, 2, 1)),
    ShapeClass("maxpool7x7_s1_c96_28", "pool", "MaxPool 7x7 stride 1 pad 3, 96 channels, 28x28", pool("MaxPool", 96, 28, 7, 1, 3)),
    ShapeClass("avgpool3x3_s1_c100_28", "pool", "AveragePool 3x3 stride 1 pad 1 (count_include_pad 0), 100 channels, 28x28",
               pool("AveragePool", 100, 28, 3, 1, 1)),
    ShapeClass("avgpool7x7_s1_c1024_7", "pool", "AveragePool 7x7, 1024 channels, 7x7 -> 1x1", pool("AveragePool", 1024, 7, 7, 1, 0)),
    ShapeClass("globalavg_c1280_7", "pool", "GlobalAveragePool, 1280 channels, 7x7", pool("GlobalAveragePool", 1280, 7)),
    ShapeClass("globalmax_c512_14", "pool", "GlobalMaxPool, 512 channels, 14x14", pool("GlobalMaxPool", 512, 14)),
    # GEMM with prime sizes
    ShapeClass("gemm_127x251x509", "matmul", "Gemm (transB) [127,251] x [251,509] + bias", gemm_prime(127, 251, 509)),
    ShapeClass("batch_matmul_7x127x251x509", "matmul", "batched MatMul [7,127,251] x [7,251,509], both inputs",
               batch_matmul(7, 127, 251, 509)),
    ShapeClass("matmul_m1_k1000_n1001", "matmul", "MatMul + bias [1,1000] x [1000,1001] (a GEMV)",
               matmul_const(1, 1000, 1001)),
    ShapeClass("attn_scores_12x197x64", "matmul", "batched MatMul [12,197,64] x [12,64,197], both inputs (ViT attention)",
               batch_matmul(12, 197, 64, 197)),
    # softmax and layer-norm
    ShapeClass("softmax_12x197x197", "norm", "Softmax over 197, [1,12,197,197] (ViT attention)", softmax([1, 12, 197, 197])),
    ShapeClass("softmax_1000", "norm", "Softmax over 1000, [1,1000]", softmax([1, 1000])),
    ShapeClass("softmax_64x4097", "norm", "Softmax over 4097, [64,4097]", softmax([64, 4097])),
    ShapeClass("layernorm_197x768", "norm", "LayerNormalization over 768, [1,197,768]", layer_norm([1, 197, 768])),
    ShapeClass("layernorm_256x1000", "norm", "LayerNormalization over 1000, [256,1000]", layer_norm([256, 1000])),
    ShapeClass("layernorm_16x4097", "norm", "LayerNormalization over 4097, [16,4097]", layer_norm([16, 4097])),
    # resize
    ShapeClass("resize_nearest_2x_c64_56", "resize", "Resize nearest x2, [1,64,56,56] -> 112x112 (a YOLO / FPN upsample)",
               resize([1, 64, 56, 56], [112, 112], "nearest", "asymmetric", "floor")),
    ShapeClass("resize_bilinear_ac_c128_32", "resize", "Resize linear align_corners [1,128,32,32] -> 64x64",
               resize([1, 128, 32, 32], [64, 64], "linear", "align_corners")),
    ShapeClass("resize_cubic_c3_128", "resize", "Resize cubic [1,3,128,128] -> 256x256", resize([1, 3, 128, 128], [256, 256], "cubic")),
    # data movement
    ShapeClass("shuffle_c116_28", "movement", "channel shuffle (reshape, transpose, reshape), 116 channels in 2 groups, 28x28",
               channel_shuffle(116, 28)),
    ShapeClass("shuffle_c232_14", "movement", "channel shuffle, 232 channels in 2 groups, 14x14", channel_shuffle(232, 14)),
    ShapeClass("split_concat_c232_14", "movement", "Split 232 channels in halves, Concat them swapped, 14x14",
               split_concat(232, 14)),
    ShapeClass("pad_const_c64_56", "movement", "Pad 1 (constant 0) around [1,64,56,56]", pad([1, 64, 56, 56], [0, 0, 1, 1, 0, 0, 1, 1], "constant")),
    ShapeClass("pad_reflect_c3_224", "movement", "Pad 3 (reflect) around [1,3,224,224]", pad([1, 3, 224, 224], [0, 0, 3, 3, 0, 0, 3, 3], "reflect")),
    ShapeClass("transpose_heads_197x12x64", "movement", "Transpose [1,197,12,64] -> [1,12,197,64] (attention heads)",
               transpose([1, 197, 12, 64], [0, 2, 1, 3])),
    ShapeClass("transpose_nchw_nhwc_c64_112", "movement", "Transpose [1,64,112,112] -> [1,112,112,64] (NCHW to NHWC)",
               transpose([1, 64, 112, 112], [0, 2, 3, 1])),
]
BY_NAME = {c.name: c for c in CLASSES}


def select(spec):
    """The classes a --classes value names: comma-separated names, groups or shell patterns;
    "" or "all" is every class, "issue" the ones from issue 15's table. Raises ValueError
    naming a term that matches nothing."""
    if not spec or spec == "all":
        return list(CLASSES)
    chosen = []
    for term in [t.strip() for t in spec.split(",") if t.strip()]:
        if term == "issue":
            hits = [c for c in CLASSES if c.issue]
        elif term in GROUPS:
            hits = [c for c in CLASSES if c.group == term]
        else:
            hits = [c for c in CLASSES if fnmatch.fnmatchcase(c.name, term)]
        if not hits:
            raise ValueError("no shape class or group matches '%s' (groups: %s, issue; classes: %s)" %
                             (term, ", ".join(GROUPS), ", ".join(c.name for c in CLASSES)))
        chosen += [c for c in hits if c not in chosen]
    return chosen


def generate(out_dir, classes=None, regenerate=False):
    """Writes the models of `classes` (ShapeClass list; default all) into out_dir, skipping
    those present unless regenerate; returns {name: path}."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for c in classes or CLASSES:
        paths[c.name] = os.path.join(out_dir, c.name + ".onnx")
        if regenerate or not os.path.exists(paths[c.name]):
            onnx.save(c.build(c.name), paths[c.name])
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--classes", default="")
    ap.add_argument("--list", action="store_true", help="list the classes and exit")
    args = ap.parse_args()
    try:
        classes = select(args.classes)
    except ValueError as e:
        ap.error(str(e))
    if args.list:
        for c in classes:
            print("%-28s %-9s %s" % (c.name, c.group, c.what))
        return 0
    if not args.out_dir:
        ap.error("OUT_DIR is required")
    for name, path in generate(args.out_dir, classes, regenerate=True).items():
        print("%s: %s (%.1f KB)" % (name, path, os.path.getsize(path) / 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
