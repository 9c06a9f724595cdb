/*
 * The slice of cuDNN's legacy convolution API that backends/cuda/cuda_conv.c calls, over
 * host memory, for the emulated backend (tests/cuda_emu). It computes each convolution
 * directly in double (one rounding at the store) and refuses what cuDNN refuses, so the
 * plugin's planning is checked: descriptors whose dims do not match the convolution's
 * output, strides that let elements overlap, a filter that is not packed, mismatched
 * data types, a compute type the data type does not allow (double for double data,
 * float for float and the halves), groups that do not divide the channels, a workspace
 * smaller than asked for, alpha and beta read as double for double data and as float
 * otherwise. The heuristics list first an algorithm that is not supported and one that
 * is non-deterministic (the plugin must skip both: run, the first fails and the second
 * returns results scaled by 1.5, which the suite's comparison catches), then one that needs a workspace
 * (filled here, so a short one is overrun where ASan would see it) and one that needs
 * none.
 */
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "ff/backend_abi.h"
#include "ff_backend_scalar.h"

#include "cuda_emu_graph.h"

struct cudnnContext {
    cudaStream_t stream;
};
struct cudnnTensorStruct {
    cudnnDataType_t t;
    int dim[4], stride[4], set;
};
struct cudnnFilterStruct {
    cudnnDataType_t t;
    cudnnTensorFormat_t format;
    int dim[4], set;
};
struct cudnnConvolutionStruct {
    int pad[2], stride[2], dil[2], groups, set;
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute;
    cudnnMathType_t math;
};

size_t cudnnGetVersion(void) { return 91900; }

const char *cudnnGetErrorString(cudnnStatus_t s)
{
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_ALLOC_FAILED: return "CUDNN_STATUS_ALLOC_FAILED";
    default: return "CUDNN_STATUS_(other)";
    }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *h)
{
    *h = calloc(1, sizeof **h);
    return *h ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t h)
{
    free(h);
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s)
{
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}

#define EMU_CREATE(fn, type)                                                                                          \
    cudnnStatus_t fn(type *d)                                                                                         \
    {                                                                                                                 \
        *d = calloc(1, sizeof **d);                                                                                   \
        return *d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;                                                 \
    }
EMU_CREATE(cudnnCreateTensorDescriptor, cudnnTensorDescriptor_t)
EMU_CREATE(cudnnCreateFilterDescriptor, cudnnFilterDescriptor_t)
EMU_CREATE(cudnnCreateConvolutionDescriptor, cudnnConvolutionDescriptor_t)
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return free(d), CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { return free(d), CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { return free(d), CUDNN_STATUS_SUCCESS; }

static int emu_type_ok(cudnnDataType_t t)
{
    return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16;
}

/* cuDNN's rule: positive dims, and strides under which no two elements share an address
 * (checked as the dims nest when ordered by stride). */
cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d, cudnnDataType_t t, int n, int c, int h, int w,
                                           int ns, int cs, int hs, int ws)
{
    int dim[4] = {n, c, h, w}, st[4] = {ns, cs, hs, ws}, order[4] = {0, 1, 2, 3};
    if (!emu_type_ok(t)) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < 4; i++)
        if (dim[i] < 1 || st[i] < 1) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && st[order[j]] < st[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1], order[j - 1] = x;
        }
    long long extent = 1;
    for (int i = 0; i < 4; i++) {
        int k = order[i];
        if (dim[k] > 1 && st[k] < extent) return CUDNN_STATUS_BAD_PARAM;
        if (dim[k] > 1) extent = (long long)st[k] * dim[k];
    }
    d->t = t, d->set = 1;
    memcpy(d->dim, dim, sizeof dim);
    memcpy(d->stride, st, sizeof st);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t f, int k,
                                         int c, int h, int w)
{
    if (!emu_type_ok(t) || (f != CUDNN_TENSOR_NCHW && f != CUDNN_TENSOR_NHWC) || k < 1 || c < 1 || h < 1 || w < 1)
        return CUDNN_STATUS_BAD_PARAM;
    d->t = t, d->format = f, d->set = 1;
    d->dim[0] = k, d->dim[1] = c, d->dim[2] = h, d->dim[3] = w;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int u, int v, int dh,
                                              int dw, cudnnConvolutionMode_t mode, cudnnDataType_t compute)
{
    if (ph < 0 || pw < 0 || u < 1 || v < 1 || dh < 1 || dw < 1 ||
        (compute != CUDNN_DATA_FLOAT && compute != CUDNN_DATA_DOUBLE && compute != CUDNN_DATA_HALF))
        return CUDNN_STATUS_BAD_PARAM;
    d->pad[0] = ph, d->pad[1] = pw, d->stride[0] = u, d->stride[1] = v, d->dil[0] = dh, d->dil[1] = dw;
    d->mode = mode, d->compute = compute, d->set = 1;
    if (!d->groups) d->groups = 1;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int g)
{
    if (g < 1) return CUDNN_STATUS_BAD_PARAM;
    d->groups = g;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m)
{
    d->math = m;
    return CUDNN_STATUS_SUCCESS;
}

