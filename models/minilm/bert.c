/* The BERT encoder of all-MiniLM-L6-v2 (HF BertModel's eval forward, no pooler) with
 * sentence-transformers' mean pooling and L2 normalization, written on the public ff
 * API only, so every backend runs it:
 *
 *   x   = LayerNorm(word[ids] + token_type[0] + position[0..T))
 *   per layer:
 *     q, k, v = split(x Wqkv^T + bqkv)                  one matmul for the three
 *     a   = softmax(q k^T / sqrt(d_head)) v over the real keys only
 *                                           (ff_scaled_dot_product_attention, a bool mask)
 *     x   = LayerNorm(x + a Wo^T + bo)
 *     x   = LayerNorm(x + GELU(x Wi^T + bi) Wout^T + bout)    GELU with erf
 *   e   = sum over real tokens of x / their count, then e / max(|e|, 1e-12)
 *
 * Weights are the checkpoint's own tensors (safetensors, mmap'd where the backend holds
 * host memory), used through views: W^T is ff_mT(W), never a copy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "minilm.h"

typedef struct layer {
    ff_tensor *qkv_w, *qkv_b; /* [3H, H], [3H]: query, key, value stacked */
    ff_tensor *attn_out_w, *attn_out_b, *ln1_w, *ln1_b;
    ff_tensor *inter_w, *inter_b, *out_w, *out_b, *ln2_w, *ln2_b;
    /* after minilm_model_quantize: qkv, attn_out, inter, out as s8 per channel, and scales */
    ff_tensor *qw[4], *qs[4];
} layer;

struct minilm_model {
    minilm_config cfg;
    ff_backend *be;
    ff_dtype dtype; /* of the weights and the encoder's activations */
    ff_tensor *word, *pos, *type, *ln_w, *ln_b; /* embeddings */
    layer *layer;
};

/* ---- temporaries: a scope releases everything it holds at once -------------------- */
#define SCOPE_MAX 32
typedef struct scope {
    ff_tensor *held[SCOPE_MAX];
    int n, failed;
} scope;

static ff_tensor *keep(scope *s, ff_tensor *t)
{
    if (!t || s->n == SCOPE_MAX) {
        if (t) ff_set_error(FF_ERR_INVALID, "minilm: more than %d temporaries in one scope", SCOPE_MAX);
        ff_tensor_release(t);
        s->failed = 1;
        return NULL;
    }
    return s->held[s->n++] = t;
}
/* Evaluates expr only while nothing has failed, so ops never see a NULL operand and the
 * first error's message is the one ff_last_error() keeps. */
#define K(s, expr) ((s)->failed ? NULL : keep((s), (expr)))

static void scope_end(scope *s)
{
    for (int i = 0; i < s->n; i++) ff_tensor_release(s->held[i]);
    s->n = 0;
}

/* ---- config -------------------------------------------------------------------------- */
/* config.json's sizes: each an integer in [1, INT32_MAX] (the sizes of the tensors built
 * from them are overflow-checked by the ops); -1, absent, fails the consistency check. */
static int read_sizes(const cJSON *j, const char *dir, minilm_config *c, char *err, size_t cap)
{
    const struct {
        const char *key;
        int64_t *out, dflt;
    } sizes[] = {
        {"vocab_size", &c->vocab_size, -1},         {"hidden_size", &c->hidden, -1},
        {"num_hidden_layers", &c->layers, -1},      {"num_attention_heads", &c->heads, -1},
        {"intermediate_size", &c->intermediate, -1}, {"max_position_embeddings", &c->max_positions, -1},
        {"type_vocab_size", &c->type_vocab, 2},
    };
    char file[4200];
    snprintf(file, sizeof file, "%s/config.json", dir);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (minilm_json_int(cJSON_GetObjectItemCaseSensitive(j, sizes[i].key), file, sizes[i].key, sizes[i].dflt, 1,
                            INT32_MAX, sizes[i].out, err, cap))
            return -1;
    return 0;
}

