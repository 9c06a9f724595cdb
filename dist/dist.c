/* The process group and its collectives on MPI (one group: MPI_COMM_WORLD, duplicated so
 * that a program's own MPI traffic never mixes with ours).
 *
 * Each collective first exchanges a small descriptor (which collective, dtype, shape, op,
 * root) with a non-blocking allgather polled against a deadline: every rank then sees
 * every other rank's descriptor, so a disagreement becomes the same error on every rank
 * (nobody is left waiting) and a rank that never arrives becomes a timeout, not a hang.
 * The payload then travels through the blocking collective, which MPI implementations
 * tune far better than their non-blocking ones (ff-bench's dist_allreduce rows compare
 * with raw MPI_Allreduce).
 *
 * Built without MPI, the group is one process and every collective is the identity. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_impl.h"

#ifdef FF_HAVE_MPI
#include <mpi.h>
#endif

static struct {
    bool init, owns_mpi, broken;
    int rank, size, local_rank;
    double timeout;
#ifdef FF_HAVE_MPI
    MPI_Comm comm;
#endif
} G = {.size = 1, .timeout = 300};

bool ff_dist_built_with_mpi(void)
{
#ifdef FF_HAVE_MPI
    return true;
#else
    return false;
#endif
}

bool ff_dist_is_initialized(void) { return G.init; }
int ff_dist_rank(void) { return G.rank; }
int ff_dist_size(void) { return G.size; }
int ff_dist_local_rank(void) { return G.local_rank; }
void ff_dist_set_timeout(double seconds) { G.timeout = seconds > 0 ? seconds : 300; }

#ifdef FF_HAVE_MPI
static ff_status mpi_fail(int rc, const char *fn, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return ff_error(FF_ERR_BACKEND, "%s: %s failed on rank %d: %.*s", fn, what, G.rank, len, msg);
}
#endif

ff_status ff_dist_init(void)
{
    if (G.init) return FF_OK;
    const char *t = getenv("FF_DIST_TIMEOUT");
    if (t && atof(t) > 0) G.timeout = atof(t);
#ifdef FF_HAVE_MPI
    int inited = 0, rc;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided)) != MPI_SUCCESS)
            return mpi_fail(rc, "ff_dist_init", "MPI_Init_thread");
        G.owns_mpi = true;
    }
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &G.comm)) != MPI_SUCCESS) return mpi_fail(rc, "ff_dist_init", "MPI_Comm_dup");
    MPI_Comm_set_errhandler(G.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(G.comm, &G.rank);
    MPI_Comm_size(G.comm, &G.size);
    MPI_Comm node;
    if (MPI_Comm_split_type(G.comm, MPI_COMM_TYPE_SHARED, G.rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &G.local_rank);
        MPI_Comm_free(&node);
    }
#endif
    G.init = true;
    G.broken = false;
    return FF_OK;
}

ff_status ff_dist_finalize(void)
{
    if (!G.init) return FF_OK;
#ifdef FF_HAVE_MPI
    if (!G.broken) MPI_Comm_free(&G.comm);
    int fin = 0;
    MPI_Finalized(&fin);
    if (G.owns_mpi && !fin) MPI_Finalize();
#endif
    G.init = G.owns_mpi = false;
    G.rank = G.local_rank = 0;
    G.size = 1;
    return FF_OK;
}

enum { DESC_N = 5 + FF_MAX_DIMS };

#ifdef FF_HAVE_MPI /* only MPI has other ranks to disagree with or wait for */
static const char *kind_name(int k)
{
    static const char *const n[] = {"?", "allreduce", "broadcast", "allgather", "barrier", "gradient bucket"};
    return k >= 0 && k <= FF_DIST_K_BUCKET ? n[k] : "?";
}

/* "allreduce of f32 [3, 4] (op 1, root 0)" */
static void describe(const int64_t *d, char *buf, size_t cap)
{
    char shape[160];
    int nd = (int)d[2];
    if (nd < 0 || nd > FF_MAX_DIMS) nd = 0;
    ff_shape_str(nd, d + 5, shape, sizeof shape);
    snprintf(buf, cap, "%s of %s %s (op %lld, root %lld)", kind_name((int)d[0]),
             d[1] >= 0 && d[1] < FF_DTYPE_COUNT ? ff_dtype_name((ff_dtype)d[1]) : "?", shape, (long long)d[3],
             (long long)d[4]);
}
#endif

