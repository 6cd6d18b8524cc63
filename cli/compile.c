/* compile.c — kiln_compile (see compile.h) and `kiln compile`. The pipeline is the
 * list of steps below, in order; nothing else happens between them. The bundle
 * goes to a file or into memory at the last step; everything before is the same. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "compile.h"
#include "flops.h"
#include "fusion.h"
#include "simplify.h"
#include "interp.h"
#include "cuda_backend.h"
#include "gpu_launch.h"
#include "layout.h"
#include "link.h"
#include "aot.h"
#include "c_backend.h"
#include "llvm_backend.h"
#include "lower.h"
#include "passes.h"
#include "plan.h"

const char *const kiln_compile_steps[] = {"import", "ranges", "fold", "simplify", "hfuse", "layout", "fuse", "outputs",
                                          "lower", "plan", "codegen", "link", "pack", NULL};

static int dumping(const kiln_compile_options *o, const char *step) { return o->dump_after && !strcmp(o->dump_after, step); }

static const char *model_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

void kiln_front_free(kiln_front *f) {
  gir_graph_free(f->g);
  gir_arena_free(f->arena);
  memset(f, 0, sizeof *f);
}

/* LLVM's options for a bare-metal Cortex-M CPU (--aot --kernels llvm): thumbv7em for
 * the Cortex-M4 (FPv4-SP) and M7 (FPv5-D16), thumbv8.1m.main for the Cortex-M55 (MVE
 * with floats), the hard-float ABI (eabihf), the CPU's own FPU and vector features. */
static int cortex_m_llvm(const char *target, tgt_llvm_options *o, gir_err *err) {
  static const struct { const char *name, *triple, *cpu; } cpus[] = {
      {"cortex-m4", "thumbv7em-none-eabihf", "cortex-m4"},
      {"cortex-m7", "thumbv7em-none-eabihf", "cortex-m7"},
      {"cortex-m55", "thumbv8.1m.main-none-eabihf", "cortex-m55"},
  };
  for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++)
    if (!strcmp(target, cpus[i].name)) {
      *o = (tgt_llvm_options){.triple = cpus[i].triple, .cpu = cpus[i].cpu, .features = "", .opt_level = 3};
      return 0;
    }
  return gir_errf(err, "--kernels llvm: no LLVM CPU for '%s'", target);
}

/* Which backend makes the kernels: the C backend (*c_kernels = 1: --target c, and the
 * Cortex-M targets unless --kernels llvm) or LLVM with *topt (a named target, or a
 * Cortex-M CPU with --kernels llvm). */
static int kernel_backend(const kiln_compile_options *o, tgt_llvm_options *topt, int *c_kernels, gir_err *err) {
  const char *t = o->target ? o->target : "host";
  int llvm = o->kernels && !strcmp(o->kernels, "llvm");
  if (o->kernels && !llvm && strcmp(o->kernels, "c"))
    return gir_errf(err, "--kernels takes c or llvm, not '%s'", o->kernels);
  if (o->kernels && !tgt_c_is_bare_metal(t))
    return gir_errf(err, "--kernels chooses how a Cortex-M target's --aot kernels are made; --target %s has one way", t);
  *c_kernels = tgt_c_is_target(t) && !llvm;
  if (llvm) return cortex_m_llvm(t, topt, err);
  if (*c_kernels) return 0;
  return tgt_cuda_is_target(t) ? tgt_cuda_named_target(t, topt, err) : tgt_llvm_named_target(t, topt, err);
}

