/*
 * The kernel program: a prelude of #defines generated from backend_abi.h's enums (so
 * the kernels' op codes cannot drift from the ABI), then the kernels/ sources as embedded at
 * build time (ocl_kernels_src.c, made by embed_cl.cmake). The fused entry's generated
 * kernels are built the same way on the prelude and common.cl + formulas.cl only.
 *
 * Compiling it costs seconds on some drivers, so the program binary is cached on disk,
 * keyed by a hash of the platform, device, driver version and the full source:
 * $FF_OPENCL_CACHE_DIR, else $XDG_CACHE_HOME/fusionflow/opencl, else
 * ~/.cache/fusionflow/opencl. A cache that cannot be read or written only costs the
 * compile; a stale or corrupt binary fails to load and is rebuilt from source.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ocl_impl.h"

extern const char ocl_kernel_source[];            /* ocl_kernels_src.c */
extern const unsigned long ocl_kernel_prelude_len; /* its common.cl + formulas.cl */

static const char *const kernel_names[OK_COUNT] = {
    [OK_FILL] = "ff_fill", [OK_COPY] = "ff_copy", [OK_UNARY] = "ff_unary", [OK_UNARY_F32] = "ff_unary_f32",
    [OK_BINARY] = "ff_binary", [OK_BINARY_F32] = "ff_binary_f32", [OK_WHERE] = "ff_where",
    [OK_REDUCE] = "ff_reduce", [OK_REDUCE_FINISH] = "ff_reduce_finish", [OK_SOFTMAX] = "ff_softmax", [OK_INDEX_CHECK] = "ff_index_check",
    [OK_GATHER] = "ff_gather", [OK_SCATTER_ADD] = "ff_scatter_add", [OK_RANDOM] = "ff_random",
    [OK_MATMUL] = "ff_matmul", [OK_SCAN] = "ff_scan", [OK_ARGSORT] = "ff_argsort", [OK_FUSED] = "ff_fused",
    [OK_ATT_FWD] = "ff_attention_fwd", [OK_ATT_DQ] = "ff_attention_dq", [OK_ATT_DKV] = "ff_attention_dkv",
    [OK_QMATMUL] = "ff_qmatmul", [OK_QDYN_RANGE] = "ff_qdyn_range", [OK_QDYN_FOLD] = "ff_qdyn_fold",
    [OK_QDYN_QUANTIZE] = "ff_qdyn_quantize", [OK_LN_FWD] = "ff_layer_norm_fwd", [OK_LN_BWD] = "ff_layer_norm_bwd",
    [OK_LN_COLS] = "ff_layer_norm_cols", [OK_LN_COLS_SUM] = "ff_layer_norm_cols_sum",
    [OK_GATHER_ROWS_U8] = "ff_gather_rows_u8", [OK_GATHER_ROWS_U16] = "ff_gather_rows_u16",
    [OK_GATHER_ROWS_U32] = "ff_gather_rows_u32", [OK_GATHER_ROWS_U64] = "ff_gather_rows_u64",
    [OK_SCATTER_ADD_ROWS_F32] = "ff_scatter_add_rows_f32", [OK_SCATTER_ADD_ROWS_F64] = "ff_scatter_add_rows_f64",
    [OK_SCATTER_ADD_ROWS_CPU_F32] = "ff_scatter_add_rows_cpu_f32",
    [OK_SCATTER_ADD_ROWS_CPU_F64] = "ff_scatter_add_rows_cpu_f64",
    [OK_SUM_ROWS_F32] = "ff_sum_rows_f32", [OK_SUM_ROWS_F64] = "ff_sum_rows_f64",
};

/* "#define U_EXP 3" and so on, from the op names the backends share, then the first
 * body_len bytes of the embedded kernels, then tail. */
