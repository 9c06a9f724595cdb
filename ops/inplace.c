/* In-place ops: the result is written into x's own storage through its view (the
 * kernel ABI allows dst == input for the identical view), which bumps the storage
 * version so autograd notices if x was saved for a backward pass.
 *
 * Under autograd (grad mode on, and x, its base or an operand requires grad) an in-place
 * op is recorded as PyTorch records it: the result is computed out of place from x's
 * value and history, then ff_inplace_commit writes it into x and rebases x's history
 * (or its base's, for a view) onto it (autograd/view_history.c). A leaf that requires
 * grad, or a view of one, is refused there, as PyTorch refuses it.
 * The result dtype must be x's kind: x (i32) += y (f32) is refused, as PyTorch refuses
 * it; a narrower type of the same kind is fine (i32 += i64 computes in i64 and stores
 * i32). Scalar operands are converted to x's dtype first (so i32 += 2.5 adds 2; PyTorch
 * refuses this one). */
#include <string.h>

#include "ops_impl.h"

static int kind(ff_dtype t) { return t == FF_BOOL ? 0 : ff_dtype_is_complex(t) ? 3 : ff_dtype_is_float(t) ? 2 : 1; }

static ff_status check_not_broadcast(const ff_tensor *x, const char *fn)
{
    for (int d = 0; d < x->layout.ndim; d++)
        if (x->layout.strides[d] == 0 && x->layout.shape[d] > 1)
            return ff_error(FF_ERR_INVALID,
                            "%s: the tensor is a broadcast (expanded) view: several elements share one memory "
                            "location; make it contiguous first",
                            fn);
    return FF_OK;
}

ff_status ff_op_check_out(const ff_tensor *out, int n, const ff_tensor *const *inputs, const char *fn)
{
    if (!out) return ff_error(FF_ERR_INVALID, "%s: out is NULL", fn);
    if (ff_grad_enabled() && (out->requires_grad || ff_autograd_needed(n, inputs)))
        return ff_error(FF_ERR_AUTOGRAD,
                        "%s: destination-passing forms are not recorded by autograd (as PyTorch's out=); use the "
                        "plain op, or ff_set_grad_enabled(false)",
                        fn);
    return check_not_broadcast(out, fn);
}

/* The recorded path: x's new value r (this function releases it) is committed; r is a
 * temporary unless it is (a view of) the caller's own tensor (copy_). */
static ff_status commit_as(ff_tensor *x, ff_tensor *r, bool temporary, const char *fn)
{
    if (!r) {
        ff_error_prefix(fn);
        return ff_last_status();
    }
    ff_status st = ff_inplace_commit(x, r, temporary, fn);
    ff_tensor_release(r);
    return st;
}

static ff_status commit(ff_tensor *x, ff_tensor *r, const char *fn) { return commit_as(x, r, true, fn); }

bool ff_op_inplace_begin(ff_tensor *x, const ff_tensor *y, bool allow_broadcast, const char *fn, ff_status *st)
{
    *st = FF_OK;
    if (!x) {
        *st = ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn);
        return false;
    }
    bool rec = ff_inplace_records(x, y);
    if (rec) *st = ff_inplace_check(x, fn);
    /* filling a broadcast view is harmless (every alias gets the same value), unless it is
     * recorded: its region would overlap itself */
    if (!*st && (rec || !allow_broadcast)) *st = check_not_broadcast(x, fn);
    return rec;
}

static bool same_layout(const ff_layout *a, const ff_layout *b)
{
    if (a->ndim != b->ndim || a->offset != b->offset) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d])) return false;
    return true;
}

/* y as an operand for writing into x: converted to dtype, and copied if it shares x's
 * storage through a different view (the kernel may only alias dst with an identical
 * view). Also checks y broadcasts to x's shape. */
