/* test_tune.c — the tuner's library (tuner/), on small graphs built here and run
 * through the same front as kiln_compile (NCHWc layout, packed matmul weights,
 * folding, FuseOps, lowering with the tuner's probe):
 *   keys      equal groups share one task; keys are stable text (a golden key) and
 *             FNV-1a hashes with the reference test vectors
 *   defaults  with no hook, with the probe, and with the default knobs as a point,
 *             a group lowers to the same loop IR byte for byte
 *   spaces    every point round-trips through its index; register-pressure and
 *             no-op points are rejected before any build
 *   features  the same kernel gives the same vector, twice; points differ
 *   model     XGBoost rank:pairwise learns a toy ranking
 *   records   round trip; a torn last line, another CPU, another version are
 *             counted and skipped; a closing check decides what is applied
 *   measure   a candidate that crashes, hangs or fails is an error, the next ones
 *             are measured; a tune with such candidates finishes, and a second run
 *             resumes from the records without measuring a point twice
 *   outputs   tuned kernels compute what the default kernel computes; so does each
 *             value of the knobs that split a conv's loops further
 *   leaks     many builds in one process (the ASan build's LeakSanitizer) */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "fusion.h"
#include "graph_util.h"
#include "layout.h"
#include "tun_internal.h"

#define NARGS64(...) ((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SH(...) ((gir_shape){.rank = NARGS64(__VA_ARGS__), .dims = {__VA_ARGS__}})
#define INTS(...) (int64_t[]){__VA_ARGS__}, NARGS64(__VA_ARGS__)

static gir_value *crand(gir_graph *g, gir_shape s, rng *r) {
  gir_value *v = gir_const_new(g, NULL, GIR_F32, &s, NULL);
  for (int64_t i = 0; i < gir_value_numel(v); i++) ((float *)v->data)[i] = (float)(rnd(r) * 0.2);
  return v;
}

static gir_value *conv(gir_graph *g, gir_value *x, int64_t m, int64_t k, rng *r) {
  gir_value *w = crand(g, SH(m, x->shape.dims[1], k, k), r), *b = crand(g, SH(m), r);
  gir_node *n = TU_NODE(g, GIR_OP_conv, x, w, b);
  gir_attr_set_ints(g, n, "pads", INTS(k / 2, k / 2, k / 2, k / 2));
  gir_attr_set_ints(g, n, "strides", INTS(1, 1));
  gir_attr_set_int(g, n, "group", 1);
  return tu_done(g, n);
}

static gir_value *unary(gir_graph *g, gir_unary_fn fn, gir_value *a) {
  gir_node *n = TU_NODE(g, GIR_OP_unary, a);
  gir_attr_set_int(g, n, "fn", fn);
  return tu_done(g, n);
}

static gir_value *binary(gir_graph *g, gir_binary_fn fn, gir_value *a, gir_value *b) {
  gir_node *n = TU_NODE(g, GIR_OP_binary, a, b);
  gir_attr_set_int(g, n, "fn", fn);
  return tu_done(g, n);
}

/* x[1,32,14,14] → conv 3x3 → relu → conv 3x3 (the same workload) → + x → relu → conv 1x1
 * to 64; a[1,24,96] @ W[96,80] + b. */
static gir_graph *test_graph(void) {
  gir_graph *g = gir_graph_new("tune");
  rng r = {7};
  gir_value *x = tu_input(g, GIR_F32, SH(1, 32, 14, 14));
  gir_value *h = unary(g, GIR_UNARY_RELU, conv(g, x, 32, 3, &r));
  h = unary(g, GIR_UNARY_RELU, binary(g, GIR_BINARY_ADD, conv(g, h, 32, 3, &r), x));
  gir_graph_add_output(g, conv(g, h, 64, 1, &r));
  gir_value *a = tu_input(g, GIR_F32, SH(1, 24, 96));
  gir_value *mm = tu_done(g, TU_NODE(g, GIR_OP_matmul, a, crand(g, SH(96, 80), &r)));
  gir_graph_add_output(g, binary(g, GIR_BINARY_ADD, mm, crand(g, SH(80), &r)));
  return g;
}

typedef struct front {
  gir_graph *g;
  gir_arena *a;
  tun_probe *probe;
  tun_tasks ts;
} front;

/* x[1,16,14,14] → conv 4x4 (pads 2: a 15x15 output) to 32 → relu: a kernel whose columns
 * split (unroll_kw 2) and whose rows divide by 3. */
static gir_graph *knob_graph(void) {
  gir_graph *g = gir_graph_new("knobs");
  rng r = {13};
  gir_value *x = tu_input(g, GIR_F32, SH(1, 16, 14, 14));
  gir_graph_add_output(g, unary(g, GIR_UNARY_RELU, conv(g, x, 32, 4, &r)));
  return g;
}

/* What kiln_compile_front does at -O2 on graph g (NULL: test_graph()), with the probe
 * as the lowering hook. */