ff_status ff_dist_agree(const char *fn, ff_dist_kind kind, ff_dtype dtype, int ndim, const int64_t *shape, int op,
                        int root)
{
    if (!G.init) return ff_error(FF_ERR_INVALID, "%s: call ff_dist_init first", fn);
    if (G.broken)
        return ff_error(FF_ERR_BACKEND, "%s: the process group is unusable after an earlier timeout", fn);
    if (root < 0 || root >= G.size)
        return ff_error(FF_ERR_INVALID, "%s: root %d is not a rank (size %d)", fn, root, G.size);
#ifdef FF_HAVE_MPI
    int64_t d[DESC_N] = {kind, dtype, ndim, op, root};
    for (int i = 0; i < ndim && i < FF_MAX_DIMS; i++) d[5 + i] = shape[i];
    int64_t *all = malloc(sizeof(int64_t) * DESC_N * (size_t)G.size);
    if (!all) return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    MPI_Request req;
    int rc = MPI_Iallgather(d, DESC_N, MPI_INT64_T, all, DESC_N, MPI_INT64_T, G.comm, &req);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_fail(rc, fn, "MPI_Iallgather");
    }
    /* poll: spin for the first 2 ms (ranks that arrive together finish this in
     * microseconds, and a sleep here would be the whole cost of a small allreduce), then
     * sleep 50 us between tests so a waiting rank leaves the cores to the slow ones */
    double t0 = MPI_Wtime();
    int done = 0;
    for (;;) {
        if ((rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
            free(all);
            G.broken = true;
            return mpi_fail(rc, fn, "MPI_Test");
        }
        if (done) break;
        double waited = MPI_Wtime() - t0;
        if (waited > G.timeout) {
            free(all);
            G.broken = true;
            return ff_error(FF_ERR_BACKEND,
                            "%s: rank %d waited %.0f s for the other ranks to reach the %s (a rank died, or runs a "
                            "different sequence of collectives; FF_DIST_TIMEOUT sets the limit)",
                            fn, G.rank, G.timeout, kind_name(kind));
        }
        if (waited > 2e-3) nanosleep(&(struct timespec){0, 50000}, NULL);
    }
    for (int r = 1; r < G.size; r++)
        if (memcmp(all, all + (size_t)r * DESC_N, sizeof(int64_t) * (size_t)(5 + (all[2] > 0 ? all[2] : 0))) != 0 ||
            all[2] != all[(size_t)r * DESC_N + 2]) {
            char a[256], b[256];
            describe(all, a, sizeof a);
            describe(all + (size_t)r * DESC_N, b, sizeof b);
            free(all);
            return ff_error(FF_ERR_INVALID, "%s: the ranks disagree: rank 0 runs %s, rank %d runs %s", fn, a, r, b);
        }
    free(all);
#else
    (void)kind, (void)dtype, (void)ndim, (void)shape, (void)op;
#endif
    return FF_OK;
}

#ifdef FF_HAVE_MPI
static MPI_Datatype mpi_type(ff_dtype t)
{
    switch (t) {
    case FF_F32: return MPI_FLOAT;
    case FF_F64: return MPI_DOUBLE;
    case FF_I32: return MPI_INT32_T;
    case FF_I64: return MPI_INT64_T;
    case FF_U8: case FF_BOOL: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(ff_dist_reduce op)
{
    return op == FF_DIST_MAX ? MPI_MAX : op == FF_DIST_MIN ? MPI_MIN : MPI_SUM;
}
#endif

static ff_status check_reduce(ff_dtype t, ff_dist_reduce op, const char *fn)
{
    if (op < FF_DIST_SUM || op > FF_DIST_MIN) return ff_error(FF_ERR_INVALID, "%s: invalid reduce op %d", fn, (int)op);
    if (t == FF_F16 || t == FF_BF16)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: %s tensors are not supported yet (reduce an f32 copy)", fn,
                        ff_dtype_name(t));
    if (op == FF_DIST_MEAN && !ff_dtype_is_float(t))
        return ff_error(FF_ERR_INVALID, "%s: MEAN needs a float tensor, got %s", fn, ff_dtype_name(t));
    if (t == FF_BOOL && op == FF_DIST_SUM)
        return ff_error(FF_ERR_INVALID, "%s: SUM of bool; use MAX (any) or MIN (all)", fn);
    return FF_OK;
}

/* MEAN is a SUM divided by the group size (MPI has no mean); f32 or f64. */
static void divide_for_mean(void *buf, int64_t count, ff_dtype dtype, ff_dist_reduce op)
{
    if (op != FF_DIST_MEAN || G.size <= 1) return;
    if (dtype == FF_F32)
        for (int64_t i = 0; i < count; i++) ((float *)buf)[i] /= (float)G.size;
    else
        for (int64_t i = 0; i < count; i++) ((double *)buf)[i] /= (double)G.size;
}

ff_status ff_dist_allreduce_host(void *buf, int64_t count, ff_dtype dtype, ff_dist_reduce op, const char *fn)
{
#ifdef FF_HAVE_MPI
    size_t es = ff_dtype_size(dtype);
    for (int64_t done = 0; done < count && G.size > 1;) { /* MPI counts are ints */
        int n = (int)(count - done < INT_MAX / 2 ? count - done : INT_MAX / 2);
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + (size_t)done * es, n, mpi_type(dtype), mpi_op(op), G.comm);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, fn, "MPI_Allreduce");
        done += n;
    }
