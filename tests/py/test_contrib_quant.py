"""test_contrib_quant.py — ONNX Runtime's quantized com.microsoft ops and its float conv
variants that kiln converts (importer/ops_contrib_quant.c), each a one-node model at two
or more shapes, int8 and uint8 where the op takes both, compiled and run by kiln and
compared with ONNX Runtime's own CPU kernel (graph optimizations off) on the same model.

Tolerances, per op (8-bit outputs: in quantization steps; the fraction of elements one
step off is printed per case):
  exact (0 steps)  QLinearConcat, QLinearLeakyRelu, QLinearGlobalAveragePool (kiln follows
                   MLAS's integer sum and scale), QLinearAveragePool (kiln rounds
                   y / y_scale + y_zero_point as ORT's pool kernel does: the scales here
                   make exact ties common, so the order matters)
                   QLinearAdd (kiln follows MLAS's AVX2 kernel, qladd_avx2.cpp: float32
                   scale ratios, two FMAs; checked on every pair of 8-bit values too),
                   QLinearMul (kiln follows MLAS's SSE2 kernel, qlmul.cpp: the integer
                   product of the debiased operands times a float32 ratio, plus C_zp)
                   QLinearSoftmax (kiln follows ORT's kernel: its exp table for the
                   constant X_scale, a float32 row sum in element order, (e·F)/sum)
  <= 1 step        QLinearSigmoid (ORT: MLAS's logistic approximation),
                   QGemm with an 8-bit output (scale product in another order)
  float            DynamicQuantizeMatMul, MatMulIntegerToFloat, QGemm with a float output:
                   rtol 1e-5, atol 1e-5 (the integer products are exact; only the scaling
                   rounds); FusedConv, MatMulNBits: rtol 1e-4, atol 1e-4 (sum order; MLAS
                   tanh/logistic approximations); NhwcConv (ORT has no CPU kernel for it):
                   against ORT's ai.onnx Conv on the NCHW-transposed data, weights
                   (M, kH, kW, C/group) as ORT's transformers/fusion_nhwc_conv.py writes
                   them, rtol 1e-4, atol 1e-4.
Also a LayerNormalization of a DequantizeLinear's output (a quantized model's), which
kiln computes as ONNX Runtime's MLAS kernel does (te/compute_reduce.c, layer_norm_ort):
its float output and the QuantizeLinear after it identical to ORT's (rows of 256, 102,
13, 15 and 8: the kernel's vector loops and scalar tails).
Refusals checked: FusedConv with an unsupported activation, MatMulNBits with bits=8 and
with g_idx, QLinearAdd with a per-channel scale: each fails with one clear line.

Options: --kiln PATH. Closing line: test_contrib_quant: N passed, M failed.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402
import test_e2e  # noqa: E402

NP2ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8,
           np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32}


class Case:
    """One com.microsoft node. inputs: [(name, array, is_constant)] ("" name: an absent
    optional input); tol: ("q", steps) or ("f", rtol, atol)."""

    def __init__(self, label, op, inputs, attrs, tol, ref=None):
        self.label, self.op, self.inputs, self.attrs, self.tol, self.ref = label, op, inputs, attrs or {}, tol, ref


def save_model(path, op, inputs, attrs, domain="com.microsoft", out_type=TensorProto.FLOAT):
    vis, inits = [], []
    for name, arr, const in inputs:
        if not name:
            continue
        if const:
            inits.append(numpy_helper.from_array(arr, name))
        else:
            vis.append(helper.make_tensor_value_info(name, NP2ONNX[arr.dtype], list(arr.shape)))
    node = helper.make_node(op, [n for n, _, _ in inputs], ["Y"], domain=domain, name=op + "_0", **(attrs or {}))
    g = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info("Y", out_type, None)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    onnx.save(m, path)


def ort_run(path, feeds):
    import onnxruntime as ort
    import ort_exact
    path = ort_exact.reference_model(path)  # uint8 x int8 exact on CPUs without VNNI too
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 2
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


# ---- data ----

def qdata(rng, shape, dt):
    info = np.iinfo(dt)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dt)


def qp(dt, scale, zp):
    """(scale, zero point) arrays of a per-tensor quantization."""
    return np.array(scale, np.float32), np.array(zp, dt)


def zps(dt):
    """three zero points of dt: inputs', another, output's."""
    return (128, 100, 120) if dt == np.uint8 else (0, -20, 5)


def fdata(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def cases(rng):
    dts = (np.uint8, np.int8)
    # element-wise binary
    for op in ("QLinearAdd", "QLinearMul"):
        for dt in dts:
            za, zb, zc = zps(dt)
            for sa, sb in (((2, 3, 8, 8), (2, 3, 8, 8)), ((4, 16), (16,)), ((3, 1, 5), (1, 4, 5)),
                           ((2, 3, 8, 8), (1,)), ((1,), (4, 16))):  # the last two: MLAS's scalar paths
                a_s, a_z = qp(dt, 0.05, za)
                b_s, b_z = qp(dt, 0.03, zb)
                c_s, c_z = qp(dt, 0.09 if op == "QLinearAdd" else 0.4, zc)
                yield Case("%s %s %s %s" % (op, dt.__name__, sa, sb), op,
                           [("A", qdata(rng, sa, dt), False), ("A_scale", a_s, True), ("A_zero_point", a_z, True),
                            ("B", qdata(rng, sb, dt), False), ("B_scale", b_s, True), ("B_zero_point", b_z, True),
                            ("C_scale", c_s, True), ("C_zero_point", c_z, True)], None,
                           ("q", 0))
    # QLinearAdd and QLinearMul on every pair of 8-bit values, scales and zero points drawn
    # at random: kiln follows MLAS's kernels (qladd_avx2.cpp, qlmul.cpp), so exactly
    for op in ("QLinearAdd", "QLinearMul"):
        for dt in dts:
            lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
            grid_a, grid_b = np.meshgrid(np.arange(lo, hi), np.arange(lo, hi))
            for k in range(8):  # the float formulas (before): 6 Add, 1 Mul of these failed, 1-3 elements each
                (a_s, b_s), (za, zb, zc) = rng.uniform(0.005, 0.1, 2), rng.integers(lo, hi, 3)
                c_s = rng.uniform(0.005, 0.1) if op == "QLinearAdd" else rng.uniform(0.05, 0.5)
                yield Case("%s %s every pair of values, parameters %d" % (op, dt.__name__, k), op,
                           [("A", grid_a.astype(dt), False), ("A_scale", np.array(a_s, np.float32), True),
                            ("A_zero_point", np.array(za, dt), True),
                            ("B", grid_b.astype(dt), False), ("B_scale", np.array(b_s, np.float32), True),
                            ("B_zero_point", np.array(zb, dt), True),
                            ("C_scale", np.array(c_s, np.float32), True), ("C_zero_point", np.array(zc, dt), True)],
                           None, ("q", 0))
    # unary lookup-table ops
    for dt in dts:
        zx, _, zy = zps(dt)
        for s in ((3, 50), (2, 3, 16, 16)):
            x_s, x_z = qp(dt, 0.06, zx)
            y_s, y_z = qp(dt, 1 / 256, 0 if dt == np.uint8 else -128)
            yield Case("QLinearSigmoid %s %s" % (dt.__name__, s), "QLinearSigmoid",
                       [("X", qdata(rng, s, dt), False), ("X_scale", x_s, True), ("X_zero_point", x_z, True),
                        ("Y_scale", y_s, True), ("Y_zero_point", y_z, True)], None, ("q", 1))
            y_s, y_z = qp(dt, 0.05, zy)
            yield Case("QLinearLeakyRelu %s %s" % (dt.__name__, s), "QLinearLeakyRelu",
                       [("X", qdata(rng, s, dt), False), ("X_scale", x_s, True), ("X_zero_point", x_z, True),
                        ("Y_scale", y_s, True), ("Y_zero_point", y_z, True)], {"alpha": 0.1}, ("q", 0))
    # concat: one input with Y's parameters (copied), two requantized
    for dt in dts:
        za, zb, zy = zps(dt)
        for shapes, axis in ((((2, 3, 4), (2, 5, 4), (2, 1, 4)), 1), (((1, 2, 3, 4), (1, 2, 3, 7), (1, 2, 3, 2)), -1)):
            y_s, y_z = qp(dt, 0.05, zy)
            ins = [("Y_scale", y_s, True), ("Y_zero_point", y_z, True)]
            params = [(0.05, zy), (0.02, za), (0.11, zb)]
            for i, (s, (sc, z)) in enumerate(zip(shapes, params)):
                x_s, x_z = qp(dt, sc, z)
                ins += [("X%d" % i, qdata(rng, s, dt), False), ("X%d_scale" % i, x_s, True),
                        ("X%d_zero_point" % i, x_z, True)]
            yield Case("QLinearConcat %s %s axis %d" % (dt.__name__, shapes, axis), "QLinearConcat", ins,
                       {"axis": axis}, ("q", 0))
    # pooling
    for dt in dts:
        zx, _, zy = zps(dt)
        x_s, x_z = qp(dt, 0.05, zx)
        y_s, y_z = qp(dt, 0.04, zy)
        for s, attrs in (((1, 3, 8, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
                         ((2, 4, 7, 9), {"kernel_shape": [2, 3], "ceil_mode": 1, "count_include_pad": 1,
                                         "pads": [0, 1, 0, 1]}),
                         ((1, 8, 8, 3), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "channels_last": 1})):
            yield Case("QLinearAveragePool %s %s %s" % (dt.__name__, s, attrs), "QLinearAveragePool",
                       [("X", qdata(rng, s, dt), False), ("x_scale", x_s, True), ("x_zero_point", x_z, True),
                        ("y_scale", y_s, True), ("y_zero_point", y_z, True)], attrs, ("q", 0))
        for s, attrs in (((1, 8, 7, 7), {}), ((2, 16, 4, 4), {}), ((1, 5, 5, 8), {"channels_last": 1})):
            yield Case("QLinearGlobalAveragePool %s %s %s" % (dt.__name__, s, attrs), "QLinearGlobalAveragePool",
                       [("X", qdata(rng, s, dt), False), ("x_scale", x_s, True), ("x_zero_point", x_z, True),
                        ("y_scale", y_s, True), ("y_zero_point", y_z, True)], attrs, ("q", 0))
    # softmax
    for dt in dts:
        zx = zps(dt)[0]
        x_s, x_z = qp(dt, 0.04, zx)
        y_s, y_z = qp(dt, 1 / 256, 0 if dt == np.uint8 else -128)
        for s, attrs in (((4, 32), {"opset": 13, "axis": -1}), ((2, 6, 10), {"opset": 13, "axis": 1}),
                         ((2, 3, 10), {"opset": 12, "axis": 1}), ((1, 4, 128, 128), {"opset": 13, "axis": -1})):
            yield Case("QLinearSoftmax %s %s %s" % (dt.__name__, s, attrs), "QLinearSoftmax",
                       [("X", qdata(rng, s, dt), False), ("X_scale", x_s, True), ("x_zero_point", x_z, True),
                        ("y_scale", y_s, True), ("y_zero_point", y_z, True)], attrs, ("q", 0))
        # short rows, outputs of many steps: the float formula rounds a few of them the
        # other way (its sum and quotient differ from ORT's in the last bit)
        for s, xs in (((131072, 8), 0.0871), ((131072, 4), 0.02)):
            yield Case("QLinearSoftmax %s %s, X_scale %g" % (dt.__name__, s, xs), "QLinearSoftmax",
                       [("X", qdata(rng, s, dt), False), ("X_scale", np.array(xs, np.float32), True),
                        ("x_zero_point", x_z, True), ("y_scale", y_s, True), ("y_zero_point", y_z, True)],
                       {"opset": 13, "axis": -1}, ("q", 0))
        # attention-like rows: most of the mass on a few elements, many outputs between steps
        peaky = np.clip(rng.normal(0.8, 0.12, (1, 4, 128, 128)) * 255, 0, 255)
        peaky = (peaky if dt == np.uint8 else peaky - 128).astype(dt)
        for xs in (0.02, 0.0871):
            yield Case("QLinearSoftmax %s peaky, X_scale %g" % (dt.__name__, xs), "QLinearSoftmax",
                       [("X", peaky, False), ("X_scale", np.array(xs, np.float32), True), ("x_zero_point", x_z, True),
                        ("y_scale", y_s, True), ("y_zero_point", y_z, True)], {"opset": 13, "axis": -1}, ("q", 0))
    # matmuls with float outputs
    for dt in dts:
        zb = zps(dt)[1]
        for sa, sb, per_col in (((4, 16), (16, 8), False), ((2, 3, 32), (32, 5), True)):
            n = sb[-1]
            b_s = (rng.uniform(0.01, 0.05, n) if per_col else np.array(0.02)).astype(np.float32)
            b_z = np.full(n, zb, dt) if per_col else np.array(zb, dt)
            yield Case("DynamicQuantizeMatMul B %s %s %s%s" % (dt.__name__, sa, sb, " per column" if per_col else ""),
                       "DynamicQuantizeMatMul",
                       [("A", fdata(rng, sa), False), ("B", qdata(rng, sb, dt), True), ("b_scale", b_s, True),
                        ("b_zero_point", b_z, True), ("bias", fdata(rng, (n,)), True)], None, ("f", 1e-5, 1e-5))
    for da, db in ((np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)):
        for sa, sb in (((4, 16), (16, 8)), ((2, 3, 32), (32, 5))):
            n = sb[-1]
            yield Case("MatMulIntegerToFloat %s x %s %s %s" % (da.__name__, db.__name__, sa, sb),
                       "MatMulIntegerToFloat",
                       [("A", qdata(rng, sa, da), False), ("B", qdata(rng, sb, db), True),
                        ("a_scale", np.array(0.03, np.float32), True),
                        ("b_scale", rng.uniform(0.01, 0.05, n).astype(np.float32), True),
                        ("a_zero_point", np.array(zps(da)[0], da), True),
                        ("b_zero_point", np.array(zps(db)[1], db), True),
                        ("bias", fdata(rng, (n,)), True)], None, ("f", 1e-5, 1e-5))
    # QGemm: float and quantized outputs, transposes, int32 C
    for da, db in ((np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)):
        for (m, k, n), ta, tb in (((5, 16, 8), 0, 1), ((3, 24, 7), 1, 0)):
            a = qdata(rng, (k, m) if ta else (m, k), da)
            b = qdata(rng, (n, k) if tb else (k, n), db)
            zb = 0 if db == np.int8 else 110
            common = [("A", a, False), ("a_scale", np.array(0.02, np.float32), True),
                      ("a_zero_point", np.array(zps(da)[0], da), True), ("B", b, True),
                      ("b_scale", np.array(0.03, np.float32), True), ("b_zero_point", np.array(zb, db), True),
                      ("C", rng.integers(-2000, 2000, (n,)).astype(np.int32), True)]
            attrs = {"transA": ta, "transB": tb, "alpha": 0.5}
            yield Case("QGemm float %s x %s %s %s" % (da.__name__, db.__name__, a.shape, b.shape), "QGemm", common,
                       attrs, ("f", 1e-5, 1e-5))
            yield Case("QGemm %s x %s %s %s" % (da.__name__, db.__name__, a.shape, b.shape), "QGemm",
                       common + [("y_scale", np.array(0.5, np.float32), True),
                                 ("y_zero_point", np.array(zps(da)[2], da), True)], attrs, ("q", 1))
    # float convolutions
    for s, w, attrs in (((1, 3, 8, 8), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
                        ((2, 4, 9, 7), (6, 2, 3, 2), {"strides": [2, 1], "group": 2})):
        x, wt = fdata(rng, s), fdata(rng, w, 0.5)
        b = fdata(rng, (w[0],))
        xh, wh = x.transpose(0, 2, 3, 1).copy(), wt.transpose(0, 2, 3, 1).copy()
        ref = ("Conv", [("X", x, False), ("W", wt, True), ("B", b, True)], attrs, (0, 2, 3, 1))
        yield Case("NhwcConv %s %s %s" % (xh.shape, wh.shape, attrs), "NhwcConv",
                   [("X", xh, False), ("W", wh, True), ("B", b, True)], attrs, ("f", 1e-4, 1e-4), ref)
        y_shape = None
        for act, params in (("Relu", None), ("Tanh", None), ("Sigmoid", None), ("LeakyRelu", [0.2]),
                            ("Clip", [-0.5, 1.5]), ("HardSigmoid", [0.3, 0.4])):
            a = dict(attrs, activation=act)
            if params:
                a["activation_params"] = params
            ins = [("X", x, False), ("W", wt, True), ("B", b, True)]
            if act in ("Relu", "Clip"):  # with the sum input Z
                if y_shape is None:
                    p = os.path.join(tempfile.gettempdir(), "kiln_quant_shape_%d.onnx" % os.getpid())
                    save_model(p, "Conv", ins, attrs, domain="")
                    y_shape = ort_run(p, {"X": x}).shape
                    os.unlink(p)
                ins.append(("Z", fdata(rng, y_shape), False))
            yield Case("FusedConv %s %s %s %s" % (act, s, w, "+Z" if len(ins) == 4 else ""), "FusedConv", ins, a,
                       ("f", 1e-4, 1e-4))
    # MatMulNBits: 4-bit blocks, with and without zero points
    for (m, k, n, block), with_zp in (((3, 64, 8, 32), False), ((2, 40, 6, 16), True), ((4, 128, 16, 64), True)):
        kb = (k + block - 1) // block
        b = rng.integers(0, 256, (n, kb, block // 2)).astype(np.uint8)
        scales = rng.uniform(0.01, 0.1, n * kb).astype(np.float32)
        ins = [("A", fdata(rng, (m, k)), False), ("B", b, True), ("scales", scales, True)]
        if with_zp:
            ins.append(("zero_points", rng.integers(0, 256, n * ((kb + 1) // 2)).astype(np.uint8), True))
        ins += [("", None, False), ("bias", fdata(rng, (n,)), True)] if with_zp else []
        yield Case("MatMulNBits A %s K %d N %d block %d%s" % ((m, k), k, n, block, " zero_points+bias" if with_zp else ""),
                   "MatMulNBits", ins, {"K": k, "N": n, "bits": 4, "block_size": block}, ("f", 1e-4, 1e-4))


def save_qdq_layer_norm(path, x, xs, xz, gamma, beta, y_q):
    """X (8-bit) -> DequantizeLinear -> LayerNormalization (last axis, gamma, beta or
    none) -> Y: float, or (y_q = (scale, zero point)) QuantizeLinear's 8-bit output."""
    inits = [numpy_helper.from_array(xs, "xs"), numpy_helper.from_array(xz, "xz"),
             numpy_helper.from_array(gamma, "gamma")]
    ln_in = ["xf", "gamma"]
    if beta is not None:
        inits.append(numpy_helper.from_array(beta, "beta"))
        ln_in.append("beta")
    nodes = [helper.make_node("DequantizeLinear", ["X", "xs", "xz"], ["xf"]),
             helper.make_node("LayerNormalization", ln_in, ["Y" if y_q is None else "yf"], axis=-1, epsilon=1e-12)]
    out_type = TensorProto.FLOAT
    if y_q is not None:
        inits += [numpy_helper.from_array(y_q[0], "ys"), numpy_helper.from_array(y_q[1], "yz")]
        nodes.append(helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["Y"]))
        out_type = NP2ONNX[y_q[1].dtype]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", NP2ONNX[x.dtype], list(x.shape))],
                          [helper.make_tensor_value_info("Y", out_type, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def qdq_layer_norms(args, d, checks, rng):
    """A LayerNormalization of a DequantizeLinear's output runs ONNX Runtime's float32
    arithmetic (te/compute_reduce.c, layer_norm_ort): its float output identical to
    ORT's, and the QuantizeLinear after it too. Rows of 256 (the encoder's), 102, 13
    and 15 (the kernel's scalar tails: 102 = 25·4 + 2 = 12·8 + 6), 8 (the shortest)."""
    for dt in (np.uint8, np.int8):
        for rows, n, with_bias, quant in ((512, 256, True, False), (512, 256, False, False), (300, 102, True, False),
                                          (64, 13, True, False), (64, 15, True, False), (64, 8, False, False), (2048, 256, True, True)):
            x = qdata(rng, (2, rows // 2, n), dt)
            xs, xz = qp(dt, 0.05, zps(dt)[0])
            gamma = rng.uniform(0.5, 1.5, n).astype(np.float32)
            beta = fdata(rng, (n,), 0.3) if with_bias else None
            y_q = qp(dt, 0.03, zps(dt)[2]) if quant else None
            label = "DequantizeLinear -> LayerNormalization%s %s %s%s" % (" -> QuantizeLinear" if quant else "",
                                                                         dt.__name__, x.shape, "" if with_bias else
                                                                         " no bias")
            path = os.path.join(d, "ln_%d.onnx" % len(os.listdir(d)))
            save_qdq_layer_norm(path, x, xs, xz, gamma, beta, y_q)
            ys = util.compile_and_run(args.kiln, checks, label, path, {"X": x}, d, "ln%d" % len(os.listdir(d)))
            if ys is None:
                continue
            got, want = ys["Y"], ort_run(path, {"X": x})
            same = got.shape == want.shape and got.dtype == want.dtype
            diff = int(np.count_nonzero(got != want)) if same else -1
            print("  %-75s %s, %d of %d elements differ" % (label[:75], "ok" if diff == 0 else "FAIL", diff, want.size))
            checks.check(diff == 0, "%s: identical to onnxruntime: %d of %d elements differ" % (label, diff, want.size))


def compare_q(got, want, steps):
    """(ok, why, fraction one step off)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False, "kiln %s %s, onnxruntime %s %s" % (got.shape, got.dtype, want.shape, want.dtype), 0
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    frac = float(np.count_nonzero(d == 1)) / max(d.size, 1)
    worst = int(d.max()) if d.size else 0
    if worst > steps:
        i = int(np.argmax(d))
        return False, "%d of %d elements more than %d step(s) off (worst: kiln %d, onnxruntime %d)" % (
            int(np.count_nonzero(d > steps)), d.size, steps, got.flat[i], want.flat[i]), frac
    return True, "", frac


def refused(args, d, checks, name, op, inputs, attrs, words):
    path = os.path.join(d, name + ".onnx")
    save_model(path, op, inputs, attrs, out_type=NP2ONNX[inputs[0][1].dtype])
    r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, name + ".kiln")])
    checks.check(r.rc == 1 and all(w in r.err for w in words) and not util.clean_failure(r),
                 "%s is refused clearly: %s %r" % (name, r.describe(), r.err))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    args = ap.parse_args()
    checks = util.Checks("test_contrib_quant")
    rng = np.random.default_rng(31)
    with tempfile.TemporaryDirectory(prefix="kiln_cquant_") as d:
        for i, case in enumerate(cases(rng)):
            path = os.path.join(d, "m%d.onnx" % i)
            data = [a for n, a, c in case.inputs if n and not c]
            save_model(path, case.op, case.inputs, case.attrs,
                       out_type=NP2ONNX[data[0].dtype] if case.tol[0] == "q" else TensorProto.FLOAT)
            feeds = {name: arr for name, arr, const in case.inputs if name and not const}
            ys = util.compile_and_run(args.kiln, checks, case.label, path, feeds, d, "m%d" % i)
            if ys is None:
                continue
            got = ys["Y"]
            if case.ref:  # another op (ORT has no CPU kernel for this one), its output transposed
                rop, rins, rattrs, perm = case.ref
                rpath = os.path.join(d, "r%d.onnx" % i)
                save_model(rpath, rop, rins, rattrs, domain="")
                want = ort_run(rpath, {n: a for n, a, c in rins if n and not c}).transpose(perm)
            else:
                want = ort_run(path, feeds)
            if case.tol[0] == "q":
                ok, why, frac = compare_q(got, want, case.tol[1])
                print("  %-75s %s, %.2f%% one step off" % (case.label[:75], "ok" if ok else "FAIL", 100 * frac))
                checks.check(ok, "%s: %s" % (case.label, why))
            else:
                ok, why, mabs, _ = test_e2e.compare(got, want, case.tol[1], case.tol[2])
                print("  %-75s %s, max abs diff %s" % (case.label[:75], "ok" if ok else "FAIL",
                                                       "%.3g" % mabs if mabs is not None else "-"))
                checks.check(ok, "%s: %s" % (case.label, why))
        qdq_layer_norms(args, d, checks, rng)
        u8 = np.uint8
        s1, z1 = np.array(0.1, np.float32), np.array(128, u8)
        conv_ins = [("X", np.zeros((1, 2, 5, 5), np.float32), False), ("W", np.ones((3, 2, 3, 3), np.float32), True)]
        refused(args, d, checks, "fusedconv_gelu", "FusedConv", conv_ins, {"activation": "Gelu"},
                ["activation 'Gelu' is not supported", "FusedConv"])
        nb = [("A", np.zeros((2, 32), np.float32), False), ("B", np.zeros((4, 1, 32), u8), True),
              ("scales", np.ones(4, np.float32), True)]
        refused(args, d, checks, "matmulnbits_bits8", "MatMulNBits", nb, {"K": 32, "N": 4, "bits": 8, "block_size": 32},
                ["bits=8 is not supported"])
        nb4 = [("A", np.zeros((2, 32), np.float32), False), ("B", np.zeros((4, 1, 16), u8), True),
               ("scales", np.ones(4, np.float32), True), ("", None, False),
               ("g_idx", np.zeros(32, np.int32), True)]
        refused(args, d, checks, "matmulnbits_gidx", "MatMulNBits", nb4, {"K": 32, "N": 4, "bits": 4, "block_size": 32},
                ["g_idx"])
        qa = [("A", np.zeros((2, 3), u8), False), ("A_scale", np.ones(3, np.float32), True), ("A_zero_point", z1, True),
              ("B", np.zeros((2, 3), u8), False), ("B_scale", s1, True), ("B_zero_point", z1, True),
              ("C_scale", s1, True), ("C_zero_point", z1, True)]
        refused(args, d, checks, "qlinearadd_per_channel", "QLinearAdd", qa, None, ["A_scale must hold one value"])
    checks.finish()


if __name__ == "__main__":
    main()
