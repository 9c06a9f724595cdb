/* Where the model lives and how its JSON files are read. The directory rule is the one
 * scripts/fetch-minilm.sh and embed.py follow; keep the three in step. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "minilm.h"

int minilm_model_dir(const char *explicit_dir, char *out, size_t cap, char *err, size_t errcap)
{
    const char *env = getenv("FF_MODEL_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int w;
    if (explicit_dir && explicit_dir[0]) w = snprintf(out, cap, "%s", explicit_dir);
    else if (env && env[0]) w = snprintf(out, cap, "%s", env);
    else if (xdg && xdg[0] == '/') w = snprintf(out, cap, "%s/fusionflow/models/" MINILM_NAME, xdg);
    else if (home && home[0]) w = snprintf(out, cap, "%s/.cache/fusionflow/models/" MINILM_NAME, home);
    else {
        snprintf(err, errcap, "no model directory: none of --model, FF_MODEL_DIR, XDG_CACHE_HOME, HOME is set");
        return -1;
    }
    if (w < 0 || (size_t)w >= cap) {
        snprintf(err, errcap, "model directory path too long");
        return -1;
    }
    return 0;
}

int minilm_check_dir(const char *dir, char *err, size_t cap)
{
    static const char *const needed[] = {"model.safetensors", "tokenizer.json", "config.json"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, needed[i]);
        bool found = stat(path, &st) == 0;
        if (found && !S_ISREG(st.st_mode)) {
            snprintf(err, cap, "%s is not a regular file: " MINILM_NAME " reads its model from regular files", path);
            return -1;
        }
        if (!found) {
            snprintf(err, cap,
                     "no " MINILM_NAME " model in %s (%s not found): " MINILM_FETCH_HINT
                     ", or point --model / FF_MODEL_DIR at a directory holding it",
                     dir, needed[i]);
            return -1;
        }
    }
    return 0;
}

/* The whole file, NUL-terminated; NULL with errno set on failure (EINVAL: not a regular
 * file). Opened O_NONBLOCK and checked before reading: a FIFO would block the open, or
 * the read, until a writer came. */
static char *read_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    if (e) {
        close(fd);
        errno = e;
        return NULL;
    }
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return NULL;
    }
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) buf[n] = 0;
    else {
        free(buf);
        buf = NULL;
        if (!errno) errno = EIO;
    }
    fclose(f);
    return buf;
}

cJSON *minilm_read_json(const char *dir, const char *name, int optional, char *err, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    err[0] = 0;
    errno = 0;
    char *text = read_file(path);
    if (!text) {
        if (errno == EINVAL) snprintf(err, cap, "cannot read %s: not a regular file", path);
        else if (!(optional && errno == ENOENT)) snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    cJSON *j = cJSON_Parse(text);
    if (!j) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(err, cap, "%s is not valid JSON (near byte %ld)", path, at ? (long)(at - text) : -1L);
    }
    free(text);
    return j;
}

int minilm_json_int(const cJSON *v, const char *file, const char *key, int64_t dflt, int64_t lo, int64_t hi,
                    int64_t *out, char *err, size_t cap)
{
    *out = dflt;
    if (!v || cJSON_IsNull(v)) return 0;
    const char *why = NULL;
    double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
    if (!cJSON_IsNumber(v)) why = "is not a number";
    else if (!(x >= (double)lo && x <= (double)hi)) why = "is out of range"; /* NaN too */
    else if (x != (double)(int64_t)x) why = "is not an integer";
    if (why) {
        if (cJSON_IsNumber(v))
            snprintf(err, cap, "%s: \"%s\" = %.15g %s: an integer in [%lld, %lld] is expected", file, key, x, why,
                     (long long)lo, (long long)hi);
        else
            snprintf(err, cap, "%s: \"%s\" %s: an integer in [%lld, %lld] is expected", file, key, why,
                     (long long)lo, (long long)hi);
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}
