// parse_gbnf: llama.cpp's GBNF text to a grammar, with groups and repetitions turned into generated rules.
#include "runtime/grammar/grammar_build.hpp"

#include <limits>
#include <optional>
#include <unordered_map>

namespace sluice::grammar {
namespace {

using sequence = std::vector<element>;
using alternatives = std::vector<sequence>;

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

class gbnf_parser {
public:
    gbnf_parser(std::string_view text, const grammar_limits& limits) : s_(text), limits_(limits) {}

    result<std::shared_ptr<const grammar>> run();

private:
    [[nodiscard]] bool at_end() const { return p_ >= s_.size(); }
    [[nodiscard]] char peek() const { return at_end() ? '\0' : s_[p_]; }
    bool fail(std::string message);
    void skip_space(bool newlines);
    bool continues_with_bar();
    bool parse_rule();
    std::optional<alternatives> parse_alternatives(std::size_t depth);
    std::optional<sequence> parse_sequence(std::size_t depth);
    std::optional<sequence> parse_item(std::size_t depth);
    bool parse_repetition(sequence& item);
    bool parse_bounds(bool& found, std::uint32_t& lo, std::optional<std::uint32_t>& hi);
    std::optional<std::uint32_t> parse_code_point(bool in_class);
    /// `v`, or a failure when it is a surrogate (no UTF-8 text holds one).
    std::optional<std::uint32_t> scalar_value(std::uint32_t v);
    std::optional<sequence> parse_literal();
    std::optional<element> parse_class();
    std::optional<sequence> parse_token_ref();
    std::optional<std::uint32_t> parse_count();
    std::string parse_name();
    std::optional<std::uint32_t> rule_index(const std::string& name);
    std::optional<std::uint32_t> new_rule(alternatives alts);
    std::uint32_t single_class(std::uint32_t cp);
    bool count_elements(std::size_t n);
    result<std::shared_ptr<const grammar>> flatten();

