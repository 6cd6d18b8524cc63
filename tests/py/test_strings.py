"""test_strings.py — string tensors (README "String tensors") against ONNX Runtime.

Each case builds a small model with onnx.helper, runs it in ONNX Runtime, writes the
inputs and ORT's outputs as ONNX test data (input_N.pb / output_N.pb, strings in
string_data) and runs `kiln check` on it: the test data reach the bundle through
the runtime's kiln_model_set_input_strings and the string outputs are compared
byte for byte (kiln_model_output_string's slots), shapes included. Cases:
  - Equal on strings: same shapes, broadcasting both ways, empty strings, UTF-8;
  - StringConcat: broadcasting, empty strings, UTF-8, a result exactly at the
    slot's limit; one byte over fails the run with a clear message;
  - strings handed on unchanged (Identity of an input, a constant output) at every -O;
  - an If computed at run time choosing between two string results;
  - StringNormalizer: LOWER / UPPER / NONE, case-sensitive and -insensitive stop
    words, [C] and [1, C], everything removed ([""]), no stop words (locale "C":
    ASCII case mapping, as kiln's; ORT's default en_US.UTF-8 is not installed here);
  - StringSplit: one- and multi-byte delimiters, consecutive delimiters, no
    delimiter (whitespace runs), maxsplit 0/1/2, empty strings, rank 2 — against
    the ONNX reference (Python's str.split), which ORT departs from (an empty
    string gives ORT no piece, whitespace is only ' ', a remainder after maxsplit
    loses its trailing spaces); one case where they agree against ORT;
  - RegexFullMatch: a set of patterns (classes, \\b, anchors in alternation,
    repetitions, alternation, UTF-8 text) on a set of texts;
  - LabelEncoder (ai.onnx.ml 2 and 4): string → int64 / float / string, int64 →
    string, keys_tensor / values_tensor / default_tensor (the reference: ORT 1.31
    has no LabelEncoder 4 for it);
  - the C backend (--target c) for a few of them;
  - strings at the slot limit pass; an input one byte over is refused naming the
    input, the element and --max-string-bytes, and passes with a larger slot;
  - a test-data file whose string_data does not match its dims is refused clearly;
  - a negative control: a wrong expected output makes kiln check fail;
  - the C API through ctypes on libkiln_runtime.so (next to the kiln binary; not
    loadable into this Python from a sanitizer build: then skipped, saying so):
    kiln_model_set_input_strings with any bytes (NUL, invalid UTF-8), an over-long
    element (refused, naming it; the input left unset), NULL arrays, the wrong
    call for the dtype both ways, kiln_model_output_string's range, a split's
    run-time shape.
No crash and no sanitizer report anywhere (the test also runs with the ASan build).

Options: --kiln PATH [--filter TEXT]. Closing line: test_strings: N passed, M failed.
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import util  # noqa: E402

ML = "ai.onnx.ml"


def S(*a):
    return np.array(a, dtype=object)


def model(nodes, inputs, outputs, opset=20, ml=None, inits=()):
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(ML, ml)] if ml else [])
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 9
    return m


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def to_proto(arr, name):
    arr = np.asarray(arr)
    if arr.dtype == object or arr.dtype.kind in "US":
        t = T(name=name, data_type=T.STRING, dims=list(arr.shape))
        t.string_data.extend(s.encode() if isinstance(s, str) else bytes(s) for s in arr.reshape(-1))
        return t
    return nh.from_array(arr, name)


def write_case(d, m, feeds, outs):
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (name, arr) in enumerate(feeds.items()):
        with open(os.path.join(d, "data", "input_%d.pb" % i), "wb") as f:
            f.write(to_proto(arr, name).SerializeToString())
    for i, (o, arr) in enumerate(zip(m.graph.output, outs)):
        with open(os.path.join(d, "data", "output_%d.pb" % i), "wb") as f:
            f.write(to_proto(arr, o.name).SerializeToString())


def ref_run(m, feeds):
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(m).run(None, feeds)


def ort_run(m, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


class Suite:
    def __init__(self, kiln, flt):
        self.kiln, self.flt = kiln, flt
        self.checks = util.Checks("test_strings")
        self.tmp = tempfile.mkdtemp(prefix="kiln-strings-")
        self.n = 0

    def kiln_check(self, d, args=()):
        return util.run_kiln(self.kiln, ["check", os.path.join(d, "model.onnx"), "--test-data",
                                         os.path.join(d, "data")] + list(args), timeout=180)

    def no_sanitizer(self, label, r):
        rep = r.sanitizer_report()
        self.checks.check(rep is None, "%s: sanitizer report %s: %s" % (label, rep, r.err[-2000:]))

    def case(self, label, m, feeds, targets=("host",), args=(), oracle="ort"):
        """ORT's outputs (oracle "ref": the ONNX reference's) are the expected ones;
        kiln check must match them."""
        if self.flt not in label:
            return
        self.n += 1
        d = os.path.join(self.tmp, "c%d" % self.n)
        try:
            outs = (ort_run if oracle == "ort" else ref_run)(m, feeds)
        except Exception as e:  # the case itself is wrong: say so, as a failure
            self.checks.check(False, "%s: the %s refused the case: %s" % (label, oracle, e))
            return
        write_case(d, m, feeds, outs)
        for tgt in targets:
            r = self.kiln_check(d, list(args) + (["--target", tgt] if tgt != "host" else []))
            self.no_sanitizer(label, r)
            self.checks.check(r.rc == 0 and "MISMATCH" not in r.out,
                              "%s [%s]: %s\n%s%s" % (label, tgt, r.describe(), r.out[-1500:], r.err[-1500:]))

    def run_case(self, label, m, feeds, outs, args):
        """The case written to a fresh folder and run by kiln check: (folder, Run), or
        (None, None) when --filter leaves it out."""
        if self.flt not in label:
            return None, None
        self.n += 1
        d = os.path.join(self.tmp, "c%d" % self.n)
        write_case(d, m, feeds, outs)
        r = self.kiln_check(d, args)
        self.no_sanitizer(label, r)
        return d, r

    def expect(self, label, m, feeds, outs, args=()):
        """kiln check must match the given outputs (where no oracle runs the case)."""
        d, r = self.run_case(label, m, feeds, outs, args)
        if r is None:
            return
        self.checks.check(r.rc == 0 and "MISMATCH" not in r.out, "%s: %s\n%s%s" % (label, r.describe(), r.out, r.err))

    def fails(self, label, m, feeds, outs, words, args=()):
        """kiln check must fail with one clear message holding every word (no crash)."""
        d, r = self.run_case(label, m, feeds, outs, args)
        if r is None:
            return None
        text = r.out + r.err
        missing = [w for w in words if w not in text]
        self.checks.check(r.rc not in (0, None) and r.rc > 0 and not missing,
                          "%s: %s, missing %s in: %s" % (label, r.describe(), missing, text[-1500:]))
        return d


def equal_cases(s):
    m = model([helper.make_node("Equal", ["a", "b"], ["y"])], [vi("a", T.STRING, [3, 4]), vi("b", T.STRING, [4])],
              [vi("y", T.BOOL, [3, 4])], opset=19)
    a = S("ab", "abc", "", "x", "é", "中文", "中", "ab", "ab", "", "x", "b").reshape(3, 4)
    b = S("ab", "", "x", "中文")
    s.case("equal broadcast [3,4] vs [4]", m, {"a": a, "b": b}, targets=("host", "c"))
    m = model([helper.make_node("Equal", ["a", "b"], ["y"])], [vi("a", T.STRING, [2, 1]), vi("b", T.STRING, [1, 3])],
              [vi("y", T.BOOL, [2, 3])], opset=19)
    s.case("equal broadcast [2,1] vs [1,3]", m, {"a": S("x", "").reshape(2, 1), "b": S("x", "", "xx").reshape(1, 3)})


def concat_cases(s):
    m = model([helper.make_node("StringConcat", ["a", "b"], ["y"])],
              [vi("a", T.STRING, [2, 3]), vi("b", T.STRING, [3])], [vi("y", T.STRING, [2, 3])])
    a = S("cat", "", "中", "a b", "é", "").reshape(2, 3)
    s.case("concat broadcast, empty, utf-8", m, {"a": a, "b": S("s", "", "文")}, targets=("host", "c"))
    m1 = model([helper.make_node("StringConcat", ["a", "b"], ["y"])], [vi("a", T.STRING, [2]), vi("b", T.STRING, [2])],
               [vi("y", T.STRING, [2])])
    s.case("concat at the slot limit (60 bytes)", m1, {"a": S("x" * 30, "y" * 59), "b": S("z" * 30, "w")})
    s.fails("concat one byte over the slot", m1, {"a": S("x" * 30, "y" * 60), "b": S("z" * 30, "w")},
            [S("", "")], ["StringConcat", "61 bytes", "over the 60", "--max-string-bytes"])
    s.case("concat over 60 with --max-string-bytes 128", m1, {"a": S("x" * 30, "y" * 60), "b": S("z" * 30, "w")},
           args=["--max-string-bytes", "128"])


def passthrough_cases(s):
    """Strings handed on unchanged: an input through Identity, a constant (folded,
    copied into the output by the plan), next to a kernel's result; every -O level."""
    w = to_proto(S("k1", "", "中"), "w")
    m = model([helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Identity", ["a"], ["y"]),
               helper.make_node("Identity", ["w"], ["k"]), helper.make_node("StringConcat", ["x", "w"], ["z"])],
              [vi("x", T.STRING, [3])], [vi("y", T.STRING, [3]), vi("k", T.STRING, [3]), vi("z", T.STRING, [3])],
              inits=[w])
    for level in ("0", "1", "2", "3"):
        s.case("identity and constant outputs -O%s" % level, m, {"x": S("p", "q", "")}, args=["-O", level])


