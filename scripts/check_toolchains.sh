#!/usr/bin/env bash
# check_toolchains.sh — proves that the tools kiln's build and tests use work on
# this machine, so that a missing piece stops `make` right away with one line naming
# it and the Debian package that provides it, instead of a link error deep in a
# test. scripts/setup.sh runs it after installing scripts/packages.txt.
#
# Each check does what the project does:
#   host         cc compiles a tiny C file (-fPIC) and links it the way pack/link.c
#                and test_cross do: cc -shared -Wl,--no-undefined -o k.so k.o -lm
#   asan         cc links a program with -fsanitize=address,undefined (make test-asan)
#   aarch64, armv7, riscv64
#                the Debian cross driver compiles the same file and links it the
#                same way (pack/link.c runs exactly these drivers with -shared -lm)
#   fuzzer       clang links a libFuzzer target with -fsanitize=fuzzer,address,undefined
#   llvm         /usr/lib/llvm-19/bin/llvm-config (what CMake asks; llvm-config-19):
#                version 19, the C API headers, libLLVM
#   protoc-c     protoc-c runs and Debian's onnx.proto is where CMake looks
#   pkg-config   libprotobuf-c, libarchive, libcjson, zlib, xgboost (the tuner's cost models)
#   tools        cmake 3.20 or newer, make, file, each cross target's nm, Graphviz's dot
#                (kiln inspect --svg)
#   boards       for aarch64, armv7 and riscv64: qemu-user's qemu-aarch64 / qemu-arm /
#                qemu-riscv64 run a program that the cross driver linked against the
#                target's libarchive, cJSON and zlib in build-sysroot/<target> (made by
#                scripts/make_sysroots.sh), as cmake/board.cmake links kiln-run and
#                tests/py/test_boards.py runs it
#   cortex-m     arm-none-eabi-gcc links a hard-float Cortex-M4 program against newlib's
#                libm (as test_cortex_m builds the --aot projects); qemu-system-arm
#                knows the mps2-an386, mps2-an500 and mps3-an547 boards
#   venv         python3 can make a virtualenv; .venv/bin/python imports onnx,
#                onnxruntime, numpy, scikit-build-core and pytest at the versions pinned
#                in scripts/requirements.txt, and has its C headers (Python.h: the Python
#                package's extension, python/, is built against them)
#
# usage: scripts/check_toolchains.sh [--no-stamp] [--list-packages]
#
# Exit status 0 when every check passes (nothing printed); 1 otherwise, with one
# line per failed check on stderr,
#   check_toolchains: CHECK: what is missing: install PACKAGE
# and a closing line. --list-packages prints every package a message can name.
#
# When every check passes it writes a stamp ($KILN_VENV/.kiln-toolchains) keyed on
# the installed versions of scripts/packages.txt, scripts/requirements.txt, this
# script and where PATH finds each tool; while the key is unchanged the checks do
# not run again (milliseconds instead of about a second). --no-stamp runs every
# check and neither reads nor writes the stamp.
#
# Environment: KILN_VENV, the virtualenv to check (default .venv);
# KILN_TOOLCHAIN_STAMP, the stamp file.
set -uo pipefail
export LC_ALL=C # the linker's messages are parsed below
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

use_stamp=1
for a in "$@"; do
  case $a in
    --no-stamp) use_stamp=0 ;;
    --list-packages) list_packages=1 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--no-stamp] [--list-packages]" >&2; exit 2 ;;
  esac
done
venv=${KILN_VENV:-.venv}
stamp=${KILN_TOOLCHAIN_STAMP:-$venv/.kiln-toolchains}

# target, cross driver (pack/link.c's driver_for), its package, the C library's package
CROSS=(
  "aarch64 aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu"
  "armv7 arm-linux-gnueabihf-gcc gcc-arm-linux-gnueabihf libc6-dev-armhf-cross binutils-arm-linux-gnueabihf"
  "riscv64 riscv64-linux-gnu-gcc gcc-riscv64-linux-gnu libc6-dev-riscv64-cross binutils-riscv64-linux-gnu"
)
LLVM_CONFIG=/usr/lib/llvm-19/bin/llvm-config
ONNX_PROTO=/usr/include/onnx/onnx.proto
# pkg-config module and its package
PC_MODULES=("libprotobuf-c libprotobuf-c-dev" "libarchive libarchive-dev" "libcjson libcjson-dev" "zlib zlib1g-dev"
  "xgboost libxgboost-dev")

major() { "$1" -dumpversion 2>/dev/null | cut -d. -f1; }
gcc_rt_pkg() { echo "libgcc-$(major cc)-dev"; }     # gcc's libasan.so / libubsan.so
clang_rt_pkg() { echo "libclang-rt-$(major clang)-dev"; } # libFuzzer and clang's sanitizers

