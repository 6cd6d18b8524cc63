/* emulate.c — `kiln check --emulate`: a model's kernels checked in the loop-IR
 * interpreter instead of on the hardware, for targets this machine cannot run —
 * a GPU above all: CI has none. The model is compiled for the target as for a
 * bundle (import with the test inputs bound, the passes, fusion, the target's
 * schedules and loop passes, the plan, and the code generation itself, so a
 * kernel the code generator refuses fails here too), then every call of the plan
 * runs on the plan's buffers in tir/tir_eval.c: for a GPU target launch by launch
 * as tir/gpu_launch.c cuts it, blocks and threads emulated there with barriers and
 * shared memory checked for races and out-of-bounds accesses. The outputs are
 * compared with the test data as a run's are (cli_compare_test_outputs). It is
 * the reference interpreter running the very loop IR the target gets, so it says
 * that the schedules are right, not that the code generator is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "compile.h"
#include "gpu_launch.h"
#include "llvm_backend.h"
#include "plan.h"
#include "tir_eval.h"

#define EMULATE_BUDGET ((int64_t)40 * 1000 * 1000 * 1000) /* expression nodes per kernel */

/* ptxas -arch=sm_NN on the PTX text: 0 when it assembles, else -1 with its output. */
static int assemble(const char *ptxas, int sm, const char *text, size_t n, gir_err *err) {
  char dir[] = "/tmp/kiln-ptxas-XXXXXX";
  if (!mkdtemp(dir)) return gir_errf(err, "--ptxas: cannot make a temporary folder");
  char src[64], bin[64], log[64], cmd[1024];
  snprintf(src, sizeof src, "%s/k.ptx", dir);
  snprintf(bin, sizeof bin, "%s/k.cubin", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  FILE *f = fopen(src, "wb");
  int rc = f && fwrite(text, 1, n, f) == n ? 0 : -1;
  if (f) fclose(f);
  if (rc == 0) {
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%d '%s' -o '%s' > '%s' 2>&1", ptxas, sm, src, bin, log);
    if (system(cmd) != 0) {
      char msg[600] = "";
      FILE *l = fopen(log, "r");
      size_t got = l ? fread(msg, 1, sizeof msg - 1, l) : 0;
      msg[got] = 0;
      if (l) fclose(l);
      rc = gir_errf(err, "ptxas -arch=sm_%d refused the PTX: %s", sm, msg);
    }
  } else {
    rc = gir_errf(err, "--ptxas: cannot write %s", src);
  }
  remove(src);
  remove(bin);
  remove(log);
  rmdir(dir);
  return rc;
}

/* Generates the target's code for every kernel with the LLVM backend, then drops
 * it: the check that the code generator accepts them (for the CUDA targets, PTX,
 * which ptxas assembles when given). */
static int codegen(const tgt_llvm_options *topt, const lower_program *p, const char *ptxas, gir_arena *a,
                   gir_err *err) {
  const tir_func **fns = gir_arena_calloc(a, (size_t)p->n_kernels + 1, sizeof *fns);
  if (!fns) return gir_errf(err, "out of memory");
  for (int k = 0; k < p->n_kernels; k++) fns[k] = p->kernels[k].fn;
  tgt_llvm_module *m = tgt_llvm_compile(fns, p->n_kernels, topt, err);
  if (!m) return -1;
  char *text = NULL;
  size_t n = 0;
  int rc = tgt_llvm_asm_string(m, &text, &n, err);
  if (rc == 0 && ptxas && topt->gpu_sm > 0) rc = assemble(ptxas, topt->gpu_sm, text, n, err);
  if (rc == 0 && ptxas && topt->gpu_sm > 0 && topt->gpu_sm < 90) rc = assemble(ptxas, 90, text, n, err); /* and on Hopper */
  free(text);
  tgt_llvm_module_free(m);
  return rc;
}

static void *zeroed(gir_arena *a, int64_t bytes) { return gir_arena_calloc(a, (size_t)(bytes > 0 ? bytes : 1), 1); }

/* The emulated run's memory, and where a plan argument points in it. */
typedef struct memory {
  void **ins, **outs;
  unsigned char *arena, *params;
} memory;

static void *arg_ptr(const pack_arg *x, const memory *m) {
  switch (x->kind) {
  case PACK_ARG_INPUT: return m->ins[x->index];
  case PACK_ARG_OUTPUT: return m->outs[x->index];
  case PACK_ARG_ARENA: return m->arena + x->offset;
  default: return m->params + x->offset;
  }
}

/* Runs one call of the plan: its kernel launch by launch (GPU) or whole. */
static int run_call(const pack_call *c, const tir_func *fn, void **bufs, int gpu, gir_arena *a, gir_err *err) {
  tir_builder tb = {.arena = a};
  tir_gpu_launch whole = {.body = fn->body}, *ls = &whole;
  int32_t n = 1;
  if (gpu && tir_gpu_launches(&tb, fn, &ls, &n, err) < 0) return -1;
  int32_t nb = fn->n_buffers;
  for (int32_t i = 0; i < fn->n_params; i++)
    if (fn->params[i]->id >= nb) nb = fn->params[i]->id + 1;
  for (int32_t l = 0; l < n; l++) {
    gir_arena *scratch = gir_arena_new();
    if (!scratch) return gir_errf(err, "out of memory");
    tir_env env;
    int rc = tir_env_init(&env, scratch, fn->n_vars, nb, EMULATE_BUDGET, err);
    for (int32_t i = 0; rc == 0 && i < fn->n_params; i++) tir_env_bind(&env, fn->params[i], bufs[i]);
    if (rc == 0 && tir_eval_stmt(&env, ls[l].body) < 0)
      rc = gir_err_prefix(err, "kernel %s%s", c->name, gpu ? gir_arena_printf(a, ", launch %d", l) : "");
    gir_arena_free(scratch);
    if (rc < 0) return -1;
  }
  return 0;
}

int cli_emulate_check(const kiln_compile_options *o, const cli_import *ci, const char *dir, double atol_scale,
                      const char *ptxas, gir_arena *a, gir_err *err) {
  kiln_front f = {0};
  kiln_compile_result res = {0};
  int rc = -1;
  if (kiln_compile_front(o, &f, &res, err) < 0) goto out;
  pack_plan plan;
  if (pack_build_plan(f.g, &f.prog, f.arena, &plan, err) < 0 ||
      (!f.c_kernels && codegen(&f.topt, &f.prog, ptxas, f.arena, err) < 0))
    goto out;
  const gir_graph *g = f.g;
  int gpu = !f.c_kernels && f.topt.gpu_sm > 0;
  unsigned char *arena = zeroed(a, plan.mem.arena_bytes);
  void **ins = gir_arena_calloc(a, (size_t)g->n_inputs + 1, sizeof *ins);
  void **outs = gir_arena_calloc(a, (size_t)g->n_outputs + 1, sizeof *outs);
  if (!arena || !ins || !outs) {
    gir_errf(err, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->n_inputs; i++) {
    const imp_known_input *k = imp_known_find(&ci->opt, g->inputs[i]->name);
    int64_t bytes = gir_value_nbytes(g->inputs[i]);
    if (!k || k->is_list || !(ins[i] = zeroed(a, bytes))) {
      gir_errf(err, "no test data for input '%s'", g->inputs[i]->name);
      goto out;
    }
    memcpy(ins[i], k->data, (size_t)bytes);
  }
  for (int i = 0; i < g->n_outputs; i++)
    if (!(outs[i] = zeroed(a, gir_value_nbytes(g->outputs[i])))) {
      gir_errf(err, "out of memory");
      goto out;
    }
  memory mem = {ins, outs, arena, plan.params};
  for (int c = 0; c < plan.n_calls; c++) {
    const pack_call *call = &plan.calls[c];
    const tir_func *fn = NULL;
    for (int k = 0; k < f.prog.n_kernels && !fn; k++)
      if (!strcmp(f.prog.kernels[k].fn->name, call->name)) fn = f.prog.kernels[k].fn;
    void **bufs = gir_arena_calloc(a, (size_t)call->n_args + 1, sizeof *bufs);
    if (!fn || !bufs || call->n_args != fn->n_params) {
      gir_errf(err, "plan: call %s does not match its kernel", call->name);
      goto out;
    }
    int holds = 1; /* an If branch's kernel: only when its conditions hold, as the runtime does */
    for (int j = 0; j < call->n_when && holds; j++) holds = (*(const uint8_t *)arg_ptr(&call->when[j], &mem) != 0) == call->when_is[j];
    if (!holds) continue;
    if (call->fail) {
      gir_errf(err, "run: kernel '%s': %s", call->name, call->fail);
      goto out;
    }
    for (int j = 0; j < call->n_args; j++) bufs[j] = arg_ptr(&call->args[j], &mem);
    if (run_call(call, fn, bufs, gpu, a, err) < 0) goto out;
  }
  printf("%d kernels (emulated)\n", f.prog.n_kernels);
  cli_output *co = gir_arena_calloc(a, (size_t)g->n_outputs + 1, sizeof *co);
  if (!co) {
    gir_errf(err, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->n_outputs; i++) {
    gir_shape sh = g->outputs[i]->shape;
    const pack_arg *x = &plan.out_extent[i];
    if (g->outputs[i]->extent) { /* a data-dependent size: the run's, the data compacted as the runtime does */
      int64_t e, ax = g->outputs[i]->extent_axis, outer = 1, inner = (int64_t)gir_dtype_size(g->outputs[i]->dtype);
      memcpy(&e, arg_ptr(x, &mem), sizeof e);
      if (e < 0 || e > sh.dims[ax]) {
        gir_errf(err, "output %s: extent %lld outside [0, %lld]", g->outputs[i]->name, (long long)e,
                 (long long)sh.dims[ax]);
        goto out;
      }
      for (int d = 0; d < ax; d++) outer *= sh.dims[d];
      for (int d = (int)ax + 1; d < sh.rank; d++) inner *= sh.dims[d];
      for (int64_t k = 1; k < outer; k++)
        memmove((char *)outs[i] + k * e * inner, (char *)outs[i] + k * sh.dims[ax] * inner, (size_t)(e * inner));
      sh.dims[ax] = e;
    }
    co[i] = (cli_output){g->outputs[i]->name, g->outputs[i]->dtype, sh, outs[i], 0};
  }
  rc = cli_compare_test_outputs(co, g->n_outputs, dir, atol_scale, a);
  if (rc != 0) rc = 1;
out:
  kiln_front_free(&f);
  return rc;
}
