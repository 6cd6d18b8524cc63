#!/usr/bin/env bash
# make_sysroots.sh — the target C libraries the board runtimes link and run with:
# build-sysroot/<target>/ for aarch64, armv7 (hard-float) and riscv64, each a tree of
# Debian packages for that CPU (libc6, libarchive, cJSON, zlib and their run-time
# dependencies), extracted, never installed. scripts/setup.sh runs it.
#
# Why a tree of our own: the runtime links libarchive, cJSON and zlib, which Debian's
# cross toolchains do not carry, and `dpkg --add-architecture` does not work on this
# machine. mmdebstrap --variant=extract downloads a package set with dependencies
# through a private apt configuration (the machine's apt sources are never touched)
# and unpacks it; nothing is executed, so no emulation is needed.
#
# Which Debian: aarch64 and armv7 take Debian 12 (bookworm), the release of the cross
# compilers, so the libraries match their C library (glibc 2.36) and armhf's 32-bit
# time_t ABI exactly. Debian 12 has no riscv64 port; riscv64 takes "stable" (Debian 13,
# glibc 2.41): its libarchive needs glibc symbols newer than the cross C library's
# (__isoc23_strtol@GLIBC_2.38), so CMake links the riscv64 runtime with
# --allow-shlib-undefined, and at run time the tree's own glibc 2.41 serves both
# (programs linked against 2.36 run on 2.41). The exact package versions are written
# to build-sysroot/<target>/VERSIONS.
#
# What CMake uses (cmake/board.cmake): build-sysroot/<target>/kiln/include (archive.h,
# archive_entry.h, cJSON.h, zlib.h, zconf.h — only those: the tree's own libc headers
# must not shadow the cross compiler's) and kiln/lib (libarchive.so, libcjson.so,
# libz.so, resolved to the files inside the tree); the tree's lib folders for
# -rpath-link; and the tree itself as qemu's -L prefix:
#   qemu-aarch64 -L build-sysroot/aarch64 build/board-aarch64/kiln-run MODEL.kiln
#
# Idempotent: a tree whose stamp (.kiln-sysroot) matches this script is left alone,
# so with everything present this takes milliseconds. Needs root (mmdebstrap's root
# mode) and the network to deb.debian.org the first time.
#
# usage: scripts/make_sysroots.sh [TARGET...]   (default: aarch64 armv7 riscv64)
set -euo pipefail
cd "$(dirname "$0")/.."
root=build-sysroot
mirror=http://deb.debian.org/debian

# target, Debian architecture, multiarch triplet, suite
TABLE=(
  "aarch64 arm64 aarch64-linux-gnu bookworm"
  "armv7 armhf arm-linux-gnueabihf bookworm"
  "riscv64 riscv64 riscv64-linux-gnu stable"
)
PACKAGES=libc6,libarchive13,libcjson1,zlib1g,libarchive-dev,libcjson-dev,zlib1g-dev
HEADERS=(archive.h archive_entry.h cjson/cJSON.h zlib.h zconf.h)
LIBS=(archive cjson z)

key=$(cat "$0" | cksum)
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(aarch64 armv7 riscv64)

fail() { echo "make_sysroots: $*" >&2; exit 1; }

# A file of the tree named like /usr/lib/T/libz.so.1, following symlinks inside the
# tree (Debian's lib*.so links are absolute: /lib/T/libz.so.1.2.13).
resolve() {
  local tree=$1 p=$2 n=0
  while [ -L "$tree$p" ] && [ $n -lt 16 ]; do
    local l
    l=$(readlink "$tree$p")
    case $l in /*) p=$l ;; *) p=$(dirname "$p")/$l ;; esac
    n=$((n + 1))
  done
  [ -e "$tree$p" ] && echo "$tree$p"
}

need_tools() {
  type -P mmdebstrap >/dev/null || fail "mmdebstrap is not installed (it downloads the target libraries): install mmdebstrap"
  [ "$(id -u)" -eq 0 ] || fail "building $root/ needs root (mmdebstrap's root mode; run scripts/setup.sh as root)"
}

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9 # two setups at once build each tree once

for entry in "${TABLE[@]}"; do
  set -- $entry
  target=$1 arch=$2 triplet=$3 suite=$4
  case " ${want[*]} " in *" $target "*) ;; *) continue ;; esac
  dir=$root/$target
  if [ -f "$dir/.kiln-sysroot" ] && [ "$(cat "$dir/.kiln-sysroot")" = "$key" ]; then continue; fi
  need_tools
  echo "setup: downloading the $target ($arch, Debian $suite) C libraries into $dir/"
  tmp=$dir.tmp
  rm -rf "$tmp" "$dir"
  log=$root/$target.log
  # the extract hook runs while the downloaded .debs are still there: their names
  # (package_version_arch) are the record of what the tree holds
  if ! mmdebstrap --quiet --arch="$arch" --variant=extract --include="$PACKAGES" \
    --extract-hook='ls "$1/var/cache/apt/archives" | sed -n "s/%3a/:/; s/\.deb\$//p" | sort >"$1/VERSIONS"' \
    "$suite" "$tmp" "$mirror" >"$log" 2>&1; then
    fail "mmdebstrap could not fetch the $target libraries from $mirror ($(grep -m1 -E '^E:|rror' "$log" | cut -c1-160)); full log: $log"
  fi
  [ -s "$tmp/VERSIONS" ] || fail "$target: mmdebstrap extracted no packages (log: $log)"
  grep -q "^libarchive13" "$tmp/VERSIONS" || fail "$target: no libarchive13 among the extracted packages (log: $log)"
  rm -rf "$tmp/usr/share/doc" "$tmp/usr/share/man" "$tmp/usr/share/locale" \
    "$tmp/usr/share/info" "$tmp/usr/share/lintian"
  # merged /usr (Debian 13) without base-files: the dynamic loader's /lib path
  [ -e "$tmp/lib" ] || ln -s usr/lib "$tmp/lib"
  mkdir -p "$tmp/kiln/include" "$tmp/kiln/lib"
  for h in "${HEADERS[@]}"; do
    src=$(resolve "$tmp" "/usr/include/$h") || src=$(resolve "$tmp" "/usr/include/$triplet/$h") ||
      fail "$target: $h is missing from the extracted packages (see $tmp/VERSIONS)"
    cp "$src" "$tmp/kiln/include/$(basename "$h")"
  done
  for l in "${LIBS[@]}"; do
    src=$(resolve "$tmp" "/usr/lib/$triplet/lib$l.so") || src=$(resolve "$tmp" "/lib/$triplet/lib$l.so") ||
      fail "$target: lib$l.so is missing from the extracted packages (see $tmp/VERSIONS)"
    ln -s "$(realpath --relative-to="$tmp/kiln/lib" "$src")" "$tmp/kiln/lib/lib$l.so"
  done
  echo "$key" >"$tmp/.kiln-sysroot"
  mv "$tmp" "$dir"
  rm -f "$log"
done
