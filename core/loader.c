/* The plugin loader: finds a backend .so by name or path, checks its ABI version and
 * vtable size before touching anything else, initializes it, and keeps it loaded.
 * Every failure names the file and the reason; nothing falls back silently. */
#define _GNU_SOURCE /* dladdr */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ff_impl.h"

#define FF_MAX_BACKENDS 16

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ff_backend *registry[FF_MAX_BACKENDS];
static int registry_count;
static ff_backend *default_backend;

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *r = malloc(n);
    if (r) memcpy(r, s, n);
    return r;
}

/* Shuts a loaded backend down and frees it: every way out of a load that got past init,
 * and ff_shutdown. */
static void backend_close(ff_backend *be)
{
    be->vt->shutdown(be->ctx);
    dlclose(be->dl_handle);
    free(be->path);
    free(be->name);
    free(be);
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory libfusionflow itself was loaded from (build/lib or the install
 * libdir): plugins live beside it. */
static bool core_dir(char *out, size_t n)
{
    Dl_info info;
    if (!dladdr((void *)&core_dir, &info) || !info.dli_fname) return false;
    char resolved[4096]; /* the loader may have found us as build/bin/../lib/...: tidy it */
    snprintf(out, n, "%s", realpath(info.dli_fname, resolved) ? resolved : info.dli_fname);
    char *slash = strrchr(out, '/');
    if (!slash) return false;
    *slash = '\0';
    return true;
}

/* Search order: each directory of FF_BACKEND_PATH, then the core's directory. Calls
 * visit(dir) for each; stops when it returns true. */
static bool for_each_search_dir(bool (*visit)(const char *dir, void *user), void *user)
{
    const char *env = getenv("FF_BACKEND_PATH");
    if (env && *env) {
        char *copy = dup_str(env);
        if (!copy) return false;
        char *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
            if (*d && visit(d, user)) {
                free(copy);
                return true;
            }
        free(copy);
    }
    char dir[4096];
    return core_dir(dir, sizeof dir) && visit(dir, user);
}

typedef struct {
    const char *file;
    char found[4096];
    char tried[2048];
} find_ctx;

static bool try_dir(const char *dir, void *user)
{
    find_ctx *c = user;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, c->file);
    size_t used = strlen(c->tried);
    snprintf(c->tried + used, sizeof c->tried - used, "%s%s", used ? ", " : "", dir);
    if (!file_exists(path)) return false;
    snprintf(c->found, sizeof c->found, "%s", path);
    return true;
}

static bool looks_like_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 3 && strcmp(s + n - 3, ".so") == 0);
}

/* Required entries, by name, for the error message. */
static const char *missing_required(const ff_backend_vtable *vt)
{
#define REQ(f) if (!vt->f) return #f
    REQ(init); REQ(shutdown); REQ(supports); REQ(alloc); REQ(free); REQ(upload); REQ(download);
    REQ(sync); REQ(fill); REQ(copy); REQ(unary); REQ(binary); REQ(reduce); REQ(matmul); REQ(where);
    REQ(gather); REQ(scatter_add); REQ(random);
#undef REQ
    return NULL;
}

static ff_backend *open_plugin(const char *path)
{
    static const char fn[] = "ff_backend_load";
    if (!file_exists(path))
        return ff_error(FF_ERR_BACKEND, "%s: backend file '%s' does not exist", fn, path), NULL;
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return ff_error(FF_ERR_BACKEND, "%s: cannot load '%s': %s", fn, path, dlerror()), NULL;
    dlerror();
    void *sym = dlsym(h, FF_BACKEND_ENTRY_SYMBOL);
    if (!sym) {
        const char *e = dlerror();
        ff_error(FF_ERR_BACKEND, "%s: '%s' is not a FusionFlow backend: symbol %s not found (%s)", fn, path,
                 FF_BACKEND_ENTRY_SYMBOL, e ? e : "no error text");
        dlclose(h);
        return NULL;
    }
    ff_backend_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer -> function pointer, POSIX-sanctioned */
    const ff_backend_vtable *vt = entry();
    const char *why = NULL;
    char buf[256];
    if (!vt) {
        why = "its entry function returned NULL";
    } else if (vt->abi_version != FF_ABI_VERSION) {
        snprintf(buf, sizeof buf, "ABI version mismatch: expected %d, found %u", FF_ABI_VERSION, vt->abi_version);
        why = buf;
    } else if (vt->struct_size < FF_BACKEND_V1_SIZE) {
        snprintf(buf, sizeof buf, "vtable struct size mismatch: expected at least %u bytes, found %u",
                 FF_BACKEND_V1_SIZE, vt->struct_size);
        why = buf;
    } else if (!vt->name || !*vt->name) {
        why = "its vtable has no name";
    } else if (missing_required(vt)) {
        snprintf(buf, sizeof buf, "required vtable entry '%s' is NULL", missing_required(vt));
        why = buf;
    }
    if (why) {
        ff_error(FF_ERR_BACKEND, "%s: '%s' rejected: %s", fn, path, why);
        dlclose(h);
        return NULL;
    }
    ff_backend *be = calloc(1, sizeof *be);
    if (!be) {
        dlclose(h);
        return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    }
    ff_clear_error();
    ff_status st = vt->init(&ff_host, &be->ctx);
    if (st) {
        ff_error(FF_ERR_BACKEND, "%s: backend '%s' (%s) failed to initialize: %s", fn, vt->name, path,
                 ff_last_error()[0] ? ff_last_error() : ff_status_name(st));
        free(be);
        dlclose(h);
        return NULL;
    }
    be->vt = vt;
    be->dl_handle = h;
    be->path = dup_str(path);
    be->name = dup_str(vt->name);
    if (!be->path || !be->name) {
        vt->shutdown(be->ctx);
        free(be->path);
        free(be->name);
        free(be);
        dlclose(h);
        return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    }
    ff_log_debug("loaded backend '%s' %s from %s", be->name, vt->version ? vt->version : "", path);
    return be;
}

