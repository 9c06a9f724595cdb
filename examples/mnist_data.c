/* Loading Fashion-MNIST splits from IDX files into normalized float arrays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idx.h"
#include "mnist_train.h"

double mnist_now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads <dir>/<prefix>-<kind>-idx<r>-ubyte.gz, falling back to the unpacked name. */
static int read_part(const char *dir, const char *prefix, const char *kind, int rank, idx_array *a, char *err,
                     size_t errlen)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s-%s-idx%d-ubyte.gz", dir, prefix, kind, rank);
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
    } else {
        snprintf(path, sizeof path, "%s/%s-%s-idx%d-ubyte", dir, prefix, kind, rank);
        probe = fopen(path, "rb");
        if (!probe) {
            snprintf(err, errlen, "%s/%s-%s-idx%d-ubyte(.gz): not found (install Debian's dataset-fashion-mnist "
                     "or pass --data DIR)", dir, prefix, kind, rank);
            return -1;
        }
        fclose(probe);
    }
    if (idx_read_u8(path, a, err, errlen)) return -1;
    if (a->ndim != rank) {
        snprintf(err, errlen, "%s: expected a rank-%d IDX file, got rank %d", path, rank, a->ndim);
        idx_free(a);
        return -1;
    }
    return 0;
}

bool mnist_available(const char *dir)
{
    static const char *const names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                        "t10k-labels-idx1-ubyte"};
    for (int i = 0; i < 4; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.gz", dir, names[i]);
        FILE *f = fopen(path, "rb");
        if (!f) {
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            f = fopen(path, "rb");
        }
        if (!f) return false;
        fclose(f);
    }
    return true;
}

int mnist_load(const char *dir, const char *prefix, int64_t max_n, double *mean, double *std, mnist_split *out,
               char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    idx_array img, lab;
    if (read_part(dir, prefix, "images", 3, &img, err, errlen)) return -1;
    if (read_part(dir, prefix, "labels", 1, &lab, err, errlen)) {
        idx_free(&img);
        return -1;
    }
    int rc = -1;
    if (img.dims[1] != 28 || img.dims[2] != 28) {
        snprintf(err, errlen, "%s/%s-images: images are %lldx%lld, expected 28x28", dir, prefix,
                 (long long)img.dims[1], (long long)img.dims[2]);
        goto done;
    }
    if (img.dims[0] != lab.dims[0]) {
        snprintf(err, errlen, "%s/%s: %lld images but %lld labels", dir, prefix, (long long)img.dims[0],
                 (long long)lab.dims[0]);
        goto done;
    }
    for (size_t i = 0; i < lab.size; i++)
        if (lab.data[i] >= MNIST_CLASSES) {
            snprintf(err, errlen, "%s/%s-labels: label %u at index %zu is not in [0, %d)", dir, prefix, lab.data[i], i,
                     MNIST_CLASSES);
            goto done;
        }
    out->n = max_n > 0 && max_n < img.dims[0] ? max_n : img.dims[0];
    size_t npix = (size_t)out->n * MNIST_PIXELS;
    out->images = malloc(npix * sizeof *out->images);
    out->labels = malloc((size_t)out->n * sizeof *out->labels);
    if (!out->images || !out->labels) {
        snprintf(err, errlen, "%s/%s: out of memory", dir, prefix);
        goto done;
    }
    if (*std <= 0) { /* statistics of this split, in double to keep 47M terms exact enough */
        double s = 0, s2 = 0;
        for (size_t i = 0; i < npix; i++) {
            double v = img.data[i] / 255.0;
            s += v;
            s2 += v * v;
        }
        *mean = s / (double)npix;
        *std = sqrt(s2 / (double)npix - *mean * *mean);
        if (!(*std > 1e-12)) *std = 1.0; /* constant images: only center them */
    }
    for (size_t i = 0; i < npix; i++) out->images[i] = (float)((img.data[i] / 255.0 - *mean) / *std);
    for (int64_t i = 0; i < out->n; i++) out->labels[i] = lab.data[i];
    rc = 0;
done:
    idx_free(&img);
    idx_free(&lab);
    if (rc) mnist_free(out);
    return rc;
}

void mnist_free(mnist_split *s)
{
    if (!s) return;
    free(s->images);
    free(s->labels);
    memset(s, 0, sizeof *s);
}
