/* Shared by the libFuzzer harnesses: input bytes as a file, and a byte reader. */
#ifndef FF_FUZZ_UTIL_H
#define FF_FUZZ_UTIL_H

#define _GNU_SOURCE /* memfd_create */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* data as a file the loaders can open by path: a memfd seen through /proc/self/fd.
 * Returns the fd (close it after use) and fills path; -1 on failure. */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t npath)
{
    int fd = memfd_create("ff_fuzz", 0);
    if (fd < 0) return -1;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, npath, "/proc/self/fd/%d", fd);
    return fd;
}

/* Consumes the input a byte (or a few) at a time; reads past the end give 0. */
typedef struct fuzz_bytes {
    const uint8_t *p;
    size_t n, i;
} fuzz_bytes;

static inline uint8_t fuzz_u8(fuzz_bytes *b) { return b->i < b->n ? b->p[b->i++] : 0; }
static inline uint32_t fuzz_u32(fuzz_bytes *b)
{
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) v = v << 8 | fuzz_u8(b);
    return v;
}
static inline int fuzz_range(fuzz_bytes *b, int lo, int hi) { return lo + (int)(fuzz_u8(b) % (unsigned)(hi - lo + 1)); }
static inline bool fuzz_done(const fuzz_bytes *b) { return b->i >= b->n; }

#endif /* FF_FUZZ_UTIL_H */
