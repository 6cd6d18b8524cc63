/* err.h — the compiler's user-error channel. Functions that can fail on bad input
 * take a gir_err*, fill it with one line that says what and where, and return -1
 * (or NULL). Broken internal invariants are asserts, not errors. */
#ifndef GIR_ERR_H
#define GIR_ERR_H

typedef struct gir_err {
  char msg[1024];
} gir_err;

/* Formats msg (if e is non-NULL and empty: the first error wins) and returns -1. */
int gir_errf(gir_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the existing message with context: "<context>: <old msg>". Returns -1. */
int gir_err_prefix(gir_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Keeps the message one line: control characters (names quoted from a file may
 * hold any byte) become '?'. Both functions above call it; so must any other
 * writer of msg. */
void gir_err_oneline(gir_err *e);

#endif
