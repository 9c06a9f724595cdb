/* Deterministic data: a seeded generator (splitmix64: every case draws from its own
 * stream, derived from --seed and the case id, so one case reruns alone with the
 * same numbers) and the value domains inputs are drawn from. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cf.h"
#include "ff_backend_scalar.h" /* the ABI's f16/bf16 conversions, shared with every backend */

uint64_t cf_hash_str(uint64_t seed, const char *s)
{
    uint64_t h = 1469598103934665603ull ^ (seed * 0x9E3779B97F4A7C15ull); /* FNV-1a over the id */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void cf_rng_init(cf_rng *r, uint64_t seed) { r->s = seed; }

uint64_t cf_rng_u64(cf_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double cf_rng_uniform(cf_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(cf_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0));
}

int64_t cf_rng_int(cf_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(cf_rng_u64(r) % (uint64_t)(hi - lo + 1));
}

/* ---- element access ------------------------------------------------------ */
double cf_get_f(const void *p, ff_dtype dt, int64_t i)
{
    switch (dt) {
    case FF_F32: return ((const float *)p)[i];
    case FF_F64: return ((const double *)p)[i];
    case FF_I32: return ((const int32_t *)p)[i];
    case FF_I64: return (double)((const int64_t *)p)[i];
    case FF_U8: return ((const uint8_t *)p)[i];
    case FF_BOOL: return ((const uint8_t *)p)[i] != 0;
    case FF_F16: case FF_BF16: return ffb_ld_f64((const char *)p + i * 2, dt);
    case FF_I8: return ((const int8_t *)p)[i];
    case FF_I16: return ((const int16_t *)p)[i];
    default: return 0;
    }
}

int64_t cf_get_i(const void *p, ff_dtype dt, int64_t i)
{
    switch (dt) {
    case FF_I32: return ((const int32_t *)p)[i];
    case FF_I64: return ((const int64_t *)p)[i];
    case FF_U8: return ((const uint8_t *)p)[i];
    case FF_BOOL: return ((const uint8_t *)p)[i] != 0;
    case FF_I8: return ((const int8_t *)p)[i];
    case FF_I16: return ((const int16_t *)p)[i];
    default: {
        double x = cf_get_f(p, dt, i);
        if (isnan(x)) return 0;
        if (x >= 9223372036854775808.0) return INT64_MAX;
        if (x <= -9223372036854775808.0) return INT64_MIN;
        return (int64_t)x;
    }
    }
}

/* Integer wrap without signed overflow. */
static int32_t wrap32(int64_t v)
{
    uint32_t w = (uint32_t)(uint64_t)v;
    return w <= (uint32_t)INT32_MAX ? (int32_t)w : (int32_t)(w - 0x80000000u) + INT32_MIN;
}

void cf_set_i(void *p, ff_dtype dt, int64_t i, int64_t v)
{
    switch (dt) {
    case FF_F32: ((float *)p)[i] = (float)v; break;
    case FF_F64: ((double *)p)[i] = (double)v; break;
    case FF_I32: ((int32_t *)p)[i] = wrap32(v); break;
    case FF_I64: ((int64_t *)p)[i] = v; break;
    case FF_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case FF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case FF_F16: case FF_BF16: ffb_st_i64((char *)p + i * 2, dt, v); break; /* rounds once */
    case FF_I8: { /* the low 8 / 16 bits, two's complement (300 -> 44, 200 -> -56) */
        uint8_t w = (uint8_t)(uint64_t)v;
        ((int8_t *)p)[i] = w < 128u ? (int8_t)w : (int8_t)((int)w - 256);
        break;
    }
    case FF_I16: {
        uint16_t w = (uint16_t)(uint64_t)v;
        ((int16_t *)p)[i] = w < 32768u ? (int16_t)w : (int16_t)((int32_t)w - 65536);
        break;
    }
    default: break;
    }
}

/* The ABI's conversion of a double into dtype dt (NaN -> 0, truncation toward zero,
 * saturation to int64, then I32 saturates and U8 wraps; bool is x != 0). */
void cf_set_f(void *p, ff_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case FF_F32: ((float *)p)[i] = (float)v; break;
    case FF_F64: ((double *)p)[i] = v; break;
    case FF_F16: case FF_BF16: ffb_st_f64((char *)p + i * 2, dt, v); break; /* once, to nearest even */
    case FF_BOOL: ((uint8_t *)p)[i] = v != 0.0; break;
    case FF_I32:
        ((int32_t *)p)[i] = isnan(v) ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
        break;
    default: {
        int64_t x = isnan(v) ? 0 : v >= 9223372036854775808.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
        cf_set_i(p, dt, i, x);
    }
    }
}

