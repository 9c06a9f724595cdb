/* File plumbing for the io layer: crash-safe writes and exact reads that turn short
 * files into clear errors.
 *
 * A save must never corrupt the old file and never leave litter, even when the process
 * is killed mid-write. The data goes to an unnamed file in the target's directory
 * (O_TMPFILE: if the process dies, the kernel frees it), which commit fsyncs, links
 * under a temporary name and renames over the target: the target is always either
 * the old file or the whole new one, and a name exists only for the instant between
 * link and rename. Where the file system has no O_TMPFILE, the data goes to a named
 * "<path>.tmp.XXXXXX". Either way the writer holds a lock on its file from before it
 * has a name the others act on (fallback: from just after mkstemp, checking the name is
 * still its file) until after the rename, and every save first removes the unlocked
 * "<path>.tmp.*" files, whose writers died: concurrent saves of one path all succeed,
 * and the last rename wins. */
#define _GNU_SOURCE /* O_TMPFILE, linkat */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io_impl.h"

#define IO_CHUNK ((size_t)1 << 24) /* bounded staging memory for non-host tensors */
#define TMP_SUFFIX ".tmp."

/* The directory part of path ("." when there is none); malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
}

/* Whether the name path still refers to the open file fd. */
static bool names_fd(const char *path, int fd)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Removes "<base>.tmp.*" files in dir that nobody holds a lock on: leftovers of
 * writers that died. A live writer holds its lock until its file is renamed away, so a
 * lock taken here means a dead writer, or a fallback writer between mkstemp and flock,
 * which sees its name gone and starts over (ff_io_writer_open). */
static void remove_stale_temps(const char *path)
{
    char *dir = dir_of(path);
    if (!dir) return;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t nb = strlen(base);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, base, nb) != 0 || strncmp(e->d_name + nb, TMP_SUFFIX, sizeof TMP_SUFFIX - 1) != 0)
            continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        int fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && names_fd(full, fd)) unlink(full); /* its writer is gone */
        close(fd);
    }
    if (d) closedir(d);
    free(dir);
}

ff_status ff_io_writer_open(ff_io_writer *w, const char *path, const char *fn)
{
    w->fd = -1;
    w->tmp_path = NULL;
    w->path = path;
    if (!path || !*path) return ff_error(FF_ERR_INVALID, "%s: path is NULL or empty", fn);
    remove_stale_temps(path);
    const char *no_tmpfile = getenv("FF_IO_NO_O_TMPFILE"); /* tests of the fallback path */
    if (!(no_tmpfile && *no_tmpfile == '1')) {
        char *dir = dir_of(path);
        if (!dir) return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
        w->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
        int e = errno;
        free(dir);
        if (w->fd >= 0) {
            (void)flock(w->fd, LOCK_EX); /* the lock follows the file once it has a name */
            return FF_OK;
        }
        if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL && e != ENOENT)
            return ff_error(FF_ERR_IO, "%s: cannot create a file next to '%s': %s", fn, path, strerror(e));
        /* ENOENT can also mean "no such directory": the fallback reports that clearly */
    }
    size_t n = strlen(path);
    w->tmp_path = malloc(n + sizeof TMP_SUFFIX "XXXXXX");
    if (!w->tmp_path) return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    /* mkstemp's file is visible, unlocked, for an instant: another save's cleanup may
     * take it for a dead writer's and remove it. Once locked, a file still under its
     * name is safe until commit; one that is gone is replaced by a new one. */
    int e = EAGAIN; /* reported if every attempt loses its file to a cleanup */
    for (int attempt = 0; attempt < 100; attempt++) {
        memcpy(w->tmp_path, path, n);
        memcpy(w->tmp_path + n, TMP_SUFFIX "XXXXXX", sizeof TMP_SUFFIX "XXXXXX");
        w->fd = mkstemp(w->tmp_path);
        if (w->fd < 0) {
            e = errno;
            break;
        }
        while (flock(w->fd, LOCK_EX) != 0 && errno == EINTR) {
        }
        if (names_fd(w->tmp_path, w->fd)) { /* locked (or a file system without flock) */
            (void)fchmod(w->fd, 0644); /* mkstemp makes 0600; a saved model is meant to be shared */
            return FF_OK;
        }
        close(w->fd);
        w->fd = -1;
    }
    free(w->tmp_path);
    w->tmp_path = NULL;
    return ff_error(FF_ERR_IO, "%s: cannot create a temporary file next to '%s': %s", fn, path, strerror(e));
}