#else
    (void)fn;
#endif
    divide_for_mean(buf, count, dtype, op);
    return FF_OK;
}

struct ff_dist_pending {
    void *buf;
    int64_t count;
    ff_dtype dtype;
    ff_dist_reduce op;
    int blocking; /* counts beyond an int: done with blocking chunks at the wait */
#ifdef FF_HAVE_MPI
    MPI_Request req;
#endif
};

ff_dist_pending *ff_dist_iallreduce_host(void *buf, int64_t count, ff_dtype dtype, ff_dist_reduce op, const char *fn)
{
    ff_dist_pending *p = calloc(1, sizeof *p);
    if (!p) return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    *p = (ff_dist_pending){.buf = buf, .count = count, .dtype = dtype, .op = op, .blocking = 1};
#ifdef FF_HAVE_MPI
    p->req = MPI_REQUEST_NULL;
    if (G.size > 1 && count <= INT_MAX / 2) {
        int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(dtype), mpi_op(op), G.comm, &p->req);
        if (rc != MPI_SUCCESS) {
            free(p);
            return mpi_fail(rc, fn, "MPI_Iallreduce"), NULL;
        }
        p->blocking = 0;
    }
#endif
    return p;
}

void ff_dist_poke(ff_dist_pending *p)
{
#ifdef FF_HAVE_MPI
    int done = 0;
    if (p && !p->blocking && p->req != MPI_REQUEST_NULL) MPI_Test(&p->req, &done, MPI_STATUS_IGNORE);
#else
    (void)p;
#endif
}

ff_status ff_dist_wait(ff_dist_pending *p, const char *fn)
{
    if (!p) return ff_error(FF_ERR_INVALID, "%s: no pending collective", fn);
    ff_status st = FF_OK;
    if (p->blocking) {
        st = ff_dist_allreduce_host(p->buf, p->count, p->dtype, p->op, fn); /* divides for MEAN */
        free(p);
        return st;
    }
#ifdef FF_HAVE_MPI
    int rc = MPI_Wait(&p->req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) st = mpi_fail(rc, fn, "MPI_Wait");
#endif
    if (!st) divide_for_mean(p->buf, p->count, p->dtype, p->op);
    free(p);
    return st;
}

/* t's elements in row-major order on the host: its own memory when the backend's is host
 * memory and t is contiguous (after waiting for queued work), else a staged copy. */
static void *host_elements(const ff_tensor *t, size_t nbytes, bool *staged, const char *fn)
{
    ff_backend *be = t->storage->backend;
    *staged = false;
    if ((ff_backend_flags(be) & FF_BACKEND_HOST_MEMORY) && ff_tensor_is_contiguous(t)) {
        if (ff_backend_sync(be)) return NULL;
        void *p = ff_tensor_data_ptr(t);
        if (p) return p;
    }
    void *buf = malloc(nbytes ? nbytes : 1);
    if (!buf) return ff_error(FF_ERR_OOM, "%s: out of memory staging %zu bytes", fn, nbytes), NULL;
    if (ff_tensor_to_host(t, buf, nbytes)) {
        free(buf);
        return NULL;
    }
    *staged = true;
    return buf;
}

/* Makes t hold what the collective left in buf (a no-op but for the version when MPI
 * wrote t's own memory), and frees a staging buffer. */
static ff_status host_writeback(ff_tensor *t, void *buf, bool staged)
{
    if (!staged) {
        ff_storage_bump_version(t->storage);
        return FF_OK;
    }
    ff_tensor *tmp = ff_from_data_on(t->storage->backend, buf, t->layout.ndim, t->layout.shape, t->dtype);
    free(buf);
    if (!tmp) return ff_last_status();
    bool prev = ff_set_grad_enabled(false);
    ff_status st = ff_copy_(t, tmp);
    ff_set_grad_enabled(prev);
    ff_tensor_release(tmp);
    return st;
}

