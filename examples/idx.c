/* IDX reader on zlib's gz* API (which also reads uncompressed files transparently).
 * Every field is validated before it is trusted: magic, rank, dims, data length, and
 * that nothing follows the data. */
#include "idx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Cap on one file: the datasets are ~47 MB unpacked; a corrupt header must not make
 * us allocate gigabytes. */
#define IDX_MAX_BYTES ((size_t)1 << 30)

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "%s: %s", path, msg);
    return -1;
}

/* Reads exactly n bytes; 0 on success. */
static int read_exact(gzFile f, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got <= 0) return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static const char *gz_why(gzFile f)
{
    int code = 0;
    const char *m = gzerror(f, &code);
    return code != Z_OK && m && m[0] ? m : "unexpected end of file";
}

int idx_read_u8(const char *path, idx_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    gzFile f = gzopen(path, "rb");
    if (!f) return fail(err, errlen, path, "cannot open (missing file or no permission)");
    uint8_t magic[4];
    int rc = -1;
    if (read_exact(f, magic, 4)) {
        fail(err, errlen, path, "cannot read the 4-byte magic number: %s", gz_why(f));
        goto done;
    }
    if (magic[0] != 0 || magic[1] != 0) {
        fail(err, errlen, path, "not an IDX file (magic starts %02x %02x, expected 00 00)", magic[0], magic[1]);
        goto done;
    }
    if (magic[2] != 0x08) {
        fail(err, errlen, path, "IDX element type 0x%02x is not supported (only 0x08, unsigned byte)", magic[2]);
        goto done;
    }
    if (magic[3] < 1 || magic[3] > IDX_MAX_DIMS) {
        fail(err, errlen, path, "IDX rank %d is out of range [1, %d]", magic[3], IDX_MAX_DIMS);
        goto done;
    }
    out->ndim = magic[3];
    size_t size = 1;
    for (int d = 0; d < out->ndim; d++) {
        uint8_t b[4];
        if (read_exact(f, b, 4)) {
            fail(err, errlen, path, "truncated header (dim %d): %s", d, gz_why(f));
            goto done;
        }
        uint32_t v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
        if (v == 0 || size > IDX_MAX_BYTES / v) {
            fail(err, errlen, path, "dim %d = %u is zero or makes the file larger than %zu bytes", d, v, IDX_MAX_BYTES);
            goto done;
        }
        out->dims[d] = v;
        size *= v;
    }
    out->size = size;
    out->data = malloc(size);
    if (!out->data) {
        fail(err, errlen, path, "out of memory for %zu bytes", size);
        goto done;
    }
    if (read_exact(f, out->data, size)) {
        fail(err, errlen, path, "truncated data: the header promises %zu bytes (%s)", size, gz_why(f));
        goto done;
    }
    uint8_t extra;
    if (gzread(f, &extra, 1) != 0) {
        fail(err, errlen, path, "trailing bytes after the %zu data bytes the header declares", size);
        goto done;
    }
    rc = 0;
done:
    gzclose(f);
    if (rc) idx_free(out);
    return rc;
}

void idx_free(idx_array *a)
{
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}
