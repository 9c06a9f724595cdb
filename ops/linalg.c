/* matmul with numpy.matmul semantics, and outer.
 *
 * 1-D @ 1-D gives a 0-d dot product; a 1-D left operand is treated as [1, K] and a 1-D
 * right operand as [K, 1], the added dim removed from the result; leading (batch) dims
 * broadcast. The kernel receives three views of equal rank whose batch dims are
 * already broadcast (stride 0, no copy) and writes a contiguous [..., M, N] result. */
#include <stdio.h>
#include <string.h>

#include "expr.h"

/* The matrix layout of an operand: 1-D a -> [1, K]; 1-D b -> [K, 1]; else unchanged. */
static void as_matrix(const ff_layout *in, bool is_left, ff_layout *out)
{
    *out = *in;
    if (in->ndim != 1) return;
    out->ndim = 2;
    if (is_left) {
        out->shape[0] = 1;
        out->shape[1] = in->shape[0];
        out->strides[0] = in->shape[0] * in->strides[0];
        out->strides[1] = in->strides[0];
    } else {
        out->shape[0] = in->shape[0];
        out->shape[1] = 1;
        out->strides[0] = in->strides[0];
        out->strides[1] = 1;
    }
}

/* ---- gradient ----------------------------------------------------------------------- */
/* Reshapes t (tracked) to the matrix form of operand `like` (1-D -> 2-D). */
static ff_tensor *to_matrix(ff_expr *e, const ff_tensor *t, bool is_left)
{
    if (!t || t->layout.ndim != 1) return FF_EX(e, ff_tensor_retain((ff_tensor *)t));
    int64_t shape[2] = {is_left ? 1 : t->layout.shape[0], is_left ? t->layout.shape[0] : 1};
    return FF_EX(e, ff_reshape(t, 2, shape));
}

/* A 2-D operand laid out column-major: a transposed view, like nn's x @ W^T. */
static bool column_major(const ff_tensor *t)
{
    const ff_layout *l = &t->layout;
    return l->ndim == 2 && l->shape[0] > 1 && l->shape[1] > 1 && l->strides[0] == 1 && l->strides[1] >= l->shape[0];
}

/* ga = g @ b^T, gb = a^T @ g in the matrix forms, summed over broadcast batch dims
 * (ff_sum_to_shape) and reshaped back to the operands' own shapes. A column-major 2-D b
 * (W^T) gets gb as (g^T @ a)^T: the same sums, written in W's own layout, so the
 * gradient reaches W.grad without a transposing copy. */
static ff_status matmul_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *a = ff_node_saved(n, 0), *b = ff_node_saved(n, 1);
    if (!a || !b) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *am = to_matrix(&e, a, true), *bm = to_matrix(&e, b, false);
    /* g in the full [..., M, N] form: put back the dims removed for 1-D operands */
    int64_t gshape[FF_MAX_DIMS + 2];
    int gnd = 0;
    for (int d = 0; d < g->layout.ndim; d++) gshape[gnd++] = g->layout.shape[d];
    if (a->layout.ndim == 1) { /* M = 1 was removed just before N (or at the end) */
        int pos = b->layout.ndim == 1 ? gnd : gnd - 1;
        memmove(gshape + pos + 1, gshape + pos, sizeof(int64_t) * (size_t)(gnd - pos));
        gshape[pos] = 1;
        gnd++;
    }
    if (b->layout.ndim == 1) gshape[gnd++] = 1;
    ff_tensor *gm = FF_EX(&e, ff_reshape(g, gnd, gshape));
    for (int k = 0; k < 2; k++) {
        if (!n->needs_grad[k]) continue;
        const ff_tensor *op = k == 0 ? a : b;
        ff_tensor *other = k == 0 ? bm : am;
        ff_tensor *ot = FF_EX(&e, ff_mT(other));
        if (ff_dtype_is_complex(other->dtype)) ot = FF_EX(&e, ff_conj(ot)); /* g B^H, A^H g: Wirtinger */
        ff_tensor *full;
        bool cx = ff_dtype_is_complex(other->dtype); /* the layout shortcuts below take a unconjugated */
        if (!cx && k == 1 && bm->layout.ndim == 2 && am->layout.ndim > 2) {
            /* a batched a against one matrix b (nn.Linear on [T, N, E]): fold the batch
             * dims into rows, one GEMM, instead of a [batch, K, N] product summed after */
            int64_t rows = 1, K = am->layout.shape[am->layout.ndim - 1], N = gm->layout.shape[gm->layout.ndim - 1];
            for (int d = 0; d < am->layout.ndim - 1; d++) rows *= am->layout.shape[d];
            int64_t ash[2] = {rows, K}, gsh[2] = {rows, N};
            ff_tensor *a2 = FF_EX(&e, ff_reshape(am, 2, ash)), *g2 = FF_EX(&e, ff_reshape(gm, 2, gsh));
            if (column_major(b)) full = FF_EX(&e, ff_mT(FF_EX(&e, ff_matmul(FF_EX(&e, ff_mT(g2)), a2))));
            else full = FF_EX(&e, ff_matmul(FF_EX(&e, ff_mT(a2)), g2));
        } else if (!cx && k == 1 && column_major(b) && gm->layout.ndim == 2) {
            ff_tensor *gt = FF_EX(&e, ff_mT(gm));
            full = FF_EX(&e, ff_mT(FF_EX(&e, ff_matmul(gt, am))));
        } else {
            full = FF_EX(&e, k == 0 ? ff_matmul(gm, ot) : ff_matmul(ot, gm));
        }
        ff_tensor *om = k == 0 ? am : bm;
        ff_tensor *red = FF_EX(&e, ff_sum_to_shape(full, om ? om->layout.ndim : 0, om ? om->layout.shape : NULL));
        ff_tensor *r = FF_EX(&e, ff_reshape(red, op->layout.ndim, op->layout.shape));
        gi[k] = ff_expr_result(&e, r);
    }
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    return st;
}

