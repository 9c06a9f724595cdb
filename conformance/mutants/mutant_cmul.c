/* Mutant: complex multiply (C64) with the sign of the imaginary cross term wrong,
 * im = ar bi - ai br instead of ar bi + ai br: what a hand-written complex kernel gets
 * wrong first. The suite must catch it in the op rows of c64 (cases_ops.c). */
#include "mutant.h"

static int64_t at(const ff_view *v, const int64_t *idx)
{
    int64_t o = v->offset;
    for (int d = 0; d < v->ndim; d++) o += idx[d] * v->strides[d];
    return o;
}

static ff_status bad_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st = mutant_base->binary(ctx, op, dst, a, b);
    if (st || op != FF_BINARY_MUL || dst->dtype != FF_C64) return st;
    if (dst->buf == a->buf || dst->buf == b->buf) return st; /* in place: the inputs are gone */
    const float *pa = a->buf, *pb = b->buf;
    float *pd = dst->buf;
    int64_t idx[FF_MAX_DIMS] = {0}, n = ff_view_numel(dst);
    for (int64_t k = 0; k < n; k++) {
        int64_t od = at(dst, idx), oa = at(a, idx), ob = at(b, idx);
        double ar = pa[2 * oa], ai = pa[2 * oa + 1], br = pb[2 * ob], bi = pb[2 * ob + 1];
        pd[2 * od + 1] = (float)(ar * bi - ai * br);
        for (int d = dst->ndim - 1; d >= 0 && ++idx[d] == dst->shape[d]; d--) idx[d] = 0;
    }
    return FF_OK;
}

MUTANT_ENTRY("mutant_cmul", "mutant: complex64 multiply with the imaginary cross term's sign wrong", binary, bad_binary)