int kiln_compile_front(const kiln_compile_options *o, kiln_front *f, kiln_compile_result *res, gir_err *err) {
  FILE *dump = o->dump ? o->dump : stdout;
  memset(f, 0, sizeof *f);
  f->arena = gir_arena_new();
  gir_evaluator ev = cli_fold_evaluator();
  int32_t *group_of = NULL, n_groups = 0;

  /* import: ONNX → graph IR, shapes bound, small constants folded */
  imp_report rep;
  imp_report_init(&rep);
  f->g = imp_load_file(o->model_path, o->import, &rep, err);
  if (res) {
    res->n_unbound = rep.n_unbound;
    snprintf(res->unbound, sizeof res->unbound, "%s", rep.unbound);
    res->n_trapped = rep.n_trapped;
    snprintf(res->trapped, sizeof res->trapped, "%s", rep.trapped);
  }
  imp_report_free(&rep);
  if (!f->g) return -1;
  gir_graph *g = f->g;
  if (dumping(o, "import")) gir_print(g, dump);

  /* ranges: which values each integer input may take, from the index operands it
   * reaches (the manifest records them for tools that invent inputs) */
  f->ranges = gir_arena_calloc(f->arena, (size_t)g->n_inputs + 1, sizeof *f->ranges);
  if (!f->ranges) return gir_errf(err, "out of memory");
  if (gir_input_ranges(g, f->ranges, err) < 0) return -1;
  if (dumping(o, "ranges") && g->n_inputs == 0) fprintf(dump, "no inputs\n");
  if (dumping(o, "ranges"))
    for (int i = 0; i < g->n_inputs; i++) {
      const gir_input_range *r = &f->ranges[i];
      fprintf(dump, "input %s (%s): ", g->inputs[i]->name, gir_dtype_name(g->inputs[i]->dtype));
      if (r->kind == GIR_VALUES_RANGE)
        fprintf(dump, "indexes an axis of %lld: [%lld, %lld)\n", (long long)r->hi, (long long)r->lo, (long long)r->hi);
      else if (r->kind == GIR_VALUES_GIVEN) fprintf(dump, "computed into an index: only given data\n");
      else fprintf(dump, "reaches no index\n");
    }

  /* fold (-O1): every node whose inputs are constant becomes a constant — weight
   * transforms disappear here */
  if (o->opt_level >= 1) {
    gir_err ferr = {{0}};
    gir_fold_constants(g, &ev, 0, &res->folded_nodes, &ferr);
  }
  if (dumping(o, "fold")) gir_print(g, dump);

  /* simplify (-O1): algebraic rewrites, no-op removal, affine ops folded into
   * conv/matmul weights (batch norm), CSE */
  if (o->opt_level >= 1) {
    gir_simplify_stats st; /* with an evaluator, the constants a rewrite creates fold at once */
    if (gir_simplify(g, &ev, &st, err) < 0) return -1;
  }
  if (dumping(o, "simplify")) gir_print(g, dump);

  /* hfuse (-O3): sibling matmuls / convs on one input become one wider op and
   * slices (Q/K/V → one GEMM); fold then concatenates their weights */
  if (o->opt_level >= 3) {
    gir_hfuse_stats hs;
    if (gir_hfuse(g, GIR_HFUSE_MAX_WEIGHT_BYTES, &hs, err) < 0) return -1;
    int32_t folded = 0;
    gir_err ferr = {{0}};
    gir_fold_constants(g, &ev, 0, &folded, &ferr);
    res->folded_nodes += folded;
  }
  if (dumping(o, "hfuse")) gir_print(g, dump);

  /* layout (-O2): convolutions in NCHW[x]c with packed weights, x the target's
   * vector width; the layout spreads through layout-agnostic ops */
  lower_target lt;
  if (kernel_backend(o, &f->topt, &f->c_kernels, err) < 0 ||
      (f->c_kernels || tgt_c_is_bare_metal(o->target) ? tgt_c_lower_target(o->target, &lt, err) /* the CPU's lanes */
                                                        : tgt_llvm_lower_target(&f->topt, &lt)) < 0)
    return -1;
  lt.tuning = o->tuning; /* kiln tune's probe, or --records' tuned schedules (tuner/); NULL: the defaults */
  if (o->gpu_tf32 && !lt.gpu) return gir_errf(err, "--gpu-math tf32 is for GPU targets (--target cuda, cuda-sm90)");
  lt.gpu_tf32 = o->gpu_tf32; /* opt-in: TF32 changes results (10-bit mantissas) */
  if (o->opt_level >= 2) {
    lay_stats ls;
    if (lay_split_conv_transpose(g, NULL, err) < 0) return -1; /* phase convs, blocked next */
    if (lay_split_dilated_conv(g, NULL, err) < 0) return -1;   /* no taps on padding, blocked next */
    if (lay_separable_pool(g, NULL, err) < 0) return -1;       /* large max windows as rows, then columns */
    if (lt.gpu && lay_split_k(g, lt.gpu_sms, o->split_k, NULL, err) < 0) return -1; /* small grids: reductions split */
    if (!lt.gpu && lay_nchwc(g, lt.vec_f32, lt.masked_loads, &ls, err) < 0) return -1; /* a GPU's threads want plain NCHW */
    /* 3x3 convs as Winograd transforms around a batched GEMM, where the channels and
     * tiles make it pay; narrow-vector targets (NEON, Cortex-M) only when asked */
    lay_winograd_mode wm = o->winograd == LAY_WINOGRAD_AUTO && lt.vec_f32 < 8 ? LAY_WINOGRAD_OFF
                                                                             : (lay_winograd_mode)o->winograd;
    if (!lt.gpu && lay_winograd(g, wm, lt.vec_f32, lt.vec_regs, &res->winograd_convs, err) < 0) return -1;
    if (lay_flatten_reduce(g, NULL, err) < 0) return -1; /* what stayed plain: rows for the row template */
    int32_t packed = 0; /* constant matmul weights in the template's column panels */
    if (!lt.gpu && lay_pack_matmul(g, lt.vec_f32, lt.vec_regs, &packed, err) < 0) return -1;
    int32_t merged = 0; /* two convs reading one input got one relayout each */
    if (gir_cse(g, &merged) < 0) return gir_errf(err, "layout: CSE failed");
    int32_t folded = 0;
    gir_err ferr = {{0}};
    gir_fold_constants(g, &ev, 0, &folded, &ferr);
    res->folded_nodes += folded;
  }
  if (dumping(o, "layout")) gir_print(g, dump);

  /* If branches (gir_guard): the passes kept their rules; a GPU bundle has no
   * conditional kernels yet, so there both branches run and the where selects */
  if (gir_verify_guards(g, err) < 0) return -1;
  for (int i = 0; i < g->n_outputs && (lt.gpu || o->aot); i++) /* data-dependent shapes: the CPU runtime's */
    if (g->outputs[i]->extent)
      return gir_errf(err, "output '%s' has a data-dependent shape (NonMaxSuppression's selected boxes), which %s "
                           "does not support yet (the CPU runtime does)", g->outputs[i]->name,
                      lt.gpu ? "a GPU bundle" : "an --aot project");
  for (int i = 0; i < g->n_inputs + g->n_outputs && (lt.gpu || o->aot); i++) { /* strings: the CPU runtime's */
    const gir_value *v = i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs];
    if (v->string_bytes)
      return gir_errf(err, "%s '%s' is a string tensor, which %s does not support (the CPU runtime does)",
                      i < g->n_inputs ? "input" : "output", v->name, lt.gpu ? "a GPU bundle" : "an --aot project");
  }
  if (lt.gpu)
    for (int k = 0; k < g->n_nodes; k++) {
      if (g->nodes[k]->op == GIR_OP_trap)
        return gir_errf(err, "%s (the %s target runs both branches of an If: the condition is not known at "
                             "compile time)", gir_attr_find(g->nodes[k], "message")->s, o->target);
      g->nodes[k]->guard = NULL;
    }

  /* fuse (-O2): FuseOps groups, one kernel each; below -O2 one node per kernel */
  if (o->opt_level >= 2) {
    fus_options fo = fus_default_options();
    fus_partition part;
    if (fus_partition_graph(g, &fo, f->arena, &part, err) < 0) return -1;
    group_of = part.group_of;
    n_groups = part.n_groups;
    if (dumping(o, "fuse"))
      for (int i = 0; i < part.n_groups; i++) {
        fprintf(dump, "group %d (%s, %d nodes):", i, gir_category_name(part.groups[i].category), part.groups[i].n_nodes);
        for (int j = 0; j < part.groups[i].n_nodes; j++) fprintf(dump, " %s", gir_op_name(g->nodes[part.groups[i].nodes[j]]->op));
        fputc('\n', dump);
      }
  } else if (dumping(o, "fuse")) {
    fprintf(dump, "no fusion below -O2: one kernel per node (%d nodes)\n", g->n_nodes);
  }

  /* outputs: every graph output is written by some kernel (identity copies for
   * outputs that are constants or inputs, each its own group) */
  int32_t before = g->n_nodes;
  gir_materialize_outputs(g);
  if (group_of && g->n_nodes > before) {
    int32_t *go = gir_arena_calloc(f->arena, (size_t)g->n_nodes + 1, sizeof *go);
    memcpy(go, group_of, sizeof *go * (size_t)before);
    for (int k = before; k < g->n_nodes; k++) go[k] = n_groups++;
    group_of = go;
  }
  if (dumping(o, "outputs")) gir_print(g, dump);

  /* lower: one kernel per group (compute definitions + schedule → loop IR) */
  tir_builder_init(&f->b, f->arena);
  int rc = group_of ? lower_graph_groups(g, group_of, n_groups, &f->b, &lt, &f->prog, err)
                    : lower_graph(g, &f->b, &lt, &f->prog, err);
  if (rc < 0) return -1;
  res->kernels = f->prog.n_kernels;
  for (int k = 0; k < f->prog.n_kernels; k++) {
    const char *gen = f->prog.kernels[k].generic;
    if (!gen) continue;
    *(!strcmp(gen, "matmul") ? &res->generic_matmul : !strcmp(gen, "pool") ? &res->generic_pool : &res->generic_conv) += 1;
    size_t used = strlen(res->generic_names);
    if (used + strlen(f->prog.kernels[k].fn->name) + 2 < sizeof res->generic_names)
      snprintf(res->generic_names + used, sizeof res->generic_names - used, "%s%s", used ? " " : "",
               f->prog.kernels[k].fn->name);
  }
  for (int k = 0; k < g->n_nodes; k++) res->flops = gir_flops_add(res->flops, gir_node_flops(g->nodes[k]));
  if (dumping(o, "lower"))
    for (int k = 0; k < f->prog.n_kernels; k++) tir_print_func(f->prog.kernels[k].fn, dump);
  return 0;
}