/* ---- forward ------------------------------------------------------------------------ */
/* into: NULL for a new result, else the destination-passing form's out (checked here:
 * the result's shape and dtype, no storage shared with a or b; not recorded). */
/* out seen with the dims matmul_impl computes in ([batch..., m, n], with m or n of size 1
 * for a 1-D operand), after checking it is the result the product has. */
static ff_tensor *into_view(ff_tensor *out, const ff_tensor *a, const ff_tensor *b, int nbatch, const int64_t *shape,
                            ff_dtype dt, const char *fn)
{
    char s1[160], s2[160];
    int64_t want[FF_MAX_DIMS];
    int nw = 0;
    for (int d = 0; d < nbatch; d++) want[nw++] = shape[d];
    if (a->layout.ndim != 1) want[nw++] = shape[nbatch];
    if (b->layout.ndim != 1) want[nw++] = shape[nbatch + 1];
    if (out->dtype != dt || out->layout.ndim != nw || memcmp(out->layout.shape, want, sizeof(int64_t) * (size_t)nw))
        return ff_error(FF_ERR_INVALID, "%s: out is %s %s, the product is %s %s", fn, ff_dtype_name(out->dtype),
                        ff_shape_str(out->layout.ndim, out->layout.shape, s1, sizeof s1), ff_dtype_name(dt),
                        ff_shape_str(nw, want, s2, sizeof s2)), NULL;
    if (out->storage == a->storage || out->storage == b->storage)
        return ff_error(FF_ERR_INVALID, "%s: out shares memory with an operand", fn), NULL;
    ff_layout l = out->layout;
    l.ndim = nbatch + 2;
    for (int d = 0; d < nbatch; d++) l.shape[d] = out->layout.shape[d], l.strides[d] = out->layout.strides[d];
    int k = nbatch;
    l.shape[nbatch] = shape[nbatch], l.strides[nbatch] = a->layout.ndim != 1 ? out->layout.strides[k++] : 0;
    l.shape[nbatch + 1] = shape[nbatch + 1], l.strides[nbatch + 1] = b->layout.ndim != 1 ? out->layout.strides[k] : 0;
    return ff_tensor_new_view(out, &l);
}

