/*
 * The optional fused entry (ff_fused_program in backend_abi.h): the whole program in one
 * launch, one work-item per element, temporaries in registers.
 *
 * Two kernels can run a program, with the same numbers (the plain entries', bit for bit):
 *   - ff_fused (kernels/fused.cl), an interpreter in the main program: a loop over the
 *     instructions with the values in a private array. Nothing to compile, but slow per
 *     element on PoCL (relu(a * b + c) over 16M floats: about 650 ms, where the three
 *     plain launches take 70-120 ms);
 *   - ff_fused_k, generated for the program's signature (ocl_fused_gen.c): straight-line
 *     code that PoCL vectorizes (the same in about 12 ms), at the price of a compile,
 *     0.3-1 s cold on PoCL (its own cache and ours on disk, ocl_program.c, make later
 *     processes cheaper).
 * A signature (ocl_impl.h) runs on the interpreter until the elements it has processed
 * in this process reach OCL_FUSED_JIT_WORK, when the compile pays for itself (a 16M
 * program compiles at once; a graph replaying a 64K-element chain does after about 64
 * replays), then on its generated kernel. So test suites, whose thousands of programs
 * run once each on small tensors, compile nothing. FF_OPENCL_FUSED=jit generates for
 * every program (what the conformance test "conformance_opencl_fused_jit" runs),
 * FF_OPENCL_FUSED=interp never.
 *
 * The host prepares what both kernels need, so that they do no analysis per element:
 *   - a view that is the identical view of an earlier one (the ABI's only aliasing) is
 *     replaced by that one in every instruction, so a read after a write through the
 *     other value index sees the written value, as op by op;
 *   - the views in use become slots 0 .. nu-1, loaded once if an instruction reads them
 *     before any writes them, stored once at the end if any writes them;
 *   - dims are dropped and merged over all slots as for the plain entries.
 */
#include <stdlib.h>
#include <string.h>

#include "ocl_impl.h"
#include "ff_backend_fused.h"

#define OCL_FUSED_JIT_WORK (1 << 22) /* elements a signature runs interpreted before it is compiled */
#define OCL_FUSED_CACHE_MAX 256      /* signatures kept per context; past it the cache starts over */
#define FUSED_BINARY 0x10000         /* kernels/fused.cl */
#define FUSED_SLOT(k) (FF_MAX_DIMS + (k) * (1 + FF_MAX_DIMS))

struct ocl_fused_kernel {
    uint64_t hash;
    int n_sig;
    int *sig;
    int64_t work;    /* elements run on the interpreter */
    cl_program prog; /* the generated kernel, once built */
    cl_kernel kern;
    ocl_fused_kernel *next;
};

/* ---- signatures and their kernels -------------------------------------------------- */

static uint64_t sig_hash(const int *sig, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)sig[i]) * 0x100000001b3ull;
    return h;
}

static void entry_free(ocl_fused_kernel *k)
{
    if (k->kern) clReleaseKernel(k->kern);
    if (k->prog) clReleaseProgram(k->prog);
    free(k->sig);
    free(k);
}

void ocl_fused_release(ocl_ctx *c)
{
    while (c->fused) {
        ocl_fused_kernel *k = c->fused;
        c->fused = k->next;
        entry_free(k);
    }
    c->n_fused = 0;
}

/* sig's entry, made on first sight (NULL when out of memory). Under fused_lock. */
static ocl_fused_kernel *entry_of(ocl_ctx *c, const int *sig, int n_sig)
{
    uint64_t h = sig_hash(sig, n_sig);
    ocl_fused_kernel *k = c->fused;
    while (k && !(k->hash == h && k->n_sig == n_sig && !memcmp(k->sig, sig, sizeof *sig * (size_t)n_sig))) k = k->next;
    if (k) return k;
    if (c->n_fused >= OCL_FUSED_CACHE_MAX) ocl_fused_release(c); /* kernels in flight hold their own references */
    if (!(k = calloc(1, sizeof *k)) || !(k->sig = malloc(sizeof *sig * (size_t)n_sig))) {
        free(k);
        return NULL;
    }
    memcpy(k->sig, sig, sizeof *sig * (size_t)n_sig);
    k->n_sig = n_sig, k->hash = h;
    k->next = c->fused;
    c->fused = k;
    c->n_fused++;
    return k;
}

