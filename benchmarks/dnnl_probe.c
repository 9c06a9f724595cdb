/*
 * ff-dnnl-probe N THREADS BUDGET [quick] [int8]: oneDNN called directly (issue 35's
 * "oneDNN-direct" column): one N x N x N matmul primitive, created once on preallocated
 * buffers, executed on THREADS OpenMP threads. Prints one ff-bench result line (backend
 * "onednn"); ff-bench forwards it.
 *   default: workload matmul_bf16_N, bf16 operands and result, all row-major;
 *   int8: workload matmul_int8_N, u8 x s8 -> s32 with the weights [N, K] row-major (a
 *   Linear's, read transposed), the bare product cpu_blas's qmatmul hands oneDNN (no
 *   activation quantization, no scales: the lower bound of our row).
 * Built only where libdnnl-dev is found; oneDNN picks AMX / AVX512-BF16 / VNNI itself
 * (ONEDNN_MAX_CPU_ISA caps it).
 */
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void omp_set_num_threads(int n); /* libgomp, which libdnnl runs on */

typedef struct probe {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_exec_arg_t args[3];
} probe;

static int run(void *v)
{
    probe *p = v;
    return dnnl_primitive_execute(p->prim, p->stream, 3, p->args) != dnnl_success ||
           dnnl_stream_wait(p->stream) != dnnl_success;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: ff-dnnl-probe N THREADS BUDGET [quick] [int8]\n");
        return 2;
    }
    int n = atoi(argv[1]), threads = atoi(argv[2]), quick = 0, int8 = 0;
    for (int i = 4; i < argc; i++) quick |= !strcmp(argv[i], "quick"), int8 |= !strcmp(argv[i], "int8");
    bench_opts o = {.budget_s = atof(argv[3]), .quick = quick};
    omp_set_num_threads(threads);
    dnnl_engine_t eng;
    probe p;
    dnnl_memory_desc_t md[3]; /* src, weights, dst */
    dnnl_dims_t dims = {n, n};
    dnnl_matmul_desc_t mm;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t mem[3];
    if (int8) {
        if (dnnl_memory_desc_init_by_tag(&md[0], 2, dims, dnnl_u8, dnnl_ab) ||
            dnnl_memory_desc_init_by_tag(&md[1], 2, dims, dnnl_s8, dnnl_ba) ||
            dnnl_memory_desc_init_by_tag(&md[2], 2, dims, dnnl_s32, dnnl_ab))
            return 3;
    } else
        for (int i = 0; i < 3; i++)
            if (dnnl_memory_desc_init_by_tag(&md[i], 2, dims, dnnl_bf16, dnnl_ab)) return 3;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) || dnnl_stream_create(&p.stream, eng, dnnl_stream_default_flags) ||
        dnnl_matmul_desc_init(&mm, &md[0], &md[1], NULL, &md[2]) || dnnl_primitive_desc_create(&pd, &mm, NULL, eng, NULL) ||
        dnnl_primitive_create(&p.prim, pd))
        return 3;
    static const int roles[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    for (int i = 0; i < 3; i++) {
        if (dnnl_memory_create(&mem[i], &md[i], eng, DNNL_MEMORY_ALLOCATE)) return 4;
        void *x;
        dnnl_memory_get_data_handle(mem[i], &x);
        for (size_t k = 0; k < (size_t)n * n; k++) {
            unsigned h = (unsigned)(k * 2654435761u + (unsigned)i);
            if (!int8) ((unsigned short *)x)[k] = (unsigned short)(0x3f00 + h % 256); /* [0.5, 1) */
            else if (i < 2) ((unsigned char *)x)[k] = (unsigned char)(h >> 8); /* any u8 / s8 */
        }
        p.args[i] = (dnnl_exec_arg_t){roles[i], mem[i]};
    }
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    char w[64];
    snprintf(w, sizeof w, "matmul_%s_%d", int8 ? "int8" : "bf16", n);
    fprintf(stderr, "  ff-dnnl-probe: %s on %s\n", w, impl);
    bench_case c = {w, run, &p, 2.0 * n * (double)n * n, int8 ? "GOP/s" : "GFLOP/s"};
    bench_result r;
    if (bench_measure(&c, &o, "onednn", threads, &r)) return 5;
    bench_emit(&r);
    for (int i = 0; i < 3; i++) dnnl_memory_destroy(mem[i]);
    dnnl_primitive_destroy(p.prim), dnnl_primitive_desc_destroy(pd), dnnl_stream_destroy(p.stream), dnnl_engine_destroy(eng);
    return 0;
}
