/*
 * ff-dnnl-probe N THREADS BUDGET [quick]: oneDNN called directly on bf16 (issue 35's
 * "oneDNN-direct" column): one N x N x N matmul primitive, bf16 operands and result,
 * created once on preallocated buffers, executed on THREADS OpenMP threads. Prints one
 * ff-bench result line (workload matmul_bf16_N, backend "onednn"); ff-bench forwards it.
 * Built only where libdnnl-dev is found; oneDNN picks AMX / AVX512-BF16 itself
 * (ONEDNN_MAX_CPU_ISA caps it).
 */
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>

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
        fprintf(stderr, "usage: ff-dnnl-probe N THREADS BUDGET [quick]\n");
        return 2;
    }
    int n = atoi(argv[1]), threads = atoi(argv[2]);
    bench_opts o = {.budget_s = atof(argv[3]), .quick = argc > 4};
    omp_set_num_threads(threads);
    dnnl_engine_t eng;
    probe p;
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {n, n};
    dnnl_matmul_desc_t mm;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t mem[3];
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) || dnnl_stream_create(&p.stream, eng, dnnl_stream_default_flags) ||
        dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_bf16, dnnl_ab) || dnnl_matmul_desc_init(&mm, &md, &md, NULL, &md) ||
        dnnl_primitive_desc_create(&pd, &mm, NULL, eng, NULL) || dnnl_primitive_create(&p.prim, pd))
        return 3;
    static const int roles[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    for (int i = 0; i < 3; i++) {
        if (dnnl_memory_create(&mem[i], &md, eng, DNNL_MEMORY_ALLOCATE)) return 4;
        unsigned short *x;
        dnnl_memory_get_data_handle(mem[i], (void **)&x);
        for (size_t k = 0; k < (size_t)n * n; k++) x[k] = (unsigned short)(0x3f00 + (k * 2654435761u + i) % 256); /* [0.5, 1) */
        p.args[i] = (dnnl_exec_arg_t){roles[i], mem[i]};
    }
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    fprintf(stderr, "  ff-dnnl-probe: matmul_bf16_%d on %s\n", n, impl);
    char w[64];
    snprintf(w, sizeof w, "matmul_bf16_%d", n);
    bench_case c = {w, run, &p, 2.0 * n * (double)n * n, "GFLOP/s"};
    bench_result r;
    if (bench_measure(&c, &o, "onednn", threads, &r)) return 5;
    bench_emit(&r);
    for (int i = 0; i < 3; i++) dnnl_memory_destroy(mem[i]);
    dnnl_primitive_destroy(p.prim), dnnl_primitive_desc_destroy(pd), dnnl_stream_destroy(p.stream), dnnl_engine_destroy(eng);
    return 0;
}
