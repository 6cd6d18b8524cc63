#!/usr/bin/env bash
# model_path.sh NAME — prints the path of one of the onnx package's light models
# (light_resnet50, light_squeezenet, …). Nothing is downloaded or committed: the
# models ship inside the pinned onnx wheel installed by setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(.venv/bin/python -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light"))')
f="$dir/$1.onnx"
[ -f "$f" ] || { echo "model_path.sh: no light model named $1 in $dir" >&2; exit 1; }
echo "$f"