static int run_front_on(front *f, const tun_target *t, gir_graph *g) {
  memset(f, 0, sizeof *f);
  f->g = g ? g : test_graph();
  f->a = gir_arena_new();
  f->probe = tun_probe_new(t);
  gir_err e = {{0}};
  gir_evaluator ev = lower_fold_evaluator();
  lay_stats ls;
  int32_t packed = 0, folded = 0;
  if (!CHECKF(lay_nchwc(f->g, t->lower.vec_f32, t->lower.masked_loads, &ls, &e) == 0, "%s", e.msg)) return -1;
  if (!CHECKF(lay_pack_matmul(f->g, t->lower.vec_f32, t->lower.vec_regs, &packed, &e) == 0, "%s", e.msg)) return -1;
  gir_fold_constants(f->g, &ev, 0, &folded, &e);
  fus_partition part;
  if (!CHECKF(fus_partition_graph(f->g, NULL, f->a, &part, &e) == 0, "%s", e.msg)) return -1;
  lower_target lt = t->lower;
  lt.tuning = tun_probe_hook(f->probe);
  tir_builder b;
  tir_builder_init(&b, f->a);
  lower_program p;
  if (!CHECKF(lower_graph_groups(f->g, part.group_of, part.n_groups, &b, &lt, &p, &e) == 0, "%s", e.msg)) return -1;
  if (!CHECKF(tun_tasks_build(f->probe, t, 1, &f->ts, &e) == 0, "%s", e.msg)) return -1;
  return 0;
}

static int run_front(front *f, const tun_target *t) { return run_front_on(f, t, NULL); }

static void free_front(front *f) {
  tun_tasks_free(&f->ts);
  tun_probe_free(f->probe);
  gir_arena_free(f->a);
  gir_graph_free(f->g);
}

static const tun_task *task_of(const front *f, const char *tmpl, int occurrences) {
  for (int i = 0; i < f->ts.n; i++)
    if (!strcmp(f->ts.tasks[i].space.tmpl, tmpl) && (!occurrences || f->ts.tasks[i].occurrences == occurrences))
      return &f->ts.tasks[i];
  return NULL;
}

/* The loop IR of a lowered kernel as text (malloc'ed). */
static char *ir_text(const tir_func *fn) {
  char *s = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&s, &n);
  tir_print_func(fn, m);
  fclose(m);
  return s;
}

static void test_keys(const tun_target *host) {
  char h[17];
  tun_key_hash("", h); /* FNV-1a 64 reference vectors */
  CHECK_STR(h, "cbf29ce484222325");
  tun_key_hash("a", h);
  CHECK_STR(h, "af63dc4c8601ec8c");
  front f1, f2;
  if (run_front(&f1, host) < 0 || run_front(&f2, host) < 0) return;
  CHECK_INT(f1.ts.n, f2.ts.n);
  const tun_task *c3 = task_of(&f1, "conv", 2), *mm = task_of(&f1, "matmul", 0);
  CHECKF(c3 != NULL, "the two 3x3 convs are one task with two occurrences");
  CHECKF(mm != NULL, "the matmul is a task");
  CHECKF(task_of(&f1, "conv", 1) != NULL, "the 1x1 conv is a task of its own");
  for (int i = 0; i < f1.ts.n && i < f2.ts.n; i++) CHECK_STR(f1.ts.tasks[i].key, f2.ts.tasks[i].key);
  if (c3) CHECKF(strstr(c3->key, "conv_nchwc{") && !strstr(c3->key, "0x"), "%s", c3->key);
  free_front(&f2);
  free_front(&f1);
  /* a golden key: the target x86_64 (SSE2: 4 lanes, 16 registers) on any x86-64 machine */
  tun_target t;
  gir_err e = {{0}};
  if (tun_target_init(&t, "x86_64", &e) < 0) {
    CHECK_SKIP("x86_64: %s", e.msg);
    return;
  }
  if (run_front(&f1, &t) < 0) return;
  const tun_task *c1 = task_of(&f1, "conv", 1);
  if (CHECK(c1 != NULL))
    CHECK_STR(c1->key, "kiln-wk1;target=x86_64;vec=4;regs=16;tmpl=conv;op=conv_nchwc{group=1;pads=0,0,0,0;"
                       "strides=1,1}(float32[1x4x14x14x8],float32[8x4x1x1x8x8]=c,float32[8x8]=c)"
                       "->float32[1x8x14x14x8]");
  free_front(&f1);
}

