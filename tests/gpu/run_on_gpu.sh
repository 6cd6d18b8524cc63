#!/bin/bash
# run_on_gpu.sh — on a GPU machine (the device tool's, or any with an NVIDIA driver):
# unpacks what tests/gpu/prepare.py built and packed (.gpu/*.tar.xz, or .gpu/ as is),
# shows the GPU, runs every bundle with kiln-run through the CUDA driver and compares
# (tests/gpu/compare.py), then, when build-cuda-bench/ is there, the cuDNN/cuBLAS
# baseline (bench/cuda/run_baseline.sh). Results in $OUT (default /tmp/out-gpu).
# usage: tests/gpu/run_on_gpu.sh [compare.py options]
set -u
G=${GPU_DIR:-.gpu}
O=${OUT:-/tmp/out-gpu}
mkdir -p "$O"
for t in "$G"/*.tar.xz; do [ -e "$t" ] && tar -xJf "$t" -C "$G"; done
export LD_LIBRARY_PATH="$PWD/$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$O/gpu.txt"
lscpu | grep "Model name" | tee -a "$O/gpu.txt"
if ldd "$G/bin/kiln-run" | grep "not found"; then echo "run_on_gpu: kiln-run lacks libraries"; exit 1; fi
PY=python3 # any python3 with numpy
for p in python3 /opt/torch/.venv/bin/python3; do
  if "$p" -c "import numpy" 2>/dev/null; then PY=$p; break; fi
done
PYTHONUNBUFFERED=1 "$PY" tests/gpu/compare.py --gpu-dir "$G" --out "$O" "$@"
rc=$?
if [ -x build-cuda-bench/baseline ] && [ -n "${BASELINE:-}" ]; then
  bench/cuda/run_baseline.sh "$O/cuda-baseline" ${BASELINE_LISTS:-} 2>&1 | tail -40
fi
exit $rc
