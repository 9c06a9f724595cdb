/* safetensors: round trips (read and mapped), the exact bytes of our writer against
 * the format spec, and every class of corrupt file rejected with a clear error and no
 * leaked tensor. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ff_impl.h"
#include "ff_test.h"

static char dir[64];
static char path[128];

static void setup(void)
{
    if (!dir[0]) {
        strcpy(dir, "/tmp/ff_io_st_XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
}

/* Writes u64le(len(header)) + header + data: a file "by hand", per the spec. */
static void write_raw(const char *header, const void *data, size_t ndata)
{
    FILE *f = fopen(path, "wb");
    uint64_t n = strlen(header);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(n >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(header, 1, n, f);
    if (ndata) fwrite(data, 1, ndata, f);
    fclose(f);
}

static void write_bytes(const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

static void test_round_trip(void)
{
    setup();
    long base = ff_debug_live_tensors();
    int64_t s23[] = {2, 3}, s4[] = {4}, s3[] = {3};
    double v6[] = {1.5, -2, 3.25, 4, 5e-3, 6e10}, vb[] = {1, 0, 1};
    ff_tensor *a = ff_test_tensor(FF_F32, 2, s23, v6);
    int64_t i4[] = {-1, 0, 7, 9007199254740993LL}; /* not representable in f64 */
    ff_tensor *b = ff_from_data(i4, 1, s4, FF_I64);
    ff_tensor *c = ff_test_tensor(FF_BOOL, 1, s3, vb);
    ff_tensor *d64 = ff_test_tensor(FF_F64, 2, s23, v6);
    ff_tensor *dt = ff_transpose(d64, 0, 1); /* strided: saved row-major as [3, 2] */
    ff_tensor *e = ff_scalar_tensor(42, FF_U8);
    int64_t s0[] = {0, 5};
    ff_tensor *z = ff_zeros(2, s0, FF_I32);
    const char *names[] = {"w.weight", "steps", "mask", "dt", "\"quoted\"\n", "empty"};
    ff_tensor *ts[] = {a, b, c, dt, e, z};
    const char *meta[] = {"format", "pt", "note", "h\xc3\xa9llo \"x\"", NULL};
    CHECK(ff_safetensors_save(path, 6, names, ts, meta) == FF_OK);
    for (int mode = 0; mode < 2; mode++) {
        ff_tensor_dict *dd = ff_safetensors_load(path, mode ? FF_IO_MMAP : 0);
        CHECK(dd != NULL);
        if (!dd) continue;
        CHECK(ff_tensor_dict_count(dd) == 6);
        for (int i = 0; i < 6; i++) CHECK(strcmp(ff_tensor_dict_name(dd, i), names[i]) == 0);
        ff_tensor *r = ff_tensor_dict_get(dd, "w.weight");
        double f32v[6];
        for (int i = 0; i < 6; i++) {
            /* through a volatile: gcc 12's -O3 vectorizer drops the double->float->double
             * round trip in this loop, leaving the unrounded doubles */
            volatile float fv = (float)v6[i];
            f32v[i] = fv;
        }
        CHECK_TENSOR(r, 2, s23, f32v, 0);
        CHECK(ff_tensor_dtype(r) == FF_F32);
        ff_tensor_release(r);
        r = ff_tensor_dict_get(dd, "steps");
        CHECK(ff_tensor_dtype(r) == FF_I64);
        int64_t big;
        ff_tensor *last = ff_select(r, 0, 3);
        CHECK(ff_tensor_item_i64(last, &big) == FF_OK && big == 9007199254740993LL); /* bit-exact i64 */
        ff_tensor_release(last);
        ff_tensor_release(r);
        r = ff_tensor_dict_get(dd, "mask");
        CHECK(ff_tensor_dtype(r) == FF_BOOL);
        CHECK_TENSOR(r, 1, s3, vb, 0);
        ff_tensor_release(r);
        r = ff_tensor_dict_get(dd, "dt");
        int64_t s32[] = {3, 2};
        double tv[] = {1.5, 4, -2, 5e-3, 3.25, 6e10};
        CHECK_TENSOR(r, 2, s32, tv, 0);
        ff_tensor_release(r);
        r = ff_tensor_dict_get(dd, "\"quoted\"\n");
        double v42 = 42;
        CHECK_TENSOR(r, 0, NULL, &v42, 0);
        ff_tensor_release(r);
        r = ff_tensor_dict_get(dd, "empty");
        CHECK(r && ff_tensor_numel(r) == 0 && ff_tensor_dim(r, 1) == 5);
        ff_tensor_release(r);
        CHECK(ff_tensor_dict_meta_count(dd) == 2);
        CHECK(strcmp(ff_tensor_dict_meta_get(dd, "note"), "h\xc3\xa9llo \"x\"") == 0);
        CHECK(ff_tensor_dict_get(dd, "nope") == NULL && ff_last_status() == FF_ERR_INDEX);
        if (mode) {
            /* mapped pages are private: writing through a tensor never reaches the file */
            r = ff_tensor_dict_get(dd, "w.weight");
            CHECK(ff_tensor_data_ptr(r) != NULL);
            ((float *)ff_tensor_data_ptr(r))[0] = 99.0f;
            ff_tensor_release(r);
        }
        ff_tensor_dict_free(dd);
    }
    ff_tensor_dict *again = ff_safetensors_load(path, FF_IO_MMAP);
    ff_tensor *r = ff_tensor_dict_get(again, "w.weight");
    double first;
    int64_t i00[] = {0, 0};
    CHECK(ff_tensor_get(r, i00, &first) == FF_OK && first == 1.5);
    ff_tensor_dict_free(again);
    /* a mapped tensor outlives its dict (the mapping is refcounted) */
    CHECK(r && ff_tensor_get(r, i00, &first) == FF_OK && first == 1.5);
    ff_tensor_release(r);
    for (int i = 0; i < 6; i++) ff_tensor_release(ts[i]);
    ff_tensor_release(d64);
    CHECK(ff_debug_live_tensors() == base);
    /* no temporary file left behind */
    DIR *dp = opendir(dir);
    struct dirent *de;
    int others = 0;
    while ((de = readdir(dp)))
        if (strstr(de->d_name, ".tmp.")) others++;
    closedir(dp);
    CHECK(others == 0);
}

/* Our writer's bytes, compared with the spec by hand. */
static void test_exact_bytes(void)
{
    setup();
    int64_t s2[] = {2};
    double v[] = {1, 2};
    ff_tensor *a = ff_test_tensor(FF_F32, 1, s2, v);
    const char *names[] = {"a"};
    CHECK(ff_safetensors_save(path, 1, names, &a, NULL) == FF_OK);
    ff_tensor_release(a);
    const char *json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    size_t jn = strlen(json), hn = (jn + 8 + 7) / 8 * 8 - 8; /* padded with spaces: data 8-aligned */
    unsigned char buf[256];
    FILE *f = fopen(path, "rb");
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(got == 8 + hn + 8);
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--) len = len << 8 | buf[i];
    CHECK(len == hn);
    CHECK(memcmp(buf + 8, json, jn) == 0);
    for (size_t i = jn; i < hn; i++) CHECK(buf[8 + i] == ' ');
    const unsigned char data[] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}; /* 1.0f, 2.0f little-endian */
    CHECK(memcmp(buf + 8 + hn, data, 8) == 0);
}