static void test_defaults(const tun_target *t) {
  front f;
  if (run_front(&f, t) < 0) return;
  for (int i = 0; i < f.ts.n; i++) {
    const tun_task *k = &f.ts.tasks[i];
    gir_err e = {{0}};
    /* no hook at all */
    gir_arena *a = gir_arena_new();
    tir_builder b;
    tir_builder_init(&b, a);
    te_ctx c;
    te_ctx_init(&c, a, &e);
    lower_kernel plain;
    if (!CHECKF(lower_nodes(&b, &c, k->group.nodes, k->group.n_nodes, k->group.outs, k->group.n_outs, "tuned",
                            &t->lower, &plain, &e) == 0,
                "%s", e.msg))
      continue;
    char *want = ir_text(plain.fn);
    tun_kernel kd, kp;
    CHECK(tun_build_lower(k, t, NULL, &kd, &e) == 0);
    char *got = kd.k.fn ? ir_text(kd.k.fn) : NULL;
    CHECKF(got && !strcmp(want, got), "task %d (%s): the default through the hook differs", i, k->label);
    free(got);
    if (k->has_defaults) {
      CHECK(tun_build_lower(k, t, k->defaults, &kp, &e) == 0 && kp.applied);
      got = kp.k.fn ? ir_text(kp.k.fn) : NULL;
      CHECKF(got && !strcmp(want, got), "task %d (%s): the default knobs as a point differ", i, k->label);
      free(got);
      tun_kernel_free(&kp);
    } else {
      CHECKF(!strcmp(k->space.tmpl, "generic"), "task %d (%s): its defaults are not a point of its space", i, k->label);
    }
    tun_kernel_free(&kd);
    free(want);
    gir_arena_free(a);
  }
  free_front(&f);
}

static void test_spaces_features(const tun_target *t) {
  front f;
  if (run_front(&f, t) < 0) return;
  for (int i = 0; i < f.ts.n; i++) {
    const tun_task *k = &f.ts.tasks[i];
    const tun_space *s = &k->space;
    int64_t bad = 0, rejected = 0;
    char why[160];
    for (int64_t idx = 0; idx < s->size; idx++) {
      int32_t v[TUN_MAX_KNOBS];
      tun_space_values(s, idx, v);
      bad += tun_space_index(s, v) != idx;
      rejected += tun_space_check(s, v, why, sizeof why) != 0;
    }
    CHECKF(bad == 0, "task %d: %lld points do not round-trip", i, (long long)bad);
    if (!strcmp(s->tmpl, "conv")) CHECKF(rejected > 0 && rejected < s->size, "conv: %lld rejected", (long long)rejected);
    /* features: twice the same, and not all points alike */
    tun_cache *c1 = tun_cache_new(k, t), *c2 = tun_cache_new(k, t);
    int same = 1, distinct = 0, valid = 0;
    float first[TUN_N_FEATURES];
    uint64_t seed = 9;
    for (int tries = 0; tries < 24 && valid < 12; tries++) {
      int64_t idx = tun_random_point(s, c1, &seed, NULL, NULL, 500);
      const float *a = idx >= 0 ? tun_cache_features(c1, idx) : NULL;
      float fa[TUN_N_FEATURES];
      if (!a) continue;
      memcpy(fa, a, sizeof fa);
      const float *b = tun_cache_features(c2, idx);
      same &= b && !memcmp(fa, b, sizeof fa);
      if (valid++ == 0) memcpy(first, fa, sizeof first);
      else distinct |= memcmp(first, fa, sizeof fa) != 0;
    }
    CHECKF(same && valid > 1 && distinct, "task %d: features deterministic %d, valid points %d, distinct %d", i, same,
           valid, distinct);
    tun_cache_free(c1);
    tun_cache_free(c2);
  }
  free_front(&f);
}

static void test_model(void) {
  enum { N = 240 };
  float *x = calloc((size_t)N * 2 * TUN_N_FEATURES, sizeof *x), y[2 * N], p[2 * N];
  rng r = {11};
  for (int i = 0; i < 2 * N; i++) {
    for (int j = 0; j < TUN_N_FEATURES; j++) x[(size_t)i * TUN_N_FEATURES + j] = (float)rnd(&r);
    const float *xi = x + (size_t)i * TUN_N_FEATURES;
    y[i] = (float)((xi[0] - 0.5 * xi[1] + 1.5) / 3.0); /* a relevance in [0, 1] */
  }
  uint32_t groups[4] = {N / 4, N / 4, N / 4, N / 4};
  gir_err e = {{0}};
  tun_model *m = tun_model_train(x, y, N, groups, 4, NULL, 60, &e);
  if (!CHECKF(m != NULL, "%s", e.msg)) {
    free(x);
    return;
  }
  CHECK(tun_model_predict(m, x + (size_t)N * TUN_N_FEATURES, N, NULL, p, &e) == 0);
  long agree = 0, pairs = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      if (y[N + i] > y[N + j] + 0.05f) pairs++, agree += p[i] > p[j];
  CHECKF(agree > pairs * 0.85, "held-out pairs ordered right: %ld of %ld", agree, pairs);
  tun_model_free(m);
  free(x);
}

