/* ff_tensor_dict: an ordered list of named tensors plus string metadata. Lookups by
 * name are linear: state dicts have hundreds of entries, not millions. A file's header
 * may hold millions all the same, so the loader appends without lookups
 * (ff_io_dict_append*, after its own n log n duplicate check), and meta_pack hands all
 * the metadata over in one call. */
#define _XOPEN_SOURCE 700 /* strdup */
#include <stdlib.h>
#include <string.h>

#include "io_impl.h"

struct ff_tensor_dict {
    int n, cap;
    char **names;
    ff_tensor **tensors;
    int nmeta, capmeta;
    char **keys, **values;
};

ff_tensor_dict *ff_tensor_dict_new(void)
{
    ff_tensor_dict *d = calloc(1, sizeof *d);
    if (!d) ff_error(FF_ERR_OOM, "ff_tensor_dict_new: out of memory");
    return d;
}

void ff_tensor_dict_free(ff_tensor_dict *d)
{
    if (!d) return;
    for (int i = 0; i < d->n; i++) {
        free(d->names[i]);
        ff_tensor_release(d->tensors[i]);
    }
    for (int i = 0; i < d->nmeta; i++) {
        free(d->keys[i]);
        free(d->values[i]);
    }
    free(d->names);
    free(d->tensors);
    free(d->keys);
    free(d->values);
    free(d);
}

static int find(char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

/* Grows two parallel arrays to hold one more entry. */
static bool grow(int n, int *cap, void ***a, void ***b)
{
    if (n < *cap) return true;
    int nc = *cap ? 2 * *cap : 8;
    void **na = realloc(*a, (size_t)nc * sizeof *na);
    if (!na) return false;
    *a = na;
    void **nb = realloc(*b, (size_t)nc * sizeof *nb);
    if (!nb) return false;
    *b = nb;
    *cap = nc;
    return true;
}

ff_status ff_io_dict_append(ff_tensor_dict *d, const char *name, ff_tensor *t)
{
    char *copy = strdup(name);
    if (!copy || !grow(d->n, &d->cap, (void ***)&d->names, (void ***)&d->tensors)) {
        free(copy);
        ff_tensor_release(t);
        return ff_error(FF_ERR_OOM, "ff_tensor_dict: out of memory");
    }
    d->names[d->n] = copy;
    d->tensors[d->n++] = t;
    return FF_OK;
}

ff_status ff_io_dict_append_meta(ff_tensor_dict *d, const char *key, const char *value)
{
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v || !grow(d->nmeta, &d->capmeta, (void ***)&d->keys, (void ***)&d->values)) {
        free(k);
        free(v);
        return ff_error(FF_ERR_OOM, "ff_tensor_dict: out of memory");
    }
    d->keys[d->nmeta] = k;
    d->values[d->nmeta++] = v;
    return FF_OK;
}

ff_status ff_tensor_dict_set(ff_tensor_dict *d, const char *name, ff_tensor *t)
{
    if (!d || !name || !t) return ff_error(FF_ERR_INVALID, "ff_tensor_dict_set: NULL argument");
    int i = find(d->names, d->n, name);
    if (i >= 0) {
        ff_tensor_retain(t);
        ff_tensor_release(d->tensors[i]);
        d->tensors[i] = t;
        return FF_OK;
    }
    return ff_io_dict_append(d, name, ff_tensor_retain(t));
}

int ff_tensor_dict_count(const ff_tensor_dict *d) { return d ? d->n : 0; }

const char *ff_tensor_dict_name(const ff_tensor_dict *d, int i)
{
    if (!d || i < 0 || i >= d->n)
        return ff_error(FF_ERR_INDEX, "ff_tensor_dict_name: index %d out of range [0, %d)", i, d ? d->n : 0), NULL;
    return d->names[i];
}

ff_tensor *ff_tensor_dict_tensor(const ff_tensor_dict *d, int i)
{
    if (!d || i < 0 || i >= d->n)
        return ff_error(FF_ERR_INDEX, "ff_tensor_dict_tensor: index %d out of range [0, %d)", i, d ? d->n : 0), NULL;
    return ff_tensor_retain(d->tensors[i]);
}

ff_tensor *ff_tensor_dict_get(const ff_tensor_dict *d, const char *name)
{
    if (!d || !name) return ff_error(FF_ERR_INVALID, "ff_tensor_dict_get: NULL argument"), NULL;
    int i = find(d->names, d->n, name);
    if (i < 0) return ff_error(FF_ERR_INDEX, "ff_tensor_dict_get: no tensor named '%s'", name), NULL;
    return ff_tensor_retain(d->tensors[i]);
}

bool ff_tensor_dict_contains(const ff_tensor_dict *d, const char *name)
{
    return d && name && find(d->names, d->n, name) >= 0;
}

ff_status ff_tensor_dict_set_meta(ff_tensor_dict *d, const char *key, const char *value)
{
    if (!d || !key || !value) return ff_error(FF_ERR_INVALID, "ff_tensor_dict_set_meta: NULL argument");
    char *v = strdup(value);
    if (!v) return ff_error(FF_ERR_OOM, "ff_tensor_dict_set_meta: out of memory");
    int i = find(d->keys, d->nmeta, key);
    if (i >= 0) {
        free(d->values[i]);
        d->values[i] = v;
        return FF_OK;
    }
    char *k = strdup(key);
    if (!k || !grow(d->nmeta, &d->capmeta, (void ***)&d->keys, (void ***)&d->values)) {
        free(k);
        free(v);
        return ff_error(FF_ERR_OOM, "ff_tensor_dict_set_meta: out of memory");
    }
    d->keys[d->nmeta] = k;
    d->values[d->nmeta++] = v;
    return FF_OK;
}

int ff_tensor_dict_meta_count(const ff_tensor_dict *d) { return d ? d->nmeta : 0; }

const char *ff_tensor_dict_meta_key(const ff_tensor_dict *d, int i)
{
    return d && i >= 0 && i < d->nmeta ? d->keys[i] : NULL;
}

const char *ff_tensor_dict_meta_value(const ff_tensor_dict *d, int i)
{
    return d && i >= 0 && i < d->nmeta ? d->values[i] : NULL;
}

const char *ff_tensor_dict_meta_get(const ff_tensor_dict *d, const char *key)
{
    int i = d && key ? find(d->keys, d->nmeta, key) : -1;
    return i >= 0 ? d->values[i] : NULL;
}

size_t ff_tensor_dict_meta_pack(const ff_tensor_dict *d, char *buf, size_t cap)
{
    size_t need = 0;
    for (int i = 0; d && i < d->nmeta; i++) {
        size_t nk = strlen(d->keys[i]) + 1, nv = strlen(d->values[i]) + 1;
        if (buf && need + nk + nv <= cap) {
            memcpy(buf + need, d->keys[i], nk);
            memcpy(buf + need + nk, d->values[i], nv);
        }
        need += nk + nv;
    }
    return need;
}
