/* knobs.c — `kiln compile|check --knobs TEMPLATE:NAME=V[,NAME=V...]`: the named knobs of
 * every group that template schedules set to the values given, the others left at
 * the analytic default. For experiments and sweeps of one template's tiles over a
 * model's layers (bench/cuda/sweep_conv.py measures every GPU conv tile that way),
 * where `kiln tune` cannot measure (a GPU target: no measurer for it yet). The
 * template and knob names and the ranges are schedule/tuning.c's tables; a value
 * out of a knob's range is refused here, one a template cannot use for some group
 * is that compile's schedule error. It goes through the same hook as --records
 * (lower_target.tuning), so the two do not combine. */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "templates.h"

#define MAX_SET 32

struct cli_knobs {
  struct {
    char tmpl[32], name[32];
    int32_t value;
  } set[MAX_SET];
  int n;
  lower_tuning hook;
};

static void apply(void *self, const char *tmpl, const lower_knob *knobs, int32_t n_knobs, void *cfg) {
  const cli_knobs *k = self;
  for (int i = 0; i < k->n; i++) {
    if (strcmp(k->set[i].tmpl, tmpl)) continue;
    for (int j = 0; j < n_knobs; j++)
      if (!strcmp(knobs[j].name, k->set[i].name)) memcpy((char *)cfg + knobs[j].offset, &k->set[i].value, sizeof(int32_t));
  }
}

cli_knobs *cli_knobs_parse(const char *const *specs, int n_specs, gir_err *err) {
  cli_knobs *k = calloc(1, sizeof *k);
  if (!k) {
    gir_errf(err, "out of memory");
    return NULL;
  }
  for (int s = 0; s < n_specs; s++) {
    const char *colon = strchr(specs[s], ':');
    size_t tl = colon ? (size_t)(colon - specs[s]) : 0;
    int32_t nk = 0;
    char tmpl[32] = "";
    if (tl && tl < sizeof tmpl) memcpy(tmpl, specs[s], tl);
    const lower_knob *knobs = tmpl[0] ? lower_template_knobs(tmpl, &nk) : NULL;
    if (!knobs) {
      gir_errf(err, "--knobs '%s': expected TEMPLATE:NAME=VALUE[,NAME=VALUE...] with TEMPLATE one of conv, matmul, "
                    "gpu_conv, gpu_matmul, gpu_conv_tc, gpu_matmul_tc", specs[s]);
      goto fail;
    }
    for (const char *p = colon + 1; *p;) {
      size_t len = strcspn(p, ",");
      const char *eq = memchr(p, '=', len);
      char name[32] = "", *end = NULL;
      if (eq && (size_t)(eq - p) < sizeof name) memcpy(name, p, (size_t)(eq - p));
      long v = eq ? strtol(eq + 1, &end, 10) : 0;
      const lower_knob *kn = NULL;
      for (int j = 0; j < nk; j++)
        if (!strcmp(knobs[j].name, name)) kn = &knobs[j];
      if (!kn || end != p + len || end == eq + 1) {
        char names[256] = "";
        for (int j = 0; j < nk; j++)
          snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", j ? ", " : "", knobs[j].name);
        gir_errf(err, "--knobs '%s': '%.*s' is not NAME=VALUE with NAME a knob of %s (%s)", specs[s], (int)len, p, tmpl,
                 names);
        goto fail;
      }
      if (v < kn->lo || v > kn->hi) {
        gir_errf(err, "--knobs '%s': %s=%ld is outside %d..%d", specs[s], name, v, kn->lo, kn->hi);
        goto fail;
      }
      if (k->n == MAX_SET) {
        gir_errf(err, "--knobs: more than %d knobs", MAX_SET);
        goto fail;
      }
      snprintf(k->set[k->n].tmpl, sizeof k->set[k->n].tmpl, "%s", tmpl);
      snprintf(k->set[k->n].name, sizeof k->set[k->n].name, "%s", name);
      k->set[k->n++].value = (int32_t)v;
      p += len;
      if (*p == ',') p++;
    }
  }
  k->hook = (lower_tuning){.self = k, .knobs = apply};
  return k;
fail:
  free(k);
  return NULL;
}

const struct lower_tuning *cli_knobs_hook(cli_knobs *k) { return &k->hook; }
