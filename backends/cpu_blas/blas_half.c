/*
 * F16 and BF16 conversions, vectorized and chosen at run time, and the half forms of
 * the elementwise entries (unary, binary) and softmax.
 *
 * The rule every half result here follows is the core's f32 detour (core/kernel.c): the
 * value is the f32 entry's result on the exactly widened operands, rounded once to the
 * half dtype (to nearest even, NaN -> the quiet NaN of its sign, past the largest finite
 * value to inf, subnormals kept: ffb_f64_to_f16 / ffb_f64_to_bf16). So the elementwise
 * entries run the very f32 plans of blas_unary.c / blas_binary.c on tiles of HALF_TILE
 * widened values and round the tile back: bit-identical to the detour, without its two
 * full-size f32 temporaries and its three passes over memory. Except erf and GELU, which
 * run f32-accurate kernels (blas_verf_half): within the half tolerance of the detour, not
 * its bits.
 *
 * Conversions, by what blas_cpu_flags() reports (FF_HALF_ISA=scalar|avx2|avx512 caps it,
 * for the tests that pin every path to the same bits):
 *   avx512: F16 through vcvtph2ps / vcvtps2ph zmm (AVX-512F), BF16 as 32-bit shifts and
 *           the integer round-to-nearest-even (AVX-512F's vpmovdw narrows);
 *   avx2:   the same with F16C ymm and AVX2 integers;
 *   scalar: ff_backend_scalar.h's conversions.
 * AVX512-BF16's vcvtneps2bf16 is not used for the stores: it flushes subnormal inputs
 * and outputs to zero and keeps NaN payloads, where the ABI keeps subnormals and the
 * reference writes the canonical quiet NaN. NaNs are made canonical before the F16C
 * store for the same reason (vcvtps2ph keeps the payload's top bits).
 */
#include <stdlib.h>
#include <string.h>

#include "blas_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HALF_X86 1
#endif

/* Elements per tile: three f32 tiles (two inputs, one output) stay in L1. */
#define HALF_TILE 512

/* ---- conversions ------------------------------------------------------------------ */

static void load_scalar(ff_dtype t, int64_t n, float *d, const uint16_t *x)
{
    if (t == FF_F16)
        for (int64_t i = 0; i < n; i++) d[i] = ffb_f16_to_f32(x[i]);
    else
        for (int64_t i = 0; i < n; i++) d[i] = ffb_bf16_to_f32(x[i]);
}

static void store_scalar(ff_dtype t, int64_t n, uint16_t *d, const float *x)
{
    if (t == FF_F16)
        for (int64_t i = 0; i < n; i++) d[i] = ffb_f64_to_f16(x[i]);
    else
        for (int64_t i = 0; i < n; i++) d[i] = ffb_f64_to_bf16(x[i]);
}

#ifdef HALF_X86
/* bf16 from the bits of f32s: round to nearest even on the integer, NaN -> sign | 0x7FC0 */
#define BF16_RNE(V, ADD, AND, SRL, OR, SET1, CMPNAN, BLEND)                                       \
    do {                                                                                          \
        __typeof__(V) lsb_ = AND(SRL(V, 16), SET1(1));                                            \
        __typeof__(V) r_ = SRL(ADD(ADD(V, SET1(0x7FFF)), lsb_), 16);                              \
        __typeof__(V) q_ = OR(AND(SRL(V, 16), SET1(0x8000)), SET1(0x7FC0));                       \
        V = BLEND(CMPNAN, r_, q_);                                                                \
    } while (0)

/* 16 halves from x (n < 16 of them through a zeroed copy: a 16-bit masked load needs
 * AVX512BW), widened; the tails of short rows (a 14-wide image row, a 49-position plane)
 * took a scalar loop per value. */
