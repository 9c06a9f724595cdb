/*
 * Random fill with the ABI's counter-based Philox generator.
 *
 * Supported: UNIFORM and NORMAL on F32 and F64. The element with row-major logical
 * index n (counted over dst's shape, whatever its strides) takes counter
 * counter_base + n, so the result does not depend on layout, thread split or
 * backend. Values are computed in double and rounded once to dst's dtype.
 */
#include "cpu_impl.h"
#include "cpu_iter.h"

int cpu_random_supported(ff_random_dist dist, ff_dtype t)
{
    return (dist == FF_RANDOM_UNIFORM || dist == FF_RANDOM_NORMAL) && cpu_is_float(t);
}

ff_status cpu_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                     double p0, double p1)
{
    ff_status st = cpu_check_view(ctx, "random", "dst", dst);
    if (st) return st;
    if ((unsigned)dist >= FF_RANDOM_COUNT)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu random: invalid distribution %d", (int)dist);
    if (!cpu_random_supported(dist, dst->dtype))
        return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu random: %s fill is not supported on %s",
                         dist == FF_RANDOM_UNIFORM ? "uniform" : "normal", cpu_dtype_name(dst->dtype));

    const ff_view *vs[] = {dst};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 1, vs); !it.done; cpu_iter_next(&it)) {
        for (int64_t j = 0; j < it.len; j++) {
            uint64_t n = counter_base + (uint64_t)(it.n + j); /* row-major logical index */
            double v = dist == FF_RANDOM_NORMAL ? p0 + p1 * ff_random_normal01(seed, n)
                       : dst->dtype == FF_F32 ? (double)ff_random_uniform_f32(seed, n, p0, p1)
                                              : p0 + (p1 - p0) * ff_random_uniform01(seed, n);
            cpu_store_f64(dst->buf, dst->dtype, it.off[0] + j * it.step[0], v);
        }
    }
    return FF_OK;
}
