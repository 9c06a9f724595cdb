/* BERT's text normalization (HF tokenizers' BertNormalizer and BertPreTokenizer) on
 * Unicode code points, with small tables instead of a Unicode library:
 *
 *   clean_text     drops U+0000, U+FFFD and "other" characters (Cc, Cf, Co: controls,
 *                  format characters such as soft hyphens and zero-width spaces, private
 *                  use), except tab/newline/return; maps White_Space to ' '
 *   chinese chars  puts spaces around CJK ideographs (the CJK Unified Ideographs blocks
 *                  and their extensions A-E, the compatibility ideographs)
 *   strip_accents  NFD, then drops nonspacing marks (Mn). Decompositions covered: Latin-1
 *                  Supplement and Latin Extended-A (U+00C0-U+017F), Greek and Coptic,
 *                  Cyrillic (U+0370-U+045F), the Ohm, Kelvin and Angstrom signs. Marks
 *                  dropped: Combining Diacritical Marks (U+0300-U+036F) and its supplement,
 *                  extended block, Cyrillic and symbol marks, half marks, the ideographic
 *                  tone marks and the combining kana voicing marks (precomposed kana such
 *                  as U+304C are not decomposed).
 *   lowercase      ASCII, Latin-1, Latin Extended-A, Greek and Coptic, Cyrillic
 *                  (U+0400-U+042F), full-width A-Z; character by character as HF does
 *                  (a final sigma becomes sigma)
 *   punctuation    ASCII punctuation, plus Unicode's P* in Latin-1, Greek, Armenian,
 *                  Hebrew, General and Supplemental Punctuation, the brackets among the
 *                  symbols, CJK punctuation, vertical, small and full-width forms
 *
 * Text outside these tables passes through unchanged: a precomposed letter of another
 * block (Vietnamese, say) keeps its accent and is then usually [UNK]. The tables were
 * generated from Python's unicodedata (Unicode 14) and tests/python/test_minilm.py
 * checks every character of the covered blocks against it. */
#include <stdlib.h>

#include "minilm.h"

typedef struct { uint32_t lo, hi; } cp_range;

static int in_ranges(uint32_t cp, const cp_range *r, size_t n)
{
    size_t a = 0, b = n; /* sorted, disjoint: binary search */
    while (a < b) {
        size_t m = (a + b) / 2;
        if (cp < r[m].lo) b = m;
        else if (cp > r[m].hi) a = m + 1;
        else return 1;
    }
    return 0;
}
#define IN(cp, table) in_ranges((cp), (table), sizeof(table) / sizeof(table)[0])

/* Cc, Cf, Co in the blocks above, and the supplementary private use planes. */
static const cp_range other_chars[] = {
    {0x0000, 0x0008}, {0x000E, 0x001F}, {0x007F, 0x009F}, {0x00AD, 0x00AD}, {0x200B, 0x200F},
    {0x202A, 0x202E}, {0x2060, 0x2064}, {0x2066, 0x206F}, {0xE000, 0xF8FF}, {0xFEFF, 0xFEFF},
    {0xFFF9, 0xFFFB}, {0xF0000, 0x10FFFF}};
/* White_Space (Rust's char::is_whitespace, which HF uses); 0x0B, 0x0C and 0x85 are
 * controls, removed before this applies in clean_text. */
static const cp_range white_space[] = {
    {0x0009, 0x000D}, {0x0020, 0x0020}, {0x0085, 0x0085}, {0x00A0, 0x00A0}, {0x1680, 0x1680},
    {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}};
static const cp_range cjk[] = {
    {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xF900, 0xFAFF}, {0x20000, 0x2A6DF},
    {0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B820, 0x2CEAF}, {0x2F800, 0x2FA1F}};
static const cp_range nonspacing_marks[] = {
    {0x0300, 0x036F}, {0x0483, 0x0487}, {0x1AB0, 0x1ABD}, {0x1ABF, 0x1ACE}, {0x1DC0, 0x1DFF},
    {0x20D0, 0x20DC}, {0x20E1, 0x20E1}, {0x20E5, 0x20F0}, {0x302A, 0x302D}, {0x3099, 0x309A},
    {0xFE20, 0xFE2F}};
