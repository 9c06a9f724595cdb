/*
 * The linear entry (backend_abi.h: dst = act(a b + bias)), F32, F16 and BF16, through
 * cuBLASLt, the cuBLAS interface with epilogues (what PyTorch's addmm runs for a Linear
 * layer).
 *
 * No activation or ReLU: one cublasLtMatmul whose epilogue adds the bias to the f32 sums
 * and applies the ReLU before the one rounding to dst's dtype (CUBLASLT_EPILOGUE_BIAS,
 * _RELU, _RELU_BIAS): y is written once, where the composition wrote it up to three
 * times. Other activations (the GELUs, tanh, sigmoid, SiLU, ...), whose cuBLASLt forms
 * are approximations or absent: the product into f32 (dst itself for F32, a temporary
 * for the halves), then one kernel (cuda_linear_epilogue) adds the bias, applies the
 * activation with the reference's formula in f32 and rounds once to dst's dtype. For
 * F32 every value is then the composition's own, bit for bit, given the same sums.
 *
 * Layouts as the matmul entry plans them (cuda_mat_layout: row-major or transposed
 * operands read in place, others copied), the bias read in place when its N elements are
 * contiguous. Sums in f32 for every dtype, split-K reductions in the output type
 * disallowed (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK), TF32 only with
 * FF_CUDA_TF32=1, as matmul. F64 is declined (the core composes it through cuBLAS's
 * dgemm). The heuristic's choice is kept per shape, layout and epilogue (cuda_lt_cache).
 */
#include <cublasLt.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#include "ff_backend_linear.h"

#define LT_WORKSPACE ((size_t)4 << 20) /* the most workspace an algorithm may take */
#define LT_CACHE 64                     /* heuristic answers kept (a model's distinct linears) */

/* What the heuristic's answer depends on: the types, transposes, sizes, leading dims,
 * epilogue and the stated alignments (memcmp'd: zeroed before it is filled). */
typedef struct lt_key {
    int32_t t, dt, ct, ta, tb, epi, bias;
    uint32_t al[3];
    int64_t M, N, K, lda, ldb, ldd;
} lt_key;

/* The heuristic's answers by key (under blas_lock), so that a repeated shape skips the
 * query: cublasLtMatmulAlgoGetHeuristic costs tens of microseconds of host time, more than
 * a small product takes on the device. Replaced round-robin. */
struct cuda_lt_cache {
    struct {
        lt_key k;
        cublasLtMatmulHeuristicResult_t h;
    } e[LT_CACHE];
    int n, next;
};

int cuda_linear_supported(int act, ff_dtype t)
{
    return ffb_linear_act_ok(act) && (t == FF_F32 || t == FF_F16 || t == FF_BF16);
}

void cuda_lt_destroy(cuda_ctx *c)
{
    if (c->cublaslt) cublasLtDestroy((cublasLtHandle_t)c->cublaslt);
    c->cublaslt = NULL;
    free(c->lt_cache);
    c->lt_cache = NULL;
}

/* The cached answer for k, or NULL. */
static const cublasLtMatmulHeuristicResult_t *lt_cached(cuda_ctx *c, const lt_key *k)
{
    struct cuda_lt_cache *lc = c->lt_cache;
    for (int i = 0; lc && i < lc->n; i++)
        if (!memcmp(&lc->e[i].k, k, sizeof *k)) return &lc->e[i].h;
    return NULL;
}

static void lt_remember(cuda_ctx *c, const lt_key *k, const cublasLtMatmulHeuristicResult_t *h)
{
    if (!c->lt_cache && !(c->lt_cache = calloc(1, sizeof *c->lt_cache))) return; /* no cache: ask every time */
    struct cuda_lt_cache *lc = c->lt_cache;
    int i = lc->n < LT_CACHE ? lc->n++ : lc->next++ % LT_CACHE;
    lc->e[i].k = *k, lc->e[i].h = *h;
}

