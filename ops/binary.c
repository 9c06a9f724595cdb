/* Elementwise binary ops with NumPy broadcasting and type promotion, and their
 * gradients (reduced over broadcast axes by ff_sum_to_shape). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "expr.h"
#include "ops_impl.h"

/* Public names ("ff_add"); a node is named without the prefix ("add"). */
static const char *const binary_names[FF_BINARY_COUNT] = {
    "ff_add", "ff_sub", "ff_mul", "ff_div", "ff_pow", "ff_maximum", "ff_minimum",
    "ff_fmod", "ff_eq", "ff_ne", "ff_lt", "ff_le", "ff_gt", "ff_ge",
    "ff_logical_and", "ff_logical_or", "ff_logical_xor", "ff_bitwise_and", "ff_bitwise_or", "ff_bitwise_xor",
    "ff_atan2",
};

static bool writes_bool(ff_binary_op op) { return ff_binary_op_writes_bool(op); }

static bool is_bitwise(ff_binary_op op) { return op >= FF_BINARY_BITWISE_AND && op <= FF_BINARY_BITWISE_XOR; }

/* The dtype the kernel computes in, given the promoted input dtype. */
static ff_dtype compute_dtype(ff_binary_op op, ff_dtype promoted)
{
    if (op == FF_BINARY_DIV || op == FF_BINARY_ATAN2) return ff_dtype_to_float(promoted); /* true division */
    if (promoted == FF_BOOL && (op == FF_BINARY_SUB || op == FF_BINARY_POW || op == FF_BINARY_FMOD))
        return FF_I64; /* bool - bool is refused by PyTorch; NumPy-style integer result instead */
    return promoted;
}

/* ---- gradients ---------------------------------------------------------------- */

/* gi[k] = sum_to_shape(t) for input k; takes ownership of t (NULL -> error). */
static ff_status put(ff_node *n, int k, ff_tensor *t, ff_tensor **gi)
{
    if (!t) return ff_last_status();
    gi[k] = ff_sum_to_shape(t, n->inputs[k]->layout.ndim, n->inputs[k]->layout.shape);
    ff_tensor_release(t);
    return gi[k] ? FF_OK : ff_last_status();
}

static ff_status add_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    ff_status st = FF_OK;
    if (n->needs_grad[0]) st = put(n, 0, ff_tensor_retain((ff_tensor *)g), gi);
    if (!st && n->needs_grad[1]) st = put(n, 1, ff_tensor_retain((ff_tensor *)g), gi);
    return st;
}

static ff_status sub_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    ff_status st = FF_OK;
    if (n->needs_grad[0]) st = put(n, 0, ff_tensor_retain((ff_tensor *)g), gi);
    if (!st && n->needs_grad[1]) st = put(n, 1, ff_neg(g), gi);
    return st;
}

/* g * conj(t): complex gradients are conjugate-Wirtinger (PyTorch's .grad), so a product's
 * local derivative enters conjugated; a real t is its own conjugate. */
static ff_tensor *mul_conj(const ff_tensor *g, const ff_tensor *t)
{
    if (!ff_dtype_is_complex(t->dtype)) return ff_mul(g, t);
    ff_tensor *c = ff_conj(t), *r = c ? ff_mul(g, c) : NULL;
    ff_tensor_release(c);
    return r;
}

static ff_status mul_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *a = ff_node_saved(n, 0), *b = ff_node_saved(n, 1);
    if (!a || !b) return ff_last_status();
    ff_status st = FF_OK;
    if (n->needs_grad[0]) st = put(n, 0, mul_conj(g, b), gi);
    if (!st && n->needs_grad[1]) st = put(n, 1, mul_conj(g, a), gi);
    return st;
}

