"""test_e2e.py — end to end: ONNX model → `kiln compile` → bundle → `kiln run` → the
same numbers as onnxruntime.

Models: the nine "light" model-zoo networks shipped with the onnx package, their
placeholder weights replaced by seeded random ones (models/randomize_weights.py),
and the small models of models/gen_models.py (which together use every op of its
OPS list). For each model: seeded random inputs are written as .npy, the model is
compiled to a bundle and run once (--repeat 1) with those inputs, the same inputs go
through onnxruntime (CPUExecutionProvider), and every output is compared:
float outputs with |kiln - ort| <= atol + rtol * |ort| (rtol 1e-3, atol 1e-5),
integer and bool outputs exactly. `kiln run` must print every output's name, dtype
and shape and a latency line. One line per model (max abs / rel diff, timings).

Then wrong inputs: a .npy of the wrong shape, of the wrong dtype, an unknown input
name and a missing file must each make `kiln run` exit 1 with one clear line.

In a sanitizer build of kiln (found by the ASan runtime linked into the binary),
compiles run at -O0 under ASan, so only the light models in ASAN_LIGHT run there
(those without hundreds of MB of weights or a 900-kernel compile: about two minutes
in all); the test prints which ones it leaves out and why.

Options: --filter TEXT (models whose name contains TEXT), --keep DIR (keep models,
inputs, bundles and outputs in DIR), --all-light (every light model even under ASan).
Closing line: test_e2e: N passed, M failed.
"""
import argparse
import os
import re
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
import gen_models  # noqa: E402
import randomize_weights  # noqa: E402

LIGHT = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet",
         "vgg19", "zfnet512"]
ASAN_LIGHT = ["inception_v1", "resnet50", "shufflenet", "squeezenet"]
RTOL, ATOL = 1e-3, 1e-5
# Looser tolerances, per model and output, each with its reason: {model: (rtol, atol, why)}.
LOOSER = {}
SEED = 2024


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--keep", default="", help="keep the work files in this folder")
    ap.add_argument("--all-light", action="store_true", help="run every light model even in a sanitizer build")
    ap.add_argument("--no-light", action="store_true", help="only the generated models and the wrong-input checks")
    ap.add_argument("--verbose", "-v", action="store_true")
    return ap.parse_args()


def is_sanitizer_build(kiln):
    try:
        with open(kiln, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return b"__asan_init" in data or b"AddressSanitizer" in data


def model_inputs(model, bound):
    """[(name, numpy dtype, shape)] of the inputs that are not initializers; symbolic
    dims come from `bound` (name → shape) or are 1, as kiln binds them by default."""
    inits = {t.name for t in model.graph.initializer}
    result = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if vi.name in bound:
            shape = list(bound[vi.name])
        else:
            shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim]
        result.append((vi.name, onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type), shape))
    return result