static ff_tensor *matmul_impl(const ff_tensor *a, const ff_tensor *b, ff_dtype dt, ff_tensor *into, const char *fn)
{
    char sa[160], sb[160];
    const ff_tensor *in[2] = {a, b};
    ff_backend *be = ff_common_backend(2, in, fn);
    if (!be) return NULL;
    ff_layout la, lb;
    as_matrix(&a->layout, true, &la);
    as_matrix(&b->layout, false, &lb);
    int64_t m = la.shape[la.ndim - 2], k = la.shape[la.ndim - 1], k2 = lb.shape[lb.ndim - 2],
            nn = lb.shape[lb.ndim - 1];
    if (k != k2)
        return ff_error(FF_ERR_INVALID, "%s: shapes %s and %s are not aligned (%lld != %lld)", fn,
                        ff_shape_str(a->layout.ndim, a->layout.shape, sa, sizeof sa),
                        ff_shape_str(b->layout.ndim, b->layout.shape, sb, sizeof sb), (long long)k, (long long)k2),
               NULL;
    int nbatch;
    int64_t shape[FF_MAX_DIMS];
    if (ff_broadcast_shapes(la.ndim - 2, la.shape, lb.ndim - 2, lb.shape, &nbatch, shape, fn)) {
        ff_error_prefix(fn);
        return ff_error(FF_ERR_INVALID, "%s (batch dims of %s and %s)", ff_last_error(),
                        ff_shape_str(a->layout.ndim, a->layout.shape, sa, sizeof sa),
                        ff_shape_str(b->layout.ndim, b->layout.shape, sb, sizeof sb)), NULL;
    }
    if (nbatch + 2 > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: result rank exceeds %d", fn, FF_MAX_DIMS), NULL;
    int nd = nbatch + 2;
    int64_t ea[FF_MAX_DIMS], eb[FF_MAX_DIMS];
    memcpy(ea, shape, sizeof(int64_t) * (size_t)nbatch);
    memcpy(eb, shape, sizeof(int64_t) * (size_t)nbatch);
    ea[nbatch] = m, ea[nbatch + 1] = k;
    eb[nbatch] = k, eb[nbatch + 1] = nn;
    shape[nbatch] = m, shape[nbatch + 1] = nn;
    ff_tensor *ca = ff_op_cast(a, dt, fn), *cb = ca ? ff_op_cast(b, dt, fn) : NULL;
    ff_tensor *va = NULL, *vb = NULL, *dst = NULL, *out = NULL;
    ff_layout xa, xb;
    if (cb) {
        as_matrix(&ca->layout, true, &la);
        as_matrix(&cb->layout, false, &lb);
        if (ff_layout_expand(&la, nd, ea, &xa, fn) == FF_OK && ff_layout_expand(&lb, nd, eb, &xb, fn) == FF_OK) {
            va = ff_tensor_new_view(ca, &xa);
            vb = va ? ff_tensor_new_view(cb, &xb) : NULL;
            dst = !vb ? NULL : into ? into_view(into, a, b, nbatch, shape, dt, fn) : ff_tensor_new(be, nd, shape, dt, fn);
        }
    }
    if (dst && into) {
        ff_status st = ff_kernel_matmul(dst, va, vb, fn);
        ff_tensor_release(va);
        ff_tensor_release(vb);
        ff_tensor_release(dst);
        ff_tensor_release(ca);
        ff_tensor_release(cb);
        return st ? NULL : ff_tensor_retain(into);
    }
    if (dst && ff_kernel_matmul(dst, va, vb, fn) == FF_OK) {
        /* drop the dims added for 1-D operands: a view of the contiguous result */
        int64_t oshape[FF_MAX_DIMS];
        int ond = 0;
        for (int d = 0; d < nbatch; d++) oshape[ond++] = shape[d];
        if (a->layout.ndim != 1) oshape[ond++] = m;
        if (b->layout.ndim != 1) oshape[ond++] = nn;
        ff_layout l;
        if (ff_layout_init_contiguous(&l, ond, oshape, fn) == FF_OK) out = ff_tensor_new_view(dst, &l);
    }
    if (out) {
        const ff_tensor *save[2] = {ca, cb};
        ff_op_record_node(&out, "matmul", matmul_backward, 2, in, 2, save);
    }
    ff_tensor_release(va);
    ff_tensor_release(vb);
    ff_tensor_release(dst);
    ff_tensor_release(ca);
    ff_tensor_release(cb);
    return out;
}

ff_tensor *ff_matmul(const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_matmul";
    if (!a || !b) return ff_error(FF_ERR_INVALID, "%s: NULL operand", fn), NULL;
    if (a->layout.ndim == 0 || b->layout.ndim == 0)
        return ff_error(FF_ERR_INVALID, "%s: both operands need at least 1 dim, got ranks %d and %d (use ff_mul)", fn,
                        a->layout.ndim, b->layout.ndim), NULL;
    if (ff_dtype_is_complex(a->dtype) || ff_dtype_is_complex(b->dtype)) { /* the backend's, or four real ones */
        ff_dtype cdt = ff_dtype_promote(a->dtype, b->dtype);
        if (a->storage->backend != b->storage->backend ||
            !a->storage->backend->vt->supports(a->storage->backend->ctx, FF_KIND_MATMUL, 0, cdt))
            return ff_op_complex_matmul(a, b, fn);
    }
    ff_tensor *ac[2];
    int nac = ff_autocast_operands(FF_AUTOCAST_LOW, 2, (const ff_tensor *[]){a, b}, ac, fn);
    if (nac) {
        ff_tensor *r = nac > 0 ? ff_matmul(ac[0], ac[1]) : NULL;
        ff_autocast_release(nac, ac);
        return r;
    }
    ff_dtype dt = ff_dtype_promote(a->dtype, b->dtype);
    if (dt == FF_BOOL) return ff_error(FF_ERR_INVALID, "%s: bool operands are not supported", fn), NULL;
    return matmul_impl(a, b, dt, NULL, fn);
}

ff_status ff_matmul_out(ff_tensor *out, const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_matmul_out";
    if (!out || !a || !b) return ff_error(FF_ERR_INVALID, "%s: NULL tensor", fn);
    if (ff_op_check_out(out, 2, (const ff_tensor *[]){a, b}, fn)) return ff_last_status();
    if (a->layout.ndim == 0 || b->layout.ndim == 0)
        return ff_error(FF_ERR_INVALID, "%s: both operands need at least 1 dim, got ranks %d and %d", fn,
                        a->layout.ndim, b->layout.ndim);
    ff_dtype dt = ff_dtype_promote(a->dtype, b->dtype);
    if (dt == FF_BOOL) return ff_error(FF_ERR_INVALID, "%s: bool operands are not supported", fn);
    ff_tensor *r = matmul_impl(a, b, dt, out, fn);
    ff_tensor_release(r);
    return r ? FF_OK : ff_last_status();
}

ff_tensor *ff_outer(const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_outer";
    if (!a || !b) return ff_error(FF_ERR_INVALID, "%s: NULL operand", fn), NULL;
    if (a->layout.ndim != 1 || b->layout.ndim != 1)
        return ff_error(FF_ERR_INVALID, "%s: needs two 1-D tensors, got ranks %d and %d", fn, a->layout.ndim,
                        b->layout.ndim), NULL;
    ff_expr e = {0};
    ff_tensor *ac = FF_EX(&e, ff_reshape(a, 2, (int64_t[]){a->layout.shape[0], 1}));
    ff_tensor *br = FF_EX(&e, ff_reshape(b, 2, (int64_t[]){1, b->layout.shape[0]}));
    ff_tensor *r = FF_EX(&e, ff_mul(ac, br));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return out;
}

/* A^n for square (batched) A by repeated squaring: differentiable through matmul. n = 0
 * gives the identity (broadcast over the batch); negative n powers the inverse. */
ff_tensor *ff_matrix_power(const ff_tensor *a, int64_t n)
{
    static const char fn[] = "ff_matrix_power";
    if (!a) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int nd = a->layout.ndim;
    if (nd < 2 || a->layout.shape[nd - 1] != a->layout.shape[nd - 2])
        return ff_error(FF_ERR_INVALID, "%s: expected square matrices [..., n, n], got rank %d", fn, nd), NULL;
    if (n == 0) { /* the identity in a's shape: eye broadcast, as a new tensor */
        int64_t m = a->layout.shape[nd - 1];
        ff_tensor *eye = ff_eye(m, m, a->dtype), *r = NULL;
        ff_tensor *e1 = eye ? ff_to(eye, a->storage->backend) : NULL;
        ff_tensor *b = e1 ? ff_broadcast_to(e1, nd, a->layout.shape) : NULL;
        r = b ? ff_contiguous(b) : NULL;
        ff_tensor_release(eye), ff_tensor_release(e1), ff_tensor_release(b);
        return r;
    }
    ff_tensor *result = NULL, *base = n < 0 ? ff_inverse(a) : ff_tensor_retain((ff_tensor *)a);
    if (n < 0) n = -n; /* INT64_MIN: the loop below stops at n = 0 after 63 squarings */
    while (n > 0 && base) {
        if (n & 1) {
            ff_tensor *t = result ? ff_matmul(result, base) : ff_tensor_retain(base);
            ff_tensor_release(result);
            result = t;
            if (!result) break;
        }
        n >>= 1;
        if (n) {
            ff_tensor *sq = ff_matmul(base, base);
            ff_tensor_release(base);
            base = sq;
        }
    }
    ff_tensor_release(base);
    if (result == a) { /* n = 1: a new tensor, as PyTorch */
        ff_tensor *c = ff_clone(a);
        ff_tensor_release(result);
        result = c;
    }
    if (!result) ff_error_prefix(fn);
    return result;
}
