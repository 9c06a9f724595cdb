/* The demo's training loop: shuffled mini-batches gathered on the host, forward,
 * cross-entropy, backward, AdamW step with a per-step cosine schedule. Eager, every
 * tensor made in a step is released in that step; with cfg->graph the step is captured
 * once (include/ff/graph.h) and replayed, the schedule's lr still set before each step. */
#define _POSIX_C_SOURCE 200809L /* fileno, isatty */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mnist_train.h"

ff_module *mnist_mlp(uint64_t seed)
{
    return ff_sequential_take(5, (ff_module *[]){ff_linear(MNIST_PIXELS, 256, true, seed), ff_relu_module(),
                                                 ff_linear(256, 128, true, seed + 2), ff_relu_module(),
                                                 ff_linear(128, MNIST_CLASSES, true, seed + 4)});
}

/* [N, 784] rows as [N, 1, 28, 28] images (a view). */
static ff_tensor *as_images(ff_module *m, const ff_tensor *x, void *user)
{
    (void)m, (void)user;
    int64_t shape[4] = {ff_tensor_dim(x, 0), 1, 28, 28};
    return ff_reshape(x, 4, shape);
}

ff_module *mnist_cnn(uint64_t seed)
{
    return ff_sequential_take(
        13, (ff_module *[]){ff_module_new("AsImages", as_images, NULL, NULL),
                            ff_conv2d_module(1, 16, 3, 3, 1, 1, false, seed), ff_batch_norm_module(16, 1e-5, 0.1),
                            ff_relu_module(), ff_max_pool2d_module(2, 0),
                            ff_conv2d_module(16, 32, 3, 3, 1, 1, false, seed + 2), ff_batch_norm_module(32, 1e-5, 0.1),
                            ff_relu_module(), ff_max_pool2d_module(2, 0), ff_flatten_module(),
                            ff_linear(32 * 7 * 7, 128, true, seed + 4), ff_relu_module(),
                            ff_linear(128, MNIST_CLASSES, true, seed + 6)});
}

/* splitmix64: a tiny seeded generator for the shuffle. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void shuffle(int64_t *perm, int64_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(next_u64(&s) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

static void gather(const mnist_split *d, const int64_t *idx, int64_t b, float *xbuf, int64_t *ybuf)
{
    for (int64_t r = 0; r < b; r++) {
        memcpy(xbuf + r * MNIST_PIXELS, d->images + idx[r] * MNIST_PIXELS, MNIST_PIXELS * sizeof *xbuf);
        ybuf[r] = d->labels[idx[r]];
    }
}

/* forward, cross-entropy (under autocast for mixed precision), backward (of the scaled
 * loss with a scaler), (data parallel: gradients averaged), AdamW step (the scaler's,
 * which skips steps whose gradients overflowed): the loss tensor, or NULL on error. The
 * region a --graph run captures. */
static ff_tensor *step_loss(ff_module *net, ff_optimizer *opt, ff_dist_ddp *ddp, ff_dtype precision,
                            ff_grad_scaler *scaler, const ff_tensor *x, const ff_tensor *y)
{
    ff_autocast_set(precision);
    ff_tensor *logits = ff_module_forward(net, x);
    ff_tensor *loss = logits ? ff_cross_entropy(logits, y) : NULL;
    ff_autocast_set(FF_F32);
    ff_tensor *scaled = loss && scaler ? ff_grad_scaler_scale(scaler, loss) : ff_tensor_retain(loss);
    ff_tensor_release(logits);
    if (loss && (!scaled || ff_optimizer_zero_grad(opt) || ff_backward(scaled, NULL, NULL) ||
                 (ddp && ff_dist_ddp_sync_grads(ddp)) ||
                 (scaler ? ff_grad_scaler_step(scaler, opt, NULL) : ff_optimizer_step(opt)))) {
        ff_tensor_release(loss);
        loss = NULL;
    }
    ff_tensor_release(scaled);
    return loss;
}

