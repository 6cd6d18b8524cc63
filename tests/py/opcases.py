"""opcases.py — the case table of test_ops.py: small ONNX models that exercise every
canonical op of graphir/ops.def (and every function of unary.def, binary.def and
reduce.def) through the ONNX op(s) the importer maps onto it, on several shapes
(broadcasts, size-1 dims, odd sizes such as 7 and 13, scalars), attribute
combinations and the dtypes onnxruntime's CPU provider implements for that op.

A Case is one model: its nodes, its graph inputs (fed at run time and written as
input_N.pb) and initializers (constant shape arguments: Reshape's shape, Slice's
starts...), each given as an array or as a generator `f(rng) -> array` that
test_ops.py calls with a numpy RNG seeded from the case's name, so every run sees
the same data. Generators keep the reference well defined: indices in range, no
duplicate scatter targets without a reduction, no ties where the order of equal
elements is unspecified, no integer overflow, no division by zero, arguments inside
the domain of log/sqrt/acos...

ALL is the table; REFERENCE_ORACLE names the cases checked against the onnx
reference implementation instead of onnxruntime (with the reason); KNOWN_FAIL
maps the names of the cases test_ops.py prints as KNOWN-FAIL (they still count
as failed) to the reason.
"""
import numpy as np
from onnx import helper

DT = {
    "f32": np.float32, "f16": np.float16, "f64": np.float64,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "bool": np.bool_,
}
FLOATS = ("f32", "f16", "f64")

# Cases whose expected outputs come from the onnx reference implementation
# (onnx.reference) instead of onnxruntime, with the reason: here onnxruntime departs
# from the reference, which is what generates the ONNX conformance data kiln must
# pass. Every other case is checked against onnxruntime.
_ORT_RESIZE = "onnxruntime differs from the onnx reference (the conformance data): %s"
REFERENCE_ORACLE = {
    "resize/Resize/linear/align_corners/scales1,1,2,1.5/f32/1x2x5x7":
        _ORT_RESIZE % "align_corners with scales: onnxruntime divides by (output size - 1), onnx by (in*scale - 1)",
    "resize/Resize/cubic/align_corners/scales1,1,2,1.5/f32/1x2x5x7":
        _ORT_RESIZE % "align_corners with scales: onnxruntime divides by (output size - 1), onnx by (in*scale - 1)",
    "resize/Resize/linear/asymmetric/scales1,1,2,2/u8/1x2x5x7":
        _ORT_RESIZE % "integer linear results: onnxruntime truncates, onnx rounds half to even",
    "resize/Resize/linear/asymmetric/scales1,1,2,2/i32/1x2x5x7":
        _ORT_RESIZE % "integer linear results: onnxruntime truncates, onnx rounds half to even",
    "bitcast/BitCast/bool->u8/2x3x1x5": "onnxruntime has no BitCast kernel for bool",
    "bitcast/BitCast/bool->i8/13": "onnxruntime has no BitCast kernel for bool",
    "bitcast/BitCast/u8->bool/0or1/3x5": "onnxruntime has no BitCast kernel for bool",
}
# float64: the same model run in double on onnxruntime, rounded to float32
FLOAT64_ORACLE = {
    "layer_norm/LayerNormalization/offset/f32/4x33":
        "rows with mean 300: the float32 statistics of onnxruntime (8e-5 off) and of the onnx reference (2e-5 off) "
        "are coarser than the tolerance; kiln accumulates them in double",
}
KNOWN_FAIL = {}


def oracle_of(name):
    if name in REFERENCE_ORACLE:
        return "onnx"
    return "float64" if name in FLOAT64_ORACLE else "onnxruntime"


def oracle_reason(name):
    return REFERENCE_ORACLE.get(name) or FLOAT64_ORACLE.get(name)


class Case:
    """One test model. inputs/inits: [(name, array or f(rng) -> array)];
    nodes: onnx NodeProtos; outputs: graph output names."""

    def __init__(self, name, op, nodes, inputs, outputs, inits=(), opset=21):
        self.name, self.op, self.nodes = name, op, list(nodes)
        self.inputs, self.outputs, self.inits = list(inputs), list(outputs), list(inits)
        self.opset = opset


def node(op_type, ins, outs, **attrs):
    return helper.make_node(op_type, list(ins), list(outs), **attrs)


def sh(shape):
    """(2, 3, 4) → "2x3x4"; () → "s"."""
    return "x".join(str(d) for d in shape) if shape else "s"


# ---------------------------------------------------------------------------
# input generators: each returns f(rng) -> array

def rnd(shape, dt="f32", lo=None, hi=None):
    """Uniform values: floats in [lo, hi) (default [-3, 3)); integers in [lo, hi]
    (default [-10, 10], unsigned [0, 20]); bools fair coins."""
    t = DT[dt]

    def gen(rng):
        if dt == "bool":
            return rng.random(shape) < 0.5
        if dt in FLOATS:
            a, b = (-3.0 if lo is None else lo), (3.0 if hi is None else hi)
            return rng.uniform(a, b, shape).astype(t)
        unsigned = dt.startswith("u")
        a = (0 if unsigned else -10) if lo is None else lo
        b = (20 if unsigned else 10) if hi is None else hi
        return rng.integers(a, b + 1, shape).astype(t)
    return gen


def nonzero(shape, dt="f32", lo=0.5, hi=3.0):
    """Magnitudes in [lo, hi] with random signs (ints: 1..hi)."""
    t = DT[dt]

    def gen(rng):
        s = np.where(rng.random(shape) < 0.5, -1, 1)
        if dt in FLOATS:
            return (s * rng.uniform(lo, hi, shape)).astype(t)
        return (s * rng.integers(1, int(hi) + 1, shape)).astype(t)
    return gen


def distinct(shape, dt="f32", scale=0.25):
    """Distinct values (a shuffled arange, spread out): no ties."""
    t = DT[dt]

    def gen(rng):
        n = int(np.prod(shape)) if shape else 1
        v = rng.permutation(n).astype(np.float64) - n // 2
        if dt in FLOATS:
            v = v * scale + rng.uniform(0, scale / 4, n)
        return v.reshape(shape).astype(t)
    return gen


def index(shape, dim, dt="i64", negative=True):
    """Indices into an axis of size dim, some of them negative (from the end)."""
    t = DT[dt]

    def gen(rng):
        v = rng.integers(0, dim, shape)
        if negative:
            v = np.where(rng.random(shape) < 0.3, v - dim, v)
        return np.asarray(v).astype(t)
    return gen


def const(arr):
    return lambda rng: arr


def special(shape, dt="f32"):
    """Random values with NaN, +inf and -inf sprinkled in."""
    t = DT[dt]

    def gen(rng):
        v = rng.uniform(-3, 3, shape)
        r = rng.random(shape)
        v = np.where(r < 0.15, np.nan, v)
        v = np.where((r >= 0.15) & (r < 0.3), np.inf, v)
        v = np.where((r >= 0.3) & (r < 0.45), -np.inf, v)
        return v.astype(t)
    return gen


def i64(*v):
    return np.array(v, dtype=np.int64)


def f32(*v):
    return np.array(v, dtype=np.float32)


def single(name, op, onnx_op, inputs, attrs=None, inits=(), nout=1, opset=21, out_names=None):
    """A one-node case: inputs and inits are (name, gen); node inputs are the
    input names then the init names, in the order given by `order` when a name
    list is wanted instead (pass inputs with "" names to skip optional slots)."""
    outs = out_names or (["y"] if nout == 1 else ["y%d" % i for i in range(nout)])
    ins = [n for n, _ in inputs] + [n for n, _ in inits]
    return Case(name, op, [node(onnx_op, ins, outs, **(attrs or {}))], inputs, outs, inits, opset)


def one(name, op, onnx_op, ins, inputs, inits=(), attrs=None, outs=("y",), opset=21):
    """A one-node case with the node's input list given explicitly (optional slots "")."""
    return Case(name, op, [node(onnx_op, ins, outs, **(attrs or {}))], inputs, list(outs), inits, opset)


# ---------------------------------------------------------------------------
# unary

UNARY_SHAPES = [(7, 13), (2, 3, 1, 5)]


def _unary_table():
    """(ONNX op, attrs, dtypes beyond the f32 shapes, generator(shape, dt), opset, tag)."""
    pos = lambda s, d: rnd(s, d, 0.05, 4.0)
    unit = lambda s, d: rnd(s, d, -0.95, 0.95)
    big = lambda s, d: rnd(s, d, 1.05, 5.0)
    nz = lambda s, d: nonzero(s, d)
    std = lambda s, d: rnd(s, d)
    halves = lambda s, d: (lambda rng: (rng.integers(-12, 13, s) * 0.5 + np.where(rng.random(s) < 0.5, 0.0,
                                                                                     rng.uniform(-0.2, 0.2, s)))
                           .astype(DT[d]))
    T = [
        ("Neg", {}, ["f16", "f64", "i8", "i32", "i64"], std, 21, ""),
        ("Abs", {}, ["f16", "f64", "i8", "i16", "i32", "i64", "u8"], std, 21, ""),
        ("Sign", {}, ["f16", "f64", "i8", "i32", "i64", "u8"], std, 21, ""),
        ("Exp", {}, ["f16", "f64"], std, 21, ""),
        ("Log", {}, ["f16", "f64"], pos, 21, ""),
        ("Sqrt", {}, ["f16", "f64"], pos, 21, ""),
        ("Reciprocal", {}, ["f16", "f64"], nz, 21, ""),
        ("Ceil", {}, ["f16", "f64"], std, 21, ""),
        ("Floor", {}, ["f16", "f64"], std, 21, ""),
        ("Round", {}, ["f16", "f64"], halves, 21, ""),
        ("Sigmoid", {}, ["f16", "f64"], std, 21, ""),
        ("Tanh", {}, ["f16", "f64"], std, 21, ""),
        ("Erf", {}, ["f16"], std, 21, ""),
        ("Relu", {}, ["f16", "f64", "i8", "i32"], std, 21, ""),
        ("Sin", {}, ["f16", "f64"], std, 21, ""),
        ("Cos", {}, ["f16", "f64"], std, 21, ""),
        ("Tan", {}, [], lambda s, d: rnd(s, d, -1.4, 1.4), 21, ""),
        ("Asin", {}, [], unit, 21, ""),
        ("Acos", {}, [], unit, 21, ""),
        ("Atan", {}, [], std, 21, ""),
        ("Sinh", {}, [], std, 21, ""),
        ("Cosh", {}, [], std, 21, ""),
        ("Asinh", {}, [], std, 21, ""),
        ("Acosh", {}, [], big, 21, ""),
        ("Atanh", {}, [], unit, 21, ""),
        ("Softplus", {}, ["f16"], lambda s, d: rnd(s, d, -8, 8), 21, ""),
        ("Softsign", {}, ["f16"], std, 21, ""),
        ("LeakyRelu", {}, ["f16"], std, 21, ""),
        ("LeakyRelu", {"alpha": 0.3}, [], std, 21, "a0.3"),
        ("Elu", {}, [], std, 21, ""),
        ("Elu", {"alpha": 0.5}, [], std, 21, "a0.5"),
        ("Selu", {}, [], std, 21, ""),
        ("Selu", {"alpha": 2.0, "gamma": 0.5}, [], std, 21, "a2g0.5"),
        ("Celu", {}, [], std, 21, ""),
        ("Celu", {"alpha": 2.5}, [], std, 21, "a2.5"),
        ("HardSigmoid", {}, ["f16"], lambda s, d: rnd(s, d, -5, 5), 21, ""),
        ("HardSigmoid", {"alpha": 0.4, "beta": 0.3}, [], lambda s, d: rnd(s, d, -5, 5), 21, "a0.4b0.3"),
        ("HardSwish", {}, ["f16"], lambda s, d: rnd(s, d, -5, 5), 22, ""),
        ("ThresholdedRelu", {}, [], std, 22, ""),
        ("ThresholdedRelu", {"alpha": 0.25}, [], std, 22, "a0.25"),
        ("Gelu", {}, ["f16"], std, 20, ""),
        ("Gelu", {"approximate": "tanh"}, ["f16"], std, 20, "tanh"),
        ("Mish", {}, ["f16"], std, 22, ""),
        ("Shrink", {}, ["f64", "i32", "i8"], std, 21, ""),
        ("Shrink", {"lambd": 1.5, "bias": 0.7}, [], std, 21, "l1.5b0.7"),
        ("Swish", {}, ["f64"], std, 24, ""),
        ("Swish", {"alpha": 1.7}, [], std, 24, "a1.7"),
        ("Not", {}, [], None, 21, ""),
        ("BitwiseNot", {}, [], None, 18, ""),
        ("IsNaN", {}, ["f16", "f64"], None, 20, ""),
        ("IsInf", {}, ["f16", "f64"], None, 20, ""),
        ("IsInf", {"detect_negative": 0}, [], None, 20, "pos"),
        ("IsInf", {"detect_positive": 0}, [], None, 20, "neg"),
    ]
    return T


UNARY_FN = {"Neg": "neg", "Abs": "abs", "Sign": "sign", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
            "Reciprocal": "reciprocal", "Ceil": "ceil", "Floor": "floor", "Round": "round", "Sigmoid": "sigmoid",
            "Tanh": "tanh", "Erf": "erf", "Relu": "relu", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin",
            "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh",
            "Atanh": "atanh", "Not": "not", "BitwiseNot": "bitnot", "IsNaN": "isnan", "IsInf": "isinf",
            "Softplus": "softplus", "Softsign": "softsign", "LeakyRelu": "leaky_relu", "Elu": "elu", "Selu": "selu",
            "Celu": "celu", "HardSigmoid": "hard_sigmoid", "HardSwish": "hard_swish",
            "ThresholdedRelu": "thresholded_relu", "Gelu": "gelu", "Mish": "mish", "Shrink": "shrink",
            "Swish": "swish"}


