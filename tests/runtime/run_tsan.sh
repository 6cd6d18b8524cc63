#!/bin/sh
# run_tsan.sh PROGRAM [ARGS...] — runs a ThreadSanitizer test (ctest's test_pool_race).
#
# gcc 12's TSan runtime cannot place its shadow memory when the kernel randomizes
# mmap with more than 28 bits (vm.mmap_rnd_bits = 32, some distributions' kernels):
# the program then dies before main with "unexpected memory mapping". There the
# test is run again without address randomization (setarch -R); where that is not
# allowed either (a container's seccomp profile may refuse the personality call),
# it is skipped (exit 77) with the reason — never counted as passed.
out=$("$@" 2>&1)
rc=$?
case "$out" in
*"unexpected memory mapping"*) ;;
*) printf '%s\n' "$out"; exit $rc ;;
esac
echo "run_tsan: ThreadSanitizer could not map its shadow memory (vm.mmap_rnd_bits = $(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo '?')); again under setarch -R"
out=$(setarch "$(uname -m)" -R "$@" 2>&1)
rc=$?
case "$out" in
*"unexpected memory mapping"* | *"failed to set personality"*)
  printf '%s\n' "$out" | tail -n 3
  echo "run_tsan: skipped — this kernel's address randomization leaves gcc 12's ThreadSanitizer no room, and setarch -R is not allowed here"
  exit 77 ;;
esac
printf '%s\n' "$out"
exit $rc
