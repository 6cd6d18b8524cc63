"""test_contrib_attn.py — ONNX Runtime's attention ops that kiln converts
(importer/ops_contrib_attn.c; SimplifiedLayerNormalization in onnx_ops_nn.def),
each a one-node model compiled and run by kiln and compared with ONNX Runtime's own
CPU kernel on the same model and inputs (the reference for these ops): rtol 1e-4,
atol 1e-4 on float32 inputs normal(0, 1) (the attention outputs are averages of
values of that size; atol 1e-4 leaves room for the reordered sums of the softmax
and of the two matmuls).
  com.microsoft Attention: batch 1 and 3, 1/2/4 heads, with and without bias, no
    mask, a 2-D 0/1 mask, 1-D key lengths ([B] and [2B] with starts), a 3-D mask,
    unidirectional (alone and with a mask), a scale, qkv_hidden_sizes with a wider V,
    attention_bias, mask_filter_value
  com.microsoft MultiHeadAttention: self and cross attention (S != L), bias, the
    key_padding_mask forms, unidirectional (with more keys than queries too, where
    ORT's mask leaves the last query row unmasked), a scale, 4-D (per-head) key and value,
    present_key/value outputs
  com.microsoft RotaryEmbedding: 3-D with and without num_heads, 4-D [B, N, S, H],
    interleaved, a partial rotary_embedding_dim, [B, S] and [1] position_ids, the
    scale attribute (which ORT's kernel ignores)
  com.microsoft GroupQueryAttention: a prompt (no past, or an empty past), a decode
    step and a chunk with a past, 1..4 query heads per KV head, packed QKV, do_rotary
    (both layouts), local_window_size, softcap, a scale, the present outputs
  SimplifiedLayerNormalization (the ONNX domain, as ONNX Runtime registers it) and
    LayerNormalization at opsets 1 and 13 (ONNX Runtime's contrib registration)
Refused features (past state, packed QKV, a padded GroupQueryAttention batch, a
seqlens_k that is not a constant, a 4-D mask) fail with one line naming them.

Options: --kiln PATH. Closing line: test_contrib_attn: N passed, M failed.
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

RTOL, ATOL = 1e-4, 1e-4
ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
              np.dtype(np.int64): TensorProto.INT64}


class Case:
    """One node: inputs [(name, array, const)] (name "" for an absent optional; const:
    an initializer rather than a graph input), outputs (names, "" for absent ones)."""

    def __init__(self, op, inputs, attrs=None, outputs=("Y",), domain="com.microsoft", opset=17, note="", ref=None):
        self.op, self.inputs, self.attrs, self.outputs = op, inputs, attrs or {}, outputs
        self.domain, self.opset, self.note = domain, opset, note
        self.ref = ref  # the case ONNX Runtime runs instead, when its kernel cannot run this one

    def label(self):
        shapes = ["%s%s" % (n, list(a.shape)) for n, a, _ in self.inputs if n]
        return "%s %s %s %s" % (self.op, self.note, self.attrs, " ".join(shapes))

    def save(self, path):
        vis, inits = [], []
        for name, a, const in self.inputs:
            if not name:
                continue
            if const:
                inits.append(numpy_helper.from_array(a, name))
            else:
                vis.append(helper.make_tensor_value_info(name, ONNX_TYPES[a.dtype], list(a.shape)))
        node = helper.make_node(self.op, [n for n, _, _ in self.inputs], list(self.outputs), domain=self.domain,
                                name=self.op + "_0", **self.attrs)
        ys = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in self.outputs if o]
        g = helper.make_graph([node], "g", vis, ys, inits)
        ops = [helper.make_opsetid("", self.opset)]
        if self.domain:
            ops.append(helper.make_opsetid(self.domain, 1))
        m = helper.make_model(g, opset_imports=ops)
        m.ir_version = 8
        onnx.save(m, path)

    def feeds(self):
        return {n: a for n, a, const in self.inputs if n and not const}


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def i32(*vals):
    return np.array(vals, dtype=np.int32)


def absent():
    return ("", None, False)


def attention_cases(rng):
    for b, s, din, nh, bias in [(1, 5, 8, 2, True), (3, 7, 16, 4, True), (2, 4, 12, 1, True), (2, 16, 32, 4, True)]:
        hid = din  # Q, K and V hidden sizes equal to the input's
        base = [("input", f32(rng, b, s, din), False), ("weights", f32(rng, din, 3 * hid) * 0.3, True)]
        base.append(("bias", f32(rng, 3 * hid), True) if bias else absent())
        yield Case("Attention", base, {"num_heads": nh}, note="no mask")
        if bias:  # ORT's CPU kernel crashes without a bias: its reference is the zero bias
            nob = Case("Attention", base[:2] + [absent()], {"num_heads": nh}, note="no bias",
                       ref=Case("Attention", base[:2] + [("bias", np.zeros(3 * hid, np.float32), True)],
                                {"num_heads": nh}))
            yield nob
        yield Case("Attention", base, {"num_heads": nh, "unidirectional": 1}, note="causal")
        raw = (rng.random((b, s)) > 0.3).astype(np.int32)
        raw[:, 0] = 1
        yield Case("Attention", base + [("mask_index", raw, False)], {"num_heads": nh}, note="2-D mask")
        yield Case("Attention", base + [("mask_index", raw, False)], {"num_heads": nh, "unidirectional": 1},
                   note="2-D mask, causal")
        lens = rng.integers(1, s + 1, b).astype(np.int32)
        yield Case("Attention", base + [("mask_index", lens, False)], {"num_heads": nh}, note="key lengths")
        starts = rng.integers(0, 2, b).astype(np.int32)
        yield Case("Attention", base + [("mask_index", np.concatenate([np.maximum(lens, 2), starts]), False)],
                   {"num_heads": nh}, note="key ends and starts")
    b, s, din, nh = 2, 6, 8, 2
    x = f32(rng, b, s, din)
    w = f32(rng, din, 24) * 0.3
    bias = f32(rng, 24)
    m3 = (rng.random((b, s, s)) > 0.3).astype(np.int32)
    m3[:, :, 0] = 1
    base = [("input", x, False), ("weights", w, True), ("bias", bias, True)]
    yield Case("Attention", base + [("mask_index", m3, False)], {"num_heads": nh}, note="3-D mask")
    yield Case("Attention", base, {"num_heads": nh, "scale": 0.3}, note="scale")
    yield Case("Attention", base + [("mask_index", np.array([3, 6], np.int32), False)],
               {"num_heads": nh, "mask_filter_value": -5.0}, note="mask_filter_value")
    yield Case("Attention", [("input", x, False), ("weights", f32(rng, din, 8 + 8 + 16) * 0.3, True),
                             ("bias", f32(rng, 32), True)],
               {"num_heads": 4, "qkv_hidden_sizes": [8, 8, 16]}, note="qkv_hidden_sizes, V wider")
    yield Case("Attention", base + [absent(), absent(), ("attention_bias", f32(rng, 1, nh, s, s), False)],
               {"num_heads": nh}, note="attention_bias")


def mha_cases(rng):
    for b, s, l, d, dv, nh in [(1, 5, 5, 8, 8, 2), (3, 4, 9, 16, 16, 4), (2, 7, 3, 12, 6, 3), (2, 16, 16, 64, 64, 1)]:
        q, k, v = f32(rng, b, s, d), f32(rng, b, l, d), f32(rng, b, l, dv)
        base = [("query", q, False), ("key", k, False), ("value", v, False)]
        bias = ("bias", f32(rng, 2 * d + dv), True)
        yield Case("MultiHeadAttention", base, {"num_heads": nh}, note="plain")
        yield Case("MultiHeadAttention", base + [bias], {"num_heads": nh, "scale": 0.2}, note="bias, scale")
        raw = (rng.random((b, l)) > 0.3).astype(np.int32)
        raw[:, 0] = 1
        yield Case("MultiHeadAttention", base + [bias, ("key_padding_mask", raw, False)], {"num_heads": nh},
                   note="2-D key_padding_mask")
        lens = rng.integers(1, l + 1, b).astype(np.int32)
        yield Case("MultiHeadAttention", base + [absent(), ("key_padding_mask", lens, False)], {"num_heads": nh},
                   note="key lengths")
        yield Case("MultiHeadAttention", base + [bias], {"num_heads": nh, "unidirectional": 1}, note="causal")
    b, s, l, nh, h = 2, 3, 5, 2, 4
    q = f32(rng, b, s, nh * h)
    k4, v4 = f32(rng, b, nh, l, h), f32(rng, b, nh, l, h)
    yield Case("MultiHeadAttention", [("query", q, False), ("key", k4, False), ("value", v4, False)],
               {"num_heads": nh}, note="4-D key and value")
    q, k, v = f32(rng, b, s, nh * h), f32(rng, b, s, nh * h), f32(rng, b, s, nh * h)
    m3 = (rng.random((b, s, s)) > 0.3).astype(np.int32)
    m3[:, :, 0] = 1
    yield Case("MultiHeadAttention", [("query", q, False), ("key", k, False), ("value", v, False), absent(),
                                      ("key_padding_mask", m3, False)], {"num_heads": nh}, note="3-D mask")
    yield Case("MultiHeadAttention", [("query", q, False), ("key", k, False), ("value", v, False), absent(), absent(),
                                      ("attention_bias", f32(rng, b, 1, s, s), False)], {"num_heads": nh},
               note="attention_bias")
    yield Case("MultiHeadAttention", [("query", q, False), ("key", k, False), ("value", v, False)],
               {"num_heads": nh}, outputs=("Y", "present_key", "present_value"), note="present outputs")


def rotary_cases(rng):
    def caches(maxpos, half):
        t = np.arange(maxpos)[:, None] * (1.0 / 10000 ** (np.arange(half) / half))[None, :]
        return [("cos_cache", np.cos(t).astype(np.float32), True), ("sin_cache", np.sin(t).astype(np.float32), True)]

    for b, s, nh, h in [(1, 4, 2, 8), (3, 6, 4, 16), (2, 5, 1, 32)]:
        pos = rng.integers(0, 20, (b, s)).astype(np.int64)
        for il in (0, 1):
            x3 = [("input", f32(rng, b, s, nh * h), False), ("position_ids", pos, False)]
            yield Case("RotaryEmbedding", x3 + caches(24, h // 2), {"num_heads": nh, "interleaved": il}, note="3-D")
            yield Case("RotaryEmbedding", x3 + caches(24, h // 2), {"interleaved": il}, note="3-D, heads from cache")
            x4 = [("input", f32(rng, b, nh, s, h), False), ("position_ids", pos, False)]
            yield Case("RotaryEmbedding", x4 + caches(24, h // 2), {"interleaved": il}, note="4-D BNSH")
            yield Case("RotaryEmbedding", x3 + caches(24, h // 4),
                       {"num_heads": nh, "interleaved": il, "rotary_embedding_dim": h // 2}, note="partial rotary")
        yield Case("RotaryEmbedding", [("input", f32(rng, b, s, nh * h), False),
                                       ("position_ids", np.array([3], np.int64), False)] + caches(24, h // 2),
                   {"num_heads": nh}, note="position offset [1]")
    yield Case("RotaryEmbedding", [("input", f32(rng, 2, 3, 16), False), ("position_ids", np.array([[0, 1, 2], [4, 5, 6]]),
                                   False)] + caches(8, 4), {"num_heads": 2, "scale": 2.0}, note="scale (ignored by ORT)")


def gqa_cases(rng):
    def caches(maxpos, half):
        t = np.arange(maxpos)[:, None] * (1.0 / 10000 ** (np.arange(half) / half))[None, :]
        return [("cos_cache", np.cos(t).astype(np.float32), True), ("sin_cache", np.sin(t).astype(np.float32), True)]

    def case(b, s, past, nh, nkv, h, attrs=None, packed=False, rot=None, empty_past=False, note=""):
        total = past + s
        ins = []
        if packed:
            ins += [("query", f32(rng, b, s, (nh + 2 * nkv) * h), False), absent(), absent()]
        else:
            ins += [("query", f32(rng, b, s, nh * h), False), ("key", f32(rng, b, s, nkv * h), False),
                    ("value", f32(rng, b, s, nkv * h), False)]
        if past or empty_past:
            ins += [("past_key", f32(rng, b, nkv, past, h), False), ("past_value", f32(rng, b, nkv, past, h), False)]
        else:
            ins += [absent(), absent()]
        ins += [("seqlens_k", np.full(b, total - 1, np.int32), True),
                ("total_sequence_length", np.array(total, np.int32), True)]
        a = {"num_heads": nh, "kv_num_heads": nkv}
        if rot is not None:
            ins += caches(total + 3, rot // 2)
            a.update(do_rotary=1)
        a.update(attrs or {})
        return Case("GroupQueryAttention", ins, a, outputs=("Y", "present_key", "present_value"), note=note)

    yield case(1, 5, 0, 2, 2, 8, note="prompt, MHA")
    yield case(2, 6, 0, 4, 2, 8, note="prompt")
    yield case(3, 4, 0, 4, 1, 16, note="prompt, MQA")
    yield case(2, 6, 0, 4, 2, 8, empty_past=True, note="prompt, empty past")
    yield case(2, 1, 7, 4, 2, 8, note="decode step")
    yield case(1, 3, 5, 6, 2, 8, note="chunk after a past")  # ORT: batch 1 for a chunk after a past
    yield case(2, 5, 0, 4, 2, 8, packed=True, note="packed QKV")
    # ORT's rotary wants head sizes of multiples of 16, cache widths of multiples of 8
    yield case(2, 5, 0, 4, 2, 16, rot=16, note="do_rotary")
    yield case(2, 1, 6, 4, 2, 16, rot=16, note="do_rotary, decode step")
    yield case(1, 3, 4, 4, 2, 32, rot=16, attrs={"rotary_interleaved": 1}, note="do_rotary interleaved, partial")
    yield case(2, 9, 0, 2, 1, 8, attrs={"local_window_size": 3}, note="local window")
    yield case(1, 3, 6, 2, 1, 8, attrs={"local_window_size": 4}, note="local window after a past")
    yield case(2, 5, 0, 4, 2, 8, attrs={"softcap": 2.0}, note="softcap")
    yield case(1, 5, 2, 4, 2, 8, attrs={"scale": 0.5}, note="scale")


def norm_cases(rng):
    for shape, axis in [((2, 3, 16), -1), ((4, 64), -1), ((2, 3, 4, 8), 2)]:
        norm = shape[axis:] if axis >= 0 else shape[axis:]
        x = f32(rng, *shape)
        g = ("scale", f32(rng, *norm), True)
        yield Case("SimplifiedLayerNormalization", [("X", x, False), g], {"axis": axis, "epsilon": 1e-5}, domain="",
                   opset=17, note="onnx domain")
        for opset in (1, 13):
            yield Case("LayerNormalization", [("X", x, False), g, ("B", f32(rng, *norm), True)],
                       {"axis": axis, "epsilon": 1e-5}, domain="", opset=opset, note="opset %d" % opset)


def refusals(rng):
    """(case, words the one-line error must contain)."""
    b, s, d = 2, 4, 8
    x, w = f32(rng, b, s, d), f32(rng, d, 3 * d)
    yield (Case("Attention", [("input", x, False), ("weights", w, True), absent(), absent(),
                              ("past", f32(rng, 2, b, 2, 1, 4), False)], {"num_heads": 2}), ["past"])
    yield (Case("Attention", [("input", x, False), ("weights", w, True), absent(),
                              ("mask_index", np.ones((b, 1, s, s), np.int32), False)], {"num_heads": 2}), ["4-D mask"])
    yield (Case("MultiHeadAttention", [("query", f32(rng, b, s, 2, 3, 4), False)], {"num_heads": 2}),
           ["packed QKV"])
    q = f32(rng, b, s, d)
    yield (Case("MultiHeadAttention", [("query", q, False), ("key", q, False), ("value", q, False), absent(), absent(),
                                       absent(), ("past_key", f32(rng, b, 2, 3, 4), False),
                                       ("past_value", f32(rng, b, 2, 3, 4), False)], {"num_heads": 2}), ["past_key"])
    gqa = [("query", q, False), ("key", q, False), ("value", q, False), absent(), absent()]
    yield (Case("GroupQueryAttention", gqa + [("seqlens_k", i32(3, 1), True),
                                              ("total_sequence_length", np.array(s, np.int32), True)],
                {"num_heads": 2, "kv_num_heads": 2}), ["padded batch"])
    yield (Case("GroupQueryAttention", gqa + [("seqlens_k", i32(3, 3), False),
                                              ("total_sequence_length", np.array(s, np.int32), True)],
                {"num_heads": 2, "kv_num_heads": 2}), ["seqlens_k", "constant"])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--filter", default="", help="only cases whose label contains this text")
    args = ap.parse_args()
    checks = util.Checks("test_contrib_attn")
    rng = np.random.default_rng(31)
    cases = [c for gen in (attention_cases, mha_cases, rotary_cases, gqa_cases, norm_cases) for c in gen(rng)]
    with tempfile.TemporaryDirectory(prefix="kiln_contrib_attn_") as d:
        for i, case in enumerate(cases):
            label = case.label()
            if args.filter not in label:
                continue
            path = os.path.join(d, "m%d.onnx" % i)
            case.save(path)
            feeds = case.feeds()
            try:
                ref, ref_path = case.ref or case, path + ".ref.onnx" if case.ref else path
                if case.ref:
                    ref.save(ref_path)
                wants = test_e2e.reference(ref_path, ref.feeds())[0]
            except Exception as e:  # the reference must run: a failure here is the test's fault
                checks.check(False, "%s: onnxruntime: %s" % (label, str(e).splitlines()[0]))
                continue
            ys = util.compile_and_run(args.kiln, checks, label, path, feeds, d, "m%d" % i)
            if ys is None:
                continue
            for o in (o for o in case.outputs if o):
                ok, why, _, _ = test_e2e.compare(ys[o], wants[o], RTOL, ATOL)
                checks.check(ok, "%s, output %s: %s" % (label, o, why))
        for i, (case, words) in enumerate(refusals(rng)):
            label = case.label()
            if args.filter not in label:
                continue
            path = os.path.join(d, "bad%d.onnx" % i)
            case.save(path)
            r = util.run_kiln(args.kiln, ["compile", path, "-o", os.path.join(d, "bad%d.kiln" % i)])
            checks.check(r.rc == 1 and all(w in r.err for w in words) and not util.clean_failure(r),
                         "%s is refused with one line naming %s: %s %r" % (label, words, r.describe(), r.err))
    checks.finish()


if __name__ == "__main__":
    main()
