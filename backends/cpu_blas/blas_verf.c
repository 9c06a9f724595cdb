/*
 * erf and erf-GELU on f32 lanes.
 *
 * erf on f32 runs four doubles at a time through glibc's libmvec (_ZGVdN4v_erf, AVX2: the
 * same erf as libm's, vectorized, at most 4 ulp in double), so that each f32 result is
 * the reference's double formula rounded once, as backends/common/ff_backend_scalar.h
 * writes it. One libm call per element made GELU the slowest op of a BERT layer (MiniLM):
 * about 17x PyTorch's time on [640, 1536].
 *
 * GELU (every dtype) and erf on F16/BF16 (blas_half.c) run at f32 accuracy instead:
 * libmvec's f32 erff / erfcf, 16 lanes (AVX-512) or 8 (AVX2) per call. For halves the
 * rounding after it is 2^13 (f16) or 2^16 (bf16) times coarser and the conformance
 * tolerance is one half ulp past an f32 computation; GELU took 13% of MiniLM's bf16
 * forward on the double path, 4% here. For an f32 GELU, an activation whose output feeds
 * the next matmul, the double path's last half ulp cost 17% of MiniLM's int8 forward and
 * bought nothing a model can see. The f32 lanes, against the double formula on 4M inputs
 * in [-14, 14]: within 1.6e-7 relative (2-3 f32 ulp) for x > -1, 8e-7 on [-3, -1], 1.4e-6
 * on [-5, -3] (results below 4e-6); below -5 the double formula's own cancellation is the
 * larger error (PyTorch's f32 GELU is Sleef's f32 erf, ~1 ulp). All far inside the f32
 * tolerance for transcendental ops (1e-5 relative past 1e-6 absolute). GELU as 0.5 x erfc(-x / sqrt 2),
 * since 1 + erf(z) cancels for z << 0 (f32 erf's rounding is 3e-3 of 1 + erf(-3)) where
 * erfc(-z) does not; the double formula itself cancels below x = -7 (1% off at -7.8, 0
 * from -8.3), so there these results are the closer ones, and differ from the reference
 * by less than 1e-12; below x = -12.9 both are -0 (GELU_TAIL). Special values as the
 * double formula: gelu(-inf) = -inf * 0 = NaN, gelu(-0) = -0, NaN in, NaN out.
 */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blas_impl.h"

static void erf_scalar(int64_t n, float *dst, const float *src)
{
    for (int64_t i = 0; i < n; i++) dst[i] = (float)erf((double)src[i]);
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(FF_HAVE_MVEC)
/* glibc >= 2.35, libmvec; declared with the ISA its vector ABI passes in (ymm registers) */
__attribute__((target("avx2"))) __m256d _ZGVdN4v_erf(__m256d x);

static int have_avx2(void) { return (blas_cpu_flags() & BLAS_CPU_AVX2_FMA) != 0; }

__attribute__((target("avx2,fma"))) static void erf_map(int64_t n, float *dst, const float *src)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(dst + i, _mm256_cvtpd_ps(_ZGVdN4v_erf(_mm256_cvtps_pd(_mm_loadu_ps(src + i)))));
    erf_scalar(n - i, dst + i, src + i);
}
#endif

static void erf_double(int64_t n, float *dst, const float *src)
{
#if defined(__x86_64__) && defined(__GNUC__) && defined(FF_HAVE_MVEC)
    if (have_avx2()) {
        erf_map(n, dst, src);
        return;
    }
#endif
    erf_scalar(n, dst, src);
}

/* GELU's far negative tail, x < -12.9, is below f32's normal range: those results are
 * -0 (x * 0), as the reference's formula has them (it is 0 from x = -8.3 on). Subnormal
 * activations would cost the next bf16 matmul its oneDNN path (blas_bf16_has_subnormal):
 * MiniLM's batch of one ran 25% slower with them. */
#define GELU_TAIL(x, y) ((x) < -1.0f && fabsf(y) < FLT_MIN)