/* The generated kernel for sig, retained for the caller, or *out = NULL: run this one on
 * the interpreter (it has not done OCL_FUSED_JIT_WORK elements yet, counting numel). */
static ff_status kernel_for(ocl_ctx *c, const int *sig, int n_sig, int64_t numel, cl_kernel *out)
{
    ff_status st = FF_OK;
    *out = NULL;
    if (c->fused_mode == OCL_FUSED_INTERP) return FF_OK;
    pthread_mutex_lock(&c->fused_lock);
    ocl_fused_kernel *k = entry_of(c, sig, n_sig);
    if (!k) st = ocl_error(c, FF_ERR_OOM, "opencl fused: out of memory for a signature");
    else if (!k->kern && (c->fused_mode == OCL_FUSED_JIT || (k->work += numel) >= OCL_FUSED_JIT_WORK)) {
        char *src = ocl_fused_source(sig, n_sig);
        cl_int err = CL_SUCCESS;
        if (!src) st = ocl_error(c, FF_ERR_OOM, "opencl fused: out of memory for a kernel's source");
        else if (!(st = ocl_program_build_fused(c, src, &k->prog)) && !(k->kern = clCreateKernel(k->prog, "ff_fused_k", &err)))
            st = ocl_cl_fail(c, "fused", "clCreateKernel", err);
        free(src);
        if (!st && c->host->log)
            c->host->log("opencl fused: generated a kernel for %d instructions after %lld elements interpreted",
                         (n_sig - OCL_SIG_HEAD) / 4, (long long)k->work);
    }
    if (!st && k->kern) {
        clRetainKernel(k->kern);
        *out = k->kern;
    }
    pthread_mutex_unlock(&c->fused_lock);
    return st;
}

/* ---- launching ---------------------------------------------------------------------- */

/* The generated kernel: numel, the slots' buffers, the layout numbers (ocl_layout_map). */
static ff_status launch_generated(ocl_ctx *c, cl_kernel kern, const int *sig, const ocl_kview *kv, const cl_mem *bufs,
                                  int64_t numel)
{
    int ndim = sig[1], nu = sig[2], in_args = sig[5];
    ocl_layout_map m;
    ocl_layout_map_of(ndim, nu, &m);
    cl_long lay[FF_MAX_DIMS + FF_FUSED_MAX_VIEWS * (1 + FF_MAX_DIMS)];
    for (int d = 1; d < ndim; d++) lay[m.size[d]] = kv[0].shape[d];
    for (int k = 0; k < nu; k++) {
        lay[m.offset[k]] = kv[k].offset;
        for (int d = 0; d < ndim; d++) lay[m.stride[k][d]] = kv[k].strides[d];
    }
    cl_mem lm = NULL;
    cl_int err = CL_SUCCESS;
    if (!in_args &&
        !(lm = clCreateBuffer(c->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(cl_long) * (size_t)m.count,
                              lay, &err)))
        return ocl_cl_fail(c, "fused", "clCreateBuffer", err);
    cl_long nn = numel;
    ocl_arg args[1 + FF_FUSED_MAX_VIEWS + OCL_FUSED_ARG_LONGS];
    int na = 0;
    args[na++] = OCL_ARG(nn);
    for (int k = 0; k < nu; k++) args[na++] = OCL_ARG(bufs[k]);
    if (in_args)
        for (int j = 0; j < m.count; j++) args[na++] = OCL_ARG(lay[j]);
    else args[na++] = OCL_ARG(lm);
    ff_status st = ocl_launch_kernel(c, "fused", kern, args, na, ocl_grid(c, numel), 0);
    if (lm) clReleaseMemObject(lm); /* lives on until the kernel has run */
    return st;
}

