/* Complex tensors on a backend that does not compute them (every backend today): the
 * data-moving entries (copy, fill, where, gather, scatter_add) and the few arithmetic ones
 * the core itself calls on whatever dtype it holds (add, sub, mul, div, eq, ne, neg, sum),
 * run on real views of the same storage. A C64 tensor of shape S is, byte for byte, an F32
 * tensor of shape [S, 2] (re, im) with its strides doubled: torch.view_as_real's layout,
 * which is also DLPack's and NumPy's. The Linux file_operations rule: a NULL (declined)
 * entry means the generic path, so a backend that never heard of complex numbers loses
 * nothing. Differentiable complex arithmetic is composed one level up (ops/complex*.c). */
#include "ff_impl.h"

bool ff_kernel_complex_needed(const ff_backend *be, ff_op_kind kind, int op, ff_dtype dt)
{
    return ff_dtype_is_complex(dt) && !be->vt->supports(be->ctx, kind, op, dt);
}

/* t's bytes as the real dtype: [S, 2] (part < 0), or one part [S] (0 re, 1 im). A view
 * header only: no autograd, no view tracking (the kernels' own temporaries). */
static ff_tensor *real_view(const ff_tensor *t, int part, const char *fn)
{
    const ff_layout *l = &t->layout;
    ff_layout r = {.ndim = l->ndim, .offset = l->offset * 2};
    for (int d = 0; d < l->ndim; d++) r.shape[d] = l->shape[d], r.strides[d] = l->strides[d] * 2;
    if (part >= 0) {
        r.offset += part;
    } else {
        if (l->ndim >= FF_MAX_DIMS)
            return ff_error(FF_ERR_INVALID, "%s: a complex tensor of rank %d has no real view (rank %d at most)", fn,
                            l->ndim, FF_MAX_DIMS - 1), NULL;
        r.shape[r.ndim] = 2, r.strides[r.ndim] = 1, r.ndim++;
    }
    ff_tensor *v = ff_tensor_new_view(t, &r);
    if (v) v->dtype = ff_dtype_real_of(t->dtype);
    return v;
}

/* t (not complex) with a trailing dim of 2 at stride 0: a mask or an index that speaks for
 * both parts of the real view it goes with. */
