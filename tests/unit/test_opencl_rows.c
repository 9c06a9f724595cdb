/*
 * opencl's row kernels against the cpu reference, bit for bit, through the vtable with
 * the views the core hands them. The middle-axis sum (kernels/reduce.cl ff_sum_rows_*:
 * x.sum(1) of [A, R, B] and column sums, f32 and f64, one and two kept dims before the
 * row, offsets and padded strides, NaN, infinities and -0), beside the shapes it leaves
 * to ff_reduce. The row forms of gather and scatter_add (kernels/index.cl: an I64 index
 * constant along a contiguous innermost run, at most two dims before it):
 * embedding and index_select (the index broadcast with stride 0 along the row), their
 * backward (scatter_add of such an index, duplicates adding up in index order), every
 * element size, rows of 2 to 100 elements (none a multiple of the launch's 64), one and
 * two leading dims, offsets and a strided source; beside them the shapes the row form
 * must leave to the generic kernels (three leading dims, an I32 index, a row of one)
 * and bad indices (FF_ERR_INDEX; scatter_add leaves dst as it was).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *ref, *ocl;

static ff_backend *be_of(int s) { return s ? ocl : ref; }

/* One buffer of n elements of dtype t on both backends, the same bytes. */
typedef struct twin {
    void *buf[2];
    size_t nbytes;
} twin;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static twin twin_new(int64_t n, ff_dtype t, int64_t index_below)
{
    twin w = {{NULL, NULL}, (size_t)n * ff_dtype_size(t)};
    unsigned char *h = malloc(w.nbytes ? w.nbytes : 1);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_u64();
        switch (t) {
        case FF_F32: ((float *)h)[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 8.0 - 4.0); break;
        case FF_F64: ((double *)h)[i] = (double)(r >> 11) / 9007199254740992.0 * 8.0 - 4.0; break;
        case FF_I64: ((int64_t *)h)[i] = index_below ? (int64_t)(r % (uint64_t)index_below) : (int64_t)r; break;
        case FF_I32: ((int32_t *)h)[i] = index_below ? (int32_t)(r % (uint64_t)index_below) : (int32_t)r; break;
        default: memcpy(h + (size_t)i * ff_dtype_size(t), &r, ff_dtype_size(t)); break; /* any bits: a move */
        }
    }
    for (int s = 0; s < 2; s++) {
        w.buf[s] = be_of(s)->vt->alloc(be_of(s)->ctx, w.nbytes ? w.nbytes : 1);
        CHECK(w.buf[s] && be_of(s)->vt->upload(be_of(s)->ctx, w.buf[s], 0, h, w.nbytes) == FF_OK);
    }
    free(h);
    return w;
}

static void twin_free(twin *w)
{
    for (int s = 0; s < 2; s++) be_of(s)->vt->free(be_of(s)->ctx, w->buf[s]);
}

static int twin_same(const twin *w, const char *what)
{
    unsigned char *h[2] = {malloc(w->nbytes ? w->nbytes : 1), malloc(w->nbytes ? w->nbytes : 1)};
    for (int s = 0; s < 2; s++) be_of(s)->vt->download(be_of(s)->ctx, w->buf[s], 0, h[s], w->nbytes);
    int same = !memcmp(h[0], h[1], w->nbytes);
    if (!same) fprintf(stderr, "%s: opencl differs from the reference\n", what);
    free(h[0]), free(h[1]);
    return same;
}

static ff_view view(void *buf, ff_dtype t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset)
{
    ff_view v = {.buf = buf, .offset = offset, .dtype = t, .ndim = ndim};
    for (int d = 0; d < ndim; d++) v.shape[d] = shape[d], v.strides[d] = strides[d];
    return v;
}

/* embedding: dst [N, D] = table [V, D] rows at index [N] (broadcast along D) */
/* The rows moved on the host: what a gather of halves (which the reference leaves to the
 * core) must give, byte for byte. */
static int rows_moved(const twin *table, const twin *idx, const twin *dst, size_t es, int64_t D, int64_t N)
{
    unsigned char *t = malloc(table->nbytes), *d = malloc(dst->nbytes);
    int64_t *ix = malloc(idx->nbytes);
    ocl->vt->download(ocl->ctx, table->buf[1], 0, t, table->nbytes);
    ocl->vt->download(ocl->ctx, idx->buf[1], 0, ix, idx->nbytes);
    ocl->vt->download(ocl->ctx, dst->buf[1], 0, d, dst->nbytes);
    int ok = 1;
    for (int64_t n = 0; n < N; n++) ok &= !memcmp(d + (size_t)(n * D) * es, t + (size_t)(ix[n] * D) * es, (size_t)D * es);
    free(t), free(d), free(ix);
    return ok;
}

