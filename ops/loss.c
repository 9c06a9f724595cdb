/* Losses and label encodings: cross_entropy, mse_loss, one_hot. The losses are
 * compositions of differentiable ops (log_softmax, gather, mean), so their gradients
 * and higher orders come from those ops' nodes. Half operands are cast to f32 first and
 * the loss rounded once at the end: composed in the half dtype every op rounds (a
 * backend declining half compute runs each through the f32 detour). */
#include <stdlib.h>

#include "ops_impl.h"

static bool is_integer(ff_dtype t) { return !ff_dtype_is_float(t) && t != FF_BOOL; }

static bool is_half(ff_dtype t) { return t == FF_F16 || t == FF_BF16; }

ff_tensor *ff_cross_entropy(const ff_tensor *logits, const ff_tensor *targets)
{
    static const char fn[] = "ff_cross_entropy";
    if (!logits || !targets) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    ff_tensor *ac[1];
    int nac = ff_autocast_operands(FF_AUTOCAST_WIDE, 1, &logits, ac, fn);
    if (nac) { /* half logits in f32, and an f32 loss (as ff_log_softmax under autocast) */
        ff_tensor *r = nac > 0 ? ff_cross_entropy(ac[0], targets) : NULL;
        ff_autocast_release(nac, ac);
        return r;
    }
    if (!is_integer(targets->dtype))
        return ff_error(FF_ERR_INVALID, "%s: targets must be class indices of an integer dtype, got %s", fn,
                        ff_dtype_name(targets->dtype)), NULL;
    int nd = logits->layout.ndim;
    char b1[160], b2[160];
    const char *ls = ff_shape_str(nd, logits->layout.shape, b1, sizeof b1);
    const char *ts = ff_shape_str(targets->layout.ndim, targets->layout.shape, b2, sizeof b2);
    if (nd != 1 && nd != 2)
        return ff_error(FF_ERR_INVALID, "%s: logits must be [N, C] or [C], got %s", fn, ls), NULL;
    if (targets->layout.ndim != nd - 1 || (nd == 2 && targets->layout.shape[0] != logits->layout.shape[0]))
        return ff_error(FF_ERR_INVALID, "%s: targets %s do not match logits %s (expected [N] for [N, C], 0-d for [C])",
                        fn, ts, ls), NULL;
    if (logits->layout.shape[nd - 1] == 0)
        return ff_error(FF_ERR_INVALID, "%s: logits %s have no classes", fn, ls), NULL;
    /* targets as a [N, 1] (or [1]) i64 index into the last axis */
    int64_t ishape[2] = {nd == 2 ? logits->layout.shape[0] : 1, 1};
    ff_tensor *t64 = ff_op_cast(targets, FF_I64, fn);
    ff_tensor *idx = t64 ? ff_reshape(t64, nd, nd == 2 ? ishape : ishape + 1) : NULL;
    bool half = is_half(logits->dtype);
    ff_tensor *lw = idx ? ff_op_cast(logits, half ? FF_F32 : logits->dtype, fn) : NULL;
    ff_tensor *lsm = lw ? ff_log_softmax(lw, -1) : NULL;
    ff_tensor *picked = lsm ? ff_gather(lsm, -1, idx) : NULL;
    ff_tensor *m = picked ? ff_mean(picked, 0, NULL, false) : NULL;
    ff_tensor *nm = m ? ff_neg(m) : NULL;
    ff_tensor *r = nm ? (half ? ff_op_cast(nm, logits->dtype, fn) : ff_tensor_retain(nm)) : NULL;
    if (!r) ff_error_prefix(fn); /* e.g. a target out of range: the gather's FF_ERR_INDEX */
    ff_tensor_release(t64);
    ff_tensor_release(idx);
    ff_tensor_release(lw);
    ff_tensor_release(lsm);
    ff_tensor_release(picked);
    ff_tensor_release(m);
    ff_tensor_release(nm);
    return r;
}