static void test_records(const tun_target *t) {
  char path[] = "/tmp/kiln-test-records-XXXXXX";
  int fd = mkstemp(path);
  if (!CHECK(fd >= 0)) return;
  FILE *f = fdopen(fd, "w");
  const char *names[2] = {"mr", "nr_vecs"};
  int32_t vals[2] = {6, 2};
  float feat[TUN_N_FEATURES];
  for (int i = 0; i < TUN_N_FEATURES; i++) feat[i] = (float)(i % 7) * 0.25f;
  tun_record base = {.key = "kiln-wk1;target=t;tmpl=matmul;op=\"q\"", .tmpl = "matmul", .target = t->name,
                     .cpu = t->cpu, .version = "0.1.3", .cost = 1.5e-4, .error = "", .time = 1700000000, .flops = 4096};
  tun_record r1 = base, r2 = base, r3 = base, r4 = base, r5 = base;
  r1.is_default = 1;
  r2.n_knobs = 2, r2.knob_names = names, r2.knob_values = vals, r2.features = feat, r2.n_features = TUN_N_FEATURES;
  r3 = r2, r3.cost = -1, r3.error = "crashed: signal 11 (Segmentation fault)";
  r4.is_default = 1, r4.cpu = "another CPU";
  r5.is_default = 1, r5.version = "0.2.0";
  gir_err e = {{0}};
  CHECK(tun_record_write(f, &r1, &e) == 0 && tun_record_write(f, &r2, &e) == 0 && tun_record_write(f, &r3, &e) == 0 &&
        tun_record_write(f, &r4, &e) == 0 && tun_record_write(f, &r5, &e) == 0);
  fputs("{\"v\":1,\"kiln\":\"0.1.0\",\"workload\":\"tor", f); /* a killed run's last line */
  fclose(f);
  tun_record_set s = {0};
  CHECK(tun_records_load(&s, path, t, "0.1.0", 0, 0, &e) == 0);
  CHECK_INT(s.n, 3);
  CHECK_INT(s.malformed, 1);
  CHECK_INT(s.other_cpu, 1);
  CHECK_INT(s.other_version, 1);
  if (s.n == 3) {
    CHECK(s.r[0].is_default && s.r[0].cost == 1.5e-4 && !strcmp(s.r[0].key, base.key));
    CHECK(!s.r[1].is_default && s.r[1].n_knobs == 2 && !strcmp(s.r[1].knob_names[1], "nr_vecs") &&
          s.r[1].knob_values[0] == 6 && s.r[1].n_features == TUN_N_FEATURES && s.r[1].flops == 4096);
    int feq = s.r[1].features != NULL;
    for (int i = 0; feq && i < TUN_N_FEATURES; i++) feq = s.r[1].features[i] == feat[i];
    CHECKF(feq, "features round-trip");
    CHECK_STR(s.r[2].error, "crashed: signal 11 (Segmentation fault)");
    char h[17];
    tun_key_hash(base.key, h);
    CHECK_STR(s.r[1].hash, h);
  }
  /* threads: 1 when a record does not say; a tune resumes only its own setting */
  CHECK(s.n < 1 || s.r[0].threads == 1);
  tun_records_free(&s);
  f = fopen(path, "w");
  tun_record d2 = r1, b2 = r2, b1 = r2;
  d2.threads = b2.threads = 2, d2.cost = 1.0e-4, b2.cost = 0.9e-4, b1.cost = 0.5e-4; /* the one-thread best is */
  CHECK(f && tun_record_write(f, &r1, &e) == 0 && tun_record_write(f, &b1, &e) == 0 &&   /* "faster" */
        tun_record_write(f, &d2, &e) == 0 && tun_record_write(f, &b2, &e) == 0);
  if (f) fclose(f);
  CHECK(tun_records_load(&s, path, t, "0.1.0", 2, 0, &e) == 0);
  CHECK_INT(s.n, 2);
  CHECK_INT(s.other_threads, 2);
  CHECK(s.n < 1 || s.r[0].threads == 2);
  tun_records_free(&s);
  CHECK(tun_records_load(&s, path, t, "0.1.0", 0, 0, &e) == 0);
  CHECK_INT(s.n, 4);
  tun_apply *ap = tun_apply_new(&s, t);
  int32_t groups, matched, workloads;
  if (CHECK(ap != NULL)) {
    tun_apply_stats(ap, &groups, &matched, &workloads);
    CHECK_INT(workloads, 1); /* the two-thread record, which beat the two-thread default */
    tun_apply_free(ap);
  }
  /* the two-thread setting alone decides: its best no faster than its default, nothing applies */
  tun_records_free(&s);
  f = fopen(path, "w");
  b2.cost = 1.1e-4;
  CHECK(f && tun_record_write(f, &b1, &e) == 0 && tun_record_write(f, &r1, &e) == 0 &&
        tun_record_write(f, &d2, &e) == 0 && tun_record_write(f, &b2, &e) == 0);
  if (f) fclose(f);
  CHECK(tun_records_load(&s, path, t, "0.1.0", 0, 0, &e) == 0);
  if (CHECK((ap = tun_apply_new(&s, t)) != NULL)) {
    tun_apply_stats(ap, &groups, &matched, &workloads);
    CHECK_INT(workloads, 0);
    tun_apply_free(ap);
  }
  tun_records_free(&s);
  /* a closing check decides over the trials: the best trial (0.5 against the default's 1.5)
   * measured side by side 1% faster is not applied (under TUN_CONFIRM_MARGIN), 10% is; the
   * latest check replaces an earlier one */
  for (int round = 0; round < 3; round++) {
    f = fopen(path, "w");
    tun_record cd = r1, cb = b1;
    cd.cost = 1.0e-4, cd.confirm = 1000;
    cb.cost = 0.99e-4, cb.confirm = 1000;
    int ok = f && tun_record_write(f, &r1, &e) == 0 && tun_record_write(f, &b1, &e) == 0;
    for (int i = 0; i < 3; i++) ok = ok && tun_record_write(f, &cd, &e) == 0 && tun_record_write(f, &cb, &e) == 0;
    if (round > 0) { /* a later check: 10% faster (round 1), or slower again (round 2, later still) */
      cd.confirm = cb.confirm = 2000 + round;
      cb.cost = round == 1 ? 0.9e-4 : 1.05e-4;
      for (int i = 0; i < 3; i++) ok = ok && tun_record_write(f, &cd, &e) == 0 && tun_record_write(f, &cb, &e) == 0;
      if (round == 2) { /* an older check after it in the file changes nothing */
        cd.confirm = cb.confirm = 2001, cb.cost = 0.5e-4;
        ok = ok && tun_record_write(f, &cd, &e) == 0 && tun_record_write(f, &cb, &e) == 0;
      }
    }
    CHECK(ok);
    if (f) fclose(f);
    CHECK(tun_records_load(&s, path, t, "0.1.0", 0, 0, &e) == 0);
    CHECK(s.n < 3 || s.r[2].confirm == 1000);
    if (CHECK((ap = tun_apply_new(&s, t)) != NULL)) {
      tun_apply_stats(ap, &groups, &matched, &workloads);
      CHECKF(workloads == (round == 1), "round %d: %d workloads applied", round, workloads);
      tun_apply_free(ap);
    }
    tun_records_free(&s);
  }
  /* the in-model check (records with a model id, on the model run's two threads): when it is
   * the later check it decides — the kernel check's 10% gain measured 5% slower in the model
   * is not applied, 1% faster is not (the margin), 5% faster is; a kernel check after it
   * decides again. Its records stay apart from the trials' thread counts, and the candidate
   * mode applies the point whatever a check said. */
  for (int round = 0; round < 4; round++) {
    f = fopen(path, "w");
    tun_record cd = r1, cb = b1, md = r1, mb = b1;
    cd.cost = 1.0e-4, cd.confirm = 1000;
    cb.cost = 0.9e-4, cb.confirm = 1000;
    md.model = mb.model = 3000, md.threads = mb.threads = 2;
    md.cost = 2.0e-4, mb.cost = round == 0 ? 2.1e-4 : round == 1 ? 1.98e-4 : 1.9e-4;
    int ok = f && tun_record_write(f, &r1, &e) == 0 && tun_record_write(f, &b1, &e) == 0;
    for (int i = 0; i < 3; i++) ok = ok && tun_record_write(f, &cd, &e) == 0 && tun_record_write(f, &cb, &e) == 0;
    ok = ok && tun_record_write(f, &md, &e) == 0 && tun_record_write(f, &mb, &e) == 0;
    if (round == 3) { /* a later kernel check, 2% slower */
      cd.confirm = cb.confirm = 4000, cb.cost = 1.02e-4;
      for (int i = 0; i < 3; i++) ok = ok && tun_record_write(f, &cd, &e) == 0 && tun_record_write(f, &cb, &e) == 0;
    }
    CHECK(ok);
    if (f) fclose(f);
    CHECK(tun_records_load(&s, path, t, "0.1.0", 0, 0, &e) == 0);
    CHECK(s.n < 10 || (s.r[9].model == 3000 && s.r[9].threads == 2 && s.r[9].n_knobs == 2));
    if (CHECK((ap = tun_apply_new(&s, t)) != NULL)) {
      tun_apply_stats(ap, &groups, &matched, &workloads);
      CHECKF(workloads == (round == 2), "model check round %d: %d workloads applied", round, workloads);
      tun_apply_set_mode(ap, TUN_APPLY_CANDIDATES);
      tun_apply_stats(ap, &groups, &matched, &workloads);
      CHECKF(workloads == 1, "model check round %d, candidates: %d workloads", round, workloads);
      tun_apply_free(ap);
    }
    tun_records_free(&s);
  }
  unlink(path);
}

