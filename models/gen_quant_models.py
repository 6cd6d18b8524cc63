"""gen_quant_models.py — int8 models quantized by ONNX Runtime's own quantizer, for
issue 17's checks (tests/py/test_quant_models.py, `kiln bench` by hand).

Usage: .venv/bin/python models/gen_quant_models.py OUT_DIR [--models resnet50,mobilenetv2,bert_encoder]

Each model is the fp32 benchmark model (bench/run.py's set: ResNet-50 is the onnx
package's light ResNet-50 with seeded, calibrated random weights, upgraded to opset
17 so that DequantizeLinear takes per-channel axes; MobileNetV2 and the BERT-like
encoder come from models/gen_bench_models.py), then
    onnxruntime.quantization.quant_pre_process (shape inference, no symbolic shapes)
    onnxruntime.quantization.quantize_static: QDQ format, per-channel weights,
        uint8 activations, int8 weights, calibrated (MinMax) on 8 seeded inputs
        (normal(0, 1), numpy seed 0)
and written as OUT_DIR/NAME_int8.onnx (fp32 sources as OUT_DIR/NAME.onnx). Nothing
is committed: everything is regenerated from seeds.
"""
import argparse
import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "bench"))

MODELS = ["resnet50", "mobilenetv2", "bert_encoder"]
CALIBRATION_SAMPLES = 8


def fp32_model(name, out_dir):
    """Path of the fp32 model `name` in out_dir, made if missing."""
    path = os.path.join(out_dir, name + ".onnx")
    if os.path.exists(path):
        return path
    if name == "resnet50":
        import run as bench_run  # bench/run.py: the light model's path
        import randomize_weights
        from onnx import version_converter
        model = onnx.load(bench_run.light_model_path("light_resnet50"))
        randomize_weights.randomize_model(model, seed=0)
        model = version_converter.convert_version(model, 17)
        onnx.save(model, path)
    else:
        import gen_bench_models
        gen_bench_models.generate(out_dir, [name])
    return path


class Calibration:
    """quantize_static's data reader: CALIBRATION_SAMPLES seeded normal inputs."""

    def __init__(self, model):
        inp = model.graph.input[0]
        shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
        rng = np.random.default_rng(0)
        self.samples = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)}
                             for _ in range(CALIBRATION_SAMPLES)])

    def get_next(self):
        return next(self.samples, None)


def quantize(src, dst):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(Calibration, CalibrationDataReader):
        pass

    pre = dst + ".pre.onnx"
    quant_pre_process(src, pre, skip_symbolic_shape=True)
    quantize_static(pre, dst, Reader(onnx.load(src)), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    os.remove(pre)


def generate(out_dir, names=None):
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name in names or MODELS:
        if name not in MODELS:
            raise SystemExit("gen_quant_models: unknown model %r (have %s)" % (name, ", ".join(MODELS)))
        dst = os.path.join(out_dir, name + "_int8.onnx")
        if not os.path.exists(dst):
            quantize(fp32_model(name, out_dir), dst)
        paths[name] = dst
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    for name, path in generate(args.out_dir, args.models.split(",")).items():
        print("%-14s %s" % (name, path))


if __name__ == "__main__":
    main()
