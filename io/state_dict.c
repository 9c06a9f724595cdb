/* Module state dicts: the bridge between nn's named parameters and named-tensor files. */
#include <string.h>

#include "io_impl.h"

typedef struct collect {
    ff_tensor_dict *d;
    ff_status st;
} collect;

static void add_param(const char *name, ff_tensor *param, void *user)
{
    collect *c = user;
    if (!c->st) c->st = ff_tensor_dict_set(c->d, name, param);
}

ff_tensor_dict *ff_module_state_dict(const ff_module *m)
{
    if (!m) return ff_error(FF_ERR_INVALID, "ff_module_state_dict: module is NULL"), NULL;
    collect c = {ff_tensor_dict_new(), FF_OK};
    if (!c.d) return NULL;
    if (ff_module_named_parameters(m, add_param, &c) < 0 || c.st) {
        ff_tensor_dict_free(c.d);
        return NULL;
    }
    return c.d;
}

ff_status ff_module_load_state_dict(ff_module *m, const ff_tensor_dict *d, bool strict)
{
    static const char fn[] = "ff_module_load_state_dict";
    if (!m || !d) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn);
    ff_tensor_dict *own = ff_module_state_dict(m);
    if (!own) return ff_last_status();
    ff_status st = FF_OK;
    int n = ff_tensor_dict_count(own), used = 0;
    /* Validate everything first, so a mismatch leaves the module untouched. */
    for (int i = 0; i < n && !st; i++) {
        const char *name = ff_tensor_dict_name(own, i);
        if (!ff_tensor_dict_contains(d, name)) {
            if (strict) st = ff_error(FF_ERR_INVALID, "%s: parameter '%s' is missing from the state dict", fn, name);
            continue;
        }
        ff_tensor *p = ff_tensor_dict_tensor(own, i), *v = ff_tensor_dict_get(d, name);
        char a[96], b[96];
        if (ff_tensor_ndim(p) != ff_tensor_ndim(v) ||
            memcmp(ff_tensor_shape(p), ff_tensor_shape(v), (size_t)ff_tensor_ndim(p) * sizeof(int64_t)) != 0)
            st = ff_error(FF_ERR_INVALID, "%s: '%s' has shape %s in the state dict but %s in the module", fn, name,
                          ff_shape_str(ff_tensor_ndim(v), ff_tensor_shape(v), a, sizeof a),
                          ff_shape_str(ff_tensor_ndim(p), ff_tensor_shape(p), b, sizeof b));
        used++;
        ff_tensor_release(p);
        ff_tensor_release(v);
    }
    if (!st && strict && used != ff_tensor_dict_count(d)) {
        for (int i = 0; i < ff_tensor_dict_count(d); i++)
            if (!ff_tensor_dict_contains(own, ff_tensor_dict_name(d, i))) {
                st = ff_error(FF_ERR_INVALID, "%s: state dict entry '%s' names no parameter of the module", fn,
                              ff_tensor_dict_name(d, i));
                break;
            }
    }
    bool prev = ff_set_grad_enabled(false); /* a load is not part of any graph */
    for (int i = 0; i < n && !st; i++) {
        const char *name = ff_tensor_dict_name(own, i);
        if (!ff_tensor_dict_contains(d, name)) continue;
        ff_tensor *p = ff_tensor_dict_tensor(own, i), *v = ff_tensor_dict_get(d, name);
        st = ff_copy_(p, v);
        if (st) ff_error_prefix(fn);
        ff_tensor_release(p);
        ff_tensor_release(v);
    }
    ff_set_grad_enabled(prev);
    ff_tensor_dict_free(own);
    return st;
}

ff_status ff_module_save_safetensors(const ff_module *m, const char *path)
{
    ff_tensor_dict *d = ff_module_state_dict(m);
    if (!d) return ff_last_status();
    ff_status st = ff_safetensors_save_dict(path, d);
    ff_tensor_dict_free(d);
    return st;
}

ff_status ff_module_load_safetensors(ff_module *m, const char *path, bool strict)
{
    ff_tensor_dict *d = ff_safetensors_load(path, 0);
    if (!d) return ff_last_status();
    ff_status st = ff_module_load_state_dict(m, d, strict);
    ff_tensor_dict_free(d);
    return st;
}
