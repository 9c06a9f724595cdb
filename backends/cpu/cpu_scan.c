/* The optional scan entry (cumsum / cumprod along one axis): the shared host loop of
 * ff_backend_scalar.h, which is the reference's semantics (double accumulation for
 * floats, each prefix rounded once; 64-bit wrap for integers). */
#include "cpu_impl.h"

ff_status cpu_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    ff_status st = ffb_scan_check(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", op, dst, src, axis);
    if (!st) ffb_scan_host(op, dst, src, axis);
    return st;
}