static double loss_value(const ff_tensor *loss)
{
    double v = NAN;
    return loss && !ff_tensor_item(loss, &v) ? v : NAN;
}

/* --graph: the captured step, its input tensors and the loss it writes. */
typedef struct step_graph {
    ff_graph *g;
    ff_tensor *x, *y, *loss;
} step_graph;

static void step_graph_free(step_graph *sg)
{
    ff_graph_release(sg->g);
    ff_tensor_release(sg->x);
    ff_tensor_release(sg->y);
    ff_tensor_release(sg->loss);
    memset(sg, 0, sizeof *sg);
}

static void log_graph(FILE *log, const ff_graph_info *i)
{
    fprintf(log, "graph: step captured: %lld kernels -> %lld launches per replay (%lld fused groups of %lld kernels, "
                 "%lld constants hoisted, %lld host calls); memory: eager peak %.0f KiB, planned %.0f KiB (arena %.0f KiB)\n",
            (long long)i->kernels_captured, (long long)i->launches, (long long)i->fused_groups,
            (long long)i->fused_kernels, (long long)i->constants_hoisted, (long long)i->host_calls,
            (double)i->eager_peak_bytes / 1024, (double)i->planned_peak_bytes / 1024, (double)i->arena_bytes / 1024);
}

/* Captures the step on batch (x, y), which become the graph's inputs (the step runs as it
 * is captured; train_step uploads later batches into them and replays). Returns the
 * captured loss tensor (this step's loss), borrowed, or NULL on error. */
static const ff_tensor *graph_capture(step_graph *sg, ff_module *net, ff_optimizer *opt, const mnist_train_cfg *cfg,
                                   ff_tensor *x, ff_tensor *y)
{
    sg->x = ff_tensor_retain(x), sg->y = ff_tensor_retain(y);
    if (ff_graph_capture_begin()) return NULL;
    ff_tensor *loss = step_loss(net, opt, NULL, cfg->precision, NULL, x, y);
    sg->loss = loss ? ff_detach(loss) : NULL; /* the value only: its history (saved activations) dies here */
    ff_tensor_release(loss);
    if (!(sg->g = ff_graph_capture_end()) || !sg->loss) return NULL;
    ff_graph_info info;
    if (ff_graph_stats(sg->g, &info)) return NULL;
    if (cfg->graph_info) *cfg->graph_info = info;
    if (cfg->log) log_graph(cfg->log, &info);
    return cfg->graph_dump && ff_graph_dump(sg->g, cfg->graph_dump) ? NULL : sg->loss;
}

/* One step on rows idx[0..b): eager, or (cfg->graph, after the first step, full batches
 * only: a graph has its capture's shapes) through the graph. The loss, or NAN on error. */
static double train_step(ff_module *net, ff_optimizer *opt, ff_dist_ddp *ddp, ff_grad_scaler *scaler,
                         step_graph *sg, bool use_graph, const mnist_train_cfg *cfg, const mnist_split *d,
                         const int64_t *idx, int64_t b, float *xbuf, int64_t *ybuf)
{
    if (use_graph && sg->g) {
        /* the batch straight into the captured inputs: gathered in place where they are
         * host memory (cpu backends), else one upload each */
        float *xin = ff_tensor_is_contiguous(sg->x) ? ff_tensor_data_ptr(sg->x) : NULL;
        gather(d, idx, b, xin ? xin : xbuf, ybuf);
        return (!xin && ff_copy_from_host_(sg->x, xbuf, sizeof(float) * (size_t)(b * MNIST_PIXELS))) ||
                       ff_copy_from_host_(sg->y, ybuf, sizeof(int64_t) * (size_t)b) || ff_graph_replay(sg->g)
                   ? NAN
                   : loss_value(sg->loss);
    }
    gather(d, idx, b, xbuf, ybuf);
    int64_t xs[2] = {b, MNIST_PIXELS};
    ff_tensor *x = ff_from_data(xbuf, 2, xs, FF_F32);
    ff_tensor *y = x ? ff_from_data(ybuf, 1, &b, FF_I64) : NULL;
    double v = NAN;
    if (y && use_graph) {
        v = loss_value(graph_capture(sg, net, opt, cfg, x, y));
    } else if (y) {
        ff_tensor *loss = step_loss(net, opt, ddp, cfg->precision, scaler, x, y);
        v = loss_value(loss);
        ff_tensor_release(loss);
    }
    ff_tensor_release(x);
    ff_tensor_release(y);
    return v;
}

