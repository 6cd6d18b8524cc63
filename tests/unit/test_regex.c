/* test_regex.c — the RegexFullMatch pattern compiler (importer/regex.c): many
 * patterns (the node tests' two among them) against many texts, each expectation
 * Python's re.fullmatch on bytes (ASCII classes and \b, like RE2's; generated once
 * into regex_cases.h, where RE2 and Python agree), then UTF-8 cases by hand (. and
 * negated classes take one whole character), the DFA state cap, and every refused
 * construct with its message. */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "regex.h"

typedef struct rcase {
  const char *pattern, *text;
  int match;
} rcase;

static const rcase cases[] = {
#include "regex_cases.h"
    /* UTF-8: one character, several bytes */
    {".", "\xc3\xa9", 1},
    {"..", "\xc3\xa9", 0},
    {"a.b", "a\xe4\xb8\xad" "b", 1},
    {"[^a]", "\xe4\xb8\xad", 1},
    {"\\W", "\xe4\xb8\xad", 1},
    {"\\w", "\xe4\xb8\xad", 0},
    {"\xe4\xb8\xad+", "\xe4\xb8\xad\xe4\xb8\xad", 1},
    {"\xe4\xb8\xad+", "\xe4\xb8\xad\xb8\xad", 0},
    {"\\x{4e2d}", "\xe4\xb8\xad", 1},
    {".{2}", "\xf0\x9f\x98\x80z", 1},
    {"\\S+", "\xc3\xa9t\xc3\xa9", 1},
    {"a\\.b", "a.b", 1},
};

static const struct {
  const char *pattern, *why;
} refused[] = {
    {"(?i)abc", "flags"},
    {"a(?=b)", "lookaround"},
    {"(a)\\1", "backreferences"},
    {"\\p{L}", "Unicode classes"},
    {"[[:alpha:]]", "POSIX classes"},
    {"[\xc3\xa9]", "non-ASCII characters inside a class"},
    {"a**", "repetition of a repetition"},
    {"*a", "nothing to repeat"},
    {"(ab", "missing )"},
    {"ab)", "unexpected )"},
    {"[ab", "missing ]"},
    {"a{2000}", "over 1000"},
    {"a{3,2}", "m < n"},
    {"[z-a]", "below its start"},
    {"\\Qa\\E", "not supported"},
    {"abc\\", "trailing"},
};

int main(void) {
  gir_arena *a = gir_arena_new();
  char why[512];
  imp_regex_dfa d = {0};
  const char *compiled = NULL;
  int n = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; i < n; i++) {
    if (!compiled || strcmp(compiled, cases[i].pattern)) {
      compiled = cases[i].pattern;
      if (imp_regex_compile(compiled, strlen(compiled), 0, a, &d, why, sizeof why) < 0) {
        CHECKF(0, "pattern '%s' refused: %s", compiled, why);
        while (i + 1 < n && !strcmp(cases[i + 1].pattern, compiled)) i++;
        continue;
      }
    }
    int got = imp_regex_full_match(&d, (const uint8_t *)cases[i].text, strlen(cases[i].text));
    CHECKF(got == cases[i].match, "'%s' on '%s': %d, expected %d", cases[i].pattern, cases[i].text, got, cases[i].match);
  }
  /* every row of a table points at a state; the start is 0 */
  CHECK(imp_regex_compile("(a|b)*abb", 9, 0, a, &d, why, sizeof why) == 0);
  for (int32_t q = 0; q < d.n_states; q++)
    for (int c = 0; c < 256; c++) CHECK(d.table[q * IMP_REGEX_COLS + c] >= 0 && d.table[q * IMP_REGEX_COLS + c] < d.n_states);
  /* the state cap: the 12th byte from the end needs 2^12 states */
  const char *big = "(a|b)*a(a|b){11}";
  CHECK(imp_regex_compile(big, strlen(big), 100, a, &d, why, sizeof why) < 0);
  CHECKF(strstr(why, "more than 100 DFA states") != NULL, "%s", why);
  /* the work cap: sets of many NFA states in every DFA state (bounded compile time) */
  const char *heavy[] = {"(a?){1000}a{1000}", ".{1000}", "(.?){1000}"};
  for (int i = 0; i < 3; i++) {
    why[0] = 0;
    CHECK(imp_regex_compile(heavy[i], strlen(heavy[i]), 0, a, &d, why, sizeof why) < 0);
    CHECKF(strstr(why, "too complex") || strstr(why, "more than"), "'%s': %s", heavy[i], why);
  }
  /* large but cheap ones compile */
  const char *fine[] = {"(a?){500}a{500}", "a{1000}b{1000}c{1000}", "[\\w.]{0,1000}@x"};
  for (int i = 0; i < 3; i++)
    CHECKF(imp_regex_compile(fine[i], strlen(fine[i]), 0, a, &d, why, sizeof why) == 0, "'%s': %s", fine[i], why);
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    why[0] = 0;
    int rc = imp_regex_compile(refused[i].pattern, strlen(refused[i].pattern), 0, a, &d, why, sizeof why);
    CHECKF(rc < 0 && strstr(why, refused[i].why) && strstr(why, "offset"), "'%s': %d '%s', expected '%s'",
           refused[i].pattern, rc, why, refused[i].why);
  }
  gir_arena_free(a);
  return check_finish("test_regex");
}
