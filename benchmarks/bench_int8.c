/*
 * ff-bench's int8 rows (issue 35): matmul_int8_N, the dynamic quantized Linear of an
 * [N, N] f32 activation and an [N, N] s8 weight quantized per channel beforehand
 * (ff_linear_dynamic_int8: the activation's quantization each call, then the qmatmul
 * entry), beside PyTorch's quantized dynamic Linear (baselines.py) and our own f32
 * matmul_f32_N for the same shape.
 */
#include "bench.h"

typedef struct int8_state {
    ff_tensor *x, *wq, *ws;
    ff_backend *be;
} int8_state;

static int run_int8(void *v)
{
    int8_state *s = v;
    ff_tensor *y = ff_linear_dynamic_int8(s->x, s->wq, s->ws, NULL, false);
    ff_tensor_release(y);
    return y && !ff_backend_sync(s->be) ? 0 : -1;
}

void bench_int8_all(ff_backend *be, int threads, const bench_opts *o)
{
    static const int64_t full[2] = {1024, 2048};
    if (!ff_backend_supports(be, FF_KIND_QMATMUL, 0, FF_U8)) return; /* opencl: no qmatmul entry */
    for (int i = 0; i < (o->quick ? 1 : 2); i++) {
        int64_t n = o->quick ? 256 : full[i], sh[2] = {n, n};
        char w[64];
        snprintf(w, sizeof w, "matmul_int8_%lld", (long long)n);
        if (!bench_selected(o, w)) continue;
        int8_state s = {.x = ff_rand_uniform(2, sh, FF_F32, -1, 1, 61), .be = be};
        ff_tensor *wf = ff_rand_uniform(2, sh, FF_F32, -1, 1, 62);
        bool ok = s.x && wf && ff_quantize_weight_s8(wf, &s.wq, &s.ws) == FF_OK;
        bench_case c = {w, run_int8, &s, 2.0 * (double)(n * n * n), "GOP/s"};
        bench_result r;
        if (ok && bench_measure(&c, o, ff_backend_name(be), threads, &r) == 0) bench_emit(&r);
        ff_tensor_release(wf), ff_tensor_release(s.x), ff_tensor_release(s.wq), ff_tensor_release(s.ws);
    }
}
