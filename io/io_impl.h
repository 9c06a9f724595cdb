/* Private to io/: a strict JSON reader, file helpers and the external-memory wrapper
 * shared by the safetensors, .npy and DLPack code. */
#ifndef FF_IO_IMPL_H
#define FF_IO_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ff_impl.h"

/* ---- JSON (json_min.c) ---------------------------------------------------- */
/* RFC 8259, strictly: UTF-8 only, no comments, no trailing commas, no NaN, nesting at
 * most FF_JSON_MAX_DEPTH; only whitespace may follow the value. Duplicate keys are
 * kept (callers that care check them). */
#define FF_JSON_MAX_DEPTH 64

typedef enum ff_json_type {
    FF_JSON_NULL,
    FF_JSON_FALSE,
    FF_JSON_TRUE,
    FF_JSON_NUMBER,
    FF_JSON_STRING,
    FF_JSON_ARRAY,
    FF_JSON_OBJECT
} ff_json_type;

typedef struct ff_json {
    ff_json_type type;
    char *key;       /* member name inside an object (decoded, NUL-terminated) */
    size_t key_len;  /* bytes; differs from strlen(key) if the name holds \u0000 */
    char *str;       /* decoded string value, NUL-terminated */
    size_t str_len;
    bool is_int;     /* a number with no fraction/exponent that fits int64 */
    int64_t ival;
    size_t count;    /* children of an array/object */
    struct ff_json *child, *next;
} ff_json;

/* Parses text[0..len). On failure returns NULL and writes "<why> at byte <k>" to err.
 * max_nodes bounds memory on hostile input. */
ff_json *ff_json_parse(const char *text, size_t len, size_t max_nodes, char *err, size_t errlen);
void ff_json_free(ff_json *j);
/* Writes s as a JSON string literal (quotes included) to buf; returns the length it
 * needs (like snprintf). s must be valid UTF-8 (ff_utf8_valid). */
size_t ff_json_quote(const char *s, char *buf, size_t cap);
bool ff_utf8_valid(const char *s, size_t n);

/* ---- files (io_file.c) ---------------------------------------------------- */
/* Atomic writer: writes go to an unnamed O_TMPFILE file in path's directory (or, where
 * the file system has none, to a locked "<path>.tmp.XXXXXX"); commit fsyncs it, names it,
 * renames it over path and fsyncs the directory; abort removes it. A killed writer
 * leaves nothing behind (fallback: the next save of path removes its file). The file's
 * flock is held until after the rename: it is how other saves of path tell a live
 * writer's temporary from a dead one's. */
typedef struct ff_io_writer {
    int fd;
    char *tmp_path;
    const char *path;
} ff_io_writer;

ff_status ff_io_writer_open(ff_io_writer *w, const char *path, const char *fn);
ff_status ff_io_writer_write(ff_io_writer *w, const void *p, size_t n, const char *fn);
ff_status ff_io_writer_commit(ff_io_writer *w, const char *fn);
void ff_io_writer_abort(ff_io_writer *w);
/* Writes t's elements row-major (any strides/backend) in bounded chunks of memory. */
ff_status ff_io_writer_tensor(ff_io_writer *w, const ff_tensor *t, const char *fn);

/* Opens a regular file for reading; *size gets its length. Anything else (a FIFO, a
 * device, a directory) is refused with FF_ERR_IO before any read, so it never blocks. */
ff_status ff_io_open_read(const char *path, int *fd, uint64_t *size, const char *fn);
struct stat;
/* "a FIFO", "a directory", ...: what st is, for error messages. */
const char *ff_io_file_kind(const struct stat *st);
/* Reads exactly n bytes at off (FF_ERR_IO naming path if the file is shorter). */
ff_status ff_io_pread(int fd, void *buf, size_t n, uint64_t off, const char *path, const char *fn);
/* Fills t (fresh, contiguous) with n bytes from fd at off, or from mem if non-NULL. */
ff_status ff_io_fill_tensor(ff_tensor *t, int fd, uint64_t off, const void *mem, const char *path,
                            const char *fn);
/* Checks a bool tensor's bytes are all 0 or 1 (host data). */
ff_status ff_io_check_bools(const unsigned char *p, size_t n, const char *path, const char *what,
                            const char *fn);

/* ---- external memory (external.c) ----------------------------------------- */
/* A tensor on be viewing foreign host memory buf[0..nbytes) with layout l. When the
 * last tensor over it is released, release(ctx) runs (once) instead of the backend's
 * free. On failure NULL is returned and release is NOT called: the caller still owns
 * the memory. be must be a host-memory backend. */
ff_tensor *ff_io_wrap_external(ff_backend *be, void *buf, size_t nbytes, ff_dtype dtype, const ff_layout *l,
                               void (*release)(void *ctx), void *ctx, const char *fn);

/* ---- dicts (tensor_dict.c) ----------------------------------------------- */
/* Appends without a duplicate check (the loader checked), stealing t (released on
 * failure too). */
ff_status ff_io_dict_append(ff_tensor_dict *d, const char *name, ff_tensor *t);
/* Appends a metadata entry without a duplicate check (the loader checked, in
 * O(n log n): ff_tensor_dict_set_meta's check is linear per call, quadratic per file). */
ff_status ff_io_dict_append_meta(ff_tensor_dict *d, const char *key, const char *value);

#endif /* FF_IO_IMPL_H */
