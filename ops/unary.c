/* Elementwise unary ops and their gradients. Float-valued ops promote integer and
 * bool inputs to f32 (ff_dtype_to_float); neg/abs/sign/square/relu/floor/ceil/round
 * keep integer dtypes; isnan/isinf/logical_not write bool and have no gradient.
 * Gradient formulas are ff ops, so create_graph records them (higher orders). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "expr.h"

/* Public names ("ff_exp"); a node is named without the prefix ("exp"). */
static const char *const unary_names[FF_UNARY_COUNT] = {
    "ff_neg", "ff_abs", "ff_sign", "ff_exp", "ff_log", "ff_log1p", "ff_expm1",
    "ff_sqrt", "ff_rsqrt", "ff_square", "ff_reciprocal", "ff_sin", "ff_cos", "ff_tanh",
    "ff_sigmoid", "ff_relu", "ff_gelu_tanh", "ff_gelu", "ff_silu", "ff_softplus", "ff_floor",
    "ff_ceil", "ff_round", "ff_isnan", "ff_isinf", "ff_logical_not", "ff_erf", "ff_bitwise_not",
    "ff_atan", "ff_asin", "ff_acos", "ff_erfinv", "ff_lgamma", "ff_digamma", "ff_trigamma",
};

static bool writes_bool(ff_unary_op op)
{
    return op == FF_UNARY_ISNAN || op == FF_UNARY_ISINF || op == FF_UNARY_LOGICAL_NOT;
}

/* Ops whose result keeps an integer input's dtype (PyTorch does the same). */
static bool keeps_dtype(ff_unary_op op)
{
    switch (op) {
    case FF_UNARY_NEG: case FF_UNARY_ABS: case FF_UNARY_SIGN: case FF_UNARY_SQUARE: case FF_UNARY_RELU:
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND: case FF_UNARY_BITWISE_NOT:
        return true;
    default:
        return writes_bool(op);
    }
}

/* Ops whose formula uses the output (saved as slot 1). */
static bool uses_output(ff_unary_op op)
{
    switch (op) {
    case FF_UNARY_EXP: case FF_UNARY_EXPM1: case FF_UNARY_SQRT: case FF_UNARY_RSQRT: case FF_UNARY_RECIPROCAL:
    case FF_UNARY_TANH: case FF_UNARY_SIGMOID: case FF_UNARY_ERFINV:
        return true;
    default:
        return false;
    }
}

/* Ops that save their output: those whose formula uses it, and relu, whose formula reads
 * its input's sign but which PyTorch saves by its result: so a write into a relu's result
 * (relu_, then another in-place op) fails the backward pass here as it does there. */
static bool saves_output(ff_unary_op op) { return uses_output(op) || op == FF_UNARY_RELU; }

/* ---- gradients --------------------------------------------------------------- */
#define SQRT_2_OVER_PI 0.7978845608028654 /* sqrt(2 / pi) */
#define INV_SQRT_2PI 0.3989422804014327   /* 1 / sqrt(2 pi) */
#define INV_SQRT_2 0.7071067811865476
#define TWO_OVER_SQRT_PI 1.1283791670955126
#define GELU_C 0.044715
#define SQRT_PI_OVER_2 0.8862269254527580

/* The op's output: the saved one, or recomputed from x (which keeps its history)
 * while the backward pass is itself recorded, since the saved output is detached. */
static ff_tensor *node_output(ff_expr *e, ff_node *n, ff_unary_op op, const ff_tensor *x)
{
    const ff_tensor *y = ff_node_saved(n, 1);
    if (!y) {
        e->failed = true;
        return NULL;
    }
    if (ff_grad_enabled()) return FF_EX(e, ff_unary(op, x));
    return FF_EX(e, ff_tensor_retain((ff_tensor *)y));
}