__attribute__((target("avx512f"))) static __m512 load16(ff_dtype t, const uint16_t *x, int64_t n)
{
    __m256i h;
    if (n >= 16) {
        h = _mm256_loadu_si256((const __m256i *)x);
    } else {
        uint16_t b[16] = {0};
        memcpy(b, x, (size_t)n * sizeof *b);
        h = _mm256_loadu_si256((const __m256i *)b);
    }
    if (t == FF_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx512f"))) static void load_avx512(ff_dtype t, int64_t n, float *d, const uint16_t *x)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, load16(t, x + i, 16));
    if (i < n) _mm512_mask_storeu_ps(d + i, (__mmask16)((1u << (n - i)) - 1), load16(t, x + i, n - i));
}

/* 16 floats rounded to F16: a NaN becomes f32's canonical quiet NaN of its sign first,
 * which vcvtps2ph maps to 0x7E00 | sign, the reference's NaN. */
__attribute__((target("avx512f"))) static __m256i f16_16(__m512 v)
{
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u), qnan = _mm512_set1_epi32(0x7FC00000);
    __m512i b = _mm512_castps_si512(v);
    __m512i canon = _mm512_or_si512(_mm512_and_si512(b, sign), qnan);
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v, _mm512_castsi512_ps(canon));
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* 16 floats rounded to BF16, as 16 zero-extended 32-bit lanes. */
__attribute__((target("avx512f"))) static __m512i bf16_16(__m512 v)
{
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    __m512i b = _mm512_castps_si512(v);
#define NAN_BLEND512(m, a, b) _mm512_mask_blend_epi32(m, a, b)
    BF16_RNE(b, _mm512_add_epi32, _mm512_and_si512, _mm512_srli_epi32, _mm512_or_si512, _mm512_set1_epi32, nan,
             NAN_BLEND512);
#undef NAN_BLEND512
    return b;
}

/* The tail (n % 16 values) through masked lanes: vpmovdw's masked store is AVX-512F. */
__attribute__((target("avx512f"))) static void store_avx512(ff_dtype t, int64_t n, uint16_t *d, const float *x)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        _mm256_storeu_si256((__m256i *)(d + i), t == FF_F16 ? f16_16(v) : _mm512_cvtepi32_epi16(bf16_16(v)));
    }
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        _mm512_mask_cvtepi32_storeu_epi16(d + i, k, t == FF_F16 ? _mm512_cvtepu16_epi32(f16_16(v)) : bf16_16(v));
    }
}

__attribute__((target("avx2,f16c"))) static void load_avx2(ff_dtype t, int64_t n, float *d, const uint16_t *x)
{
    int64_t i = 0;
    if (t == FF_F16) {
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    } else {
        for (; i + 8 <= n; i += 8) {
            __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i)));
            _mm256_storeu_si256((__m256i *)(d + i), _mm256_slli_epi32(w, 16));
        }
    }
    load_scalar(t, n - i, d + i, x + i);
}

__attribute__((target("avx2,f16c"))) static void store_avx2(ff_dtype t, int64_t n, uint16_t *d, const float *x)
{
    int64_t i = 0;
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u), qnan = _mm256_set1_epi32(0x7FC00000);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        __m256i b = _mm256_castps_si256(v);
        if (t == FF_F16) {
            __m256i canon = _mm256_or_si256(_mm256_and_si256(b, sign), qnan);
            v = _mm256_blendv_ps(v, _mm256_castsi256_ps(canon), nan);
            _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        } else {
#define NAN_BLEND256(m, a, b) _mm256_blendv_epi8(a, b, _mm256_castps_si256(m))
            BF16_RNE(b, _mm256_add_epi32, _mm256_and_si256, _mm256_srli_epi32, _mm256_or_si256, _mm256_set1_epi32, nan,
                     NAN_BLEND256);
#undef NAN_BLEND256
            /* every lane is <= 0xFFFF, so the signed-to-unsigned saturating pack is exact */
            __m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
            _mm_storeu_si128((__m128i *)(d + i), _mm_packus_epi32(lo, hi));
        }
    }
    store_scalar(t, n - i, d + i, x + i);
}
#endif