/* A file written the way PyTorch's safetensors writes one (header with __metadata__
 * first, no padding needed, tensors in another order than their data), read bit-exactly. */
static void test_foreign_file(void)
{
    setup();
    long base = ff_debug_live_tensors();
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                    "\"a\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}";
    unsigned char data[16];
    double pi = 3.141592653589793;
    int32_t iv[2] = {-7, 2147483647};
    memcpy(data, &pi, 8);
    memcpy(data + 8, iv, 8);
    write_raw(h, data, 16);
    for (int mode = 0; mode < 2; mode++) {
        ff_tensor_dict *d = ff_safetensors_load(path, mode ? FF_IO_MMAP : 0);
        CHECK(d && ff_tensor_dict_count(d) == 2);
        if (!d) continue;
        CHECK(strcmp(ff_tensor_dict_name(d, 0), "b") == 0);
        ff_tensor *a = ff_tensor_dict_get(d, "a"), *b = ff_tensor_dict_get(d, "b");
        double x;
        CHECK(ff_tensor_item(a, &x) == FF_OK && memcmp(&x, &pi, 8) == 0);
        int32_t back[2];
        CHECK(ff_tensor_to_host(b, back, 8) == FF_OK && back[0] == -7 && back[1] == 2147483647);
        CHECK(strcmp(ff_tensor_dict_meta_get(d, "format"), "pt") == 0);
        ff_tensor_release(a);
        ff_tensor_release(b);
        ff_tensor_dict_free(d);
    }
    CHECK(ff_debug_live_tensors() == base);
}

