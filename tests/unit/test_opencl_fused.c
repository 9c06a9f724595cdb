/*
 * The opencl backend's fused entry (backends/opencl/ocl_fused.c) beyond what
 * ff-conformance's family "fused" covers, with a kernel generated for every program
 * (FF_OPENCL_FUSED=jit; the default runs small programs on the interpreter, which the
 * suite's default run covers): graphs on the device hand their chains to it and replay
 * to the bits eager gives; a program whose layout numbers do not fit the kernel's
 * arguments (16 views of rank 6 that merge nowhere) takes the __constant-buffer path and
 * still equals the plain entries op by op; programs the ABI rules out are refused with a
 * message, writing nothing. Runs on whatever device FF_OPENCL_DEVICE picks, PoCL on the
 * CPU in CI.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *ocl;

/* Bitwise equality of two tensors of one shape and dtype. */
static bool same_bits(const ff_tensor *a, const ff_tensor *b)
{
    size_t n = (size_t)ff_tensor_numel(a) * ff_dtype_size(ff_tensor_dtype(a));
    unsigned char *x = malloc(n + 1), *y = malloc(n + 1);
    bool ok = ff_tensor_numel(a) == ff_tensor_numel(b) && x && y && !ff_tensor_to_host(a, x, n) &&
              !ff_tensor_to_host(b, y, n) && !memcmp(x, y, n);
    free(x);
    free(y);
    return ok;
}

/* relu(a * b + c) (f32) or sigmoid(a) * b - exp(a) / b (f64) */
static ff_tensor *chain(bool f64, ff_tensor *a, ff_tensor *b, ff_tensor *c)
{
    if (!f64) {
        ff_tensor *ab = ff_mul(a, b), *abc = ff_add(ab, c), *y = ff_relu(abc);
        RELEASE(ab, abc);
        return y;
    }
    ff_tensor *s = ff_sigmoid(a), *sb = ff_mul(s, b), *e = ff_exp(a), *eb = ff_div(e, b), *y = ff_sub(sb, eb);
    RELEASE(s, sb, e, eb);
    return y;
}

/* Both chains (c broadcast over rows) captured, fused by the backend, replayed on new
 * inputs: equal to eager bit for bit. */
static void test_graph_chains_run_fused_on_the_device(void)
{
    CHECK(ff_backend_set_default(ocl) == FF_OK);
    int64_t sh[2] = {300, 257}, row[1] = {257};
    for (int f64 = 0; f64 < 2; f64++) {
        ff_dtype t = f64 ? FF_F64 : FF_F32;
        ff_tensor *a = ff_rand_uniform(2, sh, t, -2, 2, 1), *b = ff_rand_uniform(2, sh, t, 0.5, 2, 2),
                  *c = ff_rand_uniform(1, row, t, -1, 1, 3);
        CHECK(ff_graph_capture_begin() == FF_OK);
        ff_tensor *y = chain(f64, a, b, c);
        ff_graph *g = ff_graph_capture_end();
        CHECK(g != NULL);
        ff_graph_info info;
        CHECK(g && ff_graph_stats(g, &info) == FF_OK && info.fused_groups == 1 && info.fused_by_backend == 1);
        ff_tensor *a2 = ff_rand_uniform(2, sh, t, -3, 3, 11);
        CHECK(ff_copy_(a, a2) == FF_OK);
        CHECK(g && ff_graph_replay(g) == FF_OK);
        ff_tensor *want = chain(f64, a, b, c);
        CHECK(same_bits(y, want));
        ff_graph_release(g);
        RELEASE(a, b, c, y, a2, want);
    }
}

/* ---- the vtable, directly --------------------------------------------------------- */

enum { NV = 16, RANK = 6 };
static const int64_t shape6[RANK] = {2, 2, 2, 2, 2, 3};

/* View k of buffer buf: shape6 with each dim padded by (k % 3) + 1 elements, so no two
 * dims merge and every stride but the last is a "layout number". Returns the elements
 * the buffer needs. */
static int64_t padded_view(ff_view *v, void *buf, int k, ff_dtype t)
{
    *v = (ff_view){.buf = buf, .offset = k % 5, .dtype = t, .ndim = RANK};
    int64_t stride = 1;
    for (int d = RANK - 1; d >= 0; d--) {
        v->shape[d] = shape6[d];
        v->strides[d] = stride;
        stride *= shape6[d] + k % 3 + 1;
    }
    return v->offset + stride;
}

