/* Python's % and //: remainder and floor_divide, composed from the binary entries, so
 * every backend has them without a kernel of its own.
 *
 * Integers stay integers and stay exact (no trip through float): the backend's
 * integer DIV truncates toward zero and FMOD takes the dividend's sign, and both are
 * corrected by one toward -inf where the signs of the remainder and the divisor
 * differ. Floats follow PyTorch's formulas, which agree with Python's float % and //
 * (1.0 // 0.1 is 9.0, not floor(1.0 / 0.1) = 10.0). */
#include "expr.h"

/* fmod(a, b) and the mask "the remainder is non-zero and its sign differs from b's",
 * where truncation and flooring part ways. a and b already have dtype dt. */
static void trunc_parts(ff_expr *e, const ff_tensor *a, const ff_tensor *b, ff_tensor **mod, ff_tensor **fix)
{
    *mod = FF_EX(e, ff_fmod(a, b));
    ff_tensor *nz = FF_EX(e, ff_binary_scalar(FF_BINARY_NE, *mod, 0.0));
    ff_tensor *mneg = FF_EX(e, ff_binary_scalar(FF_BINARY_LT, *mod, 0.0));
    ff_tensor *bneg = FF_EX(e, ff_binary_scalar(FF_BINARY_LT, b, 0.0));
    ff_tensor *differ = FF_EX(e, ff_ne(mneg, bneg));
    *fix = FF_EX(e, ff_logical_and(nz, differ));
}

/* The promoted dtype of a and b, refusing bool (PyTorch refuses it too). */
static bool divmod_dtype(const ff_tensor *a, const ff_tensor *b, ff_dtype *dt, const char *fn)
{
    if (!a || !b) return ff_error(FF_ERR_INVALID, "%s: NULL operand", fn), false;
    *dt = ff_result_type(a, b);
    if (*dt == FF_BOOL) *dt = FF_I64;
    return true;
}

/* g to a, -g * floor(a / b) to b (PyTorch's). The floor is floor_divide's, on half
 * operands in f32 and then rounded once: the gradient composed from the pieces (fmod's
 * -trunc(a / b), plus g where the signs differ) rounded the quotient to the half dtype
 * before truncating it, and the sum of the pieces again, and could be one off. saved:
 * [0] a, [1] b in the computation dtype. */
static ff_status remainder_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *a = ff_node_saved(n, 0), *b = ff_node_saved(n, 1);
    if (!a || !b) return ff_last_status();
    ff_expr e = {0};
    if (n->needs_grad[0])
        gi[0] = ff_sum_to_shape(g, n->inputs[0]->layout.ndim, n->inputs[0]->layout.shape);
    if (n->needs_grad[1] && (!n->needs_grad[0] || gi[0])) {
        ff_dtype wide = a->dtype == FF_F16 || a->dtype == FF_BF16 ? FF_F32 : a->dtype;
        ff_tensor *wa = FF_EX(&e, ff_op_cast(a, wide, n->name)), *wb = FF_EX(&e, ff_op_cast(b, wide, n->name));
        ff_tensor *q = FF_EX(&e, ff_floor_divide(wa, wb));
        q = FF_EX(&e, ff_op_cast(q, a->dtype, n->name));
        ff_tensor *gq = FF_EX(&e, ff_neg(FF_EX(&e, ff_mul(g, q))));
        gi[1] = e.failed ? NULL : ff_sum_to_shape(gq, n->inputs[1]->layout.ndim, n->inputs[1]->layout.shape);
    }
    ff_expr_free(&e);
    bool ok = (!n->needs_grad[0] || gi[0]) && (!n->needs_grad[1] || gi[1]);
    return ok ? FF_OK : ff_last_status();
}

/* a - floor(a / b) * b: fmod(a, b) + b where the signs differ, composed without history;
 * one node stands for it (remainder_backward). */