static void progress(FILE *log, bool tty, int epoch, int epochs, int64_t done, int64_t total, double t0,
                     double run_loss)
{
    const int width = 24;
    int fill = (int)(width * done / (total ? total : 1));
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    double dt = mnist_now() - t0;
    fprintf(log, "%sepoch %d/%d [%s] %3d%%  %6.0f samples/s  loss %.4f", tty ? "\r" : "", epoch, epochs, bar,
            (int)(100 * done / (total ? total : 1)), dt > 0 ? done / dt : 0.0, run_loss);
    if (!tty) fputc('\n', log); /* logs get one line per update instead of a \r soup */
    fflush(log);
}

int mnist_train(ff_module *net, const mnist_split *train, const mnist_train_cfg *cfg, double *step_losses,
                int64_t max_steps, int64_t *n_steps, double *samples_per_s)
{
    int64_t n_all = cfg->limit > 0 && cfg->limit < train->n ? cfg->limit : train->n;
    /* under mpirun: data parallel, each rank its shard of every epoch (ff_dist's sampler)
     * and batch b of its own, gradients averaged before each step */
    bool dp = ff_dist_size() > 1;
    if (dp && cfg->graph) {
        ff_set_error(FF_ERR_INVALID, "mnist_train: --graph does not capture data parallel steps (MPI collectives)");
        return -1;
    }
    if (cfg->precision != FF_F32 && cfg->precision != FF_BF16 && cfg->precision != FF_F16) {
        ff_set_error(FF_ERR_INVALID, "mnist_train: precision must be f32, bf16 or f16, got %s",
                     ff_dtype_name(cfg->precision));
        return -1;
    }
    if (cfg->precision == FF_F16 && cfg->graph) {
        ff_set_error(FF_ERR_INVALID, "mnist_train: --graph does not capture f16 steps (the loss scaler reads the "
                     "gradients every step); use --precision bf16, which needs no scaling");
        return -1;
    }
    ff_grad_scaler *scaler = cfg->precision == FF_F16 ? ff_grad_scaler_new(NULL) : NULL;
    if (cfg->precision == FF_F16 && !scaler) return -1;
    ff_dist_ddp *ddp = dp ? ff_dist_ddp_new(net, 0) : NULL;
    if (dp && !ddp) {
        ff_grad_scaler_free(scaler);
        return -1;
    }
    int64_t n = dp ? ff_dist_shard_size(n_all, false) : n_all;
    int64_t b = cfg->batch, steps_per_epoch = (n + b - 1) / b, total = steps_per_epoch * cfg->epochs;
    int np = ff_module_parameters(net, NULL, 0);
    ff_tensor **ps = np > 0 ? malloc((size_t)np * sizeof *ps) : NULL;
    ff_adam_opts ao = ff_adam_defaults(cfg->lr);
    ao.weight_decay = cfg->weight_decay;
    ff_optimizer *opt = ps && ff_module_parameters(net, ps, np) == np ? ff_adamw(ps, np, &ao) : NULL;
    free(ps); /* the optimizer retains what it needs */
    int64_t *perm = malloc((size_t)n * sizeof *perm), *ybuf = malloc((size_t)b * sizeof *ybuf);
    float *xbuf = malloc((size_t)(b * MNIST_PIXELS) * sizeof *xbuf);
    int rc = opt && perm && ybuf && xbuf ? 0 : -1;
    bool tty = cfg->log && isatty(fileno(cfg->log));
    int64_t every = steps_per_epoch / (tty ? 50 : 5) + 1, step = 0;
    double t_start = mnist_now();
    step_graph sg = {0};
    ff_module_train(net, true);
    for (int e = 0; e < cfg->epochs && rc == 0; e++) {
        if (dp) {
            if (ff_dist_shard_indices(n_all, cfg->seed, e, true, false, perm, n)) {
                rc = -1;
                break;
            }
        } else {
            shuffle(perm, n, cfg->seed * 1000003u + (uint64_t)e);
        }
        double t0 = mnist_now(), sum = 0, run = 0;
        for (int64_t s = 0; s < steps_per_epoch; s++, step++) {
            ff_optimizer_set_lr(opt, ff_lr_cosine(cfg->lr, step, total, cfg->lr / 100));
            int64_t lo = s * b, bs = n - lo < b ? n - lo : b;
            double loss = train_step(net, opt, ddp, scaler, &sg, cfg->graph && step > 0 && bs == b, cfg, train, perm + lo, bs,
                                     xbuf, ybuf);
            if (loss != loss) {
                rc = -1;
                break;
            }
            if (step_losses && step < max_steps) step_losses[step] = loss;
            sum += loss;
            run = s == 0 ? loss : 0.95 * run + 0.05 * loss;
            if (cfg->log && ((s + 1) % every == 0 || s + 1 == steps_per_epoch))
                progress(cfg->log, tty, e + 1, cfg->epochs, lo + bs, n, t0, run);
        }
        if (cfg->log && rc == 0) {
            double dt = mnist_now() - t0;
            fprintf(cfg->log, "%sepoch %d/%d: mean loss %.4f, %.1f s, %.0f samples/s, lr %.2e\n", tty ? "\r\033[K" : "",
                    e + 1, cfg->epochs, sum / (double)steps_per_epoch, dt, (double)n * ff_dist_size() / dt,
                    ff_optimizer_get_lr(opt));
        }
    }
    if (n_steps) *n_steps = step;
    if (samples_per_s) {
        double dt = mnist_now() - t_start;
        *samples_per_s = dt > 0 ? (double)n * ff_dist_size() * cfg->epochs / dt : 0;
    }
    step_graph_free(&sg); /* before the optimizer its host calls use */
    ff_optimizer_release(opt);
    ff_dist_ddp_free(ddp);
    ff_grad_scaler_free(scaler);
    free(perm);
    free(ybuf);
    free(xbuf);
    return rc;
}

