/*
 * conv2d forward and both backward passes through cuDNN (the optional vtable entries),
 * F32, F64, F16 and BF16, with dilation and groups. Built where cudnn.h and libcudnn are
 * found (FF_CUDA_CUDNN); without them supports() declines and the core composes the
 * convolution from views and matmul, as before.
 *
 * Why cuDNN: the composition copies the input KH * KW times (im2col by views, then a
 * GEMM with a short K) and scatters it back for the input gradient; cuDNN's kernels
 * (implicit GEMM on the tensor cores for the halves) are what PyTorch runs on the same
 * card, so the two meet on equal terms.
 *
 * The legacy descriptor API (cudnnConvolutionForward and its backward twins, in cuDNN 8
 * and 9): tensors go to cuDNN with their own strides when those describe a layout cuDNN
 * can walk (every dim's stride at least the extent of the dims inside it, in int
 * range); the filter must be packed, NCHW or NHWC. Any other view is copied into a
 * dense temporary first (an input) or computed there and copied out (an output).
 * Accuracy as matmul's: f32 in f32 FMAs (TF32 only with FF_CUDA_TF32=1, as matmul), f64
 * in f64, f16/bf16 on the tensor cores with f32 accumulation and one rounding.
 * Algorithms: cuDNN's heuristics (cudnnGet*Algorithm_v7, as PyTorch without
 * cudnn.benchmark), the first that succeeds, is deterministic (the same bits every run:
 * no atomics in the backward passes) and whose workspace can be allocated; the choice is
 * cached per problem (shapes, strides, dtype, params). The handle is created at the first
 * convolution (cudnnCreate costs time and device memory that most programs never need).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

#ifdef FF_CUDA_CUDNN
#include <cudnn.h>
#endif

int cuda_conv2d_supported(int which, ff_dtype t)
{
#ifdef FF_CUDA_CUDNN
    return ((which >= 0 && which <= 2) || which == FF_CONV2D_DILATION_GROUPS) &&
           (t == FF_F32 || t == FF_F64 || t == FF_F16 || t == FF_BF16);
#else
    (void)which, (void)t;
    return 0;
#endif
}

static const char *const entry_name[3] = {"conv2d", "conv2d_backward_input", "conv2d_backward_weight"};

/* The checks every entry shares: rank-4 views of one supported dtype, sane params. */
static ff_status check(cuda_ctx *c, int which, const ff_view *out, const ff_view *a, const ff_view *b,
                       const ff_conv2d_params *p)
{
    const char *entry = entry_name[which];
    ff_status st;
    if ((st = cuda_check_view(c, entry, "output", out, 1)) || (st = cuda_check_view(c, entry, "a", a, 1)) ||
        (st = cuda_check_view(c, entry, "b", b, 1)))
        return st;
    if (out->ndim != 4 || a->ndim != 4 || b->ndim != 4)
        return cuda_error(c, FF_ERR_INVALID, "cuda %s: views must be rank 4 (got %d, %d, %d)", entry, (int)out->ndim,
                          (int)a->ndim, (int)b->ndim);
    if (!cuda_conv2d_supported(which, out->dtype) || a->dtype != out->dtype || b->dtype != out->dtype)
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda %s: not supported on %s, %s, %s%s", entry,
                          ffb_dtype_name(out->dtype), ffb_dtype_name(a->dtype), ffb_dtype_name(b->dtype),
                          cuda_conv2d_supported(which, FF_F32) ? "" : " (built without cuDNN)");
    if (!p || p->stride[0] < 1 || p->stride[1] < 1 || p->padding[0] < 0 || p->padding[1] < 0 || p->dilation[0] < 1 ||
        p->dilation[1] < 1 || p->groups < 1)
        return cuda_error(c, FF_ERR_INVALID, "cuda %s: stride, dilation and groups must be >= 1 and padding >= 0",
                          entry);
    return FF_OK;
}

