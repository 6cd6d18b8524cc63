#!/bin/bash
# run_kit.sh — on another x86-64 Linux machine, from a copy of the repository with the kit
# that tests/remote/pack_kit.sh made in .kit/: the release suite's tests that need no cross
# toolchain (the same commands ctest runs in `make test`: unit binaries, Python tests,
# conformance on host, C and the CUDA emulation, test_ops on every x86-64 level), in parallel,
# then the broad-model benchmark (bench/models.py, kiln and ONNX Runtime alternating, 2
# threads). Any python3 there with onnx, onnxruntime and numpy runs the Python side (their
# versions are reported: they may differ from the pinned ones). Results in $OUT (default
# /tmp/out-kit): machine.txt, tests.txt (one line per test), broad.txt, logs.tar.gz.
# usage: tests/remote/run_kit.sh [TEST_SECONDS] [BENCH_SECONDS] [JOBS] [NAME_REGEX] [BENCH_MODELS]
set -u
TS=${1:-300}
BS=${2:-180}
J=${3:-$(( $(nproc) > 4 ? $(nproc) / 2 : 2 ))}
ONLY=${4:-.}
BM=${5:-}
K=.kit
O=${OUT:-/tmp/out-kit}
mkdir -p "$O" /tmp/kit-logs build
tar -xJf "$K/kit.tar.xz" -C "$K" || exit 1
cp -P "$K"/bin/* build/
# a library the machine has itself (same soname: libstdc++, libz, libxml2...) is taken from the
# machine, which is likely newer: the kit's copy would also shadow it for python and onnxruntime
mkdir -p "$K/lib-aside"
for l in "$K"/lib/*; do
  if ldconfig -p | grep -q "^[[:space:]]*$(basename "$l") "; then mv "$l" "$K/lib-aside/"; fi
done
export LD_LIBRARY_PATH="$PWD/$K/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for b in build/kiln build/test_*; do
  ldd "$b" | awk '/not found/{print $1}' | while read -r m; do mv "$K/lib-aside/$m" "$K/lib/" 2>/dev/null; done
done
PY=${PY:-}
[ -n "$PY" ] || for p in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  if "$p" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then PY=$(command -v "$p"); break; fi
done
[ -n "$PY" ] || { echo "run_kit: no python3 with onnx, onnxruntime and numpy"; exit 1; }
# the tests and kiln bench call .venv/bin/python; the onnx package's test data become the kit's
mkdir -p .venv/bin
printf '#!/bin/sh\nexec %s "$@"\n' "$PY" >.venv/bin/python && chmod +x .venv/bin/python
export KILN_PYTHON=$PWD/.venv/bin/python
D=$("$PY" -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data'))")
if [ "$("$PY" -c 'import onnx; print(onnx.__version__)')" != "$(cat $K/data/onnx_version)" ]; then
  rm -rf "$D/node" "$D/light" && cp -r "$K/data/node" "$K/data/light" "$D/" || exit 1
fi
{
  echo "kit of commit $(cat $K/commit), onnx test data $(cat $K/data/onnx_version)"
  lscpu; echo; grep -m1 -o 'flags.*' /proc/cpuinfo; echo; uname -a
  "$PY" -c "import onnx, onnxruntime, numpy, sys; print('python', sys.version.split()[0], 'onnx', onnx.__version__, 'onnxruntime', onnxruntime.__version__, 'numpy', numpy.__version__)"
  cc --version | head -1; ldd --version | head -1
  echo "libraries from the kit: $(ls $K/lib | tr '\n' ' ')"
  build/kiln compile --help >/dev/null 2>&1 && echo "kiln runs" || echo "kiln does not run"
} >"$O/machine.txt" 2>&1
# the jobs, longest first (ctest's times on 2 cores); toolchain-bound tests are left out:
# test_cross, boards, cortex_m, c_prelude_arm (cross compilers, qemu), setup, install, repo,
# python_package (they test this machine's setup, not the CPU)
jobs=()
for t in light_models generic_groups e2e broad_models cuda ops node_import quant_models opt_levels \
         contrib_attn contrib_lstm tune contrib_quant shape_models winograd cli arena hostile strings \
         qdq_units dynamic_shapes contrib_ops bench control_flow inspect runtime_reject index_checks \
         random_ops inspect_svg trace input_dims; do
  jobs+=("py_test_$t|.venv/bin/python tests/py/test_$t.py --kiln build/kiln")
done
for lv in x86_64 x86_64-avx2 x86_64-avx512; do
  jobs+=("py_test_ops_$lv|.venv/bin/python tests/py/test_ops.py --kiln build/kiln --target $lv")
done
jobs+=("conformance_all|.venv/bin/python tests/conformance/run.py --kiln build/kiln --check --min-pass 0.95 --jobs 4")
jobs+=("conformance_c|.venv/bin/python tests/conformance/run.py --kiln build/kiln --target c --check --min-pass 0.95 --jobs 4")
PTX=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null)
jobs+=("conformance_cuda|.venv/bin/python tests/conformance/run.py --kiln build/kiln --target cuda --emulate ${PTX:+--ptxas $PTX} --check --min-pass 0.95 --jobs 4")
jobs+=("conformance_light_ops|.venv/bin/python tests/conformance/run.py --kiln build/kiln --require-light --jobs 2")
for b in build/test_*; do
  n=$(basename "$b"); [ "$n" = test_cross ] && continue
  jobs+=("$n|$b")
done
mapfile -t jobs < <(printf '%s\n' "${jobs[@]}" | grep -E "^[^|]*($ONLY)")
run_one() {
  n=${1%%|*}; c=${1#*|}; s=$(date +%s)
  timeout "$TS" bash -c "$c" >"/tmp/kit-logs/$n.log" 2>&1; rc=$?
  r=passed; [ $rc = 77 ] && r=skipped; [ $rc = 124 ] && r=timeout; [ $rc != 0 ] && [ $rc != 77 ] && [ $rc != 124 ] && r="failed(rc=$rc)"
  echo "$n $r $(( $(date +%s) - s ))s | $(grep -E '(passed|conformance:)' "/tmp/kit-logs/$n.log" | tail -1)"
}
export -f run_one; export TS
printf '%s\n' "${jobs[@]}" | xargs -d '\n' -P "$J" -I{} bash -c 'run_one "$1"' _ {} | tee "$O/tests.txt"
echo "tests: $(grep -c ' passed ' "$O/tests.txt") passed, $(grep -c ' failed(rc' "$O/tests.txt") failed, $(grep -c ' timeout ' "$O/tests.txt") timed out, $(grep -c ' skipped ' "$O/tests.txt") skipped of ${#jobs[@]}" | tee -a "$O/tests.txt"
tar -czf "$O/logs.tar.gz" -C /tmp kit-logs
# the broad benchmark on an otherwise idle machine
if [ "$BS" -gt 0 ]; then
  "$PY" models/gen_broad_models.py /tmp/kit-bm ${BM:+--models $BM} >/dev/null 2>&1
  PYTHONUNBUFFERED=1 timeout "$BS" "$PY" bench/models.py --kiln build/kiln --mode alternating --threads 2 \
    --repeat 20 --python "$PWD/.venv/bin/python" --model-dir /tmp/kit-bm --out /tmp/kit-broad ${BM:+--models $BM} >"$O/broad.txt" 2>&1
  echo "bench/models.py rc=$?" >>"$O/broad.txt"
  tar -czf "$O/broad.tar.gz" -C /tmp kit-broad
fi
