/*
 * ff-bench's attention rows (issue 34): F.scaled_dot_product_attention, batch 4, 8 heads,
 * head dim 64, causal, f32, at T = 512 and 2048 (quick: 128 and 256), forward alone
 * (attention_fwd_T*) and forward + backward to q, k and v from a given gradient
 * (attention_step_T*), beside baselines.py's PyTorch 1.13 composition. Work: the
 * multiply-adds a causal kernel needs (half the T x T products; the step 3.5 forwards),
 * so GFLOP/s compare across T. Peak memory: benchmarks/attention_memory.py.
 */
#include <math.h>

#include "bench.h"

typedef struct attn_state {
    ff_tensor *q, *k, *v, *g; /* g: the output's gradient (ones) */
    ff_backend *be;
} attn_state;

static int run_fwd(void *v)
{
    attn_state *s = v;
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *o = ff_scaled_dot_product_attention(s->q, s->k, s->v, NULL, 0.0, true, NAN, 0);
    ff_set_grad_enabled(prev);
    ff_tensor_release(o);
    return o && !ff_backend_sync(s->be) ? 0 : -1;
}

/* torch's o.backward(g); q.grad = k.grad = v.grad = None */
static int run_step(void *v)
{
    attn_state *s = v;
    ff_tensor *o = ff_scaled_dot_product_attention(s->q, s->k, s->v, NULL, 0.0, true, NAN, 0);
    int rc = o && !ff_backward(o, s->g, NULL) && !ff_zero_grad(s->q) && !ff_zero_grad(s->k) && !ff_zero_grad(s->v) &&
                     !ff_backend_sync(s->be)
                 ? 0
                 : -1;
    ff_tensor_release(o);
    return rc;
}

void bench_attention_all(ff_backend *be, int threads, const bench_opts *o)
{
    static const int64_t full[2] = {512, 2048}, quick[2] = {128, 256};
    for (int i = 0; i < 2; i++) {
        int64_t T = o->quick ? quick[i] : full[i], sh[4] = {4, 8, T, 64};
        double flop = 4.0 * 4 * 8 * 64 * (double)T * (double)(T + 1) / 2;
        for (int step = 0; step < 2; step++) {
            char w[64];
            snprintf(w, sizeof w, "attention_%s_T%lld", step ? "step" : "fwd", (long long)T);
            if (!bench_selected(o, w)) continue;
            attn_state s = {.q = ff_rand_uniform(4, sh, FF_F32, -1, 1, 51), .k = ff_rand_uniform(4, sh, FF_F32, -1, 1, 52),
                            .v = ff_rand_uniform(4, sh, FF_F32, -1, 1, 53), .g = ff_full(4, sh, FF_F32, 1.0), .be = be};
            bool ok = s.q && s.k && s.v && s.g;
            if (ok && step)
                ok = !ff_set_requires_grad(s.q, true) && !ff_set_requires_grad(s.k, true) && !ff_set_requires_grad(s.v, true);
            bench_case c = {w, step ? run_step : run_fwd, &s, step ? 3.5 * flop : flop, "GFLOP/s"};
            bench_result r;
            if (ok && bench_measure(&c, o, ff_backend_name(be), threads, &r) == 0) bench_emit(&r);
            ff_tensor_release(s.q), ff_tensor_release(s.k), ff_tensor_release(s.v), ff_tensor_release(s.g);
        }
    }
}
