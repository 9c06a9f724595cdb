/* ff-embed: sentence embeddings with the pretrained all-MiniLM-L6-v2 on any backend.
 * One line per sentence, the 384 numbers of its L2-normalized embedding; --similarity
 * prints the cosine matrix instead. All sentences go through one batched forward.
 * Exit status: 0 done, 1 failed (no model, a load or compute error), 2 bad usage. */
#define _POSIX_C_SOURCE 200809L /* getline, strdup, clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "minilm.h"

#define PROG "ff-embed"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [--backend NAME] [--dtype f32|bf16|f16|int8] [--model DIR] [--similarity] [--print-model-dir]\n"
            "                [--ids] [--repeat N] [--] SENTENCE...\n"
            "  Embeds each SENTENCE (or, with none, each line of standard input) with all-MiniLM-L6-v2\n"
            "  and prints one line per sentence: 384 numbers, the L2-normalized mean-pooled embedding.\n"
            "  --backend NAME     a backend name or plugin path (default: FF_BACKEND, else cpu_blas)\n"
            "  --dtype T          the encoder's dtype: f32 (default), or bf16 / f16 (weights converted once,\n"
            "                     every op rounds to T as model.half() does; pooling stays in f32), or int8\n"
            "                     (the encoder's Linear weights s8 per channel, activations u8 per call)\n"
            "  --model DIR        the model directory (default: FF_MODEL_DIR, else\n"
            "                     $XDG_CACHE_HOME or ~/.cache, then fusionflow/models/" MINILM_NAME ")\n"
            "  --similarity       print the cosine similarity matrix instead (one row per sentence)\n"
            "  --print-model-dir  print the directory it would load and exit\n"
            "  --ids              print each sentence's token ids instead (tokenizer only)\n"
            "  --repeat N         time N more forwards of the batch and report the median on stderr\n"
            "  --                 ends the options (for a sentence that starts with '-')\n"
            "  The model is fetched once by scripts/fetch-minilm.sh (`make model`), never at run time.\n");
}

typedef struct opts {
    const char *backend, *model;
    int similarity, print_dir, ids, repeat;
    ff_dtype dtype; /* FF_F32 (0) unless --dtype */
    int int8;       /* --dtype int8: an f32 model with quantized Linear layers */
    char **sentences;
    int n;
} opts;

/* Returns 0, 1 for --help, 2 for bad usage (message printed). */
static int parse_args(int argc, char **argv, opts *o)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (!strcmp(a, "--similarity")) o->similarity = 1;
        else if (!strcmp(a, "--print-model-dir")) o->print_dir = 1;
        else if (!strcmp(a, "--ids")) o->ids = 1;
        else if (!strcmp(a, "--backend") || !strcmp(a, "--dtype") || !strcmp(a, "--model") || !strcmp(a, "--repeat")) {
            if (i + 1 >= argc) {
                fprintf(stderr, PROG ": %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--backend")) o->backend = v;
            else if (!strcmp(a, "--model")) o->model = v;
            else if (!strcmp(a, "--repeat")) {
                char *end;
                long r = strtol(v, &end, 10);
                if (*end || end == v || r < 1 || r > 100000) {
                    fprintf(stderr, PROG ": --repeat needs a count from 1 to 100000, got '%s'\n", v);
                    return 2;
                }
                o->repeat = (int)r;
            } else if (!strcmp(v, "int8")) {
                o->dtype = FF_F32, o->int8 = 1;
            } else if (!strcmp(v, "f32") || !strcmp(v, "bf16") || !strcmp(v, "f16")) {
                o->dtype = !strcmp(v, "f32") ? FF_F32 : !strcmp(v, "bf16") ? FF_BF16 : FF_F16;
            } else {
                fprintf(stderr, PROG ": --dtype must be f32, bf16, f16 or int8, got '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, PROG ": unknown option %s (--help lists them)\n", a);
            return 2;
        }
    }
    o->sentences = argv + i;
    o->n = argc - i;
    return 0;
}

