/* dot4_prelude_check.c — the C backend's packed dot4 helpers (targets/c/c_prelude.h:
 * kc_dot4_uu/us/su/ss, SMLAD/UXTB16/SXTB16 where the compiler targets an ARM core with
 * the SIMD32 instructions) against kc_dot4, the lane-by-lane definition, on 200000
 * seeded byte quads with extremes and any accumulator (wrapping). Built and run by
 * tests/py/test_c_prelude_arm.py for armv7-a under qemu-arm and for the host, so both
 * branches of the prelude are checked. Prints "simd32 bad N" or "bad N"; exit 1 if N. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include "kiln_abi.h"
#include "c_prelude.h"
int main(void) {
  uint32_t s = 12345; int bad = 0;
  for (int it = 0; it < 200000; it++) {
    uint8_t a[4], b[4]; int32_t acc;
    for (int j = 0; j < 4; j++) { s = s * 1103515245u + 12345u; a[j] = s >> 16; s = s * 1103515245u + 12345u; b[j] = s >> 16; }
    s = s * 1103515245u + 12345u; acc = (int32_t)s;
    if (it < 4) { memset(a, it & 1 ? 0xff : 0x80, 4); memset(b, it & 2 ? 0x7f : 0x80, 4); }
    int32_t r1 = kc_dot4_us(acc, a, b), r2 = kc_dot4(acc, a[0],a[1],a[2],a[3], (int8_t)b[0],(int8_t)b[1],(int8_t)b[2],(int8_t)b[3]);
    int32_t r3 = kc_dot4_ss(acc, a, b), r4 = kc_dot4(acc, (int8_t)a[0],(int8_t)a[1],(int8_t)a[2],(int8_t)a[3], (int8_t)b[0],(int8_t)b[1],(int8_t)b[2],(int8_t)b[3]);
    int32_t r5 = kc_dot4_uu(acc, a, b), r6 = kc_dot4(acc, a[0],a[1],a[2],a[3], b[0],b[1],b[2],b[3]);
    int32_t r7 = kc_dot4_su(acc, a, b), r8 = kc_dot4(acc, (int8_t)a[0],(int8_t)a[1],(int8_t)a[2],(int8_t)a[3], b[0],b[1],b[2],b[3]);
    bad += r1 != r2 || r3 != r4 || r5 != r6 || r7 != r8;
  }
#ifdef __ARM_FEATURE_SIMD32
  printf("simd32 ");
#endif
  printf("bad %d\n", bad);
  return bad != 0;
}
