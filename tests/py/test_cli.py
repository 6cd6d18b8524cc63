"""test_cli.py — the `kiln` command as a tool: one option table for every
subcommand, `kiln check` on the user's path (a bundle in memory, the runtime),
inputs from .npz files and invented inputs that stay within what the model
accepts, and the errors a user meets (bad numbers, oversized shapes, folders
given as outputs, bundles for another machine).

Every model is generated here with onnx.helper; expected numbers come from
onnxruntime (or numpy for zero-sized tensors). Groups (--filter picks by name):

  parse     --help / -h of every subcommand, values missing, numbers out of range
            or not numbers, unknown options, options of another subcommand
  check     kiln check runs the bundle: --threads, --target (a host-runnable
            one and a foreign one), the arena limit applies to it
  sizes     --input-shape that overflows int64 bytes, an arena over the limit,
            --max-arena-bytes
  zero      zero-sized dims (MatMul [0,4]x[4,3], K = 0, integer N = 0, Add, a
            reduction, Conv with batch 0, --input-shape x:0x4) against onnxruntime
  foreign   a bundle compiled for aarch64, run here: one line naming both machines
  outputs   -o naming a folder, a missing folder
  dumps     every --dump-after step prints something (link: the exported kernels;
            pack: the entries and their CRC32s)
  inspect   a missing model: only the error
  top5      a [1, 1000, 1, 1] classifier output gets its top-5 classes
  npz       kiln run --inputs FILE.npz / --outputs FILE.npz against onnxruntime;
            --input wins over a member; a member naming no input is an error
  ranges    a BERT-style embedding model: invented token ids stay in the table,
            kiln bench --compare onnxruntime works without input files; an index
            computed from an input is refused without data; casts keep the range;
            integers that index nothing keep [0, 10)
  range_paths  the range analysis through reshape, transpose, slice, concat, cast,
            to gather / gather_nd / scatter_elements indices, the smallest table,
            arithmetic before an index, a float input
  manifest  hostile "range" / "random" fields in a bundle's manifest

Closing line: test_cli: N passed, M failed[, K skipped].
"""
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

COMMANDS = ["compile", "run", "bench", "check", "inspect", "interpret", "lower"]
vi = helper.make_tensor_value_info


def save_model(path, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="test_cli")
    m.ir_version = 8
    onnx.save(m, path)
    return path


def ort_run(path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return {o.name: v for o, v in zip(sess.get_outputs(), sess.run(None, feeds))}


def one_line_failure(r, rc=1):
    """None when r failed with exit rc and exactly one line on stderr, else why not."""
    if r.timed_out or r.rc is None:
        return r.describe()
    if r.sanitizer_report():
        return "sanitizer report"
    if r.rc != rc:
        return "exit %d, want %d (stderr %r)" % (r.rc, rc, r.err[:300])
    lines = [l for l in r.err.splitlines() if l.strip()]
    if len(lines) != 1:
        return "%d lines on stderr: %r" % (len(lines), r.err[:400])
    return None


def close(a, b, rtol=1e-3, atol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "iub":
        return np.array_equal(a, b)
    return np.allclose(a, b, rtol=rtol, atol=atol)


class Ctx:
    def __init__(self, args, checks, work):
        self.kiln, self.c, self.work = args.kiln, checks, work
        self.py = sys.executable

    def path(self, name):
        return os.path.join(self.work, name)

    def run(self, *argv, timeout=180):
        return util.run_kiln(self.kiln, [str(a) for a in argv], timeout=timeout)

    def compile(self, model, bundle, *extra):
        r = self.run("compile", model, "-o", bundle, *extra)
        self.c.check(r.rc == 0 and not r.sanitizer_report(), "compile %s %s: %s %s" % (
            os.path.basename(model), " ".join(extra), r.describe(), r.err.strip()[:300]))
        return r.rc == 0


# --------------------------------------------------------------------------- models

def relu_model(ctx):
    return save_model(ctx.path("relu.onnx"), [helper.make_node("Relu", ["x"], ["y"])],
                      [vi("x", T.FLOAT, ["n", 4])], [vi("y", T.FLOAT, ["n", 4])])


def bert_model(ctx, name="bert.onnx", ids_op=None):
    """input_ids [1,16] int64 → Gather on a [1000,32] table, token_type_ids → Gather on
    [2,32], add, LayerNormalization. ids_op: ONNX nodes put between input_ids and its
    Gather (the last one writing 'ids')."""
    rng = np.random.default_rng(7)
    nodes = list(ids_op or [])
    ids = "ids" if ids_op else "input_ids"
    nodes += [helper.make_node("Gather", ["wemb", ids], ["e1"]),
              helper.make_node("Gather", ["temb", "token_type_ids"], ["e2"]),
              helper.make_node("Add", ["e1", "e2"], ["s"]),
              helper.make_node("LayerNormalization", ["s", "g", "b"], ["y"], axis=-1)]
    inits = [numpy_helper.from_array(rng.standard_normal((1000, 32)).astype(np.float32), "wemb"),
             numpy_helper.from_array(rng.standard_normal((2, 32)).astype(np.float32), "temb"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 32).astype(np.float32), "g"),
             numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b")]
    if ids_op:
        inits.append(numpy_helper.from_array(np.array(1, np.int64), "one"))
    ins = [vi("input_ids", T.INT64, [1, 16]), vi("token_type_ids", T.INT64, [1, 16])]
    return save_model(ctx.path(name), nodes, ins, [vi("y", T.FLOAT, [1, 16, 32])], inits)


def bert_feeds(seed=3):
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(0, 1000, (1, 16)).astype(np.int64),
            "token_type_ids": rng.integers(0, 2, (1, 16)).astype(np.int64)}


def write_test_case(ctx, name, nodes, inputs, outputs, feeds, inits=()):
    """A model and test_data_set folder (input_N.pb, output_N.pb from onnxruntime)."""
    d = ctx.path(name)
    os.makedirs(d, exist_ok=True)
    model = save_model(os.path.join(d, "model.onnx"), nodes, inputs, outputs, inits)
    outs = ort_run(model, feeds)
    for i, (n, a) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "input_%d.pb" % i))
    for i, (n, a) in enumerate(outs.items()):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "output_%d.pb" % i))
    return model, d