def if_cases(s):
    """An If computed at run time selecting between two string results."""
    then_g = helper.make_graph([helper.make_node("StringConcat", ["a", "b"], ["t"])], "then", [],
                               [vi("t", T.STRING, [2])])
    else_g = helper.make_graph([helper.make_node("Identity", ["a"], ["e"])], "else", [], [vi("e", T.STRING, [2])])
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
              [vi("c", T.BOOL, []), vi("a", T.STRING, [2]), vi("b", T.STRING, [2])], [vi("y", T.STRING, [2])])
    for cond in (True, False):
        s.case("if on strings, condition %s" % cond, m, {"c": np.array(cond), "a": S("x", "中"), "b": S("y", "")})


def normalizer_cases(s):
    words = S("Monday", "tuesday", "", "WEDNESDAY", "monday", "Thé", "x y")
    for act in ("LOWER", "UPPER", "NONE"):
        for sens in (0, 1):
            for stops in ([], ["monday", "wednesday"]):
                kw = {"case_change_action": act, "is_case_sensitive": sens, "locale": "C"}  # ASCII case
                if stops:
                    kw["stopwords"] = stops
                m = model([helper.make_node("StringNormalizer", ["x"], ["y"], **kw)], [vi("x", T.STRING, [7])],
                          [vi("y", T.STRING, None)], opset=10)
                s.case("normalizer %s sensitive=%d stops=%d" % (act, sens, len(stops)), m, {"x": words})
    m = model([helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER", stopwords=["a", "b"],
                                locale="C")],
              [vi("x", T.STRING, [1, 4])], [vi("y", T.STRING, None)], opset=10)
    s.case("normalizer [1,C]", m, {"x": S("a", "c", "B", "d").reshape(1, 4)}, targets=("host", "c"))
    m = model([helper.make_node("StringNormalizer", ["x"], ["y"], stopwords=["a"], is_case_sensitive=1, locale="C")],
              [vi("x", T.STRING, [3])], [vi("y", T.STRING, None)], opset=10)
    s.case("normalizer all removed", m, {"x": S("a", "a", "a")})


