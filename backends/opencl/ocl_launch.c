/*
 * From views to a running kernel: the kernel-side view struct, dim merging (so most
 * strided walks become one flat loop on the device) and the locked launch.
 */
#include <string.h>

#include "ocl_impl.h"

ocl_kview ocl_kview_of(const ff_view *v)
{
    ocl_kview k;
    memset(&k, 0, sizeof k);
    k.offset = v->offset;
    k.ndim = v->ndim;
    k.dtype = v->dtype;
    for (int d = 0; d < v->ndim; d++) {
        k.shape[d] = v->shape[d];
        k.strides[d] = v->strides[d];
    }
    return k;
}

void ocl_kview_merge(ocl_kview *vs, int n)
{
    int nd = vs[0].ndim, out = 0;
    /* drop size-1 dims: their index is always 0 */
    for (int d = 0; d < nd; d++) {
        if (vs[0].shape[d] == 1) continue;
        for (int i = 0; i < n; i++) {
            vs[i].shape[out] = vs[i].shape[d];
            vs[i].strides[out] = vs[i].strides[d];
        }
        out++;
    }
    nd = out;
    /* merge dim d into d + 1 when every view steps over d as one run of d + 1 */
    out = 0;
    for (int d = 0; d < nd; d++) {
        int merge = out > 0;
        for (int i = 0; i < n && merge; i++)
            merge = vs[i].strides[out - 1] == vs[i].strides[d] * vs[i].shape[d];
        for (int i = 0; i < n; i++) {
            if (merge) {
                vs[i].shape[out - 1] *= vs[i].shape[d];
                vs[i].strides[out - 1] = vs[i].strides[d];
            } else {
                vs[i].shape[out] = vs[i].shape[d];
                vs[i].strides[out] = vs[i].strides[d];
            }
        }
        if (!merge) out++;
    }
    for (int i = 0; i < n; i++) {
        vs[i].ndim = out;
        for (int d = out; d < FF_MAX_DIMS; d++) vs[i].shape[d] = vs[i].strides[d] = 0;
    }
}

size_t ocl_grid(const ocl_ctx *c, int64_t n)
{
    /* One work-item per element: measured on PoCL, a capped grid whose items loop over
     * many elements ran add_f32_16M 17x slower (145 ms vs 8.6 ms), as the loop defeats
     * PoCL's vectorization across work-items; GPUs prefer this shape too. The kernels'
     * grid-stride loops stay, so a capped grid (a device limit) would still be correct. */
    (void)c;
    return (size_t)n;
}

ff_status ocl_launch(ocl_ctx *c, const char *entry, ocl_kernel_id k, const ocl_arg *args, int nargs, size_t global,
                     size_t local)
{
    return ocl_launch_kernel(c, entry, c->kernels[k], args, nargs, global, local);
}

/* Poison mode (ocl_mem.c): the first argument that is a freed buffer, or -1. The
 * arguments of cl_mem's size that are not buffers are integers (a cl_long count),
 * which never equal a live cl_mem's address in practice. */
static int freed_arg(ocl_ctx *c, const ocl_arg *args, int nargs)
{
    for (int i = 0; c->poison && i < nargs; i++) {
        cl_mem m = NULL;
        if (args[i].size == sizeof m) memcpy(&m, args[i].ptr, sizeof m);
        if (m && ocl_mem_freed(c, m)) return i;
    }
    return -1;
}

static ff_status launch_nd(ocl_ctx *c, const char *entry, cl_kernel kern, const ocl_arg *args, int nargs, cl_uint dims,
                           size_t *global, const size_t *local)
{
    for (cl_uint d = 0; d < dims; d++)
        if (global[d] == 0) return FF_OK;
    int freed = freed_arg(c, args, nargs);
    if (freed >= 0)
        return ocl_error(c, FF_ERR_BACKEND, "opencl %s: kernel argument %d is a buffer already freed (a use after "
                         "free: scratch handed back before the kernel that uses it was enqueued; FF_POISON_FREED)",
                         entry, freed);
    cl_int err = CL_SUCCESS;
    pthread_mutex_lock(&c->launch_lock);
    for (int i = 0; i < nargs && err == CL_SUCCESS; i++) err = clSetKernelArg(kern, (cl_uint)i, args[i].size, args[i].ptr);
    if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(c->queue, kern, dims, NULL, global, local, 0, NULL, NULL);
    pthread_mutex_unlock(&c->launch_lock);
    return err == CL_SUCCESS ? FF_OK : ocl_cl_fail(c, entry, "clEnqueueNDRangeKernel", err);
}

ff_status ocl_launch_kernel(ocl_ctx *c, const char *entry, cl_kernel kern, const ocl_arg *args, int nargs,
                            size_t global, size_t local)
{
    if (local) global = (global + local - 1) / local * local;
    return launch_nd(c, entry, kern, args, nargs, 1, &global, local ? &local : NULL);
}

ff_status ocl_launch_rows(ocl_ctx *c, const char *entry, ocl_kernel_id k, const ocl_arg *args, int nargs, size_t len,
                          size_t n2, size_t n1)
{
    /* up to 1024 items a group, 64 along the row */
    size_t lx = 1, ly = 1, cap = c->max_wg < 1024 ? c->max_wg : 1024;
    while (lx < 64 && len % (lx * 2) == 0 && lx * 2 <= cap) lx *= 2;
    while (n2 % (ly * 2) == 0 && lx * ly * 2 <= cap) ly *= 2;
    size_t global[3] = {len, n2, n1}, local[3] = {lx, ly, 1};
    return launch_nd(c, entry, c->kernels[k], args, nargs, 3, global, local);
}

ocl_lead2 ocl_lead2_of(const ocl_kview *v, int lead)
{
    ocl_lead2 l = {v->offset, 1, 0, 1, 0};
    if (lead == 1) l.n2 = v->shape[0], l.s2 = v->strides[0];
    if (lead == 2) l.n1 = v->shape[0], l.s1 = v->strides[0], l.n2 = v->shape[1], l.s2 = v->strides[1];
    return l;
}
