#!/usr/bin/env bash
# run.sh — the main job (`make run`): takes a real model shipped with the onnx
# Python package (ResNet-50 from its light models) and runs kiln on it.
set -euo pipefail
cd "$(dirname "$0")/.."
KILN=${1:-build/kiln}
MODEL=$(scripts/model_path.sh light_resnet50)
"$KILN" inspect "$MODEL"