static ff_backend *find_loaded(const char *name_or_path, bool is_path)
{
    for (int i = 0; i < registry_count; i++) {
        if (is_path ? strcmp(registry[i]->path, name_or_path) == 0 : strcmp(registry[i]->name, name_or_path) == 0)
            return registry[i];
    }
    return NULL;
}

/* Caller holds registry_lock. */
static ff_backend *load_locked(const char *spec)
{
    static const char fn[] = "ff_backend_load";
    if (!spec || !*spec) return ff_error(FF_ERR_INVALID, "%s: empty backend name", fn), NULL;
    bool is_path = looks_like_path(spec);
    char resolved[4096];
    if (is_path) {
        if (!realpath(spec, resolved))
            return ff_error(FF_ERR_BACKEND, "%s: backend file '%s' does not exist", fn, spec), NULL;
    } else {
        ff_backend *be = find_loaded(spec, false);
        if (be) return be;
        find_ctx c = {.file = NULL};
        char file[300];
        snprintf(file, sizeof file, "libff_backend_%s.so", spec);
        c.file = file;
        if (!for_each_search_dir(try_dir, &c))
            return ff_error(FF_ERR_BACKEND, "%s: no backend named '%s': %s not found in [%s] (set FF_BACKEND_PATH)", fn,
                            spec, file, c.tried), NULL;
        if (!realpath(c.found, resolved)) snprintf(resolved, sizeof resolved, "%s", c.found);
    }
    ff_backend *be = find_loaded(resolved, true);
    if (be) return be;
    if (registry_count == FF_MAX_BACKENDS)
        return ff_error(FF_ERR_BACKEND, "%s: too many backends loaded (max %d)", fn, FF_MAX_BACKENDS), NULL;
    be = open_plugin(resolved);
    if (!be) return NULL;
    /* the file name promises a backend: libff_backend_x.so that says it is "other" would
     * load under a name nobody asked for */
    const char *base = strrchr(resolved, '/');
    base = base ? base + 1 : resolved;
    size_t nb = strlen(base), np = sizeof "libff_backend_" - 1;
    if (nb > np + 3 && !strncmp(base, "libff_backend_", np) && !strcmp(base + nb - 3, ".so") &&
        (strlen(be->name) != nb - np - 3 || strncmp(base + np, be->name, nb - np - 3) != 0)) {
        ff_error(FF_ERR_BACKEND, "%s: '%s' provides backend '%s', not '%.*s' as its file name says: name the file "
                 "libff_backend_%s.so (or the backend '%.*s')", fn, resolved, be->name, (int)(nb - np - 3), base + np,
                 be->name, (int)(nb - np - 3), base + np);
        backend_close(be);
        return NULL;
    }
    if (find_loaded(be->name, false)) {
        ff_error(FF_ERR_BACKEND, "%s: '%s' provides backend '%s', which is already loaded from %s", fn, resolved,
                 be->name, find_loaded(be->name, false)->path);
        backend_close(be);
        return NULL;
    }
    registry[registry_count++] = be;
    return be;
}

ff_backend *ff_backend_load(const char *name_or_path)
{
    pthread_mutex_lock(&registry_lock);
    ff_backend *be = load_locked(name_or_path);
    pthread_mutex_unlock(&registry_lock);
    return be;
}

/* Caller holds registry_lock. True if a plugin named name is loaded or on the search path. */
static bool available_locked(const char *name)
{
    if (find_loaded(name, false)) return true;
    char file[300];
    snprintf(file, sizeof file, "libff_backend_%s.so", name);
    find_ctx c = {.file = file};
    return for_each_search_dir(try_dir, &c);
}

