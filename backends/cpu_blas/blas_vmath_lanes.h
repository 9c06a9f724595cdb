/* The lane-wise f32 math of blas_vmath.c (exp, log, tanh, sigmoid, silu, max, min), written once
 * over a vector type and included twice by it: VF/VI/VU (float, int32, uint32 vectors of
 * W lanes), FN(name) the instance's name. Every operation is per lane, so both instances
 * give the same bits. No include guard: that is the point. */

/* a scalar broadcast to every lane (GCC's vector-scalar arithmetic; exact, signed zeros
 * aside, which no constant here is) */
#define SPLAT(c) ((VF){0} + (c))
#define SPLATU(c) ((VU){0} + (c))
#define SEL(m, a, b) ((VF)(((VU)(a) & (VU)(m)) | ((VU)(b) & ~(VU)(m))))


/* out = exp(x) * 2^KADD for a VF x, x clamped to [LO, 88.8] (a statement macro: no
 * vector-typed function arguments, so no ABI differences between the clones). KADD
 * scales exactly, through the exponent: exp(x) of x near -100 is subnormal, exp(x) *
 * 2^24 is not, so a product formed with it loses no bits before one final scaling. */
#define VEXP_K(out, xin, KADD, LO)                                                            \
    do {                                                                                      \
        VF Ex_ = (xin);                                                                      \
        VI Enan_ = Ex_ != Ex_;                                                                 \
        /* below LO the result is 0: those lanes compute on 0 and are zeroed after, as a       \
         * clamped LO would scale to a subnormal, and every subnormal product costs a         \
         * microcode assist (~150 cycles): attention's masked -inf scores ran 8x slower */    \
        VI Eunder_ = Ex_ < SPLAT(LO);                                                          \
        Ex_ = SEL(Ex_ > SPLAT(88.8f), SPLAT(88.8f), Ex_);                                        \
        Ex_ = SEL(Eunder_, SPLAT(0.0f), Ex_);                                                    \
        VF Et_ = Ex_ * SPLAT(1.44269504088896341f) + SPLAT(12582912.0f);                      \
        VF Ekf_ = Et_ - SPLAT(12582912.0f);                                                   \
        VU Ek_ = (VU)Et_ - (VU)SPLAT(12582912.0f); /* k as two's complement */            \
        Ek_ = Ek_ + SPLATU(KADD);                                                               \
        VF Er_ = Ex_ - Ekf_ * SPLAT(0.693359375f);                                             \
        Er_ = Er_ - Ekf_ * SPLAT(-2.12194440e-4f);                                               \
        VF Ep_ = SPLAT(1.9875691500e-4f);                                                    \
        Ep_ = Ep_ * Er_ + SPLAT(1.3981999507e-3f);                                               \
        Ep_ = Ep_ * Er_ + SPLAT(8.3334519073e-3f);                                               \
        Ep_ = Ep_ * Er_ + SPLAT(4.1665795894e-2f);                                               \
        Ep_ = Ep_ * Er_ + SPLAT(1.6666665459e-1f);                                               \
        Ep_ = Ep_ * Er_ + SPLAT(5.0000001201e-1f);                                               \
        Ep_ = Ep_ * (Er_ * Er_) + Er_ + SPLAT(1.0f);                                               \
        /* 2^k = 2^k1 * 2^k2 with k1 = k >> 1 (arithmetic), both in the normal range */       \
        VU Ek1_ = (VU)((VI)Ek_ >> 1);                                                     \
        VU Ek2_ = Ek_ - Ek1_;                                                                  \
        VF Es1_ = (VF)((Ek1_ + SPLATU(127u)) << 23);                                        \
        VF Es2_ = (VF)((Ek2_ + SPLATU(127u)) << 23);                                        \
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
            VF in_, out_;                                                                   \
            memcpy(&in_, (src) + i_, sizeof in_);                                             \
            BODY(out_, in_);                                                                  \
            memcpy((dst) + i_, &out_, sizeof out_);                                           \
        }                                                                                     \
        if (i_ < (n)) {                                                                       \
            float buf_[W] = {0};                                                              \
            size_t rest_ = (size_t)((n) - i_) * sizeof(float);                                \
            memcpy(buf_, (src) + i_, rest_);                                                  \
            VF in_, out_;                                                                   \
            memcpy(&in_, buf_, sizeof in_);                                                   \
            BODY(out_, in_);                                                                  \
            memcpy(buf_, &out_, sizeof out_);                                                 \
            memcpy((dst) + i_, buf_, rest_);                                                  \
        }                                                                                     \
    } while (0)

BLAS_CLONES void FN(blas_vexp_f32)(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VEXP); }

