/*
 * The fft entry through cuFFT (backend_abi.h's fft: FORWARD, INVERSE, R2C, C2R along one
 * axis, unnormalized, F32 and F64). Built where cufft.h and libcufft are found
 * (FF_CUDA_CUFFT); without them supports() declines and the core reports that the
 * backend does not support fft, as before.
 *
 * cuFFT transforms batches of lines laid out at one stride, while the ABI's views have
 * any strides: src is copied (the backend's own strided copy kernel) into a dense
 * temporary with the axis innermost, [lines, n] reals or [lines, n, 2] pairs, cuFFT
 * transforms that into a second dense temporary, and the result is copied out through a
 * view of it permuted back to dst's dims. The copies cost two passes of memory traffic
 * against one; in return every view works, and src is never written (cuFFT's C2R
 * overwrites its input). Before a C2R the imaginary parts of bin 0 and, for even n, bin
 * n / 2 are zeroed in the temporary: the ABI ignores them (as FFTW and PocketFFT do),
 * cuFFT does not promise to. F32 transforms in f32 and F64 in f64, as FFTW does for
 * cpu_blas.
 *
 * Plans (cufftMakePlanMany64, 64-bit sizes) are cached per (type, n, lines), 16 of
 * them, with cuFFT's own work-area allocation off: each execution gets its work area
 * from the backend's caching allocator, on the backend's stream, under c->fft_lock (a
 * plan is not for concurrent use).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#include "ff_backend_fft.h"

#ifdef FF_CUDA_CUFFT
#include <cufft.h>
#endif

int cuda_fft_supported(int op, ff_dtype t)
{
#ifdef FF_CUDA_CUFFT
    return ffb_fft_supported(op, t);
#else
    (void)op, (void)t;
    return 0;
#endif
}

#ifndef FF_CUDA_CUFFT

ff_status cuda_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    (void)dst, (void)src, (void)axis;
    return cuda_error((cuda_ctx *)ctx, FF_ERR_UNSUPPORTED, "cuda fft: op %d: built without cuFFT", op);
}
void cuda_fft_destroy(cuda_ctx *c) { (void)c; }

#else

#define PLAN_CACHE 16

typedef struct fft_plan {
    cufftHandle h;
    cufftType type;
    long long n, lines;
    size_t work;
    int used;
} fft_plan;

struct cuda_fft_plans {
    fft_plan p[PLAN_CACHE];
    int next;
};

void cuda_fft_destroy(cuda_ctx *c)
{
    if (!c->fft) return;
    for (int i = 0; i < PLAN_CACHE; i++)
        if (c->fft->p[i].used) cufftDestroy(c->fft->p[i].h);
    free(c->fft);
    c->fft = NULL;
}

static ff_status fft_fail(cuda_ctx *c, const char *call, cufftResult r)
{
    return cuda_error(c, r == CUFFT_ALLOC_FAILED ? FF_ERR_OOM : FF_ERR_BACKEND, "cuda fft: %s failed: cufftResult %d",
                      call, (int)r);
}

/* The cached plan for (type, n, lines), made on a miss (the oldest slot replaced). */
static ff_status plan_of(cuda_ctx *c, cufftType type, long long n, long long lines, fft_plan **out)
{
    if (!c->fft && !(c->fft = calloc(1, sizeof *c->fft)))
        return cuda_error(c, FF_ERR_OOM, "cuda fft: out of memory");
    struct cuda_fft_plans *f = c->fft;
    for (int i = 0; i < PLAN_CACHE; i++)
        if (f->p[i].used && f->p[i].type == type && f->p[i].n == n && f->p[i].lines == lines) {
            *out = &f->p[i];
            return FF_OK;
        }
    fft_plan *p = &f->p[f->next];
    if (p->used) cufftDestroy(p->h);
    p->used = 0;
    cufftResult r;
    if ((r = cufftCreate(&p->h))) return fft_fail(c, "cufftCreate", r);
    size_t work = 0;
    long long nn = n;
    /* basic layout (NULL embeds): lines of n elements one after another */
    if ((r = cufftSetAutoAllocation(p->h, 0)) ||
        (r = cufftMakePlanMany64(p->h, 1, &nn, NULL, 1, 0, NULL, 1, 0, type, lines, &work))) {
        cufftDestroy(p->h);
        return fft_fail(c, "cufftMakePlanMany64", r);
    }
    p->type = type, p->n = n, p->lines = lines, p->work = work, p->used = 1;
    f->next = (f->next + 1) % PLAN_CACHE;
    *out = p;
    return FF_OK;
}

