/* baseline.c — the convs and GEMMs of a model, timed one by one with cuDNN and cuBLAS.
 *
 * The vendor-library baseline of kiln's GPU benchmark (issue 20): bench/cuda/layers.py lists
 * every distinct Conv and MatMul/Gemm shape of a model at a batch size; this program runs each
 * with cuDNN (NCHW float32, algorithm chosen by cudnnFindConvolutionForwardAlgorithm) or cuBLAS
 * (cublasSgemm / cublasSgemmStridedBatched, row-major mapped onto column-major), times it with
 * CUDA events (warm-up, then the median of --repeat runs), multiplies by the shape's count and
 * sums per model. Two math variants: "fp32" (strict: CUDNN_FMA_MATH, CUBLAS_DEFAULT_MATH, no
 * tensor cores) and "tf32" (CUDNN_TENSOR_OP_MATH, CUBLAS_TF32_TENSOR_OP_MATH).
 *
 * The sum is a lower bound for a framework, not a model latency: element-wise ops, pooling,
 * softmax, layer norms, transposes and launch gaps between layers are not run; each layer runs
 * back to back with itself, so its operands sit warm in L2.
 *
 * Usage: baseline [--math fp32|tf32|both] [--warmup N] [--repeat N] [--heuristic]
 *                 [--json FILE] [--check] LAYERS.json...    (--check: parse the lists only)
 * Exit status: 0 ok, 1 a CUDA/cuDNN/cuBLAS call failed or bad input, 2 no usable CUDA device.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_note =
    "conv+gemm time only: a lower bound for a framework (no element-wise, pooling, softmax, "
    "normalisation or transpose ops, no gaps between layers; each layer timed alone, L2-warm)";

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "baseline: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(code);
}

#define CU(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess)                                                                    \
            die(1, "%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, cudaGetErrorString(e_),       \
                cudaGetErrorName(e_));                                                            \
    } while (0)
#define DNN(call)                                                                                 \
    do {                                                                                          \
        cudnnStatus_t s_ = (call);                                                                \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                           \
            die(1, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudnnGetErrorString(s_));          \
    } while (0)
#define BLAS(call)                                                                                \
    do {                                                                                          \
        cublasStatus_t s_ = (call);                                                               \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                          \
            die(1, "%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, cublasGetStatusString(s_),    \
                cublasGetStatusName(s_));                                                         \
    } while (0)

enum { MATH_FP32 = 0, MATH_TF32 = 1 };
static const char *math_name[] = {"fp32", "tf32"};

static const char *algo_name(int a)
{
    static const char *names[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                  "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < (int)(sizeof names / sizeof names[0]) ? names[a] : "?";
}

static const char *cudnn_math_name(cudnnMathType_t m)
{
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "DEFAULT";
    case CUDNN_TENSOR_OP_MATH: return "TENSOR_OP";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "TENSOR_OP_CONV";
    case CUDNN_FMA_MATH: return "FMA";
    }
    return "?";
}

typedef struct {
    int warmup, repeat, heuristic;
    FILE *json;
} Options;

typedef struct {
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cudaEvent_t *ev; /* 2 * repeat */
    float *times;
    float *host; /* scratch for uploads */
    size_t host_len;
} Ctx;

/* ---- small helpers ---- */

static int jint(const cJSON *o, const char *key, const char *what)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) die(1, "%s: field \"%s\" missing or not a number", what, key);
    return v->valueint;
}

static double jnum(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static int jbool(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsTrue(v);
}

static void jints(const cJSON *o, const char *key, int *out, int n, const char *what)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n)
        die(1, "%s: field \"%s\" missing or not an array of %d", what, key, n);
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(v)) die(1, "%s: \"%s\"[%d] not a number", what, key, i);
        out[i] = v->valueint;
    }
}

