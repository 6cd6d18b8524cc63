#!/usr/bin/env bash
# setup.sh — installs what kiln needs on a fresh Debian machine, idempotently.
#
# Debian packages are installed only when missing (dpkg-query), and the Python
# virtualenv (.venv, used by tests and benchmarks only — the compiler and runtime
# never need Python) is rebuilt only when the pinned requirements change. With
# everything present this takes well under a second.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PKGS=(
  build-essential cmake pkg-config python3 python3-venv
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev
  llvm-19-dev libcjson-dev libarchive-dev zlib1g-dev libxgboost-dev
  clang libclang-rt-14-dev
  gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf gcc-riscv64-linux-gnu
)

missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
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