/* Bytes the kernels write into intermediate tensors per run: every output of a
 * kernel the plan calls that is neither a graph output nor a constant (what fusion
 * saves; a dropped kernel, a view or a concat written in place, writes none). */
static int64_t intermediate_bytes(const lower_program *p, const pack_plan *plan) {
  int64_t bytes = 0;
  for (int k = 0, c = 0; k < p->n_kernels; k++) {
    if (c >= plan->n_calls || strcmp(plan->calls[c].name, p->kernels[k].fn->name)) continue; /* calls keep kernel order */
    c++;
    for (int j = 0; j < p->kernels[k].n_out; j++) {
      const gir_value *v = p->kernels[k].out[j];
      if (v && !v->is_output && !v->data) bytes += gir_value_nbytes(v);
    }
  }
  return bytes;
}

static double mib(int64_t bytes) { return (double)bytes / 1048576.0; }

/* A size for messages: whole MiB from 1 MiB on ("374658203121 MiB"), bytes below. */
static const char *size_text(int64_t bytes, char *buf, size_t n) {
  if (bytes >= 1048576) snprintf(buf, n, "%.0f MiB", mib(bytes));
  else snprintf(buf, n, "%lld bytes", (long long)bytes);
  return buf;
}

/* Every value's byte size is known and within the limit (a graph input, output,
 * constant or intermediate): else one line naming the value, the figure and the
 * limit. */
