"""test_cuda.py — the CUDA target (issue 20) without a GPU, and with one when there is.

Without a GPU (CI has none), every part but the launch is checked:
1. Shapes that stress the GPU templates (tiles that do not divide the output,
   strides, padding, 1x1 / 3x3 / 7x7 kernels, a batch of matmuls, one row, grouped
   convs, a small grouped conv that keeps the default schedule, convs split over
   input-channel slices (split-K)…), built here with onnx.helper,
   with ONNX Runtime's outputs as the reference: `kiln check --target cuda-sm90
   --emulate --ptxas` runs the GPU loop IR launch by launch in the interpreter's
   emulation (blocks, threads, barriers and shared memory checked for races and
   bounds) and compares (rtol 1e-3, atol 1e-5), and the PTX must assemble.
2. The small e2e models of models/gen_models.py the same way (transformer, lstm,
   gru, misc, concats, cnn, mlp).
3. The benchmark models (ResNet-50, MobileNetV2, the BERT-like encoder): compiled
   for `cuda` (sm_80 PTX), whose PTX ptxas must accept for sm_80 and sm_90, and for
   `cuda-sm90`, for sm_90 (too big to emulate in a test's time); the light models
   of test_e2e.py for `cuda`, sm_80 and sm_90.
4. Tensor cores (`--gpu-math tf32`): matmuls (ragged, batched, broadcast, rank 4, a
   Gemm with bias and relu, a small model) whose loop IR must hold the WMMA template
   (or, for a matmul too small for a 16-row tile, not), emulated against two
   references: numpy with the inputs rounded to TF32 (cvt.rna) and summed in f64, at
   `kiln check`'s own tolerance (rtol 1e-3, atol 1e-5; the emulator rounds as the GPU
   does, only the summation order differs), which the fp32 reference fails (the
   rounding happened); and ONNX Runtime's fp32 outputs within TF32's error, --atol-scale
   1e-3·sqrt(K) of the largest output. The PTX (wmma.*.m16n16k8 tf32) must assemble
   for sm_80 and sm_90; the BERT-like encoder's PTX too, and the encoder at batch 1
   emulated against ONNX Runtime within 1% of its largest output.
ptxas is the CUDA toolkit's (/usr/local/cuda/bin/ptxas or $PTXAS); without it the
PTX checks are reported skipped, never passed. The node suite runs the same way in
ctest conformance_cuda.
With a GPU (libcuda.so.1 loads and a device answers), part 1 and 2's models also
run on it through the runtime (`kiln check --target cuda-sm90`); without one that
part is skipped and says why.
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import util  # noqa: E402
import gen_models  # noqa: E402


def is_sanitizer_build(kiln):
    """An ASan build of kiln compiles at -O0 under ASan: the large models are the release build's job."""
    with open(kiln, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"AddressSanitizer" in data


def find_ptxas():
    for p in (os.environ.get("PTXAS"), "/usr/local/cuda/bin/ptxas", os.path.join(ROOT, ".venv", "cuda", "bin", "ptxas"),
              shutil.which("ptxas")):
        if p and os.path.exists(p):
            return p
    return None


def gpu_here():
    """None when a CUDA device answers, else why not."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return "no CUDA driver (%s)" % e
    if cu.cuInit(0) != 0:
        return "cuInit failed: no usable GPU"
    n = ctypes.c_int(0)
    if cu.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
        return "the CUDA driver sees no device"
    return None


def conv_case(name, n, c, h, w, m, k, stride=1, pad=0, group=1, bias=True, relu=True):
    rng = np.random.default_rng(len(name))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])
    W = numpy_helper.from_array(rng.standard_normal((m, c // group, k, k)).astype(np.float32) * 0.2, "W")
    inits = [W]
    ins = ["x", "W"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "B"))
        ins.append("B")
    nodes = [helper.make_node("Conv", ins, ["c"], strides=[stride, stride], pads=[pad] * 4, group=group)]
    out = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
        out = "y"
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    y = helper.make_tensor_value_info(out, TensorProto.FLOAT, [n, m, oh, ow])
    g = helper.make_graph(nodes, name, [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), {"x": rng.uniform(-1, 1, (n, c, h, w)).astype(np.float32)}


def matmul_case(name, a_shape, b_shape, const_b=True):
    rng = np.random.default_rng(len(name) + 100)
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape)
    out_shape = list(np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    feeds = {"a": rng.uniform(-1, 1, a_shape).astype(np.float32)}
    if const_b:
        inits = [numpy_helper.from_array(rng.standard_normal(b_shape).astype(np.float32), "b")]
        inputs = [a]
    else:
        inits = []
        inputs = [a, helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)]
        feeds["b"] = rng.uniform(-1, 1, b_shape).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], name, inputs, [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), feeds


def reduce_case(name, op, shape, out_shape, dtype=TensorProto.FLOAT, axes=None, extra=(), **attrs):
    """One reduction-like node on x (sched_gpu_reduce.c's cases): axes as an input (opset 18)."""
    rng = np.random.default_rng(len(name) + 200)
    ins, inits = ["x"], []
    if axes is not None:
        ins.append("axes")
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    for e in extra:  # scale, bias of a layer norm: one per element of the last axis
        ins.append(e)
        inits.append(numpy_helper.from_array(rng.standard_normal(shape[-1]).astype(np.float32), e))
    g = helper.make_graph([helper.make_node(op, ins, ["y"], **attrs)], name, [helper.make_tensor_value_info("x", dtype, shape)],
                          [helper.make_tensor_value_info("y", dtype, out_shape)], inits)
    npt = helper.tensor_dtype_to_np_dtype(dtype)
    x = rng.uniform(-3, 3, shape).astype(npt) if dtype == TensorProto.FLOAT else rng.integers(-50, 50, shape).astype(npt)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), {"x": x}


def reduce_cases():
    """(name, model, feeds, "shfl" or "no shfl"): "shfl" where the reduction schedule must take
    the rows (warp shuffles in the loop IR and the PTX), "no shfl" where one output per thread
    stays (short rows; many outputs reduced across the innermost axis)."""
    yield ("softmax_rows",) + reduce_case("softmax_rows", "Softmax", [6, 300], [6, 300], axis=-1) + ("shfl",)
    yield ("logsoftmax_rows",) + reduce_case("logsoftmax_rows", "LogSoftmax", [8, 70], [8, 70], axis=-1) + ("shfl",)
    yield ("layernorm_rows",) + reduce_case("layernorm_rows", "LayerNormalization", [3, 5, 96], [3, 5, 96],
                                            extra=("s", "b"), axis=-1, epsilon=1e-5) + ("shfl",)
    yield ("reducesum_last",) + reduce_case("reducesum_last", "ReduceSum", [50, 200], [50], axes=[1], keepdims=0) + ("shfl",)
    yield ("reducemean_ragged",) + reduce_case("reducemean_ragged", "ReduceMean", [300, 33], [300, 1], axes=[1]) + ("shfl",)
    yield ("reducemin_long",) + reduce_case("reducemin_long", "ReduceMin", [2, 5000], [2, 1], axes=[1]) + ("shfl",)
    yield ("reducemean_hw",) + reduce_case("reducemean_hw", "ReduceMean", [2, 20, 7, 7], [2, 20, 1, 1], axes=[2, 3]) + ("shfl",)
    yield ("global_avg_pool",) + reduce_case("global_avg_pool", "GlobalAveragePool", [2, 24, 7, 7], [2, 24, 1, 1]) + ("shfl",)
    yield ("global_max_pool",) + reduce_case("global_max_pool", "GlobalMaxPool", [1, 40, 9, 9], [1, 40, 1, 1]) + ("shfl",)
    yield ("reducemax_axis0_few",) + reduce_case("reducemax_axis0_few", "ReduceMax", [512, 24], [1, 24], axes=[0]) + ("shfl",)
    yield ("reducesum_int32",) + reduce_case("reducesum_int32", "ReduceSum", [10, 100], [10, 1], TensorProto.INT32,
                                             axes=[1]) + ("shfl",)
    yield ("reducesum_int64",) + reduce_case("reducesum_int64", "ReduceSum", [3, 4, 40], [3, 4, 1], TensorProto.INT64,
                                             axes=[2]) + ("shfl",)
    yield ("softmax_axis1",) + reduce_case("softmax_axis1", "Softmax", [2, 50, 4, 4], [2, 50, 4, 4], axis=1) + ("shfl",)
    yield ("reducesum_short",) + reduce_case("reducesum_short", "ReduceSum", [100, 16], [100, 1], axes=[1]) + ("no shfl",)
    yield ("reducesum_axis0_many",) + reduce_case("reducesum_axis0_many", "ReduceSum", [40, 40000], [1, 40000],
                                                  axes=[0]) + ("no shfl",)


# thread tiles of the GPU conv template beyond the default's, per case
KNOB_CASES = {
    "conv3x3_ragged": ("gpu_conv:toc=2,tow=7", "gpu_conv:toc=1,tow=5", "gpu_conv:toc=8,tow=2"),
    "conv3x3_s2": ("gpu_conv:toc=2,tow=7", "gpu_conv:toc=4,tow=4"),
    "conv1x1": ("gpu_conv:toc=8,tow=2", "gpu_conv:toc=2,tow=6", "gpu_conv:toc=4,tow=4,bic=4"),
    "dw3x3_template": ("gpu_conv:toc=2,tow=4", "gpu_conv:toc=1,tow=1"),
}


def cases():
    """(name, model, feeds, uses_template): the template cases are big enough that the
    default picks the shared-memory template (a grid of enough blocks), small enough to emulate."""
    yield ("conv3x3_ragged",) + conv_case("conv3x3_ragged", 1, 12, 23, 19, 40, 3, pad=1) + (True,)
    yield ("conv3x3_s2",) + conv_case("conv3x3_s2", 2, 16, 33, 33, 24, 3, stride=2, pad=1) + (True,)
    yield ("conv1x1",) + conv_case("conv1x1", 1, 32, 9, 30, 72, 1, relu=False) + (True,)
    yield ("conv7x7_s2_stem",) + conv_case("conv7x7_s2_stem", 1, 3, 48, 48, 64, 7, stride=2, pad=3) + (True,)
    yield ("conv_small_default",) + conv_case("conv_small_default", 1, 16, 7, 7, 24, 3, pad=1) + (False,)
    yield ("conv_grouped",) + conv_case("conv_grouped", 1, 8, 10, 10, 8, 3, pad=1, group=4) + (False,)
    yield ("conv_depthwise",) + conv_case("conv_depthwise", 1, 16, 12, 12, 16, 3, pad=1, group=16, bias=False) + (False,)
    yield ("grouped3x3_template",) + conv_case("grouped3x3_template", 2, 64, 28, 28, 64, 3, pad=1, group=4) + (True,)
    yield ("grouped32_template",) + conv_case("grouped32_template", 2, 128, 28, 28, 128, 3, stride=2, pad=1, group=32) + (True,)
    yield ("grouped_mult_template",) + conv_case("grouped_mult_template", 2, 32, 28, 28, 128, 3, pad=1, group=32) + (True,)
    # few outputs, long reductions: split-K (layout/split_k.c), a grouped conv over channel slices
    yield ("splitk_3x3",) + conv_case("splitk_3x3", 1, 512, 7, 7, 128, 3, pad=1) + ("split 16",)
    yield ("splitk_3x3_s2",) + conv_case("splitk_3x3_s2", 1, 96, 13, 13, 512, 3, stride=2, pad=1) + ("split 4",)
    yield ("dw3x3_template",) + conv_case("dw3x3_template", 4, 64, 28, 28, 64, 3, pad=1, group=64) + (True,)
    yield ("dw3x3_s2_template",) + conv_case("dw3x3_s2_template", 4, 64, 57, 57, 64, 3, stride=2, pad=1, group=64) + (True,)
    yield ("matmul_ragged",) + matmul_case("matmul_ragged", [150, 70], [70, 300]) + (True,)
    yield ("matmul_one_row",) + matmul_case("matmul_one_row", [1, 96], [96, 200]) + (False,)
    yield ("batch_matmul",) + matmul_case("batch_matmul", [24, 40, 33], [24, 33, 50], const_b=False) + (True,)
    yield ("matmul_broadcast_b",) + matmul_case("matmul_broadcast_b", [2, 5, 40, 24], [24, 65]) + (True,)
    for c in reduce_cases():
        yield c
    for name in ("cnn", "mlp", "transformer", "lstm", "gru", "misc", "concats"):
        m = gen_models.MODELS[name]()
        shapes = getattr(gen_models, "INPUT_SHAPES", {}).get(name, {})
        rng = np.random.default_rng(7)
        feeds = {}
        inits = {i.name for i in m.graph.initializer}
        for i in m.graph.input:
            if i.name in inits:
                continue
            tt = i.type.tensor_type
            shape = shapes.get(i.name) or [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
            dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
            if np.issubdtype(dt, np.integer):
                feeds[i.name] = rng.integers(0, 4, shape).astype(dt)
            elif dt == np.bool_:
                feeds[i.name] = rng.integers(0, 2, shape).astype(bool)
            else:
                feeds[i.name] = rng.uniform(-1, 1, shape).astype(dt)
        yield name, m, feeds, None


def tf32(x):
    """x rounded to TF32 as cvt.rna.tf32.f32 does: 10 mantissa bits, to nearest, ties away from zero."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).copy()
    fin = (u & 0x7F800000) != 0x7F800000
    u[fin] = (u[fin] + 0x1000) & 0xFFFFE000
    return u.view(np.float32)


def gemm_case(name, m, k, n):
    """Gemm(x, W^T) + B, then Relu: a dense layer's epilogue on the tensor-core tile."""
    rng = np.random.default_rng(len(name) + 300)
    inits = [numpy_helper.from_array(rng.standard_normal((n, k)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "B")]
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["g"], transB=1), helper.make_node("Relu", ["g"], ["y"])]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), {"x": rng.uniform(-1, 1, (m, k)).astype(np.float32)}


