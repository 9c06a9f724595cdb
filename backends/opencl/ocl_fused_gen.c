/*
 * The fused entry's generated kernels (ocl_fused.c decides when a program gets one):
 * OpenCL C for one program signature (ocl_impl.h), straight-line, built on the
 * prelude + common.cl + formulas.cl.
 *
 *   __kernel void ff_fused_k(long numel, __global const float *restrict p0, ...,
 *                            __global float *restrict p3, long a0, ..., long a12)
 *   {
 *       long n = get_global_id(0);
 *       if (n >= numel) return;
 *       long o0 = a1;  ...  long r = n, i;  i = r % a0;  r /= a0;  o0 += i * a3;  ...
 *       float v0 = p0[o0]; ...
 *       v4 = v0 * v1;
 *       v5 = v4 + v2;
 *       v3 = (float)unary_f(U_RELU, v5);
 *       p3[o3] = v3;
 *   }
 *
 * Each slot p<k> is loaded once if the program reads it before writing it and stored
 * once at the end if it writes it; every value is a variable of the program's dtype, as
 * op by op each is a tensor of that dtype, and each instruction is written as ff_unary /
 * ff_binary compute it (unary_f, binary_f in double, rounded to float for f32; f32
 * + - * in float, as ff_binary_f32): the plain entries' numbers, bit for bit. The
 * layout numbers a<j> (ocl_layout_map) are arguments, or a[j] of a __constant buffer.
 * Measured on PoCL: a grid-stride loop, or layout numbers read from a buffer, made this
 * code several times slower; strides 0 and 1 compiled in instead of passed were no
 * faster and doubled the kernels ff-conformance builds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ocl_impl.h"

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(sbuf *b, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !b->oom; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap : 4096) * 2 + (size_t)n;
        char *s = realloc(b->s, cap);
        if (!s) b->oom = 1;
        else b->s = s, b->cap = cap;
    }
}

/* "U_RELU", "B_ADD": the prelude's names (ocl_program.c) */
static void put_op(sbuf *b, const char *prefix, const char *name)
{
    char up[64];
    size_t i = 0;
    for (; name[i] && i < sizeof up - 1; i++) up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
    up[i] = 0;
    put(b, "%s%s", prefix, up);
}

/* Layout number j: an argument or an element of the buffer */
static void put_num(sbuf *b, int in_args, int j) { put(b, in_args ? "a%d" : "a[%d]", j); }

void ocl_layout_map_of(int ndim, int nu, ocl_layout_map *m)
{
    int n = 0;
    for (int d = 1; d < ndim; d++) m->size[d] = n++;
    for (int k = 0; k < nu; k++) {
        m->offset[k] = n++;
        for (int d = 0; d < ndim; d++) m->stride[k][d] = n++;
    }
    m->count = n;
}

char *ocl_fused_source(const int *sig, int n_sig)
{
    int f64 = sig[0] == FF_F64, ndim = sig[1], nu = sig[2], in_args = sig[5];
    unsigned load = (unsigned)sig[3], store = (unsigned)sig[4];
    const int *code = sig + OCL_SIG_HEAD;
    int n_inst = (n_sig - OCL_SIG_HEAD) / 4;
    const char *T = f64 ? "double" : "float";
    ocl_layout_map m;
    ocl_layout_map_of(ndim, nu, &m);
    sbuf b = {0};
    put(&b, "\n__kernel void ff_fused_k(long numel");
    for (int k = 0; k < nu; k++) put(&b, ", __global %s%s *restrict p%d", store >> k & 1u ? "" : "const ", T, k);
    if (in_args)
        for (int j = 0; j < m.count; j++) put(&b, ", long a%d", j);
    else put(&b, ", __constant long *a");
    /* one element per work-item (ocl_grid): a grid-stride loop here halves PoCL's speed */
    put(&b, ")\n{\n    long n = get_global_id(0);\n    if (n >= numel) return;\n");
    /* each slot's element: row-major n over the merged shape, no modulo on dim 0 */
    for (int k = 0; k < nu; k++) {
        put(&b, "    long o%d = ", k);
        put_num(&b, in_args, m.offset[k]);
        put(&b, ";\n");
    }
    if (ndim > 1) put(&b, "    long r = n, i;\n");
    for (int d = ndim - 1; d >= 0; d--) {
        const char *idx = ndim == 1 ? "n" : d > 0 ? "i" : "r";
        if (d > 0) {
            put(&b, "    i = r %% ");
            put_num(&b, in_args, m.size[d]);
            put(&b, ";\n    r /= ");
            put_num(&b, in_args, m.size[d]);
            put(&b, ";\n");
        }
        for (int k = 0; k < nu; k++) {
            put(&b, "    o%d += %s * ", k, idx);
            put_num(&b, in_args, m.stride[k][d]);
            put(&b, ";\n");
        }
    }
    /* every value is a variable of the program's dtype; loaded slots start from memory */
    uint64_t used = 0;
    for (int i = 0; i < n_inst; i++)
        used |= 1ull << code[4 * i + 1] | 1ull << code[4 * i + 2] | 1ull << code[4 * i + 3];
    for (int v = 0; v < FF_FUSED_MAX_VALUES; v++) {
        if (!(used >> v & 1u)) continue;
        if (v < nu && load >> v & 1u) put(&b, "    %s v%d = p%d[o%d];\n", T, v, v, v);
        else put(&b, "    %s v%d = 0;\n", T, v);
    }
    for (int i = 0; i < n_inst; i++) {
        int c = code[4 * i], d = code[4 * i + 1], x = code[4 * i + 2], y = code[4 * i + 3];
        put(&b, "    v%d = ", d);
        if (c < FF_UNARY_COUNT) { /* unary */
            put(&b, "(%s)unary_f(", T);
            put_op(&b, "U_", ffb_unary_name(c));
            put(&b, ", v%d);\n", x);
            continue;
        }
        int op = c - FF_UNARY_COUNT;
        if (op == FF_BINARY_ADD || op == FF_BINARY_SUB || op == FF_BINARY_MUL) { /* exact in T: no detour */
            put(&b, "v%d %c v%d;\n", x, op == FF_BINARY_ADD ? '+' : op == FF_BINARY_SUB ? '-' : '*', y);
            continue;
        }
        put(&b, "(%s)binary_f(", T);
        put_op(&b, "B_", ffb_binary_name(op));
        put(&b, ", v%d, v%d);\n", x, y);
    }
    for (int k = 0; k < nu; k++)
        if (store >> k & 1u) put(&b, "    p%d[o%d] = v%d;\n", k, k, k);
    put(&b, "}\n");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
