/*
 * Vectorized f32 math and reductions, written once with GCC/Clang vector extensions
 * and compiled per ISA by BLAS_CLONES. The lane-wise functions (blas_vmath_lanes.h) exist
 * in 16 lanes (one zmm) and 8 (one ymm): gcc handles a 64-byte vector on AVX2 through the
 * stack, so CPUs without AVX-512 (or FF_BLAS_ISA=avx2) take the 8-lane forms, and the f32
 * sum makes two passes of 32 lanes; every form gives the same bits.
 *
 * exp: Cody-Waite range reduction x = k ln2 + r, |r| <= ln2/2, a degree-6 polynomial
 *   for e^r (Cephes expf coefficients, ~1 ulp), then scaling by 2^k in two steps so
 *   results down to the subnormal range come out right. Overflow -> +inf, far
 *   underflow -> 0, NaN -> NaN.
 * log: frexp-style split x = m 2^e with m in [sqrt(1/2), sqrt(2)), a degree-9
 *   polynomial in m - 1 (Cephes logf), subnormals rescaled first; log(0) = -inf,
 *   log(x < 0) = NaN, log(inf) = inf.
 * tanh: odd polynomial for |x| < 0.625, else 1 - 2 / (e^{2|x|} + 1).
 * sigmoid: e = exp(-|x|); 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0 (no overflow,
 *   no cancellation on either side).
 * Special values, as the reference (double libm) and PyTorch: NaN -> NaN; exp(+-0) = 1,
 *   exp(+inf) = inf, exp(-inf) = 0; log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf,
 *   subnormals through the rescale; tanh keeps the sign of zero and of the smallest
 *   subnormals (tanh(-0) = -0), tanh(+-inf) = +-1; sigmoid(+-0) = 0.5, sigmoid(-inf) = 0;
 *   silu(-0) = -0, silu(-inf) = NaN (-inf * 0, as x * sigmoid(x) everywhere); silu of
 *   x in [-104, -87] (a subnormal result) carries exp(x) scaled by 2^24, so it rounds once.
 *   tests/unit/test_cpu_blas_signed_zero.c checks every one against the reference.
 * max/min: NaN-propagating (the first NaN), and when the extreme is zero, the first zero
 *   in index order (its sign), as the reference.
 * Measured max relative error against double libm: see tests/unit/test_cpu_blas_*.c.
 *
 * Sums accumulate in double: 32 independent lanes over blocks of 4096 values, blocks
 * combined pairwise. That is both fast (memory bound) and far more accurate than one
 * serial float accumulator.
 */
#include "blas_impl.h"

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

/* ---- max / min ------------------------------------------------------------------------ */
/* The first NaN wins, as in the reference (which stops at the first NaN it meets). */
static float first_nan(int64_t n, const float *x)
{
    for (int64_t i = 0; i < n; i++)
        if (x[i] != x[i]) return x[i];
    return x[0];
}

/* An extreme that is zero: the reference keeps the first zero it meets, whose sign the
 * lane-wise search loses (a +0 in lane 1 and a -0 earlier in lane 0's later slot). */
static float first_zero(int64_t n, const float *x)
{
    for (int64_t i = 0; i < n; i++)
        if (x[i] == 0.0f) return x[i];
    return 0.0f;
}

/* The lane-wise math twice: 16 lanes (one zmm), and 8 (one ymm) for CPUs without AVX-512,
 * where gcc moves 64-byte vectors through the stack instead of splitting them in
 * registers (exp ran at the speed of scalar libm there). blas_vmath_set_wide picks. */
#define VF v16f
#define VI v16i
#define VU v16u
#define W 16
#define FN(name) name##_w16
#include "blas_vmath_lanes.h"
#undef VF
#undef VI
#undef VU
#undef W
#undef FN

typedef float v8f_lane __attribute__((vector_size(32)));
typedef int32_t v8i_lane __attribute__((vector_size(32)));
typedef uint32_t v8u_lane __attribute__((vector_size(32)));
#define VF v8f_lane
#define VI v8i_lane
#define VU v8u_lane
#define W 8
#define FN(name) name##_w8
#include "blas_vmath_lanes.h"

/* blas_vexp_shift_sum_f32's 16-lane arithmetic in two 8-lane halves, the sums in 32-byte
 * vectors, each lane's sum formed as there: the same bits. */