# --------------------------------------------------------------------------- groups

def test_parse(ctx):
    c = ctx.c
    model = relu_model(ctx)
    bundle = ctx.path("relu.kiln")
    ctx.compile(model, bundle, "--input-shape", "x:2x4")
    for cmd in COMMANDS:
        for flag in ("--help", "-h"):
            r = ctx.run(cmd, flag)
            c.check(r.rc == 0 and r.out.startswith("usage: kiln %s" % cmd) and "--help" in r.out and r.err == "",
                    "kiln %s %s: usage and options on stdout, exit 0 (%s, %r)" % (cmd, flag, r.describe(), r.err[:200]))
    r = ctx.run("compile", "--help")
    c.check("-o, --output FILE" in r.out and "--max-arena-bytes" in r.out and "link" in r.out,
            "compile --help lists -o, --max-arena-bytes and the steps: %r" % r.out[:600])
    bad = [
        (["compile", model, "-o"], "option -o needs a value"),
        (["compile", model, "--target"], "option --target needs a value"),
        (["compile", model, "-o", "--target", "host"], "option -o needs a value"),
        (["run", bundle, "--threads", "abc"], "--threads takes a whole number, not 'abc'"),
        (["run", bundle, "--threads", "-1"], "--threads must be between 0 and 256"),
        (["run", bundle, "--threads", "3x"], "--threads takes a whole number"),
        (["run", bundle, "--repeat", "99999999999"], "--repeat must be between 1 and 1000000"),
        (["run", bundle, "--repeat", "0"], "--repeat must be between 1 and"),
        (["run", bundle, "--repeat", "99999999999999999999999"], "--repeat must be between 1 and"),
        (["bench", model, "--warmup", "-3"], "--warmup must be between 0 and"),
        (["bench", model, "--profile-runs", ""], "--profile-runs takes a whole number"),
        (["check", model, "--test-data", ctx.work, "-O", "7"], "-O must be between 0 and 3"),
        (["check", model, "--test-data", ctx.work, "--opt-level", "7"], "--opt-level must be between 0 and 3"),
        (["compile", model, "-o", bundle, "-O9"], "-O must be between 0 and 3"),
        (["compile", model, "-o", bundle, "--max-arena-bytes", "lots"], "--max-arena-bytes takes a byte count"),
        (["compile", model, "-o", bundle, "--max-arena-bytes", "0"], "--max-arena-bytes must be at least 1"),
        (["compile", model, "-o", bundle, "--max-arena-bytes", "99999999999T"], "--max-arena-bytes must be at least"),
        (["run", bundle, "--bogus"], "unknown option '--bogus'"),
        (["run", bundle, "--target", "x86_64"], "--target is not an option of kiln run"),
        (["run", bundle, "--profile=1"], "--profile takes no value"),
        (["run", bundle, bundle], "unexpected argument"),
        (["run"], "no model given"),
        (["compile", model], "missing -o"),
        (["check", model], "missing --test-data"),
        (["compile", model, "-o", bundle, "-o", bundle], "-o is given twice"),
    ]
    for argv, want in bad:
        r = ctx.run(*argv)
        why = one_line_failure(r, rc=2)
        c.check(why is None and want in r.err, "kiln %s: want exit 2 and %r in one line (%s): %r" % (
            " ".join(os.path.basename(str(a)) for a in argv), want, why, r.err[:300]))
    # values in every accepted spelling
    for argv in (["compile", model, "-o", bundle, "-O1", "--input-shape=x:2x4"],
                 ["compile", model, "--output=" + bundle, "--opt-level", "0", "--max-arena-bytes", "64G"],
                 ["compile", model, "-o" + bundle, "--max-arena-bytes=1048576", "--", ]):
        r = ctx.run(*argv)
        c.check(r.rc == 0, "kiln %s: accepted (%s %r)" % (" ".join(os.path.basename(a) for a in argv), r.describe(),
                                                           r.err[:200]))
    r = ctx.run("run", bundle, "--threads", "2", "--repeat", "1")
    c.check(r.rc == 0 and "2 threads" in r.out, "run --threads 2 --repeat 1 (%s): %r" % (r.describe(), r.out[-200:]))


