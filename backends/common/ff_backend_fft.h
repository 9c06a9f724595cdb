/*
 * The fft entry on host memory, shared by the in-tree backends: its argument checks and
 * where each transformed line starts. Header-only, like ff_backend_scalar.h.
 */
#ifndef FF_BACKEND_FFT_H
#define FF_BACKEND_FFT_H

#include "ff_backend_lines.h"

/* ---- fft ------------------------------------------------------------------------------ */
/* The optional fft entry: the four transforms on F32 and F64, nothing else. */
static inline int ffb_fft_supported(int op, ff_dtype t)
{
    return (op == FF_FFT_FORWARD || op == FF_FFT_INVERSE || op == FF_FFT_R2C || op == FF_FFT_C2R) &&
           (t == FF_F32 || t == FF_F64);
}

/* The fft entry's argument checks (backend_abi.h): one float dtype; the complex views end
 * in a dim of size 2; the real view (R2C's src, C2R's dst) has the complex one's signal
 * dims with n at axis where the complex one has n / 2 + 1; axis is a signal dim. *rank
 * gets the number of signal dims, *n the signal length (>= 1). */
static inline ff_status ffb_fft_check(const ff_host_api *host, const char *backend, int op, const ff_view *dst,
                                      const ff_view *src, int axis, int *rank, int64_t *n)
{
    ff_status st;
    if ((st = ffb_check_view(host, backend, "fft", "dst", dst)) || (st = ffb_check_view(host, backend, "fft", "src", src)))
        return st;
    if (!ffb_fft_supported(op, src->dtype))
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s fft: op %d is not supported on %s", backend, op,
                        ffb_dtype_name(src->dtype));
    if (dst->dtype != src->dtype) return ffb_fail(host, FF_ERR_INVALID, "%s fft: dst must have src's dtype", backend);
    int real = op == FF_FFT_R2C || op == FF_FFT_C2R;
    const ff_view *c = op == FF_FFT_R2C ? dst : src; /* complex */
    const ff_view *o = op == FF_FFT_R2C ? src : dst; /* the other: the real view if real */
    int r = c->ndim - 1;
    if (r < 1 || c->shape[r] != 2)
        return ffb_fail(host, FF_ERR_INVALID, "%s fft: a complex view needs a signal dim and a last dim of size 2",
                        backend);
    if (axis < 0 || axis >= r)
        return ffb_fail(host, FF_ERR_INVALID, "%s fft: axis %d out of range for %d signal dims", backend, axis, r);
    if (o->ndim != (real ? r : r + 1) || (!real && o->shape[r] != 2))
        return ffb_fail(host, FF_ERR_INVALID, "%s fft: dst and src ranks do not fit op %d", backend, op);
    *n = real ? o->shape[axis] : c->shape[axis];
    for (int d = 0; d < r; d++)
        if (c->shape[d] != (d == axis && real ? *n / 2 + 1 : o->shape[d]))
            return ffb_fail(host, FF_ERR_INVALID, "%s fft: dst and src shapes do not fit op %d at dim %d", backend, op,
                            d);
    if (*n < 1) return ffb_fail(host, FF_ERR_INVALID, "%s fft: signal length %lld < 1", backend, (long long)*n);
    *rank = r;
    return FF_OK;
}

/* Where line `line` (row-major over the signal dims but axis) of a and b starts:
 * ffb_line_start over the first `rank` dims (the complex pair's dim left out). */
static inline void ffb_fft_line_start(const ff_view *a, const ff_view *b, int rank, int axis, int64_t line,
                                      int64_t *oa, int64_t *ob)
{
    ff_view ta = *a, tb = *b;
    ta.ndim = tb.ndim = rank;
    ffb_line_start(&ta, &tb, axis, line, oa, ob);
}

#endif /* FF_BACKEND_FFT_H */
