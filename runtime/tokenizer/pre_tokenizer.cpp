// Hand-written equivalents of the Hugging Face Split/Digits pre-tokenizers. Each matcher returns the end
// of the regex match starting at code point i (or i when no alternative matches), mirroring the pattern's
// alternation order and greedy backtracking; a stage then splits every piece "Isolated"-style.
#include "runtime/tokenizer/pre_tokenizer.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <iterator>
#include <string>

namespace sluice::tokenizer {
namespace {

using std::size_t;
namespace f = cp_flag;

/// The text decoded once: code points, their flags and byte offsets (offset[n] is the text size).
struct cp_text {
    std::vector<std::uint32_t> cp;
    std::vector<std::uint8_t> fl;
    std::vector<std::uint32_t> offset;
};

void decode_all(std::string_view text, cp_text& t) {
    t.cp.clear();
    t.fl.clear();
    t.offset.clear();
    for (size_t pos = 0; pos < text.size();) {
        size_t len = 1;
        const std::uint32_t c = decode_utf8(text, pos, len);
        t.cp.push_back(c);
        t.fl.push_back(flags_of(c));
        t.offset.push_back(static_cast<std::uint32_t>(pos));
        pos += len;
    }
    t.offset.push_back(static_cast<std::uint32_t>(text.size()));
}

struct span {
    size_t begin;
    size_t end;
};

using matcher = size_t (*)(const cp_text&, size_t i, size_t end);

// Pattern character classes.
bool is_l(const cp_text& t, size_t i) {
    return t.fl[i] & f::letter;
}
bool is_n(const cp_text& t, size_t i) {
    return t.fl[i] & f::number;
}
bool is_s(const cp_text& t, size_t i) {
    return t.fl[i] & f::space;
}
bool is_crlf(const cp_text& t, size_t i) {
    return t.cp[i] == '\r' || t.cp[i] == '\n';
}
bool is_other(const cp_text& t, size_t i) {
    return !(t.fl[i] & (f::space | f::letter | f::number));
}
bool is_not_crlf_l_n(const cp_text& t, size_t i) {
    return !is_crlf(t, i) && !(t.fl[i] & (f::letter | f::number));
}

template <class Pred>
size_t run(const cp_text& t, size_t i, size_t end, Pred p) {
    while (i < end && p(t, i))
        ++i;
    return i;
}

char ascii_lower(std::uint32_t c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : static_cast<char>(c);
}

/// 's|'t|'re|'ve|'m|'ll|'d, optionally ASCII case-insensitive.
size_t contraction(const cp_text& t, size_t i, size_t end, bool ci) {
    if (i + 1 >= end || t.cp[i] != '\'')
        return i;
    auto ch = [&](size_t k) -> char {
        if (t.cp[k] >= 128)
            return 0;
        return ci ? ascii_lower(t.cp[k]) : static_cast<char>(t.cp[k]);
    };
    const char a = ch(i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return i + 2;
    if (i + 2 >= end)
        return i;
    const char b = ch(i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return i + 3;
    return i;
}

/// \s+(?!\S)|\s+ at a white-space character.
size_t trailing_space(const cp_text& t, size_t i, size_t end) {
    const size_t k = run(t, i, end, is_s);
    if (k == end || k - 1 == i)
        return k;
    return k - 1;
}

/// \s*[\r\n]+ : white space up to and including the last line break of the run; i when none.
size_t space_to_newline(const cp_text& t, size_t i, size_t end) {
    const size_t k = run(t, i, end, is_s);
    for (size_t p = k; p > i; --p) {
        if (is_crlf(t, p - 1))
            return p;
    }
    return i;
}

/// The final \s*[\r\n]+|\s+(?!\S)|\s+ alternatives shared by the newer patterns.
size_t space_tail(const cp_text& t, size_t i, size_t end) {
    if (!is_s(t, i))
        return i;
    const size_t nl = space_to_newline(t, i, end);
    if (nl > i)
        return nl;
    return trailing_space(t, i, end);
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t match_gpt2(const cp_text& t, size_t i, size_t end) {
    if (size_t k = contraction(t, i, end, false); k > i)
        return k;
    const size_t j = (t.cp[i] == ' ' && i + 1 < end) ? i + 1 : i;
    if (is_l(t, j))
        return run(t, j, end, is_l);
    if (is_n(t, j))
        return run(t, j, end, is_n);
    if (is_other(t, j))
        return run(t, j, end, is_other);
    if (is_s(t, i))
        return trailing_space(t, i, end);
    return i;
}

// (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
template <size_t MaxDigits>
size_t match_llama3(const cp_text& t, size_t i, size_t end) {
    if (size_t k = contraction(t, i, end, true); k > i)
        return k;
    if (is_not_crlf_l_n(t, i) && i + 1 < end && is_l(t, i + 1))
        return run(t, i + 1, end, is_l);
    if (is_l(t, i))
        return run(t, i, end, is_l);
    if (is_n(t, i)) {
        size_t k = i;
        while (k < end && k - i < MaxDigits && is_n(t, k))
            ++k;
        return k;
    }
    const size_t j = (t.cp[i] == ' ' && i + 1 < end) ? i + 1 : i;
    if (is_other(t, j))
        return run(t, run(t, j, end, is_other), end, is_crlf);
    return space_tail(t, i, end);
}

// Qwen3.5: (?i:'s|...)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// The optional prefix may itself be a mark: then the letter-and-mark run from the prefix ends where the run from
// the next character does, so testing the prefix alternative first covers the backtracking.
bool is_letter_or_mark(const cp_text& t, size_t i) {
    return t.fl[i] & (f::letter | f::mark);
}
bool is_other_than_mark(const cp_text& t, size_t i) {
    return !(t.fl[i] & (f::space | f::letter | f::mark | f::number));
}

size_t match_qwen35(const cp_text& t, size_t i, size_t end) {
    if (size_t k = contraction(t, i, end, true); k > i)
        return k;
    if (is_not_crlf_l_n(t, i) && i + 1 < end && is_letter_or_mark(t, i + 1))
        return run(t, i + 1, end, is_letter_or_mark);
    if (is_letter_or_mark(t, i))
        return run(t, i, end, is_letter_or_mark);
    if (is_n(t, i))
        return i + 1;
    const size_t j = (t.cp[i] == ' ' && i + 1 < end) ? i + 1 : i;
    if (is_other_than_mark(t, j))
        return run(t, run(t, j, end, is_other_than_mark), end, is_crlf);
    return space_tail(t, i, end);
}

// gpt-oss classes: A = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], B = [\p{Ll}\p{Lm}\p{Lo}\p{M}].
bool is_a(const cp_text& t, size_t i) {
    const auto v = t.fl[i];
    return (v & f::mark) || ((v & f::letter) && !(v & f::lower));
}
bool is_b(const cp_text& t, size_t i) {
    const auto v = t.fl[i];
    return (v & f::mark) || ((v & f::letter) && !(v & f::upper));
}

/// A*B+ from j with regex backtracking; returns j when it cannot match.
size_t a_star_b_plus(const cp_text& t, size_t j, size_t end) {
    const size_t a = run(t, j, end, is_a);
    if (a < end && is_b(t, a))
        return run(t, a, end, is_b);
    for (size_t r = a; r > j; --r) {
        if (is_b(t, r - 1))
            return r;
    }
    return j;
}

size_t with_contraction(const cp_text& t, size_t k, size_t end) {
    const size_t c = contraction(t, k, end, true);
    return c > k ? c : k;
}

size_t match_gpt_oss(const cp_text& t, size_t i, size_t end) {
    const bool prefix = is_not_crlf_l_n(t, i) && i + 1 < end;
    // [^\r\n\p{L}\p{N}]?A*B+contraction?
    if (prefix) {
        if (size_t k = a_star_b_plus(t, i + 1, end); k > i + 1)
            return with_contraction(t, k, end);
    }
    if (size_t k = a_star_b_plus(t, i, end); k > i)
        return with_contraction(t, k, end);
    // [^\r\n\p{L}\p{N}]?A+B*contraction?
    for (size_t j : {prefix ? i + 1 : i, i}) {
        const size_t a = run(t, j, end, is_a);
        if (a > j)
            return with_contraction(t, run(t, a, end, is_b), end);
    }
    if (is_n(t, i)) {
        size_t k = i;
        while (k < end && k - i < 3 && is_n(t, k))
            ++k;
        return k;
    }
    const size_t j = (t.cp[i] == ' ' && i + 1 < end) ? i + 1 : i;
    if (is_other(t, j)) {
        return run(t, run(t, j, end, is_other), end,
                   [](const cp_text& x, size_t k) { return is_crlf(x, k) || x.cp[k] == '/'; });
    }
    return space_tail(t, i, end);
}

// Kimi-K2 (tiktoken pat_str):
// [\p{Han}]+|[^\r\n\p{L}\p{N}]?[A&&[^\p{Han}]]*[B&&[^\p{Han}]]+(?i:'s|...)?|[^\r\n\p{L}\p{N}]?[A&&[^\p{Han}]]+
// [B&&[^\p{Han}]]*(?i:'s|...)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with A and B the o200k classes above.
struct cp_range32 {
    std::uint32_t first;
    std::uint32_t last;
};
/// Script=Han (Unicode 15.1): radicals, ideographs, the iteration and numeral marks, compatibility forms.
constexpr cp_range32 han_ranges[] = {
    {0x2E80, 0x2E99},   {0x2E9B, 0x2EF3},   {0x2F00, 0x2FD5},   {0x3005, 0x3005},   {0x3007, 0x3007},
    {0x3021, 0x3029},   {0x3038, 0x303B},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xF900, 0xFA6D},
    {0xFA70, 0xFAD9},   {0x16FE2, 0x16FE3}, {0x16FF0, 0x16FF1}, {0x20000, 0x2A6DF}, {0x2A700, 0x2B739},
    {0x2B740, 0x2B81D}, {0x2B820, 0x2CEA1}, {0x2CEB0, 0x2EBE0}, {0x2EBF0, 0x2EE5D}, {0x2F800, 0x2FA1D},
    {0x30000, 0x3134A}, {0x31350, 0x323AF},
};
bool is_han(const cp_text& t, size_t i) {
    const auto c = t.cp[i];
    if (c < 0x2E80)
        return false;
    const auto* end = std::end(han_ranges);
    const auto* it = std::upper_bound(std::begin(han_ranges), end, c,
                                      [](std::uint32_t v, const cp_range32& r) { return v < r.first; });
    return it != std::begin(han_ranges) && c <= (it - 1)->last;
}
bool is_a_not_han(const cp_text& t, size_t i) {
    return is_a(t, i) && !is_han(t, i);
}
bool is_b_not_han(const cp_text& t, size_t i) {
    return is_b(t, i) && !is_han(t, i);
}

/// A*B+ (Han excluded) from j with regex backtracking; returns j when it cannot match.
size_t a_star_b_plus_not_han(const cp_text& t, size_t j, size_t end) {
    const size_t a = run(t, j, end, is_a_not_han);
    if (a < end && is_b_not_han(t, a))
        return run(t, a, end, is_b_not_han);
    for (size_t r = a; r > j; --r) {
        if (is_b_not_han(t, r - 1))
            return r;
    }
    return j;
}

size_t match_kimi_k2(const cp_text& t, size_t i, size_t end) {
    if (is_han(t, i))
        return run(t, i, end, is_han);
    const bool prefix = is_not_crlf_l_n(t, i) && i + 1 < end;
    if (prefix) {
        if (size_t k = a_star_b_plus_not_han(t, i + 1, end); k > i + 1)
            return with_contraction(t, k, end);
    }
    if (size_t k = a_star_b_plus_not_han(t, i, end); k > i)
        return with_contraction(t, k, end);
    for (size_t j : {prefix ? i + 1 : i, i}) {
        const size_t a = run(t, j, end, is_a_not_han);
        if (a > j)
            return with_contraction(t, run(t, a, end, is_b_not_han), end);
    }
    if (is_n(t, i)) {
        size_t k = i;
        while (k < end && k - i < 3 && is_n(t, k))
            ++k;
        return k;
    }
    const size_t j = (t.cp[i] == ' ' && i + 1 < end) ? i + 1 : i;
    if (is_other(t, j))
        return run(t, run(t, j, end, is_other), end, is_crlf);
    return space_tail(t, i, end);
}

// DeepSeek V3 third split:
// [!-/:-@[-`{-~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
bool is_ascii_punct(const cp_text& t, size_t i) {
    const auto c = t.cp[i];
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}
bool is_ascii_alpha(const cp_text& t, size_t i) {
    const auto c = t.cp[i] | 0x20;
    return c >= 'a' && c <= 'z';
}
bool is_lm(const cp_text& t, size_t i) {
    return t.fl[i] & (f::letter | f::mark);
}
bool is_ps(const cp_text& t, size_t i) {
    return t.fl[i] & (f::punct | f::symbol);
}

size_t match_deepseek_v3(const cp_text& t, size_t i, size_t end) {
    if (is_ascii_punct(t, i) && i + 1 < end && is_ascii_alpha(t, i + 1))
        return run(t, i + 1, end, is_ascii_alpha);
    const bool prefix = !is_crlf(t, i) && !(t.fl[i] & (f::letter | f::punct | f::symbol));
    if (prefix && i + 1 < end && is_lm(t, i + 1))
        return run(t, i + 1, end, is_lm);
    if (is_lm(t, i))
        return run(t, i, end, is_lm);
    const size_t j = (t.cp[i] == ' ' && i + 1 < end) ? i + 1 : i;
    if (is_ps(t, j))
        return run(t, run(t, j, end, is_ps), end, is_crlf);
    return space_tail(t, i, end);
}

// \p{N}{1,3}
size_t match_digits3(const cp_text& t, size_t i, size_t end) {
    size_t k = i;
    while (k < end && k - i < 3 && is_n(t, k))
        ++k;
    return k;
}

// \p{N} (also the Digits pre-tokenizer with individual_digits)
size_t match_digit(const cp_text& t, size_t i, size_t) {
    return is_n(t, i) ? i + 1 : i;
}

// [\r\n]
size_t match_newline(const cp_text& t, size_t i, size_t) {
    return is_crlf(t, i) ? i + 1 : i;
}

// [一-龥぀-ゟ゠-ヿ]+
bool is_cjk_kana(const cp_text& t, size_t i) {
    const auto c = t.cp[i];
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x30FF);
}
size_t match_cjk_kana(const cp_text& t, size_t i, size_t end) {
    return run(t, i, end, is_cjk_kana);
}

// [一-龥ࠀ-一가-퟿]+
bool is_cjk_wide(const cp_text& t, size_t i) {
    const auto c = t.cp[i];
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x0800 && c <= 0x4E00) || (c >= 0xAC00 && c <= 0xD7FF);
}
size_t match_cjk_wide(const cp_text& t, size_t i, size_t end) {
    return run(t, i, end, is_cjk_wide);
}

// \s?\p{L}+
size_t match_space_letters(const cp_text& t, size_t i, size_t end) {
    if (is_s(t, i) && i + 1 < end && is_l(t, i + 1))
        return run(t, i + 1, end, is_l);
    return run(t, i, end, is_l);
}

// \s?\p{P}+
bool is_p(const cp_text& t, size_t i) {
    return t.fl[i] & f::punct;
}
size_t match_space_punct(const cp_text& t, size_t i, size_t end) {
    if (is_s(t, i) && i + 1 < end && is_p(t, i + 1))
        return run(t, i + 1, end, is_p);
    return run(t, i, end, is_p);
}

// \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+ : DeepSeek LLM's explicit list of (mostly cased) letter ranges, as the
// tokenizer.json spells it; scripts outside the list (Arabic, Han, ...) fall through as gaps.
struct cp_range {
    std::uint32_t first;
    std::uint32_t last;
};
constexpr cp_range deepseek_llm_letters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

bool is_cased(const cp_text& t, size_t i) {
    const auto c = t.cp[i];
    if (c < 0x80)
        return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    const auto* end = std::end(deepseek_llm_letters);
    const auto* it = std::upper_bound(std::begin(deepseek_llm_letters), end, c,
                                      [](std::uint32_t v, const cp_range& r) { return v < r.first; });
    return it != std::begin(deepseek_llm_letters) && c <= (it - 1)->last;
}
size_t match_space_cased(const cp_text& t, size_t i, size_t end) {
    if (is_s(t, i) && i + 1 < end && is_cased(t, i + 1))
        return run(t, i + 1, end, is_cased);
    return run(t, i, end, is_cased);
}

// \s?[!-/:-~！-／：-～‘-‟　-。]+
bool is_ds_punct(const cp_text& t, size_t i) {
    const auto c = t.cp[i];
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x7E) || (c >= 0xFF01 && c <= 0xFF0F) ||
           (c >= 0xFF1A && c <= 0xFF5E) || (c >= 0x2018 && c <= 0x201F) || (c >= 0x3000 && c <= 0x3002);
}
size_t match_space_ds_punct(const cp_text& t, size_t i, size_t end) {
    if (is_s(t, i) && i + 1 < end && is_ds_punct(t, i + 1))
        return run(t, i + 1, end, is_ds_punct);
    return run(t, i, end, is_ds_punct);
}

// \s+$
size_t match_final_space(const cp_text& t, size_t i, size_t end) {
    const size_t k = run(t, i, end, is_s);
    return k == end ? k : i;
}

/// Splits every span of `pieces` at the matches of `m` (matches and the gaps between them become pieces).
void split_stage(const cp_text& t, std::vector<span>& pieces, std::vector<span>& scratch, matcher m) {
    scratch.clear();
    for (const span s : pieces) {
        size_t gap = s.begin;
        for (size_t i = s.begin; i < s.end;) {
            const size_t k = m(t, i, s.end);
            if (k == i) {
                ++i;
                continue;
            }
            if (gap < i)
                scratch.push_back({gap, i});
            scratch.push_back({i, k});
            i = gap = k;
        }
        if (gap < s.end)
            scratch.push_back({gap, s.end});
    }
    pieces.swap(scratch);
}

struct stage_list {
    const matcher* stages;
    size_t count;
};

stage_list stages_for(pre_tokenizer_kind kind) {
    static const matcher gpt2[] = {match_gpt2};
    static const matcher llama3[] = {match_llama3<3>};
    static const matcher qwen2[] = {match_llama3<1>};
    static const matcher gpt_oss[] = {match_gpt_oss};
    static const matcher qwen35[] = {match_qwen35};
    static const matcher kimi_k2[] = {match_kimi_k2};
    static const matcher deepseek_v3[] = {match_digits3, match_cjk_kana, match_deepseek_v3};
    static const matcher starcoder[] = {match_digit, match_gpt2};
    static const matcher deepseek_coder[] = {match_newline, match_space_letters, match_space_punct, match_cjk_wide,
                                             match_digit};
    static const matcher deepseek_llm[] = {match_newline,     match_space_cased, match_space_ds_punct,
                                           match_final_space, match_cjk_wide,    match_digit};
    switch (kind) {
    case pre_tokenizer_kind::gpt2:
        return {gpt2, 1};
    case pre_tokenizer_kind::llama3:
        return {llama3, 1};
    case pre_tokenizer_kind::qwen2:
        return {qwen2, 1};
    case pre_tokenizer_kind::gpt_oss:
        return {gpt_oss, 1};
    case pre_tokenizer_kind::qwen35:
        return {qwen35, 1};
    case pre_tokenizer_kind::kimi_k2:
        return {kimi_k2, 1};
    case pre_tokenizer_kind::deepseek_v3:
        return {deepseek_v3, 3};
    case pre_tokenizer_kind::starcoder:
        return {starcoder, 2};
    case pre_tokenizer_kind::deepseek_coder:
        return {deepseek_coder, 5};
    case pre_tokenizer_kind::deepseek_llm:
        return {deepseek_llm, 6};
    case pre_tokenizer_kind::none:
        break;
    }
    return {nullptr, 0};
}

} // namespace

