"""test_setup.py — the setup's toolchain probe (scripts/check_toolchains.sh) and the
tests that need a tool say what is missing and which Debian package provides it,
so that a machine missing a package fails at once with one clear line instead of
a link error deep in a test.

- every package a probe message can name is in scripts/packages.txt, the list
  scripts/setup.sh installs;
- on this machine every check passes (what `make test` relies on: a machine that
  lacks a package fails here, as well as in setup);
- a machine without the aarch64 C library (libc6-dev-arm64-cross), played by a
  fake aarch64-linux-gnu-gcc first on PATH that compiles but fails to link with
  the linker's very output on such a machine: the probe fails with one line that
  names aarch64, crti.o / -lm and the package, and only that; test_cross (next
  to the kiln binary) fails naming the package too, without the linker's output;
- a machine without the riscv64 cross compiler (a PATH of every tool but it):
  the probe names gcc-riscv64-linux-gnu;
- a virtualenv without the pinned packages (a python that ignores site-packages):
  the probe names each module that does not import and how to rebuild .venv;
- the stamp: a second probe run is fast and quiet, and a changed PATH runs the
  checks again (the stamp does not hide the missing C library).
"""
import os
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(ROOT, "scripts", "check_toolchains.sh")
PACKAGES = os.path.join(ROOT, "scripts", "packages.txt")

# aarch64-linux-gnu-gcc as it behaves on a machine where gcc-aarch64-linux-gnu was
# installed without its recommends (no libc6-dev-arm64-cross): it compiles, and
# links fail with exactly these lines (seen on such a machine; the ld path is the
# real driver's). Compiling goes to the real driver when there is one.
FAKE_CROSS_GCC = r"""#!/bin/sh
for a in "$@"; do
  case $a in
    -c | -S | -E)
      if [ -x "{real}" ]; then exec "{real}" "$@"; fi
      out=""; prev=""
      for b in "$@"; do [ "$prev" = -o ] && out=$b; prev=$b; done
      [ -n "$out" ] && : >"$out"
      exit 0 ;;
  esac
done
ld=/usr/lib/gcc-cross/aarch64-linux-gnu/12/../../../../aarch64-linux-gnu/bin/ld
echo "$ld: cannot find crti.o: No such file or directory" >&2
echo "$ld: cannot find -lm: No such file or directory" >&2
echo "collect2: error: ld returned 1 exit status" >&2
exit 1
"""


def run(argv, env=None, timeout=120):
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                       timeout=timeout, cwd=ROOT)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), \
        time.monotonic() - t0


def which(name, path):
    for d in path.split(os.pathsep):
        f = os.path.join(d, name)
        if d and os.path.isfile(f) and os.access(f, os.X_OK):
            return f
    return None


