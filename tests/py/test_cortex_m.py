"""test_cortex_m.py — ahead-of-time projects for bare-metal Cortex-M boards run on those
CPUs (QEMU's board models) and give ONNX Runtime's numbers, in kiln's footprint.

For each board — mps2-an386 (Cortex-M4), mps2-an500 (Cortex-M7), mps3-an547 (Cortex-M55)
— each model — the small CNN of models/gen_models.py, the DS-CNN keyword
spotter of models/gen_dscnn.py (49x10 MFCC input, four depthwise-separable blocks of
64 channels) and that DS-CNN quantized to int8 by ONNX Runtime's quantize_static
(compared with ONNX Runtime's int8 outputs within one step of the output's
quantization) — and each way of making the kernels — C from the C backend, or LLVM's
object for the CPU (--kernels llvm):
- `kiln compile --target cortex-mN --aot -o DIR` writes the project and prints the
  flash and RAM it needs; DIR/manifest.json has the same figures;
- arm-none-eabi-gcc builds DIR's sources with the board's startup file, linker
  script and test main (boards/cortex-m/: semihosting for input and output), with
  the flags kiln measured the footprint with (manifest "measured_with");
- `nm` on the linked image finds no malloc, free, calloc, realloc, sbrk or pthread
  symbol;
- qemu-system-arm runs it (-semihosting-config enable=on,target=native, -icount
  shift=0): the image reads in<i>.bin, runs model_run() once, writes out<i>.bin and
  prints the stack high-water mark it painted and model_run's SysTick ticks next to a
  calibration loop's (instructions per inference, printed); the outputs match
  onnxruntime's on the same seeded inputs (rtol 1e-3, atol 1e-5);
- the runtime code (model.c: everything but the kernels and the weights) is at most
  4 KB of flash, and the stack model_run used on the board is within 128 bytes of
  kiln's static figure (-fstack-usage; libm's own frames are not in it) for C kernels,
  at least kiln's lower bound for LLVM's (whose frames it does not measure);
- the instructions per inference of the C and the LLVM kernels, side by side;
- `kiln inspect --footprint --target T` prints the same flash and RAM without writing
  anything (checked on the DS-CNN);
- wrong uses fail with one line: a bare-metal target without --aot, --aot for an
  LLVM target or into a file, `kiln check` on a bare-metal target.
One line per board and model with the footprint.

A missing cross compiler, C library or emulator fails with one line naming its Debian
package (scripts/packages.txt); nothing is skipped.
Options: --boards cortex-m4,cortex-m55 (a subset), --keep DIR.
Closing line: test_cortex_m: N passed, M failed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
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
import gen_dscnn  # noqa: E402
import gen_quant_models  # noqa: E402
import gen_models  # noqa: E402
import test_e2e  # noqa: E402  (model_inputs, make_feeds, reference, compare)

# target → (QEMU machine, linker script in boards/cortex-m)
BOARDS = {"cortex-m4": "mps2-an386", "cortex-m7": "mps2-an500", "cortex-m55": "mps3-an547"}
BOARD_DIR = os.path.join(ROOT, "boards", "cortex-m")
RTOL, ATOL = 1e-3, 1e-5
SEED = 7
FORBIDDEN = re.compile(r"\b(malloc|free|calloc|realloc|_?sbrk|_sbrk_r|_malloc_r|_free_r|pthread_\w+)\b")
TOOLS = [("arm-none-eabi-gcc", "gcc-arm-none-eabi"), ("arm-none-eabi-nm", "binutils-arm-none-eabi"),
         ("qemu-system-arm", "qemu-system-arm")]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--keep", default="")
    return ap.parse_args()


def run(argv, cwd=None, timeout=300):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout.decode("utf-8", "replace"), time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode("utf-8", "replace") + "\n(timed out)", time.monotonic() - t0
    except OSError as e:
        return 127, str(e), time.monotonic() - t0


def newlib_present():
    """Whether newlib's libm for the hard-float Cortex-M4 multilib is there."""
    rc, out, _ = run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16",
                      "-print-file-name=libm.a"])
    return rc == 0 and os.path.isabs(out.strip()) and os.path.exists(out.strip())


