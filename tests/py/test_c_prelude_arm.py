"""test_c_prelude_arm.py — the C backend's packed 4-way dot products (c_prelude.h) on
both of their branches: tests/unit/dot4_prelude_check.c built for armv7-a with
Debian's arm-linux-gnueabihf-gcc (the SIMD32 branch: SMLAD, UXTB16, SXTB16 — as on
Cortex-M4/M7/M55) and run under qemu-arm, and built for the host with cc (the plain
branch); each compares the packed helpers with kc_dot4 on 200000 seeded quads. The
ARM build must really take the SIMD32 branch (it prints "simd32"); a missing cross
compiler or emulator fails naming its Debian package.

Options: --kiln PATH (unused: the check needs only the sources). Closing line:
test_c_prelude_arm: N passed, M failed.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import util  # noqa: E402

SRC = os.path.join(ROOT, "tests", "unit", "dot4_prelude_check.c")
INC = ["-I", os.path.join(ROOT, "targets", "c"), "-I", os.path.join(ROOT, "runtime")]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", default="")
    ap.parse_args()
    checks = util.Checks("test_c_prelude_arm")
    with tempfile.TemporaryDirectory(prefix="kiln_prelude_") as d:
        for cc, pkg in (("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf"), ("qemu-arm", "qemu-user")):
            checks.check(shutil.which(cc) is not None, "%s not found (Debian package %s)" % (cc, pkg))
        arm = os.path.join(d, "check_arm")
        p = subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", "-march=armv7-a", "-mfpu=vfpv3-d16", "-static", "-Wall", "-Wextra",
                            "-Werror"] + INC + [SRC, "-o", arm], capture_output=True, text=True)
        if checks.check(p.returncode == 0, "armv7-a build: %s" % p.stderr[-1000:]):
            r = subprocess.run(["qemu-arm", arm], capture_output=True, text=True, timeout=300)
            checks.check(r.returncode == 0 and r.stdout.strip() == "simd32 bad 0",
                         "armv7-a (SIMD32 branch) under qemu-arm: exit %s, %r" % (r.returncode, r.stdout + r.stderr))
        host = os.path.join(d, "check_host")
        p = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror"] + INC + [SRC, "-o", host],
                           capture_output=True, text=True)
        if checks.check(p.returncode == 0, "host build: %s" % p.stderr[-1000:]):
            r = subprocess.run([host], capture_output=True, text=True, timeout=300)
            checks.check(r.returncode == 0 and r.stdout.strip() == "bad 0",
                         "host (plain branch): exit %s, %r" % (r.returncode, r.stdout + r.stderr))
    checks.finish()


if __name__ == "__main__":
    main()
