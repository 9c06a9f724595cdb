/* Processes saving to one path at the same time (every DDP rank writing the same
 * checkpoint): every save succeeds, and the file is always one whole save. Four
 * processes save 150 times each and read the file back after every save, on the
 * O_TMPFILE path and on the named-temp fallback (FF_IO_NO_O_TMPFILE=1); afterwards no
 * temporary file is left. Before the fix a save's stale-temp cleanup could remove a live
 * writer's temporary ("cannot move ... No such file"). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ff_test.h"

enum { WRITERS = 4, SAVES = 150, ELEMS = 4096 };

static int count_temps(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

/* The file holds one whole save: "w" with ELEMS equal values. */
static bool file_whole(ff_backend *be, const char *path)
{
    ff_tensor_dict *d = ff_safetensors_load_on(be, path, 0);
    ff_tensor *t = d ? ff_tensor_dict_get(d, "w") : NULL;
    bool ok = t && ff_tensor_numel(t) == ELEMS;
    if (ok) {
        ff_tensor *lo = ff_amin(t, 0, NULL, false), *hi = ff_amax(t, 0, NULL, false);
        double a = -1, b = -2;
        ok = lo && hi && ff_tensor_item(lo, &a) == FF_OK && ff_tensor_item(hi, &b) == FF_OK && a == b;
        ff_tensor_release(lo);
        ff_tensor_release(hi);
    }
    ff_tensor_release(t);
    ff_tensor_dict_free(d);
    return ok;
}

/* A writer: waits for the start, saves SAVES times (each its own values), checks the
 * file after each; its exit status counts failed saves (low byte) and bad reads. On the
 * reference backend: a forked child inherits none of the default backend's threads. */
static void writer(int id, const char *path, int start)
{
    char c;
    if (read(start, &c, 1) != 0) _exit(250); /* EOF: the parent let every writer go */
    ff_backend *cpu = ff_backend_load("cpu");
    int failed = 0, bad = 0;
    for (int k = 0; k < SAVES && cpu; k++) {
        ff_tensor *t = ff_full_on(cpu, 1, SHAPE(ELEMS), FF_F32, id * 1000 + k);
        ff_tensor_dict *d = ff_tensor_dict_new();
        if (!t || !d || ff_tensor_dict_set(d, "w", t) || ff_safetensors_save_dict(path, d)) {
            if (failed++ == 0) fprintf(stderr, "writer %d save %d: %s\n", id, k, ff_last_error());
        } else if (!file_whole(cpu, path)) {
            bad++;
        }
        ff_tensor_dict_free(d);
        ff_tensor_release(t);
    }
    _exit(!cpu ? 251 : failed ? (failed > 99 ? 99 : failed) : bad ? 100 + (bad > 99 ? 99 : bad) : 0);
}

static void save_together(bool fallback)
{
    char dir[] = "/tmp/ff_concurrent_save_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    if (fallback) setenv("FF_IO_NO_O_TMPFILE", "1", 1);
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t pids[WRITERS];
    fflush(NULL);
    for (int i = 0; i < WRITERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(go[1]);
            writer(i, path, go[0]);
        }
    }
    close(go[0]);
    close(go[1]); /* every writer starts now */
    int failing = 0;
    for (int i = 0; i < WRITERS; i++) {
        int status = -1;
        CHECK(pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i]);
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
        if (code) fprintf(stderr, "writer %d (%s): exit %d (1-99: failed saves, 100+: bad reads)\n", i,
                          fallback ? "fallback" : "O_TMPFILE", code);
        failing += code != 0;
    }
    CHECK(failing == 0);
    ff_backend *cpu = ff_backend_load("cpu");
    CHECK(cpu && file_whole(cpu, path));
    CHECK(count_temps(dir) == 0); /* every writer lived to rename its file */
    unsetenv("FF_IO_NO_O_TMPFILE");
    unlink(path);
    rmdir(dir);
}

static void test_concurrent_o_tmpfile(void) { save_together(false); }
static void test_concurrent_fallback(void) { save_together(true); }

FF_TEST_MAIN("io_concurrent_save", TEST(test_concurrent_o_tmpfile), TEST(test_concurrent_fallback))
