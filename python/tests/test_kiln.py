"""test_kiln.py — the `kiln` Python package (python/), as `pip install ./python` installs it.

Run by python/tests/run.sh (ctest python_package) in a fresh virtualenv; KILN_CLI names
the `kiln` command of the same build, whose messages the errors are compared with (the
tests that need it are skipped without it). The models are made here with onnx.helper,
each small enough to compile in well under a second:

  light    conv → relu → global pool → flatten → matmul → add → softmax on x[1, 3, 16, 16]
  gather   an embedding lookup (int64 ids) plus a float input: two inputs, two dtypes
  dynamic  x[N, 4] @ W → relu, N bound with input_shapes
  cast     Cast float32 → bfloat16 and int4 → float32 (ml_dtypes' types)
  made-up  an op of a domain nobody defines (kiln rejects it)

Tolerances against ONNX Runtime: float32 outputs within rtol 1e-4, atol 1e-5 (kiln's
kernels reassociate sums and may contract into FMAs); integer and gathered values exactly.
"""
import gc
import os
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln

KILN_CLI = os.environ.get("KILN_CLI")
RTOL, ATOL = 1e-4, 1e-5
need_cli = pytest.mark.skipif(not KILN_CLI, reason="KILN_CLI (the kiln command to compare messages with) not set")


def save_model(path, nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    g = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 10 if max(v for d, v in opsets if d == "") >= 21 else 8
    onnx.save(m, path)
    return path


def f32(name, a):
    return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    rng = np.random.default_rng(5)
    m = {}
    m["light"] = save_model(
        str(d / "light.onnx"),
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["p"]),
         helper.make_node("Flatten", ["p"], ["f"], axis=1),
         helper.make_node("MatMul", ["f", "m"], ["mm"]),
         helper.make_node("Add", ["mm", "bias"], ["logits"]),
         helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        [f32("w", rng.standard_normal((8, 3, 3, 3)) * 0.3), f32("b", rng.uniform(-0.1, 0.1, 8)),
         f32("m", rng.standard_normal((8, 10)) * 0.5), f32("bias", rng.uniform(-0.1, 0.1, 10))])
    m["gather"] = save_model(
        str(d / "gather.onnx"),
        [helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
         helper.make_node("Add", ["emb", "pos"], ["out"])],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3]),
         helper.make_tensor_value_info("pos", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3, 4])],
        [f32("table", rng.standard_normal((10, 4)))])
    m["dynamic"] = save_model(
        str(d / "dynamic.onnx"),
        [helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 3])],
        [f32("W", rng.standard_normal((4, 3)))])
    m["cast"] = save_model(
        str(d / "cast.onnx"),
        [helper.make_node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16),
         helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("q", TensorProto.INT4, [6])],
        [helper.make_tensor_value_info("xb", TensorProto.BFLOAT16, [6]),
         helper.make_tensor_value_info("qf", TensorProto.FLOAT, [6])],
        opsets=(("", 21),))
    m["made-up"] = save_model(
        str(d / "made_up.onnx"),
        [helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example.made_up")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        opsets=(("", 17), ("com.example.made_up", 1)))
    return m


@pytest.fixture(scope="module")
def light(models):
    return kiln.compile(models["light"])


def ort_run(path, feed):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))