def test_check(ctx):
    c = ctx.c
    rng = np.random.default_rng(1)
    feeds = {"a": rng.standard_normal((3, 5)).astype(np.float32), "b": rng.standard_normal((5, 4)).astype(np.float32)}
    model, d = write_test_case(ctx, "case_mm", [helper.make_node("MatMul", ["a", "b"], ["t"]),
                                                helper.make_node("Relu", ["t"], ["u"]),
                                                helper.make_node("Add", ["t", "u"], ["y"])],
                               [vi("a", T.FLOAT, [3, 5]), vi("b", T.FLOAT, [5, 4])], [vi("y", T.FLOAT, [3, 4])], feeds)
    r = ctx.run("check", model, "--test-data", d)
    c.check(r.rc == 0 and re.search(r"^\d+ kernels$", r.out, re.M) and "output y: float32[3x4] matches" in r.out,
            "check: passes with the kernel count line (%s): %r %r" % (r.describe(), r.out[-300:], r.err[-300:]))
    r = ctx.run("check", model, "--test-data", d, "--threads", "2")
    c.check(r.rc == 0, "check --threads 2 (%s): %r" % (r.describe(), r.err[-300:]))
    # the bundle path: the memory plan's arena limit applies (the JIT executor had no plan)
    r = ctx.run("check", model, "--test-data", d, "--max-arena-bytes", "100", "-O0")  # tensors <= 80 bytes, t and u 128
    why = one_line_failure(r)
    c.check(why is None and "arena would be" in r.err and "--max-arena-bytes" in r.err,
            "check through the memory planner: an arena over --max-arena-bytes is refused (%s): %r" % (why, r.err))
    r = ctx.run("check", model, "--test-data", d, "--target", "x86_64")
    c.check(r.rc == 0, "check --target x86_64 runs here (%s): %r" % (r.describe(), r.err[-300:]))
    r = ctx.run("check", model, "--test-data", d, "--target", "aarch64")
    why = one_line_failure(r)
    c.check(why is None and "aarch64" in r.err and "this host" in r.err,
            "check --target aarch64 on this host: one line naming both (%s): %r" % (why, r.err))
    r = ctx.run("check", model, "--test-data", d, "--target", "sparc")
    c.check(one_line_failure(r) is None and "unknown target" in r.err, "check --target sparc: %r" % r.err)
    # a wrong reference is caught (the comparison reads the runtime's outputs)
    onnx.save_tensor(numpy_helper.from_array(np.zeros((3, 4), np.float32) + 7, "y"), os.path.join(d, "output_0.pb"))
    r = ctx.run("check", model, "--test-data", d)
    c.check(r.rc == 1 and "MISMATCH" in r.out,
            "check: a wrong reference is a MISMATCH (%s): %r" % (r.describe(), r.out))


def test_sizes(ctx):
    c = ctx.c
    model = relu_model(ctx)
    r = ctx.run("compile", model, "-o", ctx.path("big.kiln"), "--input-shape", "x:99999999999x4")
    why = one_line_failure(r)
    c.check(why is None and "MiB limit (--max-arena-bytes)" in r.err and "would be" in r.err,
            "a 1.6 TB input is refused at compile time with the figure and the limit (%s): %r" % (why, r.err))
    c.check(not os.path.exists(ctx.path("big.kiln")), "no bundle is left behind")
    conv = save_model(ctx.path("conv_big.onnx"), [helper.make_node("Relu", ["data_0"], ["a"]),
                                                  helper.make_node("Neg", ["data_0"], ["b"]),
                                                  helper.make_node("Add", ["a", "b"], ["y"])],
                      [vi("data_0", T.FLOAT, ["n", 3, 224, 224])], [vi("y", T.FLOAT, ["n", 3, 224, 224])])
    r = ctx.run("compile", conv, "-o", ctx.path("big.kiln"), "--input-shape", "data_0:99999999999x3x224x224")
    why = one_line_failure(r)
    c.check(why is None and "input 'data_0' (float32[99999999999x3x224x224]) would be 57421874999 MiB, more than the "
            "65536 MiB limit (--max-arena-bytes)" in r.err, "the default limit: 64 GiB (%s): %r" % (why, r.err))
    # each tensor (5.5e16 bytes) under the limit, the two intermediates together (the arena) over it
    r = ctx.run("compile", conv, "-o", ctx.path("big.kiln"), "--input-shape", "data_0:99999999999x3x224x224",
                "--max-arena-bytes", "80000T", "-O0")
    why = one_line_failure(r)
    c.check(why is None and re.search(r"the arena would be \d+ MiB, more than the 83886080000 MiB limit "
                                      r"\(--max-arena-bytes\)", r.err),
            "the arena over the limit is refused with both figures (%s): %r" % (why, r.err))
    r = ctx.run("compile", model, "-o", ctx.path("big.kiln"), "--input-shape", "x:4611686018427387904x1")
    why = one_line_failure(r)
    c.check(why is None and "overflows" in r.err and "'x'" in r.err,
            "an input whose byte size overflows int64 is refused naming it (%s): %r" % (why, r.err))
    r = ctx.run("compile", model, "-o", ctx.path("big.kiln"), "--input-shape", "x:99999999999x99999999999")
    why = one_line_failure(r)
    c.check(why is None and "overflows" in r.err, "an element count over int64 is refused (%s): %r" % (why, r.err))
    r = ctx.run("compile", conv, "-o", ctx.path("ok.kiln"), "--max-arena-bytes", "1K", "-O0")
    why = one_line_failure(r)
    c.check(why is None and "limit (--max-arena-bytes)" in r.err,
            "--max-arena-bytes 1K is applied (%s): %r" % (why, r.err))
    r = ctx.run("compile", conv, "-o", ctx.path("ok.kiln"), "--max-arena-bytes", "64M")
    c.check(r.rc == 0, "--max-arena-bytes 64M lets a 0.6 MB arena through (%s): %r" % (r.describe(), r.err))