int minilm_config_load(const char *dir, minilm_config *c, char *err, size_t cap)
{
    cJSON *j = minilm_read_json(dir, "config.json", 0, err, cap);
    if (!j) return -1;
    if (read_sizes(j, dir, c, err, cap)) {
        cJSON_Delete(j);
        return -1;
    }
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(j, "layer_norm_eps");
    c->layer_norm_eps = cJSON_IsNumber(eps) ? eps->valuedouble : 1e-12;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "hidden_act");
    const cJSON *posty = cJSON_GetObjectItemCaseSensitive(j, "position_embedding_type");
    int rc = 0;
    if (c->vocab_size < 1 || c->hidden < 1 || c->layers < 1 || c->heads < 1 || c->hidden % c->heads ||
        c->intermediate < 1 || c->max_positions < 2 || c->type_vocab < 1) {
        snprintf(err, cap, "%s/config.json: missing or inconsistent sizes (a BERT config is expected)", dir);
        rc = -1;
    } else if (cJSON_IsString(act) && strcmp(act->valuestring, "gelu")) {
        snprintf(err, cap, "%s/config.json: hidden_act \"%s\" is not supported (only gelu)", dir, act->valuestring);
        rc = -1;
    } else if (cJSON_IsString(posty) && strcmp(posty->valuestring, "absolute")) {
        snprintf(err, cap, "%s/config.json: position_embedding_type \"%s\" is not supported", dir,
                 posty->valuestring);
        rc = -1;
    }
    cJSON_Delete(j);
    if (rc) return rc;

    /* sentence-transformers' own files: the sequence length and the pooling mode */
    int64_t max_seq = 256;
    if ((j = minilm_read_json(dir, "sentence_bert_config.json", 1, err, cap))) {
        char file[4200];
        snprintf(file, sizeof file, "%s/sentence_bert_config.json", dir);
        minilm_json_int(cJSON_GetObjectItemCaseSensitive(j, "max_seq_length"), file, "max_seq_length", 256, 1,
                        INT32_MAX, &max_seq, err, cap);
    }
    cJSON_Delete(j);
    if (err[0]) return -1;
    c->max_seq_len = (int)max_seq;
    if (c->max_seq_len < 2 || c->max_seq_len > c->max_positions) c->max_seq_len = (int)c->max_positions;
    if ((j = minilm_read_json(dir, "1_Pooling/config.json", 1, err, cap))) {
        static const char *const off[] = {"pooling_mode_cls_token", "pooling_mode_max_tokens",
                                          "pooling_mode_mean_sqrt_len_tokens"};
        int mean_only = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "pooling_mode_mean_tokens"));
        for (int i = 0; i < 3; i++) mean_only &= !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, off[i]));
        if (!mean_only) {
            snprintf(err, cap, "%s/1_Pooling/config.json: only mean pooling is supported", dir);
            rc = -1;
        }
    }
    cJSON_Delete(j);
    return err[0] ? -1 : rc;
}

/* ---- weights ------------------------------------------------------------------------- */
/* The f32 tensor prefix+name of d with the given shape, converted to dtype (new
 * reference), or NULL + err. */
static ff_tensor *weight(const ff_tensor_dict *d, const char *prefix, const char *name, int64_t d0, int64_t d1,
                         ff_dtype dtype, char *err, size_t cap)
{
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    if (!ff_tensor_dict_contains(d, full)) {
        snprintf(err, cap, "model.safetensors has no tensor %s", full);
        return NULL;
    }
    ff_tensor *t = ff_tensor_dict_get(d, full);
    int ndim = d1 ? 2 : 1;
    const int64_t *sh = t ? ff_tensor_shape(t) : NULL;
    if (t && ff_tensor_dtype(t) == FF_F32 && ff_tensor_ndim(t) == ndim && sh[0] == d0 && (ndim == 1 || sh[1] == d1)) {
        if (dtype == FF_F32) return t;
        ff_tensor *half = ff_astype(t, dtype);
        ff_tensor_release(t);
        if (!half) snprintf(err, cap, "%s: %s", full, ff_last_error());
        return half;
    }
    char want[64];
    if (d1) snprintf(want, sizeof want, "[%lld, %lld]", (long long)d0, (long long)d1);
    else snprintf(want, sizeof want, "[%lld]", (long long)d0);
    snprintf(err, cap, "model.safetensors: %s is not an f32 tensor of shape %s (config.json's sizes)", full, want);
    ff_tensor_release(t);
    return NULL;
}