static int check_values(const gir_graph *g, int64_t limit, gir_err *err) {
  for (int i = 0; i < g->n_values; i++) {
    const gir_value *v = g->values[i];
    int64_t nb = gir_value_nbytes(v);
    char b[160];
    const char *what = v->is_input ? "input" : v->is_output ? "output" : v->data ? "constant" : "tensor";
    if (nb < 0)
      return gir_errf(err, "%s '%s' (%s[%s]) has a byte size that overflows int64", what, v->name,
                      gir_dtype_name(v->dtype), gir_shape_str(&v->shape, b, sizeof b));
    char s1[48], s2[48];
    if (nb > limit)
      return gir_errf(err, "%s '%s' (%s[%s]) would be %s, more than the %s limit (--max-arena-bytes)", what, v->name,
                      gir_dtype_name(v->dtype), gir_shape_str(&v->shape, b, sizeof b), size_text(nb, s1, sizeof s1),
                      size_text(limit, s2, sizeof s2));
  }
  return 0;
}

/* The bundle's description of an input or output. */
static pack_io io_of(const gir_value *v, const gir_input_range *r) {
  pack_io io = {v->name, v->dtype, v->shape, PACK_VALUES_ANY, 0, 0, 0, 0, {.kind = PACK_ARG_KIND_COUNT}, 0};
  if (v->string_bytes) /* a string tensor: the bundle declares its ONNX shape and slot (FORMAT.md) */
    io.dtype = GIR_STRING, io.shape.rank--, io.string_bytes = v->string_bytes;
  if (r && r->kind == GIR_VALUES_RANGE) io.values = PACK_VALUES_RANGE, io.lo = r->lo, io.hi = r->hi;
  if (r && r->kind == GIR_VALUES_GIVEN) io.values = PACK_VALUES_GIVEN;
  return io;
}

/* Output i, with where its actual extent lives when it has one. */
static pack_io out_io(const gir_graph *g, const pack_plan *plan, int i) {
  pack_io io = io_of(g->outputs[i], NULL);
  if (g->outputs[i]->extent)
    io.has_extent = 1, io.extent_axis = g->outputs[i]->extent_axis, io.extent = plan->out_extent[i];
  return io;
}

/* --aot: the project (pack/aot.h) and its footprint, measured with the target's C
 * compiler when it is installed. */
static int write_aot(const kiln_compile_options *o, const kiln_front *f, const pack_plan *plan, const char *src,
                     size_t src_bytes, const void *obj, size_t obj_bytes, kiln_compile_result *res, gir_err *err) {
  const gir_graph *g = f->g;
  pack_io *ins = gir_arena_calloc(f->arena, (size_t)g->n_inputs + 1, sizeof *ins);
  pack_io *outs = gir_arena_calloc(f->arena, (size_t)g->n_outputs + 1, sizeof *outs);
  if (!ins || !outs) return gir_errf(err, "out of memory");
  for (int i = 0; i < g->n_inputs; i++) ins[i] = io_of(g->inputs[i], &f->ranges[i]);
  for (int i = 0; i < g->n_outputs; i++) outs[i] = out_io(g, plan, i);
  pack_aot p = {.model = model_name(o->model_path), .compiler_version = KILN_VERSION, .target_name = o->target,
                .inputs = ins, .outputs = outs, .n_inputs = g->n_inputs, .n_outputs = g->n_outputs,
                .calls = plan->calls, .n_calls = plan->n_calls, .arena_bytes = plan->mem.arena_bytes,
                .arena_lower_bound = plan->mem.lower_bound, .params = plan->params,
                .params_bytes = plan->params_bytes, .kernels_c = src, .kernels_c_bytes = src_bytes,
                .kernels_obj = obj, .kernels_obj_bytes = obj_bytes, .abi_h = tgt_c_abi_text()};
  const char *const *cflags;
  const char *cc = tgt_c_compiler(o->target, &cflags);
  pack_footprint fp;
  if (pack_write_aot(o->output_path, &p, err) < 0 || pack_aot_measure(o->output_path, cc, cflags, &p, &fp, err) < 0 ||
      pack_write_aot_manifest(o->output_path, &p, &fp, err) < 0)
    return -1;
  res->footprint_measured = fp.measured;
  snprintf(res->footprint_why, sizeof res->footprint_why, "%s", fp.why);
  snprintf(res->footprint_compiler, sizeof res->footprint_compiler, "%s", fp.compiler);
  res->flash_kernels = fp.kernel_code;
  res->flash_runtime = fp.runtime_code;
  res->flash_weights = fp.weights;
  res->ram_data = fp.data;
  res->ram_stack = fp.stack;
  res->stack_exact = fp.stack_exact;
  res->code_bytes = fp.kernel_code + fp.runtime_code;
  return 0;
}