def zero_models(ctx):
    """[(name, model path, feeds, extra compile args)] of zero-sized cases."""
    cases = []
    f32 = np.float32
    cases.append(("matmul_m0", save_model(ctx.path("z_mm.onnx"), [helper.make_node("MatMul", ["a", "b"], ["y"])],
                                          [vi("a", T.FLOAT, [0, 4]), vi("b", T.FLOAT, [4, 3])],
                                          [vi("y", T.FLOAT, [0, 3])]),
                  {"a": np.zeros((0, 4), f32), "b": np.arange(12, dtype=f32).reshape(4, 3)}, []))
    cases.append(("matmul_k0", save_model(ctx.path("z_mmk.onnx"), [helper.make_node("MatMul", ["a", "b"], ["y"])],
                                          [vi("a", T.FLOAT, [2, 0]), vi("b", T.FLOAT, [0, 3])],
                                          [vi("y", T.FLOAT, [2, 3])]),
                  {"a": np.zeros((2, 0), f32), "b": np.zeros((0, 3), f32)}, []))
    cases.append(("matmul_int_n0", save_model(ctx.path("z_mmi.onnx"), [helper.make_node("MatMul", ["a", "b"], ["y"])],
                                              [vi("a", T.INT32, [2, 3]), vi("b", T.INT32, [3, 0])],
                                              [vi("y", T.INT32, [2, 0])]),
                  {"a": np.ones((2, 3), np.int32), "b": np.zeros((3, 0), np.int32)}, []))
    w = numpy_helper.from_array(np.ones((16, 8), f32), "w")
    cases.append(("gemm_m0", save_model(ctx.path("z_gemm.onnx"), [helper.make_node("Gemm", ["x", "w"], ["y"])],
                                        [vi("x", T.FLOAT, [0, 16])], [vi("y", T.FLOAT, [0, 8])], [w]),
                  {"x": np.zeros((0, 16), f32)}, []))
    cases.append(("add", save_model(ctx.path("z_add.onnx"), [helper.make_node("Add", ["a", "b"], ["y"])],
                                    [vi("a", T.FLOAT, [0, 4]), vi("b", T.FLOAT, [1, 4])], [vi("y", T.FLOAT, [0, 4])]),
                  {"a": np.zeros((0, 4), f32), "b": np.ones((1, 4), f32)}, []))
    cases.append(("reduce_sum", save_model(ctx.path("z_red.onnx"),
                                           [helper.make_node("ReduceSum", ["a", "ax"], ["y"], keepdims=0)],
                                           [vi("a", T.FLOAT, [3, 0])], [vi("y", T.FLOAT, [3])],
                                           [numpy_helper.from_array(np.array([1], np.int64), "ax")]),
                  {"a": np.zeros((3, 0), f32)}, []))
    cw = numpy_helper.from_array(np.ones((8, 3, 3, 3), f32), "w")
    cases.append(("conv_n0", save_model(ctx.path("z_conv.onnx"),
                                        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                                        [vi("x", T.FLOAT, [0, 3, 8, 8])], [vi("y", T.FLOAT, [0, 8, 8, 8])], [cw]),
                  {"x": np.zeros((0, 3, 8, 8), f32)}, []))
    relu = relu_model(ctx)
    cases.append(("relu_input_shape_0x4", relu, {"x": np.zeros((0, 4), f32)}, ["--input-shape", "x:0x4"]))
    return cases


def test_zero(ctx):
    c = ctx.c
    for name, model, feeds, extra in zero_models(ctx):
        bundle = ctx.path("z_%s.kiln" % name)
        r = ctx.run("compile", model, "-o", bundle, *extra)
        if not c.check(r.rc == 0, "zero-sized %s: compiles (%s): %r" % (name, r.describe(), r.err.strip()[:300])):
            continue
        npz_in, npz_out = ctx.path("z_%s_in.npz" % name), ctx.path("z_%s_out.npz" % name)
        np.savez(npz_in, **feeds)
        r = ctx.run("run", bundle, "--inputs", npz_in, "--outputs", npz_out, "--repeat", "1")
        if not c.check(r.rc == 0 and not r.sanitizer_report(), "zero-sized %s: runs (%s): %r" % (
                name, r.describe(), r.err.strip()[:300])):
            continue
        try:
            want = ort_run(model, feeds)
        except Exception as e:  # noqa: BLE001 — onnxruntime refusing a case is the table's bug, said so
            c.check(False, "zero-sized %s: onnxruntime refused it: %s" % (name, e))
            continue
        got = dict(np.load(npz_out))
        ok = set(got) == set(want) and all(close(got[k], want[k]) for k in want)
        c.check(ok, "zero-sized %s: kiln %r, onnxruntime %r" % (
            name, {k: (v.shape, v.dtype.name) for k, v in got.items()},
            {k: (v.shape, v.dtype.name) for k, v in want.items()}))