/* d(op)/dx as a tensor (the local derivative), or NULL on failure / zero gradient. */
static ff_tensor *local_derivative(ff_expr *e, ff_node *n, ff_unary_op op, const ff_tensor *x)
{
    ff_tensor *y = uses_output(op) ? node_output(e, n, op, x) : NULL, *t, *u;
    switch (op) {
    case FF_UNARY_ABS: { /* sign(x), with 0 at NaN as well as at 0 (PyTorch's sgn) */
        ff_tensor *pos = FF_EX(e, ff_binary_scalar(FF_BINARY_GT, x, 0.0));
        ff_tensor *neg = FF_EX(e, ff_binary_scalar(FF_BINARY_LT, x, 0.0));
        pos = FF_EX(e, ff_astype(pos, x->dtype));
        neg = FF_EX(e, ff_astype(neg, x->dtype));
        return FF_EX(e, ff_sub(pos, neg));
    }
    case FF_UNARY_EXP: return y;
    case FF_UNARY_LOG: return FF_EX(e, ff_reciprocal(x));
    case FF_UNARY_LOG1P: t = FF_EX(e, ff_add_scalar(x, 1.0)); return FF_EX(e, ff_reciprocal(t));
    case FF_UNARY_EXPM1: return FF_EX(e, ff_add_scalar(y, 1.0));
    case FF_UNARY_SQRT: t = FF_EX(e, ff_reciprocal(y)); return FF_EX(e, ff_mul_scalar(t, 0.5));
    case FF_UNARY_RSQRT: /* -x^(-3/2) / 2 = -y^3 / 2 */
        t = FF_EX(e, ff_pow_scalar(y, 3.0));
        return FF_EX(e, ff_mul_scalar(t, -0.5));
    case FF_UNARY_SQUARE: return FF_EX(e, ff_mul_scalar(x, 2.0));
    case FF_UNARY_RECIPROCAL: t = FF_EX(e, ff_square(y)); return FF_EX(e, ff_neg(t));
    case FF_UNARY_SIN: return FF_EX(e, ff_cos(x));
    case FF_UNARY_COS: t = FF_EX(e, ff_sin(x)); return FF_EX(e, ff_neg(t));
    case FF_UNARY_TANH: t = FF_EX(e, ff_square(y)); return FF_EX(e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, t));
    case FF_UNARY_SIGMOID: t = FF_EX(e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, y)); return FF_EX(e, ff_mul(y, t));
    case FF_UNARY_GELU_ERF: { /* Phi(x) + x phi(x) */
        ff_tensor *phi_cdf = FF_EX(e, ff_mul_scalar(x, INV_SQRT_2));
        phi_cdf = FF_EX(e, ff_erf(phi_cdf));
        phi_cdf = FF_EX(e, ff_add_scalar(phi_cdf, 1.0));
        phi_cdf = FF_EX(e, ff_mul_scalar(phi_cdf, 0.5));
        t = FF_EX(e, ff_square(x));
        t = FF_EX(e, ff_mul_scalar(t, -0.5));
        t = FF_EX(e, ff_exp(t));
        t = FF_EX(e, ff_mul_scalar(t, INV_SQRT_2PI));
        t = FF_EX(e, ff_mul(x, t));
        return FF_EX(e, ff_add(phi_cdf, t));
    }
    case FF_UNARY_GELU_TANH: { /* 0.5 (1 + th) + 0.5 x (1 - th^2) c (1 + 3 k x^2), th = tanh(c (x + k x^3)) */
        ff_tensor *x2 = FF_EX(e, ff_square(x));
        u = FF_EX(e, ff_mul_scalar(x2, GELU_C));
        u = FF_EX(e, ff_add_scalar(u, 1.0));
        u = FF_EX(e, ff_mul(x, u));
        u = FF_EX(e, ff_mul_scalar(u, SQRT_2_OVER_PI));
        ff_tensor *th = FF_EX(e, ff_tanh(u));
        ff_tensor *a = FF_EX(e, ff_add_scalar(th, 1.0));
        a = FF_EX(e, ff_mul_scalar(a, 0.5));
        t = FF_EX(e, ff_square(th));
        t = FF_EX(e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, t));
        u = FF_EX(e, ff_mul_scalar(x2, 3.0 * GELU_C));
        u = FF_EX(e, ff_add_scalar(u, 1.0));
        t = FF_EX(e, ff_mul(t, u));
        t = FF_EX(e, ff_mul(t, x));
        t = FF_EX(e, ff_mul_scalar(t, 0.5 * SQRT_2_OVER_PI));
        return FF_EX(e, ff_add(a, t));
    }
    case FF_UNARY_SILU: { /* s (1 + x (1 - s)) */
        ff_tensor *s = FF_EX(e, ff_sigmoid(x));
        t = FF_EX(e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, s));
        t = FF_EX(e, ff_mul(x, t));
        t = FF_EX(e, ff_add_scalar(t, 1.0));
        return FF_EX(e, ff_mul(s, t));
    }
    case FF_UNARY_SOFTPLUS: return FF_EX(e, ff_sigmoid(x));
    case FF_UNARY_ERF: /* 2/sqrt(pi) exp(-x^2) */
        t = FF_EX(e, ff_square(x));
        t = FF_EX(e, ff_neg(t));
        t = FF_EX(e, ff_exp(t));
        return FF_EX(e, ff_mul_scalar(t, TWO_OVER_SQRT_PI));
    case FF_UNARY_ATAN: /* 1 / (1 + x^2) */
        t = FF_EX(e, ff_square(x));
        t = FF_EX(e, ff_add_scalar(t, 1.0));
        return FF_EX(e, ff_reciprocal(t));
    case FF_UNARY_ASIN: case FF_UNARY_ACOS: /* +-1 / sqrt(1 - x^2): inf at +-1, NaN outside, as PyTorch */
        t = FF_EX(e, ff_square(x));
        t = FF_EX(e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, t));
        t = FF_EX(e, ff_rsqrt(t));
        return op == FF_UNARY_ASIN ? t : FF_EX(e, ff_neg(t));
    case FF_UNARY_ERFINV: /* sqrt(pi)/2 exp(y^2) */
        t = FF_EX(e, ff_square(y));
        t = FF_EX(e, ff_exp(t));
        return FF_EX(e, ff_mul_scalar(t, SQRT_PI_OVER_2));
    case FF_UNARY_LGAMMA: return FF_EX(e, ff_digamma(x));
    case FF_UNARY_DIGAMMA: return FF_EX(e, ff_trigamma(x));
    case FF_UNARY_TRIGAMMA: /* polygamma(2, x): not implemented, so said rather than a wrong zero */
        ff_error(FF_ERR_UNSUPPORTED, "ff_trigamma backward: the second derivative of digamma (polygamma(2, x)) "
                                     "is not supported");
        e->failed = true;
        return NULL;
    default: return NULL;
    }
}

