/* compile.c — kiln_compile (see compile.h) and `kiln compile`. The pipeline is the
 * list of steps below, in order; nothing else happens between them. */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "compile.h"
#include "flops.h"
#include "fusion.h"
#include "simplify.h"
#include "interp.h"
#include "layout.h"
#include "link.h"
#include "llvm_backend.h"
#include "lower.h"
#include "passes.h"
#include "plan.h"

const char *const kiln_compile_steps[] = {"import", "fold", "simplify", "hfuse", "layout", "fuse", "outputs", "lower", "codegen", "link", "plan", "pack", NULL};

static int dumping(const kiln_compile_options *o, const char *step) { return o->dump_after && !strcmp(o->dump_after, step); }

static const char *model_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

int cli_take_opt_level(int argc, char **argv, int *i, int *level) {
  const char *v = NULL;
  if (!strcmp(argv[*i], "--opt-level") || !strcmp(argv[*i], "-O")) {
    if (*i + 1 >= argc) {
      fprintf(stderr, "kiln: %s needs a level\n", argv[*i]);
      return -1;
    }
    v = argv[++*i];
  } else if (!strncmp(argv[*i], "--opt-level=", 12))
    v = argv[*i] + 12;
  else if (!strncmp(argv[*i], "-O", 2) && argv[*i][2])
    v = argv[*i] + 2;
  else
    return 0;
  if (strlen(v) != 1 || v[0] < '0' || v[0] > '3') {
    fprintf(stderr, "kiln: --opt-level takes 0, 1, 2 or 3, not '%s'\n", v);
    return -1;
  }
  *level = v[0] - '0';
  return 1;
}

void kiln_front_free(kiln_front *f) {
  gir_graph_free(f->g);
  gir_arena_free(f->arena);
  memset(f, 0, sizeof *f);
}