# other tiles of the tensor-core template: 8 warps of 32 x 32 in a 128 x 64 tile; 4 warps
# of 16 x 32 with k steps of 16; one warp of 32 x 64 (fragments 2 x 4)
TC_KNOBS = {
    "tf32_conv3x3": ("gpu_conv_tc:bm=32,boh=8,bk=16,wm=32,wn=32", "gpu_conv_tc:bm=16,boh=4,bk=8,wm=16,wn=16"),
    "tf32_matmul": ("gpu_matmul_tc:bm=128,bn=64,bk=16,wm=32,wn=32", "gpu_matmul_tc:bm=32,bn=64,bk=8,wm=32,wn=64"),
    "tf32_ragged": ("gpu_matmul_tc:bm=32,bn=64,bk=16,wm=16,wn=32",),
}


def transposed_case(name, m, k, n):
    """MatMul(Transpose(a), Transpose(b)) of two inputs (the transposes are kernels of their own)."""
    rng = np.random.default_rng(len(name) + 400)
    nodes = [helper.make_node("Transpose", ["a"], ["at"]), helper.make_node("Transpose", ["b"], ["bt"]),
             helper.make_node("MatMul", ["at", "bt"], ["y"])]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [k, m]),
                                        helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])])
    feeds = {"a": rng.uniform(-1, 1, (k, m)).astype(np.float32), "b": rng.uniform(-1, 1, (n, k)).astype(np.float32)}
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), feeds


