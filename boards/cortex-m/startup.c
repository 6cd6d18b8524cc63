/* startup.c — the smallest start for a Cortex-M test image: the vector table (the
 * initial stack pointer, the reset handler, faults that end the run), then copy
 * .data from flash, zero .bss, turn the FPU (and MVE) on, paint the stack so that
 * main can measure how deep it went, call main. The linker script of the board
 * (mps2-an386.ld, mps2-an500.ld, mps3-an547.ld) places everything. */
#include <stdint.h>
#include "semihost.h"

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern uint32_t __stack_limit[], __stack_top[];
int main(void);

/* The lowest stack address touched, from the paint (startup_stack_used). */
#define STACK_PAINT 0xa5a5a5a5u

void startup_reset(void) __attribute__((noreturn));
void startup_fault(void) __attribute__((noreturn));

void startup_reset(void) {
  for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;) *d++ = *s++;
  for (uint32_t *d = __bss_start; d < __bss_end;) *d++ = 0;
  volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
  *cpacr |= 0xFu << 20; /* CP10, CP11: full access to the FPU (and MVE) */
  __asm__ volatile("dsb\n isb" ::: "memory");
  uint32_t *sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = __stack_limit; p < sp - 16; p++) *p = STACK_PAINT;
  sh_exit(main() == 0);
}

void startup_fault(void) {
  sh_puts("kiln: a fault ended the run\n");
  sh_exit(0);
}

/* Bytes of stack used so far (the highest painted word that was overwritten). */
uint32_t startup_stack_used(void) {
  uint32_t *p = __stack_limit;
  while (p < __stack_top && *p == STACK_PAINT) p++;
  return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))__stack_top, startup_reset, startup_fault, startup_fault, startup_fault, startup_fault,
    startup_fault, 0, 0, 0, 0, startup_fault, startup_fault, 0, startup_fault, startup_fault};
