/* library.c — loads lib/<target>.so from memory and resolves the kernels.
 *
 * dlopen wants a path, and the bundle's library only exists in memory, so it
 * is written to a private file first: an anonymous memfd (opened through
 * /proc/self/fd) where the kernel has them, else a mkstemp file in $TMPDIR
 * that is unlinked right after dlopen. Either way nobody else can swap the
 * file, nothing is left on disk, and every model gets its own copy (RTLD_LOCAL:
 * two bundles may export the same symbol names). Build with -DKRT_NO_MEMFD to
 * use the temporary file always.
 *
 * dlopen hands back an object already loaded under the same name instead of
 * loading the file: the library of another model open in this process, if its
 * path were ours again — a memfd's /proc/self/fd/N once N is free, a temporary
 * name made again after unlink — and this model would run that model's kernels.
 * So the memfd stays open while its library is loaded (N stays taken: closed by
 * krt_library_close), and no path is dlopen'ed while something is loaded under
 * its name (RTLD_NOLOAD asks): another temporary name then, or the temporary
 * file instead of the memfd.
 *
 * Before any of that, the library must be code for this machine: the manifest's
 * target triple names this architecture and the ELF header says this class, byte
 * order and machine — else one line saying what the bundle is built for.
 *
 * A symbol is accepted only if it lies in an executable segment of that very
 * library: dlsym also searches the library's dependencies, and a plan naming
 * "system" or "memcpy" must not make run call into libc with buffer pointers. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "krt.h"

static int write_all(int fd, const unsigned char *data, size_t size) {
  while (size > 0) {
    ssize_t w = write(fd, data, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return 0;
    data += w;
    size -= (size_t)w;
  }
  return 1;
}

/* Whether an object is loaded under this name (dlopen would return it). */
static int name_taken(const char *path) {
  void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

/* Tries an anonymous memfd; returns 0 (and no handle) when memfds or /proc are
 * not available or its name is taken, so the caller falls back to a temporary
 * file. On success *fd is the memfd, to stay open while the library is loaded. */
static int open_via_memfd(const krt_entry *lib, void **handle, int *lib_fd, char *why, size_t whylen) {
#if defined(__linux__) && defined(MFD_CLOEXEC) && !defined(KRT_NO_MEMFD)
  int fd = memfd_create("kiln-kernels", MFD_CLOEXEC);
  if (fd < 0) return 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  if (access(path, R_OK) != 0 || !write_all(fd, lib->data, lib->size) || name_taken(path)) {
    close(fd);
    return 0;
  }
  *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!*handle) {
    const char *e = dlerror();
    snprintf(why, whylen, "%s", e ? e : "dlopen failed");
    close(fd);
  } else {
    *lib_fd = fd;
  }
  return 1;
#else
  (void)lib, (void)handle, (void)lib_fd, (void)why, (void)whylen;
  return 0;
#endif
}

static void open_via_tempfile(const krt_entry *lib, void **handle, char *why, size_t whylen) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  char path[4096];
  if (snprintf(path, sizeof path, "%s/kiln-kernels-XXXXXX", dir) >= (int)sizeof path) {
    snprintf(why, whylen, "TMPDIR is too long");
    return;
  }
  int fd = -1;
  for (int tries = 0; tries < 100 && fd < 0; tries++) { /* a name nothing loaded has */
    path[strlen(path) - 6] = 0;
    strcat(path, "XXXXXX");
    if ((fd = mkstemp(path)) >= 0 && name_taken(path)) {
      unlink(path);
      close(fd);
      fd = -1;
      errno = EEXIST;
    } else if (fd < 0 && errno != EEXIST) {
      break;
    }
  }
  if (fd < 0) {
    snprintf(why, whylen, "cannot create a temporary file in %s: %s", dir, strerror(errno));
    return;
  }
  if (!write_all(fd, lib->data, lib->size)) {
    snprintf(why, whylen, "cannot write %.200s: %s", path, strerror(errno));
  } else {
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
      const char *e = dlerror();
      snprintf(why, whylen, "%s", e ? e : "dlopen failed");
    }
  }
  unlink(path);
  close(fd);
}

