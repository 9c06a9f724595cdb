/*
 * Random fill with the ABI's Philox4x32-10: the element with row-major logical index n
 * takes counter counter_base + n, so the numbers are the reference backend's, for any
 * layout and any split across threads. Values are computed in double exactly as the
 * ABI header prescribes and rounded once (f32 uniforms through ff_random_uniform_f32, so
 * they stay below p1). UNIFORM and NORMAL on F32/F64.
 */
#include "blas_impl.h"

typedef struct rand_job {
    const blas_walk *w;
    ff_dtype t;
    ff_random_dist dist;
    uint64_t seed, base;
    double p0, p1;
} rand_job;

typedef struct rand_run {
    const rand_job *job;
    uint64_t n; /* logical index of the next element */
} rand_run;

static void seg_random(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    rand_run *r = varg;
    const rand_job *j = r->job;
    for (int64_t i = 0; i < n; i++, r->n++) {
        uint64_t ctr = j->base + r->n;
        if (j->dist == FF_RANDOM_NORMAL) {
            double v = j->p0 + j->p1 * ff_random_normal01(j->seed, ctr);
            if (j->t == FF_F32) ((float *)p[0])[i * s[0]] = (float)v;
            else ((double *)p[0])[i * s[0]] = v;
        } else if (j->t == FF_F32) { /* stays below p1 after rounding, as the ABI says */
            ((float *)p[0])[i * s[0]] = ff_random_uniform_f32(j->seed, ctr, j->p0, j->p1);
        } else {
            ((double *)p[0])[i * s[0]] = j->p0 + (j->p1 - j->p0) * ff_random_uniform01(j->seed, ctr);
        }
    }
}

static void random_chunk(void *varg, int64_t begin, int64_t end)
{
    const rand_job *j = varg;
    rand_run r = {j, (uint64_t)begin};
    blas_walk_range(j->w, begin, end, seg_random, &r);
}

ff_status blas_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                      double p0, double p1)
{
    ff_status st = blas_check_view(ctx, "random", "dst", dst);
    if (st) return st;
    if ((unsigned)dist >= FF_RANDOM_COUNT)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas random: invalid distribution %d", (int)dist);
    if (!blas_is_float(dst->dtype))
        return blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas random: %s fill is not supported on %s",
                          dist == FF_RANDOM_UNIFORM ? "uniform" : "normal", blas_dtype_name(dst->dtype));
    const ff_view *vs[] = {dst};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 1, vs);
    rand_job j = {&w, dst->dtype, dist, seed, counter_base, p0, p1};
    /* a Philox block is ~40 multiply rounds: threads pay off early */
    blas_parallel_for(ctx, w.numel, 4096, 64, random_chunk, &j);
    return FF_OK;
}