def unary_cases():
    cs = []
    for op, attrs, dts, gen, opset, tag in _unary_table():
        fn = UNARY_FN[op]
        base = "unary/%s/%s%s" % (fn, op, "/" + tag if tag else "")
        if op == "Not":
            for s in [(7, 13), (2, 3, 1, 5), ()]:
                cs.append(single("%s/bool/%s" % (base, sh(s)), "unary", op, [("x", rnd(s, "bool"))], attrs, opset=opset))
            continue
        if op == "BitwiseNot":
            for dt, s in [("i32", (7, 13)), ("i8", (2, 3, 1, 5)), ("u8", (13,)), ("i64", (3, 5)), ("u16", (4, 3)),
                          ("u32", (5,)), ("u64", (2, 3)), ("i16", (3, 1))]:
                g = rnd(s, dt, -100, 100) if not dt.startswith("u") else rnd(s, dt, 0, 250)
                cs.append(single("%s/%s/%s" % (base, dt, sh(s)), "unary", op, [("x", g)], attrs, opset=opset))
            continue
        if op in ("IsNaN", "IsInf"):
            shapes = [("f32", (7, 13)), ("f32", (2, 3, 1, 5))] if not tag else [("f32", (7, 13))]
            shapes += [(d, (3, 7)) for d in dts]
            for dt, s in shapes:
                cs.append(single("%s/%s/%s" % (base, dt, sh(s)), "unary", op, [("x", special(s, dt))], attrs,
                                 opset=opset))
            continue
        shapes = [("f32", s) for s in (UNARY_SHAPES if not tag else UNARY_SHAPES[:1])]
        if not tag and op in ("Relu", "Exp", "Neg", "Sigmoid", "Abs"):
            shapes.append(("f32", ()))
        shapes += [(d, (3, 7)) for d in dts]
        for dt, s in shapes:
            cs.append(single("%s/%s/%s" % (base, dt, sh(s)), "unary", op, [("x", gen(s, dt))], attrs, opset=opset))
    # long rows (vectorized main loop plus a remainder)
    for op, g in [("Exp", rnd((3, 67))), ("Sigmoid", rnd((67,))), ("Tanh", rnd((2, 37))), ("Abs", rnd((3, 67), "i32")),
                  ("Sqrt", rnd((2, 67), "f32", 0.1, 4)), ("Neg", rnd((3, 67), "f16"))]:
        cs.append(single("unary/%s/%s/long/%s" % (UNARY_FN[op], op, "x".join(str(d) for d in g(np.random.default_rng(0)).shape)),
                         "unary", op, [("x", g)]))
    # Clip: max/min with (optional) constant bounds
    for dt, s in [("f32", (7, 13)), ("f16", (3, 7)), ("f64", (3, 7)), ("i32", (3, 7)), ("i64", (2, 5)),
                  ("i8", (13,)), ("u8", (13,))]:
        lo, hi = (np.array(-1.5, DT[dt]), np.array(2.0, DT[dt])) if dt in FLOATS else (
            np.array(-4 if not dt.startswith("u") else 3, DT[dt]), np.array(6, DT[dt]))
        cs.append(one("binary/max+min/Clip/%s/%s" % (dt, sh(s)), "binary", "Clip", ["x", "lo", "hi"],
                      [("x", rnd(s, dt))], [("lo", lo), ("hi", hi)]))
    cs.append(one("binary/max/Clip/min-only/f32/7x13", "binary", "Clip", ["x", "lo"], [("x", rnd((7, 13)))],
                  [("lo", np.array(0.25, np.float32))]))
    cs.append(one("binary/min/Clip/max-only/f32/2x3x1x5", "binary", "Clip", ["x", "", "hi"],
                  [("x", rnd((2, 3, 1, 5)))], [("hi", np.array(0.5, np.float32))]))
    cs.append(one("binary/max+min/Clip/runtime-bounds/f32/7x13", "binary", "Clip", ["x", "lo", "hi"],
                  [("x", rnd((7, 13))), ("lo", rnd((), "f32", -2, -1)), ("hi", rnd((), "f32", 1, 2))]))
    return cs


# ---------------------------------------------------------------------------
# binary

BCAST = [((7, 13), (7, 13)), ((3, 1, 5), (4, 1)), ((2, 3, 4), ()), ((1,), (13,)), ((2, 1, 3, 1), (5, 1, 7))]


def binary_cases():
    cs = []

    def add(fn, op, dt, sa, sb, ga, gb, attrs=None, opset=21, tag=""):
        name = "binary/%s/%s%s/%s/%s+%s" % (fn, op, "/" + tag if tag else "", dt, sh(sa), sh(sb))
        cs.append(single(name, "binary", op, [("a", ga(sa, dt)), ("b", gb(sb, dt))], attrs, opset=opset))

    std = lambda s, d: rnd(s, d)
    nz = lambda s, d: nonzero(s, d, 0.5, 3.0) if d in FLOATS else nonzero(s, d, 1, 7)
    for fn, op, gb in [("add", "Add", std), ("sub", "Sub", std), ("mul", "Mul", std), ("div", "Div", nz)]:
        for sa, sb in BCAST:
            add(fn, op, "f32", sa, sb, std, gb)
        for dt in ["f16", "f64", "i32", "i64", "i8", "u8"]:
            sa, sb = BCAST[1] if dt in ("i32", "f16") else BCAST[0] if dt != "i64" else BCAST[4]
            add(fn, op, dt, sa, sb, std, gb)
    # int division truncates toward zero: dividends of both signs
    add("div", "Div", "i32", (7, 13), (13,), lambda s, d: rnd(s, d, -50, 50), nz, tag="trunc")
    add("div", "Div", "i64", (3, 5), (3, 1), lambda s, d: rnd(s, d, -50, 50), nz, tag="trunc")
    # pow
    posb = lambda s, d: rnd(s, d, 0.2, 2.5)
    add("pow", "Pow", "f32", (7, 13), (7, 13), posb, lambda s, d: rnd(s, d, -2, 2))
    add("pow", "Pow", "f32", (3, 1, 5), (4, 1), posb, lambda s, d: rnd(s, d, -2, 2))
    add("pow", "Pow", "f32", (2, 3, 4), (), std, lambda s, d: const(np.array(2.0, np.float32)), tag="square")
    add("pow", "Pow", "f32", (2, 3, 4), (), std, lambda s, d: const(np.array(3.0, np.float32)), tag="cube")
    add("pow", "Pow", "f64", (3, 7), (7,), posb, lambda s, d: rnd(s, d, -2, 2))
    add("pow", "Pow", "f16", (3, 7), (7,), posb, lambda s, d: rnd(s, d, -2, 2))
    add("pow", "Pow", "i32", (3, 7), (7,), lambda s, d: rnd(s, d, -4, 4), lambda s, d: rnd(s, d, 0, 4))
    add("pow", "Pow", "i64", (3, 7), (3, 1), lambda s, d: rnd(s, d, -4, 4), lambda s, d: rnd(s, d, 0, 5))
    cs.append(single("binary/pow/Pow/mixed/f32^i64/3x7+7", "binary", "Pow",
                     [("a", rnd((3, 7), "f32", -3, 3)), ("b", rnd((7,), "i64", 0, 3))]))
    cs.append(single("binary/pow/Pow/mixed/f32^i32/3x7+s", "binary", "Pow",
                     [("a", rnd((3, 7), "f32", 0.1, 3)), ("b", rnd((), "i32", -2, 3))]))
    # max / min / sum / mean (variadic: fold left)
    for fn, op in [("max", "Max"), ("min", "Min")]:
        for sa, sb in BCAST[:3]:
            add(fn, op, "f32", sa, sb, std, std)
        for dt in ["f16", "f64", "i32", "i64", "u8", "i8"]:
            add(fn, op, dt, (3, 7), (7,), std, std)
        cs.append(Case("binary/%s/%s/3-inputs/f32/3x1x5+4x1+5" % (fn, op), "binary",
                       [node(op, ["a", "b", "c"], ["y"])],
                       [("a", rnd((3, 1, 5))), ("b", rnd((4, 1))), ("c", rnd((5,)))], ["y"]))
    for fn, op in [("add", "Sum"), ("add+div", "Mean")]:
        cs.append(Case("binary/%s/%s/3-inputs/f32/3x1x5+4x1+5" % (fn, op), "binary",
                       [node(op, ["a", "b", "c"], ["y"])],
                       [("a", rnd((3, 1, 5))), ("b", rnd((4, 1))), ("c", rnd((5,)))], ["y"]))
        cs.append(Case("binary/%s/%s/1-input/f32/7x13" % (fn, op), "binary", [node(op, ["a"], ["y"])],
                       [("a", rnd((7, 13)))], ["y"]))
        cs.append(Case("binary/%s/%s/2-inputs/f32/3x7+7" % (fn, op), "binary", [node(op, ["a", "b"], ["y"])],
                       [("a", rnd((3, 7))), ("b", rnd((7,)))], ["y"]))
    # mod (fmod=0: integers, divisor's sign) and fmod (fmod=1: dividend's sign)
    wide = lambda s, d: rnd(s, d, -40, 40)
    for dt, sa, sb in [("i32", (7, 13), (7, 13)), ("i64", (3, 1, 5), (4, 1)), ("i8", (13,), ()),
                       ("u8", (3, 7), (7,)), ("i16", (3, 7), (3, 1))]:
        ga = wide if not dt.startswith("u") else (lambda s, d: rnd(s, d, 0, 200))
        gb = nz if not dt.startswith("u") else (lambda s, d: rnd(s, d, 1, 9))
        add("mod", "Mod", dt, sa, sb, ga, gb)
    for dt, sa, sb in [("f32", (7, 13), (7, 13)), ("f32", (3, 1, 5), (4, 1)), ("f64", (3, 7), (7,)),
                       ("f16", (3, 7), (7,)), ("i32", (7, 13), (13,)), ("i64", (3, 7), (3, 1))]:
        ga = (lambda s, d: rnd(s, d, -10, 10)) if dt in FLOATS else wide
        add("fmod", "Mod", dt, sa, sb, ga, nz, attrs={"fmod": 1})
    # prelu: slope broadcast per channel, full, scalar
    for dt, sa, sb in [("f32", (2, 3, 5, 7), (3, 1, 1)), ("f32", (7, 13), (7, 13)), ("f32", (2, 3, 4), (1,)),
                       ("f32", (3, 13), (13,)), ("f16", (2, 3, 5), (3, 1)), ("f64", (2, 3, 5), (5,)),
                       ("i32", (3, 7), (7,)), ("i64", (3, 7), (7,))]:
        add("prelu", "PRelu", dt, sa, sb, std, lambda s, d: rnd(s, d, -1, 1) if d in FLOATS else rnd(s, d, -3, 3),
            opset=16)
    # logical
    for fn, op in [("and", "And"), ("or", "Or"), ("xor", "Xor")]:
        for sa, sb in BCAST[:2] + BCAST[4:]:
            add(fn, op, "bool", sa, sb, std, std)
    # bitwise
    for fn, op in [("bitand", "BitwiseAnd"), ("bitor", "BitwiseOr"), ("bitxor", "BitwiseXor")]:
        for dt, (sa, sb) in [("i32", BCAST[0]), ("u8", BCAST[1]), ("i64", BCAST[2]), ("i8", BCAST[4]),
                             ("u16", BCAST[3]), ("u32", BCAST[0]), ("u64", BCAST[1]), ("i16", BCAST[0])]:
            g = (lambda s, d: rnd(s, d, -120, 120)) if not dt.startswith("u") else (lambda s, d: rnd(s, d, 0, 250))
            add(fn, op, dt, sa, sb, g, g, opset=18)
    # shifts (unsigned only)
    for fn, dirn in [("shl", "LEFT"), ("shr", "RIGHT")]:
        for dt, (sa, sb), bits in [("u8", BCAST[0], 7), ("u32", BCAST[2], 31),
                                   ("u64", BCAST[4], 63)]:
            add(fn, "BitShift", dt, sa, sb, lambda s, d: rnd(s, d, 0, 250),
                lambda s, d, b=bits: rnd(s, d, 0, b), attrs={"direction": dirn})
    # comparisons → bool
    ints_small = lambda s, d: rnd(s, d, -3, 3) if d not in FLOATS else (lambda rng: rng.integers(-3, 4, s).astype(DT[d]))
    for fn, op in [("eq", "Equal"), ("lt", "Less"), ("le", "LessOrEqual"), ("gt", "Greater"),
                   ("ge", "GreaterOrEqual")]:
        for sa, sb in BCAST:
            add(fn, op, "f32", sa, sb, ints_small, ints_small)
        for dt in ["f16", "f64", "i32", "i64", "i8", "u8", "u32"]:
            add(fn, op, dt, (3, 7), (7,), ints_small if not dt.startswith("u") else std,
                ints_small if not dt.startswith("u") else std)
    add("eq", "Equal", "bool", (7, 13), (13,), std, std)
    # NaN propagates through max/min; float division by zero gives ±inf/NaN
    for fn, op in [("max", "Max"), ("min", "Min")]:
        add(fn, op, "f32", (5, 7), (7,), lambda s, d: special(s, d), lambda s, d: special(s, d), tag="nan")
    add("div", "Div", "f32", (5, 7), (7,), std, lambda s, d: (lambda rng: np.where(rng.random(s) < 0.4, 0.0,
                                                                                 rng.uniform(-2, 2, s)).astype(DT[d])),
        tag="by-zero")
    # long rows (vectorized main loop plus a remainder)
    add("add", "Add", "f32", (3, 67), (67,), std, std, tag="long")
    add("mul", "Mul", "f32", (67, 3), (67, 1), std, std, tag="long")
    add("div", "Div", "i32", (2, 37), (37,), lambda s, d: rnd(s, d, -50, 50), nz, tag="long")
    add("lt", "Less", "f32", (3, 67), (3, 67), std, std, tag="long")
    return cs


# ---------------------------------------------------------------------------
# where, cast, iota

def where_cases():
    cs = []
    for dt, sc, sa, sb in [("f32", (7, 13), (7, 13), (7, 13)), ("f32", (3, 1, 5), (4, 1), (5,)),
                           ("f32", (), (2, 3), (3,)), ("f32", (2, 1, 3, 1), (5, 1, 7), ()),
                           ("f16", (3, 7), (3, 7), (7,)), ("f64", (3, 7), (1, 7), (3, 1)),
                           ("i32", (3, 7), (7,), (3, 7)), ("i64", (13,), (13,), ()), ("u8", (3, 7), (3, 7), (3, 7)),
                           ("i8", (3, 7), (3, 7), (3, 7))]:
        cs.append(single("where/Where/%s/%s+%s+%s" % (dt, sh(sc), sh(sa), sh(sb)), "where", "Where",
                         [("c", rnd(sc, "bool")), ("a", rnd(sa, dt)), ("b", rnd(sb, dt))]))
    return cs


def cast_cases():
    cs = []
    tps = {"f32": 1, "f16": 10, "f64": 11, "i8": 3, "i16": 5, "i32": 6, "i64": 7, "u8": 2, "u16": 4, "u32": 12,
           "u64": 13, "bool": 9}

    def src(dt, to):
        """Values representable in both types (floats to ints: truncation, in range)."""
        if dt == "bool":
            return lambda s, d: rnd(s, "bool")
        if to == "bool":
            return lambda s, d: (lambda rng: (rng.integers(-2, 3, s) * (rng.random(s) < 0.6)).astype(DT[dt]))
        unsigned_to = to.startswith("u") or dt.startswith("u")
        lo, hi = (0, 120) if unsigned_to else (-120, 120)
        if to == "f16" or dt == "f16":
            hi = min(hi, 100)
        if dt in FLOATS:
            return lambda s, d: rnd(s, dt, lo, hi)
        return lambda s, d: rnd(s, dt, lo, hi)

    pairs = []
    for a in ["f32", "f16", "f64", "i8", "i32", "i64", "u8", "bool"]:
        for b in ["f32", "f16", "f64", "i8", "i32", "i64", "u8", "bool"]:
            if a != b:
                pairs.append((a, b))
    pairs += [("i16", "f32"), ("f32", "i16"), ("u16", "i32"), ("u32", "i64"), ("u64", "f64"), ("f64", "u32"),
              ("i64", "u64"), ("f32", "u16")]
    shapes = [(7, 13), (2, 3, 1, 5), (13,), (3, 5), ()]
    for k, (a, b) in enumerate(pairs):
        s = shapes[k % len(shapes)]
        cs.append(single("cast/Cast/%s->%s/%s" % (a, b, sh(s)), "cast", "Cast", [("x", src(a, b)(s, a))],
                         {"to": tps[b]}))
    # out of float16's range: ±inf; ±inf and NaN between float types; tiny values to f16 (subnormals)
    cs.append(single("cast/Cast/f32->f16/overflow/3x5", "cast", "Cast",
                     [("x", lambda rng: (rng.choice([-1, 1], (3, 5)) * rng.uniform(6e4, 1e6, (3, 5))).astype(np.float32))],
                     {"to": 10}))
    cs.append(single("cast/Cast/f32->f64/special/5x7", "cast", "Cast", [("x", special((5, 7)))], {"to": 11}))
    cs.append(single("cast/Cast/f64->f16/special/5x7", "cast", "Cast", [("x", special((5, 7), "f64"))], {"to": 10}))
    cs.append(single("cast/Cast/f32->f16/subnormal/5x7", "cast", "Cast",
                     [("x", lambda rng: rng.uniform(-1e-5, 1e-5, (5, 7)).astype(np.float32))], {"to": 10}))
    cs.append(single("cast/Cast/f16->f32/subnormal/5x7", "cast", "Cast",
                     [("x", lambda rng: rng.uniform(-1e-5, 1e-5, (5, 7)).astype(np.float16))], {"to": 1}))
    # same type (a no-op cast)
    cs.append(single("cast/Cast/f32->f32/7x13", "cast", "Cast", [("x", rnd((7, 13)))], {"to": 1}))
    # CastLike
    cs.append(single("cast/CastLike/f32->i32/3x7", "cast", "CastLike",
                     [("x", rnd((3, 7), "f32", -50, 50)), ("t", rnd((1,), "i32"))]))
    cs.append(single("cast/CastLike/i64->f16/3x7", "cast", "CastLike", [("x", rnd((3, 7), "i64")), ("t", rnd((2,), "f16"))]))
    return cs


