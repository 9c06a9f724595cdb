/* Walking a module tree's parameters: listing (deduplicated, dotted names), lookup,
 * zero_grad and moving to another backend. */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

#define NAME_MAX_LEN 1024

typedef struct walk_ctx {
    ff_tensor **seen; /* every tensor reported so far (tied weights appear once) */
    int n, cap;
    ff_named_tensor_fn fn;
    void *user;
    ff_tensor **out;
    int max;
    ff_status st;
    const char *api;
} walk_ctx;

static bool seen_add(walk_ctx *c, ff_tensor *t)
{
    for (int i = 0; i < c->n; i++)
        if (c->seen[i] == t) return false;
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 32;
        ff_tensor **ns = realloc(c->seen, sizeof *ns * (size_t)nc);
        if (!ns) {
            c->st = ff_set_error(FF_ERR_OOM, "%s: out of memory", c->api);
            return false;
        }
        c->seen = ns;
        c->cap = nc;
    }
    c->seen[c->n++] = t;
    return true;
}

/* Depth first: own parameters, then each child under "<child>.". name holds the prefix
 * (len chars) and is extended in place. */
static void walk(const ff_module *m, char *name, size_t len, walk_ctx *c)
{
    for (int i = 0; i < m->n_params && !c->st; i++) {
        size_t k = strlen(m->param_names[i]);
        if (len + k + 1 > NAME_MAX_LEN) {
            c->st = ff_set_error(FF_ERR_INVALID, "%s: parameter name longer than %d characters", c->api, NAME_MAX_LEN - 1);
            return;
        }
        memcpy(name + len, m->param_names[i], k + 1);
        int idx = c->n;
        if (!seen_add(c, m->params[i])) continue;
        if (c->out && idx < c->max) c->out[idx] = m->params[i];
        if (c->fn) c->fn(name, m->params[i], c->user);
    }
    for (int i = 0; i < m->n_children && !c->st; i++) {
        size_t k = strlen(m->child_names[i]);
        if (len + k + 2 > NAME_MAX_LEN) {
            c->st = ff_set_error(FF_ERR_INVALID, "%s: module name longer than %d characters", c->api, NAME_MAX_LEN - 1);
            return;
        }
        memcpy(name + len, m->child_names[i], k);
        name[len + k] = '.';
        name[len + k + 1] = '\0';
        walk(m->children[i], name, len + k + 1, c);
    }
    name[len] = '\0';
}

/* Runs the walk; returns the number of distinct parameters or -1. */
static int run_walk(const ff_module *m, walk_ctx *c)
{
    if (!m) {
        ff_set_error(FF_ERR_INVALID, "%s: module is NULL", c->api);
        return -1;
    }
    char name[NAME_MAX_LEN] = "";
    walk(m, name, 0, c);
    free(c->seen);
    return c->st ? -1 : c->n;
}

int ff_module_parameters(const ff_module *m, ff_tensor **out, int max)
{
    walk_ctx c = {.out = out, .max = max < 0 ? 0 : max, .api = "ff_module_parameters"};
    return run_walk(m, &c);
}

int ff_module_named_parameters(const ff_module *m, ff_named_tensor_fn fn, void *user)
{
    walk_ctx c = {.fn = fn, .user = user, .api = "ff_module_named_parameters"};
    return run_walk(m, &c);
}

int64_t ff_module_num_parameters(const ff_module *m)
{
    int n = ff_module_parameters(m, NULL, 0);
    if (n <= 0) return n;
    ff_tensor **ps = malloc(sizeof *ps * (size_t)n);
    if (!ps) return ff_set_error(FF_ERR_OOM, "ff_module_num_parameters: out of memory"), -1;
    ff_module_parameters(m, ps, n);
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += ff_tensor_numel(ps[i]);
    free(ps);
    return total;
}

