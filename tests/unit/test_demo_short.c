/* The Fashion-MNIST demo's own training code (examples/mnist_train.c) on a small
 * subset, in f32 and in mixed bf16/f16 precision: the loss must fall and the model must
 * beat chance by far on held-out data.
 * Skipped (exit 0, with a message) only when the dataset is not installed. */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "ff_test.h"
#include "idx.h"
#include "mnist_train.h"

#define SUBSET 1024
#define BATCH 32
#define EPOCHS 2

/* Trains the MLP on the subset in one precision: the loss must fall and held-out
 * accuracy beat chance by far. Returns the accuracy (-1 on failure). */
static double train_subset(const mnist_split *train, const mnist_split *test, ff_dtype precision)
{
    ff_module *net = mnist_mlp(7);
    CHECK(net != NULL && ff_module_num_parameters(net) == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
    mnist_train_cfg cfg = {.epochs = EPOCHS, .limit = SUBSET, .batch = BATCH, .lr = 2e-3, .weight_decay = 1e-4,
                           .seed = 7, .precision = precision};
    enum { STEPS = EPOCHS * SUBSET / BATCH };
    double losses[STEPS];
    int64_t n_steps = 0;
    double t0 = mnist_now();
    CHECK(mnist_train(net, train, &cfg, losses, STEPS, &n_steps, NULL) == 0);
    CHECK(n_steps == STEPS);
    if (n_steps == STEPS) {
        double first = (losses[0] + losses[1] + losses[2] + losses[3]) / 4, last = 0;
        for (int i = STEPS - STEPS / 4; i < STEPS; i++) last += losses[i] / (STEPS / 4);
        printf("%s: first loss %.4f, first 4 batches %.4f, last quarter %.4f (%.1f s)\n", ff_dtype_name(precision),
               losses[0], first, last, mnist_now() - t0);
        CHECK(losses[0] > 1.9 && losses[0] < 2.8); /* ~log(10) = 2.30 at init */
        CHECK(last < 0.7 * first);
    }
    /* held-out images (the first 2000 of the test set), chance is 0.1 */
    CHECK(ff_autocast_set(precision) == FF_OK);
    double acc = mnist_evaluate(net, test, 500);
    CHECK(ff_autocast_set(FF_F32) == FF_OK);
    printf("%s: accuracy on 2000 test images: %.4f\n", ff_dtype_name(precision), acc);
    CHECK(acc > 0.6);
    CHECK(ff_module_is_training(net)); /* evaluate restores the mode */
    ff_module_release(net);
    return acc;
}

static void test_demo_training_loss_falls(void)
{
    char err[1024];
    double mean = 0, std = 0;
    mnist_split train, test;
    int lt = mnist_load(MNIST_DEFAULT_DIR, "train", SUBSET, &mean, &std, &train, err, sizeof err);
    int le = lt ? -1 : mnist_load(MNIST_DEFAULT_DIR, "t10k", 2000, &mean, &std, &test, err, sizeof err);
    CHECK(lt == 0 && le == 0);
    if (lt || le) {
        fprintf(stderr, "%s\n", err);
        if (!lt) mnist_free(&train);
        return;
    }
    CHECK(train.n == SUBSET && test.n == 2000);
    CHECK(mean > 0.2 && mean < 0.4 && std > 0.25 && std < 0.45); /* Fashion-MNIST: 0.286, 0.353 */
    double acc32 = train_subset(&train, &test, FF_F32);
    /* mixed precision (--precision): the same training within a few points of f32 */
    ff_dtype halves[2] = {FF_BF16, FF_F16};
    for (int h = 0; h < 2; h++) CHECK(fabs(train_subset(&train, &test, halves[h]) - acc32) < 0.03);
    /* f16's loss scaler reads gradients every step: no graph capture of it */
    ff_module *net = mnist_mlp(7);
    mnist_train_cfg cfg = {.epochs = 1, .limit = 64, .batch = BATCH, .lr = 2e-3, .seed = 7, .precision = FF_F16,
                           .graph = true};
    CHECK_ERROR(mnist_train(net, &train, &cfg, NULL, 0, NULL, NULL) != 0, FF_ERR_INVALID, "--precision bf16");
    cfg.graph = false, cfg.precision = FF_I32;
    CHECK_ERROR(mnist_train(net, &train, &cfg, NULL, 0, NULL, NULL) != 0, FF_ERR_INVALID, "f32, bf16 or f16");
    ff_module_release(net);
    mnist_free(&train);
    mnist_free(&test);
}

static void test_missing_data_is_a_clear_error(void)
{
    char err[1024] = "";
    double mean = 0, std = 0;
    mnist_split s;
    CHECK(mnist_load("/nonexistent/dir", "train", 0, &mean, &std, &s, err, sizeof err) == -1);
    CHECK(strstr(err, "/nonexistent/dir/train-images-idx3-ubyte") && strstr(err, "not found"));
    CHECK(s.images == NULL && s.labels == NULL);
}

/* Writes bytes to a temp file (IDX files may be uncompressed; gzopen reads both). */
static void write_file(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

static void test_idx_reader_validates(void)
{
    char path[64], err[512];
    snprintf(path, sizeof path, "/tmp/ff_idx_test_%ld.idx", (long)getpid());
    idx_array a;
    const unsigned char good[] = {0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6};
    write_file(path, good, sizeof good);
    CHECK(idx_read_u8(path, &a, err, sizeof err) == 0);
    CHECK(a.ndim == 2 && a.dims[0] == 2 && a.dims[1] == 3 && a.size == 6 && a.data && a.data[5] == 6);
    idx_free(&a);
    const struct {
        unsigned char bytes[20];
        size_t n;
        const char *needle;
    } bad[] = {
        {{1, 0, 8, 1, 0, 0, 0, 1, 7}, 9, "not an IDX file"},
        {{0, 0, 0x0D, 1, 0, 0, 0, 1, 7, 7, 7, 7}, 12, "element type 0x0d"},
        {{0, 0, 8, 9}, 4, "rank 9"},
        {{0, 0, 8, 1, 0, 0}, 6, "truncated header"},
        {{0, 0, 8, 1, 0, 0, 0, 0}, 8, "dim 0 = 0"},
        {{0, 0, 8, 1, 0, 0, 0, 4, 1, 2}, 10, "truncated data"},
        {{0, 0, 8, 1, 0, 0, 0, 1, 1, 2}, 10, "trailing bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i].bytes, bad[i].n);
        err[0] = '\0';
        CHECK(idx_read_u8(path, &a, err, sizeof err) == -1 && a.data == NULL);
        CHECK(strstr(err, path) && strstr(err, bad[i].needle));
        if (!strstr(err, bad[i].needle)) fprintf(stderr, "  case %zu: %s\n", i, err);
    }
    remove(path);
    CHECK(idx_read_u8("/nonexistent.idx", &a, err, sizeof err) == -1 && strstr(err, "cannot open"));
}

int main(void)
{
    static const ff_test_case cases[] = {TEST(test_idx_reader_validates), TEST(test_missing_data_is_a_clear_error),
                                         TEST(test_demo_training_loss_falls)};
    int n = 3;
    if (!mnist_available(MNIST_DEFAULT_DIR)) {
        printf("test_demo_short: SKIPPED the training case: Fashion-MNIST not found in %s "
               "(apt-get install dataset-fashion-mnist)\n", MNIST_DEFAULT_DIR);
        n = 2;
    }
    return ff_test_run("demo_short", cases, n);
}
