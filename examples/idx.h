/* A reader for the IDX format of (Fashion-)MNIST, gzip'd or not:
 *   magic: 0x00 0x00 <type> <ndim>, then ndim big-endian uint32 dims, then the data.
 * Only type 0x08 (unsigned byte) is accepted, which is what the datasets use. */
#ifndef FF_EXAMPLES_IDX_H
#define FF_EXAMPLES_IDX_H

#include <stddef.h>
#include <stdint.h>

#define IDX_MAX_DIMS 4

typedef struct idx_array {
    int ndim;
    int64_t dims[IDX_MAX_DIMS];
    size_t size;   /* product of dims */
    uint8_t *data; /* size bytes, row-major */
} idx_array;

/* Reads path (gzip or plain) into out. On failure returns -1, frees everything and
 * writes "<path>: <what is wrong>" into err. */
int idx_read_u8(const char *path, idx_array *out, char *err, size_t errlen);
void idx_free(idx_array *a);

#endif
