#!/usr/bin/env bash
# build.sh — builds the cuDNN/cuBLAS baseline here (no GPU needed) and writes the layer lists.
#
# Usage: bench/cuda/build.sh [OUT_DIR]        (default: build-cuda-bench/ at the repo root,
#                                              which .gitignore's /build*/ already ignores)
# Environment: CUDA (default /usr/local/cuda), PYTHON (the one with onnx; default the repo's
# .venv, else the main checkout's .venv), MODEL_DIR (where resnet50.onnx, mobilenetv2.onnx and
# bert_encoder.onnx are; default build/bench-models, made by bench/run.py when missing),
# BATCHES (default "1 16").
#
# OUT_DIR then holds everything the GPU machine needs, to be carried there whole:
#   baseline            the program (rpath $ORIGIN; cudart, cuDNN and cuBLAS found at run time
#                       by run_baseline.sh)
#   libcjson.so.1       copied from this machine when there is no static libcjson.a to link
#                       (the GPU image has no libcjson)
#   layers/MODEL.bN.json  layers.py's lists, so the GPU machine needs no onnx
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/build-cuda-bench}
CUDA=${CUDA:-/usr/local/cuda}
BATCHES=${BATCHES:-"1 16"}
mkdir -p "$OUT/layers"
OUT=$(cd "$OUT" && pwd)

# cJSON: statically when the archive exists, else the shared library travels with the binary
CJSON_A=""
for a in /usr/lib/x86_64-linux-gnu/libcjson.a /usr/local/lib/libcjson.a; do
    [ -f "$a" ] && CJSON_A=$a && break
done
if [ -n "$CJSON_A" ]; then
    CJSON_LINK=("$CJSON_A")
else
    CJSON_LINK=(-lcjson)
    so=$(ldconfig -p | awk '/libcjson\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -n "$so" ] || { echo "build.sh: no libcjson.so.1 on this machine (apt install libcjson-dev)" >&2; exit 1; }
    cp -L "$so" "$OUT/libcjson.so.1"
fi

set -x
cc -std=c11 -O2 -Wall -Wextra -Werror -I"$CUDA/include" "$HERE/baseline.c" -o "$OUT/baseline" \
    -L"$CUDA/lib64" -lcudnn -lcublas -lcudart "${CJSON_LINK[@]}" -Wl,-rpath,'$ORIGIN'
{ set +x; } 2>/dev/null

# the layer lists
if [ -z "${PYTHON:-}" ]; then
    MAIN=$(dirname "$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir)")
    for p in "$ROOT/.venv/bin/python" "$MAIN/.venv/bin/python" python3; do
        if command -v "$p" >/dev/null 2>&1; then PYTHON=$p; break; fi
    done
fi
MODEL_DIR=${MODEL_DIR:-$ROOT/build/bench-models}
MODELS="resnet50 mobilenetv2 bert_encoder"
missing=""
for m in $MODELS; do [ -f "$MODEL_DIR/$m.onnx" ] || missing="$missing $m"; done
if [ -n "$missing" ]; then
    echo "build.sh: generating$missing into $MODEL_DIR (bench/run.py's models)"
    (cd "$ROOT/bench" && "$PYTHON" -c "import sys, run; run.prepare_models(sys.argv[2:], sys.argv[1], False)" \
        "$MODEL_DIR" $missing)
fi
for m in $MODELS; do
    for b in $BATCHES; do
        "$PYTHON" "$HERE/layers.py" "$MODEL_DIR/$m.onnx" --batch "$b" -o "$OUT/layers/$m.b$b.json"
    done
done
echo "build.sh: built $OUT/baseline; layer lists in $OUT/layers/"
ldd "$OUT/baseline" | sed 's/^/  /'
