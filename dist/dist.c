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
 * Device collectives: when every rank's tensor lives on a backend with the coll_* entries
 * (the cuda backend: NCCL), the payload moves device to device there instead of being
 * staged through host memory. The descriptor carries a flag "this rank can": the ranks
 * take that path only when all can, and the group behind it (one per backend, made at
 * its first collective) is joined only when every rank's backend could make an id, so a
 * rank without NCCL turns the job back to MPI staging on every rank, never into a hang.
 *
 * Built without MPI, the group is one process and every collective is the identity, but
 * for the device collectives, which run on a group of one (the same path as on many). */
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

/* A backend's device collective group (coll_init's handle), or why it has none. */
#define COLL_MAX 4
typedef struct coll_group {
    ff_backend *be;
    void *comm;
    bool failed; /* the ranks agreed it cannot be made: stage through MPI */
} coll_group;

/* Notices (MPI only): a rank that gives up on the group (a timeout) or leaves it
 * (finalize) tells every other rank, on a communicator of their own, so that they stop
 * too instead of entering a collective it will never join. A notice is {the kind of the
 * collective given up on, 0 for leaving; the timeout in ms; how many descriptor exchanges
 * the sender had posted}. */
enum { NOTICE_N = 3 };

static struct {
    bool init, owns_mpi, broken;
    int rank, size, local_rank;
    double timeout;
    coll_group coll[COLL_MAX];
    int ncoll;
    int64_t n_device, n_staged; /* collectives run so far each way (ff_dist_counts) */
    char why[320];              /* why the group is unusable (broken) */
#ifdef FF_HAVE_MPI
    MPI_Comm comm, ctl;             /* collectives; notices */
    MPI_Request notice_req;         /* the posted receive of the next notice */
    int64_t notice_in[NOTICE_N], notice_out[NOTICE_N];
    int64_t *noticed;               /* [size]: that rank's notice's exchange count, -1: none yet */
    int n_noticed;
    int64_t seq;                    /* descriptor exchanges posted */
    MPI_Request pending;            /* an exchange left running at a timeout (number seq) */
    int64_t *pending_buf;           /* its buffers, alive until it completes */
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
    if ((rc = MPI_Comm_dup(G.comm, &G.ctl)) != MPI_SUCCESS) return mpi_fail(rc, "ff_dist_init", "MPI_Comm_dup");
    MPI_Comm_set_errhandler(G.ctl, MPI_ERRORS_RETURN);
    if (!(G.noticed = malloc(sizeof *G.noticed * (size_t)G.size)))
        return ff_error(FF_ERR_OOM, "ff_dist_init: out of memory");
    for (int r = 0; r < G.size; r++) G.noticed[r] = -1;
    G.n_noticed = 0;
    G.seq = 0;
    G.pending = MPI_REQUEST_NULL;
    MPI_Irecv(G.notice_in, NOTICE_N, MPI_INT64_T, MPI_ANY_SOURCE, 0, G.ctl, &G.notice_req);
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

#ifdef FF_HAVE_MPI
static const char *kind_name(int k);

/* Busy for the first 2 ms (ranks that arrive together finish an exchange in
 * microseconds, and a sleep would be the whole cost of a small allreduce), then 50 us
 * sleeps, so that a waiting rank leaves the cores to the slow ones. */
static void poll_pause(double waited)
{
    if (waited > 2e-3) nanosleep(&(struct timespec){0, 50000}, NULL);
}

/* Takes in the notices that arrived; true when some rank has given up on the group or
 * left it. The first one says, in G.why, who and where. */
static bool notices_poll(void)
{
    for (;;) {
        int got = 0;
        MPI_Status s;
        if (G.notice_req == MPI_REQUEST_NULL || MPI_Test(&G.notice_req, &got, &s) != MPI_SUCCESS || !got) break;
        int r = s.MPI_SOURCE;
        if (r >= 0 && r < G.size && G.noticed[r] < 0) {
            if (!G.n_noticed++ && !G.broken && G.notice_in[0])
                snprintf(G.why, sizeof G.why,
                         "rank %d gave up waiting for the other ranks at the %s after %.0f s (FF_DIST_TIMEOUT)", r,
                         kind_name((int)G.notice_in[0]), (double)G.notice_in[1] / 1e3);
            else if (G.n_noticed == 1 && !G.broken)
                snprintf(G.why, sizeof G.why, "rank %d has left the group (ff_dist_finalize)", r);
            G.noticed[r] = G.notice_in[2];
        }
        MPI_Irecv(G.notice_in, NOTICE_N, MPI_INT64_T, MPI_ANY_SOURCE, 0, G.ctl, &G.notice_req);
    }
    return G.n_noticed > 0;
}

/* Tells every other rank that this one gave up at a collective of kind (0: leaves the
 * group). Once; the sends are eager-sized and their buffer lives in G, so they are
 * released, not waited for. */
static void notices_send(int kind)
{
    G.notice_out[0] = kind;
    G.notice_out[1] = (int64_t)(G.timeout * 1e3);
    G.notice_out[2] = G.seq;
    for (int r = 0; r < G.size; r++) {
        MPI_Request q;
        if (r != G.rank && MPI_Isend(G.notice_out, NOTICE_N, MPI_INT64_T, r, 0, G.ctl, &q) == MPI_SUCCESS)
            MPI_Request_free(&q);
    }
}

/* Keeps an exchange that a timeout left running, with its buffers, for finalize: MPI
 * cannot cancel a collective, and the late rank will still write into them. */
static void keep_pending(MPI_Request req, int64_t *buf)
{
    G.pending = req;
    G.pending_buf = buf;
}

/* Marks the group unusable (G.why says why) and tells the other ranks. */
static void group_break(ff_dist_kind kind)
{
    if (G.broken) return;
    G.broken = true;
    notices_send(kind);
}

/* Finalize on a broken group: MPI_Finalize is safe once every other rank has sent its
 * notice (so none is blocked inside a collective, waiting for this one) and the exchange
 * left at the timeout has completed, or cannot (a rank left before posting it: its
 * buffers then stay allocated, and its communicator is not freed). That waits for a late
 * rank to arrive, up to the timeout (10 s at least); past it, abort the job: a hang
 * burns the whole allocation. *keep_comm: the exchange is still running on G.comm. */
static ff_status finalize_broken(bool *keep_comm)
{
    double t0 = MPI_Wtime(), limit = G.timeout > 10 ? G.timeout : 10;
    for (;;) {
        int done = G.pending == MPI_REQUEST_NULL;
        if (!done && MPI_Test(&G.pending, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
        notices_poll();
        bool never = false; /* some rank left without posting the exchange */
        for (int r = 0; r < G.size && !done; r++)
            never = never || (r != G.rank && G.noticed[r] >= 0 && G.noticed[r] < G.seq);
        if ((done || never) && G.n_noticed == G.size - 1) {
            if (done) free(G.pending_buf);
            if (done) G.pending_buf = NULL;
            *keep_comm = !done;
            return FF_OK;
        }
        double waited = MPI_Wtime() - t0;
        if (waited > limit) break;
        poll_pause(waited);
    }
    char missing[160] = "";
    for (int r = 0, at = 0; r < G.size && at < (int)sizeof missing - 12; r++)
        if (r != G.rank && G.noticed[r] < 0) at += snprintf(missing + at, sizeof missing - (size_t)at, " %d", r);
    fprintf(stderr,
            "ff_dist_finalize: rank %d: the process group is unusable (%s), and rank(s)%s did not learn it within "
            "%.0f s (one may be blocked inside a collective): aborting the MPI job rather than hang\n",
            G.rank, G.why, missing[0] ? missing : " (all did, but the exchange left running never completed)", limit);
    fflush(stderr);
    MPI_Abort(G.comm, 1);
    return ff_error(FF_ERR_BACKEND, "ff_dist_finalize: MPI_Abort returned on rank %d", G.rank);
}
#endif

ff_status ff_dist_finalize(void)
{
    if (!G.init) return FF_OK;
    for (int i = 0; i < G.ncoll; i++) {
        /* only a backend still loaded (after ff_shutdown its own shutdown left the group) */
        bool loaded = false;
        for (int k = 0; k < ff_backend_count() && !loaded; k++) loaded = ff_backend_at(k) == G.coll[i].be;
        if (G.coll[i].comm && loaded) {
            void (*leave)(void *, void *) = FF_VT_OPT(G.coll[i].be, coll_free);
            leave(G.coll[i].be->ctx, G.coll[i].comm);
        }
    }
    memset(G.coll, 0, sizeof G.coll);
    G.ncoll = 0;
#ifdef FF_HAVE_MPI
    /* a rank that is not inside an exchange blocks nobody: it says it leaves and goes */
    bool keep_comm = false;
    if (!G.broken) notices_send(0);
    ff_status st = G.broken ? finalize_broken(&keep_comm) : FF_OK;
    if (st) return st;
    if (G.notice_req != MPI_REQUEST_NULL) {
        MPI_Cancel(&G.notice_req);
        MPI_Wait(&G.notice_req, MPI_STATUS_IGNORE);
    }
    MPI_Comm_free(&G.ctl);
    if (!keep_comm) MPI_Comm_free(&G.comm);
    free(G.noticed);
    G.noticed = NULL;
    int fin = 0;
    MPI_Finalized(&fin);
    if (G.owns_mpi && !fin) MPI_Finalize();
#endif
    G.init = G.owns_mpi = G.broken = false;
    G.rank = G.local_rank = 0;
    G.size = 1;
    return FF_OK;
}

/* kind, dtype, ndim, op, root, shape[FF_MAX_DIMS], then the device flag (not compared:
 * combined with AND) */
enum { DESC_N = 6 + FF_MAX_DIMS };

#ifdef FF_HAVE_MPI /* only MPI has other ranks to disagree with or wait for */
static const char *kind_name(int k)
{
    static const char *const n[] = {"?", "allreduce", "broadcast", "allgather", "barrier", "gradient bucket",
                                    "data-parallel setup"};
    return k >= 0 && k <= FF_DIST_K_DDP ? n[k] : "?";
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
    return ff_dist_agree_device(fn, kind, dtype, ndim, shape, op, root, NULL);
}

ff_status ff_dist_agree_device(const char *fn, ff_dist_kind kind, ff_dtype dtype, int ndim, const int64_t *shape,
                               int op, int root, bool *device)
{
    if (!G.init) return ff_error(FF_ERR_INVALID, "%s: call ff_dist_init first", fn);
    if (G.broken) return ff_error(FF_ERR_BACKEND, "%s: the process group is unusable: %s", fn, G.why);
    if (root < 0 || root >= G.size)
        return ff_error(FF_ERR_INVALID, "%s: root %d is not a rank (size %d)", fn, root, G.size);
#ifdef FF_HAVE_MPI
    /* one block: this rank's descriptor, then every rank's (kept whole if left running) */
    int64_t *d = calloc((size_t)DESC_N * ((size_t)G.size + 1), sizeof(int64_t));
    if (!d) return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    int64_t *all = d + DESC_N;
    d[0] = kind, d[1] = dtype, d[2] = ndim, d[3] = op, d[4] = root;
    for (int i = 0; i < ndim && i < FF_MAX_DIMS; i++) d[5 + i] = shape[i];
    d[DESC_N - 1] = device && *device;
    MPI_Request req;
    int rc = MPI_Iallgather(d, DESC_N, MPI_INT64_T, all, DESC_N, MPI_INT64_T, G.comm, &req);
    if (rc != MPI_SUCCESS) {
        free(d);
        return mpi_fail(rc, fn, "MPI_Iallgather");
    }
    G.seq++;
    /* Every rank that reaches this collective posts the exchange, even one that already
     * holds a notice, so that the exchanges left running elsewhere complete. */
    double t0 = MPI_Wtime();
    int done = 0;
    for (;;) {
        if ((rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
            keep_pending(req, d);
            snprintf(G.why, sizeof G.why, "MPI_Test failed on rank %d in the %s", G.rank, kind_name(kind));
            group_break(kind);
            return mpi_fail(rc, fn, "MPI_Test");
        }
        if (done) break;
        double waited = MPI_Wtime() - t0;
        /* another rank gave up: it will never join this one (looked at only once the
         * wait is long, to keep the ranks that arrive together on the fast path) */
        if (waited > 2e-3 && notices_poll()) {
            keep_pending(req, d);
            group_break(kind);
            return ff_error(FF_ERR_BACKEND, "%s: the process group is unusable: %s", fn, G.why);
        }
        if (waited > G.timeout) {
            keep_pending(req, d);
            snprintf(G.why, sizeof G.why, "rank %d waited %.0f s for the other ranks at the %s (FF_DIST_TIMEOUT)",
                     G.rank, G.timeout, kind_name(kind));
            group_break(kind);
            return ff_error(FF_ERR_BACKEND,
                            "%s: rank %d waited %.0f s for the other ranks to reach the %s (a rank died, or runs a "
                            "different sequence of collectives; FF_DIST_TIMEOUT sets the limit); the process group "
                            "is unusable now",
                            fn, G.rank, G.timeout, kind_name(kind));
        }
        poll_pause(waited);
    }
    /* Arrived late: the others' descriptors were all there, but one of them has given up
     * since and will not join the payload's blocking collective. */
    if (notices_poll()) {
        free(d);
        group_break(kind);
        return ff_error(FF_ERR_BACKEND, "%s: rank %d arrived too late: %s; the process group is unusable", fn,
                        G.rank, G.why);
    }
    for (int r = 1; r < G.size; r++)
        if (memcmp(all, all + (size_t)r * DESC_N, sizeof(int64_t) * (size_t)(5 + (all[2] > 0 ? all[2] : 0))) != 0 ||
            all[2] != all[(size_t)r * DESC_N + 2]) {
            char a[256], b[256];
            describe(all, a, sizeof a);
            describe(all + (size_t)r * DESC_N, b, sizeof b);
            free(d);
            return ff_error(FF_ERR_INVALID, "%s: the ranks disagree: rank 0 runs %s, rank %d runs %s", fn, a, r, b);
        }
    for (int r = 0; device && r < G.size; r++) *device = *device && all[(size_t)r * DESC_N + DESC_N - 1];
    free(d);
#else
    (void)kind, (void)dtype, (void)ndim, (void)shape, (void)op, (void)device;
#endif
    return FF_OK;
}

/* ---- device collectives (the backend's coll_* entries) ----------------------------- */

bool ff_dist_coll_capable(ff_backend *be, ff_coll_op op, ff_dtype t)
{
    if (!be || !FF_VT_OPT(be, coll_id) || !FF_VT_OPT(be, coll_init) || !FF_VT_OPT(be, coll_run) ||
        !FF_VT_OPT(be, coll_wait) || !FF_VT_OPT(be, coll_free))
        return false;
    const char *env = getenv("FF_DIST_DEVICE"); /* 0: always stage through MPI */
    if (env && !strcmp(env, "0")) return false;
    for (int i = 0; i < G.ncoll; i++)
        if (G.coll[i].be == be && G.coll[i].failed) return false;
    return be->vt->supports(be->ctx, FF_KIND_COLLECTIVE, op, t) != 0;
}

static ff_status coll_fail(ff_backend *be, const char *fn, const char *entry, ff_status st)
{
    return ff_error(st, "%s: backend '%s' %s: %s", fn, be->name, entry,
                    ff_last_error()[0] ? ff_last_error() : ff_status_name(st));
}

/* Every rank's verdict combined: all true, or false everywhere. */
static bool all_ranks(bool ok)
{
#ifdef FF_HAVE_MPI
    int mine = ok, all = 0;
    if (G.size > 1 && MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, G.comm) == MPI_SUCCESS) return all != 0;
    if (G.size > 1) return false;
#endif
    return ok;
}

ff_status ff_dist_coll_group(ff_backend *be, const char *fn, void **comm)
{
    *comm = NULL;
    int i = 0;
    while (i < G.ncoll && G.coll[i].be != be) i++;
    if (i < G.ncoll) {
        *comm = G.coll[i].comm;
        return FF_OK;
    }
    if (G.ncoll == COLL_MAX) return FF_OK; /* more device backends than groups: stage */
    /* Every rank makes an id first (that loads the library and checks the device), so a
     * rank that cannot is known before anyone blocks in coll_init; rank 0's id is used. */
    char id[FF_COLL_ID_MAX], why[512] = "";
    size_t len = 0;
    ff_status (*make_id)(void *, void *, size_t, size_t *) = FF_VT_OPT(be, coll_id);
    ff_status (*join)(void *, const void *, size_t, int, int, void **) = FF_VT_OPT(be, coll_init);
    ff_clear_error();
    bool ok = make_id(be->ctx, id, sizeof id, &len) == FF_OK && len <= sizeof id;
    if (!ok) snprintf(why, sizeof why, "%s", ff_last_error());
    if ((ok = all_ranks(ok))) {
#ifdef FF_HAVE_MPI
        uint64_t n = len;
        if (G.size > 1 && (MPI_Bcast(&n, 1, MPI_UINT64_T, 0, G.comm) != MPI_SUCCESS ||
                           MPI_Bcast(id, (int)n, MPI_BYTE, 0, G.comm) != MPI_SUCCESS))
            return ff_error(FF_ERR_BACKEND, "%s: broadcasting the %s group's id failed", fn, be->name);
        len = (size_t)n;
#endif
        ff_clear_error();
        void *c = NULL;
        ok = join(be->ctx, id, len, G.rank, G.size, &c) == FF_OK;
        if (!ok) snprintf(why, sizeof why, "%s", ff_last_error());
        if (!(ok = all_ranks(ok)) && c) {
            void (*leave)(void *, void *) = FF_VT_OPT(be, coll_free);
            leave(be->ctx, c);
        } else if (ok) {
            *comm = c;
        }
    }
    G.coll[G.ncoll++] = (coll_group){be, *comm, !ok};
    if (!ok)
        ff_log_debug("ff_dist: backend '%s' has no device collectives on every rank (%s); its tensors are staged "
                     "through host memory and MPI", be->name, why[0] ? why : "failed on another rank");
    return FF_OK;
}

ff_status ff_dist_coll_run(ff_backend *be, void *comm, ff_coll_op op, int arg, bool async, ff_tensor *dst,
                           const ff_tensor *src, const char *fn)
{
    ff_view vd, vs;
    ff_tensor_view(dst, &vd);
    ff_tensor_view(src, &vs);
    ff_status (*run)(void *, void *, int, int, int, const ff_view *, const ff_view *) = FF_VT_OPT(be, coll_run);
    ff_clear_error();
    ff_status st = run(be->ctx, comm, op, arg, async, &vd, &vs);
    if (st) return coll_fail(be, fn, "coll_run", st);
    G.n_device++;
    ff_storage_bump_version(dst->storage);
    return FF_OK;
}

ff_status ff_dist_coll_wait(ff_backend *be, void *comm, const char *fn)
{
    ff_status (*wait)(void *, void *) = FF_VT_OPT(be, coll_wait);
    ff_clear_error();
    ff_status st = wait(be->ctx, comm);
    return st ? coll_fail(be, fn, "coll_wait", st) : FF_OK;
}

void ff_dist_counts(int64_t *device, int64_t *staged)
{
    if (device) *device = G.n_device;
    if (staged) *staged = G.n_staged;
}

/* t's collective on the device: in place on t, through a dense copy when t is a strided
 * view (copied back after). out: allgather's result (NULL for the in-place ones).
 * *staged: the group could not be made on every rank, so nothing ran: stage instead. */
static ff_status device_collective(ff_tensor *t, ff_coll_op op, int arg, ff_tensor **out, bool *staged,
                                   const char *fn)
{
    ff_backend *be = t->storage->backend;
    void *comm;
    ff_status st = ff_dist_coll_group(be, fn, &comm);
    *staged = !st && !comm;
    if (st || !comm) return st;
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *src = ff_tensor_is_contiguous(t) ? ff_tensor_retain(t) : ff_clone(t);
    if (!src) st = ff_last_status();
    else if (op == FF_COLL_ALLGATHER) {
        int64_t shape[FF_MAX_DIMS];
        shape[0] = G.size;
        memcpy(shape + 1, t->layout.shape, sizeof(int64_t) * (size_t)t->layout.ndim);
        *out = ff_empty_on(be, t->layout.ndim + 1, shape, t->dtype);
        st = *out ? ff_dist_coll_run(be, comm, op, arg, false, *out, src, fn) : ff_last_status();
    } else {
        st = ff_dist_coll_run(be, comm, op, arg, false, src, src, fn);
        if (!st && src != t) st = ff_copy_(t, src);
    }
    ff_tensor_release(src);
    ff_set_grad_enabled(prev);
    return st;
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
    case FF_I8: return MPI_INT8_T;
    case FF_I16: return MPI_INT16_T;
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
    if (st) return st;
    bool device = ff_dist_coll_capable(t->storage->backend, FF_COLL_ALLREDUCE, t->dtype);
    if ((st = ff_dist_agree_device(fn, FF_DIST_K_ALLREDUCE, t->dtype, t->layout.ndim, t->layout.shape, op, 0,
                                   &device)))
        return st;
    int64_t n = ff_tensor_numel(t);
    if (n == 0) return FF_OK;
    bool host = true;
    if (device && ((st = device_collective(t, FF_COLL_ALLREDUCE, (int)op, NULL, &host, fn)) || !host)) return st;
    if (G.size == 1) return FF_OK;
    G.n_staged++;
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
    bool device = ff_dist_coll_capable(t->storage->backend, FF_COLL_BROADCAST, t->dtype);
    ff_status st =
        ff_dist_agree_device(fn, FF_DIST_K_BROADCAST, t->dtype, t->layout.ndim, t->layout.shape, 0, root, &device);
    int64_t n = ff_tensor_numel(t);
    if (st || n == 0) return st;
    bool host = true;
    if (device && ((st = device_collective(t, FF_COLL_BROADCAST, root, NULL, &host, fn)) || !host)) return st;
    if (G.size == 1) return FF_OK;
    G.n_staged++;
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
    bool device = ff_dist_coll_capable(t->storage->backend, FF_COLL_ALLGATHER, t->dtype);
    if (ff_dist_agree_device(fn, FF_DIST_K_ALLGATHER, t->dtype, t->layout.ndim, t->layout.shape, 0, 0, &device))
        return NULL;
    if (device && ff_tensor_numel(t) > 0) {
        ff_tensor *out = NULL;
        bool staged = true;
        ff_status st = device_collective((ff_tensor *)t, FF_COLL_ALLGATHER, 0, &out, &staged, fn);
        if (st || !staged) {
            if (st) ff_tensor_release(out);
            return st ? NULL : out;
        }
    }
    G.n_staged += G.size > 1;
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
