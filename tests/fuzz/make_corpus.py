#!/usr/bin/env python3
"""make_corpus.py — writes the seed corpus of the importer fuzzer into a folder.

Usage: make_corpus.py OUT_DIR [--dict FILE]
       make_corpus.py OUT_DIR --testdata
       make_corpus.py OUT_DIR --npy

With --testdata, the seeds are those of the test-data fuzzer (fuzz_testdata.c)
instead: every input_N.pb / output_N.pb of the node tests under 64 KiB, one per
distinct content (tensors of every element type, sequences, optionals). With --npy,
those of the .npy fuzzer (fuzz_npy.c): NumPy's own files for each element type kiln
reads, versions 1.0 and 2.0, scalars to rank 4, each after a byte naming the element
type the model would expect.

The seeds are small, valid models, so that the fuzzer starts from inputs that get
deep into the importer (past the wire pre-scan and protobuf-c, into initializers,
scopes, converters, functions and subgraphs) instead of rediscovering the ONNX
schema byte by byte. Two sources:
  - hand-made models (below): initializers in raw and typed form for every element
    type, Constant nodes in each attribute form, model-local functions with
    attribute references, If/Loop/Scan subgraphs, symbolic dims, external data
    references (refused by the fuzz target, which has no base folder), a custom
    domain, and chains of common ops with their attributes;
  - every model of the onnx package's backend node tests under 64 KiB (one per
    ONNX op and variant), plus the "simple" and "pytorch-operator" test models.
Files are named by content hash, so re-running is idempotent. Deterministic.
With --dict, also writes a libFuzzer dictionary: every op type, attribute name and
domain of the onnx schemas, and the external-data keys, as they appear on the wire.
"""
import hashlib
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MAX_SEED = 64 * 1024
OPSET = 17


def model(nodes, inputs, outputs, inits=(), opset=OPSET, functions=(), extra_opsets=()):
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), initializer=list(inits))
    ops = [helper.make_opsetid("", opset)] + list(extra_opsets)
    m = helper.make_model(g, opset_imports=ops, functions=list(functions))
    m.ir_version = 8
    return m


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def f32(name, shape):
    return vi(name, TensorProto.FLOAT, shape)


def typed_tensor(name, dt, arr):
    """Initializer in the typed repeated fields (not raw_data)."""
    return helper.make_tensor(name, dt, arr.shape, arr.flatten().tolist(), raw=False)


def raw_tensor(name, arr):
    return numpy_helper.from_array(arr, name)