static ff_tensor *pair_view(const ff_tensor *t, const char *fn)
{
    const ff_layout *l = &t->layout;
    if (l->ndim >= FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: rank %d is too large for a complex operand", fn, l->ndim), NULL;
    ff_layout r = *l;
    r.shape[r.ndim] = 2, r.strides[r.ndim] = 0, r.ndim++;
    return ff_tensor_new_view(t, &r);
}

static ff_status release_all(ff_status st, int n, ff_tensor **ts)
{
    for (int i = 0; i < n; i++) ff_tensor_release(ts[i]);
    return st;
}

ff_status ff_complex_copy(const ff_tensor *dst, const ff_tensor *src, const char *fn)
{
    bool cd = ff_dtype_is_complex(dst->dtype), cs = ff_dtype_is_complex(src->dtype);
    ff_tensor *v[3] = {NULL, NULL, NULL};
    ff_status st;
    if (cd && cs) { /* complex -> complex (c64 <-> c128 too): both parts */
        v[0] = real_view(dst, -1, fn), v[1] = v[0] ? real_view(src, -1, fn) : NULL;
        st = v[1] ? ff_kernel_copy(v[0], v[1], fn) : ff_last_status();
    } else if (cd) { /* real -> complex: the value, and an imaginary part of 0 */
        v[0] = real_view(dst, 0, fn), v[1] = v[0] ? real_view(dst, 1, fn) : NULL;
        st = v[1] ? ff_kernel_copy(v[0], src, fn) : ff_last_status();
        if (!st) st = ff_kernel_fill(v[1], 0.0, fn);
    } else { /* complex -> real keeps the real part (PyTorch, which warns that it drops the rest) */
        v[0] = real_view(src, 0, fn);
        st = v[0] ? ff_kernel_copy(dst, v[0], fn) : ff_last_status();
    }
    return release_all(st, 3, v);
}

ff_status ff_complex_fill(const ff_tensor *dst, ff_number value, const char *fn)
{
    ff_tensor *v[2] = {real_view(dst, 0, fn), NULL};
    v[1] = v[0] ? real_view(dst, 1, fn) : NULL;
    ff_status st = v[1] ? ff_kernel_fill_number(v[0], value, fn) : ff_last_status();
    if (!st) st = ff_kernel_fill(v[1], 0.0, fn);
    return release_all(st, 2, v);
}

ff_status ff_complex_unary(ff_unary_op op, const ff_tensor *dst, const ff_tensor *src, const char *fn)
{
    if (op != FF_UNARY_NEG || dst->dtype != src->dtype)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: unary op %d is not computed on %s here (fusionflow composes complex "
                        "math in the ops layer)", fn, (int)op, ff_dtype_name(src->dtype));
    ff_tensor *v[2] = {real_view(dst, -1, fn), real_view(src, -1, fn)};
    ff_status st = v[0] && v[1] ? ff_kernel_unary(FF_UNARY_NEG, v[0], v[1], fn) : ff_last_status();
    return release_all(st, 2, v);
}

/* dst = x op y over real views broadcast to dst's shape (a new real tensor when dst is NULL). */
static ff_tensor *real_binary(ff_binary_op op, const ff_tensor *dst, const ff_tensor *x, const ff_tensor *y,
                              const ff_tensor *shape_of, const char *fn)
{
    ff_tensor *out = dst ? ff_tensor_retain((ff_tensor *)dst)
                         : ff_tensor_new(shape_of->storage->backend, shape_of->layout.ndim, shape_of->layout.shape,
                                         ff_binary_op_writes_bool(op) ? FF_BOOL : x->dtype, fn);
    if (out && ff_kernel_binary(op, out, x, y, fn)) {
        ff_tensor_release(out);
        return NULL;
    }
    return out;
}

/* (ar + i ai) op (br + i bi) for MUL, DIV, EQ, NE: the parts into temporaries of dst's
 * shape first, then dst's parts, so that dst may be the identical view of a or b. */
static ff_status complex_arith(ff_binary_op op, const ff_tensor *dst, const ff_tensor *a, const ff_tensor *b,
                               const char *fn)
{
    enum { AR, AI, BR, BI, DR, DI, T1, T2, T3, T4, N };
    ff_tensor *v[N] = {0};
    v[AR] = real_view(a, 0, fn), v[AI] = real_view(a, 1, fn), v[BR] = real_view(b, 0, fn), v[BI] = real_view(b, 1, fn);
    for (int i = AR; i <= BI; i++)
        if (!v[i]) return release_all(ff_last_status(), N, v);
    const ff_tensor *shape = dst;
    ff_status st = FF_OK;
    if (op == FF_BINARY_EQ || op == FF_BINARY_NE) { /* both parts equal; either differs */
        ff_binary_op cmp = op, join = op == FF_BINARY_EQ ? FF_BINARY_LOGICAL_AND : FF_BINARY_LOGICAL_OR;
        v[T1] = real_binary(cmp, NULL, v[AR], v[BR], shape, fn);
        v[T2] = v[T1] ? real_binary(cmp, NULL, v[AI], v[BI], shape, fn) : NULL;
        st = v[T2] ? ff_kernel_binary(join, dst, v[T1], v[T2], fn) : ff_last_status();
        return release_all(st, N, v);
    }
    v[DR] = real_view(dst, 0, fn), v[DI] = v[DR] ? real_view(dst, 1, fn) : NULL;
    if (!v[DI]) return release_all(ff_last_status(), N, v);
    /* re = ar br - ai bi, im = ar bi + ai br; division: the same with conj(b), over |b|^2 */
    bool div = op == FF_BINARY_DIV;
    v[T1] = real_binary(FF_BINARY_MUL, NULL, v[AR], v[BR], v[DR], fn);
    v[T2] = v[T1] ? real_binary(FF_BINARY_MUL, NULL, v[AI], v[BI], v[DR], fn) : NULL;
    v[T3] = v[T2] ? real_binary(FF_BINARY_MUL, NULL, v[AI], v[BR], v[DR], fn) : NULL;
    v[T4] = v[T3] ? real_binary(FF_BINARY_MUL, NULL, v[AR], v[BI], v[DR], fn) : NULL;
    if (!v[T4]) return release_all(ff_last_status(), N, v);
    if (!div) {
        st = ff_kernel_binary(FF_BINARY_SUB, v[DR], v[T1], v[T2], fn);
        if (!st) st = ff_kernel_binary(FF_BINARY_ADD, v[DI], v[T3], v[T4], fn);
        return release_all(st, N, v);
    }
    /* re = (ar br + ai bi) / d, im = (ai br - ar bi) / d, d = br^2 + bi^2 (d into AR's slot:
     * every read of a is done) */
    ff_tensor *bb = real_binary(FF_BINARY_MUL, NULL, v[BR], v[BR], v[DR], fn);
    ff_tensor *cc = bb ? real_binary(FF_BINARY_MUL, NULL, v[BI], v[BI], v[DR], fn) : NULL;
    st = cc ? ff_kernel_binary(FF_BINARY_ADD, bb, bb, cc, fn) : ff_last_status();
    if (!st) st = ff_kernel_binary(FF_BINARY_ADD, v[T1], v[T1], v[T2], fn);
    if (!st) st = ff_kernel_binary(FF_BINARY_SUB, v[T3], v[T3], v[T4], fn);
    if (!st) st = ff_kernel_binary(FF_BINARY_DIV, v[DR], v[T1], bb, fn);
    if (!st) st = ff_kernel_binary(FF_BINARY_DIV, v[DI], v[T3], bb, fn);
    ff_tensor_release(bb);
    ff_tensor_release(cc);
    return release_all(st, N, v);
}

ff_status ff_complex_binary(ff_binary_op op, const ff_tensor *dst, const ff_tensor *a, const ff_tensor *b,
                            const char *fn)
{
    switch (op) {
    case FF_BINARY_ADD:
    case FF_BINARY_SUB: {
        ff_tensor *v[3] = {real_view(dst, -1, fn), real_view(a, -1, fn), real_view(b, -1, fn)};
        ff_status st = v[0] && v[1] && v[2] ? ff_kernel_binary(op, v[0], v[1], v[2], fn) : ff_last_status();
        return release_all(st, 3, v);
    }
    case FF_BINARY_MUL:
    case FF_BINARY_DIV:
    case FF_BINARY_EQ:
    case FF_BINARY_NE: return complex_arith(op, dst, a, b, fn);
    default:
        return ff_error(FF_ERR_UNSUPPORTED, "%s: binary op %d is not defined for %s (complex numbers have no order)",
                        fn, (int)op, ff_dtype_name(a->dtype));
    }
}

ff_status ff_complex_reduce(ff_reduce_op op, const ff_tensor *dst, const ff_tensor *src, uint32_t axes_mask,
                            const char *fn)
{
    if (op != FF_REDUCE_SUM || !ff_dtype_is_complex(dst->dtype))
        return ff_error(FF_ERR_UNSUPPORTED, "%s: reduction %d is not defined for %s here (sum is)", fn, (int)op,
                        ff_dtype_name(src->dtype));
    ff_tensor *v[2] = {real_view(dst, -1, fn), real_view(src, -1, fn)}; /* the (re, im) dim is not reduced */
    ff_status st = v[0] && v[1] ? ff_kernel_reduce(FF_REDUCE_SUM, v[0], v[1], axes_mask, fn) : ff_last_status();
    return release_all(st, 2, v);
}

ff_status ff_complex_where(const ff_tensor *dst, const ff_tensor *cond, const ff_tensor *a, const ff_tensor *b,
                           const char *fn)
{
    ff_tensor *v[4] = {real_view(dst, -1, fn), pair_view(cond, fn), real_view(a, -1, fn), real_view(b, -1, fn)};
    ff_status st = v[0] && v[1] && v[2] && v[3] ? ff_kernel_where(v[0], v[1], v[2], v[3], fn) : ff_last_status();
    return release_all(st, 4, v);
}

ff_status ff_complex_gather(const ff_tensor *dst, const ff_tensor *src, const ff_tensor *index, int axis,
                            const char *fn)
{
    ff_tensor *v[3] = {real_view(dst, -1, fn), real_view(src, -1, fn), pair_view(index, fn)};
    ff_status st = v[0] && v[1] && v[2] ? ff_kernel_gather(v[0], v[1], v[2], axis, fn) : ff_last_status();
    return release_all(st, 3, v);
}

ff_status ff_complex_scatter_add(const ff_tensor *dst, const ff_tensor *index, const ff_tensor *src, int axis,
                                 const char *fn)
{
    ff_tensor *v[3] = {real_view(dst, -1, fn), pair_view(index, fn), real_view(src, -1, fn)};
    ff_status st = v[0] && v[1] && v[2] ? ff_kernel_scatter_add(v[0], v[1], v[2], axis, fn) : ff_last_status();
    return release_all(st, 3, v);
}

/* PyTorch's complex draws: uniform parts in [p0, p1) each; normal parts N(p0, p1^2 / 2),
 * so that E|z - p0|^2 = p1^2 (randn's complex is unit variance). */
ff_status ff_complex_random(const ff_tensor *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                            double p0, double p1, const char *fn)
{
    ff_tensor *v = real_view(dst, -1, fn);
    if (!v) return ff_last_status();
    double s = dist == FF_RANDOM_NORMAL ? p1 * 0.70710678118654752440 : p1;
    ff_status st = ff_kernel_random(v, dist, seed, counter_base, p0, s, fn);
    ff_tensor_release(v);
    return st;
}
