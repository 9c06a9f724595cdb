/* cumsum and cumprod along one axis, on the backend's optional scan entry (the
 * reference, cpu_blas and opencl have it; a backend without it gets a clear "does not
 * support" error). As PyTorch: integer and bool inputs give i64, floats keep their dtype;
 * a 0-d tensor is one element (axis 0 or -1).
 *
 * Gradients, written with ff ops (so higher orders work), as PyTorch 1.13:
 *   cumsum:  dx = reverse cumsum of g, a real reverse scan (flip, cumsum, flip)
 *   cumprod: dx[k] = sum_{j >= k} g[j] prod_{i <= j, i != k} x[i], zeros included; an
 *            O(n) form with masks for a plain backward, an O(n^2) form without any
 *            division when the gradient itself is differentiated (create_graph).
 * A line of one element (or none) passes g through, as PyTorch. */
#include "expr.h"

static ff_tensor *scan(int op, const ff_tensor *x, int axis, const char *fn);

/* sum_{j >= i} g[j] along axis. Not total - prefix: that cancels (in f32,
 * (1e8 + 1 + 1) - (1e8 + 1) is 0, not 1) and turns an inf g into NaN (inf - inf). */
static ff_tensor *reverse_cumsum(const ff_tensor *g, int axis, const char *fn)
{
    ff_tensor *f = ff_flip(g, 1, &axis), *c = f ? scan(0, f, axis, fn) : NULL, *r = c ? ff_flip(c, 1, &axis) : NULL;
    ff_tensor_release(f);
    ff_tensor_release(c);
    return r;
}

/* cumprod's gradient for a backward that will not be differentiated (PyTorch's O(n) form),
 * with z1 a line's first zero and z2 its second (or the line's end):
 *   k < z1:  reverse cumsum of g y, divided by x[k] (nonzero there)
 *   k = z1:  sum_{z1 <= j < z2} g[j] y'[j], y' the cumprod with x[z1] read as 1
 *   k > z1:  0 (every product holds x[z1])
 * Each term is masked with where before it is summed, so an inf g[j] where y[j] is 0
 * stays out of the sums instead of making them NaN. */
static ff_tensor *cumprod_grad(const ff_tensor *x, const ff_tensor *y, const ff_tensor *g, int axis, const char *fn)
{
    ff_expr e = {0};
    ff_tensor *zero = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, x, 0.0));
    ff_tensor *nz = FF_EX(&e, scan(0, zero, axis, fn)); /* zeros so far (i64) */
    ff_tensor *before = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, nz, 0.0));
    ff_tensor *seg = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, nz, 1.0)); /* [z1, z2) */
    ff_tensor *first = FF_EX(&e, ff_logical_and(zero, seg));
    ff_tensor *one = FF_EX(&e, ff_op_scalar_like(x, 1.0, x->dtype));
    ff_tensor *nil = FF_EX(&e, ff_op_scalar_like(x, 0.0, x->dtype));
    ff_tensor *gy = FF_EX(&e, ff_where(before, FF_EX(&e, ff_mul(g, y)), nil));
    ff_tensor *rc = FF_EX(&e, reverse_cumsum(gy, axis, fn));
    ff_tensor *lead = FF_EX(&e, ff_div(rc, FF_EX(&e, ff_where(before, x, one))));
    ff_tensor *y1 = FF_EX(&e, scan(1, FF_EX(&e, ff_where(first, one, x)), axis, fn));
    ff_tensor *gy1 = FF_EX(&e, ff_where(seg, FF_EX(&e, ff_mul(g, y1)), nil));
    ff_tensor *at = FF_EX(&e, ff_sum(gy1, 1, &axis, true));
    ff_tensor *rest = FF_EX(&e, ff_where(before, lead, nil));
    ff_tensor *r = ff_expr_result(&e, FF_EX(&e, ff_where(first, at, rest)));
    ff_expr_free(&e);
    return r;
}

