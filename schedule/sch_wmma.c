/* sch_wmma.c — tensorizing a matmul-like stage on tensor cores (schedule.h's
 * sch_tensorize_wmma): what the stage must look like (a sum of one product: its row
 * axis, column axes and reduce axes found here; a matmul, or a conv as an implicit
 * GEMM), and the loop IR that replaces its loop nest when it is lowered (sch_lower.c
 * lowers the two factors of its product at a tile's row, column and flat reduce index
 * and hands them here). This is TVM's tensorize with the WMMA intrinsics, as one
 * fixed pattern rather than a matched intrinsic declaration: a block computes one
 * bm x bn tile of C into shared memory with TIR_WMMA (tir.h; m16n16k8, TF32 inputs,
 * f32 accumulation), warps along threadIdx.y and their lanes along threadIdx.x:
 *
 *   allocate As[bm][bk + 4], Bs[bk][bn + 4] shared       (rows 32-byte aligned, skewed
 *   for ty in threadIdx.y(warps), tx in threadIdx.x(32):  against bank conflicts)
 *     fill acc[*] = 0
 *     for ko in [0, ceil(K / bk)):
 *       barrier; As, Bs = the tiles of A and B at ko (every thread a share, zero past
 *       M, N, K); barrier
 *       for kk in bk / 8 (unrolled): load_a fa[i], load_b fb[j], mma acc[i][j] += fa[i] fb[j]
 *     store acc[i][j] -> C's tile
 *
 * The loops over fragments are unrolled so that the code generator sees constant
 * fragment numbers (each lane's share of a fragment is then registers). */
#include "schedule.h"

/* 1 if e reads one of root axes lo..hi-1 of st. */
static int uses_axes(const te_expr *e, const sch_stage *st, int lo, int hi) {
  for (int i = lo; i < hi; i++)
    if (te_uses_vars(e, &st->root_axes[i]->root, 1)) return 1;
  return 0;
}

int sch_wmma_operands(const sch_stage *st, const te_expr **a, const te_expr **b, const te_expr **b_cond) {
  const te_expr *body = st->body;
  int r = st->n_root;
  if (st->t->dtype != GIR_F32 || r < 2 || st->n_reduce < 1 || body->kind != TE_REDUCE || body->u.red.comb != TE_SUM ||
      body->u.red.src->kind != TE_BINARY || body->u.red.src->u.bin.op != TE_MUL || body->u.red.src->dtype != GIR_F32)
    return -1;
  *b_cond = body->u.red.cond;
  /* the row axis: the last one after which A reads no axis and which B does not read */
  for (int ma = r - 2; ma >= 0; ma--)
    for (int swap = 0; swap < 2; swap++) {
      const te_expr *x = body->u.red.src->u.bin.a, *y = body->u.red.src->u.bin.b;
      if (swap) {
        const te_expr *t = x;
        x = y, y = t;
      }
      if (!uses_axes(x, st, ma + 1, r) && !uses_axes(y, st, ma, ma + 1) && !uses_axes(*b_cond, st, ma, ma + 1)) {
        *a = x, *b = y;
        return ma;
      }
    }
  return -1;
}

int sch_tensorize_wmma(sch_schedule *s, sch_stage *st, const sch_wmma *w) {
  const te_expr *a, *b, *bc;
  if (sch_wmma_operands(st, &a, &b, &bc) < 0)
    return gir_errf(s->err, "tensorize: %s is not an f32 sum of a product of its rows and columns", st->t->name);
  if (w->bm < 16 || w->bn < 16 || w->bk < 8 || w->bk % 8 || w->wm < 16 || w->wn < 16 || w->wm % 16 || w->wn % 16 ||
      w->bm % w->wm || w->bn % w->wn || (w->bm / w->wm) * (w->bn / w->wn) > 32)
    return gir_errf(s->err, "tensorize: block tile %dx%dx%d, warp tile %dx%d (warp tiles of 16s dividing the block's, "
                    "bk a multiple of 8, at most 32 warps)", w->bm, w->bn, w->bk, w->wm, w->wn);
  if (st->scope != TIR_SHARED || st->attach != SCH_AT)
    return gir_errf(s->err, "tensorize: %s must be shared and computed at a block loop of its consumer", st->t->name);
  sch_wmma *copy = gir_arena_alloc(s->arena, sizeof *copy);
  if (!copy) return gir_errf(s->err, "out of memory");
  *copy = *w;
  st->wmma = copy;
  return 0;
}