/* ---- measurement with broken candidates ---- */
static int32_t crash_kernel(void *const *b, const kiln_ctx *c) {
  (void)b, (void)c;
  raise(SIGSEGV);
  return 0;
}
static int32_t hang_kernel(void *const *b, const kiln_ctx *c) {
  (void)b, (void)c;
  for (volatile unsigned x = 0;; x++) {
  }
  return 0;
}
static int32_t fail_kernel(void *const *b, const kiln_ctx *c) {
  (void)b, (void)c;
  return 3;
}

typedef struct sabotage_plan {
  int64_t crash, hang, fail;
} sabotage_plan;

static kiln_kernel_fn sabotage(void *ctx, int64_t i) {
  const sabotage_plan *p = ctx;
  return i == p->crash ? crash_kernel : i == p->hang ? hang_kernel : i == p->fail ? fail_kernel : NULL;
}

static int count_lines(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  char *line = NULL;
  size_t cap = 0;
  int n = 0;
  while (f && getline(&line, &cap, f) > 0) n += !needle || strstr(line, needle) != NULL;
  free(line);
  if (f) fclose(f);
  return n;
}

static void test_measure_and_tune(const tun_target *t) {
  front f;
  if (run_front(&f, t) < 0) return;
  const tun_task *mm = task_of(&f, "matmul", 0);
  if (!CHECK(mm != NULL)) {
    free_front(&f);
    return;
  }
  sabotage_plan plan = {1, 2, 3};
  tun_local_options lo = tun_local_defaults();
  lo.timeout_s = 1;
  lo.sabotage = sabotage;
  lo.sabotage_ctx = &plan;
  gir_err e = {{0}};
  tun_measurer *m = tun_local_measurer(&lo, &e);
  tun_measure_input in[5];
  int32_t vals[5][TUN_MAX_KNOBS];
  for (int i = 0; i < 5; i++) {
    tun_space_values(&mm->space, (int64_t)i * 3 % mm->space.size, vals[i]);
    in[i] = (tun_measure_input){mm, i == 0 ? NULL : vals[i]};
  }
  tun_measure_result out[5];
  CHECK(m->measure(m->self, t, in, 5, out, &e) == 0);
  CHECKF(out[0].cost > 0 && !out[0].error[0], "default: %s", out[0].error);
  CHECKF(strstr(out[1].error, "crashed: signal 11") != NULL, "crash: '%s'", out[1].error);
  CHECKF(strstr(out[2].error, "timed out") != NULL, "hang: '%s'", out[2].error);
  CHECKF(strstr(out[3].error, "returned 3") != NULL, "fail: '%s'", out[3].error);
  CHECKF(out[4].cost > 0 && !out[4].error[0], "after them: %s", out[4].error);
  m->free(m->self);
  free(m);
  /* on two threads (the runtime's pool, builds serialized): the same verdicts */
  lo.threads = 2;
  m = tun_local_measurer(&lo, &e);
  plan = (sabotage_plan){1, -1, -1};
  tun_measure_result out2[3];
  CHECK(m->measure(m->self, t, in, 3, out2, &e) == 0);
  CHECKF(out2[0].cost > 0 && !out2[0].error[0], "default on 2 threads: %s", out2[0].error);
  CHECKF(strstr(out2[1].error, "crashed: signal 11") != NULL, "crash on 2 threads: '%s'", out2[1].error);
  CHECKF(out2[2].cost > 0 && !out2[2].error[0], "after it: %s", out2[2].error);
  m->free(m->self);
  free(m);
  lo.threads = 1;
  /* weights evicted before each call: measured still, and no faster than hot (the same kernel; a 20% margin
   * for a noisy machine) */
  lo.cold_weights = 1;
  m = tun_local_measurer(&lo, &e);
  plan = (sabotage_plan){-1, -1, -1};
  tun_measure_result cold;
  CHECK(m->measure(m->self, t, in, 1, &cold, &e) == 0);
  CHECKF(cold.cost > 0 && !cold.error[0] && cold.cost > 0.8 * out[0].cost, "cold weights: %g s (hot %g s) %s",
         cold.cost, out[0].cost, cold.error);
  m->free(m->self);
  free(m);
  lo.cold_weights = 0;

  /* a whole tune with a crashing and a hanging candidate, then a resumed one */
  char path[] = "/tmp/kiln-test-tune-XXXXXX";
  int fd = mkstemp(path);
  if (!CHECK(fd >= 0)) {
    free_front(&f);
    return;
  }
  close(fd);
  tun_tasks one = f.ts;
  one.tasks = (tun_task *)mm;
  one.n = 1;
  for (int run = 0; run < 2; run++) {
    sabotage_plan p2 = {2, 5, -1};
    lo.sabotage_ctx = &p2;
    m = tun_local_measurer(&lo, &e);
    tun_options o = tun_default_options();
    o.trials = run == 0 ? 12 : 18;
    o.batch = 4;
    o.records_path = path;
    o.version = "0.1.0";
    tun_result res;
    CHECKF(tun_tune(&one, t, m, &o, &res, &e) == 0, "run %d: %s", run, e.msg);
    CHECK_INT(res.trials, o.trials);
    if (run == 0) {
      CHECK_INT(res.tasks[0].errors, 2);
      CHECKF(res.tasks[0].default_s > 0, "the default was measured");
    } else {
      CHECK_INT(res.tasks[0].resumed, 12);
      CHECK_INT(res.tasks[0].errors, 4); /* two from the file, two sabotaged again */
    }
    tun_result_free(&res);
    m->free(m->self);
    free(m);
  }
  /* 18 trials, and each run's closing check (three pairs) where its best beat the default */
  int checks = count_lines(path, "\"confirm\":");
  CHECKF(checks == 0 || checks == 6 || checks == 12, "%d lines of closing checks", checks);
  CHECK_INT(count_lines(path, NULL) - checks, 18);
  CHECK_INT(count_lines(path, "crashed: signal 11"), 2);
  CHECK_INT(count_lines(path, "timed out"), 2);
  CHECK_INT(count_lines(path, "\"knobs\":\"default\"") - checks / 2, 1);
  /* no point measured twice */
  tun_record_set s = {0};
  CHECK(tun_records_load(&s, path, t, "0.1.0", 0, 0, &e) == 0);
  int dup = 0;
  for (int i = 0; i < s.n; i++)
    for (int j = 0; j < i; j++) {
      if (s.r[i].is_default || s.r[j].is_default || s.r[i].confirm || s.r[j].confirm ||
          s.r[i].n_knobs != s.r[j].n_knobs)
        continue;
      dup += !memcmp(s.r[i].knob_values, s.r[j].knob_values, sizeof(int32_t) * (size_t)s.r[i].n_knobs);
    }
  CHECK_INT(dup, 0);
  tun_records_free(&s);
  unlink(path);
  free_front(&f);
}

