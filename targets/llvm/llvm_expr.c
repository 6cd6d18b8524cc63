/* llvm_expr.c — loop IR expressions, loads and stores → LLVM IR.
 *
 * The reference for every operation is the TE interpreter (te/te_eval.c): the
 * code here computes the same bits, operation by operation, so that a kernel and
 * the interpreter agree exactly except where the loop IR allows a difference
 * (FMA contraction; libm's float versions of exp, sin... against double ones).
 * That dictates the less obvious choices:
 * - float16 / bfloat16 live in registers as float, rounded back to their format
 *   after every inexact operation (fptrunc+fpext for half, the interpreter's
 *   integer rounding for bfloat16, whose NaN pattern it also copies);
 * - so do the float8 formats, float8e8m0 and float4e2m1 (one byte in memory),
 *   converted with vector-friendly integer code that mirrors graphir/dtype.c
 *   select for select; int4/int2 are i4/i2 registers (wrapping arithmetic for
 *   free), one sign- or zero-extended byte in memory;
 * - integer division and modulo guard the divisor with selects (0 → result 0,
 *   -1 → negation / 0, so INT_MIN / -1 wraps instead of trapping), shifts by the
 *   bit width or more give 0, SHR is logical on signed types too;
 * - bool arithmetic other than logic and comparison is done on u8 then tested
 *   != 0, the interpreter's wrap-to-bool;
 * - float → int casts saturate to the int64 range (llvm.fptosi.sat, NaN → 0)
 *   then truncate; int64 → float goes through double, as the interpreter does;
 * - floordiv / floormod on floats are evaluated in double, then rounded.
 * Vector expressions use LLVM vector types. Math functions without an LLVM
 * intrinsic call libm (expf / exp by width), lane by lane for vectors — except
 * exp and erf of float32 vectors, which are inline polynomials (llvm_vmath.c).
 *
 * DOT4 (4-way 8-bit dot products into int32 lanes) becomes x86's VPDPBUSD where
 * the target has it (tgt_lcg.vnni512 / vnni256: AVX512-VNNI, with AVX512VL or
 * AVX-VNNI for the 128/256-bit forms) and exactly one operand is unsigned — the
 * instruction multiplies u8 by s8, so that one goes first; a 4-lane `a` is one
 * i32 splat. L must be a multiple of 4; wider L is cut into equal chunks of the
 * widest form. On aarch64 with the dot-product extension (tgt_lcg.neon_dot) it
 * becomes SDOT (s8·s8) or UDOT (u8·u8) on 4 lanes (2 when L is only even); u8·s8
 * (either order) is USDOT with I8MM (neon_usdot), else SDOT with the unsigned
 * operand flipped to signed, u ^ 0x80 = u - 128, and 128·Σs added back:
 *   Σ u·s = SDOT(acc, u ^ 0x80, s) - SDOT(0, s, -128)
 * (exact modulo 2^32, as dot4 is). Everything else is generic IR: both operands
 * extended to <4L x i32>, multiplied, and the four stride-4 lanes of each group
 * added to acc.
 *
 * IF_THEN_ELSE evaluates only the chosen operand, with real branches and a phi.
 * With a vector condition, all-true and all-false take the vector operand
 * whole; a mixed condition evaluates each lane's chosen operand as a scalar, so
 * the lanes not taken never load. `emit(e, lane)` with lane >= 0 produces that
 * scalar lane of a vector expression; lane -1 produces the whole value. */
#include <assert.h>
#include <math.h>
#include <string.h>
#include "llvm_internal.h"

static LLVMValueRef emit(tgt_lcg *g, const tir_expr *e, int lane);

/* --- types and constants --- */

LLVMTypeRef tgt_llvm_reg_type(tgt_lcg *g, gir_dtype t, int lanes) {
  LLVMTypeRef s;
  switch (t) {
  case GIR_F32: case GIR_F16: case GIR_BF16: s = g->t_float; break;
  case GIR_F8E4M3FN: case GIR_F8E4M3FNUZ: case GIR_F8E5M2: case GIR_F8E5M2FNUZ: case GIR_F8E8M0: case GIR_F4E2M1:
    s = g->t_float;
    break;
  case GIR_I4: case GIR_U4: s = LLVMIntTypeInContext(g->ctx, 4); break;
  case GIR_I2: case GIR_U2: s = LLVMIntTypeInContext(g->ctx, 2); break;
  case GIR_F64: s = g->t_double; break;
  case GIR_I8: case GIR_U8: s = g->t_i8; break;
  case GIR_I16: case GIR_U16: s = g->t_i16; break;
  case GIR_I32: case GIR_U32: s = g->t_i32; break;
  case GIR_I64: case GIR_U64: s = g->t_i64; break;
  case GIR_BOOL: s = g->t_i1; break;
  default: assert(!"not a first-class dtype"); s = g->t_i8; break;
  }
  return lanes > 1 ? LLVMVectorType(s, (unsigned)lanes) : s;
}

LLVMTypeRef tgt_llvm_mem_type(tgt_lcg *g, gir_dtype t) {
  switch (t) {
  case GIR_F16: return g->t_half;
  case GIR_BF16: return g->t_i16;
  case GIR_BOOL: return g->t_i8;
  default: return gir_dtype_size(t) == 1 ? g->t_i8 : tgt_llvm_reg_type(g, t, 1); /* float8 codes, int4 bytes... */
  }
}

static LLVMTypeRef vec_of(LLVMTypeRef s, int lanes) { return lanes > 1 ? LLVMVectorType(s, (unsigned)lanes) : s; }

static LLVMValueRef lane_ix(tgt_lcg *g, int k) { return LLVMConstInt(g->t_i32, (unsigned long long)k, 0); }

static LLVMValueRef splat(tgt_lcg *g, LLVMValueRef v, int lanes) {
  if (lanes <= 1) return v;
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), (unsigned)lanes);
  LLVMValueRef x = LLVMBuildInsertElement(g->b, LLVMGetPoison(vt), v, lane_ix(g, 0), "");
  return LLVMBuildShuffleVector(g->b, x, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(g->t_i32, (unsigned)lanes)),
                                "");
}

/* Integer constant v (two's complement, truncated to the type) of scalar type t. */
static LLVMValueRef cint(tgt_lcg *g, LLVMTypeRef t, int64_t v, int lanes) {
  unsigned w = LLVMGetIntTypeWidth(t);
  uint64_t u = (uint64_t)v;
  if (w < 64) u &= (1ull << w) - 1;
  return splat(g, LLVMConstInt(t, u, 0), lanes);
}

static LLVMValueRef cfp(tgt_lcg *g, LLVMTypeRef t, double v, int lanes) { return splat(g, LLVMConstReal(t, v), lanes); }

static LLVMTypeRef scalar_type(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}

static LLVMTypeRef scalar_of(LLVMValueRef v) { return scalar_type(LLVMTypeOf(v)); }

/* The interpreter's rounding of a float constant to its dtype. */
static double round_const(gir_dtype t, double v) {
  switch (t) {
  case GIR_F32: return (float)v;
  case GIR_F16: return gir_f16_to_f32(gir_f32_to_f16((float)v));
  case GIR_BF16: return gir_bf16_to_f32(gir_f32_to_bf16((float)v));
  default: return gir_dtype_is_f8(t) ? gir_f8_to_f32(t, gir_f64_to_f8(t, v)) : v;
  }
}

/* --- calls --- */

static LLVMValueRef intrin(tgt_lcg *g, const char *name, LLVMTypeRef *over, int n_over, LLVMValueRef *args,
                           int n_args) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  assert(id && "unknown intrinsic");
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, over, (size_t)n_over);
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(f), f, args, (unsigned)n_args, "");
}

static LLVMValueRef intrin1(tgt_lcg *g, const char *name, LLVMValueRef a) {
  LLVMTypeRef t = LLVMTypeOf(a);
  return intrin(g, name, &t, 1, &a, 1);
}

static LLVMValueRef intrin2(tgt_lcg *g, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef args[2] = {a, b};
  return intrin(g, name, &t, 1, args, 2);
}

/* A libm function of one or two arguments of the scalar float type t. */
static LLVMValueRef libm_fn(tgt_lcg *g, const char *base, LLVMTypeRef t, int n_args) {
  char name[40]; /* GPU code calls libdevice's versions (__nv_expf…), linked in by the NVPTX driver */
  snprintf(name, sizeof name, "%s%s%s", g->gpu ? "__nv_" : "", base, t == g->t_float ? "f" : "");
  LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
  if (!f) {
    LLVMTypeRef ps[2] = {t, t};
    f = LLVMAddFunction(g->mod, name, LLVMFunctionType(t, ps, (unsigned)n_args, 0));
  }
  return f;
}

/* Calls the scalar function f on each lane of a (and b, if not NULL). */
static LLVMValueRef call_lanes(tgt_lcg *g, LLVMValueRef f, LLVMValueRef a, LLVMValueRef b, int lanes) {
  LLVMTypeRef ft = LLVMGlobalGetValueType(f);
  unsigned n = b ? 2 : 1;
  if (lanes <= 1) {
    LLVMValueRef args[2] = {a, b};
    return LLVMBuildCall2(g->b, ft, f, args, n, "");
  }
  LLVMValueRef r = LLVMGetPoison(LLVMVectorType(LLVMGetReturnType(ft), (unsigned)lanes));
  for (int k = 0; k < lanes; k++) {
    LLVMValueRef args[2] = {LLVMBuildExtractElement(g->b, a, lane_ix(g, k), ""),
                            b ? LLVMBuildExtractElement(g->b, b, lane_ix(g, k), "") : NULL};
    r = LLVMBuildInsertElement(g->b, r, LLVMBuildCall2(g->b, ft, f, args, n, ""), lane_ix(g, k), "");
  }
  return r;
}

/* kiln.ipow(b, e): the interpreter's integer power on int64 (negative exponents
 * give 0 except for bases 1 and -1), made once per module. */
static LLVMValueRef ipow_fn(tgt_lcg *g) {
  if (g->ipow) return g->ipow;
  LLVMTypeRef i64 = g->t_i64, ps[2] = {i64, i64};
  LLVMValueRef f = LLVMAddFunction(g->mod, "kiln.ipow", LLVMFunctionType(i64, ps, 2, 0));
  LLVMSetLinkage(f, LLVMInternalLinkage);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
  LLVMValueRef base = LLVMGetParam(f, 0), ex = LLVMGetParam(f, 1);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, f, "entry");
  LLVMBasicBlockRef neg = LLVMAppendBasicBlockInContext(g->ctx, f, "neg");
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, f, "head");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, f, "body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, f, "done");
  LLVMValueRef zero = LLVMConstInt(i64, 0, 0), one = LLVMConstInt(i64, 1, 0), m1 = LLVMConstInt(i64, ~0ull, 0);

  LLVMPositionBuilderAtEnd(b, entry);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, ex, zero, ""), neg, head);

  LLVMPositionBuilderAtEnd(b, neg);
  LLVMValueRef odd = LLVMBuildTrunc(b, ex, g->t_i1, "");
  LLVMValueRef alt = LLVMBuildSelect(b, odd, m1, one, "");
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, base, m1, ""), alt, zero, "");
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, base, one, ""), one, r, "");
  LLVMBuildRet(b, r);

  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef acc = LLVMBuildPhi(b, i64, "acc"), x = LLVMBuildPhi(b, i64, "x"), k = LLVMBuildPhi(b, i64, "k");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, k, zero, ""), body, done);

  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef bit = LLVMBuildTrunc(b, k, g->t_i1, "");
  LLVMValueRef acc2 = LLVMBuildSelect(b, bit, LLVMBuildMul(b, acc, x, ""), acc, "");
  LLVMValueRef x2 = LLVMBuildMul(b, x, x, "");
  LLVMValueRef k2 = LLVMBuildLShr(b, k, one, "");
  LLVMBuildBr(b, head);

  LLVMValueRef acc_in[2] = {one, acc2}, x_in[2] = {base, x2}, k_in[2] = {ex, k2};
  LLVMBasicBlockRef from[2] = {entry, body};
  LLVMAddIncoming(acc, acc_in, from, 2);
  LLVMAddIncoming(x, x_in, from, 2);
  LLVMAddIncoming(k, k_in, from, 2);

  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRet(b, acc);
  LLVMDisposeBuilder(b);
  return g->ipow = f;
}