/* A CUDA bundle's calls get their kernels' launches (tir/gpu_launch.c: the same
 * cut the code generator made, so the symbols match). */
static int gpu_plan_launches(const lower_program *p, pack_plan *plan, gir_arena *a, gir_err *err) {
  tir_builder tb = {.arena = a};
  for (int c = 0; c < plan->n_calls; c++) {
    pack_call *call = &plan->calls[c];
    const tir_func *fn = NULL;
    for (int k = 0; k < p->n_kernels && !fn; k++)
      if (!strcmp(p->kernels[k].fn->name, call->name)) fn = p->kernels[k].fn;
    if (!fn) return gir_errf(err, "plan: call %s has no kernel", call->name);
    tir_gpu_launch *ls = NULL;
    int32_t n = 0;
    if (tir_gpu_launches(&tb, fn, &ls, &n, err) < 0) return -1;
    pack_launch *pl = gir_arena_calloc(a, (size_t)n + 1, sizeof *pl);
    if (!pl) return gir_errf(err, "out of memory");
    for (int32_t i = 0; i < n; i++) {
      char sym[300];
      pl[i].symbol = gir_arena_strdup(a, tir_gpu_launch_symbol(fn->name, i, sym, sizeof sym));
      for (int d = 0; d < 3; d++) {
        pl[i].grid[d] = ls[i].dims[d];
        pl[i].block[d] = ls[i].dims[3 + d];
      }
    }
    call->n_launches = n;
    call->launches = pl;
  }
  return 0;
}

