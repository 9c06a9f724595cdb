/*
 * Deliberately broken backends for the mutation tests. Each mutant is a thin plugin
 * that loads the reference cpu backend, copies its vtable, renames it and replaces
 * one entry with a faulty wrapper. The conformance suite must catch every one and
 * name the broken op (tests: conformance/mutation_test.cmake).
 *
 * The cpu backend is found through FF_MUTANT_BASE (a path), else next to the mutant,
 * else in ../lib relative to the mutant. Every mutant also over-allocates each
 * buffer by 64 bytes, so that its own out-of-bounds writes land in memory it owns:
 * the suite sees them in its sentinel zones, and nothing else is corrupted.
 */
#ifndef FF_MUTANT_H
#define FF_MUTANT_H

#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff/backend_abi.h"

static const ff_backend_vtable *mutant_base;
static ff_backend_vtable mutant_vt;

static void *mutant_alloc(void *ctx, size_t nbytes) { return mutant_base->alloc(ctx, nbytes + 64); }

static const ff_backend_vtable *mutant_load_base(void)
{
    char path[4096];
    const char *env = getenv("FF_MUTANT_BASE");
    void *h = NULL;
    if (env && *env) h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        Dl_info info;
        if (dladdr((void *)&mutant_load_base, &info) && info.dli_fname) {
            snprintf(path, sizeof path, "%s", info.dli_fname);
            char *slash = strrchr(path, '/');
            if (slash) {
                size_t room = sizeof path - (size_t)(slash - path);
                snprintf(slash, room, "/libff_backend_cpu.so");
                h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                    snprintf(slash, room, "/../lib/libff_backend_cpu.so");
                    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                }
            }
        }
    }
    if (!h) return NULL;
    const ff_backend_vtable *(*entry)(void);
    void *sym = dlsym(h, FF_BACKEND_ENTRY_SYMBOL);
    if (!sym) return NULL;
    memcpy(&entry, &sym, sizeof entry);
    return entry();
}

/* Fills mutant_vt from the base under a new name; NULL if the base is missing. */
static const ff_backend_vtable *mutant_setup(const char *name, const char *what)
{
    if (!mutant_base) {
        mutant_base = mutant_load_base();
        if (!mutant_base) return NULL;
        mutant_vt = *mutant_base;
        mutant_vt.name = name;
        mutant_vt.description = what;
        mutant_vt.alloc = mutant_alloc;
    }
    return &mutant_vt;
}

/* Calls fn(element offset) for every element of a view, row-major. */
#define MUTANT_FOR_EACH(v, OFF, body)                                             \
    do {                                                                         \
        int64_t idx_[FF_MAX_DIMS] = {0}, n_ = ff_view_numel(v), OFF = (v)->offset; \
        for (int64_t k_ = 0; k_ < n_; k_++) {                                    \
            body;                                                                \
            for (int d_ = (v)->ndim - 1; d_ >= 0; d_--) {                        \
                if (++idx_[d_] < (v)->shape[d_]) {                               \
                    OFF += (v)->strides[d_];                                     \
                    break;                                                       \
                }                                                                \
                idx_[d_] = 0;                                                    \
                OFF -= (v)->strides[d_] * ((v)->shape[d_] - 1);                  \
            }                                                                    \
        }                                                                        \
    } while (0)

#define MUTANT_ENTRY(name, what, field, fn)                                       \
    FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);            \
    FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void)             \
    {                                                                            \
        const ff_backend_vtable *vt = mutant_setup(name, what);                  \
        if (vt) mutant_vt.field = fn;                                            \
        return vt;                                                               \
    }

#endif /* FF_MUTANT_H */