/* cumprod's gradient as a formula that is itself differentiable everywhere, for
 * create_graph (PyTorch switches to an O(n^2) form there too). With the axis moved last:
 *   dx[k] = sum_{j >= k} g[j] E[k] C[k, j],  E[k] = prod_{i < k} x[i] (an exclusive cumprod),
 *   C[k, j] = prod_{k < i <= j} x[i]   (the cumprod along j of x with x[i <= k] read as 1).
 * No division: the masked-division form above is right in value at zeros but not in
 * derivative (d dx[1] / dx[0] of cumprod([0, 0]) is g[1], not 0). C is an [..., n, n]
 * table, so this costs n times x's memory. */
static ff_tensor *cumprod_grad_graph(const ff_tensor *x, const ff_tensor *g, int axis, const char *fn)
{
    int nd = x->layout.ndim, last = nd - 1;
    if (nd == FF_MAX_DIMS)
        return ff_error(FF_ERR_UNSUPPORTED, "%s backward: differentiating the gradient of a %d-d cumprod needs a "
                        "%d-d table, over FF_MAX_DIMS", fn, nd, nd + 1), NULL;
    ff_backend *be = x->storage->backend;
    int64_t n = x->layout.shape[axis], line[FF_MAX_DIMS], table[FF_MAX_DIMS];
    for (int d = 0; d < nd; d++) line[d] = table[d] = x->layout.shape[d == axis ? last : d == last ? axis : d];
    table[nd] = n;
    line[last] = 1;
    ff_expr e = {0};
    ff_tensor *xt = FF_EX(&e, ff_transpose(x, axis, last));
    ff_tensor *gt = FF_EX(&e, ff_transpose(g, axis, last));
    ff_tensor *wide = FF_EX(&e, ff_broadcast_to(FF_EX(&e, ff_unsqueeze(xt, -2)), nd + 1, table)); /* [k, j]: x[j] */
    ff_tensor *ones = FF_EX(&e, ff_full_on(be, 2, (int64_t[]){n, n}, x->dtype, 1.0));
    /* triu selects (where), so a NaN or inf x[i <= k] does not reach row k's products */
    ff_tensor *xs = FF_EX(&e, ff_add(FF_EX(&e, ff_triu(wide, 1)), FF_EX(&e, ff_tril(ones, 0))));
    ff_tensor *C = FF_EX(&e, scan(1, xs, nd, fn));
    ff_tensor *shifted[2] = {FF_EX(&e, ff_full_on(be, nd, line, x->dtype, 1.0)),
                             FF_EX(&e, ff_narrow(xt, last, 0, n - 1))}; /* [1, x[0], ..., x[n-2]] */
    ff_tensor *E = FF_EX(&e, scan(1, FF_EX(&e, e.failed ? NULL : ff_concat(2, shifted, last)), last, fn));
    ff_tensor *omitted = FF_EX(&e, ff_mul(FF_EX(&e, ff_unsqueeze(E, -1)), C)); /* prod_{i <= j, i != k} x[i] */
    /* triu(., 0) keeps j >= k by selecting, so g[j] E[k] for j < k (inf * 0) stays out */
    ff_tensor *terms = FF_EX(&e, ff_triu(FF_EX(&e, ff_mul(FF_EX(&e, ff_unsqueeze(gt, -2)), omitted)), 0));
    ff_tensor *s = FF_EX(&e, ff_sum(terms, 1, &nd, false));
    ff_tensor *r = ff_expr_result(&e, FF_EX(&e, ff_transpose(s, axis, last)));
    ff_expr_free(&e);
    return r;
}

/* ip: [0] op, [1] axis (normalized, 0 for 0-d). saved: [0] y (cumprod). */
static ff_status scan_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    int op = (int)n->ip[0], axis = (int)n->ip[1];
    const ff_tensor *x = n->inputs[0];
    if (x->layout.ndim == 0 || x->layout.shape[axis] <= 1 || ff_tensor_numel(x) == 0) {
        gi[0] = ff_tensor_retain((ff_tensor *)g); /* lines of one element: both scans are the identity */
        return FF_OK;
    }
    if (op == 0) {
        gi[0] = reverse_cumsum(g, axis, n->name);
    } else if (ff_grad_enabled()) { /* create_graph: this gradient will be differentiated */
        gi[0] = cumprod_grad_graph(x, g, axis, n->name);
    } else {
        const ff_tensor *y = ff_node_saved(n, 0);
        gi[0] = y ? cumprod_grad(x, y, g, axis, n->name) : NULL;
    }
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
