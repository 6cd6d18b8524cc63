"""gen_rnn.py — small ONNX LSTM / GRU / RNN test models with seeded random weights.

Usage: .venv/bin/python models/gen_rnn.py OUT_DIR [--no-ref]

Writes OUT_DIR/<case>/model.onnx for every case below; unless --no-ref is given (or
onnxruntime is missing), also OUT_DIR/<case>/test_data_set_0/input_N.pb and
output_N.pb: seeded random graph inputs and onnxruntime's outputs for them, the
layout `kiln inspect --test-data` reads. The cases cover each op at opsets 7, 14
and 22, bidirectional and reverse directions, sequence_lens (constant, a graph input, or computed at
run time), layout=1, peepholes, input_forget, clip, linear_before_reset, non-default
activations with alpha/beta, and a sequence longer than one concat can join (64).
Models are generated at test time, never committed.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def make_case(name, op, opset, seq, batch, inp, hidden, *, direction="forward", layout=0, bias=True,
              init_h=False, init_c=False, peep=False, lens=None, lens_input=False, outputs=("Y", "Y_h"),
              dtype=np.float32, seed=0, **attrs):
    """One model holding a single `op` node. Weights are initializers; X (and
    sequence_lens when lens_input) are graph inputs. Returns (model, feeds)."""
    rng = np.random.default_rng(seed)
    d = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def rand(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)

    # Values are drawn in layout-0 shapes, then transposed for layout 1, so that one
    # seed gives the same problem in both layouts (onnxruntime runs only layout 0).
    def batch_major(v):
        return np.ascontiguousarray(v.transpose(1, 0, 2)) if layout else v

    x_shape = [batch, seq, inp] if layout else [seq, batch, inp]
    s_shape = [batch, d, hidden] if layout else [d, batch, hidden]
    inits, inputs, names = [], [helper.make_tensor_value_info("X", elem, x_shape)], ["X", "W", "R"]
    feeds = {"X": batch_major(rand(seq, batch, inp, scale=1.0))}
    inits += [numpy_helper.from_array(rand(d, g * hidden, inp), "W"),
              numpy_helper.from_array(rand(d, g * hidden, hidden), "R")]

    def optional(present, tensor_name, value):
        if present:
            inits.append(numpy_helper.from_array(value, tensor_name))
            names.append(tensor_name)
        else:
            names.append("")

    optional(bias, "B", rand(d, 2 * g * hidden))
    nodes = []
    if lens is not None and lens_input:
        inputs.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [batch]))
        feeds["sequence_lens"] = np.array(lens, dtype=np.int32)
        if lens_input == "computed":  # a value produced by a node: not a constant even with test data bound
            nodes.append(helper.make_node("Abs", ["sequence_lens"], ["lens_abs"]))
            names.append("lens_abs")
        else:
            names.append("sequence_lens")
    else:
        optional(lens is not None, "sequence_lens", np.array(lens if lens is not None else [], dtype=np.int32))
    optional(init_h, "initial_h", batch_major(rand(d, batch, hidden)))
    if op == "LSTM":
        optional(init_c, "initial_c", batch_major(rand(d, batch, hidden)))
        optional(peep, "P", rand(d, 3 * hidden))
    while names and names[-1] == "":
        names.pop()

    all_outputs = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    out_names = [o if o in outputs else "" for o in all_outputs]
    while out_names[-1] == "":
        out_names.pop()
    node_attrs = dict(hidden_size=hidden, **attrs)
    if direction != "forward":
        node_attrs["direction"] = direction
    if layout:
        node_attrs["layout"] = layout
    node = helper.make_node(op, names, out_names, name=name, **node_attrs)
    y_shapes = {"Y": [batch, seq, d, hidden] if layout else [seq, d, batch, hidden], "Y_h": s_shape, "Y_c": s_shape}
    outs = [helper.make_tensor_value_info(o, elem, y_shapes[o]) for o in out_names if o]
    graph = helper.make_graph(nodes + [node], name, inputs, outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gen_rnn.py")
    model.ir_version = 8 if opset <= 17 else 10
    onnx.checker.check_model(model)
    return model, feeds


CASES = [
    # name, op, opset, seq, batch, input, hidden, options
    ("lstm_bidirectional_full", "LSTM", 22, 5, 3, 4, 6,
     dict(direction="bidirectional", init_h=True, init_c=True, peep=True, outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_seqlens_const", "LSTM", 14, 6, 3, 2, 4,
     dict(lens=[6, 2, 4], init_h=True, outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_reverse_batchwise_seqlens_input", "LSTM", 14, 5, 3, 3, 4,
     dict(direction="reverse", layout=1, lens=[5, 1, 3], lens_input=True, peep=True, init_c=True,
          input_forget=1, clip=2.5, outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_activations_bidirectional", "LSTM", 7, 4, 2, 3, 5,
     dict(direction="bidirectional", activations=["HardSigmoid", "LeakyRelu", "ScaledTanh",
                                                  "Sigmoid", "Softsign", "Elu"],
          activation_alpha=[0.3, 0.05, 1.5, 0.8], activation_beta=[0.4, 0.7], outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_long_sequence", "LSTM", 22, 70, 2, 3, 4, dict(outputs=("Y",))),
    ("gru_bidirectional_lbr_seqlens", "GRU", 22, 5, 3, 4, 6,
     dict(direction="bidirectional", linear_before_reset=1, init_h=True, lens=[3, 5, 1])),
    ("gru_bidirectional_seqlens_computed", "GRU", 14, 4, 3, 3, 5,
     dict(direction="bidirectional", lens=[4, 1, 2], lens_input="computed", init_h=True)),
    ("lstm_bidirectional_seqlens_computed", "LSTM", 22, 4, 3, 3, 5,
     dict(direction="bidirectional", lens=[2, 4, 3], lens_input="computed", peep=True, init_c=True,
          outputs=("Y", "Y_h", "Y_c"))),
    ("gru_reverse_batchwise_acts", "GRU", 14, 4, 2, 3, 5,
     dict(direction="reverse", layout=1, init_h=True, clip=1.5,
          activations=["HardSigmoid", "Softsign"], activation_alpha=[0.25], activation_beta=[0.45])),
    ("gru_no_bias_opset7", "GRU", 7, 3, 2, 3, 4, dict(bias=False, outputs=("Y_h",))),
    ("rnn_bidirectional_batchwise_seqlens_input", "RNN", 22, 5, 3, 2, 4,
     dict(direction="bidirectional", layout=1, lens=[2, 5, 4], lens_input=True, init_h=True,
          activations=["Relu", "Affine"], activation_alpha=[0.7], activation_beta=[0.1])),
    ("rnn_activations_opset7", "RNN", 7, 4, 2, 3, 3,
     dict(activations=["ThresholdedRelu"], activation_alpha=[0.2])),
    ("rnn_softplus_reverse", "RNN", 14, 3, 2, 2, 3, dict(direction="reverse", activations=["Softplus"])),
    ("rnn_double", "RNN", 22, 3, 2, 2, 3, dict(dtype=np.float64, init_h=True)),
    ("gru_float16", "GRU", 22, 3, 2, 3, 4, dict(dtype=np.float16, init_h=True, linear_before_reset=1)),
    ("lstm_unit_dims_batchwise", "LSTM", 14, 3, 1, 1, 1,
     dict(direction="bidirectional", layout=1, init_h=True,
          activations=["Sigmoid", "Tanh", "Relu", "Sigmoid", "Relu", "Tanh"],
          outputs=("Y", "Y_h", "Y_c"))),
]


def write_tensor(path, name, value):
    t = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def reference(ort, name, op, opset, seq, batch, inp, hidden, seed, opts):
    """onnxruntime's outputs. Its CPU kernels run only layout 0 and float32, so the
    case runs as its layout-0 float32 twin (same seed, same draws; the values are
    cast from float32, so the twin's are exactly the case's for float32 and nearest
    for other types), whose outputs are transposed and cast back."""
    layout = opts.get("layout", 0)
    dtype = opts.get("dtype", np.float32)
    twin = dict(opts, layout=0, dtype=np.float32)
    model, feeds = make_case(name, op, opset, seq, batch, inp, hidden, seed=seed, **twin)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = sess.run(None, feeds)
    if layout:
        results = [r.transpose(2, 0, 1, 3) if r.ndim == 4 else r.transpose(1, 0, 2) for r in results]
    return [np.ascontiguousarray(r).astype(dtype) for r in results]


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit("usage: gen_rnn.py OUT_DIR [--no-ref]")
    out_dir = args[0]
    ref = "--no-ref" not in argv
    if ref:
        try:
            import onnxruntime as ort
        except ImportError:
            ref = False
    for i, (name, op, opset, seq, batch, inp, hidden, opts) in enumerate(CASES):
        model, feeds = make_case(name, op, opset, seq, batch, inp, hidden, seed=1000 + i, **opts)
        case_dir = os.path.join(out_dir, name)
        os.makedirs(case_dir, exist_ok=True)
        onnx.save(model, os.path.join(case_dir, "model.onnx"))
        if not ref:
            continue
        results = reference(ort, name, op, opset, seq, batch, inp, hidden, 1000 + i, opts)
        data_dir = os.path.join(case_dir, "test_data_set_0")
        os.makedirs(data_dir, exist_ok=True)
        for j, vi in enumerate(model.graph.input):
            write_tensor(os.path.join(data_dir, f"input_{j}.pb"), vi.name, feeds[vi.name])
        for j, (vi, value) in enumerate(zip(model.graph.output, results)):
            write_tensor(os.path.join(data_dir, f"output_{j}.pb"), vi.name, value)
    print(f"wrote {len(CASES)} models to {out_dir}")


if __name__ == "__main__":
    main(sys.argv)
