"""test_qdq_units.py — QDQ units other than Conv/MatMul/Gemm (importer/qdq.c):
DequantizeLinear → Add / Mul / AveragePool / GlobalAveragePool / Sigmoid / LeakyRelu /
Softmax / Concat / MaxPool → QuantizeLinear, each a hand-built model with 8-bit inputs and output,
int8 and uint8, compiled and run by kiln and compared with ONNX Runtime at its default
optimization level — where its QDQ selectors fuse the unit into the com.microsoft QLinear
op (checked on ORT's optimized model), whose arithmetic kiln's import of the unit follows.

Checks per case: ORT fused the unit (or, for the unfit cases, did not); `kiln inspect`
counts the unit among its QDQ units (or not); kiln's output within the case's steps of
ORT's (the fraction of elements one step off is printed). Steps, as measured:
  exact (0)   AveragePool, GlobalAveragePool, LeakyRelu, Concat, MaxPool (with one scale
              and zero point on both sides ORT drops the DequantizeLinear and QuantizeLinear
              and runs MaxPool on the 8-bit values, as kiln does)
  <= 1 step   Add, Mul (ORT: fixed-point / folded scale ratios; measured: 1 step in
              0.5-12% of elements), Sigmoid (MLAS's logistic approximation), Softmax
              (ORT's exp table) — these two measured exact here, allowed the step
              test_contrib_quant.py allows their QLinear ops
Unfit units (the op's output also a graph output; output type not the input type) are
imported node by node, as ORT leaves them: float between DequantizeLinear and QuantizeLinear, <= 1 step;
a BatchNormalization between them (no QLinear op in ORT either) exact: kiln rounds in ORT's order
(bn_case puts results on rounding ties to tell the orders apart).

Options: --kiln PATH. Closing line: test_qdq_units: N passed, M failed.
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

T = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}


def qdata(rng, shape, dt):
    info = np.iinfo(dt)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dt)


def zp(dt, k):
    return np.array(((128, 100, 120, 90)[k] if dt == np.uint8 else (0, -20, 5, 12)[k]), dt)


class Case:
    """op on n inputs X0.. (8-bit, each through its own DequantizeLinear with scale
    scales[i]), then QuantizeLinear with y_scale; fused: whether ORT's selectors take it."""

    def __init__(self, label, op, shapes, dt, scales, y_scale, attrs, steps, fused=True, also_output=False,
                 out_dt=None, consts=(), feeds=None, power=None):
        self.label, self.op, self.shapes, self.dt, self.scales = label, op, shapes, dt, scales
        self.y_scale, self.attrs, self.steps, self.fused = y_scale, attrs or {}, steps, fused
        self.also_output, self.out_dt, self.consts = also_output, out_dt or dt, consts  # float inputs after X..
        self.feeds, self.power = feeds, power  # fixed inputs; (what, count) that shows the case can fail


