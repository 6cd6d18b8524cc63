"""test_install.py — kiln used from anywhere: the install tree and an application
built against it.

Installs the build that --kiln belongs to into a temporary prefix (`cmake --install
BUILD --prefix P`, what `make install PREFIX=P` runs) and checks:
- the tree: bin/kiln and bin/kiln-run; lib/libkiln_runtime.so → .so.MAJOR →
  .so.VERSION with SONAME libkiln_runtime.so.MAJOR, exporting exactly the functions
  include/kiln/kiln.h declares (nothing of the runtime's internals);
  lib/libkiln_runtime.a; include/kiln/kiln.h and kiln_abi.h, which compile on their
  own as C99 with -Wall -Wextra -pedantic -Werror; lib/pkgconfig/kiln-runtime.pc
  (its version is `kiln --version`'s; --libs the shared library only, --static --libs
  also libarchive, cJSON, zlib, pthread, libdl, libm); lib/cmake/kiln;
- examples/classify built three ways: its Makefile (pkg-config, shared library), its
  CMakeLists.txt (find_package(kiln): kiln::runtime, shared) and with
  -DCLASSIFY_STATIC=ON (kiln::runtime_static: no libkiln_runtime.so.N needed);
- two small classifiers (Conv → Relu → GlobalAveragePool → Flatten → Gemm, one ending
  in logits, one in a Softmax), compiled by the installed kiln, run by each build of
  the example on a PPM (RGB, 8-bit, 47x61) and a PGM (grey, 16-bit, 40x30): the tensor
  it fed (--dump-input) equals the same preprocessing in numpy (bilinear resize with
  half-pixel centres, ImageNet mean/std), and its top-5 classes and probabilities are
  ONNX Runtime's on that tensor (softmax of the logits);
- bad input (a truncated image, not an image, no bundle) fails with one line, exit 1;
- the installed kiln-run runs the bundle; `make -n install PREFIX=P` runs the install.

In the sanitizer build (KILN_SANITIZE in the build's CMakeCache.txt) the installed
runtime is the sanitized one, so the example is built with the same
-fsanitize=address,undefined and runs under ASan too.

Closing line: test_install: N passed, M failed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "classify")
MEAN = {3: [0.485, 0.456, 0.406], 1: [0.449]}
STD = {3: [0.229, 0.224, 0.225], 1: [0.226]}


def sh(argv, cwd=None, env=None, timeout=300):
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, "", str(e)


def cache_value(build, key):
    try:
        for line in open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8"):
            if line.startswith(key + ":"):
                return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def classifier(path, softmax, seed):
    """image[1, 3, 32, 32] → Conv 3x3 (8) → Relu → GlobalAveragePool → Flatten → Gemm (10) [→ Softmax]."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.5).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((10, 8)).astype(np.float32) * 2, "g"),
             numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "gb")]
    last = "probs" if softmax else "logits"
    nodes = [helper.make_node("Conv", ["image", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "g", "gb"], ["logits"], transB=1)]
    if softmax:
        nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], axis=1))
    g = helper.make_graph(nodes, "classifier", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info(last, TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def write_images(d):
    """A P6 (8-bit) and a P5 (16-bit) image with structure in every channel; their pixels in [0, 1]."""
    y, x = np.mgrid[0:61, 0:47]
    rgb = np.stack([(x * 5 + y * 3) % 256, (x * x + 7 * y) % 256, (255 - 4 * y + x) % 256], axis=-1).astype(np.uint8)
    ppm = os.path.join(d, "rgb.ppm")
    with open(ppm, "wb") as f:
        f.write(b"P6\n# a comment\n47 61\n255\n" + rgb.tobytes())
    y, x = np.mgrid[0:30, 0:40]
    grey = ((x * 1500 + y * 900 + x * y * 37) % 65536).astype(">u2")
    pgm = os.path.join(d, "grey.pgm")
    with open(pgm, "wb") as f:
        f.write(b"P5 40 30 65535\n" + grey.tobytes())
    return [(ppm, rgb.astype(np.float64) / 255), (pgm, grey.astype(np.float64)[..., None] / 65535)]


def reference_input(pix, C, H, W):
    """classify.c's preprocessing in numpy: bilinear, half-pixel centres, clamped; then mean/std."""
    h, w, ch = pix.shape
    sy = np.clip((np.arange(H) + 0.5) * h / H - 0.5, 0, h - 1)
    sx = np.clip((np.arange(W) + 0.5) * w / W - 0.5, 0, w - 1)
    y0, x0 = sy.astype(int), sx.astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (sy - y0)[:, None, None], (sx - x0)[None, :, None]
    top = pix[y0][:, x0] * (1 - wx) + pix[y0][:, x1] * wx
    bottom = pix[y1][:, x0] * (1 - wx) + pix[y1][:, x1] * wx
    v = top * (1 - wy) + bottom * wy  # H x W x ch
    if ch != C:
        v = np.repeat(v, C, axis=-1) if ch == 1 else (v @ np.array([0.299, 0.587, 0.114]))[..., None]
    v = (v - np.array(MEAN[C])) / np.array(STD[C])
    return v.transpose(2, 0, 1)[None].astype(np.float32)


def parse_top5(out):
    return [(int(m.group(1)), float(m.group(2))) for m in re.finditer(r"^\d\. class (\d+) ([0-9.eE+-]+)$", out, re.M)]


def needed(path):
    rc, out, _ = sh(["readelf", "-d", path])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", out) if rc == 0 else None


def main():
    args = util.parse_args(__doc__)
    c = util.Checks("test_install")
    kiln_built = os.path.abspath(args.kiln)
    build = os.path.dirname(kiln_built)
    sanitize = cache_value(build, "KILN_SANITIZE").upper() in ("ON", "1", "TRUE", "YES")
    cc = cache_value(build, "CMAKE_C_COMPILER") or "cc"
    san = "-fsanitize=address,undefined -fno-omit-frame-pointer" if sanitize else ""
    if sanitize:
        print("sanitizer build: the example is built with %s, as the installed runtime is" % san, flush=True)
    tmp = tempfile.mkdtemp(prefix="kiln-install-")
    try:
        run_checks(c, build, kiln_built, tmp, cc, san)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


def run_checks(c, build, kiln_built, tmp, cc, san):
    prefix = os.path.join(tmp, "prefix")
    rc, out, err = sh(["cmake", "--install", build, "--prefix", prefix])
    if not c.check(rc == 0, "cmake --install %s --prefix %s: exit %d\n%s" % (build, prefix, rc, (out + err)[-2000:])):
        return
    rc, out, err = sh(["make", "-n", "install", "PREFIX=" + prefix, "BUILD=" + build], cwd=ROOT)
    c.check(rc == 0 and ("cmake --install %s --prefix %s" % (build, prefix)) in out,
            "make -n install PREFIX=P runs cmake --install on the build: %r" % (out + err)[-500:])

    # --- the tree ---
    kiln = os.path.join(prefix, "bin", "kiln")
    rc, out, _ = sh([kiln, "--version"])
    m = re.match(r"kiln (\d+)\.(\d+)\.(\d+)$", out.strip())
    if not c.check(rc == 0 and m, "installed bin/kiln --version: exit %d, %r" % (rc, out)):
        return
    version, major = "%s.%s.%s" % m.groups(), m.group(1)
    lib = os.path.join(prefix, "lib")
    for rel in ["bin/kiln-run", "lib/libkiln_runtime.a", "include/kiln/kiln.h", "include/kiln/kiln_abi.h",
                "lib/pkgconfig/kiln-runtime.pc", "lib/cmake/kiln/kilnConfig.cmake",
                "lib/cmake/kiln/kilnConfigVersion.cmake", "lib/libkiln_runtime.so.%s" % version]:
        c.check(os.path.isfile(os.path.join(prefix, rel)), "installed %s" % rel)
    so = os.path.join(lib, "libkiln_runtime.so")
    c.check(os.path.islink(so) and os.readlink(so) == "libkiln_runtime.so." + major,
            "lib/libkiln_runtime.so → libkiln_runtime.so.%s" % major)
    c.check(os.path.realpath(so) == os.path.realpath(os.path.join(lib, "libkiln_runtime.so." + version)),
            "lib/libkiln_runtime.so.%s → libkiln_runtime.so.%s" % (major, version))
    rc, out, _ = sh(["readelf", "-d", so])
    c.check(("Library soname: [libkiln_runtime.so.%s]" % major) in out, "SONAME libkiln_runtime.so.%s" % major)
    rc, out, _ = sh(["nm", "-D", "--defined-only", so])
    exported = {l.split()[-1] for l in out.splitlines() if l.strip()}
    header = open(os.path.join(prefix, "include", "kiln", "kiln.h"), encoding="utf-8").read()
    declared = set(re.findall(r"\b(kiln_\w+)\(", header))
    c.check(rc == 0 and exported == declared,
            "the shared runtime exports exactly kiln.h's functions: extra %s, missing %s"
            % (sorted(exported - declared)[:10], sorted(declared - exported)[:10]))
    probe = os.path.join(tmp, "probe.c")
    with open(probe, "w") as f:
        f.write("#include <kiln/kiln.h>\n#include <kiln/kiln_abi.h>\n"
                "int main(void) { kiln_options o; kiln_options_init(&o); return o.threads; }\n")
    rc, out, err = sh([cc, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only",
                       "-I" + os.path.join(prefix, "include"), probe])
    c.check(rc == 0, "the installed headers compile alone (C99, -pedantic -Werror): %s" % err[-500:])

    # --- pkg-config ---
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.path.join(lib, "pkgconfig") + (":" + env["PKG_CONFIG_PATH"]
                                                                 if env.get("PKG_CONFIG_PATH") else "")
    rc, out, err = sh(["pkg-config", "--modversion", "kiln-runtime"], env=env)
    c.check(rc == 0 and out.strip() == version, "pkg-config --modversion kiln-runtime: %r (kiln %s) %s"
            % (out.strip(), version, err.strip()))
    rc, out, err = sh(["pkg-config", "--cflags", "--libs", "kiln-runtime"], env=env)
    words = out.split()
    incs = {os.path.realpath(w[2:]) for w in words if w.startswith("-I")}
    libdirs = {os.path.realpath(w[2:]) for w in words if w.startswith("-L")}
    c.check(rc == 0 and os.path.realpath(os.path.join(prefix, "include")) in incs and
            os.path.realpath(lib) in libdirs and "-lkiln_runtime" in words and "-larchive" not in words,
            "pkg-config --cflags --libs: the prefix's include and lib, -lkiln_runtime only: %r %s" % (out, err))
    rc, out, err = sh(["pkg-config", "--static", "--libs", "kiln-runtime"], env=env)
    words = out.split()
    want = ["-lkiln_runtime", "-larchive", "-lcjson", "-lz", "-pthread", "-ldl", "-lm"]
    c.check(rc == 0 and all(w in words for w in want), "pkg-config --static --libs has %s: %r %s" % (want, out, err))

    # --- the example, three ways ---
    binaries = []
    src = os.path.join(tmp, "classify-make")
    shutil.copytree(EXAMPLE, src)
    rc, out, err = sh(["make", "-C", src, "CC=" + cc, "CFLAGS=-O2 -Werror " + san], env=env)
    exe = os.path.join(src, "classify")
    if c.check(rc == 0 and os.path.isfile(exe), "examples/classify: make with pkg-config: exit %d\n%s"
               % (rc, (out + err)[-2000:])):
        c.check("libkiln_runtime.so." + major in (needed(exe) or []), "the pkg-config build needs the shared runtime")
        binaries.append(("pkg-config, shared", exe))
    for kind, extra in [("cmake, shared", []), ("cmake, static", ["-DCLASSIFY_STATIC=ON"])]:
        bdir = os.path.join(tmp, "classify-" + kind.replace(", ", "-"))
        rc, out, err = sh(["cmake", "-S", EXAMPLE, "-B", bdir, "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_C_COMPILER=" + cc,
                           "-DCMAKE_C_FLAGS=-Werror " + san, "-DCMAKE_EXE_LINKER_FLAGS=" + san] + extra, env=env)
        if rc == 0:
            rc, out2, err2 = sh(["cmake", "--build", bdir], env=env)
            out, err = out + out2, err + err2
        exe = os.path.join(bdir, "classify")
        if not c.check(rc == 0 and os.path.isfile(exe), "examples/classify: %s: exit %d\n%s"
                       % (kind, rc, (out + err)[-2000:])):
            continue
        deps = needed(exe) or []
        if kind.endswith("static"):
            c.check(not any(d.startswith("libkiln_runtime") for d in deps) and "libarchive.so.13" in deps,
                    "the static build links the archive (and libarchive): NEEDED %s" % deps)
        else:
            c.check("libkiln_runtime.so." + major in deps, "the find_package build needs the shared runtime: %s" % deps)
        binaries.append((kind, exe))

    # --- models compiled by the installed kiln, classified by each build ---
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    models = []
    for name, softmax, seed in [("logits", False, 7), ("probs", True, 11)]:
        onnx_path, bundle = os.path.join(work, name + ".onnx"), os.path.join(work, name + ".kiln")
        classifier(onnx_path, softmax, seed)
        r = util.run_kiln(kiln, ["compile", onnx_path, "-o", bundle], timeout=300)
        if c.check(r.rc == 0, "installed kiln compiles %s: %s %s" % (name, r.describe(), r.err[-500:])):
            models.append((name, softmax, onnx_path, bundle))
    images = write_images(work)
    for kind, exe in binaries:
        for name, softmax, onnx_path, bundle in models:
            sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
            for image, pix in images:
                what = "%s / %s / %s" % (kind, name, os.path.basename(image))
                dump = os.path.join(work, "input.npy")
                if os.path.exists(dump):
                    os.remove(dump)
                rc, out, err = sh([exe, bundle, image, "--dump-input", dump], cwd=work)
                top = parse_top5(out)
                if not c.check(rc == 0 and len(top) == 5 and "runtime error" not in err,
                               "%s: exit %d, %d classes printed\n%s%s" % (what, rc, len(top), out, err[-1500:])):
                    continue
                fed = np.load(dump)
                ref_in = reference_input(pix, 3, 32, 32)
                c.check(fed.shape == (1, 3, 32, 32) and fed.dtype == np.float32 and
                        np.allclose(fed, ref_in, atol=1e-4, rtol=0),
                        "%s: the fed tensor is the numpy preprocessing (max diff %s)"
                        % (what, np.abs(fed - ref_in).max() if fed.shape == ref_in.shape else fed.shape))
                y = sess.run(None, {"image": fed})[0][0].astype(np.float64)
                p = y if softmax else np.exp(y - y.max()) / np.exp(y - y.max()).sum()
                order = [int(i) for i in np.argsort(-p, kind="stable")[:5]]
                c.check(top[0][0] == order[0], "%s: top-1 class %d, ONNX Runtime's %d" % (what, top[0][0], order[0]))
                c.check([k for k, _ in top] == order and all(abs(s - p[k]) <= 1e-4 for k, s in top),
                        "%s: top-5 %s, ONNX Runtime's %s" % (what, top, [(k, round(p[k], 6)) for k in order]))
                c.check(("(%s)" % ("probabilities" if softmax else "softmax of the scores")) in out,
                        "%s: says how it read the output: %r" % (what, out.splitlines()[0] if out else ""))

    dump = os.path.join(work, "input.npy")
    if models and os.path.exists(dump):
        rc, out, err = sh([os.path.join(prefix, "bin", "kiln-run"), models[0][3], "--input", "image=" + dump,
                           "--repeat", "2"], cwd=work)
        c.check(rc == 0, "installed kiln-run runs the bundle: exit %d %s" % (rc, (out + err)[-300:]))

    # --- bad input: one line, exit 1 ---
    if binaries and models:
        exe, bundle = binaries[0][1], models[0][3]
        trunc = os.path.join(work, "truncated.ppm")
        with open(trunc, "wb") as f:
            f.write(b"P6 47 61 255\n" + bytes(100))
        notimg = os.path.join(work, "not-an-image.ppm")
        with open(notimg, "wb") as f:
            f.write(b"P3 1 1 255\n0 0 0\n")
        for argv, word in [([exe, bundle, trunc], "truncated"), ([exe, bundle, notimg], "not a binary PPM"),
                           ([exe, os.path.join(work, "none.kiln"), images[0][0]], "IO"),
                           ([exe, images[0][0], images[0][0]], "FORMAT")]:
            rc, out, err = sh(argv, cwd=work)
            lines = [l for l in err.splitlines() if l.strip()]
            c.check(rc == 1 and len(lines) == 1 and word in lines[0],
                    "classify %s: exit 1 with one line saying %r: exit %d, %r"
                    % (" ".join(os.path.basename(a) for a in argv[1:]), word, rc, err[-300:]))
        rc, _, err = sh([exe], cwd=work)
        c.check(rc == 2 and "usage" in err, "classify without arguments: usage, exit 2 (got %d)" % rc)


if __name__ == "__main__":
    main()
