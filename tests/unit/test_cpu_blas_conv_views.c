/*
 * cpu_blas's conv2d entries (oneDNN) on views whose strides do not nest, destinations
 * included: rows stepped by 3 inside channels of 3 C - 2 rows, so a channel's rows span
 * past the next channel's start (x[:, :, ::3] of a tensor whose height is not a
 * multiple of 3), and a batch broadcast (stride 0). Each pass on such views must equal
 * the same pass on dense operands and write nothing outside the destination view. The
 * reference backend has no conv2d entries, so the dense run of cpu_blas is the
 * comparison; ff-conformance compares the dense runs with the reference's composition.
 * Runs with FF_NUM_THREADS=2, and one size above the pool's threshold, so the split
 * passes (the weight gradient summed from per-thread parts) meet such views too.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *be;
static const float SENTINEL = 1234.5f;

/* A view's layout over its storage: dense, gapped (above) or broadcast over dim 0. */
enum { DENSE, GAPPED, BCAST0 };
typedef struct opnd {
    int64_t shape[4], strides[4], offset, span;
    void *buf;
} opnd;

/* An operand of the given shape and layout kind; fill: values (a broadcast operand, or
 * a dense twin of one with rep set, repeats batch item 0), else zeros. The storage
 * outside the view holds the sentinel. */
static opnd opnd_new(const int64_t *shape, int kind, int fill, int rep)
{
    opnd o = {.offset = kind == GAPPED ? 1 : 0};
    memcpy(o.shape, shape, sizeof o.shape);
    int64_t inner = shape[1] * shape[2] * shape[3], n = shape[0] * inner, wp = shape[3] + 1, hp = 3 * shape[2] - 2;
    o.strides[3] = 1, o.strides[2] = shape[3], o.strides[1] = shape[2] * shape[3], o.strides[0] = inner;
    if (kind == GAPPED) o.strides[2] = 3 * wp, o.strides[1] = hp * wp, o.strides[0] = shape[1] * hp * wp;
    if (kind == BCAST0) o.strides[0] = 0, rep = 1;
    o.span = o.offset + 1;
    for (int d = 0; d < 4; d++) o.span += (shape[d] - 1) * o.strides[d];
    float *st = malloc(sizeof(float) * (size_t)o.span);
    for (int64_t i = 0; i < o.span; i++) st[i] = SENTINEL;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i, pos = o.offset, vi = rep ? i % inner : i;
        for (int d = 3; d >= 0; d--) pos += (r % shape[d]) * o.strides[d], r /= shape[d];
        if (fill) st[pos] = (float)(vi * 7919 % 17) / 8.0f - 1.0f;
    }
    o.buf = be->vt->alloc(be->ctx, sizeof(float) * (size_t)o.span);
    be->vt->upload(be->ctx, o.buf, 0, st, sizeof(float) * (size_t)o.span);
    free(st);
    return o;
}

static ff_view view(const opnd *o)
{
    ff_view v = {.buf = o->buf, .offset = o->offset, .dtype = FF_F32, .ndim = 4};
    for (int d = 0; d < 4; d++) v.shape[d] = o->shape[d], v.strides[d] = o->strides[d];
    return v;
}

/* o's storage holds want at the view's elements and the sentinel everywhere else. */
static int holds(const opnd *o, const float *want, const char *what)
{
    float *st = malloc(sizeof(float) * (size_t)o->span);
    char *in_view = calloc((size_t)o->span, 1);
    be->vt->download(be->ctx, o->buf, 0, st, sizeof(float) * (size_t)o->span);
    int ok = 1;
    int64_t n = o->shape[0] * o->shape[1] * o->shape[2] * o->shape[3];
    for (int64_t i = 0; i < n && ok; i++) {
        int64_t r = i, pos = o->offset;
        for (int d = 3; d >= 0; d--) pos += (r % o->shape[d]) * o->strides[d], r /= o->shape[d];
        in_view[pos] = 1;
        if (!(fabsf(st[pos] - want[i]) <= 1e-5f * (1 + fabsf(want[i])))) {
            fprintf(stderr, "%s: element %lld: %.9g, dense %.9g\n", what, (long long)i, st[pos], want[i]);
            ok = 0;
        }
    }
    for (int64_t i = 0; i < o->span && ok; i++)
        if (!in_view[i] && st[i] != SENTINEL) {
            fprintf(stderr, "%s: storage %lld outside the view written (%.9g)\n", what, (long long)i, st[i]);
            ok = 0;
        }
    free(st), free(in_view);
    return ok;
}

