/* The optional fft entry through FFTW (fftw3 for f64, fftw3f for f32): one guru64 plan
 * per call covers every line of any strides at once. The split-array interface takes
 * strides in real elements, so the (re, im) pair may have any stride, as the ABI allows;
 * FFTW's split interface has no sign argument, and the inverse is the forward transform
 * with re and im swapped on both sides (FFTW manual, "Guru Complex DFTs").
 *
 * Plans are made with FFTW_ESTIMATE (which never touches the arrays) on the call's own
 * arrays, executed once and destroyed. FFTW's planner is not thread-safe while
 * fftw_execute is: planning and destruction hold one process-wide mutex (the ABI lets the
 * core call entries from several threads at once). C2R plans ask for
 * FFTW_PRESERVE_INPUT: by default FFTW's c2r overwrites its input. Like the reference,
 * C2R ignores the imaginary parts of bins 0 and n/2 (conformance checks it). */
#include <fftw3.h>
#include <pthread.h>

#include "blas_impl.h"
#include "ff_backend_fft.h"

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static int live_contexts; /* under plan_lock */

/* FFTW keeps its planner (solver tables) in static memory from the first plan on. When
 * the last context shuts down, no plan exists any more (each lives inside one call), so
 * fftw_cleanup can free it: the core may dlclose the plugin, and with it FFTW, after
 * shutdown, which would otherwise leave that memory unreachable (LeakSanitizer reports
 * it). */
void blas_fft_context_up(void)
{
    pthread_mutex_lock(&plan_lock);
    live_contexts++;
    pthread_mutex_unlock(&plan_lock);
}

void blas_fft_context_down(void)
{
    pthread_mutex_lock(&plan_lock);
    if (--live_contexts == 0) {
        fftw_cleanup();
        fftwf_cleanup();
    }
    pthread_mutex_unlock(&plan_lock);
}

/* The transform and loop dims shared by the f32 and f64 paths (strides in elements). */
typedef struct fft_geom {
    fftw_iodim64 dim;
    fftw_iodim64 loops[FF_MAX_DIMS];
    int nloops;
} fft_geom;

#define FFT_PLAN_AND_RUN(P, real, plan_t)                                                                          \
    do {                                                                                                           \
        real *s = (real *)src->buf + src->offset, *d = (real *)dst->buf + dst->offset;                             \
        real *si = s + (op != FF_FFT_R2C ? src->strides[r] : 0), *di = d + (op != FF_FFT_C2R ? dst->strides[r] : 0); \
        const P##_iodim64 *dm = &g.dim, *lp = g.loops; /* fftw_ and fftwf_iodim64 are one struct */            \
        pthread_mutex_lock(&plan_lock);                                                                            \
        plan_t p = op == FF_FFT_FORWARD   ? P##_plan_guru64_split_dft(1, dm, g.nloops, lp, s, si, d, di, flags)    \
                   : op == FF_FFT_INVERSE ? P##_plan_guru64_split_dft(1, dm, g.nloops, lp, si, s, di, d, flags)    \
                   : op == FF_FFT_R2C     ? P##_plan_guru64_split_dft_r2c(1, dm, g.nloops, lp, s, d, di, flags)    \
                                          : P##_plan_guru64_split_dft_c2r(1, dm, g.nloops, lp, s, si, d,           \
                                                                          flags | FFTW_PRESERVE_INPUT);            \
        pthread_mutex_unlock(&plan_lock);                                                                          \
        if (!p) return blas_error(ctx, FF_ERR_BACKEND, "cpu_blas fft: FFTW could not plan op %d of length %lld", \
                                  op, (long long)n);                                                               \
        P##_execute(p);                                                                                            \
        pthread_mutex_lock(&plan_lock);                                                                            \
        P##_destroy_plan(p);                                                                                       \
        pthread_mutex_unlock(&plan_lock);                                                                          \
    } while (0)

ff_status blas_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    int r = 0;
    int64_t n = 0;
    ff_status st = ffb_fft_check(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", op, dst, src, axis, &r, &n);
    if (st) return st;
    fft_geom g = {.dim = {.n = n, .is = src->strides[axis], .os = dst->strides[axis]}};
    for (int d = 0; d < r; d++) {
        if (src->shape[d] == 0) return FF_OK; /* no lines */
        if (d != axis && src->shape[d] != 1)
            g.loops[g.nloops++] = (fftw_iodim64){.n = src->shape[d], .is = src->strides[d], .os = dst->strides[d]};
    }
    unsigned flags = FFTW_ESTIMATE;
    if (src->dtype == FF_F64) FFT_PLAN_AND_RUN(fftw, double, fftw_plan);
    else FFT_PLAN_AND_RUN(fftwf, float, fftwf_plan);
    return FF_OK;
}
