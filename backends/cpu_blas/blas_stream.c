/*
 * Streaming (non-temporal) stores for large outputs that are not inputs.
 *
 * Why: an ordinary store to a line not in cache first reads it (read-for-ownership), so
 * c = a + b over arrays larger than the caches moves 4 arrays' worth of bytes while
 * a += b moves 3. Non-temporal stores skip that read, which is what keeps an allocating
 * op as fast as the in-place one. Used only for runs of at least BLAS_STREAM_MIN
 * elements (far beyond L2) whose destination does not alias an input, and only on
 * AVX-512F (checked at run time); each call ends with sfence so the pool's release
 * ordering covers the streamed data.
 */
#include <immintrin.h>

#include "blas_impl.h"

typedef float v16f __attribute__((vector_size(64)));

static int have_avx512(void) { return (blas_cpu_flags() & BLAS_CPU_AVX512F) != 0; }

#define STREAM_BINARY(NAME, OP)                                                                \
    __attribute__((target("avx512f"))) static void NAME(int64_t n, float *d, const float *a,   \
                                                        const float *b)                        \
    {                                                                                          \
        int64_t i = 0;                                                                         \
        for (; i < n && ((uintptr_t)(d + i) & 63); i++) d[i] = a[i] OP b[i];                   \
        for (; i + 16 <= n; i += 16) {                                                         \
            __m512 x = _mm512_loadu_ps(a + i), y = _mm512_loadu_ps(b + i);                     \
            _mm512_stream_ps(d + i, (__m512)((v16f)x OP(v16f) y));                             \
        }                                                                                      \
        for (; i < n; i++) d[i] = a[i] OP b[i];                                                \
        _mm_sfence();                                                                          \
    }

STREAM_BINARY(add_stream, +)
STREAM_BINARY(sub_stream, -)
STREAM_BINARY(mul_stream, *)
STREAM_BINARY(div_stream, /)

int blas_stream_binary_f32(ff_binary_op op, int64_t n, float *d, const float *a, const float *b)
{
    if (n < BLAS_STREAM_MIN || d == a || d == b || !have_avx512()) return 0;
    switch (op) {
    case FF_BINARY_ADD: add_stream(n, d, a, b); return 1;
    case FF_BINARY_SUB: sub_stream(n, d, a, b); return 1;
    case FF_BINARY_MUL: mul_stream(n, d, a, b); return 1;
    case FF_BINARY_DIV: div_stream(n, d, a, b); return 1;
    default: return 0;
    }
}

/* Applies a map in cache-sized blocks: compute into a stack buffer, stream it out. */
__attribute__((target("avx512f"))) static void map_stream(int64_t n, float *d, const float *x,
                                                          void (*fn)(int64_t, float *, const float *))
{
    float buf[2048] __attribute__((aligned(64)));
    int64_t i = 0;
    for (; i < n && ((uintptr_t)(d + i) & 63); i++) fn(1, d + i, x + i);
    for (; i < n; i += 2048) {
        int64_t m = n - i < 2048 ? n - i : 2048;
        fn(m, buf, x + i);
        int64_t j = 0;
        for (; j + 16 <= m; j += 16) _mm512_stream_ps(d + i + j, _mm512_load_ps(buf + j));
        for (; j < m; j++) d[i + j] = buf[j];
    }
    _mm_sfence();
}

int blas_stream_map_f32(int64_t n, float *d, const float *x, void (*fn)(int64_t, float *, const float *))
{
    if (n < BLAS_STREAM_MIN || d == x || !have_avx512()) return 0;
    map_stream(n, d, x, fn);
    return 1;
}

/* A finished tile to memory: the 64-byte aligned body streamed, head and tail stored. */
__attribute__((target("avx512f"))) static void copy_stream(char *d, const char *s, int64_t nbytes)
{
    int64_t i = 0;
    for (; i < nbytes && ((uintptr_t)(d + i) & 63); i++) d[i] = s[i];
    for (; i + 64 <= nbytes; i += 64) _mm512_stream_si512((void *)(d + i), _mm512_loadu_si512((const void *)(s + i)));
    if (i < nbytes) memcpy(d + i, s + i, (size_t)(nbytes - i));
}

int blas_stream_copy(void *d, const void *s, int64_t nbytes)
{
    if (!have_avx512()) return 0;
    copy_stream(d, s, nbytes);
    return 1;
}

void blas_stream_fence(void) { _mm_sfence(); }