def build(path, case):
    dt = case.dt
    vis, inits, nodes, dq_outs = [], [], [], []
    for i, shape in enumerate(case.shapes):
        x = "X%d" % i
        vis.append(helper.make_tensor_value_info(x, T[np.dtype(dt)], list(shape)))
        inits += [numpy_helper.from_array(np.array(case.scales[i], np.float32), "s%d" % i),
                  numpy_helper.from_array(zp(dt, i % 2), "z%d" % i)]
        nodes.append(helper.make_node("DequantizeLinear", [x, "s%d" % i, "z%d" % i], ["d%d" % i], name="dq%d" % i))
        dq_outs.append("d%d" % i)
    for k, v in enumerate(case.consts):
        inits.append(numpy_helper.from_array(v, "c%d" % k))
        dq_outs.append("c%d" % k)
    nodes.append(helper.make_node(case.op, dq_outs, ["f"], name="op", **case.attrs))
    same = case.op == "MaxPool" and case.fused  # ORT's DropQDQ: the input's scale and zero point
    inits += [numpy_helper.from_array(np.array(case.scales[0] if same else case.y_scale, np.float32), "ys"),
              numpy_helper.from_array(zp(case.out_dt, 0 if same else 2), "yz")]
    nodes.append(helper.make_node("QuantizeLinear", ["f", "ys", "yz"], ["Y"], name="q"))
    outs = [helper.make_tensor_value_info("Y", T[np.dtype(case.out_dt)], None)]
    if case.also_output:
        outs.append(helper.make_tensor_value_info("f", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", vis, outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def ort_run(path, feeds, opt_path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 2
    so.optimized_model_filepath = opt_path  # default optimization level: ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    y = sess.run(["Y"], feeds)[0]
    ops = [n.op_type for n in onnx.load(opt_path).graph.node]
    return y, ops


def cases():
    out = []
    for dt in (np.uint8, np.int8):
        n = np.dtype(dt).name
        for op in ("Add", "Mul"):
            for sa, sb in (((2, 3, 8, 8), (2, 3, 8, 8)), ((4, 16), (16,)), ((3, 1, 5), (1, 4, 5))):
                ys = 0.08 if op == "Add" else 0.02
                out.append(Case("%s %s %s+%s" % (op, n, sa, sb), op, [sa, sb], dt, [0.05, 0.03], ys, None, 1))
        for attrs in ({"kernel_shape": [3, 3]}, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
                      {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0], "count_include_pad": 1}):
            out.append(Case("AveragePool %s %s" % (n, attrs), "AveragePool", [(1, 4, 9, 9)], dt, [0.05], 0.04,
                            attrs, 0))
        for shape in ((1, 8, 7, 7), (2, 3, 5, 6)):
            out.append(Case("GlobalAveragePool %s %s" % (n, shape), "GlobalAveragePool", [shape], dt, [0.05], 0.03,
                            None, 0))
        out.append(Case("Sigmoid %s" % n, "Sigmoid", [(2, 3, 8, 8)], dt, [0.06], 1 / 256.0, None, 1))
        out.append(Case("LeakyRelu %s" % n, "LeakyRelu", [(2, 3, 8, 8)], dt, [0.05], 0.03, {"alpha": 0.1}, 0))
        for axis in (-1, 1):
            out.append(Case("Softmax %s axis %d" % (n, axis), "Softmax", [(2, 6, 10)], dt, [0.1], 1 / 256.0,
                            {"axis": axis}, 1))
        out.append(Case("Concat %s 3 inputs" % n, "Concat", [(1, 2, 4, 4), (1, 3, 4, 4), (1, 1, 4, 4)], dt,
                        [0.05, 0.03, 0.05], 0.04, {"axis": 1}, 0))
        for attrs in ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, {"kernel_shape": [2, 2]}):
            out.append(Case("MaxPool %s %s" % (n, attrs), "MaxPool", [(1, 4, 9, 9)], dt, [0.05], 0.05, attrs, 0))
        # unfit: node by node in both
        out.append(Case("Add %s, its output also a graph output (no unit)" % n, "Add", [(4, 16), (4, 16)], dt,
                        [0.05, 0.03], 0.08, None, 1, fused=False, also_output=True))
        other = np.int8 if dt == np.uint8 else np.uint8
        out.append(Case("Sigmoid %s in, %s out (no unit)" % (n, np.dtype(other).name), "Sigmoid", [(2, 3, 4, 4)],
                        dt, [0.06], 1 / 256.0, None, 1, fused=False, out_dt=other))
        out.append(bn_case(dt))
        out.append(Case("MaxPool %s, another scale out (float between)" % n, "MaxPool", [(1, 4, 9, 9)], dt, [0.05],
                        0.07, {"kernel_shape": [3, 3]}, 1, fused=False))
    return out