double cf_dtype_max(ff_dtype dt)
{
    return dt == FF_F32 ? FLT_MAX : dt == FF_F16 ? 65504.0 : dt == FF_BF16 ? 0x1.fep127 : DBL_MAX;
}

double cf_dtype_true_min(ff_dtype dt)
{
    return dt == FF_F32 ? FLT_TRUE_MIN : dt == FF_F16 ? 0x1p-24 : dt == FF_BF16 ? 0x1p-133 : DBL_TRUE_MIN;
}

/* ---- domains -------------------------------------------------------------- */
/* The edge values of each dtype: CF_DOM_SPECIAL draws from them at random, the
 * special family's "_edges" cases lay every one of them out in order. */
static const double f32_edges[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.5,
    FLT_TRUE_MIN, -FLT_TRUE_MIN, /* the smallest subnormals, +-1.4e-45 */
    FLT_MIN / 4,                 /* a mid-range subnormal */
    FLT_MAX, -FLT_MAX, 100.0, -100.0, 1e-3,
    6.0, 10.0, -10.0, /* where softplus and sigmoid take their asymptotic branches */
    3e9, -3e9};       /* past INT32 but inside INT64: a cast to I32 saturates, never wraps */
static const double f64_edges[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.5,
    DBL_TRUE_MIN, -DBL_TRUE_MIN, /* +-4.9e-324 */
    DBL_MIN / 4,
    DBL_MAX, -DBL_MAX, 100.0, -100.0, 1e-3,
    6.0, 10.0, -10.0, 3e9, -3e9};
/* F16: the smallest subnormal 2^-24, a mid one 2^-18, the largest finite 65504; 60000
 * squares and 12 exps past it. BF16: f32's range, 8 significant bits. */
static const double f16_edges[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.5,
    0x1p-24, -0x1p-24, 0x1p-18, 65504.0, -65504.0, 100.0, -100.0, 1e-3,
    6.0, 10.0, -10.0, 60000.0, 12.0};
static const double bf16_edges[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.5,
    0x1p-133, -0x1p-133, 0x1p-128, 0x1.fep127, -0x1.fep127, 100.0, -100.0, 1e-3,
    6.0, 10.0, -10.0, 3e9, -3e9};
static const int64_t i32_edges[] = {INT32_MIN, INT32_MAX, 0, -1, 1, INT32_MIN + 1, 2, -2, 65536};
static const int64_t i64_edges[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1, (int64_t)1 << 53, INT32_MAX, 3,
                                    /* to f32 this must round once: through f64 it rounds twice, to 2^60 */
                                    ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1, ((int64_t)1 << 53) + 1};
static const int64_t u8_edges[] = {0, 255, 1, 128, 127, 254, 2};
static const int64_t i8_edges[] = {INT8_MIN, INT8_MAX, 0, -1, 1, INT8_MIN + 1, 2};
static const int64_t i16_edges[] = {INT16_MIN, INT16_MAX, 0, -1, 1, 255, 256, -300};
static const int64_t bool_edges[] = {0, 1};
#define NELEMS(a) ((int)(sizeof a / sizeof a[0]))

int cf_edge_count(ff_dtype dt)
{
    switch (dt) {
    case FF_F32: return NELEMS(f32_edges);
    case FF_F64: return NELEMS(f64_edges);
    case FF_F16: return NELEMS(f16_edges);
    case FF_BF16: return NELEMS(bf16_edges);
    case FF_I32: return NELEMS(i32_edges);
    case FF_I64: return NELEMS(i64_edges);
    case FF_U8: return NELEMS(u8_edges);
    case FF_I8: return NELEMS(i8_edges);
    case FF_I16: return NELEMS(i16_edges);
    default: return NELEMS(bool_edges);
    }
}

