/*
 * How reduce's partial accumulators (ffb_reduce_acc, backends/common/ff_backend_scalar.h)
 * combine across threads, warps and chunks: host+device code, so tests/unit/
 * test_cuda_reduce.c replays a block's shuffle tree on the host against the reference's
 * sequential fold.
 *
 * MAX/MIN fold as ARGMAX/ARGMIN (the same comparison on the value, plus its index): a
 * combine then compares indices, so that of equal values (-0 and +0) and of NaNs the
 * first wins, as in the reference's loop; the final store of MAX/MIN writes the value.
 */
#ifndef FF_CUDA_REDUCE_ACC_H
#define FF_CUDA_REDUCE_ACC_H

#include "cuda_impl.h"

static CUDA_HD ff_reduce_op cuda_fold_op(ff_reduce_op op)
{
    return op == FF_REDUCE_MAX ? FF_REDUCE_ARGMAX : op == FF_REDUCE_MIN ? FF_REDUCE_ARGMIN : op;
}

/* a = a (+) b, where b holds elements at other indices (fop: the folding op). */
static CUDA_HD void cuda_acc_combine(ffb_reduce_acc *a, const ffb_reduce_acc *b, ff_reduce_op fop, int float_acc)
{
    switch (fop) {
    case FF_REDUCE_SUM: if (float_acc) a->f += b->f; else a->u += b->u; break;
    case FF_REDUCE_PROD: if (float_acc) a->f *= b->f; else a->u *= b->u; break;
    case FF_REDUCE_ANY: a->u |= b->u; break;
    case FF_REDUCE_ALL: a->u &= b->u; break;
    case FF_REDUCE_ARGMAX:
    case FF_REDUCE_ARGMIN: {
        if (b->arg < 0) break;
        if (a->arg < 0) {
            *a = *b;
            break;
        }
        int take, earlier = b->arg < a->arg, mx = fop == FF_REDUCE_ARGMAX;
        if (float_acc) {
            int an = isnan(a->f), bn = isnan(b->f);
            if (an || bn) take = an && bn ? earlier : bn;
            else take = (mx ? b->f > a->f : b->f < a->f) || (b->f == a->f && earlier);
        } else {
            take = (mx ? b->i > a->i : b->i < a->i) || (b->i == a->i && earlier);
        }
        if (take) *a = *b;
        break;
    }
    default: break;
    }
}

#endif /* FF_CUDA_REDUCE_ACC_H */
