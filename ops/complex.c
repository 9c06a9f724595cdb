/* Complex tensors: the views between a complex tensor and its (re, im) pairs, and the
 * complex math the kernels do not compute, composed from differentiable real ops.
 *
 * view_as_real / view_as_complex reinterpret the same storage (no copy), as PyTorch's.
 * Composing complex math from them gives PyTorch's gradient convention for free: with
 * z = x + iy and a real loss L, the chain rule through the real parts delivers
 * dL/dx + i dL/dy, which is what PyTorch's conjugate-Wirtinger .grad holds. The few ops
 * the kernels compute directly (add, sub, mul, div, sum: kernel_complex.c) carry their
 * own conjugated formulas (binary.c). */
#include <math.h>

#include "ops_impl.h"

static bool is_c(const ff_tensor *t) { return ff_dtype_is_complex(t->dtype); }

/* ---- the two reinterpreting views ------------------------------------------------- */
static ff_status view_as_real_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    (void)n;
    ff_tensor *c = ff_contiguous(g); /* the pairs adjacent, as view_as_complex needs */
    gi[0] = c ? ff_view_as_complex(c) : NULL;
    ff_tensor_release(c);
    return gi[0] ? FF_OK : ff_last_status();
}

static ff_status view_as_complex_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    (void)n;
    gi[0] = ff_view_as_real(g);
    return gi[0] ? FF_OK : ff_last_status();
}

/* A view of t's storage in another dtype: no view tracking (its region is not one of t's
 * dtype), so an in-place op on it with autograd is refused by name, as for split's views. */
static ff_tensor *reinterpret(const ff_tensor *t, const ff_layout *l, ff_dtype dt, const char *name,
                              ff_backward_fn bw)
{
    ff_tensor *r = ff_tensor_new_view(t, l);
    if (!r) return NULL;
    r->dtype = dt;
    if (t->requires_grad || t->view_of_many) r->view_of_many = name;
    if (ff_autograd_needed(1, &t) && !ff_autograd_record(r, name, bw, 1, &t)) {
        ff_tensor_release(r);
        return NULL;
    }
    return r;
}

ff_tensor *ff_view_as_real(const ff_tensor *t)
{
    static const char fn[] = "ff_view_as_real";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (!is_c(t))
        return ff_error(FF_ERR_INVALID, "%s: view_as_real is only supported for complex tensors, got %s", fn,
                        ff_dtype_name(t->dtype)), NULL;
    const ff_layout *l = &t->layout;
    if (l->ndim >= FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: rank %d leaves no room for the (re, im) dim (rank %d at most)", fn,
                        l->ndim, FF_MAX_DIMS - 1), NULL;
    ff_layout r = {.ndim = l->ndim + 1, .offset = l->offset * 2};
    for (int d = 0; d < l->ndim; d++) r.shape[d] = l->shape[d], r.strides[d] = l->strides[d] * 2;
    r.shape[l->ndim] = 2, r.strides[l->ndim] = 1;
    return reinterpret(t, &r, ff_dtype_real_of(t->dtype), "view_as_real", view_as_real_backward);
}

ff_tensor *ff_view_as_complex(const ff_tensor *t)
{
    static const char fn[] = "ff_view_as_complex";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    const ff_layout *l = &t->layout;
    if (t->dtype != FF_F32 && t->dtype != FF_F64)
        return ff_error(FF_ERR_INVALID, "%s: is only supported for float32 and float64 tensors, got %s", fn,
                        ff_dtype_name(t->dtype)), NULL;
    if (l->ndim == 0 || l->shape[l->ndim - 1] != 2)
        return ff_error(FF_ERR_INVALID, "%s: Tensor must have a last dimension of size 2, got shape %s", fn,
                        ff_shape_str(l->ndim, l->shape, (char[160]){0}, 160)), NULL;
    if (l->strides[l->ndim - 1] != 1)
        return ff_error(FF_ERR_INVALID, "%s: Tensor must have a last dimension with stride 1 (got %lld)", fn,
                        (long long)l->strides[l->ndim - 1]), NULL;
    ff_layout r = {.ndim = l->ndim - 1, .offset = l->offset / 2};
    for (int d = 0; d + 1 < l->ndim; d++) {
        if (l->strides[d] % 2 && l->shape[d] > 1)
            return ff_error(FF_ERR_INVALID, "%s: Tensor must have a stride divisible by 2 for all but last dimension "
                            "(dim %d has stride %lld)", fn, d, (long long)l->strides[d]), NULL;
        r.shape[d] = l->shape[d], r.strides[d] = l->strides[d] / 2;
    }
    if (l->offset % 2)
        return ff_error(FF_ERR_INVALID, "%s: Tensor must have a storage_offset divisible by 2 (got %lld)", fn,
                        (long long)l->offset), NULL;
    return reinterpret(t, &r, ff_dtype_complex_of(t->dtype), "view_as_complex", view_as_complex_backward);
}

