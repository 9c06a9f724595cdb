/*
 * The workloads ff-bench (bench_ff.c) and ff-bench-graph (bench_graph.c) both time: the
 * MLP training steps, relu(a * b + c), their capture as a graph, and the demo's epoch
 * configuration. One definition, so the eager and graph numbers the two tools print are
 * of the same regions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_work.h"

void bench_state_free(bench_state *s)
{
    ff_graph_release(s->g); /* before the optimizer it calls back into */
    ff_tensor_release(s->out);
    ff_tensor_release(s->a), ff_tensor_release(s->b), ff_tensor_release(s->c), ff_tensor_release(s->y);
    ff_optimizer_release(s->opt);
    ff_module_release(s->net);
    memset(s, 0, sizeof *s);
}

int bench_mlp_setup(bench_state *s, int n_dims, const int64_t *dims, int64_t batch, bool ce, bool adamw)
{
    ff_module *mods[2 * BENCH_MLP_MAX_LAYERS];
    int n = 0;
    for (int i = 0; i + 1 < n_dims && i < BENCH_MLP_MAX_LAYERS; i++) {
        if (i) mods[n++] = ff_relu_module();
        mods[n++] = ff_linear(dims[i], dims[i + 1], true, (uint64_t)(11 + 2 * i));
    }
    s->net = ff_sequential_take(n, mods);
    int64_t in = dims[0], out = dims[n_dims - 1], xs[2] = {batch, in}, ys[2] = {batch, out};
    s->a = ff_rand_uniform(2, xs, FF_F32, -1, 1, 21);
    s->ce = ce;
    if (ce) {
        int64_t *lab = malloc(sizeof(int64_t) * (size_t)batch);
        for (int64_t i = 0; i < batch && lab; i++) lab[i] = (i * 7) % out;
        s->y = lab ? ff_from_data(lab, 1, &batch, FF_I64) : NULL;
        free(lab);
    } else {
        s->y = ff_rand_uniform(2, ys, FF_F32, -1, 1, 22);
    }
    if (!s->net || !s->a || !s->y) return -1;
    ff_tensor *ps[2 * BENCH_MLP_MAX_LAYERS];
    int np = ff_module_parameters(s->net, ps, 2 * BENCH_MLP_MAX_LAYERS);
    if (np <= 0) return -1;
    if (adamw) {
        ff_adam_opts ao = ff_adam_defaults(2e-3);
        ao.weight_decay = 1e-4;
        s->opt = ff_adamw(ps, np, &ao);
    } else {
        ff_sgd_opts so = ff_sgd_defaults(0.01);
        s->opt = ff_sgd(ps, np, &so);
    }
    return s->opt ? 0 : -1;
}

ff_tensor *bench_step_loss(bench_state *s)
{
    ff_tensor *out = ff_module_forward(s->net, s->a);
    ff_tensor *loss = out ? (s->ce ? ff_cross_entropy(out, s->y) : ff_mse_loss(out, s->y)) : NULL;
    if (loss && (ff_optimizer_zero_grad(s->opt) || ff_backward(loss, NULL, NULL) || ff_optimizer_step(s->opt))) {
        ff_tensor_release(loss);
        loss = NULL;
    }
    ff_tensor_release(out);
    return loss;
}

ff_tensor *bench_relu_mul_add(bench_state *s)
{
    ff_tensor *ab = ff_mul(s->a, s->b), *abc = ab ? ff_add(ab, s->c) : NULL, *y = abc ? ff_relu(abc) : NULL;
    ff_tensor_release(ab);
    ff_tensor_release(abc);
    return y;
}

int bench_capture(bench_state *s, ff_tensor *(*region)(bench_state *))
{
    if (ff_graph_capture_begin()) return -1;
    ff_tensor *r = region(s);
    s->out = r ? ff_detach(r) : NULL;
    ff_tensor_release(r);
    s->g = ff_graph_capture_end();
    if (!s->out || !s->g) {
        fprintf(stderr, "ff-bench: capture failed: %s\n", ff_last_error());
        return -1;
    }
    return 0;
}

mnist_train_cfg bench_mnist_cfg(bool cnn, bool graph)
{
    return (mnist_train_cfg){.epochs = 1, .batch = cnn ? 64 : 128, .lr = 2e-3, .weight_decay = 1e-4, .seed = 42,
                             .log = NULL, .graph = graph};
}