def bitcast_cases():
    """BitCast (opset 26): the bits of every element read as a type of the same
    width — random bit patterns (NaN, inf and subnormals included), through a
    vectorized loop, a scalar and a fused chain."""
    cs = []
    tps = {"f32": 1, "f16": 10, "f64": 11, "i8": 3, "i16": 5, "i32": 6, "i64": 7, "u8": 2, "u16": 4, "u32": 12,
           "u64": 13, "bool": 9}

    def bits(shape, dt):
        if dt == "bool":
            return rnd(shape, "bool")
        t = np.dtype(DT[dt])
        ut = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[t.itemsize]
        return lambda rng: rng.integers(0, np.iinfo(ut).max, shape, dtype=ut, endpoint=True).view(t)

    pairs = [("f32", "i32"), ("i32", "f32"), ("f32", "u32"), ("u32", "i32"), ("f16", "i16"), ("i16", "f16"),
             ("u16", "f16"), ("f64", "i64"), ("i64", "f64"), ("f64", "u64"), ("u64", "i64"), ("i8", "u8"),
             ("u8", "i8"), ("bool", "u8"), ("bool", "i8")]
    shapes = [(7, 13), (2, 3, 1, 5), (13,), ()]
    for k, (a, b) in enumerate(pairs):
        s = shapes[k % len(shapes)]
        gen = special(s, a) if a in ("f32", "f64") and k % 2 else bits(s, a)
        cs.append(single("bitcast/BitCast/%s->%s/%s" % (a, b, sh(s)), "bitcast", "BitCast", [("x", gen)],
                         {"to": tps[b]}, opset=26))
    cs.append(single("bitcast/BitCast/u8->bool/0or1/3x5", "bitcast", "BitCast",
                     [("x", lambda rng: rng.integers(0, 2, (3, 5)).astype(np.uint8))], {"to": 9}, opset=26))
    # fused: the sign bit of 2x, masked out of its bits, read back as float (|2x|)
    cs.append(Case("bitcast/BitCast/chain/abs-by-mask/f32/7x13", "bitcast",
                   [node("Mul", ["x", "two"], ["m"]), node("BitCast", ["m"], ["b"], to=6),
                    node("BitwiseAnd", ["b", "mask"], ["a"]), node("BitCast", ["a"], ["y"], to=1)],
                   [("x", rnd((7, 13)))], ["y"],
                   [("two", np.array(2, np.float32)), ("mask", np.array(0x7fffffff, np.int32))], opset=26))
    return cs


def iota_cases():
    cs = []
    # Range: constant start/limit/delta → iota (folded at compile time), added to a run-time input
    for dt, (st, li, de) in [("f32", (0.0, 10.0, 1.0)), ("f32", (1.5, -3.25, -0.75)), ("f32", (-2.0, 3.0, 0.3)),
                             ("f64", (0.5, 7.0, 0.5)), ("i32", (3, 40, 4)), ("i64", (10, -7, -3)), ("i64", (0, 1, 5)),
                             ("i16", (-5, 8, 2))]:
        t = DT[dt]
        n = int(max(np.ceil((li - st) / de), 0))
        inits = [("start", np.array(st, t)), ("limit", np.array(li, t)), ("delta", np.array(de, t))]
        cs.append(Case("iota/Range/%s/%s..%s..%s" % (dt, st, li, de), "iota",
                       [node("Range", ["start", "limit", "delta"], ["r"]), node("Add", ["r", "x"], ["y"])],
                       [("x", rnd((n,), dt if dt != "i16" else "i16", -3, 3))], ["y", "r"], inits, opset=21))
    # EyeLike
    for s, k, dt, attr_dt in [((5, 7), 0, "f32", None), ((7, 5), 2, "f32", None), ((6, 6), -3, "i64", None),
                              ((4, 9), 1, "f32", 7), ((13, 3), -1, "i32", 1), ((3, 4), 0, "f64", None)]:
        attrs = {"k": k}
        if attr_dt is not None:
            attrs["dtype"] = attr_dt
        cs.append(single("iota/EyeLike/k%d/%s%s/%s" % (k, dt, "/dtype%d" % attr_dt if attr_dt is not None else "",
                                                     sh(s)), "iota", "EyeLike", [("x", rnd(s, dt))], attrs))
    # Trilu
    for s, upper, k, dt in [((5, 7), 1, 0, "f32"), ((5, 7), 0, 0, "f32"), ((3, 5, 7), 1, 2, "f32"),
                            ((3, 5, 7), 0, -2, "f32"), ((2, 1, 7, 5), 1, -1, "f32"), ((7, 5), 0, 3, "i64"),
                            ((6, 6), 1, 9, "f32"), ((6, 6), 0, -9, "f32"), ((4, 4), 1, 1, "f64"), ((4, 6), 0, 0, "bool"),
                            ((4, 6), 1, 0, "i32")]:
        cs.append(one("iota/Trilu/%s/k%d/%s/%s" % ("upper" if upper else "lower", k, dt, sh(s)), "iota", "Trilu",
                      ["x", "k"], [("x", rnd(s, dt))], [("k", np.array(k, np.int64))], {"upper": upper}))
    cs.append(single("iota/Trilu/upper/no-k/f32/5x7", "iota", "Trilu", [("x", rnd((5, 7)))], {"upper": 1}))
    return cs


# ---------------------------------------------------------------------------
# data movement

def reshape_cases():
    cs = []
    for s, shape, dt in [((2, 3, 4), (6, 4), "f32"), ((2, 3, 4), (0, -1), "f32"), ((7, 13), (13, 1, 7), "f32"),
                         ((2, 3, 4), (4, 0, 2), "i64"), ((13,), (1, 13, 1), "f16"), ((3, 1, 5), (-1,), "bool"),
                         ((2, 3, 4, 5), (2, -1, 5), "u8"), ((6,), (2, 3), "f64"), ((1,), (), "f32"),
                         ((), (1, 1), "i32")]:
        cs.append(one("reshape/Reshape/%s/%s->%s" % (dt, sh(s), "x".join(map(str, shape)) or "s"), "reshape",
                      "Reshape", ["x", "shape"], [("x", rnd(s, dt))], [("shape", np.array(shape, np.int64))]))
    for s, axis in [((2, 3, 4, 5), 1), ((2, 3, 4, 5), 0), ((2, 3, 4, 5), -1), ((7, 13), 2)]:
        cs.append(single("reshape/Flatten/axis%d/f32/%s" % (axis, sh(s)), "reshape", "Flatten", [("x", rnd(s))],
                         {"axis": axis}))
    for s, axes in [((2, 1, 3, 1), (1, 3)), ((1, 7, 1), (-1,))]:
        cs.append(one("reshape/Squeeze/%s/f32/%s" % (",".join(map(str, axes)), sh(s)), "reshape", "Squeeze",
                      ["x", "axes"], [("x", rnd(s))], [("axes", np.array(axes, np.int64))]))
    cs.append(single("reshape/Squeeze/all/i64/1x3x1", "reshape", "Squeeze", [("x", rnd((1, 3, 1), "i64"))]))
    for s, axes in [((3, 5), (0, 3)), ((7,), (-1,)), ((), (0,))]:
        cs.append(one("reshape/Unsqueeze/%s/f32/%s" % (",".join(map(str, axes)), sh(s)), "reshape", "Unsqueeze",
                      ["x", "axes"], [("x", rnd(s))], [("axes", np.array(axes, np.int64))]))
    # DepthToSpace / SpaceToDepth: reshape + transpose
    for mode in ["DCR", "CRD"]:
        cs.append(single("transpose/DepthToSpace/%s/f32/2x8x3x5" % mode, "transpose", "DepthToSpace",
                         [("x", rnd((2, 8, 3, 5)))], {"blocksize": 2, "mode": mode}))
    cs.append(single("transpose/DepthToSpace/DCR/b3/f32/1x9x2x3", "transpose", "DepthToSpace",
                     [("x", rnd((1, 9, 2, 3)))], {"blocksize": 3}))
    cs.append(single("transpose/SpaceToDepth/f32/2x3x4x6", "transpose", "SpaceToDepth", [("x", rnd((2, 3, 4, 6)))],
                     {"blocksize": 2}))
    cs.append(single("transpose/SpaceToDepth/b3/f64/1x2x3x9", "transpose", "SpaceToDepth",
                     [("x", rnd((1, 2, 3, 9), "f64"))], {"blocksize": 3}))
    return cs


def transpose_cases():
    cs = []
    for s, perm, dt in [((7, 13), (1, 0), "f32"), ((2, 3, 4), (2, 0, 1), "f32"), ((2, 3, 4), None, "f32"),
                        ((2, 3, 5, 7), (0, 2, 3, 1), "f32"), ((2, 3, 5, 7), (0, 3, 1, 2), "f32"),
                        ((2, 1, 3, 1, 5), (4, 2, 0, 3, 1), "f32"), ((3, 5), (1, 0), "i64"), ((2, 3, 4), (1, 0, 2), "f16"),
                        ((2, 3, 4), (0, 2, 1), "bool"), ((4, 1, 6), (2, 1, 0), "u8"), ((3, 4, 5), (1, 2, 0), "f64"),
                        ((3, 4, 5), (2, 1, 0), "i32"), ((1, 13), (1, 0), "i8"), ((16, 17), (1, 0), "f32"),
                        # a strided read tiled by sched_movement.c (the input's innermost axis, >= 16,
                        # moved next to the output's vector loop): ragged and whole last vectors,
                        # serial and parallel (>= 16384 elements)
                        ((37, 45), (1, 0), "f32"), ((2, 32, 16), (0, 2, 1), "f32"),
                        ((1, 40, 24, 24), (0, 3, 1, 2), "f32"), ((1, 18, 20, 33), (0, 3, 1, 2), "f32")]:
        attrs = {"perm": list(perm)} if perm else {}
        cs.append(single("transpose/Transpose/%s/%s/%s" % ("".join(map(str, perm)) if perm else "default", dt, sh(s)),
                         "transpose", "Transpose", [("x", rnd(s, dt))], attrs))
    return cs


def concat_cases():
    cs = []
    for shapes, axis, dt in [([(2, 3), (5, 3)], 0, "f32"), ([(2, 3, 4), (2, 1, 4), (2, 7, 4)], 1, "f32"),
                             ([(3, 5), (3, 1), (3, 13)], -1, "f32"), ([(1, 2, 3), (1, 2, 3)], 2, "f16"),
                             ([(4,), (9,), (1,)], 0, "i64"), ([(2, 3), (2, 3)], -2, "bool"),
                             ([(2, 2, 1), (2, 2, 5)], 2, "u8"), ([(3, 2), (3, 4)], 1, "i32"),
                             ([(5, 2, 3)], 0, "f64"), ([(2, 3)] * 9, 0, "f32"), ([(1, 3, 2, 2), (1, 5, 2, 2)], 1, "i8")]:
        names = ["x%d" % i for i in range(len(shapes))]
        cs.append(Case("concat/Concat/axis%d/%s/%s" % (axis, dt, "+".join(sh(s) for s in shapes)), "concat",
                       [node("Concat", names, ["y"], axis=axis)], [(n, rnd(s, dt)) for n, s in zip(names, shapes)],
                       ["y"]))
    return cs


def slice_cases():
    cs = []
    for s, st, en, ax, sp, dt in [
            ((7, 13), (1, 2), (5, 11), None, None, "f32"),
            ((7, 13), (0,), (100,), (1,), None, "f32"),
            ((7, 13), (-3,), (-1,), (0,), None, "f32"),
            ((7, 13), (6, 12), (-100, 0), (0, 1), (-2, -3), "f32"),
            ((2, 3, 4, 5), (1, 0), (3, 5), (3, 1), (2, 1), "f32"),
            ((2, 3, 4, 5), (-1,), (-1000,), (-1,), (-1,), "f32"),
            ((13,), (2,), (13,), (0,), (4,), "i64"),
            ((5, 6), (1, 1), (4, 5), (0, 1), (1, 2), "f16"),
            ((5, 6), (4,), (0,), (1,), (-1,), "bool"),
            ((3, 4, 5), (0, 0, 0), (3, 4, 5), (0, 1, 2), (1, 1, 1), "u8"),
            ((3, 4, 5), (1,), (2,), (1,), None, "i32"),
            ((3, 4, 5), (2, 2), (0, 1), (0, 2), (-1, -1), "f64")]:
        inits = [("starts", np.array(st, np.int64)), ("ends", np.array(en, np.int64))]
        ins = ["x", "starts", "ends"]
        if ax is not None:
            inits.append(("axes", np.array(ax, np.int64)))
            ins.append("axes")
        if sp is not None:
            if ax is None:
                inits.append(("axes", np.arange(len(st), dtype=np.int64)))
                ins.append("axes")
            inits.append(("steps", np.array(sp, np.int64)))
            ins.append("steps")
        name = "slice/Slice/%s:%s%s%s/%s/%s" % (",".join(map(str, st)), ",".join(map(str, en)),
                                                 "/ax" + ",".join(map(str, ax)) if ax else "",
                                                 "/st" + ",".join(map(str, sp)) if sp else "", dt, sh(s))
        cs.append(one(name, "slice", "Slice", ins, [("x", rnd(s, dt))], inits))
    # int32 starts/ends
    cs.append(one("slice/Slice/i32-args/f32/7x13", "slice", "Slice", ["x", "starts", "ends", "axes"],
                  [("x", rnd((7, 13)))], [("starts", np.array([2], np.int32)), ("ends", np.array([9], np.int32)),
                                          ("axes", np.array([1], np.int32))]))
    # Split → slices
    cs.append(Case("slice/Split/equal/f32/6x13", "slice", [node("Split", ["x"], ["y0", "y1", "y2"], axis=0,
                                                                 num_outputs=3)],
                   [("x", rnd((6, 13)))], ["y0", "y1", "y2"], opset=18))
    cs.append(Case("slice/Split/uneven/f32/7x13", "slice", [node("Split", ["x"], ["y0", "y1", "y2"], axis=1,
                                                                  num_outputs=3)],
                   [("x", rnd((7, 13)))], ["y0", "y1", "y2"], opset=18))
    cs.append(Case("slice/Split/sizes/i64/2x3x7", "slice", [node("Split", ["x", "split"], ["y0", "y1"], axis=-1)],
                   [("x", rnd((2, 3, 7), "i64"))], ["y0", "y1"], [("split", i64(2, 5))], opset=18))
    return cs


