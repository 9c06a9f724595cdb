/* The pieces of ff-embed without the real model (which tests/python/test_minilm.py
 * checks against PyTorch): the WordPiece tokenizer on a tiny hand-written vocab, the
 * model directory rule, the missing-model message, config validation, and the encoder on
 * a tiny random BERT written here (rows normalized, padding that changes nothing). */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ff_test.h"
#include "minilm.h"

static char dir[64];

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static const char *tokenizer_json =
    "{\"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true,"
    " \"strip_accents\": null, \"lowercase\": true},"
    " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"##\","
    " \"max_input_chars_per_word\": 8, \"vocab\": {\"[PAD]\": 0, \"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3,"
    " \"un\": 4, \"##able\": 5, \"##aff\": 6, \"cafe\": 7, \",\": 8, \"!\": 9, \"a\": 10, \"##b\": 11, \"x\": 12,"
    " \"\\u7684\": 13, \"hello\": 14, \"ang\": 15, \"##strom\": 16, \"unable\": 17, \"\\u03c3\": 18}}}";

/* ids of text (max_len 64) == want[0..n) */
static int encodes(const minilm_tokenizer *tk, const char *text, int max_len, const int64_t *want, int n)
{
    int64_t got[64];
    int k = minilm_tokenize(tk, text, got, max_len);
    int ok = k == n;
    for (int i = 0; ok && i < n; i++) ok = got[i] == want[i];
    if (!ok) {
        fprintf(stderr, "  \"%s\" gave", text);
        for (int i = 0; i < k; i++) fprintf(stderr, " %lld", (long long)got[i]);
        fprintf(stderr, "\n");
    }
    return ok;
}
#define ENCODES(tk, text, max_len, ...) \
    CHECK(encodes((tk), (text), (max_len), (int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8)))

static void test_wordpiece(void)
{
    write_file("tokenizer.json", tokenizer_json);
    char err[512];
    minilm_tokenizer *tk = minilm_tokenizer_load(dir, err, sizeof err);
    CHECK(tk != NULL);
    if (!tk) return;
    ENCODES(tk, "unable", 64, 2, 17, 3);                       /* a whole word beats pieces */
    ENCODES(tk, "unaff", 64, 2, 4, 6, 3);                      /* greedy longest match, ## */
    ENCODES(tk, "unaffable", 64, 2, 1, 3);                     /* 9 chars > 8: [UNK] */
    ENCODES(tk, "unabx", 64, 2, 1, 3);                         /* a rest that matches nothing */
    ENCODES(tk, "Café,naïve!", 64, 2, 7, 8, 1, 9, 3);         /* accents, punctuation splits */
    ENCODES(tk, "\xc3\x85NGSTR\xc3\x96M", 64, 2, 15, 16, 3); /* ÅNGSTRÖM */
    ENCODES(tk, "\xe2\x84\xabngstr\xc3\xb6m", 64, 2, 15, 16, 3); /* the Angstrom sign */
    ENCODES(tk, "hello\xe7\x9a\x84x", 64, 2, 14, 13, 12, 3);  /* CJK gets spaces */
    ENCODES(tk, "a\x01\xe2\x80\x8b" "b", 64, 2, 10, 11, 3);   /* controls, zero-width space dropped */
    ENCODES(tk, "x\t x\xc2\xa0x\n", 64, 2, 12, 12, 12, 3);    /* tab, NBSP, newline split */
    ENCODES(tk, "\xff\xc3", 64, 2, 3);                         /* invalid UTF-8 dropped */
    ENCODES(tk, "\xce\xa3", 64, 2, 18, 3);                     /* Greek capital sigma -> sigma */
    ENCODES(tk, "", 64, 2, 3);
    ENCODES(tk, "a a a a a", 4, 2, 10, 10, 3);                 /* truncated, [SEP] kept */
    ENCODES(tk, "unaff", 3, 2, 4, 3);                          /* truncation may cut a word */
    CHECK(minilm_tokenizer_pad_id(tk) == 0);
    minilm_tokenizer_free(tk);

    write_file("tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {}}}");
    CHECK(minilm_tokenizer_load(dir, err, sizeof err) == NULL && strstr(err, "WordPiece"));
    write_file("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0}}}");
    CHECK(minilm_tokenizer_load(dir, err, sizeof err) == NULL && strstr(err, "no [CLS]"));
    write_file("tokenizer.json", "{\"model\": ");
    CHECK(minilm_tokenizer_load(dir, err, sizeof err) == NULL && strstr(err, "not valid JSON"));
}

