/* ff-info: which backends are available and loaded, their versions and what they
 * support. Exits non-zero if the default backend (FF_BACKEND) cannot be loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff/ff.h"
#include "ff_backend_scalar.h" /* the op names every backend tool shares */

static const ff_dtype dtypes[] = {FF_F32, FF_F64, FF_F16, FF_BF16, FF_I8, FF_I16, FF_I32, FF_I64, FF_U8, FF_BOOL};
#define NDT ((int)(sizeof dtypes / sizeof dtypes[0]))

static void support_row(ff_backend *be, ff_op_kind kind, int op, const char *name)
{
    printf("    %-12s", name);
    for (int i = 0; i < NDT; i++) printf(" %-5s", ff_backend_supports(be, kind, op, dtypes[i]) ? "yes" : "-");
    printf("\n");
}

static void describe(ff_backend *be, int verbose)
{
    printf("  %s %s (ABI %d, rules step %d%s) from %s\n", ff_backend_name(be), ff_backend_version(be),
           ff_backend_abi_version(be), ff_backend_abi_step(be),
           ff_backend_abi_step(be) < FF_ABI_STEP ? ": older rules, see backend_abi.h" : "", ff_backend_path(be));
    if (ff_backend_description(be)[0]) printf("    %s\n", ff_backend_description(be));
    printf("    optional entries: softmax %s, conv2d %s (-v: every entry, by dtype)\n",
           ff_backend_has_softmax(be) ? "yes" : "no (composed by the core)",
           ff_backend_has_conv2d(be) ? "yes" : "no (composed by the core)");
    if (!verbose) return;
    char dev[512];
    if (ff_backend_device_info(be, dev, sizeof dev) == FF_OK) printf("    device: %s\n", dev);
    printf("    %-12s", "op");
    for (int i = 0; i < NDT; i++) printf(" %-5s", ff_dtype_name(dtypes[i]));
    printf("\n");
    support_row(be, FF_KIND_FILL, 0, "fill");
    support_row(be, FF_KIND_MATMUL, 0, "matmul");
    support_row(be, FF_KIND_WHERE, 0, "where");
    support_row(be, FF_KIND_GATHER, 0, "gather");
    support_row(be, FF_KIND_SCATTER_ADD, 0, "scatter_add");
    support_row(be, FF_KIND_RANDOM, FF_RANDOM_UNIFORM, "rand_uniform");
    support_row(be, FF_KIND_RANDOM, FF_RANDOM_NORMAL, "rand_normal");
    support_row(be, FF_KIND_SOFTMAX, 0, "softmax");
    support_row(be, FF_KIND_CONV2D, 0, "conv2d");
    support_row(be, FF_KIND_LINALG, FF_LINALG_SOLVE, "linalg");
    support_row(be, FF_KIND_FFT, FF_FFT_FORWARD, "fft");
    support_row(be, FF_KIND_BATCH_NORM, 0, "batch_norm");
    support_row(be, FF_KIND_POOL2D, FF_POOL2D_MAX_FORWARD, "pool2d");
    support_row(be, FF_KIND_FUSED, 0, "fused");
    support_row(be, FF_KIND_ATTENTION, FF_ATTENTION_FORWARD, "attention");
    support_row(be, FF_KIND_ATTENTION, FF_ATTENTION_DROPOUT, "attn_dropout");
    support_row(be, FF_KIND_LAYER_NORM, 0, "layer_norm");
    support_row(be, FF_KIND_LINEAR, FF_UNARY_GELU_ERF, "linear_gelu");
    support_row(be, FF_KIND_QMATMUL, 0, "qmatmul");
    support_row(be, FF_KIND_QMATMUL, FF_QMATMUL_DYNAMIC, "qmatmul_dyn");
    for (int op = 0; op < FF_UNARY_COUNT; op++) support_row(be, FF_KIND_UNARY, op, ffb_unary_name(op));
    for (int op = 0; op < FF_BINARY_COUNT; op++) support_row(be, FF_KIND_BINARY, op, ffb_binary_name(op));
    for (int op = 0; op < FF_REDUCE_COUNT; op++) support_row(be, FF_KIND_REDUCE, op, ffb_reduce_name(op));
}

typedef struct {
    char names[16][128];
    int count;
} name_list;

static void collect(const char *name, const char *path, void *user)
{
    (void)path;
    name_list *l = user;
    if (l->count < 16) snprintf(l->names[l->count++], sizeof l->names[0], "%s", name);
}

static void print_found(const char *name, const char *path, void *user)
{
    (void)user;
    printf("  %-10s %s\n", name, path);
}

int main(int argc, char **argv)
{
    int verbose = 0, load_all = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "--default-only")) load_all = 0;
        else {
            fprintf(stderr, "usage: ff-info [-v|--verbose] [--default-only]\n"
                            "  Lists backend plugins on the search path (FF_BACKEND_PATH, then the core's\n"
                            "  directory), loads the default one (FF_BACKEND; unset: cpu_blas if it was built,\n"
                            "  else the reference cpu) and reports it.\n");
            return 2;
        }
    }
    printf("FusionFlow %s, backend ABI %d, max rank %d\n", FF_VERSION_STRING, FF_ABI_VERSION, FF_MAX_DIMS);
    const char *env = getenv("FF_BACKEND");
    printf("FF_BACKEND=%s  FF_BACKEND_PATH=%s\n", env && *env ? env : "(unset: the fastest built, cpu_blas, else cpu)",
           getenv("FF_BACKEND_PATH") ? getenv("FF_BACKEND_PATH") : "(unset)");
    printf("available backends:\n");
    if (ff_backend_discover(print_found, NULL) == 0) printf("  (none found)\n");

    ff_backend *def = ff_backend_default();
    if (!def) {
        fprintf(stderr, "ff-info: error: %s\n", ff_last_error());
        return 1;
    }
    if (load_all) { /* load every other discovered backend too, reporting failures */
        name_list found = {.count = 0};
        ff_backend_discover(collect, &found);
        for (int i = 0; i < found.count; i++)
            if (!ff_backend_load(found.names[i]))
                printf("  %s: cannot start: %s\n", found.names[i], ff_last_error());
    }
    printf("loaded backends (default: %s):\n", ff_backend_name(def));
    for (int i = 0; i < ff_backend_count(); i++) describe(ff_backend_at(i), verbose);
    ff_shutdown();
    return 0;
}

