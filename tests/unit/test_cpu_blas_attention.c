/*
 * cpu_blas's attention entry against a plain double-precision loop over the definition
 * in backend_abi.h ("Scaled dot-product attention"): forward (o, lse) and backward (gq,
 * gk, gv from the entry's own o and lse, as the core chains them), on every dtype, causal
 * and not, bool and additive masks broadcast over batch and heads, fully masked rows,
 * Tq != Tk, T not a multiple of the 128-row tile, head dims 32..128, and q/k/v laid out
 * dense, as [B, T, H, D] storage (the usual head split), stepped (copied tiles) or
 * broadcast over heads (stride 0). Runs with FF_NUM_THREADS=2 and sizes above the
 * threading threshold, so the pool's workers take tasks too.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>

#include "ff_backend_scalar.h"
#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *be;
static uint64_t rng = 0x2545F4914F6CDD1Dull;

static double unit(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* A 4-D array on the backend and its values in double (as rounded to its dtype). */
typedef struct arr {
    ff_view v;
    double *x; /* [B, H, T, W] logical, row-major */
    size_t nbytes;
    unsigned char *host;
} arr;

/* layout: 0 dense, 1 [B, T, H, W] storage, 2 every stride doubled with an offset of 3,
 * 3 heads broadcast (stride 0 on H). kind: 0 uniform(-2, 2), 1 bool (mostly true),
 * 2 zeros (outputs). */
static arr arr_new(ff_dtype t, const int64_t *shape, int layout, int kind)
{
    arr a = {.v = {.dtype = t, .ndim = 4}};
    int64_t B = shape[0], H = shape[1], T = shape[2], W = shape[3], n = B * H * T * W;
    memcpy(a.v.shape, shape, sizeof(int64_t) * 4);
    int64_t *s = a.v.strides, span, T1 = T ? T : 1; /* an empty dim keeps strides non-zero, as the core's */
    if (layout == 1) s[0] = T1 * H * W, s[1] = W, s[2] = H * W, s[3] = 1, span = n;
    else if (layout == 3) s[0] = T1 * W, s[1] = 0, s[2] = W, s[3] = 1, span = B * T * W;
    else s[0] = H * T1 * W, s[1] = T1 * W, s[2] = W, s[3] = 1, span = n;
    if (layout == 2) {
        for (int d = 0; d < 4; d++) s[d] *= 2;
        a.v.offset = 3, span = 2 * n + 3;
    }
    size_t es = ff_dtype_size(t);
    a.nbytes = (size_t)(span > 0 ? span : 1) * es;
    a.host = calloc(1, a.nbytes);
    for (size_t i = 0; kind == 2 && i < a.nbytes / es; i++) ffb_st_f64((char *)a.host + i * es, t, -7.0); /* sentinel */
    a.x = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < T; i++)
                for (int64_t w = 0; w < W; w++) {
                    char *p = (char *)a.host + (a.v.offset + b * s[0] + h * s[1] + i * s[2] + w * s[3]) * (int64_t)es;
                    int64_t li = ((b * H + h) * T + i) * W + w;
                    if (kind == 2) continue;
                    if (layout == 3 && h > 0) { /* the broadcast copy: same storage */
                        a.x[li] = a.x[((b * H) * T + i) * W + w];
                        continue;
                    }
                    double val = kind == 1 ? (unit() < 0.8) : 4.0 * unit() - 2.0;
                    ffb_st_f64(p, t, val);
                    a.x[li] = ffb_ld_f64(p, t);
                }
    a.v.buf = be->vt->alloc(be->ctx, a.nbytes);
    be->vt->upload(be->ctx, a.v.buf, 0, a.host, a.nbytes);
    return a;
}

/* The view's values back, in logical order. */
static void arr_read(arr *a, double *out)
{
    be->vt->download(be->ctx, a->v.buf, 0, a->host, a->nbytes);
    size_t es = ff_dtype_size(a->v.dtype);
    const int64_t *sh = a->v.shape, *s = a->v.strides;
    int64_t n = 0;
    for (int64_t b = 0; b < sh[0]; b++)
        for (int64_t h = 0; h < sh[1]; h++)
            for (int64_t i = 0; i < sh[2]; i++)
                for (int64_t w = 0; w < sh[3]; w++)
                    out[n++] = ffb_ld_f64((char *)a->host + (a->v.offset + b * s[0] + h * s[1] + i * s[2] + w * s[3]) * (int64_t)es,
                                          a->v.dtype);
}

