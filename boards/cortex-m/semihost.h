/* semihost.h — the few Arm semihosting calls a test image needs: files on the host
 * (qemu -semihosting-config enable=on,target=native opens them relative to qemu's
 * working folder), a console line and the exit status. A `bkpt 0xab` with the call
 * number in r0 and its argument block in r1; no libc, no allocation. */
#ifndef KILN_SEMIHOST_H
#define KILN_SEMIHOST_H
#include <stddef.h>
#include <stdint.h>

/* -1 on failure, else a handle. mode: "rb" or "wb". */
int32_t sh_open(const char *path, const char *mode);
int32_t sh_close(int32_t handle);
/* Bytes NOT transferred: 0 on success. */
int32_t sh_read(int32_t handle, void *buf, uint32_t n);
int32_t sh_write(int32_t handle, const void *buf, uint32_t n);
void sh_puts(const char *s);
/* Ends the emulation: qemu exits with status 0 (ok) or 1. */
void sh_exit(int ok) __attribute__((noreturn));

#endif