/* Every line of f (without its line break) as new strings in *out (the caller frees
 * the *n of them); -1 when f could not be read to its end or memory ran out. */
static int read_lines(FILE *f, char ***out, int *n_out)
{
    char **lines = NULL, *line = NULL;
    size_t cap = 0, len_cap = 0;
    int n = 0;
    ssize_t len;
    while ((len = getline(&line, &len_cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if ((size_t)n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(lines, cap * sizeof *grown);
            if (!grown) break;
            lines = grown;
        }
        if (!(lines[n] = strdup(line))) break;
        n++;
    }
    int failed = !feof(f);
    free(line);
    *out = lines;
    *n_out = n;
    return failed ? -1 : 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints rows x cols floats, one row per line. */
static void print_matrix(const float *v, int64_t rows, int64_t cols, const char *fmt)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            if (c) putchar(' ');
            printf(fmt, (double)v[r * cols + c]);
        }
        putchar('\n');
    }
}

/* The embeddings of the padded batch on the host ([B, H] floats, or B x B cosines with
 * similarity); times `repeat` more forwards. 0 or -1 (ff_last_error()). */
static int run(const minilm_model *m, const opts *o, int64_t B, int64_t T, const int64_t *ids, const int64_t *lens,
               float *out)
{
    ff_tensor *e = minilm_embed(m, B, T, ids, lens), *res = e;
    if (e && o->similarity) {
        ff_tensor *et = ff_mT(e);
        res = et ? ff_matmul(e, et) : NULL;
        ff_tensor_release(et);
    }
    int64_t H = minilm_model_config(m)->hidden, n = o->similarity ? B * B : B * H;
    int rc = res && ff_tensor_to_host(res, out, (size_t)n * sizeof *out) == FF_OK ? 0 : -1;
    if (res != e) ff_tensor_release(res);
    ff_tensor_release(e);
    if (rc || !o->repeat) return rc;

    double *ms = malloc((size_t)o->repeat * sizeof *ms);
    float *scratch = malloc((size_t)(B * H) * sizeof *scratch);
    for (int r = 0; ms && scratch && !rc && r < o->repeat; r++) {
        double t0 = now();
        e = minilm_embed(m, B, T, ids, lens); /* read back, so a device backend has finished */
        rc = e && ff_tensor_to_host(e, scratch, (size_t)(B * H) * sizeof *scratch) == FF_OK ? 0 : -1;
        ff_tensor_release(e);
        ms[r] = 1e3 * (now() - t0);
    }
    if (!ms || !scratch) {
        ff_set_error(FF_ERR_OOM, PROG ": out of memory");
        rc = -1;
    }
    if (!rc) {
        qsort(ms, (size_t)o->repeat, sizeof *ms, cmp_double);
        double med = o->repeat % 2 ? ms[o->repeat / 2] : 0.5 * (ms[o->repeat / 2 - 1] + ms[o->repeat / 2]);
        fprintf(stderr,
                PROG ": batch %lld, %lld tokens: forward median %.3f ms, min %.3f ms over %d runs: %.1f sentences/s\n",
                (long long)B, (long long)T, med, ms[0], o->repeat, 1e3 * (double)B / med);
    }
    free(ms);
    free(scratch);
    return rc;
}

/* The sentences' token ids, padded to the longest: ids [n, *T] and lengths (the caller
 * frees both); with --ids, prints each sentence's ids instead (*ids stays NULL).
 * 0, or -1 with a message printed. */
