/*
 * cpu_blas's conv2d entries on bf16 (blas_conv.c, "bf16"): forward, backward to the
 * input and backward to the weight, against the same pass of cpu_blas on f32 operands
 * holding the same (exactly widened) values, whose f32 results the conformance suite
 * holds to the reference. Every element within 2 bf16 epsilons of the f32 result rounded
 * to bf16, plus the f32 accumulation bound (2^-23 K sum|a b|, bounded here by the
 * operands' largest magnitudes): oneDNN's bf16 kernels accumulate in f32 in their own
 * order. Cases: a plain 3x3, a strided and dilated grouped one past the pool's threshold
 * (the weight gradient summed from per-thread parts), a stepped input (copied dense
 * first), and an input holding a subnormal (read as zero by the bf16 instructions:
 * widened to f32 instead). ctest runs it under ONEDNN_MAX_CPU_ISA=AVX2 too, where every
 * pass takes the widened f32 way.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "ff_backend_scalar.h"
#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *be;

typedef struct tens {
    int64_t shape[4], strides[4], span;
} tens;

static tens dense(int64_t n, int64_t c, int64_t h, int64_t w, int64_t hstep)
{
    tens t = {{n, c, h, w}, {0}, 0};
    t.strides[3] = 1, t.strides[2] = w * hstep, t.strides[1] = h * hstep * w, t.strides[0] = c * t.strides[1];
    t.span = n * t.strides[0];
    return t;
}

static uint16_t value(int64_t i, int salt)
{
    uint64_t h = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)salt * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return ffb_f64_to_bf16(((double)((h >> 11) % 20001) - 10000.0) / 5000.0); /* [-2, 2] */
}

/* Pass `which` (0 y = conv(x, w), 1 gx from gy and w, 2 gw from gy and x) on both
 * dtypes; a and b are the pass's inputs, o its output. Returns the elements out of
 * tolerance. */
static int run_pass(const char *name, int which, tens to, tens ta, tens tb, const ff_conv2d_params *p, int64_t k,
                    int subnormal)
{
    uint16_t *ha = malloc((size_t)ta.span * 2), *hb = malloc((size_t)tb.span * 2), *ho = calloc((size_t)to.span, 2);
    float *fa = malloc((size_t)ta.span * 4), *fb = malloc((size_t)tb.span * 4), *fo = calloc((size_t)to.span, 4);
    for (int64_t i = 0; i < ta.span; i++) ha[i] = value(i, 1 + which);
    for (int64_t i = 0; i < tb.span; i++) hb[i] = value(i, 7 + which);
    if (subnormal) ha[ta.span / 2] = ffb_f64_to_bf16(0x1p-130);
    for (int64_t i = 0; i < ta.span; i++) fa[i] = ffb_bf16_to_f32(ha[i]);
    for (int64_t i = 0; i < tb.span; i++) fb[i] = ffb_bf16_to_f32(hb[i]);
    for (int f32 = 0; f32 < 2; f32++) {
        size_t es = f32 ? 4 : 2;
        ff_dtype dt = f32 ? FF_F32 : FF_BF16;
        void *a = be->vt->alloc(be->ctx, (size_t)ta.span * es), *b = be->vt->alloc(be->ctx, (size_t)tb.span * es);
        void *o = be->vt->alloc(be->ctx, (size_t)to.span * es);
        CHECK(a && b && o);
        be->vt->upload(be->ctx, a, 0, f32 ? (void *)fa : (void *)ha, (size_t)ta.span * es);
        be->vt->upload(be->ctx, b, 0, f32 ? (void *)fb : (void *)hb, (size_t)tb.span * es);
        be->vt->upload(be->ctx, o, 0, f32 ? (void *)fo : (void *)ho, (size_t)to.span * es); /* zeros */
        ff_view va = {.buf = a, .dtype = dt, .ndim = 4}, vb = {.buf = b, .dtype = dt, .ndim = 4};
        ff_view vo = {.buf = o, .dtype = dt, .ndim = 4};
        for (int d = 0; d < 4; d++) {
            va.shape[d] = ta.shape[d], va.strides[d] = ta.strides[d];
            vb.shape[d] = tb.shape[d], vb.strides[d] = tb.strides[d];
            vo.shape[d] = to.shape[d], vo.strides[d] = to.strides[d];
        }
        ff_status st = which == 0   ? be->vt->conv2d(be->ctx, &vo, &va, &vb, p)
                       : which == 1 ? be->vt->conv2d_backward_input(be->ctx, &vo, &va, &vb, p)
                                    : be->vt->conv2d_backward_weight(be->ctx, &vo, &va, &vb, p);
        if (st) fprintf(stderr, "%s: %s pass %d failed: %s\n", name, f32 ? "f32" : "bf16", which, ff_last_error());
        CHECK(st == FF_OK);
        be->vt->download(be->ctx, o, 0, f32 ? (void *)fo : (void *)ho, (size_t)to.span * es);
        be->vt->free(be->ctx, a), be->vt->free(be->ctx, b), be->vt->free(be->ctx, o);
    }
    double amax = 0, bmax = 0;
    for (int64_t i = 0; i < ta.span; i++) amax = fmax(amax, fabs(fa[i]));
    for (int64_t i = 0; i < tb.span; i++) bmax = fmax(bmax, fabs(fb[i]));
    double atol = 0x1p-23 * (double)k * (double)k * amax * bmax; /* K * eps_f32 * (K max|a| max|b|) */
    int bad = 0;
    for (int64_t i = 0; i < to.span; i++) {
        double g = ffb_bf16_to_f32(ho[i]), w = ffb_bf16_to_f32(ffb_f64_to_bf16(fo[i]));
        if (!(fabs(g - w) <= 2 * 0x1p-7 * fabs(w) + atol) && bad++ < 3)
            fprintf(stderr, "%s pass %d: element %lld: bf16 %g, f32 rounded %g\n", name, which, (long long)i, g, w);
    }
    free(ha), free(hb), free(ho), free(fa), free(fb), free(fo);
    return bad;
}