/* Query, key and value weights ([3H, H]) or biases ([3H]) of layer i, stacked. */
static ff_tensor *qkv(const ff_tensor_dict *d, const char *prefix, int i, const char *what, int64_t h,
                      ff_dtype dtype, char *err, size_t cap)
{
    static const char *const parts[3] = {"query", "key", "value"};
    ff_tensor *t[3] = {NULL, NULL, NULL}, *out = NULL;
    for (int p = 0; p < 3; p++) {
        char name[128];
        snprintf(name, sizeof name, "encoder.layer.%d.attention.self.%s.%s", i, parts[p], what);
        if (!(t[p] = weight(d, prefix, name, h, strcmp(what, "weight") ? 0 : h, dtype, err, cap))) break;
    }
    if (t[2] && !(out = ff_concat(3, t, 0))) snprintf(err, cap, "%s", ff_last_error());
    for (int p = 0; p < 3; p++) ff_tensor_release(t[p]);
    return out;
}

static int load_layer(const ff_tensor_dict *d, const char *prefix, int i, const minilm_config *c, layer *L,
                      ff_dtype dtype, char *err, size_t cap)
{
    const int64_t h = c->hidden, f = c->intermediate;
    struct { ff_tensor **dst; const char *name; int64_t d0, d1; } w[] = {
        {&L->attn_out_w, "attention.output.dense.weight", h, h}, {&L->attn_out_b, "attention.output.dense.bias", h, 0},
        {&L->ln1_w, "attention.output.LayerNorm.weight", h, 0}, {&L->ln1_b, "attention.output.LayerNorm.bias", h, 0},
        {&L->inter_w, "intermediate.dense.weight", f, h},       {&L->inter_b, "intermediate.dense.bias", f, 0},
        {&L->out_w, "output.dense.weight", h, f},               {&L->out_b, "output.dense.bias", h, 0},
        {&L->ln2_w, "output.LayerNorm.weight", h, 0},           {&L->ln2_b, "output.LayerNorm.bias", h, 0}};
    for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
        char name[128];
        snprintf(name, sizeof name, "encoder.layer.%d.%s", i, w[k].name);
        if (!(*w[k].dst = weight(d, prefix, name, w[k].d0, w[k].d1, dtype, err, cap))) return -1;
    }
    if (!(L->qkv_w = qkv(d, prefix, i, "weight", h, dtype, err, cap))) return -1;
    if (!(L->qkv_b = qkv(d, prefix, i, "bias", h, dtype, err, cap))) return -1;
    return 0;
}

static int load_weights(minilm_model *m, const char *dir, char *err, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ff_tensor_dict *d = ff_safetensors_load_on(m->be, path, FF_IO_MMAP);
    if (!d) {
        snprintf(err, cap, "%s", ff_last_error());
        return -1;
    }
    const minilm_config *c = &m->cfg;
    /* BertModel's own names, or BertFor*'s with "bert." in front */
    const char *prefix = ff_tensor_dict_contains(d, "bert.embeddings.word_embeddings.weight") ? "bert." : "";
    int rc = -1;
    const ff_dtype dt = m->dtype;
    if ((m->word = weight(d, prefix, "embeddings.word_embeddings.weight", c->vocab_size, c->hidden, dt, err, cap)) &&
        (m->pos = weight(d, prefix, "embeddings.position_embeddings.weight", c->max_positions, c->hidden, dt, err,
                         cap)) &&
        (m->type = weight(d, prefix, "embeddings.token_type_embeddings.weight", c->type_vocab, c->hidden, dt, err,
                          cap)) &&
        (m->ln_w = weight(d, prefix, "embeddings.LayerNorm.weight", c->hidden, 0, dt, err, cap)) &&
        (m->ln_b = weight(d, prefix, "embeddings.LayerNorm.bias", c->hidden, 0, dt, err, cap))) {
        rc = 0;
        for (int i = 0; i < c->layers && !rc; i++) rc = load_layer(d, prefix, i, c, &m->layer[i], m->dtype, err, cap);
    }
    ff_tensor_dict_free(d); /* the model holds its own references */
    return rc;
}