def test_foreign(ctx):
    c = ctx.c
    if not shutil.which("aarch64-linux-gnu-gcc"):
        c.skip("foreign: no aarch64-linux-gnu-gcc to link an aarch64 bundle (scripts/setup.sh installs it)")
        return
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        c.skip("foreign: this test expects an x86-64 host, this is %s" % platform.machine())
        return
    model = relu_model(ctx)
    bundle = ctx.path("relu_aarch64.kiln")
    if not ctx.compile(model, bundle, "--target", "aarch64"):
        return
    for cmd in (["run", bundle], ["bench", bundle, "--repeat", "1"]):
        r = ctx.run(*cmd)
        why = one_line_failure(r)
        c.check(why is None and "built for aarch64" in r.err and "AArch64" in r.err and "this host is x86_64" in r.err
                and "cannot open shared object" not in r.err,
                "kiln %s of an aarch64 bundle: one line naming both machines (%s): %r" % (cmd[0], why, r.err))


def test_outputs(ctx):
    c = ctx.c
    model = relu_model(ctx)
    os.makedirs(ctx.path("a_folder"), exist_ok=True)
    for out, want in ((ctx.path("a_folder"), "it is a folder"),
                      (ctx.path("no/such/dir/m.kiln"), "No such file or directory"),
                      (ctx.path("relu.onnx") + "/m.kiln", "is not a folder")):
        r = ctx.run("compile", model, "-o", out)
        why = one_line_failure(r)
        c.check(why is None and want in r.err and out.split("/m.kiln")[0] in r.err,
                "-o %s: one line naming the path and why (%r) (%s): %r" % (out, want, why, r.err))
    import stat
    if os.path.exists("/dev/full") and stat.S_ISCHR(os.stat("/dev/full").st_mode):
        r = ctx.run("compile", model, "-o", "/dev/full")
        why = one_line_failure(r)
        c.check(why is None and "No space left on device" in r.err and "/dev/full" in r.err,
                "-o /dev/full: the write error with its reason (%s): %r" % (why, r.err))
        c.check(os.path.exists("/dev/full") and stat.S_ISCHR(os.stat("/dev/full").st_mode),
                "a failed write removes a half-written bundle, never a device")
    else:
        c.skip("outputs: no /dev/full here to test a failing write")
    r = ctx.run("run", ctx.path("no_such.kiln"))
    c.check(one_line_failure(r) is None and "No such file" in r.err, "run of a missing bundle: %r" % r.err)


def test_dumps(ctx):
    c = ctx.c
    model = bert_model(ctx)
    r = ctx.run("compile", "--help")
    steps = r.out.split("steps for --dump-after:")[-1].split()
    c.check(steps[:1] == ["import"] and "link" in steps and "pack" in steps, "the steps are listed: %r" % steps)
    for step in steps:
        for level in ("-O0", "-O1", "-O3"):
            r = ctx.run("compile", model, "-o", ctx.path("dump.kiln"), "--dump-after=" + step, level)
            body = r.out.split("compiled ")[0]
            c.check(r.rc == 0 and body.strip() != "", "--dump-after=%s %s prints something (%s): %r" % (
                step, level, r.describe(), (r.err or r.out)[:200]))
        r = ctx.run("compile", model, "-o", ctx.path("dump.kiln"), "--dump-after=" + step)
        body = r.out.split("compiled ")[0]
        if step == "link":
            c.check("exported functions" in body and re.search(r"^\s+k\d+_\w+\s+\d+ bytes", body, re.M)
                    and "bytes, ELF64" in body, "link dump: size, ELF and the exported kernels: %r" % body[:600])
        if step == "pack":
            c.check("params.bin" in body and '"crc32"' in body and "lib/host.so" in body,
                    "pack dump: the entries and their CRC32s: %r" % body[:600])
        if step == "ranges":
            c.check("input_ids (int64): indexes an axis of 1000: [0, 1000)" in body, "ranges dump: %r" % body)


def test_inspect(ctx):
    c = ctx.c
    r = ctx.run("inspect", ctx.path("missing_model.onnx"))
    why = one_line_failure(r)
    c.check(why is None and r.out == "" and "missing_model.onnx" in r.err,
            "inspect of a missing model: only the error (%s): stdout %r stderr %r" % (why, r.out[:200], r.err))


def test_top5(ctx):
    c = ctx.c
    model = save_model(ctx.path("cls.onnx"), [helper.make_node("Relu", ["x"], ["y"])],
                       [vi("x", T.FLOAT, [1, 1000, 1, 1])], [vi("y", T.FLOAT, [1, 1000, 1, 1])])
    bundle = ctx.path("cls.kiln")
    if not ctx.compile(model, bundle):
        return
    r = ctx.run("run", bundle, "--repeat", "1")
    c.check(r.rc == 0 and re.search(r"top-5:( class \d+ \([^)]*\)){5}", r.out),
            "a [1,1000,1,1] output gets its top-5 classes (%s): %r" % (r.describe(), r.out[-400:]))
    model = save_model(ctx.path("notcls.onnx"), [helper.make_node("Relu", ["x"], ["y"])],
                       [vi("x", T.FLOAT, [2, 1000])], [vi("y", T.FLOAT, [2, 1000])])
    if ctx.compile(model, ctx.path("notcls.kiln")):
        r = ctx.run("run", ctx.path("notcls.kiln"), "--repeat", "1")
        c.check(r.rc == 0 and "top-5" not in r.out, "a [2,1000] output is no classifier: %r" % r.out[-300:])


