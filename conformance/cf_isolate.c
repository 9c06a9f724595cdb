#define _GNU_SOURCE /* strsignal */
/* Crash isolation. The suite exists for backends under development, and those crash: a
 * segfault in one entry must become a failure naming the case, not the end of the run.
 *
 * The parent (which holds the case registry and the reference backend, which starts no
 * threads) forks a worker that loads the backend under test, walks the selected cases
 * from a start index and writes one fixed-size record per case into a pipe as soon as
 * the case is done. Records are smaller than PIPE_BUF, so each arrives whole. The parent
 * reads them in order: when the pipe closes before the record of case i arrives, case i
 * is the one that killed the worker, and waitpid says how; when no record comes for
 * timeout_s, the worker is killed and case i timed out. Either way the next worker starts
 * at the case after i. A healthy run needs exactly one worker per backend. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cf_isolate.h"

typedef struct record {
    int32_t index; /* the case, or -1 for the hello of a probe */
    int32_t result;
    int32_t coverage_gap;
    char msg[2048];
} record;

_Static_assert(sizeof(record) <= 4096, "a record must fit in PIPE_BUF to be written atomically");

static bool write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w, n -= (size_t)w;
    }
    return true;
}

/* Reads one whole record; false on end of file or error. */
static bool read_record(int fd, record *r)
{
    char *p = (char *)r;
    size_t n = sizeof *r;
    while (n) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got, n -= (size_t)got;
    }
    return true;
}

/* A worker process: fd is the write end of its pipe. Never returns. */
static void worker_main(int fd, const char *spec, cf_ctx *ctx, const cf_filter *f, int start, bool probe)
{
    record rec;
    memset(&rec, 0, sizeof rec);
    ff_backend *be = ff_backend_load(spec);
    if (probe) {
        rec.index = -1;
        rec.result = be ? CF_PASS : CF_FAIL;
        if (be) snprintf(rec.msg, sizeof rec.msg, "%s\t%s", ff_backend_name(be), ff_backend_path(be));
        else snprintf(rec.msg, sizeof rec.msg, "%s", ff_last_error());
        write_all(fd, &rec, sizeof rec);
        _exit(0); /* a probe checks nothing else: no exit handlers, no leak report */
    }
    if (!be) _exit(3); /* it loaded in the probe; the parent reports the case as crashed */
    cf_guard_install(be);
    ctx->t = be;
    for (int i = start; i < cf_case_count(); i++) {
        if (!cf_case_selected(cf_case_at(i), f) || cf_case_abandoned(cf_case_at(i))) continue;
        cf_report rep;
        memset(&rep, 0, sizeof rep);
        rec.index = i;
        rec.result = cf_run_case(ctx, i, &rep);
        rec.coverage_gap = rep.coverage_gap;
        memcpy(rec.msg, rep.msg, sizeof rec.msg);
        if (!write_all(fd, &rec, sizeof rec)) _exit(4);
    }
    close(fd);
    /* The backends go first: their thread pools are joined, so LeakSanitizer's exit scan
     * never walks a live pool thread (one that ran an OpenMP-threaded library's sgemm
     * crashed the scan: "Tracer caught signal 11"), and whatever a backend keeps must be
     * freed by its destroy or shows as a leak. exit, not _exit: LeakSanitizer (the ASan
     * build runs this suite) checks at exit and makes the status non-zero on a leak,
     * which the parent reports. */
    ff_shutdown();
    exit(0);
}

static pid_t spawn(int *fd_out, const char *spec, cf_ctx *ctx, const cf_filter *f, int start, bool probe)
{
    int p[2];
    if (pipe(p) != 0) return -1;
    fflush(NULL); /* or the child would print the parent's buffered output again */
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        worker_main(p[1], spec, ctx, f, start, probe);
    }
    close(p[1]);
    *fd_out = p[0];
    return pid;
}

/* How a worker that stopped ended, in words. */
static void describe_end(int status, char *buf, size_t n)
{
    if (WIFSIGNALED(status))
        snprintf(buf, n, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, n, "stopped (wait status 0x%x)", status);
}