static void test_model_dir_rule(void)
{
    char out[512], err[256];
    setenv("FF_MODEL_DIR", "/models/here", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    CHECK(minilm_model_dir("/explicit", out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "/explicit"));
    CHECK(minilm_model_dir(NULL, out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "/models/here"));
    unsetenv("FF_MODEL_DIR");
    CHECK(minilm_model_dir(NULL, out, sizeof out, err, sizeof err) == 0 &&
          !strcmp(out, "/xdg/fusionflow/models/all-MiniLM-L6-v2"));
    setenv("XDG_CACHE_HOME", "relative", 1); /* the XDG spec: ignored */
    CHECK(minilm_model_dir(NULL, out, sizeof out, err, sizeof err) == 0 &&
          !strcmp(out, "/home/u/.cache/fusionflow/models/all-MiniLM-L6-v2"));
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    CHECK(minilm_model_dir(NULL, out, sizeof out, err, sizeof err) == -1 && strstr(err, "HOME"));
    CHECK(minilm_check_dir("/nonexistent/minilm", err, sizeof err) == -1 && strstr(err, "scripts/fetch-minilm.sh") &&
          strstr(err, "model.safetensors"));
}

#define TINY_CONFIG(act, extra)                                                                         \
    "{\"vocab_size\": 19, \"hidden_size\": 8, \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"   \
    " \"intermediate_size\": 16, \"max_position_embeddings\": 16, \"type_vocab_size\": 2,"             \
    " \"layer_norm_eps\": 1e-12, \"hidden_act\": \"" act "\"" extra "}"

static void test_config_checks(void)
{
    char err[512];
    minilm_config c;
    write_file("config.json", TINY_CONFIG("relu", ""));
    CHECK(minilm_config_load(dir, &c, err, sizeof err) == -1 && strstr(err, "hidden_act \"relu\""));
    write_file("config.json", TINY_CONFIG("gelu", ", \"position_embedding_type\": \"relative_key\""));
    CHECK(minilm_config_load(dir, &c, err, sizeof err) == -1 && strstr(err, "relative_key"));
    write_file("config.json", TINY_CONFIG("gelu", ""));
    char pooling[128];
    snprintf(pooling, sizeof pooling, "%s/1_Pooling", dir);
    mkdir(pooling, 0700);
    write_file("1_Pooling/config.json", "{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": false}");
    CHECK(minilm_config_load(dir, &c, err, sizeof err) == -1 && strstr(err, "only mean pooling"));
    write_file("1_Pooling/config.json", "{\"pooling_mode_mean_tokens\": true}");
    write_file("sentence_bert_config.json", "{\"max_seq_length\": 1000}");
    CHECK(minilm_config_load(dir, &c, err, sizeof err) == 0 && c.max_seq_len == 16 && c.heads == 2);
}

/* err (from a load that failed) names the file, the key and the allowed range */
static int names_range(const char *err, const char *file, const char *key, const char *range)
{
    int ok = strstr(err, file) && strstr(err, key) && strstr(err, range);
    if (!ok) fprintf(stderr, "  error \"%s\" lacks %s / %s / %s\n", err, file, key, range);
    return ok;
}

/* JSON numbers that do not fit the integer they become (issue 48: a cast of 1e300 to int
 * was undefined behaviour, then a misleading "out of memory") are refused by name. */
static void test_config_ranges(void)
{
    static const char *const bad[] = {"1e300", "-1e300", "-3", "0", "2.5", "4294967296", "\"8\"", "true"};
    char err[512], text[512];
    minilm_config c;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text,
                 "{\"vocab_size\": 19, \"hidden_size\": %s, \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
                 " \"intermediate_size\": 16, \"max_position_embeddings\": 16}", bad[i]);
        write_file("config.json", text);
        CHECK(minilm_config_load(dir, &c, err, sizeof err) == -1 &&
              names_range(err, "config.json", "\"hidden_size\"", "[1, 2147483647]"));
    }
    write_file("config.json", "{\"vocab_size\": 19, \"hidden_size\": 8, \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
                              " \"intermediate_size\": 16, \"max_position_embeddings\": 1e19}");
    CHECK(minilm_config_load(dir, &c, err, sizeof err) == -1 &&
          names_range(err, "config.json", "max_position_embeddings", "[1, 2147483647]"));
    write_file("config.json", TINY_CONFIG("gelu", ""));
    write_file("sentence_bert_config.json", "{\"max_seq_length\": 1e300}");
    CHECK(minilm_config_load(dir, &c, err, sizeof err) == -1 &&
          names_range(err, "sentence_bert_config.json", "max_seq_length", "[1, 2147483647]"));
    write_file("sentence_bert_config.json", "{\"max_seq_length\": 1000}");
    CHECK(minilm_config_load(dir, &c, err, sizeof err) == 0 && c.max_seq_len == 16);

    static const struct {
        const char *from, *to, *key, *range;
    } tok[] = {
        {"\"max_input_chars_per_word\": 8", "\"max_input_chars_per_word\": 1e300", "max_input_chars_per_word",
         "[1, 2147483647]"},
        {"\"max_input_chars_per_word\": 8", "\"max_input_chars_per_word\": -7", "max_input_chars_per_word",
         "[1, 2147483647]"},
        {"\"unable\": 17", "\"unable\": 1e10", "unable", "[0, 2147483647]"},
        {"\"unable\": 17", "\"unable\": 17.5", "unable", "[0, 2147483647]"},
        {"\"unable\": 17", "\"unable\": -1", "unable", "[0, 2147483647]"},
    };
    for (size_t i = 0; i < sizeof tok / sizeof tok[0]; i++) {
        const char *at = strstr(tokenizer_json, tok[i].from);
        CHECK(at != NULL);
        if (!at) continue;
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - tokenizer_json), tokenizer_json, tok[i].to,
                 at + strlen(tok[i].from));
        write_file("tokenizer.json", text);
        minilm_tokenizer *tk = minilm_tokenizer_load(dir, err, sizeof err);
        CHECK(tk == NULL && names_range(err, "tokenizer.json", tok[i].key, tok[i].range));
        minilm_tokenizer_free(tk);
    }
    write_file("tokenizer.json", tokenizer_json);
}

