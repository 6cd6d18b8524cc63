/* tun_model.c — cost models through XGBoost's C API (libxgboost-dev), as
 * AutoTVM's XGBoostCostModel: gradient-boosted trees over the loop-IR features,
 * objective rank:pairwise, so the model learns which of two schedules of a
 * workload is faster rather than how many seconds each takes (a ranking
 * transfers between workloads of different sizes; absolute times do not).
 * Labels are throughputs normalized within each group (one group per workload).
 *
 * Transfer (AutoTVM §5): the global model is trained on the records of other
 * workloads; the local model of a task is trained on that task's measurements with
 * the global model's scores as base margins, so it learns what the global model
 * gets wrong here, and predictions add both. One thread (nthread=1): the search
 * owns one core, the measurement the other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>
#include "tun_internal.h"

struct tun_model {
  BoosterHandle booster;
};

static int xgb_fail(const char *what, gir_err *err) {
  return gir_errf(err, "xgboost: %s: %s", what, XGBGetLastError());
}

static int make_matrix(const float *x, int64_t n, const float *base, DMatrixHandle *out, gir_err *err) {
  if (XGDMatrixCreateFromMat(x, (bst_ulong)n, TUN_N_FEATURES, -1e30f, out) != 0) return xgb_fail("matrix", err);
  if (base && XGDMatrixSetFloatInfo(*out, "base_margin", base, (bst_ulong)n) != 0) {
    XGDMatrixFree(*out);
    return xgb_fail("base margins", err);
  }
  return 0;
}

tun_model *tun_model_train(const float *x, const float *y, int64_t n, const uint32_t *group_sizes, int32_t n_groups,
                           const float *base, int rounds, gir_err *err) {
  if (n < 2) {
    gir_errf(err, "a cost model needs two measurements or more");
    return NULL;
  }
  DMatrixHandle d = NULL;
  if (make_matrix(x, n, base, &d, err) < 0) return NULL;
  tun_model *m = calloc(1, sizeof *m);
  if (!m) {
    XGDMatrixFree(d);
    gir_errf(err, "out of memory");
    return NULL;
  }
  static const char *const params[][2] = {
      {"objective", "rank:pairwise"}, {"nthread", "1"}, {"max_depth", "3"}, {"eta", "0.3"},
      {"gamma", "0.0001"}, {"min_child_weight", "1"}, {"subsample", "1.0"}, {"lambda", "1"},
      {"alpha", "0"}, {"verbosity", "0"}, {"seed", "1"}, {"tree_method", "exact"},
  };
  int ok = XGDMatrixSetFloatInfo(d, "label", y, (bst_ulong)n) == 0 &&
           XGDMatrixSetUIntInfo(d, "group", group_sizes, (bst_ulong)n_groups) == 0 &&
           XGBoosterCreate(&d, 1, &m->booster) == 0;
  for (size_t i = 0; ok && i < sizeof params / sizeof params[0]; i++)
    ok = XGBoosterSetParam(m->booster, params[i][0], params[i][1]) == 0;
  for (int it = 0; ok && it < rounds; it++) ok = XGBoosterUpdateOneIter(m->booster, it, d) == 0;
  XGDMatrixFree(d);
  if (!ok) {
    xgb_fail("training", err);
    tun_model_free(m);
    return NULL;
  }
  return m;
}

int tun_model_predict(const tun_model *m, const float *x, int64_t n, const float *base, float *out, gir_err *err) {
  if (n <= 0) return 0;
  DMatrixHandle d = NULL;
  if (make_matrix(x, n, base, &d, err) < 0) return -1;
  bst_ulong len = 0;
  const float *r = NULL;
  /* option 0: the margin plus base; training 0: no dropout etc. */
  int rc = XGBoosterPredict(m->booster, d, 0, 0, 0, &len, &r);
  if (rc != 0 || len != (bst_ulong)n) {
    XGDMatrixFree(d);
    return xgb_fail("prediction", err);
  }
  memcpy(out, r, sizeof *out * (size_t)n);
  XGDMatrixFree(d);
  return 0;
}

void tun_model_free(tun_model *m) {
  if (!m) return;
  if (m->booster) XGBoosterFree(m->booster);
  free(m);
}