typedef struct corrupt_case {
    const char *what, *header;
    size_t ndata;
    ff_status status;
    const char *needle;
} corrupt_case;

static void expect_reject(const char *what, ff_status status, const char *needle)
{
    for (int mode = 0; mode < 2; mode++) {
        ff_clear_error();
        ff_tensor_dict *d = ff_safetensors_load(path, mode ? FF_IO_MMAP : 0);
        CHECK_ERROR(d == NULL, status, needle);
        if (d || !strstr(ff_last_error(), needle)) fprintf(stderr, "  case: %s\n", what);
        CHECK(strstr(ff_last_error(), path) != NULL); /* the message names the file */
        ff_tensor_dict_free(d);
    }
}

static void test_corrupt(void)
{
    setup();
    long base = ff_debug_live_tensors();
    static const corrupt_case cases[] = {
        {"bad JSON", "{\"a\":{\"dtype\":\"F32\",}", 0, FF_ERR_INVALID, "not valid JSON"},
        {"not an object", "[1, 2, 3]", 0, FF_ERR_INVALID, "does not start with '{'"},
        {"trailing garbage", "{} x", 0, FF_ERR_INVALID, "trailing characters"},
        {"overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, FF_ERR_INVALID, "overlap"},
        {"gap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, FF_ERR_INVALID, "belong to no tensor"},
        {"uncovered tail", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, FF_ERR_INVALID,
         "end of the data buffer"},
        {"offsets past end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, FF_ERR_IO, "run past"},
        {"shape/bytes mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, FF_ERR_INVALID,
         "shape x dtype size is 12 bytes"},
        {"unknown dtype", "{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, FF_ERR_INVALID,
         "unknown dtype 'F33'"},
        {"u16", "{\"a\":{\"dtype\":\"U16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8, FF_ERR_UNSUPPORTED, "U16"},
        {"f8", "{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[8],\"data_offsets\":[0,8]}}", 8, FF_ERR_UNSUPPORTED, "F8_E4M3"},
        {"shape overflow", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4],\"data_offsets\":[0,8]}}", 8,
         FF_ERR_INVALID, "overflows"},
        {"byte overflow", "{\"a\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],\"data_offsets\":[0,8]}}", 8,
         FF_ERR_INVALID, "byte count overflows"},
        {"huge offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[9223372036854775807],"
                         "\"data_offsets\":[0,9223372036854775807]}}", 8, FF_ERR_IO, "run past"},
        {"negative dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, FF_ERR_INVALID,
         "non-negative"},
        {"fractional dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, FF_ERR_INVALID,
         "non-negative integers"},
        {"too many dims", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", 8,
         FF_ERR_INVALID, "9 dims"},
        {"begin > end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, FF_ERR_INVALID,
         "begin <= end"},
        {"three offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, FF_ERR_INVALID,
         "data_offsets must be"},
        {"duplicate name", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                           "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, FF_ERR_INVALID,
         "appears twice"},
        {"unknown field", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8, FF_ERR_INVALID,
         "unknown field 'x'"},
        {"missing field", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, FF_ERR_INVALID, "lacks 'data_offsets'"},
        {"entry not object", "{\"a\":[1]}", 0, FF_ERR_INVALID, "not an object"},
        {"bad metadata", "{\"__metadata__\":{\"k\":1}}", 0, FF_ERR_INVALID, "not a string"},
        {"bool byte 2", "{\"a\":{\"dtype\":\"BOOL\",\"shape\":[8],\"data_offsets\":[0,8]}}", 8, FF_ERR_INVALID,
         "must be 0 or 1"},
        {"bad utf-8", "{\"\xff\":{}}", 0, FF_ERR_INVALID, "invalid UTF-8"},
        {"lone surrogate", "{\"\\ud800\":{}}", 0, FF_ERR_INVALID, "surrogate"},
        {"NUL in name", "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, FF_ERR_INVALID,
         "NUL"},
    };
    unsigned char data[16];
    memset(data, 2, sizeof data); /* 2 is not a valid bool byte */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_raw(cases[i].header, data, cases[i].ndata);
        expect_reject(cases[i].what, cases[i].status, cases[i].needle);
    }
    /* nesting bomb */
    char deep[4096];
    size_t k = 0;
    k += (size_t)sprintf(deep, "{\"a\":");
    for (int i = 0; i < 1000; i++) deep[k++] = '[';
    deep[k] = '\0';
    write_raw(deep, NULL, 0);
    expect_reject("deep nesting", FF_ERR_INVALID, "nested too deeply");

    /* length field problems, built byte by byte */
    unsigned char raw[32] = {0};
    write_bytes(raw, 5);
    expect_reject("shorter than 8 bytes", FF_ERR_IO, "too short");
    raw[0] = 1; /* header length 1 */
    write_bytes(raw, 16);
    expect_reject("header length 1", FF_ERR_INVALID, "out of bounds");
    memset(raw, 0xff, 8); /* 2^64 - 1 */
    write_bytes(raw, 16);
    expect_reject("huge header length", FF_ERR_INVALID, "out of bounds");
    memset(raw, 0, 8);
    raw[0] = 100; /* lies: only 8 bytes follow */
    memcpy(raw + 8, "{}      ", 8);
    write_bytes(raw, 16);
    expect_reject("lying header length", FF_ERR_IO, "only 8 follow");
    raw[0] = 0;
    raw[3] = 0x10; /* 268 MB > the 100 MB cap */
    write_bytes(raw, 16);
    expect_reject("header over 100MB", FF_ERR_INVALID, "out of bounds");

    /* truncated valid file: every prefix is rejected, never crashes */
    int64_t s[] = {3};
    double v[] = {1, 2, 3};
    ff_tensor *t = ff_test_tensor(FF_F64, 1, s, v);
    const char *nm[] = {"x"};
    CHECK(ff_safetensors_save(path, 1, nm, &t, NULL) == FF_OK);
    ff_tensor_release(t);
    FILE *f = fopen(path, "rb");
    unsigned char full[256];
    size_t n = fread(full, 1, sizeof full, f);
    fclose(f);
    int rejected = 0;
    for (size_t cut = 0; cut < n; cut++) {
        write_bytes(full, cut);
        ff_tensor_dict *d = ff_safetensors_load(path, cut % 2 ? FF_IO_MMAP : 0);
        rejected += d == NULL;
        ff_tensor_dict_free(d);
    }
    CHECK(rejected == (int)n);

    /* random byte flips: must load or fail cleanly (ASan/UBSan watch the rest) */
    uint64_t rng = 12345;
    for (int it = 0; it < 1000; it++) {
        unsigned char m[256];
        memcpy(m, full, n);
        for (int j = 0; j < 3; j++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t pos = (size_t)(rng >> 33) % n;
            m[pos] = (unsigned char)(rng >> 17);
        }
        write_bytes(m, n);
        ff_tensor_dict *d = ff_safetensors_load(path, it % 2 ? FF_IO_MMAP : 0);
        CHECK(d != NULL || ff_last_error()[0] != '\0');
        ff_tensor_dict_free(d);
    }
    unlink(path);
    expect_reject("missing file", FF_ERR_IO, "cannot open");
    CHECK(ff_debug_live_tensors() == base);
}

static void test_save_errors(void)
{
    setup();
    long base = ff_debug_live_tensors();
    ff_tensor *t = ff_scalar_tensor(1, FF_F32);
    ff_tensor *ts[] = {t, t};
    const char *dup[] = {"a", "a"}, *res[] = {"__metadata__"}, *empty[] = {""};
    CHECK_ERROR(ff_safetensors_save(path, 2, dup, ts, NULL) != FF_OK, FF_ERR_INVALID, "appears twice");
    CHECK_ERROR(ff_safetensors_save(path, 1, res, ts, NULL) != FF_OK, FF_ERR_INVALID, "reserved");
    CHECK_ERROR(ff_safetensors_save(path, 1, empty, ts, NULL) != FF_OK, FF_ERR_INVALID, "empty name");
    const char *odd[] = {"k", NULL};
    const char *okname[] = {"a"};
    const char *meta_odd[] = {"k", "v", "k2", NULL};
    (void)odd;
    CHECK_ERROR(ff_safetensors_save(path, 1, okname, ts, meta_odd) != FF_OK, FF_ERR_INVALID, "has no value");
    CHECK_ERROR(ff_safetensors_save("/nonexistent-dir/x.safetensors", 1, okname, ts, NULL) != FF_OK, FF_ERR_IO,
                "temporary file");
    /* an empty set of tensors is a valid file */
    CHECK(ff_safetensors_save(path, 0, NULL, NULL, NULL) == FF_OK);
    ff_tensor_dict *d = ff_safetensors_load(path, 0);
    CHECK(d && ff_tensor_dict_count(d) == 0);
    ff_tensor_dict_free(d);
    /* the dict API round-trips too */
    d = ff_tensor_dict_new();
    CHECK(ff_tensor_dict_set(d, "w", t) == FF_OK && ff_tensor_dict_set(d, "w", t) == FF_OK);
    CHECK(ff_tensor_dict_count(d) == 1);
    CHECK(ff_tensor_dict_set_meta(d, "epoch", "3") == FF_OK);
    CHECK(ff_safetensors_save_dict(path, d) == FF_OK);
    ff_tensor_dict_free(d);
    d = ff_safetensors_load(path, 0);
    CHECK(d && ff_tensor_dict_count(d) == 1 && strcmp(ff_tensor_dict_meta_get(d, "epoch"), "3") == 0);
    ff_tensor_dict_free(d);
    ff_tensor_release(t);
    CHECK(ff_debug_live_tensors() == base);
    unlink(path);
    rmdir(dir);
}

/* The cpu backend behind a vtable copy that does not claim host memory: the io layer
 * must then stage through upload/download instead of touching buffers directly. */
static void test_non_host_backend(void)
{
    setup();
    long base = ff_debug_live_tensors();
    ff_backend *cpu = ff_backend_load("cpu");
    CHECK(cpu != NULL);
    if (!cpu) return;
    ff_backend_vtable vt = *cpu->vt;
    vt.flags &= ~FF_BACKEND_HOST_MEMORY;
    ff_backend fake = {.vt = &vt, .ctx = cpu->ctx, .name = (char *)"fake_device", .path = (char *)"none"};
    int64_t s[] = {2, 3};
    double v[] = {1, 2, 3, 4, 5, 6};
    ff_tensor *t = ff_from_data_on(&fake, v, 2, s, FF_F64);
    CHECK(t && ff_tensor_data_ptr(t) == NULL);
    ff_tensor *tt = ff_transpose(t, 0, 1);
    const char *names[] = {"t", "tt"};
    ff_tensor *ts[] = {t, tt};
    CHECK(ff_safetensors_save(path, 2, names, ts, NULL) == FF_OK);
    for (int mode = 0; mode < 2; mode++) {
        ff_tensor_dict *d = ff_safetensors_load_on(&fake, path, mode ? FF_IO_MMAP : 0);
        CHECK(d && ff_tensor_dict_count(d) == 2);
        ff_tensor *r = ff_tensor_dict_get(d, "tt");
        double back[6], want[] = {1, 4, 2, 5, 3, 6};
        CHECK(r && ff_tensor_backend(r) == &fake && ff_tensor_data_ptr(r) == NULL);
        CHECK(r && ff_tensor_to_host(r, back, sizeof back) == FF_OK && memcmp(back, want, sizeof back) == 0);
        ff_tensor_release(r);
        ff_tensor_dict_free(d);
    }
    CHECK_ERROR(ff_to_dlpack(t) == NULL, FF_ERR_UNSUPPORTED, "fake_device");
    ff_tensor_release(tt);
    ff_tensor_release(t);
    CHECK(ff_debug_live_tensors() == base);
}

static ff_module *make_net(uint64_t seed)
{
    return ff_sequential_take(3, (ff_module *[]){ff_linear(4, 3, true, seed), ff_relu_module(),
                                                 ff_linear(3, 2, true, seed + 1)});
}

static bool same_values(const ff_tensor *a, const ff_tensor *b)
{
    double x[64], y[64];
    int64_t n = ff_tensor_numel(a);
    return n == ff_tensor_numel(b) && n <= 64 && ff_test_values(a, x, 64) == 0 && ff_test_values(b, y, 64) == 0 &&
           memcmp(x, y, (size_t)n * sizeof(double)) == 0;
}

static void test_module_state_dict(void)
{
    setup();
    long base = ff_debug_live_tensors();
    ff_module *a = make_net(1), *b = make_net(7);
    CHECK(a && b);
    ff_tensor_dict *sd = ff_module_state_dict(a);
    CHECK(sd && ff_tensor_dict_count(sd) == 4);
    CHECK(sd && strcmp(ff_tensor_dict_name(sd, 0), "0.weight") == 0 && strcmp(ff_tensor_dict_name(sd, 3), "2.bias") == 0);
    ff_tensor *w = ff_tensor_dict_get(sd, "0.weight"), *pw = ff_module_get_parameter(a, "0.weight");
    CHECK(ff_tensor_shares_storage(w, pw)); /* a state dict aliases the parameters */
    CHECK(ff_module_save_safetensors(a, path) == FF_OK);
    ff_tensor *bw = ff_module_get_parameter(b, "0.weight");
    CHECK(!same_values(bw, pw));
    CHECK(ff_module_load_safetensors(b, path, true) == FF_OK);
    CHECK(same_values(bw, pw));
    int64_t s[] = {2, 4};
    double v[] = {1, -2, 3, 0.5, -1, 2, 0, 1};
    ff_tensor *x = ff_test_tensor(FF_F32, 2, s, v);
    ff_tensor *ya = ff_module_forward(a, x), *yb = ff_module_forward(b, x);
    CHECK(ya && yb && same_values(ya, yb));
    /* mismatches are refused before anything is written */
    ff_tensor_dict *bad = ff_tensor_dict_new();
    ff_tensor *wrong = ff_zeros(2, s, FF_F32);
    CHECK(ff_tensor_dict_set(bad, "0.weight", wrong) == FF_OK);
    CHECK_ERROR(ff_module_load_state_dict(b, bad, false) != FF_OK, FF_ERR_INVALID, "has shape [2, 4]");
    CHECK(same_values(bw, pw));
    ff_tensor_dict_free(bad);
    bad = ff_tensor_dict_new();
    CHECK(ff_tensor_dict_set(bad, "0.weight", w) == FF_OK);
    CHECK_ERROR(ff_module_load_state_dict(b, bad, true) != FF_OK, FF_ERR_INVALID, "'0.bias' is missing");
    CHECK(ff_module_load_state_dict(b, bad, false) == FF_OK); /* non-strict: a partial load */
    CHECK(ff_tensor_dict_set(bad, "head.weight", w) == FF_OK);
    CHECK(ff_module_load_state_dict(b, bad, false) == FF_OK); /* non-strict ignores unknown names */
    ff_tensor_dict_free(bad);
    ff_tensor_dict *extra = ff_module_state_dict(a);
    CHECK(ff_tensor_dict_set(extra, "head.weight", w) == FF_OK);
    CHECK_ERROR(ff_module_load_state_dict(b, extra, true) != FF_OK, FF_ERR_INVALID, "'head.weight' names no parameter");
    ff_tensor_dict_free(extra);
    ff_tensor_release(wrong);
    ff_tensor_release(x);
    ff_tensor_release(ya);
    ff_tensor_release(yb);
    ff_tensor_release(w);
    ff_tensor_release(pw);
    ff_tensor_release(bw);
    ff_tensor_dict_free(sd);
    ff_module_release(a);
    ff_module_release(b);
    CHECK(ff_debug_live_tensors() == base);
}

FF_TEST_MAIN("io_safetensors", TEST(test_module_state_dict), TEST(test_non_host_backend), TEST(test_round_trip), TEST(test_exact_bytes), TEST(test_foreign_file),
             TEST(test_corrupt), TEST(test_save_errors))
