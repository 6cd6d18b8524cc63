"""test_contrib_lstm.py — ONNX Runtime's com.microsoft DynamicQuantizeLSTM as kiln
converts it (importer/ops_contrib_lstm.c: X and H quantized per matrix at run time,
integer GEMMs, as ORT's CPU kernel), one-node models built with onnx.helper, compiled
and run by kiln and compared with onnxruntime.InferenceSession on the same model (graph
optimizations off, one intra-op thread: with more, ORT quantizes H per batch chunk and
its own results change with the thread count).

Weights are float weights quantized the way ORT's quantizer does it: int8 symmetric
(zero point 0) per tensor or per column, or uint8 asymmetric per tensor; forward,
reverse and bidirectional, two shapes, with and without bias, initial states,
peepholes, clip, input_forget. Outputs Y, Y_h and Y_c are all compared.

Tolerance: rtol 0, atol 5e-4 (outputs are in [-1, 1]); measured max abs difference
<= 2.4e-7 on every case. kiln's integer products are ORT's exactly; only last-bit
float differences remain (MLAS's tanh and logistic approximations, the order of a few
additions). The margin is for the rare case where such a difference moves an
activation across a quantization rounding boundary at a later step (about one
weight-times-activation quantization step, ~1e-4; not seen here). Each case prints
its max abs difference and, beside it, that of ORT's float LSTM on the dequantized
weights (2e-3 .. 5e-3: what kiln would give without the activation quantization).
Refusals checked: sequence_lens shorter than the sequence, a per-column int8 zero point
that is not 0 — each fails with one clear line.

Options: --kiln PATH. Closing line: test_contrib_lstm: N passed, M failed.
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
INPUTS = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P",
          "W_scale", "W_zero_point", "R_scale", "R_zero_point"]
OUTS = ["Y", "Y_h", "Y_c"]
ATOL = 5e-4


def save(path, op, domain, ins, attrs):
    """ins: {name: (array, is_constant)}; absent names are empty inputs."""
    names = INPUTS if op == "DynamicQuantizeLSTM" else INPUTS[:8]
    vis, inits = [], []
    for name in names:
        if name in ins:
            arr, const = ins[name]
            if const:
                inits.append(numpy_helper.from_array(arr, name))
            else:
                vis.append(helper.make_tensor_value_info(name, NP2ONNX[arr.dtype], list(arr.shape)))
    used = [n if n in ins else "" for n in names]
    while used and not used[-1]:
        used.pop()
    node = helper.make_node(op, used, OUTS, domain=domain, name=op + "_0", **attrs)
    g = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in OUTS],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    onnx.save(m, path)


def ort_run(path, feeds):
    import onnxruntime as ort
    import ort_exact
    path = ort_exact.reference_model(path)  # int8 weights exact on CPUs without VNNI too
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def quantize(w, kind):
    """w [D, K, N] float → (q, scale, zero point, dequantized) as ORT's quantizer writes
    them: kind 'i8t' int8 symmetric per tensor, 'i8c' per column, 'u8t' uint8 per tensor."""
    D, _, N = w.shape
    if kind == "i8t" or kind == "i8c":
        amax = np.abs(w).max(axis=1) if kind == "i8c" else np.abs(w).reshape(D, -1).max(axis=1)  # [D, N] / [D]
        s = (amax / 127.0).astype(np.float32)
        sb = s[:, None, :] if kind == "i8c" else s[:, None, None]
        q = np.clip(np.rint(w / sb), -127, 127).astype(np.int8)
        zp = np.zeros(s.shape, np.int8)
        return q, s, zp, (q.astype(np.float32) * sb).astype(np.float32)
    lo = np.minimum(w.reshape(D, -1).min(axis=1), 0)
    hi = np.maximum(w.reshape(D, -1).max(axis=1), 0)
    s = ((hi - lo) / 255.0).astype(np.float32)
    zp = np.clip(np.rint(-lo / s), 0, 255).astype(np.uint8)
    q = np.clip(np.rint(w / s[:, None, None]) + zp[:, None, None], 0, 255).astype(np.uint8)
    deq = ((q.astype(np.float32) - zp[:, None, None]) * s[:, None, None]).astype(np.float32)
    return q, s, zp, deq


def make_case(rng, S, B, I, H, direction, wkind, bias=True, states=False, peep=False, clip=None, forget=0):
    D = 2 if direction == "bidirectional" else 1
    w = rng.standard_normal((D, I, 4 * H)).astype(np.float32) / np.sqrt(I)
    r = rng.standard_normal((D, H, 4 * H)).astype(np.float32) / np.sqrt(H)
    wq, ws, wz, wd = quantize(w, wkind)
    rq, rs, rz, rd = quantize(r, wkind)
    ins = {"X": (rng.uniform(-1, 1, (S, B, I)).astype(np.float32), False),
           "W": (wq, True), "R": (rq, True), "W_scale": (ws, True), "W_zero_point": (wz, True),
           "R_scale": (rs, True), "R_zero_point": (rz, True)}
    if bias:
        ins["B"] = (rng.uniform(-0.5, 0.5, (D, 8 * H)).astype(np.float32), True)
    if states:
        ins["initial_h"] = (rng.uniform(-0.5, 0.5, (D, B, H)).astype(np.float32), False)
        ins["initial_c"] = (rng.uniform(-0.5, 0.5, (D, B, H)).astype(np.float32), False)
        ins["sequence_lens"] = (np.full(B, S, np.int32), True)
    if peep:
        ins["P"] = (rng.uniform(-0.5, 0.5, (D, 3 * H)).astype(np.float32), True)
    attrs = {"hidden_size": H, "direction": direction}
    if clip is not None:
        attrs["clip"] = clip
    if forget:
        attrs["input_forget"] = forget
    # ONNX LSTM on the dequantized weights ([D, 4H, K] layout): the float-weights alternative
    fins = {k: v for k, v in ins.items() if k in INPUTS[:8]}
    fins["W"] = (np.ascontiguousarray(wd.transpose(0, 2, 1)), True)
    fins["R"] = (np.ascontiguousarray(rd.transpose(0, 2, 1)), True)
    label = "S%d B%d I%d H%d %s %s%s%s%s%s%s" % (S, B, I, H, direction, wkind, " bias" if bias else "",
                                              " states+lens" if states else "", " P" if peep else "",
                                              " clip" if clip is not None else "", " input_forget" if forget else "")
    return label, ins, attrs, fins


def cases(rng):
    for S, B, I, H in [(6, 3, 10, 16), (9, 2, 24, 12)]:
        for direction in ["forward", "reverse", "bidirectional"]:
            for wkind in ["i8t", "i8c", "u8t"]:
                yield make_case(rng, S, B, I, H, direction, wkind)
    yield make_case(rng, 5, 4, 8, 8, "bidirectional", "i8c", states=True, peep=True)
    yield make_case(rng, 5, 1, 8, 20, "forward", "u8t", bias=False, states=True, clip=0.8)
    yield make_case(rng, 4, 3, 6, 8, "reverse", "i8t", forget=1)


def run_case(args, d, i, label, ins, attrs, fins, checks):
    path = os.path.join(d, "m%d.onnx" % i)
    save(path, "DynamicQuantizeLSTM", "com.microsoft", ins, attrs)
    feeds = {name: arr for name, (arr, const) in ins.items() if not const}
    ys = util.compile_and_run(args.kiln, checks, label, path, feeds, d, "m%d" % i)
    if ys is None:
        return
    want = ort_run(path, feeds)
    fpath = os.path.join(d, "f%d.onnx" % i)
    save(fpath, "LSTM", "", fins, attrs)
    fl = ort_run(fpath, {k: v for k, (v, c) in fins.items() if not c})
    worst, fworst, oks = 0.0, 0.0, []
    for k, name in enumerate(OUTS):
        got = ys[name]
        ok, why, mabs, _ = test_e2e.compare(got, want[k], 0.0, ATOL)
        oks.append(checks.check(ok, "%s: %s: %s" % (label, name, why)))
        worst = max(worst, mabs if mabs is not None else float("inf"))
        fworst = max(fworst, float(np.abs(fl[k] - want[k]).max()))
    print("  %-58s %s, max abs diff %.3g (float weights: %.3g)" % (label[:58], "ok" if all(oks) else "FAIL",
                                                                   worst, fworst), flush=True)


def refused(args, d, checks, name, ins, attrs, words):
    path = os.path.join(d, name + ".onnx")
    save(path, "DynamicQuantizeLSTM", "com.microsoft", ins, attrs)
    r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, name + ".kiln")])
    checks.check(r.rc == 1 and all(w in r.err for w in words) and not util.clean_failure(r),
                 "%s is refused clearly: %s %r" % (name, r.describe(), r.err))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    args = ap.parse_args()
    checks = util.Checks("test_contrib_lstm")
    rng = np.random.default_rng(18)
    with tempfile.TemporaryDirectory(prefix="kiln_clstm_") as d:
        for i, (label, ins, attrs, fins) in enumerate(cases(rng)):
            run_case(args, d, i, label, ins, attrs, fins, checks)
        _, ins, attrs, _ = make_case(rng, 4, 2, 6, 8, "forward", "i8t")
        ins["sequence_lens"] = (np.array([4, 2], np.int32), True)
        refused(args, d, checks, "dqlstm_lens", ins, attrs, ["sequence_lens", "not supported"])
        _, ins, attrs, _ = make_case(rng, 4, 2, 6, 8, "forward", "i8c")
        ins["W_zero_point"] = (np.ones((1, 32), np.int8), True)
        refused(args, d, checks, "dqlstm_zp", ins, attrs, ["W_zero_point", "all 0"])
    checks.finish()


if __name__ == "__main__":
    main()