bool cf_probe_backend(const char *spec, char *name, size_t nname, char *path, size_t npath, char *err, size_t nerr,
                      bool *no_start)
{
    int fd;
    cf_ctx dummy = {0};
    cf_filter none = {0};
    *no_start = false;
    pid_t pid = spawn(&fd, spec, &dummy, &none, 0, true);
    if (pid < 0) {
        snprintf(err, nerr, "cannot start a worker process: %s", strerror(errno));
        return false;
    }
    record rec;
    bool got = read_record(fd, &rec);
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!got) {
        char how[160];
        describe_end(status, how, sizeof how);
        snprintf(err, nerr, "the backend crashed while loading: the worker %s", how);
        return false;
    }
    rec.msg[sizeof rec.msg - 1] = '\0';
    if (rec.result != CF_PASS) {
        snprintf(err, nerr, "%s", rec.msg);
        *no_start = strstr(rec.msg, "failed to initialize") != NULL;
        return false;
    }
    char *tab = strchr(rec.msg, '\t');
    if (tab) *tab = '\0';
    snprintf(name, nname, "%s", rec.msg);
    snprintf(path, npath, "%s", tab ? tab + 1 : "");
    return true;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits up to the timeout for the worker's next record: 1 got one, 0 end of file,
 * -1 timed out. */
static int next_record(cf_worker *w, record *rec)
{
    double deadline = w->timeout_s > 0 ? now_s() + w->timeout_s : 0;
    for (;;) {
        struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
        int ms = -1;
        if (deadline) {
            double left = deadline - now_s();
            if (left <= 0) return -1;
            ms = (int)(left * 1000) + 1;
        }
        int r = poll(&pfd, 1, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) return -1;
        return read_record(w->fd, rec) ? 1 : 0;
    }
}

static void reap(cf_worker *w, int *status, bool kill_it)
{
    if (kill_it) kill(w->pid, SIGKILL);
    close(w->fd);
    *status = 0;
    while (waitpid(w->pid, status, 0) < 0 && errno == EINTR) {
    }
    w->pid = 0;
}

cf_result cf_exec_isolated(void *state, cf_ctx *ctx, int i, cf_report *rep)
{
    cf_worker *w = state;
    if (!w->pid) {
        w->pid = spawn(&w->fd, w->spec, ctx, w->flt, i, false);
        if (w->pid < 0) {
            w->pid = 0;
            snprintf(rep->msg, sizeof rep->msg, "cannot start a worker process: %s", strerror(errno));
            return CF_FAIL;
        }
    }
    record rec;
    int got = next_record(w, &rec);
    if (got == 1 && rec.index == i) {
        rec.msg[sizeof rec.msg - 1] = '\0';
        memcpy(rep->msg, rec.msg, sizeof rep->msg);
        rep->coverage_gap = rec.coverage_gap != 0;
        return (cf_result)rec.result;
    }
    int status;
    reap(w, &status, got != 0); /* a timeout or an out-of-order record: stop it */
    char how[160];
    if (got == -1) snprintf(how, sizeof how, "no result after %g s: the worker was killed (a hang?)", w->timeout_s);
    else if (got == 1) snprintf(how, sizeof how, "the worker reported case %d out of order", (int)rec.index);
    else {
        char end[120];
        describe_end(status, end, sizeof end);
        snprintf(how, sizeof how, "the worker %s while running it", end);
    }
    const cf_case *c = cf_case_at(i);
    snprintf(rep->msg, sizeof rep->msg, "%s | op=%s.%s dtype=%s | rerun in the debugger: ff-conformance --backend %s --case %s --seed %llu --no-fork",
             how, c->family, c->op, ff_dtype_name(c->dtype), ctx->backend_arg, c->id, (unsigned long long)ctx->seed);
    rep->crashed = true;
    return CF_FAIL;
}

bool cf_worker_finish(cf_worker *w, char *err, size_t nerr)
{
    if (!w->pid) return true;
    record extra;
    int got = next_record(w, &extra); /* normally end of file right away */
    int status;
    reap(w, &status, got != 0);
    if (got == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
    char end[120];
    describe_end(status, end, sizeof end);
    snprintf(err, nerr, "the worker %s after its last case (a LeakSanitizer report above, or a crash at exit)",
             end);
    return false;
}
