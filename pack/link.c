/* link.c — object → shared library. LLVM's C API has no linker, so, like TVM's
 * export_library, we run the C compiler driver (`cc`, or the Debian cross
 * compiler for aarch64 / armv7 / riscv64 triples) with -shared in a private
 * temporary folder, without a shell (posix_spawnp), and read the result back. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "link.h"

extern char **environ;

static const char *driver_for(const char *triple) {
  if (!triple) return "cc";
  if (!strncmp(triple, "aarch64", 7)) return "aarch64-linux-gnu-gcc";
  if (!strncmp(triple, "arm", 3)) return "arm-linux-gnueabihf-gcc";
  if (!strncmp(triple, "riscv64", 7)) return "riscv64-linux-gnu-gcc";
  return "cc";
}

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

int pack_link_shared(const void *obj, size_t obj_bytes, const char *triple, void **lib, size_t *lib_bytes, gir_err *err) {
  char dir[] = "/tmp/kiln-link-XXXXXX";
  if (!mkdtemp(dir)) return gir_errf(err, "link: cannot create a temporary folder");
  char o[64], so[64];
  snprintf(o, sizeof o, "%s/k.o", dir);
  snprintf(so, sizeof so, "%s/k.so", dir);
  int rc = 0;
  if (write_file(o, obj, obj_bytes) < 0) rc = gir_errf(err, "link: cannot write the object");
  if (rc == 0) {
    const char *drv = driver_for(triple);
    char *argv[] = {(char *)drv, "-shared", "-o", so, o, "-lm", NULL};
    pid_t pid;
    int st = 0;
    if (posix_spawnp(&pid, drv, NULL, NULL, argv, environ) != 0) rc = gir_errf(err, "link: cannot run %s", drv);
    else if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      rc = gir_errf(err, "link: %s -shared failed (status %d)", drv, st);
  }
  if (rc == 0) {
    FILE *f = fopen(so, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) < 0) rc = gir_errf(err, "link: no shared library produced");
    else {
      *lib_bytes = (size_t)sb.st_size;
      *lib = malloc(*lib_bytes ? *lib_bytes : 1);
      if (!*lib || fread(*lib, 1, *lib_bytes, f) != *lib_bytes) rc = gir_errf(err, "link: cannot read the library");
    }
    if (f) fclose(f);
  }
  unlink(o);
  unlink(so);
  rmdir(dir);
  return rc;
}