# target, its qemu-user binary, its multiarch triplet (Linux boards)
BOARDS=("aarch64 qemu-aarch64 aarch64-linux-gnu" "armv7 qemu-arm arm-linux-gnueabihf" "riscv64 qemu-riscv64 riscv64-linux-gnu")

if [ -n "${list_packages:-}" ]; then
  echo gcc libc6-dev make cmake pkg-config file "$(gcc_rt_pkg)" clang "$(clang_rt_pkg)" llvm-19-dev \
    protobuf-c-compiler libonnx-dev python3 python3-venv python3-dev qemu-user mmdebstrap gcc-arm-none-eabi \
    binutils-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm graphviz | tr ' ' '\n'
  for c in "${CROSS[@]}"; do set -- $c; printf '%s\n%s\n%s\n' "$3" "$4" "$5"; done
  for m in "${PC_MODULES[@]}"; do set -- $m; echo "$2"; done
  exit 0
fi

# --- the stamp: nothing to do while nothing it depends on changed ---
key() {
  dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\n' $(sed 's/#.*//' scripts/packages.txt) 2>&1
  cat "$0" scripts/packages.txt scripts/requirements.txt "$venv/.kiln-requirements" 2>&1
  for t in cc clang python3 protoc-c pkg-config cmake make file arm-none-eabi-gcc qemu-system-arm dot; do
    echo "$t=$(type -P "$t")"
  done
  for c in "${CROSS[@]}"; do set -- $c; echo "$2=$(type -P "$2")"; done
  for b in "${BOARDS[@]}"; do set -- $b; echo "$2=$(type -P "$2") $(cat "build-sysroot/$1/.kiln-sysroot" 2>&1)"; done
  echo "venv=$venv $(stat -c %Y "$venv"/lib/python3*/site-packages 2>&1)"
}
if [ $use_stamp = 1 ]; then
  k=$(key | cksum)
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$k" ] && exit 0
fi

