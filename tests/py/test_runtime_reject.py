#!/usr/bin/env python3
"""test_runtime_reject.py — hostile and broken bundles against the runtime's loader.

Usage: test_runtime_reject.py --kiln PATH_TO_KILN [--driver PATH] [-k SUBSTRING] [-v]

The driver is tests/runtime/kiln_rt_open_check.c, built next to the kiln binary
(--driver overrides): it opens one bundle and prints `OK` or `STATUS: message`.
Each case builds one bundle with Python's tarfile module — starting from a
valid one (a two-kernel model whose .so is compiled here with `cc -shared
-fPIC`) and breaking one thing — and opens it twice, from the file and from
memory (--memory). The contract: exit status 1, the expected status, a message
holding the expected words, and no crash and no sanitizer report (the test also
runs with the ASan build). Positive controls (the valid bundle, with several
thread counts) must open, run and give the right numbers.

Prints one line per case and ends with `test_runtime_reject: N passed, M failed`.
"""
import argparse
import copy
import gzip
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer", "ERROR: UndefinedBehaviorSanitizer")
TIMEOUT = 60

KERNELS = r"""
#include <stdint.h>
#include <stdlib.h>
#include "kiln_abi.h"
typedef struct { const float *x, *w; float *t; } add_c;
static void add_task(void *c, int64_t b, int64_t e) {
  add_c *a = c;
  for (int64_t i = b; i < e; i++) a->t[i] = a->x[i] + a->w[i];
}
int32_t k_add(void *const *buf, const kiln_ctx *ctx) {
  add_c c = {buf[0], buf[1], buf[2]};
  return ctx->parallel_for(ctx, add_task, &c, 8);
}
int32_t k_relu(void *const *buf, const kiln_ctx *ctx) {
  const float *t = buf[0];
  float *y = buf[1];
  (void)ctx;
  for (int i = 0; i < 8; i++) y[i] = t[i] > 0 ? t[i] : 0;
  return 0;
}
int kiln_data_symbol = 3;
void kiln_test_release(void *p) { free(p); } /* makes libc a dependency dlsym searches */
"""

X = [(i % 7) * 0.5 - 1.0 for i in range(8)]           # what the driver feeds
W = [0.25 * i - 1.0 for i in range(8)]                # params.bin
EXPECTED_Y = [max(x + w, 0.0) for x, w in zip(X, W)]  # exact in binary floating point

# --------------------------------------------------------------------------- bundles


def crc(data):
    return "%08x" % (zlib.crc32(data) & 0xFFFFFFFF)


