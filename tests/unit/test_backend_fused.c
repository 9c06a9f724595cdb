/*
 * The fused entry of the in-tree host backends (cpu, and cpu_blas when built), called
 * directly: what it refuses (with FF_ERR_UNSUPPORTED or FF_ERR_INVALID, a message, and
 * nothing written), the edges it accepts (zero-size, no instructions, 0-d, exactly
 * FF_FUSED_MAX_VALUES = 64 values). Bit-identity with the plain entries on every layout
 * is ff-conformance's family "fused".
 */
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *bes[2];
static int nbes;

enum { N = 12 }; /* elements of the test views: a [3, 4] */

typedef struct fz {
    ff_backend *be;
    void *buf; /* a = elements 0..N-1, out = N..2N-1 */
    ff_view v[2];
} fz;

static fz fz_new(ff_backend *be, ff_dtype t)
{
    fz f = {be, NULL, {{0}}};
    size_t es = ff_dtype_size(t);
    unsigned char host[2 * N * 8];
    for (int i = 0; i < N; i++) {
        double x = i - 5.0;
        float y = (float)x;
        memcpy(host + i * es, t == FF_F32 ? (void *)&y : (void *)&x, es);
    }
    memset(host + N * es, 0xA5, N * es); /* sentinel: must survive a refused program */
    f.buf = be->vt->alloc(be->ctx, 2 * N * es);
    be->vt->upload(be->ctx, f.buf, 0, host, 2 * N * es);
    for (int k = 0; k < 2; k++)
        f.v[k] = (ff_view){.buf = f.buf, .offset = k * N, .dtype = t, .ndim = 2, .shape = {3, 4}, .strides = {4, 1}};
    return f;
}

static ff_fused_program prog_of(fz *f, int n_values, int n_inst, const ff_fused_inst *inst)
{
    ff_fused_program p = {.dtype = f->v[0].dtype, .ndim = 2, .shape = {3, 4}, .n_views = 2, .views = f->v,
                          .n_values = n_values, .n_inst = n_inst, .inst = inst};
    return p;
}

static ff_status run(fz *f, const ff_fused_program *p)
{
    ff_clear_error();
    return FF_VT_OPT(f->be, fused)(f->be->ctx, p);
}

/* Element i of out, as double. */
static double out_at(fz *f, int i)
{
    double host[2 * N];
    size_t es = ff_dtype_size(f->v[0].dtype);
    f->be->vt->download(f->be->ctx, f->buf, 0, host, 2 * N * es);
    if (f->v[0].dtype == FF_F32) return ((float *)host)[N + i];
    return host[N + i];
}

static int out_untouched(fz *f)
{
    unsigned char host[2 * N * 8];
    size_t es = ff_dtype_size(f->v[0].dtype);
    f->be->vt->download(f->be->ctx, f->buf, 0, host, 2 * N * es);
    for (size_t i = N * es; i < 2 * N * es; i++)
        if (host[i] != 0xA5) return 0;
    return 1;
}

static void fz_free(fz *f) { f->be->vt->free(f->be->ctx, f->buf); }

#define EXPECT_REFUSED(f, p, status, needle)                                                        \
    do {                                                                                            \
        CHECK(run(&(f), &(p)) == (status));                                                         \
        CHECK(strstr(ff_last_error(), (needle)) != NULL);                                           \
        CHECK(out_untouched(&(f)));                                                                 \
    } while (0)

static void test_supports(void)
{
    for (int b = 0; b < nbes; b++) {
        CHECK(FF_VT_OPT(bes[b], fused) != NULL);
        for (int t = 0; t < FF_DTYPE_COUNT; t++)
            CHECK(ff_backend_supports(bes[b], FF_KIND_FUSED, 0, (ff_dtype)t) == (t == FF_F32 || t == FF_F64));
        CHECK(!ff_backend_supports(bes[b], FF_KIND_FUSED, 1, FF_F32));
    }
}

/* Programs over {a, out} (+ temporaries) the entry must refuse: status, a word of the message. */
typedef struct refusal {
    int n_values, n_inst;
    ff_fused_inst inst[2];
    ff_status status;
    const char *needle;
} refusal;

static const refusal refusals[] = {
    {2, 1, {{FF_KIND_UNARY, FF_UNARY_ISNAN, 1, {0, 0}}}, FF_ERR_UNSUPPORTED, "isnan"}, /* writes bool */
    {2, 1, {{FF_KIND_UNARY, FF_UNARY_BITWISE_NOT, 1, {0, 0}}}, FF_ERR_UNSUPPORTED, "bitwise_not"}, /* integers only */
    {2, 1, {{FF_KIND_BINARY, FF_BINARY_BITWISE_AND, 1, {0, 0}}}, FF_ERR_UNSUPPORTED, "bitwise_and"},
    {2, 1, {{FF_KIND_BINARY, FF_BINARY_LT, 1, {0, 0}}}, FF_ERR_UNSUPPORTED, "lt"}, /* writes bool */
    {2, 1, {{FF_KIND_WHERE, 0, 1, {0, 0}}}, FF_ERR_UNSUPPORTED, "neither unary nor binary"},
    {2, 1, {{FF_KIND_UNARY, FF_UNARY_COUNT + 3, 1, {0, 0}}}, FF_ERR_UNSUPPORTED, "unknown"},
    /* the bad instruction comes second: the first must not have run either */
    {3, 2, {{FF_KIND_UNARY, FF_UNARY_EXP, 2, {0, 0}}, {FF_KIND_UNARY, FF_UNARY_BITWISE_NOT, 1, {2, 0}}},
     FF_ERR_UNSUPPORTED, "instruction 1"},
    /* more values than the backend takes */
    {FF_FUSED_MAX_VALUES + 1, 1, {{FF_KIND_UNARY, FF_UNARY_NEG, 1, {0, 0}}}, FF_ERR_UNSUPPORTED, "65 values"},
    /* malformed: temporary 2 read before it is written, value 7 of 3 */
    {3, 1, {{FF_KIND_UNARY, FF_UNARY_NEG, 1, {2, 0}}}, FF_ERR_INVALID, "before it is written"},
    {3, 1, {{FF_KIND_BINARY, FF_BINARY_ADD, 1, {0, 7}}}, FF_ERR_INVALID, "reads value 7"},
};

