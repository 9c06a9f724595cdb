/* The optional line entries, scan (cumsum / cumprod) and argsort: the reference's loops
 * from ff_backend_scalar.h. Each line is one sequential pass (a merge sort for argsort);
 * lines could be split across the pool if a workload ever shows it matters. */
#include "blas_impl.h"
#include "ff_backend_lines.h"

ff_status blas_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    ff_status st = ffb_scan_check(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", op, dst, src, axis);
    if (!st) ffb_scan_host(op, dst, src, axis);
    return st;
}

ff_status blas_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending)
{
    return ffb_argsort_host(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", dst, src, axis, descending != 0);
}