minilm_model *minilm_model_load(const char *dir, ff_backend *be, ff_dtype dtype, char *err, size_t cap)
{
    if (dtype != FF_F32 && dtype != FF_BF16 && dtype != FF_F16) {
        snprintf(err, cap, "the model computes in f32, bf16 or f16, not %s", ff_dtype_name(dtype));
        return NULL;
    }
    minilm_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    m->be = be;
    m->dtype = dtype;
    if (minilm_config_load(dir, &m->cfg, err, cap) ||
        !(m->layer = calloc((size_t)m->cfg.layers, sizeof *m->layer)) || load_weights(m, dir, err, cap)) {
        if (!m->layer && !err[0]) snprintf(err, cap, "out of memory");
        minilm_model_free(m);
        return NULL;
    }
    return m;
}

void minilm_model_free(minilm_model *m)
{
    if (!m) return;
    ff_tensor *top[] = {m->word, m->pos, m->type, m->ln_w, m->ln_b};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) ff_tensor_release(top[i]);
    for (int i = 0; m->layer && i < m->cfg.layers; i++) {
        layer *L = &m->layer[i];
        ff_tensor *all[] = {L->qkv_w, L->qkv_b, L->attn_out_w, L->attn_out_b, L->ln1_w, L->ln1_b,
                            L->inter_w, L->inter_b, L->out_w, L->out_b, L->ln2_w, L->ln2_b};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ff_tensor_release(all[k]);
        for (int k = 0; k < 4; k++) ff_tensor_release(L->qw[k]), ff_tensor_release(L->qs[k]);
    }
    free(m->layer);
    free(m);
}

const minilm_config *minilm_model_config(const minilm_model *m) { return &m->cfg; }

int minilm_model_quantize(minilm_model *m, char *err, size_t cap)
{
    if (m->dtype != FF_F32) {
        snprintf(err, cap, "int8 quantizes an f32 model, not a %s one", ff_dtype_name(m->dtype));
        return -1;
    }
    for (int i = 0; i < m->cfg.layers; i++) {
        layer *L = &m->layer[i];
        const ff_tensor *w[4] = {L->qkv_w, L->attn_out_w, L->inter_w, L->out_w};
        for (int k = 0; k < 4; k++)
            if (!L->qw[k] && ff_quantize_weight_s8(w[k], &L->qw[k], &L->qs[k])) {
                snprintf(err, cap, "%s", ff_last_error());
                return -1;
            }
    }
    return 0;
}

/* ---- forward ------------------------------------------------------------------------- */
/* y += b in place, y a temporary the scope holds (no grad: nothing saved it): no fresh
 * tensor to write, and y's lines are still in cache for the next op. y, or NULL with the
 * scope failed. */
static ff_tensor *add_to(scope *s, ff_tensor *y, const ff_tensor *b)
{
    if (s->failed) return NULL;
    if (ff_add_(y, b) != FF_OK) {
        s->failed = 1;
        return NULL;
    }
    return y;
}

/* act(x W^T + b), act an ff_unary_op or FF_LINEAR_NO_ACT: one backend call where the
 * backend has the linear entry (cpu_blas: the bias and GELU ride on oneDNN's product);
 * through the int8 qmatmul when qw is set, the activations quantized per call and per
 * token (one scale per tensor loses short sentences' precision to the batch's outliers:
 * cosine 0.982 against 0.99+ per row), the activation then applied in place. */