/* 0 scalar, 1 avx2 + f16c, 2 avx512f: what the CPU has, capped by FF_HALF_ISA. */
int blas_half_isa(void)
{
    static atomic_int cached = -1;
    int isa = atomic_load_explicit(&cached, memory_order_relaxed);
    if (isa >= 0) return isa;
    int f = blas_cpu_flags();
    isa = (f & BLAS_CPU_AVX512F) && (f & BLAS_CPU_F16C) ? 2 : (f & BLAS_CPU_AVX2_FMA) && (f & BLAS_CPU_F16C) ? 1 : 0;
    const char *cap = getenv("FF_HALF_ISA");
    if (cap && strcmp(cap, "scalar") == 0) isa = 0;
    else if (cap && strcmp(cap, "avx2") == 0 && isa > 1) isa = 1;
    atomic_store_explicit(&cached, isa, memory_order_relaxed);
    return isa;
}

const char *blas_half_isa_name(void)
{
    static const char *const names[] = {"scalar", "avx2+f16c", "avx512f"};
    return names[blas_half_isa()];
}

void blas_half_to_f32(ff_dtype t, int64_t n, float *d, const void *x)
{
#ifdef HALF_X86
    int isa = blas_half_isa();
    if (isa == 2) { load_avx512(t, n, d, x); return; }
    if (isa == 1) { load_avx2(t, n, d, x); return; }
#endif
    load_scalar(t, n, d, x);
}

void blas_f32_to_half(ff_dtype t, int64_t n, void *d, const float *x)
{
#ifdef HALF_X86
    int isa = blas_half_isa();
    if (isa == 2) { store_avx512(t, n, d, x); return; }
    if (isa == 1) { store_avx2(t, n, d, x); return; }
#endif
    store_scalar(t, n, d, x);
}

/* f64 -> f32 rounded to odd: an inexact result keeps the truncated value with its last
 * bit set. Rounding that to nearest even in F16/BF16 (13 or 16 bits fewer, at every
 * exponent, subnormals and overflow included) gives exactly the f64 value rounded once,
 * the reference's rule; rounding to nearest twice would not (a double just above a
 * half-way point can land on it in f32). Branch-free so that it vectorizes (the scalar
 * form was a third of bf16 layer_norm's time): magnitudes are compared as bits (one sign
 * on both sides), and NaN keeps its bits. */
BLAS_CLONES static void f64_to_f32_odd(int64_t n, float *restrict d, const double *restrict x)
{
    for (int64_t i = 0; i < n; i++) {
        float f = (float)x[i];
        double b = f;
        uint32_t u;
        uint64_t xb, bb;
        memcpy(&u, &f, sizeof u), memcpy(&xb, &x[i], sizeof xb), memcpy(&bb, &b, sizeof bb);
        uint64_t ax = xb & 0x7fffffffffffffffull, ab = bb & 0x7fffffffffffffffull;
        uint32_t num = ax <= 0x7ff0000000000000ull, away = (ab > ax) & num, inexact = (ab != ax) & num;
        u = (u - away) | inexact; /* one step toward zero is u - 1 on the magnitude bits */
        memcpy(&d[i], &u, sizeof u);
    }
}

/* The copy entry's f64 <-> F16/BF16 on contiguous runs, tile by tile through f32 (exact
 * one way, rounded to odd the other): the scalar per-element path it replaces was a third
 * of MiniLM's bf16 forward (layer_norm computes in f64). */
void blas_f64_to_half(ff_dtype t, int64_t n, void *d, const double *x)
{
    float buf[HALF_TILE];
    for (int64_t i = 0; i < n; i += HALF_TILE) {
        int64_t m = n - i < HALF_TILE ? n - i : HALF_TILE;
        f64_to_f32_odd(m, buf, x + i);
        blas_f32_to_half(t, m, (uint16_t *)d + i, buf);
    }
}

void blas_half_to_f64(ff_dtype t, int64_t n, double *d, const void *x)
{
    float buf[HALF_TILE];
    for (int64_t i = 0; i < n; i += HALF_TILE) {
        int64_t m = n - i < HALF_TILE ? n - i : HALF_TILE;
        blas_half_to_f32(t, m, buf, (const uint16_t *)x + i);
        for (int64_t j = 0; j < m; j++) d[i + j] = buf[j];
    }
}

