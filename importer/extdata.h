/* extdata.h — bounded, folder-confined reads of ONNX external data (extdata.c). */
#ifndef IMP_EXTDATA_H
#define IMP_EXTDATA_H
#include <stdint.h>
#include "err.h"

/* Reads length bytes at offset of base_dir/location into dst; refuses absolute
 * paths, "..", symbolic links, hard links and ranges past the end of the file.
 * dst NULL: only checks all of that (a caller validates before allocating). */
int imp_read_external(const char *base_dir, const char *location, int64_t offset, int64_t length, void *dst,
                      gir_err *err);

#endif