/* --- float formats --- */

/* bfloat16 rounding of a float register, as gir_f32_to_bf16: nearest even,
 * NaN keeps its top bits and gets the quiet bit. */
static LLVMValueRef round_bf16(tgt_lcg *g, LLVMValueRef v, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = vec_of(g->t_i32, lanes);
  LLVMValueRef x = LLVMBuildBitCast(B, v, it, "");
  LLVMValueRef hi = cint(g, g->t_i32, (int64_t)0xffff0000u, lanes);
  LLVMValueRef mag = LLVMBuildAnd(B, x, cint(g, g->t_i32, 0x7fffffff, lanes), "");
  LLVMValueRef nan = LLVMBuildICmp(B, LLVMIntUGT, mag, cint(g, g->t_i32, 0x7f800000, lanes), "");
  LLVMValueRef lsb = LLVMBuildAnd(B, LLVMBuildLShr(B, x, cint(g, g->t_i32, 16, lanes), ""), cint(g, g->t_i32, 1, lanes), "");
  LLVMValueRef r = LLVMBuildAdd(B, x, LLVMBuildAdd(B, lsb, cint(g, g->t_i32, 0x7fff, lanes), ""), "");
  r = LLVMBuildAnd(B, r, hi, "");
  LLVMValueRef q = LLVMBuildAnd(B, LLVMBuildOr(B, x, cint(g, g->t_i32, 0x400000, lanes), ""), hi, "");
  return LLVMBuildBitCast(B, LLVMBuildSelect(B, nan, q, r, ""), vec_of(g->t_float, lanes), "");
}

/* float → float16 bits (i16), as gir_f32_to_f16: nearest even, overflow to
 * inf, NaN quiet with its top payload bits. Subnormal results round through a
 * float addition of 0.5 (the FPU rounds to nearest even for us). */
static LLVMValueRef soft_f32_to_f16(tgt_lcg *g, LLVMValueRef v, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = vec_of(g->t_i32, lanes), ft = vec_of(g->t_float, lanes);
#define K(c) cint(g, g->t_i32, (int64_t)(c), lanes)
  LLVMValueRef x = LLVMBuildBitCast(B, v, it, "");
  LLVMValueRef sign = LLVMBuildAnd(B, LLVMBuildLShr(B, x, K(16), ""), K(0x8000), "");
  LLVMValueRef mag = LLVMBuildAnd(B, x, K(0x7fffffff), "");
  /* normal: rebias, round on the 13 dropped bits */
  LLVMValueRef r = LLVMBuildLShr(B, LLVMBuildSub(B, mag, K(0x38000000), ""), K(13), "");
  LLVMValueRef rem = LLVMBuildAnd(B, mag, K(0x1fff), "");
  LLVMValueRef up = LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntUGT, rem, K(0x1000), ""),
                                LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, rem, K(0x1000), ""),
                                             LLVMBuildTrunc(B, r, vec_of(g->t_i1, lanes), ""), ""), "");
  LLVMValueRef normal = LLVMBuildAdd(B, r, LLVMBuildZExt(B, up, it, ""), "");
  /* subnormal: |x| + 0.5 leaves the rounded f16 mantissa in the low bits */
  LLVMValueRef absf = LLVMBuildBitCast(B, mag, ft, "");
  LLVMValueRef sub = LLVMBuildSub(B, LLVMBuildBitCast(B, LLVMBuildFAdd(B, absf, cfp(g, g->t_float, 0.5, lanes), ""), it, ""),
                                  K(0x3f000000), "");
  LLVMValueRef nan = LLVMBuildOr(B, K(0x7e00), LLVMBuildAnd(B, LLVMBuildLShr(B, mag, K(13), ""), K(0x3ff), ""), "");
  LLVMValueRef res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, mag, K(0x38800000), ""), sub, normal, "");
  res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGE, mag, K(0x477ff000), ""), K(0x7c00), res, "");
  res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, mag, K(0x7f800000), ""), nan, res, "");
  res = LLVMBuildOr(B, res, sign, "");
#undef K
  return LLVMBuildTrunc(B, res, vec_of(g->t_i16, lanes), "");
}

/* float16 bits (i16) → float, as gir_f16_to_f32. */
static LLVMValueRef soft_f16_to_f32(tgt_lcg *g, LLVMValueRef h, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = vec_of(g->t_i32, lanes), ft = vec_of(g->t_float, lanes);
#define K(c) cint(g, g->t_i32, (int64_t)(c), lanes)
  LLVMValueRef x = LLVMBuildZExt(B, h, it, "");
  LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, x, K(0x8000), ""), K(16), "");
  LLVMValueRef e = LLVMBuildAnd(B, LLVMBuildLShr(B, x, K(10), ""), K(0x1f), "");
  LLVMValueRef m = LLVMBuildAnd(B, x, K(0x3ff), "");
  LLVMValueRef m13 = LLVMBuildShl(B, m, K(13), "");
  LLVMValueRef normal = LLVMBuildOr(B, LLVMBuildShl(B, LLVMBuildAdd(B, e, K(112), ""), K(23), ""), m13, "");
  LLVMValueRef special = LLVMBuildOr(B, K(0x7f800000), m13, "");
  LLVMValueRef sub = LLVMBuildBitCast(B, LLVMBuildFMul(B, LLVMBuildUIToFP(B, m, ft, ""), cfp(g, g->t_float, 0x1p-24, lanes), ""),
                                      it, ""); /* m * 2^-24, exact; 0 when m is 0 */
  LLVMValueRef res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, e, K(0), ""), sub, normal, "");
  res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, e, K(0x1f), ""), special, res, "");
#undef K
  return LLVMBuildBitCast(B, LLVMBuildOr(B, res, sign, ""), ft, "");
}

static LLVMValueRef f32_to_half(tgt_lcg *g, LLVMValueRef v, int lanes) {
  if (!g->soft_half) return LLVMBuildFPTrunc(g->b, v, vec_of(g->t_half, lanes), "");
  return LLVMBuildBitCast(g->b, soft_f32_to_f16(g, v, lanes), vec_of(g->t_half, lanes), "");
}

static LLVMValueRef half_to_f32(tgt_lcg *g, LLVMValueRef h, int lanes) {
  if (!g->soft_half) return LLVMBuildFPExt(g->b, h, vec_of(g->t_float, lanes), "");
  return soft_f16_to_f32(g, LLVMBuildBitCast(g->b, h, vec_of(g->t_i16, lanes), ""), lanes);
}

/* float (register) → f8 code (i8), as gir_f32_to_f8: the normal range rebiases
 * the exponent and rounds to nearest even on the dropped bits; below it, |x| +
 * C with C's ulp the format's subnormal step leaves the rounded step count in
 * C's low bits (the FPU rounds to nearest even for us); then overflow, sign and
 * NaN by selects. float8e8m0 keeps the exponent bits. */
static LLVMValueRef f32_to_f8(tgt_lcg *g, gir_dtype t, LLVMValueRef v, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = vec_of(g->t_i32, lanes), bt = vec_of(g->t_i8, lanes);
#define K(c) cint(g, g->t_i32, (int64_t)(c), lanes)
  LLVMValueRef x = LLVMBuildBitCast(B, v, it, "");
  if (t == GIR_F8E8M0) return LLVMBuildTrunc(B, LLVMBuildLShr(B, x, K(23), ""), bt, "");
  gir_f8_format f;
  if (!gir_f8_format_of(t, &f)) {
    assert(!"not an f8 format");
    return cint(g, g->t_i8, 0, lanes);
  }
  int emin = 1 - f.bias;
  uint32_t sh = (uint32_t)(23 - f.mbits);
  LLVMValueRef sign = LLVMBuildLShr(B, x, K(31), "");
  LLVMValueRef mag = LLVMBuildAnd(B, x, K(0x7fffffff), "");
  /* normal: rebias, round on the sh dropped bits */
  LLVMValueRef r = LLVMBuildLShr(B, LLVMBuildSub(B, mag, K((uint32_t)(127 - f.bias) << 23), ""), K(sh), "");
  LLVMValueRef rem = LLVMBuildAnd(B, mag, K((1u << sh) - 1), "");
  LLVMValueRef half = K(1u << (sh - 1));
  LLVMValueRef up = LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntUGT, rem, half, ""),
                                LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, rem, half, ""),
                                             LLVMBuildTrunc(B, r, vec_of(g->t_i1, lanes), ""), ""), "");
  LLVMValueRef normal = LLVMBuildAdd(B, r, LLVMBuildZExt(B, up, it, ""), "");
  /* subnormal: |x| + 2^(emin - mbits + 23), whose ulp is the step 2^(emin - mbits) */
  LLVMValueRef c = cfp(g, g->t_float, ldexp(1.0, emin - f.mbits + 23), lanes);
  LLVMValueRef sum = LLVMBuildFAdd(B, LLVMBuildBitCast(B, mag, vec_of(g->t_float, lanes), ""), c, "");
  LLVMValueRef sub = LLVMBuildSub(B, LLVMBuildBitCast(B, sum, it, ""), LLVMBuildBitCast(B, c, it, ""), "");
  r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, mag, K((uint32_t)(127 + emin) << 23), ""), sub, normal, "");
  r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, r, K(f.max_code), ""), K(f.overflow_code), r, ""); /* and inf */
  LLVMValueRef res, nan;
  if (f.fnuz) { /* no -0; overflow and NaN are the unsigned 0x80 */
    LLVMValueRef bare = LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntEQ, r, K(0), ""),
                                    LLVMBuildICmp(B, LLVMIntEQ, r, K(0x80), ""), "");
    res = LLVMBuildSelect(B, bare, r, LLVMBuildOr(B, r, LLVMBuildShl(B, sign, K(7), ""), ""), "");
    nan = K(f.nan_code);
  } else {
    LLVMValueRef s = LLVMBuildShl(B, sign, K(f.sign_shift), "");
    res = LLVMBuildOr(B, r, s, "");
    nan = LLVMBuildXor(B, K(f.nan_code), s, "");
  }
  res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, mag, K(0x7f800000), ""), nan, res, "");
#undef K
  return LLVMBuildTrunc(B, res, bt, "");
}

/* f8 code (i8) → float, as gir_f8_to_f32: the magnitude code shifted into
 * place and rebiased, or (exponent field 0) its integer value times the
 * subnormal step; infinity, NaN and the sign by selects. */