void cf_set_edge(void *p, ff_dtype dt, int64_t i, int k)
{
    switch (dt) {
    case FF_F32: cf_set_f(p, dt, i, f32_edges[k % NELEMS(f32_edges)]); break;
    case FF_F64: cf_set_f(p, dt, i, f64_edges[k % NELEMS(f64_edges)]); break;
    case FF_F16: cf_set_f(p, dt, i, f16_edges[k % NELEMS(f16_edges)]); break;
    case FF_BF16: cf_set_f(p, dt, i, bf16_edges[k % NELEMS(bf16_edges)]); break;
    case FF_I32: cf_set_i(p, dt, i, i32_edges[k % NELEMS(i32_edges)]); break;
    case FF_I64: cf_set_i(p, dt, i, i64_edges[k % NELEMS(i64_edges)]); break;
    case FF_U8: cf_set_i(p, dt, i, u8_edges[k % NELEMS(u8_edges)]); break;
    case FF_I8: cf_set_i(p, dt, i, i8_edges[k % NELEMS(i8_edges)]); break;
    case FF_I16: cf_set_i(p, dt, i, i16_edges[k % NELEMS(i16_edges)]); break;
    default: cf_set_i(p, dt, i, bool_edges[k % NELEMS(bool_edges)]); break;
    }
}

