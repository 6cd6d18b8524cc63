"""gen_dscnn.py — a keyword-spotting-size model for the microcontroller tests: a DS-CNN
(depthwise-separable CNN, as in "Hello Edge: Keyword Spotting on Microcontrollers",
Zhang et al. 2017) on a 49x10 MFCC input, with seeded random weights.

Usage: .venv/bin/python models/gen_dscnn.py OUT.onnx

    input "mfcc" float32[1, 1, 49, 10]   49 frames of 10 MFCC coefficients
    conv 10x4, stride 2, 64 channels, "same" padding → 64 x 25 x 5, batch norm, ReLU
    4 x (depthwise conv 3x3, 64 channels, batch norm, ReLU,
         pointwise conv 1x1, 64 channels, batch norm, ReLU)
    average pool over 25 x 5 → 64, fully connected → 12 keywords, softmax
    output "probs" float32[1, 12]

About 24k parameters and 2.7 MMACs, the "small" DS-CNN of that paper's Table 3
(generated at test time, never committed). The batch norms are real nodes with
non-trivial statistics, so kiln folds them into the convolutions as a trained
model's would be.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models import Builder, out  # noqa: E402

CHANNELS, BLOCKS, KEYWORDS = 64, 4, 12


def batch_norm_relu(b, x, c):
    bn = b.op("BatchNormalization", [x, b.uniform([c], 0.8, 1.2), b.uniform([c], -0.1, 0.1),
                                     b.uniform([c], -0.1, 0.1), b.uniform([c], 0.8, 1.2)], epsilon=1e-3)
    return b.op("Relu", [bn])


def dscnn():
    b = Builder(49)
    w = b.he([CHANNELS, 1, 10, 4], 40)
    x = b.op("Conv", ["mfcc", w, b.uniform([CHANNELS], -0.05, 0.05, "b")], kernel_shape=[10, 4], strides=[2, 2],
             pads=[4, 1, 5, 1])                                                  # 64 x 25 x 5
    x = batch_norm_relu(b, x, CHANNELS)
    for _ in range(BLOCKS):
        x = batch_norm_relu(b, b.conv(x, CHANNELS, CHANNELS, 3, group=CHANNELS, pads=[1, 1, 1, 1]), CHANNELS)
        x = batch_norm_relu(b, b.conv(x, CHANNELS, CHANNELS, 1), CHANNELS)
    x = b.op("Flatten", [b.op("AveragePool", [x], kernel_shape=[25, 5])], axis=1)  # 64
    logits = b.op("Gemm", [x, b.he([KEYWORDS, CHANNELS], CHANNELS), b.uniform([KEYWORDS], -0.05, 0.05)], transB=1)
    b.nodes.append(helper.make_node("Softmax", [logits], ["probs"], axis=1))
    return b.model("dscnn", [out("mfcc", TensorProto.FLOAT, [1, 1, 49, 10])],
                   [out("probs", TensorProto.FLOAT, [1, KEYWORDS])], 17)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    import onnx
    m = dscnn()
    onnx.save(m, sys.argv[1])
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    print("dscnn: %s (%d parameters)" % (sys.argv[1], params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