/* The interpreter (kernels/fused.cl): the shape, each slot's offset and strides and the
 * instructions in one __constant buffer made for the launch; the 16 buffer arguments
 * past the slots repeat slot 0's, never touched. */
static ff_status launch_interpreter(ocl_ctx *c, const int *sig, int n_sig, const ocl_kview *kv, const cl_mem *bufs,
                                    int64_t numel)
{
    int ndim = sig[1], nu = sig[2], n_inst = (n_sig - OCL_SIG_HEAD) / 4;
    size_t nlong = (size_t)FUSED_SLOT(nu), nbytes = nlong * sizeof(cl_long) + (size_t)n_inst * 4 * sizeof(cl_int);
    cl_long *desc = calloc(1, nbytes);
    if (!desc) return ocl_error(c, FF_ERR_OOM, "opencl fused: out of memory for %d instructions", n_inst);
    for (int d = 0; d < ndim; d++) desc[d] = kv[0].shape[d];
    for (int k = 0; k < nu; k++) {
        desc[FUSED_SLOT(k)] = kv[k].offset;
        for (int d = 0; d < ndim; d++) desc[FUSED_SLOT(k) + 1 + d] = kv[k].strides[d];
    }
    cl_int *code = (cl_int *)(desc + nlong);
    memcpy(code, sig + OCL_SIG_HEAD, (size_t)n_inst * 4 * sizeof(cl_int));
    for (int i = 0; i < n_inst; i++)
        if (code[4 * i] >= FF_UNARY_COUNT) code[4 * i] = (code[4 * i] - FF_UNARY_COUNT) | FUSED_BINARY;
    cl_int err;
    cl_mem dm = clCreateBuffer(c->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nbytes, desc, &err);
    free(desc);
    if (!dm) return ocl_cl_fail(c, "fused", "clCreateBuffer", err);
    cl_int cnd = ndim, cnu = nu, cni = n_inst, f64 = sig[0] == FF_F64;
    cl_uint load = (cl_uint)sig[3], store = (cl_uint)sig[4];
    cl_long nn = numel;
    cl_mem all[FF_FUSED_MAX_VIEWS];
    ocl_arg args[8 + FF_FUSED_MAX_VIEWS] = {OCL_ARG(dm),   OCL_ARG(cnd),   OCL_ARG(cnu), OCL_ARG(cni),
                                            OCL_ARG(load), OCL_ARG(store), OCL_ARG(f64), OCL_ARG(nn)};
    for (int k = 0; k < FF_FUSED_MAX_VIEWS; k++) {
        all[k] = bufs[k < nu ? k : 0];
        args[8 + k] = OCL_ARG(all[k]);
    }
    ff_status st = ocl_launch(c, "fused", OK_FUSED, args, 8 + FF_FUSED_MAX_VIEWS, ocl_grid(c, numel), 0);
    clReleaseMemObject(dm); /* lives on until the kernel has run */
    return st;
}

/* ---- the entry -------------------------------------------------------------------- */

/* The program's slots: the views in use, an identical view folded into the first one,
 * numbered 0 .. nu-1 in canon[] (value -> value; temporaries keep their indices >= nv),
 * with their kernel views (merged), buffers, and the sets of slots loaded (read before
 * any instruction writes them) and stored (written). Returns nu. */
