#!/usr/bin/env python3
"""compare.py — runs what tests/gpu/prepare.py built on a GPU machine and compares.

Needs python3 with numpy and nothing else (the GPU machines have no onnx). For every
node/<test>/ and e2e/<model>/ folder under --gpu-dir: `kiln-run model.kiln --input
NAME=in/NAME.npy ... --output-dir OUT` on the GPU, then each output against
want/<k>_<NAME>.npy: floats within atol + rtol·|want| (rtol 1e-3, atol 1e-5, as
`kiln check`; e2e models against ONNX Runtime CPU: rtol 1e-3, atol 1e-4), integers
and bools exactly, NaN where the reference has NaN. Node tests run --jobs at a
time (each process opens its own CUDA context). e2e models are then timed with
--repeat R (median). A folder with a tolerance.json (prepare.py --gpu-math tf32) is
compared with its rtol and atol instead. Writes results.txt and summary.json into --out; exit 0 when
everything matched.
"""
import argparse, concurrent.futures as cf, json, os, subprocess, sys, time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import travel  # noqa: E402


def run_bundle(kiln_run, d, outdir, repeat=1, timeout=300, extra=()):
    cmd = [kiln_run, os.path.join(d, "model.kiln"), "--output-dir", outdir, "--repeat", str(repeat)] + list(extra)
    for name, path in travel.read_inputs(os.path.join(d, "in")).items():
        cmd += ["--input", "%s=%s" % (name, path)]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timeout after %ds" % timeout, time.time() - t0
    msg = (p.stdout + p.stderr).strip()
    return p.returncode == 0, msg, time.time() - t0


def compare(d, outdir, rtol, atol):
    tol = os.path.join(d, "tolerance.json")
    if os.path.exists(tol):  # --gpu-math tf32 bundles: TF32's tolerance (prepare.py)
        with open(tol) as f:
            t = json.load(f)
        rtol, atol = t["rtol"], t["atol"]
    worst = 0.0
    for f in sorted(os.listdir(os.path.join(d, "want"))):
        k, name = f[:-4].replace("%2F", "/").split("_", 1)
        want = np.load(os.path.join(d, "want", f))
        path = os.path.join(outdir, name.replace("/", "_") + ".npy")
        if not os.path.exists(path):
            return False, "output %s missing" % name, worst
        got = np.load(path)
        if got.shape != want.shape:
            return False, "output %s: shape %s, want %s" % (name, got.shape, want.shape), worst
        if want.dtype.kind in "fc":
            w, g = want.astype(np.float64), got.astype(np.float64)
            nan = np.isnan(w)
            if not np.array_equal(nan, np.isnan(g)):
                return False, "output %s: NaN positions differ" % name, worst
            w, g = w[~nan], g[~nan]
            inf = np.isinf(w)
            if not np.array_equal(w[inf], g[inf]):
                return False, "output %s: infinities differ" % name, worst
            w, g = w[~inf], g[~inf]
            if w.size:
                diff = np.abs(g - w)
                worst = max(worst, float(diff.max()))
                bad = diff > atol + rtol * np.abs(w)
                if bad.any():
                    i = int(np.argmax(bad))
                    return False, "output %s: %d of %d differ (first at %d: %r, want %r)" % (
                        name, int(bad.sum()), w.size, i, g[i], w[i]), worst
        elif not np.array_equal(got, want):
            return False, "output %s: integers differ" % name, worst
    return True, "", worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu-dir", default=".gpu")
    ap.add_argument("--out", default="/tmp/out-gpu")
    ap.add_argument("--work", default="/tmp/kiln-gpu-work", help="where the runs' outputs go")
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--only", default="", help="node,e2e (default both)")
    ap.add_argument("--e2e-filter", default="")
    ap.add_argument("--params", action="append", default=[], help="folders holding params parts (travel.py)")
    a = ap.parse_args()
    kiln_run = os.path.join(a.gpu_dir, "bin", "kiln-run")
    os.makedirs(a.out, exist_ok=True)
    res = open(os.path.join(a.out, "results.txt"), "w")
    summary = {"node": {"passed": 0, "failed": 0}, "e2e": {}}
    node = os.path.join(a.gpu_dir, "node")
    if os.path.isdir(node) and a.only in ("", "node"):
        tests = sorted(os.listdir(node))

        def one(t):
            d = os.path.join(node, t)
            od = os.path.join(a.work, "node", t)
            os.makedirs(od, exist_ok=True)
            ok, msg, secs = run_bundle(kiln_run, d, od)
            if ok:
                ok, msg, _ = compare(d, od, 1e-3, 1e-5)
            return t, ok, msg.splitlines()[-1] if msg else ""
        t0 = time.time()
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            for t, ok, msg in ex.map(one, tests):
                summary["node"]["passed" if ok else "failed"] += 1
                res.write("%s %s %s\n" % ("PASS" if ok else "FAIL", t, "" if ok else msg))
                if not ok:
                    print("FAIL %s: %s" % (t, msg), flush=True)
        summary["node"]["seconds"] = round(time.time() - t0, 1)
        print("node suite on the GPU: %(passed)d passed, %(failed)d failed" % summary["node"], flush=True)
    e2e = os.path.join(a.gpu_dir, "e2e")
    if os.path.isdir(e2e) and a.only in ("", "e2e"):
        for m in sorted(os.listdir(e2e)):
            d = os.path.join(e2e, m)
            if not os.path.isdir(d) or a.e2e_filter not in m:
                continue
            if not os.path.exists(os.path.join(d, "model.kiln")) and os.path.exists(os.path.join(d, "params.json")):
                why = travel.join_bundle(d, a.params + [os.path.join(a.gpu_dir, "params")])
                if why:
                    print("SKIP e2e %s: %s" % (m, why), flush=True)
                    continue
            od = os.path.join(a.work, "e2e", m)
            os.makedirs(od, exist_ok=True)
            ok, msg, _ = run_bundle(kiln_run, d, od)
            detail = msg
            if ok:
                ok, detail, worst = compare(d, od, 1e-3, 1e-4)
                timing = run_bundle(kiln_run, d, od, repeat=a.repeat, extra=["--profile"])[1] if ok else ""
            else:
                worst, timing = None, ""
            med = [l for l in timing.splitlines() if l.startswith("median")]
            summary["e2e"][m] = {"ok": ok, "detail": detail.splitlines()[-1] if detail else "", "max_abs_diff": worst,
                                 "timing": med[0] if med else "", "profile": [l for l in timing.splitlines() if l.startswith(" ") or l.startswith("profile")]}
            line = "%s e2e %s: %s %s" % ("PASS" if ok else "FAIL", m, summary["e2e"][m]["detail"], summary["e2e"][m]["timing"])
            print(line, flush=True)
            res.write(line + "\n")
            for l in summary["e2e"][m]["profile"]:
                res.write("    " + l + "\n")
    json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    failed = summary["node"]["failed"] + sum(1 for v in summary["e2e"].values() if not v["ok"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