static char *make_source(size_t body_len, const char *tail)
{
    size_t cap = body_len + strlen(tail) + 8192, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    struct { const char *prefix; const char *(*name)(int); int count; } enums[] = {
        {"U_", ffb_unary_name, FF_UNARY_COUNT},
        {"B_", ffb_binary_name, FF_BINARY_COUNT},
        {"R_", ffb_reduce_name, FF_REDUCE_COUNT},
    };
    for (size_t e = 0; e < sizeof enums / sizeof enums[0]; e++) {
        for (int op = 0; op < enums[e].count; op++) {
            len += (size_t)snprintf(s + len, cap - len, "#define %s", enums[e].prefix);
            for (const char *p = enums[e].name(op); *p; p++) s[len++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
            len += (size_t)snprintf(s + len, cap - len, " %d\n", op);
        }
    }
    memcpy(s + len, ocl_kernel_source, body_len);
    memcpy(s + len + body_len, tail, strlen(tail) + 1);
    return s;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The cache file for this device and source, or 0 if there is no cache directory. */
static int cache_path(const ocl_ctx *c, const char *src, char *out, size_t cap)
{
    char dir[1024];
    const char *env = getenv("FF_OPENCL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && *env) snprintf(dir, sizeof dir, "%s", env);
    else if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/fusionflow/opencl", xdg);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/fusionflow/opencl", home);
    else return 0;
    /* mkdir -p */
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 0;
        *p = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 0;
    char driver[128] = "";
    clGetDeviceInfo(c->device, CL_DRIVER_VERSION, sizeof driver, driver, NULL);
    driver[sizeof driver - 1] = 0;
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, c->platform_name);
    h = fnv1a(h, c->device_name);
    h = fnv1a(h, c->device_version);
    h = fnv1a(h, driver);
    h = fnv1a(h, src);
    return snprintf(out, cap, "%s/ff-%016llx.bin", dir, (unsigned long long)h) < (int)cap;
}

static cl_program load_cached(ocl_ctx *c, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cl_program prog = NULL;
    unsigned char *bin = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (bin = malloc((size_t)n)) && fread(bin, 1, (size_t)n, f) == (size_t)n) {
        size_t len = (size_t)n;
        const unsigned char *bins[1] = {bin};
        cl_int bstat, err;
        prog = clCreateProgramWithBinary(c->context, 1, &c->device, &len, bins, &bstat, &err);
        if (prog && clBuildProgram(prog, 1, &c->device, "", NULL, NULL) != CL_SUCCESS) {
            clReleaseProgram(prog);
            prog = NULL;
        }
    }
    free(bin);
    fclose(f);
    return prog;
}

/* Writes the binary to a temporary file and renames it into place, so a reader never
 * sees half a file (two processes building at once both write whole files). */
static void save_cached(cl_program prog, const char *path)
{
    size_t n = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || n == 0) return;
    unsigned char *bin = malloc(n);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS && (f = fopen(tmp, "wb"))) {
        int ok = fwrite(bin, 1, n, f) == n;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path) != 0) remove(tmp);
    }
    free(bin);
}

static ff_status build_from_source(ocl_ctx *c, const char *entry, const char *src, cl_program *out)
{
    cl_int err;
    cl_program prog = clCreateProgramWithSource(c->context, 1, &src, NULL, &err);
    if (!prog) return ocl_cl_fail(c, entry, "clCreateProgramWithSource", err);
    err = clBuildProgram(prog, 1, &c->device, "", NULL, NULL);
    if (err == CL_SUCCESS) {
        *out = prog;
        return FF_OK;
    }
    char log[2048] = "";
    clGetProgramBuildInfo(prog, c->device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    log[sizeof log - 1] = 0;
    clReleaseProgram(prog);
    return ocl_error(c, FF_ERR_BACKEND, "opencl %s: the kernels do not compile on \"%s\" (%s): %.1500s", entry,
                     c->device_name, ocl_cl_error_name(err), log);
}

/* The prelude + the first body_len bytes of the kernels + tail, built (or loaded from the
 * disk cache) for the device. */
static ff_status build_cached(ocl_ctx *c, const char *entry, size_t body_len, const char *tail, cl_program *out)
{
    char *src = make_source(body_len, tail);
    if (!src) return ocl_error(c, FF_ERR_OOM, "opencl %s: out of memory", entry);
    char path[1024];
    int cached = cache_path(c, src, path, sizeof path);
    ff_status st = FF_OK;
    *out = cached ? load_cached(c, path) : NULL;
    if (!*out) {
        st = build_from_source(c, entry, src, out);
        if (!st && cached) save_cached(*out, path);
    }
    free(src);
    return st;
}

ff_status ocl_program_build_fused(ocl_ctx *c, const char *kernel_src, cl_program *out)
{
    return build_cached(c, "fused", ocl_kernel_prelude_len, kernel_src, out);
}

ff_status ocl_program_build(ocl_ctx *c)
{
    ff_status st = build_cached(c, "init", strlen(ocl_kernel_source), "", &c->program);
    if (st) return st;
    for (int k = 0; k < OK_COUNT; k++) {
        cl_int err;
        c->kernels[k] = clCreateKernel(c->program, kernel_names[k], &err);
        if (!c->kernels[k]) return ocl_cl_fail(c, "init", kernel_names[k], err);
    }
    return FF_OK;
}

void ocl_program_release(ocl_ctx *c)
{
    for (int k = 0; k < OK_COUNT; k++)
        if (c->kernels[k]) clReleaseKernel(c->kernels[k]);
    if (c->program) clReleaseProgram(c->program);
}