static int32_t serial_for(const kiln_ctx *c, kiln_task_fn fn, void *closure, int64_t n) {
  (void)c;
  if (n > 0) fn(closure, 0, n);
  return 0;
}

/* Runs a kernel in this process on seeded inputs; its outputs into outs (malloc'ed). */
static int run_kernel(const tun_kernel *k, float **outs) {
  const lower_kernel *lk = &k->k;
  void *bufs[64] = {0};
  int n = lk->n_in + lk->n_out + lk->n_ws;
  if (n > 64 || lk->n_out > 4) return -1;
  rng r = {3};
  for (int i = 0; i < n; i++) {
    const gir_value *v = i < lk->n_in ? lk->in[i] : i < lk->n_in + lk->n_out ? lk->out[i - lk->n_in] : NULL;
    int64_t bytes = v ? gir_value_nbytes(v) : lk->ws_bytes[i - lk->n_in - lk->n_out];
    size_t sz = (size_t)(bytes + 127) / 64 * 64;
    bufs[i] = aligned_alloc(64, sz);
    memset(bufs[i], 0, sz);
    if (i < lk->n_in && v->data) memcpy(bufs[i], v->data, (size_t)bytes);
    else if (i < lk->n_in)
      for (int64_t j = 0; j < bytes / 4; j++) ((float *)bufs[i])[j] = (float)rnd(&r);
  }
  kiln_ctx ctx = {.parallel_for = serial_for};
  int rc = k->fn(bufs, &ctx);
  for (int i = 0; i < lk->n_out; i++) outs[i] = bufs[lk->n_in + i], bufs[lk->n_in + i] = NULL;
  for (int i = 0; i < n; i++) free(bufs[i]);
  return rc;
}

