/*
 * The slice of cuFFT that backends/cuda/cuda_fft.c calls, over host memory, for the
 * emulated backend (tests/cuda_emu): plans of rank 1 in the basic layout (NULL embeds),
 * transforms computed as direct sums in double (one rounding at the store), and the
 * behaviour of cuFFT the plugin must not rely on made visible:
 *   - with automatic allocation off, an execution without a work area fails, and the
 *     work area (of the size the plan reported) is overwritten;
 *   - C2R/Z2D overwrite their input (cuFFT's out-of-place C2R may), and use the
 *     imaginary parts of bin 0 and (n even) bin n / 2 instead of ignoring them: the
 *     plugin must protect src and zero those parts itself;
 *   - a plan is refused for sizes or batches below 1 and for other layouts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cufft.h>

#include "cuda_emu_graph.h"

#define EMU_PLANS 256

typedef struct emu_plan {
    int live, made, autoalloc;
    cufftType type;
    long long n, batch;
    size_t work_size;
    void *work;
} emu_plan;

static emu_plan plans[EMU_PLANS]; /* handle h is plans[h - 1] */

static emu_plan *emu_get(cufftHandle h) { return h >= 1 && h <= EMU_PLANS && plans[h - 1].live ? &plans[h - 1] : NULL; }

cufftResult cufftCreate(cufftHandle *h)
{
    for (int i = 0; i < EMU_PLANS; i++)
        if (!plans[i].live) {
            memset(&plans[i], 0, sizeof plans[i]);
            plans[i].live = 1, plans[i].autoalloc = 1;
            *h = i + 1;
            return CUFFT_SUCCESS;
        }
    return CUFFT_ALLOC_FAILED;
}

cufftResult cufftDestroy(cufftHandle h)
{
    emu_plan *p = emu_get(h);
    if (!p) return CUFFT_INVALID_PLAN;
    if (p->autoalloc) free(p->work);
    p->live = 0;
    return CUFFT_SUCCESS;
}

cufftResult cufftSetAutoAllocation(cufftHandle h, int a)
{
    emu_plan *p = emu_get(h);
    if (!p || p->made) return CUFFT_INVALID_PLAN; /* before the plan is made, as cuFFT asks */
    p->autoalloc = a;
    return CUFFT_SUCCESS;
}

cufftResult cufftSetWorkArea(cufftHandle h, void *w)
{
    emu_plan *p = emu_get(h);
    if (!p || !p->made) return CUFFT_INVALID_PLAN;
    p->work = w;
    return CUFFT_SUCCESS;
}

cufftResult cufftSetStream(cufftHandle h, cudaStream_t s)
{
    (void)s;
    return emu_get(h) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

cufftResult cufftMakePlanMany64(cufftHandle h, int rank, long long *n, long long *inembed, long long istride,
                                long long idist, long long *onembed, long long ostride, long long odist,
                                cufftType type, long long batch, size_t *work)
{
    emu_plan *p = emu_get(h);
    (void)istride, (void)idist, (void)ostride, (void)odist; /* ignored with NULL embeds, as in cuFFT */
    if (!p || p->made) return CUFFT_INVALID_PLAN;
    if (rank != 1 || inembed || onembed || !n || n[0] < 1 || batch < 1) return CUFFT_INVALID_VALUE;
    p->type = type, p->n = n[0], p->batch = batch, p->made = 1;
    p->work_size = (size_t)(n[0] * 16 + 64);
    if (p->autoalloc && !(p->work = malloc(p->work_size))) return CUFFT_ALLOC_FAILED;
    if (work) *work = p->work_size;
    return CUFFT_SUCCESS;
}

/* Line by line: in and out as doubles of the plan's element type. */
static cufftResult emu_exec(cufftHandle h, cufftType want, const void *in, void *out, int sign)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUFFT_NOT_SUPPORTED);
    emu_plan *p = emu_get(h);
    if (!p || !p->made || p->type != want) return CUFFT_INVALID_PLAN;
    if (!p->work) return CUFFT_EXEC_FAILED;
    memset(p->work, 0x5A, p->work_size);
    int dbl = want == CUFFT_Z2Z || want == CUFFT_D2Z || want == CUFFT_Z2D;
    int c_in = want != CUFFT_R2C && want != CUFFT_D2Z, c_out = want != CUFFT_C2R && want != CUFFT_Z2D;
    long long n = p->n, m = n / 2 + 1, len_in = c_in && !c_out ? m : n, len_out = c_out && !c_in ? m : n;
    double *x = malloc(sizeof(double) * 2 * (size_t)n), *y = malloc(sizeof(double) * 2 * (size_t)n);
    if (!x || !y) {
        free(x), free(y);
        return CUFFT_ALLOC_FAILED;
    }
