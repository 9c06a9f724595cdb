/* conv2d's backend entries, and ff_conv2d. When the backend has the optional conv2d
 * entries (forward and both backward passes) and takes the dtype (and, for dilation or
 * groups, FF_CONV2D_DILATION_GROUPS), they compute it (cpu_blas: oneDNN); FF_CONV2D=
 * compose forces the composition of ops/conv_nd.c, which every backend has and which
 * stays the reference. ff_conv2d, ff_conv (1-3 spatial dims) and ff_conv_transpose all
 * come here for their 2-D (and 1-D, as H = 1) entry work.
 *
 * The entry path records one node per call. Its three passes are closed under
 * differentiation (each is bilinear in its two inputs, and the derivative of each is
 * another of the three), so gradients of any order stay on the entries:
 *   y  = F(x, w):   dx = I(g, w),   dw = W(g, x)
 *   gx = I(gy, w):  dgy = F(h, w),  dw = W(gy, h)
 *   gw = W(gy, x):  dgy = F(x, k),  dx = I(gy, k)      (h, k: the incoming gradients) */
#include <limits.h>
#include <stdlib.h>

#include "conv_impl.h"
#include "expr.h"

/* Checks the window geometry over x [N, C, H, W] and gives the output size. A stride
 * beyond the padded size gives one window, as the padded size itself does: *sh and *sw
 * come back no larger, so no later step sees a stride near INT64_MAX (oneDNN refuses
 * such strides; PyTorch takes them). */
static ff_status windows_geometry(const ff_tensor *x, int64_t kh, int64_t kw, int64_t *stride_h, int64_t *stride_w,
                                  int64_t ph, int64_t pw, int64_t *oh, int64_t *ow, const char *fn)
{
    int64_t sh = *stride_h, sw = *stride_w;
    if (kh < 1 || kw < 1)
        return ff_error(FF_ERR_INVALID, "%s: kernel size (%lld, %lld) must be >= 1", fn, (long long)kh,
                        (long long)kw);
    if (sh < 1 || sw < 1)
        return ff_error(FF_ERR_INVALID, "%s: stride (%lld, %lld) must be >= 1", fn, (long long)sh, (long long)sw);
    if (ph < 0 || pw < 0)
        return ff_error(FF_ERR_INVALID, "%s: padding (%lld, %lld) must be >= 0", fn, (long long)ph, (long long)pw);
    const int64_t *s = x->layout.shape;
    int64_t hp, wp, k;
    if (ff_mul_overflow_i64(ph, 2, &hp) || ff_add_overflow_i64(s[2], hp, &hp) || ff_mul_overflow_i64(pw, 2, &wp) ||
        ff_add_overflow_i64(s[3], wp, &wp) || ff_mul_overflow_i64(kh, kw, &k))
        return ff_error(FF_ERR_OVERFLOW, "%s: padded size or kernel size overflows", fn);
    if (hp < kh || wp < kw)
        return ff_error(FF_ERR_INVALID, "%s: kernel (%lld, %lld) is larger than the padded input (%lld, %lld)", fn,
                        (long long)kh, (long long)kw, (long long)hp, (long long)wp);
    if (k > INT_MAX)
        return ff_error(FF_ERR_INVALID, "%s: kernel (%lld, %lld) has too many offsets", fn, (long long)kh,
                        (long long)kw);
    *oh = (hp - kh) / sh + 1;
    *ow = (wp - kw) / sw + 1;
    *stride_h = sh < hp ? sh : hp;
    *stride_w = sw < wp ? sw : wp;
    return FF_OK;
}

ff_tensor *ff_op_windows2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                           int64_t pw, double pad_value, int64_t *oh, int64_t *ow, const char *fn)
{
    if (windows_geometry(x, kh, kw, &sh, &sw, ph, pw, oh, ow, fn)) return NULL;
    int64_t k = kh * kw; /* checked above */
    ff_tensor *xp = ph || pw ? ff_pad(x, (int64_t[]){0, 0, 0, 0, ph, ph, pw, pw}, pad_value)
                             : ff_tensor_retain((ff_tensor *)x);
    ff_tensor **views = xp ? calloc((size_t)k, sizeof *views) : NULL;
    if (xp && !views) ff_error(FF_ERR_OOM, "%s: out of memory for %lld window views", fn, (long long)k);
    bool ok = views != NULL;
    for (int64_t i = 0; ok && i < kh; i++) {
        ff_tensor *rows = ff_slice(xp, 2, i, i + sh * (*oh - 1) + 1, sh);
        for (int64_t j = 0; rows && j < kw; j++) {
            views[i * kw + j] = ff_slice(rows, 3, j, j + sw * (*ow - 1) + 1, sw);
            if (!views[i * kw + j]) break;
        }
        ok = rows && views[i * kw + kw - 1];
        ff_tensor_release(rows);
    }
    ff_tensor *out = ok ? ff_stack((int)k, views, 2) : NULL;
    for (int64_t i = 0; views && i < k; i++) ff_tensor_release(views[i]);
    free(views);
    ff_tensor_release(xp);
    if (!out) ff_error_prefix(fn);
    return out;
}

/* ---- the backend's entries -------------------------------------------------------- */
/* ip: [0..1] stride, [2..3] padding, [4..5] the spatial size of the output (H, W of x
 * for I; KH, KW for W), [6] which (0 F, 1 I, 2 W), [7..8] dilation, [9] groups.
 * saved: [0] a, [1] b. */