#ifndef FF_CUDA_CUDNN

/* without cuDNN the checks refuse every dtype ("built without cuDNN") */
static ff_status conv_entry(cuda_ctx *c, int which, const ff_view *out, const ff_view *a, const ff_view *b,
                            const ff_conv2d_params *p)
{
    return check(c, which, out, a, b, p);
}
void cuda_dnn_destroy(cuda_ctx *c) { (void)c; }
void cuda_dnn_describe(char *buf, size_t cap) { snprintf(buf, cap, "conv2d composed (built without cuDNN)"); }

#else

#define ALGO_CACHE 64

/* One cached choice: the problem's key and the algorithm heuristics picked for it. */
typedef struct conv_choice {
    int64_t key[40];
    int algo;
    int used;
} conv_choice;

struct cuda_dnn {
    cudnnHandle_t handle;
    conv_choice cache[ALGO_CACHE];
    int next; /* round-robin slot to replace */
};

static ff_status dnn_fail(cuda_ctx *c, int which, const char *call, cudnnStatus_t s)
{
    return cuda_error(c, s == CUDNN_STATUS_ALLOC_FAILED ? FF_ERR_OOM : FF_ERR_BACKEND, "cuda %s: %s failed: %s",
                      entry_name[which], call, cudnnGetErrorString(s));
}

void cuda_dnn_destroy(cuda_ctx *c)
{
    if (!c->dnn) return;
    if (c->dnn->handle) cudnnDestroy(c->dnn->handle);
    free(c->dnn);
    c->dnn = NULL;
}

