/* A small strict JSON reader for file headers (safetensors). Hostile input is the
 * normal case here: every read is bounds-checked, recursion is capped, node count is
 * capped, and any deviation from RFC 8259 is an error with a byte position. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_impl.h"

typedef struct parser {
    const char *s;
    size_t n, i;
    size_t nodes, max_nodes;
    char *err;
    size_t errlen;
    bool failed;
} parser;

static void fail(parser *p, const char *why)
{
    if (p->failed) return;
    p->failed = true;
    snprintf(p->err, p->errlen, "%s at byte %zu", why, p->i);
}

static void skip_ws(parser *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static ff_json *new_node(parser *p, ff_json_type type)
{
    if (p->nodes >= p->max_nodes) {
        fail(p, "too many JSON values");
        return NULL;
    }
    ff_json *j = calloc(1, sizeof *j);
    if (!j) {
        fail(p, "out of memory");
        return NULL;
    }
    p->nodes++;
    j->type = type;
    return j;
}

void ff_json_free(ff_json *j)
{
    while (j) {
        ff_json *next = j->next;
        ff_json_free(j->child); /* depth is capped at parse time */
        free(j->key);
        free(j->str);
        free(j);
        j = next;
    }
}

/* Length of the UTF-8 sequence starting at s[0..n) or 0 if invalid (overlongs,
 * surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned cp, min;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

bool ff_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

static int hex4(parser *p, size_t end, unsigned *out)
{
    if (end < p->i || end - p->i < 4) return -1;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i + (size_t)k];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    p->i += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a string literal at p->i (on the opening quote). The decoded text is never
 * longer than the literal, so one allocation of the literal's length suffices. */
static char *parse_string(parser *p, size_t *out_len)
{
    p->i++; /* opening quote */
    size_t start = p->i, end = start;
    while (end < p->n && p->s[end] != '"') end += (p->s[end] == '\\' && end + 1 < p->n) ? 2 : 1;
    if (end >= p->n) {
        fail(p, "unterminated string");
        return NULL;
    }
    char *o = malloc(end - start + 1);
    if (!o) {
        fail(p, "out of memory");
        return NULL;
    }
    size_t k = 0;
    while (p->i < end) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c < 0x20) {
            fail(p, "control character in string");
            goto bad;
        }
        if (c != '\\') {
            size_t len = utf8_seq((const unsigned char *)p->s + p->i, end - p->i);
            if (!len) {
                fail(p, "invalid UTF-8 in string");
                goto bad;
            }
            memcpy(o + k, p->s + p->i, len);
            k += len;
            p->i += len;
            continue;
        }
        p->i++;
        char e = p->s[p->i++];
        switch (e) {
        case '"': o[k++] = '"'; break;
        case '\\': o[k++] = '\\'; break;
        case '/': o[k++] = '/'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(p, end, &cp)) {
                fail(p, "bad \\u escape");
                goto bad;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(p, "lone low surrogate in \\u escape");
                goto bad;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (p->i + 2 > end || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') {
                    fail(p, "lone high surrogate in \\u escape");
                    goto bad;
                }
                p->i += 2;
                if (hex4(p, end, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    fail(p, "bad surrogate pair in \\u escape");
                    goto bad;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            k += put_utf8(o + k, cp); /* never longer than the 6 or 12 escape bytes */
            break;
        }
        default: fail(p, "bad escape in string"); goto bad;
        }
    }
    if (p->i != end) { /* an escape ran past the closing quote */
        fail(p, "bad escape in string");
        goto bad;
    }
    p->i = end + 1;
    o[k] = '\0';
    *out_len = k;
    return o;
bad:
    free(o);
    return NULL;
}

static void parse_number(parser *p, ff_json *j)
{
    size_t i = p->i;
    bool neg = false, is_int = true, overflow = false;
    int64_t v = 0;
    if (i < p->n && p->s[i] == '-') neg = true, i++;
    if (i >= p->n || p->s[i] < '0' || p->s[i] > '9') {
        fail(p, "bad number");
        return;
    }
    if (p->s[i] == '0') {
        i++;
    } else {
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') {
            int d = p->s[i++] - '0';
            /* accumulate negatively so INT64_MIN fits */
            if (v < (INT64_MIN + d) / 10) overflow = true;
            else v = v * 10 - d;
        }
    }
    if (i < p->n && p->s[i] == '.') {
        is_int = false;
        i++;
        if (i >= p->n || p->s[i] < '0' || p->s[i] > '9') {
            p->i = i;
            fail(p, "bad number fraction");
            return;
        }
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        is_int = false;
        i++;
        if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) i++;
        if (i >= p->n || p->s[i] < '0' || p->s[i] > '9') {
            p->i = i;
            fail(p, "bad number exponent");
            return;
        }
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
    }
    p->i = i;
    if (is_int && !overflow && (neg || v != INT64_MIN)) {
        j->is_int = true;
        j->ival = neg ? v : -v;
    }
}