tmp=$(mktemp -d /tmp/kiln-toolchains-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=()
checks=0
fail() { fails+=("check_toolchains: $1"); }

# What the linker could not find ("crti.o, -lm"), or the first error line.
missing_pieces() { grep -o 'cannot find [^ :]*' "$1" | sed 's/cannot find //' | awk '!seen[$0]++' | paste -sd, - | sed 's/,/, /g'; }
first_error() { (grep -m1 -i 'error\|cannot\|undefined' "$1" || head -1 "$1") | sed 's/^[^ ]*\/\([^/ ]*:\)/\1/' | cut -c1-200; }

# A kernel's needs from the C library, without any header: a libm call.
cat >"$tmp/k.c" <<'EOF'
float expf(float);
float kiln_probe(float x) { return expf(x); }
EOF

# link_check NAME DRIVER DRIVER_PKG LIBC_PKG: compile k.c, link k.so as pack/link.c does
linked=() # the targets whose driver links
link_check() {
  local name=$1 drv=$2 drv_pkg=$3 libc_pkg=$4 log="$tmp/$1.log"
  checks=$((checks + 1))
  if ! type -P "$drv" >/dev/null; then
    fail "$name: the C compiler $drv is not installed: install $drv_pkg"
    return
  fi
  if ! "$drv" -c -fPIC -O2 -o "$tmp/$name.o" "$tmp/k.c" >"$log" 2>&1; then
    fail "$name: $drv cannot compile C ($(first_error "$log")): reinstall $drv_pkg"
    return
  fi
  if ! "$drv" -shared -Wl,--no-undefined -o "$tmp/$name.so" "$tmp/$name.o" -lm >"$log" 2>&1; then
    local m
    m=$(missing_pieces "$log")
    if [ -n "$m" ]; then
      fail "$name: $drv cannot link a shared library with -lm (ld: cannot find $m): the $name C library is missing: install $libc_pkg"
    else
      fail "$name: $drv -shared -lm failed ($(first_error "$log")): the $name C library comes with $libc_pkg"
    fi
    return
  fi
  linked+=("$name")
}

# --- host and cross C toolchains ---
link_check host cc gcc libc6-dev
for c in "${CROSS[@]}"; do
  set -- $c
  link_check "$1" "$2" "$3" "$4"
done

checks=$((checks + 1))
if type -P cc >/dev/null; then
  echo 'int main(void) { return 0; }' >"$tmp/main.c"
  if ! cc -fsanitize=address,undefined -o "$tmp/asan" "$tmp/main.c" >"$tmp/asan.log" 2>&1; then
    m=$(missing_pieces "$tmp/asan.log")
    fail "asan: cc -fsanitize=address,undefined cannot link (${m:+ld: cannot find }${m:-$(first_error "$tmp/asan.log")}): install $(gcc_rt_pkg)"
  fi
fi # no cc: said above

checks=$((checks + 1))
if ! type -P clang >/dev/null; then
  fail "fuzzer: clang is not installed (make fuzz builds with CC=clang): install clang and libclang-rt-14-dev"
else
  echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$tmp/fuzz.c"
  if ! clang -fsanitize=fuzzer,address,undefined -o "$tmp/fuzz" "$tmp/fuzz.c" >"$tmp/fuzz.log" 2>&1; then
    m=$(missing_pieces "$tmp/fuzz.log")
    fail "fuzzer: clang -fsanitize=fuzzer cannot link (${m:+ld: cannot find }${m:-$(first_error "$tmp/fuzz.log")}): libFuzzer and clang's sanitizer runtimes come with $(clang_rt_pkg)"
  fi
fi

# --- Linux boards: a program linked against the target's libraries runs under qemu ---
cat >"$tmp/board.c" <<'EOF'
#include <archive.h>
#include <cJSON.h>
#include <stdio.h>
#include <zlib.h>
int main(void) {
  struct archive *a = archive_read_new();
  cJSON *j = cJSON_Parse("[7]");
  int ok = a && j && cJSON_GetArraySize(j) == 1 && crc32(0L, (const unsigned char *)"a", 1) == 0xe8b7be43UL;
  archive_read_free(a);
  cJSON_Delete(j);
  puts(ok ? "kiln-board-ok" : "wrong");
  return !ok;
}
EOF
for b in "${BOARDS[@]}"; do
  set -- $b
  target=$1 qemu=$2 triplet=$3 tree=build-sysroot/$1 log="$tmp/board-$1.log"
  case " ${linked[*]} " in *" $target "*) ;; *) continue ;; esac # the driver's problem is said above
  checks=$((checks + 1))
  if ! type -P "$qemu" >/dev/null; then
    fail "boards: $qemu (runs the $target kiln-run in test_boards) is not installed: install qemu-user"
    continue
  fi
  if [ ! -f "$tree/.kiln-sysroot" ]; then
    fail "boards: $tree (the $target libarchive, cJSON and zlib) is missing: run scripts/make_sysroots.sh (needs mmdebstrap)"
    continue
  fi
  extra=""
  [ "$target" = riscv64 ] && extra=-Wl,--allow-shlib-undefined # see cmake/board.cmake
  drv=$triplet-gcc
  if ! "$drv" -I"$tree/kiln/include" -o "$tmp/board-$target" "$tmp/board.c" "$tree"/kiln/lib/lib{archive,cjson,z}.so \
    -Wl,-rpath-link,"$tree/usr/lib/$triplet" -Wl,-rpath-link,"$tree/lib/$triplet" $extra >"$log" 2>&1; then
    fail "boards: $drv cannot link against $tree ($(first_error "$log")): remove $tree and run scripts/make_sysroots.sh"
  elif [ "$("$qemu" -L "$tree" "$tmp/board-$target" 2>"$log")" != kiln-board-ok ]; then
    fail "boards: $qemu -L $tree cannot run a $target program ($(first_error "$log")): remove $tree and run scripts/make_sysroots.sh"
  fi
done

# --- bare-metal Cortex-M: the cross compiler with newlib, the board models ---
checks=$((checks + 1))
if ! type -P arm-none-eabi-gcc >/dev/null; then
  fail "cortex-m: arm-none-eabi-gcc (builds the --aot projects in test_cortex_m) is not installed: install gcc-arm-none-eabi"
else
  cat >"$tmp/m4.c" <<'EOF'
float expf(float);
void *memcpy(void *, const void *, unsigned);
float kiln_probe(float x, float *d, const float *s) { memcpy(d, s, 4); return expf(x); }
void kiln_start(void) { float d, s = 1; kiln_probe(0.5f, &d, &s); for (;;) {} }
EOF
  if ! arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -O2 -nostartfiles -e kiln_start \
    -o "$tmp/m4.elf" "$tmp/m4.c" -lm -lc >"$tmp/m4.log" 2>&1; then
    m=$(missing_pieces "$tmp/m4.log")
    fail "cortex-m: arm-none-eabi-gcc cannot link a Cortex-M4 program with -lm (${m:+ld: cannot find }${m:-$(first_error "$tmp/m4.log")}): newlib comes with libnewlib-arm-none-eabi"
  fi
fi
type -P arm-none-eabi-nm >/dev/null ||
  fail "cortex-m: arm-none-eabi-nm (test_cortex_m reads the images' symbols) is not installed: install binutils-arm-none-eabi"
checks=$((checks + 1))
if ! type -P qemu-system-arm >/dev/null; then
  fail "cortex-m: qemu-system-arm (runs the Cortex-M images in test_cortex_m) is not installed: install qemu-system-arm"
else
  machines=$(qemu-system-arm -machine help 2>&1)
  for b in mps2-an386 mps2-an500 mps3-an547; do
    grep -q "^$b " <<<"$machines" || fail "cortex-m: qemu-system-arm has no board model $b (QEMU 7.2 or newer has): install qemu-system-arm"
  done
