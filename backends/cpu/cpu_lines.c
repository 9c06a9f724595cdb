/* The optional line entries: scan (cumsum / cumprod along one axis) and argsort, the
 * shared host loops of ff_backend_scalar.h, which are the reference's semantics (scan:
 * double accumulation for floats, each prefix rounded once, 64-bit wrap for integers;
 * argsort: stable, NaN last, -0 == +0). */
#include "cpu_impl.h"
#include "ff_backend_lines.h"

ff_status cpu_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    ff_status st = ffb_scan_check(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", op, dst, src, axis);
    if (!st) ffb_scan_host(op, dst, src, axis);
    return st;
}

ff_status cpu_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending)
{
    return ffb_argsort_host(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", dst, src, axis, descending != 0);
}
