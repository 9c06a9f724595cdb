/* File plumbing for the io layer: crash-safe writes (temp file + fsync + rename) and
 * exact reads that turn short files into clear errors. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_impl.h"

#define IO_CHUNK ((size_t)1 << 24) /* bounded staging memory for non-host tensors */

ff_status ff_io_writer_open(ff_io_writer *w, const char *path, const char *fn)
{
    w->fd = -1;
    w->tmp_path = NULL;
    w->path = path;
    if (!path || !*path) return ff_error(FF_ERR_INVALID, "%s: path is NULL or empty", fn);
    size_t n = strlen(path);
    w->tmp_path = malloc(n + sizeof ".tmp.XXXXXX");
    if (!w->tmp_path) return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    memcpy(w->tmp_path, path, n);
    memcpy(w->tmp_path + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    w->fd = mkstemp(w->tmp_path);
    if (w->fd < 0) {
        int e = errno;
        free(w->tmp_path);
        w->tmp_path = NULL;
        return ff_error(FF_ERR_IO, "%s: cannot create a temporary file next to '%s': %s", fn, path, strerror(e));
    }
    (void)fchmod(w->fd, 0644); /* mkstemp makes 0600; a saved model is meant to be shared */
    return FF_OK;
}

ff_status ff_io_writer_write(ff_io_writer *w, const void *p, size_t n, const char *fn)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(w->fd, c, n > IO_CHUNK ? IO_CHUNK : n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return ff_error(FF_ERR_IO, "%s: writing '%s' failed: %s", fn, w->tmp_path,
                            k < 0 ? strerror(errno) : "no progress");
        c += k;
        n -= (size_t)k;
    }
    return FF_OK;
}

void ff_io_writer_abort(ff_io_writer *w)
{
    if (w->fd >= 0) close(w->fd);
    if (w->tmp_path) unlink(w->tmp_path);
    free(w->tmp_path);
    w->fd = -1;
    w->tmp_path = NULL;
}

ff_status ff_io_writer_commit(ff_io_writer *w, const char *fn)
{
    if (fsync(w->fd) != 0) {
        ff_error(FF_ERR_IO, "%s: fsync of '%s' failed: %s", fn, w->tmp_path, strerror(errno));
        ff_io_writer_abort(w);
        return FF_ERR_IO;
    }
    int rc = close(w->fd);
    w->fd = -1;
    if (rc != 0 || rename(w->tmp_path, w->path) != 0) {
        ff_error(FF_ERR_IO, "%s: cannot move '%s' to '%s': %s", fn, w->tmp_path, w->path, strerror(errno));
        ff_io_writer_abort(w);
        return FF_ERR_IO;
    }
    /* Make the rename itself durable. Best effort: some filesystems refuse fsync on
     * directories, and the data is already safe under the new name. */
    const char *slash = strrchr(w->path, '/');
    char *dir = slash ? strndup(w->path, slash == w->path ? 1 : (size_t)(slash - w->path)) : strdup(".");
    if (dir) {
        int dfd = open(dir, O_RDONLY);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    free(w->tmp_path);
    w->tmp_path = NULL;
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

ff_status ff_io_open_read(const char *path, int *fd, uint64_t *size, const char *fn)
{
    *fd = -1;
    if (!path || !*path) return ff_error(FF_ERR_INVALID, "%s: path is NULL or empty", fn);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return ff_error(FF_ERR_IO, "%s: cannot open '%s': %s", fn, path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(f);
        return ff_error(FF_ERR_IO, "%s: '%s' is not a regular file", fn, path);
    }
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
