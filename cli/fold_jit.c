/* fold_jit.c — the constant folder the CLI hands to the importer and to
 * kiln_compile. Small folds run on the TE interpreter (te/interp.c); large ones
 * (a 100-million-element weight transpose of a VGG classifier) are lowered with the
 * same compute definitions, compiled by the LLVM backend and run in-process: the
 * same semantics, without the interpreter's cost. Either way the evaluated node's
 * outputs land in the graph's arena. */
#include <string.h>
#include "cli.h"
#include "interp.h"
#include "llvm_backend.h"
#include "lower.h"

#define JIT_MIN_ELEMENTS (2ll << 20)

static int32_t serial_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) {
  (void)ctx;
  if (n > 0) fn(closure, 0, n);
  return 0;
}

const kiln_ctx *cli_serial_ctx(void) {
  static const kiln_ctx serial = {.parallel_for = serial_for};
  return &serial;
}

/* 64-byte aligned block of at least n bytes in a (the arena aligns blocks >= 64 to 64). */
static void *aligned_block(gir_arena *a, int64_t n) { return gir_arena_alloc(a, (size_t)(n > 64 ? n : 64)); }

static int jit_fold(gir_graph *g, gir_node *n, gir_err *err) {
  gir_arena *a = gir_arena_new();
  tir_builder b;
  tir_builder_init(&b, a);
  te_ctx c;
  te_ctx_init(&c, a, err);
  lower_kernel k;
  tgt_llvm_module *m = NULL;
  tgt_llvm_jit *j = NULL;
  int rc = -1;
  if (lower_node(&b, &c, n, "fold", NULL, &k, err) < 0) goto out;
  const tir_func *fns[1] = {k.fn};
  m = tgt_llvm_compile(fns, 1, NULL, err);
  j = m ? tgt_llvm_jit_new(m, err) : NULL;
  kiln_kernel_fn fn = j ? tgt_llvm_jit_lookup(j, "fold", err) : NULL;
  if (!fn) goto out;
  void **args = gir_arena_calloc(a, (size_t)(k.n_in + k.n_out + k.n_ws) + 1, sizeof *args);
  for (int i = 0; i < k.n_in; i++) { /* kernels are promised 64-byte-aligned buffers */
    int64_t nb = gir_value_nbytes(k.in[i]);
    args[i] = ((uintptr_t)k.in[i]->data % 64) ? memcpy(aligned_block(a, nb), k.in[i]->data, (size_t)nb) : k.in[i]->data;
  }
  for (int i = 0; i < k.n_out; i++) {
    void *d = aligned_block(g->arena, gir_value_nbytes(k.out[i]));
    if (!d) goto out;
    args[k.n_in + i] = d;
  }
  for (int i = 0; i < k.n_ws; i++) args[k.n_in + k.n_out + i] = aligned_block(a, k.ws_bytes[i]);
  if (fn(args, cli_serial_ctx()) != 0) {
    gir_errf(err, "folding %s: the kernel failed", n->name);
    goto out;
  }
  for (int i = 0; i < k.n_out; i++) ((gir_value *)k.out[i])->data = args[k.n_in + i];
  rc = 0;
out:
  tgt_llvm_jit_free(j);
  tgt_llvm_module_free(m);
  gir_arena_free(a);
  return rc;
}

static int fold_eval(void *ctx, gir_graph *g, gir_node *n, gir_err *err) {
  (void)ctx;
  int64_t numel = 0;
  for (int i = 0; i < n->n_out; i++) numel += gir_value_numel(n->out[i]);
  if (numel >= JIT_MIN_ELEMENTS) return jit_fold(g, n, err);
  gir_evaluator interp = lower_fold_evaluator();
  return interp.eval(interp.ctx, g, n, err);
}

gir_evaluator cli_fold_evaluator(void) { return (gir_evaluator){.eval = fold_eval, .ctx = NULL}; }