def split_cases(s):
    xs = S("a,b,,c", "", ",", "one", "a,,", "x,y,z,w,v")
    for delim in (",", ",,", None):
        for maxsplit in (None, 0, 1, 2):
            kw = {}
            if delim is not None:
                kw["delimiter"] = delim
            if maxsplit is not None:
                kw["maxsplit"] = maxsplit
            m = model([helper.make_node("StringSplit", ["x"], ["y", "n"], **kw)], [vi("x", T.STRING, [6])],
                      [vi("y", T.STRING, None), vi("n", T.INT64, None)])
            data = xs if delim else S("  a b  c ", "", "   ", "one", "x\ty\nz", " lead trail  ")
            s.case("split delim=%r maxsplit=%r" % (delim, maxsplit), m, {"x": data},
                   targets=("host", "c") if maxsplit == 1 else ("host",), oracle="ref")
    m = model([helper.make_node("StringSplit", ["x"], ["y", "n"], delimiter="é")], [vi("x", T.STRING, [2, 2])],
              [vi("y", T.STRING, None), vi("n", T.INT64, None)])
    s.case("split rank 2, utf-8 delimiter", m, {"x": S("aéb", "é", "中é文é", "").reshape(2, 2)}, oracle="ref")
    # ORT agrees where the string is not empty and whitespace means spaces
    m = model([helper.make_node("StringSplit", ["x"], ["y", "n"], delimiter="-", maxsplit=1)], [vi("x", T.STRING, [3])],
              [vi("y", T.STRING, None), vi("n", T.INT64, None)])
    s.case("split against ONNX Runtime", m, {"x": S("a-b-c", "--", "abc")})