double mnist_evaluate(ff_module *net, const mnist_split *d, int batch)
{
    int64_t correct = 0, *pred = malloc((size_t)batch * sizeof *pred);
    if (!pred) return -1;
    bool was_training = ff_module_is_training(net);
    ff_module_train(net, false);
    bool prev = ff_set_grad_enabled(false);
    double acc = -1;
    int64_t lo = 0;
    for (; lo < d->n; lo += batch) {
        int64_t bs = d->n - lo < batch ? d->n - lo : batch, xs[2] = {bs, MNIST_PIXELS};
        ff_tensor *x = ff_from_data(d->images + lo * MNIST_PIXELS, 2, xs, FF_F32);
        ff_tensor *logits = x ? ff_module_forward(net, x) : NULL;
        ff_tensor *am = logits ? ff_argmax(logits, 1, false) : NULL;
        ff_status st = am ? ff_tensor_to_host(am, pred, (size_t)bs * sizeof *pred) : FF_ERR_INVALID;
        ff_tensor_release(x);
        ff_tensor_release(logits);
        ff_tensor_release(am);
        if (st) break;
        for (int64_t i = 0; i < bs; i++) correct += pred[i] == d->labels[lo + i];
    }
    if (lo >= d->n && d->n > 0) acc = (double)correct / (double)d->n;
    ff_set_grad_enabled(prev);
    ff_module_train(net, was_training);
    free(pred);
    return acc;
}