static void check_embedding(ff_dtype t, ff_dtype it, int64_t V, int64_t D, int64_t N)
{
    twin table = twin_new(V * D, t, 0), idx = twin_new(N, it, V), dst = twin_new(N * D, t, 0);
    int half = t == FF_F16 || t == FF_BF16;
    for (int s = half; s < 2; s++) {
        ff_view vd = view(dst.buf[s], t, 2, SHAPE(N, D), SHAPE(D, 1), 0);
        ff_view vs = view(table.buf[s], t, 2, SHAPE(V, D), SHAPE(D, 1), 0);
        ff_view vi = view(idx.buf[s], it, 2, SHAPE(N, D), SHAPE(1, 0), 0);
        CHECK(be_of(s)->vt->gather(be_of(s)->ctx, &vd, &vs, &vi, 0) == FF_OK);
    }
    char what[96];
    snprintf(what, sizeof what, "embedding dtype %d index %d [%lld, %lld] x %lld", (int)t, (int)it, (long long)V,
             (long long)D, (long long)N);
    CHECK(half ? rows_moved(&table, &idx, &dst, ff_dtype_size(t), D, N) : twin_same(&dst, what));
    twin_free(&table), twin_free(&idx), twin_free(&dst);
}

static void test_embedding_rows(void)
{
    static const ff_dtype ts[] = {FF_F32, FF_F64, FF_F16, FF_BF16, FF_U8, FF_I64, FF_I32};
    for (int i = 0; i < 7; i++) check_embedding(ts[i], FF_I64, 50, 100, 37);
    check_embedding(FF_F32, FF_I64, 7, 2, 5);     /* a row of 2 */
    check_embedding(FF_F32, FF_I64, 300, 3, 999); /* many short rows */
    check_embedding(FF_F32, FF_I64, 9, 1, 12);    /* a row of one: the generic kernel */
    check_embedding(FF_F32, FF_I32, 40, 64, 33);  /* I32 index: the generic kernel */
}

/* index_select along axis 1 of [A, B, C]: dst [A, N, C], index [N] broadcast over A and
 * C (two leading dims), with a source offset and a padded source row stride; and along
 * axis 2 of [A, B, C, E] (three leading dims: the generic kernel) */
static void test_index_select_rows(void)
{
    int64_t A = 3, B = 11, C = 70, N = 8, pad = 5, off = 9;
    twin src = twin_new(off + A * B * (C + pad), FF_F32, 0), idx = twin_new(N, FF_I64, B), dst = twin_new(A * N * C, FF_F32, 0);
    for (int s = 0; s < 2; s++) {
        ff_view vd = view(dst.buf[s], FF_F32, 3, SHAPE(A, N, C), SHAPE(N * C, C, 1), 0);
        ff_view vs = view(src.buf[s], FF_F32, 3, SHAPE(A, B, C), SHAPE(B * (C + pad), C + pad, 1), off);
        ff_view vi = view(idx.buf[s], FF_I64, 3, SHAPE(A, N, C), SHAPE(0, 1, 0), 0);
        CHECK(be_of(s)->vt->gather(be_of(s)->ctx, &vd, &vs, &vi, 1) == FF_OK);
    }
    CHECK(twin_same(&dst, "index_select axis 1, two leading dims"));
    twin_free(&src), twin_free(&idx), twin_free(&dst);

    int64_t E = 6;
    src = twin_new(2 * 3 * 5 * E, FF_F64, 0), idx = twin_new(4, FF_I64, 5), dst = twin_new(2 * 3 * 4 * E, FF_F64, 0);
    for (int s = 0; s < 2; s++) {
        ff_view vd = view(dst.buf[s], FF_F64, 4, SHAPE(2, 3, 4, E), SHAPE(12 * E, 4 * E, E, 1), 0);
        ff_view vs = view(src.buf[s], FF_F64, 4, SHAPE(2, 3, 5, E), SHAPE(15 * E, 5 * E, E, 1), 0);
        ff_view vi = view(idx.buf[s], FF_I64, 4, SHAPE(2, 3, 4, E), SHAPE(0, 0, 1, 0), 0);
        CHECK(be_of(s)->vt->gather(be_of(s)->ctx, &vd, &vs, &vi, 2) == FF_OK);
    }
    CHECK(twin_same(&dst, "index_select axis 2, three leading dims"));
    twin_free(&src), twin_free(&idx), twin_free(&dst);
}

