/* dot4_aarch64_check.c — every dot4 kernel of dot4_cases.h, compiled by test_cross
 * for an aarch64 target (aarch64, aarch64-dotprod: SDOT/UDOT, aarch64-i8mm: USDOT),
 * run on that CPU (qemu-aarch64 -cpu max) against the scalar reference, 4 seeds a
 * case. test_cross writes dot4_table.h next to the kernels' object: DOT4_TABLE, the
 * kernels' names and functions in dot4_cases() order, which are checked to agree.
 * Only dot4_cases.h's plain-C helpers are used (the builder functions it also
 * holds are never called, so never linked). Prints "dot4 cases N bad M" and the
 * first failures; exit 1 if M. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln_abi.h"
#include "dot4_cases.h"
#include "dot4_table.h"

typedef struct entry {
  const char *name;
  kiln_kernel_fn fn;
} entry;

static const entry table[] = {DOT4_TABLE};

int main(void) {
  dot4_case cs[DOT4_MAX_CASES];
  int nc = dot4_cases(cs), bad = 0, ran = 0;
  int32_t *acc = aligned_alloc(64, 32 * DOT4_ROWS * 4), *out = aligned_alloc(64, 32 * DOT4_ROWS * 4),
          *want = aligned_alloc(64, 32 * DOT4_ROWS * 4);
  uint8_t *a = aligned_alloc(64, 128 * DOT4_ROWS), *b = aligned_alloc(64, 128 * DOT4_ROWS);
  if (!acc || !out || !want || !a || !b) return 2;
  if ((int)(sizeof table / sizeof table[0]) != nc) {
    printf("dot4 table has %d kernels, dot4_cases %d\n", (int)(sizeof table / sizeof table[0]), nc);
    return 1;
  }
  for (int i = 0; i < nc; i++) {
    char nm[64], msg[256];
    if (strcmp(dot4_name(&cs[i], nm, sizeof nm), table[i].name)) {
      printf("dot4 case %d is %s, the table says %s\n", i, nm, table[i].name);
      return 1;
    }
    int64_t n[4];
    dot4_sizes(&cs[i], n);
    for (uint64_t seed = 0; seed < 4; seed++) {
      dot4_fill(&cs[i], seed * 1000 + (uint64_t)i, acc, a, b);
      dot4_reference(&cs[i], acc, a, b, want);
      memset(out, 0x5a, (size_t)n[3] * 4);
      void *bufs[4] = {acc, a, b, out};
      int32_t rc = table[i].fn(bufs, NULL);
      ran++;
      if (rc != 0 || dot4_compare(&cs[i], out, want, msg, sizeof msg)) {
        if (bad++ < 8) printf("%s seed %d: status %d;%s\n", nm, (int)seed, (int)rc, msg);
      }
    }
  }
  printf("dot4 cases %d bad %d\n", ran, bad);
  free(acc), free(out), free(want), free(a), free(b);
  return bad != 0;
}
