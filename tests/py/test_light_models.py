"""test_light_models.py — the nine "light" model-zoo networks shipped with the onnx
package (AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet,
SqueezeNet, VGG-19, ZFNet-512; weights replaced by ConstantOfShape) must import
completely: `kiln inspect MODEL` exits 0, reports `unsupported ops: 0`, writes
nothing alarming on stderr, and prints output types and shapes equal to those of
the reference output light_NAME_output_0.pb that ships next to each model.
One line per model, then the closing line.
"""
import glob
import os
import sys

import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

EXPECTED_MODELS = 9


def reference_outputs(model_path):
    """[(dtype name, shape)] from MODEL_output_N.pb next to the model."""
    stem = model_path[:-len(".onnx")]
    refs = []
    for i in range(16):
        path = "%s_output_%d.pb" % (stem, i)
        if not os.path.exists(path):
            break
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        arr = numpy_helper.to_array(t)
        refs.append((util.numpy_dtype_name(arr), tuple(arr.shape)))
    return refs


def fmt(outs):
    return ", ".join("%s[%s]" % (d, "x".join(map(str, s)) if s else "scalar") for d, s in outs)


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_light_models")
    models = sorted(glob.glob(os.path.join(util.onnx_data_dir("light"), "*.onnx")))
    checks.check(len(models) == EXPECTED_MODELS,
                 "expected %d light models, found %d" % (EXPECTED_MODELS, len(models)))
    for path in models:
        name = os.path.basename(path)[:-len(".onnx")]
        if args.filter and args.filter not in name:
            continue
        run = util.run_kiln(args.kiln, ["inspect", path], timeout=300)
        info = util.parse_inspect(run.out)
        refs = reference_outputs(path)
        got = [(d, s) for _, d, s in info["outputs"]]
        problems = []
        if run.timed_out or run.rc != 0:
            first = run.err.strip().splitlines()[0] if run.err.strip() else ""
            problems.append("%s: %s" % (run.describe(), first))
        san = run.sanitizer_report()
        if san:
            problems.append("sanitizer report (%s)" % san)
        elif run.rc == 0 and run.err.strip():
            problems.append("a successful import wrote to stderr: %r" % run.err.strip()[:200])
        if info["unsupported"] != 0:
            ops = sorted({op for op, _ in info["unsupported_ops"]})
            problems.append("unsupported ops: %s (%s)" % (info["unsupported"], ", ".join(ops)))
        if not refs:
            problems.append("no reference output next to the model")
        if run.rc == 0 and got != refs:
            problems.append("outputs %s, reference %s" % (fmt(got), fmt(refs)))
        ok = not problems
        if ok:
            print("%-22s OK   %s  (%s canonical nodes)" % (name, fmt(got), info["canonical_nodes"]), flush=True)
        else:
            print("%-22s FAIL %s" % (name, "; ".join(problems)), flush=True)
        checks.check(ok, "%s does not import completely" % name)
    checks.finish()


if __name__ == "__main__":
    main()