void cuda_dnn_describe(char *buf, size_t cap)
{
    size_t v = cudnnGetVersion(); /* 9.19.0 is 91900; 8.9.7 was 8907 */
    if (v >= 90000) snprintf(buf, cap, "conv2d through cuDNN %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
    else snprintf(buf, cap, "conv2d through cuDNN %zu.%zu.%zu", v / 1000, v / 100 % 10, v % 100);
}

static cudnnDataType_t dnn_type(ff_dtype t)
{
    return t == FF_F64 ? CUDNN_DATA_DOUBLE : t == FF_F16 ? CUDNN_DATA_HALF : t == FF_BF16 ? CUDNN_DATA_BFLOAT16
                                                                                        : CUDNN_DATA_FLOAT;
}

/* cuDNN walks a tensor through four int strides; it takes v's own when, ordered from the
 * innermost, each is at least the extent (stride * size) of the dims inside it, so no two
 * elements share an address (a broadcast's stride 0 does not). A size-1 dim is never
 * stepped over: it gets the outermost extent. 0 when v needs a dense copy. */
static int dnn_strides(const ff_view *v, int s[4])
{
    int order[4], n = 0;
    for (int d = 0; d < 4; d++) {
        if (v->shape[d] > INT_MAX) return 0;
        if (v->shape[d] != 1) order[n++] = d;
    }
    for (int i = 1; i < n; i++) /* innermost (smallest stride) first */
        for (int j = i; j > 0 && v->strides[order[j]] < v->strides[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    int64_t extent = 1;
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (v->strides[d] < extent || v->strides[d] > INT_MAX) return 0;
        s[d] = (int)v->strides[d];
        extent = v->strides[d] * v->shape[d];
    }
    if (extent > INT_MAX) return 0;
    for (int d = 0; d < 4; d++)
        if (v->shape[d] == 1) s[d] = (int)extent;
    return 1;
}

/* The filter's layout: NCHW or NHWC when packed (size-1 dims' strides free), else -1. */
static int dnn_filter_format(const ff_view *v)
{
    static const int perm[2][4] = {{0, 1, 2, 3}, {0, 2, 3, 1}}; /* outermost first */
    for (int f = 0; f < 2; f++) {
        int64_t want = 1;
        int ok = 1;
        for (int i = 3; i >= 0 && ok; i--) {
            int d = perm[f][i];
            if (v->shape[d] != 1 && v->strides[d] != want) ok = 0;
            want *= v->shape[d];
        }
        if (ok && want <= INT_MAX) return f ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    }
    return -1;
}

/* An operand as cuDNN gets it: the user's view, or a dense temporary standing in for it. */
typedef struct dnn_operand {
    ff_view v;   /* what cuDNN reads or writes */
    void *temp;  /* the temporary, or NULL */
    int s[4];    /* tensor strides */
    int format;  /* filters: CUDNN_TENSOR_NCHW / NHWC */
} dnn_operand;

static ff_status operand(cuda_ctx *c, int which, const ff_view *user, int filter, int is_out, dnn_operand *o)
{
    o->v = *user, o->temp = NULL;
    if (filter ? (o->format = dnn_filter_format(user)) >= 0 : dnn_strides(user, o->s)) return FF_OK;
    int64_t n = ff_view_numel(user), st = 1;
    if (!(o->temp = cuda_temp(c, entry_name[which], (size_t)(n > 0 ? n : 1) * ff_dtype_size(user->dtype))))
        return FF_ERR_OOM;
    o->v.buf = o->temp, o->v.offset = 0;
    for (int d = 3; d >= 0; d--) o->v.strides[d] = st, st *= user->shape[d];
    o->format = CUDNN_TENSOR_NCHW;
    if (!filter && !dnn_strides(&o->v, o->s)) /* a dense view always nests; beyond int range it does not */
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda %s: a [%lld, %lld, %lld, %lld] tensor is beyond cuDNN's int "
                          "strides", entry_name[which], (long long)user->shape[0], (long long)user->shape[1],
                          (long long)user->shape[2], (long long)user->shape[3]);
    return is_out ? FF_OK : cuda_copy(c, &o->v, user);
}

static void *operand_ptr(const dnn_operand *o) { return cuda_view_ptr(&o->v); }

/* The cache key: everything heuristics see. */
static void problem_key(int64_t *k, int which, const dnn_operand *x, const dnn_operand *w, const dnn_operand *y,
                        const ff_conv2d_params *p, int math)
{
    int n = 0;
    k[n++] = which, k[n++] = x->v.dtype, k[n++] = w->format, k[n++] = math;
    for (int d = 0; d < 4; d++) k[n++] = x->v.shape[d], k[n++] = x->s[d], k[n++] = y->v.shape[d], k[n++] = y->s[d];
    for (int d = 0; d < 4; d++) k[n++] = w->v.shape[d];
    for (int d = 0; d < 2; d++) k[n++] = p->stride[d], k[n++] = p->padding[d], k[n++] = p->dilation[d];
    k[n++] = p->groups;
    while (n < 40) k[n++] = 0;
}

typedef struct dnn_descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
} dnn_descs;

static void descs_destroy(dnn_descs *d)
{
    if (d->x) cudnnDestroyTensorDescriptor(d->x);
    if (d->y) cudnnDestroyTensorDescriptor(d->y);
    if (d->w) cudnnDestroyFilterDescriptor(d->w);
    if (d->conv) cudnnDestroyConvolutionDescriptor(d->conv);
}

static cudnnStatus_t tensor_desc(cudnnTensorDescriptor_t *t, const dnn_operand *o)
{
    cudnnStatus_t s = cudnnCreateTensorDescriptor(t);
    if (s) return s;
    const int64_t *sh = o->v.shape;
    return cudnnSetTensor4dDescriptorEx(*t, dnn_type(o->v.dtype), (int)sh[0], (int)sh[1], (int)sh[2], (int)sh[3],
                                        o->s[0], o->s[1], o->s[2], o->s[3]);
}