def test_npz(ctx):
    c = ctx.c
    model = bert_model(ctx)
    bundle = ctx.path("bert.kiln")
    if not ctx.compile(model, bundle):
        return
    feeds = bert_feeds()
    want = ort_run(model, feeds)
    npz_in, npz_out = ctx.path("bert_in.npz"), ctx.path("bert_out.npz")
    for saver in (np.savez, np.savez_compressed):
        saver(npz_in, **feeds)
        if os.path.exists(npz_out):
            os.remove(npz_out)
        r = ctx.run("run", bundle, "--inputs", npz_in, "--outputs", npz_out, "--repeat", "1")
        ok = c.check(r.rc == 0, "run --inputs (%s) (%s): %r" % (saver.__name__, r.describe(), r.err[-300:]))
        if ok:
            got = dict(np.load(npz_out))
            c.check(set(got) == {"y"} and close(got["y"], want["y"]),
                    "run --inputs %s: the outputs match onnxruntime's (max diff %s)" % (
                        saver.__name__, np.abs(got.get("y", np.zeros(1)) - want["y"]).max() if "y" in got else "-"))
            c.check("input input_ids: %s" % npz_in in r.out, "run says where each input came from: %r" % r.out[:300])
    # --input wins over a member of the same name
    other = bert_feeds(seed=11)
    np.save(ctx.path("ids.npy"), other["input_ids"])
    np.savez(npz_in, **feeds)
    r = ctx.run("run", bundle, "--inputs", npz_in, "--input", "input_ids=" + ctx.path("ids.npy"), "--outputs", npz_out,
                "--repeat", "1")
    if c.check(r.rc == 0, "run --inputs with --input (%s): %r" % (r.describe(), r.err[-300:])):
        want2 = ort_run(model, {"input_ids": other["input_ids"], "token_type_ids": feeds["token_type_ids"]})
        c.check(close(np.load(npz_out)["y"], want2["y"]), "--input wins over the .npz member")
    # bench with the same .npz feeds onnxruntime the same data
    r = ctx.run("bench", model, "--inputs", npz_in, "--compare", "onnxruntime", "--repeat", "3", "--warmup", "0",
                "--profile-runs", "0", "--json", "--python", ctx.py)
    try:
        j = json.loads(r.out)
    except ValueError:
        j = None
    c.check(r.rc == 0 and j and all(o.get("within_tolerance") for o in j.get("outputs") or [{}]),
            "bench --inputs --compare onnxruntime: outputs within tolerance (%s): %r %r" % (
                r.describe(), r.out[-300:], r.err[-300:]))
    # mistakes
    np.savez(ctx.path("extra.npz"), nope=np.zeros(3, np.float32), **feeds)
    r = ctx.run("run", bundle, "--inputs", ctx.path("extra.npz"))
    why = one_line_failure(r)
    c.check(why is None and "nope.npy" in r.err, "an .npz member that names no input (%s): %r" % (why, r.err))
    with open(ctx.path("bad.npz"), "wb") as f:
        f.write(b"not a zip file at all" * 10)
    r = ctx.run("run", bundle, "--inputs", ctx.path("bad.npz"))
    why = one_line_failure(r)
    c.check(why is None and "bad.npz" in r.err, "a broken .npz (%s): %r" % (why, r.err))
    np.savez(ctx.path("wrongtype.npz"), input_ids=feeds["input_ids"].astype(np.float32),
             token_type_ids=feeds["token_type_ids"])
    r = ctx.run("run", bundle, "--inputs", ctx.path("wrongtype.npz"))
    why = one_line_failure(r)
    c.check(why is None and "input_ids" in r.err, "an .npz member of the wrong dtype (%s): %r" % (why, r.err))
    r = ctx.run("run", bundle, "--inputs", ctx.path("no_such.npz"))
    c.check(one_line_failure(r) is None and "no_such.npz" in r.err, "a missing .npz: %r" % r.err)


def manifest_of(bundle):
    with tarfile.open(bundle) as t:
        return json.loads(t.extractfile("manifest.json").read())


def rewrite_manifest(src, dst, edit):
    with tarfile.open(src) as t:
        members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
    with tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as out:
        for m, data in members:
            if m.name == "manifest.json":
                man = json.loads(data)
                edit(man)
                data = json.dumps(man).encode()
                m.size = len(data)
            out.addfile(m, io.BytesIO(data))