BLAS_CLONES static double vexp_shift_sum_w8(int64_t n, float *dst, const float *src, float shift)
{
    typedef float v4f __attribute__((vector_size(16)));
    typedef double v4d __attribute__((vector_size(32)));
    v4d acc[4] = {{0}}; /* lanes 0-3 and 4-7 of the low halves' sums, then of the high halves' */
    VF sh = (VF){0} + shift;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int h = 0; h < 2; h++) {
            VF in, out;
            memcpy(&in, src + i + 8 * h, sizeof in);
            VEXP(out, in - sh);
            memcpy(dst + i + 8 * h, &out, sizeof out);
            v4f q[2];
            memcpy(q, &out, sizeof q);
            acc[2 * h] += __builtin_convertvector(q[0], v4d);
            acc[2 * h + 1] += __builtin_convertvector(q[1], v4d);
        }
    double lo[8], hi[8], s = 0.0;
    memcpy(lo, acc, sizeof lo), memcpy(hi, acc + 2, sizeof hi);
    for (int j = 0; j < 8; j++) s += lo[j] + hi[j];
    if (i < n) {
        float buf[16] = {0};
        size_t rest = (size_t)(n - i) * sizeof(float);
        memcpy(buf, src + i, rest);
        for (int h = 0; h < 2; h++) {
            VF in, out;
            memcpy(&in, buf + 8 * h, sizeof in);
            VEXP(out, in - sh);
            memcpy(buf + 8 * h, &out, sizeof out);
        }
        memcpy(dst + i, buf, rest);
        for (int64_t j = 0; j < n - i; j++) s += buf[j];
    }
    return s;
}
#undef VF
#undef VI
#undef VU
#undef W
#undef FN

/* Whether the 16-lane forms run as such (c->wide_vectors of the last backend init; every
 * context of a process sees the same CPU and environment). */
static atomic_int vm_wide = 1;

void blas_vmath_set_wide(int wide) { atomic_store_explicit(&vm_wide, wide, memory_order_relaxed); }

static int wide(void) { return atomic_load_explicit(&vm_wide, memory_order_relaxed); }

void blas_vexp_f32(int64_t n, float *dst, const float *src)
{
    (wide() ? blas_vexp_f32_w16 : blas_vexp_f32_w8)(n, dst, src);
}
void blas_vlog_f32(int64_t n, float *dst, const float *src)
{
    (wide() ? blas_vlog_f32_w16 : blas_vlog_f32_w8)(n, dst, src);
}
void blas_vtanh_f32(int64_t n, float *dst, const float *src)
{
    (wide() ? blas_vtanh_f32_w16 : blas_vtanh_f32_w8)(n, dst, src);
}
void blas_vsigmoid_f32(int64_t n, float *dst, const float *src)
{
    (wide() ? blas_vsigmoid_f32_w16 : blas_vsigmoid_f32_w8)(n, dst, src);
}
void blas_vsilu_f32(int64_t n, float *dst, const float *src)
{
    (wide() ? blas_vsilu_f32_w16 : blas_vsilu_f32_w8)(n, dst, src);
}
/* max and min do not depend on the lane count: NaN and zeros are settled in index order */
float blas_vmax_f32(int64_t n, const float *x) { return (wide() ? blas_vmax_f32_w16 : blas_vmax_f32_w8)(n, x); }
float blas_vmin_f32(int64_t n, const float *x) { return (wide() ? blas_vmin_f32_w16 : blas_vmin_f32_w8)(n, x); }

/* the 16-lane names for what follows */
#undef SPLAT
#undef SPLATU
#undef SEL
#define W 16
#define SPLAT(c) ((v16f){c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c})
#define SPLATU(c) ((v16u){c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c})
#define SEL(m, a, b) ((v16f)(((v16u)(a) & (v16u)(m)) | ((v16u)(b) & ~(v16u)(m))))
#define VF v16f
#define VI v16i
#define VU v16u

BLAS_CLONES static double vexp_shift_sum_w16(int64_t n, float *dst, const float *src, float shift)
{
    v8d acc0 = {0}, acc1 = {0};
    v16f sh = SPLAT(shift);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        v16f in, out;
        memcpy(&in, src + i, sizeof in);
        VEXP(out, in - sh);
        memcpy(dst + i, &out, sizeof out);
        v8f lo, hi;
        memcpy(&lo, &out, sizeof lo);
        memcpy(&hi, (char *)&out + sizeof lo, sizeof hi);
        acc0 += __builtin_convertvector(lo, v8d);
        acc1 += __builtin_convertvector(hi, v8d);
    }
    double s = 0.0;
    for (int j = 0; j < 8; j++) s += acc0[j] + acc1[j];
    if (i < n) {
        float buf[W] = {0};
        size_t rest = (size_t)(n - i) * sizeof(float);
        memcpy(buf, src + i, rest);
        v16f in, out;
        memcpy(&in, buf, sizeof in);
        VEXP(out, in - sh);
        memcpy(buf, &out, sizeof out);
        memcpy(dst + i, buf, rest);
        for (int64_t j = 0; j < n - i; j++) s += buf[j];
    }
    return s;
}

double blas_vexp_shift_sum_f32(int64_t n, float *dst, const float *src, float shift)
{
    return wide() ? vexp_shift_sum_w16(n, dst, src, shift) : vexp_shift_sum_w8(n, dst, src, shift);
}

/* ---- sums ------------------------------------------------------------------------- */
#define SUM_BLOCK 4096

/* A sum streams memory: one core reaches the bandwidth only with loads issued well
 * ahead, hence the prefetches 8 KiB ahead and eight independent accumulators. Every
 * element is converted to double (the documented accuracy: see the README); summing
 * 16-element partials in f32 first was another 10% faster on 16M floats but rounds
 * each partial, which a cancelling sum of 4000 values shows at 5e-6 relative. */