def hand_made():
    out = {}
    x = f32("x", [1, 3, 4, 4])
    y = f32("y", None)

    # Initializers of every common type, raw and typed.
    dtypes = [(np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE), (np.int64, TensorProto.INT64),
              (np.int32, TensorProto.INT32), (np.int16, TensorProto.INT16), (np.int8, TensorProto.INT8),
              (np.uint8, TensorProto.UINT8), (np.uint16, TensorProto.UINT16), (np.uint32, TensorProto.UINT32),
              (np.uint64, TensorProto.UINT64), (np.bool_, TensorProto.BOOL), (np.float16, TensorProto.FLOAT16)]
    for npt, code in dtypes:
        arr = (np.arange(6) % 3).astype(npt).reshape(2, 3)
        for raw in (0, 1):
            if raw:
                t = raw_tensor("w", arr)
            elif code == TensorProto.FLOAT16:
                t = helper.make_tensor("w", code, arr.shape, arr.view(np.uint16).flatten().tolist())
            else:
                t = typed_tensor("w", code, arr)
            out[f"init_{np.dtype(npt).name}_{'raw' if raw else 'typed'}"] = model(
                [helper.make_node("Identity", ["w"], ["y"], name="id")], [], [vi("y", code, [2, 3])], [t])

    # Constant nodes in every attribute form.
    forms = {
        "value": helper.make_attribute("value", raw_tensor("c", np.ones((2, 2), np.float32))),
        "value_float": helper.make_attribute("value_float", 1.5),
        "value_int": helper.make_attribute("value_int", 7),
        "value_floats": helper.make_attribute("value_floats", [1.0, 2.0]),
        "value_ints": helper.make_attribute("value_ints", [1, 2, 3]),
    }
    for k, a in forms.items():
        n = helper.make_node("Constant", [], ["y"], name="c")
        n.attribute.append(a)
        out[f"constant_{k}"] = model([n], [], [y])

    # A chain of common ops, attributes included.
    w = raw_tensor("w", np.ones((8, 3, 3, 3), np.float32))
    b = typed_tensor("b", TensorProto.FLOAT, np.zeros(8, np.float32))
    shape = raw_tensor("shape", np.array([1, -1], np.int64))
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"], name="flat"),
        helper.make_node("Softmax", ["f"], ["y"], name="sm", axis=-1),
    ]
    out["chain_conv"] = model(nodes, [x], [y], [w, b, shape])

    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="tr", perm=[0, 2, 3, 1]),
        helper.make_node("ReduceMean", ["t"], ["m"], name="rm", axes=[1], keepdims=1),
        helper.make_node("Sub", ["t", "m"], ["d"], name="sub"),
        helper.make_node("Mul", ["d", "d"], ["s"], name="sq"),
        helper.make_node("Concat", ["s", "d"], ["cc"], name="cat", axis=3),
        helper.make_node("Cast", ["cc"], ["y"], name="cast", to=TensorProto.DOUBLE),
    ]
    out["chain_reduce"] = model(nodes, [x], [vi("y", TensorProto.DOUBLE, None)], opset=13)

    a = f32("a", [2, 3])
    nodes = [
        helper.make_node("Gemm", ["a", "gw", "gb"], ["g"], name="gemm", transB=1, alpha=0.5),
        helper.make_node("Clip", ["g", "lo", "hi"], ["cl"], name="clip"),
        helper.make_node("Where", ["cond", "cl", "g"], ["y"], name="where"),
    ]
    inits = [raw_tensor("gw", np.ones((4, 3), np.float32)), raw_tensor("gb", np.ones(4, np.float32)),
             raw_tensor("lo", np.array(0, np.float32)), raw_tensor("hi", np.array(6, np.float32)),
             raw_tensor("cond", np.array([True, False, True, False]))]
    out["chain_gemm"] = model(nodes, [a], [y], inits)

    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("ConstantOfShape", ["s"], ["z"], name="cos",
                              value=raw_tensor("v", np.array([2], np.float32))),
             helper.make_node("Add", ["x", "z"], ["y"], name="add")]
    out["shape_consts"] = model(nodes, [x], [y])

    # Symbolic dims and an unbound input.
    out["symbolic"] = model([helper.make_node("Neg", ["s"], ["y"], name="neg")],
                            [f32("s", ["batch", 3, "N"])], [y])
    out["no_shape"] = model([helper.make_node("Neg", ["s"], ["y"], name="neg")], [f32("s", None)], [y])

    # Model-local functions, one with an attribute reference, one calling another.
    inner = helper.make_function("local", "Inner", ["a"], ["b"],
                                 [helper.make_node("LeakyRelu", ["a"], ["b"], alpha=0.1)],
                                 [helper.make_opsetid("", OPSET)])
    ref = helper.make_node("LeakyRelu", ["a"], ["t"])
    ref.attribute.append(onnx.AttributeProto(name="alpha", ref_attr_name="slope", type=onnx.AttributeProto.FLOAT))
    outer = helper.make_function("local", "Outer", ["a"], ["c"],
                                 [ref, helper.make_node("Inner", ["t"], ["c"], domain="local")],
                                 [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)],
                                 attributes=["slope"])
    out["functions"] = model([helper.make_node("Outer", ["x"], ["y"], name="call", domain="local", slope=0.2)],
                             [x], [y], functions=[inner, outer], extra_opsets=[helper.make_opsetid("local", 1)])

    # Subgraphs: If, Loop, Scan.
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [f32("t", None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [f32("e", None)])
    out["if"] = model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
                      [x, vi("c", TensorProto.BOOL, [])], [y])
    body = helper.make_graph([helper.make_node("Add", ["v", "v"], ["v2"]),
                              helper.make_node("Identity", ["cond"], ["cond2"])], "body",
                             [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []), f32("v", None)],
                             [vi("cond2", TensorProto.BOOL, []), f32("v2", None)])
    out["loop"] = model([helper.make_node("Loop", ["n", "", "x"], ["y"], name="loop", body=body)],
                        [x], [y], [raw_tensor("n", np.array(3, np.int64))])
    sbody = helper.make_graph([helper.make_node("Add", ["s", "e"], ["s2"]),
                               helper.make_node("Identity", ["s2"], ["o"])], "sb",
                              [f32("s", [4]), f32("e", [4])], [f32("s2", [4]), f32("o", [4])])
    out["scan"] = model([helper.make_node("Scan", ["s0", "seq"], ["sf", "y"], name="scan", body=sbody,
                                          num_scan_inputs=1)],
                        [f32("s0", [4]), f32("seq", [3, 4])], [f32("sf", [4]), y])

    # External data (refused without a base folder, but the parsing runs).
    t = raw_tensor("w", np.ones(4, np.float32))
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "16")):
        t.external_data.add(key=k, value=v)
    out["external"] = model([helper.make_node("Identity", ["w"], ["y"], name="id")], [], [y], [t])

    # A custom domain and an unknown op: reported as unsupported.
    out["custom"] = model([helper.make_node("Frob", ["x"], ["y"], name="frob", domain="com.example")],
                          [x], [y], extra_opsets=[helper.make_opsetid("com.example", 1)])
    out["unknown_op"] = model([helper.make_node("NoSuchOp", ["x"], ["y"], name="n", foo=1)], [x], [y])
    return out


