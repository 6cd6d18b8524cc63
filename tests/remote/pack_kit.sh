#!/bin/bash
# pack_kit.sh — packs what kiln's release tests and the broad-model benchmark need on another
# x86-64 Linux machine that has no toolchain, no LLVM and no network (the borrowed machines of
# the device tool; any machine with a different CPU): the release build's kiln, kiln-run and
# unit-test binaries, the shared libraries they load (all but glibc's), and the onnx package's
# backend test data of the version pinned here, so the node suite is the one CI runs.
# tests/remote/run_kit.sh unpacks and runs it there. Code generated for `host` differs per
# CPU vendor and feature set: this is how the suite's result becomes known on another CPU.
# usage: tests/remote/pack_kit.sh [BUILD_DIR] [KIT_DIR]   (defaults: build, .kit)
set -eu
B=${1:-build}
K=${2:-.kit}
PY=${PY:-.venv/bin/python}
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
mkdir -p "$S/bin" "$S/lib" "$S/data" "$K"
# every program and shared library at the build folder's top (kiln, kiln-run, the test
# binaries and drivers, libkiln_runtime.so with its links, the fake CUDA driver)
find "$B" -maxdepth 1 \( -type f -executable -o -name 'lib*.so*' \) -exec cp -P {} "$S/bin/" \;
# every library the binaries load but glibc's own (the other machine has a glibc)
for f in "$S"/bin/*; do [ -L "$f" ] || ldd "$f" | awk '/=> \//{print $3}'; done | sort -u | while read -r l; do
  case $(basename "$l") in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*) ;;
    *) cp -L "$l" "$S/lib/" ;;
  esac
done
D=$("$PY" -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data'))")
cp -r "$D/node" "$D/light" "$S/data/"
"$PY" -c "import onnx; print(onnx.__version__)" >"$S/data/onnx_version"
git rev-parse --short HEAD >"$S/commit" 2>/dev/null || echo unknown >"$S/commit"
tar -cf - -C "$S" . | xz -T0 -9 >"$K/kit.tar.xz"
ls -la "$K/kit.tar.xz"
