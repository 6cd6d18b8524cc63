/* inspect.c — `kiln inspect`: imports a model and reports what a user needs to
 * know before compiling it: inputs and outputs, IR version and opsets, the ONNX op
 * histogram, parameters (values computable from constants alone, counted where
 * they feed the network), estimated FLOPs, and every unsupported op with the node
 * it sits at. Exit 0 only when the model imported completely.
 * --fused folds constants and lists the fused groups (fusion/): one line per
 * group, i.e. per kernel the compiler will emit, and with --dot draws them as
 * clusters; --svg renders the same drawing with Graphviz's dot (svg.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "compile.h"
#include "flops.h"
#include "fusion.h"
#include "passes.h"
#include "tensorfile.h"

/* Inputs and outputs are the graph's tensors: a sequence input or output NAME of
 * N elements is listed as NAME.0 … NAME.{N-1}, an optional one as NAME (holding a
 * tensor) or NAME.K (holding a sequence), an absent optional not at all; the
 * length and presence come from --test-data (importer.h). */
static void print_values(const char *title, gir_value *const *vs, int n) {
  printf("%s:\n", title);
  for (int i = 0; i < n; i++) {
    char b[160];
    gir_shape s = vs[i]->shape;
    if (vs[i]->string_bytes) { /* a string tensor: its ONNX shape, and the slot of each string */
      s.rank--;
      printf("  %-32s %-8s %s (slots of %d bytes)\n", vs[i]->name, "string", gir_shape_str(&s, b, sizeof b),
             vs[i]->string_bytes);
      continue;
    }
    printf("  %-32s %-8s %s\n", vs[i]->name, gir_dtype_name(vs[i]->dtype), gir_shape_str(&s, b, sizeof b));
  }
}

static void human_count(double v, char *buf, size_t n) {
  const char *unit[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    u++;
  }
  snprintf(buf, n, u ? "%.2f %s" : "%.0f%s", v, unit[u]);
}

static int cmp_count(const void *a, const void *b, void *ctx) {
  const int64_t *counts = ctx;
  int64_t x = counts[*(const int *)a], y = counts[*(const int *)b];
  return x < y ? 1 : x > y ? -1 : 0;
}

static void print_histogram(const imp_report *r) {
  int *idx = malloc(sizeof *idx * (size_t)(r->n_op_types + 1));
  for (int i = 0; i < r->n_op_types; i++) idx[i] = i;
  qsort_r(idx, (size_t)r->n_op_types, sizeof *idx, cmp_count, r->op_counts);
  printf("op histogram (%lld ONNX nodes):\n", (long long)r->onnx_nodes);
  for (int i = 0; i < r->n_op_types; i++) printf("  %-28s %lld\n", r->op_types[idx[i]], (long long)r->op_counts[idx[i]]);
  free(idx);
}

/* Parameters: constant-derived values consumed by nodes that are not
 * themselves constant-derived (i.e. the weights the network reads). */
static void weights_and_flops(const gir_graph *g, int64_t *params, int64_t *bytes, int64_t *flops) {
  uint8_t *cd = calloc((size_t)g->n_values + 1, 1), *counted = calloc((size_t)g->n_values + 1, 1);
  gir_const_derived(g, cd);
  *params = *bytes = *flops = 0;
  for (int k = 0; k < g->n_nodes; k++) {
    const gir_node *n = g->nodes[k];
    if (n->n_out && cd[n->out[0]->id]) continue;
    *flops = gir_flops_add(*flops, gir_node_flops(n));
    for (int j = 0; j < n->n_in; j++) {
      const gir_value *v = n->in[j];
      if (!v || !cd[v->id] || counted[v->id]) continue;
      counted[v->id] = 1;
      if (gir_value_numel(v) <= 1) continue; /* scalars are not weights */
      *params += gir_value_numel(v);
      *bytes += gir_value_nbytes(v);
    }
  }
  free(cd);
  free(counted);
}

static int check_test_outputs(const gir_graph *g, const char *dir, gir_arena *a) {
  imp_tensor *refs = gir_arena_calloc(a, (size_t)g->n_outputs + 1, sizeof *refs);
  const cli_output *outs = cli_graph_outputs(g, NULL, a);
  if (!refs || !outs) return 1;
  int bad = cli_output_refs(outs, g->n_outputs, dir, a, refs); /* a sequence's or optional's tensors: NAME.K, NAME (importer.h) */
  for (int i = 0; i < g->n_outputs; i++) {
    char b1[160], b2[160];
    if (!refs[i].name) continue; /* reported */
    imp_tensor t = refs[i];
    const gir_value *v = g->outputs[i];
    int ok = t.dtype == v->dtype && gir_shape_equal(&t.shape, &v->shape);
    printf("  output %-24s kiln %s[%s] expected %s[%s] %s\n", v->name, gir_dtype_name(v->dtype),
           gir_shape_str(&v->shape, b1, sizeof b1), gir_dtype_name(t.dtype), gir_shape_str(&t.shape, b2, sizeof b2),
           ok ? "OK" : "MISMATCH");
    bad += !ok;
  }
  return bad;
}