void cf_fill_values(cf_rng *r, void *p, ff_dtype dt, int64_t n, cf_domain dom)
{
    if (ff_dtype_is_complex(dt)) { /* both parts from the domain: (re, im) pairs of the part dtype */
        cf_fill_values(r, p, dt == FF_C64 ? FF_F32 : FF_F64, 2 * n, dom);
        return;
    }
    const bool fl = ff_dtype_is_float(dt);
    for (int64_t i = 0; i < n; i++) {
        if (dt == FF_BOOL || dom == CF_DOM_BOOL01) {
            cf_set_i(p, dt, i, (int64_t)(cf_rng_u64(r) & 1));
            continue;
        }
        switch (dom) {
        case CF_DOM_SIGNED:
            if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, -2, 2));
            else cf_set_i(p, dt, i, dt == FF_U8 ? cf_rng_int(r, 0, 18) : cf_rng_int(r, -9, 9));
            break;
        case CF_DOM_POSITIVE:
            if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, 0.1, 3));
            else cf_set_i(p, dt, i, cf_rng_int(r, 1, 9));
            break;
        case CF_DOM_UNIT:
            if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, -1, 1));
            else cf_set_i(p, dt, i, dt == FF_U8 ? cf_rng_int(r, 0, 3) : cf_rng_int(r, -3, 3));
            break;
        case CF_DOM_SMALLINT:
            if (fl) cf_set_f(p, dt, i, (double)cf_rng_int(r, -5, 5));
            else cf_set_i(p, dt, i, dt == FF_U8 ? cf_rng_int(r, 0, 5) : cf_rng_int(r, -5, 5));
            break;
        case CF_DOM_OPEN_UNIT:
            if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, -0.9, 0.9));
            else cf_set_i(p, dt, i, cf_rng_int(r, 0, 1));
            break;
        case CF_DOM_ROUNDING:
            if (fl) cf_set_f(p, dt, i, 0.25 * (double)cf_rng_int(r, -16, 16));
            else cf_set_i(p, dt, i, cf_rng_int(r, 0, 5));
            break;
        case CF_DOM_SPECIAL: cf_set_edge(p, dt, i, (int)(cf_rng_u64(r) % (uint64_t)cf_edge_count(dt))); break;
        case CF_DOM_ZEROS_BELOW:
        case CF_DOM_ZEROS_ABOVE:
            if (fl) {
                /* zeros a quarter of the time: the first zero of a row sits anywhere */
                static const double v[] = {0.0, -0.0, 1.0, 2.5, 1e-3, 0.5, 3.0, 7.0};
                double x = v[cf_rng_u64(r) % 8];
                cf_set_f(p, dt, i, dom == CF_DOM_ZEROS_BELOW ? -x : x);
            } else {
                cf_set_i(p, dt, i, dt == FF_U8 ? cf_rng_int(r, 0, 18) : cf_rng_int(r, -9, 9));
            }
            break;
        case CF_DOM_BITS: {
            uint64_t u = cf_rng_u64(r);
            if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, -2, 2));
            else if (dt == FF_I32) cf_set_i(p, dt, i, (int32_t)(uint32_t)u);
            else if (dt == FF_U8) cf_set_i(p, dt, i, (int64_t)(u & 0xffu));
            else cf_set_i(p, dt, i, (int64_t)u); /* two's complement on every target we build for */
            break;
        }
        case CF_DOM_NEAR1:
            if (fl) cf_set_f(p, dt, i, (cf_rng_u64(r) & 1 ? -1 : 1) * cf_rng_uniform(r, 0.8, 1.25));
            else cf_set_i(p, dt, i, dt == FF_U8 ? cf_rng_int(r, 0, 2) : cf_rng_int(r, -2, 2));
            break;
        case CF_DOM_WIDE:
            if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, -30, 30));
            else cf_set_i(p, dt, i, cf_rng_int(r, -30, 30));
            break;
        case CF_DOM_HUGE_TIES:
            if (fl) {
                double top = 0.9 * cf_dtype_max(dt);
                int64_t k = cf_rng_int(r, 0, 5);
                double v = k < 4 ? top : k == 4 ? -top : 100.0;
                cf_set_f(p, dt, i, v); /* rounded into the dtype, then stepped down in its ulps */
                for (int64_t s = cf_rng_int(r, 0, 2); s > 0 && k < 4; s--) { /* 0-2 ulps below: ties and near ties */
                    if (dt == FF_F16 || dt == FF_BF16) ((uint16_t *)p)[i]--; /* positive: one ulp toward 0 */
                    else cf_set_f(p, dt, i, dt == FF_F32 ? (double)nextafterf((float)cf_get_f(p, dt, i), 0.0f)
                                                         : nextafter(cf_get_f(p, dt, i), 0.0));
                }
            } else {
                cf_set_i(p, dt, i, cf_rng_int(r, -30, 30));
            }
            break;
        case CF_DOM_ONE_THEN_TINY:
            if (fl) cf_set_f(p, dt, i, i == 0 ? 1.0 : dt == FF_F32 ? 1e-8 : 1e-17);
            else cf_set_i(p, dt, i, dt == FF_U8 ? cf_rng_int(r, 0, 18) : cf_rng_int(r, -9, 9));
            break;
        case CF_DOM_BIGINT:
            if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, -2, 2));
            else if (dt == FF_I64) cf_set_i(p, dt, i, (i & 1 ? -1 : 1) * (int64_t)((1ull << 53) | (cf_rng_u64(r) >> 11) | 1));
            else cf_set_i(p, dt, i, dt == FF_U8 ? cf_rng_int(r, 0, 255) : cf_rng_int(r, -2147483647, 2147483647));
            break;
        case CF_DOM_BIGPROD:
            if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, -2, 2));
            else if (dt == FF_U8) cf_set_i(p, dt, i, cf_rng_int(r, 0, 255));
            else cf_set_i(p, dt, i, (cf_rng_u64(r) & 1 ? -1 : 1) * (int64_t)((1ull << 20) | (cf_rng_u64(r) >> 44) | 1));
            break;
        case CF_DOM_INF_FIRST:
        case CF_DOM_NAN_FIRST:
            if (fl && i == 0) cf_set_f(p, dt, i, dom == CF_DOM_INF_FIRST ? INFINITY : NAN);
            else if (fl) cf_set_f(p, dt, i, cf_rng_uniform(r, -2, 2));
            else cf_set_i(p, dt, i, dt == FF_U8 ? cf_rng_int(r, 0, 18) : cf_rng_int(r, -9, 9));
            break;
        default: cf_set_i(p, dt, i, 0); break;
        }
    }
}