/* n halves at stride s (elements, >= 0) widened into d. */
static void load_strided(ff_dtype t, int64_t n, float *d, const uint16_t *x, int64_t s)
{
    if (s == 1) {
        blas_half_to_f32(t, n, d, x);
        return;
    }
    uint16_t h[HALF_TILE];
    for (int64_t i = 0; i < n; i += HALF_TILE) {
        int64_t m = n - i < HALF_TILE ? n - i : HALF_TILE;
        for (int64_t j = 0; j < m; j++) h[j] = x[(i + j) * s];
        blas_half_to_f32(t, m, d + i, h);
    }
}

static void store_strided(ff_dtype t, int64_t n, uint16_t *d, int64_t s, const float *x)
{
    if (s == 1) {
        blas_f32_to_half(t, n, d, x);
        return;
    }
    uint16_t h[HALF_TILE];
    for (int64_t i = 0; i < n; i += HALF_TILE) {
        int64_t m = n - i < HALF_TILE ? n - i : HALF_TILE;
        blas_f32_to_half(t, m, h, x + i);
        for (int64_t j = 0; j < m; j++) d[(i + j) * s] = h[j];
    }
}

/* Walk callbacks between a half view and an f32 one: p[0]/s[0] the destination. */
static void seg_widen(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    ff_dtype t = *(const ff_dtype *)varg;
    float *d = (float *)p[0];
    if (s[0] == 1) {
        load_strided(t, n, d, (const uint16_t *)p[1], s[1]);
        return;
    }
    float buf[HALF_TILE];
    for (int64_t i = 0; i < n; i += HALF_TILE) {
        int64_t m = n - i < HALF_TILE ? n - i : HALF_TILE;
        load_strided(t, m, buf, (const uint16_t *)p[1] + i * s[1], s[1]);
        for (int64_t j = 0; j < m; j++) d[(i + j) * s[0]] = buf[j];
    }
}

static void seg_narrow(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    ff_dtype t = *(const ff_dtype *)varg;
    const float *x = (const float *)p[1];
    if (s[1] == 1) {
        store_strided(t, n, (uint16_t *)p[0], s[0], x);
        return;
    }
    float buf[HALF_TILE];
    for (int64_t i = 0; i < n; i += HALF_TILE) {
        int64_t m = n - i < HALF_TILE ? n - i : HALF_TILE;
        for (int64_t j = 0; j < m; j++) buf[j] = x[(i + j) * s[1]];
        store_strided(t, m, (uint16_t *)p[0] + i * s[0], s[0], buf);
    }
}

void blas_half_convert(blas_ctx *c, const ff_view *dst, const ff_view *src)
{
    ff_dtype t = ffb_is_half(dst->dtype) ? dst->dtype : src->dtype;
    const ff_view *vs[] = {dst, src};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 2, vs);
    blas_walk_run(c, &w, BLAS_PAR_MIN * 2, ffb_is_half(dst->dtype) ? seg_narrow : seg_widen, &t);
}

int blas_half_is_conversion(ff_dtype dt, ff_dtype st)
{
    return (ffb_is_half(dt) && st == FF_F32) || (dt == FF_F32 && ffb_is_half(st));
}

ff_view blas_f32_view(float *buf, const ff_view *like)
{
    ff_view v = {.buf = buf, .offset = 0, .dtype = FF_F32, .ndim = like->ndim};
    int64_t st = 1;
    for (int d = like->ndim - 1; d >= 0; d--) {
        v.shape[d] = like->shape[d];
        v.strides[d] = st;
        st *= like->shape[d];
    }
    return v;
}

/* ---- unary and binary: the f32 plans on widened tiles --------------------------------- */
typedef struct half_plan {
    blas_elem_plan f; /* the f32 plan of the op */
    ff_dtype t;       /* F16 or BF16 */
    int nin;          /* 1 unary, 2 binary */
    int wide[2];      /* input k is an f32 copy already (a broadcast operand widened once) */
} half_plan;

/* p/s: {dst, inputs...} as the walk gives them. Inputs with stride 0 (broadcast) are
 * widened once and handed to the f32 plan with stride 0 too, as the detour's f32
 * operands arrive; a BOOL result is written by the plan directly. */