/* complex a / b: ga = g / conj(b), gb = -g conj(a / b^2) */
static ff_status complex_div_backward(ff_node *n, const ff_tensor *a, const ff_tensor *b, const ff_tensor *g,
                                      ff_tensor **gi)
{
    ff_status st = FF_OK;
    ff_tensor *cb = ff_conj(b);
    if (!cb) return ff_last_status();
    if (n->needs_grad[0]) st = put(n, 0, ff_div(g, cb), gi);
    if (!st && n->needs_grad[1]) {
        ff_tensor *q = ff_div(a, b), *q2 = q ? ff_div(q, b) : NULL, *gq = q2 ? mul_conj(g, q2) : NULL;
        st = put(n, 1, gq ? ff_neg(gq) : NULL, gi);
        ff_tensor_release(q);
        ff_tensor_release(q2);
        ff_tensor_release(gq);
    }
    ff_tensor_release(cb);
    return st;
}

static ff_status div_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *a = ff_node_saved(n, 0), *b = ff_node_saved(n, 1);
    if (!a || !b) return ff_last_status();
    if (ff_dtype_is_complex(a->dtype)) return complex_div_backward(n, a, b, g, gi);
    ff_status st = FF_OK;
    if (n->needs_grad[0]) st = put(n, 0, ff_div(g, b), gi);
    if (!st && n->needs_grad[1]) { /* -g * (a / b) / b: b * b would underflow for tiny b (PyTorch's order) */
        ff_tensor *ab = ff_div(a, b), *q = ab ? ff_div(ab, b) : NULL, *gq = q ? ff_mul(g, q) : NULL;
        st = put(n, 1, gq ? ff_neg(gq) : NULL, gi);
        ff_tensor_release(ab);
        ff_tensor_release(q);
        ff_tensor_release(gq);
    }
    return st;
}

static ff_status pow_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *a = ff_node_saved(n, 0), *b = ff_node_saved(n, 1);
    if (!a || !b) return ff_last_status();
    ff_status st = FF_OK;
    if (n->needs_grad[0]) {
        /* g * b * a^(b-1), taken as 0 where b == 0 (0 * 0^-1 would be NaN; PyTorch). ip[1]: b is
         * a number away from 0 (ff_binary_number, its value in dp[0]): no mask, and for b == 2
         * a itself instead of pow(a, 1) */
        bool number = n->ip[1], two = number && n->dp[0] == 2;
        ff_tensor *bm1 = two ? NULL : ff_sub_scalar(b, 1.0);
        ff_tensor *p = two ? ff_tensor_retain((ff_tensor *)a) : bm1 ? ff_pow(a, bm1) : NULL;
        ff_tensor *bp = p ? ff_mul(b, p) : NULL, *b0 = NULL, *z = NULL;
        if (bp && !number) {
            b0 = ff_binary_scalar(FF_BINARY_EQ, b, 0.0);
            z = b0 ? ff_zeros_like(bp) : NULL;
            ff_tensor *safe = z ? ff_where(b0, z, bp) : NULL;
            ff_tensor_release(bp);
            bp = safe;
        }
        st = put(n, 0, bp ? ff_mul(g, bp) : NULL, gi);
        ff_tensor_release(bm1);
        ff_tensor_release(p);
        ff_tensor_release(bp);
        ff_tensor_release(b0);
        ff_tensor_release(z);
    }
    if (!st && n->needs_grad[1]) { /* g * a^b * log(a), taken as 0 where a == 0 (as PyTorch) */
        ff_tensor *p = ff_pow(a, b), *la = ff_log(a), *t = p && la ? ff_mul(p, la) : NULL;
        ff_tensor *z = t ? ff_zeros_like(t) : NULL, *a0 = z ? ff_eq(a, z) : NULL;
        ff_tensor *safe = a0 ? ff_where(a0, z, t) : NULL;
        st = put(n, 1, safe ? ff_mul(g, safe) : NULL, gi);
        ff_tensor_release(p);
        ff_tensor_release(la);
        ff_tensor_release(t);
        ff_tensor_release(z);
        ff_tensor_release(a0);
        ff_tensor_release(safe);
    }
    return st;
}