static cudaDataType lt_type(ff_dtype t)
{
    return t == FF_F16 ? CUDA_R_16F : t == FF_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* The pieces of one call, freed together. */
typedef struct lt_call {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulPreference_t pref;
} lt_call;

static void lt_free(lt_call *q)
{
    if (q->pref) cublasLtMatmulPreferenceDestroy(q->pref);
    if (q->la) cublasLtMatrixLayoutDestroy(q->la);
    if (q->lb) cublasLtMatrixLayoutDestroy(q->lb);
    if (q->ld) cublasLtMatrixLayoutDestroy(q->ld);
    if (q->op) cublasLtMatmulDescDestroy(q->op);
}

/* The alignment a matrix at p with leading dimension ld (elements of size es) has, up to
 * 256: what the preference must state, since cuBLASLt assumes 256 bytes unless told and
 * an algorithm chosen for that may misread a view that starts mid-line or an odd ld. */
static uint32_t lt_alignment(const void *p, int64_t ld, size_t es)
{
    uintptr_t x = (uintptr_t)p | (uintptr_t)((uint64_t)ld * es) | 256u;
    return (uint32_t)(x & (~x + 1)); /* the lowest set bit */
}

/* D = a b (+ bias, ReLU per epi) in column-major terms: D^T [N x M] = B^T A^T. a, b as
 * cuda_mat_layout found them; d row-major with leading dim ldd (type dt: dst's, or F32). */
static ff_status lt_matmul(cuda_ctx *c, const ff_view *a, int acm, int64_t lda, const ff_view *b, int bcm, int64_t ldb,
                           void *d, ff_dtype dt, int64_t ldd, const void *bias, cublasLtEpilogue_t epi)
{
    int64_t M = a->shape[0], K = a->shape[1], N = b->shape[1];
    ff_dtype t = a->dtype;
    lt_call q = {0};
    cublasStatus_t s;
    const char *what = "cublasLtMatmulDescCreate";
    cublasComputeType_t ct = t == FF_F32 && c->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasOperation_t ta = bcm ? CUBLAS_OP_T : CUBLAS_OP_N, tb = acm ? CUBLAS_OP_T : CUBLAS_OP_N;
    /* Lt's A is b, its B is a; C is D */
    size_t es = ff_dtype_size(t);
    uint32_t al[3] = {lt_alignment(cuda_view_ptr(b), ldb, es), lt_alignment(cuda_view_ptr(a), lda, es),
                      lt_alignment(d, ldd, ff_dtype_size(dt))};
    if (!(s = cublasLtMatmulDescCreate(&q.op, ct, CUDA_R_32F)) &&
        !(s = cublasLtMatmulDescSetAttribute(q.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) &&
        !(s = cublasLtMatmulDescSetAttribute(q.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)) &&
        !(s = cublasLtMatmulDescSetAttribute(q.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi)) &&
        !(s = bias ? cublasLtMatmulDescSetAttribute(q.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)
                   : CUBLAS_STATUS_SUCCESS)) {
        what = "cublasLtMatrixLayoutCreate";
        /* Lt's A is b's matrix (N x K as stored, or K x N transposed), its B is a's */
        if (!(s = cublasLtMatrixLayoutCreate(&q.la, lt_type(t), bcm ? K : N, bcm ? N : K, ldb)) &&
            !(s = cublasLtMatrixLayoutCreate(&q.lb, lt_type(t), acm ? M : K, acm ? K : M, lda)))
            s = cublasLtMatrixLayoutCreate(&q.ld, lt_type(dt), N, M, ldd);
    }
    cublasLtMatmulHeuristicResult_t h;
    cublasLtHandle_t lt = (cublasLtHandle_t)c->cublaslt;
    lt_key key;
    memset(&key, 0, sizeof key);
    key.t = (int32_t)t, key.dt = (int32_t)dt, key.ct = (int32_t)ct, key.ta = (int32_t)ta, key.tb = (int32_t)tb;
    key.epi = (int32_t)epi, key.bias = bias != NULL;
    memcpy(key.al, al, sizeof al);
    key.M = M, key.N = N, key.K = K, key.lda = lda, key.ldb = ldb, key.ldd = ldd;
    const cublasLtMatmulHeuristicResult_t *known = s ? NULL : lt_cached(c, &key);
    if (known) {
        h = *known;
    } else if (!s) { /* the preference only matters to the heuristic: made on a miss alone */
        uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE; /* no partial sums in a half */
        uint64_t ws_max = LT_WORKSPACE;
        static const cublasLtMatmulPreferenceAttributes_t which[4] = {
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
        what = "cublasLtMatmulPreference";
        if (!(s = cublasLtMatmulPreferenceCreate(&q.pref)))
            s = cublasLtMatmulPreferenceSetAttribute(q.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_max,
                                                     sizeof ws_max);
        if (!s)
            s = cublasLtMatmulPreferenceSetAttribute(q.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &scheme,
                                                     sizeof scheme);
        for (int i = 0; i < 4 && !s; i++)
            s = cublasLtMatmulPreferenceSetAttribute(q.pref, which[i], &al[i < 3 ? i : 2], sizeof al[0]);
        int got = 0;
        if (!s) {
            what = "cublasLtMatmulAlgoGetHeuristic";
            s = cublasLtMatmulAlgoGetHeuristic(lt, q.op, q.la, q.lb, q.ld, q.ld, q.pref, 1, &h, &got);
            if (!s && got < 1) s = CUBLAS_STATUS_NOT_SUPPORTED;
        }
        if (!s) lt_remember(c, &key, &h);
    }
    ff_status st = FF_OK;
    void *ws = NULL;
    if (!s && h.workspaceSize && !(ws = cuda_alloc(c, h.workspaceSize))) st = FF_ERR_OOM;
    if (!s && !st) {
        const float one = 1.0f, zero = 0.0f;
        what = "cublasLtMatmul";
        s = cublasLtMatmul(lt, q.op, &one, cuda_view_ptr(b), q.la, cuda_view_ptr(a), q.lb, &zero, d, q.ld, d, q.ld, &h.algo, ws,
                           h.workspaceSize, c->stream);
    }
    if (ws) cuda_free(c, ws); /* stream order: reused only by later work */
    lt_free(&q);
    if (s)
        return cuda_error(c, FF_ERR_BACKEND, "cuda linear: %s failed: %s ([%lld x %lld] @ [%lld x %lld], %s)", what,
                          cublasLtGetStatusString(s), (long long)M, (long long)K, (long long)K, (long long)N,
                          ffb_dtype_name(t));
    return st;
}

ff_status cuda_linear(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st = ffb_linear_check(c->host, "cuda", dst, src, n_src, act,
                                    cuda_linear_supported(act, dst ? dst->dtype : FF_BOOL));
    if (st) return st;
    const ff_view *a = &src[0], *b = &src[1], *bias = n_src == 3 ? &src[2] : NULL;
    int64_t M = dst->shape[0], N = dst->shape[1], K = a->shape[1];
    if (M == 0 || N == 0) return FF_OK;
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda linear: [%lld x %lld] @ [%lld x %lld] exceeds cuBLAS's sizes",
                          (long long)M, (long long)K, (long long)K, (long long)N);
    if ((st = cuda_use_device(c, "linear"))) return st;
    /* the epilogues cuBLASLt computes exactly (K = 0: zeros and our epilogue; Lt wants K >= 1) */
    int in_lt = K > 0 && (act == FF_LINEAR_NO_ACT || act == FF_UNARY_RELU);
    ff_view at, bt, dt, ft, bv;
    void *ta = NULL, *tb = NULL, *td = NULL, *tbias = NULL;
    int acm, bcm, dcm = 0;
    int64_t lda, ldb, ldd = N;
    if ((st = cuda_mat_operand(c, &a, M, K, &at, &ta, &acm, &lda))) return st;
    st = cuda_mat_operand(c, &b, K, N, &bt, &tb, &bcm, &ldb);
    /* where the product lands: dst itself (row-major, and F32 or the Lt epilogue's type),
     * else a row-major temporary (dst's dtype with the Lt epilogue, F32 otherwise) */
    int direct = !st && (in_lt || dst->dtype == FF_F32) && cuda_mat_layout(dst, M, N, &dcm, &ldd) && !dcm;
    ff_view out = *dst;
    if (!st && !direct) {
        ft = *dst;
        ft.dtype = in_lt ? dst->dtype : FF_F32;
        if (!(td = cuda_contiguous_copy(c, &ft, &dt, 0))) st = FF_ERR_OOM;
        out = dt, ldd = N;
    }
    /* the Lt bias: N contiguous elements of dst's dtype, 16-byte aligned (cuBLASLt states
     * no alignment for it; a fresh buffer's is the safe one) */
    const void *bias_ptr = NULL;
    if (!st && bias && in_lt) {
        if ((N == 1 || bias->strides[1] == 1) && (uintptr_t)cuda_view_ptr(bias) % 16 == 0) {
            bias_ptr = cuda_view_ptr(bias);
        } else {
            bv = *bias;
            bv.ndim = 1, bv.shape[0] = N, bv.strides[0] = bias->strides[1];
            ff_view bc;
            if (!(tbias = cuda_contiguous_copy(c, &bv, &bc, 1))) st = FF_ERR_OOM;
            else bias_ptr = tbias;
        }
    }
    cublasLtEpilogue_t epi = !in_lt ? CUBLASLT_EPILOGUE_DEFAULT
                             : act == FF_UNARY_RELU ? (bias_ptr ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU)
                                                    : (bias_ptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    if (!st) {
        pthread_mutex_lock(&c->blas_lock);
        cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
        if (!c->cublaslt) {
            cublasLtHandle_t h = NULL;
            if ((s = cublasLtCreate(&h)) == CUBLAS_STATUS_SUCCESS) c->cublaslt = h;
        }
        if (s) st = cuda_error(c, FF_ERR_BACKEND, "cuda linear: cublasLtCreate failed: %s", cublasLtGetStatusString(s));
        else if (K == 0) /* an empty sum: zeros, then the epilogue below */
            st = cuda_fill(c, &out, (ff_scalar){0});
        else
            st = lt_matmul(c, a, acm, lda, b, bcm, ldb, cuda_view_ptr(&out),
                           out.dtype, ldd, bias_ptr, epi);
        pthread_mutex_unlock(&c->blas_lock);
    }
    if (!st && !in_lt) /* bias and activation in f32, one rounding to dst */
        st = cuda_linear_epilogue(c, dst, &out, bias, act);
    else if (!st && td)
        st = cuda_copy(c, dst, &out);
    if (ta) cuda_free(c, ta);
    if (tb) cuda_free(c, tb);
    if (td) cuda_free(c, td);
    if (tbias) cuda_free(c, tbias);
    return st;
}