def test_ranges(ctx):
    c = ctx.c
    model = bert_model(ctx)
    bundle = ctx.path("bert_r.kiln")
    if not ctx.compile(model, bundle):
        return
    man = manifest_of(bundle)
    ins = {i["name"]: i for i in man["inputs"]}
    c.check(ins["input_ids"].get("range") == [0, 1000] and ins["token_type_ids"].get("range") == [0, 2],
            "the manifest records each input's range: %r" % man["inputs"])
    r = ctx.run("run", bundle, "--repeat", "1", "--output-dir", ctx.path("bert_r_out"))
    c.check(r.rc == 0 and "in [0, 1000)" in r.out and "in [0, 2)" in r.out,
            "run invents token ids within the tables (%s): %r" % (r.describe(), r.out[:400]))
    r = ctx.run("bench", model, "--compare", "onnxruntime", "--repeat", "3", "--python", ctx.py, timeout=300)
    c.check(r.rc == 0 and "output y: max abs diff" in r.out and "beyond rtol" not in r.out and "warning" not in r.err,
            "bench --compare onnxruntime with no input files: onnxruntime accepts the invented ids and agrees "
            "(%s): %r %r" % (r.describe(), r.out[-500:], r.err[-500:]))
    r = ctx.run("bench", model, "--compare", "onnxruntime", "--repeat", "3", "--json", "--profile-runs", "0",
                "--python", ctx.py, timeout=300)
    try:
        j = json.loads(r.out)
    except ValueError:
        j = None
    c.check(r.rc == 0 and j and j.get("max_abs_diff") is not None and j["max_abs_diff"] < 1e-3,
            "bench --json: compared, max abs diff small (%s): %r" % (r.describe(), r.out[-300:]))
    # an index computed from the input: no invented data is valid
    derived = bert_model(ctx, "bert_derived.onnx", [helper.make_node("Add", ["input_ids", "one"], ["ids"])])
    dbundle = ctx.path("bert_derived.kiln")
    if ctx.compile(derived, dbundle):
        ins = {i["name"]: i for i in manifest_of(dbundle)["inputs"]}
        c.check(ins["input_ids"].get("random") == "none" and "range" not in ins["input_ids"],
                "an input computed into an index is marked random: none: %r" % ins["input_ids"])
        r = ctx.run("run", dbundle, "--repeat", "1")
        why = one_line_failure(r)
        c.check(why is None and "input_ids" in r.err and "--input input_ids=FILE.npy" in r.err and "--inputs" in r.err,
                "run refuses to invent it, naming the input and the options (%s): %r" % (why, r.err))
        feeds = bert_feeds()
        feeds["input_ids"] = np.minimum(feeds["input_ids"], 998)
        np.savez(ctx.path("derived_in.npz"), **feeds)
        r = ctx.run("run", dbundle, "--repeat", "1", "--inputs", ctx.path("derived_in.npz"), "--outputs",
                    ctx.path("derived_out.npz"))
        if c.check(r.rc == 0, "with given data it runs (%s): %r" % (r.describe(), r.err[-300:])):
            c.check(close(np.load(ctx.path("derived_out.npz"))["y"], ort_run(derived, feeds)["y"]),
                    "and matches onnxruntime")
    # a narrowing cast keeps the range; an input that indexes nothing keeps [0, 10)
    cast = bert_model(ctx, "bert_cast.onnx", [helper.make_node("Cast", ["input_ids"], ["ids"], to=T.INT32)])
    cbundle = ctx.path("bert_cast.kiln")
    if ctx.compile(cast, cbundle):
        ins = {i["name"]: i for i in manifest_of(cbundle)["inputs"]}
        c.check(ins["input_ids"].get("range") == [0, 1000], "a cast to int32 keeps the range: %r" % ins["input_ids"])
    plain = save_model(ctx.path("intadd.onnx"), [helper.make_node("Add", ["a", "a"], ["y"])],
                       [vi("a", T.INT64, [64])], [vi("y", T.INT64, [64])])
    pbundle = ctx.path("intadd.kiln")
    if ctx.compile(plain, pbundle):
        ins = manifest_of(pbundle)["inputs"]
        c.check("range" not in ins[0] and "random" not in ins[0], "an integer that indexes nothing: no range: %r" % ins)
        r = ctx.run("run", pbundle, "--repeat", "1", "--output-dir", ctx.path("intadd_out"))
        if c.check(r.rc == 0, "intadd runs (%s)" % r.describe()):
            y = np.load(os.path.join(ctx.path("intadd_out"), "y.npy"))
            c.check(y.min() >= 0 and y.max() <= 18 and len(set(y.tolist())) > 3, "its data is in [0, 10): %r" % y)