static ff_status descs_make(cuda_ctx *c, int which, dnn_descs *d, const dnn_operand *x, const dnn_operand *w,
                            const dnn_operand *y, const ff_conv2d_params *p, int math)
{
    cudnnStatus_t s;
    const int64_t *ws = w->v.shape;
    ff_dtype t = x->v.dtype;
    for (int i = 0; i < 2; i++)
        if (p->stride[i] > INT_MAX || p->padding[i] > INT_MAX || p->dilation[i] > INT_MAX || p->groups > INT_MAX)
            return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda %s: stride, padding, dilation or groups beyond int",
                              entry_name[which]);
    if ((s = tensor_desc(&d->x, x))) return dnn_fail(c, which, "the x descriptor", s);
    if ((s = tensor_desc(&d->y, y))) return dnn_fail(c, which, "the y descriptor", s);
    if ((s = cudnnCreateFilterDescriptor(&d->w)) ||
        (s = cudnnSetFilter4dDescriptor(d->w, dnn_type(t), (cudnnTensorFormat_t)w->format, (int)ws[0], (int)ws[1],
                                        (int)ws[2], (int)ws[3])))
        return dnn_fail(c, which, "the filter descriptor", s);
    /* the sums: f32 for the halves (tensor cores, f32 accumulation), f64 for f64 */
    cudnnDataType_t acc = t == FF_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    if ((s = cudnnCreateConvolutionDescriptor(&d->conv)) ||
        (s = cudnnSetConvolution2dDescriptor(d->conv, (int)p->padding[0], (int)p->padding[1], (int)p->stride[0],
                                             (int)p->stride[1], (int)p->dilation[0], (int)p->dilation[1],
                                             CUDNN_CROSS_CORRELATION, acc)) ||
        (s = cudnnSetConvolutionGroupCount(d->conv, (int)p->groups)) ||
        (s = cudnnSetConvolutionMathType(d->conv, (cudnnMathType_t)math)))
        return dnn_fail(c, which, "the convolution descriptor", s);
    return FF_OK;
}

/* The heuristics' candidates, best first, as (algo, status, determinism). */
#define MAX_ALGOS 16
typedef struct dnn_algo {
    int algo, ok;
} dnn_algo;

