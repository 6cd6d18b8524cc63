"""travel.py — what lets large models reach a borrowed GPU machine, whose transfers
are capped (64 MiB a call): numpy and the standard library only, imported by
prepare.py (here) and compare.py (there).

- Inputs: a large float input travels as a recipe (in/NAME.gen.json) that both
  sides expand with integer arithmetic alone (a multiplicative hash of the element
  index, then a scale into [lo, hi)), so the two machines make the same bits.
- Weights: a bundle's params.bin travels once per model and content (batch 1 and 16
  share it unless a batch-dependent rewrite changed the weights), cut into parts that
  may go in different calls (params/<model>-<sha8>.bin.<k>); the rest
  of the bundle (manifest, plan, PTX) travels as files and is tarred back together
  there (the runtime takes a bundle's entries in any order).
"""
import hashlib, json, os, tarfile

import numpy as np

BIG = 1 << 20  # bytes: inputs above travel as recipes


def gen_input(spec):
    n = int(np.prod(spec["shape"], dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    h = (i * np.uint64(2654435761) + np.uint64(spec["seed"]) * np.uint64(97531)) % np.uint64(1 << 32)
    u = h.astype(np.float64) / float(1 << 32)
    return (spec["lo"] + (spec["hi"] - spec["lo"]) * u).astype(spec["dtype"]).reshape(spec["shape"])


def write_input(d, name, spec_or_array):
    base = os.path.join(d, name.replace("/", "%2F"))
    if isinstance(spec_or_array, dict):
        json.dump(spec_or_array, open(base + ".gen.json", "w"))
    else:
        np.save(base + ".npy", spec_or_array)


def read_inputs(d):
    """{name: path of a .npy}, expanding recipes into .npy files beside them."""
    out = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".gen.json"):
            name = f[: -len(".gen.json")]
            path = os.path.join(d, name + ".npy")
            if not os.path.exists(path):
                np.save(path, gen_input(json.load(open(os.path.join(d, f)))))
            out[name.replace("%2F", "/")] = path
        elif f.endswith(".npy") and not os.path.exists(os.path.join(d, f[:-4] + ".gen.json")):
            out[f[:-4].replace("%2F", "/")] = os.path.join(d, f)
    return out


def split_bundle(bundle, dst, params_dir, model, part_bytes):
    """bundle → dst/parts/* (every entry but params.bin) + params_dir/<model>-<sha8>.bin.<k>, once
    per distinct params.bin (batch 1 and 16 share it unless a batch-dependent rewrite, such as
    split-K at batch 1, changed the weights)."""
    os.makedirs(os.path.join(dst, "parts"), exist_ok=True)
    os.makedirs(params_dir, exist_ok=True)
    with tarfile.open(bundle) as t:
        for m in t.getmembers():
            data = t.extractfile(m).read()
            if m.name == "params.bin":
                digest = hashlib.sha256(data).hexdigest()
                model = "%s-%s" % (model, digest[:8])
                json.dump({"model": model, "sha256": digest, "bytes": len(data)},
                          open(os.path.join(dst, "params.json"), "w"))
                if not os.path.exists(os.path.join(params_dir, "%s.bin.0" % model)):
                    for k in range(0, max(1, (len(data) + part_bytes - 1) // part_bytes)):
                        open(os.path.join(params_dir, "%s.bin.%d" % (model, k)), "wb").write(
                            data[k * part_bytes:(k + 1) * part_bytes])
            else:
                p = os.path.join(dst, "parts", m.name.replace("/", "%2F"))
                open(p, "wb").write(data)
    os.remove(bundle)


def join_bundle(d, params_dirs):
    """dst/parts + the params parts found under params_dirs → d/model.kiln; None or why not."""
    meta = json.load(open(os.path.join(d, "params.json")))
    chunks, k = [], 0
    while True:
        found = [os.path.join(p, "%s.bin.%d" % (meta["model"], k)) for p in params_dirs]
        found = [f for f in found if os.path.exists(f)]
        if not found:
            break
        chunks.append(open(found[0], "rb").read())
        k += 1
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() != meta["sha256"]:
        return "params of %s incomplete (%d of %d bytes)" % (meta["model"], len(data), meta["bytes"])
    import io
    with tarfile.open(os.path.join(d, "model.kiln"), "w", format=tarfile.USTAR_FORMAT) as t:
        entries = [(f.replace("%2F", "/"), open(os.path.join(d, "parts", f), "rb").read())
                   for f in sorted(os.listdir(os.path.join(d, "parts")))] + [("params.bin", data)]
        for name, blob in entries:
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(blob))
    return None
