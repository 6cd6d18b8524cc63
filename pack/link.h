/* link.h — turning an object file into the shared library a bundle ships, with
 * the system's (or the target's cross) C compiler driver as the linker. */
#ifndef PACK_LINK_H
#define PACK_LINK_H
#include <stddef.h>
#include "err.h"

/* Links obj (bytes) into a shared library for triple (NULL: host) and returns it
 * in *lib (malloc'ed; the caller frees). */
int pack_link_shared(const void *obj, size_t obj_bytes, const char *triple, void **lib, size_t *lib_bytes, gir_err *err);

/* Prints what the library is (size, ELF class, byte order and machine, the
 * triple it was linked for), its soname and the functions it exports with
 * their sizes: `kiln compile --dump-after=link`. -1 when it is not a readable ELF. */
#include <stdio.h>
int pack_print_library(FILE *f, const void *lib, size_t size, const char *triple, gir_err *err);

#endif