static void opnd_free(opnd *o) { be->vt->free(be->ctx, o->buf); }

typedef ff_status (*conv_fn)(void *, const ff_view *, const ff_view *, const ff_view *, const ff_conv2d_params *);

/* Pass `which` (y = F(x, w), gx = I(gy, w), gw = W(gy, x)) with a, b and out laid out
 * as kinds ka, kb, ko against all three dense. */
static void check_pass(int which, const int64_t *ash, const int64_t *bsh, const int64_t *osh, int ka, int kb, int ko,
                       const ff_conv2d_params *p)
{
    conv_fn fn = which == 0   ? be->vt->conv2d
                 : which == 1 ? be->vt->conv2d_backward_input
                              : be->vt->conv2d_backward_weight;
    opnd a = opnd_new(ash, ka, 1, 0), b = opnd_new(bsh, kb, 1, 0), o = opnd_new(osh, ko, 0, 0);
    opnd da = opnd_new(ash, DENSE, 1, ka == BCAST0), db = opnd_new(bsh, DENSE, 1, kb == BCAST0);
    opnd dout = opnd_new(osh, DENSE, 0, 0);
    ff_view va = view(&a), vb = view(&b), vo = view(&o), vda = view(&da), vdb = view(&db), vdo = view(&dout);
    CHECK(fn(be->ctx, &vdo, &vda, &vdb, p) == FF_OK);
    CHECK(fn(be->ctx, &vo, &va, &vb, p) == FF_OK);
    int64_t n = osh[0] * osh[1] * osh[2] * osh[3];
    float *want = malloc(sizeof(float) * (size_t)n);
    be->vt->download(be->ctx, dout.buf, 0, want, sizeof(float) * (size_t)n);
    char what[96];
    snprintf(what, sizeof what, "pass %d, layouts %d %d -> %d", which, ka, kb, ko);
    CHECK(holds(&o, want, what));
    free(want);
    opnd_free(&a), opnd_free(&b), opnd_free(&o), opnd_free(&da), opnd_free(&db), opnd_free(&dout);
}

static void test_gapped_views(void)
{
    /* x [3, 4, 8, 7], w [5, 4, 3, 2], stride (2, 1), padding (1, 0): y [3, 5, 4, 6] */
    static const int64_t xs[4] = {3, 4, 8, 7}, ws[4] = {5, 4, 3, 2}, ys[4] = {3, 5, 4, 6};
    ff_conv2d_params p = {{2, 1}, {1, 0}, {1, 1}, 1};
    for (int ko = DENSE; ko <= GAPPED; ko++)
        for (int ka = DENSE; ka <= GAPPED; ka++)
            for (int kb = DENSE; kb <= GAPPED; kb++) {
                check_pass(0, xs, ws, ys, ka, kb, ko, &p);
                check_pass(1, ys, ws, xs, ka, kb, ko, &p);
                check_pass(2, ys, xs, ws, ka, kb, ko, &p);
            }
    check_pass(0, xs, ws, ys, BCAST0, GAPPED, GAPPED, &p); /* one image for the whole batch */
    check_pass(2, ys, xs, ws, GAPPED, BCAST0, GAPPED, &p);
    /* 4.9 MFLOP a pass, above the 4 MFLOP from which the pool splits it */
    static const int64_t bx[4] = {4, 16, 24, 24}, bw[4] = {16, 16, 3, 3}, by[4] = {4, 16, 12, 22};
    check_pass(0, bx, bw, by, GAPPED, GAPPED, GAPPED, &p);
    check_pass(1, by, bw, bx, GAPPED, GAPPED, GAPPED, &p);
    check_pass(2, by, bx, bw, GAPPED, GAPPED, GAPPED, &p);
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
    if (!be->vt->supports(be->ctx, FF_KIND_CONV2D, 0, FF_F32)) {
        printf("cpu_blas built without oneDNN: no conv2d entries to check\n");
        exit(0);
    }
}

FF_TEST_MAIN("cpu_blas_conv_views", TEST(setup), TEST(test_gapped_views))
