#!/usr/bin/env bash
# run_baseline.sh — runs the cuDNN/cuBLAS baseline on the GPU machine, finding the libraries there.
#
# Usage (from the repo root, with build-cuda-bench/ carried over from the build machine):
#   bench/cuda/run_baseline.sh [OUT_DIR] [LAYERS.json...]
# OUT_DIR defaults to $OUT/cuda-baseline when $OUT is set (the device runner's folder), else
# bench/results-cuda/. The layer lists default to every build-cuda-bench/layers/*.json.
# Environment: BIN_DIR (default build-cuda-bench), WARMUP (10), REPEAT (50), MATHS ("fp32 tf32"),
# HEURISTIC=1 (cudnnGetConvolutionForwardAlgorithm_v7 instead of Find: faster start-up),
# RUN_TIMEOUT (seconds per run, default 240).
#
# The binary was built elsewhere against CUDA 13 / cuDNN 9; here it needs libcudart.so.13,
# libcublas.so.13 (+ libcublasLt.so.13) and libcudnn.so.9 (+ its libcudnn_*.so.9 sub-libraries,
# which it dlopens from its own folder), optionally libnvrtc.so.13 (cuDNN's runtime-compiled
# engines). A PyTorch cu130 image has them under site-packages/nvidia/*/lib; a CUDA image under
# /usr/local/cuda/lib64. Each is looked for in the usual places first, then with find /.
# libcjson.so.1 travels next to the binary (rpath $ORIGIN) unless it was linked statically.
#
# Each model list runs once per math variant, each in its own process: "fp32" with
# NVIDIA_TF32_OVERRIDE=0 (no TF32 anywhere in cuDNN/cuBLAS) and "--math fp32"; "tf32" with
# "--math tf32". Per run: OUT_DIR/MODEL.bN.MATH.txt (the table), and one JSON line appended to
# OUT_DIR/results.jsonl; a summary table at the end.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN_DIR=${BIN_DIR:-$ROOT/build-cuda-bench}
BIN=$BIN_DIR/baseline
if [ $# -ge 1 ]; then RES=$1; shift; elif [ -n "${OUT:-}" ]; then RES=$OUT/cuda-baseline; else RES=$ROOT/bench/results-cuda; fi
mkdir -p "$RES"
[ -x "$BIN" ] || { echo "run_baseline.sh: no $BIN (run bench/cuda/build.sh on the build machine and carry $BIN_DIR)" >&2; exit 1; }

# ---- find the libraries ----
py_dirs=""
for py in python3 python; do
    if command -v "$py" >/dev/null 2>&1; then
        py_dirs=$("$py" -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null)
        break
    fi
done
CANDS=()
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib /usr/lib/x86_64-linux-gnu /usr/local/lib; do
    [ -d "$d" ] && CANDS+=("$d")
done
while IFS= read -r sp; do
    [ -n "$sp" ] && [ -d "$sp/nvidia" ] || continue
    for d in "$sp"/nvidia/*/lib "$sp"/nvidia/*/lib64; do [ -d "$d" ] && CANDS+=("$d"); done
done <<< "$py_dirs"

find_lib() { # NAME [MUST_HAVE_SIBLING]: the folder holding NAME (and the sibling, if given)
    local name=$1 sib=${2:-} d
    for d in "${CANDS[@]}"; do
        [ -e "$d/$name" ] && { [ -z "$sib" ] || [ -e "$d/$sib" ]; } && { echo "$d"; return 0; }
    done
    while IFS= read -r f; do
        d=$(dirname "$f")
        { [ -z "$sib" ] || [ -e "$d/$sib" ]; } && { echo "$d"; return 0; }
    done < <(find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -name "$name" -print 2>/dev/null)
    return 1
}

LIBPATH=""
add_dir() { case ":$LIBPATH:" in *":$1:"*) ;; *) LIBPATH=${LIBPATH:+$LIBPATH:}$1 ;; esac; }
fail=0
for spec in libcudart.so.13: libcublas.so.13:libcublasLt.so.13 libcublasLt.so.13: \
            libcudnn.so.9:libcudnn_cnn.so.9 libnvrtc.so.13:; do
    name=${spec%%:*} sib=${spec#*:}
    if d=$(find_lib "$name" "$sib"); then
        echo "run_baseline.sh: $name in $d"
        add_dir "$d"
    elif [ "$name" = libnvrtc.so.13 ]; then
        echo "run_baseline.sh: no $name (cuDNN's runtime-compiled engines will be unavailable)"
    else
        echo "run_baseline.sh: cannot find $name${sib:+ (with $sib beside it)} anywhere" >&2
        fail=1
    fi
done
[ $fail = 0 ] || exit 1
export LD_LIBRARY_PATH=$LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "run_baseline.sh: note: ldconfig does not list libcuda.so.1 (the driver); cudaGetDeviceCount will say why" >&2
fi
missing=$(ldd "$BIN" | awk '/not found/ {print $1}')
if [ -n "$missing" ]; then
    echo "run_baseline.sh: $BIN still lacks: $missing" >&2
    echo "  (libcjson.so.1 should be in $BIN_DIR, copied there by build.sh)" >&2
    exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv 2>/dev/null

# ---- run ----
if [ $# -gt 0 ]; then LISTS=("$@"); else LISTS=("$BIN_DIR"/layers/*.json); fi
[ -e "${LISTS[0]}" ] || { echo "run_baseline.sh: no layer lists (build.sh writes $BIN_DIR/layers/)" >&2; exit 1; }
FLAGS=(--warmup "${WARMUP:-10}" --repeat "${REPEAT:-50}" --json "$RES/results.jsonl")
[ "${HEURISTIC:-0}" = 1 ] && FLAGS+=(--heuristic)
status=0
for list in "${LISTS[@]}"; do
    base=$(basename "$list" .json)
    for math in ${MATHS:-fp32 tf32}; do
        t0=$(date +%s%N)
        if [ "$math" = fp32 ]; then
            NVIDIA_TF32_OVERRIDE=0 timeout "${RUN_TIMEOUT:-240}" "$BIN" --math fp32 "${FLAGS[@]}" "$list" > "$RES/$base.$math.txt" 2>&1
        else
            timeout "${RUN_TIMEOUT:-240}" "$BIN" --math "$math" "${FLAGS[@]}" "$list" > "$RES/$base.$math.txt" 2>&1
        fi
        rc=$?
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        printf 'run_baseline.sh: %-22s %-4s rc=%d  %d.%03d s\n' "$base" "$math" "$rc" $((ms / 1000)) $((ms % 1000))
        if [ $rc != 0 ]; then status=1; tail -5 "$RES/$base.$math.txt" >&2; fi
        if [ $rc = 2 ]; then echo "run_baseline.sh: no usable CUDA device: stopping" >&2; break 2; fi
    done
done

# ---- summary ----
if command -v python3 >/dev/null 2>&1 && [ -s "$RES/results.jsonl" ]; then
    python3 - "$RES/results.jsonl" <<'PY' | tee "$RES/summary.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if rows:
    print("device: " + rows[-1]["device"])
print("%-14s %5s %-5s %10s %10s %10s %11s %8s" % ("model", "batch", "math", "conv_ms", "gemm_ms", "total_ms", "GFLOP", "TFLOP/s"))
for r in rows:
    t = r["conv_gemm_ms"]
    print("%-14s %5d %-5s %10.3f %10.3f %10.3f %11.2f %8.2f" % (r["model"], r["batch"], r["math"], r["conv_ms"],
          r["gemm_ms"], t, r["gflop"], r["gflop"] / t if t > 0 else 0))
print("conv+gemm time only: a lower bound for a framework (no element-wise/pooling/softmax/norm ops, no gaps)")
PY
fi
echo "run_baseline.sh: results in $RES"
exit $status
