/* Activations with a parameter, composed from backend kernels in one C call with their
 * own gradient: the Python front end's composition of the same kernels cost four
 * Python-level ops, a clone and a where-gradient per call, three times the kernels' time
 * on a DCGAN step (12 LeakyReLUs per step). */
#include "expr.h"

/* PyTorch's leaky_relu_backward: g where x > 0, g * slope elsewhere (x = 0 and NaN
 * included). Saved: the mask x > 0 (bool, a quarter of x's bytes in f32). */
static ff_status leaky_relu_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *pos = ff_node_saved(n, 0);
    if (!pos) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *gs = FF_EX(&e, ff_mul_scalar(g, n->dp[0]));
    gi[0] = ff_expr_result(&e, FF_EX(&e, ff_where(pos, g, gs)));
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    return st;
}

ff_tensor *ff_leaky_relu(const ff_tensor *x, double negative_slope)
{
    static const char fn[] = "ff_leaky_relu";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (!ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: expected a real floating dtype, got %s (PyTorch has no integer or "
                        "complex leaky_relu)", fn, ff_dtype_name(x->dtype)), NULL;
    bool prev = ff_set_grad_enabled(false); /* the forward is a composition; the node is the gradient */
    ff_expr e = {0};
    ff_tensor *pos = FF_EX(&e, ff_binary_scalar(FF_BINARY_GT, x, 0.0));
    ff_tensor *neg = FF_EX(&e, ff_mul_scalar(x, negative_slope));
    ff_tensor *out = ff_expr_result(&e, FF_EX(&e, ff_where(pos, x, neg)));
    ff_set_grad_enabled(prev);
    if (out) {
        const ff_tensor *save = pos;
        ff_node *node = ff_op_record_node(&out, "leaky_relu", leaky_relu_backward, 1, &x, 1, &save);
        if (node) node->dp[0] = negative_slope;
    }
    ff_expr_free(&e);
    return out;
}
