/* plan.c — plan.json: the ordered kernel calls and where each buffer lives.
 *
 * A kernel argument is a graph input or output (by index), a range of the arena
 * (intermediate values and workspace) or a range of params.bin (constants).
 * Every range is checked here, once, so that run can hand raw pointers to the
 * kernels without looking: offset and bytes are non-negative integers,
 * offset + bytes does not overflow and stays inside the arena / params.bin,
 * and offsets are 64-byte aligned (the memory planner's alignment, which the
 * generated code is allowed to assume). Every graph output must be passed to
 * at least one kernel, otherwise nothing would ever write it.
 *
 * A GPU bundle's kernel (nvptx64 triple) is one or more launches instead of a
 * call: "launches", each a PTX entry symbol with its grid and block, checked
 * against CUDA's limits here; "symbol" is then optional.
 *
 * A kernel may list its run-time checks ("checks": strings naming the node and
 * tensor each is about); kiln_model_run quotes check j when the kernel reports
 * that it failed (kiln_ctx.fail).
 *
 * Version 3: a kernel of an If branch lists its conditions ("when": arguments
 * holding a bool, each with the value "is" it must hold) and runs only when all
 * hold; a trap ("fail": a message) is never called — reaching it with its
 * conditions holding fails the run with the message. Conditions are stored as
 * descriptors after the kernel's own, so krt_plan_bind binds them too.
 *
 * After the model's memory block is allocated, krt_plan_bind turns the
 * descriptors into the flat array of buffer pointers run passes to kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "krt.h"

#define MAX_SIZE ((int64_t)9007199254740992LL) /* 2^53 */

static int is_identifier(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > KRT_MAX_SYMBOL) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return 0;
  }
  return 1;
}

static kiln_status parse_range(const cJSON *item, const char *where, const char *what, int64_t limit, krt_arg *arg,
                               krt_error *err) {
  if (krt_json_int(item, "offset", where, 0, MAX_SIZE, &arg->offset, err) != KILN_OK) return err->status;
  if (krt_json_int(item, "bytes", where, 0, MAX_SIZE, &arg->bytes, err) != KILN_OK) return err->status;
  if (arg->offset % KRT_ALIGN != 0)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: %s offset %lld is not %d-byte aligned", where, what,
                    (long long)arg->offset, KRT_ALIGN);
  int64_t end;
  if (!krt_add_i64(arg->offset, arg->bytes, &end) || end > limit)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: %s range [%lld, %lld + %lld) is past the end of the %s (%lld bytes)",
                    where, what, (long long)arg->offset, (long long)arg->offset, (long long)arg->bytes, what,
                    (long long)limit);
  return KILN_OK;
}

static kiln_status parse_arg(const kiln_model *m, const cJSON *item, const char *where, krt_arg *arg,
                             krt_error *err) {
  if (krt_json_object(item, where, err) != KILN_OK) return err->status;
  const char *kind;
  if (krt_json_string(item, "kind", where, &kind, err) != KILN_OK) return err->status;
  if (strcmp(kind, "input") == 0 || strcmp(kind, "output") == 0) {
    int is_input = kind[0] == 'i';
    int32_t count = is_input ? m->input_count : m->output_count;
    arg->kind = is_input ? KRT_ARG_INPUT : KRT_ARG_OUTPUT;
    if (count == 0) return krt_fail(err, KILN_ERR_FORMAT, "%s: refers to an %s but the model has none", where, kind);
    return krt_json_int(item, "index", where, 0, count - 1, &arg->index, err);
  }
  if (strcmp(kind, "arena") == 0) {
    arg->kind = KRT_ARG_ARENA;
    return parse_range(item, where, "arena", m->arena_bytes, arg, err);
  }
  if (strcmp(kind, "param") == 0) {
    arg->kind = KRT_ARG_PARAM;
    return parse_range(item, where, "params.bin", (int64_t)m->params_size, arg, err);
  }
  return krt_fail(err, KILN_ERR_FORMAT, "%s: unknown argument kind '%.32s' (expected input, output, arena or param)",
                  where, kind);
}