/* maximum/minimum: the gradient goes to the winner; ties split it evenly (PyTorch). */
static ff_status extremum_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *a = ff_node_saved(n, 0), *b = ff_node_saved(n, 1);
    if (!a || !b) return ff_last_status();
    bool is_max = n->ip[0] == FF_BINARY_MAXIMUM;
    ff_tensor *win = is_max ? ff_gt(a, b) : ff_lt(a, b), *tie = ff_eq(a, b);
    ff_tensor *wf = win ? ff_astype(win, g->dtype) : NULL, *tf = tie ? ff_astype(tie, g->dtype) : NULL;
    ff_tensor *half = tf ? ff_mul_scalar(tf, 0.5) : NULL;
    ff_tensor *wa = wf && half ? ff_add(wf, half) : NULL; /* weight for a */
    ff_status st = wa ? FF_OK : ff_last_status();
    if (!st && n->needs_grad[0]) st = put(n, 0, ff_mul(g, wa), gi);
    if (!st && n->needs_grad[1]) { /* weight for b = 1 - wa */
        ff_tensor *wb = ff_rbinary_scalar(FF_BINARY_SUB, 1.0, wa);
        st = put(n, 1, wb ? ff_mul(g, wb) : NULL, gi);
        ff_tensor_release(wb);
    }
    ff_tensor_release(win);
    ff_tensor_release(tie);
    ff_tensor_release(wf);
    ff_tensor_release(tf);
    ff_tensor_release(half);
    ff_tensor_release(wa);
    return st;
}

/* fmod(a, b) = a - trunc(a / b) * b. On half operands the quotient is taken and truncated
 * in f32, then rounded once: a quotient rounded to the half dtype first can reach the next
 * integer (bf16 124.5 / 1.9765625 = 62.99 rounds to 63), and the gradient is one off. */
static ff_status fmod_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *a = ff_node_saved(n, 0), *b = ff_node_saved(n, 1);
    if (!a || !b) return ff_last_status();
    ff_status st = FF_OK;
    if (n->needs_grad[0]) st = put(n, 0, ff_tensor_retain((ff_tensor *)g), gi);
    if (!st && n->needs_grad[1]) {
        ff_dtype wide = a->dtype == FF_F16 || a->dtype == FF_BF16 ? FF_F32 : a->dtype;
        ff_expr e = {0};
        ff_tensor *wa = FF_EX(&e, ff_op_cast(a, wide, n->name)), *wb = FF_EX(&e, ff_op_cast(b, wide, n->name));
        ff_tensor *q = FF_EX(&e, ff_div(wa, wb)), *m = FF_EX(&e, ff_binary_scalar(FF_BINARY_FMOD, q, 1.0));
        ff_tensor *tq = FF_EX(&e, ff_sub(q, m)); /* trunc(q) = q - fmod(q, 1) */
        tq = FF_EX(&e, ff_op_cast(tq, a->dtype, n->name));
        ff_tensor *gt = FF_EX(&e, ff_mul(g, tq));
        st = e.failed ? ff_last_status() : put(n, 1, ff_neg(gt), gi);
        ff_expr_free(&e);
    }
    return st;
}

/* atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2) (NaN at the origin, as PyTorch) */
static ff_status atan2_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *a = ff_node_saved(n, 0), *b = ff_node_saved(n, 1);
    if (!a || !b) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *r2 = FF_EX(&e, ff_add(FF_EX(&e, ff_square(a)), FF_EX(&e, ff_square(b))));
    ff_tensor *gr = FF_EX(&e, ff_div(g, r2));
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    if (!st && n->needs_grad[0]) st = put(n, 0, ff_mul(gr, b), gi);
    if (!st && n->needs_grad[1]) {
        ff_tensor *t = ff_mul(gr, a);
        st = put(n, 1, t ? ff_neg(t) : NULL, gi);
        ff_tensor_release(t);
    }
    ff_expr_free(&e);
    return st;
}

