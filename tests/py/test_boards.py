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

int8 dot products on aarch64 (issue 17): the CNN quantized by ONNX Runtime's
quantizer (models/gen_quant_models.py: QDQ, uint8 activations, int8 per-channel
weights) and a QLinearMatMul of two uint8 operands are compiled for aarch64,
aarch64-dotprod and aarch64-i8mm and run under `qemu-aarch64 -cpu max` (which has
both extensions): each bundle's code must hold its instructions (none; SDOT/UDOT,
u8·s8 as SDOT of the flipped operand; USDOT — counted with llvm-objdump-19), every
output must be within one quantization step of ONNX Runtime's (the step of the
DequantizeLinear that makes it, through Identity) and bit-identical to the plain
aarch64 bundle's. Under `-cpu cortex-a53` (Armv8.0, no dot product) the plain
bundle runs and the aarch64-dotprod one is refused at load, naming dotprod.

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


INT8_TARGETS = ["aarch64", "aarch64-dotprod", "aarch64-i8mm"]
# the dot-product instructions each bundle's code must use (and no other): u8·s8 is
# SDOT of the flipped operand, or USDOT with I8MM; u8·u8 is UDOT
INT8_DOTS = {"cnn_int8": {"aarch64": [], "aarch64-dotprod": ["sdot"], "aarch64-i8mm": ["usdot"]},
             "qmatmul_u8": {"aarch64": [], "aarch64-dotprod": ["udot"], "aarch64-i8mm": ["udot"]}}