def node_test_models():
    base = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for sub in ("node", "simple", "pytorch-operator"):
        d = os.path.join(base, sub)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name, "model.onnx")
            if os.path.isfile(p) and os.path.getsize(p) <= MAX_SEED:
                with open(p, "rb") as f:
                    yield f.read()


def node_test_data():
    base = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    for name in sorted(os.listdir(base)):
        d = os.path.join(base, name, "test_data_set_0")
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            if f.endswith(".pb") and os.path.getsize(p) <= MAX_SEED:
                with open(p, "rb") as fh:
                    yield fh.read()


def npy_files():
    import io
    rng = np.random.default_rng(0)
    types = ["<f4", "<f2", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"]
    for k, t in enumerate(types):
        for shape in [(), (3,), (2, 3), (1, 2, 2, 2)]:
            a = (rng.standard_normal(shape) * 10).astype(np.dtype(t))
            for version in [(1, 0), (2, 0)]:
                f = io.BytesIO()
                np.lib.format.write_array(f, a, version=version)
                for want in (0, 10, 16, k):  # float32, bfloat16, a one-byte float8 code, the file's own
                    yield bytes([want]) + f.getvalue()


def write_dict(path):
    words = {"location", "offset", "length", "checksum", "value", "value_float", "value_int", "value_floats",
             "value_ints", "value_string", "value_strings", "sparse_value", "ai.onnx", "ai.onnx.ml", "../x", "/"}
    for s in onnx.defs.get_all_schemas_with_history():
        words.add(s.name)
        if s.domain:
            words.add(s.domain)
        words.update(s.attributes.keys())
    with open(path, "w") as f:
        for w in sorted(words):
            if w.isprintable() and '"' not in w and "\\" not in w:
                f.write(f'"{w}"\n')


def main():
    args = sys.argv[1:]
    dict_path, testdata = None, False
    if len(args) == 3 and args[1] == "--dict":
        dict_path = args[2]
        args = args[:1]
    npy = False
    if len(args) == 2 and args[1] in ("--testdata", "--npy"):
        testdata, npy = args[1] == "--testdata", args[1] == "--npy"
        args = args[:1]
    if len(args) != 1:
        sys.exit("usage: make_corpus.py OUT_DIR [--dict FILE | --testdata | --npy]")
    out = args[0]
    if dict_path:
        write_dict(dict_path)
    os.makedirs(out, exist_ok=True)
    if testdata:
        blobs = list(node_test_data())
    elif npy:
        blobs = list(npy_files())
    else:
        blobs = [m.SerializeToString() for m in hand_made().values()]
        blobs += list(node_test_models())
    n = 0
    for b in blobs:
        if len(b) > MAX_SEED:
            continue
        path = os.path.join(out, hashlib.sha1(b).hexdigest())
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(b)
        n += 1
    print(f"make_corpus: {n} seeds in {out}")


if __name__ == "__main__":
    main()