def conv_ref(stride, pad, relu):
    """The TF32 reference of conv_case's model: x and W rounded, the conv summed in f64, bias, relu."""
    def ref(v):
        x, w = tf32(v["x"]).astype(np.float64), tf32(v["W"]).astype(np.float64)
        n, c, h, wd = x.shape
        m, _, k, _ = w.shape
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
        y = np.zeros((n, m, oh, ow))
        for i in range(k):
            for j in range(k):
                win = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y += np.einsum("nchw,mc->nmhw", win, w[:, :, i, j])
        if "B" in v:
            y += v["B"].astype(np.float64)[None, :, None, None]
        return np.maximum(y, 0) if relu else y
    return ref


def mm_ref(v):
    return np.matmul(tf32(v["a"]).astype(np.float64), tf32(v["b"]).astype(np.float64))


def tf32_cases():
    """(name, model, feeds, K, tensor cores expected, reference from the inputs and weights by name,
    TF32-rounded and summed in f64): the tensor-core template's shapes."""
    yield ("tf32_matmul",) + matmul_case("tf32_matmul", [128, 64], [64, 128]) + (64, True, mm_ref)
    yield ("tf32_ragged",) + matmul_case("tf32_ragged", [150, 70], [70, 300]) + (70, True, mm_ref)
    yield ("tf32_batch",) + matmul_case("tf32_batch", [6, 40, 33], [6, 33, 50], const_b=False) + (33, True, mm_ref)
    yield ("tf32_broadcast_b",) + matmul_case("tf32_broadcast_b", [3, 64, 40], [40, 96]) + (40, True, mm_ref)
    yield ("tf32_rank4",) + matmul_case("tf32_rank4", [2, 3, 40, 24], [2, 3, 24, 50], const_b=False) + (24, True, mm_ref)
    yield ("tf32_gemm_relu",) + gemm_case("tf32_gemm_relu", 96, 72, 80) + (72, True, lambda v: np.maximum(
        tf32(v["x"]).astype(np.float64) @ tf32(v["W"]).astype(np.float64).T + v["B"], 0))
    yield ("tf32_transposed",) + transposed_case("tf32_transposed", 80, 40, 96) + (40, True, lambda v: np.matmul(
        tf32(v["a"]).astype(np.float64).T, tf32(v["b"]).astype(np.float64).T))
    yield ("tf32_few_rows",) + matmul_case("tf32_few_rows", [8, 96], [96, 200]) + (96, False, mm_ref)
    # convs as implicit GEMMs: 1x1 on a 56-wide map (2 rows a block), 3x3 padded at 28 and
    # at 14 (4 and 8 rows; 48 channels: a ragged channel tile), a 7x7 stride-2 stem (32
    # wide: 4 rows), two images; a 29-wide map keeps the CUDA-core template
    yield ("tf32_conv1x1",) + conv_case("tf32_conv1x1", 1, 16, 56, 56, 64, 1, relu=False) + (16, True, conv_ref(1, 0, False))
    yield ("tf32_conv3x3",) + conv_case("tf32_conv3x3", 2, 16, 28, 28, 32, 3, pad=1) + (144, True, conv_ref(1, 1, True))
    yield ("tf32_conv3x3_14",) + conv_case("tf32_conv3x3_14", 1, 24, 14, 14, 48, 3, pad=1) + (216, True, conv_ref(1, 1, True))
    yield ("tf32_conv_stem",) + conv_case("tf32_conv_stem", 1, 3, 64, 64, 32, 7, stride=2, pad=3) + (147, True, conv_ref(2, 3, True))
    yield ("tf32_conv_29",) + conv_case("tf32_conv_29", 1, 16, 57, 57, 32, 3, stride=2, pad=1) + (144, False, conv_ref(2, 1, True))


