"""ort_exact.py — ONNX Runtime as an exact reference for uint8 x int8 products on every x86 CPU.

On x86 CPUs without VNNI (AVX2 only: AMD Zen 3, Intel before Ice Lake) ONNX Runtime's MLAS
multiplies uint8 activations by int8 weights with vpmaddubsw, which adds each pair of
products in int16 *with saturation*: 255·127 + 255·127 = 64770 becomes 32767. ORT's
quantization guide names this ("U8S8 ... may have saturation issue", its answer is
reduce_range). Its uint8 x uint8 and int8 x int8 kernels widen to 16 bits first and are
exact, and so is kiln on every CPU (its integer dot products never saturate). A test that
compares kiln with ORT on such a CPU would compare with ORT's saturated sums.

`reference_model(path)` gives the model ORT should run instead: the same function with every
int8 weight initializer (and its zero point) re-encoded as uint8, q + 128 with zero point
zp + 128, so that (q - zp) — all the ops use — is unchanged and ORT takes its exact uint8 x
uint8 path. It rewrites only when `saturates()` (a probe: MatMulInteger of 255 x 127 pairs
in ORT on this machine) says ORT's uint8 x int8 kernel saturates here and its uint8 x uint8
kernel does not; elsewhere (VNNI: vpdpbusd adds in int32) the model is returned as it is.
Rewritten: the weights of MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv (when the
activation is uint8), of MatMulIntegerToFloat, QGemm (same), of DynamicQuantizeMatMul and
DynamicQuantizeLSTM (their activations are quantized to uint8), and the int8 initializers
that DequantizeLinear reads in a model whose QuantizeLinear nodes produce uint8 (QDQ models,
which ORT fuses into QLinearConv / QLinearMatMul).
"""
import functools
import os

# op -> (activation input index or None when the op quantizes its input to uint8 itself,
#        [(weight input, zero-point input, scale input whose shape a missing zero point takes)])
WEIGHTS = {
    "MatMulInteger": (0, [(1, 3, None)]),
    "ConvInteger": (0, [(1, 3, None)]),
    "QLinearMatMul": (0, [(3, 5, 4)]),
    "QLinearConv": (0, [(3, 5, 4)]),
    "MatMulIntegerToFloat": (0, [(1, 5, 3)]),
    "QGemm": (0, [(3, 5, 4)]),
    "DynamicQuantizeMatMul": (None, [(1, 3, 2)]),
    "DynamicQuantizeLSTM": (None, [(1, 9, 8), (2, 11, 10)]),
    "DequantizeLinear": (None, [(0, 2, 1)]),  # only in models whose activations are uint8
}


@functools.lru_cache(maxsize=None)
def saturates():
    """True when ORT's uint8 x int8 MatMulInteger saturates on this CPU while uint8 x uint8 is exact."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    def run(b):
        a = np.full((1, 4), 255, np.uint8)
        g = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "probe",
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])],
                              [numpy_helper.from_array(b, "b")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return int(s.run(None, {"a": a})[0][0, 0])

    s8 = run(np.full((4, 1), 127, np.int8))
    u8 = run(np.full((4, 1), 255, np.uint8))
    return s8 != 4 * 255 * 127 and u8 == 4 * 255 * 255


def _shift(arr):
    import numpy as np
    return (arr.astype(np.int16) + 128).astype(np.uint8)


def reference_model(path):
    """The path of the model ORT should run as the reference for `path` (see the module's doc)."""
    if not saturates():
        return path
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper
    m = onnx.load(path)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    try:
        inferred = onnx.shape_inference.infer_shapes(m)
        types = {v.name: v.type.tensor_type.elem_type
                 for v in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output)}
    except Exception:  # contrib ops ORT knows but onnx does not: no inferred types, graph inputs only
        types = {v.name: v.type.tensor_type.elem_type for v in g.input}
    for t in g.initializer:
        types[t.name] = t.data_type
    # a QDQ model's activations: uint8 when its QuantizeLinear nodes produce uint8
    # (a missing zero point means uint8)
    q_u8 = any(n.op_type == "QuantizeLinear" and
               (len(n.input) < 3 or not n.input[2] or types.get(n.input[2]) == TensorProto.UINT8)
               for n in g.node)
    made = {}

    def u8_init(name, shape_of=None):
        """The uint8 copy of int8 initializer `name` (or, with name empty, a zero point of 128
        shaped like initializer `shape_of`); None when it is not an int8 initializer."""
        key = (name, shape_of)
        if key in made:
            return made[key]
        if name:
            t = inits.get(name)
            if t is None or t.data_type != TensorProto.INT8:
                return None
            arr = _shift(numpy_helper.to_array(t))
        else:
            s = inits.get(shape_of) if shape_of else None
            arr = np.full(numpy_helper.to_array(s).shape if s is not None else (), 128, np.uint8)
        new = "%s__u8ref" % (name or (shape_of or "") + "__zp128")
        g.initializer.append(numpy_helper.from_array(arr, new))
        made[key] = new
        return new

    changed = False
    for n in g.node:
        spec = WEIGHTS.get(n.op_type)
        if spec is None or (n.op_type == "DequantizeLinear" and not q_u8):
            continue
        act, ws = spec
        if act is not None and types.get(n.input[act]) != TensorProto.UINT8:
            continue
        for wi, zi, si in ws:
            if wi >= len(n.input) or u8_init(n.input[wi]) is None:
                continue
            has_zp = zi < len(n.input) and n.input[zi]
            if has_zp and u8_init(n.input[zi]) is None:
                continue  # a zero point computed at run time: leave the node alone
            n.input[wi] = u8_init(n.input[wi])
            while len(n.input) <= zi:
                n.input.append("")
            n.input[zi] = u8_init(n.input[zi]) if has_zp else u8_init("", n.input[si] if si is not None else None)
            changed = True
    if not changed:
        return path
    # initializers the rewrite left unused go (ORT refuses an unused initializer that a
    # graph input does not name); below IR version 4 initializers are graph inputs too
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    dead = {t.name for t in g.initializer if t.name not in used}
    keep = [t for t in g.initializer if t.name not in dead]
    del g.initializer[:]
    g.initializer.extend(keep)
    keep_in = [v for v in g.input if v.name not in dead]
    del g.input[:]
    g.input.extend(keep_in)
    if m.ir_version < 4:
        names = {v.name for v in g.input}
        for t in g.initializer:
            if t.name not in names:
                g.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    out = os.path.splitext(path)[0] + ".u8ref.onnx"
    onnx.save(m, out)
    return out

