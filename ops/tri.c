/* tril / triu on the last two dims: x where (col - row) is on the kept side of
 * `diagonal`, else 0. The [R, C] mask is built once and broadcast over the batch
 * dims; the gradient is the same op applied to g. */
#include <stdlib.h>

#include "ops_impl.h"

static ff_tensor *tri_impl(const ff_tensor *x, int64_t diagonal, bool lower, const char *fn);

/* ip: [0] diagonal, [1] 1 for tril */
static ff_status tri_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    bool lower = n->ip[1] != 0;
    gi[0] = tri_impl(g, n->ip[0], lower, lower ? "tril_backward" : "triu_backward");
    return gi[0] ? FF_OK : ff_last_status();
}

/* The [R, C] bool mask on be: tril keeps col - row <= k, triu keeps col - row >= k. */
static ff_tensor *tri_mask(ff_backend *be, int64_t rows, int64_t cols, int64_t k, bool lower, const char *fn)
{
    int64_t n;
    if (ff_mul_overflow_i64(rows, cols, &n)) return ff_error(FF_ERR_OVERFLOW, "%s: mask size overflows", fn), NULL;
    unsigned char *m = malloc((size_t)(n ? n : 1));
    if (!m) return ff_error(FF_ERR_OOM, "%s: out of memory for a %lld x %lld mask", fn, (long long)rows,
                            (long long)cols), NULL;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            /* j - i computed without overflow: both are sizes, so it fits */
            int64_t off = j - i;
            m[i * cols + j] = lower ? off <= k : off >= k;
        }
    ff_tensor *r = ff_from_data_on(be, m, 2, (int64_t[]){rows, cols}, FF_BOOL);
    free(m);
    return r;
}

static ff_tensor *tri_impl(const ff_tensor *x, int64_t diagonal, bool lower, const char *fn)
{
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int nd = x->layout.ndim;
    if (nd < 2) return ff_error(FF_ERR_INVALID, "%s: needs rank >= 2, got %d", fn, nd), NULL;
    ff_backend *be = x->storage->backend;
    ff_tensor *mask = tri_mask(be, x->layout.shape[nd - 2], x->layout.shape[nd - 1], diagonal, lower, fn);
    ff_tensor *zero = mask ? ff_scalar_on(be, 0.0, x->dtype) : NULL;
    ff_tensor *out = zero ? ff_tensor_new(be, nd, x->layout.shape, x->dtype, fn) : NULL;
    if (out && ff_kernel_where(out, mask, x, zero, fn)) {
        ff_tensor_release(out);
        out = NULL;
    }
    ff_tensor_release(mask);
    ff_tensor_release(zero);
    if (!out || !ff_dtype_is_float(x->dtype)) return out;
    ff_node *node = ff_op_record_node(&out, lower ? "tril" : "triu", tri_backward, 1, &x, 0, NULL);
    if (node) {
        node->ip[0] = diagonal;
        node->ip[1] = lower;
        node->nip = 2;
    }
    return out;
}

ff_tensor *ff_tril(const ff_tensor *x, int64_t diagonal) { return tri_impl(x, diagonal, true, "ff_tril"); }

ff_tensor *ff_triu(const ff_tensor *x, int64_t diagonal) { return tri_impl(x, diagonal, false, "ff_triu"); }
