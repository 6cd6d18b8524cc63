/* link.c — object → shared library, and a reader of what it exports (for
 * --dump-after=link). LLVM's C API has no linker, so, like TVM's
 * export_library, we run the C compiler driver (`cc`, or the Debian cross
 * compiler for aarch64 / armv7 / riscv64 triples) with -shared in a private
 * temporary folder, without a shell (posix_spawnp), and read the result back. */
#include <spawn.h>
#include <stdint.h>
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

/* ---- describing a linked library (kiln compile --dump-after=link) ---- */

/* Little/big-endian field readers over a bounds-checked ELF image. */
typedef struct elf_view {
  const unsigned char *p;
  size_t n;
  int is64, big;
} elf_view;

static uint64_t rd(const elf_view *e, size_t off, int bytes) {
  if (off > e->n || (size_t)bytes > e->n - off) return 0;
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)e->p[off + (size_t)(e->big ? bytes - 1 - i : i)] << (8 * i);
  return v;
}

static const char *machine_name(unsigned m) {
  switch (m) {
  case 3: return "x86 (i386)";
  case 40: return "ARM";
  case 62: return "x86-64";
  case 183: return "AArch64";
  case 243: return "RISC-V";
  default: return "other";
  }
}

int pack_print_library(FILE *f, const void *lib, size_t size, const char *triple, gir_err *err) {
  elf_view e = {lib, size, 0, 0};
  if (size < 52 || memcmp(lib, "\x7f" "ELF", 4)) return gir_errf(err, "link: the library is not an ELF file");
  e.is64 = e.p[4] == 2;
  e.big = e.p[5] == 2;
  unsigned machine = (unsigned)rd(&e, 18, 2);
  fprintf(f, "library: %zu bytes, ELF%d %s-endian, machine %s (%u), for %s\n", size, e.is64 ? 64 : 32,
          e.big ? "big" : "little", machine_name(machine), machine, triple);
  uint64_t shoff = e.is64 ? rd(&e, 40, 8) : rd(&e, 32, 4);
  unsigned shentsize = (unsigned)rd(&e, e.is64 ? 58 : 46, 2), shnum = (unsigned)rd(&e, e.is64 ? 60 : 48, 2);
  unsigned need = e.is64 ? 64 : 40;
  if (shentsize < need || shoff > size || (uint64_t)shnum * shentsize > size - shoff)
    return gir_errf(err, "link: the library's section headers are out of bounds");
  const char *soname = NULL;
  int printed = 0;
  for (unsigned i = 0; i < shnum; i++) {
    size_t sh = (size_t)shoff + (size_t)i * shentsize;
    uint32_t type = (uint32_t)rd(&e, sh + 4, 4);
    if (type != 11 && type != 6) continue; /* SHT_DYNSYM, SHT_DYNAMIC */
    uint64_t off = e.is64 ? rd(&e, sh + 24, 8) : rd(&e, sh + 16, 4);
    uint64_t len = e.is64 ? rd(&e, sh + 32, 8) : rd(&e, sh + 20, 4);
    uint32_t link = (uint32_t)rd(&e, sh + (e.is64 ? 40 : 24), 4);
    if (link >= shnum || off > size || len > size - off) continue;
    size_t lsh = (size_t)shoff + (size_t)link * shentsize;
    uint64_t stroff = e.is64 ? rd(&e, lsh + 24, 8) : rd(&e, lsh + 16, 4);
    uint64_t strlen_ = e.is64 ? rd(&e, lsh + 32, 8) : rd(&e, lsh + 20, 4);
    if (stroff > size || strlen_ > size - stroff) continue;
    const char *strs = (const char *)e.p + stroff;
#define NAME_AT(o) ((o) < strlen_ && memchr(strs + (o), 0, (size_t)(strlen_ - (o))) ? strs + (o) : NULL)
    if (type == 6) { /* DT_SONAME (14) */
      size_t ent = e.is64 ? 16 : 8;
      for (uint64_t d = off; d + ent <= off + len; d += ent) {
        uint64_t tag = rd(&e, (size_t)d, e.is64 ? 8 : 4), val = rd(&e, (size_t)d + ent / 2, e.is64 ? 8 : 4);
        if (tag == 14) soname = NAME_AT(val);
      }
      continue;
    }
    size_t ent = e.is64 ? 24 : 16;
    fprintf(f, "exported functions:\n");
    for (uint64_t s = off + ent; s + ent <= off + len; s += ent) { /* entry 0 is the null symbol */
      uint32_t name = (uint32_t)rd(&e, (size_t)s, 4);
      unsigned info = (unsigned)rd(&e, (size_t)s + (e.is64 ? 4 : 12), 1);
      unsigned shndx = (unsigned)rd(&e, (size_t)s + (e.is64 ? 6 : 14), 2);
      uint64_t sz = e.is64 ? rd(&e, (size_t)s + 16, 8) : rd(&e, (size_t)s + 8, 4);
      const char *nm = NAME_AT(name);
      if (!nm || shndx == 0 || (info & 0xf) != 2 || (info >> 4) == 0) continue; /* defined global functions */
      fprintf(f, "  %-40s %8llu bytes\n", nm, (unsigned long long)sz);
      printed++;
    }
#undef NAME_AT
  }
  fprintf(f, "%d exported functions; soname: %s\n", printed,
          soname ? soname : "none (the runtime loads it from memory)");
  return 0;
}