/* A FIFO in place of a model file is refused at once: reading it would wait for a writer. */
static void test_fifo_model_files(void)
{
    static const char *const names[] = {"config.json", "sentence_bert_config.json", "tokenizer.json"};
    const char *const texts[] = {TINY_CONFIG("gelu", ""), "{\"max_seq_length\": 1000}", tokenizer_json};
    char err[512], path[128];
    minilm_config c;
    alarm(20); /* a blocked open ends the test (SIGALRM) instead of hanging it */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK(remove(path) == 0 && mkfifo(path, 0600) == 0);
        int failed = i == 2 ? minilm_tokenizer_load(dir, err, sizeof err) == NULL
                            : minilm_config_load(dir, &c, err, sizeof err) == -1;
        CHECK(failed && strstr(err, names[i]) && strstr(err, "not a regular file"));
        if (!failed || !strstr(err, "not a regular file")) fprintf(stderr, "  %s: %s\n", names[i], err);
        remove(path);
        write_file(names[i], texts[i]);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK(minilm_check_dir(dir, err, sizeof err) == -1 && strstr(err, "model.safetensors is not a regular file"));
    remove(path);
    alarm(0);
}

/* A random tiny BERT with the checkpoint's tensor names, saved as model.safetensors. */
typedef struct tiny {
    char names[64][96];
    const char *name_ptrs[64];
    ff_tensor *ts[64];
    int n;
} tiny;

static void add(tiny *t, int64_t d0, int64_t d1, const char *fmt, int layer)
{
    snprintf(t->names[t->n], sizeof t->names[t->n], fmt, layer);
    t->name_ptrs[t->n] = t->names[t->n];
    t->ts[t->n] = d1 ? ff_rand_normal(2, SHAPE(d0, d1), FF_F32, 0, 0.5, 100 + (uint64_t)t->n)
                     : ff_rand_normal(1, SHAPE(d0), FF_F32, 0, 0.5, 100 + (uint64_t)t->n);
    t->n++;
}