REGEXES = [r"www\.[\w.-]+\.\bcom\b", r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)", r"[a-z]+\d{2,3}",
           r"(foo|bar)+", r"^\s*$", r".*\bend\b.*", r"[^aeiou]*", r"a.c", r"\D+", r"(?:ab)?c{1,2}", r"[A-Z][a-z]*"]
TEXTS = ["www.google.com", "www.bbc.co.uk", "account@gmail.com", "account@hotmail.com", " a@yahoo.com.", "abc12",
         "abc1234", "foobarfoo", "", "   ", "the end", "ending", "xyz", "a中c", "abc", "ccc", "Hello", "abcc", "中文"]


def regex_cases(s):
    x = S(*TEXTS)
    for i, p in enumerate(REGEXES):
        m = model([helper.make_node("RegexFullMatch", ["x"], ["y"], pattern=p)], [vi("x", T.STRING, [len(TEXTS)])],
                  [vi("y", T.BOOL, [len(TEXTS)])])
        s.case("regex %d %s" % (i, p), m, {"x": x}, targets=("host", "c") if i < 2 else ("host",))
    m = model([helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="(?i)abc")], [vi("x", T.STRING, [1])],
              [vi("y", T.BOOL, [1])])
    s.fails("regex refused construct", m, {"x": S("abc")}, [np.array([True])], ["RegexFullMatch", "flags", "(?i)abc"])


