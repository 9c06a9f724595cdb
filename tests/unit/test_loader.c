#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp */
/* The plugin loader's failure paths, each with a deliberately bad plugin built by
 * tests/plugins, and its search rules (FF_BACKEND, FF_BACKEND_PATH, the core's dir). */
#include <stdlib.h>
#include <unistd.h>

#include "ff_test.h"

static char plugin_dir[2048];

static const char *plugin(const char *file)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", plugin_dir, file);
    return path;
}

static void test_missing_file(void)
{
    CHECK_ERROR(ff_backend_load("/nonexistent/x.so") == NULL, FF_ERR_BACKEND, "/nonexistent/x.so");
    CHECK_ERROR(ff_backend_load("no_such_backend") == NULL, FF_ERR_BACKEND, "no backend named 'no_such_backend'");
    CHECK(strstr(ff_last_error(), "libff_backend_no_such_backend.so") != NULL);
}

static void test_not_a_plugin(void)
{
    const char *p = plugin("not_a_plugin.so");
    CHECK_ERROR(ff_backend_load(p) == NULL, FF_ERR_BACKEND, "cannot load");
    CHECK(strstr(ff_last_error(), "not_a_plugin.so") != NULL);
    /* dlerror() text is included: glibc says "file too short" or "invalid ELF header" */
    CHECK(strstr(ff_last_error(), "too short") || strstr(ff_last_error(), "ELF"));
}

static void test_no_entry_symbol(void)
{
    CHECK_ERROR(ff_backend_load(plugin("libff_bad_noentry.so")) == NULL, FF_ERR_BACKEND,
                "symbol ff_backend_entry not found");
    CHECK(strstr(ff_last_error(), "libff_bad_noentry.so") != NULL);
}

static void test_wrong_abi_version(void)
{
    char want[64];
    snprintf(want, sizeof want, "expected %d, found %d", FF_ABI_VERSION, FF_ABI_VERSION + 41);
    CHECK_ERROR(ff_backend_load(plugin("libff_bad_abi.so")) == NULL, FF_ERR_BACKEND, want);
}

static void test_wrong_struct_size(void)
{
    char want[96];
    snprintf(want, sizeof want, "expected at least %u bytes, found 16", (unsigned)FF_BACKEND_V1_SIZE);
    CHECK_ERROR(ff_backend_load(plugin("libff_bad_size.so")) == NULL, FF_ERR_BACKEND, want);
}

static void test_init_fails(void)
{
    CHECK_ERROR(ff_backend_load(plugin("libff_bad_init.so")) == NULL, FF_ERR_BACKEND, "init refused on purpose");
    CHECK(strstr(ff_last_error(), "failed to initialize") != NULL);
}

static void test_null_entry_and_missing_required(void)
{
    CHECK_ERROR(ff_backend_load(plugin("libff_bad_null_entry.so")) == NULL, FF_ERR_BACKEND, "returned NULL");
    CHECK_ERROR(ff_backend_load(plugin("libff_bad_missing_required.so")) == NULL, FF_ERR_BACKEND,
                "required vtable entry 'matmul' is NULL");
}

static void test_cuda_stub_reports_no_device(void)
{
    CHECK_ERROR(ff_backend_load("cuda_stub") == NULL, FF_ERR_BACKEND, "no CUDA device");
    /* failures load nothing: no backend is registered by them */
    CHECK(ff_backend_count() == 0);
}

static void test_default_from_env_fails_loudly(void)
{
    setenv("FF_BACKEND", "/nonexistent/x.so", 1);
    CHECK_ERROR(ff_backend_default() == NULL, FF_ERR_BACKEND, "/nonexistent/x.so");
    CHECK(strstr(ff_last_error(), "FF_BACKEND") != NULL);
    CHECK_ERROR(ff_zeros(1, (int64_t[]){2}, FF_F32) == NULL, FF_ERR_BACKEND, "/nonexistent/x.so");
    unsetenv("FF_BACKEND");
}

