/* err.c — formatting for the user-error channel (see err.h). */
#include "err.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gir_errf(gir_err *e, const char *fmt, ...) {
  if (!e || e->msg[0]) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  gir_err_oneline(e);
  return -1;
}

void gir_err_oneline(gir_err *e) {
  for (char *c = e->msg; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
}

int gir_err_prefix(gir_err *e, const char *fmt, ...) {
  if (!e) return -1;
  char pre[512], old[sizeof e->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  memcpy(old, e->msg, sizeof old);
  snprintf(e->msg, sizeof e->msg, "%s: %.*s", pre, (int)(sizeof e->msg - 3 - strlen(pre) % sizeof e->msg), old);
  gir_err_oneline(e);
  return -1;
}
