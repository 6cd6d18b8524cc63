"""test_quant_models.py — int8 models quantized by ONNX Runtime's quantizer
(models/gen_quant_models.py: quantize_static, QDQ, per-channel int8 weights, uint8
activations, seeded calibration) compiled by `kiln compile`, run by `kiln run`, and
compared with ONNX Runtime running the same quantized model (its QDQ units become
QLinearConv / QLinearMatMul there, its Add / Mul / pool / Softmax units QLinearAdd … ;
kiln imports them alike, importer/qdq.c).

Checks per model:
- every Conv, MatMul and Gemm of the model between DequantizeLinear outputs is imported
  as an integer op (units of other kinds are counted too) (`kiln inspect`'s count of QDQ units): the int8 path is taken, not
  float arithmetic around QuantizeLinear/DequantizeLinear;
- on SAMPLES seeded inputs (normal(0, 1), the calibration distribution): each output
  that a DequantizeLinear with a scalar scale s produces is within one quantization
  step of ONNX Runtime's (|kiln - ort| <= s, the issue's "±1 on the integer
  tensors"; STEPS allows more for a model, with its reason: one-step differences
  compound through the layers); any other output
  within rtol 1e-3, atol 1e-5; a classifier's top-1 class identical. (Measured: every
  model's outputs identical to ONNX Runtime's, the bound one step.)
Models listed in NOT_YET are printed and counted as skipped, never as passed.
In a sanitizer build only SANITIZER_MODELS run (compiles are slow there).

Options: --kiln PATH (required), --filter TEXT, --keep DIR.
Closing line: test_quant_models: N passed, M failed[, K skipped].
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import util  # noqa: E402
import test_e2e  # noqa: E402
import gen_quant_models  # noqa: E402

SAMPLES = 3
SEED = 1717
RTOL, ATOL = 1e-3, 1e-5
MODELS = ["mobilenetv2", "resnet50", "bert_encoder"]
SANITIZER_MODELS = ["mobilenetv2"]
# Outputs allowed more than one step off, with the reason: {model: (steps, why)}. None now:
# the three models measure identical to ONNX Runtime 1.31.1 on every QuantizeLinear output
# (the encoder since its LayerNormalizations and QLinearSoftmax units compute what ORT's
# kernels compute: te/compute_reduce.c layer_norm_ort, importer/ops_contrib_quant.c
# qlinear_softmax_table; before, 4 and 5 steps at its output in samples 0 and 1).
STEPS = {}
NOT_YET = {}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--keep", default="")
    return ap.parse_args()


def dq_scales(model):
    """{output name: scalar scale} for outputs produced by a DequantizeLinear."""
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    outs = {o.name for o in model.graph.output}
    scales = {}
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] in outs and n.input[1] in inits:
            s = inits[n.input[1]]
            if s.size == 1:
                scales[n.output[0]] = float(s.reshape(()))
    return scales


def check_model(args, checks, name, path, work):
    model = onnx.load(path)
    made_by = {o: n.op_type for n in model.graph.node for o in n.output}
    convs = sum(1 for n in model.graph.node if n.op_type in ("Conv", "MatMul", "Gemm")
                and all(made_by.get(i) == "DequantizeLinear" for i in n.input if i))
    scales = dq_scales(model)
    inp = model.graph.input[0]
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    del model
    insp = util.run_kiln(args.kiln, ["inspect", path], timeout=600)
    units = 0
    for line in insp.out.splitlines():
        if line.startswith("QDQ units imported as integer ops"):
            units = int(line.rsplit(":", 1)[1])
    checks.check(insp.rc == 0 and units >= convs and units > 0,
                 "%s: %d QDQ units imported as integer ops, the model has %d Conv/MatMul/Gemm nodes between "
                 "DequantizeLinear outputs" % (name, units, convs))
    mdir = os.path.join(work, name)
    os.makedirs(mdir, exist_ok=True)
    bundle = os.path.join(mdir, name + ".kiln")
    comp = util.run_kiln(args.kiln, ["compile", path, "-o", bundle], timeout=900)
    if not checks.check(comp.rc == 0 and not comp.sanitizer_report(),
                        "%s: compile %s: %s" % (name, comp.describe(), comp.sanitizer_report() or comp.err.strip()[:300])):
        return
    rng = np.random.default_rng(SEED)
    for k in range(SAMPLES):
        x = rng.standard_normal(shape).astype(np.float32)
        f = os.path.join(mdir, "in%d.npy" % k)
        np.save(f, x)
        outdir = os.path.join(mdir, "out%d" % k)
        os.makedirs(outdir, exist_ok=True)
        run = util.run_kiln(args.kiln, ["run", bundle, "--input", "%s=%s" % (inp.name, f), "--output-dir", outdir,
                                        "--repeat", "1"], timeout=900)
        if not checks.check(run.rc == 0 and not run.sanitizer_report(),
                            "%s: run %s: %s" % (name, run.describe(), run.sanitizer_report() or run.err.strip()[:300])):
            return
        ref, names, _ = test_e2e.reference(path, {inp.name: x})
        for oname in names:
            got = np.load(os.path.join(outdir, test_e2e.npy_name(oname)))
            want = ref[oname]
            if got.shape != want.shape:
                checks.check(False, "%s sample %d: %s has shape %s, onnxruntime %s" % (name, k, oname, got.shape,
                                                                                       want.shape))
                continue
            diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
            if oname in scales:
                steps, why = STEPS.get(name, (1, ""))
                ok = diff <= (steps + 0.01) * scales[oname]  # float32 dequantization rounds the step
                what = "within %d step%s of %.4g%s" % (steps, "s" if steps > 1 else "", scales[oname],
                                                       " (%s)" % why if why else "")
            else:
                ok, why, _, _ = test_e2e.compare(got, want, RTOL, ATOL)
                what = "within rtol %g / atol %g" % (RTOL, ATOL)
            checks.check(ok, "%s sample %d: %s max abs diff %.4g, want %s" % (name, k, oname, diff, what))
            if want.ndim == 2 and want.shape[0] == 1 and want.shape[1] >= 10:  # a classifier's scores
                checks.check(int(np.argmax(got)) == int(np.argmax(want)),
                             "%s sample %d: top-1 %d, onnxruntime %d" % (name, k, int(np.argmax(got)),
                                                                          int(np.argmax(want))))
            print("%s sample %d: %s max abs diff %.4g (%s)" % (name, k, oname, diff, what), flush=True)


def main():
    args = parse_args()
    checks = util.Checks("test_quant_models")
    names = [m for m in MODELS if args.filter in m]
    if test_e2e.is_sanitizer_build(args.kiln):
        left = [m for m in names if m not in SANITIZER_MODELS]
        if left:
            print("sanitizer build: leaving out %s (compiles are slow there)" % ", ".join(left), flush=True)
        names = [m for m in names if m in SANITIZER_MODELS]
    work = args.keep or tempfile.mkdtemp(prefix="kiln_quant_")
    try:
        run_names = [m for m in names if m not in NOT_YET]
        for m in names:
            if m in NOT_YET:
                checks.skip("%s: not yet: %s" % (m, NOT_YET[m]))
        paths = gen_quant_models.generate(os.path.join(work, "models"), run_names)
        for m in run_names:
            check_model(args, checks, m, paths[m], work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    checks.finish()


if __name__ == "__main__":
    main()