static void test_outputs_and_leaks(const tun_target *t) {
  front f;
  if (run_front(&f, t) < 0) return;
  int builds = 0;
  for (int i = 0; i < f.ts.n; i++) {
    const tun_task *k = &f.ts.tasks[i];
    gir_err e = {{0}};
    tun_kernel kd;
    float *want[4] = {0};
    if (!CHECKF(tun_build_lower(k, t, NULL, &kd, &e) == 0 && tun_build_jit(&kd, t, &e) == 0, "%s", e.msg)) {
      tun_kernel_free(&kd);
      continue;
    }
    CHECK(run_kernel(&kd, want) == 0);
    builds++;
    tun_cache *c = tun_cache_new(k, t);
    uint64_t seed = 5;
    for (int trial = 0; trial < 4; trial++) {
      int64_t idx = tun_random_point(&k->space, c, &seed, NULL, NULL, 200);
      if (idx < 0) break;
      int32_t v[TUN_MAX_KNOBS];
      tun_space_values(&k->space, idx, v);
      tun_kernel kt;
      float *got[4] = {0};
      if (CHECKF(tun_build_lower(k, t, v, &kt, &e) == 0 && tun_build_jit(&kt, t, &e) == 0, "%s", e.msg) &&
          CHECK(run_kernel(&kt, got) == 0)) {
        for (int o = 0; o < kd.k.n_out; o++) {
          int64_t n = gir_value_numel(kd.k.out[o]), bad = 0;
          for (int64_t j = 0; j < n; j++) bad += fabsf(want[o][j] - got[o][j]) > 1e-5f * (1 + fabsf(want[o][j]));
          char d[256];
          CHECKF(bad == 0, "task %s, point %s: %lld of %lld outputs differ", k->label,
                 tun_space_describe(&k->space, v, d, sizeof d), (long long)bad, (long long)n);
        }
      }
      for (int o = 0; o < 4; o++) free(got[o]);
      tun_kernel_free(&kt);
      builds++;
    }
    tun_cache_free(c);
    for (int o = 0; o < 4; o++) free(want[o]);
    tun_kernel_free(&kd);
  }
  CHECKF(builds >= 12, "%d kernels built and run", builds);
  free_front(&f);
}