std::optional<pre_tokenizer_kind> pre_tokenizer_from_name(std::string_view name) {
    using k = pre_tokenizer_kind;
    if (name == "default" || name.empty())
        return k::none;
    if (name == "gpt-2" || name == "gpt2" || name == "mpt" || name == "gpt-neox" || name == "olmo")
        return k::gpt2;
    // GLM-4.5's split pattern is Llama 3's (llama.cpp names it glm4 / chatglm-bpe).
    if (name == "llama3" || name == "llama-v3" || name == "llama-bpe" || name == "glm4" || name == "chatglm-bpe")
        return k::llama3;
    if (name == "qwen2" || name == "qwen3")
        return k::qwen2;
    if (name == "deepseek-llm")
        return k::deepseek_llm;
    if (name == "deepseek-coder")
        return k::deepseek_coder;
    if (name == "deepseek-v3")
        return k::deepseek_v3;
    if (name == "starcoder" || name == "refact")
        return k::starcoder;
    if (name == "gpt-4o" || name == "gpt-oss")
        return k::gpt_oss;
    if (name == "qwen35")
        return k::qwen35;
    if (name == "kimi-k2")
        return k::kimi_k2;
    return std::nullopt;
}

void pre_tokenize(pre_tokenizer_kind kind, std::string_view text, std::vector<text_span>& out) {
    out.clear();
    if (text.empty())
        return;
    const stage_list list = stages_for(kind);
    if (list.count == 0) {
        out.push_back({0, static_cast<std::uint32_t>(text.size())});
        return;
    }
    thread_local cp_text t;
    thread_local std::vector<span> pieces;
    thread_local std::vector<span> scratch;
    decode_all(text, t);
    pieces.assign(1, span{0, t.cp.size()});
    for (size_t s = 0; s < list.count; ++s)
        split_stage(t, pieces, scratch, list.stages[s]);
    out.reserve(pieces.size());
    for (const span s : pieces)
        out.push_back({t.offset[s.begin], t.offset[s.end]});
}

} // namespace sluice::tokenizer
