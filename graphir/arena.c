/* arena.c — chunked bump allocator. Small requests are carved from 64 KiB chunks;
 * requests larger than a quarter chunk get a dedicated chunk so that big constant
 * tensors do not waste the tail of a shared one. */
#include "arena.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK (64u * 1024u)

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(64) unsigned char data[];
} chunk;

struct gir_arena {
  chunk *head;  /* current chunk for small allocations */
  chunk *big;   /* dedicated chunks */
  size_t bytes;
};

gir_arena *gir_arena_new(void) { return calloc(1, sizeof(gir_arena)); }

static void free_list(chunk *c) {
  while (c) {
    chunk *n = c->next;
    free(c);
    c = n;
  }
}

void gir_arena_free(gir_arena *a) {
  if (!a) return;
  free_list(a->head);
  free_list(a->big);
  free(a);
}

static chunk *chunk_new(size_t size) {
  if (size > SIZE_MAX - sizeof(chunk) - 64) return NULL;
  chunk *c = aligned_alloc(64, (sizeof(chunk) + size + 63) & ~(size_t)63);
  if (!c) return NULL;
  c->next = NULL;
  c->size = size;
  c->used = 0;
  return c;
}

void *gir_arena_alloc(gir_arena *a, size_t n) {
  if (!a) return NULL;
  if (n == 0) n = 1;
  if (n > ARENA_CHUNK / 4) {
    chunk *c = chunk_new(n);
    if (!c) return NULL;
    memset(c->data, 0, n);
    c->used = n;
    c->next = a->big;
    a->big = c;
    a->bytes += n;
    return c->data;
  }
  size_t align = n >= 64 ? 64 : 16;
  if (a->head) {
    size_t off = (a->head->used + align - 1) & ~(align - 1);
    if (off + n <= a->head->size) {
      a->head->used = off + n;
      a->bytes += n;
      return memset(a->head->data + off, 0, n);
    }
  }
  chunk *c = chunk_new(ARENA_CHUNK);
  if (!c) return NULL;
  c->next = a->head;
  a->head = c;
  c->used = n;
  a->bytes += n;
  return memset(c->data, 0, n);
}

void *gir_arena_calloc(gir_arena *a, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  return gir_arena_alloc(a, n * size);
}

void *gir_arena_grow(gir_arena *a, void *old, size_t old_n, size_t new_cap, size_t elem) {
  void *p = gir_arena_calloc(a, new_cap, elem);
  if (p && old && old_n) memcpy(p, old, old_n * elem);
  return p;
}

char *gir_arena_strndup(gir_arena *a, const char *s, size_t n) {
  char *p = gir_arena_alloc(a, n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

char *gir_arena_strdup(gir_arena *a, const char *s) {
  return s ? gir_arena_strndup(a, s, strlen(s)) : NULL;
}

char *gir_arena_printf(gir_arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = n >= 0 ? gir_arena_alloc(a, (size_t)n + 1) : NULL;
  if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

size_t gir_arena_bytes(const gir_arena *a) { return a ? a->bytes : 0; }