#define VLOG(out, xin)                                                                        \
    do {                                                                                      \
        VF x_ = (xin);                                                                      \
        /* subnormals: scale by 2^25 first, subtract 25 from the exponent after */            \
        VI sub_ = x_ < SPLAT(1.17549435e-38f);                                              \
        x_ = SEL(sub_, x_ * SPLAT(33554432.0f), x_);                                          \
        VU bits_ = (VU)x_;                                                                \
        VI e_ = (VI)((bits_ >> 23) & SPLATU(0xffu)) - 126;                                \
        e_ = e_ - ((VI)sub_ & 25);                                                          \
        VF m_ = (VF)((bits_ & SPLATU(0x807fffffu)) | SPLATU(0x3f000000u)); /* [0.5,1) */  \
        VI lo_ = m_ < SPLAT(0.707106781186547524f);                                         \
        e_ = e_ + lo_; /* lo_ is -1 where true */                                             \
        m_ = SEL(lo_, m_ + m_, m_) - SPLAT(1.0f);                                             \
        VF ef_ = __builtin_convertvector(e_, VF);                                         \
        VF z_ = m_ * m_;                                                                    \
        VF y_ = SPLAT(7.0376836292e-2f);                                                    \
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
        VF r_ = m_ + y_;                                                                    \
        r_ = r_ + ef_ * SPLAT(0.693359375f);                                                  \
        VF xi_ = (xin);                                                                     \
        r_ = SEL(xi_ == SPLAT(__builtin_inff()), xi_, r_);                                    \
        r_ = SEL(xi_ == SPLAT(0.0f), SPLAT(-__builtin_inff()), r_);                           \
        r_ = SEL(xi_ < SPLAT(0.0f), SPLAT(__builtin_nanf("")), r_);                           \
        (out) = SEL(xi_ != xi_, xi_, r_);                                                     \
    } while (0)

BLAS_CLONES void FN(blas_vlog_f32)(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VLOG); }

#define VTANH(out, xin)                                                                       \
    do {                                                                                      \
        VF x_ = (xin);                                                                      \
        VF ax_ = (VF)((VU)x_ & SPLATU(0x7fffffffu));                                    \
        VF z_ = x_ * x_;                                                                    \
        VF p_ = SPLAT(-5.70498872745e-3f);                                                  \
        p_ = p_ * z_ + SPLAT(2.06390887954e-2f);                                              \
        p_ = p_ * z_ + SPLAT(-5.37397155531e-2f);                                             \
        p_ = p_ * z_ + SPLAT(1.33314422036e-1f);                                              \
        p_ = p_ * z_ + SPLAT(-3.33332819422e-1f);                                             \
        VF small_ = x_ + x_ * z_ * p_;                                                      \
        VF e_;                                                                              \
        VEXP(e_, ax_ + ax_);                                                                  \
        VF big_ = SPLAT(1.0f) - SPLAT(2.0f) / (e_ + SPLAT(1.0f));                           \
        big_ = (VF)((VU)big_ | ((VU)x_ & SPLATU(0x80000000u))); /* sign of x */         \
        VF r_ = SEL(ax_ < SPLAT(0.625f), small_, big_);                                     \
        r_ = SEL(ax_ == SPLAT(0.0f), x_, r_); /* +-0 -> +-0: -0 + (-0 * z * p) would be +0 */ \
        (out) = SEL(x_ != x_, x_, r_);                                                        \
    } while (0)

BLAS_CLONES void FN(blas_vtanh_f32)(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VTANH); }

#define VSIGMOID(out, xin)                                                                    \
    do {                                                                                      \
        VF x_ = (xin);                                                                      \
        VF nax_ = (VF)((VU)x_ | SPLATU(0x80000000u)); /* -|x| */                        \
        VF e_;                                                                              \
        VEXP(e_, nax_);                                                                       \
        VF s_ = SPLAT(1.0f) / (SPLAT(1.0f) + e_);                                           \
        VF r_ = SEL(x_ >= SPLAT(0.0f), s_, e_ * s_);                                        \
        (out) = SEL(x_ != x_, x_, r_);                                                        \
    } while (0)

BLAS_CLONES void FN(blas_vsigmoid_f32)(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VSIGMOID); }

/* silu(x) = x * sigmoid(x). For x < 0 that is x * e / (1 + e) with e = exp(x), which is
 * subnormal below about -87: multiplying a subnormal e by |x| ~ 100 would scale its
 * rounding error (a few %) up into the result, so e is carried as e * 2^24 and the
 * product scaled back in one final rounding. Below -130 that scaled e is 0 too, so
 * silu(-inf) = -inf * 0 = NaN, as the reference and PyTorch. */
#define VSILU(out, xin)                                                                       \
    do {                                                                                      \
        VF x_ = (xin);                                                                      \
        VF nax_ = (VF)((VU)x_ | SPLATU(0x80000000u)); /* -|x| */                        \
        VF es_;                                                                             \
        VEXP_K(es_, nax_, 24u, -130.0f); /* exp(-|x|) * 2^24: normal down to x = -104 */      \
        VF s_ = SPLAT(1.0f) / (SPLAT(1.0f) + es_ * SPLAT(5.9604644775390625e-8f));          \
        VF neg_ = (x_ * (es_ * s_)) * SPLAT(5.9604644775390625e-8f); /* 2^-24 */            \
        VF r_ = SEL(x_ >= SPLAT(0.0f), x_ * s_, neg_);                                      \
        (out) = SEL(x_ != x_, x_, r_);                                                        \
    } while (0)

BLAS_CLONES void FN(blas_vsilu_f32)(int64_t n, float *dst, const float *src) { MAP16(n, dst, src, VSILU); }

/* max / min (NaN-propagating, the first NaN; a zero extreme is the first zero in index
 * order): first_nan and first_zero come from blas_vmath.c */
#define EXTREME(NAME, CMP)                                                                    \
    BLAS_CLONES float NAME(int64_t n, const float *x)                                         \
    {                                                                                         \
        float best = x[0];                                                                    \
        int64_t i = 0;                                                                        \
        if (n >= W) {                                                                         \
            VF acc;                                                                         \
            VI nan = {0};                                                                   \
            memcpy(&acc, x, sizeof acc);                                                      \
            for (i = W; i + W <= n; i += W) {                                                 \
                VF v;                                                                       \
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

EXTREME(FN(blas_vmax_f32), >)
EXTREME(FN(blas_vmin_f32), <)
