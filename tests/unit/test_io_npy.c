/* .npy: round trips, files built by hand per the NumPy format spec (versions 1.0, 2.0,
 * 3.0; C and Fortran order), and corrupt headers rejected with clear errors. */
#define _XOPEN_SOURCE 700
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ff_test.h"

static char dir[64];
static char path[128];

static void setup(void)
{
    if (!dir[0]) {
        strcpy(dir, "/tmp/ff_io_npy_XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    snprintf(path, sizeof path, "%s/t.npy", dir);
}

/* magic, version, little-endian header length, dict padded with spaces + '\n' to a
 * multiple of 64, then data. */
static void write_npy(int major, const char *dict, const void *data, size_t ndata)
{
    size_t pre = major == 1 ? 10 : 12, dn = strlen(dict);
    size_t total = (pre + dn + 1 + 63) / 64 * 64, hlen = total - pre;
    unsigned char *buf = calloc(1, total + ndata);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + pre, dict, dn);
    memset(buf + pre + dn, ' ', hlen - dn - 1);
    buf[total - 1] = '\n';
    if (ndata) memcpy(buf + total, data, ndata);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, total + ndata, f);
    fclose(f);
    free(buf);
}

static void test_round_trip(void)
{
    setup();
    long base = ff_debug_live_tensors();
    int64_t s23[] = {2, 3};
    double v[] = {1, -2.5, 3, 4e20, 5, 6};
    const ff_dtype types[] = {FF_F32, FF_F64, FF_I32, FF_I64, FF_U8, FF_BOOL};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        double vv[6];
        for (int i = 0; i < 6; i++)
            vv[i] = types[k] == FF_BOOL ? (v[i] != 0) : types[k] == FF_U8 ? (double)(i * 40) : types[k] == FF_F32 ? (float)v[i]
                  : (types[k] == FF_I32 || types[k] == FF_I64) ? (double)(i * 1000 - 2500) : v[i];
        ff_tensor *t = ff_test_tensor(types[k], 2, s23, vv);
        CHECK(ff_npy_save(path, t) == FF_OK);
        ff_tensor *r = ff_npy_load(path);
        CHECK(r && ff_tensor_dtype(r) == types[k]);
        CHECK_TENSOR(r, 2, s23, vv, 0);
        ff_tensor_release(r);
        /* a transposed view is saved in its logical (row-major) order */
        ff_tensor *tt = ff_transpose(t, 0, 1);
        CHECK(ff_npy_save(path, tt) == FF_OK);
        r = ff_npy_load(path);
        int64_t s32[] = {3, 2};
        double tv[] = {vv[0], vv[3], vv[1], vv[4], vv[2], vv[5]};
        CHECK_TENSOR(r, 2, s32, tv, 0);
        ff_tensor_release(r);
        ff_tensor_release(tt);
        ff_tensor_release(t);
    }
    ff_tensor *sc = ff_scalar_tensor(7, FF_I64);
    CHECK(ff_npy_save(path, sc) == FF_OK);
    ff_tensor *r = ff_npy_load(path);
    double seven = 7;
    CHECK_TENSOR(r, 0, NULL, &seven, 0);
    ff_tensor_release(r);
    ff_tensor_release(sc);
    CHECK(ff_debug_live_tensors() == base);
}

/* ff_npy_save's header is byte-for-byte what numpy.save writes. */
static void test_exact_header(void)
{
    setup();
    int64_t s[] = {5};
    ff_tensor *t = ff_zeros(1, s, FF_F32);
    CHECK(ff_npy_save(path, t) == FF_OK);
    ff_tensor_release(t);
    unsigned char buf[256];
    FILE *f = fopen(path, "rb");
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(n == 128 + 20);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
    CHECK(memcmp(buf, "\x93NUMPY\x01\x00\x76\x00", 10) == 0); /* header length 118 = 128 - 10 */
    CHECK(memcmp(buf + 10, dict, strlen(dict)) == 0);
    CHECK(buf[127] == '\n' && buf[126] == ' ');
}

