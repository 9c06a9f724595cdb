/* ff-bench-dist: ff_dist_allreduce against MPI_Allreduce on a raw buffer, in one run,
 * under mpirun (make bench-dist: 2 ranks). Every timed call is collective, so the ranks
 * run a fixed schedule (no adaptive counts, which could differ between ranks): a barrier,
 * then one call; the two contenders alternate call by call so the machine's noise falls
 * on both. Reports medians and ff's speed as a fraction of raw MPI's (>= 0.9 is the aim:
 * the descriptor exchange that makes disagreements an error is the only extra work).
 *
 *   mpirun -np 2 build/bin/ff-bench-dist [--reps N] [--sizes 1048576,67108864] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff/ff.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    int reps = 0;
    int64_t sizes[8] = {1 << 20, 1 << 26};
    int nsizes = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sizes")) {
            nsizes = 0;
            for (char *s = argv[i + 1]; *s && nsizes < 8; s += *s == ',') sizes[nsizes++] = strtoll(s, &s, 10);
        }
    }
    if (ff_dist_init()) {
        fprintf(stderr, "ff-bench-dist: %s\n", ff_last_error());
        return 1;
    }
    int rank = ff_dist_rank(), size = ff_dist_size(), rc = 0;
    const char *bname = getenv("FF_BENCH_DIST_BACKEND") ? getenv("FF_BENCH_DIST_BACKEND") : "cpu_blas";
    ff_backend *be = ff_backend_load(bname);
    if (rank == 0)
        printf("allreduce (max, f32: values stay put) on %d ranks, %s tensors; medians of alternating calls. MPI_Allreduce on a\n"
               "malloc'd buffer, and on the tensor's own memory (what ff_dist hands MPI: the same bytes, so\n"
               "the difference is ff_dist's own work); speed ratios, >= 0.9 is the aim\n"
               "%12s %14s %14s %12s %10s %10s\n",
               size, be ? bname : "?", "floats", "MPI (malloc)", "MPI (tensor)", "ff_dist", "ff/malloc", "ff/tensor");
    for (int k = 0; k < nsizes && be && !rc; k++) {
        int64_t n = sizes[k];
        int r = reps > 0 ? reps : n <= (1 << 22) ? 60 : 12;
        float *raw = malloc(sizeof(float) * (size_t)n);
        ff_tensor *t = ff_full_on(be, 1, &n, FF_F32, 1.0);
        double *tm = malloc(sizeof(double) * (size_t)r), *tf = malloc(sizeof(double) * (size_t)r);
        double *tt = malloc(sizeof(double) * (size_t)r);
        float *own = t ? ff_tensor_data_ptr(t) : NULL; /* host-memory backends */
        if (!raw || !t || !tm || !tf || !tt) rc = 1;
        for (int64_t i = 0; i < n && !rc; i++) raw[i] = 1.0f;
        for (int i = -3; i < r && !rc; i++) { /* three warm-up rounds */
            /* the three contenders in a rotating order: whichever runs right after another
             * one on the same memory finds it in cache, so each gets every position */
            double dt[3] = {0, 0, 0};
            for (int c = 0; c < 3 && !rc; c++) {
                int which = (c + (i + 3)) % 3;
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (which == 0) MPI_Allreduce(MPI_IN_PLACE, raw, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
                else if (which == 1) rc = ff_dist_allreduce(t, FF_DIST_MAX) != FF_OK;
                else if (own) MPI_Allreduce(MPI_IN_PLACE, own, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
                dt[which] = MPI_Wtime() - t0;
            }
            if (i >= 0) tm[i] = dt[0], tf[i] = dt[1], tt[i] = dt[2];
        }
        if (rc) fprintf(stderr, "ff-bench-dist: rank %d: %s\n", rank, ff_last_error());
        else if (rank == 0) {
            double m = median(tm, r), f = median(tf, r), o = own ? median(tt, r) : 0;
            printf("%12lld %11.3f ms %11.3f ms %9.3f ms %10.2f %10.2f\n", (long long)n, m * 1e3, o * 1e3, f * 1e3,
                   m / f, o / f);
            printf("BENCH dist_allreduce_f32_%lld ranks=%d mpi_malloc_s=%.6g mpi_tensor_s=%.6g ff_s=%.6g "
                   "ratio_malloc=%.3f ratio_tensor=%.3f\n",
                   (long long)n, size, m, o, f, m / f, o / f);
        }
        free(raw), free(tm), free(tf), free(tt);
        ff_tensor_release(t);
    }
    ff_dist_finalize();
    ff_shutdown();
    return rc;
}