def cli(*args):
    """The kiln command's exit status and stderr."""
    r = subprocess.run([KILN_CLI] + [str(a) for a in args], capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def test_installed_package():
    # the package under test is the installed one, not python/kiln of the checkout
    assert "site-packages" in kiln.__file__, kiln.__file__
    assert kiln.__version__ and issubclass(kiln.KilnError, RuntimeError)


def test_light_model_against_onnxruntime(models, light):
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    got = light.run({"x": x})
    want = ort_run(models["light"], {"x": x})
    assert list(got) == ["probs"] and got["probs"].dtype == np.float32 and got["probs"].shape == (1, 10)
    np.testing.assert_allclose(got["probs"], want["probs"], rtol=RTOL, atol=ATOL)


def test_info(light):
    (x,), (probs,) = light.inputs, light.outputs
    assert isinstance(x, kiln.TensorInfo)
    assert (x.name, x.shape, x.dtype) == ("x", (1, 3, 16, 16), np.dtype(np.float32))
    assert tuple(probs) == ("probs", (1, 10), np.dtype(np.float32))
    assert light.name == "light.onnx" and light.target == "host" and light.kernel_count >= 1
    stats = light.compile_stats
    assert stats["kernels"] >= 1 and stats["flops"] > 0 and stats["compile_s"] > 0


def test_two_inputs_int64_exact(models):
    b = kiln.compile(models["gather"])
    rng = np.random.default_rng(2)
    feed = {"ids": rng.integers(0, 10, (2, 3)).astype(np.int64), "pos": rng.standard_normal((2, 3, 4)).astype(np.float32)}
    got, want = b.run(feed), ort_run(models["gather"], feed)
    np.testing.assert_array_equal(got["out"], want["out"])  # a gather and one add: exact


def test_data_dependent_output_shape(tmp_path):
    """NonMaxSuppression's selected boxes: run() returns them at this run's shape (the
    bundle's output info gives the bound), as ONNX Runtime does."""
    path = save_model(str(tmp_path / "nms.onnx"),
                      [helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou"], ["sel"])],
                      [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 20, 4]),
                       helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 20])],
                      [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])],
                      [numpy_helper.from_array(np.array([5], np.int64), "limit"), f32("iou", [0.5])])
    b = kiln.compile(path)
    assert b.outputs[0].shape == (2 * 5, 3)  # the bound: batches x classes x the limit
    rng = np.random.default_rng(8)
    for _ in range(2):
        p = rng.uniform(0, 50, (1, 20, 2))
        feed = {"boxes": np.concatenate([p, p + rng.uniform(1, 20, (1, 20, 2))], -1).astype(np.float32),
                "scores": rng.uniform(0, 1, (1, 2, 20)).astype(np.float32)}
        got, want = b.run(feed)["sel"], ort_run(path, feed)["sel"]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_input_shapes_bind_symbolic_dims(models):
    b = kiln.compile(models["dynamic"], input_shapes={"x": (5, 4)})
    assert b.inputs[0].shape == (5, 4) and b.outputs[0].shape == (5, 3)
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(b.run({"x": x})["z"], ort_run(models["dynamic"], {"x": x})["z"], rtol=RTOL, atol=ATOL)
    assert kiln.compile(models["dynamic"]).inputs[0].shape == (1, 4)  # unbound: 1, as in the CLI
    assert kiln.compile(models["dynamic"], input_shapes={"x": np.array([3, 4])}).inputs[0].shape == (3, 4)
    with pytest.raises(TypeError, match="not an int"):
        kiln.compile(models["dynamic"], input_shapes={"x": (2.5, 4)})
    with pytest.raises(ValueError, match="bad dimension"):
        kiln.compile(models["dynamic"], input_shapes={"x": (-1, 4)})


def test_opt_levels_and_target(models):
    x = np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = ort_run(models["light"], {"x": x})["probs"]
    for level in range(4):
        b = kiln.compile(models["light"], opt_level=level, target="x86_64")
        assert b.target == "x86_64"
        np.testing.assert_allclose(b.run({"x": x})["probs"], want, rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match="opt_level"):
        kiln.compile(models["light"], opt_level=4)


def test_inputs_converted_or_copied(light):
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = light.run({"x": x})["probs"]
    fortran = np.asfortranarray(x)  # not C-contiguous: copied first
    strided = np.repeat(x, 2, axis=3)[..., ::2]
    assert not fortran.flags.c_contiguous and not strided.flags.c_contiguous
    np.testing.assert_array_equal(light.run({"x": fortran})["probs"], want)
    np.testing.assert_array_equal(light.run({"x": strided})["probs"], want)
    np.testing.assert_array_equal(light.run({"x": x.tolist()})["probs"], want)  # a list: the input's dtype
    out = light.run({"x": x})["probs"]
    out[...] = 0  # a new array: the next run does not write into it
    np.testing.assert_array_equal(light.run({"x": x})["probs"], want)