def base_manifest():
    return {
        "format": "kiln-bundle", "format_version": 1, "model": "tiny", "compiler_version": "test",
        "target": {"name": "host", "triple": "x86_64-pc-linux-gnu"},
        "inputs": [{"name": "x", "dtype": "float32", "shape": [8]}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": [8]}],
        "arena_bytes": 64, "weights_bytes": 64, "workspace_bytes": 0,
    }


def base_plan():
    return {"kernels": [
        {"name": "add", "symbol": "k_add", "flops": 8,
         "args": [{"kind": "input", "index": 0}, {"kind": "param", "offset": 0, "bytes": 32},
                  {"kind": "arena", "offset": 0, "bytes": 32}]},
        {"name": "relu", "symbol": "k_relu", "flops": 8,
         "args": [{"kind": "arena", "offset": 0, "bytes": 32}, {"kind": "output", "index": 0}]},
    ]}


def base_params():
    import struct
    return struct.pack("<8f", *W) + b"\0" * 32


class Bundle:
    """The pieces of one bundle; files() turns them into (name, bytes) with a
    manifest whose entries table matches (unless told otherwise)."""

    def __init__(self, lib):
        self.manifest = base_manifest()
        self.plan = base_plan()
        self.params = base_params()
        self.lib = lib
        self.lib_name = "lib/host.so"
        self.plan_text = None      # raw plan.json bytes instead of self.plan
        self.manifest_text = None  # raw manifest.json bytes instead of the computed one
        self.entry_edit = None     # fn(entries dict) run after the checksums are computed

    def files(self):
        plan = self.plan_text if self.plan_text is not None else json.dumps(self.plan).encode()
        entries = {"plan.json": {"bytes": len(plan), "crc32": crc(plan)},
                   "params.bin": {"bytes": len(self.params), "crc32": crc(self.params)},
                   self.lib_name: {"bytes": len(self.lib), "crc32": crc(self.lib)}}
        if self.entry_edit:
            self.entry_edit(entries)
        m = dict(self.manifest)
        m["entries"] = entries
        manifest = self.manifest_text if self.manifest_text is not None else json.dumps(m, indent=1).encode()
        return [("manifest.json", manifest), ("plan.json", plan), ("params.bin", self.params), (self.lib_name, self.lib)]


def regular(name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = 0o644
    return ti, data


def special(name, kind, linkname=""):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.linkname = linkname
    ti.mode = 0o644
    return ti, None


def tar_bytes(members, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for ti, data in members:
            tf.addfile(ti, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def members_of(bundle, drop=(), replace=None, extra=()):
    """The bundle's files as tar members, minus `drop`, with `replace` {name: member}."""
    out = []
    for name, data in bundle.files():
        if name in drop:
            continue
        out.append(replace[name] if replace and name in replace else regular(name, data))
    return out + list(extra)


# LLVM's x86 feature names (what the compiler records) and /proc/cpuinfo's flags for them.
CPUINFO_FLAG = {"sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "avx": "avx", "avx2": "avx2",
                "fma": "fma", "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2", "lzcnt": "abm", "movbe": "movbe",
                "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512vl": "avx512vl", "avx512vnni": "avx512_vnni",
                "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16", "avxvnni": "avx_vnni",
                "avx512vbmi2": "avx512_vbmi2", "gfni": "gfni", "vaes": "vaes"}


def cpu_feature_missing_here():
    """An x86 feature of the runtime's table this CPU lacks (per /proc/cpuinfo), or None."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return None
    return next((name for name, flag in CPUINFO_FLAG.items() if flag not in flags), None) if flags else None


def save(d, data, name="model.kiln"):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def set_header_size(tar, member_name, size):
    """Rewrites the size field of member_name's ustar header (and its checksum)."""
    tar = bytearray(tar)
    for off in range(0, len(tar) - 511, 512):
        block = tar[off:off + 512]
        if block[:len(member_name) + 1] == member_name.encode() + b"\0" and block[257:262] == b"ustar":
            block[124:136] = b"%011o\0" % size
            block[148:156] = b" " * 8
            block[148:156] = b"%06o\0 " % sum(block)
            tar[off:off + 512] = block
            return bytes(tar)
    raise AssertionError(f"no header for {member_name}")


# --------------------------------------------------------------------------- the cases


class Case:
    def __init__(self, name, build, status, words, args=(), memory=True, run=False):
        self.name, self.build, self.status, self.words = name, build, status, words
        self.args, self.memory, self.run = list(args), memory, run


def cases(lib):
    out = []

    def add(name, status, words=(), args=(), memory=True, run=False):
        def wrap(fn):
            out.append(Case(name, fn, status, [words] if isinstance(words, str) else list(words), args, memory, run))
            return fn
        return wrap

    def bundle():
        return Bundle(lib)

    def tarred(b, **kw):
        return tar_bytes(members_of(b, **kw))

    def with_manifest(edit):
        b = bundle()
        edit(b.manifest)
        return tarred(b)

    def with_plan(edit):
        b = bundle()
        edit(b.plan)
        return tarred(b)

    # --- positive controls ---
    for threads in ("0", "1", "2", "3"):
        add(f"valid bundle runs ({threads} threads)", "OK", args=["--threads", threads], run=True)(
            lambda d: save(d, tarred(bundle())))
    add("valid bundle in GNU tar format", "OK", run=True)(
        lambda d: save(d, tar_bytes(members_of(bundle()), tarfile.GNU_FORMAT)))
    add("valid bundle with entries in another order", "OK", run=True)(
        lambda d: save(d, tar_bytes(list(reversed(members_of(bundle()))))))
    add("unknown manifest keys are ignored", "OK", run=True)(
        lambda d: save(d, with_manifest(lambda m: m.update(flash_bytes=100, notes={"a": [1, 2]}))))

    # --- not a tar archive, or not a whole one ---
    add("empty file", "FORMAT", "not a valid tar archive")(lambda d: save(d, b""))
    for seed in (1, 2):
        rnd = random.Random(seed)
        junk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(600, 5000)))
        add(f"random garbage (seed {seed})", "FORMAT", "tar")(lambda d, junk=junk: save(d, junk))
    add("text file", "FORMAT", "tar")(lambda d: save(d, b"hello, I am not a bundle\n" * 40))
    add("gzip-compressed bundle", "FORMAT", "tar")(lambda d: save(d, gzip.compress(tarred(bundle()))))
    full = tarred(bundle())
    with tarfile.open(fileobj=io.BytesIO(full)) as tf:
        data_end = max(m.offset_data + m.size for m in tf.getmembers())
    for frac in (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999):
        cut = max(1, int(data_end * frac))
        add(f"truncated at byte {cut} of {len(full)}", "FORMAT", ())(lambda d, cut=cut: save(d, full[:cut]))
    add("header claims a huge size", "FORMAT", ["params.bin", "truncated"])(
        lambda d: save(d, set_header_size(tarred(bundle()), "params.bin", 0o77777777777)))
    add("entry over the size cap", "FORMAT", ["over the cap", "lib/host.so"], args=["--max-entry-bytes", "1000"])(
        lambda d: save(d, tarred(bundle())))

    # --- entries that are not plain files where they should be ---
    def renamed(old, new):
        b = bundle()
        return tar_bytes([regular(new if n == old else n, data) for n, data in b.files()])

    add("entry named ../manifest.json", "FORMAT", ["'../manifest.json'", ".."])(
        lambda d: save(d, renamed("manifest.json", "../manifest.json")))
    add("entry named lib/../params.bin", "FORMAT", "..")(lambda d: save(d, renamed("params.bin", "lib/../params.bin")))
    add("entry named lib/../../x.so", "FORMAT", "..")(lambda d: save(d, tarred(bundle(), extra=[regular("lib/../../x.so", b"x")])))
    add("absolute entry /manifest.json", "FORMAT", "absolute path")(
        lambda d: save(d, renamed("manifest.json", "/manifest.json")))
    add("absolute entry /etc/passwd", "FORMAT", "absolute path")(
        lambda d: save(d, tarred(bundle(), extra=[regular("/etc/passwd", b"root:x:0:0\n")])))
    add("entry named ./manifest.json", "FORMAT", "unexpected entry")(
        lambda d: save(d, renamed("manifest.json", "./manifest.json")))
    add("params.bin is a symlink", "FORMAT", ["'params.bin'", "symbolic link"])(
        lambda d: save(d, tarred(bundle(), replace={"params.bin": special("params.bin", tarfile.SYMTYPE, "/etc/passwd")})))
    add("extra symlink to /etc", "FORMAT", "symbolic link")(
        lambda d: save(d, tarred(bundle(), extra=[special("lib/x.so", tarfile.SYMTYPE, "/etc")])))
    add("plan.json is a hard link", "FORMAT", ["'plan.json'", "hard link"])(
        lambda d: save(d, tarred(bundle(), replace={"plan.json": special("plan.json", tarfile.LNKTYPE, "manifest.json")})))
    add("directory entry lib/", "FORMAT", "directory")(
        lambda d: save(d, tarred(bundle(), extra=[special("lib", tarfile.DIRTYPE)])))
    add("params.bin is a character device", "FORMAT", "character device")(
        lambda d: save(d, tarred(bundle(), replace={"params.bin": special("params.bin", tarfile.CHRTYPE)})))
    add("params.bin is a block device", "FORMAT", "block device")(
        lambda d: save(d, tarred(bundle(), replace={"params.bin": special("params.bin", tarfile.BLKTYPE)})))
    add("plan.json is a FIFO", "FORMAT", "FIFO")(
        lambda d: save(d, tarred(bundle(), replace={"plan.json": special("plan.json", tarfile.FIFOTYPE)})))

    # --- the wrong set of entries ---
    add("extra entry README", "FORMAT", ["unexpected entry", "README"])(
        lambda d: save(d, tarred(bundle(), extra=[regular("README", b"hi")])))
    add("extra entry with a control character", "FORMAT", "unexpected entry")(
        lambda d: save(d, tarred(bundle(), extra=[regular("params\n.bin", b"hi")])))
    add("extra entry with a 300-character name", "FORMAT", "unexpected entry")(
        lambda d: save(d, tarred(bundle(), extra=[regular("a" * 300, b"hi")])))
    add("a second library", "FORMAT", "more than one library")(
        lambda d: save(d, tarred(bundle(), extra=[regular("lib/other.so", lib)])))

    # the C target's source (src/<target>.c): optional, but listed and checked like the rest
    src = b"/* kernels */\nint x;\n"

    def with_source(name=b"src/host.c", listed="src/host.c", text=src, listed_crc=None, extra=()):
        b = bundle()
        if listed:
            b.entry_edit = lambda e: e.__setitem__(listed, {"bytes": len(text), "crc32": listed_crc or crc(text)})
        return tarred(b, extra=[regular(name.decode(), text)] + list(extra))
    add("the C target's source, listed", "OK", run=True)(lambda d: save(d, with_source()))
    add("a source entry the manifest does not list", "FORMAT", ["src/host.c", "not listed"])(
        lambda d: save(d, with_source(listed=None)))
    add("a listed source whose CRC differs", "CHECKSUM", ["src/host.c", "CRC32"])(
        lambda d: save(d, with_source(listed_crc="00000000")))
    add("a source for another target", "FORMAT", "src/other.c")(
        lambda d: save(d, with_source(name=b"src/other.c", listed=None)))
    add("two source entries", "FORMAT", "more than one source")(
        lambda d: save(d, with_source(extra=[regular("src/more.c", src)])))
    add("a listed source that is absent", "FORMAT", ["missing entry", "src/host.c"])(
        lambda d: save(d, tarred((lambda b: (setattr(b, "entry_edit", lambda e: e.__setitem__(
            "src/host.c", {"bytes": 1, "crc32": "00000000"})), b)[1])(bundle()))))
    add("duplicated plan.json", "FORMAT", ["duplicated entry", "plan.json"])(
        lambda d: save(d, tarred(bundle(), extra=[regular("plan.json", b"{}")])))
    add("duplicated manifest.json", "FORMAT", ["duplicated entry", "manifest.json"])(
        lambda d: save(d, tarred(bundle(), extra=[regular("manifest.json", b"{}")])))
    for name in ("manifest.json", "plan.json", "params.bin", "lib/host.so"):
        add(f"missing {name}", "FORMAT", ["missing entry", name])(
            lambda d, name=name: save(d, tarred(bundle(), drop=(name,))))
    add("library for another target", "FORMAT", ["lib/arm.so", "does not match the target"])(
        lambda d: save(d, renamed("lib/host.so", "lib/arm.so")))

    # --- checksums and sizes ---
    def corrupt(name, pos):
        b = bundle()
        files = b.files()
        out = []
        for n, data in files:
            if n == name:
                data = bytearray(data)
                data[pos % len(data)] ^= 0x40
                data = bytes(data)
            out.append(regular(n, data))
        return tar_bytes(out)

    add("corrupted params.bin", "CHECKSUM", ["params.bin", "CRC32"])(lambda d: save(d, corrupt("params.bin", 5)))
    add("corrupted library", "CHECKSUM", ["lib/host.so", "CRC32"])(lambda d: save(d, corrupt("lib/host.so", 1000)))
    add("corrupted plan.json", "CHECKSUM", ["plan.json", "CRC32"])(lambda d: save(d, corrupt("plan.json", 20)))
    add("params.bin size differs from the manifest", "CHECKSUM", ["params.bin", "the manifest says 65"])(
        lambda d: save(d, tarred(edit_entries(bundle(), lambda e: e["params.bin"].update(bytes=65)))))
    add("crc32 not hex", "FORMAT", "8 hex digits")(
        lambda d: save(d, tarred(edit_entries(bundle(), lambda e: e["plan.json"].update(crc32="xyz")))))
    add("crc32 as a number", "FORMAT", "must be a string")(
        lambda d: save(d, tarred(edit_entries(bundle(), lambda e: e["plan.json"].update(crc32=1234)))))
    add("entries table lacks params.bin", "FORMAT", "missing 'params.bin'")(
        lambda d: save(d, tarred(edit_entries(bundle(), lambda e: e.pop("params.bin")))))
    add("entries table lists an extra file", "FORMAT", ["unexpected entry", "notes.txt"])(
        lambda d: save(d, tarred(edit_entries(bundle(), lambda e: e.update({"notes.txt": {"bytes": 1, "crc32": "00000000"}})))))
    add("weights_bytes differs from params.bin", "FORMAT", "weights_bytes")(
        lambda d: save(d, with_manifest(lambda m: m.update(weights_bytes=128))))

    # --- manifest.json ---
    add("format version 5", "VERSION", ["version 5", "versions 1 to 4"])(
        lambda d: save(d, with_manifest(lambda m: m.update(format_version=5))))
    add("format version 1.5", "VERSION", ["version 1.5"])(
        lambda d: save(d, with_manifest(lambda m: m.update(format_version=1.5))))
    add("format version 0", "VERSION", "version 0")(lambda d: save(d, with_manifest(lambda m: m.update(format_version=0))))
    add("format version as a string", "FORMAT", "format_version")(
        lambda d: save(d, with_manifest(lambda m: m.update(format_version="1"))))
    add("format name wrong", "FORMAT", "kiln-bundle")(lambda d: save(d, with_manifest(lambda m: m.update(format="zip"))))
    add("format missing", "FORMAT", "missing 'format'")(lambda d: save(d, with_manifest(lambda m: m.pop("format"))))

    def raw_manifest(text):
        b = bundle()
        b.manifest_text = text
        return tarred(b)

    add("malformed manifest JSON", "FORMAT", ["manifest.json", "malformed JSON"])(
        lambda d: save(d, raw_manifest(b'{"format": "kiln-bundle", "format_version": 1,')))
    add("manifest is an array", "FORMAT", "expected an object")(lambda d: save(d, raw_manifest(b"[1, 2, 3]")))
    add("manifest is empty", "FORMAT", "malformed JSON")(lambda d: save(d, raw_manifest(b"")))
    add("manifest nested 100000 deep", "FORMAT", "malformed JSON")(lambda d: save(d, raw_manifest(b"[" * 100000)))
    b0 = bundle()
    good_manifest = dict(b0.files())["manifest.json"]
    add("data after the manifest JSON", "FORMAT", "unexpected data")(
        lambda d: save(d, raw_manifest(good_manifest + b"\n{}")))
    add("NUL after the manifest JSON", "FORMAT", "unexpected data")(
        lambda d: save(d, raw_manifest(good_manifest + b"\0")))
    add("duplicated key in the manifest", "FORMAT", ["duplicated key", "arena_bytes"])(
        lambda d: save(d, raw_manifest(good_manifest.replace(b'"arena_bytes": 64', b'"arena_bytes": 64, "arena_bytes": 1000000'))))
    for key in ("model", "compiler_version", "target", "inputs", "outputs", "arena_bytes", "weights_bytes",
                "workspace_bytes"):
        add(f"manifest lacks {key}", "FORMAT", f"missing '{key}'")(
            lambda d, key=key: save(d, with_manifest(lambda m: m.pop(key))))
    for value, word in (("64", "expected an integer"), (-1, "out of range"), (1.5, "expected an integer"),
                        (1e300, "out of range"), (None, "expected an integer"), (True, "expected an integer")):
        add(f"arena_bytes = {value!r}", "FORMAT", ["arena_bytes", word])(
            lambda d, value=value: save(d, with_manifest(lambda m: m.update(arena_bytes=value))))
    add("target name with a slash", "FORMAT", "target name")(
        lambda d: save(d, with_manifest(lambda m: m["target"].update(name="../evil"))))
    add("target name empty", "FORMAT", "target name")(lambda d: save(d, with_manifest(lambda m: m["target"].update(name=""))))
    add("target is a string", "FORMAT", "expected an object")(lambda d: save(d, with_manifest(lambda m: m.update(target="host"))))
    add("target lacks triple", "FORMAT", "missing 'triple'")(lambda d: save(d, with_manifest(lambda m: m["target"].pop("triple"))))

    def tensor_edit(which, edit):
        def f(m):
            edit(m[which][0])
        return f

    add("negative dim", "FORMAT", ["inputs[0]: shape[0]", "out of range"])(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(shape=[-8])))))
    add("fractional dim", "FORMAT", ["shape[1]", "expected an integer"])(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(shape=[8, 2.5])))))
    add("rank 9", "FORMAT", ["rank 9", "limit of 8"])(
        lambda d: save(d, with_manifest(tensor_edit("outputs", lambda t: t.update(shape=[1] * 9)))))
    add("element count overflows", "FORMAT", "overflows")(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(shape=[1 << 40, 1 << 40])))))
    add("byte size overflows", "FORMAT", "overflows")(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(shape=[1 << 31, 1 << 31], dtype="float64")))))
    add("shape is not an array", "FORMAT", "'shape' must be an array")(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(shape=8)))))
    # string tensors (format version 4): the slot must be given and sane
    add("string input without string_bytes", "FORMAT", ["inputs[0]", "string_bytes"])(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(dtype="string")))))
    add("string input with a 3-byte slot", "FORMAT", ["inputs[0]", "string_bytes"])(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(dtype="string", string_bytes=3)))))
    add("string input whose bytes overflow", "FORMAT", ["inputs[0]", "overflows"])(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(
            dtype="string", string_bytes=65536, shape=[1 << 26, 1 << 26])))))
    add("unknown dtype", "FORMAT", ["unknown dtype", "float8"])(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(dtype="float8")))))
    add("empty input name", "FORMAT", "empty name")(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(name="")))))
    add("input name is a number", "FORMAT", "'name' must be a string")(
        lambda d: save(d, with_manifest(tensor_edit("inputs", lambda t: t.update(name=3)))))
    add("duplicated input names", "FORMAT", "is used by inputs[0]")(
        lambda d: save(d, with_manifest(lambda m: m["inputs"].append(dict(m["inputs"][0])))))
    add("no outputs", "FORMAT", "no outputs")(lambda d: save(d, with_manifest(lambda m: m.update(outputs=[]))))
    add("an output no kernel writes", "FORMAT", ["output 1", "not passed to any kernel"])(
        lambda d: save(d, with_manifest(lambda m: m["outputs"].append({"name": "z", "dtype": "int8", "shape": []}))))

    # --- plan.json ---
    def arg_edit(k, a, **kw):
        return lambda p: p["kernels"][k]["args"][a].update(**kw)

    add("arena offset past the arena", "FORMAT", ["kernels[0].args[2]", "past the end of the arena"])(
        lambda d: save(d, with_plan(arg_edit(0, 2, offset=64))))
    add("arena range past the arena", "FORMAT", "past the end of the arena")(
        lambda d: save(d, with_plan(arg_edit(1, 0, bytes=65))))
    add("arena offset near 2^53", "FORMAT", "past the end of the arena")(
        lambda d: save(d, with_plan(arg_edit(0, 2, offset=(1 << 53) - 64, bytes=1 << 52))))
    add("arena offset over 2^53", "FORMAT", "out of range")(
        lambda d: save(d, with_plan(arg_edit(0, 2, offset=1 << 60))))
    add("arena offset 1e300", "FORMAT", "out of range")(lambda d: save(d, with_plan(arg_edit(0, 2, offset=1e300))))
    add("negative arena offset", "FORMAT", "out of range")(lambda d: save(d, with_plan(arg_edit(0, 2, offset=-64))))
    add("misaligned arena offset", "FORMAT", "not 64-byte aligned")(lambda d: save(d, with_plan(arg_edit(0, 2, offset=4))))
    add("param range past params.bin", "FORMAT", "past the end of the params.bin")(
        lambda d: save(d, with_plan(arg_edit(0, 1, bytes=100))))
    add("param offset past params.bin", "FORMAT", "past the end of the params.bin")(
        lambda d: save(d, with_plan(arg_edit(0, 1, offset=128))))
    add("arena arg without bytes", "FORMAT", "missing 'bytes'")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0]["args"][2].pop("bytes"))))
    add("input index out of range", "FORMAT", ["kernels[0].args[0]", "out of range"])(
        lambda d: save(d, with_plan(arg_edit(0, 0, index=1))))
    add("output index -1", "FORMAT", "out of range")(lambda d: save(d, with_plan(arg_edit(1, 1, index=-1))))
    add("input index as a string", "FORMAT", "expected an integer")(lambda d: save(d, with_plan(arg_edit(0, 0, index="0"))))
    add("unknown argument kind", "FORMAT", "unknown argument kind")(lambda d: save(d, with_plan(arg_edit(0, 0, kind="global"))))
    add("argument is a number", "FORMAT", "expected an object")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0]["args"].append(7))))
    add("args is an object", "FORMAT", "'args' must be an array")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(args={}))))
    add("no kernels", "FORMAT", "no kernels")(lambda d: save(d, with_plan(lambda p: p.update(kernels=[]))))
    # run-time check descriptions (format version 2)
    add("checks not an array", "FORMAT", "checks")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(checks="Gather"))))
    add("a check that is no string", "FORMAT", "checks[1]")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(checks=["Gather 'g'", 7]))))
    add("an empty check", "FORMAT", "checks[0]")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(checks=[""]))))
    add("a check of 1025 characters", "FORMAT", "checks[0]")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(checks=["x" * 1025]))))
    add("4097 checks", "FORMAT", "4097 checks")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(checks=["c"] * 4097))))
    # conditional kernels, an If's branches (format version 3)
    when_ok = {"kind": "input", "index": 0, "is": True}
    add("when not an array", "FORMAT", "'when'")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(when=when_ok))))
    add("when empty", "FORMAT", "0 conditions")(lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(when=[]))))
    add("65 conditions", "FORMAT", "65 conditions")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(when=[when_ok] * 65))))
    add("a condition without 'is'", "FORMAT", ["when[0]", "'is'"])(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(when=[{"kind": "input", "index": 0}]))))
    add("a condition whose 'is' is 1", "FORMAT", ["when[0]", "'is'"])(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(when=[dict(when_ok, **{"is": 1})]))))
    add("a condition past the arena", "FORMAT", ["when[0]", "arena"])(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(
            when=[{"kind": "arena", "offset": 1 << 40, "bytes": 1, "is": False}]))))
    add("a condition of an unknown kind", "FORMAT", ["when[0]", "unknown argument kind"])(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(when=[dict(when_ok, kind="global")]))))
    add("fail not a string", "FORMAT", "'fail'")(lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(fail=7))))
    add("fail empty", "FORMAT", "'fail'")(lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(fail=""))))
    add("a trap reached fails the run", "RUN", ["kernels' trap", "branch X cannot run"], run=True)(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(name="kernels' trap", fail="branch X cannot run"))))
    # an output's data-dependent extent (format version 3)
    def extent(**e):
        return lambda m: m["outputs"][0].update(extent=e)
    param8 = {"kind": "param", "offset": 0, "bytes": 8}
    add("extent not an object", "FORMAT", "extent")(
        lambda d: save(d, with_manifest(lambda m: m["outputs"][0].update(extent=[0]))))
    add("extent axis out of range", "FORMAT", ["extent", "axis"])(lambda d: save(d, with_manifest(extent(axis=1, arg=param8))))
    add("extent without arg", "FORMAT", ["extent", "arg"])(lambda d: save(d, with_manifest(extent(axis=0))))
    add("extent arg past params.bin", "FORMAT", ["outputs[0].extent.arg", "past the end"])(
        lambda d: save(d, with_manifest(extent(axis=0, arg={"kind": "param", "offset": 64, "bytes": 8}))))
    add("extent arg of 4 bytes", "FORMAT", ["outputs[0].extent.arg", "8 bytes"])(
        lambda d: save(d, with_manifest(extent(axis=0, arg={"kind": "param", "offset": 0, "bytes": 4}))))
    add("extent arg is the output itself", "FORMAT", ["outputs[0].extent.arg", "8 bytes"])(
        lambda d: save(d, with_manifest(extent(axis=0, arg={"kind": "output", "index": 0}))))
    add("an extent past the bound fails the run", "RUN", ["output 'y'", "outside [0, 8]"], run=True)(
        lambda d: save(d, with_manifest(extent(axis=0, arg=param8))))
    add("kernels missing", "FORMAT", "missing 'kernels'")(lambda d: save(d, with_plan(lambda p: p.pop("kernels"))))
    add("negative flops", "FORMAT", ["flops", "out of range"])(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(flops=-1))))
    add("symbol with a slash", "FORMAT", "not a C identifier")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(symbol="../k_add"))))
    add("symbol too long", "FORMAT", "not a C identifier")(
        lambda d: save(d, with_plan(lambda p: p["kernels"][0].update(symbol="k" * 300))))

    def raw_plan(text):
        b = bundle()
        b.plan_text = text
        return tarred(b)

    add("malformed plan JSON", "FORMAT", ["plan.json", "malformed JSON"])(
        lambda d: save(d, raw_plan(b'{"kernels": [{"name": "add",')))
    add("plan nested 100000 deep", "FORMAT", "malformed JSON")(lambda d: save(d, raw_plan(b'{"kernels": ' + b"[" * 100000)))
    add("plan is a string", "FORMAT", "expected an object")(lambda d: save(d, raw_plan(b'"kernels"')))

    # --- the library ---
    add("kernel symbol that does not exist", "LOAD", ["k_nope", "not exported"])(
        lambda d: save(d, with_plan(lambda p: p["kernels"][1].update(symbol="k_nope"))))
    add("kernel symbol from libc", "LOAD", ["'free'", "not defined in lib/host.so"])(
        lambda d: save(d, with_plan(lambda p: p["kernels"][1].update(symbol="free"))))
    add("kernel symbol is data", "LOAD", ["kiln_data_symbol", "not code"])(
        lambda d: save(d, with_plan(lambda p: p["kernels"][1].update(symbol="kiln_data_symbol"))))

    def with_lib(data):
        b = bundle()
        b.lib = data
        return tarred(b)

    # CPU features the code may use (manifest target.features): refused at open when this CPU lacks one
    add("target.features not an array", "FORMAT", "features")(
        lambda d: save(d, with_manifest(lambda m: m["target"].update(features="avx2"))))
    add("a feature name with a space", "FORMAT", "features[1]")(
        lambda d: save(d, with_manifest(lambda m: m["target"].update(features=["sse3", "avx 2"]))))
    add("65 feature names", "FORMAT", "65 names")(
        lambda d: save(d, with_manifest(lambda m: m["target"].update(features=["sse3"] * 65))))
    add("a feature this runtime cannot check", "LOAD", ["avx10.2", "cannot check"])(
        lambda d: save(d, with_manifest(lambda m: m["target"].update(features=["sse3", "avx10.2"]))))
    missing = cpu_feature_missing_here()
    if missing:
        add("a feature this CPU lacks (%s)" % missing, "LOAD", [missing, "lacks", "--target x86_64-avx2"])(
            lambda d: save(d, with_manifest(lambda m: m["target"].update(features=["sse3", missing]))))
    else:
        print("SKIP a feature this CPU lacks: this CPU has every feature of the runtime's table (the refusal of an "
              "unknown name above takes the same path)")

    add("library is not ELF", "LOAD", "not an ELF shared object")(lambda d: save(d, with_lib(b"#!/bin/sh\n" * 100)))
    add("library is a truncated ELF", "LOAD", "cannot load")(lambda d: save(d, with_lib(lib[:300])))
    add("library is empty", "LOAD", "not an ELF")(lambda d: save(d, with_lib(b"")))

    # --- paths that are not bundles ---
    add("path does not exist", "IO", "cannot open", memory=False)(lambda d: os.path.join(d, "nope.kiln"))
    add("path is a directory", "IO", "not a regular file", memory=False)(lambda d: d)
    return out


