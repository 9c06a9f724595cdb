/* The optional scan entry (cumsum / cumprod): the reference's loop from
 * ff_backend_scalar.h. A scan is one sequential pass per line; lines could be split
 * across the pool if a workload ever shows it matters. */
#include "blas_impl.h"

ff_status blas_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    ff_status st = ffb_scan_check(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", op, dst, src, axis);
    if (!st) ffb_scan_host(op, dst, src, axis);
    return st;
}
