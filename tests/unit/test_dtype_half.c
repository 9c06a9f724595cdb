/* F16 and BF16: the shared conversion rules (ff_backend_scalar.h) at their edges, and
 * half tensors through the core's f32 detour: every op equals computing in f32 and
 * rounding once, comparisons write bool, promotion as PyTorch's, autograd keeps the
 * half dtype, safetensors and .npy keep it. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "ff_backend_scalar.h"
#include "ff_test.h"
#include "ff/io.h"

static void test_f16_conversion_edges(void)
{
    CHECK(ffb_f64_to_f16(65504.0) == 0x7BFF);               /* the largest finite */
    CHECK(ffb_f64_to_f16(65519.99) == 0x7BFF);              /* below the midpoint */
    CHECK(ffb_f64_to_f16(65520.0) == 0x7C00);               /* the midpoint ties up to inf */
    CHECK(ffb_f64_to_f16(-1e300) == 0xFC00);
    CHECK(ffb_f64_to_f16(INFINITY) == 0x7C00);
    CHECK(ffb_f64_to_f16(0x1p-24) == 0x0001);               /* the smallest subnormal */
    CHECK(ffb_f64_to_f16(0x1p-25) == 0x0000);               /* a tie to even: 0 */
    CHECK(ffb_f64_to_f16(0x1.8p-25) == 0x0001);             /* past the tie */
    CHECK(ffb_f64_to_f16(0x3p-25) == 0x0002);               /* 1.5 subnormal ulps: tie to even 2 */
    CHECK(ffb_f64_to_f16(0x1.ff8p-15) == 0x03FF);           /* the largest subnormal */
    CHECK(ffb_f64_to_f16(0x1.ffcp-15) == 0x0400);           /* a tie carrying into the smallest normal */
    CHECK(ffb_f64_to_f16(-0.0) == 0x8000);
    CHECK(ffb_f64_to_f16(1e-300) == 0x0000);
    CHECK(ffb_f64_to_f16(NAN) == 0x7E00);
    CHECK(ffb_f64_to_f16(-NAN) == 0xFE00);
    CHECK(ffb_f64_to_f16(1.0 + 0x1p-11) == 0x3C00);         /* tie: even */
    CHECK(ffb_f64_to_f16(1.0 + 0x3p-11) == 0x3C02);         /* tie: even */
    /* the double-rounding case: through f32 the 2^-40 is lost and the tie goes to even */
    CHECK(ffb_f64_to_f16(1.0 + 0x1p-11 + 0x1p-40) == 0x3C01);
    CHECK(ffb_f64_to_f16((double)(float)(1.0 + 0x1p-11 + 0x1p-40)) == 0x3C00);
    /* every f16 converts to f32 exactly and back to itself */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = ffb_f16_to_f32((uint16_t)h);
        if (isnan(f)) bad += (h & 0x7C00u) != 0x7C00u || (h & 0x3FFu) == 0;
        else bad += ffb_f64_to_f16(f) != h;
    }
    CHECK(bad == 0);
    CHECK(ffb_f16_to_f32(0x0001) == 0x1p-24f && ffb_f16_to_f32(0x7BFF) == 65504.0f);
}

static void test_bf16_conversion_edges(void)
{
    CHECK(ffb_f64_to_bf16(1.0) == 0x3F80);
    CHECK(ffb_f64_to_bf16(1.0 + 0x1p-8) == 0x3F80);  /* tie: even */
    CHECK(ffb_f64_to_bf16(1.0 + 0x3p-8) == 0x3F82);  /* tie: even */
    CHECK(ffb_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-30) == 0x3F81);
    CHECK(ffb_f64_to_bf16(3.4e38) == 0x7F80);        /* past the largest finite (~3.39e38) */
    CHECK(ffb_f64_to_bf16(0x1p-133) == 0x0001);      /* the smallest subnormal */
    CHECK(ffb_f64_to_bf16(0x1p-134) == 0x0000);      /* tie to even */
    CHECK(ffb_f64_to_bf16(-0.0) == 0x8000);
    CHECK(ffb_f64_to_bf16(NAN) == 0x7FC0);
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = ffb_bf16_to_f32((uint16_t)h);
        if (!isnan(f)) bad += ffb_f64_to_bf16(f) != h;
    }
    CHECK(bad == 0);
    /* int64 -> bf16 rounds once: through double the +1 is lost and the tie goes down */
    char b[2];
    ffb_st_i64(b, FF_BF16, (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1);
    CHECK(ffb_ld_f64(b, FF_BF16) == 0x1p60 + 0x1p53);
    ffb_st_i64(b, FF_F16, 70000);
    CHECK(isinf(ffb_ld_f64(b, FF_F16)));
    CHECK(ffb_ld_i64((ffb_st_f64(b, FF_F16, -2.75), b), FF_F16) == -2);
}

/* The 2-byte values of a half tensor. */
static int half_bits(const ff_tensor *t, uint16_t *out, int64_t n)
{
    return ff_tensor_numel(t) == n && ff_tensor_to_host(t, out, (size_t)n * 2) == FF_OK;
}