def test_narrow_dtypes(models):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    b = kiln.compile(models["cast"])
    assert [i.dtype for i in b.inputs] == [np.dtype(np.float32), np.dtype(ml_dtypes.int4)]
    x = np.array([1.0, -2.5, 3.14159, 1e-3, -7.0, 65504.0], np.float32)
    q = np.array([-8, -3, -1, 0, 5, 7], ml_dtypes.int4)
    got = b.run({"x": x, "q": q})
    assert got["xb"].dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got["xb"].astype(np.float32), x.astype(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_array_equal(got["qf"], q.astype(np.float32))  # negative int4: sign-extended for kiln


def test_save_load_round_trip(tmp_path, light):
    x = np.random.default_rng(6).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = light.run({"x": x})["probs"]
    path = tmp_path / "light.kiln"
    light.save(path)
    assert path.read_bytes() == light.to_bytes() and path.stat().st_size == light.size
    for b in (kiln.load(path), kiln.Bundle.load(str(path), threads=1), kiln.Bundle.from_bytes(light.to_bytes()),
              pickle.loads(pickle.dumps(light))):
        assert b.compile_stats is None and b.inputs == light.inputs and b.outputs == light.outputs
        np.testing.assert_array_equal(b.run({"x": x})["probs"], want)


@need_cli
def test_same_bundle_as_the_cli(tmp_path, models):
    path = tmp_path / "cli.kiln"
    rc, err = cli("compile", models["dynamic"], "-o", path, "--input-shape", "x:5x4", "-O3")
    assert rc == 0, err
    assert path.read_bytes() == kiln.compile(models["dynamic"], opt_level=3, input_shapes={"x": (5, 4)}).to_bytes()
    light = tmp_path / "light.kiln"
    kiln.compile(models["light"]).save(light)
    assert cli("run", light)[0] == 0  # the CLI runs what Python saved


def test_wrong_dtype(tmp_path, light):
    x = np.zeros((1, 3, 16, 16), np.float64)
    with pytest.raises(TypeError) as e:
        light.run({"x": x})
    assert str(e.value) == "set_input: input 'x' is float32, got float64"
    with pytest.raises(TypeError, match="complex128, which kiln has no dtype for"):
        light.run({"x": x.astype(np.complex128)})
    if KILN_CLI:
        bundle, npy = tmp_path / "l.kiln", tmp_path / "x.npy"
        light.save(bundle)
        np.save(npy, x)
        assert cli("run", bundle, "--input", "x=%s" % npy) == (1, "kiln run: input x: " + str(e.value))


def test_wrong_shape(tmp_path, light):
    x = np.zeros((1, 3, 16, 15), np.float32)
    with pytest.raises(ValueError) as e:
        light.run({"x": x})
    assert str(e.value) == "set_input: input 'x' has shape [1, 3, 16, 16], got [1, 3, 16, 15]"
    if KILN_CLI:
        bundle, npy = tmp_path / "l.kiln", tmp_path / "x.npy"
        light.save(bundle)
        np.save(npy, x)
        assert cli("run", bundle, "--input", "x=%s" % npy) == (1, "kiln run: input x: " + str(e.value))


def test_unknown_and_missing_inputs(tmp_path, light):
    x = np.zeros((1, 3, 16, 16), np.float32)
    with pytest.raises(kiln.KilnError) as e:
        light.run({"x": x, "y": x})
    assert str(e.value) == "set_input: the model has no input named 'y' (its inputs: 'x')"
    if KILN_CLI:  # the CLI says it about its --input option; the runtime's words are the same
        bundle, npy = tmp_path / "l.kiln", tmp_path / "x.npy"
        light.save(bundle)
        np.save(npy, x)
        rc, err = cli("run", bundle, "--input", "y=%s" % npy)
        assert rc == 1 and err.endswith("the model has no input named 'y'") and "the model has no input named 'y'" in str(e.value)
    with pytest.raises(ValueError, match="input 'x' is missing"):
        light.run({})
    with pytest.raises(TypeError, match="input names are str"):
        light.run({1: x})
    with pytest.raises(TypeError, match="dict"):
        light.run([x])


@need_cli
def test_compile_errors_are_the_clis(tmp_path, models):
    cases = [str(tmp_path / "missing.onnx"), models["made-up"]]
    for path in cases:
        with pytest.raises(kiln.KilnError) as e:
            kiln.compile(path)
        assert cli("compile", path, "-o", tmp_path / "out.kiln") == (1, "kiln compile: " + str(e.value))
    assert "missing.onnx" in str(e.value) or "Frobnicate" in str(e.value)
    with pytest.raises(kiln.KilnError, match="Frobnicate"):
        kiln.compile(models["made-up"])


@need_cli
def test_load_errors_are_the_clis(tmp_path):
    missing, junk = tmp_path / "missing.kiln", tmp_path / "junk.kiln"
    junk.write_bytes(b"not a bundle" * 100)
    for path in (missing, junk):
        with pytest.raises(kiln.KilnError) as e:
            kiln.load(path)
        assert cli("run", path) == (1, "kiln run: " + str(e.value))
    with pytest.raises(kiln.KilnError):
        kiln.Bundle.from_bytes(b"not a bundle")


def test_cross_target_saves_but_does_not_run(tmp_path, models):
    b = kiln.compile(models["dynamic"], target="aarch64")
    b.save(tmp_path / "a.kiln")
    assert (tmp_path / "a.kiln").stat().st_size == b.size > 0
    with pytest.raises(kiln.KilnError):
        b.run({"x": np.zeros((1, 4), np.float32)})


def test_threads(light):
    x = np.random.default_rng(7).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = light.run({"x": x})["probs"]
    for n in (1, 2, 3):
        light.threads = n
        assert light.threads == n
        np.testing.assert_array_equal(light.run({"x": x})["probs"], want)
    for bad, exc in ((-1, ValueError), (kiln._kiln.max_threads + 1, ValueError), ("2", TypeError)):
        with pytest.raises(exc):
            light.threads = bad
    light.threads = None  # every online core
    assert light.threads >= 1


def test_concurrent_runs_take_turns(light):
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(4)]
    want = [light.run({"x": x})["probs"] for x in xs]
    bad = []

    def worker(k):
        for _ in range(50):
            if not np.array_equal(light.run({"x": xs[k]})["probs"], want[k]):
                bad.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_gil_released_while_compiling(models):
    # while another thread is inside kiln.compile, this one keeps running: it wakes
    # from its 1 ms sleeps within the middle of every compile (with the GIL held
    # there, it could not wake until the compile returned)
    windows, ticks, done = [], [], threading.Event()

    def compile_them():
        for _ in range(3):
            t0 = time.perf_counter()
            kiln.compile(models["light"], opt_level=3)
            windows.append((t0, time.perf_counter()))
        done.set()

    t = threading.Thread(target=compile_them)
    t.start()
    while not done.is_set():
        time.sleep(0.001)
        ticks.append(time.perf_counter())
    t.join()
    for start, end in windows:
        a, b = start + 0.2 * (end - start), end - 0.2 * (end - start)
        assert any(a <= x <= b for x in ticks), "no tick in the middle of a %.3f s compile" % (end - start)