    std::string_view s_;
    grammar_limits limits_;
    std::size_t p_ = 0;
    std::optional<error> error_;
    std::vector<alternatives> rules_;
    std::vector<std::string> names_;
    std::vector<bool> defined_;
    std::vector<std::size_t> first_use_; ///< text offset of each rule's first reference
    std::unordered_map<std::string, std::uint32_t> by_name_;
    std::unordered_map<std::uint32_t, std::uint32_t> single_classes_;
    std::vector<char_class> classes_;
    std::string current_; ///< the rule being parsed, for the names of generated rules
    std::size_t elements_ = 0;
};

std::string position_of(std::string_view s, std::size_t offset) {
    std::size_t line = 1;
    std::size_t column = 1;
    for (std::size_t i = 0; i < offset && i < s.size(); ++i) {
        if (s[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

bool gbnf_parser::fail(std::string message) {
    if (!error_) {
        error_ = make_error(std::errc::invalid_argument, position_of(s_, p_) + ": " + std::move(message));
    }
    return false;
}

void gbnf_parser::skip_space(bool newlines) {
    while (!at_end()) {
        const char c = s_[p_];
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
            ++p_;
        } else if (c == '#') {
            while (!at_end() && s_[p_] != '\n') {
                ++p_;
            }
        } else {
            break;
        }
    }
}

// At a newline outside parentheses: the rule goes on when the next non-blank line starts with '|'.
bool gbnf_parser::continues_with_bar() {
    const std::size_t saved = p_;
    skip_space(true);
    if (peek() == '|') {
        return true;
    }
    p_ = saved;
    return false;
}

std::string gbnf_parser::parse_name() {
    const std::size_t start = p_;
    while (!at_end() && is_name_char(s_[p_])) {
        ++p_;
    }
    return std::string(s_.substr(start, p_ - start));
}

std::optional<std::uint32_t> gbnf_parser::rule_index(const std::string& name) {
    if (auto it = by_name_.find(name); it != by_name_.end()) {
        return it->second;
    }
    if (rules_.size() >= limits_.max_rules) {
        fail("more than " + std::to_string(limits_.max_rules) + " rules");
        return std::nullopt;
    }
    const auto index = static_cast<std::uint32_t>(rules_.size());
    by_name_.emplace(name, index);
    rules_.emplace_back();
    names_.push_back(name);
    defined_.push_back(false);
    first_use_.push_back(p_);
    return index;
}

std::optional<std::uint32_t> gbnf_parser::new_rule(alternatives alts) {
    std::string name = current_ + "/" + std::to_string(rules_.size()); // no GBNF name holds a /
    auto index = rule_index(name);
    if (index) {
        rules_[*index] = std::move(alts);
        defined_[*index] = true;
    }
    return index;
}

bool gbnf_parser::count_elements(std::size_t n) {
    elements_ += n;
    if (elements_ > limits_.max_elements) {
        return fail("the grammar expands to more than " + std::to_string(limits_.max_elements) + " elements");
    }
    return true;
}

std::uint32_t gbnf_parser::single_class(std::uint32_t cp) {
    auto [it, added] = single_classes_.emplace(cp, static_cast<std::uint32_t>(classes_.size()));
    if (added) {
        char_class c;
        c.ranges.emplace_back(cp, cp);
        c.finish();
        classes_.push_back(std::move(c));
    }
    return it->second;
}

std::optional<std::uint32_t> gbnf_parser::parse_code_point(bool in_class) {
    if (at_end()) {
        fail(in_class ? "unterminated character class" : "unterminated string literal");
        return std::nullopt;
    }
    const auto c = static_cast<unsigned char>(s_[p_]);
    if (c == '\n') {
        fail(in_class ? "unterminated character class" : "unterminated string literal");
        return std::nullopt;
    }
    if (c == '\\') {
        ++p_;
        const char e = peek();
        ++p_;
        int digits = 0;
        switch (e) {
        case 'n': return 10;
        case 'r': return 13;
        case 't': return 9;
        case '\\': case '"': case '[': case ']': case '-': case '/': case '^': return static_cast<std::uint32_t>(e);
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        default: p_ -= 2; fail("unknown escape"); return std::nullopt;
        }
        std::uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const int h = hex_value(peek());
            if (h < 0) {
                fail("expected " + std::to_string(digits) + " hex digits");
                return std::nullopt;
            }
            v = v * 16 + static_cast<std::uint32_t>(h);
            ++p_;
        }
        if (v > 0x10FFFF) {
            fail("code point past U+10FFFF");
            return std::nullopt;
        }
        return scalar_value(v);
    }
    // A UTF-8 sequence.
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || p_ + static_cast<std::size_t>(len) > s_.size()) {
        fail("invalid UTF-8");
        return std::nullopt;
    }
    std::uint32_t v = len == 1 ? c : c & (0x7FU >> len);
    for (int i = 1; i < len; ++i) {
        const auto b = static_cast<unsigned char>(s_[p_ + static_cast<std::size_t>(i)]);
        if ((b & 0xC0) != 0x80) {
            fail("invalid UTF-8");
            return std::nullopt;
        }
        v = (v << 6) | (b & 0x3FU);
    }
    p_ += static_cast<std::size_t>(len);
    return scalar_value(v);
}

std::optional<std::uint32_t> gbnf_parser::scalar_value(std::uint32_t v) {
    // UTF-8 cannot encode U+D800..U+DFFF: a grammar asking for one could only ever match nothing.
    if (v >= 0xD800 && v <= 0xDFFF) {
        fail("U+D800 to U+DFFF are UTF-16 surrogates, not characters");
        return std::nullopt;
    }
    return v;
}

std::optional<sequence> gbnf_parser::parse_literal() {
    ++p_; // the opening quote
    sequence out;
    while (peek() != '"') {
        if (at_end() || peek() == '\n') {
            fail("unterminated string literal");
            return std::nullopt;
        }
        auto cp = parse_code_point(false);
        if (!cp) {
            return std::nullopt;
        }
        out.push_back({element_kind::chars, single_class(*cp)});
    }
    ++p_;
    return out;
}

std::optional<element> gbnf_parser::parse_class() {
    ++p_; // '['
    char_class c;
    if (peek() == '^') {
        c.negated = true;
        ++p_;
    }
    while (peek() != ']') {
        if (at_end() || peek() == '\n') {
            fail("unterminated character class");
            return std::nullopt;
        }
        auto lo = parse_code_point(true);
        if (!lo) {
            return std::nullopt;
        }
        std::uint32_t hi = *lo;
        if (peek() == '-' && p_ + 1 < s_.size() && s_[p_ + 1] != ']') {
            ++p_;
            auto end = parse_code_point(true);
            if (!end) {
                return std::nullopt;
            }
            if (*end < *lo) {
                fail("character range out of order");
                return std::nullopt;
            }
            hi = *end;
        }
        c.ranges.emplace_back(*lo, hi);
    }
    ++p_;
    c.finish();
    classes_.push_back(std::move(c));
    return element{element_kind::chars, static_cast<std::uint32_t>(classes_.size() - 1)};
}

// `<[id]>`: the control token `id`, as the one code point token_code_base + id.
std::optional<sequence> gbnf_parser::parse_token_ref() {
    p_ += 2; // "<["
    std::uint64_t v = 0;
    const std::size_t start = p_;
    while (peek() >= '0' && peek() <= '9' && v <= max_token_ref) {
        v = v * 10 + static_cast<std::uint64_t>(peek() - '0');
        ++p_;
    }
    if (p_ == start || v > max_token_ref) {
        p_ = start;
        fail("expected a token id up to " + std::to_string(max_token_ref) + " in <[id]>");
        return std::nullopt;
    }
    if (peek() != ']' || p_ + 1 >= s_.size() || s_[p_ + 1] != '>') {
        fail("expected ]> after the token id");
        return std::nullopt;
    }
    p_ += 2;
    return sequence{{element_kind::chars, single_class(token_code_base + static_cast<std::uint32_t>(v))}};
}

std::optional<std::uint32_t> gbnf_parser::parse_count() {
    const std::size_t start = p_;
    std::uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
        v = v * 10 + static_cast<std::uint64_t>(peek() - '0');
        if (v > limits_.max_repetition) {
            p_ = start;
            fail("repetition count above " + std::to_string(limits_.max_repetition));
            return std::nullopt;
        }
        ++p_;
    }
    if (p_ == start) {
        fail("expected a number");
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(v);
}

std::optional<sequence> gbnf_parser::parse_item(std::size_t depth) {
    const char c = peek();
    if (c == '"') {
        return parse_literal();
    }
    if (c == '[') {
        auto e = parse_class();
        return e ? std::optional<sequence>(sequence{*e}) : std::nullopt;
    }
    if (c == '<' && p_ + 1 < s_.size() && s_[p_ + 1] == '[') {
        return parse_token_ref();
    }
    if (c == '.') {
        ++p_;
        char_class any;
        any.negated = true;
        any.finish();
        classes_.push_back(std::move(any));
        return sequence{{element_kind::chars, static_cast<std::uint32_t>(classes_.size() - 1)}};
    }
    if (c == '(') {
        if (depth + 1 > limits_.max_nesting) {
            fail("parentheses nested deeper than " + std::to_string(limits_.max_nesting));
            return std::nullopt;
        }
        ++p_;
        skip_space(true);
        auto alts = parse_alternatives(depth + 1);
        if (!alts) {
            return std::nullopt;
        }
        skip_space(true);
        if (peek() != ')') {
            fail("expected )");
            return std::nullopt;
        }
        ++p_;
        auto r = new_rule(std::move(*alts));
        return r ? std::optional<sequence>(sequence{{element_kind::rule, *r}}) : std::nullopt;
    }
    if (is_name_char(c)) {
        const std::size_t at = p_;
        auto name = parse_name();
        const std::size_t after = p_;
        p_ = at; // a first reference is reported where it stands
        auto r = rule_index(name);
        p_ = after;
        return r ? std::optional<sequence>(sequence{{element_kind::rule, *r}}) : std::nullopt;
    }
    fail(at_end() ? "unexpected end of text" : std::string("unexpected character '") + c + "'");
    return std::nullopt;
}

// * + ? {m} {m,} {m,n} into [lo, hi] (hi nullopt: unbounded); false on a malformed one. `found` is false when
// no repetition follows.
bool gbnf_parser::parse_bounds(bool& found, std::uint32_t& lo, std::optional<std::uint32_t>& hi) {
    found = true;
    const char c = peek();
    if (c == '*') {
        ++p_;
    } else if (c == '+') {
        ++p_;
        lo = 1;
    } else if (c == '?') {
        ++p_;
        hi = 1;
    } else if (c == '{') {
        ++p_;
        skip_space(false);
        auto m = parse_count();
        if (!m) {
            return false;
        }
        lo = *m;
        skip_space(false);
        if (peek() == ',') {
            ++p_;
            skip_space(false);
            if (peek() != '}') {
                auto n = parse_count();
                if (!n) {
                    return false;
                }
                if (*n < lo) {
                    return fail("repetition {m,n} with n < m");
                }
                hi = *n;
            }
        } else {
            hi = lo;
        }
        skip_space(false);
        if (peek() != '}') {
            return fail("expected }");
        }
        ++p_;
    } else {
        found = false;
    }
    return true;
}

// `item` followed by a repetition: copies of it and generated rules for the optional part.
bool gbnf_parser::parse_repetition(sequence& item) {
    bool found = false;
    std::uint32_t lo = 0;
    std::optional<std::uint32_t> hi;
    if (!parse_bounds(found, lo, hi)) {
        return false;
    }
    if (!found || item.empty()) {
        return true;
    }
    element e = item.front();
    if (item.size() > 1) {
        auto r = new_rule({item});
        if (!r) {
            return false;
        }
        e = {element_kind::rule, *r};
    }
    const std::size_t optional_part = hi ? *hi - lo : 1;
    if (!count_elements(lo + 2 * optional_part)) {
        return false;
    }
    sequence out(lo, e);
    if (!hi) {
        // X* as R ::= X R | (empty): right recursion the matcher runs in constant stack depth.
        auto r = new_rule({});
        if (!r) {
            return false;
        }
        rules_[*r] = {{e, {element_kind::rule, *r}}, {}};
        out.push_back({element_kind::rule, *r});
    } else if (*hi > lo) {
        // Up to k more: O_1 ::= X | (empty), O_k ::= X O_(k-1) | (empty).
        std::optional<std::uint32_t> inner;
        for (std::uint32_t k = 1; k <= *hi - lo; ++k) {
            sequence more{e};
            if (inner) {
                more.push_back({element_kind::rule, *inner});
            }
            inner = new_rule({more, {}});
            if (!inner) {
                return false;
            }
        }
        out.push_back({element_kind::rule, *inner});
    }
    item = std::move(out);
    return true;
}

std::optional<sequence> gbnf_parser::parse_sequence(std::size_t depth) {
    sequence out;
    for (;;) {
        skip_space(depth > 0);
        const char c = peek();
        if (at_end() || c == '|' || c == ')' || c == '\n') {
            return out;
        }
        auto item = parse_item(depth);
        if (!item) {
            return std::nullopt;
        }
        skip_space(false);
        if (!parse_repetition(*item)) {
            return std::nullopt;
        }
        if (!count_elements(item->size())) {
            return std::nullopt;
        }
        out.insert(out.end(), item->begin(), item->end());
    }
}

std::optional<alternatives> gbnf_parser::parse_alternatives(std::size_t depth) {
    alternatives out;
    for (;;) {
        auto seq = parse_sequence(depth);
        if (!seq) {
            return std::nullopt;
        }
        out.push_back(std::move(*seq));
        if (depth > 0) {
            skip_space(true);
        }
        if (peek() == '\n' && depth == 0 && !continues_with_bar()) {
            return out;
        }
        if (peek() != '|') {
            return out;
        }
        ++p_;
        skip_space(true);
    }
}

bool gbnf_parser::parse_rule() {
    const std::size_t at = p_;
    current_ = parse_name();
    if (current_.empty()) {
        return fail(std::string("expected a rule name, got '") + peek() + "'");
    }
    skip_space(false);
    if (s_.substr(p_, 3) != "::=") {
        return fail("expected ::= after the rule name");
    }
    p_ += 3;
    skip_space(true);
    const std::size_t after = p_;
    p_ = at;
    auto index = rule_index(current_);
    if (!index) {
        return false;
    }
    if (defined_[*index]) {
        return fail("rule '" + current_ + "' is defined twice");
    }
    defined_[*index] = true;
    p_ = after;
    auto alts = parse_alternatives(0);
    if (!alts) {
        return false;
    }
    rules_[*index] = std::move(*alts);
    skip_space(false);
    if (!at_end() && peek() != '\n') {
        return fail(std::string("unexpected character '") + peek() + "'");
    }
    return true;
}

result<std::shared_ptr<const grammar>> gbnf_parser::flatten() {
    for (std::size_t r = 0; r < rules_.size(); ++r) {
        if (!defined_[r]) {
            p_ = first_use_[r];
            fail("undefined rule '" + names_[r] + "'");
            return *error_;
        }
    }
    auto root = by_name_.find("root");
    if (root == by_name_.end()) {
        return make_error(std::errc::invalid_argument, "the grammar has no rule named 'root'");
    }
    auto g = std::make_shared<grammar>();
    g->root = root->second;
    g->rule_names = std::move(names_);
    g->classes = std::move(classes_);
    g->rules.resize(rules_.size());
    for (std::size_t r = 0; r < rules_.size(); ++r) {
        for (const auto& alt : rules_[r]) {
            g->rules[r].push_back(static_cast<std::uint32_t>(g->elements.size()));
            g->elements.insert(g->elements.end(), alt.begin(), alt.end());
            g->elements.push_back({element_kind::end, 0});
        }
    }
    if (auto ok = check_left_recursion(*g); !ok) {
        return ok.error();
    }
    return std::shared_ptr<const grammar>(std::move(g));
}

result<std::shared_ptr<const grammar>> gbnf_parser::run() {
    if (s_.size() > limits_.max_text_bytes) {
        return make_error(std::errc::invalid_argument, "the grammar is longer than " +
                                                           std::to_string(limits_.max_text_bytes) + " bytes");
    }
    for (;;) {
        skip_space(true);
        if (at_end()) {
            break;
        }
        if (!parse_rule()) {
            return *error_;
        }
    }
    return flatten();
}

} // namespace

result<std::shared_ptr<const grammar>> parse_gbnf(std::string_view text, const grammar_limits& limits) {
    return gbnf_parser(text, limits).run();
}

} // namespace sluice::grammar