def label_cases(s):
    x = S("a", "b", "zz", "", "c", "中")
    m = model([helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, keys_strings=["a", "b", "c", "中"],
                                values_int64s=[1, 2, 3, 4], default_int64=-7)],
              [vi("x", T.STRING, [6])], [vi("y", T.INT64, [6])], ml=2)
    s.case("label string→int64", m, {"x": x}, targets=("host", "c"))
    m = model([helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, keys_strings=["a", "c"],
                                values_floats=[0.5, 1.5], default_float=9.0)],
              [vi("x", T.STRING, [6])], [vi("y", T.FLOAT, [6])], ml=2)
    s.case("label string→float", m, {"x": x})
    m = model([helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, keys_strings=["a", "b"],
                                values_strings=["alpha", "βeta"])],
              [vi("x", T.STRING, [6])], [vi("y", T.STRING, [6])], ml=2)
    s.case("label string→string (default _Unused)", m, {"x": x})
    m = model([helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, keys_int64s=[1, 5, -2],
                                values_strings=["one", "five", "minus two"], default_string="?")],
              [vi("x", T.INT64, [2, 3])], [vi("y", T.STRING, [2, 3])], ml=2)
    s.case("label int64→string", m, {"x": np.array([[1, 2, 5], [-2, 0, 1]], np.int64)}, targets=("host", "c"))
    m = model([helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML,
                                keys_tensor=to_proto(S("x", "y"), "keys_tensor"),
                                values_tensor=nh.from_array(np.array([10, 20], np.int32), "values_tensor"),
                                default_tensor=nh.from_array(np.array([-1], np.int32), "default_tensor"))],
              [vi("x", T.STRING, [3])], [vi("y", T.INT32, [3])], ml=4)
    s.case("label tensors string→int32 (ml 4)", m, {"x": S("y", "q", "x")}, oracle="ref")  # not in ORT 1.31
    m = model([helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, keys_strings=["x"],
                                values_tensor=nh.from_array(np.array([7], np.int16), "values_tensor"))],
              [vi("x", T.STRING, [2])], [vi("y", T.INT16, [2])], ml=4)
    # neither ORT nor the reference runs this one: ONNX's text says an integral default is -1
    s.expect("label int16 values, default -1 (ml 4)", m, {"x": S("x", "z")}, [np.array([7, -1], np.int16)])


def limit_cases(s):
    m = model([helper.make_node("Equal", ["a", "b"], ["y"])], [vi("a", T.STRING, [2]), vi("b", T.STRING, [2])],
              [vi("y", T.BOOL, [2])], opset=19)
    at = "é" * 30  # 60 bytes: the default slot's limit
    s.case("strings at the slot limit", m, {"a": S(at, at[:-1] + "e"), "b": S(at, at)})
    over = {"a": S("ok", "x" * 61), "b": S("ok", "y")}
    s.fails("input one byte over the slot", m, over, [np.array([True, False])],
            ["input 'a'", "element 1 is 61 bytes", "over the 60", "--max-string-bytes"])
    s.case("input over 60 bytes with --max-string-bytes 72", m, over, args=["--max-string-bytes", "72"])
    s.fails("--max-string-bytes below its minimum", m, {"a": S("a", "b"), "b": S("a", "b")}, [np.array([True, True])],
            ["--max-string-bytes"], args=["--max-string-bytes", "4"])
    # a test-data file whose string_data does not match its dims
    if s.flt in "malformed string_data in a test-data file":
        s.n += 1
        d = os.path.join(s.tmp, "c%d" % s.n)
        write_case(d, m, {"a": S("a", "b"), "b": S("a", "b")}, [np.array([True, True])])
        bad = T(name="a", data_type=T.STRING, dims=[3])
        bad.string_data.extend([b"a", b"b"])
        with open(os.path.join(d, "data", "input_0.pb"), "wb") as f:
            f.write(bad.SerializeToString())
        r = s.kiln_check(d)
        s.no_sanitizer("malformed string_data", r)
        s.checks.check(r.rc == 1 and "holds 2 strings, its dims need 3" in r.err,
                       "malformed string_data: %s: %s" % (r.describe(), r.err[-800:]))
    # negative control: a wrong expectation must fail
    s.fails("negative control: wrong expected string", model(
        [helper.make_node("StringConcat", ["a", "b"], ["y"])], [vi("a", T.STRING, [1]), vi("b", T.STRING, [1])],
        [vi("y", T.STRING, [1])]), {"a": S("ab"), "b": S("c")}, [S("abd")], ["MISMATCH", "'abc'", "'abd'"])


