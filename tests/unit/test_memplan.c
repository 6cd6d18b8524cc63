/* test_memplan.c — the static memory planner: tensors alive at the same time never
 * overlap, offsets are aligned, the arena never beats the liveness lower bound
 * (that would mean an overlap), reuse happens on chains, and bad input is refused. */
#include <stdlib.h>
#include "check.h"
#include "memplan.h"

static int overlaps(const pack_tensor *a, const pack_tensor *b) {
  if (a->first > b->last || b->first > a->last || !a->bytes || !b->bytes) return 0;
  return a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes;
}

static void check_valid(pack_tensor *t, int n, const pack_plan_stats *st) {
  int bad = 0;
  for (int i = 0; i < n; i++) {
    if (t[i].offset % PACK_ALIGN || t[i].offset + t[i].bytes > st->arena_bytes) bad++;
    for (int j = i + 1; j < n; j++) bad += overlaps(&t[i], &t[j]);
  }
  CHECKF(bad == 0, "%d overlapping or misplaced tensors", bad);
  CHECK(st->arena_bytes >= st->lower_bound);
  CHECK(st->arena_bytes <= st->naive_bytes);
}

int main(void) {
  gir_err err = {{0}};
  /* a chain: each tensor lives two steps; two buffers suffice */
  pack_tensor chain[10];
  for (int i = 0; i < 10; i++) chain[i] = (pack_tensor){.bytes = 1000, .first = i, .last = i + 1};
  pack_plan_stats st;
  CHECK(pack_plan_memory(chain, 10, &st, &err) == 0);
  check_valid(chain, 10, &st);
  CHECK_INT(st.arena_bytes, 2 * 1024);
  CHECK_INT(st.lower_bound, 2 * 1024);

  /* random lifetimes and sizes */
  srand(7);
  for (int trial = 0; trial < 200; trial++) {
    int n = 1 + rand() % 60;
    pack_tensor t[60];
    for (int i = 0; i < n; i++) {
      int a = rand() % 40, len = rand() % 10;
      t[i] = (pack_tensor){.bytes = rand() % 5 == 0 ? 0 : 1 + rand() % 100000, .first = a, .last = a + len};
    }
    if (pack_plan_memory(t, n, &st, &err) != 0) {
      CHECK(0);
      continue;
    }
    check_valid(t, n, &st);
  }

  /* bad input */
  pack_tensor bad[1] = {{.bytes = -5, .first = 0, .last = 1}};
  gir_err e2 = {{0}};
  CHECK(pack_plan_memory(bad, 1, &st, &e2) < 0 && e2.msg[0]);
  pack_tensor rev[1] = {{.bytes = 5, .first = 3, .last = 1}};
  gir_err e3 = {{0}};
  CHECK(pack_plan_memory(rev, 1, &st, &e3) < 0 && e3.msg[0]);
  return check_finish("test_memplan");
}