#define SUM_STEP 64
#define SUM_PREFETCH 2048

/* Lanes [off, off + 32) (off 0 or 32) of sum_block_f32's 64 over its whole steps, into
 * out[32]: each lane's sum as sum_block_f32 forms it, so two calls give its bits. For CPUs
 * without AVX-512, where its 64 double lanes fill all 16 ymm registers and the loaded
 * values spill through the stack (16M floats at half the copy speed): the second pass
 * over a 16 KiB block reads L1. */
BLAS_CLONES static void sum_lanes_f32(int64_t n, const float *x, int64_t off, double *out)
{
    /* 32-byte vectors only: gcc moves 64-byte ones (v8d) through the stack on AVX2 too */
    typedef float v4f __attribute__((vector_size(16)));
    typedef double v4d __attribute__((vector_size(32)));
    v4d a[8] = {{0}};
    for (int64_t i = 0; i + SUM_STEP <= n; i += SUM_STEP) {
        if (!off)
            for (int k = 0; k < SUM_STEP; k += 16) __builtin_prefetch(x + i + SUM_PREFETCH + k);
        v4f f[8];
        memcpy(f, x + i + off, sizeof f);
        for (int j = 0; j < 8; j++) a[j] += __builtin_convertvector(f[j], v4d);
    }
    memcpy(out, a, sizeof a);
}

BLAS_CLONES static double sum_block_f32(int64_t n, const float *x)
{
    v8d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
    int64_t i = 0;
    if (!wide()) {
        double lo[32], hi[32];
        sum_lanes_f32(n, x, 0, lo);
        sum_lanes_f32(n, x, 32, hi);
        memcpy(&a0, lo, sizeof a0), memcpy(&a1, lo + 8, sizeof a1);
        memcpy(&a2, lo + 16, sizeof a2), memcpy(&a3, lo + 24, sizeof a3);
        memcpy(&a4, hi, sizeof a4), memcpy(&a5, hi + 8, sizeof a5);
        memcpy(&a6, hi + 16, sizeof a6), memcpy(&a7, hi + 24, sizeof a7);
        i = n / SUM_STEP * SUM_STEP;
    }
    for (; i + SUM_STEP <= n; i += SUM_STEP) {
        for (int k = 0; k < SUM_STEP; k += 16) __builtin_prefetch(x + i + SUM_PREFETCH + k);
        v8f f[8];
        memcpy(f, x + i, sizeof f);
        a0 += __builtin_convertvector(f[0], v8d);
        a1 += __builtin_convertvector(f[1], v8d);
        a2 += __builtin_convertvector(f[2], v8d);
        a3 += __builtin_convertvector(f[3], v8d);
        a4 += __builtin_convertvector(f[4], v8d);
        a5 += __builtin_convertvector(f[5], v8d);
        a6 += __builtin_convertvector(f[6], v8d);
        a7 += __builtin_convertvector(f[7], v8d);
    }
    a0 += a4, a1 += a5, a2 += a6, a3 += a7;
    for (; i + 32 <= n; i += 32) {
        v8f f0, f1, f2, f3;
        memcpy(&f0, x + i, sizeof f0);
        memcpy(&f1, x + i + 8, sizeof f1);
        memcpy(&f2, x + i + 16, sizeof f2);
        memcpy(&f3, x + i + 24, sizeof f3);
        a0 += __builtin_convertvector(f0, v8d);
        a1 += __builtin_convertvector(f1, v8d);
        a2 += __builtin_convertvector(f2, v8d);
        a3 += __builtin_convertvector(f3, v8d);
    }
    v8d a = (a0 + a1) + (a2 + a3);
    double s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    for (; i < n; i++) s += x[i];
    return s;
}

BLAS_CLONES static double sum_block_f64(int64_t n, const double *x)
{
    v8d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        v8d d0, d1, d2, d3;
        memcpy(&d0, x + i, sizeof d0);
        memcpy(&d1, x + i + 8, sizeof d1);
        memcpy(&d2, x + i + 16, sizeof d2);
        memcpy(&d3, x + i + 24, sizeof d3);
        a0 += d0;
        a1 += d1;
        a2 += d2;
        a3 += d3;
    }
    v8d a = (a0 + a1) + (a2 + a3);
    double s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    for (; i < n; i++) s += x[i];
    return s;
}

double blas_vsum_f32(int64_t n, const float *x)
{
    if (n <= SUM_BLOCK) return sum_block_f32(n, x);
    int64_t h = (n / 2 + 31) / 32 * 32; /* pairwise over blocks, halves stay vector aligned */
    return blas_vsum_f32(h, x) + blas_vsum_f32(n - h, x + h);
}

double blas_vsum_f64(int64_t n, const double *x)
{
    if (n <= SUM_BLOCK) return sum_block_f64(n, x);
    int64_t h = (n / 2 + 31) / 32 * 32;
    return blas_vsum_f64(h, x) + blas_vsum_f64(n - h, x + h);
}

/* ---- max / min: blas_vmath_lanes.h, dispatched above ---------------------------------- */