/* A GPU kernel's "launches": 1..KRT_MAX_LAUNCHES of {"symbol", "grid": [x, y, z],
 * "block": [x, y, z]}, within CUDA's limits (grid x < 2^31, y and z ≤ 65535; block x
 * and y ≤ 1024, z ≤ 64, at most 1024 threads in all). */
static kiln_status parse_launches(const cJSON *kernel, const char *where, krt_kernel *kn, krt_error *err) {
  const cJSON *list;
  int32_t count;
  if (!cJSON_GetObjectItemCaseSensitive(kernel, "launches"))
    return krt_fail(err, KILN_ERR_FORMAT, "%s: a GPU kernel needs 'launches' (1 to %d of {symbol, grid, block})",
                    where, KRT_MAX_LAUNCHES);
  if (krt_json_array(kernel, "launches", where, &list, &count, err) != KILN_OK) return err->status;
  if (count < 1 || count > KRT_MAX_LAUNCHES)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: %d launches (a GPU kernel has 1 to %d)", where, count,
                    KRT_MAX_LAUNCHES);
  kn->launches = calloc((size_t)count, sizeof *kn->launches);
  if (!kn->launches) return krt_fail(err, KILN_ERR_NOMEM, "out of memory for the launches of %s", where);
  kn->launch_count = count;
  static const int64_t grid_max[3] = {2147483647, 65535, 65535}, block_max[3] = {1024, 1024, 64};
  static const char axis[3] = {'x', 'y', 'z'};
  int32_t l = 0;
  for (const cJSON *item = list->child; item; item = item->next, l++) {
    krt_launch *ln = &kn->launches[l];
    char lw[128];
    snprintf(lw, sizeof lw, "%s.launches[%d]", where, l);
    if (krt_json_object(item, lw, err) != KILN_OK) return err->status;
    const char *sym;
    if (krt_json_string(item, "symbol", lw, &sym, err) != KILN_OK) return err->status;
    if (!is_identifier(sym))
      return krt_fail(err, KILN_ERR_FORMAT, "%s: symbol '%.64s' is not a C identifier of at most %d characters", lw,
                      sym, KRT_MAX_SYMBOL);
    if (krt_strdup(sym, &ln->symbol, err) != KILN_OK) return err->status;
    int64_t threads = 1;
    for (int g = 0; g < 2; g++) {
      const char *key = g == 0 ? "grid" : "block";
      const cJSON *dims;
      int32_t n;
      if (krt_json_array(item, key, lw, &dims, &n, err) != KILN_OK) return err->status;
      if (n != 3) return krt_fail(err, KILN_ERR_FORMAT, "%s: %s must be [x, y, z], got %d numbers", lw, key, n);
      int d = 0;
      for (const cJSON *v = dims->child; v; v = v->next, d++) {
        char field[160];
        int64_t max = g == 0 ? grid_max[d] : block_max[d], value;
        snprintf(field, sizeof field, "%s: %s %c", lw, key, axis[d]);
        if (krt_json_int_item(v, field, 1, max, &value, err) != KILN_OK) return err->status;
        if (g == 0) ln->grid[d] = (uint32_t)value;
        else ln->block[d] = (uint32_t)value, threads *= value;
      }
    }
    if (threads > 1024)
      return krt_fail(err, KILN_ERR_FORMAT, "%s: block [%u, %u, %u] is %lld threads, over CUDA's 1024", lw,
                      ln->block[0], ln->block[1], ln->block[2], (long long)threads);
  }
  return KILN_OK;
}