/* With FF_BACKEND unset, the fastest backend that was built: cpu_blas when its plugin
 * is there, else the reference cpu (a build with -DFF_BUILD_CPU_BLAS=OFF). Device
 * backends are never picked unasked. A cpu_blas that is there but fails to load is an
 * error, not a silent fall back to cpu. */
static const char *default_spec_locked(void)
{
    const char *env = getenv("FF_BACKEND");
    if (env && *env) return env;
    return available_locked("cpu_blas") ? "cpu_blas" : "cpu";
}

ff_backend *ff_backend_default(void)
{
    pthread_mutex_lock(&registry_lock);
    ff_backend *be = default_backend;
    if (!be) {
        const char *env = getenv("FF_BACKEND");
        const char *spec = default_spec_locked();
        be = load_locked(spec);
        if (be) default_backend = be;
        else {
            char msg[1024], why[300];
            snprintf(msg, sizeof msg, "%s", ff_last_error());
            snprintf(why, sizeof why, "%s", env && *env ? env : spec);
            ff_error(FF_ERR_BACKEND, "default backend (FF_BACKEND=%s%s): %s", why,
                     env && *env ? "" : ", unset: the best one built", msg);
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return be;
}

ff_status ff_backend_set_default(ff_backend *be)
{
    if (!be) return ff_error(FF_ERR_INVALID, "ff_backend_set_default: backend is NULL");
    pthread_mutex_lock(&registry_lock);
    default_backend = be;
    pthread_mutex_unlock(&registry_lock);
    return FF_OK;
}

int ff_backend_count(void)
{
    pthread_mutex_lock(&registry_lock);
    int n = registry_count;
    pthread_mutex_unlock(&registry_lock);
    return n;
}

ff_backend *ff_backend_at(int i)
{
    pthread_mutex_lock(&registry_lock);
    ff_backend *be = i >= 0 && i < registry_count ? registry[i] : NULL;
    pthread_mutex_unlock(&registry_lock);
    return be;
}

void ff_shutdown(void)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = registry_count - 1; i >= 0; i--) {
        backend_close(registry[i]);
    }
    registry_count = 0;
    default_backend = NULL;
    pthread_mutex_unlock(&registry_lock);
}

typedef struct {
    void (*fn)(const char *name, const char *path, void *user);
    void *user;
    int count;
    char seen[64][128];
} discover_ctx;

static bool scan_dir(const char *dir, void *user)
{
    discover_ctx *c = user;
    DIR *d = opendir(dir);
    if (!d) return false;
    static const char prefix[] = "libff_backend_";
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name), p = sizeof prefix - 1;
        if (n <= p + 3 || strncmp(e->d_name, prefix, p) != 0 || strcmp(e->d_name + n - 3, ".so") != 0) continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(n - p - 3), e->d_name + p);
        bool dup = false; /* the first directory on the search path wins, as for loading */
        for (int i = 0; i < c->count && i < 64; i++) dup |= strcmp(c->seen[i], name) == 0;
        if (dup) continue;
        if (c->count < 64) snprintf(c->seen[c->count], sizeof c->seen[0], "%s", name);
        c->count++;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (c->fn) c->fn(name, path, c->user);
    }
    closedir(d);
    return false; /* keep scanning every directory */
}

int ff_backend_discover(void (*fn)(const char *name, const char *path, void *user), void *user)
{
    discover_ctx c = {.fn = fn, .user = user};
    for_each_search_dir(scan_dir, &c);
    return c.count;
}

/* ---- per-backend queries ------------------------------------------------- */
const char *ff_backend_name(const ff_backend *be) { return be ? be->name : NULL; }
const char *ff_backend_version(const ff_backend *be) { return be && be->vt->version ? be->vt->version : ""; }
const char *ff_backend_description(const ff_backend *be) { return be && be->vt->description ? be->vt->description : ""; }
const char *ff_backend_path(const ff_backend *be) { return be ? be->path : NULL; }
uint32_t ff_backend_flags(const ff_backend *be) { return be ? be->vt->flags : 0; }
int ff_backend_abi_version(const ff_backend *be) { return be ? (int)be->vt->abi_version : -1; }

int ff_backend_abi_step(const ff_backend *be)
{
    if (!be) return -1;
    /* a plugin older than the field, or one that left it 0, keeps the rules of its time;
     * one from a newer header keeps ours too, the newest the core knows how to judge */
    const bool has = offsetof(ff_backend_vtable, abi_step) + sizeof be->vt->abi_step <= be->vt->struct_size;
    uint32_t step = has ? be->vt->abi_step : 0;
    if (step == 0) return FF_ABI_STEP_UNSTATED;
    return step > FF_ABI_STEP ? FF_ABI_STEP : (int)step;
}