ff_status ff_dist_allreduce(ff_tensor *t, ff_dist_reduce op)
{
    static const char fn[] = "ff_dist_allreduce";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn);
    ff_status st = check_reduce(t->dtype, op, fn);
    if (st || (st = ff_dist_agree(fn, FF_DIST_K_ALLREDUCE, t->dtype, t->layout.ndim, t->layout.shape, op, 0))) return st;
    int64_t n = ff_tensor_numel(t);
    if (G.size == 1 || n == 0) return FF_OK;
    bool staged;
    void *p = host_elements(t, (size_t)n * ff_dtype_size(t->dtype), &staged, fn);
    if (!p) return ff_last_status();
    st = ff_dist_allreduce_host(p, n, t->dtype, op, fn);
    if (st) {
        if (staged) free(p);
        return st;
    }
    return host_writeback(t, p, staged);
}

ff_status ff_dist_broadcast(ff_tensor *t, int root)
{
    static const char fn[] = "ff_dist_broadcast";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn);
    if (t->dtype == FF_F16 || t->dtype == FF_BF16)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: %s tensors are not supported yet", fn, ff_dtype_name(t->dtype));
    ff_status st = ff_dist_agree(fn, FF_DIST_K_BROADCAST, t->dtype, t->layout.ndim, t->layout.shape, 0, root);
    int64_t n = ff_tensor_numel(t);
    if (st || G.size == 1 || n == 0) return st;
#ifdef FF_HAVE_MPI
    size_t es = ff_dtype_size(t->dtype);
    bool staged;
    void *p = host_elements(t, (size_t)n * es, &staged, fn);
    if (!p) return ff_last_status();
    for (int64_t done = 0; done < n && !st;) {
        int c = (int)(n - done < INT_MAX / 2 ? n - done : INT_MAX / 2);
        int rc = MPI_Bcast((char *)p + (size_t)done * es, c, mpi_type(t->dtype), root, G.comm);
        if (rc != MPI_SUCCESS) st = mpi_fail(rc, fn, "MPI_Bcast");
        done += c;
    }
    if (st) {
        if (staged) free(p);
        return st;
    }
    if (G.rank != root) return host_writeback(t, p, staged);
    if (staged) free(p);
    return FF_OK;
#else
    return FF_OK;
#endif
}

ff_tensor *ff_dist_allgather(const ff_tensor *t)
{
    static const char fn[] = "ff_dist_allgather";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (t->dtype == FF_F16 || t->dtype == FF_BF16)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: %s tensors are not supported yet", fn, ff_dtype_name(t->dtype)), NULL;
    if (t->layout.ndim >= FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: rank %d leaves no room for the ranks' axis", fn, t->layout.ndim), NULL;
    if (ff_dist_agree(fn, FF_DIST_K_ALLGATHER, t->dtype, t->layout.ndim, t->layout.shape, 0, 0)) return NULL;
    int64_t shape[FF_MAX_DIMS], n = ff_tensor_numel(t);
    shape[0] = G.size;
    memcpy(shape + 1, t->layout.shape, sizeof(int64_t) * (size_t)t->layout.ndim);
    size_t es = ff_dtype_size(t->dtype), bytes = (size_t)n * es;
    char *all = malloc(bytes * (size_t)G.size + 1);
    if (!all) return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    if (ff_tensor_to_host(t, all + bytes * (size_t)G.rank, bytes)) {
        free(all);
        return NULL;
    }
#ifdef FF_HAVE_MPI
    if (G.size > 1) {
        if (n > INT_MAX) {
            free(all);
            return ff_error(FF_ERR_INVALID, "%s: %lld elements per rank exceed MPI's int counts", fn, (long long)n), NULL;
        }
        int rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, (int)n, mpi_type(t->dtype), G.comm);
        if (rc != MPI_SUCCESS) {
            free(all);
            return mpi_fail(rc, fn, "MPI_Allgather"), NULL;
        }
    }
#endif
    ff_tensor *r = ff_from_data_on(t->storage->backend, all, t->layout.ndim + 1, shape, t->dtype);
    free(all);
    return r;
}

ff_status ff_dist_barrier(void)
{
    ff_status st = ff_dist_agree("ff_dist_barrier", FF_DIST_K_BARRIER, FF_F32, 0, NULL, 0, 0);
#ifdef FF_HAVE_MPI
    if (!st && G.size > 1) {
        int rc = MPI_Barrier(G.comm);
        if (rc != MPI_SUCCESS) st = mpi_fail(rc, "ff_dist_barrier", "MPI_Barrier");
    }
#endif
    return st;
}