ff_tensor *ff_remainder(const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_remainder";
    ff_dtype dt;
    if (!divmod_dtype(a, b, &dt, fn)) return NULL;
    bool prev = ff_set_grad_enabled(false);
    ff_expr e = {0};
    ff_tensor *ca = FF_EX(&e, ff_op_cast(a, dt, fn)), *cb = FF_EX(&e, ff_op_cast(b, dt, fn));
    ff_tensor *mod = NULL, *fix = NULL;
    if (!e.failed) trunc_parts(&e, ca, cb, &mod, &fix);
    ff_tensor *shifted = FF_EX(&e, ff_add(mod, cb));
    ff_tensor *r = FF_EX(&e, ff_where(fix, shifted, mod));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_set_grad_enabled(prev);
    if (out && ff_dtype_is_float(dt))
        ff_op_record_node(&out, "remainder", remainder_backward, 2, (const ff_tensor *[]){a, b}, 2,
                          (const ff_tensor *[]){ca, cb});
    ff_expr_free(&e);
    if (!out) ff_error_prefix(fn);
    return out;
}

/* Integers: trunc(a / b) - 1 where the signs differ. Floats (PyTorch's div_floor):
 * q = (a - fmod(a, b)) / b, minus 1 where the signs differ, then rounded to the nearest
 * integer below or at it; b == 0 gives a / b (+-inf or NaN); a zero result takes the
 * sign of a / b. */
static ff_tensor *floor_divide_impl(ff_expr *e, const ff_tensor *a, const ff_tensor *b, ff_dtype dt)
{
    ff_tensor *mod = NULL, *fix = NULL;
    trunc_parts(e, a, b, &mod, &fix);
    ff_tensor *fixv = FF_EX(e, ff_op_cast(fix, dt, "ff_floor_divide"));
    if (!ff_dtype_is_float(dt)) {
        ff_tensor *q = FF_EX(e, ff_op_binary_in(FF_BINARY_DIV, a, b, dt, "ff_floor_divide")); /* truncates */
        return FF_EX(e, ff_sub(q, fixv));
    }
    ff_tensor *num = FF_EX(e, ff_sub(a, mod));
    ff_tensor *div = FF_EX(e, ff_div(num, b));
    div = FF_EX(e, ff_sub(div, fixv));
    ff_tensor *fl = FF_EX(e, ff_floor(div));
    ff_tensor *frac = FF_EX(e, ff_sub(div, fl));
    ff_tensor *up = FF_EX(e, ff_binary_scalar(FF_BINARY_GT, frac, 0.5));
    ff_tensor *upv = FF_EX(e, ff_op_cast(up, dt, "ff_floor_divide"));
    fl = FF_EX(e, ff_add(fl, upv));
    ff_tensor *q = FF_EX(e, ff_div(a, b));
    ff_tensor *zero = FF_EX(e, ff_binary_scalar(FF_BINARY_EQ, div, 0.0));
    ff_tensor *signed_zero = FF_EX(e, ff_mul_scalar(q, 0.0)); /* +-0 with q's sign (NaN for NaN q) */
    fl = FF_EX(e, ff_where(zero, signed_zero, fl));
    ff_tensor *b0 = FF_EX(e, ff_binary_scalar(FF_BINARY_EQ, b, 0.0));
    return FF_EX(e, ff_where(b0, q, fl));
}

ff_tensor *ff_floor_divide(const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_floor_divide";
    ff_dtype dt;
    if (!divmod_dtype(a, b, &dt, fn)) return NULL;
    bool prev = ff_set_grad_enabled(false); /* a step function: no history, as floor */
    ff_expr e = {0};
    ff_tensor *ca = FF_EX(&e, ff_op_cast(a, dt, fn)), *cb = FF_EX(&e, ff_op_cast(b, dt, fn));
    ff_tensor *r = e.failed ? NULL : floor_divide_impl(&e, ca, cb, dt);
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    ff_set_grad_enabled(prev);
    if (!out) ff_error_prefix(fn);
    return out;
}
