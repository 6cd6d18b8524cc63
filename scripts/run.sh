#!/usr/bin/env bash
# run.sh — the main job (`make run`): compile ResNet-50 (the onnx package's light
# model, its ConstantOfShape weights replaced by seeded random ones so the output
# means something) into a bundle, then run the bundle with the runtime, printing the
# outputs, the top-5 classes and the latency.
set -euo pipefail
cd "$(dirname "$0")/.."
KILN=${1:-build/kiln}
OUT=${KILN_RUN_DIR:-build/run}
mkdir -p "$OUT"
SRC=$(scripts/model_path.sh light_resnet50)
MODEL="$OUT/resnet50.onnx"
if [ -f models/randomize_weights.py ]; then
  [ -f "$MODEL" ] || .venv/bin/python models/randomize_weights.py "$SRC" "$MODEL"
else
  MODEL="$SRC"
fi
"$KILN" compile "$MODEL" -o "$OUT/resnet50.kiln"
"$KILN" run "$OUT/resnet50.kiln" --repeat 3
