/*
 * The linear entry (dst = act(a b + bias)) on host memory, shared by the in-tree CPU
 * backends: the activations they take and the argument checks. Header-only.
 */
#ifndef FF_BACKEND_LINEAR_H
#define FF_BACKEND_LINEAR_H

#include "ff_backend_checks.h"

/* The activations a Linear is followed by in practice (each also a oneDNN post-op), on
 * the float dtypes; halves where the backend computes them (its own decision). */
static inline int ffb_linear_act_ok(int act)
{
    switch (act) {
    case FF_LINEAR_NO_ACT: case FF_UNARY_RELU: case FF_UNARY_GELU_ERF: case FF_UNARY_GELU_TANH:
    case FF_UNARY_TANH: case FF_UNARY_SIGMOID: case FF_UNARY_SILU:
        return 1;
    default: return 0;
    }
}

/* The entry's argument checks, with messages "<backend> linear: ...": dst [M, N], a
 * [M, K], b [K, N], bias [M, N] with row stride 0, one dtype the backend takes. */
static inline ff_status ffb_linear_check(const ff_host_api *host, const char *backend, const ff_view *dst,
                                         const ff_view *src, int n_src, int act, int dtype_ok)
{
    if (!dst || !src || (n_src != 2 && n_src != 3))
        return ffb_fail(host, FF_ERR_INVALID, "%s linear: %d sources, expected a, b and an optional bias", backend,
                        n_src);
    ff_status st;
    for (int i = 0; i < n_src; i++)
        if ((st = ffb_check_view_as(host, backend, "linear", i == 0 ? "a" : i == 1 ? "b" : "bias", &src[i], 1)))
            return st;
    if ((st = ffb_check_view_as(host, backend, "linear", "dst", dst, 1))) return st;
    const ff_view *a = &src[0], *b = &src[1], *bias = n_src == 3 ? &src[2] : NULL;
    if (dst->ndim != 2 || a->ndim != 2 || b->ndim != 2 || a->shape[0] != dst->shape[0] ||
        b->shape[1] != dst->shape[1] || a->shape[1] != b->shape[0] ||
        (bias && (!ffb_same_shape(bias, dst) || (dst->shape[0] > 1 && bias->strides[0] != 0))))
        return ffb_fail(host, FF_ERR_INVALID,
                        "%s linear: expected dst [M, N], a [M, K], b [K, N] and bias [M, N] with row stride 0", backend);
    if (a->dtype != dst->dtype || b->dtype != dst->dtype || (bias && bias->dtype != dst->dtype) || !dtype_ok ||
        !ffb_linear_act_ok(act))
        return ffb_fail(host, FF_ERR_INVALID, "%s linear: dst %s, a %s, b %s (one dtype it takes) and act %d", backend,
                        ffb_dtype_name(dst->dtype), ffb_dtype_name(a->dtype), ffb_dtype_name(b->dtype), act);
    return FF_OK;
}

#endif /* FF_BACKEND_LINEAR_H */
