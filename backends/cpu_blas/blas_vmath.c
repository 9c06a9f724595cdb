/*
 * Vectorized f32 math and reductions, written once with GCC/Clang vector extensions
 * (16-lane vectors) and compiled per ISA by BLAS_CLONES: AVX-512 runs them as one zmm
 * register, AVX2 as two ymm, baseline x86-64 as four xmm.
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

#define W 16
#define SPLAT(c) ((v16f){c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c})
#define SPLATU(c) ((v16u){c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c})
#define SEL(m, a, b) ((v16f)(((v16u)(a) & (v16u)(m)) | ((v16u)(b) & ~(v16u)(m))))

/* out = exp(x) * 2^KADD for a v16f x, x clamped to [LO, 88.8] (a statement macro: no
 * vector-typed function arguments, so no ABI differences between the clones). KADD
 * scales exactly, through the exponent: exp(x) of x near -100 is subnormal, exp(x) *
 * 2^24 is not, so a product formed with it loses no bits before one final scaling. */
#define VEXP_K(out, xin, KADD, LO)                                                            \
    do {                                                                                      \
        v16f Ex_ = (xin);                                                                      \
        v16i Enan_ = Ex_ != Ex_;                                                                 \
        /* below LO the result is 0: those lanes compute on 0 and are zeroed after, as a       \
         * clamped LO would scale to a subnormal, and every subnormal product costs a         \
         * microcode assist (~150 cycles): attention's masked -inf scores ran 8x slower */    \
        v16i Eunder_ = Ex_ < SPLAT(LO);                                                          \
        Ex_ = SEL(Ex_ > SPLAT(88.8f), SPLAT(88.8f), Ex_);                                        \
        Ex_ = SEL(Eunder_, SPLAT(0.0f), Ex_);                                                    \
        v16f Et_ = Ex_ * SPLAT(1.44269504088896341f) + SPLAT(12582912.0f);                      \
        v16f Ekf_ = Et_ - SPLAT(12582912.0f);                                                   \
        v16u Ek_ = (v16u)Et_ - (v16u)SPLAT(12582912.0f); /* k as two's complement */            \
        Ek_ = Ek_ + SPLATU(KADD);                                                               \
        v16f Er_ = Ex_ - Ekf_ * SPLAT(0.693359375f);                                             \
        Er_ = Er_ - Ekf_ * SPLAT(-2.12194440e-4f);                                               \
        v16f Ep_ = SPLAT(1.9875691500e-4f);                                                    \
        Ep_ = Ep_ * Er_ + SPLAT(1.3981999507e-3f);                                               \
        Ep_ = Ep_ * Er_ + SPLAT(8.3334519073e-3f);                                               \
        Ep_ = Ep_ * Er_ + SPLAT(4.1665795894e-2f);                                               \
        Ep_ = Ep_ * Er_ + SPLAT(1.6666665459e-1f);                                               \
        Ep_ = Ep_ * Er_ + SPLAT(5.0000001201e-1f);                                               \
        Ep_ = Ep_ * (Er_ * Er_) + Er_ + SPLAT(1.0f);                                               \
        /* 2^k = 2^k1 * 2^k2 with k1 = k >> 1 (arithmetic), both in the normal range */       \
        v16u Ek1_ = (v16u)((v16i)Ek_ >> 1);                                                     \
        v16u Ek2_ = Ek_ - Ek1_;                                                                  \
        v16f Es1_ = (v16f)((Ek1_ + SPLATU(127u)) << 23);                                        \
        v16f Es2_ = (v16f)((Ek2_ + SPLATU(127u)) << 23);                                        \
        Ep_ = Ep_ * Es1_ * Es2_;                                                                  \
        Ep_ = SEL(Eunder_, SPLAT(0.0f), Ep_);                                                    \
        (out) = SEL(Enan_, (xin), Ep_);                                                         \
    } while (0)

/* out = exp(x); below -104 the result rounds to 0 anyway */
#define VEXP(out, xin) VEXP_K(out, xin, 0u, -104.0f)

/* Applies BODY(out, in) to n floats 16 at a time; the tail goes through a padded copy. */
#define MAP16(n, dst, src, BODY)                                                              \
    do {                                                                                      \
        int64_t i_ = 0;                                                                       \
        for (; i_ + W <= (n); i_ += W) {                                                      \
            v16f in_, out_;                                                                   \
            memcpy(&in_, (src) + i_, sizeof in_);                                             \
            BODY(out_, in_);                                                                  \
            memcpy((dst) + i_, &out_, sizeof out_);                                           \
        }                                                                                     \
        if (i_ < (n)) {                                                                       \
            float buf_[W] = {0};                                                              \
            size_t rest_ = (size_t)((n) - i_) * sizeof(float);                                \
            memcpy(buf_, (src) + i_, rest_);                                                  \
            v16f in_, out_;                                                                   \
            memcpy(&in_, buf_, sizeof in_);                                                   \
            BODY(out_, in_);                                                                  \
            memcpy(buf_, &out_, sizeof out_);                                                 \
            memcpy((dst) + i_, buf_, rest_);                                                  \
        }                                                                                     \
    } while (0)