static ff_backward_fn backward_for(ff_binary_op op)
{
    switch (op) {
    case FF_BINARY_ADD: return add_backward;
    case FF_BINARY_SUB: return sub_backward;
    case FF_BINARY_MUL: return mul_backward;
    case FF_BINARY_DIV: return div_backward;
    case FF_BINARY_POW: return pow_backward;
    case FF_BINARY_MAXIMUM: case FF_BINARY_MINIMUM: return extremum_backward;
    case FF_BINARY_FMOD: return fmod_backward;
    case FF_BINARY_ATAN2: return atan2_backward;
    default: return NULL; /* comparisons and logical ops have no gradient */
    }
}

static bool saves_inputs(ff_binary_op op) { return op != FF_BINARY_ADD && op != FF_BINARY_SUB; }

/* ---- forward ------------------------------------------------------------------- */
/* a op b where both operands are already in the compute dtype. */
static ff_tensor *binary_impl(ff_binary_op op, const ff_tensor *a, const ff_tensor *b, ff_dtype cdt, const char *fn)
{
    const ff_tensor *in[2] = {a, b};
    ff_backend *be = ff_common_backend(2, in, fn);
    if (!be) return NULL;
    int nd;
    int64_t shape[FF_MAX_DIMS];
    if (ff_broadcast_shapes(a->layout.ndim, a->layout.shape, b->layout.ndim, b->layout.shape, &nd, shape, fn))
        return NULL;
    if (is_bitwise(op) && (ff_dtype_is_float(cdt) || ff_dtype_is_complex(cdt)))
        return ff_error(FF_ERR_INVALID, "%s: bitwise ops take integer or bool tensors, got %s and %s", fn,
                        ff_dtype_name(a->dtype), ff_dtype_name(b->dtype)), NULL;
    bool cx = ff_dtype_is_complex(cdt);
    if (cx && op == FF_BINARY_POW) return ff_op_complex_pow(a, b, cdt, fn);
    if (cx && op != FF_BINARY_ADD && op != FF_BINARY_SUB && op != FF_BINARY_MUL && op != FF_BINARY_DIV &&
        op != FF_BINARY_EQ && op != FF_BINARY_NE)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: not implemented for complex tensors (%s and %s): complex numbers "
                        "have no order", fn, ff_dtype_name(a->dtype), ff_dtype_name(b->dtype)), NULL;
    ff_tensor *ca = ff_op_cast(a, cdt, fn), *cb = ca ? ff_op_cast(b, cdt, fn) : NULL;
    ff_tensor *out = cb ? ff_tensor_new(be, nd, shape, writes_bool(op) ? FF_BOOL : cdt, fn) : NULL;
    if (out && ff_kernel_binary(op, out, ca, cb, fn)) {
        ff_tensor_release(out);
        out = NULL;
    }
    ff_backward_fn bw = backward_for(op);
    if (out && bw && ff_dtype_has_grad(cdt)) {
        const ff_tensor *save[2] = {ca, cb};
        ff_node *node = ff_op_record_node(&out, binary_names[op] + 3, bw, 2, in, saves_inputs(op) ? 2 : 0, save);
        if (node) node->ip[0] = op;
    }
    ff_tensor_release(ca);
    ff_tensor_release(cb);
    return out;
}

ff_tensor *ff_op_binary_in(ff_binary_op op, const ff_tensor *a, const ff_tensor *b, ff_dtype cdt, const char *fn)
{
    return binary_impl(op, a, b, cdt, fn);
}

ff_tensor *ff_binary(ff_binary_op op, const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_binary";
    if ((unsigned)op >= FF_BINARY_COUNT) return ff_error(FF_ERR_INVALID, "%s: invalid op %d", fn, (int)op), NULL;
    if (!a || !b) return ff_error(FF_ERR_INVALID, "%s: NULL operand", binary_names[op]), NULL;
    return binary_impl(op, a, b, compute_dtype(op, ff_result_type(a, b)), binary_names[op]);
}