static int tokenize_all(const opts *o, const char *dir, int max_len, int64_t **ids, int64_t **lens, int64_t *T)
{
    char err[1024];
    minilm_tokenizer *tk = minilm_tokenizer_load(dir, err, sizeof err);
    if (!tk) {
        fprintf(stderr, PROG ": %s\n", err);
        return -1;
    }
    int64_t B = o->n, L = max_len;
    int64_t *all = malloc((size_t)(B * L) * sizeof *all);
    *lens = malloc((size_t)B * sizeof **lens);
    *ids = NULL;
    *T = 2;
    int rc = all && *lens ? 0 : -1;
    for (int64_t b = 0; !rc && b < B; b++) {
        int n = minilm_tokenize(tk, o->sentences[b], all + b * L, max_len);
        if (n < 0) rc = -1;
        else if (((*lens)[b] = n) > *T) *T = n;
    }
    for (int64_t b = 0; !rc && o->ids && b < B; b++)
        for (int64_t t = 0; t < (*lens)[b]; t++)
            printf("%lld%c", (long long)all[b * L + t], t + 1 < (*lens)[b] ? ' ' : '\n');
    if (!rc && !o->ids && !(*ids = malloc((size_t)(B * *T) * sizeof **ids))) rc = -1;
    int64_t pad = minilm_tokenizer_pad_id(tk);
    for (int64_t b = 0; *ids && b < B; b++)
        for (int64_t t = 0; t < *T; t++) (*ids)[b * *T + t] = t < (*lens)[b] ? all[b * L + t] : pad;
    if (rc) fprintf(stderr, PROG ": out of memory\n");
    free(all);
    minilm_tokenizer_free(tk);
    return rc;
}

/* Tokenizes, loads the model, embeds, prints. Returns the exit status. */
static int embed_main(const opts *o, const char *dir)
{
    char err[1024] = "";
    minilm_config cfg;
    if (minilm_config_load(dir, &cfg, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    int64_t *ids = NULL, *lens = NULL, B = o->n, T;
    int failed = tokenize_all(o, dir, cfg.max_seq_len, &ids, &lens, &T);
    if (failed || o->ids) {
        free(ids);
        free(lens);
        return failed ? 1 : 0;
    }
    ff_backend *be = o->backend ? ff_backend_load(o->backend) : ff_backend_default();
    minilm_model *m = be ? minilm_model_load(dir, be, o->dtype, err, sizeof err) : NULL;
    if (m && o->int8 && minilm_model_quantize(m, err, sizeof err)) minilm_model_free(m), m = NULL;
    if (!be) snprintf(err, sizeof err, "%s", ff_last_error());
    float *out = m ? malloc((size_t)(B * (o->similarity ? B : cfg.hidden)) * sizeof *out) : NULL;
    int rc = 1;
    if (!m) fprintf(stderr, PROG ": %s\n", err);
    else if (!out) fprintf(stderr, PROG ": out of memory\n");
    else if (run(m, o, B, T, ids, lens, out)) fprintf(stderr, PROG ": forward failed: %s\n", ff_last_error());
    else {
        print_matrix(out, B, o->similarity ? B : cfg.hidden, o->similarity ? "%.6f" : "%.9g");
        rc = 0;
    }
    free(out);
    free(ids);
    free(lens);
    minilm_model_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    opts o = {0};
    int pa = parse_args(argc, argv, &o);
    if (pa) {
        if (pa == 1) usage(stdout);
        return pa == 1 ? 0 : 2;
    }
    char dir[4096], err[1024];
    if (minilm_model_dir(o.model, dir, sizeof dir, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    if (o.print_dir) {
        printf("%s\n", dir);
        return 0;
    }
    if (minilm_check_dir(dir, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    char **lines = NULL;
    int nlines = 0;
    int rc = 0;
    if (o.n == 0) { /* no sentence arguments: one per line of standard input */
        rc = read_lines(stdin, &lines, &nlines);
        o.sentences = lines;
        o.n = nlines;
    }
    if (rc) fprintf(stderr, PROG ": cannot read standard input\n");
    else if (o.n == 0) fprintf(stderr, PROG ": no sentences (give them as arguments or lines on standard input)\n");
    else rc = embed_main(&o, dir);
    for (int i = 0; i < nlines; i++) free(lines[i]);
    free(lines);
    ff_shutdown();
    return rc ? 1 : o.n == 0 ? 2 : 0;
}
