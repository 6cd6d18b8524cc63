"""test_opt_levels.py — what the graph optimization levels buy, measured on
ResNet-50 at compile time: the light model (its ConstantOfShape weights replaced
by seeded random ones, as scripts/run.sh does) is compiled at -O0 and -O3, and the
kernel count and the bytes of intermediate tensors written per run are printed
for both (`kiln compile` prints them). At -O3:
  - kernels <= Conv + pooling + MatMul/Gemm nodes of the ONNX graph + 5 (every
    element-wise op, batch norm and reshape lives inside some kernel),
  - fewer intermediate bytes than at -O0.
ResNet-50 is only compiled: its kernels are slow today.

Then horizontal fusion end to end, on the small generated transformer block
(models/gen_models.py): at -O3 its Q/K/V projections are one matmul, so it has
two kernels fewer than at -O2, and its output still matches onnxruntime
(rtol 1e-3, atol 1e-5).

Options: --model PATH (a randomized ResNet-50 to use instead of making one),
--keep DIR (keep the work files). Closing line: test_opt_levels: N passed, M failed.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import util  # noqa: E402
import gen_models  # noqa: E402
import randomize_weights  # noqa: E402
import test_e2e  # noqa: E402

POOL_OPS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool"}
HEAVY_OPS = {"Conv", "MatMul", "Gemm"} | POOL_OPS
SLACK = 5
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--model", default="", help="a randomized ResNet-50 (default: made from the light model)")
    ap.add_argument("--keep", default="", help="keep the work files in this folder")
    ap.add_argument("--filter", default="", help="accepted for the test runner; unused")
    ap.add_argument("--verbose", "-v", action="store_true")
    return ap.parse_args()


def compile_summary(kiln, model, bundle, level, extra=()):
    """(Run, {"kernels": int, "intermediates": bytes, "arena": text}) of one `kiln compile`."""
    run = util.run_kiln(kiln, ["compile", model, "-o", bundle, "--opt-level", str(level)] + list(extra), timeout=600)
    info = {"kernels": None, "intermediates": None, "arena": None, "winograd": 0}
    m = re.search(r"winograd: (\d+) 3x3 convs", run.out)
    if m:
        info["winograd"] = int(m.group(1))
    m = re.search(r"kernels: (\d+)", run.out)
    if m:
        info["kernels"] = int(m.group(1))
    m = re.search(r"intermediates: ([0-9.]+) (B|KiB|MiB|GiB) written per run", run.out)
    if m:
        info["intermediates"] = float(m.group(1)) * UNITS[m.group(2)]
    m = re.search(r"arena: (\S+ \S+)", run.out)
    if m:
        info["arena"] = m.group(1)
    return run, info


def resnet50(args, checks, work):
    model = args.model
    if not model:
        src = os.path.join(util.onnx_data_dir("light"), "light_resnet50.onnx")
        if not os.path.exists(src):
            checks.skip("light_resnet50 not found in the onnx package (scripts/model_path.sh)")
            return
        model = os.path.join(work, "resnet50.onnx")
        t0 = time.monotonic()
        m = onnx.load(src)
        randomize_weights.randomize_model(m, seed=0)
        onnx.save(m, model)
        del m
        print("resnet50: weights randomized in %.1f s" % (time.monotonic() - t0), flush=True)
    graph = onnx.load(model, load_external_data=False).graph
    heavy = sum(1 for n in graph.node if n.op_type in HEAVY_OPS)
    hist = {op: sum(1 for n in graph.node if n.op_type == op) for op in sorted(HEAVY_OPS)}
    print("resnet50: %d ONNX nodes, %d conv/pool/matmul (%s)" % (
        len(graph.node), heavy, ", ".join("%s %d" % (k, v) for k, v in hist.items() if v)), flush=True)
    infos = {}
    for level in (0, 3):
        run, info = compile_summary(args.kiln, model, os.path.join(work, "resnet50_O%d.kiln" % level), level)
        ok = run.rc == 0 and info["kernels"] is not None and info["intermediates"] is not None
        if not checks.check(ok, "resnet50 -O%d: compile %s: %s" % (
                level, run.describe(), (run.err.strip().splitlines() or ["no kernels/intermediates line"])[0])):
            return
        infos[level] = info
        print("resnet50 -O%d: %4d kernels, intermediates %8.1f MiB written per run, arena %s; compile %.1f s" % (
            level, info["kernels"], info["intermediates"] / 2**20, info["arena"], run.seconds), flush=True)
    o0, o3 = infos[0], infos[3]
    # a conv run as Winograd is three heavy kernels: the transforms and the batched GEMM
    limit = heavy + 2 * o3["winograd"] + SLACK
    if checks.check(o3["kernels"] <= limit, "resnet50 -O3: %d kernels, more than %d conv/pool/matmul nodes "
                    "(+2 for each of %d Winograd convs) + %d" % (o3["kernels"], heavy, o3["winograd"], SLACK)):
        print("PASS resnet50 -O3: %d kernels <= %d (conv/pool/matmul nodes, +2 per Winograd conv, + %d)" % (
            o3["kernels"], limit, SLACK))
    if checks.check(o3["intermediates"] < o0["intermediates"], "resnet50: -O3 writes %.1f MiB of intermediates, "
                    "-O0 %.1f MiB" % (o3["intermediates"] / 2**20, o0["intermediates"] / 2**20)):
        print("PASS resnet50: intermediates %.1f -> %.1f MiB per run (%.1fx less), kernels %d -> %d" % (
            o0["intermediates"] / 2**20, o3["intermediates"] / 2**20, o0["intermediates"] / o3["intermediates"],
            o0["kernels"], o3["kernels"]), flush=True)


def transformer(args, checks, work):
    gen_dir = os.path.join(work, "generated")
    path = gen_models.generate(gen_dir)["transformer"]
    bound = gen_models.INPUT_SHAPES.get("transformer", {})
    shape_args = []
    for name, shape in bound.items():
        shape_args += ["--input-shape", "%s:%s" % (name, "x".join(map(str, shape)))]
    kernels = {}
    for level in (2, 3):
        run, info = compile_summary(args.kiln, path, os.path.join(work, "transformer_O%d.kiln" % level), level,
                                    shape_args)
        if not checks.check(run.rc == 0 and info["kernels"] is not None, "transformer -O%d: compile %s: %s" % (
                level, run.describe(), (run.err.strip().splitlines() or [""])[0])):
            return
        kernels[level] = info["kernels"]
    if checks.check(kernels[3] == kernels[2] - 2, "transformer: %d kernels at -O3, %d at -O2 (Q/K/V should be one "
                    "matmul at -O3: two kernels fewer)" % (kernels[3], kernels[2])):
        print("PASS transformer: %d kernels at -O2, %d at -O3 (Q/K/V projections merged)" % (kernels[2], kernels[3]))
    test_e2e.run_model(args, checks, "transformer", path, work, bound, (300, 300), 3)


def main():
    args = parse_args()
    checks = util.Checks("test_opt_levels")
    work = args.keep or tempfile.mkdtemp(prefix="kiln_opt_levels_")
    os.makedirs(work, exist_ok=True)
    t0 = time.monotonic()
    try:
        resnet50(args, checks, work)
        transformer(args, checks, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("time: %.0f s" % (time.monotonic() - t0), flush=True)
    checks.finish()


if __name__ == "__main__":
    main()
