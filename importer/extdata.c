/* extdata.c — reading a tensor's external data, safely. ONNX lets a tensor point
 * at bytes in another file; a hostile model could point anywhere, so only plain
 * relative paths under the model's own folder are accepted: no absolute paths,
 * no "..", no symbolic link anywhere along the path (each component is opened
 * with O_NOFOLLOW relative to its parent), no hard-linked file (link count 1),
 * and offset + length must lie inside the file. With dst NULL the same checks run
 * but nothing is read, so that callers can validate before they allocate. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ctx.h"
#include "extdata.h"

static int open_beneath(const char *base_dir, const char *rel, gir_err *err) {
  int dir = open(base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return gir_errf(err, "cannot open model folder '%s': %s", base_dir, strerror(errno));
  char comp[256];
  const char *p = rel;
  for (;;) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 0 || len >= sizeof comp) {
      close(dir);
      return gir_errf(err, "external data path '%s' has an empty or too long component", rel);
    }
    memcpy(comp, p, len);
    comp[len] = 0;
    if (!strcmp(comp, "..") || !strcmp(comp, ".")) {
      close(dir);
      return gir_errf(err, "external data path '%s' leaves the model's folder", rel);
    }
    /* O_NONBLOCK: a FIFO must not block the open; it is refused below (not a regular file) */
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (slash ? O_DIRECTORY : O_NONBLOCK);
    int fd = openat(dir, comp, flags);
    int e = errno;
    struct stat st;
    int is_link = fd < 0 && fstatat(dir, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    close(dir);
    if (fd < 0) {
      if (is_link || e == ELOOP)
        return gir_errf(err, "external data path '%s' goes through a symbolic link (refused)", rel);
      if (e == ENOTDIR) return gir_errf(err, "external data path '%s': '%s' is not a directory", rel, comp);
      return gir_errf(err, "cannot open external data '%s': %s", rel, strerror(e));
    }
    if (!slash) return fd;
    dir = fd;
    p = slash + 1;
  }
}

int imp_read_external(const char *base_dir, const char *location, int64_t offset, int64_t length, void *dst,
                      gir_err *err) {
  if (!location || !location[0]) return gir_errf(err, "external data without a location");
  if (!base_dir) return gir_errf(err, "external data '%s' is refused: the model was not loaded from a file", location);
  if (location[0] == '/' || strchr(location, '\\') || strchr(location, ':'))
    return gir_errf(err, "external data path '%s' is absolute (refused)", location);
  if (offset < 0 || length < 0) return gir_errf(err, "external data '%s': negative offset or length", location);
  int fd = open_beneath(base_dir, location, err);
  if (fd < 0) return -1;
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) < 0) rc = gir_errf(err, "cannot stat external data '%s'", location);
  else if (!S_ISREG(st.st_mode)) rc = gir_errf(err, "external data '%s' is not a regular file", location);
  else if (st.st_nlink > 1) rc = gir_errf(err, "external data '%s' is a hard link (refused)", location);
  else if (offset > st.st_size || length > st.st_size - offset)
    rc = gir_errf(err, "external data '%s': offset %lld + length %lld is past the end of the file (%lld bytes)",
                  location, (long long)offset, (long long)length, (long long)st.st_size);
  int64_t done = 0;
  while (rc == 0 && dst && done < length) {
    ssize_t r = pread(fd, (char *)dst + done, (size_t)(length - done), offset + done);
    if (r <= 0) rc = gir_errf(err, "reading external data '%s' failed", location);
    else done += r;
  }
  close(fd);
  return rc;
}
