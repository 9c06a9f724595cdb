/* The cuda backend's parallel reduction order, replayed on the host (built only with
 * FF_BUILD_CUDA): k_reduce_blocks gives thread t of a 256-thread block the elements
 * t, t + 256, ... of its chunk, folds each with the reference's accumulator, then combines
 * threads with __shfl_down_sync trees (within each warp, then over the warps' results),
 * and k_reduce_finish combines chunks in order. This test runs that exact schedule with
 * cuda_acc_combine (the device code's own function) and compares with the reference's
 * sequential fold: bit for bit for MAX/MIN (sign of zero included), ARG* (first index of
 * the extreme, NaN first), ANY/ALL and integer SUM/PROD; float SUM/PROD within double
 * rounding (the tree's order is not the loop's). */
#include <stdlib.h>

#include "cuda_reduce_acc.h"
#include "ff_test.h"

#define THREADS 256

typedef ffb_reduce_acc acc;

/* One __shfl_down_sync tree over 32 lanes: every lane reads its partner's value from
 * before the step; a partner past lane 31 is the lane itself (what the hardware returns). */
static void warp_tree(acc *lanes, ff_reduce_op fop, int fa)
{
    for (int d = 16; d > 0; d /= 2) {
        acc before[32];
        memcpy(before, lanes, sizeof before);
        for (int l = 0; l < 32; l++) cuda_acc_combine(&lanes[l], &before[l + d < 32 ? l + d : l], fop, fa);
    }
}

/* The block's result (block_combine in cuda_reduce.cu) for elements [lo, hi) of x. */
static acc block(const double *x, const int64_t *xi, int64_t lo, int64_t hi, ff_reduce_op fop, int fa)
{
    acc t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ffb_reduce_acc_init(&t[i], fop);
        for (int64_t k = lo + i; k < hi; k += THREADS) {
            if (fa) ffb_reduce_acc_float(&t[i], fop, x[k], k);
            else ffb_reduce_acc_int(&t[i], fop, xi[k], k);
        }
    }
    acc warps[32];
    for (int w = 0; w < THREADS / 32; w++) {
        warp_tree(&t[w * 32], fop, fa);
        warps[w] = t[w * 32];
    }
    for (int l = THREADS / 32; l < 32; l++) ffb_reduce_acc_init(&warps[l], fop);
    warp_tree(warps, fop, fa);
    return warps[0];
}

/* The device's result for a row of n elements cut into `chunks` chunks. */
static acc device_reduce(const double *x, const int64_t *xi, int64_t n, int64_t chunks, ff_reduce_op op, int fa)
{
    ff_reduce_op fop = cuda_fold_op(op);
    int64_t per = (n + chunks - 1) / chunks;
    acc a = block(x, xi, 0, per < n ? per : n, fop, fa);
    for (int64_t ch = 1; ch < chunks; ch++) {
        int64_t lo = ch * per, hi = lo + per < n ? lo + per : n;
        acc b = block(x, xi, lo < n ? lo : n, hi, fop, fa);
        cuda_acc_combine(&a, &b, fop, fa);
    }
    return a;
}

static acc reference(const double *x, const int64_t *xi, int64_t n, ff_reduce_op op, int fa)
{
    acc a;
    ffb_reduce_acc_init(&a, op);
    for (int64_t k = 0; k < n; k++) {
        if (fa) ffb_reduce_acc_float(&a, op, x[k], k);
        else ffb_reduce_acc_int(&a, op, xi[k], k);
    }
    return a;
}

static uint64_t rng = 12345;
static int64_t rnd(int64_t n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (int64_t)(rng % (uint64_t)n);
}

static void test_schedule_matches_reference(void)
{
    static const ff_reduce_op ops[] = {FF_REDUCE_SUM, FF_REDUCE_PROD, FF_REDUCE_MAX, FF_REDUCE_MIN,
                                       FF_REDUCE_ARGMAX, FF_REDUCE_ARGMIN, FF_REDUCE_ANY, FF_REDUCE_ALL};
    static const int64_t sizes[] = {1, 5, 64, 255, 256, 257, 1000, 4099, 40000};
    int bad = 0;
    for (int trial = 0; trial < 40 && !bad; trial++) {
        int64_t n = sizes[trial % 9];
        double *x = malloc((size_t)n * sizeof *x);
        int64_t *xi = malloc((size_t)n * sizeof *xi);
        int kind = trial % 4; /* small integers with ties, signed zeros, NaNs, extremes at both ends */
        for (int64_t k = 0; k < n; k++) {
            xi[k] = rnd(7) - 3;
            x[k] = kind == 1 ? (rnd(2) ? 0.0 : -0.0) : (double)xi[k] * (kind == 3 ? 1.0 : 0.5);
            if (kind == 2 && rnd(50) == 0) x[k] = NAN;
        }
        if (kind == 3 && n > 1) x[n - 1] = 1e9, xi[n - 1] = 1000, x[0] = 1e9, xi[0] = 1000;
        for (int fa = 0; fa < 2 && !bad; fa++)
            for (size_t o = 0; o < sizeof ops / sizeof ops[0] && !bad; o++) {
                ff_reduce_op op = ops[o];
                if (op == FF_REDUCE_PROD && n > 64) continue; /* products of 40000 values: inf either way */
                for (int64_t chunks = 1; chunks <= (n >= 4096 ? 3 : 1) && !bad; chunks++) {
                    acc want = reference(x, xi, n, op, fa), got = device_reduce(x, xi, n, chunks, op, fa);
                    char pw[8], pg[8];
                    ffb_reduce_acc_store(&want, op, fa, pw, FF_F64);
                    ffb_reduce_acc_store(&got, op, fa, pg, FF_F64);
                    double w, g;
                    memcpy(&w, pw, 8), memcpy(&g, pg, 8);
                    int same = memcmp(pw, pg, 8) == 0;
                    if (!same && fa && (op == FF_REDUCE_SUM || op == FF_REDUCE_PROD)) same = fabs(w - g) <= 1e-12 * (1 + fabs(w));
                    if (!same) {
                        fprintf(stderr, "op %d float %d n %lld chunks %lld kind %d: got %.17g want %.17g\n", (int)op,
                                fa, (long long)n, (long long)chunks, kind, g, w);
                        bad = 1;
                    }
                }
            }
        free(x);
        free(xi);
    }
    CHECK(!bad);
}

/* A single case spelled out: max(-0, +0, -0) over 300 elements keeps the first zero's sign. */
static void test_signed_zero_first_wins(void)
{
    double x[300];
    for (int k = 0; k < 300; k++) x[k] = k % 2 ? 0.0 : -0.0;
    acc got = device_reduce(x, NULL, 300, 1, FF_REDUCE_MAX, 1);
    CHECK(got.f == 0.0 && signbit(got.f) && got.arg == 0);
    x[7] = NAN, x[3] = NAN;
    got = device_reduce(x, NULL, 300, 1, FF_REDUCE_ARGMIN, 1);
    CHECK(got.arg == 3);
}

FF_TEST_MAIN("cuda_reduce", TEST(test_schedule_matches_reference), TEST(test_signed_zero_first_wins))