def test_range_paths(ctx):
    """The range analysis through each op that moves values, and each index operand."""
    c = ctx.c
    f32, i64 = np.float32, np.int64
    consts = {"t57": np.zeros((5, 7), f32), "t463": np.zeros((4, 6, 3), f32), "t39": np.zeros((3, 9), f32),
              "t1000": np.zeros((1000, 2), f32), "t50": np.zeros((50, 2), f32), "pair": np.array([0, 1], i64),
              "shape32": np.array([3, 2], i64), "z": np.array([0], i64), "two": np.array([2], i64),
              "one": np.array([1], i64), "flat": np.array([-1], i64), "upd": np.ones((3, 2), f32)}
    inits = [numpy_helper.from_array(v, k) for k, v in consts.items()]
    nodes = [
        # a: reshape, transpose, slice, concat with a constant, then the axis-1 index of a [5, 7] table
        helper.make_node("Reshape", ["a", "shape32"], ["a1"]),
        helper.make_node("Transpose", ["a1"], ["a2"], perm=[1, 0]),
        helper.make_node("Slice", ["a2", "z", "two", "one"], ["a3"]),
        helper.make_node("Reshape", ["a3", "flat"], ["a5"]),
        helper.make_node("Concat", ["a5", "pair"], ["a4"], axis=0),
        helper.make_node("Gather", ["t57", "a4"], ["ya"], axis=1),
        # b: the index tuples of a GatherND on [4, 6, 3] (pairs: axes of 4 and 6)
        helper.make_node("GatherND", ["t463", "b"], ["yb"]),
        # c: the index of a ScatterElements on [3, 9] along axis 1, and a cast to int32 on the way
        helper.make_node("Cast", ["c"], ["c1"], to=T.INT32),
        helper.make_node("ScatterElements", ["t39", "c1", "upd"], ["yc"], axis=1),
        # d: two tables, the smaller wins; an arithmetic use that reaches no index does not matter
        helper.make_node("Gather", ["t1000", "d"], ["yd1"]), helper.make_node("Gather", ["t50", "d"], ["yd2"]),
        helper.make_node("Mul", ["d", "d"], ["yd3"]),
        # e: multiplied, then an index
        helper.make_node("Mul", ["e", "e"], ["e2"]), helper.make_node("Gather", ["t1000", "e2"], ["ye"]),
        # f: a float input
        helper.make_node("Relu", ["f"], ["yf"]),
    ]
    ins = [vi("a", T.INT64, [6]), vi("b", T.INT64, [3, 2]), vi("c", T.INT64, [3, 2]), vi("d", T.INT64, [4]),
           vi("e", T.INT64, [4]), vi("f", T.FLOAT, [4])]
    outs = [vi(n, T.FLOAT, None) for n in ("ya", "yb", "yc", "yd1", "yd2", "ye", "yf")] + [vi("yd3", T.INT64, None)]
    model = save_model(ctx.path("paths.onnx"), nodes, ins, outs, inits)
    r = ctx.run("compile", model, "-o", ctx.path("paths.kiln"), "--dump-after=ranges")
    want = {"a": "indexes an axis of 7: [0, 7)", "b": "indexes an axis of 4: [0, 4)",
            "c": "indexes an axis of 9: [0, 9)", "d": "indexes an axis of 50: [0, 50)",
            "e": "computed into an index: only given data", "f": "reaches no index"}
    for name, text in want.items():
        c.check(r.rc == 0 and re.search(r"^input %s \(\w+\): %s$" % (name, re.escape(text)), r.out, re.M),
                "range of %s: %r (%s): %r" % (name, text, r.describe(), (r.out or r.err)[:600]))


def test_manifest(ctx):
    c = ctx.c
    model = bert_model(ctx)
    bundle = ctx.path("bert_m.kiln")
    if not ctx.compile(model, bundle):
        return

    def on(name, **kv):
        def edit(m):
            for i in m["inputs"]:
                if i["name"] == name:
                    i.pop("range", None)
                    i.update(kv)
        return edit

    bad = {
        "range_reversed": (on("input_ids", range=[5, 2]), "lo is above hi"),
        "range_one_number": (on("input_ids", range=[5]), "two integers"),
        "range_string": (on("input_ids", range="0-10"), "two integers"),
        "range_fraction": (on("input_ids", range=[0, 2.5]), "integer"),
        "range_huge": (on("input_ids", range=[0, 1e300]), "out of range"),
        "random_other": (on("input_ids", random="uniform"), "\"none\""),
        "random_number": (on("input_ids", random=0), "\"none\""),
        "both": (on("input_ids", range=[0, 3], random="none"), "both"),
    }

    def float_range(m):
        m["outputs"][0]["range"] = [0, 3]  # unknown key on an output: ignored
        m["inputs"].append({"name": "f", "dtype": "float32", "shape": [1], "range": [0, 3]})
    bad["range_on_float"] = (float_range, "integer inputs only")
    for name, (edit, want) in bad.items():
        dst = ctx.path("m_%s.kiln" % name)
        rewrite_manifest(bundle, dst, edit)
        r = ctx.run("run", dst, "--repeat", "1")
        why = one_line_failure(r)
        c.check(why is None and "FORMAT" in r.err and want in r.err,
                "manifest %s: FORMAT naming the field (%r) (%s): %r" % (name, want, why, r.err))
    # valid edits: a narrower range is used, "random": "none" refuses
    dst = ctx.path("m_narrow.kiln")
    rewrite_manifest(bundle, dst, on("input_ids", range=[3, 5]))
    r = ctx.run("run", dst, "--repeat", "1")
    c.check(r.rc == 0 and "input_ids: seeded random int64 data in [3, 5)" in r.out,
            "a recorded range [3, 5) is what run draws from (%s): %r" % (r.describe(), r.out[:300]))
    dst = ctx.path("m_none.kiln")
    rewrite_manifest(bundle, dst, on("token_type_ids", random="none"))
    r = ctx.run("run", dst, "--repeat", "1")
    c.check(one_line_failure(r) is None and "token_type_ids" in r.err, "random: none refuses (%r)" % r.err)


GROUPS = [("parse", test_parse), ("check", test_check), ("sizes", test_sizes), ("zero", test_zero),
          ("foreign", test_foreign), ("outputs", test_outputs), ("dumps", test_dumps), ("inspect", test_inspect),
          ("top5", test_top5), ("npz", test_npz), ("ranges", test_ranges), ("range_paths", test_range_paths),
          ("manifest", test_manifest)]


def main():
    args = util.parse_args(__doc__)
    checks = util.Checks("test_cli")
    work = tempfile.mkdtemp(prefix="kiln_cli_")
    try:
        ctx = Ctx(args, checks, work)
        for name, fn in GROUPS:
            if args.filter and args.filter not in name:
                continue
            before = checks.failed
            fn(ctx)
            print("%s %s" % ("PASS" if checks.failed == before else "FAIL", name), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    checks.finish()


if __name__ == "__main__":
    main()