def out_step(model):
    """The scale of the DequantizeLinear that makes the (first) graph output, or None."""
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == model.graph.output[0].name and n.input[1] in inits:
            return float(inits[n.input[1]].reshape(-1)[0])
    return None


def prepare(work):
    """{name: (onnx path, feeds, reference outputs, output names, tolerance step or None)}: the
    models, and the DS-CNN quantized to int8 by ONNX Runtime's quantize_static (QDQ,
    per-channel; models/gen_quant_models.py) — its integer kernels on the board, compared
    with ONNX Runtime's int8 outputs within one quantization step of the output."""
    models = {"cnn": gen_models.cnn(), "dscnn": gen_dscnn.dscnn()}
    out = {}
    for name, m in models.items():
        path = os.path.join(work, name + ".onnx")
        onnx.save(m, path)
        feeds = test_e2e.make_feeds(test_e2e.model_inputs(m, {}), SEED + sum(map(ord, name)))
        ref, names, _ = test_e2e.reference(path, feeds)
        out[name] = (path, feeds, ref, names, None)
    qpath = os.path.join(work, "dscnn_int8.onnx")
    gen_quant_models.quantize(out["dscnn"][0], qpath)
    qm = onnx.load(qpath)
    feeds = out["dscnn"][1]
    ref, names, _ = test_e2e.reference(qpath, feeds)
    out["dscnn_int8"] = (qpath, feeds, ref, names, out_step(qm))
    return out


