/* ff_torch_zip_load: a state_dict pickled by torch.save (PyTorch 1.13's exact data.pkl
 * bytes, in a zip written here by hand per the ZIP spec: stored records, CRC-32), views
 * of one storage kept shared, the dtypes, and the refusals: a pickle naming any other
 * global, records whose sizes lie, truncated and non-zip files, views out of bounds;
 * none leaks a tensor. */
#define _XOPEN_SOURCE 700
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ff_impl.h"
#include "ff_test.h"
#include "ff/io.h"

/* torch.save of OrderedDict(a=arange(6.).reshape(2, 3), b=a.t(), c=bf16 [1.5, -2],
 * n=i64 [[3, -4]]) with a state_dict's _metadata (a BUILD), as PyTorch 1.13 pickles it */
static const char torch_pkl[] =
    "\x80\x02\x63\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x0a\x4f\x72\x64\x65\x72\x65\x64\x44\x69"
    "\x63\x74\x0a\x71\x00\x29\x52\x71\x01\x28\x58\x01\x00\x00\x00\x61\x71\x02\x63\x74\x6f\x72\x63\x68"
    "\x2e\x5f\x75\x74\x69\x6c\x73\x0a\x5f\x72\x65\x62\x75\x69\x6c\x64\x5f\x74\x65\x6e\x73\x6f\x72\x5f"
    "\x76\x32\x0a\x71\x03\x28\x28\x58\x07\x00\x00\x00\x73\x74\x6f\x72\x61\x67\x65\x71\x04\x63\x74\x6f"
    "\x72\x63\x68\x0a\x46\x6c\x6f\x61\x74\x53\x74\x6f\x72\x61\x67\x65\x0a\x71\x05\x58\x01\x00\x00\x00"
    "\x30\x71\x06\x58\x03\x00\x00\x00\x63\x70\x75\x71\x07\x4b\x06\x74\x71\x08\x51\x4b\x00\x4b\x02\x4b"
    "\x03\x86\x71\x09\x4b\x03\x4b\x01\x86\x71\x0a\x89\x68\x00\x29\x52\x71\x0b\x74\x71\x0c\x52\x71\x0d"
    "\x58\x01\x00\x00\x00\x62\x71\x0e\x68\x03\x28\x28\x68\x04\x68\x05\x68\x06\x68\x07\x4b\x06\x74\x71"
    "\x0f\x51\x4b\x00\x4b\x03\x4b\x02\x86\x71\x10\x4b\x01\x4b\x03\x86\x71\x11\x89\x68\x00\x29\x52\x71"
    "\x12\x74\x71\x13\x52\x71\x14\x58\x01\x00\x00\x00\x63\x71\x15\x68\x03\x28\x28\x68\x04\x63\x74\x6f"
    "\x72\x63\x68\x0a\x42\x46\x6c\x6f\x61\x74\x31\x36\x53\x74\x6f\x72\x61\x67\x65\x0a\x71\x16\x58\x01"
    "\x00\x00\x00\x31\x71\x17\x68\x07\x4b\x02\x74\x71\x18\x51\x4b\x00\x4b\x02\x85\x71\x19\x4b\x01\x85"
    "\x71\x1a\x89\x68\x00\x29\x52\x71\x1b\x74\x71\x1c\x52\x71\x1d\x58\x01\x00\x00\x00\x6e\x71\x1e\x68"
    "\x03\x28\x28\x68\x04\x63\x74\x6f\x72\x63\x68\x0a\x4c\x6f\x6e\x67\x53\x74\x6f\x72\x61\x67\x65\x0a"
    "\x71\x1f\x58\x01\x00\x00\x00\x32\x71\x20\x68\x07\x4b\x02\x74\x71\x21\x51\x4b\x00\x4b\x01\x4b\x02"
    "\x86\x71\x22\x4b\x02\x4b\x01\x86\x71\x23\x89\x68\x00\x29\x52\x71\x24\x74\x71\x25\x52\x71\x26\x75"
    "\x7d\x71\x27\x58\x09\x00\x00\x00\x5f\x6d\x65\x74\x61\x64\x61\x74\x61\x71\x28\x68\x00\x29\x52\x71"
    "\x29\x58\x00\x00\x00\x00\x71\x2a\x7d\x71\x2b\x58\x07\x00\x00\x00\x76\x65\x72\x73\x69\x6f\x6e\x71"
    "\x2c\x4b\x01\x73\x73\x73\x62\x2e";

