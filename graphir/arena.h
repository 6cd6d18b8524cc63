/* arena.h — bump-pointer arenas: everything a graph (or a compile) allocates dies
 * with one gir_arena_free. One process may build many graphs (the tests and the
 * fuzzers do), so lifetimes are tied to arenas, never to scattered frees.
 * Allocation failure is reported by a NULL return; callers turn it into an error
 * message. */
#ifndef GIR_ARENA_H
#define GIR_ARENA_H
#include <stddef.h>
#include <stdarg.h>

typedef struct gir_arena gir_arena;

gir_arena *gir_arena_new(void);
void gir_arena_free(gir_arena *a);
/* Zeroed memory aligned to 64 bytes for large blocks, 16 for small ones. */
void *gir_arena_alloc(gir_arena *a, size_t n);
/* n * size with an overflow check; NULL on overflow or exhaustion. */
void *gir_arena_calloc(gir_arena *a, size_t n, size_t size);
/* Grows an arena array: returns a new block of new_cap elements holding the
 * old_n first ones (the old block stays in the arena until it dies). */
void *gir_arena_grow(gir_arena *a, void *old, size_t old_n, size_t new_cap, size_t elem);
char *gir_arena_strdup(gir_arena *a, const char *s);
char *gir_arena_strndup(gir_arena *a, const char *s, size_t n);
char *gir_arena_printf(gir_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t gir_arena_bytes(const gir_arena *a);

#endif
