/* ff_module: a tiny object with a forward callback, user data, and registries of named
 * parameters and children. Built-in layers are made with the same public constructor
 * custom modules use, so there is one code path. */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static ff_module *module_alloc(const char *type_name, void *user, ff_module_destroy_fn destroy, const char *fn)
{
    ff_module *m = calloc(1, sizeof *m);
    char *tn = dup_str(type_name && type_name[0] ? type_name : "Module");
    if (!m || !tn) {
        free(m);
        free(tn);
        if (destroy) destroy(user);
        ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
        return NULL;
    }
    atomic_init(&m->refcount, 1);
    m->type_name = tn;
    m->user = user;
    m->destroy = destroy;
    m->training = true;
    return m;
}

ff_module *ff_module_new(const char *type_name, ff_module_forward_fn forward, void *user, ff_module_destroy_fn destroy)
{
    if (!forward) {
        if (destroy) destroy(user);
        ff_set_error(FF_ERR_INVALID, "ff_module_new: forward callback is NULL");
        return NULL;
    }
    ff_module *m = module_alloc(type_name, user, destroy, "ff_module_new");
    if (m) m->forward = forward;
    return m;
}

ff_module *ff_module_new2(const char *type_name, ff_module_forward2_fn forward2, void *user,
                          ff_module_destroy_fn destroy)
{
    if (!forward2) {
        if (destroy) destroy(user);
        ff_set_error(FF_ERR_INVALID, "ff_module_new2: forward callback is NULL");
        return NULL;
    }
    ff_module *m = module_alloc(type_name, user, destroy, "ff_module_new2");
    if (m) m->forward2 = forward2;
    return m;
}

ff_module *ff_module_retain(ff_module *m)
{
    if (m) atomic_fetch_add(&m->refcount, 1);
    return m;
}

void ff_module_release(ff_module *m)
{
    if (!m || atomic_fetch_sub(&m->refcount, 1) > 1) return;
    for (int i = 0; i < m->n_params; i++) {
        ff_tensor_release(m->params[i]);
        free(m->param_names[i]);
    }
    for (int i = 0; i < m->n_children; i++) {
        ff_module_release(m->children[i]);
        free(m->child_names[i]);
    }
    free(m->params);
    free(m->param_names);
    free(m->children);
    free(m->child_names);
    if (m->destroy) m->destroy(m->user);
    free(m->type_name);
    free(m);
}

const char *ff_module_type_name(const ff_module *m) { return m ? m->type_name : NULL; }

/* ---- registration ------------------------------------------------------------ */
static ff_status check_name(const ff_module *m, const char *name, const char *fn)
{
    if (!m) return ff_set_error(FF_ERR_INVALID, "%s: module is NULL", fn);
    if (!name || !name[0] || strchr(name, '.'))
        return ff_set_error(FF_ERR_INVALID, "%s: name '%s' must be non-empty and contain no '.'", fn, name ? name : "(null)");
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(m->param_names[i], name) == 0)
            return ff_set_error(FF_ERR_INVALID, "%s: '%s' is already a parameter of this %s", fn, name, m->type_name);
    for (int i = 0; i < m->n_children; i++)
        if (strcmp(m->child_names[i], name) == 0)
            return ff_set_error(FF_ERR_INVALID, "%s: '%s' is already a child of this %s", fn, name, m->type_name);
    return FF_OK;
}

/* Grows a (names, items) pair of arrays to hold one more entry. */
static bool grow(int n, int *cap, char ***names, void ***items)
{
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : 4;
    char **nn = realloc(*names, sizeof *nn * (size_t)nc);
    if (!nn) return false;
    *names = nn;
    void **ni = realloc(*items, sizeof *ni * (size_t)nc);
    if (!ni) return false;
    *items = ni;
    *cap = nc;
    return true;
}

ff_status ff_module_register_parameter(ff_module *m, const char *name, ff_tensor *param)
{
    static const char fn[] = "ff_module_register_parameter";
    ff_status st = check_name(m, name, fn);
    if (st) return st;
    if (!param) return ff_set_error(FF_ERR_INVALID, "%s: parameter '%s' is NULL", fn, name);
    if (!ff_is_leaf(param))
        return ff_set_error(FF_ERR_INVALID, "%s: parameter '%s' is not a leaf tensor (made by '%s'); pass ff_detach(t)", fn,
                        name, ff_grad_fn_name(param));
    st = ff_set_requires_grad(param, true);
    if (st) return st;
    char *nm = dup_str(name);
    if (!nm || !grow(m->n_params, &m->cap_params, &m->param_names, (void ***)&m->params)) {
        free(nm);
        return ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
    }
    m->param_names[m->n_params] = nm;
    m->params[m->n_params++] = ff_tensor_retain(param);
    return FF_OK;
}

static bool contains_module(const ff_module *root, const ff_module *m)
{
    if (root == m) return true;
    for (int i = 0; i < root->n_children; i++)
        if (contains_module(root->children[i], m)) return true;
    return false;
}

ff_status ff_module_register_module(ff_module *m, const char *name, ff_module *child)
{
    static const char fn[] = "ff_module_register_module";
    ff_status st = check_name(m, name, fn);
    if (st) return st;
    if (!child) return ff_set_error(FF_ERR_INVALID, "%s: child '%s' is NULL", fn, name);
    if (contains_module(child, m))
        return ff_set_error(FF_ERR_INVALID, "%s: registering '%s' would make a cycle", fn, name);
    char *nm = dup_str(name);
    if (!nm || !grow(m->n_children, &m->cap_children, &m->child_names, (void ***)&m->children)) {
        free(nm);
        return ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
    }
    m->child_names[m->n_children] = nm;
    m->children[m->n_children++] = ff_module_retain(child);
    return FF_OK;
}

/* ---- running ----------------------------------------------------------------- */
ff_tensor *ff_module_forward(ff_module *m, const ff_tensor *x)
{
    if (!m || !x) {
        ff_set_error(FF_ERR_INVALID, "ff_module_forward: %s is NULL", m ? "input" : "module");
        return NULL;
    }
    if (!m->forward) {
        ff_set_error(FF_ERR_INVALID, "ff_module_forward: %s takes two inputs; use ff_loss_forward", m->type_name);
        return NULL;
    }
    return m->forward(m, x, m->user);
}

ff_tensor *ff_loss_forward(ff_module *m, const ff_tensor *pred, const ff_tensor *target)
{
    if (!m || !pred || !target) {
        ff_set_error(FF_ERR_INVALID, "ff_loss_forward: %s is NULL", !m ? "module" : !pred ? "pred" : "target");
        return NULL;
    }
    if (!m->forward2) {
        ff_set_error(FF_ERR_INVALID, "ff_loss_forward: %s takes one input; use ff_module_forward", m->type_name);
        return NULL;
    }
    return m->forward2(m, pred, target, m->user);
}

ff_status ff_module_train(ff_module *m, bool training)
{
    if (!m) return ff_set_error(FF_ERR_INVALID, "ff_module_train: module is NULL");
    m->training = training;
    for (int i = 0; i < m->n_children; i++) ff_module_train(m->children[i], training);
    return FF_OK;
}

bool ff_module_is_training(const ff_module *m) { return m && m->training; }