def make_feeds(inputs, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, dtype, shape in inputs:
        if np.dtype(dtype).kind == "f":
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        elif np.dtype(dtype).kind == "b":
            feeds[name] = rng.integers(0, 2, shape).astype(dtype)
        else:
            feeds[name] = rng.integers(0, 10, shape).astype(dtype)
    return feeds


def reference(path, feeds):
    import onnxruntime as ort
    import ort_exact
    path = ort_exact.reference_model(path)  # uint8 x int8 exact on CPUs without VNNI too
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    t0 = time.monotonic()
    values = sess.run(None, feeds)
    return dict(zip(names, values)), names, time.monotonic() - t0


def npy_name(output):
    return output.replace("/", "_") + ".npy"


def compare(got, want, rtol, atol):
    """(ok, why, max abs diff, max rel diff)."""
    if got.shape != want.shape:
        return False, "shape %s, onnxruntime %s" % (got.shape, want.shape), None, None
    if got.dtype != want.dtype:
        return False, "dtype %s, onnxruntime %s" % (got.dtype, want.dtype), None, None
    if want.dtype.kind not in "fc":
        bad = int(np.count_nonzero(got != want))
        return bad == 0, ("%d of %d elements differ" % (bad, want.size)) if bad else "", 0.0 if not bad else None, None
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.all(np.isfinite(g) == np.isfinite(w)) or not np.all(g[~np.isfinite(g)] == w[~np.isfinite(w)]):
        return False, "non-finite values differ", None, None
    fin = np.isfinite(w)
    d = np.abs(g[fin] - w[fin])
    max_abs = float(d.max()) if d.size else 0.0
    rel = d / np.maximum(np.abs(w[fin]), 1e-30)
    max_rel = float(rel.max()) if d.size else 0.0
    bad = d > atol + rtol * np.abs(w[fin])
    nbad = int(np.count_nonzero(bad))
    if nbad:
        i = int(np.argmax(d - (atol + rtol * np.abs(w[fin]))))
        why = "%d of %d elements outside tolerance (worst: kiln %.7g, onnxruntime %.7g)" % (
            nbad, w.size, g[fin][i], w[fin][i])
        return False, why, max_abs, max_rel
    return True, "", max_abs, max_rel


def parse_compile(out):
    info = {}
    m = re.search(r"kernels: (\d+)", out)
    info["kernels"] = int(m.group(1)) if m else None
    m = re.search(r"arena: (\S+ \S+) \(liveness lower bound (\S+ \S+)\)", out)
    info["arena"] = m.group(1) if m else None
    return info


def check_run_output(out, outputs):
    """Why `kiln run` stdout lacks an output line or the latency line (None when fine)."""
    for name, arr in outputs.items():
        dtype = util.numpy_dtype_name(arr)
        shape = "x".join(str(d) for d in arr.shape) if arr.shape else "scalar"
        line = "output %s: %s[%s]" % (name, dtype, shape)
        if line not in out:
            return "run output lacks '%s'" % line
    if not re.search(r"^latency: median [0-9.]+ ms", out, re.M):
        return "run output lacks the latency line"
    return None


def run_model(args, checks, name, path, work, bound, timeouts, opt_level=None):
    """Compiles (at opt_level, or kiln's default) and runs one model, compares it
    with onnxruntime; one line."""
    if opt_level is not None:
        name = "%s@O%d" % (name, opt_level)
    model = onnx.load(path, load_external_data=False)
    inputs = model_inputs(model, bound)
    feeds = make_feeds(inputs, SEED + sum(map(ord, name)))
    mdir = os.path.join(work, name)
    os.makedirs(mdir, exist_ok=True)
    in_args = []
    for iname, arr in feeds.items():
        f = os.path.join(mdir, "in_" + iname.replace("/", "_") + ".npy")
        np.save(f, arr)
        in_args += ["--input", "%s=%s" % (iname, f)]
    bundle = os.path.join(mdir, name + ".kiln")
    shape_args = []
    for iname, shape in bound.items():
        shape_args += ["--input-shape", "%s:%s" % (iname, "x".join(map(str, shape)))]
    opt_args = ["--opt-level", str(opt_level)] if opt_level is not None else []
    comp = util.run_kiln(args.kiln, ["compile", path, "-o", bundle] + shape_args + opt_args, timeout=timeouts[0])
    problems = []
    if comp.rc != 0 or comp.sanitizer_report():
        first = (comp.err.strip().splitlines() or [""])[0]
        checks.check(False, "%s: compile %s: %s" % (name, comp.describe(), comp.sanitizer_report() or first))
        return None
    cinfo = parse_compile(comp.out)
    outdir = os.path.join(mdir, "out")
    os.makedirs(outdir, exist_ok=True)
    run = util.run_kiln(args.kiln, ["run", bundle, "--output-dir", outdir, "--repeat", "1"] + in_args,
                        timeout=timeouts[1])
    if run.rc != 0 or run.sanitizer_report():
        first = (run.err.strip().splitlines() or [""])[0]
        checks.check(False, "%s: run %s: %s" % (name, run.describe(), run.sanitizer_report() or first))
        return None
    m = re.search(r"^latency: median ([0-9.]+) ms", run.out, re.M)
    latency = float(m.group(1)) if m else None
    ref, names, ort_s = reference(path, feeds)
    rtol, atol, looser_why = LOOSER.get(name.split("@")[0], (RTOL, ATOL, None))
    worst_abs = worst_rel = 0.0
    for oname in names:
        f = os.path.join(outdir, npy_name(oname))
        if not os.path.exists(f):
            problems.append("%s: no %s written" % (oname, os.path.basename(f)))
            continue
        got = np.load(f)
        ok, why, mabs, mrel = compare(got, ref[oname], rtol, atol)
        if mabs is not None:
            worst_abs = max(worst_abs, mabs)
        if mrel is not None:
            worst_rel = max(worst_rel, mrel)
        if not ok:
            problems.append("output %s: %s (max abs %.3g, max rel %.3g)" % (
                oname, why, mabs if mabs is not None else float("nan"), mrel if mrel is not None else float("nan")))
        elif args.verbose:
            print("  %s %s %s: max abs %.3g max rel %.3g" % (name, oname, got.shape, mabs, mrel or 0), flush=True)
    fmt = check_run_output(run.out, ref)
    if fmt:
        problems.append(fmt)
    summary = "%d outputs, max abs %.3g, max rel %.3g; compile %.1f s, run %.1f s (latency %s ms), ort %.2f s; " \
              "%s kernels, arena %s" % (
                  len(names), worst_abs, worst_rel, comp.seconds, run.seconds,
                  "%.3g" % latency if latency is not None else "?", ort_s, cinfo["kernels"], cinfo["arena"])
    if looser_why:
        summary += "; tolerance rtol %g atol %g: %s" % (rtol, atol, looser_why)
    if checks.check(not problems, "%s: %s; %s" % (name, "; ".join(problems), summary)):
        print("PASS %s: %s" % (name, summary), flush=True)
    return bundle, feeds, mdir


def check_bad_inputs(args, checks, bundle, feeds, mdir):
    """Wrong input files: each must give exit 1 and one clear line on stderr."""
    name, arr = next(iter(feeds.items()))
    cases = []
    bad_shape = os.path.join(mdir, "bad_shape.npy")
    np.save(bad_shape, np.zeros([d + 1 for d in arr.shape] or [2], dtype=arr.dtype))
    cases.append(("bad shape", ["--input", "%s=%s" % (name, bad_shape)], ["shape"]))
    bad_dtype = os.path.join(mdir, "bad_dtype.npy")
    np.save(bad_dtype, arr.astype(np.float64 if arr.dtype != np.float64 else np.float32))
    cases.append(("bad dtype", ["--input", "%s=%s" % (name, bad_dtype)], ["dtype", "float"]))
    good = os.path.join(mdir, "good.npy")
    np.save(good, arr)
    cases.append(("unknown name", ["--input", "no_such_input=%s" % good], ["no_such_input"]))
    cases.append(("missing file", ["--input", "%s=%s" % (name, os.path.join(mdir, "absent.npy"))], ["absent.npy"]))
    truncated = os.path.join(mdir, "truncated.npy")
    with open(good, "rb") as f, open(truncated, "wb") as g:
        g.write(f.read()[:-1])
    cases.append(("truncated data", ["--input", "%s=%s" % (name, truncated)], ["truncated"]))
    not_npy = os.path.join(mdir, "not.npy")
    with open(not_npy, "wb") as f:
        f.write(b"\x93NUMPZ not an array\n")
    cases.append(("not a .npy file", ["--input", "%s=%s" % (name, not_npy)], ["not a .npy"]))
    for what, extra, words in cases:
        run = util.run_kiln(args.kiln, ["run", bundle, "--repeat", "1"] + extra, timeout=120)
        why = util.clean_failure(run)
        if why is None and not any(w in run.err for w in words):
            why = "the message names none of %s: %s" % (words, run.err.strip())
        if checks.check(why is None, "wrong input (%s): %s" % (what, why)):
            print("PASS wrong input (%s): exit 1, '%s'" % (what, run.err.strip()), flush=True)


def main():
    args = parse_args()
    checks = util.Checks("test_e2e")
    try:
        import onnxruntime  # noqa: F401
    except ImportError as e:
        checks.check(False, "onnxruntime is needed for the reference outputs: %s" % e)
        checks.finish()
    asan = is_sanitizer_build(args.kiln)
    light = [] if args.no_light else LIGHT
    if asan and not args.no_light and not args.all_light:
        light = ASAN_LIGHT
        print("NOTE sanitizer build of kiln: light models limited to %s (compiles run at -O0 under ASan); "
              "not run here: %s (the release build runs them; --all-light runs them here)" % (
                  ", ".join(ASAN_LIGHT), ", ".join(m for m in LIGHT if m not in ASAN_LIGHT)), flush=True)
    work = args.keep or tempfile.mkdtemp(prefix="kiln_e2e_")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    try:
        gen_dir = os.path.join(work, "generated")
        generated = gen_models.generate(gen_dir)
        first_bundle = None
        # the generated models at every opt level: graph optimizations must not
        # change results (-O2, the default, first: its bundle serves the wrong-input checks)
        for name, path in generated.items():
            if args.filter and args.filter not in name:
                continue
            for level in (2, 1, 0):
                r = run_model(args, checks, name, path, work, gen_models.INPUT_SHAPES.get(name, {}), (300, 300), level)
                if r and first_bundle is None:
                    first_bundle = r
        if first_bundle:
            check_bad_inputs(args, checks, *first_bundle)
        elif not args.filter:
            checks.check(False, "wrong-input checks: no generated model compiled and ran")
        light_dir = os.path.join(work, "light")
        os.makedirs(light_dir, exist_ok=True)
        for name in light:
            label = "light_" + name
            if args.filter and args.filter not in label:
                continue
            src = os.path.join(util.onnx_data_dir("light"), label + ".onnx")
            dst = os.path.join(light_dir, label + ".onnx")
            t0 = time.monotonic()
            model = onnx.load(src)
            randomize_weights.randomize_model(model, seed=0)
            onnx.save(model, dst)
            del model
            if args.verbose:
                print("  %s: weights randomized in %.1f s" % (label, time.monotonic() - t0), flush=True)
            run_model(args, checks, label, dst, work, {}, (1200, 1200))
            if not args.keep:
                shutil.rmtree(os.path.join(work, label), ignore_errors=True)
                os.remove(dst)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("time: %.0f s" % (time.monotonic() - t_start), flush=True)
    checks.finish()


if __name__ == "__main__":
    main()