static ff_json *parse_value(parser *p, int depth);

static ff_json *parse_container(parser *p, int depth, bool object)
{
    ff_json *j = new_node(p, object ? FF_JSON_OBJECT : FF_JSON_ARRAY);
    if (!j) return NULL;
    char close = object ? '}' : ']';
    ff_json **tail = &j->child;
    p->i++;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        return j;
    }
    for (;;) {
        char *key = NULL;
        size_t key_len = 0;
        skip_ws(p);
        if (object) {
            if (p->i >= p->n || p->s[p->i] != '"') {
                fail(p, "expected a string key");
                break;
            }
            if (!(key = parse_string(p, &key_len))) break;
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') {
                free(key);
                fail(p, "expected ':'");
                break;
            }
            p->i++;
        }
        ff_json *c = parse_value(p, depth + 1);
        if (!c) {
            free(key);
            break;
        }
        c->key = key;
        c->key_len = key_len;
        *tail = c;
        tail = &c->next;
        j->count++;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
            return j;
        }
        fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    ff_json_free(j);
    return NULL;
}

static bool literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->n - p->i < n || memcmp(p->s + p->i, word, n) != 0) return false;
    p->i += n;
    return true;
}

static ff_json *parse_value(parser *p, int depth)
{
    if (depth > FF_JSON_MAX_DEPTH) {
        fail(p, "JSON nested too deeply");
        return NULL;
    }
    skip_ws(p);
    if (p->i >= p->n) {
        fail(p, "unexpected end of JSON");
        return NULL;
    }
    char c = p->s[p->i];
    if (c == '{' || c == '[') return parse_container(p, depth, c == '{');
    if (c == '"') {
        ff_json *j = new_node(p, FF_JSON_STRING);
        if (j && !(j->str = parse_string(p, &j->str_len))) {
            ff_json_free(j);
            return NULL;
        }
        return j;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        ff_json *j = new_node(p, FF_JSON_NUMBER);
        if (j) parse_number(p, j);
        if (j && p->failed) {
            ff_json_free(j);
            return NULL;
        }
        return j;
    }
    if (literal(p, "true")) return new_node(p, FF_JSON_TRUE);
    if (literal(p, "false")) return new_node(p, FF_JSON_FALSE);
    if (literal(p, "null")) return new_node(p, FF_JSON_NULL);
    fail(p, "unexpected character");
    return NULL;
}

ff_json *ff_json_parse(const char *text, size_t len, size_t max_nodes, char *err, size_t errlen)
{
    parser p = {text, len, 0, 0, max_nodes, err, errlen, false};
    if (errlen) err[0] = '\0';
    ff_json *j = parse_value(&p, 0);
    if (!j) return NULL;
    skip_ws(&p);
    if (p.i != p.n) {
        fail(&p, "trailing characters after JSON value");
        ff_json_free(j);
        return NULL;
    }
    return j;
}

size_t ff_json_quote(const char *s, char *buf, size_t cap)
{
    size_t k = 0;
#define PUT(ch)                          \
    do {                                 \
        if (k < cap) buf[k] = (char)(ch); \
        k++;                             \
    } while (0)
    PUT('"');
    for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
        if (*u == '"' || *u == '\\') {
            PUT('\\');
            PUT(*u);
        } else if (*u < 0x20) {
            static const char hex[] = "0123456789abcdef";
            PUT('\\'); PUT('u'); PUT('0'); PUT('0');
            PUT(hex[*u >> 4]);
            PUT(hex[*u & 15]);
        } else {
            PUT(*u);
        }
    }
    PUT('"');
#undef PUT
    if (cap) buf[k < cap ? k : cap - 1] = '\0';
    return k;
}
