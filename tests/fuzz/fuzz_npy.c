/* libFuzzer: ff_npy_load on arbitrary bytes (v1-v3 headers, C and Fortran order). A
 * loaded array is saved and loaded again and must keep its shape and dtype. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */

#include <stdlib.h>

#include "ff/ff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    ff_tensor *t = ff_npy_load(path);
    if (!t && !ff_last_error()[0]) __builtin_trap();
    if (t) {
        char out[] = "/tmp/ff_fuzz_npy_XXXXXX";
        int ofd = mkstemp(out);
        if (ofd >= 0) {
            close(ofd);
            if (ff_npy_save(out, t) != FF_OK) __builtin_trap();
            ff_tensor *again = ff_npy_load(out);
            if (!again || ff_tensor_dtype(again) != ff_tensor_dtype(t) || ff_tensor_ndim(again) != ff_tensor_ndim(t))
                __builtin_trap();
            ff_tensor_release(again);
            unlink(out);
        }
        ff_tensor_release(t);
    }
    close(fd);
    return 0;
}