ff_status ff_io_writer_write(ff_io_writer *w, const void *p, size_t n, const char *fn)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(w->fd, c, n > IO_CHUNK ? IO_CHUNK : n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return ff_error(FF_ERR_IO, "%s: writing the new '%s' failed: %s", fn, w->path,
                            k < 0 ? strerror(errno) : "no progress");
        c += k;
        n -= (size_t)k;
    }
    return FF_OK;
}

void ff_io_writer_abort(ff_io_writer *w)
{
    if (w->tmp_path) unlink(w->tmp_path); /* before close drops the lock that keeps it ours */
    if (w->fd >= 0) close(w->fd);
    free(w->tmp_path);
    w->fd = -1;
    w->tmp_path = NULL;
}

/* Gives the unnamed O_TMPFILE file a unique temporary name next to the target. */
static ff_status name_tmpfile(ff_io_writer *w, const char *fn)
{
    size_t n = strlen(w->path);
    w->tmp_path = malloc(n + sizeof TMP_SUFFIX "0123456789abcdef");
    if (!w->tmp_path) return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", w->fd);
    for (int attempt = 0; attempt < 100; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long r = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)getpid() ^
                               ((unsigned long long)attempt << 48);
        snprintf(w->tmp_path, n + sizeof TMP_SUFFIX "0123456789abcdef", "%s" TMP_SUFFIX "%016llx", w->path, r);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, w->tmp_path, AT_SYMLINK_FOLLOW) == 0) return FF_OK;
        if (errno != EEXIST) break;
    }
    int e = errno;
    free(w->tmp_path);
    w->tmp_path = NULL;
    return ff_error(FF_ERR_IO, "%s: cannot link the new file next to '%s': %s", fn, w->path, strerror(e));
}

ff_status ff_io_writer_commit(ff_io_writer *w, const char *fn)
{
    if (fsync(w->fd) != 0) {
        ff_error(FF_ERR_IO, "%s: fsync of the new '%s' failed: %s", fn, w->path, strerror(errno));
        ff_io_writer_abort(w);
        return FF_ERR_IO;
    }
    if (!w->tmp_path && name_tmpfile(w, fn)) { /* the O_TMPFILE path */
        ff_io_writer_abort(w);
        return FF_ERR_IO;
    }
    /* rename before close: the lock (dropped by close) is what tells another save's
     * cleanup that this temporary file's writer is alive */
    if (rename(w->tmp_path, w->path) != 0) {
        ff_error(FF_ERR_IO, "%s: cannot move '%s' to '%s': %s", fn, w->tmp_path, w->path, strerror(errno));
        ff_io_writer_abort(w);
        return FF_ERR_IO;
    }
    free(w->tmp_path);
    w->tmp_path = NULL;
    (void)close(w->fd); /* after a good fsync, close has nothing left to report */
    w->fd = -1;
    /* Make the rename itself durable. Best effort: some filesystems refuse fsync on
     * directories, and the data is already safe under the new name. */
    char *dir = dir_of(w->path);
    if (dir) {
        int dfd = open(dir, O_RDONLY);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    return FF_OK;
}

ff_status ff_io_writer_tensor(ff_io_writer *w, const ff_tensor *t, const char *fn)
{
    size_t es = ff_dtype_size(t->dtype), nbytes = (size_t)ff_tensor_numel(t) * es;
    if (!nbytes) return FF_OK;
    void *host = ff_tensor_data_ptr(t);
    if (host && ff_tensor_is_contiguous(t)) return ff_io_writer_write(w, host, nbytes, fn);
    ff_tensor *c = ff_contiguous(t);
    if (!c) return ff_last_status();
    ff_status st = FF_OK;
    if ((host = ff_tensor_data_ptr(c))) {
        st = ff_io_writer_write(w, host, nbytes, fn);
    } else {
        ff_backend *be = c->storage->backend;
        size_t chunk = nbytes < IO_CHUNK ? nbytes : IO_CHUNK;
        char *buf = malloc(chunk);
        if (!buf) st = ff_error(FF_ERR_OOM, "%s: out of memory for a %zu-byte staging buffer", fn, chunk);
        for (size_t off = 0; !st && off < nbytes; off += chunk) {
            size_t k = nbytes - off < chunk ? nbytes - off : chunk;
            ff_clear_error();
            st = be->vt->download(be->ctx, c->storage->buf, (size_t)c->layout.offset * es + off, buf, k);
            if (st) {
                ff_error_prefix(fn);
                ff_error(st, "%s", ff_last_error());
            } else {
                st = ff_io_writer_write(w, buf, k, fn);
            }
        }
        free(buf);
    }
    ff_tensor_release(c);
    return st;
}

const char *ff_io_file_kind(const struct stat *st)
{
    if (S_ISREG(st->st_mode)) return "a regular file";
    if (S_ISDIR(st->st_mode)) return "a directory";
    if (S_ISFIFO(st->st_mode)) return "a FIFO";
    if (S_ISSOCK(st->st_mode)) return "a socket";
    if (S_ISCHR(st->st_mode)) return "a character device";
    if (S_ISBLK(st->st_mode)) return "a block device";
    return "another kind of file";
}

ff_status ff_io_open_read(const char *path, int *fd, uint64_t *size, const char *fn)
{
    *fd = -1;
    if (!path || !*path) return ff_error(FF_ERR_INVALID, "%s: path is NULL or empty", fn);
    /* O_NONBLOCK: opening a FIFO for reading blocks until a writer comes, maybe forever;
     * with it the open returns at once and the type check below refuses the FIFO. */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f < 0) return ff_error(FF_ERR_IO, "%s: cannot open '%s': %s", fn, path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return ff_error(FF_ERR_IO, "%s: cannot stat '%s': %s", fn, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return ff_error(FF_ERR_IO, "%s: '%s' is not a regular file but %s", fn, path, ff_io_file_kind(&st));
    }
    (void)fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK); /* regular files ignore it; clear it anyway */
    *fd = f;
    *size = (uint64_t)st.st_size;
    return FF_OK;
}

