/* `make demo`: an MLP 784-256-128-10 (or, with --model cnn, a small CNN) trained on the
 * real Fashion-MNIST with AdamW and a cosine schedule, on the default backend. The last
 * line printed is exactly "test accuracy: 0.XXXX". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mnist_train.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fashion_mnist [--model mlp|cnn] [--epochs N] [--limit N] [--batch N] [--lr X] [--wd X] [--seed N]\n"
            "                     [--data DIR] [--precision f32|bf16|f16] [--graph] [--graph-dump FILE.dot]\n"
            "  --model M   mlp (784-256-128-10, the default) or cnn (2 x conv-BN-ReLU-pool, then 1568-128-10)\n"
            "  --epochs N  passes over the training set (default 6 for the MLP, 4 for the CNN)\n"
            "  --limit N   train on the first N samples only (default: all 60000)\n"
            "  --batch N   mini-batch size (default 128)\n"
            "  --lr X      peak AdamW learning rate, cosine-annealed per step (default 2e-3)\n"
            "  --wd X      AdamW decoupled weight decay (default 1e-4)\n"
            "  --seed N    seed for init and shuffling (default 42)\n"
            "  --data DIR  directory with the IDX files (default " MNIST_DEFAULT_DIR ")\n"
            "  --precision P  f32 (default), or bf16 / f16 mixed precision: matmul and conv in P with f32\n"
            "              master weights, softmax and the loss in f32 (include/ff/amp.h); f16 adds dynamic\n"
            "              loss scaling (not with --graph)\n"
            "  --graph     capture the training step once (after one eager step) and replay it for every\n"
            "              full batch (include/ff/graph.h, docs/graphs.md); not with MPI data parallel\n"
            "  --graph-dump FILE.dot  with --graph (implied): write the captured step as Graphviz dot\n");
}

/* Parses argv into cfg; returns 0, 1 for --help, -1 on a bad option. */
static int parse_args(int argc, char **argv, mnist_train_cfg *cfg, const char **dir, bool *cnn)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 1;
        if (!strcmp(a, "--graph")) {
            cfg->graph = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fashion_mnist: %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++i];
        char *end = NULL;
        if (!strcmp(a, "--data")) {
            *dir = v;
            continue;
        }
        if (!strcmp(a, "--graph-dump")) {
            cfg->graph = true;
            cfg->graph_dump = v;
            continue;
        }
        if (!strcmp(a, "--precision")) {
            if (!strcmp(v, "f32")) cfg->precision = FF_F32;
            else if (!strcmp(v, "bf16")) cfg->precision = FF_BF16;
            else if (!strcmp(v, "f16")) cfg->precision = FF_F16;
            else {
                fprintf(stderr, "fashion_mnist: --precision must be f32, bf16 or f16, got '%s'\n", v);
                return -1;
            }
            continue;
        }
        if (!strcmp(a, "--model")) {
            if (strcmp(v, "mlp") && strcmp(v, "cnn")) {
                fprintf(stderr, "fashion_mnist: --model must be mlp or cnn, got '%s'\n", v);
                return -1;
            }
            *cnn = !strcmp(v, "cnn");
            if (*cnn) cfg->epochs = 4;
            continue;
        }
        double x = strtod(v, &end);
        if (!end || *end || end == v) {
            fprintf(stderr, "fashion_mnist: %s: '%s' is not a number\n", a, v);
            return -1;
        }
        if (!strcmp(a, "--epochs") && x >= 1) cfg->epochs = (int)x;
        else if (!strcmp(a, "--limit") && x >= 1) cfg->limit = (int64_t)x;
        else if (!strcmp(a, "--batch") && x >= 1) cfg->batch = (int)x;
        else if (!strcmp(a, "--lr") && x > 0) cfg->lr = x;
        else if (!strcmp(a, "--wd") && x >= 0) cfg->weight_decay = x;
        else if (!strcmp(a, "--seed") && x >= 0) cfg->seed = (uint64_t)x;
        else {
            fprintf(stderr, "fashion_mnist: unknown option or bad value: %s %s\n", a, v);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    mnist_train_cfg cfg = {.epochs = 6, .batch = 128, .lr = 2e-3, .weight_decay = 1e-4, .seed = 42, .log = stdout};
    const char *dir = MNIST_DEFAULT_DIR;
    bool cnn = false;
    int pa = parse_args(argc, argv, &cfg, &dir, &cnn);
    if (pa) {
        usage(pa > 0 ? stdout : stderr);
        return pa > 0 ? 0 : 2;
    }
    /* under mpirun (Open MPI / PMIx / MPICH set these): data parallel across the ranks;
     * rank 0 alone logs */
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE")) {
        if (ff_dist_init()) {
            fprintf(stderr, "fashion_mnist: %s\n", ff_last_error());
            return 1;
        }
        if (ff_dist_rank() != 0) cfg.log = NULL;
    }
    bool talk = ff_dist_rank() == 0;
    ff_backend *be = ff_backend_default();
    if (!be) {
        fprintf(stderr, "fashion_mnist: %s\n", ff_last_error());
        return 1;
    }
    char err[1024];
    double mean = 0, std = 0;
    mnist_split train, test;
    if (mnist_load(dir, "train", cfg.limit, &mean, &std, &train, err, sizeof err)) {
        fprintf(stderr, "fashion_mnist: %s\n", err);
        return 1;
    }
    if (mnist_load(dir, "t10k", 0, &mean, &std, &test, err, sizeof err)) {
        fprintf(stderr, "fashion_mnist: %s\n", err);
        mnist_free(&train);
        return 1;
    }
    ff_module *net = cnn ? mnist_cnn(cfg.seed) : mnist_mlp(cfg.seed);
    if (talk) {
        printf("Fashion-MNIST: %lld train / %lld test images from %s; backend %s\n", (long long)train.n,
               (long long)test.n, dir, ff_backend_name(be));
        printf("%s (%lld parameters), AdamW lr %g wd %g, batch %d%s, %d epochs, seed %llu%s\n",
               cnn ? "CNN conv16-conv32-128-10" : "MLP 784-256-128-10", (long long)ff_module_num_parameters(net),
               cfg.lr, cfg.weight_decay, cfg.batch, ff_dist_size() > 1 ? " per rank" : "", cfg.epochs,
               (unsigned long long)cfg.seed, cfg.graph ? ", step captured and replayed (--graph)" : "");
        if (cfg.precision != FF_F32)
            printf("mixed precision: matmul and conv in %s, f32 master weights and loss%s\n",
                   ff_dtype_name(cfg.precision), cfg.precision == FF_F16 ? ", dynamic loss scaling" : "");
        if (ff_dist_size() > 1) printf("data parallel on %d ranks (MPI)\n", ff_dist_size());
    }
    double t0 = mnist_now(), sps = 0, acc = -1;
    int rc = net ? mnist_train(net, &train, &cfg, NULL, 0, NULL, &sps) : -1;
    double t1 = mnist_now();
    if (rc == 0 && !ff_autocast_set(cfg.precision)) { /* evaluated as trained */
        acc = mnist_evaluate(net, &test, 1000);
        ff_autocast_set(FF_F32);
    }
    if (rc || acc < 0) {
        fprintf(stderr, "fashion_mnist: training failed: %s\n", ff_last_error());
        rc = 1;
    } else if (talk) {
        printf("trained in %.1f s (%.0f samples/s), evaluated in %.1f s\n", t1 - t0, sps, mnist_now() - t1);
        printf("test accuracy: %.4f\n", acc);
    }
    ff_module_release(net);
    mnist_free(&train);
    mnist_free(&test);
    ff_dist_finalize();
    ff_shutdown();
    return rc;
}