BLAS_CLONES void blas_vexp_f32(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VEXP); }

#define VLOG(out, xin)                                                                        \
    do {                                                                                      \
        v16f x_ = (xin);                                                                      \
        /* subnormals: scale by 2^25 first, subtract 25 from the exponent after */            \
        v16i sub_ = x_ < SPLAT(1.17549435e-38f);                                              \
        x_ = SEL(sub_, x_ * SPLAT(33554432.0f), x_);                                          \
        v16u bits_ = (v16u)x_;                                                                \
        v16i e_ = (v16i)((bits_ >> 23) & SPLATU(0xffu)) - 126;                                \
        e_ = e_ - ((v16i)sub_ & 25);                                                          \
        v16f m_ = (v16f)((bits_ & SPLATU(0x807fffffu)) | SPLATU(0x3f000000u)); /* [0.5,1) */  \
        v16i lo_ = m_ < SPLAT(0.707106781186547524f);                                         \
        e_ = e_ + lo_; /* lo_ is -1 where true */                                             \
        m_ = SEL(lo_, m_ + m_, m_) - SPLAT(1.0f);                                             \
        v16f ef_ = __builtin_convertvector(e_, v16f);                                         \
        v16f z_ = m_ * m_;                                                                    \
        v16f y_ = SPLAT(7.0376836292e-2f);                                                    \
        y_ = y_ * m_ + SPLAT(-1.1514610310e-1f);                                              \
        y_ = y_ * m_ + SPLAT(1.1676998740e-1f);                                               \
        y_ = y_ * m_ + SPLAT(-1.2420140846e-1f);                                              \
        y_ = y_ * m_ + SPLAT(1.4249322787e-1f);                                               \
        y_ = y_ * m_ + SPLAT(-1.6668057665e-1f);                                              \
        y_ = y_ * m_ + SPLAT(2.0000714765e-1f);                                               \
        y_ = y_ * m_ + SPLAT(-2.4999993993e-1f);                                              \
        y_ = y_ * m_ + SPLAT(3.3333331174e-1f);                                               \
        y_ = y_ * m_ * z_;                                                                    \
        y_ = y_ + ef_ * SPLAT(-2.12194440e-4f);                                               \
        y_ = y_ - SPLAT(0.5f) * z_;                                                           \
        v16f r_ = m_ + y_;                                                                    \
        r_ = r_ + ef_ * SPLAT(0.693359375f);                                                  \
        v16f xi_ = (xin);                                                                     \
        r_ = SEL(xi_ == SPLAT(__builtin_inff()), xi_, r_);                                    \
        r_ = SEL(xi_ == SPLAT(0.0f), SPLAT(-__builtin_inff()), r_);                           \
        r_ = SEL(xi_ < SPLAT(0.0f), SPLAT(__builtin_nanf("")), r_);                           \
        (out) = SEL(xi_ != xi_, xi_, r_);                                                     \
    } while (0)

BLAS_CLONES void blas_vlog_f32(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VLOG); }

#define VTANH(out, xin)                                                                       \
    do {                                                                                      \
        v16f x_ = (xin);                                                                      \
        v16f ax_ = (v16f)((v16u)x_ & SPLATU(0x7fffffffu));                                    \
        v16f z_ = x_ * x_;                                                                    \
        v16f p_ = SPLAT(-5.70498872745e-3f);                                                  \
        p_ = p_ * z_ + SPLAT(2.06390887954e-2f);                                              \
        p_ = p_ * z_ + SPLAT(-5.37397155531e-2f);                                             \
        p_ = p_ * z_ + SPLAT(1.33314422036e-1f);                                              \
        p_ = p_ * z_ + SPLAT(-3.33332819422e-1f);                                             \
        v16f small_ = x_ + x_ * z_ * p_;                                                      \
        v16f e_;                                                                              \
        VEXP(e_, ax_ + ax_);                                                                  \
        v16f big_ = SPLAT(1.0f) - SPLAT(2.0f) / (e_ + SPLAT(1.0f));                           \
        big_ = (v16f)((v16u)big_ | ((v16u)x_ & SPLATU(0x80000000u))); /* sign of x */         \
        v16f r_ = SEL(ax_ < SPLAT(0.625f), small_, big_);                                     \
        r_ = SEL(ax_ == SPLAT(0.0f), x_, r_); /* +-0 -> +-0: -0 + (-0 * z * p) would be +0 */ \
        (out) = SEL(x_ != x_, x_, r_);                                                        \
    } while (0)

