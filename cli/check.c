/* check.c — `kiln check MODEL --test-data DIR`: the conformance path. Imports the
 * model with the test inputs bound, folds constants, lowers every node with its
 * default schedule, compiles all kernels into one module for the host with the
 * LLVM backend, runs them in-process (ORC JIT) on the test inputs and compares
 * each output with DIR/output_N.pb (rtol 1e-3, atol 1e-5 unless the dtype needs
 * looser; integers, bools and float8/float4 values exactly; NaN positions must match). Sequence and
 * optional inputs and outputs are compared element by element (importer.h names
 * the tensors they become; an empty sequence output compares as length 0). Exit 0 when every
 * output matches. `make conformance` runs it over the onnx node tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "compile.h"
#include "llvm_backend.h"
#include "lower.h"

/* Runs the program: every graph value gets a buffer (constants and inputs point
 * at their data), kernels run in order. */
static int execute(const gir_graph *g, const lower_program *p, tgt_llvm_jit *jit, const void *const *inputs,
                   gir_arena *a, const void ***bufs_out, gir_err *err) {
  /* Kernels are promised 64-byte-aligned buffers (the runtime's arena and params
   * give them that): every buffer here is a fresh block of at least 64 bytes,
   * which the arena aligns to 64, with constants and inputs copied in. */
  const void **buf = gir_arena_calloc(a, (size_t)g->n_values + 1, sizeof *buf);
  for (int i = 0; i < g->n_values; i++) {
    const gir_value *v = g->values[i];
    int64_t nb = gir_value_nbytes(v);
    void *p = gir_arena_alloc(a, (size_t)(nb > 64 ? nb : 64));
    if (!p) return gir_errf(err, "out of memory");
    if (v->data) memcpy(p, v->data, (size_t)nb);
    buf[i] = p;
  }
  for (int i = 0; i < g->n_inputs; i++) memcpy((void *)buf[g->inputs[i]->id], inputs[i], (size_t)gir_value_nbytes(g->inputs[i]));
  for (int k = 0; k < p->n_kernels; k++) {
    const lower_kernel *kr = &p->kernels[k];
    kiln_kernel_fn fn = tgt_llvm_jit_lookup(jit, kr->fn->name, err);
    if (!fn) return -1;
    void **args = gir_arena_calloc(a, (size_t)(kr->n_in + kr->n_out + kr->n_ws) + 1, sizeof *args);
    for (int i = 0; i < kr->n_in; i++) args[i] = (void *)buf[kr->in[i]->id];
    for (int i = 0; i < kr->n_out; i++) args[kr->n_in + i] = (void *)buf[kr->out[i]->id];
    for (int i = 0; i < kr->n_ws; i++) {
      args[kr->n_in + kr->n_out + i] = gir_arena_alloc(a, (size_t)(kr->ws_bytes[i] > 64 ? kr->ws_bytes[i] : 64));
      if (!args[kr->n_in + kr->n_out + i]) return gir_errf(err, "out of memory");
    }
    if (fn(args, cli_serial_ctx()) != 0) return gir_errf(err, "kernel %s failed", kr->fn->name);
  }
  *bufs_out = buf;
  return 0;
}

int kiln_cmd_check(int argc, char **argv) {
  cli_import ci = {0};
  kiln_compile_options o = {.opt_level = 2, .threads_hint = 2};
  const char *dir = NULL;
  int dump = 0;
  for (int i = 0; i < argc; i++) {
    int t = cli_take_input_shape(&ci, argc, argv, &i);
    if (t < 0) return 2;
    if (t) continue;
    if ((t = cli_take_opt_level(argc, argv, &i, &o.opt_level)) != 0) {
      if (t < 0) return 2;
      continue;
    }
    if (!strcmp(argv[i], "--test-data") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--dump-ir")) dump = 1;
    else if (argv[i][0] != '-' && !o.model_path) o.model_path = argv[i];
    else {
      fprintf(stderr, "kiln check: unexpected argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!o.model_path || !dir) {
    fprintf(stderr, "usage: kiln check MODEL.onnx --test-data DIR [--opt-level 0-3] [--input-shape NAME:DIMS]... "
                    "[--dump-ir]\n");
    return 2;
  }
  gir_arena *a = gir_arena_new();
  if (cli_load_test_inputs(&ci, dir, a) < 0) {
    gir_arena_free(a);
    return 1;
  }
  cli_import_finish(&ci);
  o.import = &ci.opt;
  gir_err err = {{0}};
  int rc = 1;
  tgt_llvm_module *mod = NULL;
  tgt_llvm_jit *jit = NULL;
  kiln_front f = {0};
  kiln_compile_result res;
  if (kiln_compile_front(&o, &f, &res, &err) < 0) goto out;
  gir_graph *g = f.g;
  lower_program p = f.prog;
  const tir_func **fns = gir_arena_calloc(a, (size_t)p.n_kernels + 1, sizeof *fns);
  for (int k = 0; k < p.n_kernels; k++) fns[k] = p.kernels[k].fn;
  if (p.n_kernels) {
    mod = tgt_llvm_compile(fns, p.n_kernels, NULL, &err);
    if (!mod) goto out;
    if (dump) tgt_llvm_dump_ir(mod, stdout, &err);
    jit = tgt_llvm_jit_new(mod, &err);
    if (!jit) goto out;
  }
  const void *inputs[256];
  if (g->n_inputs > 256) {
    gir_errf(&err, "more than 256 inputs");
    goto out;
  }
  if (cli_bind_test_inputs(g, &ci, inputs, &err) < 0) goto out;
  const void **bufs = NULL;
  if (execute(g, &p, jit, inputs, a, &bufs, &err) < 0) goto out;
  printf("%d kernels\n", p.n_kernels);
  const void **outs = gir_arena_calloc(a, (size_t)g->n_outputs + 1, sizeof *outs);
  for (int i = 0; outs && i < g->n_outputs; i++) outs[i] = bufs[g->outputs[i]->id];
  rc = outs ? cli_compare_test_outputs(g, outs, dir, a) : 1;
out:
  if (err.msg[0]) fprintf(stderr, "kiln check: %s\n", err.msg);
  tgt_llvm_jit_free(jit);
  tgt_llvm_module_free(mod);
  kiln_front_free(&f);
  gir_arena_free(a);
  return rc;
}