@pytest.mark.parametrize("source", ["onnx", "kiln", "bundle"])
def test_bench(tmp_path, models, light, source):
    model = {"onnx": models["light"], "kiln": tmp_path / "light.kiln", "bundle": light}[source]
    if source == "kiln":
        light.save(model)
    r = kiln.bench(model, repeat=3, warmup=1, profile_runs=2, threads=1)
    assert 0 < r["kiln_ms_min"] <= r["kiln_ms_median"] <= r["kiln_ms_p90"] and r["kiln_ms_mean"] > 0
    assert (r["repeat"], r["warmup"], r["profile_runs"], r["threads"]) == (3, 1, 2, 1)
    assert r["format"] == ("onnx" if source == "onnx" else "kiln")
    assert (r["compile_s"] is not None) == (source == "onnx") and (r["opt_level"] == 2 if source == "onnx" else True)
    assert all(r[k] is None for k in ("ort_ms_median", "ort_ms_p90", "ort_ms_min", "ratio", "max_abs_diff", "outputs"))
    assert r["flops"] > 0 and r["peak_gflops"] > 0 and r["kernels"] and all(k["ms"] >= 0 for k in r["kernels"])
    if KILN_CLI:  # the same fields as kiln bench --json
        import json
        out = subprocess.run([KILN_CLI, "bench", models["light"], "--json", "--repeat", "3", "--warmup", "1",
                              "--profile-runs", "2", "--threads", "1"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert sorted(json.loads(out.stdout)) == sorted(r)


def test_bench_invents_missing_inputs(models):
    b = kiln.compile(models["gather"])
    r = kiln.bench(b, repeat=2, warmup=0, profile_runs=0)  # ids drawn from [0, 10): the table's rows
    assert r["kiln_ms_median"] > 0 and r["kernels"] == []
    pos = np.ones((2, 3, 4), np.float32)
    assert kiln.bench(b, {"pos": pos}, repeat=2)["repeat"] == 2
    with pytest.raises(ValueError, match="repeat"):
        kiln.bench(b, repeat=0)
    with pytest.raises(ValueError, match="input_shapes applies to .onnx models"):
        kiln.bench(b, input_shapes={"ids": (2, 3)})


def test_bundles_and_runs_free_what_they_hold(light):
    # a Bundle that goes away closes its model: its pool's threads end and the memfd
    # its kernels were loaded from is closed (runtime/library.c); runs keep no objects
    data, x = light.to_bytes(), np.zeros((1, 3, 16, 16), np.float32)

    def counts():
        gc.collect()
        return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))

    def cycle():
        b = kiln.Bundle.from_bytes(data, threads=2)
        b.run({"x": x})
        return b

    cycle()
    before = counts()
    kept = [cycle() for _ in range(5)]
    assert counts()[0] >= before[0] + 5 and counts()[1] >= before[1] + 5  # what is counted: one memfd, one worker
    del kept
    for _ in range(100):
        cycle()
    assert counts() == before
    for _ in range(50):
        light.run({"x": x})
    blocks = sys.getallocatedblocks()
    for _ in range(1000):
        light.run({"x": x})
    assert sys.getallocatedblocks() - blocks < 100