/* The optional "checks": at most KRT_MAX_CHECKS strings of 1..KRT_MAX_CHECK_TEXT bytes. */
static kiln_status parse_checks(const cJSON *kernel, const char *where, krt_kernel *kn, krt_error *err) {
  if (!cJSON_GetObjectItemCaseSensitive(kernel, "checks")) return KILN_OK;
  const cJSON *list;
  int32_t count;
  if (krt_json_array(kernel, "checks", where, &list, &count, err) != KILN_OK) return err->status;
  if (count > KRT_MAX_CHECKS)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: %d checks, over the limit of %d", where, count, KRT_MAX_CHECKS);
  kn->checks = calloc(count > 0 ? (size_t)count : 1, sizeof *kn->checks);
  if (!kn->checks) return krt_fail(err, KILN_ERR_NOMEM, "out of memory for the checks of %s", where);
  int32_t j = 0;
  for (const cJSON *c = list->child; c; c = c->next, j++) {
    if (!cJSON_IsString(c) || !c->valuestring || !c->valuestring[0] || strlen(c->valuestring) > KRT_MAX_CHECK_TEXT)
      return krt_fail(err, KILN_ERR_FORMAT, "%s: checks[%d] must be a string of 1 to %d characters", where, j,
                      KRT_MAX_CHECK_TEXT);
    if (krt_strdup(c->valuestring, &kn->checks[j], err) != KILN_OK) return err->status;
    kn->check_count = j + 1;
  }
  return KILN_OK;
}

/* The optional "when" (the bools at arg_descs[*next..], after the kernel's
 * args) and "fail" (a message; the kernel is then never called). A condition is
 * an argument of one byte or more (its first byte is read) plus "is": a bool. */
static kiln_status parse_when(kiln_model *m, const cJSON *kernel, const char *where, krt_kernel *kn, int64_t *next,
                              krt_error *err) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(kernel, "fail");
  if (f) {
    if (m->gpu) return krt_fail(err, KILN_ERR_FORMAT, "%s: 'fail' is not supported in a GPU bundle", where);
    if (!cJSON_IsString(f) || !f->valuestring || !f->valuestring[0] || strlen(f->valuestring) > KRT_MAX_CHECK_TEXT)
      return krt_fail(err, KILN_ERR_FORMAT, "%s: 'fail' must be a string of 1 to %d characters", where,
                      KRT_MAX_CHECK_TEXT);
    if (krt_strdup(f->valuestring, &kn->fail, err) != KILN_OK) return err->status;
  }
  if (!cJSON_GetObjectItemCaseSensitive(kernel, "when")) return KILN_OK;
  if (m->gpu) return krt_fail(err, KILN_ERR_FORMAT, "%s: conditional kernels ('when') are not supported in a GPU bundle", where);
  const cJSON *list;
  int32_t count;
  if (krt_json_array(kernel, "when", where, &list, &count, err) != KILN_OK) return err->status;
  kn->when_is = calloc((size_t)count + 1, 1);
  if (!kn->when_is) return krt_fail(err, KILN_ERR_NOMEM, "out of memory for the conditions of %s", where);
  int32_t j = 0;
  for (const cJSON *c = list->child; c; c = c->next, j++) {
    char cw[96];
    snprintf(cw, sizeof cw, "%s.when[%d]", where, j);
    krt_arg *d = &m->arg_descs[(*next)++];
    if (parse_arg(m, c, cw, d, err) != KILN_OK) return err->status;
    int64_t bytes = d->kind == KRT_ARG_INPUT ? m->inputs[d->index].bytes
                    : d->kind == KRT_ARG_OUTPUT ? m->outputs[d->index].bytes : d->bytes;
    if (bytes < 1) return krt_fail(err, KILN_ERR_FORMAT, "%s: a condition needs at least one byte", cw);
    const cJSON *is = cJSON_GetObjectItemCaseSensitive(c, "is");
    if (!cJSON_IsBool(is)) return krt_fail(err, KILN_ERR_FORMAT, "%s: 'is' must be true or false", cw);
    kn->when_is[j] = cJSON_IsTrue(is) ? 1 : 0;
  }
  kn->when_count = count;
  return KILN_OK;
}

