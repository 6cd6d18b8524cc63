/* semihost.c — Arm semihosting for the test images (see semihost.h). */
#include <string.h>
#include "semihost.h"

enum { SYS_OPEN = 0x01, SYS_CLOSE = 0x02, SYS_WRITE0 = 0x04, SYS_WRITE = 0x05, SYS_READ = 0x06, SYS_EXIT = 0x18 };

static int32_t sh_call(int32_t op, const void *arg) {
  register int32_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

int32_t sh_open(const char *path, const char *mode) {
  uint32_t m = !strcmp(mode, "wb") ? 5 : 1; /* the ISO C fopen modes' numbers: rb 1, wb 5 */
  uint32_t args[3] = {(uint32_t)(uintptr_t)path, m, (uint32_t)strlen(path)};
  return sh_call(SYS_OPEN, args);
}

int32_t sh_close(int32_t handle) {
  uint32_t args[1] = {(uint32_t)handle};
  return sh_call(SYS_CLOSE, args);
}

int32_t sh_read(int32_t handle, void *buf, uint32_t n) {
  uint32_t args[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)buf, n};
  return sh_call(SYS_READ, args);
}

int32_t sh_write(int32_t handle, const void *buf, uint32_t n) {
  uint32_t args[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)buf, n};
  return sh_call(SYS_WRITE, args);
}

void sh_puts(const char *s) { sh_call(SYS_WRITE0, s); }

void sh_exit(int ok) {
  /* ADP_Stopped_ApplicationExit: qemu exits 0; ADP_Stopped_RunTimeErrorUnknown: 1 */
  sh_call(SYS_EXIT, (const void *)(uintptr_t)(ok ? 0x20026 : 0x20023));
  for (;;) {
  }
}
