/*
 * The optional fused entry (graphs' elementwise chains, ff_fused_program in
 * backend_abi.h): F32, F64, F16 and BF16 programs up to the ABI's caps and CUDA_FUSED_MAX_INST
 * instructions (the core builds at most 48), checked with the shared host checks
 * (backends/common/ff_backend_fused.h) plus this backend's own declines (LGAMMA), then
 * passed to one kernel by value (cuda_elementwise.cu: k_fused). One thread per element
 * runs the instructions in order, each exactly as the plain unary/binary kernels compute
 * it (ffb_unary_f64 / ffb_binary_f64 in double, rounded to the dtype at every value: a
 * half's temporaries too, as the plain half kernels round each result once), so results
 * are bit-identical to the plain entries op by op; views are read and written in
 * place, so an identical view written earlier is read back as written.
 */
#include <string.h>

#include "cuda_impl.h"
#include "ff_backend_fused.h"

ff_status cuda_fused(void *ctx, const ff_fused_program *p)
{
    cuda_ctx *c = ctx;
    ff_status st = ffb_fused_check_as(c->host, "cuda", p, 1);
    if (st) return st;
    if (p->n_inst > CUDA_FUSED_MAX_INST)
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda fused: %d instructions, more than the %d one launch takes",
                          (int)p->n_inst, CUDA_FUSED_MAX_INST);
    for (int i = 0; i < p->n_inst; i++)
        if (p->inst[i].kind == FF_KIND_UNARY && !cuda_unary_supported((ff_unary_op)p->inst[i].op, cuda_rule_dtype(p->dtype)))
            return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda fused: instruction %d: unary op %d (%s) is not supported on %s",
                              i, (int)p->inst[i].op, ffb_unary_name(p->inst[i].op), ffb_dtype_name(p->dtype));
    int64_t numel = ffb_fused_numel(p);
    if (numel == 0 || p->n_inst == 0) return FF_OK;
    cuda_fused_args a;
    memset(&a, 0, sizeof a);
    a.dtype = p->dtype, a.ndim = p->ndim, a.n_views = p->n_views, a.n_inst = p->n_inst;
    for (int d = 0; d < p->ndim; d++) a.shape[d] = p->shape[d];
    for (int v = 0; v < p->n_views; v++) {
        a.buf[v] = p->views[v].buf;
        a.offset[v] = p->views[v].offset;
        for (int d = 0; d < p->ndim; d++) a.strides[v][d] = p->views[v].strides[d];
    }
    for (int i = 0; i < p->n_inst; i++) {
        const ff_fused_inst *in = &p->inst[i];
        int binary = in->kind == FF_KIND_BINARY;
        uint8_t packed[5] = {(uint8_t)binary, (uint8_t)in->op, (uint8_t)in->dst, (uint8_t)in->src[0],
                             (uint8_t)(binary ? in->src[1] : 0)};
        memcpy(a.inst[i], packed, sizeof packed);
    }
    if ((st = cuda_use_device(c, "fused"))) return st;
    return cuda_fused_launch(c, &a, numel);
}