/* Folds constants, partitions the graph and lists the groups; fills cluster
 * labels for the DOT output. 0 or -1 (message printed). */
static int report_fused(gir_graph *g, cli_import *ci, gir_arena *a, fus_partition *p, const char ***labels) {
  gir_err err = {{0}}, ferr = {{0}};
  int32_t n_before = g->n_nodes;
  gir_fold_constants(g, &ci->eval, 0, NULL, &ferr);
  if (fus_partition_graph(g, NULL, a, p, &err) < 0 || fus_verify_partition(g, p, &err) < 0) {
    fprintf(stderr, "kiln inspect: %s\n", err.msg);
    p->group_of = NULL; /* no clusters */
    return -1;
  }
  int32_t anchored = 0, heavy = 0, by_cat[GIR_CATEGORY_COUNT] = {0};
  for (int32_t k = 0; k < g->n_nodes; k++) {
    gir_op op = g->nodes[k]->op;
    heavy += op == GIR_OP_conv || op == GIR_OP_conv_transpose || op == GIR_OP_matmul || op == GIR_OP_pool;
  }
  *labels = gir_arena_calloc(a, (size_t)p->n_groups + 1, sizeof **labels);
  printf("fused groups (after constant folding: %d nodes, %d folded away):\n", g->n_nodes, n_before - g->n_nodes);
  printf("  %5s  %-19s %-12s %5s  %s\n", "group", "category", "master", "nodes", "members");
  for (int32_t i = 0; i < p->n_groups; i++) {
    const fus_group *gr = &p->groups[i];
    const gir_node *m = g->nodes[gr->master];
    gir_op op = m->op;
    anchored += gr->category == GIR_COMPLEX &&
                (op == GIR_OP_conv || op == GIR_OP_conv_transpose || op == GIR_OP_matmul || op == GIR_OP_pool);
    by_cat[gr->category]++;
    const char *members = fus_describe_group(g, p, i, a);
    printf("  %5d  %-19s %-12s %5d  %s%s\n", i, gir_category_name(gr->category), fus_node_op_name(m), gr->n_nodes,
           members, gr->n_graph_outputs ? "  [writes a graph output]" : "");
    if (*labels) (*labels)[i] = gir_arena_printf(a, "g%d %s (%d)", i, fus_node_op_name(m), gr->n_nodes);
  }
  printf("groups: %d over %d nodes (%d complex, %d reduction, %d injective, %d opaque); %d of the %d "
         "conv/conv_transpose/matmul/pool nodes anchor a group\n",
         p->n_groups, g->n_nodes, by_cat[GIR_COMPLEX], by_cat[GIR_REDUCTION], by_cat[GIR_INJECTIVE],
         by_cat[GIR_OPAQUE], anchored, heavy);
  return 0;
}

