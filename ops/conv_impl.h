/* Shared by the convolution files: ops/conv.c (conv2d's backend entries),
 * ops/conv_nd.c (checks, the composition, ff_conv), ops/conv_transpose.c and
 * ops/conv_backward.c. */
#ifndef FF_OPS_CONV_IMPL_H
#define FF_OPS_CONV_IMPL_H

#include "ops_impl.h"

/* One convolution as the composition sees it: nd spatial dims (1 to 3), per dim the
 * stride, the padding before (lo) and after (hi) the input, negative meaning that many
 * elements cut off, the dilation; and the groups. */
typedef struct ff_conv_geom {
    int nd;
    int64_t stride[3], lo[3], hi[3], dil[3];
    int64_t groups;
} ff_conv_geom;

/* Checks that g's windows fit x [N, C, S...] under w [O, C / G, K...] and gives the
 * output size per spatial dim. */
ff_status ff_op_conv_geometry(const ff_tensor *x, const ff_tensor *w, const ff_conv_geom *g, int64_t *out,
                              const char *fn);
/* The reference: x padded (or cut), every kernel offset a strided slice view, stacked
 * into columns [N, G, C / G * K, L] and multiplied by w as [G, O / G, C / G * K]. Every
 * step is a differentiable op, so gradients of any order come from autograd. No bias. */
ff_tensor *ff_op_conv_compose(const ff_tensor *x, const ff_tensor *w, const ff_conv_geom *g, const char *fn);

/* One pass of the backend's conv2d entries (which: 0 forward y = F(x, w), 1 backward to
 * the input gx = I(gy, w) of spatial size out_hw, 2 backward to the weight gw = W(gy, x)
 * of kernel size out_hw) as a new tensor, recording a node whose gradients are again
 * these passes. The caller checked the geometry. */
ff_tensor *ff_op_conv2d_entry(int which, const ff_tensor *a, const ff_tensor *b, const ff_conv2d_params *p,
                              const int64_t *out_hw, const char *fn);
/* Whether x's backend takes this 2-D convolution on its entries (and FF_CONV2D is not
 * "compose"): dilation or groups other than 1 need FF_CONV2D_DILATION_GROUPS. */
bool ff_op_conv2d_entry_ok(const ff_tensor *x, const ff_tensor *w, const ff_conv2d_params *p);

/* The checks of ff_conv / ff_conv_transpose's arguments (ranks, dtypes, options, channels,
 * bias), the error naming fn. */
ff_status ff_op_conv_check(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const ff_conv_opts *o,
                           bool transposed, const char *fn);
/* The transposed convolution's output size per spatial dim, or an error when one is below 1. */
ff_status ff_op_conv_transpose_size(const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o, int64_t *out,
                                    const char *fn);
/* ff_conv (transposed: ff_conv_transpose) after the public function's name: checks,
 * autocast, the entry or the composition, bias. */
ff_tensor *ff_op_conv(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const ff_conv_opts *o,
                      bool transposed, const char *fn);
/* The transposed convolution without bias, its inputs checked (ops/conv_transpose.c). */
ff_tensor *ff_op_conv_transpose(const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o, const char *fn);

#endif /* FF_OPS_CONV_IMPL_H */
