/* attention.h — the building blocks of the attention decompositions in
 * ops_attention.c (the ONNX ops) that ONNX Runtime's com.microsoft attention ops
 * (ops_contrib_attn.c) reuse rather than repeat. Each returns NULL with c->err set
 * on failure and passes a NULL operand through as NULL. */
#ifndef IMP_ATTENTION_H
#define IMP_ATTENTION_H
#include "ctx.h"

/* iota of shape dims, counting from start along axis, of type to. */
gir_value *imp_attn_iota(imp_ctx *c, int32_t rank, const int64_t *dims, int axis, gir_dtype to, double start);
/* [B, S, H*D] → [B, H, S, D]; what names the operand in the error when H does not divide. */
gir_value *imp_attn_split_heads(imp_ctx *c, gir_value *x, int64_t heads, const char *what);
/* [B, H, S, D] → [B, S, H*D]. */
gir_value *imp_attn_merge_heads(imp_ctx *c, gir_value *x);
/* a [B, Hq, M, K] @ b [B, Hkv, K, N], Hq = Hkv * rep: a group's query heads share b. */
gir_value *imp_attn_grouped_matmul(imp_ctx *c, gir_value *a, gir_value *b, int64_t rep);
/* x [B, S, H, D] with its first rd features per head rotated (rd 0: all of D), the
 * halves split (interleaved 0) or the even/odd pairs (1); cos/sin [B|1, S|1, rd/2],
 * or 2-D tables gathered at pos [B|1, S] when pos is given. */
gir_value *imp_rotary(imp_ctx *c, gir_value *x, gir_value *cosc, gir_value *sinc, gir_value *pos, int64_t rd,
                      int interleaved);

#endif