static ff_status unary_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    ff_unary_op op = (ff_unary_op)n->ip[0];
    /* An op whose formula needs only its output reads (and so version-checks) only that,
     * as PyTorch does: its input may be written after the op. The input is read, with its
     * history, only to recompute the output while the backward pass is recorded. */
    const ff_tensor *x = NULL;
    if (!saves_output(op) || (ff_grad_enabled() && op != FF_UNARY_RELU)) {
        x = ff_node_saved(n, 0);
        if (!x) return ff_last_status();
    }
    ff_expr e = {0};
    ff_tensor *r = NULL;
    switch (op) {
    case FF_UNARY_SIGN: case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND: /* piecewise constant */
        r = FF_EX(&e, ff_zeros_like(x));
        break;
    case FF_UNARY_NEG: r = FF_EX(&e, ff_neg(g)); break;
    case FF_UNARY_RELU: { /* 0 where x <= 0 (x == 0 included), else g (NaN included), as PyTorch;
                             * relu(x) <= 0 exactly there, so the saved result gives the mask */
        const ff_tensor *y = ff_node_saved(n, 1);
        if (!y) return ff_last_status();
        ff_tensor *off = FF_EX(&e, ff_binary_scalar(FF_BINARY_LE, y, 0.0));
        ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(g, 0.0, g->dtype));
        r = FF_EX(&e, ff_where(off, zero, g));
        break;
    }
    default: {
        ff_tensor *d = local_derivative(&e, n, op, x);
        r = FF_EX(&e, ff_mul(g, d));
        break;
    }
    }
    gi[0] = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