static void arr_free(arr *a)
{
    be->vt->free(be->ctx, a->v.buf);
    free(a->x), free(a->host);
}

typedef struct tcase {
    int64_t B, H, Tq, Tk, D, Dv;
    ff_dtype t;
    int causal, mask;  /* ff_attention_mask */
    int layout;        /* of q, k, v (k, v: 3 = broadcast over heads) */
    int mask_bcast;    /* 0: [Tq, Tk] over (B, H); 1: [B, 1, 1, Tk] key padding */
    int dead_row;      /* query 0 sees no key */
} tcase;

/* Plain loops in double: o, lse and the gradients of sum(go * o). */
static void reference(const tcase *c, const double *q, const double *k, const double *v, const double *mk,
                      const double *go, double *o, double *lse, double *gq, double *gk, double *gv, double scale)
{
    int64_t Tq = c->Tq, Tk = c->Tk, D = c->D, Dv = c->Dv;
    double *p = malloc(sizeof(double) * (size_t)(Tk ? Tk : 1)), *dp = malloc(sizeof(double) * (size_t)(Tk ? Tk : 1));
    for (int64_t bh = 0; bh < c->B * c->H; bh++) {
        const double *qh = q + bh * Tq * D, *kh = k + bh * Tk * D, *vh = v + bh * Tk * Dv, *gh = go + bh * Tq * Dv;
        for (int64_t i = 0; i < Tq; i++) {
            double m = -INFINITY;
            for (int64_t j = 0; j < Tk; j++) {
                double s = 0;
                for (int64_t d = 0; d < D; d++) s += qh[i * D + d] * kh[j * D + d];
                s *= scale;
                double mv = mk ? mk[(bh * Tq + i) * Tk + j] : 0;
                if (c->mask == FF_ATTENTION_MASK_BOOL) s = mv != 0 ? s : -INFINITY;
                else s += mv;
                if (c->causal && j > i) s = -INFINITY;
                p[j] = s;
                if (s > m) m = s;
            }
            double l = 0;
            for (int64_t j = 0; j < Tk; j++) l += p[j] = m == -INFINITY ? 0 : exp(p[j] - m);
            for (int64_t j = 0; j < Tk; j++) p[j] = l > 0 ? p[j] / l : 0;
            lse[bh * Tq + i] = l > 0 ? m + log(l) : -INFINITY;
            double dsum = 0;
            for (int64_t j = 0; j < Tk; j++) {
                dp[j] = 0;
                for (int64_t d = 0; d < Dv; d++) dp[j] += gh[i * Dv + d] * vh[j * Dv + d];
                dsum += p[j] * dp[j];
            }
            for (int64_t d = 0; d < Dv; d++) {
                double acc = 0;
                for (int64_t j = 0; j < Tk; j++) acc += p[j] * vh[j * Dv + d];
                o[(bh * Tq + i) * Dv + d] = acc;
            }
            for (int64_t j = 0; j < Tk; j++) {
                double ds = p[j] * (dp[j] - dsum) * scale;
                for (int64_t d = 0; d < D; d++) {
                    gq[(bh * Tq + i) * D + d] += ds * kh[j * D + d];
                    gk[(bh * Tk + j) * D + d] += ds * qh[i * D + d];
                }
                for (int64_t d = 0; d < Dv; d++) gv[(bh * Tk + j) * Dv + d] += p[j] * gh[i * Dv + d];
            }
        }
    }
    free(p), free(dp);
}

static double tol_of(ff_dtype t) { return t == FF_F64 ? 1e-10 : t == FF_F32 ? 2e-4 : t == FF_F16 ? 2e-2 : 6e-2; }

/* got within tol of want (relative to the larger of 1 and the array's largest |want|),
 * -inf exactly; prints the first miss. */
static int close_all(const char *what, const tcase *c, const double *got, const double *want, int64_t n)
{
    double big = 1, tol = tol_of(c->t);
    for (int64_t i = 0; i < n; i++)
        if (isfinite(want[i]) && fabs(want[i]) > big) big = fabs(want[i]);
    for (int64_t i = 0; i < n; i++) {
        int ok = isinf(want[i]) ? got[i] == want[i] : fabs(got[i] - want[i]) <= tol * big;
        if (!ok) {
            fprintf(stderr, "%s [%lld]: got %.9g, want %.9g (B %lld H %lld Tq %lld Tk %lld D %lld Dv %lld %s causal %d mask %d layout %d)\n",
                    what, (long long)i, got[i], want[i], (long long)c->B, (long long)c->H, (long long)c->Tq,
                    (long long)c->Tk, (long long)c->D, (long long)c->Dv, ffb_dtype_name(c->t), c->causal, c->mask,
                    c->layout);
            return 0;
        }
    }
    return 1;
}

