"""gen_broad_models.py — the broad model set of issue 15: sixteen architectures, batch 1.

Usage: .venv/bin/python models/gen_broad_models.py OUT_DIR [--models NAME,...] [--list]

Written with onnx.helper and NumPy (opset 17, seeded random weights generated at bench or
test time, never committed). MobileNetV2 and the BERT-like encoder come from
gen_bench_models.py; the others are built here:

    resnet18        ResNet-18, 224x224: 7x7 stride-2 stem, max pool, 8 basic blocks (3x3
                    convs, BN, ReLU, 1x1 stride-2 projections), global pool, Gemm 512 -> 1000
    mobilenetv2     MobileNetV2 1.0, 224x224 (gen_bench_models.py)
    squeezenet11    SqueezeNet 1.1, 224x224: fire modules (1x1 squeeze, 1x1 + 3x3 expand,
                    channel concat), ceil-mode max pools, conv classifier, global pool
    efficientnet_b0 EfficientNet-B0, 224x224: 16 MBConv blocks (1x1 expand, 3x3 / 5x5
                    depthwise at stride 1 and 2, squeeze-excite, 1x1 project), swish as
                    x * Sigmoid(x), BN after every conv
    unet            a small UNet, 3 x 128 x 128 -> 2 classes: three levels of double 3x3
                    conv + BN + ReLU, max pool down; up with ConvTranspose 2x2 stride 2
                    (two levels) and bilinear Resize + 1x1 conv (one level); skip concats
    bert_encoder    4 post-LN layers, d=256, seq 128 (gen_bench_models.py)
    dcgan           DCGAN generator: z [1,100,1,1], ConvTranspose 4x4 (stride 1, then
                    stride 2 four times) 512 -> 256 -> 128 -> 64 -> 3 channels, BN + ReLU,
                    Tanh; output [1,3,64,64]
    shufflenetv2    ShuffleNetV2 1.0x, 224x224: channel split, branches of 1x1 + 3x3
                    depthwise (stride 1 and 2) + 1x1, concat, channel shuffle as
                    Reshape-Transpose-Reshape; stages of 116 / 232 / 464 channels
    dqn             the DQN Atari net: 4 x 84 x 84 frames, 8x8 stride 4 (32), 4x4 stride 2
                    (64), 3x3 (64) convs, Gemm 3136 -> 512 -> 18
    vit             a ViT: 16x16 patches of 224x224 (Conv stride 16) -> 196 tokens + class
                    token = 197, learned position embedding, 4 pre-LN layers, d=384,
                    6 heads, MLP 1536 with Erf GELU, class-token head -> 1000
    gpt             a GPT-style decoder: int64 token ids [1,128] into a 5000 x 256 table,
                    position embedding, 4 pre-LN layers, 4 heads, causal mask (Where on a
                    constant lower-triangular mask), tanh-GELU MLP 1024, LM head tied to
                    the token table -> [1,128,5000]
    lstm_lm         word-level LSTM language model: int64 ids [35,1] (35 steps, batch 1)
                    into a 2000 x 200 table, two ONNX LSTM layers of 200, projection to the
                    2000-word vocabulary -> [35,1,2000]
    audio_kws       an audio front end + keyword spotter: 16000 samples, STFT as one
                    Conv1d 1 -> 514 (Hann-windowed cos and sin, kernel 512, stride 160),
                    Split, power, Log, then Conv1d 257 -> 128 (k5), 3 x 128 (k3), 64 (k3)
                    with BN + ReLU, global pool, Gemm -> 12 keywords
    yolo            a YOLO-style detector, 3 x 256 x 256: SiLU convs with BN, CSP (C3)
                    blocks, SPPF (three chained 5x5 max pools), an FPN step (nearest
                    Resize x2 + concat), two detection heads of 3 anchors x 85 through
                    Reshape / Transpose / Sigmoid, box decoding (Slice, grid offsets,
                    anchors), Concat -> [1,960,85]; no NMS
    deeplab         a segmentation net, 3 x 256 x 256 -> 21 classes: a stride-8 backbone,
                    ASPP (1x1, 3x3 dilation 6, 12, 24, image pooling with a bilinear
                    Resize back), 1x1 fuse, classifier, bilinear Resize x8 -> [1,21,256,256]
    crnn            OCR: a 1 x 32 x 128 text line, a VGG-style CNN (3x3 convs, 2x2 and
                    2x1 max pools) to a [1,256,1,31] feature row, two bidirectional LSTM
                    layers of 128, a 37-class projection, LogSoftmax -> [31,1,37]

Scales: conv weights are He-initialised (N(0, 2 / fan_in)), N(0, 1 / fan_in) where no
ReLU-like activation follows; linear layers N(0, 1 / fan_in); LSTM weights U(+-1/sqrt(h))
as PyTorch initialises them. Every BatchNormalization gets the statistics of the
activations it really sees, as gen_bench_models.py does for MobileNetV2: the model is run
in ONNX Runtime on two seeded inputs drawn like kiln bench's (uniform in [-1, 1); token
ids uniform over the vocabulary), with the BN parameters as graph inputs, and each BN's
running mean / variance set to the measured per-channel ones, perturbed (mean + 0.1 std
noise, variance x U(0.8, 1.25)), gamma U(0.8, 1.2) (U(0.3, 0.6) on the last BN of a
residual branch, so sums stay of order one), beta U(-0.1, 0.1); level by level, each BN
once every BN upstream of it is final (one ONNX Runtime pass per level of depth). So activations are of order
one all the way down, like a trained network's.

INPUT_RANGES gives, per model, the valid range of each integer input (token ids), for
tests that make their own inputs.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_bench_models  # noqa: E402

OPSET = 17
F = TensorProto.FLOAT
I64 = TensorProto.INT64
RELU_LIKE = ("relu", "relu6", "silu", "leaky")
GPT_VOCAB, LSTM_VOCAB = 5000, 2000
# integer inputs: {model: {input: (lo, hi)}}, values in [lo, hi)
INPUT_RANGES = {"gpt": {"tokens": (0, GPT_VOCAB)}, "lstm_lm": {"tokens": (0, LSTM_VOCAB)}}


class Net:
    """Nodes and seeded initializers of one model, BatchNormalizations calibrated at the end."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count, self.bns = [], [], 0, []

    def fresh(self, stem):
        self.count += 1
        return "%s_%d" % (stem, self.count)

    def const(self, value, stem="c", dtype=np.float32):
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def i64(self, value, stem="shape"):
        return self.const(value, stem, np.int64)

    def op(self, op_type, inputs, output=None, n_out=1, **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        if output:
            outs[0] = output
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.fresh(op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    # -- layers

    def act(self, x, kind, output=None):
        if kind is None:
            return self.op("Identity", [x], output) if output else x
        if kind == "relu":
            return self.op("Relu", [x], output)
        if kind == "relu6":
            return self.op("Clip", [x, self.const(0.0, "zero"), self.const(6.0, "six")], output)
        if kind == "silu":
            return self.op("Mul", [x, self.op("Sigmoid", [x])], output)
        if kind == "leaky":
            return self.op("LeakyRelu", [x], output, alpha=0.1)
        if kind in ("sigmoid", "tanh"):
            return self.op(kind.capitalize(), [x], output)
        raise ValueError(kind)

    def bn(self, x, c, gamma=(0.8, 1.2)):
        names = [self.fresh("bn_" + p) for p in ("gamma", "beta", "mean", "var")]
        rec = {"x": x, "c": c, "names": names, "gamma": self.rng.uniform(*gamma, c),
               "beta": self.rng.uniform(-0.1, 0.1, c), "noise": self.rng.standard_normal(c),
               "vfac": self.rng.uniform(0.8, 1.25, c)}
        self.bns.append(rec)
        rec["y"] = self.op("BatchNormalization", [x] + names, epsilon=1e-5)
        return rec["y"]

    def conv(self, x, cin, cout, k, stride=1, pad=None, group=1, dilation=1, bias=None, bn=True, act="relu",
             dims=2, gamma=(0.8, 1.2), output=None):
        ks = list(k) if isinstance(k, (list, tuple)) else [k] * dims
        st = list(stride) if isinstance(stride, (list, tuple)) else [stride] * dims
        if pad is None:
            pads = [dilation * (kk - 1) // 2 for kk in ks] * 2
        else:
            pads = list(pad) if isinstance(pad, (list, tuple)) else [pad] * (2 * dims)
        fan_in = cin // group * int(np.prod(ks))
        gain = 2.0 if act in RELU_LIKE else 1.0
        w = self.const(self.rng.standard_normal([cout, cin // group] + ks) * np.sqrt(gain / fan_in), "w")
        ins = [x, w]
        if bias if bias is not None else not bn:
            ins.append(self.const(self.rng.uniform(-0.05, 0.05, cout), "b"))
        y = self.op("Conv", ins, kernel_shape=ks, strides=st, pads=pads, group=group, dilations=[dilation] * dims)
        if bn:
            y = self.bn(y, cout, gamma)
        return self.act(y, act, output)

    def deconv(self, x, cin, cout, k, stride, pad, bn=True, act="relu", output=None):
        taps = max(1, (k // stride) ** 2)
        gain = 2.0 if act in RELU_LIKE else 1.0
        w = self.const(self.rng.standard_normal((cin, cout, k, k)) * np.sqrt(gain / (cin * taps)), "wt")
        ins = [x, w] + ([] if bn else [self.const(self.rng.uniform(-0.05, 0.05, cout), "b")])
        y = self.op("ConvTranspose", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        if bn:
            y = self.bn(y, cout)
        return self.act(y, act, output)

    def linear(self, x, din, dout, bias=True, output=None, gain=1.0):
        """MatMul (+ Add): nn.Linear as PyTorch exports it on 3-D inputs."""
        y = self.op("MatMul", [x, self.const(self.rng.standard_normal((din, dout)) * np.sqrt(gain / din), "w")],
                    None if bias else output)
        if bias:
            y = self.op("Add", [y, self.const(self.rng.uniform(-0.05, 0.05, dout), "b")], output)
        return y

    def gemm(self, x, din, dout, output=None, gain=1.0):
        w = self.const(self.rng.standard_normal((dout, din)) * np.sqrt(gain / din), "fc_w")
        return self.op("Gemm", [x, w, self.const(self.rng.uniform(-0.05, 0.05, dout), "fc_b")], output, transB=1)

    def layer_norm(self, x, d, output=None):
        return self.op("LayerNormalization", [x, self.const(self.rng.uniform(0.9, 1.1, d), "ln_g"),
                                              self.const(self.rng.uniform(-0.1, 0.1, d), "ln_b")], output,
                       axis=-1, epsilon=1e-5)

    def gelu_erf(self, x):
        return self.op("Mul", [self.op("Mul", [x, self.const(0.5, "half")]),
                               self.op("Add", [self.op("Erf", [self.op("Div", [x, self.const(np.sqrt(2.0), "sqrt2")])]),
                                               self.const(1.0, "one")])])

    def gelu_tanh(self, x):
        """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as GPT-2 exports it."""
        cube = self.op("Pow", [x, self.const(3.0, "three")])
        inner = self.op("Mul", [self.op("Add", [x, self.op("Mul", [cube, self.const(0.044715, "c")])]),
                                self.const(np.sqrt(2.0 / np.pi), "k")])
        return self.op("Mul", [self.op("Mul", [x, self.const(0.5, "half")]),
                               self.op("Add", [self.op("Tanh", [inner]), self.const(1.0, "one")])])

    def attention(self, x, d, heads, seq, mask=None):
        """Multi-head self-attention on x [1, seq, d]: Q/K/V projections, heads split with
        Reshape + Transpose, scaled scores, optional Where mask, Softmax, merge, output projection."""
        dh = d // heads
        split = self.i64([1, seq, heads, dh])
        q = self.op("Transpose", [self.op("Reshape", [self.linear(x, d, d), split])], perm=[0, 2, 1, 3])
        k = self.op("Transpose", [self.op("Reshape", [self.linear(x, d, d), split])], perm=[0, 2, 3, 1])
        v = self.op("Transpose", [self.op("Reshape", [self.linear(x, d, d), split])], perm=[0, 2, 1, 3])
        scores = self.op("Mul", [self.op("MatMul", [q, k]), self.const(1.0 / np.sqrt(dh), "scale")])
        if mask is not None:
            scores = self.op("Where", [mask, scores, self.const(-1e9, "neg_inf")])
        attn = self.op("Softmax", [scores], axis=-1)
        ctx = self.op("Reshape", [self.op("Transpose", [self.op("MatMul", [attn, v])], perm=[0, 2, 1, 3]),
                                  self.i64([1, seq, d])])
        return self.linear(ctx, d, d)

    def lstm(self, x, din, hidden, bidirectional=False):
        """One ONNX LSTM over x [seq, batch, din] -> Y [seq, dirs, batch, hidden]."""
        dirs = 2 if bidirectional else 1
        s = 1.0 / np.sqrt(hidden)
        w = self.const(self.rng.uniform(-s, s, (dirs, 4 * hidden, din)), "lstm_W")
        r = self.const(self.rng.uniform(-s, s, (dirs, 4 * hidden, hidden)), "lstm_R")
        b = self.const(self.rng.uniform(-s, s, (dirs, 8 * hidden)), "lstm_B")
        return self.op("LSTM", [x, w, r, b], hidden_size=hidden,
                       direction="bidirectional" if bidirectional else "forward")

    # -- the model

    def model(self, name, inputs, outputs):
        """inputs: [(name, elem type, shape)]; outputs: [names]. Calibrates the BNs, checks the model."""
        in_infos = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
        params = {}
        if self.bns:
            params = self.calibrate(name, in_infos, inputs, outputs)
        for rec in self.bns:
            for n in rec["names"]:
                self.inits.append(numpy_helper.from_array(params[n].astype(np.float32), n))
        graph = helper.make_graph(self.nodes, name, in_infos, [helper.make_tensor_value_info(o, F, None) for o in outputs],
                                  initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="gen_broad_models.py")
        m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        inferred = {v.name: v for v in m.graph.value_info}
        for o in m.graph.output:
            if o.name in inferred:
                o.type.CopyFrom(inferred[o.name].type)
        del m.graph.value_info[:]
        onnx.checker.check_model(m, full_check=True)
        return m

    def calibrate(self, name, in_infos, inputs, outputs):
        """BN statistics from real activations (ONNX Runtime), iterated to a fixed point."""
        import onnxruntime as ort
        bn_inputs = [helper.make_tensor_value_info(n, F, [rec["c"]]) for rec in self.bns for n in rec["names"]]
        watch = []
        for rec in self.bns:
            if rec["x"] not in watch and rec["x"] not in outputs:
                watch.append(rec["x"])
        graph = helper.make_graph(self.nodes, "calibration", in_infos + bn_inputs,
                                  [helper.make_tensor_value_info(o, F, None) for o in outputs + watch],
                                  initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1  # deterministic reductions: the fixed point is exact
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.log_severity_level = 3
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        feeds = [calibration_feeds(name, inputs, self.rng) for _ in range(2)]
        params = {}
        for rec in self.bns:
            g, b, mu, var = rec["names"]
            params.update({g: rec["gamma"], b: rec["beta"], mu: np.zeros(rec["c"]), var: np.ones(rec["c"])})
        names = outputs + watch
        # A BN is calibrated once every BN upstream of it is: then what it sees is final.
        # Updating all at once diverges (a downstream BN fitted to an upstream scale that
        # is about to change amplifies it), so go by depth: one pass per level.
        producer = {o: nd for nd in self.nodes for o in nd.output}
        bn_of = {rec["y"]: i for i, rec in enumerate(self.bns)}
        upstream = []
        for rec in self.bns:
            seen, stack, ups = set(), [rec["x"]], set()
            while stack:
                t = stack.pop()
                if t in seen or t not in producer:
                    continue
                seen.add(t)
                if t in bn_of:
                    ups.add(bn_of[t])
                    continue
                stack.extend(producer[t].input)
            upstream.append(ups)
        done = set()
        while len(done) < len(self.bns):
            ready = [i for i in range(len(self.bns)) if i not in done and upstream[i] <= done]
            assert ready, "BN dependencies form a cycle"
            acts = [dict(zip(names, sess.run(None, dict(f, **{k: v.astype(np.float32) for k, v in params.items()}))))
                    for f in feeds]
            for i in ready:
                rec = self.bns[i]
                x = np.concatenate([np.moveaxis(a[rec["x"]], 1, 0).reshape(rec["c"], -1) for a in acts], axis=1)
                x = x.astype(np.float64)
                assert np.all(np.isfinite(x)), "non-finite activations calibrating %s" % rec["y"]
                mean, std = x.mean(axis=1), x.std(axis=1) + 1e-3
                _, _, mu, var = rec["names"]
                params[mu] = mean + 0.1 * std * rec["noise"]
                params[var] = std ** 2 * rec["vfac"]
            done.update(ready)
        return params


def calibration_feeds(model, inputs, rng):
    """Inputs drawn like kiln bench's: floats uniform in [-1, 1), integers over their valid range."""
    feeds = {}
    for n, t, shape in inputs:
        if t == F:
            feeds[n] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            lo, hi = INPUT_RANGES.get(model, {}).get(n, (0, 10))
            feeds[n] = rng.integers(lo, hi, shape).astype(np.int64)
    return feeds


# ---------------------------------------------------------------- CNNs

def resnet18(seed=101):
    n = Net(seed)
    x = n.conv("input", 3, 64, 7, 2)
    x = n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, c in enumerate([64, 128, 256, 512]):
        for i in range(2):
            s = 2 if stage > 0 and i == 0 else 1
            h = n.conv(x, cin, c, 3, s)
            h = n.conv(h, c, c, 3, 1, act=None, gamma=(0.3, 0.6))
            sc = n.conv(x, cin, c, 1, s, act=None) if (s != 1 or cin != c) else x
            x = n.op("Relu", [n.op("Add", [h, sc])])
            cin = c
    flat = n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1)
    n.gemm(flat, 512, 1000, "logits")
    return n.model("resnet18", [("input", F, [1, 3, 224, 224])], ["logits"])


def squeezenet11(seed=102):
    n = Net(seed)

    def fire(x, cin, squeeze, expand):
        s = n.conv(x, cin, squeeze, 1, bn=False)
        return n.op("Concat", [n.conv(s, squeeze, expand, 1, bn=False), n.conv(s, squeeze, expand, 3, bn=False)], axis=1)

    def pool(x):
        return n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    x = pool(n.conv("input", 3, 64, 3, 2, pad=0, bn=False))
    x = pool(fire(fire(x, 64, 16, 64), 128, 16, 64))
    x = pool(fire(fire(x, 128, 32, 128), 256, 32, 128))
    x = fire(fire(x, 256, 48, 192), 384, 48, 192)
    x = fire(fire(x, 384, 64, 256), 512, 64, 256)
    x = n.conv(x, 512, 1000, 1, bn=False)
    n.op("Flatten", [n.op("GlobalAveragePool", [x])], "logits", axis=1)
    return n.model("squeezenet11", [("input", F, [1, 3, 224, 224])], ["logits"])


# (expansion, kernel, stride, output channels, repeats): EfficientNet-B0's table
EFFICIENTNET_B0 = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                   (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]


def efficientnet_b0(seed=103):
    n = Net(seed)
    x = n.conv("input", 3, 32, 3, 2, act="silu")
    cin = 32
    for t, k, s, c, reps in EFFICIENTNET_B0:
        for i in range(reps):
            stride = s if i == 0 else 1
            hidden = cin * t
            h = n.conv(x, cin, hidden, 1, act="silu") if t != 1 else x
            h = n.conv(h, hidden, hidden, k, stride, group=hidden, act="silu")
            # squeeze-excite: global pool, 1x1 reduce (cin / 4) + swish, 1x1 expand + sigmoid, scale
            se = max(1, cin // 4)
            g = n.op("GlobalAveragePool", [h])
            g = n.conv(g, hidden, se, 1, bn=False, act="silu")
            g = n.conv(g, se, hidden, 1, bn=False, act="sigmoid")
            h = n.op("Mul", [h, g])
            residual = stride == 1 and cin == c
            h = n.conv(h, hidden, c, 1, act=None, gamma=(0.3, 0.6) if residual else (0.8, 1.2))
            x = n.op("Add", [x, h]) if residual else h
            cin = c
    x = n.conv(x, cin, 1280, 1, act="silu")
    flat = n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1)
    n.gemm(flat, 1280, 1000, "logits")
    return n.model("efficientnet_b0", [("input", F, [1, 3, 224, 224])], ["logits"])


def unet(seed=104):
    n = Net(seed)

    def double(x, cin, c):
        return n.conv(n.conv(x, cin, c, 3), c, c, 3)

    def down(x):
        return n.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])

    e1 = double("image", 3, 32)                     # 128
    e2 = double(down(e1), 32, 64)                   # 64
    e3 = double(down(e2), 64, 128)                  # 32
    b = double(down(e3), 128, 256)                  # 16
    u3 = n.deconv(b, 256, 128, 2, 2, 0)             # 32
    d3 = double(n.op("Concat", [u3, e3], axis=1), 256, 128)
    up = n.op("Resize", [d3, "", "", n.i64([1, 128, 64, 64])], mode="linear",
              coordinate_transformation_mode="half_pixel")
    u2 = n.conv(up, 128, 64, 1)
    d2 = double(n.op("Concat", [u2, e2], axis=1), 128, 64)
    u1 = n.deconv(d2, 64, 32, 2, 2, 0)              # 128
    d1 = double(n.op("Concat", [u1, e1], axis=1), 64, 32)
    n.conv(d1, 32, 2, 1, bn=False, act=None, output="mask")
    return n.model("unet", [("image", F, [1, 3, 128, 128])], ["mask"])


def dcgan(seed=105):
    n = Net(seed)
    x = n.deconv("z", 100, 512, 4, 1, 0)            # 4x4
    for cin, cout in [(512, 256), (256, 128), (128, 64)]:
        x = n.deconv(x, cin, cout, 4, 2, 1)         # 8, 16, 32
    n.deconv(x, 64, 3, 4, 2, 1, bn=False, act="tanh", output="image")   # 64x64
    return n.model("dcgan", [("z", F, [1, 100, 1, 1])], ["image"])


def shufflenetv2(seed=106):
    n = Net(seed)

    def shuffle(x, c, hw):
        r = n.op("Reshape", [x, n.i64([1, 2, c // 2, hw, hw])])
        return n.op("Reshape", [n.op("Transpose", [r], perm=[0, 2, 1, 3, 4]), n.i64([1, c, hw, hw])])

    x = n.conv("input", 3, 24, 3, 2)                                        # 112
    x = n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])   # 56
    cin, hw = 24, 56
    for c, reps in [(116, 4), (232, 8), (464, 4)]:
        half = c // 2
        for i in range(reps):
            if i == 0:
                hw //= 2
                b1 = n.conv(x, cin, cin, 3, 2, group=cin, act=None)
                b1 = n.conv(b1, cin, half, 1)
                b2 = n.conv(x, cin, half, 1)
                b2 = n.conv(b2, half, half, 3, 2, group=half, act=None)
                b2 = n.conv(b2, half, half, 1)
            else:
                b1, rest = n.op("Split", [x, n.i64([half, half], "split")], n_out=2, axis=1)
                b2 = n.conv(rest, half, half, 1)
                b2 = n.conv(b2, half, half, 3, 1, group=half, act=None)
                b2 = n.conv(b2, half, half, 1)
            x = shuffle(n.op("Concat", [b1, b2], axis=1), c, hw)
            cin = c
    x = n.conv(x, cin, 1024, 1)
    flat = n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1)
    n.gemm(flat, 1024, 1000, "logits")
    return n.model("shufflenetv2", [("input", F, [1, 3, 224, 224])], ["logits"])


def dqn(seed=107):
    n = Net(seed)
    x = n.conv("frames", 4, 32, 8, 4, pad=0, bn=False)        # 20x20
    x = n.conv(x, 32, 64, 4, 2, pad=0, bn=False)              # 9x9
    x = n.conv(x, 64, 64, 3, 1, pad=0, bn=False)              # 7x7
    h = n.op("Relu", [n.gemm(n.op("Flatten", [x], axis=1), 3136, 512, gain=2.0)])
    n.gemm(h, 512, 18, "q_values")
    return n.model("dqn", [("frames", F, [1, 4, 84, 84])], ["q_values"])


# ---------------------------------------------------------------- transformers

def vit(seed=108, d=384, heads=6, layers=4, mlp=1536, patch=16, image=224):
    n = Net(seed)
    grid = image // patch
    tokens = grid * grid + 1                                                   # 197
    p = n.conv("image", 3, d, patch, patch, pad=0, bn=False, bias=True, act=None)  # 1, d, 14, 14
    p = n.op("Transpose", [n.op("Reshape", [p, n.i64([1, d, grid * grid])])], perm=[0, 2, 1])   # 1, 196, d
    cls = n.const(n.rng.standard_normal((1, 1, d)) * 0.02, "cls_token")
    x = n.op("Add", [n.op("Concat", [cls, p], axis=1), n.const(n.rng.standard_normal((1, tokens, d)) * 0.02, "pos")])
    for _ in range(layers):
        x = n.op("Add", [x, n.attention(n.layer_norm(x, d), d, heads, tokens)])
        h = n.linear(n.gelu_erf(n.linear(n.layer_norm(x, d), d, mlp, gain=2.0)), mlp, d)
        x = n.op("Add", [x, h])
    x = n.layer_norm(x, d)
    first = n.op("Gather", [x, n.i64([0], "cls_index")], axis=1)               # 1, 1, d
    n.op("Reshape", [n.linear(first, d, 1000), n.i64([1, 1000])], "logits")
    return n.model("vit", [("image", F, [1, 3, image, image])], ["logits"])


def gpt(seed=109, vocab=GPT_VOCAB, d=256, heads=4, layers=4, seq=128):
    n = Net(seed)
    table = n.rng.standard_normal((vocab, d)) * 0.5
    wte = n.const(table, "wte")
    x = n.op("Gather", [wte, "tokens"], axis=0)                                # 1, seq, d
    x = n.op("Add", [x, n.const(n.rng.standard_normal((1, seq, d)) * 0.1, "wpe")])
    mask = n.const(np.tril(np.ones((seq, seq), dtype=bool)).reshape(1, 1, seq, seq), "causal", np.bool_)
    for _ in range(layers):
        x = n.op("Add", [x, n.attention(n.layer_norm(x, d), d, heads, seq, mask)])
        h = n.linear(n.gelu_tanh(n.linear(n.layer_norm(x, d), d, 4 * d, gain=2.0)), 4 * d, d)
        x = n.op("Add", [x, h])
    x = n.layer_norm(x, d)
    # the LM head tied to the token table, scaled so the logits are of order one
    head = n.const(table.T / np.sqrt(d) / 0.5, "wte_t")
    n.op("MatMul", [x, head], "logits")
    return n.model("gpt", [("tokens", I64, [1, seq])], ["logits"])


# ---------------------------------------------------------------- recurrent and audio

def lstm_lm(seed=110, vocab=LSTM_VOCAB, emb=200, hidden=200, steps=35):
    n = Net(seed)
    table = n.const(n.rng.uniform(-0.1, 0.1, (vocab, emb)) * 10, "encoder")    # U(-1, 1): inputs of order one
    x = n.op("Gather", [table, "tokens"], axis=0)                              # steps, 1, emb
    axis1 = n.i64([1], "axis1")
    y = n.op("Squeeze", [n.lstm(x, emb, hidden), axis1])                      # steps, 1, hidden
    y = n.op("Squeeze", [n.lstm(y, hidden, hidden), axis1])
    # the untrained LSTM's hidden state is ~0.05: a projection scaled so the logits are of order one
    n.linear(y, hidden, vocab, output="logits", gain=400.0)
    return n.model("lstm_lm", [("tokens", I64, [steps, 1])], ["logits"])


def audio_kws(seed=111, samples=16000, n_fft=512, hop=160, keywords=12):
    n = Net(seed)
    bins = n_fft // 2 + 1
    t = np.arange(n_fft)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * t / n_fft)
    phase = 2 * np.pi * np.outer(np.arange(bins), t) / n_fft
    basis = np.concatenate([np.cos(phase), -np.sin(phase)]) * window / np.sqrt(n_fft)
    spec = n.op("Conv", ["audio", n.const(basis.reshape(2 * bins, 1, n_fft), "stft_basis")],
                kernel_shape=[n_fft], strides=[hop], pads=[0, 0])                 # 1, 514, 97
    re, im = n.op("Split", [spec, n.i64([bins, bins], "split")], n_out=2, axis=1)
    power = n.op("Add", [n.op("Mul", [re, re]), n.op("Mul", [im, im])])
    x = n.op("Log", [n.op("Add", [power, n.const(1e-6, "eps")])])
    x = n.conv(x, bins, 128, 5, dims=1)
    for _ in range(3):
        x = n.conv(x, 128, 128, 3, dims=1)
    x = n.conv(x, 128, 64, 3, dims=1)
    flat = n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1)
    n.gemm(flat, 64, keywords, "scores")
    return n.model("audio_kws", [("audio", F, [1, 1, samples])], ["scores"])


def crnn(seed=112, classes=37):
    n = Net(seed)

    def pool(x, kh, kw):
        return n.op("MaxPool", [x], kernel_shape=[kh, kw], strides=[kh, kw])

    x = pool(n.conv("line", 1, 64, 3, bn=False), 2, 2)                  # 16 x 64
    x = pool(n.conv(x, 64, 128, 3, bn=False), 2, 2)                     # 8 x 32
    x = n.conv(n.conv(x, 128, 256, 3), 256, 256, 3, bn=False)
    x = pool(x, 2, 1)                                                   # 4 x 32
    x = n.conv(n.conv(x, 256, 256, 3), 256, 256, 3, bn=False)
    x = pool(x, 2, 1)                                                   # 2 x 32
    x = n.conv(x, 256, 256, 2, pad=0)                                   # 1 x 31
    seq = n.op("Transpose", [n.op("Squeeze", [x, n.i64([2], "axis2")])], perm=[2, 0, 1])   # 31, 1, 256
    steps = 31
    for _ in range(2):
        y = n.lstm(seq, 256, 128, bidirectional=True)                   # 31, 2, 1, 128
        seq = n.op("Reshape", [n.op("Transpose", [y], perm=[0, 2, 1, 3]), n.i64([steps, 1, 256])])
    # scaled like lstm_lm's projection: the untrained LSTMs' states are small
    n.op("LogSoftmax", [n.linear(seq, 256, classes, gain=100.0)], "log_probs", axis=-1)
    return n.model("crnn", [("line", F, [1, 1, 32, 128])], ["log_probs"])


# ---------------------------------------------------------------- detection and segmentation

def yolo(seed=113, image=256, classes=80):
    n = Net(seed)
    no = classes + 5

    def conv(x, cin, cout, k=1, s=1, **kw):
        return n.conv(x, cin, cout, k, s, act="silu", **kw)

    def c3(x, cin, cout, reps, shortcut=True):
        h = cout // 2
        a = conv(x, cin, h)
        for _ in range(reps):
            b = conv(conv(a, h, h), h, h, 3, gamma=(0.3, 0.6) if shortcut else (0.8, 1.2))
            a = n.op("Add", [a, b]) if shortcut else b
        return conv(n.op("Concat", [a, conv(x, cin, h)], axis=1), 2 * h, cout)

    x = conv("images", 3, 16, 3, 2)                                     # 128
    x = c3(conv(x, 16, 32, 3, 2), 32, 32, 1)                            # 64
    p3 = c3(conv(x, 32, 64, 3, 2), 64, 64, 2)                           # 32
    p4 = c3(conv(p3, 64, 128, 3, 2), 128, 128, 2)                       # 16
    p5 = c3(conv(p4, 128, 256, 3, 2), 256, 256, 1)                      # 8
    # SPPF: three chained 5x5 max pools, concat
    a = conv(p5, 256, 128)
    m1 = n.op("MaxPool", [a], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2])
    m2 = n.op("MaxPool", [m1], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2])
    m3 = n.op("MaxPool", [m2], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2])
    p5 = conv(n.op("Concat", [a, m1, m2, m3], axis=1), 512, 256)
    # FPN step: 1x1, nearest x2, concat with p4
    lat = conv(p5, 256, 128)
    up = n.op("Resize", [lat, "", n.const([1, 1, 2, 2], "scales")], mode="nearest",
              coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    f4 = c3(n.op("Concat", [up, p4], axis=1), 256, 128, 1, shortcut=False)     # 16x16, 128
    anchors = {16: [(10, 13), (16, 30), (33, 23)], 32: [(30, 61), (62, 45), (59, 119)]}
    outs = []
    for feat, c, hw in [(f4, 128, image // 16), (p5, 256, image // 32)]:
        stride = image // hw
        y = n.conv(feat, c, 3 * no, 1, bn=False, bias=True, act=None)
        y = n.op("Sigmoid", [n.op("Transpose", [n.op("Reshape", [y, n.i64([1, 3, no, hw, hw])])],
                                  perm=[0, 1, 3, 4, 2])])                # 1, 3, hw, hw, no
        xy, wh, rest = n.op("Split", [y, n.i64([2, 2, no - 4], "split")], n_out=3, axis=4)
        gy, gx = np.meshgrid(np.arange(hw), np.arange(hw), indexing="ij")
        grid = np.stack([gx, gy], -1).reshape(1, 1, hw, hw, 2) - 0.5
        xy = n.op("Mul", [n.op("Add", [n.op("Mul", [xy, n.const(2.0, "two")]), n.const(grid, "grid")]),
                          n.const(float(stride), "stride")])
        anchor = np.array(anchors[stride], dtype=np.float32).reshape(1, 3, 1, 1, 2)
        wh = n.op("Mul", [n.op("Pow", [n.op("Mul", [wh, n.const(2.0, "two")]), n.const(2.0, "two")]),
                          n.const(anchor, "anchor")])
        det = n.op("Concat", [xy, wh, rest], axis=4)
        outs.append(n.op("Reshape", [det, n.i64([1, 3 * hw * hw, no])]))
    n.op("Concat", outs, "detections", axis=1)
    return n.model("yolo", [("images", F, [1, 3, image, image])], ["detections"])


def deeplab(seed=114, image=256, classes=21):
    n = Net(seed)
    x = n.conv("image", 3, 32, 3, 2)                                    # 128
    x = n.conv(x, 32, 64, 3, 2)                                         # 64
    x = n.conv(x, 64, 64, 3)
    x = n.conv(x, 64, 128, 3, 2)                                        # 32
    for _ in range(2):
        h = n.conv(n.conv(x, 128, 128, 3), 128, 128, 3, act=None, gamma=(0.3, 0.6))
        x = n.op("Relu", [n.op("Add", [x, h])])
    x = n.conv(x, 128, 256, 3, dilation=2)                              # 32x32, 256: output stride 8
    hw = image // 8
    branches = [n.conv(x, 256, 128, 1)] + [n.conv(x, 256, 128, 3, dilation=r) for r in (6, 12, 24)]
    pooled = n.conv(n.op("GlobalAveragePool", [x]), 256, 128, 1, bn=False)  # no BN on a 1x1 map at batch 1
    branches.append(n.op("Resize", [pooled, "", "", n.i64([1, 128, hw, hw])], mode="linear",
                         coordinate_transformation_mode="half_pixel"))
    y = n.conv(n.op("Concat", branches, axis=1), 640, 128, 1)
    y = n.conv(y, 128, classes, 1, bn=False, bias=True, act=None)
    n.op("Resize", [y, "", "", n.i64([1, classes, image, image])], "segmentation", mode="linear",
         coordinate_transformation_mode="half_pixel")
    return n.model("deeplab", [("image", F, [1, 3, image, image])], ["segmentation"])


# ---------------------------------------------------------------- the set

MODELS = {
    "resnet18": ("ResNet-18, 224x224", resnet18),
    "mobilenetv2": ("MobileNetV2 1.0, 224x224", gen_bench_models.mobilenetv2),
    "squeezenet11": ("SqueezeNet 1.1, 224x224", squeezenet11),
    "efficientnet_b0": ("EfficientNet-B0 (MBConv, squeeze-excite, swish), 224x224", efficientnet_b0),
    "unet": ("small UNet (ConvTranspose and bilinear Resize up, skip concats), 128x128", unet),
    "bert_encoder": ("BERT-like encoder, 4 layers, d=256, seq 128", gen_bench_models.bert_encoder),
    "dcgan": ("DCGAN generator, ConvTranspose 4x4 stride 2 down to 3 channels, 64x64", dcgan),
    "shufflenetv2": ("ShuffleNetV2 1.0x (split, shuffle, stride-2 depthwise), 224x224", shufflenetv2),
    "dqn": ("DQN Atari net, 4x84x84", dqn),
    "vit": ("ViT, 16x16 patches, 197 tokens, 4 layers, d=384", vit),
    "gpt": ("GPT-style decoder, causal attention, 4 layers, d=256, seq 128, vocab 5000", gpt),
    "lstm_lm": ("word-level LSTM LM, 2 layers of 200, 35 steps, vocab 2000", lstm_lm),
    "audio_kws": ("audio front end (STFT conv, k512 s160) + Conv1d stack", audio_kws),
    "yolo": ("YOLO-style detector (CSP, SiLU, SPPF, two heads), 256x256", yolo),
    "deeplab": ("segmentation: stride-8 backbone, dilated ASPP, bilinear Resize, 256x256", deeplab),
    "crnn": ("OCR CRNN: CNN + two bidirectional LSTMs, 32x128 line", crnn),
}


def generate(out_dir, names=None, regenerate=True):
    """Writes the models (all, or those named) into out_dir; returns {name: path}. With
    regenerate False, a model file already there is kept."""
    unknown = [m for m in names or [] if m not in MODELS]
    if unknown:
        raise ValueError("unknown broad model(s) %s; the set is %s" % (", ".join(unknown), ", ".join(MODELS)))
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name, (_, make) in MODELS.items():
        if names and name not in names:
            continue
        paths[name] = os.path.join(out_dir, name + ".onnx")
        if regenerate or not os.path.exists(paths[name]):
            onnx.save(make(), paths[name])
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--models", default="")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    if args.list:
        for name, (what, _) in MODELS.items():
            print("%-16s %s" % (name, what))
        return 0
    if not args.out_dir:
        ap.error("OUT_DIR is required")
    try:
        paths = generate(args.out_dir, names)
    except ValueError as e:
        ap.error(str(e))
    for name, path in paths.items():
        print("%s: %s (%.1f MB)" % (name, path, os.path.getsize(path) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
