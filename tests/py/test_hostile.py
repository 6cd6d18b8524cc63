#!/usr/bin/env python3
"""test_hostile.py — hostile and broken model files against `kiln inspect`.

Usage: test_hostile.py --kiln PATH_TO_KILN [-k SUBSTRING] [-v]

Each case writes one bad model (with onnx.helper, or byte by byte where the file
must not be valid protobuf) into a temporary folder and runs `kiln inspect` on
it. The contract (the hostile-input issue): exit status 1, exactly one non-empty
line on stderr that says what is wrong and where (each case asserts the words it
must contain), and no sanitizer output — the test also runs with the ASan build.
A few positive controls (a valid model, external data in a sub-folder) must
import with exit status 0. Every committed regression input of the fuzzer
(tests/data/hostile/*) is replayed too: any exit status but 0 or 1, a crash or a
sanitizer report fails.

Prints one line per case and ends with `hostile: N passed, M failed`.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer", "ERROR: UndefinedBehaviorSanitizer")
TIMEOUT = 30

# --------------------------------------------------------------------------- builders


def vi(name, shape, dt=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def make_model(nodes, inputs, outputs, inits=(), opset=17, functions=(), extra_opsets=(), ir_version=8):
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] + list(extra_opsets),
                          functions=list(functions))
    m.ir_version = ir_version
    return m


def tiny_model():
    """y = relu(x) + w: the base most cases break one thing in."""
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    return make_model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                       helper.make_node("Add", ["r", "w"], ["y"], name="add")],
                      [vi("x", [2, 3])], [vi("y", [2, 3])], [w])


def init_model(t, out_shape=None):
    """A model whose output is the initializer t (through Identity)."""
    return make_model([helper.make_node("Identity", [t.name], ["y"], name="id")], [], [vi("y", out_shape)], [t])


def raw_init(name, dims, data_type=TensorProto.FLOAT, raw=b""):
    t = TensorProto(name=name, data_type=data_type)
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def typed_init(name, dims, data_type, fieldname, values):
    t = TensorProto(name=name, data_type=data_type)
    t.dims.extend(dims)
    getattr(t, fieldname).extend(values)
    return t


def ext_init(name, location, dims=(4,), offset=None, length=None, extra=()):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT)
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    if offset is not None:
        t.external_data.add(key="offset", value=str(offset))
    if length is not None:
        t.external_data.add(key="length", value=str(length))
    for k, v in extra:
        t.external_data.add(key=k, value=v)
    return t


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire_type, payload):
    """One protobuf field: key, then payload (length-prefixed for wire type 2)."""
    key = varint(num << 3 | wire_type)
    if wire_type == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def nested_if(depth):
    """If inside If ... depth levels (each then-branch holds the next If). Built
    byte by byte: the python protobuf runtime refuses to nest this deep itself."""
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "leaf", [], [vi("e", [2, 3])])
    leaf_bytes = leaf.SerializeToString()
    out_vi = vi("o", [2, 3]).SerializeToString()

    def attr_graph(name, gbytes):  # AttributeProto { name(1), g(6), type(20) = GRAPH }
        return field(1, 2, name.encode()) + field(6, 2, gbytes) + field(20, 0, varint(onnx.AttributeProto.GRAPH))

    def if_node(name, out, then_bytes):  # NodeProto { input(1), output(2), name(3), op_type(4), attribute(5) }
        return (field(1, 2, b"c") + field(2, 2, out.encode()) + field(3, 2, name.encode()) + field(4, 2, b"If") +
                field(5, 2, attr_graph("then_branch", then_bytes)) + field(5, 2, attr_graph("else_branch", leaf_bytes)))

    # GraphProto { node(1), name(2), output(12) }
    inner = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "b0", [], [vi("o", [2, 3])])
    inner = inner.SerializeToString()
    for i in range(1, depth):
        inner = field(1, 2, if_node(f"if{i}", "o", inner)) + field(2, 2, f"b{i}".encode()) + field(12, 2, out_vi)
    m = make_model([], [vi("x", [2, 3]), vi("c", [], TensorProto.BOOL)], [vi("y", [2, 3])])
    graph = m.graph.SerializeToString() + field(1, 2, if_node("top", "y", inner))
    m.ClearField("graph")
    return m.SerializeToString() + field(7, 2, graph)


def deep_raw_nesting(levels):
    """levels nested protobuf messages in ~4 bytes each, built inside out:
    ModelProto.graph(7) → GraphProto.input(11) → ValueInfoProto.type(2) →
    TypeProto.sequence_type(4) → Sequence.elem_type(1) → TypeProto.sequence_type → ..."""
    body = b""
    for i in range(levels):
        body = field(1 if i % 2 == 0 else 4, 2, body)  # Sequence.elem_type / TypeProto.sequence_type
    if levels % 2:
        body = field(4, 2, body)                         # end on a TypeProto
    body = field(2, 2, body)                             # ValueInfoProto.type
    graph = field(11, 2, field(1, 2, b"x") + body)       # GraphProto.input { name: "x", type: ... }
    opset = field(8, 2, field(2, 0, varint(17)))          # opset_import { version: 17 }
    return field(1, 0, varint(8)) + opset + field(7, 2, graph)


# --------------------------------------------------------------------------- the cases


class Case:
    def __init__(self, name, build, expect, args=(), status=1):
        self.name, self.build, self.expect, self.args, self.status = name, build, expect, args, status


def save(d, name, m):
    p = os.path.join(d, name)
    data = m if isinstance(m, (bytes, bytearray)) else m.SerializeToString()
    with open(p, "wb") as f:
        f.write(data)
    return p


def cases():
    out = []

    def add(name, expect, status=1, args=()):
        """Decorator: the function builds the file in a folder and returns its path."""
        def wrap(fn):
            out.append(Case(name, fn, expect if isinstance(expect, (list, tuple)) else [expect], args, status))
            return fn
        return wrap

    # --- files that are not ONNX, or not whole ---
    full = tiny_model().SerializeToString()
    gbytes = tiny_model().graph.SerializeToString()
    gstart = full.find(gbytes)
    assert gstart > 0
    for frac in (0.1, 0.33, 0.5, 0.75, 0.99):
        cut = gstart + max(1, int(len(gbytes) * frac))
        add(f"truncated at byte {cut} of {len(full)}", ["malformed ONNX file", "past the end", "'graph'", "at byte"])(
            lambda d, cut=cut: save(d, "m.onnx", full[:cut]))
    add("truncated inside a field key", ["malformed ONNX file", "truncated"])(
        lambda d: save(d, "m.onnx", full[:gstart - 1] + b"\x80"))
    add("wrong wire type: ir_version as bytes", ["malformed ONNX file", "wrong wire type"])(
        lambda d: save(d, "m.onnx", field(1, 2, b"\x08") + full))
    add("wrong wire type: graph as varint", ["malformed ONNX file", "wrong wire type", "graph"])(
        lambda d: save(d, "m.onnx", full + field(7, 0, varint(5))))
    add("wrong wire type: producer_name as fixed32", ["malformed ONNX file", "wrong wire type"])(
        lambda d: save(d, "m.onnx", field(2, 5, b"abcd") + full))
    add("wrong wire type: dims as fixed64 in a tensor", ["malformed ONNX file", "wrong wire type", "initializer"])(
        lambda d: save(d, "m.onnx", full + field(7, 2, field(5, 2, field(1, 1, b"\0" * 8)))))
    add("group wire type", ["malformed ONNX file", "group"])(lambda d: save(d, "m.onnx", full + b"\x0b\x0c"))
    for seed in (1, 2, 3):
        rnd = random.Random(seed)
        junk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(16, 4096)))
        add(f"random garbage (seed {seed}, {len(junk)} bytes)", "malformed ONNX file")(
            lambda d, junk=junk: save(d, "m.onnx", junk))
    add("empty file", "empty")(lambda d: save(d, "m.onnx", b""))
    add("text file", "malformed ONNX file")(lambda d: save(d, "m.onnx", b"this is not a model\n"))

    # --- tensor dims, types and payloads ---
    add("initializer dims overflow int64", ["'w'", "overflow"])(
        lambda d: save(d, "m.onnx", init_model(raw_init("w", [1 << 32, 1 << 32, 4]))))
    add("initializer dims product fits int64, bytes do not", ["'w'", "too large"])(
        lambda d: save(d, "m.onnx", init_model(raw_init("w", [1 << 31, 1 << 31], TensorProto.DOUBLE))))
    add("graph input dims overflow int64", ["'x'", "overflow"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"])],
                                               [vi("x", [1 << 40, 1 << 40])], [vi("y", None)])))
    add("initializer negative dim", ["'w'", "negative dimension -3"])(
        lambda d: save(d, "m.onnx", init_model(raw_init("w", [2, -3]))))
    # -1 means "dynamic" (test_input_dims.py); below that is refused
    add("graph input negative dim", ["'x'", "negative dimension -5"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"])],
                                               [vi("x", [2, -5])], [vi("y", None)])))
    add("initializer rank 64", ["'w'", "rank 64", "limit of 8"])(
        lambda d: save(d, "m.onnx", init_model(raw_init("w", [1] * 64, raw=b"\0" * 4))))
    add("graph input rank 64", ["'x'", "rank 64", "limit of 8"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"])],
                                               [vi("x", [1] * 64)], [vi("y", None)])))
    add("raw_data length mismatch", ["'w'", "raw_data holds 20 bytes", "need 24"])(
        lambda d: save(d, "m.onnx", init_model(raw_init("w", [2, 3], raw=b"\0" * 20))))
    add("typed-field count mismatch", ["'w'", "holds 5 values", "need 6"])(
        lambda d: save(d, "m.onnx", init_model(typed_init("w", [2, 3], TensorProto.FLOAT, "float_data", [1.0] * 5))))
    add("typed-field count mismatch (int64_data)", ["'w'", "holds 7 values", "need 6"])(
        lambda d: save(d, "m.onnx", init_model(typed_init("w", [2, 3], TensorProto.INT64, "int64_data", [1] * 7))))
    add("typed-field count mismatch (int32_data for int8)", ["'w'", "holds 0 values", "need 1"])(
        lambda d: save(d, "m.onnx", init_model(typed_init("w", [1], TensorProto.INT8, "int32_data", []))))
    add("unknown data_type code", ["'w'", "unknown element type code 99"])(
        lambda d: save(d, "m.onnx", init_model(raw_init("w", [1], 99, b"\0" * 4))))
    add("graph input of unknown element type", ["'x'", "unknown element type code 1000"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"])],
                                               [vi("x", [2], 1000)], [vi("y", None)])))
    # string tensors (README "String tensors"): string_data only, its count the dims', each string within a slot
    def str_init(dims, strings, raw=None):
        t = TensorProto(name="w", data_type=TensorProto.STRING, dims=dims, string_data=strings)
        if raw is not None:
            t.raw_data = raw
        return t
    add("string initializer count mismatch", ["'w'", "holds 1 strings", "need 2"])(
        lambda d: save(d, "m.onnx", init_model(str_init([2], [b"a"]))))
    add("string initializer longer than a slot", ["'w'", "element 1 is 100 bytes", "--max-string-bytes"])(
        lambda d: save(d, "m.onnx", init_model(str_init([2], [b"a", b"x" * 100]))))
    add("string initializer with raw_data", ["'w'", "string_data"])(
        lambda d: save(d, "m.onnx", init_model(str_init([1], [], raw=b"abcd"))))
    add("string initializer into a numeric op", ["Relu", "string tensor"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["w"], ["y"], name="r")], [], [vi("y", None)],
                                               [str_init([1], [b"a"])])))
    add("Constant node with a bad tensor", ["Constant", "'k'", "raw_data holds 3 bytes"])(
        lambda d: save(d, "m.onnx", make_model(
            [helper.make_node("Constant", [], ["y"], name="k", value=raw_init("v", [2], raw=b"abc"))],
            [], [vi("y", None)])))
    add("initializer without a name", "initializer 0 has no name")(
        lambda d: save(d, "m.onnx", init_model(raw_init("", [1], raw=b"\0" * 4))))

    # --- external data ---
    def ext_case(name, expect, location, setup, **kw):
        def build(d):
            setup(d)
            return save(d, "m.onnx", init_model(ext_init("w", location, **kw)))
        add(name, ["'w'"] + expect)(build)

    def data_file(d, rel="w.bin", size=16):
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"\0" * size)
        return p

    def outside(d):
        """A data file outside the model folder: the folder is d/model, the file d/x."""
        with open(os.path.join(os.path.dirname(d), "x"), "wb") as f:
            f.write(b"\0" * 16)

    ext_case("external data ../x", ["leaves the model's folder"], "../x", outside)
    ext_case("external data sub/../../x", ["leaves the model's folder"], "sub/../../x",
             lambda d: (outside(d), os.makedirs(os.path.join(d, "sub"))))
    ext_case("external data absolute path", ["absolute"], "/etc/passwd", lambda d: None)
    ext_case("external data through a symlinked file", ["symbolic link"], "w.bin",
             lambda d: (outside(d), os.symlink(os.path.join(os.path.dirname(d), "x"), os.path.join(d, "w.bin"))))
    ext_case("external data through a symlinked directory", ["symbolic link"], "sub/w.bin",
             lambda d: (data_file(os.path.dirname(d), "real/w.bin"),
                        os.symlink(os.path.join(os.path.dirname(d), "real"), os.path.join(d, "sub"))))
    ext_case("external data hard link", ["hard link"], "w.bin",
             lambda d: (outside(d), os.link(os.path.join(os.path.dirname(d), "x"), os.path.join(d, "w.bin"))))
    ext_case("external data offset+length past the end", ["past the end"], "w.bin",
             lambda d: data_file(d), offset=8, length=16)
    ext_case("external data offset far past the end", ["past the end"], "w.bin",
             lambda d: data_file(d), offset=1 << 62, length=16)
    ext_case("external data length != dims x element size", ["length 12", "4 elements x 4 bytes"], "w.bin",
             lambda d: data_file(d), length=12)
    ext_case("external data non-numeric offset", ["offset"], "w.bin", lambda d: data_file(d), offset="12abc")
    ext_case("external data negative offset", ["offset"], "w.bin", lambda d: data_file(d), offset=-4)
    ext_case("external data offset overflows int64", ["offset"], "w.bin", lambda d: data_file(d),
             offset="99999999999999999999")
    ext_case("external data missing file", ["cannot open external data", "No such file"], "nope.bin",
             lambda d: None)
    ext_case("external data is a directory", ["not a regular file"], "sub",
             lambda d: os.makedirs(os.path.join(d, "sub")))
    ext_case("external data is a FIFO", ["not a regular file"], "fifo", lambda d: os.mkfifo(os.path.join(d, "fifo")))
    ext_case("external data path through a file", ["not a directory"], "w.bin/x", lambda d: data_file(d))
    ext_case("external data empty location", ["location"], "", lambda d: None)
    ext_case("external data empty path component", ["empty"], "sub//w.bin",
             lambda d: data_file(d, "sub/w.bin"))

    # --- structure: nesting, names, outputs ---
    add("If nested 40 deep", ["subgraphs nested deeper than", "32", "graph.node.attribute.g"])(
        lambda d: save(d, "m.onnx", nested_if(40)))
    add("If nested 33 deep (one past the limit)", ["subgraphs nested deeper than", "32"])(
        lambda d: save(d, "m.onnx", nested_if(33)))
    add("100000 nested messages", ["malformed ONNX file", "nested too deeply"])(
        lambda d: save(d, "m.onnx", deep_raw_nesting(100000)))
    add("node input never defined", ["node 'relu'", "Relu", "'ghost'", "not defined"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["ghost"], ["y"], name="relu")],
                                               [vi("x", [2])], [vi("y", None)])))
    add("graph output never produced", ["graph output 'nowhere'", "never produced"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                               [vi("x", [2])], [vi("nowhere", None)])))
    add("graph without outputs", "no outputs")(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [])))
    add("unsupported op", ["NoSuchOp", "node 'frob7'", "opset 17", "unsupported"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("NoSuchOp", ["x"], ["y"], name="frob7")],
                                               [vi("x", [2])], [vi("y", None)])))
    add("unsupported op at opset 11", ["NoSuchOp", "node 'n'", "opset 11"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("NoSuchOp", ["x"], ["y"], name="n")],
                                               [vi("x", [2])], [vi("y", None)], opset=11)))
    add("unknown domain", ["com.evil", "Frob", "node 'f'", "domain"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Frob", ["x"], ["y"], name="f", domain="com.evil")],
                                               [vi("x", [2])], [vi("y", None)],
                                               extra_opsets=[helper.make_opsetid("com.evil", 1)])))
    add("opset newer than 27", ["opset 28", "newer"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])],
                                               [vi("y", None)], opset=28)))
    add("opset 0", ["opset", "0"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])],
                                               [vi("y", None)], opset=0)))

    def no_opset(d):
        m = tiny_model()
        del m.opset_import[:]
        return save(d, "m.onnx", m)
    add("missing opset import", ["node 'relu'", "Relu", "ai.onnx", "does not import"])(no_opset)

    def no_graph(d):
        m = tiny_model()
        m.ClearField("graph")
        return save(d, "m.onnx", m)
    add("model without graph", "no graph")(no_graph)
    add("recursive function", ["function 'Loop1'", "recursive"])(lambda d: save(d, "m.onnx", recursive_function()))
    add("function call tree of 2^30 calls", ["function calls expand to too many nodes"])(
        lambda d: save(d, "m.onnx", exploding_functions(30)))
    add("function importing opset 99", ["function 'Leaky'", "opset 99"])(
        lambda d: save(d, "m.onnx", function_model(99)))
    add("function called with too many inputs", ["Leaky 'call'", "function 'Leaky'", "2 inputs"])(
        lambda d: save(d, "m.onnx", function_model(17, ["x", "x"])))
    add("node with 10000 inputs", ["node 'wide'", "too many inputs"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Sum", ["x"] * 10000, ["y"], name="wide")],
                                               [vi("x", [2])], [vi("y", None)])))
    add("newline in a node name", ["node 'a?b'", "not defined"])(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["ghost"], ["y"], name="a\nb")],
                                               [vi("x", [2])], [vi("y", None)])))
    add("sparse initializer", "sparse")(lambda d: save(d, "m.onnx", sparse_model()))

    # --- the file itself and the command line ---
    add("a directory instead of a file", "not a regular file")(
        lambda d: (os.makedirs(os.path.join(d, "dir.onnx")), os.path.join(d, "dir.onnx"))[1])
    add("nonexistent file", ["cannot open", "No such file"])(lambda d: os.path.join(d, "missing.onnx"))

    def huge(d):  # sparse: takes no disk space
        p = os.path.join(d, "huge.onnx")
        with open(p, "wb") as f:
            f.write(full)
            f.truncate((2 << 30) + 1)
        return p
    add("file of 2 GiB + 1 byte", ["2147483649 bytes", "2 GiB limit"])(huge)
    add("a FIFO instead of a file", "not a regular file")(
        lambda d: (os.mkfifo(os.path.join(d, "p.onnx")), os.path.join(d, "p.onnx"))[1])
    for spec, words in (("x", ["'x'", "NAME:DIMS"]), ("x:", ["no dims"]), ("x:2xax3", ["bad dimension"]),
                        ("x:-2x3", ["bad dimension"]), ("x:2;3", ["bad separator"]),
                        ("x:" + "x".join(["1"] * 9), ["more than 8"]),
                        ("x:99999999999999999999", ["bad dimension"])):
        add(f"--input-shape {spec[:24]}", ["--input-shape"] + words, status=2, args=("--input-shape", spec))(
            lambda d: save(d, "m.onnx", tiny_model()))
    add("--input-shape element count overflows", ["'x'", "overflow"],
        args=("--input-shape", "x:4294967296x4294967296x4"))(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["n", "m", 4])],
                                               [vi("y", None)])))
    add("--input-shape for no input", ["--input-shape", "'nope'", "not an input"], args=("--input-shape", "nope:2x3"))(
        lambda d: save(d, "m.onnx", tiny_model()))
    add("--input-shape of the wrong rank", ["--input-shape", "'x'", "rank 3", "rank 2"],
        args=("--input-shape", "x:2x3x4"))(
        lambda d: save(d, "m.onnx", tiny_model()))

    # --- valid but absurdly large: the import works, the reports must not overflow ---
    add("MatMul whose FLOP count overflows int64", [], status=0)(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                                               [vi("x", [1 << 30, 1 << 30]), vi("w", [1 << 30, 1 << 30])],
                                               [vi("y", None)])))
    add("two MatMuls whose FLOP sum overflows int64", [], status=0)(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("MatMul", ["x", "w"], ["t"], name="mm1"),
                                                helper.make_node("MatMul", ["t", "w"], ["y"], name="mm2")],
                                               [vi("x", [1 << 21, 1 << 20]), vi("w", [1 << 20, 1 << 20])],
                                               [vi("y", None)])))
    add("Conv whose FLOP count overflows int64", [], status=0)(
        lambda d: save(d, "m.onnx", make_model([helper.make_node("Conv", ["x", "w"], ["y"], name="cv")],
                                               [vi("x", [1, 1 << 20, 1 << 12, 1 << 12]),
                                                vi("w", [1 << 20, 1 << 20, 1, 1])], [vi("y", None)])))

    # --- data the importer would build itself from a few declared numbers: over budget ---
    add("TfIdfVectorizer placing one n-gram in column 2^30", ["TfIdfVectorizer 'tf'", "budget"])(
        lambda d: save(d, "m.onnx", make_model(
            [helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tf", mode="TF", min_gram_length=1,
                              max_gram_length=1, max_skip_count=0, ngram_counts=[0], ngram_indexes=[1 << 30],
                              pool_int64s=[7])],
            [vi("x", [1, 3], TensorProto.INT64)], [vi("y", None)], opset=9)))
    # each 2048-point DFT matrix (34 MB) is within the per-op limit; nine are not within the budget
    add("nine DFTs of 2048 points", ["DFT 'dft", "budget"])(
        lambda d: save(d, "m.onnx", make_model(
            [helper.make_node("DFT", ["x", "n"], ["y%d" % i], name="dft%d" % i) for i in range(9)],
            [vi("x", [1, 1 << 11, 1])], [vi("y%d" % i, None) for i in range(9)],
            [numpy_helper.from_array(np.array(1 << 11, np.int64), "n")], opset=17)))

    # --- positive controls: exit 0, nothing on stderr ---
    add("valid tiny model", [], status=0)(lambda d: save(d, "m.onnx", tiny_model()))

    def ext_ok(d):
        data_file(d, "weights/w.bin", 32)
        with open(os.path.join(d, "weights/w.bin"), "r+b") as f:
            f.seek(8)
            f.write(np.arange(4, dtype=np.float32).tobytes())
        return save(d, "m.onnx", init_model(ext_init("w", "weights/w.bin", offset=8, length=16), [4]))
    add("valid external data in a sub-folder", [], status=0)(ext_ok)
    add("valid external data, offset and length omitted", [], status=0)(
        lambda d: (data_file(d, "w.bin", 16), save(d, "m.onnx", init_model(ext_init("w", "w.bin"), [4])))[1])
    add("If nested 32 deep (at the limit) passes the pre-scan and imports", [], status=0)(
        lambda d: save(d, "m.onnx", nested_if(32)))
    add("valid function with an attribute reference", [], status=0)(lambda d: save(d, "m.onnx", function_model()))
    return out


def recursive_function():
    body = [helper.make_node("Loop1", ["a"], ["b"], domain="local")]
    fn = helper.make_function("local", "Loop1", ["a"], ["b"], body, [helper.make_opsetid("", 17),
                                                                     helper.make_opsetid("local", 1)])
    return make_model([helper.make_node("Loop1", ["x"], ["y"], name="call", domain="local")],
                      [vi("x", [2])], [vi("y", None)], functions=[fn], extra_opsets=[helper.make_opsetid("local", 1)])


def exploding_functions(levels):
    """F0 = Identity; Fk calls F(k-1) twice: 2^levels calls from a file of a few KB."""
    fns = [helper.make_function("local", "F0", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])],
                                [helper.make_opsetid("", 17)])]
    for k in range(1, levels + 1):
        body = [helper.make_node(f"F{k - 1}", ["a"], ["t"], domain="local"),
                helper.make_node(f"F{k - 1}", ["t"], ["b"], domain="local")]
        fns.append(helper.make_function("local", f"F{k}", ["a"], ["b"], body,
                                        [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]))
    return make_model([helper.make_node(f"F{levels}", ["x"], ["y"], name="call", domain="local")],
                      [vi("x", [2])], [vi("y", None)], functions=fns, extra_opsets=[helper.make_opsetid("local", 1)])


def function_model(fn_opset=17, call_inputs=("x",)):
    ref = helper.make_node("LeakyRelu", ["a"], ["b"])
    ref.attribute.append(onnx.AttributeProto(name="alpha", ref_attr_name="slope", type=onnx.AttributeProto.FLOAT))
    fn = helper.make_function("local", "Leaky", ["a"], ["b"], [ref], [helper.make_opsetid("", fn_opset)],
                              attributes=["slope"])
    return make_model([helper.make_node("Leaky", list(call_inputs), ["y"], name="call", domain="local", slope=0.3)],
                      [vi("x", [2])], [vi("y", [2])], functions=[fn], extra_opsets=[helper.make_opsetid("local", 1)])


def sparse_model():
    m = tiny_model()
    sp = m.graph.sparse_initializer.add()
    sp.values.CopyFrom(helper.make_tensor("s", TensorProto.FLOAT, [1], [1.0]))
    sp.indices.CopyFrom(helper.make_tensor("i", TensorProto.INT64, [1], [0]))
    sp.dims.extend([4])
    return m


# --------------------------------------------------------------------------- running


def run_kiln(kiln, path, args):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    try:
        r = subprocess.run([kiln, "inspect", path, *args], capture_output=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {TIMEOUT}s"
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def check(case, status, stderr):
    """'' when the run honours the contract, else why not."""
    if status is None:
        return stderr
    for mark in SANITIZER_MARKS:
        if mark in stderr:
            return f"sanitizer report: {stderr.strip().splitlines()[0]}"
    if status != case.status:
        return f"exit status {status}, expected {case.status}; stderr: {stderr.strip()[:300]!r}"
    lines = stderr.splitlines()
    if case.status == 0:
        return f"stderr not empty: {stderr[:300]!r}" if stderr.strip() else ""
    if len(lines) != 1 or not lines[0].strip():
        return f"expected exactly one non-empty line on stderr, got {len(lines)}: {stderr[:400]!r}"
    missing = [w for w in case.expect if w not in lines[0]]
    if missing:
        return f"message lacks {missing}: {lines[0]!r}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("-k", default="", help="run only cases whose name contains this")
    ap.add_argument("-v", action="store_true", help="print each message")
    a = ap.parse_args()
    kiln = os.path.abspath(a.kiln)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="kiln-hostile-") as tmp:
        for i, case in enumerate(cases()):
            if a.k not in case.name:
                continue
            d = os.path.join(tmp, f"c{i}", "model")  # parent c{i} holds files "outside" the model folder
            os.makedirs(d)
            try:
                path = case.build(d)
                status, _, err = run_kiln(kiln, path, case.args)
                why = check(case, status, err)
            except Exception as e:  # a broken case must not hide the others
                why, err = f"test error: {type(e).__name__}: {e}", ""
            if why:
                failed += 1
                print(f"FAIL {case.name}: {why}")
            else:
                passed += 1
                print(f"ok   {case.name}" + (f"  [{err.strip()}]" if a.v and err.strip() else ""))

        # committed fuzzer finds: no crash, no sanitizer report, 0 or 1 with one line
        hostile = os.path.join(ROOT, "tests", "data", "hostile")
        for name in sorted(os.listdir(hostile)) if os.path.isdir(hostile) and not a.k else []:
            p = os.path.join(hostile, name)
            if not os.path.isfile(p):
                continue
            status, _, err = run_kiln(kiln, p, ())
            case = Case(f"regression {name}", None, [], status=status if status in (0, 1) else 1)
            why = check(case, status, err)
            if why:
                failed += 1
                print(f"FAIL regression {name}: {why}")
            else:
                passed += 1
                print(f"ok   regression {name}" + (f"  [{err.strip()}]" if a.v and err.strip() else ""))
    print(f"hostile: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