static ff_tensor *operand(const ff_tensor *x, const ff_tensor *y, ff_dtype dtype, const char *fn)
{
    int nd;
    int64_t shape[FF_MAX_DIMS];
    if (ff_broadcast_shapes(x->layout.ndim, x->layout.shape, y->layout.ndim, y->layout.shape, &nd, shape, fn))
        return NULL;
    if (nd != x->layout.ndim || memcmp(shape, x->layout.shape, sizeof(int64_t) * (size_t)nd) != 0) {
        char b1[160], b2[160];
        return ff_error(FF_ERR_INVALID, "%s: operand of shape %s does not broadcast to the target's shape %s", fn,
                        ff_shape_str(y->layout.ndim, y->layout.shape, b1, sizeof b1),
                        ff_shape_str(x->layout.ndim, x->layout.shape, b2, sizeof b2)), NULL;
    }
    bool alias = y->storage == x->storage && !same_layout(&x->layout, &y->layout);
    if (y->dtype == dtype && !alias) return ff_tensor_retain((ff_tensor *)y);
    ff_tensor *c = ff_tensor_new(y->storage->backend, y->layout.ndim, y->layout.shape, dtype, fn);
    if (c && ff_kernel_copy(c, y, fn)) {
        ff_tensor_release(c);
        c = NULL;
    }
    return c;
}

static ff_tensor *binary_of(ff_binary_op op, const ff_tensor *x, const ff_tensor *y)
{
    switch (op) {
    case FF_BINARY_ADD: return ff_add(x, y);
    case FF_BINARY_SUB: return ff_sub(x, y);
    case FF_BINARY_MUL: return ff_mul(x, y);
    default: return ff_div(x, y);
    }
}

/* x = x op y; computes in the promoted dtype (through a temporary if it differs from
 * x's) and stores in x's. */