def one(checks, kiln, target, name, model, work, kernels):
    """Compiles, builds, runs and checks one model on one board; returns the
    instructions per inference (None when unknown)."""
    path, feeds, ref, names, step = model
    label = "%s/%s/%s" % (target, name, kernels)
    d = os.path.join(work, "%s-%s-%s" % (name, target, kernels))
    comp = util.run_kiln(kiln, ["compile", path, "--target", target, "--aot", "--kernels", kernels, "-o", d],
                         timeout=600)
    if not checks.check(comp.rc == 0, "%s: kiln compile --aot %s: %s" % (label, comp.describe(), comp.err.strip())):
        return
    checks.check(re.search(r"^  flash: \d+ bytes = kernels \d+ \+ runtime \d+ \+ weights \d+", comp.out, re.M) and
                 re.search(r"^  RAM: \d+ bytes = arena \d+ \+ stack \d+", comp.out, re.M),
                 "%s: kiln compile's summary lacks the flash and RAM lines:\n%s" % (label, comp.out))
    with open(os.path.join(d, "manifest.json")) as f:
        man = json.load(f)
    fp = man.get("footprint", {})
    if not checks.check("measured_with" in fp, "%s: the footprint was not measured: %s" % (label, fp)):
        return
    flags = fp["measured_with"].split()[1:]  # the compiler's CPU flags and -O2
    elf = os.path.join(d, "image.elf")
    srcs = [os.path.join(BOARD_DIR, s) for s in ("startup.c", "semihost.c", "run_model.c")] + \
           [os.path.join(d, s) for s in ("model.c", "kernels.c" if kernels == "c" else "kernels.o", "model_weights.c")]
    argv = ["arm-none-eabi-gcc"] + flags + ["-std=c99", "-ffp-contract=off", "-fno-math-errno", "-ffunction-sections",
                                            "-fdata-sections", "-Wall", "-Wextra", "-Werror", "-I", d, "-I", BOARD_DIR,
                                            "-nostartfiles", "-T", os.path.join(BOARD_DIR, BOARDS[target] + ".ld"),
                                            "-Wl,--gc-sections", "-Wl,-z,noexecstack", "-o", elf] + srcs + ["-lm"]
    rc, out, secs = run(argv)
    if not checks.check(rc == 0, "%s: arm-none-eabi-gcc failed:\n%s" % (label, out[-2000:])):
        return None
    rc, size_out, _ = run(["arm-none-eabi-size", elf])
    sizes = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)", size_out.splitlines()[-1] if size_out else "", re.M)
    image_flash = int(sizes.group(1)) + int(sizes.group(2)) if rc == 0 and sizes else None
    rc, syms, _ = run(["arm-none-eabi-nm", elf])
    bad = sorted(set(FORBIDDEN.findall(syms)))
    checks.check(rc == 0 and not bad, "%s: the image has allocation or thread symbols: %s" % (label, bad or syms[:200]))
    for i, (iname, arr) in enumerate(feeds.items()):
        arr.tofile(os.path.join(d, "in%d.bin" % i))
    rc, out, qsecs = run(["qemu-system-arm", "-machine", BOARDS[target], "-cpu", target, "-nographic", "-monitor",
                          "none", "-icount", "shift=0", "-semihosting-config", "enable=on,target=native", "-kernel",
                          elf], cwd=d, timeout=600)
    m = re.search(r"kiln: model_run returned (\d+), stack high-water (\d+) bytes \((\d+) before model_run\), "
                  r"systick (\d+) ticks, (\d+) per (\d+) instructions", out)
    if not checks.check(rc == 0 and m and m.group(1) == "0", "%s: qemu-system-arm -machine %s: exit %s: %s" % (
            label, BOARDS[target], rc, out.strip()[-500:])):
        return None
    stack_used = int(m.group(2)) - int(m.group(3))
    ticks, cal, cal_instr = int(m.group(4)), int(m.group(5)), int(m.group(6))
    instructions = ticks * cal_instr / cal if ticks and cal else None
    problems, worst = [], 0.0
    for i, oname in enumerate(names):
        want = ref[oname]
        f = os.path.join(d, "out%d.bin" % i)
        if not os.path.exists(f):
            problems.append("no out%d.bin" % i)
            continue
        got = np.fromfile(f, dtype=want.dtype)
        if got.size != want.size:
            problems.append("out%d.bin has %d values, want %d" % (i, got.size, want.size))
            continue
        if step:  # int8: within one step of the output's quantization
            mabs = float(np.max(np.abs(got.astype(np.float64) - want.reshape(-1))))
            ok, why = mabs <= step * 1.01, "max abs diff %.4g above one step (%.4g)" % (mabs, step)
        else:
            ok, why, mabs, _ = test_e2e.compare(got.reshape(want.shape), want, RTOL, ATOL)
        worst = max(worst, mabs or 0.0)
        if not ok:
            problems.append("output %s: %s" % (oname, why))
    flash = fp["flash_kernel_code_bytes"] + fp["flash_runtime_code_bytes"] + fp["flash_weights_bytes"]
    summary = ("max abs diff %.3g; flash %d bytes (kernels %d, runtime %d, weights %d; the linked image %s bytes "
               "with libm/libc and the test main); RAM %d bytes (arena %d, lower bound %d; stack %d by "
               "-fstack-usage, %d used on the board); %s instructions per inference; qemu %.1f s" % (
                   worst, flash, fp["flash_kernel_code_bytes"], fp["flash_runtime_code_bytes"],
                   fp["flash_weights_bytes"], image_flash, fp["ram_bytes"], fp["ram_arena_bytes"],
                   man["arena_lower_bound"], fp["ram_stack_bytes"], stack_used,
                   "%.2fM" % (instructions / 1e6) if instructions else "? (SysTick wrapped)", qsecs))
    if checks.check(not problems, "%s: %s; %s" % (label, "; ".join(problems), summary)):
        print("PASS %s: %s" % (label, summary), flush=True)
    checks.check(fp["flash_runtime_code_bytes"] <= 4096,
                 "%s: the runtime code is %d bytes of flash, above 4 KB" % (label, fp["flash_runtime_code_bytes"]))
    if fp["stack_exact"]:  # C kernels: every frame is in kiln's figure but libm's
        checks.check(stack_used <= fp["ram_stack_bytes"] + 128, "%s: model_run used %d bytes of stack on the board, "
                     "kiln said %d" % (label, stack_used, fp["ram_stack_bytes"]))
    else:  # LLVM kernels: their frames are not measured, kiln's figure is a lower bound
        checks.check(stack_used >= fp["ram_stack_bytes"], "%s: model_run used %d bytes of stack, below kiln's lower "
                     "bound %d" % (label, stack_used, fp["ram_stack_bytes"]))
    checks.check(fp["ram_data_bytes"] == 0, "%s: the project has %d bytes of .data/.bss" % (label, fp["ram_data_bytes"]))
    if name == "dscnn" and kernels == "c":  # kiln inspect --footprint: the same figures, nothing written
        r = util.run_kiln(kiln, ["inspect", path, "--footprint", "--target", target], timeout=600)
        want = "flash: %d bytes = kernels %d + runtime %d + weights %d" % (
            flash, fp["flash_kernel_code_bytes"], fp["flash_runtime_code_bytes"], fp["flash_weights_bytes"])
        checks.check(r.rc == 0 and want in r.out and "RAM: %d bytes" % fp["ram_bytes"] in r.out,
                     "%s: kiln inspect --footprint says otherwise (want '%s'):\n%s%s" % (label, want, r.out[-600:],
                                                                                      r.err))
    return instructions