static void seg_half(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const half_plan *h = varg;
    float in[2][HALF_TILE], out[HALF_TILE];
    int bool_out = h->f.dt == FF_BOOL;
    for (int64_t i = 0; i < n; i += HALF_TILE) {
        int64_t m = n - i < HALF_TILE ? n - i : HALF_TILE;
        char *q[3];
        int64_t qs[3];
        for (int k = 0; k < h->nin; k++) {
            int64_t sk = s[k + 1];
            if (h->wide[k]) {
                q[k + 1] = (char *)((const float *)p[k + 1] + i * sk), qs[k + 1] = sk;
                continue;
            }
            load_strided(h->t, sk ? m : 1, in[k], (const uint16_t *)p[k + 1] + i * sk, sk);
            q[k + 1] = (char *)in[k], qs[k + 1] = sk ? 1 : 0;
        }
        if (bool_out) q[0] = p[0] + i * s[0], qs[0] = s[0];
        else q[0] = (char *)out, qs[0] = 1;
        h->f.seg((void *)&h->f, m, q, qs);
        if (!bool_out) store_strided(h->t, m, (uint16_t *)p[0] + i * s[0], s[0], out);
    }
}

/* The entries (blas_unary.c, blas_binary.c) have checked the call. */
ff_status blas_half_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    half_plan h = {.t = src->dtype, .nin = 1};
    blas_unary_plan(&h.f, op, FF_F32);
    /* erf and GELU: f32 accuracy is what a half result needs, not f32's own double rule */
    if (op == FF_UNARY_ERF) h.f.f32 = blas_verf_half;
    if (op == FF_UNARY_GELU_ERF) h.f.f32 = blas_vgelu_erf_f32;
    const ff_view *vs[] = {dst, src};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 2, vs);
    blas_walk_run(ctx, &w, BLAS_PAR_MIN / 2, seg_half, &h);
    return FF_OK;
}

/* At most this many distinct elements of a broadcast operand are widened up front. */
#define HALF_BCAST_MAX 16384

/* When v repeats along some dim of dst (stride 0: a bias [N] added to [M, N]) and has
 * few distinct elements, they are widened once into *buf and *wv is set to an f32 view
 * of dst's shape that reads them with the same stride-0 dims: the walk would otherwise
 * widen the bias again for every row, as often as the other operand. Returns 0 (the
 * plain path) when v does not repeat, is large, or the scratch is not there. */
static int widen_broadcast(blas_ctx *c, const ff_view *v, ff_view *wv, float **buf)
{
    ff_view cv = *v; /* the distinct elements: the repeated dims cut to extent 1 */
    int repeats = 0;
    for (int d = 0; d < v->ndim; d++)
        if (v->shape[d] > 1 && v->strides[d] == 0) cv.shape[d] = 1, repeats = 1;
    int64_t n = ff_view_numel(&cv);
    if (!repeats || n > HALF_BCAST_MAX || !(*buf = blas_scratch(c, (size_t)(n ? n : 1) * sizeof(float)))) return 0;
    ff_view fv = blas_f32_view(*buf, &cv);
    blas_half_convert(c, &fv, &cv);
    *wv = fv;
    for (int d = 0; d < v->ndim; d++) {
        wv->shape[d] = v->shape[d];
        if (cv.shape[d] != v->shape[d]) wv->strides[d] = 0;
    }
    return 1;
}

ff_status blas_half_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    half_plan h = {.t = a->dtype, .nin = 2};
    blas_binary_plan(&h.f, op, FF_F32);
    const ff_view *vs[] = {dst, a, b};
    ff_view wide[2];
    float *buf[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++)
        if ((h.wide[k] = widen_broadcast(ctx, vs[k + 1], &wide[k], &buf[k]))) vs[k + 1] = &wide[k];
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 3, vs);
    blas_walk_run(ctx, &w, BLAS_PAR_MIN, seg_half, &h);
    for (int k = 0; k < 2; k++) blas_free(ctx, buf[k]);
    return FF_OK;
}