class Info(__import__("ctypes").Structure):
    import ctypes as C
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int32), ("dims", C.c_int64 * 8),
                ("elements", C.c_int64), ("bytes", C.c_int64)]


KILN_DTYPE_STRING = 23  # runtime/kiln.h: after KILN_DTYPE_INT2
KILN_OK, KILN_ERR_INVALID_ARGUMENT, KILN_ERR_DTYPE, KILN_ERR_RUN = 0, 5, 7, 11


def c_api_cases(s):
    import ctypes as C
    if s.flt not in "c api":
        return
    lib_path = os.path.join(os.path.dirname(s.kiln), "libkiln_runtime.so")
    try:
        with open(lib_path, "rb") as f:
            if b"__asan_init" in f.read():  # dlopen into an uninstrumented Python would abort
                s.checks.skip("c api: %s is a sanitizer build, which this Python cannot load" % lib_path)
                return
    except OSError:
        pass
    try:
        lib = C.CDLL(lib_path)
    except OSError as e:
        s.checks.skip("c api: cannot load %s into this Python (%s)" % (lib_path, str(e)[:120]))
        return
    d = os.path.join(s.tmp, "capi")
    os.makedirs(d, exist_ok=True)
    m = model([helper.make_node("StringConcat", ["a", "b"], ["c"]),
               helper.make_node("StringSplit", ["c"], ["parts", "n"], delimiter="\0")],
              [vi("a", T.STRING, [3]), vi("b", T.STRING, [3])],
              [vi("c", T.STRING, [3]), vi("parts", T.STRING, None), vi("n", T.INT64, None)])
    onnx.save(m, os.path.join(d, "m.onnx"))
    r = util.run_kiln(s.kiln, ["compile", os.path.join(d, "m.onnx"), "-o", os.path.join(d, "m.kiln")], timeout=180)
    if not s.checks.check(r.rc == 0, "c api: compile: %s %s" % (r.describe(), r.err)):
        return
    P = C.c_void_p
    lib.kiln_model_open.argtypes = [C.c_char_p, P, C.POINTER(P), C.c_char_p, C.c_size_t]
    lib.kiln_model_set_input_strings.argtypes = [P, C.c_char_p, C.c_int32, C.POINTER(C.c_int64),
                                                 C.POINTER(C.c_char_p), C.POINTER(C.c_size_t)]
    lib.kiln_model_set_input.argtypes = [P, C.c_char_p, C.c_int, C.c_int32, C.POINTER(C.c_int64), P, C.c_size_t]
    lib.kiln_model_output_string.argtypes = [P, C.c_int32, C.c_int64, C.POINTER(C.c_void_p), C.POINTER(C.c_size_t)]
    lib.kiln_model_output.argtypes = [P, C.c_int32, C.POINTER(P), C.POINTER(Info)]
    lib.kiln_model_input_info.argtypes = [P, C.c_int32, C.POINTER(Info)]
    lib.kiln_model_string_bytes.argtypes = [P, C.c_int32, C.c_int32]
    lib.kiln_model_string_bytes.restype = C.c_int64
    lib.kiln_model_run.argtypes = [P]
    lib.kiln_model_last_error.argtypes = [P]
    lib.kiln_model_last_error.restype = C.c_char_p
    lib.kiln_model_close.argtypes = [P]
    h, err = P(), C.create_string_buffer(512)
    st = lib.kiln_model_open(os.path.join(d, "m.kiln").encode(), None, C.byref(h), err, 512)
    if not s.checks.check(st == KILN_OK, "c api: open: %d %s" % (st, err.value)):
        return
    last = lambda: lib.kiln_model_last_error(h).decode()  # noqa: E731
    info = Info()
    lib.kiln_model_input_info(h, 0, C.byref(info))
    s.checks.check(info.dtype == KILN_DTYPE_STRING and info.rank == 1 and info.dims[0] == 3 and
                   lib.kiln_model_string_bytes(h, 0, 0) == 64 and lib.kiln_model_string_bytes(h, 1, 2) == 0,
                   "c api: input info: dtype %d rank %d slot %d" % (info.dtype, info.rank,
                                                                    lib.kiln_model_string_bytes(h, 0, 0)))
    dims = (C.c_int64 * 1)(3)

    def set_strings(name, items):
        arr = (C.c_char_p * len(items))(*items)
        lens = (C.c_size_t * len(items))(*[len(x) for x in items])
        return lib.kiln_model_set_input_strings(h, name, 1, dims, arr, lens)

    a, b = [b"x\0y", b"\xff\xfe", b""], [b"\0z", b"", b"\xc3\xa9"]
    s.checks.check(set_strings(b"a", a) == KILN_OK and set_strings(b"b", b) == KILN_OK, "c api: set: " + last())
    s.checks.check(lib.kiln_model_run(h) == KILN_OK, "c api: run: " + last())

    def out_str(i, e):
        p, n = C.c_void_p(), C.c_size_t()
        st = lib.kiln_model_output_string(h, i, e, C.byref(p), C.byref(n))
        return st, (C.string_at(p.value, n.value) if st == KILN_OK and n.value else b"")

    got = [out_str(0, e)[1] for e in range(3)]
    s.checks.check(got == [x + y for x, y in zip(a, b)], "c api: concat of any bytes: %r" % got)
    data = P()
    st = lib.kiln_model_output(h, 1, C.byref(data), C.byref(info))
    want = [x.split(b"\0") for x in got]
    most = max(len(w) for w in want)
    s.checks.check(st == KILN_OK and info.rank == 2 and list(info.dims[:2]) == [3, most],
                   "c api: split shape %s, expected [3, %d]" % (list(info.dims[:info.rank]), most))
    parts = [[out_str(1, r * most + k)[1] for k in range(most)] for r in range(3)]
    s.checks.check(parts == [w + [b""] * (most - len(w)) for w in want], "c api: split parts %r" % parts)
    st, _ = out_str(0, 3)
    s.checks.check(st == KILN_ERR_INVALID_ARGUMENT and "out of range" in last(), "c api: element 3: %d %s" % (st, last()))
    st, _ = out_str(2, 0)
    s.checks.check(st == KILN_ERR_DTYPE and "int64" in last(), "c api: output_string of int64: %d %s" % (st, last()))
    st = set_strings(b"a", [b"ok", b"q" * 61, b""])
    s.checks.check(st == KILN_ERR_INVALID_ARGUMENT and "element 1 is 61 bytes" in last() and
                   "--max-string-bytes" in last(), "c api: over-long: %d %s" % (st, last()))
    st = lib.kiln_model_run(h)
    s.checks.check(st == KILN_ERR_RUN and "'a' has not been set" in last(), "c api: run after refusal: %s" % last())
    st = lib.kiln_model_set_input_strings(h, b"a", 1, dims, None, None)
    s.checks.check(st == KILN_ERR_INVALID_ARGUMENT and "NULL" in last(), "c api: NULL arrays: %s" % last())
    st = lib.kiln_model_set_input(h, b"a", KILN_DTYPE_STRING, 1, dims, None, 0)
    s.checks.check(st == KILN_ERR_DTYPE and "kiln_model_set_input_strings" in last(), "c api: set_input: " + last())
    lib.kiln_model_close(h)


def main():
    a = util.parse_args(__doc__.splitlines()[0])
    s = Suite(os.path.abspath(a.kiln), a.filter)
    for fn in (equal_cases, concat_cases, passthrough_cases, if_cases, normalizer_cases, split_cases, regex_cases, label_cases, limit_cases,
               c_api_cases):
        fn(s)
    s.checks.finish()
    sys.exit(1 if s.checks.failed else 0)


if __name__ == "__main__":
    main()