def usage_errors(checks, kiln, work, model_path):
    """Wrong uses of the bare-metal targets: each one line and exit 1, nothing written."""
    afile = os.path.join(work, "a-file")
    with open(afile, "w") as f:
        f.write("x")
    cases = [
        ("a bare-metal target without --aot", ["compile", model_path, "--target", "cortex-m4", "-o",
                                                os.path.join(work, "m.kiln")], "--aot"),
        ("--aot for an LLVM target", ["compile", model_path, "--target", "aarch64", "--aot", "-o",
                                      os.path.join(work, "x")], "--target c, cortex-m4"),
        ("--aot into a file", ["compile", model_path, "--target", "cortex-m4", "--aot", "-o", afile], "not a folder"),
        ("kiln check on a bare-metal target", ["check", model_path, "--test-data", work, "--target", "cortex-m7"],
         "bare-metal"),
    ]
    for what, argv, word in cases:
        r = util.run_kiln(kiln, argv, timeout=300)
        why = util.clean_failure(r)
        if why is None and word not in r.err:
            why = "the message lacks '%s': %s" % (word, r.err.strip())
        if checks.check(why is None, "%s: %s" % (what, why)):
            print("PASS %s: exit 1, '%s'" % (what, r.err.strip()), flush=True)
    checks.check(not os.path.exists(os.path.join(work, "m.kiln")) and not os.path.exists(os.path.join(work, "x")),
                 "a refused compile left files behind")


def main():
    args = parse_args()
    checks = util.Checks("test_cortex_m")
    boards = [b for b in args.boards.split(",") if b]
    unknown = [b for b in boards if b not in BOARDS]
    if unknown:
        print("test_cortex_m: unknown board target(s) %s (known: %s)" % (", ".join(unknown), ", ".join(BOARDS)))
        return 2
    missing = [(tool, pkg) for tool, pkg in TOOLS if not shutil.which(tool)]
    for tool, pkg in missing:
        checks.check(False, "%s is not installed: install %s (scripts/packages.txt; scripts/setup.sh)" % (tool, pkg))
    if not missing and not checks.check(newlib_present(), "arm-none-eabi-gcc has no C library for Cortex-M: install "
                                        "libnewlib-arm-none-eabi (scripts/packages.txt; scripts/setup.sh)"):
        missing = True
    if missing:
        checks.finish()
    work = args.keep or tempfile.mkdtemp(prefix="kiln_cortex_m_")
    os.makedirs(work, exist_ok=True)
    t0 = time.monotonic()
    try:
        models = prepare(work)
        usage_errors(checks, args.kiln, work, models["dscnn"][0])
        counts = []
        for target in boards:
            for name, model in models.items():
                n = {k: one(checks, args.kiln, target, name, model, work, k) for k in ("c", "llvm")}
                counts.append((target, name, n["c"], n["llvm"]))
        print("instructions per inference (qemu -icount), C kernels vs LLVM kernels:")
        for target, name, c, llvm in counts:
            print("  %-11s %-6s C %s, LLVM %s%s" % (target, name, "%.2fM" % (c / 1e6) if c else "?",
                                                    "%.2fM" % (llvm / 1e6) if llvm else "?",
                                                    " (LLVM/C %.2f)" % (llvm / c) if c and llvm else ""))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("time: %.0f s" % (time.monotonic() - t0), flush=True)
    checks.finish()


if __name__ == "__main__":
    sys.exit(main())