int kiln_compile(const kiln_compile_options *o, kiln_compile_result *res, gir_err *err) {
  FILE *dump = o->dump ? o->dump : stdout;
  memset(res, 0, sizeof *res);
  kiln_front f = {0};
  gir_arena *a = NULL;
  gir_graph *g = NULL;
  tgt_llvm_module *mod = NULL;
  void *obj = NULL, *lib = NULL;
  char *csrc = NULL, triple_buf[96];
  const char *triple = NULL;
  size_t obj_bytes = 0, lib_bytes = 0, csrc_bytes = 0;
  int rc = -1;
  int64_t limit = o->max_arena_bytes > 0 ? o->max_arena_bytes : KILN_DEFAULT_MAX_ARENA_BYTES;
  tgt_llvm_options topt = {0};
  int c_target = 0; /* targets/c: C source, compiled by a C compiler */
  if (tgt_c_is_bare_metal(o->target) && !o->aot) {
    gir_errf(err, "--target %s is bare metal: no bundle runtime runs there; kiln compile --aot -o DIR writes a C project",
             o->target);
    goto out;
  }
  if (o->aot && !tgt_c_is_target(o->target)) {
    gir_errf(err, "--aot writes C: it needs --target c, cortex-m4, cortex-m7 or cortex-m55, not %s",
             o->target ? o->target : "host");
    goto out;
  }
  if (kernel_backend(o, &topt, &c_target, err) < 0) goto out;
  if (kiln_compile_front(o, &f, res, err) < 0) goto out;
  g = f.g;
  a = f.arena;
  lower_program p = f.prog;

  /* plan: buffers for every value, memory planned by liveness; sizes checked
   * against the limit before any code is generated */
  pack_plan plan;
  if (check_values(g, limit, err) < 0 || pack_build_plan(g, &p, a, &plan, err) < 0) goto out;
  if (plan.mem.arena_bytes > limit) {
    char s1[48], s2[48];
    gir_errf(err, "the arena would be %s, more than the %s limit (--max-arena-bytes)",
             size_text(plan.mem.arena_bytes, s1, sizeof s1), size_text(limit, s2, sizeof s2));
    goto out;
  }
  res->arena_bytes = plan.mem.arena_bytes;
  res->arena_lower_bound = plan.mem.lower_bound;
  res->weights_bytes = plan.params_bytes;
  res->workspace_bytes = plan.workspace_bytes;
  res->calls = plan.n_calls;
  res->intermediate_bytes = intermediate_bytes(&p, &plan);
  if (dumping(o, "plan"))
    fprintf(dump, "arena %lld bytes (liveness lower bound %lld), params %lld bytes, %d calls\n",
            (long long)plan.mem.arena_bytes, (long long)plan.mem.lower_bound, (long long)plan.params_bytes, plan.n_calls);

  /* codegen: loop IR → LLVM IR → optimized object for the target (the C target:
   * loop IR → C99 source) */
  const tir_func **fns = gir_arena_calloc(a, (size_t)p.n_kernels + 1, sizeof *fns);
  for (int k = 0; k < p.n_kernels; k++) fns[k] = p.kernels[k].fn;
  if (c_target) {
    if (tgt_c_emit_source(fns, p.n_kernels, NULL, &csrc, &csrc_bytes, err) < 0) goto out;
    if (dumping(o, "codegen")) fputs(csrc, dump);
    triple = tgt_c_host_triple(triple_buf, sizeof triple_buf);
    if (o->aot) { /* the project instead of the bundle: no link, no pack */
      rc = write_aot(o, &f, &plan, csrc, csrc_bytes, NULL, 0, res, err);
      goto out;
    }
  } else if (topt.gpu_sm > 0) { /* CUDA: PTX text, no link; each call its launches */
    mod = tgt_llvm_compile(fns, p.n_kernels, &topt, err);
    if (!mod) goto out;
    if (dumping(o, "codegen") && tgt_llvm_dump_ir(mod, dump, err) < 0) goto out;
    char *ptx = NULL;
    if (tgt_llvm_asm_string(mod, &ptx, &lib_bytes, err) < 0) goto out;
    lib = ptx;
    triple = tgt_llvm_module_triple(mod);
    if (gpu_plan_launches(&p, &plan, a, err) < 0) goto out;
  } else {
    mod = tgt_llvm_compile(fns, p.n_kernels, &topt, err);
    if (!mod) goto out;
    if (dumping(o, "codegen") && tgt_llvm_dump_ir(mod, dump, err) < 0) goto out;
    if (tgt_llvm_emit_object_mem(mod, &obj, &obj_bytes, err) < 0) goto out;
    triple = tgt_llvm_module_triple(mod);
    if (o->aot) { /* --kernels llvm: the CPU's object in the project */
      rc = write_aot(o, &f, &plan, NULL, 0, obj, obj_bytes, res, err);
      goto out;
    }
  }

  /* link: object → shared library (the C target: the host's cc compiles the source into it) */
  if (topt.gpu_sm > 0) { /* PTX: the driver compiles it when the bundle is opened */
  } else if (c_target ? tgt_c_compile_shared(csrc, csrc_bytes, NULL, &lib, &lib_bytes, err)
                      : pack_link_shared(obj, obj_bytes, tgt_llvm_module_is_host(mod) ? NULL : triple, &lib, &lib_bytes, err))
    goto out;
  res->code_bytes = (int64_t)lib_bytes;
  if (dumping(o, "link") && pack_print_library(dump, lib, lib_bytes, triple, err) < 0) goto out;

  /* pack: the bundle, to the file or into memory */
  pack_io *ins = gir_arena_calloc(a, (size_t)g->n_inputs + 1, sizeof *ins);
  pack_io *outs = gir_arena_calloc(a, (size_t)g->n_outputs + 1, sizeof *outs);
  if (!ins || !outs) {
    gir_errf(err, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->n_inputs; i++) ins[i] = io_of(g->inputs[i], &f.ranges[i]);
  for (int i = 0; i < g->n_outputs; i++) outs[i] = out_io(g, &plan, i);
  pack_bundle bundle = {
      .model = model_name(o->model_path), .compiler_version = KILN_VERSION,
      .target_name = o->target ? o->target : "host", .triple = triple,
      .cpu_features = mod && topt.gpu_sm <= 0 ? tgt_llvm_module_features(mod) : NULL, /* C: the host cc's baseline */
      .inputs = ins, .outputs = outs, .n_inputs = g->n_inputs, .n_outputs = g->n_outputs,
      .calls = plan.calls, .n_calls = plan.n_calls, .arena_bytes = plan.mem.arena_bytes,
      .workspace_bytes = 0 /* kernel workspace lives in the arena */, .params = plan.params, .params_bytes = plan.params_bytes,
      .lib = lib, .lib_bytes = (int64_t)lib_bytes, .source = csrc, .source_bytes = (int64_t)csrc_bytes,
      .gpu_sm = c_target ? 0 : topt.gpu_sm};
  if (dumping(o, "pack") && pack_print_bundle(dump, &bundle, err) < 0) goto out;
  if (o->output_path ? pack_write_bundle(o->output_path, &bundle, err)
                     : pack_bundle_to_memory(&bundle, &res->bundle, &res->bundle_bytes, err))
    goto out;
  rc = 0;
out:
  free(obj);
  free(lib);
  free(csrc);
  tgt_llvm_module_free(mod);
  kiln_front_free(&f);
  return rc;
}

int kiln_print_footprint(const kiln_compile_options *opt, FILE *out, gir_err *err) {
  kiln_compile_options o = *opt;
  kiln_compile_result res;
  const char *target = o.target ? o.target : "host";
  char dir[] = "/tmp/kiln-footprint-XXXXXX";
  int aot = tgt_c_is_target(o.target);
  if (aot && !mkdtemp(dir)) return gir_errf(err, "--footprint: cannot create a temporary folder");
  o.aot = aot;
  o.output_path = aot ? dir : NULL; /* the LLVM targets: a bundle in memory */
  o.dump_after = NULL;
  int rc = kiln_compile(&o, &res, err);
  if (aot) { /* what pack_write_aot wrote */
    static const char *const files[] = {"kernels.c", "kiln_abi.h", "model.c", "model.h", "model_weights.c",
                                        "manifest.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
      char p[128];
      snprintf(p, sizeof p, "%s/%s", dir, files[i]);
      unlink(p);
    }
    rmdir(dir);
  }
  if (rc < 0) return -1;
  free(res.bundle);
  fprintf(out, "footprint for %s:\n", target);
  if (aot && res.footprint_measured) {
    fprintf(out, "  flash: %lld bytes = kernels %lld + runtime %lld + weights %lld (%s)\n",
            (long long)(res.flash_kernels + res.flash_runtime + res.flash_weights), (long long)res.flash_kernels,
            (long long)res.flash_runtime, (long long)res.flash_weights, res.footprint_compiler);
    fprintf(out, "  RAM: %lld bytes = arena %lld + stack %lld%s + data %lld\n",
            (long long)(res.arena_bytes + res.ram_stack + res.ram_data), (long long)res.arena_bytes,
            (long long)res.ram_stack, res.stack_exact ? "" : " (at least)", (long long)res.ram_data);
  } else if (aot) {
    fprintf(out, "  weights %lld bytes, arena %lld bytes; code and stack not measured: %s\n",
            (long long)res.weights_bytes, (long long)res.arena_bytes, res.footprint_why);
  } else {
    fprintf(out, "  code: %lld bytes (lib/%s.so) + weights %lld bytes; RAM: arena %lld bytes (liveness lower "
            "bound %lld); the runtime and the stack not counted\n", (long long)res.code_bytes, target,
            (long long)res.weights_bytes, (long long)res.arena_bytes, (long long)res.arena_lower_bound);
  }
  return 0;
}

/* Whether a bundle can be written at path: not a folder, in a folder that
 * exists and is writable. Checked before compiling, so a typo costs no compile;
 * the writer still reports any failure with its reason. */
static int check_output_path(const char *path, gir_err *err) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return gir_errf(err, "cannot write '%s': it is a folder", path);
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == path) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  if (stat(dir, &st) != 0) return gir_errf(err, "cannot write '%s': folder '%s': %s", path, dir, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return gir_errf(err, "cannot write '%s': '%s' is not a folder", path, dir);
  if (access(dir, W_OK) != 0) return gir_errf(err, "cannot write '%s': folder '%s': %s", path, dir, strerror(errno));
  return 0;
}