def pad_cases():
    cs = []
    for mode in ["constant", "reflect", "edge", "wrap"]:
        for s, pads, dt in [((7, 13), (1, 2, 3, 4), "f32"), ((2, 3, 5, 7), (0, 0, 2, 1, 0, 0, 1, 3), "f32"),
                            ((13,), (3, 5), "i64"), ((3, 5), (2, 0, 0, 4), "f16"), ((2, 3, 4), (1, 1, 1, 1, 1, 1), "i32"),
                            ((4, 6), (3, 5, 3, 5), "f64"), ((3, 5), (0, 1, 2, 0), "u8")]:
            if mode == "reflect" and any(p >= d for p, d in zip(pads, list(s) + list(s))):
                continue
            if mode == "wrap" and any(p > d for p, d in zip(pads, list(s) + list(s))):
                continue
            inits = [("pads", np.array(pads, np.int64))]
            ins = ["x", "pads"]
            if mode == "constant" and dt in ("f32", "i64"):
                inits.append(("cv", np.array(2.5 if dt == "f32" else -7, DT[dt])))
                ins.append("cv")
            cs.append(one("pad/Pad/%s/%s/%s/%s" % (mode, ",".join(map(str, pads)), dt, sh(s)), "pad", "Pad", ins,
                          [("x", rnd(s, dt))], inits, {"mode": mode}))
    # negative pads (cropping), axes input, bool
    cs.append(one("pad/Pad/constant/negative/f32/7x13", "pad", "Pad", ["x", "pads"], [("x", rnd((7, 13)))],
                  [("pads", i64(-1, 2, 1, -3))], {"mode": "constant"}))
    cs.append(one("pad/Pad/edge/negative/f32/7x13", "pad", "Pad", ["x", "pads"], [("x", rnd((7, 13)))],
                  [("pads", i64(2, -2, -1, 3))], {"mode": "edge"}))
    cs.append(one("pad/Pad/constant/axes/f32/2x3x5", "pad", "Pad", ["x", "pads", "cv", "axes"], [("x", rnd((2, 3, 5)))],
                  [("pads", i64(1, 2, 3, 0)), ("cv", np.array(-1.0, np.float32)), ("axes", i64(-1, 0))],
                  {"mode": "constant"}))
    cs.append(one("pad/Pad/reflect/axes/f32/2x3x5", "pad", "Pad", ["x", "pads", "", "axes"], [("x", rnd((2, 3, 5)))],
                  [("pads", i64(2, 4)), ("axes", i64(2))], {"mode": "reflect"}))
    cs.append(one("pad/Pad/constant/bool/3x4", "pad", "Pad", ["x", "pads"], [("x", rnd((3, 4), "bool"))],
                  [("pads", i64(1, 0, 0, 2))], {"mode": "constant"}))
    cs.append(one("pad/Pad/constant/runtime-value/f32/3x4", "pad", "Pad", ["x", "pads", "cv"],
                  [("x", rnd((3, 4))), ("cv", rnd((), "f32"))], [("pads", i64(1, 2, 2, 1))], {"mode": "constant"}))
    # CenterCropPad: slice and pad at once
    cs.append(one("pad/CenterCropPad/f32/5x8", "pad", "CenterCropPad", ["x", "shape"], [("x", rnd((5, 8)))],
                  [("shape", i64(8, 3))], opset=18))
    cs.append(one("pad/CenterCropPad/axes/f32/2x7x4", "pad", "CenterCropPad", ["x", "shape"], [("x", rnd((2, 7, 4)))],
                  [("shape", i64(4, 7))], {"axes": [1, 2]}, opset=18))
    return cs


def broadcast_cases():
    cs = []
    for s, shape, dt in [((3, 1), (3, 5), "f32"), ((1, 7), (4, 2, 7), "f32"), ((), (2, 3), "f32"),
                         ((3, 1, 5), (2, 1, 4, 1), "f32"), ((13,), (1,), "f32"), ((2, 1), (2, 6), "i64"),
                         ((1, 3), (4, 3), "f16"), ((1,), (5,), "bool"), ((2, 1, 1), (2, 3, 4), "u8"),
                         ((1, 4), (3, 4), "i32"), ((5, 1), (5, 3), "f64")]:
        cs.append(one("broadcast_to/Expand/%s/%s->%s" % (dt, sh(s), "x".join(map(str, shape))), "broadcast_to",
                      "Expand", ["x", "shape"], [("x", rnd(s, dt))], [("shape", np.array(shape, np.int64))]))
    return cs


def tile_cases():
    cs = []
    for s, rep, dt in [((2, 3), (2, 3), "f32"), ((7, 13), (1, 1), "f32"), ((2, 1, 3), (1, 5, 2), "f32"),
                       ((13,), (3,), "i64"), ((2, 3), (3, 1), "f16"), ((2, 2), (2, 2), "bool"),
                       ((1, 3, 1, 2), (2, 1, 3, 1), "u8"), ((3, 2), (1, 4), "i32"), ((2, 3), (2, 2), "f64")]:
        cs.append(one("tile/Tile/%s/%s/%s" % ("x".join(map(str, rep)), dt, sh(s)), "tile", "Tile", ["x", "rep"],
                      [("x", rnd(s, dt))], [("rep", np.array(rep, np.int64))]))
    return cs


def gather_cases():
    cs = []
    for s, axis, ish, idt, dt in [((7, 13), 0, (5,), "i64", "f32"), ((7, 13), 1, (3, 4), "i64", "f32"),
                                  ((2, 3, 5), -1, (), "i64", "f32"), ((2, 3, 5), 1, (2, 2), "i32", "f32"),
                                  ((13,), 0, (4, 3), "i64", "i64"), ((5, 4), 0, (7,), "i32", "f16"),
                                  ((3, 4), 1, (2,), "i64", "bool"), ((3, 4, 2), 0, (1,), "i64", "u8"),
                                  ((3, 4), -2, (6,), "i32", "i32"), ((6, 5), 1, (2, 3), "i64", "f64"),
                                  ((4, 1, 5), 1, (3,), "i64", "i8")]:
        d = s[axis]
        cs.append(single("gather/Gather/axis%d/%s-idx%s/%s/%s" % (axis, idt, sh(ish), dt, sh(s)), "gather", "Gather",
                         [("x", rnd(s, dt)), ("i", index(ish, d, idt))], {"axis": axis}))
    return cs


def gather_elements_cases():
    cs = []
    for s, axis, ish, idt, dt in [((7, 13), 0, (4, 13), "i64", "f32"), ((7, 13), 1, (7, 5), "i64", "f32"),
                                  ((2, 3, 5), -1, (2, 3, 7), "i32", "f32"), ((2, 3, 5), 1, (1, 4, 2), "i64", "f32"),
                                  ((13,), 0, (20,), "i64", "i64"), ((5, 4), 1, (5, 4), "i64", "f16"),
                                  ((3, 4), 0, (2, 4), "i32", "bool"), ((3, 4, 2), 2, (3, 4, 1), "i64", "u8"),
                                  ((4, 6), 1, (4, 9), "i64", "f64"), ((4, 6), 0, (3, 3), "i64", "i32")]:
        cs.append(single("gather_elements/GatherElements/axis%d/%s-idx%s/%s/%s" % (axis, idt, sh(ish), dt, sh(s)),
                         "gather_elements", "GatherElements", [("x", rnd(s, dt)), ("i", index(ish, s[axis], idt))],
                         {"axis": axis}))
    return cs


def _nd_indices(ish, dims, negative=True):
    """Index tuples: ish[:-1] tuples of ish[-1] indices into dims (first dims of the data)."""
    def gen(rng):
        k = ish[-1]
        cols = [rng.integers(0, dims[j], ish[:-1]) for j in range(k)]
        v = np.stack(cols, axis=-1) if k else np.zeros(ish, np.int64)
        if negative:
            neg = rng.random(v.shape) < 0.25
            v = np.where(neg, v - np.array(dims[:k], np.int64), v)
        return v.astype(np.int64)
    return gen


def gather_nd_cases():
    cs = []
    for s, ish, b, dt in [((5, 7), (3, 2), 0, "f32"), ((5, 7), (4, 1), 0, "f32"), ((2, 3, 4), (2, 2, 2), 0, "f32"),
                          ((2, 3, 4), (5, 3), 0, "i64"), ((2, 3, 4), (2, 1), 1, "f32"), ((2, 3, 4, 5), (2, 3, 2), 1, "f32"),
                          ((2, 3, 4, 5), (2, 3, 1), 2, "f16"), ((4, 3), (2,), 0, "f64"), ((3, 5, 2), (3, 4, 1), 1, "bool"),
                          ((6, 5), (1, 1, 2), 0, "i32")]:
        def gen(rng, s=s, ish=ish, b=b):
            out = np.empty(ish, np.int64)
            k = ish[-1]
            for j in range(k):
                out[..., j] = rng.integers(0, s[b + j], ish[:-1])
            neg = rng.random(ish) < 0.25
            return np.where(neg, out - np.array(s[b:b + k], np.int64), out)
        cs.append(single("gather_nd/GatherND/b%d/idx%s/%s/%s" % (b, sh(ish), dt, sh(s)), "gather_nd", "GatherND",
                         [("x", rnd(s, dt)), ("i", gen)], {"batch_dims": b}))
    return cs


def one_hot_cases():
    cs = []
    for ish, depth, axis, idt, ddt, vdt in [((5,), 7, -1, "i64", "i64", "f32"), ((3, 4), 5, 0, "i64", "i64", "f32"),
                                            ((3, 4), 13, 1, "i64", "f32", "f32"), ((2, 3), 4, -1, "i32", "f32", "f32"),
                                            ((6,), 3, 0, "i64", "i64", "i64"), ((2, 1, 3), 6, 2, "f32", "f32", "f32"),
                                            ((4,), 9, -2, "i64", "f32", "i32"), ((2, 3), 4, 1, "i32", "f32", "f32")]:
        vals = np.array([-1.5, 2.0] if vdt in FLOATS else [3, 9], DT[vdt])
        def gen(rng, ish=ish, depth=depth, idt=idt):
            v = rng.integers(-depth, depth, ish)
            return v.astype(DT[idt])
        cs.append(one("one_hot/OneHot/d%d/axis%d/%s-%s-%s/%s" % (depth, axis, idt, ddt, vdt, sh(ish)), "one_hot",
                      "OneHot", ["i", "depth", "vals"], [("i", gen)],
                      [("depth", np.array(depth, DT[ddt])), ("vals", vals)], {"axis": axis}))
    return cs


