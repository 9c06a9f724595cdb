/*
 * cpu_blas's bf16 2 x 2 max pooling straight on the halves (blas_pool.c pool_bf16_2x2 and
 * its AVX-512 form), forward and the first-max backward, bit for bit against the rule
 * written out plainly here: the forward's max is the input a > b ? a : b picks (so -0 and
 * +0 keep their order), any NaN in a window writes bf16(NaN); the backward sends gy to the
 * first input equal to the window's max, or to its last NaN when the max is NaN, rounds a
 * NaN gy to the quiet NaN of its sign, and zeroes what no window reads. Values are drawn
 * from a small set so that ties, signed zeros and NaNs of both signs are common; widths
 * put windows in and past whole 16-lane blocks (7, 14, 16, 17, 33 windows) with and
 * without an unread last column. ctest runs it again with FF_HALF_ISA=scalar, the
 * plain loop.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>
#include <string.h>

#include "ff_backend_scalar.h"
#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *be;

static uint16_t draw(uint64_t *s)
{
    static const double pick[] = {1.0, -1.0, 0.5, 2.0, 0.0, -0.0, 3.0, -2.5};
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    unsigned r = (unsigned)(*s >> 33) % 10;
    if (r == 8) return (*s >> 20) & 1 ? 0xFFC1 : 0x7FC3; /* NaNs with payloads, both signs */
    return ffb_f64_to_bf16(r == 9 ? (double)((*s >> 40) % 1000) / 7.0 : pick[r]);
}

static float wide(uint16_t b) { return ffb_bf16_to_f32(b); }

static uint16_t nan_of(uint16_t g) { return (uint16_t)((g & 0x8000) | 0x7FC0); }

static ff_view plane_view(void *buf, int64_t n, int64_t c, int64_t h, int64_t w)
{
    ff_view v = {.buf = buf, .dtype = FF_BF16, .ndim = 4, .shape = {n, c, h, w}};
    v.strides[3] = 1, v.strides[2] = w, v.strides[1] = h * w, v.strides[0] = c * h * w;
    return v;
}

static void *upload(const uint16_t *h, int64_t n)
{
    void *b = be->vt->alloc(be->ctx, (size_t)n * 2);
    be->vt->upload(be->ctx, b, 0, h, (size_t)n * 2);
    return b;
}

/* One shape: N x C planes of H x W. Returns the elements that differ from the rule. */
static int run_shape(int64_t N, int64_t C, int64_t H, int64_t W, uint64_t seed)
{
    int64_t OH = H / 2, OW = W / 2, P = N * C, nx = P * H * W, ny = P * OH * OW;
    uint16_t *x = malloc((size_t)nx * 2), *gy = malloc((size_t)ny * 2), *y = malloc((size_t)ny * 2);
    uint16_t *gx = malloc((size_t)nx * 2), *ey = malloc((size_t)ny * 2), *egx = calloc((size_t)nx, 2);
    for (int64_t i = 0; i < nx; i++) x[i] = draw(&seed);
    for (int64_t i = 0; i < ny; i++) gy[i] = draw(&seed);
    for (int64_t q = 0; q < P; q++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                const uint16_t *w0 = x + q * H * W + 2 * oh * W + 2 * ow;
                uint16_t in[4] = {w0[0], w0[1], w0[W], w0[W + 1]};
                int any_nan = 0, pick = -1;
                for (int k = 0; k < 4; k++) any_nan |= wide(in[k]) != wide(in[k]);
                /* max(a, b), max(c, d), then the two, each as a > b ? a : b */
                float ab = wide(in[0]) > wide(in[1]) ? wide(in[0]) : wide(in[1]);
                float cd = wide(in[2]) > wide(in[3]) ? wide(in[2]) : wide(in[3]);
                float m = ab > cd ? ab : cd;
                uint32_t u;
                memcpy(&u, &m, 4);
                uint16_t yb = any_nan ? 0x7FC0 : (uint16_t)(u >> 16);
                ey[q * OH * OW + oh * OW + ow] = yb;
                float mw = wide(yb);
                if (mw == mw) {
                    for (int k = 0; k < 4 && pick < 0; k++)
                        if (wide(in[k]) == mw) pick = k;
                } else {
                    for (int k = 3; k >= 0 && pick < 0; k--)
                        if (wide(in[k]) != wide(in[k])) pick = k;
                }
                uint16_t g = gy[q * OH * OW + oh * OW + ow];
                if (wide(g) != wide(g)) g = nan_of(g);
                int64_t at[4] = {0, 1, W, W + 1};
                if (pick >= 0) egx[q * H * W + 2 * oh * W + 2 * ow + at[pick]] = g;
            }
    void *bx = upload(x, nx), *bgy = upload(gy, ny), *by = upload(gy, ny), *bgx = upload(x, nx); /* dirty outputs */
    ff_pool2d_params p = {{2, 2}, {2, 2}, {0, 0}};
    ff_view vx = plane_view(bx, N, C, H, W), vy = plane_view(by, N, C, OH, OW);
    ff_view vgy = plane_view(bgy, N, C, OH, OW), vgx = plane_view(bgx, N, C, H, W);
    CHECK(be->vt->pool2d(be->ctx, FF_POOL2D_MAX_FORWARD, &vy, &vx, 1, &p) == FF_OK);
    ff_view bsrc[3] = {vgy, vx, vy};
    CHECK(be->vt->pool2d(be->ctx, FF_POOL2D_MAX_BACKWARD_FIRST, &vgx, bsrc, 3, &p) == FF_OK);
    be->vt->download(be->ctx, by, 0, y, (size_t)ny * 2);
    be->vt->download(be->ctx, bgx, 0, gx, (size_t)nx * 2);
    int bad = 0;
    for (int64_t i = 0; i < ny; i++)
        if (y[i] != ey[i] && bad++ < 3)
            fprintf(stderr, "%lldx%lld: y[%lld] = %04x, expected %04x\n", (long long)H, (long long)W, (long long)i,
                    y[i], ey[i]);
    for (int64_t i = 0; i < nx; i++)
        if (gx[i] != egx[i] && bad++ < 6)
            fprintf(stderr, "%lldx%lld: gx[%lld] = %04x, expected %04x\n", (long long)H, (long long)W, (long long)i,
                    gx[i], egx[i]);
    be->vt->free(be->ctx, bx), be->vt->free(be->ctx, bgy), be->vt->free(be->ctx, by), be->vt->free(be->ctx, bgx);
    free(x), free(gy), free(y), free(gx), free(ey), free(egx);
    return bad;
}

static void test_max_2x2_bf16(void)
{
    static const int64_t hw[][2] = {{28, 28}, {14, 14}, {15, 15}, {6, 32}, {5, 35}, {4, 66}, {3, 67}, {2, 2}};
    for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++)
        CHECK(run_shape(2, 3, hw[i][0], hw[i][1], 1000 + i) == 0);
}

static void setup(void)
{
    setenv("FF_NUM_THREADS", "2", 0); /* planes split across the pool */
    be = ff_backend_load("cpu_blas");
    if (!be) {
        fprintf(stderr, "cannot load cpu_blas: %s\n", ff_last_error());
        exit(1);
    }
    CHECK(be->vt->supports(be->ctx, FF_KIND_POOL2D, FF_POOL2D_MAX_FORWARD, FF_BF16));
}

FF_TEST_MAIN("cpu_blas_pool_half", TEST(setup), TEST(test_max_2x2_bf16))
