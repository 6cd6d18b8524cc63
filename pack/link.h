/* link.h — turning an object file into the shared library a bundle ships, with
 * the system's (or the target's cross) C compiler driver as the linker. */
#ifndef PACK_LINK_H
#define PACK_LINK_H
#include <stddef.h>
#include "err.h"

/* Links obj (bytes) into a shared library for triple (NULL: host) and returns it
 * in *lib (malloc'ed; the caller frees). */
int pack_link_shared(const void *obj, size_t obj_bytes, const char *triple, void **lib, size_t *lib_bytes, gir_err *err);

#endif
