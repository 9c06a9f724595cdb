/* The cuda backend's index math, on the host (built only with FF_BUILD_CUDA): every
 * kernel finds its elements through cuda_walk_offsets over a walk that cuda_walk_of /
 * cuda_walk_split built from the views, with size-1 dims dropped and contiguous dims
 * merged. No GPU runs here, so this checks that code against the views themselves: for
 * thousands of random layouts (permuted, stepped, broadcast, offset, size-0/1 dims),
 * element n of the walk must be element n (row-major) of every view. */
#include <stdlib.h>

#include "cuda_impl.h"
#include "ff_test.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static int64_t rnd(int64_t n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (int64_t)(rng % (uint64_t)n);
}

/* A random layout of shape: a permuted contiguous order, some dims stepped or broadcast. */
static void random_view(ff_view *v, int ndim, const int64_t *shape)
{
    memset(v, 0, sizeof *v);
    v->ndim = ndim;
    v->dtype = FF_F32;
    v->offset = rnd(3) ? rnd(50) : 0;
    int order[FF_MAX_DIMS];
    for (int d = 0; d < ndim; d++) order[d] = d;
    for (int d = ndim - 1; d > 0; d--) {
        int j = (int)rnd(d + 1), t = order[d];
        if (rnd(2)) order[d] = order[j], order[j] = t;
    }
    int64_t s = 1 + (rnd(4) == 0);
    for (int i = ndim - 1; i >= 0; i--) {
        int d = order[i];
        v->shape[d] = shape[d];
        v->strides[d] = rnd(6) == 0 ? 0 : s;
        s *= shape[d] ? shape[d] : 1;
        if (rnd(5) == 0) s *= 2;
    }
}

static int64_t direct(const ff_view *v, const int64_t *idx)
{
    int64_t off = v->offset;
    for (int d = 0; d < v->ndim; d++) off += idx[d] * v->strides[d];
    return off;
}

/* idx = the row-major multi-index of n over shape. */
static void unravel(int ndim, const int64_t *shape, int64_t n, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) idx[d] = n % shape[d], n /= shape[d];
}

static void random_shape(int *ndim, int64_t *shape)
{
    *ndim = (int)rnd(6);
    for (int d = 0; d < *ndim; d++) shape[d] = rnd(8) == 0 ? (rnd(4) == 0 ? 0 : 1) : 1 + rnd(4);
}

static void test_walk_matches_views(void)
{
    int bad = 0;
    for (int iter = 0; iter < 3000 && !bad; iter++) {
        int ndim, nv = 1 + (int)rnd(CUDA_WALK_MAX);
        int64_t shape[FF_MAX_DIMS];
        random_shape(&ndim, shape);
        ff_view views[CUDA_WALK_MAX];
        const ff_view *vs[CUDA_WALK_MAX];
        for (int i = 0; i < nv; i++) random_view(&views[i], ndim, shape), vs[i] = &views[i];
        cuda_walk w = cuda_walk_of(vs, nv);
        int64_t numel = ff_view_numel(&views[0]);
        CHECK(cuda_walk_numel(&w) == numel);
        for (int64_t n = 0; n < numel && !bad; n++) {
            int64_t idx[FF_MAX_DIMS], off[CUDA_WALK_MAX];
            unravel(ndim, shape, n, idx);
            cuda_walk_offsets(&w, n, nv, off);
            for (int i = 0; i < nv; i++)
                if (off[i] != direct(&views[i], idx)) bad = 1;
        }
        if (bad) fprintf(stderr, "walk differs from its views at iteration %d (rank %d, %d views)\n", iter, ndim, nv);
    }
    CHECK(!bad);
}

/* reduce's split: row r (dst's element, the kept dims row-major), position k (the reduced
 * dims row-major) must be src's element at those indices and dst's element at the kept ones. */
static void test_split_matches_views(void)
{
    int bad = 0;
    for (int iter = 0; iter < 3000 && !bad; iter++) {
        int ndim;
        int64_t shape[FF_MAX_DIMS], dshape[FF_MAX_DIMS], kept[FF_MAX_DIMS], red[FF_MAX_DIMS];
        random_shape(&ndim, shape);
        uint32_t mask = ndim ? (uint32_t)rnd((int64_t)1 << ndim) : 0;
        int nk = 0, nr = 0;
        for (int d = 0; d < ndim; d++) {
            dshape[d] = (mask >> d) & 1u ? 1 : shape[d];
            if ((mask >> d) & 1u) red[nr++] = shape[d];
            else kept[nk++] = shape[d];
        }
        ff_view src, dst;
        random_view(&src, ndim, shape);
        random_view(&dst, ndim, dshape);
        cuda_walk outer, inner;
        cuda_walk_split(&dst, &src, mask, &outer, &inner);
        int64_t rows = 1, len = 1;
        for (int i = 0; i < nk; i++) rows *= kept[i];
        for (int i = 0; i < nr; i++) len *= red[i];
        CHECK(cuda_walk_numel(&outer) == rows && (rows == 0 || cuda_walk_numel(&inner) == len));
        for (int64_t r = 0; r < rows && !bad; r++)
            for (int64_t k = 0; k < len && !bad; k++) {
                int64_t ki[FF_MAX_DIMS], ri[FF_MAX_DIMS], idx[FF_MAX_DIMS], didx[FF_MAX_DIMS], o[2], in;
                unravel(nk, kept, r, ki);
                unravel(nr, red, k, ri);
                for (int d = 0, a = 0, b = 0; d < ndim; d++) {
                    int reduced = (mask >> d) & 1u;
                    idx[d] = reduced ? ri[b++] : ki[a++];
                    didx[d] = reduced ? 0 : idx[d];
                }
                cuda_walk_offsets(&outer, r, 2, o);
                cuda_walk_offsets(&inner, k, 1, &in);
                if (o[0] + in - src.offset != direct(&src, idx) || o[1] != direct(&dst, didx)) bad = 1;
            }
        if (bad) fprintf(stderr, "split differs from its views at iteration %d (rank %d, mask 0x%x)\n", iter, ndim,
                         (unsigned)mask);
    }
    CHECK(!bad);
}

/* What the entries' fast paths test: dense means rank <= 1 with stride 1 everywhere. */
static void test_dense(void)
{
    ff_view a = {.ndim = 2, .dtype = FF_F32, .shape = {3, 4}, .strides = {4, 1}, .offset = 5};
    ff_view b = a, t = a;
    b.offset = 0;
    t.strides[0] = 1, t.strides[1] = 3; /* transposed */
    const ff_view *ab[] = {&a, &b}, *at[] = {&a, &t};
    cuda_walk w = cuda_walk_of(ab, 2);
    CHECK(w.ndim == 1 && w.shape[0] == 12 && cuda_walk_dense(&w) && w.offset[0] == 5);
    w = cuda_walk_of(at, 2);
    CHECK(w.ndim == 2 && !cuda_walk_dense(&w));
    ff_view s = {.ndim = 0, .dtype = FF_F32, .offset = 7};
    const ff_view *ss[] = {&s};
    w = cuda_walk_of(ss, 1);
    CHECK(w.ndim == 0 && cuda_walk_numel(&w) == 1 && cuda_walk_dense(&w));
}

FF_TEST_MAIN("cuda_walk", TEST(test_walk_matches_views), TEST(test_split_matches_views), TEST(test_dense))