ff_tensor *ff_module_get_parameter(const ff_module *m, const char *dotted_name)
{
    static const char fn[] = "ff_module_get_parameter";
    if (!m || !dotted_name) {
        ff_set_error(FF_ERR_INVALID, "%s: %s is NULL", fn, m ? "name" : "module");
        return NULL;
    }
    const ff_module *cur = m;
    const char *p = dotted_name;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t k = dot ? (size_t)(dot - p) : strlen(p);
        if (!dot) {
            for (int i = 0; i < cur->n_params; i++)
                if (strlen(cur->param_names[i]) == k && memcmp(cur->param_names[i], p, k) == 0)
                    return ff_tensor_retain(cur->params[i]);
            break;
        }
        const ff_module *next = NULL;
        for (int i = 0; i < cur->n_children && !next; i++)
            if (strlen(cur->child_names[i]) == k && memcmp(cur->child_names[i], p, k) == 0) next = cur->children[i];
        if (!next) break;
        cur = next;
        p = dot + 1;
    }
    ff_set_error(FF_ERR_INVALID, "%s: %s has no parameter '%s'", fn, m->type_name, dotted_name);
    return NULL;
}

ff_status ff_module_zero_grad(ff_module *m)
{
    if (!m) return ff_set_error(FF_ERR_INVALID, "ff_module_zero_grad: module is NULL");
    for (int i = 0; i < m->n_params; i++) ff_zero_grad(m->params[i]);
    for (int i = 0; i < m->n_children; i++) ff_module_zero_grad(m->children[i]);
    return FF_OK;
}

/* ---- moving ---------------------------------------------------------------------- */
/* Replaces every occurrence of old[i] by moved[i] in the tree (keeps ties tied). */
static void replace_params(ff_module *m, int n, ff_tensor *const *old, ff_tensor *const *moved)
{
    for (int i = 0; i < m->n_params; i++)
        for (int j = 0; j < n; j++)
            if (m->params[i] == old[j]) {
                ff_tensor_release(m->params[i]);
                m->params[i] = ff_tensor_retain(moved[j]);
                break;
            }
    for (int i = 0; i < m->n_children; i++) replace_params(m->children[i], n, old, moved);
}

/* A new leaf on be with p's values (and grad), requiring grad. */
static ff_tensor *move_one(ff_tensor *p, ff_backend *be)
{
    ff_tensor *q = ff_to(p, be);
    if (!q) return NULL;
    if (q == p) { /* already there */
        return q;
    }
    ff_tensor *g = ff_grad(p), *gq = NULL;
    if (g) {
        gq = ff_to(g, be);
        ff_tensor_release(g);
        if (!gq) {
            ff_tensor_release(q);
            return NULL;
        }
    }
    ff_status st = ff_set_requires_grad(q, true);
    if (!st && gq) st = ff_set_grad(q, gq);
    ff_tensor_release(gq);
    if (st) {
        ff_tensor_release(q);
        return NULL;
    }
    return q;
}

ff_status ff_module_to(ff_module *m, ff_backend *be)
{
    static const char fn[] = "ff_module_to";
    if (!m || !be) return ff_set_error(FF_ERR_INVALID, "%s: %s is NULL", fn, m ? "backend" : "module");
    int n = ff_module_parameters(m, NULL, 0);
    if (n <= 0) return n < 0 ? ff_nn_failed() : FF_OK;
    ff_tensor **old = malloc(sizeof *old * (size_t)n), **moved = calloc((size_t)n, sizeof *moved);
    ff_status st = FF_OK;
    if (!old || !moved) st = ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
    bool prev = ff_set_grad_enabled(false); /* the copy must be a fresh leaf, not a node */
    if (!st) {
        ff_module_parameters(m, old, n);
        for (int i = 0; i < n && !st; i++)
            if (!(moved[i] = move_one(old[i], be))) st = ff_last_status() ? ff_last_status() : FF_ERR_BACKEND;
    }
    ff_set_grad_enabled(prev);
    /* all or nothing: the tree changes only if every parameter moved */
    if (!st) replace_params(m, n, old, moved);
    for (int i = 0; moved && i < n; i++) ff_tensor_release(moved[i]);
    free(old);
    free(moved);
    return st;
}
