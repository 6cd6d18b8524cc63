/* cpu.c — does this CPU have the instruction-set features a bundle's code uses?
 *
 * A bundle compiled for "host" on one machine uses every feature of that CPU: on a
 * Sapphire Rapids Xeon that includes AVX512-FP16, which an AMD Zen 5 lacks. Run
 * there it would die of SIGILL in the middle of a kernel. So the compiler records
 * in the manifest the x86 features the code may use ("target": {"features": [...]},
 * LLVM's names), and the runtime refuses, at open, a bundle that needs one this CPU
 * lacks — naming the features and this CPU, and saying how to get a portable bundle.
 *
 * Detection is CPUID (and XGETBV for the OS's support of the AVX and AVX-512
 * register state) on x86; on aarch64 Linux the kernel's hwcaps (getauxval), for
 * the two features the compiler records there: "dotprod" (SDOT/UDOT, Armv8.2-A's
 * dot-product extension) and "i8mm" (USDOT). On other architectures the compiler
 * records no features (the board targets use a generic CPU), and a feature name
 * this runtime does not know is refused rather than assumed present. */
#include <stdio.h>
#include <string.h>

#include "krt.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

typedef struct {
  const char *name;
  unsigned leaf, subleaf;
  char reg; /* 'b', 'c', 'd' or 'a' */
  unsigned bit;
  unsigned os; /* XCR0 bits the OS must enable: 0x6 AVX, 0xe6 AVX-512 */
} feature;

static const feature features[] = {
    {"sse2", 1, 0, 'd', 26, 0},          {"sse3", 1, 0, 'c', 0, 0},          {"ssse3", 1, 0, 'c', 9, 0},
    {"fma", 1, 0, 'c', 12, 0x6},         {"sse4.1", 1, 0, 'c', 19, 0},       {"sse4.2", 1, 0, 'c', 20, 0},
    {"movbe", 1, 0, 'c', 22, 0},         {"popcnt", 1, 0, 'c', 23, 0},       {"aes", 1, 0, 'c', 25, 0},
    {"xsave", 1, 0, 'c', 26, 0},         {"avx", 1, 0, 'c', 28, 0x6},        {"f16c", 1, 0, 'c', 29, 0x6},
    {"bmi", 7, 0, 'b', 3, 0},            {"avx2", 7, 0, 'b', 5, 0x6},        {"bmi2", 7, 0, 'b', 8, 0},
    {"avx512f", 7, 0, 'b', 16, 0xe6},    {"avx512dq", 7, 0, 'b', 17, 0xe6},  {"adx", 7, 0, 'b', 19, 0},
    {"avx512ifma", 7, 0, 'b', 21, 0xe6}, {"avx512cd", 7, 0, 'b', 28, 0xe6},  {"sha", 7, 0, 'b', 29, 0},
    {"avx512bw", 7, 0, 'b', 30, 0xe6},   {"avx512vl", 7, 0, 'b', 31, 0xe6},  {"avx512vbmi", 7, 0, 'c', 1, 0xe6},
    {"avx512vbmi2", 7, 0, 'c', 6, 0xe6}, {"gfni", 7, 0, 'c', 8, 0},          {"vaes", 7, 0, 'c', 9, 0x6},
    {"vpclmulqdq", 7, 0, 'c', 10, 0x6},  {"avx512vnni", 7, 0, 'c', 11, 0xe6}, {"avx512bitalg", 7, 0, 'c', 12, 0xe6},
    {"avx512vpopcntdq", 7, 0, 'c', 14, 0xe6}, {"avx512fp16", 7, 0, 'd', 23, 0xe6},
    {"avxvnni", 7, 1, 'a', 4, 0x6},      {"avx512bf16", 7, 1, 'a', 5, 0xe6}, {"lzcnt", 0x80000001u, 0, 'c', 5, 0},
    {"prfchw", 0x80000001u, 0, 'c', 8, 0},
};

static unsigned long long xcr0(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* no OSXSAVE: no AVX state */
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (unsigned long long)hi << 32 | lo;
}

/* 1: present, 0: absent, -1: a name this runtime does not know. */
static int has(const char *name) {
  for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) {
    const feature *f = &features[i];
    if (strcmp(f->name, name) != 0) continue;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(f->leaf, f->subleaf, &a, &b, &c, &d)) return 0;
    unsigned r = f->reg == 'a' ? a : f->reg == 'b' ? b : f->reg == 'c' ? c : d;
    if (!(r >> f->bit & 1u)) return 0;
    return f->os == 0 || (xcr0() & f->os) == f->os;
  }
  return -1;
}

static void brand(char *out, size_t cap) {
  unsigned r[12];
  if (!__get_cpuid(0x80000000u, &r[0], &r[1], &r[2], &r[3]) || r[0] < 0x80000004u) {
    snprintf(out, cap, "this CPU");
    return;
  }
  for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
  char s[49];
  memcpy(s, r, 48);
  s[48] = 0;
  const char *p = s;
  while (*p == ' ') p++;
  snprintf(out, cap, "this CPU (%s)", p);
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>

static int has(const char *name) {
  if (!strcmp(name, "dotprod")) return (getauxval(AT_HWCAP) >> 20 & 1u) != 0; /* HWCAP_ASIMDDP */
  if (!strcmp(name, "i8mm")) return (getauxval(AT_HWCAP2) >> 13 & 1u) != 0;   /* HWCAP2_I8MM */
  return -1;
}
static void brand(char *out, size_t cap) { snprintf(out, cap, "this CPU"); }
#else
static int has(const char *name) {
  (void)name;
  return -1;
}
static void brand(char *out, size_t cap) { snprintf(out, cap, "this CPU"); }
#endif

kiln_status krt_cpu_check(const char *const *names, int32_t count, const char *target_name, krt_error *err) {
  char missing[512] = "", unknown[256] = "";
  size_t nm = 0, nu = 0;
  for (int32_t i = 0; i < count; i++) {
    int h = has(names[i]);
    if (h == 1) continue;
    char *buf = h == 0 ? missing : unknown;
    size_t cap = h == 0 ? sizeof missing : sizeof unknown, *n = h == 0 ? &nm : &nu;
    if (*n < cap) *n += (size_t)snprintf(buf + *n, cap - *n, "%s%.32s", *n ? ", " : "", names[i]);
  }
  if (!nm && !nu) return KILN_OK;
  char cpu[96];
  brand(cpu, sizeof cpu);
#if defined(__aarch64__)
  const char *portable = strstr(missing, "dotprod") ? "aarch64" : "aarch64-dotprod or aarch64";
#else
  const char *portable = "x86_64-avx2 or x86_64";
#endif
  if (nm)
    return krt_fail(err, KILN_ERR_LOAD,
                    "bundle (target '%.64s') uses CPU features %s%s, which %s lacks; compile it with --target %s "
                    "for a bundle that runs on more CPUs",
                    target_name, missing, nu ? " and others this runtime does not know" : "", cpu, portable);
  return krt_fail(err, KILN_ERR_LOAD, "bundle (target '%.64s') needs CPU features this runtime cannot check: %s",
                  target_name, unknown);
}
