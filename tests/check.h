/* check.h — the smallest test framework that does the job: CHECK macros count
 * passes and failures and print each failure with its file, line and the values
 * involved; check_finish prints the closing line every kiln test ends with,
 *   NAME: N passed, M failed[, K skipped]
 * and returns the process exit status (non-zero when anything failed).
 *
 * The counters are file-static: each test is one executable built from one .c
 * file, so there is exactly one set of them. A skip must say why (CHECK_SKIP
 * prints the reason); nothing is ever skipped silently. */
#ifndef KILN_CHECK_H
#define KILN_CHECK_H
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int check_passed_, check_failed_, check_skipped_;

static inline int check_report_(int ok, const char *file, int line, const char *what) {
  if (ok) {
    check_passed_++;
    return 1;
  }
  check_failed_++;
  printf("FAIL %s:%d: %s\n", file, line, what);
  fflush(stdout);
  return 0;
}

/* Plain condition. Evaluates to 1 when it held, so callers can guard follow-ups. */
#define CHECK(cond) check_report_(!!(cond), __FILE__, __LINE__, #cond)

/* Condition with a printf-style explanation printed on failure. */
#define CHECKF(cond, ...)                                                          \
  (check_report_(!!(cond), __FILE__, __LINE__, #cond) ? 1                          \
                                                      : (printf("     "), printf(__VA_ARGS__), printf("\n"), 0))

static inline int check_int_(long long a, long long b, const char *ea, const char *eb, const char *file, int line) {
  if (a == b) return check_report_(1, file, line, "");
  check_report_(0, file, line, "integers differ");
  printf("     %s = %lld\n     %s = %lld\n", ea, a, eb, b);
  return 0;
}
#define CHECK_INT(a, b) check_int_((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)

static inline int check_u64_(uint64_t a, uint64_t b, const char *ea, const char *eb, const char *file, int line) {
  if (a == b) return check_report_(1, file, line, "");
  check_report_(0, file, line, "unsigned integers differ");
  printf("     %s = %" PRIu64 " (0x%" PRIx64 ")\n     %s = %" PRIu64 " (0x%" PRIx64 ")\n", ea, a, a, eb, b, b);
  return 0;
}
#define CHECK_U64(a, b) check_u64_((uint64_t)(a), (uint64_t)(b), #a, #b, __FILE__, __LINE__)

/* Bit-exact comparison of 16-bit patterns (float16 / bfloat16), printed in hex. */
static inline int check_bits_(unsigned a, unsigned b, const char *ea, const char *eb, const char *file, int line) {
  if (a == b) return check_report_(1, file, line, "");
  check_report_(0, file, line, "bit patterns differ");
  printf("     %s = 0x%04x\n     %s = 0x%04x\n", ea, a, eb, b);
  return 0;
}
#define CHECK_BITS(a, b) check_bits_((unsigned)(a), (unsigned)(b), #a, #b, __FILE__, __LINE__)

/* Exact double comparison (NaN equals NaN; +0 and -0 are told apart). */
static inline int check_dbl_(double a, double b, const char *ea, const char *eb, const char *file, int line) {
  int ok = (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
  if (ok) return check_report_(1, file, line, "");
  check_report_(0, file, line, "doubles differ");
  printf("     %s = %.17g\n     %s = %.17g\n", ea, a, eb, b);
  return 0;
}
#define CHECK_DBL(a, b) check_dbl_((double)(a), (double)(b), #a, #b, __FILE__, __LINE__)

static inline int check_str_(const char *a, const char *b, const char *ea, const char *eb, const char *file, int line) {
  if (a && b && !strcmp(a, b)) return check_report_(1, file, line, "");
  check_report_(0, file, line, "strings differ");
  printf("     %s = \"%s\"\n     %s = \"%s\"\n", ea, a ? a : "(null)", eb, b ? b : "(null)");
  return 0;
}
#define CHECK_STR(a, b) check_str_((a), (b), #a, #b, __FILE__, __LINE__)

static inline int check_contains_(const char *hay, const char *needle, const char *eh, const char *file, int line) {
  if (hay && needle && strstr(hay, needle)) return check_report_(1, file, line, "");
  check_report_(0, file, line, "substring not found");
  printf("     %s = \"%s\"\n     expected to contain \"%s\"\n", eh, hay ? hay : "(null)", needle ? needle : "(null)");
  return 0;
}
#define CHECK_CONTAINS(hay, needle) check_contains_((hay), (needle), #hay, __FILE__, __LINE__)

/* Counts a skipped check and says why. */
#define CHECK_SKIP(...)                        \
  do {                                         \
    check_skipped_++;                          \
    printf("SKIP %s:%d: ", __FILE__, __LINE__); \
    printf(__VA_ARGS__);                       \
    printf("\n");                              \
  } while (0)

/* Prints the closing line; returns the exit status for main. */
static inline int check_finish(const char *name) {
  if (check_skipped_)
    printf("%s: %d passed, %d failed, %d skipped\n", name, check_passed_, check_failed_, check_skipped_);
  else
    printf("%s: %d passed, %d failed\n", name, check_passed_, check_failed_);
  fflush(stdout);
  return check_failed_ ? 1 : 0;
}

static inline int check_failures(void) { return check_failed_; }

#endif