static LLVMValueRef f8_to_f32(tgt_lcg *g, gir_dtype t, LLVMValueRef code, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = vec_of(g->t_i32, lanes), ft = vec_of(g->t_float, lanes);
#define K(c) cint(g, g->t_i32, (int64_t)(c), lanes)
  LLVMValueRef c = LLVMBuildZExt(B, code, it, ""), res;
  if (t == GIR_F8E8M0) {
    LLVMValueRef e = LLVMBuildShl(B, c, K(23), "");
    res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, c, K(0), ""), K(0x00400000), e, ""); /* 2^-127 */
    res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, c, K(0xff), ""), K(0x7fc00000), res, "");
    return LLVMBuildBitCast(B, res, ft, "");
  }
  gir_f8_format f;
  if (!gir_f8_format_of(t, &f)) {
    assert(!"not an f8 format");
    return cfp(g, g->t_float, 0, lanes);
  }
  LLVMValueRef mag = LLVMBuildAnd(B, c, K((1u << f.sign_shift) - 1), "");
  LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, LLVMBuildLShr(B, c, K(f.sign_shift), ""), K(1), ""), K(31), "");
  LLVMValueRef normal =
      LLVMBuildAdd(B, LLVMBuildShl(B, mag, K(23 - f.mbits), ""), K((uint32_t)(127 - f.bias) << 23), "");
  LLVMValueRef sub = LLVMBuildBitCast(B, LLVMBuildFMul(B, LLVMBuildUIToFP(B, mag, ft, ""),
                                                       cfp(g, g->t_float, ldexp(1.0, 1 - f.bias - f.mbits), lanes), ""),
                                      it, ""); /* exact; 0 for code 0 */
  res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, mag, K(1u << f.mbits), ""), sub, normal, "");
  uint32_t nan_from = f.has_inf ? f.overflow_code + 1 : f.max_code + 1;
  if (f.has_inf)
    res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, mag, K(f.overflow_code), ""), K(0x7f800000), res, "");
  if (nan_from < (1u << f.sign_shift))
    res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGE, mag, K(nan_from), ""), K(0x7fc00000), res, "");
  if (f.fnuz) res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, c, K(0x80), ""), K(0x7fc00000), res, "");
  res = LLVMBuildOr(B, res, sign, "");
#undef K
  return LLVMBuildBitCast(B, res, ft, "");
}

/* Rounds a float register to dtype t's precision (no-op for float32/64). */
static LLVMValueRef round_to(tgt_lcg *g, gir_dtype t, LLVMValueRef v, int lanes) {
  if (t == GIR_F16) {
    if (g->soft_half) return soft_f16_to_f32(g, soft_f32_to_f16(g, v, lanes), lanes);
    LLVMValueRef h = LLVMBuildFPTrunc(g->b, v, vec_of(g->t_half, lanes), "");
    return LLVMBuildFPExt(g->b, h, vec_of(g->t_float, lanes), "");
  }
  if (t == GIR_BF16) return round_bf16(g, v, lanes);
  if (gir_dtype_is_f8(t)) return f8_to_f32(g, t, f32_to_f8(g, t, v, lanes), lanes);
  return v;
}

static LLVMValueRef from_mem(tgt_lcg *g, gir_dtype t, LLVMValueRef v, int lanes) {
  LLVMBuilderRef B = g->b;
  switch (t) {
  case GIR_F16: return half_to_f32(g, v, lanes);
  case GIR_BF16: {
    LLVMValueRef x = LLVMBuildZExt(B, v, vec_of(g->t_i32, lanes), "");
    x = LLVMBuildShl(B, x, cint(g, g->t_i32, 16, lanes), "");
    return LLVMBuildBitCast(B, x, vec_of(g->t_float, lanes), "");
  }
  case GIR_BOOL: return LLVMBuildICmp(B, LLVMIntNE, v, cint(g, g->t_i8, 0, lanes), "");
  case GIR_I4: case GIR_U4: case GIR_I2: case GIR_U2: return LLVMBuildTrunc(B, v, tgt_llvm_reg_type(g, t, lanes), "");
  default: return gir_dtype_is_f8(t) ? f8_to_f32(g, t, v, lanes) : v;
  }
}

/* Registers of float16/bfloat16 are already rounded, so these narrowings are
 * exact; f8 ones round (once more, harmlessly) in the same code as round_to. */
static LLVMValueRef to_mem(tgt_lcg *g, gir_dtype t, LLVMValueRef v, int lanes) {
  LLVMBuilderRef B = g->b;
  switch (t) {
  case GIR_F16: return f32_to_half(g, v, lanes);
  case GIR_BF16: {
    LLVMValueRef x = LLVMBuildBitCast(B, v, vec_of(g->t_i32, lanes), "");
    x = LLVMBuildLShr(B, x, cint(g, g->t_i32, 16, lanes), "");
    return LLVMBuildTrunc(B, x, vec_of(g->t_i16, lanes), "");
  }
  case GIR_BOOL: return LLVMBuildZExt(B, v, vec_of(g->t_i8, lanes), "");
  case GIR_I4: case GIR_I2: return LLVMBuildSExt(B, v, vec_of(g->t_i8, lanes), "");
  case GIR_U4: case GIR_U2: return LLVMBuildZExt(B, v, vec_of(g->t_i8, lanes), "");
  default: return gir_dtype_is_f8(t) ? f32_to_f8(g, t, v, lanes) : v;
  }
}

/* --- operations --- */

static const char *libm_name(te_unop op) {
  switch (op) {
  case TE_EXP: return "exp";
  case TE_LOG: return "log";
  case TE_SIN: return "sin";
  case TE_COS: return "cos";
  case TE_TAN: return "tan";
  case TE_ASIN: return "asin";
  case TE_ACOS: return "acos";
  case TE_ATAN: return "atan";
  case TE_SINH: return "sinh";
  case TE_COSH: return "cosh";
  case TE_ASINH: return "asinh";
  case TE_ACOSH: return "acosh";
  case TE_ATANH: return "atanh";
  case TE_TANH: return "tanh";
  case TE_ERF: return "erf";
  default: return NULL;
  }
}

/* Round half to even without llvm.roundeven: for |x| < 2^23 (2^52 for double),
 * |x| + 2^23 - 2^23 rounds in the FPU's nearest-even mode; larger values are
 * integers already. The sign is put back, so -0.4 gives -0. */
static LLVMValueRef soft_roundeven(tgt_lcg *g, LLVMValueRef a, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef ft = scalar_of(a);
  LLVMValueRef big = cfp(g, ft, ft == g->t_double ? 0x1p52 : 0x1p23, lanes);
  LLVMValueRef ax = intrin1(g, "llvm.fabs", a);
  LLVMValueRef r = LLVMBuildFSub(B, LLVMBuildFAdd(B, ax, big, ""), big, "");
  r = intrin2(g, "llvm.copysign", r, a);
  return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, ax, big, ""), r, a, ""); /* NaN and big: a */
}

/* An argument that is at most 0 (or NaN) by its form: −|x|, what sigmoid and softplus
 * take exp of (te/compute_elementwise.c) — its exp needs no clamp above. */
static int nonpositive(const tir_expr *a) {
  return a->kind == TIR_UNARY && a->u.un.op == TE_NEG && a->u.un.a->kind == TIR_UNARY && a->u.un.a->u.un.op == TE_ABS;
}

static LLVMValueRef unary(tgt_lcg *g, te_unop op, gir_dtype t, LLVMValueRef a, int lanes) {
  LLVMBuilderRef B = g->b;
  /* f8: even -x, floor(x)... may leave the format (FNUZ has no -0, e8m0 no sign or 0) */
  if (gir_dtype_is_f8(t) && op != TE_ISNAN && op != TE_ISINF)
    return round_to(g, t, unary(g, op, GIR_F32, a, lanes), lanes);
  if (gir_dtype_is_float(t)) {
    LLVMTypeRef ft = scalar_of(a);
    switch (op) {
    case TE_NEG: return LLVMBuildFNeg(B, a, "");
    case TE_ABS: return intrin1(g, "llvm.fabs", a);
    case TE_SQRT: return round_to(g, t, intrin1(g, "llvm.sqrt", a), lanes);
    case TE_FLOOR: return intrin1(g, "llvm.floor", a);
    case TE_CEIL: return intrin1(g, "llvm.ceil", a);
    case TE_ROUND: return g->soft_roundeven ? soft_roundeven(g, a, lanes) : intrin1(g, "llvm.roundeven", a);
    case TE_TRUNC: return intrin1(g, "llvm.trunc", a);
    case TE_ISNAN: return LLVMBuildFCmp(B, LLVMRealUNO, a, a, "");
    case TE_ISINF: return LLVMBuildFCmp(B, LLVMRealOEQ, intrin1(g, "llvm.fabs", a), cfp(g, ft, INFINITY, lanes), "");
    case TE_NOT: case TE_BITNOT: return a; /* meaningless on floats; the interpreter passes them through */
    default: {
      if (t == GIR_F32 && lanes > 1 && lanes <= 64 && (op == TE_EXP || op == TE_ERF || op == TE_TANH || op == TE_LOG))
        return op == TE_EXP   ? tgt_llvm_vexpf(g, a, lanes)
               : op == TE_ERF ? tgt_llvm_verff(g, a, lanes)
               : op == TE_LOG ? tgt_llvm_vlogf(g, a, lanes)
                              : tgt_llvm_vtanhf(g, a, lanes);
      const char *name = libm_name(op);
      assert(name);
      return round_to(g, t, call_lanes(g, libm_fn(g, name, ft, 1), a, NULL, lanes), lanes);
    }
    }
  }
  if (t == GIR_BOOL) {
    switch (op) {
    case TE_NOT: return LLVMBuildXor(B, a, cint(g, g->t_i1, 1, lanes), "");
    case TE_BITNOT: return cint(g, g->t_i1, 1, lanes); /* ~0 and ~1 are both non-zero */
    case TE_ISNAN: case TE_ISINF: return cint(g, g->t_i1, 0, lanes);
    default: return a; /* -x, |x| and the roundings of 0/1 are themselves */
    }
  }
  LLVMTypeRef it = scalar_of(a);
  switch (op) {
  case TE_NEG: return LLVMBuildNeg(B, a, "");
  case TE_ABS: {
    if (!gir_dtype_is_signed(t)) return a;
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef args[2] = {a, LLVMConstInt(g->t_i1, 0, 0)}; /* INT_MIN stays INT_MIN */
    return intrin(g, "llvm.abs", &ty, 1, args, 2);
  }
  case TE_NOT: return LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntEQ, a, cint(g, it, 0, lanes), ""), LLVMTypeOf(a), "");
  case TE_BITNOT: return LLVMBuildNot(B, a, "");
  case TE_ISNAN: case TE_ISINF: return cint(g, g->t_i1, 0, lanes);
  default: return a; /* floor, ceil, round, trunc of an integer; math functions are never built on integers */
  }
}

/* min / max as compare-and-select, the interpreter's definition (te/scalar.c):
 * NaN if either operand is NaN, else b < a ? b : a (max: b > a ? b : a), so
 * signed zeros come out the same everywhere. Not llvm.minimum / llvm.maximum:
 * LLVM 19 narrows them to half precision for float16 values and then loses the
 * NaN on x86 CPUs without AVX512-FP16 (min(-0, NaN) gave -0 on AMD Zen 5 at
 * x86-64-v3/v4). Each select is one minps/maxps; a constant b that is not NaN
 * folds the NaN test away (relu is a single maxps). */
static LLVMValueRef fminmax(tgt_lcg *g, int is_min, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = g->b;
  LLVMValueRef pick_b = LLVMBuildFCmp(B, is_min ? LLVMRealOLT : LLVMRealOGT, b, a, "");
  LLVMValueRef r = LLVMBuildSelect(B, pick_b, b, a, ""); /* a NaN a stays: the compare is false */
  LLVMValueRef b_nan = LLVMBuildFCmp(B, LLVMRealUNO, b, b, "");
  return LLVMBuildSelect(B, b_nan, b, r, "");
}