static void write_tiny_model(void)
{
    static tiny t;
    t.n = 0;
    add(&t, 19, 8, "embeddings.word_embeddings.weight", 0);
    add(&t, 16, 8, "embeddings.position_embeddings.weight", 0);
    add(&t, 2, 8, "embeddings.token_type_embeddings.weight", 0);
    add(&t, 8, 0, "embeddings.LayerNorm.weight", 0);
    add(&t, 8, 0, "embeddings.LayerNorm.bias", 0);
    for (int i = 0; i < 2; i++) {
        static const char *const qkv[] = {"query", "key", "value"};
        for (int p = 0; p < 3; p++) {
            char w[96], b[96];
            snprintf(w, sizeof w, "encoder.layer.%%d.attention.self.%s.weight", qkv[p]);
            snprintf(b, sizeof b, "encoder.layer.%%d.attention.self.%s.bias", qkv[p]);
            add(&t, 8, 8, w, i);
            add(&t, 8, 0, b, i);
        }
        add(&t, 8, 8, "encoder.layer.%d.attention.output.dense.weight", i);
        add(&t, 8, 0, "encoder.layer.%d.attention.output.dense.bias", i);
        add(&t, 8, 0, "encoder.layer.%d.attention.output.LayerNorm.weight", i);
        add(&t, 8, 0, "encoder.layer.%d.attention.output.LayerNorm.bias", i);
        add(&t, 16, 8, "encoder.layer.%d.intermediate.dense.weight", i);
        add(&t, 16, 0, "encoder.layer.%d.intermediate.dense.bias", i);
        add(&t, 8, 16, "encoder.layer.%d.output.dense.weight", i);
        add(&t, 8, 0, "encoder.layer.%d.output.dense.bias", i);
        add(&t, 8, 0, "encoder.layer.%d.output.LayerNorm.weight", i);
        add(&t, 8, 0, "encoder.layer.%d.output.LayerNorm.bias", i);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(ff_safetensors_save(path, t.n, t.name_ptrs, t.ts, NULL) == FF_OK);
    for (int i = 0; i < t.n; i++) ff_tensor_release(t.ts[i]);
}

/* The tiny model's embeddings in dtype: sentence 0 alone (a[8]) and padded in a batch
 * beside a longer sentence 1 (b[16]); the padding must change nothing (within tol). */
static void tiny_embed(ff_dtype dtype, double tol, float *a, float *b)
{
    char err[512] = "";
    minilm_model *m = minilm_model_load(dir, ff_backend_default(), dtype, err, sizeof err);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    int64_t alone[] = {2, 10, 12, 3}, batch[] = {2, 10, 12, 3, 0, 0, 0, 2, 14, 5, 6, 7, 9, 3};
    ff_tensor *e1 = minilm_embed(m, 1, 4, alone, (int64_t[]){4});
    ff_tensor *e2 = minilm_embed(m, 2, 7, batch, (int64_t[]){4, 7});
    CHECK(e1 && e2 && ff_tensor_dim(e2, 0) == 2 && ff_tensor_dim(e2, 1) == 8);
    CHECK(e1 && ff_tensor_dtype(e1) == FF_F32); /* pooled in f32 whatever the encoder's dtype */
    if (e1 && e2 && !ff_tensor_to_host(e1, a, 8 * sizeof *a) && !ff_tensor_to_host(e2, b, 16 * sizeof *b)) {
        double n0 = 0, n1 = 0;
        for (int i = 0; i < 8; i++) {
            CHECK_NEAR(a[i], b[i], tol); /* the padding changed nothing */
            n0 += (double)b[i] * b[i];
            n1 += (double)b[8 + i] * b[8 + i];
        }
        CHECK_NEAR(n0, 1.0, 1e-5);
        CHECK_NEAR(n1, 1.0, 1e-5);
    }
    CHECK(minilm_embed(m, 1, 17, alone, (int64_t[]){4}) == NULL && strstr(ff_last_error(), "at most 16"));
    RELEASE(e1, e2);
    minilm_model_free(m);
}

static void test_tiny_encoder(void)
{
    write_tiny_model();
    float a[8], b[16], ah[8], bh[16];
    tiny_embed(FF_F32, 1e-5, a, b);
    /* half weights and activations: close to f32, cosine >= 0.99 */
    ff_dtype halves[2] = {FF_BF16, FF_F16};
    for (int h = 0; h < 2; h++) {
        tiny_embed(halves[h], 2e-2, ah, bh);
        double dot = 0;
        for (int i = 0; i < 16; i++) dot += (double)b[i] * bh[i];
        CHECK(dot / 2 >= 0.99);
    }
    char err[512] = "";
    CHECK(minilm_model_load(dir, ff_backend_default(), FF_I32, err, sizeof err) == NULL &&
          strstr(err, "f32, bf16 or f16, not i32"));

    /* sizes that do not match the weights: the tensor and the expected shape are named */
    write_file("config.json", "{\"vocab_size\": 20, \"hidden_size\": 8, \"num_hidden_layers\": 2,"
                              " \"num_attention_heads\": 2, \"intermediate_size\": 16,"
                              " \"max_position_embeddings\": 16}");
    CHECK(minilm_model_load(dir, ff_backend_default(), FF_F32, err, sizeof err) == NULL &&
          strstr(err, "embeddings.word_embeddings.weight is not an f32 tensor of shape [20, 8]"));
}

static void test_remove_files(void)
{
    static const char *const files[] = {"tokenizer.json", "config.json", "1_Pooling/config.json",
                                        "sentence_bert_config.json", "model.safetensors", "1_Pooling", ""};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        CHECK(remove(path) == 0);
    }
}

static void test_make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/ff_minilm_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
}

FF_TEST_MAIN("minilm_parts", TEST(test_make_dir), TEST(test_wordpiece), TEST(test_model_dir_rule),
             TEST(test_config_checks), TEST(test_config_ranges), TEST(test_fifo_model_files), TEST(test_tiny_encoder),
             TEST(test_remove_files))
