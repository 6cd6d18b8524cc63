#!/usr/bin/env bash
# run.sh — the Python package's test as `make test` runs it (ctest python_package,
# release build): `pip install ./python` into a fresh virtualenv, then pytest on
# python/tests, with the build's `kiln` command for the CLI's messages.
#
# usage: python/tests/run.sh BUILD      (BUILD: the CMake build folder, holding kiln)
#
# The virtualenv BUILD/python-venv is made anew each time from .venv's interpreter,
# and nothing is downloaded: a .pth file in its site-packages names .venv's
# site-packages, so numpy, onnx, onnxruntime, pytest and scikit-build-core (pinned in
# scripts/requirements.txt, which scripts/setup.sh installs into .venv) are importable
# there without being installed in it. pip then installs kiln alone into it, with
# --no-build-isolation (the build backend and numpy's headers from .venv) and
# --no-index (a dependency it cannot find fails the test instead of being fetched).
# The extension's CMake build lives in BUILD/python-ext (scikit-build-core's
# build-dir), so a rerun compiles only what changed; CMAKE_BUILD_PARALLEL_LEVEL is 2
# unless set. pytest runs outside the checkout, so `import kiln` can only find the
# installed package (test_installed_package checks it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: $0 BUILD}" && pwd)
venv=$build/python-venv
base=$root/.venv/bin/python
if [ ! -x "$base" ]; then
  echo "run.sh: $base is missing: run scripts/setup.sh (it makes .venv from scripts/requirements.txt)" >&2
  exit 1
fi
rm -rf "$venv"
"$base" -m venv "$venv"
purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
purelib "$base" >"$(purelib "$venv/bin/python")/kiln-test-deps.pth"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-build-isolation \
  --config-settings=build-dir="$build/python-ext" "$root/python"
cd "$build"
KILN_CLI=$build/kiln exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
