"""test_shape_models.py — every shape class of bench/shapes.py (models/gen_shape_models.py:
strided and dilated, grouped, depthwise, transposed and 1-D convs, prime-sized GEMMs,
softmax / layer-norm over odd lengths, Resize modes, shuffles, split/concat, pad,
transpose) compiled by `kiln compile`, run by `kiln run` and compared with onnxruntime:
the shapes the schedule templates are being written for must compute the right numbers,
not only fast ones.

The same procedure as test_broad_models.py (its run_one): seeded uniform [-1, 1) inputs,
|kiln - ort| <= atol + rtol * |ort| with rtol 1e-3, atol 1e-5 unless LOOSER names the
class with its reason; a class kiln cannot compile or run is a FAIL naming why.
In a sanitizer build one class per group runs (the test prints which; --all runs all).

Options: --filter TEXT, --keep DIR, --all. Closing line: test_shape_models: N passed, M failed.
"""
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import util  # noqa: E402
import test_e2e  # noqa: E402
import test_broad_models  # noqa: E402  (parse_args, run_one)
import gen_shape_models  # noqa: E402

# Looser tolerances, each with its reason: {class: (rtol, atol, why)}.
LOOSER = {}


def main():
    args = test_broad_models.parse_args()
    checks = util.Checks("test_shape_models")
    classes = [c for c in gen_shape_models.CLASSES if args.filter in c.name]
    if test_e2e.is_sanitizer_build(args.kiln) and not args.all:
        firsts = {}
        for c in classes:
            firsts.setdefault(c.group, c)
        left = [c.name for c in classes if c not in firsts.values()]
        classes = list(firsts.values())
        if left:
            print("NOTE sanitizer build of kiln: one class per group (%s); not run here: %d others (the release "
                  "build runs them; --all runs them here)" % (", ".join(c.name for c in classes), len(left)),
                  flush=True)
    work = args.keep or tempfile.mkdtemp(prefix="kiln_shapes_")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    try:
        paths = gen_shape_models.generate(os.path.join(work, "models"), classes, regenerate=True) if classes else {}
        for c in classes:
            ok, why, summary = test_broad_models.run_one(args, checks, c.name, paths[c.name], work, LOOSER)
            if checks.check(ok, "%s: %s%s" % (c.name, why, "; " + summary if summary else "")):
                print("PASS %s: %s" % (c.name, summary), flush=True)
            if not args.keep:
                shutil.rmtree(os.path.join(work, c.name), ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("time: %.0f s" % (time.monotonic() - t_start), flush=True)
    checks.finish()


if __name__ == "__main__":
    main()
