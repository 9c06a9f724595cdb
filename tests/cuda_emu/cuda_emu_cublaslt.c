/* cuBLASLt for the emulated cuda plugin (tests/cuda_emu): the calls backends/cuda/cuda_linear.c
 * makes, over host memory, with cuBLASLt's meaning of every argument and the freedoms the
 * real library takes made visible, so that the plugin is shown not to lean on them:
 *  - attributes are checked for their size, unknown ones refused, as cuBLASLt does;
 *  - a layout's leading dimension below its rows, mismatched types or shapes, a bias
 *    epilogue without a bias pointer are refused by the heuristic;
 *  - the heuristic's algorithm wants a workspace whenever the preference allows one, and
 *    the matmul refuses a smaller or missing one (and scribbles on the one it gets);
 *  - the algorithm relies on the alignment the preference states (256 bytes unless told
 *    otherwise): a matrix less aligned than that is refused;
 *  - where the preference allows reductions in the output type (cuBLASLt's default) and
 *    D is a half, the algorithm splits K in two and sums the halves' rounded partials,
 *    as a split-K kernel may: a plugin that does not restrict the scheme loses precision.
 * Sums: in double for F32 (as cuda_emu_blas.c), in f32 for the halves; alpha, beta, bias
 * and ReLU (NaN kept: an assumption about the real library, to be checked on a GPU) in
 * that precision, then one rounding to D's type. */
#include <cublasLt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_emu_graph.h"
#include "ff_backend_scalar.h"

#define LT_MAGIC 0x4c54454du      /* "LTEM": a descriptor this file created */
#define LT_WORKSPACE_WANTED 1024u /* what every emulated algorithm asks for when allowed */

typedef struct lt_desc {
    uint32_t magic;
    int32_t compute, scale, ta, tb;
    uint32_t epilogue;
    const void *bias;
} lt_desc;

typedef struct lt_layout {
    uint32_t magic;
    int32_t type;
    uint64_t rows, cols;
    int64_t ld;
} lt_layout;

typedef struct lt_pref {
    uint32_t magic;
    uint32_t scheme_mask;
    uint64_t max_workspace;
    uint32_t align[4]; /* the least alignment of A, B, C, D the caller promises */
} lt_pref;

typedef struct lt_algo {
    uint32_t magic;
    uint32_t split_k;
    uint64_t m, n, k, workspace;
    uint32_t align[4]; /* what the algorithm was chosen for, and relies on */
} lt_algo;

/* the opaque structs hold ours (checked at compile time) */
typedef char lt_desc_fits[sizeof(lt_desc) <= sizeof(cublasLtMatmulDescOpaque_t) ? 1 : -1];
typedef char lt_layout_fits[sizeof(lt_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t) ? 1 : -1];
typedef char lt_pref_fits[sizeof(lt_pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t) ? 1 : -1];
typedef char lt_algo_fits[sizeof(lt_algo) <= sizeof(cublasLtMatmulAlgo_t) ? 1 : -1];

static int lt_handle_token;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    if (!h) return CUBLAS_STATUS_INVALID_VALUE;
    *h = (cublasLtHandle_t)&lt_handle_token;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    return h == (cublasLtHandle_t)&lt_handle_token ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char *cublasLtGetStatusString(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    default: return "invalid value";
    }
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale)
{
    cublasLtMatmulDescOpaque_t *o = calloc(1, sizeof *o);
    if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
    lt_desc x = {LT_MAGIC, (int32_t)compute, (int32_t)scale, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT, NULL};
    memcpy(o, &x, sizeof x);
    *d = o;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    free(d);
    return CUBLAS_STATUS_SUCCESS;
}

static int get_desc(const void *o, lt_desc *x)
{
    memcpy(x, o, sizeof *x);
    return x->magic == LT_MAGIC;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size)
{
    lt_desc x;
    if (!d || !buf || !get_desc(d, &x)) return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
        int32_t v;
        if (size != sizeof v) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&v, buf, sizeof v);
        if (v != CUBLAS_OP_N && v != CUBLAS_OP_T) return CUBLAS_STATUS_INVALID_VALUE;
        *(attr == CUBLASLT_MATMUL_DESC_TRANSA ? &x.ta : &x.tb) = v;
        break;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        if (size != sizeof x.epilogue) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&x.epilogue, buf, sizeof x.epilogue);
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        if (size != sizeof x.bias) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&x.bias, buf, sizeof x.bias);
        break;
    default: return CUBLAS_STATUS_INVALID_VALUE; /* not one this emulation models */
    }
    memcpy(d, &x, sizeof x);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows, uint64_t cols,
                                          int64_t ld)
{
    cublasLtMatrixLayoutOpaque_t *o = calloc(1, sizeof *o);
    if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
    lt_layout x = {LT_MAGIC, (int32_t)type, rows, cols, ld};
    memcpy(o, &x, sizeof x);
    *l = o;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    free(l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    cublasLtMatmulPreferenceOpaque_t *o = calloc(1, sizeof *o);
    if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
    lt_pref x = {LT_MAGIC, CUBLASLT_REDUCTION_SCHEME_MASK, 0, {256, 256, 256, 256}}; /* cuBLASLt's defaults */
    memcpy(o, &x, sizeof x);
    *p = o;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t size)
{
    lt_pref x;
    if (!p || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&x, p, sizeof x);
    if (x.magic != LT_MAGIC) return CUBLAS_STATUS_INVALID_VALUE;
    if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof x.max_workspace)
        memcpy(&x.max_workspace, buf, size);
    else if (attr == CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK && size == sizeof x.scheme_mask)
        memcpy(&x.scheme_mask, buf, size);
    else if (attr >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES &&
             size == sizeof x.align[0])
        memcpy(&x.align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, size);
    else
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(p, &x, sizeof x);
    return CUBLAS_STATUS_SUCCESS;
}