BLAS_CLONES void blas_vtanh_f32(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VTANH); }

#define VSIGMOID(out, xin)                                                                    \
    do {                                                                                      \
        v16f x_ = (xin);                                                                      \
        v16f nax_ = (v16f)((v16u)x_ | SPLATU(0x80000000u)); /* -|x| */                        \
        v16f e_;                                                                              \
        VEXP(e_, nax_);                                                                       \
        v16f s_ = SPLAT(1.0f) / (SPLAT(1.0f) + e_);                                           \
        v16f r_ = SEL(x_ >= SPLAT(0.0f), s_, e_ * s_);                                        \
        (out) = SEL(x_ != x_, x_, r_);                                                        \
    } while (0)

BLAS_CLONES void blas_vsigmoid_f32(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VSIGMOID); }

/* silu(x) = x * sigmoid(x). For x < 0 that is x * e / (1 + e) with e = exp(x), which is
 * subnormal below about -87: multiplying a subnormal e by |x| ~ 100 would scale its
 * rounding error (a few %) up into the result, so e is carried as e * 2^24 and the
 * product scaled back in one final rounding. Below -130 that scaled e is 0 too, so
 * silu(-inf) = -inf * 0 = NaN, as the reference and PyTorch. */
#define VSILU(out, xin)                                                                       \
    do {                                                                                      \
        v16f x_ = (xin);                                                                      \
        v16f nax_ = (v16f)((v16u)x_ | SPLATU(0x80000000u)); /* -|x| */                        \
        v16f es_;                                                                             \
        VEXP_K(es_, nax_, 24u, -130.0f); /* exp(-|x|) * 2^24: normal down to x = -104 */      \
        v16f s_ = SPLAT(1.0f) / (SPLAT(1.0f) + es_ * SPLAT(5.9604644775390625e-8f));          \
        v16f neg_ = (x_ * (es_ * s_)) * SPLAT(5.9604644775390625e-8f); /* 2^-24 */            \
        v16f r_ = SEL(x_ >= SPLAT(0.0f), x_ * s_, neg_);                                      \
        (out) = SEL(x_ != x_, x_, r_);                                                        \
    } while (0)

BLAS_CLONES void blas_vsilu_f32(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VSILU); }

BLAS_CLONES double blas_vexp_shift_sum_f32(int64_t n, float *dst, const float *src, float shift)
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

/* ---- sums ------------------------------------------------------------------------- */
#define SUM_BLOCK 4096

/* A sum streams memory: one core reaches the bandwidth only with loads issued well
 * ahead, hence the prefetches 8 KiB ahead and eight independent accumulators. Every
 * element is converted to double (the documented accuracy: see the README); summing
 * 16-element partials in f32 first was another 10% faster on 16M floats but rounds
 * each partial, which a cancelling sum of 4000 values shows at 5e-6 relative. */
#define SUM_STEP 64
#define SUM_PREFETCH 2048

BLAS_CLONES static double sum_block_f32(int64_t n, const float *x)
{
    v8d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
    int64_t i = 0;
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

#define EXTREME(NAME, CMP)                                                                    \
    BLAS_CLONES float NAME(int64_t n, const float *x)                                         \
    {                                                                                         \
        float best = x[0];                                                                    \
        int64_t i = 0;                                                                        \
        if (n >= W) {                                                                         \
            v16f acc;                                                                         \
            v16i nan = {0};                                                                   \
            memcpy(&acc, x, sizeof acc);                                                      \
            for (i = W; i + W <= n; i += W) {                                                 \
                v16f v;                                                                       \
                memcpy(&v, x + i, sizeof v);                                                  \
                nan |= v != v;                                                                \
                acc = SEL(v CMP acc, v, acc);                                                 \
            }                                                                                 \
            int any_nan = 0;                                                                  \
            for (int j = 0; j < W; j++) any_nan |= nan[j] != 0 || acc[j] != acc[j];           \
            if (any_nan) return first_nan(n, x);                                              \
            best = acc[0];                                                                    \
            for (int j = 1; j < W; j++)                                                       \
                if (acc[j] CMP best) best = acc[j];                                           \
        }                                                                                     \
        for (; i < n; i++) {                                                                  \
            if (x[i] != x[i]) return first_nan(n, x);                                         \
            if (x[i] CMP best) best = x[i];                                                   \
        }                                                                                     \
        return best == 0.0f ? first_zero(n, x) : best;                                        \
    }

EXTREME(blas_vmax_f32, >)
EXTREME(blas_vmin_f32, <)