/* r (half) must equal ref (f32) rounded once, bit for bit. */
static int equals_rounded(const ff_tensor *r, const ff_tensor *ref, ff_dtype half)
{
    if (!r || !ref || ff_tensor_dtype(r) != half) return 0;
    int64_t n = ff_tensor_numel(ref);
    uint16_t got[64];
    float want[64];
    if (n > 64 || !half_bits(r, got, n) || ff_tensor_to_host(ref, want, (size_t)n * 4)) return 0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t w = half == FF_F16 ? ffb_f64_to_f16(want[i]) : ffb_f64_to_bf16(want[i]);
        if (got[i] != w) {
            fprintf(stderr, "element %lld: 0x%04x, expected 0x%04x (%.9g)\n", (long long)i, got[i], w, want[i]);
            return 0;
        }
    }
    return 1;
}

static const double xs[12] = {0.1, -1.7, 3.14159, 2.5e-3, 100.3, -0.0, 7.77, -42.5, 1e-5, 0.333, 65.1, -3.9};
static const double ys[12] = {1.3, 0.21, -2.0, 17.5, 0.011, 5.5, -0.6, 9.25, 1e4, -0.125, 3.3, 2.2};

static void test_ops_compute_in_f32(void)
{
    const ff_dtype halves[2] = {FF_F16, FF_BF16};
    for (int k = 0; k < 2; k++) {
        ff_dtype h = halves[k];
        ff_tensor *a = ff_test_tensor(h, 2, SHAPE(3, 4), xs), *b = ff_test_tensor(h, 2, SHAPE(4, 3), ys);
        ff_tensor *bt = ff_test_tensor(h, 2, SHAPE(3, 4), ys);
        ff_tensor *af = ff_astype(a, FF_F32), *bf = ff_astype(b, FF_F32), *btf = ff_astype(bt, FF_F32);
        CHECK(a && ff_tensor_dtype(a) == h);
        ff_tensor *m = ff_mul(a, bt), *mf = ff_mul(af, btf);
        CHECK(equals_rounded(m, mf, h));
        ff_tensor *d = ff_div(a, bt), *df = ff_div(af, btf);
        CHECK(equals_rounded(d, df, h));
        ff_tensor *e = ff_exp(a), *ef = ff_exp(af);
        CHECK(equals_rounded(e, ef, h));
        ff_tensor *g = ff_tanh(a), *gf = ff_tanh(af);
        CHECK(equals_rounded(g, gf, h));
        ff_tensor *mm = ff_matmul(a, b), *mmf = ff_matmul(af, bf);
        CHECK(equals_rounded(mm, mmf, h));
        ff_tensor *s = ff_sum(a, 1, (int[]){1}, false), *sf = ff_sum(af, 1, (int[]){1}, false);
        CHECK(equals_rounded(s, sf, h));
        ff_tensor *sm = ff_softmax(a, 1), *smf = ff_softmax(af, 1);
        CHECK(equals_rounded(sm, smf, h));
        ff_tensor *lt = ff_lt(a, bt);
        CHECK(lt && ff_tensor_dtype(lt) == FF_BOOL);
        ff_tensor *ltf = ff_lt(af, btf), *eq = lt && ltf ? ff_eq(lt, ltf) : NULL, *all = eq ? ff_all(eq, 0, NULL, false) : NULL;
        double one = 0;
        CHECK(all && ff_tensor_item(all, &one) == FF_OK && one == 1);
        /* get/item convert exactly */
        double v;
        CHECK(ff_tensor_get(a, (int64_t[]){0, 1}, &v) == FF_OK);
        uint16_t raw = h == FF_F16 ? ffb_f64_to_f16(-1.7) : ffb_f64_to_bf16(-1.7);
        CHECK(v == (h == FF_F16 ? ffb_f16_to_f32(raw) : ffb_bf16_to_f32(raw)));
        RELEASE(a, b, bt, af, bf, btf, m, mf, d, df, e, ef, g, gf, mm, mmf, s, sf, sm, smf, lt, ltf, eq, all);
    }
}