int kiln_cmd_inspect(int argc, char **argv) {
  cli_args args;
  int r = cli_parse(CLI_CMD_INSPECT, argc, argv, &args);
  if (r) return r < 0 ? 2 : 0;
  cli_import ci = {0};
  if (cli_args_import(&args, &ci) < 0) return 2;
  int winograd = cli_winograd_mode(&args);
  if (winograd < 0) return 2;
  const char *model = args.positional, *dot = args.str[CLI_OPT_DOT], *test_data = args.str[CLI_OPT_TEST_DATA];
  int print_ir = args.set[CLI_OPT_PRINT] > 0, fused = args.set[CLI_OPT_FUSED] > 0;
  gir_arena *scratch = gir_arena_new();
  if (test_data && cli_load_test_inputs(&ci, test_data, scratch) < 0) {
    gir_arena_free(scratch);
    return 1;
  }
  cli_import_finish(&ci);
  imp_report rep;
  imp_report_init(&rep);
  gir_err err = {{0}};
  gir_graph *g = imp_load_file(model, &ci.opt, &rep, &err);
  if (!g && rep.onnx_nodes == 0 && rep.n_unsupported == 0) { /* unreadable: nothing to report but why */
    fprintf(stderr, "kiln inspect: %s\n", err.msg);
    imp_report_free(&rep);
    gir_arena_free(scratch);
    return 1;
  }

  printf("model: %s\n", model);
  printf("ir_version: %lld\n", (long long)rep.ir_version);
  if (rep.onnx_nodes) print_histogram(&rep);
  if (g) {
    printf("opsets:");
    for (int i = 0; i < g->n_opsets; i++)
      printf(" %s=%lld", g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx", (long long)g->opsets[i].version);
    printf("\n");
    print_values("inputs", g->inputs, g->n_inputs);
    print_values("outputs", g->outputs, g->n_outputs);
    int64_t params, bytes, flops;
    weights_and_flops(g, &params, &bytes, &flops);
    char a[32], b[32];
    human_count((double)params, a, sizeof a);
    human_count((double)flops, b, sizeof b);
    printf("parameters: %lld (%s, %.2f MiB)\n", (long long)params, a, (double)bytes / (1 << 20));
    printf("estimated FLOPs: %lld (%sFLOPs)\n", (long long)flops, b);
    printf("canonical nodes: %d\n", g->n_nodes);
    if (rep.qdq_units)
      printf("QDQ units imported as integer ops (DequantizeLinear -> Conv/MatMul/Gemm, or as ONNX Runtime's QLinear "
             "ops Add/Mul/AveragePool/GlobalAveragePool/Sigmoid/LeakyRelu/Softmax/Concat, or MaxPool on the 8-bit values -> "
             "QuantizeLinear): %lld\n",
             (long long)rep.qdq_units);
  }
  if (rep.n_unbound)
    printf("unbound input dims (1 assumed; --input-shape NAME:DIMS binds them): %d: %s\n", rep.n_unbound, rep.unbound);
  printf("unsupported ops: %d\n", rep.n_unsupported);
  for (int i = 0; i < rep.n_unsupported; i++) {
    const imp_unsupported *u = &rep.unsupported[i];
    printf("  unsupported op %s%s%s (opset %lld) at node '%s': %s\n", u->domain, u->domain[0] ? "." : "",
           u->op_type, (long long)u->opset, u->node_name, u->reason);
  }
  int rc = 0;
  if (!g) {
    fprintf(stderr, "kiln inspect: %s\n", err.msg);
    rc = 1;
  } else {
    fus_partition part = {0};
    const char **labels = NULL;
    if (fused && report_fused(g, &ci, scratch, &part, &labels) < 0) rc = 1;
    if (print_ir) gir_print(g, stdout);
    if (test_data) {
      printf("test data outputs:\n");
      if (check_test_outputs(g, test_data, scratch)) rc = 1;
    }
    if (args.set[CLI_OPT_FOOTPRINT]) { /* compile for the target, keep nothing, print the flash and RAM */
      kiln_compile_options co = {.threads_hint = 2, .opt_level = 2, .model_path = model,
                                 .target = args.str[CLI_OPT_TARGET], .import = &ci.opt,
                                 .kernels = args.str[CLI_OPT_KERNELS], .winograd = winograd};
      gir_err ferr = {{0}};
      if (kiln_print_footprint(&co, stdout, &ferr) < 0) {
        fprintf(stderr, "kiln inspect: --footprint: %s\n", ferr.msg);
        rc = 1;
      }
    }
    if (dot) {
      FILE *f = fopen(dot, "w");
      if (!f) {
        fprintf(stderr, "kiln inspect: cannot write '%s': %s\n", dot, strerror(errno));
        rc = 1;
      } else {
        gir_write_dot(g, f, part.group_of, labels);
        fclose(f);
      }
    }
    if (args.str[CLI_OPT_SVG]) { /* the same DOT, in memory, through dot -Tsvg */
      char *text = NULL;
      size_t len = 0;
      FILE *f = open_memstream(&text, &len);
      if (!f) {
        fprintf(stderr, "kiln inspect: out of memory for the graph's DOT\n");
        rc = 1;
      } else {
        gir_write_dot(g, f, part.group_of, labels);
        if (fclose(f) != 0 || !text) {
          fprintf(stderr, "kiln inspect: out of memory for the graph's DOT\n");
          rc = 1;
        } else if (cli_render_svg(text, len, args.str[CLI_OPT_SVG]) < 0) {
          rc = 1;
        }
      }
      free(text);
    }
  }
  gir_graph_free(g);
  imp_report_free(&rep);
  gir_arena_free(scratch);
  return rc;
}
