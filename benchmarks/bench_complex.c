/*
 * ff-bench's complex rows (issue 45), beside NumPy's and PyTorch's (baselines.py):
 *   matmul_c64_N   an [N, N] complex64 product: cpu_blas's cgemm, the core's four real
 *                  matmuls on a backend without a complex matmul; 8 N^3 flops
 *   fft_c64_2^20   a complex64 FFT of 2^20 points (FFTW on cpu_blas), 5 n log2 n flops
 * On the default backend (ff_backend_set_default ran), like the other rows.
 */
#include <math.h>

#include "bench.h"

typedef struct cplx_state {
    ff_tensor *a, *b; /* complex64 (matmul), or the f32 (re, im) pairs (fft) */
    ff_backend *be;
    int fft;
} cplx_state;

static int run_cplx(void *v)
{
    cplx_state *s = v;
    ff_tensor *y = s->fft ? ff_fft_fft(s->a, -1, 0, FF_FFT_NORM_BACKWARD) : ff_matmul(s->a, s->b);
    ff_tensor_release(y);
    return y && !ff_backend_sync(s->be) ? 0 : -1;
}

/* A complex64 tensor of shape [n, n] with parts uniform in [-1, 1): the view_as_complex
 * of f32 pairs. */
static ff_tensor *cplx_uniform(int64_t n, uint64_t seed)
{
    int64_t sh[3] = {n, n, 2};
    ff_tensor *r = ff_rand_uniform(3, sh, FF_F32, -1, 1, seed), *z = r ? ff_view_as_complex(r) : NULL;
    ff_tensor_release(r);
    return z;
}

void bench_complex_all(ff_backend *be, int threads, const bench_opts *o)
{
    const int64_t n = o->quick ? 128 : 512;
    char w[64];
    snprintf(w, sizeof w, "matmul_c64_%lld", (long long)n);
    if (bench_selected(o, w)) {
        cplx_state s = {.a = cplx_uniform(n, 91), .b = cplx_uniform(n, 92), .be = be};
        bench_case c = {w, run_cplx, &s, 8.0 * (double)(n * n * n), "GFLOP/s"};
        bench_result r;
        if (s.a && s.b && bench_measure(&c, o, ff_backend_name(be), threads, &r) == 0) bench_emit(&r);
        ff_tensor_release(s.a), ff_tensor_release(s.b);
    }
    const int64_t m = (int64_t)1 << (o->quick ? 16 : 20);
    snprintf(w, sizeof w, "fft_c64_2^%d", o->quick ? 16 : 20);
    if (bench_selected(o, w) && ff_backend_supports(be, FF_KIND_FFT, FF_FFT_FORWARD, FF_F32)) {
        int64_t sh[2] = {m, 2};
        cplx_state s = {.a = ff_rand_uniform(2, sh, FF_F32, -1, 1, 93), .be = be, .fft = 1};
        bench_case c = {w, run_cplx, &s, 5.0 * (double)m * log2((double)m), "GFLOP/s"};
        bench_result r;
        if (s.a && bench_measure(&c, o, ff_backend_name(be), threads, &r) == 0) bench_emit(&r);
        ff_tensor_release(s.a);
    }
}