static LLVMValueRef fbin(tgt_lcg *g, te_binop op, gir_dtype t, LLVMValueRef a, LLVMValueRef b, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMValueRef r;
  switch (op) {
  case TE_ADD: r = LLVMBuildFAdd(B, a, b, ""); break;
  case TE_SUB: r = LLVMBuildFSub(B, a, b, ""); break;
  case TE_MUL: r = LLVMBuildFMul(B, a, b, ""); break;
  case TE_DIV: r = LLVMBuildFDiv(B, a, b, ""); break;
  case TE_MOD: return LLVMBuildFRem(B, a, b, ""); /* fmod is exact */
  case TE_FLOORDIV: case TE_FLOORMOD: {
    LLVMTypeRef dt = vec_of(g->t_double, lanes);
    LLVMValueRef x = t == GIR_F64 ? a : LLVMBuildFPExt(B, a, dt, "");
    LLVMValueRef y = t == GIR_F64 ? b : LLVMBuildFPExt(B, b, dt, "");
    LLVMValueRef q = intrin1(g, "llvm.floor", LLVMBuildFDiv(B, x, y, ""));
    LLVMValueRef d = op == TE_FLOORDIV ? q : LLVMBuildFSub(B, x, LLVMBuildFMul(B, q, y, ""), "");
    r = t == GIR_F64 ? d : LLVMBuildFPTrunc(B, d, vec_of(g->t_float, lanes), "");
    return round_to(g, t, r, lanes);
  }
  case TE_MIN: case TE_MAX: return fminmax(g, op == TE_MIN, a, b);
  case TE_POW: r = call_lanes(g, libm_fn(g, "pow", scalar_of(a), 2), a, b, lanes); break;
  case TE_EQ: return LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "");
  case TE_NE: return LLVMBuildFCmp(B, LLVMRealUNE, a, b, "");
  case TE_LT: return LLVMBuildFCmp(B, LLVMRealOLT, a, b, "");
  case TE_LE: return LLVMBuildFCmp(B, LLVMRealOLE, a, b, "");
  case TE_GT: return LLVMBuildFCmp(B, LLVMRealOGT, a, b, "");
  case TE_GE: return LLVMBuildFCmp(B, LLVMRealOGE, a, b, "");
  default: return LLVMConstNull(LLVMTypeOf(a)); /* logic and shifts are never built on floats */
  }
  /* Contraction (FMA) is the one fast-math freedom the loop IR grants. Not on
   * float16/bfloat16: fusing across their per-operation rounding would make
   * results differ from the interpreter's for no gain (they are computed in float). */
  if (op <= TE_DIV && (t == GIR_F32 || t == GIR_F64) && !g->no_contract && LLVMCanValueUseFastMathFlags(r))
    LLVMSetFastMathFlags(r, LLVMFastMathAllowContract);
  return round_to(g, t, r, lanes);
}

/* Integer div / floordiv / mod / floormod that never trap: divisor 0 gives 0;
 * a signed divisor -1 gives the wrapped negation (quotients) or 0 (remainders). */
static LLVMValueRef idiv(tgt_lcg *g, te_binop op, int is_signed, LLVMValueRef a, LLVMValueRef b, int lanes) {
  LLVMBuilderRef B = g->b;
  LLVMTypeRef it = scalar_of(a);
  LLVMValueRef zero = cint(g, it, 0, lanes), one = cint(g, it, 1, lanes);
  LLVMValueRef y0 = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
  int quotient = op == TE_DIV || op == TE_FLOORDIV;
  if (!is_signed) {
    LLVMValueRef safe = LLVMBuildSelect(B, y0, one, b, "");
    LLVMValueRef r = quotient ? LLVMBuildUDiv(B, a, safe, "") : LLVMBuildURem(B, a, safe, "");
    return LLVMBuildSelect(B, y0, zero, r, "");
  }
  LLVMValueRef ym1 = LLVMBuildICmp(B, LLVMIntEQ, b, cint(g, it, -1, lanes), "");
  LLVMValueRef safe = LLVMBuildSelect(B, LLVMBuildOr(B, y0, ym1, ""), one, b, "");
  LLVMValueRef r;
  if (quotient) {
    r = LLVMBuildSDiv(B, a, safe, "");
    if (op == TE_FLOORDIV) {
      /* round toward -inf: one less when the remainder is non-zero and its sign differs from the divisor's */
      LLVMValueRef rem = LLVMBuildSRem(B, a, safe, "");
      LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, rem, zero, ""),
                                      LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, rem, safe, ""), zero, ""), "");
      r = LLVMBuildSub(B, r, LLVMBuildZExt(B, adj, LLVMTypeOf(a), ""), "");
    }
    r = LLVMBuildSelect(B, ym1, LLVMBuildNeg(B, a, ""), r, "");
  } else {
    r = LLVMBuildSRem(B, a, safe, "");
    if (op == TE_FLOORMOD) {
      LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
                                      LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, safe, ""), zero, ""), "");
      r = LLVMBuildSelect(B, adj, LLVMBuildAdd(B, r, safe, ""), r, "");
    }
    r = LLVMBuildSelect(B, ym1, zero, r, "");
  }
  return LLVMBuildSelect(B, y0, zero, r, "");
}

static LLVMValueRef ibin(tgt_lcg *g, te_binop op, gir_dtype t, LLVMValueRef a, LLVMValueRef b, int lanes) {
  LLVMBuilderRef B = g->b;
  if (t == GIR_BOOL) {
    switch (op) {
    case TE_AND: return LLVMBuildAnd(B, a, b, "");
    case TE_OR: return LLVMBuildOr(B, a, b, "");
    case TE_XOR: return LLVMBuildXor(B, a, b, "");
    case TE_EQ: return LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
    case TE_NE: return LLVMBuildICmp(B, LLVMIntNE, a, b, "");
    case TE_LT: return LLVMBuildICmp(B, LLVMIntULT, a, b, "");
    case TE_LE: return LLVMBuildICmp(B, LLVMIntULE, a, b, "");
    case TE_GT: return LLVMBuildICmp(B, LLVMIntUGT, a, b, "");
    case TE_GE: return LLVMBuildICmp(B, LLVMIntUGE, a, b, "");
    default: { /* arithmetic on 0/1 as the interpreter does it: in a wider integer, then != 0 */
      LLVMTypeRef bt = vec_of(g->t_i8, lanes);
      LLVMValueRef r = ibin(g, op, GIR_U8, LLVMBuildZExt(B, a, bt, ""), LLVMBuildZExt(B, b, bt, ""), lanes);
      return LLVMBuildICmp(B, LLVMIntNE, r, cint(g, g->t_i8, 0, lanes), "");
    }
    }
  }
  int sg = gir_dtype_is_signed(t), w = gir_dtype_bits(t);
  LLVMTypeRef it = scalar_of(a);
  switch (op) {
  case TE_ADD: return LLVMBuildAdd(B, a, b, "");
  case TE_SUB: return LLVMBuildSub(B, a, b, "");
  case TE_MUL: return LLVMBuildMul(B, a, b, "");
  case TE_DIV: case TE_FLOORDIV: case TE_MOD: case TE_FLOORMOD: return idiv(g, op, sg, a, b, lanes);
  case TE_MIN: return intrin2(g, sg ? "llvm.smin" : "llvm.umin", a, b);
  case TE_MAX: return intrin2(g, sg ? "llvm.smax" : "llvm.umax", a, b);
  case TE_POW: {
    LLVMTypeRef wt = vec_of(g->t_i64, lanes);
    LLVMValueRef x = a, y = b;
    if (w < 64) {
      x = sg ? LLVMBuildSExt(B, a, wt, "") : LLVMBuildZExt(B, a, wt, "");
      y = sg ? LLVMBuildSExt(B, b, wt, "") : LLVMBuildZExt(B, b, wt, "");
    }
    LLVMValueRef r = call_lanes(g, ipow_fn(g), x, y, lanes);
    return w < 64 ? LLVMBuildTrunc(B, r, LLVMTypeOf(a), "") : r;
  }
  case TE_AND: return LLVMBuildAnd(B, a, b, "");
  case TE_OR: return LLVMBuildOr(B, a, b, "");
  case TE_XOR: return LLVMBuildXor(B, a, b, "");
  case TE_SHL: case TE_SHR: {
    /* the count is unsigned: a negative one is huge, so it also gives 0 */
    LLVMValueRef zero = cint(g, it, 0, lanes);
    LLVMValueRef big = LLVMBuildICmp(B, LLVMIntUGE, b, cint(g, it, w, lanes), "");
    LLVMValueRef n = LLVMBuildSelect(B, big, zero, b, "");
    LLVMValueRef r = op == TE_SHL ? LLVMBuildShl(B, a, n, "") : LLVMBuildLShr(B, a, n, "");
    return LLVMBuildSelect(B, big, zero, r, "");
  }
  case TE_EQ: return LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
  case TE_NE: return LLVMBuildICmp(B, LLVMIntNE, a, b, "");
  case TE_LT: return LLVMBuildICmp(B, sg ? LLVMIntSLT : LLVMIntULT, a, b, "");
  case TE_LE: return LLVMBuildICmp(B, sg ? LLVMIntSLE : LLVMIntULE, a, b, "");
  case TE_GT: return LLVMBuildICmp(B, sg ? LLVMIntSGT : LLVMIntUGT, a, b, "");
  case TE_GE: return LLVMBuildICmp(B, sg ? LLVMIntSGE : LLVMIntUGE, a, b, "");
  default: assert(!"unknown binop"); return a;
  }
}

/* Bounds of a float expression's non-NaN values from its clamps (constants, min,
 * max, and rounding of those); ±inf where it has none. */
static void float_range(const tir_expr *e, double *lo, double *hi) {
  double la, ha, lb, hb;
  *lo = -INFINITY;
  *hi = INFINITY;
  switch (e->kind) {
  case TIR_FLOAT: *lo = *hi = e->u.f; return;
  case TIR_BROADCAST: float_range(e->u.bcast.value, lo, hi); return;
  case TIR_UNARY:
    if (e->u.un.op == TE_ROUND || e->u.un.op == TE_FLOOR || e->u.un.op == TE_CEIL) {
      float_range(e->u.un.a, lo, hi);
      *lo = floor(*lo); /* rounding stays within the integers around the bounds */
      *hi = ceil(*hi);
    }
    return;
  case TIR_BINARY:
    if (e->u.bin.op != TE_MIN && e->u.bin.op != TE_MAX) return;
    float_range(e->u.bin.a, &la, &ha);
    float_range(e->u.bin.b, &lb, &hb);
    if (e->u.bin.op == TE_MIN) {
      *lo = la < lb ? la : lb;
      *hi = ha < hb ? ha : hb;
    } else {
      *lo = la > lb ? la : lb;
      *hi = ha > hb ? ha : hb;
    }
    return;
  default: return;
  }
}

static LLVMValueRef cast(tgt_lcg *g, gir_dtype from, gir_dtype to, LLVMValueRef v, int lanes) {
  LLVMBuilderRef B = g->b;
  if (from == to) return v;
  int ff = gir_dtype_is_float(from);
  if (gir_dtype_is_float(to)) {
    LLVMTypeRef dt = vec_of(g->t_double, lanes), ft = vec_of(g->t_float, lanes);
    LLVMValueRef f;
    if (ff) {
      if (to == GIR_F64) return LLVMBuildFPExt(B, v, dt, "");
      f = from == GIR_F64 ? LLVMBuildFPTrunc(B, v, ft, "") : v;
    } else {
      int sg = gir_dtype_is_signed(from);
      if (to == GIR_F64) return sg ? LLVMBuildSIToFP(B, v, dt, "") : LLVMBuildUIToFP(B, v, dt, "");
      if (gir_dtype_bits(from) == 64) { /* the interpreter goes through double: round twice, as it does */
        LLVMValueRef d = sg ? LLVMBuildSIToFP(B, v, dt, "") : LLVMBuildUIToFP(B, v, dt, "");
        f = LLVMBuildFPTrunc(B, d, ft, "");
      } else {
        f = sg ? LLVMBuildSIToFP(B, v, ft, "") : LLVMBuildUIToFP(B, v, ft, "");
      }
    }
    return round_to(g, to, f, lanes);
  }
  if (to == GIR_BOOL)
    return ff ? LLVMBuildFCmp(B, LLVMRealUNE, v, cfp(g, scalar_of(v), 0, lanes), "")
              : LLVMBuildICmp(B, LLVMIntNE, v, cint(g, scalar_of(v), 0, lanes), "");
  LLVMTypeRef dst = tgt_llvm_reg_type(g, to, lanes);
  if (ff) {
    /* NaN → 0, saturate at the int64 range (uint64: at [0, 2^64)), then wrap to the width */
    LLVMTypeRef over[2] = {vec_of(g->t_i64, lanes), LLVMTypeOf(v)};
    LLVMValueRef i = intrin(g, to == GIR_U64 ? "llvm.fptoui.sat" : "llvm.fptosi.sat", over, 2, &v, 1);
    return gir_dtype_bits(to) == 64 ? i : LLVMBuildTrunc(B, i, dst, "");
  }
  unsigned fw = LLVMGetIntTypeWidth(scalar_of(v)), tw = LLVMGetIntTypeWidth(scalar_type(dst));
  if (fw == tw) return v;
  if (tw < fw) return LLVMBuildTrunc(B, v, dst, "");
  return gir_dtype_is_signed(from) ? LLVMBuildSExt(B, v, dst, "") : LLVMBuildZExt(B, v, dst, "");
}

