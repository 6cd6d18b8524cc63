"""test_boards.py — bundles for the Linux board targets run on those CPUs (under
qemu-user) and give ONNX Runtime's numbers.

For each of aarch64, armv7 (hard-float) and riscv64: SqueezeNet (the onnx package's
light model, weights seeded by models/randomize_weights.py) and the small CNN of
models/gen_models.py are compiled with `kiln compile --target T`, and run by that
target's kiln-run (cross-built with the runtime by CMakeLists.txt into
board-T/ next to the kiln binary) under `qemu-<arch> -L build-sysroot/T`, the tree
of the target's C libraries that scripts/make_sysroots.sh extracts; seeded .npy
inputs, outputs written as .npy and compared with onnxruntime on the host (float
outputs within rtol 1e-3, atol 1e-5; test_e2e.compare). kiln-run's median time under
qemu is printed per model (an emulator's time, not the board's).

Then the architecture check at load: the host's kiln-run must refuse the aarch64
bundle, and aarch64's kiln-run (under qemu) the host's bundle, each with exit 1 and
one line naming the bundle's target and this CPU; and the host's kiln-run runs the
host bundle of the CNN and matches too (kiln-run itself, natively), and refuses a
missing input and an unknown option cleanly.

Nothing is skipped: a missing qemu, target tree or cross-built kiln-run fails its
check with one line saying what to install or run (qemu-user, scripts/setup.sh).
Options: --targets aarch64,armv7 (a subset), --keep DIR (keep the work files).
Closing line: test_boards: N passed, M failed.
"""
import argparse
import os
import platform
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
import test_e2e  # noqa: E402  (model_inputs, make_feeds, reference, compare)

# target → qemu-user binary (Debian's qemu-user)
BOARDS = {"aarch64": "qemu-aarch64", "armv7": "qemu-arm", "riscv64": "qemu-riscv64"}
RTOL, ATOL = 1e-3, 1e-5
SEED = 16


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--targets", default=",".join(BOARDS))
    ap.add_argument("--keep", default="", help="keep the work files in this folder")
    return ap.parse_args()


def board_tools(kiln, target):
    """(argv prefix that runs the target's kiln-run, None) or (None, why not)."""
    qemu = shutil.which(BOARDS[target])
    if not qemu:
        return None, "%s is not installed: install qemu-user (scripts/packages.txt; scripts/setup.sh)" % BOARDS[target]
    tree = os.path.join(ROOT, "build-sysroot", target)
    if not os.path.exists(os.path.join(tree, ".kiln-sysroot")):
        return None, "%s (the %s C libraries) is missing: run scripts/setup.sh (scripts/make_sysroots.sh)" % (
            tree, target)
    runner = os.path.join(os.path.dirname(os.path.abspath(kiln)), "board-" + target, "kiln-run")
    if not os.path.exists(runner):
        return None, "%s is missing: the release build makes it (CMake option KILN_BOARD_RUNTIMES)" % runner
    return [qemu, "-L", tree, runner], None


def prepare_models(work):
    """{name: (onnx path, feeds)}: SqueezeNet with seeded weights, the generated CNN."""
    models = {}
    src = os.path.join(util.onnx_data_dir("light"), "light_squeezenet.onnx")
    m = onnx.load(src)
    randomize_weights.randomize_model(m, seed=0)
    path = os.path.join(work, "squeezenet.onnx")
    onnx.save(m, path)
    models["squeezenet"] = path
    cnn = gen_models.cnn()
    path = os.path.join(work, "cnn.onnx")
    onnx.save(cnn, path)
    models["cnn"] = path
    out = {}
    for name, path in models.items():
        feeds = test_e2e.make_feeds(test_e2e.model_inputs(onnx.load(path, load_external_data=False), {}),
                                    SEED + sum(map(ord, name)))
        in_args = []
        for iname, arr in feeds.items():
            f = os.path.join(work, "%s_in_%s.npy" % (name, iname.replace("/", "_")))
            np.save(f, arr)
            in_args += ["--input", "%s=%s" % (iname, f)]
        ref, names, _ = test_e2e.reference(path, feeds)
        out[name] = (path, in_args, ref, names)
    return out


def compare_outputs(outdir, ref, names):
    """[problem lines], worst abs diff."""
    problems, worst = [], 0.0
    for oname in names:
        f = os.path.join(outdir, test_e2e.npy_name(oname))
        if not os.path.exists(f):
            problems.append("%s: no %s written" % (oname, os.path.basename(f)))
            continue
        ok, why, mabs, _ = test_e2e.compare(np.load(f), ref[oname], RTOL, ATOL)
        worst = max(worst, mabs or 0.0)
        if not ok:
            problems.append("output %s: %s" % (oname, why))
    return problems, worst


def run_board(checks, kiln, runner, target, name, model, work):
    """Compiles for target, runs under qemu, compares; returns the bundle path or None."""
    path, in_args, ref, names = model
    label = "%s/%s" % (target, name)
    bundle = os.path.join(work, "%s-%s.kiln" % (name, target))
    comp = util.run_kiln(kiln, ["compile", path, "-o", bundle, "--target", target], timeout=600)
    if not checks.check(comp.rc == 0, "%s: kiln compile --target %s %s: %s" % (
            label, target, comp.describe(), (comp.err.strip().splitlines() or [""])[0])):
        return None
    outdir = os.path.join(work, "out-%s-%s" % (name, target))
    os.makedirs(outdir, exist_ok=True)
    run = util.run_kiln(runner[0], runner[1:] + [bundle, "--output-dir", outdir] + in_args, timeout=600)
    if not checks.check(run.rc == 0, "%s: kiln-run under %s %s: %s" % (
            label, os.path.basename(runner[0]), run.describe(), (run.err.strip().splitlines() or [""])[0])):
        return None
    problems, worst = compare_outputs(outdir, ref, names)
    m = re.search(r"^median ([0-9.]+) ms", run.out, re.M)
    summary = "max abs diff %.3g; compile %.1f s; qemu run %.1f s (kiln-run median %s ms)" % (
        worst, comp.seconds, run.seconds, m.group(1) if m else "?")
    if checks.check(not problems, "%s: %s; %s" % (label, "; ".join(problems), summary)):
        print("PASS %s: %s" % (label, summary), flush=True)
    return bundle