static void run_case(const tcase *c)
{
    int64_t qs[4] = {c->B, c->H, c->Tq, c->D}, ks[4] = {c->B, c->H, c->Tk, c->D}, vs[4] = {c->B, c->H, c->Tk, c->Dv};
    int64_t os[4] = {c->B, c->H, c->Tq, c->Dv}, ms[4] = {c->B, c->H, c->Tq, c->Tk};
    ff_dtype lt = c->t == FF_F64 ? FF_F64 : FF_F32;
    arr q = arr_new(c->t, qs, c->layout == 3 ? 0 : c->layout, 0), k = arr_new(c->t, ks, c->layout, 0);
    arr v = arr_new(c->t, vs, c->layout, 0), go = arr_new(c->t, os, 0, 0);
    arr o = arr_new(c->t, os, c->layout == 2 ? 2 : 0, 2);
    int64_t ls4[4] = {c->B, c->H, c->Tq, 1};
    arr lse = arr_new(lt, ls4, 0, 2);
    lse.v.ndim = 3;
    arr gq = arr_new(c->t, qs, 0, 2), gk = arr_new(c->t, ks, 0, 2), gv = arr_new(c->t, vs, 0, 2);
    arr m = {0};
    if (c->mask) { /* a [Tq, Tk] or [B, 1, 1, Tk] mask, broadcast by strides */
        ff_dtype mt = c->mask == FF_ATTENTION_MASK_BOOL ? FF_BOOL : c->t;
        int64_t small[4] = {1, 1, c->Tq, c->Tk}, pad[4] = {c->B, 1, 1, c->Tk};
        m = arr_new(mt, c->mask_bcast ? pad : small, 0, c->mask == FF_ATTENTION_MASK_BOOL);
        if (c->dead_row && !c->mask_bcast) { /* query 0: every key masked */
            for (int64_t j = 0; j < c->Tk; j++) {
                double dead = c->mask == FF_ATTENTION_MASK_BOOL ? 0.0 : -INFINITY;
                ffb_st_f64((char *)m.host + j * (int64_t)ff_dtype_size(mt), mt, dead);
                m.x[j] = dead;
            }
            be->vt->upload(be->ctx, m.v.buf, 0, m.host, m.nbytes);
        }
        double *full = malloc(sizeof(double) * (size_t)(c->B * c->H * c->Tq * c->Tk));
        for (int64_t b = 0; b < c->B; b++)
            for (int64_t h = 0; h < c->H; h++)
                for (int64_t i = 0; i < c->Tq; i++)
                    for (int64_t j = 0; j < c->Tk; j++)
                        full[((b * c->H + h) * c->Tq + i) * c->Tk + j] = c->mask_bcast ? m.x[b * c->Tk + j] : m.x[i * c->Tk + j];
        free(m.x);
        m.x = full;
        memcpy(m.v.shape, ms, sizeof ms);
        if (c->mask_bcast) m.v.strides[0] = c->Tk, m.v.strides[1] = 0, m.v.strides[2] = 0, m.v.strides[3] = 1;
        else m.v.strides[0] = 0, m.v.strides[1] = 0, m.v.strides[2] = c->Tk, m.v.strides[3] = 1;
    }
    double scale = 1.0 / sqrt((double)c->D);
    ff_attention_params p = {.scale = scale, .causal = c->causal, .mask = c->mask};
    ff_view src[7] = {q.v, k.v, v.v, m.v}, dst[3] = {o.v, lse.v};
    CHECK(be->vt->attention(be->ctx, FF_ATTENTION_FORWARD, dst, 2, src, c->mask ? 4 : 3, &p) == FF_OK);
    int64_t nq = c->B * c->H * c->Tq;
    size_t nqd = (size_t)(nq * c->D), nkd = (size_t)(c->B * c->H * c->Tk * c->D), nkv = (size_t)(c->B * c->H * c->Tk * c->Dv);
    double *wo = calloc((size_t)(nq * c->Dv) + 1, 8), *wl = calloc((size_t)nq + 1, 8), *wgq = calloc(nqd + 1, 8);
    double *wgk = calloc(nkd + 1, 8), *wgv = calloc(nkv + 1, 8), *got = malloc(8 * (nqd + nkd + nkv + (size_t)(nq * c->Dv) + 1));
    reference(c, q.x, k.x, v.x, c->mask ? m.x : NULL, go.x, wo, wl, wgq, wgk, wgv, scale);
    arr_read(&o, got);
    CHECK(close_all("o", c, got, wo, nq * c->Dv));
    if (c->layout == 2) { /* the stepped o's gaps keep their sentinel */
        double gap = ffb_ld_f64((char *)o.host + 4 * (int64_t)ff_dtype_size(c->t), c->t);
        CHECK(gap == -7.0);
    }
    lse.v.ndim = 4;
    arr_read(&lse, got);
    CHECK(close_all("lse", c, got, wl, nq));
    lse.v.ndim = 3;
    ff_view bsrc[7] = {go.v, q.v, k.v, v.v, o.v, lse.v, m.v}, bdst[3] = {gq.v, gk.v, gv.v};
    CHECK(be->vt->attention(be->ctx, FF_ATTENTION_BACKWARD, bdst, 3, bsrc, c->mask ? 7 : 6, &p) == FF_OK);
    arr_read(&gq, got);
    CHECK(close_all("gq", c, got, wgq, (int64_t)nqd));
    arr_read(&gk, got);
    CHECK(close_all("gk", c, got, wgk, (int64_t)nkd));
    arr_read(&gv, got);
    CHECK(close_all("gv", c, got, wgv, (int64_t)nkv));
    free(wo), free(wl), free(wgq), free(wgk), free(wgv), free(got);
    arr_free(&q), arr_free(&k), arr_free(&v), arr_free(&go), arr_free(&o), arr_free(&lse);
    arr_free(&gq), arr_free(&gk), arr_free(&gv);
    if (c->mask) arr_free(&m);
}

