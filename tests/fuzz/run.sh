#!/usr/bin/env bash
# run.sh FUZZER SECONDS [KILN] — a bounded fuzzing run, as CI does it, of the
# importer (fuzz_importer), of the test-data reader (fuzz_testdata), of the .npy
# reader (fuzz_npy) or of the bundle parsers (fuzz_bundle, which needs a kiln
# compiler, KILN, to make its seed bundles).
#
# 1. Replays every committed regression input (tests/data/hostile/* for the
#    importer, tests/data/hostile-bundles/* for bundles) through the fuzz target
#    once (tests/data/hostile-testdata/*, hostile-npy/* for the others): each was
#    a crash, hang or leak once and must stay fixed.
# 2. Writes the seed corpus (make_corpus.py, make_bundle_corpus.py) next to the
#    fuzzer binary, never into the source tree, and fuzzes for SECONDS seconds.
#    New interesting inputs are kept in FUZZ_BUILD/<fuzzer>-corpus/work, so later
#    runs start where this one ended.
# Exits non-zero on any crash, leak, sanitizer report, timeout or out-of-memory,
# and says where the input that caused it was saved (FUZZ_BUILD/fuzz-artifacts/).
# To reproduce one: FUZZER FILE. To minimize: FUZZER -minimize_crash=1 -runs=10000 FILE.
set -uo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 FUZZER SECONDS [KILN]" >&2
  exit 2
fi
fuzzer=$(readlink -f "$1")
seconds=$2
kind=$(basename "$fuzzer")
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(dirname "$fuzzer")
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3
if [ ! -x "$fuzzer" ]; then
  echo "run.sh: no fuzzer at '$1' (build it with: make fuzz-build)" >&2
  exit 2
fi

# UBSan findings must stop the run (the target may be built without
# -fno-sanitize-recover); leaks are checked after every input.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"

limits=(-max_len=65536 -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10)
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
if [ "$kind" = fuzz_bundle ]; then
  regress="$root/tests/data/hostile-bundles"
  corpus="$build/fuzz-bundle-corpus"
  kiln=${3:-}
  if [ -z "$kiln" ] || [ ! -x "$kiln" ]; then
    echo "run.sh: fuzz_bundle needs a kiln compiler to make its seed bundles (third argument)" >&2
    exit 2
  fi
  export KILN_FUZZ_BUNDLE="$corpus/reference.kiln"
  mkdir -p "$corpus"
  "$py" "$root/tests/fuzz/make_bundle_corpus.py" "$corpus/seed" --kiln "$kiln" --reference "$KILN_FUZZ_BUNDLE" || exit 1
elif [ "$kind" = fuzz_testdata ] || [ "$kind" = fuzz_npy ]; then
  regress="$root/tests/data/hostile-${kind#fuzz_}"
  corpus="$build/$kind-corpus"
else
  regress="$root/tests/data/hostile"
  corpus="$build/fuzz-corpus"
fi

# --- 1. regression inputs ---
fail=0
n_reg=0
for f in "$regress"/*; do
  [ -f "$f" ] || continue
  n_reg=$((n_reg + 1))
  if ! log=$("$fuzzer" "${limits[@]}" -runs=1 "$f" 2>&1); then
    echo "$log" | grep -a -E 'ERROR|runtime error|SUMMARY|fuzz_importer:|^ +#[0-9]+ 0x' | head -30
    echo "run.sh: REGRESSION: $f crashes the importer again" >&2
    fail=1
  fi
done
echo "run.sh: $kind: $n_reg regression inputs replayed"
[ $fail -eq 0 ] || exit 1

# --- 2. seed corpus + bounded fuzzing ---
seed="$corpus/seed"
work="$corpus/work"
mkdir -p "$seed" "$work"
dict=()
if [ "$kind" = fuzz_testdata ] || [ "$kind" = fuzz_npy ]; then
  "$py" "$root/tests/fuzz/make_corpus.py" "$seed" "--${kind#fuzz_}" || exit 1
elif [ "$kind" != fuzz_bundle ]; then
  "$py" "$root/tests/fuzz/make_corpus.py" "$seed" --dict "$corpus/onnx.dict" || exit 1
  dict=(-dict="$corpus/onnx.dict")
fi

log="$build/$kind-last.log"
"$fuzzer" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "${dict[@]}" "$work" "$seed" >"$log" 2>&1
rc=$?
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | tail -2
grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log"
if [ $rc -ne 0 ]; then
  grep -E 'ERROR:|runtime error:|SUMMARY:|Test unit written to' "$log" | head -20
  unit=$(grep -o 'Test unit written to .*' "$log" | tail -1 | sed 's/Test unit written to //')
  echo "run.sh: the fuzzer found a problem (exit $rc); full log: $log" >&2
  [ -n "$unit" ] && echo "run.sh: crash input saved at $unit (reproduce: $1 $unit)" >&2
  exit 1
fi
# A target whose libraries were compiled without -fsanitize=fuzzer-no-link sees
# only its own few edges: it cannot find anything, so that is a failure too.
cov=$(grep -a -o -E 'INITED cov: [0-9]+' "$log" | grep -o -E '[0-9]+$' | head -1)
min_cov=100
[ "$kind" = fuzz_npy ] && min_cov=20 # one small parser
if [ "${cov:-0}" -lt $min_cov ]; then
  echo "run.sh: $kind is not instrumented (coverage ${cov:-0} after the seeds): compile every library" \
    "of the fuzz build with -fsanitize=fuzzer-no-link,address,undefined" >&2
  exit 1
fi
echo "run.sh: $kind: no crash in ${seconds}s"