/* embedding's backward: dst [V, D] += src [N, D] rows at index [N] (broadcast along D),
 * with few slots so that duplicates are many (their order shows in the last bits); and
 * the same along axis 1 of [A, V, D] (one leading dim) with a strided source */
static void check_scatter(ff_dtype t, int64_t V, int64_t D, int64_t N)
{
    twin dst = twin_new(V * D, t, 0), idx = twin_new(N, FF_I64, V), src = twin_new(N * D, t, 0);
    for (int s = 0; s < 2; s++) {
        ff_view vd = view(dst.buf[s], t, 2, SHAPE(V, D), SHAPE(D, 1), 0);
        ff_view vi = view(idx.buf[s], FF_I64, 2, SHAPE(N, D), SHAPE(1, 0), 0);
        ff_view vs = view(src.buf[s], t, 2, SHAPE(N, D), SHAPE(D, 1), 0);
        CHECK(be_of(s)->vt->scatter_add(be_of(s)->ctx, &vd, &vi, &vs, 0) == FF_OK);
    }
    char what[80];
    snprintf(what, sizeof what, "scatter_add rows dtype %d [%lld, %lld] of %lld", (int)t, (long long)V, (long long)D,
             (long long)N);
    CHECK(twin_same(&dst, what));
    twin_free(&dst), twin_free(&idx), twin_free(&src);
}

static void test_scatter_add_rows(void)
{
    check_scatter(FF_F32, 5, 100, 400);
    check_scatter(FF_F64, 5, 33, 400);
    check_scatter(FF_F32, 1000, 2, 64);
    check_scatter(FF_I64, 5, 20, 50); /* integers: the generic kernel */

    int64_t A = 3, V = 4, D = 65, N = 30;
    twin dst = twin_new(A * V * D, FF_F32, 0), idx = twin_new(N, FF_I64, V), src = twin_new(A * N * 2 * D, FF_F32, 0);
    for (int s = 0; s < 2; s++) {
        ff_view vd = view(dst.buf[s], FF_F32, 3, SHAPE(A, V, D), SHAPE(V * D, D, 1), 0);
        ff_view vi = view(idx.buf[s], FF_I64, 3, SHAPE(A, N, D), SHAPE(0, 1, 0), 0);
        ff_view vs = view(src.buf[s], FF_F32, 3, SHAPE(A, N, D), SHAPE(N * 2 * D, 2 * D, 1), 1);
        CHECK(be_of(s)->vt->scatter_add(be_of(s)->ctx, &vd, &vi, &vs, 1) == FF_OK);
    }
    CHECK(twin_same(&dst, "scatter_add rows along axis 1, strided source"));
    twin_free(&dst), twin_free(&idx), twin_free(&src);
}

/* A bad index in a row-form call: FF_ERR_INDEX naming it; scatter_add's dst untouched. */
static void test_bad_index_rows(void)
{
    int64_t V = 6, D = 8, N = 5, bad[5] = {0, 2, 6, 1, 3};
    twin table = twin_new(V * D, FF_F32, 0), dst = twin_new(N * D, FF_F32, 0), src = twin_new(N * D, FF_F32, 0);
    void *ib = ocl->vt->alloc(ocl->ctx, sizeof bad);
    CHECK(ib && ocl->vt->upload(ocl->ctx, ib, 0, bad, sizeof bad) == FF_OK);
    ff_view vi = view(ib, FF_I64, 2, SHAPE(N, D), SHAPE(1, 0), 0);
    ff_view vd = view(dst.buf[1], FF_F32, 2, SHAPE(N, D), SHAPE(D, 1), 0);
    ff_view vt = view(table.buf[1], FF_F32, 2, SHAPE(V, D), SHAPE(D, 1), 0);
    CHECK(ocl->vt->gather(ocl->ctx, &vd, &vt, &vi, 0) == FF_ERR_INDEX);
    CHECK(strstr(ff_last_error(), "opencl gather: index 6 is out of range [0, 6)") != NULL);
    float before[48], after[48];
    CHECK(ocl->vt->download(ocl->ctx, table.buf[1], 0, before, sizeof before) == FF_OK);
    ff_view vs = view(src.buf[1], FF_F32, 2, SHAPE(N, D), SHAPE(D, 1), 0);
    CHECK(ocl->vt->scatter_add(ocl->ctx, &vt, &vi, &vs, 0) == FF_ERR_INDEX);
    CHECK(strstr(ff_last_error(), "opencl scatter_add: index 6 is out of range [0, 6)") != NULL);
    CHECK(ocl->vt->download(ocl->ctx, table.buf[1], 0, after, sizeof after) == FF_OK);
    CHECK(!memcmp(before, after, sizeof before));
    ocl->vt->free(ocl->ctx, ib);
    twin_free(&table), twin_free(&dst), twin_free(&src);
}

