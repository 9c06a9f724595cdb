/* Max and average pooling over 1-3 axes with PyTorch's options (include/ff/pool.h):
 * ceil_mode, dilation, count_include_pad, divisor_override, return_indices. Options the
 * pool2d entry knows (2-D or 1-D, no dilation, floor mode, padding counted, no indices;
 * ceil mode where it adds no window, or for max where the input padded with -inf makes it
 * floor mode) go to ff_max_pool2d / ff_avg_pool2d and through it the entry; the rest is
 * composed:
 * x padded (-inf for max, 0 for avg), each axis's window elements taken by index_select,
 * the window moved to the last axis and reduced (max at PyTorch's index, or sum over a
 * per-window divisor). Differentiable twice on every backend. */
#include <math.h>
#include <stdlib.h>

#include "ff/pool.h"
#include "ops_impl.h"

typedef struct axis_plan {
    int64_t in, out, k, s, p, d, right; /* right: padding added after (ceil mode may need more) */
} axis_plan;

static ff_status plan_axes(const ff_tensor *x, int nd, const ff_pool_options *o, bool is_max, axis_plan *ax,
                           const char *fn)
{
    if (!x || !o) return ff_error(FF_ERR_INVALID, "%s: x and the options must not be NULL", fn);
    if (nd < 1 || nd > 3) return ff_error(FF_ERR_INVALID, "%s: nd must be 1, 2 or 3, got %d", fn, nd);
    int r = x->layout.ndim;
    if (r != nd + 1 && r != nd + 2)
        return ff_error(FF_ERR_INVALID, "%s: expected x of rank %d or %d (%d spatial axes), got rank %d", fn, nd + 1,
                        nd + 2, nd, r);
    if (!ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x must be floating point, got %s", fn, ff_dtype_name(x->dtype));
    if (!is_max && o->divisor_override < 0)
        return ff_error(FF_ERR_INVALID, "%s: divisor_override must be positive, got %lld", fn,
                        (long long)o->divisor_override);
    for (int d = 0; d < nd; d++) {
        axis_plan *a = &ax[d];
        *a = (axis_plan){x->layout.shape[r - nd + d], 0, o->kernel[d], o->stride[d], o->padding[d],
                         is_max ? o->dilation[d] : 1, 0};
        if (a->k < 1 || a->s < 1 || a->d < 1 || a->p < 0 || a->p > a->k / 2 || (!is_max && o->dilation[d] > 1))
            return ff_error(FF_ERR_INVALID, "%s: axis %d: kernel %lld, stride %lld, padding %lld, dilation %lld; "
                            "expected kernel, stride, dilation >= 1 (avg: dilation 1) and 0 <= padding <= kernel / 2",
                            fn, d, (long long)a->k, (long long)a->s, (long long)a->p, (long long)o->dilation[d]);
        int64_t span = a->in + 2 * a->p - a->d * (a->k - 1) - 1;
        if (span < 0)
            return ff_error(FF_ERR_INVALID, "%s: axis %d: the window (kernel %lld, dilation %lld) is larger than the "
                            "padded input (%lld)", fn, d, (long long)a->k, (long long)a->d,
                            (long long)(a->in + 2 * a->p));
        a->out = (o->ceil_mode ? (span + a->s - 1) / a->s : span / a->s) + 1;
        if (o->ceil_mode && (a->out - 1) * a->s >= a->in + a->p) a->out--;
        int64_t need = (a->out - 1) * a->s + a->d * (a->k - 1) + 1 - a->in - a->p; /* padded extent's right end */
        a->right = need > a->p ? need : a->p;
    }
    return FF_OK;
}

/* x padded and gathered: spatial axis d becomes out * k window elements. */
static ff_tensor *gather_windows(const ff_tensor *x, int nd, const axis_plan *ax, double pad_value)
{
    int r = x->layout.ndim, lead = r - nd;
    int64_t pads[2 * FF_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) pads[2 * (lead + d)] = ax[d].p, pads[2 * (lead + d) + 1] = ax[d].right;
    ff_tensor *t = ff_pad(x, pads, pad_value);
    for (int d = 0; d < nd && t; d++) {
        int64_t n = ax[d].out * ax[d].k;
        int64_t *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
        ff_tensor *it = NULL;
        if (idx) {
            for (int64_t i = 0; i < ax[d].out; i++)
                for (int64_t j = 0; j < ax[d].k; j++) idx[i * ax[d].k + j] = i * ax[d].s + j * ax[d].d;
            it = ff_from_data_on(x->storage->backend, idx, 1, &n, FF_I64);
            free(idx);
        } else {
            ff_error(FF_ERR_OOM, "out of memory");
        }
        ff_tensor *s = it ? ff_index_select(t, lead + d, it) : NULL;
        ff_tensor_release(it), ff_tensor_release(t);
        t = s;
    }
    return t;
}

/* [lead..., O1, K1, ..., Ond, Knd] -> [lead..., O1..Ond, K1 * ... * Knd]. */
static ff_tensor *windows_last(const ff_tensor *win, int lead, int nd, const axis_plan *ax)
{
    int64_t shape[FF_MAX_DIMS], kt = 1;
    int perm[FF_MAX_DIMS];
    for (int d = 0; d < lead; d++) shape[d] = win->layout.shape[d], perm[d] = d;
    for (int d = 0; d < nd; d++) {
        shape[lead + 2 * d] = ax[d].out, shape[lead + 2 * d + 1] = ax[d].k, kt *= ax[d].k;
        perm[lead + d] = lead + 2 * d, perm[lead + nd + d] = lead + 2 * d + 1;
    }
    ff_tensor *v = ff_reshape(win, lead + 2 * nd, shape);
    ff_tensor *p = v ? ff_permute(v, perm) : NULL;
    for (int d = 0; d < nd; d++) shape[lead + d] = ax[d].out;
    shape[lead + nd] = kt;
    ff_tensor *res = p ? ff_reshape(p, lead + nd + 1, shape) : NULL;
    ff_tensor_release(v), ff_tensor_release(p);
    return res;
}

/* Host tables over the output positions (and, for idx, the window elements): the flat
 * input index of each window element (-1 in the padding), or each window's divisor. */
static ff_tensor *host_table(const ff_tensor *x, int nd, const axis_plan *ax, const ff_pool_options *o, bool idx)
{
    int64_t no = 1, kt = 1, shape[4];
    for (int d = 0; d < nd; d++) no *= ax[d].out, kt *= ax[d].k, shape[d] = ax[d].out;
    shape[nd] = kt;
    int64_t per = idx ? kt : 1, n = no * per;
    void *tab = malloc((size_t)(n > 0 ? n : 1) * 8);
    if (!tab) return ff_error(FF_ERR_OOM, "out of memory"), NULL;
    for (int64_t q = 0; q < n; q++) {
        int64_t oq = q / per, kq = q % per, oi[3], ki[3], flat = 0;
        double inc = 1, real = 1;
        for (int d = nd - 1; d >= 0; d--) oi[d] = oq % ax[d].out, oq /= ax[d].out, ki[d] = kq % ax[d].k, kq /= ax[d].k;
        for (int d = 0; d < nd; d++) {
            int64_t start = oi[d] * ax[d].s - ax[d].p, pos = start + ki[d] * ax[d].d;
            if (idx) flat = flat < 0 || pos < 0 || pos >= ax[d].in ? -1 : flat * ax[d].in + pos;
            int64_t end = start + ax[d].k < ax[d].in + ax[d].p ? start + ax[d].k : ax[d].in + ax[d].p;
            inc *= (double)(end - start);
            real *= (double)((end < ax[d].in ? end : ax[d].in) - (start > 0 ? start : 0));
        }
        if (idx) ((int64_t *)tab)[q] = flat;
        else ((double *)tab)[q] = o->divisor_override > 0 ? (double)o->divisor_override : o->count_include_pad ? inc : real;
    }
    ff_tensor *t = ff_from_data_on(x->storage->backend, tab, idx ? nd + 1 : nd, shape, idx ? FF_I64 : FF_F64);
    free(tab);
    return t;
}

/* The entry's case: 1-D or 2-D, no dilation, floor mode or a ceil mode that adds no window
 * (avg: padding counted, no divisor). Max pooling whose ceil mode does add a window, one that
 * hangs over the right edge, takes it too: pool_plain pads that edge with -inf first. */
static bool plain_2d(const ff_tensor *x, int nd, const ff_pool_options *o, const axis_plan *ax, bool is_max)
{
    if (nd > 2 || x->layout.ndim != nd + 2) return false;
    for (int d = 0; d < nd; d++)
        if ((is_max && o->dilation[d] != 1) || (!is_max && ax[d].right != ax[d].p)) return false;
    return is_max || (o->count_include_pad && o->divisor_override == 0);
}

static ff_tensor *pool_plain(const ff_tensor *x, int nd, const ff_pool_options *o, const axis_plan *ax, bool is_max)
{
    int64_t k[2] = {1, o->kernel[0]}, s[2] = {1, o->stride[0]}, p[2] = {0, o->padding[0]};
    int64_t pads[2 * FF_MAX_DIMS] = {0};
    bool overhang = false;
    if (nd == 2)
        for (int d = 0; d < 2; d++) k[d] = o->kernel[d], s[d] = o->stride[d], p[d] = o->padding[d];
    for (int d = 0; d < nd; d++) {
        overhang |= ax[d].right != ax[d].p;
        pads[2 * (2 + d)] = ax[d].p, pads[2 * (2 + d) + 1] = ax[d].right;
    }
    /* ceil mode's last window past the right edge: the input padded with -inf on both sides
     * as the plan says (one copy), pooled without padding to the same out sizes */
    ff_tensor *xp = overhang ? ff_pad(x, pads, -INFINITY) : ff_tensor_retain((ff_tensor *)x);
    if (overhang) p[0] = p[1] = 0;
    ff_tensor *x4 = !xp ? NULL : nd == 2 ? ff_tensor_retain(xp) : ff_unsqueeze(xp, 2);
    ff_tensor *y4 = !x4 ? NULL : is_max ? ff_max_pool2d(x4, k[0], k[1], s[0], s[1], p[0], p[1])
                                        : ff_avg_pool2d(x4, k[0], k[1], s[0], s[1], p[0], p[1]);
    ff_tensor *y = y4 && nd == 1 ? ff_squeeze(y4, 2) : ff_tensor_retain(y4);
    ff_tensor_release(xp), ff_tensor_release(x4), ff_tensor_release(y4);
    return y;
}

ff_tensor *ff_max_pool(const ff_tensor *x, int nd, const ff_pool_options *o, ff_tensor **indices)
{
    static const char fn[] = "ff_max_pool";
    axis_plan ax[3];
    if (plan_axes(x, nd, o, true, ax, fn)) return NULL;
    if (!indices && plain_2d(x, nd, o, ax, true)) return pool_plain(x, nd, o, ax, true);
    int lead = x->layout.ndim - nd;
    ff_tensor *g = gather_windows(x, nd, ax, -INFINITY);
    ff_tensor *win = g ? windows_last(g, lead, nd, ax) : NULL, *arg = NULL;
    ff_tensor *y = win ? ff_op_max_first(win, lead + nd, indices ? &arg : NULL, fn) : NULL;
    ff_tensor_release(g), ff_tensor_release(win);
    if (y && indices) {
        ff_tensor *tab = host_table(x, nd, ax, o, true);
        ff_tensor *ix = tab ? ff_op_window_indices(tab, y, arg) : NULL;
        ff_tensor_release(tab);
        if (!ix) ff_tensor_release(y), y = NULL;
        else *indices = ix;
    }
    ff_tensor_release(arg);
    if (!y) ff_error_prefix(fn);
    return y;
}

ff_tensor *ff_avg_pool(const ff_tensor *x, int nd, const ff_pool_options *o)
{
    static const char fn[] = "ff_avg_pool";
    axis_plan ax[3];
    if (plan_axes(x, nd, o, false, ax, fn)) return NULL;
    if (plain_2d(x, nd, o, ax, false)) return pool_plain(x, nd, o, ax, false);
    int lead = x->layout.ndim - nd, last = lead + nd;
    ff_tensor *g = gather_windows(x, nd, ax, 0.0);
    ff_tensor *win = g ? windows_last(g, lead, nd, ax) : NULL;
    ff_tensor *sum = win ? ff_sum(win, 1, &last, false) : NULL;
    ff_tensor *div = sum ? host_table(x, nd, ax, o, false) : NULL;
    ff_tensor *divc = div && x->dtype != FF_F64 ? ff_astype(div, x->dtype) : ff_tensor_retain(div);
    ff_tensor *y = divc ? ff_div(sum, divc) : NULL;
    ff_tensor_release(g), ff_tensor_release(win), ff_tensor_release(sum), ff_tensor_release(div);
    ff_tensor_release(divc);
    if (!y) ff_error_prefix(fn);
    return y;
}