static ff_tensor *linear(const ff_tensor *x, const ff_tensor *w, const ff_tensor *b, const ff_tensor *qw,
                         const ff_tensor *qs, int act)
{
    if (!qw) return ff_linear_act(x, w, b, act);
    ff_tensor *y = ff_linear_dynamic_int8_rows(x, qw, qs, b);
    if (y && act != FF_LINEAR_NO_ACT && ff_unary_out((ff_unary_op)act, y, y) != FF_OK) {
        ff_tensor_release(y);
        return NULL;
    }
    return y;
}

/* One encoder layer on x [B*T, H]; keys [B, 1, T, T] (bool: true for a real token's key). */
static ff_tensor *encoder_layer(const minilm_model *m, const layer *L, const ff_tensor *x, const ff_tensor *keys,
                                int64_t B, int64_t T)
{
    const int64_t H = m->cfg.hidden, nh = m->cfg.heads, dh = H / nh;
    const double eps = m->cfg.layer_norm_eps;
    scope s = {0};
    ff_tensor *qkv = K(&s, linear(x, L->qkv_w, L->qkv_b, L->qw[0], L->qs[0], FF_LINEAR_NO_ACT)); /* [B*T, 3H] */
    ff_tensor *qkv5 = K(&s, ff_reshape(qkv, 5, (int64_t[]){B, T, 3, nh, dh}));
    ff_tensor *heads = K(&s, ff_permute(qkv5, (int[]){2, 0, 3, 1, 4})); /* [3, B, nh, T, dh] */
    ff_tensor *q = K(&s, ff_select(heads, 0, 0));
    ff_tensor *k = K(&s, ff_select(heads, 0, 1));
    ff_tensor *v = K(&s, ff_select(heads, 0, 2));
    /* one op: the backend's fused entry keeps the [B, nh, T, T] scores out of memory */
    ff_tensor *ctx = K(&s, ff_scaled_dot_product_attention(q, k, v, keys, 0.0, false, 1.0 / sqrt((double)dh), 0));
    ff_tensor *ctx_t = K(&s, ff_permute(ctx, (int[]){0, 2, 1, 3})); /* [B, T, nh, dh] */
    ff_tensor *ctx2 = K(&s, ff_reshape(ctx_t, 2, (int64_t[]){B * T, H}));
    ff_tensor *attn = K(&s, linear(ctx2, L->attn_out_w, L->attn_out_b, L->qw[1], L->qs[1], FF_LINEAR_NO_ACT));
    ff_tensor *res1 = add_to(&s, attn, x);
    ff_tensor *h1 = K(&s, ff_layer_norm(res1, 1, L->ln1_w, L->ln1_b, eps));
    ff_tensor *act = K(&s, linear(h1, L->inter_w, L->inter_b, L->qw[2], L->qs[2], FF_UNARY_GELU_ERF));
    ff_tensor *out = K(&s, linear(act, L->out_w, L->out_b, L->qw[3], L->qs[3], FF_LINEAR_NO_ACT));
    ff_tensor *res2 = add_to(&s, out, h1);
    ff_tensor *y = s.failed ? NULL : ff_layer_norm(res2, 1, L->ln2_w, L->ln2_b, eps);
    scope_end(&s);
    return y;
}

/* word + token type 0, then + positions (HF's order), layer-normed: [B*T, H]. */
static ff_tensor *embeddings(const minilm_model *m, const ff_tensor *ids, int64_t B, int64_t T)
{
    scope s = {0};
    ff_tensor *word = K(&s, ff_embedding(m->word, ids)); /* [B, T, H] */
    ff_tensor *type0 = K(&s, ff_select(m->type, 0, 0));  /* [H] */
    ff_tensor *pos = K(&s, ff_narrow(m->pos, 0, 0, T));   /* [T, H] */
    ff_tensor *sum1 = add_to(&s, word, type0);
    ff_tensor *sum2 = add_to(&s, sum1, pos);
    ff_tensor *flat = K(&s, ff_reshape(sum2, 2, (int64_t[]){B * T, m->cfg.hidden}));
    ff_tensor *y = s.failed ? NULL : ff_layer_norm(flat, 1, m->ln_w, m->ln_b, m->cfg.layer_norm_eps);
    scope_end(&s);
    return y;
}

