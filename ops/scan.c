/* cumsum and cumprod along one axis, on the backend's optional scan entry (the
 * reference, cpu_blas and opencl have it; a backend without it gets a clear "does not
 * support" error). As PyTorch: integer and bool inputs give i64, floats keep their dtype;
 * a 0-d tensor is one element (axis 0 or -1).
 *
 * Gradients, written with ff ops (so higher orders work):
 *   cumsum:  dx = reverse cumsum of g = sum(g) - cumsum(g) + g along the axis
 *   cumprod: dx[k] = sum_{i >= k} g[i] prod_{j <= i, j != k} x[j], as PyTorch, zeros
 *            included: reverse cumsum of (g * y) / x wherever x != 0 (past a line's
 *            first zero that is 0, as it should be); at the first zero itself, reverse
 *            cumsum of (g * y') with y' the cumprod of x with that zero replaced by 1. */
#include "expr.h"

static ff_tensor *scan(int op, const ff_tensor *x, int axis, const char *fn);

/* sum_{j >= i} g[j] along axis, as total - prefix + own. */
static ff_tensor *reverse_cumsum(const ff_tensor *g, int axis, const char *fn)
{
    ff_tensor *total = ff_sum(g, 1, &axis, true), *pre = total ? scan(0, g, axis, fn) : NULL;
    ff_tensor *d = pre ? ff_sub(total, pre) : NULL, *r = d ? ff_add(d, g) : NULL;
    ff_tensor_release(total);
    ff_tensor_release(pre);
    ff_tensor_release(d);
    return r;
}

/* ip: [0] op, [1] axis (normalized, 0 for 0-d). saved: [0] y (cumprod). */
static ff_status scan_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    int op = (int)n->ip[0], axis = (int)n->ip[1];
    const ff_tensor *x = n->inputs[0];
    if (x->layout.ndim == 0) { /* one element: cumsum is the identity, cumprod too */
        gi[0] = ff_tensor_retain((ff_tensor *)g);
        return FF_OK;
    }
    if (op == 0) {
        gi[0] = reverse_cumsum(g, axis, n->name);
        return gi[0] ? FF_OK : ff_last_status();
    }
    const ff_tensor *ys = ff_node_saved(n, 0);
    if (!ys) return ff_last_status();
    const char *fn = n->name;
    ff_expr e = {0};
    /* under create_graph y must carry its dependence on x: recompute it with history */
    ff_tensor *y = FF_EX(&e, ff_grad_enabled() ? scan(1, x, axis, fn) : ff_tensor_retain((ff_tensor *)ys));
    ff_tensor *zero = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, x, 0.0));
    ff_tensor *nz = FF_EX(&e, scan(0, zero, axis, fn)); /* zeros so far (i64) */
    ff_tensor *once = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, nz, 1.0));
    ff_tensor *first = FF_EX(&e, ff_logical_and(zero, once)); /* the line's first zero */
    ff_tensor *one = FF_EX(&e, ff_op_scalar_like(x, 1.0, x->dtype));
    ff_tensor *safe = FF_EX(&e, ff_where(zero, one, x));
    ff_tensor *gy = FF_EX(&e, ff_mul(g, y));
    ff_tensor *rc = FF_EX(&e, reverse_cumsum(gy, axis, fn));
    ff_tensor *away = FF_EX(&e, ff_div(rc, safe));
    ff_tensor *x1 = FF_EX(&e, ff_where(first, one, x));
    ff_tensor *y1 = FF_EX(&e, scan(1, x1, axis, fn));
    ff_tensor *gy1 = FF_EX(&e, ff_mul(g, y1));
    ff_tensor *at = FF_EX(&e, reverse_cumsum(gy1, axis, fn));
    gi[0] = ff_expr_result(&e, FF_EX(&e, ff_where(first, at, away)));
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

static ff_tensor *scan(int op, const ff_tensor *x, int axis, const char *fn)
{
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int nd = x->layout.ndim, ax = 0;
    if (nd == 0 ? (axis != 0 && axis != -1) : ff_layout_normalize_axis(axis, nd, &ax, fn) != FF_OK)
        return nd == 0 ? (ff_error(FF_ERR_INVALID, "%s: axis %d out of range for a 0-d tensor", fn, axis), NULL) : NULL;
    ff_dtype dt = ff_dtype_is_float(x->dtype) ? x->dtype : FF_I64; /* PyTorch: integers and bool -> i64 */
    ff_tensor *src = dt == x->dtype ? ff_tensor_retain((ff_tensor *)x) : ff_astype(x, dt);
    if (!src) return NULL;
    ff_tensor *r = ff_tensor_new(src->storage->backend, nd, x->layout.shape, dt, fn);
    ff_status st = r ? ff_kernel_scan(op, r, src, ax, fn) : ff_last_status();
    ff_tensor_release(src);
    if (st) {
        ff_tensor_release(r);
        return NULL;
    }
    if (!ff_dtype_is_float(dt)) return r; /* integers: no gradient */
    const ff_tensor *in[1] = {x}, *save[1] = {op ? r : NULL};
    ff_node *node = ff_op_record_node(&r, op ? "cumprod" : "cumsum", scan_backward, 1, in, op ? 1 : 0, save);
    if (node) {
        node->ip[0] = op, node->ip[1] = ax;
        node->nip = 2;
    }
    return r;
}

ff_tensor *ff_cumsum(const ff_tensor *x, int axis) { return scan(0, x, axis, "ff_cumsum"); }
ff_tensor *ff_cumprod(const ff_tensor *x, int axis) { return scan(1, x, axis, "ff_cumprod"); }
