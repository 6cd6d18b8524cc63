"""test_arena.py — the memory planner packs light ResNet-50 tightly, and the plan
drops the concats of light SqueezeNet.

`kiln compile` prints the arena it planned and the liveness lower bound (the largest
sum of sizes of the values alive at one step: no plan can be smaller). The planner is
greedy by size, which is known to land close to the bound on CNNs; this test compiles
the light ResNet-50 (its placeholder weights do not matter to the plan) with
--dump-after=plan, which also prints both numbers in bytes, and checks:

  - the printed arena is within 10% of the printed lower bound,
  - the arena is not below the lower bound (that would be a wrong bound or a wrong plan),
  - the bytes in the dump agree with the MiB figures, and the bundle's manifest states
    the same arena size.

Then it compiles the light SqueezeNet, whose eight fire modules each end in a channel
concat of two conv branches: in NCHW[x]c at batch 1 the branches are consecutive
ranges of the concat's output, so the plan has the convs write there and drops the
concat calls, and the softmax at the end writes the graph output the final reshape
views: plan.json must hold no concat or reshape kernel and nine calls fewer than the
kernels compiled (test_e2e checks the numbers against ONNX Runtime).

Last, a split whose halves feed two matmuls (a [1, 32, 64] tensor cut along axis 1
into two [1, 16, 64] halves, each one contiguous, 64-byte aligned byte range of it):
the two slices are views in the plan (no slice kernel in plan.json, two calls fewer
than kernels), and the bundle's output matches numpy (rtol 1e-4, atol 1e-5).

And graph outputs that re-view a kernel's output: a stride-2 depthwise conv on 58
channels at 28x28 (plain NCHW in the layout on AVX2 and AVX-512 alike — 58 channels fill no
block of 4 — the conv writes NCHW1c, which the graph output views) with a relu after it. With the relu's output the only graph output, the
relu fuses into the conv and that one kernel writes the output's buffer: one call in
the plan, no copy. With the conv's output a graph output too, the conv writes that
output's buffer and the relu (not fused: the conv's output is read twice) writes the
other: two calls. Outputs match ONNX Runtime (rtol 1e-4, atol 1e-5).

Both numbers are printed. Closing line: test_arena: N passed, M failed.
"""
import json
import os
import re
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

MODEL = "light_resnet50"
SLACK = 0.10


