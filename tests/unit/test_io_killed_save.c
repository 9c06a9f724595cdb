/* A save killed at a random moment never corrupts the old file and never leaves its
 * temporary file behind for good (the next save removes what a dead writer left; with
 * O_TMPFILE a named temporary exists only between link and rename). Both the O_TMPFILE path and the named-temp
 * fallback (FF_IO_NO_O_TMPFILE=1) are killed 20 times each. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ff_test.h"

static int count_temps(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

/* The file is absent or a whole, valid save (all values equal). */
static bool file_ok(const char *path)
{
    if (access(path, F_OK) != 0) return true;
    ff_tensor_dict *d = ff_safetensors_load(path, 0);
    if (!d) return false;
    ff_tensor *t = ff_tensor_dict_get(d, "w");
    bool ok = t != NULL;
    if (t) {
        ff_tensor *lo = ff_amin(t, 0, NULL, false), *hi = ff_amax(t, 0, NULL, false);
        double a = -1, b = -2;
        ok = lo && hi && ff_tensor_item(lo, &a) == FF_OK && ff_tensor_item(hi, &b) == FF_OK && a == b;
        RELEASE(lo, hi, t);
    }
    ff_tensor_dict_free(d);
    return ok;
}

/* The child saves on the reference backend: the default one may run a thread pool, and a
 * forked child inherits none of its threads. It saves one tensor over and over (so nearly
 * all of its time is spent inside a save, where the kills should land), and writes a byte
 * to `ready` once it is in that loop, so the kill comes among saves however slowly the
 * child starts (ASan, a busy machine). */
static void save_forever(const char *path, int ready)
{
    ff_backend *cpu = ff_backend_load("cpu");
    ff_tensor *t = ff_full_on(cpu, 1, SHAPE(1 << 21), FF_F32, 3.0); /* 8 MB: kills land mid-write */
    ff_tensor_dict *d = ff_tensor_dict_new();
    if (!t || !d || ff_tensor_dict_set(d, "w", t)) _exit(1);
    for (int gen = 0;; gen++) {
        if (gen == 1 && write(ready, "r", 1) != 1) _exit(1);
        if (ff_safetensors_save_dict(path, d)) _exit(1);
    }
}

static void kill_saves(bool fallback)
{
    char dir[] = "/tmp/ff_killed_save_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (fallback) setenv("FF_IO_NO_O_TMPFILE", "1", 1);
    srand(42);
    int corrupt = 0, left_behind = 0;
    for (int k = 0; k < 20; k++) {
        fflush(NULL);
        int fds[2];
        CHECK(pipe(fds) == 0);
        pid_t pid = fork();
        if (pid == 0) save_forever(path, fds[1]);
        close(fds[1]); /* a child that dies early ends the read with EOF, not a hang */
        char c;
        CHECK(read(fds[0], &c, 1) == 1); /* the child has finished one save */
        close(fds[0]);
        struct timespec ts = {0, (long)(rand() % 30 + 1) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        corrupt += !file_ok(path);
        left_behind += count_temps(dir) > 0;
    }
    CHECK(corrupt == 0);
    /* without O_TMPFILE, kills landing mid-write leave named temporaries (so the cleanup
     * below has work to do); with it, only a kill between link and rename can */
    if (fallback) CHECK(left_behind > 0);
    /* one more save cleans up whatever a dead writer left */
    ff_tensor *t = ff_full(1, SHAPE(4), FF_F32, 7);
    ff_tensor_dict *d = ff_tensor_dict_new();
    CHECK(t && d && ff_tensor_dict_set(d, "w", t) == FF_OK && ff_safetensors_save_dict(path, d) == FF_OK);
    CHECK(file_ok(path));
    CHECK(count_temps(dir) == 0);
    ff_tensor_dict_free(d);
    ff_tensor_release(t);
    unsetenv("FF_IO_NO_O_TMPFILE");
    unlink(path);
    rmdir(dir);
}

static void test_killed_o_tmpfile(void) { kill_saves(false); }
static void test_killed_fallback(void) { kill_saves(true); }

FF_TEST_MAIN("io_killed_save", TEST(test_killed_o_tmpfile), TEST(test_killed_fallback))