/* An out-of-tree backend dropped into a directory on FF_BACKEND_PATH loads by name. */
static void copy_file(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    CHECK(in && out);
    if (in && out) {
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
}

static void test_backend_path_resolution(void)
{
    char dir[] = "/tmp/ff_loader_test_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    ff_shutdown(); /* nothing loaded: the copy below is the only "cpu" */
    ff_backend *cpu_probe = NULL;
    char src[4096], dst[4096], wrong[4096];
    /* the built cpu plugin copied out of the tree: found through FF_BACKEND_PATH first */
    snprintf(src, sizeof src, "%s/../lib/libff_backend_cpu.so", plugin_dir);
    snprintf(dst, sizeof dst, "%s/libff_backend_cpu.so", dir);
    copy_file(src, dst);
    /* and under a file name that promises another backend: refused, naming both */
    snprintf(wrong, sizeof wrong, "%s/libff_backend_outoftree.so", dir);
    copy_file(src, wrong);
    setenv("FF_BACKEND_PATH", dir, 1);
    CHECK_ERROR(ff_backend_load("outoftree") == NULL, FF_ERR_BACKEND, "provides backend 'cpu', not 'outoftree'");
    CHECK_ERROR(ff_backend_load(wrong) == NULL, FF_ERR_BACKEND, "name the file libff_backend_cpu.so");
    cpu_probe = ff_backend_load("cpu");
    CHECK(cpu_probe != NULL);
    CHECK(cpu_probe && strcmp(ff_backend_name(cpu_probe), "cpu") == 0);
    CHECK(cpu_probe && strncmp(ff_backend_path(cpu_probe), dir, strlen(dir)) == 0);
    /* loading the same file again returns the same backend */
    CHECK(ff_backend_load(dst) == cpu_probe);
    /* discovery lists it */
    CHECK(ff_backend_discover(NULL, NULL) >= 2);
    unsetenv("FF_BACKEND_PATH");
    ff_shutdown();
    CHECK(ff_backend_count() == 0);
    unlink(dst);
    unlink(wrong);
    rmdir(dir);
}

/* FF_BACKEND unset: the fastest backend built (cpu_blas here, when it was built), never
 * the reference unless it is all there is. */
static void test_default_is_fastest_and_supports(void)
{
    ff_backend *def = ff_backend_default();
    const char *want = FF_TEST_HAVE_CPU_BLAS ? "cpu_blas" : "cpu";
    CHECK(def && strcmp(ff_backend_name(def), want) == 0);
    ff_backend *be = ff_backend_load("cpu");
    CHECK(be && strcmp(ff_backend_name(be), "cpu") == 0);
    CHECK(ff_backend_abi_version(be) == FF_ABI_VERSION);
    CHECK(ff_backend_supports(be, FF_KIND_BINARY, FF_BINARY_ADD, FF_F32));
    CHECK(!ff_backend_supports(be, FF_KIND_UNARY, FF_UNARY_EXP, FF_I32)); /* the core promotes ints first */
    ff_tensor *t = ff_ones(1, (int64_t[]){3}, FF_F32); /* on the default backend */
    CHECK(t && ff_tensor_backend(t) == def);
    ff_tensor *same = ff_to(t, def), *moved = ff_to(t, be);
    CHECK(same == t);
    CHECK(moved && ff_tensor_backend(moved) == be && (def == be) == (moved == t));
    ff_tensor_release(same);
    ff_tensor_release(moved);
    ff_tensor_release(t);
}

static void setup(void)
{
    const char *d = getenv("FF_TEST_PLUGIN_DIR");
    snprintf(plugin_dir, sizeof plugin_dir, "%s", d ? d : "test_plugins");
}

FF_TEST_MAIN("loader", TEST(setup), TEST(test_missing_file), TEST(test_not_a_plugin), TEST(test_no_entry_symbol),
             TEST(test_wrong_abi_version), TEST(test_wrong_struct_size), TEST(test_init_fails),
             TEST(test_null_entry_and_missing_required), TEST(test_cuda_stub_reports_no_device),
             TEST(test_default_from_env_fails_loudly), TEST(test_backend_path_resolution),
             TEST(test_default_is_fastest_and_supports))