static void test_versions_and_fortran(void)
{
    setup();
    long base = ff_debug_live_tensors();
    float cdata[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[] = {2, 3};
    double want[] = {1, 2, 3, 4, 5, 6};
    for (int major = 1; major <= 3; major++) {
        write_npy(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", cdata, sizeof cdata);
        ff_tensor *r = ff_npy_load(path);
        CHECK_TENSOR(r, 2, s23, want, 0);
        ff_tensor_release(r);
    }
    /* Fortran order: column-major bytes of [[1,2,3],[4,5,6]] */
    float fdata[6] = {1, 4, 2, 5, 3, 6};
    write_npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", fdata, sizeof fdata);
    ff_tensor *r = ff_npy_load(path);
    CHECK_TENSOR(r, 2, s23, want, 0);
    CHECK(r && ff_tensor_is_contiguous(r));
    ff_tensor_release(r);
    /* 3-d Fortran: element (i,j,k) at i + 2j + 4k */
    int32_t f3[8];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) f3[i + 2 * j + 4 * k] = 100 * i + 10 * j + k;
    write_npy(2, "{\"descr\":\"<i4\",\"fortran_order\":True,\"shape\":(2,2,2)}", f3, sizeof f3);
    r = ff_npy_load(path);
    int64_t s222[] = {2, 2, 2};
    double w3[] = {0, 1, 10, 11, 100, 101, 110, 111};
    CHECK_TENSOR(r, 3, s222, w3, 0);
    ff_tensor_release(r);
    /* key order is free; Python 2 'L' suffixes and '=' byte order are accepted */
    int64_t iv[2] = {-5, 1LL << 40};
    write_npy(1, "{'shape': (2L,), 'fortran_order': False, 'descr': '=i8'}", iv, sizeof iv);
    r = ff_npy_load(path);
    int64_t got[2] = {0, 0};
    CHECK(r && ff_tensor_to_host(r, got, sizeof got) == FF_OK && got[0] == -5 && got[1] == (1LL << 40));
    ff_tensor_release(r);
    CHECK(ff_debug_live_tensors() == base);
}

static void expect_reject(const char *what, ff_status st, const char *needle)
{
    ff_clear_error();
    ff_tensor *t = ff_npy_load(path);
    CHECK_ERROR(t == NULL, st, needle);
    if (t || !strstr(ff_last_error(), needle)) fprintf(stderr, "  case: %s\n", what);
    ff_tensor_release(t);
}

static void test_corrupt(void)
{
    setup();
    long base = ff_debug_live_tensors();
    float d[6] = {0};
    static const struct {
        const char *what, *dict;
        size_t ndata;
        ff_status st;
        const char *needle;
    } cases[] = {
        {"missing shape", "{'descr': '<f4', 'fortran_order': False}", 24, FF_ERR_INVALID, "lacks 'shape'"},
        {"extra key", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", 24, FF_ERR_INVALID,
         "unexpected or repeated key 'x'"},
        {"repeated key", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", 24,
         FF_ERR_INVALID, "repeated key 'descr'"},
        {"big endian", "{'descr': '>f4', 'fortran_order': False, 'shape': (6,)}", 24, FF_ERR_UNSUPPORTED,
         "big-endian"},
        {"uint16", "{'descr': '<u2', 'fortran_order': False, 'shape': (3,)}", 6, FF_ERR_UNSUPPORTED, "'<u2'"},
        {"structured", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,)}", 24, FF_ERR_INVALID,
         "structured"},
        {"shape list", "{'descr': '<f4', 'fortran_order': False, 'shape': [6]}", 24, FF_ERR_INVALID, "not a tuple"},
        {"negative dim", "{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", 24, FF_ERR_INVALID,
         "non-negative"},
        {"shape overflow", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 24,
         FF_ERR_INVALID, "overflows"},
        {"product overflow", "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 24,
         FF_ERR_INVALID, "overflows"},
        {"fortran not bool", "{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}", 24, FF_ERR_INVALID,
         "True or False"},
        {"truncated data", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", 20, FF_ERR_IO, "truncated"},
        {"extra data", "{'descr': '<f4', 'fortran_order': False, 'shape': (5,)}", 24, FF_ERR_INVALID,
         "need 20 data bytes but the file has 24"},
        {"not a dict", "('descr', '<f4')", 24, FF_ERR_INVALID, "not a dict"},
        {"bad bool", "{'descr': '|b1', 'fortran_order': False, 'shape': (24,)}", 24, FF_ERR_INVALID, "0 or 1"},
    };
    memset(d, 0x7f, sizeof d); /* byte 0x7f: an invalid bool */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_npy(1, cases[i].dict, d, cases[i].ndata);
        expect_reject(cases[i].what, cases[i].st, cases[i].needle);
    }
    FILE *f = fopen(path, "wb");
    fwrite("\x93NUMPZ\x01\x00\x10\x00{}", 1, 12, f);
    fclose(f);
    expect_reject("bad magic", FF_ERR_INVALID, "bad magic");
    f = fopen(path, "wb");
    fwrite("\x93NUMPY\x04\x00\x10\x00{}", 1, 12, f);
    fclose(f);
    expect_reject("version 4", FF_ERR_UNSUPPORTED, "version 4.0");
    f = fopen(path, "wb");
    fwrite("\x93NUMPY\x01\x00\xff\xff{}", 1, 12, f);
    fclose(f);
    expect_reject("lying header length", FF_ERR_IO, "header length says 65535");
    f = fopen(path, "wb");
    fwrite("\x93NUMPY\x02\x00\xff\xff\xff\x7f{}", 1, 14, f);
    fclose(f);
    expect_reject("huge header length", FF_ERR_INVALID, "exceeds");
    f = fopen(path, "wb");
    fwrite("\x93NUM", 1, 4, f);
    fclose(f);
    expect_reject("tiny file", FF_ERR_IO, "too short");
    /* every prefix of a valid file is rejected */
    int64_t s[] = {3};
    ff_tensor *t = ff_ones(1, s, FF_F64);
    CHECK(ff_npy_save(path, t) == FF_OK);
    ff_tensor_release(t);
    unsigned char full[256];
    f = fopen(path, "rb");
    size_t n = fread(full, 1, sizeof full, f);
    fclose(f);
    int rejected = 0;
    for (size_t cut = 0; cut < n; cut++) {
        f = fopen(path, "wb");
        fwrite(full, 1, cut, f);
        fclose(f);
        ff_tensor *r = ff_npy_load(path);
        rejected += r == NULL;
        ff_tensor_release(r);
    }
    CHECK(rejected == (int)n);
    unlink(path);
    rmdir(dir);
    CHECK(ff_debug_live_tensors() == base);
}

FF_TEST_MAIN("io_npy", TEST(test_round_trip), TEST(test_exact_header), TEST(test_versions_and_fortran),
             TEST(test_corrupt))