/* ---- parts and construction ----------------------------------------------------- */
static ff_tensor *part(const ff_tensor *z, int which)
{
    ff_tensor *r = ff_view_as_real(z), *p = r ? ff_select(r, r->layout.ndim - 1, which) : NULL;
    ff_tensor_release(r);
    return p;
}

ff_tensor *ff_real(const ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_real: tensor is NULL"), NULL;
    return is_c(t) ? part(t, 0) : ff_tensor_retain((ff_tensor *)t); /* a real tensor is its own real part */
}

ff_tensor *ff_imag(const ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_imag: tensor is NULL"), NULL;
    if (!is_c(t))
        return ff_error(FF_ERR_INVALID, "ff_imag: imag is not implemented for tensors with non-complex dtypes (got %s)",
                        ff_dtype_name(t->dtype)), NULL;
    return part(t, 1);
}

ff_tensor *ff_complex(const ff_tensor *re, const ff_tensor *im)
{
    static const char fn[] = "ff_complex";
    if (!re || !im) return ff_error(FF_ERR_INVALID, "%s: NULL operand", fn), NULL;
    if (re->dtype != im->dtype || (re->dtype != FF_F32 && re->dtype != FF_F64))
        return ff_error(FF_ERR_INVALID, "%s: Expected both inputs to be float32 or float64 tensors of one dtype, "
                        "got %s and %s", fn, ff_dtype_name(re->dtype), ff_dtype_name(im->dtype)), NULL;
    int nd;
    int64_t shape[FF_MAX_DIMS];
    if (ff_broadcast_shapes(re->layout.ndim, re->layout.shape, im->layout.ndim, im->layout.shape, &nd, shape, fn))
        return NULL;
    ff_tensor *a = ff_broadcast_to(re, nd, shape), *b = a ? ff_broadcast_to(im, nd, shape) : NULL;
    ff_tensor *s = b ? ff_stack(2, (ff_tensor *[]){a, b}, nd) : NULL, *z = s ? ff_view_as_complex(s) : NULL;
    ff_tensor_release(a);
    ff_tensor_release(b);
    ff_tensor_release(s);
    return z;
}

ff_tensor *ff_polar(const ff_tensor *abs, const ff_tensor *angle)
{
    if (!abs || !angle) return ff_error(FF_ERR_INVALID, "ff_polar: NULL operand"), NULL;
    ff_tensor *c = ff_cos(angle), *s = c ? ff_sin(angle) : NULL;
    ff_tensor *re = s ? ff_mul(abs, c) : NULL, *im = re ? ff_mul(abs, s) : NULL;
    ff_tensor *z = im ? ff_complex(re, im) : NULL;
    ff_tensor_release(c);
    ff_tensor_release(s);
    ff_tensor_release(re);
    ff_tensor_release(im);
    return z;
}

/* ---- conj, abs, angle ------------------------------------------------------------ */
ff_tensor *ff_conj(const ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_conj: tensor is NULL"), NULL;
    if (!is_c(t)) return ff_tensor_retain((ff_tensor *)t); /* PyTorch: conj of a real tensor is itself */
    ff_tensor *re = part(t, 0), *im = re ? part(t, 1) : NULL, *nim = im ? ff_neg(im) : NULL;
    ff_tensor *z = nim ? ff_complex(re, nim) : NULL;
    ff_tensor_release(re);
    ff_tensor_release(im);
    ff_tensor_release(nim);
    return z;
}

/* |z| = m sqrt((x/m)^2 + (y/m)^2) with m = max(|x|, |y|), so that |z| past sqrt(FLT_MAX)
 * does not overflow; 0 where m is 0. Its gradient is PyTorch's g sgn(z) = g z / |z|, 0 at
 * z = 0 (the composition's would be NaN there), so it is one node of its own. */
static ff_status cabs_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *z = ff_node_saved(n, 0), *a = ff_node_saved(n, 1);
    if (!z || !a) return ff_last_status();
    ff_tensor *zero = ff_zeros_like(a), *is0 = zero ? ff_eq(a, zero) : NULL, *one = is0 ? ff_full_like(a, 1.0) : NULL;
    ff_tensor *den = one ? ff_where(is0, one, a) : NULL, *gd = den ? ff_div(g, den) : NULL;
    ff_tensor *q = gd ? ff_mul(z, gd) : NULL; /* z g / |z|: 0 at z = 0, since z is 0 there */
    gi[0] = q;
    ff_tensor_release(zero);
    ff_tensor_release(is0);
    ff_tensor_release(one);
    ff_tensor_release(den);
    ff_tensor_release(gd);
    return gi[0] ? FF_OK : ff_last_status();
}