static ff_status binary_(ff_binary_op op, ff_tensor *x, const ff_tensor *y, const char *fn)
{
    ff_status st;
    bool rec = ff_op_inplace_begin(x, y, false, fn, &st);
    if (st) return st;
    if (!y) return ff_error(FF_ERR_INVALID, "%s: operand is NULL", fn);
    const ff_tensor *both[2] = {x, y};
    if (!ff_common_backend(2, both, fn)) return ff_last_status();
    ff_dtype pt = ff_dtype_promote(x->dtype, y->dtype);
    if (op == FF_BINARY_DIV) pt = ff_dtype_to_float(pt);
    if (kind(pt) > kind(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: the result type %s cannot be stored in place into a %s tensor", fn,
                        ff_dtype_name(pt), ff_dtype_name(x->dtype));
    ff_tensor *cy = operand(x, y, pt, fn);
    if (!cy) return ff_last_status();
    if (rec) {
        ff_tensor_release(cy); /* the out-of-place op converts (and differentiates) y itself */
        return commit(x, binary_of(op, x, y), fn);
    }
    if (pt == x->dtype) {
        st = ff_kernel_binary(op, x, x, cy, fn);
    } else {
        ff_tensor *cx = ff_tensor_new(x->storage->backend, x->layout.ndim, x->layout.shape, pt, fn);
        st = !cx ? ff_last_status() : ff_kernel_copy(cx, x, fn);
        if (!st) st = ff_kernel_binary(op, cx, cx, cy, fn);
        if (!st) st = ff_kernel_copy(x, cx, fn);
        ff_tensor_release(cx);
    }
    ff_tensor_release(cy);
    return st;
}

ff_status ff_add_(ff_tensor *x, const ff_tensor *y) { return binary_(FF_BINARY_ADD, x, y, "ff_add_"); }
ff_status ff_sub_(ff_tensor *x, const ff_tensor *y) { return binary_(FF_BINARY_SUB, x, y, "ff_sub_"); }
ff_status ff_mul_(ff_tensor *x, const ff_tensor *y) { return binary_(FF_BINARY_MUL, x, y, "ff_mul_"); }
ff_status ff_div_(ff_tensor *x, const ff_tensor *y) { return binary_(FF_BINARY_DIV, x, y, "ff_div_"); }

static ff_status scalar_(ff_binary_op op, ff_tensor *x, double s, const char *fn)
{
    ff_status st;
    bool rec = ff_op_inplace_begin(x, NULL, false, fn, &st);
    if (st) return st;
    ff_tensor *st_ = ff_op_scalar_like(x, s, x->dtype); /* the scalar converted to x's dtype */
    if (!st_) return ff_last_status();
    if (rec) {
        st = commit(x, binary_of(op, x, st_), fn);
    } else {
        st = ff_kernel_binary(op, x, x, st_, fn);
    }
    ff_tensor_release(st_);
    return st;
}

ff_status ff_add_scalar_(ff_tensor *x, double s) { return scalar_(FF_BINARY_ADD, x, s, "ff_add_scalar_"); }
ff_status ff_mul_scalar_(ff_tensor *x, double s) { return scalar_(FF_BINARY_MUL, x, s, "ff_mul_scalar_"); }

static ff_status fill_value_(ff_tensor *x, double value, const char *fn)
{
    ff_status st;
    if (ff_op_inplace_begin(x, NULL, true, fn, &st)) {
        if (st) return st;
        ff_tensor *v = ff_op_scalar_like(x, value, x->dtype);
        ff_tensor *r = v ? ff_broadcast_to(v, x->layout.ndim, x->layout.shape) : NULL;
        ff_tensor_release(v);
        return commit(x, r, fn);
    }
    if (st) return st;
    return ff_kernel_fill(x, value, fn);
}

ff_status ff_fill_(ff_tensor *x, double value) { return fill_value_(x, value, "ff_fill_"); }
ff_status ff_zero_(ff_tensor *x) { return fill_value_(x, 0.0, "ff_zero_"); }

ff_status ff_copy_(ff_tensor *dst, const ff_tensor *src)
{
    static const char fn[] = "ff_copy_";
    ff_status st;
    bool rec = ff_op_inplace_begin(dst, src, false, fn, &st);
    if (st) return st;
    if (!src) return ff_error(FF_ERR_INVALID, "%s: source is NULL", fn);
    const ff_tensor *both[2] = {dst, src};
    if (!ff_common_backend(2, both, fn)) return ff_last_status();
    if (rec) {
        /* src's values, broadcast to dst's shape, with src's history (a clone first when it
         * shares dst's memory, so the write does not read what it overwrites) */
        ff_tensor *s = src->storage == dst->storage ? ff_clone(src) : ff_tensor_retain((ff_tensor *)src);
        ff_tensor *r = s ? ff_broadcast_to(s, dst->layout.ndim, dst->layout.shape) : NULL;
        ff_tensor_release(s);
        return commit_as(dst, r, false, fn);
    }
    ff_tensor *c = operand(dst, src, src->dtype, fn);
    if (!c) return ff_last_status();
    st = ff_kernel_copy(dst, c, fn);
    ff_tensor_release(c);
    return st;
}

ff_status ff_copy_from_host_(ff_tensor *dst, const void *src, size_t nbytes)
{
    static const char fn[] = "ff_copy_from_host_";
    ff_status st;
    bool rec = ff_op_inplace_begin(dst, NULL, false, fn, &st);
    if (st) return st;
    if (!src && nbytes) return ff_error(FF_ERR_INVALID, "%s: source is NULL", fn);
    size_t want = (size_t)ff_tensor_numel(dst) * ff_dtype_size(dst->dtype);
    if (nbytes != want)
        return ff_error(FF_ERR_INVALID, "%s: %zu bytes given, the %s tensor of %lld elements takes %zu", fn, nbytes,
                        ff_dtype_name(dst->dtype), (long long)ff_tensor_numel(dst), want);
    if (rec) return commit(dst, ff_from_data_on(dst->storage->backend, src, dst->layout.ndim, dst->layout.shape,
                                                dst->dtype), fn);
    if (!want) return FF_OK;
    if (ff_layout_is_contiguous(&dst->layout)) return ff_kernel_upload(dst, src, nbytes, fn); /* in place */
    ff_tensor *tmp = ff_from_data_on(dst->storage->backend, src, dst->layout.ndim, dst->layout.shape, dst->dtype);
    st = tmp ? ff_kernel_copy(dst, tmp, fn) : ff_last_status(); /* through a staging tensor */
    ff_tensor_release(tmp);
    return st;
}

ff_status ff_axpy_(ff_tensor *x, double alpha, const ff_tensor *y)
{
    static const char fn[] = "ff_axpy_";
    ff_status st;
    bool rec = ff_op_inplace_begin(x, y, false, fn, &st);
    if (st) return st;
    if (!y) return ff_error(FF_ERR_INVALID, "%s: operand is NULL", fn);
    if (rec) {
        ff_tensor *ay = ff_mul_scalar(y, alpha);
        ff_tensor *r = ay ? ff_add(x, ay) : NULL;
        ff_tensor_release(ay);
        return commit(x, r, fn);
    }
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *ay = ff_mul_scalar(y, alpha);
    st = ay ? binary_(FF_BINARY_ADD, x, ay, fn) : ff_last_status();
    ff_set_grad_enabled(prev);
    if (!ay) ff_error_prefix(fn);
    ff_tensor_release(ay);
    return st;
}

ff_status ff_inplace_result_(ff_tensor *x, ff_tensor *result)
{
    static const char fn[] = "ff_inplace_result_";
    ff_status st;
    bool rec = ff_op_inplace_begin(x, result, false, fn, &st);
    if (st) return st;
    if (!result) return ff_error(FF_ERR_INVALID, "%s: result is NULL", fn);
    if (rec) return ff_inplace_commit(x, result, true, fn);
    return ff_copy_(x, result);
}

/* ---- assignment with history --------------------------------------------------------- */
static ff_status assign_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *src = n->inputs[0];
    gi[0] = ff_sum_to_shape(g, src->layout.ndim, src->layout.shape);
    return gi[0] ? FF_OK : ff_last_status();
}