static ff_dtype lt_dtype(int32_t t)
{
    return t == CUDA_R_32F ? FF_F32 : t == CUDA_R_16F ? FF_F16 : t == CUDA_R_16BF ? FF_BF16 : FF_BOOL;
}

static int lt_epilogue_known(uint32_t e)
{
    return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_BIAS ||
           e == CUBLASLT_EPILOGUE_RELU_BIAS;
}

static int lt_has_bias(uint32_t e) { return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS; }

/* The problem the four layouts and the descriptor describe: D [m x n] = op(A) [m x k] op(B)
 * [k x n]; CUBLAS_STATUS_* where cuBLASLt would refuse it. */
static cublasStatus_t lt_problem(const void *op, const void *la, const void *lb, const void *lc, const void *ld,
                                 lt_desc *d, lt_layout *a, lt_layout *b, lt_layout *c, lt_layout *o, uint64_t *m,
                                 uint64_t *n, uint64_t *k)
{
    if (!op || !la || !lb || !lc || !ld || !get_desc(op, d)) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(a, la, sizeof *a), memcpy(b, lb, sizeof *b), memcpy(c, lc, sizeof *c), memcpy(o, ld, sizeof *o);
    if (a->magic != LT_MAGIC || b->magic != LT_MAGIC || c->magic != LT_MAGIC || o->magic != LT_MAGIC)
        return CUBLAS_STATUS_INVALID_VALUE;
    const lt_layout *all[4] = {a, b, c, o};
    for (int i = 0; i < 4; i++)
        if (all[i]->ld < (int64_t)(all[i]->rows > 1 ? all[i]->rows : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    ff_dtype ta = lt_dtype(a->type), to = lt_dtype(o->type);
    if (ta == FF_BOOL || a->type != b->type || c->type != o->type || d->scale != CUDA_R_32F ||
        !(to == ta || (to == FF_F32 && ffb_is_half(ta))))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (d->compute != CUBLAS_COMPUTE_32F && !(d->compute == CUBLAS_COMPUTE_32F_FAST_TF32 && ta == FF_F32))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!lt_epilogue_known(d->epilogue)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (lt_has_bias(d->epilogue) && !d->bias) return CUBLAS_STATUS_INVALID_VALUE;
    *m = d->ta == CUBLAS_OP_N ? a->rows : a->cols;
    *k = d->ta == CUBLAS_OP_N ? a->cols : a->rows;
    uint64_t kb = d->tb == CUBLAS_OP_N ? b->rows : b->cols;
    *n = d->tb == CUBLAS_OP_N ? b->cols : b->rows;
    if (kb != *k || o->rows != *m || o->cols != *n || c->rows != *m || c->cols != *n) return CUBLAS_STATUS_INVALID_VALUE;
    if (*k == 0) return CUBLAS_STATUS_NOT_SUPPORTED; /* the plugin never asks: it fills an empty sum itself */
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                                              cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                                              cublasLtMatrixLayout_t ld, cublasLtMatmulPreference_t pref, int want,
                                              cublasLtMatmulHeuristicResult_t res[], int *got)
{
    lt_desc d;
    lt_layout a, b, c, o;
    lt_pref p;
    uint64_t m, n, k;
    if (h != (cublasLtHandle_t)&lt_handle_token || !pref || want < 1 || !res || !got)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&p, pref, sizeof p);
    if (p.magic != LT_MAGIC) return CUBLAS_STATUS_INVALID_VALUE;
    cublasStatus_t s = lt_problem(op, la, lb, lc, ld, &d, &a, &b, &c, &o, &m, &n, &k);
    if (s) return s;
    lt_algo x = {LT_MAGIC, 0, m, n, k, p.max_workspace >= LT_WORKSPACE_WANTED ? LT_WORKSPACE_WANTED : 0, {0}};
    memcpy(x.align, p.align, sizeof x.align);
    x.split_k = (p.scheme_mask & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE) && ffb_is_half(lt_dtype(o.type)) && k >= 2;
    memset(&res[0], 0, sizeof res[0]);
    memcpy(&res[0].algo, &x, sizeof x);
    res[0].workspaceSize = x.workspace;
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].wavesCount = 1.0f;
    *got = 1;
    return CUBLAS_STATUS_SUCCESS;
}

