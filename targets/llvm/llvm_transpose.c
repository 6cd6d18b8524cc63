/* llvm_transpose.c — a loop whose iterations each store one vector gathered from
 * rows, emitted as a transpose in registers.
 *
 * A relayout between NCHW and channel blocks, or a transpose that moves the
 * input's innermost axis, stores output vectors whose lanes are `lanes` elements
 * a row apart in the input (a channel's H·W, a block's b). The schedule
 * (sched_movement.c) tiles the axis that walks the input's rows by a vector's
 * lanes, so the loop over that tile is
 *
 *   for i in [0, E): out[ramp(A(i), 1, L)] = in[ramp(B + i, S, L)]
 *
 * — iteration i's lane j reads in[B + j·S + i]. Every element of the L rows
 * in[B + j·S .. + E) is read once: each row is one contiguous vector load, the
 * E x L block is transposed with shuffles (log2 stages of two-input shuffles
 * that swap the off-diagonal quarters of ever smaller blocks), and iteration i
 * stores transposed row i where it would have. Otherwise each output vector is a
 * gather of L loads (or L scalar loads and inserts on x86 without AVX-512,
 * llvm_expr.c): on the AMD EPYC (Zen 3) an 8 x 8 block of float is 8 loads and
 * about 24 shuffles instead of 64 loads and 64 inserts.
 *
 * The loads read exactly the elements the loop reads, all before its stores:
 * so the two buffers must differ, the stores be unmasked, of the value loaded
 * unconverted (a type whose registers are its memory), and B's dependence on i
 * exactly + i (its linear form, tir/arith.h). Anything else keeps the loop. */
#include "arith.h"
#include "llvm_internal.h"

enum { MAX_SIDE = 16 };

/* The index ramp of a load or store, seen through the narrowing pass's widening
 * (int64 of an int32 ramp). */
static const tir_expr *ramp_of(const tir_expr *ix) {
  if (ix->kind == TIR_CAST && ix->dtype == GIR_I64 && ix->u.cast.a->dtype == GIR_I32) ix = ix->u.cast.a;
  return ix->kind == TIR_RAMP ? ix : NULL;
}

/* 1 if e, an integer atom, is the variable v or an integer cast of it. */
static int is_var(const tir_expr *e, const tir_var *v) {
  if (e->kind == TIR_CAST && gir_dtype_is_int(e->dtype)) e = e->u.cast.a;
  return e->kind == TIR_VAR && e->u.var == v;
}

/* Whether base is b0 + v: the variable (or its cast) with coefficient 1, and no
 * other term that depends on v. */
static int advances_by_one(tgt_lcg *g, const tir_expr *base, const tir_var *v) {
  if (!arith_linear_dtype(base->dtype) || base->lanes != 1) return 0;
  arith_ctx ac;
  arith_ctx_init(&ac, g->scratch);
  arith_linear l = arith_linear_of(&ac, base);
  int found = 0;
  for (int32_t k = 0; k < l.n; k++) {
    if (!arith_uses_var(l.t[k].atom, v)) continue;
    if (found || !is_var(l.t[k].atom, v) || l.t[k].coef != 1) return 0;
    found = 1;
  }
  return found;
}

/* The block's shape when s is such a loop: E iterations, L lanes. */
static int match(tgt_lcg *g, const tir_stmt *s, int *E, int *L) {
  if (g->gpu || s->kind != TIR_FOR || s->u.loop.kind != TIR_SERIAL || s->u.loop.extent->kind != TIR_INT) return 0;
  const tir_stmt *st = s->u.loop.body;
  if (!st || st->kind != TIR_STORE || st->u.store.value->kind != TIR_LOAD) return 0;
  const tir_expr *ld = st->u.store.value;
  const tir_buffer *in = ld->u.load.buf, *out = st->u.store.buf;
  int64_t e = s->u.loop.extent->u.i;
  int l = ld->lanes;
  if (e < 2 || e > MAX_SIDE || l < 2 || l > MAX_SIDE || in == out || in->dtype != out->dtype) return 0;
  if (tgt_llvm_mem_type(g, in->dtype) != tgt_llvm_reg_type(g, in->dtype, 1)) return 0; /* converted on load */
  const tir_expr *sr = st->u.store.index, *lr = ramp_of(ld->u.load.index);
  if (sr->kind != TIR_RAMP || sr->u.ramp.stride->kind != TIR_INT || sr->u.ramp.stride->u.i != 1) return 0;
  if (!lr || lr->u.ramp.stride->kind != TIR_INT || lr->u.ramp.stride->u.i == 1) return 0;
  if (!advances_by_one(g, lr->u.ramp.base, s->u.loop.var)) return 0;
  *E = (int)e;
  *L = l;
  return 1;
}