static void *upload_ramp(int64_t n, ff_dtype t, int k)
{
    double *h = malloc(sizeof *h * (size_t)n);
    float *hf = malloc(sizeof *hf * (size_t)n);
    for (int64_t i = 0; i < n; i++) h[i] = 0.37 * (double)((i * 7 + k * 13) % 23) - 4.1, hf[i] = (float)h[i];
    void *buf = ocl->vt->alloc(ocl->ctx, (size_t)n * ff_dtype_size(t));
    if (buf) ocl->vt->upload(ocl->ctx, buf, 0, t == FF_F32 ? (void *)hf : (void *)h, (size_t)n * ff_dtype_size(t));
    free(h);
    free(hf);
    return buf;
}

/* out = ((((a0 + a1) * a2 - a3) / a4) ...) over 15 inputs through 14 temporaries,
 * fused and op by op (the temporaries as contiguous tensors): same bytes. */
static void test_layout_numbers_past_the_arguments(void)
{
    for (int f64 = 0; f64 < 2; f64++) {
        ff_dtype t = f64 ? FF_F64 : FF_F32;
        ff_view v[NV + NV], tmp[NV];
        void *bufs[2 * NV] = {0};
        int64_t nel[NV];
        for (int k = 0; k < NV; k++) {
            int64_t n = padded_view(&v[k], NULL, k, t);
            bufs[k] = upload_ramp(n, t, k);
            v[k].buf = bufs[k];
            nel[k] = n;
        }
        v[NV] = v[NV - 1];
        bufs[NV] = upload_ramp(nel[NV - 1], t, 99); /* the op-by-op run's output */
        v[NV].buf = bufs[NV];
        for (int k = 0; k < NV - 2; k++) { /* contiguous temporaries for the op-by-op run */
            tmp[k] = (ff_view){.dtype = t, .ndim = RANK};
            int64_t stride = 1;
            for (int d = RANK - 1; d >= 0; d--) tmp[k].shape[d] = shape6[d], tmp[k].strides[d] = stride, stride *= shape6[d];
            bufs[NV + 1 + k] = tmp[k].buf = ocl->vt->alloc(ocl->ctx, (size_t)stride * ff_dtype_size(t));
        }
        static const ff_binary_op ops[4] = {FF_BINARY_ADD, FF_BINARY_MUL, FF_BINARY_SUB, FF_BINARY_DIV};
        ff_fused_inst inst[NV - 1];
        for (int i = 0; i < NV - 1; i++) /* value NV - 1 is the output, NV + i temporary i */
            inst[i] = (ff_fused_inst){FF_KIND_BINARY, ops[i % 4], i == NV - 2 ? NV - 1 : NV + i,
                                      {i == 0 ? 0 : NV + i - 1, i + 1}};
        inst[NV - 2].src[1] = 1; /* the output is written once, from inputs and temporaries */
        ff_fused_program p = {.dtype = t, .ndim = RANK, .n_views = NV, .views = v, .n_values = 2 * NV - 2,
                              .n_inst = NV - 1, .inst = inst};
        memcpy(p.shape, shape6, sizeof shape6);
        ff_clear_error();
        CHECK(FF_VT_OPT(ocl, fused)(ocl->ctx, &p) == FF_OK);
        ff_status st = FF_OK;
        for (int i = 0; i < NV - 1 && !st; i++) {
            const ff_view *d = inst[i].dst == NV - 1 ? &v[NV] : &tmp[inst[i].dst - NV];
            const ff_view *a = inst[i].src[0] < NV ? &v[inst[i].src[0]] : &tmp[inst[i].src[0] - NV];
            st = ocl->vt->binary(ocl->ctx, (ff_binary_op)inst[i].op, d, a, &v[inst[i].src[1]]);
        }
        CHECK(st == FF_OK);
        size_t nb = (size_t)nel[NV - 1] * ff_dtype_size(t);
        unsigned char *got = malloc(nb), *want = malloc(nb);
        CHECK(got && want && !ocl->vt->download(ocl->ctx, bufs[NV - 1], 0, got, nb) &&
              !ocl->vt->download(ocl->ctx, bufs[NV], 0, want, nb));
        /* the view's elements equal; the padding keeps each run's own ramp */
        int64_t at[RANK] = {0}, bad = 0;
        for (int64_t e = 0; e < 96; e++) {
            int64_t off = v[NV - 1].offset;
            for (int d = 0; d < RANK; d++) off += at[d] * v[NV - 1].strides[d];
            bad += memcmp(got + off * (int64_t)ff_dtype_size(t), want + off * (int64_t)ff_dtype_size(t), ff_dtype_size(t)) != 0;
            for (int d = RANK - 1; d >= 0 && ++at[d] == shape6[d]; d--) at[d] = 0;
        }
        CHECK(bad == 0);
        free(got);
        free(want);
        for (int k = 0; k < 2 * NV; k++)
            if (bufs[k]) ocl->vt->free(ocl->ctx, bufs[k]);
    }
}

