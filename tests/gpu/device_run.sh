#!/bin/bash
# device_run.sh — the steps of one borrowed-GPU session (the device tool's machine,
# which starts bare and takes at most 64 MiB a call), from the repo root there:
#   device_run.sh e2e G          unpack G/tools.tar.xz, show the GPU, run and time the
#                                e2e models whose params are complete (tests/gpu/compare.py),
#                                the runtime's tests on the real driver, the cuDNN/cuBLAS
#                                baseline when build-cuda-bench/ came along
#   device_run.sh more G P...    the e2e models again with params parts from folders P
#                                (a model too big for one call: its params came in parts)
#   device_run.sh torch G        PyTorch's timing of the three models (bench/cuda/torch_baseline.py)
#   device_run.sh sweep G S      the template tiles' sweep prepared in folder S (bench/cuda/sweep_tiles.py)
# Results: $OUT (gpu.txt, results.txt, summary.json, the baseline's summary.txt/results.jsonl,
# torch.jsonl, sweep.json).
# Device time is counted from the machine's start to its return, the 30 s it idles
# after each call included, and no machine starts with less than 4 minutes left: put
# what belongs together in one call, chain the calls that carry a model's params in
# parts back to back, and hand the machine back (give_back) after the last.
set -u
mode=$1; G=$2; shift 2
O=${OUT:-/tmp/out-gpu}; mkdir -p "$O"
[ -d "$G/bin" ] || tar -xJf "$G/tools.tar.xz" -C "$G"
export LD_LIBRARY_PATH="$PWD/$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PY=python3
for p in python3 /opt/torch/.venv/bin/python3; do "$p" -c "import numpy" 2>/dev/null && { PY=$p; break; }; done
export PYTHONUNBUFFERED=1
if [ "$mode" = e2e ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$O/gpu.txt"
  timeout ${E2E_TIMEOUT:-200} "$PY" tests/gpu/compare.py --gpu-dir "$G" --out "$O" --only e2e --repeat ${REPEAT:-50}
  [ -x "$G/bin/test_cuda_runtime" ] && KILN_TEST_REAL_CUDA=1 timeout 60 "$G/bin/test_cuda_runtime" 2>&1 | tail -4
  if [ -x build-cuda-bench/baseline ]; then
    REPEAT=20 WARMUP=5 RUN_TIMEOUT=${BASELINE_RUN_TIMEOUT:-45} timeout ${BASELINE_TIMEOUT:-150} \
      bench/cuda/run_baseline.sh /tmp/cuda-baseline ${BASELINE_LISTS:-} 2>&1 | tail -30
    cp /tmp/cuda-baseline/summary.txt /tmp/cuda-baseline/results.jsonl "$O/" 2>/dev/null
  fi
elif [ "$mode" = torch ]; then
  timeout ${TORCH_TIMEOUT:-150} "$PY" bench/cuda/torch_baseline.py --repeat 30 --warmup 5 --out "$O/torch.jsonl"
elif [ "$mode" = sweep ]; then
  timeout ${SWEEP_TIMEOUT:-200} "$PY" bench/cuda/sweep_tiles.py run "$1" --kiln-run "$G/bin/kiln-run"
else
  args=(); for p in "$@"; do args+=(--params "$p"); done
  timeout ${E2E_TIMEOUT:-200} "$PY" tests/gpu/compare.py --gpu-dir "$G" --out "$O" --only e2e --repeat ${REPEAT:-50} \
    --e2e-filter "${E2E_FILTER:-}" "${args[@]}"
fi
