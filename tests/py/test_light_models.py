"""test_light_models.py — the nine "light" model-zoo networks shipped with the onnx
package (AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet,
SqueezeNet, VGG-19, ZFNet-512; weights replaced by ConstantOfShape) must import
completely: `kiln inspect MODEL` exits 0, reports `unsupported ops: 0`, writes
nothing alarming on stderr, and prints output types and shapes equal to those of
the reference output light_NAME_output_0.pb that ships next to each model.
One line per model.

Then every optimization level: each model, its weights randomized as test_e2e.py
does (models/randomize_weights.py, seed 0), is compiled at -O0, -O1, -O2 and -O3,
run once, and its outputs must match onnxruntime on the same seeded inputs (rtol
1e-3, atol 1e-5; test_e2e.run_model does the work): graph optimizations must not
change results. The models run slowly today (naive schedules), and the whole
matrix takes more than ten minutes on two cores, so the smaller models run at
every level and the large ones (EVERY_LEVEL / LARGE below) at -O3 only — the
default level (-O2) of every light model is test_e2e.py's job. The test prints
what it runs. --all-levels runs every level on every model; --import-only skips
the runs. One line per model and level, then the closing line.
"""
import argparse
import glob
import os
import shutil
import sys
import tempfile
import time

import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "models"))
import util  # noqa: E402

EXPECTED_MODELS = 9
LEVELS = (0, 1, 2, 3)
# Every level: the models that compile and run in well under a minute each.
EVERY_LEVEL = ["squeezenet", "shufflenet", "inception_v1", "inception_v2", "resnet50"]
# -O3 only: hundreds of MB of weights and GFLOPs of naive kernels (VGG-19 alone runs
# for minutes), or DenseNet's 900-kernel compile at -O0.
LARGE = ["bvlc_alexnet", "zfnet512", "vgg19", "densenet121"]
LARGE_LEVELS = (3,)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="path to the kiln binary")
    ap.add_argument("--filter", default="", help="only models whose name contains this text")
    ap.add_argument("--all-levels", action="store_true", help="every level on every model")
    ap.add_argument("--import-only", action="store_true", help="only the import checks")
    ap.add_argument("--quick", action="store_true",
                    help="opt levels on SqueezeNet only (the sanitizer build: test_e2e runs every light model at -O2)")
    ap.add_argument("--keep", default="", help="keep the work files in this folder")
    ap.add_argument("--verbose", "-v", action="store_true")
    return ap.parse_args()


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


def check_levels(args, checks, models):
    """Compiles and runs each light model at its levels against onnxruntime."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError as e:
        checks.check(False, "onnxruntime is needed for the opt-level checks: %s" % e)
        return
    import randomize_weights
    import test_e2e
    plan = []
    for path in models:
        name = os.path.basename(path)[:-len(".onnx")]
        short = name[len("light_"):]
        if args.filter and args.filter not in name:
            continue
        if args.quick and short != "squeezenet":
            continue
        levels = LEVELS if args.all_levels or short not in LARGE else LARGE_LEVELS
        plan.append((name, path, levels))
    every = [n for n, _, lv in plan if lv == LEVELS]
    some = ["%s (%s)" % (n, ", ".join("-O%d" % l for l in lv)) for n, _, lv in plan if lv != LEVELS]
    print("opt levels: every level (-O0..-O3): %s; fewer levels: %s" % (
        ", ".join(every) or "none", ", ".join(some) or "none"), flush=True)
    work = args.keep or tempfile.mkdtemp(prefix="kiln_light_levels_")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    try:
        for name, src, levels in plan:
            dst = os.path.join(work, name + ".onnx")
            t0 = time.monotonic()
            model = onnx.load(src)
            randomize_weights.randomize_model(model, seed=0)
            onnx.save(model, dst)
            del model
            t1 = time.monotonic()
            for level in levels:
                test_e2e.run_model(args, checks, name, dst, work, {}, (1200, 1200), level)
            print("  %s: %.0f s (weights randomized in %.0f s)" % (name, time.monotonic() - t0, t1 - t0), flush=True)
            if not args.keep:
                os.remove(dst)
                for level in levels:
                    shutil.rmtree(os.path.join(work, "%s@O%d" % (name, level)), ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("opt levels: %.0f s" % (time.monotonic() - t_start), flush=True)


def main():
    args = parse_args()
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
    if not args.import_only:
        check_levels(args, checks, models)
    checks.finish()


if __name__ == "__main__":
    main()