ff_status ff_io_pread(int fd, void *buf, size_t n, uint64_t off, const char *path, const char *fn)
{
    char *c = buf;
    while (n) {
        ssize_t k = pread(fd, c, n > IO_CHUNK ? IO_CHUNK : n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return ff_error(FF_ERR_IO, "%s: reading '%s' failed: %s", fn, path, strerror(errno));
        if (k == 0) return ff_error(FF_ERR_IO, "%s: '%s' is truncated (ends before byte %llu)", fn, path,
                                    (unsigned long long)(off + n));
        c += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return FF_OK;
}

ff_status ff_io_check_bools(const unsigned char *p, size_t n, const char *path, const char *what, const char *fn)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] > 1)
            return ff_error(FF_ERR_INVALID, "%s: '%s': %s: bool element %zu has byte value %u (must be 0 or 1)", fn,
                            path, what, i, p[i]);
    return FF_OK;
}

ff_status ff_io_fill_tensor(ff_tensor *t, int fd, uint64_t off, const void *mem, const char *path, const char *fn)
{
    size_t nbytes = t->storage->nbytes;
    if (!nbytes) return FF_OK;
    void *host = ff_tensor_data_ptr(t);
    if (host) return mem ? (memcpy(host, mem, nbytes), FF_OK) : ff_io_pread(fd, host, nbytes, off, path, fn);
    ff_backend *be = t->storage->backend;
    size_t chunk = nbytes < IO_CHUNK ? nbytes : IO_CHUNK;
    char *buf = mem ? NULL : malloc(chunk);
    if (!mem && !buf) return ff_error(FF_ERR_OOM, "%s: out of memory for a %zu-byte staging buffer", fn, chunk);
    ff_status st = FF_OK;
    for (size_t o = 0; !st && o < nbytes; o += chunk) {
        size_t k = nbytes - o < chunk ? nbytes - o : chunk;
        const void *src = mem ? (const char *)mem + o : buf;
        if (!mem) st = ff_io_pread(fd, buf, k, off + o, path, fn);
        if (!st) {
            ff_clear_error();
            st = be->vt->upload(be->ctx, t->storage->buf, o, src, k);
            if (st) {
                ff_error_prefix(fn);
                ff_error(st, "%s", ff_last_error());
            }
        }
    }
    free(buf);
    return st;
}