/* Programs the ABI rules out: refused with FF_ERR_INVALID / FF_ERR_UNSUPPORTED and a
 * message, out untouched. */
static void test_malformed_programs_are_refused(void)
{
    enum { N = 12 };
    float host[2 * N];
    for (int i = 0; i < 2 * N; i++) host[i] = i < N ? (float)i - 5.0f : -7.0f;
    void *buf = ocl->vt->alloc(ocl->ctx, sizeof host);
    CHECK(buf && ocl->vt->upload(ocl->ctx, buf, 0, host, sizeof host) == FF_OK);
    ff_view v[17];
    for (int k = 0; k < 17; k++)
        v[k] = (ff_view){.buf = buf, .offset = k ? N : 0, .dtype = FF_F32, .ndim = 1, .shape = {N}, .strides = {1}};
    struct {
        ff_fused_inst in;
        int n_views, n_values, n_inst;
        ff_status want;
        const char *needle;
    } bad[] = {
        {{FF_KIND_BINARY, FF_BINARY_ADD, 1, {0, 9}}, 2, 3, 1, FF_ERR_INVALID, "reads value 9"},
        {{FF_KIND_UNARY, FF_UNARY_NEG, -1, {0, 0}}, 2, 2, 1, FF_ERR_INVALID, "writes value -1"},
        {{FF_KIND_UNARY, FF_UNARY_NEG, 1, {0, 0}}, 2, 2, -1, FF_ERR_INVALID, "do not make a program"},
        {{FF_KIND_UNARY, FF_UNARY_NEG, 1, {0, 0}}, 2, 1, 1, FF_ERR_INVALID, "do not make a program"},
        {{FF_KIND_WHERE, 0, 1, {0, 0}}, 2, 2, 1, FF_ERR_UNSUPPORTED, "neither unary nor binary"},
        {{FF_KIND_UNARY, FF_UNARY_ISNAN, 1, {0, 0}}, 2, 2, 1, FF_ERR_UNSUPPORTED, "isnan"},
        {{FF_KIND_BINARY, FF_BINARY_LT, 1, {0, 0}}, 2, 2, 1, FF_ERR_UNSUPPORTED, "lt"},
        {{FF_KIND_UNARY, FF_UNARY_NEG, 1, {0, 0}}, 17, 17, 1, FF_ERR_UNSUPPORTED, "views"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ff_fused_program p = {.dtype = FF_F32, .ndim = 1, .shape = {N}, .n_views = bad[i].n_views, .views = v,
                              .n_values = bad[i].n_values, .n_inst = bad[i].n_inst, .inst = &bad[i].in};
        ff_clear_error();
        ff_status st = FF_VT_OPT(ocl, fused)(ocl->ctx, &p);
        CHECK(st == bad[i].want && strstr(ff_last_error(), "opencl fused") && strstr(ff_last_error(), bad[i].needle));
        if (st != bad[i].want || !strstr(ff_last_error(), bad[i].needle))
            fprintf(stderr, "  program %zu: status %d, message '%s'\n", i, (int)st, ff_last_error());
    }
    float after[2 * N];
    CHECK(ocl->vt->download(ocl->ctx, buf, 0, after, sizeof after) == FF_OK && !memcmp(after, host, sizeof host));
    ocl->vt->free(ocl->ctx, buf);
}

static void setup(void)
{
    setenv("FF_OPENCL_FUSED", "jit", 1); /* read when the backend initializes */
    ocl = ff_backend_load("opencl");
    if (!ocl) {
        fprintf(stderr, "cannot load the opencl backend: %s\n", ff_last_error());
        exit(1);
    }
    CHECK(FF_VT_OPT(ocl, fused) != NULL);
    CHECK(ff_backend_supports(ocl, FF_KIND_FUSED, 0, FF_F32) && ff_backend_supports(ocl, FF_KIND_FUSED, 0, FF_F64));
    CHECK(!ff_backend_supports(ocl, FF_KIND_FUSED, 0, FF_I32));
}

FF_TEST_MAIN("opencl_fused", TEST(setup), TEST(test_graph_chains_run_fused_on_the_device),
             TEST(test_layout_numbers_past_the_arguments), TEST(test_malformed_programs_are_refused))