LLVMValueRef tgt_llvm_int_to(tgt_lcg *g, LLVMValueRef v, LLVMTypeRef to) {
  unsigned fw = LLVMGetIntTypeWidth(LLVMTypeOf(v)), tw = LLVMGetIntTypeWidth(to);
  if (fw == tw) return v;
  return tw < fw ? LLVMBuildTrunc(g->b, v, to, "") : LLVMBuildSExt(g->b, v, to, "");
}

/* --- memory --- */

/* Reinterpretation goes through the memory types (float16 as half, bfloat16 as
 * i16, bool as i8), where both dtypes have the same width. */
static LLVMValueRef bitcast(tgt_lcg *g, gir_dtype from, gir_dtype to, LLVMValueRef v, int lanes) {
  LLVMValueRef m = to_mem(g, from, v, lanes);
  m = LLVMBuildBitCast(g->b, m, vec_of(tgt_llvm_mem_type(g, to), lanes), "");
  return from_mem(g, to, m, lanes);
}

static int is_unit_ramp(const tir_expr *ix) {
  return ix->kind == TIR_RAMP && ix->u.ramp.stride->kind == TIR_INT && ix->u.ramp.stride->u.i == 1;
}

/* &buf[idx]; idx scalar or a vector (then a vector of pointers). */
LLVMValueRef tgt_llvm_elem_ptr(tgt_lcg *g, const tir_buffer *buf, LLVMValueRef idx) {
  LLVMValueRef base = g->bufs[buf->id];
  assert(base && "buffer not bound (checked before emission)");
  return LLVMBuildInBoundsGEP2(g->b, tgt_llvm_mem_type(g, buf->dtype), base, &idx, 1, "");
}

static LLVMValueRef all_true(tgt_lcg *g, int lanes) { return cint(g, g->t_i1, 1, lanes); }

/* A vector index as base + offs[lane]: a scalar base (NULL: 0) and a constant
 * offset per lane, or 0 when the index is not of that form. That is the form of
 * a loop fused from a few pixels and a channel block and vectorized whole
 * (lane = pixel·b + channel: index = (w + lane/b)·s·b + lane%b, the depthwise
 * template's narrow blocks) or of a block repeated across lanes (its weights):
 * such a load becomes one contiguous load of the span and a shuffle, instead of
 * a gather of `lanes` loads. Divisions and remainders must have a constant
 * numerator per lane (base 0) or be the same in every lane. */
static int lane_split(tgt_lcg *g, const tir_expr *e, int n, int64_t *offs, LLVMValueRef *base) {
  *base = NULL;
  if (e->dtype != GIR_I64 && e->dtype != GIR_I32) return 0; /* signed index arithmetic only */
  if (e->kind == TIR_INT) {
    for (int i = 0; i < n; i++) offs[i] = e->u.i;
    return 1;
  }
  if (e->lanes == 1) {
    for (int i = 0; i < n; i++) offs[i] = 0;
    *base = emit(g, e, -1);
    return 1;
  }
  LLVMBuilderRef B = g->b;
  int64_t *o2 = gir_arena_calloc(g->scratch, (size_t)n, sizeof *o2);
  LLVMValueRef b2 = NULL;
  if (!o2) return 0;
  switch (e->kind) {
  case TIR_BROADCAST: return lane_split(g, e->u.bcast.value, n, offs, base);
  case TIR_RAMP: {
    if (e->u.ramp.stride->kind != TIR_INT || !lane_split(g, e->u.ramp.base, n, offs, base)) return 0;
    for (int i = 0; i < n; i++) offs[i] += (int64_t)i * e->u.ramp.stride->u.i;
    return 1;
  }
  case TIR_BINARY: {
    te_binop op = e->u.bin.op;
    if (!lane_split(g, e->u.bin.a, n, offs, base) || !lane_split(g, e->u.bin.b, n, o2, &b2)) return 0;
    int inv_a = 1, inv_b = 1; /* the same offset in every lane */
    for (int i = 1; i < n; i++) inv_a &= offs[i] == offs[0], inv_b &= o2[i] == o2[0];
    if (op == TE_ADD || op == TE_SUB) {
      for (int i = 0; i < n; i++) offs[i] = op == TE_ADD ? offs[i] + o2[i] : offs[i] - o2[i];
      if (b2) *base = !*base ? (op == TE_ADD ? b2 : LLVMBuildNeg(B, b2, "")) : op == TE_ADD ? LLVMBuildAdd(B, *base, b2, "") : LLVMBuildSub(B, *base, b2, "");
      return 1;
    }
    if (op == TE_MUL && ((inv_b && !b2) || (inv_a && !*base))) { /* by a constant */
      int64_t c = inv_b && !b2 ? o2[0] : offs[0];
      LLVMValueRef bv = inv_b && !b2 ? *base : b2;
      const int64_t *ov = inv_b && !b2 ? offs : o2;
      for (int i = 0; i < n; i++) o2[i] = ov[i] * c;
      memcpy(offs, o2, (size_t)n * sizeof *offs);
      *base = bv ? LLVMBuildMul(B, bv, cint(g, LLVMTypeOf(bv), c, 1), "") : NULL;
      return 1;
    }
    if ((op == TE_DIV || op == TE_FLOORDIV || op == TE_MOD || op == TE_FLOORMOD) && !*base && !b2 && inv_b &&
        o2[0] > 0) { /* constant lanes by a positive constant */
      int64_t d = o2[0];
      for (int i = 0; i < n; i++) {
        int64_t q = offs[i] / d, r = offs[i] % d;
        if ((op == TE_FLOORDIV || op == TE_FLOORMOD) && r < 0) q--, r += d;
        offs[i] = op == TE_DIV || op == TE_FLOORDIV ? q : r;
      }
      return 1;
    }
    if (inv_a && inv_b) { /* the same value in every lane: lane 0's, as a scalar */
      *base = emit(g, e, 0);
      for (int i = 0; i < n; i++) offs[i] = 0;
      return 1;
    }
    return 0;
  }
  default: return 0;
  }
}

/* lane_split of a buffer index, which the narrowing pass may have computed in
 * int32 and widened (int64(i32 expression)): the inner expression's split, its base
 * in int32. Every lane's int32 value is exact there, so base + the least offset
 * (a lane's own index) is exact in int32 too, and the GEP sign-extends it. */
static int index_split(tgt_lcg *g, const tir_expr *ix, int n, int64_t *offs, LLVMValueRef *base) {
  if (ix->kind == TIR_CAST && ix->u.cast.a->dtype == GIR_I32 && ix->dtype == GIR_I64) ix = ix->u.cast.a;
  return lane_split(g, ix, n, offs, base);
}

/* &buf[base + off] for lane_split's base (NULL: 0) */
static LLVMValueRef split_ptr(tgt_lcg *g, const tir_buffer *buf, LLVMValueRef base, int64_t off) {
  LLVMTypeRef it = base ? LLVMTypeOf(base) : g->t_i64;
  return tgt_llvm_elem_ptr(g, buf, base ? LLVMBuildAdd(g->b, base, cint(g, it, off, 1), "") : cint(g, it, off, 1));
}

/* buf[base + offs[lane]] (lane_split's form) when the offsets span at most four
 * vectors: the span's used elements in one (masked) contiguous load, then a
 * shuffle into lane order; NULL when the span is wider. */
static LLVMValueRef load_span(tgt_lcg *g, const tir_buffer *buf, LLVMValueRef base, const int64_t *offs, int n) {
  LLVMTypeRef mt = tgt_llvm_mem_type(g, buf->dtype);
  unsigned esz = (unsigned)gir_dtype_size(buf->dtype);
  int64_t lo = offs[0], hi = offs[0];
  for (int i = 1; i < n; i++) lo = offs[i] < lo ? offs[i] : lo, hi = offs[i] > hi ? offs[i] : hi;
  int64_t span = hi - lo + 1;
  if (span > 4 * (int64_t)n || span > 64) return NULL;
  LLVMValueRef ptr = split_ptr(g, buf, base, lo);
  unsigned wide = 1;
  while (wide < (unsigned)span) wide *= 2;
  LLVMValueRef *mask = gir_arena_calloc(g->scratch, wide, sizeof *mask), *pick = gir_arena_calloc(g->scratch, (size_t)n, sizeof *pick);
  char *used = gir_arena_calloc(g->scratch, wide, 1);
  assert(mask && pick && used);
  for (int i = 0; i < n; i++) used[offs[i] - lo] = 1, pick[i] = LLVMConstInt(g->t_i32, (unsigned long long)(offs[i] - lo), 0);
  int all = 1;
  for (unsigned i = 0; i < wide; i++) mask[i] = LLVMConstInt(g->t_i1, used[i], 0), all &= used[i];
  LLVMTypeRef wt = LLVMVectorType(mt, wide);
  LLVMValueRef w;
  if (all) { /* every element of a power-of-two span: a plain load */
    w = LLVMBuildLoad2(g->b, wt, ptr, "");
    LLVMSetAlignment(w, esz);
  } else {
    LLVMTypeRef over[2] = {wt, LLVMTypeOf(ptr)};
    LLVMValueRef args[4] = {ptr, LLVMConstInt(g->t_i32, esz, 0), LLVMConstVector(mask, wide), LLVMGetPoison(wt)};
    w = intrin(g, "llvm.masked.load", over, 2, args, 4);
  }
  if (wide == (unsigned)n && (int64_t)n == span) {
    int same = 1;
    for (int i = 0; i < n; i++) same &= offs[i] - lo == i;
    if (same) return w;
  }
  return LLVMBuildShuffleVector(g->b, w, LLVMGetPoison(wt), LLVMConstVector(pick, (unsigned)n), "");
}

/* A load that shares a window (llvm_window.c): the window's masked load — the same
 * address, mask and condition for every member, which LLVM's CSE merges — and a
 * shuffle of the load's n lanes out of it. A lane the load does not read (its
 * condition's constant part is off there) picks element 0: the caller's select drops it. */