static const cp_range punctuation[] = {
    {0x00A1, 0x00A1}, {0x00A7, 0x00A7}, {0x00AB, 0x00AB}, {0x00B6, 0x00B7}, {0x00BB, 0x00BB},
    {0x00BF, 0x00BF}, {0x037E, 0x037E}, {0x0387, 0x0387}, {0x055A, 0x055F}, {0x0589, 0x058A},
    {0x05BE, 0x05BE}, {0x05C0, 0x05C0}, {0x05C3, 0x05C3}, {0x05C6, 0x05C6}, {0x05F3, 0x05F4},
    {0x2010, 0x2027}, {0x2030, 0x2043}, {0x2045, 0x2051}, {0x2053, 0x205E}, {0x207D, 0x207E},
    {0x208D, 0x208E}, {0x2308, 0x230B}, {0x2329, 0x232A}, {0x2768, 0x2775}, {0x27C5, 0x27C6},
    {0x27E6, 0x27EF}, {0x2983, 0x2998}, {0x29D8, 0x29DB}, {0x29FC, 0x29FD}, {0x2CF9, 0x2CFC},
    {0x2CFE, 0x2CFF}, {0x2D70, 0x2D70}, {0x2E00, 0x2E2E}, {0x2E30, 0x2E4F}, {0x2E52, 0x2E5D},
    {0x3001, 0x3003}, {0x3008, 0x3011}, {0x3014, 0x301F}, {0x3030, 0x3030}, {0x303D, 0x303D},
    {0xFE10, 0xFE19}, {0xFE30, 0xFE52}, {0xFE54, 0xFE61}, {0xFE63, 0xFE63}, {0xFE68, 0xFE68},
    {0xFE6A, 0xFE6B}, {0xFF01, 0xFF03}, {0xFF05, 0xFF0A}, {0xFF0C, 0xFF0F}, {0xFF1A, 0xFF1B},
    {0xFF1F, 0xFF20}, {0xFF3B, 0xFF3D}, {0xFF3F, 0xFF3F}, {0xFF5B, 0xFF5B}, {0xFF5D, 0xFF5D},
    {0xFF5F, 0xFF65}};

/* NFD's first code point for U+00C0..U+017F ('.': the letter does not decompose). */
static const char latin_base[] =
    "AAAAAA.CEEEEIIII.NOOOOO..UUUUY.." /* U+00C0 */
    "aaaaaa.ceeeeiiii.nooooo..uuuuy.y" /* U+00E0 */
    "AaAaAaCcCcCcCcDd..EeEeEeEeEeGgGg" /* U+0100 */
    "GgGgHh..IiIiIiIiI...JjKk.LlLlLl." /* U+0120 */
    "...NnNnNn...OoOoOo..RrRrRrSsSsSs" /* U+0140 */
    "SsTtTt..UuUuUuUuUuUuWwYyYZzZzZz."; /* U+0160 */
/* The same for Greek, Cyrillic and three letterlike symbols: {code point, NFD's first}. */
static const uint32_t other_base[][2] = {
    {0x0374, 0x02B9}, {0x037E, 0x003B}, {0x0385, 0x00A8}, {0x0386, 0x0391}, {0x0387, 0x00B7},
    {0x0388, 0x0395}, {0x0389, 0x0397}, {0x038A, 0x0399}, {0x038C, 0x039F}, {0x038E, 0x03A5},
    {0x038F, 0x03A9}, {0x0390, 0x03B9}, {0x03AA, 0x0399}, {0x03AB, 0x03A5}, {0x03AC, 0x03B1},
    {0x03AD, 0x03B5}, {0x03AE, 0x03B7}, {0x03AF, 0x03B9}, {0x03B0, 0x03C5}, {0x03CA, 0x03B9},
    {0x03CB, 0x03C5}, {0x03CC, 0x03BF}, {0x03CD, 0x03C5}, {0x03CE, 0x03C9}, {0x03D3, 0x03D2},
    {0x03D4, 0x03D2}, {0x0400, 0x0415}, {0x0401, 0x0415}, {0x0403, 0x0413}, {0x0407, 0x0406},
    {0x040C, 0x041A}, {0x040D, 0x0418}, {0x040E, 0x0423}, {0x0419, 0x0418}, {0x0439, 0x0438},
    {0x0450, 0x0435}, {0x0451, 0x0435}, {0x0453, 0x0433}, {0x0457, 0x0456}, {0x045C, 0x043A},
    {0x045D, 0x0438}, {0x045E, 0x0443}, {0x2126, 0x03A9}, {0x212A, 0x004B}, {0x212B, 0x0041}};

int minilm_is_whitespace(uint32_t cp) { return IN(cp, white_space); }

int minilm_is_punctuation(uint32_t cp)
{
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
        return 1; /* all ASCII non-letters/digits count, $ + < = > ^ ` | ~ included, as BERT's */
    return IN(cp, punctuation);
}

