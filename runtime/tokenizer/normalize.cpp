// NFC normalisation (UAX #15): a quick-check scan that returns NFC text untouched, and the full algorithm
// (decompose, reorder by combining class, recompose) from the last safe boundary onwards.
#include "runtime/tokenizer/normalize.hpp"

#include "runtime/tokenizer/normalization_tables.hpp"
#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <vector>

namespace sluice::tokenizer {
namespace {

using detail::quick_check;

// Hangul syllable arithmetic (Unicode chapter 3.12).
constexpr std::uint32_t s_base = 0xAC00, l_base = 0x1100, v_base = 0x1161, t_base = 0x11A7;
constexpr std::uint32_t l_count = 19, v_count = 21, t_count = 28, n_count = v_count * t_count;
constexpr std::uint32_t s_count = l_count * n_count;

/// Bytes that are not valid UTF-8 travel through the algorithm as these values (outside Unicode).
constexpr std::uint32_t raw_byte_base = 0x110000;

/// The first code point whose normalisation properties are not (ccc 0, quick check Yes).
constexpr std::uint32_t first_interesting = 0x300;

struct properties {
    std::uint8_t ccc = 0;
    quick_check qc = quick_check::yes;
};

properties properties_of(std::uint32_t cp) noexcept {
    if (cp < first_interesting || cp > 0x10FFFF)
        return {};
    const auto* begin = detail::normalization_runs;
    const auto* end = begin + detail::normalization_run_count;
    const auto* it = std::upper_bound(begin, end, cp,
                                      [](std::uint32_t v, const detail::normalization_run& r) { return v < r.first; });
    return {(it - 1)->combining_class, static_cast<quick_check>((it - 1)->nfc_quick_check)};
}

const detail::decomposition* find_decomposition(std::uint32_t cp) noexcept {
    if (cp < 0xC0)
        return nullptr;
    const auto* begin = detail::decompositions;
    const auto* end = begin + detail::decomposition_count;
    const auto* it =
        std::lower_bound(begin, end, cp, [](const detail::decomposition& d, std::uint32_t v) { return d.cp < v; });
    return it != end && it->cp == cp ? it : nullptr;
}

/// A primary composite: `first` + `second` compose to `composite`.
struct composition_pair {
    std::uint32_t first;
    std::uint32_t second;
    std::uint32_t composite;
};

/// The composition pairs, derived once from the decomposition table and sorted by (first, second).
const std::vector<composition_pair>& composition_pairs() {
    static const std::vector<composition_pair> pairs = [] {
        std::vector<composition_pair> p;
        for (std::size_t i = 0; i < detail::decomposition_count; ++i) {
            const detail::decomposition& d = detail::decompositions[i];
            if (d.composes)
                p.push_back({d.first, d.second, d.cp});
        }
        std::sort(p.begin(), p.end(), [](const composition_pair& a, const composition_pair& b) {
            return a.first != b.first ? a.first < b.first : a.second < b.second;
        });
        return p;
    }();
    return pairs;
}

/// The primary composite of `first` + `second`, or 0 when there is none.
std::uint32_t compose_pair(std::uint32_t first, std::uint32_t second) {
    if (first - l_base < l_count && second - v_base < v_count)
        return s_base + ((first - l_base) * v_count + (second - v_base)) * t_count;
    if (first - s_base < s_count && (first - s_base) % t_count == 0 && second - t_base - 1 < t_count - 1)
        return first + (second - t_base);
    const auto& pairs = composition_pairs();
    const auto it = std::lower_bound(pairs.begin(), pairs.end(), composition_pair{first, second, 0},
                                     [](const composition_pair& a, const composition_pair& b) {
                                         return a.first != b.first ? a.first < b.first : a.second < b.second;
                                     });
    return it != pairs.end() && it->first == first && it->second == second ? it->composite : 0;
}

/// One decomposed character with the properties composition needs.
struct decomposed_char {
    std::uint32_t cp;
    std::uint8_t ccc;
    bool combines_backward; ///< NFC_Quick_Check=Maybe: may be the second of a composition pair
};

/// Appends `cp` to `out` keeping each run of non-starters sorted by combining class (stable).
void push_ordered(std::vector<decomposed_char>& out, std::uint32_t cp) {
    const properties p = properties_of(cp);
    const decomposed_char c{cp, p.ccc, p.qc == quick_check::maybe};
    std::size_t i = out.size();
    if (c.ccc != 0) {
        while (i > 0 && out[i - 1].ccc > c.ccc)
            --i;
    }
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), c);
}