def write_case(d, model, feeds):
    import onnxruntime as ort
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    model.ir_version = 8  # the opsets used need no more; a newer onnx's default may pass what ORT reads
    onnx.save(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    outs = sess.run(None, {k: feeds[k] for k in names})
    for k, n in enumerate(names):
        t = numpy_helper.from_array(feeds[n], n)
        open(os.path.join(d, "data", "input_%d.pb" % k), "wb").write(t.SerializeToString())
    for k, (o, a) in enumerate(zip(sess.get_outputs(), outs)):
        t = numpy_helper.from_array(np.asarray(a), o.name)
        open(os.path.join(d, "data", "output_%d.pb" % k), "wb").write(t.SerializeToString())
    return path, os.path.join(d, "data")


def ptx_of(bundle):
    with tarfile.open(bundle) as t:
        for m in t.getmembers():
            if m.name.endswith(".ptx"):
                return t.extractfile(m).read()
    return None


def main():
    a = util.parse_args(__doc__)
    checks = util.Checks("test_cuda")
    ptxas = find_ptxas()
    no_gpu = gpu_here()
    work = tempfile.mkdtemp(prefix="kiln-cuda-")
    try:
        for name, model, feeds, template in cases():
            if a.filter not in name:
                continue
            path, data = write_case(os.path.join(work, name), model, feeds)
            if template is not None:  # the schedule the case is about: shared memory, or one output per thread
                bundle = os.path.join(work, name, "m.kiln")
                r = util.run_kiln(a.kiln, ["compile", path, "--target", "cuda-sm90", "--dump-after=lower", "-o", bundle],
                                  timeout=600)
                if isinstance(template, str) and template.startswith("split"):  # split-K: the conv grouped over input-channel slices
                    lay = util.run_kiln(a.kiln, ["compile", path, "--target", "cuda-sm90", "--dump-after=layout", "-o", bundle])
                    want = "group=%s}" % template.split()[1]
                    checks.check(lay.rc == 0 and want in lay.out, "%s: split-K into a conv with %s expected: %s" % (
                        name, want, lay.out[:600]))
                elif template in ("shfl", "no shfl"):  # the reduction schedule (warp shuffles, in the PTX too), or not
                    want = template == "shfl"
                    shfl = "shfl_xor(" in r.out
                    ptx = ptx_of(bundle) if r.rc == 0 else None
                    checks.check(r.rc == 0 and shfl == want and (not shfl or b"shfl.sync.bfly" in (ptx or b"")),
                                 "%s: %s expected, the loop IR %s warp shuffles" % (
                                     name, "the reduction schedule" if want else "one output per thread",
                                     "has" if shfl else "has no"))
                else:
                    shared = "] shared" in r.out and "barrier" in r.out
                    checks.check(r.rc == 0 and shared == template, "%s: %s schedule expected, the loop IR %s shared memory"
                                 % (name, "a template's" if template else "the default", "has" if shared else "has no"))
            args = ["check", path, "--test-data", data, "--target", "cuda-sm90", "--emulate"]
            if ptxas:
                args += ["--ptxas", ptxas]
            r = util.run_kiln(a.kiln, args, timeout=600)
            ok = r.rc == 0 and "(emulated)" in r.out
            checks.check(ok, "%s: emulated GPU run: %s %s" % (name, r.describe(), (r.err or r.out)[-400:]))
            if ok:
                print("ok %s: emulated on cuda-sm90 and matches ONNX Runtime%s" % (name, ", PTX assembled" if ptxas else ""), flush=True)
            if no_gpu is None:
                r = util.run_kiln(a.kiln, ["check", path, "--test-data", data, "--target", "cuda-sm90"], timeout=600)
                checks.check(r.rc == 0, "%s: on the GPU: %s %s" % (name, r.describe(), r.err[-300:]))
            # the conv template's other thread tiles (bench/cuda/sweep_conv.py times them), each
            # with the block the default would derive for it, checked in the emulation too
            for knobs in KNOB_CASES.get(name, ()):
                r = util.run_kiln(a.kiln, args + ["--knobs", knobs], timeout=600)
                if checks.check(r.rc == 0 and "(emulated)" in r.out, "%s --knobs %s: %s %s" % (name, knobs, r.describe(), (r.err or r.out)[-400:])):
                    print("ok %s --knobs %s: emulated and matches ONNX Runtime" % (name, knobs), flush=True)
        # tensor cores (--gpu-math tf32): the WMMA template's loop IR and PTX, emulated
        # against TF32-rounded numpy (tight) and ONNX Runtime's fp32 (TF32's tolerance)
        for name, model, feeds, K, tc, ref_of in tf32_cases():
            if a.filter not in name:
                continue
            d = os.path.join(work, name)
            path, data = write_case(d, model, feeds)
            ref = ref_of(dict({i.name: numpy_helper.to_array(i) for i in model.graph.initializer}, **feeds))
            tdata = os.path.join(d, "tf32")
            os.makedirs(tdata, exist_ok=True)
            for f in os.listdir(data):
                if f.startswith("input_"):
                    shutil.copy(os.path.join(data, f), tdata)
            out_name = model.graph.output[0].name
            open(os.path.join(tdata, "output_0.pb"), "wb").write(
                numpy_helper.from_array(ref.astype(np.float32), out_name).SerializeToString())
            for target, archs in (("cuda", (80, 90)), ("cuda-sm90", (90,))):
                bundle = os.path.join(d, "%s.kiln" % target)
                r = util.run_kiln(a.kiln, ["compile", path, "--target", target, "--gpu-math", "tf32", "--dump-after=lower",
                                           "-o", bundle], timeout=600)
                has = "wmma.mma" in r.out
                if not checks.check(r.rc == 0 and has == tc, "%s --target %s: the loop IR %s the tensor-core template: %s %s"
                                    % (name, target, "has" if has else "lacks", r.describe(), r.err[-300:])):
                    continue
                ptx = ptx_of(bundle) or b""
                checks.check(not tc or b"wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32" in ptx,
                             "%s --target %s: the PTX has the m16n16k8 TF32 MMA" % (name, target))
                for arch in archs if ptxas else ():
                    src_ptx = os.path.join(d, "k.ptx")
                    open(src_ptx, "wb").write(ptx)
                    p = subprocess.run([ptxas, "-arch=sm_%d" % arch, src_ptx, "-o", os.devnull], capture_output=True, text=True)
                    checks.check(p.returncode == 0, "%s --target %s: ptxas -arch=sm_%d: %s" % (name, target, arch, p.stderr[-400:]))
            base = ["check", path, "--target", "cuda-sm90", "--emulate", "--gpu-math", "tf32"]
            for knobs in TC_KNOBS.get(name, ()):
                r = util.run_kiln(a.kiln, base + ["--test-data", tdata, "--knobs", knobs, "--ptxas", ptxas] if ptxas else
                                  base + ["--test-data", tdata, "--knobs", knobs], timeout=600)
                if checks.check(r.rc == 0 and "(emulated)" in r.out, "%s --knobs %s: %s %s" % (name, knobs, r.describe(), (r.err or r.out)[-400:])):
                    print("ok %s --knobs %s: emulated, matches the TF32 reference" % (name, knobs), flush=True)
            r = util.run_kiln(a.kiln, base + ["--test-data", tdata], timeout=600)
            want_tf32 = tc  # without tensor cores the result is fp32's: the TF32 reference may miss it
            if want_tf32:
                checks.check(r.rc == 0 and "(emulated)" in r.out, "%s: emulated TF32 vs numpy's TF32 at rtol 1e-3, atol 1e-5: %s %s"
                             % (name, r.describe(), (r.err or r.out)[-400:]))
                r = util.run_kiln(a.kiln, base + ["--test-data", data], timeout=600)
                checks.check(r.rc == 1 and "MISMATCH" in r.out, "%s: emulated TF32 differs from fp32 at rtol 1e-3: %s %s"
                             % (name, r.describe(), (r.err or r.out)[-300:]))
            scale = "%g" % min(1.0, 1e-3 * K ** 0.5)
            r = util.run_kiln(a.kiln, base + ["--test-data", data, "--atol-scale", scale], timeout=600)
            if checks.check(r.rc == 0 and "(emulated)" in r.out, "%s: emulated TF32 vs ONNX Runtime fp32, --atol-scale %s: %s %s"
                            % (name, scale, r.describe(), (r.err or r.out)[-400:])):
                print("ok %s: %s, emulated (%sfp32 within %s of the largest output), PTX %s"
                      % (name, "tensor cores" if tc else "CUDA cores (no tensor-core tile fits)",
                         "the TF32 reference at rtol 1e-3; " if tc else "", scale,
                         "assembled" if ptxas else "not assembled"), flush=True)
        # a whole model: the transformer of gen_models, TF32 against ONNX Runtime's fp32
        if a.filter in "tf32_transformer":
            _, m, feeds, _ = next(c for c in cases() if c[0] == "transformer")
            path, data = write_case(os.path.join(work, "tf32_transformer"), m, feeds)
            r = util.run_kiln(a.kiln, ["check", path, "--test-data", data, "--target", "cuda-sm90", "--emulate",
                                       "--gpu-math", "tf32", "--atol-scale", "0.01"], timeout=600)
            if checks.check(r.rc == 0 and "(emulated)" in r.out, "tf32_transformer: %s %s" % (r.describe(), (r.err or r.out)[-400:])):
                print("ok tf32_transformer: emulated with --gpu-math tf32, within 1% of the largest output", flush=True)
        path, _ = write_case(os.path.join(work, "gpu_math_cli"), *matmul_case("gpu_math_cli", [32, 16], [16, 32]))
        r = util.run_kiln(a.kiln, ["compile", path, "--target", "x86_64", "--gpu-math", "tf32", "-o", os.path.join(work, "cpu.kiln")])
        checks.check(r.rc == 1 and "--gpu-math tf32 is for GPU targets" in r.err, "--gpu-math tf32 on a CPU target: refused: %s %s"
                     % (r.describe(), r.err[-200:]))
        r = util.run_kiln(a.kiln, ["compile", path, "--target", "cuda", "--gpu-math", "fp16", "-o", os.path.join(work, "x.kiln")])
        checks.check(r.rc == 2 and "--gpu-math takes fp32 or tf32" in r.err, "--gpu-math fp16: exit 2: %s %s" % (r.describe(), r.err[-200:]))
        # --knobs refuses what no template has, naming the knobs it has
        # a tile whose shared memory passes what a block may have statically: refused at compile time
        path, _ = write_case(os.path.join(work, "knobs_shared"), *conv_case("knobs_shared", 16, 128, 14, 14, 128, 3, pad=1))
        r = util.run_kiln(a.kiln, ["compile", path, "--target", "cuda-sm90", "-o", os.path.join(work, "ks.kiln"),
                                   "--knobs", "gpu_conv:bic=64"])
        checks.check(r.rc == 1 and "bytes of shared memory per block, more than the 49152" in r.err,
                     "--knobs gpu_conv:bic=64 on a 128-channel conv: refused for its shared memory: %s %s" % (r.describe(), r.err[-300:]))
        path, data = write_case(os.path.join(work, "knobs_bad"), *conv_case("knobs_bad", 1, 8, 9, 9, 16, 3, pad=1))
        for bad, want in (("gpu_conv:toc=0", "outside 1..16"), ("gpu_conv:tiles=2", "boc, toc, boh, bow, tow, bic"),
                          ("nosuch:toc=1", "TEMPLATE:NAME=VALUE")):
            r = util.run_kiln(a.kiln, ["check", path, "--test-data", data, "--target", "cuda-sm90", "--emulate", "--knobs", bad])
            checks.check(r.rc == 2 and want in r.err, "--knobs %s: exit 2 naming '%s': %s %s" % (bad, want, r.describe(), r.err[-300:]))
        if no_gpu:
            checks.skip("running the cases on a GPU: %s" % no_gpu)
        if not ptxas:
            checks.skip("assembling PTX: no ptxas (the CUDA toolkit's; set $PTXAS)")
        # the benchmark models: PTX for sm_80 (assembled for sm_80 and sm_90) and for sm_90
        model_dir = os.path.join(ROOT, "build", "bench-models")  # bench/run.py's, made when missing
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import run as bench_run  # noqa: E402
        names = [n for n in ("mobilenetv2", "bert_encoder", "resnet50") if a.filter in n]
        if is_sanitizer_build(a.kiln):  # minutes each at -O0 under ASan: the release build checks them
            checks.skip("the benchmark and light models' PTX: a sanitizer build of kiln (the release build's test runs them)")
            names, light = [], ()
        else:
            light = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "shufflenet", "squeezenet", "vgg19",
                     "zfnet512")
        paths = bench_run.prepare_models(names, model_dir, False) if names else {}
        models = [(n, paths[n], (("cuda", (80, 90)), ("cuda-sm90", (90,)))) for n in names]
        if "bert_encoder" in names:  # its matmuls on tensor cores (--gpu-math tf32)
            models.append(("bert_encoder_tf32", paths["bert_encoder"], (("cuda", (80, 90)),), ["--gpu-math", "tf32"]))
        # the other e2e models of test_e2e.py: the onnx package's light models (their
        # placeholder weights: the kernels do not depend on the values), sm_80 PTX
        for n in light:
            if a.filter in "light_" + n:
                models.append(("light_" + n, os.path.join(util.onnx_data_dir("light"), "light_%s.onnx" % n),
                               (("cuda", (80, 90)),)))
        for name, src, targets, *extra in models:
            for target, archs in targets:
                out = os.path.join(work, "%s.%s.kiln" % (name, target))
                r = util.run_kiln(a.kiln, ["compile", src, "--target", target, "-o", out] + (extra[0] if extra else []),
                                  timeout=900)
                if not checks.check(r.rc == 0, "%s --target %s: %s %s" % (name, target, r.describe(), r.err[-300:])):
                    continue
                ptx = ptx_of(out)
                checks.check(ptx is not None and b".entry" in ptx, "%s --target %s: the bundle has PTX" % (name, target))
                if extra:
                    checks.check(b"wmma.mma.sync" in (ptx or b""), "%s --target %s: the PTX has tensor-core MMAs" % (name, target))
                os.remove(out)
                if not ptxas or ptx is None:
                    continue
                src_ptx = os.path.join(work, "k.ptx")
                open(src_ptx, "wb").write(ptx)
                for arch in archs:
                    p = subprocess.run([ptxas, "-arch=sm_%d" % arch, src_ptx, "-o", os.devnull], capture_output=True, text=True)
                    if checks.check(p.returncode == 0, "%s --target %s: ptxas -arch=sm_%d: %s" % (name, target, arch, p.stderr[-400:])):
                        print("ok %s --target %s: ptxas -arch=sm_%d accepts its %d KiB of PTX" % (name, target, arch, len(ptx) // 1024), flush=True)
        # the encoder on tensor cores, emulated at batch 1 against ONNX Runtime's fp32 (~10 s)
        if "bert_encoder" in names:
            m = onnx.load(paths["bert_encoder"])
            rng = np.random.default_rng(11)
            feeds = {i.name: rng.uniform(-1, 1, [d.dim_value or 1 for d in i.type.tensor_type.shape.dim]).astype(np.float32)
                     for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}}
            path, data = write_case(os.path.join(work, "bert_tf32"), m, feeds)
            r = util.run_kiln(a.kiln, ["check", path, "--test-data", data, "--target", "cuda-sm90", "--emulate",
                                       "--gpu-math", "tf32", "--atol-scale", "0.01"], timeout=900)
            if checks.check(r.rc == 0 and "(emulated)" in r.out, "bert_encoder --gpu-math tf32, emulated: %s %s"
                            % (r.describe(), (r.err or r.out)[-400:])):
                print("ok bert_encoder --gpu-math tf32: emulated at batch 1, within 1%% of the largest output (%s)"
                      % r.out.strip().splitlines()[-1].strip(), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    checks.finish()


if __name__ == "__main__":
    main()