static LLVMValueRef window_load(tgt_lcg *g, const tgt_llvm_win *w, int n) {
  const tir_buffer *buf = w->load->u.load.buf;
  LLVMTypeRef mt = tgt_llvm_mem_type(g, buf->dtype);
  LLVMValueRef *mask = gir_arena_calloc(g->scratch, (size_t)w->wide, sizeof *mask),
               *pick = gir_arena_calloc(g->scratch, (size_t)n, sizeof *pick);
  assert(mask && pick);
  for (int32_t j = 0; j < w->wide; j++) mask[j] = LLVMConstInt(g->t_i1, (unsigned long long)w->mask[j], 0);
  for (int i = 0; i < n; i++) {
    int64_t el = w->off + (int64_t)w->k * i;
    pick[i] = lane_ix(g, el >= 0 && el < w->wide ? (int)el : 0);
  }
  LLVMValueRef m = LLVMConstVector(mask, (unsigned)w->wide);
  if (w->u) m = LLVMBuildAnd(g->b, m, splat(g, emit(g, w->u, -1), w->wide), "");
  LLVMTypeRef wt = LLVMVectorType(mt, (unsigned)w->wide);
  LLVMValueRef ptr = tgt_llvm_elem_ptr(g, buf, emit(g, w->at, -1));
  LLVMTypeRef over[2] = {wt, LLVMTypeOf(ptr)};
  LLVMValueRef args[4] = {ptr, LLVMConstInt(g->t_i32, gir_dtype_size(buf->dtype), 0), m, LLVMGetPoison(wt)};
  LLVMValueRef v = intrin(g, "llvm.masked.load", over, 2, args, 4);
  return LLVMBuildShuffleVector(g->b, v, LLVMGetPoison(wt), LLVMConstVector(pick, (unsigned)n), "");
}

/* buf[idx] in its memory type (raw: float16 as half, bfloat16 as i16), or converted
 * to its register type (from_mem). */
static LLVMValueRef load_as(tgt_lcg *g, const tir_expr *e, int lane, int raw) {
  const tir_buffer *buf = e->u.load.buf;
  const tir_expr *ix = e->u.load.index;
  LLVMTypeRef mt = tgt_llvm_mem_type(g, buf->dtype);
  unsigned esz = (unsigned)gir_dtype_size(buf->dtype);
  LLVMValueRef v;
  if (lane >= 0 || e->lanes == 1) {
    v = LLVMBuildLoad2(g->b, mt, tgt_llvm_elem_ptr(g, buf, emit(g, ix, lane)), "");
    LLVMSetAlignment(v, esz);
    return raw ? v : from_mem(g, buf->dtype, v, 1);
  }
  int n = e->lanes;
  LLVMTypeRef vt = LLVMVectorType(mt, (unsigned)n);
  const tgt_llvm_win *win = tgt_llvm_find_window(g, e);
  if (win) {
    v = window_load(g, win, n);
  } else if (is_unit_ramp(ix)) {
    v = LLVMBuildLoad2(g->b, vt, tgt_llvm_elem_ptr(g, buf, emit(g, ix->u.ramp.base, -1)), "");
    LLVMSetAlignment(v, esz);
  } else if (ix->kind == TIR_BROADCAST) {
    v = LLVMBuildLoad2(g->b, mt, tgt_llvm_elem_ptr(g, buf, emit(g, ix->u.bcast.value, -1)), "");
    LLVMSetAlignment(v, esz);
    v = splat(g, v, n);
  } else if (ix->kind == TIR_RAMP && ix->u.ramp.stride->kind == TIR_INT && ix->u.ramp.stride->u.i >= 2 &&
             ix->u.ramp.stride->u.i <= 4 && n * ix->u.ramp.stride->u.i <= 64) {
    /* a small constant stride (a stride-2 pool or conv along a row): one contiguous
     * masked load of the span (nothing read past its last element) and a shuffle
     * picking every k-th lane, instead of a gather of n loads */
    unsigned k = (unsigned)ix->u.ramp.stride->u.i, span = (unsigned)(n - 1) * k + 1, wide = (unsigned)n * k;
    LLVMTypeRef wt = LLVMVectorType(mt, wide);
    LLVMValueRef ptr = tgt_llvm_elem_ptr(g, buf, emit(g, ix->u.ramp.base, -1));
    LLVMValueRef *mask = gir_arena_calloc(g->scratch, wide, sizeof *mask), *pick = gir_arena_calloc(g->scratch, (size_t)n, sizeof *pick);
    for (unsigned i = 0; i < wide; i++) mask[i] = LLVMConstInt(g->t_i1, i < span, 0);
    for (int i = 0; i < n; i++) pick[i] = LLVMConstInt(g->t_i32, (unsigned long long)i * k, 0);
    LLVMTypeRef over[2] = {wt, LLVMTypeOf(ptr)};
    LLVMValueRef args[4] = {ptr, LLVMConstInt(g->t_i32, esz, 0), LLVMConstVector(mask, wide), LLVMGetPoison(wt)};
    LLVMValueRef w = intrin(g, "llvm.masked.load", over, 2, args, 4);
    v = LLVMBuildShuffleVector(g->b, w, LLVMGetPoison(wt), LLVMConstVector(pick, (unsigned)n), "");
  } else {
    int64_t *offs = gir_arena_calloc(g->scratch, (size_t)n, sizeof *offs);
    LLVMValueRef base = NULL;
    assert(offs);
    int split = index_split(g, ix, n, offs, &base);
    if (split && (v = load_span(g, buf, base, offs, n))) return raw ? v : from_mem(g, buf->dtype, v, n);
    if (split && g->strided_loads) {
      /* a scalar base and constant offsets per lane (a relayout's stride-H·W channels):
       * one scalar load per lane at base + its constant, inserted. LLVM scalarizes a
       * gather itself where gathers are slow (AMD Zen; Intel cores with the gather
       * mitigation), but from a vector of 64-bit addresses, three times the
       * instructions: the NCHW -> NCHW8c relayout of 96 x 112 x 112 on Zen 3, 2
       * threads, 0.56 -> 0.20 ms. The base widened once (each lane's base + offset is
       * exact in int32, index_split), so the offsets fold into the loads' addressing */
      if (base && LLVMTypeOf(base) != g->t_i64) base = LLVMBuildSExt(g->b, base, g->t_i64, "");
      v = LLVMGetPoison(vt);
      for (int i = 0; i < n; i++) {
        LLVMValueRef s = LLVMBuildLoad2(g->b, mt, split_ptr(g, buf, base, offs[i]), "");
        LLVMSetAlignment(s, esz);
        v = LLVMBuildInsertElement(g->b, v, s, lane_ix(g, i), "");
      }
      return raw ? v : from_mem(g, buf->dtype, v, n);
    }
    LLVMValueRef ptrs = tgt_llvm_elem_ptr(g, buf, emit(g, ix, -1));
    LLVMTypeRef over[2] = {vt, LLVMTypeOf(ptrs)};
    LLVMValueRef args[4] = {ptrs, LLVMConstInt(g->t_i32, esz, 0), all_true(g, n), LLVMGetPoison(vt)};
    v = intrin(g, "llvm.masked.gather", over, 2, args, 4);
  }
  return raw ? v : from_mem(g, buf->dtype, v, n);
}

static LLVMValueRef load(tgt_lcg *g, const tir_expr *e, int lane) { return load_as(g, e, lane, 0); }

/* llvm.prefetch(ptr, read, locality 2, data): toward L2 (prefetcht1 on x86,
 * PRFM PLDL2KEEP on AArch64); the schedules prefetch data a whole reuse window
 * ahead, which would only crowd L1. Targets without such an instruction drop it. */
void tgt_llvm_prefetch(tgt_lcg *g, const tir_stmt *s) {
  LLVMValueRef p = tgt_llvm_elem_ptr(g, s->u.prefetch.buf, emit(g, s->u.prefetch.index, -1));
  LLVMTypeRef over[1] = {LLVMTypeOf(p)};
  LLVMValueRef args[4] = {p, LLVMConstInt(g->t_i32, 0, 0), LLVMConstInt(g->t_i32, 2, 0), LLVMConstInt(g->t_i32, 1, 0)};
  intrin(g, "llvm.prefetch", over, 1, args, 4);
}

void tgt_llvm_store(tgt_lcg *g, const tir_stmt *s) {
  const tir_buffer *buf = s->u.store.buf;
  const tir_expr *ix = s->u.store.index;
  int n = s->u.store.value->lanes;
  unsigned esz = (unsigned)gir_dtype_size(buf->dtype);
  LLVMValueRef v = to_mem(g, buf->dtype, emit(g, s->u.store.value, -1), n), st;
  if (n == 1) {
    st = LLVMBuildStore(g->b, v, tgt_llvm_elem_ptr(g, buf, emit(g, ix, -1)));
    LLVMSetAlignment(st, esz);
  } else if (is_unit_ramp(ix)) {
    st = LLVMBuildStore(g->b, v, tgt_llvm_elem_ptr(g, buf, emit(g, ix->u.ramp.base, -1)));
    LLVMSetAlignment(st, esz);
  } else { /* scatter: lanes written in order, so the last of equal indices wins */
    int64_t *offs = gir_arena_calloc(g->scratch, (size_t)n, sizeof *offs);
    LLVMValueRef base = NULL;
    int run = offs && index_split(g, ix, n, offs, &base); /* lane i at base + offs[0] + i: a plain store */
    for (int i = 1; run && i < n; i++) run = offs[i] == offs[0] + i;
    if (run) {
      st = LLVMBuildStore(g->b, v, split_ptr(g, buf, base, offs[0]));
      LLVMSetAlignment(st, esz);
      return;
    }
    LLVMValueRef ptrs = tgt_llvm_elem_ptr(g, buf, emit(g, ix, -1));
    LLVMTypeRef over[2] = {LLVMTypeOf(v), LLVMTypeOf(ptrs)};
    LLVMValueRef args[4] = {v, ptrs, LLVMConstInt(g->t_i32, esz, 0), all_true(g, n)};
    intrin(g, "llvm.masked.scatter", over, 2, args, 4);
  }
}

LLVMValueRef tgt_llvm_alloca(tgt_lcg *g, LLVMTypeRef t, unsigned align, const char *name) {
  LLVMBuilderRef ab = LLVMCreateBuilderInContext(g->ctx);
  LLVMPositionBuilderBefore(ab, LLVMGetBasicBlockTerminator(g->entry));
  LLVMValueRef a = LLVMBuildAlloca(ab, t, name);
  LLVMSetAlignment(a, align);
  LLVMDisposeBuilder(ab);
  return a;
}

/* --- lazy selection --- */

static LLVMBasicBlockRef new_block(tgt_lcg *g, const char *name) {
  return LLVMAppendBasicBlockInContext(g->ctx, g->cur, name);
}

/* c ? a : b with a scalar condition, evaluating only the chosen side. */
static LLVMValueRef lazy_pick(tgt_lcg *g, LLVMValueRef c, const tir_expr *a, const tir_expr *b, int lane) {
  LLVMBasicBlockRef bt = new_block(g, "ite.then"), bf = new_block(g, "ite.else"), end = new_block(g, "ite.end");
  LLVMBuildCondBr(g->b, c, bt, bf);
  LLVMPositionBuilderAtEnd(g->b, bt);
  LLVMValueRef va = emit(g, a, lane);
  LLVMBasicBlockRef ea = LLVMGetInsertBlock(g->b);
  LLVMBuildBr(g->b, end);
  LLVMPositionBuilderAtEnd(g->b, bf);
  LLVMValueRef vb = emit(g, b, lane);
  LLVMBasicBlockRef eb = LLVMGetInsertBlock(g->b);
  LLVMBuildBr(g->b, end);
  LLVMPositionBuilderAtEnd(g->b, end);
  LLVMValueRef phi = LLVMBuildPhi(g->b, LLVMTypeOf(va), "");
  LLVMValueRef vals[2] = {va, vb};
  LLVMBasicBlockRef from[2] = {ea, eb};
  LLVMAddIncoming(phi, vals, from, 2);
  return phi;
}

/* c ? buf[ix] : b per lane, as a masked load (NULL where it is not one): the
 * vectorizer's masked-load form (pass_vectorize.c: nothing in ix or b reads
 * memory, so b is safe to compute in every lane), for a buffer whose register and
 * memory types agree. A unit-stride index loads the lanes in place; a stride of 2 to
 * 4 loads the span under the mask spread to every k-th element and picks those;
 * anything else is a masked gather. */