def write_exe(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def env_with(**kw):
    env = dict(os.environ)
    env.update(kw)
    return env


def problem_lines(err):
    """The probe's one-line-per-problem messages (its closing line left out)."""
    return [l for l in err.splitlines() if l.startswith("check_toolchains: ") and " problem(s) in " not in l]


def main():
    args = util.parse_args(__doc__)
    c = util.Checks("test_setup")
    tmp = tempfile.mkdtemp(prefix="kiln-test-setup-")
    path = os.environ.get("PATH", "")

    # --- the probe names only packages that setup installs ---
    rc, out, err, _ = run([PROBE, "--list-packages"])
    listed = set()
    with open(PACKAGES) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                listed.add(line)
    named = set(out.split())
    c.check(rc == 0 and named, "check_toolchains.sh --list-packages: exit %d, %r" % (rc, err.strip()))
    c.check(named <= listed, "packages the probe names but scripts/packages.txt lacks: %s" % sorted(named - listed))
    with open(os.path.join(ROOT, "scripts", "setup.sh")) as f:
        setup = f.read()
    c.check("scripts/packages.txt" in setup and "scripts/check_toolchains.sh" in setup,
            "scripts/setup.sh installs scripts/packages.txt and ends with scripts/check_toolchains.sh")

    # --- this machine: every toolchain works ---
    rc, out, err, secs = run([PROBE, "--no-stamp"])
    c.check(rc == 0 and not out and not err,
            "check_toolchains.sh on this machine: exit %d (%.1f s)\n%s" % (rc, secs, (out + err).strip()))
    if args.verbose:
        print("full probe: %.2f s" % secs)

    # --- no aarch64 C library ---
    fake = os.path.join(tmp, "no-arm64-libc")
    os.mkdir(fake)
    real = which("aarch64-linux-gnu-gcc", path) or "/nonexistent"
    write_exe(os.path.join(fake, "aarch64-linux-gnu-gcc"), FAKE_CROSS_GCC.replace("{real}", real))
    no_libc = env_with(PATH=fake + os.pathsep + path)
    rc, out, err, _ = run([PROBE, "--no-stamp"], env=no_libc)
    lines = problem_lines(err)
    c.check(rc == 1, "probe without the aarch64 C library: exit %d, want 1" % rc)
    c.check(len(lines) == 1 and lines[0].startswith("check_toolchains: aarch64: ")
            and "libc6-dev-arm64-cross" in lines[0] and "crti.o" in lines[0] and "-lm" in lines[0],
            "probe without the aarch64 C library: want one line naming aarch64, crti.o, -lm and "
            "libc6-dev-arm64-cross, got:\n%s" % err.strip())
    c.check("collect2" not in err and "No such file" not in err,
            "the probe repeats the linker's output instead of saying what is missing:\n%s" % err.strip())
    c.check(not out, "the probe writes to stdout: %r" % out)

    test_cross = os.path.join(os.path.dirname(os.path.abspath(args.kiln)), "test_cross")
    if c.check(os.access(test_cross, os.X_OK), "no test_cross next to %s" % args.kiln):
        rc, out, err, _ = run([test_cross], env=no_libc)
        both = out + err
        c.check(rc != 0, "test_cross passes without the aarch64 C library")
        c.check("aarch64: aarch64-linux-gnu-gcc cannot link" in both and "libc6-dev-arm64-cross" in both,
                "test_cross without the aarch64 C library does not name libc6-dev-arm64-cross:\n%s" % both[-2000:])
        c.check("collect2" not in both, "test_cross prints the linker's raw output:\n%s" % both[-2000:])
        c.check(both.count("FAIL ") == 1, "test_cross: want exactly one failure (aarch64's link), got:\n%s"
                % both[-2000:])

    # --- no riscv64 cross compiler: a PATH with every tool but it ---
    bare = os.path.join(tmp, "no-riscv64-gcc")
    os.mkdir(bare)
    for d in path.split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            dst = os.path.join(bare, name)
            if name == "riscv64-linux-gnu-gcc" or os.path.lexists(dst):
                continue
            src = os.path.join(d, name)
            if os.path.isfile(src) and os.access(src, os.X_OK):
                os.symlink(src, dst)
    rc, out, err, _ = run([PROBE, "--no-stamp"], env=env_with(PATH=bare))
    lines = problem_lines(err)
    c.check(rc == 1 and len(lines) == 1 and lines[0].startswith("check_toolchains: riscv64: ")
            and "gcc-riscv64-linux-gnu" in lines[0],
            "probe without riscv64-linux-gnu-gcc: want one line naming gcc-riscv64-linux-gnu, got exit %d:\n%s"
            % (rc, err.strip()))

    # --- a virtualenv without the pinned packages ---
    venv = os.path.join(tmp, "venv")
    os.makedirs(os.path.join(venv, "bin"))
    python3 = which("python3", "/usr/bin" + os.pathsep + path)
    write_exe(os.path.join(venv, "bin", "python"), '#!/bin/sh\nexec %s -I -S "$@"\n' % python3)
    rc, out, err, _ = run([PROBE, "--no-stamp"], env=env_with(KILN_VENV=venv))
    lines = problem_lines(err)
    pinned = ["onnx", "onnxruntime", "numpy", "scikit_build_core", "pytest"]  # scripts/requirements.txt
    mods = [m for m in pinned if any("cannot import %s " % m in l for l in lines)]
    c.check(rc == 1 and len(lines) == len(pinned) and mods == pinned
            and all(l.startswith("check_toolchains: venv: ") and "scripts/setup.sh" in l for l in lines),
            "probe with an empty virtualenv: want one line per module (%s), got exit %d:\n%s"
            % (", ".join(pinned), rc, err.strip()))

    # --- the stamp ---
    stamp = os.path.join(tmp, "stamp")
    with_stamp = env_with(KILN_TOOLCHAIN_STAMP=stamp)
    rc1, _, err1, t1 = run([PROBE], env=with_stamp)
    rc2, out2, err2, t2 = run([PROBE], env=with_stamp)
    if args.verbose:
        print("probe with a stamp: first %.2f s, then %.3f s" % (t1, t2))
    c.check(rc1 == 0 and os.path.isfile(stamp), "the probe wrote no stamp (exit %d): %s" % (rc1, err1.strip()))
    c.check(rc2 == 0 and not out2 and not err2 and t2 < 2.0,
            "second probe run with the stamp: exit %d in %.2f s (want 0, quiet, well under a second): %s"
            % (rc2, t2, err2.strip()))
    rc3, _, err3, _ = run([PROBE], env=dict(with_stamp, PATH=no_libc["PATH"]))
    c.check(rc3 == 1 and "libc6-dev-arm64-cross" in err3,
            "with the stamp, a PATH without the aarch64 C library still fails (exit %d): %s" % (rc3, err3.strip()))

    subprocess.run(["rm", "-rf", tmp])
    c.finish()


if __name__ == "__main__":
    main()