static ff_status conv_entry_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    if (!ff_node_saved(n, 0) || !ff_node_saved(n, 1)) return ff_last_status(); /* modified in place */
    const ff_tensor *a = n->inputs[0], *b = n->inputs[1];
    ff_conv2d_params p = {{n->ip[0], n->ip[1]}, {n->ip[2], n->ip[3]}, {n->ip[7], n->ip[8]}, n->ip[9]};
    int which = (int)n->ip[6];
    const int64_t *as = a->layout.shape, *bs = b->layout.shape;
    /* F(x, w): dx = I(g, w) sized like x, dw = W(g, x) sized like w
     * I(gy, w): dgy = F(g, w), dw = W(gy, g)
     * W(gy, x): dgy = F(x, g), dx = I(gy, g) */
    if (which == 0) {
        if (n->needs_grad[0]) gi[0] = ff_op_conv2d_entry(1, g, b, &p, as + 2, n->name);
        if (n->needs_grad[1] && (!n->needs_grad[0] || gi[0])) gi[1] = ff_op_conv2d_entry(2, g, a, &p, bs + 2, n->name);
    } else if (which == 1) {
        if (n->needs_grad[0]) gi[0] = ff_op_conv2d_entry(0, g, b, &p, NULL, n->name);
        if (n->needs_grad[1] && (!n->needs_grad[0] || gi[0])) gi[1] = ff_op_conv2d_entry(2, a, g, &p, bs + 2, n->name);
    } else {
        if (n->needs_grad[0]) gi[0] = ff_op_conv2d_entry(0, b, g, &p, NULL, n->name);
        if (n->needs_grad[1] && (!n->needs_grad[0] || gi[0]))
            gi[1] = ff_op_conv2d_entry(1, a, g, &p, b->layout.shape + 2, n->name);
    }
    bool ok = (!n->needs_grad[0] || gi[0]) && (!n->needs_grad[1] || gi[1]);
    return ok ? FF_OK : ff_last_status();
}

ff_tensor *ff_op_conv2d_entry(int which, const ff_tensor *a, const ff_tensor *b, const ff_conv2d_params *p,
                              const int64_t *out_hw, const char *fn)
{
    const int64_t *as = a->layout.shape, *bs = b->layout.shape;
    int64_t shape[4];
    if (which == 0) { /* [N, O, OH, OW] */
        shape[0] = as[0], shape[1] = bs[0];
        for (int d = 0; d < 2; d++)
            shape[2 + d] = (as[2 + d] + 2 * p->padding[d] - p->dilation[d] * (bs[2 + d] - 1) - 1) / p->stride[d] + 1;
    } else if (which == 1) { /* [N, C, H, W] */
        shape[0] = as[0], shape[1] = bs[1] * p->groups, shape[2] = out_hw[0], shape[3] = out_hw[1];
    } else { /* [O, C / G, KH, KW] */
        shape[0] = as[1], shape[1] = bs[1] / p->groups, shape[2] = out_hw[0], shape[3] = out_hw[1];
    }
    ff_backend *be = a->storage->backend;
    ff_tensor *r = ff_tensor_new(be, 4, shape, a->dtype, fn);
    if (!r) return NULL;
    ff_status st = ff_kernel_conv2d(which, r, a, b, p, fn);
    const ff_tensor *in[2] = {a, b};
    ff_node *node = NULL;
    if (!st && ff_autograd_needed(2, in)) {
        node = ff_autograd_record(r, "conv2d", conv_entry_backward, 2, in);
        if (!node || ff_node_save(node, a) || ff_node_save(node, b)) st = ff_last_status() ? ff_last_status() : FF_ERR_OOM;
        if (node) {
            node->ip[0] = p->stride[0], node->ip[1] = p->stride[1], node->ip[2] = p->padding[0];
            node->ip[3] = p->padding[1], node->ip[6] = which;
            node->ip[4] = which ? out_hw[0] : 0, node->ip[5] = which ? out_hw[1] : 0;
            node->ip[7] = p->dilation[0], node->ip[8] = p->dilation[1], node->ip[9] = p->groups;
            node->nip = 10;
        }
    }
    if (st) {
        ff_tensor_release(r);
        return NULL;
    }
    return r;
}

bool ff_op_conv2d_entry_ok(const ff_tensor *x, const ff_tensor *w, const ff_conv2d_params *p)
{
    if (w->storage->backend != x->storage->backend || !ff_op_entry_enabled(x, FF_KIND_CONV2D, 0, 2, "FF_CONV2D"))
        return false;
    bool plain = p->dilation[0] == 1 && p->dilation[1] == 1 && p->groups == 1;
    return plain || ff_backend_supports(x->storage->backend, FF_KIND_CONV2D, FF_CONV2D_DILATION_GROUPS, x->dtype);
}

ff_tensor *ff_conv2d(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, int64_t stride_h,
                     int64_t stride_w, int64_t pad_h, int64_t pad_w)
{
    ff_conv_opts o = {{stride_h, stride_w}, {pad_h, pad_w}, {1, 1}, {0, 0}, 1};
    if (x && w && (x->layout.ndim != 4 || w->layout.ndim != 4)) {
        ff_error(FF_ERR_INVALID, "ff_conv2d: expected x [N, C, H, W] and w [O, C, KH, KW], got ranks %d and %d",
                 x->layout.ndim, w->layout.ndim);
        return NULL;
    }
    return ff_op_conv(x, w, bias, &o, false, "ff_conv2d");
}