def int8_models(work):
    """{name: onnx path}: the CNN quantized by ONNX Runtime's quantizer, and a
    QLinearMatMul of two uint8 operands (weight zero point 0: kiln multiplies the raw
    bytes, so this one takes UDOT; the CNN's uint8 x int8 convs take SDOT / USDOT)."""
    from onnx import TensorProto, helper, numpy_helper
    import gen_quant_models
    src, dst = os.path.join(work, "cnn_fp32.onnx"), os.path.join(work, "cnn_int8.onnx")
    onnx.save(gen_models.cnn(), src)
    gen_quant_models.quantize(src, dst)
    rng = np.random.default_rng(SEED)
    inits = [numpy_helper.from_array(rng.integers(0, 256, (64, 48)).astype(np.uint8), "W")]
    for name, v in [("as", np.float32(0.05)), ("az", np.uint8(3)), ("ws", np.float32(0.02)), ("wz", np.uint8(0)),
                    ("ys", np.float32(40.0)), ("yz", np.uint8(7))]:
        inits.append(numpy_helper.from_array(np.array(v), name))
    node = helper.make_node("QLinearMatMul", ["A", "as", "az", "W", "ws", "wz", "ys", "yz"], ["Y"])
    graph = helper.make_graph([node], "qmatmul_u8", [helper.make_tensor_value_info("A", TensorProto.UINT8, [8, 64])],
                              [helper.make_tensor_value_info("Y", TensorProto.UINT8, [8, 48])], inits)
    qmm = os.path.join(work, "qmatmul_u8.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), qmm)
    return {"cnn_int8": dst, "qmatmul_u8": qmm}


def output_steps(model):
    """{output: quantization step}: the scalar scale of the DequantizeLinear that makes
    it (through Identity / Dropout); 1 for integer outputs."""
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    made_by = {o: n for n in model.graph.node for o in n.output}
    steps = {}
    for o in model.graph.output:
        if o.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            steps[o.name] = 1.0
            continue
        n = made_by.get(o.name)
        while n is not None and n.op_type in ("Identity", "Dropout"):
            n = made_by.get(n.input[0])
        if n is not None and n.op_type == "DequantizeLinear" and inits.get(n.input[1], np.zeros(2)).size == 1:
            steps[o.name] = float(inits[n.input[1]].reshape(()))
    return steps


def dot_counts(so_bytes, work):
    """{mnemonic: count} of the dot-product instructions in a library, by llvm-objdump-19."""
    tool = shutil.which("llvm-objdump-19")
    if not tool:
        return None
    path = os.path.join(work, "lib.so")
    with open(path, "wb") as f:
        f.write(so_bytes)
    r = util.run_kiln(tool, ["-d", "--mattr=+dotprod,+i8mm", path], timeout=120)
    found = re.findall(r"\t(usdot|sdot|udot)\t", r.out)
    return {m: found.count(m) for m in ("sdot", "udot", "usdot")}


def check_int8_dot(checks, kiln, runner, work):
    """The int8 models on the three aarch64 targets under qemu -cpu max (see the docstring)."""
    import tarfile
    qemu_max = [runner[0], "-cpu", "max"] + runner[1:]
    qemu_a53 = [runner[0], "-cpu", "cortex-a53"] + runner[1:]
    for name, path in int8_models(work).items():
        model = onnx.load(path)
        steps = output_steps(model)
        feeds = {}
        for inp in model.graph.input:
            shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
            rng = np.random.default_rng(SEED + sum(map(ord, name)))
            if inp.type.tensor_type.elem_type == onnx.TensorProto.UINT8:
                feeds[inp.name] = rng.integers(0, 256, shape).astype(np.uint8)
            else:
                feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)  # the calibration distribution
        in_args = []
        for iname, arr in feeds.items():
            f = os.path.join(work, "%s_in_%s.npy" % (name, iname))
            np.save(f, arr)
            in_args += ["--input", "%s=%s" % (iname, f)]
        ref, names, _ = test_e2e.reference(path, feeds)
        first, bundles = None, {}
        for target in INT8_TARGETS:
            must = INT8_DOTS[name][target]
            label = "%s/%s" % (target, name)
            bundle = os.path.join(work, "%s-%s.kiln" % (name, target))
            comp = util.run_kiln(kiln, ["compile", path, "-o", bundle, "--target", target], timeout=600)
            if not checks.check(comp.rc == 0, "%s: kiln compile %s: %s" % (label, comp.describe(), comp.err.strip())):
                continue
            bundles[target] = bundle
            with tarfile.open(bundle) as tar:
                counts = dot_counts(tar.extractfile("lib/%s.so" % target).read(), work)
            if not checks.check(counts is not None, "%s: llvm-objdump-19 is not installed (llvm-19)" % label):
                continue
            used = [m for m in counts if counts[m]]
            checks.check(used == must, "%s: the code uses %s, want %s" % (label, counts, must or "none"))
            outdir = os.path.join(work, "out-%s-%s" % (name, target))
            os.makedirs(outdir, exist_ok=True)
            run = util.run_kiln(qemu_max[0], qemu_max[1:] + [bundle, "--output-dir", outdir, "--repeat", "5"] + in_args,
                                timeout=600)
            if not checks.check(run.rc == 0, "%s: kiln-run under qemu -cpu max %s: %s" % (
                    label, run.describe(), run.err.strip())):
                continue
            problems, worst = [], 0.0
            got = {o: np.load(os.path.join(outdir, test_e2e.npy_name(o))) for o in names}
            for o in names:
                diff = float(np.max(np.abs(got[o].astype(np.float64) - ref[o].astype(np.float64))))
                step = steps.get(o)
                worst = max(worst, diff / step if step else diff)
                if step is None or diff > 1.01 * step:
                    problems.append("%s: max abs diff %.4g, over one step (%s)" % (o, diff, step))
                if first is not None and not np.array_equal(got[o], first[o]):
                    problems.append("%s differs from the aarch64 bundle's" % o)
            if first is None:
                first = got
            m = re.search(r"^median ([0-9.]+) ms", run.out, re.M)
            summary = "%s; worst %.2f steps off ONNX Runtime%s; qemu median %s ms" % (
                ", ".join("%d %s" % (counts[k], k) for k in used) or "no dot instructions", worst,
                ", bit-identical to aarch64's" if target != "aarch64" else "", m.group(1) if m else "?")
            if checks.check(not problems, "%s: %s; %s" % (label, "; ".join(problems), summary)):
                print("PASS %s (qemu -cpu max): %s" % (label, summary), flush=True)
        if name != "cnn_int8":
            continue
        # an Armv8.0 core: the plain bundle runs, the dotprod one is refused at load
        if "aarch64" in bundles:
            outdir = os.path.join(work, "out-%s-a53" % name)
            run = util.run_kiln(qemu_a53[0], qemu_a53[1:] + [bundles["aarch64"], "--output-dir", outdir] + in_args,
                                timeout=600)
            same = run.rc == 0 and first is not None and all(
                np.array_equal(np.load(os.path.join(outdir, test_e2e.npy_name(o))), first[o]) for o in names)
            if checks.check(same, "aarch64/%s under qemu -cpu cortex-a53: %s %s" % (name, run.describe(),
                                                                                 run.err.strip())):
                print("PASS aarch64/%s under qemu -cpu cortex-a53: the same outputs" % name, flush=True)
        if "aarch64-dotprod" in bundles:
            check_refusal(checks, "the aarch64 runtime on a Cortex-A53 (qemu) refuses an aarch64-dotprod bundle",
                          qemu_a53, bundles["aarch64-dotprod"], ["dotprod", "--target aarch64"])


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
            if target == "aarch64":
                check_int8_dot(checks, args.kiln, runner, work)

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