/// Appends the full canonical decomposition of `cp` to `out`, in canonical order.
void decompose(std::uint32_t cp, std::vector<decomposed_char>& out) {
    if (cp - s_base < s_count) {
        const std::uint32_t s = cp - s_base;
        push_ordered(out, l_base + s / n_count);
        push_ordered(out, v_base + (s % n_count) / t_count);
        if (s % t_count != 0)
            push_ordered(out, t_base + s % t_count);
        return;
    }
    const detail::decomposition* d = find_decomposition(cp);
    if (d == nullptr) {
        push_ordered(out, cp);
        return;
    }
    decompose(d->first, out);
    if (d->second != 0)
        decompose(d->second, out);
}

/// Canonical composition in place: each character not blocked from the last starter and forming a primary
/// composite with it is merged into the starter.
void compose(std::vector<decomposed_char>& chars) {
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::size_t starter = none;
    int last_ccc = -1; // combining class of the last character kept after the starter; -1: none kept
    std::size_t kept = 0;
    for (std::size_t i = 0; i < chars.size(); ++i) {
        const decomposed_char c = chars[i];
        const bool reachable = starter != none && (last_ccc == -1 || last_ccc < c.ccc);
        if (reachable && c.combines_backward) {
            if (const std::uint32_t composite = compose_pair(chars[starter].cp, c.cp); composite != 0) {
                chars[starter].cp = composite;
                continue;
            }
        }
        if (c.ccc == 0) {
            starter = kept;
            last_ccc = -1;
        } else {
            last_ccc = c.ccc;
        }
        chars[kept++] = c;
    }
    chars.resize(kept);
}

/// Offset of the last normalisation boundary (a starter with NFC_Quick_Check=Yes) at or before the first
/// character that may change under NFC, or `text.size()` when `text` is NFC.
std::size_t boundary_before_change(std::string_view text) noexcept {
    std::size_t boundary = 0;
    std::uint8_t last_ccc = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        if (static_cast<unsigned char>(text[pos]) < 0x80) {
            while (pos < text.size() && static_cast<unsigned char>(text[pos]) < 0x80)
                ++pos;
            boundary = pos - 1;
            last_ccc = 0;
            continue;
        }
        std::size_t len = 0;
        const std::uint32_t cp = decode_utf8(text, pos, len);
        const properties p = len == 1 ? properties{} : properties_of(cp);
        if (p.qc != quick_check::yes || (p.ccc != 0 && p.ccc < last_ccc))
            return boundary;
        if (p.ccc == 0)
            boundary = pos;
        last_ccc = p.ccc;
        pos += len;
    }
    return text.size();
}

/// Appends NFC(`text`) to `out`, running the full algorithm over all of `text`.
void append_nfc_full(std::string_view text, std::string& out) {
    thread_local std::vector<decomposed_char> chars;
    chars.clear();
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t len = 0;
        const std::uint32_t cp = decode_utf8(text, pos, len);
        const auto lead = static_cast<unsigned char>(text[pos]);
        if (len == 1 && lead >= 0x80) {
            chars.push_back({raw_byte_base + lead, 0, false});
        } else {
            decompose(cp, chars);
        }
        pos += len;
    }
    compose(chars);
    for (const decomposed_char& c : chars) {
        if (c.cp >= raw_byte_base) {
            out += static_cast<char>(c.cp - raw_byte_base);
        } else {
            append_utf8(out, c.cp);
        }
    }
}

} // namespace

std::uint8_t combining_class(std::uint32_t cp) noexcept {
    return properties_of(cp).ccc;
}

bool is_nfc_quick(std::string_view text) noexcept {
    return boundary_before_change(text) == text.size();
}

std::string_view to_nfc(std::string_view text, std::string& scratch) {
    const std::size_t boundary = boundary_before_change(text);
    if (boundary == text.size())
        return text;
    scratch.assign(text.substr(0, boundary));
    append_nfc_full(text.substr(boundary), scratch);
    return scratch;
}

std::string to_nfc(std::string_view text) {
    std::string scratch;
    if (to_nfc(text, scratch).data() == text.data())
        return std::string(text);
    return scratch;
}

} // namespace sluice::tokenizer