typedef struct {
  const struct link_map *map;
  uintptr_t addr;
  int found_object;
  int inside; /* 1: executable segment, 2: other segment */
} symbol_probe;

static int probe_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  symbol_probe *p = data;
  if (info->dlpi_addr != p->map->l_addr || !info->dlpi_name || !p->map->l_name ||
      strcmp(info->dlpi_name, p->map->l_name) != 0)
    return 0;
  p->found_object = 1;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t start = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    if (p->addr >= start && p->addr - start < (uintptr_t)ph->p_memsz) {
      p->inside = (ph->p_flags & PF_X) ? 1 : 2;
      break;
    }
  }
  return 1;
}

static kiln_status resolve(kiln_model *m, const char *lib_name, krt_error *err) {
  struct link_map *map = NULL;
  if (dlinfo(m->lib, RTLD_DI_LINKMAP, &map) != 0 || !map)
    return krt_fail(err, KILN_ERR_LOAD, "%s: cannot inspect the loaded library", lib_name);
  for (int32_t k = 0; k < m->kernel_count; k++) {
    krt_kernel *kn = &m->kernels[k];
    dlerror();
    void *sym = dlsym(m->lib, kn->symbol);
    if (!sym)
      return krt_fail(err, KILN_ERR_LOAD, "plan.json: kernels[%d] '%.64s': symbol '%s' is not exported by %s", k,
                      kn->name, kn->symbol, lib_name);
    symbol_probe probe = {map, (uintptr_t)sym, 0, 0};
    dl_iterate_phdr(probe_object, &probe);
    if (!probe.found_object || probe.inside == 0)
      return krt_fail(err, KILN_ERR_LOAD, "plan.json: kernels[%d] '%.64s': symbol '%s' is not defined in %s", k,
                      kn->name, kn->symbol, lib_name);
    if (probe.inside != 1)
      return krt_fail(err, KILN_ERR_LOAD, "plan.json: kernels[%d] '%.64s': symbol '%s' in %s is not code", k,
                      kn->name, kn->symbol, lib_name);
    /* POSIX guarantees that a dlsym'd function address converts to a pointer. */
    memcpy(&kn->fn, &sym, sizeof sym);
  }
  return KILN_OK;
}

/* This process's architecture as the bundle's triple and ELF header name it. */
typedef struct {
  const char *arch;      /* a triple's first field, normalized (arch_of) */
  unsigned machine;      /* ELF e_machine */
  unsigned char cls;     /* ELFCLASS32 / ELFCLASS64 */
  unsigned char data;    /* ELFDATA2LSB / ELFDATA2MSB */
} host_arch;

static host_arch this_host(void) {
  host_arch h = {"unknown", EM_NONE, sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32, ELFDATA2LSB};
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  h.data = ELFDATA2MSB;
#endif
#if defined(__x86_64__)
  h.arch = "x86_64", h.machine = EM_X86_64;
#elif defined(__i386__)
  h.arch = "i386", h.machine = EM_386;
#elif defined(__aarch64__)
  h.arch = "aarch64", h.machine = EM_AARCH64;
#elif defined(__arm__)
  h.arch = "arm", h.machine = EM_ARM;
#elif defined(__riscv)
  h.arch = sizeof(void *) == 8 ? "riscv64" : "riscv32", h.machine = EM_RISCV;
#elif defined(__powerpc64__)
  h.arch = "powerpc64", h.machine = EM_PPC64;
#elif defined(__s390x__)
  h.arch = "s390x", h.machine = EM_S390;
#endif
  return h;
}

/* A triple's architecture, with the spellings of one architecture made one:
 * armv7 / armv7a / thumbv7 → arm, amd64 → x86_64, arm64 → aarch64, i686 → i386. */