/* A device buffer of n floats filled with seeded values in [-scale, scale). */
static float *dev_random(Ctx *c, size_t n, float scale, uint64_t seed)
{
    float *d = NULL;
    CU(cudaMalloc((void **)&d, n * sizeof(float) + 16));
    if (n > c->host_len) {
        free(c->host);
        c->host = malloc(n * sizeof(float));
        if (!c->host) die(1, "out of host memory (%zu floats)", n);
        c->host_len = n;
    }
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        c->host[i] = scale * ((float)(s >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
    }
    CU(cudaMemcpy(d, c->host, n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* ---- timing: warm-up, then repeat runs each between two events; the median in µs ---- */

typedef void (*RunFn)(Ctx *c, void *arg);

static double time_median_us(Ctx *c, const Options *o, RunFn fn, void *arg)
{
    for (int i = 0; i < o->warmup; i++) fn(c, arg);
    CU(cudaGetLastError());
    for (int i = 0; i < o->repeat; i++) {
        CU(cudaEventRecord(c->ev[2 * i], c->stream));
        fn(c, arg);
        CU(cudaEventRecord(c->ev[2 * i + 1], c->stream));
    }
    CU(cudaStreamSynchronize(c->stream));
    CU(cudaGetLastError());
    for (int i = 0; i < o->repeat; i++) {
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, c->ev[2 * i], c->ev[2 * i + 1]));
        c->times[i] = ms;
    }
    qsort(c->times, (size_t)o->repeat, sizeof(float), cmp_float);
    double med = o->repeat % 2 ? c->times[o->repeat / 2]
                               : 0.5 * (c->times[o->repeat / 2 - 1] + c->times[o->repeat / 2]);
    return med * 1000.0;
}

/* ---- convolution ---- */

enum { EPI_NONE, EPI_BIAS, EPI_FUSED, EPI_SEPARATE };
static const char *epi_name[] = {"none", "bias", "fused", "separate"};

typedef struct {
    cudnnTensorDescriptor_t x, y, b;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnActivationDescriptor_t act;
    cudnnConvolutionFwdAlgo_t algo;
    float *dx, *dw, *dy, *db;
    void *ws;
    size_t ws_size;
    int bias, act_kind; /* act_kind: 0 none, 1 relu, 2 clip */
    int epi;
} Conv;

static void run_conv_only(Ctx *c, void *arg)
{
    Conv *v = arg;
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnConvolutionForward(c->dnn, &one, v->x, v->dx, v->w, v->dw, v->conv, v->algo, v->ws,
                                v->ws_size, &zero, v->y, v->dy));
}

static cudnnStatus_t conv_fused(Ctx *c, Conv *v)
{
    const float one = 1.0f, zero = 0.0f;
    return cudnnConvolutionBiasActivationForward(c->dnn, &one, v->x, v->dx, v->w, v->dw, v->conv,
                                                 v->algo, v->ws, v->ws_size, &zero, v->y, v->dy,
                                                 v->b, v->db, v->act, v->y, v->dy);
}

static void run_conv_layer(Ctx *c, void *arg)
{
    Conv *v = arg;
    const float one = 1.0f, zero = 0.0f;
    if (v->epi == EPI_FUSED) {
        DNN(conv_fused(c, v));
        return;
    }
    run_conv_only(c, arg);
    if (v->bias && (v->epi == EPI_BIAS || v->epi == EPI_SEPARATE))
        DNN(cudnnAddTensor(c->dnn, &one, v->b, v->db, &one, v->y, v->dy));
    if (v->epi == EPI_SEPARATE)
        DNN(cudnnActivationForward(c->dnn, v->act, &one, v->y, v->dy, &zero, v->y, v->dy));
}

/* The first (fastest) successful result: for strict fp32 one with CUDNN_FMA_MATH if there is
   one, else any (the fp32 run also sets NVIDIA_TF32_OVERRIDE=0, which keeps TF32 out). */
static int pick_algo(const cudnnConvolutionFwdAlgoPerf_t *perf, int got, int math)
{
    for (int pass = math == MATH_FP32 ? 0 : 1; pass < 2; pass++)
        for (int i = 0; i < got; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && (pass == 1 || perf[i].mathType == CUDNN_FMA_MATH))
                return i;
    return -1;
}

typedef struct {
    char shape[160];
    char algo[64];
    double flops, conv_us, layer_us;
    int count;
    const char *op, *epi;
    size_t ws;
} Row;

static void conv_layer(Ctx *c, const Options *o, const cJSON *L, int math, int idx, Row *row)
{
    char what[48];
    snprintf(what, sizeof what, "layer %d (conv)", idx);
    int N = jint(L, "N", what), C = jint(L, "C", what), H = jint(L, "H", what), W = jint(L, "W", what);
    int M = jint(L, "M", what), kh = jint(L, "kh", what), kw = jint(L, "kw", what);
    int G = jint(L, "group", what), OH = jint(L, "OH", what), OW = jint(L, "OW", what);
    int st[2], pd[4], dl[2];
    jints(L, "strides", st, 2, what);
    jints(L, "pads", pd, 4, what);
    jints(L, "dilations", dl, 2, what);
    if (G <= 0 || C % G || M % G) die(1, "%s: group %d does not divide C %d and M %d", what, G, C, M);
    /* cuDNN pads symmetrically; an extra end pad is the same as a taller/wider input */
    if (pd[2] < pd[0] || pd[3] < pd[1])
        die(1, "%s: pads %d,%d,%d,%d: begin pad larger than end pad not handled", what, pd[0], pd[1],
            pd[2], pd[3]);
    int Hp = H + pd[2] - pd[0], Wp = W + pd[3] - pd[1];
    const char *act = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(L, "act"));
    Conv v;
    memset(&v, 0, sizeof v);
    v.bias = jbool(L, "has_bias") || jbool(L, "bn");
    v.act_kind = !act || !strcmp(act, "none") ? 0 : !strcmp(act, "relu") ? 1 : !strcmp(act, "clip") ? 2 : -1;
    if (v.act_kind < 0) die(1, "%s: unknown act \"%s\"", what, act);
    double clip_hi = 6.0;
    const cJSON *clip = cJSON_GetObjectItemCaseSensitive(L, "clip");
    if (v.act_kind == 2 && cJSON_IsArray(clip) && cJSON_IsNumber(cJSON_GetArrayItem(clip, 1)))
        clip_hi = cJSON_GetArrayItem(clip, 1)->valuedouble;

    DNN(cudnnCreateTensorDescriptor(&v.x));
    DNN(cudnnCreateTensorDescriptor(&v.y));
    DNN(cudnnCreateTensorDescriptor(&v.b));
    DNN(cudnnCreateFilterDescriptor(&v.w));
    DNN(cudnnCreateConvolutionDescriptor(&v.conv));
    DNN(cudnnCreateActivationDescriptor(&v.act));
    DNN(cudnnSetTensor4dDescriptor(v.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, Hp, Wp));
    DNN(cudnnSetFilter4dDescriptor(v.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, M, C / G, kh, kw));
    DNN(cudnnSetConvolution2dDescriptor(v.conv, pd[0], pd[1], st[0], st[1], dl[0], dl[1],
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DNN(cudnnSetConvolutionGroupCount(v.conv, G));
    DNN(cudnnSetConvolutionMathType(v.conv, math == MATH_FP32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
    int on, oc, oh, ow;
    DNN(cudnnGetConvolution2dForwardOutputDim(v.conv, v.x, v.w, &on, &oc, &oh, &ow));
    if (on != N || oc != M || oh != OH || ow != OW)
        die(1, "%s: cuDNN output %dx%dx%dx%d, the model says %dx%dx%dx%d", what, on, oc, oh, ow, N, M, OH, OW);
    DNN(cudnnSetTensor4dDescriptor(v.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, M, OH, OW));
    DNN(cudnnSetTensor4dDescriptor(v.b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, M, 1, 1));
    DNN(cudnnSetActivationDescriptor(v.act, v.act_kind == 2 ? CUDNN_ACTIVATION_CLIPPED_RELU
                                                           : v.act_kind == 1 ? CUDNN_ACTIVATION_RELU
                                                                             : CUDNN_ACTIVATION_IDENTITY,
                                     CUDNN_NOT_PROPAGATE_NAN, clip_hi));

    size_t nx = (size_t)N * C * Hp * Wp, nw = (size_t)M * (C / G) * kh * kw, ny = (size_t)N * M * OH * OW;
    v.dx = dev_random(c, nx, 1.0f, 1 + (uint64_t)idx);
    v.dw = dev_random(c, nw, 0.1f, 1000 + (uint64_t)idx);
    v.dy = dev_random(c, ny, 0.0f, 0);
    v.db = dev_random(c, (size_t)M, 0.05f, 2000 + (uint64_t)idx);

    /* the algorithm: the fastest one Find measured (cuDNN's heuristics with --heuristic, or
       when Find offers nothing usable) */
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0, pick = -1;
    const char *how = "find";
    if (!o->heuristic) {
        cudnnStatus_t s = cudnnFindConvolutionForwardAlgorithm(c->dnn, v.x, v.w, v.conv, v.y,
                                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf);
        if (s == CUDNN_STATUS_SUCCESS)
            pick = pick_algo(perf, got, math);
        else
            fprintf(stderr, "baseline: %s: cudnnFindConvolutionForwardAlgorithm: %s; using the heuristics\n",
                    what, cudnnGetErrorString(s));
        CU(cudaGetLastError());
    }
    if (pick < 0) {
        DNN(cudnnGetConvolutionForwardAlgorithm_v7(c->dnn, v.x, v.w, v.conv, v.y,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
        pick = pick_algo(perf, got, math);
        how = "heur";
    }
    if (pick < 0) die(1, "%s: cuDNN offers no working algorithm (%s math)", what, math_name[math]);
    v.algo = perf[pick].algo;
    DNN(cudnnSetConvolutionMathType(v.conv, perf[pick].mathType));
    DNN(cudnnGetConvolutionForwardWorkspaceSize(c->dnn, v.x, v.w, v.conv, v.y, v.algo, &v.ws_size));
    if (v.ws_size) CU(cudaMalloc(&v.ws, v.ws_size));

    /* the epilogue: an activation fused with the bias (cudnnConvolutionBiasActivationForward)
       when cuDNN takes it for this algorithm, else conv + bias + activation as three calls;
       no activation: conv, then the bias (cudnnAddTensor) if there is one */
    if (v.act_kind) {
        cudnnStatus_t s = conv_fused(c, &v);
        CU(cudaStreamSynchronize(c->stream));
        v.epi = s == CUDNN_STATUS_SUCCESS ? EPI_FUSED : EPI_SEPARATE;
    } else {
        v.epi = v.bias ? EPI_BIAS : EPI_NONE;
    }
    row->conv_us = time_median_us(c, o, run_conv_only, &v);
    row->layer_us = v.epi == EPI_NONE ? row->conv_us : time_median_us(c, o, run_conv_layer, &v);
    row->op = "conv";
    row->epi = epi_name[v.epi];
    row->ws = v.ws_size;
    snprintf(row->algo, sizeof row->algo, "%s/%s/%s", algo_name(v.algo),
             cudnn_math_name(perf[pick].mathType), how);
    snprintf(row->shape, sizeof row->shape, "%dx%dx%dx%d->%d k%dx%d s%d,%d p%d,%d,%d,%d d%d,%d g%d %s%s",
             N, C, H, W, M, kh, kw, st[0], st[1], pd[0], pd[1], pd[2], pd[3], dl[0], dl[1], G,
             v.bias ? "+b" : "", v.act_kind == 1 ? "+relu" : v.act_kind == 2 ? "+clip" : "");

    CU(cudaFree(v.dx));
    CU(cudaFree(v.dw));
    CU(cudaFree(v.dy));
    CU(cudaFree(v.db));
    if (v.ws) CU(cudaFree(v.ws));
    DNN(cudnnDestroyActivationDescriptor(v.act));
    DNN(cudnnDestroyConvolutionDescriptor(v.conv));
    DNN(cudnnDestroyFilterDescriptor(v.w));
    DNN(cudnnDestroyTensorDescriptor(v.b));
    DNN(cudnnDestroyTensorDescriptor(v.y));
    DNN(cudnnDestroyTensorDescriptor(v.x));
}

/* ---- GEMM: row-major C[b][M][N] = op(A)[b][M][K] op(B)[b][K][N], as column-major C^T = B^T A^T ---- */

typedef struct {
    int batch, M, N, K, ta, tb;
    long long sa, sb, sc;
    float *a, *b, *c;
} Gemm;

static void run_gemm(Ctx *c, void *arg)
{
    Gemm *g = arg;
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t opa = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    int lda = g->ta ? g->M : g->K, ldb = g->tb ? g->K : g->N;
    if (g->batch == 1)
        BLAS(cublasSgemm(c->blas, opb, opa, g->N, g->M, g->K, &one, g->b, ldb, g->a, lda, &zero, g->c, g->N));
    else
        BLAS(cublasSgemmStridedBatched(c->blas, opb, opa, g->N, g->M, g->K, &one, g->b, ldb, g->sb, g->a,
                                       lda, g->sa, &zero, g->c, g->N, g->sc, g->batch));
}

static void gemm_layer(Ctx *c, const Options *o, const cJSON *L, int math, int idx, Row *row)
{
    char what[48];
    snprintf(what, sizeof what, "layer %d (gemm)", idx);
    Gemm g;
    g.batch = jint(L, "batch", what);
    g.M = jint(L, "M", what);
    g.N = jint(L, "N", what);
    g.K = jint(L, "K", what);
    g.ta = jint(L, "transA", what);
    g.tb = jint(L, "transB", what);
    int ab = jbool(L, "a_batched"), bb = jbool(L, "b_batched");
    g.sa = ab ? (long long)g.M * g.K : 0;
    g.sb = bb ? (long long)g.K * g.N : 0;
    g.sc = (long long)g.M * g.N;
    BLAS(cublasSetMathMode(c->blas, math == MATH_FP32 ? CUBLAS_DEFAULT_MATH : CUBLAS_TF32_TENSOR_OP_MATH));
    g.a = dev_random(c, (size_t)(ab ? g.batch : 1) * g.M * g.K, 1.0f, 3000 + (uint64_t)idx);
    g.b = dev_random(c, (size_t)(bb ? g.batch : 1) * g.K * g.N, 0.1f, 4000 + (uint64_t)idx);
    g.c = dev_random(c, (size_t)g.batch * g.M * g.N, 0.0f, 0);
    row->conv_us = row->layer_us = time_median_us(c, o, run_gemm, &g);
    row->op = "gemm";
    row->epi = jbool(L, "bias") ? "bias-not-timed" : "none";
    row->ws = 0;
    snprintf(row->algo, sizeof row->algo, "%s/%s", g.batch > 1 ? "SgemmStridedBatched" : "Sgemm",
             math == MATH_FP32 ? "DEFAULT_MATH" : "TF32_TENSOR_OP");
    snprintf(row->shape, sizeof row->shape, "b%d%s%s M%d N%d K%d%s%s", g.batch,
             g.batch > 1 && !ab ? " A-shared" : "", g.batch > 1 && !bb ? " B-shared" : "", g.M, g.N, g.K,
             g.ta ? " A^T" : "", g.tb ? " B^T" : "");
    CU(cudaFree(g.a));
    CU(cudaFree(g.b));
    CU(cudaFree(g.c));
}

/* ---- one model file, one math variant ---- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void run_model(Ctx *c, const Options *o, const char *path, const cJSON *root, int math,
                      const char *device)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "model"));
    int batch = (int)jnum(root, "batch", 0);
    if (!cJSON_IsArray(layers)) die(1, "%s: no \"layers\" array", path);
    if (!model) model = path;
    int n = cJSON_GetArraySize(layers);
    Row *rows = calloc((size_t)(n ? n : 1), sizeof(Row));
    if (!rows) die(1, "out of host memory");
    printf("\n== %s, batch %d, %s math, %s ==\n", model, batch, math_name[math], device);
    printf("%3s %-4s %5s %-52s %-36s %-9s %9s %9s %10s %8s\n", "#", "op", "count", "shape", "algorithm",
           "epilogue", "conv_us", "layer_us", "total_us", "TFLOP/s");
    double sum_conv = 0, sum_gemm = 0, sum_conv_only = 0, flops = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *L = cJSON_GetArrayItem(layers, i);
        const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(L, "op"));
        Row *r = &rows[i];
        r->count = (int)jnum(L, "count", 1);
        r->flops = jnum(L, "flops", 0);
        if (op && !strcmp(op, "conv"))
            conv_layer(c, o, L, math, i, r);
        else if (op && !strcmp(op, "gemm"))
            gemm_layer(c, o, L, math, i, r);
        else
            die(1, "%s: layer %d: unknown op \"%s\"", path, i, op ? op : "(none)");
        double total = r->layer_us * r->count;
        if (!strcmp(r->op, "conv")) {
            sum_conv += total;
            sum_conv_only += r->conv_us * r->count;
        } else {
            sum_gemm += total;
        }
        flops += r->flops * r->count;
        printf("%3d %-4s %5d %-52s %-36s %-9s %9.2f %9.2f %10.2f %8.2f\n", i, r->op, r->count, r->shape,
               r->algo, r->epi, r->conv_us, r->layer_us, total,
               r->layer_us > 0 ? r->flops / (r->layer_us * 1e6) : 0.0);
        fflush(stdout);
    }
    double total = sum_conv + sum_gemm;
    printf("-- %s batch %d %s: conv %.3f ms (conv alone %.3f ms), gemm %.3f ms, conv+gemm %.3f ms, "
           "%.2f GFLOP, %.2f TFLOP/s\n",
           model, batch, math_name[math], sum_conv / 1e3, sum_conv_only / 1e3, sum_gemm / 1e3, total / 1e3,
           flops / 1e9, total > 0 ? flops / (total * 1e6) : 0.0);
    printf("-- note: %s\n", g_note);

    /* one JSON line: on stdout (prefixed "JSON "), and appended to --json FILE */
    FILE *outs[2] = {stdout, o->json};
    for (int k = 0; k < 2; k++) {
        FILE *f = outs[k];
        if (!f) continue;
        if (k == 0) fputs("JSON ", f);
        fputs("{\"model\":", f);
        json_str(f, model);
        fprintf(f, ",\"batch\":%d,\"math\":\"%s\",\"device\":", batch, math_name[math]);
        json_str(f, device);
        fprintf(f, ",\"conv_ms\":%.4f,\"conv_alone_ms\":%.4f,\"gemm_ms\":%.4f,\"conv_gemm_ms\":%.4f,"
                   "\"gflop\":%.4f,\"warmup\":%d,\"repeat\":%d,\"note\":",
                sum_conv / 1e3, sum_conv_only / 1e3, sum_gemm / 1e3, total / 1e3, flops / 1e9, o->warmup,
                o->repeat);
        json_str(f, g_note);
        fputs(",\"layers\":[", f);
        for (int i = 0; i < n; i++) {
            Row *r = &rows[i];
            fprintf(f, "%s{\"i\":%d,\"op\":\"%s\",\"count\":%d,\"shape\":", i ? "," : "", i, r->op, r->count);
            json_str(f, r->shape);
            fputs(",\"algo\":", f);
            json_str(f, r->algo);
            fprintf(f, ",\"epilogue\":\"%s\",\"workspace\":%zu,\"conv_us\":%.3f,\"layer_us\":%.3f,"
                       "\"flops\":%.0f}",
                    r->epi, r->ws, r->conv_us, r->layer_us, r->flops);
        }
        fputs("]}\n", f);
        fflush(f);
    }
    free(rows);
}

/* Every field the runs read, checked before the GPU is touched; prints the list's totals. */
static void check_layers(const char *path, const cJSON *root)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!cJSON_IsArray(layers)) die(1, "%s: no \"layers\" array", path);
    double fl[2] = {0, 0};
    int cnt[2] = {0, 0}, n = cJSON_GetArraySize(layers), tmp[4];
    for (int i = 0; i < n; i++) {
        const cJSON *L = cJSON_GetArrayItem(layers, i);
        const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(L, "op"));
        char what[300];
        snprintf(what, sizeof what, "%s: layer %d (%s)", path, i, op ? op : "?");
        int k = op && !strcmp(op, "gemm");
        if (op && !strcmp(op, "conv")) {
            const char *keys[] = {"N", "C", "H", "W", "M", "kh", "kw", "group", "OH", "OW"};
            for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++)
                if (jint(L, keys[j], what) <= 0) die(1, "%s: %s must be positive", what, keys[j]);
            jints(L, "strides", tmp, 2, what);
            jints(L, "pads", tmp, 4, what);
            jints(L, "dilations", tmp, 2, what);
        } else if (k) {
            const char *keys[] = {"batch", "M", "N", "K"};
            for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++)
                if (jint(L, keys[j], what) <= 0) die(1, "%s: %s must be positive", what, keys[j]);
            jint(L, "transA", what);
            jint(L, "transB", what);
        } else {
            die(1, "%s: unknown op", what);
        }
        int count = (int)jnum(L, "count", 1);
        cnt[k] += count;
        fl[k] += jnum(L, "flops", 0) * count;
    }
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "model"));
    printf("%s: %s batch %d: %d convs %.3f GFLOP, %d gemms %.3f GFLOP (%d distinct shapes)\n", path,
           model ? model : "?", (int)jnum(root, "batch", 0), cnt[0], fl[0] / 1e9, cnt[1], fl[1] / 1e9, n);
}