#if defined(__x86_64__) && defined(__GNUC__) && defined(FF_HAVE_MVEC)
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_erff(__m512 x);
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_erfcf(__m512 x);
__attribute__((target("avx2"))) __m256 _ZGVdN8v_erff(__m256 x);
__attribute__((target("avx2"))) __m256 _ZGVdN8v_erfcf(__m256 x);

/* The tails go through a zero-padded register: erf(0) and gelu(0) are cheap and finite. */
__attribute__((target("avx512f"))) static void erf_lanes_avx512(int64_t n, float *dst, const float *src, int gelu)
{
    const __m512 half = _mm512_set1_ps(0.5f), nr2 = _mm512_set1_ps(-0.70710678118654752f), zero = _mm512_setzero_ps();
    const __m512 tiny = _mm512_set1_ps(FLT_MIN), m1 = _mm512_set1_ps(-1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(k, src + i), y;
        if (gelu) {
            y = _mm512_mul_ps(_mm512_mul_ps(half, x), _ZGVeN16v_erfcf(_mm512_mul_ps(x, nr2)));
            __mmask16 tail = _mm512_cmp_ps_mask(x, m1, _CMP_LT_OQ) & _mm512_cmp_ps_mask(_mm512_abs_ps(y), tiny, _CMP_LT_OQ);
            y = _mm512_mask_mul_ps(y, tail, x, zero);
        } else {
            y = _ZGVeN16v_erff(x);
        }
        if (k == 0xFFFF) _mm512_storeu_ps(dst + i, y); /* a masked store would not forward to the next load */
        else _mm512_mask_storeu_ps(dst + i, k, y);
    }
}

__attribute__((target("avx2"))) static void erf_lanes_avx2(int64_t n, float *dst, const float *src, int gelu)
{
    const __m256 half = _mm256_set1_ps(0.5f), nr2 = _mm256_set1_ps(-0.70710678118654752f), zero = _mm256_setzero_ps();
    const __m256 tiny = _mm256_set1_ps(FLT_MIN), m1 = _mm256_set1_ps(-1.0f), absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(src + i), y;
        if (gelu) {
            y = _mm256_mul_ps(_mm256_mul_ps(half, x), _ZGVdN8v_erfcf(_mm256_mul_ps(x, nr2)));
            __m256 tail = _mm256_and_ps(_mm256_cmp_ps(x, m1, _CMP_LT_OQ), _mm256_cmp_ps(_mm256_and_ps(y, absm), tiny, _CMP_LT_OQ));
            y = _mm256_blendv_ps(y, _mm256_mul_ps(x, zero), tail);
        } else {
            y = _ZGVdN8v_erff(x);
        }
        _mm256_storeu_ps(dst + i, y);
    }
    if (i < n) {
        float buf[8] = {0};
        memcpy(buf, src + i, sizeof(float) * (size_t)(n - i));
        erf_lanes_avx2(8, buf, buf, gelu);
        memcpy(dst + i, buf, sizeof(float) * (size_t)(n - i));
    }
}
#endif

/* By the half conversions' ISA (blas_half_isa: what the CPU has, capped by FF_HALF_ISA,
 * so that the tests run every path here too); scalar: libm's erff / erfcf. */
static void erf_lanes(int64_t n, float *dst, const float *src, int gelu)
{
#if defined(__x86_64__) && defined(__GNUC__) && defined(FF_HAVE_MVEC)
    int isa = blas_half_isa();
    if (isa == 2) {
        erf_lanes_avx512(n, dst, src, gelu);
        return;
    }
    if (isa == 1) {
        erf_lanes_avx2(n, dst, src, gelu);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) {
        float x = src[i], y = gelu ? 0.5f * x * erfcf(x * -0.70710678118654752f) : erff(x);
        dst[i] = gelu && GELU_TAIL(x, y) ? x * 0.0f : y;
    }
}

void blas_verf_f32(int64_t n, float *dst, const float *src) { erf_double(n, dst, src); }
void blas_vgelu_erf_f32(int64_t n, float *dst, const float *src) { erf_lanes(n, dst, src, 1); }
void blas_verf_half(int64_t n, float *dst, const float *src) { erf_lanes(n, dst, src, 0); }
