/* Error reporting, names for messages and view checks shared by every cpu kernel. */
#include <stdio.h>

#include "cpu_impl.h"

ff_status cpu_error(void *ctx, ff_status st, const char *fmt, ...)
{
    cpu_ctx *c = ctx;
    va_list ap;
    va_start(ap, fmt);
    st = ffb_verror(c ? c->host : NULL, st, fmt, ap);
    va_end(ap);
    return st;
}

const char *cpu_unary_name(ff_unary_op op)
{
    const char *n = ffb_unary_name((int)op);
    return n ? n : "invalid unary op";
}

const char *cpu_binary_name(ff_binary_op op)
{
    const char *n = ffb_binary_name((int)op);
    return n ? n : "invalid binary op";
}

const char *cpu_reduce_name(ff_reduce_op op)
{
    const char *n = ffb_reduce_name((int)op);
    return n ? n : "invalid reduce op";
}

static ff_status check_view(void *ctx, const char *entry, const char *what, const ff_view *v, int half_ok)
{
    if (!v) return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: %s view is NULL", entry, what);
    if ((ffb_is_half(v->dtype) || ffb_is_narrow_int(v->dtype)) && !half_ok)
        return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu %s: %s has dtype %s, which the cpu backend does not compute on",
                         entry, what, cpu_dtype_name(v->dtype));
    if (!cpu_copy_dtype_ok(v->dtype))
        return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: %s has invalid dtype %d", entry, what, (int)v->dtype);
    if (v->ndim < 0 || v->ndim > FF_MAX_DIMS)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: %s has rank %d outside [0, %d]", entry, what, (int)v->ndim,
                         FF_MAX_DIMS);
    if (v->offset < 0)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: %s has negative offset %lld", entry, what,
                         (long long)v->offset);
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] < 0 || v->strides[d] < 0)
            return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: %s has shape %lld / stride %lld at dim %d (must be >= 0)",
                             entry, what, (long long)v->shape[d], (long long)v->strides[d], d);
    }
    if (!v->buf && ff_view_numel(v) > 0)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: %s has elements but no buffer", entry, what);
    return FF_OK;
}

ff_status cpu_check_view(void *ctx, const char *entry, const char *what, const ff_view *v)
{
    return check_view(ctx, entry, what, v, 0);
}

ff_status cpu_check_storage_view(void *ctx, const char *entry, const char *what, const ff_view *v)
{
    return check_view(ctx, entry, what, v, 1);
}

int cpu_same_shape(const ff_view *a, const ff_view *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

/* "[2, 3, 4]" into buf. */
static const char *shape_str(const ff_view *v, char *buf, size_t cap)
{
    size_t len = 0;
    len += (size_t)snprintf(buf + len, cap - len, "[");
    for (int d = 0; d < v->ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, d ? ", %lld" : "%lld", (long long)v->shape[d]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

ff_status cpu_shape_error(void *ctx, const char *entry, const char *what_a, const ff_view *a,
                          const char *what_b, const ff_view *b)
{
    char sa[192], sb[192];
    return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: %s shape %s does not match %s shape %s", entry, what_a,
                     shape_str(a, sa, sizeof sa), what_b, shape_str(b, sb, sizeof sb));
}
