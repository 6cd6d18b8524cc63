/* npz.c — NumPy .npz files (see npy.h): a zip archive whose members are .npy
 * files named after the arrays. numpy.savez stores them, savez_compressed
 * deflates them; libarchive (already linked for bundles) reads both, through the
 * zip's central directory, and writes stored members. A member is read whole
 * and handed to npy_parse by the caller, who knows which dtype to expect. Sizes
 * are bounded: a member count, and the unpacked bytes in all (a deflated member
 * can claim to grow without limit). */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "npy.h"

#define NPZ_MAX_MEMBERS 65536

#define FAIL(...) (snprintf(why, whylen, __VA_ARGS__), -1)

void npz_free(npz_file *f) {
  for (int32_t i = 0; f->members && i < f->n; i++) {
    free(f->members[i].name);
    free(f->members[i].bytes);
  }
  free(f->members);
  memset(f, 0, sizeof *f);
}

/* Reads the current member's data whole; *total counts the bytes of all members. */
static int read_member(struct archive *a, const char *path, const char *name, npz_member *m, int64_t *total,
                       int64_t max_bytes, char *why, size_t whylen) {
  size_t cap = 1 << 16;
  m->bytes = malloc(cap);
  if (!m->bytes) return FAIL("'%s': out of memory", path);
  for (;;) {
    if (m->size == cap) {
      unsigned char *b = cap <= SIZE_MAX / 2 ? realloc(m->bytes, cap * 2) : NULL;
      if (!b) return FAIL("'%s': out of memory reading member '%s'", path, name);
      m->bytes = b;
      cap *= 2;
    }
    la_ssize_t r = archive_read_data(a, m->bytes + m->size, cap - m->size);
    if (r < 0) return FAIL("'%s': cannot read member '%s': %s", path, name, archive_error_string(a));
    if (r == 0) return 0;
    m->size += (size_t)r;
    *total += r;
    if (*total > max_bytes)
      return FAIL("'%s': more than %lld bytes unpacked (member '%s')", path, (long long)max_bytes, name);
  }
}

int npz_read(const char *path, int64_t max_bytes, npz_file *out, char *why, size_t whylen) {
  memset(out, 0, sizeof *out);
  struct archive *a = archive_read_new();
  if (!a) return FAIL("'%s': out of memory", path);
  archive_read_support_format_zip_seekable(a);
  int rc = 0, cap = 0;
  int64_t total = 0;
  if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
    const char *e = archive_error_string(a);
    rc = FAIL("cannot read '%s' as a .npz (zip) file: %s", path, e ? e : "?");
  }
  while (rc == 0) {
    struct archive_entry *e;
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      const char *m = archive_error_string(a);
      rc = FAIL("'%s' is not a readable .npz (zip) file: %s", path, m ? m : "?");
      break;
    }
    const char *name = archive_entry_pathname(e);
    size_t len = name ? strlen(name) : 0;
    if (archive_entry_filetype(e) == AE_IFDIR) continue;
    if (len < 5 || strcmp(name + len - 4, ".npy")) {
      rc = FAIL("'%s': member '%.200s' is not NAME.npy", path, name ? name : "");
      break;
    }
    if (out->n == NPZ_MAX_MEMBERS) {
      rc = FAIL("'%s': more than %d members", path, NPZ_MAX_MEMBERS);
      break;
    }
    for (int32_t i = 0; i < out->n; i++)
      if (strlen(out->members[i].name) == len - 4 && !strncmp(out->members[i].name, name, len - 4)) {
        rc = FAIL("'%s': member '%.200s' appears twice", path, name);
        break;
      }
    if (rc) break;
    if (out->n == cap) {
      int ncap = cap ? cap * 2 : 8;
      npz_member *m = realloc(out->members, sizeof *m * (size_t)ncap);
      if (!m) {
        rc = FAIL("'%s': out of memory", path);
        break;
      }
      out->members = m;
      cap = ncap;
    }
    npz_member *m = &out->members[out->n++];
    memset(m, 0, sizeof *m);
    if (!(m->name = strndup(name, len - 4))) rc = FAIL("'%s': out of memory", path);
    else rc = read_member(a, path, name, m, &total, max_bytes, why, whylen);
  }
  archive_read_free(a);
  if (rc) npz_free(out);
  return rc;
}

int npz_write(const char *path, const npz_array *arrays, int32_t n, char *why, size_t whylen) {
  struct archive *a = archive_write_new();
  if (!a) return FAIL("cannot write '%s': out of memory", path);
  int rc = 0;
  archive_write_set_format_zip(a);
  archive_write_set_format_option(a, "zip", "compression", "store");
  archive_write_set_bytes_in_last_block(a, 1);
  if (archive_write_open_filename(a, path) != ARCHIVE_OK) {
    const char *e = archive_error_string(a);
    rc = FAIL("cannot write '%s': %s", path, e ? e : "?");
  }
  for (int32_t i = 0; rc == 0 && i < n; i++) {
    unsigned char *b = NULL;
    size_t size = 0;
    char name[4096];
    if (snprintf(name, sizeof name, "%s.npy", arrays[i].name) >= (int)sizeof name) {
      rc = FAIL("cannot write '%s': output name too long", path);
      break;
    }
    char sub[512];
    if (npy_encode(arrays[i].dtype, arrays[i].rank, arrays[i].dims, arrays[i].data, &b, &size, sub, sizeof sub) < 0) {
      rc = FAIL("cannot write '%s': %s", path, sub);
      break;
    }
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    if (archive_write_header(a, e) != ARCHIVE_OK) rc = FAIL("cannot write '%s': %s", path, archive_error_string(a));
    for (size_t off = 0; rc == 0 && off < size;) {
      la_ssize_t w = archive_write_data(a, b + off, size - off);
      if (w <= 0) rc = FAIL("cannot write '%s': %s", path, archive_error_string(a));
      else off += (size_t)w;
    }
    archive_entry_free(e);
    free(b);
  }
  if (archive_write_close(a) != ARCHIVE_OK && rc == 0)
    rc = FAIL("cannot write '%s': %s", path, archive_error_string(a));
  archive_write_free(a);
  return rc;
}