/* What in-place ops cannot do here (they do not rebase history, see the top of this
 * file), done by returning a new header instead: dst's memory gets src's values, and
 * the result views that same memory with src's history. The old header dst keeps its
 * own history, so nodes that already took dst as an input are not disturbed; a node
 * that saved dst's old values notices the write through the storage version. Python's
 * in-place ops with autograd (t[mask] = v) compute out of place and then point the
 * Python object at this header. */
ff_tensor *ff_assign(ff_tensor *dst, const ff_tensor *src)
{
    static const char fn[] = "ff_assign";
    if (!dst || !src) return ff_error(FF_ERR_INVALID, "%s: NULL tensor", fn), NULL;
    if (ff_grad_enabled() && dst->requires_grad && !dst->grad_fn)
        return ff_error(FF_ERR_AUTOGRAD, "%s: a leaf tensor that requires grad is used in an in-place operation; wrap "
                        "it in ff_set_grad_enabled(false)", fn), NULL;
    if (check_not_broadcast(dst, fn)) return NULL;
    const ff_tensor *both[2] = {dst, src};
    if (!ff_common_backend(2, both, fn)) return NULL;
    ff_tensor *c = operand(dst, src, src->dtype, fn);
    if (!c) return NULL;
    ff_status st = ff_kernel_copy(dst, c, fn);
    ff_tensor_release(c);
    if (st) return NULL;
    ff_tensor *out = ff_tensor_new_view(dst, &dst->layout);
    if (out && ff_dtype_has_grad(dst->dtype)) out = ff_op_record(out, "assign", assign_backward, 1, &src, 0, NULL);
    return out;
}