def edit_entries(b, fn):
    b.entry_edit = fn
    return b


# --------------------------------------------------------------------------- running


def run_driver(driver, path, args):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    p = subprocess.run([driver] + args + [path], capture_output=True, text=True, timeout=TIMEOUT, env=env,
                       errors="replace")
    return p.returncode, p.stdout, p.stderr


def check(case, rc, out, err):
    both = out + err
    for mark in SANITIZER_MARKS:
        if mark in both:
            return f"sanitizer report: {both.strip()[:2000]}"
    if rc < 0 or rc > 1:
        return f"exit status {rc} (crash?): {both.strip()[:500]}"
    lines = out.splitlines()
    first = lines[0] if lines else ""
    if case.status == "OK":
        if rc != 0 or first != "OK":
            return f"expected OK, got exit {rc}: {both.strip()[:500]}"
        if case.run:
            want = "output y: " + " ".join("%g" % v for v in EXPECTED_Y)
            if len(lines) < 2 or lines[1] != want:
                return f"wrong run output {lines[1:]!r}, expected {want!r}"
        return None
    if rc != 1:
        return f"expected exit 1, got {rc}: {both.strip()[:500]}"
    if case.run:  # a failure of the run: the bundle opened, then the run reports it
        if first != "OK" or len(lines) < 2:
            return f"expected OK, then a failed run, got {lines!r}"
        lines = lines[1:]
        first = lines[0]
    if not first.startswith(case.status + ": "):
        return f"expected status {case.status}, got {first!r}"
    if len(first) <= len(case.status) + 3:
        return "empty message"
    for w in case.words:
        if w not in first:
            return f"message {first!r} lacks {w!r}"
    if len(lines) != 1:
        return f"expected one line, got {lines!r}"
    return None