ff_status ff_binary_out(ff_binary_op op, ff_tensor *out, const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_binary_out";
    if ((unsigned)op >= FF_BINARY_COUNT) return ff_error(FF_ERR_INVALID, "%s: invalid op %d", fn, (int)op);
    if (!a || !b) return ff_error(FF_ERR_INVALID, "%s: NULL operand", fn);
    const ff_tensor *in[2] = {a, b};
    if (ff_op_check_out(out, 2, in, fn) || !ff_common_backend(2, in, fn)) return ff_last_status();
    ff_dtype cdt = compute_dtype(op, ff_result_type(a, b)), rdt = writes_bool(op) ? FF_BOOL : cdt;
    if (is_bitwise(op) && ff_dtype_is_float(cdt))
        return ff_error(FF_ERR_INVALID, "%s: bitwise ops take integer or bool tensors, got %s and %s", fn,
                        ff_dtype_name(a->dtype), ff_dtype_name(b->dtype));
    int nd;
    int64_t shape[FF_MAX_DIMS];
    char s1[160], s2[160];
    if (ff_broadcast_shapes(a->layout.ndim, a->layout.shape, b->layout.ndim, b->layout.shape, &nd, shape, fn))
        return ff_last_status();
    if (out->dtype != rdt || out->layout.ndim != nd || memcmp(out->layout.shape, shape, sizeof(int64_t) * (size_t)nd))
        return ff_error(FF_ERR_INVALID, "%s: out is %s %s, %s gives %s %s", fn, ff_dtype_name(out->dtype),
                        ff_shape_str(out->layout.ndim, out->layout.shape, s1, sizeof s1), binary_names[op],
                        ff_dtype_name(rdt), ff_shape_str(nd, shape, s2, sizeof s2));
    ff_tensor *ca = ff_op_cast(a, cdt, fn), *cb = ca ? ff_op_cast(b, cdt, fn) : NULL;
    if (!cb) {
        ff_tensor_release(ca);
        return ff_last_status();
    }
    /* out may be an operand's identical view (x = x + y); any other overlap goes through a temporary */
    bool alias = (ca->storage == out->storage && memcmp(&ca->layout, &out->layout, sizeof out->layout)) ||
                 (cb->storage == out->storage && memcmp(&cb->layout, &out->layout, sizeof out->layout));
    ff_status st;
    if (!alias) {
        st = ff_kernel_binary(op, out, ca, cb, fn);
    } else {
        ff_tensor *tmp = ff_tensor_new(out->storage->backend, nd, shape, rdt, fn);
        st = tmp ? ff_kernel_binary(op, tmp, ca, cb, fn) : ff_last_status();
        if (!st) st = ff_kernel_copy(out, tmp, fn);
        ff_tensor_release(tmp);
    }
    ff_tensor_release(ca);
    ff_tensor_release(cb);
    return st;
}

ff_tensor *ff_binary_number(ff_binary_op op, const ff_tensor *a, ff_number s)
{
    if ((unsigned)op >= FF_BINARY_COUNT) return ff_error(FF_ERR_INVALID, "ff_binary_number: invalid op %d", (int)op), NULL;
    if (!a) return ff_error(FF_ERR_INVALID, "%s: NULL operand", binary_names[op]), NULL;
    ff_dtype cdt = compute_dtype(op, ff_dtype_promote_number(a->dtype, s));
    ff_tensor *st = ff_number_tensor_on(a->storage->backend, s, cdt);
    ff_tensor *r = st ? binary_impl(op, a, st, cdt, binary_names[op]) : NULL;
    ff_tensor_release(st);
    /* x ** e for a number e far from 0 in every float dtype: its backward needs no b == 0
     * mask, and for e = 2, the commonest, no pow(a, 1) */
    double e = s.kind == FF_NUMBER_FLOAT ? s.f : (double)s.i;
    if (r && r->grad_fn && r->grad_fn->backward == pow_backward && fabs(e) >= 1e-4) {
        r->grad_fn->ip[1] = 1;
        r->grad_fn->dp[0] = e;
    }
    return r;
}

