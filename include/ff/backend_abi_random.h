/*
 * Part of include/ff/backend_abi.h, which includes it with the shared helpers: the
 * counter-based random rule (Philox4x32-10 and the samples drawn from it) every
 * backend's random fill and attention's dropout use, so one seed gives the same numbers
 * on every backend. A backend includes backend_abi.h, never this file alone.
 */
#ifndef FF_BACKEND_ABI_RANDOM_H
#define FF_BACKEND_ABI_RANDOM_H
#ifndef FF_BACKEND_ABI_H
#error "include ff/backend_abi.h, which includes this file"
#endif

/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
 * Counter-based: output depends only on (key, counter), so any backend, any thread
 * split and any order of evaluation gives the same numbers. */
typedef struct ff_philox_out { uint32_t v[4]; } ff_philox_out;

static inline FF_ABI_HD ff_philox_out ff_philox4x32(uint64_t key, uint64_t counter)
{
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    ff_philox_out o = {{c0, c1, c2, c3}};
    return o;
}

/* Uniform in [0, 1) with 53 random bits, from counter n. Every backend must compute
 * uniform samples exactly as p0 + (p1 - p0) * ff_random_uniform01(seed, n) in double,
 * rounded once to the destination dtype; ff_random_uniform_f32 does the f32 case,
 * keeping the result inside [p0, p1). */
static inline FF_ABI_HD double ff_random_uniform01(uint64_t seed, uint64_t n)
{
    ff_philox_out o = ff_philox4x32(seed, n);
    uint64_t bits = ((uint64_t)o.v[0] << 21) ^ ((uint64_t)o.v[1] >> 11);
    return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/* Rounding to f32 can carry a value just below p1 up to p1; step it back inside. */
static inline FF_ABI_HD float ff_random_uniform_f32(uint64_t seed, uint64_t n, double p0, double p1)
{
    float v = (float)(p0 + (p1 - p0) * ff_random_uniform01(seed, n));
    if ((double)v >= p1 && p1 > p0) v = nextafterf((float)p1, (float)p0);
    return v;
}

/* Standard normal sample from counter n (Box-Muller on the same Philox block, using
 * words 2 and 3, so it is independent of the uniform words). Normal samples are
 * p0 + p1 * ff_random_normal01(seed, n). Backends with a different libm may differ
 * in the last bits; conformance compares normals with a tolerance. */
static inline FF_ABI_HD void ff_random_normal_uniforms(uint64_t seed, uint64_t n, double *u1, double *u2)
{
    ff_philox_out o = ff_philox4x32(seed, n);
    /* u1 in (0, 1] so log(u1) is finite; u2 in [0, 1). */
    *u1 = ((double)o.v[2] + 1.0) * (1.0 / 4294967296.0);
    *u2 = (double)o.v[3] * (1.0 / 4294967296.0);
}

static inline FF_ABI_HD double ff_random_normal01(uint64_t seed, uint64_t n)
{
    double u1, u2;
    ff_random_normal_uniforms(seed, n, &u1, &u2);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif /* FF_BACKEND_ABI_RANDOM_H */