static void test_promotion(void)
{
    CHECK(ff_dtype_promote(FF_F16, FF_F16) == FF_F16);
    CHECK(ff_dtype_promote(FF_F16, FF_BF16) == FF_F32);
    CHECK(ff_dtype_promote(FF_BF16, FF_F32) == FF_F32);
    CHECK(ff_dtype_promote(FF_F16, FF_F64) == FF_F64);
    CHECK(ff_dtype_promote(FF_F16, FF_I64) == FF_F16);
    CHECK(ff_dtype_promote(FF_BOOL, FF_BF16) == FF_BF16);
    CHECK(ff_dtype_promote_number(FF_F16, ff_number_float(0.5)) == FF_F16);
    CHECK(ff_dtype_promote_number(FF_BF16, ff_number_int(3)) == FF_BF16);
    ff_tensor *h = ff_test_tensor(FF_F16, 1, SHAPE(2), VALS(1.5, -2)), *bh = ff_test_tensor(FF_BF16, 1, SHAPE(2), VALS(1, 2));
    ff_tensor *i = ff_test_tensor(FF_I32, 1, SHAPE(2), VALS(3, 4));
    ff_tensor *hb = ff_add(h, bh), *hi = ff_add(h, i), *hn = ff_mul_scalar(h, 2.0);
    CHECK(hb && ff_tensor_dtype(hb) == FF_F32);
    CHECK_TENSOR(hb, 1, SHAPE(2), VALS(2.5, 0), 0);
    CHECK(hi && ff_tensor_dtype(hi) == FF_F16);
    CHECK_TENSOR(hi, 1, SHAPE(2), VALS(4.5, 2), 0);
    CHECK(hn && ff_tensor_dtype(hn) == FF_F16);
    CHECK_TENSOR(hn, 1, SHAPE(2), VALS(3, -4), 0);
    RELEASE(h, bh, i, hb, hi, hn);
}

static void test_autograd_half(void)
{
    const ff_dtype halves[2] = {FF_F16, FF_BF16};
    for (int k = 0; k < 2; k++) {
        ff_tensor *x = ff_test_tensor(halves[k], 1, SHAPE(3), VALS(0.5, -1.25, 3));
        ff_tensor *w = ff_test_tensor(halves[k], 1, SHAPE(3), VALS(2, 0.25, -1));
        CHECK(ff_set_requires_grad(x, true) == FF_OK && ff_set_requires_grad(w, true) == FF_OK);
        ff_tensor *p = ff_mul(x, w), *t = p ? ff_tanh(p) : NULL, *s = t ? ff_sum(t, 0, NULL, false) : NULL;
        CHECK(s && ff_tensor_dtype(s) == halves[k]);
        CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
        ff_tensor *gx = ff_grad(x), *gw = ff_grad(w);
        CHECK(gx && ff_tensor_dtype(gx) == halves[k] && gw && ff_tensor_dtype(gw) == halves[k]);
        /* d/dx sum tanh(x w) = (1 - tanh^2) w, each step rounded to the half dtype */
        double got[3], tol = halves[k] == FF_F16 ? 4e-3 : 3e-2;
        if (gx && ff_test_values(gx, got, 3) == 0) {
            const double xv[3] = {0.5, -1.25, 3}, wv[3] = {2, 0.25, -1};
            for (int i = 0; i < 3; i++) {
                double th = tanh(xv[i] * wv[i]), want = (1 - th * th) * wv[i];
                CHECK_NEAR(got[i], want, tol * (1 + fabs(want)));
            }
        }
        RELEASE(x, w, p, t, s, gx, gw);
    }
}

static void test_io_keeps_half(void)
{
    char path[64], npy[64];
    snprintf(path, sizeof path, "/tmp/ff_half_%d.safetensors", (int)getpid());
    snprintf(npy, sizeof npy, "/tmp/ff_half_%d.npy", (int)getpid());
    ff_tensor *a = ff_test_tensor(FF_F16, 2, SHAPE(2, 2), VALS(1.5, -0.0, 65504, 0x1p-24));
    ff_tensor *b = ff_test_tensor(FF_BF16, 1, SHAPE(3), VALS(3.0e38, -1.0 / 3, NAN));
    const char *names[] = {"a", "b"};
    ff_tensor *ts[] = {a, b};
    CHECK(ff_safetensors_save(path, 2, names, ts, NULL) == FF_OK);
    ff_tensor_dict *d = ff_safetensors_load(path, 0);
    ff_tensor *la = d ? ff_tensor_dict_get(d, "a") : NULL, *lb = d ? ff_tensor_dict_get(d, "b") : NULL;
    uint16_t x[4], y[4];
    CHECK(la && ff_tensor_dtype(la) == FF_F16 && half_bits(a, x, 4) && half_bits(la, y, 4) && !memcmp(x, y, 8));
    CHECK(lb && ff_tensor_dtype(lb) == FF_BF16 && half_bits(b, x, 3) && half_bits(lb, y, 3) && !memcmp(x, y, 6));
    CHECK(ff_npy_save(npy, a) == FF_OK);
    ff_tensor *na = ff_npy_load(npy);
    CHECK(na && ff_tensor_dtype(na) == FF_F16 && half_bits(na, y, 4) && half_bits(a, x, 4) && !memcmp(x, y, 8));
    CHECK_ERROR(ff_npy_save(npy, b) != FF_OK, FF_ERR_UNSUPPORTED, "bf16");
    ff_tensor_dict_free(d);
    unlink(path);
    unlink(npy);
    RELEASE(a, b, la, lb, na);
}

FF_TEST_MAIN("dtype_half", TEST(test_f16_conversion_edges), TEST(test_bf16_conversion_edges),
             TEST(test_ops_compute_in_f32), TEST(test_promotion), TEST(test_autograd_half), TEST(test_io_keeps_half))