static void test_cases(void)
{
    static const tcase cases[] = {
        /* B H Tq Tk D Dv dtype causal mask layout mask_bcast dead_row */
        {2, 3, 200, 200, 64, 64, FF_F32, 1, 0, 0, 0, 0},
        {2, 2, 130, 257, 32, 48, FF_F32, 0, 0, 1, 0, 0},
        {1, 2, 300, 140, 80, 80, FF_F32, 1, 0, 2, 0, 0}, /* causal with Tq > Tk */
        {2, 2, 129, 300, 128, 64, FF_F32, 1, 0, 3, 0, 0}, /* Tq < Tk, k/v broadcast over heads */
        {2, 2, 150, 150, 64, 64, FF_F32, 0, FF_ATTENTION_MASK_BOOL, 0, 0, 1},
        {2, 2, 150, 190, 64, 64, FF_F32, 1, FF_ATTENTION_MASK_ADD, 1, 0, 1},
        {3, 2, 100, 170, 32, 32, FF_F32, 0, FF_ATTENTION_MASK_BOOL, 0, 1, 0},
        {2, 2, 140, 140, 64, 64, FF_F64, 1, FF_ATTENTION_MASK_BOOL, 1, 0, 1},
        {1, 3, 90, 260, 32, 40, FF_F64, 0, FF_ATTENTION_MASK_ADD, 2, 1, 0},
        {2, 2, 160, 160, 64, 64, FF_F16, 1, 0, 1, 0, 0},
        {2, 2, 130, 150, 64, 32, FF_F16, 0, FF_ATTENTION_MASK_ADD, 2, 0, 1},
        {2, 2, 160, 160, 64, 64, FF_BF16, 1, FF_ATTENTION_MASK_BOOL, 0, 1, 0},
        {1, 1, 300, 300, 64, 64, FF_F32, 1, 0, 1, 0, 0}, /* one head: its k tiles across the threads */
        {1, 1, 200, 290, 32, 48, FF_F64, 0, FF_ATTENTION_MASK_BOOL, 2, 0, 1},
        /* short sequences (MiniLM's T = 11 and 20): every product is blas_attention_gemm.c's
         * small kernel, N of 1 to 4 blocks of 16 columns, with the row tails of its passes */
        {4, 3, 20, 20, 32, 32, FF_F32, 0, FF_ATTENTION_MASK_ADD, 0, 1, 0},
        {2, 2, 11, 11, 32, 32, FF_F32, 0, 0, 1, 0, 0},
        {2, 2, 7, 45, 16, 40, FF_F32, 1, 0, 0, 0, 0},
        {1, 2, 9, 60, 24, 64, FF_F32, 0, FF_ATTENTION_MASK_BOOL, 2, 0, 1},
        {1, 1, 1, 1, 1, 1, FF_F32, 1, 0, 0, 0, 0},
        {1, 2, 5, 0, 16, 8, FF_F32, 0, 0, 0, 0, 0}, /* no keys: o = 0, lse = -inf, no gradient */
        {1, 2, 0, 7, 16, 8, FF_F32, 0, 0, 0, 0, 0}, /* no queries: gk = gv = 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

static void test_supports(void)
{
    ff_dtype ok[4] = {FF_F32, FF_F64, FF_F16, FF_BF16};
    for (int i = 0; i < 4; i++)
        for (int op = 0; op < 2; op++) CHECK(be->vt->supports(be->ctx, FF_KIND_ATTENTION, op, ok[i]));
    CHECK(!be->vt->supports(be->ctx, FF_KIND_ATTENTION, 0, FF_I32));
    /* dropout inside the entry: F32/F64 only (a half's mask would round as half) */
    CHECK(be->vt->supports(be->ctx, FF_KIND_ATTENTION, FF_ATTENTION_DROPOUT, FF_F32));
    CHECK(be->vt->supports(be->ctx, FF_KIND_ATTENTION, FF_ATTENTION_DROPOUT, FF_F64));
    CHECK(!be->vt->supports(be->ctx, FF_KIND_ATTENTION, FF_ATTENTION_DROPOUT, FF_F16));
    CHECK(!be->vt->supports(be->ctx, FF_KIND_ATTENTION, 3, FF_F32));
}

/* Refused calls name the entry and what was expected, and write nothing. */
static void test_errors(void)
{
    int64_t qs[4] = {1, 1, 4, 8}, os[4] = {1, 1, 4, 8}, ls[4] = {1, 1, 4, 1};
    arr q = arr_new(FF_F32, qs, 0, 0), o = arr_new(FF_F32, os, 0, 2), lse = arr_new(FF_F32, ls, 0, 2);
    lse.v.ndim = 3;
    ff_attention_params p = {.scale = 0.5};
    ff_view src[4] = {q.v, q.v, q.v}, dst[2] = {o.v, lse.v};
    CHECK(be->vt->attention(be->ctx, FF_ATTENTION_FORWARD, dst, 2, src, 4, &p) == FF_ERR_INVALID);
    CHECK(strstr(ff_last_error(), "cpu_blas attention") != NULL);
    dst[1].dtype = FF_F64;
    CHECK(be->vt->attention(be->ctx, FF_ATTENTION_FORWARD, dst, 2, src, 3, &p) == FF_ERR_INVALID);
    CHECK(strstr(ff_last_error(), "lse must be f32") != NULL);
    dst[1].dtype = FF_F32;
    src[1].shape[3] = 7;
    CHECK(be->vt->attention(be->ctx, FF_ATTENTION_FORWARD, dst, 2, src, 3, &p) == FF_ERR_INVALID);
    src[1].shape[3] = 8;
    p.mask = FF_ATTENTION_MASK_BOOL;
    src[3] = q.v; /* an f32 mask where bool is declared */
    CHECK(be->vt->attention(be->ctx, FF_ATTENTION_FORWARD, dst, 2, src, 4, &p) == FF_ERR_INVALID);
    CHECK(strstr(ff_last_error(), "mask") != NULL);
    p.mask = 7;
    CHECK(be->vt->attention(be->ctx, FF_ATTENTION_FORWARD, dst, 2, src, 3, &p) == FF_ERR_INVALID);
    p.mask = FF_ATTENTION_MASK_NONE, p.dropout_p = 1.0; /* the contract's range is [0, 1) */
    CHECK(be->vt->attention(be->ctx, FF_ATTENTION_FORWARD, dst, 2, src, 3, &p) == FF_ERR_INVALID);
    CHECK(strstr(ff_last_error(), "dropout_p") != NULL);
    double out[32];
    arr_read(&o, out);
    int untouched = 1;
    for (int i = 0; i < 32; i++) untouched &= out[i] == -7.0;
    CHECK(untouched);
    arr_free(&q), arr_free(&o), arr_free(&lse);
}

static void setup(void)
{
    setenv("FF_NUM_THREADS", "2", 1);
    be = ff_backend_load("cpu_blas");
    CHECK(be != NULL);
    if (!be) {
        fprintf(stderr, "cannot load cpu_blas: %s\n", ff_last_error());
        exit(1);
    }
    CHECK(FF_VT_OPT(be, attention) != NULL);
    if (!FF_VT_OPT(be, attention)) exit(1);
}

FF_TEST_MAIN("cpu_blas_attention", TEST(setup), TEST(test_supports), TEST(test_cases), TEST(test_errors))
