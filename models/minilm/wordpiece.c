/* The WordPiece tokenizer of tokenizer.json (HF tokenizers' BertNormalizer,
 * BertPreTokenizer, WordPiece, and the [CLS] A [SEP] template):
 *
 *   normalize (bert_text.c) -> split on whitespace and around each punctuation character
 *   -> per word: [UNK] if longer than max_input_chars_per_word, else greedy longest-match
 *   pieces from the vocab, continuations prefixed "##"; a word with any unmatched rest is
 *   one [UNK] -> [CLS] pieces [SEP], truncated to max_len.
 *
 * Not done: added tokens written in the text ("[MASK]" typed by the user is split as
 * punctuation and letters, not matched whole), sentence pairs. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "minilm.h"

#define VOCAB_BITS 16 /* 65536 slots for BERT's 30522 pieces: load factor < 0.5 */

struct minilm_tokenizer {
    char **keys; /* open addressing, NULL = empty */
    int32_t *vals;
    size_t mask;
    int64_t unk, cls, sep, pad;
    char prefix[16];
    int max_word_chars;
    minilm_norm_opts norm;
};

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The id of the n bytes at s, or -1. */
static int64_t lookup(const minilm_tokenizer *tk, const char *s, size_t n)
{
    for (size_t i = hash(s, n) & tk->mask;; i = (i + 1) & tk->mask) {
        const char *k = tk->keys[i];
        if (!k) return -1;
        if (strlen(k) == n && !memcmp(k, s, n)) return tk->vals[i];
    }
}

static int insert(minilm_tokenizer *tk, const char *key, int32_t id)
{
    size_t n = strlen(key), i = hash(key, n) & tk->mask;
    while (tk->keys[i]) {
        if (!strcmp(tk->keys[i], key)) return 0; /* first id wins, as a JSON object has one */
        i = (i + 1) & tk->mask;
    }
    if (!(tk->keys[i] = strdup(key))) return -1;
    tk->vals[i] = id;
    return 0;
}

void minilm_tokenizer_free(minilm_tokenizer *tk)
{
    if (!tk) return;
    if (tk->keys)
        for (size_t i = 0; i <= tk->mask; i++) free(tk->keys[i]);
    free(tk->keys);
    free(tk->vals);
    free(tk);
}

/* A normalizer flag: true/false, or null for "as lowercase" (strip_accents). */
static int flag(const cJSON *norm, const char *name, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(norm, name);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

/* Reads the model and normalizer parts of the parsed tokenizer.json into tk. */
static int configure(minilm_tokenizer *tk, const cJSON *root, char *err, size_t cap)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "WordPiece") || !cJSON_IsObject(vocab)) {
        snprintf(err, cap, "tokenizer.json: expected a WordPiece model with a vocab object");
        return -1;
    }
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    const cJSON *ntype = cJSON_GetObjectItemCaseSensitive(norm, "type");
    if (cJSON_IsObject(norm) && !(cJSON_IsString(ntype) && !strcmp(ntype->valuestring, "BertNormalizer"))) {
        snprintf(err, cap, "tokenizer.json: only the BertNormalizer is supported");
        return -1;
    }
    tk->norm.clean_text = flag(norm, "clean_text", 1);
    tk->norm.handle_chinese_chars = flag(norm, "handle_chinese_chars", 1);
    tk->norm.lowercase = flag(norm, "lowercase", 1);
    tk->norm.strip_accents = flag(norm, "strip_accents", tk->norm.lowercase);
    const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix");
    snprintf(tk->prefix, sizeof tk->prefix, "%s", cJSON_IsString(prefix) ? prefix->valuestring : "##");
    int64_t maxc;
    if (minilm_json_int(cJSON_GetObjectItemCaseSensitive(model, "max_input_chars_per_word"), "tokenizer.json",
                        "model.max_input_chars_per_word", 100, 1, INT32_MAX, &maxc, err, cap))
        return -1;
    tk->max_word_chars = (int)maxc;

    tk->mask = ((size_t)1 << VOCAB_BITS) - 1;
    if ((size_t)cJSON_GetArraySize(vocab) > tk->mask / 2) {
        snprintf(err, cap, "tokenizer.json: vocab of %d pieces is larger than this tokenizer takes (%zu)",
                 cJSON_GetArraySize(vocab), tk->mask / 2);
        return -1;
    }
    tk->keys = calloc(tk->mask + 1, sizeof *tk->keys);
    tk->vals = calloc(tk->mask + 1, sizeof *tk->vals);
    if (!tk->keys || !tk->vals) goto oom;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab)
    {
        int64_t id;
        char key[96];
        snprintf(key, sizeof key, "model.vocab[\"%.80s\"]", e->string);
        if (minilm_json_int(e, "tokenizer.json", key, -1, 0, INT32_MAX, &id, err, cap)) return -1;
        if (id < 0) {
            snprintf(err, cap, "tokenizer.json: vocab entry \"%s\" has no id (null)", e->string);
            return -1;
        }
        if (insert(tk, e->string, (int32_t)id)) goto oom;
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    const char *names[4] = {cJSON_IsString(unk) ? unk->valuestring : "[UNK]", "[CLS]", "[SEP]", "[PAD]"};
    int64_t *ids[4] = {&tk->unk, &tk->cls, &tk->sep, &tk->pad};
    for (int i = 0; i < 4; i++)
        if ((*ids[i] = lookup(tk, names[i], strlen(names[i]))) < 0) {
            snprintf(err, cap, "tokenizer.json: the vocab has no %s", names[i]);
            return -1;
        }
    return 0;
oom:
    snprintf(err, cap, "tokenizer.json: out of memory");
    return -1;
}