/* The problem the three descriptors state, validated as cuDNN does. */
static cudnnStatus_t emu_problem(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                                 const struct cudnnConvolutionStruct *cv, const struct cudnnTensorStruct *y)
{
    if (!x->set || !w->set || !cv->set || !y->set) return CUDNN_STATUS_BAD_PARAM;
    if (x->t != w->t || x->t != y->t) return CUDNN_STATUS_BAD_PARAM;
    if ((x->t == CUDNN_DATA_DOUBLE) != (cv->compute == CUDNN_DATA_DOUBLE)) return CUDNN_STATUS_NOT_SUPPORTED;
    if (cv->mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_NOT_SUPPORTED; /* the plugin's only mode */
    int g = cv->groups;
    if (x->dim[1] % g || w->dim[0] % g || x->dim[1] / g != w->dim[1]) return CUDNN_STATUS_BAD_PARAM;
    if (y->dim[0] != x->dim[0] || y->dim[1] != w->dim[0]) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < 2; i++) {
        long long k = (long long)cv->dil[i] * (w->dim[2 + i] - 1) + 1, in = x->dim[2 + i] + 2LL * cv->pad[i];
        if (in < k || y->dim[2 + i] != (in - k) / cv->stride[i] + 1) return CUDNN_STATUS_BAD_PARAM;
    }
    return CUDNN_STATUS_SUCCESS;
}

static ff_dtype emu_ff_type(cudnnDataType_t t)
{
    return t == CUDNN_DATA_DOUBLE ? FF_F64 : t == CUDNN_DATA_HALF ? FF_F16 : t == CUDNN_DATA_BFLOAT16 ? FF_BF16 : FF_F32;
}
static long long emu_at(const struct cudnnTensorStruct *t, int n, int c, int h, int w)
{
    return (long long)n * t->stride[0] + (long long)c * t->stride[1] + (long long)h * t->stride[2] +
           (long long)w * t->stride[3];
}
static long long emu_wat(const struct cudnnFilterStruct *f, int o, int c, int p, int q)
{
    const int *d = f->dim;
    return f->format == CUDNN_TENSOR_NCHW ? (((long long)o * d[1] + c) * d[2] + p) * d[3] + q
                                          : (((long long)o * d[2] + p) * d[3] + q) * d[1] + c;
}
static double emu_ld(const void *b, cudnnDataType_t t, long long at)
{
    ff_dtype ft = emu_ff_type(t);
    return ffb_ld_f64((const char *)b + at * (long long)ff_dtype_size(ft), ft);
}
static void emu_st(void *b, cudnnDataType_t t, long long at, double v)
{
    ff_dtype ft = emu_ff_type(t);
    ffb_st_f64((char *)b + at * (long long)ff_dtype_size(ft), ft, v);
}
static double emu_scalar(const void *p, cudnnDataType_t t) /* alpha, beta */
{
    return t == CUDNN_DATA_DOUBLE ? *(const double *)p : (double)*(const float *)p;
}

/* The three passes over one loop nest: for every (n, o, i, j) and window tap (c, p, q)
 * that lands inside x, acc_out += a * b as the pass says. */
enum { EMU_FWD, EMU_BWD_DATA, EMU_BWD_FILTER };

