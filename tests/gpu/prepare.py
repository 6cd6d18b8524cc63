#!/usr/bin/env python3
"""prepare.py — everything a GPU machine needs to check kiln's CUDA target, built here.

The GPU machines this project can borrow have no LLVM, no onnx package and no
network, and are lent for minutes: the bundles are compiled here, and the machine
only runs them (tools/kiln-run, the runtime's runner) and compares. This script
writes OUT (default .gpu/, git-ignored):

  node/<test>/model.kiln      a node-suite test compiled by `kiln check --target T
                              --emulate --save-bundle` (the test inputs bound, and
                              only tests whose GPU loop IR passed the emulation)
  node/<test>/in/<name>.npy   its inputs; want/<k>_<name>.npy its expected outputs
  e2e/<model>_b<B>/           MobileNetV2 and the BERT-like encoder (and more with
                              --models) at batch 1 and 16: the bundle in parts, its
                              params.bin once per model in params/ (travel.py), in/
                              (large inputs as recipes) and want/ from ONNX Runtime
  bin/kiln-run, lib/*.so*     the runner and the shared libraries it needs that a
                              CUDA image may lack (libarchive and its closure, cJSON)

tests/gpu/run_on_gpu.sh runs it all there; tests/gpu/compare.py (numpy only) compares.
--gpu-math tf32 compiles everything with `--gpu-math tf32` (f32 matmuls on tensor cores,
inputs rounded to TF32): e2e folders are then <model>_b<B>_tf32, and each folder gets a
tolerance.json that compare.py applies instead of its fp32 tolerances (rtol 1e-2, atol
1e-2 x the largest |want|: TF32's 10-bit mantissas; the node tests' emulated check
here uses --atol-scale 0.01 likewise).
usage: prepare.py [--kiln build/kiln] [--target cuda-sm90] [--out .gpu] [--node-filter S]
                  [--models mobilenetv2,bert_encoder] [--model-dir DIR] [--batches 1,16] [--no-node]
                  [--gpu-math fp32|tf32]
"""
import json
import argparse, concurrent.futures as cf, os, shutil, subprocess, sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "cuda"))
sys.path.insert(0, HERE)
import travel  # noqa: E402


def node_dir():
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def tensors(d, prefix):
    import onnx
    from onnx import numpy_helper
    out = []
    k = 0
    while os.path.exists(os.path.join(d, "%s_%d.pb" % (prefix, k))):
        t = onnx.TensorProto()
        with open(os.path.join(d, "%s_%d.pb" % (prefix, k)), "rb") as f:
            data = f.read()
        try:
            t.ParseFromString(data)
            if not t.name and not t.dims and not t.raw_data and not t.float_data and not t.int64_data:
                return None  # a sequence or an optional: not a plain tensor
            out.append((t.name, numpy_helper.to_array(t)))
        except Exception:
            return None
        k += 1
    return out


SUPPORTED = {np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
             np.uint64, np.bool_, np.float16}


TF32_RTOL, TF32_ATOL_SCALE = 1e-2, 1e-2


def math_args(math):
    """kiln's options for --gpu-math (none for the default, fp32)."""
    return [] if math == "fp32" else ["--gpu-math", math]


def write_tolerance(dst, wants, math):
    """tf32: tolerance.json for compare.py (rtol, and atol scaled by the largest |want|)."""
    if math == "fp32":
        return
    big = max([float(np.abs(a).max()) for a in wants if a.size and a.dtype.kind == "f"] + [0.0])
    with open(os.path.join(dst, "tolerance.json"), "w") as f:
        json.dump({"rtol": TF32_RTOL, "atol": max(TF32_ATOL_SCALE * big, 1e-5), "why": "--gpu-math " + math}, f)