def manifest_arena(bundle):
    """The arena size the bundle's manifest.json states (None when it cannot be read)."""
    try:
        with tarfile.open(bundle) as tar:
            man = json.load(tar.extractfile("manifest.json"))
    except (OSError, KeyError, tarfile.TarError, ValueError):
        return None

    def find(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if "arena" in k and isinstance(x, int):
                    return x
                r = find(x)
                if r is not None:
                    return r
        if isinstance(v, list):
            for x in v:
                r = find(x)
                if r is not None:
                    return r
        return None
    return find(man)


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_arena")
    model = os.path.join(util.onnx_data_dir("light"), MODEL + ".onnx")
    with tempfile.TemporaryDirectory(prefix="kiln_arena_") as work:
        bundle = os.path.join(work, "resnet50.kiln")
        run = util.run_kiln(args.kiln, ["compile", model, "-o", bundle, "--dump-after=plan"], timeout=1200)
        if not checks.check(run.rc == 0 and not run.sanitizer_report(),
                            "compile %s: %s" % (run.describe(), run.sanitizer_report() or run.err.strip()[:300])):
            checks.finish()
        m = re.search(r"arena: ([0-9.]+) MiB \(liveness lower bound ([0-9.]+) MiB\)", run.out)
        if not checks.check(m is not None, "kiln compile printed no 'arena: X MiB (liveness lower bound Y MiB)' line"):
            checks.finish()
        arena_mib, bound_mib = float(m.group(1)), float(m.group(2))
        d = re.search(r"arena (\d+) bytes \(liveness lower bound (\d+)\)", run.out)
        arena_b = int(d.group(1)) if d else None
        bound_b = int(d.group(2)) if d else None
        print("%s: arena %.2f MiB (%s bytes), liveness lower bound %.2f MiB (%s bytes), ratio %s" % (
            MODEL, arena_mib, arena_b if arena_b is not None else "?", bound_mib,
            bound_b if bound_b is not None else "?",
            "%.4f" % (arena_b / bound_b) if arena_b and bound_b else
            "%.4f" % (arena_mib / bound_mib) if bound_mib else "?"), flush=True)
        arena = arena_b if arena_b is not None else arena_mib
        bound = bound_b if bound_b is not None else bound_mib
        checks.check(bound > 0, "the lower bound is %s" % bound)
        checks.check(arena <= bound * (1 + SLACK),
                     "arena %s is more than %d%% above the lower bound %s" % (arena, SLACK * 100, bound))
        checks.check(arena >= bound, "arena %s is below the lower bound %s" % (arena, bound))
        if checks.check(d is not None, "--dump-after=plan printed no 'arena N bytes (liveness lower bound M)' line"):
            checks.check(abs(arena_b / 1048576.0 - arena_mib) <= 0.006 and abs(bound_b / 1048576.0 - bound_mib) <= 0.006,
                         "dump bytes %d/%d disagree with the printed %.2f/%.2f MiB" % (
                             arena_b, bound_b, arena_mib, bound_mib))
            man = manifest_arena(bundle)
            checks.check(man == arena_b, "the manifest states arena %s, compile printed %d bytes" % (man, arena_b))
        check_concats_dropped(args, checks, work)
        check_slices_viewed(args, checks, work)
        check_output_views(args, checks, work, ("y",), 1)
        check_output_views(args, checks, work, ("c", "y"), 2)
    checks.finish()


def check_concats_dropped(args, checks, work):
    model = os.path.join(util.onnx_data_dir("light"), "light_squeezenet.onnx")
    bundle = os.path.join(work, "squeezenet.kiln")
    run = util.run_kiln(args.kiln, ["compile", model, "-o", bundle, "--dump-after=plan"], timeout=600)
    if not checks.check(run.rc == 0, "compile light_squeezenet: %s" % run.describe()):
        return
    k = re.search(r"kernels: (\d+)", run.out)
    c = re.search(r"(\d+) calls", run.out)
    if not checks.check(k is not None and c is not None, "no 'kernels: N' or 'N calls' in the compile output"):
        return
    try:
        with tarfile.open(bundle) as tar:
            calls = json.load(tar.extractfile("plan.json"))["kernels"]
    except (OSError, KeyError, tarfile.TarError, ValueError) as e:
        checks.check(False, "plan.json of the SqueezeNet bundle: %s" % e)
        return
    names = [x if isinstance(x, str) else x.get("name", "") for x in calls]
    print("light_squeezenet: %s kernels compiled, %s calls in the plan" % (k.group(1), c.group(1)), flush=True)
    checks.check(int(k.group(1)) - int(c.group(1)) == 9 and len(names) == int(c.group(1)),
                 "expected the 8 fire-module concats and the final reshape dropped: %s kernels, %s calls" % (
                     k.group(1), c.group(1)))
    checks.check(not [n for n in names if "reshape" in n], "a reshape kernel left in the plan: %s" % names)
    checks.check(not [n for n in names if "concat" in n], "concat kernels left in the plan: %s" % names)


def save_and_compile(args, checks, work, name, graph):
    """graph saved as WORK/NAME.onnx (opset 17, IR 8) and compiled to WORK/NAME.kiln:
    (model, bundle, the compile's run), or None after a failed check."""
    import onnx
    from onnx import helper
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model, bundle = os.path.join(work, name + ".onnx"), os.path.join(work, name + ".kiln")
    onnx.save(m, model)
    run = util.run_kiln(args.kiln, ["compile", model, "-o", bundle], timeout=300)
    if not checks.check(run.rc == 0, "compile %s: %s" % (name, run.describe())):
        return None
    return model, bundle, run


def check_slices_viewed(args, checks, work):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    w = {n: rng.standard_normal(s).astype(np.float32) * 0.2 for n, s in [("bias", (64,)), ("wa", (64, 48)),
                                                                         ("wb", (64, 48))]}
    inits = [numpy_helper.from_array(v, n) for n, v in w.items()]
    inits.append(numpy_helper.from_array(np.array([16, 16], np.int64), "split"))
    nodes = [helper.make_node("Add", ["x", "bias"], ["c"]),
             helper.make_node("Split", ["c", "split"], ["s0", "s1"], axis=1),
             helper.make_node("MatMul", ["s0", "wa"], ["a"]), helper.make_node("MatMul", ["s1", "wb"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 48])], initializer=inits)
    built = save_and_compile(args, checks, work, "split", g)
    if not built:
        return
    model, bundle, run = built
    k, c = re.search(r"kernels: (\d+)", run.out), re.search(r"(\d+) called", run.out)
    try:
        with tarfile.open(bundle) as tar:
            names = [x if isinstance(x, str) else x.get("name", "")
                     for x in json.load(tar.extractfile("plan.json"))["kernels"]]
    except (OSError, KeyError, tarfile.TarError, ValueError) as e:
        checks.check(False, "plan.json of the split bundle: %s" % e)
        return
    print("split: %s kernels compiled, %s calls in the plan" % (k.group(1) if k else "?", c.group(1) if c else "?"),
          flush=True)
    checks.check(k is not None and c is not None and int(k.group(1)) - int(c.group(1)) == 2,
                 "expected the two slices dropped: %s" % run.out.strip()[:300])
    checks.check(not [n for n in names if "slice" in n], "slice kernels left in the plan: %s" % names)
    x = rng.uniform(-1, 1, (1, 32, 64)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    out = os.path.join(work, "split_out.npz")
    run = util.run_kiln(args.kiln, ["run", bundle, "--input", "x=" + os.path.join(work, "x.npy"), "--outputs", out],
                        timeout=300)
    if not checks.check(run.rc == 0, "run split: %s" % run.describe()):
        return
    c = x + w["bias"]
    want = np.concatenate([c[:, :16] @ w["wa"], c[:, 16:] @ w["wb"]], axis=1)
    got = np.load(out)["y"]
    checks.check(got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5),
                 "split output differs from numpy: max abs diff %s" % (
                     np.abs(got - want).max() if got.shape == want.shape else got.shape))