static cudnnStatus_t candidates(cudnnHandle_t h, int which, const dnn_descs *d, dnn_algo *out, int *n)
{
    cudnnStatus_t s;
    int got = 0;
    *n = 0;
    if (which == 0) {
        cudnnConvolutionFwdAlgoPerf_t r[MAX_ALGOS];
        if ((s = cudnnGetConvolutionForwardAlgorithm_v7(h, d->x, d->w, d->conv, d->y, MAX_ALGOS, &got, r))) return s;
        for (int i = 0; i < got; i++)
            out[(*n)++] = (dnn_algo){r[i].algo, !r[i].status && r[i].determinism == CUDNN_DETERMINISTIC};
    } else if (which == 1) {
        cudnnConvolutionBwdDataAlgoPerf_t r[MAX_ALGOS];
        if ((s = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d->w, d->y, d->conv, d->x, MAX_ALGOS, &got, r)))
            return s;
        for (int i = 0; i < got; i++)
            out[(*n)++] = (dnn_algo){r[i].algo, !r[i].status && r[i].determinism == CUDNN_DETERMINISTIC};
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t r[MAX_ALGOS];
        if ((s = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d->x, d->y, d->conv, d->w, MAX_ALGOS, &got, r)))
            return s;
        for (int i = 0; i < got; i++)
            out[(*n)++] = (dnn_algo){r[i].algo, !r[i].status && r[i].determinism == CUDNN_DETERMINISTIC};
    }
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t workspace_size(cudnnHandle_t h, int which, const dnn_descs *d, int algo, size_t *bytes)
{
    if (which == 0)
        return cudnnGetConvolutionForwardWorkspaceSize(h, d->x, d->w, d->conv, d->y, (cudnnConvolutionFwdAlgo_t)algo,
                                                       bytes);
    if (which == 1)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d->w, d->y, d->conv, d->x,
                                                            (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d->x, d->y, d->conv, d->w,
                                                          (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
}

static cudnnStatus_t run_algo(cudnnHandle_t h, int which, const dnn_descs *d, int algo, void *ws, size_t bytes,
                              dnn_operand *x, dnn_operand *w, dnn_operand *y)
{
    /* alpha and beta are double for double data, float otherwise (cuDNN's rule) */
    double one_d = 1.0, zero_d = 0.0;
    float one_f = 1.0f, zero_f = 0.0f;
    int dbl = x->v.dtype == FF_F64;
    const void *one = dbl ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = dbl ? (const void *)&zero_d : (const void *)&zero_f;
    if (which == 0)
        return cudnnConvolutionForward(h, one, d->x, operand_ptr(x), d->w, operand_ptr(w), d->conv,
                                       (cudnnConvolutionFwdAlgo_t)algo, ws, bytes, zero, d->y, operand_ptr(y));
    if (which == 1)
        return cudnnConvolutionBackwardData(h, one, d->w, operand_ptr(w), d->y, operand_ptr(y), d->conv,
                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws, bytes, zero, d->x,
                                            operand_ptr(x));
    return cudnnConvolutionBackwardFilter(h, one, d->x, operand_ptr(x), d->y, operand_ptr(y), d->conv,
                                          (cudnnConvolutionBwdFilterAlgo_t)algo, ws, bytes, zero, d->w,
                                          operand_ptr(w));
}

/* Runs the problem with the cached algorithm, or with the first candidate that works
 * (and caches it). Under c->dnn_lock: a cuDNN handle is not for concurrent calls. */
static ff_status run(cuda_ctx *c, int which, const dnn_descs *d, dnn_operand *x, dnn_operand *w, dnn_operand *y,
                     const int64_t *key)
{
    struct cuda_dnn *dnn = c->dnn;
    dnn_algo cand[MAX_ALGOS];
    int n = 0;
    for (int i = 0; i < ALGO_CACHE && !n; i++)
        if (dnn->cache[i].used && !memcmp(dnn->cache[i].key, key, sizeof dnn->cache[i].key))
            cand[0] = (dnn_algo){dnn->cache[i].algo, 1}, n = 1;
    int cached = n;
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS, last = CUDNN_STATUS_NOT_SUPPORTED;
    if (!n && (s = candidates(dnn->handle, which, d, cand, &n))) return dnn_fail(c, which, "the algorithm heuristics", s);
    for (int i = 0; i < n; i++) {
        if (!cand[i].ok) continue;
        size_t bytes = 0;
        if ((s = workspace_size(dnn->handle, which, d, cand[i].algo, &bytes))) {
            last = s;
            continue;
        }
        void *ws = bytes ? cuda_alloc(c, bytes) : NULL;
        if (bytes && !ws) { /* too big for the device now: try the next algorithm */
            last = CUDNN_STATUS_ALLOC_FAILED;
            continue;
        }
        s = run_algo(dnn->handle, which, d, cand[i].algo, ws, bytes, x, w, y);
        if (ws) cuda_free(c, ws); /* stream order: reused only by later work */
        if (s == CUDNN_STATUS_SUCCESS) {
            if (!cached) {
                conv_choice *slot = &dnn->cache[dnn->next];
                dnn->next = (dnn->next + 1) % ALGO_CACHE;
                memcpy(slot->key, key, sizeof slot->key);
                slot->algo = cand[i].algo, slot->used = 1;
            }
            return FF_OK;
        }
        last = s;
    }
    const int64_t *xs = x->v.shape, *ws_ = w->v.shape;
    return cuda_error(c, last == CUDNN_STATUS_ALLOC_FAILED ? FF_ERR_OOM : FF_ERR_UNSUPPORTED,
                      "cuda %s: cuDNN ran no deterministic algorithm for x [%lld, %lld, %lld, %lld], w [%lld, %lld, "
                      "%lld, %lld] %s (last: %s); FF_CONV2D=compose composes it instead",
                      entry_name[which], (long long)xs[0], (long long)xs[1], (long long)xs[2], (long long)xs[3],
                      (long long)ws_[0], (long long)ws_[1], (long long)ws_[2], (long long)ws_[3],
                      ffb_dtype_name(x->v.dtype), cudnnGetErrorString(last));
}

static ff_status dnn_open(cuda_ctx *c, int which)
{
    if (c->dnn) return FF_OK;
    struct cuda_dnn *dnn = calloc(1, sizeof *dnn);
    if (!dnn) return cuda_error(c, FF_ERR_OOM, "cuda %s: out of memory", entry_name[which]);
    cudnnStatus_t s = cudnnCreate(&dnn->handle);
    if (!s) s = cudnnSetStream(dnn->handle, c->stream);
    if (s) {
        if (dnn->handle) cudnnDestroy(dnn->handle);
        free(dnn);
        return dnn_fail(c, which, "cudnnCreate", s);
    }
    c->dnn = dnn;
    return FF_OK;
}

/* which 0: out = y, a = x, b = w; 1: out = gx, a = gy, b = w; 2: out = gw, a = gy, b = x. */
static ff_status conv_entry(cuda_ctx *c, int which, const ff_view *out, const ff_view *a, const ff_view *b,
                            const ff_conv2d_params *p)
{
    ff_status st = check(c, which, out, a, b, p);
    if (st) return st;
    if (ff_view_numel(out) == 0) return FF_OK;
    if ((st = cuda_use_device(c, entry_name[which]))) return st;
    const ff_view *xu = which == 0 ? a : which == 1 ? out : b, *yu = which == 0 ? out : a, *wu = which == 2 ? out : b;
    if (ff_view_numel(xu) == 0 || ff_view_numel(yu) == 0 || ff_view_numel(wu) == 0) /* an empty sum: zeros */
        return cuda_fill(c, out, (ff_scalar){0});
    dnn_operand x = {0}, w = {0}, y = {0};
    dnn_descs d = {0};
    if ((st = operand(c, which, xu, 0, which == 1, &x)) || (st = operand(c, which, yu, 0, which == 0, &y)) ||
        (st = operand(c, which, wu, 1, which == 2, &w)))
        goto done;
    ff_dtype t = out->dtype;
    int math = ffb_is_half(t) ? CUDNN_TENSOR_OP_MATH : (t == FF_F32 && c->tf32) ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    if ((st = descs_make(c, which, &d, &x, &w, &y, p, math))) goto done;
    int64_t key[40];
    problem_key(key, which, &x, &w, &y, p, math);
    pthread_mutex_lock(&c->dnn_lock);
    st = dnn_open(c, which);
    if (!st) st = run(c, which, &d, &x, &w, &y, key);
    pthread_mutex_unlock(&c->dnn_lock);
    dnn_operand *o = which == 0 ? &y : which == 1 ? &x : &w;
    if (!st && o->temp) st = cuda_copy(c, out, &o->v);
done:
    descs_destroy(&d);
    if (x.temp) cuda_free(c, x.temp);
    if (y.temp) cuda_free(c, y.temp);
    if (w.temp) cuda_free(c, w.temp);
    return st;
}

#endif /* FF_CUDA_CUDNN */

ff_status cuda_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *w, const ff_conv2d_params *p)
{
    return conv_entry((cuda_ctx *)ctx, 0, y, x, w, p);
}
ff_status cuda_conv2d_backward_input(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *w,
                                     const ff_conv2d_params *p)
{
    return conv_entry((cuda_ctx *)ctx, 1, gx, gy, w, p);
}
ff_status cuda_conv2d_backward_weight(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                                      const ff_conv2d_params *p)
{
    return conv_entry((cuda_ctx *)ctx, 2, gw, gy, x, p);
}
