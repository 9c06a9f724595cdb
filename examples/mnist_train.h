/* The Fashion-MNIST demo's reusable parts: loading a split, the MLP, the training
 * loop and evaluation. examples/fashion_mnist.c and tests/unit/test_demo_short.c both
 * call these, so the test exercises exactly the code the demo runs. */
#ifndef FF_EXAMPLES_MNIST_TRAIN_H
#define FF_EXAMPLES_MNIST_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ff/ff.h"

#define MNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define MNIST_PIXELS 784
#define MNIST_CLASSES 10

typedef struct mnist_split {
    int64_t n;
    float *images;   /* n x 784, normalized: (pixel / 255 - mean) / std */
    int64_t *labels; /* n, in [0, 10) */
} mnist_split;

/* Loads "<dir>/<prefix>-images-idx3-ubyte[.gz]" and the matching labels (prefix
 * "train" or "t10k"), checking shapes agree; keeps the first max_n samples (0: all).
 * mean/std normalize the pixels (scaled to [0, 1] first); pass std <= 0 to compute
 * both from the kept samples (written back). Returns 0, or -1 with a message in err. */
int mnist_load(const char *dir, const char *prefix, int64_t max_n, double *mean, double *std, mnist_split *out,
               char *err, size_t errlen);
void mnist_free(mnist_split *s);
/* True if dir holds the four files (used to skip the test cleanly). */
bool mnist_available(const char *dir);

typedef struct mnist_train_cfg {
    int epochs;
    int64_t limit; /* train on the first `limit` samples (0: all) */
    int batch;
    double lr;           /* peak; cosine-annealed per step to lr / 100 */
    double weight_decay; /* AdamW, decoupled */
    uint64_t seed;       /* init, shuffling */
    FILE *log;           /* progress bar + epoch summaries, or NULL for silence */
    /* graph: after one eager step, capture a full-batch step (forward, loss, backward,
     * AdamW) and replay it for every full batch; a last, smaller batch runs eagerly.
     * Not with data parallel (MPI) training. graph_dump: a Graphviz file of the step. */
    bool graph;
    const char *graph_dump;
    ff_graph_info *graph_info; /* if non-NULL and graph: the captured step's ff_graph_stats */
    /* precision: FF_F32 (0, the default), or FF_BF16 / FF_F16 for mixed precision: the
     * forward and the loss under ff_autocast_set (include/ff/amp.h) with f32 master
     * weights; f16 adds dynamic loss scaling (not with graph: the scaler reads the
     * gradients every step to decide whether to skip it). */
    ff_dtype precision;
} mnist_train_cfg;

/* The MLP 784-256-128-10 with ReLU. */
ff_module *mnist_mlp(uint64_t seed);
/* A small CNN on the same [N, 784] rows: two conv3x3(pad 1)-BatchNorm-ReLU-maxpool2 blocks
 * (16 and 32 channels), then 1568-128-10. */
ff_module *mnist_cnn(uint64_t seed);

/* Trains net with AdamW on train. If step_losses is non-NULL it receives up to
 * max_steps per-step losses; *n_steps (may be NULL) the number of steps taken.
 * *samples_per_s (may be NULL) the training throughput. Returns 0 or -1 (ff error). */
int mnist_train(ff_module *net, const mnist_split *train, const mnist_train_cfg *cfg, double *step_losses,
                int64_t max_steps, int64_t *n_steps, double *samples_per_s);

/* Accuracy of net on split, batched, in no-grad and eval mode. -1 on error. */
double mnist_evaluate(ff_module *net, const mnist_split *split, int batch);

/* Wall-clock seconds (monotonic enough for progress reports). */
double mnist_now(void);

#endif