def check_output_views(args, checks, work, outs, calls):
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array((rng.standard_normal((58, 1, 3, 3)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(58) * 0.1).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=58, strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "outviews", [vi("x", TensorProto.FLOAT, [1, 58, 28, 28])],
                          [vi(o, TensorProto.FLOAT, [1, 58, 14, 14]) for o in outs], initializer=inits)
    built = save_and_compile(args, checks, work, "outviews", g)
    if not built:
        return
    model, bundle, run = built
    c = re.search(r"(\d+) called", run.out)
    print("outviews %s: %s calls in the plan" % ("+".join(outs), c.group(1) if c else "?"), flush=True)
    checks.check(c is not None and int(c.group(1)) == calls,
                 "outputs %s: expected %d calls, no copy into an output: %s" % (outs, calls, run.out.strip()[:300]))
    x = rng.uniform(-1, 1, (1, 58, 28, 28)).astype(np.float32)
    np.save(os.path.join(work, "xv.npy"), x)
    out = os.path.join(work, "outviews_out.npz")
    run = util.run_kiln(args.kiln, ["run", bundle, "--input", "x=" + os.path.join(work, "xv.npy"), "--outputs", out],
                        timeout=300)
    if not checks.check(run.rc == 0, "run outviews: %s" % run.describe()):
        return
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = np.load(out)
    for name, ref in zip(outs, want):
        checks.check(got[name].shape == ref.shape and np.allclose(got[name], ref, rtol=1e-4, atol=1e-5),
                     "output %s differs from ONNX Runtime: max abs diff %s" % (
                         name, np.abs(got[name] - ref).max() if got[name].shape == ref.shape else got[name].shape))


if __name__ == "__main__":
    main()