ff_tensor *ff_mse_loss(const ff_tensor *pred, const ff_tensor *target)
{
    static const char fn[] = "ff_mse_loss";
    if (!pred || !target) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    ff_tensor *ac[2];
    int nac = ff_autocast_operands(FF_AUTOCAST_WIDE, 2, (const ff_tensor *[]){pred, target}, ac, fn);
    if (nac) {
        ff_tensor *r = nac > 0 ? ff_mse_loss(ac[0], ac[1]) : NULL;
        ff_autocast_release(nac, ac);
        return r;
    }
    /* Equal shapes only: PyTorch broadcasts with a warning, which usually hides a bug. */
    const ff_layout *p = &pred->layout, *t = &target->layout;
    bool same = p->ndim == t->ndim;
    for (int d = 0; same && d < p->ndim; d++) same = p->shape[d] == t->shape[d];
    if (!same) {
        char b1[160], b2[160];
        return ff_error(FF_ERR_INVALID, "%s: pred %s and target %s must have the same shape", fn,
                        ff_shape_str(p->ndim, p->shape, b1, sizeof b1), ff_shape_str(t->ndim, t->shape, b2, sizeof b2)),
               NULL;
    }
    ff_dtype rt = ff_result_type(pred, target);
    ff_dtype wide = is_half(rt) ? FF_F32 : rt;
    ff_tensor *pw = ff_op_cast(pred, wide, fn), *tw = pw ? ff_op_cast(target, wide, fn) : NULL;
    ff_tensor *d = tw ? ff_sub(pw, tw) : NULL;
    ff_tensor *df = d && !ff_dtype_is_float(d->dtype) ? ff_astype(d, ff_dtype_to_float(d->dtype)) : ff_tensor_retain(d);
    ff_tensor *sq = df ? ff_square(df) : NULL;
    ff_tensor *m = sq ? ff_mean(sq, 0, NULL, false) : NULL;
    ff_tensor *r = m ? ff_op_cast(m, is_half(rt) ? rt : m->dtype, fn) : NULL;
    if (!r) ff_error_prefix(fn);
    ff_tensor_release(pw);
    ff_tensor_release(tw);
    ff_tensor_release(d);
    ff_tensor_release(df);
    ff_tensor_release(sq);
    ff_tensor_release(m);
    return r;
}

/* A 1-D i64 tensor 0, 1, ..., n-1 on be, built on the host. */
static ff_tensor *arange_on(ff_backend *be, int64_t n, const char *fn)
{
    int64_t *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) return ff_error(FF_ERR_OOM, "%s: out of memory for %lld indices", fn, (long long)n), NULL;
    for (int64_t i = 0; i < n; i++) v[i] = i;
    ff_tensor *r = ff_from_data_on(be, v, 1, &n, FF_I64);
    free(v);
    return r;
}

/* Reads a reduction of x (amin/amax over everything) as an int64. */
static ff_status extreme(const ff_tensor *x, bool max, int64_t *out)
{
    ff_tensor *e = max ? ff_amax(x, 0, NULL, false) : ff_amin(x, 0, NULL, false);
    ff_status st = e ? ff_tensor_item_i64(e, out) : ff_last_status();
    ff_tensor_release(e);
    return st;
}

ff_tensor *ff_one_hot(const ff_tensor *indices, int64_t num_classes)
{
    static const char fn[] = "ff_one_hot";
    if (!indices) return ff_error(FF_ERR_INVALID, "%s: indices is NULL", fn), NULL;
    if (!is_integer(indices->dtype))
        return ff_error(FF_ERR_INVALID, "%s: indices must have an integer dtype, got %s", fn,
                        ff_dtype_name(indices->dtype)), NULL;
    if (indices->layout.ndim + 1 > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: indices of rank %d give a result above rank %d", fn,
                        indices->layout.ndim, FF_MAX_DIMS), NULL;
    if (num_classes < -1) return ff_error(FF_ERR_INVALID, "%s: num_classes must be >= 0 or -1, got %lld", fn,
                                          (long long)num_classes), NULL;
    bool empty = ff_tensor_numel(indices) == 0;
    if (empty && num_classes == -1)
        return ff_error(FF_ERR_INVALID, "%s: cannot infer num_classes from an empty tensor", fn), NULL;
    int64_t lo = 0, hi = -1;
    if (!empty && (extreme(indices, false, &lo) || extreme(indices, true, &hi))) {
        ff_error_prefix(fn);
        return NULL;
    }
    if (num_classes == -1) num_classes = hi + 1;
    if (lo < 0 || hi >= num_classes)
        return ff_error(FF_ERR_INDEX, "%s: class index %lld out of range [0, %lld)", fn,
                        (long long)(lo < 0 ? lo : hi), (long long)num_classes), NULL;
    /* unsqueeze(indices, -1) == arange(C), broadcast to [..., C] */
    ff_tensor *cls = arange_on(indices->storage->backend, num_classes, fn);
    ff_tensor *col = cls ? ff_unsqueeze(indices, -1) : NULL;
    ff_tensor *eq = col ? ff_eq(col, cls) : NULL;
    ff_tensor *r = eq ? ff_astype(eq, FF_I64) : NULL;
    if (!r) ff_error_prefix(fn);
    ff_tensor_release(cls);
    ff_tensor_release(col);
    ff_tensor_release(eq);
    return r;
}