def resize_cases():
    cs = []

    def add(tag, s, attrs, scales=None, sizes=None, dt="f32", roi=None, opset=19, gen=None):
        inits, ins = [], ["x", "", ""]
        if roi is not None:
            inits.append(("roi", np.array(roi, np.float32)))
            ins[1] = "roi"
        if scales is not None:
            inits.append(("scales", np.array(scales, np.float32)))
            ins[2] = "scales"
            what = "scales" + ",".join("%g" % v for v in scales)
        else:
            inits.append(("sizes", np.array(sizes, np.int64)))
            ins.append("sizes")
            what = "sizes" + ",".join(map(str, sizes))
        name = "resize/Resize/%s/%s/%s/%s" % (tag, what, dt, sh(s))
        cs.append(one(name, "resize", "Resize", ins, [("x", (gen or rnd)(s, dt))], inits, attrs, opset=opset))

    # nearest: every rounding mode, up and down, several coordinate modes
    for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
        add("nearest/%s/half_pixel" % nm, (1, 2, 5, 7), {"mode": "nearest", "nearest_mode": nm},
            scales=[1, 1, 2.0, 1.5])
        add("nearest/%s/asymmetric" % nm, (1, 2, 8, 9), {"mode": "nearest", "nearest_mode": nm,
                                                        "coordinate_transformation_mode": "asymmetric"},
            scales=[1, 1, 0.5, 0.7])
    add("nearest/floor/asymmetric", (2, 3, 4, 5), {"mode": "nearest", "nearest_mode": "floor",
                                                   "coordinate_transformation_mode": "asymmetric"}, scales=[1, 1, 2, 3])
    add("nearest/align_corners", (1, 1, 4, 6), {"mode": "nearest", "coordinate_transformation_mode": "align_corners"},
        sizes=[1, 1, 7, 3])
    add("nearest/half_pixel", (1, 3, 5, 5), {"mode": "nearest"}, sizes=[1, 3, 13, 2])
    add("nearest/pytorch_half_pixel", (1, 2, 6, 4), {"mode": "nearest",
                                                     "coordinate_transformation_mode": "pytorch_half_pixel"},
        sizes=[1, 2, 3, 1])
    add("nearest/half_pixel", (2, 7), {"mode": "nearest"}, scales=[1.0, 2.5])
    add("nearest/half_pixel", (1, 2, 3, 4, 5), {"mode": "nearest"}, scales=[1, 1, 2, 0.5, 1.4])
    add("nearest/axes", (1, 2, 5, 7), {"mode": "nearest", "axes": [2, 3]}, scales=[2.0, 0.5])
    add("nearest/not_larger", (1, 1, 4, 6), {"mode": "nearest", "keep_aspect_ratio_policy": "not_larger",
                                             "axes": [2, 3]}, sizes=[8, 9])
    add("nearest/not_smaller", (1, 1, 4, 6), {"mode": "nearest", "keep_aspect_ratio_policy": "not_smaller",
                                              "axes": [2, 3]}, sizes=[8, 9])
    for dt in ["i32", "u8", "i8", "f16"]:
        add("nearest/half_pixel", (1, 2, 3, 5), {"mode": "nearest"}, scales=[1, 1, 2, 1.6], dt=dt)
    # linear
    for cm in ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"]:
        add("linear/%s" % cm, (1, 2, 5, 7), {"mode": "linear", "coordinate_transformation_mode": cm},
            scales=[1, 1, 2.0, 1.5])
        add("linear/%s" % cm, (2, 1, 8, 9), {"mode": "linear", "coordinate_transformation_mode": cm},
            sizes=[2, 1, 3, 5])
    add("linear/pytorch_half_pixel/to1", (1, 1, 4, 6), {"mode": "linear",
                                                        "coordinate_transformation_mode": "pytorch_half_pixel"},
        sizes=[1, 1, 1, 3])
    add("linear/tf_crop_and_resize", (1, 1, 6, 8), {"mode": "linear",
                                                    "coordinate_transformation_mode": "tf_crop_and_resize",
                                                    "extrapolation_value": -2.0},
        sizes=[1, 1, 5, 7], roi=[0, 0, -0.2, 0.1, 1, 1, 0.8, 1.3])
    add("linear/1d", (3, 13), {"mode": "linear"}, scales=[1, 0.6])
    add("linear/3d", (1, 1, 3, 4, 5), {"mode": "linear"}, scales=[1, 1, 2, 1.5, 0.6])
    add("linear/axes", (1, 2, 5, 7), {"mode": "linear", "axes": [3, 2]}, sizes=[3, 9])
    add("linear/half_pixel", (1, 2, 5, 7), {"mode": "linear"}, scales=[1, 1, 2.0, 1.5], dt="f16")
    add("linear/asymmetric", (1, 2, 5, 7), {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
        scales=[1, 1, 2.0, 2.0], dt="u8", gen=lambda s, d: rnd(s, d, 0, 255))
    add("linear/asymmetric", (1, 2, 5, 7), {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
        scales=[1, 1, 2.0, 2.0], dt="i32")
    # cubic
    for cm in ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]:
        add("cubic/%s" % cm, (1, 2, 5, 7), {"mode": "cubic", "coordinate_transformation_mode": cm},
            scales=[1, 1, 2.0, 1.5])
    add("cubic/a-0.5", (1, 1, 6, 6), {"mode": "cubic", "cubic_coeff_a": -0.5}, sizes=[1, 1, 9, 4])
    add("cubic/exclude_outside", (1, 1, 6, 6), {"mode": "cubic", "exclude_outside": 1}, sizes=[1, 1, 9, 4])
    add("cubic/a-0.5/exclude_outside/asymmetric", (2, 1, 5, 8),
        {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1, "coordinate_transformation_mode": "asymmetric"},
        scales=[1, 1, 0.6, 1.25])
    add("nearest/tf_crop_and_resize", (1, 1, 6, 8), {"mode": "nearest",
                                                     "coordinate_transformation_mode": "tf_crop_and_resize",
                                                     "extrapolation_value": 5.0},
        sizes=[1, 1, 4, 9], roi=[0, 0, -0.3, 0.2, 1, 1, 0.9, 1.2])
    add("cubic/tf_crop_and_resize", (1, 1, 6, 8), {"mode": "cubic",
                                                   "coordinate_transformation_mode": "tf_crop_and_resize"},
        sizes=[1, 1, 5, 7], roi=[0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7])
    add("cubic/half_pixel", (1, 2, 5, 7), {"mode": "cubic"}, scales=[1, 1, 2.0, 1.5], dt="f16")
    add("cubic/half_pixel", (4, 13), {"mode": "cubic"}, sizes=[4, 7])
    # after a conv: the resize in NCHW[x]c, every tap a whole channel block
    # (layout/nchwc.c), 20 channels padded to whole blocks, 2-D and 1-D
    def blocked(tag, xs, attrs, sizes):
        rng = np.random.default_rng(len(cs))
        c, k = xs[1], (3,) * (len(xs) - 2)
        w = (rng.standard_normal((20, c) + k) * 0.3).astype(np.float32)
        nodes = [node("Conv", ["x", "w"], ["c"], pads=[1] * (2 * len(k))),
                 node("Resize", ["c", "", "", "sizes"], ["y"], **attrs)]
        name = "resize/Resize/blocked/%s/sizes%s/f32/%s" % (tag, ",".join(map(str, sizes)), sh(xs))
        cs.append(Case(name, "resize", nodes, [("x", rnd(xs))], ["y"],
                       [("w", w), ("sizes", np.array(sizes, np.int64))], opset=19))
    blocked("linear/half_pixel", (1, 8, 6, 7), {"mode": "linear"}, [1, 20, 12, 14])
    blocked("linear/align_corners", (1, 8, 5, 6), {"mode": "linear", "coordinate_transformation_mode":
                                                   "align_corners"}, [1, 20, 9, 4])
    blocked("nearest/asymmetric", (2, 8, 4, 5), {"mode": "nearest", "nearest_mode": "floor",
                                                 "coordinate_transformation_mode": "asymmetric"}, [2, 20, 8, 15])
    blocked("cubic/pytorch_half_pixel", (1, 8, 5, 5), {"mode": "cubic", "coordinate_transformation_mode":
                                                       "pytorch_half_pixel"}, [1, 20, 7, 11])
    blocked("linear/1d", (1, 8, 9), {"mode": "linear"}, [1, 20, 20])
    # Upsample (opset 9): asymmetric, nearest floor
    cs.append(one("resize/Upsample/nearest/f32/1x2x3x4", "resize", "Upsample", ["x", "scales"], [("x", rnd((1, 2, 3, 4)))],
                  [("scales", f32(1, 1, 2, 3))], {"mode": "nearest"}, opset=9))
    cs.append(one("resize/Upsample/linear/f32/1x2x3x4", "resize", "Upsample", ["x", "scales"], [("x", rnd((1, 2, 3, 4)))],
                  [("scales", f32(1, 1, 2, 2.5))], {"mode": "linear"}, opset=9))
    return cs


# ---------------------------------------------------------------------------
# reductions

REDUCE_OPS = [("sum", "ReduceSum"), ("mean", "ReduceMean"), ("max", "ReduceMax"), ("min", "ReduceMin"),
              ("prod", "ReduceProd"), ("sum_square", "ReduceSumSquare"), ("l1", "ReduceL1"), ("l2", "ReduceL2"),
              ("log_sum", "ReduceLogSum"), ("log_sum_exp", "ReduceLogSumExp")]
REDUCE_DTYPES = {"sum": ["f16", "f64", "i32", "i64"], "mean": ["f16", "f64", "i32"],
                 "max": ["f16", "f64", "i32", "i64", "i8", "u8"], "min": ["f16", "f64", "i32", "i64", "i8", "u8"],
                 "prod": ["f64", "i32", "i64"], "sum_square": ["f64", "i32", "i64"], "l1": ["f64", "i32", "i64"],
                 "l2": ["f64", "i32", "i64"], "log_sum": ["f64"], "log_sum_exp": ["f64", "f16"]}


def reduce_cases():
    cs = []
    for fn, op in REDUCE_OPS:
        def gen(s, dt, fn=fn):
            if fn == "prod":
                return rnd(s, dt, 0.6, 1.5) if dt in FLOATS else rnd(s, dt, -2, 2)
            if fn == "log_sum":
                return rnd(s, dt, 0.1, 2.0) if dt in FLOATS else rnd(s, dt, 1, 5)
            if dt in ("i32", "i64", "i8") and fn in ("sum_square", "l2", "l1", "sum", "mean"):
                return rnd(s, dt, -5, 5)
            return rnd(s, dt)
        variants = [((3, 5, 7), None, 1), ((3, 5, 7), None, 0), ((3, 5, 7), (1,), 0), ((3, 5, 7), (0, 2), 1),
                    ((3, 5, 7), (-1,), 1), ((2, 1, 13), (0, 1), 0), ((13,), (0,), 0), ((2, 3, 4, 5), (1, 3), 0),
                    # trailing axes: one flat row each (layout/flatten_reduce.c)
                    ((3, 5, 7), (1, 2), 0), ((2, 3, 4, 5), (-2, -1), 1)]
        for s, axes, kd in variants:
            cs.append(_reduce(fn, op, s, axes, kd, "f32", gen))
        for k, dt in enumerate(REDUCE_DTYPES[fn]):
            s, axes, kd = [((3, 5, 7), (1,), 0), ((4, 6), (0,), 1), ((2, 3, 5), (0, 2), 0)][k % 3]
            cs.append(_reduce(fn, op, s, axes, kd, dt, gen))
    # noop_with_empty_axes, axes given as an empty tensor, 1-input forms
    cs.append(one("reduce/sum/ReduceSum/noop/f32/3x5", "reduce", "ReduceSum", ["x"], [("x", rnd((3, 5)))],
                  attrs={"noop_with_empty_axes": 1}, opset=18))
    cs.append(one("reduce/max/ReduceMax/opset13-attr/f32/3x5x7", "reduce", "ReduceMax", ["x"], [("x", rnd((3, 5, 7)))],
                  attrs={"axes": [0, -1], "keepdims": 0}, opset=13))
    cs.append(one("reduce/mean/ReduceMean/opset13-attr/f32/3x5x7", "reduce", "ReduceMean", ["x"],
                  [("x", rnd((3, 5, 7)))], attrs={"axes": [1]}, opset=13))
    # log_sum_exp of large values; a long axis. (No NaN for ReduceMax/ReduceMin:
    # onnxruntime propagates a NaN or not depending on its position in the row.)
    cs.append(_reduce("log_sum_exp", "ReduceLogSumExp", (3, 5, 7), (1,), 1, "f32",
                      lambda s, dt: rnd(s, dt, 80, 120), tag="large"))
    for fn, op in [("sum", "ReduceSum"), ("mean", "ReduceMean"), ("max", "ReduceMax"), ("l2", "ReduceL2")]:
        cs.append(_reduce(fn, op, (2, 4099), (1,), 0, "f32", lambda s, dt: rnd(s, dt), tag="long"))
        cs.append(_reduce(fn, op, (257, 3), (0,), 1, "f32", lambda s, dt: rnd(s, dt), tag="long"))
        # a global pool over 14x14 in plain NCHW (rows of 196: 32 lanes, a ragged last step)
        cs.append(_reduce(fn, op, (1, 40, 14, 14), (2, 3), 1, "f32", lambda s, dt: rnd(s, dt), tag="long"))
    return cs


def _reduce(fn, op, s, axes, kd, dt, gen, tag=""):
    name = "reduce/%s/%s/%s%s/kd%d/%s/%s" % (fn, op, tag + "/" if tag else "",
                                             "all" if axes is None else ",".join(map(str, axes)), kd, dt, sh(s))
    ins, inits = ["x"], []
    if axes is not None:
        ins.append("axes")
        inits.append(("axes", np.array(axes, np.int64)))
    return one(name, "reduce", op, ins, [("x", gen(s, dt))], inits, {"keepdims": kd}, opset=18)


def arg_reduce_cases():
    cs = []
    for op in ["ArgMax", "ArgMin"]:
        for s, axis, kd, last, dt, ties in [((3, 5, 7), 1, 1, 0, "f32", False), ((3, 5, 7), -1, 0, 0, "f32", False),
                                            ((3, 5, 7), 0, 1, 1, "f32", False), ((13,), 0, 0, 0, "f32", False),
                                            ((4, 9), 1, 1, 0, "i32", True), ((4, 9), 1, 1, 1, "i32", True),
                                            ((4, 9), 0, 0, 1, "i64", True), ((5, 6), 1, 0, 0, "f64", False),
                                            ((5, 6), 0, 1, 0, "f16", False), ((2, 3, 4), 2, 0, 1, "u8", True),
                                            ((2, 3, 4), 1, 1, 0, "i8", True)]:
            g = rnd(s, dt, 0, 3) if ties else distinct(s, dt)
            cs.append(single("arg_reduce/%s/axis%d/kd%d/last%d/%s/%s" % (op, axis, kd, last, dt, sh(s)), "arg_reduce",
                             op, [("x", g)], {"axis": axis, "keepdims": kd, "select_last_index": last}))
    return cs


def softmax_cases():
    cs = []
    for op in ["Softmax", "LogSoftmax"]:
        fn = "softmax" if op == "Softmax" else "log_softmax"
        for s, axis, dt in [((3, 5, 7), -1, "f32"), ((3, 5, 7), 1, "f32"), ((3, 5, 7), 0, "f32"), ((13,), 0, "f32"),
                            ((2, 1, 3, 4), 1, "f32"), ((4, 13), -1, "f16"), ((4, 13), 1, "f64")]:
            cs.append(single("softmax/%s/%s/axis%d/%s/%s" % (fn, op, axis, dt, sh(s)), "softmax", op,
                             [("x", rnd(s, dt, -6, 6))], {"axis": axis}, opset=13))
        cs.append(single("softmax/%s/%s/opset11-axis1/f32/2x3x4" % (fn, op), "softmax", op,
                         [("x", rnd((2, 3, 4), "f32", -6, 6))], {"axis": 1}, opset=11))
        # large logits: exp would overflow without subtracting the maximum
        cs.append(single("softmax/%s/%s/large/axis-1/f32/3x13" % (fn, op), "softmax", op,
                         [("x", rnd((3, 13), "f32", -100, 100))], {"axis": -1}, opset=13))
        cs.append(single("softmax/%s/%s/long/axis-1/f32/2x1000" % (fn, op), "softmax", op,
                         [("x", rnd((2, 1000), "f32", -6, 6))], {"axis": -1}, opset=13))
    # Hardmax
    for s, axis in [((3, 5, 7), -1), ((3, 5, 7), 1)]:
        cs.append(single("softmax/hardmax/Hardmax/axis%d/f32/%s" % (axis, sh(s)), "arg_reduce", "Hardmax",
                         [("x", distinct(s))], {"axis": axis}, opset=13))
    return cs


def layer_norm_cases():
    cs = []
    for s, axis, bias, eps, dt in [((3, 5, 7), -1, True, 1e-5, "f32"), ((3, 5, 7), 1, True, 1e-5, "f32"),
                                   ((3, 5, 7), -1, False, 1e-3, "f32"), ((2, 13), 0, True, 1e-5, "f32"),
                                   ((2, 3, 4, 5), 2, False, 1e-5, "f32"), ((4, 13), -1, True, 1e-5, "f16"),
                                   ((4, 13), -1, True, 1e-5, "f64")]:
        ws = s[axis:] if axis >= 0 else s[axis:]
        inputs = [("x", rnd(s, dt)), ("w", rnd(ws, dt, 0.5, 1.5))]
        ins = ["x", "w"]
        if bias:
            inputs.append(("b", rnd(ws, dt)))
            ins.append("b")
        cs.append(one("layer_norm/LayerNormalization/axis%d/%s/eps%g/%s/%s" % (axis, "bias" if bias else "nobias", eps,
                                                                              dt, sh(s)),
                      "layer_norm", "LayerNormalization", ins, inputs, attrs={"axis": axis, "epsilon": eps}, opset=17))
    # a large mean next to a small spread (E[x^2] - E[x]^2 would cancel)
    cs.append(one("layer_norm/LayerNormalization/offset/f32/4x33", "layer_norm", "LayerNormalization", ["x", "w", "b"],
                  [("x", lambda rng: (300 + rng.uniform(-1, 1, (4, 33))).astype(np.float32)), ("w", rnd((33,))),
                   ("b", rnd((33,)))], attrs={"axis": -1}, opset=17))
    cs.append(one("layer_norm/LayerNormalization/long/f32/2x1000", "layer_norm", "LayerNormalization", ["x", "w", "b"],
                  [("x", rnd((2, 1000))), ("w", rnd((1000,))), ("b", rnd((1000,)))], attrs={"axis": -1}, opset=17))
    # broadcast scale (scale of shape [1, D])
    cs.append(one("layer_norm/LayerNormalization/bcast-scale/f32/3x5x7", "layer_norm", "LayerNormalization",
                  ["x", "w", "b"], [("x", rnd((3, 5, 7))), ("w", rnd((1, 7))), ("b", rnd((7,)))],
                  attrs={"axis": -1}, opset=17))
    for s, axis, eps, dt in [((3, 5, 7), -1, 1e-5, "f32"), ((3, 5, 7), 1, 1e-3, "f32"), ((2, 13), 0, 1e-5, "f32"),
                             ((4, 13), -1, 1e-5, "f16"), ((4, 13), -1, 1e-5, "f64")]:
        ws = s[axis:]
        cs.append(one("layer_norm/RMSNormalization/axis%d/eps%g/%s/%s" % (axis, eps, dt, sh(s)), "layer_norm",
                      "RMSNormalization", ["x", "w"], [("x", rnd(s, dt)), ("w", rnd(ws, dt, 0.5, 1.5))],
                      attrs={"axis": axis, "epsilon": eps}, opset=23))
    # other normalizations that lower onto layer_norm / reductions
    cs.append(one("layer_norm/InstanceNormalization/f32/2x3x5x7", "layer_norm", "InstanceNormalization",
                  ["x", "s", "b"], [("x", rnd((2, 3, 5, 7))), ("s", rnd((3,))), ("b", rnd((3,)))],
                  attrs={"epsilon": 1e-4}))
    cs.append(one("layer_norm/InstanceNormalization/f32/1x4x13", "layer_norm", "InstanceNormalization",
                  ["x", "s", "b"], [("x", rnd((1, 4, 13))), ("s", rnd((4,))), ("b", rnd((4,)))]))
    cs.append(one("layer_norm/GroupNormalization/f32/2x6x5", "layer_norm", "GroupNormalization", ["x", "s", "b"],
                  [("x", rnd((2, 6, 5))), ("s", rnd((6,))), ("b", rnd((6,)))], attrs={"num_groups": 3}, opset=21))
    cs.append(one("layer_norm/GroupNormalization/f32/1x4x3x3", "layer_norm", "GroupNormalization", ["x", "s", "b"],
                  [("x", rnd((1, 4, 3, 3))), ("s", rnd((4,))), ("b", rnd((4,)))], attrs={"num_groups": 2, "epsilon": 1e-3},
                  opset=21))
    cs.append(single("layer_norm/MeanVarianceNormalization/f32/2x3x4x5", "layer_norm", "MeanVarianceNormalization",
                     [("x", rnd((2, 3, 4, 5)))]))
    cs.append(single("layer_norm/MeanVarianceNormalization/axes1/f32/2x3x4", "layer_norm",
                     "MeanVarianceNormalization", [("x", rnd((2, 3, 4)))], {"axes": [1]}))
    for p, axis in [(2, -1), (1, 1), (2, 0)]:
        cs.append(single("reduce/LpNormalization/p%d/axis%d/f32/3x5x7" % (p, axis), "reduce", "LpNormalization",
                         [("x", nonzero((3, 5, 7)))], {"p": p, "axis": axis}))
    # BatchNormalization (inference): folded scale/shift → mul + add
    cs.append(one("binary/mul+add/BatchNormalization/f32/2x3x5x7", "binary", "BatchNormalization",
                  ["x", "s", "b", "m", "v"], [("x", rnd((2, 3, 5, 7)))],
                  [("s", f32(0.5, 1.5, -1.0)), ("b", f32(0.1, -0.2, 0.3)), ("m", f32(0.0, 0.5, -0.5)),
                   ("v", f32(1.0, 0.25, 2.0))], {"epsilon": 1e-3}, opset=15))
    cs.append(one("binary/mul+add/BatchNormalization/runtime/f32/2x4x3", "binary", "BatchNormalization",
                  ["x", "s", "b", "m", "v"], [("x", rnd((2, 4, 3))), ("s", rnd((4,))), ("b", rnd((4,))),
                                              ("m", rnd((4,))), ("v", rnd((4,), "f32", 0.1, 2.0))], opset=15))
    return cs


def cumulate_cases():
    cs = []
    for op, fn in [("CumSum", "sum"), ("CumProd", "prod")]:
        opset = 14 if op == "CumSum" else 26
        for s, axis, ex, rev, dt in [((3, 5, 7), 1, 0, 0, "f32"), ((3, 5, 7), -1, 1, 0, "f32"),
                                     ((3, 5, 7), 0, 0, 1, "f32"), ((3, 5, 7), 2, 1, 1, "f32"), ((13,), 0, 0, 0, "f32"),
                                     ((4, 6), 1, 1, 1, "i32"), ((4, 6), 0, 0, 0, "i64"), ((4, 6), 1, 0, 1, "f64"),
                                     ((4, 6), 1, 1, 0, "i64")]:
            if fn == "prod":
                g = rnd(s, dt, 0.7, 1.4) if dt in FLOATS else rnd(s, dt, -2, 2)
            else:
                g = rnd(s, dt)
            adt = np.int32 if (s == (4, 6) and dt == "i32") else np.int64
            cs.append(one("cumulate/%s/%s/axis%d/ex%d/rev%d/%s/%s" % (fn, op, axis, ex, rev, dt, sh(s)), "cumulate", op,
                          ["x", "axis"], [("x", g)], [("axis", np.array(axis, adt))],
                          {"exclusive": ex, "reverse": rev}, opset=opset))
    return cs


# ---------------------------------------------------------------------------
# complex ops

def conv_cases():
    cs = []
    V = [
        # tag, x shape, w shape, attrs, bias
        ("2d/basic", (1, 3, 7, 9), (4, 3, 3, 3), {}, True),
        ("2d/nobias", (2, 3, 7, 9), (4, 3, 3, 3), {}, False),
        ("2d/stride2/pads", (1, 2, 13, 7), (3, 2, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, True),
        ("2d/asym-pads", (1, 2, 7, 7), (3, 2, 3, 2), {"pads": [0, 2, 1, 0]}, True),
        ("2d/dilation2", (1, 3, 9, 11), (2, 3, 3, 3), {"dilations": [2, 2], "pads": [2, 1, 2, 1]}, True),
        ("2d/stride3/dil2", (1, 2, 13, 13), (3, 2, 3, 3), {"strides": [3, 2], "dilations": [2, 1]}, False),
        ("2d/group2", (1, 4, 7, 9), (6, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}, True),
        ("2d/group3", (2, 6, 5, 5), (3, 2, 1, 1), {"group": 3}, False),
        ("2d/depthwise", (1, 5, 7, 9), (5, 1, 3, 3), {"group": 5, "pads": [1, 1, 1, 1]}, True),
        ("2d/depthwise-mult2", (1, 3, 7, 7), (6, 1, 3, 3), {"group": 3, "strides": [2, 2]}, True),
        ("2d/1x1", (2, 8, 5, 7), (16, 8, 1, 1), {}, True),
        ("2d/5x5", (1, 3, 13, 13), (4, 3, 5, 5), {"pads": [2, 2, 2, 2]}, True),
        ("2d/kernel-eq-input", (1, 2, 3, 3), (4, 2, 3, 3), {}, True),
        ("2d/pads-ge-kernel", (1, 2, 4, 5), (3, 2, 2, 2), {"pads": [3, 2, 2, 3]}, True),
        ("2d/same_upper", (1, 2, 7, 8), (3, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, True),
        ("2d/same_lower", (1, 2, 7, 8), (3, 2, 4, 4), {"auto_pad": "SAME_LOWER"}, True),
        ("2d/valid", (1, 2, 7, 8), (3, 2, 3, 3), {"auto_pad": "VALID", "strides": [1, 2]}, False),
        ("2d/16ch", (1, 16, 6, 6), (32, 16, 3, 3), {"pads": [1, 1, 1, 1]}, True),
        ("2d/32ch/stride2", (1, 32, 9, 9), (64, 32, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}, True),
        ("2d/depthwise-32", (2, 32, 7, 7), (32, 1, 3, 3), {"group": 32, "pads": [1, 1, 1, 1]}, True),
        ("1d/basic", (2, 3, 13), (4, 3, 3), {}, True),
        ("1d/stride2/pads/dil", (1, 2, 13), (3, 2, 3), {"strides": [2], "pads": [2, 1], "dilations": [2]}, True),
        ("1d/group", (1, 4, 9), (4, 1, 5), {"group": 4, "pads": [2, 2]}, False),
        ("3d/basic", (1, 2, 5, 6, 7), (3, 2, 3, 3, 3), {}, True),
        ("3d/stride/pads", (1, 2, 7, 5, 6), (2, 2, 3, 2, 3), {"strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]}, False),
        ("3d/group/dil", (1, 4, 7, 7, 7), (4, 2, 2, 2, 2), {"group": 2, "dilations": [2, 1, 3]}, True),
    ]
    for tag, xs, ws, attrs, bias in V:
        for dt in (["f32", "f16"] if tag in ("2d/basic", "2d/group2") else ["f32"]):
            inputs = [("x", rnd(xs, dt)), ("w", rnd(ws, dt, -1, 1))]
            if bias:
                inputs.append(("b", rnd((ws[0],), dt)))
            cs.append(single("conv/Conv/%s/%s/%s*%s" % (tag, dt, sh(xs), sh(ws)), "conv", "Conv", inputs, attrs))
    # constant weights (the usual case in a real model)
    cs.append(one("conv/Conv/2d/const-weights/f32/1x3x7x9*4x3x3x3", "conv", "Conv", ["x", "w", "b"],
                  [("x", rnd((1, 3, 7, 9)))], [("w", rnd((4, 3, 3, 3), "f32", -1, 1)(np.random.default_rng(7))),
                                               ("b", rnd((4,))(np.random.default_rng(8)))], {"pads": [1, 1, 1, 1]}))
    # grouped convs with constant weights: NCHW[x]c with whole channel blocks per
    # group (layout/nchwc.c), or plain when a group's channels are no block
    for k, (tag, xs, ws, attrs) in enumerate([
            ("group4/8-per-group", (1, 32, 9, 9), (32, 8, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),
            ("group2/stride2/48-out", (1, 64, 8, 8), (48, 32, 3, 3), {"group": 2, "pads": [1, 1, 1, 1],
                                                                      "strides": [2, 2]}),
            ("group32/resnext", (1, 128, 14, 14), (128, 4, 3, 3), {"group": 32, "pads": [1, 1, 1, 1]}),
            ("group3/narrow", (1, 12, 7, 7), (6, 4, 3, 3), {"group": 3}),
            # the conv template's weight prefetch: rows of 3 output blocks (the next
            # block's weights spread over this block's rows), a small image in 8 output
            # blocks (image_tile: the next input block's), a strided 1x1 onto one
            ("prefetch/row-blocks", (1, 64, 14, 14), (96, 64, 3, 3), {"pads": [1, 1, 1, 1]}),
            ("prefetch/image-tile", (1, 64, 7, 7), (256, 64, 3, 3), {"pads": [1, 1, 1, 1]}),
            ("prefetch/1x1-stride2", (1, 64, 14, 14), (256, 64, 1, 1), {"strides": [2, 2]}),
            # a 3x3 kernel onto 14x14 in 8 output blocks: whole images (image_tile) too
            ("image-tile/3x3-stride2-14x14", (1, 64, 28, 28), (256, 64, 3, 3), {"pads": [1, 1, 1, 1],
                                                                                 "strides": [2, 2]}),
            # depthwise in NCHW[x]c, kernel columns unrolled: one-vector blocks (144
            # channels), two-vector blocks with stride 2
            ("depthwise/144", (1, 144, 11, 11), (144, 1, 3, 3), {"group": 144, "pads": [1, 1, 1, 1]}),
            ("depthwise/96/stride2", (1, 96, 13, 13), (96, 1, 3, 3), {"group": 96, "pads": [1, 1, 1, 1],
                                                                      "strides": [2, 2]}),
            # a few output channels: at stride 1 over rows of a vector or more, plain NCHW
            # with vectors along the rows (ragged rows of 37, a 5x5 kernel, 1 channel);
            # narrower rows or stride 2: one narrow padded block of 4 or 8
            ("3-out", (1, 16, 9, 11), (3, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
            ("3-out/rows-37", (1, 16, 6, 37), (3, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
            ("8-out/5x5/rows-40", (1, 12, 7, 40), (8, 12, 5, 5), {"pads": [2, 2, 2, 2]}),
            ("1-out/rows-64", (1, 5, 4, 64), (1, 5, 3, 3), {"pads": [0, 1, 0, 1]}),
            ("6-out/stride2", (1, 8, 9, 9), (6, 8, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
            # channel counts no block divides: input channels padded with zeros (the
            # reduction stops at the real ones), depthwise channels padded (ShuffleNetV2's 58)
            ("ragged-in/1d/257-bins", (1, 257, 20), (24, 257, 5), {"pads": [2, 2]}),
            ("ragged-in/1x1/58", (1, 58, 9, 9), (58, 58, 1, 1), {}),
            ("depthwise/58", (1, 58, 9, 9), (58, 1, 3, 3), {"group": 58, "pads": [1, 1, 1, 1]}),
            ("depthwise/29/stride2", (1, 29, 11, 11), (29, 1, 3, 3), {"group": 29, "pads": [1, 1, 1, 1],
                                                                      "strides": [2, 2]}),
            # grouped convs whose groups no block (or only a quarter vector) divides:
            # plain NCHW, vectors along the rows, tiles of a few channels (ShuffleNet's
            # 4 x 34 and 4 x 68; 2 x 47: no tile of 4..8 divides 94, a ragged last one;
            # a 3x3 with 3 x 5 channels over rows of 19)
            ("group4/34/1x1", (1, 136, 6, 28), (136, 34, 1, 1), {"group": 4}),
            ("group4/68/1x1/rows-14", (1, 272, 5, 14), (272, 68, 1, 1), {"group": 4}),
            ("group2/47/ragged-tile", (1, 94, 4, 20), (94, 47, 1, 1), {"group": 2}),
            ("group3/5/3x3/rows-19", (1, 15, 7, 19), (15, 5, 3, 3), {"group": 3, "pads": [1, 1, 1, 1]}),
            # dilated convs whose off-centre taps land in the padding for many outputs:
            # one conv per output region with its valid taps (layout/dilated.c)
            ("dilated/d5/regions", (1, 16, 12, 12), (32, 16, 3, 3), {"pads": [5, 5, 5, 5], "dilations": [5, 5]}),
            ("dilated/d3/stride2/asym", (1, 8, 13, 11), (16, 8, 3, 3), {"pads": [3, 2, 1, 3], "dilations": [3, 4],
                                                                        "strides": [2, 1]}),
            ("dilated/d6/group2", (1, 16, 10, 10), (16, 8, 3, 3), {"pads": [6, 6, 6, 6], "dilations": [6, 6],
                                                                   "group": 2}),
            # rows no tile divides (37, 41 pixels): full tiles, then a ragged last one,
            # with pixels outside channel blocks (a large input) and inside (large weights)
            ("ragged-rows/pixel-outer", (1, 16, 12, 37), (32, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
            ("ragged-rows/blocks-outer", (1, 64, 3, 41), (96, 64, 3, 3), {"pads": [1, 1, 1, 1]}),
            # 18 channels no block divides: the relayout pads them to whole blocks, too
            # few to run in parallel alone (schedule/sched_movement.c's padded_relayout_in)
            ("padded-in-blocks", (1, 18, 19, 23), (32, 18, 3, 3), {"pads": [1, 1, 1, 1]}),
            # 1-D convs as NCHW[x]c with H = 1: a speech stack's k5, an STFT-like front end
            # (1 input channel, long kernel, large stride, padded output channels)
            ("1d/k5", (1, 32, 50), (48, 32, 5), {"pads": [2, 2]}),
            ("1d/stft-like", (1, 1, 1600), (33, 1, 64), {"strides": [40]}),
            ("1d/dil3/stride2", (1, 16, 40), (16, 16, 3), {"pads": [3, 1], "dilations": [3], "strides": [2]}),
            ("1d/depthwise", (1, 16, 30), (16, 1, 5), {"group": 16, "pads": [2, 2]}),
            # a strided 1x1 over 512+ input channels: the input subsampled by a slice of
            # its blocks first, the conv at stride 1 (layout/nchwc.c's subsampled_1x1);
            # odd maps, and unequal strides
            ("1x1-subsampled/stride2", (1, 512, 9, 11), (512, 512, 1, 1), {"strides": [2, 2]}),
            ("1x1-subsampled/stride2x3", (1, 512, 7, 8), (640, 512, 1, 1), {"strides": [2, 3]}),
            # a 3x3 onto 7x7 in flat tiles (AVX2), an output block's weights past L1:
            # whole images (schedule/sched_conv.c)
            ("image-tile/3x3-stride2-7x7-flat", (1, 64, 13, 13), (128, 64, 3, 3), {"pads": [1, 1, 1, 1],
                                                                                    "strides": [2, 2]})]):
        cs.append(one("conv/Conv/%s/const-weights/%s/f32/%s*%s" % ("1d" if len(xs) == 3 else "2d", tag.replace("1d/", ""),
                                                                     sh(xs), sh(ws)), "conv", "Conv",
                      ["x", "w", "b"], [("x", rnd(xs))],
                      [("w", rnd(ws, "f32", -1, 1)(np.random.default_rng(20 + k))),
                       ("b", rnd((ws[0],))(np.random.default_rng(40 + k)))], attrs))
    # 24 and 40 output channels are padded to whole vectors (32, 48) in NCHW[x]c and
    # the next convs read the padded blocks: the reciprocal makes the padding infinite
    # (1/0), the depthwise conv turns it into NaN (inf * 0), and the last conv must
    # stop its reduction at the real channels. The real channels stay well away from
    # 0 (|x·w1| <= 1.6 < |b1|), so their reciprocals are no ill-conditioned test.
    for k, (cin, mid, cout) in enumerate([(8, 24, 16), (16, 40, 24)]):
        g = np.random.default_rng(70 + k)
        b1 = rnd((mid,), "f32", 2, 3)(g) * np.where(np.arange(mid) % 2, 1, -1).astype(np.float32)
        inits = [("w1", rnd((mid, cin, 1, 1), "f32", -0.1, 0.1)(g)), ("b1", b1),
                 ("wd", rnd((mid, 1, 3, 3), "f32", -1, 1)(g)),
                 ("w2", rnd((cout, mid, 1, 1), "f32", -1, 1)(g)), ("b2", rnd((cout,))(g))]
        cs.append(Case("conv/Conv/2d/const-weights/padded-channels/f32/%d-%d-%d" % (cin, mid, cout), "conv",
                       [node("Conv", ["x", "w1", "b1"], ["t"]), node("Reciprocal", ["t"], ["r"]),
                        node("Conv", ["r", "wd"], ["d"], group=mid, pads=[1, 1, 1, 1]),
                        node("Conv", ["d", "w2", "b2"], ["y"])],
                       [("x", rnd((1, cin, 6, 6), "f32", -1, 1))], ["y"], inits))
    return cs


def conv_transpose_cases():
    cs = []
    V = [
        ("2d/basic", (1, 3, 5, 7), (3, 4, 3, 3), {}, True),
        ("2d/stride2", (1, 2, 4, 5), (2, 3, 3, 3), {"strides": [2, 2]}, True),
        ("2d/stride2/pads", (2, 2, 4, 5), (2, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, False),
        ("2d/stride2/output_padding", (1, 2, 4, 5), (2, 3, 3, 3), {"strides": [2, 3], "output_padding": [1, 2]}, True),
        ("2d/dilation2", (1, 2, 5, 5), (2, 2, 3, 3), {"dilations": [2, 2]}, True),
        ("2d/group2", (1, 4, 5, 5), (4, 3, 3, 3), {"group": 2, "strides": [2, 1]}, True),
        ("2d/depthwise", (1, 3, 4, 4), (3, 1, 3, 3), {"group": 3, "strides": [2, 2], "pads": [1, 1, 1, 1]}, False),
        ("2d/output_shape", (1, 2, 4, 5), (2, 3, 3, 3), {"strides": [2, 2], "output_shape": [10, 12]}, True),
        ("2d/asym-pads", (1, 2, 5, 5), (2, 2, 4, 3), {"pads": [0, 1, 2, 0], "strides": [2, 2]}, True),
        ("2d/same_upper", (1, 2, 4, 5), (2, 3, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, False),
        ("1d/basic", (2, 3, 7), (3, 2, 3), {"strides": [2]}, True),
        ("1d/pads/dil", (1, 2, 13), (2, 2, 5), {"pads": [1, 2], "dilations": [2]}, False),
        ("3d/basic", (1, 2, 3, 4, 5), (2, 2, 2, 3, 2), {"strides": [2, 1, 2]}, True),
        ("3d/group", (1, 4, 3, 3, 3), (4, 1, 3, 3, 3), {"group": 2, "pads": [1, 0, 1, 1, 0, 1]}, False),
    ]
    for tag, xs, ws, attrs, bias in V:
        for dt in (["f32", "f16"] if tag == "2d/basic" else ["f32"]):
            inputs = [("x", rnd(xs, dt)), ("w", rnd(ws, dt, -1, 1))]
            if bias:
                inputs.append(("b", rnd((ws[1] * attrs.get("group", 1),), dt)))
            cs.append(single("conv_transpose/ConvTranspose/%s/%s/%s*%s" % (tag, dt, sh(xs), sh(ws)), "conv_transpose",
                             "ConvTranspose", inputs, attrs))
    # constant weights: one conv per stride phase (layout/deconv.c), then NCHW[x]c
    W = [
        ("s2/p1/output_padding", (1, 16, 7, 9), (16, 8, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                                                "output_padding": [1, 1]}, True),
        ("k4/s2/p1", (1, 32, 8, 8), (32, 16, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, True),
        ("s1/pads-past-kernel", (1, 8, 6, 5), (8, 4, 3, 3), {"pads": [2, 1, 2, 2]}, True),
        ("k1/s3x2/empty-phases", (1, 8, 6, 5), (8, 4, 1, 2), {"strides": [3, 2]}, False),
        ("group2/s2x1", (1, 8, 6, 5), (8, 3, 3, 3), {"strides": [2, 1], "group": 2}, True),
        ("big-pads", (1, 4, 5, 5), (4, 2, 5, 5), {"strides": [2, 2], "pads": [4, 3, 4, 4]}, True),
        ("1d/s3", (2, 4, 9), (4, 3, 5), {"strides": [3], "pads": [2, 1]}, True),
        ("3d/s2x1x2", (1, 4, 3, 4, 5), (4, 2, 2, 3, 2), {"strides": [2, 1, 2], "pads": [0, 1, 1, 1, 0, 0]}, True),
        ("dilation2/not-split", (1, 4, 5, 5), (4, 2, 3, 3), {"dilations": [2, 2], "strides": [2, 2]}, True),
        # enough output channels for blocks: the phases interleaved in NCHW[x]c (layout/nchwc.c)
        ("k2/s2/blocked", (1, 16, 6, 7), (16, 32, 2, 2), {"strides": [2, 2]}, True),
        ("k3/s2/p1/blocked/padded-crop", (1, 16, 7, 9), (16, 24, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                                                          "output_padding": [1, 0]}, True),
        ("k4/s2/p1/blocked/batch2", (2, 8, 5, 6), (8, 48, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, False),
        ("1d/s3/blocked/crop", (1, 16, 9), (16, 32, 5), {"strides": [3], "pads": [2, 1]}, True),
    ]
    for k, (tag, xs, ws, attrs, bias) in enumerate(W):
        inits = [("w", rnd(ws, "f32", -1, 1)(np.random.default_rng(60 + k)))]
        if bias:
            inits.append(("b", rnd((ws[1] * attrs.get("group", 1),))(np.random.default_rng(80 + k))))
        cs.append(one("conv_transpose/ConvTranspose/const-weights/%s/f32/%s*%s" % (tag, sh(xs), sh(ws)),
                      "conv_transpose", "ConvTranspose", ["x", "w", "b"] if bias else ["x", "w"], [("x", rnd(xs))],
                      inits, attrs))
    return cs


def matmul_cases():
    cs = []
    for sa, sb, dt in [((7, 13), (13, 5), "f32"), ((1, 1), (1, 1), "f32"), ((3, 7, 13), (3, 13, 5), "f32"),
                       ((2, 1, 4, 6), (3, 6, 5), "f32"), ((4, 6), (2, 3, 6, 5), "f32"), ((13,), (13, 7), "f32"),
                       ((7, 13), (13,), "f32"), ((13,), (13,), "f32"), ((2, 3, 13), (13,), "f32"),
                       ((13,), (2, 13, 3), "f32"), ((17, 33), (33, 19), "f32"), ((5, 6), (6, 7), "f64"),
                       ((2, 5, 6), (6, 7), "f16"), ((5, 6), (6, 7), "i32"), ((2, 5, 6), (1, 6, 7), "i64"),
                       ((4, 5), (5, 3), "u32"), ((4, 5), (5, 3), "u64"), ((1, 64), (64, 1), "f32")]:
        g = (lambda s, d: rnd(s, d, -5, 5)) if dt not in FLOATS else (lambda s, d: rnd(s, d, -1, 1))
        cs.append(single("matmul/MatMul/%s/%s@%s" % (dt, sh(sa), sh(sb)), "matmul", "MatMul",
                         [("a", g(sa, dt)), ("b", g(sb, dt))]))
    cs.append(single("matmul/MatMul/f32/64x64@64x64", "matmul", "MatMul",
                     [("a", rnd((64, 64), "f32", -1, 1)), ("b", rnd((64, 64), "f32", -1, 1))]))
    cs.append(single("matmul/MatMul/f32/2x3x37x19@19x41", "matmul", "MatMul",
                     [("a", rnd((2, 3, 37, 19), "f32", -1, 1)), ("b", rnd((19, 41), "f32", -1, 1))]))
    # Gemm: matmul + add (+ transposes, alpha, beta)
    for tag, sa, sb, sc, attrs, dt in [("basic", (4, 6), (6, 5), (4, 5), {}, "f32"),
                                       ("transA", (6, 4), (6, 5), (5,), {"transA": 1}, "f32"),
                                       ("transB", (4, 6), (5, 6), (1, 5), {"transB": 1}, "f32"),
                                       ("transAB/alpha/beta", (6, 4), (5, 6), (4, 1),
                                        {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, "f32"),
                                       ("scalarC", (3, 7), (7, 2), (), {"alpha": -1.5}, "f32"),
                                       ("noC", (3, 7), (7, 2), None, {}, "f32"),
                                       ("basic", (4, 6), (6, 5), (5,), {"beta": 0.5}, "f64"),
                                       ("basic", (4, 6), (6, 5), (4, 5), {}, "f16")]:
        inputs = [("a", rnd(sa, dt, -1, 1)), ("b", rnd(sb, dt, -1, 1))]
        if sc is not None:
            inputs.append(("c", rnd(sc, dt)))
        cs.append(single("matmul/Gemm/%s/%s/%s@%s%s" % (tag, dt, sh(sa), sh(sb), "+" + sh(sc) if sc is not None else ""),
                         "matmul", "Gemm", inputs, attrs))
    cs.append(one("matmul/Gemm/const-weights/f32/3x13@13x7+7", "matmul", "Gemm", ["a", "b", "c"],
                  [("a", rnd((3, 13)))], [("b", rnd((7, 13), "f32", -1, 1)(np.random.default_rng(3))),
                                          ("c", rnd((7,))(np.random.default_rng(4)))], {"transB": 1}))
    # constant B (packed in panels): column panels outside row tiles with k in
    # steps of 4 (B outweighs A), a batch of ragged rows with k in steps of 2, rows
    # outside panels with an odd k
    # ragged column tiles (N prime: the row's last column tile is partial) of a batch
    # matmul whose B is no constant (attention's keys: 197 of them)
    cs.append(single("matmul/MatMul/f32/ragged-columns/3x29x16@3x16x53", "matmul", "MatMul",
                     [("a", rnd((3, 29, 16), "f32", -1, 1)), ("b", rnd((3, 16, 53), "f32", -1, 1))]))
    # ragged row tiles (M prime: the last register tile is partial), with packed B
    for k, (sa, sb) in enumerate([((40, 64), (64, 96)), ((2, 19, 30), (30, 64)), ((64, 33), (33, 32)),
                                  ((1, 197, 40), (40, 48)), ((13, 29), (29, 37)),
                                  # columns a multiple of one vector but not of two: tiles of
                                  # two one-vector panels, the last tile one panel (panels
                                  # outside rows: 40 >= 13; rows outside: 24 < 33); 80 for
                                  # 16-lane vectors
                                  ((13, 29), (29, 40)), ((2, 33, 24), (24, 24)), ((3, 80), (80, 80))]):
        cs.append(one("matmul/MatMul/const-weights/f32/%s@%s" % (sh(sa), sh(sb)), "matmul", "MatMul", ["a", "b"],
                      [("a", rnd(sa, "f32", -1, 1))], [("b", rnd(sb, "f32", -1, 1)(np.random.default_rng(60 + k)))]))
    # Einsum → matmul
    for eq, shapes in [("ij,jk->ik", [(4, 6), (6, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
                       ("ij,kj->ik", [(3, 5), (4, 5)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)])]:
        names = ["a", "b"][:len(shapes)]
        cs.append(Case("matmul/Einsum/%s/f32/%s" % (eq, "+".join(sh(s) for s in shapes)), "matmul",
                       [node("Einsum", names, ["y"], equation=eq)],
                       [(n, rnd(s, "f32", -1, 1)) for n, s in zip(names, shapes)], ["y"], opset=12))
    return cs


def pool_cases():
    cs = []
    V = [
        # op, tag, x shape, attrs, dtypes
        ("MaxPool", "2d/k2s2", (1, 3, 8, 10), {"kernel_shape": [2, 2], "strides": [2, 2]}, ["f32", "f16", "f64", "i8", "u8"]),
        ("MaxPool", "2d/k3s1/pads", (2, 2, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, ["f32"]),
        ("MaxPool", "2d/k3s2/ceil", (1, 2, 8, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, ["f32"]),
        ("MaxPool", "2d/k3s2/ceil/pads", (1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1,
                                                         "pads": [1, 1, 1, 1]}, ["f32"]),
        ("MaxPool", "2d/dilation2", (1, 2, 9, 9), {"kernel_shape": [2, 3], "dilations": [2, 2]}, ["f32"]),
        ("MaxPool", "2d/asym", (1, 1, 13, 7), {"kernel_shape": [3, 2], "strides": [3, 1], "pads": [0, 1, 2, 0]}, ["f32"]),
        ("MaxPool", "2d/same_upper", (1, 2, 7, 6), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
         ["f32"]),
        ("MaxPool", "2d/same_lower", (1, 2, 7, 6), {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}, ["f32"]),
        ("MaxPool", "1d", (2, 3, 13), {"kernel_shape": [3], "strides": [2]}, ["f32"]),
        ("MaxPool", "3d", (1, 2, 5, 6, 7), {"kernel_shape": [2, 2, 3], "strides": [1, 2, 2], "pads": [0, 1, 1, 1, 0, 0]},
         ["f32"]),
        ("AveragePool", "2d/k2s2", (1, 3, 8, 10), {"kernel_shape": [2, 2], "strides": [2, 2]}, ["f32", "f16"]),
        ("AveragePool", "2d/pads/exclude", (1, 2, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, ["f32"]),
        ("AveragePool", "2d/pads/include", (1, 2, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                                          "count_include_pad": 1}, ["f32"]),
        ("AveragePool", "2d/ceil", (1, 2, 8, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, ["f32"]),
        ("AveragePool", "2d/ceil/pads/include", (1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2],
                                                               "ceil_mode": 1, "pads": [1, 1, 1, 1],
                                                               "count_include_pad": 1}, ["f32"]),
        ("AveragePool", "2d/ceil/pads/exclude", (1, 2, 7, 8), {"kernel_shape": [3, 2], "strides": [2, 3],
                                                               "ceil_mode": 1, "pads": [1, 0, 1, 1]}, ["f32"]),
        ("AveragePool", "2d/dilation2", (1, 2, 9, 9), {"kernel_shape": [2, 2], "dilations": [2, 3]}, ["f32"]),
        ("AveragePool", "2d/same_upper", (1, 2, 7, 6), {"kernel_shape": [3, 3], "strides": [2, 2],
                                                        "auto_pad": "SAME_UPPER"}, ["f32"]),
        ("AveragePool", "1d", (2, 3, 13), {"kernel_shape": [4], "strides": [3], "pads": [1, 2]}, ["f32"]),
        # plain NCHW rows of vectors (rows of 16 or more): ragged last vectors, strided taps
        # (a masked load of the span and a shuffle), tiles of several vectors, padding read
        # as the identity at the edges
        ("MaxPool", "2d/rows/k3s2/pads", (1, 3, 9, 75), {"kernel_shape": [3, 3], "strides": [2, 2],
                                                        "pads": [1, 1, 1, 1]}, ["f32"]),
        ("MaxPool", "2d/rows/k7s1/pads", (1, 2, 11, 29), {"kernel_shape": [7, 7], "pads": [3, 3, 3, 3]}, ["f32"]),
        # windows of 5x5 and more: a pool over rows, then one over columns (layout/separable_pool.c),
        # with strides, asymmetric pads, dilation and the ceil-mode rule per axis
        ("MaxPool", "2d/separable/k5s2/ceil/pads", (1, 3, 17, 20), {"kernel_shape": [5, 5], "strides": [2, 2],
                                                                   "pads": [2, 1, 0, 2], "ceil_mode": 1}, ["f32"]),
        ("MaxPool", "2d/separable/k7x5/dil2", (1, 2, 21, 23), {"kernel_shape": [7, 5], "dilations": [2, 2],
                                                              "strides": [1, 3], "pads": [3, 0, 3, 4]}, ["f32"]),
        ("AveragePool", "2d/rows/k3s1/exclude", (1, 2, 5, 37), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
         ["f32"]),
        ("AveragePool", "2d/rows/k2s3/include", (1, 2, 6, 64), {"kernel_shape": [2, 4], "strides": [1, 3],
                                                               "pads": [0, 1, 1, 2], "count_include_pad": 1},
         ["f32"]),
        ("AveragePool", "3d", (1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2]}, ["f32"]),
        ("LpPool", "2d/p2", (1, 3, 8, 9), {"kernel_shape": [2, 3], "strides": [2, 2]}, ["f32"]),
        ("LpPool", "2d/p1/pads", (1, 2, 7, 7), {"kernel_shape": [3, 3], "p": 1, "pads": [1, 1, 1, 1]}, ["f32"]),
        ("LpPool", "2d/p3", (1, 2, 6, 6), {"kernel_shape": [2, 2], "p": 3}, ["f32"]),
        ("LpPool", "2d/p2/ceil/dil", (1, 2, 9, 8), {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1,
                                                    "dilations": [2, 1]}, ["f32"]),
        ("LpPool", "1d", (2, 3, 13), {"kernel_shape": [3], "strides": [2]}, ["f32"]),
    ]
    for op, tag, xs, attrs, dts in V:
        fn = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[op]
        for dt in dts:
            g = distinct(xs, dt) if dt in FLOATS else rnd(xs, dt, -100 if dt == "i8" else 0, 100)
            cs.append(single("pool/%s/%s/%s/%s/%s" % (fn, op, tag, dt, sh(xs)), "pool", op, [("x", g)], attrs,
                             opset=22 if op != "MaxPool" else 12))
    for op, dts in [("GlobalAveragePool", ["f32", "f16"]), ("GlobalMaxPool", ["f32", "f16"]),
                    ("GlobalLpPool", ["f32"])]:
        for xs in [(2, 3, 5, 7), (1, 4, 13)]:
            for dt in dts:
                cs.append(single("pool/%s/%s/%s" % (op, dt, sh(xs)), "pool", op, [("x", rnd(xs, dt))]))
    return cs


def lrn_cases():
    cs = []
    for s, attrs in [((1, 5, 3, 4), {"size": 3}), ((2, 7, 4, 4), {"size": 5, "alpha": 1e-3, "beta": 0.6, "bias": 2.0}),
                     ((1, 13, 3, 3), {"size": 7, "alpha": 0.01, "beta": 0.9}), ((1, 3, 5, 5), {"size": 1}),
                     ((2, 6, 1, 7), {"size": 3, "alpha": 0.5})]:
        cs.append(single("lrn/LRN/size%d/f32/%s" % (attrs["size"], sh(s)), "lrn", "LRN", [("x", rnd(s, "f32"))], attrs))
    return cs


def topk_cases():
    cs = []
    for s, k, axis, largest, dt in [((3, 13), 4, -1, 1, "f32"), ((3, 13), 4, -1, 0, "f32"), ((5, 7, 3), 2, 1, 1, "f32"),
                                    ((5, 7, 3), 5, 0, 0, "f32"), ((13,), 13, 0, 1, "f32"), ((13,), 1, 0, 0, "f32"),
                                    ((4, 9), 3, 1, 1, "i64"), ((4, 9), 3, 0, 0, "i32"), ((4, 9), 5, 1, 0, "f64"),
                                    ((2, 3, 33), 7, 2, 1, "f32"), ((6, 5), 2, 1, 1, "f16")]:
        cs.append(one("topk/TopK/k%d/axis%d/%s/%s/%s" % (k, axis, "largest" if largest else "smallest", dt, sh(s)),
                      "topk", "TopK", ["x", "k"], [("x", distinct(s, dt, 0.25 if dt != "f16" else 0.5))],
                      [("k", i64(k))], {"axis": axis, "largest": largest}, outs=["v", "i"], opset=11))
    return cs


def scatter_elements_cases():
    cs = []

    def unique_idx(ds, ish, axis):
        """Indices along `axis` with no two updates hitting the same element."""
        def gen(rng):
            out = np.empty(ish, np.int64)
            for pos in np.ndindex(*[d for i, d in enumerate(ish) if i != axis]):
                perm = rng.permutation(ds[axis])[:ish[axis]]
                sl = list(pos)
                sl.insert(axis, slice(None))
                out[tuple(sl)] = perm
            neg = rng.random(ish) < 0.25
            return np.where(neg, out - ds[axis], out)
        return gen

    for red in ["none", "add", "mul", "max", "min"]:
        for ds, ish, axis, dt in [((5, 7), (3, 7), 0, "f32"), ((5, 7), (5, 4), 1, "f32"), ((2, 3, 13), (2, 2, 6), -1, "f32"),
                                  ((4, 6), (2, 3), 0, "i64"), ((4, 6), (4, 2), 1, "f64"), ((3, 4), (3, 4), 1, "i32")]:
            if red == "none":
                ig = unique_idx(ds, ish, axis if axis >= 0 else len(ds) + axis)
            else:
                ig = index(ish, ds[axis])
            g = (lambda s, d: rnd(s, d, 0.5, 1.5)) if red == "mul" else (lambda s, d: rnd(s, d))
            if red == "mul" and dt not in FLOATS:
                g = lambda s, d: rnd(s, d, -3, 3)
            cs.append(one("scatter_elements/ScatterElements/%s/axis%d/%s/%s<-%s" % (red, axis, dt, sh(ds), sh(ish)),
                          "scatter_elements", "ScatterElements", ["x", "i", "u"],
                          [("x", g(ds, dt)), ("i", ig), ("u", g(ish, dt))], attrs={"axis": axis, "reduction": red},
                          opset=18))
    cs.append(one("scatter_elements/ScatterElements/none/i32-idx/bool/4x5<-2x5", "scatter_elements", "ScatterElements",
                  ["x", "i", "u"], [("x", rnd((4, 5), "bool")),
                                    ("i", lambda rng: np.stack([rng.permutation(4)[:2] for _ in range(5)], 1).astype(np.int32)),
                                    ("u", rnd((2, 5), "bool"))], attrs={"axis": 0}, opset=18))
    return cs


def scatter_nd_cases():
    cs = []
    for red in ["none", "add", "mul", "max", "min"]:
        for ds, ish, dt in [((5, 7), (3, 1), "f32"), ((5, 7), (4, 2), "f32"), ((2, 3, 4), (2, 2, 2), "f32"),
                            ((6,), (4, 1), "i64"), ((3, 4, 5), (2, 1), "f64"), ((4, 3), (3, 2), "i32")]:
            k = ish[-1]
            nupd = int(np.prod(ish[:-1]))

            def ig(rng, ds=ds, ish=ish, k=k, nupd=nupd, red=red):
                space = int(np.prod(ds[:k]))
                flat = rng.permutation(space)[:nupd] if red == "none" else rng.integers(0, space, nupd)
                tup = np.stack(np.unravel_index(flat, ds[:k]), -1).reshape(ish)
                neg = rng.random(ish) < 0.25
                return np.where(neg, tup - np.array(ds[:k]), tup).astype(np.int64)
            us = ish[:-1] + ds[k:]
            g = (lambda s, d: rnd(s, d, 0.5, 1.5)) if red == "mul" else (lambda s, d: rnd(s, d))
            if red == "mul" and dt not in FLOATS:
                g = lambda s, d: rnd(s, d, -3, 3)
            cs.append(one("scatter_nd/ScatterND/%s/%s/%s<-%s" % (red, dt, sh(ds), sh(ish)), "scatter_nd", "ScatterND",
                          ["x", "i", "u"], [("x", g(ds, dt)), ("i", ig), ("u", g(us, dt))], attrs={"reduction": red},
                          opset=18))
    return cs


def misc_cases():
    """Other ONNX ops that become canonical ones: Identity/Dropout (copies),
    QuantizeLinear/DequantizeLinear (elementwise), a small chain."""
    cs = []
    cs.append(single("reshape/Identity/f32/7x13", "reshape", "Identity", [("x", rnd((7, 13)))]))
    cs.append(single("reshape/Dropout/f32/7x13", "reshape", "Dropout", [("x", rnd((7, 13)))], opset=13))
    for dt, zp in [("u8", 128), ("i8", -3)]:
        cs.append(one("cast/QuantizeLinear/%s/7x13" % dt, "cast", "QuantizeLinear", ["x", "s", "z"],
                      [("x", rnd((7, 13), "f32", -20, 20))],
                      [("s", np.array(0.1, np.float32)), ("z", np.array(zp, DT[dt]))], opset=13))
        cs.append(one("cast/DequantizeLinear/%s/7x13" % dt, "cast", "DequantizeLinear", ["x", "s", "z"],
                      [("x", rnd((7, 13), dt, -100 if dt == "i8" else 0, 100))],
                      [("s", np.array(0.05, np.float32)), ("z", np.array(zp, DT[dt]))], opset=13))
    cs.append(one("cast/QuantizeLinear/per-axis/u8/2x3x4", "cast", "QuantizeLinear", ["x", "s", "z"],
                  [("x", rnd((2, 3, 4), "f32", -10, 10))],
                  [("s", f32(0.1, 0.2, 0.05)), ("z", np.array([10, 128, 200], np.uint8))], {"axis": 1}, opset=13))
    return cs


def rnn_cases():
    """ONNX LSTM, GRU and RNN: each sequence becomes a few kernels per step (the
    recurrent matmul fused with the gate math and the state update, a small matmul
    whose product the kernel keeps in a buffer: fusion/partition.c), so these check
    those fused steps — hidden sizes that fill whole vectors (16), leave a ragged
    last vector (20, 4H = 80; 13) or are below one (3), batch 1 and 3, both
    directions, sequence lengths, initial states, peepholes, linear_before_reset.
    Weights are initializers (the recurrent ones packed into panels at compile time)."""
    cs = []
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}
    for op, tag, seq, batch, inp, hid, attrs, extra in [
            ("LSTM", "h16", 5, 1, 8, 16, {}, ()),
            ("LSTM", "h20/batch3", 4, 3, 6, 20, {}, ()),
            ("LSTM", "h13/bidirectional/init/peep", 4, 2, 5, 13, {"direction": "bidirectional"}, ("h0", "c0", "P")),
            ("LSTM", "h3/reverse/lens", 5, 3, 4, 3, {"direction": "reverse"}, ("lens",)),
            ("GRU", "h20", 5, 1, 7, 20, {}, ()),
            ("GRU", "h20/lbr/batch3/init", 4, 3, 7, 20, {"linear_before_reset": 1}, ("h0",)),
            ("GRU", "h13/bidirectional/lens", 4, 3, 5, 13, {"direction": "bidirectional"}, ("lens",)),
            ("RNN", "h24/init", 6, 2, 5, 24, {}, ("h0",))]:
        d = 2 if attrs.get("direction") == "bidirectional" else 1
        g, seed = G[op], len(cs) + 90
        rng = np.random.default_rng(seed)
        sc = 1 / np.sqrt(hid)
        inits = [("W", rng.uniform(-sc, sc, (d, g * hid, inp)).astype(np.float32)),
                 ("R", rng.uniform(-sc, sc, (d, g * hid, hid)).astype(np.float32)),
                 ("B", rng.uniform(-sc, sc, (d, 2 * g * hid)).astype(np.float32))]
        inputs = [("X", rnd((seq, batch, inp), "f32", -1, 1))]
        names = ["X", "W", "R", "B"]
        if "lens" in extra:
            inits.append(("lens", np.array([seq, 1, seq - 1][:batch], dtype=np.int32)))
        names.append("lens" if "lens" in extra else "")
        for opt, shape in [("h0", (d, batch, hid)), ("c0", (d, batch, hid))]:
            if op == "RNN" or op == "GRU":
                if opt == "c0":
                    continue
            if opt in extra:
                inputs.append((opt, rnd(shape, "f32", -1, 1)))
            names.append(opt if opt in extra else "")
        if "P" in extra:
            inits.append(("P", rng.uniform(-sc, sc, (d, 3 * hid)).astype(np.float32)))
            names.append("P")
        while names[-1] == "":
            names.pop()
        outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
        cs.append(one("matmul/%s/%s/f32/%dx%dx%d" % (op, tag, seq, batch, inp), "matmul", op, names, inputs,
                      [(n, const(v)) for n, v in inits], dict(attrs, hidden_size=hid), outs=outs, opset=14))
    return cs


def empty_cases():
    """Zero-size tensors: well defined, easy to get wrong."""
    return [
        single("binary/add/Add/empty/f32/0x3+3", "binary", "Add", [("a", rnd((0, 3))), ("b", rnd((3,)))]),
        single("unary/exp/Exp/empty/f32/2x0x3", "unary", "Exp", [("x", rnd((2, 0, 3)))]),
        Case("concat/Concat/empty/f32/2x3+0x3", "concat", [node("Concat", ["a", "b"], ["y"], axis=0)],
             [("a", rnd((2, 3))), ("b", rnd((0, 3)))], ["y"]),
        one("reduce/sum/ReduceSum/empty-axis/f32/3x0", "reduce", "ReduceSum", ["x", "axes"], [("x", rnd((3, 0)))],
            [("axes", i64(1))], {"keepdims": 0}, opset=18),
        one("reduce/max/ReduceMax/empty-rows/f32/0x5", "reduce", "ReduceMax", ["x", "axes"], [("x", rnd((0, 5)))],
            [("axes", i64(1))], {"keepdims": 1}, opset=18),
        one("slice/Slice/empty/f32/4x5", "slice", "Slice", ["x", "starts", "ends"], [("x", rnd((4, 5)))],
            [("starts", i64(3)), ("ends", i64(1))]),
        single("matmul/MatMul/empty-k/f32/3x0@0x4", "matmul", "MatMul", [("a", rnd((3, 0))), ("b", rnd((0, 4)))]),
        single("gather/Gather/empty-idx/f32/4x5", "gather", "Gather", [("x", rnd((4, 5))), ("i", index((0,), 4))]),
    ]


def _all():
    cs = []
    for f in [unary_cases, binary_cases, where_cases, cast_cases, bitcast_cases, iota_cases, reshape_cases,
              transpose_cases, concat_cases, slice_cases, pad_cases, broadcast_cases, tile_cases, gather_cases,
              gather_elements_cases, gather_nd_cases, one_hot_cases, resize_cases, reduce_cases, arg_reduce_cases, softmax_cases,
              layer_norm_cases, cumulate_cases, conv_cases, conv_transpose_cases, matmul_cases, pool_cases, lrn_cases,
              topk_cases, scatter_elements_cases, scatter_nd_cases, misc_cases, rnn_cases, empty_cases]:
        cs.extend(f())
    return cs


ALL = _all()