static LLVMValueRef masked_load(tgt_lcg *g, const tir_expr *a, LLVMValueRef cv, const tir_expr *b) {
  const tir_buffer *buf = a->u.load.buf;
  const tir_expr *ix = a->u.load.index;
  if (buf->dtype != GIR_F32 && buf->dtype != GIR_I32 && buf->dtype != GIR_I64 && buf->dtype != GIR_F64) return NULL;
  int n = a->lanes;
  LLVMTypeRef mt = tgt_llvm_mem_type(g, buf->dtype), vt = LLVMVectorType(mt, (unsigned)n);
  LLVMValueRef esz = LLVMConstInt(g->t_i32, gir_dtype_size(buf->dtype), 0), pass = emit(g, b, -1);
  if (LLVMGetTypeKind(LLVMTypeOf(pass)) != LLVMVectorTypeKind) pass = splat(g, pass, n);
  if (is_unit_ramp(ix)) {
    LLVMValueRef ptr = tgt_llvm_elem_ptr(g, buf, emit(g, ix->u.ramp.base, -1));
    LLVMTypeRef over[2] = {vt, LLVMTypeOf(ptr)};
    LLVMValueRef args[4] = {ptr, esz, cv, pass};
    return intrin(g, "llvm.masked.load", over, 2, args, 4);
  }
  if (ix->kind == TIR_RAMP && ix->u.ramp.stride->kind == TIR_INT && ix->u.ramp.stride->u.i >= 2 &&
      ix->u.ramp.stride->u.i <= 4 && n * ix->u.ramp.stride->u.i <= 64) {
    int k = (int)ix->u.ramp.stride->u.i, wide = n * k;
    LLVMTypeRef wt = LLVMVectorType(mt, (unsigned)wide);
    LLVMValueRef *spread = gir_arena_calloc(g->scratch, (size_t)wide, sizeof *spread),
                 *pick = gir_arena_calloc(g->scratch, (size_t)n, sizeof *pick);
    assert(spread && pick);
    for (int j = 0; j < wide; j++) spread[j] = lane_ix(g, j % k ? n : j / k); /* n: a false lane */
    for (int i = 0; i < n; i++) pick[i] = lane_ix(g, i * k);
    LLVMValueRef wm = LLVMBuildShuffleVector(g->b, cv, LLVMConstNull(LLVMTypeOf(cv)), LLVMConstVector(spread, (unsigned)wide), "");
    LLVMValueRef ptr = tgt_llvm_elem_ptr(g, buf, emit(g, ix->u.ramp.base, -1));
    LLVMTypeRef over[2] = {wt, LLVMTypeOf(ptr)};
    LLVMValueRef args[4] = {ptr, esz, wm, LLVMGetPoison(wt)};
    LLVMValueRef w = intrin(g, "llvm.masked.load", over, 2, args, 4);
    w = LLVMBuildShuffleVector(g->b, w, LLVMGetPoison(wt), LLVMConstVector(pick, (unsigned)n), "");
    return LLVMBuildSelect(g->b, cv, w, pass, "");
  }
  LLVMValueRef ptrs = tgt_llvm_elem_ptr(g, buf, emit(g, ix, -1));
  LLVMTypeRef over[2] = {vt, LLVMTypeOf(ptrs)};
  LLVMValueRef args[4] = {ptrs, esz, cv, pass};
  return intrin(g, "llvm.masked.gather", over, 2, args, 4);
}

static LLVMValueRef if_then_else(tgt_lcg *g, const tir_expr *e, int lane) {
  const tir_expr *c = e->u.sel.c, *a = e->u.sel.a, *b = e->u.sel.b;
  const tgt_llvm_win *win = lane < 0 && a->kind == TIR_LOAD ? tgt_llvm_find_window(g, a) : NULL;
  if (win) { /* a masked load through its window: what the condition leaves out, b */
    LLVMValueRef cv = emit(g, c, -1), pass = emit(g, b, -1), v = window_load(g, win, e->lanes);
    if (c->lanes == 1) cv = splat(g, cv, e->lanes);
    if (LLVMGetTypeKind(LLVMTypeOf(pass)) != LLVMVectorTypeKind) pass = splat(g, pass, e->lanes);
    return LLVMBuildSelect(g->b, cv, v, pass, "");
  }
  if (lane >= 0 || c->lanes == 1) return lazy_pick(g, emit(g, c, lane), a, b, lane);
  int n = e->lanes;
  LLVMValueRef cv = emit(g, c, -1);
  if (a->kind == TIR_LOAD && a->lanes == n && !tir_expr_reads_memory(a->u.load.index) && !tir_expr_reads_memory(b)) {
    LLVMValueRef m = masked_load(g, a, cv, b);
    if (m) return m;
  }
  LLVMValueRef all = intrin1(g, "llvm.vector.reduce.and", cv), any = intrin1(g, "llvm.vector.reduce.or", cv);
  LLVMBasicBlockRef b_all = new_block(g, "ite.all"), b_rest = new_block(g, "ite.rest"),
                    b_none = new_block(g, "ite.none"), b_mixed = new_block(g, "ite.mixed"),
                    end = new_block(g, "ite.end");
  LLVMBuildCondBr(g->b, all, b_all, b_rest);
  LLVMPositionBuilderAtEnd(g->b, b_rest);
  LLVMBuildCondBr(g->b, any, b_mixed, b_none);

  LLVMValueRef vals[3];
  LLVMBasicBlockRef from[3];
  LLVMPositionBuilderAtEnd(g->b, b_all);
  vals[0] = emit(g, a, -1);
  from[0] = LLVMGetInsertBlock(g->b);
  LLVMBuildBr(g->b, end);

  LLVMPositionBuilderAtEnd(g->b, b_none);
  vals[1] = emit(g, b, -1);
  from[1] = LLVMGetInsertBlock(g->b);
  LLVMBuildBr(g->b, end);

  LLVMPositionBuilderAtEnd(g->b, b_mixed);
  LLVMValueRef r = LLVMGetPoison(LLVMTypeOf(vals[0]));
  for (int k = 0; k < n; k++) {
    LLVMValueRef ck = LLVMBuildExtractElement(g->b, cv, lane_ix(g, k), "");
    r = LLVMBuildInsertElement(g->b, r, lazy_pick(g, ck, a, b, k), lane_ix(g, k), "");
  }
  vals[2] = r;
  from[2] = LLVMGetInsertBlock(g->b);
  LLVMBuildBr(g->b, end);

  LLVMPositionBuilderAtEnd(g->b, end);
  LLVMValueRef phi = LLVMBuildPhi(g->b, LLVMTypeOf(vals[0]), "");
  LLVMAddIncoming(phi, vals, from, 3);
  return phi;
}

/* --- expressions --- */

static LLVMValueRef ramp(tgt_lcg *g, const tir_expr *e, int lane) {
  LLVMBuilderRef B = g->b;
  LLVMValueRef base = emit(g, e->u.ramp.base, -1), stride = emit(g, e->u.ramp.stride, -1);
  LLVMTypeRef st = LLVMTypeOf(base);
  int fl = gir_dtype_is_float(e->dtype);
  if (lane >= 0) {
    LLVMValueRef k = fl ? LLVMConstReal(st, lane) : cint(g, st, lane, 1);
    return fl ? LLVMBuildFAdd(B, base, LLVMBuildFMul(B, stride, k, ""), "")
              : LLVMBuildAdd(B, base, LLVMBuildMul(B, stride, k, ""), "");
  }
  int n = e->lanes;
  LLVMValueRef *steps = gir_arena_calloc(g->scratch, (size_t)n, sizeof *steps);
  assert(steps);
  for (int k = 0; k < n; k++) steps[k] = fl ? LLVMConstReal(st, k) : cint(g, st, k, 1);
  LLVMValueRef iota = LLVMConstVector(steps, (unsigned)n);
  if (fl) return LLVMBuildFAdd(B, splat(g, base, n), LLVMBuildFMul(B, splat(g, stride, n), iota, ""), "");
  return LLVMBuildAdd(B, splat(g, base, n), LLVMBuildMul(B, splat(g, stride, n), iota, ""), "");
}

/* --- dot4 --- */

/* shufflevector(x, y or poison, ix[0..n)); a negative index is a poison lane */
LLVMValueRef tgt_llvm_shuffle(tgt_lcg *g, LLVMValueRef x, LLVMValueRef y, const int *ix, int n) {
  LLVMValueRef *m = gir_arena_calloc(g->scratch, (size_t)n, sizeof *m);
  assert(m);
  for (int k = 0; k < n; k++) m[k] = ix[k] < 0 ? LLVMGetPoison(g->t_i32) : lane_ix(g, ix[k]);
  return LLVMBuildShuffleVector(g->b, x, y ? y : LLVMGetPoison(LLVMTypeOf(x)), LLVMConstVector(m, (unsigned)n), "");
}

static int *lane_map(tgt_lcg *g, int n) {
  int *ix = gir_arena_calloc(g->scratch, (size_t)n, sizeof *ix);
  assert(ix);
  return ix;
}

/* An 8-bit value (scalar or vector) extended to i32 lanes as its dtype says. */
static LLVMValueRef ext8(tgt_lcg *g, LLVMValueRef v, gir_dtype t, int lanes) {
  LLVMTypeRef to = vec_of(g->t_i32, lanes);
  return t == GIR_U8 ? LLVMBuildZExt(g->b, v, to, "") : LLVMBuildSExt(g->b, v, to, "");
}

/* Lanes [pos, pos + w) of the <n x i32> vector v (all of it when w == n). */
static LLVMValueRef chunk(tgt_lcg *g, LLVMValueRef v, int n, int pos, int w) {
  if (w == n) return v;
  int *ix = lane_map(g, w);
  for (int k = 0; k < w; k++) ix[k] = pos + k;
  return tgt_llvm_shuffle(g, v, NULL, ix, w);
}

/* An 8-bit operand of 4L lanes, or of 4 lanes standing for every group, as the
 * i32 words of lanes [pos, pos + w) of the result: four bytes per word. */
static LLVMValueRef words(tgt_lcg *g, LLVMValueRef v, int v_lanes, int L, int pos, int w) {
  if (v_lanes == 4) return splat(g, LLVMBuildBitCast(g->b, v, g->t_i32, ""), w);
  return chunk(g, LLVMBuildBitCast(g->b, v, LLVMVectorType(g->t_i32, (unsigned)L), ""), L, pos, w);
}

/* The instructions dot4 can use for a chunk of w lanes. */
typedef enum dot_form {
  DOT_GENERIC,  /* none: generic IR */
  DOT_VPDPBUSD, /* x86: u8·s8 */
  DOT_SDOT,     /* aarch64: s8·s8 */
  DOT_UDOT,     /* aarch64: u8·u8 */
  DOT_USDOT,    /* aarch64 +i8mm: u8·s8 */
  DOT_SDOT_FLIP /* aarch64 without i8mm: u8·s8 as SDOT of (u ^ 0x80)·s, plus 128·Σs */
} dot_form;

/* The instruction and the chunk width it computes an L-lane dot4 of these operand
 * types in; the width is 0 (and the form generic) when none can. */