static ff_tensor *z_abs(const ff_tensor *z)
{
    ff_tensor *out = NULL;
    FF_NO_GRAD_BEGIN
    ff_tensor *x = part(z, 0), *y = x ? part(z, 1) : NULL;
    ff_tensor *ax = y ? ff_abs(x) : NULL, *ay = ax ? ff_abs(y) : NULL, *m = ay ? ff_maximum(ax, ay) : NULL;
    ff_tensor *zero = m ? ff_zeros_like(m) : NULL, *is0 = zero ? ff_eq(m, zero) : NULL;
    ff_tensor *one = is0 ? ff_full_like(m, 1.0) : NULL, *safe = one ? ff_where(is0, one, m) : NULL;
    ff_tensor *u = safe ? ff_div(ax, safe) : NULL, *v = u ? ff_div(ay, safe) : NULL;
    ff_tensor *u2 = v ? ff_mul(u, u) : NULL, *v2 = u2 ? ff_mul(v, v) : NULL, *s = v2 ? ff_add(u2, v2) : NULL;
    ff_tensor *r = s ? ff_sqrt(s) : NULL;
    out = r ? ff_mul(m, r) : NULL;
    ff_tensor *tmp[] = {x, y, ax, ay, m, zero, is0, one, safe, u, v, u2, v2, s, r};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    FF_NO_GRAD_END
    const ff_tensor *save[2] = {z, out};
    return out ? ff_op_record(out, "abs", cabs_backward, 1, &z, 2, save) : NULL;
}

ff_tensor *ff_angle(const ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_angle: tensor is NULL"), NULL;
    if (is_c(t)) {
        ff_tensor *re = part(t, 0), *im = re ? part(t, 1) : NULL, *a = im ? ff_atan2(im, re) : NULL;
        ff_tensor_release(re);
        ff_tensor_release(im);
        return a;
    }
    /* a real number's angle: pi for the negative ones, 0 else, NaN kept (PyTorch); its
     * gradient is 0 */
    ff_tensor *f = ff_op_cast(t, ff_dtype_to_float(t->dtype), "ff_angle"), *r = NULL;
    FF_NO_GRAD_BEGIN
    ff_tensor *zero = f ? ff_zeros_like(f) : NULL, *neg = zero ? ff_lt(f, zero) : NULL;
    ff_tensor *pi = neg ? ff_full_like(f, 3.14159265358979323846) : NULL, *w = pi ? ff_where(neg, pi, zero) : NULL;
    ff_tensor *nan = w ? ff_isnan(f) : NULL;
    r = nan ? ff_where(nan, f, w) : NULL;
    ff_tensor *tmp[] = {zero, neg, pi, w, nan};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    FF_NO_GRAD_END
    ff_tensor_release(f);
    return r;
}

/* ---- complex math from real ops ---------------------------------------------------- */
/* z's parts, and the complex number (re, im) made of two new real tensors (released). */
static ff_tensor *make(ff_tensor *re, ff_tensor *im)
{
    ff_tensor *z = re && im ? ff_complex(re, im) : NULL;
    ff_tensor_release(re);
    ff_tensor_release(im);
    return z;
}

/* exp(x + iy) = e^x (cos y + i sin y) */
static ff_tensor *z_exp(const ff_tensor *x, const ff_tensor *y)
{
    ff_tensor *e = ff_exp(x), *c = e ? ff_cos(y) : NULL, *s = c ? ff_sin(y) : NULL;
    ff_tensor *z = s ? make(ff_mul(e, c), ff_mul(e, s)) : NULL;
    ff_tensor_release(e);
    ff_tensor_release(c);
    ff_tensor_release(s);
    return z;
}

/* sin(x + iy) = sin x cosh y + i cos x sinh y; cos(x + iy) = cos x cosh y - i sin x sinh y */
static ff_tensor *z_sincos(const ff_tensor *x, const ff_tensor *y, bool is_cos)
{
    ff_tensor *ep = ff_exp(y), *ny = ep ? ff_neg(y) : NULL, *em = ny ? ff_exp(ny) : NULL;
    ff_tensor *ch2 = em ? ff_add(ep, em) : NULL, *sh2 = ch2 ? ff_sub(ep, em) : NULL;
    ff_tensor *ch = sh2 ? ff_mul_scalar(ch2, 0.5) : NULL, *sh = ch ? ff_mul_scalar(sh2, 0.5) : NULL;
    ff_tensor *sx = sh ? ff_sin(x) : NULL, *cx = sx ? ff_cos(x) : NULL, *z = NULL;
    if (cx && !is_cos) {
        z = make(ff_mul(sx, ch), ff_mul(cx, sh));
    } else if (cx) {
        ff_tensor *p = ff_mul(sx, sh);
        z = p ? make(ff_mul(cx, ch), ff_neg(p)) : NULL;
        ff_tensor_release(p);
    }
    ff_tensor *tmp[] = {ep, ny, em, ch2, sh2, ch, sh, sx, cx};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    return z;
}

