"""test_generic_groups.py — no conv, matmul or pooling group on the generic schedule
(issue 15, item 1): every benchmark and end-to-end model is compiled by `kiln compile`
(at its default level) and the line

    generic schedules: N groups (conv A, matmul B, pool C)[: kernel names]

it prints must say N = 0. Where the line is missing, the model FAILs with "kiln compile
does not report generic groups yet"; where N > 0, the FAIL names the kernels.

The models: bench/run.py's set (ResNet-50, SqueezeNet, MobileNetV2, the BERT-like
encoder, the DCGAN decoder, the ResNeXt blocks, DenseNet-121, Inception v1, the BERT
embedding), every shape class of bench/shapes.py (models/gen_shape_models.py), the broad
set of bench/models.py (models/gen_broad_models.py), and test_e2e.py's models (the
generated ones of models/gen_models.py and the nine light model-zoo networks, their
weights randomized as test_e2e does: constant weights are what the templates need).
Models that appear in two sets (the light ResNet-50 in bench/run.py and test_e2e, the
generators shared by run.py and the broad set) are compiled once.

In a sanitizer build (compiles run slowly under ASan) a subset runs: one shape class per
group, the generated e2e models and two small broad models; the test prints what it
leaves out. --all runs everything there. Options: --filter TEXT (models whose label
contains TEXT), --keep DIR. Closing line: test_generic_groups: N passed, M failed.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import util  # noqa: E402
import test_e2e  # noqa: E402  (LIGHT, is_sanitizer_build)
import gen_models  # noqa: E402
import gen_bench_models  # noqa: E402
import gen_shape_models  # noqa: E402
import gen_broad_models  # noqa: E402

LINE = re.compile(r"generic schedules: (\d+) groups? \(conv (\d+), matmul (\d+), pool (\d+)\)(?::\s*(.*))?")
# bench/run.py's light models (randomized with seed 0, as run.py and test_e2e.py both do)
BENCH_LIGHT = {"resnet50": "resnet50", "squeezenet": "squeezenet", "densenet121": "densenet121",
               "inception_v1": "inception_v1"}
ASAN_BROAD = ["dqn", "audio_kws"]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--keep", default="")
    ap.add_argument("--all", action="store_true", help="every model even in a sanitizer build")
    ap.add_argument("--verbose", "-v", action="store_true")
    return ap.parse_args()


def check_model(args, checks, label, path, work, extra=()):
    bundle = os.path.join(work, "model.kiln")
    r = util.run_kiln(args.kiln, ["compile", path, "-o", bundle] + list(extra), timeout=1200)
    if os.path.exists(bundle):
        os.remove(bundle)
    if r.rc != 0 or r.sanitizer_report():
        first = (r.err.strip().splitlines() or [""])[0]
        checks.check(False, "%s: compile %s: %s" % (label, r.describe(), r.sanitizer_report() or first))
        return
    m = LINE.search(r.out)
    if not m:
        checks.check(False, "%s: kiln compile does not report generic groups yet (no 'generic schedules: N groups "
                            "(conv A, matmul B, pool C)' line)" % label)
        return
    n, conv, matmul, pool = (int(m.group(i)) for i in range(1, 5))
    what = "%d generic groups (conv %d, matmul %d, pool %d)%s" % (n, conv, matmul, pool,
                                                                  ": " + m.group(5).strip() if m.group(5) else "")
    if checks.check(n == 0, "%s: %s; compile %.1f s" % (label, what, r.seconds)):
        print("PASS %s: 0 generic groups; compile %.1f s" % (label, r.seconds), flush=True)


def main():
    args = parse_args()
    checks = util.Checks("test_generic_groups")
    asan = test_e2e.is_sanitizer_build(args.kiln) and not args.all
    work = args.keep or tempfile.mkdtemp(prefix="kiln_generic_")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()

    def wanted(label):
        return args.filter in label

    try:
        # shape classes: every one (one per group in a sanitizer build)
        classes = gen_shape_models.CLASSES
        if asan:
            firsts = {}
            for c in classes:
                firsts.setdefault(c.group, c)
            left = [c.name for c in classes if c not in firsts.values()]
            classes = list(firsts.values())
            print("NOTE sanitizer build of kiln: one shape class per group (%s); not run here: %d other classes, "
                  "bench/run.py's models, the light models and the broad set but %s (the release build runs them; "
                  "--all runs them here)" % (", ".join(c.name for c in classes), len(left), ", ".join(ASAN_BROAD)),
                  flush=True)
        classes = [c for c in classes if wanted("shape:" + c.name)]
        paths = gen_shape_models.generate(os.path.join(work, "shapes"), classes) if classes else {}
        for c in classes:
            check_model(args, checks, "shape:" + c.name, paths[c.name], work)

        # the broad set (it includes bench/run.py's MobileNetV2 and BERT-like encoder)
        broad = [n for n in gen_broad_models.MODELS if not asan or n in ASAN_BROAD]
        broad = [n for n in broad if wanted("broad:" + n)]
        paths = gen_broad_models.generate(os.path.join(work, "broad"), broad) if broad else {}
        for n in broad:
            check_model(args, checks, "broad:" + n, paths[n], work)

        # e2e: the generated models
        gen = {n: p for n, p in gen_models.generate(os.path.join(work, "e2e")).items() if wanted("e2e:" + n)}
        for n, p in gen.items():
            extra = []
            for iname, shape in gen_models.INPUT_SHAPES.get(n, {}).items():
                extra += ["--input-shape", "%s:%s" % (iname, "x".join(map(str, shape)))]
            check_model(args, checks, "e2e:" + n, p, work, extra)

        if not asan:
            # bench/run.py's generated models beyond the broad set
            extra_bench = [n for n in gen_bench_models.MODELS if n not in gen_broad_models.MODELS and wanted("bench:" + n)]
            paths = gen_bench_models.generate(os.path.join(work, "bench"), extra_bench) if extra_bench else {}
            for n in extra_bench:
                check_model(args, checks, "bench:" + n, paths[n], work)
            # the light models of test_e2e.py (and bench/run.py's resnet50, squeezenet, densenet121, inception_v1)
            import onnx
            import randomize_weights
            for name in test_e2e.LIGHT:
                label = "light:" + name + (" (also bench/run.py's %s)" % name if name in BENCH_LIGHT else "")
                if not wanted(label):
                    continue
                src = os.path.join(util.onnx_data_dir("light"), "light_%s.onnx" % name)
                dst = os.path.join(work, "light_%s.onnx" % name)
                model = onnx.load(src)
                randomize_weights.randomize_model(model, seed=0)
                onnx.save(model, dst)
                del model
                check_model(args, checks, label, dst, work)
                os.remove(dst)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("time: %.0f s" % (time.monotonic() - t_start), flush=True)
    checks.finish()


if __name__ == "__main__":
    main()
