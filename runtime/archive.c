/* archive.c — reads a bundle's tar archive into memory, trusting nothing.
 *
 * A bundle is a plain (uncompressed) tar archive of exactly four regular
 * files (five with the C target's source). Everything that could make an extractor misbehave is refused here,
 * before any byte is interpreted: links (symbolic or hard), directories,
 * devices, FIFOs, sparse entries, names that are absolute or contain a `..`
 * component, names we do not expect, an expected name seen twice, entries
 * larger than the cap (or than the archive itself, so a lying header cannot
 * make us allocate gigabytes), and archives that end early. The entries land
 * in 64-byte aligned buffers so params.bin can be used in place. Which library
 * entry is the right one (lib/<target>.so, or lib/<target>.ptx for a GPU
 * bundle) is decided later by the manifest. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "krt.h"

/* A name made safe to print inside quotes: control and non-ASCII bytes become
 * '?', long names are cut. */
static const char *printable(const char *name, char *buf, size_t cap) {
  size_t n = 0;
  for (; name[n] && n + 4 < cap; n++) {
    unsigned char c = (unsigned char)name[n];
    buf[n] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
  }
  if (name[n]) {
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  buf[n] = '\0';
  return buf;
}

static int has_dotdot_component(const char *path) {
  const char *p = path;
  while (*p) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.') return 1;
    if (!slash) break;
    p = slash + 1;
  }
  return 0;
}

/* lib/NAME.so (CPU code) or lib/NAME.ptx (GPU code, PTX text) with NAME made of
 * [A-Za-z0-9_.-], not starting with '.'. */
static int is_library_name(const char *path) {
  size_t len = strlen(path);
  size_t ext = len > 4 && strcmp(path + len - 4, ".ptx") == 0 ? 4 : 3;
  if (len <= 4 + ext || strncmp(path, "lib/", 4) != 0 || (ext == 3 && strcmp(path + len - 3, ".so") != 0)) return 0;
  if (path[4] == '.') return 0;
  for (size_t i = 4; i < len - ext; i++) {
    char c = path[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
             c == '.';
    if (!ok) return 0;
  }
  return 1;
}

/* src/NAME.c, NAME as in a library's name: the C target's source (optional). */
static int is_source_name(const char *path) {
  size_t len = strlen(path);
  if (len <= 6 || strncmp(path, "src/", 4) != 0 || strcmp(path + len - 2, ".c") != 0 || path[4] == '.') return 0;
  for (size_t i = 4; i < len - 2; i++) {
    char c = path[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
             c == '.';
    if (!ok) return 0;
  }
  return 1;
}

static int is_expected_name(const char *path) {
  return strcmp(path, "manifest.json") == 0 || strcmp(path, "plan.json") == 0 || strcmp(path, "params.bin") == 0 ||
         is_library_name(path) || is_source_name(path);
}

static const char *kind_of(const struct archive_entry *entry) {
  switch (archive_entry_filetype((struct archive_entry *)entry)) {
  case AE_IFLNK: return "a symbolic link";
  case AE_IFDIR: return "a directory";
  case AE_IFCHR: return "a character device";
  case AE_IFBLK: return "a block device";
  case AE_IFIFO: return "a FIFO";
  case AE_IFSOCK: return "a socket";
  default: return "not a regular file";
  }
}

/* Checks one header; on success stores the entry's name and size. */
static kiln_status check_header(krt_archive *out, struct archive_entry *entry, int64_t cap, uint64_t archive_size,
                                krt_error *err) {
  char shown[128];
  const char *path = archive_entry_pathname(entry);
  if (!path || !*path) return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry %d has no name", out->count + 1);
  printable(path, shown, sizeof shown);
  if (path[0] == '/') return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' has an absolute path", shown);
  if (has_dotdot_component(path))
    return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' has a '..' path component", shown);
  if (archive_entry_hardlink(entry))
    return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' is a hard link; only regular files are allowed", shown);
  if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_symlink(entry))
    return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' is %s; only regular files are allowed", shown,
                    kind_of(entry));
  if (archive_entry_sparse_count(entry) > 0)
    return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' is a sparse file", shown);
  if (!is_expected_name(path))
    return krt_fail(err, KILN_ERR_FORMAT,
                    "bundle: unexpected entry '%s' (a bundle holds manifest.json, plan.json, params.bin, "
                    "lib/<target>.so (lib/<target>.ptx for a GPU) and, from the C target, src/<target>.c)",
                    shown);
  for (int32_t i = 0; i < out->count; i++) {
    const char *seen = out->entries[i].name;
    if (strcmp(seen, path) == 0) return krt_fail(err, KILN_ERR_FORMAT, "bundle: duplicated entry '%s'", shown);
    if (is_library_name(seen) && is_library_name(path)) {
      char shown2[128];
      return krt_fail(err, KILN_ERR_FORMAT, "bundle: more than one library entry ('%s' and '%s')",
                      printable(seen, shown2, sizeof shown2), shown);
    }
    if (is_source_name(seen) && is_source_name(path)) {
      char shown2[128];
      return krt_fail(err, KILN_ERR_FORMAT, "bundle: more than one source entry ('%s' and '%s')",
                      printable(seen, shown2, sizeof shown2), shown);
    }
  }
  /* Five distinct expected names with at most one library and one source: count stays ≤ 5. */
  if (out->count >= KRT_ENTRY_COUNT) return krt_fail(err, KILN_ERR_FORMAT, "bundle: too many entries");
  if (!archive_entry_size_is_set(entry))
    return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' has no size", shown);
  int64_t size = archive_entry_size(entry);
  if (size < 0) return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' has a negative size", shown);
  if ((uint64_t)size > archive_size)
    return krt_fail(err, KILN_ERR_FORMAT,
                    "bundle: entry '%s' claims %lld bytes but the archive is only %llu bytes (truncated archive?)",
                    shown, (long long)size, (unsigned long long)archive_size);
  if (size > cap)
    return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' is %lld bytes, over the cap of %lld bytes", shown,
                    (long long)size, (long long)cap);
  if ((uint64_t)size > (uint64_t)SIZE_MAX)
    return krt_fail(err, KILN_ERR_NOMEM, "bundle: entry '%s' does not fit in this address space", shown);
  krt_entry *e = &out->entries[out->count];
  if (krt_strdup(path, &e->name, err) != KILN_OK) return err->status;
  e->size = (size_t)size;
  out->count++;
  return KILN_OK;
}

