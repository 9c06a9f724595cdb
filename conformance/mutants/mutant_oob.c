/* Mutant 3: binary ADD writes one element past the end of dst (the element after
 * the last one along the innermost axis). */
#include "mutant.h"

static ff_status bad_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st = mutant_base->binary(ctx, op, dst, a, b);
    if (st || op != FF_BINARY_ADD || ff_view_numel(dst) == 0) return st;
    int64_t last = dst->offset, step = 1;
    for (int d = 0; d < dst->ndim; d++) last += (dst->shape[d] - 1) * dst->strides[d];
    if (dst->ndim > 0 && dst->strides[dst->ndim - 1] > 0) step = dst->strides[dst->ndim - 1];
    size_t sz = ff_dtype_size(dst->dtype);
    memset((char *)dst->buf + (size_t)(last + step) * sz, 0x5A, sz);
    return FF_OK;
}

MUTANT_ENTRY("mutant_oob", "mutant: add writes one element past the end", binary, bad_binary)