static int slots_of(const ff_fused_program *p, int *canon, ocl_kview *kv, cl_mem *bufs, unsigned *load_k,
                    unsigned *store_k)
{
    int nv = p->n_views, nu = 0;
    for (int v = 0; v < p->n_values; v++) canon[v] = v;
    for (int v = 1; v < nv; v++)
        for (int u = 0; u < v && canon[v] == v; u++)
            if (canon[u] == u && ffb_same_view(&p->views[u], &p->views[v])) canon[v] = u;
    unsigned load = 0, store = 0;
    for (int i = 0; i < p->n_inst; i++) {
        const ff_fused_inst *in = &p->inst[i];
        int a = canon[in->src[0]], b = in->kind == FF_KIND_BINARY ? canon[in->src[1]] : a, d = canon[in->dst];
        if (a < nv && !(store >> a & 1u)) load |= 1u << a;
        if (b < nv && !(store >> b & 1u)) load |= 1u << b;
        if (d < nv) store |= 1u << d;
    }
    *load_k = *store_k = 0;
    for (int v = 0; v < nv; v++) {
        if (!((load | store) >> v & 1u)) continue;
        for (int w = v; w < nv; w++) /* v and the views identical to it (earlier slots are < v) */
            if (canon[w] == v) canon[w] = nu;
        *load_k |= (load >> v & 1u) << nu;
        *store_k |= (store >> v & 1u) << nu;
        bufs[nu] = ocl_mem_of(p->views[v].buf);
        kv[nu++] = ocl_kview_of(&p->views[v]);
    }
    if (nu) ocl_kview_merge(kv, nu);
    return nu;
}

/* The signature (n_sig ints, malloc'd; NULL when out of memory). */
static int *signature_of(const ff_fused_program *p, const int *canon, const ocl_kview *kv, int nu, unsigned load_k,
                         unsigned store_k, int *n_sig)
{
    int ndim = kv[0].ndim, *sig;
    *n_sig = OCL_SIG_HEAD + 4 * p->n_inst;
    if (!(sig = malloc(sizeof *sig * (size_t)*n_sig))) return NULL;
    ocl_layout_map m;
    ocl_layout_map_of(ndim, nu, &m);
    sig[0] = p->dtype, sig[1] = ndim, sig[2] = nu, sig[3] = (int)load_k, sig[4] = (int)store_k;
    sig[5] = m.count <= OCL_FUSED_ARG_LONGS; /* else the layout numbers go in a __constant buffer */
    int *code = sig + OCL_SIG_HEAD;
    for (int i = 0; i < p->n_inst; i++) {
        const ff_fused_inst *in = &p->inst[i];
        int binary = in->kind == FF_KIND_BINARY;
        code[4 * i] = binary ? FF_UNARY_COUNT + in->op : (int)ffb_unary_effective((ff_unary_op)in->op, p->dtype);
        code[4 * i + 1] = canon[in->dst];
        code[4 * i + 2] = canon[in->src[0]];
        code[4 * i + 3] = canon[in->src[binary]]; /* a unary op's second operand: its first */
    }
    return sig;
}

ff_status ocl_fused(void *ctx, const ff_fused_program *p)
{
    ocl_ctx *c = ctx;
    ff_status st = ffb_fused_check(c ? c->host : NULL, "opencl", p);
    if (st) return st;
    if (p->n_views > FF_FUSED_MAX_VIEWS) /* ffb_fused_check's too; the slot arrays below rely on it */
        return ocl_error(c, FF_ERR_UNSUPPORTED, "opencl fused: %d views, more than the %d the ABI allows",
                         (int)p->n_views, FF_FUSED_MAX_VIEWS);
    int64_t numel = ffb_fused_numel(p);
    if (numel == 0 || p->n_inst == 0) return FF_OK;

    int canon[FF_FUSED_MAX_VALUES];
    ocl_kview kv[FF_FUSED_MAX_VIEWS];
    cl_mem bufs[FF_FUSED_MAX_VIEWS];
    unsigned load, store;
    int nu = slots_of(p, canon, kv, bufs, &load, &store), n_sig;
    if (!store) return FF_OK; /* nothing reaches memory */
    int *sig = signature_of(p, canon, kv, nu, load, store, &n_sig);
    if (!sig) return ocl_error(c, FF_ERR_OOM, "opencl fused: out of memory for %d instructions", (int)p->n_inst);
    cl_kernel kern = NULL;
    st = kernel_for(c, sig, n_sig, numel, &kern);
    if (!st && kern) st = launch_generated(c, kern, sig, kv, bufs, numel);
    else if (!st) st = launch_interpreter(c, sig, n_sig, kv, bufs, numel);
    if (kern) clReleaseKernel(kern);
    free(sig);
    return st;
}
