"""test_broad_models.py — the broad model set of issue 15 (models/gen_broad_models.py:
ResNet-18, MobileNetV2, SqueezeNet 1.1, EfficientNet-B0, a UNet, a BERT-like encoder, a
DCGAN generator, ShuffleNetV2, the DQN Atari net, a ViT, a GPT-style decoder, an LSTM
language model, an audio front end, a YOLO-style detector, a DeepLab-style segmentation
net, a CRNN) compiled by `kiln compile`, run by `kiln run`, compared with onnxruntime.

Inputs: seeded, floats uniform in [-1, 1) — the distribution the generator calibrated
the models' BatchNormalizations on (inference-mode BN does not renormalise: inputs of
three times that variance grow EfficientNet-B0's logits a hundredfold), integers (token
ids) uniform over their valid range (gen_broad_models.INPUT_RANGES). Every output is
compared as test_e2e.py does: |kiln - ort| <= atol + rtol * |ort|, rtol 1e-3, atol 1e-5
unless LOOSER names the model with its reason. `kiln run` must print every output's
line and the latency line (test_e2e.check_run_output).

A model kiln cannot compile or run yet is a FAIL naming the reason, unless it is listed
in EXCLUDED with its reason — printed, counted as skipped, never as passed; an excluded
model that compiles, runs and matches is a FAIL too ("remove it from EXCLUDED").

In a sanitizer build (kiln linked with ASan; compiles run slowly there) only the models
of ASAN_MODELS run; the test prints which ones it leaves out. --all runs every model there.

Options: --filter TEXT, --keep DIR (keep models, inputs, bundles, outputs), --all.
Closing line: test_broad_models: N passed, M failed[, K skipped].
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import util  # noqa: E402
import test_e2e  # noqa: E402  (compare, reference, check_run_output, parse_compile, is_sanitizer_build)
import gen_broad_models  # noqa: E402

RTOL, ATOL = 1e-3, 1e-5
# Looser tolerances, each with its reason: {model: (rtol, atol, why)}.
LOOSER = {
    "unet": (1e-3, 1e-4, "its output is a 1x1 conv over 32 channels whose values (std ~2) cross zero: elements "
                         "near zero come from cancellation, where float32 rounding of a different summation "
                         "order (NCHWc blocks vs ONNX Runtime's) leaves ~3e-5 absolute, about 1e-5 of the "
                         "output's scale"),
    "mobilenetv2": (1e-3, 1e-4, "its logits (std ~2.4) come from a 1280 -> 1000 matmul and cross zero; on AVX2 "
                                "CPUs (8-lane channel blocks, another summation order than AVX-512's 16) two "
                                "logits near 0.005 were 2.6e-5 off ONNX Runtime (AMD EPYC Zen 3), about 1e-5 of "
                                "the output's scale"),
    "deeplab": (1e-3, 1e-4, "its 3x3 convs run as Winograd F(4x4,3x3) (layout/winograd.c), whose transforms "
                            "round at ~5e-6 of a layer's scale (tests/py/test_winograd.py); the output (std ~0.3) "
                            "crosses zero, and a few elements there are ~1.4e-5 off ONNX Runtime"),
}
# Models kiln cannot compile or run yet: {model: why}. Counted as skipped, printed.
EXCLUDED = {}
# The sanitizer build's subset: small models that compile in seconds at -O0 under ASan,
# covering 1-D convs, LSTMs, transposed convs, attention and channel shuffles.
ASAN_MODELS = ["dqn", "audio_kws", "lstm_lm", "dcgan", "crnn", "vit", "shufflenetv2"]
SEED = 4242


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--keep", default="", help="keep the work files in this folder")
    ap.add_argument("--all", action="store_true", help="every model even in a sanitizer build")
    ap.add_argument("--verbose", "-v", action="store_true")
    return ap.parse_args()


def make_feeds(name, model, seed):
    rng = np.random.default_rng(seed)
    ranges = gen_broad_models.INPUT_RANGES.get(name, {})
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.dtype(dtype).kind == "f":
            feeds[vi.name] = rng.uniform(-1, 1, shape).astype(dtype)
        else:
            lo, hi = ranges.get(vi.name, (0, 10))
            feeds[vi.name] = rng.integers(lo, hi, shape).astype(dtype)
    return feeds


def run_one(args, checks, name, path, work, looser=None):
    """(ok, why, summary) for one model; looser: the tolerance table (default LOOSER)."""
    model = onnx.load(path)
    feeds = make_feeds(name, model, SEED + sum(map(ord, name)))
    del model
    mdir = os.path.join(work, name)
    os.makedirs(mdir, exist_ok=True)
    in_args = []
    for iname, arr in feeds.items():
        f = os.path.join(mdir, "in_%s.npy" % iname)
        np.save(f, arr)
        in_args += ["--input", "%s=%s" % (iname, f)]
    bundle = os.path.join(mdir, name + ".kiln")
    comp = util.run_kiln(args.kiln, ["compile", path, "-o", bundle], timeout=900)
    if comp.rc != 0 or comp.sanitizer_report():
        first = (comp.err.strip().splitlines() or [""])[0]
        return False, "compile %s: %s" % (comp.describe(), comp.sanitizer_report() or first), ""
    cinfo = test_e2e.parse_compile(comp.out)
    outdir = os.path.join(mdir, "out")
    os.makedirs(outdir, exist_ok=True)
    run = util.run_kiln(args.kiln, ["run", bundle, "--output-dir", outdir, "--repeat", "1"] + in_args, timeout=900)
    if run.rc != 0 or run.sanitizer_report():
        first = (run.err.strip().splitlines() or [""])[0]
        return False, "run %s: %s" % (run.describe(), run.sanitizer_report() or first), ""
    ref, names, ort_s = test_e2e.reference(path, feeds)
    rtol, atol, why_looser = (LOOSER if looser is None else looser).get(name, (RTOL, ATOL, None))
    problems, worst_abs, worst_rel = [], 0.0, 0.0
    for oname in names:
        f = os.path.join(outdir, test_e2e.npy_name(oname))
        if not os.path.exists(f):
            problems.append("%s: no %s written" % (oname, os.path.basename(f)))
            continue
        ok, why, mabs, mrel = test_e2e.compare(np.load(f), ref[oname], rtol, atol)
        worst_abs = max(worst_abs, mabs or 0.0)
        worst_rel = max(worst_rel, mrel or 0.0)
        if not ok:
            problems.append("output %s: %s" % (oname, why))
    fmt = test_e2e.check_run_output(run.out, ref)
    if fmt:
        problems.append(fmt)
    summary = "%d outputs, max abs %.3g, max rel %.3g; compile %.1f s, run %.1f s, ort %.2f s; %s kernels" % (
        len(names), worst_abs, worst_rel, comp.seconds, run.seconds, ort_s, cinfo["kernels"])
    if why_looser:
        summary += "; tolerance rtol %g atol %g: %s" % (rtol, atol, why_looser)
    return not problems, "; ".join(problems), summary


def main():
    args = parse_args()
    checks = util.Checks("test_broad_models")
    try:
        import onnxruntime  # noqa: F401
    except ImportError as e:
        checks.check(False, "onnxruntime is needed for the reference outputs: %s" % e)
        checks.finish()
    names = [n for n in gen_broad_models.MODELS if args.filter in n]
    if test_e2e.is_sanitizer_build(args.kiln) and not args.all:
        left = [n for n in names if n not in ASAN_MODELS]
        names = [n for n in names if n in ASAN_MODELS]
        if left:
            print("NOTE sanitizer build of kiln: running %s; not run here: %s (the release build runs them; "
                  "--all runs them here)" % (", ".join(names), ", ".join(left)), flush=True)
    work = args.keep or tempfile.mkdtemp(prefix="kiln_broad_")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    try:
        t0 = time.monotonic()
        paths = gen_broad_models.generate(os.path.join(work, "models"), names)
        print("generated %d models in %.1f s" % (len(paths), time.monotonic() - t0), flush=True)
        for name in names:
            ok, why, summary = run_one(args, checks, name, paths[name], work)
            if name in EXCLUDED:
                if ok:
                    checks.check(False, "%s: listed in EXCLUDED (%s) but compiles, runs and matches onnxruntime: "
                                        "remove it from EXCLUDED (%s)" % (name, EXCLUDED[name], summary))
                else:
                    checks.skip("%s: excluded: %s (now: %s)" % (name, EXCLUDED[name], why))
            elif checks.check(ok, "%s: %s%s" % (name, why, "; " + summary if summary else "")):
                print("PASS %s: %s" % (name, summary), flush=True)
            if not args.keep:
                shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("time: %.0f s" % (time.monotonic() - t_start), flush=True)
    checks.finish()


if __name__ == "__main__":
    main()