/* ---- lowering ---- */

static tir_expr *i64(tir_builder *b, int64_t v) { return tir_i64(b, v); }
static tir_expr *add(tir_builder *b, tir_expr *x, tir_expr *y) { return tir_bin(b, TE_ADD, x, y); }
static tir_expr *mul(tir_builder *b, tir_expr *x, int64_t y) { return tir_bin(b, TE_MUL, x, i64(b, y)); }
static tir_expr *lt(tir_builder *b, tir_expr *x, int64_t y) { return tir_bin(b, TE_LT, x, i64(b, y)); }
static tir_expr *and_(tir_builder *b, tir_expr *x, tir_expr *y) { return x ? (y ? tir_bin(b, TE_AND, x, y) : x) : y; }

/* for v in [0, n) of kind k: body (a loop of one iteration: body with v = 0). */
static tir_stmt *loop(tir_builder *b, tir_var *v, int64_t n, tir_for_kind k, tir_stmt *body) {
  if (n == 1) return tir_let(b, v, i64(b, 0), body);
  return tir_for(b, v, i64(b, 0), i64(b, n), k, body);
}

/* The block's threads copy a rows x cols tile into sh (row stride ld): thread t takes
 * elements t, t + threads, ...; element (r, c) is `val` with row var rv = r0 + r and
 * column var cv = c0 + c, 0 where `ok` (over rv, cv) is false (NULL: always true). */
static tir_stmt *copy_tile(tir_builder *b, tir_buffer *sh, int64_t rows, int64_t cols, int64_t ld, tir_expr *tid,
                           int64_t threads, tir_var *rv, tir_expr *r0, tir_var *cv, tir_expr *c0, tir_expr *val,
                           tir_expr *ok) {
  tir_var *e = tir_var_new(b, "e", GIR_I64), *ix = tir_var_new(b, "ix", GIR_I64);
  int64_t n = rows * cols, steps = (n + threads - 1) / threads;
  tir_expr *x = tir_var_ref(b, ix);
  tir_expr *r = tir_bin(b, TE_DIV, x, i64(b, cols)), *c = tir_bin(b, TE_MOD, x, i64(b, cols));
  tir_expr *v = ok ? tir_if_then_else(b, ok, val, tir_float(b, GIR_F32, 0)) : val;
  tir_stmt *st = tir_store(b, sh, add(b, mul(b, r, ld), c), v);
  st = tir_let(b, rv, r0 ? add(b, r0, r) : r, tir_let(b, cv, c0 ? add(b, c0, c) : c, st));
  if (n % threads) st = tir_if(b, lt(b, x, n), st, NULL);
  st = tir_let(b, ix, add(b, mul(b, tir_var_ref(b, e), threads), tid), st);
  return loop(b, e, steps, TIR_UNROLLED, st);
}

