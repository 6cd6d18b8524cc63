/* compute_winograd.c — compute definitions of the Winograd transform ops
 * (graphir/winograd.h, layout/winograd.c). Each output point of a tile is its own
 * expression, chosen by a select on the point's indices; the schedule
 * (schedule/sched_winograd.c) unrolls those loops, so the selects fold away. The
 * two-sided transforms are written as two one-sided ones — (Bᵀ d)[ξ][j] then
 * Σ_j Bᵀ[ν][j] (Bᵀ d)[ξ][j]; (v A)[ξ][j] then Σ_ξ Aᵀ[i][ξ] (v A)[ξ][j] — with the
 * inner sums the same expressions in every point that uses them, so the unrolled
 * tile computes each once (2a products per point instead of a²); zero coefficients
 * drop out, ±1 are adds and subtracts.
 *
 * winograd_in:  v[ξ, ν, t, c] = Σ_ij Bᵀ[ξ][i] Bᵀ[ν][j] x[n, c/b, r·m + i − pt, q·m + j − pl, c%b]
 * winograd_out: y[n, o/ob, h, w, o%ob] = b[o] + Σ_ξν Aᵀ[h%m][ξ] Aᵀ[w%m][ν] v[ξ, ν, t(n, h/m, w/m), o]
 * with tile t = (n·th + r)·tw + q. Input taps outside the image read zero (the
 * conv's padding); their index is clamped, so the load itself is always in
 * bounds and the select stays eager (a vector blend). */
#include "compute.h"
#include "winograd.h"

/* Σ coef[k] · term[k] over the nonzero coefficients (0 if there are none). */
static te_expr *lin(te_ctx *c, const double *coef, te_expr *const *term, int n) {
  te_expr *s = NULL;
  for (int k = 0; k < n; k++) {
    if (coef[k] == 0) continue;
    te_expr *v = term[k];
    if (coef[k] == -1 && s) {
      s = te_sub(c, s, v);
      continue;
    }
    if (coef[k] != 1) v = te_mul(c, te_const(c, GIR_F32, coef[k]), v);
    s = s ? te_add(c, s, v) : v;
  }
  return s ? s : te_const(c, GIR_F32, 0);
}

/* select(i == 0, e[0], select(i == 1, e[1], …)) */
static te_expr *pick(te_ctx *c, te_expr *i, te_expr *const *e, int n) {
  te_expr *r = e[n - 1];
  for (int k = n - 2; k >= 0; k--) r = te_select(c, te_bin(c, TE_EQ, i, te_int(c, k)), e[k], r);
  return r;
}

int lower_compute_winograd_in(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *x = in[0];
  gir_winograd w;
  if (gir_winograd_get((int32_t)gir_attr_int(n, "m", 0), &w) < 0) return gir_errf(c->err, "winograd_in: bad m");
  int32_t np;
  const int64_t *pd = gir_attr_ints(n, "pads", &np);
  int64_t m = w.m, a = w.a, H = x->shape[2], W = x->shape[3], b = x->shape[4];
  int64_t th = (gir_attr_int(n, "oh", 0) + m - 1) / m, tw = (gir_attr_int(n, "ow", 0) + m - 1) / m;
  te_var *ax[4];
  lower_out_axes(c, n, 0, ax); /* ξ, ν, t, c */
  te_expr *t = te_v(c, ax[2]), *ch = te_v(c, ax[3]);
  te_expr *img = te_div(c, t, te_int(c, th * tw));
  te_expr *r = te_div(c, te_bin(c, TE_MOD, t, te_int(c, th * tw)), te_int(c, tw));
  te_expr *q = te_bin(c, TE_MOD, t, te_int(c, tw));
  te_expr *h0 = te_sub(c, te_mul(c, r, te_int(c, m)), te_int(c, pd[0]));
  te_expr *w0 = te_sub(c, te_mul(c, q, te_int(c, m)), te_int(c, pd[1]));
  te_expr *cb = te_div(c, ch, te_int(c, b)), *ci = te_bin(c, TE_MOD, ch, te_int(c, b));
  /* d[i][j]: the input tile, zero outside the image */
  te_expr *d[GIR_WINOGRAD_MAX_A][GIR_WINOGRAD_MAX_A];
  for (int i = 0; i < a; i++)
    for (int j = 0; j < a; j++) {
      te_expr *h = te_add(c, h0, te_int(c, i)), *wx = te_add(c, w0, te_int(c, j));
      te_expr *idx[5] = {img, cb, lower_clamp(c, h, 0, H - 1), lower_clamp(c, wx, 0, W - 1), ci};
      te_expr *ok = te_and(c, te_in_range(c, h, H), te_in_range(c, wx, W));
      d[i][j] = te_select(c, ok, te_load(c, x, idx), te_const(c, GIR_F32, 0));
    }
  /* (Bᵀ d)[ξ][j] = Σ_i Bᵀ[ξ][i] d[i][j], then v[ξ][ν] = Σ_j Bᵀ[ν][j] (Bᵀ d)[ξ][j]: the
   * same (Bᵀ d)[ξ][j] expression in each of the a points ν of row ξ, which the
   * unrolled tile computes once (common subexpressions), 2a products per point
   * instead of a² */
  te_expr *rows[GIR_WINOGRAD_MAX_A];
  for (int xi = 0; xi < a; xi++) {
    te_expr *bd[GIR_WINOGRAD_MAX_A], *cols[GIR_WINOGRAD_MAX_A];
    for (int j = 0; j < a; j++) {
      double coef[GIR_WINOGRAD_MAX_A];
      te_expr *terms[GIR_WINOGRAD_MAX_A];
      for (int i = 0; i < a; i++) coef[i] = w.bt[xi][i], terms[i] = d[i][j];
      bd[j] = lin(c, coef, terms, (int)a);
    }
    for (int nu = 0; nu < a; nu++) cols[nu] = lin(c, w.bt[nu], bd, (int)a);
    rows[xi] = pick(c, te_v(c, ax[1]), cols, (int)a);
  }
  out[0] = lower_stage(c, n, 0, ax, pick(c, te_v(c, ax[0]), rows, (int)a));
  return 0;
}

