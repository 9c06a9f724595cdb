/* The workloads ff-bench (bench_ff.c) and ff-bench-graph (bench_graph.c) share,
 * defined once in bench_work.c. */
#ifndef FF_BENCH_WORK_H
#define FF_BENCH_WORK_H

#include <stdbool.h>
#include <stdint.h>

#include "ff/ff.h"
#include "mnist_train.h"

typedef struct bench_state {
    ff_tensor *a, *b, *c, *y; /* MLPs: a = the batch, y = targets; relu(a * b + c) */
    ff_module *net;
    ff_optimizer *opt;
    bool ce;        /* cross-entropy (else MSE) */
    ff_graph *g;    /* the *_graph workloads: the captured region */
    ff_tensor *out; /* and the result it keeps writing (the loss, y) */
} bench_state;

#define BENCH_MLP_MAX_LAYERS 4
void bench_state_free(bench_state *s);
/* An MLP of n_dims - 1 Linear layers (seeds 11, 13, ...) with ReLU between them, a
 * uniform batch in a, targets in y (class labels for cross-entropy, else uniform), and
 * SGD(lr 0.01) or AdamW(lr 2e-3, wd 1e-4). */
int bench_mlp_setup(bench_state *s, int n_dims, const int64_t *dims, int64_t batch, bool ce, bool adamw);
/* forward, loss, zero_grad, backward, optimizer step: the loss, or NULL on error */
ff_tensor *bench_step_loss(bench_state *s);
/* y = relu(a * b + c), three allocating ops, temporaries released as a user would */
ff_tensor *bench_relu_mul_add(bench_state *s);
/* Captures region into s->g, its result kept (detached, so the history's saved tensors die
 * in the region and are planned) in s->out; -1 with a message on failure. */
int bench_capture(bench_state *s, ff_tensor *(*region)(bench_state *));
/* The demo's training configuration for one epoch: the MLP with batch 128, or the CNN
 * with batch 64; AdamW; graph: the demo's --graph. */
mnist_train_cfg bench_mnist_cfg(bool cnn, bool graph);

#endif