/* src [A, R, B] (row stride B + pad, offset off) summed over R into dst [A, 1, B] */
static void check_sum_rows(ff_dtype t, int64_t A, int64_t R, int64_t B, int64_t pad, int64_t off)
{
    int64_t span = off + A * R * (B + pad);
    twin src = twin_new(span, t, 0), dst = twin_new(A * B, t, 0);
    /* a NaN, infinities of both signs in one column, a -0 column */
    size_t es = ff_dtype_size(t);
    unsigned char *h = malloc((size_t)span * es);
    ref->vt->download(ref->ctx, src.buf[0], 0, h, (size_t)span * es);
    double sp[4] = {NAN, INFINITY, -INFINITY, -0.0};
    int64_t at[4] = {off + 1, off + 2, off + (B + pad) + 2, off + 3};
    for (int i = 0; i < 4; i++) {
        if (t == FF_F32) ((float *)h)[at[i]] = (float)sp[i];
        else ((double *)h)[at[i]] = sp[i];
    }
    for (int64_t r = 0; r < R; r++) {
        if (t == FF_F32) ((float *)h)[off + r * (B + pad) + 3] = -0.0f;
        else ((double *)h)[off + r * (B + pad) + 3] = -0.0;
    }
    for (int s = 0; s < 2; s++) be_of(s)->vt->upload(be_of(s)->ctx, src.buf[s], 0, h, (size_t)span * es);
    free(h);
    for (int s = 0; s < 2; s++) {
        ff_view vd = view(dst.buf[s], t, 3, SHAPE(A, 1, B), SHAPE(B, B, 1), 0);
        ff_view vs = view(src.buf[s], t, 3, SHAPE(A, R, B), SHAPE(R * (B + pad), B + pad, 1), off);
        CHECK(be_of(s)->vt->reduce(be_of(s)->ctx, FF_REDUCE_SUM, &vd, &vs, 0x2) == FF_OK);
    }
    char what[96];
    snprintf(what, sizeof what, "sum over R of [%lld, %lld, %lld] dtype %d", (long long)A, (long long)R, (long long)B,
             (int)t);
    CHECK(twin_same(&dst, what));
    twin_free(&src), twin_free(&dst);
}

static void test_sum_rows(void)
{
    check_sum_rows(FF_F32, 3, 13, 40, 0, 0);
    check_sum_rows(FF_F64, 3, 13, 36, 5, 7);
    check_sum_rows(FF_F32, 1, 100, 64, 3, 1); /* a column sum: no kept dim before the row */
    check_sum_rows(FF_F32, 2, 1, 16, 0, 0);   /* one row */
    check_sum_rows(FF_F32, 3, 5, 12, 0, 0);   /* a row of no multiple of 8: ff_reduce */
    /* two kept dims before the row: [2, 3, 5, 16] over axis 2 */
    twin src = twin_new(2 * 3 * 5 * 16, FF_F32, 0), dst = twin_new(2 * 3 * 16, FF_F32, 0);
    for (int s = 0; s < 2; s++) {
        ff_view vd = view(dst.buf[s], FF_F32, 4, SHAPE(2, 3, 1, 16), SHAPE(48, 16, 16, 1), 0);
        ff_view vs = view(src.buf[s], FF_F32, 4, SHAPE(2, 3, 5, 16), SHAPE(240, 80, 16, 1), 0);
        CHECK(be_of(s)->vt->reduce(be_of(s)->ctx, FF_REDUCE_SUM, &vd, &vs, 0x4) == FF_OK);
    }
    CHECK(twin_same(&dst, "sum over axis 2 of [2, 3, 5, 16]"));
    twin_free(&src), twin_free(&dst);
}

int main(void)
{
    ref = ff_backend_load("cpu");
    ocl = ff_backend_load("opencl");
    if (!ref || !ocl) {
        fprintf(stderr, "test_opencl_rows: cannot load the backends: %s\n", ff_last_error());
        return 1;
    }
    static const ff_test_case cases[] = {
        {"sum_rows", test_sum_rows},
        {"embedding_rows", test_embedding_rows},
        {"index_select_rows", test_index_select_rows},
        {"scatter_add_rows", test_scatter_add_rows},
        {"bad_index_rows", test_bad_index_rows},
    };
    return ff_test_run("opencl_rows", cases, (int)(sizeof cases / sizeof cases[0]));
}