static cudnnStatus_t emu_conv(int pass, double scale, const void *alpha, const struct cudnnTensorStruct *xd, const void *x,
                              const struct cudnnFilterStruct *wd, const void *w, const struct cudnnConvolutionStruct *cv,
                              const struct cudnnTensorStruct *yd, const void *y, void *ws, size_t ws_bytes, size_t ws_need,
                              const void *beta, void *out)
{
    cudnnStatus_t s = emu_problem(xd, wd, cv, yd);
    if (s) return s;
    if (ws_bytes < ws_need || (ws_need && !ws)) return CUDNN_STATUS_BAD_PARAM;
    if (ws_need) memset(ws, 0xA5, ws_need);
    const int *X = xd->dim, *W = wd->dim, *Y = yd->dim;
    int g = cv->groups, cg = X[1] / g, og = W[0] / g;
    long long nout = pass == EMU_FWD          ? (long long)Y[0] * Y[1] * Y[2] * Y[3]
                     : pass == EMU_BWD_DATA ? (long long)X[0] * X[1] * X[2] * X[3]
                                            : (long long)W[0] * W[1] * W[2] * W[3];
    double *acc = calloc((size_t)nout, sizeof *acc);
    if (!acc) return CUDNN_STATUS_ALLOC_FAILED;
    for (int n = 0; n < Y[0]; n++)
        for (int o = 0; o < Y[1]; o++)
            for (int i = 0; i < Y[2]; i++)
                for (int j = 0; j < Y[3]; j++)
                    for (int c = 0; c < cg; c++)
                        for (int p = 0; p < W[2]; p++)
                            for (int q = 0; q < W[3]; q++) {
                                int h = i * cv->stride[0] + p * cv->dil[0] - cv->pad[0];
                                int v = j * cv->stride[1] + q * cv->dil[1] - cv->pad[1];
                                if (h < 0 || h >= X[2] || v < 0 || v >= X[3]) continue;
                                int xc = (o / og) * cg + c;
                                long long xi = emu_at(xd, n, xc, h, v), wi = emu_wat(wd, o, c, p, q);
                                long long yi = emu_at(yd, n, o, i, j);
                                if (pass == EMU_FWD)
                                    acc[(((long long)n * Y[1] + o) * Y[2] + i) * Y[3] + j] +=
                                        emu_ld(x, xd->t, xi) * emu_ld(w, wd->t, wi);
                                else if (pass == EMU_BWD_DATA)
                                    acc[(((long long)n * X[1] + xc) * X[2] + h) * X[3] + v] +=
                                        emu_ld(y, yd->t, yi) * emu_ld(w, wd->t, wi);
                                else
                                    acc[(((long long)o * W[1] + c) * W[2] + p) * W[3] + q] +=
                                        emu_ld(y, yd->t, yi) * emu_ld(x, xd->t, xi);
                            }
    double a = scale * emu_scalar(alpha, xd->t), b = emu_scalar(beta, xd->t);
    long long k = 0;
    const int *D = pass == EMU_FWD ? Y : pass == EMU_BWD_DATA ? X : W;
    for (int d0 = 0; d0 < D[0]; d0++)
        for (int d1 = 0; d1 < D[1]; d1++)
            for (int d2 = 0; d2 < D[2]; d2++)
                for (int d3 = 0; d3 < D[3]; d3++, k++) {
                    long long at = pass == EMU_FWD        ? emu_at(yd, d0, d1, d2, d3)
                                   : pass == EMU_BWD_DATA ? emu_at(xd, d0, d1, d2, d3)
                                                          : emu_wat(wd, d0, d1, d2, d3);
                    double old = b != 0 ? emu_ld(out, xd->t, at) : 0; /* beta 0: never read */
                    emu_st(out, xd->t, at, a * acc[k] + (b != 0 ? b * old : 0));
                }
    free(acc);
    return CUDNN_STATUS_SUCCESS;
}

/* The heuristics' list, the same for every pass: 0 not supported, 1 non-deterministic,
 * 2 needs a workspace, 3 needs none. */
#define EMU_ALGOS 4
static size_t emu_ws_need(const struct cudnnTensorStruct *x, int algo)
{
    return algo == 2 ? (size_t)x->dim[1] * 64 + 40 : 0;
}
#define EMU_HEURISTICS()                                                                                              \
    do {                                                                                                              \
        cudnnStatus_t s_ = emu_problem(x, w, cv, y);                                                                  \
        if (s_) return s_;                                                                                            \
        int n_ = req < EMU_ALGOS ? req : EMU_ALGOS;                                                                   \
        for (int i_ = 0; i_ < n_; i_++) {                                                                             \
            memset(&perf[i_], 0, sizeof perf[i_]);                                                                    \
            perf[i_].algo = (__typeof__(perf[i_].algo))(i_ == 0 ? 7 : i_ == 1 ? 0 : i_ == 2 ? 1 : 3);                   \
            perf[i_].status = i_ == 0 ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;                            \
            perf[i_].determinism = i_ == 1 ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;                           \
            perf[i_].mathType = cv->math;                                                                             \
            perf[i_].memory = emu_ws_need(x, i_);                                                                     \
        }                                                                                                             \
        *got = n_;                                                                                                    \
        return CUDNN_STATUS_SUCCESS;                                                                                  \
    } while (0)