/* ---- forward -------------------------------------------------------------------- */
ff_tensor *ff_unary(ff_unary_op op, const ff_tensor *x)
{
    if ((unsigned)op >= FF_UNARY_COUNT) return ff_error(FF_ERR_INVALID, "ff_unary: invalid op %d", (int)op), NULL;
    const char *fn = unary_names[op];
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (op == FF_UNARY_NEG && x->dtype == FF_BOOL)
        return ff_error(FF_ERR_INVALID, "%s: negation of a bool tensor is not supported; use ff_logical_not", fn),
               NULL;
    if (op == FF_UNARY_BITWISE_NOT && ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: bitwise not takes an integer or bool tensor, got %s", fn,
                        ff_dtype_name(x->dtype)), NULL;
    if (op == FF_UNARY_BITWISE_NOT && x->dtype == FF_BOOL) op = FF_UNARY_LOGICAL_NOT; /* ~ on bool is logical */
    if (ff_dtype_is_complex(x->dtype) && op != FF_UNARY_NEG) return ff_op_complex_unary(op, x, fn);
    ff_dtype cdt = keeps_dtype(op) ? x->dtype : ff_dtype_to_float(x->dtype);
    ff_tensor *cx = ff_op_cast(x, cdt, fn);
    if (!cx) return NULL;
    ff_tensor *out = ff_tensor_new(x->storage->backend, x->layout.ndim, x->layout.shape,
                                   writes_bool(op) ? FF_BOOL : cdt, fn);
    if (out && ff_kernel_unary(op, out, cx, fn)) {
        ff_tensor_release(out);
        out = NULL;
    }
    if (out && !writes_bool(op) && ff_dtype_has_grad(cdt)) {
        const ff_tensor *save[2] = {cx, out};
        ff_node *node = ff_op_record_node(&out, unary_names[op] + 3, unary_backward, 1, &x, saves_output(op) ? 2 : 1, save);
        if (node) node->ip[0] = op;
    }
    ff_tensor_release(cx);
    return out;
}