/* log z = log|z| + i angle(z) (the principal branch, as PyTorch) */
static ff_tensor *z_log(const ff_tensor *z)
{
    ff_tensor *a = ff_abs(z), *la = a ? ff_log(a) : NULL, *an = la ? ff_angle(z) : NULL;
    ff_tensor *r = an ? ff_complex(la, an) : NULL;
    ff_tensor_release(a);
    ff_tensor_release(la);
    ff_tensor_release(an);
    return r;
}

/* sqrt z = sqrt|z| e^(i angle(z) / 2) (principal: non-negative real part) */
static ff_tensor *z_sqrt(const ff_tensor *z)
{
    ff_tensor *a = ff_abs(z), *ra = a ? ff_sqrt(a) : NULL, *an = ra ? ff_angle(z) : NULL;
    ff_tensor *h = an ? ff_mul_scalar(an, 0.5) : NULL, *r = h ? ff_polar(ra, h) : NULL;
    ff_tensor_release(a);
    ff_tensor_release(ra);
    ff_tensor_release(an);
    ff_tensor_release(h);
    return r;
}

ff_tensor *ff_op_complex_unary(ff_unary_op op, const ff_tensor *z, const char *fn)
{
    if (op == FF_UNARY_ABS) return z_abs(z);
    if (op == FF_UNARY_LOG) return z_log(z);
    if (op == FF_UNARY_SQRT) return z_sqrt(z);
    if (op == FF_UNARY_SQUARE) return ff_mul(z, z);
    if (op == FF_UNARY_RECIPROCAL) {
        ff_tensor *one = ff_op_scalar_like(z, 1.0, z->dtype), *r = one ? ff_div(one, z) : NULL;
        ff_tensor_release(one);
        return r;
    }
    if (op != FF_UNARY_EXP && op != FF_UNARY_SIN && op != FF_UNARY_COS)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: not implemented for complex tensors (%s); complex numbers have no "
                        "order, and fusionflow composes exp, log, sqrt, sin, cos, abs, square and reciprocal", fn,
                        ff_dtype_name(z->dtype)), NULL;
    ff_tensor *x = part(z, 0), *y = x ? part(z, 1) : NULL, *r = NULL;
    if (y) r = op == FF_UNARY_EXP ? z_exp(x, y) : z_sincos(x, y, op == FF_UNARY_COS);
    ff_tensor_release(x);
    ff_tensor_release(y);
    return r;
}

/* a^b = exp(b log a), 0 where a is 0 and Re b > 0 (PyTorch's value; exp(-inf) gives it too
 * unless the angle turns it into NaN) */
ff_tensor *ff_op_complex_pow(const ff_tensor *a, const ff_tensor *b, ff_dtype cdt, const char *fn)
{
    ff_tensor *ca = ff_op_cast(a, cdt, fn), *cb = ca ? ff_op_cast(b, cdt, fn) : NULL;
    ff_tensor *la = cb ? z_log(ca) : NULL, *p = la ? ff_mul(cb, la) : NULL, *r = p ? ff_exp(p) : NULL;
    ff_tensor_release(ca);
    ff_tensor_release(cb);
    ff_tensor_release(la);
    ff_tensor_release(p);
    return r;
}

/* (Ar + i Ai)(Br + i Bi) = (Ar Br - Ai Bi) + i (Ar Bi + Ai Br): four real matmuls, each at
 * the backend's matmul speed and with its gradient */
ff_tensor *ff_op_complex_matmul(const ff_tensor *a, const ff_tensor *b, const char *fn)
{
    ff_dtype cdt = ff_dtype_promote(a->dtype, b->dtype);
    ff_tensor *ca = ff_op_cast(a, cdt, fn), *cb = ca ? ff_op_cast(b, cdt, fn) : NULL;
    ff_tensor *ar = cb ? part(ca, 0) : NULL, *ai = ar ? part(ca, 1) : NULL;
    ff_tensor *br = ai ? part(cb, 0) : NULL, *bi = br ? part(cb, 1) : NULL;
    ff_tensor *rr = bi ? ff_matmul(ar, br) : NULL, *ii = rr ? ff_matmul(ai, bi) : NULL;
    ff_tensor *ri = ii ? ff_matmul(ar, bi) : NULL, *ir = ri ? ff_matmul(ai, br) : NULL;
    ff_tensor *z = ir ? make(ff_sub(rr, ii), ff_add(ri, ir)) : NULL;
    ff_tensor *tmp[] = {ca, cb, ar, ai, br, bi, rr, ii, ri, ir};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    return z;
}