/* The three passes of one convolution: x [N, C, H, W], w [O, C / G, KH, KW]. */
static int run_conv(const char *name, tens x, tens w, const ff_conv2d_params *p, int subnormal)
{
    int64_t oh = (x.shape[2] + 2 * p->padding[0] - p->dilation[0] * (w.shape[2] - 1) - 1) / p->stride[0] + 1;
    int64_t ow = (x.shape[3] + 2 * p->padding[1] - p->dilation[1] * (w.shape[3] - 1) - 1) / p->stride[1] + 1;
    tens y = dense(x.shape[0], w.shape[0], oh, ow, 1);
    int64_t kf = w.shape[1] * w.shape[2] * w.shape[3], kx = w.shape[0] / p->groups * w.shape[2] * w.shape[3];
    int64_t kw = x.shape[0] * oh * ow;
    return run_pass(name, 0, y, x, w, p, kf, subnormal) + run_pass(name, 1, x, y, w, p, kx, subnormal) +
           run_pass(name, 2, w, y, x, p, kw, subnormal);
}

static void test_conv_bf16(void)
{
    ff_conv2d_params p3 = {{1, 1}, {1, 1}, {1, 1}, 1}, pg = {{2, 1}, {2, 1}, {2, 1}, 2};
    CHECK(run_conv("3x3 pad 1", dense(2, 16, 12, 12, 1), dense(32, 16, 3, 3, 1), &p3, 0) == 0);
    CHECK(run_conv("stride 2x1, dilated, 2 groups", dense(8, 32, 20, 18, 1), dense(32, 16, 3, 3, 1), &pg, 0) == 0);
    CHECK(run_conv("x rows stepped", dense(2, 16, 10, 11, 2), dense(16, 16, 3, 3, 1), &p3, 0) == 0);
    CHECK(run_conv("subnormal", dense(2, 16, 12, 12, 1), dense(32, 16, 3, 3, 1), &p3, 1) == 0);
    /* channels (40 = 16 + 16 + 8, 24) and positions (63 = 3 x 16 + 15) past whole 16 x 16
     * blocks of the rounding pass's transposition (nhwc_round) */
    CHECK(run_conv("block tails", dense(2, 24, 9, 7, 1), dense(40, 24, 3, 3, 1), &p3, 0) == 0);
    ff_conv2d_params pd = {{1, 1}, {1, 1}, {1, 1}, 32};
    CHECK(run_conv("depthwise", dense(2, 32, 17, 17, 1), dense(32, 1, 3, 3, 1), &pd, 0) == 0);
}

static void setup(void)
{
    setenv("FF_NUM_THREADS", "2", 0); /* the split passes */
    be = ff_backend_load("cpu_blas");
    if (!be) {
        fprintf(stderr, "cannot load cpu_blas: %s\n", ff_last_error());
        exit(1);
    }
    CHECK(be->vt->supports(be->ctx, FF_KIND_CONV2D, 0, FF_BF16));
}

FF_TEST_MAIN("cpu_blas_conv_half", TEST(setup), TEST(test_conv_bf16))