ff_status ff_unary_out(ff_unary_op op, ff_tensor *out, const ff_tensor *x)
{
    static const char fn[] = "ff_unary_out";
    if ((unsigned)op >= FF_UNARY_COUNT) return ff_error(FF_ERR_INVALID, "%s: invalid op %d", fn, (int)op);
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn);
    if (ff_op_check_out(out, 1, &x, fn)) return ff_last_status();
    if (op == FF_UNARY_BITWISE_NOT && x->dtype == FF_BOOL) op = FF_UNARY_LOGICAL_NOT;
    if ((op == FF_UNARY_NEG && x->dtype == FF_BOOL) || (op == FF_UNARY_BITWISE_NOT && ff_dtype_is_float(x->dtype)))
        return ff_error(FF_ERR_INVALID, "%s: %s is not defined on %s", fn, unary_names[op], ff_dtype_name(x->dtype));
    ff_dtype cdt = keeps_dtype(op) ? x->dtype : ff_dtype_to_float(x->dtype), rdt = writes_bool(op) ? FF_BOOL : cdt;
    char s1[160], s2[160];
    if (out->dtype != rdt || out->layout.ndim != x->layout.ndim ||
        memcmp(out->layout.shape, x->layout.shape, sizeof(int64_t) * (size_t)x->layout.ndim))
        return ff_error(FF_ERR_INVALID, "%s: out is %s %s, %s gives %s %s", fn, ff_dtype_name(out->dtype),
                        ff_shape_str(out->layout.ndim, out->layout.shape, s1, sizeof s1), unary_names[op],
                        ff_dtype_name(rdt), ff_shape_str(x->layout.ndim, x->layout.shape, s2, sizeof s2));
    ff_tensor *cx = ff_op_cast(x, cdt, fn);
    if (!cx) return ff_last_status();
    /* the kernel may write in place only through the identical view: else a temporary */
    bool alias = cx->storage == out->storage && memcmp(&cx->layout, &out->layout, sizeof cx->layout) != 0;
    ff_status st;
    if (!alias) {
        st = ff_kernel_unary(op, out, cx, fn);
    } else {
        ff_tensor *tmp = ff_tensor_new(out->storage->backend, out->layout.ndim, out->layout.shape, rdt, fn);
        st = tmp ? ff_kernel_unary(op, tmp, cx, fn) : ff_last_status();
        if (!st) st = ff_kernel_copy(out, tmp, fn);
        ff_tensor_release(tmp);
    }
    ff_tensor_release(cx);
    return st;
}

#define UNARY_FN(name, OP) \
    ff_tensor *ff_##name(const ff_tensor *x) { return ff_unary(OP, x); }
UNARY_FN(neg, FF_UNARY_NEG)
UNARY_FN(abs, FF_UNARY_ABS)
UNARY_FN(sign, FF_UNARY_SIGN)
UNARY_FN(exp, FF_UNARY_EXP)
UNARY_FN(log, FF_UNARY_LOG)
UNARY_FN(log1p, FF_UNARY_LOG1P)
UNARY_FN(expm1, FF_UNARY_EXPM1)
UNARY_FN(sqrt, FF_UNARY_SQRT)
UNARY_FN(rsqrt, FF_UNARY_RSQRT)
UNARY_FN(square, FF_UNARY_SQUARE)
UNARY_FN(reciprocal, FF_UNARY_RECIPROCAL)
UNARY_FN(sin, FF_UNARY_SIN)
UNARY_FN(cos, FF_UNARY_COS)
UNARY_FN(tanh, FF_UNARY_TANH)
UNARY_FN(sigmoid, FF_UNARY_SIGMOID)
UNARY_FN(relu, FF_UNARY_RELU)
UNARY_FN(silu, FF_UNARY_SILU)
UNARY_FN(softplus, FF_UNARY_SOFTPLUS)
UNARY_FN(erf, FF_UNARY_ERF)
UNARY_FN(floor, FF_UNARY_FLOOR)
UNARY_FN(ceil, FF_UNARY_CEIL)
UNARY_FN(round, FF_UNARY_ROUND)
UNARY_FN(isnan, FF_UNARY_ISNAN)
UNARY_FN(isinf, FF_UNARY_ISINF)
UNARY_FN(logical_not, FF_UNARY_LOGICAL_NOT)
UNARY_FN(bitwise_not, FF_UNARY_BITWISE_NOT)
UNARY_FN(atan, FF_UNARY_ATAN)
UNARY_FN(asin, FF_UNARY_ASIN)
UNARY_FN(acos, FF_UNARY_ACOS)
UNARY_FN(erfinv, FF_UNARY_ERFINV)
UNARY_FN(lgamma, FF_UNARY_LGAMMA)
UNARY_FN(digamma, FF_UNARY_DIGAMMA)
UNARY_FN(trigamma, FF_UNARY_TRIGAMMA)

ff_tensor *ff_gelu(const ff_tensor *x, bool tanh_approx)
{
    return ff_unary(tanh_approx ? FF_UNARY_GELU_TANH : FF_UNARY_GELU_ERF, x);
}