static void test_refused(void)
{
    for (int b = 0; b < nbes; b++) {
        fz f = fz_new(bes[b], FF_F32);
        for (size_t k = 0; k < sizeof refusals / sizeof refusals[0]; k++) {
            const refusal *r = &refusals[k];
            ff_fused_program p = prog_of(&f, r->n_values, r->n_inst, r->inst);
            EXPECT_REFUSED(f, p, r->status, r->needle);
        }
        ff_fused_inst neg = {FF_KIND_UNARY, FF_UNARY_NEG, 1, {0, 0}};
        ff_fused_program p = prog_of(&f, 2, 1, &neg);
        p.shape[1] = 5; /* the views are [3, 4] */
        EXPECT_REFUSED(f, p, FF_ERR_INVALID, "program's dtype and shape");
        /* more views than the ABI's cap: a read FF_FUSED_MAX_VIEWS times, then out */
        ff_view many[FF_FUSED_MAX_VIEWS + 1];
        for (int k = 0; k < FF_FUSED_MAX_VIEWS; k++) many[k] = f.v[0];
        many[FF_FUSED_MAX_VIEWS] = f.v[1];
        ff_fused_inst neg_last = {FF_KIND_UNARY, FF_UNARY_NEG, FF_FUSED_MAX_VIEWS, {0, 0}};
        p = prog_of(&f, FF_FUSED_MAX_VIEWS + 1, 1, &neg_last);
        p.n_views = FF_FUSED_MAX_VIEWS + 1;
        p.views = many;
        EXPECT_REFUSED(f, p, FF_ERR_UNSUPPORTED, "17 of them views");
        fz_free(&f);
        /* integer programs */
        fz g = fz_new(bes[b], FF_F64);
        g.v[0].dtype = g.v[1].dtype = FF_I64;
        p = prog_of(&g, 2, 1, &neg);
        CHECK(run(&g, &p) == FF_ERR_UNSUPPORTED);
        fz_free(&g);
    }
}

static void test_edges(void)
{
    for (int b = 0; b < nbes; b++)
        for (int t = 0; t < 2; t++) {
            fz f = fz_new(bes[b], t ? FF_F64 : FF_F32);
            ff_fused_inst neg = {FF_KIND_UNARY, FF_UNARY_NEG, 1, {0, 0}};
            ff_fused_program p = prog_of(&f, 2, 1, &neg);
            /* zero-size: nothing written */
            p.shape[0] = f.v[0].shape[0] = f.v[1].shape[0] = 0;
            CHECK(run(&f, &p) == FF_OK && out_untouched(&f));
            p.shape[0] = f.v[0].shape[0] = f.v[1].shape[0] = 3;
            /* no instructions */
            p.n_inst = 0;
            CHECK(run(&f, &p) == FF_OK && out_untouched(&f));
            /* 0-d: one element, at each view's offset */
            ff_view v0[2] = {f.v[0], f.v[1]};
            v0[0].ndim = v0[1].ndim = 0;
            v0[0].offset = 7; /* a = 2 */
            v0[1].offset = N + 5;
            ff_fused_program p0 = {.dtype = p.dtype, .ndim = 0, .n_views = 2, .views = v0, .n_values = 2,
                                   .n_inst = 1, .inst = &neg};
            CHECK(run(&f, &p0) == FF_OK);
            CHECK(out_at(&f, 5) == -2.0);
            /* exactly FF_FUSED_MAX_VALUES = 64 values: out = a + a + ... (64 terms) through 62 temporaries */
            ff_fused_inst chain[63];
            chain[0] = (ff_fused_inst){FF_KIND_BINARY, FF_BINARY_ADD, 2, {0, 0}};
            for (int k = 1; k < 62; k++) chain[k] = (ff_fused_inst){FF_KIND_BINARY, FF_BINARY_ADD, 2 + k, {1 + k, 0}};
            chain[62] = (ff_fused_inst){FF_KIND_BINARY, FF_BINARY_ADD, 1, {63, 0}};
            ff_fused_program p64 = prog_of(&f, 64, 63, chain);
            CHECK(run(&f, &p64) == FF_OK);
            for (int i = 0; i < N; i++) CHECK(out_at(&f, i) == 64.0 * (i - 5.0));
            fz_free(&f);
        }
}

static void setup(void)
{
    bes[nbes] = ff_backend_load("cpu");
    CHECK(bes[nbes] != NULL);
    if (bes[nbes]) nbes++;
#if FF_TEST_HAVE_CPU_BLAS
    bes[nbes] = ff_backend_load("cpu_blas");
    CHECK(bes[nbes] != NULL);
    if (bes[nbes]) nbes++;
#endif
    if (!nbes) {
        fprintf(stderr, "cannot load backends: %s\n", ff_last_error());
        exit(1);
    }
}

FF_TEST_MAIN("backend_fused", TEST(setup), TEST(test_supports), TEST(test_refused), TEST(test_edges))