int lower_compute_winograd_out(te_ctx *c, const gir_node *n, te_tensor *const *in, te_tensor **out) {
  te_tensor *v = in[0], *bias = n->n_in > 1 ? in[1] : NULL;
  gir_winograd w;
  if (gir_winograd_get((int32_t)gir_attr_int(n, "m", 0), &w) < 0) return gir_errf(c->err, "winograd_out: bad m");
  int64_t m = w.m, a = w.a, ob = gir_attr_int(n, "ob", 0);
  int64_t th = (gir_attr_int(n, "oh", 0) + m - 1) / m, tw = (gir_attr_int(n, "ow", 0) + m - 1) / m;
  te_var *ax[5];
  lower_out_axes(c, n, 0, ax); /* n, o/ob, h, w, o%ob */
  te_expr *h = te_v(c, ax[2]), *wx = te_v(c, ax[3]);
  te_expr *t = te_add(c, te_mul(c, te_add(c, te_mul(c, te_v(c, ax[0]), te_int(c, th)), te_div(c, h, te_int(c, m))),
                                te_int(c, tw)),
                      te_div(c, wx, te_int(c, m)));
  te_expr *o = te_add(c, te_mul(c, te_v(c, ax[1]), te_int(c, ob)), te_v(c, ax[4]));
  te_expr *hm = te_bin(c, TE_MOD, h, te_int(c, m)), *wm = te_bin(c, TE_MOD, wx, te_int(c, m));
  /* (v A)[ξ][j] = Σ_ν Aᵀ[j][ν] v[ξ][ν], then y[i][j] = Σ_ξ Aᵀ[i][ξ] (v A)[ξ][j]: the same
   * (v A)[ξ][j] in each output row i, computed once per tile (common subexpressions) */
  te_expr *va[GIR_WINOGRAD_MAX_A][GIR_WINOGRAD_MAX_A];
  for (int xi = 0; xi < a; xi++) {
    te_expr *vrow[GIR_WINOGRAD_MAX_A];
    for (int nu = 0; nu < a; nu++) {
      te_expr *idx[4] = {te_int(c, xi), te_int(c, nu), t, o};
      vrow[nu] = te_load(c, v, idx);
    }
    for (int j = 0; j < m; j++) va[j][xi] = lin(c, w.at[j], vrow, (int)a);
  }
  te_expr *rows[GIR_WINOGRAD_MAX_A];
  for (int i = 0; i < m; i++) {
    te_expr *cols[GIR_WINOGRAD_MAX_A];
    for (int j = 0; j < m; j++) cols[j] = lin(c, w.at[i], va[j], (int)a);
    rows[i] = pick(c, wm, cols, (int)m);
  }
  te_expr *body = pick(c, hm, rows, (int)m);
  if (bias) {
    te_expr *bi[2] = {te_v(c, ax[1]), te_v(c, ax[4])};
    body = te_add(c, body, te_load(c, bias, bi));
  }
  out[0] = lower_stage(c, n, 0, ax, body);
  return 0;
}