def build_library(tmp):
    src = os.path.join(tmp, "kernels.c")
    so = os.path.join(tmp, "kernels.so")
    with open(src, "w") as f:
        f.write(KERNELS)
    cc = os.environ.get("KILN_TEST_CC", "cc")
    try:
        p = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-I", os.path.join(ROOT, "runtime"), "-o", so, src],
                           capture_output=True, text=True, errors="replace")
    except OSError as e:
        p = subprocess.CompletedProcess([cc], 127, "", str(e))
    if p.returncode != 0:  # one line saying what is missing, then the compiler's own words
        print(f"FAIL compiling the test kernels: {cc} -shared failed (exit {p.returncode}); cc and the C headers come "
              "with the Debian packages gcc and libc6-dev (scripts/setup.sh installs them)")
        print(p.stderr.strip()[:2000])
        print("test_runtime_reject: 0 passed, 1 failed")
        sys.exit(1)
    with open(so, "rb") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True, help="the kiln binary; the driver is looked up next to it")
    ap.add_argument("--driver", help="kiln_rt_open_check (default: next to --kiln)")
    ap.add_argument("-k", default="", help="run only cases whose name contains this")
    ap.add_argument("-v", action="store_true", help="print each message")
    a = ap.parse_args()
    driver = os.path.abspath(a.driver or os.path.join(os.path.dirname(os.path.abspath(a.kiln)), "kiln_rt_open_check"))
    if not os.access(driver, os.X_OK):
        print(f"FAIL driver {driver} not found (build the kiln_rt_open_check target)")
        print("test_runtime_reject: 0 passed, 1 failed")
        sys.exit(1)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="kiln-rt-reject-") as tmp:
        lib = build_library(tmp)
        for i, case in enumerate(cases(lib)):
            if a.k not in case.name:
                continue
            d = os.path.join(tmp, f"c{i}")
            os.makedirs(d)
            modes = [[]] + ([["--memory"]] if case.memory else [])
            for mode in modes:
                label = case.name + (" [memory]" if mode else "")
                try:
                    path = case.build(d)
                    args = mode + case.args + (["--run"] if case.run else [])
                    rc, out, err = run_driver(driver, path, args)
                    why = check(case, rc, out, err)
                except Exception as e:  # a broken case must not hide the others
                    why, out = f"test error: {type(e).__name__}: {e}", ""
                if why:
                    failed += 1
                    print(f"FAIL {label}: {why}")
                else:
                    passed += 1
                    print(f"ok   {label}" + (f"  [{out.strip()}]" if a.v else ""))
    print(f"test_runtime_reject: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