static cufftResult plan_exec(const fft_plan *p, int op, void *in, void *out)
{
    switch (p->type) {
    case CUFFT_C2C: return cufftExecC2C(p->h, in, out, op == FF_FFT_INVERSE ? CUFFT_INVERSE : CUFFT_FORWARD);
    case CUFFT_Z2Z: return cufftExecZ2Z(p->h, in, out, op == FF_FFT_INVERSE ? CUFFT_INVERSE : CUFFT_FORWARD);
    case CUFFT_R2C: return cufftExecR2C(p->h, in, out);
    case CUFFT_D2Z: return cufftExecD2Z(p->h, in, out);
    case CUFFT_C2R: return cufftExecC2R(p->h, in, out);
    default: return cufftExecZ2D(p->h, in, out);
    }
}

/* A view of the dense temporary buf ([lines, len] or [lines, len, 2], axis innermost)
 * with v's shape: the axis at stride 1 (or 2 for pairs), the other signal dims row-major
 * outside it, the pair's dim at stride 1. */
static ff_view dense_like(const ff_view *v, void *buf, int rank, int axis, int pair)
{
    ff_view t = *v;
    t.buf = buf, t.offset = 0;
    int64_t step = pair ? 2 : 1;
    t.strides[axis] = step;
    step *= v->shape[axis];
    for (int d = rank - 1; d >= 0; d--)
        if (d != axis) t.strides[d] = step, step *= v->shape[d];
    if (pair) t.strides[rank] = 1;
    return t;
}

ff_status cuda_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    int rank = 0;
    int64_t n = 0;
    ff_status st = ffb_fft_check(c->host, "cuda", op, dst, src, axis, &rank, &n);
    if (st) return st;
    int64_t lines = 1;
    for (int d = 0; d < rank; d++)
        if (d != axis) lines *= src->shape[d];
    if (lines == 0) return FF_OK;
    if ((st = cuda_use_device(c, "fft"))) return st;
    int f64 = src->dtype == FF_F64, in_pair = op != FF_FFT_R2C, out_pair = op != FF_FFT_C2R;
    size_t es = ff_dtype_size(src->dtype);
    int64_t in_len = src->shape[axis], out_len = dst->shape[axis];
    size_t in_bytes = (size_t)(lines * in_len * (in_pair ? 2 : 1)) * es;
    size_t out_bytes = (size_t)(lines * out_len * (out_pair ? 2 : 1)) * es;
    cufftType type = op == FF_FFT_R2C ? (f64 ? CUFFT_D2Z : CUFFT_R2C)
                     : op == FF_FFT_C2R ? (f64 ? CUFFT_Z2D : CUFFT_C2R)
                                        : (f64 ? CUFFT_Z2Z : CUFFT_C2C);
    void *tin = cuda_temp(c, "fft", in_bytes), *tout = tin ? cuda_temp(c, "fft", out_bytes) : NULL;
    void *work = NULL;
    if (!tout) {
        st = FF_ERR_OOM;
        goto done;
    }
    ff_view vin = dense_like(src, tin, rank, axis, in_pair), vout = dense_like(dst, tout, rank, axis, out_pair);
    if ((st = cuda_copy(c, &vin, src))) goto done;
    if (op == FF_FFT_C2R) { /* the ignored imaginary parts: bin 0's, and bin n / 2's for even n */
        ff_view im = {.buf = tin, .dtype = src->dtype, .ndim = 1, .offset = 1};
        im.shape[0] = lines, im.strides[0] = 2 * in_len;
        if ((st = cuda_fill(c, &im, (ff_scalar){0}))) goto done;
        if (n % 2 == 0 && n / 2 < in_len) {
            im.offset = 2 * (n / 2) + 1;
            if ((st = cuda_fill(c, &im, (ff_scalar){0}))) goto done;
        }
    }
    pthread_mutex_lock(&c->fft_lock);
    fft_plan *p = NULL;
    st = plan_of(c, type, n, lines, &p);
    cufftResult r = CUFFT_SUCCESS;
    if (!st && p->work && !(work = cuda_alloc(c, p->work))) st = FF_ERR_OOM;
    if (!st && ((r = cufftSetStream(p->h, c->stream)) || (r = cufftSetWorkArea(p->h, work)) ||
                (r = plan_exec(p, op, tin, tout))))
        st = fft_fail(c, "the transform", r);
    pthread_mutex_unlock(&c->fft_lock);
    if (!st) st = cuda_copy(c, dst, &vout);
done:
    if (work) cuda_free(c, work); /* stream order: reused only by later work */
    if (tout) cuda_free(c, tout);
    if (tin) cuda_free(c, tin);
    return st;
}

#endif /* FF_CUDA_CUFFT */