static cJSON *load_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) die(1, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len < 0) die(1, "cannot read %s", path);
    char *buf = malloc((size_t)len + 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) die(1, "cannot read %s", path);
    buf[len] = 0;
    fclose(f);
    cJSON *root = cJSON_Parse(buf);
    if (!root) die(1, "%s: not valid JSON (near \"%.20s\")", path, cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "");
    free(buf);
    return root;
}

static void usage(void)
{
    fprintf(stderr, "usage: baseline [--math fp32|tf32|both] [--warmup N] [--repeat N] [--heuristic]\n"
                    "                [--json FILE] [--check] LAYERS.json...\n"
                    "  --check: only read and check the layer lists (no GPU needed)\n");
    exit(1);
}

int main(int argc, char **argv)
{
    Options o = {10, 50, 0, NULL};
    int maths[2] = {1, 1}, check_only = 0;
    int first = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--math") && i + 1 < argc) {
            const char *m = argv[++i];
            maths[0] = !strcmp(m, "fp32") || !strcmp(m, "both");
            maths[1] = !strcmp(m, "tf32") || !strcmp(m, "both");
            if (!maths[0] && !maths[1]) usage();
        } else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
            o.warmup = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
            o.repeat = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--check")) {
            check_only = 1;
        } else if (!strcmp(argv[i], "--heuristic")) {
            o.heuristic = 1;
        } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            o.json = fopen(argv[++i], "a");
            if (!o.json) die(1, "cannot open %s for appending", argv[i]);
        } else if (argv[i][0] == '-') {
            usage();
        } else {
            first = i;
            break;
        }
    }
    if (first >= argc || o.repeat < 1 || o.warmup < 0) usage();

    /* the lists first (a typo should not cost GPU time), then the device: a machine without
       one stops here, cleanly, with exit status 2 */
    for (int i = first; i < argc; i++) {
        cJSON *root = load_json(argv[i]);
        check_layers(argv[i], root);
        cJSON_Delete(root);
    }
    if (check_only) return 0;

    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess) die(2, "no CUDA device: cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    if (ndev == 0) die(2, "no CUDA device: cudaGetDeviceCount found 0 devices");
    CU(cudaSetDevice(0));
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, 0));
    int rt = 0, drv = 0;
    CU(cudaRuntimeGetVersion(&rt));
    CU(cudaDriverGetVersion(&drv));

    Ctx c;
    memset(&c, 0, sizeof c);
    CU(cudaStreamCreate(&c.stream));
    DNN(cudnnCreate(&c.dnn));
    DNN(cudnnSetStream(c.dnn, c.stream));
    BLAS(cublasCreate(&c.blas));
    BLAS(cublasSetStream(c.blas, c.stream));
    BLAS(cublasSetPointerMode(c.blas, CUBLAS_POINTER_MODE_HOST));
    int blasv = 0;
    BLAS(cublasGetVersion(c.blas, &blasv));
    c.ev = malloc(sizeof(cudaEvent_t) * 2 * (size_t)o.repeat);
    c.times = malloc(sizeof(float) * (size_t)o.repeat);
    if (!c.ev || !c.times) die(1, "out of host memory");
    for (int i = 0; i < 2 * o.repeat; i++) CU(cudaEventCreate(&c.ev[i]));

    char device[512];
    snprintf(device, sizeof device, "%s (sm_%d%d, %d SMs, %.0f GiB), CUDA runtime %d, driver %d, cuDNN %zu, cuBLAS %d",
             prop.name, prop.major, prop.minor, prop.multiProcessorCount,
             (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024), rt, drv, cudnnGetVersion(), blasv);
    printf("device: %s\n", device);
    const char *ovr = getenv("NVIDIA_TF32_OVERRIDE");
    if (ovr) printf("NVIDIA_TF32_OVERRIDE=%s (0 disables TF32 in cuDNN and cuBLAS for the whole process)\n", ovr);
    printf("timing: %d warm-up runs, median of %d, CUDA events around each run\n", o.warmup, o.repeat);

    for (int i = first; i < argc; i++) {
        cJSON *root = load_json(argv[i]);
        for (int m = 0; m < 2; m++)
            if (maths[m]) run_model(&c, &o, argv[i], root, m, device);
        cJSON_Delete(root);
    }

    for (int i = 0; i < 2 * o.repeat; i++) CU(cudaEventDestroy(c.ev[i]));
    BLAS(cublasDestroy(c.blas));
    DNN(cudnnDestroy(c.dnn));
    CU(cudaStreamDestroy(c.stream));
    free(c.ev);
    free(c.times);
    free(c.host);
    if (o.json) fclose(o.json);
    return 0;
}