/* algo numbers as the list gives them: 7 (unsupported), 0 (non-deterministic), 1 (workspace), 3 (none) */
static int emu_algo_index(int algo) { return algo == 7 ? 0 : algo == 0 ? 1 : algo == 1 ? 2 : algo == 3 ? 3 : -1; }

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t cv,
                                                     const cudnnTensorDescriptor_t y, const int req, int *got,
                                                     cudnnConvolutionFwdAlgoPerf_t *perf)
{
    (void)h;
    EMU_HEURISTICS();
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t h, const cudnnFilterDescriptor_t w,
                                                          const cudnnTensorDescriptor_t y,
                                                          const cudnnConvolutionDescriptor_t cv,
                                                          const cudnnTensorDescriptor_t x, const int req, int *got,
                                                          cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
    (void)h;
    EMU_HEURISTICS();
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                            const cudnnTensorDescriptor_t y,
                                                            const cudnnConvolutionDescriptor_t cv,
                                                            const cudnnFilterDescriptor_t w, const int req, int *got,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t *perf)
{
    (void)h;
    EMU_HEURISTICS();
}

static cudnnStatus_t emu_ws(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w, const struct cudnnConvolutionStruct *cv,
                            const struct cudnnTensorStruct *y, int algo, size_t *bytes)
{
    cudnnStatus_t s = emu_problem(x, w, cv, y);
    if (s) return s;
    int i = emu_algo_index(algo);
    if (i <= 0) return CUDNN_STATUS_NOT_SUPPORTED;
    *bytes = emu_ws_need(x, i);
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                      const cudnnFilterDescriptor_t w,
                                                      const cudnnConvolutionDescriptor_t cv,
                                                      const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
                                                      size_t *bytes)
{
    (void)h;
    return emu_ws(x, w, cv, y, (int)algo, bytes);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t h, const cudnnFilterDescriptor_t w,
                                                           const cudnnTensorDescriptor_t y,
                                                           const cudnnConvolutionDescriptor_t cv,
                                                           const cudnnTensorDescriptor_t x,
                                                           cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes)
{
    (void)h;
    return emu_ws(x, w, cv, y, (int)algo, bytes);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                             const cudnnTensorDescriptor_t y,
                                                             const cudnnConvolutionDescriptor_t cv,
                                                             const cudnnFilterDescriptor_t w,
                                                             cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes)
{
    (void)h;
    return emu_ws(x, w, cv, y, (int)algo, bytes);
}

/* Runs algorithm algo: the non-deterministic one "succeeds" with results off by half again,
 * so that a plugin that picks it fails the comparison instead of passing unnoticed. */
static cudnnStatus_t emu_run(int pass, int algo, const void *alpha, const struct cudnnTensorStruct *xd, const void *x,
                             const struct cudnnFilterStruct *wd, const void *w, const struct cudnnConvolutionStruct *cv,
                             const struct cudnnTensorStruct *yd, const void *y, void *ws, size_t ws_bytes, const void *beta,
                             void *out)
{
    int i = emu_algo_index(algo);
    if (i <= 0) return CUDNN_STATUS_NOT_SUPPORTED;
    return emu_conv(pass, i == 1 ? 1.5 : 1.0, alpha, xd, x, wd, w, cv, yd, y, ws, ws_bytes, emu_ws_need(xd, i), beta,
                    out);
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd,
                                      const void *x, const cudnnFilterDescriptor_t wd, const void *w,
                                      const cudnnConvolutionDescriptor_t cv, cudnnConvolutionFwdAlgo_t algo, void *ws,
                                      size_t ws_bytes, const void *beta, const cudnnTensorDescriptor_t yd, void *y)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUDNN_STATUS_NOT_SUPPORTED);
    (void)h;
    return emu_run(EMU_FWD, (int)algo, alpha, xd, x, wd, w, cv, yd, NULL, ws, ws_bytes, beta, y);
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, const cudnnFilterDescriptor_t wd,
                                           const void *w, const cudnnTensorDescriptor_t yd, const void *y,
                                           const cudnnConvolutionDescriptor_t cv, cudnnConvolutionBwdDataAlgo_t algo,
                                           void *ws, size_t ws_bytes, const void *beta,
                                           const cudnnTensorDescriptor_t xd, void *x)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUDNN_STATUS_NOT_SUPPORTED);
    (void)h;
    return emu_run(EMU_BWD_DATA, (int)algo, alpha, xd, NULL, wd, w, cv, yd, y, ws, ws_bytes, beta, x);
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd,
                                             const void *x, const cudnnTensorDescriptor_t yd, const void *y,
                                             const cudnnConvolutionDescriptor_t cv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t ws_bytes,
                                             const void *beta, const cudnnFilterDescriptor_t wd, void *w)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUDNN_STATUS_NOT_SUPPORTED);
    (void)h;
    return emu_run(EMU_BWD_FILTER, (int)algo, alpha, xd, x, wd, NULL, cv, yd, y, ws, ws_bytes, beta, w);
}