int kiln_compile_front(const kiln_compile_options *o, kiln_front *f, kiln_compile_result *res, gir_err *err) {
  FILE *dump = o->dump ? o->dump : stdout;
  memset(f, 0, sizeof *f);
  f->arena = gir_arena_new();
  gir_evaluator ev = cli_fold_evaluator();
  int32_t *group_of = NULL, n_groups = 0;

  /* import: ONNX → graph IR, shapes bound, small constants folded */
  f->g = imp_load_file(o->model_path, o->import, NULL, err);
  if (!f->g) return -1;
  gir_graph *g = f->g;
  if (dumping(o, "import")) gir_print(g, dump);

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
  tgt_llvm_options topt;
  lower_target lt;
  if (tgt_llvm_named_target(o->target ? o->target : "host", &topt, err) < 0 || tgt_llvm_lower_target(&topt, &lt) < 0)
    return -1;
  if (o->opt_level >= 2) {
    lay_stats ls;
    if (lay_split_conv_transpose(g, NULL, err) < 0) return -1; /* phase convs, blocked next */
    if (lay_nchwc(g, lt.vec_f32, &ls, err) < 0) return -1;
    int32_t packed = 0; /* constant matmul weights in the template's column panels */
    if (lay_pack_matmul(g, lt.vec_f32, &packed, err) < 0) return -1;
    int32_t merged = 0; /* two convs reading one input got one relayout each */
    if (gir_cse(g, &merged) < 0) return gir_errf(err, "layout: CSE failed");
    int32_t folded = 0;
    gir_err ferr = {{0}};
    gir_fold_constants(g, &ev, 0, &folded, &ferr);
    res->folded_nodes += folded;
  }
  if (dumping(o, "layout")) gir_print(g, dump);

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

/* kiln_compile, also reporting the intermediate bytes (intermediates may be NULL). */
static int compile_bundle(const kiln_compile_options *o, kiln_compile_result *res, int64_t *intermediates,
                          gir_err *err) {
  FILE *dump = o->dump ? o->dump : stdout;
  memset(res, 0, sizeof *res);
  kiln_front f = {0};
  gir_arena *a = NULL;
  gir_graph *g = NULL;
  tgt_llvm_module *mod = NULL;
  void *obj = NULL, *lib = NULL;
  size_t obj_bytes = 0, lib_bytes = 0;
  int rc = -1;
  tgt_llvm_options topt;
  if (tgt_llvm_named_target(o->target ? o->target : "host", &topt, err) < 0) goto out;
  if (kiln_compile_front(o, &f, res, err) < 0) goto out;
  g = f.g;
  a = f.arena;
  lower_program p = f.prog;

  /* codegen: loop IR → LLVM IR → optimized object for the target */
  const tir_func **fns = gir_arena_calloc(a, (size_t)p.n_kernels + 1, sizeof *fns);
  for (int k = 0; k < p.n_kernels; k++) fns[k] = p.kernels[k].fn;
  mod = tgt_llvm_compile(fns, p.n_kernels, &topt, err);
  if (!mod) goto out;
  if (dumping(o, "codegen") && tgt_llvm_dump_ir(mod, dump, err) < 0) goto out;
  if (tgt_llvm_emit_object_mem(mod, &obj, &obj_bytes, err) < 0) goto out;

  /* link: object → shared library */
  if (pack_link_shared(obj, obj_bytes, tgt_llvm_module_is_host(mod) ? NULL : tgt_llvm_module_triple(mod), &lib,
                       &lib_bytes, err) < 0)
    goto out;
  res->code_bytes = (int64_t)lib_bytes;

  /* plan: buffers for every value, memory planned by liveness */
  pack_plan plan;
  if (pack_build_plan(g, &p, a, &plan, err) < 0) goto out;
  res->arena_bytes = plan.mem.arena_bytes;
  res->arena_lower_bound = plan.mem.lower_bound;
  res->weights_bytes = plan.params_bytes;
  res->workspace_bytes = plan.workspace_bytes;
  res->calls = plan.n_calls;
  if (intermediates) *intermediates = intermediate_bytes(&p, &plan);
  if (dumping(o, "plan"))
    fprintf(dump, "arena %lld bytes (liveness lower bound %lld), params %lld bytes, %d calls\n",
            (long long)plan.mem.arena_bytes, (long long)plan.mem.lower_bound, (long long)plan.params_bytes, plan.n_calls);

  /* pack: the bundle */
  pack_io *ins = gir_arena_calloc(a, (size_t)g->n_inputs + 1, sizeof *ins);
  pack_io *outs = gir_arena_calloc(a, (size_t)g->n_outputs + 1, sizeof *outs);
  for (int i = 0; i < g->n_inputs; i++) ins[i] = (pack_io){g->inputs[i]->name, g->inputs[i]->dtype, g->inputs[i]->shape};
  for (int i = 0; i < g->n_outputs; i++) outs[i] = (pack_io){g->outputs[i]->name, g->outputs[i]->dtype, g->outputs[i]->shape};
  pack_bundle bundle = {
      .model = model_name(o->model_path), .compiler_version = KILN_VERSION,
      .target_name = o->target ? o->target : "host", .triple = tgt_llvm_module_triple(mod),
      .inputs = ins, .outputs = outs, .n_inputs = g->n_inputs, .n_outputs = g->n_outputs,
      .calls = plan.calls, .n_calls = plan.n_calls, .arena_bytes = plan.mem.arena_bytes,
      .workspace_bytes = 0 /* kernel workspace lives in the arena */, .params = plan.params, .params_bytes = plan.params_bytes,
      .lib = lib, .lib_bytes = (int64_t)lib_bytes};
  if (pack_write_bundle(o->output_path, &bundle, err) < 0) goto out;
  rc = 0;
out:
  free(obj);
  free(lib);
  tgt_llvm_module_free(mod);
  kiln_front_free(&f);
  return rc;
}

int kiln_compile(const kiln_compile_options *o, kiln_compile_result *res, gir_err *err) {
  return compile_bundle(o, res, NULL, err);
}

int kiln_cmd_compile(int argc, char **argv) {
  cli_import ci = {0};
  kiln_compile_options o = {.threads_hint = 2, .opt_level = 2};
  for (int i = 0; i < argc; i++) {
    int t = cli_take_input_shape(&ci, argc, argv, &i);
    if (t < 0) return 2;
    if (t) continue;
    if ((t = cli_take_opt_level(argc, argv, &i, &o.opt_level)) != 0) {
      if (t < 0) return 2;
      continue;
    }
    if (!strcmp(argv[i], "-o") && i + 1 < argc) o.output_path = argv[++i];
    else if (!strcmp(argv[i], "--target") && i + 1 < argc) o.target = argv[++i];
    else if (!strncmp(argv[i], "--dump-after=", 13)) o.dump_after = argv[i] + 13;
    else if (!strcmp(argv[i], "--dump-after") && i + 1 < argc) o.dump_after = argv[++i];
    else if (argv[i][0] != '-' && !o.model_path) o.model_path = argv[i];
    else {
      fprintf(stderr, "kiln compile: unexpected argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!o.model_path || !o.output_path) {
    fprintf(stderr, "usage: kiln compile MODEL.onnx -o MODEL.kiln [--target T] [--opt-level 0-3] "
                    "[--input-shape NAME:DIMS]... [--dump-after=STEP]\n");
    return 2;
  }
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
  cli_import_finish(&ci);
  o.import = &ci.opt;
  kiln_compile_result r;
  int64_t intermediates = 0;
  gir_err err = {{0}};
  if (compile_bundle(&o, &r, &intermediates, &err) < 0) {
    fprintf(stderr, "kiln compile: %s\n", err.msg);
    return 1;
  }
  printf("compiled %s -> %s\n", o.model_path, o.output_path);
  printf("  kernels: %d (%d nodes folded at compile time)", r.kernels, r.folded_nodes);
  if (r.calls != r.kernels) printf(", %d called (the rest move no bytes: views, concats written in place)", r.calls);
  printf("\n");
  printf("  arena: %.2f MiB (liveness lower bound %.2f MiB)\n", r.arena_bytes / 1048576.0, r.arena_lower_bound / 1048576.0);
  printf("  intermediates: %.1f MiB written per run\n", intermediates / 1048576.0);
  printf("  weights: %.2f MiB\n", r.weights_bytes / 1048576.0);
  printf("  code: %.1f KiB\n", r.code_bytes / 1024.0);
  printf("  work: %.3f GFLOPs per run\n", r.flops / 1e9);
  return 0;
}