def bn_case(dt):
    """A BatchNormalization a quantizer left between DequantizeLinear and QuantizeLinear (ORT
    1.30's quant_pre_process with onnx 1.23 does not fold it into the conv): float in both,
    exact when kiln rounds as ORT's kernel does — scale' = scale · (1 / sqrt(var + eps)),
    y = x · scale' + (B - mean · scale'). Each channel's B puts one input level's exact result
    on a rounding tie of the output scale and every channel holds all 256 levels, so another
    order of rounding ((x - mean) · (scale / sqrt(var + eps)) + B, what kiln did) lands on
    the other side of some ties: the case counts them with numpy first (its power)."""
    c, r = 64, np.random.default_rng(7)
    xs, ys, eps = np.float32(0.0735), np.float32(0.0872), np.float32(1e-5)
    zx, zy = zp(dt, 0).astype(np.float32), zp(dt, 2).astype(np.float32)
    g = (r.integers(40, 127, c) * 0.00944).astype(np.float32)
    mean, var = r.normal(0, 0.5, c).astype(np.float32), r.uniform(0.3, 3.0, c).astype(np.float32)
    info = np.iinfo(dt)
    lv = r.integers(info.min, int(info.max) + 1, c)
    x0 = ((lv - zx).astype(np.float32) * xs).astype(np.float64)
    f64 = g.astype(np.float64) / np.sqrt(var.astype(np.float64) + float(eps))
    b = ((r.integers(-60, 60, c) + 0.5) * float(ys) - (x0 - mean) * f64).astype(np.float32)
    levels = np.arange(info.min, int(info.max) + 1)
    x = np.stack([r.permutation(levels) for _ in range(c)]).reshape(1, c, 16, 16).astype(dt)
    xf = ((x.astype(np.float32) - zx) * xs)[0].reshape(c, -1)
    col = lambda v: v[:, None]
    fi = (np.float32(1) / np.sqrt(var + eps)) * g
    fd = g / np.sqrt(var + eps)
    q = lambda y: np.clip(np.round(y / ys) + zy, info.min, info.max)
    other = int(np.count_nonzero(q(xf * col(fi) + col(b - mean * fi)) != q((xf - col(mean)) * col(fd) + col(b))))
    n = np.dtype(dt).name
    return Case("BatchNormalization %s (float between, no unit)" % n, "BatchNormalization", [(1, c, 16, 16)], dt,
                [xs], ys, {"epsilon": float(eps)}, 0, fused=False, consts=[g, b, mean, var], feeds={"X0": x},
                power=("elements where the other order of rounding quantizes differently", other))


QOP = {"Add": "QLinearAdd", "Mul": "QLinearMul", "AveragePool": "QLinearAveragePool",
       "GlobalAveragePool": "QLinearGlobalAveragePool", "Sigmoid": "QLinearSigmoid",
       "LeakyRelu": "QLinearLeakyRelu", "Softmax": "QLinearSoftmax", "Concat": "QLinearConcat"}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    args = ap.parse_args()
    checks = util.Checks("test_qdq_units")
    rng = np.random.default_rng(1717)
    with tempfile.TemporaryDirectory(prefix="kiln_qdqu_") as d:
        for i, case in enumerate(cases()):
            path = os.path.join(d, "m%d.onnx" % i)
            build(path, case)
            feeds = case.feeds or {"X%d" % j: qdata(rng, shape, case.dt) for j, shape in enumerate(case.shapes)}
            if case.power:
                checks.check(case.power[1] > 0, "%s: %d %s (the case can fail)" % (case.label, case.power[1],
                                                                                  case.power[0]))
            want, ort_ops = ort_run(path, feeds, os.path.join(d, "m%d_ort.onnx" % i))
            fused = QOP[case.op] in ort_ops if case.op in QOP else "DequantizeLinear" not in ort_ops
            checks.check(fused == case.fused, "%s: ONNX Runtime %s the unit (%s)" % (
                case.label, "fused" if fused else "did not fuse", " ".join(ort_ops)))
            insp = util.run_kiln(args.kiln, ["inspect", path])
            units = 0  # the line is left out when there are none
            for line in insp.out.splitlines():
                if line.startswith("QDQ units imported"):
                    units = int(line.rsplit(":", 1)[1])
            checks.check(insp.rc == 0 and units == int(case.fused),
                         "%s: kiln inspect counts %d QDQ units, want %d" % (case.label, units, int(case.fused)))
            ys = util.compile_and_run(args.kiln, checks, case.label, path, feeds, d, "m%d" % i)
            if ys is None:
                continue
            got = ys["Y"]
            if not checks.check(got.shape == want.shape and got.dtype == want.dtype,
                                "%s: kiln %s %s, onnxruntime %s %s" % (case.label, got.shape, got.dtype, want.shape,
                                                                       want.dtype)):
                continue
            diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
            worst = int(diff.max()) if diff.size else 0
            frac = float(np.count_nonzero(diff)) / max(diff.size, 1)
            ok = worst <= case.steps
            print("  %-72s %s, max %d step(s), %.2f%% off" % (case.label[:72], "ok" if ok else "FAIL", worst,
                                                              100 * frac), flush=True)
            checks.check(ok, "%s: max %d steps off onnxruntime, want <= %d" % (case.label, worst, case.steps))
    checks.finish()


if __name__ == "__main__":
    main()