int kiln_cmd_compile(int argc, char **argv) {
  cli_args args;
  int r = cli_parse(CLI_CMD_COMPILE, argc, argv, &args);
  if (r) return r < 0 ? 2 : 0;
  cli_import ci = {0};
  if (cli_args_import(&args, &ci) < 0) return 2;
  kiln_compile_options o = {.threads_hint = 2, .opt_level = 2, .model_path = args.positional,
                            .output_path = args.str[CLI_OPT_OUTPUT], .target = args.str[CLI_OPT_TARGET],
                            .dump_after = args.str[CLI_OPT_DUMP_AFTER]};
  if (args.set[CLI_OPT_OPT_LEVEL]) o.opt_level = (int)args.num[CLI_OPT_OPT_LEVEL];
  if (args.set[CLI_OPT_MAX_ARENA]) o.max_arena_bytes = args.num[CLI_OPT_MAX_ARENA];
  o.aot = args.set[CLI_OPT_AOT] > 0;
  o.kernels = args.str[CLI_OPT_KERNELS];
  if ((o.winograd = cli_winograd_mode(&args)) < 0 || (o.split_k = cli_split_k(&args)) < 0) return 2;
  if ((o.gpu_tf32 = cli_gpu_tf32(&args)) < 0) return 2;
  if (o.dump_after) {
    int known = 0;
    for (int i = 0; kiln_compile_steps[i]; i++) known |= !strcmp(kiln_compile_steps[i], o.dump_after);
    if (!known) {
      fprintf(stderr, "kiln compile: unknown step '%s' (steps:", o.dump_after);
      for (int i = 0; kiln_compile_steps[i]; i++) fprintf(stderr, " %s", kiln_compile_steps[i]);
      fprintf(stderr, ")\n");
      return 2;
    }
  }
  gir_err err = {{0}};
  struct stat st;
  int is_dir = o.output_path && stat(o.output_path, &st) == 0 && S_ISDIR(st.st_mode);
  if (!(o.aot && is_dir) && check_output_path(o.output_path, &err) < 0) { /* --aot: a folder, made when missing */
    fprintf(stderr, "kiln compile: %s\n", err.msg);
    return 1;
  }
  cli_import_finish(&ci);
  o.import = &ci.opt;
  cli_records *recs = NULL; /* --records FILE: the tuned schedules of `kiln tune` (cli/tune.c) */
  if (args.str[CLI_OPT_RECORDS] && !(recs = cli_records_open(args.str[CLI_OPT_RECORDS], o.target, &err))) {
    fprintf(stderr, "kiln compile: %s\n", err.msg);
    return 1;
  }
  if (recs) o.tuning = cli_records_hook(recs);
  const char *specs[64];
  int n_specs = cli_values(&args, CLI_OPT_KNOBS, specs, 64);
  cli_knobs *knobs = NULL; /* --knobs: set knobs of every group of a template */
  if (n_specs > 0 && recs) {
    fprintf(stderr, "kiln compile: --knobs and --records both set the templates' knobs: give one\n");
    cli_records_free(recs);
    return 2;
  }
  if (n_specs > 0 && !(knobs = cli_knobs_parse(specs, n_specs, &err))) {
    fprintf(stderr, "kiln compile: %s\n", err.msg);
    return 2;
  }
  if (knobs) o.tuning = cli_knobs_hook(knobs);
  kiln_compile_result res;
  if (kiln_compile(&o, &res, &err) < 0) {
    fprintf(stderr, "kiln compile: %s\n", err.msg);
    cli_records_free(recs);
    free(knobs);
    return 1;
  }
  free(knobs);
  cli_note_unbound(stderr, "kiln compile", res.n_unbound, res.unbound);
  if (res.n_trapped > 0)
    fprintf(stderr, "kiln compile: note: %d If branch%s cannot run for these shapes and fail%s the run if taken: %s%s\n",
            res.n_trapped, res.n_trapped == 1 ? "" : "es", res.n_trapped == 1 ? "s" : "", res.trapped,
            res.n_trapped > 1 ? " (and others)" : "");
  printf("compiled %s -> %s\n", o.model_path, o.output_path);
  printf("  kernels: %d (%d nodes folded at compile time)", res.kernels, res.folded_nodes);
  if (res.calls != res.kernels) printf(", %d called (the rest move no bytes: views, concats written in place)", res.calls);
  printf("\n");
  printf("  arena: %.2f MiB (liveness lower bound %.2f MiB)\n", mib(res.arena_bytes), mib(res.arena_lower_bound));
  printf("  intermediates: %.1f MiB written per run\n", mib(res.intermediate_bytes));
  printf("  weights: %.2f MiB\n", mib(res.weights_bytes));
  if (o.aot && res.footprint_measured) { /* the board's flash and RAM, as its compiler lays them out */
    printf("  flash: %lld bytes = kernels %lld + runtime %lld + weights %lld (%s)\n",
           (long long)(res.flash_kernels + res.flash_runtime + res.flash_weights), (long long)res.flash_kernels,
           (long long)res.flash_runtime, (long long)res.flash_weights, res.footprint_compiler);
    printf("  RAM: %lld bytes = arena %lld + stack %lld%s + data %lld\n",
           (long long)(res.arena_bytes + res.ram_stack + res.ram_data), (long long)res.arena_bytes,
           (long long)res.ram_stack, res.stack_exact ? "" : " (at least: some frames unmeasured)", (long long)res.ram_data);
  } else if (o.aot) {
    printf("  flash and RAM: not measured: %s\n", res.footprint_why);
  } else {
    printf("  code: %.1f KiB\n", res.code_bytes / 1024.0);
  }
  printf("  work: %.3f GFLOPs per run\n", res.flops / 1e9);
  if (res.winograd_convs)
    printf("  winograd: %d 3x3 convs as Winograd transforms around batched GEMMs (--winograd off: none)\n",
           res.winograd_convs);
  printf("  generic schedules: %d groups (conv %d, matmul %d, pool %d)%s%s\n",
         res.generic_conv + res.generic_matmul + res.generic_pool, res.generic_conv, res.generic_matmul,
         res.generic_pool, res.generic_names[0] ? ": " : "", res.generic_names);
  if (recs) cli_records_report(recs, args.str[CLI_OPT_RECORDS], stdout);
  cli_records_free(recs);
  return 0;
}