bool ff_backend_supports(const ff_backend *be, ff_op_kind kind, int op, ff_dtype dtype)
{
    if (!be) return false;
    if (kind == FF_KIND_SOFTMAX && !FF_VT_OPT(be, softmax)) return false;
    if (kind == FF_KIND_CONV2D && !ff_backend_has_conv2d(be)) return false;
    if (kind == FF_KIND_SCAN && !FF_VT_OPT(be, scan)) return false;
    if (kind == FF_KIND_SORT && !FF_VT_OPT(be, argsort)) return false;
    if (kind == FF_KIND_LINALG && !FF_VT_OPT(be, linalg)) return false;
    if (kind == FF_KIND_FFT && !FF_VT_OPT(be, fft)) return false;
    if (kind == FF_KIND_BATCH_NORM && !FF_VT_OPT(be, batch_norm)) return false;
    if (kind == FF_KIND_POOL2D && !FF_VT_OPT(be, pool2d)) return false;
    if (kind == FF_KIND_FUSED && !FF_VT_OPT(be, fused)) return false;
    if (kind == FF_KIND_ATTENTION && !FF_VT_OPT(be, attention)) return false;
    if (kind == FF_KIND_QMATMUL && !FF_VT_OPT(be, qmatmul)) return false;
    if (kind == FF_KIND_LAYER_NORM && !FF_VT_OPT(be, layer_norm)) return false;
    return be->vt->supports(be->ctx, kind, op, dtype) != 0;
}

bool ff_backend_has_softmax(const ff_backend *be) { return be && FF_VT_OPT(be, softmax) != NULL; }

bool ff_backend_has_conv2d(const ff_backend *be)
{
    return be && FF_VT_OPT(be, conv2d) && FF_VT_OPT(be, conv2d_backward_input) && FF_VT_OPT(be, conv2d_backward_weight);
}

ff_status ff_backend_dlpack_device(ff_backend *be, int32_t *device_type, int32_t *device_id)
{
    if (!be || !device_type || !device_id) return ff_error(FF_ERR_INVALID, "ff_backend_dlpack_device: NULL argument");
    if (be->vt->flags & FF_BACKEND_HOST_MEMORY) {
        *device_type = 1, *device_id = 0; /* kDLCPU */
        return FF_OK;
    }
    ff_status (*where)(void *, int32_t *, int32_t *) = FF_VT_OPT(be, dlpack_device);
    if (!where)
        return ff_error(FF_ERR_UNSUPPORTED, "backend '%s' does not keep tensors in host memory and has no DLPack "
                        "device; copy to a host backend first (ff_to)", be->name);
    ff_clear_error();
    ff_status st = where(be->ctx, device_type, device_id);
    if (st) return ff_error(st, "backend '%s' dlpack_device: %s", be->name, ff_last_error()[0] ? ff_last_error() : ff_status_name(st));
    return FF_OK;
}

ff_status ff_backend_device_info(const ff_backend *be, char *buf, size_t cap)
{
    if (!be || !buf || cap == 0) return ff_error(FF_ERR_INVALID, "ff_backend_device_info: NULL backend or buffer");
    ff_status (*info)(void *, char *, size_t) = FF_VT_OPT(be, device_info);
    if (!info) {
        snprintf(buf, cap, "%s", (be->vt->flags & FF_BACKEND_HOST_MEMORY) ? "host memory" : "a device (no description)");
        return FF_OK;
    }
    buf[0] = 0;
    ff_status st = info(be->ctx, buf, cap);
    buf[cap - 1] = 0;
    return st;
}

ff_status ff_backend_sync(ff_backend *be)
{
    if (!be) return ff_error(FF_ERR_INVALID, "ff_backend_sync: backend is NULL");
    ff_clear_error();
    ff_status st = be->vt->sync(be->ctx);
    if (st) {
        ff_error_prefix("ff_backend_sync");
        return ff_error(st, "%s", ff_last_error());
    }
    return FF_OK;
}

ff_status ff_backend_memory_stats(ff_backend *be, size_t *in_use, size_t *cached, size_t *peak)
{
    if (!be) return ff_error(FF_ERR_INVALID, "ff_backend_memory_stats: backend is NULL");
    ff_status (*f)(void *, size_t *, size_t *, size_t *) = FF_VT_OPT(be, memory_stats);
    if (!f) return ff_error(FF_ERR_UNSUPPORTED, "ff_backend_memory_stats: backend '%s' keeps no statistics", be->name);
    return f(be->ctx, in_use, cached, peak);
}

ff_status ff_backend_empty_cache(ff_backend *be)
{
    if (!be) return ff_error(FF_ERR_INVALID, "ff_backend_empty_cache: backend is NULL");
    ff_status (*f)(void *) = FF_VT_OPT(be, empty_cache);
    return f ? f(be->ctx) : FF_OK; /* nothing cached means nothing to return */
}