static kiln_status read_data(struct archive *a, krt_entry *e, krt_error *err) {
  char shown[128];
  e->data = krt_aligned_alloc(e->size);
  if (!e->data) return krt_fail(err, KILN_ERR_NOMEM, "bundle: out of memory reading '%s' (%zu bytes)", e->name, e->size);
  size_t got = 0;
  while (got < e->size) {
    la_ssize_t r = archive_read_data(a, e->data + got, e->size - got);
    if (r < 0)
      return krt_fail(err, KILN_ERR_FORMAT, "bundle: cannot read entry '%s': %s",
                      printable(e->name, shown, sizeof shown), archive_error_string(a) ? archive_error_string(a) : "?");
    if (r == 0)
      return krt_fail(err, KILN_ERR_FORMAT, "bundle: entry '%s' ends after %zu of %zu bytes (truncated archive)",
                      printable(e->name, shown, sizeof shown), got, e->size);
    got += (size_t)r;
  }
  return KILN_OK;
}

/* Walks an opened archive of archive_size bytes. */
static kiln_status read_all(struct archive *a, int64_t max_entry_bytes, uint64_t archive_size, krt_archive *out,
                            krt_error *err) {
  int64_t cap = max_entry_bytes > 0 ? max_entry_bytes : KILN_DEFAULT_MAX_ENTRY_BYTES;
  for (;;) {
    struct archive_entry *entry = NULL;
    int r = archive_read_next_header(a, &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) {
      const char *why = archive_error_string(a);
      return krt_fail(err, KILN_ERR_FORMAT, "bundle: not a valid tar archive (after %d entries): %s", out->count,
                      why ? why : "unreadable header");
    }
    if (check_header(out, entry, cap, archive_size, err) != KILN_OK) return err->status;
    if (read_data(a, &out->entries[out->count - 1], err) != KILN_OK) return err->status;
  }
  return KILN_OK;
}

static struct archive *new_reader(krt_error *err) {
  struct archive *a = archive_read_new();
  if (!a) {
    krt_fail(err, KILN_ERR_NOMEM, "bundle: out of memory creating the archive reader");
    return NULL;
  }
  /* Plain tar only: no compression filters, no other formats. */
  archive_read_support_format_tar(a);
  return a;
}

kiln_status krt_archive_read_file(const char *path, int64_t max_entry_bytes, krt_archive *out, krt_error *err) {
  memset(out, 0, sizeof *out);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return krt_fail(err, KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return krt_fail(err, KILN_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return krt_fail(err, KILN_ERR_IO, "%s: not a regular file", path);
  }
  struct archive *a = new_reader(err);
  if (!a) {
    close(fd);
    return err->status;
  }
  if (archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK) {
    const char *why = archive_error_string(a);
    krt_fail(err, KILN_ERR_FORMAT, "%s: not a valid tar archive: %s", path, why ? why : "?");
  } else {
    read_all(a, max_entry_bytes, (uint64_t)st.st_size, out, err);
  }
  archive_read_free(a);
  close(fd);
  return err->status;
}

kiln_status krt_archive_read_memory(const void *data, size_t size, int64_t max_entry_bytes, krt_archive *out,
                                    krt_error *err) {
  memset(out, 0, sizeof *out);
  if (!data && size > 0) return krt_fail(err, KILN_ERR_INVALID_ARGUMENT, "bundle: NULL data with %zu bytes", size);
  static const char empty[1] = {0};
  struct archive *a = new_reader(err);
  if (!a) return err->status;
  if (archive_read_open_memory(a, data ? data : empty, size) != ARCHIVE_OK) {
    const char *why = archive_error_string(a);
    krt_fail(err, KILN_ERR_FORMAT, "bundle: not a valid tar archive: %s", why ? why : "?");
  } else {
    read_all(a, max_entry_bytes, (uint64_t)size, out, err);
  }
  archive_read_free(a);
  return err->status;
}

void krt_archive_free(krt_archive *archive) {
  for (int32_t i = 0; i < archive->count; i++) {
    free(archive->entries[i].name);
    free(archive->entries[i].data);
  }
  memset(archive, 0, sizeof *archive);
}

krt_entry *krt_archive_find(krt_archive *archive, const char *name) {
  for (int32_t i = 0; i < archive->count; i++)
    if (strcmp(archive->entries[i].name, name) == 0) return &archive->entries[i];
  return NULL;
}