/* the alignment of a matrix: of its pointer and of its leading dimension in bytes */
static uint32_t lt_align_of(const void *p, const lt_layout *l)
{
    uintptr_t x = (uintptr_t)p | (uintptr_t)((uint64_t)l->ld * (lt_dtype(l->type) == FF_F32 ? 4u : 2u)) | 4096u;
    return (uint32_t)(x & (~x + 1));
}

static double lt_ld(const void *p, ff_dtype t, int64_t i)
{
    return t == FF_F32 ? (double)((const float *)p)[i] : ffb_ld_f64((const char *)p + 2 * i, t);
}

static void lt_st(void *p, ff_dtype t, int64_t i, double v)
{
    if (t == FF_F32) ((float *)p)[i] = (float)v;
    else ffb_st_f64((char *)p + 2 * i, t, v);
}

/* op(X)[r, q] of a column-major X with leading dimension ld */
static int64_t lt_at(int32_t trans, int64_t r, int64_t q, int64_t ld) { return trans == CUBLAS_OP_N ? r + q * ld : q + r * ld; }

/* sum over p in [p0, p1) of op(A)[i, p] op(B)[p, j]: double for F32, f32 for the halves */
static double lt_dot(const lt_desc *d, const void *A, const lt_layout *a, const void *B, const lt_layout *b, int64_t i,
                     int64_t j, int64_t p0, int64_t p1)
{
    ff_dtype t = lt_dtype(a->type);
    double s = 0;
    float s32 = 0.0f;
    for (int64_t p = p0; p < p1; p++) {
        double x = lt_ld(A, t, lt_at(d->ta, i, p, a->ld)), y = lt_ld(B, t, lt_at(d->tb, p, j, b->ld));
        if (ffb_is_half(t)) s32 += (float)x * (float)y;
        else s += x * y;
    }
    return ffb_is_half(t) ? (double)s32 : s;
}

static double lt_round(ff_dtype t, double v)
{
    double tmp[1]; /* room for any dtype ffb_st_f64 may be asked to store */
    lt_st(tmp, t, 0, v);
    return lt_ld(tmp, t, 0);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t la, const void *B, cublasLtMatrixLayout_t lb, const void *beta,
                              const void *C, cublasLtMatrixLayout_t lc, void *D, cublasLtMatrixLayout_t ld,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_size, cudaStream_t stream)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUBLAS_STATUS_NOT_SUPPORTED);
    (void)stream;
    lt_desc d;
    lt_layout a, b, c, o;
    lt_algo x;
    uint64_t m, n, k;
    if (h != (cublasLtHandle_t)&lt_handle_token || !alpha || !beta || !A || !B || !D || !algo)
        return CUBLAS_STATUS_INVALID_VALUE;
    cublasStatus_t s = lt_problem(op, la, lb, lc, ld, &d, &a, &b, &c, &o, &m, &n, &k);
    if (s) return s;
    memcpy(&x, algo, sizeof x);
    if (x.magic != LT_MAGIC || x.m != m || x.n != n || x.k != k) return CUBLAS_STATUS_INVALID_VALUE;
    if (x.workspace && (!ws || ws_size < x.workspace)) return CUBLAS_STATUS_INVALID_VALUE;
    /* an algorithm chosen for aligned matrices may misread others: refused here, visibly */
    const void *ptr[4] = {A, B, C ? C : D, D};
    const lt_layout *lay[4] = {&a, &b, &c, &o};
    for (int i = 0; i < 4; i++)
        if (lt_align_of(ptr[i], lay[i]) < x.align[i]) return CUBLAS_STATUS_INVALID_VALUE;
    if (x.workspace) memset(ws, 0xa5, x.workspace); /* the algorithm's scratch: whatever was there is gone */
    float al, be;
    memcpy(&al, alpha, sizeof al), memcpy(&be, beta, sizeof be);
    if (be != 0.0f && !C) return CUBLAS_STATUS_INVALID_VALUE;
    ff_dtype to = lt_dtype(o.type), tb = to; /* the bias has D's type (cuBLASLt's default) */
    int half = ffb_is_half(lt_dtype(a.type));
    for (int64_t j = 0; j < (int64_t)n; j++)
        for (int64_t i = 0; i < (int64_t)m; i++) {
            double v;
            if (x.split_k) { /* two partial products, each rounded to D's type, then their sum */
                int64_t mid = (int64_t)k / 2;
                v = lt_round(to, lt_round(to, lt_dot(&d, A, &a, B, &b, i, j, 0, mid)) +
                                     lt_round(to, lt_dot(&d, A, &a, B, &b, i, j, mid, (int64_t)k)));
            } else {
                v = lt_dot(&d, A, &a, B, &b, i, j, 0, (int64_t)k);
            }
            v *= al;
            if (be != 0.0f) v += be * lt_ld(C, lt_dtype(c.type), i + j * c.ld);
            if (half) v = (double)(float)v;
            if (lt_has_bias(d.epilogue)) v += lt_ld(d.bias, tb, i);
            if (half) v = (double)(float)v;
            if ((d.epilogue == CUBLASLT_EPILOGUE_RELU || d.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) && v < 0) v = 0;
            lt_st(D, to, i + j * o.ld, v);
        }
    return CUBLAS_STATUS_SUCCESS;
}