tir_stmt *sch_wmma_lower(tir_builder *b, const sch_wmma *w, const sch_wmma_args *a) {
  int64_t warps_n = w->bn / w->wn, warps = (w->bm / w->wm) * warps_n, threads = warps * 32;
  int64_t fm = w->wm / 16, fn = w->wn / 16, lda = w->bk + 4, ldb = w->bn + 4;
  tir_buffer *as = tir_buffer_new(b, "A_tile", GIR_F32, (int64_t)w->bm * lda, TIR_SHARED, -1);
  tir_buffer *bs = tir_buffer_new(b, "B_tile", GIR_F32, (int64_t)w->bk * ldb, TIR_SHARED, -1);
  as->align = bs->align = a->c->align = 32; /* wmma loads and stores take 32-byte aligned tiles */
  tir_buffer *acc = tir_fragment_new(b, "acc", TIR_FRAG_ACC, fm * fn);
  tir_buffer *fa = tir_fragment_new(b, "a_frag", TIR_FRAG_A, fm), *fb = tir_fragment_new(b, "b_frag", TIR_FRAG_B, fn);
  tir_var *ty = tir_var_new(b, "warp", GIR_I64), *tx = tir_var_new(b, "lane", GIR_I64);
  tir_var *ko = tir_var_new(b, "ko", GIR_I64), *kk = tir_var_new(b, "kk", GIR_I64);
  tir_var *i = tir_var_new(b, "fi", GIR_I64), *j = tir_var_new(b, "fj", GIR_I64);
  tir_expr *tid = add(b, mul(b, tir_var_ref(b, ty), 32), tir_var_ref(b, tx));
  /* the warp's tile: rows wr, columns wc of the block's */
  tir_expr *wr = mul(b, tir_bin(b, TE_DIV, tir_var_ref(b, ty), i64(b, warps_n)), w->wm);
  tir_expr *wc = mul(b, tir_bin(b, TE_MOD, tir_var_ref(b, ty), i64(b, warps_n)), w->wn);
  tir_expr *fij = add(b, mul(b, tir_var_ref(b, i), fn), tir_var_ref(b, j));

  /* the tiles of A and B at step ko, zero outside the matrices (tests only where ragged) */
  tir_expr *k0 = mul(b, tir_var_ref(b, ko), w->bk);
  tir_expr *a_ok = and_(b, a->a_ok, a->K % w->bk ? lt(b, tir_var_ref(b, a->ka), a->K) : NULL);
  tir_expr *b_ok = and_(b, a->b_ok, a->K % w->bk ? lt(b, tir_var_ref(b, a->kb), a->K) : NULL);
  tir_stmt *fetch[4] = {
      tir_barrier(b),
      copy_tile(b, as, w->bm, w->bk, lda, tid, threads, a->vm, NULL, a->ka, k0, a->a_val, a_ok),
      copy_tile(b, bs, w->bk, w->bn, ldb, tid, threads, a->kb, k0, a->vn, NULL, a->b_val, b_ok),
      tir_barrier(b)};
  /* a step of 8 along k: each warp's fragments of A and B, its accumulators updated */
  tir_expr *kc = mul(b, tir_var_ref(b, kk), 8);
  tir_stmt *la = loop(b, i, fm, TIR_UNROLLED,
                      tir_wmma_load(b, fa, tir_var_ref(b, i), as,
                                    add(b, mul(b, add(b, wr, mul(b, tir_var_ref(b, i), 16)), lda), kc), lda));
  tir_stmt *lb = loop(b, j, fn, TIR_UNROLLED,
                      tir_wmma_load(b, fb, tir_var_ref(b, j), bs,
                                    add(b, mul(b, kc, ldb), add(b, wc, mul(b, tir_var_ref(b, j), 16))), ldb));
  tir_stmt *mma = loop(b, i, fm, TIR_UNROLLED,
                       loop(b, j, fn, TIR_UNROLLED,
                            tir_wmma_mma(b, acc, fij, fa, tir_var_ref(b, i), fb, tir_var_ref(b, j))));
  tir_stmt *step[3] = {la, lb, mma};
  tir_stmt *inner = loop(b, kk, w->bk / 8, TIR_UNROLLED, tir_seq(b, step, 3));
  tir_stmt *kbody[2] = {tir_seq(b, fetch, 4), inner};
  tir_stmt *kloop = loop(b, ko, (a->K + w->bk - 1) / w->bk, TIR_SERIAL, tir_seq(b, kbody, 2));
  tir_stmt *fill = loop(b, i, fm, TIR_UNROLLED, loop(b, j, fn, TIR_UNROLLED, tir_wmma_fill(b, acc, fij, 0)));
  tir_expr *cix = add(b, mul(b, add(b, wr, mul(b, tir_var_ref(b, i), 16)), w->bn), add(b, wc, mul(b, tir_var_ref(b, j), 16)));
  tir_stmt *store = loop(b, i, fm, TIR_UNROLLED, loop(b, j, fn, TIR_UNROLLED, tir_wmma_store(b, acc, fij, a->c, cix, w->bn)));
  tir_stmt *body[3] = {fill, kloop, store};
  tir_stmt *s = tir_seq(b, body, 3);
  s = tir_allocate(b, acc, tir_allocate(b, fa, tir_allocate(b, fb, s)));
  s = tir_for(b, ty, i64(b, 0), i64(b, warps), TIR_THREAD_Y, tir_for(b, tx, i64(b, 0), i64(b, 32), TIR_THREAD_X, s));
  return tir_allocate(b, as, tir_allocate(b, bs, s));
}
