/* c_build.c — generated C → a shared library or an object, with a C compiler
 * driver run without a shell (posix_spawnp) in a private temporary folder that
 * holds the source and kiln_abi.h, as pack/link.c runs the linker. The flags are
 * fixed (TGT_C_FLAGS, -O2, -fPIC): the generated code's semantics need
 * -ffp-contract=off and no fast-math. The compiler's own messages go to a log
 * in that folder; a failure reports its first error line. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include "c_backend.h"

extern char **environ;

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

static int read_file(const char *path, void **data, size_t *n) {
  FILE *f = fopen(path, "rb");
  struct stat sb;
  int rc = -1;
  if (f && fstat(fileno(f), &sb) == 0) {
    *n = (size_t)sb.st_size;
    *data = malloc(*n ? *n : 1);
    if (*data && fread(*data, 1, *n, f) == *n) rc = 0;
    else free(*data), *data = NULL;
  }
  if (f) fclose(f);
  return rc;
}

/* The first line of the log that says "error" (or its first line), for the message. */
static void first_error(const char *log, char *out, size_t cap) {
  out[0] = 0;
  FILE *f = fopen(log, "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!out[0]) snprintf(out, cap, "%.300s", line);
    if (strstr(line, "error")) {
      snprintf(out, cap, "%.300s", line);
      break;
    }
  }
  fclose(f);
}

static int build(const char *src, size_t len, const char *driver, int shared, void **out, size_t *out_bytes,
                 gir_err *err) {
  char dir[] = "/tmp/kiln-cc-XXXXXX";
  if (!mkdtemp(dir)) return gir_errf(err, "c: cannot create a temporary folder");
  char c[64], h[64], o[64], log[64];
  snprintf(c, sizeof c, "%s/kernels.c", dir);
  snprintf(h, sizeof h, "%s/kiln_abi.h", dir);
  snprintf(o, sizeof o, "%s/kernels.%s", dir, shared ? "so" : "o");
  snprintf(log, sizeof log, "%s/cc.log", dir);
  const char *drv = driver ? driver : "cc";
  int rc = 0;
  if (write_file(c, src, len) < 0 || write_file(h, tgt_c_abi_text(), strlen(tgt_c_abi_text())) < 0)
    rc = gir_errf(err, "c: cannot write the source into %s", dir);
  if (rc == 0) {
    char *shared_argv[] = {(char *)drv, TGT_C_FLAGS, "-O2", "-fPIC", "-shared", "-o", o, c, "-lm", NULL};
    char *object_argv[] = {(char *)drv, TGT_C_FLAGS, "-O2", "-fPIC", "-c", "-o", o, c, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int st = 0;
    if (posix_spawnp(&pid, drv, &fa, NULL, shared ? shared_argv : object_argv, environ) != 0)
      rc = gir_errf(err, "c: cannot run the C compiler %s", drv);
    else if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      char why[400];
      first_error(log, why, sizeof why);
      rc = gir_errf(err, "c: %s failed on the generated source: %s", drv, why[0] ? why : "no message");
    }
    posix_spawn_file_actions_destroy(&fa);
  }
  if (rc == 0 && read_file(o, out, out_bytes) < 0) rc = gir_errf(err, "c: %s produced no %s", drv, shared ? "library" : "object");
  unlink(c), unlink(h), unlink(o), unlink(log);
  rmdir(dir);
  return rc;
}

int tgt_c_compile_shared(const char *src, size_t len, const char *driver, void **lib, size_t *lib_bytes, gir_err *err) {
  return build(src, len, driver, 1, lib, lib_bytes, err);
}

int tgt_c_compile_object(const char *src, size_t len, const char *driver, void **obj, size_t *obj_bytes, gir_err *err) {
  return build(src, len, driver, 0, obj, obj_bytes, err);
}

int tgt_c_lower_target(const char *name, lower_target *out, gir_err *err) {
  *out = lower_target_default();
  out->masked_loads = 0; /* C's lanes are a loop: a lazy choice per lane */
  if (name && !strcmp(name, "c")) {
    out->vec_f32 = 4; /* SSE, NEON, MVE: what C compilers vectorize to */
    out->vec_regs = 16;
    return 0;
  }
  if (name && (!strcmp(name, "cortex-m4") || !strcmp(name, "cortex-m7"))) {
    out->vec_f32 = 1; /* an FPU of 32 single-precision registers, no SIMD: scalar tiles, as for rv64gc */
    out->vec_regs = 32;
    out->threads = 1;
    return 0;
  }
  if (name && !strcmp(name, "cortex-m55")) {
    out->vec_f32 = 4; /* MVE: eight 128-bit Q registers */
    out->vec_regs = 8;
    out->threads = 1;
    return 0;
  }
  return gir_errf(err, "c: unknown target '%s' (c, cortex-m4, cortex-m7, cortex-m55)", name ? name : "(null)");
}

int tgt_c_is_target(const char *name) {
  return name && (!strcmp(name, "c") || tgt_c_is_bare_metal(name));
}

int tgt_c_is_bare_metal(const char *name) {
  return name && (!strcmp(name, "cortex-m4") || !strcmp(name, "cortex-m7") || !strcmp(name, "cortex-m55"));
}

const char *tgt_c_host_triple(char *buf, size_t cap) {
  struct utsname u;
  snprintf(buf, cap, "%s-unknown-linux-gnu", uname(&u) == 0 ? u.machine : "unknown");
  return buf;
}

const char *tgt_c_compiler(const char *name, const char *const **cflags) {
  static const char *const none[] = {NULL};
  static const char *const m4[] = {"-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", NULL};
  static const char *const m7[] = {"-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-d16", NULL};
  static const char *const m55[] = {"-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", NULL};
  *cflags = none;
  if (!name || !strcmp(name, "c")) return "cc";
  *cflags = !strcmp(name, "cortex-m4") ? m4 : !strcmp(name, "cortex-m7") ? m7 : m55;
  return "arm-none-eabi-gcc";
}