int tgt_llvm_transpose_loop(tgt_lcg *g, const tir_stmt *s) {
  int E, L;
  if (!match(g, s, &E, &L)) return 0;
  const tir_var *v = s->u.loop.var;
  const tir_stmt *st = s->u.loop.body;
  const tir_expr *ld = st->u.store.value, *lr = ramp_of(ld->u.load.index);
  const tir_buffer *in = ld->u.load.buf, *out = st->u.store.buf;
  LLVMTypeRef mt = tgt_llvm_mem_type(g, in->dtype), vt = tgt_llvm_reg_type(g, v->dtype, 1);
  unsigned esz = (unsigned)gir_dtype_size(in->dtype);
  int P = 1; /* the square block the shuffles work on: a power of two */
  while (P < E || P < L) P *= 2;
  LLVMTypeRef pt = LLVMVectorType(mt, (unsigned)P);
  LLVMValueRef old = g->vars[v->id];
  LLVMValueRef lo = tgt_llvm_int_to(g, tgt_llvm_expr(g, s->u.loop.min), vt);
  g->vars[v->id] = lo;
  LLVMValueRef b0 = tgt_llvm_int_to(g, tgt_llvm_expr(g, lr->u.ramp.base), g->t_i64);
  int64_t S = lr->u.ramp.stride->u.i;
  LLVMValueRef m[MAX_SIDE];
  int pad[MAX_SIDE];
  for (int i = 0; i < P; i++) pad[i] = i < E ? i : -1;
  for (int j = 0; j < P; j++) {
    if (j >= L) {
      m[j] = LLVMGetPoison(pt);
      continue;
    }
    LLVMValueRef at = LLVMBuildAdd(g->b, b0, LLVMConstInt(g->t_i64, (unsigned long long)(S * j), 1), "");
    LLVMValueRef row = LLVMBuildLoad2(g->b, LLVMVectorType(mt, (unsigned)E), tgt_llvm_elem_ptr(g, in, at), "");
    LLVMSetAlignment(row, esz);
    m[j] = E == P ? row : tgt_llvm_shuffle(g, row, NULL, pad, P);
  }
  /* swap the off-diagonal h x h quarters of every 2h x 2h block, h = P/2 .. 1 */
  for (int h = P / 2; h >= 1; h /= 2) {
    int ia[MAX_SIDE], ib[MAX_SIDE];
    for (int i = 0; i < P; i++) {
      ia[i] = (i & h) ? P + i - h : i;
      ib[i] = (i & h) ? P + i : i + h;
    }
    for (int j = 0; j < P; j++) {
      if (j & h) continue;
      LLVMValueRef a = m[j], b = m[j + h];
      m[j] = tgt_llvm_shuffle(g, a, b, ia, P);
      m[j + h] = tgt_llvm_shuffle(g, a, b, ib, P);
    }
  }
  int first[MAX_SIDE];
  for (int i = 0; i < L; i++) first[i] = i;
  for (int i = 0; i < E; i++) {
    g->vars[v->id] = LLVMBuildAdd(g->b, lo, LLVMConstInt(vt, (unsigned long long)i, 0), "");
    LLVMValueRef val = L == P ? m[i] : tgt_llvm_shuffle(g, m[i], NULL, first, L);
    LLVMValueRef p = tgt_llvm_elem_ptr(g, out, tgt_llvm_expr(g, st->u.store.index->u.ramp.base));
    LLVMSetAlignment(LLVMBuildStore(g->b, val, p), esz);
  }
  g->vars[v->id] = old;
  return 1;
}
