/* tuning.c — the templates' knobs as data, and the check on what a tuner sets.
 * Each template's cfg struct is a vector of named int32_t knobs; the tables below
 * say which fields a caller (tuner/, `kiln compile --records`) may set and to what
 * range, so a record file can never hand a template a zero split or a register
 * tile of a thousand rows: a value out of range puts every default back (a value
 * in range the template cannot use is a schedule error, never a crash). Knobs not
 * listed (parallel, oc_vecs) stay what the analytic default says. A knob added
 * later must mean "as before" at 0 (oc_tile, oh_tile, ic_unroll, px_flat): a record
 * written before it names no value for it and is applied with 0 there. */
#include <stddef.h>
#include <string.h>
#include "templates.h"

static const lower_knob conv_knobs[] = {
    {"ow_tile", offsetof(lower_conv_cfg, ow_tile), 1, 64},
    {"unroll_kw", offsetof(lower_conv_cfg, unroll_kw), 0, 4096},
    {"pad_tile", offsetof(lower_conv_cfg, pad_tile), 0, 2},
    {"image_tile", offsetof(lower_conv_cfg, image_tile), 0, 1},
    {"pixel_outer", offsetof(lower_conv_cfg, pixel_outer), 0, 1},
    {"prefetch", offsetof(lower_conv_cfg, prefetch), 0, 1},
    {"vec_ow", offsetof(lower_conv_cfg, vec_ow), 0, 1},
    {"vec", offsetof(lower_conv_cfg, vec), 1, 64},
    {"oc_tile", offsetof(lower_conv_cfg, oc_tile), 0, 4096},
    {"oc_blocks", offsetof(lower_conv_cfg, oc_blocks), 1, 8},
    {"oh_tile", offsetof(lower_conv_cfg, oh_tile), 0, 64},
    {"ic_unroll", offsetof(lower_conv_cfg, ic_unroll), 0, 64},
    {"px_flat", offsetof(lower_conv_cfg, px_flat), 0, 1},
    {"fuse_kw", offsetof(lower_conv_cfg, fuse_kw), 0, 1},
};

static const lower_knob matmul_knobs[] = {
    {"mr", offsetof(lower_matmul_cfg, mr), 1, 32},
    {"nr_vecs", offsetof(lower_matmul_cfg, nr_vecs), 1, 16},
    {"vec", offsetof(lower_matmul_cfg, vec), 1, 64},
    {"k_unroll", offsetof(lower_matmul_cfg, k_unroll), 1, 64},
    {"panel_outer", offsetof(lower_matmul_cfg, panel_outer), 0, 1},
    {"prefetch", offsetof(lower_matmul_cfg, prefetch), 0, 1},
    {"pack_b", offsetof(lower_matmul_cfg, pack_b), 0, 1},
    {"row_groups", offsetof(lower_matmul_cfg, row_groups), 1, 4096},
};

static const lower_knob gpu_conv_knobs[] = {
    {"boc", offsetof(lower_gpu_conv_cfg, boc), 1, 1024}, {"toc", offsetof(lower_gpu_conv_cfg, toc), 1, 16},
    {"boh", offsetof(lower_gpu_conv_cfg, boh), 1, 64},   {"bow", offsetof(lower_gpu_conv_cfg, bow), 1, 256},
    {"tow", offsetof(lower_gpu_conv_cfg, tow), 1, 16},   {"bic", offsetof(lower_gpu_conv_cfg, bic), 1, 64},
};

static const lower_knob gpu_matmul_knobs[] = {
    {"bm", offsetof(lower_gpu_matmul_cfg, bm), 1, 256}, {"bn", offsetof(lower_gpu_matmul_cfg, bn), 1, 256},
    {"bk", offsetof(lower_gpu_matmul_cfg, bk), 1, 64},  {"tm", offsetof(lower_gpu_matmul_cfg, tm), 1, 16},
    {"tn", offsetof(lower_gpu_matmul_cfg, tn), 1, 16},
};

static const lower_knob gpu_matmul_tc_knobs[] = {
    {"bm", offsetof(lower_gpu_matmul_tc_cfg, bm), 16, 256}, {"bn", offsetof(lower_gpu_matmul_tc_cfg, bn), 16, 256},
    {"bk", offsetof(lower_gpu_matmul_tc_cfg, bk), 8, 64},   {"wm", offsetof(lower_gpu_matmul_tc_cfg, wm), 16, 128},
    {"wn", offsetof(lower_gpu_matmul_tc_cfg, wn), 16, 128},
};

static const lower_knob gpu_conv_tc_knobs[] = {
    {"bm", offsetof(lower_gpu_conv_tc_cfg, bm), 16, 256}, {"boh", offsetof(lower_gpu_conv_tc_cfg, boh), 1, 64},
    {"bk", offsetof(lower_gpu_conv_tc_cfg, bk), 8, 64},   {"wm", offsetof(lower_gpu_conv_tc_cfg, wm), 16, 128},
    {"wn", offsetof(lower_gpu_conv_tc_cfg, wn), 16, 128},
};

#define TEMPLATE(name, knobs) {name, knobs, (int32_t)(sizeof knobs / sizeof knobs[0])}
static const struct {
  const char *name;
  const lower_knob *knobs;
  int32_t n;
} templates[] = {
    TEMPLATE("conv", conv_knobs),         TEMPLATE("matmul", matmul_knobs),
    TEMPLATE("gpu_conv", gpu_conv_knobs), TEMPLATE("gpu_matmul", gpu_matmul_knobs),
    TEMPLATE("gpu_conv_tc", gpu_conv_tc_knobs), TEMPLATE("gpu_matmul_tc", gpu_matmul_tc_knobs),
};
#undef TEMPLATE

const lower_knob *lower_template_knobs(const char *tmpl, int32_t *n) {
  for (size_t i = 0; tmpl && i < sizeof templates / sizeof templates[0]; i++)
    if (!strcmp(tmpl, templates[i].name)) {
      *n = templates[i].n;
      return templates[i].knobs;
    }
  *n = 0;
  return NULL;
}

void lower_tune_knobs(const lower_target *t, const char *tmpl, void *cfg, size_t cfg_size) {
  if (!t || !t->tuning || !t->tuning->knobs) return;
  int32_t n;
  const lower_knob *k = lower_template_knobs(tmpl, &n);
  unsigned char saved[256];
  if (!k || cfg_size > sizeof saved) return;
  memcpy(saved, cfg, cfg_size);
  t->tuning->knobs(t->tuning->self, tmpl, k, n, cfg);
  for (int i = 0; i < n; i++) {
    int32_t v;
    memcpy(&v, (const char *)cfg + k[i].offset, sizeof v);
    if (v < k[i].lo || v > k[i].hi) {
      memcpy(cfg, saved, cfg_size);
      return;
    }
  }
  /* whatever is not a knob stays the default's */
  unsigned char knob_byte[256] = {0};
  for (int i = 0; i < n; i++) memset(knob_byte + k[i].offset, 1, sizeof(int32_t));
  for (size_t b = 0; b < cfg_size; b++)
    if (!knob_byte[b]) ((unsigned char *)cfg)[b] = saved[b];
}
