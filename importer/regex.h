/* regex.h — RE2-syntax patterns compiled at compile time into a byte DFA for
 * RegexFullMatch (regex.c says how). The DFA is a table the kernel walks
 * (lower/lower_str.c): row q, column c (a byte) is the next state; column 256 is 1
 * when q accepts at the end of the text. State 0 is the start. */
#ifndef IMP_REGEX_H
#define IMP_REGEX_H
#include <stddef.h>
#include <stdint.h>
#include "arena.h"

#define IMP_REGEX_COLS 257
#define IMP_REGEX_MAX_STATES 4096

typedef struct imp_regex_dfa {
  int32_t n_states;
  int32_t *table; /* n_states × IMP_REGEX_COLS, in the arena */
} imp_regex_dfa;

/* Compiles pattern (len bytes) into *out, at most max_states states (0:
 * IMP_REGEX_MAX_STATES). 0, or -1 with why set (the construct that is not
 * supported, or a syntax error, with its offset; or the state count). */
int imp_regex_compile(const char *pattern, size_t len, int32_t max_states, gir_arena *a, imp_regex_dfa *out,
                      char *why, size_t why_len);
/* Whether the whole of s (n bytes) matches: the kernel's walk, for tests. */
int imp_regex_full_match(const imp_regex_dfa *d, const uint8_t *s, size_t n);

#endif