/* Mean over the real tokens of x [B*T, H] (mask [B, T, 1] of 1/0), L2-normalized. */
static ff_tensor *pool(const ff_tensor *x, const ff_tensor *mask, int64_t B, int64_t T, int64_t H)
{
    scope s = {0};
    ff_tensor *x3 = K(&s, ff_reshape(x, 3, (int64_t[]){B, T, H}));
    ff_tensor *kept = K(&s, ff_mul(x3, mask));
    ff_tensor *sum = K(&s, ff_sum(kept, 1, (int[]){1}, false));     /* [B, H] */
    ff_tensor *count = K(&s, ff_sum(mask, 1, (int[]){1}, false));   /* [B, 1] */
    ff_tensor *count_ok = K(&s, ff_clip(count, 1e-9, INFINITY));     /* as sentence-transformers */
    ff_tensor *mean = K(&s, ff_div(sum, count_ok));
    ff_tensor *norm = K(&s, ff_norm(mean, 2.0, 1, (int[]){1}, true)); /* [B, 1] */
    ff_tensor *norm_ok = K(&s, ff_clip(norm, 1e-12, INFINITY));      /* as F.normalize */
    ff_tensor *y = s.failed ? NULL : ff_div(mean, norm_ok);
    scope_end(&s);
    return y;
}

ff_tensor *minilm_embed(const minilm_model *m, int64_t B, int64_t T, const int64_t *ids, const int64_t *lens)
{
    if (B < 1 || T < 1 || T > m->cfg.max_positions) {
        ff_set_error(FF_ERR_INVALID, "minilm_embed: batch %lld x %lld tokens (at most %lld tokens)", (long long)B,
                     (long long)T, (long long)m->cfg.max_positions);
        return NULL;
    }
    /* attention's key mask (bool, any dtype: it drops padding keys exactly where HF adds
     * finfo(dtype).min), and pooling's 1/0 weights */
    bool *real = malloc((size_t)(B * T) * sizeof *real);
    float *keep01 = malloc((size_t)(B * T) * sizeof *keep01);
    if (!real || !keep01) {
        free(real);
        free(keep01);
        ff_set_error(FF_ERR_OOM, "minilm_embed: out of memory");
        return NULL;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            keep01[b * T + t] = t < lens[b] ? 1.0f : 0.0f;
            real[b * T + t] = t < lens[b];
        }
    bool grad = ff_set_grad_enabled(false);
    scope s = {0};
    ff_tensor *ids_t = K(&s, ff_from_data_on(m->be, ids, 2, (int64_t[]){B, T}, FF_I64));
    ff_tensor *real_t = K(&s, ff_from_data_on(m->be, real, 4, (int64_t[]){B, 1, 1, T}, FF_BOOL));
    /* [B, 1, T, T] by stride 0 (a view): the scores' query and key dims spelled out */
    ff_tensor *keys = K(&s, ff_expand(real_t, 4, (int64_t[]){B, 1, T, T}));
    ff_tensor *mask = K(&s, ff_from_data_on(m->be, keep01, 3, (int64_t[]){B, T, 1}, FF_F32));
    free(real);
    free(keep01);
    ff_tensor *x = s.failed ? NULL : embeddings(m, ids_t, B, T);
    for (int i = 0; x && i < m->cfg.layers; i++) {
        ff_tensor *next = encoder_layer(m, &m->layer[i], x, keys, B, T);
        ff_tensor_release(x);
        x = next;
    }
    ff_tensor *y = x ? pool(x, mask, B, T, m->cfg.hidden) : NULL;
    ff_tensor_release(x);
    scope_end(&s);
    ff_set_grad_enabled(grad);
    return y;
}