#define EMU_LD(ptr, i) (dbl ? ((const double *)(ptr))[i] : (double)((const float *)(ptr))[i])
    for (long long b = 0; b < p->batch; b++) {
        long long ib = b * len_in * (c_in ? 2 : 1), ob = b * len_out * (c_out ? 2 : 1);
        for (long long t = 0; t < n; t++) { /* the full complex input line */
            if (!c_in) x[2 * t] = EMU_LD(in, ib + t), x[2 * t + 1] = 0;
            else if (c_out) x[2 * t] = EMU_LD(in, ib + 2 * t), x[2 * t + 1] = EMU_LD(in, ib + 2 * t + 1);
            else if (t < m) x[2 * t] = EMU_LD(in, ib + 2 * t), x[2 * t + 1] = EMU_LD(in, ib + 2 * t + 1);
            else x[2 * t] = EMU_LD(in, ib + 2 * (n - t)), x[2 * t + 1] = -EMU_LD(in, ib + 2 * (n - t) + 1);
        }
        for (long long k = 0; k < len_out; k++) {
            double re = 0, im = 0;
            for (long long t = 0; t < n; t++) {
                long long q = (k * t) % n;
                /* exact turns (1, +-i, -1) as an FFT's butterflies take them: no product
                 * with a rounded 0 that would turn an inf into a NaN */
                if (q == 0) {
                    re += x[2 * t], im += x[2 * t + 1];
                } else if (4 * q == n || 4 * q == 3 * n) {
                    double s = (4 * q == n ? 1 : -1) * sign; /* e^(sign i pi/2 ...) = s i */
                    re -= s * x[2 * t + 1], im += s * x[2 * t];
                } else if (2 * q == n) {
                    re -= x[2 * t], im -= x[2 * t + 1];
                } else {
                    double a = sign * 2.0 * 3.14159265358979323846 * (double)q / (double)n, cs = cos(a), sn = sin(a);
                    re += x[2 * t] * cs - x[2 * t + 1] * sn;
                    im += x[2 * t] * sn + x[2 * t + 1] * cs;
                }
            }
            if (!c_out) /* C2R: the real part, plus what cuFFT is free to do with the ignored parts */
                re += x[1] + (n % 2 == 0 ? x[2 * (n / 2) + 1] : 0);
            y[2 * k] = re, y[2 * k + 1] = im;
        }
        for (long long k = 0; k < len_out; k++)
            for (int j = 0; j < (c_out ? 2 : 1); j++) {
                long long at = ob + (c_out ? 2 * k + j : k);
                if (dbl) ((double *)out)[at] = y[2 * k + j];
                else ((float *)out)[at] = (float)y[2 * k + j];
            }
    }
#undef EMU_LD
    if (c_in && !c_out) /* C2R scribbles over its input */
        memset((void *)in, 0x7F, (size_t)(p->batch * len_in * 2) * (dbl ? sizeof(double) : sizeof(float)));
    free(x), free(y);
    return CUFFT_SUCCESS;
}

cufftResult cufftExecC2C(cufftHandle h, cufftComplex *i, cufftComplex *o, int d)
{
    return emu_exec(h, CUFFT_C2C, i, o, d == CUFFT_INVERSE ? 1 : -1);
}
cufftResult cufftExecZ2Z(cufftHandle h, cufftDoubleComplex *i, cufftDoubleComplex *o, int d)
{
    return emu_exec(h, CUFFT_Z2Z, i, o, d == CUFFT_INVERSE ? 1 : -1);
}
cufftResult cufftExecR2C(cufftHandle h, cufftReal *i, cufftComplex *o) { return emu_exec(h, CUFFT_R2C, i, o, -1); }
cufftResult cufftExecD2Z(cufftHandle h, cufftDoubleReal *i, cufftDoubleComplex *o)
{
    return emu_exec(h, CUFFT_D2Z, i, o, -1);
}
cufftResult cufftExecC2R(cufftHandle h, cufftComplex *i, cufftReal *o) { return emu_exec(h, CUFFT_C2R, i, o, 1); }
cufftResult cufftExecZ2D(cufftHandle h, cufftDoubleComplex *i, cufftDoubleReal *o)
{
    return emu_exec(h, CUFFT_Z2D, i, o, 1);
}
