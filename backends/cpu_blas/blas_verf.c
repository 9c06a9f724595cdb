/*
 * erf and erf-GELU on f32, four doubles at a time through glibc's libmvec
 * (_ZGVdN4v_erf, AVX2: the same erf as libm's, vectorized, at most 4 ulp in double),
 * so that each f32 result is the reference's double formula rounded once, as
 * backends/common/ff_backend_scalar.h writes it:
 *   erf(x), gelu_erf(x) = 0.5 x (1 + erf(x / sqrt 2)).
 * One libm call per element made GELU the slowest op of a BERT layer (MiniLM): about
 * 17x PyTorch's time on [640, 1536]. Without AVX2 (or libmvec) the scalar libm loop runs.
 */
#include <immintrin.h>
#include <math.h>

#include "blas_impl.h"

static void erf_scalar(int64_t n, float *dst, const float *src, int gelu)
{
    for (int64_t i = 0; i < n; i++) {
        double x = src[i];
        dst[i] = (float)(gelu ? 0.5 * x * (1.0 + erf(x * 0.7071067811865476)) : erf(x));
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(FF_HAVE_MVEC)
/* glibc >= 2.35, libmvec; declared with the ISA its vector ABI passes in (ymm registers) */
__attribute__((target("avx2"))) __m256d _ZGVdN4v_erf(__m256d x);

static int have_avx2(void) { return (blas_cpu_flags() & BLAS_CPU_AVX2_FMA) != 0; }

__attribute__((target("avx2,fma"))) static void erf_map(int64_t n, float *dst, const float *src, int gelu)
{
    const __m256d half = _mm256_set1_pd(0.5), one = _mm256_set1_pd(1.0), r2 = _mm256_set1_pd(0.7071067811865476);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(src + i));
        __m256d y = gelu ? _mm256_mul_pd(_mm256_mul_pd(half, x), _mm256_add_pd(one, _ZGVdN4v_erf(_mm256_mul_pd(x, r2))))
                         : _ZGVdN4v_erf(x);
        _mm_storeu_ps(dst + i, _mm256_cvtpd_ps(y));
    }
    erf_scalar(n - i, dst + i, src + i, gelu);
}
#endif

static void map(int64_t n, float *dst, const float *src, int gelu)
{
#if defined(__x86_64__) && defined(__GNUC__) && defined(FF_HAVE_MVEC)
    if (have_avx2()) {
        erf_map(n, dst, src, gelu);
        return;
    }
#endif
    erf_scalar(n, dst, src, gelu);
}

void blas_verf_f32(int64_t n, float *dst, const float *src) { map(n, dst, src, 0); }
void blas_vgelu_erf_f32(int64_t n, float *dst, const float *src) { map(n, dst, src, 1); }