/* Each value of the knobs that split or fuse a conv's loops (oh_tile, ic_unroll, a
 * partial unroll_kw, px_flat, fuse_kw), set alone on the default point (prefetch off
 * where they exclude it, fuse_kw off beside ic_unroll and unroll_kw; px_flat with rows
 * of pixels: no image_tile or pixel_outer), passes the space's check, builds, and
 * computes what the default computes. */
static void test_split_knobs(const tun_target *t) {
  enum { NK = 5 };
  const char *names[NK] = {"oh_tile", "ic_unroll", "unroll_kw", "px_flat", "fuse_kw"};
  int tried[NK] = {0};
  for (int gi = 0; gi < 2; gi++) {
    front f;
    if (run_front_on(&f, t, gi ? knob_graph() : NULL) < 0) return;
    for (int i = 0; i < f.ts.n; i++) {
      const tun_task *k = &f.ts.tasks[i];
      if (strcmp(k->space.tmpl, "conv") || !k->has_defaults) continue;
      gir_err e = {{0}};
      tun_kernel kd;
      float *want[4] = {0};
      if (!CHECKF(tun_build_lower(k, t, NULL, &kd, &e) == 0 && tun_build_jit(&kd, t, &e) == 0, "%s", e.msg) ||
          !CHECK(run_kernel(&kd, want) == 0)) {
        tun_kernel_free(&kd);
        continue;
      }
      for (int ki = 0; ki < NK; ki++) {
        int knob = tun_space_knob(&k->space, names[ki]), pf = tun_space_knob(&k->space, "prefetch");
        int flat = !strcmp(names[ki], "px_flat"), fuse = tun_space_knob(&k->space, "fuse_kw");
        int toggle = flat || knob == fuse;
        if (!CHECKF(knob >= 0 && pf >= 0 && fuse >= 0, "task %s has no knob %s", k->label, names[ki])) continue;
        for (int c = 0; c < k->space.knobs[knob].n; c++) {
          int32_t v[TUN_MAX_KNOBS], val = k->space.knobs[knob].cand[c];
          memcpy(v, k->defaults, sizeof v);
          if ((!toggle && val <= 1) || val < 0 || val == v[knob]) continue;
          if (!strcmp(names[ki], "ic_unroll") || !strcmp(names[ki], "unroll_kw")) v[fuse] = 0;
          v[knob] = val;
          v[pf] = 0;
          if (flat) v[tun_space_knob(&k->space, "image_tile")] = v[tun_space_knob(&k->space, "pixel_outer")] = 0;
          char why[160], d[256];
          /* a taller tile may need fewer pixels per row: the widest that passes */
          int ow = tun_space_knob(&k->space, "ow_tile"), ok = 0;
          for (int32_t w = v[ow]; w >= 1 && !ok; w--) {
            v[ow] = w;
            ok = tun_space_index(&k->space, v) >= 0 && tun_space_check(&k->space, v, why, sizeof why) == 0;
          }
          if (!ok) continue;
          tun_space_describe(&k->space, v, d, sizeof d);
          tun_kernel kt;
          float *got[4] = {0};
          tried[ki]++;
          if (CHECKF(tun_build_lower(k, t, v, &kt, &e) == 0 && tun_build_jit(&kt, t, &e) == 0, "%s: %s", d, e.msg) &&
              CHECKF(kt.applied, "%s: not applied", d) && CHECK(run_kernel(&kt, got) == 0)) {
            char *a = ir_text(kd.k.fn), *b = ir_text(kt.k.fn);
            CHECKF(strcmp(a, b) != 0, "task %s, point %s: the same loop IR as the default", k->label, d);
            free(a);
            free(b);
            for (int o = 0; o < kd.k.n_out; o++) {
              int64_t n = gir_value_numel(kd.k.out[o]), bad = 0;
              for (int64_t j = 0; j < n; j++) bad += fabsf(want[o][j] - got[o][j]) > 1e-5f * (1 + fabsf(want[o][j]));
              CHECKF(bad == 0, "task %s, point %s: %lld of %lld outputs differ", k->label, d, (long long)bad,
                     (long long)n);
            }
          }
          for (int o = 0; o < 4; o++) free(got[o]);
          tun_kernel_free(&kt);
        }
      }
      for (int o = 0; o < 4; o++) free(want[o]);
      tun_kernel_free(&kd);
    }
    free_front(&f);
  }
  for (int ki = 0; ki < NK; ki++) CHECKF(tried[ki] > 0, "no point with %s was built", names[ki]);
}

int main(void) {
  gir_err e = {{0}};
  tun_target host;
  if (!CHECKF(tun_target_init(&host, "host", &e) == 0, "%s", e.msg)) return check_finish("test_tune");
  test_keys(&host);
  test_defaults(&host);
  test_spaces_features(&host);
  test_model();
  test_records(&host);
  test_measure_and_tune(&host);
  test_outputs_and_leaks(&host);
  test_split_knobs(&host);
  return check_finish("test_tune");
}