static int dot_width(const tgt_lcg *g, gir_dtype ta, gir_dtype tb, int L, dot_form *form) {
  *form = DOT_GENERIC;
  if (g->neon_dot && L % 2 == 0) {
    *form = ta != tb ? (g->neon_usdot ? DOT_USDOT : DOT_SDOT_FLIP) : ta == GIR_U8 ? DOT_UDOT : DOT_SDOT;
    return L % 4 == 0 ? 4 : 2; /* <4 x i32> += <16 x i8>·<16 x i8>, or the 64-bit <2 x i32> form */
  }
  if (ta == tb) return 0; /* u8·u8 and s8·s8 are not what VPDPBUSD multiplies */
  *form = DOT_VPDPBUSD;
  if (g->vnni512 && L % 16 == 0) return 16;
  if (g->vnni256 && L % 8 == 0) return 8;
  if (g->vnni256 && L % 4 == 0) return 4;
  *form = DOT_GENERIC;
  return 0;
}

/* llvm.aarch64.neon.{s,u,us}dot: <w x i32> acc plus the dot products of the bytes
 * of the i32 words x and y (w of each). */
static LLVMValueRef neon_dot(tgt_lcg *g, const char *name, LLVMValueRef acc, LLVMValueRef x, LLVMValueRef y, int w) {
  LLVMTypeRef bytes = LLVMVectorType(g->t_i8, (unsigned)(4 * w));
  LLVMTypeRef over[2] = {LLVMVectorType(g->t_i32, (unsigned)w), bytes};
  LLVMValueRef args[3] = {acc, LLVMBuildBitCast(g->b, x, bytes, ""), LLVMBuildBitCast(g->b, y, bytes, "")};
  return intrin(g, name, over, 2, args, 3);
}

/* One chunk: acc (w lanes) plus the dot products of the words u and s; for the
 * mixed-sign forms u holds the unsigned operand, s the signed one. */
static LLVMValueRef dot_chunk(tgt_lcg *g, dot_form form, LLVMValueRef acc, LLVMValueRef u, LLVMValueRef s, int w) {
  switch (form) {
  case DOT_VPDPBUSD: {
    const char *name = w == 16 ? "llvm.x86.avx512.vpdpbusd.512" : w == 8 ? "llvm.x86.avx512.vpdpbusd.256"
                                                                          : "llvm.x86.avx512.vpdpbusd.128";
    LLVMValueRef args[3] = {acc, u, s};
    return intrin(g, name, NULL, 0, args, 3);
  }
  case DOT_SDOT: return neon_dot(g, "llvm.aarch64.neon.sdot", acc, u, s, w);
  case DOT_UDOT: return neon_dot(g, "llvm.aarch64.neon.udot", acc, u, s, w);
  case DOT_USDOT: return neon_dot(g, "llvm.aarch64.neon.usdot", acc, u, s, w);
  case DOT_SDOT_FLIP: {
    /* u = (u ^ 0x80) + 128 byte by byte, so Σ u·s = Σ (u ^ 0x80)·s + 128·Σ s, and
     * 128·Σ s = -SDOT(0, s, -128) (-128 is a byte; +128 is not) */
    LLVMValueRef m80 = splat(g, LLVMConstInt(g->t_i32, 0x80808080u, 0), w);
    LLVMValueRef r = neon_dot(g, "llvm.aarch64.neon.sdot", acc, LLVMBuildXor(g->b, u, m80, ""), s, w);
    LLVMValueRef c = neon_dot(g, "llvm.aarch64.neon.sdot", LLVMConstNull(LLVMTypeOf(acc)), s, m80, w);
    return LLVMBuildSub(g->b, r, c, "");
  }
  case DOT_GENERIC: break;
  }
  assert(!"dot_chunk: no instruction");
  return acc;
}

static LLVMValueRef dot4(tgt_lcg *g, const tir_expr *e, int lane) {
  const tir_expr *ea = e->u.dot4.a, *eb = e->u.dot4.b;
  gir_dtype ta = ea->dtype, tb = eb->dtype;
  LLVMBuilderRef B = g->b;
  int L = e->lanes;
  if (lane >= 0 || L == 1) { /* one lane: four scalar products */
    int l = lane >= 0 ? lane : 0;
    LLVMValueRef r = emit(g, e->u.dot4.acc, lane);
    LLVMValueRef av = lane < 0 ? emit(g, ea, -1) : NULL, bv = lane < 0 ? emit(g, eb, -1) : NULL;
    for (int j = 0; j < 4; j++) {
      int ia = ea->lanes == 4 ? j : 4 * l + j, ib = 4 * l + j;
      LLVMValueRef x = av ? LLVMBuildExtractElement(B, av, lane_ix(g, ia), "") : emit(g, ea, ia);
      LLVMValueRef y = bv ? LLVMBuildExtractElement(B, bv, lane_ix(g, ib), "") : emit(g, eb, ib);
      r = LLVMBuildAdd(B, r, LLVMBuildMul(B, ext8(g, x, ta, 1), ext8(g, y, tb, 1), ""), "");
    }
    return r;
  }
  LLVMValueRef acc = emit(g, e->u.dot4.acc, -1), av = emit(g, ea, -1), bv = emit(g, eb, -1);
  dot_form form;
  int n = 4 * L, w = dot_width(g, ta, tb, L, &form);
  if (w) {
    int a_first = ta == GIR_U8; /* the unsigned operand goes first (the same-sign forms do not mind) */
    LLVMValueRef r = NULL;
    for (int pos = 0; pos < L; pos += w) {
      LLVMValueRef wa = words(g, av, ea->lanes, L, pos, w), wb = words(g, bv, eb->lanes, L, pos, w);
      LLVMValueRef c = dot_chunk(g, form, chunk(g, acc, L, pos, w), a_first ? wa : wb, a_first ? wb : wa, w);
      if (w == L) return c;
      int *ix = lane_map(g, L); /* c widened to L lanes (repeated) */
      for (int k = 0; k < L; k++) ix[k] = k % w;
      c = tgt_llvm_shuffle(g, c, NULL, ix, L);
      if (!r) {
        r = c;
        continue;
      }
      for (int k = 0; k < L; k++) ix[k] = k >= pos && k < pos + w ? L + (k - pos) : k; /* lanes [pos, pos+w) from c */
      r = tgt_llvm_shuffle(g, r, c, ix, L);
    }
    return r;
  }
  if (ea->lanes == 4) { /* the 4 bytes repeated for every group */
    int *ix = lane_map(g, n);
    for (int k = 0; k < n; k++) ix[k] = k % 4;
    av = tgt_llvm_shuffle(g, av, NULL, ix, n);
  }
  LLVMValueRef p = LLVMBuildMul(B, ext8(g, av, ta, n), ext8(g, bv, tb, n), "");
  LLVMValueRef r = acc;
  for (int j = 0; j < 4; j++) {
    int *ix = lane_map(g, L);
    for (int k = 0; k < L; k++) ix[k] = 4 * k + j;
    r = LLVMBuildAdd(B, r, tgt_llvm_shuffle(g, p, NULL, ix, L), "");
  }
  return r;
}

static LLVMValueRef emit(tgt_lcg *g, const tir_expr *e, int lane) {
  if (e->lanes == 1) lane = -1;
  int lanes = lane >= 0 ? 1 : e->lanes;
  switch (e->kind) {
  case TIR_INT:
    if (gir_dtype_is_float(e->dtype))
      return LLVMConstReal(tgt_llvm_reg_type(g, e->dtype, 1), round_const(e->dtype, (double)e->u.i));
    return cint(g, tgt_llvm_reg_type(g, e->dtype, 1), e->u.i, 1);
  case TIR_FLOAT:
    assert(gir_dtype_is_float(e->dtype));
    return LLVMConstReal(tgt_llvm_reg_type(g, e->dtype, 1), round_const(e->dtype, e->u.f));
  case TIR_VAR: {
    LLVMValueRef v = g->vars[e->u.var->id];
    assert(v && "variable out of scope (checked before emission)");
    return v;
  }
  case TIR_LOAD: return load(g, e, lane);
  case TIR_UNARY:
    if (e->u.un.op == TE_EXP && nonpositive(e->u.un.a) && e->u.un.a->dtype == GIR_F32 && lanes > 1 && lanes <= 64)
      return tgt_llvm_vexpf_nonpos(g, emit(g, e->u.un.a, lane), lanes);
    return unary(g, e->u.un.op, e->u.un.a->dtype, emit(g, e->u.un.a, lane), lanes);
  case TIR_BINARY: {
    gir_dtype t = e->u.bin.a->dtype;
    LLVMValueRef a = emit(g, e->u.bin.a, lane), b = emit(g, e->u.bin.b, lane);
    return gir_dtype_is_float(t) ? fbin(g, e->u.bin.op, t, a, b, lanes) : ibin(g, e->u.bin.op, t, a, b, lanes);
  }
  case TIR_SELECT: {
    LLVMValueRef c = emit(g, e->u.sel.c, lane), a = emit(g, e->u.sel.a, lane), b = emit(g, e->u.sel.b, lane);
    return LLVMBuildSelect(g->b, c, a, b, "");
  }
  case TIR_IF_THEN_ELSE: return if_then_else(g, e, lane);
  case TIR_CAST: {
    /* a float clamped into the int32 range (a quantized model's requantization:
     * min(max(round(x), 0), 255)) converts through int32: the same result as the
     * int64 saturation below, at one instruction per vector instead of per lane */
    double lo, hi;
    gir_dtype from = e->u.cast.a->dtype;
    if (gir_dtype_is_float(from) && from != GIR_F64 && gir_dtype_is_int(e->dtype) && gir_dtype_bits(e->dtype) <= 32 &&
        (float_range(e->u.cast.a, &lo, &hi), lo >= -2147483648.0 && hi <= 2147483647.0)) {
      LLVMValueRef v = emit(g, e->u.cast.a, lane);
      if (from != GIR_F32) v = LLVMBuildFPExt(g->b, v, vec_of(LLVMFloatTypeInContext(g->ctx), lanes), "");
      /* NaN → 0 first (as through int64), then a plain conversion: in range, it is exact
       * (llvm.fptosi.sat on vectors is scalarized on x86) */
      LLVMValueRef zero = cfp(g, LLVMFloatTypeInContext(g->ctx), 0, lanes);
      v = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, v, v, ""), zero, v, "");
      LLVMValueRef i = LLVMBuildFPToSI(g->b, v, vec_of(g->t_i32, lanes), "");
      LLVMTypeRef dst = tgt_llvm_reg_type(g, e->dtype, lanes);
      return gir_dtype_bits(e->dtype) == 32 ? i : LLVMBuildTrunc(g->b, i, dst, "");
    }
    return cast(g, from, e->dtype, emit(g, e->u.cast.a, lane), lanes);
  }
  case TIR_BITCAST:
    /* the bits of a loaded value straight from memory: a float16 or bfloat16 loaded
     * into a float register and converted back may come out quieted (a signaling NaN's
     * quiet bit set), where BitCast must keep every bit */
    if (e->u.cast.a->kind == TIR_LOAD) {
      LLVMValueRef m = load_as(g, e->u.cast.a, lane, 1);
      m = LLVMBuildBitCast(g->b, m, vec_of(tgt_llvm_mem_type(g, e->dtype), lanes), "");
      return from_mem(g, e->dtype, m, lanes);
    }
    return bitcast(g, e->u.cast.a->dtype, e->dtype, emit(g, e->u.cast.a, lane), lanes);
  case TIR_RAMP: return ramp(g, e, lane);
  case TIR_BROADCAST: {
    LLVMValueRef v = emit(g, e->u.bcast.value, -1);
    return lane >= 0 ? v : splat(g, v, e->lanes);
  }
  case TIR_DOT4: return dot4(g, e, lane);
  case TIR_SHUFFLE: /* scalar, GPU code only (the checker saw to both) */
    return g->gpu->shuffle(g, e->u.shfl.mode, emit(g, e->u.shfl.value, -1), e->dtype, e->u.shfl.offset);
  default: assert(!"unknown expression kind"); return NULL;
  }
}

LLVMValueRef tgt_llvm_expr(tgt_lcg *g, const tir_expr *e) { return emit(g, e, -1); }
