/*
 * all-MiniLM-L6-v2 on FusionFlow: the pieces ff-embed is made of, in one static library
 * (ff_minilm) so the tests run exactly the same code.
 *
 *   model_files.c  where the model lives (--model, FF_MODEL_DIR, the XDG cache), reading
 *                  its JSON files (cJSON)
 *   bert_text.c    BERT's text normalization on code points: clean-up, CJK spacing,
 *                  accent stripping, lower-casing, whitespace/punctuation classes
 *   wordpiece.c    the WordPiece tokenizer from tokenizer.json
 *   bert.c         config, weights (ff_safetensors_load_on) and the encoder forward on
 *                  any backend through the public ff API, mean pooling, L2 normalization
 *
 * Errors: functions returning int give 0 on success and -1 with a message in err
 * (cap bytes, NUL-terminated); those returning pointers give NULL and the same.
 * Nothing here reaches the network: a missing model is an error that says how to fetch it.
 */
#ifndef FF_MINILM_H
#define FF_MINILM_H

#include <stddef.h>
#include <stdint.h>

#include "ff/ff.h"

/* ---- model_files.c ---------------------------------------------------------------- */
#define MINILM_NAME "all-MiniLM-L6-v2"
#define MINILM_FETCH_HINT "run scripts/fetch-minilm.sh (or `make model`) once to fetch it"

/* The directory to load: explicit (--model) if non-NULL, else $FF_MODEL_DIR, else
 * $XDG_CACHE_HOME/fusionflow/models/all-MiniLM-L6-v2 (absolute XDG_CACHE_HOME only),
 * else $HOME/.cache/fusionflow/models/all-MiniLM-L6-v2; the same rule as
 * scripts/fetch-minilm.sh. */
int minilm_model_dir(const char *explicit_dir, char *out, size_t cap, char *err, size_t errcap);
/* 0 when dir holds the files ff-embed reads; else -1 and a message naming the first
 * missing file and how to fetch the model. */
int minilm_check_dir(const char *dir, char *err, size_t cap);
/* Parses dir/name (cJSON); the caller frees it with cJSON_Delete. A missing file with
 * optional set gives NULL and err[0] == 0. */
struct cJSON *minilm_read_json(const char *dir, const char *name, int optional, char *err, size_t cap);
/* The integer JSON value v (obj's member key, from cJSON_GetObjectItemCaseSensitive) in
 * *out, or dflt when v is NULL (absent) or null. A value that is not a number, not an
 * integer or outside [lo, hi] gives -1 and a message naming file, key and the range: the
 * check is made on the double, before any conversion (casting an out-of-range double to
 * an integer is undefined behaviour). lo and hi must lie within +-2^53, where doubles
 * hold every integer. */
int minilm_json_int(const struct cJSON *v, const char *file, const char *key, int64_t dflt, int64_t lo, int64_t hi,
                    int64_t *out, char *err, size_t cap);

/* ---- bert_text.c: character classes and normalization (BERT's, as HF tokenizers) ---- */
/* Decodes UTF-8 (invalid bytes become U+FFFD) into a new array of code points. */
uint32_t *minilm_utf8_decode(const char *s, size_t *n);
/* Appends the UTF-8 form of cp to out (at least 4 bytes free); returns the byte count. */
int minilm_utf8_encode(uint32_t cp, char *out);
typedef struct minilm_norm_opts {
    int clean_text, handle_chinese_chars, strip_accents, lowercase;
} minilm_norm_opts;
/* BertNormalizer: returns a new array of code points (count in *n), NULL when out of memory. */
uint32_t *minilm_normalize(const uint32_t *cps, size_t n_in, const minilm_norm_opts *o, size_t *n);
int minilm_is_whitespace(uint32_t cp);
int minilm_is_punctuation(uint32_t cp);

/* ---- wordpiece.c --------------------------------------------------------------------- */
typedef struct minilm_tokenizer minilm_tokenizer;
/* From dir/tokenizer.json: the WordPiece vocab, the unknown token, the "##" prefix,
 * max_input_chars_per_word, the BertNormalizer flags, [CLS], [SEP] and [PAD]. */
minilm_tokenizer *minilm_tokenizer_load(const char *dir, char *err, size_t cap);
void minilm_tokenizer_free(minilm_tokenizer *tk);
/* [CLS] pieces [SEP], at most max_len ids (>= 2; longer texts are truncated, [SEP]
 * kept); returns the count, or -1 when out of memory. */
int minilm_tokenize(const minilm_tokenizer *tk, const char *text, int64_t *ids, int max_len);
int64_t minilm_tokenizer_pad_id(const minilm_tokenizer *tk);

/* ---- bert.c -------------------------------------------------------------------------- */
typedef struct minilm_config {
    int64_t vocab_size, hidden, layers, heads, intermediate, max_positions, type_vocab;
    double layer_norm_eps;
    int max_seq_len; /* sentence_bert_config.json's max_seq_length (256), <= max_positions */
} minilm_config;

/* Reads config.json (a BERT with GELU and absolute positions), sentence_bert_config.json
 * and 1_Pooling/config.json (mean pooling is the only mode); the last two are optional. */
int minilm_config_load(const char *dir, minilm_config *c, char *err, size_t cap);

typedef struct minilm_model minilm_model;
/* minilm_config_load, then model.safetensors onto be, every weight's shape checked, and
 * the weights converted to dtype (FF_F32, FF_BF16 or FF_F16: model.half() or
 * .to(torch.bfloat16)), in which the encoder then computes; pooling and normalization
 * run in f32 whatever the dtype. */
minilm_model *minilm_model_load(const char *dir, ff_backend *be, ff_dtype dtype, char *err, size_t cap);
void minilm_model_free(minilm_model *m);
/* Quantizes the encoder's Linear weights (qkv, attention output, intermediate, output)
 * to s8 per output channel (ff_quantize_weight_s8); the forward then runs them through
 * ff_linear_dynamic_int8, embeddings, attention scores, norms and pooling staying f32.
 * The model must be f32; its backend needs the qmatmul entry (cpu, cpu_blas, opencl). */
int minilm_model_quantize(minilm_model *m, char *err, size_t cap);
const minilm_config *minilm_model_config(const minilm_model *m);
/* The sentence embeddings of a batch: ids [batch, seq] row-major, sentence i's first
 * lens[i] ids real and the rest padding; one forward for the whole batch. Returns a new
 * [batch, hidden] f32 tensor on the model's backend, rows L2-normalized; NULL with
 * ff_last_error() on failure. */
ff_tensor *minilm_embed(const minilm_model *m, int64_t batch, int64_t seq, const int64_t *ids, const int64_t *lens);

#endif /* FF_MINILM_H */