minilm_tokenizer *minilm_tokenizer_load(const char *dir, char *err, size_t cap)
{
    cJSON *root = minilm_read_json(dir, "tokenizer.json", 0, err, cap);
    if (!root) return NULL;
    minilm_tokenizer *tk = calloc(1, sizeof *tk);
    if (!tk) snprintf(err, cap, "out of memory");
    if (tk && configure(tk, root, err, cap)) {
        minilm_tokenizer_free(tk);
        tk = NULL;
    }
    cJSON_Delete(root);
    return tk;
}

int64_t minilm_tokenizer_pad_id(const minilm_tokenizer *tk) { return tk->pad; }

/* Appends the pieces of word w[0..n) to ids (count *k, capacity cap). Scratch: text and
 * piece hold a word's UTF-8 (piece behind the prefix), off its n + 1 character offsets. */
static void wordpiece(const minilm_tokenizer *tk, const uint32_t *w, size_t n, int64_t *ids, int *k, int cap,
                      char *text, char *piece, size_t *off)
{
    if (n > (size_t)tk->max_word_chars) {
        if (*k < cap) ids[(*k)++] = tk->unk;
        return;
    }
    off[0] = 0; /* text[off[i]..off[j]) is the UTF-8 of w[i..j) */
    for (size_t i = 0; i < n; i++) off[i + 1] = off[i] + (size_t)minilm_utf8_encode(w[i], text + off[i]);
    size_t plen = strlen(tk->prefix);
    int first = *k;
    for (size_t start = 0; start < n;) {
        int64_t id = -1;
        size_t end = n;
        while (end > start) { /* the longest piece in the vocab */
            size_t p = start > 0 ? plen : 0, len = off[end] - off[start];
            memcpy(piece, tk->prefix, p);
            memcpy(piece + p, text + off[start], len);
            if ((id = lookup(tk, piece, p + len)) >= 0) break;
            end--;
        }
        if (id < 0) { /* no piece fits: the whole word is unknown */
            *k = first;
            if (*k < cap) ids[(*k)++] = tk->unk;
            return;
        }
        if (*k < cap) ids[(*k)++] = id;
        start = end;
    }
}

int minilm_tokenize(const minilm_tokenizer *tk, const char *utf8, int64_t *ids, int max_len)
{
    size_t n_raw, n;
    uint32_t *raw = minilm_utf8_decode(utf8, &n_raw);
    uint32_t *cps = raw ? minilm_normalize(raw, n_raw, &tk->norm, &n) : NULL;
    free(raw);
    size_t maxw = (size_t)tk->max_word_chars;
    char *text = cps ? malloc(4 * maxw + 1) : NULL;
    char *piece = text ? malloc(sizeof tk->prefix + 4 * maxw + 1) : NULL;
    size_t *off = piece ? malloc((maxw + 1) * sizeof *off) : NULL;
    if (!off) {
        free(cps);
        free(text);
        free(piece);
        return -1;
    }
    int k = 0, cap = max_len - 1; /* room for [SEP] */
    ids[k++] = tk->cls;
    for (size_t i = 0; i < n && k < cap;) {
        if (minilm_is_whitespace(cps[i])) {
            i++;
            continue;
        }
        size_t j = i + 1;
        if (!minilm_is_punctuation(cps[i]))
            while (j < n && !minilm_is_whitespace(cps[j]) && !minilm_is_punctuation(cps[j])) j++;
        wordpiece(tk, cps + i, j - i, ids, &k, cap, text, piece, off);
        i = j;
    }
    ids[k++] = tk->sep;
    free(cps);
    free(text);
    free(piece);
    free(off);
    return k;
}
