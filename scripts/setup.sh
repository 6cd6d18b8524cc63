#!/usr/bin/env bash
# setup.sh — installs what kiln needs on a fresh Debian machine, idempotently, then
# proves that it works.
#
# 1. The Debian packages of scripts/packages.txt — every package the build, the
#    tests and the benchmarks use, named there with what needs it — are installed
#    when missing (one dpkg-query), with --no-install-recommends: nothing may come
#    in only as a recommends, so the list has to be complete.
# 2. The Python virtualenv (.venv, used by tests and benchmarks only — the compiler
#    and runtime never need Python) is rebuilt only when the pinned requirements
#    change.
# 3. scripts/make_sysroots.sh extracts the Debian packages of the Linux board
#    targets' C libraries into build-sysroot/<target> (once; a stamp after that).
# 4. scripts/check_toolchains.sh compiles and links with every toolchain the way the
#    project does (the cross drivers with -shared -lm, clang with libFuzzer, ...)
#    and stops here, one line per problem naming the Debian package, when one
#    fails; it keeps a stamp, so with everything present this takes well under a
#    second.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t DEB_PKGS < <(sed 's/#.*//; s/[[:space:]]//g; /^$/d' scripts/packages.txt)

declare -A installed=()
while read -r pkg status; do # "NAME ii" for an installed package
  if [ "$status" = ii ]; then installed[$pkg]=1; fi
done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${DEB_PKGS[@]}" 2>/dev/null)
missing=()
for p in "${DEB_PKGS[@]}"; do [ -n "${installed[$p]:-}" ] || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

REQ=scripts/requirements.txt
STAMP=.venv/.kiln-requirements
if [ ! -x .venv/bin/python ] || ! cmp -s "$REQ" "$STAMP"; then
  echo "setup: creating .venv with $(tr '\n' ' ' < "$REQ")"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r "$REQ"
  cp "$REQ" "$STAMP"
fi

# The CUDA toolkit's parts the CUDA target needs at build and test time (no GPU, no
# driver): cuda.h (the runtime's Driver API types), libdevice (GPU math, linked into
# PTX) and ptxas (the tests assemble the PTX). The build machines have the toolkit in
# /usr/local/cuda; elsewhere NVIDIA's pinned wheels go into .venv, linked as .venv/cuda.
CUDA_REQ=scripts/requirements-cuda.txt
if [ ! -f /usr/local/cuda/include/cuda.h ] || [ ! -x /usr/local/cuda/bin/ptxas ] ||
   [ ! -f /usr/local/cuda/nvvm/libdevice/libdevice.10.bc ]; then
  if [ ! -L .venv/cuda ] || ! cmp -s "$CUDA_REQ" .venv/.kiln-requirements-cuda; then
    echo "setup: /usr/local/cuda lacks cuda.h, ptxas or libdevice: installing $(tr '\n' ' ' < "$CUDA_REQ")into .venv"
    .venv/bin/pip install -q --disable-pip-version-check -r "$CUDA_REQ"
    ln -sfn "$(.venv/bin/python -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')" .venv/cuda
    cp "$CUDA_REQ" .venv/.kiln-requirements-cuda
  fi
fi

# the Linux board targets' C libraries (libarchive, cJSON, zlib and glibc for aarch64,
# armv7, riscv64) in build-sysroot/<target>: downloaded once, then a stamp check
scripts/make_sysroots.sh

scripts/check_toolchains.sh