static const unsigned char data0[24] = {0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40,
                                        0, 0, 0x80, 0x40, 0, 0, 0xa0, 0x40}; /* 0 1 2 3 4 5 (f32) */
static const unsigned char data1[4] = {0xc0, 0x3f, 0x00, 0xc0};                /* 1.5 -2 (bf16) */
static const unsigned char data2[16] = {3, 0, 0, 0, 0, 0, 0, 0, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static char dir[64], path[128];

static void setup(void)
{
    if (!dir[0]) {
        strcpy(dir, "/tmp/ff_io_tz_XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    snprintf(path, sizeof path, "%s/ckpt.pt", dir);
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

typedef struct record {
    const char *name;
    const void *data;
    size_t n;
} record;

static void put16(FILE *f, unsigned v) { fputc((int)(v & 0xff), f), fputc((int)(v >> 8 & 0xff), f); }
static void put32(FILE *f, uint32_t v) { put16(f, v & 0xffff), put16(f, v >> 16); }

/* A zip of stored records (local headers, central directory, end record). */
static void write_zip(const record *r, int n)
{
    FILE *f = fopen(path, "wb");
    uint32_t offs[16];
    for (int i = 0; i < n; i++) {
        offs[i] = (uint32_t)ftell(f);
        put32(f, 0x04034b50), put16(f, 20), put16(f, 0), put16(f, 0), put16(f, 0), put16(f, 0x21);
        put32(f, crc32_of(r[i].data, r[i].n)), put32(f, (uint32_t)r[i].n), put32(f, (uint32_t)r[i].n);
        put16(f, (unsigned)strlen(r[i].name)), put16(f, 0);
        fputs(r[i].name, f);
        fwrite(r[i].data, 1, r[i].n, f);
    }
    uint32_t cd = (uint32_t)ftell(f);
    for (int i = 0; i < n; i++) {
        put32(f, 0x02014b50), put16(f, 20), put16(f, 20), put16(f, 0), put16(f, 0), put16(f, 0), put16(f, 0x21);
        put32(f, crc32_of(r[i].data, r[i].n)), put32(f, (uint32_t)r[i].n), put32(f, (uint32_t)r[i].n);
        put16(f, (unsigned)strlen(r[i].name)), put16(f, 0), put16(f, 0), put16(f, 0), put16(f, 0);
        put32(f, 0), put32(f, offs[i]);
        fputs(r[i].name, f);
    }
    uint32_t end = (uint32_t)ftell(f);
    put32(f, 0x06054b50), put16(f, 0), put16(f, 0), put16(f, (unsigned)n), put16(f, (unsigned)n);
    put32(f, end - cd), put32(f, cd), put16(f, 0);
    fclose(f);
}

static void write_checkpoint(const char *pkl, size_t npkl, size_t n0)
{
    record r[] = {{"archive/data.pkl", pkl, npkl},
                  {"archive/data/0", data0, n0},
                  {"archive/data/1", data1, sizeof data1},
                  {"archive/data/2", data2, sizeof data2},
                  {"archive/version", "3\n", 2}};
    write_zip(r, 5);
}

static bool built(void)
{
    setup();
    write_checkpoint(torch_pkl, sizeof torch_pkl - 1, sizeof data0);
    ff_tensor_dict *d = ff_torch_zip_load(path);
    if (!d && ff_last_status() == FF_ERR_UNSUPPORTED && strstr(ff_last_error(), "without libzip")) {
        fprintf(stderr, "test_io_torch_zip: built without libzip, only checking that it says so\n");
        return false;
    }
    ff_tensor_dict_free(d);
    return true;
}

static void test_state_dict(void)
{
    if (!built()) return;
    long base = ff_debug_live_tensors();
    ff_tensor_dict *d = ff_torch_zip_load(path);
    CHECK(d && ff_tensor_dict_count(d) == 4);
    if (!d) return;
    const char *names[] = {"a", "b", "c", "n"};
    for (int i = 0; i < 4; i++) CHECK(!strcmp(ff_tensor_dict_name(d, i), names[i]));
    ff_tensor *a = ff_tensor_dict_get(d, "a"), *b = ff_tensor_dict_get(d, "b"), *c = ff_tensor_dict_get(d, "c"),
              *n = ff_tensor_dict_get(d, "n");
    CHECK_TENSOR(a, 2, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5), 0);
    CHECK_TENSOR(b, 2, SHAPE(3, 2), VALS(0, 3, 1, 4, 2, 5), 0);
    CHECK(ff_tensor_strides(b)[0] == 1 && ff_tensor_strides(b)[1] == 3);
    CHECK(ff_tensor_shares_storage(a, b)); /* one storage in torch, one here */
    CHECK(ff_tensor_dtype(c) == FF_BF16);
    CHECK_TENSOR(c, 1, SHAPE(2), VALS(1.5, -2), 0);
    CHECK(ff_tensor_dtype(n) == FF_I64);
    CHECK_TENSOR(n, 2, SHAPE(1, 2), VALS(3, -4), 0);
    CHECK(!ff_tensor_shares_storage(a, c));
    RELEASE(a, b, c, n);
    ff_tensor_dict_free(d);
    CHECK(ff_debug_live_tensors() == base);
}

/* Where needle first is in the n bytes at p (which hold NULs: no strstr). */
static char *find(char *p, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(p + i, needle, k)) return p + i;
    return NULL;
}

/* The same pickle with one GLOBAL swapped for another of the same length. */
static void swap_global(char *pkl, const char *from, const char *to)
{
    char *at = find(pkl, sizeof torch_pkl - 1, from);
    CHECK(at && strlen(from) == strlen(to));
    if (at) memcpy(at, to, strlen(to));
}

static void test_refuses_other_globals(void)
{
    if (!built()) return;
    long base = ff_debug_live_tensors();
    char pkl[sizeof torch_pkl];
    memcpy(pkl, torch_pkl, sizeof pkl);
    swap_global(pkl, "collections\nOrderedDict\n", "os\nsystem\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n");
    write_checkpoint(pkl, sizeof pkl - 1, sizeof data0);
    CHECK_ERROR(!ff_torch_zip_load(path), FF_ERR_INVALID, "pickle names os.system");
    memcpy(pkl, torch_pkl, sizeof pkl);
    swap_global(pkl, "torch\nFloatStorage\n", "torch\nQInt8Storage\n");
    write_checkpoint(pkl, sizeof pkl - 1, sizeof data0);
    CHECK_ERROR(!ff_torch_zip_load(path), FF_ERR_UNSUPPORTED, "torch.QInt8Storage");
    CHECK(ff_debug_live_tensors() == base);
}

static void test_lying_sizes(void)
{
    if (!built()) return;
    long base = ff_debug_live_tensors();
    write_checkpoint(torch_pkl, sizeof torch_pkl - 1, sizeof data0 - 4); /* a storage short of its numel */
    CHECK_ERROR(!ff_torch_zip_load(path), FF_ERR_INVALID, "storage '0' holds 20 bytes, but 6 elements of f32 need 24");
    char pkl[sizeof torch_pkl];
    memcpy(pkl, torch_pkl, sizeof pkl);
    record r[] = {{"archive/data.pkl", pkl, sizeof pkl - 1}, {"archive/version", "3\n", 2}};
    write_zip(r, 2);
    CHECK_ERROR(!ff_torch_zip_load(path), FF_ERR_INVALID, "lacks record 'archive/data/0'");
    /* both of storage 0's persistent ids end "K <numel 6> t": claim 255 elements there */
    int swapped = 0;
    for (char *at; (at = find(pkl, sizeof pkl - 1, "K\x06t")); swapped++) at[1] = (char)0xff;
    CHECK(swapped == 2);
    write_checkpoint(pkl, sizeof pkl - 1, sizeof data0);
    CHECK_ERROR(!ff_torch_zip_load(path), FF_ERR_INVALID, "holds 24 bytes, but 255 elements of f32 need 1020");
    pkl[find(pkl, sizeof pkl - 1, "K\xfft") - pkl + 1] = 6; /* the two ids now disagree */
    write_checkpoint(pkl, sizeof pkl - 1, sizeof data0);
    CHECK_ERROR(!ff_torch_zip_load(path), FF_ERR_INVALID, "storage '0' is named twice with different types");
    CHECK(ff_debug_live_tensors() == base);
}

static void test_truncated_and_not_zip(void)
{
    if (!built()) return;
    long base = ff_debug_live_tensors();
    write_checkpoint(torch_pkl, sizeof torch_pkl - 1, sizeof data0);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *whole = malloc((size_t)size);
    CHECK(fread(whole, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    for (long cut = 0; cut < size; cut += 37) {
        f = fopen(path, "wb");
        fwrite(whole, 1, (size_t)cut, f);
        fclose(f);
        ff_tensor_dict *d = ff_torch_zip_load(path);
        CHECK(!d && strstr(ff_last_error(), path));
        ff_tensor_dict_free(d);
    }
    free(whole);
    f = fopen(path, "wb");
    fputs("\x80\x02}q\x00.", f); /* a pickle: the legacy format, read by the Python side only */
    fclose(f);
    CHECK_ERROR(!ff_torch_zip_load(path), FF_ERR_INVALID, "not a readable PyTorch zip checkpoint");
    record r[] = {{"model.json", "{}", 2}};
    write_zip(r, 1);
    CHECK_ERROR(!ff_torch_zip_load(path), FF_ERR_INVALID, "no <name>/data.pkl record");
    CHECK(ff_debug_live_tensors() == base);
}

static void test_storage_view_bounds(void)
{
    long base = ff_debug_live_tensors();
    ff_tensor *s = ff_test_tensor(FF_F32, 1, SHAPE(6), VALS(0, 1, 2, 3, 4, 5));
    ff_tensor *v = ff_storage_view(s, 2, SHAPE(2, 2), SHAPE(1, 2), 1); /* elements 1 3 / 2 4 */
    CHECK_TENSOR(v, 2, SHAPE(2, 2), VALS(1, 3, 2, 4), 0);
    CHECK(ff_tensor_shares_storage(s, v));
    CHECK_ERROR(!ff_storage_view(s, 2, SHAPE(2, 3), SHAPE(3, 1), 1), FF_ERR_INVALID, "elements [1, 7)");
    CHECK_ERROR(!ff_storage_view(s, 1, SHAPE(2), SHAPE(-1), 3), FF_ERR_INVALID, "must be >= 0");
    CHECK_ERROR(!ff_storage_view(s, 1, SHAPE(0), SHAPE(1), 7), FF_ERR_INVALID, "elements [7, 7)");
    CHECK_ERROR(!ff_storage_view(s, 1, SHAPE(INT64_MAX), SHAPE(INT64_MAX), 0), FF_ERR_OVERFLOW, "overflows");
    ff_tensor *e = ff_storage_view(s, 1, SHAPE(0), SHAPE(1), 6); /* empty, at the end: fine */
    CHECK(e && ff_tensor_numel(e) == 0);
    RELEASE(s, v, e);
    CHECK(ff_debug_live_tensors() == base);
}

FF_TEST_MAIN("io_torch_zip", TEST(test_state_dict), TEST(test_refuses_other_globals), TEST(test_lying_sizes),
             TEST(test_truncated_and_not_zip), TEST(test_storage_view_bounds))