ff_tensor *ff_rbinary_number(ff_binary_op op, ff_number s, const ff_tensor *b)
{
    if ((unsigned)op >= FF_BINARY_COUNT) return ff_error(FF_ERR_INVALID, "ff_rbinary_number: invalid op %d", (int)op), NULL;
    if (!b) return ff_error(FF_ERR_INVALID, "%s: NULL operand", binary_names[op]), NULL;
    ff_dtype cdt = compute_dtype(op, ff_dtype_promote_number(b->dtype, s));
    ff_tensor *st = ff_number_tensor_on(b->storage->backend, s, cdt);
    ff_tensor *r = st ? binary_impl(op, st, b, cdt, binary_names[op]) : NULL;
    ff_tensor_release(st);
    return r;
}

ff_tensor *ff_binary_scalar(ff_binary_op op, const ff_tensor *a, double s)
{
    return ff_binary_number(op, a, ff_number_float(s));
}

ff_tensor *ff_rbinary_scalar(ff_binary_op op, double s, const ff_tensor *b)
{
    return ff_rbinary_number(op, ff_number_float(s), b);
}

#define BINARY_FN(name, OP)                                                                                   \
    ff_tensor *ff_##name(const ff_tensor *a, const ff_tensor *b) { return ff_binary(OP, a, b); }
BINARY_FN(add, FF_BINARY_ADD)
BINARY_FN(sub, FF_BINARY_SUB)
BINARY_FN(mul, FF_BINARY_MUL)
BINARY_FN(div, FF_BINARY_DIV)
BINARY_FN(pow, FF_BINARY_POW)
BINARY_FN(atan2, FF_BINARY_ATAN2)
BINARY_FN(maximum, FF_BINARY_MAXIMUM)
BINARY_FN(minimum, FF_BINARY_MINIMUM)
BINARY_FN(fmod, FF_BINARY_FMOD)
BINARY_FN(eq, FF_BINARY_EQ)
BINARY_FN(ne, FF_BINARY_NE)
BINARY_FN(lt, FF_BINARY_LT)
BINARY_FN(le, FF_BINARY_LE)
BINARY_FN(gt, FF_BINARY_GT)
BINARY_FN(ge, FF_BINARY_GE)
BINARY_FN(logical_and, FF_BINARY_LOGICAL_AND)
BINARY_FN(logical_or, FF_BINARY_LOGICAL_OR)
BINARY_FN(logical_xor, FF_BINARY_LOGICAL_XOR)
BINARY_FN(bitwise_and, FF_BINARY_BITWISE_AND)
BINARY_FN(bitwise_or, FF_BINARY_BITWISE_OR)
BINARY_FN(bitwise_xor, FF_BINARY_BITWISE_XOR)

ff_tensor *ff_add_scalar(const ff_tensor *a, double s) { return ff_binary_scalar(FF_BINARY_ADD, a, s); }
ff_tensor *ff_sub_scalar(const ff_tensor *a, double s) { return ff_binary_scalar(FF_BINARY_SUB, a, s); }
ff_tensor *ff_mul_scalar(const ff_tensor *a, double s) { return ff_binary_scalar(FF_BINARY_MUL, a, s); }
ff_tensor *ff_div_scalar(const ff_tensor *a, double s) { return ff_binary_scalar(FF_BINARY_DIV, a, s); }
ff_tensor *ff_pow_scalar(const ff_tensor *a, double s) { return ff_binary_scalar(FF_BINARY_POW, a, s); }