def check_refusal(checks, what, argv, bundle, words):
    """Running bundle with argv must fail cleanly naming every word."""
    run = util.run_kiln(argv[0], argv[1:] + [bundle], timeout=120)
    why = util.clean_failure(run)
    if why is None and not all(w in run.err for w in words):
        why = "the message lacks one of %s: %s" % (words, run.err.strip())
    if checks.check(why is None, "%s: %s" % (what, why)):
        print("PASS %s: exit 1, '%s'" % (what, run.err.strip()), flush=True)


def main():
    args = parse_args()
    checks = util.Checks("test_boards")
    targets = [t for t in args.targets.split(",") if t]
    unknown = [t for t in targets if t not in BOARDS]
    if unknown:
        print("test_boards: unknown target(s) %s (known: %s)" % (", ".join(unknown), ", ".join(BOARDS)))
        return 2
    work = args.keep or tempfile.mkdtemp(prefix="kiln_boards_")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    try:
        models = prepare_models(work)
        host_runner = os.path.join(os.path.dirname(os.path.abspath(args.kiln)), "kiln-run")
        bundles = {}
        for target in targets:
            runner, why = board_tools(args.kiln, target)
            if not checks.check(runner is not None, "%s: %s" % (target, why)):
                continue
            for name, model in models.items():
                b = run_board(checks, args.kiln, runner, target, name, model, work)
                if b:
                    bundles[(target, name)] = b

        # kiln-run natively: the host bundle of the CNN runs and matches
        path, in_args, ref, names = models["cnn"]
        host_bundle = os.path.join(work, "cnn-host.kiln")
        comp = util.run_kiln(args.kiln, ["compile", path, "-o", host_bundle], timeout=600)
        if checks.check(comp.rc == 0, "host/cnn: kiln compile %s: %s" % (comp.describe(), comp.err.strip())):
            outdir = os.path.join(work, "out-cnn-host")
            run = util.run_kiln(host_runner, [host_bundle, "--output-dir", outdir, "--repeat", "3"] + in_args)
            problems, worst = compare_outputs(outdir, ref, names) if run.rc == 0 else (
                ["kiln-run %s: %s" % (run.describe(), run.err.strip())], 0.0)
            if checks.check(not problems, "host/cnn with kiln-run: %s" % "; ".join(problems)):
                print("PASS host/cnn with kiln-run: max abs diff %.3g; %s" % (
                    worst, (re.findall(r"^median.*$", run.out, re.M) or ["?"])[0]), flush=True)
            # the same inputs as members of one .npz
            npz = os.path.join(work, "cnn_inputs.npz")
            np.savez(npz, **{a.split("=", 1)[0]: np.load(a.split("=", 1)[1])
                             for a in in_args if "=" in a})
            outdir = os.path.join(work, "out-cnn-host-npz")
            run = util.run_kiln(host_runner, [host_bundle, "--output-dir", outdir, "--inputs", npz])
            problems, worst = compare_outputs(outdir, ref, names) if run.rc == 0 else (
                ["kiln-run %s: %s" % (run.describe(), run.err.strip())], 0.0)
            if checks.check(not problems, "host/cnn with kiln-run --inputs FILE.npz: %s" % "; ".join(problems)):
                print("PASS host/cnn with kiln-run --inputs FILE.npz: max abs diff %.3g" % worst, flush=True)
            # usage and input errors: one line each
            for what, extra, rc, word in [("a missing input", [], 1, "not given"),
                                          ("an unknown option", ["--bogus"], 2, "--bogus")]:
                r = util.run_kiln(host_runner, [host_bundle] + extra)
                ok = r.rc == rc and len(r.err_lines()) == 1 and word in r.err
                if checks.check(ok, "kiln-run with %s: want exit %d and one line naming '%s', got %s: %r" % (
                        what, rc, word, r.describe(), r.err)):
                    print("PASS kiln-run with %s: exit %d, '%s'" % (what, rc, r.err.strip()), flush=True)

            # the architecture check at load, both ways
            if "aarch64" in targets:
                b = bundles.get(("aarch64", "cnn"))
                if checks.check(b is not None, "refusal checks: no aarch64 bundle of the CNN was made"):
                    check_refusal(checks, "the host runtime refuses an aarch64 bundle", [host_runner], b,
                                  ["aarch64-unknown-linux-gnu", "this host is " + platform.machine()])
                runner, why = board_tools(args.kiln, "aarch64")
                if runner:
                    check_refusal(checks, "the aarch64 runtime (qemu) refuses a host bundle", runner, host_bundle,
                                  [platform.machine(), "this host is aarch64"])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("time: %.0f s" % (time.monotonic() - t_start), flush=True)
    checks.finish()


if __name__ == "__main__":
    sys.exit(main())