def prepare_node(kiln, target, test, out, math="fp32"):
    d = os.path.join(node_dir(), test)
    data = os.path.join(d, "test_data_set_0")
    ins, wants = tensors(data, "input"), tensors(data, "output")
    if ins is None or wants is None or any(a.dtype.type not in SUPPORTED for _, a in ins + wants):
        return test, "skip", "inputs or outputs that are not plain tensors of a supported dtype"
    dst = os.path.join(out, "node", test)
    os.makedirs(os.path.join(dst, "in"), exist_ok=True)
    os.makedirs(os.path.join(dst, "want"), exist_ok=True)
    r = subprocess.run([kiln, "check", os.path.join(d, "model.onnx"), "--test-data", data, "--target", target,
                        "--emulate", "--save-bundle", os.path.join(dst, "model.kiln")] + math_args(math) +
                       (["--atol-scale", str(TF32_ATOL_SCALE)] if math != "fp32" else []),
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        shutil.rmtree(dst, ignore_errors=True)
        return test, "fail", (r.stderr.strip().splitlines() or ["?"])[-1]
    for name, a in ins:  # '/' in a name is written %2F (compare.py reads it back)
        np.save(os.path.join(dst, "in", name.replace("/", "%2F") + ".npy"), a)
    for k, (name, a) in enumerate(wants):
        np.save(os.path.join(dst, "want", "%d_%s.npy" % (k, name.replace("/", "%2F"))), a)
    write_tolerance(dst, [a for _, a in wants], math)
    return test, "ok", ""


def prepare_model(kiln, target, path, name, batch, out, part_bytes, math="fp32"):
    """e2e/<name>_b<batch>/: the bundle as parts (its params once per model under
    params/, travel.py), inputs (large ones as recipes) and ONNX Runtime's outputs."""
    import onnx
    import onnxruntime as ort
    from layers import set_batch
    m = onnx.load(path)
    if batch != 1:
        set_batch(m, batch)
    os.makedirs(os.path.join(out, "e2e"), exist_ok=True)
    tmp = os.path.join(out, "e2e", "%s_b%d.onnx" % (name, batch))
    onnx.save(m, tmp)
    dst = os.path.join(out, "e2e", "%s_b%d%s" % (name, batch, "" if math == "fp32" else "_" + math))
    os.makedirs(os.path.join(dst, "in"), exist_ok=True)
    os.makedirs(os.path.join(dst, "want"), exist_ok=True)
    sess = ort.InferenceSession(tmp, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(batch)
    feeds = {}
    for k, i in enumerate(sess.get_inputs()):
        shape = [d if isinstance(d, int) else batch for d in i.shape]
        if "int" in i.type:
            feeds[i.name] = rng.integers(0, 100, size=shape).astype(np.int64 if "int64" in i.type else np.int32)
            travel.write_input(os.path.join(dst, "in"), i.name, feeds[i.name])
        else:
            spec = {"shape": shape, "dtype": "float32", "seed": 1000 * batch + k, "lo": -1.0, "hi": 1.0}
            feeds[i.name] = travel.gen_input(spec)
            travel.write_input(os.path.join(dst, "in"), i.name, spec if feeds[i.name].nbytes > travel.BIG else feeds[i.name])
    outs = sess.run(None, feeds)
    for k, (o, a) in enumerate(zip(sess.get_outputs(), outs)):
        np.save(os.path.join(dst, "want", "%d_%s.npy" % (k, o.name.replace("/", "%2F"))), a)
    write_tolerance(dst, outs, math)
    bundle = os.path.join(dst, "model.kiln")
    r = subprocess.run([kiln, "compile", tmp, "--target", target, "-o", bundle] + math_args(math), capture_output=True,
                       text=True)
    os.remove(tmp)
    if r.returncode != 0:
        raise SystemExit("kiln compile %s: %s" % (name, r.stderr))
    travel.split_bundle(bundle, dst, os.path.join(out, "params"), name, part_bytes)
    return dst


def copy_runner(kiln_run, out):
    os.makedirs(os.path.join(out, "bin"), exist_ok=True)
    os.makedirs(os.path.join(out, "lib"), exist_ok=True)
    shutil.copy(kiln_run, os.path.join(out, "bin", "kiln-run"))
    ldd = subprocess.run(["ldd", kiln_run], capture_output=True, text=True).stdout
    keep_out = ("libc.so", "libm.so", "libstdc++", "libgcc_s", "ld-linux", "linux-vdso", "libpthread", "libdl")
    for line in ldd.splitlines():
        parts = line.split("=>")
        if len(parts) != 2:
            continue
        lib = parts[1].split("(")[0].strip()
        if lib and not any(k in lib for k in keep_out):
            shutil.copy(lib, os.path.join(out, "lib", os.path.basename(lib)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--kiln-run", default=os.path.join(ROOT, "build", "kiln-run"))
    ap.add_argument("--target", default="cuda-sm90")
    ap.add_argument("--out", default=os.path.join(ROOT, ".gpu"))
    ap.add_argument("--node-filter", default="")
    ap.add_argument("--no-node", action="store_true")
    ap.add_argument("--models", default="mobilenetv2,bert_encoder")
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "bench-models"))
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--part-mib", type=int, default=48, help="params.bin travels in parts of this size")
    ap.add_argument("--gpu-math", default="fp32", choices=("fp32", "tf32"),
                    help="tf32: compile with --gpu-math tf32 (tensor cores), compared with TF32's tolerance")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    copy_runner(a.kiln_run, a.out)
    if not a.no_node:
        tests = sorted(t for t in os.listdir(node_dir()) if a.node_filter in t)
        counts = {}
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            for test, status, why in ex.map(lambda t: prepare_node(a.kiln, a.target, t, a.out, a.gpu_math), tests):
                counts[status] = counts.get(status, 0) + 1
                if status == "fail":
                    print("FAIL %s: %s" % (test, why), flush=True)
        print("node suite for %s: %s" % (a.target, counts), flush=True)
    for name in filter(None, a.models.split(",")):
        for b in map(int, a.batches.split(",")):
            print("e2e:", prepare_model(a.kiln, a.target, os.path.join(a.model_dir, name + ".onnx"), name, b, a.out,
                                        a.part_mib << 20, a.gpu_math), flush=True)


if __name__ == "__main__":
    main()
