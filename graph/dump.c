/* Graphviz dot of a planned graph: one box per launch (op, output shape and dtype),
 * fused groups as clusters of their member ops, and the buffers as ellipses labelled
 * with their role, size and arena slot. Edges follow the views: buffer -> op for reads,
 * op -> buffer for writes. After the first replay on a backend that records (record.c),
 * each launch also says which recorded device run it is in, or that it is host-driven
 * (those boxes grey). */
#include <stdio.h>
#include <string.h>

#include "ff_backend_scalar.h" /* the op names */
#include "graph_impl.h"

static const char *role_name(int r)
{
    static const char *const n[] = {"input", "temp", "output", "intermediate", "constant", "unused"};
    return r >= 0 && r <= GB_UNUSED ? n[r] : "?";
}

static void op_label(FILE *f, const ff_graph *g, const gnode *n)
{
    char sh[160];
    const char *op = n->kind == FF_KIND_UNARY    ? ffb_unary_name(n->op)
                     : n->kind == FF_KIND_BINARY ? ffb_binary_name(n->op)
                     : n->kind == FF_KIND_REDUCE ? ffb_reduce_name(n->op)
                                                 : NULL;
    fprintf(f, "%s", op ? op : ff_graph_kind_name(n->kind));
    if (n->nv) {
        const ff_view *v = &g->views[n->v0];
        fprintf(f, "\\n%s %s", ff_dtype_name(v->dtype), ff_shape_str(v->ndim, v->shape, sh, sizeof sh));
    }
}

/* " run r" for a launch in recorded run r, " host" for a host-driven one, "" before the
 * runs are built. */
static const char *run_tag(const ff_graph *g, int launch, char *buf, size_t cap)
{
    buf[0] = 0;
    for (int r = 0, dev = 0; g->runs_built && r < g->n_runs; r++) {
        const grun *u = &g->runs[r];
        if (launch >= u->first && launch < u->first + u->n) {
            if (u->handle) snprintf(buf, cap, "\\n[device run %d]", dev);
            else snprintf(buf, cap, "\\n[host]");
            break;
        }
        dev += u->handle != NULL;
    }
    return buf;
}

static void edges(FILE *f, const ff_graph *g, const gnode *n, const char *id)
{
    for (int i = 0; i < n->nv; i++) {
        int b = g->vbuf[n->v0 + i];
        if (g->bufs[b].fused_temp) continue;
        if (i < n->n_dst) fprintf(f, "  %s -> b%d;\n", id, b);
        else fprintf(f, "  b%d -> %s;\n", b, id);
    }
}

ff_status ff_graph_dump(const ff_graph *g, const char *path)
{
    static const char fn[] = "ff_graph_dump";
    if (!g || !path) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn);
    FILE *f = fopen(path, "w");
    if (!f) return ff_error(FF_ERR_IO, "%s: cannot open '%s' for writing", fn, path);
    fprintf(f, "digraph ff_graph {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n");
    fprintf(f, "  label=\"%lld launches (%lld kernels captured, %lld fused groups, %lld constants); arena %zu B, "
               "eager peak %zu B, planned peak %zu B\";\n",
            (long long)g->info.launches, (long long)g->info.kernels_captured, (long long)g->info.fused_groups,
            (long long)g->info.constants_hoisted, g->info.arena_bytes, g->info.eager_peak_bytes,
            g->info.planned_peak_bytes);
    for (int b = 0; b < g->n_bufs; b++) {
        const gbuf *x = &g->bufs[b];
        if (x->role == GB_UNUSED || x->fused_temp || !x->refs) continue;
        fprintf(f, "  b%d [shape=ellipse, style=filled, fillcolor=\"%s\", label=\"%s\\n%zu B", b,
                x->role == GB_INPUT ? "#cfe2ff" : x->role == GB_OUTPUT ? "#d1e7dd" : x->role == GB_CONST ? "#eeeeee" : "#fff3cd",
                role_name(x->role), x->nbytes);
        if (x->role == GB_DEAD && g->arena) fprintf(f, "\\narena @%zu%s", x->arena_off, x->in_place ? " (in place)" : "");
        fprintf(f, "\"];\n");
    }
    for (int i = 0; i < g->n_launch; i++) {
        const gnode *n = &g->launch[i];
        char id[32];
        if (n->kind == GN_FUSED) {
            const gfused *fu = &g->groups[n->group];
            char tag[48];
            fprintf(f, "  subgraph cluster_%d {\n    label=\"fused #%d (%s)%s\"; style=rounded; color=\"#d63384\";\n", i,
                    n->group, fu->by_backend ? "backend entry" : "tiles", run_tag(g, i, tag, sizeof tag));
            for (int k = 0; k < fu->n_members; k++) {
                fprintf(f, "    l%d_%d [shape=box, label=\"", i, k);
                op_label(f, g, &g->nodes[fu->members[k]]);
                fprintf(f, "\"];\n");
                if (k) fprintf(f, "    l%d_%d -> l%d_%d [style=dotted];\n", i, k - 1, i, k);
            }
            fprintf(f, "  }\n");
            for (int k = 0; k < fu->n_members; k++) {
                snprintf(id, sizeof id, "l%d_%d", i, k);
                edges(f, g, &g->nodes[fu->members[k]], id);
            }
            continue;
        }
        snprintf(id, sizeof id, "l%d", i);
        char tag[48];
        run_tag(g, i, tag, sizeof tag);
        fprintf(f, "  %s [shape=box%s, label=\"#%d ", id, strstr(tag, "host") ? ", style=filled, fillcolor=\"#dddddd\"" : "", i);
        op_label(f, g, n);
        fprintf(f, "%s\"];\n", tag);
        edges(f, g, n, id);
    }
    fprintf(f, "}\n");
    if (fclose(f)) return ff_error(FF_ERR_IO, "%s: error writing '%s'", fn, path);
    return FF_OK;
}
