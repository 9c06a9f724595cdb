/* libFuzzer: ff_torch_zip_load on arbitrary bytes (a zip archive whose data.pkl goes
 * through the restricted pickle reader). Anything but a clean load or a clear error (a
 * crash, a sanitizer report, a leak, an allocation beyond the input's size) is a bug.
 * A file that loads is saved as safetensors and must load again with the same count. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */

#include <stdlib.h>

#include "ff/ff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    ff_tensor_dict *d = ff_torch_zip_load(path);
    if (!d) {
        if (!ff_last_error()[0]) __builtin_trap(); /* a failure must say why */
    } else {
        char out[] = "/tmp/ff_fuzz_tz_XXXXXX";
        int ofd = mkstemp(out);
        if (ofd >= 0) {
            close(ofd);
            if (ff_safetensors_save_dict(out, d) != FF_OK) __builtin_trap();
            ff_tensor_dict *again = ff_safetensors_load(out, 0);
            if (!again || ff_tensor_dict_count(again) != ff_tensor_dict_count(d)) __builtin_trap();
            ff_tensor_dict_free(again);
            unlink(out);
        }
        ff_tensor_dict_free(d);
    }
    close(fd);
    return 0;
}
