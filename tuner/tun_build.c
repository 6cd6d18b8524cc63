/* tun_build.c — the compiler as a library the tuner drives: one fused group and
 * one point of its space → loop IR (for features) → an LLVM module → code loaded
 * into this process through ORC LLJIT. Everything a build makes lives in the
 * kernel's own arena, LLVM module and JIT, and dies with tun_kernel_free: the
 * tuner builds thousands of variants in one process without growing.
 *
 * The point reaches the templates through the lowering's tuning hook
 * (schedule/templates.h, lower_tuning): a template's knobs are set by name, a
 * generic group is scheduled by tun_generic_apply instead of the default schedule.
 * The group is lowered exactly as kiln_compile lowers it (lower_nodes), so a
 * measured kernel is the kernel a bundle would contain. */
#include <string.h>
#include "tun_internal.h"

typedef struct fixed_choice {
  const tun_task *task;
  const int32_t *values;
  int applied;
} fixed_choice;

static void fc_knobs(void *self, const char *tmpl, const lower_knob *knobs, int32_t n, void *cfg) {
  fixed_choice *f = self;
  const tun_space *s = &f->task->space;
  if (!f->values || strcmp(tmpl, s->tmpl)) return;
  for (int i = 0; i < s->n_knobs; i++)
    for (int j = 0; j < n; j++)
      if (!strcmp(knobs[j].name, s->knobs[i].name)) memcpy((char *)cfg + knobs[j].offset, &f->values[i], sizeof(int32_t));
  f->applied = 1;
}

static int fc_schedule(void *self, sch_schedule *s, const lower_target *t) {
  fixed_choice *f = self;
  if (!f->values || strcmp(f->task->space.tmpl, "generic")) return 0;
  if (tun_generic_apply(&f->task->space, f->values, s, t) < 0) return -1;
  f->applied = 1;
  return 1;
}

int tun_build_lower(const tun_task *task, const tun_target *t, const int32_t *values, tun_kernel *out, gir_err *err) {
  memset(out, 0, sizeof *out);
  out->arena = gir_arena_new();
  if (!out->arena) return gir_errf(err, "out of memory");
  fixed_choice fc = {task, values, 0};
  lower_tuning hook = {.self = &fc, .schedule = fc_schedule, .knobs = fc_knobs};
  lower_target lt = t->lower;
  lt.tuning = &hook;
  tir_builder b;
  tir_builder_init(&b, out->arena);
  te_ctx c;
  te_ctx_init(&c, out->arena, err);
  const tun_group *g = &task->group;
  if (lower_nodes(&b, &c, g->nodes, g->n_nodes, g->outs, g->n_outs, "tuned", &lt, &out->k, err) < 0) return -1;
  out->applied = fc.applied;
  if (values && !fc.applied) return gir_errf(err, "the %s point was not applied: the group has no such template", task->space.tmpl);
  return 0;
}

int tun_build_jit(tun_kernel *k, const tun_target *t, gir_err *err) {
  const tir_func *fns[1] = {k->k.fn};
  k->mod = tgt_llvm_compile(fns, 1, &t->llvm, err);
  if (!k->mod) return -1;
  k->jit = tgt_llvm_jit_new(k->mod, err);
  if (!k->jit) return -1;
  k->fn = tgt_llvm_jit_lookup(k->jit, k->k.fn->name, err);
  /* the JIT holds the object code: the module's memory can go now */
  tgt_llvm_module_free(k->mod);
  k->mod = NULL;
  return k->fn ? 0 : -1;
}

void tun_kernel_free(tun_kernel *k) {
  tgt_llvm_jit_free(k->jit);
  tgt_llvm_module_free(k->mod);
  gir_arena_free(k->arena);
  memset(k, 0, sizeof *k);
}