static kiln_status load(kiln_model *m, const cJSON *root, krt_error *err) {
  if (krt_json_object(root, "plan.json", err) != KILN_OK) return err->status;
  const cJSON *kernels;
  int32_t n;
  if (krt_json_array(root, "kernels", "plan.json", &kernels, &n, err) != KILN_OK) return err->status;
  if (n == 0) return krt_fail(err, KILN_ERR_FORMAT, "plan.json: no kernels");
  if (n > KRT_MAX_KERNELS)
    return krt_fail(err, KILN_ERR_FORMAT, "plan.json: %d kernels, over the limit of %d", n, KRT_MAX_KERNELS);

  /* Count the arguments first so that everything is allocated once. */
  int64_t total = 0;
  int32_t k = 0;
  for (const cJSON *kernel = kernels->child; kernel; kernel = kernel->next, k++) {
    char where[64];
    snprintf(where, sizeof where, "plan.json: kernels[%d]", k);
    if (krt_json_object(kernel, where, err) != KILN_OK) return err->status;
    const cJSON *args;
    int32_t count;
    if (krt_json_array(kernel, "args", where, &args, &count, err) != KILN_OK) return err->status;
    if (count > KRT_MAX_KERNEL_ARGS)
      return krt_fail(err, KILN_ERR_FORMAT, "%s: %d arguments, over the limit of %d", where, count,
                      KRT_MAX_KERNEL_ARGS);
    total += count;
    if (cJSON_GetObjectItemCaseSensitive(kernel, "when")) {
      const cJSON *when;
      if (krt_json_array(kernel, "when", where, &when, &count, err) != KILN_OK) return err->status;
      if (count < 1 || count > KRT_MAX_WHEN)
        return krt_fail(err, KILN_ERR_FORMAT, "%s: 'when' lists %d conditions (1 to %d)", where, count, KRT_MAX_WHEN);
      total += count;
    }
  }
  for (int32_t o = 0; o < m->output_count; o++) total += m->outputs[o].has_extent; /* after the kernels' */
  m->kernels = calloc((size_t)n, sizeof *m->kernels);
  m->profile = calloc((size_t)n, sizeof *m->profile);
  m->calls = calloc((size_t)n, sizeof *m->calls);
  m->arg_descs = calloc(total > 0 ? (size_t)total : 1, sizeof *m->arg_descs);
  m->args = calloc(total > 0 ? (size_t)total : 1, sizeof *m->args);
  if (!m->kernels || !m->profile || !m->calls || !m->arg_descs || !m->args)
    return krt_fail(err, KILN_ERR_NOMEM, "out of memory for a plan of %d kernels", n);
  m->kernel_count = n;
  m->arg_count = total;

  int64_t next = 0;
  k = 0;
  for (const cJSON *kernel = kernels->child; kernel; kernel = kernel->next, k++) {
    krt_kernel *kn = &m->kernels[k];
    char where[64];
    snprintf(where, sizeof where, "plan.json: kernels[%d]", k);
    const char *s;
    if (krt_json_string(kernel, "name", where, &s, err) != KILN_OK) return err->status;
    if (!*s) return krt_fail(err, KILN_ERR_FORMAT, "%s: empty name", where);
    if (krt_strdup(s, &kn->name, err) != KILN_OK) return err->status;
    if (m->gpu && parse_launches(kernel, where, kn, err) != KILN_OK) return err->status;
    if (m->gpu && !cJSON_GetObjectItemCaseSensitive(kernel, "symbol")) {
      s = kn->launches[0].symbol; /* a GPU kernel's symbol is optional: a name for messages */
    } else {
      if (krt_json_string(kernel, "symbol", where, &s, err) != KILN_OK) return err->status;
      if (!is_identifier(s))
        return krt_fail(err, KILN_ERR_FORMAT, "%s: symbol '%.64s' is not a C identifier of at most %d characters",
                        where, s, KRT_MAX_SYMBOL);
    }
    if (krt_strdup(s, &kn->symbol, err) != KILN_OK) return err->status;
    if (krt_json_int(kernel, "flops", where, 0, MAX_SIZE, &kn->flops, err) != KILN_OK) return err->status;
    if (parse_checks(kernel, where, kn, err) != KILN_OK) return err->status;
    const cJSON *args;
    int32_t count;
    if (krt_json_array(kernel, "args", where, &args, &count, err) != KILN_OK) return err->status;
    kn->first_arg = next;
    kn->arg_count = count;
    int32_t a = 0;
    int64_t bytes = 0; /* every term is at most 2^53 and there are at most KRT_MAX_KERNEL_ARGS */
    for (const cJSON *arg = args->child; arg; arg = arg->next, a++) {
      char arg_where[96];
      snprintf(arg_where, sizeof arg_where, "%s.args[%d]", where, a);
      krt_arg *d = &m->arg_descs[next++];
      if (parse_arg(m, arg, arg_where, d, err) != KILN_OK) return err->status;
      bytes += d->kind == KRT_ARG_INPUT ? m->inputs[d->index].bytes
               : d->kind == KRT_ARG_OUTPUT ? m->outputs[d->index].bytes : d->bytes;
    }
    m->profile[k].name = kn->name;
    m->profile[k].flops = kn->flops;
    m->profile[k].bytes = bytes;
    if (parse_when(m, kernel, where, kn, &next, err) != KILN_OK) return err->status;
  }

  for (int32_t o = 0; o < m->output_count; o++) { /* outputs' data-dependent extents (manifest.c) */
    krt_tensor *t = &m->outputs[o];
    if (!t->has_extent) continue;
    char where[96];
    snprintf(where, sizeof where, "manifest.json: outputs[%d].extent.arg", o);
    if (m->gpu) return krt_fail(err, KILN_ERR_FORMAT, "%s: data-dependent extents are not supported in a GPU bundle", where);
    krt_arg *d = &m->arg_descs[next];
    if (parse_arg(m, t->extent_json, where, d, err) != KILN_OK) return err->status;
    int64_t bytes = d->kind == KRT_ARG_INPUT ? m->inputs[d->index].bytes
                    : d->kind == KRT_ARG_OUTPUT ? m->outputs[d->index].bytes : d->bytes;
    if (bytes < 8 || (d->kind == KRT_ARG_OUTPUT && d->index == o))
      return krt_fail(err, KILN_ERR_FORMAT, "%s: must be an int64 of its own (8 bytes)", where);
    t->extent_arg = (int32_t)next++;
    cJSON_Delete(t->extent_json);
    t->extent_json = NULL;
  }
  unsigned char *used = calloc((size_t)m->output_count, 1);
  if (!used) return krt_fail(err, KILN_ERR_NOMEM, "out of memory checking the plan's outputs");
  for (int64_t i = 0; i < next; i++)
    if (m->arg_descs[i].kind == KRT_ARG_OUTPUT) used[m->arg_descs[i].index] = 1;
  for (int32_t o = 0; o < m->output_count; o++)
    if (!used[o]) {
      free(used);
      return krt_fail(err, KILN_ERR_FORMAT, "plan.json: output %d ('%.64s') is not passed to any kernel", o,
                      m->outputs[o].name);
    }
  free(used);
  return KILN_OK;
}

kiln_status krt_plan_load(kiln_model *model, const krt_entry *plan, krt_error *err) {
  cJSON *root;
  if (krt_json_parse(plan, &root, err) != KILN_OK) return err->status;
  load(model, root, err);
  cJSON_Delete(root);
  return err->status;
}

void krt_plan_bind(kiln_model *m) {
  if (m->gpu) return; /* device pointers: cuda.c binds them */
  for (int64_t i = 0; i < m->arg_count; i++) {
    const krt_arg *a = &m->arg_descs[i];
    switch (a->kind) {
    case KRT_ARG_INPUT: m->args[i] = m->inputs[a->index].data; break;
    case KRT_ARG_OUTPUT: m->args[i] = m->outputs[a->index].data; break;
    case KRT_ARG_ARENA: m->args[i] = m->block + a->offset; break;
    case KRT_ARG_PARAM: m->args[i] = m->params + a->offset; break;
    }
  }
}