static uint32_t strip_base(uint32_t cp)
{
    if (cp >= 0xC0 && cp <= 0x17F) return latin_base[cp - 0xC0] == '.' ? cp : (uint32_t)latin_base[cp - 0xC0];
    for (size_t i = 0; i < sizeof other_base / sizeof other_base[0]; i++)
        if (other_base[i][0] == cp) return other_base[i][1];
    return cp;
}

/* Greek and Coptic's case pairs beside the alphabet's +32 and the even/odd run. */
static const uint32_t greek_lower[][2] = {
    {0x0370, 0x0371}, {0x0372, 0x0373}, {0x0376, 0x0377}, {0x037F, 0x03F3}, {0x0386, 0x03AC}, {0x0388, 0x03AD},
    {0x0389, 0x03AE}, {0x038A, 0x03AF}, {0x038C, 0x03CC}, {0x038E, 0x03CD}, {0x038F, 0x03CE}, {0x03CF, 0x03D7},
    {0x03F4, 0x03B8}, {0x03F7, 0x03F8}, {0x03F9, 0x03F2}, {0x03FA, 0x03FB}, {0x03FD, 0x037B}, {0x03FE, 0x037C},
    {0x03FF, 0x037D}};

static uint32_t lower(uint32_t cp)
{
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp < 0xC0) return cp;
    if (cp <= 0xDE) return cp == 0xD7 ? cp : cp + 32;
    if (cp >= 0x100 && cp <= 0x17F) { /* Latin Extended-A: case pairs, upper first */
        if (cp == 0x130) return 'i'; /* never reached after strip_accents: NFD gives I */
        if (cp == 0x178) return 0xFF;
        int upper_even = (cp <= 0x137) || (cp >= 0x14A && cp <= 0x177);
        int upper_odd = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
        if ((upper_even && cp % 2 == 0) || (upper_odd && cp % 2 == 1)) return cp + 1;
        return cp;
    }
    if (cp >= 0x370 && cp <= 0x3FF) {
        if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 32;
        if (cp >= 0x3D8 && cp <= 0x3EF) return cp | 1;
        for (size_t i = 0; i < sizeof greek_lower / sizeof greek_lower[0]; i++)
            if (greek_lower[i][0] == cp) return greek_lower[i][1];
        return cp;
    }
    if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
    if (cp >= 0xFF21 && cp <= 0xFF3A) return cp + 32; /* full-width A-Z */
    return cp;
}

uint32_t *minilm_utf8_decode(const char *str, size_t *n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t len = 0;
    while (s[len]) len++;
    uint32_t *out = malloc((len + 1) * sizeof *out);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
        uint32_t cp = extra == 0 ? c : extra == 1 ? (c & 0x1F) : extra == 2 ? (c & 0x0F) : (c & 0x07);
        int ok = extra >= 0 && i + (size_t)extra < len;
        for (int j = 1; ok && j <= extra; j++) {
            if ((s[i + j] & 0xC0) != 0x80) ok = 0;
            else cp = cp << 6 | (s[i + j] & 0x3F);
        }
        static const uint32_t min_for[] = {0, 0x80, 0x800, 0x10000};
        if (ok && (cp < min_for[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = 0;
        out[k++] = ok ? cp : 0xFFFD; /* overlong forms, surrogates, stray bytes */
        i += ok ? (size_t)extra + 1 : 1;
    }
    *n = k;
    return out;
}

int minilm_utf8_encode(uint32_t cp, char *o)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

uint32_t *minilm_normalize(const uint32_t *in, size_t n_in, const minilm_norm_opts *o, size_t *n)
{
    uint32_t *out = malloc((3 * n_in + 1) * sizeof *out); /* a CJK char becomes three */
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n_in; i++) {
        uint32_t cp = in[i];
        if (o->clean_text) {
            if (cp == 0 || cp == 0xFFFD || (IN(cp, other_chars) && cp != '\t' && cp != '\n' && cp != '\r')) continue;
            if (minilm_is_whitespace(cp)) cp = ' ';
        }
        if (o->handle_chinese_chars && IN(cp, cjk)) {
            out[k++] = ' ';
            out[k++] = cp;
            out[k++] = ' ';
            continue;
        }
        if (o->strip_accents) {
            if (IN(cp, nonspacing_marks)) continue;
            cp = strip_base(cp);
        }
        out[k++] = o->lowercase ? lower(cp) : cp;
    }
    *n = k;
    return out;
}