static void arch_of(const char *triple, char *out, size_t cap) {
  size_t n = strcspn(triple, "-");
  snprintf(out, cap, "%.*s", (int)n, triple);
  if (!strncmp(out, "arm64", 5)) snprintf(out, cap, "aarch64");
  else if (!strncmp(out, "arm", 3) || !strncmp(out, "thumb", 5)) snprintf(out, cap, "arm");
  else if (!strcmp(out, "amd64")) snprintf(out, cap, "x86_64");
  else if (out[0] == 'i' && strlen(out) == 4 && !strcmp(out + 2, "86")) snprintf(out, cap, "i386");
}

static const char *machine_name(unsigned m) {
  switch (m) {
  case EM_386: return "i386";
  case EM_ARM: return "ARM";
  case EM_X86_64: return "x86-64";
  case EM_AARCH64: return "AArch64";
  case EM_RISCV: return "RISC-V";
  case EM_PPC64: return "PowerPC64";
  case EM_S390: return "S/390";
  default: return "unknown";
  }
}

/* Before dlopen (whose message for a foreign library is a baffling "cannot open
 * shared object file"): the manifest's triple must name this architecture, and
 * the library must be an ELF shared object of this class, byte order and
 * machine. */
static kiln_status check_architecture(const kiln_model *m, const krt_entry *lib, krt_error *err) {
  static const unsigned char elf_magic[4] = {0x7f, 'E', 'L', 'F'};
  if (lib->size < 64 || memcmp(lib->data, elf_magic, 4) != 0)
    return krt_fail(err, KILN_ERR_LOAD, "%s: not an ELF shared object", lib->name);
  const unsigned char *e = lib->data;
  unsigned char cls = e[EI_CLASS], data = e[EI_DATA];
  unsigned machine = data == ELFDATA2MSB ? (unsigned)e[18] << 8 | e[19] : (unsigned)e[19] << 8 | e[18];
  unsigned type = data == ELFDATA2MSB ? (unsigned)e[16] << 8 | e[17] : (unsigned)e[17] << 8 | e[16];
  host_arch h = this_host();
  char arch[32], elf[96];
  arch_of(m->target_triple, arch, sizeof arch);
  snprintf(elf, sizeof elf, "ELF machine %s, %s-bit %s-endian", machine_name(machine), cls == ELFCLASS64 ? "64" : "32",
           data == ELFDATA2MSB ? "big" : "little");
  if (strcmp(arch, h.arch) != 0)
    return krt_fail(err, KILN_ERR_LOAD, "bundle is built for %.64s (%s); this host is %s", m->target_triple, elf,
                    h.arch);
  if (cls != h.cls || data != h.data || machine != h.machine)
    return krt_fail(err, KILN_ERR_LOAD, "%s is not code for this host: %s, but this host is %s (ELF machine %s, "
                    "%s-bit %s-endian)", lib->name, elf, h.arch, machine_name(h.machine),
                    h.cls == ELFCLASS64 ? "64" : "32", h.data == ELFDATA2MSB ? "big" : "little");
  if (type != ET_DYN) return krt_fail(err, KILN_ERR_LOAD, "%s: not a shared object (ELF type %u)", lib->name, type);
  return KILN_OK;
}

kiln_status krt_library_load(kiln_model *m, const krt_entry *lib, krt_error *err) {
  if (check_architecture(m, lib, err) != KILN_OK) return err->status;
  if (krt_cpu_check((const char *const *)m->target_features, m->target_feature_count, m->target_name, err) != KILN_OK)
    return err->status;
  char why[KRT_ERR_MAX / 2] = "";
  void *handle = NULL;
  if (!open_via_memfd(lib, &handle, &m->lib_fd, why, sizeof why)) open_via_tempfile(lib, &handle, why, sizeof why);
  if (!handle) return krt_fail(err, KILN_ERR_LOAD, "%s: cannot load: %s", lib->name, why);
  m->lib = handle;
  return resolve(m, lib->name, err);
}

void krt_library_close(kiln_model *m) {
  if (m->lib) dlclose(m->lib);
  if (m->lib_fd >= 0) close(m->lib_fd); /* only now may its number, and so the name, be another's */
  m->lib = NULL;
  m->lib_fd = -1;
}