fi

# --- LLVM, protobuf-c, the libraries CMake finds with pkg-config ---
checks=$((checks + 1))
if [ ! -x $LLVM_CONFIG ]; then
  fail "llvm: $LLVM_CONFIG (llvm-config-19) is missing: install llvm-19-dev"
else
  v=$($LLVM_CONFIG --version 2>&1)
  inc=$($LLVM_CONFIG --includedir 2>/dev/null)
  lib=$($LLVM_CONFIG --libdir 2>/dev/null)
  if [ "${v%%.*}" != 19 ]; then
    fail "llvm: $LLVM_CONFIG says version '$v', kiln needs LLVM 19: install llvm-19-dev"
  elif [ ! -f "$inc/llvm-c/Core.h" ]; then
    fail "llvm: LLVM's C API headers ($inc/llvm-c/Core.h) are missing: install llvm-19-dev"
  elif [ ! -e "$lib/libLLVM-19.so" ] && [ ! -e "$lib/libLLVM.so" ]; then
    fail "llvm: libLLVM-19.so is missing from $lib: install llvm-19-dev"
  fi
fi

checks=$((checks + 1))
if ! protoc-c --version >/dev/null 2>&1; then
  fail "protoc-c: protoc-c (onnx.proto -> C at build time) does not run: install protobuf-c-compiler"
elif [ ! -f $ONNX_PROTO ]; then
  fail "protoc-c: $ONNX_PROTO (the importer's schema) is missing: install libonnx-dev"
fi

checks=$((checks + 1))
if ! type -P pkg-config >/dev/null; then
  fail "pkg-config: pkg-config (CMake finds the libraries with it) is not installed: install pkg-config"
else
  for m in "${PC_MODULES[@]}"; do
    set -- $m
    pkg-config --exists "$1" || fail "pkg-config: the library $1 is not installed (pkg-config --exists $1): install $2"
  done
fi

checks=$((checks + 1))
cv=$(cmake --version 2>/dev/null | head -1 | grep -o '[0-9][0-9.]*')
if [ -z "$cv" ]; then
  fail "tools: cmake is not installed: install cmake"
elif [ "$(printf '3.20\n%s\n' "$cv" | sort -V | head -1)" != 3.20 ]; then
  fail "tools: cmake $cv is older than 3.20 (CMakeLists.txt): install a newer cmake"
fi
type -P make >/dev/null || fail "tools: make is not installed: install make"
type -P file >/dev/null || fail "tools: file (test_cross checks each library with it) is not installed: install file"
type -P dot >/dev/null || fail "tools: Graphviz's dot (kiln inspect --svg) is not installed: install graphviz"
for c in "${CROSS[@]}"; do
  set -- $c
  nm=${2%-gcc}-nm
  type -P "$nm" >/dev/null || fail "tools: $nm (test_cross reads the $1 library's symbols) is not installed: install $5"
done

# --- Python: the virtualenv the tests and benchmarks run in ---
checks=$((checks + 1))
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  fail "venv: python3 cannot make a virtualenv (no ensurepip): install python3-venv (and python3)"
elif [ ! -x "$venv/bin/python" ]; then
  fail "venv: $venv/bin/python is missing: run scripts/setup.sh (it creates $venv from scripts/requirements.txt)"
else
  out=$("$venv/bin/python" - scripts/requirements.txt 2>&1 <<'EOF'
import importlib, importlib.metadata, sys
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if "==" not in line:
        continue
    name, want = (s.strip() for s in line.split("=="))
    mod = name.replace("-", "_")
    try:
        importlib.import_module(mod)
    except Exception as e:
        print("cannot import %s (%s: %s)" % (mod, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        continue
    have = importlib.metadata.version(name)
    if have != want:
        print("has %s %s, scripts/requirements.txt pins %s" % (name, have, want))
EOF
  )
  if [ -n "$out" ]; then
    while IFS= read -r l; do
      fail "venv: $venv/bin/python $l: rebuild it (rm -rf $venv && scripts/setup.sh)"
    done <<<"$out"
  fi
  inc=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
  if [ ! -f "$inc/Python.h" ]; then
    fail "venv: $venv/bin/python has no C headers ($inc/Python.h; the Python package python/ is built against them): install python3-dev"
  fi
fi

if [ ${#fails[@]} -gt 0 ]; then
  printf '%s\n' "${fails[@]}" >&2
  echo "check_toolchains: ${#fails[@]} problem(s) in $checks checks; scripts/setup.sh installs every package in scripts/packages.txt" >&2
  exit 1
fi
if [ $use_stamp = 1 ] && [ -d "$(dirname "$stamp")" ]; then
  echo "$k" >"$stamp"
fi
exit 0
