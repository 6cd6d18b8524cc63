/* run_model.c — the test image's main for a kiln AOT project (kiln compile --aot):
 * reads input i from the host file in<i>.bin (its raw bytes, model_inputs[i].bytes of
 * them), runs model_run() once, writes output i to out<i>.bin and prints one line —
 * model_run's status, the stack high-water mark measured by the paint of startup.c,
 * and model_run's SysTick ticks next to those of a calibration loop of known
 * length (under qemu -icount their ratio gives the instructions per inference) —
 * over semihosting. Buffers are static: no heap anywhere. */
#include <stdint.h>
#include "model.h"
#include "semihost.h"

uint32_t startup_stack_used(void);

static uint8_t arena[MODEL_ARENA_BYTES > 0 ? MODEL_ARENA_BYTES : 1] __attribute__((aligned(MODEL_ALIGN)));
static uint8_t io[MODEL_IO_BYTES > 0 ? MODEL_IO_BYTES : 1] __attribute__((aligned(MODEL_ALIGN)));
static char line[160];

static char *put_u32(char *p, uint32_t v) {
  char digits[10];
  int n = 0;
  do digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n) *p++ = digits[--n];
  return p;
}

static char *put_str(char *p, const char *s) {
  while (*s) *p++ = *s++;
  return p;
}

/* "in3.bin" */
static void file_name(char *buf, const char *stem, int i) {
  char *p = put_str(buf, stem);
  p = put_u32(p, (uint32_t)i);
  p = put_str(p, ".bin");
  *p = 0;
}

static uint32_t round_up(uint32_t n) { return (n + MODEL_ALIGN - 1u) & ~(MODEL_ALIGN - 1u); }

#define SYST ((volatile uint32_t *)0xE000E010u) /* SysTick CSR, RVR, CVR */
#define CALIBRATION_LOOPS 1000000u           /* 2 instructions each: subs, bne */

/* SysTick ticks of fn (0 when the 24-bit counter wrapped). Under qemu -icount, virtual
 * time advances by instructions, so ticks count instructions at a fixed rate, which
 * calibrate() measures on a loop of known length. */
static uint32_t ticks_of(void (*fn)(void)) {
  SYST[1] = 0xFFFFFFu;
  SYST[2] = 0;
  SYST[0] = 5u; /* enable, processor clock, no interrupt */
  uint32_t t0 = SYST[2];
  fn();
  uint32_t t1 = SYST[2], wrapped = (SYST[0] >> 16) & 1u;
  SYST[0] = 0;
  return wrapped ? 0u : (t0 - t1) & 0xFFFFFFu;
}

static void calibration_loop(void) {
  uint32_t n = CALIBRATION_LOOPS;
  __asm__ volatile("1: subs %0, %0, #1\n bne 1b" : "+r"(n) : : "cc");
}

static const void *run_ins[MODEL_INPUT_COUNT + 1];
static void *run_outs[MODEL_OUTPUT_COUNT + 1];
static int32_t run_rc;
static void run_once(void) { run_rc = model_run(run_ins, run_outs, arena); }

int main(void) {
  const void *ins[MODEL_INPUT_COUNT + 1];
  void *outs[MODEL_OUTPUT_COUNT + 1];
  uint8_t *p = io;
  char name[32];
  for (int i = 0; i < MODEL_INPUT_COUNT; i++) {
    file_name(name, "in", i);
    int32_t h = sh_open(name, "rb");
    if (h < 0 || sh_read(h, p, model_inputs[i].bytes) != 0) {
      sh_puts("kiln: cannot read an input file\n");
      return 1;
    }
    sh_close(h);
    ins[i] = p;
    p += round_up(model_inputs[i].bytes);
  }
  for (int i = 0; i < MODEL_OUTPUT_COUNT; i++) {
    outs[i] = p;
    p += round_up(model_outputs[i].bytes);
  }
  uint32_t before = startup_stack_used();
  for (int i = 0; i < MODEL_INPUT_COUNT; i++) run_ins[i] = ins[i];
  for (int i = 0; i < MODEL_OUTPUT_COUNT; i++) run_outs[i] = outs[i];
  uint32_t ticks = ticks_of(run_once), calibration = ticks_of(calibration_loop);
  int32_t rc = run_rc;
  uint32_t used = startup_stack_used();
  for (int i = 0; rc == 0 && i < MODEL_OUTPUT_COUNT; i++) {
    file_name(name, "out", i);
    int32_t h = sh_open(name, "wb");
    if (h < 0 || sh_write(h, outs[i], model_outputs[i].bytes) != 0) {
      sh_puts("kiln: cannot write an output file\n");
      return 1;
    }
    sh_close(h);
  }
  char *q = put_str(line, "kiln: model_run returned ");
  q = put_u32(q, (uint32_t)rc);
  q = put_str(q, ", stack high-water ");
  q = put_u32(q, used);
  q = put_str(q, " bytes (");
  q = put_u32(q, before);
  q = put_str(q, " before model_run), systick ");
  q = put_u32(q, ticks);
  q = put_str(q, " ticks, ");
  q = put_u32(q, calibration);
  q = put_str(q, " per 2000000 instructions\n");
  *q = 0;
  sh_puts(line);
  return rc;
}
